"""The built-page checks: each defect a reader would see is found, a clean page passes."""

import pytest

from mtllib.book import pages

CLEAN = """<html><head><script src="_static/mathjax/tex-chtml.js"></script><link rel="stylesheet" href="_static/a.css"></head>
<body><table><tr><th>task</th><td>\u2014</td><td>3/3</td></tr></table>
<figure id="fig-1"><img src="a.png" alt="x"><figcaption>A caption.</figcaption></figure>
<div class="cell_output docutils container"><div class="output stream highlight-myst-ansi">seed 0</div></div>
<a href="https://example.org/paper">a link is not a request</a>
<p>Typeset: <span class="math notranslate nohighlight">\\(2 d_m d_s\\)</span>; it costs $5 and $6 in a sentence.</p>
<div class="cell_input"><pre>count = f"$V^E$ and $V^D$"</pre></div><p>A shell variable: <code>$OUT_{x}$</code>.</p></body></html>"""


def test_a_clean_page_has_no_problem():
    assert pages.check_html(CLEAN) == []


@pytest.mark.parametrize("html, kind", [
    ('<div class="cell_output"><div class="output stderr highlight-myst-ansi">100%|####| 5/5</div></div>', "stored stderr"),
    ("<table><tr><th>bbc-topic</th><td>NaN</td></tr></table>", "NaN cell"),
    ('<div class="cell_output docutils container"><img src="data:image/png;base64,xx" alt="plot"></div>', "figure without caption"),
    ('<figure id="f"><img src="a.png"></figure>', "figure without caption"),
    ('<script src="https://cdn.jsdelivr.net/npm/mathjax@3/es5/tex-chtml.js"></script>', "request outside the book"),
    ('<link rel="stylesheet" href="//fonts.googleapis.com/css">', "request outside the book"),
    ("<p>One task adds $V^E$ and $V^D$: $2 d_m d_s$ = 92,160.</p>", "raw TeX"),
])
def test_each_defect_is_found(html, kind):
    problems = pages.check_html(html, "p.html")
    assert [p.kind for p in problems] == [kind] and problems[0].page == "p.html"


def test_check_book_walks_the_pages_and_skips_generated_ones(tmp_path):
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "a.html").write_text(CLEAN)
    (tmp_path / "book" / "b.html").write_text("<table><tr><th>x</th><td>nan</td></tr></table>")
    (tmp_path / "search.html").write_text('<script src="https://cdn.example/x.js"></script>')
    problems = pages.check_book(tmp_path, browser=None)
    assert [(p.page, p.kind) for p in problems] == [("book/b.html", "NaN cell")]


def test_a_missing_build_is_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="build the book first"):
        pages.check_book(tmp_path / "nothing")
    assert pages.main([str(tmp_path / "nothing")]) == 2


def test_browser_command_and_console_errors():
    cmd = pages.browser_command("chromium", "file:///x.html", 400, None)
    assert cmd[0] == "chromium" and "--headless" in cmd and "--window-size=400,4000" in cmd and "--dump-dom" in cmd
    log = ('[1:2:INFO:CONSOLE(12)] "ok", source: file:///x.html (12)\n'
           '[1:2:ERROR:CONSOLE(3)] "Uncaught ReferenceError: x is not defined", source: file:///x.html (3)\n')
    assert pages.console_errors(log) == ['[1:2:ERROR:CONSOLE(3)] "Uncaught ReferenceError: x is not defined", source: file:///x.html (3)']

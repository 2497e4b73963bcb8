"""Checks of the built book's pages, as a reader sees them (issue #11's browser check).

Static checks of every HTML page under ``_build/html`` (no browser needed):

- stored **stderr** (progress bars, warnings) in a cell's output;
- **NaN** cells in a table (missing values show an em dash);
- **figures without a caption** (an image in a cell's output outside a captioned figure);
- **requests outside the book**: a script, stylesheet, image or frame loaded from ``http(s)://``;
- **raw TeX**: ``$...$`` left as text, where a reader should see typeset math (``{glue:md}`` does not typeset
  dollar math inline: glue plain text and keep the symbols in the page's own markdown).

With Debian's ``chromium`` installed, every page is also opened headless: console errors fail the check, and
screenshots at 1280 px and 400 px are saved for a person to look at (``--screenshots DIR``).

    .venv/bin/python -m mtllib.book.pages _build/html [--screenshots _build/screenshots]   # make check-book
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

WIDTHS = (1280, 400)
#: pages the theme generates (search, index) are not the book's content
SKIP = {"search.html", "genindex.html", "py-modindex.html"}
#: dollar math as text: ``$`` then a non-space, up to the next ``$`` on the same line, with a TeX-like character inside
RAW_TEX = re.compile(r"\$(?=\S)[^$\n]*[\\^_{}][^$\n]*\$")
#: where a ``$`` is the reader's text and not math: code, highlighted cell sources, typeset math, scripts
NOT_PROSE = "pre, code, script, style, .math, .highlight, .cell_input, mjx-container"


@dataclass(frozen=True)
class Problem:
    page: str
    kind: str
    detail: str

    def __str__(self) -> str:
        return f"{self.page}: {self.kind}: {self.detail}"


def check_html(html: str, page: str = "page") -> list[Problem]:
    """Every static problem of one page."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html, "html.parser")
    problems = []
    for div in soup.select("div.output.stderr, div.stderr"):
        problems.append(Problem(page, "stored stderr", div.get_text(" ", strip=True)[:80]))
    for cell in soup.select("table td, table th"):
        if cell.get_text(strip=True).lower() == "nan":
            row = cell.find_parent("tr")
            label = row.find(["th", "td"]).get_text(" ", strip=True) if row else ""
            problems.append(Problem(page, "NaN cell", f"in the row {label!r}"))
    for img in soup.select("div.cell_output img"):
        figure = img.find_parent("figure")
        if figure is None or figure.find("figcaption") is None:
            problems.append(Problem(page, "figure without caption", img.get("alt") or img.get("src", "")[:60]))
    for figure in soup.select("figure"):
        if figure.find("img") is not None and figure.find("figcaption") is None:
            problems.append(Problem(page, "figure without caption", figure.get("id", "")))
    for tag, attr in (("script", "src"), ("link", "href"), ("img", "src"), ("iframe", "src")):
        for el in soup.find_all(tag):
            url = el.get(attr) or ""
            if tag == "link" and "stylesheet" not in (el.get("rel") or []) and "preload" not in (el.get("rel") or []):
                continue
            if re.match(r"(https?:)?//", url):
                problems.append(Problem(page, "request outside the book", f"<{tag}> {url}"))
    for el in soup.select(NOT_PROSE):
        el.decompose()
    body = soup.body or soup
    raw = RAW_TEX.findall(body.get_text())
    if raw:  # one problem per page: the first instance, and how many there are
        problems.append(Problem(page, "raw TeX", raw[0][:80] + (f" (and {len(raw) - 1} more)" if len(raw) > 1 else "")))
    return problems


def pages(html_dir: Path) -> list[Path]:
    return sorted(p for p in Path(html_dir).rglob("*.html") if p.name not in SKIP and "_static" not in p.parts and "_sources" not in p.parts)


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def browser_command(browser: str, url: str, width: int, screenshot: Path | None) -> list[str]:
    """Headless Chromium on one page: console messages to stderr, optionally a full-height screenshot."""
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=8000", "--enable-logging=stderr", "--v=0",
           f"--window-size={width},4000"]
    cmd += [f"--screenshot={screenshot}"] if screenshot else ["--dump-dom"]
    return cmd + [url]


def console_errors(stderr: str) -> list[str]:
    """Console errors in Chromium's log (``CONSOLE(...)`` lines at level ERROR, or uncaught exceptions)."""
    return [line.strip() for line in stderr.splitlines()
            if ("CONSOLE" in line and ("ERROR" in line or "Uncaught" in line)) or "Uncaught" in line]


def check_book(html_dir, screenshots: Path | None = None, browser: str | None = "auto", log=print) -> list[Problem]:
    """Static checks of every page, then (``browser``: ``"auto"`` finds Chromium, a path names it, ``None``
    skips it) console errors and screenshots."""
    html_dir = Path(html_dir)
    if not html_dir.is_dir():
        raise FileNotFoundError(f"{html_dir} does not exist: build the book first (make html)")
    found = pages(html_dir)
    if not found:
        raise FileNotFoundError(f"{html_dir} holds no HTML pages: build the book first (make html)")
    problems = []
    for page in found:
        problems += check_html(page.read_text(encoding="utf-8"), page.relative_to(html_dir).as_posix())
    if browser == "auto":
        browser = chromium()
        if browser is None:
            log("chromium is not installed: static checks only (apt-get install chromium for console errors and screenshots)")
    if browser is None:
        return problems
    for page in found:
        name = page.relative_to(html_dir).as_posix()
        for width in WIDTHS:
            shot = None
            if screenshots:
                shot = Path(screenshots) / f"{name.replace('/', '__').removesuffix('.html')}-{width}.png"
                shot.parent.mkdir(parents=True, exist_ok=True)
            run = subprocess.run(browser_command(browser, page.resolve().as_uri(), width, shot), capture_output=True, text=True, timeout=120)
            problems += [Problem(name, "console error", line[:160]) for line in console_errors(run.stderr)]
    return problems


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("html_dir", type=Path, nargs="?", default=Path("_build/html"))
    parser.add_argument("--screenshots", type=Path, help="save screenshots at 1280 and 400 px here")
    args = parser.parse_args(argv)
    try:
        problems = check_book(args.html_dir, args.screenshots)
    except FileNotFoundError as err:
        print(err, file=sys.stderr)
        return 2
    for p in problems:
        print(p)
    n = len(pages(args.html_dir))
    print(f"{n} pages checked: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

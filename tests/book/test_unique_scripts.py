"""Each script once per page: duplicates of an inline script (the same body, its source None or "") dropped, the first
by priority kept."""

from sphinx.builders.html._assets import _JavaScript

from mtllib.book.unique_scripts import unique


def test_an_inline_script_given_twice_is_written_once():
    config = 'const THEBE_JS_URL = "x"'
    scripts = [_JavaScript("a.js"), _JavaScript(None, priority=500, body=config), _JavaScript("b.js", priority=200),
               _JavaScript(None, priority=700, body=config), _JavaScript("", body=config), _JavaScript(None, body="var other = 1")]
    kept = unique(scripts)
    assert [(s.filename, s.attributes.get("body"), s.priority) for s in kept] == [
        ("b.js", None, 200), ("a.js", None, 500), (None, config, 500), (None, "var other = 1", 500)]


def test_same_source_with_other_attributes_is_kept():
    kept = unique([_JavaScript("t.js", **{"async": "async"}), _JavaScript("t.js")])
    assert len(kept) == 2

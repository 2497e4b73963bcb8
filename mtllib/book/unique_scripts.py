"""A Sphinx extension that writes each script of a page once.

With Sphinx 7.4, jupyter-book 1 and sphinx-thebe 0.3, every page carried sphinx-thebe's configuration script
(``const THEBE_JS_URL = ...``) and sphinx-togglebutton's selector twice (once with the source ``None``, once
with ``""``: one copy added to the builder, one copied from Sphinx's registry); a browser
stops at the second ``const`` declaration with a console error (``make check-book`` fails on it). This
extension drops a script whose source and attributes (inline body included) equal an earlier one's, keeping
the first by priority, on every page (``html-page-context``). Listed in ``_config.yml`` under
``sphinx.extra_extensions``.
"""

from __future__ import annotations


def unique(scripts) -> list:
    """``scripts`` in order of priority (stable), each source-and-attributes pair once."""
    seen, kept = set(), []
    for js in sorted(scripts, key=lambda s: getattr(s, "priority", 500)):
        # an inline script's source is None when an extension adds it to the builder, "" when Sphinx copies it
        # from its registry: the same script
        key = (getattr(js, "filename", str(js)) or "", tuple(sorted((k, str(v)) for k, v in getattr(js, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            kept.append(js)
    return kept


def _on_page(app, pagename, templatename, context, doctree):
    if "script_files" in context:
        context["script_files"] = unique(context["script_files"])


def setup(app):
    app.connect("html-page-context", _on_page, priority=900)  # after the extensions that add per-page scripts
    return {"parallel_read_safe": True, "parallel_write_safe": True}

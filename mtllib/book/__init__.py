"""Book layer: what turns notebooks into chapters.

- ``runner``: the notebook runner behind ``make book`` / ``make run`` (profiles, staleness, run records);
  ``params``: every notebook parameter's rule, checked before any work;
- ``plots`` and ``tables``: figures and tables in the book's forms; ``diagrams``: the transferability paper's
  Figures 1-2; ``pages``: the checks of the built pages (static and in headless Chromium); ``unique_scripts``: a Sphinx extension that writes each page's
  scripts once;
- ``results``: tables passed from one executed chapter to another; ``exercises``: the lab runs behind the
  exercises; ``variants`` and ``transfer_targets``: the steps chapters of one family share.
"""

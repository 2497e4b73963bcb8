"""Book layer: what turns notebooks into chapters.

- ``runner``: the notebook runner behind ``make book`` / ``make run`` (profiles, staleness, run records);
  ``params``: every notebook parameter's rule, checked before any work;
- ``plots`` and ``tables``: figures and tables in the book's forms; ``diagrams``: the transferability paper's
  Figures 1-2; ``pages``: the checks of the built pages (static and in headless Chromium); ``unique_scripts``:
  a Sphinx extension that writes each page's scripts once;
- ``results``: tables passed from one executed chapter to another; ``exercises``: the lab runs behind the
  exercises;
- ``chapter_run``: the clock every chapter's run time is read from; ``training_run``: what the opening step of
  every chapter family that trains shares (parameters, device, tasks prepared, training recipe);
- the steps the chapters of one family share: ``data_chapter`` (01), ``iap_chapters`` (02-05),
  ``pals_chapters`` (06-06f), ``iat_chapters`` (07-07c), ``few_shot_chapter`` (08), ``transfer_targets``
  (the target pages 09b-09d2, made from one source); ``variants``: reading trained variants (PALs and IAT families).
"""

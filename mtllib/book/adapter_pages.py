"""Adapters trained on separate pages, set side by side without training anything ("BERT and PALs", Sec. 5.1:
PALs and low-rank layers at the same budget).

Pages of 06g's source each compare one adapter with the fully shared model (06g: PALs, 06h: low-rank layers)
and glue their per-seed scores (``"scores"``: a ``method`` column, then the columns of
:data:`mtllib.experiments.adapters.RUN_COLUMNS` after ``variant``) and their training recipe (``"recipe"``,
:func:`mtllib.book.results.recipe_frame`). :func:`read_methods` reads them back from the committed executed
copies, so a page comparing the adapters with each other trains nothing and depends on no local cache. It
refuses pages that cannot be compared seed by seed: another recipe, other seeds, or fully shared models that
are not the same models on every page.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mtllib import checks
from mtllib.book import results

#: the reference every page holds: the fully shared model (heads only)
REFERENCE = "shared"


@dataclass
class MethodPages:
    """What :func:`read_methods` read: the rows of the fully shared model (once) and of each page's adapter."""

    #: one row per method, seed and task: ``method``, ``seed``, ``task``, ``score``, ``validation``, ``majority``,
    #: ``learned``, ``train_seconds``
    rows: pd.DataFrame
    #: each page's run record (profile, commit, parameters, date), by page
    records: dict[str, dict]
    #: the pages' common recipe (:func:`mtllib.book.results.recipe_frame`)
    recipe: pd.DataFrame
    #: the tasks in the recipe's order
    tasks: list[str]
    #: the seeds every method has
    seeds: list[int]

    def sources(self) -> str:
        """``"06g_pals_glue_like (cpu profile, commit abc1234, executed 2026-12-05 ...); ..."``, for the page."""
        return "; ".join(f"{nb} ({r.get('profile')} profile, commit {r.get('commit')}, executed {r.get('executed_at')})"
                         for nb, r in self.records.items())


def read_methods(pages: dict[str, str], book_dir: str | Path | None = None) -> MethodPages:
    """The scores of each adapter in ``pages`` (``{method: page}``, e.g. ``{"pals": "06g_pals_glue_like",
    "low_rank": "06h_low_rank_glue_like"}``) read from the page's executed copy in ``book_dir`` (default: the
    project's ``book/``), with the fully shared model's rows once.

    Refused with :class:`mtllib.checks.BadInput`, before anything is read further: fewer than two pages, the
    fully shared model named as a page's method, a page without an executed copy or without the glued tables,
    a page trained on another recipe than the first's (every differing setting named), a page without rows of
    its method or of the fully shared model, methods or pages with other seeds, and fully shared rows that
    differ between pages (then they are not the same models, and the adapters' differences would not be paired)."""
    if not isinstance(pages, dict) or len(pages) < 2:
        raise checks.BadInput(f"pages must map at least two methods to the pages that trained them, got {pages!r}")
    if REFERENCE in pages:
        raise checks.BadInput(f"{REFERENCE!r} is the reference every page holds: name only the adapters' pages, got {sorted(pages)}")
    first = next(iter(pages.values()))
    recipe = results.read_frame(results.executed_copy(first, book_dir), "recipe")
    frames, records = {}, {}
    for method, page in pages.items():
        try:
            frames[method], records[page] = results.read_same_recipe(page, recipe, "scores", book_dir)
        except checks.BadInput as error:
            if "another recipe" not in str(error):
                raise
            raise checks.BadInput(f"{page} cannot be set beside {first} ({first}'s recipe is 'here'): {error}") from None
    shared, shared_page, seeds = None, None, None
    for method, page in pages.items():
        frame = frames[method]
        for needed in (method, REFERENCE):
            if not (frame.method == needed).any():
                raise checks.BadInput(f"{page} holds no rows of {needed!r} (it has {sorted(set(frame.method))}): is it the page of {method!r}?")
        ours = frame[frame.method == REFERENCE].sort_values(["seed", "task"]).reset_index(drop=True)
        for name, part in ((method, frame[frame.method == method]), (REFERENCE, ours)):
            if seeds is None:
                seeds = sorted(set(part.seed))
            elif sorted(set(part.seed)) != seeds:
                raise checks.BadInput(f"{page}'s {name!r} models have seeds {sorted(set(part.seed))}, not {seeds}: "
                                      f"execute every page with the same seeds")
        if shared is None:
            shared, shared_page = ours, page
        elif not (ours[["seed", "task"]].equals(shared[["seed", "task"]])
                  and np.allclose(ours.score, shared.score, rtol=0, atol=1e-6, equal_nan=True)):
            raise checks.BadInput(f"the fully shared models of {shared_page} and {page} score differently: they are not the same "
                                  f"models, so the adapters cannot be compared seed by seed (read both from one chapter: shared_from)")
    rows = pd.concat([shared, *(frames[m][frames[m].method == m] for m in pages)], ignore_index=True)
    tasks = json.loads(recipe.set_index("setting").value["tasks"])
    return MethodPages(rows=rows, records=records, recipe=recipe, tasks=tasks, seeds=seeds)


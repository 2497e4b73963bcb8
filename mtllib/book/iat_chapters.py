"""The IAT chapters of "Interpreting and Exploiting Functional Specialization in Multi-Head Attention under
Multi-task Learning": 07 (Important Attention-head Training, Sec. 6.3: Table 7, Fig. 8-10), 07b (IAT under
proportional and annealed sampling, Table 13) and 07c (the GLUE-like offline suite, Tables 5 and 12). Each
function here is a step those notebooks share: the opening (parameters checked, the training recipe and the IAT
variants built, then the data), more seeds read from other pages of the same source (:meth:`Start.join_seeds`:
an experiment whose seeds do not fit one page's budget trains some of them on a second page), the gate table
the verdicts rest on, and how many test decisions a branch changed. What the chapters train stays in
:mod:`mtllib.experiments.iat`.

``glue``: :func:`myst_nb.glue` without display (the default) or a stand-in taking ``(key, value)``.
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from mtllib.analysis import stats
from mtllib.book.training_run import TrainingRun
from mtllib.book.tables import glue_function


@dataclass
class Start(TrainingRun):
    """What :func:`start` set up for an IAT chapter, with the clock its run time is read from (``minutes()``).
    ``config`` is the multi-task recipe (``epochs``, ``batch_size``, ``lr``, ``device``, and ``sampler`` and
    ``keep_best`` where the chapter has them); ``tokenizer`` and ``data`` are ``None`` until :meth:`prepare`: call
    it after the chapter's own checks. ``notebook`` is the page's name, ``book_dir`` where the executed copies of
    its ``seed_pages`` are (``None``: the project's ``book/``); ``checked_pages``: those pages as :meth:`prepare`
    checked them (:func:`check_seed_pages`), what :meth:`join_seeds` reads."""

    notebook: str = ""
    book_dir: str | Path | None = None
    checked_pages: list[SeedPage] | None = None

    def iat(self, alpha: float | None = None, delta: float | None = None, heads: str = "top"):
        """An IAT variant (:class:`~mtllib.training.iat.IATConfig`): each task trains its ``alpha`` most important
        heads (``heads="random"``: as many random ones) in the last ``delta`` of the steps; the chapter's
        ``alpha`` and ``delta`` unless given, its ``importance_batches`` for Eq. 4."""
        from mtllib.training.iat import IATConfig

        p = self.params
        return IATConfig(alpha=p["alpha"] if alpha is None else alpha, delta=p["delta"] if delta is None else delta, heads=heads,
                         importance_batches=p["importance_batches"])

    def settings(self) -> dict:
        """The page's :data:`SEED_SETTINGS` (``None`` where the page has no such parameter)."""
        return {k: self.params.get(k) for k in SEED_SETTINGS}

    def recipe_frame(self):
        """The page's training recipe as a table (:func:`mtllib.book.results.recipe_frame`): after :meth:`prepare`."""
        from mtllib.book import results

        return results.recipe_frame(self.params, self.data, self.config)

    def prepare(self, tasks: list[str] | None = None) -> dict:
        """The chapter's tasks (:meth:`~mtllib.book.training_run.TrainingRun.prepare`), then the pages named by
        ``seed_pages`` checked against the prepared recipe (:func:`check_seed_pages`), still before any training."""
        data = super().prepare(tasks)
        self.checked_pages = check_seed_pages(self.params.get("seed_pages") or [], self.settings(), self.params["seeds"], self.notebook,
                                              self.book_dir, recipe=self.recipe_frame())
        return data

    def join_seeds(self, result, glue=None):
        """``result`` (:func:`mtllib.experiments.iat.run` on this page's ``seeds``, after :meth:`prepare`) with the
        seeds of the pages named by the parameter ``seed_pages`` added (:func:`join_seeds`), after gluing this
        page's own tables for a page that reads its seeds (:func:`share_seeds`). Glues ``seeds_line``: which seeds
        were trained here and which were read from where."""
        if self.checked_pages is None:
            raise RuntimeError("join_seeds reads the seed pages that prepare() checked: call prepare() first")
        share_seeds(result, self.recipe_frame(), self.settings(), glue)
        joined, lines = join_checked(result, self.checked_pages)
        glue_function(glue)("seeds_line", seeds_line(_seeds(result), lines))
        return joined


def start(params: dict, notebook: str, book_dir: str | Path | None = None) -> Start:
    """The opening of an IAT chapter, from its parameters (the notebook's ``globals()``): progress bars and
    library warnings silenced (:func:`mtllib.runtime.quiet_notebook`: the page keeps no stderr), every parameter
    checked (:func:`mtllib.book.params.check_parameters`), the device picked and the multi-task recipe built.
    The pages named by ``seed_pages`` are checked too (:func:`check_seed_pages`: an executed copy each, the same
    IAT settings, other seeds; ``book_dir``: where their copies are, default the project's ``book/``).
    Nothing is trained or tokenized yet: the chapter checks its variants (:meth:`Start.iat`,
    :func:`mtllib.experiments.iat.variant_configs`), then calls :meth:`Start.prepare`. Prints a one-line summary."""
    from mtllib.book.params import check_parameters
    from mtllib.runtime import pick_device, quiet_notebook

    started = time.perf_counter()
    quiet_notebook()
    p = check_parameters(params, notebook)
    run = Start(params=p, started=started, notebook=notebook, book_dir=book_dir)
    if p.get("seed_pages"):
        check_seed_pages(p["seed_pages"], run.settings(), p["seeds"], notebook, book_dir)
    run.device = device = pick_device(p["device"])
    print("device:", device, "| tasks:", ", ".join(p["tasks"]), "| seeds:", p["seeds"])
    run.config = run.recipe()
    return run


def gate(scores: pd.DataFrame, by: list[str] | tuple[str, ...] = ("variant",), glue=None) -> tuple[list[str], pd.DataFrame]:
    """The learnability gate of every model in ``scores`` (:func:`mtllib.experiments.iat.run`'s rows): the tasks
    every model learned (:func:`mtllib.experiments.iat.learned_tasks`, the only ones in the verdicts), and per
    task and model group ``by`` the mean validation score, the majority class's and how many models learned
    it (k/n). Glues ``learned`` and ``left_out`` (names, or "none") and ``n_learned`` (k/n of the tasks)."""
    from mtllib.experiments.iat import learned_tasks

    glue = glue_function(glue)
    learned = learned_tasks(scores)
    tasks = list(scores.task.unique())
    by = list(by)
    table = scores.groupby(["task", *by], sort=False).agg(
        validation=("validation", "mean"), majority=("majority", "first"),
        learned=("learned", lambda s: stats.format_count(s.sum(), len(s)))).unstack(by)
    glue("learned", ", ".join(learned) or "none")
    glue("left_out", ", ".join(t for t in tasks if t not in learned) or "none")
    glue("n_learned", stats.format_count(len(learned), len(tasks)))
    return learned, table.round(1)


def changed_decisions(result, variant: str, data: dict, over: str | None = None) -> tuple[pd.DataFrame, list[str]]:
    """How many test predictions of each task with decisions (not regression) ``variant``'s model changed from
    ``over``'s (the baseline by default) of the same seed: a frame, seeds by tasks
    (:func:`mtllib.experiments.iat.changed_predictions`), and the regression tasks left out of it. A real-valued
    output moves with any update, so every prediction of a regression task would count as changed (on the GLUE-like
    suite bbc-similarity's 300 per seed swamped the handful the classification tasks changed)."""
    from mtllib.experiments.iat import BASELINE, changed_predictions

    changed = changed_predictions(result, variant, BASELINE if over is None else over)
    regression = [t for t in changed.columns if data[t].task.kind == "regression"]
    return changed.drop(columns=regression), regression


#: the page settings beside the training recipe that decide what :func:`mtllib.experiments.iat.run` trains and
#: reads (the IAT variants' alpha, delta and Eq. 4 batches, the IAP read's alpha): pages joined by
#: :func:`join_seeds` must agree on them
SEED_SETTINGS = ("alpha", "delta", "importance_batches", "iap_alpha")
#: what :func:`share_seeds` glues (besides ``"recipe"``, ``"iat_settings"`` and ``"iat_predictions"``):
#: ``{IATResult field: glued name}``
SEED_TABLES = {"scores": "iat_scores", "dissociation": "iat_dissociation", "pruned_least": "iat_pruned"}


def share_seeds(result, recipe: pd.DataFrame, settings: dict, glue=None) -> None:
    """Glue what :func:`join_seeds` reads from this page's executed copy: the training ``recipe``
    (:func:`mtllib.book.results.recipe_frame`, as ``"recipe"``), the page's ``settings`` (:data:`SEED_SETTINGS`),
    and ``result``'s scores, dissociation scores, least-important pruning and test predictions (real-valued ones
    to ten significant digits). Masks and training logs stay on the page."""
    from mtllib.book import results

    record = glue_function(glue)
    glue = lambda key, value, display=False: record(key, value)  # noqa: E731 - glue_frame's call, without display
    results.glue_frame("recipe", recipe, glue)
    results.glue_frame("iat_settings", pd.DataFrame({"setting": list(settings), "value": [json.dumps(v) for v in settings.values()]}), glue)
    for field, name in SEED_TABLES.items():
        results.glue_frame(name, getattr(result, field), glue)
    rows = [{"seed": seed, "variant": variant, "task": task, "predictions": np.asarray(p).tolist()}
            for (seed, variant), by_task in result.predictions.items() for task, p in by_task.items()]
    results.glue_frame("iat_predictions", pd.DataFrame(rows, columns=["seed", "variant", "task", "predictions"]), glue)


class SeedPage(NamedTuple):
    """A page whose seeds another page reads (:func:`check_seed_pages`): its name, executed copy, glued scores
    (:func:`share_seeds`) and run record."""

    page: str
    path: Path
    scores: pd.DataFrame
    record: dict


def _seeds(result) -> list[int]:
    return sorted(set(result.scores.seed))


def _hold(held: dict, seeds, page: str) -> None:
    """Record that ``page`` holds ``seeds`` in ``held`` (seed: page), refusing a seed another page holds."""
    from mtllib import checks

    for seed in sorted(set(seeds)):
        if seed in held:
            raise checks.BadInput(f"seed {seed} is trained both on {held[seed]} and on {page}: give each seed one page")
        held[seed] = page


def check_seed_pages(pages: list[str], settings: dict, seeds: list[int], notebook: str = "", book_dir: str | Path | None = None,
                     recipe: pd.DataFrame | None = None) -> list[SeedPage]:
    """Each of ``pages`` (a :class:`SeedPage`), checked before a page trains anything: refused
    with :class:`mtllib.checks.BadInput` when a page is ``notebook`` itself, has no executed copy or not the
    glued tables (:func:`share_seeds`), was run with other :data:`SEED_SETTINGS` than ``settings``, holds one of
    ``seeds`` (this page's) or a seed another of ``pages`` holds, or, where ``recipe`` is given, was trained on
    another recipe (every differing setting named: :func:`mtllib.book.results.read_same_recipe`)."""
    from mtllib import checks
    from mtllib.book import results

    held = dict.fromkeys(seeds, "this page")
    found = []
    for page in pages:
        if page == notebook:
            raise checks.BadInput(f"seed_pages names this page itself ({page}): name the other pages whose seeds it reads")
        path = results.executed_copy(page, book_dir)
        theirs = {k: json.loads(v) for k, v in results.read_frame(path, "iat_settings").set_index("setting").value.items()}
        differ = [k for k in dict.fromkeys([*settings, *theirs]) if theirs.get(k) != settings.get(k)]
        if differ:
            shown = "; ".join(f"{k}: {theirs.get(k)!r} there, {settings.get(k)!r} here" for k in differ)
            raise checks.BadInput(f"{page} trained its seeds with other settings ({shown}): give both pages the same settings")
        if recipe is not None:
            scores, record = results.read_same_recipe(page, recipe, SEED_TABLES["scores"], book_dir)
        else:
            scores, record = results.read_frame(path, SEED_TABLES["scores"]), results.read_record(path)
        _hold(held, scores.seed, page)
        found.append(SeedPage(page, path, scores, record))
    return found


def join_seeds(result, pages: list[str], recipe: pd.DataFrame, settings: dict, book_dir: str | Path | None = None):
    """``result`` with the seeds that each of ``pages`` (pages of the same source notebook) trained added to its
    scores, dissociation scores, least-important pruning and test predictions, read from their executed copies
    (:func:`share_seeds` glued them), and per page its seeds and a line naming the copy read
    (:func:`mtllib.book.adapter_pages.copy_line`): ``(result, [(seeds, line), ...])``. Masks and training logs
    keep this page's seeds only. Nothing is trained.

    Refused with :class:`mtllib.checks.BadInput`, before anything is joined: what :func:`check_seed_pages`
    refuses (a missing copy or table, another recipe or other settings, a seed held twice), and a page's seed
    whose variants differ from those every seed of this page trains (sweeps stay on the page that trains them)."""
    if not pages:
        return result, []
    return join_checked(result, check_seed_pages(pages, settings, _seeds(result), book_dir=book_dir, recipe=recipe))


def join_checked(result, pages: list[SeedPage]):
    """:func:`join_seeds` for pages :func:`check_seed_pages` has checked (:meth:`Start.prepare` keeps them): their
    seeds are checked again against those ``result`` holds (no copy is read for it), and their variants."""
    from mtllib import checks
    from mtllib.book import results
    from mtllib.book.adapter_pages import copy_line

    if not pages:
        return result, []
    own = [set(result.scores.variant[result.scores.seed == s]) for s in _seeds(result)]
    core = set.intersection(*own) if own else set()
    held = dict.fromkeys(_seeds(result), "this page")
    read, lines = [], []
    for page, path, scores, record in pages:
        _hold(held, scores.seed, page)
        for seed in sorted(set(scores.seed)):
            variants = set(scores.variant[scores.seed == seed])
            if variants != core:
                raise checks.BadInput(f"{page}'s seed {seed} has the variants {sorted(variants)}, this page's seeds {sorted(core)}: "
                                      f"seeds joined in one table need the same variants (sweeps stay on the page that trains them)")
        tables = {field: results.read_frame(path, name) for field, name in SEED_TABLES.items() if field != "scores"}
        read.append((scores, tables, results.read_frame(path, "iat_predictions")))
        lines.append((sorted(set(scores.seed)), copy_line(page, record)))
    joined = {field: pd.concat([getattr(result, field), *(s if field == "scores" else t[field] for s, t, _ in read)], ignore_index=True)
              for field in SEED_TABLES}
    predictions = dict(result.predictions)
    for _, _, frame in read:
        for row in frame.itertuples(index=False):
            predictions.setdefault((int(row.seed), row.variant), {})[row.task] = np.asarray(row.predictions)
    return dataclasses.replace(result, predictions=predictions, **joined), lines


def seed_words(seeds: list[int]) -> str:
    """``"seed 2"`` or ``"seeds 0, 1"``."""
    return f"seed{'s' if len(seeds) > 1 else ''} {', '.join(map(str, seeds))}"


def seeds_line(here: list[int], read: list[tuple[list[int], str]]) -> str:
    """Which seeds a page trained (``here``) and which it read from where (``read``: :func:`join_seeds`'s lines)."""
    text = f"{seed_words(here).capitalize()} trained on this page"
    if read:
        text += "; " + "; ".join(f"{seed_words(s)} read from {line}" for s, line in read) + ", trained on the same recipe (checked)"
    return text + "."

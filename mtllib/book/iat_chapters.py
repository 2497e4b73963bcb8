"""The IAT chapters of "Interpreting and Exploiting Functional Specialization in Multi-Head Attention under
Multi-task Learning": 07 (Important Attention-head Training, Sec. 6.3: Table 7, Fig. 8-10), 07b (IAT under
proportional and annealed sampling, Table 13) and 07c (the GLUE-like offline suite, Tables 5 and 12). Each
function here is a step those notebooks share: the opening (parameters checked, the training recipe and the IAT
variants built, then the data), the gate table the verdicts rest on, and how many test decisions a branch changed.
What the chapters train stays in :mod:`mtllib.experiments.iat`.

``glue``: :func:`myst_nb.glue` without display (the default) or a stand-in taking ``(key, value)``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import pandas as pd

from mtllib.analysis import stats
from mtllib.book.training_run import TrainingRun
from mtllib.book.tables import glue_function


@dataclass
class Start(TrainingRun):
    """What :func:`start` set up for an IAT chapter, with the clock its run time is read from (``minutes()``).
    ``config`` is the multi-task recipe (``epochs``, ``batch_size``, ``lr``, ``device``, and ``sampler`` and
    ``keep_best`` where the chapter has them); ``tokenizer`` and ``data`` are ``None`` until
    :meth:`~mtllib.book.training_run.TrainingRun.prepare`: call it after the chapter's own checks."""

    def iat(self, alpha: float | None = None, delta: float | None = None, heads: str = "top"):
        """An IAT variant (:class:`~mtllib.training.iat.IATConfig`): each task trains its ``alpha`` most important
        heads (``heads="random"``: as many random ones) in the last ``delta`` of the steps; the chapter's
        ``alpha`` and ``delta`` unless given, its ``importance_batches`` for Eq. 4."""
        from mtllib.training.iat import IATConfig

        p = self.params
        return IATConfig(alpha=p["alpha"] if alpha is None else alpha, delta=p["delta"] if delta is None else delta, heads=heads,
                         importance_batches=p["importance_batches"])


def start(params: dict, notebook: str) -> Start:
    """The opening of an IAT chapter, from its parameters (the notebook's ``globals()``): progress bars and
    library warnings silenced (:func:`mtllib.runtime.quiet_notebook`: the page keeps no stderr), every parameter
    checked (:func:`mtllib.book.params.check_parameters`), the device picked and the multi-task recipe built.
    Nothing is trained or tokenized yet: the chapter checks its variants (:meth:`Start.iat`,
    :func:`mtllib.experiments.iat.variant_configs`), then calls :meth:`~mtllib.book.training_run.TrainingRun.prepare`.
    Prints a one-line summary."""
    from mtllib.book.params import check_parameters
    from mtllib.runtime import pick_device, quiet_notebook

    started = time.perf_counter()
    quiet_notebook()
    p = check_parameters(params, notebook)
    device = pick_device(p["device"])
    print("device:", device, "| tasks:", ", ".join(p["tasks"]), "| seeds:", p["seeds"])
    run = Start(params=p, device=device, started=started)
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

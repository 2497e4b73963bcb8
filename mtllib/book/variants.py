"""The steps that the chapters comparing variants of one multi-task model share ("BERT and PALs": 06b compares
placements, 06c methods on a small budget, 06d sampling schedules, 06g methods on the GLUE-like suite; the IAT
chapters too): the data each variant trains on and each task's GLUE role, the slowest variant's training
time, the tasks every model learned, the score table with the average over those tasks, and a variant's
per-task gains as a figure. The rows are :func:`mtllib.experiments.adapters.run_variants`'s (one per variant,
seed and task).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from mtllib.book.tables import ci_cell, ci_table, glue_function
from mtllib.experiments.adapters import average_per_seed, learned_by_every_model


def data_table(data: dict) -> pd.DataFrame:
    """Per task: training and test examples, the main metric, and the majority class's test score (%)."""
    from mtllib.analysis.learnability import majority_for
    from mtllib.data.tasks import get_task

    return pd.DataFrame({n: {"train": len(d.features["train"]), "test": len(d.features["test"]), "metric": get_task(n).main_metric,
                             "majority class, test (%)": round(majority_for(d, "test"), 1)} for n, d in data.items()}).T


def glue_role(task: str) -> str | None:
    """The GLUE task whose role ``task`` plays in the GLUE-like suite (:data:`mtllib.data.tasks.GLUE_LIKE`:
    ``"bbc-next"`` gives ``"mnli"``), a GLUE task's own name for itself, ``None`` for any other task."""
    from mtllib.data.tasks import GLUE_LIKE

    return task if task in GLUE_LIKE else {t: g for g, t in GLUE_LIKE.items()}.get(task)


def role_label(task: str) -> str:
    """``"bbc-next (mnli)"`` for a stand-in of the GLUE-like suite (:func:`glue_role`), the name alone otherwise."""
    role = glue_role(task)
    return f"{task} ({role})" if role not in (None, task) else task


def train_minutes(rows: pd.DataFrame, seeds: list[int], by: str = "variant") -> float:
    """The slowest variant's training minutes per seed (for models from the cache, the run that trained them)."""
    return float(rows.groupby(by, sort=False).train_seconds.apply(lambda s: s.unique().sum() / len(seeds) / 60).max())


def learned_tasks(rows: pd.DataFrame, tasks: list[str], glue=None) -> list[str]:
    """The tasks every model learned, glued as ``learned`` (names, or "none") and ``n_learned``."""
    glue = glue_function(glue)
    learned = learned_by_every_model(rows, tasks)
    glue("learned", ", ".join(learned) or "none")
    glue("n_learned", str(len(learned)))
    return learned


def score_table(rows: pd.DataFrame, tasks: list[str], learned: list[str], by: str = "variant") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Test scores per variant (rows) and task (columns), mean [95% t-interval] over seeds, with the average
    over the learned tasks; and that average per seed (one row per seed, one column per variant), the form
    the claims are judged on."""
    table = ci_table(rows, [by, "task"], ["score"]).score.unstack("task")[tasks]
    per_seed = average_per_seed(rows, learned, by=by)
    if learned:
        table["average (learned)"] = per_seed.apply(ci_cell)
    return table, per_seed


@dataclass
class Comparison:
    """Trained variants read the way these chapters read them (:func:`compare`)."""

    #: the tasks every model learned, in the chapter's order: the only ones in averages and verdicts
    learned: list[str]
    #: the gate per task and variant (:func:`mtllib.experiments.adapters.gate_table`)
    gate: pd.DataFrame
    #: test scores per variant and task with the average over the learned tasks (:func:`score_table`)
    table: pd.DataFrame
    #: that average per seed: one row per seed, one column per variant (what the claims are judged on)
    per_seed: pd.DataFrame


def compare(rows: pd.DataFrame, tasks: list[str], seeds: list[int], by: str = "variant", parameters: pd.Series | None = None,
            glue=None) -> Comparison:
    """Read :func:`mtllib.experiments.adapters.run_variants`'s rows: the gate, the learned tasks (glued as
    ``learned`` and ``n_learned``), the score table (with a ``parameters`` column when ``parameters``, indexed
    by variant, is given) and the per-seed averages; glues ``train_minutes`` (:func:`train_minutes`)."""
    from mtllib.experiments.adapters import gate_table

    glue_function(glue)("train_minutes", train_minutes(rows, seeds, by=by))
    learned = learned_tasks(rows, tasks, glue=glue)
    table, per_seed = score_table(rows, tasks, learned, by=by)
    if parameters is not None:
        table["parameters"] = parameters.reindex(table.index)
    return Comparison(learned, gate_table(rows, by=by), table, per_seed)


def variants_figure(per_seed: pd.DataFrame, differences: dict, order: list[str] | None = None, margin: float | None = None):
    """Two panels, one above the other (legible at the book's column width): the average over the learned tasks
    per variant (dots: seeds; bar: the mean with its 95% t-interval), and each claim's per-seed difference,
    with dotted lines at +-``margin`` when the claims are judged against one. A panel with nothing to show says so."""
    import matplotlib.pyplot as plt

    from mtllib.book import plots

    fig, axes = plt.subplots(2, 1, figsize=(7, 8))
    if len(per_seed.columns):
        columns = [v for v in (order or per_seed.columns) if v in per_seed]
        plots.seeds_with_ci(axes[0], per_seed[columns], ylabel="average test score (%)", zero_line=False)
        axes[0].set_title("average over the learned tasks")
        axes[0].tick_params(axis="x", labelrotation=30)
    else:
        plots.nothing_to_show(axes[0], "no task was learned by every model")
    if differences:
        plots.seeds_with_ci(axes[1], pd.DataFrame(differences), ylabel="difference (points)")
        title = "each claim's difference, per seed"
        if margin is not None:
            for y in (-margin, margin):
                axes[1].axhline(y, color="0.5", linestyle=":", linewidth=1)
            title += f" (dotted: \u00b1{margin:g})"
        axes[1].set_title(title)
        axes[1].tick_params(axis="x", labelrotation=15)
    else:
        plots.nothing_to_show(axes[1], "no claim could be judged")
    fig.tight_layout()
    return fig


def gains_figure(gains: pd.DataFrame, learned: list[str], title: str, ylabel: str, paper: pd.Series | None = None):
    """One panel: a variant's per-seed difference from its reference (``gains``: rows = seeds, a column per task
    and ``"average"``) for the learned tasks and the average, each task named with its GLUE role
    (:func:`role_label`); dots are seeds, the bar the mean with its 95% t-interval, red diamonds the paper's values
    (``paper``, indexed by task or ``"average"``). A panel saying so when no task was learned by every model."""
    import matplotlib.pyplot as plt

    from mtllib.book import plots

    fig, ax = plt.subplots(figsize=(7.5, 3.8))
    shown = gains[[c for c in gains.columns if c in learned or c == "average"]]
    if shown.shape[1]:
        plots.seeds_with_ci(ax, shown.rename(columns=role_label), paper=None if paper is None else paper.rename(role_label), ylabel=ylabel)
        ax.set_title(title)
    else:
        plots.nothing_to_show(ax, "no task was learned by every model")
    fig.tight_layout()
    return fig

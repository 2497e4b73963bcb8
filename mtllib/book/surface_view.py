"""Chapter 01's view of the surface baselines (:mod:`mtllib.analysis.surface`): one row per task, and a
figure of how much of each task's score surface cues already give."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from mtllib.data.tasks import get_task

BASELINES = ("majority class", "overlap rule", "bag of words")


def table(results: dict, split: str = "validation") -> pd.DataFrame:
    """One row per task: its paper role, main metric, each baseline's score on ``split`` and the overlap rule
    in words (``results``: ``{job: result}`` of the surface-baselines jobs)."""
    rows = []
    for job, result in results.items():
        t = result.tables["baselines"]
        t = t[t.split == split]
        task = get_task(job.spec["task"])
        scores = t.set_index("baseline").score
        rule = t[t.baseline == "overlap rule"].rule
        rows.append({"task": task.name, "plays": task.stands_in_for, "metric": task.main_metric,
                     **{b: float(scores[b]) if b in scores else np.nan for b in BASELINES},
                     "overlap rule in words": rule.iloc[0] if len(rule) else "no pair of texts to compare"})
    return pd.DataFrame(rows).set_index("task")


def figure(view: pd.DataFrame):
    """Each task's baselines on one line: majority class (grey), overlap rule and bag of words."""
    order = view.sort_values("majority class").index
    fig, ax = plt.subplots(figsize=(7.2, 0.42 * len(order) + 1.3))
    styles = {"majority class": dict(marker="|", color="0.45", s=160), "overlap rule": dict(marker="o", color="C3", s=42),
              "bag of words": dict(marker="s", color="C0", s=36)}
    labelled = set()
    for i, task in enumerate(order):
        values = view.loc[task, list(BASELINES)].astype(float)
        finite = values.dropna()
        ax.plot([finite.min(), finite.max()], [i, i], color="0.8", lw=2, zorder=0)
        for name, style in styles.items():
            if np.isfinite(values[name]):
                ax.scatter(values[name], i, label=None if name in labelled else name, zorder=2, **style)
                labelled.add(name)
    ax.set_yticks(range(len(order)), [f"{t} ({view.loc[t, 'metric']})" for t in order])
    ax.set_xlabel("validation score of the baseline (points of the task's main metric)")
    ax.set_xlim(-2, 102)
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, frameon=False)
    fig.tight_layout()
    return fig


#: a surface baseline at or above this score (points) gives a task away
GIVEN_AWAY = 95.0


def findings(view: pd.DataFrame) -> str:
    """What the surface baselines show, as sentences with their numbers: which tasks a surface cue solves,
    and for each of them the rule in words."""
    best = view[["overlap rule", "bag of words"]].max(axis=1)
    solved = best[best >= GIVEN_AWAY].index
    if not len(solved):
        return f"No task's surface baseline reaches {GIVEN_AWAY:.0f}: every task needs more than its words' overlap or presence."
    parts = [f"{t} ({view.loc[t, 'plays']}'s role: {best[t]:.1f})" for t in solved]
    rules = [f"the overlap rule of {t} reads \"{view.loc[t, 'overlap rule in words']}\"" for t in solved if np.isfinite(view.loc[t, "overlap rule"])]
    text = f"On {len(solved)} of {len(view)} tasks a surface baseline scores {GIVEN_AWAY:.0f} or more: {', '.join(parts)}."
    if rules:
        text += f" For them, {'; '.join(rules)}."
    text += (" As built, such a task tests whether a surface cue is present, not the ability the paper's dataset tests; "
             "results on it in later chapters measure the cue.")
    return text


def glue_findings(view: pd.DataFrame, glue=None) -> str:
    from mtllib.book.tables import glue_function

    text = findings(view)
    glue_function(glue)("surface_findings", text)
    return text

"""Is a task learned? One gate for every verdict in the book.

A task whose model sits at the majority-class baseline cannot lose anything to pruning, so its dissociation
score (main paper, Eq. 5-6) says nothing, and a verdict that counts it is noise. Every chapter therefore uses
only tasks that pass :func:`is_learned` in the model it analyses, and says which tasks it left out.

The rule, per main metric (scores in percent):

- ``accuracy``: at least :data:`MARGIN` (15) points above the majority-class baseline on the same split;
- ``mcc`` (the majority class scores 0): at least 30;
- F1-type metrics (``f1``, ``macro_f1``, ``word_f1``, ``entity_f1``, ``squad_f1``): at least 50 and at least
  :data:`MARGIN` points above the majority baseline;
- ``exact_match``: at least 30;
- correlations (``pearson``, ``spearman``, times 100): at least 30.

The gate is decided on the validation split; chapters report test scores.
"""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from mtllib.data.kinds import ARGMAX_KINDS
from mtllib.data import metrics as metric_fns

MARGIN = 15.0
#: absolute floors per main metric (percent); ``accuracy`` has none beyond the margin over majority
FLOORS = {"accuracy": None, "mcc": 30.0, "f1": 50.0, "macro_f1": 50.0, "word_f1": 50.0, "entity_f1": 50.0,
          "squad_f1": 50.0, "exact_match": 30.0, "pearson": 30.0, "spearman": 30.0}
_MARGIN_METRICS = {"accuracy", "f1", "macro_f1", "word_f1", "entity_f1", "squad_f1"}


def threshold(metric: str, majority: float) -> float:
    """The smallest score of ``metric`` that counts as learned, given the majority baseline's score."""
    if metric not in FLOORS:
        raise ValueError(f"no learnability rule for metric {metric!r}; rules exist for: {', '.join(FLOORS)}")
    if metric in _MARGIN_METRICS and not (math.isfinite(majority) and 0 <= majority <= 100):
        raise ValueError(f"majority baseline must be a finite score in [0, 100] for {metric!r}, got {majority!r}")
    floor = FLOORS[metric] if FLOORS[metric] is not None else -math.inf
    return max(floor, majority + MARGIN) if metric in _MARGIN_METRICS else floor


def is_learned(metric: str, score: float, majority: float) -> bool:
    """True when ``score`` (percent, validation split) passes the gate for ``metric``; NaN is never learned."""
    if not math.isfinite(score):
        return False
    return bool(score >= threshold(metric, majority))


def majority_predictions(task, train_labels, references):
    """Predictions of the majority-class baseline for ``references`` (in the form :mod:`mtllib.data.metrics`
    takes): the most frequent training label (per token for sequence labelling; the training mean for
    regression; an empty answer for span QA)."""
    if task.kind in ARGMAX_KINDS:  # multiple choice: the most frequent right position
        top = Counter(int(v) for v in train_labels).most_common(1)[0][0]
        return np.full(len(references), top)
    if task.kind == "regression":
        return np.full(len(references), float(np.mean(train_labels)))
    if task.kind == "sequence_labelling":
        top = Counter(t for tags in train_labels for t in tags if t != -100).most_common(1)[0][0]
        if "entity_f1" in task.metrics:
            top = task.label_names[top]
        return [[top] * len(r) for r in references]
    return [""] * len(references)


def majority_score(task, train_labels, references) -> float:
    """The main metric of the majority-class baseline on ``references`` (percent; 0 where undefined, as the
    correlation of a regression task's constant prediction is: it is not computed, so scipy does not warn)."""
    if task.kind == "regression" and task.main_metric in ("pearson", "spearman"):
        return 0.0
    value = metric_fns.compute([task.main_metric], majority_predictions(task, train_labels, references), references)[task.main_metric]
    return 0.0 if not math.isfinite(value) else value


def majority_for(data, split: str = "validation") -> float:
    """The majority baseline of one prepared task (:class:`mtllib.data.features.TaskData`) on ``split``: the
    most frequent training label scored against that split's gold answers (percent)."""
    from mtllib.data.features import references, train_labels

    return majority_score(data.task, train_labels(data), references(data, split))


def chance(task) -> float:
    """The score of a uniform random guess for accuracy (100 / classes, or / choices); 0 for every other main metric."""
    if task.main_metric == "accuracy" and task.kind in ARGMAX_KINDS:
        return 100.0 / len(task.label_names)
    return 0.0


def gate(scores, majority, metrics) -> "pd.DataFrame":
    """The gate applied to several tasks of one model: one row per task (``scores``, ``majority`` and
    ``metrics`` map task -> validation score, majority-baseline score and main metric) with ``threshold``,
    ``learned`` and a ``reason`` in words for the tasks left out."""
    import pandas as pd

    rows = {}
    for task, score in scores.items():
        metric, base = metrics[task], majority[task]
        need = threshold(metric, base)
        learned = is_learned(metric, score, base)
        rows[task] = {"metric": metric, "score": score, "majority": base, "threshold": need, "learned": learned,
                      "reason": "" if learned else f"{metric} {score:.1f} < {need:.1f} needed (majority {base:.1f})"}
    return pd.DataFrame.from_dict(rows, orient="index")


def learned_in_every(tables) -> list[str]:
    """Tasks learned in every one of several gate tables (one per seed), in the first table's order."""
    tables = list(tables)
    if not tables:
        raise ValueError("learned_in_every needs at least one gate table")
    return [t for t in tables[0].index if all(bool(g.loc[t, "learned"]) for g in tables if t in g.index)]

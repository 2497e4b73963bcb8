"""Dev scores over training ("BERT and PALs", Appendix A: performance on each task over time).

The paper plots each GLUE task's development score over its 60,000 training steps and reads two things off
the curves: low-resource tasks vary more over training than high-resource ones, and late in training some
tasks fall (CoLA and RTE with low-rank layers, not with PALs; MRPC the other way round). The functions here
turn a training history (one row per epoch and task, the ``history`` of
:class:`mtllib.training.trainer.TrainResult`, with the run's identifying columns added) into those two
numbers per run and task.
"""

from __future__ import annotations

import pandas as pd

#: the columns that identify one training run in a table of histories
RUN_KEYS = ("variant", "seed")


def _check(history: pd.DataFrame, keys: tuple[str, ...]) -> None:
    missing = [c for c in (*keys, "epoch", "task", "score") if c not in history.columns]
    if missing:
        raise ValueError(f"the history lacks column(s) {missing}; it has {list(history.columns)}")


def variation(history: pd.DataFrame, first_epoch: int = 2, keys: tuple[str, ...] = RUN_KEYS) -> pd.Series:
    """How much each task's dev score moves over training: the standard deviation (ddof 1) of its scores from
    ``first_epoch`` on, per run (``keys``) and task. Epochs before ``first_epoch`` are left out because every
    task jumps from its untrained score in the first epoch; what Appendix A describes is the movement after.
    A run with fewer than two epochs from ``first_epoch`` on gives NaN."""
    _check(history, keys)
    if not isinstance(first_epoch, int) or first_epoch < 1:
        raise ValueError(f"first_epoch is an epoch number >= 1, got {first_epoch!r}")
    later = history[history.epoch >= first_epoch]
    out = later.groupby([*keys, "task"], sort=False).score.std(ddof=1)
    return out.rename("variation")


def late_fall(history: pd.DataFrame, keys: tuple[str, ...] = RUN_KEYS) -> pd.Series:
    """How far each task's dev score ended below its best: best epoch's score minus the last epoch's, per run
    (``keys``) and task (0 when the last epoch is the best; never negative)."""
    _check(history, keys)
    ordered = history.sort_values("epoch")
    grouped = ordered.groupby([*keys, "task"], sort=False).score
    return (grouped.max() - grouped.last()).rename("late fall")


def resource_halves(sizes: dict[str, int]) -> tuple[list[str], list[str]]:
    """The low- and high-resource tasks of ``sizes`` ({task: training examples}): the smaller half and the larger
    half by training size (with an odd number of tasks the middle one is in neither). Ties keep the given order."""
    if len(sizes) < 2:
        raise ValueError(f"comparing low- and high-resource tasks needs at least two tasks, got {list(sizes)}")
    ordered = sorted(sizes, key=sizes.get)
    half = len(ordered) // 2
    return ordered[:half], ordered[-half:]


def low_minus_high(values: pd.Series, sizes: dict[str, int]) -> pd.Series:
    """Per run (every index level of ``values`` but ``task``): the mean of ``values`` over the low-resource half of
    ``sizes`` minus the mean over the high-resource half (:func:`resource_halves`). Tasks not in ``sizes`` are
    left out; a run missing a task of either half gives NaN."""
    low, high = resource_halves(sizes)
    wide = values.unstack("task")
    missing = [t for t in (*low, *high) if t not in wide.columns]
    if missing:
        raise ValueError(f"no values for task(s) {missing}; the values hold {list(wide.columns)}")
    return (wide[low].mean(axis=1, skipna=False) - wide[high].mean(axis=1, skipna=False)).rename("low minus high")

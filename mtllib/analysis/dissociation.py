"""Dissociation scores of Important Attention-head Pruning (IAP), Sec. 4.1 of "Interpreting and Exploiting Functional
Specialization in Multi-Head Attention under Multi-task Learning": dissociation scores (Eq. 5-7), their
double / single dissociation reading, the overlap of pruned heads (Table 11) and their layers (Fig. 4).

Layout used throughout: a *performance table* ``perf`` has one row per task whose top-alpha heads were pruned
(``H_j``) and one column per evaluated task (``i``), as in Table 3; ``base`` holds the unpruned performance per
task. Then (all in percent, as the paper reports them):

- Eq. 5: ``RP_i(H_j) = perf[j, i] / base[i]``                                     (:func:`relative_performance`)
- pairwise (Table 10): ``D_i(H_j) = RP_i(H_j) - RP_i(H_i)``, row ``j``, column ``i``  (:func:`pairwise_dissociation`)
- Eq. 7: ``D_i = mean_{j != i} RP_i(H_j) - RP_i(H_i)`` (Eq. 6 when there are two tasks)  (:func:`dissociation`)
- ``D = mean_i D_i``                                                              (:func:`average_dissociation`)

Checked against the paper's own numbers in the tests and the book: Table 4's rows give back its D_A, D_B
and D columns; Table 10 agrees with Table 3 to within rounding; Table 3's D_i row matches its table except
that the QNLI and AG entries are swapped (the means of Table 10's columns agree with our values).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

DISTINCT = 10.0  #: the paper's threshold, in percent (Shallice, 1988)


def _check(perf: pd.DataFrame, base: pd.Series) -> None:
    base = pd.Series(base)
    missing_rows = [t for t in perf.columns if t not in perf.index]
    if missing_rows:
        raise ValueError(f"perf needs a row for every evaluated task (its own heads pruned); missing {missing_rows}")
    missing_base = [t for t in perf.columns if t not in base.index]
    if missing_base:
        raise ValueError(f"base has no unpruned performance for {missing_base}")
    if (base[perf.columns] <= 0).any():
        raise ValueError("base performance must be positive (relative performance divides by it)")


def relative_performance(perf: pd.DataFrame, base) -> pd.DataFrame:
    """Eq. 5: every cell divided by its column's (evaluated task's) unpruned performance."""
    base = pd.Series(base)
    _check(perf, base)
    return perf.div(base[perf.columns], axis=1)


def pairwise_dissociation(perf: pd.DataFrame, base) -> pd.DataFrame:
    """Table 10: ``D_A`` in percent for evaluated task A (column) when task B's heads (row) are pruned;
    the diagonal is empty."""
    rp = relative_performance(perf, base)
    tasks = list(perf.columns)
    out = pd.DataFrame(np.nan, index=pd.Index(tasks, name="pruned (B)"), columns=pd.Index(tasks, name="evaluated (A)"))
    for a in tasks:
        for b in tasks:
            if a != b:
                out.loc[b, a] = 100 * (rp.loc[b, a] - rp.loc[a, a])
    return out


def dissociation(perf: pd.DataFrame, base) -> pd.Series:
    """Eq. 7 (Eq. 6 for two tasks): ``D_i`` in percent for every evaluated task."""
    if perf.shape[1] < 2:
        raise ValueError("dissociation needs at least two tasks")
    return pairwise_dissociation(perf, base).mean(axis=0).rename("D")


def average_dissociation(perf: pd.DataFrame, base) -> float:
    """``D(alpha)``: the mean of the tasks' dissociation scores, in percent."""
    return float(dissociation(perf, base).mean())


def classify(d_a: float, d_b: float, threshold: float = DISTINCT) -> str:
    """The paper's reading of a dual-task pair (Sec. 4.1), scores in percent:
    ``"double (distinct)"`` (both > 0 and their mean >= threshold), ``"double"`` (both > 0),
    ``"single"`` (one > threshold, the other < 0), else ``"none"``."""
    if d_a > 0 and d_b > 0:
        return "double (distinct)" if (d_a + d_b) / 2 >= threshold else "double"
    if (d_a > threshold and d_b < 0) or (d_b > threshold and d_a < 0):
        return "single"
    return "none"


def overlap(masks: dict[str, torch.Tensor]) -> pd.DataFrame:
    """Table 11: percentage of task A's pruned heads that are also task B's (``|M_A & M_B| / |M_A|``)."""
    names = list(masks)
    out = pd.DataFrame(np.nan, index=pd.Index(names, name="B"), columns=pd.Index(names, name="A"))
    for a in names:
        for b in names:
            if a != b:
                out.loc[b, a] = 100 * float((masks[a] & masks[b]).sum()) / float(masks[a].sum())
    return out


def heads_per_layer(masks: dict[str, torch.Tensor]) -> pd.DataFrame:
    """Fig. 4: number of pruned heads in each layer (rows, from 1) for each task (columns)."""
    return pd.DataFrame({name: m.sum(dim=1).tolist() for name, m in masks.items()}, index=pd.RangeIndex(1, next(iter(masks.values())).shape[0] + 1, name="layer"))


def bootstrap_dissociation(correct: dict, tasks: list[str], n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Percentile confidence intervals of each ``D_i`` (Eq. 7 over ``tasks``) and of their mean, over test
    examples resampled with replacement: one model (seed), so this is the uncertainty that the finite test set
    adds. ``correct[row][task]`` is the 0/1 correctness of every test example of ``task`` with ``row``'s heads
    pruned (rows: each task of ``tasks`` and ``"Base"``); a task's rows are resampled with the same examples
    (paired). Needs accuracy as the main metric (a mean over examples). Returns rows ``tasks + ["average"]``,
    columns ``D``, ``low``, ``high``."""
    if len(tasks) < 2:
        raise ValueError("dissociation needs at least two tasks")
    missing = [(r, t) for r in [*tasks, "Base"] for t in tasks if t not in correct.get(r, {})]
    if missing:
        raise ValueError(f"per-example correctness missing for (pruned row, task) {missing[:5]} (accuracy tasks only)")
    rng = np.random.default_rng(seed)
    samples, point = {}, {}
    for i, task in enumerate(tasks):
        c = np.stack([np.asarray(correct[r][task], dtype=float) for r in [*tasks, "Base"]])  # [rows, T]
        if np.any(c[-1].mean() == 0):
            raise ValueError(f"base accuracy of {task!r} is 0: relative performance is undefined")
        idx = rng.integers(0, c.shape[1], size=(n_resamples, c.shape[1]))
        for name, acc in (("point", c.mean(axis=1)[:, None]), ("boot", c[:, idx].mean(axis=2))):
            rp = acc[:-1] / np.where(acc[-1] == 0, np.nan, acc[-1])  # [tasks, B]: RP_i(H_j), Eq. 5
            others = np.delete(np.arange(len(tasks)), i)
            d = 100 * (rp[others].mean(axis=0) - rp[i])
            (point if name == "point" else samples)[task] = d
    tail = (1 - confidence) / 2 * 100
    out = {}
    for task in tasks:
        out[task] = {"D": float(point[task][0]), "low": float(np.nanpercentile(samples[task], tail)), "high": float(np.nanpercentile(samples[task], 100 - tail))}
    mean_boot = np.nanmean(np.stack([samples[t] for t in tasks]), axis=0)
    out["average"] = {"D": float(np.mean([point[t][0] for t in tasks])), "low": float(np.nanpercentile(mean_boot, tail)), "high": float(np.nanpercentile(mean_boot, 100 - tail))}
    return pd.DataFrame.from_dict(out, orient="index")

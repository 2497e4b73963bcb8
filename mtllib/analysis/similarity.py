"""Task similarity (Sec. 6.2 and Appendix D of "Interpreting and Exploiting Functional Specialization in
Multi-Head Attention under Multi-task Learning"): three of its four metrics, computed from models fine-tuned on
each task, and the fit of the average dissociation score against similarity (Fig. 3, Fig. 5-7).

- DSE, direct similarity estimation: the mean cosine similarity of the sentence representations that two
  task models give the same probe sentences (the paper uses 1,000 Wikipedia sentences).
  (:func:`dse`)
- CRA, cognitive representation analytics: representational similarity analysis (Kriegeskorte et al., 2008).
  Each model's representation dissimilarity matrix (RDM, ``1 - Pearson r`` between the representations of
  every two probe sentences) and the Spearman correlation of two models' RDMs. (:func:`rdm`, :func:`cra`)
- AHP, analytic hierarchy process (Zamir et al., 2018, Taskonomy): for each target task, models transferred
  from different source tasks are compared example by example on held-out data; the principal eigenvector
  of the pairwise win-ratio matrix ranks the sources. (:func:`ahp_affinity`, :func:`ahp`)
- CNM (the fourth metric, the paper's Fig. 3) maps representations to fMRI recordings of people reading
  (Pereira et al., 2018); those recordings are not available offline, so it is not reproduced here.

Similarity tables are square (``source/row x target/column``); :func:`pair_values` turns one into one value
per unordered task pair (the mean of both directions) and :func:`correlate` fits a line and gives Pearson and
Spearman r with their p-values.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from scipy import stats
from scipy.spatial.distance import pdist




def _check_reps(reps: dict[str, np.ndarray]) -> list[str]:
    names = list(reps)
    if len(names) < 2:
        raise ValueError("similarity compares tasks: give representations of at least two")
    shapes = {np.shape(r) for r in reps.values()}
    if len(shapes) != 1 or len(next(iter(shapes))) != 2:
        raise ValueError(f"every task needs a [sentences, hidden] array of the same shape, got {shapes}")
    return names


# --- DSE and CRA ----------------------------------------------------------------------------------------
def dse(reps: dict[str, np.ndarray]) -> pd.DataFrame:
    """DSE: mean over probe sentences of the cosine similarity between two task models' representations."""
    names = _check_reps(reps)
    unit = {n: r / np.linalg.norm(r, axis=1, keepdims=True).clip(min=1e-12) for n, r in reps.items()}
    table = pd.DataFrame(1.0, index=pd.Index(names, name="task"), columns=pd.Index(names, name="task"))
    for a, b in itertools.combinations(names, 2):
        table.loc[a, b] = table.loc[b, a] = float((unit[a] * unit[b]).sum(axis=1).mean())
    return table


def rdm(rep: np.ndarray) -> np.ndarray:
    """Representation dissimilarity matrix in condensed form (``scipy.spatial.distance.squareform`` layout):
    ``1 - Pearson r`` between the representations of every two sentences."""
    rep = np.asarray(rep, dtype=np.float64)
    if rep.ndim != 2 or len(rep) < 3:
        raise ValueError(f"rdm needs a [sentences >= 3, hidden] array, got shape {rep.shape}")
    return pdist(rep, metric="correlation")


def cra(reps: dict[str, np.ndarray]) -> pd.DataFrame:
    """CRA: Spearman correlation between the RDMs of every two task models (representational similarity)."""
    names = _check_reps(reps)
    rdms = {n: rdm(r) for n, r in reps.items()}
    table = pd.DataFrame(1.0, index=pd.Index(names, name="task"), columns=pd.Index(names, name="task"))
    for a, b in itertools.combinations(names, 2):
        table.loc[a, b] = table.loc[b, a] = float(stats.spearmanr(rdms[a], rdms[b]).statistic)
    return table


# --- AHP ------------------------------------------------------------------------------------------------
def ahp_affinity(losses: pd.DataFrame, clip: float = 1e-3) -> pd.Series:
    """Taskonomy's AHP for one target task. ``losses``: one row per held-out example, one column per source
    (the model transferred from that source), the example's loss. ``W[i, j]`` = share of examples on which
    source i has the lower loss (ties count half), clipped to ``[clip, 1 - clip]``; ``W' = W / W^T``; the
    principal eigenvector of ``W'``, scaled to sum to 1, is each source's affinity to the target."""
    if losses.shape[1] < 2:
        raise ValueError("AHP ranks sources: give losses of at least two")
    if losses.isna().any().any():
        raise ValueError("losses contain NaN")
    values = losses.to_numpy(dtype=np.float64)
    lower = (values[:, :, None] < values[:, None, :]).mean(axis=0)
    tied = (values[:, :, None] == values[:, None, :]).mean(axis=0)
    wins = np.clip(lower + tied / 2, clip, 1 - clip)
    ratio = wins / wins.T
    eigvals, eigvecs = np.linalg.eig(ratio)
    principal = np.abs(np.real(eigvecs[:, np.argmax(np.real(eigvals))]))
    return pd.Series(principal / principal.sum(), index=losses.columns, name="affinity")


def ahp(losses_by_target: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """:func:`ahp_affinity` for every target: ``source (row) x target (column)``, NaN where a source was not
    compared on a target (a task is not its own source). Columns of other names (e.g. a ``"pretrained"``
    baseline source) take part in the ranking but get no row."""
    targets = list(losses_by_target)
    table = pd.DataFrame(np.nan, index=pd.Index(targets, name="source"), columns=pd.Index(targets, name="target"))
    for target, losses in losses_by_target.items():
        affinity = ahp_affinity(losses)
        for source in affinity.index:
            if source in table.index:
                table.loc[source, target] = affinity[source]
    return table


# --- pairs and fits -------------------------------------------------------------------------------------
def pair_values(table: pd.DataFrame, name: str = "value") -> pd.Series:
    """One value per unordered pair of the table's tasks: the mean of ``table[a, b]`` and ``table[b, a]``
    (a symmetric table gives its entry back), indexed ``"a + b"`` in the table's order."""
    tasks = [t for t in table.columns if t in table.index]
    if len(tasks) < 2:
        raise ValueError("the table needs at least two tasks in both its rows and its columns")
    values = {f"{a} + {b}": float(np.nanmean([table.loc[a, b], table.loc[b, a]])) for a, b in itertools.combinations(tasks, 2)}
    return pd.Series(values, name=name).rename_axis("pair")


def correlate(x: pd.Series, y: pd.Series) -> dict:
    """Least-squares line ``y = slope * x + intercept`` and Pearson / Spearman correlation with two-sided
    p-values (scipy), over the pairs present in both series."""
    x, y = x.align(y, join="inner")
    keep = x.notna() & y.notna()
    x, y = x[keep].astype(float), y[keep].astype(float)
    if len(x) < 3:
        raise ValueError(f"a correlation needs at least 3 paired values, got {len(x)}")
    fit = stats.linregress(x, y)
    pearson = stats.pearsonr(x, y)
    spearman = stats.spearmanr(x, y)
    return {"n": len(x), "slope": fit.slope, "intercept": fit.intercept, "pearson_r": pearson.statistic, "pearson_p": pearson.pvalue,
            "spearman_r": spearman.statistic, "spearman_p": spearman.pvalue}

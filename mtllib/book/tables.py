"""Tables as the book's pages show them: one cell per quantity, ``mean [low, high]`` over seeds.

The statistics are :mod:`mtllib.analysis.stats`' (95% t-interval over the rows of a group); this module only
lays them out, so that every chapter prints the same form (issue #11's table rules: no ``NaN`` cells, counts
as integers).
"""

from __future__ import annotations

import pandas as pd

from mtllib.analysis.stats import DASH, format_ci, t_interval


def ci_cell(values, digits: int = 1) -> str:
    """``"12.3 [10.1, 14.5]"`` for several values, the value alone for one, an em dash for none (NaN skipped)."""
    values = pd.Series(values, dtype=float).dropna()
    if values.empty:
        return DASH
    return format_ci(t_interval(values.to_numpy()), digits)


def ci_table(rows: pd.DataFrame, by: list[str] | str, columns: list[str], digits: int = 1) -> pd.DataFrame:
    """One row per group of ``rows`` (grouped by ``by``, in order of first appearance), one column per name in
    ``columns``: the mean with its 95% t-interval over the group's rows (e.g. seeds), as text."""
    missing = [c for c in [*([by] if isinstance(by, str) else by), *columns] if c not in rows.columns]
    if missing:
        raise KeyError(f"rows have no column(s) {missing}; they have: {', '.join(map(str, rows.columns))}")
    grouped = rows.groupby(by, sort=False)
    return pd.DataFrame({c: grouped[c].agg(lambda v: ci_cell(v, digits)) for c in columns})


def mean_sd(mean: pd.DataFrame, sd: pd.DataFrame, digits: int = 1) -> pd.DataFrame:
    """``"80.8 (0.7)"`` cells, the paper's form of a mean with its standard deviation over seeds (its Table 1;
    the Tables chapter prints it too); an em dash where the mean is missing, the mean alone where the sd is
    (one seed)."""
    if not mean.index.equals(sd.index) or not mean.columns.equals(sd.columns):
        raise ValueError("mean and sd must have the same rows and columns")

    def cell(m, s):
        if pd.isna(m):
            return DASH
        return f"{m:.{digits}f}" if pd.isna(s) else f"{m:.{digits}f} ({s:.{digits}f})"

    return pd.DataFrame([[cell(m, s) for m, s in zip(mean.loc[i], sd.loc[i])] for i in mean.index], index=mean.index, columns=mean.columns)


def glue_function(glue=None):
    """``glue`` if given (a stand-in taking ``(key, value)``, as tests pass), else :func:`myst_nb.glue` that
    stores a value for the page's text without displaying it."""
    if glue is not None:
        return glue
    from myst_nb import glue as myst_glue

    return lambda key, value: myst_glue(key, value, display=False)


def glue_claims(rows: list[dict], nothing: str, glue=None) -> pd.DataFrame:
    """The claims table of a chapter (:func:`mtllib.analysis.stats.claims_table`), glued for the page's text
    and the claims ledger: ``claims`` (the table), ``n_claims``, ``n_hold``, ``n_not`` and ``n_inconclusive``
    (as text). With no ``rows``, a one-line table saying ``nothing`` (why no claim could be judged) and an em
    dash for every count. ``glue``: :func:`myst_nb.glue` (the default) or a stand-in taking ``(key, value)``."""
    from mtllib.analysis import stats

    glue = glue_function(glue)

    if rows:
        claims = stats.claims_table(rows)
        counts = stats.verdict_counts(claims)
        values = {"n_claims": str(len(claims)), "n_hold": str(counts[stats.HOLDS]), "n_not": str(counts[stats.DOES_NOT_HOLD]),
                  "n_inconclusive": str(counts[stats.INCONCLUSIVE])}
    else:
        claims = pd.DataFrame({"verdict": [f"no claim can be judged: {nothing}"]}, index=pd.Index([DASH], name="claim"))
        values = dict.fromkeys(("n_claims", "n_hold", "n_not", "n_inconclusive"), DASH)
    for key, value in values.items():
        glue(key, value)
    glue("claims", claims)
    return claims

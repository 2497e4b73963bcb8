"""Page tables: mean [95% CI] cells per group, an em dash where there is nothing to show."""

import math

import numpy as np
import pandas as pd
import pytest

from mtllib.book.tables import DASH, ci_cell, ci_table, mean_sd


def test_ci_cell_by_hand():
    half = 4.302653 * 1.0 / math.sqrt(3)  # t(0.975, df=2) * sd / sqrt(n) for 1, 2, 3
    assert ci_cell([1.0, 2.0, 3.0]) == f"2.0 [{2 - half:.1f}, {2 + half:.1f}]"
    assert ci_cell([4.25]) == "4.2" and ci_cell([4.25], digits=2) == "4.25"
    assert ci_cell([]) == DASH and ci_cell([np.nan, np.nan]) == DASH


def test_ci_table_groups_in_order_of_appearance():
    rows = pd.DataFrame({"A": ["y", "y", "x"], "B": ["z", "z", "z"], "D": [1.0, 3.0, 5.0], "E": [0.0, 0.0, np.nan]})
    table = ci_table(rows, ["A", "B"], ["D", "E"])
    assert list(table.index) == [("y", "z"), ("x", "z")]
    assert table.loc[("x", "z"), "D"] == "5.0" and table.loc[("x", "z"), "E"] == DASH
    assert table.loc[("y", "z"), "D"].startswith("2.0 [")
    with pytest.raises(KeyError, match="no column"):
        ci_table(rows, "A", ["F"])


def test_glue_claims_glues_the_table_and_its_counts():
    from mtllib.analysis import stats
    from mtllib.book.tables import glue_claims

    glued = {}
    rows = [stats.claim_row("a > 0", [4.0, 5.0, 6.0], 5.0), stats.claim_row("b > 0", [-1.0, 2.0, 3.0], 5.0),
            stats.claim_row("c > 0", [-1.0, 0.0, 1.0], 5.0)]
    claims = glue_claims(rows, "unused", glue=glued.__setitem__)
    assert list(claims.index) == ["a > 0", "b > 0", "c > 0"] and glued["claims"] is claims
    assert {k: glued[k] for k in ("n_claims", "n_hold", "n_not", "n_inconclusive")} == {
        "n_claims": "3", "n_hold": "1", "n_not": "1", "n_inconclusive": "1"}
    glued.clear()
    empty = glue_claims([], "no task was learned", glue=glued.__setitem__)
    assert empty.verdict.tolist() == ["no claim can be judged: no task was learned"]
    assert glued["n_claims"] == DASH and glued["n_hold"] == DASH and glued["claims"] is empty


def test_mean_sd_cells_as_the_paper_prints_them():
    mean = pd.DataFrame({"a": [80.844, np.nan], "b": [1.25, 7.0]}, index=["x", "y"])
    sd = pd.DataFrame({"a": [0.71, 0.2], "b": [np.nan, 0.04]}, index=["x", "y"])
    table = mean_sd(mean, sd)
    assert table.loc["x", "a"] == "80.8 (0.7)" and table.loc["y", "a"] == DASH
    assert table.loc["x", "b"] == "1.2" and table.loc["y", "b"] == "7.0 (0.0)"  # one seed: the mean alone
    assert mean_sd(mean, sd, digits=2).loc["x", "a"] == "80.84 (0.71)"
    with pytest.raises(ValueError, match="same rows and columns"):
        mean_sd(mean, sd.rename(index={"y": "z"}))

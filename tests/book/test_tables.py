"""Page tables: mean [95% CI] cells per group, an em dash where there is nothing to show."""

import math

import numpy as np
import pandas as pd
import pytest

from mtllib.book.tables import DASH, ci_cell, ci_table


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

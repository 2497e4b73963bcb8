"""IAP: Eq. 5-7 checked against the paper's own tables, the dissociation reading, overlap and layers."""

import numpy as np
import pandas as pd
import pytest
import torch

from mtllib import iap

TASKS = ["MNLI", "QQP", "QNLI", "AG", "SST-2"]
# Table 3 (BERT-base, alpha = 30%): rows = task whose top heads are pruned, columns = evaluated task
TABLE3 = pd.DataFrame(
    [[58.23, 71.52, 61.39, 91.99, 85.32],
     [62.54, 69.43, 60.80, 91.54, 85.13],
     [59.29, 70.96, 57.50, 91.88, 86.35],
     [65.88, 76.28, 69.35, 80.01, 85.09],
     [69.50, 77.40, 73.96, 86.51, 82.45]], index=TASKS, columns=TASKS)
TABLE3_BASE = pd.Series([83.91, 87.64, 90.26, 94.50, 92.05], index=TASKS)
TABLE3_D = pd.Series([7.28, 5.26, 11.07, 9.84, 3.28], index=TASKS)
# Table 10: D_A for evaluated task A (column) with task B's heads pruned (row)
TABLE10 = pd.DataFrame(
    [[np.nan, 2.385, 4.321, 12.671, 3.115],
     [5.161, np.nan, 3.657, 12.198, 2.907],
     [1.275, 1.746, np.nan, 12.555, 4.236],
     [9.169, 7.819, 13.135, np.nan, 2.865],
     [13.496, 9.091, 18.246, 6.874, np.nan]], index=TASKS, columns=TASKS)
# Table 4: A, B, base A, A-pruned on A, B-pruned on A, base B, A-pruned on B, B-pruned on B, D_A, D_B, D
TABLE4 = [
    ("AG", "QNLI", 94.13, 85.94, 92.44, 91.13, 65.04, 52.95, 6.905, 13.270, 10.088),
    ("AG-Pair", "QNLI", 94.46, 56.17, 64.52, 90.72, 64.85, 53.66, 8.842, 12.337, 10.590),
    ("AG", "SST-2", 94.29, 89.51, 92.32, 92.47, 89.76, 86.01, 2.982, 4.051, 3.517),
    ("AG-Pair", "SST-2", 94.68, 67.65, 71.80, 92.66, 89.33, 85.78, 4.387, 3.837, 4.112),
]


@pytest.mark.parametrize("row", TABLE4, ids=[f"{r[0]}+{r[1]}" for r in TABLE4])
def test_table_4_rows_give_back_their_dissociation_scores(row):
    a, b, base_a, a_on_a, b_on_a, base_b, a_on_b, b_on_b, d_a, d_b, d = row
    perf = pd.DataFrame({a: [a_on_a, b_on_a], b: [a_on_b, b_on_b]}, index=[a, b])
    scores = iap.dissociation(perf, {a: base_a, b: base_b})
    # the table's inputs are rounded to 0.01 points, so its scores are reproduced to about 0.005
    assert scores[a] == pytest.approx(d_a, abs=0.006) and scores[b] == pytest.approx(d_b, abs=0.006)
    assert iap.average_dissociation(perf, {a: base_a, b: base_b}) == pytest.approx(d, abs=0.006)


def test_eq_6_by_hand():
    # D_A = RP_A(H_B) - RP_A(H_A) = (92.44 - 85.94) / 94.13
    perf = pd.DataFrame({"A": [85.94, 92.44], "B": [65.04, 52.95]}, index=["A", "B"])
    assert iap.dissociation(perf, {"A": 94.13, "B": 91.13})["A"] == pytest.approx(100 * 6.50 / 94.13)


def test_table_10_agrees_with_table_3():
    ours = iap.pairwise_dissociation(TABLE3, TABLE3_BASE)
    diff = (ours - TABLE10).abs()
    # all cells within 0.07 points; all but the MNLI column within what rounding Table 3 to 0.01 allows
    assert diff.max().max() < 0.07
    assert diff.drop(columns="MNLI").max().max() < 0.012  # two cells off by 0.005 each, over a base near 90


def test_table_3_d_row_has_qnli_and_ag_swapped():
    """Discrepancy in the paper: Eq. 7 on Table 3 gives QNLI 9.83 and AG 11.08; the table prints 11.07 and
    9.84. The means of Table 10's columns (9.84 and 11.07) side with our values."""
    ours = iap.dissociation(TABLE3, TABLE3_BASE)
    assert ours["QNLI"] == pytest.approx(TABLE3_D["AG"], abs=0.01)
    assert ours["AG"] == pytest.approx(TABLE3_D["QNLI"], abs=0.01)
    assert TABLE10.mean(axis=0)["QNLI"] == pytest.approx(ours["QNLI"], abs=0.01)
    for task in ("QQP", "SST-2"):
        assert ours[task] == pytest.approx(TABLE3_D[task], abs=0.006)
    assert ours["MNLI"] == pytest.approx(TABLE3_D["MNLI"], abs=0.05)


@pytest.mark.parametrize("d_a, d_b, expected", [
    (6.9, 13.3, "double (distinct)"), (3.0, 4.1, "double"), (12.0, -1.0, "single"), (-2.0, 15.0, "single"),
    (5.0, -1.0, "none"), (-1.0, -2.0, "none"), (0.0, 20.0, "none"),
])
def test_classify_follows_section_4_1(d_a, d_b, expected):
    assert iap.classify(d_a, d_b) == expected


def test_overlap_and_heads_per_layer():
    a = torch.tensor([[True, True, False], [False, True, False]])
    b = torch.tensor([[True, False, False], [False, True, True]])
    table = iap.overlap({"a": a, "b": b})
    assert table.loc["b", "a"] == pytest.approx(200 / 3)  # 2 of a's 3 heads are b's too
    assert np.isnan(table.loc["a", "a"])
    # Table 11's 81.40 for BERT-base is 35 shared heads of round(0.3 * 144) = 43
    assert round(100 * 35 / 43, 2) == 81.40
    assert iap.heads_per_layer({"a": a, "b": b}).to_dict() == {"a": {1: 2, 2: 1}, "b": {1: 1, 2: 2}}


def test_bad_tables_are_rejected():
    perf = pd.DataFrame({"A": [1.0], "B": [2.0]}, index=["A"])
    with pytest.raises(ValueError, match=r"missing \['B'\]"):
        iap.dissociation(perf, {"A": 1.0, "B": 1.0})
    full = pd.DataFrame({"A": [1.0, 1.0], "B": [1.0, 1.0]}, index=["A", "B"])
    with pytest.raises(ValueError, match=r"no unpruned performance for \['B'\]"):
        iap.dissociation(full, {"A": 1.0})
    with pytest.raises(ValueError, match="at least two tasks"):
        iap.dissociation(pd.DataFrame({"A": [1.0]}, index=["A"]), {"A": 1.0})

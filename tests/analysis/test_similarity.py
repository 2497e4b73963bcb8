"""Task similarity (Appendix D): DSE, CRA, AHP on constructed representations and losses, pair values,
correlation, and the single-task / transfer pipeline on a tiny model."""

import numpy as np
import pandas as pd
import pytest
from scipy.spatial.distance import squareform

from mtllib.analysis import similarity as sim


def test_dse_is_mean_cosine_per_sentence():
    a = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0]])
    b = np.array([[1.0, 1.0], [0.0, -1.0], [1.0, 1.0]])
    # cosines by hand: 1/sqrt(2), -1, 1
    table = sim.dse({"a": a, "b": b, "a2": 5 * a})
    assert table.loc["a", "b"] == pytest.approx((1 / np.sqrt(2) - 1 + 1) / 3)
    assert table.loc["a", "a2"] == pytest.approx(1.0)  # scale does not matter
    assert table.loc["b", "a"] == table.loc["a", "b"]


def test_rdm_is_one_minus_pearson_between_sentences():
    rep = np.array([[1.0, 2.0, 3.0], [2.0, 4.0, 6.5], [3.0, 1.0, 0.0], [0.0, 1.0, 5.0]])
    square = squareform(sim.rdm(rep))
    for i in range(4):
        for j in range(4):
            assert square[i, j] == pytest.approx(1 - np.corrcoef(rep[i], rep[j])[0, 1], abs=1e-12)


def test_cra_sees_geometry_not_coordinates():
    rng = np.random.default_rng(0)
    base = rng.normal(size=(30, 8))
    # scaling and shifting every coordinate leaves the correlation between sentences, hence the RDM, as it is
    reps = {"m": base, "m_scaled": 3 * base + 1, "other": rng.normal(size=(30, 8))}
    table = sim.cra(reps)
    assert table.loc["m", "m_scaled"] == pytest.approx(1.0)
    assert abs(table.loc["m", "other"]) < 0.3
    assert table.loc["other", "m"] == table.loc["m", "other"]


def test_ahp_ranks_a_source_that_wins_every_example_first():
    rng = np.random.default_rng(0)
    good = rng.uniform(0, 1, 200)
    losses = pd.DataFrame({"good": good, "mid": good + 0.1, "bad": good + 1.0})
    aff = sim.ahp_affinity(losses)
    assert aff.sum() == pytest.approx(1.0)
    assert aff["good"] > aff["mid"] > aff["bad"]
    # identical sources split the affinity evenly (every comparison a tie)
    even = sim.ahp_affinity(pd.DataFrame({"x": good, "y": good, "z": good}))
    assert np.allclose(even, 1 / 3)


def test_ahp_win_ratio_matrix_by_hand():
    # two sources: x beats y on 3 of 4 examples -> W = [[.5, .75], [.25, .5]], W' = [[1, 3], [1/3, 1]],
    # principal eigenvector (3, 1) / 4
    losses = pd.DataFrame({"x": [0.1, 0.2, 0.3, 0.9], "y": [0.5, 0.5, 0.5, 0.5]})
    assert sim.ahp_affinity(losses).tolist() == pytest.approx([0.75, 0.25])


def test_ahp_table_has_no_self_transfer_and_keeps_the_baseline_out_of_the_rows():
    # target a: source b beats the pretrained baseline on 3 of 4 examples -> affinities (0.75, 0.25);
    # target b: source a loses every example -> a's affinity is the clipped minimum share
    losses = {"a": pd.DataFrame({"b": [0.1, 0.2, 0.3, 0.9], "pretrained": [0.5, 0.5, 0.5, 0.5]}),
              "b": pd.DataFrame({"a": [0.9, 0.8, 0.7, 0.6], "pretrained": [0.1, 0.1, 0.1, 0.1]})}
    table = sim.ahp(losses)
    assert list(table.index) == ["a", "b"] and list(table.columns) == ["a", "b"]
    assert np.isnan(table.loc["a", "a"]) and np.isnan(table.loc["b", "b"])
    assert table.loc["b", "a"] == pytest.approx(0.75)
    assert table.loc["a", "b"] == pytest.approx(sim.ahp_affinity(losses["b"])["a"]) and table.loc["a", "b"] < 0.01


def test_pair_values_average_both_directions():
    table = pd.DataFrame([[np.nan, 2.0, 4.0], [6.0, np.nan, 1.0], [0.0, 3.0, np.nan]], index=list("abc"), columns=list("abc"))
    pairs = sim.pair_values(table)
    assert pairs.to_dict() == {"a + b": 4.0, "a + c": 2.0, "b + c": 2.0}


def test_correlate_recovers_a_line_and_a_negative_relation():
    x = pd.Series([0.1, 0.2, 0.3, 0.4, 0.5], index=list("vwxyz"))
    fit = sim.correlate(x, 10 - 4 * x)
    assert fit["slope"] == pytest.approx(-4) and fit["intercept"] == pytest.approx(10)
    assert fit["pearson_r"] == pytest.approx(-1) and fit["spearman_r"] == pytest.approx(-1)
    assert fit["n"] == 5
    with pytest.raises(ValueError, match="at least 3"):
        sim.correlate(x.iloc[:2], x.iloc[:2])


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="at least two"):
        sim.dse({"a": np.ones((3, 2))})
    with pytest.raises(ValueError, match="same shape"):
        sim.cra({"a": np.ones((3, 2)), "b": np.ones((4, 2))})
    with pytest.raises(ValueError, match="NaN"):
        sim.ahp_affinity(pd.DataFrame({"a": [np.nan, 1.0], "b": [1.0, 2.0]}))

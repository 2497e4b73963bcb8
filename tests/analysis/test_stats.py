"""Confidence intervals, the three-valued verdict and the seeds a claim would need."""

import math

import numpy as np
import pytest

from mtllib.analysis import stats as st


def test_t_interval_by_hand():
    ci = st.t_interval([1.0, 2.0, 3.0])  # mean 2, sd 1, t(0.975, df=2) = 4.3027
    assert ci.mean == 2 and ci.n == 3
    assert ci.half_width == pytest.approx(4.302653 / math.sqrt(3), rel=1e-5)
    assert str(ci) == "2.00 [-0.48, 4.48]"


def test_one_seed_gives_an_unbounded_interval_and_no_verdict_of_holding():
    ci = st.t_interval([5.0])
    assert math.isinf(ci.low) and math.isinf(ci.high) and str(ci) == "5.00"
    assert st.verdict(ci, 3.0) == st.INCONCLUSIVE


@pytest.mark.parametrize("values, paper, expected", [
    ([4.0, 5.0, 6.0], 5.0, st.HOLDS),             # excludes 0 on the paper's side
    ([-4.0, -5.0, -6.0], 5.0, st.DOES_NOT_HOLD),  # excludes the paper's value, wrong side
    ([-0.1, 0.0, 0.1], 5.0, st.DOES_NOT_HOLD),    # tight around no effect
    ([-6.0, 2.0, 10.0], 5.0, st.INCONCLUSIVE),    # wide: contains both 0 and 5
    ([-4.0, -5.0, -6.0], -5.0, st.HOLDS),         # a claimed decrease
])
def test_verdict_rule(values, paper, expected):
    assert st.verdict(st.t_interval(values), paper) == expected


def test_verdict_needs_a_paper_effect():
    with pytest.raises(ValueError, match="non-zero"):
        st.verdict(st.t_interval([1.0, 2.0]), 0.0)


def test_seeds_needed_brings_the_half_width_to_half_the_effect():
    values = [-6.0, 2.0, 10.0]  # sd 8
    n = st.seeds_needed(values, 5.0)
    half = lambda k: st.stats.t.ppf(0.975, k - 1) * 8 / math.sqrt(k)
    assert half(n) <= 2.5 < half(n - 1)
    assert st.seeds_needed([3.0], 5.0) is None


def test_bootstrap_interval_of_accuracy_contains_the_mean_and_shrinks_with_n():
    rng = np.random.default_rng(0)
    small = st.bootstrap_interval(100.0 * (rng.random(200) < 0.7))
    large = st.bootstrap_interval(100.0 * (rng.random(2000) < 0.7))
    assert small.low < small.mean < small.high and large.half_width < small.half_width
    assert 55 < small.low and small.high < 85
    constant = st.bootstrap_interval(np.zeros(50))
    assert constant.low == constant.high == 0


def test_bad_values_are_refused():
    with pytest.raises(ValueError, match="no values"):
        st.t_interval([])
    with pytest.raises(ValueError, match="finite"):
        st.t_interval([1.0, float("nan")])


def test_counts_are_integers():
    assert st.format_count(3.0, 10) == "3/10"


def test_equivalence_claim_reads_the_interval_against_the_margin():
    assert st.equivalence_row("same", [0.5, -0.5, 0.2, -0.1, 0.0], margin=2)["verdict"] == st.HOLDS
    assert st.equivalence_row("same", [8.0, 9.0, 10.0], margin=2)["verdict"] == st.DOES_NOT_HOLD
    row = st.equivalence_row("same", [-3.0, 1.0, 4.0], margin=2)
    assert row["verdict"] == st.INCONCLUSIVE and row["seeds needed"] > 3
    with pytest.raises(ValueError, match="margin"):
        st.equivalence_row("same", [1.0, 2.0], margin=0)


def test_correlation_interval_is_fisher_z_and_whole_below_four_points():
    x, y = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0], [6.0, 5.5, 4.0, 3.0, 2.5, 0.0]
    ci = st.correlation_interval(x, y)
    r = np.corrcoef(x, y)[0, 1]
    half = 1.959964 / math.sqrt(len(x) - 3)  # Fisher z by hand
    assert ci.mean == pytest.approx(r)
    assert (ci.low, ci.high) == pytest.approx((math.tanh(math.atanh(r) - half), math.tanh(math.atanh(r) + half)), rel=1e-5)
    three = st.correlation_interval([1.0, 2.0, 3.0], [3.0, 2.0, 1.5])
    assert (three.low, three.high) == (-1.0, 1.0) and three.n == 3
    assert st.correlation_row("neg", x, y)["verdict"] == st.HOLDS
    assert st.correlation_row("neg", x, y[::-1])["verdict"] == st.DOES_NOT_HOLD
    row = st.correlation_row("neg", [1.0, 2.0, 3.0], [3.0, 1.0, 2.5])  # r = -0.24
    assert row["verdict"] == st.INCONCLUSIVE and row["pairs"] == 3
    n = row["pairs needed"]  # a correlation of this size excludes 0 at n points, not at n - 1
    z = 1.959964
    assert math.atanh(abs(row["mean"])) > z / math.sqrt(n - 3) and math.atanh(abs(row["mean"])) <= z / math.sqrt(n - 1 - 3)


def test_claims_table_shows_counts_as_integers_and_dashes():
    rows = [st.claim_row("a > 0", [4.0, 5.0, 6.0], 5.0), st.claim_row("b > 0", [-1.0, 2.0, 3.0], 5.0)]
    table = st.claims_table(rows)
    assert list(table.index) == ["a > 0", "b > 0"]
    assert table.loc["a > 0", "seeds needed"] == "\u2014" and table.loc["b > 0", "seeds needed"].isdigit()
    assert table.loc["a > 0", "paper"] == "5.00" and "mean" not in table and table.attrs["raw"].loc["a > 0", "mean"] == 5.0
    assert st.verdict_counts(table) == {st.HOLDS: 1, st.DOES_NOT_HOLD: 0, st.INCONCLUSIVE: 1}


def test_format_ci_shows_a_dash_for_no_value_and_no_interval_for_one_value():
    assert st.format_ci(st.Interval(float("nan"), -1.0, 1.0, 2, "fisher-z")) == st.DASH == "\u2014"
    assert st.format_ci(st.t_interval([3.0])) == "3.00"
    assert st.format_ci(st.t_interval([1.0, 3.0]), 1).startswith("2.0 [")


def test_sign_row_judges_a_direction_without_an_effect_size():
    assert st.sign_row("up", [1.0, 1.2, 0.9])["verdict"] == st.HOLDS
    assert st.sign_row("up", [-1.0, -1.2, -0.9])["verdict"] == st.DOES_NOT_HOLD
    row = st.sign_row("up", [-1.0, 2.0, 0.5])
    assert row["verdict"] == st.INCONCLUSIVE and row["seeds needed"] > 3 and row["paper"] == "positive"
    assert st.sign_row("down", [-1.0, -1.2, -0.9], direction=-1)["verdict"] == st.HOLDS
    with pytest.raises(ValueError, match="direction"):
        st.sign_row("x", [1.0, 2.0], direction=0)


def test_no_gain_holds_for_no_gain_or_a_loss_and_fails_for_a_gain_beyond_the_margin():
    assert st.no_gain_row("c", [-0.1, 0.0, 0.1], margin=1)["verdict"] == st.HOLDS
    assert st.no_gain_row("c", [-5.1, -5.0, -4.9], margin=1)["verdict"] == st.HOLDS  # worse is no gain
    row = st.no_gain_row("c", [2.9, 3.0, 3.1], margin=1)  # t(2) interval: 3 +- 0.25
    assert row["verdict"] == st.DOES_NOT_HOLD and row["seeds needed"] is None and row["rule"].endswith("at most +1")
    wide = st.no_gain_row("c", [-2.0, 0.0, 4.0], margin=1)
    assert wide["verdict"] == st.INCONCLUSIVE and wide["seeds needed"] > 3


def test_variance_ratio_interval_and_verdicts():
    row = st.variance_ratio_row("c", [0.0, 2.0], [0.0, 1.0])  # variances 2 and 0.5: ratio 4
    # F(1, 1): its 97.5% quantile is 647.79 (tables), its 2.5% quantile the reciprocal
    assert row["mean"] == 4 and row["low"] == pytest.approx(4 / 647.79, rel=1e-4) and row["high"] == pytest.approx(4 * 647.79, rel=1e-4)
    # F(9, 9) at 97.5% is 4.03 > 4 and F(10, 10) is 3.72 < 4: eleven seeds per side would exclude 1
    assert row["verdict"] == st.INCONCLUSIVE and row["seeds needed"] == 11
    wide, narrow = [-10.0, 10.0] * 10, [-1.0, 1.0] * 10  # variances 105.3 and 1.05: ratio 100, F(19, 19) at 97.5% is 2.53
    assert st.variance_ratio_row("c", wide, narrow)["verdict"] == st.HOLDS
    assert st.variance_ratio_row("c", narrow, wide)["verdict"] == st.DOES_NOT_HOLD
    assert st.variance_ratio_row("c", narrow, wide, direction=-1)["verdict"] == st.HOLDS
    with pytest.raises(ValueError, match="at least two"):
        st.variance_ratio_row("c", [1.0], [1.0, 2.0])

"""Properties of Eq. 5-7 and of head selection (hypothesis): invariances, signs under swapping, exact counts."""

import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings, strategies as st

from mtllib.analysis.dissociation import dissociation, pairwise_dissociation
from mtllib.analysis.importance import num_pruned, select_heads

score = st.floats(5.0, 100.0, allow_nan=False)


def _table(values, n):
    names = [f"t{i}" for i in range(n)]
    perf = pd.DataFrame(np.asarray(values[: n * n]).reshape(n, n), index=names, columns=names)
    base = pd.Series(values[n * n: n * n + n], index=names)
    return perf, base


@given(st.integers(2, 5).flatmap(lambda n: st.tuples(st.just(n), st.lists(score, min_size=n * n + n, max_size=n * n + n))),
       st.floats(0.1, 10.0))
@settings(max_examples=80, deadline=None)
def test_scaling_one_task_s_scores_leaves_every_d_unchanged(case, factor):
    n, values = case
    perf, base = _table(values, n)
    scaled_perf, scaled_base = perf.copy(), base.copy()
    scaled_perf["t0"] *= factor  # task t0 measured in other units: RP is a ratio (Eq. 5)
    scaled_base["t0"] *= factor
    pd.testing.assert_series_equal(dissociation(perf, base), dissociation(scaled_perf, scaled_base), rtol=1e-9)


@given(st.lists(score, min_size=6, max_size=6))
@settings(max_examples=80, deadline=None)
def test_dual_task_scores_swap_with_the_tasks(values):
    perf, base = _table(values, 2)
    d = dissociation(perf, base)
    swapped = dissociation(perf.loc[["t1", "t0"], ["t1", "t0"]], base[["t1", "t0"]])
    assert swapped["t0"] == pytest.approx(d["t0"]) and swapped["t1"] == pytest.approx(d["t1"])
    # Eq. 6 by hand, and Eq. 7 with n = 2 is Eq. 6
    assert d["t0"] == pytest.approx(100 * (perf.loc["t1", "t0"] - perf.loc["t0", "t0"]) / base["t0"])
    pair = pairwise_dissociation(perf, base)
    assert pair.loc["t1", "t0"] == pytest.approx(d["t0"])


@given(st.integers(2, 5).flatmap(lambda n: st.tuples(st.just(n), st.lists(score, min_size=n * n + n, max_size=n * n + n))))
@settings(max_examples=60, deadline=None)
def test_eq7_is_the_mean_of_the_pairwise_scores(case):
    n, values = case
    perf, base = _table(values, n)
    d, pair = dissociation(perf, base), pairwise_dissociation(perf, base)
    for t in perf.columns:
        others = [s for s in perf.index if s != t]
        assert d[t] == pytest.approx(pair.loc[others, t].mean())


@given(st.integers(1, 4), st.integers(1, 6), st.floats(0.01, 1.0), st.integers(0, 10_000))
@settings(max_examples=80, deadline=None)
def test_head_selection_counts_and_order(layers, heads, alpha, seed):
    importance = torch.from_numpy(np.random.default_rng(seed).random((layers, heads))).float()
    if alpha * layers * heads < 0.5:  # rounds to no head: refused, never an empty mask
        with pytest.raises(ValueError, match="selects no head"):
            select_heads(importance, alpha, "top")
        return
    k = num_pruned(alpha, layers * heads)
    assert k == int(np.floor(alpha * layers * heads + 0.5))  # round half up
    top, bottom = select_heads(importance, alpha, "top"), select_heads(importance, alpha, "bottom")
    rand = select_heads(importance, alpha, "random", seed=seed)
    assert int(top.sum()) == int(bottom.sum()) == int(rand.sum()) == k
    flat, mask = importance.flatten(), top.flatten()
    if 0 < k < flat.numel():
        assert flat[mask].min() >= flat[~mask].max()
        assert flat[bottom.flatten()].max() <= flat[~bottom.flatten()].min()
    assert torch.equal(rand, select_heads(importance, alpha, "random", seed=seed))  # seeded

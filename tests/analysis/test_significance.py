"""The paired bootstrap test (Dror et al., 2018) against p-values worked out by hand on two pairs, where the
bootstrap distribution can be enumerated."""

import numpy as np
import pytest

from mtllib import checks
from mtllib.analysis.significance import paired_bootstrap


@pytest.mark.parametrize("a, b, p", [
    # differences (-1, 3): observed 1; resampled means -1, 1, 3 with probabilities 1/4, 1/2, 1/4;
    # p = P(d* - 1 >= 1) = P(d* = 3) = 1/4
    ([0.0, 5.0], [1.0, 2.0], 0.25),
    # differences (-1, 1): observed 0; p = P(d* >= 0) = 3/4
    ([1.0, 2.0], [2.0, 1.0], 0.75),
    # differences (1, 3): observed 2; d* - 2 >= 2 never happens, so p is the floor 1 / (B + 1)
    ([2.0, 5.0], [1.0, 2.0], 0.0),
])
def test_p_values_enumerated_by_hand(a, b, p):
    test = paired_bootstrap(a, b, n_resamples=40_000, seed=1)
    assert test.difference == pytest.approx(np.mean(np.subtract(a, b)))
    assert test.p_value == pytest.approx(p, abs=0.01)
    assert test.p_value >= 1 / (40_000 + 1)
    assert test.significant == (test.p_value < 0.05)


def test_a_clear_gain_is_significant_and_a_loss_is_not():
    rng = np.random.default_rng(0)
    b = rng.normal(70, 3, size=30)
    gain = paired_bootstrap(b + 2 + rng.normal(0, 1, size=30), b)
    loss = paired_bootstrap(b - 2 + rng.normal(0, 1, size=30), b)
    assert gain.significant and gain.p_value < 0.001
    assert not loss.significant and loss.p_value > 0.5
    assert gain.n == 30 and gain.resamples == 10_000
    noisy = b + rng.normal(0, 3, size=30)
    assert paired_bootstrap(noisy, b, seed=3) == paired_bootstrap(noisy, b, seed=3)  # seeded: the same p


@pytest.mark.parametrize("a, b, kwargs, match", [
    ([1.0, 2.0], [1.0], {}, "same length"),
    ([1.0], [1.0], {}, "same length >= 2"),
    ([1.0, float("nan")], [1.0, 2.0], {}, "NaN"),
    ([1.0, 2.0], [1.0, 2.0], {"n_resamples": 10}, "n_resamples"),
    ([1.0, 2.0], [1.0, 2.0], {"level": 0.0}, "level"),
])
def test_bad_input(a, b, kwargs, match):
    with pytest.raises(checks.BadInput, match=match):
        paired_bootstrap(a, b, **kwargs)

"""Significance tests for paired comparisons: the paired bootstrap test that the main paper's Table 6 uses
("statistically significant improvements of 5% level", after Dror et al., 2018, "The Hitchhiker's Guide to
Testing Statistical Significance in Natural Language Processing").

Two systems are scored on the same units (few-shot seeds with the same k-shot subset, or test examples), so
their scores are paired. The null hypothesis is that system A is not better than B. The test resamples the
pairs with replacement and asks how often the resampled mean difference, centred on the observed one, is at
least the observed difference (Efron and Tibshirani, 1993, Sec. 16.4; the form Berg-Kirkpatrick et al., 2012,
and Dror et al. describe):

    d = mean(a - b);   p = (1 + #{b : d*_b - d >= d}) / (B + 1).

The ``+1`` counts the observed sample among the resamples, so ``p`` is never 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mtllib import checks

ALPHA = 0.05  #: the paper's level


@dataclass(frozen=True)
class PairedTest:
    """The observed mean difference ``a - b``, the one-sided p-value for "a is better than b", the number of
    pairs and resamples, and whether ``p < level``."""

    difference: float
    p_value: float
    n: int
    resamples: int
    level: float = ALPHA

    @property
    def significant(self) -> bool:
        return self.p_value < self.level


def paired_bootstrap(a, b, n_resamples: int = 10_000, seed: int = 0, level: float = ALPHA) -> PairedTest:
    """Paired bootstrap test that ``a`` (scores of system A per unit) is better than ``b`` (same units, same
    order). Raises :class:`mtllib.checks.BadInput` for unpaired or empty input, NaN, or bad settings."""
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    if a.ndim != 1 or a.shape != b.shape or a.size < 2:
        raise checks.BadInput(f"paired_bootstrap needs two 1-d arrays of the same length >= 2, got shapes {a.shape} and {b.shape}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise checks.BadInput("paired_bootstrap: the scores hold NaN or infinite values")
    checks.integer("n_resamples", n_resamples, 100)
    checks.number("level", level, 0, 1, low_open=True, high_open=True)
    diff = a - b
    observed = float(diff.mean())
    rng = np.random.default_rng(seed)
    resampled = diff[rng.integers(0, diff.size, size=(n_resamples, diff.size))].mean(axis=1)
    exceed = int(np.sum(resampled - observed >= observed))
    return PairedTest(observed, (1 + exceed) / (n_resamples + 1), int(diff.size), int(n_resamples), level)

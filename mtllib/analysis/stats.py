"""The statistics every verdict in the book uses: 95% confidence intervals over seeds (t-interval) and over test
examples (bootstrap, scipy), the three-valued verdict rule, and the number of seeds a claim would need.

Verdicts (one rule for every chapter):

- *holds*: the CI excludes no effect (0), on the side the paper reports;
- *does not hold*: otherwise, when the CI excludes the paper's value;
- *inconclusive at this budget*: neither; :func:`seeds_needed` then says how many seeds would bring the CI's
  half-width to half the paper's effect, assuming the spread stays what we measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
HOLDS, DOES_NOT_HOLD, INCONCLUSIVE = "holds", "does not hold", "inconclusive at this budget"


@dataclass(frozen=True)
class Interval:
    """A mean with its two-sided confidence interval (``low``, ``high``) from ``n`` values."""

    mean: float
    low: float
    high: float
    n: int
    method: str

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    def excludes(self, value: float) -> bool:
        return bool(value < self.low or value > self.high)

    def __str__(self) -> str:
        return format_ci(self)


def _values(values, what: str) -> np.ndarray:
    arr = np.asarray(values, dtype=float).ravel()
    if arr.size == 0:
        raise ValueError(f"{what}: no values")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{what}: values must be finite, got {arr[~np.isfinite(arr)][:5].tolist()}")
    return arr


def t_interval(values, confidence: float = CONFIDENCE) -> Interval:
    """Student-t interval of the mean over seeds. One value gives an infinite interval (no spread is known)."""
    arr = _values(values, "t_interval")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    mean = float(arr.mean())
    if arr.size < 2:
        return Interval(mean, -math.inf, math.inf, 1, "t")
    half = float(stats.t.ppf((1 + confidence) / 2, arr.size - 1) * arr.std(ddof=1) / math.sqrt(arr.size))
    return Interval(mean, mean - half, mean + half, int(arr.size), "t")


def bootstrap_interval(values, statistic=np.mean, confidence: float = CONFIDENCE, n_resamples: int = 2000, seed: int = 0) -> Interval:
    """Percentile bootstrap interval (``scipy.stats.bootstrap``) of ``statistic`` over examples, e.g. one
    seed's per-example correctness (0/1, in percent: multiply by 100 first)."""
    arr = _values(values, "bootstrap_interval")
    if arr.size < 2 or np.all(arr == arr[0]):
        value = float(statistic(arr))
        return Interval(value, value, value, int(arr.size), "bootstrap")
    res = stats.bootstrap((arr,), statistic, confidence_level=confidence, n_resamples=n_resamples, method="percentile", random_state=seed)
    return Interval(float(statistic(arr)), float(res.confidence_interval.low), float(res.confidence_interval.high), int(arr.size), "bootstrap")


def verdict(ci: Interval, paper_value: float) -> str:
    """The three-valued verdict of a claim whose effect the paper reports as ``paper_value`` (its sign is the
    claim's direction; the effect "none" is 0)."""
    if not math.isfinite(paper_value) or paper_value == 0:
        raise ValueError(f"the paper's effect must be a finite non-zero number, got {paper_value!r}")
    if (paper_value > 0 and ci.low > 0) or (paper_value < 0 and ci.high < 0):
        return HOLDS
    if ci.excludes(paper_value):
        return DOES_NOT_HOLD
    return INCONCLUSIVE


def seeds_needed(values, paper_value: float, confidence: float = CONFIDENCE) -> int | None:
    """Seeds for a t-interval half-width of at most half the paper's effect, at the spread of ``values``
    (``None`` when the spread is unknown: fewer than two values)."""
    arr = _values(values, "seeds_needed")
    if arr.size < 2:
        return None
    sd = arr.std(ddof=1)
    if sd == 0:
        return int(arr.size)
    target = abs(paper_value) / 2
    n = max(2, int(arr.size))
    while stats.t.ppf((1 + confidence) / 2, n - 1) * sd / math.sqrt(n) > target:
        n += 1
        if n > 100_000:
            break
    return n


def format_ci(ci: Interval, digits: int = 2) -> str:
    """``"12.34 [10.00, 14.68]"``; a single value shows no interval."""
    if ci.n < 2 or not math.isfinite(ci.half_width):
        return f"{ci.mean:.{digits}f}"
    return f"{ci.mean:.{digits}f} [{ci.low:.{digits}f}, {ci.high:.{digits}f}]"


def format_count(k: int, n: int) -> str:
    """``"k/n"`` for counts (never ``10.0``)."""
    return f"{int(k)}/{int(n)}"


def claim_row(claim: str, values, paper_value: float, rule: str = "95% t-interval over seeds") -> dict:
    """One claim judged by :func:`verdict`: the claim in words, the paper's value, ours as mean [CI], the
    rule, the verdict, and (when inconclusive) the seeds that would be needed."""
    values = _values(values, claim)
    ci = t_interval(values)
    v = verdict(ci, paper_value)
    needed = seeds_needed(values, paper_value) if v == INCONCLUSIVE else None
    return {"claim": claim, "paper": paper_value, "ours": format_ci(ci), "mean": ci.mean, "low": ci.low, "high": ci.high,
            "seeds": ci.n, "rule": rule, "verdict": v, "seeds needed": needed}

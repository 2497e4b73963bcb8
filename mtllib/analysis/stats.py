"""The statistics every verdict in the book uses: 95% confidence intervals over seeds (t-interval) and over test
examples (bootstrap, scipy), the three-valued verdict rule, and the number of seeds a claim would need.

Verdicts (one rule for every chapter):

- *holds*: the CI excludes no effect (0), on the side the paper reports;
- *does not hold*: otherwise, when the CI excludes the paper's value;
- *inconclusive at this budget*: neither; :func:`seeds_needed` then says how many seeds would bring the CI's
  half-width to half the paper's effect, assuming the spread stays what we measured.

Two claims of another shape read the same three words: a claim of *no difference*
(:func:`equivalence_row`: holds when the CI lies inside a stated margin, does not hold when it lies outside
it) and a claim about the *sign of a correlation* across task pairs (:func:`correlation_row`, Fisher-z
interval of Pearson's r; with fewer than four pairs the interval is the whole [-1, 1]).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
HOLDS, DOES_NOT_HOLD, INCONCLUSIVE = "holds", "does not hold", "inconclusive at this budget"
#: what a page shows where there is no value (never ``NaN``)
DASH = "\u2014"


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
    """``"12.34 [10.00, 14.68]"``; a single value shows no interval; no value (NaN) shows :data:`DASH`."""
    if not math.isfinite(ci.mean):
        return DASH
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


def sign_row(claim: str, values, direction: int = 1, rule: str = "95% t-interval over seeds") -> dict:
    """A claim whose paper gives a direction but no effect size we can compare with (``direction`` 1: ours
    should be positive): *holds* when the 95% t-interval lies on that side of 0, *does not hold* when it lies
    on the other side, inconclusive otherwise (then ``seeds needed`` for a half-width of half the measured mean)."""
    if direction not in (-1, 1):
        raise ValueError(f"direction is -1 (negative) or 1 (positive), got {direction!r}")
    values = _values(values, claim)
    ci = t_interval(values)
    if (direction > 0 and ci.low > 0) or (direction < 0 and ci.high < 0):
        v = HOLDS
    elif (direction > 0 and ci.high < 0) or (direction < 0 and ci.low > 0):
        v = DOES_NOT_HOLD
    else:
        v = INCONCLUSIVE
    needed = seeds_needed(values, ci.mean) if v == INCONCLUSIVE and ci.mean != 0 and math.isfinite(ci.mean) else None
    return {"claim": claim, "paper": "positive" if direction > 0 else "negative", "ours": format_ci(ci), "mean": ci.mean,
            "low": ci.low, "high": ci.high, "seeds": ci.n, "rule": rule, "verdict": v, "seeds needed": needed}


def equivalence_row(claim: str, values, margin: float, paper_value: float | None = None, rule: str | None = None) -> dict:
    """A claim that an effect is absent (e.g. "the input paradigm does not change D"), judged on the 95%
    t-interval of ``values`` against ``margin`` (the largest difference counted as none, in the values' units):
    *holds* when the interval lies inside ``[-margin, margin]``, *does not hold* when it lies entirely outside,
    inconclusive otherwise (then ``seeds needed`` is the number that would bring the half-width to ``margin / 2``)."""
    values = _values(values, claim)
    if not (math.isfinite(margin) and margin > 0):
        raise ValueError(f"margin must be a finite positive number, got {margin!r}")
    ci = t_interval(values)
    if -margin <= ci.low and ci.high <= margin:
        v = HOLDS
    elif ci.low > margin or ci.high < -margin:
        v = DOES_NOT_HOLD
    else:
        v = INCONCLUSIVE
    needed = seeds_needed(values, margin) if v == INCONCLUSIVE else None
    return {"claim": claim, "paper": paper_value if paper_value is not None else math.nan, "ours": format_ci(ci),
            "mean": ci.mean, "low": ci.low, "high": ci.high, "seeds": ci.n,
            "rule": rule or f"95% t-interval over seeds inside +-{margin:g}", "verdict": v, "seeds needed": needed}


def no_gain_row(claim: str, values, margin: float) -> dict:
    """A claim that a method does not improve on a baseline ("LHUC did not improve on the fully shared model",
    Sec. 5.1), judged on the 95% t-interval over seeds of ``values`` (method minus baseline) against ``margin``
    (the largest gain counted as none): *holds* when the interval's upper end is at most ``margin``, *does not
    hold* when its lower end exceeds it, inconclusive otherwise. A method that does worse satisfies the claim."""
    row = equivalence_row(claim, values, margin)
    row["verdict"] = HOLDS if row["high"] <= margin else DOES_NOT_HOLD if row["low"] > margin else INCONCLUSIVE
    row["rule"] = f"95% t-interval over seeds at most +{margin:g}"
    if row["verdict"] != INCONCLUSIVE:
        row["seeds needed"] = None
    return row


def variance_ratio_row(claim: str, values, reference, direction: int = 1, confidence: float = CONFIDENCE) -> dict:
    """A claim about the spread across seeds ("annealing increased variance across random seeds", Sec. 6):
    the ratio of the sample variances of ``values`` and ``reference`` (one value per seed each) with its
    F-distribution interval, ``ratio / F_{(1+c)/2}(n-1, m-1)`` to ``ratio / F_{(1-c)/2}(n-1, m-1)`` (exact for
    independent normal samples). With ``direction`` 1 the claim *holds* when the interval lies above 1, *does
    not hold* when it lies below, inconclusive otherwise (-1: the other way round)."""
    a, b = (np.asarray(v, dtype=float).ravel() for v in (values, reference))
    if a.size < 2 or b.size < 2 or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError(f"{claim}: need at least two finite values on each side, got {a.size} and {b.size}")
    if direction not in (-1, 1):
        raise ValueError(f"direction is -1 or 1, got {direction!r}")
    va, vb = a.var(ddof=1), b.var(ddof=1)
    ratio = va / vb if vb > 0 else math.inf
    low = ratio / stats.f.ppf((1 + confidence) / 2, a.size - 1, b.size - 1)
    high = ratio / stats.f.ppf((1 - confidence) / 2, a.size - 1, b.size - 1)
    above, below = low > 1, high < 1
    v = HOLDS if (above if direction > 0 else below) else DOES_NOT_HOLD if (below if direction > 0 else above) else INCONCLUSIVE
    needed = None  # seeds per side at which the measured ratio's interval would exclude 1
    if v == INCONCLUSIVE and 0 < ratio < math.inf and ratio != 1:
        far, lo, hi = max(ratio, 1 / ratio), 2, 1_000_000  # the F quantile falls as n grows: bisect
        if stats.f.ppf((1 + confidence) / 2, hi - 1, hi - 1) < far:
            while lo < hi:
                mid = (lo + hi) // 2
                lo, hi = (lo, mid) if stats.f.ppf((1 + confidence) / 2, mid - 1, mid - 1) < far else (mid + 1, hi)
            needed = lo
    return {"claim": claim, "paper": "ratio above 1" if direction > 0 else "ratio below 1", "ours": f"{ratio:.2f} [{low:.2f}, {high:.2f}]",
            "mean": ratio, "low": low, "high": high, "seeds": int(min(a.size, b.size)),
            "rule": f"{confidence:.0%} F-interval of the variance ratio", "verdict": v, "seeds needed": needed}


def correlation_interval(x, y, confidence: float = CONFIDENCE) -> Interval:
    """Pearson's r with its Fisher-z interval (``scipy.stats.pearsonr``); ``n`` is the number of points. Fewer
    than four points (or no spread) give the whole interval [-1, 1]."""
    x, y = _values(x, "correlation x"), _values(y, "correlation y")
    if x.size != y.size:
        raise ValueError(f"correlation needs as many x as y values, got {x.size} and {y.size}")
    if x.size < 3 or np.all(x == x[0]) or np.all(y == y[0]):
        return Interval(math.nan, -1.0, 1.0, int(x.size), "fisher-z")
    res = stats.pearsonr(x, y)
    if x.size < 4:
        return Interval(float(res.statistic), -1.0, 1.0, int(x.size), "fisher-z")
    ci = res.confidence_interval(confidence_level=confidence)
    return Interval(float(res.statistic), float(ci.low), float(ci.high), int(x.size), "fisher-z")


def points_needed(r: float, confidence: float = CONFIDENCE) -> int | None:
    """The number of points at which a correlation of ``r`` would have a Fisher-z interval excluding 0."""
    if not math.isfinite(r) or r == 0 or abs(r) >= 1:
        return None
    z = stats.norm.ppf((1 + confidence) / 2)
    return int(math.floor((z / math.atanh(abs(r))) ** 2 + 3)) + 1


def correlation_row(claim: str, x, y, direction: int = -1, rule: str = "95% Fisher-z interval of Pearson's r over task pairs") -> dict:
    """A claim about the sign of a correlation (``direction`` -1: negative): *holds* when the interval of r
    lies on that side of 0, *does not hold* when it lies on the other side, inconclusive otherwise (then the
    number of pairs a correlation of this size would need)."""
    if direction not in (-1, 1):
        raise ValueError(f"direction is -1 (negative) or 1 (positive), got {direction!r}")
    ci = correlation_interval(x, y)
    if (direction < 0 and ci.high < 0) or (direction > 0 and ci.low > 0):
        v = HOLDS
    elif (direction < 0 and ci.low > 0) or (direction > 0 and ci.high < 0):
        v = DOES_NOT_HOLD
    else:
        v = INCONCLUSIVE
    return {"claim": claim, "paper": "negative" if direction < 0 else "positive", "ours": format_ci(ci), "mean": ci.mean, "low": ci.low,
            "high": ci.high, "pairs": ci.n, "rule": rule, "verdict": v,
            "pairs needed": points_needed(ci.mean) if v == INCONCLUSIVE else None}


def claims_table(rows: list[dict]) -> "pd.DataFrame":
    """The claims of a chapter as the page shows them: one row per claim (index), the paper's value, ours as
    mean [CI], the number of seeds (or pairs), the rule and the verdict; counts of seeds or pairs needed as
    integers, an em dash where none applies. Raw ``mean``/``low``/``high`` are kept in ``.attrs["raw"]``."""
    import pandas as pd

    if not rows:
        raise ValueError("claims_table needs at least one claim row")
    table = pd.DataFrame(rows).set_index("claim")
    raw = table[["mean", "low", "high"]].copy()
    shown = table.drop(columns=["mean", "low", "high"])
    for col in ("seeds needed", "pairs needed", "seeds", "pairs"):
        if col in shown:
            shown[col] = [f"{int(v)}" if pd.notna(v) else DASH for v in shown[col]]
    if "paper" in shown:
        shown["paper"] = [f"{v:.2f}" if isinstance(v, (int, float)) and math.isfinite(v) else (DASH if isinstance(v, float) else v)
                          for v in shown["paper"]]
    shown.attrs["raw"] = raw
    return shown


def verdict_counts(table) -> dict[str, int]:
    """How many claims of a :func:`claims_table` hold, do not hold and are inconclusive."""
    return {v: int((table["verdict"] == v).sum()) for v in (HOLDS, DOES_NOT_HOLD, INCONCLUSIVE)}

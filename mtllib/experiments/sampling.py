"""Task sampling as the variable of an experiment ("BERT and PALs", Sec. 4.1 and 6): the same model trained
under several sampling schedules, and the spread of its scores across seeds.

Sec. 6 of the paper reports that annealed sampling (Sec. 4.1) improved the mean score over proportional
sampling when many parameters were shared, but increased the variance across random seeds.
:func:`run_samplers` trains one model per sampler and seed through the model cache (a sampler and recipe
that another chapter used come from its cache); :func:`variance_ratio_row` judges a claim about the spread.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd

from mtllib.analysis.stats import DOES_NOT_HOLD, HOLDS, INCONCLUSIVE
from mtllib.experiments.adapters import run_variants
from mtllib.modeling.adapters import AdapterConfig
from mtllib.training.samplers import SAMPLERS


def check_samplers(samplers: list[str], epochs: int) -> None:
    """Distinct known sampler names; an annealed schedule needs at least two epochs (with one, Eq. 8's exponent
    stays 1: annealing is proportional sampling)."""
    unknown = [s for s in samplers if s not in SAMPLERS]
    if not samplers or unknown or len(set(samplers)) != len(samplers):
        raise ValueError(f"samplers must be distinct names among {', '.join(SAMPLERS)}; got {samplers!r}")
    if epochs < 2 and "annealed" in samplers:
        raise ValueError("the annealed sampler changes its distribution from epoch to epoch (Eq. 8): with epochs=1 it is "
                         "proportional sampling; give epochs >= 2")


def run_samplers(model_name: str, task_names: list[str], adapter: AdapterConfig, samplers: list[str], seeds: list[int],
                 data: dict, train_config, progress: bool = False) -> pd.DataFrame:
    """Sec. 6 of "BERT and PALs": one model of ``adapter``'s method per sampler and seed, trained as
    :func:`~mtllib.experiments.adapters.run_variants` trains a variant, with ``train_config``'s sampler replaced; the rows of
    ``run_variants`` with the sampler's name as the variant. Every sampler name is checked before any
    training."""
    check_samplers(samplers, train_config.epochs)
    frames = [run_variants(model_name, task_names, {s: adapter}, seeds, data, dataclasses.replace(train_config, sampler=s), progress)
              for s in samplers]
    return pd.concat(frames, ignore_index=True)


def variance_ratio_row(claim: str, values, reference, direction: int = 1, confidence: float = 0.95) -> dict:
    """A claim about the spread across seeds ("annealing increased variance across random seeds", Sec. 6):
    the ratio of the sample variances of ``values`` and ``reference`` (one value per seed each) with its
    F-distribution interval, ``ratio / F_{(1+c)/2}(n-1, m-1)`` to ``ratio / F_{(1-c)/2}(n-1, m-1)`` (exact for
    independent normal samples). With ``direction`` 1 the claim *holds* when the interval lies above 1, *does
    not hold* when it lies below, inconclusive otherwise (-1: the other way round)."""
    from scipy import stats as sps

    a, b = (np.asarray(v, dtype=float).ravel() for v in (values, reference))
    if a.size < 2 or b.size < 2 or not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ValueError(f"{claim}: need at least two finite values on each side, got {a.size} and {b.size}")
    if direction not in (-1, 1):
        raise ValueError(f"direction is -1 or 1, got {direction!r}")
    va, vb = a.var(ddof=1), b.var(ddof=1)
    ratio = va / vb if vb > 0 else math.inf
    low = ratio / sps.f.ppf((1 + confidence) / 2, a.size - 1, b.size - 1)
    high = ratio / sps.f.ppf((1 - confidence) / 2, a.size - 1, b.size - 1)
    above, below = low > 1, high < 1
    v = HOLDS if (above if direction > 0 else below) else DOES_NOT_HOLD if (below if direction > 0 else above) else INCONCLUSIVE
    needed = None  # seeds per side at which the measured ratio's interval would exclude 1
    if v == INCONCLUSIVE and 0 < ratio < math.inf and ratio != 1:
        far, lo, hi = max(ratio, 1 / ratio), 2, 1_000_000  # the F quantile falls as n grows: bisect
        if sps.f.ppf((1 + confidence) / 2, hi - 1, hi - 1) < far:
            while lo < hi:
                mid = (lo + hi) // 2
                lo, hi = (lo, mid) if sps.f.ppf((1 + confidence) / 2, mid - 1, mid - 1) < far else (mid + 1, hi)
            needed = lo
    return {"claim": claim, "paper": "ratio above 1" if direction > 0 else "ratio below 1", "ours": f"{ratio:.2f} [{low:.2f}, {high:.2f}]",
            "mean": ratio, "low": low, "high": high, "seeds": int(min(a.size, b.size)),
            "rule": f"{confidence:.0%} F-interval of the variance ratio", "verdict": v, "seeds needed": needed}

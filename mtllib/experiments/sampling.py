"""Task sampling as the variable of an experiment ("BERT and PALs", Sec. 4.1 and 6): the same model trained
under several sampling schedules, and the spread of its scores across seeds.

Sec. 6 of the paper reports that annealed sampling (Sec. 4.1) improved the mean score over proportional
sampling when many parameters were shared, but increased the variance across random seeds.
:func:`run_samplers` trains one model per sampler and seed through the model cache (a sampler and recipe
that another chapter used come from its cache); :func:`mtllib.analysis.stats.variance_ratio_row` judges a
claim about the spread.
"""

from __future__ import annotations

import dataclasses

import pandas as pd

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

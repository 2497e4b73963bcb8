"""Sec. 6 of "BERT and PALs": one model per sampler and seed; the variance ratio across seeds with its F-interval."""

import dataclasses

import pytest

from mtllib.experiments import adapters as exp
from mtllib.experiments import sampling
from mtllib.training.trainer import TrainConfig

TASKS = ["bbc-topic", "bbc-pair"]  # the tasks of tiny_pair (conftest)
CONFIG = TrainConfig(epochs=2, batch_size=8, lr=5e-3)


def test_one_model_per_sampler_and_seed_and_samplers_checked_before_training(tiny_pair):
    folder, _, data = tiny_pair
    rows = sampling.run_samplers(folder, TASKS, exp.method_config("shared"), ["proportional", "annealed"], [0], data, CONFIG)
    assert list(rows.variant.unique()) == ["proportional", "annealed"] and len(rows) == 2 * len(TASKS)
    # proportional is the shared model that every chapter trains with this recipe: the same cache entry, the same scores
    again = exp.run_variants(folder, TASKS, {"shared": exp.method_config("shared")}, [0], data, CONFIG)
    assert rows[rows.variant == "proportional"].score.tolist() == again.score.tolist()
    for bad in (["proportional", "anealed"], [], ["proportional", "proportional"]):
        with pytest.raises(ValueError, match="samplers must be distinct names"):
            sampling.run_samplers(folder, TASKS, exp.method_config("shared"), bad, [0], data, CONFIG)
    with pytest.raises(ValueError, match="epochs >= 2"):  # before any training
        sampling.run_samplers(folder, TASKS, exp.method_config("shared"), ["proportional", "annealed"], [0], data,
                              dataclasses.replace(CONFIG, epochs=1))


def test_variance_ratio_interval_and_verdicts():
    from mtllib.analysis.stats import DOES_NOT_HOLD, HOLDS, INCONCLUSIVE

    row = sampling.variance_ratio_row("c", [0.0, 2.0], [0.0, 1.0])  # variances 2 and 0.5: ratio 4
    # F(1, 1): its 97.5% quantile is 647.79 (tables), its 2.5% quantile the reciprocal
    assert row["mean"] == 4 and row["low"] == pytest.approx(4 / 647.79, rel=1e-4) and row["high"] == pytest.approx(4 * 647.79, rel=1e-4)
    # F(9, 9) at 97.5% is 4.03 > 4 and F(10, 10) is 3.72 < 4: eleven seeds per side would exclude 1
    assert row["verdict"] == INCONCLUSIVE and row["seeds needed"] == 11
    wide, narrow = [-10.0, 10.0] * 10, [-1.0, 1.0] * 10  # variances 105.3 and 1.05: ratio 100, F(19, 19) at 97.5% is 2.53
    assert sampling.variance_ratio_row("c", wide, narrow)["verdict"] == HOLDS
    assert sampling.variance_ratio_row("c", narrow, wide)["verdict"] == DOES_NOT_HOLD
    assert sampling.variance_ratio_row("c", narrow, wide, direction=-1)["verdict"] == HOLDS
    with pytest.raises(ValueError, match="at least two"):
        sampling.variance_ratio_row("c", [1.0], [1.0, 2.0])

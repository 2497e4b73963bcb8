"""Sec. 6 of "BERT and PALs": one model per sampler and seed (the variance ratio is tested with analysis.stats)."""

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

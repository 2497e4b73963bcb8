"""Table 2 runs on a tiny model: one row per method, seed and task; the shared baseline is the IAP chapters'
multi-task model (same recipe, same cache entry); separate models are single-task; Table 1's layout."""

import dataclasses

import pytest
from transformers import BertConfig

from mtllib.experiments import adapters as exp
from mtllib.experiments import iap
from mtllib.modeling.adapters import AdapterError
from mtllib.training.trainer import TrainConfig

TASKS = ["bbc-topic", "bbc-pair"]
CONFIG = TrainConfig(epochs=1, batch_size=8, lr=5e-3)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    import os

    from mtllib.data.features import load_tokenizer, prepare
    from tiny import save_tiny_bert

    os.environ["MTLLIB_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    tokenizer = load_tokenizer("offline")
    folder = save_tiny_bert(tmp_path_factory.mktemp("tiny-bert"), tokenizer.vocab_size)
    return folder, tokenizer, prepare(TASKS, tokenizer, max_train=24, max_eval=16, max_length=32)


def test_rows_per_method_seed_and_task_and_shared_is_the_iap_model(tiny):
    folder, tokenizer, data = tiny
    sizes = {"pals": {"size": 8, "heads": 4}}
    rows = exp.run_methods(folder, TASKS, ["shared", "pals", "separate"], [0], data, CONFIG, sizes=sizes)
    assert len(rows) == 3 * len(TASKS) and set(rows.method) == {"shared", "pals", "separate"}
    assert rows.score.between(0, 100).all() and rows.learned.dtype == bool
    iap_run = iap.run_experiment(folder, TASKS, 0, train_config=CONFIG, n_random=0, importance_batches=1, data=data, tokenizer=tokenizer,
                                 progress=False)
    shared = rows[rows.method == "shared"].set_index("task")
    for t in TASKS:  # same build, same recipe: the same cached model, so the same unpruned test score
        assert shared.loc[t, "score"] == pytest.approx(iap_run.base[t])
        assert shared.loc[t, "train_seconds"] == pytest.approx(iap_run.train_seconds)
    separate = rows[rows.method == "separate"].set_index("task")
    assert separate.loc["bbc-topic", "train_seconds"] != separate.loc["bbc-pair", "train_seconds"]  # two models
    # four trained models: shared (then reused by the IAP run), PALs, and one per task for separate; the PALs
    # entry holds the adapters' weights
    import torch

    from mtllib.training.cache import cache_root

    states = [torch.load(p / "model.pt", map_location="cpu") for p in cache_root().iterdir()]
    assert len(states) == 4
    assert sum(any(k.startswith("adapters.") for k in s) for s in states) == 1


def test_methods_and_sizes_are_checked_before_training(tiny):
    folder, _, data = tiny
    with pytest.raises(AdapterError, match="unknown adaptation method"):
        exp.run_methods(folder, TASKS, ["shared", "pal"], [0], data, CONFIG)
    with pytest.raises(AdapterError, match="multiple of heads"):
        exp.run_methods(folder, TASKS, ["pals"], [0], data, CONFIG, sizes={"pals": {"size": 10, "heads": 4}})
    with pytest.raises(AdapterError, match=r"not run"):
        exp.run_methods(folder, TASKS, ["shared"], [0], data, CONFIG, sizes={"pals": {"size": 8}})


def test_parameter_table_gives_table_1s_budget():
    table = exp.parameter_table(BertConfig(), ["shared", "low_rank", "pals", "separate"], 8)
    assert table.loc["pals", "d_s"] == 204 and table.loc["low_rank", "d_s"] == 100 and table.loc["shared", "d_s"] == "\u2014"
    assert round(table.loc["pals", "multiplier"], 2) == round(table.loc["low_rank", "multiplier"], 2) == 1.13
    assert table.loc["separate", "multiplier"] == 8 and table.loc["shared", "added per task"] == 0


def test_unknown_size_fields_are_named():
    with pytest.raises(AdapterError, match=r"keys must be among \['size', 'heads'"):
        exp.check_methods(["pals"], {"pals": {"d_s": 8}}, BertConfig())

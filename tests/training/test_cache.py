"""The cache of trained models: a second run of an unchanged recipe trains nothing; any change to what decides
the weights retrains; a corrupt entry is rebuilt, never used."""

import dataclasses

import pandas as pd
import pytest
import torch
from transformers import BertConfig

from mtllib.data.features import load_tokenizer, prepare
from mtllib.modeling.multitask import MultiTaskModel
from mtllib.training import cache, trainer
from mtllib.training.trainer import TrainConfig

NAMES = ["bbc-topic", "tweet-sentiment"]
CONFIG = TrainConfig(epochs=1, batch_size=8, lr=1e-3)


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer("offline")


@pytest.fixture(scope="module")
def data(tokenizer):
    return prepare(NAMES, tokenizer, max_train=24, max_eval=16, max_length=32)


@pytest.fixture(autouse=True)
def empty_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MTLLIB_CACHE", str(tmp_path))
    monkeypatch.setenv("MTLLIB_MODEL_CACHE", "1")


def _model(tokenizer, names=NAMES, seed=0):
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37, max_position_embeddings=64)
    from mtllib.data.tasks import get_task

    return MultiTaskModel.from_config(config, [get_task(n).spec() for n in names])


def _no_training(*args, **kwargs):
    raise AssertionError("trained although the recipe is cached")


def test_an_unchanged_recipe_trains_nothing_the_second_time(tokenizer, data, monkeypatch):
    first = _model(tokenizer)
    result, seconds, hit = cache.train_cached(first, data, CONFIG, progress=False)
    assert not hit and seconds > 0
    monkeypatch.setattr(trainer, "train", _no_training)
    second = _model(tokenizer)
    again, seconds_again, hit = cache.train_cached(second, data, CONFIG, progress=False)
    assert hit and seconds_again == pytest.approx(seconds)
    assert all(torch.equal(a, b) for a, b in zip(first.state_dict().values(), second.state_dict().values()))
    assert again.best_epoch == result.best_epoch and again.history.equals(result.history) and again.log.equals(result.log)


@pytest.mark.parametrize("change", ["lr", "seed", "epochs", "init", "data", "tasks", "training code"])
def test_changing_what_decides_the_weights_retrains(tokenizer, data, monkeypatch, change):
    cache.train_cached(_model(tokenizer), data, CONFIG, progress=False)
    config, model, used = CONFIG, _model(tokenizer), data
    if change in ("lr", "seed", "epochs"):
        config = dataclasses.replace(CONFIG, **{change: {"lr": 2e-3, "seed": 1, "epochs": 2}[change]})
    elif change == "init":
        model = _model(tokenizer, seed=1)
    elif change == "data":
        used = prepare(NAMES, tokenizer, max_train=20, max_eval=16, max_length=32)
    elif change == "tasks":
        model, used = _model(tokenizer, NAMES[:1]), {NAMES[0]: data[NAMES[0]]}
    else:
        monkeypatch.setattr(cache, "source_digest", lambda modules, **kw: "edited trainer")
    calls = []
    original = trainer.train
    monkeypatch.setattr(trainer, "train", lambda *a, **k: calls.append(1) or original(*a, **k))
    _, _, hit = cache.train_cached(model, used, config, progress=False)
    assert not hit and calls == [1]


def test_a_corrupt_entry_is_reported_and_rebuilt(tokenizer, data):
    model = _model(tokenizer)
    key = cache.recipe_key(model, data, CONFIG)
    cache.train_cached(model, data, CONFIG, progress=False)
    weights = cache.cache_dir() / key / "model.pt"
    weights.write_bytes(weights.read_bytes()[:1000])  # truncated, as by a crash or a full disk
    with pytest.raises(cache.CorruptEntry, match="model.pt"):
        cache.load(key)
    messages = []
    fresh = _model(tokenizer)
    _, _, hit = cache.train_cached(fresh, data, CONFIG, progress=False, log=messages.append)
    assert not hit and "rebuilding" in messages[0] and str(weights.parent) in messages[0]
    assert cache.load(key) is not None  # rebuilt and sound again
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), fresh.state_dict().values()))


def test_bad_settings_fail_before_anything_is_written(tokenizer, data):
    config = dataclasses.replace(CONFIG)
    object.__setattr__(config, "batch_size", 0)  # changed after it was made: train_cached checks it again
    with pytest.raises(ValueError, match="batch_size"):
        cache.train_cached(_model(tokenizer), data, config, progress=False)
    assert not cache.cache_dir().exists() or not any(cache.cache_dir().iterdir())


def test_the_cache_can_be_turned_off(tokenizer, data, monkeypatch):
    monkeypatch.setenv("MTLLIB_MODEL_CACHE", "0")
    _, _, hit = cache.train_cached(_model(tokenizer), data, CONFIG, progress=False)
    _, _, hit_again = cache.train_cached(_model(tokenizer), data, CONFIG, progress=False)
    assert not hit and not hit_again and not cache.cache_dir().exists()


def test_a_scored_run_is_kept_as_its_scores_and_not_trained_again(tokenizer, data, monkeypatch, tmp_path):
    """train_and_score: the second call reads the scores (no training, the model stays as built), and they
    equal those of a run without the cache; the entry is a small JSON file, not the weights."""
    one = {"bbc-topic": data["bbc-topic"]}
    scores, epochs, hit = cache.train_and_score(_model(tokenizer), one, CONFIG, "test")
    assert not hit and epochs == CONFIG.epochs and list(scores.index) == ["bbc-topic"]
    entries = list(cache.scores_dir().iterdir())
    assert len(entries) == 1 and entries[0].suffix == ".json" and entries[0].stat().st_size < 2000
    assert not cache.cache_dir().exists()  # no weights kept
    monkeypatch.setattr(trainer, "train", _no_training)
    built = _model(tokenizer)
    before = {k: v.clone() for k, v in built.state_dict().items()}
    again, epochs_again, hit = cache.train_and_score(built, one, CONFIG, "test")
    assert hit and epochs_again == epochs
    pd.testing.assert_frame_equal(again, scores)
    assert all(torch.equal(before[k], v) for k, v in built.state_dict().items())
    monkeypatch.undo()
    monkeypatch.setenv("MTLLIB_CACHE", str(tmp_path))
    monkeypatch.setenv("MTLLIB_MODEL_CACHE", "0")
    plain, _, hit = cache.train_and_score(_model(tokenizer), one, CONFIG, "test")
    assert not hit
    pd.testing.assert_frame_equal(plain, scores)


def test_scores_of_another_split_or_recipe_are_not_reused_and_a_corrupt_entry_is_rebuilt(tokenizer, data):
    one = {"bbc-topic": data["bbc-topic"]}
    cache.train_and_score(_model(tokenizer), one, CONFIG, "test")
    _, _, hit = cache.train_and_score(_model(tokenizer), one, CONFIG, "validation")
    assert not hit
    _, _, hit = cache.train_and_score(_model(tokenizer), one, dataclasses.replace(CONFIG, seed=1), "test")
    assert not hit and len(list(cache.scores_dir().iterdir())) == 3
    key = cache.score_key(_model(tokenizer), one, CONFIG, "test")
    (cache.scores_dir() / f"{key}.json").write_text('{"key": "')  # truncated
    said = []
    scores, _, hit = cache.train_and_score(_model(tokenizer), one, CONFIG, "test", log=said.append)
    assert not hit and "rebuilding" in said[0] and list(scores.index) == ["bbc-topic"]
    _, _, hit = cache.train_and_score(_model(tokenizer), one, CONFIG, "test")
    assert hit


def test_a_result_is_computed_once_and_an_entry_that_does_not_check_out_is_rebuilt(monkeypatch):
    calls = []

    def compute():
        calls.append(1)
        return {"importance": torch.arange(6.0).reshape(2, 3), "perf": pd.DataFrame({"a": [1.0]})}

    value, hit = cache.cached_result("k1", compute)
    again, hit_again = cache.cached_result("k1", compute)
    assert (hit, hit_again, len(calls)) == (False, True, 1)
    assert torch.equal(again["importance"], value["importance"]) and again["perf"].equals(value["perf"])
    data = cache.results_dir() / "k1.pt"
    data.write_bytes(data.read_bytes()[:-4] + b"edit")  # an edit of the stored bytes
    logs = []
    _, hit = cache.cached_result("k1", compute, log=logs.append)
    assert not hit and len(calls) == 2 and "does not match the digest" in logs[0]
    assert cache.cached_result("k1", compute)[1]  # rebuilt, then read
    (cache.results_dir() / "k1.json").unlink()  # a crash before the record was written: never used
    assert not cache.cached_result("k1", compute)[1] and len(calls) == 3
    record = cache.results_dir() / "k1.json"
    record.write_text(record.read_text().replace('"k1"', '"k2"'))
    logs = []
    assert not cache.cached_result("k1", compute, log=logs.append)[1] and "another key" in logs[0]


def test_no_key_or_a_disabled_cache_computes_every_time(monkeypatch):
    calls = []
    for _ in range(2):
        assert cache.cached_result(None, lambda: calls.append(1) or 7) == (7, False)
    monkeypatch.setenv("MTLLIB_MODEL_CACHE", "0")
    for _ in range(2):
        assert cache.cached_result("k", lambda: calls.append(1) or 7) == (7, False)
    assert len(calls) == 4 and not cache.results_dir().exists()

"""Few-shot transfer on a tiny model: the transferred encoder is a copy with a fresh head, runs are paired by
seed across sources, bad targets and ks fail before any training."""

import pytest
import torch

from mtllib import checks
from mtllib.experiments import transfer
from mtllib.training.trainer import TrainConfig


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from mtllib.data.features import load_tokenizer, prepare
    from mtllib.modeling.multitask import MultiTaskModel
    from tiny import save_tiny_bert

    tokenizer = load_tokenizer("offline")
    folder = save_tiny_bert(tmp_path_factory.mktemp("tiny-bert"), tokenizer.vocab_size)
    data = prepare(["bbc-topic", "tweet-sentiment", "bbc-pair"], tokenizer, max_train=40, max_eval=16, max_length=32)
    torch.manual_seed(0)
    a = MultiTaskModel.from_pretrained(str(folder), [data[t].task.spec() for t in ("bbc-topic", "tweet-sentiment")])
    torch.manual_seed(1)
    b = MultiTaskModel.from_pretrained(str(folder), [data[t].task.spec() for t in ("bbc-topic", "tweet-sentiment")])
    with torch.no_grad():  # a second source whose encoder differs
        for p in b.encoder.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return data, a, b


CONFIG = TrainConfig(epochs=2, batch_size=4, lr=1e-3, keep_best=False)


def test_transfer_model_copies_the_encoder_and_adds_a_fresh_head(tiny):
    data, a, _ = tiny
    model = transfer.transfer_model(a, data["bbc-pair"].task.spec())
    assert model.task_names == ["bbc-pair"] and model.pooling == a.pooling
    for (name, p), q in zip(model.encoder.named_parameters(), a.encoder.parameters()):
        assert torch.equal(p, q), name
    with torch.no_grad():
        next(model.encoder.parameters()).add_(1.0)
    assert not torch.equal(next(model.encoder.parameters()), next(a.encoder.parameters()))  # a copy, not a view


def test_runs_are_paired_by_seed_across_sources(tiny):
    data, a, b = tiny
    rows = transfer.few_shot_transfer({"a": a, "same as a": a, "b": b}, data["bbc-pair"], [2, 4], [0, 1], CONFIG, progress=False)
    assert len(rows) == 3 * 2 * 2 and set(rows.target) == {"bbc-pair"}
    by = rows.set_index(["source", "k", "seed"]).accuracy
    # the same encoder with the same seed: the same subset, head and training, so the same score
    for k in (2, 4):
        for seed in (0, 1):
            assert by[("a", k, seed)] == by[("same as a", k, seed)]
    assert rows.columns[:2].tolist() == ["source", "target"]


def test_scores_are_on_the_whole_test_split_and_the_monitor_trims_only_validation(tiny, monkeypatch):
    from mtllib.training import trainer

    data, a, _ = tiny
    seen = []
    original = trainer.few_shot

    def spy(make_model, data, ks, seeds, **kwargs):
        seen.append((len(data.features["validation"]), len(data.features["test"]), kwargs["split"]))
        return original(make_model, data, ks, seeds, **kwargs)

    monkeypatch.setattr(trainer, "few_shot", spy)
    transfer.few_shot_transfer({"a": a}, data["bbc-pair"], [2], [0], CONFIG, monitor=4, progress=False)
    transfer.few_shot_transfer({"a": a}, data["bbc-pair"], [2], [0], CONFIG, split="validation", monitor=None, progress=False)
    assert seen == [(4, 16, "test"), (16, 16, "validation")]
    with pytest.raises(checks.BadInput, match="test split"):
        transfer.few_shot_transfer({"a": a}, data["bbc-pair"], [2], [0], CONFIG, split="validation", monitor=4, progress=False)


@pytest.mark.parametrize("targets, ks, match", [
    (["bbc-topic"], [2], "in the multi-task suite"),
    (["tweet-pair"], [2], "no prepared target"),
    (["bbc-pair"], [500], "only"),
    (["bbc-pair"], [0], "ks"),
])
def test_bad_targets_fail_before_training(tiny, targets, ks, match):
    data, _, _ = tiny
    with pytest.raises(checks.BadInput, match=match):
        transfer.check_targets(targets, ["bbc-topic", "tweet-sentiment"], data, ks, per_class=True)


def test_distributed_few_shot_runs_give_the_serial_rows_in_order(tiny, tmp_path, monkeypatch):
    """Two CPU workers, one job per (source, k), each sent its source model: the serial run's rows, in its order
    (the workers train: their scores cache is empty)."""
    data, a, b = tiny
    args = ({"a": a, "b": b}, data["bbc-pair"], [2, 4], [0, 1], CONFIG)
    serial = transfer.few_shot_transfer(*args, progress=False)
    monkeypatch.setenv("MTLLIB_CACHE", str(tmp_path))  # the workers inherit it
    swept = transfer.few_shot_transfer(*args, progress=False, engine="processes", devices=["cpu", "cpu"])
    keys = ["source", "target", "k", "per_class", "seed"]
    assert swept[keys].equals(serial[keys])
    assert swept.accuracy.tolist() == pytest.approx(serial.accuracy.tolist(), abs=1e-6)
    assert any((tmp_path / "scores").iterdir())  # the workers' runs were trained and stored, not read


def test_a_bad_few_shot_sweep_is_refused_before_any_training(tiny, monkeypatch):
    from mtllib.training import trainer

    data, a, _ = tiny
    trained = []
    monkeypatch.setattr(trainer, "few_shot", lambda *args, **kw: trained.append(args))
    with pytest.raises(checks.BadInput, match="device 'cuda:7' does not exist here"):
        transfer.few_shot_transfer({"a": a}, data["bbc-pair"], [2], [0], CONFIG, engine="processes", devices=["cuda:7"], progress=False)
    assert trained == []

"""Appendix A of "BERT and PALs": per-epoch dev scores of each variant, and the trained adapter's effect."""

import pytest

from mtllib.experiments import adapters as exp
from mtllib.experiments import curves
from mtllib.modeling.adapters import AdapterConfig
from mtllib.training.trainer import TrainConfig, evaluate

TASKS = ["bbc-topic", "bbc-pair"]  # the tasks of tiny_pair (conftest)
CONFIG = TrainConfig(epochs=3, batch_size=8, lr=5e-3)
VARIANTS = {"shared": AdapterConfig("shared"), "pals": AdapterConfig("pals", size=16, heads=4)}


def test_history_per_epoch_rows_as_run_variants_and_the_adapter_ablation(tiny_pair):
    folder, _, data = tiny_pair
    out = curves.run_curves(folder, TASKS, VARIANTS, [0], data, CONFIG)
    history, ablation = out["history"], out["ablation"]
    # one dev score per variant, epoch and task, equal to the training history the model cache holds
    assert len(history) == len(VARIANTS) * CONFIG.epochs * len(TASKS)
    for name, adapter in VARIANTS.items():
        _, _, result, _ = exp.train_variant(folder, TASKS, 0, adapter, data, CONFIG)
        mine = history[history.variant == name].set_index(["epoch", "task"]).score
        assert mine.to_dict() == result.history.set_index(["epoch", "task"]).score.to_dict()
    # the rows are run_variants's (same models, from the cache)
    assert out["rows"].equals(exp.run_variants(folder, TASKS, VARIANTS, [0], data, CONFIG))
    # the ablation: only the adapted variant, its test score with and without the adapter
    assert list(ablation.variant.unique()) == ["pals"] and list(ablation.task) == TASKS
    model, attached, _, _ = exp.train_variant(folder, TASKS, 0, VARIANTS["pals"], data, CONFIG)
    with_adapter = evaluate(model, data, "test")
    attached.detach()
    bare = evaluate(model, data, "test")
    for _, r in ablation.iterrows():
        assert r.score == pytest.approx(with_adapter.loc[r.task, "score"])
        assert r["without adapter"] == pytest.approx(bare.loc[r.task, "score"])
        assert r["adapter's effect"] == pytest.approx(r.score - r["without adapter"])


def test_separate_and_bad_variants_are_refused_before_training(tiny_pair):
    folder, _, data = tiny_pair
    with pytest.raises(ValueError, match="'separate' trains one model per task"):
        curves.run_curves(folder, TASKS, {"separate": AdapterConfig("separate")}, [0], data, CONFIG)
    with pytest.raises(ValueError, match="pals"):  # d_s not divisible by the heads: named before any training
        curves.run_curves(folder, TASKS, {"pals": AdapterConfig("pals", size=15, heads=4)}, [0], data, CONFIG)

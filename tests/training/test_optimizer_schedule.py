"""The optimizer and schedule a training run actually uses (issue 66): the learning rate of every step, read
from the optimizer's state as it steps, and which parameters get weight decay."""

import pytest
import torch

from mtllib.training.trainer import TrainConfig, train
from tiny import ddp_config, ddp_data, ddp_model


@pytest.fixture(scope="module")
def small():
    return ddp_data()


def _recorded_run(small, monkeypatch, **changes):
    """Train and record, at each optimizer step, the learning rate and the parameter groups it steps with."""
    tokenizer, data = small
    seen = {"lr": [], "groups": None}
    real_step = torch.optim.AdamW.step

    def step(self, *args, **kwargs):
        seen["lr"].append(self.param_groups[0]["lr"])
        if seen["groups"] is None:
            seen["groups"] = [(g["weight_decay"], [id(p) for p in g["params"]]) for g in self.param_groups]
        return real_step(self, *args, **kwargs)

    monkeypatch.setattr(torch.optim.AdamW, "step", step)
    model = ddp_model(tokenizer, data)
    config = ddp_config(**changes)
    result = train(model, data, config, progress=False)
    return model, config, result, seen


def test_every_step_s_learning_rate_follows_linear_warmup_then_linear_decay(small, monkeypatch):
    _, config, result, seen = _recorded_run(small, monkeypatch, warmup=0.25, epochs=2)
    total = len(result.log)
    warmup = max(1, round(0.25 * total))
    expected = [config.lr * ((k + 1) / warmup if k < warmup else (total - k) / (total - warmup)) for k in range(total)]
    assert len(seen["lr"]) == total and total >= 8
    assert seen["lr"] == pytest.approx(expected, rel=1e-9)
    assert seen["lr"][warmup - 1] == pytest.approx(config.lr)  # the peak is reached on the last warm-up step
    assert min(seen["lr"]) > 0  # no step at a learning rate of 0


def test_without_warmup_the_rate_decays_linearly_from_the_peak(small, monkeypatch):
    _, config, result, seen = _recorded_run(small, monkeypatch, warmup=0.0, epochs=1)
    total = len(result.log)
    assert seen["lr"] == pytest.approx([config.lr * (total - k) / total for k in range(total)], rel=1e-9)


def test_weight_decay_applies_to_weight_matrices_only(small, monkeypatch):
    model, config, _, seen = _recorded_run(small, monkeypatch, weight_decay=0.05, epochs=1)
    by_id = {id(p): name for name, p in model.named_parameters()}
    groups = {decay: {by_id[i] for i in ids} for decay, ids in seen["groups"]}
    assert set(groups) == {0.05, 0.0}
    assert groups[0.05] and all(model.get_parameter(n).dim() >= 2 for n in groups[0.05])
    assert any(n.endswith("bias") for n in groups[0.0]) and any("LayerNorm" in n for n in groups[0.0])
    assert not any(n.endswith("bias") or "LayerNorm" in n for n in groups[0.05])
    assert groups[0.05] | groups[0.0] == {n for n, p in model.named_parameters() if p.requires_grad}

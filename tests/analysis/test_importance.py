"""Head importance (Eq. 4) and IAP pruning masks."""

import pytest
import torch

from mtllib.modeling.gates import HeadGates
from mtllib.analysis.importance import gates_from_mask, head_importance, num_pruned, select_heads
from mtllib.modeling.multitask import MultiTaskModel, TaskSpec
from tiny import HEADS, LAYERS, random_batch, tiny_config


def _model(model_type="bert"):
    torch.manual_seed(0)
    tasks = [TaskSpec("a", "classification", 3), TaskSpec("b", "regression")]
    return MultiTaskModel.from_config(tiny_config(model_type), tasks)


def _batches(n_batches=2, batch_size=4, task="a", seed=0):
    out = []
    for i in range(n_batches):
        batch = random_batch(batch_size, 6, seed=seed + i)  # no padding: examples are independent of batching
        g = torch.Generator().manual_seed(100 + seed + i)
        batch["labels"] = torch.randint(0, 3, (batch_size,), generator=g).float()
        batch["task"] = task
        out.append(batch)
    return out


def _single_example_grads(model, batches):
    """dL_b/dxi for each example alone, with [L, H] gates: the definition, computed independently."""
    grads = []
    model.eval()
    for batch in batches:
        for b in range(batch["input_ids"].shape[0]):
            one = {k: (v[b:b + 1] if torch.is_tensor(v) else v) for k, v in batch.items()}
            xi = torch.ones(LAYERS, HEADS, dtype=torch.float64, requires_grad=True)
            with HeadGates(model, xi):
                (g,) = torch.autograd.grad(model(**one).loss, xi)
            grads.append(g)
    return torch.stack(grads)


@pytest.mark.parametrize("model_type", ["bert", "gpt2", "deberta-v2"])
def test_importance_is_mean_of_per_example_absolute_gradients(model_type):
    model = _model(model_type).double()
    batches = _batches()
    grads = _single_example_grads(model, batches)
    expected = grads.abs().mean(0)
    batch_sum_then_abs = grads.view(2, 4, LAYERS, HEADS).sum(1).abs().sum(0) / 8  # run_bertology's |sum|
    assert ((expected - batch_sum_then_abs) / expected).max() > 0.1  # signs differ across examples: the two differ
    importance = head_importance(model, batches, progress=False)
    assert importance.shape == (LAYERS, HEADS) and importance.dtype == torch.float64
    torch.testing.assert_close(importance, expected, rtol=1e-6, atol=1e-10)


def test_importance_per_task_and_layer_normalisation():
    model = _model()
    data = {"a": _batches(task="a"), "b": _batches(task="b", seed=5)}
    scores = head_importance(model, data, progress=False)
    assert set(scores) == {"a", "b"} and not torch.allclose(scores["a"], scores["b"])
    normalised = head_importance(model, data["a"], normalize="layer", progress=False)
    torch.testing.assert_close(normalised.norm(dim=-1), torch.ones(LAYERS, dtype=torch.float64))
    torch.testing.assert_close(normalised, scores["a"] / scores["a"].norm(dim=-1, keepdim=True))


def test_importance_leaves_gradients_mode_and_weights_alone():
    model = _model()
    model.train()
    param = model.heads["a"].out.weight
    param.grad = torch.full_like(param, 7.0)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    first = head_importance(model, _batches(), progress=False)
    assert model.training  # mode restored
    assert torch.equal(param.grad, torch.full_like(param, 7.0))  # existing gradient untouched
    assert all(p.grad is None for n, p in model.named_parameters() if p is not param)  # nothing leaked
    assert all(torch.equal(p, before[n]) for n, p in model.named_parameters())
    torch.testing.assert_close(head_importance(model, _batches(), progress=False), first)  # eval mode: no dropout noise
    assert not model.encoder.encoder.layer[0].attention.output.dense._forward_pre_hooks  # gates removed


def test_importance_errors():
    model = _model()
    with pytest.raises(ValueError, match="normalize must be one of"):
        head_importance(model, _batches(), normalize="global")
    with pytest.raises(ValueError, match="at least one batch"):
        head_importance(model, [], progress=False)
    unlabelled = [{k: v for k, v in b.items() if k != "labels"} for b in _batches()]
    with pytest.raises(ValueError, match="needs labelled batches"):
        head_importance(model, unlabelled, progress=False)


@pytest.mark.parametrize("alpha, total, expected", [(0.3, 72, 22), (0.3, 144, 43), (0.3, 384, 115), (1.0, 8, 8), (0.5, 8, 4), (0.0625, 8, 1)])
def test_number_of_pruned_heads(alpha, total, expected):
    assert num_pruned(alpha, total) == expected


@pytest.mark.parametrize("alpha", [0, -0.1, 1.5, True, "0.3", float("nan")])
def test_alpha_outside_unit_interval_is_an_error(alpha):
    with pytest.raises(ValueError, match=r"alpha must be a fraction of heads in \(0, 1\]"):
        num_pruned(alpha, 72)


def test_alpha_that_selects_no_head_is_an_error():
    with pytest.raises(ValueError, match="selects no head"):
        num_pruned(0.001, 72)


def test_top_bottom_random_masks():
    importance = torch.tensor([[0.1, 0.9, 0.5], [0.7, 0.2, 0.3]])
    top = select_heads(importance, 0.5, "top")
    assert top.tolist() == [[False, True, True], [True, False, False]]
    bottom = select_heads(importance, 0.5, "bottom")
    assert bottom.tolist() == [[True, False, False], [False, True, True]]
    random = select_heads(importance, 0.5, "random", seed=3)
    assert random.sum() == 3 and torch.equal(random, select_heads(importance, 0.5, "random", seed=3))
    assert any(not torch.equal(random, select_heads(importance, 0.5, "random", seed=s)) for s in range(4, 10))
    assert gates_from_mask(top).tolist() == [[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]]


def test_ties_are_broken_by_lower_flat_index():
    tied = torch.tensor([[1.0, 2.0, 2.0], [2.0, 1.0, 1.0]])
    assert select_heads(tied, 2 / 6, "top").tolist() == [[False, True, True], [False, False, False]]
    assert select_heads(tied, 3 / 6, "bottom").tolist() == [[True, False, False], [False, True, True]]
    flat = torch.zeros(2, 4)
    assert select_heads(flat, 0.25, "top").flatten().tolist() == [True, True] + [False] * 6


def test_select_heads_errors():
    with pytest.raises(ValueError, match="which must be one of"):
        select_heads(torch.ones(2, 2), 0.5, "middle")
    with pytest.raises(ValueError, match="needs a seed"):
        select_heads(torch.ones(2, 2), 0.5, "random")
    with pytest.raises(ValueError, match=r"\[L, H\] tensor"):
        select_heads(torch.ones(4), 0.5)


# --- what the mutation run (make mutation) found unpinned -----------------------------------------------
def test_ties_among_many_heads_go_to_the_lower_flat_index():
    # BERT-base's 144 heads all tied: torch's default (unstable) sort would pick others; ours takes 0..42
    tied = torch.zeros(12, 12, dtype=torch.float64)
    expected = [True] * 43 + [False] * 101
    assert select_heads(tied, 0.3, "top").flatten().tolist() == expected
    assert select_heads(tied, 0.3, "bottom").flatten().tolist() == expected


def test_scores_that_are_not_finite_are_named_by_layer_and_head():
    scores = torch.ones(3, 4)
    scores[0, 1], scores[2, 3] = float("nan"), float("inf")
    with pytest.raises(ValueError, match=r"^importance has NaN or infinite scores at \(layer, head\) \[\(0, 1\), \(2, 3\)\]: a diverged model or an empty batch\?$"):
        select_heads(scores, 0.5)
    with pytest.raises(ValueError, match=r"\[\(0, 0\), \(0, 1\), \(0, 2\), \(0, 3\), \(1, 0\)\]:"):  # the first five of twelve
        select_heads(torch.full((3, 4), float("nan")), 0.5)


def test_error_messages_in_full():
    import re

    full = lambda message: "^" + re.escape(message) + "$"
    with pytest.raises(ValueError, match=full("alpha=0.001 selects no head out of 72; use alpha >= 0.00694")):
        num_pruned(0.001, 72)
    with pytest.raises(ValueError, match=full("which='random' needs a seed")):
        select_heads(torch.ones(2, 2), 0.5, "random")
    model = _model()
    with pytest.raises(ValueError, match=full("head importance needs at least one batch")):
        head_importance(model, [], progress=False)
    unlabelled = [{k: v for k, v in b.items() if k != "labels"} for b in _batches()]
    with pytest.raises(ValueError, match=full("head importance needs labelled batches (the model returned no loss)")):
        head_importance(model, unlabelled, progress=False)


def test_per_task_importance_keeps_the_normalisation():
    model = _model()
    per_task = head_importance(model, {"a": _batches()}, normalize="layer", progress=False)
    torch.testing.assert_close(per_task["a"], head_importance(model, _batches(), normalize="layer", progress=False))


def test_batches_and_gates_go_to_the_models_device(monkeypatch):
    from mtllib.analysis import importance as module

    seen = {"batch": [], "gates": []}
    real_to_device, real_ones = module.to_device, module.ones
    monkeypatch.setattr(module, "to_device", lambda batch, device: seen["batch"].append(device) or real_to_device(batch, device))
    monkeypatch.setattr(module, "ones", lambda *a, **kw: seen["gates"].append(kw.get("device")) or real_ones(*a, **kw))
    model = _model()
    head_importance(model, _batches(), progress=False)  # no device given: the model's
    assert seen["batch"] == [torch.device("cpu")] * 2 and seen["gates"] == [torch.device("cpu")] * 2


def test_a_progress_bar_when_asked_and_none_left_behind(capsys):
    model = _model()
    head_importance(model, _batches(), progress=False)
    head_importance(model, {"a": _batches()}, progress=False)
    assert capsys.readouterr().err == ""
    head_importance(model, _batches())  # the default shows progress
    err = capsys.readouterr().err
    assert "head importance:" in err and "/2 [" in err and "batch/s]" in err
    assert not err.endswith("\n")  # leave=False: the finished bar is cleared, not left as a line
    head_importance(model, {"a": _batches()}, progress=True)  # per task, too
    assert "head importance:" in capsys.readouterr().err

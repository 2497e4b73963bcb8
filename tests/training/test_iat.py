"""IAT (Sec. 4.2): per-head parameter slices, and an update mask that is safe under AdamW."""

import pytest
import torch

from mtllib.modeling import archs
from mtllib.training.iat import HeadUpdateMask, IATConfig, head_slices
from mtllib.modeling.multitask import MultiTaskModel, TaskSpec
from tiny import HEADS, HIDDEN, LAYERS, MODEL_TYPES, random_batch, tiny_config

D = HIDDEN // HEADS


def _model(model_type="bert"):
    torch.manual_seed(0)
    return MultiTaskModel.from_config(tiny_config(model_type), [TaskSpec("a", "classification", 3), TaskSpec("b", "classification", 3)])


@pytest.mark.parametrize("model_type", MODEL_TYPES)
def test_every_head_owns_its_q_k_v_rows_and_w_o_columns(model_type):
    model = _model(model_type)
    slices = head_slices(model)
    layer = archs.attention_layers(model)[1]
    # Q, K, V weights (+ biases where present) and W_O's weight: 7 slices per head with biases
    per_head = {(l, h) for _, _, l, h, _, _ in slices}
    assert per_head == {(l, h) for l in range(LAYERS) for h in range(HEADS)}
    mine = [(p, dim, a, b) for p, dim, l, h, a, b in slices if (l, h) == (1, 2)]
    assert all(b - a == D for _, _, a, b in mine)
    out = [(dim, a) for p, dim, a, b in mine if p is layer.out_proj.weight]
    assert out == [(0 if layer.conv1d else 1, 2 * D)]  # W_O reads head 2 from input position 2*d
    if layer.fused_qkv is not None:
        starts = sorted(a for p, dim, a, b in mine if p is layer.fused_qkv.weight)
        assert starts == [2 * D, HIDDEN + 2 * D, 2 * HIDDEN + 2 * D]  # q | k | v parts


def _snapshot(model):
    return {n: p.detach().clone() for n, p in model.named_parameters()}


@pytest.mark.parametrize("model_type", ["bert", "gpt2", "distilbert"])
def test_frozen_heads_stay_bit_identical_through_adamw_steps(model_type):
    model = _model(model_type)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    batch = {**random_batch(4), "labels": torch.tensor([0, 1, 2, 0]), "task": "a"}

    def backward():
        optimizer.zero_grad()
        model(**batch).loss.backward()

    backward()
    optimizer.step()  # plain step first: AdamW now has momentum for every parameter
    trainable = torch.zeros(LAYERS, HEADS, dtype=torch.bool)
    trainable[0, 1] = trainable[1, 3] = True
    mask = HeadUpdateMask(model, {"a": trainable, "b": ~trainable})
    before = _snapshot(model)
    for _ in range(3):
        backward()
        mask.zero_frozen_grads("a")
        mask.step("a", optimizer)
    after = _snapshot(model)
    moved = {(l, h): False for l in range(LAYERS) for h in range(HEADS)}
    for param, dim, l, h, a, b in head_slices(model):
        name = next(n for n, p in model.named_parameters() if p is param)
        changed = not torch.equal(before[name].narrow(dim, a, b - a), after[name].narrow(dim, a, b - a))
        moved[(l, h)] |= changed
        if not trainable[l, h]:
            assert not changed, f"frozen head {(l, h)} moved in {name}"
    assert moved[(0, 1)] and moved[(1, 3)]
    ffn = [n for n in before if "intermediate" in n or "mlp" in n or "ffn" in n or "lin1" in n]
    assert ffn and all(not torch.equal(before[n], after[n]) for n in ffn)  # outside attention: trains as usual


def test_zeroed_gradients_alone_would_still_move_a_head():
    """Why the mask restores parameters: AdamW's momentum and weight decay move a zero-gradient parameter."""
    model = _model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    batch = {**random_batch(4), "labels": torch.tensor([0, 1, 2, 0]), "task": "a"}
    model(**batch).loss.backward()
    optimizer.step()
    query = archs.attention_layers(model)[0].query.weight
    before = query.detach().clone()
    optimizer.zero_grad()
    model(**batch).loss.backward()
    query.grad.zero_()
    optimizer.step()
    assert not torch.equal(before, query)


def test_all_heads_trainable_is_a_plain_step():
    model_a, model_b = _model().eval(), _model().eval()  # no dropout: both see the same forward pass
    batch = {**random_batch(4), "labels": torch.tensor([0, 1, 2, 0]), "task": "a"}
    opt_a = torch.optim.AdamW(model_a.parameters(), lr=1e-2)
    opt_b = torch.optim.AdamW(model_b.parameters(), lr=1e-2)
    mask = HeadUpdateMask(model_a, {"a": torch.ones(LAYERS, HEADS, dtype=torch.bool)})
    for model, opt, masked in ((model_a, opt_a, True), (model_b, opt_b, False)):
        model(**batch).loss.backward()
        if masked:
            mask.zero_frozen_grads("a")
            mask.step("a", opt)
        else:
            opt.step()
    assert all(torch.equal(p, q) for p, q in zip(model_a.parameters(), model_b.parameters()))


@pytest.mark.parametrize("kwargs, match", [
    (dict(alpha=0), r"alpha must be a fraction of heads in \(0, 1\]"),
    (dict(alpha=1.2), r"alpha must be"),
    (dict(delta=-0.1), r"IATConfig\.delta must be a finite number >= 0 and <= 1"),
    (dict(delta=1.5), r"delta must be"),
    (dict(heads="bottom"), r"heads must be one of"),
    (dict(importance_batches=0), r"importance_batches"),
])
def test_iat_config_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        IATConfig(**kwargs)


def test_iat_starts_at_the_last_delta():
    assert IATConfig(delta=0.1).start_step(100) == 90
    assert IATConfig(delta=1).start_step(100) == 0
    assert IATConfig(delta=0).start_step(100) == 100  # never


def _frozen_slices(model, trainable):
    """(name, dim, start, end) of every parameter slice of a head that ``trainable`` freezes."""
    names = {id(p): n for n, p in model.named_parameters()}
    return [(names[id(p)], dim, a, b) for p, dim, l, h, a, b in head_slices(model) if not trainable[l, h]]


def test_adamw_moments_of_frozen_heads_stay_unchanged_and_start_at_zero():
    model = _model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    batch = {**random_batch(4), "labels": torch.tensor([0, 1, 2, 0]), "task": "a"}
    trainable = torch.zeros(LAYERS, HEADS, dtype=torch.bool)
    trainable[0, 0] = True
    mask = HeadUpdateMask(model, {"a": trainable})
    params = dict(model.named_parameters())
    # the first step creates the moments: for frozen slices they must be zero, not this step's gradient (even
    # when the gradient was not zeroed first)
    model(**batch).loss.backward()
    mask.step("a", optimizer)
    for name, dim, a, b in _frozen_slices(model, trainable):
        state = optimizer.state[params[name]]
        for key in ("exp_avg", "exp_avg_sq"):
            assert torch.count_nonzero(state[key].narrow(dim, a, b - a)) == 0, (name, key)
    # a plain step gives every slice moments; masked steps after it must leave frozen slices' moments alone
    optimizer.zero_grad()
    model(**batch).loss.backward()
    optimizer.step()
    saved = {n: {k: v.clone() for k, v in optimizer.state[p].items() if torch.is_tensor(v) and v.shape == p.shape} for n, p in params.items()}
    for _ in range(2):
        optimizer.zero_grad()
        model(**batch).loss.backward()
        mask.zero_frozen_grads("a")
        mask.step("a", optimizer)
    for name, dim, a, b in _frozen_slices(model, trainable):
        for key, old in saved[name].items():
            assert torch.equal(optimizer.state[params[name]][key].narrow(dim, a, b - a), old.narrow(dim, a, b - a)), (name, key)


def test_tasks_take_turns_each_with_its_own_heads():
    """Two tasks with disjoint trainable heads: a step of task a moves only a's heads, a step of b only b's."""
    model = _model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    only_a = torch.zeros(LAYERS, HEADS, dtype=torch.bool)
    only_a[0, 1] = True
    only_b = torch.zeros(LAYERS, HEADS, dtype=torch.bool)
    only_b[1, 2] = True
    mask = HeadUpdateMask(model, {"a": only_a, "b": only_b})
    names = {id(p): n for n, p in model.named_parameters()}

    def moved_heads(task):
        before = _snapshot(model)
        optimizer.zero_grad()
        labels = torch.tensor([0, 1, 2, 0])
        model(**random_batch(4), labels=labels, task=task).loss.backward()
        mask.zero_frozen_grads(task)
        mask.step(task, optimizer)
        after = _snapshot(model)
        return {(l, h) for p, dim, l, h, a, b in head_slices(model)
                if not torch.equal(before[names[id(p)]].narrow(dim, a, b - a), after[names[id(p)]].narrow(dim, a, b - a))}

    assert moved_heads("a") == {(0, 1)}
    assert moved_heads("b") == {(1, 2)}
    assert moved_heads("a") == {(0, 1)}  # b's step left a's moments usable; a moves again, b's head does not


# --- what the mutation run (make mutation) found unpinned: checks that do not go through head_slices --------
def _head_weights(model, layer, head):
    """Head ``head`` of block ``layer`` in BERT's own layout, written out: its rows of the Q, K, V weights and
    biases (nn.Linear is [out, in]) and its columns of W_O's weight."""
    block = model.encoder.encoder.layer[layer].attention
    rows = slice(head * D, (head + 1) * D)
    out = {f"{n}.{w}": getattr(getattr(block.self, n), w)[rows].detach().clone() for n in ("query", "key", "value") for w in ("weight", "bias")}
    out["output.dense.weight"] = block.output.dense.weight[:, rows].detach().clone()
    return out


def test_frozen_heads_keep_their_own_rows_and_columns_written_out():
    """Task a trains every head of layer 0 and head 3 of layer 1: every other head's Q/K/V rows (weights and
    biases) and W_O columns stay bit-identical through masked AdamW steps; head (1, 3) moves."""
    model = _model("bert")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    trainable = torch.zeros(LAYERS, HEADS, dtype=torch.bool)
    trainable[0, :] = True  # a whole layer with nothing frozen comes first in the parameter order
    trainable[1, 3] = True
    mask = HeadUpdateMask(model, {"a": trainable})
    before = {(l, h): _head_weights(model, l, h) for l in range(LAYERS) for h in range(HEADS)}
    batch = {**random_batch(4), "labels": torch.tensor([0, 1, 2, 0]), "task": "a"}
    for _ in range(2):
        optimizer.zero_grad()
        model(**batch).loss.backward()
        mask.zero_frozen_grads("a")
        mask.step("a", optimizer)
    for (l, h), old in before.items():
        new = _head_weights(model, l, h)
        if not trainable[l, h]:
            for name in old:
                assert torch.equal(old[name], new[name]), f"frozen head {(l, h)} moved in {name}"
    moved = _head_weights(model, 1, 3)
    assert all(not torch.equal(before[(1, 3)][n], moved[n]) for n in moved)


@pytest.mark.parametrize("kwargs, message", [
    (dict(heads="bottom"), "IATConfig.heads must be one of 'top', 'random', got 'bottom'"),
    (dict(importance_batches=0), "IATConfig.importance_batches must be an integer >= 1, got 0"),
])
def test_iat_config_errors_name_the_field(kwargs, message):
    import re

    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        IATConfig(**kwargs)

"""Head gates (Eq. 3): identity at 1, a head's output removed at 0, exact gradients, removable hooks."""

import pytest
import torch

from mtllib.modeling import archs
from mtllib.modeling.gates import HeadGates, ones
from tiny import HEADS, LAYERS, MODEL_TYPES, random_batch, supports_sdpa, tiny_encoder

ATTN = [(t, "eager") for t in MODEL_TYPES] + [(t, "sdpa") for t in MODEL_TYPES if supports_sdpa(t)]


def _hidden(model, batch):
    with torch.no_grad():
        return model(**batch).last_hidden_state


@pytest.mark.parametrize("model_type, attn", ATTN)
def test_all_gates_at_one_is_bit_identical(model_type, attn):
    model = tiny_encoder(model_type, attn)
    batch = random_batch(pad_last=2)
    bare = _hidden(model, batch)
    with HeadGates(model):  # no values: hooks attached but pass-through
        assert torch.equal(_hidden(model, batch), bare)
    with HeadGates(model, ones(model)):
        assert torch.equal(_hidden(model, batch), bare)
    with HeadGates(model, ones(model, batch_size=3)):
        assert torch.equal(_hidden(model, batch), bare)
    with HeadGates(model, ones(model, batch_size=3, requires_grad=True)):  # the multiplying path, by exact ones
        assert torch.equal(_hidden(model, batch), bare)
    assert torch.equal(_hidden(model, batch), bare)  # hooks removed


def _zero_value_rows(model, layer_index, head):
    """Independent way to silence a head: zero its V projection rows, so its attention output P V_h is 0."""
    layer = archs.attention_layers(model)[layer_index]
    d = layer.head_dim
    with torch.no_grad():
        if layer.fused_qkv is not None:  # GPT Conv1D: weight [in, 3E], columns ordered q | k | v
            width = layer.fused_qkv.weight.shape[1] // 3
            cols = slice(2 * width + head * d, 2 * width + (head + 1) * d)
            layer.fused_qkv.weight[:, cols] = 0
            layer.fused_qkv.bias[cols] = 0
        else:
            layer.value.weight[head * d:(head + 1) * d] = 0
            layer.value.bias[head * d:(head + 1) * d] = 0


@pytest.mark.parametrize("model_type, attn", ATTN)
def test_gate_at_zero_equals_zeroing_that_heads_context(model_type, attn):
    batch = random_batch(pad_last=2)
    gated_model = tiny_encoder(model_type, attn)
    values = torch.ones(LAYERS, HEADS)
    values[1, 2] = 0
    with HeadGates(gated_model, values):
        gated = _hidden(gated_model, batch)
    reference_model = tiny_encoder(model_type, attn)
    _zero_value_rows(reference_model, 1, 2)
    reference = _hidden(reference_model, batch)
    torch.testing.assert_close(gated, reference, rtol=1e-5, atol=1e-6)
    assert not torch.allclose(gated, _hidden(tiny_encoder(model_type, attn), batch), atol=1e-4)  # the gate did act


@pytest.mark.parametrize("model_type", MODEL_TYPES)
def test_per_example_gates_act_on_their_example_only(model_type):
    model = tiny_encoder(model_type)
    batch = random_batch()
    values = torch.ones(3, LAYERS, HEADS)
    values[1, 0, 1] = 0.0
    with HeadGates(model, values):
        per_example = _hidden(model, batch)
    with HeadGates(model, values[1]):
        only_second = _hidden(model, batch)
    bare = _hidden(model, batch)
    torch.testing.assert_close(per_example[[0, 2]], bare[[0, 2]])
    torch.testing.assert_close(per_example[1], only_second[1])


@pytest.mark.parametrize("model_type", ["bert", "gpt2", "distilbert"])
def test_gate_gradient_matches_central_finite_difference(model_type):
    model = tiny_encoder(model_type).double()
    batch = random_batch(pad_last=1)
    target = torch.randn(3, 7, model.config.hidden_size, dtype=torch.float64, generator=torch.Generator().manual_seed(1))

    def loss(values):
        with HeadGates(model, values):
            return ((model(**batch).last_hidden_state - target) ** 2).mean()

    xi = torch.ones(LAYERS, HEADS, dtype=torch.float64, requires_grad=True)
    (grad,) = torch.autograd.grad(loss(xi), xi)
    eps = 1e-6
    for layer, head in [(0, 0), (0, 3), (1, 1), (1, 2)]:
        plus, minus = torch.ones(LAYERS, HEADS, dtype=torch.float64), torch.ones(LAYERS, HEADS, dtype=torch.float64)
        plus[layer, head] += eps
        minus[layer, head] -= eps
        with torch.no_grad():
            numeric = (loss(plus) - loss(minus)) / (2 * eps)
        torch.testing.assert_close(grad[layer, head], numeric, rtol=1e-5, atol=1e-9)


def test_bad_gate_shapes_are_rejected():
    model = tiny_encoder("bert")
    with pytest.raises(ValueError, match=r"shape \[L, H\] = \[2, 4\]"):
        HeadGates(model, torch.ones(3, 3))
    with HeadGates(model, torch.full((5, LAYERS, HEADS), 0.5)):
        with pytest.raises(ValueError, match="for 5 examples but the batch has 3"):
            model(**random_batch())


def test_gates_cannot_be_attached_twice():
    gates = HeadGates(tiny_encoder("bert")).attach()
    with pytest.raises(RuntimeError, match="already attached"):
        gates.attach()
    gates.remove()


# --- what the mutation run (make mutation) found unpinned -----------------------------------------------
def test_ones_is_a_constant_on_the_device_asked_for():
    model = tiny_encoder("bert")
    assert ones(model).requires_grad is False and ones(model).shape == (LAYERS, HEADS)
    assert ones(model, batch_size=2, requires_grad=True).requires_grad
    assert ones(model, device="meta").device.type == "meta"  # a device without data: only the placement is checked


def test_gates_follow_a_half_precision_model():
    """Gate values are float32; a bfloat16 model's activations must stay bfloat16 through the gated W_O."""
    model = tiny_encoder("bert").to(torch.bfloat16)
    values = torch.ones(LAYERS, HEADS)
    values[0, 1] = 0.0
    with HeadGates(model, values):
        out = _hidden(model, random_batch())
    assert out.dtype == torch.bfloat16 and torch.isfinite(out.float()).all()


def test_gates_remember_their_model_and_detach_cleanly_any_number_of_times():
    model = tiny_encoder("bert")
    gates = HeadGates(model, torch.zeros(LAYERS, HEADS))
    assert gates.model is model
    gates.remove()  # never attached: nothing to do
    bare = _hidden(model, random_batch())
    for _ in range(2):  # attach, remove, attach again, remove twice
        gates.attach()
        assert not torch.equal(_hidden(model, random_batch()), bare)
        gates.remove()
        gates.remove()
        assert torch.equal(_hidden(model, random_batch()), bare)
    with pytest.raises(RuntimeError, match="^gates are already attached$"):
        with gates:
            gates.attach()

import pytest
from transformers import AlbertConfig, AutoModel

from mtllib.modeling import archs
from tiny import HEADS, HIDDEN, LAYERS, MODEL_TYPES, tiny_encoder


@pytest.mark.parametrize("model_type", MODEL_TYPES)
def test_every_architecture_exposes_its_attention_modules(model_type):
    model = tiny_encoder(model_type)
    layers = archs.attention_layers(model)
    assert len(layers) == LAYERS and archs.num_layers_heads(model) == (LAYERS, HEADS)
    spec = archs.spec_for(model)
    for layer in layers:
        assert layer.head_dim * HEADS == HIDDEN
        if spec.fused_qkv:
            assert layer.fused_qkv.weight.shape == (HIDDEN, 3 * HIDDEN) and layer.query is None
        else:
            assert all(m.weight.shape == (HIDDEN, HIDDEN) for m in (layer.query, layer.key, layer.value))


def test_unsupported_architecture_names_the_supported_ones():
    albert = AutoModel.from_config(AlbertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8, embedding_size=8))
    with pytest.raises(archs.UnsupportedArchitecture, match=r"'albert' is not supported; supported model types: bert .*gpt2"):
        archs.attention_layers(albert)

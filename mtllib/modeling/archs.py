"""One table that maps each supported architecture to its attention modules.

Everything that needs to find an attention head inside a Hugging Face model (the head gates of Eq. 3,
head importance, IAT's per-head parameter updates) reads :data:`ARCHS` through :func:`spec_for` and
:func:`attention_layers`; nothing else in ``mtllib`` names a module path.

For every layer we need:

- ``out_proj``: the attention output projection W_O of Eq. 2. Its *input* is the concatenation
  ``[A_1(X); ...; A_H(X)]`` of the heads' outputs, head ``h`` in columns ``h*d:(h+1)*d``: that is where the
  gates act.
- the Q, K, V projections (separate modules, or GPT's fused ``c_attn``): the rows of head ``h`` are what
  IAT (Sec. 4.2) trains for the task that head is important to.

Paths are relative to the *base* model (``BertModel``, ``GPT2Model``, ...), as returned by ``AutoModel``.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn


@dataclass(frozen=True)
class ArchSpec:
    """Where the attention pieces of one architecture family live."""

    family: str
    layers: str  #: path of the list of transformer blocks
    out_proj: str  #: W_O inside a block
    query: str | None = None  #: separate Q/K/V projections inside a block (``nn.Linear``, weight [out, in])
    key: str | None = None
    value: str | None = None
    fused_qkv: str | None = None  #: GPT's fused projection (``Conv1D``, weight [in, 3 * out])
    conv1d: bool = False  #: weights stored as [in, out] (GPT's ``Conv1D``) rather than ``nn.Linear``'s [out, in]
    decoder: bool = False  #: causal model: pool the last non-padding token instead of the first


_BERT_LIKE = dict(
    layers="encoder.layer",
    out_proj="attention.output.dense",
    query="attention.self.query",
    key="attention.self.key",
    value="attention.self.value",
)

#: model_type (``config.model_type``) -> where its attention lives
ARCHS: dict[str, ArchSpec] = {
    "bert": ArchSpec("BERT (incl. MiniLM, TinyBERT)", **_BERT_LIKE),
    "roberta": ArchSpec("RoBERTa", **_BERT_LIKE),
    "xlm-roberta": ArchSpec("XLM-R", **_BERT_LIKE),
    "deberta-v2": ArchSpec(
        "DeBERTa-v2/v3",
        layers="encoder.layer",
        out_proj="attention.output.dense",
        query="attention.self.query_proj",
        key="attention.self.key_proj",
        value="attention.self.value_proj",
    ),
    "distilbert": ArchSpec(
        "DistilBERT",
        layers="transformer.layer",
        out_proj="attention.out_lin",
        query="attention.q_lin",
        key="attention.k_lin",
        value="attention.v_lin",
    ),
    "mpnet": ArchSpec(
        "MPNet",
        layers="encoder.layer",
        out_proj="attention.attn.o",
        query="attention.attn.q",
        key="attention.attn.k",
        value="attention.attn.v",
    ),
    "openai-gpt": ArchSpec("GPT", layers="h", out_proj="attn.c_proj", fused_qkv="attn.c_attn", conv1d=True, decoder=True),
    "gpt2": ArchSpec("GPT-2", layers="h", out_proj="attn.c_proj", fused_qkv="attn.c_attn", conv1d=True, decoder=True),
}


class UnsupportedArchitecture(ValueError):
    pass


def supported() -> str:
    return ", ".join(f"{t} ({s.family})" for t, s in ARCHS.items())


def spec_for(model_or_config) -> ArchSpec:
    """The :class:`ArchSpec` of a model or config; one clear error naming the supported ones otherwise."""
    config = getattr(model_or_config, "config", model_or_config)
    model_type = getattr(config, "model_type", None)
    if model_type not in ARCHS:
        raise UnsupportedArchitecture(f"architecture {model_type!r} is not supported; supported model types: {supported()}")
    return ARCHS[model_type]


def base_model(model: nn.Module) -> nn.Module:
    """The bare transformer inside ``model`` (``MultiTaskModel.encoder``, or a HF model's ``base_model``)."""
    return getattr(model, "base_model", model)


def num_layers_heads(model_or_config) -> tuple[int, int]:
    """``(L, H)``: transformer blocks and attention heads per block."""
    config = getattr(model_or_config, "config", model_or_config)
    return int(config.num_hidden_layers), int(config.num_attention_heads)


@dataclass
class AttentionLayer:
    """The modules of one block's multi-head attention (Q/K/V are ``None`` for a fused ``c_attn``)."""

    index: int
    out_proj: nn.Module
    query: nn.Module | None
    key: nn.Module | None
    value: nn.Module | None
    fused_qkv: nn.Module | None
    num_heads: int
    head_dim: int
    conv1d: bool


def attention_layers(model: nn.Module) -> list[AttentionLayer]:
    """Every block's attention modules, in order, for a supported model (or a model wrapping one)."""
    base = base_model(model)
    spec = spec_for(base)
    num_layers, num_heads = num_layers_heads(base)
    blocks = base.get_submodule(spec.layers)
    if len(blocks) != num_layers:
        raise RuntimeError(f"{spec.layers} has {len(blocks)} blocks but config.num_hidden_layers is {num_layers}")
    out = []
    for i, block in enumerate(blocks):
        get = lambda path: block.get_submodule(path) if path else None  # noqa: E731
        out_proj = get(spec.out_proj)
        in_features = out_proj.weight.shape[0] if spec.conv1d else out_proj.weight.shape[1]
        if in_features % num_heads:
            raise RuntimeError(f"W_O input size {in_features} is not a multiple of {num_heads} heads")
        out.append(
            AttentionLayer(
                index=i,
                out_proj=out_proj,
                query=get(spec.query),
                key=get(spec.key),
                value=get(spec.value),
                fused_qkv=get(spec.fused_qkv),
                num_heads=num_heads,
                head_dim=in_features // num_heads,
                conv1d=spec.conv1d,
            )
        )
    return out

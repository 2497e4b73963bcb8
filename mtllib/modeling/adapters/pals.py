"""Projected attention layers (PALs), "BERT and PALs" Sec. 3.3: per task, an encoder ``V_E`` (d_m -> d_s)
and a decoder ``V_D`` (d_s -> d_m) shared across the adapted layers, and in each adapted layer a multi-head
self-attention of width d_s (12 heads, Sec. 4.2) *without* the final output projection:

    TS(h) = V_D · MH_l(V_E · h),   MH_l(x) = [Attn(x Q_1, x K_1, x V_1); ...; Attn(x Q_n, x K_n, x V_n)]

d_s = 204 for BERT-base (1.13x its parameters with 8 tasks, Table 1). The paper states no initialisation; ``init``
chooses: ``"bert"`` (the default) draws every matrix from BERT's N(0, 0.02), as the encoder's own weights were
drawn; ``"zero"`` starts ``V_D`` at zero, so an attached PAL begins as the identity (as LoRA starts).
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F


class ProjectedAttention(nn.Module):
    """Multi-head self-attention in ``size`` dimensions with ``heads`` heads; no output projection."""

    def __init__(self, size: int, heads: int):
        super().__init__()
        self.heads, self.head_dim = heads, size // heads
        self.query = nn.Linear(size, size, bias=False)
        self.key = nn.Linear(size, size, bias=False)
        self.value = nn.Linear(size, size, bias=False)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        b, t, size = x.shape
        split = lambda y: y.view(b, t, self.heads, self.head_dim).transpose(1, 2)  # noqa: E731
        keep = None if mask is None else mask.to(torch.bool)[:, None, None, :]
        out = F.scaled_dot_product_attention(split(self.query(x)), split(self.key(x)), split(self.value(x)), attn_mask=keep,
                                             scale=1 / math.sqrt(self.head_dim))
        return out.transpose(1, 2).reshape(b, t, size)


class PAL(nn.Module):
    """One task's PALs: ``V_E``/``V_D`` shared by the adapted ``layers``, one :class:`ProjectedAttention` each."""

    def __init__(self, d_model: int, size: int, heads: int, layers: list[int], init: str = "bert"):
        super().__init__()
        self.encode = nn.Linear(d_model, size, bias=False)
        self.decode = nn.Linear(size, d_model, bias=False)
        nn.init.normal_(self.encode.weight, std=0.02)
        init_decoder(self.decode, init)
        self.attention = nn.ModuleDict({str(i): ProjectedAttention(size, heads) for i in layers})
        for attn in self.attention.values():
            for lin in (attn.query, attn.key, attn.value):
                nn.init.normal_(lin.weight, std=0.02)

    def forward(self, h: torch.Tensor, mask: torch.Tensor | None, layer: int) -> torch.Tensor:
        return self.decode(self.attention[str(layer)](self.encode(h), mask))


def init_decoder(decode: nn.Linear, init: str) -> None:
    """``V_D`` from BERT's N(0, 0.02) (``"bert"``) or zero (``"zero"``: the adapter starts as the identity)."""
    if init == "zero":
        nn.init.zeros_(decode.weight)
    else:
        nn.init.normal_(decode.weight, std=0.02)


def build(d_model: int, layers: list[int], size: int, heads: int, init: str = "bert", **_) -> nn.Module:
    return PAL(d_model, size, heads, layers, init)

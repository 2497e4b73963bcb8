"""Task-specific functions added on top of the shared encoder, "BERT and PALs" Sec. 3.2 (Table 1):

- ``top_pals``: projected attention on top. Per task, ``z_0 = V_E h``, then ``k`` layers
  ``z_{i+1} = LN_i(z_i + MH_i(z_i))`` of multi-head attention in d_s dimensions (no output projection), and
  ``h' = h + V_D z_k``. The paper found k = 6 worked best and does not spell the layer out further: this is
  our reading (initialised as PALs: ``init="zero"`` lets the encoder's output pass unchanged at first).
- ``top_layer``: a whole task-specific transformer layer of the encoder's shape (post-LN, GELU, the encoder's
  heads and feed-forward width) on the final hidden states.
"""

from __future__ import annotations

import torch
from torch import nn

from mtllib.modeling.adapters.pals import ProjectedAttention, init_decoder


class TopPALs(nn.Module):
    def __init__(self, d_model: int, size: int, heads: int, depth: int, init: str = "bert"):
        super().__init__()
        self.encode = nn.Linear(d_model, size, bias=False)
        self.decode = nn.Linear(size, d_model, bias=False)
        nn.init.normal_(self.encode.weight, std=0.02)
        init_decoder(self.decode, init)
        self.attention = nn.ModuleList(ProjectedAttention(size, heads) for _ in range(depth))
        self.norms = nn.ModuleList(nn.LayerNorm(size) for _ in range(depth))

    def forward(self, h: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        z = self.encode(h)
        for attn, norm in zip(self.attention, self.norms):
            z = norm(z + attn(z, mask))
        return h + self.decode(z)


class TopLayer(nn.Module):
    def __init__(self, d_model: int, heads: int, ffn: int, dropout: float):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d_model, heads, ffn, dropout=dropout, activation="gelu", batch_first=True, norm_first=False)

    def forward(self, h: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        pad = None if mask is None else ~mask.to(torch.bool)
        return self.layer(h, src_key_padding_mask=pad)


def build_pals(d_model: int, size: int, heads: int, top_layers: int, init: str = "bert", **_) -> nn.Module:
    return TopPALs(d_model, size, heads, top_layers, init)


def build_layer(d_model: int, encoder_heads: int, ffn: int, dropout: float, **_) -> nn.Module:
    return TopLayer(d_model, encoder_heads, ffn, dropout)

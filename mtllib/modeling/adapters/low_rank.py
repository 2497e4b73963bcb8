"""Low-rank layers, "BERT and PALs" Sec. 3.3: per task and adapted layer, ``TS(h) = V_D · V_E · h`` (the
identity in place of PALs' attention), d_s = 100 for BERT-base (1.13x with 8 tasks, Table 1). Initialisation as
for PALs (:mod:`mtllib.modeling.adapters.pals`): ``"bert"`` N(0, 0.02) everywhere, or ``"zero"`` for ``V_D``.
"""

from __future__ import annotations

import torch
from torch import nn

from mtllib.modeling.adapters.pals import init_decoder


class LowRank(nn.Module):
    """One task's low-rank maps ``V_D V_E``, one pair per adapted layer."""

    def __init__(self, d_model: int, size: int, layers: list[int], init: str = "bert"):
        super().__init__()
        self.encode = nn.ModuleDict({str(i): nn.Linear(d_model, size, bias=False) for i in layers})
        self.decode = nn.ModuleDict({str(i): nn.Linear(size, d_model, bias=False) for i in layers})
        for i in layers:
            nn.init.normal_(self.encode[str(i)].weight, std=0.02)
            init_decoder(self.decode[str(i)], init)

    def forward(self, h: torch.Tensor, mask: torch.Tensor | None, layer: int) -> torch.Tensor:
        return self.decode[str(layer)](self.encode[str(layer)](h))


def build(d_model: int, layers: list[int], size: int, init: str = "bert", **_) -> nn.Module:
    return LowRank(d_model, size, layers, init)

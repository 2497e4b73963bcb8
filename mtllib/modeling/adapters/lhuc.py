"""Learning hidden unit contributions (LHUC; Swietojanski et al., cited by "BERT and PALs" Sec. 2.1 and
compared in Sec. 5.1): per task and adapted layer, each hidden unit of the block's output is scaled by
``2 sigmoid(r)``, ``r`` learned and starting at 0 (scale 1: the identity). d_m parameters per layer and task.
"""

from __future__ import annotations

import torch
from torch import nn


class LHUC(nn.Module):
    """One task's scales, one vector ``r`` per adapted layer."""

    def __init__(self, d_model: int, layers: list[int]):
        super().__init__()
        self.r = nn.ParameterDict({str(i): nn.Parameter(torch.zeros(d_model)) for i in layers})

    def forward(self, y: torch.Tensor, mask: torch.Tensor | None, layer: int) -> torch.Tensor:
        return y * (2 * torch.sigmoid(self.r[str(layer)])).to(y.dtype)


def build(d_model: int, layers: list[int], **_) -> nn.Module:
    return LHUC(d_model, layers)

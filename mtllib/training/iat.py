"""Important Attention-head Training (IAT), Sec. 4.2 of "Interpreting and Exploiting Functional
Specialization in Multi-Head Attention under Multi-task Learning".

In the last ``delta`` of multi-task training, a batch of task ``i`` updates, in every attention module, only
the parameters of task ``i``'s top-``alpha`` important heads (mask ``M_i``, from Eq. 4 on task ``i``'s
training data, computed once when the last ``delta`` starts). A head's parameters are the rows of the Q, K and
V projections that produce it (weights and biases) and the columns of W_O that read it. Everything outside
those slices (W_O's bias, layer norms, feed-forward layers, embeddings, task heads) trains as before.

Zeroing a gradient is not enough: AdamW still moves a parameter whose gradient is zero (its momentum, and
weight decay). :class:`HeadUpdateMask` therefore zeroes the frozen slices' gradients before clipping and the
step, and after the step puts the frozen slices of the parameters *and* of AdamW's moment estimates back as
they were, so a head outside ``M_i`` is bit-for-bit unchanged by a task-``i`` step.

``alpha = 1`` or ``delta = 0`` is plain multi-task training. IAT needs single-task batches: the trainer
refuses heterogeneous batching with IAT (one batch would need several masks).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from mtllib import checks
from mtllib.modeling.archs import attention_layers

HEAD_SELECTIONS = ("top", "random")


@dataclass(frozen=True)
class IATConfig:
    """``alpha``: share of heads each task trains, in (0, 1]; ``delta``: final share of training steps under
    IAT, in [0, 1] (1 = from the start, the Ticket-Share-like variant); ``heads``: ``"top"`` (IAT) or
    ``"random"`` (the ablation of Table 7); ``importance_batches``: training batches per task used for Eq. 4."""

    alpha: float = 0.3
    delta: float = 0.1
    heads: str = "top"
    importance_batches: int | None = 20

    def __post_init__(self):
        from mtllib.analysis.importance import num_pruned

        num_pruned(self.alpha, 1_000_000)  # raises the standard error for alpha outside (0, 1]
        checks.number("IATConfig.delta", self.delta, 0, 1)
        checks.choice("IATConfig.heads", self.heads, HEAD_SELECTIONS)
        if self.importance_batches is not None:
            checks.integer("IATConfig.importance_batches", self.importance_batches, 1)

    def start_step(self, total_steps: int) -> int:
        """First (0-based) step trained under IAT: the last ``delta`` of ``total_steps``."""
        return total_steps - round(self.delta * total_steps)


def head_slices(model: nn.Module) -> list[tuple[nn.Parameter, int, int, int]]:
    """Every per-head parameter slice: ``(parameter, dim, layer, head)`` ranges are rows/columns
    ``head*d:(head+1)*d`` (offset for the Q/K/V parts of a fused projection) along ``dim``."""
    out = []
    for layer in attention_layers(model):
        d, heads, width = layer.head_dim, layer.num_heads, layer.head_dim * layer.num_heads
        entries = []  # (param, dim, offset)
        if layer.fused_qkv is not None:  # Conv1D weight [in, 3*width]: output columns q | k | v
            for part in range(3):
                entries.append((layer.fused_qkv.weight, 1, part * width))
                entries.append((layer.fused_qkv.bias, 0, part * width))
        else:
            for proj in (layer.query, layer.key, layer.value):  # Linear weight [out, in]: output rows
                entries.append((proj.weight, 0, 0))
                if proj.bias is not None:
                    entries.append((proj.bias, 0, 0))
        # W_O reads the heads' outputs: input columns (Linear [out, in]) or input rows (Conv1D [in, out])
        entries.append((layer.out_proj.weight, 0 if layer.conv1d else 1, 0))
        for param, dim, offset in entries:
            out.extend((param, dim, layer.index, h, offset + h * d, offset + (h + 1) * d) for h in range(heads))
    return out


class HeadUpdateMask:
    """Freezes, for one optimizer step, the parameter slices of the heads a task may not train."""

    def __init__(self, model: nn.Module, trainable_heads: dict[str, torch.Tensor]):
        """``trainable_heads[task]``: a boolean ``[L, H]`` mask, True = this task trains that head (M_i)."""
        self.slices = head_slices(model)
        self.params = list({id(p): p for p, *_ in self.slices}.values())
        self.frozen: dict[str, dict[int, torch.Tensor]] = {}
        for task, mask in trainable_heads.items():
            per_param = {id(p): torch.zeros_like(p, dtype=torch.bool) for p in self.params}
            for param, dim, layer, head, start, end in self.slices:
                if not bool(mask[layer, head]):
                    per_param[id(param)].narrow(dim, start, end - start).fill_(True)
            self.frozen[task] = {k: v for k, v in per_param.items() if v.any()}

    def zero_frozen_grads(self, task: str) -> None:
        """Call after ``backward()`` and before clipping: the frozen slices get no gradient."""
        for param in self.params:
            frozen = self.frozen[task].get(id(param))
            if frozen is not None and param.grad is not None:
                param.grad.masked_fill_(frozen.to(param.grad.device), 0.0)

    def step(self, task: str, optimizer: torch.optim.Optimizer) -> None:
        """``optimizer.step()`` that leaves the frozen slices (and their AdamW moments) exactly as they were."""
        frozen = self.frozen[task]
        if not frozen:
            optimizer.step()
            return
        saved = []
        for param in self.params:
            mask = frozen.get(id(param))
            if mask is None:
                continue
            state = optimizer.state.get(param, {})
            moments = {k: v.detach().clone() for k, v in state.items() if torch.is_tensor(v) and v.shape == param.shape}
            saved.append((param, mask.to(param.device), param.detach().clone(), moments))
        optimizer.step()
        with torch.no_grad():
            for param, mask, before, moments in saved:
                param.copy_(torch.where(mask, before, param))
                state = optimizer.state[param]
                for key, old in moments.items():
                    state[key].copy_(torch.where(mask, old, state[key]))
                for key, value in state.items():  # moments created by this very step start at zero
                    if key not in moments and torch.is_tensor(value) and value.shape == param.shape:
                        value.masked_fill_(mask, 0.0)

"""Head gates: the mask variables xi_h of Eq. 3 ("Interpreting and Exploiting Functional Specialization in
Multi-Head Attention under Multi-task Learning", Sec. 3.2), ``A~_h(X) = xi_h * A_h(X)``.

transformers 5 removed ``head_mask`` and ``prune_heads``, so we gate heads ourselves: a forward pre-hook on
each block's attention output projection W_O reshapes its input ``[B, T, H*d]`` to ``[B, T, H, d]`` and
multiplies head ``h`` by ``xi_h``. Because W_O is linear and its input is exactly the concatenation of the
heads' outputs, this is the same function as v4's ``head_mask`` on the attention probabilities
(``(xi P) V = xi (P V)``), and it works unchanged with eager and SDPA attention.

Gate values are either one per head, shape ``[L, H]``, or one per example and head, ``[B, L, H]`` (what the
importance score of Eq. 4 needs: ``d loss_b / d xi_{b,l,h}`` for every example ``b`` in one backward pass).

Use as a context manager; the hooks are removed on exit::

    with HeadGates(model, values) as gates:   # values: [L, H] or [B, L, H]; None = all ones
        out = model(**batch)
        gates.values = other_values            # may be swapped between forward passes
"""

from __future__ import annotations

import torch
from torch import nn

from mtllib.modeling.archs import attention_layers, num_layers_heads, base_model


class HeadGates:
    """Attach gates xi (Eq. 3) to every attention head of ``model``; see the module docstring."""

    def __init__(self, model: nn.Module, values: torch.Tensor | None = None):
        self.model = model
        self.layers = attention_layers(model)
        self.num_layers, self.num_heads = num_layers_heads(base_model(model))
        self.values = values
        self._handles: list = []

    # -- values ------------------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        return (self.num_layers, self.num_heads)

    @property
    def values(self) -> torch.Tensor | None:
        return self._values

    @values.setter
    def values(self, values: torch.Tensor | None) -> None:
        if values is not None:
            if not isinstance(values, torch.Tensor):
                values = torch.as_tensor(values, dtype=torch.float32)
            if values.dim() not in (2, 3) or tuple(values.shape[-2:]) != self.shape:
                raise ValueError(f"gate values must have shape [L, H] = {list(self.shape)} or [B, L, H]; got {list(values.shape)}")
        self._values = values
        # all ones and no gradient wanted: skip the multiplication altogether (it would change nothing)
        self._identity = values is None or (not values.requires_grad and bool((values == 1).all()))

    # -- hooks -------------------------------------------------------------------------------------------
    def _hook(self, layer_index: int):
        num_heads = self.num_heads

        def pre_hook(module, args):
            if self._identity:
                return None  # all gates at 1: the module sees its input untouched
            values = self._values
            (x, *rest) = args
            batch, seq, width = x.shape
            gate = values[..., layer_index, :].to(dtype=x.dtype, device=x.device)  # [H] or [B, H]
            if gate.dim() == 2 and gate.shape[0] != batch:
                raise ValueError(f"per-example gates are for {gate.shape[0]} examples but the batch has {batch}")
            gate = gate.reshape(-1, 1, num_heads, 1)  # broadcast over time and head dimension
            gated = (x.view(batch, seq, num_heads, width // num_heads) * gate).view(batch, seq, width)
            return (gated, *rest)

        return pre_hook

    def attach(self) -> "HeadGates":
        if self._handles:
            raise RuntimeError("gates are already attached")
        self._handles = [layer.out_proj.register_forward_pre_hook(self._hook(layer.index)) for layer in self.layers]
        return self

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()
        self._handles = []

    def __enter__(self) -> "HeadGates":
        return self.attach()

    def __exit__(self, *exc) -> None:
        self.remove()


def ones(model: nn.Module, batch_size: int | None = None, device=None, requires_grad: bool = False) -> torch.Tensor:
    """All-ones gate values ``[L, H]`` (or ``[B, L, H]``) for ``model``."""
    num_layers, num_heads = num_layers_heads(base_model(model))
    shape = (num_layers, num_heads) if batch_size is None else (batch_size, num_layers, num_heads)
    return torch.ones(shape, device=device, requires_grad=requires_grad)

"""What every adaptation method shares: where a block's output LayerNorm lives, which task each example
belongs to, and the hooks that attach a method to a pretrained encoder and detach it again.

The within-layer methods of "BERT and PALs" (Sec. 3.3) act on a transformer block

    h_{l+1} = LN(a + FFN(a) + TS(h_l)),   a = LN(h_l + MH(h_l))          (parallel)

where ``TS`` is a task-specific function of the block's input ``h_l`` added to the residual sum that the
block's *output* LayerNorm normalises (the paper writes the layer as ``LN(h + SA(h) + TS(h))``). ``serial``
applies ``TS`` after the block instead: ``h_{l+1} = y + TS(y)`` with ``y`` the block's output. Both are done
with PyTorch hooks on the blocks and output LayerNorms that :data:`OUTPUT_NORM` names, so no model code is
copied and :meth:`Attached.detach` leaves the encoder exactly as it was.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import torch
from torch import nn

from mtllib.modeling.archs import ARCHS, base_model, spec_for

#: model_type -> the output LayerNorm inside one block (post-LN encoders; the residual sum of the block's
#: feed-forward sub-layer goes in, the block's output comes out). GPT-2 normalises *before* each sub-layer
#: and has no such LayerNorm, so within-layer adapters do not attach to it.
OUTPUT_NORM: dict[str, str] = {
    "bert": "output.LayerNorm",
    "roberta": "output.LayerNorm",
    "xlm-roberta": "output.LayerNorm",
    "deberta-v2": "output.LayerNorm",
    "mpnet": "output.LayerNorm",
    "distilbert": "output_layer_norm",
    "openai-gpt": "ln_2",
}
assert set(OUTPUT_NORM) <= set(ARCHS)

PLACEMENTS = ("all", "final_half", "top")
CONNECTIONS = ("parallel", "serial")


class AdapterError(ValueError):
    """A method, size, placement or task that an adapter cannot be built with."""


def blocks(encoder: nn.Module) -> nn.ModuleList:
    """The encoder's transformer blocks (the architecture table's ``layers`` path)."""
    base = base_model(encoder)
    return base.get_submodule(spec_for(base).layers)


def output_norm(encoder: nn.Module, block: nn.Module) -> nn.Module:
    """The output LayerNorm of ``block``; one clear error for architectures without one."""
    model_type = base_model(encoder).config.model_type
    if model_type not in OUTPUT_NORM:
        raise AdapterError(f"within-layer adapters need a post-LN block; {model_type!r} has none. "
                           f"Supported: {', '.join(OUTPUT_NORM)}")
    return block.get_submodule(OUTPUT_NORM[model_type])


def placed_layers(placement, num_layers: int) -> list[int]:
    """Which blocks a placement adapts (Sec. 5.2): ``"all"``, ``"final_half"`` (the top ``L // 2``),
    ``"top"`` (the last block) or an explicit list of block indices."""
    if isinstance(placement, str):
        if placement == "all":
            return list(range(num_layers))
        if placement == "final_half":
            return list(range(num_layers - num_layers // 2, num_layers))
        if placement == "top":
            return [num_layers - 1]
        raise AdapterError(f"unknown placement {placement!r}; choose one of {', '.join(PLACEMENTS)} or a list of layer indices")
    layers = list(placement)
    bad = [i for i in layers if not isinstance(i, int) or isinstance(i, bool) or not 0 <= i < num_layers]
    if not layers or bad or len(set(layers)) != len(layers):
        raise AdapterError(f"placement {placement!r} must name distinct layers in [0, {num_layers}) (the model has {num_layers} blocks)")
    return sorted(layers)


@dataclass
class Router:
    """The task of each example of the batch being computed: ``task`` (one name for the whole batch) or
    ``task_ids`` (``[B]`` indices into ``tasks``, a heterogeneous batch), and the batch's padding mask."""

    tasks: list[str]
    task: str | None = None
    task_ids: torch.Tensor | None = None
    attention_mask: torch.Tensor | None = None

    def set(self, task=None, task_ids=None, attention_mask=None) -> None:
        if (task is None) == (task_ids is None):
            raise AdapterError("an adapted model needs the batch's task: exactly one of `task` or `task_ids`")
        if task is not None and task not in self.tasks:
            raise AdapterError(f"no adapter for task {task!r}; adapters exist for: {', '.join(self.tasks)}")
        self.task, self.task_ids, self.attention_mask = task, task_ids, attention_mask

    def groups(self, batch_size: int, device) -> list[tuple[str, torch.Tensor | None]]:
        """``[(task, rows)]``; ``rows`` is ``None`` when the whole batch is one task."""
        if self.task is None and self.task_ids is None:
            raise AdapterError("the adapted encoder was called without a task: call it through the multi-task model "
                               "(task=... or task_ids=...) or inside `attached.route(task=...)`")
        if self.task is not None:
            return [(self.task, None)]
        ids = self.task_ids.to(device)
        return [(name, rows) for i, name in enumerate(self.tasks) if len(rows := (ids == i).nonzero(as_tuple=True)[0])]

    def mask(self, rows):
        if self.attention_mask is None:
            return None
        return self.attention_mask if rows is None else self.attention_mask[rows]


def per_task(router: Router, modules: nn.ModuleDict, x: torch.Tensor, *args) -> torch.Tensor:
    """``modules[task](x_rows, mask_rows, *args)`` for each task's rows of ``x``, in the batch's order."""
    groups = router.groups(x.shape[0], x.device)
    if len(groups) == 1 and groups[0][1] is None:
        task = groups[0][0]
        return modules[task](x, router.mask(None), *args)
    out = torch.zeros_like(x)
    for task, rows in groups:
        out[rows] = modules[task](x[rows], router.mask(rows), *args).to(out.dtype)
    return out


@dataclass
class Attached:
    """An adaptation method attached to a model: its parameters (``module``, registered on the model as
    ``model.adapters`` so optimisers and checkpoints see them), its router and its hooks."""

    model: nn.Module
    module: nn.Module
    router: Router
    handles: list = field(default_factory=list)

    def detach(self) -> None:
        """Remove every hook and the adapter parameters; the model computes exactly what it did before."""
        for h in self.handles:
            h.remove()
        self.handles.clear()
        if getattr(self.model, "adapters", None) is self.module:
            del self.model.adapters
        config = base_model(self.model.encoder if hasattr(self.model, "heads") else self.model).config
        if hasattr(config, "mtllib_adapter"):
            del config.mtllib_adapter

    @contextlib.contextmanager
    def route(self, task=None, task_ids=None, attention_mask=None):
        """Run a bare encoder (not through a multi-task model) with the adapters of ``task`` / ``task_ids``."""
        self.router.set(task, task_ids, attention_mask)
        try:
            yield self
        finally:
            self.router.task = self.router.task_ids = self.router.attention_mask = None


def first_tensor(args, kwargs, names=("hidden_states", "x")) -> torch.Tensor:
    """A block's input hidden states, whether passed by position or by name."""
    if args:
        return args[0]
    for n in names:
        if n in kwargs:
            return kwargs[n]
    raise RuntimeError("could not find the block's input hidden states among its arguments")

"""Adaptation modules of "BERT and PALs" (Stickland & Murray, 2019): task-specific parameters attached to a
shared pretrained encoder, one file per method, all attached through hooks found via the architecture table.

=============  =========================================================  =====================  ===========
method         what each task adds                                        paper                  default d_s
=============  =========================================================  =====================  ===========
``pals``       projected attention in parallel with each adapted layer   Sec. 3.3, Table 1      204
``low_rank``   ``V_D V_E h`` in parallel with each adapted layer          Sec. 3.3, Table 1      100
``lhuc``       a learned scale ``2 sigmoid(r)`` of each hidden unit       Sec. 2.1, 5.1          --
``top_pals``   ``k`` projected-attention layers on top (k = 6)            Sec. 3.2, Table 1      204
``top_layer``  a whole transformer layer on top                           Sec. 3.2, Table 1      --
``shared``     nothing: the fully shared baseline (task heads only)       Table 2                --
``separate``   a whole encoder per task (separately fine-tuned models)    Table 2                --
=============  =========================================================  =====================  ===========

:func:`attach` adds a method to a :class:`~mtllib.modeling.multitask.MultiTaskModel` (or a bare encoder),
registers its parameters as ``model.adapters`` and returns an :class:`Attached` whose ``detach()`` removes it
without a trace; the task of each batch (``task=``) or of each example (``task_ids=``, heterogeneous batches)
picks the adapter. :func:`parameter_multiplier` is Table 1's accounting. ``shared`` and ``separate`` are
baselines built by how models are trained, not attachable modules.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from torch import nn

from mtllib.fingerprint import source_digest
from mtllib.modeling.adapters import lhuc, low_rank, pals, top
from mtllib.modeling.adapters.base import (CONNECTIONS, PLACEMENTS, AdapterError, Attached, Router, blocks, first_tensor,
                                           output_norm, per_task, placed_layers)
from mtllib.modeling.archs import base_model

WITHIN = ("pals", "low_rank", "lhuc")
TOP = ("top_pals", "top_layer")
BASELINES = ("shared", "separate")
METHODS = (*WITHIN, *TOP, *BASELINES)
DEFAULT_SIZE = {"pals": 204, "low_rank": 100, "top_pals": 204}
INITS = ("bert", "zero")

__all__ = ["AdapterConfig", "AdapterError", "Attached", "METHODS", "attach", "added_parameters", "parameter_multiplier"]


@dataclass(frozen=True)
class AdapterConfig:
    """One adaptation method and its sizes ("BERT and PALs": d_s of Sec. 3.3, placement and connection of
    Sec. 5.2, 12 attention heads of Sec. 4.2, six top layers of Table 1)."""

    method: str
    size: int | None = None  #: d_s; ``None``: the paper's value for BERT-base (:data:`DEFAULT_SIZE`)
    heads: int = 12  #: attention heads of PALs / top PALs
    placement: str | tuple = "all"  #: ``all``, ``final_half``, ``top`` or layer indices (within-layer methods)
    connection: str = "parallel"  #: ``parallel`` or ``serial`` (PALs and low-rank)
    top_layers: int = 6  #: k of ``top_pals``
    init: str = "bert"  #: ``bert``: N(0, 0.02) everywhere; ``zero``: ``V_D = 0``, the adapter starts as the identity

    @property
    def d_s(self) -> int | None:
        return self.size if self.size is not None else DEFAULT_SIZE.get(self.method)

    def check(self, config) -> list[int]:
        """Validate against an encoder config; the adapted layer indices (empty for top methods)."""
        if self.method not in METHODS:
            raise AdapterError(f"unknown adaptation method {self.method!r}; choose one of {', '.join(METHODS)}")
        if self.init not in INITS:
            raise AdapterError(f"unknown init {self.init!r}; choose one of {', '.join(INITS)}")
        if self.connection not in CONNECTIONS:
            raise AdapterError(f"unknown connection {self.connection!r}; choose one of {', '.join(CONNECTIONS)}")
        if self.connection == "serial" and self.method not in ("pals", "low_rank"):
            raise AdapterError(f"a serial connection applies to pals and low_rank, not {self.method!r}")
        d_s = self.d_s
        if self.method in DEFAULT_SIZE:
            if not isinstance(d_s, int) or isinstance(d_s, bool) or d_s < 1:
                raise AdapterError(f"{self.method}: size (d_s) must be a positive integer, got {d_s!r}")
        if self.method in ("pals", "top_pals"):
            if not isinstance(self.heads, int) or self.heads < 1 or d_s < self.heads or d_s % self.heads:
                raise AdapterError(f"{self.method}: d_s={d_s} must be a multiple of heads={self.heads} (and at least that many)")
        if self.method == "top_pals" and (not isinstance(self.top_layers, int) or self.top_layers < 1):
            raise AdapterError(f"top_pals: top_layers must be a positive integer, got {self.top_layers!r}")
        if self.method in WITHIN:
            return placed_layers(self.placement, int(config.num_hidden_layers))
        return []


def _ffn(config) -> int:
    for name in ("intermediate_size", "hidden_dim", "n_inner"):
        if getattr(config, name, None):
            return int(getattr(config, name))
    return 4 * int(config.hidden_size)


def _task_module(config, cfg: AdapterConfig, layers: list[int]) -> nn.Module:
    d_model = int(config.hidden_size)
    kw = dict(d_model=d_model, layers=layers, size=cfg.d_s, heads=cfg.heads, top_layers=cfg.top_layers, init=cfg.init,
              encoder_heads=int(config.num_attention_heads), ffn=_ffn(config),
              dropout=float(getattr(config, "hidden_dropout_prob", getattr(config, "dropout", 0.1)) or 0.0))
    return {"pals": pals.build, "low_rank": low_rank.build, "lhuc": lhuc.build,
            "top_pals": top.build_pals, "top_layer": top.build_layer}[cfg.method](**kw)


def _count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def added_parameters(config, adapter: AdapterConfig) -> int:
    """Parameters one task adds to an encoder of ``config`` (0 for ``shared``; a whole encoder for ``separate``)."""
    layers = adapter.check(config)
    if adapter.method == "shared":
        return 0
    with torch.device("meta"):
        if adapter.method == "separate":
            from transformers import AutoModel

            return _count(AutoModel.from_config(config))
        return _count(_task_module(config, adapter, layers))


def parameter_multiplier(config, method: str, num_tasks: int, **sizes) -> float:
    """Table 1 of "BERT and PALs": parameters of the multi-task model (the shared encoder plus every task's
    added parameters; output heads excluded) divided by those of the encoder alone. ``sizes``: the
    :class:`AdapterConfig` fields (``size``, ``heads``, ``placement``, ``top_layers``)."""
    if not isinstance(num_tasks, int) or num_tasks < 1:
        raise AdapterError(f"num_tasks must be a positive integer, got {num_tasks!r}")
    adapter = AdapterConfig(method, **sizes)
    extra = added_parameters(config, adapter)
    encoder = added_parameters(config, AdapterConfig("separate"))
    if method == "separate":
        return float(num_tasks)
    return (encoder + num_tasks * extra) / encoder


def attach(model: nn.Module, adapter: AdapterConfig, tasks: list[str] | None = None) -> Attached:
    """Attach ``adapter`` for ``tasks`` (default: the multi-task model's tasks) to ``model`` (a
    :class:`~mtllib.modeling.multitask.MultiTaskModel` or a bare encoder). Everything is checked before the
    model is touched."""
    from mtllib.modeling.multitask import MultiTaskModel

    multitask = isinstance(model, MultiTaskModel)
    encoder = model.encoder if multitask else model
    config = base_model(encoder).config
    layers = adapter.check(config)
    if adapter.method in BASELINES:
        raise AdapterError(f"{adapter.method!r} is a baseline built by training (no module to attach); attach one of "
                           f"{', '.join(WITHIN + TOP)}")
    model_tasks = list(model.tasks) if multitask else []
    if tasks is None:
        if not model_tasks:
            raise AdapterError("name the tasks to adapt: a bare encoder has no task list")
        tasks = model_tasks
    tasks = list(tasks)
    if not tasks or len(set(tasks)) != len(tasks):
        raise AdapterError(f"tasks must be a non-empty list of distinct names, got {tasks!r}")
    unknown = [t for t in tasks if model_tasks and t not in model_tasks]
    if unknown:
        raise AdapterError(f"the model has no task(s) {unknown}; its tasks are: {', '.join(model_tasks)}")
    if model_tasks and tasks != model_tasks:
        raise AdapterError(f"adapt every task of the model, in its order ({', '.join(model_tasks)}): "
                           "task_ids index that list")
    if getattr(model, "adapters", None) is not None:
        raise AdapterError("the model already has adapters attached: detach them first")
    stack = blocks(encoder)
    norms = {i: output_norm(encoder, stack[i]) for i in layers} if adapter.method in WITHIN else {}

    module = nn.ModuleDict({t: _task_module(config, adapter, layers) for t in tasks})
    device = next(encoder.parameters()).device
    module.to(device).train(model.training)
    router = Router(tasks)
    attached = Attached(model, module, router)
    model.adapters = module
    hooks = attached.handles

    if adapter.method in ("pals", "low_rank") and adapter.connection == "parallel":
        inputs: dict[int, torch.Tensor] = {}
        for i in layers:
            def keep(_, args, kwargs, i=i):
                inputs[i] = first_tensor(args, kwargs)

            def add(_, args, i=i):
                h = inputs.pop(i)
                return (args[0] + per_task(router, module, h, i).to(args[0].dtype), *args[1:])

            hooks.append(stack[i].register_forward_pre_hook(keep, with_kwargs=True))
            hooks.append(norms[i].register_forward_pre_hook(add))
    elif adapter.method in ("pals", "low_rank"):  # serial: TS reads the block's output
        for i in layers:
            hooks.append(norms[i].register_forward_hook(lambda _, __, y, i=i: y + per_task(router, module, y, i).to(y.dtype)))
    elif adapter.method == "lhuc":
        for i in layers:
            hooks.append(norms[i].register_forward_hook(lambda _, __, y, i=i: per_task(router, module, y, i)))
    else:  # top methods transform the encoder's final hidden states
        def on_top(_, __, output):
            output.last_hidden_state = per_task(router, module, output.last_hidden_state)
            return output

        hooks.append(encoder.register_forward_hook(on_top))

    if multitask:  # a multi-task model names each batch's task(s)
        def route(_, args, kwargs):
            mask = kwargs.get("attention_mask")
            if mask is not None and mask.dim() == 3:  # a multiple-choice batch: the encoder reads [B * C, T]
                mask = mask.flatten(0, 1)
            router.set(kwargs.get("task"), kwargs.get("task_ids"), mask)

        def clear(*_):
            router.task = router.task_ids = router.attention_mask = None

        hooks.append(model.register_forward_pre_hook(route, with_kwargs=True))
        hooks.append(model.register_forward_hook(clear))
    # recorded in the encoder's config: checkpoints and the model cache's key tell adapted models apart
    config.mtllib_adapter = {**dataclasses.asdict(adapter), "tasks": tasks, "code": source_digest(["mtllib.modeling.adapters"])}
    return attached


def size_for_budget(config, method: str, multiplier: float, num_tasks: int, **sizes) -> int:
    """The largest d_s (a multiple of ``heads`` for the attention methods) whose
    :func:`parameter_multiplier` stays within ``multiplier``: the paper's budget (1.13x with 8 tasks, Table 1)
    carried over to another encoder."""
    if method not in DEFAULT_SIZE:
        raise AdapterError(f"{method!r} has no size d_s to choose; methods with one: {', '.join(DEFAULT_SIZE)}")
    step = sizes.get("heads", AdapterConfig(method).heads) if method in ("pals", "top_pals") else 1
    if parameter_multiplier(config, method, num_tasks, **{**sizes, "size": step}) > multiplier:
        raise AdapterError(f"even d_s={step} exceeds a {multiplier}x budget for {num_tasks} tasks")
    size = step
    while parameter_multiplier(config, method, num_tasks, **{**sizes, "size": size + step}) <= multiplier:
        size += step
    return size

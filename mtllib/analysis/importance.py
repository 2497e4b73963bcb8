"""Head importance (Eq. 4) and the pruning masks of Important Attention-head Pruning (IAP, Sec. 4.1) of
"Interpreting and Exploiting Functional Specialization in Multi-Head Attention under Multi-task Learning".

Eq. 4, after Michel et al. (2019)::

    I_h = E_{(x, y) ~ D} | d L(x, y) / d xi_h |

The expectation is over *examples*, and the absolute value is taken per example. We attach one gate per
example and head (``[B, L, H]``, all ones), run one forward and one backward pass per batch for all heads
together, and read ``d L_b / d xi_{b,l,h}`` for every example ``b`` at once: the batch loss is the *sum* of
per-example losses, and example ``b``'s gates affect only example ``b``'s loss. (Michel et al.'s
``run_bertology`` takes the absolute value of the gradient of a whole batch's loss, ``|sum_b dL_b/dxi|``, which
is not ``E|.|``: opposite signs cancel. :func:`head_importance` returns the former; the tests show the two
differ.)

Gradients are taken with ``torch.autograd.grad`` with respect to the gates only: the model's parameters'
``.grad`` are neither read nor written, so nothing leaks into a following optimizer step. The model runs
in eval mode (no dropout) and its previous mode is restored afterwards. Following the paper, compute it on
the *training* split.

Normalisation: none by default (the paper's Eq. 4 has none). ``normalize="layer"`` divides each layer's
scores by their L2 norm, as Michel et al. do before pruning across layers; it changes which heads are ranked
top across layers, so say which one you used.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import torch
from torch import nn
from tqdm.auto import tqdm

from mtllib.modeling.gates import HeadGates, ones
from mtllib.runtime import to_device

NORMALIZATIONS = (None, "layer")
SELECTIONS = ("top", "bottom", "random")


def _batch_size(batch: dict) -> int:
    return batch["input_ids"].shape[0]


def head_importance(
    model: nn.Module,
    data: Iterable[dict] | Mapping[str, Iterable[dict]],
    normalize: str | None = None,
    device: torch.device | str | None = None,
    progress: bool = True,
) -> torch.Tensor | dict[str, torch.Tensor]:
    """Eq. 4: mean over examples of ``|dL/dxi_h|``, an ``[L, H]`` tensor (float64 on the CPU).

    ``data`` is an iterable of batches (dicts the model accepts, with labels), or a mapping
    ``{task: batches}``, in which case a dict ``{task: [L, H]}`` is returned (one score per task, as IAP needs).
    ``model(**batch)`` must return an object with ``per_example_loss`` (:class:`mtllib.modeling.multitask.MultiTaskOutput`).
    """
    if normalize not in NORMALIZATIONS:
        raise ValueError(f"normalize must be one of {NORMALIZATIONS}, got {normalize!r}")
    if isinstance(data, Mapping):
        return {task: head_importance(model, batches, normalize, device, progress) for task, batches in data.items()}
    if device is None:
        device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    total, count = None, 0
    try:
        with HeadGates(model) as gates:
            for batch in tqdm(data, desc="head importance", unit="batch", disable=not progress, leave=False):
                batch = to_device(batch, device)
                xi = ones(model, _batch_size(batch), device=device, requires_grad=True)
                gates.values = xi
                out = model(**batch)
                if out.per_example_loss is None:
                    raise ValueError("head importance needs labelled batches (the model returned no loss)")
                (grad,) = torch.autograd.grad(out.per_example_loss.sum(), xi)
                summed = grad.abs().sum(dim=0).double().cpu()
                total = summed if total is None else total + summed
                count += grad.shape[0]
    finally:
        model.train(was_training)
    if count == 0:
        raise ValueError("head importance needs at least one batch")
    importance = total / count
    if normalize == "layer":
        importance = importance / importance.norm(dim=-1, keepdim=True).clamp(min=1e-20)
    return importance


def num_pruned(alpha: float, num_heads_total: int) -> int:
    """``round(alpha * L * H)``, rounded half up; ``alpha`` must lie in (0, 1]."""
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not (0 < alpha <= 1):
        raise ValueError(f"alpha must be a fraction of heads in (0, 1], got {alpha!r}")
    n = math.floor(alpha * num_heads_total + 0.5)
    if n == 0:
        raise ValueError(f"alpha={alpha} selects no head out of {num_heads_total}; use alpha >= {0.5 / num_heads_total:.3g}")
    return n


def select_heads(importance: torch.Tensor, alpha: float, which: str = "top", seed: int | None = None) -> torch.Tensor:
    """Boolean ``[L, H]`` mask of the selected heads (True = selected, e.g. to prune).

    ``which="top"``: the ``round(alpha*L*H)`` most important heads (IAP, the paper's H_i^alpha);
    ``"bottom"``: the least important (the ablation of Michel et al.); ``"random"``: a random set of the same
    size drawn with ``seed`` (the Random row of Table 3). Ties are broken by the heads' flat index
    (layer-major), lower first, so the result never depends on sort internals.
    """
    if which not in SELECTIONS:
        raise ValueError(f"which must be one of {SELECTIONS}, got {which!r}")
    if importance.dim() != 2:
        raise ValueError(f"importance must be an [L, H] tensor, got shape {list(importance.shape)}")
    n = num_pruned(alpha, importance.numel())
    flat = importance.detach().flatten().double().cpu()
    if not torch.isfinite(flat).all():  # NaN would sort as the largest value and be "most important"
        bad = [divmod(int(i), importance.shape[1]) for i in torch.nonzero(~torch.isfinite(flat)).flatten()[:5]]
        raise ValueError(f"importance has NaN or infinite scores at (layer, head) {bad}: a diverged model or an empty batch?")
    if which == "random":
        if seed is None:
            raise ValueError("which='random' needs a seed")
        order = torch.randperm(flat.numel(), generator=torch.Generator().manual_seed(seed))
    else:
        order = torch.argsort(flat, descending=(which == "top"), stable=True)
    mask = torch.zeros(flat.numel(), dtype=torch.bool)
    mask[order[:n]] = True
    return mask.view_as(importance)


def gates_from_mask(pruned: torch.Tensor) -> torch.Tensor:
    """Gate values for :class:`mtllib.modeling.gates.HeadGates`: 0 for pruned heads, 1 for the rest (no weight surgery)."""
    return (~pruned.bool()).float()

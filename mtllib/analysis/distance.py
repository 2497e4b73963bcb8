"""How far one model's weights are from another's: whether two models that a chapter compares differ at all.

A comparison of two training variants (IAT against the multi-task baseline, main paper Sec. 4.2; their few-shot
transfer, Sec. 6.3) can only show a difference that the variants' weights carry. When a variant trains a few
steps at a small learning rate from the other's checkpoint, its weights stay within a rounding distance of
the other's, and equal scores are then what one should expect, not a sign of a bug.
"""

from __future__ import annotations

import math


def parameter_distance(model, reference) -> dict:
    """``model`` against ``reference`` (two ``torch.nn.Module`` with the same parameter names and shapes):
    ``max_abs`` (the largest absolute difference of any weight), ``relative_l2`` (the L2 norm of the difference
    of all parameters over the L2 norm of ``reference``'s) and ``changed`` (the share of weights that differ at
    all). Buffers are not compared."""
    import torch

    theirs = dict(reference.named_parameters())
    ours = dict(model.named_parameters())
    if ours.keys() != theirs.keys():
        missing, extra = sorted(theirs.keys() - ours.keys()), sorted(ours.keys() - theirs.keys())
        raise ValueError(f"the models have different parameters (missing: {missing[:3]}, extra: {extra[:3]})")
    diff_sq = ref_sq = 0.0
    max_abs = 0.0
    changed = total = 0
    with torch.no_grad():
        for name, p in ours.items():
            q = theirs[name]
            if p.shape != q.shape:
                raise ValueError(f"parameter {name!r} has shape {tuple(p.shape)} here and {tuple(q.shape)} in the reference")
            ref = q.detach().double().cpu()
            d = p.detach().double().cpu() - ref
            diff_sq += float((d * d).sum())
            ref_sq += float((ref * ref).sum())
            max_abs = max(max_abs, float(d.abs().max()) if d.numel() else 0.0)
            changed += int((d != 0).sum())
            total += d.numel()
    return {"max_abs": max_abs, "relative_l2": math.sqrt(diff_sq) / math.sqrt(ref_sq) if ref_sq else math.nan,
            "changed": changed / total if total else math.nan}

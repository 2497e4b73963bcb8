"""Estimates of what jobs cost, for plans only: kept out of every job's key (an estimate decides no number)."""

from __future__ import annotations

#: training examples per second on 2 CPU cores (all-MiniLM-L6-v2, batch 32, up to 128 tokens, fp32), for plans
#: that have no stored run of the experiment to scale from
EXAMPLES_PER_SECOND = 35.0


def multitask_work(spec: dict) -> float:
    """Training examples times epochs times tokens per example: what a plan scales stored run times by."""
    from mtllib.data.features import per_task

    sizes = [per_task(spec["max_train"], t) for t in spec["tasks"]]
    if any(s is None for s in sizes):
        raise ValueError("a task at its full size: its number of examples is not known before it is loaded")
    return float(sum(sizes) * spec["epochs"] * spec["max_length"])


def multitask_minutes(spec: dict) -> float | None:
    try:
        return multitask_work(spec) / spec["max_length"] / EXAMPLES_PER_SECOND / 60
    except ValueError:
        return None


def surface_minutes(spec: dict) -> float:
    return 0.2


def iap_minutes(spec: dict) -> float:
    return 2.0

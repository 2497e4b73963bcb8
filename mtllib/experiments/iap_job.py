"""The IAP analysis of one trained multi-task model as a job (main paper, Sec. 4.1; Eq. 4 and Table 3): head
importance per task on its training batches, each task's top-alpha heads pruned in turn (and random sets of
the same size), every task scored on test.

It needs the ``multitask`` job of its model (``model``: that job's spec) and reads the trained weights through
:meth:`mtllib.experiments.jobs.Context.weights`. Its result: ``perf`` (the Table 3 layout in long form: pruned
row, evaluated task, score), ``importance`` and ``masks`` (task, layer, head), and ``correct`` (per-example test
correctness of the accuracy-scored tasks, for bootstraps over examples).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from mtllib import checks
from mtllib.experiments import costs, jobs

DEFAULTS = {"model": {}, "alpha": 0.3, "n_random": 3, "importance_batches": 20}


def _model_job(spec: dict) -> jobs.Job:
    return jobs.Job("multitask", **spec["model"])


def check(spec: dict) -> None:
    from mtllib.analysis.importance import num_pruned

    if not isinstance(spec["model"], dict):
        raise checks.BadInput(f"model must be the spec of a multitask job (a mapping), got {spec['model']!r}")
    model = _model_job(spec)  # its own checks: tasks, sizes, training fields
    if len(model.spec["tasks"]) < 2:
        raise checks.BadInput(f"IAP compares tasks: the model must train at least two, got {model.spec['tasks']}")
    checks.number("alpha", spec["alpha"], 0, 1, low_open=True)
    num_pruned(spec["alpha"], 1_000_000)
    checks.integer("n_random", spec["n_random"], 0)
    checks.optional(checks.integer)("importance_batches", spec["importance_batches"], 1)


def _grid(frames: dict, value: str) -> pd.DataFrame:
    rows = []
    for task, grid in frames.items():
        array = np.asarray(grid.detach().cpu().numpy() if hasattr(grid, "detach") else grid)
        for (layer, head), v in np.ndenumerate(array):
            rows.append({"task": task, "layer": layer, "head": head, value: v.item()})
    return pd.DataFrame(rows)


def compute(spec: dict, inputs: dict, context: jobs.Context) -> jobs.Output:
    from mtllib.analysis.importance import select_heads
    from mtllib.experiments import multitask
    from mtllib.experiments.iap import pruning_table
    from mtllib.runtime import pick_device
    from mtllib.training.trainer import task_importance

    model_spec = _model_job(spec).spec
    _, data = multitask.prepared(model_spec)
    model = multitask.build(model_spec, data)
    model.load_state_dict(context.weights("model"))
    device = pick_device(context.device)
    model.to(device).eval()
    seed = model_spec["seed"]
    importance = task_importance(model, data, model_spec["batch_size"], seed, spec["importance_batches"], device, context.progress)
    masks = {n: select_heads(imp, spec["alpha"], "top") for n, imp in importance.items()}
    some = next(iter(importance.values()))
    random_masks = [select_heads(some, spec["alpha"], "random", seed=seed * 100 + r) for r in range(spec["n_random"])]
    correct: dict = {}
    perf = pruning_table(model, data, masks, random_masks, split="test", device=device, correct=correct)
    long = perf.stack().rename("score").reset_index()
    hits = pd.DataFrame([{"pruned": row, "task": task, "example": i, "correct": float(v)}
                         for row, per_task in correct.items() for task, values in per_task.items() for i, v in enumerate(values)])
    return jobs.Output(tables={"perf": long, "importance": _grid(importance, "importance"), "masks": _grid(masks, "pruned"), "correct": hits},
                       values={"tasks": list(model_spec["tasks"])})


EXPERIMENT = jobs.register(jobs.Experiment(
    name="iap", compute=compute, defaults=DEFAULTS, check=check, needs=lambda spec: {"model": _model_job(spec)},
    minutes=costs.iap_minutes, code=("mtllib.experiments.iap_job",), exclude=("mtllib.experiments.jobs", "mtllib.experiments.costs"),
))

"""Surface baselines of one task as a job (:mod:`mtllib.analysis.surface`): fit on the training split the
models of a chapter get (same split seed and sizes), scored on its validation and test splits."""

from __future__ import annotations

from mtllib import checks
from mtllib.experiments import costs, jobs

DEFAULTS = {"task": "bbc-topic", "split_seed": 0, "max_train": None, "max_eval": None}


def check(spec: dict) -> None:
    from mtllib.data.tasks import UnknownTask, get_task

    try:
        get_task(checks.text("task", spec["task"]))
    except UnknownTask as err:
        raise checks.BadInput(err.args[0]) from None
    for size in ("max_train", "max_eval"):
        checks.optional(checks.integer)(size, spec[size], 1)
    checks.integer("split_seed", spec["split_seed"], 0)


def compute(spec: dict, inputs: dict, context: jobs.Context) -> jobs.Output:
    from mtllib.analysis import surface
    from mtllib.data.tasks import get_task, load_task

    task = get_task(spec["task"])
    splits = load_task(task.name, seed=spec["split_seed"], max_train=spec["max_train"], max_eval=spec["max_eval"])
    table = surface.baselines(task, {s: splits[s] for s in ("train", "validation", "test")}, seed=0)
    return jobs.Output(tables={"baselines": table}, values={"examples": {s: len(splits[s]) for s in splits}})


EXPERIMENT = jobs.register(jobs.Experiment(
    name="surface-baselines", compute=compute, defaults=DEFAULTS, check=check, minutes=costs.surface_minutes,
    code=("mtllib.experiments.surface_baselines",), exclude=("mtllib.experiments.jobs", "mtllib.experiments.costs"),
))

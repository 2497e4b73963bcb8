"""Toy experiments for the job tests: cheap, deterministic, counting their computations in a file."""

import time
from pathlib import Path

import pandas as pd
import torch

from mtllib import checks
from mtllib.experiments import jobs


def _count(spec):
    if spec["counter"]:
        with open(spec["counter"], "a") as f:
            f.write(f"{spec['value']}\n")


def base(spec, inputs, context):
    _count(spec)
    time.sleep(spec["sleep"])
    if spec["fail"]:
        raise RuntimeError("this toy job fails on purpose")
    return jobs.Output(tables={"numbers": pd.DataFrame({"x": [spec["value"], 2 * spec["value"]]})}, values={"value": spec["value"]},
                       state={"w": torch.tensor([float(spec["value"])])})


def branch(spec, inputs, context):
    weights = context.weights("base")
    _count(spec)
    total = float(inputs["base"].tables["numbers"].x.sum()) + float(weights["w"].item())
    return jobs.Output(tables={"sums": pd.DataFrame({"total": [total]})})


def _check(spec):
    checks.integer("value", spec["value"], 0)


BASE = jobs.register(jobs.Experiment("toy", base, {"value": 1, "sleep": 0.0, "fail": False, "counter": ""}, code=("mtllib.analysis.stats",),
                                     check=_check, minutes=lambda spec: 0.5))
BRANCH = jobs.register(jobs.Experiment("toy-branch", branch, {"value": 1, "counter": ""}, code=("mtllib.analysis.stats",),
                                       needs=lambda spec: {"base": jobs.Job("toy", value=spec["value"], counter=spec["counter"])}))


def counts(path: Path) -> list[int]:
    return [int(line) for line in Path(path).read_text().split()] if Path(path).exists() else []

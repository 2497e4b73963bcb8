"""The multi-task experiment as a job: one model with one head per task, trained on all of them together
(main paper, Sec. 3; BERT and PALs, Sec. 4) and scored on validation and test.

Its result: ``scores`` (one row per split and task, every metric in percent), ``predictions`` (one row per
example of validation and test: prediction and reference, for bootstraps and manipulation checks) and the
training curves ``history`` (per epoch and task) and ``steps`` (per step: task, loss, learning rate). Its
weights go to the local cache (:meth:`mtllib.experiments.jobs.Context.weights`).
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pandas as pd

from mtllib import checks
from mtllib.experiments import costs, jobs

#: every parameter of the spec and its default; the training fields are :class:`~mtllib.training.trainer.TrainConfig`'s
DEFAULTS = {
    "model": "offline", "tasks": ["bbc-topic"], "split_seed": 0, "max_train": None, "max_eval": None, "max_length": 64,
    "epochs": 2, "batch_size": 32, "lr": 1e-4, "weight_decay": 0.01, "warmup": 0.1, "sampler": "proportional",
    "temperature": 2.0, "keep_best": True, "cpu_bf16": False, "seed": 0,
}
TRAIN_FIELDS = ("epochs", "batch_size", "lr", "weight_decay", "warmup", "sampler", "temperature", "keep_best", "cpu_bf16", "seed")
SPLITS = ("validation", "test")


def train_config(spec: dict, device: str = "cpu"):
    from mtllib.training.trainer import TrainConfig

    return TrainConfig(**{k: spec[k] for k in TRAIN_FIELDS}, device=device)


def check(spec: dict) -> None:
    """A spec's tasks are registered and distinct, its sizes are positive and its training fields valid."""
    from mtllib.data.features import per_task
    from mtllib.data.tasks import UnknownTask, get_task

    tasks = checks.items("tasks", spec["tasks"], checks.text)
    for name in tasks:
        try:
            get_task(name)
        except UnknownTask as err:
            raise checks.BadInput(err.args[0]) from None
    for size in ("max_train", "max_eval"):
        for name in tasks:
            try:
                value = per_task(spec[size], name, size)
            except ValueError as err:
                raise checks.BadInput(str(err)) from None
            if value is not None:
                checks.integer(f"{size} of {name}", value, 1)
    checks.integer("max_length", spec["max_length"], 8)
    checks.integer("split_seed", spec["split_seed"], 0)
    train_config(spec)


def _column(values) -> list:
    """Predictions or references as a Parquet column: numbers as they are, anything else as JSON text."""
    if isinstance(values, np.ndarray) and values.ndim == 1:
        return values.tolist()
    return [json.dumps(v.tolist() if isinstance(v, np.ndarray) else v) for v in values]


def prepared(spec: dict):
    """``(tokenizer, data)`` of a spec: its tasks loaded and tokenised at its sizes."""
    from mtllib.data.features import load_tokenizer, prepare

    tokenizer = load_tokenizer(spec["model"])
    return tokenizer, prepare(spec["tasks"], tokenizer, seed=spec["split_seed"], max_train=spec["max_train"],
                              max_eval=spec["max_eval"], max_length=spec["max_length"])


def build(spec: dict, data: dict):
    """The untrained model of a spec, its heads initialised from the spec's seed."""
    from mtllib.modeling.multitask import MultiTaskModel
    from mtllib.runtime import seed_everything

    seed_everything(spec["seed"])
    return MultiTaskModel.from_pretrained(spec["model"], [data[t].task.spec() for t in spec["tasks"]])


def compute(spec: dict, inputs: dict, context: jobs.Context) -> jobs.Output:
    from mtllib.runtime import pick_device, precision
    from mtllib.training.trainer import evaluate, predict, train

    _, data = prepared(spec)
    model = build(spec, data)
    config = train_config(spec, context.device)
    result = train(model, data, config, progress=context.progress)
    device = pick_device(context.device)
    scores, predictions = [], []
    for split in SPLITS:
        table = evaluate(model, data, split, config.eval_batch_size, device, cpu_bf16=spec["cpu_bf16"])
        scores.append(table.reset_index().assign(split=split))
        for name in spec["tasks"]:
            preds, golds = predict(model, data[name], split, config.eval_batch_size, device, cpu_bf16=spec["cpu_bf16"])
            predictions.append(pd.DataFrame({"split": split, "task": name, "example": np.arange(len(golds)),
                                             "prediction": _column(preds), "reference": _column(golds)}))
    scores = pd.concat(scores, ignore_index=True)
    scores = scores[["split", "task", *[c for c in scores.columns if c not in ("split", "task")]]]
    values = {"best_epoch": int(result.best_epoch), "best_score": float(result.best_score),
              "stopped_epoch": result.stopped_epoch, "train_examples": {t: len(data[t].features["train"]) for t in spec["tasks"]}}
    return jobs.Output(tables={"scores": scores, "predictions": pd.concat(predictions, ignore_index=True),
                               "history": result.history.reset_index(drop=True), "steps": result.log.reset_index(drop=True)},
                       values=values, precision=precision(device, config.bf16, spec["cpu_bf16"]),
                       state=model.state_dict())


EXPERIMENT = jobs.register(jobs.Experiment(
    name="multitask", compute=compute, defaults=DEFAULTS, check=check, minutes=costs.multitask_minutes, work=costs.multitask_work,
    code=("mtllib.experiments.multitask",),
    # the job machinery and the cost estimates decide no number
    exclude=("mtllib.experiments.jobs", "mtllib.experiments.costs"),
))

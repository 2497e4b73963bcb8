"""Learnability of every task a chapter uses, at that chapter's sizes, and learning curves.

Each task is trained *alone* (one head, the offline encoder) with the training size, epochs, learning rate,
batch size and maximum length that a chapter's profile gives, and scored on validation (the gate of
:mod:`mtllib.analysis.learnability` is decided there) and test, beside the majority-class baseline and chance.
``--curve`` adds rows at other training sizes (same settings otherwise) for the learning curves of the data
chapter.

    .venv/bin/python benchmarks/bench_learnability.py --profile cpu --json benchmarks/results/learnability_cpu.json
    .venv/bin/python benchmarks/bench_learnability.py --profile cpu --curve 250 500 1000 2000 --only-curve --json curves.json
    .venv/bin/python benchmarks/bench_learnability.py --tasks bbc-similarity --like 07_important_head_training \
        --max-length 128 --curve 500 1000 --only-curve --json new.json   # a task no chapter trains yet

The JSON contract (other tools read it)::

    {"tasks": [{"task", "chapter", "metric", "score", "majority", "chance", "learned", "train_size", "epochs",
                "seconds", ...}], "meta": {...}}

one row per (task, chapter) that the chapters use (``chapter`` is ``"curve"`` for learning-curve rows);
scores in percent on the test split (``validation`` and ``validation_majority`` hold what the gate read). A
task that several chapters train with the same settings is trained once; the later chapters' rows repeat its
numbers and name the first chapter in ``same_model_as``. ``--resume`` keeps the rows a file already holds
and measures the rest (e.g. with another ``--max-eval`` after a failure; each row records its own).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import torch

from mtllib.analysis import learnability
from mtllib.data import metrics as metric_fns
from mtllib.book.runner import Project, default_parameters
from mtllib.data.features import load_tokenizer
from mtllib.modeling.multitask import MultiTaskModel
from mtllib.runtime import quiet_notebook, seed_everything
from mtllib.training.trainer import TrainConfig, predict, train
from mtllib.data.features import prepare

#: which parameters name a chapter's tasks
TASK_PARAMS = ("tasks", "single_task", "pair_version", "partners")
SETTINGS = ("max_train", "max_eval", "epochs", "lr", "batch_size", "max_length", "model")


def notebook_defaults(project: Project, name: str) -> dict:
    return default_parameters(project.source(name))


def chapter_plans(project: Project, profile: str, chapters: list[str] | None) -> list[dict]:
    """``[{chapter, tasks, settings}]`` for every chapter of ``profile`` that trains tasks."""
    plans = []
    for name, params in project.profile(profile).items():
        if chapters and name not in chapters:
            continue
        values = {**notebook_defaults(project, name), **params}
        tasks = []
        for key in TASK_PARAMS:
            v = values.get(key)
            tasks += [v] if isinstance(v, str) else list(v or [])
        settings = {k: values[k] for k in SETTINGS if k in values}
        if values.get("groups") and isinstance(values.get("targets"), dict):  # the pre-finetuning chapter: its tasks at their size
            pf_tasks = [t for ts in values["groups"].values() for t in ts]
            plans.append({"chapter": name, "tasks": pf_tasks,
                          "settings": {**settings, "max_train": values["pf_train"], "max_eval": values["pf_eval"], "epochs": values["pf_epochs"]}})
        elif values.get("groups"):  # a target chapter: its targets at the chapter's size
            tasks += list(values["targets"])
        if not tasks:
            continue
        plans.append({"chapter": name, "tasks": list(dict.fromkeys(tasks)), "settings": settings})
    return plans


def training_settings(task: str, settings: dict) -> tuple:
    """What decides a single-task model of ``task`` here: the model, the task's own training size (a per-task
    mapping resolved, with its ``"default"``), epochs, learning rate, batch size and maximum length (the
    evaluation size is the benchmark's ``--max-eval``, not the chapter's)."""
    size = settings.get("max_train")
    if isinstance(size, dict):
        size = size.get(task, size.get("default"))
    return (settings.get("model", "offline"), size, *(settings.get(k) for k in ("epochs", "lr", "batch_size", "max_length")))


def measure(task_name: str, chapter: str, settings: dict, max_eval: int, seed: int, tokenizer) -> dict:
    """Train one single-task model and score it against the majority baseline (validation and test)."""
    data = prepare([task_name], tokenizer, seed=0, max_train=settings["max_train"], max_eval=max_eval, max_length=settings["max_length"])
    td = data[task_name]
    task = td.task
    seed_everything(seed)
    model = MultiTaskModel.from_pretrained(settings["model"], [task.spec()])
    config = TrainConfig(epochs=settings["epochs"], batch_size=settings["batch_size"], lr=settings["lr"], seed=seed)
    start = time.perf_counter()
    train(model, data, config, progress=False)
    seconds = time.perf_counter() - start
    scores, majority = {}, {}
    for split in ("validation", "test"):
        predictions, golds = predict(model, td, split)
        scores[split] = metric_fns.compute([task.main_metric], predictions, golds)[task.main_metric]
        majority[split] = learnability.majority_for(td, split)
    return {
        "task": task_name, "chapter": chapter, "metric": task.main_metric,
        "score": round(scores["test"], 2), "majority": round(majority["test"], 2), "chance": round(learnability.chance(task), 2),
        "learned": learnability.is_learned(task.main_metric, scores["validation"], majority["validation"]),
        "validation": round(scores["validation"], 2), "validation_majority": round(majority["validation"], 2),
        "threshold": round(learnability.threshold(task.main_metric, majority["validation"]), 2),
        "train_size": len(td.features["train"]), "test_size": len(td.features["test"]), "epochs": settings["epochs"],
        "lr": settings["lr"], "max_length": settings["max_length"], "max_eval": max_eval, "seed": seed, "seconds": round(seconds, 1),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--profile", default="cpu")
    parser.add_argument("--json", type=Path, help="write the rows to this JSON file")
    parser.add_argument("--chapters", nargs="*", help="only these chapters (notebook names)")
    parser.add_argument("--tasks", nargs="*", help="only these tasks")
    parser.add_argument("--curve", nargs="*", type=int, default=[], help="extra training sizes for learning curves")
    parser.add_argument("--only-curve", action="store_true", help="skip the chapter rows")
    parser.add_argument("--max-eval", type=int, default=1000, help="validation/test examples per task (default 1000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--like", metavar="CHAPTER", help="the curves of --tasks use this chapter's settings (needed for a task no chapter trains)")
    parser.add_argument("--max-length", type=int, help="tokens per example for the curves (default: the chapter's)")
    parser.add_argument("--resume", action="store_true",
                        help="keep the rows already in --json and measure only the (task, chapter) rows it lacks")
    args = parser.parse_args(argv)
    quiet_notebook()
    plans = chapter_plans(Project(), args.profile, args.chapters)
    if not plans:
        parser.error(f"no chapter of profile {args.profile!r} trains tasks")
    if any(n < 1 for n in args.curve) or args.max_eval < 1 or (args.max_length is not None and args.max_length < 8):
        parser.error("sizes must be >= 1 (--max-length >= 8)")
    by_chapter = {p["chapter"]: p["settings"] for p in plans}
    if args.like and args.like not in by_chapter:
        parser.error(f"--like {args.like!r}: not a chapter of profile {args.profile!r} that trains tasks; choose one of {', '.join(by_chapter)}")
    if args.tasks:
        from mtllib.data.tasks import UnknownTask, get_task

        for t in args.tasks:
            try:
                get_task(t)
            except UnknownTask as err:  # the registry's message lists the tasks; before any training
                parser.error(str(err))
    jobs = []
    if not args.only_curve:
        jobs += [(t, p["chapter"], p["settings"]) for p in plans for t in p["tasks"]]
    if args.curve:  # curves use the settings of the first chapter that trains the task
        first = {}
        for p in plans:
            for t in p["tasks"]:
                first.setdefault(t, p["settings"])
        untrained = [t for t in args.tasks or [] if t not in first]
        if untrained and not args.like:
            parser.error(f"no chapter of profile {args.profile!r} trains {', '.join(untrained)}: name one whose settings to use with --like")
        for t in (args.tasks or []) if args.like else []:  # every listed task on the same settings, trained by a chapter or not
            first[t] = by_chapter[args.like]
        if args.max_length:
            first = {t: {**s, "max_length": args.max_length} for t, s in first.items()}
        jobs += [(t, "curve", {**s, "max_train": n}) for t, s in first.items() for n in args.curve]
    if args.tasks:
        jobs = [j for j in jobs if j[0] in args.tasks]
    tokenizer = load_tokenizer(plans[0]["settings"].get("model", "offline"))
    rows, runs = [], []
    if args.resume:
        if not args.json or not args.json.is_file():
            parser.error("--resume needs an existing --json file")
        previous = json.loads(args.json.read_text())
        rows = previous["tasks"]
        runs = previous["meta"].get("runs", [previous["meta"]])
        done = {(r["task"], r["chapter"]) for r in rows}
        jobs = [j for j in jobs if (j[0], j[1]) not in done]
    runs.append({"profile": args.profile, "max_eval": args.max_eval, "threads": torch.get_num_threads(), "cpu_count": os.cpu_count(),
                 "torch": torch.__version__, "rows": len(jobs)})
    print(f"{len(jobs)} single-task models; torch threads {torch.get_num_threads()}", flush=True)
    measured = {}  # chapters that train a task with the same settings share one model: one row each, one training
    for i, (task, chapter, settings) in enumerate(jobs, 1):
        key = (task, *(json.dumps(v) for v in training_settings(task, settings)))
        if key in measured:
            row = {**measured[key], "chapter": chapter, "same_model_as": measured[key]["chapter"]}
        else:
            row = measured[key] = measure(task, chapter, settings, args.max_eval, args.seed, tokenizer)
        rows.append(row)
        print(f"[{i}/{len(jobs)}] {task:18s} {chapter:26s} n={row['train_size']:5d} ep={row['epochs']} "
              f"test {row['metric']} {row['score']:6.2f} (majority {row['majority']:5.1f}, chance {row['chance']:5.1f}) "
              f"val {row['validation']:6.2f} >= {row['threshold']:5.1f}? {'learned' if row['learned'] else 'NOT learned'}  {row['seconds']:.0f} s", flush=True)
        if args.json:  # written after every row, so a long run can be read while it goes on
            args.json.parent.mkdir(parents=True, exist_ok=True)
            meta = {**runs[-1], "runs": runs}  # one entry per invocation (--resume adds one); each row records its max_eval
            args.json.write_text(json.dumps({"tasks": rows, "meta": meta}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

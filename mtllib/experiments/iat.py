"""Important Attention-head Training experiments, Sec. 4.2, 6.3 and Appendix F of "Interpreting and Exploiting
Functional Specialization in Multi-Head Attention under Multi-task Learning" (Tables 5, 7, 12, 13; Fig. 8-10).

IAT differs from plain multi-task training only in the last ``delta`` of the steps
(:mod:`mtllib.training.iat`), so every IAT variant of a seed (the ablation's random heads, the alpha and
delta sweeps) *branches* from the baseline run at step ``(1 - delta) T`` instead of training from the start:

1. the multi-task baseline trains once, stopping at each branch step to keep the trainer's checkpoint there
   (model, AdamW state, schedule, random state; :func:`mtllib.training.trainer.train`'s resume format);
2. each variant resumes from its branch step's checkpoint with its own ``IATConfig``: the trainer computes
   its masks ``M_i`` (Eq. 4 on each task's training data) at that step, exactly as a run from scratch would.

A variant so branched equals the same run trained from the start, bit for bit on the CPU (the first
``(1 - delta) T`` steps of both are the baseline's; ``tests/experiments/test_iat.py`` checks it). Finished
models go into the model cache (:mod:`mtllib.training.cache`) under the key a run from scratch would have,
and so do the branch checkpoints, so a new variant of a cached seed trains only its last ``delta``.

The resume relabels a checkpoint with the variant's settings after checking that the two runs differ in
nothing but ``iat`` and where checkpoints go; this belongs in the trainer (a ``start_from`` argument) the next
time the training code changes (every chapter's model cache depends on that code).
"""

from __future__ import annotations

import copy
import dataclasses
import math
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from mtllib import checks
from mtllib.training.iat import IATConfig

#: the name of the plain multi-task run every variant branches from
BASELINE = "MTL"


@dataclass
class VariantRun:
    """One trained variant of one seed: the model (weights of the epoch ``keep_best`` kept), the trainer's
    result (masks ``M_i`` in ``result.trainable_heads``), the step it branched at (``None`` for the baseline)
    and the training time it cost (a branch: only its own steps; from the cache: the run that made it)."""

    name: str
    iat: IATConfig | None
    model: object
    result: object
    seconds: float
    cached: bool
    branch_step: int | None = None


class _Stop(Exception):
    """Raised from ``on_step`` to leave the trainer at a branch step (its checkpoint is on disk by then)."""


def total_steps(data: dict, config) -> int:
    """The optimizer steps :func:`mtllib.training.trainer.train` takes on ``data`` with ``config``
    (single-task batches: every task's batches once per epoch under the sampler's schedule)."""
    from mtllib.training.samplers import TaskSampler

    per_task = [math.ceil(len(td.features["train"]) / config.batch_size) for td in data.values()]
    return TaskSampler(config.sampler, per_task, config.epochs, config.temperature, config.seed).steps_per_epoch * config.epochs


def variant_configs(config, variants: dict) -> dict:
    """``{name: TrainConfig}`` for the baseline and every variant (``{name: IATConfig}``); bad input (a
    variant named like the baseline, a value that is not an ``IATConfig``, heterogeneous batching, which
    IAT cannot use) raises :class:`mtllib.checks.BadInput` here, before any work."""
    if not isinstance(variants, dict) or not variants:
        raise checks.BadInput(f"variants must be a non-empty mapping {{name: IATConfig}}, got {variants!r}")
    out = {BASELINE: dataclasses.replace(config, iat=None, checkpoint_dir=None, checkpoint_every=None)}
    for name, iat in variants.items():
        checks.text("variant name", name)
        if name == BASELINE:
            raise checks.BadInput(f"variant name {BASELINE!r} is the baseline's; name the IAT variants otherwise")
        if not isinstance(iat, IATConfig):
            raise checks.BadInput(f"variant {name!r} must be an IATConfig, got {iat!r}")
        out[name] = dataclasses.replace(out[BASELINE], iat=iat)  # TrainConfig.validate refuses heterogeneous batches
    return out


def branch_step(iat: IATConfig | None, steps: int) -> int:
    """The step a variant leaves the baseline: ``(1 - delta) T``; ``T`` (never) for the baseline, for
    ``alpha = 1`` (every head trains) and for ``delta = 0``."""
    if iat is None or iat.alpha >= 1:
        return steps
    return iat.start_step(steps)


def _relabel(path: Path, config) -> None:
    """Rewrite the settings a checkpoint records so that a run with ``config`` resumes from it, after checking
    that they differ only in ``iat`` and ``checkpoint_every`` (what the steps so far did not depend on)."""
    from mtllib.training.trainer import _config_dict, _load, _save

    payload = _load(path)
    old, new = payload["recipe"]["config"], _config_dict(config)
    differs = sorted(k for k in set(old) | set(new) if k not in ("iat", "checkpoint_every") and old.get(k) != new.get(k))
    if differs:
        raise RuntimeError(f"{path}: cannot branch a run with other settings ({', '.join(differs)})")
    payload["recipe"]["config"] = new
    _save(path, payload)


def _cache_get(key: str, log):
    from mtllib.training import cache

    if not cache.enabled():
        return None
    try:
        return cache.load(key)
    except cache.CorruptEntry as err:
        log(f"model cache: {err}; rebuilding it")
        shutil.rmtree(cache.cache_dir() / key, ignore_errors=True)
        return None


def _cache_put(key: str, model, result, seconds: float) -> None:
    from mtllib.training import cache

    if cache.enabled():
        cache.store(key, model.state_dict(), {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}, seconds)


def _snapshot_key(baseline_key: str, step: int) -> str:
    from mtllib.fingerprint import digest

    return digest("iat-branch/1", baseline_key, step)


def train_variants(model_name: str, task_names: list[str], seed: int, variants: dict, data: dict, config,
                   progress: bool = True, log=print) -> dict[str, VariantRun]:
    """Train the multi-task baseline (:data:`BASELINE`) of ``task_names`` with ``seed`` and every IAT variant
    in ``variants`` (``{name: IATConfig}``), each branched from the baseline at its step ``(1 - delta) T``
    (see the module docstring). Returns ``{name: VariantRun}``, the baseline first. Models are built as
    :func:`mtllib.experiments.iap.run_experiment` builds them, so the baseline shares its cache entry."""
    from mtllib.modeling.multitask import MultiTaskModel
    from mtllib.runtime import pick_device, seed_everything
    from mtllib.training.cache import recipe_key
    from mtllib.training.trainer import TrainResult, _save, train

    configs = variant_configs(dataclasses.replace(config, seed=seed), variants)
    missing = [n for n in task_names if n not in data]
    if missing:
        raise checks.BadInput(f"data has no prepared task {missing}; prepared: {', '.join(data)}")
    data = {n: data[n] for n in task_names}
    steps = total_steps(data, configs[BASELINE])
    iats = {BASELINE: None, **variants}
    starts = {name: branch_step(iats[name], steps) for name in configs}

    seed_everything(seed)
    fresh = MultiTaskModel.from_pretrained(model_name, [data[n].task.spec() for n in task_names])
    keys = {name: recipe_key(fresh, data, cfg) for name, cfg in configs.items()}
    device = pick_device(config.device)

    def from_entry(name, entry):
        state, fields, seconds = entry
        model = copy.deepcopy(fresh)
        model.load_state_dict(state)
        model.to(device)
        model.freeze_encoder(configs[name].freeze_encoder)
        return VariantRun(name, iats[name], model, TrainResult(**fields), seconds, True, None if name == BASELINE else starts[name])

    runs = {name: from_entry(name, e) for name in configs if (e := _cache_get(keys[name], log)) is not None}
    if len(runs) == len(configs):
        return {name: runs[name] for name in configs}

    todo = [n for n in configs if n not in runs and n != BASELINE]
    points = sorted({starts[n] for n in todo if 0 < starts[n] < steps})
    with tempfile.TemporaryDirectory(prefix="mtllib-iat-") as tmp:
        tmp = Path(tmp)
        snapshots = {}
        for b in list(points):  # a branch checkpoint kept in the cache spares the baseline's first (1 - delta) T steps
            entry = _cache_get(_snapshot_key(keys[BASELINE], b), log)
            if entry is not None:
                folder = tmp / f"step-{b}"
                folder.mkdir()
                for name, payload in entry[1].items():
                    _save(folder / name, payload)
                snapshots[b] = folder
        baseline_cached = BASELINE in runs
        if not baseline_cached or any(b not in snapshots for b in points):
            trained = _train_baseline(fresh, data, configs[BASELINE], steps, [b for b in points if b not in snapshots],
                                      tmp, snapshots, keys[BASELINE], progress)
            if not baseline_cached:
                runs[BASELINE] = trained
                _cache_put(keys[BASELINE], trained.model, trained.result, trained.seconds)
        for index, name in enumerate(todo):
            b = starts[name]
            if b >= steps:  # alpha = 1 or delta = 0: plain multi-task training, the baseline itself
                runs[name] = dataclasses.replace(runs[BASELINE], name=name, iat=iats[name], model=copy.deepcopy(runs[BASELINE].model), branch_step=None)
                continue
            model = copy.deepcopy(fresh)
            cfg = configs[name]
            if b > 0:
                folder = tmp / f"variant-{index}"
                shutil.copytree(snapshots[b], folder)
                cfg = dataclasses.replace(cfg, checkpoint_dir=str(folder))
                _relabel(folder / "last.pt", cfg)
            start = time.perf_counter()
            result = train(model, data, cfg, progress=progress)
            seconds = time.perf_counter() - start
            runs[name] = VariantRun(name, iats[name], model, result, seconds, False, b)
            _cache_put(keys[name], model, result, seconds)
    return {name: runs[name] for name in configs}


def _train_baseline(fresh, data, config, steps, points, tmp: Path, snapshots: dict, baseline_key: str, progress) -> VariantRun:
    """Train the baseline to the end, stopping at each step in ``points`` to copy the checkpoint there into
    ``snapshots[step]`` (and the cache)."""
    from mtllib.training.cache import enabled, store
    from mtllib.training.trainer import _load, train

    model = copy.deepcopy(fresh)
    run_dir = tmp / "baseline"
    per_epoch = steps // config.epochs
    seconds, result = 0.0, None
    for b in [*points, steps]:
        cfg = dataclasses.replace(config, checkpoint_dir=str(run_dir), checkpoint_every=b if b < steps else None)
        if (run_dir / "last.pt").exists():
            _relabel(run_dir / "last.pt", cfg)
        # at a step inside an epoch the checkpoint is written after the step (every b steps); at an epoch's
        # end it is written after validation, so the run stops one step later, before it is overwritten
        stop_at = b if b % per_epoch else b + 1

        def on_step(step, stop_at=stop_at, last=b >= steps):
            if not last and step == stop_at:
                raise _Stop

        start = time.perf_counter()
        try:
            result = train(model, data, cfg, progress=progress, on_step=on_step)
        except _Stop:
            pass
        seconds += time.perf_counter() - start
        if b < steps:
            folder = tmp / f"step-{b}"
            folder.mkdir()
            for name in ("last.pt", "best.pt"):
                if (run_dir / name).exists():
                    shutil.copy2(run_dir / name, folder / name)
            payloads = {n: _load(folder / n) for n in ("last.pt", "best.pt") if (folder / n).exists()}
            saved = payloads["last.pt"]["state"]["global_step"]
            if saved != b:
                raise RuntimeError(f"branch checkpoint at step {saved}, expected {b} (an epoch's end with checkpoint_every=1?)")
            snapshots[b] = folder
            if enabled():
                store(_snapshot_key(baseline_key, b), {}, payloads, seconds)
    return VariantRun(BASELINE, None, model, result, seconds, False, None)


# --- reading the trained variants ------------------------------------------------------------------------
def prune_least(model, data: dict, importance: dict, alpha: float, split: str = "test", batch_size: int = 64) -> pd.Series:
    """Table 7's "prune the least important alpha of heads": each task scored (main metric) with its own
    ``alpha`` least important heads (``importance[task]``, Eq. 4) gated to zero."""
    from mtllib.analysis.importance import gates_from_mask, select_heads
    from mtllib.data.metrics import compute
    from mtllib.training.trainer import predict

    out = {}
    for name, td in data.items():
        gates = gates_from_mask(select_heads(importance[name], alpha, "bottom"))
        preds, golds = predict(model, td, split, batch_size, None, gates)
        out[name] = compute([td.task.main_metric], preds, golds)[td.task.main_metric]
    return pd.Series(out, name="score")


@dataclass
class IATResult:
    """Everything :func:`run` produced, as tidy tables: ``scores`` (seed, variant, task: test and validation
    score, the gate, best epoch, branch step, training seconds), ``dissociation`` (seed, variant, task: D_i of
    Eq. 7 from IAP on the trained model), ``pruned_least`` (seed, task: Table 7's pruned baseline) the
    masks each variant trained with (``{(seed, variant): {task: [L, H]}}``), every model's test predictions
    and training log."""

    scores: pd.DataFrame
    dissociation: pd.DataFrame
    pruned_least: pd.DataFrame
    masks: dict = field(default_factory=dict)
    #: ``{(seed, variant): {task: test predictions}}``, for :func:`changed_predictions`
    predictions: dict = field(default_factory=dict)
    #: ``{(seed, variant): the trainer's step log}`` (task, loss and learning rate of every step)
    logs: dict = field(default_factory=dict)


def run(model_name: str, task_names: list[str], seeds: list[int], variants: dict, data: dict, config,
        iap_alpha: float = 0.3, dissociate: tuple = (BASELINE,), prune_alpha: float | None = 0.3,
        importance_batches: int | None = 20, sweep_seeds: list[int] | None = None, sweep: dict | None = None,
        progress: bool = True) -> IATResult:
    """For every seed: train the baseline and ``variants`` (:func:`train_variants`; ``sweep`` variants only
    for ``sweep_seeds``), score every task on its test split, run IAP (Eq. 4-7 at ``iap_alpha``) on the
    variants named in ``dissociate`` (Fig. 8) and prune the baseline's least important ``prune_alpha`` heads
    per task (Table 7). Every setting is checked before the first model trains."""
    from tqdm.auto import tqdm

    from mtllib.analysis.dissociation import dissociation
    from mtllib.analysis.importance import num_pruned, select_heads
    from mtllib.data.metrics import compute
    from mtllib.experiments.iap import gate_of, pruning_table
    from mtllib.training.trainer import predict, task_importance

    checks.items("seeds", seeds, lambda n, v: checks.integer(n, v, 0))
    sweep, sweep_seeds = dict(sweep or {}), list(sweep_seeds or [])
    checks.items("sweep_seeds", sweep_seeds, lambda n, v: checks.integer(n, v, 0), min_len=0)
    outside = sorted(set(sweep_seeds) - set(seeds))
    if outside:
        raise checks.BadInput(f"sweep_seeds {outside} are not among seeds {seeds}")
    both = sorted(set(sweep) & set(variants))
    if both:
        raise checks.BadInput(f"variant(s) {both} are named both in variants and in sweep")
    variant_configs(config, {**variants, **sweep})  # every variant's settings, before any work
    num_pruned(iap_alpha, 1_000_000)
    if prune_alpha is not None:
        num_pruned(prune_alpha, 1_000_000)
    unknown = sorted(set(dissociate) - {BASELINE, *variants})
    if unknown:
        raise checks.BadInput(f"dissociate names unknown variant(s) {unknown}; known: {BASELINE}, {', '.join(variants)}")
    if len(task_names) < 2:
        raise checks.BadInput("IAT trains several tasks: name at least two")

    data = {n: data[n] for n in task_names}
    score_rows, d_rows, pruned_rows, masks, predictions, logs = [], [], [], {}, {}, {}
    for seed in tqdm(seeds, desc="IAT seeds", disable=not progress):
        chosen = {**variants, **(sweep if seed in sweep_seeds else {})}
        runs = train_variants(model_name, task_names, seed, chosen, data, config, progress=False)
        for name, r in runs.items():
            gate = gate_of(r.result, data, dataclasses.replace(config, seed=seed))
            masks[(seed, name)], logs[(seed, name)], predictions[(seed, name)] = r.result.trainable_heads, r.result.log, {}
            for task in task_names:
                td = data[task]
                preds, golds = predict(r.model, td, "test", config.eval_batch_size)
                predictions[(seed, name)][task] = np.asarray(preds)
                score = compute([td.task.main_metric], preds, golds)[td.task.main_metric]
                score_rows.append({"seed": seed, "variant": name, "task": task, "score": float(score),
                                   "validation": float(gate.loc[task, "score"]), "majority": float(gate.loc[task, "majority"]),
                                   "learned": bool(gate.loc[task, "learned"]), "best_epoch": int(r.result.best_epoch),
                                   "branch_step": r.branch_step, "train_seconds": r.seconds, "cached": r.cached,
                                   "alpha": r.iat.alpha if r.iat else 1.0, "delta": r.iat.delta if r.iat else 0.0,
                                   "heads": r.iat.heads if r.iat else "all"})
            if name in dissociate or (name == BASELINE and prune_alpha is not None):
                importance = task_importance(r.model, data, config.batch_size, seed, importance_batches, progress=False)
            if name in dissociate:
                top = {t: select_heads(importance[t], iap_alpha, "top") for t in task_names}
                perf = pruning_table(r.model, data, top, None, split="test", batch_size=config.eval_batch_size)
                d = dissociation(perf.loc[task_names, task_names], perf.loc["Base", task_names])
                d_rows += [{"seed": seed, "variant": name, "task": t, "D": float(d[t])} for t in task_names]
            if name == BASELINE and prune_alpha is not None:
                least = prune_least(r.model, data, importance, prune_alpha, batch_size=config.eval_batch_size)
                pruned_rows += [{"seed": seed, "task": t, "score": float(least[t])} for t in task_names]
            r.model.to("cpu")
    return IATResult(pd.DataFrame(score_rows), pd.DataFrame(d_rows, columns=["seed", "variant", "task", "D"]),
                     pd.DataFrame(pruned_rows, columns=["seed", "task", "score"]), masks, predictions, logs)


def changed_predictions(result: IATResult, variant: str, over: str = BASELINE) -> pd.DataFrame:
    """How many test predictions of each task (columns) ``variant``'s model changed from ``over``'s of the same
    seed (rows): how much a branch moved the model, where the scores alone can hide changes that cancel."""
    rows = {}
    for (seed, name), preds in result.predictions.items():
        if name == variant and (seed, over) in result.predictions:
            base = result.predictions[(seed, over)]
            rows[seed] = {t: int(np.sum(np.asarray(p) != np.asarray(base[t]))) for t, p in preds.items()}
    if not rows:
        raise KeyError(f"no seed has predictions of both {variant!r} and {over!r}")
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("seed")


def learned_tasks(scores: pd.DataFrame, variants: list[str] | None = None) -> list[str]:
    """The tasks every model of every variant in ``variants`` (all, by default) learned: the verdicts' tasks."""
    rows = scores if variants is None else scores[scores.variant.isin(variants)]
    ok = rows.groupby("task", sort=False).learned.all()
    return [t for t in rows.task.unique() if ok[t]]


def average_by_seed(scores: pd.DataFrame, tasks: list[str]) -> pd.DataFrame:
    """Per seed (rows) and variant (columns): the mean test score over ``tasks``."""
    rows = scores[scores.task.isin(tasks)]
    return rows.groupby(["seed", "variant"], sort=False).score.mean().unstack("variant")


def gains_by_seed(scores: pd.DataFrame, tasks: list[str], variant: str, over: str = BASELINE) -> pd.DataFrame:
    """Per seed (rows) and task (columns, ``tasks``' order): ``variant``'s test score minus ``over``'s of the
    same seed, paired because a branch starts from its own seed's baseline; seeds without both are left out."""
    rows = scores[scores.task.isin(tasks)]
    table = rows.pivot_table(index="seed", columns=["variant", "task"], values="score", aggfunc="first")
    if variant not in table.columns.get_level_values(0) or over not in table.columns.get_level_values(0):
        raise KeyError(f"scores hold no rows of both {variant!r} and {over!r}")
    return (table[variant] - table[over]).reindex(columns=tasks).dropna(how="all")


def tasks_improved(scores: pd.DataFrame, tasks: list[str], over: str = BASELINE) -> pd.Series:
    """Table 7's "# tasks improved": per variant, how many of ``tasks`` have a higher mean test score (over
    seeds) than ``over``."""
    mean = scores[scores.task.isin(tasks)].groupby(["variant", "task"], sort=False).score.mean().unstack("task")
    return (mean.gt(mean.loc[over])).sum(axis=1).drop(over).astype(int)


def mean_mask_overlap(masks: dict) -> float:
    """Mean share of heads two tasks' masks ``M_i`` have in common (``{task: bool [L, H]}``), over task pairs."""
    names = list(masks)
    if len(names) < 2:
        raise ValueError("overlap needs the masks of at least two tasks")
    shares = [float((masks[a] & masks[b]).sum()) / float(masks[a].sum()) for i, a in enumerate(names) for b in names[i + 1:]]
    return float(np.mean(shares))

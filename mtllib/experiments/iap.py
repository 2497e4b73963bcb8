"""Important Attention-head Pruning (IAP) experiments, Sec. 4.1 and 6.1 of "Interpreting and Exploiting
Functional Specialization in Multi-Head Attention under Multi-task Learning": train a multi-task (or
dual-task) model, score head importance (Eq. 4), prune each task's top-alpha heads in turn and evaluate every
task (the Table 3 layout); the scores derived from that table are :mod:`mtllib.analysis.dissociation`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from mtllib.analysis.dissociation import classify, dissociation, overlap, pairwise_dissociation


def pruning_table(model, data: dict, masks: dict[str, torch.Tensor], random_masks: list[torch.Tensor] | None = None, split: str = "test", batch_size: int = 64, device=None, correct: dict | None = None) -> pd.DataFrame:
    """Table 3: main-metric performance of every task (columns) with each task's heads pruned (rows), plus
    ``Random`` (mean over ``random_masks``) and ``Base`` (nothing pruned). Pruning is gate values of 0.

    ``correct``: a dict to fill with per-example correctness, ``{row: {task: 0/1 array}}``, for the tasks whose
    main metric is accuracy (``Random`` holds the mean over the random masks): what the bootstrap over test
    examples resamples (:func:`mtllib.analysis.dissociation.bootstrap_dissociation`)."""
    from mtllib.analysis.importance import gates_from_mask
    from mtllib.data.metrics import compute
    from mtllib.training.trainer import predict

    def scores(gates, row):
        out = {}
        for name, td in data.items():
            preds, golds = predict(model, td, split, batch_size, device, gates)
            out[name] = compute([td.task.main_metric], preds, golds)[td.task.main_metric]
            if correct is not None and td.task.main_metric == "accuracy":
                hits = (np.asarray(preds) == np.asarray(golds)).astype(float)
                previous = correct.setdefault(row, {}).get(name)
                correct[row][name] = hits if previous is None else previous + hits
        return pd.Series(out)

    rows = {name: scores(gates_from_mask(mask), name) for name, mask in masks.items()}
    if random_masks:
        rows["Random"] = pd.concat([scores(gates_from_mask(m), "Random") for m in random_masks], axis=1).mean(axis=1)
        if correct is not None and "Random" in correct:
            correct["Random"] = {t: v / len(random_masks) for t, v in correct["Random"].items()}
    rows["Base"] = scores(None, "Base")
    table = pd.DataFrame(rows).T
    table.index.name = "pruned"
    table.columns.name = "evaluated"
    return table


# --- one IAP experiment ---------------------------------------------------------------------------------


@dataclass
class IAPResult:
    """Everything one seed of an IAP experiment produced (Sec. 4.1): the Table 3 layout ``perf`` (rows:
    pruned task, ``Random``, ``Base``; columns: evaluated task), the scores derived from it, the masks and
    importance scores, and the training history."""

    seed: int
    perf: pd.DataFrame
    importance: dict
    masks: dict
    history: pd.DataFrame
    train_seconds: float
    tasks: list = field(default_factory=list)
    #: the learnability gate of this model (:func:`mtllib.analysis.learnability.gate`, validation split)
    gate: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: per-example test correctness ``{row: {task: array}}`` of the accuracy tasks (for bootstrap CIs)
    correct: dict = field(default_factory=dict)

    @property
    def base(self) -> pd.Series:
        return self.perf.loc["Base"]

    @property
    def pruned(self) -> pd.DataFrame:
        return self.perf.loc[self.tasks]

    @property
    def dissociation(self) -> pd.Series:
        return dissociation(self.pruned, self.base)

    @property
    def pairwise(self) -> pd.DataFrame:
        return pairwise_dissociation(self.pruned, self.base)


def run_experiment(
    model_name: str,
    task_names: list[str],
    seed: int,
    alpha: float = 0.3,
    train_config=None,
    max_train: int | None = None,
    max_eval: int | None = None,
    max_length: int = 128,
    n_random: int = 3,
    importance_batches: int | None = 20,
    data=None,
    tokenizer=None,
    progress: bool = True,
) -> IAPResult:
    """Train a multi-task model on ``task_names`` (dual-task when two), score head importance (Eq. 4) on
    each task's training data, prune each task's top-``alpha`` heads in turn and ``n_random`` random sets of
    the same size, and evaluate every task on its test split. ``data``/``tokenizer`` may be passed in to share
    tokenised tasks between experiments. Tasks are built with data seed 0; ``seed`` drives training.

    The trained model comes from the model cache and the importance scores and pruned evaluations from the
    results cache (:func:`analysis_key`) when this recipe ran before on this machine: the same numbers, without
    the minutes."""
    import dataclasses

    from mtllib.data.features import load_tokenizer
    from mtllib.analysis.importance import num_pruned, select_heads
    from mtllib.modeling.multitask import MultiTaskModel
    from mtllib.runtime import seed_everything
    from mtllib.training.cache import cached_result, recipe_key, train_cached
    from mtllib.training.cache import enabled as cache_enabled
    from mtllib.training.trainer import TrainConfig, task_importance
    from mtllib.data.features import prepare

    num_pruned(alpha, 1_000_000)  # alpha outside (0, 1]: the standard error, before any work
    if len(task_names) < 2:
        raise ValueError("IAP compares tasks: name at least two")
    tokenizer = tokenizer or load_tokenizer(model_name)
    data = data or prepare(task_names, tokenizer, seed=0, max_train=max_train, max_eval=max_eval, max_length=max_length)
    data = {n: data[n] for n in task_names}
    config = dataclasses.replace(train_config or TrainConfig(), seed=seed)
    seed_everything(seed)
    model = MultiTaskModel.from_pretrained(model_name, [data[n].task.spec() for n in task_names])
    model_key = recipe_key(model, data, config) if config.checkpoint_dir is None and cache_enabled() else None
    key = analysis_key(model_key, data, alpha, n_random, importance_batches)
    result, seconds, _ = train_cached(model, data, config, progress=progress, key=model_key)
    gate = gate_of(result, data, config)

    def analyse() -> dict:
        importance = task_importance(model, data, config.batch_size, seed, importance_batches, progress=progress)
        masks = {n: select_heads(imp, alpha, "top") for n, imp in importance.items()}
        some = next(iter(importance.values()))
        random_masks = [select_heads(some, alpha, "random", seed=seed * 100 + r) for r in range(n_random)]
        correct: dict = {}
        perf = pruning_table(model, data, masks, random_masks, split="test", batch_size=config.eval_batch_size, correct=correct)
        return {"importance": importance, "masks": masks, "perf": perf, "correct": correct}

    found, _ = cached_result(key, analyse)
    return IAPResult(seed, found["perf"], found["importance"], found["masks"], result.history, seconds, list(task_names), gate, found["correct"])


def analysis_key(model_key: str | None, data: dict, alpha: float, n_random: int, importance_batches: int | None) -> str | None:
    """The results-cache key of one IAP analysis (:func:`mtllib.training.cache.cached_result`): the key of the
    trained model (``model_key``, :func:`mtllib.training.cache.recipe_key` of the model as built, which holds
    the seed and the training data), the analysis settings, the content of every task's test split, and the
    source of this module and what it imports. ``None`` where the model cache is bypassed (``model_key`` None:
    checkpointed runs, ``MTLLIB_MODEL_CACHE=0``): then nothing is stored."""
    from mtllib.fingerprint import dataset_digest, digest, source_digest
    from mtllib.training.cache import DATA_BUILDERS

    if model_key is None:
        return None
    tests = [(name, dataset_digest(td.features["test"])) for name, td in data.items()]
    return digest("iap-analysis/1", model_key, alpha, n_random, importance_batches, tests,
                  source_digest(("mtllib.experiments.iap",), exclude=DATA_BUILDERS))


def gate_of(result, data: dict, config) -> pd.DataFrame:
    """The learnability gate of a trained model from its training history: each task's validation score at
    the epoch whose weights it kept, against the majority class of its training labels on validation."""
    from mtllib.analysis import learnability

    history = result.history
    epoch = result.best_epoch if config.keep_best else int(history.epoch.max())
    at = history[history.epoch == epoch].set_index("task")["score"]
    majority = {name: learnability.majority_for(td, "validation") for name, td in data.items()}
    return learnability.gate({n: float(at[n]) for n in data}, majority, {n: td.task.main_metric for n, td in data.items()})


def summarize(results: list[IAPResult]) -> dict[str, pd.DataFrame]:
    """Mean and standard deviation over seeds of the performance table, D_i, the pairwise table and the
    overlap of pruned heads: ``{"perf_mean", "perf_sd", "D", "pairwise_mean", "pairwise_sd", "overlap_mean"}``.
    Standard deviations are NaN with one seed."""
    if not results:
        raise ValueError("summarize needs at least one result")
    keys = range(len(results))
    perf = pd.concat([r.perf for r in results], keys=keys).groupby(level=1, sort=False)
    d = pd.DataFrame([r.dissociation for r in results])
    pair = pd.concat([r.pairwise for r in results], keys=keys).groupby(level=1, sort=False)
    over = pd.concat([overlap(r.masks) for r in results], keys=keys).groupby(level=1, sort=False)
    return {
        "perf_mean": perf.mean(),
        "perf_sd": perf.std(ddof=1),
        "D": pd.DataFrame({"mean": d.mean(), "sd": d.std(ddof=1)}),
        "pairwise_mean": pair.mean(),
        "pairwise_sd": pair.std(ddof=1),
        "overlap_mean": over.mean(),
    }


# --- dual-task IAP (Fig. 2, Table 9, Table 4) -----------------------------------------------------------
DUAL_COLUMNS = ["A", "B", "base_A", "A_pruned_on_A", "B_pruned_on_A", "base_B", "A_pruned_on_B", "B_pruned_on_B", "D_A", "D_B", "D"]


def dual_row(result: IAPResult) -> dict:
    """One dual-task result in Table 4's layout: the unpruned and pruned scores of both tasks, D_A and D_B
    (Eq. 6) and their mean D, plus the seed and the paper's reading (:func:`classify`)."""
    if len(result.tasks) != 2:
        raise ValueError(f"a dual-task row needs a two-task result, got tasks {result.tasks}")
    a, b = result.tasks
    p, d = result.perf, result.dissociation
    return {"A": a, "B": b, "seed": result.seed,
            "base_A": p.loc["Base", a], "A_pruned_on_A": p.loc[a, a], "B_pruned_on_A": p.loc[b, a],
            "base_B": p.loc["Base", b], "A_pruned_on_B": p.loc[a, b], "B_pruned_on_B": p.loc[b, b],
            "D_A": d[a], "D_B": d[b], "D": (d[a] + d[b]) / 2, "reading": classify(d[a], d[b]),
            **_gate_fields(result, a, "A"), **_gate_fields(result, b, "B")}


def _gate_fields(result: IAPResult, task: str, side: str) -> dict:
    """The gate of one task of a dual-task model: its validation score, the majority baseline and whether it
    passed (NaN / False when the result carries no gate)."""
    if result.gate.empty or task not in result.gate.index:
        return {f"val_{side}": float("nan"), f"majority_{side}": float("nan"), f"learned_{side}": False}
    g = result.gate.loc[task]
    return {f"val_{side}": float(g["score"]), f"majority_{side}": float(g["majority"]), f"learned_{side}": bool(g["learned"])}


def dual_task(
    model_name: str,
    pairs: list[tuple[str, str]],
    seeds: list[int],
    data,
    tokenizer=None,
    alpha: float = 0.3,
    train_config=None,
    importance_batches: int | None = 20,
    progress: bool = True,
) -> pd.DataFrame:
    """Dual-task IAP (Sec. 6.1, Fig. 2, Table 9): for every pair and seed, train a two-task model, prune
    each task's top-``alpha`` heads and score both tasks (:func:`run_experiment` with two tasks). Returns one
    row per (pair, seed) in :data:`DUAL_COLUMNS` layout plus ``seed``, ``reading`` and ``train_seconds``.
    ``data``: tokenised tasks from :func:`mtllib.training.trainer.prepare` covering every task named in ``pairs``."""
    from tqdm.auto import tqdm

    if not pairs or not seeds:
        raise ValueError("name at least one pair and one seed")
    for pair in pairs:
        if len(pair) != 2 or pair[0] == pair[1]:
            raise ValueError(f"a pair names two different tasks, got {pair!r}")
        missing = [t for t in pair if t not in data]
        if missing:
            raise ValueError(f"data has no prepared task {missing}; prepared: {', '.join(data)}")
    if train_config is not None:
        train_config.validate()
    rows = []
    with tqdm(total=len(pairs) * len(seeds), desc="dual-task IAP", disable=not progress) as bar:
        for a, b in pairs:
            for seed in seeds:
                bar.set_postfix_str(f"{a} + {b}, seed {seed}")
                result = run_experiment(model_name, [a, b], seed, alpha=alpha, train_config=train_config, n_random=0,
                                        importance_batches=importance_batches, data=data, tokenizer=tokenizer, progress=False)
                rows.append({**dual_row(result), "train_seconds": result.train_seconds})
                bar.update()
    return pd.DataFrame(rows)


def dual_summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Mean and standard deviation over seeds of every numeric column of :func:`dual_task`'s rows, one row
    per pair (``"A + B"``), with the reading of the mean scores and the share of seeds with both D > 0."""
    numeric = [c for c in [*DUAL_COLUMNS[2:], "val_A", "val_B"] if c in rows.columns]
    grouped = rows.assign(pair=rows.A + " + " + rows.B).groupby("pair", sort=False)
    mean, sd = grouped[numeric].mean(), grouped[numeric].std(ddof=1)
    out = mean.join(sd.add_suffix("_sd"))
    out["reading"] = [classify(r.D_A, r.D_B) for r in mean.itertuples()]
    out["both_positive"] = grouped.apply(lambda g: float(((g.D_A > 0) & (g.D_B > 0)).mean()), include_groups=False)
    out["seeds"] = grouped.size()
    return out


def dual_gate(rows: pd.DataFrame) -> pd.DataFrame:
    """The learnability gate over every dual-task model of :func:`dual_task`: one row per task with its
    validation scores (mean, min), the majority baseline, in how many of the models that trained it the task was
    learned (``k/n``) and whether it enters the verdicts (learned in every one of them)."""
    from mtllib.analysis.stats import format_count

    sides = [rows[["seed", side, f"val_{side}", f"majority_{side}", f"learned_{side}"]].set_axis(["seed", "task", "val", "majority", "learned"], axis=1)
             for side in ("A", "B")]
    long = pd.concat(sides, ignore_index=True)
    order = list(dict.fromkeys([*rows.A, *rows.B]))
    grouped = long.groupby("task", sort=False)
    out = pd.DataFrame({"validation (mean)": grouped.val.mean(), "validation (min)": grouped.val.min(),
                        "majority": grouped.majority.mean()}).reindex(order)
    k, n = grouped.learned.sum().reindex(order), grouped.size().reindex(order)
    out["learned"] = [format_count(k[t], n[t]) for t in order]
    out["in the verdicts"] = ["yes" if k[t] == n[t] else "no" for t in order]
    return out


def learned_pairs(rows: pd.DataFrame, gate: pd.DataFrame | None = None) -> pd.DataFrame:
    """The rows of :func:`dual_task` whose pair has both tasks learned in every model (the verdicts' pairs), by
    ``gate`` (:func:`dual_gate` of these rows, computed when not given)."""
    gate = dual_gate(rows) if gate is None else gate
    ok = set(gate.index[gate["in the verdicts"] == "yes"])
    return rows[rows.A.isin(ok) & rows.B.isin(ok)]


# --- reading several seeds: the gate, claims with confidence intervals -----------------------------------
def gate_table(results: list[IAPResult]) -> pd.DataFrame:
    """The learnability gate over seeds, one row per task: the validation score of each seed, the majority
    baseline, the threshold, how many seeds learned the task (``k/n``) and whether it enters the verdicts
    (learned in every seed)."""
    from mtllib.analysis.stats import format_count

    gates = [r.gate for r in results]
    tasks = list(results[0].tasks)
    out = pd.DataFrame({f"seed {r.seed}": r.gate["score"] for r in results}).reindex(tasks)
    out["majority"] = pd.concat([g["majority"] for g in gates], axis=1).mean(axis=1)
    out["threshold"] = pd.concat([g["threshold"] for g in gates], axis=1).max(axis=1)
    k = pd.concat([g["learned"].astype(int) for g in gates], axis=1).sum(axis=1)
    out["learned"] = [format_count(k[t], len(gates)) for t in tasks]
    out["in the verdicts"] = ["yes" if k[t] == len(gates) else "no" for t in tasks]
    return out


def dissociation_by_seed(results: list[IAPResult], tasks: list[str]) -> pd.DataFrame:
    """``D_i`` (Eq. 7) of each seed (rows) computed over ``tasks`` only: unlearned tasks are dropped both as
    evaluated tasks and as sources of pruned heads."""
    return pd.DataFrame([dissociation(r.perf.loc[tasks, tasks], r.perf.loc["Base", tasks]) for r in results],
                        index=pd.Index([r.seed for r in results], name="seed"))


def own_pruning_drop(results: list[IAPResult], tasks: list[str]) -> pd.DataFrame:
    """Relative drop (%) of each task when its own top-alpha heads are pruned, per seed."""
    return pd.DataFrame([{t: 100 * (1 - r.perf.loc[t, t] / r.perf.loc["Base", t]) for t in tasks} for r in results],
                        index=pd.Index([r.seed for r in results], name="seed"))

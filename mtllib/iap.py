"""Important Attention-head Pruning (IAP), Sec. 4.1 of "Interpreting and Exploiting Functional
Specialization in Multi-Head Attention under Multi-task Learning": dissociation scores (Eq. 5-7), their
double / single dissociation reading, the overlap of pruned heads (Table 11) and their layers (Fig. 4).

Layout used throughout: a *performance table* ``perf`` has one row per task whose top-alpha heads were pruned
(``H_j``) and one column per evaluated task (``i``), as in Table 3; ``base`` holds the unpruned performance per
task. Then (all in percent, as the paper reports them):

- Eq. 5: ``RP_i(H_j) = perf[j, i] / base[i]``                                     (:func:`relative_performance`)
- pairwise (Table 10): ``D_i(H_j) = RP_i(H_j) - RP_i(H_i)``, row ``j``, column ``i``  (:func:`pairwise_dissociation`)
- Eq. 7: ``D_i = mean_{j != i} RP_i(H_j) - RP_i(H_i)`` (Eq. 6 when there are two tasks)  (:func:`dissociation`)
- ``D = mean_i D_i``                                                              (:func:`average_dissociation`)

Checked against the paper's own numbers in the tests and the book: Table 4's rows give back its D_A, D_B
and D columns; Table 10 agrees with Table 3 to within rounding; Table 3's D_i row matches its table except
that the QNLI and AG entries are swapped (the means of Table 10's columns agree with our values).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch

DISTINCT = 10.0  #: the paper's threshold, in percent (Shallice, 1988)


def _check(perf: pd.DataFrame, base: pd.Series) -> None:
    base = pd.Series(base)
    missing_rows = [t for t in perf.columns if t not in perf.index]
    if missing_rows:
        raise ValueError(f"perf needs a row for every evaluated task (its own heads pruned); missing {missing_rows}")
    missing_base = [t for t in perf.columns if t not in base.index]
    if missing_base:
        raise ValueError(f"base has no unpruned performance for {missing_base}")
    if (base[perf.columns] <= 0).any():
        raise ValueError("base performance must be positive (relative performance divides by it)")


def relative_performance(perf: pd.DataFrame, base) -> pd.DataFrame:
    """Eq. 5: every cell divided by its column's (evaluated task's) unpruned performance."""
    base = pd.Series(base)
    _check(perf, base)
    return perf.div(base[perf.columns], axis=1)


def pairwise_dissociation(perf: pd.DataFrame, base) -> pd.DataFrame:
    """Table 10: ``D_A`` in percent for evaluated task A (column) when task B's heads (row) are pruned;
    the diagonal is empty."""
    rp = relative_performance(perf, base)
    tasks = list(perf.columns)
    out = pd.DataFrame(np.nan, index=pd.Index(tasks, name="pruned (B)"), columns=pd.Index(tasks, name="evaluated (A)"))
    for a in tasks:
        for b in tasks:
            if a != b:
                out.loc[b, a] = 100 * (rp.loc[b, a] - rp.loc[a, a])
    return out


def dissociation(perf: pd.DataFrame, base) -> pd.Series:
    """Eq. 7 (Eq. 6 for two tasks): ``D_i`` in percent for every evaluated task."""
    if perf.shape[1] < 2:
        raise ValueError("dissociation needs at least two tasks")
    return pairwise_dissociation(perf, base).mean(axis=0).rename("D")


def average_dissociation(perf: pd.DataFrame, base) -> float:
    """``D(alpha)``: the mean of the tasks' dissociation scores, in percent."""
    return float(dissociation(perf, base).mean())


def classify(d_a: float, d_b: float, threshold: float = DISTINCT) -> str:
    """The paper's reading of a dual-task pair (Sec. 4.1), scores in percent:
    ``"double (distinct)"`` (both > 0 and their mean >= threshold), ``"double"`` (both > 0),
    ``"single"`` (one > threshold, the other < 0), else ``"none"``."""
    if d_a > 0 and d_b > 0:
        return "double (distinct)" if (d_a + d_b) / 2 >= threshold else "double"
    if (d_a > threshold and d_b < 0) or (d_b > threshold and d_a < 0):
        return "single"
    return "none"


def overlap(masks: dict[str, torch.Tensor]) -> pd.DataFrame:
    """Table 11: percentage of task A's pruned heads that are also task B's (``|M_A & M_B| / |M_A|``)."""
    names = list(masks)
    out = pd.DataFrame(np.nan, index=pd.Index(names, name="B"), columns=pd.Index(names, name="A"))
    for a in names:
        for b in names:
            if a != b:
                out.loc[b, a] = 100 * float((masks[a] & masks[b]).sum()) / float(masks[a].sum())
    return out


def heads_per_layer(masks: dict[str, torch.Tensor]) -> pd.DataFrame:
    """Fig. 4: number of pruned heads in each layer (rows, from 1) for each task (columns)."""
    return pd.DataFrame({name: m.sum(dim=1).tolist() for name, m in masks.items()}, index=pd.RangeIndex(1, next(iter(masks.values())).shape[0] + 1, name="layer"))


def pruning_table(model, data: dict, masks: dict[str, torch.Tensor], random_masks: list[torch.Tensor] | None = None, split: str = "test", batch_size: int = 64, device=None) -> pd.DataFrame:
    """Table 3: main-metric performance of every task (columns) with each task's heads pruned (rows), plus
    ``Random`` (mean over ``random_masks``) and ``Base`` (nothing pruned). Pruning is gate values of 0."""
    from .importance import gates_from_mask
    from .train import evaluate

    rows = {}
    for name, mask in masks.items():
        rows[name] = evaluate(model, data, split, batch_size, device, gates=gates_from_mask(mask))["score"]
    if random_masks:
        rows["Random"] = pd.concat([evaluate(model, data, split, batch_size, device, gates=gates_from_mask(m))["score"] for m in random_masks], axis=1).mean(axis=1)
    rows["Base"] = evaluate(model, data, split, batch_size, device)["score"]
    table = pd.DataFrame(rows).T
    table.index.name = "pruned"
    table.columns.name = "evaluated"
    return table


# --- one IAP experiment ---------------------------------------------------------------------------------
from dataclasses import dataclass, field  # noqa: E402


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
    tokenised tasks between experiments. Tasks are built with data seed 0; ``seed`` drives training."""
    import dataclasses
    import time

    from .features import load_tokenizer
    from .importance import num_pruned, select_heads
    from .models import MultiTaskModel
    from .runtime import seed_everything
    from .train import TrainConfig, prepare, task_importance, train

    num_pruned(alpha, 1_000_000)  # alpha outside (0, 1]: the standard error, before any work
    if len(task_names) < 2:
        raise ValueError("IAP compares tasks: name at least two")
    tokenizer = tokenizer or load_tokenizer(model_name)
    data = data or prepare(task_names, tokenizer, seed=0, max_train=max_train, max_eval=max_eval, max_length=max_length)
    data = {n: data[n] for n in task_names}
    config = dataclasses.replace(train_config or TrainConfig(), seed=seed)
    seed_everything(seed)
    model = MultiTaskModel.from_pretrained(model_name, [data[n].task.spec() for n in task_names])
    start = time.perf_counter()
    result = train(model, data, config, progress=progress)
    seconds = time.perf_counter() - start
    importance = task_importance(model, data, config.batch_size, seed, importance_batches, progress=progress)
    masks = {n: select_heads(imp, alpha, "top") for n, imp in importance.items()}
    some = next(iter(importance.values()))
    random_masks = [select_heads(some, alpha, "random", seed=seed * 100 + r) for r in range(n_random)]
    perf = pruning_table(model, data, masks, random_masks, split="test", batch_size=config.eval_batch_size)
    return IAPResult(seed, perf, importance, masks, result.history, seconds, list(task_names))


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
            "D_A": d[a], "D_B": d[b], "D": (d[a] + d[b]) / 2, "reading": classify(d[a], d[b])}


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
    ``data``: tokenised tasks from :func:`mtllib.train.prepare` covering every task named in ``pairs``."""
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
    numeric = [c for c in DUAL_COLUMNS[2:] if c in rows.columns]
    grouped = rows.assign(pair=rows.A + " + " + rows.B).groupby("pair", sort=False)
    mean, sd = grouped[numeric].mean(), grouped[numeric].std(ddof=1)
    out = mean.join(sd.add_suffix("_sd"))
    out["reading"] = [classify(r.D_A, r.D_B) for r in mean.itertuples()]
    out["both_positive"] = grouped.apply(lambda g: float(((g.D_A > 0) & (g.D_B > 0)).mean()), include_groups=False)
    out["seeds"] = grouped.size()
    return out

"""The IAP chapters of "Interpreting and Exploiting Functional Specialization in Multi-Head Attention under
Multi-task Learning": 02 (dual-task IAP, Sec. 6.1, Fig. 2, Table 9), 03 (multi-task IAP, Sec. 6.1, Table 3),
04 (task similarity, Sec. 6.2, Fig. 3) and 05 (input paradigm, Sec. 6.2, Table 4). Each function here is one
step of those notebooks that is more than a call: the opening (parameters checked, data prepared, the task
table), the claims each chapter judges, and its figures. What a chapter computes stays in
:mod:`mtllib.experiments.iap` and :mod:`mtllib.analysis`; this module lays it out for a page.

``glue``: :func:`myst_nb.glue` without display (the default) or a stand-in taking ``(key, value)``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from mtllib.analysis import dissociation as dis
from mtllib.analysis import learnability, stats
from mtllib.book import plots
from mtllib.book.training_run import TrainingRun
from mtllib.book.tables import glue_claims, glue_function
from mtllib.data.tasks import get_task
from mtllib.experiments import iap
from mtllib.papers import functional_specialization as paper


@dataclass
class Start(TrainingRun):
    """What :func:`start` set up for an IAP chapter: the checked parameters, the device, the tokenizer, the
    prepared data and the training recipe, with the clock the chapter's run time is read from (``minutes()``)."""


def start(params: dict, notebook: str, tasks: list[str]) -> Start:
    """The opening of an IAP chapter, from its parameters (the notebook's ``globals()``): progress bars and
    library warnings silenced (:func:`mtllib.runtime.quiet_notebook`: the page keeps no stderr), every
    parameter checked before any work (:func:`mtllib.book.params.check_parameters`), the device picked, the
    ``tasks`` prepared (:meth:`~mtllib.book.training_run.TrainingRun.prepare`) and the training recipe
    (:meth:`~mtllib.book.training_run.TrainingRun.recipe`: ``epochs``, ``batch_size``, ``lr``, ``device``) built.
    Prints a one-line summary."""
    from mtllib.book.params import check_parameters
    from mtllib.runtime import pick_device, quiet_notebook

    started = time.perf_counter()
    quiet_notebook()
    p = check_parameters(params, notebook)
    device = pick_device(p["device"])
    print("device:", device, "| tasks:", ", ".join(tasks), "| seeds:", p["seeds"])
    run = Start(params=p, device=device, started=started)
    run.prepare(tasks)
    run.config = run.recipe()
    return run


def task_table(data: dict, role: dict[str, str] | None = None) -> pd.DataFrame:
    """One row per prepared task: the paper's task it stands for (``role``, else
    :data:`mtllib.papers.functional_specialization.PAPER_NAME`, else an em dash), its input paradigm, then
    :func:`mtllib.book.variants.data_table`'s columns (training and test sizes, main metric, the majority class's
    test score) and the chance level (percent, one decimal)."""
    from mtllib.book.variants import data_table

    role = role or {}
    table = data_table(data)
    table.insert(0, "paper's task", [role.get(n, paper.PAPER_NAME.get(n, stats.DASH)) for n in table.index])
    table.insert(1, "input", [get_task(n).paradigm for n in table.index])
    table["chance (%)"] = [round(learnability.chance(data[n].task), 1) for n in table.index]
    return table


def _pair_column(rows: pd.DataFrame, task: str, partner: str, column: str) -> pd.Series:
    """``column`` of the dual-task rows of the pair (``task``, ``partner``), indexed by seed."""
    return rows[(rows.A == task) & (rows.B == partner)].set_index("seed")[column]


def _version(task: str, partner: str) -> str:
    """A figure's label for ``task`` as trained beside ``partner``."""
    return f"{task}\n(with {partner})"


def _paper_table3_d() -> pd.Series:
    """D_i of each of the paper's tasks (Eq. 7) recomputed from its Table 3 (BERT-base)."""
    return dis.dissociation(paper.TABLE3.loc[paper.TASKS], paper.TABLE3.loc["Base"])


# --- chapter 02: dual-task IAP (Sec. 6.1, Table 9) ---------------------------------------------------------------
def mean_d(rows: pd.DataFrame, keep) -> pd.Series:
    """Per seed: the mean pair score D (Eq. 7) over the pairs ``(A, B)`` in ``keep``."""
    rows = rows[[(a, b) in keep for a, b in zip(rows.A, rows.B)]]
    return rows.groupby("seed").D.mean()


def dual_task_claims(verdict_rows: pd.DataFrame, verdict_pairs: list[tuple[str, str]], frozen_rows: pd.DataFrame | None,
                     frozen_gate: pd.DataFrame | None, glue=None) -> pd.DataFrame:
    """Chapter 02's claims (Sec. 6.1, Table 9), on the pairs in the verdicts (both tasks learned in every
    model; ``verdict_rows`` their rows): D_A > 0 and D_B > 0 per pair, the average D > 0, pairs of different
    input paradigms dissociating more than pairs of the same (compared with BERT-base's Table 9 gap), and
    fine-tuning raising D over the frozen encoder (on the seeds run both ways, pairs also learned frozen;
    ``frozen_rows``/``frozen_gate`` None when the control was not run). Glues the claims table and its counts
    (:func:`mtllib.book.tables.glue_claims`), ``n_double`` (pairs with both scores positive, k/n), ``avg_d``,
    ``frozen_note`` and the paper's ``paper_gain``, ``paper_cross`` and ``paper_same``."""
    glue = glue_function(glue)
    bert = paper.table9_pairs("BERT-base")
    rows = []
    for a, b in verdict_pairs:
        g = verdict_rows[(verdict_rows.A == a) & (verdict_rows.B == b)]
        pa, pb = paper.table9_pair(a, b)
        if np.isfinite(pa) and np.isfinite(pb):
            rows.append(stats.claim_row(f"D_A > 0: {a} with {b}", g.D_A, pa))
            rows.append(stats.claim_row(f"D_B > 0: {b} with {a}", g.D_B, pb))
    if verdict_pairs:
        rows.append(stats.claim_row("average D > 0 over the pairs in the verdicts", mean_d(verdict_rows, verdict_pairs),
                                    np.mean([np.mean(paper.table9_pair(a, b)) for a, b in verdict_pairs])))
    cross = [p for p in verdict_pairs if get_task(p[0]).paradigm != get_task(p[1]).paradigm]
    same = [p for p in verdict_pairs if p not in cross]
    paper_cross = np.array([paper.PARADIGM[a] != paper.PARADIGM[b] for a, b in zip(bert.A, bert.B)])
    if cross and same:
        gap = (mean_d(verdict_rows, cross) - mean_d(verdict_rows, same)).dropna()
        rows.append(stats.claim_row("pairs of different input paradigms dissociate more (D cross - D same, points)", gap,
                                    bert.D[paper_cross].mean() - bert.D[~paper_cross].mean()))
    both = [] if frozen_gate is None else [p for p in verdict_pairs if all(frozen_gate.loc[t, "in the verdicts"] == "yes" for t in p)]
    if both:
        gain = (mean_d(verdict_rows, both) - mean_d(frozen_rows, both)).dropna()  # seeds run both ways
        if len(gain):
            rows.append(stats.claim_row("fine-tuning raises D over the frozen encoder (points)", gain, paper.TABLE9_FINETUNE_GAIN,
                                        rule="95% t-interval over seeds run both ways"))
    claims = glue_claims(rows, "no pair has both tasks learned in every model", glue=glue)
    double = verdict_rows.assign(both=(verdict_rows.D_A > 0) & (verdict_rows.D_B > 0))
    glue("n_double", stats.format_count(double.both.sum(), len(double)) if len(double) else stats.DASH)
    glue("avg_d", stats.format_ci(stats.t_interval(mean_d(verdict_rows, verdict_pairs))) if verdict_pairs else stats.DASH)
    glue("frozen_note", "The frozen-encoder control was not run, so the fine-tuning claim is not judged." if frozen_rows is None
         else "No pair is in the verdicts, so the frozen-encoder comparison is not judged either." if not verdict_pairs
         else "The frozen-encoder control learned none of the pairs in the verdicts, so the fine-tuning claim is not judged." if not both
         else f"{len(both)} of the {len(verdict_pairs)} pairs in the verdicts were also learned with the frozen encoder.")
    glue("paper_gain", f"{paper.TABLE9_FINETUNE_GAIN:.2f}")
    glue("paper_cross", f"{bert.D[paper_cross].mean():.2f}")
    glue("paper_same", f"{bert.D[~paper_cross].mean():.2f}")
    return claims


def dual_scores_figure(verdict_rows: pd.DataFrame, verdict_pairs: list[tuple[str, str]]):
    """D_A and D_B of each pair in the verdicts: a point per seed, the mean with its 95% CI, the paper's
    Table 9 value beside (:func:`mtllib.book.plots.seeds_with_ci`)."""
    fig, ax = plt.subplots(figsize=(7, 3.6))
    if verdict_pairs:
        per_seed = pd.DataFrame({_version(t, o): _pair_column(verdict_rows, a, b, f"D_{side}")
                                 for a, b in verdict_pairs for side, t, o in (("A", a, b), ("B", b, a))})
        paper_values = pd.Series({_version(t, o): v for a, b in verdict_pairs
                                  for (t, o), v in zip(((a, b), (b, a)), paper.table9_pair(a, b))})
        plots.seeds_with_ci(ax, per_seed, paper_values, ylabel="dissociation score (%)")
        ax.set_title("D_A and D_B of each pair in the verdicts")
    else:
        plots.nothing_to_show(ax, "no pair has both tasks learned in every model")
    fig.tight_layout()
    return fig


def dual_grid_figure(tuned_rows: pd.DataFrame, frozen_rows: pd.DataFrame | None, pairs: list[tuple[str, str]],
                     verdict_pairs: list[tuple[str, str]], alpha: float):
    """The average D of every pair (columns; a dagger marks a pair outside the verdicts) for our fine-tuned
    and frozen-encoder models and the paper's BERT-base and BERT-base* (rows), as one annotated heat map."""
    label = {p: f"{p[0]} +\n{p[1]}" + ("" if p in verdict_pairs else " \u2020") for p in pairs}
    grid = pd.DataFrame({
        "ours, fine-tuned": tuned_rows.groupby(["A", "B"], sort=False).D.mean(),
        **({} if frozen_rows is None else {"ours, frozen encoder": frozen_rows.groupby(["A", "B"], sort=False).D.mean()}),
        "paper, BERT-base": pd.Series({p: np.mean(paper.table9_pair(*p)) for p in pairs}),
        "paper, BERT-base*": pd.Series({p: np.mean(paper.table9_pair(*p, "BERT-base*")) for p in pairs}),
    }).reindex(pairs)
    grid.index = [label[p] for p in pairs]  # one label per pair (a MultiIndex would show as tuples)
    grid = grid.T
    fig, ax = plt.subplots(figsize=(max(5.5, 1.3 * len(pairs) + 2.5), 3.4))
    plots.heatmap(ax, grid, vmin=-20, vmax=20, colorbar_label="D (%)")
    ax.set_title(f"average D per pair (alpha = {alpha:.0%})")
    fig.tight_layout()
    return fig


# --- chapter 03: multi-task IAP (Sec. 6.1, Table 3) --------------------------------------------------------------
def multitask_claims(results: list, learned: list[str], role: dict[str, str], glue=None) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """Chapter 03's claims (Sec. 6.1, Table 3) on the ``learned`` tasks (at least two, else none): D_i > 0 per
    task (Eq. 7) against the paper's value for its role, the average D > 0, and own-head pruning costing pair
    tasks more than single-input tasks (when both kinds were learned). Glues the claims table and its counts,
    ``own_lowest`` (how often a task scores lowest with its own heads pruned, k/n) and ``avg_d``. Returns the
    claims and the per-seed D_i (seeds x tasks; None with fewer than two learned tasks)."""
    glue = glue_function(glue)
    if len(learned) < 2:
        for key in ("own_lowest", "avg_d"):
            glue(key, stats.DASH)
        return glue_claims([], "fewer than two tasks were learned in every seed", glue=glue), None
    paper_d = _paper_table3_d()
    d_seed = iap.dissociation_by_seed(results, learned)
    drop = iap.own_pruning_drop(results, learned)
    paper_drop = 100 * (1 - pd.Series({t: paper.TABLE3.loc[t, t] for t in paper.TASKS}) / paper.TABLE3.loc["Base"])
    rows = [stats.claim_row(f"D_i > 0 for {t} ({role[t]}'s role)", d_seed[t], paper_d[role[t]]) for t in learned]
    rows.append(stats.claim_row("average D > 0 over the learned tasks", d_seed.mean(axis=1), paper_d[[role[t] for t in learned]].mean()))
    pair = [t for t in learned if get_task(t).paradigm == "pair"]
    single = [t for t in learned if get_task(t).paradigm == "single"]
    if pair and single:
        gap = drop[pair].mean(axis=1) - drop[single].mean(axis=1)
        rows.append(stats.claim_row("own-head pruning costs pair tasks more (drop pair - drop single, points)", gap,
                                    paper_drop[[role[t] for t in pair]].mean() - paper_drop[[role[t] for t in single]].mean()))
    own_lowest = sum(int(r.perf.loc[learned, t].idxmin() == t) for r in results for t in learned)
    glue("own_lowest", stats.format_count(own_lowest, len(results) * len(learned)))
    glue("avg_d", stats.format_ci(stats.t_interval(d_seed.mean(axis=1))))
    return glue_claims(rows, "fewer than two tasks were learned in every seed", glue=glue), d_seed


def dissociation_figure(d_seed: pd.DataFrame | None, role: dict[str, str]):
    """Each learned task's D_i (Eq. 7): a point per seed, the mean with its 95% CI, and the paper's value for
    the task's role (Table 3, BERT-base). ``d_seed`` None (fewer than two tasks learned): the panel says so."""
    fig, ax = plt.subplots(figsize=(7, 3.6))
    if d_seed is not None:
        plots.seeds_with_ci(ax, d_seed, _paper_table3_d().rename(index={v: k for k, v in role.items()}), ylabel="$D_i$ (%)")
        ax.set_title("Dissociation score of each learned task")
    else:
        plots.nothing_to_show(ax, "fewer than two tasks were learned in every seed")
    fig.tight_layout()
    return fig


def importance_maps(result, tasks: list[str]):
    """One model's head importance per task (Eq. 4, scaled to its maximum; layers x heads) with the heads IAP
    prunes for that task (the top alpha) outlined; three maps per row."""
    rows = max(1, math.ceil(len(tasks) / 3))
    fig, axes = plt.subplots(rows, 3, figsize=(7.5, 2.6 * rows), sharex=True, sharey=True, squeeze=False)
    for ax, t in zip(axes.flat, tasks):
        imp = result.importance[t].numpy()
        ax.imshow(imp / imp.max(), cmap="viridis", aspect="auto", vmin=0, vmax=1)
        ys, xs = result.masks[t].numpy().nonzero()
        ax.scatter(xs, ys, marker="s", facecolors="none", edgecolors="w", s=22)
        ax.set_title(t)
    for ax in axes.flat[len(tasks):]:
        ax.axis("off")
    for ax in axes[:, 0]:
        ax.set_ylabel("layer")
    for ax in axes[-1]:
        ax.set_xlabel("head")
    fig.tight_layout()
    return fig


def pairwise_figure(results: list, learned: list[str]):
    """Table 10's analog above the paper's: D_A of each evaluated task A (columns) when task B's heads are
    pruned (rows), the mean over the models, on the learned tasks (the panel says so with fewer than two)."""
    fig, axes = plt.subplots(2, 1, figsize=(6.5, 9.5))
    if len(learned) >= 2:
        ours = pd.concat([dis.pairwise_dissociation(r.perf.loc[learned, learned], r.perf.loc["Base", learned]) for r in results])
        plots.heatmap(axes[0], ours.groupby(level=0, sort=False).mean(), vmin=-20, vmax=20, colorbar_label="$D_A$ (%)")
        axes[0].set(title=f"ours (mean of {len(results)} seeds)", ylabel="pruned heads of task B")
    else:
        plots.nothing_to_show(axes[0], "fewer than two tasks were learned in every seed")
    plots.heatmap(axes[1], paper.TABLE10, vmin=-20, vmax=20, colorbar_label="$D_A$ (%)")
    axes[1].set(title="paper, BERT-base", xlabel="evaluated task A", ylabel="pruned heads of task B")
    fig.tight_layout()
    return fig


def heads_per_layer_figure(results: list, tasks: list[str]):
    """The important heads per layer for each task (mean over the models) and their mean (the analysis of
    the paper's Fig. 4 and Appendix C)."""
    layers = pd.concat([dis.heads_per_layer(r.masks) for r in results]).groupby(level=0).mean()
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    for t in tasks:
        ax.plot(layers.index, layers[t], marker="o", label=t)
    ax.plot(layers.index, layers.mean(axis=1), color="k", linestyle="--", label="mean")
    ax.set(xlabel="layer", ylabel="heads pruned", xticks=layers.index)
    ax.legend(ncols=2, frameon=False)
    fig.tight_layout()
    return fig


# --- chapter 04: task similarity (Sec. 6.2, Fig. 3) --------------------------------------------------------------
def similarity_heatmaps(tables: dict[str, pd.DataFrame]):
    """One annotated heat map per similarity measure (task x task; AHP's rows are sources, columns targets)."""
    fig, axes = plt.subplots(1, len(tables), figsize=(11, 3.8), squeeze=False)
    for ax, (name, table) in zip(axes[0], tables.items()):
        plots.heatmap(ax, table, cmap="viridis", fmt="{:.2f}")
        ax.set_title(name + (" (row: source, column: target)" if name == "AHP" else ""))
    fig.tight_layout()
    return fig


def similarity_scatter(tables: dict[str, pd.DataFrame], dissociation: pd.Series, verdict_pairs: list[str]):
    """Fig. 3's analog: for each similarity measure, every task pair's similarity against its average D:
    filled for the pairs in the verdicts, open for a pair with a task not learned, each point labelled."""
    from mtllib.analysis import similarity as sim

    fig, axes = plt.subplots(1, len(tables), figsize=(11, 3.8), sharey=True, squeeze=False)
    for ax, (name, table) in zip(axes[0], tables.items()):
        x = sim.pair_values(table, name).reindex(dissociation.index)
        inside = x.index.isin(verdict_pairs)
        ax.scatter(x[inside], dissociation[inside], color="C0", label="in the verdicts")
        ax.scatter(x[~inside], dissociation[~inside], facecolors="none", edgecolors="0.5", label="a task not learned")
        for pair, xv in x.items():
            ax.annotate(pair.replace(" + ", "+\n"), (xv, dissociation[pair]), fontsize=7, alpha=0.8, xytext=(3, 3), textcoords="offset points")
        ax.margins(x=0.25, y=0.2)
        ax.set(xlabel=f"{name} similarity", title=name)
    axes[0][0].set_ylabel("average D of the pair (%)")
    axes[0][0].legend(fontsize=7, frameon=False)
    fig.tight_layout()
    return fig


# --- chapter 05: input paradigm (Sec. 6.2, Table 4) --------------------------------------------------------------
def _paper_value(theirs: pd.DataFrame, role: dict[str, str], task: str, partner: str, column: str) -> float:
    key = (role[task], role[partner])
    return float(theirs.loc[key, column]) if key in theirs.index else np.nan


def paradigm_claims(rows: pd.DataFrame, theirs: pd.DataFrame, judged: list[str], single_task: str, pair_version: str,
                    role: dict[str, str], margin: float, glue=None) -> pd.DataFrame:
    """Chapter 05's claims (Sec. 6.2, Table 4), for each partner in ``judged`` (all three of its tasks learned in
    every model): the pair version of a task has the same D as the single-input version (an equivalence test
    within ``margin`` points), and the pair version loses more when its own heads are pruned (``drop_A``).
    ``rows``: the dual-task rows with ``drop_A``; ``theirs``: the paper's Table 4 indexed by (A, B) with
    ``drop_A``; ``role``: our task -> the paper's. Glues the claims table and its counts, the paper's mean
    drops (``drop_single_paper``, ``drop_pair_paper``) and ``margin``."""
    glue = glue_function(glue)
    claims_rows = []
    for p in judged:
        d_gap = (_pair_column(rows, pair_version, p, "D") - _pair_column(rows, single_task, p, "D")).dropna()
        paper_gap = _paper_value(theirs, role, pair_version, p, "D") - _paper_value(theirs, role, single_task, p, "D")
        claims_rows.append(stats.equivalence_row(f"same D with {p}: D({pair_version}) - D({single_task}), points", d_gap, margin,
                                                 paper_gap if np.isfinite(paper_gap) else None))
        drop_gap = (_pair_column(rows, pair_version, p, "drop_A") - _pair_column(rows, single_task, p, "drop_A")).dropna()
        paper_drop = _paper_value(theirs, role, pair_version, p, "drop_A") - _paper_value(theirs, role, single_task, p, "drop_A")
        if np.isfinite(paper_drop):
            claims_rows.append(stats.claim_row(f"{pair_version} drops more than {single_task} under own pruning, with {p} (points)", drop_gap, paper_drop))
    claims = glue_claims(claims_rows, "no partner has all its tasks learned in every model", glue=glue)
    paper_drops = theirs.drop_A.groupby(level=0).mean()
    glue("drop_single_paper", f"{paper_drops.get('AG', np.nan):.1f}")
    glue("drop_pair_paper", f"{paper_drops.get('AG-Pair', np.nan):.1f}")
    glue("margin", f"{margin:g}")
    return claims


def paradigm_figure(rows: pd.DataFrame, theirs: pd.DataFrame, judged: list[str], single_task: str, pair_version: str,
                    role: dict[str, str]):
    """Two panels for the partners in ``judged``: the pair's D and the own-pruning drop of each version of the
    task, a point per seed, the mean with its 95% CI, and the paper's Table 4 value."""
    fig, axes = plt.subplots(1, 2, figsize=(8, 3.6))
    if judged:
        versions = [(t, p) for p in judged for t in (single_task, pair_version)]
        for ax, column, ylabel in ((axes[0], "D", "D of the pair (%)"), (axes[1], "drop_A", "own-pruning drop (%)")):
            plots.seeds_with_ci(ax, pd.DataFrame({_version(t, p): _pair_column(rows, t, p, column) for t, p in versions}),
                                pd.Series({_version(t, p): _paper_value(theirs, role, t, p, column) for t, p in versions}), ylabel=ylabel)
            ax.tick_params(axis="x", labelsize=8)
        axes[0].set_title("dissociation of the pair")
        axes[1].set_title("cost of pruning the task's own heads")
    else:
        plots.nothing_to_show(axes, "no partner has all its tasks learned")
    fig.tight_layout()
    return fig

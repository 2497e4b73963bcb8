"""The IAP chapters of "Interpreting and Exploiting Functional Specialization in Multi-Head Attention under
Multi-task Learning": 02 (dual-task IAP, Sec. 6.1, Fig. 2, Table 9), 03 (multi-task IAP, Sec. 6.1, Table 3),
04 (task similarity, Sec. 6.2, Fig. 3) and 05 (input paradigm, Sec. 6.2, Table 4). Each function here is one
step of those notebooks that is more than a call: the opening (parameters checked, data prepared, the task
table), the claims each chapter judges, and its figures. What a chapter computes stays in
:mod:`mtllib.experiments.iap` and :mod:`mtllib.analysis`; this module lays it out for a page.

``glue``: :func:`myst_nb.glue` without display (the default) or a stand-in taking ``(key, value)``.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from mtllib.analysis import dissociation as dis
from mtllib.analysis import learnability, stats
from mtllib.book import plots
from mtllib.book.tables import ci_table, glue_claims, glue_function
from mtllib.book.training_run import TrainingRun
from mtllib.data.tasks import get_task
from mtllib.experiments import iap
from mtllib.papers import functional_specialization as paper


@dataclass
class Start(TrainingRun):
    """What :func:`start` set up for an IAP chapter: the checked parameters, the device, the tokenizer, the
    prepared data and the training recipe, with the clock the chapter's run time is read from (``minutes()``)."""

    def setup(self, rows: dict[str, list[str]] | None = None) -> pd.DataFrame:
        """The paper's set-up beside this run's (:func:`mtllib.papers.functional_specialization.deviations`,
        from the parameters and the recipe), then the chapter's own ``rows``: ``{setting: [paper, ours,
        differs]}``."""
        p = self.params
        ours = paper.our_setup(p["model"], self.config, max_train=p["max_train"], max_eval=p["max_eval"], max_length=p["max_length"],
                               seeds=p["seeds"], alpha=p["alpha"])
        table = paper.deviations(ours)
        for name, row in (rows or {}).items():
            table.loc[name] = row
        return table


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


def glue_gate(gate: pd.DataFrame, tasks: list[str], unit: str, glue=None) -> list[str]:
    """The ``tasks`` in the verdicts (``gate``'s ``in the verdicts`` column: learned in every model). Glues
    ``n_learned``, ``n_tasks`` and ``left_out`` (each task left out with its count: "bbc-next (learned in 1/3
    seeds)", ``unit`` naming the models; "none")."""
    glue = glue_function(glue)
    learned = [t for t in tasks if gate.loc[t, "in the verdicts"] == "yes"]
    glue("n_learned", str(len(learned)))
    glue("n_tasks", str(len(tasks)))
    glue("left_out", ", ".join(f"{t} (learned in {gate.loc[t, 'learned']} {unit})" for t in tasks if t not in learned) or "none")
    return learned


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


def dual_times(tuned_rows: pd.DataFrame, frozen_rows: pd.DataFrame | None, glue=None) -> None:
    """Prints how many dual-task models were trained and their mean training time; glues ``train_minutes`` (a
    fine-tuned model's mean) and ``frozen_time`` (a sentence on the frozen-encoder models)."""
    glue = glue_function(glue)
    glue("train_minutes", float(tuned_rows.train_seconds.mean()) / 60)
    glue("frozen_time", "No frozen-encoder model was trained." if frozen_rows is None
         else f"One frozen-encoder model took {frozen_rows.train_seconds.mean() / 60:.1f} minutes.")
    print(f"{len(tuned_rows)} fine-tuned models ({tuned_rows.train_seconds.mean():.0f} s of training each), "
          + ("no frozen-encoder model" if frozen_rows is None else f"{len(frozen_rows)} frozen-encoder models ({frozen_rows.train_seconds.mean():.0f} s each)"))


def dual_gates(tuned_rows: pd.DataFrame, frozen_rows: pd.DataFrame | None, tasks: list[str], pairs: list[tuple[str, str]],
               glue=None) -> tuple[pd.DataFrame, list[str], pd.DataFrame, list[tuple[str, str]]]:
    """The learnability gate of the fine-tuned and (when run) frozen-encoder models, one block each
    (:func:`mtllib.experiments.iap.dual_gate`), and what the verdicts keep: the tasks learned in every fine-tuned
    model, and the pairs of two such tasks with their rows. Glues :func:`glue_gate`'s keys, ``n_verdict_pairs``
    and ``n_pairs``. Returns ``(gates, learned, verdict_rows, verdict_pairs)``."""
    glue = glue_function(glue)
    tuned_gate = iap.dual_gate(tuned_rows)
    gates = pd.concat({"fine-tuned": tuned_gate, **({} if frozen_rows is None else {"frozen encoder": iap.dual_gate(frozen_rows)})},
                      names=["encoder", "task"])
    learned = glue_gate(tuned_gate, tasks, "models", glue)
    verdict_rows = iap.learned_pairs(tuned_rows, tuned_gate)
    verdict_pairs = list(dict.fromkeys(zip(verdict_rows.A, verdict_rows.B)))
    glue("n_verdict_pairs", str(len(verdict_pairs)))
    glue("n_pairs", str(len(pairs)))
    return gates, learned, verdict_rows, verdict_pairs


#: Table 9's columns as the chapter shows them
TABLE9_COLUMNS = {"base_A": "base A", "base_B": "base B", "D_A": "D_A", "D_B": "D_B", "D": "D"}


def table9(rows: pd.DataFrame | None, model: str = "BERT-base", verdict_pairs: list[tuple[str, str]] | None = None) -> pd.DataFrame:
    """Table 9's analog: per pair, the base scores and D_A, D_B, D as mean with 95% CI over the models
    (:func:`mtllib.book.tables.ci_table`), the paper's D_A, D_B for ``model`` (BERT-base, or BERT-base* for the
    frozen encoder) beside, and, given ``verdict_pairs``, whether the pair is in the verdicts. ``rows`` None
    (the frozen-encoder control not run): a one-cell table that says so."""
    if rows is None:
        return pd.DataFrame({"frozen-encoder control": ["not run with these parameters (frozen_seeds is empty)"]}, index=pd.Index([stats.DASH], name="pair"))
    table = ci_table(rows, ["A", "B"], list(TABLE9_COLUMNS)).rename(columns=TABLE9_COLUMNS)
    table["paper D_A, D_B" + ("" if model == "BERT-base" else f" ({model})")] = [
        ", ".join(f"{v:.2f}" for v in paper.table9_pair(a, b, model)) for a, b in table.index]
    if verdict_pairs is not None:
        table["in the verdicts"] = ["yes" if p in verdict_pairs else "no" for p in table.index]
    return table


def glue_dual_exercise(row: pd.Series, glue=None) -> None:
    """The numbers of chapter 02's exercises, from one dual-task model's row (:func:`mtllib.experiments.iap.dual_task`):
    ``ex_pair``, its scores and D's (``ex_base_A``, ``ex_A_pruned_on_A``, ``ex_B_pruned_on_A``, ``ex_D_A``,
    ``ex_D_B``, ``ex_D``) and ``ex_by_hand``, D_A worked out from the scores (Eq. 6)."""
    glue = glue_function(glue)
    glue("ex_pair", f"{row.A} + {row.B}, seed {row.seed}")
    for key in ("base_A", "A_pruned_on_A", "B_pruned_on_A", "D_A", "D_B", "D"):
        glue(f"ex_{key}", f"{row[key]:.2f}")
    glue("ex_by_hand", f"{100 * (row.B_pruned_on_A - row.A_pruned_on_A) / row.base_A:.2f}")


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


def overlap_table(results: list, alpha: float, glue=None) -> pd.DataFrame:
    """Table 11's analog: the share of important heads two tasks have in common (:func:`mtllib.analysis.dissociation.overlap`),
    the mean over the models, an em dash on the diagonal (a task with itself). Glues ``overlap_mean`` (ours, off
    the diagonal), ``overlap_paper`` (Table 11's) and ``alpha_pct``."""
    glue = glue_function(glue)
    overlap = pd.concat([dis.overlap(r.masks) for r in results]).groupby(level=0, sort=False).mean()
    glue("overlap_mean", float(overlap.stack().mean()))
    glue("overlap_paper", float(paper.TABLE11.stack().mean()))
    glue("alpha_pct", 100 * alpha)
    return overlap.round(1).astype(object).where(overlap.notna(), stats.DASH)


def glue_multitask_exercise(result, learned: list[str], tasks: list[str], glue=None) -> None:
    """The numbers of chapter 03's exercises, from one model (an :class:`~mtllib.experiments.iap.IAPResult`): for
    the first learned task, its base score, its score with its own heads and with each other learned task's heads
    pruned, D_i worked out by hand from Eq. 5 and 7 and by the library, and the mean D_i (``ex_task``, ``ex_base``,
    ``ex_own``, ``ex_others``, ``ex_by_hand``, ``ex_library``, ``ex_mean_d``; an em dash with fewer than two
    learned tasks); and ``ex_gate_line``, each task's gate in that model."""
    glue = glue_function(glue)
    ex = {k: stats.DASH for k in ("task", "base", "own", "others", "by_hand", "library", "mean_d")}
    r = result
    if len(learned) >= 2:
        t = learned[0]
        others = [j for j in learned if j != t]
        rp = {j: r.perf.loc[j, t] / r.perf.loc["Base", t] for j in learned}  # Eq. 5
        d = iap.dissociation_by_seed([r], learned).loc[r.seed]  # Eq. 7, every learned task
        ex.update(task=t, base=f"{r.perf.loc['Base', t]:.2f}", own=f"{r.perf.loc[t, t]:.2f}",
                  others="; ".join(f"{r.perf.loc[j, t]:.2f} with {j}'s heads pruned" for j in others),
                  by_hand=f"{100 * (sum(rp[j] for j in others) / len(others) - rp[t]):.2f}",
                  library=f"{d[t]:.2f}", mean_d=f"{d.mean():.2f}")
    passed = lambda t: "learned" if r.gate.loc[t, "learned"] else f"needs {r.gate.loc[t, 'threshold']:.1f}"  # noqa: E731
    ex["gate_line"] = "; ".join(f"{t} {r.gate.loc[t, 'score']:.1f} ({passed(t)})" for t in tasks)
    for k, v in ex.items():
        glue(f"ex_{k}", v)


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
def similarity_gate(task_models: dict, data: dict, multi_gate: pd.DataFrame, eval_batch_size: int = 64,
                    glue=None) -> tuple[pd.DataFrame, list[str], list[str]]:
    """The gate of the single-task models (each scored on its task's validation split against the majority
    class, :func:`mtllib.analysis.learnability.gate`) and what the verdicts keep: the tasks learned there and
    in every multi-task model (``multi_gate``, :func:`mtllib.experiments.iap.gate_table`), and the pairs of two
    such tasks ("A + B"). Glues ``n_learned``, ``n_tasks``, ``n_verdict_pairs`` and ``n_all_pairs``. Returns
    ``(table, learned, verdict_pairs)``, the table with score, majority, threshold and learned."""
    from mtllib.training.trainer import evaluate

    glue = glue_function(glue)
    tasks = list(task_models)
    scores = {t: float(evaluate(m, {t: data[t]}, "validation", eval_batch_size)["score"].iloc[0]) for t, m in task_models.items()}
    single = learnability.gate(scores, {t: learnability.majority_for(data[t], "validation") for t in tasks},
                               {t: get_task(t).main_metric for t in tasks})
    learned = [t for t in tasks if multi_gate.loc[t, "in the verdicts"] == "yes" and bool(single.loc[t, "learned"])]
    verdict_pairs = [f"{a} + {b}" for a, b in itertools.combinations(learned, 2)]
    for key, value in {"n_learned": len(learned), "n_tasks": len(tasks), "n_verdict_pairs": len(verdict_pairs),
                       "n_all_pairs": len(tasks) * (len(tasks) - 1) // 2}.items():
        glue(key, str(value))
    return single[["score", "majority", "threshold", "learned"]].round(1), learned, verdict_pairs


def pair_dissociation(results: list, learned: list[str], verdict_pairs: list[str]) -> tuple[pd.Series, pd.DataFrame]:
    """Each task pair's average D (Eq. 6-7 on the pair's two tasks, :func:`mtllib.analysis.dissociation.pairwise_dissociation`)
    over the learned tasks (every task with fewer than two learned), the mean over the models, and a table of it
    as mean with 95% CI and whether the pair is in the verdicts. Returns ``(mean D per pair, table)``."""
    from mtllib.analysis import similarity as sim

    keep = learned if len(learned) >= 2 else list(results[0].tasks)
    per_seed = pd.DataFrame({r.seed: sim.pair_values(dis.pairwise_dissociation(r.perf.loc[keep, keep], r.perf.loc["Base", keep]), "D")
                             for r in results})
    table = pd.DataFrame({"D (%)": [stats.format_ci(stats.t_interval(v.dropna()), 2) for _, v in per_seed.iterrows()],
                          "in the verdicts": ["yes" if p in verdict_pairs else "no" for p in per_seed.index]}, index=per_seed.index)
    return per_seed.mean(axis=1).rename("D"), table


def similarity_claims(tables: dict[str, pd.DataFrame], dissociation: pd.Series, verdict_pairs: list[str], glue=None) -> pd.DataFrame:
    """Chapter 04's claims (Sec. 6.2, Fig. 3): for each similarity measure, more similar pairs dissociate less (a
    negative correlation over the pairs in the verdicts, at least two, :func:`mtllib.analysis.stats.correlation_row`).
    Glues the claims table and its counts (:func:`mtllib.book.tables.glue_claims`)."""
    from mtllib.analysis import similarity as sim

    rows = []
    if len(verdict_pairs) >= 2:
        rows = [stats.correlation_row(f"{name}: more similar pairs dissociate less", sim.pair_values(table, name).reindex(verdict_pairs),
                                      dissociation.reindex(verdict_pairs)) for name, table in tables.items()]
    return glue_claims(rows, "fewer than two pairs have both tasks learned", glue=glue)


def glue_similarity_exercise(n_tasks: int, n_verdict_pairs: int, glue=None) -> None:
    """The numbers of chapter 04's exercises, the Fisher-z arithmetic behind the verdicts
    (:func:`mtllib.analysis.stats.correlation_interval`): ``ex_z95``, ``ex_r10`` (the smallest |r| significant with
    10 pairs), ``ex_needed_05`` (pairs needed for r = -0.5), ``ex_pairs_here`` and ``ex_ahp_uniform`` (AHP when the
    other tasks' models and the pretrained encoder do alike: 1 / tasks)."""
    from scipy.stats import norm

    glue = glue_function(glue)
    z95 = norm.ppf(0.975)
    glue("ex_z95", f"{z95:.2f}")
    glue("ex_r10", f"{math.tanh(z95 / math.sqrt(10 - 3)):.2f}")
    glue("ex_needed_05", str(stats.points_needed(-0.5)))
    glue("ex_pairs_here", str(n_verdict_pairs))
    glue("ex_ahp_uniform", f"{1 / n_tasks:.2f}")


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


def glue_paradigm_exercise(row: pd.Series, margin: float, glue=None) -> None:
    """The numbers of chapter 05's exercises, from one row of the paper's Table 4 (``row``): ``ex_pair``, its
    scores and D's as printed (``ex_base_A`` ... ``ex_D``), D_A, D_B and D worked out from the scores (Eq. 6:
    ``ex_da``, ``ex_db``, ``ex_d``), the largest gap to the printed values (``ex_gap``) and ``ex_margin``."""
    glue = glue_function(glue)
    glue("ex_pair", f"{row.A} + {row.B}")
    for key in ("base_A", "A_pruned_on_A", "B_pruned_on_A", "base_B", "A_pruned_on_B", "B_pruned_on_B", "D_A", "D_B", "D"):
        glue(f"ex_{key}", f"{row[key]:.2f}" if key.startswith(("base", "A_", "B_")) else f"{row[key]:.3f}")
    d_a = 100 * (row.B_pruned_on_A - row.A_pruned_on_A) / row.base_A  # Eq. 6
    d_b = 100 * (row.A_pruned_on_B - row.B_pruned_on_B) / row.base_B
    glue("ex_da", f"{d_a:.3f}")
    glue("ex_db", f"{d_b:.3f}")
    glue("ex_d", f"{(d_a + d_b) / 2:.3f}")
    glue("ex_gap", f"{max(abs(d_a - row.D_A), abs(d_b - row.D_B), abs((d_a + d_b) / 2 - row.D)):.3f}")
    glue("ex_margin", f"{margin:g}")

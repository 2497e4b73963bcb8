"""The few-shot transfer chapter (08) of "Interpreting and Exploiting Functional Specialization in Multi-Head
Attention under Multi-task Learning" (Sec. 6.3, Tables 6 and 8): the opening (parameters checked, the
multi-task and few-shot recipes, the IAT variants, the data), the targets' table, how far IAT moved the
encoder, the few-shot runs, Table 6 with the paired bootstrap test, Table 8, the gate and the claims, and the
figure. What the chapter trains stays in :mod:`mtllib.experiments.iat` and :mod:`mtllib.experiments.transfer`.

``glue``: :func:`myst_nb.glue` without display (the default) or a stand-in taking ``(key, value)``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import matplotlib.pyplot as plt
import pandas as pd

from mtllib.analysis import learnability, stats
from mtllib.book.adapter_pages import suite_words
from mtllib.book.tables import glue_claims, glue_function
from mtllib.book.training_run import TrainingRun
from mtllib.data.tasks import get_task
from mtllib.experiments import iat as exp
from mtllib.papers import functional_specialization_transfer as paper

#: the paper's target each of ours (or the hub's) stands for. SciTail's role: a pair-inference task; IMDB's: a
#: classification of single texts in a label space the suite does not train (the paper's is sentiment in another
#: domain; the offline assets hold one sentiment corpus, the suite's tweets, so bbc-topic's news topics take the role
#: where the suite lacks them, and tweet-pair, sentiment of two tweets, where it has them)
ROLE = {"bbc-pair": "SciTail", "tweet-pair": "IMDB", "bbc-topic": "IMDB", "scitail": "SciTail", "imdb": "IMDB"}

#: what a stand-in target is where it departs from its paper target in kind, not only in data: the page says it
#: beside the role (:func:`role_note`)
STAND_IN = {"bbc-topic": "a classification of single texts in a label space the suite does not train (news topics); it is "
                         "not a sentiment task: the offline assets hold one sentiment corpus, the suite's tweets"}


def source_recipe(tasks: list[str]) -> str:
    """The words that name the source models' recipe: chapter 07c's when ``tasks`` are the GLUE-like suite
    (:func:`mtllib.book.adapter_pages.suite_words`), chapter 07's otherwise."""
    suite = suite_words(tasks)
    return f"chapter 07c's recipe{suite}" if suite else "chapter 07's recipe"


def role_note(targets: list[str], tasks: list[str]) -> str:
    """What the page says of IMDB's role: which target takes it and how it differs from IMDB, or why none does
    (``tasks``: the multi-task suite, which a target may not be in)."""
    imdb = [t for t in targets if ROLE.get(t) == "IMDB"]
    if imdb:
        return ". ".join(f"{t} takes IMDB's role" + (f" as {STAND_IN[t]}" if t in STAND_IN else "") for t in imdb)
    topic = ("bbc-topic, which takes the role from the GLUE-like suite's models, is one of this suite's tasks" if "bbc-topic" in tasks
             else "bbc-topic takes it when `targets` names it (the book gives it a page of its own, so that each page keeps within the budget)")
    return ("This page has no target in IMDB's role: tweet-pair (do two tweets share a sentiment?) stayed near its majority "
            f"class in few-shot runs while the chapter was sized, and {topic}")


@dataclass
class Start(TrainingRun):
    """What :func:`start` set up for the few-shot chapter, with the clock its run time is read from
    (``minutes()``): ``config`` is the multi-task recipe (chapter 07's), ``few_shot_config`` the targets'
    (``few_shot_epochs``, ``few_shot_batch_size``, ``few_shot_lr``, the last epoch scored), ``variants`` the IAT
    variants (IAT, and random heads when ``ablation_k`` is set)."""

    few_shot_config: object = None
    variants: dict = field(default_factory=dict)


def start(params: dict, notebook: str, glue=None) -> Start:
    """The opening of the few-shot chapter, from its parameters (the notebook's ``globals()``): progress bars and
    library warnings silenced (:func:`mtllib.runtime.quiet_notebook`), every parameter checked
    (:func:`mtllib.book.params.check_parameters`), the recipes and IAT variants built and checked
    (:func:`mtllib.experiments.iat.variant_configs`), the suite and the targets prepared, the targets checked
    against the suite and the ``k``'s (:func:`mtllib.experiments.transfer.check_targets`), all before any
    training. Glues the paper's gains at the smallest k (``paper_scitail``, ``paper_imdb``), its random-head
    gains (``paper_random_scitail``, ``paper_random_imdb``), its standard deviations (``paper_sd_range``) and
    ``target_names``, ``source_recipe`` (:func:`source_recipe`) and ``role_note`` (:func:`role_note`); prints a
    one-line summary."""
    from mtllib.book.params import check_parameters
    from mtllib.experiments import transfer
    from mtllib.runtime import pick_device, quiet_notebook
    from mtllib.training.iat import IATConfig
    from mtllib.training.trainer import TrainConfig

    started = time.perf_counter()
    quiet_notebook()
    glue = glue_function(glue)
    p = check_parameters(params, notebook)
    for t in ("SciTail", "IMDB"):
        glue(f"paper_{t.lower()}", f"{paper.table6_gain(t, min(paper.KS)):+.2f}")
        glue(f"paper_random_{t.lower()}", f"{paper.table8_gain(t, 'random over BERT-base'):+.2f}")
    sds = paper.TABLE6[paper.TABLE6.k == min(paper.KS)]["sd"]
    glue("paper_sd_range", f"{sds.min():.1f} to {sds.max():.1f}")
    run = Start(params=p, device=pick_device(p["device"]), started=started)
    run.config = run.recipe()
    run.few_shot_config = TrainConfig(epochs=p["few_shot_epochs"], batch_size=p["few_shot_batch_size"], lr=p["few_shot_lr"],
                                      device=p["device"], keep_best=False)
    iat = dict(alpha=p["alpha"], delta=p["delta"], importance_batches=p["importance_batches"])
    run.variants = {"IAT": IATConfig(**iat), **({} if p["ablation_k"] is None else {"random heads": IATConfig(heads="random", **iat)})}
    exp.variant_configs(run.config, run.variants)
    run.prepare(p["tasks"] + p["targets"])
    transfer.check_targets(p["targets"], p["tasks"], run.data, sorted(set(p["ks"]) | ({p["ablation_k"]} if p["ablation_k"] else set())),
                           per_class=True)
    print("device:", run.device, "| suite:", p["tasks"], "| targets:", p["targets"], "| k per class:", p["ks"],
          "| few-shot seeds:", p["few_shot_seeds"])
    glue("target_names", ", ".join(f"{t} (in {ROLE[t]}'s role)" if t in ROLE else t for t in p["targets"]))
    glue("source_recipe", source_recipe(p["tasks"]))
    glue("role_note", role_note(p["targets"], p["tasks"]))
    return run


def target_table(data: dict, targets: list[str]) -> pd.DataFrame:
    """One column per target: the paper's target it stands for, its input paradigm, classes, the training pool
    and test sizes, the majority class's test score and what it is (shown transposed: one row per target)."""
    return pd.DataFrame({t: {"paper's target": ROLE.get(t, stats.DASH), "input": get_task(t).paradigm, "classes": len(get_task(t).label_names),
                             "train (pool)": len(data[t].features["train"]), "test": len(data[t].features["test"]),
                             "majority class, test (%)": round(learnability.majority_for(data[t], "test"), 1),
                             "what it is": get_task(t).description} for t in targets}).T


def distance_table(sources: dict, glue=None) -> pd.DataFrame:
    """How far each IAT variant's encoder moved from the baseline's (:func:`mtllib.analysis.distance.parameter_distance`):
    the largest change of a weight, the relative L2 change and the share of weights changed. Glues
    ``max_weight_change`` and ``relative_change`` (the largest over the variants)."""
    from mtllib.analysis.distance import parameter_distance

    glue = glue_function(glue)
    distance = pd.DataFrame({name: parameter_distance(sources[name].encoder, sources[exp.BASELINE].encoder)
                             for name in sources if name != exp.BASELINE}).T
    glue("max_weight_change", f"{distance.max_abs.max():.1e}")
    glue("relative_change", f"{distance.relative_l2.max():.1e}")
    return pd.DataFrame({"largest change of a weight": distance.max_abs.map("{:.1e}".format),
                         "relative L2 change": distance.relative_l2.map("{:.1e}".format),
                         "weights changed (%)": (100 * distance.changed).round(1)})


def few_shot_rows(sources: dict, data: dict, targets: list[str], ks: list[int], seeds: list[int], config,
                  ablation_k: int | None) -> pd.DataFrame:
    """Every few-shot run (:func:`mtllib.experiments.transfer.few_shot_transfer`): the baseline and IAT at every
    ``k``, random heads at ``ablation_k`` only; one row per target, source, k and seed. The runs fan out over
    devices when the machine asks for a sweep (:func:`mtllib.experiments.sweep.from_environment`)."""
    from mtllib.experiments import sweep as sweeps
    from mtllib.experiments import transfer

    sweep = sweeps.from_environment()
    rows = []
    for t in targets:
        main = {n: sources[n] for n in (exp.BASELINE, "IAT")}
        rows.append(transfer.few_shot_transfer(main, data[t], ks, seeds, config, progress=False, **sweep))
        if ablation_k is not None:
            rows.append(transfer.few_shot_transfer({"random heads": sources["random heads"]}, data[t], [ablation_k], seeds, config, progress=False,
                                                   **sweep))
    return pd.concat(rows, ignore_index=True)


def score(rows: pd.DataFrame, target: str, source: str, k: int, seeds: list[int]) -> pd.Series:
    """The test accuracy of ``source`` on ``target`` at ``k``, one value per few-shot seed (in ``seeds``' order)."""
    return rows[(rows.target == target) & (rows.source == source) & (rows.k == k)].set_index("seed").accuracy.reindex(seeds)


def _cell(s: pd.Series) -> str:
    """``mean (sd)`` as Table 6 prints it (the mean alone for one seed)."""
    return f"{s.mean():.2f} ({s.std(ddof=1):.2f})" if len(s) > 1 else f"{s.mean():.2f}"


def table6(rows: pd.DataFrame, targets: list[str], ks: list[int], seeds: list[int], glue=None) -> pd.DataFrame:
    """Table 6's analog: per target and k, the baseline's and IAT's accuracy as mean (sd) over the few-shot seeds,
    IAT starred when the paired bootstrap test (Dror et al., 2018; :func:`mtllib.analysis.significance.paired_bootstrap`)
    finds it better at the 5% level, its p-value, and the paper's BERT-base rows beside (starred as the paper
    stars them). Glues ``n_same`` and ``n_paired``: the paired runs whose two scores are equal."""
    from mtllib.analysis.significance import paired_bootstrap

    glue = glue_function(glue)
    table = []
    for t in targets:
        for k in ks:
            test = paired_bootstrap(score(rows, t, "IAT", k, seeds), score(rows, t, exp.BASELINE, k, seeds), seed=k)
            theirs = paper.TABLE6[(paper.TABLE6.target == ROLE[t]) & (paper.TABLE6.k == k)].set_index("model") if t in ROLE else pd.DataFrame()
            table.append({"target": t, "k": k, exp.BASELINE: _cell(score(rows, t, exp.BASELINE, k, seeds)),
                          "IAT": _cell(score(rows, t, "IAT", k, seeds)) + ("*" if test.significant else ""), "p (IAT > MTL)": f"{test.p_value:.3f}",
                          "paper: BERT-base": f"{theirs.loc['BERT-base', 'mean']:.2f}" if len(theirs) else stats.DASH,
                          "paper: + IAT": (f"{theirs.loc['BERT-base + IAT', 'mean']:.2f}" + ("*" if (ROLE[t], k) in paper.SIGNIFICANT else ""))
                          if len(theirs) else stats.DASH})
    paired = rows[rows.source.isin([exp.BASELINE, "IAT"])].pivot_table(index=["target", "k", "seed"], columns="source", values="accuracy").dropna()
    glue("n_same", str(int((paired["IAT"] == paired[exp.BASELINE]).sum())))
    glue("n_paired", str(len(paired)))
    return pd.DataFrame(table).set_index(["target", "k"])


def table8(rows: pd.DataFrame, targets: list[str], ablation_k: int | None, seeds: list[int]) -> pd.DataFrame:
    """Table 8's analog at ``ablation_k``: the baseline, random heads and IAT per target as mean (sd) over the
    few-shot seeds, the paper's SciTail and IMDB values beside; empty when ``ablation_k`` is None."""
    if ablation_k is None:
        return pd.DataFrame()
    table = pd.DataFrame({t: {src: _cell(score(rows, t, src, ablation_k, seeds)) for src in (exp.BASELINE, "random heads", "IAT")} for t in targets})
    table["paper (SciTail, IMDB)"] = [f"{paper.TABLE8.loc[m, 'SciTail']:.2f}, {paper.TABLE8.loc[m, 'IMDB']:.2f}" for m in paper.TABLE8.index]
    return table


def gate_and_claims(rows: pd.DataFrame, data: dict, targets: list[str], ks: list[int], ablation_k: int | None, seeds: list[int],
                    glue=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The gate in transfer (the baseline's mean test accuracy at the largest k against the target's majority
    class, :mod:`mtllib.analysis.learnability`) and the claims on the targets that pass it: IAT transfers better
    than the baseline at the smallest k (Table 6) and than random heads at ``ablation_k`` (Table 8), each a 95%
    t-interval over the few-shot seeds against the paper's gain (by its direction alone for a target in no paper
    target's role, :data:`ROLE`). Glues ``judged``, the claims table and its
    counts (:func:`mtllib.book.tables.glue_claims`) and the predict-then-run exercise's numbers for the first
    target at the largest k (``ex_target``, ``ex_baseline``, ``ex_iat_gain``, ``ex_gate``)."""
    glue = glue_function(glue)
    top, k0 = max(ks), min(ks)
    gate = learnability.gate({t: float(score(rows, t, exp.BASELINE, top, seeds).mean()) for t in targets},
                             {t: learnability.majority_for(data[t], "test") for t in targets}, {t: get_task(t).main_metric for t in targets})
    gate = gate.rename(columns={"score": f"baseline at k = {top} (mean)"}).rename_axis("target")
    judged = [t for t in targets if gate.loc[t, "learned"]]
    glue("judged", ", ".join(judged) or "none")
    claims_rows = []
    rule = "95% t-interval over few-shot seeds"

    def judge(claim, diffs, paper_gain):  # a target in no paper target's role is judged by the direction alone
        return stats.claim_row(claim, diffs, paper_gain, rule=rule) if paper_gain is not None else stats.sign_row(claim, diffs, rule=rule)

    for t in judged:
        role = ROLE.get(t)
        claims_rows.append(judge(f"{t}: IAT transfers better than the baseline at k = {k0} (points)",
                                 (score(rows, t, "IAT", k0, seeds) - score(rows, t, exp.BASELINE, k0, seeds)).dropna(),
                                 paper.table6_gain(role, min(paper.KS)) if role else None))
        if ablation_k is not None:
            claims_rows.append(judge(f"{t}: IAT transfers better than random heads at k = {ablation_k} (points)",
                                     (score(rows, t, "IAT", ablation_k, seeds) - score(rows, t, "random heads", ablation_k, seeds)).dropna(),
                                     paper.table8_gain(role, "train random 30% heads") if role else None))
    t0 = targets[0]
    glue("ex_target", t0)
    glue("ex_baseline", f"{score(rows, t0, exp.BASELINE, top, seeds).mean():.1f}")
    glue("ex_iat_gain", f"{(score(rows, t0, 'IAT', top, seeds) - score(rows, t0, exp.BASELINE, top, seeds)).mean():+.2f}")
    glue("ex_gate", f"{gate.loc[t0, 'threshold']:.1f}: {'passed' if gate.loc[t0, 'learned'] else 'not passed'}")
    return gate, glue_claims(claims_rows, "no target passed the learnability gate in transfer at this budget", glue=glue)


def few_shot_figure(rows: pd.DataFrame, data: dict, targets: list[str], ks: list[int], seeds: list[int]):
    """One panel per target: test accuracy against k (log scale) for the baseline, IAT and random heads, mean
    with the sd over the few-shot seeds as error bars (more than one seed), the majority class dotted."""
    fig, axes = plt.subplots(1, len(targets), figsize=(7.2, 3.3), sharey=False, squeeze=False)
    for ax, t in zip(axes[0], targets):
        for src, colour in ((exp.BASELINE, "0.4"), ("IAT", "C0"), ("random heads", "C1")):
            sub = rows[(rows.target == t) & (rows.source == src)].groupby("k").accuracy
            if sub.ngroups:
                mean, sd = sub.mean(), sub.std(ddof=1)
                ax.errorbar(mean.index, mean, yerr=sd if len(seeds) > 1 else None, marker="o", capsize=3, color=colour, label=src)
        ax.axhline(learnability.majority_for(data[t], "test"), color="0.7", ls=":", lw=1, label="majority class")
        ax.set(xscale="log", xticks=ks, xticklabels=[str(k) for k in ks], xlabel="k (examples per class)", title=f"{t} ({ROLE[t]}'s role)" if t in ROLE else t)
    axes[0][0].set_ylabel("test accuracy (%)")
    axes[0][0].legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig

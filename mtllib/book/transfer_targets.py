"""The target chapters of "Exploring the Role of Task Transferability in Large-Scale Multi-Task Learning":
09b (sequence-labelling targets), 09c (extractive QA) and 09d (classification) each fine-tune one group's unseen
targets from every pre-finetuned encoder and from the pretrained one (Sec. 3, Appendix B.2), and show the same
tables and figure; only their narrative, parameters and exercises differ. Each function here is one step of
those notebooks. The tables they glue (``scores``, ``gate``, ``costs``, ``design``) are what the Tables chapter
reads back (:mod:`mtllib.book.results`).

``glue``: :func:`myst_nb.glue` without display (the default) or a stand-in taking ``(key, value)``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import matplotlib.pyplot as plt
import pandas as pd

from mtllib.book import results
from mtllib.book.training_run import TrainingRun
from mtllib.book.tables import glue_function, mean_sd
from mtllib.experiments import transferability as tr
from mtllib.papers import task_transferability as paper


@dataclass
class Start(TrainingRun):
    """What :func:`start` set up for a target chapter: the schemes, the device, the two training recipes and the
    prepared data, with the clock the chapter's run time is read from (``minutes()``)."""

    schemes: list[str]
    #: the pre-finetuning and fine-tuning recipes (:class:`~mtllib.training.trainer.TrainConfig`), set by :func:`start`
    pf_config: object = None
    ft_config: object = None


def start(params: dict, notebook: str, glue=None) -> Start:
    """The opening of a target chapter, from its parameters (the notebook's ``globals()``): every parameter
    (:func:`mtllib.book.params.check_parameters`) and the design (every scheme of ``groups``,
    :func:`mtllib.experiments.transferability.check_design`) checked before any work; the device picked; the
    pre-finetuning and fine-tuning recipes (:class:`~mtllib.training.trainer.TrainConfig`, early stopping with
    ``patience`` as Appendix B.2 says; :meth:`~mtllib.book.training_run.TrainingRun.recipe`); the data prepared
    (:func:`prepare_data`). Glues what the opening text reads (``target_group``, ``targets``, ``n_seeds``,
    ``n_schemes_pf``, ``max_train`` as :func:`sizes_text` writes it, ``epochs``) and prints a one-line summary.
    Progress bars and library warnings are silenced first (:func:`mtllib.runtime.quiet_notebook`): the page
    keeps no stderr."""
    from mtllib.book.params import check_parameters
    from mtllib.runtime import pick_device, quiet_notebook

    started = time.perf_counter()
    quiet_notebook()
    glue = glue_function(glue)
    p = check_parameters(params, notebook)
    schemes = tr.all_schemes(p["groups"])
    tr.check_design(p["groups"], {p["target_group"]: p["targets"]}, schemes)
    device = pick_device(p["device"])
    run = Start(params=p, device=device, started=started, schemes=schemes)
    run.pf_config, run.ft_config = run.recipe(epochs=p["pf_epochs"], device=device), run.recipe(device=device)
    run.data = prepare_data(p["model"], p["groups"], p["targets"], p["max_length"], p["max_train"], p["max_eval"], p["pf_train"], p["pf_eval"])
    for key, value in {"target_group": p["target_group"], "targets": ", ".join(p["targets"]), "n_seeds": len(p["seeds"]),
                       "n_schemes_pf": len(schemes) - 1, "max_train": sizes_text(p["max_train"], p["targets"]), "epochs": p["epochs"]}.items():
        glue(key, str(value))
    print("device:", device, "| schemes:", len(schemes), "| targets:", ", ".join(p["targets"]), "| seeds:", p["seeds"])
    return run


def prepare_data(model: str, groups: dict[str, list[str]], targets: list[str], max_length: int, max_train: int | dict | None,
                 max_eval: int | dict | None, pf_train: int | dict | None, pf_eval: int | dict | None) -> dict:
    """Every pre-finetuning task of ``groups`` at the pre-finetuning sizes (``pf_train``/``pf_eval``, a size or
    ``{task: size}`` with an optional ``"default"``, as the pre-finetuning chapter prepares them, so its encoders
    come from the model cache) and every target at
    ``max_train``/``max_eval`` (a size for every target, or ``{target: size}`` with an optional ``"default"``:
    a target that needs more examples to be learned gets them without raising the others' cost), tokenized by
    ``model``'s tokenizer."""
    from mtllib.data.features import load_tokenizer, per_task, prepare

    pf_tasks = tr.grouped_tasks(groups)
    return prepare(pf_tasks + list(targets), load_tokenizer(model), max_length=max_length,
                   max_train={**_per_target(max_train), **{t: per_task(pf_train, t) for t in pf_tasks}},
                   max_eval={**_per_target(max_eval), **{t: per_task(pf_eval, t) for t in pf_tasks}})


def _per_target(size: int | dict | None) -> dict:
    return dict(size) if isinstance(size, dict) else {"default": size}


def sizes_text(size: int | dict | None, targets: list[str]) -> str:
    """A target size as the text reads it: ``"200"``, ``"all"``, or ``"200 (bbc-ner 800)"`` when some targets
    differ from the rest (``size`` as :func:`prepare_data` takes it; ``"200 (bbc-ner 800)"`` needs a
    ``"default"``, otherwise every target is listed)."""
    from mtllib.data.features import per_task

    if not isinstance(size, dict):
        return "all" if size is None else str(size)
    values = {t: per_task(size, t) for t in targets}
    shown = lambda n: "all" if n is None else str(n)
    if "default" not in size:
        return ", ".join(f"{t} {shown(n)}" for t, n in values.items())
    odd = {t: n for t, n in values.items() if n != size["default"]}
    return shown(size["default"]) + (f" ({', '.join(f'{t} {shown(n)}' for t, n in odd.items())})" if odd else "")


def fine_tune_targets(model: str, groups: dict[str, list[str]], target_group: str, targets: list[str], data: dict, pf_config, ft_config,
                      seeds: list[int], schemes: list[str], glue=None) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Every scheme's encoder (:func:`mtllib.experiments.transferability.run`), then every target over ``seeds``;
    the learnability gate of each target on the baseline. Glues the tables ``scores``, ``gate``, ``costs`` and
    ``design`` for the Tables chapter, and ``n_runs``, ``pf_minutes`` (training minutes of the encoders; for one
    from the model cache, the run that made it) and ``n_cached`` for the text. Returns ``(scores, gate, costs)``,
    costs one row per scheme as the page shows it."""
    glue = glue_function(glue)
    run = tr.run(tr.model_factory(model), groups, {target_group: targets}, data, pf_config, ft_config, seeds, schemes, progress=False)
    scores, costs = run["scores"], run["costs"]
    gate = tr.target_gate(scores, data)
    frames = {"scores": scores, "gate": gate.reset_index(), "costs": costs, "design": tr.design_frame(groups, {target_group: targets})}
    for name, frame in frames.items():
        results.glue_frame(name, frame, glue=lambda key, value, display=False: glue(key, value))
    glue("n_runs", str(len(scores)))
    glue("pf_minutes", f"{costs.seconds.sum() / 60:.1f}")
    glue("n_cached", f"{int(costs.cached.sum())} of {int((costs.scheme != 'Baseline').sum())}")
    return scores, gate, costs.set_index("scheme")[["tasks", "train examples", "epochs", "cached", "total seconds"]]


def scheme_table(scores: pd.DataFrame, schemes: list[str], target_group: str, glue=None) -> pd.DataFrame:
    """The paper's Table 1 turned on its side for one group: one row per scheme, "mean (sd)" over seeds per
    target, the average over the targets (our Table 2 row for the group) and the paper's Table 2 row beside it.
    Glues ``best_ours`` and ``best_paper`` (the scheme with the best average) and ``spread_ours`` (points between
    our best and worst scheme)."""
    glue = glue_function(glue)
    mean, sd = tr.table1(scores, schemes)
    table = mean_sd(mean, sd)
    table.index = [t if t != "Average" else f"average over our {target_group} targets" for _, t in table.index]
    ours = tr.table2(scores, schemes).loc[target_group]
    theirs = tr.paper_table2(schemes, [target_group]).loc[target_group]
    table.loc[f"paper: its {target_group} targets (Table 2)"] = [f"{v:.1f}" for v in theirs]
    glue("best_ours", ours.idxmax())
    glue("best_paper", theirs.idxmax())
    glue("spread_ours", f"{ours.max() - ours.min():.1f}")
    return table.T.rename_axis("scheme").rename_axis("target", axis=1)


def glue_gate(gate: pd.DataFrame, glue=None) -> pd.DataFrame:
    """Glue which targets the baseline learned (``learned``, ``not_learned``) and the first target's gate worked
    through for an exercise (``ex_target``, ``ex_margin``, ``ex_majority``, ``ex_threshold``, ``ex_baseline``,
    ``ex_verdict``); returns the gate table as the page shows it."""
    from mtllib.analysis import learnability

    glue = glue_function(glue)
    first = gate.iloc[0]
    baseline = next(c for c in gate.columns if c.endswith("(mean)"))
    values = {"learned": ", ".join(gate.index[gate.learned]) or "none", "not_learned": ", ".join(gate.index[~gate.learned]) or "none",
              "ex_target": gate.index[0], "ex_margin": f"{learnability.MARGIN:.0f}", "ex_majority": f"{first.majority:.1f}",
              "ex_threshold": f"{first.threshold:.1f}", "ex_baseline": f"{first[baseline]:.1f}",
              "ex_verdict": "learned" if first.learned else "not learned"}
    for key, value in values.items():
        glue(key, value)
    return gate.round(1)


def ranking(scores: pd.DataFrame, target: str, among: list[str]) -> str:
    """``"Only-SL > Baseline > ..."``: the schemes ``among`` ordered by their mean score on ``target``."""
    missing = [s for s in among if s not in set(scores.scheme)]
    if missing:
        raise KeyError(f"no scores of scheme(s) {missing} for {target!r}")
    order = scores[(scores.target == target) & scores.scheme.isin(among)].groupby("scheme").score.mean().sort_values(ascending=False)
    return " > ".join(order.index)


def scores_figure(scores: pd.DataFrame, schemes: list[str], targets: list[str], majority: dict[str, float]):
    """One panel per target: its test score under each scheme, a grey dot per seed, the mean with one standard
    deviation as its bar (the spread the paper's Table 1 reports; black for the baseline), and the majority
    class as a dotted line."""
    fig, axes = plt.subplots(1, len(targets), figsize=(7.2, 3.2), squeeze=False)
    for ax, t in zip(axes[0], targets):
        sub = scores[scores.target == t]
        for i, s in enumerate(schemes):
            values = sub[sub.scheme == s].score
            ax.scatter([i] * len(values), values, s=9, color="0.65", zorder=2)
            ax.errorbar(i, values.mean(), yerr=values.std() if len(values) > 1 else None, fmt="o", ms=4, capsize=3,
                        color="0.15" if s == "Baseline" else "C0", zorder=3)
        ax.axhline(majority[t], color="0.6", ls=":", lw=1)
        ax.set_xticks(range(len(schemes)), schemes, rotation=60, ha="right", fontsize=7)
        ax.set_title(t, fontsize=9)
    axes[0][0].set_ylabel("test score (%)")
    fig.tight_layout()
    return fig


def differences(model: str, groups: dict[str, list[str]], target_group: str, targets: list[str], pf_train: int | dict | None, pf_epochs: int,
                seeds: list[int], patience: int, epochs: int, n_test: int) -> pd.DataFrame:
    """What a target chapter does differently from the paper, one row per setting: the paper's column from
    :mod:`mtllib.papers.task_transferability`, ours from the chapter's parameters (``n_test``: test examples
    per target)."""
    n_pf_tasks = sum(map(len, groups.values()))
    theirs = {"encoder": "XLM-R base",
              "pre-finetuning tasks": ", ".join(f"{g} {len(ts)}" for g, ts in paper.PREFINETUNING.items()) + " datasets (Appendix A)",
              "pre-finetuning size": "all training data (" + ", ".join(f"{n // 1000:,}k {g}" for g, n in paper.TRAIN_EXAMPLES.items()) + " examples)",
              "targets": f"{sum(map(len, paper.TARGETS.values()))} unseen datasets", "fine-tuning seeds": str(paper.SEEDS),
              "early stopping": "mean validation loss, patience 3 (Appendix B.2)", "scored on": "validation sets"}
    ours = {"encoder": model, "pre-finetuning tasks": f"{n_pf_tasks} tasks built offline from BBC articles and tweets (SL and QA: spaCy's silver labels)",
            "pre-finetuning size": f"{sizes_text(pf_train, tr.grouped_tasks(groups))} examples per task, at most {pf_epochs} epochs",
            "targets": f"{len(targets)} unseen {target_group} targets in this chapter",
            "fine-tuning seeds": str(len(seeds)), "early stopping": f"the same rule, patience {patience}, at most {epochs} epochs",
            "scored on": f"test split, {n_test} examples per target"}
    return pd.DataFrame({"paper": theirs, "ours": ours}).rename_axis("setting")

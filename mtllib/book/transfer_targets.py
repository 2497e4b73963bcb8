"""The target pages of "Exploring the Role of Task Transferability in Large-Scale Multi-Task Learning": one
source notebook (``09b_transfer_sl_targets``) made into a page per group of targets (``notebooks/pages.yml``:
09b sequence labelling, 09c and 09c2 extractive QA, 09d and 09d2 classification), each fine-tuning its unseen
targets from every pre-finetuned encoder and from the pretrained one (Sec. 3, Appendix B.2). Each function
here is one step of that notebook; what a page says of its group and its targets (:data:`GROUP_TEXT`,
:data:`TARGET_NOTES`) is glued by :func:`start`. The tables they glue (``scores``, ``gate``, ``costs``,
``design``) are what the Tables chapter reads back (:mod:`mtllib.book.results`).

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


#: what a target page says of its group: its name, what the paper found for the group's targets (its Table 2),
#: and the group's exercise with its solution (MyST markdown; glued into the page by :func:`start`, which
#: refuses any other group)
GROUP_TEXT = {
    "SL": {
        "name": "sequence-labelling",
        "paper": "In the paper, SL targets gain from schemes that include SL, and pre-finetuning on classification "
                 "alone hurts them (its Table 2).",
        "exercise": "tweet-pos and tweet-chunk tag tweets with the label sets of the SL pre-finetuning tasks bbc-pos and "
                    "bbc-chunk, while bbc-ner tags BBC sentences, the pre-finetuning text, with a label set no "
                    "pre-finetuning task uses. What does a gain from Only-SL over the baseline measure on each kind of "
                    "target, and which of the three tests transfer between *tasks* most cleanly?",
        "solution": "On tweet-pos and tweet-chunk the task is seen and the domain is new: a gain measures how well "
                    "what was learned on BBC sentences carries over to tweets (domain transfer of a seen task). On "
                    "bbc-ner the text is seen and the labels are new (bbc-mention marks the same spans without their "
                    "18 types): a gain there is transfer between tasks, the paper's question, so bbc-ner is the "
                    "cleanest of the three; the paper's SL targets are new datasets, some close to a pre-finetuning "
                    "task in format.",
    },
    "QA": {
        "name": "extractive-QA",
        "paper": "In the paper, QA targets gain most from schemes that include QA, and pre-finetuning on SL alone or "
                 "on C alone hurts them (its Table 2).",
        "exercise": "(a) tweet-entity-qa asks the same typed entity questions as the pre-finetuning task "
                    "bbc-entity-qa, on tweets instead of BBC text. Is it an unseen target in the paper's sense? What "
                    "would you change to make it one, and what would it cost?\n\n(b) A question and its context are "
                    "cut to `max_length` tokens together. What does the model learn from an example whose answer "
                    "lies after the cut, and how would you count such examples in a target's training set?",
        "solution": "(a) The task format is seen (the templated questions), the domain is not; the paper's unseen "
                    "targets are new datasets, some with formats close to a pre-finetuning task. Taking "
                    "bbc-entity-qa out of the QA group would make the format unseen too, but the group would then "
                    "hold three tasks, below the minimum of four: a new QA task would have to replace it, and every "
                    "scheme with QA would be pre-finetuned again.\n\n(b) `mtllib.data.features` points the start and "
                    "end of such an answer at the first token, as SQuAD's preprocessing does for unanswerable "
                    "windows: the model learns \"no answer here\" from it, and at test time such an example can only "
                    "be scored as a miss. Count them by encoding the split and comparing the answer's character span "
                    "with the offsets of the last context token kept (`return_offsets_mapping=True`); raising the "
                    "maximum length or splitting long contexts into overlapping windows (the stride of Hugging "
                    "Face's QA examples) keeps them.",
    },
    "C": {
        "name": "classification",
        "paper": "In the paper, classification targets gain little from any scheme, and pre-finetuning on "
                 "classification alone is about as good as on every group (its Table 2).",
        "exercise": "The SL targets are learned from 200 sentences; the C targets get more. Count what one training "
                    "example teaches in each case, and say why a three-class sentence task needs more examples than "
                    "a tagging task over the same number of sentences.",
        "solution": "A tagged sentence gives one label per word, a dozen or more, each with its own gradient, and "
                    "tags such as part of speech are largely predictable from the word and its neighbours, which the "
                    "pretrained encoder already represents. A sentiment example gives one label for the whole tweet, "
                    "decided by a few words and often by irony, emoji or context the tweet leaves out. So the "
                    "supervision per example is much smaller and the mapping harder, and the learning curve of "
                    "`benchmarks/bench_learnability.py --curve` rises over hundreds of examples rather than tens.",
    },
}

#: what a target page says of each target it fine-tunes (the ``cpu`` profile's targets; a target without a note
#: is described by its task's description, :class:`mtllib.data.tasks.Task`)
TARGET_NOTES = {
    "tweet-pos": "part-of-speech tags of tweets: bbc-pos's labels in another domain.",
    "tweet-chunk": "noun chunks of tweets: bbc-chunk's labels in another domain.",
    "bbc-ner": "typed named entities of BBC sentences: a label set no pre-finetuning task uses (bbc-mention marks the "
               "same spans without their 18 types, so it is the closest pre-finetuning task). The `cpu` profile gives "
               "it more examples than the others: runs at their size did not pass its gate and runs at the larger one "
               "did, over three seeds (`benchmarks/results/transfer_target_probes_800_cpu.json`).",
    "bbc-quote": "the quoted words a person said, with answers far longer than any pre-finetuning answer.",
    "bbc-headline-wh": "the headline's entity asked with a wh-phrase and answered from the article body.",
    "tweet-entity-qa": "typed entity questions over tweets: bbc-entity-qa's format in another domain (an exercise below "
                       "asks whether that makes it unseen). The `cpu` profile gives it more examples than the other QA "
                       "targets: single-task runs at their size (`benchmarks/results/transfer_target_probes_cpu.json`) "
                       "and at twice it did not pass its gate, and runs at the larger one did, over three seeds "
                       "(`benchmarks/results/transfer_target_probes_800_cpu.json`).",
    "tweet-sentiment": "the sentiment of tweets (three classes): a domain and a label set no C pre-finetuning task "
                       "uses. At the SL and QA targets' size single-task runs left it within a few points of its gate "
                       "(`benchmarks/results/transfer_target_probes_cpu.json`), so the `cpu` profile fine-tunes every "
                       "C target on more examples. tweet-pair and bbc-pair, drawn first beside it, were not learned at "
                       "that size; tweet-pair is left out, and bbc-pair became a C pre-finetuning task (alone it passes "
                       "its gate at the size the pre-finetuning chapter gives it).",
    "bbc-lede": "do a headline and an article's first sentence tell the same story? A pair task of the GLUE-like suite "
                "(QQP's role there) whose question no pre-finetuning task asks; learned alone at the C targets' size "
                "(`benchmarks/results/learnability_glue_like_cpu.json`).",
    "bbc-entailment": "does a statement follow from two sentences? A pair task of the GLUE-like suite (RTE's role, and "
                      "the closest of our tasks to the paper's CB); learned alone at the C targets' size and not at half "
                      "of it (`benchmarks/results/learnability_glue_like_cpu.json`); its runs cost about twice the "
                      "other C targets' (longer inputs).",
}


def targets_note(targets: list[str]) -> str:
    """One markdown bullet per target: what it asks and how it differs from the pre-finetuning tasks
    (:data:`TARGET_NOTES`, or the task's own description)."""
    from mtllib.data.tasks import get_task

    return "\n".join(f"- **{t}**: {TARGET_NOTES.get(t) or get_task(t).description}" for t in targets)


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
    (:func:`prepare_data`). Glues what the opening text reads (``target_group``, ``group_name``, ``paper_finding``,
    ``pf_tasks``, ``targets``, ``n_seeds``, ``n_schemes_pf``, ``max_train`` as :func:`sizes_text` writes it,
    ``epochs``; markdown: ``targets_note``, ``group_exercise``, ``group_solution``) and prints a one-line summary.
    Progress bars and library warnings are silenced first (:func:`mtllib.runtime.quiet_notebook`): the page
    keeps no stderr."""
    from IPython.display import Markdown

    from mtllib import checks
    from mtllib.book.params import check_parameters
    from mtllib.runtime import pick_device, quiet_notebook

    started = time.perf_counter()
    quiet_notebook()
    glue = glue_function(glue)
    p = check_parameters(params, notebook)
    if p["target_group"] not in GROUP_TEXT:  # the page compares with the paper's row for the group (its Table 2)
        raise checks.BadInput(f"target_group must be one of the paper's groups {', '.join(GROUP_TEXT)}, got {p['target_group']!r}")
    schemes = tr.all_schemes(p["groups"])
    tr.check_design(p["groups"], {p["target_group"]: p["targets"]}, schemes)
    device = pick_device(p["device"])
    run = Start(params=p, device=device, started=started, schemes=schemes)
    run.pf_config, run.ft_config = run.recipe(epochs=p["pf_epochs"], device=device), run.recipe(device=device)
    run.data = prepare_data(p["model"], p["groups"], p["targets"], p["max_length"], p["max_train"], p["max_eval"], p["pf_train"], p["pf_eval"])
    text = GROUP_TEXT[p["target_group"]]
    for key, value in {"target_group": p["target_group"], "targets": ", ".join(p["targets"]), "n_seeds": len(p["seeds"]),
                       "n_schemes_pf": len(schemes) - 1, "max_train": sizes_text(p["max_train"], p["targets"]), "epochs": p["epochs"],
                       "group_name": text["name"], "paper_finding": text["paper"], "pf_tasks": ", ".join(p["groups"][p["target_group"]])}.items():
        glue(key, str(value))
    for key, value in {"targets_note": targets_note(p["targets"]), "group_exercise": text["exercise"], "group_solution": text["solution"]}.items():
        glue(key, Markdown(value))
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
    """Every scheme's encoder (:func:`mtllib.experiments.transferability.run`), then every target over ``seeds``
    (fanned out over devices when the machine asks for a sweep: :func:`mtllib.experiments.sweep.from_environment`);
    the learnability gate of each target on the baseline. Glues the tables ``scores``, ``gate``, ``costs`` and
    ``design`` for the Tables chapter, and ``n_runs``, ``pf_minutes`` (training minutes of the encoders; for one
    from the model cache, the run that made it) and ``n_cached`` for the text. Returns ``(scores, gate, costs)``,
    costs one row per scheme as the page shows it."""
    from mtllib.experiments import sweep

    glue = glue_function(glue)
    run = tr.run(tr.model_factory(model), groups, {target_group: targets}, data, pf_config, ft_config, seeds, schemes, progress=False,
                 **sweep.from_environment())
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
    our best and worst scheme), and for the page's first target ``first_target``, ``first_among`` (the baseline,
    each one-group scheme and the scheme with every group), ``first_order`` (those ranked by mean score,
    :func:`ranking`) and ``first_sd`` (the baseline's sd over seeds), for an exercise."""
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
    first = scores.target.iloc[0]
    n_groups = lambda s: len(tr.scheme_groups(s))
    among = [s for s in schemes if n_groups(s) <= 1] + [max(schemes, key=n_groups)]
    baseline = scores[(scores.target == first) & (scores.scheme == "Baseline")].score
    for key, value in {"first_target": first, "first_among": ", ".join(among), "first_order": ranking(scores, first, among),
                       "first_sd": f"{baseline.std():.1f}"}.items():
        glue(key, value)
    return table.T.rename_axis("scheme").rename_axis("target", axis=1)


def gate_rule(metric: str) -> str:
    """The book's learnability threshold for ``metric`` in words, from :mod:`mtllib.analysis.learnability`'s
    floors and margin (e.g. "the larger of 50 and the majority class's score plus 15 points")."""
    from mtllib.analysis import learnability

    floor, margin = learnability.FLOORS[metric], f"the majority class's score plus {learnability.MARGIN:g} points"
    if learnability.threshold(metric, 100.0) != 100.0 + learnability.MARGIN:  # no margin over the majority class
        return f"{floor:g}, whatever the majority class scores"
    return margin if floor is None else f"the larger of {floor:g} and {margin}"


def glue_gate(gate: pd.DataFrame, glue=None) -> pd.DataFrame:
    """Glue which targets the baseline learned (``learned``, ``not_learned``) and the first target's gate worked
    through for an exercise (``ex_target``, ``ex_metric``, ``ex_rule`` as :func:`gate_rule` says it,
    ``ex_majority``, ``ex_threshold``, ``ex_baseline``, ``ex_verdict``); returns the gate table as the page shows it."""
    glue = glue_function(glue)
    first = gate.iloc[0]
    baseline = next(c for c in gate.columns if c.endswith("(mean)"))
    values = {"learned": ", ".join(gate.index[gate.learned]) or "none", "not_learned": ", ".join(gate.index[~gate.learned]) or "none",
              "ex_target": gate.index[0], "ex_metric": first.metric, "ex_rule": gate_rule(first.metric), "ex_majority": f"{first.majority:.1f}",
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

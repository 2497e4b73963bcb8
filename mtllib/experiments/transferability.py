"""Pre-finetuning on combinations of task groups, then fine-tuning unseen targets: the experiment of "Exploring the
Role of Task Transferability in Large-Scale Multi-Task Learning" (Sec. 2-3, Appendix B).

1. **Pre-finetuning** (:func:`pre_finetune`): one shared encoder and one head per task, trained on every task of
   the scheme's groups at once. Batches are *heterogeneous*: all examples of all tasks in one pool, every batch
   drawn from the shuffled pool (not grouped by length), so the mix of tasks in training is the mix of
   examples (Appendix A, "Heterogeneous Batches"); cross-entropy without loss scaling; the best epoch by the average over tasks of each task's mean
   validation loss, stopping when it has not improved for ``patience`` epochs (App. B.2: 3).
2. **Fine-tuning** (:func:`fine_tune`): for each target and seed, the pre-finetuned encoder with a *fresh* head
   (:func:`mtllib.experiments.transfer.transfer_model`; the head of seed ``s`` is initialised after
   ``torch.manual_seed(s)``, the same for every scheme, so runs of one seed differ only in the encoder),
   trained to convergence by the same rule and scored.
3. :func:`run` does both for every scheme (``"Baseline"`` fine-tunes the pretrained encoder directly);
   :func:`table1` and :func:`table2` aggregate as the paper's Tables 1 and 2.

Schemes are named as in the paper (:data:`mtllib.papers.task_transferability.SCHEMES`); the groups are the
caller's (``{"SL": [...], "QA": [...], "C": [...]}``), as are the targets of each group.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from dataclasses import dataclass

import pandas as pd
from tqdm.auto import tqdm

from mtllib import checks
from mtllib.experiments.transfer import transfer_model
from mtllib.papers.task_transferability import scheme_groups


def grouped_tasks(groups: dict[str, list[str]]) -> list[str]:
    """Every task of ``groups`` (``{group: [task, ...]}``, the pre-finetuning groups or the targets of each
    group), group by group in their order."""
    return [t for tasks in groups.values() for t in tasks]


def all_schemes(groups) -> list[str]:
    """``"Baseline"`` and every non-empty combination of ``groups`` in the paper's naming, smallest first
    (``["Baseline", "Only-SL", "Only-C", "Only-QA", "SL+C", "SL+QA", "C+QA", "SL+C+QA"]`` for SL, C, QA)."""
    named = []
    for r in range(1, len(groups) + 1):
        for combo in itertools.combinations(list(groups), r):
            named.append("Only-" + combo[0] if r == 1 else "+".join(combo))
    return ["Baseline", *named]


def check_design(groups: dict[str, list[str]], targets: dict[str, list[str]], schemes: list[str], data: dict | None = None) -> None:
    """Bad input, before any training: an unknown group name (in ``targets`` or a scheme), an empty group, a
    task in two groups, a target that is also pre-finetuned on, a task without prepared data (``data=None``:
    checked before the data is prepared, all but the last)."""
    checks.items("schemes", schemes, checks.text)
    if not groups:
        raise checks.BadInput("groups is empty: name at least one group of pre-finetuning tasks, e.g. {'SL': [...]}")
    for name, tasks in groups.items():
        if not tasks:
            raise checks.BadInput(f"group {name!r} has no pre-finetuning tasks")
    for name in targets:
        if name not in groups:
            raise checks.BadInput(f"targets name the group {name!r}, which is not one of the groups {sorted(groups)}")
    for scheme in schemes:
        try:
            used = scheme_groups(scheme)
        except ValueError as err:
            raise checks.BadInput(str(err)) from None
        unknown = [g for g in used if g not in groups]
        if unknown:
            raise checks.BadInput(f"scheme {scheme!r} uses group(s) {unknown} that are not given; groups: {sorted(groups)}")
    seen: dict[str, str] = {}
    for name, tasks in groups.items():
        for t in tasks:
            if t in seen:
                raise checks.BadInput(f"task {t!r} is in two groups ({seen[t]!r} and {name!r})")
            seen[t] = name
    all_targets = grouped_tasks(targets)
    if not all_targets:
        raise checks.BadInput("no target tasks: name at least one unseen target per group")
    inside = sorted(set(all_targets) & set(seen))
    if inside:
        raise checks.BadInput(f"target task(s) {inside} are also pre-finetuning tasks: targets must be unseen")
    missing = [t for t in [*seen, *all_targets] if data is not None and t not in data]
    if missing:
        raise checks.BadInput(f"data has no prepared task {missing}; prepared: {', '.join(data)}")


@dataclass(frozen=True)
class ModelFactory:
    """``make_model(specs)`` for :func:`run`: ``model`` (a name :func:`mtllib.data.assets.resolve_model` knows)
    with one head per spec, the heads initialised after ``torch.manual_seed(seed)``, so the same scheme always
    starts from the same weights (and hits the model cache). A dataclass, not a closure, so that the workers
    of a sweep (:mod:`mtllib.experiments.sweep`) can be sent it."""

    model: str
    seed: int = 0

    def __call__(self, specs):
        import torch

        from mtllib.modeling.multitask import MultiTaskModel

        torch.manual_seed(self.seed)
        return MultiTaskModel.from_pretrained(self.model, specs)


def model_factory(model: str, seed: int = 0) -> ModelFactory:
    """:class:`ModelFactory` of ``model`` and ``seed``."""
    return ModelFactory(model, seed)


def design_frame(groups: dict[str, list[str]], targets: dict[str, list[str]]) -> pd.DataFrame:
    """The design as a tidy table: one row per task with its group and role (``"pre-finetuning"`` or
    ``"target"``), pre-finetuning tasks first."""
    rows = [{"group": g, "task": t, "role": "pre-finetuning"} for g, ts in groups.items() for t in ts]
    rows += [{"group": g, "task": t, "role": "target"} for g, ts in targets.items() for t in ts]
    return pd.DataFrame(rows, columns=["group", "task", "role"])


def target_gate(scores: pd.DataFrame, data: dict, scheme: str = "Baseline", split: str = "test") -> pd.DataFrame:
    """Was each target learned? The mean over seeds of ``scheme``'s score (default: no pre-finetuning) against
    the majority class on ``split`` (the split the runs are scored on), by the book's one gate
    (:mod:`mtllib.analysis.learnability`). One row per target: metric, mean, majority, threshold, learned."""
    from mtllib.analysis import learnability

    means = scores[scores.scheme == scheme].groupby("target", sort=False).score.mean()
    if means.empty:
        raise ValueError(f"no scores of scheme {scheme!r}: the gate needs it")
    table = learnability.gate(means.astype(float).to_dict(), {t: learnability.majority_for(data[t], split) for t in means.index},
                              {t: data[t].task.main_metric for t in means.index})
    table = table.rename(columns={"score": f"{scheme} (mean)"})[["metric", f"{scheme} (mean)", "majority", "threshold", "learned"]]
    return table.rename_axis("target")


def prefinetune_config(config):
    """``config`` as pre-finetuning runs it: heterogeneous batches drawn from the shuffled pool *without* grouping
    by length (grouped, batches of similar lengths gather tasks of similar lengths: QA contexts are long,
    sentences short, and a batch's mix of tasks drifts from the pool's; measured on SL+QA+C, 13% of grouped
    batches were three-quarters one group, none drawn from the pool; Appendix A pools and batches, nothing
    more), the best epoch by average validation loss."""
    return dataclasses.replace(config, batching="heterogeneous", select_on="loss", group_by_length=False)


def pre_finetune(make_model, scheme: str, groups: dict[str, list[str]], data: dict, config, progress: bool = True):
    """Pre-finetune ``make_model(specs)`` on every task of ``scheme``'s groups (:func:`prefinetune_config` of
    ``config``, through the model cache): ``(model, record)``, the record holding the scheme, its tasks, the
    training examples in the pool, epochs run, best epoch, examples processed and training seconds."""
    from mtllib.training.cache import train_cached

    tasks = [t for g in scheme_groups(scheme) for t in groups[g]]
    sub = {t: data[t] for t in tasks}
    model = make_model([sub[t].task.spec() for t in tasks])
    run_config = prefinetune_config(config)
    result, seconds, hit = train_cached(model, sub, run_config, progress=progress)
    pool = sum(len(td.features["train"]) for td in sub.values())
    epochs = int(result.history.epoch.max())
    return model, {"scheme": scheme, "tasks": len(tasks), "train examples": pool, "epochs": epochs, "best epoch": result.best_epoch,
                   "stopped early": result.stopped_epoch is not None, "examples processed": pool * epochs,
                   "seconds": round(seconds, 1), "cached": hit}


def fine_tune(source, target_data, seeds: list[int], config, split: str = "test") -> pd.DataFrame:
    """Fine-tune ``source``'s encoder with a fresh head on ``target_data`` once per seed (the best epoch by
    validation loss, ``config.patience`` as given) and score ``split``: one row per seed with its metrics
    (each run's scores cached, :func:`mtllib.training.cache.train_and_score`)."""
    import torch

    from mtllib.training.cache import train_and_score

    rows = []
    name = target_data.task.name
    for seed in seeds:
        torch.manual_seed(seed)
        model = transfer_model(source, target_data.task.spec())
        scores, epochs, _ = train_and_score(model, {name: target_data}, dataclasses.replace(config, seed=seed, select_on="loss"), split)
        rows.append({"target": name, "seed": seed, "epochs": epochs, **scores.iloc[0].to_dict()})
    return pd.DataFrame(rows)


def _source(make_model, scheme: str, groups: dict[str, list[str]], data: dict, prefinetune) -> tuple:
    """The encoder a scheme's targets are fine-tuned from, with its cost record: the pretrained one for the
    baseline (its head is never used: :func:`fine_tune` makes a fresh one), else :func:`pre_finetune`'s."""
    if scheme == "Baseline":
        return make_model([next(iter(data.values())).task.spec()]), {
            "scheme": scheme, "tasks": 0, "train examples": 0, "epochs": 0, "best epoch": 0, "stopped early": False,
            "examples processed": 0, "seconds": 0.0, "cached": False}
    return pre_finetune(make_model, scheme, groups, data, prefinetune, progress=False)


def fine_tune_job(make_model, scheme: str, groups: dict[str, list[str]], data: dict, prefinetune, target: str, seeds: list[int],
                  finetune, split: str, device: str) -> tuple[pd.DataFrame, float]:
    """One job of a sweep (:mod:`mtllib.experiments.sweep`): ``target`` fine-tuned over ``seeds`` on ``device``
    from ``scheme``'s encoder, which comes from the model cache (:func:`run` pre-finetuned it first); returns
    the rows of :func:`fine_tune` and the job's seconds."""
    start = time.perf_counter()
    source, _ = _source(make_model, scheme, groups, data, prefinetune)
    out = fine_tune(source, data[target], seeds, dataclasses.replace(finetune, device=device), split)
    return out, time.perf_counter() - start


def run(make_model, groups: dict[str, list[str]], targets: dict[str, list[str]], data: dict, prefinetune, finetune,
        seeds: list[int], schemes: list[str] | None = None, split: str = "test", progress: bool = True,
        engine: str = "serial", devices: list[str] | None = None, address: str | None = None) -> dict:
    """Every scheme (default: :func:`all_schemes` of ``groups``): pre-finetune, then fine-tune every target over
    ``seeds``. Returns ``{"scores": one row per (scheme, target, seed), "costs": one row per scheme}``; the
    design and the sweep's settings are checked (:func:`check_design`, :func:`mtllib.experiments.sweep.check`)
    before anything trains.

    ``engine="serial"`` (the default) runs everything here, scheme by scheme. Any other engine pre-finetunes
    every scheme here first (so each encoder is in the model cache), then fans the (scheme, target) fine-tuning
    jobs out over ``devices`` (:func:`fine_tune_job`; ``make_model`` must pickle: :func:`model_factory`'s does);
    the scores come back in the serial run's order. A scheme's ``total seconds`` is then its pre-finetuning
    plus its jobs' own seconds (work, not wall-clock time)."""
    from mtllib.experiments import sweep

    schemes = list(schemes) if schemes is not None else all_schemes(groups)
    check_design(groups, targets, schemes, data)
    checks.items("seeds", seeds, lambda n, v: checks.integer(n, v, 0))
    devices = sweep.check(devices, engine, address=address)
    group_of = {t: g for g, ts in targets.items() for t in ts}
    if engine != "serial":
        return _run_sweep(make_model, groups, group_of, data, prefinetune, finetune, seeds, schemes, split, progress,
                          engine, devices, address)
    scores, costs = [], []
    for scheme in tqdm(schemes, desc="schemes", disable=not progress):
        start = time.perf_counter()
        source, record = _source(make_model, scheme, groups, data, prefinetune)
        costs.append(record)
        for target, group in group_of.items():
            out = fine_tune(source, data[target], seeds, finetune, split)
            scores.append(out.assign(scheme=scheme, group=group))
        costs[-1]["total seconds"] = round(time.perf_counter() - start, 1)
    return _tables(scores, costs)


def _run_sweep(make_model, groups, group_of, data, prefinetune, finetune, seeds, schemes, split, progress, engine, devices, address) -> dict:
    from mtllib.experiments import sweep

    costs = [_source(make_model, scheme, groups, data, prefinetune)[1] for scheme in tqdm(schemes, desc="schemes", disable=not progress)]
    jobs, keys = [], []
    for scheme in schemes:
        needed = [t for g in scheme_groups(scheme) for t in groups[g]]  # what the worker's model-cache lookup reads
        for target, group in group_of.items():
            sub = {t: data[t] for t in dict.fromkeys(needed + [target])}
            jobs.append(sweep.Job(f"{scheme} -> {target}", fine_tune_job, dict(
                make_model=make_model, scheme=scheme, groups=groups, data=sub, prefinetune=prefinetune, target=target,
                seeds=seeds, finetune=finetune, split=split)))
            keys.append((scheme, group))
    results = sweep.run(jobs, devices, engine, address=address, progress=progress)
    scores = [out.assign(scheme=scheme, group=group) for (out, _), (scheme, group) in zip(results, keys)]
    for record in costs:
        record["total seconds"] = round(record["seconds"] + sum(sec for (_, sec), (s, _) in zip(results, keys) if s == record["scheme"]), 1)
    return _tables(scores, costs)


def _tables(scores: list[pd.DataFrame], costs: list[dict]) -> dict:
    table = pd.concat(scores, ignore_index=True)
    return {"scores": table[["scheme", "group", *[c for c in table.columns if c not in ("scheme", "group")]]], "costs": pd.DataFrame(costs)}


def table1(scores: pd.DataFrame, schemes: list[str] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 1 as two frames, ``(mean, sd)`` of ``score`` over seeds: one row per (group, target) in the order of
    ``scores``, one column per scheme, and a last row ``("all", "Average")``: the average over targets of the
    means, and of the standard deviations (the paper's "Average" and "Average Std. Dev." rows)."""
    schemes = schemes or list(dict.fromkeys(scores.scheme))
    order = list(dict.fromkeys(zip(scores.group, scores.target)))
    grouped = scores.groupby(["group", "target", "scheme"])["score"]
    out = []
    for stat in ("mean", "std"):
        frame = grouped.agg(stat).unstack("scheme").loc[order, schemes]
        frame.loc[("all", "Average"), :] = frame.mean()
        frame.columns.name = "scheme"
        out.append(frame)
    return out[0], out[1]


def table2(scores: pd.DataFrame, schemes: list[str] | None = None) -> pd.DataFrame:
    """Table 2: the mean over a group's targets of each target's mean over seeds, per scheme; then their average."""
    schemes = schemes or list(dict.fromkeys(scores.scheme))
    per_target = scores.groupby(["group", "target", "scheme"], sort=False)["score"].mean().reset_index()
    by_group = per_target.groupby(["group", "scheme"], sort=False)["score"].mean().unstack("scheme")[schemes]
    by_group.loc["Average"] = by_group.mean()
    by_group.index.name = "target group"
    return by_group


# --- the paper's claims, judged on learned targets (Sec. 4) ---------------------------------------------------
def paper_table2(schemes: list[str], groups: list[str] | None = None) -> pd.DataFrame:
    """The paper's Table 2 (:data:`mtllib.papers.task_transferability.TABLE2`) with our scheme names as columns,
    in the order of ``schemes``; rows: ``groups`` (default: every group of the paper's table), in that order."""
    from mtllib.papers.task_transferability import TABLE2

    groups = list(TABLE2.index) if groups is None else list(groups)
    unknown = [g for g in groups if g not in TABLE2.index]
    if unknown:
        raise checks.BadInput(f"the paper's Table 2 has no group {unknown}; it has {list(TABLE2.index)}")
    return TABLE2.loc[groups, [paper_scheme(s) for s in schemes]].set_axis(list(schemes), axis=1)


def paper_scheme(scheme: str) -> str:
    """The paper's column name for ``scheme`` (``"SL+C+QA"`` -> ``"SL+QA+C"``: the same groups)."""
    from mtllib.papers.task_transferability import SCHEMES

    wanted = frozenset(scheme_groups(scheme))
    return next(s for s in SCHEMES if frozenset(scheme_groups(s)) == wanted)


def seed_differences(scores: pd.DataFrame, a: str, b: str, targets: list[str]) -> pd.Series:
    """Per seed, the mean over ``targets`` of scheme ``a``'s score minus scheme ``b``'s (runs of one seed share
    the head initialisation and data order, so the difference is paired)."""
    sub = scores[scores.target.isin(targets)]
    per_seed = sub.pivot_table(index="seed", columns="scheme", values="score", aggfunc="mean")
    return (per_seed[a] - per_seed[b]).dropna()


def claims(scores: pd.DataFrame, learned: list[str], margin: float = 1.0) -> tuple[list[dict], list[str]]:
    """The paper's claims (Sec. 4, Tables 1-2) as claim rows (:mod:`mtllib.analysis.stats`), judged on the
    ``learned`` targets only, with the paper's value beside ours; and a note for every claim that could not
    be judged (its targets were not learned, or its schemes were not run). ``margin`` (points) is the largest
    difference that counts as "competitive" (the paper calls 80.844 vs 80.750 and 75.252 vs 75.678 on par).

    1. the scheme with every group beats each other scheme on the average over targets;
    2. pre-finetuning on the target's own group only is competitive with every group (equivalence);
    3. a mismatched group hurts: Only-C on SL targets and Only-SL on QA targets, against the baseline;
    4. pre-finetuning on every group lowers the spread across seeds (sd per target, against the baseline);
    5. a single matching group beats the mismatched rest (Sec. 4: Only-QA above SL+C on QA targets, Only-SL
       above QA+C on SL targets, Only-C above SL+QA on C targets).
    """
    from mtllib.analysis import stats
    from mtllib.papers import task_transferability as paper

    rows, notes = [], []
    schemes = list(dict.fromkeys(scores.scheme))
    run = {frozenset(scheme_groups(s)): s for s in schemes}
    groups_of = scores.drop_duplicates("target").set_index("target").group.to_dict()
    learned = [t for t in dict.fromkeys(scores.target) if t in set(learned)]
    in_group = {g: [t for t in learned if groups_of[t] == g] for g in dict.fromkeys(scores.group)}
    every_group = frozenset(g for s in schemes for g in scheme_groups(s))
    everything = run.get(every_group)
    if not learned:
        return rows, ["no target was learned: no claim can be judged"]
    if everything is None or len(schemes) < 2:
        notes.append("the scheme with every group was not run: claims 1, 2 and 4 need it")
    else:
        for other in schemes:
            if other == everything:
                continue
            values = seed_differences(scores, everything, other, learned)
            paper_value = paper.TABLE1_AVERAGE[paper_scheme(everything)] - paper.TABLE1_AVERAGE[paper_scheme(other)]
            rows.append(stats.claim_row(f"{everything} above {other} on the average over learned targets", values, round(paper_value, 3),
                                        rule="95% t-interval over seeds of the paired difference"))
        for g, targets in in_group.items():
            own = run.get(frozenset([g]))
            if own is None or not targets or g not in paper.TABLE2.index:
                notes.append(f"'own group is competitive' for {g}: " + ("Only-" + g + " was not run" if own is None else "no learned target" if not targets else "the paper has no such group"))
                continue
            values = seed_differences(scores, own, everything, targets)
            paper_value = paper.TABLE2.loc[g, paper_scheme(own)] - paper.TABLE2.loc[g, paper_scheme(everything)]
            rows.append(stats.equivalence_row(f"{own} as good as {everything} on {g} targets", values, margin, round(paper_value, 3)))
        sd = scores[scores.target.isin(learned)].groupby(["scheme", "target"]).score.std().unstack("scheme")
        if "Baseline" in sd:
            rows.append(stats.sign_row(f"{everything} lowers the sd across seeds against Baseline (per target)", (sd[everything] - sd["Baseline"]).dropna(),
                                       direction=-1, rule="95% t-interval over learned targets"))
    for scheme, group in (("Only-C", "SL"), ("Only-SL", "QA")):
        mine = run.get(frozenset(scheme_groups(scheme)))
        targets = in_group.get(group, [])
        if mine is None or "Baseline" not in schemes or not targets:
            notes.append(f"'{scheme} hurts {group} targets': " + ("no learned target in " + group if mine is not None and "Baseline" in schemes else f"{scheme} or Baseline was not run"))
            continue
        paper_value = paper.TABLE2.loc[group, scheme] - paper.TABLE2.loc[group, "Baseline"]
        rows.append(stats.claim_row(f"{scheme} below Baseline on {group} targets", seed_differences(scores, mine, "Baseline", targets), round(paper_value, 3),
                                    rule="95% t-interval over seeds of the paired difference"))
    for g, targets in in_group.items():
        own, rest = run.get(frozenset([g])), run.get(every_group - {g}) if len(every_group) > 1 else None
        if own is None or rest is None or not targets or g not in paper.TABLE2.index:
            notes.append(f"'a single matching group beats the mismatched rest' for {g}: "
                         + ("no learned target" if not targets else "the paper has no such group" if g not in paper.TABLE2.index
                            else f"Only-{g} or the scheme of the other groups was not run"))
            continue
        paper_value = paper.TABLE2.loc[g, paper_scheme(own)] - paper.TABLE2.loc[g, paper_scheme(rest)]
        rows.append(stats.claim_row(f"{own} above {rest} on {g} targets", seed_differences(scores, own, rest, targets), round(paper_value, 3),
                                    rule="95% t-interval over seeds of the paired difference"))
    return rows, notes

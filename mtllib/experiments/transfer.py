"""Few-shot transfer from multi-task models, Sec. 6.3 of "Interpreting and Exploiting Functional Specialization
in Multi-Head Attention under Multi-task Learning" (Tables 6 and 8): each multi-task model's encoder, with a
fresh head for a target task that was not in the multi-task suite, is fine-tuned on a few examples of the
target and scored; the same few-shot seeds (the same k-shot subsets, the same head
initialisation) for every source model, so the comparisons are paired by seed. Scores are on the target's
test split by default (the paper reports development sets; ours are the held-out split).
"""

from __future__ import annotations

import copy

import pandas as pd

from mtllib import checks


def transfer_model(source, target_spec):
    """A new :class:`~mtllib.modeling.multitask.MultiTaskModel`: a copy of ``source``'s encoder (its pooling
    and dropout) with one freshly initialised head for ``target_spec``."""
    from mtllib.modeling.multitask import MultiTaskModel

    dropout = next(iter(source.heads.values())).dropout.p if len(source.heads) else None
    return MultiTaskModel(copy.deepcopy(source.encoder).cpu(), [target_spec], dropout=dropout, pooling=source.pooling)


def check_targets(targets: list[str], suite: list[str], data: dict, ks: list[int], per_class: bool) -> None:
    """Bad input before any training: a target that is also in the multi-task suite, a target without prepared
    data, or a ``k`` larger than a target's training split (per class when ``per_class``)."""
    from mtllib.data.tasks import k_shot_indices

    checks.items("targets", targets, checks.text)
    checks.items("ks", ks, lambda n, v: checks.integer(n, v, 1))
    inside = sorted(set(targets) & set(suite))
    if inside:
        raise checks.BadInput(f"target task(s) {inside} are in the multi-task suite {suite}: transfer needs tasks the models have not seen")
    missing = [t for t in targets if t not in data]
    if missing:
        raise checks.BadInput(f"data has no prepared target {missing}; prepared: {', '.join(data)}")
    for t in targets:
        try:
            k_shot_indices(data[t].rows["train"], data[t].task, max(ks), seed=0, per_class=per_class)
        except ValueError as err:
            raise checks.BadInput(f"ks={ks} for target {t!r}: {err}") from None


def few_shot_job(source, target_data, k: int, seeds: list[int], config, per_class: bool, split: str, device: str) -> pd.DataFrame:
    """One job of a sweep (:mod:`mtllib.experiments.sweep`): every few-shot seed of one source and one ``k``
    on ``device``, as :func:`few_shot_transfer` runs them (the head of seed ``s`` initialised after
    ``torch.manual_seed(s)``); one row per seed."""
    import dataclasses

    import torch

    from mtllib.training.trainer import few_shot

    calls = iter(seeds)

    def make_model():
        torch.manual_seed(next(calls))
        return transfer_model(source, target_data.task.spec())

    return few_shot(make_model, target_data, [k], seeds, per_class=per_class, config=dataclasses.replace(config, device=device),
                    split=split, progress=False)


def few_shot_transfer(sources: dict, target_data, ks: list[int], seeds: list[int], config, per_class: bool = True,
                      split: str = "test", monitor: int | None = 16, progress: bool = True, engine: str = "serial",
                      devices: list[str] | None = None, address: str | None = None) -> pd.DataFrame:
    """Table 6: for every source model (``{name: MultiTaskModel}``), ``k`` in ``ks`` and few-shot seed, fine-tune
    :func:`transfer_model` on ``k`` examples (per class when ``per_class``) of ``target_data`` with
    :func:`mtllib.training.trainer.few_shot` and score ``split``. The head of seed ``s`` is initialised with
    ``torch.manual_seed(s)`` for every source, so runs of one seed differ only in the encoder. One row per
    (source, k, seed) with the target's metrics.

    The trainer scores the validation split after every epoch; a few-shot run keeps its last epoch
    (``keep_best=False``), so those scores are only logged, and with 20 epochs they would cost more than the
    training: ``monitor`` keeps the first that many validation examples for them (``None``: all). Score on
    ``"test"``, which stays whole, when ``monitor`` is set.

    ``engine="serial"`` (the default) runs every source here, one after another; any other engine sends one
    job per (source, k) to the workers of ``devices`` (:func:`few_shot_job`, the source model sent with it;
    :mod:`mtllib.experiments.sweep`) and returns the rows in the serial order. Bad sweep settings fail before
    any training."""
    import torch

    from mtllib.data.features import TaskData
    from mtllib.experiments import sweep
    from mtllib.training.trainer import few_shot

    if not sources:
        raise checks.BadInput("few_shot_transfer needs at least one source model")
    devices = sweep.check(devices, engine, address=address)
    if monitor is not None:
        checks.integer("monitor", monitor, 1)
        if split == "validation":
            raise checks.BadInput("score the test split when monitor trims the validation split (or set monitor=None)")
        keep = range(min(monitor, len(target_data.features["validation"])))
        target_data = TaskData(target_data.task, {**target_data.features, "validation": target_data.features["validation"].select(keep)},
                               {**target_data.rows, "validation": target_data.rows["validation"].select(keep)}, target_data.pad_token_id)
    if engine != "serial":
        keys = [(name, k) for name in sources for k in ks]
        jobs = [sweep.Job(f"{name}, k={k}", few_shot_job, dict(source=sources[name], target_data=target_data, k=k, seeds=seeds,
                                                               config=config, per_class=per_class, split=split)) for name, k in keys]
        outs = sweep.run(jobs, devices, engine, address=address, progress=progress)
        table = pd.concat([out.assign(source=name, target=target_data.task.name) for out, (name, _) in zip(outs, keys)], ignore_index=True)
        return table[["source", "target", *[c for c in table.columns if c not in ("source", "target")]]]
    rows = []
    for name, source in sources.items():
        order = [seed for _ in ks for seed in seeds]  # the order in which few_shot asks for models
        calls = iter(order)

        def make_model(source=source):
            torch.manual_seed(next(calls))
            return transfer_model(source, target_data.task.spec())

        out = few_shot(make_model, target_data, ks, seeds, per_class=per_class, config=config, split=split, progress=progress)
        rows.append(out.assign(source=name, target=target_data.task.name))
    table = pd.concat(rows, ignore_index=True)
    return table[["source", "target", *[c for c in table.columns if c not in ("source", "target")]]]

"""Multi-task models with and without adaptation modules ("BERT and PALs", Table 2): one model per method and
seed, trained through the model cache, every task scored on its test split and gated on validation.

``shared`` (task heads only) is built and trained exactly as the IAP chapters build their multi-task models
(:func:`mtllib.experiments.iap.run_experiment`), so with the same recipe it comes from their cache;
``separate`` trains one single-task model per task; every other method attaches an
:class:`~mtllib.modeling.adapters.AdapterConfig` before training. Table 2 compares *methods* (one configuration
each, :func:`run_methods`); Sec. 5.2 compares *variants* of one method, named by the chapter (PALs in every
layer, in the final half, serial instead of parallel; :func:`run_variants`).
"""

from __future__ import annotations

import dataclasses

import pandas as pd

from mtllib.analysis.stats import DASH, format_count
from mtllib.modeling.adapters import BASELINES, AdapterConfig, AdapterError, parameter_multiplier


def method_config(method: str, sizes: dict | None = None) -> AdapterConfig:
    """The :class:`AdapterConfig` of ``method`` with the chapter's sizes (``{method: {field: value}}``)."""
    kw = (sizes or {}).get(method, {})
    try:
        return AdapterConfig(method, **kw)
    except TypeError:
        fields = [f.name for f in dataclasses.fields(AdapterConfig) if f.name != "method"]
        raise AdapterError(f"sizes[{method!r}] = {kw!r}: the keys must be among {fields}") from None


def budget_sizes(encoder_config, num_tasks: int = 8, added: int | None = None) -> tuple[float, dict[str, dict]]:
    """The paper's parameter budget carried over to another encoder: the multiplier of the multi-task model on
    BERT-base with ``num_tasks`` tasks, and for every method with a size, the largest d_s whose multiplier on
    ``encoder_config`` stays within it, as ``{method: {"size": d_s}}`` (the ``sizes`` of :func:`run_methods`,
    the defaults of :func:`variant_configs`). The budget is Table 1's (PALs at d_s = 204: 1.13x for 8 tasks)
    or, with ``added``, that many added parameters on BERT-base (Sec. 5.1's small budget: "1.5 million")."""
    from transformers import BertConfig

    from mtllib.modeling.adapters import DEFAULT_SIZE, added_parameters, size_for_budget

    bert = BertConfig()
    if added is None:
        budget = parameter_multiplier(bert, "pals", num_tasks)
    else:
        if not isinstance(added, int) or isinstance(added, bool) or added < 1:
            raise AdapterError(f"added must be a positive number of parameters, got {added!r}")
        budget = 1 + added / added_parameters(bert, AdapterConfig("separate"))
    return budget, {m: {"size": size_for_budget(encoder_config, m, budget, num_tasks)} for m in DEFAULT_SIZE}


def check_methods(methods: list[str], sizes: dict | None, encoder_config) -> None:
    """Every method known and every size valid for the encoder, before any training."""
    _check_method_names(methods, sizes)
    for m in methods:
        method_config(m, sizes).check(encoder_config)


def _check_method_names(methods: list[str], sizes: dict | None) -> None:
    if not methods:
        raise AdapterError("name at least one method")
    unused = sorted(set(sizes or {}) - set(methods))
    if unused:
        raise AdapterError(f"sizes given for method(s) {unused} that are not run; methods: {methods}")


def train_variant(model_name: str, task_names: list[str], seed: int, adapter: AdapterConfig, data: dict, config, progress: bool = False):
    """One multi-task model of ``task_names`` with ``adapter`` attached (none for a baseline), seeded and trained
    through the model cache: ``(model, attached, result, seconds)``, ``attached`` the handle whose ``detach()``
    removes the adapter (``None`` for a baseline), ``result`` the :class:`~mtllib.training.trainer.TrainResult`
    (its ``history`` holds the dev scores of every epoch)."""
    from mtllib.modeling.adapters import attach
    from mtllib.modeling.multitask import MultiTaskModel
    from mtllib.runtime import seed_everything
    from mtllib.training.cache import train_cached

    sub = {n: data[n] for n in task_names}
    seed_everything(seed)
    model = MultiTaskModel.from_pretrained(model_name, [sub[n].task.spec() for n in task_names])
    attached = attach(model, adapter) if adapter.method not in BASELINES else None
    result, seconds, _ = train_cached(model, sub, config, progress=progress)
    return model, attached, result, seconds


def variant_configs(variants: dict, default_sizes: dict | None = None) -> dict[str, AdapterConfig]:
    """The :class:`AdapterConfig` of each named variant (``{name: {"method": ..., field: value}}``, e.g.
    ``{"pals_final_half": {"method": "pals", "placement": "final_half"}}``; Sec. 5.2 of "BERT and PALs").
    A variant that gives no ``size`` takes ``default_sizes[method]`` (``{method: {field: value}}``, e.g. the
    sizes matched to a parameter budget), so variants of one method share its d_s."""
    if not isinstance(variants, dict) or not variants:
        raise AdapterError(f"variants must be a non-empty mapping {{name: {{method: ..., ...}}}}, got {variants!r}")
    fields = [f.name for f in dataclasses.fields(AdapterConfig)]
    configs = {}
    for name, kw in variants.items():
        if not isinstance(name, str) or not name:
            raise AdapterError(f"variant names are non-empty strings, got {name!r}")
        if not isinstance(kw, dict) or "method" not in kw:
            raise AdapterError(f"variant {name!r}: give a mapping with a method, e.g. {{method: pals, placement: final_half}}; got {kw!r}")
        unknown = sorted(set(kw) - set(fields))
        if unknown:
            raise AdapterError(f"variant {name!r}: unknown field(s) {unknown}; the fields are {fields}")
        defaults = (default_sizes or {}).get(kw["method"], {}) if "size" not in kw else {}
        configs[name] = AdapterConfig(**{**defaults, **kw})
    return configs


def check_variants(configs: dict[str, AdapterConfig], encoder_config) -> None:
    """Every variant's method and sizes valid for the encoder, before any training; an error names the variant."""
    if not configs:
        raise AdapterError("name at least one variant")
    for name, cfg in configs.items():
        try:
            cfg.check(encoder_config)
        except AdapterError as err:
            raise AdapterError(f"variant {name!r}: {err}") from None


def run_variants(model_name: str, task_names: list[str], variants: dict[str, AdapterConfig], seeds: list[int], data: dict,
                 train_config, progress: bool = False, all_metrics: bool = False) -> pd.DataFrame:
    """One row per (variant, seed, task): ``score`` (test, main metric), the gate's ``validation``,
    ``majority`` and ``learned``, and ``train_seconds`` (of the model that holds the task; for ``separate``
    the single-task model's); with ``all_metrics``, also a column per test metric of any task (NaN for a task
    without it; e.g. SQuAD's exact match beside its F1). Each variant's models go through the model cache,
    keyed by their configuration (placement and connection included), so a variant equal to another chapter's
    method comes from its cache."""
    from transformers import AutoConfig

    from mtllib.data.assets import resolve_model

    check_variants(variants, AutoConfig.from_pretrained(resolve_model(model_name)))
    rows = [row for run in trained_runs(model_name, task_names, variants, seeds, data, train_config, progress) for row in run["rows"]]
    extra = list(dict.fromkeys(k for row in rows for k in row if k not in RUN_COLUMNS)) if all_metrics else []
    return pd.DataFrame(rows, columns=RUN_COLUMNS + extra)


#: the columns of :func:`run_variants`'s rows
RUN_COLUMNS = ["variant", "seed", "task", "score", "validation", "majority", "learned", "train_seconds"]


def trained_runs(model_name: str, task_names: list[str], variants: dict[str, AdapterConfig], seeds: list[int], data: dict,
                 train_config, progress: bool = False):
    """Train (or read from the cache) each variant's model(s) per seed and yield one dict per model: ``variant``,
    ``seed``, ``model``, ``attached``, ``result`` (:func:`train_variant`), ``test`` (its test scores) and
    ``rows`` (one per task, the columns :data:`RUN_COLUMNS` and each test metric by name). ``separate`` trains one model per task. The
    configurations are not checked here (:func:`run_variants` does)."""
    from mtllib.experiments.iap import gate_of
    from mtllib.training.trainer import evaluate

    for name, adapter in variants.items():
        for seed in seeds:
            config = dataclasses.replace(train_config, seed=seed)
            groups = [[t] for t in task_names] if adapter.method == "separate" else [list(task_names)]
            for group in groups:
                sub = {n: data[n] for n in group}
                model, attached, result, seconds = train_variant(model_name, group, seed, adapter, data, config, progress)
                gate = gate_of(result, sub, config)
                test = evaluate(model, sub, "test", batch_size=config.eval_batch_size)
                rows = [{"variant": name, "seed": seed, "task": t, "score": float(test.loc[t, "score"]),
                         "validation": float(gate.loc[t, "score"]), "majority": float(gate.loc[t, "majority"]),
                         "learned": bool(gate.loc[t, "learned"]), "train_seconds": seconds,
                         **{m: float(test.loc[t, m]) for m in sub[t].task.metrics}} for t in group]
                yield {"variant": name, "seed": seed, "model": model, "attached": attached, "result": result, "test": test, "rows": rows}


def run_methods(model_name: str, task_names: list[str], methods: list[str], seeds: list[int], data: dict, train_config,
                sizes: dict | None = None, progress: bool = False, all_metrics: bool = False) -> pd.DataFrame:
    """:func:`run_variants` with one variant per method (named by it, sized by ``sizes``), the first column
    named ``method``."""
    _check_method_names(methods, sizes)  # run_variants checks each configuration against the encoder
    variants = {m: method_config(m, sizes) for m in methods}
    return run_variants(model_name, task_names, variants, seeds, data, train_config, progress, all_metrics).rename(columns={"variant": "method"})


def learned_by_every_model(rows: pd.DataFrame, tasks: list[str]) -> list[str]:
    """The tasks (in ``tasks``' order) that every model in ``rows`` learned (the book's gate on validation,
    ``learned`` per model and task): only these enter averages and verdicts."""
    return [t for t in tasks if len(rows[rows.task == t]) and rows[rows.task == t].learned.all()]


def gate_table(rows: pd.DataFrame, by: str = "variant") -> pd.DataFrame:
    """The gate per task (rows) and variant (columns; ``by`` names the rows' column): mean validation score,
    the majority-class baseline, and how many of the variant's models (seeds) learned the task, as k/n."""
    gate = rows.groupby(["task", by], sort=False).agg(validation=("validation", "mean"), majority=("majority", "first"),
                                                     learned=("learned", lambda s: format_count(int(s.sum()), len(s))))
    return gate.unstack(by).round(1)


def average_per_seed(rows: pd.DataFrame, tasks: list[str], by: str = "variant") -> pd.DataFrame:
    """The test score averaged over ``tasks`` (the learned ones) per seed: a table with one row per seed and
    one column per variant, the form claims are judged on (paired by seed). Empty without tasks."""
    picked = rows[rows.task.isin(tasks)]
    if picked.empty:
        return pd.DataFrame()
    avg = picked.groupby([by, "seed"], sort=False).score.mean().reset_index()
    return avg.pivot(index="seed", columns=by, values="score")[list(dict.fromkeys(avg[by]))]


def variant_table(encoder_config, configs: dict[str, AdapterConfig], num_tasks: int) -> pd.DataFrame:
    """Table 1's accounting for named configurations on an encoder: method, d_s, adapted layers, parameters one
    task adds, and the multiplier (shared encoder plus every task's additions, over the encoder; output heads
    excluded)."""
    from mtllib.modeling.adapters import added_parameters

    rows = {}
    for name, cfg in configs.items():
        layers = cfg.check(encoder_config)
        fields = {k: v for k, v in dataclasses.asdict(cfg).items() if k != "method"}
        rows[name] = {"method": cfg.method, "d_s": DASH if cfg.d_s is None else cfg.d_s,
                      "layers": ", ".join(map(str, layers)) if layers else DASH, "added per task": added_parameters(encoder_config, cfg),
                      "multiplier": parameter_multiplier(encoder_config, cfg.method, num_tasks, **fields)}
    return pd.DataFrame.from_dict(rows, orient="index")


def parameter_table(encoder_config, methods: list[str], num_tasks: int, sizes: dict | None = None) -> pd.DataFrame:
    """Table 1's accounting for ``methods`` on an encoder: d_s, parameters one task adds, and the multiplier
    (shared encoder plus every task's additions, over the encoder; output heads excluded)."""
    table = variant_table(encoder_config, {m: method_config(m, sizes) for m in methods}, num_tasks)
    return table[["d_s", "added per task", "multiplier"]].rename_axis("method")


# --- one batch through a fresh model, for the chapters that open an adapter up ----------------------------
@dataclasses.dataclass
class Demo:
    """What :func:`demo_batch` builds: an untrained multi-task model in eval mode, one batch of ``task`` (with
    its labels), the encoder's inputs taken from it, and the plain encoder's output on them (no module
    attached), ``[batch, tokens, hidden]``."""

    model: object
    task: str
    batch: dict
    inputs: dict
    plain: object


def demo_batch(model_name: str, data: dict, tasks: list[str], n: int = 4, seed: int = 0) -> Demo:
    """A multi-task model over ``tasks`` built from ``model_name`` after ``torch.manual_seed(seed)``, and the
    first ``n`` training examples of the first task as one batch: the chapters attach a fresh module to this
    model to show what it changes (against :attr:`Demo.plain`) before any training."""
    import torch

    from mtllib.data.features import collate
    from mtllib.modeling.multitask import MultiTaskModel

    first = tasks[0]
    train = data[first].features["train"]
    if n < 1 or n > len(train):
        raise ValueError(f"n must be between 1 and the {len(train)} training examples of {first!r}, got {n}")
    torch.manual_seed(seed)
    model = MultiTaskModel.from_pretrained(model_name, [data[t].task.spec() for t in tasks]).eval()
    batch = collate([train[i] for i in range(n)], data[first].pad_token_id, task=first)
    inputs = {k: v for k, v in batch.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
    with torch.no_grad():
        plain = model.encoder(**inputs).last_hidden_state
    return Demo(model, first, batch, inputs, plain)

"""Multi-task models with and without adaptation modules ("BERT and PALs", Table 2): one model per method and
seed, trained through the model cache, every task scored on its test split and gated on validation.

``shared`` (task heads only) is built and trained exactly as the IAP chapters build their multi-task models
(:func:`mtllib.experiments.iap.run_experiment`), so with the same recipe it comes from their cache;
``separate`` trains one single-task model per task; every other method attaches an
:class:`~mtllib.modeling.adapters.AdapterConfig` before training.
"""

from __future__ import annotations

import dataclasses

import pandas as pd

from mtllib.analysis.stats import DASH
from mtllib.modeling.adapters import BASELINES, AdapterConfig, AdapterError, parameter_multiplier


def method_config(method: str, sizes: dict | None = None) -> AdapterConfig:
    """The :class:`AdapterConfig` of ``method`` with the chapter's sizes (``{method: {field: value}}``)."""
    kw = (sizes or {}).get(method, {})
    try:
        return AdapterConfig(method, **kw)
    except TypeError:
        fields = [f.name for f in dataclasses.fields(AdapterConfig) if f.name != "method"]
        raise AdapterError(f"sizes[{method!r}] = {kw!r}: the keys must be among {fields}") from None


def check_methods(methods: list[str], sizes: dict | None, encoder_config) -> None:
    """Every method known and every size valid for the encoder, before any training."""
    if not methods:
        raise AdapterError("name at least one method")
    for m in methods:
        method_config(m, sizes).check(encoder_config)
    unused = sorted(set(sizes or {}) - set(methods))
    if unused:
        raise AdapterError(f"sizes given for method(s) {unused} that are not run; methods: {methods}")


def _train_one(model_name, task_names, seed, adapter: AdapterConfig, data, config, progress):
    from mtllib.modeling.adapters import attach
    from mtllib.modeling.multitask import MultiTaskModel
    from mtllib.runtime import seed_everything
    from mtllib.training.cache import train_cached
    from mtllib.training.trainer import evaluate

    from mtllib.experiments.iap import gate_of

    sub = {n: data[n] for n in task_names}
    seed_everything(seed)
    model = MultiTaskModel.from_pretrained(model_name, [sub[n].task.spec() for n in task_names])
    if adapter.method not in BASELINES:
        attach(model, adapter)
    result, seconds, _ = train_cached(model, sub, config, progress=progress)
    gate = gate_of(result, sub, config)
    test = evaluate(model, sub, "test", batch_size=config.eval_batch_size)
    return gate, test, seconds


def run_methods(model_name: str, task_names: list[str], methods: list[str], seeds: list[int], data: dict, train_config,
                sizes: dict | None = None, progress: bool = False) -> pd.DataFrame:
    """One row per (method, seed, task): ``score`` (test, main metric), the gate's ``validation``,
    ``majority`` and ``learned``, and ``train_seconds`` (of the model that holds the task; for ``separate``
    the single-task model's)."""
    from transformers import AutoConfig

    from mtllib.data.assets import resolve_model

    check_methods(methods, sizes, AutoConfig.from_pretrained(resolve_model(model_name)))
    rows = []
    for method in methods:
        adapter = method_config(method, sizes)
        for seed in seeds:
            config = dataclasses.replace(train_config, seed=seed)
            groups = [[t] for t in task_names] if method == "separate" else [list(task_names)]
            for group in groups:
                gate, test, seconds = _train_one(model_name, group, seed, adapter, data, config, progress)
                for t in group:
                    rows.append({"method": method, "seed": seed, "task": t, "score": float(test.loc[t, "score"]),
                                 "validation": float(gate.loc[t, "score"]), "majority": float(gate.loc[t, "majority"]),
                                 "learned": bool(gate.loc[t, "learned"]), "train_seconds": seconds})
    return pd.DataFrame(rows)


def parameter_table(encoder_config, methods: list[str], num_tasks: int, sizes: dict | None = None) -> pd.DataFrame:
    """Table 1's accounting for ``methods`` on an encoder: d_s, parameters one task adds, and the multiplier
    (shared encoder plus every task's additions, over the encoder; output heads excluded)."""
    from mtllib.modeling.adapters import added_parameters

    rows = {}
    for m in methods:
        cfg = method_config(m, sizes)
        sizes_of = {k: v for k, v in dataclasses.asdict(cfg).items() if k != "method"}
        rows[m] = {"d_s": DASH if cfg.d_s is None else cfg.d_s, "added per task": added_parameters(encoder_config, cfg),
                   "multiplier": parameter_multiplier(encoder_config, m, num_tasks, **sizes_of)}
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("method")

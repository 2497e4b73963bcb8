"""Every notebook checks all its parameters in its first code cell, before any data is prepared:

    from mtllib.book.params import check_parameters
    check_parameters(globals(), "02_dual_task_iap")

:data:`RULES` says, per notebook, what each parameter may be; :func:`check_parameters` checks types and ranges
(:mod:`mtllib.checks`), then feasibility against the model and the tasks (alpha selects at least one of the
model's heads; a size fits every task's split; tasks exist and are distinct), and refuses a parameter the
notebook does not know — also under plain papermill, which only warns about those. A list or dict given as a
string (``papermill -p seeds "[0, 1]"``) is refused with a hint to pass it with ``-y``.
"""

from __future__ import annotations

import functools
import types

from mtllib import checks
from mtllib.runtime import DEVICE_CHOICES

_IPYTHON_NAMES = {"In", "Out", "get_ipython", "exit", "quit", "open"}


def _seeds(name, v):
    return checks.items(name, v, lambda n, x: checks.integer(n, x, 0))


def _task(name, v):
    from mtllib.data.tasks import get_task

    checks.text(name, v)
    get_task(v)  # UnknownTask lists the registered tasks
    return v


def _tasks(min_len):
    return lambda name, v: checks.items(name, v, _task, min_len=min_len)


def _pairs(name, v):
    """``None`` (every pair of ``tasks``) or a list of ``[A, B]`` task pairs (checked against ``tasks`` in
    :func:`_feasible`)."""
    def pair(n, p):
        checks.items(n, p, _task, min_len=2)
        if len(p) != 2:
            checks._fail(n, p, "a pair [A, B] of two different tasks")
        return tuple(p)

    return None if v is None else checks.items(name, v, pair)


def _model(name, v):
    return checks.text(name, v)


def _size(name, v):
    """``None`` (all), a size for every task, or ``{task: size}`` with an optional ``"default"``."""
    if isinstance(v, dict):
        if not v:
            checks._fail(name, v, "None, an integer >= 1 or a non-empty mapping {task: size}")
        for task, size in v.items():
            if task != "default":
                _task(f"{name} key", task)
            if size is not None:
                checks.integer(f"{name}[{task!r}]", size, 1)
        return v
    return None if v is None else checks.integer(name, v, 1)


def _optional_count(name, v):
    """``None`` (all) or an integer >= 1: batches for Eq. 4, articles, tweets."""
    return None if v is None else checks.integer(name, v, 1)


def _fraction(name, v):
    return checks.number(name, v, 0, 1, low_open=True)


def _positive(name, v):
    return checks.number(name, v, 0, low_open=True)


def _int(minimum, maximum=None):
    return lambda name, v: checks.integer(name, v, minimum, maximum)


def _device(name, v):
    kind = v.split(":")[0] if isinstance(v, str) else v
    checks.choice(name, kind, DEVICE_CHOICES)
    return v


_TRAINING = {"model": _model, "seeds": _seeds, "max_train": _size, "max_eval": _size, "max_length": _int(8, 512),
             "epochs": _int(1), "batch_size": _int(1), "lr": _positive, "importance_batches": _optional_count, "device": _device}

def _methods(name, v):
    """A list of method names (which ones exist, and their sizes against the model, is checked by
    :func:`mtllib.experiments.adapters.check_methods` in the notebook's next line, still before any work)."""
    return checks.items(name, v, checks.text)


def _method_sizes(name, v):
    """``None`` (the paper's budget carried over to the model) or ``{method: {AdapterConfig field: value}}``."""
    if v is None:
        return v
    if not isinstance(v, dict) or not v:
        checks._fail(name, v, "None or a mapping {method: {size: ..., heads: ...}}")
    for method, kw in v.items():
        checks.text(f"{name} key", method)
        if not isinstance(kw, dict):
            checks._fail(f"{name}[{method!r}]", kw, "a mapping such as {size: 120, heads: 12}")
    return v


def _variants(name, v):
    """A mapping ``{variant name: {method: ..., AdapterConfig field: value}}`` (the fields and their values are
    checked against the model by :func:`mtllib.experiments.adapters.check_variants`, still before any work)."""
    if not isinstance(v, dict) or not v:
        checks._fail(name, v, "a mapping {name: {method: pals, placement: final_half}}")
    for variant, kw in v.items():
        checks.text(f"{name} key", variant)
        if not isinstance(kw, dict) or "method" not in kw:
            checks._fail(f"{name}[{variant!r}]", kw, "a mapping with a method, such as {method: pals, connection: serial}")
    return v


def _sampler(name, v):
    from mtllib.training.samplers import SAMPLERS

    return checks.choice(name, v, SAMPLERS)


def _fractions(name, v):
    """A list (possibly empty) of distinct fractions in (0, 1]: a sweep's values of alpha or delta."""
    return checks.items(name, v, _fraction, min_len=0)


def _counts(name, v):
    """A non-empty list of distinct integers >= 1 (few-shot sizes)."""
    return checks.items(name, v, lambda n, x: checks.integer(n, x, 1))


def _optional_seeds(name, v):
    return checks.items(name, v, lambda n, x: checks.integer(n, x, 0), min_len=0)


def _pages(name, v):  # names of other pages, each once (none is fine)
    return checks.items(name, v, checks.text, min_len=0)


def _groups(name, v):
    """``{group: [task, ...]}``: at least one group, each with at least one registered task (which groups a
    scheme may use is checked by :func:`mtllib.experiments.transferability.check_design` right after)."""
    if not isinstance(v, dict) or not v:
        checks._fail(name, v, "a non-empty mapping {group: [task, ...]}, e.g. {'SL': ['bbc-pos'], 'C': ['bbc-topic']}")
    for group, tasks in v.items():
        checks.text(f"{name} key", group)
        checks.items(f"{name}[{group!r}]", tasks, _task, min_len=1)
    return v


_TRANSFER = {"model": _model, "groups": _groups, "target_group": checks.text, "targets": _tasks(1), "seeds": _seeds,
             "pf_train": _size, "pf_eval": _size, "pf_epochs": _int(1), "max_train": _size, "max_eval": _size,
             "max_length": _int(8, 512), "epochs": _int(1), "patience": _int(1), "batch_size": _int(1), "lr": _positive,
             "device": _device}

#: the settings that every target chapter read by ``09e_transfer_tables`` shares (it refuses copies that differ;
#: ``max_train`` may differ by target group) ...
TRANSFER_SHARED = ("model", "groups", "seeds", "pf_train", "pf_eval", "pf_epochs", "max_eval", "max_length", "epochs",
                   "patience", "batch_size", "lr")
#: ... and those that a target chapter shares with ``09a_transfer_prefinetuning``, so that its encoders come from
#: that chapter's runs (the model cache) instead of being pre-finetuned again
PREFINETUNE_SHARED = ("model", "groups", "pf_train", "pf_eval", "pf_epochs", "max_length", "patience", "batch_size", "lr")
_PREFINETUNE = {k: _TRANSFER[k] for k in (*PREFINETUNE_SHARED, "device")}
_PREFINETUNE["targets"] = _groups  # every group's targets, {group: [task, ...]}: the design the chapter draws

#: notebook -> {parameter: rule(name, value)}, tested by tests/book/test_params.py
RULES: dict[str, dict] = {
    "01_offline_model_and_data": {"model": _model, "max_articles": _optional_count, "max_tweets": _optional_count, "seed": _int(0),
                                  "silver_summary": checks.boolean},
    "01b_iap_by_hand": {**{k: r for k, r in _TRAINING.items() if k != "seeds"}, "task": _task, "demo_examples": _int(1), "alpha": _fraction},
    "02_dual_task_iap": {**_TRAINING, "tasks": _tasks(2), "pairs": _pairs, "alpha": _fraction, "frozen_seeds": _optional_seeds, "frozen_lr": _positive},
    "03_multitask_iap": {**_TRAINING, "tasks": _tasks(2), "alpha": _fraction, "n_random": _int(0)},
    "04_task_similarity": {**_TRAINING, "tasks": _tasks(3), "alpha": _fraction, "n_probe": _int(4), "transfer_train": _int(1), "transfer_epochs": _int(1)},
    "05_input_paradigm": {**_TRAINING, "single_task": _task, "pair_version": _task, "partners": _tasks(1), "alpha": _fraction},
    "06_bert_and_pals": {**{k: r for k, r in _TRAINING.items() if k != "importance_batches"}, "tasks": _tasks(2),
                         "methods": _methods, "sizes": _method_sizes, "sampler": _sampler},
    "06b_pals_placement": {**{k: r for k, r in _TRAINING.items() if k != "importance_batches"}, "tasks": _tasks(2),
                           "variants": _variants, "sampler": _sampler, "shared_from": checks.optional(checks.text),
                           "read_from": checks.optional(lambda name, v: checks.items(name, v, checks.text)), "book_dir": checks.text},
    "06c_small_budget": {**{k: r for k, r in _TRAINING.items() if k != "importance_batches"}, "tasks": _tasks(2),
                         "methods": _methods, "small_budget": _int(1), "sizes": _method_sizes, "larger_pals": checks.boolean, "margin": _positive,
                         "sampler": _sampler, "shared_from": checks.optional(checks.text), "larger_from": checks.optional(checks.text),
                         "book_dir": checks.text},
    "06d_sampling": {**{k: r for k, r in _TRAINING.items() if k != "importance_batches"}, "tasks": _tasks(2), "method": checks.text,
                     "samplers": lambda name, v: checks.items(name, v, _sampler, min_len=2),
                     "read_from": checks.optional(lambda name, v: checks.items(name, v, checks.text)), "book_dir": checks.text},
    "06e_training_curves": {**{k: r for k, r in _TRAINING.items() if k != "importance_batches"}, "tasks": _tasks(2),
                            "methods": _methods, "short_epochs": _optional_count, "first_epoch": _int(1), "sampler": _sampler},
    "06f_squad_swag": {**{k: r for k, r in _TRAINING.items() if k != "importance_batches"}, "tasks": _tasks(2),
                       "methods": _methods, "sizes": _method_sizes, "margin": _positive, "sampler": _sampler},
    "06g_pals_glue_like": {**{k: r for k, r in _TRAINING.items() if k != "importance_batches"}, "tasks": _tasks(2),
                           "methods": _methods, "sizes": _method_sizes, "sampler": _sampler, "shared_from": checks.optional(checks.text),
                           "book_dir": checks.text},
    "06i_pals_vs_low_rank": {"pals_from": checks.text, "low_rank_from": checks.text, "separate_from": checks.optional(checks.text),
                             "top_from": checks.optional(checks.text), "book_dir": checks.text, "margin": _positive},
    "07_important_head_training": {**_TRAINING, "tasks": _tasks(2), "alpha": _fraction, "delta": _fraction, "iap_alpha": checks.optional(_fraction),
                                   "sweep_seeds": _optional_seeds, "sweep_alphas": _fractions, "sweep_deltas": _fractions,
                                   "sampler": _sampler, "seed_pages": _pages},
    "07b_iat_sampling": {**_TRAINING, "tasks": _tasks(2), "alpha": _fraction, "delta": _fraction, "keep_best": checks.boolean,
                         "samplers": lambda name, v: checks.items(name, v, _sampler, min_len=2)},
    "07c_iat_glue_like": {**_TRAINING, "tasks": _tasks(2), "alpha": _fraction, "delta": _fraction, "sampler": _sampler, "seed_pages": _pages},
    "08_few_shot_transfer": {**{k: r for k, r in _TRAINING.items() if k != "seeds"}, "tasks": _tasks(2), "targets": _tasks(1),
                             "source_seed": _int(0), "few_shot_seeds": _seeds, "ks": _counts, "ablation_k": _optional_count,
                             "alpha": _fraction, "delta": _fraction, "few_shot_epochs": _int(1), "few_shot_batch_size": _int(1),
                             "few_shot_lr": _positive, "sampler": _sampler},
    "09a_transfer_prefinetuning": _PREFINETUNE,
    "09b_transfer_sl_targets": _TRANSFER,  # the source of every target page (09c, 09c2, 09d, 09d2: notebooks/pages.yml)
    "09e_transfer_tables": {"chapters": lambda name, v: checks.items(name, v, checks.text), "book_dir": checks.text, "margin": _positive},
}


def _user_values(namespace: dict) -> dict:
    """The variables a parameters cell (or papermill's injected cell) defined: no modules, functions, classes,
    IPython's own names or names starting with an underscore."""
    return {k: v for k, v in namespace.items()
            if not k.startswith("_") and k not in _IPYTHON_NAMES
            and not isinstance(v, (types.ModuleType, types.FunctionType, types.BuiltinFunctionType, type))}


def _hint(value) -> str:
    if isinstance(value, str) and value.strip()[:1] in "[{":
        return " (lists and dicts arrive as strings with papermill -p: pass them with -y, e.g. -y \"seeds: [0, 1]\")"
    return ""


def check_parameters(namespace: dict, notebook: str) -> dict:
    """Check the parameters of ``notebook`` found in ``namespace`` (the notebook's ``globals()``); return them.
    Raises :class:`mtllib.checks.BadInput` (or ``UnknownTask``) naming the parameter, before any work."""
    if notebook not in RULES:
        raise KeyError(f"no parameter rules for notebook {notebook!r}; known: {', '.join(RULES)}")
    rules = RULES[notebook]
    values = _user_values(namespace)
    unknown = sorted(set(values) - set(rules))
    if unknown:
        raise checks.BadInput(f"unknown parameter(s) {unknown} for {notebook}; its parameters are: {', '.join(rules)}")
    missing = sorted(set(rules) - set(values))
    if missing:
        raise checks.BadInput(f"parameter(s) {missing} of {notebook} are not defined (is the parameters cell intact?)")
    for name, rule in rules.items():
        try:
            rule(name, values[name])
        except checks.BadInput as err:
            raise checks.BadInput(f"{notebook}: {err}{_hint(values[name])}") from None
    _feasible(notebook, values)
    return {k: values[k] for k in rules}


def _tasks_of(values: dict) -> list[str]:
    names = []
    for key in ("task", "tasks", "single_task", "pair_version", "partners", "targets"):
        v = values.get(key)
        if isinstance(v, dict):  # {group: [task, ...]}
            v = [t for ts in v.values() for t in ts]
        names += [v] if isinstance(v, str) else list(v or [])
    return names


def _feasible(notebook: str, values: dict) -> None:
    """What types cannot show: the model's heads, the tasks' split sizes."""
    from mtllib.analysis.importance import num_pruned

    names = _tasks_of(values)
    if len(set(names)) != len(names):
        raise checks.BadInput(f"{notebook}: a task is named twice among {names}")
    outside = sorted({t for p in values.get("pairs") or [] for t in p} - set(names))
    if outside:
        raise checks.BadInput(f"{notebook}: pairs name task(s) {outside} that are not in tasks={values['tasks']}")
    outside = sorted(set(values.get("sweep_seeds") or []) - set(values.get("seeds") or []))
    if outside:
        raise checks.BadInput(f"{notebook}: sweep_seeds {outside} are not among seeds={values['seeds']}")
    alphas = {k: values[k] for k in ("alpha", "iap_alpha") if values.get(k) is not None}  # iap_alpha None: no IAP read (07)
    alphas.update({f"sweep_alphas[{i}]": a for i, a in enumerate(values.get("sweep_alphas") or [])})
    if alphas:
        heads = _num_heads(values["model"])
        for key, alpha in alphas.items() if heads is not None else ():
            try:
                num_pruned(alpha, heads)
            except ValueError as err:
                raise checks.BadInput(f"{notebook}: {key}: {err} (the model {values['model']!r} has {heads} heads)") from None
    from mtllib.data.features import per_task

    pf_tasks = [t for ts in (values.get("groups") or {}).values() for t in ts]  # the transferability chapters' groups
    sizes = split_sizes(names + pf_tasks)
    checked = (("max_train", "train", names), ("max_eval", "validation", names), ("max_eval", "test", names),
               ("pf_train", "train", pf_tasks), ("pf_eval", "validation", pf_tasks), ("pf_eval", "test", pf_tasks))
    for param, split, used in checked:
        value = values.get(param)
        if value is None:
            continue
        if isinstance(value, dict):
            unused = sorted(set(value) - set(used) - {"default"})
            if unused:
                raise checks.BadInput(f"{notebook}: {param} names tasks the notebook does not use: {unused}")
            if "default" not in value and set(used) - set(value):
                raise checks.BadInput(f"{notebook}: {param} gives no size for {sorted(set(used) - set(value))} and no 'default'")
        short = {t: sizes[t][split] for t in used if t in sizes and per_task(value, t) is not None and sizes[t][split] < per_task(value, t)}
        if short:
            raise checks.BadInput(f"{notebook}: {param}={value} is more than the {split} split of {short} holds; use at most that many or None (all)")
    if values.get("ablation_k") is not None and values.get("ks") is not None and values["ablation_k"] not in values["ks"]:
        raise checks.BadInput(f"{notebook}: ablation_k={values['ablation_k']} is not among ks={values['ks']}: Table 8 sets the "
                              "random-heads models beside the baseline and IAT at that k, so those run there too; add it to ks or use None")
    if isinstance(values.get("demo_examples"), int) and isinstance(values.get("max_train"), int) and values["demo_examples"] > values["max_train"]:
        raise checks.BadInput(f"{notebook}: demo_examples={values['demo_examples']} exceeds max_train={values['max_train']} (the batch comes from the training examples)")
    if isinstance(values.get("transfer_train"), int) and isinstance(values.get("max_train"), int) and values["transfer_train"] > values["max_train"]:
        raise checks.BadInput(f"{notebook}: transfer_train={values['transfer_train']} exceeds max_train={values['max_train']}")


def _num_heads(model: str) -> int | None:
    """Heads in all of ``model`` from its config (local or offline; ``None`` for a hub id without internet)."""
    from transformers import AutoConfig

    from mtllib.data.assets import resolve_model
    from mtllib.modeling.archs import num_layers_heads

    try:
        config = AutoConfig.from_pretrained(resolve_model(model))
    except OSError:
        return None
    layers, heads = num_layers_heads(config)
    return layers * heads


def split_sizes(names: list[str]) -> dict[str, dict[str, int]]:
    """``{task: {split: examples}}`` of the offline and silver tasks among ``names`` (paper tasks need the hub: skipped).
    Each task's splits are built once per process (:func:`_built_sizes`)."""
    from mtllib.data.tasks import get_task

    return {n: dict(_built_sizes(n)) for n in names if get_task(n).suite in ("offline", "silver")}


@functools.lru_cache(maxsize=None)
def _built_sizes(name: str) -> tuple[tuple[str, int], ...]:
    """The split sizes of an offline or silver task at seed 0. Building its splits takes seconds (a pair task of the
    suite: up to 8 s), and the builders are deterministic, so a process that checks many notebooks' parameters (the
    tests check every page under every profile) builds each task once."""
    from mtllib.data.tasks import load_frames

    return tuple((split, len(frame)) for split, frame in load_frames(name).items())

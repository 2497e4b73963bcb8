"""Adapters trained on separate pages, set side by side without training anything ("BERT and PALs", Sec. 5.1:
PALs and low-rank layers at the same budget).

Pages of 06g's source each compare one adapter with the fully shared model (06g: PALs, 06h: low-rank layers)
and glue their per-seed scores (``"scores"``: a ``method`` column, then the columns of
:data:`mtllib.experiments.adapters.RUN_COLUMNS` after ``variant``) and their training recipe (``"recipe"``,
:func:`mtllib.book.results.recipe_frame`). :func:`read_methods` reads them back from the committed executed
copies, so a page comparing the adapters with each other trains nothing and depends on no local cache. It
refuses pages that cannot be compared seed by seed: another recipe, other seeds, or fully shared models that
are not the same models on every page. :func:`read_method` reads one method's rows from one such page for a page of
another source (06c's small-budget pages set the PALs of 06g, at Table 1's budget, beside smaller ones),
:func:`read_variants` every variant of another source's page that such a page trained (06b's placement pages read
the PALs in every layer and read or train the rest), :func:`read_shared` the fully shared models from a chapter's
multi-task baselines, and :func:`read_samplers` those baselines by the sampler each chapter trained them under
(06d's pages, Sec. 6). Each read variant comes as a :class:`Borrowed` (its rows and the copy named), and
:func:`train_the_rest` or :func:`train_other_samplers` trains only what was not read.

:func:`hand_count` writes one task's added parameters out by hand for these pages' exercises (Table 1's
accounting), checked against :func:`mtllib.modeling.adapters.added_parameters`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from mtllib import checks
from mtllib.book import results
from mtllib.data.tasks import GLUE_LIKE

#: the reference every page holds: the fully shared model (heads only)
REFERENCE = "shared"


@dataclass(frozen=True)
class HandCount:
    """One task's added parameters counted by hand (:func:`hand_count`)."""

    #: parameters one task adds
    per_task: int
    #: of those, the ones that act inside one layer and are that layer's own (0 for separate models)
    per_layer: int
    #: the count written out, e.g. ``"2 × 384 × 120 = 92,160, plus 3 × 120² = 43,200 in each of 6 layers (259,200): 351,360 per task"``
    text: str


def hand_count(config, method: str, size: int | None = None) -> HandCount:
    """The parameters one task adds with ``method`` at ``d_s = size`` on an encoder of ``config``, written out as
    a reader would count them (no biases but LayerNorm's; "BERT and PALs", Sec. 3.2-3.3 and Table 1):

    - ``pals``: one pair :math:`V^E, V^D` shared by the layers, :math:`2 d_m d_s`, and an attention of width
      :math:`d_s` in each of the :math:`L` layers, :math:`3 d_s^2` (queries, keys, values; no output projection);
    - ``low_rank``: a pair in each layer, :math:`L \\cdot 2 d_m d_s`;
    - ``top_pals``: one pair, :math:`2 d_m d_s`, and each of the ``k`` = 6 layers on top an attention
      (:math:`3 d_s^2`) and a LayerNorm (:math:`2 d_s`);
    - ``top_layer``: one layer of the encoder's shape on top, with its biases: an attention with its output projection
      (:math:`4 d_m^2 + 4 d_m`), a feed-forward of width :math:`d_{ff}` (:math:`2 d_m d_{ff} + d_{ff} + d_m`) and two
      LayerNorms (:math:`4 d_m`) (``size`` unused);
    - ``separate``: the whole encoder (``size`` unused).

    Raised: :class:`mtllib.checks.BadInput` for another method or a missing ``size``; ``RuntimeError`` when the
    hand count and :func:`~mtllib.modeling.adapters.added_parameters` disagree (the library's modules changed)."""
    from mtllib.modeling import adapters as ad

    counted = ("pals", "low_rank", "top_pals", "top_layer", "separate")
    unsized = ("top_layer", "separate")
    if method not in counted:
        raise checks.BadInput(f"method must be one of {', '.join(counted)} (the ones counted by hand here), got {method!r}")
    if method not in unsized and (not isinstance(size, int) or isinstance(size, bool) or size < 1):
        raise checks.BadInput(f"{method} needs its size d_s, a positive integer, got {size!r}")
    d_m, L, d_s = config.hidden_size, config.num_hidden_layers, size
    adapter = ad.AdapterConfig(method) if method in unsized else ad.AdapterConfig(method, size=d_s)
    library = ad.added_parameters(config, adapter)
    pair = 2 * d_m * d_s if method not in unsized else 0
    if method == "pals":
        per_layer = 3 * d_s ** 2
        per_task = pair + L * per_layer
        text = f"2 × {d_m} × {d_s} = {pair:,}, plus 3 × {d_s}² = {per_layer:,} in each of {L} layers ({L * per_layer:,}): {per_task:,} per task"
    elif method == "low_rank":
        per_layer = pair
        per_task = L * per_layer
        text = f"2 × {d_m} × {d_s} = {pair:,} in each of {L} layers: {per_task:,} per task"
    elif method == "top_pals":
        k = adapter.top_layers
        per_layer = 0  # the layers on top are not the encoder's
        on_top = 3 * d_s ** 2 + 2 * d_s
        per_task = pair + k * on_top
        text = (f"2 × {d_m} × {d_s} = {pair:,}, plus 3 × {d_s}² + 2 × {d_s} = {on_top:,} in each of {k} layers on top "
                f"({k * on_top:,}): {per_task:,} per task")
    elif method == "top_layer":
        d_ff = config.intermediate_size
        per_layer = 0  # the layer on top is not the encoder's
        attention, feed_forward, norms = 4 * d_m ** 2 + 4 * d_m, 2 * d_m * d_ff + d_ff + d_m, 4 * d_m
        per_task = attention + feed_forward + norms
        text = (f"4 × {d_m}² + 4 × {d_m} = {attention:,} (attention, its output projection, biases), 2 × {d_m} × {d_ff} + {d_ff} + {d_m} "
                f"= {feed_forward:,} (feed-forward), 4 × {d_m} = {norms:,} (two LayerNorms): {per_task:,} per task")
    else:
        per_layer, per_task = 0, library
        text = f"the encoder itself, {library:,} per task"
    if per_task != library:
        raise RuntimeError(f"the hand count of {method} ({per_task:,}) no longer matches the library's ({library:,})")
    return HandCount(per_task=per_task, per_layer=per_layer, text=text)


@dataclass
class MethodPages:
    """What :func:`read_methods` read: the rows of the fully shared model (once) and of each page's adapter."""

    #: one row per method, seed and task: ``method``, ``seed``, ``task``, ``score``, ``validation``, ``majority``,
    #: ``learned``, ``train_seconds``
    rows: pd.DataFrame
    #: each page's run record (profile, commit, parameters, date), by page
    records: dict[str, dict]
    #: the pages' common recipe (:func:`mtllib.book.results.recipe_frame`)
    recipe: pd.DataFrame
    #: the tasks in the recipe's order
    tasks: list[str]
    #: the seeds every method has
    seeds: list[int]

    def sources(self) -> str:
        """``"06g_pals_glue_like (cpu profile, commit abc1234, executed 2026-12-05 ...); ..."``, for the page."""
        return "; ".join(copy_line(nb, r) for nb, r in self.records.items())


def read_methods(pages: dict[str, str], book_dir: str | Path | None = None) -> MethodPages:
    """The scores of each adapter in ``pages`` (``{method: page}``, e.g. ``{"pals": "06g_pals_glue_like",
    "low_rank": "06h_low_rank_glue_like"}``) read from the page's executed copy in ``book_dir`` (default: the
    project's ``book/``), with the fully shared model's rows once.

    Refused with :class:`mtllib.checks.BadInput`, before anything is read further: fewer than two pages, the
    fully shared model named as a page's method, a page without an executed copy or without the glued tables,
    a page trained on another recipe than the first's (every differing setting named), a page without rows of
    its method or of the fully shared model, methods or pages with other seeds, and fully shared rows that
    differ between pages (then they are not the same models, and the adapters' differences would not be paired)."""
    if not isinstance(pages, dict) or len(pages) < 2:
        raise checks.BadInput(f"pages must map at least two methods to the pages that trained them, got {pages!r}")
    if REFERENCE in pages:
        raise checks.BadInput(f"{REFERENCE!r} is the reference every page holds: name only the adapters' pages, got {sorted(pages)}")
    first = next(iter(pages.values()))
    recipe = results.read_frame(results.executed_copy(first, book_dir), "recipe")
    frames, records = {}, {}
    for method, page in pages.items():
        try:
            frames[method], records[page] = results.read_same_recipe(page, recipe, "scores", book_dir)
        except checks.BadInput as error:  # another recipe, or no glued table: say which page it was compared with
            if page == first:
                raise
            raise checks.BadInput(f"{page} cannot be set beside {first} ({first}'s recipe is 'here'): {error}") from None
    shared, shared_page, seeds = None, None, None
    for method, page in pages.items():
        frame = frames[method]
        for needed in (method, REFERENCE):
            if not (frame.method == needed).any():
                raise checks.BadInput(f"{page} holds no rows of {needed!r} (it has {sorted(set(frame.method))}): is it the page of {method!r}?")
        ours = frame[frame.method == REFERENCE].sort_values(["seed", "task"]).reset_index(drop=True)
        for name, part in ((method, frame[frame.method == method]), (REFERENCE, ours)):
            if seeds is None:
                seeds = sorted(set(part.seed))
            elif sorted(set(part.seed)) != seeds:
                raise checks.BadInput(f"{page}'s {name!r} models have seeds {sorted(set(part.seed))}, not {seeds}: "
                                      f"execute every page with the same seeds")
        if shared is None:
            shared, shared_page = ours, page
        elif not (ours[["seed", "task"]].equals(shared[["seed", "task"]])
                  and np.allclose(ours.score, shared.score, rtol=0, atol=1e-6, equal_nan=True)):
            raise checks.BadInput(f"the fully shared models of {shared_page} and {page} score differently: they are not the same "
                                  f"models, so the adapters cannot be compared seed by seed (read both from one chapter: shared_from)")
    rows = pd.concat([shared, *(frames[m][frames[m].method == m] for m in pages)], ignore_index=True)
    tasks = json.loads(recipe.set_index("setting").value["tasks"])
    return MethodPages(rows=rows, records=records, recipe=recipe, tasks=tasks, seeds=seeds)


def copy_line(page: str, record: dict) -> str:
    """``"06g_pals_glue_like (cpu profile, commit abc1234, executed 2026-12-05T...)"``: how a reading page names an
    executed copy it read (``record``: the copy's run record)."""
    return f"{page} ({record.get('profile')} profile, commit {record.get('commit')}, executed {record.get('executed_at')})"


@dataclass(frozen=True)
class Borrowed:
    """One variant's models read from another page's executed copy instead of trained here."""

    #: their rows, in the columns of :data:`mtllib.experiments.adapters.RUN_COLUMNS`, ``variant`` the reading page's name
    rows: pd.DataFrame
    #: the page read
    page: str
    #: that copy named for the reading page (:func:`copy_line`)
    line: str


def _method_rows(scores: pd.DataFrame, record: dict, page: str, method: str, seeds: list[int], size: int | None,
                 budget_size: int | None) -> pd.DataFrame:
    """``method``'s rows for ``seeds`` in a page's glued ``scores`` (its run ``record`` beside them), ``variant`` =
    ``method``; refused as :func:`read_method` says."""
    from mtllib.experiments.adapters import RUN_COLUMNS

    if not (scores.method == method).any():
        raise checks.BadInput(f"{page} holds no rows of {method!r} (it has {sorted(set(scores.method))}): is it the page of {method!r}?")
    sizes = (record.get("parameters") or {}).get("sizes")
    theirs = sizes.get(method, {}).get("size") if sizes is not None else budget_size
    if theirs != size:
        raise checks.BadInput(f"{page}'s {method} models have d_s {theirs}, not {size}: read them from a page trained at d_s {size}, "
                              f"or train them here")
    ours = scores[scores.method == method]
    missing = sorted(set(seeds) - set(ours.seed))
    if missing:
        raise checks.BadInput(f"{page} has no {method} model for seed(s) {missing} (it has {sorted(set(ours.seed))}): "
                              f"execute it with these seeds, or train them here")
    return ours[ours.seed.isin(seeds)].rename(columns={"method": "variant"})[RUN_COLUMNS].reset_index(drop=True)


def read_method(page: str, method: str, recipe: pd.DataFrame, seeds: list[int], size: int | None, budget_size: int | None = None,
                book_dir: str | Path | None = None, variant: str | None = None) -> Borrowed:
    """The models of ``method`` for ``seeds`` read from ``page``'s executed copy (a page of 06g's source, which glues
    their scores as ``"scores"``), their rows with ``variant`` = the reading page's name for them (default ``method``).
    Nothing is trained.

    ``size`` is the d_s the reading page needs the models to have; the page's own is its ``sizes`` parameter's
    entry for ``method`` or, where that parameter is ``None``, the paper's budget carried over to the model,
    which the reader knows as ``budget_size`` (:attr:`mtllib.book.pals_chapters.Start.matched`).

    Refused with :class:`mtllib.checks.BadInput`: no executed copy, no glued tables, another recipe (every
    differing setting named: :func:`mtllib.book.results.read_same_recipe`), no rows of ``method``, a seed the
    page lacks, or models of another size."""
    scores, record = results.read_same_recipe(page, recipe, "scores", book_dir)
    rows = _method_rows(scores, record, page, method, seeds, size, budget_size)
    return Borrowed(rows.assign(variant=variant or method), page, copy_line(page, record))


def read_variants(pages: list[str] | None, configs: dict, recipe: pd.DataFrame, seeds: list[int], budget_sizes: dict,
                  book_dir: str | Path | None = None) -> dict[str, Borrowed]:
    """The variants of ``configs`` (``{name: AdapterConfig}``, :func:`mtllib.experiments.adapters.variant_configs`)
    that pages of 06g's source trained, read from their executed copies (each read once) instead of trained again:
    ``{name: Borrowed}``, ``variant`` = ``name``. A page of 06g's source trains each of its methods in every
    layer, in parallel, with the default heads, top layers and initialisation, at the d_s of its ``sizes``
    parameter or of the paper's budget on the model (``budget_sizes``, ``{method: {"size": d_s}}``:
    :attr:`mtllib.book.pals_chapters.Start.matched`); so a variant is read from the page that holds its method
    when it is configured that way, and left to train otherwise (06b's PALs in the final half or in series, Sec. 5.2).
    The fully shared model is not read here (its models come from a chapter's baselines: :func:`read_shared`).

    Refused with :class:`mtllib.checks.BadInput`: a page that holds none of the variants, two pages holding the
    same variant, and what :func:`read_method` refuses (another recipe, a missing seed, models of another size)."""
    from mtllib.modeling.adapters import AdapterConfig

    read = {}
    for page in pages or []:
        scores, record = results.read_same_recipe(page, recipe, "scores", book_dir)
        held = [n for n, c in configs.items() if c.method != REFERENCE and c.method in set(scores.method)
                and c == AdapterConfig(c.method, size=c.size)]
        if not held:
            raise checks.BadInput(f"{page} holds none of the variants {list(configs)} as it trains them (every layer, in parallel; "
                                  f"its methods: {sorted(set(scores.method))}): drop it from the pages read")
        for name in held:
            if name in read:
                raise checks.BadInput(f"variant {name!r} is held by two of the pages read ({read[name].page} and {page}): read it from one")
            method = configs[name].method
            rows = _method_rows(scores, record, page, method, seeds, configs[name].d_s, budget_sizes.get(method, {}).get("size"))
            read[name] = Borrowed(rows.assign(variant=name), page, copy_line(page, record))
    return read


def shared_variant(configs: dict, shared_from: str | None) -> str | None:
    """The name of the fully shared variant among ``configs`` that :func:`read_shared` reads from chapter
    ``shared_from`` (``None`` when nothing is read). Refused with :class:`mtllib.checks.BadInput`, before any work,
    when ``shared_from`` is given and no variant is the fully shared model."""
    name = next((n for n, c in configs.items() if c.method == REFERENCE), None)
    if shared_from and name is None:
        raise checks.BadInput(f"shared_from reads the fully shared models, and none of the variants {list(configs)} is one: add the "
                              f"method {REFERENCE!r}, or set shared_from = None")
    return name if shared_from else None


def read_shared(shared_from: str | None, variant: str | None, recipe: pd.DataFrame, seeds: list[int],
                book_dir: str | Path | None = None) -> dict[str, Borrowed]:
    """``{variant: Borrowed}``: the fully shared models read from chapter ``shared_from``'s multi-task baselines
    (:func:`mtllib.book.pals_chapters.borrowed_shared`, which refuses another recipe and a missing seed), named
    ``variant`` (:func:`shared_variant`); empty when ``shared_from`` is ``None``."""
    from mtllib.book.pals_chapters import borrowed_shared

    if not shared_from:
        return {}
    rows, line = borrowed_shared(shared_from, recipe, seeds, book_dir)
    return {variant: Borrowed(rows.rename(columns={"method": "variant"}).assign(variant=variant), shared_from, line)}


def read_samplers(pages: list[str] | None, method: str, samplers: list[str], recipe_for, seeds: list[int],
                  book_dir: str | Path | None = None) -> dict[str, Borrowed]:
    """Sec. 6 of "BERT and PALs" from models already trained: ``{sampler: Borrowed}``, the multi-task baselines
    (fully shared models) of each chapter in ``pages``, named by the sampler that chapter trained them under (its
    glued recipe says which), ``variant`` = that sampler. ``recipe_for(sampler)`` is the reading page's recipe with
    that sampler (:func:`mtllib.book.results.recipe_frame`): every other setting must match
    (:func:`mtllib.book.pals_chapters.borrowed_shared`).

    Refused with :class:`mtllib.checks.BadInput`: pages given for a ``method`` (the reading page's) other than the fully
    shared model, a chapter whose sampler is not among ``samplers``, two chapters with the same sampler, and what
    ``borrowed_shared`` refuses (no copy, another recipe, a missing seed)."""
    if pages and method != REFERENCE:
        raise checks.BadInput(f"the pages read ({', '.join(pages)}) hold multi-task baselines, fully shared models, but method is "
                              f"{method!r}: set method = {REFERENCE!r}, or read_from = None")
    read = {}
    for page in pages or []:
        recipe = results.read_frame(results.executed_copy(page, book_dir), "recipe").set_index("setting").value
        sampler = json.loads(recipe["sampler"]) if "sampler" in recipe else None
        if sampler not in samplers:
            raise checks.BadInput(f"{page} trained its models under the sampler {sampler!r}, which is not among samplers {samplers}: "
                                  f"add it, or drop {page} from the pages read")
        if sampler in read:
            raise checks.BadInput(f"sampler {sampler!r} is held by two of the pages read ({read[sampler].page} and {page}): read it from one")
        read.update(read_shared(page, sampler, recipe_for(sampler), seeds, book_dir))
    return read


def _in_order(names: list[str], here: pd.DataFrame | None, borrowed: dict[str, Borrowed]) -> pd.DataFrame:
    """The rows trained ``here`` and those ``borrowed``, in the order of ``names``."""
    rows = pd.concat([here, *(b.rows for b in borrowed.values())], ignore_index=True)  # concat skips the None
    return rows.set_index("variant").loc[[v for v in names if v in set(rows.variant)]].reset_index()


def train_the_rest(model_name: str, tasks: list[str], configs: dict, seeds: list[int], data: dict, train_config,
                   borrowed: dict[str, Borrowed]) -> tuple[pd.DataFrame, list[str]]:
    """Every variant of ``configs`` for ``seeds``: those in ``borrowed`` (:func:`read_variants`, :func:`read_method`,
    :func:`read_shared`) as read, the others trained here (:func:`mtllib.experiments.adapters.run_variants`, through
    the model cache); the rows in the order of ``configs``, and the names of the variants trained here."""
    from mtllib.experiments.adapters import run_variants

    trained = {n: c for n, c in configs.items() if n not in borrowed}
    here = run_variants(model_name, tasks, trained, seeds, data, train_config) if trained else None
    return _in_order(list(configs), here, borrowed), list(trained)


def train_other_samplers(model_name: str, tasks: list[str], adapter, samplers: list[str], seeds: list[int], data: dict, train_config,
                         borrowed: dict[str, Borrowed]) -> tuple[pd.DataFrame, list[str]]:
    """:func:`train_the_rest` for Sec. 6's schedules: ``adapter``'s models under every sampler of ``samplers``, those
    in ``borrowed`` (:func:`read_samplers`) as read, the others trained here
    (:func:`mtllib.experiments.sampling.run_samplers`); the rows in the order of ``samplers``, and the samplers trained here."""
    from mtllib.experiments import sampling

    trained = [s for s in samplers if s not in borrowed]
    here = sampling.run_samplers(model_name, tasks, adapter, trained, seeds, data, train_config) if trained else None
    return _in_order(samplers, here, borrowed), trained


def models_line(trained: list[str], seeds: list[int], borrowed: dict[str, Borrowed], names: dict[str, str] | None = None) -> str:
    """The sentence a page says of where its models came from: those trained here and, for each variant
    ``borrowed``, the copy it was read from (``names``: how to call a variant)."""
    names = names or {}
    return (f"Trained here, through the model cache (keyed by the adapter's whole configuration, so no variant picks up "
            f"another's weights and a model another chapter trained on this recipe is not trained again): "
            f"{', '.join(trained) or 'nothing'}, {len(seeds)} seed(s)."
            + "".join(f" Read, not trained: {names.get(n, n)}, from {b.line}, trained there on this very recipe (checked)."
                      for n, b in borrowed.items()))


def suite_words(tasks: list[str]) -> str:
    """``" on the GLUE-like suite"`` when ``tasks`` are the suite's (:data:`mtllib.data.tasks.GLUE_LIKE`, in any
    order), else ``""``: the words a source that makes a page on chapter 06's tasks and one on the suite adds to its
    subject."""
    return " on the GLUE-like suite" if sorted(tasks) == sorted(GLUE_LIKE.values()) else ""

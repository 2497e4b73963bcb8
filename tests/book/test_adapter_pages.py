"""Adapters from separate pages, read back side by side: the fully shared rows once, each page's adapter, and a
refusal for every pair of pages that cannot be compared seed by seed."""

import dataclasses

import pandas as pd
import pytest

from mtllib import checks
from mtllib.book import results
from mtllib.book.adapter_pages import (Borrowed, hand_count, models_line, read_method, read_methods, read_samplers, read_shared, read_variants,
                                       shared_variant, suite_words, train_other_samplers, train_the_rest)
from tiny import PreparedSizes as Prepared
from tiny import executed_copy as executed

TASKS = ["a", "b"]
PARAMS = {"model": "offline", "max_length": 128}
DATA = {t: Prepared(10) for t in TASKS}


@dataclasses.dataclass
class Recipe:
    epochs: int = 2
    lr: float = 1e-4
    seed: int = 0


def rows(method, seeds=(0, 1), offset=0.0):
    """A page's glued scores: ``method`` and the fully shared model, per seed and task; scores are distinct numbers."""
    out = []
    for m, base in ((method, 60.0 + offset), ("shared", 50.0)):
        for s in seeds:
            for i, t in enumerate(TASKS):
                out.append({"method": m, "seed": s, "task": t, "score": base + 10 * s + i, "validation": base, "majority": 40.0,
                            "learned": True, "train_seconds": 3.0})
    return pd.DataFrame(out)


def page(tmp_path, name, scores, recipe=Recipe(), sizes=None):
    record = {"profile": "cpu", "commit": "abc1234", "executed_at": "2026-12-05T00:00", "parameters": {"seeds": [0, 1], "sizes": sizes}}
    executed(tmp_path, name, {"scores": scores, "recipe": results.recipe_frame(PARAMS, DATA, recipe)}, record)


def test_the_shared_rows_come_once_and_each_adapter_from_its_page(tmp_path):
    page(tmp_path, "p", rows("pals"))
    page(tmp_path, "l", rows("low_rank", offset=1.5))
    read = read_methods({"pals": "p", "low_rank": "l"}, tmp_path / "book")
    assert read.tasks == TASKS and read.seeds == [0, 1] and list(read.records) == ["p", "l"]
    assert list(dict.fromkeys(read.rows.method)) == ["shared", "pals", "low_rank"]
    assert len(read.rows) == 3 * 2 * 2  # three methods, two seeds, two tasks
    got = read.rows.set_index(["method", "seed", "task"]).score
    assert got["low_rank", 1, "b"] - got["pals", 1, "b"] == 1.5 and got["shared", 0, "a"] == 50.0
    assert read.sources().startswith("p (cpu profile, commit abc1234, executed 2026-12-05T00:00); l (")


@pytest.fixture
def book(tmp_path):
    """A book of pages: one with PALs, and low-rank pages that each break one condition of the comparison."""
    page(tmp_path, "p", rows("pals"))
    page(tmp_path, "other_recipe", rows("low_rank"), Recipe(lr=3e-4))
    page(tmp_path, "other_seeds", rows("low_rank", seeds=(0, 2)))
    shared_moved = rows("low_rank")
    shared_moved.loc[shared_moved.method == "shared", "score"] += 0.01
    page(tmp_path, "other_shared", shared_moved)
    page(tmp_path, "no_shared", rows("low_rank").query("method != 'shared'"))
    executed(tmp_path, "no_scores", {"recipe": results.recipe_frame(PARAMS, DATA, Recipe())}, None)  # the recipe glued, no scores
    return tmp_path / "book"


@pytest.mark.parametrize("pages, message", [
    ({"pals": "p"}, "at least two methods"),
    ({"pals": "p", "shared": "p"}, "'shared' is the reference"),
    ({"low_rank": "other_recipe", "pals": "p"},
     r"p cannot be set beside other_recipe .* p's models were trained on another recipe \(lr: 0.0001 there, 0.0003 here\)"),
    ({"pals": "p", "low_rank": "other_seeds"}, r"seeds \[0, 2\], not \[0, 1\]"),
    ({"pals": "p", "low_rank": "other_shared"}, "score differently: they are not the same models"),
    ({"pals": "p", "low_rank": "no_shared"}, r"no_shared holds no rows of 'shared'"),
    ({"lhuc": "p", "low_rank": "other_seeds"}, r"p holds no rows of 'lhuc'"),
    ({"pals": "p", "low_rank": "missing"}, "make run NB=missing"),
    ({"pals": "p", "low_rank": "no_scores"}, r"no_scores cannot be set beside p .*'scores'"),
])
def test_pages_that_cannot_be_compared_seed_by_seed_are_refused(book, pages, message):
    with pytest.raises(checks.BadInput, match=message):
        read_methods(pages, book)


def test_one_page_may_hold_several_methods(tmp_path):
    both = pd.concat([rows("pals"), rows("low_rank", offset=2.0).query("method == 'low_rank'")], ignore_index=True)
    page(tmp_path, "both", both)
    page(tmp_path, "s", rows("separate", offset=-5.0))
    read = read_methods({"pals": "both", "low_rank": "both", "separate": "s"}, tmp_path / "book")
    assert list(read.records) == ["both", "s"] and list(dict.fromkeys(read.rows.method)) == ["shared", "pals", "low_rank", "separate"]
    got = read.rows.set_index(["method", "seed", "task"]).score
    assert got["low_rank", 0, "a"] == 62.0 and got["separate", 1, "b"] == 66.0 and len(read.rows) == 4 * 2 * 2


def test_one_method_is_read_for_the_seeds_asked_at_the_size_asked(tmp_path):
    page(tmp_path, "p", rows("pals", seeds=(0, 1, 2)))  # sizes None there: the paper's budget on the model
    page(tmp_path, "named", rows("pals"), sizes={"pals": {"size": 24}})
    recipe = results.recipe_frame(PARAMS, DATA, Recipe())
    got = read_method("p", "pals", recipe, [2, 0], size=120, budget_size=120, book_dir=tmp_path / "book")
    read, source = got.rows, got.line
    assert got.page == "p" and list(read.columns) == ["variant", "seed", "task", "score", "validation", "majority", "learned", "train_seconds"]
    assert set(read.variant) == {"pals"} and sorted(set(read.seed)) == [0, 2] and len(read) == 2 * 2
    assert read.set_index(["seed", "task"]).score[2, "b"] == 81.0  # 60 + 10 * 2 + 1: the page's own number, no shared rows
    assert source == "p (cpu profile, commit abc1234, executed 2026-12-05T00:00)"
    named = read_method("named", "pals", recipe, [0], size=24, budget_size=120, book_dir=tmp_path / "book", variant="pals, small")
    assert len(named.rows) == 2 and set(named.rows.variant) == {"pals, small"}


@pytest.mark.parametrize("kwargs, message", [
    (dict(method="lhuc"), r"p holds no rows of 'lhuc'"),
    (dict(size=60), r"p's pals models have d_s 120, not 60"),
    (dict(page="named"), r"named's pals models have d_s 24, not 120"),
    (dict(seeds=[0, 3]), r"p has no pals model for seed\(s\) \[3\] \(it has \[0, 1\]\)"),
    (dict(recipe=Recipe(epochs=3)), r"p's models were trained on another recipe \(epochs: 2 there, 3 here\)"),
    (dict(page="missing"), "make run NB=missing"),
])
def test_a_method_that_cannot_stand_in_is_refused(tmp_path, kwargs, message):
    page(tmp_path, "p", rows("pals"))
    page(tmp_path, "named", rows("pals"), sizes={"pals": {"size": 24}})
    args = dict(page="p", method="pals", recipe=Recipe(), seeds=[0, 1], size=120, budget_size=120)
    args.update(kwargs)
    args["recipe"] = results.recipe_frame(PARAMS, DATA, args["recipe"])
    with pytest.raises(checks.BadInput, match=message):
        read_method(**args, book_dir=tmp_path / "book")


def placement_variants(**pals):
    """06b's variants: the fully shared model, PALs in every layer, in series, and attention on top, all at d_s 120."""
    from mtllib.experiments.adapters import variant_configs

    return variant_configs({"shared": {"method": "shared"}, "pals": {"method": "pals", **pals},
                            "pals_serial": {"method": "pals", "connection": "serial"}, "top": {"method": "top_pals"}},
                           {"pals": {"size": 120}, "top_pals": {"size": 120}})


def test_the_variants_a_page_trained_are_read_and_the_others_left_to_train(tmp_path):
    page(tmp_path, "p", rows("pals"))
    page(tmp_path, "t", rows("top_pals", offset=3.0))
    recipe = results.recipe_frame(PARAMS, DATA, Recipe())
    budget = {"pals": {"size": 120}, "top_pals": {"size": 120}}
    read = read_variants(["p", "t"], placement_variants(), recipe, [0, 1], budget, tmp_path / "book")
    assert list(read) == ["pals", "top"] and read["top"].line.startswith("t (cpu profile, commit abc1234")  # not shared, not serial
    assert read["pals"].page == "p" and read["top"].page == "t"
    top = read["top"].rows
    assert set(top.variant) == {"top"} and top.set_index(["seed", "task"]).score[1, "a"] == 73.0  # 63 + 10
    assert read_variants(None, placement_variants(), recipe, [0, 1], budget, tmp_path / "book") == {}
    half = read_variants(["t"], placement_variants(placement="final_half"), recipe, [0], budget, tmp_path / "book")
    assert list(half) == ["top"]  # PALs in the final half are other models than 06g's: trained, not read


@pytest.mark.parametrize("pages, pals, message", [
    (["p", "p2"], {}, r"variant 'pals' is held by two of the pages read \(p and p2\)"),
    (["p"], {"placement": "final_half"}, r"p holds none of the variants \['shared', 'pals', 'pals_serial', 'top'\] as it trains them"),
    (["p"], {"size": 60}, r"p's pals models have d_s 120, not 60"),
    (["p", "missing"], {}, "make run NB=missing"),
])
def test_variants_that_cannot_be_read_are_refused(tmp_path, pages, pals, message):
    page(tmp_path, "p", rows("pals"))
    page(tmp_path, "p2", rows("pals"))
    recipe = results.recipe_frame(PARAMS, DATA, Recipe())
    with pytest.raises(checks.BadInput, match=message):
        read_variants(pages, placement_variants(**pals), recipe, [0, 1], {"pals": {"size": 120}}, tmp_path / "book")


def variant_rows(name, seeds=(0,)):
    from mtllib.experiments.adapters import RUN_COLUMNS

    return pd.DataFrame([{"variant": name, "seed": s, "task": t, "score": 1.0, "validation": 1.0, "majority": 0.0, "learned": True,
                          "train_seconds": 1.0} for s in seeds for t in TASKS])[RUN_COLUMNS]


def lent(name, seeds=(0,)):
    return Borrowed(variant_rows(name, seeds), "elsewhere", "elsewhere (cpu profile)")


def test_only_the_variants_not_read_are_trained_and_every_row_comes_in_the_variants_order(monkeypatch):
    import mtllib.experiments.adapters as exp

    asked = []
    def run_variants(model_name, tasks, variants, seeds, data, train_config):
        asked.append(list(variants))
        return pd.concat([variant_rows(n) for n in variants], ignore_index=True)
    monkeypatch.setattr(exp, "run_variants", run_variants)
    configs = placement_variants()  # shared, pals, pals_serial, top
    borrowed = {"top": lent("top"), "shared": lent("shared")}
    rows, trained = train_the_rest("offline", TASKS, configs, [0], {}, None, borrowed)
    assert asked == [["pals", "pals_serial"]] and trained == ["pals", "pals_serial"]
    assert list(dict.fromkeys(rows.variant)) == ["shared", "pals", "pals_serial", "top"] and len(rows) == 4 * len(TASKS)
    everything = {n: lent(n) for n in configs}
    rows, trained = train_the_rest("offline", TASKS, configs, [0], {}, None, dict(reversed(everything.items())))
    assert asked == [["pals", "pals_serial"]] and trained == [] and list(dict.fromkeys(rows.variant)) == list(configs)


@dataclasses.dataclass
class Sampled:
    epochs: int = 2
    sampler: str = "annealed"


def baselines(tmp_path, name, sampler, offset=0.0, seeds=(0, 1)):
    """A chapter of 07c's source: its multi-task baselines and their IAT branches under ``sampler``."""
    from mtllib.experiments.iat import BASELINE

    scores = pd.DataFrame([{"variant": v, "seed": s, "task": t, "score": 50.0 + offset + 10 * s + i + 5 * (v == "IAT"), "validation": 60.0,
                            "majority": 40.0, "learned": True, "train_seconds": 2.0} for v in (BASELINE, "IAT") for s in seeds
                           for i, t in enumerate(TASKS)])
    record = {"profile": "cpu", "commit": "abc1234", "executed_at": "2026-12-05T00:00"}
    executed(tmp_path, name, {"scores": scores, "recipe": results.recipe_frame(PARAMS, DATA, Sampled(sampler=sampler))}, record)


def test_the_fully_shared_models_are_read_under_the_variant_s_name(tmp_path):
    baselines(tmp_path, "07c", "annealed")
    configs = placement_variants()
    assert shared_variant(configs, "07c") == "shared" and shared_variant(configs, None) is None
    recipe = results.recipe_frame(PARAMS, DATA, Sampled())
    read = read_shared("07c", "shared", recipe, [1], tmp_path / "book")
    assert list(read) == ["shared"] and read["shared"].page == "07c" and read["shared"].line.startswith("07c (cpu profile")
    assert read["shared"].rows[["variant", "seed", "task", "score"]].values.tolist() == [["shared", 1, "a", 60.0], ["shared", 1, "b", 61.0]]
    assert read_shared(None, None, recipe, [1], tmp_path / "book") == {}
    with pytest.raises(checks.BadInput, match=r"none of the variants \['pals', 'top'\] is one: add the method 'shared'"):
        shared_variant({n: c for n, c in configs.items() if n in ("pals", "top")}, "07c")


def test_each_chapter_s_baselines_are_read_as_the_sampler_it_trained_them_under(tmp_path):
    baselines(tmp_path, "07c", "annealed")
    baselines(tmp_path, "07d", "proportional", offset=-2.0)
    samplers = ["proportional-replacement", "annealed", "proportional"]
    asked = []
    def recipe_for(sampler):
        asked.append(sampler)
        return results.recipe_frame(PARAMS, DATA, Sampled(sampler=sampler))
    read = read_samplers(["07d", "07c"], "shared", samplers, recipe_for, [0, 1], tmp_path / "book")
    assert list(read) == ["proportional", "annealed"] and asked == ["proportional", "annealed"]
    assert read["annealed"].page == "07c" and set(read["annealed"].rows.variant) == {"annealed"}
    assert read["proportional"].rows.set_index(["seed", "task"]).score[1, "b"] == 59.0  # 50 - 2 + 10 + 1: the baseline, not IAT
    assert read_samplers(None, "pals", samplers, recipe_for, [0], tmp_path / "book") == {}


@pytest.mark.parametrize("pages, method, samplers, message", [
    (["07c"], "pals", ["proportional", "annealed"], r"hold multi-task baselines, fully shared models, but method is 'pals'"),
    (["07c"], "shared", ["proportional", "uniform"], r"07c trained its models under the sampler 'annealed', which is not among samplers"),
    (["07c", "07c2"], "shared", ["proportional", "annealed"], r"sampler 'annealed' is held by two of the pages read \(07c and 07c2\)"),
    (["07c"], "shared", ["annealed"], "epochs: 2 there, 3 here"),
])
def test_baselines_that_cannot_stand_in_for_a_sampler_are_refused(tmp_path, pages, method, samplers, message):
    baselines(tmp_path, "07c", "annealed")
    baselines(tmp_path, "07c2", "annealed")
    epochs = 3 if samplers == ["annealed"] else 2
    with pytest.raises(checks.BadInput, match=message):
        read_samplers(pages, method, samplers, lambda s: results.recipe_frame(PARAMS, DATA, Sampled(epochs, s)), [0], tmp_path / "book")


def test_only_the_samplers_not_read_are_trained_in_the_samplers_order(monkeypatch):
    import mtllib.experiments.sampling as sampling

    asked = []
    def run_samplers(model_name, tasks, adapter, samplers, seeds, data, train_config):
        asked.append(list(samplers))
        return pd.concat([variant_rows(s) for s in samplers], ignore_index=True)
    monkeypatch.setattr(sampling, "run_samplers", run_samplers)
    samplers = ["proportional-replacement", "annealed", "proportional"]
    rows, trained = train_other_samplers("offline", TASKS, None, samplers, [0], {}, None, {"proportional": lent("proportional"),
                                                                                           "annealed": lent("annealed")})
    assert asked == [["proportional-replacement"]] and trained == ["proportional-replacement"]
    assert list(dict.fromkeys(rows.variant)) == samplers and len(rows) == 3 * len(TASKS)
    rows, trained = train_other_samplers("offline", TASKS, None, samplers[1:], [0], {}, None, {s: lent(s) for s in samplers[1:]})
    assert asked == [["proportional-replacement"]] and trained == [] and list(dict.fromkeys(rows.variant)) == samplers[1:]


def test_the_models_line_says_what_was_trained_and_where_the_rest_was_read():
    line = models_line(["pals_serial"], [0, 1, 2], {"shared": Borrowed(None, "07c", "07c (cpu profile, commit abc)"),
                                                    "pals": Borrowed(None, "06g", "06g (cpu profile, commit def)")},
                       {"shared": "the fully shared models"})
    assert ": pals_serial, 3 seed(s). Read, not trained: the fully shared models, from 07c (cpu profile, commit abc), trained there" in line
    assert line.endswith("Read, not trained: pals, from 06g (cpu profile, commit def), trained there on this very recipe (checked).")
    assert models_line([], [0], {}).endswith("not trained again): nothing, 1 seed(s).")


def tiny_bert():
    from transformers import BertConfig

    return BertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37, vocab_size=99)


@pytest.mark.parametrize("method, size, per_task, per_layer", [
    ("pals", 12, 2 * 32 * 12 + 2 * 3 * 12 ** 2, 3 * 12 ** 2),    # one V_E, V_D pair; 3 d_s^2 in each of 2 layers: 1,632
    ("low_rank", 5, 2 * 2 * 32 * 5, 2 * 32 * 5),                 # a pair per layer: 640
    ("top_pals", 12, 2 * 32 * 12 + 6 * (3 * 12 ** 2 + 2 * 12), 0),  # one pair; 6 layers on top of attention and LayerNorm: 3,504
    # one layer of BertModel's shape: attention 4*(32*32+32), feed-forward (32*37+37) + (37*32+32), two LayerNorms 2*64: 6,789
    ("top_layer", None, 4 * (32 * 32 + 32) + (32 * 37 + 37) + (37 * 32 + 32) + 2 * 64, 0),
    # BertModel: embeddings 99*32 + 512*32 + 2*32 + 64; per layer 4*(32*32+32) + 64 + (32*37+37) + (37*32+32) + 64; pooler 32*32+32
    ("separate", None, 19_680 + 2 * 6_789 + 1_056, 0),
])
def test_the_hand_count_of_each_method_on_a_tiny_encoder(method, size, per_task, per_layer):
    count = hand_count(tiny_bert(), method, size)
    assert (count.per_task, count.per_layer) == (per_task, per_layer)
    assert count.text.endswith(f"{per_task:,} per task")


def test_the_hand_count_names_what_it_cannot_count():
    with pytest.raises(checks.BadInput, match="one of pals, low_rank, top_pals, top_layer, separate"):
        hand_count(tiny_bert(), "lhuc", 12)
    with pytest.raises(checks.BadInput, match="pals needs its size d_s"):
        hand_count(tiny_bert(), "pals")


def test_suite_words_name_the_suite_in_any_order_and_nothing_else():
    suite = ["bbc-acceptability", "tweet-sentiment", "bbc-paraphrase", "bbc-similarity", "bbc-lede", "bbc-next", "bbc-headline",
             "bbc-entailment"]
    assert suite_words(suite) == " on the GLUE-like suite"
    assert suite_words(suite[::-1]) == " on the GLUE-like suite"
    assert suite_words(suite[:-1]) == ""  # seven of its tasks are not the suite
    assert suite_words(["bbc-topic", "tweet-sentiment"]) == ""

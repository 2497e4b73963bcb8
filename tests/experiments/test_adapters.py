"""Table 2 runs on a tiny model: one row per method, seed and task; the shared baseline is the IAP chapters'
multi-task model (same recipe, same cache entry); separate models are single-task; Table 1's layout."""


import pytest
from transformers import BertConfig

from mtllib.experiments import adapters as exp
from mtllib.experiments import iap
from mtllib.modeling.adapters import AdapterError
from mtllib.training.trainer import TrainConfig

TASKS = ["bbc-topic", "bbc-pair"]  # the tasks of tiny_pair (conftest)
CONFIG = TrainConfig(epochs=1, batch_size=8, lr=5e-3)


def test_rows_per_method_seed_and_task_and_shared_is_the_iap_model(tiny_pair):
    folder, tokenizer, data = tiny_pair
    sizes = {"pals": {"size": 8, "heads": 4}}
    rows = exp.run_methods(folder, TASKS, ["shared", "pals", "separate"], [0], data, CONFIG, sizes=sizes)
    assert len(rows) == 3 * len(TASKS) and set(rows.method) == {"shared", "pals", "separate"}
    assert rows.score.between(0, 100).all() and rows.learned.dtype == bool
    iap_run = iap.run_experiment(folder, TASKS, 0, train_config=CONFIG, n_random=0, importance_batches=1, data=data, tokenizer=tokenizer,
                                 progress=False)
    shared = rows[rows.method == "shared"].set_index("task")
    for t in TASKS:  # same build, same recipe: the same cached model, so the same unpruned test score
        assert shared.loc[t, "score"] == pytest.approx(iap_run.base[t])
        assert shared.loc[t, "train_seconds"] == pytest.approx(iap_run.train_seconds)
    separate = rows[rows.method == "separate"].set_index("task")
    assert separate.loc["bbc-topic", "train_seconds"] != separate.loc["bbc-pair", "train_seconds"]  # two models
    # four trained models: shared (then reused by the IAP run), PALs, and one per task for separate; the PALs
    # entry holds the adapters' weights
    import torch

    from mtllib.training.cache import cache_dir

    states = [torch.load(p / "model.pt", map_location="cpu") for p in cache_dir().iterdir()]
    assert len(states) == 4
    assert sum(any(k.startswith("adapters.") for k in s) for s in states) == 1


def test_all_metrics_adds_every_test_metric_beside_the_main_score(tiny_pair):
    """Appendix B of "BERT and PALs" reports SQuAD's exact match beside its F1: ``all_metrics`` keeps every
    test metric of every task, NaN where a task has no such metric, and the main one equal to ``score``."""
    folder, _, data = tiny_pair
    plain = exp.run_methods(folder, TASKS, ["shared"], [0], data, CONFIG)
    rows = exp.run_methods(folder, TASKS, ["shared"], [0], data, CONFIG, all_metrics=True).set_index("task")
    assert list(plain.columns) == ["method", *exp.RUN_COLUMNS[1:]]
    assert list(rows.columns[-2:]) == ["accuracy", "macro_f1"]  # bbc-topic: accuracy and macro F1; bbc-pair: accuracy
    assert (rows.accuracy == rows.score).all() and rows.macro_f1.isna().tolist() == [False, True]


def test_methods_and_sizes_are_checked_before_training(tiny_pair):
    folder, _, data = tiny_pair
    with pytest.raises(AdapterError, match="unknown adaptation method"):
        exp.run_methods(folder, TASKS, ["shared", "pal"], [0], data, CONFIG)
    with pytest.raises(AdapterError, match="multiple of heads"):
        exp.run_methods(folder, TASKS, ["pals"], [0], data, CONFIG, sizes={"pals": {"size": 10, "heads": 4}})
    with pytest.raises(AdapterError, match=r"not run"):
        exp.run_methods(folder, TASKS, ["shared"], [0], data, CONFIG, sizes={"pals": {"size": 8}})


def test_parameter_table_gives_table_1s_budget():
    table = exp.parameter_table(BertConfig(), ["shared", "low_rank", "pals", "separate"], 8)
    assert table.loc["pals", "d_s"] == 204 and table.loc["low_rank", "d_s"] == 100 and table.loc["shared", "d_s"] == "\u2014"
    assert round(table.loc["pals", "multiplier"], 2) == round(table.loc["low_rank", "multiplier"], 2) == 1.13
    assert table.loc["separate", "multiplier"] == 8 and table.loc["shared", "added per task"] == 0


def test_unknown_size_fields_are_named():
    with pytest.raises(AdapterError, match=r"keys must be among \['size', 'heads'"):
        exp.check_methods(["pals"], {"pals": {"d_s": 8}}, BertConfig())


def test_variants_of_one_method_are_separate_models_and_rows(tiny_pair):
    """Sec. 5.2's variants: PALs in parallel and serial have the same parameters, so only the configuration the
    cache key records keeps them apart; each gets its own trained model and its own rows."""
    import torch

    from mtllib.training.cache import cache_dir

    folder, _, data = tiny_pair
    before = set(cache_dir().iterdir()) if cache_dir().exists() else set()
    configs = exp.variant_configs({"parallel": {"method": "pals"}, "serial": {"method": "pals", "connection": "serial"}},
                                  {"pals": {"size": 12, "heads": 4}})  # a size no other test trains
    rows = exp.run_variants(folder, TASKS, configs, [0], data, CONFIG)
    assert list(rows.columns[:3]) == ["variant", "seed", "task"]
    assert list(rows.variant) == ["parallel", "parallel", "serial", "serial"] and list(rows.task) == TASKS * 2
    new = sorted(set(cache_dir().iterdir()) - before)
    assert len(new) == 2  # two entries, not one reused
    a, b = (torch.load(p / "model.pt", map_location="cpu") for p in new)
    assert a.keys() == b.keys()  # the same parameters ...
    assert any(not torch.equal(a[k], b[k]) for k in a if k.startswith("adapters."))  # ... trained differently
    again = exp.run_variants(folder, TASKS, {"serial, again": configs["serial"]}, [0], data, CONFIG)  # from the cache
    assert again.score.tolist() == rows[rows.variant == "serial"].score.tolist()
    assert sorted(set(cache_dir().iterdir()) - before) == new


def test_a_variant_takes_its_methods_default_size_unless_it_gives_one():
    configs = exp.variant_configs({"a": {"method": "pals"}, "b": {"method": "pals", "size": 24, "placement": "final_half"},
                                   "c": {"method": "shared"}}, {"pals": {"size": 48, "heads": 4}})
    assert (configs["a"].d_s, configs["a"].heads, configs["a"].placement) == (48, 4, "all")
    assert (configs["b"].d_s, configs["b"].heads, configs["b"].placement) == (24, 12, "final_half")  # its own size, default heads
    assert configs["c"].method == "shared" and configs["c"].d_s is None


@pytest.mark.parametrize("variants, match", [
    ({}, "non-empty mapping"),
    (["pals"], "non-empty mapping"),
    ({"a": "pals"}, "variant 'a': give a mapping with a method"),
    ({"a": {"placement": "top"}}, "variant 'a': give a mapping with a method"),
    ({"a": {"method": "pals", "d_s": 8}}, r"variant 'a': unknown field\(s\) \['d_s'\]"),
    ({"": {"method": "pals"}}, "non-empty strings"),
])
def test_bad_variants_are_named(variants, match):
    with pytest.raises(AdapterError, match=match):
        exp.variant_configs(variants)


def test_check_variants_names_the_variant_that_does_not_fit_the_encoder():
    configs = exp.variant_configs({"ok": {"method": "pals"}, "deep": {"method": "pals", "placement": [0, 12]}})
    with pytest.raises(AdapterError, match=r"variant 'deep': placement \[0, 12\] must name distinct layers in \[0, 12\)"):
        exp.check_variants(configs, BertConfig())
    with pytest.raises(AdapterError, match="variant 'odd': pals: d_s=10 must be a multiple of heads=12"):
        exp.check_variants(exp.variant_configs({"odd": {"method": "pals", "size": 10}}), BertConfig())


def test_variant_table_counts_placements_by_hand():
    """BERT-base's PALs (d_s = 204, no biases): V_E and V_D once per task (2 d_m d_s), then 3 d_s^2 of attention
    per adapted layer; the final half adapts layers 6-11; serial adds what parallel adds; on top, six layers."""
    configs = exp.variant_configs({"all": {"method": "pals"}, "half": {"method": "pals", "placement": "final_half"},
                                   "serial": {"method": "pals", "connection": "serial"}, "shared": {"method": "shared"}})
    table = exp.variant_table(BertConfig(), configs, 8)
    d_m, d_s = 768, 204
    assert table.loc["all", "added per task"] == 2 * d_m * d_s + 12 * 3 * d_s ** 2
    assert table.loc["half", "added per task"] == 2 * d_m * d_s + 6 * 3 * d_s ** 2
    assert table.loc["serial", "added per task"] == table.loc["all", "added per task"]
    assert table.loc["half", "layers"] == "6, 7, 8, 9, 10, 11" and table.loc["shared", "layers"] == "\u2014"
    assert table.loc["shared", "multiplier"] == 1.0 and table.loc["shared", "method"] == "shared"
    assert table.loc["half", "multiplier"] < table.loc["all", "multiplier"]
    assert round(table.loc["all", "multiplier"], 2) == 1.13  # Table 1's budget


def test_budget_sizes_carry_table_1s_budget_to_another_encoder():
    """On BERT-base the budget is PALs' own 1.13x, so PALs get d_s = 204 back; on a smaller encoder each size is
    the largest whose multiplier stays within it (one step more would exceed it)."""
    from mtllib.modeling.adapters import parameter_multiplier

    budget, sizes = exp.budget_sizes(BertConfig())
    assert round(budget, 2) == 1.13 and sizes["pals"] == {"size": 204}
    small = BertConfig(hidden_size=384, num_hidden_layers=6, intermediate_size=1536)
    budget, sizes = exp.budget_sizes(small)
    assert set(sizes) == {"pals", "low_rank", "top_pals"}
    for method, step in (("pals", 12), ("low_rank", 1), ("top_pals", 12)):
        d_s = sizes[method]["size"]
        assert parameter_multiplier(small, method, 8, size=d_s) <= budget < parameter_multiplier(small, method, 8, size=d_s + step)


def test_the_small_budget_of_sec_5_1_in_added_parameters():
    """1.5 million added parameters for 8 tasks on BERT-base: low-rank layers fit d_s = 10 (8 x 12 layers x
    2 x 768 x 10 = 1,474,560; d_s = 11 would add 1,622,016), PALs only d_s = 48 (8 x (2 x 768 x 48 +
    12 x 3 x 48^2) = 1,253,376; the paper's d_s = 60 adds 1,774,080)."""
    budget, sizes = exp.budget_sizes(BertConfig(), 8, added=1_500_000)
    assert sizes["low_rank"] == {"size": 10} and sizes["pals"] == {"size": 48}
    encoder = 109_482_240  # BertConfig() defaults, pooler included, no task heads
    assert budget == pytest.approx(1 + 1_500_000 / encoder)
    table1, _ = exp.budget_sizes(BertConfig(), 8)
    assert round(table1, 2) == 1.13
    for bad in (0, -5, 1.5e6, True):
        with pytest.raises(AdapterError, match="added must be a positive number"):
            exp.budget_sizes(BertConfig(), 8, added=bad)
    with pytest.raises(AdapterError, match="exceeds a"):  # too small for the smallest size of every method
        exp.budget_sizes(BertConfig(), 8, added=1000)


def _rows(table):
    import pandas as pd

    return pd.DataFrame(table, columns=["variant", "seed", "task", "score", "validation", "majority", "learned"])


def test_the_gate_table_and_the_tasks_every_model_learned():
    rows = _rows([("shared", 0, "a", 80, 81, 50, True), ("shared", 1, "a", 82, 79, 50, True),
                  ("pals", 0, "a", 70, 60, 50, False), ("pals", 1, "a", 84, 83, 50, True),
                  ("shared", 0, "b", 90, 91, 40, True), ("shared", 1, "b", 92, 93, 40, True),
                  ("pals", 0, "b", 91, 90, 40, True), ("pals", 1, "b", 93, 92, 40, True)])
    assert exp.learned_by_every_model(rows, ["b", "a", "c"]) == ["b"]  # a: one PAL model did not; c: never run
    gate = exp.gate_table(rows)
    assert gate.loc["a", ("learned", "pals")] == "1/2" and gate.loc["a", ("learned", "shared")] == "2/2"
    assert gate.loc["a", ("validation", "pals")] == 71.5 and gate.loc["b", ("majority", "shared")] == 40
    per_seed = exp.average_per_seed(rows, ["a", "b"])
    assert list(per_seed.columns) == ["shared", "pals"] and list(per_seed.index) == [0, 1]
    assert per_seed.loc[0, "pals"] == 80.5 and per_seed.loc[1, "shared"] == 87
    assert exp.average_per_seed(rows, []).empty


def test_the_demo_batch_is_a_seeded_fresh_model_and_the_plain_encoders_output(tiny_pair):
    import torch

    folder, tokenizer, data = tiny_pair
    demo = exp.demo_batch(folder, data, TASKS, n=3)
    assert demo.task == "bbc-topic" and not demo.model.training
    assert demo.inputs["input_ids"].shape[0] == 3 and "labels" in demo.batch and set(demo.inputs) <= {"input_ids", "attention_mask", "token_type_ids"}
    with torch.no_grad():
        assert torch.equal(demo.model.encoder(**demo.inputs).last_hidden_state, demo.plain)
    again = exp.demo_batch(folder, data, TASKS, n=3)  # the same seed builds the same heads
    assert all(torch.equal(a, b) for a, b in zip(demo.model.state_dict().values(), again.model.state_dict().values()))
    with pytest.raises(ValueError, match="between 1 and the 24 training examples"):
        exp.demo_batch(folder, data, TASKS, n=25)

"""Notebook parameter rules: one rule per declared parameter, every profile passes them, per-task sizes."""

import pytest

from mtllib import checks
from mtllib.book import runner
from mtllib.book.params import RULES, check_parameters
from mtllib.data.tasks import UnknownTask

PROJECT = runner.Project()


def _values(profile, name):
    """A notebook's parameters under ``profile``: its defaults, overridden by the profile's entry."""
    return {**runner.default_parameters(PROJECT.source(name)), **PROJECT.profile(profile)[name]}


@pytest.mark.parametrize("name", PROJECT.notebook_names())
def test_every_declared_parameter_has_a_rule(name):
    assert set(RULES[PROJECT.source_name(name)]) == set(runner.declared_parameters(PROJECT.source(name)))


@pytest.mark.parametrize("profile", PROJECT.profile_names())
@pytest.mark.parametrize("name", PROJECT.notebook_names())
def test_every_profile_passes_the_checks_that_need_no_hub(profile, name):
    values = _values(profile, name)
    if profile == "paper":  # paper tasks and models need the hub: check types and ranges only
        for key, rule in RULES[PROJECT.source_name(name)].items():
            if key not in ("task", "tasks", "single_task", "pair_version", "partners", "targets", "model"):
                rule(key, values[key])
        return
    assert check_parameters(values, PROJECT.source_name(name)) == values  # a page has its source's rules


def test_per_task_sizes():
    base = dict(model="offline", tasks=["bbc-next", "bbc-pair"], alpha=0.3, seeds=[0], max_eval=32, max_length=64,
                epochs=1, batch_size=16, lr=1e-4, n_random=1, importance_batches=2, device="cpu")
    assert check_parameters({**base, "max_train": {"bbc-next": 100, "default": 50}}, "03_multitask_iap")
    with pytest.raises(checks.BadInput, match=r"no size for \['bbc-pair'\]"):
        check_parameters({**base, "max_train": {"bbc-next": 100}}, "03_multitask_iap")
    with pytest.raises(checks.BadInput, match="does not use"):
        check_parameters({**base, "max_train": {"bbc-topic": 100, "default": 50}}, "03_multitask_iap")
    with pytest.raises(checks.BadInput, match="more than the train split"):
        check_parameters({**base, "max_train": {"bbc-pair": 10**6, "default": 50}}, "03_multitask_iap")


def test_dual_task_pairs_must_be_pairs_of_the_tasks():
    base = dict(model="offline", tasks=["bbc-pair", "bbc-topic", "tweet-sentiment"], alpha=0.3, seeds=[0], frozen_seeds=[0],
                max_train=32, max_eval=32, max_length=64, epochs=1, batch_size=16, lr=1e-4, frozen_lr=1e-3,
                importance_batches=2, device="cpu")
    assert check_parameters({**base, "pairs": None}, "02_dual_task_iap")["pairs"] is None
    assert check_parameters({**base, "pairs": [["bbc-pair", "bbc-topic"]]}, "02_dual_task_iap")
    with pytest.raises(checks.BadInput, match=r"pairs\[0\]"):
        check_parameters({**base, "pairs": [["bbc-pair", "bbc-topic", "tweet-sentiment"]]}, "02_dual_task_iap")
    with pytest.raises(checks.BadInput, match=r"pairs\[0\]"):
        check_parameters({**base, "pairs": [["bbc-pair", "bbc-pair"]]}, "02_dual_task_iap")
    with pytest.raises(checks.BadInput, match=r"pairs name task\(s\) \['bbc-next'\]"):
        check_parameters({**base, "pairs": [["bbc-pair", "bbc-next"]]}, "02_dual_task_iap")
    with pytest.raises(checks.BadInput, match="pairs"):
        check_parameters({**base, "pairs": "bbc-pair,bbc-topic"}, "02_dual_task_iap")


def test_adapter_chapter_parameters():
    base = dict(model="offline", tasks=["bbc-topic", "tweet-sentiment"], methods=["shared", "pals"], sizes=None, seeds=[0],
                max_train=32, max_eval=32, max_length=64, epochs=1, batch_size=16, lr=1e-4, sampler="proportional", device="cpu")
    assert check_parameters(base, "06_bert_and_pals")["sizes"] is None
    assert check_parameters({**base, "sizes": {"pals": {"size": 24}}}, "06_bert_and_pals")
    with pytest.raises(checks.BadInput, match="sampler"):
        check_parameters({**base, "sampler": "annealled"}, "06_bert_and_pals")
    with pytest.raises(checks.BadInput, match="sizes"):
        check_parameters({**base, "sizes": {"pals": 24}}, "06_bert_and_pals")
    with pytest.raises(checks.BadInput, match="methods"):
        check_parameters({**base, "methods": "pals"}, "06_bert_and_pals")
    with pytest.raises(checks.BadInput, match="importance_batches"):
        check_parameters({**base, "importance_batches": 2}, "06_bert_and_pals")


@pytest.mark.parametrize("name", PROJECT.notebook_names())
def test_papermill_sees_every_name_the_parameters_cell_assigns(name):
    """papermill reads the parameters cell with its own parser, which skips a line whose comment holds ``=``
    (papermill 2.7: "Unable to parse line"), hiding that parameter from profiles and from the runner's checks.
    """
    import ast
    import json

    cells = json.loads(PROJECT.source(name).read_text())["cells"]
    source = next("".join(c["source"]) for c in cells if "parameters" in c.get("metadata", {}).get("tags", []))
    assigned = [t.id for node in ast.parse(source).body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)]
    assert runner.declared_parameters(PROJECT.source(name)) == assigned


@pytest.mark.parametrize("change, match", [
    ({"targets": ["bbc-topic"]}, "named twice"),          # a transfer target the models were trained on
    ({"ks": [4, 4]}, "repeated"),
    ({"ks": []}, "at least 1"),
    ({"few_shot_seeds": [0, -1]}, "few_shot_seeds"),
    ({"ablation_k": 0}, "ablation_k"),
    ({"ks": [16], "ablation_k": 4}, r"ablation_k=4 is not among ks=\[16\]"),  # Table 8 would have no IAT row to compare
])
def test_few_shot_parameters_are_refused_before_any_work(change, match):
    values = runner.default_parameters(PROJECT.source("08_few_shot_transfer"))
    with pytest.raises(checks.BadInput, match=match):
        check_parameters({**values, **change}, "08_few_shot_transfer")


def test_the_iat_chapter_may_skip_the_iap_read_but_not_take_a_bad_alpha():
    values = runner.default_parameters(PROJECT.source("07_important_head_training"))
    assert check_parameters({**values, "iap_alpha": None}, "07_important_head_training")["iap_alpha"] is None  # no Fig. 8 (page 07e)
    for bad in (0, 1.5, "0.3"):
        with pytest.raises(checks.BadInput, match="iap_alpha"):
            check_parameters({**values, "iap_alpha": bad}, "07_important_head_training")


def test_the_opened_batch_must_fit_in_the_training_examples():
    base = dict(model="offline", task="bbc-topic", alpha=0.3, max_train=48, max_eval=32, max_length=64, epochs=1,
                batch_size=16, lr=1e-4, importance_batches=2, device="cpu")
    assert check_parameters({**base, "demo_examples": 48}, "01b_iap_by_hand")["demo_examples"] == 48
    with pytest.raises(checks.BadInput, match="demo_examples=49 exceeds max_train=48"):
        check_parameters({**base, "demo_examples": 49}, "01b_iap_by_hand")
    with pytest.raises(checks.BadInput, match="demo_examples"):
        check_parameters({**base, "demo_examples": 0}, "01b_iap_by_hand")
    with pytest.raises(UnknownTask, match="no-such-task"):
        check_parameters({**base, "demo_examples": 8, "task": "no-such-task"}, "01b_iap_by_hand")


def test_transferability_groups_and_pre_finetuning_sizes():
    """The transferability target chapters' rules: groups must map names to registered tasks, and a
    pre-finetuning size must fit every group task's split."""
    base = dict(model="offline", groups={"SL": ["bbc-punct"], "C": ["bbc-topic"]}, target_group="C", targets=["tweet-sentiment"],
                seeds=[0, 1], pf_train=24, pf_eval=16, pf_epochs=1, max_train=32, max_eval=32, max_length=64, epochs=1,
                patience=3, batch_size=16, lr=1e-4, device="cpu")
    from mtllib.data.tasks import UnknownTask

    name = "09b_transfer_sl_targets"
    assert check_parameters(base, name) == base
    for groups, message in (([], "non-empty mapping"), ({}, "non-empty mapping"), ({"SL": []}, "groups\\['SL'\\]"),
                            ({"SL": ["no-such-task"]}, "no-such-task")):
        with pytest.raises((checks.BadInput, UnknownTask), match=message):
            check_parameters({**base, "groups": groups}, name)
    with pytest.raises(checks.BadInput, match=r"pf_train=100000 is more than the train split"):
        check_parameters({**base, "pf_train": 100_000}, name)
    with pytest.raises(checks.BadInput, match=r"pf_eval=100000 is more than the validation split"):
        check_parameters({**base, "pf_eval": 100_000}, name)


def test_the_pre_finetuning_chapter_takes_every_groups_targets_as_a_mapping():
    """09a draws the whole design: its targets are {group: [task, ...]}, each task registered, none named twice
    (a target that is also a pre-finetuning task would not be unseen), and pf_eval must fit the test split too
    (the chapter scores each pre-finetuned model on its tasks' test examples)."""
    from mtllib.data.tasks import UnknownTask

    base = dict(model="offline", groups={"SL": ["bbc-punct"], "C": ["bbc-topic"]}, targets={"SL": ["tweet-pos"], "C": ["tweet-sentiment"]},
                pf_train=24, pf_eval=16, pf_epochs=1, max_length=64, patience=3, batch_size=16, lr=1e-4, device="cpu")
    name = "09a_transfer_prefinetuning"
    assert check_parameters(base, name) == base
    with pytest.raises(UnknownTask, match="no-such-task"):
        check_parameters({**base, "targets": {"SL": ["no-such-task"]}}, name)
    with pytest.raises(checks.BadInput, match="named twice"):
        check_parameters({**base, "targets": {"SL": ["tweet-pos"], "C": ["tweet-pos"]}}, name)
    with pytest.raises(checks.BadInput, match="non-empty mapping"):
        check_parameters({**base, "targets": ["tweet-pos"]}, name)
    with pytest.raises(checks.BadInput, match="unknown parameter"):
        check_parameters({**base, "seeds": [0]}, name)


@pytest.mark.parametrize("profile", PROJECT.profile_names())
def test_the_transfer_chapters_of_a_profile_share_their_settings(profile):
    """The Tables chapter refuses target chapters that differ on TRANSFER_SHARED, and a target chapter whose
    pre-finetuning settings differ from 09a's would pre-finetune again (over an hour on the cpu profile):
    both are caught here, before any chapter runs."""
    from mtllib.book import results
    from mtllib.book.params import PREFINETUNE_SHARED, TRANSFER_SHARED

    chapters = _values(profile, "09e_transfer_tables")["chapters"]
    assert len(chapters) >= 3 and all(name in PROJECT.notebook_names() for name in chapters)
    targets = {name: _values(profile, name) for name in chapters}
    pre = _values(profile, "09a_transfer_prefinetuning")
    records = {name: {"profile": profile, "parameters": values} for name, values in targets.items()}
    results.check_same(records, TRANSFER_SHARED)  # what 09e does with their executed copies
    results.check_same({**records, "09a_transfer_prefinetuning": {"profile": profile, "parameters": pre}}, PREFINETUNE_SHARED)
    assert {v["target_group"] for v in targets.values()} == set(pre["targets"])  # a group may span pages (09c and 09c2)
    results.check_disjoint(records, "targets")  # as 09e: no target on two pages
    for v in targets.values():  # every target a page fine-tunes was drawn by 09a for its group
        assert set(v["targets"]) <= set(pre["targets"][v["target_group"]])



@pytest.mark.parametrize("profile", PROJECT.profile_names())
def test_a_page_reads_seeds_only_from_pages_of_its_source_with_its_recipe_and_other_seeds(profile):
    """What an IAT page checks of its ``seed_pages`` before training (:func:`mtllib.book.iat_chapters.check_seed_pages`)
    needs their executed copies; the same mistakes are caught here from the profile alone: a page of another source,
    other settings or recipe parameters, a seed on two pages, and a run order that would reach the reader first."""
    from mtllib.book.iat_chapters import SEED_SETTINGS

    params = PROJECT.profile(profile)
    same = [*SEED_SETTINGS, "model", "tasks", "sampler", "max_train", "max_eval", "max_length", "epochs", "batch_size", "lr"]
    readers = {name: values["seed_pages"] for name, values in params.items() if values.get("seed_pages")}
    if profile == "cpu":
        assert readers == {"07c_iat_glue_like": ["07c2_iat_glue_like_part2"], "07d_iat_glue_like_proportional": ["07d2_iat_glue_like_proportional_part2"],
                           "07e_iat_ablation_glue_like": ["07e2_iat_ablation_glue_like_part2"]}
    for name, pages in readers.items():
        ours = _values(profile, name)
        seen = set(ours["seeds"])
        for page in pages:
            assert page != name and PROJECT.source_name(page) == PROJECT.source_name(name), (name, page)
            theirs = _values(profile, page)
            assert {k: theirs.get(k) for k in same} == {k: ours.get(k) for k in same}, (name, page)
            assert not seen & set(theirs["seeds"]), (name, page)
            seen |= set(theirs["seeds"])
            assert runner.in_reading_order(PROJECT, profile, [name, page]) == [page, name]


def test_placement_chapter_parameters():
    base = dict(model="offline", tasks=["bbc-topic", "tweet-sentiment"], variants={"pals": {"method": "pals"}}, seeds=[0],
                max_train=32, max_eval=32, max_length=64, epochs=1, batch_size=16, lr=1e-4, sampler="proportional", device="cpu",
                shared_from=None, read_from=["06g_pals_glue_like", "06k_top_pals_glue_like"], book_dir="../book")
    assert check_parameters(base, "06b_pals_placement")["variants"] == {"pals": {"method": "pals"}}
    assert check_parameters({**base, "read_from": None}, "06b_pals_placement")["read_from"] is None
    for change in ({"shared_from": 7}, {"read_from": "06g_pals_glue_like"}, {"read_from": ["06g", "06g"]}, {"read_from": [""]},
                   {"book_dir": None}):
        with pytest.raises(checks.BadInput, match=next(iter(change))):
            check_parameters({**base, **change}, "06b_pals_placement")
    with pytest.raises(checks.BadInput, match="variants"):
        check_parameters({**base, "variants": ["pals"]}, "06b_pals_placement")
    with pytest.raises(checks.BadInput, match=r"variants\['pals'\]"):
        check_parameters({**base, "variants": {"pals": {"placement": "final_half"}}}, "06b_pals_placement")
    with pytest.raises(checks.BadInput, match="variants"):
        check_parameters({**base, "variants": {}}, "06b_pals_placement")


def test_small_budget_chapter_parameters():
    base = dict(model="offline", tasks=["bbc-topic", "tweet-sentiment"], methods=["shared", "lhuc"], small_budget=1_500_000,
                sizes=None, larger_pals=True, margin=1.0, seeds=[0], max_train=32, max_eval=32, max_length=64, epochs=1,
                batch_size=16, lr=1e-4, sampler="proportional", device="cpu", shared_from=None, larger_from="06g_pals_glue_like",
                book_dir="../book")
    assert check_parameters(base, "06c_small_budget")["small_budget"] == 1_500_000
    for change in ({"small_budget": 0}, {"small_budget": 1.5e6}, {"larger_pals": "yes"}, {"margin": 0}, {"sizes": ["pals"]},
                   {"shared_from": 7}, {"larger_from": ["06g"]}, {"book_dir": None}):
        with pytest.raises(checks.BadInput, match=next(iter(change))):
            check_parameters({**base, **change}, "06c_small_budget")


def test_sampling_chapter_parameters():
    base = dict(model="offline", tasks=["bbc-topic", "tweet-sentiment"], method="shared", samplers=["proportional-replacement", "annealed"],
                seeds=[0, 1], max_train=32, max_eval=32, max_length=64, epochs=2, batch_size=16, lr=1e-4, device="cpu",
                read_from=["07c_iat_glue_like", "07d_iat_glue_like_proportional"], book_dir="../book")
    assert check_parameters(base, "06d_sampling")["samplers"] == ["proportional-replacement", "annealed"]
    assert check_parameters({**base, "read_from": None}, "06d_sampling")["read_from"] is None
    for change in ({"samplers": ["annealed"]}, {"samplers": ["proportional", "anealed"]}, {"samplers": "annealed"}, {"method": 3},
                   {"read_from": "07c_iat_glue_like"}, {"read_from": ["07c", "07c"]}, {"book_dir": None}):
        with pytest.raises(checks.BadInput, match=next(iter(change))):
            check_parameters({**base, **change}, "06d_sampling")


def test_data_chapter_parameters():
    base = dict(model="offline", max_articles=300, max_tweets=None, seed=0, silver_summary=False)
    assert check_parameters(base, "01_offline_model_and_data")["silver_summary"] is False
    with pytest.raises(checks.BadInput, match="silver_summary"):
        check_parameters({**base, "silver_summary": "no"}, "01_offline_model_and_data")
    with pytest.raises(checks.BadInput, match="max_articles"):
        check_parameters({**base, "max_articles": 0}, "01_offline_model_and_data")


def test_split_sizes_build_each_task_once_per_process(monkeypatch):
    from mtllib.book import params
    from mtllib.data import tasks

    built, real = [], tasks.load_frames
    topic = {split: len(frame) for split, frame in real("bbc-topic").items()}
    monkeypatch.setattr(tasks, "load_frames", lambda name, **kw: built.append(name) or real(name, **kw))
    params._built_sizes.cache_clear()
    try:
        first = params.split_sizes(["bbc-topic", "tweet-sentiment"])
        assert first["bbc-topic"] == topic
        first["bbc-topic"]["train"] = 0  # a caller's change does not reach the next caller
        again = params.split_sizes(["tweet-sentiment", "bbc-topic"])
        assert built == ["bbc-topic", "tweet-sentiment"] and again["bbc-topic"] == topic
    finally:  # later tests build their own sizes, not ones this test's stand-in counted
        params._built_sizes.cache_clear()

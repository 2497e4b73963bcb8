"""Pre-finetuning on groups of tasks, then fine-tuning unseen targets (transferability paper), on a tiny model:
scheme names, heterogeneous batches that keep the empirical mix, the best epoch by validation loss, a fresh
target head, Tables 1 and 2, and bad designs refused before any training."""

import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch

from mtllib import checks
from mtllib.experiments import transferability as tr
from mtllib.training.trainer import TrainConfig

GROUPS = {"C": ["bbc-topic"], "SL": ["bbc-punct"]}
# the mechanics do not depend on what a group holds: a span-QA target under the SL label exercises a third head kind
TARGETS = {"C": ["tweet-sentiment"], "SL": ["bbc-cloze"]}
CONFIG = TrainConfig(epochs=2, batch_size=8, lr=1e-3)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    import os

    from mtllib.data.features import load_tokenizer, prepare
    from tiny import save_tiny_bert

    os.environ["MTLLIB_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    tokenizer = load_tokenizer("offline")
    folder = save_tiny_bert(tmp_path_factory.mktemp("tiny-bert"), tokenizer.vocab_size)
    data = prepare(["bbc-topic", "bbc-punct", "tweet-sentiment", "bbc-cloze"], tokenizer, max_train=40, max_eval=16, max_length=32)

    return data, tr.model_factory(str(folder))  # the pretrained tiny encoder, heads seeded with 0; it pickles (sweeps)


def test_all_schemes_are_the_baseline_and_every_combination_of_groups():
    assert tr.all_schemes(["SL", "C", "QA"]) == ["Baseline", "Only-SL", "Only-C", "Only-QA", "SL+C", "SL+QA", "C+QA", "SL+C+QA"]
    assert tr.all_schemes(["C"]) == ["Baseline", "Only-C"]


def test_grouped_tasks_lists_every_task_group_by_group_in_order():
    groups = {"SL": ["b-sl", "a-sl"], "QA": [], "C": ["z-c"]}
    assert tr.grouped_tasks(groups) == ["b-sl", "a-sl", "z-c"]
    assert tr.grouped_tasks({}) == []


def test_pre_finetuning_pools_every_example_of_the_schemes_tasks_into_mixed_batches(tiny):
    """Heterogeneous batches keep the empirical mix: over an epoch each task contributes exactly its share of
    the pool (every example once), and batches are not single-task."""
    from mtllib.training.trainer import _Plan

    data, _ = tiny
    sub = {t: data[t] for t in ("bbc-topic", "bbc-punct")}
    config = tr.prefinetune_config(dataclasses.replace(CONFIG, batch_size=8))
    assert config.batching == "heterogeneous" and config.select_on == "loss"
    steps = _Plan(sub, config).epoch(1)
    seen = [member for task, members in steps for member in members]
    assert all(task is None for task, _ in steps)
    assert sorted(seen) == sorted((t, i) for t in sub for i in range(len(sub[t].features["train"])))
    assert sum(len({t for t, _ in members}) > 1 for _, members in steps) > len(steps) / 2


def test_pre_finetune_trains_the_schemes_tasks_and_records_its_cost(tiny):
    data, make_model = tiny
    model, record = tr.pre_finetune(make_model, "SL+C", GROUPS, data, dataclasses.replace(CONFIG, patience=1), progress=False)
    assert sorted(model.task_names) == ["bbc-punct", "bbc-topic"]
    assert record["train examples"] == 80 and record["tasks"] == 2
    assert record["examples processed"] == 80 * record["epochs"] and 1 <= record["best epoch"] <= record["epochs"] <= 2


def test_a_target_head_is_fresh_even_when_its_name_matches_a_source_task(tiny):
    """A target named like a pre-finetuning task still gets a new head, initialised from the seed, never the
    pre-finetuned head of the same name."""
    data, make_model = tiny
    source, _ = tr.pre_finetune(make_model, "Only-C", GROUPS, data, CONFIG, progress=False)
    trained_head = {k: v.clone() for k, v in source.heads["bbc-topic"].state_dict().items()}
    torch.manual_seed(3)
    fresh = tr.transfer_model(source, data["bbc-topic"].task.spec())
    plain = make_model([data["bbc-topic"].task.spec()])  # the pretrained encoder, never pre-finetuned
    torch.manual_seed(3)
    again = tr.transfer_model(plain, data["bbc-topic"].task.spec())
    for name, value in fresh.heads["bbc-topic"].state_dict().items():
        assert not torch.equal(value, trained_head[name]), name
        assert torch.equal(value, again.heads["bbc-topic"].state_dict()[name]), name  # the seed decides it, not the source


def test_fine_tuning_keeps_the_epoch_with_the_lowest_validation_loss(tiny, monkeypatch):
    import mtllib.training.trainer as trainer

    data, make_model = tiny
    losses = iter([3.0, 1.0, 2.0, 2.5])  # epoch 2 is best; patience 2 stops after epoch 4
    real_evaluate = trainer.evaluate

    def evaluate(*args, **kwargs):  # the real scores; the dev losses above
        scores = real_evaluate(*args, **kwargs)
        if kwargs.get("with_loss"):
            scores["loss"] = next(losses)
        return scores

    monkeypatch.setattr(trainer, "evaluate", evaluate)
    out = tr.fine_tune(make_model([data["tweet-sentiment"].task.spec()]), data["tweet-sentiment"], [0], dataclasses.replace(CONFIG, epochs=6, patience=2))
    assert out.epochs.tolist() == [4]


def test_run_gives_tables_1_and_2(tiny):
    data, make_model = tiny
    out = tr.run(make_model, GROUPS, TARGETS, data, CONFIG, dataclasses.replace(CONFIG, epochs=1), seeds=[0, 1],
                 schemes=["Baseline", "Only-C", "SL+C"], progress=False)
    scores, costs = out["scores"], out["costs"]
    assert len(scores) == 3 * 2 * 2 and list(costs.scheme) == ["Baseline", "Only-C", "SL+C"]
    assert costs.set_index("scheme")["train examples"].to_dict() == {"Baseline": 0, "Only-C": 40, "SL+C": 80}
    mean, sd = tr.table1(scores)
    assert list(mean.columns) == ["Baseline", "Only-C", "SL+C"]
    assert list(mean.index) == [("C", "tweet-sentiment"), ("SL", "bbc-cloze"), ("all", "Average")]
    by_hand = scores[(scores.scheme == "Only-C") & (scores.target == "bbc-cloze")].score
    assert mean.loc[("SL", "bbc-cloze"), "Only-C"] == pytest.approx(by_hand.mean())
    assert sd.loc[("SL", "bbc-cloze"), "Only-C"] == pytest.approx(by_hand.std(ddof=1))
    assert mean.loc[("all", "Average")].tolist() == pytest.approx(mean.iloc[:2].mean().tolist())
    t2 = tr.table2(scores)
    assert t2.loc["SL", "SL+C"] == pytest.approx(mean.loc[("SL", "bbc-cloze"), "SL+C"])  # one target per group here
    assert t2.loc["Average"].tolist() == pytest.approx(t2.iloc[:2].mean().tolist())


def test_runs_of_one_seed_differ_only_in_the_encoder(tiny):
    """The same source twice gives the same scores seed by seed (same head initialisation, same data order)."""
    data, make_model = tiny
    base = make_model([data["bbc-topic"].task.spec()])
    a = tr.fine_tune(base, data["tweet-sentiment"], [0, 1], dataclasses.replace(CONFIG, epochs=1))
    b = tr.fine_tune(base, data["tweet-sentiment"], [0, 1], dataclasses.replace(CONFIG, epochs=1))
    pd.testing.assert_frame_equal(a, b)


@pytest.mark.parametrize("groups, targets, schemes, message", [
    ({"C": [], "SL": ["bbc-punct"]}, TARGETS, ["Only-SL"], "group 'C' has no pre-finetuning tasks"),
    ({}, {}, ["Baseline"], "groups is empty"),
    (GROUPS, {"QA": ["bbc-cloze"]}, ["Only-C"], "targets name the group 'QA', which is not one of the groups ['C', 'SL']"),
    (GROUPS, TARGETS, ["Only-QA"], "scheme 'Only-QA' uses group(s) ['QA'] that are not given"),
    (GROUPS, TARGETS, ["C+NER"], "'C+NER' is not a scheme"),
    (GROUPS, {"C": ["bbc-topic"]}, ["Only-C"], "target task(s) ['bbc-topic'] are also pre-finetuning tasks"),
    ({"C": ["bbc-topic"], "SL": ["bbc-topic"]}, TARGETS, ["Only-C"], "task 'bbc-topic' is in two groups ('C' and 'SL')"),
    (GROUPS, {"C": [], "SL": []}, ["Only-C"], "no target tasks"),
    (GROUPS, {"C": ["bbc-pair"]}, ["Only-C"], "data has no prepared task ['bbc-pair']"),
])
def test_a_bad_design_is_refused_before_any_training(tiny, monkeypatch, groups, targets, schemes, message):
    data, make_model = tiny
    monkeypatch.setattr(tr, "pre_finetune", lambda *a, **k: pytest.fail("trained"))
    monkeypatch.setattr(tr, "fine_tune", lambda *a, **k: pytest.fail("trained"))
    with pytest.raises(checks.BadInput) as err:
        tr.run(make_model, groups, targets, data, CONFIG, CONFIG, seeds=[0], schemes=schemes, progress=False)
    assert message in str(err.value)


def test_the_design_is_checked_before_data_exists_and_drawn_as_a_tidy_table():
    tr.check_design(GROUPS, TARGETS, ["Baseline", "SL+C"])  # data=None: everything but the data is checked
    with pytest.raises(checks.BadInput, match="also pre-finetuning"):
        tr.check_design(GROUPS, {"C": ["bbc-topic"]}, ["Only-C"])
    frame = tr.design_frame(GROUPS, TARGETS)
    assert frame.values.tolist() == [["C", "bbc-topic", "pre-finetuning"], ["SL", "bbc-punct", "pre-finetuning"],
                                     ["C", "tweet-sentiment", "target"], ["SL", "bbc-cloze", "target"]]


def test_the_model_factory_starts_every_scheme_from_the_same_weights(tiny):
    data, _ = tiny
    from tiny import save_tiny_bert
    from mtllib.data.features import load_tokenizer

    folder = save_tiny_bert(__import__("tempfile").mkdtemp(), load_tokenizer("offline").vocab_size)
    make = tr.model_factory(str(folder), seed=4)
    specs = [data["bbc-topic"].task.spec()]
    a, b = make(specs), make(specs)
    for (name, x), y in zip(a.state_dict().items(), b.state_dict().values()):
        assert torch.equal(x, y), name
    other = tr.model_factory(str(folder), seed=5)(specs)
    assert any(not torch.equal(x, y) for x, y in zip(a.heads["bbc-topic"].state_dict().values(), other.heads["bbc-topic"].state_dict().values()))


def test_the_target_gate_reads_the_baselines_mean_against_the_majority_class(tiny):
    from mtllib.analysis import learnability

    data, _ = tiny
    majority = learnability.majority_for(data["tweet-sentiment"], "test")
    scores = pd.DataFrame({"scheme": ["Baseline"] * 4 + ["Only-C"] * 2, "target": ["tweet-sentiment"] * 2 + ["bbc-cloze"] * 2 + ["tweet-sentiment"] * 2,
                           "seed": [0, 1, 0, 1, 0, 1], "score": [majority + 14, majority + 18, 40.0, 30.0, 0.0, 0.0]})
    gate = tr.target_gate(scores, data)
    assert gate.loc["tweet-sentiment", "Baseline (mean)"] == pytest.approx(majority + 16)  # the other scheme is not read
    assert bool(gate.loc["tweet-sentiment", "learned"]) and gate.loc["tweet-sentiment", "threshold"] == pytest.approx(majority + 15)
    assert not gate.loc["bbc-cloze", "learned"] and gate.loc["bbc-cloze", "threshold"] >= 50  # squad_f1: a floor of 50
    with pytest.raises(ValueError, match="no scores of scheme 'Baseline'"):
        tr.target_gate(scores[scores.scheme == "Only-C"], data)


# --- the paper's claims on synthetic scores -----------------------------------------------------------------
def _synthetic(effects, noise_sd=None, seeds=5):
    """Scores of every scheme on two targets per group: 70 + effects[(scheme, group)] + seed noise (larger for the
    baseline, so pre-finetuning on every group lowers the spread)."""
    rng = np.random.default_rng(0)
    rows = []
    for scheme in tr.all_schemes(["SL", "C", "QA"]):
        for group in ("SL", "C", "QA"):
            for target in (f"{group.lower()}-1", f"{group.lower()}-2"):
                sd = (noise_sd or {}).get(scheme, 0.3)
                for seed in range(seeds):
                    rows.append({"scheme": scheme, "group": group, "target": target, "seed": seed,
                                 "score": 70 + effects.get((scheme, group), 0.0) + sd * rng.standard_normal()})
    return pd.DataFrame(rows)


EFFECTS = {**{("SL+C+QA", g): 3.0 for g in ("SL", "C", "QA")}, ("Only-SL", "SL"): 3.0, ("Only-C", "C"): 3.0, ("Only-QA", "QA"): 3.0,
           ("Only-C", "SL"): -8.0, ("Only-SL", "QA"): -12.0}


def test_claims_on_scores_that_follow_the_paper():
    scores = _synthetic(EFFECTS, noise_sd={"Baseline": 2.0})
    rows, notes = tr.claims(scores, learned=list(scores.target.unique()))
    table = {r["claim"]: r for r in rows}
    assert notes == [] and len(rows) == 7 + 3 + 1 + 2 + 3
    assert all(table[f"SL+C+QA above {s} on the average over learned targets"]["verdict"] == "holds" for s in tr.all_schemes(["SL", "C", "QA"])[:-1])
    assert table["SL+C+QA above SL+QA on the average over learned targets"]["paper"] == pytest.approx(76.483 - 75.564)
    for g in ("SL", "C", "QA"):
        assert table[f"Only-{g} as good as SL+C+QA on {g} targets"]["verdict"] == "holds"
    assert table["Only-QA as good as SL+C+QA on QA targets"]["paper"] == pytest.approx(75.252 - 75.678)
    assert table["Only-C below Baseline on SL targets"]["verdict"] == "holds"
    assert table["Only-C below Baseline on SL targets"]["paper"] == pytest.approx(72.370 - 80.134)
    assert table["Only-SL below Baseline on QA targets"]["mean"] == pytest.approx(-12.0, abs=0.5)
    assert table["SL+C+QA lowers the sd across seeds against Baseline (per target)"]["verdict"] == "holds"
    # Sec. 4: a single matching group beats the mismatched pair; Table 2 gives the paper's differences
    assert table["Only-QA above SL+C on QA targets"]["paper"] == pytest.approx(75.252 - 57.568)
    assert table["Only-SL above C+QA on SL targets"]["paper"] == pytest.approx(80.844 - 77.378)
    assert table["Only-C above SL+QA on C targets"]["paper"] == pytest.approx(71.404 - 70.068)
    for g, rest in (("SL", "C+QA"), ("C", "SL+QA"), ("QA", "SL+C")):
        assert table[f"Only-{g} above {rest} on {g} targets"]["verdict"] == "holds"
        assert table[f"Only-{g} above {rest} on {g} targets"]["mean"] == pytest.approx(3.0, abs=0.5)


def test_claims_that_do_not_hold_say_so():
    effects = {**EFFECTS, ("Only-C", "SL"): 4.0, ("SL+C", "QA"): 6.0}  # the mismatched group, and the mismatched pair, help here
    rows, _ = tr.claims(_synthetic(effects), learned=list(_synthetic(effects).target.unique()))
    table = {r["claim"]: r for r in rows}
    assert table["Only-C below Baseline on SL targets"]["verdict"] == "does not hold"
    assert table["Only-QA above SL+C on QA targets"]["verdict"] == "does not hold"
    assert table["Only-QA above SL+C on QA targets"]["mean"] == pytest.approx(3.0 - 6.0, abs=0.5)


def test_the_matching_group_claim_needs_both_schemes_and_more_than_one_group():
    scores = _synthetic(EFFECTS)
    rows, notes = tr.claims(scores[scores.scheme != "SL+C"], learned=list(scores.target.unique()))
    assert not any(r["claim"].startswith("Only-QA above") for r in rows)
    assert "'a single matching group beats the mismatched rest' for QA: Only-QA or the scheme of the other groups was not run" in notes
    one = scores[(scores.group == "SL") & scores.scheme.isin(["Baseline", "Only-SL"])]
    rows, notes = tr.claims(one, learned=["sl-1", "sl-2"])
    assert not any(r["claim"] == "Only-SL above Baseline on SL targets" for r in rows)  # the rest of one group is no group, not the baseline
    assert "'a single matching group beats the mismatched rest' for SL: Only-SL or the scheme of the other groups was not run" in notes


def test_the_papers_table2_under_our_scheme_names():
    frame = tr.paper_table2(["Baseline", "C+QA", "SL+C+QA"], ["QA", "SL"])
    assert list(frame.columns) == ["Baseline", "C+QA", "SL+C+QA"] and list(frame.index) == ["QA", "SL"]
    assert frame.loc["QA", "C+QA"] == 75.035 and frame.loc["SL", "SL+C+QA"] == 80.750 and frame.loc["SL", "Baseline"] == 80.134
    with pytest.raises(checks.BadInput, match=r"the paper's Table 2 has no group \['NER'\]"):
        tr.paper_table2(["Baseline"], ["NER"])


def test_claims_use_learned_targets_only_and_say_what_they_could_not_judge():
    scores = _synthetic(EFFECTS)
    scores.loc[scores.target.str.startswith("qa"), "score"] = 0.0  # if these entered any claim, its mean would move
    rows, notes = tr.claims(scores, learned=["sl-1", "sl-2", "c-1", "c-2"])
    names = [r["claim"] for r in rows]
    assert not any("QA targets" in n for n in names)
    assert "'own group is competitive' for QA: no learned target" in notes and "'Only-SL hurts QA targets': no learned target in QA" in notes
    by_hand = scores[scores.target.isin(["sl-1", "sl-2", "c-1", "c-2"])]
    per_seed = by_hand.pivot_table(index="seed", columns="scheme", values="score", aggfunc="mean")
    row = {r["claim"]: r for r in rows}["SL+C+QA above Baseline on the average over learned targets"]
    assert row["mean"] == pytest.approx((per_seed["SL+C+QA"] - per_seed["Baseline"]).mean())
    assert tr.claims(scores, learned=[]) == ([], ["no target was learned: no claim can be judged"])


def test_pre_finetuning_batches_mix_tasks_whatever_their_lengths():
    """Appendix A pools and batches; grouping by length would put the long task (QA contexts) and the short one
    (sentences) into separate batches. Pre-finetuning's batches must mix them as the pool does."""
    from types import SimpleNamespace

    from mtllib.training.trainer import _Plan

    def task(n, length):
        rows = [{"input_ids": [1] * length} for _ in range(n)]
        return SimpleNamespace(features={"train": SimpleNamespace(to_list=lambda: rows)})

    sub = {"long": task(64, 120), "short": task(64, 12)}
    grouped = _Plan(sub, dataclasses.replace(CONFIG, batch_size=8, batching="heterogeneous")).epoch(1)
    assert all(len({t for t, _ in members}) == 1 for _, members in grouped)  # the failure mode, shown
    steps = _Plan(sub, tr.prefinetune_config(dataclasses.replace(CONFIG, batch_size=8))).epoch(1)
    mixed = sum(len({t for t, _ in members}) > 1 for _, members in steps)
    assert mixed >= 0.9 * len(steps), f"only {mixed} of {len(steps)} batches mix the two tasks"


def test_distributed_sweep_of_the_fine_tuning_runs_gives_the_serial_scores(tiny, tmp_path, monkeypatch):
    """Two CPU workers (the process engine) fine-tune the (scheme, target) jobs from encoders the parent
    pre-finetuned into the model cache; scores come back in the serial run's order with the serial values.
    Each run gets an empty cache of its own, so neither reads the other's scores."""
    data, make_model = tiny
    args = (make_model, GROUPS, TARGETS, data, CONFIG, dataclasses.replace(CONFIG, epochs=1))
    kwargs = dict(seeds=[0, 1], schemes=["Baseline", "Only-C"], progress=False)
    monkeypatch.setenv("MTLLIB_CACHE", str(tmp_path / "serial"))
    serial = tr.run(*args, **kwargs)
    monkeypatch.setenv("MTLLIB_CACHE", str(tmp_path / "sweep"))  # the workers inherit it
    swept = tr.run(*args, **kwargs, engine="processes", devices=["cpu", "cpu"])
    columns = ["scheme", "group", "target", "seed", "epochs"]
    pd.testing.assert_frame_equal(swept["scores"][columns], serial["scores"][columns])
    assert swept["scores"].score.tolist() == pytest.approx(serial["scores"].score.tolist(), abs=1e-6)
    assert list(swept["costs"].scheme) == ["Baseline", "Only-C"] and (swept["costs"]["total seconds"] >= swept["costs"].seconds).all()
    assert not swept["costs"].cached.any()  # the parent trained Only-C into its own cache, then the workers read it


@pytest.mark.parametrize("kwargs, message", [
    (dict(engine="threads"), "engine must be one of"),
    (dict(engine="processes", devices=["cuda:7"]), "device 'cuda:7' does not exist here"),
])
def test_a_bad_sweep_is_refused_before_any_training(tiny, monkeypatch, kwargs, message):
    data, make_model = tiny
    trained = []
    monkeypatch.setattr(tr, "pre_finetune", lambda *a, **k: trained.append(a))
    with pytest.raises(checks.BadInput, match=message):
        tr.run(make_model, GROUPS, TARGETS, data, CONFIG, CONFIG, seeds=[0], schemes=["Only-C"], progress=False, **kwargs)
    assert trained == []

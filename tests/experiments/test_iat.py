"""IAT experiments on a tiny model: a branched variant equals the same run trained from the start, the
baseline equals plain training, the cache serves a second call, Table 7's readings, bad input before work."""

import dataclasses

import pandas as pd
import pytest
import torch

from mtllib import checks
from mtllib.experiments import iat as exp
from mtllib.training.iat import IATConfig
from mtllib.training.trainer import TrainConfig, train

TASKS = ["bbc-topic", "tweet-sentiment", "bbc-pair"]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from mtllib.data.features import load_tokenizer, prepare
    from tiny import save_tiny_bert

    tokenizer = load_tokenizer("offline")
    folder = save_tiny_bert(tmp_path_factory.mktemp("tiny-bert"), tokenizer.vocab_size)
    # 40 / 24 / 32 examples in batches of 8: 5 + 3 + 4 = 12 steps an epoch, not a multiple of anything tidy
    data = prepare(TASKS, tokenizer, max_train={"bbc-topic": 40, "tweet-sentiment": 24, "bbc-pair": 32}, max_eval=16, max_length=32)
    return str(folder), data


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MTLLIB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("MTLLIB_MODEL_CACHE", "1")
    return tmp_path / "cache"


CONFIG = TrainConfig(epochs=2, batch_size=8, lr=1e-3)


def _fresh(folder, data, seed):
    from mtllib.modeling.multitask import MultiTaskModel
    from mtllib.runtime import seed_everything

    seed_everything(seed)
    return MultiTaskModel.from_pretrained(folder, [data[n].task.spec() for n in TASKS])


def _same_weights(a, b):
    sa, sb = a.state_dict(), b.state_dict()
    assert sa.keys() == sb.keys()
    for k in sa:
        assert torch.equal(sa[k], sb[k]), k


def test_total_steps_counts_what_the_trainer_takes(tiny):
    folder, data = tiny
    assert exp.total_steps(data, CONFIG) == 2 * (5 + 3 + 4)
    result = train(_fresh(folder, data, 0), data, CONFIG, progress=False)
    assert len(result.log) == exp.total_steps(data, CONFIG)


@pytest.mark.parametrize("delta", [0.25, 0.5])  # branch at step 18 (inside epoch 2) and at 12 (epoch 1's end)
def test_a_branched_variant_equals_the_same_run_from_the_start(tiny, cache, delta, monkeypatch):
    from mtllib.training import trainer

    folder, data = tiny
    iat = IATConfig(alpha=0.5, delta=delta, importance_batches=2)
    random = dataclasses.replace(iat, heads="random")
    steps, original = [], trainer.train

    def counting(model, data, config=None, progress=True, on_step=None):
        def hook(step):
            steps.append(step)
            if on_step is not None:
                on_step(step)
        return original(model, data, config, progress, hook)

    with monkeypatch.context() as m:
        m.setattr(trainer, "train", counting)
        runs = exp.train_variants(folder, TASKS, 3, {"IAT": iat, "random": random}, data, CONFIG, progress=False)
    assert list(runs) == [exp.BASELINE, "IAT", "random"]
    b = 24 - round(delta * 24)
    assert runs["IAT"].branch_step == runs["random"].branch_step == b
    # the baseline's 24 steps (one more, discarded, when it stops at an epoch's end), then each variant only its last delta
    extra = 1 if b % 12 == 0 else 0
    assert len(steps) == 24 + extra + 2 * (24 - b)
    assert steps[-(24 - b):] == list(range(b + 1, 25))

    plain = _fresh(folder, data, 3)
    plain_result = train(plain, data, dataclasses.replace(CONFIG, seed=3), progress=False)
    _same_weights(runs[exp.BASELINE].model, plain)
    pd.testing.assert_frame_equal(runs[exp.BASELINE].result.history, plain_result.history)

    for name, cfg in (("IAT", iat), ("random", random)):
        scratch = _fresh(folder, data, 3)
        scratch_result = train(scratch, data, dataclasses.replace(CONFIG, seed=3, iat=cfg), progress=False)
        _same_weights(runs[name].model, scratch)
        pd.testing.assert_frame_equal(runs[name].result.log, scratch_result.log)
        assert scratch_result.trainable_heads.keys() == runs[name].result.trainable_heads.keys()
        for task, mask in scratch_result.trainable_heads.items():
            assert torch.equal(mask, runs[name].result.trainable_heads[task])
    # the variants really differ from the baseline and from each other
    assert not torch.equal(runs["IAT"].model.state_dict()["encoder.encoder.layer.0.attention.self.query.weight"],
                           runs[exp.BASELINE].model.state_dict()["encoder.encoder.layer.0.attention.self.query.weight"])
    assert any(not torch.equal(runs["IAT"].result.trainable_heads[t], runs["random"].result.trainable_heads[t]) for t in TASKS)


def test_a_second_call_comes_from_the_cache_and_a_new_variant_trains_only_its_branch(tiny, cache, monkeypatch):
    folder, data = tiny
    iat = IATConfig(alpha=0.5, delta=0.25, importance_batches=2)
    first = exp.train_variants(folder, TASKS, 0, {"IAT": iat}, data, CONFIG, progress=False)
    assert not any(r.cached for r in first.values())

    steps_taken = []
    original = exp.__dict__.get("_train_baseline")
    monkeypatch.setattr(exp, "_train_baseline", lambda *a, **k: steps_taken.append("baseline") or original(*a, **k))
    again = exp.train_variants(folder, TASKS, 0, {"IAT": iat}, data, CONFIG, progress=False)
    assert all(r.cached for r in again.values()) and steps_taken == []
    for name in first:
        _same_weights(first[name].model, again[name].model)

    # another alpha at the same delta: the branch checkpoint comes from the cache, the baseline does not retrain
    wider = dataclasses.replace(iat, alpha=0.75)
    third = exp.train_variants(folder, TASKS, 0, {"IAT": iat, "wider": wider}, data, CONFIG, progress=False)
    assert steps_taken == [] and third["IAT"].cached and not third["wider"].cached
    scratch = _fresh(folder, data, 0)
    train(scratch, data, dataclasses.replace(CONFIG, seed=0, iat=wider), progress=False)
    _same_weights(third["wider"].model, scratch)


def test_alpha_one_and_delta_zero_are_the_baseline(tiny, cache):
    folder, data = tiny
    runs = exp.train_variants(folder, TASKS, 1, {"all heads": IATConfig(alpha=1.0, delta=0.5), "no IAT": IATConfig(alpha=0.3, delta=0.0)},
                              data, CONFIG, progress=False)
    for name in ("all heads", "no IAT"):
        _same_weights(runs[name].model, runs[exp.BASELINE].model)
        assert runs[name].branch_step is None and runs[name].result.trainable_heads == {}


@pytest.mark.parametrize("variants, config, match", [
    ({}, CONFIG, "non-empty mapping"),
    ({"MTL": IATConfig()}, CONFIG, "baseline's"),
    ({"IAT": 0.3}, CONFIG, "must be an IATConfig"),
    ({"IAT": IATConfig()}, dataclasses.replace(CONFIG, batching="heterogeneous"), "single-task batches"),
])
def test_bad_variants_fail_before_any_training(tiny, variants, config, match, monkeypatch):
    folder, data = tiny
    monkeypatch.setattr("mtllib.training.trainer.train", lambda *a, **k: pytest.fail("trained"))
    with pytest.raises(checks.BadInput, match=match):
        exp.train_variants(folder, TASKS, 0, variants, data, config, progress=False)


@pytest.mark.parametrize("kwargs, match", [
    (dict(alpha=0.0), "alpha"), (dict(alpha=1.5), "alpha"), (dict(delta=-0.1), "delta"), (dict(delta=1.2), "delta"),
    (dict(heads="bottom"), "heads"),
])
def test_iat_settings_out_of_range_are_refused(kwargs, match):
    with pytest.raises((checks.BadInput, ValueError), match=match):
        IATConfig(**kwargs)


@pytest.mark.parametrize("kwargs, match", [
    (dict(sweep_seeds=[5]), "not among seeds"),
    (dict(sweep={"IAT": IATConfig()}), "both in variants and in sweep"),
    (dict(dissociate=("IAT", "other")), "unknown variant"),
    (dict(iap_alpha=0.0), "alpha"),
    (dict(seeds=[-1]), "seeds"),
])
def test_run_refuses_bad_settings_before_any_training(tiny, kwargs, match, monkeypatch):
    folder, data = tiny
    monkeypatch.setattr(exp, "train_variants", lambda *a, **k: pytest.fail("trained"))
    args = dict(seeds=[0], variants={"IAT": IATConfig()}, data=data, config=CONFIG, progress=False)
    args.update(kwargs)
    with pytest.raises((checks.BadInput, ValueError), match=match):
        exp.run(folder, TASKS, **args)


def test_run_reads_every_variant_and_table_7(tiny, cache):
    from mtllib.analysis.importance import select_heads
    from mtllib.training.trainer import task_importance

    folder, data = tiny
    iat = IATConfig(alpha=0.5, delta=0.25, importance_batches=2)
    result = exp.run(folder, TASKS, [0, 1], {"IAT": iat}, data, CONFIG, iap_alpha=0.25, dissociate=(exp.BASELINE, "IAT"),
                     prune_alpha=0.25, importance_batches=2, sweep_seeds=[1], sweep={"IAT wide": dataclasses.replace(iat, alpha=0.75)},
                     progress=False)
    s = result.scores
    assert len(s) == (2 + 3) * len(TASKS)  # seed 0: MTL, IAT; seed 1: MTL, IAT, IAT wide
    assert set(s[s.seed == 1].variant) == {exp.BASELINE, "IAT", "IAT wide"} and set(s[s.seed == 0].variant) == {exp.BASELINE, "IAT"}
    assert s[s.variant == "IAT"].branch_step.eq(18).all() and s[s.variant == exp.BASELINE].branch_step.isna().all()
    assert len(result.dissociation) == 2 * 2 * len(TASKS) and len(result.pruned_least) == 2 * len(TASKS)
    # the masks IAT trained with: top 50% of each task's importance at the branch step
    mask = result.masks[(0, "IAT")]["bbc-topic"]
    assert mask.dtype == torch.bool and int(mask.sum()) == mask.numel() // 2

    # the stored test predictions give back the scores, and the changed-prediction counts by hand
    import numpy as np

    for r in s.itertuples():
        golds = np.asarray(data[r.task].features["test"]["labels"])
        assert 100 * np.mean(result.predictions[(r.seed, r.variant)][r.task] == golds) == pytest.approx(r.score)
    changed = exp.changed_predictions(result, "IAT")
    assert list(changed.index) == [0, 1] and list(changed.columns) == TASKS
    for seed in (0, 1):
        for t in TASKS:
            assert changed.loc[seed, t] == int(np.sum(result.predictions[(seed, "IAT")][t] != result.predictions[(seed, exp.BASELINE)][t]))
    assert exp.changed_predictions(result, "IAT wide").index.tolist() == [1]
    with pytest.raises(KeyError, match="no seed"):
        exp.changed_predictions(result, "nothing")
    log = result.logs[(0, exp.BASELINE)]
    assert len(log) == 24 and {"task", "loss", "lr"} <= set(log.columns)

    # Table 7's pruned row by hand: seed 0's baseline, each task's own least important 25% gated off
    runs = exp.train_variants(folder, TASKS, 0, {"IAT": iat}, data, CONFIG, progress=False)
    base = runs[exp.BASELINE].model
    importance = task_importance(base, data, CONFIG.batch_size, 0, 2, progress=False)
    least = exp.prune_least(base, data, importance, 0.25)
    got = result.pruned_least[result.pruned_least.seed == 0].set_index("task").score
    assert got.to_dict() == pytest.approx(least.to_dict())
    assert int(select_heads(importance["bbc-topic"], 0.25, "bottom").sum()) == 2  # 25% of 2 x 4 heads


def test_readings_by_hand():
    scores = pd.DataFrame([
        {"seed": s, "variant": v, "task": t, "score": sc, "learned": t != "c" or v == "MTL"}
        for s, rows in {0: {"MTL": (50, 60, 70), "IAT": (52, 59, 40)}, 1: {"MTL": (54, 62, 70), "IAT": (55, 64, 40)}}.items()
        for v, vals in rows.items() for t, sc in zip("abc", vals)])
    assert exp.learned_tasks(scores) == ["a", "b"]
    assert exp.learned_tasks(scores, ["MTL"]) == ["a", "b", "c"]
    avg = exp.average_by_seed(scores, ["a", "b"])
    assert avg.loc[0, "MTL"] == 55 and avg.loc[1, "IAT"] == 59.5
    # mean over seeds: a 52 -> 53.5 (improved), b 61 -> 61.5 (improved), c 70 -> 40 (not)
    assert exp.tasks_improved(scores, ["a", "b", "c"]).to_dict() == {"IAT": 2}
    gains = exp.gains_by_seed(scores, ["b", "a"], "IAT")  # IAT minus MTL of the same seed, in the order asked
    assert list(gains.columns) == ["b", "a"] and gains.loc[0].to_dict() == {"b": -1, "a": 2} and gains.loc[1].to_dict() == {"b": 2, "a": 1}
    with pytest.raises(KeyError, match="random"):
        exp.gains_by_seed(scores, ["a"], "random")
    m = {"a": torch.tensor([[True, True], [False, False]]), "b": torch.tensor([[True, False], [True, False]]),
         "c": torch.tensor([[False, False], [True, True]])}
    # a-b share 1 of 2, a-c 0 of 2, b-c 1 of 2
    assert exp.mean_mask_overlap(m) == pytest.approx((0.5 + 0.0 + 0.5) / 3)

"""IAP experiments on a tiny model: dual-task rows follow Eq. 6, reproducible, bad pairs refused; summaries."""

import numpy as np
import pandas as pd
import pytest
import torch

from mtllib.analysis.dissociation import classify, dissociation
from mtllib.experiments import iap
from mtllib.papers import functional_specialization as paper

TASKS = paper.TASKS
TABLE3 = paper.TABLE3.loc[TASKS]
TABLE3_BASE = paper.TABLE3.loc["Base"]


# --- dual-task runs on a tiny model ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    import os

    from mtllib.data.features import load_tokenizer
    from mtllib.data.features import prepare
    from tiny import save_tiny_bert

    os.environ["MTLLIB_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    tokenizer = load_tokenizer("offline")
    folder = save_tiny_bert(tmp_path_factory.mktemp("tiny-bert"), tokenizer.vocab_size)
    data = prepare(["bbc-topic", "tweet-sentiment", "bbc-pair"], tokenizer, max_train=32, max_eval=24, max_length=32)
    return folder, tokenizer, data


def test_dual_task_rows_follow_eq_6_and_are_reproducible(tiny):
    from mtllib.training.trainer import TrainConfig

    folder, tokenizer, data = tiny
    config = TrainConfig(epochs=1, batch_size=8, lr=1e-3)
    pairs = [("bbc-topic", "tweet-sentiment"), ("bbc-pair", "tweet-sentiment")]
    rows = iap.dual_task(folder, pairs, [0, 1], data, tokenizer, train_config=config, importance_batches=2, progress=False)
    assert len(rows) == 4 and set(iap.DUAL_COLUMNS) <= set(rows.columns)
    for r in rows.itertuples():
        d_a = 100 * (r.B_pruned_on_A - r.A_pruned_on_A) / r.base_A  # Eq. 6, by hand
        d_b = 100 * (r.A_pruned_on_B - r.B_pruned_on_B) / r.base_B
        assert r.D_A == pytest.approx(d_a) and r.D_B == pytest.approx(d_b) and r.D == pytest.approx((d_a + d_b) / 2)
        assert r.reading == classify(r.D_A, r.D_B)
    import shutil

    from mtllib.training.cache import results_dir

    shutil.rmtree(results_dir())  # the analysis again, from the cached model
    again = iap.dual_task(folder, pairs[:1], [1], data, tokenizer, train_config=config, importance_batches=2, progress=False)
    assert again.iloc[0].drop("train_seconds").equals(rows.iloc[1].drop("train_seconds"))
    summary = iap.dual_summary(rows)
    assert list(summary.index) == ["bbc-topic + tweet-sentiment", "bbc-pair + tweet-sentiment"]
    first = rows.iloc[:2]
    assert summary.loc["bbc-topic + tweet-sentiment", "D"] == pytest.approx(first.D.mean())
    assert summary.loc["bbc-topic + tweet-sentiment", "D_sd"] == pytest.approx(first.D.std(ddof=1))
    assert summary.seeds.tolist() == [2, 2]
    # every row carries each task's gate, read from the model's own validation scores
    for r in rows.itertuples():
        for side in ("A", "B"):
            val, majority, learned = getattr(r, f"val_{side}"), getattr(r, f"majority_{side}"), getattr(r, f"learned_{side}")
            assert learned == (val >= majority + 15)


def _dual_rows(flags):
    """Dual-task rows with given gate outcomes: ``flags`` = [(A, B, seed, learned_A, learned_B)]."""
    return pd.DataFrame([{"A": a, "B": b, "seed": s, "D": 1.0, "val_A": 80.0 if la else 50.0, "val_B": 80.0 if lb else 50.0,
                          "majority_A": 50.0, "majority_B": 50.0, "learned_A": la, "learned_B": lb}
                         for a, b, s, la, lb in flags])


def test_dual_gate_counts_every_model_that_trained_a_task():
    rows = _dual_rows([("x", "y", 0, True, True), ("x", "y", 1, True, False), ("x", "z", 0, True, True), ("y", "z", 0, True, True)])
    gate = iap.dual_gate(rows)
    assert list(gate.index) == ["x", "y", "z"]
    assert gate.learned.tolist() == ["3/3", "2/3", "2/2"]
    assert gate["in the verdicts"].tolist() == ["yes", "no", "yes"]
    assert gate.loc["y", "validation (min)"] == 50.0 and gate.loc["y", "validation (mean)"] == pytest.approx(70.0)
    kept = iap.learned_pairs(rows)
    assert list(zip(kept.A, kept.B)) == [("x", "z")]  # y failed once: both of its pairs leave the verdicts
    assert iap.learned_pairs(rows, gate).equals(kept)  # the gate given is the gate used
    everyone = gate.assign(**{"in the verdicts": "yes"})
    assert len(iap.learned_pairs(rows, everyone)) == len(rows)


def test_dual_task_refuses_bad_pairs_before_training(tiny):
    folder, tokenizer, data = tiny
    with pytest.raises(ValueError, match="two different tasks"):
        iap.dual_task(folder, [("bbc-topic", "bbc-topic")], [0], data, tokenizer)
    with pytest.raises(ValueError, match="no prepared task"):
        iap.dual_task(folder, [("bbc-topic", "bbc-next")], [0], data, tokenizer)
    with pytest.raises(ValueError, match="at least one pair"):
        iap.dual_task(folder, [], [0], data, tokenizer)


def test_summarize_gives_nan_sd_for_one_seed():
    masks = {t: torch.arange(6).reshape(3, 2) == i for i, t in enumerate(TASKS)}
    result = iap.IAPResult(0, paper.TABLE3.copy(), {}, masks, pd.DataFrame(), 0.0, list(TASKS))
    out = iap.summarize([result])
    assert np.allclose(out["perf_mean"], paper.TABLE3)
    assert out["perf_sd"].isna().all().all() and out["D"]["sd"].isna().all()
    assert np.allclose(out["D"]["mean"], dissociation(TABLE3, TABLE3_BASE))


def test_iap_prunes_the_top_alpha_heads_and_each_row_is_that_evaluation(tiny):
    """The masks are the *top* alpha by importance; every pruned row is the evaluation with that mask; the
    Random row is the mean over the random masks (recomputed here from the cached model)."""
    from mtllib.analysis.importance import gates_from_mask, num_pruned, select_heads
    from mtllib.data.metrics import compute
    from mtllib.modeling.multitask import MultiTaskModel
    from mtllib.runtime import seed_everything
    from mtllib.training.cache import train_cached
    from mtllib.training.trainer import TrainConfig, predict

    folder, tokenizer, data = tiny
    tasks = ["bbc-topic", "tweet-sentiment"]
    config = TrainConfig(epochs=1, batch_size=8, lr=1e-3, seed=3)
    result = iap.run_experiment(folder, tasks, 3, alpha=0.25, train_config=config, n_random=2, importance_batches=2,
                                data=data, tokenizer=tokenizer, progress=False)
    for t in tasks:
        importance, mask = result.importance[t].flatten(), result.masks[t].flatten()
        assert int(mask.sum()) == num_pruned(0.25, importance.numel())
        assert importance[mask].min() >= importance[~mask].max()  # the most important heads, not any heads

    seed_everything(3)
    model = MultiTaskModel.from_pretrained(folder, [data[t].task.spec() for t in tasks])
    _, _, hit = train_cached(model, {t: data[t] for t in tasks}, config, progress=False)
    assert hit  # the same weights the experiment evaluated

    def accuracy(task, mask):
        preds, golds = predict(model, data[task], "test", 64, None, None if mask is None else gates_from_mask(mask))
        return compute(["accuracy"], preds, golds)["accuracy"]

    for evaluated in tasks:
        assert result.perf.loc["Base", evaluated] == pytest.approx(accuracy(evaluated, None))
        for pruned in tasks:
            assert result.perf.loc[pruned, evaluated] == pytest.approx(accuracy(evaluated, result.masks[pruned]))
        randoms = [select_heads(result.importance[tasks[0]], 0.25, "random", seed=3 * 100 + r) for r in range(2)]
        assert result.perf.loc["Random", evaluated] == pytest.approx(np.mean([accuracy(evaluated, m) for m in randoms]))


def test_an_unchanged_analysis_is_read_from_the_results_cache_and_any_setting_recomputes_it(tiny, monkeypatch):
    from mtllib.training import trainer
    from mtllib.training.trainer import TrainConfig

    folder, tokenizer, data = tiny
    tasks = ["bbc-topic", "tweet-sentiment"]
    kwargs = dict(alpha=0.25, train_config=TrainConfig(epochs=1, batch_size=8, lr=1e-3), n_random=1, importance_batches=2,
                  data=data, tokenizer=tokenizer, progress=False)
    first = iap.run_experiment(folder, tasks, 5, **kwargs)

    def computed_again(*args, **kw):
        raise RuntimeError("computed again")

    monkeypatch.setattr(trainer, "task_importance", computed_again)
    second = iap.run_experiment(folder, tasks, 5, **kwargs)
    pd.testing.assert_frame_equal(second.perf, first.perf)
    assert all(torch.equal(second.masks[t], first.masks[t]) and torch.equal(second.importance[t], first.importance[t]) for t in tasks)
    assert second.gate.equals(first.gate) and second.correct.keys() == first.correct.keys()
    fewer_test = {t: type(d)(d.task, {**d.features, "test": d.features["test"].select(range(10))}, d.rows, d.pad_token_id) for t, d in data.items()}
    for change in ({"alpha": 0.5}, {"n_random": 2}, {"importance_batches": 1}, {"data": fewer_test}):  # the last: same model, other examples
        with pytest.raises(RuntimeError, match="computed again"):
            iap.run_experiment(folder, tasks, 5, **{**kwargs, **change})
    with pytest.raises(RuntimeError, match="computed again"):  # another seed: another model
        iap.run_experiment(folder, tasks, 6, **kwargs)


def test_pruning_table_rows_are_the_evaluations_with_each_mask(monkeypatch):
    """Table 3's bookkeeping against a stand-in for the model: an evaluation whose predictions depend on which
    heads are gated off, so every mask gives other scores. Each task's row is the evaluation with that task's
    mask, Random the per-task mean over the random masks, Base the unpruned evaluation; the per-example
    correctness (what the bootstrap resamples) follows the same rows, Random's as the mean over its masks."""
    from types import SimpleNamespace

    from mtllib.training import trainer

    golds = {"a": np.array([0, 1, 1, 0, 1, 0, 0, 1]), "b": np.array([1, 1, 0, 0, 1, 1, 0, 0])}
    offset = {"a": 0, "b": 3}

    def hits(task, mask):  # example j is wrong when head (j + offset) is pruned: the stand-in's rule
        pruned = np.zeros(6, dtype=bool) if mask is None else mask.flatten().numpy().astype(bool)
        return np.array([not pruned[(j + offset[task]) % 6] for j in range(len(golds[task]))], dtype=float)

    def fake_predict(model, td, split, batch_size, device, gates):
        assert (model, split, batch_size, device) == ("model", "test", 64, "the device")  # the defaults, passed through
        mask = None if gates is None else gates == 0
        right = hits(td.name, mask).astype(bool)
        g = golds[td.name]
        return list(np.where(right, g, 1 - g)), list(g)

    monkeypatch.setattr(trainer, "predict", fake_predict)
    data = {t: SimpleNamespace(name=t, task=SimpleNamespace(main_metric="accuracy")) for t in golds}
    m = lambda *heads: torch.tensor([[h in heads for h in range(3)], [h + 3 in heads for h in range(3)]])
    masks = {"a": m(0, 1), "b": m(4)}
    randoms = [m(2), m(3, 5), m(0, 4, 5)]
    correct: dict = {}
    table = iap.pruning_table("model", data, masks, randoms, device="the device", correct=correct)

    assert list(table.index) == ["a", "b", "Random", "Base"] and list(table.columns) == ["a", "b"]
    assert (table.index.name, table.columns.name) == ("pruned", "evaluated")  # the axes as the book's tables label them
    for t in golds:
        for row, mask in masks.items():
            assert table.loc[row, t] == pytest.approx(100 * hits(t, mask).mean())
            np.testing.assert_array_equal(correct[row][t], hits(t, mask))
        assert table.loc["Random", t] == pytest.approx(np.mean([100 * hits(t, r).mean() for r in randoms]))
        np.testing.assert_allclose(correct["Random"][t], np.mean([hits(t, r) for r in randoms], axis=0))
        assert table.loc["Base", t] == 100.0
        np.testing.assert_array_equal(correct["Base"][t], np.ones(len(golds[t])))
    assert table.loc["a", "a"] != table.loc["b", "a"]  # the masks matter to the scores
    pd.testing.assert_frame_equal(iap.pruning_table("model", data, masks, randoms, device="the device"), table)  # correct=None: same table

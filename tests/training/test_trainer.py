"""The trainer: determinism, resume, IAT equivalences, batching modes, evaluation, bad input."""

import dataclasses

import numpy as np
import pandas as pd
import pytest
import torch
from transformers import BertConfig

from mtllib.data.features import load_tokenizer
from mtllib.training.iat import IATConfig
from mtllib.modeling.multitask import MultiTaskModel, TaskSpec, load_checkpoint, save_checkpoint
from mtllib.training.trainer import TrainConfig, batch_indices, eval_batches, evaluate, few_shot, train, validation_losses
from mtllib.data.features import prepare

NAMES = ["bbc-topic", "bbc-punct", "bbc-cloze"]


@pytest.fixture(scope="module")
def tokenizer():
    return load_tokenizer("offline")


@pytest.fixture(scope="module")
def data(tokenizer, tmp_path_factory):
    import os

    os.environ["MTLLIB_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    return prepare(NAMES, tokenizer, max_train=48, max_eval=24, max_length=48)


def _model(data, tokenizer, seed=0):
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37, max_position_embeddings=64)
    return MultiTaskModel.from_config(config, [data[n].task.spec() for n in data])


CONFIG = TrainConfig(epochs=2, batch_size=8, lr=5e-3)


def _run(data, tokenizer, **changes):
    model = _model(data, tokenizer)
    result = train(model, data, dataclasses.replace(CONFIG, **changes), progress=False)
    return model, result


def test_same_seed_gives_bit_identical_runs(data, tokenizer):
    _, a = _run(data, tokenizer)
    _, b = _run(data, tokenizer)
    pd.testing.assert_frame_equal(a.history, b.history)
    pd.testing.assert_frame_equal(a.log, b.log)
    _, c = _run(data, tokenizer, seed=1)
    assert not a.log.loss.equals(c.log.loss)


def test_log_history_and_best_model(data, tokenizer):
    model, result = _run(data, tokenizer, epochs=3)
    steps_per_epoch = sum(int(np.ceil(len(data[n].features["train"]) / 8)) for n in NAMES)
    assert len(result.log) == 3 * steps_per_epoch and result.log.step.tolist() == list(range(1, 3 * steps_per_epoch + 1))
    assert set(result.log.task) == set(NAMES)
    assert result.log.lr.iloc[0] < result.log.lr.max() and result.log.lr.iloc[-1] < result.log.lr.max()  # warm-up, decay
    averages = result.history.groupby("epoch").average.first()
    assert result.best_epoch == averages.idxmax() and result.best_score == averages.max()
    again = evaluate(model, data)  # the model returned is the best epoch's
    best_rows = result.history[result.history.epoch == result.best_epoch].set_index("task")
    pd.testing.assert_series_equal(again["score"], best_rows["score"], check_names=False)


def test_evaluate_restores_training_mode(data, tokenizer):
    model = _model(data, tokenizer).train()
    evaluate(model, data)
    assert model.training


def test_resume_after_a_kill_ends_like_an_uninterrupted_run(data, tokenizer, tmp_path):
    _, full = _run(data, tokenizer)

    class Killed(Exception):
        pass

    def kill_at_step_7(step):
        if step == 7:
            raise Killed

    config = dataclasses.replace(CONFIG, checkpoint_dir=str(tmp_path / "run"), checkpoint_every=3)
    with pytest.raises(Killed):
        train(_model(data, tokenizer), data, config, progress=False, on_step=kill_at_step_7)
    assert (tmp_path / "run" / "last.pt").exists()
    resumed = train(_model(data, tokenizer, seed=123), data, config, progress=False)  # weights come from the checkpoint
    pd.testing.assert_frame_equal(resumed.history, full.history)
    pd.testing.assert_frame_equal(resumed.log, full.log)


@pytest.mark.parametrize("kill_at", [19, 20])
def test_resume_across_an_epoch_boundary_keeps_the_best_model(data, tokenizer, tmp_path, kill_at):
    """Killed just after epoch 1 (18 steps; the last checkpoint is at step 18, the epoch's end): the resumed
    run ends with the same history, log and kept (best-epoch) weights as an uninterrupted one."""
    config = dataclasses.replace(CONFIG, epochs=3, checkpoint_every=3, keep_best=True)
    steps_per_epoch = sum(int(np.ceil(len(data[n].features["train"]) / 8)) for n in NAMES)
    assert steps_per_epoch == 18
    full_model = _model(data, tokenizer)
    full = train(full_model, data, dataclasses.replace(config, checkpoint_every=None), progress=False)

    class Killed(Exception):
        pass

    def kill(step):
        if step == kill_at:
            raise Killed

    config = dataclasses.replace(config, checkpoint_dir=str(tmp_path / "run"))
    with pytest.raises(Killed):
        train(_model(data, tokenizer), data, config, progress=False, on_step=kill)
    resumed_model = _model(data, tokenizer, seed=123)
    resumed = train(resumed_model, data, config, progress=False)
    pd.testing.assert_frame_equal(resumed.history, full.history)
    pd.testing.assert_frame_equal(resumed.log, full.log)
    assert resumed.best_epoch == full.best_epoch
    a, b = full_model.state_dict(), resumed_model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_checkpoint_of_other_settings_is_refused(data, tokenizer, tmp_path):
    config = dataclasses.replace(CONFIG, epochs=1, checkpoint_dir=str(tmp_path / "run"))
    train(_model(data, tokenizer), data, config, progress=False)
    with pytest.raises(ValueError, match=r"written by another run \(its config differ; settings that differ: lr 0\.005 -> 0\.001"):
        train(_model(data, tokenizer), data, dataclasses.replace(config, lr=1e-3), progress=False)


def test_iat_with_alpha_1_or_delta_0_is_plain_multi_task_training(data, tokenizer):
    _, plain = _run(data, tokenizer)
    _, alpha_one = _run(data, tokenizer, iat=IATConfig(alpha=1.0, delta=0.5))
    _, delta_zero = _run(data, tokenizer, iat=IATConfig(alpha=0.3, delta=0.0))
    pd.testing.assert_frame_equal(alpha_one.log, plain.log)
    pd.testing.assert_frame_equal(delta_zero.log, plain.log)
    pd.testing.assert_frame_equal(delta_zero.history, plain.history)


def test_iat_masks_are_each_tasks_top_heads(data, tokenizer):
    _, result = _run(data, tokenizer, iat=IATConfig(alpha=0.25, delta=0.5, importance_batches=2))
    assert set(result.trainable_heads) == set(NAMES)
    for name, mask in result.trainable_heads.items():
        assert mask.sum() == 2  # round(0.25 * 8)
        top = result.importance[name].flatten().argsort(descending=True)[:2]
        assert set(top.tolist()) == set(mask.flatten().nonzero().flatten().tolist())
    _, random = _run(data, tokenizer, iat=IATConfig(alpha=0.25, delta=0.5, heads="random", importance_batches=2))
    assert all(m.sum() == 2 for m in random.trainable_heads.values())
    assert not pd.Series(random.log.loss).equals(pd.Series(result.log.loss))


def test_iat_zeroes_frozen_gradients_before_clipping(data, tokenizer, monkeypatch):
    """Clipping reads the gradient norm: under IAT, the current task's frozen slices hold zero gradient by then."""
    import mtllib.training.iat as iat_module

    zeroed, seen = [], []
    original_clip, original_zero = torch.nn.utils.clip_grad_norm_, iat_module.HeadUpdateMask.zero_frozen_grads

    def zero(self, task):
        original_zero(self, task)
        zeroed.append((self, task))

    def clip(params, max_norm, *args, **kwargs):
        params = list(params)
        if not zeroed:
            seen.append(False)  # clipped before any frozen gradient was zeroed
        else:
            mask, task = zeroed.pop()
            frozen = [(p, mask.frozen[task][id(p)]) for p in mask.params if id(p) in mask.frozen[task]]
            seen.append(bool(frozen) and all(torch.count_nonzero(p.grad[f]) == 0 for p, f in frozen))
        return original_clip(params, max_norm, *args, **kwargs)

    monkeypatch.setattr(iat_module.HeadUpdateMask, "zero_frozen_grads", zero)
    monkeypatch.setattr(torch.nn.utils, "clip_grad_norm_", clip)
    model = _model(data, tokenizer)
    train(model, data, dataclasses.replace(CONFIG, epochs=1, iat=IATConfig(alpha=0.25, delta=1.0, importance_batches=1)), progress=False)
    assert len(seen) == sum(int(np.ceil(len(data[n].features["train"]) / 8)) for n in NAMES) and all(seen)


def test_iat_delta_1_starts_from_the_first_step(data, tokenizer):
    _, result = _run(data, tokenizer, epochs=1, iat=IATConfig(alpha=0.5, delta=1.0, importance_batches=1))
    assert result.trainable_heads and not pd.Series(result.log.loss).equals(pd.Series(_run(data, tokenizer, epochs=1)[1].log.loss))


def test_heterogeneous_batches_mix_tasks_and_cover_every_example(data, tokenizer, monkeypatch):
    import mtllib.training.trainer as trainer

    seen, make_batch = [], trainer._make_batch
    monkeypatch.setattr(trainer, "_make_batch", lambda d, e, task, members: seen.append((task, list(members))) or make_batch(d, e, task, members))
    _, result = _run(data, tokenizer, batching="heterogeneous", epochs=1)
    total = sum(len(data[n].features["train"]) for n in NAMES)
    assert (result.log.task == "mixed").all() and len(result.log) == len(seen) == int(np.ceil(total / 8))
    assert np.isfinite(result.log.loss).all()
    # every training example of every task exactly once in the epoch, and batches that hold several tasks
    trained = sorted(m for _, members in seen for m in members)
    assert trained == sorted((n, i) for n in NAMES for i in range(len(data[n].features["train"])))
    assert all(task is None for task, _ in seen)
    assert sum(len({n for n, _ in members}) > 1 for _, members in seen) > len(seen) // 2


def test_frozen_encoder_trains_heads_only(data, tokenizer):
    model = _model(data, tokenizer)
    encoder_before = {n: p.detach().clone() for n, p in model.encoder.named_parameters()}
    heads_before = {n: p.detach().clone() for n, p in model.heads.named_parameters()}
    train(model, data, dataclasses.replace(CONFIG, epochs=1, freeze_encoder=True), progress=False)
    assert all(torch.equal(p, encoder_before[n]) for n, p in model.encoder.named_parameters())
    assert any(not torch.equal(p, heads_before[n]) for n, p in model.heads.named_parameters())


def test_length_grouping_cuts_padding():
    lengths = np.random.default_rng(0).integers(5, 120, size=3200)

    def real_share(group):
        batches = batch_indices(lengths, 32, np.random.default_rng(1), group)
        return lengths.sum() / sum(len(b) * lengths[b].max() for b in batches)

    assert real_share(True) > 0.9 > real_share(False)
    batches = batch_indices(lengths, 32, np.random.default_rng(1), True)
    assert sorted(np.concatenate(batches).tolist()) == list(range(3200))


@pytest.mark.parametrize("changes, match", [
    (dict(batch_size=0), r"TrainConfig\.batch_size must be an integer >= 1"),
    (dict(sampler="balanced"), r"TrainConfig\.sampler must be one of 'proportional'"),
    (dict(batching="mixed"), r"TrainConfig\.batching must be one of"),
    (dict(batching="heterogeneous", iat=IATConfig()), "needs single-task batches"),
    (dict(epochs=0), r"TrainConfig\.epochs must be"),
    (dict(device="tpu"), "unknown device"),
    (dict(select_on="accuracy"), r"TrainConfig\.select_on must be one of 'score', 'loss'"),
    (dict(patience=0), r"TrainConfig\.patience must be an integer >= 1"),
])
def test_bad_settings_fail_before_anything_is_written(data, tokenizer, tmp_path, changes, match):
    with pytest.raises(ValueError, match=match):  # when the config is made
        dataclasses.replace(CONFIG, checkpoint_dir=str(tmp_path / "run"), **changes)
    config = dataclasses.replace(CONFIG, checkpoint_dir=str(tmp_path / "run"))
    for key, value in changes.items():  # a config changed after it was made is checked again by train()
        object.__setattr__(config, key, value)
    with pytest.raises(ValueError, match=match):
        train(_model(data, tokenizer), data, config, progress=False)
    assert not (tmp_path / "run").exists()


def test_no_tasks_or_missing_heads_are_errors(data, tokenizer):
    with pytest.raises(ValueError, match="no tasks"):
        train(_model(data, tokenizer), {}, CONFIG, progress=False)
    other = MultiTaskModel.from_config(BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=32, num_hidden_layers=1, num_attention_heads=4, intermediate_size=37), [TaskSpec("x", "classification", 2)])
    with pytest.raises(ValueError, match=r"no head for task\(s\) \['bbc-topic'"):
        train(other, data, CONFIG, progress=False)
    with pytest.raises(ValueError, match="at least one task"):
        prepare([], tokenizer)


def test_few_shot_from_a_multi_task_checkpoint(data, tokenizer, tmp_path):
    model, _ = _run(data, tokenizer, epochs=1)
    save_checkpoint(model, tmp_path / "mtl.pt")
    target = data["bbc-topic"]
    spec = target.task.spec()
    made = []
    table = few_shot(lambda: made.append(load_checkpoint(tmp_path / "mtl.pt", [spec])) or made[-1], target, ks=[2], seeds=[0, 1],
                     config=TrainConfig(epochs=2, batch_size=4, lr=1e-3, keep_best=False), progress=False)
    assert table[["k", "seed"]].values.tolist() == [[2, 0], [2, 1]]
    # each row is the validation score of the model fine-tuned for that (k, seed), evaluated afresh here
    for row, model_of_run in zip(table.itertuples(), made):
        again = evaluate(model_of_run, {target.task.name: target}, "validation")
        assert row.accuracy == again.loc[target.task.name, "accuracy"]
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_checkpoint(tmp_path / "missing.pt", [spec])


def test_few_shot_fine_tunes_the_checkpoints_encoder_afresh_for_each_run(data, tokenizer, tmp_path):
    model, _ = _run(data, tokenizer, epochs=1)
    save_checkpoint(model, tmp_path / "mtl.pt")
    target = data["bbc-topic"]
    made = []

    def make():
        m = load_checkpoint(tmp_path / "mtl.pt", [target.task.spec()])
        made.append((m, {k: v.clone() for k, v in m.encoder.state_dict().items()}))
        return m

    few_shot(make, target, ks=[2], seeds=[0, 1], config=TrainConfig(epochs=1, batch_size=4, lr=1e-3, keep_best=False), progress=False)
    assert len(made) == 2 and made[0][0] is not made[1][0], "a fresh model for every (k, seed)"
    trained = model.encoder.state_dict()
    for m, start in made:
        assert all(torch.equal(start[k], trained[k].cpu()) for k in start), "starts from the checkpoint's encoder"
        assert any(not torch.equal(start[k], v) for k, v in m.encoder.state_dict().items()), "and fine-tunes it"


def test_example_losses_are_the_training_loss_per_example(data, tokenizer):
    from mtllib.data.features import collate
    from mtllib.training.trainer import example_losses

    model = _model(data, tokenizer).eval()
    # (span QA is left out: like Hugging Face's QA heads, its softmax runs over padded positions too)
    for name in ("bbc-topic", "bbc-punct"):
        losses = example_losses(model, data[name], "test", batch_size=5)
        feats = data[name].features["test"]
        assert losses.shape == (len(feats),)
        whole = model(**collate(feats.to_list(), data[name].pad_token_id, task=name)).per_example_loss
        assert np.allclose(losses, whole.detach().numpy(), atol=1e-5)  # batching and padding change nothing


def test_batches_hold_every_example_once_and_keep_the_last_partial_batch():
    lengths = np.random.default_rng(0).integers(5, 120, size=1000)  # 1,000 = 31 batches of 32 + one of 8
    for group in (False, True):
        batches = batch_indices(lengths, 32, np.random.default_rng(3), group)
        assert sorted(np.concatenate(batches).tolist()) == list(range(1000))
        assert sorted(len(b) for b in batches) == [8] + [32] * 31
    maxima = [int(lengths[b].max()) for b in batch_indices(lengths, 32, np.random.default_rng(3), True)]
    assert maxima != sorted(maxima) and maxima != sorted(maxima, reverse=True)  # grouped, then shuffled


# --- what the mutation run (make mutation) found unpinned -----------------------------------------------
def _grouped_batches_by_hand(lengths, batch_size, seed):
    """batch_indices' docstring written out: shuffle; cut into the fewest near-equal chunks of at most 50
    batches; sort each chunk by length (ties keep the shuffled order); cut into batches; shuffle the batches."""
    rng = np.random.default_rng(seed)
    order = list(rng.permutation(len(lengths)))
    n_chunks = -(-len(order) // (50 * batch_size))  # ceil
    grouped = []
    for k in range(n_chunks):  # near-equal parts, the first ones one longer (as np.array_split cuts)
        size, extra = divmod(len(order), n_chunks)
        start = k * size + min(k, extra)
        part = order[start:start + size + (k < extra)]
        grouped += sorted(part, key=lambda i: lengths[i])  # Python's sort is stable
    batches = [grouped[i:i + batch_size] for i in range(0, len(grouped), batch_size)]
    return [batches[i] for i in rng.permutation(len(batches))]


@pytest.mark.parametrize("n, batch_size", [(1000, 4), (1010, 4), (150, 4), (37, 8)])  # 5 and 6 chunks; one chunk; a partial batch
def test_length_grouping_is_its_docstring_written_out(n, batch_size):
    lengths = np.random.default_rng(n).integers(3, 9, size=n)  # few distinct lengths: many ties
    ours = [b.tolist() for b in batch_indices(lengths, batch_size, np.random.default_rng(5), True)]
    assert ours == _grouped_batches_by_hand(lengths, batch_size, 5)


def test_eval_batches_group_by_length_and_keep_ties_in_order():
    examples = [{"input_ids": [0] * n} for n in (3, 1, 2, 5, 4)]
    assert [b.tolist() for b in eval_batches(examples, 2)] == [[1, 2], [0, 4], [3]]
    assert [b.tolist() for b in eval_batches(examples, 1)] == [[1], [2], [0], [4], [3]]
    same = [{"input_ids": [0] * (2 + i % 3)} for i in range(200)]  # ties: positions in their original order
    assert np.concatenate(eval_batches(same, 64)).tolist() == sorted(range(200), key=lambda i: 2 + i % 3)


@pytest.mark.parametrize("batch_size", [0, -1, 2.0, "8"])
def test_eval_batch_size_must_be_a_positive_integer(batch_size):
    import re

    with pytest.raises(ValueError, match="^" + re.escape(f"eval batch_size must be an integer >= 1, got {batch_size!r}") + "$"):
        eval_batches([{"input_ids": [0]}], batch_size)


# --- model selection and early stopping (transferability paper, App. B.2) ---------------------------------
def test_patience_stops_when_the_dev_score_stops_improving(data, tokenizer):
    """At a learning rate too small to change a prediction, every epoch scores like the first: with patience 2
    training stops after epoch 3 (two epochs without a strictly better score), keeping epoch 1."""
    steps_per_epoch = sum(int(np.ceil(len(data[n].features["train"]) / 8)) for n in NAMES)
    _, result = _run(data, tokenizer, epochs=6, lr=1e-12, patience=2)
    assert result.stopped_epoch == 3 and result.best_epoch == 1
    assert sorted(result.history.epoch.unique()) == [1, 2, 3] and result.log.step.max() == 3 * steps_per_epoch
    _, full = _run(data, tokenizer, epochs=6, lr=1e-12)
    assert full.stopped_epoch is None and full.history.epoch.max() == 6


def test_patience_never_stops_at_the_last_epoch(data, tokenizer):
    _, result = _run(data, tokenizer, epochs=2, lr=1e-12, patience=1)
    assert result.stopped_epoch is None and result.history.epoch.max() == 2


def test_select_on_loss_keeps_the_epoch_with_the_lowest_average_dev_loss(data, tokenizer):
    model, result = _run(data, tokenizer, epochs=4, select_on="loss")
    per_epoch = result.history.groupby("epoch").average_loss.first()
    by_hand = result.history.groupby("epoch").loss.mean()  # the average over tasks of each task's mean dev loss
    np.testing.assert_allclose(per_epoch.to_numpy(), by_hand.to_numpy())
    assert result.best_epoch == int(per_epoch.idxmin())
    assert result.best_score == pytest.approx(result.history[result.history.epoch == result.best_epoch].score.mean())
    kept = validation_losses(model, data, CONFIG.eval_batch_size)
    assert np.mean(list(kept.values())) == pytest.approx(per_epoch.min(), rel=1e-5)  # the best epoch's weights are back


def test_evaluate_with_loss_gives_the_scores_and_each_tasks_mean_example_loss_in_one_pass(data, tokenizer):
    model, _ = _run(data, tokenizer, epochs=1)
    both = evaluate(model, data, "validation", with_loss=True)
    pd.testing.assert_frame_equal(both.drop(columns="loss"), evaluate(model, data, "validation"))
    assert both["loss"].to_dict() == validation_losses(model, data)  # the same batches: the same numbers, exactly


def test_select_on_loss_with_patience_stops_on_the_loss_not_the_score(data, tokenizer, monkeypatch):
    """Dev losses that rise after epoch 1 stop the run at epoch 1 + patience, whatever the scores do."""
    import mtllib.training.trainer as trainer_module

    epochs_seen = []
    real_evaluate = trainer_module.evaluate

    def rising(*args, **kwargs):  # the real scores, and dev losses that grow with every evaluation
        scores = real_evaluate(*args, **kwargs)
        if kwargs.get("with_loss"):
            epochs_seen.append(1)
            scores["loss"] = float(len(epochs_seen))
        return scores

    monkeypatch.setattr(trainer_module, "evaluate", rising)
    _, result = _run(data, tokenizer, epochs=5, select_on="loss", patience=2)
    assert result.best_epoch == 1 and result.stopped_epoch == 3 and len(epochs_seen) == 3


def test_a_resumed_run_that_had_stopped_early_trains_no_further(data, tokenizer, tmp_path):
    config = dict(epochs=6, lr=1e-12, patience=1, checkpoint_dir=str(tmp_path / "run"))
    _, first = _run(data, tokenizer, **config)
    assert first.stopped_epoch == 2
    steps = []
    model = _model(data, tokenizer)
    again = train(model, data, dataclasses.replace(CONFIG, **config), progress=False, on_step=steps.append)
    assert steps == [] and again.stopped_epoch == 2 and again.best_epoch == first.best_epoch
    pd.testing.assert_frame_equal(again.history, first.history)


def test_a_multiple_choice_task_trains_beside_span_qa_and_is_scored_by_its_best_choice(tokenizer):
    """Appendix B of "BERT and PALs" trains SQuAD and SWAG together with round-robin sampling: the offline
    stand-ins train in one model, and the accuracy evaluate() reports is that of the highest-scoring choice,
    as computed here by hand from the model's per-choice logits."""
    from mtllib import checks
    from mtllib.data.features import collate
    from mtllib.training.trainer import predict

    both = prepare(["bbc-cloze", "bbc-continuation"], tokenizer, max_train=32, max_eval=12, max_length=40)
    model = _model(both, tokenizer)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(checks.BadInput, match=r"multiple-choice tasks \(bbc-continuation\) need single-task batches"):
        train(model, both, dataclasses.replace(CONFIG, batching="heterogeneous"), progress=False)
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in before.items())  # nothing trained
    result = train(model, both, dataclasses.replace(CONFIG, sampler="round-robin"), progress=False)
    assert set(result.log.task) == {"bbc-cloze", "bbc-continuation"} and result.log.loss.notna().all()
    td = both["bbc-continuation"]
    model.eval()
    with torch.no_grad():
        batch = collate(list(td.features["validation"]), td.pad_token_id, task="bbc-continuation")
        chosen = model(**{k: v for k, v in batch.items() if k != "labels"}).logits["bbc-continuation"].argmax(-1).numpy()
    gold = np.asarray(td.rows["validation"]["label"])
    assert evaluate(model, {"bbc-continuation": td}).loc["bbc-continuation", "accuracy"] == pytest.approx(100 * (chosen == gold).mean())
    preds, refs = predict(model, td, batch_size=5)  # length-grouped batches, put back in the split's order
    assert preds.tolist() == chosen.tolist() and refs.tolist() == gold.tolist()

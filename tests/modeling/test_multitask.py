"""The multi-task model: heads of every kind, pooling, routing of heterogeneous batches, errors."""

import pytest
import torch
from transformers import AlbertConfig

from mtllib.modeling.archs import UnsupportedArchitecture
from mtllib.modeling.multitask import MultiTaskModel, TaskSpec, load_checkpoint, save_checkpoint
from tiny import MODEL_TYPES, random_batch, tiny_config

TASKS = [
    TaskSpec("topic", "classification", 5),
    TaskSpec("similarity", "regression"),
    TaskSpec("tags", "sequence_labelling", 3),
    TaskSpec("qa", "span_qa"),
]


def _model(model_type="bert", tasks=TASKS, seed=0):
    torch.manual_seed(seed)
    return MultiTaskModel.from_config(tiny_config(model_type), tasks).eval()


def _labels(batch_size=4, seq_len=7, seed=0):
    g = torch.Generator().manual_seed(seed)
    token_labels = torch.randint(0, 3, (batch_size, seq_len), generator=g)
    token_labels[:, 0] = -100
    return {
        "labels": torch.tensor([1.0, 0.5, 3.0, 2.0])[:batch_size],
        "token_labels": token_labels,
        "start_positions": torch.randint(0, seq_len, (batch_size,), generator=g),
        "end_positions": torch.randint(0, seq_len, (batch_size,), generator=g),
    }


@pytest.mark.parametrize("model_type", MODEL_TYPES)
@pytest.mark.parametrize("task", [t.name for t in TASKS])
def test_every_task_kind_on_every_architecture(model_type, task):
    model = _model(model_type)
    out = model(**random_batch(4, pad_last=2), **_labels(), task=task)
    shapes = {"topic": (4, 5), "similarity": (4,), "tags": (4, 7, 3), "qa": (4, 7, 2)}
    assert tuple(out.logits[task].shape) == shapes[task]
    assert out.per_example_loss.shape == (4,) and torch.isfinite(out.loss)
    out.loss.backward()
    assert model.encoder.get_input_embeddings().weight.grad is not None


def _cross_entropy_by_hand(logits, target):
    """Cross-entropy written out: minus the log of the softmax at the true class."""
    return -(logits[target] - torch.log(torch.exp(logits).sum()))


def test_losses_match_hand_computation():
    model = _model()
    batch, labels = random_batch(4), _labels()
    out = model(**batch, **labels, task="topic")
    logits, y = out.logits["topic"].double(), labels["labels"].long()
    expected = torch.stack([_cross_entropy_by_hand(logits[b], y[b]) for b in range(4)])
    torch.testing.assert_close(out.per_example_loss.double(), expected)
    torch.testing.assert_close(out.loss.double(), expected.mean())
    out = model(**batch, **labels, task="tags")
    logits, target = out.logits["tags"], labels["token_labels"]
    for b in range(4):
        scored = target[b] != -100
        expected = torch.nn.functional.cross_entropy(logits[b][scored], target[b][scored])
        torch.testing.assert_close(out.per_example_loss[b], expected)
    out = model(**batch, **labels, task="similarity")
    torch.testing.assert_close(out.per_example_loss, (out.logits["similarity"] - labels["labels"]) ** 2)
    out = model(**batch, **labels, task="qa")
    start, end = out.logits["qa"].unbind(-1)
    ce = torch.nn.functional.cross_entropy
    expected = (ce(start, labels["start_positions"], reduction="none") + ce(end, labels["end_positions"], reduction="none")) / 2
    torch.testing.assert_close(out.per_example_loss, expected)


def test_heterogeneous_batch_routes_each_example_and_weighs_examples_equally():
    model = _model()
    batch, labels = random_batch(4), _labels()
    task_ids = torch.tensor([0, 2, 0, 0])  # three topic examples, one tagging example
    mixed = model(**batch, **labels, task_ids=task_ids)
    topic = model(**batch, **labels, task="topic")
    tags = model(**batch, **labels, task="tags")
    torch.testing.assert_close(mixed.per_example_loss[[0, 2, 3]], topic.per_example_loss[[0, 2, 3]])
    torch.testing.assert_close(mixed.per_example_loss[1], tags.per_example_loss[1])
    assert torch.equal(mixed.rows["topic"], torch.tensor([0, 2, 3])) and torch.equal(mixed.rows["tags"], torch.tensor([1]))
    torch.testing.assert_close(mixed.loss, mixed.per_example_loss.mean())
    mean_of_means = (mixed.per_example_loss[[0, 2, 3]].mean() + mixed.per_example_loss[1]) / 2
    assert not torch.isclose(mixed.loss, mean_of_means)


@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_decoder_pools_last_real_token(padding_side):
    model = _model("gpt2", [TaskSpec("topic", "classification", 5)])
    hidden = torch.arange(2 * 5 * 1, dtype=torch.float32).view(2, 5, 1)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    if padding_side == "left":
        mask = mask.flip(1)
    pooled = model._pool(hidden, mask)
    expected_positions = [2, 4] if padding_side == "right" else [4, 4]
    assert pooled.squeeze(-1).tolist() == [hidden[0, expected_positions[0], 0].item(), hidden[1, expected_positions[1], 0].item()]
    assert torch.equal(_model("bert")._pool(hidden, mask), hidden[:, 0])


def test_padding_does_not_change_a_decoder_prediction():
    model = _model("gpt2", [TaskSpec("topic", "classification", 5)])
    batch = random_batch(1, 5)
    padded = {"input_ids": torch.cat([batch["input_ids"], torch.ones(1, 3, dtype=torch.long)], 1),
              "attention_mask": torch.cat([batch["attention_mask"], torch.zeros(1, 3, dtype=torch.long)], 1)}
    torch.testing.assert_close(model(**batch, task="topic").logits["topic"], model(**padded, task="topic").logits["topic"])


def test_no_labels_gives_logits_and_no_loss():
    out = _model()(**random_batch(), task="topic")
    assert out.loss is None and out.per_example_loss is None and out.logits["topic"].shape == (3, 5)


def test_freeze_encoder_leaves_only_heads_trainable():
    model = _model()
    model.freeze_encoder()
    trainable = {n.split(".")[0] for n, p in model.named_parameters() if p.requires_grad}
    assert trainable == {"heads"}
    model.freeze_encoder(False)
    assert all(p.requires_grad for p in model.parameters())


def test_errors_are_clear():
    model = _model()
    batch = random_batch()
    with pytest.raises(KeyError, match="unknown task 'nli'; this model's tasks are: topic, similarity, tags, qa"):
        model(**batch, task="nli")
    with pytest.raises(ValueError, match="exactly one of `task`"):
        model(**batch)
    with pytest.raises(ValueError, match=r"task_ids must be in \[0, 4\)"):
        model(**batch, task_ids=torch.tensor([0, 1, 7]))
    with pytest.raises(ValueError, match="labels for some tasks but none for"):
        model(**batch, labels=torch.tensor([0, 1, 0]), task_ids=torch.tensor([0, 2, 0]))
    with pytest.raises(ValueError, match="unknown kind 'ranking'"):
        TaskSpec("x", "ranking")
    with pytest.raises(ValueError, match="unique"):
        _model(tasks=[TaskSpec("a", "classification"), TaskSpec("a", "regression")])
    with pytest.raises(UnsupportedArchitecture, match="supported model types"):
        MultiTaskModel.from_config(AlbertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=8, embedding_size=8), TASKS)


def test_offline_pretrained_encoder_loads():
    model = MultiTaskModel.from_pretrained("offline", [TaskSpec("topic", "classification", 5)])
    assert model.num_layers_heads == (6, 12) and model.config.hidden_size == 384


def test_mean_pooling_averages_real_tokens_only():
    model = MultiTaskModel.from_config(tiny_config("bert"), [TaskSpec("t", "classification", 2)], pooling="mean")
    hidden = torch.arange(2 * 3 * 2, dtype=torch.float32).reshape(2, 3, 2)
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]])
    assert torch.equal(model._pool(hidden, mask), torch.stack([hidden[0, :2].mean(0), hidden[1].mean(0)]))
    with pytest.raises(ValueError, match="unknown pooling"):
        MultiTaskModel.from_config(tiny_config("bert"), [TaskSpec("t", "classification", 2)], pooling="max")


def test_sentence_representation_is_what_a_classification_head_reads():
    model = MultiTaskModel.from_config(tiny_config("bert"), [TaskSpec("t", "classification", 2)], pooling="mean").eval()
    ids = torch.tensor([[2, 5, 7, 0], [2, 9, 0, 0]])
    mask = (ids != 0).long()
    rep = model.sentence_representation(ids, mask)
    assert torch.allclose(model.heads["t"](rep), model(ids, mask, task="t").logits["t"])


def test_checkpoint_keeps_the_pooling(tmp_path):
    model = MultiTaskModel.from_config(tiny_config("bert"), [TaskSpec("t", "classification", 2)], pooling="mean")
    save_checkpoint(model, tmp_path / "m.pt")
    assert load_checkpoint(tmp_path / "m.pt").pooling == "mean"


@pytest.mark.parametrize("model_type", ["bert", "gpt2"])
def test_checkpoint_round_trip_gives_identical_weights_and_logits(model_type, tmp_path):
    model = _model(model_type)
    batch = random_batch(4)
    save_checkpoint(model, tmp_path / "m.pt")
    loaded = load_checkpoint(tmp_path / "m.pt").eval()
    saved_state, loaded_state = model.state_dict(), loaded.state_dict()
    assert saved_state.keys() == loaded_state.keys()
    assert all(torch.equal(saved_state[k], loaded_state[k]) for k in saved_state)
    for spec in TASKS:
        with torch.no_grad():
            torch.testing.assert_close(loaded(**batch, task=spec.name).logits, model(**batch, task=spec.name).logits, rtol=0, atol=0)


def test_checkpoint_with_a_new_task_list_keeps_the_encoder_and_makes_a_fresh_head(tmp_path):
    model = _model("bert")
    save_checkpoint(model, tmp_path / "m.pt")
    new = TaskSpec("target", "classification", 5)
    loaded = load_checkpoint(tmp_path / "m.pt", [new])
    encoder, loaded_encoder = model.encoder.state_dict(), loaded.encoder.state_dict()
    assert all(torch.equal(encoder[k], loaded_encoder[k]) for k in encoder)
    assert list(loaded.heads) == ["target"]
    with torch.no_grad():
        assert loaded.eval()(**random_batch(4), task="target").logits["target"].shape == (4, 5)
    # fresh: no parameter of the new head is one of the saved heads' (the 5-way topic head has the same shapes)
    saved = list(model.heads.parameters())
    assert not any(p.shape == q.shape and torch.equal(p, q) for p in loaded.heads.parameters() for q in saved)
    # a task of the same name and shape gets its saved head back
    again = load_checkpoint(tmp_path / "m.pt", [TASKS[0]])
    assert all(torch.equal(a, b) for a, b in zip(again.heads["topic"].parameters(), model.heads["topic"].parameters()))


def test_sequence_labelling_loss_averages_over_the_scored_tokens_only():
    """One scored token: the loss is that token's cross-entropy; none scored: 0 (not NaN)."""
    model = _model()
    batch = random_batch(2)
    tags = torch.full((2, 7), -100)
    tags[0, 3] = 2
    out = model(**batch, token_labels=tags, task="tags")
    logits = out.logits["tags"].double()
    torch.testing.assert_close(out.per_example_loss[0].double(), _cross_entropy_by_hand(logits[0, 3], 2))
    assert out.per_example_loss[1].item() == 0.0


def test_a_qa_batch_without_end_positions_has_no_loss():
    model = _model()
    out = model(**random_batch(2), start_positions=torch.tensor([1, 2]), task="qa")
    assert out.loss is None and out.per_example_loss is None and out.logits["qa"].shape == (2, 7, 2)


def test_a_checkpoint_is_saved_into_folders_that_do_not_exist_yet(tmp_path):
    model = _model()
    save_checkpoint(model, tmp_path / "runs" / "seed0" / "m.pt")
    assert sorted(p.name for p in (tmp_path / "runs" / "seed0").iterdir()) == ["m.pt"]  # no temporary file left
    assert list(load_checkpoint(tmp_path / "runs" / "seed0" / "m.pt").heads) == [t.name for t in TASKS]


def test_a_file_that_is_no_checkpoint_is_refused_with_its_name_and_the_error(tmp_path):
    (tmp_path / "cut.pt").write_bytes(b"\x80\x02truncated")
    with pytest.raises(ValueError, match=r"checkpoint .*cut\.pt cannot be read \(\w*Error: .*truncated, corrupt or not a mtllib checkpoint"):
        load_checkpoint(tmp_path / "cut.pt")
    torch.save({"weights": torch.zeros(2)}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match=r"other\.pt cannot be read \(KeyError: 'state_dict'\)"):
        load_checkpoint(tmp_path / "other.pt")


class _RunsCodeWhenUnpickled:
    def __reduce__(self):
        return (print, ("this ran while loading",))


def test_a_checkpoint_that_would_run_code_is_refused_not_loaded(tmp_path, capsys):
    """Checkpoints load with ``weights_only``: a pickle that calls a function when read is an error."""
    torch.save({"state_dict": {}, "config": {}, "tasks": [], "payload": _RunsCodeWhenUnpickled()}, tmp_path / "evil.pt")
    with pytest.raises(ValueError, match=r"evil\.pt cannot be read \(UnpicklingError"):
        load_checkpoint(tmp_path / "evil.pt")
    assert "this ran" not in capsys.readouterr().out


def test_a_checkpoint_without_encoder_weights_is_refused_for_a_new_task_list(tmp_path):
    save_checkpoint(_model(), tmp_path / "m.pt")
    payload = torch.load(tmp_path / "m.pt", weights_only=False)
    dropped = "encoder.embeddings.word_embeddings.weight"
    del payload["state_dict"][dropped]
    torch.save(payload, tmp_path / "m.pt")
    with pytest.raises(RuntimeError, match=rf"m\.pt lacks encoder weights: \['{dropped}'\]"):
        load_checkpoint(tmp_path / "m.pt", [TaskSpec("target", "classification", 2)])


def test_a_task_of_a_saved_name_but_another_label_count_gets_a_fresh_head(tmp_path):
    model = _model()
    save_checkpoint(model, tmp_path / "m.pt")
    loaded = load_checkpoint(tmp_path / "m.pt", [TaskSpec("topic", "classification", 3)])
    assert loaded.heads["topic"].out.weight.shape == (3, model.config.hidden_size)
    assert not torch.equal(loaded.heads["topic"].dense.weight, model.heads["topic"].dense.weight)


def test_a_checkpoint_loads_with_the_dropout_asked_for(tmp_path):
    save_checkpoint(_model(), tmp_path / "m.pt")
    for tasks in (None, [TaskSpec("target", "classification", 2)]):
        loaded = load_checkpoint(tmp_path / "m.pt", tasks, dropout=0.37)
        assert {h.dropout.p for h in loaded.heads.values()} == {0.37}


# --- multiple choice (SWAG's format, "BERT and PALs" Appendix B) ------------------------------------------
CHOICE_TASKS = [TaskSpec("topic", "classification", 5), TaskSpec("next", "multiple_choice")]


def _choice_batch(batch_size=3, choices=4, seq_len=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(3, 99, (batch_size, choices, seq_len), generator=g)
    attention_mask = torch.ones(batch_size, choices, seq_len, dtype=torch.long)
    attention_mask[0, 1, 4:] = 0  # one padded choice
    return {"input_ids": input_ids, "attention_mask": attention_mask}


@pytest.mark.parametrize("model_type", ["bert", "distilbert", "gpt2"])
def test_a_multiple_choice_head_scores_each_choice_on_its_own(model_type):
    """Each choice's logit is the head on that choice's sequence read alone (the other choices and the
    batch do not change it), and the loss is the cross-entropy over an example's choices."""
    model = _model(model_type, CHOICE_TASKS)
    batch = _choice_batch()
    labels = torch.tensor([2, 0, 3])
    with torch.no_grad():
        out = model(**batch, task="next", labels=labels)
        assert out.logits["next"].shape == (3, 4) and out.per_example_loss.shape == (3,)
        for b in range(3):
            for c in range(4):
                one = {k: v[b, c][None, None] for k, v in batch.items()}
                alone = model(**one, task="next").logits["next"]
                assert torch.allclose(alone[0, 0], out.logits["next"][b, c], atol=1e-5)
        expected = torch.nn.functional.cross_entropy(out.logits["next"], labels, reduction="none")
    assert torch.allclose(out.per_example_loss, expected) and torch.isclose(out.loss, expected.mean())
    reordered = model(**{k: v[:, [3, 2, 1, 0]] for k, v in batch.items()}, task="next").logits["next"]
    assert torch.allclose(reordered, out.logits["next"][:, [3, 2, 1, 0]], atol=1e-5)


def test_multiple_choice_inputs_and_tasks_must_match():
    model = _model("bert", CHOICE_TASKS)
    with pytest.raises(ValueError, match=r"task 'next' is multiple choice: its inputs must be \[batch, choices, tokens\]"):
        model(**random_batch(3), task="next")
    with pytest.raises(ValueError, match="are for a multiple-choice task; task 'topic' is classification"):
        model(**_choice_batch(), task="topic")
    with pytest.raises(ValueError, match="must name one multiple-choice task with `task`"):
        model(**_choice_batch(), task_ids=torch.tensor([1, 1, 1]))
    with pytest.raises(ValueError, match="a heterogeneous batch .task_ids. cannot hold multiple-choice examples"):
        model(**random_batch(3), task_ids=torch.tensor([0, 1, 0]))
    assert model(**random_batch(3), task_ids=torch.tensor([0, 0, 0])).logits["topic"].shape == (3, 5)


def test_a_multiple_choice_head_survives_a_checkpoint(tmp_path):
    model = _model("bert", CHOICE_TASKS)
    save_checkpoint(model, tmp_path / "m.pt")
    loaded = load_checkpoint(tmp_path / "m.pt").eval()
    assert loaded.tasks["next"] == TaskSpec("next", "multiple_choice", 1)
    with torch.no_grad():
        assert torch.equal(loaded(**_choice_batch(), task="next").logits["next"], model(**_choice_batch(), task="next").logits["next"])


def test_the_multiple_choice_task_list_is_no_part_of_the_weights():
    """The positions of the multiple-choice tasks (kept to refuse them in heterogeneous batches) are a
    non-persistent buffer: a state dict holds only weights, so checkpoints and cache keys are as before."""
    model = _model("bert", CHOICE_TASKS)
    assert model._choice_task_ids.tolist() == [i for i, t in enumerate(CHOICE_TASKS) if t.kind == "multiple_choice"] != []
    assert not any("choice_task_ids" in k for k in model.state_dict())
    plain = _model("bert", [t for t in CHOICE_TASKS if t.kind != "multiple_choice"])
    assert plain._choice_task_ids.numel() == 0
    assert plain(**random_batch(3), task_ids=torch.tensor([0, 0, 0])).logits  # nothing to refuse

"""Tokenisation to features (first sub-token labelling, answer spans), dynamic padding, the on-disk cache."""

import datasets
import numpy as np
import pytest
import torch

from mtllib.data import features
from mtllib.data.tasks import get_task


@pytest.fixture(scope="module")
def tokenizer():
    return features.load_tokenizer("offline")


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MTLLIB_CACHE", str(tmp_path / "cache"))


def test_pairs_are_encoded_as_two_segments(tokenizer):
    ds = datasets.Dataset.from_dict({"id": ["a"], "text": ["first part"], "text_pair": ["second"], "label": [1]})
    f = features.encode(get_task("bbc-pair"), ds, tokenizer)[0]
    assert tokenizer.decode(f["input_ids"]) == "[CLS] first part [SEP] second [SEP]"
    assert f["token_type_ids"] == [0, 0, 0, 0, 1, 1] and f["labels"] == 1


def test_only_the_first_sub_token_of_a_word_is_labelled(tokenizer):
    ds = datasets.Dataset.from_dict({"id": ["a"], "words": [["timewarner", "profits", "."]], "tags": [[1, 0, -100]]})
    f = features.encode(get_task("bbc-truecase"), ds, tokenizer)[0]
    pieces = tokenizer.convert_ids_to_tokens(f["input_ids"])
    assert pieces[:4] == ["[CLS]", "time", "##war", "##ner"]
    assert f["token_labels"] == [-100, 1, -100, -100, 0, -100, -100]


def test_answer_positions_map_back_to_the_answer_text(tokenizer):
    context = "Time Warner said on Friday that it now owns 8% of search-engine Google."
    ds = datasets.Dataset.from_dict({"id": ["a"], "question": ["Ad sales boost _____ profit"], "context": [context], "answer_text": ["Time Warner"], "answer_start": [0]})
    f = features.encode(get_task("bbc-cloze"), ds, tokenizer)[0]
    n = len(f["input_ids"])
    start, end = np.full(n, -5.0), np.full(n, -5.0)
    start[f["start_positions"]] = end[f["end_positions"]] = 5.0
    assert features.decode_spans([start], [end], [f["offsets"]], [context]) == ["Time Warner"]
    assert all(o == [-1, -1] for o, t in zip(f["offsets"], f["token_type_ids"]) if t == 0)  # question tokens never answer


def test_truncated_answer_points_at_first_token(tokenizer):
    context = "word " * 200 + "target"
    ds = datasets.Dataset.from_dict({"id": ["a"], "question": ["q"], "context": [context], "answer_text": ["target"], "answer_start": [context.index("target")]})
    f = features.encode(get_task("bbc-cloze"), ds, tokenizer, max_length=32)[0]
    assert len(f["input_ids"]) == 32 and f["start_positions"] == f["end_positions"] == 0


def test_a_question_longer_than_max_length_is_cut_and_the_answer_still_maps(tokenizer):
    """Truncating only the context cannot fit a question of max_length tokens or more (the tokenizer raises):
    such a question keeps its first max_length // 2 tokens; a question that fits is left as it is."""
    context = "Time Warner said on Friday that it now owns 8% of search-engine Google."
    long_question = " ".join(["why"] * 40)
    ds = datasets.Dataset.from_dict({"id": ["a", "b"], "question": [long_question, "Who said it?"], "context": [context] * 2,
                                     "answer_text": ["Time Warner"] * 2, "answer_start": [0, 0]})
    rows = features.encode(get_task("bbc-cloze"), ds, tokenizer, max_length=32)
    long, short = rows[0], rows[1]
    assert len(long["input_ids"]) == 32 and sum(1 for t in long["token_type_ids"] if t == 0) == 16 + 2  # [CLS] 16 x why [SEP]
    n = len(long["input_ids"])
    start, end = np.full(n, -5.0), np.full(n, -5.0)
    start[long["start_positions"]] = end[long["end_positions"]] = 5.0
    assert features.decode_spans([start], [end], [long["offsets"]], [context]) == ["Time Warner"]
    expected = tokenizer("Who said it?", context, truncation="only_second", max_length=32)["input_ids"]
    assert short["input_ids"] == expected


def test_decode_spans_respects_order_and_length():
    offsets = [[-1, -1], [0, 3], [4, 8], [9, 12]]
    context = "abc defg hij"
    start = [0.0, 1.0, 0.0, 9.0]  # best start after the best end: not allowed
    end = [0.0, 8.0, 0.0, 0.0]
    assert features.decode_spans([start], [end], [offsets], [context]) == ["abc"]
    assert features.decode_spans([[0, 1, 9, 0]], [[0, 0, 0, 9]], [offsets], [context], max_answer_tokens=1) == ["defg"]


def test_collate_pads_to_the_longest_in_the_batch():
    feats = [{"input_ids": [5, 6, 7], "attention_mask": [1, 1, 1], "token_labels": [-100, 1, 0]},
             {"input_ids": [5, 6], "attention_mask": [1, 1], "token_labels": [-100, 2]}]
    batch = features.collate(feats, pad_token_id=0, task="bbc-punct")
    assert batch["input_ids"].tolist() == [[5, 6, 7], [5, 6, 0]]
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 1, 0]]
    assert batch["token_labels"].tolist() == [[-100, 1, 0], [-100, 2, -100]]
    assert batch["task"] == "bbc-punct"
    mixed = features.collate([{"input_ids": [1], "labels": 0.5, "task_id": 1}, {"input_ids": [1, 2], "labels": 1.5, "task_id": 0}])
    assert mixed["labels"].dtype == torch.float32 and mixed["task_ids"].tolist() == [1, 0] and "task" not in mixed
    with pytest.raises(ValueError, match="empty batch"):
        features.collate([])


def test_features_are_cached_on_disk(tokenizer, tmp_path):
    ds = datasets.Dataset.from_dict({"id": ["a", "b"], "text": ["one", "two words"], "label": [0, 1]})
    task = get_task("bbc-topic")
    first = features.encode(task, ds, tokenizer)
    entries = list(features.cache_dir().iterdir())
    assert len(entries) == 1 and not any(".tmp" in p.name for p in entries)
    again = features.encode(task, ds, tokenizer)
    assert again.cache_files and again.cache_files[0]["filename"].startswith(str(entries[0]))
    assert again.to_dict() == first.to_dict()
    features.encode(task, ds, tokenizer, max_length=16)
    assert len(list(features.cache_dir().iterdir())) == 2  # another setting, another entry


def test_max_length_must_be_sensible(tokenizer):
    ds = datasets.Dataset.from_dict({"id": ["a"], "text": ["x"], "label": [0]})
    with pytest.raises(ValueError, match="max_length"):
        features.encode(get_task("bbc-topic"), ds, tokenizer, max_length=2)


def _choices_dataset():
    return datasets.Dataset.from_dict({"id": ["a", "b"], "text": ["Shares fell.", "The match ended."],
                                       "choices": [["Investors sold.", "It rained in Paris today.", "Goals came late.", "Profits rose."],
                                                   ["Fans cheered.", "Oil prices rose.", "He sang.", "Rates were cut."]],
                                       "label": [0, 0]})


def test_a_multiple_choice_example_is_one_pair_per_choice(tokenizer):
    f = features.encode(get_task("bbc-continuation"), _choices_dataset(), tokenizer)[0]
    assert len(f["input_ids"]) == 4 and f["labels"] == 0
    assert tokenizer.decode(f["input_ids"][1]) == "[CLS] shares fell. [SEP] it rained in paris today. [SEP]"
    assert [len(x) for x in f["token_type_ids"]] == [len(x) for x in f["input_ids"]]
    assert features.example_length(f["input_ids"]) == len(f["input_ids"][1]) == 12  # the longest: [CLS] + 3 + [SEP] + 6 + [SEP]


def test_multiple_choice_features_collate_to_batch_choices_tokens(tokenizer):
    feats = list(features.encode(get_task("bbc-continuation"), _choices_dataset(), tokenizer, max_length=8))
    assert all(len(x) <= 8 for f in feats for x in f["input_ids"])
    batch = features.collate(feats, tokenizer.pad_token_id, task="bbc-continuation")
    longest = max(features.example_length(f["input_ids"]) for f in feats)
    assert batch["input_ids"].shape == batch["attention_mask"].shape == (2, 4, longest)
    assert batch["labels"].tolist() == [0, 0] and batch["task"] == "bbc-continuation"
    for b, f in enumerate(feats):
        for c, ids in enumerate(f["input_ids"]):
            assert batch["input_ids"][b, c, : len(ids)].tolist() == list(ids)
            assert batch["attention_mask"][b, c].sum() == len(ids) and (batch["input_ids"][b, c, len(ids):] == tokenizer.pad_token_id).all()
    with pytest.raises(ValueError, match="same number of choices, got \\[3, 4\\]"):
        features.collate([feats[0], dict(feats[1], input_ids=feats[1]["input_ids"][:3])], task="x")
    with pytest.raises(ValueError, match="single-task batches only"):
        features.collate([dict(f, task_id=0) for f in feats])

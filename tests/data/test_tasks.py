"""The task registry and interface: offline tasks, paper tasks from local files, validation, k-shot."""

import json

import pandas as pd
import pytest

from mtllib.data import tasks
from mtllib.data.hub import TaskUnavailable
from tiny import hub_rows

STANDARD_COLUMNS = {
    "classification": {"id", "text", "label"},
    "regression": {"id", "text", "label"},
    "sequence_labelling": {"id", "words", "tags"},
    "span_qa": {"id", "question", "context", "answer_text", "answer_start"},
    "multiple_choice": {"id", "text", "choices", "label"},
}


def test_unknown_task_lists_the_registered_ones():
    with pytest.raises(tasks.UnknownTask, match=r"unknown task 'glue'; registered tasks: offline bbc-topic, .*; silver \(needs spaCy\) bbc-pos, .*; paper \(needs internet\) cola"):
        tasks.get_task("glue")


@pytest.mark.parametrize("name", tasks.OFFLINE_TASKS)
def test_offline_task_has_standard_columns_capped_splits_and_a_model_head(name):
    task = tasks.get_task(name)
    ds = tasks.load_task(name, max_train=50, max_eval=20)
    assert list(ds) == ["train", "validation", "test"]
    assert len(ds["train"]) == 50 and len(ds["validation"]) == 20 and len(ds["test"]) == 20
    expected = STANDARD_COLUMNS[task.kind] | ({"text_pair"} if task.paradigm == "pair" and task.kind not in ("span_qa", "multiple_choice") else set())
    assert expected <= set(ds["train"].column_names)
    assert task.spec().num_labels == task.num_labels
    assert tasks.load_task(name, max_train=50, max_eval=20)["train"]["id"] == ds["train"]["id"]  # seeded


def test_caps_are_seeded_subsets_in_original_order():
    frame = pd.DataFrame({"x": range(100)})
    a, b = tasks.cap(frame, 10, seed=0), tasks.cap(frame, 10, seed=1)
    assert len(a) == 10 and list(a.x) == sorted(a.x) and list(a.x) != list(b.x)
    assert tasks.cap(frame, None, 0) is frame
    with pytest.raises(ValueError, match="size cap"):
        tasks.cap(frame, 0, 0)


def test_labels_not_matching_declared_names_are_named():
    task = tasks.get_task("bbc-topic")
    with pytest.raises(ValueError, match=r"labels \[7, 'sport'\] do not match the 5 declared label names"):
        tasks.validate_labels(task, pd.DataFrame({"label": [0, 7, "sport"]}), "train")
    punct = tasks.get_task("bbc-punct")
    with pytest.raises(ValueError, match=r"tags \[9\] do not match the 4 declared tag names"):
        tasks.validate_labels(punct, pd.DataFrame({"words": [["a", "b"]], "tags": [[0, 9]]}), "train")
    cloze = tasks.get_task("bbc-cloze")
    with pytest.raises(ValueError, match="1 answers are not at their answer_start"):
        tasks.validate_labels(cloze, pd.DataFrame({"context": ["abc def"], "answer_start": [0], "answer_text": ["def"]}), "test")
    continuation = tasks.get_task("bbc-continuation")
    with pytest.raises(ValueError, match=r"1 examples do not have 4 choices"):
        tasks.validate_labels(continuation, pd.DataFrame({"choices": [list("abcd"), list("abc")], "label": [0, 1]}), "train")
    with pytest.raises(ValueError, match=r"labels \[4\] do not match the 4 declared label names"):
        tasks.validate_labels(continuation, pd.DataFrame({"choices": [list("abcd")], "label": [4]}), "train")
    tasks.validate_labels(continuation, pd.DataFrame({"choices": [list("abcd")], "label": [3]}), "train")  # a right one passes


def test_k_shot_per_class_and_in_total():
    ds = tasks.load_task("bbc-topic")["train"]
    per_class = tasks.k_shot(ds, "bbc-topic", 4, seed=0)
    assert sorted(pd.Series(per_class["label"]).value_counts().tolist()) == [4] * 5
    assert tasks.k_shot(ds, "bbc-topic", 4, seed=0)["id"] == per_class["id"]
    assert tasks.k_shot(ds, "bbc-topic", 4, seed=1)["id"] != per_class["id"]
    assert len(tasks.k_shot(ds, "bbc-topic", 16, seed=0, per_class=False)) == 16
    with pytest.raises(ValueError, match=r"k=10000 per class but class 'business' of 'bbc-topic' has only \d+ examples"):
        tasks.k_shot(ds, "bbc-topic", 10_000, seed=0)
    with pytest.raises(ValueError, match=r"k=99999 examples but the split of 'bbc-topic' has only"):
        tasks.k_shot(ds, "bbc-topic", 99_999, seed=0, per_class=False)
    with pytest.raises(ValueError, match="k per class needs a classification task"):
        tasks.k_shot(tasks.load_task("bbc-punct", max_train=10)["train"], "bbc-punct", 2, seed=0)


# --- paper suite: tiny local files in each dataset's own column layout -----------------------------------
def _write(tmp_path, name):
    source = tasks.hub.SOURCES[name]
    files = {}
    for theirs in set(source.splits.values()):
        path = tmp_path / f"{name}-{theirs}.jsonl"
        path.write_text("\n".join(json.dumps(r) for r in hub_rows(name)))
        files[theirs] = str(path)
    return files


@pytest.mark.parametrize("name", tasks.PAPER_TASKS)
def test_paper_task_loads_from_files_in_its_own_layout(tmp_path, name):
    task = tasks.get_task(name)
    ds = tasks.load_task(name, data_files=_write(tmp_path, name))
    assert {"train", "validation", "test"} <= set(ds)
    expected = STANDARD_COLUMNS[task.kind] | ({"text_pair"} if task.paradigm == "pair" and task.kind not in ("span_qa", "multiple_choice") else set())
    assert expected <= set(ds["train"].column_names)
    if name == "scitail":
        assert ds["train"]["label"] == [1, 0]
    if name == "squad":
        row = ds["train"][0]
        assert row["answer_text"] == "Denver Broncos" and row["context"][row["answer_start"]:].startswith("Denver")
    if name == "conll2003":
        assert [task.label_names[t] for t in ds["train"][0]["tags"]] == ["B-ORG", "O", "B-MISC", "O"]
    if name == "ag_pair":
        assert len(ds["train"]) == 40 and sum(ds["train"]["label"]) == 20
    if name == "mnli":
        assert "validation_mismatched" in ds
    if name == "swag":
        row = ds["train"][0]
        assert row["text"] == "Members of the procession walk down the street holding small horn brass instruments."
        assert row["choices"][0] == "A drum line passes by walking down the street playing their instruments." and len(row["choices"]) == 4
        assert row["label"] == 0 and task.spec().num_labels == 1


def test_paper_task_with_wrong_labels_is_rejected(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"sentence": "x", "label": 5, "idx": 0}))
    with pytest.raises(ValueError, match=r"task 'sst2', split 'train': labels \[5\] do not match the 2 declared"):
        tasks.load_task("sst2", data_files={"train": str(path), "validation": str(path)})


def test_paper_task_offline_fails_fast_with_a_clear_message(monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(TaskUnavailable, match=r"'sst2' needs the dataset nyu-mll/glue \(config 'sst2'\).*offline suite is the default.*bbc-topic"):
        tasks.load_task("sst2")


def test_unreachable_hub_without_offline_settings_fails_at_once(monkeypatch):
    import datasets.config
    import huggingface_hub.constants

    from mtllib.data import hub as paper_suite

    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(paper_suite, "hub_reachable", lambda timeout=3.0: False)
    with pytest.raises(TaskUnavailable, match=r"'qnli' needs the dataset nyu-mll/glue"):
        tasks.load_task("qnli")
    assert datasets.config.HF_HUB_OFFLINE is False and huggingface_hub.constants.HF_HUB_OFFLINE is False  # restored


def test_offline_task_rejects_data_files():
    with pytest.raises(ValueError, match="data_files is for paper tasks"):
        tasks.load_task("bbc-topic", data_files={"train": "x.jsonl"})


# --- silver suite (spaCy labels; the builders are tested in tests/data/test_silver.py) -------------------------
def test_silver_tasks_are_registered_with_their_tag_sets_and_metrics():
    from mtllib.data import silver

    assert tasks.SILVER_TASKS == list(silver.BUILDERS)
    for name in tasks.SILVER_TASKS:
        task = tasks.get_task(name)
        assert task.suite == "silver" and "Silver labels" in task.description
        if task.kind == "sequence_labelling":
            assert task.label_names == silver.TAGS[name]
            assert task.main_metric == ("word_f1" if name.endswith("pos") else "entity_f1")
        else:
            assert task.kind == "span_qa" and task.main_metric == "squad_f1"


def test_a_sequence_labelling_task_cannot_declare_accuracy():
    with pytest.raises(ValueError, match="accuracy is not a metric of sequence labelling"):
        tasks.Task("x", "sequence_labelling", "single", ("O", "B"), ("word_f1", "accuracy"), "word_f1", "offline", "")


def test_a_silver_task_loads_through_the_registry(tmp_path, monkeypatch):
    monkeypatch.setenv("MTLLIB_CACHE", str(tmp_path))
    ds = tasks.load_task("bbc-chunk", max_train=20, max_eval=10)
    assert len(ds["train"]) == 20 and len(ds["validation"]) == 10
    assert STANDARD_COLUMNS["sequence_labelling"] <= set(ds["train"].column_names)


def test_the_glue_like_suite_names_an_offline_stand_in_for_every_glue_task_of_the_paper():
    assert set(tasks.GLUE_LIKE) == {"cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli", "rte"}
    for glue, offline in tasks.GLUE_LIKE.items():
        paper, stand_in = tasks.get_task(glue), tasks.get_task(offline)
        assert paper.suite == "paper" and stand_in.suite == "offline"
        assert stand_in.kind == paper.kind and stand_in.paradigm == paper.paradigm, glue
    assert len(set(tasks.GLUE_LIKE.values())) == len(tasks.GLUE_LIKE)

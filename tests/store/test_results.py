"""The results store: exact round trips, digests that catch corrupt files, atomic replacement, clear errors."""

import json

import pandas as pd
import pytest

from mtllib.store.results import RECORD, CorruptResult, Store, StoreError


@pytest.fixture
def store(tmp_path):
    return Store(tmp_path / "results", "cpu")


TABLE = pd.DataFrame({"task": ["a", "b"], "score": [81.25, 77.5], "n": [3, 4]})


def test_a_result_reads_back_as_written(store):
    store.write("exp", "s1", {"key": "k1"}, {"scores": TABLE}, {"best_epoch": 2})
    result = store.read("exp", "s1")
    pd.testing.assert_frame_equal(result.tables["scores"], TABLE)
    assert result.values == {"best_epoch": 2} and result.key == "k1"
    assert set(result.record["sha256"]) == {"scores.parquet", "values.json"}
    assert store.entries() == [("exp", "s1")] and store.read("exp", "other") is None


def test_the_digest_follows_the_data_not_the_run(store):
    first = store.write("exp", "s1", {"key": "k1", "seconds": 1.0}, {"scores": TABLE}, {})
    again = store.write("exp", "s1", {"key": "k1", "seconds": 9.0}, {"scores": TABLE}, {})
    assert first.digest == again.digest == store.read("exp", "s1").digest
    changed = store.write("exp", "s1", {"key": "k1"}, {"scores": TABLE.assign(score=[81.25, 77.0])}, {})
    assert changed.digest != first.digest


@pytest.mark.parametrize("damage", ["truncate", "edit", "delete"])
def test_a_damaged_file_is_named(store, damage):
    store.write("exp", "s1", {"key": "k1"}, {"scores": TABLE}, {"a": 1})
    path = store.folder("exp", "s1") / "scores.parquet"
    if damage == "truncate":
        path.write_bytes(path.read_bytes()[:50])
    elif damage == "edit":
        path.write_bytes(path.read_bytes().replace(b"score", b"scorf", 1))
    else:
        path.unlink()
    with pytest.raises(CorruptResult, match="scores.parquet"):
        store.read("exp", "s1")


def test_an_unreadable_record_is_named(store):
    store.write("exp", "s1", {"key": "k1"}, {"scores": TABLE}, {})
    (store.folder("exp", "s1") / RECORD).write_text("{not json")
    with pytest.raises(CorruptResult, match="record.json"):
        store.read("exp", "s1")


def test_a_failed_write_leaves_the_old_result(store, monkeypatch):
    store.write("exp", "s1", {"key": "old"}, {"scores": TABLE}, {})

    def broken(self, path, *args, **kwargs):
        open(path, "wb").write(b"PAR1 half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_parquet", broken)
    with pytest.raises(StoreError, match="No space left"):
        store.write("exp", "s1", {"key": "new"}, {"scores": TABLE}, {})
    monkeypatch.undo()
    assert store.read("exp", "s1").key == "old"
    assert [p.name for p in store.folder("exp", "s1").parent.iterdir()] == ["s1"]  # no temporary folder left


def test_leftovers_of_a_killed_writer_are_removed_by_the_next_write(store):
    store.write("exp", "s1", {"key": "k"}, {"scores": TABLE}, {})
    (store.folder("exp", "s1").parent / ".s1.tmpdead").mkdir()
    store.write("exp", "s1", {"key": "k2"}, {"scores": TABLE}, {})
    assert sorted(p.name for p in store.folder("exp", "s1").parent.iterdir()) == ["s1"]


def test_bad_tables_and_values_fail_before_writing(store):
    with pytest.raises(ValueError, match="identifiers"):
        store.write("exp", "s1", {"key": "k"}, {"bad name": TABLE}, {})
    with pytest.raises(TypeError, match="not a DataFrame"):
        store.write("exp", "s1", {"key": "k"}, {"t": [1, 2]}, {})
    with pytest.raises(TypeError, match="not JSON"):
        store.write("exp", "s1", {"key": "k"}, {}, {"v": object()})
    assert store.read("exp", "s1") is None


def test_a_store_that_cannot_be_written_is_a_clear_error(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(StoreError, match="not writable"):
        Store(blocker / "results", "cpu").check_writable()
    with pytest.raises(StoreError, match="plain name"):
        Store(tmp_path, "../up")


def test_records_are_plain_json(store):
    store.write("exp", "s1", {"key": "k", "spec": {"tasks": ("a", "b")}}, {}, {})
    record = json.loads((store.folder("exp", "s1") / RECORD).read_text())
    assert record["spec"] == {"tasks": ["a", "b"]} and record["format"] == "mtllib-result/1"

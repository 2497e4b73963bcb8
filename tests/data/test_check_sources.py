"""The hub source table and its check (``make check-sources``): script-free sources, fixtures that mirror the
checked layouts, every kind of difference reported, and a clear exit without internet."""

import dataclasses

import datasets
import pandas as pd
import pytest

from mtllib.data import check_sources, hub
from mtllib.data.tasks import PAPER_TASKS
from tiny import hub_rows


def test_every_paper_task_has_a_source_with_its_expected_layout():
    assert set(hub.SOURCES) == set(PAPER_TASKS)
    for name, source in hub.SOURCES.items():
        assert source.columns and source.why, name
        assert set(source.sizes or {}) <= set(source.splits.values()), name  # sizes are of splits the mapping reads


@pytest.mark.parametrize("name", sorted(hub.SOURCES))
def test_no_source_names_a_repository_that_ships_only_a_loading_script(name):
    """datasets >= 4 refuses such repositories ("Dataset scripts are no longer supported"): one of them may only
    be reached through the hub's Parquet export."""
    source = hub.SOURCES[name]
    assert source.path not in hub.SCRIPT_ONLY or source.revision == hub.PARQUET_EXPORT, hub.source_name(source)


@pytest.mark.parametrize("name", sorted(hub.SOURCES))
def test_fixtures_mirror_the_checked_layout(name):
    """The local rows the loader tests read have every column the source table (and so check-sources) expects,
    and their label ids are within its label names: a fixture cannot drift from what the hub is checked for."""
    source = hub.SOURCES[name]
    for row in hub_rows(name):
        assert set(source.columns) <= set(row), (name, sorted(set(source.columns) - set(row)))
        if source.labels is not None:
            ids = row[source.label_column] if isinstance(row[source.label_column], list) else [row[source.label_column]]
            assert all(0 <= i < len(source.labels) for i in ids), name


def _served(name, rename=None, labels=None, sizes=None):
    """What the hub would serve for ``name``: features (label columns as class labels), split sizes, rows."""
    source = hub.SOURCES[name]
    rows = pd.DataFrame(hub_rows(name))
    features = datasets.Dataset.from_pandas(rows, preserve_index=False).features
    names = list(labels or source.labels or [])
    if names and source.label_column == "ner_tags":
        features["ner_tags"] = datasets.Sequence(datasets.ClassLabel(names=names))
    elif names:
        features["label"] = datasets.ClassLabel(names=names)
    if rename:
        features = datasets.Features({rename.get(k, k): v for k, v in features.items()})
        rows = rows.rename(columns=rename)
    split_sizes = dict(sizes if sizes is not None else (source.sizes or {s: len(rows) for s in source.splits.values()}))
    return source, features, split_sizes, rows


@pytest.mark.parametrize("name", ["sst2", "mnli", "conll2003", "squad", "copa", "scitail"])
def test_a_source_as_expected_shows_no_difference(name):
    source, features, sizes, rows = _served(name)
    assert check_sources.compare(source, features, sizes, rows, check_sources.standard_columns(name)) == []


def test_each_kind_of_difference_is_named():
    source, features, sizes, rows = _served("sst2", rename={"sentence": "text"})
    assert check_sources.compare(source, features, sizes, rows) == ["missing columns sentence (has text, label, idx)"]

    source, features, sizes, rows = _served("sst2", labels=["positive", "negative"])
    assert check_sources.compare(source, features, sizes, rows) == ["label names ['positive', 'negative'], expected ['negative', 'positive']"]

    source, features, sizes, rows = _served("conll2003", sizes={"train": 14041, "validation": 3251})
    assert check_sources.compare(source, features, sizes, rows) == ["no split test (has train, validation)", "validation: 3251 rows, expected 3250"]

    source, features, sizes, rows = _served("conll2003")
    features["ner_tags"] = datasets.Sequence(datasets.Value("int64"))
    assert check_sources.compare(source, features, sizes, rows) == [
        f"ner_tags names not a class label, expected {list(hub.CONLL_TAGS)}"]


def test_a_mapping_that_does_not_fit_the_rows_is_reported():
    source, features, sizes, rows = _served("squad")
    rows = rows.assign(answers=[{"text": [], "answer_start": []}])  # an unanswerable question: no answer to take
    (message,) = check_sources.compare(source, features, sizes, rows, check_sources.standard_columns("squad"))
    assert message.startswith("the mapping fails on the rows: IndexError")


def test_without_the_hub_one_line_says_so_and_nothing_is_checked(monkeypatch, capsys):
    monkeypatch.setattr(hub, "hub_reachable", lambda timeout=3.0: False)
    monkeypatch.setattr(check_sources, "check", lambda *a, **k: pytest.fail("checked without the hub"))
    assert check_sources.main([]) == 2
    out = capsys.readouterr().out
    assert out == "check-sources needs the Hugging Face hub, which could not be reached from here: nothing was checked.\n"


def test_the_table_and_exit_status_follow_the_checks(monkeypatch, capsys):
    monkeypatch.setattr(hub, "hub_reachable", lambda timeout=3.0: True)
    results = {"cola": "ok", "conll2003": "differs"}
    monkeypatch.setattr(check_sources, "check", lambda task, source, rows: check_sources.SourceCheck(
        task, hub.source_name(source), results[task], "train 1", "" if results[task] == "ok" else "validation: 1 rows, expected 3250"))
    assert check_sources.main(["cola"]) == 0
    assert check_sources.main(["cola", "conll2003"]) == 1
    out = capsys.readouterr().out
    assert "lhoestq/conll2003" in out and "validation: 1 rows, expected 3250" in out
    assert out.rstrip().endswith("1 of 2 sources check out; look at: conll2003")


@pytest.mark.parametrize("argv, message", [(["glue"], "unknown paper task(s) ['glue']"), (["--rows", "0"], "--rows must be at least 1")])
def test_bad_arguments_are_refused_before_the_hub_is_tried(monkeypatch, capsys, argv, message):
    monkeypatch.setattr(hub, "hub_reachable", lambda timeout=3.0: pytest.fail("tried the hub"))
    with pytest.raises(SystemExit) as exit_:
        check_sources.main(argv)
    assert exit_.value.code == 2 and message in capsys.readouterr().err


def test_the_loader_passes_the_pinned_revision(monkeypatch):
    """A source pinned to the Parquet export is loaded from that revision (the other sources from main)."""
    calls = []

    def fake_load(path, config=None, revision=None, **kw):
        calls.append((path, config, revision))
        raise ConnectionError("no network in tests")

    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    monkeypatch.setattr(hub, "hub_reachable", lambda timeout=3.0: True)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    for name in ("wnut_17", "cola"):
        with pytest.raises(hub.TaskUnavailable, match=r"could not be loaded"):
            hub.load_frames(name)
    assert calls == [("leondz/wnut_17", None, "refs/convert/parquet"), ("nyu-mll/glue", "cola", None)]


def test_a_parquet_export_layout_loads_as_its_splits(tmp_path, monkeypatch):
    """The hub's Parquet export keeps a script repository's data as ``<config>/<split>/0000.parquet``: without
    a README, datasets' default patterns find the splits there (checked on a local folder in that layout; the
    class-label names travel in the Parquet schema)."""
    source = hub.SOURCES["wnut_17"]
    features = datasets.Features({"id": datasets.Value("string"), "tokens": datasets.Sequence(datasets.Value("string")),
                                  "ner_tags": datasets.Sequence(datasets.ClassLabel(names=list(hub.WNUT_TAGS)))})
    for split in ("train", "validation", "test"):
        folder = tmp_path / "wnut_17" / split
        folder.mkdir(parents=True)
        datasets.Dataset.from_list(hub_rows("wnut_17"), features=features).to_parquet(folder / "0000.parquet")
    monkeypatch.setitem(hub.SOURCES, "wnut_17", dataclasses.replace(source, path=str(tmp_path), revision=None))
    monkeypatch.setattr(hub, "hub_reachable", lambda timeout=3.0: True)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    frames = hub.load_frames("wnut_17")
    assert set(frames) == {"train", "validation", "test"} and frames["train"].words[0] == ["@paul", "in", "London"]
    builder = datasets.load_dataset_builder(str(tmp_path))
    assert check_sources.label_names(builder.info.features["ner_tags"]) == hub.WNUT_TAGS

"""Check every hub source of the paper suite against what its mapping expects (issue: the paper profile must work
for a user with internet).

``python -m mtllib.data.check_sources`` (``make check-sources``) reads, for every entry of
:data:`mtllib.data.hub.SOURCES`, the dataset's metadata (``datasets.load_dataset_builder``: features and split
sizes, no download) and a few streamed rows of its first split, then compares them with the entry: the splits
the mapping reads, the columns it reads, the label names in id order, the split sizes where recorded, and
whether the mapping turns the rows into our standard columns. It prints one table (task, source, status,
rows per split, what differs).

Exit status: 0 when every source checked out, 1 when at least one differs or failed to load, 2 when the hub
could not be reached (one line says so; nothing was checked).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

import pandas as pd

from mtllib.data import hub
from mtllib.data.tasks import get_task

#: the columns a task of each kind has after its mapping (pair tasks also ``text_pair``)
STANDARD_COLUMNS = {
    "classification": ("text", "label"),
    "regression": ("text", "label"),
    "sequence_labelling": ("words", "tags"),
    "span_qa": ("question", "context", "answer_text", "answer_start"),
    "multiple_choice": ("text", "choices", "label"),
}


def standard_columns(task: str) -> tuple[str, ...]:
    """The columns paper task ``task`` must have once mapped."""
    t = get_task(task)
    return STANDARD_COLUMNS[t.kind] + (("text_pair",) if t.paradigm == "pair" and t.kind not in ("span_qa", "multiple_choice") else ())


@dataclass
class SourceCheck:
    task: str
    source: str
    status: str  #: "ok", "differs" or "fails"
    rows: str  #: rows per split of theirs, as found
    differs: str  #: what differs from the expectation ("" when nothing does)


def label_names(feature) -> tuple[str, ...] | None:
    """Names of a ``ClassLabel`` feature, or of the ``ClassLabel`` inside a sequence feature; ``None`` otherwise."""
    import datasets

    if isinstance(feature, datasets.ClassLabel):
        return tuple(feature.names)
    inner = getattr(feature, "feature", None)  # datasets.Sequence / List of ClassLabel (ner_tags)
    if inner is None and isinstance(feature, list) and feature:
        inner = feature[0]
    if isinstance(inner, datasets.ClassLabel):
        return tuple(inner.names)
    return None


def compare(source: hub.HubSource, features, split_sizes: dict[str, int] | None, rows: pd.DataFrame | None, mapped_columns: tuple[str, ...] = ()) -> list[str]:
    """What differs between ``source`` and what the hub serves: its ``features`` (a ``datasets.Features`` or
    dict), ``split_sizes`` (``{split: rows}``, ``None`` when the hub records none) and a few ``rows`` of its
    first split (``None`` when they could not be read), which the mapping must turn into ``mapped_columns``.
    An empty list: everything matches."""
    found = []
    wanted_splits = sorted(set(source.splits.values()))
    if split_sizes is not None:
        missing = [s for s in wanted_splits if s not in split_sizes]
        if missing:
            found.append(f"no split {', '.join(missing)} (has {', '.join(sorted(split_sizes))})")
        for split, expected in sorted((source.sizes or {}).items()):
            got = split_sizes.get(split)
            if got is not None and got != expected:
                found.append(f"{split}: {got} rows, expected {expected}")
    missing_cols = [c for c in source.columns if c not in features]
    if missing_cols:
        found.append(f"missing columns {', '.join(missing_cols)} (has {', '.join(features)})")
    if source.labels is not None and source.label_column in features:
        names = label_names(features[source.label_column])
        if names != tuple(source.labels):
            found.append(f"{source.label_column} names {list(names) if names else 'not a class label'}, expected {list(source.labels)}")
    if rows is not None and not missing_cols:
        try:
            frame = source.to_frame(rows)
        except Exception as err:  # the mapping itself does not fit the rows
            found.append(f"the mapping fails on the rows: {type(err).__name__}: {err}")
        else:
            lacking = [c for c in mapped_columns if c not in frame.columns]
            if lacking:
                found.append(f"the mapping gives no {', '.join(lacking)}")
    return found


def check(task: str, source: hub.HubSource, sample_rows: int = 5) -> SourceCheck:
    """Load ``source``'s metadata and a few rows from the hub and :func:`compare` them (needs internet)."""
    import datasets

    name = hub.source_name(source)
    try:
        builder = datasets.load_dataset_builder(source.path, source.config, revision=source.revision)
        features = builder.info.features
        sizes = {k: v.num_examples for k, v in builder.info.splits.items()} if builder.info.splits else None
        first = next((s for s in source.splits.values() if sizes is None or s in sizes), None)
        rows = None
        if first is not None:
            stream = datasets.load_dataset(source.path, source.config, revision=source.revision, split=first, streaming=True)
            rows = pd.DataFrame(list(stream.take(sample_rows)))
            if features is None:
                features = stream.features
        if features is None:
            raise RuntimeError("the hub records no features for it")
    except Exception as err:
        return SourceCheck(task, name, "fails", "", f"{type(err).__name__}: {str(err)[:300]}")
    differs = compare(source, features, sizes, rows, standard_columns(task))
    shown = ", ".join(f"{k} {v}" for k, v in sorted(sizes.items())) if sizes else "not recorded"
    return SourceCheck(task, name, "differs" if differs else "ok", shown, "; ".join(differs))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mtllib.data.check_sources", description=__doc__.split("\n\n")[0])
    parser.add_argument("tasks", nargs="*", help=f"paper tasks to check (default: all {len(hub.SOURCES)})")
    parser.add_argument("--rows", type=int, default=5, help="rows to stream from each source (default 5)")
    args = parser.parse_args(argv)
    unknown = [t for t in args.tasks if t not in hub.SOURCES]
    if unknown:
        parser.error(f"unknown paper task(s) {unknown}; known: {', '.join(hub.SOURCES)}")
    if args.rows < 1:
        parser.error(f"--rows must be at least 1, got {args.rows}")
    if not hub.hub_reachable():
        print("check-sources needs the Hugging Face hub, which could not be reached from here: nothing was checked.")
        return 2
    results = [check(task, hub.SOURCES[task], args.rows) for task in (args.tasks or hub.SOURCES)]
    table = pd.DataFrame([vars(r) for r in results])
    with pd.option_context("display.max_colwidth", 120, "display.width", 250):
        print(table.to_string(index=False))
    bad = [r.task for r in results if r.status != "ok"]
    print(f"{len(results) - len(bad)} of {len(results)} sources check out" + (f"; look at: {', '.join(bad)}" if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

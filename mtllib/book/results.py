"""Result tables passed from one executed chapter to another, without models or caches.

An experiment too large for one notebook (the transferability chapters run one target group each) glues its
tidy result table into its executed copy (:func:`glue_frame`); a later chapter reads it back from the
committed executed copy in ``book/`` (:func:`read_frame`) with the copy's run record (profile, commit,
parameters), and can refuse copies made with other settings (:func:`check_same`). A clean clone has every
executed copy, so nothing here depends on a local cache.
"""

from __future__ import annotations

import ast
import io
import json
from pathlib import Path

import pandas as pd

from mtllib import checks

#: where the runner writes executed copies (relative to the project root)
BOOK = "book"
_MIME = "application/papermill.record/text/plain"


def glue_frame(name: str, frame: pd.DataFrame, glue=None) -> None:
    """Record ``frame`` (its values, index and column names) under ``name`` in the running notebook, for
    :func:`read_frame`; nothing is displayed."""
    if glue is None:
        from myst_nb import glue
    glue(name, frame.reset_index(drop=True).to_json(orient="table", index=False), display=False)


def executed_copy(notebook: str, book_dir: str | Path | None = None) -> Path:
    """The executed copy of ``notebook`` (a file stem) in ``book_dir`` (default: the project's ``book/``);
    :class:`mtllib.checks.BadInput` when there is none, saying how to make it."""
    book_dir = Path(book_dir) if book_dir is not None else Path(__file__).resolve().parents[2] / BOOK
    path = book_dir / f"{notebook}.ipynb"
    if not path.is_file():
        raise checks.BadInput(f"{notebook} has no executed copy at {path}: execute it first (make run NB={notebook})")
    return path


def read_record(path: Path) -> dict:
    """The run record the runner stored in an executed notebook (profile, commit, parameters, ...)."""
    record = json.loads(Path(path).read_text()).get("metadata", {}).get("mtllib")
    if not record:
        raise checks.BadInput(f"{path} has no run record: it was not executed by the book's runner (python -m mtllib.book run)")
    return record


def read_frame(path: Path, name: str) -> pd.DataFrame:
    """The table that :func:`glue_frame` recorded under ``name`` in the executed notebook at ``path``."""
    cells = json.loads(Path(path).read_text())["cells"]
    for cell in cells:
        for output in cell.get("outputs", []):
            if output.get("metadata", {}).get("scrapbook", {}).get("name") == name and _MIME in output.get("data", {}):
                text = ast.literal_eval(output["data"][_MIME])
                return pd.read_json(io.StringIO(text), orient="table")
    raise checks.BadInput(f"{path} holds no table glued as {name!r}: was it executed with an older version of its notebook?")


def check_same(records: dict[str, dict], keys: list[str]) -> None:
    """Refuse executed copies that disagree on the profile or on any parameter in ``keys``."""
    for key in ["profile", *keys]:
        values = {nb: (r.get(key) if key == "profile" else r.get("parameters", {}).get(key)) for nb, r in records.items()}
        if len({json.dumps(v, sort_keys=True) for v in values.values()}) > 1:
            shown = "; ".join(f"{nb}: {v!r}" for nb, v in values.items())
            raise checks.BadInput(f"the executed chapters disagree on {key!r} ({shown}): re-execute them with one profile and one setting")


def check_disjoint(records: dict[str, dict], key: str) -> None:
    """Refuse executed copies whose list parameter ``key`` shares an item (a target fine-tuned on two pages of
    one group would count twice in every average and interval read from them)."""
    seen: dict[str, str] = {}
    for nb, r in records.items():
        for item in r.get("parameters", {}).get(key) or []:
            if item in seen:
                raise checks.BadInput(f"{item!r} is in the {key!r} of both {seen[item]} and {nb}: give each one page")
            seen[item] = nb


#: TrainConfig fields that do not change what a model learns or how it is scored (where it runs, which seed: the
#: seeds are matched row by row, and checkpointing)
NOT_RECIPE = ("device", "seed", "checkpoint_dir", "checkpoint_every")


def recipe_frame(params: dict, data: dict, config) -> pd.DataFrame:
    """What decides a chapter's trained models, one row per ``setting`` (its ``value`` as JSON): the ``model``
    and ``max_length`` parameters, the prepared tasks (``data``) in order with each one's training, validation
    and test sizes, and every field of the training recipe ``config`` (a dataclass) but those in
    :data:`NOT_RECIPE`. A chapter glues it as ``"recipe"`` beside the scores another chapter may read
    (:func:`read_same_recipe`)."""
    import dataclasses

    rows = {"model": params["model"], "max_length": params["max_length"], "tasks": list(data)}
    rows.update({f"{t} {split}": len(td.features[split]) for t, td in data.items() for split in ("train", "validation", "test")})
    rows.update({k: v for k, v in dataclasses.asdict(config).items() if k not in NOT_RECIPE})
    return pd.DataFrame({"setting": list(rows), "value": [json.dumps(v, sort_keys=True, default=str) for v in rows.values()]})


def read_same_recipe(notebook: str, recipe: pd.DataFrame, name: str, book_dir: str | Path | None = None) -> tuple[pd.DataFrame, dict]:
    """The table glued as ``name`` in ``notebook``'s executed copy and the copy's run record, provided its models
    were trained as ``recipe`` says (:func:`recipe_frame`; the copy glues its own as ``"recipe"``). Refuses, with
    :class:`mtllib.checks.BadInput` naming every setting that differs, a copy trained otherwise."""
    path = executed_copy(notebook, book_dir)
    theirs, ours = read_frame(path, "recipe").set_index("setting").value, recipe.set_index("setting").value
    differ = [s for s in dict.fromkeys([*ours.index, *theirs.index]) if theirs.get(s) != ours.get(s)]
    if differ:
        shown = "; ".join(f"{s}: {theirs.get(s, 'absent')} there, {ours.get(s, 'absent')} here" for s in differ[:6])
        more = f" (and {len(differ) - 6} more)" if len(differ) > 6 else ""
        raise checks.BadInput(f"{notebook}'s models were trained on another recipe ({shown}{more}): give both chapters the same "
                              f"settings and re-execute {notebook}, or train these models here")
    return read_frame(path, name), read_record(path)

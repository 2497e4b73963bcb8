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

"""The results store: one folder per job under ``results/`` in the repository, tidy and small, tracked in git.

A job (:mod:`mtllib.experiments.jobs`) writes its result as Parquet tables (typed, exact round trip) and one
JSON file of small values, beside ``record.json``: the job's experiment, spec, key, the keys of the jobs it
read, the commit, machine, thread count, precision, run time, and the SHA-256 of every data file::

    results/<profile>/<experiment>/<spec id>/record.json, <table>.parquet ..., values.json

The folder is named by the spec (what was asked), the record holds the key (what was asked *and* the code
version that answered): a result whose key differs from the job's current key is stale and is replaced in
place, so the store keeps one result per spec. Writes go to a temporary folder renamed into place; a per-job
lock (``fcntl.flock`` on ``.locks/``) lets two ``make results`` share one store without a torn file or a job
computed twice. A file that does not match its digest raises :class:`CorruptResult`, naming it.

Why a store of our own, not DVC, Snakemake, joblib.Memory or jupyter-cache: a job's key must be its spec plus
the AST-normalised source of the code on its path (:func:`mtllib.store.keys.code_version`), which none of them
computes (DVC and Snakemake key on file bytes and need a pipeline file per job; joblib.Memory hashes a
function's own bytes, docstring included, and pickles; jupyter-cache caches whole notebook outputs, the very
coupling this store removes), and the results must be open files that a reader of the repository can load
without our code. The store is about 200 lines and its format is plain Parquet and JSON; Ray and the process
pool of :mod:`mtllib.experiments.sweep` fan jobs out.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import pandas as pd

from mtllib import checks
from mtllib.fingerprint import digest, file_sha256

REPO_ROOT = Path(__file__).resolve().parents[2]
RECORD = "record.json"
VALUES = "values.json"
FORMAT = "mtllib-result/1"


def default_profile() -> str:
    """The profile a page's results are stored under: ``$MTLLIB_PROFILE`` (the runner's profile), else ``cpu``."""
    return os.environ.get("MTLLIB_PROFILE") or "cpu"


class StoreError(checks.BadInput):
    """The store cannot be used (a path that is not a writable folder); raised before any job starts."""


class CorruptResult(RuntimeError):
    """A stored result whose files do not match its record; the message names the file."""


def default_root() -> Path:
    """``$MTLLIB_RESULTS``, else ``results/`` in the repository."""
    return Path(os.environ.get("MTLLIB_RESULTS") or REPO_ROOT / "results")


@dataclasses.dataclass
class Result:
    """One job's stored result: its ``record``, its ``tables`` (DataFrames) and small ``values`` (JSON)."""

    record: dict
    tables: dict[str, pd.DataFrame]
    values: dict

    @property
    def key(self) -> str:
        return self.record["key"]

    @property
    def digest(self) -> str:
        """The digest of the result's data (its files' SHA-256), not of when or where it ran: what a page's
        staleness reads."""
        return digest(self.record["key"], self.record["sha256"])


def _plain_json(value):
    return json.loads(json.dumps(value, default=_json_default))


def _json_default(value):
    import numpy as np

    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON: store it as a table")


class Store:
    """A results store rooted at ``root`` (default :func:`default_root`); ``profile`` (default
    :func:`default_profile`) names its sub-folder."""

    def __init__(self, root: Path | str | None = None, profile: str | None = None):
        profile = default_profile() if profile is None else profile
        if not isinstance(profile, str) or not profile or "/" in profile or profile.startswith("."):
            raise StoreError(f"profile must be a plain name, got {profile!r}")
        self.root = Path(root) if root is not None else default_root()
        self.profile = profile

    @property
    def base(self) -> Path:
        return self.root / self.profile

    def folder(self, experiment: str, spec_id: str) -> Path:
        return self.base / experiment / spec_id

    def check_writable(self) -> None:
        """Raise :class:`StoreError` unless the store's folder exists or can be made, and takes a file."""
        path = self.base
        try:
            path.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=path, prefix=".probe"):
                pass
        except OSError as err:
            raise StoreError(f"the results store {path} is not writable ({err.strerror or err}); set MTLLIB_RESULTS to a writable folder") from None

    # -- reading -----------------------------------------------------------------------------------------
    def record(self, experiment: str, spec_id: str) -> dict | None:
        """The record of a stored result (unchecked), ``None`` when there is none or it does not parse."""
        path = self.folder(experiment, spec_id) / RECORD
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            return None

    def read(self, experiment: str, spec_id: str) -> Result | None:
        """The stored result, checked against its record's digests; ``None`` when there is none. Raises
        :class:`CorruptResult` naming the file that does not check out."""
        folder = self.folder(experiment, spec_id)
        if not folder.exists():
            return None
        path = folder / RECORD
        try:
            record = json.loads(path.read_text())
            if record.get("format") != FORMAT or not isinstance(record.get("sha256"), dict):
                raise CorruptResult(f"{path}: not a result record of format {FORMAT}")
        except CorruptResult:
            raise
        except (OSError, ValueError) as err:
            raise CorruptResult(f"{path}: unreadable ({type(err).__name__}: {err})") from None
        for name, expected in record["sha256"].items():
            file = folder / name
            if not file.is_file():
                raise CorruptResult(f"{file}: missing (named in {path})")
            if file_sha256(file) != expected:
                raise CorruptResult(f"{file}: contents do not match the SHA-256 in {path} (truncated or edited)")
        tables = {}
        for name in record["sha256"]:
            if name.endswith(".parquet"):
                tables[name[: -len(".parquet")]] = pd.read_parquet(folder / name)
        values = json.loads((folder / VALUES).read_text()) if VALUES in record["sha256"] else {}
        return Result(record, tables, values)

    # -- writing -----------------------------------------------------------------------------------------
    def write(self, experiment: str, spec_id: str, record: dict, tables: dict[str, pd.DataFrame], values: dict) -> Result:
        """Write a result atomically (a temporary folder renamed into place, replacing any older one); hold
        :meth:`lock` around it when other processes may write the same job."""
        for name, table in tables.items():
            if not isinstance(name, str) or not name.isidentifier():
                raise ValueError(f"table names must be identifiers, got {name!r}")
            if not isinstance(table, pd.DataFrame):
                raise TypeError(f"table {name!r} is a {type(table).__name__}, not a DataFrame")
        values, record = _plain_json(values), _plain_json(record)  # what is not JSON fails here, before any file
        final = self.folder(experiment, spec_id)
        final.parent.mkdir(parents=True, exist_ok=True)
        for leftover in final.parent.glob(f".{spec_id}.*"):  # of a writer that was killed (callers hold the job's lock)
            shutil.rmtree(leftover, ignore_errors=True)
        tmp = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{spec_id}.tmp"))
        try:
            for name, table in tables.items():
                table.to_parquet(tmp / f"{name}.parquet")
            (tmp / VALUES).write_text(json.dumps(values, indent=1, sort_keys=True) + "\n")
            sha = {p.name: file_sha256(p) for p in sorted(tmp.iterdir())}
            record = {**record, "format": FORMAT, "sha256": sha}
            (tmp / RECORD).write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
            old = None
            if final.exists():
                old = final.with_name(f".{spec_id}.old{os.getpid()}")
                os.replace(final, old)
            os.replace(tmp, final)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        except OSError as err:
            shutil.rmtree(tmp, ignore_errors=True)
            raise StoreError(f"could not write the result {final} ({err.strerror or err}); nothing was replaced") from None
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return self.read(experiment, spec_id)  # as a later reader sees it (Parquet's types), checked

    def remove(self, experiment: str, spec_id: str) -> None:
        shutil.rmtree(self.folder(experiment, spec_id), ignore_errors=True)

    @contextlib.contextmanager
    def lock(self, experiment: str, spec_id: str):
        """Hold this job's lock (blocking) so two processes on one store never compute it at once."""
        import fcntl

        locks = self.root / ".locks"
        locks.mkdir(parents=True, exist_ok=True)
        name = hashlib.sha256(f"{self.profile}/{experiment}/{spec_id}".encode()).hexdigest()[:32]
        with open(locks / f"{name}.lock", "a+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def entries(self) -> list[tuple[str, str]]:
        """Every ``(experiment, spec id)`` with a folder in this profile's store."""
        if not self.base.exists():
            return []
        return sorted((e.name, s.name) for e in self.base.iterdir() if e.is_dir() and not e.name.startswith(".")
                      for s in e.iterdir() if s.is_dir() and not s.name.startswith("."))

"""Experiments as jobs whose results are stored (issue 60's design; the store: :mod:`mtllib.store.results`).

An :class:`Experiment` is a library function and the parameters it takes, with their defaults. A :class:`Job`
is one experiment with one spec (every parameter given a value): one unit that trains, typically one model or
one branch for one seed. A job may need other jobs (an IAT branch its baseline, a few-shot run its source
model); their results reach it as ``inputs``, their weights through :meth:`Context.weights`.

- **Key.** A job's key is its spec, the :func:`~mtllib.store.keys.code_version` of the experiment's code (the
  normalised source of the modules that decide its numbers: docstrings, comments and layout do not count) and
  the keys of the jobs it needs. A stored result whose record holds another key is *stale*.
- **Get.** :func:`get` returns a job's stored result when it is fresh and checks out, else computes it (and what
  it needs) and stores it atomically under a per-job lock, so two processes on one store compute a job once.
  A result whose files do not match their digests is reported by name and recomputed.
- **Weights** stay out of the store: a job that returns them keeps them in the local cache
  (``$MTLLIB_CACHE/jobs/<key>/``); a job that needs missing weights recomputes them (deterministically) and
  logs when the recomputed result differs from the stored one.
- **Run.** :func:`plan` lists jobs with their state (fresh, stale, missing, corrupt) and estimated minutes;
  :func:`run` computes the ones not fresh in dependency waves, one job per worker of
  :mod:`mtllib.experiments.sweep` (serial, process pool, Ray). An interrupted run resumes where it stopped:
  every finished job is already stored.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import pandas as pd

from mtllib import checks
from mtllib.fingerprint import digest, file_sha256
from mtllib.runtime import cache_root
from mtllib.store import keys, records
from mtllib.store.results import REPO_ROOT, CorruptResult, Result, Store

STATES = ("fresh", "stale", "missing", "corrupt")


@dataclasses.dataclass(frozen=True)
class Output:
    """What an experiment's function returns: ``tables`` (DataFrames), small JSON ``values``, the ``precision``
    it computed in, and optionally the trained ``state`` (a state dict) for jobs that need its weights."""

    tables: dict
    values: dict = dataclasses.field(default_factory=dict)
    precision: str = "fp32"
    state: dict | None = None


@dataclasses.dataclass(frozen=True)
class Experiment:
    """An experiment: ``compute(spec, inputs, context) -> Output``; ``defaults``: every parameter and its default;
    ``code``: the modules whose source decides its numbers (their imports are followed, ``exclude`` cut off);
    ``check(spec)``: raises :class:`mtllib.checks.BadInput` for a bad spec; ``needs(spec)``: the jobs it reads,
    ``{name: Job}``; ``minutes(spec)``: its estimated cold cost on 2 CPU cores; ``work(spec)``: a measure of its
    size (e.g. training tokens) by which plans scale the run times of stored results of the same experiment.
    Keep ``minutes`` and ``work`` in :mod:`mtllib.experiments.costs` and that module in ``exclude``: an estimate
    decides no number, and editing it must stale no result."""

    name: str
    compute: Callable
    defaults: dict
    code: tuple
    exclude: tuple = ()
    check: Callable | None = None
    needs: Callable | None = None
    minutes: Callable | None = None
    work: Callable | None = None


REGISTRY: dict[str, Experiment] = {}


def register(experiment: Experiment) -> Experiment:
    """Add ``experiment`` to :data:`REGISTRY` (a second experiment of the same name is an error)."""
    old = REGISTRY.get(experiment.name)
    if old is not None and old.compute is not experiment.compute:
        raise ValueError(f"an experiment named {experiment.name!r} is registered already")
    REGISTRY[experiment.name] = experiment
    return experiment


def experiment(name: str) -> Experiment:
    """The registered experiment ``name``; an unknown name is :class:`mtllib.checks.BadInput`."""
    _load_builtin()
    if name not in REGISTRY:
        raise checks.BadInput(f"no experiment named {name!r}; the experiments are: {', '.join(sorted(REGISTRY)) or 'none'}")
    return REGISTRY[name]


def _load_builtin() -> None:
    import mtllib.experiments.registry  # noqa: F401  (registers the library's experiments)


def _plain(value):
    return json.loads(json.dumps(value, sort_keys=True, default=lambda v: v.item() if hasattr(v, "item") else str(v)))


@lru_cache(maxsize=None)
def _code_version(code: tuple, exclude: tuple) -> str:
    return keys.code_version(code, exclude)


def refresh_code() -> None:
    """Forget the code versions computed so far (the source may have changed since)."""
    _code_version.cache_clear()


class Job:
    """One experiment with one spec: ``Job("multitask", tasks=[...], seed=0)``. Parameters not given take the
    experiment's defaults; an unknown parameter, or a spec the experiment's check refuses, is
    :class:`mtllib.checks.BadInput` here, before any work."""

    def __init__(self, experiment_name: str, **params):
        exp = experiment(experiment_name)
        unknown = sorted(set(params) - set(exp.defaults))
        if unknown:
            raise checks.BadInput(f"experiment {exp.name!r} has no parameter(s) {unknown}; its parameters are: {', '.join(sorted(exp.defaults))}")
        self.experiment = exp.name
        self.spec = _plain({**exp.defaults, **params})
        if exp.check is not None:
            exp.check(self.spec)

    @property
    def definition(self) -> Experiment:
        return experiment(self.experiment)

    @property
    def spec_id(self) -> str:
        """The name of this job's folder in the store: a digest of its experiment and spec (not of the code)."""
        return digest("spec/1", self.experiment, self.spec)[:16]

    @property
    def name(self) -> str:
        return f"{self.experiment}/{self.spec_id}"

    def needs(self) -> dict[str, Job]:
        exp = self.definition
        return dict(exp.needs(self.spec)) if exp.needs is not None else {}

    @property
    def key(self) -> str:
        """Spec, code version and the keys of the jobs this one needs: what decides the result."""
        exp = self.definition
        return digest("job/1", self.experiment, self.spec, _code_version(tuple(exp.code), tuple(exp.exclude)),
                      {n: j.key for n, j in sorted(self.needs().items())})

    def minutes(self) -> float | None:
        exp = self.definition
        value = exp.minutes(self.spec) if exp.minutes is not None else None
        return None if value is None else float(value)

    def __eq__(self, other):
        return isinstance(other, Job) and (self.experiment, self.spec) == (other.experiment, other.spec)

    def __hash__(self):
        return hash(self.name)

    def __repr__(self):
        return f"Job({self.experiment!r}, {self.spec})"


# --- states and reading ---------------------------------------------------------------------------------------
def state(job: Job, store: Store) -> str:
    """``"fresh"``, ``"stale"`` (stored under another key), ``"missing"`` or ``"corrupt"`` (its files do not
    match their digests)."""
    record = store.record(job.experiment, job.spec_id)
    if record is None:
        return "corrupt" if store.folder(job.experiment, job.spec_id).exists() else "missing"
    if record.get("key") != job.key:
        return "stale"
    try:
        store.read(job.experiment, job.spec_id)
    except CorruptResult:
        return "corrupt"
    return "fresh"


def _fresh(job: Job, store: Store, key: str, log) -> Result | None:
    try:
        result = store.read(job.experiment, job.spec_id)
    except CorruptResult as err:
        log(f"results store: {err}; computing {job.name} again")
        return None
    return result if result is not None and result.key == key else None


# --- weights in the local cache -------------------------------------------------------------------------------
def weights_dir(key: str) -> Path:
    return cache_root() / "jobs" / key


def _weights_enabled() -> bool:
    return os.environ.get("MTLLIB_MODEL_CACHE", "1") not in ("0", "false", "no", "off")


def _save_weights(key: str, state: dict) -> None:
    import torch

    if not _weights_enabled():
        return
    final = weights_dir(key)
    tmp = final.with_name(f".{key}.tmp{os.getpid()}")
    try:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        torch.save({k: v.detach().cpu() for k, v in state.items()}, tmp / "model.pt")
        (tmp / "weights.json").write_text(json.dumps({"key": key, "sha256": file_sha256(tmp / "model.pt")}))
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
    except OSError as err:  # the cache is a convenience: a full or read-only disk costs a recomputation later
        print(f"weights of job {key[:12]} not kept in the local cache ({err.strerror or err})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _load_weights(key: str) -> dict | None:
    import torch

    folder = weights_dir(key)
    try:
        meta = json.loads((folder / "weights.json").read_text())
        if meta["key"] != key or file_sha256(folder / "model.pt") != meta["sha256"]:
            return None
        return torch.load(folder / "model.pt", map_location="cpu", weights_only=True)
    except (OSError, ValueError, KeyError, RuntimeError):
        return None


@dataclasses.dataclass
class Context:
    """What an experiment's function gets besides its spec: the ``device``, whether to show ``progress``, a
    ``log``, and the weights of the jobs it needs (:meth:`weights`)."""

    job: Job
    store: Store
    device: str = "cpu"
    progress: bool = True
    log: Callable = print

    def weights(self, name: str) -> dict:
        """The trained weights of the needed job ``name``: from the local cache, else recomputed by running
        that job's experiment again (its stored result is kept; a recomputation that disagrees is logged)."""
        needs = self.job.needs()
        if name not in needs:
            raise KeyError(f"{self.job.name} needs no job named {name!r}; it needs: {sorted(needs)}")
        dep = needs[name]
        key = dep.key
        state = _load_weights(key)
        if state is not None:
            return state
        self.log(f"weights of {dep.name} are not in the local cache: recomputing them")
        inputs = {n: get(j, self.store, self.device, self.progress, self.log) for n, j in dep.needs().items()}
        out = dep.definition.compute(dep.spec, inputs, Context(dep, self.store, self.device, self.progress, self.log))
        if out.state is None:
            raise ValueError(f"{dep.name} keeps no weights: its experiment returns no state")
        stored = self.store.read(dep.experiment, dep.spec_id)
        if stored is not None and not all(name in out.tables and out.tables[name].equals(t) for name, t in stored.tables.items()):
            self.log(f"note: recomputing {dep.name} here gave results that differ from the stored ones "
                     f"(stored from {stored.record.get('machine', {}).get('cpu', '?')}, {stored.record.get('machine', {}).get('threads', '?')} threads)")
        _save_weights(key, out.state)
        return out.state


# --- computing ------------------------------------------------------------------------------------------------
def _check_output(job: Job, out) -> Output:
    if not isinstance(out, Output):
        raise TypeError(f"experiment {job.experiment!r} returned {type(out).__name__}, not jobs.Output")
    for name, table in out.tables.items():
        if not isinstance(table, pd.DataFrame):
            raise TypeError(f"experiment {job.experiment!r}: table {name!r} is a {type(table).__name__}, not a DataFrame")
    return out


def get(job: Job, store: Store, device: str = "cpu", progress: bool = True, log: Callable = print) -> Result:
    """``job``'s result: the stored one when it is fresh and checks out, else computed now (with what it
    needs), stored and returned. Progress of training shows when ``progress``."""
    key = job.key
    result = _fresh(job, store, key, log)
    if result is not None:
        return result
    inputs = {n: get(j, store, device, progress, log) for n, j in job.needs().items()}
    store.check_writable()
    with store.lock(job.experiment, job.spec_id):
        result = _fresh(job, store, key, lambda _: None)  # another process may have stored it meanwhile
        if result is not None:
            return result
        start = time.perf_counter()
        out = _check_output(job, job.definition.compute(job.spec, inputs, Context(job, store, device, progress, log)))
        seconds = time.perf_counter() - start
        if out.state is not None:
            _save_weights(key, out.state)
        record = {
            "experiment": job.experiment, "spec": job.spec, "spec_id": job.spec_id, "key": key, "profile": store.profile,
            "code_version": _code_version(tuple(job.definition.code), tuple(job.definition.exclude)),
            "inputs": {n: {"job": r.record["experiment"] + "/" + r.record["spec_id"], "key": r.key, "digest": r.digest} for n, r in inputs.items()},
            "precision": out.precision, "seconds": round(seconds, 1), "commit": records.commit(REPO_ROOT),
            "machine": records.machine(device), "written_at": records.now(),
        }
        return store.write(job.experiment, job.spec_id, record, out.tables, out.values)


def _compute_in_worker(experiment: str, module: str, spec: dict, root: str, profile: str, progress: bool, device: str) -> str:
    import importlib

    importlib.import_module(module)  # registers the experiment in a fresh worker process
    job = Job(experiment, **spec)
    return get(job, Store(root, profile), device, progress).key


@dataclasses.dataclass(frozen=True)
class Step:
    """One line of a plan: the job, its state, its estimated minutes (``None``: unknown) and its depth (0: needs
    nothing that must be computed first)."""

    job: Job
    state: str
    minutes: float | None
    depth: int


def plan(jobs: list[Job], store: Store) -> list[Step]:
    """Every job of ``jobs`` and every job they need, once each, in an order where needed jobs come first,
    with its state and estimated cost (the last run's time where a stale result records one)."""
    if not isinstance(jobs, (list, tuple)) or not all(isinstance(j, Job) for j in jobs):
        raise checks.BadInput("jobs must be a list of jobs.Job")
    refresh_code()
    steps: dict[str, Step] = {}
    rates: dict[str, float | None] = {}

    def visit(job: Job, path: tuple) -> Step:
        if job.name in path:
            raise ValueError(f"jobs need each other in a cycle: {' -> '.join(path + (job.name,))}")
        if job.name in steps:
            return steps[job.name]
        deps = [visit(j, path + (job.name,)) for j in job.needs().values()]
        now = state(job, store)
        if now == "fresh" and any(d.state != "fresh" for d in deps):  # cannot happen with consistent keys
            now = "stale"
        pending = [d.depth + 1 for d in deps if d.state != "fresh"]
        record = store.record(job.experiment, job.spec_id) or {}
        if job.experiment not in rates:
            rates[job.experiment] = _seconds_per_work(job.definition, store)
        minutes = (record["seconds"] / 60 if now == "stale" and "seconds" in record
                   else _scaled(job, rates[job.experiment]) if rates[job.experiment] is not None else job.minutes())
        steps[job.name] = Step(job, now, minutes, max(pending, default=0))
        return steps[job.name]

    for j in jobs:
        visit(j, ())
    return list(steps.values())


def _seconds_per_work(exp: Experiment, store: Store) -> float | None:
    """The median run time per unit of :attr:`Experiment.work` over this experiment's stored results (``None``
    when it measures no work or none is stored)."""
    if exp.work is None or not store.base.joinpath(exp.name).is_dir():
        return None
    rates = []
    for experiment, spec_id in store.entries():
        record = store.record(experiment, spec_id) if experiment == exp.name else None
        if record and record.get("seconds") and isinstance(record.get("spec"), dict):
            try:
                rates.append(record["seconds"] / exp.work({**exp.defaults, **record["spec"]}))
            except (KeyError, TypeError, ValueError, ZeroDivisionError):
                continue
    return float(sorted(rates)[len(rates) // 2]) if rates else None


def _scaled(job: Job, rate: float) -> float | None:
    try:
        return job.definition.work(job.spec) * rate / 60
    except (TypeError, ValueError):
        return job.minutes()


def describe(steps: list[Step]) -> str:
    """A plan as lines a person reads: counts per state, the jobs to compute and their estimated minutes."""
    todo = [s for s in steps if s.state != "fresh"]
    counts = ", ".join(f"{sum(s.state == k for s in steps)} {k}" for k in STATES if any(s.state == k for s in steps))
    known = [s.minutes for s in todo if s.minutes is not None]
    cost = f"about {sum(known):.0f} min on 2 CPU cores" + (f" plus {len(todo) - len(known)} of unknown cost" if len(known) < len(todo) else "")
    lines = [f"{len(steps)} jobs: {counts or 'none'}" + (f"; to compute: {len(todo)}, {cost}" if todo else "; nothing to compute")]
    lines += [f"  {s.state:8s} {s.job.name}  {'?' if s.minutes is None else f'{s.minutes:.1f} min':>9s}  {_label(s.job)}" for s in todo]
    return "\n".join(lines)


def _label(job: Job) -> str:
    return ", ".join(f"{k}={v}" for k, v in job.spec.items() if not isinstance(v, (dict, list)) or len(json.dumps(v)) <= 40)[:120]


def run(jobs: list[Job], store: Store, devices: list[str] | None = None, engine: str = "serial", workers: int | None = None,
        address: str | None = None, progress: bool = True, log: Callable = print) -> list[Step]:
    """Compute every job of :func:`plan` that is not fresh, in waves of jobs whose needs are met, one job per
    worker (:func:`mtllib.experiments.sweep.run`). Bad settings and an unwritable store fail before any job.
    A failed job stops the jobs that need it, not the others; :class:`~mtllib.experiments.sweep.SweepFailed`
    names the failures at the end. Returns the plan as it was before the run."""
    from mtllib.experiments import sweep

    devices = sweep.check(devices, engine, workers, address)
    steps = plan(jobs, store)
    todo = [s for s in steps if s.state != "fresh"]
    if todo:
        store.check_writable()
    log(describe(steps))
    failed: dict[str, sweep.Failure] = {}
    results: list = []
    for depth in sorted({s.depth for s in todo}):
        wave = [s for s in todo if s.depth == depth and not _needs_failed(s.job, failed)]
        batch = [sweep.Job(s.job.name, _compute_in_worker, {"experiment": s.job.experiment, "module": s.job.definition.compute.__module__, "spec": s.job.spec, "root": str(store.root),
                                                            "profile": store.profile, "progress": progress}) for s in wave]
        try:
            results += sweep.run(batch, devices=devices, engine=engine, workers=workers, address=address, progress=progress)
        except sweep.SweepFailed as err:
            failed |= {f.job: f for f in err.failures}
            results += err.results
    skipped = [s for s in todo if s.job.name not in failed and _needs_failed(s.job, failed)]
    if failed:
        lost = [sweep.Failure(s.job.name, s.job.spec, "not run: a job it needs failed") for s in skipped]
        raise sweep.SweepFailed(list(failed.values()) + lost, results + [None] * len(lost))
    return steps


def _needs_failed(job: Job, failed: dict) -> bool:
    return any(j.name in failed or _needs_failed(j, failed) for j in job.needs().values())

"""Independent runs of a chapter (seeds, pairs, schemes, few-shot repetitions) fanned out over devices.

A chapter's runs do not depend on each other, so they can run at the same time: one worker per device of this
machine (``engine="processes"``), or over several machines through Ray (``engine="ray"``, an optional install:
``pip install "mtllib[distributed]"``). ``engine="serial"`` (the default, and the right choice on a 2-core CPU)
runs them one after another in this process.

Whatever the engine, :func:`run` returns the results *in the order of the jobs*, as a serial run would, so a
table built from them is the same; the model cache (``$MTLLIB_CACHE``) is shared, because workers inherit the
environment and cache entries are written atomically. A job that fails does not stop the others: when all have
ended, :class:`SweepFailed` names every failed job with its arguments and the worker's traceback, and holds the
results of those that succeeded.

A job is a module-level function and its keyword arguments (both must pickle); the worker adds
``device=<its device>``. Bad input (an unknown engine, a device that does not exist, more workers than devices,
a Ray address that cannot be reached) fails before any job starts.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import traceback
from dataclasses import dataclass, field
from typing import Callable

from tqdm.auto import tqdm

from mtllib import checks

ENGINES = ("serial", "processes", "ray")


@dataclass(frozen=True)
class Job:
    """One run: ``fn(**kwargs, device=...)``; ``name`` is what progress bars and errors call it."""

    name: str
    fn: Callable
    kwargs: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Failure:
    job: str
    kwargs: dict
    error: str  #: the exception as the worker saw it, with its traceback


class SweepFailed(RuntimeError):
    """Some jobs failed: ``failures`` (job name, its arguments, the worker's traceback) and ``results`` (in job
    order; ``None`` where a job failed)."""

    def __init__(self, failures: list[Failure], results: list):
        self.failures, self.results = failures, results
        lines = [f"{len(failures)} of {len(results)} runs failed:"]
        for f in failures:
            last = f.error.strip().splitlines()[-1] if f.error.strip() else "?"
            lines.append(f"- {f.job} {f.kwargs}: {last}")
        super().__init__("\n".join(lines))


def check_devices(devices: list[str]) -> list[str]:
    """The devices as ``torch`` names them; a device this machine lacks is a :class:`mtllib.checks.BadInput`."""
    import torch

    if not devices or isinstance(devices, str):
        raise checks.BadInput(f"devices must be a non-empty list such as ['cuda:0', 'cuda:1'] or ['cpu', 'cpu'], got {devices!r}")
    out = []
    for d in list(devices):
        try:
            dev = torch.device(d)
        except (RuntimeError, TypeError) as err:
            raise checks.BadInput(f"device {d!r} is not a device name: {err}") from None
        if dev.type == "cuda":
            count = torch.cuda.device_count()
            index = 0 if dev.index is None else dev.index
            if index >= count:
                raise checks.BadInput(f"device {d!r} does not exist here: this machine has {count} CUDA device(s)")
        elif dev.type != "cpu":
            raise checks.BadInput(f"device {d!r}: sweeps run on 'cpu' or 'cuda:<i>' devices")
        out.append(str(dev))
    return out


def _call(job: Job, device: str):
    return job.fn(**job.kwargs, device=device)


def _describe_error(err: BaseException) -> str:
    return "".join(traceback.format_exception(type(err), err, err.__traceback__))


def _outcome(job: Job, device: str) -> tuple[bool, object]:
    """``(True, result)`` or ``(False, the traceback)``: what a worker sends back (the parent names the job)."""
    try:
        return True, _call(job, device)
    except BaseException as err:
        return False, _describe_error(err)


# --- the process engine: one worker per device -------------------------------------------------------------
_WORKER_DEVICE: str | None = None


def _init_worker(queue, threads: int) -> None:
    global _WORKER_DEVICE
    _WORKER_DEVICE = queue.get()
    import torch

    torch.set_num_threads(threads)


def _in_worker(job: Job):
    return _outcome(job, _WORKER_DEVICE)


def _run_processes(jobs: list[Job], devices: list[str], progress: bool) -> list[tuple[bool, object]]:
    ctx = multiprocessing.get_context("spawn")  # CUDA cannot be used in forked workers
    queue = ctx.Queue()
    for d in devices:
        queue.put(d)
    threads = max(1, (os.cpu_count() or 1) // len(devices)) if all(d == "cpu" for d in devices) else 1
    with concurrent.futures.ProcessPoolExecutor(len(devices), mp_context=ctx, initializer=_init_worker, initargs=(queue, threads)) as pool:
        futures = [pool.submit(_in_worker, job) for job in jobs]
        for _ in tqdm(concurrent.futures.as_completed(futures), total=len(futures), desc="runs", disable=not progress):
            pass
        return [f.result() for f in futures]


# --- the Ray engine: one task per job, each holding one device -----------------------------------------------
def _reachable(address: str, timeout: float = 3.0) -> str | None:
    """``None`` when a TCP connection to ``address`` (``host:port`` or ``ray://host:port``) opens within
    ``timeout`` seconds, else why not (Ray itself retries for minutes before it gives up)."""
    import socket

    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return f"{address!r} is not host:port"
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
        return None
    except OSError as err:
        return str(err)


def _check_ray(address: str | None):
    """Ray importable and ``address`` (when it names a cluster) reachable; returns the ``ray`` module."""
    try:
        import ray
    except ImportError:
        raise checks.BadInput('engine="ray" needs Ray: pip install "mtllib[distributed]" (or ray==2.60.0)') from None
    if address not in (None, "auto", "local") and (why := _reachable(address)) is not None:
        raise checks.BadInput(f"the Ray engine at {address!r} could not be reached: {why}")
    return ray


def _connect_ray(address: str | None):
    ray = _check_ray(address)
    if not ray.is_initialized():
        try:
            ray.init(address=address, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True,
                     runtime_env={"env_vars": {k: v for k, v in os.environ.items() if k.startswith(("MTLLIB_", "HF_", "OMP_"))}})
        except (ConnectionError, RuntimeError, ValueError) as err:
            raise checks.BadInput(f"the Ray engine at {address!r} could not be reached: {err}") from None
    return ray




def _run_ray(jobs: list[Job], devices: list[str], address: str | None, progress: bool) -> list[tuple[bool, object]]:
    ray = _connect_ray(address)
    gpu = any(d.startswith("cuda") for d in devices)
    remote = ray.remote(num_gpus=1 if gpu else 0, num_cpus=1)(_outcome)
    # on a GPU Ray sets CUDA_VISIBLE_DEVICES for each task: inside it, its one GPU is cuda:0
    refs = [remote.remote(job, "cuda:0" if gpu else "cpu") for job in jobs]
    pending = list(refs)
    with tqdm(total=len(refs), desc="runs", disable=not progress) as bar:
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            bar.update(len(done))
    return ray.get(refs)


#: the environment variables a chapter reads its sweep from (:func:`from_environment`): the engine, the devices
#: (comma-separated) and a Ray cluster's address. Unset, a chapter runs serially on its own device.
ENVIRONMENT = {"engine": "MTLLIB_SWEEP_ENGINE", "devices": "MTLLIB_SWEEP_DEVICES", "address": "MTLLIB_SWEEP_ADDRESS"}


def from_environment(environ=None) -> dict:
    """The sweep a chapter was asked for through :data:`ENVIRONMENT`, as keyword arguments of :func:`run` and
    :func:`check`: ``{}`` when none is set (serial, the chapter's device); setting the devices alone picks the
    process engine, e.g. ``MTLLIB_SWEEP_DEVICES=cuda:0,cuda:1``. Where a chapter's runs go changes no result
    (each run's seed fixes it), so this is the machine's setting, not the chapter's parameter."""
    environ = os.environ if environ is None else environ
    values = {key: environ[var].strip() for key, var in ENVIRONMENT.items() if environ.get(var, "").strip()}
    if "devices" in values:
        values["devices"] = [d.strip() for d in values["devices"].split(",") if d.strip()]
        values.setdefault("engine", "processes")
    return values


def check(devices: list[str] | None = None, engine: str = "serial", workers: int | None = None, address: str | None = None) -> list[str]:
    """Every setting of a sweep checked before any work (an unknown engine, a device this machine lacks, more
    workers than devices, Ray missing or its address unreachable: :class:`mtllib.checks.BadInput`); returns the
    devices the workers take."""
    checks.choice("engine", engine, ENGINES)
    devices = check_devices(devices if devices is not None else ["cpu"])
    if workers is not None:
        checks.integer("workers", workers, 1)
        if workers > len(devices):
            raise checks.BadInput(f"workers={workers} but only {len(devices)} device(s) given ({devices}): one worker per device")
        devices = devices[:workers]
    if engine == "ray":
        _check_ray(address)
    return devices


def run(jobs: list[Job], devices: list[str] | None = None, engine: str = "serial", workers: int | None = None,
        address: str | None = None, progress: bool = True) -> list:
    """Run every job and return their results in job order (see the module docstring). ``devices``: one worker
    per entry (default ``["cpu"]``); ``workers``: how many of them to use (at most one per device); ``address``:
    a running Ray cluster (``engine="ray"``; ``None`` starts a local one). Bad settings fail first (:func:`check`)."""
    if not isinstance(jobs, (list, tuple)) or not all(isinstance(j, Job) for j in jobs):
        raise checks.BadInput("jobs must be a list of sweep.Job")
    devices = check(devices, engine, workers, address)
    if not jobs:
        return []
    if engine == "serial":
        outcomes = []
        for job in tqdm(jobs, desc="runs", disable=not progress):
            try:
                outcomes.append((True, _call(job, devices[0])))
            except Exception as err:
                outcomes.append((False, _describe_error(err)))
    elif engine == "processes":
        outcomes = _run_processes(list(jobs), devices, progress)
    else:
        outcomes = _run_ray(list(jobs), devices, address, progress)
    failures = [Failure(job.name, job.kwargs, out) for job, (ok, out) in zip(jobs, outcomes) if not ok]
    results = [out if ok else None for ok, out in outcomes]
    if failures:
        raise SweepFailed(failures, results)
    return results

"""Sweeps over devices (issue 16): results in the order of the jobs whatever the engine, one worker per device,
failed runs reported with their arguments, bad input refused before any job starts. The process engine and a
local Ray instance run 2 CPU workers."""

import os

import pytest
import torch

from mtllib import checks
from mtllib.experiments import sweep


def square(x, device):
    return {"x": x, "square": x * x, "device": device, "pid": os.getpid()}


def train_tiny(seed, device):
    """A real (tiny) training run: the same seed gives the same loss on any engine."""
    torch.manual_seed(seed)
    model = torch.nn.Linear(4, 1).to(device)
    data = torch.randn(32, 4, generator=torch.Generator().manual_seed(seed))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(5):
        loss = (model(data.to(device)) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    return round(loss.item(), 10)


STARTED = []


def record(x, device):
    STARTED.append(x)
    return x


def fails_on_three(x, device):
    if x == 3:
        raise ValueError(f"no good: {x}")
    return x


JOBS = [sweep.Job(f"square {x}", square, {"x": x}) for x in range(6)]


def test_serial_runs_in_order_on_the_first_device():
    out = sweep.run(JOBS, progress=False)
    assert [r["square"] for r in out] == [0, 1, 4, 9, 16, 25] and {r["device"] for r in out} == {"cpu"}
    assert {r["pid"] for r in out} == {os.getpid()}


def test_processes_give_the_serial_results_in_job_order_from_one_worker_per_device():
    out = sweep.run(JOBS, devices=["cpu", "cpu"], engine="processes", progress=False)
    assert [r["x"] for r in out] == list(range(6)) and [r["square"] for r in out] == [0, 1, 4, 9, 16, 25]
    pids = {r["pid"] for r in out}
    assert os.getpid() not in pids and 1 <= len(pids) <= 2


def test_a_training_run_gives_the_same_result_on_every_engine():
    jobs = [sweep.Job(f"seed {s}", train_tiny, {"seed": s}) for s in (0, 1, 2)]
    serial = sweep.run(jobs, progress=False)
    assert sweep.run(jobs, devices=["cpu", "cpu"], engine="processes", progress=False) == serial
    assert len(set(serial)) == 3


@pytest.mark.parametrize("engine", ["serial", "processes"])
def test_a_failed_run_is_reported_with_its_arguments_and_the_others_are_kept(engine):
    jobs = [sweep.Job(f"job {x}", fails_on_three, {"x": x}) for x in range(5)]
    with pytest.raises(sweep.SweepFailed) as err:
        sweep.run(jobs, devices=["cpu", "cpu"], engine=engine, progress=False)
    assert str(err.value).splitlines() == ["1 of 5 runs failed:", "- job 3 {'x': 3}: ValueError: no good: 3"]
    assert err.value.results == [0, 1, 2, None, 4]
    assert "fails_on_three" in err.value.failures[0].error  # the worker's traceback


def test_no_jobs_is_no_work():
    assert sweep.run([], engine="processes", progress=False) == []


@pytest.mark.parametrize("kwargs, message", [
    (dict(engine="threads"), "engine must be one of 'serial', 'processes', 'ray'"),
    (dict(devices=["cuda:7"]), "device 'cuda:7' does not exist here"),
    (dict(devices=["tpu"]), "device 'tpu' is not a device name"),
    (dict(devices="cpu"), "devices must be a non-empty list"),
    (dict(devices=["cpu", "cpu"], workers=3), "workers=3 but only 2 device(s) given"),
    (dict(workers=0), "workers must be an integer >= 1"),
])
def test_bad_input_is_refused_before_any_job_starts(kwargs, message):
    STARTED.clear()
    jobs = [sweep.Job("spy", record, {"x": 1})]
    with pytest.raises(checks.BadInput) as err:
        sweep.run(jobs, progress=False, **kwargs)
    assert message in str(err.value) and STARTED == []
    assert sweep.run(jobs, progress=False) == [1] and STARTED == [1]  # the spy does record a run


def test_distributed_ray_engine_gives_the_serial_results_in_order():
    pytest.importorskip("ray", reason="Ray is the optional 'distributed' extra (CI installs it)")
    import ray

    try:
        out = sweep.run(JOBS, devices=["cpu", "cpu"], engine="ray", progress=False)
        assert [r["square"] for r in out] == [0, 1, 4, 9, 16, 25] and all(r["pid"] != os.getpid() for r in out)
        jobs = [sweep.Job(f"job {x}", fails_on_three, {"x": x}) for x in range(5)]
        with pytest.raises(sweep.SweepFailed, match=r"- job 3 \{'x': 3\}: ValueError: no good: 3"):
            sweep.run(jobs, engine="ray", progress=False)
    finally:
        ray.shutdown()


def test_distributed_ray_address_that_cannot_be_reached_is_refused():
    pytest.importorskip("ray", reason="Ray is the optional 'distributed' extra (CI installs it)")
    import ray

    ray.shutdown()
    with pytest.raises(checks.BadInput, match=r"the Ray engine at '127\.0\.0\.1:1' could not be reached"):
        sweep.run(JOBS[:1], engine="ray", address="127.0.0.1:1", progress=False)


@pytest.mark.parametrize("environ, expected", [
    ({}, {}),
    ({"MTLLIB_SWEEP_DEVICES": "cuda:0, cuda:1"}, {"devices": ["cuda:0", "cuda:1"], "engine": "processes"}),
    ({"MTLLIB_SWEEP_DEVICES": "cpu,cpu", "MTLLIB_SWEEP_ENGINE": "ray", "MTLLIB_SWEEP_ADDRESS": "head:6379"},
     {"devices": ["cpu", "cpu"], "engine": "ray", "address": "head:6379"}),
    ({"MTLLIB_SWEEP_ENGINE": "serial", "MTLLIB_SWEEP_DEVICES": " "}, {"engine": "serial"}),
])
def test_a_chapter_reads_its_sweep_from_the_environment(environ, expected):
    assert sweep.from_environment(environ) == expected


def test_distributed_settings_are_checked_without_running_anything():
    assert sweep.check() == ["cpu"] and sweep.check(["cpu", "cpu"], "processes", workers=1) == ["cpu"]
    with pytest.raises(checks.BadInput, match="device 'cuda:7' does not exist here"):
        sweep.check(**sweep.from_environment({"MTLLIB_SWEEP_DEVICES": "cuda:7"}))

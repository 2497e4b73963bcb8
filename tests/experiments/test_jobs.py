"""Jobs: keys, fresh/stale/missing/corrupt states, resume after a failure, dependencies and their weights,
two runs on one store, and bad input before any work."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import toy_jobs

from mtllib import checks
from mtllib.experiments import jobs, sweep
from mtllib.store.results import Store, StoreError


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("MTLLIB_CACHE", str(tmp_path / "cache"))
    return Store(tmp_path / "results", "cpu")


@pytest.fixture
def counter(tmp_path):
    return str(tmp_path / "computed.txt")


def test_a_job_is_computed_once_then_read(store, counter):
    job = jobs.Job("toy", value=3, counter=counter)
    assert jobs.state(job, store) == "missing"
    first = jobs.get(job, store, progress=False)
    assert list(first.tables["numbers"].x) == [3, 6] and first.values == {"value": 3}
    assert jobs.state(job, store) == "fresh"
    again = jobs.get(job, store, progress=False)
    assert again.digest == first.digest and toy_jobs.counts(counter) == [3]
    record = first.record
    assert record["spec"] == job.spec and record["key"] == job.key and record["precision"] == "fp32"
    assert {"cpu", "threads", "torch"} <= set(record["machine"]) and record["commit"] and record["seconds"] >= 0


def test_the_spec_fills_defaults_and_names_the_folder(store):
    assert jobs.Job("toy", value=2).spec == {"value": 2, "sleep": 0.0, "fail": False, "counter": ""}
    assert jobs.Job("toy", value=2) == jobs.Job("toy", value=2, sleep=0.0)
    assert jobs.Job("toy", value=2).spec_id != jobs.Job("toy", value=3).spec_id


def test_a_code_change_stales_the_job_and_a_prose_change_does_not(store, counter, monkeypatch):
    job = jobs.Job("toy", value=1, counter=counter)
    jobs.get(job, store, progress=False)
    real = jobs.keys.code_version
    monkeypatch.setattr(jobs.keys, "code_version", lambda code, exclude=(): real(code, exclude) + "changed")
    jobs.refresh_code()
    assert jobs.state(job, store) == "stale"
    jobs.get(job, store, progress=False)
    assert toy_jobs.counts(counter) == [1, 1] and jobs.state(job, store) == "fresh"
    assert store.entries() == [("toy", job.spec_id)]  # replaced in place: one result per spec
    monkeypatch.undo()
    jobs.refresh_code()


def test_a_corrupt_result_is_named_and_computed_again(store, counter, capsys):
    job = jobs.Job("toy", value=4, counter=counter)
    jobs.get(job, store, progress=False)
    path = store.folder("toy", job.spec_id) / "numbers.parquet"
    path.write_bytes(path.read_bytes()[:-20])
    assert jobs.state(job, store) == "corrupt"
    result = jobs.get(job, store, progress=False)
    assert "numbers.parquet" in capsys.readouterr().out
    assert list(result.tables["numbers"].x) == [4, 8] and toy_jobs.counts(counter) == [4, 4]


def test_a_failed_job_stops_only_what_needs_it_and_the_rest_resumes(store, counter):
    ok, bad = jobs.Job("toy", value=1, counter=counter), jobs.Job("toy", value=2, fail=True, counter=counter)
    child_of_bad = jobs.Job("toy-branch", value=5, counter=counter)
    with pytest.raises(sweep.SweepFailed, match="fails on purpose") as err:
        jobs.run([ok, bad], store, progress=False, log=lambda _: None)
    assert len(err.value.failures) == 1
    assert jobs.state(ok, store) == "fresh" and jobs.state(bad, store) == "missing"
    steps = jobs.run([ok, child_of_bad], store, progress=False, log=lambda _: None)  # resumes: `ok` is not computed again
    assert [s.state for s in steps] == ["fresh", "missing", "missing"]
    assert toy_jobs.counts(counter) == [1, 2, 5, 5]  # ok once, bad once (failed), base of 5, branch of 5


def test_a_dependency_is_computed_first_and_its_key_feeds_the_dependent(store, counter):
    branch = jobs.Job("toy-branch", value=2, counter=counter)
    steps = jobs.plan([branch], store)
    assert [s.job.experiment for s in steps] == ["toy", "toy-branch"] and [s.depth for s in steps] == [0, 1]
    result = jobs.get(branch, store, progress=False)
    assert float(result.tables["sums"].total[0]) == 2 + 4 + 2.0  # base's table and base's weights
    base = branch.needs()["base"]
    assert result.record["inputs"]["base"]["key"] == base.key
    assert jobs.state(base, store) == jobs.state(branch, store) == "fresh"


def test_missing_weights_of_a_dependency_are_recomputed(store, counter, tmp_path):
    import shutil

    branch = jobs.Job("toy-branch", value=2, counter=counter)
    jobs.get(branch.needs()["base"], store, progress=False)
    shutil.rmtree(jobs.weights_dir(branch.needs()["base"].key))  # another machine: results committed, weights not
    logged = []
    jobs.get(branch, store, progress=False, log=logged.append)
    assert any("recomputing" in m for m in logged) and not any("differ" in m for m in logged)
    assert toy_jobs.counts(counter) == [2, 2, 2]  # base, base again for its weights, branch


def test_the_plan_says_what_will_be_computed(store, counter):
    jobs.get(jobs.Job("toy", value=1, counter=counter), store, progress=False)
    text = jobs.describe(jobs.plan([jobs.Job("toy", value=1, counter=counter), jobs.Job("toy", value=7, counter=counter)], store))
    assert text.startswith("2 jobs: 1 fresh, 1 missing; to compute: 1, about 0 min")
    assert "value=7" in text and "value=1," not in text


def test_bad_input_fails_before_any_work(store, counter, tmp_path):
    with pytest.raises(checks.BadInput, match="no experiment named 'nope'.*toy"):
        jobs.Job("nope")
    with pytest.raises(checks.BadInput, match=r"no parameter\(s\) \['valeu'\].*value"):
        jobs.Job("toy", valeu=1)
    with pytest.raises(checks.BadInput, match="value must be an integer"):
        jobs.Job("toy", value=-1)
    with pytest.raises(checks.BadInput, match="unknown engine|engine must be"):
        jobs.run([jobs.Job("toy", counter=counter)], store, engine="threads", progress=False)
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(StoreError, match="not writable"):
        jobs.run([jobs.Job("toy", counter=counter)], Store(blocker / "results"), progress=False, log=lambda _: None)
    assert toy_jobs.counts(counter) == []


def test_two_runs_on_one_store_compute_each_job_once(store, counter, tmp_path):
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})
        import toy_jobs
        from mtllib.experiments import jobs
        from mtllib.store.results import Store
        store = Store({str(store.root)!r}, "cpu")
        todo = [jobs.Job("toy", value=v, sleep=0.5, counter={counter!r}) for v in (1, 2, 3)]
        jobs.run(todo, store, progress=False, log=lambda _: None)
        print(sorted(jobs.get(j, store, progress=False).digest for j in todo))
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs) and outs[0] == outs[1]
    assert sorted(toy_jobs.counts(counter)) == [1, 2, 3]  # each job computed once, by one of the two
    assert all(jobs.state(jobs.Job("toy", value=v, sleep=0.5, counter=counter), store) == "fresh" for v in (1, 2, 3))


def test_jobs_fan_out_over_worker_processes(store, counter):
    todo = [jobs.Job("toy", value=v, counter=counter) for v in (1, 2)]
    jobs.run(todo, store, devices=["cpu", "cpu"], engine="processes", progress=False, log=lambda _: None)
    assert sorted(toy_jobs.counts(counter)) == [1, 2] and all(jobs.state(j, store) == "fresh" for j in todo)


def test_a_killed_run_resumes_where_it_stopped(store, counter):
    import signal
    import time

    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})
        import toy_jobs
        from mtllib.experiments import jobs
        from mtllib.store.results import Store
        todo = [jobs.Job("toy", value=v, sleep=1.0, counter={counter!r}) for v in (1, 2, 3, 4)]
        jobs.run(todo, Store({str(store.root)!r}, "cpu"), progress=False, log=lambda _: None)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script])
    todo = [jobs.Job("toy", value=v, sleep=1.0, counter=counter) for v in (1, 2, 3, 4)]
    deadline = time.time() + 60
    while time.time() < deadline and sum(jobs.state(j, store) == "fresh" for j in todo) < 2:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done = [j.spec["value"] for j in todo if jobs.state(j, store) == "fresh"]
    assert 2 <= len(done) < 4 and all(jobs.state(j, store) in ("fresh", "missing") for j in todo)  # nothing torn
    before = toy_jobs.counts(counter)
    steps = jobs.run(todo, store, progress=False, log=lambda _: None)
    assert [s.state for s in steps] == ["fresh" if v in done else "missing" for v in (1, 2, 3, 4)]
    assert sorted(toy_jobs.counts(counter)[len(before):]) == [v for v in (1, 2, 3, 4) if v not in done]  # only the rest
    assert all(jobs.state(j, store) == "fresh" for j in todo)
    leftovers = [p.name for p in store.base.joinpath("toy").iterdir() if p.name.startswith(".")]
    assert leftovers == []


def test_plans_scale_the_stored_run_times_of_the_same_experiment(store, counter, monkeypatch):
    monkeypatch.setitem(jobs.REGISTRY, "toy", jobs.dataclasses.replace(toy_jobs.BASE, work=lambda spec: spec["value"]))
    assert jobs.plan([jobs.Job("toy", value=4)], store)[0].minutes == 0.5  # nothing stored: the experiment's own estimate
    first = jobs.get(jobs.Job("toy", value=2, sleep=0.3, counter=counter), store, progress=False)
    per_unit = first.record["seconds"] / 2
    (step,) = jobs.plan([jobs.Job("toy", value=6)], store)
    assert step.minutes == pytest.approx(6 * per_unit / 60)

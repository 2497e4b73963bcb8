"""Pages name the stored results they read; `make results` computes them and `ONLY` picks some (a throw-away
project with the toy experiments)."""

import json
from pathlib import Path

import pytest
import toy_jobs

from mtllib import checks
from mtllib.book import page_jobs
from mtllib.book import runner as book
from mtllib.experiments import jobs
from mtllib.store.results import Store
from tiny import write_notebook

TESTS = Path(__file__).resolve().parents[1]


@pytest.fixture
def project(tmp_path, monkeypatch):
    counter = str(tmp_path / "computed.txt")
    (tmp_path / "notebooks" / "params").mkdir(parents=True)
    read = (f"import sys; sys.path.insert(0, {str(TESTS)!r})\nimport toy_jobs\nfrom mtllib.experiments import jobs\n"
            f"from mtllib.store.results import Store\n"
            f"result = jobs.get(jobs.Job('toy', value=x, counter={counter!r}), Store(profile='cpu'), progress=False)\n"
            "print('sum', int(result.tables['numbers'].x.sum()))")
    write_notebook(tmp_path / "notebooks" / "alpha.ipynb", "x = 1", read)
    write_notebook(tmp_path / "notebooks" / "beta.ipynb", "x = 1", read)
    (tmp_path / "notebooks" / "params" / "cpu.yml").write_text("alpha:\n  x: 21\nbeta:\n  x: 21\n")
    monkeypatch.setenv("MTLLIB_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("MTLLIB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(page_jobs, "DECLARED", {
        "alpha": lambda p: [jobs.Job("toy", value=p["x"], counter=counter)],
        "beta": lambda p: [jobs.Job("toy", value=p["x"], counter=counter), jobs.Job("toy-branch", value=p["x"] + 1, counter=counter)],
    })
    project = book.Project(root=tmp_path)
    project.counter = counter
    return project


def test_a_profile_s_jobs_come_from_its_pages_parameters(project):
    by_page = page_jobs.profile_jobs(project, "cpu")
    assert [j.spec["value"] for j in by_page["alpha"]] == [21]  # the profile's value, not the notebook's default
    assert by_page["alpha"][0] == by_page["beta"][0]  # two pages, one job
    assert len(page_jobs.select(by_page, [])) == 2


def test_only_picks_by_page_experiment_or_job_and_refuses_names_that_match_nothing(project):
    by_page = page_jobs.profile_jobs(project, "cpu")
    branch = by_page["beta"][1]
    assert page_jobs.select(by_page, ["alpha"]) == by_page["alpha"]
    assert page_jobs.select(by_page, ["toy-branch"]) == [branch] == page_jobs.select(by_page, [branch.name]) == page_jobs.select(by_page, [branch.spec_id])
    with pytest.raises(checks.BadInput, match=r"ONLY names nothing for \['gamma'\].*alpha, beta.*toy"):
        page_jobs.select(by_page, ["alpha", "gamma"])


def test_results_then_status_then_a_page_that_reads_another_page_s_result(project, capsys):
    assert page_jobs.main(["run", "--profile", "cpu", "--only", "nothing-here"], project=project) == 2
    assert "ONLY names nothing" in capsys.readouterr().err and toy_jobs.counts(project.counter) == []
    assert page_jobs.main(["plan", "--profile", "cpu"], project=project) == 0
    assert "3 jobs: 3 missing; to compute: 3" in capsys.readouterr().out
    assert page_jobs.main(["run", "--profile", "cpu", "--only", "alpha"], project=project) == 0
    assert toy_jobs.counts(project.counter) == [21]
    page_jobs.main(["status", "--profile", "cpu"], project=project)
    out = capsys.readouterr().out
    assert "fresh    alpha: 1 jobs (1 fresh)" in out and "to run   beta: 2 jobs (1 fresh, 1 missing)" in out
    book.run(project, "cpu", ["beta"], log=lambda m: None)  # beta reads the result alpha's job stored
    text = json.dumps(json.loads(project.executed("beta").read_text())["cells"])
    assert "sum 63" in text and toy_jobs.counts(project.counter) == [21]  # read, not computed again
    assert page_jobs.main(["run", "--profile", "cpu"], project=project) == 0  # the rest: base of 22 and its branch
    assert toy_jobs.counts(project.counter) == [21, 22, 22]
    store = Store(profile="cpu")
    assert all(jobs.state(j, store) == "fresh" for j in page_jobs.select(page_jobs.profile_jobs(project, "cpu"), []))


def test_an_unknown_profile_is_a_clear_error(project, capsys):
    assert page_jobs.main(["status", "--profile", "gpu-farm"], project=project) == 2
    assert "unknown profile 'gpu-farm'" in capsys.readouterr().err


def test_the_book_declares_chapter_01_s_surface_baselines():
    by_page = page_jobs.profile_jobs(book.Project(), "cpu")
    tasks = {j.spec["task"] for j in by_page["01_offline_model_and_data"]}
    assert {"bbc-entailment", "bbc-paraphrase", "bbc-lede"} <= tasks and "bbc-truecase" not in tasks

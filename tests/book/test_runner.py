"""The notebook runner: profiles, stale detection, atomic writes, error reporting (on a throw-away project)."""

import json

import nbformat
import pytest

from mtllib.book import runner as book
from tiny import write_notebook


_notebook = write_notebook


@pytest.fixture
def project(tmp_path):
    (tmp_path / "notebooks" / "params").mkdir(parents=True)
    _notebook(tmp_path / "notebooks" / "alpha.ipynb", "x = 1", "print('x is', x * 2)")
    _notebook(tmp_path / "notebooks" / "beta.ipynb", "y = 'a'", "print(y)")
    (tmp_path / "notebooks" / "params" / "cpu.yml").write_text("alpha:\n  x: 21\nbeta: {}\n")
    (tmp_path / "notebooks" / "params" / "smoke.yml").write_text("alpha: {}\nbeta: {}\n")
    return book.Project(root=tmp_path)


def _outputs_text(path):
    nb = nbformat.read(path, as_version=4)
    return "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)


def test_run_executes_with_profile_parameters_and_records_them(project):
    assert [project.state(n, "cpu") for n in ("alpha", "beta")] == ["missing", "missing"]
    book.run(project, "cpu", [], log=lambda m: None)
    out = project.executed("alpha")
    assert "x is 42" in _outputs_text(out)
    record = json.loads(out.read_text())["metadata"]["mtllib"]
    assert record["profile"] == "cpu" and record["parameters"] == {"x": 21}
    assert record["run_time_s"] > 0 and record["commit"] and record["executed_at"].endswith("UTC")
    nb = nbformat.read(out, as_version=4)
    assert book.RUN_RECORD_TAG in nb.cells[1].metadata["tags"]
    assert "profile **cpu**" in nb.cells[1].source and "`x=21`" in nb.cells[1].source
    assert [project.state(n, "cpu") for n in ("alpha", "beta")] == ["fresh", "fresh"]
    assert project.state("alpha", "smoke") == "stale"  # executed with other parameters


def test_changes_to_source_or_parameters_make_a_copy_stale(project):
    book.run(project, "cpu", ["alpha"], log=lambda m: None)
    assert project.state("alpha", "cpu") == "fresh"
    (project.params_dir / "cpu.yml").write_text("alpha:\n  x: 22\nbeta: {}\n")
    project._profiles.clear()
    assert project.state("alpha", "cpu") == "stale"
    (project.params_dir / "cpu.yml").write_text("alpha:\n  x: 21\nbeta: {}\n")
    project._profiles.clear()
    assert project.state("alpha", "cpu") == "fresh"
    _notebook(project.source("alpha"), "x = 1", "print('x is', x * 3)")
    assert project.state("alpha", "cpu") == "stale"


# the import scan sees this import; the notebook never runs it (the throw-away library is not importable)
USES_LIB = "print('x is', x * 2)\nif False:\n    from mtllib.training import m"


def _library(tmp_path):
    lib = tmp_path / "lib"
    for sub in ("data", "training"):
        (lib / sub).mkdir(parents=True)
        (lib / sub / "__init__.py").write_text("")
    (lib / "__init__.py").write_text("")
    (lib / "data" / "d.py").write_text("D = 1\n")
    (lib / "training" / "m.py").write_text("from mtllib.data.d import D\nA = 1\n")
    return lib


def test_the_hash_covers_the_library_modules_a_notebook_imports_transitively(project, tmp_path):
    lib = _library(tmp_path)
    project.library_dir = lib
    _notebook(project.source("alpha"), "x = 1", USES_LIB)
    assert project.library_modules("alpha") == ["mtllib.training", "mtllib.training.m"]
    before = project.source_hash("alpha", {})
    (lib / "data" / "d.py").write_text("D = 2\n")  # imported by the imported module: stale
    assert project.source_hash("alpha", {}) != before
    before = project.source_hash("alpha", {})
    (lib / "data" / "other.py").write_text("B = 1\n")  # imported by nothing the notebook reaches: fresh
    assert project.source_hash("alpha", {}) == before
    beta_before = project.source_hash("beta", {})
    (lib / "training" / "m.py").write_text("A = 2\n")
    assert project.source_hash("alpha", {}) != before
    assert project.source_hash("beta", {}) == beta_before  # beta imports no library module


def test_the_parameter_rules_are_not_in_the_hash(project, tmp_path):
    """A notebook's parameter rules decide whether it runs, not what it computes: editing them (say, adding
    another chapter's) leaves executed copies fresh; the modules the notebook reaches otherwise still count."""
    lib = _library(tmp_path)
    (lib / "book").mkdir()
    (lib / "book" / "__init__.py").write_text("")
    (lib / "book" / "params.py").write_text("from mtllib.data.d import D\nRULES = {}\n")
    project.library_dir = lib
    _notebook(project.source("alpha"), "x = 1", USES_LIB + "\n    from mtllib.book.params import RULES")
    assert "mtllib.book.params" in project.library_modules("alpha")
    before = project.source_hash("alpha", {})
    (lib / "book" / "params.py").write_text("from mtllib.data.d import D\nRULES = {'another': {}}\n")
    assert project.source_hash("alpha", {}) == before
    (lib / "data" / "d.py").write_text("D = 2\n")  # reached through the training module too: stale
    assert project.source_hash("alpha", {}) != before


def test_the_parameter_rules_stay_out_of_the_hash_when_reached_through_another_module(project, tmp_path):
    """Chapters import their rules through a shared opening (chapter_run, training_run): editing the rules still
    leaves their executed copies fresh."""
    lib = _library(tmp_path)
    (lib / "book").mkdir()
    (lib / "book" / "__init__.py").write_text("")
    (lib / "book" / "params.py").write_text("RULES = {}\n")
    (lib / "book" / "opening.py").write_text("from mtllib.book.params import RULES\nfrom mtllib.data.d import D\n")
    project.library_dir = lib
    _notebook(project.source("alpha"), "x = 1", USES_LIB + "\n    from mtllib.book.opening import RULES")
    before = project.source_hash("alpha", {})
    (lib / "book" / "params.py").write_text("RULES = {'another': {}}\n")
    assert project.source_hash("alpha", {}) == before
    (lib / "book" / "opening.py").write_text("from mtllib.book.params import RULES\nfrom mtllib.data.d import D\nX = 1\n")
    assert project.source_hash("alpha", {}) != before


def test_the_real_data_chapter_does_not_depend_on_training_code():
    """Touching the IAT code leaves the data chapter fresh (its stored results' digests stand for the code that
    computed them); touching the BBC loader makes it stale."""

    real = book.Project()
    files = {p.relative_to(real.library_dir).as_posix() for p in real.hashed_files("01_offline_model_and_data")}
    assert "training/iat.py" not in files and "training/trainer.py" not in files and "experiments/multitask.py" not in files
    assert {"data/offline.py", "data/corpora.py", "data/assets.py", "book/surface_view.py"} <= files
    chapter3 = {p.relative_to(real.library_dir).as_posix() for p in real.hashed_files("03_multitask_iap")}
    assert {"training/iat.py", "data/offline.py", "analysis/importance.py"} <= chapter3


def _copy_with_record(project, name, record):
    """An executed copy holding only a run record, as if the runner had written it (no kernel started)."""
    project.book_dir.mkdir(parents=True, exist_ok=True)
    project.executed(name).write_text(json.dumps({"cells": [], "metadata": {"mtllib": record}, "nbformat": 4, "nbformat_minor": 5}))


def test_state_compares_the_stored_hash_with_what_would_run_now(project, tmp_path):
    assert project.state("alpha", "cpu") == "missing"
    _copy_with_record(project, "alpha", {"source_hash": project.source_hash("alpha", {"x": 21})})
    assert project.state("alpha", "cpu") == "fresh"
    assert project.state("alpha", "smoke") == "stale"  # the smoke profile gives alpha no parameters
    _copy_with_record(project, "alpha", {"source_hash": project.source_hash("alpha", {})})
    assert (project.state("alpha", "smoke"), project.state("alpha", "cpu")) == ("fresh", "stale")
    for record in ({}, {"source_hash": None}, {"commit": "abc"}):
        _copy_with_record(project, "alpha", record)
        assert project.state("alpha", "smoke") == "stale"
    project.executed("alpha").write_text(json.dumps({"cells": [], "metadata": {}}))
    assert project.state("alpha", "smoke") == "stale"  # never executed by the runner


@pytest.mark.parametrize("content", [b"\x89PNG\r\n\x1a\n\xff\xfe", b'{"cells": [], "metada', b'{"metadata": "x"}', b"[1, 2]"])
def test_a_copy_that_cannot_be_read_is_stale_without_running_anything(project, content):
    _copy_with_record(project, "alpha", {"source_hash": project.source_hash("alpha", {"x": 21})})
    assert project.state("alpha", "cpu") == "fresh"
    project.executed("alpha").write_bytes(content)
    assert project.state("alpha", "cpu") == "stale"


def test_a_cell_source_as_one_string_hashes_as_the_same_text_in_lines(project):
    """nbformat allows either form; a notebook re-saved by another tool must not turn stale (or fresh) by it."""
    _notebook(project.source("alpha"), "x = 1", "a = 1\nb = 2\nprint(a + b)")  # cells of several lines
    raw = json.loads(project.source("alpha").read_text())
    assert any(isinstance(c["source"], list) and len(c["source"]) > 1 for c in raw["cells"])
    as_lines = project.source_hash("alpha", {"x": 21})
    for cell in raw["cells"]:
        cell["source"] = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
    project.source("alpha").write_text(json.dumps(raw))
    assert project.source_hash("alpha", {"x": 21}) == as_lines
    for cell in raw["cells"]:
        text = cell["source"]
        cell["source"] = [line for line in text.splitlines(keepends=True)]
    project.source("alpha").write_text(json.dumps(raw))
    assert project.source_hash("alpha", {"x": 21}) == as_lines


def test_the_hash_covers_every_cell_its_kind_and_the_parameters(project):
    base = project.source_hash("alpha", {"x": 21})
    assert base == project.source_hash("alpha", {"x": 21}) and base != project.source_hash("alpha", {"x": 22})
    nb = nbformat.read(project.source("alpha"), as_version=4)
    variants = []
    for edit in ("title", "kind", "order"):
        changed = nbformat.read(project.source("alpha"), as_version=4)
        if edit == "title":
            changed.cells[0].source = "# Another title"  # prose counts: a chapter's text is part of the copy
        elif edit == "kind":
            changed.cells[0] = nbformat.v4.new_code_cell(changed.cells[0].source)
        else:
            changed.cells[1:] = changed.cells[:0:-1]
        nbformat.write(changed, project.source("alpha"))
        variants.append(project.source_hash("alpha", {"x": 21}))
        nbformat.write(nb, project.source("alpha"))
    assert len(set(variants)) == 3 and base not in variants
    assert project.source_hash("alpha", {"x": 21}) == base


def test_the_import_scan_reads_code_cells_only_and_skips_magics(project, tmp_path):
    _notebook(project.source("alpha"), "x = 1", "%matplotlib inline\n!ls\nimport mtllib.data.tasks", "from mtllib.analysis import stats as s",
              "if True:\n    %time y = 1")  # an indented magic too
    nb = nbformat.read(project.source("alpha"), as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell("```python\nimport mtllib.training.trainer\n```"))
    nbformat.write(nb, project.source("alpha"))
    assert project.library_modules("alpha") == ["mtllib.analysis", "mtllib.analysis.stats", "mtllib.data.tasks"]
    raw = json.loads(project.source("alpha").read_text())
    raw["cells"][2]["source"] = "import mtllib.data.kinds"  # nbformat allows a cell's source as one string, not a list
    project.source("alpha").write_text(json.dumps(raw))
    assert "mtllib.data.kinds" in project.library_modules("alpha")


def test_what_only_the_rules_module_imports_is_left_out_too(project, tmp_path):
    lib = _library(tmp_path)
    (lib / "book").mkdir()
    (lib / "book" / "__init__.py").write_text("")
    (lib / "book" / "params.py").write_text("from mtllib.data.d import D\n")
    project.library_dir = lib
    _notebook(project.source("alpha"), "x = 1", "if False:\n    from mtllib.book.params import RULES")
    before = project.source_hash("alpha", {})
    (lib / "data" / "d.py").write_text("D = 2\n")  # reached only through the rules: fresh
    assert project.source_hash("alpha", {}) == before


@pytest.mark.parametrize("content", [b"\x89PNG\r\n\x1a\n\xff\xfe", b'{"cells": [], "metada', b'{"metadata": "x"}', b"[1, 2]"])
def test_an_unreadable_executed_copy_is_stale(project, content):
    book.run(project, "cpu", ["alpha"], log=lambda m: None)
    assert project.state("alpha", "cpu") == "fresh"
    project.executed("alpha").write_bytes(content)
    assert project.state("alpha", "cpu") == "stale"
    book.run(project, "cpu", [], log=lambda m: None)  # and a plain run replaces it
    assert project.state("alpha", "cpu") == "fresh"


def test_missing_only_runs_missing_and_warns_about_stale(project):
    book.run(project, "cpu", ["alpha"], log=lambda m: None)
    _notebook(project.source("alpha"), "x = 1", "print('changed')")
    to_run, stale = book.select(project, "cpu", [], missing_only=True)
    assert (to_run, stale) == (["beta"], ["alpha"])
    messages = []
    book.run(project, "cpu", [], missing_only=True, log=messages.append)
    assert any("warning" in m and "alpha" in m and "stale" in m for m in messages)
    assert "changed" not in _outputs_text(project.executed("alpha"))  # not re-run
    assert book.select(project, "cpu", [], force=True)[0] == ["alpha", "beta"]


def test_leftovers_of_a_killed_run_are_removed(project):
    project.book_dir.mkdir(parents=True)
    leftover = project.book_dir / ".alpha.abc123.partial.ipynb"
    leftover.write_text("{half a notebook")
    book.run(project, "cpu", ["alpha"], log=lambda m: None)
    assert sorted(p.name for p in project.book_dir.iterdir()) == ["alpha.ipynb"]


def test_failing_notebook_reports_cell_and_error_and_keeps_previous_copy(project):
    book.run(project, "cpu", ["alpha"], log=lambda m: None)
    previous = project.executed("alpha").read_bytes()
    _notebook(project.source("alpha"), "x = 1", "raise ValueError('boom at x=%d' % x)")
    with pytest.raises(book.NotebookFailed) as err:
        book.run(project, "cpu", ["alpha"], log=lambda m: None)
    message = str(err.value)
    assert "'alpha'" in message and "cell 3" in message and "ValueError: boom at x=21" in message
    assert project.executed("alpha").read_bytes() == previous  # untouched
    assert sorted(p.name for p in project.book_dir.iterdir()) == ["alpha.ipynb"]  # no temporary file left


@pytest.mark.parametrize(
    "profile, names, match",
    [
        ("gpu", [], r"unknown profile 'gpu'; choose one of: cpu, smoke"),
        ("cpu", ["gamma"], r"unknown notebook\(s\) \['gamma'\]; notebooks are: alpha, beta"),
    ],
)
def test_bad_requests_fail_before_any_work(project, profile, names, match):
    with pytest.raises(book.RunnerError, match=match):
        book.run(project, profile, names, log=lambda m: None)
    assert not project.book_dir.exists()


def test_unknown_parameter_lists_the_notebook_parameters(project):
    (project.params_dir / "cpu.yml").write_text("alpha:\n  z: 3\nbeta: {}\n")
    with pytest.raises(book.RunnerError, match=r"'alpha' has no parameter\(s\) \['z'\]; its parameters are: x"):
        book.run(project, "cpu", [], log=lambda m: None)
    assert not project.book_dir.exists()


def test_profile_must_name_every_notebook(project):
    (project.params_dir / "cpu.yml").write_text("alpha: {}\n")
    with pytest.raises(book.RunnerError, match=r"no entry for notebook\(s\) \['beta'\]"):
        project.profile("cpu")


def test_cli_exit_codes(capsys):
    assert book.main(["status", "--profile", "nope"]) == 2
    assert "unknown profile 'nope'" in capsys.readouterr().err
    assert book.main(["run", "--profile", "cpu", "no_such_notebook"]) == 2


def test_run_record_hashes_what_ran_even_if_the_library_changes_meanwhile(project, tmp_path, monkeypatch):
    lib = _library(tmp_path)
    project.library_dir = lib
    _notebook(project.source("alpha"), "x = 1", USES_LIB)
    expected = project.source_hash("alpha", {"x": 21})
    import papermill

    original = papermill.execute_notebook

    def execute_and_edit_library(*args, **kwargs):
        result = original(*args, **kwargs)
        (lib / "training" / "m.py").write_text("A = 2\n")  # the library changes while the notebook runs
        return result

    monkeypatch.setattr(papermill, "execute_notebook", execute_and_edit_library)
    book.run(project, "cpu", ["alpha"], log=lambda m: None)
    assert json.loads(project.executed("alpha").read_text())["metadata"]["mtllib"]["source_hash"] == expected
    assert project.state("alpha", "cpu") == "stale"  # it ran with A = 1; the library now says A = 2


def test_a_chapter_that_reads_another_runs_after_it(project):
    _notebook(project.source("alpha"), "x = 1\nsource = None", "print('x is', x * 2)")
    (project.params_dir / "cpu.yml").write_text("alpha:\n  x: 21\n  source: beta\nbeta: {}\n")
    assert book.reads(project, "cpu", "alpha") == ["beta"] and book.reads(project, "cpu", "beta") == []
    assert book.in_reading_order(project, "cpu", ["alpha", "beta"]) == ["beta", "alpha"]
    assert book.in_reading_order(project, "cpu", ["alpha"]) == ["alpha"]  # beta not to run: nothing to wait for
    messages = []
    book.run(project, "cpu", [], log=messages.append)
    started = [m for m in messages if m.endswith("...")]
    assert "beta" in started[0] and "alpha" in started[1]
    # a list that names notebooks counts too, and a cycle falls back to the given order
    (project.params_dir / "cpu.yml").write_text("alpha:\n  x: 21\n  source: beta\nbeta:\n  y: [alpha]\n")
    _notebook(project.source("beta"), "y = []", "print(y)")
    project = book.Project(root=project.root)  # profiles are read once per project
    assert book.reads(project, "cpu", "beta") == ["alpha"]
    assert book.in_reading_order(project, "cpu", ["alpha", "beta"]) == ["alpha", "beta"]


def test_a_page_runs_another_pages_source_with_its_own_parameters(project):
    (project.notebooks_dir / "pages.yml").write_text("gamma: alpha\n")
    (project.params_dir / "cpu.yml").write_text("alpha:\n  x: 21\nbeta: {}\ngamma:\n  x: 5\n")
    (project.params_dir / "smoke.yml").write_text("alpha: {}\nbeta: {}\ngamma: {}\n")
    project = book.Project(root=project.root)
    assert project.notebook_names() == ["alpha", "beta", "gamma"] and project.pages() == {"gamma": "alpha"}
    assert project.source("gamma") == project.source("alpha") and project.source_name("gamma") == "alpha"
    assert project.state("gamma", "cpu") == "missing"
    book.run(project, "cpu", ["gamma"], log=lambda m: None)
    out = project.executed("gamma")
    assert out.name == "gamma.ipynb" and "x is 10" in _outputs_text(out) and not project.executed("alpha").exists()
    record = json.loads(out.read_text())["metadata"]["mtllib"]
    assert record["source"] == "notebooks/alpha.ipynb" and record["parameters"] == {"x": 5}
    assert "Source: `notebooks/alpha.ipynb`" in nbformat.read(out, as_version=4).cells[1].source
    assert project.state("gamma", "cpu") == "fresh"
    _notebook(project.source("alpha"), "x = 1", "print('x was', x)")  # the source changed: the page is stale
    assert book.Project(root=project.root).state("gamma", "cpu") == "stale"


@pytest.mark.parametrize("pages, match", [("gamma: delta\n", "made from 'delta', which is not a source notebook"),
                                          ("beta: alpha\n", "page 'beta' is a source notebook of its own"),
                                          ("[gamma]\n", "expected a mapping of page name -> source notebook name"),
                                          ("gamma: [alpha\n", "not valid YAML")])
def test_a_bad_pages_file_is_refused_before_any_work(project, pages, match):
    (project.notebooks_dir / "pages.yml").write_text(pages)
    with pytest.raises(book.RunnerError, match=match):
        book.select(book.Project(root=project.root), "cpu", [])
    assert not project.book_dir.exists() or not list(project.book_dir.glob("*.ipynb"))


def test_a_page_gets_its_own_labels_and_keeps_everything_else():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(":label: ex-07c-steps\n{ref}`x <fig-07c-gains>`; chapter 07c; ex-07cx-a"),
                                         nbformat.v4.new_code_cell("label = 'ex-07c-steps'")])
    book.relabel(nb, "07c_iat_glue_like", "07d_iat_glue_like_proportional")
    assert nb.cells[0].source == ":label: ex-07d-steps\n{ref}`x <fig-07d-gains>`; chapter 07c; ex-07cx-a"
    assert nb.cells[1].source == "label = 'ex-07c-steps'"  # code is what ran: untouched


def test_a_docstring_or_comment_edit_leaves_the_copy_fresh_and_a_code_edit_does_not(project, tmp_path):
    lib = _library(tmp_path)
    project.library_dir = lib
    _notebook(project.source("alpha"), "x = 1", USES_LIB)
    before = project.source_hash("alpha", {})
    (lib / "data" / "d.py").write_text('"""The data module, documented."""\n# D is one\nD = 1\n')
    assert project.source_hash("alpha", {}) == before
    (lib / "data" / "d.py").write_text('"""The data module, documented."""\nD = 1.0\n')
    assert project.source_hash("alpha", {}) != before


def test_a_page_s_hash_follows_the_stored_results_it_reads(project, tmp_path, monkeypatch):
    import toy_jobs  # noqa: F401  (registers the toy experiments)

    from mtllib.book import page_jobs
    from mtllib.experiments import jobs
    from mtllib.store.results import Store

    monkeypatch.setenv("MTLLIB_RESULTS", str(tmp_path / "results"))
    monkeypatch.setenv("MTLLIB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(page_jobs, "DECLARED", {"alpha": lambda p: [jobs.Job("toy", value=p["x"])]})
    missing = project.source_hash("alpha", {"x": 3})
    store = Store(profile="cpu")
    job = jobs.Job("toy", value=3)
    jobs.get(job, store, progress=False)
    stored = project.source_hash("alpha", {"x": 3})
    assert stored != missing and project.source_hash("beta", {}) == project.source_hash("beta", {})
    store.write(job.experiment, job.spec_id, store.record(job.experiment, job.spec_id), {"numbers": jobs.pd.DataFrame({"x": [0]})}, {})
    assert project.source_hash("alpha", {"x": 3}) not in (stored, missing)  # same key, other numbers: stale

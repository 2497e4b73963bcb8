"""Exercises of the kind "predict, then run": variants checked before any run, stored runs read back only while they match
the lab profile (on a throw-away project)."""

import json

import pytest

from mtllib import checks
from mtllib.book import exercises
from mtllib.book import runner as book
from tiny import write_notebook

GLUES = "from myst_nb import glue\nglue('double', f'{2 * x:.1f}', display=False)\nglue('items', [x, x], display=False)\nglue('word', name, display=False)"


READS = "from myst_nb import glue\nglue('stored', exercises_read_this, display=False)"  # fails if it runs: nothing defines the name


@pytest.fixture
def project(tmp_path):
    import nbformat

    (tmp_path / "notebooks" / "params").mkdir(parents=True)
    write_notebook(tmp_path / "notebooks" / "alpha.ipynb", "x = 1\nname = 'a'", GLUES, READS)
    nb = nbformat.read(tmp_path / "notebooks" / "alpha.ipynb", as_version=4)
    nb.cells[-1].metadata["tags"] = [exercises.READS_RUNS]  # the cell that reads stored runs: not part of a variant's run
    nbformat.write(nb, tmp_path / "notebooks" / "alpha.ipynb")
    write_notebook(tmp_path / "notebooks" / "beta.ipynb", "y = 1", "print(y)")
    (tmp_path / "notebooks" / "params" / "lab.yml").write_text("alpha:\n  x: 3\nbeta: {}\n")
    (tmp_path / exercises.EXERCISES_FILE).write_text("alpha:\n  bigger: {x: 5}\n  renamed: {name: b}\n")
    return book.Project(root=tmp_path)


def test_a_variant_is_the_lab_entry_with_its_changes(project):
    assert exercises.variants(project) == {"alpha": {"bigger": {"x": 5}, "renamed": {"name": "b"}}}
    assert exercises.parameters("alpha", "bigger", project) == {"x": 5}
    assert exercises.parameters("alpha", "renamed", project) == {"x": 3, "name": "b"}  # the lab's x stays
    with pytest.raises(checks.BadInput, match="no exercise variant 'smaller' of 'alpha'.*variants: alpha: bigger, renamed"):
        exercises.parameters("alpha", "smaller", project)


@pytest.mark.parametrize("text, message", [
    ("gamma:\n  v: {x: 1}\n", "'gamma' is not a chapter of the lab profile"),
    ("alpha:\n  v: {z: 1}\n", r"sets unknown parameter\(s\) \['z'\]; its parameters are: x, name"),
    ("alpha:\n  v: {}\n", "variant 'v' of 'alpha' changes no parameter"),
    ("alpha:\n  a/b: {x: 1}\n", "variant name 'a/b'"),
    ("alpha: {}\n", "must map variant names"),
    ("- alpha\n", "expected a mapping"),
])
def test_bad_exercise_files_are_refused_before_any_run(project, text, message):
    (project.root / exercises.EXERCISES_FILE).write_text(text)
    with pytest.raises(checks.BadInput, match=message):
        exercises.variants(project)
    assert not (project.root / exercises.RESULTS_DIR).exists()


def test_a_project_without_exercises_has_none(project):
    (project.root / exercises.EXERCISES_FILE).unlink()
    assert exercises.variants(project) == {}


def test_a_run_is_stored_and_read_back_while_it_matches_the_profile(project):
    record = exercises.run("alpha", "bigger", project, store=True)
    assert record["glued"] == {"double": "10.0", "items": [5, 5], "word": "a"}
    assert record["parameters"] == {"x": 5} and record["changes"] == {"x": 5} and record["profile"] == "lab"
    assert record["run_time_s"] > 0 and record["commit"]
    assert not project.book_dir.exists()  # the book's pages are never touched
    assert exercises.read("alpha", "bigger", project) == json.loads(exercises.stored_path("alpha", "bigger", project).read_text()) == record
    (project.params_dir / "lab.yml").write_text("alpha:\n  x: 3\n  name: c\nbeta: {}\n")  # the lab entry moved on
    project._profiles.clear()
    with pytest.raises(checks.BadInput, match="ran with other parameters.*re-run it"):
        exercises.read("alpha", "bigger", project)
    with pytest.raises(checks.BadInput, match="no stored run of exercise variant 'renamed'.*--store"):
        exercises.read("alpha", "renamed", project)


def test_a_run_without_store_writes_nothing(project):
    record = exercises.run("alpha", "renamed", project)
    assert record["glued"]["word"] == "b" and record["glued"]["double"] == "6.0"
    assert not (project.root / exercises.RESULTS_DIR).exists()


def test_glue_runs_glues_each_key_of_each_stored_run_under_its_variant(project):
    bigger = exercises.run("alpha", "bigger", project, store=True)
    renamed = exercises.run("alpha", "renamed", project, store=True)
    glued = []
    record = lambda name, value, display: glued.append((name, value, display))
    records = exercises.glue_runs("alpha", {"double": "twice", "word": "word"}, project=project, glue=record)
    assert records == {"bigger": bigger, "renamed": renamed}  # every variant of the chapter, in the file's order
    assert glued == [("bigger_twice", "10.0", False), ("bigger_word", "a", False),
                     ("renamed_twice", "6.0", False), ("renamed_word", "b", False)]
    glued.clear()
    assert list(exercises.glue_runs("alpha", ["items"], names=["renamed"], project=project, glue=record)) == ["renamed"]
    assert glued == [("renamed_items", [3, 3], False)]
    records["bigger"]["run_time_s"], records["renamed"]["run_time_s"] = 168.0, 33.0
    assert exercises.run_minutes(records) == "2.8 / 0.6"


def test_glue_runs_checks_every_run_and_key_before_gluing_any(project):
    exercises.run("alpha", "bigger", project, store=True)
    exercises.run("alpha", "renamed", project, store=True)
    glued = []
    record = lambda name, value, display: glued.append(name)
    with pytest.raises(checks.BadInput, match=r"alpha\.renamed\.json glued no absent: .*re-run it"):
        exercises.glue_runs("alpha", ["word", "absent"], names=["bigger", "renamed"][::-1], project=project, glue=record)
    exercises.stored_path("alpha", "renamed", project).unlink()
    with pytest.raises(checks.BadInput, match="no stored run of exercise variant 'renamed'"):
        exercises.glue_runs("alpha", ["word"], project=project, glue=record)
    with pytest.raises(checks.BadInput, match="'beta' has no exercise variants"):
        exercises.glue_runs("beta", ["word"], project=project, glue=record)
    assert glued == []


def test_the_command_line_checks_every_request_before_the_first_run(project, monkeypatch, capsys):
    monkeypatch.setattr(exercises, "REPO_ROOT", project.root)
    ran = []
    monkeypatch.setattr(exercises, "run", lambda *a, **k: ran.append(a) or {"run_time_s": 1.0, "glued": {}})
    assert exercises.main(["run", "alpha", "bigger", "nothing"]) == 2
    assert "no exercise variant 'nothing'" in capsys.readouterr().err and ran == []
    assert exercises.main(["run", "beta"]) == 2 and "'beta' has no exercise variants" in capsys.readouterr().err
    assert exercises.main(["run", "alpha"]) == 0 and [a[:2] for a in ran] == [("alpha", "bigger"), ("alpha", "renamed")]
    assert exercises.main(["list"]) == 0 and "alpha bigger: x=5" in capsys.readouterr().out


def test_every_variant_of_the_book_has_a_stored_run_that_matches_the_lab_profile():
    """The book's own exercises (notebooks/lab_exercises.yml): a chapter whose solution reads a variant's stored run
    fails to execute when the run is missing or was made with other parameters; this says so without executing it."""
    book_variants = exercises.variants()
    assert book_variants, "the book has predict-then-run exercises"
    for chapter, variants in book_variants.items():
        for variant in variants:
            record = exercises.read(chapter, variant)  # BadInput when missing or made with other parameters
            assert (record["chapter"], record["variant"], record["profile"]) == (chapter, variant, "lab")
            assert record["glued"], f"the stored run of {chapter} {variant} glued nothing"

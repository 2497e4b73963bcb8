"""Code versions: prose in the source (docstrings, comments, layout) changes no key; code does."""

import pytest

from mtllib.store.keys import code_version, normalized_source

CODE = '''"""Module docstring."""
import math


def f(x, scale=2):
    """Doubles x."""
    # a comment
    return math.floor(x * scale)


class C:
    """Only a docstring."""
'''


@pytest.mark.parametrize("edited", [
    CODE.replace('"""Doubles x."""', '"""Doubles x, and more words.\n\n    A second paragraph."""'),
    CODE.replace("# a comment", "# another comment\n    # and one more"),
    CODE.replace('"""Module docstring."""\n', ""),
    CODE.replace("return math.floor(x * scale)", "return math.floor(\n        x * scale\n    )  # wrapped"),
    CODE + "\n\n\n# trailing comment\n",
    CODE.replace('    """Only a docstring."""', '    """Other words."""'),
])
def test_prose_edits_leave_the_normalized_source_equal(edited):
    assert normalized_source(edited) == normalized_source(CODE)


@pytest.mark.parametrize("edited", [
    CODE.replace("scale=2", "scale=3"),
    CODE.replace("math.floor", "math.ceil"),
    CODE.replace("return math.floor(x * scale)", "y = 1\n    return math.floor(x * scale)"),
    CODE.replace('    """Only a docstring."""', '    """Only a docstring."""\n    size = 1'),
    CODE.replace("def f(x, scale=2)", "def g(x, scale=2)"),
])
def test_code_edits_change_the_normalized_source(edited):
    assert normalized_source(edited) != normalized_source(CODE)


def test_a_string_that_is_a_value_is_code():
    assert normalized_source('X = "a"\n') != normalized_source('X = "b"\n')


def _package(root, files: dict):
    from tiny import write_files

    return write_files(root / "mtllib", files)


def test_code_version_follows_imports_and_ignores_docstrings(tmp_path):
    pkg = _package(tmp_path, {"__init__.py": "", "training/__init__.py": "", "training/t.py": "from mtllib.data import d\nX = d.D\n",
                              "data/__init__.py": "", "data/d.py": '"""Data."""\nD = 1\n', "other.py": "Y = 1\n"})
    before = code_version(["mtllib.training.t"], package_dir=pkg)
    (pkg / "data" / "d.py").write_text('"""Data, documented at length."""\n# why D is 1\nD = 1\n')
    (pkg / "other.py").write_text("Y = 2\n")  # not imported by t
    assert code_version(["mtllib.training.t"], package_dir=pkg) == before
    (pkg / "data" / "d.py").write_text('"""Data."""\nD = 2\n')  # imported by t: its code counts
    assert code_version(["mtllib.training.t"], package_dir=pkg) != before
    assert code_version(["mtllib.training.t"], exclude=["mtllib.data.d"], package_dir=pkg) != code_version(["mtllib.training.t"], package_dir=pkg)


def test_the_real_trainer_keeps_its_version_when_a_docstring_line_is_appended(tmp_path):
    import shutil

    from mtllib.fingerprint import PACKAGE_DIR

    copy = tmp_path / "mtllib"
    shutil.copytree(PACKAGE_DIR, copy, ignore=shutil.ignore_patterns("__pycache__"))
    modules = ["mtllib.experiments.multitask"]
    before = code_version(modules, package_dir=copy)
    trainer = copy / "training" / "trainer.py"
    text = trainer.read_text()
    doc_end = text.index('"""', 3)
    trainer.write_text(text[:doc_end] + "\nOne more line of documentation.\n" + text[doc_end:])
    assert code_version(modules, package_dir=copy) == before
    trainer.write_text(text.replace("lr: float = 2e-5", "lr: float = 3e-5"))
    assert code_version(modules, package_dir=copy) != before

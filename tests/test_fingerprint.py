"""The one fingerprint function: canonical digests and the transitive import scan."""

from dataclasses import dataclass

from mtllib.fingerprint import digest, imported_modules, module_closure, source_digest


@dataclass
class _Config:
    lr: float = 1e-4
    betas: tuple = (0.9, 0.999)


def test_digest_is_canonical_and_sensitive():
    assert digest({"a": 1, "b": [1, 2]}) == digest({"b": (1, 2), "a": 1})  # key order, tuple vs list
    assert digest(_Config()) == digest({"lr": 1e-4, "betas": [0.9, 0.999]})
    assert digest(_Config()) != digest(_Config(lr=2e-4))
    assert digest(1) != digest("1") and digest([1, 2]) != digest([2, 1])


def test_imported_modules_resolves_absolute_relative_and_function_level_imports():
    source = "import os\nfrom mtllib.data import tasks\nfrom .gates import HeadGates\n\ndef f():\n    import mtllib.runtime\n"
    found = imported_modules(source, current="mtllib.modeling.multitask")
    assert {"mtllib.data", "mtllib.data.tasks", "mtllib.modeling.gates", "mtllib.runtime"} <= found
    assert not any(m.startswith("os") for m in found)


def test_source_digest_follows_imports_transitively(tmp_path):
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "__init__.py").write_text("")
    (lib / "a.py").write_text("from mtllib.b import X\n")
    (lib / "b.py").write_text("X = 1\n")
    (lib / "c.py").write_text("Y = 1\n")
    assert [p.name for p in module_closure(["mtllib.a"], lib)] == ["__init__.py", "a.py", "b.py"]
    before = source_digest(["mtllib.a"], lib)
    (lib / "c.py").write_text("Y = 2\n")
    assert source_digest(["mtllib.a"], lib) == before
    (lib / "b.py").write_text("X = 2\n")
    assert source_digest(["mtllib.a"], lib) != before


def test_digest_reads_dataclasses_nested_values_and_other_objects_as_text():
    from pathlib import Path

    from mtllib.fingerprint import _plain

    assert _plain({1: (_Config(lr=0.5), None, True)}) == {"1": [{"lr": 0.5, "betas": [0.9, 0.999]}, None, True]}
    assert _plain(Path("a/b")) == "a/b" and _plain(_Config) == str(_Config)  # a class is not a dataclass instance
    assert digest({"a": {"b": 1}}) != digest({"a": {"b": 2}}) and digest({"a": 1}) != digest({"b": 1})
    assert digest(True) != digest(1) and digest(None) != digest("None") and digest(1.0) != digest(1.5)
    assert len(digest()) == 64 and digest() == digest()


def _lib(tmp_path, files: dict) -> "Path":
    from tiny import write_files

    return write_files(tmp_path / "lib", files)


def test_module_file_finds_modules_and_packages_of_the_library_only(tmp_path):
    from mtllib.fingerprint import module_file

    lib = _lib(tmp_path, {"__init__.py": "", "pkg/__init__.py": "", "pkg/mod.py": "", "top.py": ""})
    assert module_file("mtllib.pkg.mod", lib) == lib / "pkg" / "mod.py"
    assert module_file("mtllib.pkg", lib) == lib / "pkg" / "__init__.py"
    assert module_file("mtllib.top", lib) == lib / "top.py"
    assert module_file("mtllib", lib) == lib / "__init__.py"
    assert module_file("mtllib.pkg.nothing", lib) is None and module_file("numpy.pkg", lib) is None
    assert module_file("other.top", lib) is None  # a file of that name, but not under the package's name


def test_relative_imports_climb_as_many_packages_as_dots():
    found = imported_modules("from ..data import tasks\nfrom . import gates\nfrom .. import runtime\n", current="mtllib.modeling.adapters.pals")
    assert found == {"mtllib.modeling.data", "mtllib.modeling.data.tasks", "mtllib.modeling.adapters", "mtllib.modeling.adapters.gates",
                     "mtllib.modeling", "mtllib.modeling.runtime"}
    assert imported_modules("from .x import y\n") == set()  # no current module: a relative import resolves to nothing of ours
    assert imported_modules("import mtllib.data.tasks as t, numpy\n") == {"mtllib.data.tasks"}


def test_the_closure_holds_the_packages_above_and_leaves_out_what_only_an_excluded_module_imports(tmp_path):
    lib = _lib(tmp_path, {"__init__.py": "", "a/__init__.py": "from mtllib.c import Z\n", "a/m.py": "from mtllib.b import X\n",
                          "b.py": "from mtllib.d import W\nX = 1\n", "c.py": "Z = 1\n", "d.py": "W = 1\n", "e.py": ""})
    names = lambda paths: sorted(p.relative_to(lib).as_posix() for p in paths)  # noqa: E731
    assert names(module_closure(["mtllib.a.m"], lib)) == ["__init__.py", "a/__init__.py", "a/m.py", "b.py", "c.py", "d.py"]
    assert names(module_closure(["mtllib.a.m"], lib, exclude=["mtllib.b"])) == ["__init__.py", "a/__init__.py", "a/m.py", "c.py"]
    assert names(module_closure(["mtllib.e", "numpy", "mtllib.missing"], lib)) == ["__init__.py", "e.py"]
    before = source_digest(["mtllib.a.m"], lib, exclude=["mtllib.b"])
    (lib / "d.py").write_text("W = 2\n")  # only the excluded module imports it
    assert source_digest(["mtllib.a.m"], lib, exclude=["mtllib.b"]) == before
    assert source_digest(["mtllib.a.m"], lib) != source_digest(["mtllib.a.m"], lib, exclude=["mtllib.b"])


def test_the_source_digest_sees_a_file_moved_with_the_same_content(tmp_path):
    one = _lib(tmp_path / "one", {"__init__.py": "", "a.py": "import mtllib.b\n", "b.py": "X = 1\n"})
    two = _lib(tmp_path / "two", {"__init__.py": "", "a.py": "import mtllib.b\n", "b/__init__.py": "X = 1\n"})
    assert source_digest(["mtllib.a"], one) != source_digest(["mtllib.a"], two)
    three = _lib(tmp_path / "three", {"__init__.py": "", "a.py": "import mtllib.b\n", "b.py": "X = 1\n"})
    assert source_digest(["mtllib.a"], one) == source_digest(["mtllib.a"], three)  # the paths are relative to the package


def test_tensor_digest_covers_names_dtypes_shapes_and_values():
    import torch

    from mtllib.fingerprint import tensor_digest

    base = {"w": torch.arange(6, dtype=torch.float32).reshape(2, 3), "b": torch.zeros(3)}
    same = {"b": torch.zeros(3), "w": torch.arange(6, dtype=torch.float32).reshape(2, 3)}
    assert tensor_digest(base) == tensor_digest(same)  # key order does not matter
    changed = [{**base, "w": base["w"].reshape(3, 2)}, {**base, "w": base["w"].double()}, {"v": base["w"], "b": base["b"]},
               {**base, "b": torch.tensor([0.0, 0.0, 1e-7])}, {**base, "e": torch.zeros(0)}, {"w": base["w"]}]
    digests = {tensor_digest(s) for s in changed}
    assert len(digests) == len(changed) and tensor_digest(base) not in digests
    assert tensor_digest({"w": base["w"].t()}) == tensor_digest({"w": base["w"].t().contiguous()})  # values, not memory layout
    import hashlib

    h = hashlib.sha256()
    h.update(b"b|torch.float32|(3,)|" + bytes(12))
    assert tensor_digest({"b": torch.zeros(3)}) == h.hexdigest()  # the recipe in the docstring, written out


def test_dataset_digest_reads_the_selected_rows():
    """The rows after ``select``, in their order. The digest also covers the Arrow schema with the metadata that
    ``datasets`` keeps there (features and, after a transform, its fingerprint): the same rows reached by another
    route may digest differently, a cache miss but never a wrong hit."""
    from datasets import Dataset

    from mtllib.fingerprint import dataset_digest

    def full():
        return Dataset.from_dict({"x": [1, 2, 3, 4], "y": ["a", "b", "c", "d"]})

    assert dataset_digest(full().select([2, 0])) == dataset_digest(full().select([2, 0]))
    assert len({dataset_digest(full().select([2, 0])), dataset_digest(full().select([0, 2])), dataset_digest(full().select([2, 1])),
                dataset_digest(full())}) == 4
    assert dataset_digest(full()) == dataset_digest(full()) != dataset_digest(Dataset.from_dict({"x": [1, 2, 3, 5], "y": ["a", "b", "c", "d"]}))


def test_the_digest_is_sha256_of_compact_sorted_json_written_out():
    """The recipe in the docstring, written out: a different canonical text would re-key every cache."""
    import hashlib

    assert digest({"b": 1, "a": [1, "x"]}) == hashlib.sha256(b'[{"a":[1,"x"],"b":1}]').hexdigest()
    assert digest() == hashlib.sha256(b"[]").hexdigest()


def test_a_foreign_from_import_does_not_end_the_scan():
    assert imported_modules("from os import path\nfrom mtllib.data import tasks\nimport mtllib.runtime\n") == {
        "mtllib.data", "mtllib.data.tasks", "mtllib.runtime"}


def test_an_empty_tensor_digests_its_name_dtype_and_shape_only():
    import hashlib

    import torch

    from mtllib.fingerprint import tensor_digest

    assert tensor_digest({"e": torch.zeros(0)}) == hashlib.sha256(b"e|torch.float32|(0,)|").hexdigest()


def test_file_sha256_is_the_standard_digest_of_the_bytes(tmp_path):
    from mtllib.fingerprint import file_sha256

    (tmp_path / "abc").write_bytes(b"abc")  # FIPS 180-2's test vector
    assert file_sha256(tmp_path / "abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    (tmp_path / "big").write_bytes(b"a" * 1_000_000)  # read in blocks: the million-'a' vector
    assert file_sha256(tmp_path / "big") == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"

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

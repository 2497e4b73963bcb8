"""The library's layers show in its layout, and no module imports from a layer above its own."""

from pathlib import Path

import pytest

from mtllib.fingerprint import PACKAGE_DIR, imported_modules

#: lowest first; a module may import its own layer and the layers before it
LAYERS = ["base", "store", "data", "modeling", "analysis", "training", "papers", "experiments", "book"]
BASE_MODULES = {"__init__", "runtime", "fingerprint", "checks"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_DIR).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(["mtllib", *parts])


def _layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1 or parts[1] in BASE_MODULES:
        return "base"
    return parts[1]


MODULES = sorted(PACKAGE_DIR.rglob("*.py"))


def test_every_module_belongs_to_a_known_layer():
    unknown = [str(p.relative_to(PACKAGE_DIR)) for p in MODULES if _layer(_module_name(p)) not in LAYERS]
    assert not unknown, f"modules outside the layers {LAYERS}: {unknown}"
    top_level = sorted(p.stem for p in PACKAGE_DIR.glob("*.py"))
    assert set(top_level) <= BASE_MODULES, f"only base modules live at the top level, found {top_level}"


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(PACKAGE_DIR)) for p in MODULES])
def test_no_import_from_a_higher_layer(path):
    name = _module_name(path)
    current = name + ".__init__" if path.name == "__init__.py" else name
    own = LAYERS.index(_layer(name))
    upward = sorted(m for m in imported_modules(path.read_text(), current) if LAYERS.index(_layer(m)) > own)
    assert not upward, f"{name} ({LAYERS[own]}) imports from higher layers: {upward}"


def test_tests_mirror_the_library():
    tests_dir = Path(__file__).resolve().parent
    library = {p.parent.relative_to(PACKAGE_DIR) for p in MODULES} - {Path(".")}
    assert library <= {p.relative_to(tests_dir) for p in tests_dir.rglob("*") if p.is_dir() and "__pycache__" not in p.parts}

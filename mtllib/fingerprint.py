"""One fingerprint function for everything that must know whether its inputs changed: the book's staleness
check (:mod:`mtllib.book.runner`), the cache of trained models and the checkpoints that refuse to resume a
different run.

- :func:`digest` hashes any JSON-like value (dicts in key order, tuples as lists, paths and other objects by
  ``str``), so two equal configurations always give the same hex string.
- :func:`tensor_digest` and :func:`dataset_digest` hash weights and tokenised data by content.
- :func:`source_digest` hashes the source files of some ``mtllib`` modules *and every module they import,
  transitively* (imports anywhere in a file count, also those inside functions), so a change to the IAT code
  changes the fingerprint of what imports the trainer but not of the data chapter. ``exclude`` leaves out
  modules whose effect the caller hashes by content instead (the model cache hashes the tokenised data, so
  the code that builds the data need not be in its key).
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path

PACKAGE = "mtllib"
PACKAGE_DIR = Path(__file__).resolve().parent


def _plain(value):
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)


def file_sha256(path: Path) -> str:
    """The SHA-256 of a file's bytes (hex), read in blocks."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def digest(*parts) -> str:
    """SHA-256 (hex) of ``parts`` as canonical JSON: equal values give equal digests."""
    text = json.dumps(_plain(list(parts)), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def module_file(module: str, package_dir: Path = PACKAGE_DIR) -> Path | None:
    """The source file of an ``mtllib`` module name (a package's ``__init__.py``), or ``None``."""
    parts = module.split(".")
    if parts[0] != PACKAGE:
        return None
    base = package_dir.joinpath(*parts[1:])
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def imported_modules(source: str, current: str = "") -> set[str]:
    """The ``mtllib`` modules that Python ``source`` imports (``current``: its own module name, for relative
    imports). ``from mtllib.x import y`` yields ``mtllib.x.y`` when that is a module, else ``mtllib.x``."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == PACKAGE}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = current.split(".")[: -node.level] if current else []
                base = ".".join(anchor + ([base] if base else []))
            if base.split(".")[0] != PACKAGE:
                continue
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names}
    return found


@lru_cache(maxsize=None)
def _closure(roots: tuple[str, ...], package_dir: Path, exclude: tuple[str, ...] = ()) -> tuple[Path, ...]:
    seen: dict[str, Path] = {}
    todo = list(roots)
    while todo:
        module = todo.pop()
        if module in seen or module in exclude:
            continue
        path = module_file(module, package_dir)
        if path is None:
            continue
        seen[module] = path
        parents = [".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 1)]
        current = module if path.name != "__init__.py" else module + ".__init__"
        todo += parents + sorted(imported_modules(path.read_text(), current))
    return tuple(sorted(set(seen.values())))


def module_closure(modules: Iterable[str], package_dir: Path = PACKAGE_DIR, exclude: Iterable[str] = ()) -> list[Path]:
    """The source files of ``modules``, the packages above them and every ``mtllib`` module they import,
    transitively. Names that are not ``mtllib`` modules are ignored; modules in ``exclude`` are neither
    included nor followed (what only they import is left out too)."""
    _closure.cache_clear()  # files may have changed since the last call
    return list(_closure(tuple(sorted(set(modules))), Path(package_dir), tuple(sorted(set(exclude)))))


def source_digest(modules: Iterable[str], package_dir: Path = PACKAGE_DIR, exclude: Iterable[str] = ()) -> str:
    """:func:`digest` of the paths and contents of :func:`module_closure` of ``modules`` (less ``exclude``)."""
    package_dir = Path(package_dir)
    files = module_closure(modules, package_dir, exclude)
    return digest([(p.relative_to(package_dir).as_posix(), hashlib.sha256(p.read_bytes()).hexdigest()) for p in files])


def tensor_digest(state: dict) -> str:
    """SHA-256 of a state dict: names, dtypes, shapes and bytes of every tensor, in key order."""
    import torch

    h = hashlib.sha256()
    for name in sorted(state):
        t = state[name].detach().cpu().contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def dataset_digest(dataset) -> str:
    """SHA-256 of a ``datasets.Dataset``'s rows (after any ``select``), via its Arrow record batches."""
    import pyarrow as pa

    if getattr(dataset, "_indices", None) is not None:
        dataset = dataset.flatten_indices()
    sink = pa.BufferOutputStream()
    table = dataset.data.table
    with pa.ipc.new_stream(sink, table.schema) as writer:
        for batch in table.to_batches():
            writer.write_batch(batch)
    return hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()

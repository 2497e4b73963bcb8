"""The code version of a job: what in the library's source can change its numbers.

A job's key (:mod:`mtllib.experiments.jobs`) is its spec plus :func:`code_version` of the modules on the path
that computes it. The version hashes each module's *normalised* source (:func:`normalized_source`): its syntax
tree without docstrings, comments, blank lines or formatting, so that editing prose in the code invalidates no
stored result, while any change to what the code does (a constant, a default, a statement) does.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterable
from pathlib import Path

from mtllib.fingerprint import PACKAGE_DIR, digest, module_closure

_BODIES = ("body", "orelse", "finalbody")


def _is_bare_string(node: ast.AST) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)


class _DropStrings(ast.NodeTransformer):
    """Remove statements that are only a string (docstrings, and strings used as comments)."""

    def generic_visit(self, node):
        super().generic_visit(node)
        for name in _BODIES:
            body = getattr(node, name, None)
            if isinstance(body, list) and any(_is_bare_string(s) for s in body):
                kept = [s for s in body if not _is_bare_string(s)]
                setattr(node, name, kept or [ast.Pass()])  # a body that was only a docstring still parses
        return node


def normalized_source(source: str) -> str:
    """``source`` as its syntax tree (no field names, no line numbers), docstrings and bare strings dropped:
    equal for two sources that differ only in comments, docstrings, blank lines or layout."""
    tree = _DropStrings().visit(ast.parse(source))
    return ast.dump(tree, annotate_fields=False, include_attributes=False)


def code_version(modules: Iterable[str], exclude: Iterable[str] = (), package_dir: Path = PACKAGE_DIR) -> str:
    """The digest of the normalised source of ``modules`` and every ``mtllib`` module they import, transitively
    (:func:`mtllib.fingerprint.module_closure`; ``exclude``: modules neither included nor followed), with
    each file's path in the package."""
    package_dir = Path(package_dir)
    files = module_closure(modules, package_dir, exclude)
    return digest("code/1", [(p.relative_to(package_dir).as_posix(), hashlib.sha256(normalized_source(p.read_text()).encode()).hexdigest())
                             for p in files])

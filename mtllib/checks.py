"""Checks of user input with one kind of message: it names the setting, the value given and what is allowed.

Every configuration object and every notebook's parameter cell uses these, so that bad input fails with
:class:`BadInput` (a ``ValueError``) before any work, whatever the entry point.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable


class BadInput(ValueError):
    """A setting or parameter outside what is allowed; the message names it, its value and the allowed range."""


def _fail(name: str, value, allowed: str):
    raise BadInput(f"{name} must be {allowed}, got {value!r}")


def integer(name: str, value, minimum: int | None = None, maximum: int | None = None) -> int:
    """An int (not a bool, not a float such as 2.0) within ``[minimum, maximum]``."""
    bounds = ("" if minimum is None else f" >= {minimum}") + ("" if maximum is None else f" and <= {maximum}" if minimum is not None else f" <= {maximum}")
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        _fail(name, value, "an integer" + bounds)
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        _fail(name, value, "an integer" + bounds)
    return int(value)


def number(name: str, value, low: float | None = None, high: float | None = None, low_open: bool = False, high_open: bool = False) -> float:
    """A finite real number (not a bool or a string) within the interval given by ``low``/``high``."""
    left = "" if low is None else f"{'>' if low_open else '>='} {low}"
    right = "" if high is None else f"{'<' if high_open else '<='} {high}"
    allowed = "a finite number" + (" " + " and ".join(p for p in (left, right) if p) if left or right else "")
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        _fail(name, value, allowed)
    if low is not None and (value < low or (low_open and value == low)):
        _fail(name, value, allowed)
    if high is not None and (value > high or (high_open and value == high)):
        _fail(name, value, allowed)
    return float(value)


def boolean(name: str, value) -> bool:
    if not isinstance(value, bool):
        _fail(name, value, "True or False")
    return value


def choice(name: str, value, choices: Iterable) -> object:
    choices = list(choices)
    if value not in choices:
        _fail(name, value, "one of " + ", ".join(repr(c) for c in choices))
    return value


def text(name: str, value) -> str:
    if not isinstance(value, str) or not value:
        _fail(name, value, "a non-empty string")
    return value


def items(name: str, value, check, min_len: int = 1, unique: bool = True) -> list:
    """A list (or tuple) of at least ``min_len`` items, each passing ``check(item_name, item)``."""
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        _fail(name, value, f"a list of at least {min_len} item{'s' if min_len != 1 else ''}")
    if len(value) < min_len:
        _fail(name, value, f"a list of at least {min_len} item{'s' if min_len != 1 else ''}")
    out = [check(f"{name}[{i}]", v) for i, v in enumerate(value)]
    if unique and len(set(map(repr, out))) != len(out):
        _fail(name, value, "a list without repeated items")
    return out


def optional(check):
    """``check`` that also lets ``None`` through."""
    def checked(name, value, *args, **kwargs):
        return None if value is None else check(name, value, *args, **kwargs)
    return checked

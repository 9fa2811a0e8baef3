"""Parameter constraints declared as data, checked in one place (after scikit-learn's
``_parameter_constraints`` and ``validate_parameter_constraints``).

A module lists, for each ``__init__`` parameter, the alternatives a value may satisfy::

    _parameter_constraints = {
        "bins": [Interval(Integral, 1, None)],
        "max_pairs": [None, Interval(Integral, 0, None)],
        "output": [Options("gumbel", "softmax", "expected")],
    }

:class:`synthzoo.core.base.Module` checks them when the module is constructed (and when a saved
state restores parameters), so a bad value fails with its name before any data is read; the
tuner's search spaces and the conformance kit (:mod:`synthzoo.testing`) are checked against the
same declarations.
"""

from __future__ import annotations

import math
import numbers
import re
from typing import Any

import numpy as np

from .errors import ConfigError

Integral, Real = numbers.Integral, numbers.Real


class Constraint:
    """One alternative a parameter value may satisfy."""

    def accepts(self, value) -> bool:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self) -> str:
        return self.describe()


class Interval(Constraint):
    """A number of type ``kind`` (``Integral`` or ``Real``; booleans never count) in an interval.

    Parameters
    ----------
    kind : numbers.Integral or numbers.Real
    left, right : float or None
        Bounds; None means unbounded on that side.
    closed : {"both", "left", "right", "neither"}, default "both"

    Examples
    --------
    >>> Interval(Real, 0, 1, closed="neither").accepts(0.5)
    True
    """

    def __init__(self, kind, left=None, right=None, closed: str = "both"):
        if kind not in (Integral, Real):
            raise ValueError("kind must be numbers.Integral or numbers.Real")
        if closed not in ("both", "left", "right", "neither"):
            raise ValueError(f"closed must be both/left/right/neither, got {closed!r}")
        self.kind, self.left, self.right, self.closed = kind, left, right, closed

    def accepts(self, value) -> bool:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, self.kind):
            return False
        v = float(value)
        if not math.isfinite(v):
            return False
        if self.left is not None and (v < self.left or (v == self.left and self.closed in ("right", "neither"))):
            return False
        if self.right is not None and (v > self.right or (v == self.right and self.closed in ("left", "neither"))):
            return False
        return True

    def describe(self) -> str:
        what = "an integer" if self.kind is Integral else "a number"
        if self.left is None and self.right is None:
            return what
        def show(x):  # whole bounds in full (MAX_BATCH is 1048576, not 1.04858e+06)
            return str(x) if isinstance(x, int) and not isinstance(x, bool) and abs(x) >= 1e6 else f"{x:g}"

        lo = "-inf" if self.left is None else show(self.left)
        hi = "inf" if self.right is None else show(self.right)
        lb = "[" if self.closed in ("both", "left") and self.left is not None else "("
        rb = "]" if self.closed in ("both", "right") and self.right is not None else ")"
        return f"{what} in {lb}{lo}, {hi}{rb}"


class Options(Constraint):
    """One of the given values (compared with ``==``; booleans never match numbers)."""

    def __init__(self, *values):
        self.values = values

    def accepts(self, value) -> bool:
        return any(isinstance(v, bool) == isinstance(value, (bool, np.bool_)) and _eq(v, value) for v in self.values)

    def describe(self) -> str:
        return "one of " + ", ".join(repr(v) for v in self.values)


class Boolean(Constraint):
    """``True`` or ``False``."""

    def accepts(self, value) -> bool:
        return isinstance(value, (bool, np.bool_))

    def describe(self) -> str:
        return "a boolean"


class Text(Constraint):
    """A string, optionally matching ``pattern`` (a full match)."""

    def __init__(self, pattern: str | None = None, what: str = "a string"):
        self.pattern = None if pattern is None else re.compile(pattern)
        self.what = what

    def accepts(self, value) -> bool:
        return isinstance(value, str) and (self.pattern is None or self.pattern.fullmatch(value) is not None)

    def describe(self) -> str:
        return self.what


class Function(Constraint):
    """A callable (e.g. a progress callback)."""

    def accepts(self, value) -> bool:
        return callable(value)

    def describe(self) -> str:
        return "a callable"


class Sequence(Constraint):
    """A list or tuple whose items all satisfy ``item`` (and of ``length`` items, or ``min_length`` to
    ``max_length``: a parameter list is short, and a model file may not make it long)."""

    def __init__(self, item: Constraint, length: int | None = None, min_length: int = 0, max_length: int = 64):
        self.item, self.length, self.min_length, self.max_length = item, length, min_length, max_length

    def accepts(self, value) -> bool:
        if not isinstance(value, (list, tuple)):
            return False
        if self.length is not None and len(value) != self.length:
            return False
        return self.min_length <= len(value) <= self.max_length and all(self.item.accepts(v) for v in value)

    def describe(self) -> str:
        n = f"{self.length} " if self.length is not None else f"at most {self.max_length} "
        return f"a list of {n}items, each {self.item.describe()}"


def _eq(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - arrays and odd types never match an option
        return False


def accepts(alternatives: list, value) -> bool:
    """Whether ``value`` satisfies one of ``alternatives`` (``None`` in the list admits None)."""
    for c in alternatives:
        if c is None:
            if value is None:
                return True
        elif c.accepts(value):
            return True
    return False


def describe(alternatives: list) -> str:
    return " or ".join("None" if c is None else c.describe() for c in alternatives)


def validate(owner: str, constraints: dict, params: dict[str, Any]) -> None:
    """Raise :class:`ConfigError` naming the first parameter of ``params`` that satisfies none of its
    declared alternatives.  A parameter without a declaration is a programming error of the module."""
    for name, value in params.items():
        if name not in constraints:
            raise ConfigError(f"{owner}: parameter {name!r} declares no constraint (add it to _parameter_constraints)")
        alts = constraints[name]
        if alts == "no_validation":
            continue
        if not accepts(alts, value):
            shown = repr(value)
            shown = shown if len(shown) <= 80 else shown[:60] + f"... ({len(shown):,} characters)"
            raise ConfigError(f"{owner}: parameter {name}={shown} must be {describe(alts)}")


def check_space(owner: str, constraints: dict, space: dict) -> None:
    """Check a module's tuner search space against its constraints: both ends of every range, every
    categorical choice, and the integrality of ``"int"`` ranges.  Raises :class:`ConfigError`."""
    for name, spec in space.items():
        if name not in constraints:
            raise ConfigError(f"{owner}: hyperparameter_space names {name!r}, which is not a parameter")
        alts = constraints[name]
        if alts == "no_validation":
            continue
        kind = spec[0]
        if kind == "cat":
            values = list(spec[1])
        elif kind in ("int", "float", "log"):
            lo, hi = spec[1], spec[2]
            if not lo <= hi:
                raise ConfigError(f"{owner}: hyperparameter_space[{name!r}] has low {lo} > high {hi}")
            if kind == "log" and not lo > 0:
                raise ConfigError(f"{owner}: hyperparameter_space[{name!r}] is log-scaled but starts at {lo}")
            values = [int(lo), int(hi)] if kind == "int" else [float(lo), float(hi)]
            if kind == "int" and (lo != int(lo) or hi != int(hi)):
                raise ConfigError(f"{owner}: hyperparameter_space[{name!r}] is 'int' with bounds {lo}, {hi}")
        else:
            raise ConfigError(f"{owner}: hyperparameter_space[{name!r}] has unknown kind {kind!r}")
        for v in values:
            if not accepts(alts, v):
                raise ConfigError(f"{owner}: hyperparameter_space[{name!r}] reaches {v!r}, but the parameter must "
                                  f"be {describe(alts)}")


#: The largest batch a model parameter may ask for (batch_size, a generator's batch, a sampling batch): a batch is
#: held in memory at once, with its generated rows, and ctgan's batch_size=1e9 had the kernel kill the fit.
MAX_BATCH = 2 ** 20
#: Every seed lies in [0, SEED_LIMIT): a model file holds the synthesizer's as a signed 64-bit integer.
SEED_LIMIT = 2 ** 63


def check_seed(value, name: str = "seed") -> None:
    """ConfigError unless ``value`` is a whole number in [0, 2^63): a model file holds a seed as a signed 64-bit
    integer (a larger one fitted and saved a file that would not load), and numpy's error for a negative one
    names no parameter."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value < SEED_LIMIT:
        raise ConfigError(f"{name} must be a non-negative integer below 2^63, got {value!r}")

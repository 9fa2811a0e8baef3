"""The form of a model's saved state, checked before anything is built from it.

A model file is untrusted input: each model declares what its ``_get_state`` returns
(``Model._state_spec``) and :func:`check_state` refuses anything else -- an unknown or missing key, a
text where a number belongs, a boolean passed off as a count, a non-finite value -- with an error
naming the field (``model_state.marginals[3].counts[17]``), before ``_set_state`` reads it.
"""

from __future__ import annotations

import unicodedata

import numpy as np

from .errors import ConfigError

#: Forms :func:`check_state` knows: a number (finite, not a boolean), a whole number, a text, and a
#: scalar (text, finite number, boolean or null), and an array (finite numbers in lists nested to any
#: regular depth: a numpy array's ``tolist()``).
NUMBER, INTEGER, TEXT, SCALAR, ARRAY = "number", "integer", "text", "scalar", "array"
#: One saved tensor (network weights): its shape and its values, flattened.
TENSOR = {"shape": [INTEGER], "values": [NUMBER]}


def check_state(value, spec, where: str) -> None:
    """Check a saved state (untrusted JSON) against ``spec``, raising :class:`ConfigError` that names
    the field.  ``spec`` is one of :data:`NUMBER`, :data:`INTEGER`, :data:`TEXT`, :data:`SCALAR`,
    :data:`ARRAY`; ``[s]`` (a list of ``s``); ``("nonempty", [s])``; ``("map", s)`` (an object with
    any text keys, values ``s``); ``("optional", s)`` (``null`` or ``s``); or a dict (an object with
    exactly those keys)."""
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: must be an object, got {type(value).__name__}")
        extra, lacking = sorted(map(str, set(value) - set(spec))), sorted(set(spec) - set(value))
        if extra or lacking:
            raise ConfigError(f"{where}: " + "; ".join(
                ([f"unknown key(s) {', '.join(_short(k) for k in extra[:5])}"] if extra else [])
                + ([f"lacks {lacking}"] if lacking else [])))
        for k, sub in spec.items():
            check_state(value[k], sub, f"{where}.{k}")
    elif isinstance(spec, list):
        if not isinstance(value, list):
            raise ConfigError(f"{where}: must be a list, got {type(value).__name__}")
        (item,) = spec
        if item in (NUMBER, INTEGER):
            _check_numbers(value, item, where)
        else:
            for i, x in enumerate(value):
                check_state(x, item, f"{where}[{i}]")
    elif isinstance(spec, tuple):
        form, sub = spec
        if form == "optional":
            if value is not None:
                check_state(value, sub, where)
        elif form == "nonempty":
            if isinstance(value, list) and not value:
                raise ConfigError(f"{where}: must not be empty")
            check_state(value, sub, where)
        elif form == "map":
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: must be an object, got {type(value).__name__}")
            for k, x in value.items():
                check_state(x, sub, f"{where}[{_short(k)}]")
        else:
            raise ValueError(f"unknown state form {form!r}")
    elif spec in (NUMBER, INTEGER):
        _check_numbers([value], spec, where, scalar=True)
    elif spec == TEXT:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: must be a text, got {type(value).__name__}")
    elif spec == ARRAY:
        if isinstance(value, list) and value and isinstance(value[0], list):
            for i, x in enumerate(value):
                if not isinstance(x, list):
                    raise ConfigError(f"{where}[{i}]: must be a list (the array is not regular)")
                check_state(x, ARRAY, f"{where}[{i}]")
        elif isinstance(value, list):
            _check_numbers(value, NUMBER, where)
        else:
            _check_numbers([value], NUMBER, where, scalar=True)
    elif spec == SCALAR:
        if not (value is None or isinstance(value, (str, bool))):
            _check_numbers([value], NUMBER, where, scalar=True)
    else:
        raise ValueError(f"unknown state form {spec!r}")


def shaped(values, shape, where: str) -> np.ndarray:
    """``values`` (numbers, as :func:`check_state` passed them) as an array of ``shape``, or ConfigError naming
    ``where`` when the shape is not one (negative sizes, more than 32 dimensions) or does not hold exactly those
    values -- a reshape's bare ValueError said neither which field nor why."""
    try:
        arr = np.asarray(values, dtype=float)
    except ValueError:  # lists of unequal lengths: not an array
        raise ConfigError(f"{where}: the values are not a regular array (rows of unequal lengths)") from None
    if len(shape) > 32 or any(s < 0 for s in shape) or int(np.prod(shape, dtype=object)) != arr.size:
        raise ConfigError(f"{where}: shape {_short(shape)} does not hold the {arr.size:,} values given")
    return arr.reshape(shape)


#: Unicode categories a text read from a model file and printed in a report may not hold: control characters
#: (line breaks, terminal escape codes), format characters (bidirectional overrides, zero-width marks: they
#: reorder or hide what is shown), lone surrogates (not encodable: printing one raises) and line separators.
UNPRINTABLE = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})


def printable(text: str, limit: int) -> str:
    """``text`` as :func:`check_text` takes it: each unprintable character escaped (a column named with a line
    break, as an Excel header may be, is written with a backslash and ``n``), cut to ``limit`` characters.  Notes
    that name columns are written through it, and compared through it when a file is checked."""
    out = "".join(ch.encode("unicode_escape").decode("ascii") if unicodedata.category(ch) in UNPRINTABLE else ch
                  for ch in str(text))
    return out if len(out) <= limit else out[:limit - 1] + "…"


def check_text(value, where: str, limit: int) -> None:
    """ConfigError unless ``value`` is a text of at most ``limit`` printable characters: a file's text that
    a report shows cannot break its lines, move the cursor, reorder or hide what follows, or fail to print."""
    if not isinstance(value, str):
        raise ConfigError(f"{where}: must be a text, got {type(value).__name__}")
    bad = next((ch for ch in value if unicodedata.category(ch) in UNPRINTABLE), None)
    if len(value) > limit or bad is not None:
        why = f"holds {len(value):,}" if bad is None else f"holds the unprintable character U+{ord(bad):04X}"
        raise ConfigError(f"{where}: must be printable text of at most {limit:,} characters ({why})")


def _check_numbers(values: list, form: str, where: str, scalar: bool = False) -> None:
    ok = (int,) if form == INTEGER else (int, float)
    # type(x), not isinstance: a boolean is not a number here
    bad = next((i for i, x in enumerate(values) if type(x) not in ok), None)
    if bad is None and form == NUMBER and values:
        finite = np.isfinite(np.asarray(values, dtype=float))
        bad = None if finite.all() else int(np.argmin(finite))
    if bad is not None:
        raise ConfigError(f"{where}{'' if scalar else f'[{bad}]'}: must be a "
                          f"{'whole number' if form == INTEGER else 'finite number'}, got {_short(values[bad])}")


def _short(x, n: int = 40) -> str:
    r = repr(x)
    return r if len(r) <= n else r[:n] + "..."

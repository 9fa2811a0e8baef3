"""Exceptions raised by synthzoo. Each names the column or parameter at fault; and the warning
categories, with a thread-safe way to silence libraries' warnings."""

import contextlib
import threading
import warnings


class SynthzooError(Exception):
    """Base class for every error synthzoo raises on purpose."""


class SchemaError(SynthzooError, ValueError):
    """A frame does not match its schema, or the schema itself is malformed."""


class ConfigError(SynthzooError, ValueError):
    """A synthesizer was configured with an impossible parameter or module combination."""


class BudgetExceededError(SynthzooError, RuntimeError):
    """A privacy charge would take the ledger past the requested (epsilon, delta)."""


class NotFittedError(SynthzooError, RuntimeError):
    """``sample`` or ``save`` was called before ``fit``."""


class TimeZoneWarning(UserWarning):
    """Datetime values whose zones were converted (mixed UTC offsets, or a zone the schema does not
    declare); said once, where the frame is validated."""


class PrivacySettingsWarning(UserWarning):
    """A privacy request that is allowed but dubious (delta not small against plausible row counts,
    a table too small for its epsilon)."""


# ---------------------------------------------------------------------------------------
# silencing libraries' chatter, thread-safely
# ---------------------------------------------------------------------------------------

_QUIET_LOCK = threading.Lock()
_QUIET_USERS = 0
_QUIET_FILTERS: list = []


@contextlib.contextmanager
def quiet_library_warnings():
    """Silence what scikit-learn, LightGBM, XGBoost and CatBoost warn while a model fits (the
    convergence chatter of fixed iteration budgets), safely on threads.

    ``warnings.catch_warnings`` saves the process-wide filter list on entry and puts it back on
    exit, so two threads inside it at once undo each other: the first to leave drops the second's
    filter (its warnings escape: ``synthzoo eval``'s scoring threads leaked lbfgs'
    ``ConvergenceWarning``) and the last to leave may restore a filter that outlives its block.
    Here two filters -- scikit-learn's ``ConvergenceWarning`` from anywhere, and any warning raised
    in those libraries' modules -- are added when the first user enters and removed, by identity,
    when the last one leaves; warnings of other origins (synthzoo's own) still show."""
    global _QUIET_USERS
    with _QUIET_LOCK:
        if _QUIET_USERS == 0:
            import re

            from sklearn.exceptions import ConvergenceWarning
            items = [("ignore", None, ConvergenceWarning, None, 0),
                     ("ignore", None, Warning, re.compile(r"(sklearn|lightgbm|xgboost|catboost)(\.|$)"), 0)]
            _QUIET_FILTERS[:] = [f for f in items if f not in warnings.filters]  # a user's own copy stays
            warnings.filters[:0] = _QUIET_FILTERS
            warnings._filters_mutated()
        _QUIET_USERS += 1
    try:
        yield
    finally:
        with _QUIET_LOCK:
            _QUIET_USERS -= 1
            if _QUIET_USERS == 0:
                for f in _QUIET_FILTERS:
                    if f in warnings.filters:
                        warnings.filters.remove(f)
                _QUIET_FILTERS.clear()
                warnings._filters_mutated()


#: pandas' datetime-parsing advice ("pass dayfirst=", "specify a format", mixed time zones), which names
#: arguments a synthzoo user cannot pass; silenced for the warnings pandas attributes to core's parsing code.
_ADVICE = (r"Could not infer format", r"Parsing dates in .* format when dayfirst", r".*mixed time zones")
_PARSERS = r"synthzoo\.core\.(datetimes|schema)$"


def quiet_parsing_advice() -> None:
    """Make sure the filters for pandas' parsing advice (:data:`_ADVICE`) are in the warning filters.

    Filters by message and by the module pandas attributes its warning to (core's date parsing), added
    once and again only where something replaced the filter list -- not ``warnings.catch_warnings``
    around each parse, which has the race :func:`quiet_library_warnings` describes: while one of
    ``evaluate``'s threads parsed a date column, every other thread's warnings were dropped."""
    have = {(f[1].pattern, f[3].pattern) for f in warnings.filters
            if f[0] == "ignore" and f[1] is not None and f[3] is not None}
    for msg in _ADVICE:
        if (msg, _PARSERS) not in have:
            warnings.filterwarnings("ignore", message=msg, module=_PARSERS)

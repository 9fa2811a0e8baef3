"""The conformance kit: the checks every synthzoo module must pass, for modules written anywhere.

As scikit-learn's ``check_estimator``, :func:`check_module` runs a module class through the
contract of its role -- parameters stored unchanged and validated at construction, ``clone``, a
tuner search space inside the declared constraints, declared tags, ``project`` shapes, a fit/sample
round trip on the built-in demo table, same seed same output (and other DP noise another release),
encoders of a preprocessor that spends nothing unmoved by one more record, the budget never
exceeded, no private record in the saved state, and bad input refused before any budget is spent::

    from synthzoo.core.base import MeasurementModel, register
    from synthzoo.testing import check_module

    @register("model", "my_model")
    class MyModel(MeasurementModel):
        ...

    check_module(MyModel)          # raises ConformanceError naming the failed check

The project's own test suite runs it over the whole registry (``tests/test_conformance.py``).
"""

from __future__ import annotations

import inspect
import json
import math
import warnings
from collections.abc import Callable

import numpy as np
import pandas as pd

from ..core import params as P
from ..core.base import DEFAULT_TAGS, REGISTRY, Model, Module, Preprocessor, Selector
from ..core.errors import ConfigError, SchemaError
from ..core.privacy.ledger import charge_owner
from ..datasets import make_demo
from ..pipeline import Synthesizer

#: Rows of the demo table the round-trip checks fit on (small: the kit runs over the whole registry).
DEMO_ROWS = 800
#: A record planted in the training table; the saved state must not contain its values.
CANARY = {"age": 89, "income": 398765.4321, "avg_order_value": 1987.6543, "purchases": 299}


#: A quick record model to exercise feature preprocessors with.
TVAE_QUICK = {"embedding_dim": 8, "compress_dims": (16,), "decompress_dims": (16,), "epochs": 2, "batch_size": 200}
#: A quick record model to exercise token preprocessors with.
TRANSFORMER_QUICK = {"n_layer": 1, "n_embd": 16, "n_head": 2, "epochs": 2, "batch_size": 200}


class ConformanceError(AssertionError):
    """A module failed a conformance check; the message names the module and the check."""


def partner_config(cls: type) -> dict:
    """A working pipeline around the module class ``cls``: the other roles take simple, compatible
    defaults (``uniform`` binning, ``indif`` or ``mst`` selection, ``gum`` or ``pgm`` estimation)."""
    spec = {"name": cls.name, **cls._test_params}  # the module's own quick settings
    if cls.role == "preprocess":
        if cls.get_tags()["output"] == "features":
            return {"preprocess": [spec], "select": None, "model": {"name": "tvae", **TVAE_QUICK}}
        if cls.get_tags()["output"] == "tokens":
            return {"preprocess": [spec], "select": None, "model": {"name": "transformer", **TRANSFORMER_QUICK}}
        return {"preprocess": [spec], "select": "indif", "model": "gum"}
    if cls.role == "select":
        return {"preprocess": ["uniform"], "select": spec, "model": "gum"}
    tags = cls.get_tags()
    pre = {"features": ["features"], "tokens": ["tokens"]}.get(tags["input"], ["uniform"])
    # MST measures d-1 pairs: a small junction tree, so a non-private run stays quick for any model
    return {"preprocess": pre, "select": "mst" if tags["fits"] == "measurements" else None, "model": spec}


def _invalid_values(alternatives: list) -> list:
    """Values that no alternative of a parameter's constraints accepts (for the validation check)."""
    cands = [object(), "__not_a_valid_value__", -1e300, 1e300, float("nan"), -1, 0, 1, 0.5, True, (), (-1,),
             ("__bad__",) * 3]
    return [v for v in cands if not P.accepts(alternatives, v)][:3]


# ------------------------------------------------------------------------------------- checks
def check_role_and_registry(cls) -> None:
    """The class derives from its role's base class and is registered under its name."""
    base = {"preprocess": Preprocessor, "select": Selector, "model": Model}.get(cls.role)
    assert base is not None and issubclass(cls, base), f"role {cls.role!r} and base class disagree"
    assert REGISTRY[cls.role].get(cls.name) is cls, f"not registered as {cls.role} {cls.name!r}"


def check_tags(cls) -> None:
    """Tags are the known ones with values of the right type, and consistent with the role."""
    tags = cls.get_tags()
    unknown = set(tags) - set(DEFAULT_TAGS)
    assert not unknown, f"unknown tags {sorted(unknown)}"
    assert isinstance(tags["spends_budget"], bool) and isinstance(tags["adaptive"], bool)
    assert isinstance(tags["answers_marginals"], bool)
    assert tags["output"] in ("codes", "features", "tokens") and tags["input"] in ("codes", "features", "tokens")
    if cls.role == "preprocess":
        assert tags["kinds"] and set(tags["kinds"]) <= {"categorical", "numerical", "datetime"}, tags["kinds"]
    if cls.role == "model":
        assert tags["fits"] in ("measurements", "records"), tags["fits"]
        assert tags["fits"] == "records" or not tags["spends_budget"], "a measurement model spends no budget"
    if cls.role == "select":
        assert tags["spends_budget"], "a selector measures, so it spends budget"


def check_params_stored_unchanged(cls) -> None:
    """``__init__`` stores every argument unchanged under its own name (scikit-learn's rule), and
    ``get_params`` returns them."""
    sig = inspect.signature(cls.__init__)
    defaults = {k: p.default for k, p in sig.parameters.items()
                if k != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
    missing = [k for k, v in defaults.items() if v is inspect.Parameter.empty]
    assert not missing, f"parameters without a default: {missing}"
    m = cls()
    got = m.get_params()
    assert set(got) == set(defaults), f"get_params {sorted(got)} != __init__ parameters {sorted(defaults)}"
    for k, v in defaults.items():
        assert got[k] is v or got[k] == v, f"parameter {k!r}: stored {got[k]!r}, given {v!r}"


def check_clone(cls) -> None:
    """``clone`` gives a new, unfitted object with equal parameters."""
    m = cls()
    c = m.clone()
    assert c is not m and type(c) is cls and c.get_params() == m.get_params()


def check_constraints_validated_at_construction(cls) -> None:
    """Every parameter has declared constraints, its default satisfies them, and a value they reject
    fails at construction with a :class:`ConfigError` naming the parameter."""
    cons = cls._parameter_constraints
    params = cls().get_params()
    undeclared = [k for k in params if k not in cons]
    assert not undeclared, f"parameters without constraints: {undeclared}"
    for name, value in params.items():
        alts = cons[name]
        if alts == "no_validation":
            continue
        assert P.accepts(alts, value), f"default {name}={value!r} violates its own constraints"
        for bad in _invalid_values(alts):
            try:
                cls(**{name: bad})
            except ConfigError as e:
                assert name in str(e), f"the error for {name}={bad!r} does not name it: {e}"
            else:
                raise AssertionError(f"{name}={bad!r} was accepted at construction")


def check_hyperparameter_space(cls) -> None:
    """The tuner's search space lies inside the declared constraints (both ends, every choice)."""
    P.check_space(cls.name or cls.__name__, cls._parameter_constraints, cls.hyperparameter_space())


def _synth(cls, schema, **kw) -> Synthesizer:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Synthesizer(**partner_config(cls), schema=schema, delta=1e-5, **kw)


_DEMO: list = []
_FITTED: dict = {}


def _demo():
    if not _DEMO:
        _DEMO.append(make_demo(n=DEMO_ROWS, seed=0))
    df, schema = _DEMO[0]
    return df.copy(), schema


def _with_canary(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` and one more record holding the :data:`CANARY` values (the columns' extremes)."""
    planted = df.iloc[:1].copy()
    for k, v in CANARY.items():
        planted[k] = v
    return pd.concat([df, planted], ignore_index=True)


def _fitted(cls, epsilon) -> Synthesizer:
    """One fit per (module, epsilon) shared by the checks that only read it (keyed by the class object,
    so a re-registered class is fitted anew)."""
    key = (cls, epsilon)
    if key not in _FITTED:
        df, schema = _demo()
        _FITTED[key] = _synth(cls, schema, epsilon=epsilon, seed=0).fit(df)
    return _FITTED[key]


def check_round_trip(cls) -> None:
    """Fit and sample on the demo table: same columns, schema dtypes, every value inside the schema."""
    df, schema = _demo()
    fake = _fitted(cls, 1.0).sample(300, seed=0)
    assert list(fake.columns) == list(df.columns), "columns differ from the training frame's"
    want = {c.name: c.output_dtype for c in schema}
    assert fake.dtypes.to_dict() == want, f"dtypes {fake.dtypes.to_dict()} != schema's {want}"
    assert len(fake) == 300
    schema.validate(fake)


def check_same_seed_same_output(cls) -> None:
    """The same fitted model and seed give the same sample; with the test-only noise opt-in the whole
    run replays, and another seed gives other records."""
    df, schema = _demo()
    s = _synth(cls, schema, epsilon=1.0, seed=3).fit(df)
    pd.testing.assert_frame_equal(s.sample(200, seed=5), s.sample(200, seed=5))
    a = _synth(cls, schema, epsilon=1.0, seed=3, noise_seed=11).fit(df).sample(200)
    b = _synth(cls, schema, epsilon=1.0, seed=3, noise_seed=11).fit(df).sample(200)
    c = _synth(cls, schema, epsilon=1.0, seed=4, noise_seed=11).fit(df).sample(200)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c), "another seed gave the same records"
    # and other DP noise, the same seed, gives another release: the noise reaches what is released (a
    # selector that charged for noisy marginals but passed on the exact ones passed every check before)
    d = _synth(cls, schema, epsilon=1.0, seed=3, noise_seed=12).fit(df).sample(200)
    assert not a.equals(d), "other DP noise gave the same records: the noise does not reach the release"


def check_free_preprocessing_reads_no_private_value(cls) -> None:
    """A preprocessor that spends no budget encodes from the schema alone: one more record, at the
    columns' extremes, leaves its encoders exactly as they were (bin edges at the data's quantiles
    passed every other check)."""
    if cls.role != "preprocess" or cls.get_tags()["spends_budget"]:
        return
    df, schema = _demo()
    more = _with_canary(df)
    a = _synth(cls, schema, epsilon=1.0, seed=0, noise_seed=3).fit(df).to_json()["encoder"]
    b = _synth(cls, schema, epsilon=1.0, seed=0, noise_seed=3).fit(more).to_json()["encoder"]
    changed = sorted(c for c in a if a[c] != b.get(c))
    assert not changed, f"one more record changed the encoders of {changed}, though the module spends no budget"


def check_charges_name_their_module(cls) -> None:
    """A private fit charges under the module's name (or its stages', ``name/...``), and a budget-spending
    preprocessor charges at least one mechanism noted with each column its
    :meth:`~synthzoo.core.base.Preprocessor.measured_columns` names: a model file's account is checked
    against exactly that, so a module that charges otherwise cannot load its own files."""
    s = _fitted(cls, 1.0)
    notes: dict = {}
    for c in s.ledger_.charges:
        notes.setdefault(charge_owner(c.module), set()).add(c.note)
    if cls.role == "preprocess":
        p, cols = next((p, cols) for p, cols in s._assignments(s.schema_) if type(p) is cls)
        lacking = [c for c in p.measured_columns(cols) if c not in notes.get(cls.name, ())]
        assert not lacking, (f"measured_columns() names {lacking}, but the private fit charged no mechanism of "
                             f"{cls.name!r} with those notes (charges: {sorted(notes.get(cls.name, ()))})")
    elif cls.get_tags()["spends_budget"]:
        assert cls.name in notes, f"a private fit made no charge under {cls.name!r} (charges: {sorted(notes)})"


def check_budget_never_exceeded(cls) -> None:
    """At a tiny and an ordinary epsilon, what is spent stays within the request."""
    for eps in (0.05, 1.0):
        s = _fitted(cls, eps)
        spent = s.privacy_spent()
        assert 0 < spent.epsilon <= eps * (1 + 1e-9) and spent.delta <= 1e-5, f"epsilon={eps}: spent {spent}"
        assert s.privacy_breakdown()["rho"].sum() <= s.ledger_.total_rho * (1 + 1e-9)


def check_project_shapes(cls) -> None:
    """A model that answers marginals gives, for every 1- and 2-way clique, non-negative counts of the
    clique's shape that sum to about the same total."""
    if cls.role != "model" or not cls.get_tags()["answers_marginals"]:
        return
    s = _fitted(cls, 1.0)
    dom, model = s.encoder_.domain, s.model
    totals = []
    for clique in [(a,) for a in dom.attrs] + [(dom.attrs[0], dom.attrs[-1]), (dom.attrs[-1], dom.attrs[0])]:
        ans = np.asarray(model.project(clique))
        assert ans.shape == dom.project(clique).shape, f"project{clique}: shape {ans.shape}"
        assert np.all(np.isfinite(ans)) and ans.min() >= -1e-6 * max(1.0, abs(ans.sum())), f"project{clique}"
        totals.append(float(ans.sum()))
    assert np.ptp(totals) <= 0.02 * max(totals) + 1e-6, f"marginal totals disagree: {totals}"
    try:
        model.project(("__no_such_attribute__",))
    except ConfigError:
        pass
    else:
        raise AssertionError("project of an unknown attribute did not raise ConfigError")


def check_saved_state_holds_no_record(cls) -> None:
    """The saved model (JSON) holds none of a planted record's values, loads back, and the loaded model
    samples exactly as the fitted one and declares the same sampling work (a number >= 0; a model that
    declares none gives 0: :meth:`~synthzoo.core.base.Model.sample_work`)."""
    df, schema = _demo()
    df = _with_canary(df)
    s = _synth(cls, schema, epsilon=1.0, seed=1).fit(df)
    doc = s.to_json()
    text = json.dumps(doc)
    for k in ("income", "avg_order_value"):
        assert repr(CANARY[k]) not in text, f"the saved state contains the planted {k} {CANARY[k]!r}"
    again = Synthesizer.from_json(json.loads(text))
    pd.testing.assert_frame_equal(s.sample(150, seed=2), again.sample(150, seed=2))
    assert again.privacy_spent() == s.privacy_spent()
    work = again.model.sample_work()
    assert math.isfinite(work) and work >= 0 and work == s.model.sample_work(), \
        f"sample_work() of the loaded model is {work!r}, of the fitted one {s.model.sample_work()!r}"


def check_bad_input_refused_before_budget(cls) -> None:
    """A value the schema forbids is refused with a :class:`SchemaError` naming the column, before
    anything is measured."""
    df, schema = _demo()
    col = next(c.name for c in schema if not c.missing)
    bad = df.copy()
    bad[col] = bad[col].astype(object)
    bad.loc[bad.index[0], col] = np.nan
    s = _synth(cls, schema, epsilon=1.0, seed=0)
    try:
        s.fit(bad)
    except SchemaError as e:
        assert repr(col) in str(e), f"the error does not name column {col!r}: {e}"
    else:
        raise AssertionError("a NaN in a column without missing values was accepted")
    assert not hasattr(s, "ledger_"), "budget was spent on bad input"


def check_non_private_run(cls) -> None:
    """``epsilon=None`` fits, and the report says the release has no DP guarantee."""
    _, schema = _demo()
    s = _fitted(cls, None)
    assert math.isinf(s.privacy_spent().epsilon) and "NO differential privacy" in s.privacy_report()
    schema.validate(s.sample(100))


#: Every check, in the order :func:`check_module` runs them (cheap, class-level ones first).
CHECKS: dict[str, Callable] = {f.__name__.removeprefix("check_"): f for f in (
    check_role_and_registry, check_tags, check_params_stored_unchanged, check_clone,
    check_constraints_validated_at_construction, check_hyperparameter_space, check_round_trip,
    check_same_seed_same_output, check_free_preprocessing_reads_no_private_value, check_charges_name_their_module,
    check_budget_never_exceeded,
    check_project_shapes, check_saved_state_holds_no_record, check_bad_input_refused_before_budget,
    check_non_private_run)}


def check_module(cls: type, checks=None) -> list[str]:
    """Run the conformance checks on the registered module class ``cls``; returns the names of the
    checks run.  Raises :class:`ConformanceError` naming the module and the first check it fails.

    Parameters
    ----------
    cls : type
        A class registered with :func:`synthzoo.core.base.register`.
    checks : iterable of str, optional
        Names from :data:`CHECKS` to run (default: all).
    """
    if not (isinstance(cls, type) and issubclass(cls, Module)):
        raise TypeError(f"check_module needs a synthzoo module class, got {cls!r}")
    names = list(CHECKS) if checks is None else list(checks)
    unknown = [n for n in names if n not in CHECKS]
    if unknown:
        raise ConfigError(f"check_module: unknown check(s) {unknown}; the checks are {list(CHECKS)}")
    for name in names:
        try:
            CHECKS[name](cls)
        except Exception as e:
            raise ConformanceError(f"{cls.role} module {cls.name!r} ({cls.__name__}) fails check {name!r}: "
                                   f"{type(e).__name__}: {e}") from e
    return names

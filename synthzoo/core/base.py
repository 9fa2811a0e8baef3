"""The three module roles, their one contract, and the registry that names them.

The contract between roles is data, not inheritance (see DESIGN.md): a :class:`Domain`,
integer-coded records (:class:`EncodedData`) and a list of :class:`Measurement`.  What the base
classes own instead is everything a module would otherwise copy:

* **parameters** declared as data (``_parameter_constraints``, :mod:`synthzoo.core.params`) and
  checked here when the module is constructed, as scikit-learn checks its estimators';
* **capabilities** declared as tags (:meth:`Module.get_tags`): what a module can do is read
  from them by the pipeline, the tuner, the bench and the conformance kit;
* the **fitted-state skeleton** of a model (not-fitted errors, ``get_state``/``set_state``'s
  domain and parameter checks, malformed-state errors) and, for measurement models, the cached,
  checked ``project``.

A new module is one file: a class with ``@register(role, name)`` in ``synthzoo/<role>/`` (each role
package imports its files itself), or in any package that declares an entry point in the
``synthzoo.modules`` group.
"""

from __future__ import annotations

import abc
import functools
import inspect
import json
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from . import params as P
from .domain import Domain, EncodedData, Measurement
from .measurements import check_measurements
from .errors import ConfigError, NotFittedError, SchemaError
from .statecheck import check_state
from .privacy.ledger import Budget
from .schema import Column

#: Cells of a model's answers to marginal queries kept between calls (32 MB): an adaptive selector asks
#: for the same candidates after each round, but thousands of them on a wide table must not pile up.
ANSWER_CACHE_CELLS = 1 << 22

#: Tags every module has, with their defaults.  ``spends_budget``: it charges the ledger itself;
#: ``kinds``: column kinds a preprocessor encodes; ``output``: what a preprocessor's encoders make,
#: integer ``"codes"`` (a Domain), continuous ``"features"`` (a FeatureTable) or ``"tokens"`` (a
#: TokenTable); ``adaptive``: a selector that asks the model between rounds; ``fits``: "measurements"
#: or "records"; ``input``: what a record model fits, "codes", "features" or "tokens"; ``answers_marginals``: a model whose ``project``
#: estimates marginals (what adaptive selectors need).
DEFAULT_TAGS: dict[str, Any] = {"spends_budget": False, "kinds": (), "adaptive": False, "fits": None,
                                "answers_marginals": False, "output": "codes", "input": "codes"}


class Module(abc.ABC):
    """Base of every pluggable module.

    Subclasses store their ``__init__`` arguments unchanged (as scikit-learn estimators do) and
    declare, for each, the values it accepts in ``_parameter_constraints``; the base class checks
    them when the object is built, and :meth:`_check_related_params` may add checks that involve
    several parameters.  ``_tags`` declares capabilities (merged along the class hierarchy).
    """

    role: ClassVar[str] = ""
    name: ClassVar[str] = ""
    paper: ClassVar[str] = ""
    _parameter_constraints: ClassVar[dict] = {}
    _tags: ClassVar[dict] = {}
    #: Parameters that make a quick but real run, for the conformance kit (e.g. fewer iterations).
    _test_params: ClassVar[dict] = {}

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        init = cls.__dict__.get("__init__")
        if init is None or getattr(init, "_validates", False):
            return

        sig = inspect.signature(init)

        @functools.wraps(init)
        def checked(self, *args, **kwargs):
            try:
                sig.bind(self, *args, **kwargs)
            except TypeError as e:  # a misspelt keyword: said with the parameters there are, as a spec's is
                known = sorted(k for k, v in sig.parameters.items() if k != "self" and v.kind is not v.VAR_KEYWORD)
                raise ConfigError(f"{type(self).__name__}: {e}; its parameters are {known}") from None
            init(self, *args, **kwargs)
            if type(self).__init__ is checked:  # the outermost __init__ has run: every parameter is set
                self.check_params()

        checked._validates = True
        cls.__init__ = checked

    # ------------------------------------------------------------------ parameters
    def get_params(self) -> dict[str, Any]:
        """The constructor's parameters and their current values."""
        sig = inspect.signature(type(self).__init__)
        return {p: getattr(self, p) for p in sig.parameters if p != "self" and hasattr(self, p)}

    def check_params(self) -> None:
        """Raise :class:`ConfigError` naming a parameter that its declared constraints reject.
        Runs at construction; call it again after changing a parameter by hand."""
        P.validate(self._label(), self._parameter_constraints, self.get_params())
        self._check_related_params()

    def _check_related_params(self) -> None:
        """Checks that involve several parameters (raise with :meth:`_bad`)."""

    def _bad(self, param: str, why: str):
        raise ConfigError(f"{self._label()}: parameter {param}={getattr(self, param)!r} {why}")

    def check_schema(self, schema, private: bool) -> None:
        """Checks of the parameters against the public schema (its columns), made when the synthesizer
        is built with a schema, or at fit before anything is charged; raise ConfigError.  None by default."""

    def _label(self) -> str:
        return self.name or type(self).__name__

    def clone(self) -> "Module":
        """An unfitted copy with the same parameters (as scikit-learn's ``clone``)."""
        return type(self)(**self.get_params())

    @classmethod
    def hyperparameter_space(cls) -> dict:
        """Search space for the tuner: ``{param: ("float"|"int"|"log", low, high)}`` or
        ``{param: ("cat", choices)}``; checked against ``_parameter_constraints``."""
        return {}

    @classmethod
    def get_tags(cls) -> dict[str, Any]:
        """Declared capabilities, merged from the class hierarchy over :data:`DEFAULT_TAGS`."""
        tags = dict(DEFAULT_TAGS)
        for klass in reversed(cls.__mro__):
            tags.update(klass.__dict__.get("_tags", {}))
        return tags

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"


class Preprocessor(Module):
    """Turns raw columns of the kinds it declares (tag ``kinds``) into a small finite domain."""

    role = "preprocess"

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(self.get_tags()["kinds"])

    def check_columns(self, df: pd.DataFrame, columns: list[Column]) -> None:
        """Every column is of a kind this module handles and is present in ``df``."""
        for col in columns:
            if col.kind not in self.kinds:
                raise ConfigError(f"preprocessor {self.name!r} handles {self.kinds} columns, "
                                  f"but column {col.name!r} is {col.kind}")
            if col.name not in df.columns:
                raise SchemaError(f"column {col.name!r}: not in the frame given to preprocessor {self.name!r}")

    @abc.abstractmethod
    def fit(self, df: pd.DataFrame, columns: list[Column], budget: Budget, rng: np.random.Generator) -> dict:
        """Return ``{column name: encoder}`` for ``columns`` (all of a kind in ``self.kinds``)."""

    def measured_columns(self, columns: list[Column]) -> list[str]:
        """The columns among ``columns`` whose fit reads the private rows: a private fit charges at
        least one mechanism with the column's name as its note for each.  Public knowledge (the
        schema and the parameters), so a model file's account can be checked against it."""
        return [c.name for c in columns] if self.get_tags()["spends_budget"] else []


class Selector(Module):
    """Chooses which marginals to measure and measures them with calibrated noise.

    ``rng`` (the user's seed) drives post-processing choices only; noise comes from the budget.
    """

    role = "select"
    _tags = {"spends_budget": True}

    def check_run_inputs(self, data: EncodedData, budget: Budget, model: "Model | None" = None) -> None:
        """Checks every selector makes before touching data: encoded records, a model to ask between
        rounds when adaptive, and budget left to spend."""
        if not isinstance(data, EncodedData):
            raise ConfigError(f"{self.name}.run needs EncodedData, got {type(data).__name__}")
        if self.get_tags()["adaptive"]:
            if model is None:
                raise ConfigError(f"{self.name} is adaptive: it needs a measurement-fitting model (e.g. "
                                  "model='pgm') to estimate the candidate marginals between rounds")
            if not model.get_tags()["answers_marginals"]:
                raise ConfigError(f"{self.name} is adaptive and needs a model that estimates marginals; "
                                  f"{model.name!r} cannot")
        if budget.private and not budget.remaining > 0:
            raise ConfigError(f"{self.name}: the budget {budget.name!r} has nothing left to spend")

    @abc.abstractmethod
    def run(self, data: EncodedData, budget: Budget, rng: np.random.Generator,
            model: "Model | None" = None) -> list[Measurement]:
        """Select and measure marginals of ``data``, charging ``budget``; return the measurements."""


#: Most work per sampled record a model read from a file may ask of ``sample`` (:meth:`Model.sample_work`:
#: multiply-adds of a network, elementary operations of other loops).  The per-parameter limits
#: (:attr:`Model._load_limits`) bound each factor, but the work is their product -- diffusion steps times a
#: network whose size only the file's bytes bound -- so it is bounded as a whole.  2e10 is about 7 minutes per
#: 1,000 records on one CPU thread (:data:`WORK_PER_SECOND`), 5.4 times the largest paper-size preset (TabDDPM
#: with the reference's 256-1024x4-256 denoiser at T = 1000: 3.7e9) and 2.6 times the widest point of TabDDPM's
#: tuning range (8 layers of 1024 at T = 1000: 7.6e9); REaLTabFormer's GPT-2 (6 x 768) and TabSyn's denoiser
#: (1,024 wide, 50 Heun steps) ask under 1e9 on an 11-column table (``make_demo``).
MAX_SAMPLE_WORK = 2e10
#: Sampling work one CPU thread does per second, measured, to say what work means in time: TabDDPM's,
#: TabSyn's and GPT-2's sampling passes ran 44e9 to 49e9 estimated multiply-adds a second on an AMD EPYC core
#: (OMP_NUM_THREADS=1; :meth:`Model.sample_work`'s estimates, timed).
WORK_PER_SECOND = 4.5e10
#: Records a sample's fixed work (GUM's rounds over its cells, a junction tree's tables) is spread over in
#: :meth:`Model.sample_work`, so that sampling a few records cannot take longer than this many at the limit.
WORK_ROWS = 1000
#: Most work a loaded model file's *default* sample (``Synthesizer.sample()`` without ``n``: the file's
#: estimate of the training rows, up to 1e9) may take: as long as :data:`WORK_ROWS` records at the limit.  A
#: larger default is not drawn (nor silently shrunk): ``sample`` asks for ``n``, which the caller chooses.
MAX_DEFAULT_SAMPLE_WORK = MAX_SAMPLE_WORK * WORK_ROWS
#: The least a sampled record costs whatever the model, as work: decoding it into typed columns (``mst``, whose
#: model asks a few operations a record, samples adult in memory at 2.5 µs a row and to CSV at 4.3 on one thread;
#: 2 µs here).  A cheap model's default sample is bounded by its rows: a file claiming 1e9 training rows of an
#: ``mst`` model asks for an hour of decoding, not 67 operations a record.
ROW_WORK = 2e-6 * WORK_PER_SECOND


class Model(Module):
    """Synthesis module: fits noisy measurements (tag ``fits="measurements"``) or records under DP
    (``fits="records"``), then samples encoded records.

    Subclasses implement :meth:`sample`, ``_get_state`` / ``_set_state`` (the fitted arrays) and
    call :meth:`_fitted` once fitted; the base class owns the rest of the state contract.
    """

    role = "model"
    _tags = {"fits": "measurements"}

    def fit(self, domain: Domain, measurements: list[Measurement], rng: np.random.Generator) -> "Model":
        """Fit noisy measurements (post-processing: spends no budget)."""
        raise ConfigError(f"model {self.name!r} fits records, not measurements")

    def check_domain(self, domain: Domain) -> None:
        """Checks of the parameters against the encoded domain (the preprocessors' release), made
        before the selector charges anything; raise ConfigError.  None by default."""

    def fit_round(self, domain: Domain, measurements: list[Measurement], rng: np.random.Generator) -> "Model":
        """The estimate an adaptive selector asks for between rounds.  Defaults to :meth:`fit`; a
        model may answer with a cheaper warm-started refit (PGM does), since the pipeline fits the
        final measurements with :meth:`fit` afterwards."""
        return self.fit(domain, measurements, rng)

    def refine_round(self, domain: Domain, measurements: list[Measurement], rng: np.random.Generator) -> "Model":
        """The last :meth:`fit_round` estimate of the same ``measurements`` taken further, which an
        adaptive selector asks for when a decision hinges on it.  Defaults to the estimate as it is;
        a model whose between-rounds refits stop early continues them (PGM's ``refine_tol``)."""
        return self

    def fit_records(self, data: EncodedData, budget: Budget, rng: np.random.Generator) -> "Model":
        """Fit encoded records directly, charging ``budget`` (record models only)."""
        raise ConfigError(f"model {self.name!r} fits measurements, not records")

    def project(self, clique) -> np.ndarray:
        """Current model estimate of the marginal over ``clique`` (used by adaptive selectors)."""
        raise ConfigError(f"model {self.name!r} cannot answer marginal queries for an adaptive selector")

    @abc.abstractmethod
    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` encoded records, shape (n, len(domain))."""

    def sampler(self, n: int, rng: np.random.Generator):
        """How a sample of ``n`` records is drawn in blocks (the pipeline streams large samples block
        by block, so that memory does not grow with ``n``): returns ``draw(start, size, rng)``, the
        records ``start .. start + size`` of the sample.  By default every block is an independent
        :meth:`sample` with the block's own ``rng``; a model whose records are cheaper drawn together
        overrides this (GUM's record pool).  ``rng`` drives what the blocks share."""
        return lambda start, size, r: self.sample(size, r)

    # ------------------------------------------------------------------ fitted state
    def _fitted(self, domain: Domain) -> None:
        """Mark the model fitted on ``domain`` (and forget cached answers of an earlier fit)."""
        self.domain_ = domain
        self._answers: dict = {}
        self._answer_cells = 0

    def _require_fit(self) -> None:
        if getattr(self, "domain_", None) is None:
            raise NotFittedError(f"{self._label()}: call fit (or set_state) first")

    def _check_n(self, n) -> int:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise ConfigError(f"{self._label()}.sample: n must be an integer >= 0, got {n!r}")
        return int(n)

    def get_state(self) -> dict:
        """JSON-able fitted state: parameters, domain and what ``_get_state`` adds.  It holds only
        what the DP release may depend on (noisy measurements and functions of them)."""
        self._require_fit()
        return {"params": self._saved_params(), "domain": self.domain_.to_dict(), **self._get_state()}

    def _saved_params(self) -> dict:
        return self.get_params()

    def _get_state(self) -> dict:
        """The fitted arrays, as JSON-able values."""
        raise ConfigError(f"model {self._label()!r} does not define a saved state")

    def dpsgd_runs(self) -> list[tuple[int, int]]:
        """The ``(epochs, batch size)`` of each DP-SGD run a private fit of this model makes (none by
        default).  With the model's DP record count (``total_``) they fix each run's steps and sampling
        rate (:func:`synthzoo.core.privacy.dpsgd.schedule`), which a model file's privacy account must
        record: an account whose DP-SGD events were edited to fewer steps or a lower rate is refused."""
        return []

    #: Largest values a *saved state* may give parameters that set how much work ``sample`` does
    #: (``{"iterations": 10_000}``): a model file is untrusted input, and a parameter edited to 1e9 must
    #: not make ``sample`` run for days.  Constructing a model by hand is not limited.
    _load_limits: ClassVar[dict] = {}
    #: Largest record count a saved state may claim.
    MAX_TOTAL = 1e12
    #: The form of what ``_get_state`` returns, checked field by field before ``_set_state`` reads a saved
    #: state (see :func:`check_state`): exactly these keys, each of its declared form.  ``None`` (a plug-in
    #: model that declares none) leaves the form to ``_set_state``.
    _state_spec: ClassVar[dict | None] = None
    #: Fit parameters added after model files were first written, each with the value that a file lacking it
    #: was fitted with (what the code before the parameter did): such a file loads with that value.
    _params_added: ClassVar[dict] = {}

    def set_state(self, state: dict, domain: Domain) -> None:
        """Restore what :meth:`get_state` returned.  A saved state is untrusted input: a missing or
        malformed field, a wrong domain, an unknown, out-of-range or method-shadowing parameter, a
        parameter past :attr:`_load_limits`, or sampling work per record past :data:`MAX_SAMPLE_WORK`
        (:meth:`sample_work`, checked on the restored state) raises :class:`ConfigError` naming it."""
        who = f"{self._label()}.set_state"
        if not isinstance(state, dict):
            raise ConfigError(f"{who}: the state must be a JSON object")
        missing = [k for k in ("params", "domain") if k not in state]
        if missing:
            raise ConfigError(f"{who}: the state lacks {missing}")
        if state["domain"] != json.loads(json.dumps(domain.to_dict())):
            raise ConfigError(f"{who}: the saved state was fitted on a different domain")
        params = state["params"]
        if not isinstance(params, dict):
            raise ConfigError(f"{who}: 'params' must be an object")
        if self._state_spec is not None:
            check_state({k: v for k, v in state.items() if k not in ("params", "domain")}, self._state_spec,
                        "model file: model_state")
            lacking = sorted(set(self._saved_params()) - set(params) - set(self._params_added))
            if lacking:  # a default is not what the model was fitted with
                raise ConfigError(f"model file: model_state.params lacks {lacking}")
            params = {**self._params_added, **params}
        known = self.get_params()
        for k, v in params.items():
            attr = getattr(type(self), k, None)
            if not isinstance(k, str) or k.startswith("_") or callable(attr) or isinstance(attr, property):
                raise ConfigError(f"{who}: params may not name {k!r} (not a parameter: it would shadow an attribute "
                                  "of the model)")
            if k not in known:
                raise ConfigError(f"{who}: unknown parameter {k!r}")
            # no count, width or seed is past 64 bits: one that is (a width of 10**30) reached torch, whose overflow
            # was a TypeError naming no parameter
            if any(type(x) is int and not -2 ** 63 <= x < 2 ** 63 for x in (v if isinstance(v, list) else [v])):
                raise ConfigError(f"model file: model_state.params.{k}: {v!r:.60} holds a whole number past 64 bits "
                                  "(no count or width is)")
            setattr(self, k, _from_json(v))
        self.check_params()
        self._check_load_limits(who)
        for key, hi in (("total", self.MAX_TOTAL), ("seed", 2.0 ** 63), ("eval_seed", 2.0 ** 63)):
            if key in state:
                x = state[key]
                if isinstance(x, bool) or not isinstance(x, (int, float)) or not (0 <= x <= hi) \
                        or (key != "total" and x != int(x)):
                    raise ConfigError(f"{who}: {key!r} must be a {'number' if key == 'total' else 'whole number'} in "
                                      f"[0, {hi:g}], got {x!r}")
        try:
            self._set_state(state, domain)
        except ConfigError:
            raise
        except (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError, RuntimeError) as e:
            raise ConfigError(f"{who}: malformed state ({e!r})") from None
        try:  # the work is a product of what the state restored (network sizes, cells), known only now
            self._check_sample_work(f"model {self._label()!r}")
        except ConfigError:
            self.domain_ = None  # not left fitted with what the file may not ask
            raise

    def _check_load_limits(self, who: str) -> None:
        for name, hi in self._load_limits.items():
            v = getattr(self, name, None)
            if v is None:
                raise ConfigError(f"{who}: parameter {name}=None (unbounded) is not allowed in a model file (at most "
                                  f"{hi:g}); it would let sampling grow without limit (refit with a bound to use it)")
            vals = v if isinstance(v, (list, tuple)) else [v]
            if any(isinstance(x, (int, float)) and x > hi for x in vals):
                raise ConfigError(f"{who}: parameter {name}={v!r} exceeds what a model file may set ({hi:g}); it "
                                  "would make sampling arbitrarily slow (refit with a smaller value to use it)")

    def _set_state(self, state: dict, domain: Domain) -> None:
        """Rebuild the fitted arrays from ``state`` (parameters are already restored) and call
        :meth:`_fitted`."""
        raise ConfigError(f"model {self._label()!r} does not define a saved state")

    # ------------------------------------------------------------------ sampling work
    def sample_work(self) -> float:
        """Estimated work of :meth:`sample` per record: multiply-adds of a network's passes, elementary
        operations of other loops, with a sample's fixed work spread over :data:`WORK_ROWS` records.

        Computed from the parameters and the fitted state alone (never timed), so it is the same on every
        machine: a model read from a file that asks for more than :data:`MAX_SAMPLE_WORK` is refused.  An
        unfitted model gives what its parameters alone imply (a lower bound, or 0).  A rough but
        correct-order estimate; a model defines it in :meth:`_sample_work`.

        Returns
        -------
        float
        """
        return float(self._sample_work()[0])

    def _sample_work(self) -> tuple[float, str]:
        """``(work per record, what drives it)``, e.g. ``(3.2e11, "steps=10000 x a denoiser of 3.2e7 weights")``
        -- the text names the parameters a refusal asks to lower.

        The default, 0, declares nothing: a model that does not define it (a plug-in) is not limited beyond its
        :attr:`_load_limits`, so third-party models still load.  A model whose sampling work grows with saved
        parameters or arrays (steps, iterations, network sizes) should define it."""
        return 0.0, "not declared"

    def _check_sample_work(self, who: str) -> None:
        """ConfigError when :meth:`_sample_work` exceeds :data:`MAX_SAMPLE_WORK` (what a model file may ask)."""
        work, drivers = self._sample_work()
        if not work <= MAX_SAMPLE_WORK:  # NaN too
            raise ConfigError(f"{who}: sampling would take ~{work:.2g} operations (multiply-adds) per record "
                              f"({drivers}), more than a model file may ask ({MAX_SAMPLE_WORK:.0e}, about "
                              f"{MAX_SAMPLE_WORK * WORK_ROWS / WORK_PER_SECOND:.0f} s per {WORK_ROWS:,} records on "
                              "one CPU thread); refit with smaller values of these to use it")


class MeasurementModel(Model):
    """A model that fits noisy measurements and answers marginal queries.

    Subclasses implement ``_fit(domain, measurements, rng)`` (measurements already checked) and
    ``_project(clique)``; :meth:`project` checks the clique, caches the answer for the current fit
    and returns a copy.
    """

    _tags = {"fits": "measurements", "answers_marginals": True}

    def fit(self, domain: Domain, measurements: list[Measurement], rng: np.random.Generator) -> "MeasurementModel":
        """Fit the noisy measurements (post-processing: spends no budget)."""
        self._fit(domain, check_measurements(self._label(), domain, measurements), rng)
        return self

    @abc.abstractmethod
    def _fit(self, domain: Domain, measurements: list[Measurement], rng: np.random.Generator) -> None:
        ...

    def project(self, clique) -> np.ndarray:
        """Estimated counts over ``clique`` (axes in the given order), scaled to the estimated total."""
        self._require_fit()
        clique = tuple(clique)
        bad = [a for a in clique if a not in self.domain_]
        if bad or len(set(clique)) != len(clique):
            raise ConfigError(f"{self._label()}.project: attributes {bad or list(clique)} are not in the domain "
                              "(or repeated)")
        hit = self._answers.get(clique)
        if hit is not None:
            return hit.copy()
        hit = np.asarray(self._project(clique), dtype=float)
        if getattr(self, "_answer_cells", 0) + hit.size <= ANSWER_CACHE_CELLS:  # a wide pool cannot fill memory
            self._answers[clique] = hit
            self._answer_cells = getattr(self, "_answer_cells", 0) + hit.size
        return hit.copy()

    @abc.abstractmethod
    def _project(self, clique: tuple) -> np.ndarray:
        ...


def _from_json(v):
    """JSON gives lists where parameters hold tuples."""
    if isinstance(v, list):
        return tuple(_from_json(x) for x in v)
    return v


# ---------------------------------------------------------------------------------- registry
REGISTRY: dict[str, dict[str, type]] = {"preprocess": {}, "select": {}, "model": {}}
ENTRY_POINT_GROUP = "synthzoo.modules"
_ROLE_BASE = {"preprocess": Preprocessor, "select": Selector, "model": Model}
_plugins_loaded = False


def register(role: str, name: str):
    """Class decorator: make a module available by ``name`` (``sz.make``, ``Synthesizer``, the grid,
    the tuner).  The class must derive from the role's base class.

    Examples
    --------
    >>> @register("select", "my_selector")          # doctest: +SKIP
    ... class MySelector(Selector): ...
    """

    def deco(cls):
        if role not in REGISTRY:
            raise ValueError(f"unknown role {role!r}; roles are {sorted(REGISTRY)}")
        if not (isinstance(cls, type) and issubclass(cls, _ROLE_BASE[role])):
            raise TypeError(f"{cls!r} must derive from synthzoo.core.base.{_ROLE_BASE[role].__name__}")
        if name in REGISTRY[role] and REGISTRY[role][name] is not cls:
            raise ValueError(f"{role} module {name!r} registered twice")
        P.check_space(name, cls._parameter_constraints, cls.hyperparameter_space())
        cls.role, cls.name = role, name
        REGISTRY[role][name] = cls
        return cls

    return deco


def unregister(role: str, name: str) -> None:
    """Remove a registered module (tests and interactive sessions)."""
    REGISTRY[role].pop(name, None)


def discover(package: str, namespace: dict) -> list[str]:
    """Import every module file of the role package ``package`` (its ``@register`` decorators run)
    and expose the classes registered from them in ``namespace``; returns their class names."""
    import importlib
    import pkgutil

    pkg = importlib.import_module(package)
    names = []
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{package}.{info.name}")
        for table in REGISTRY.values():
            for cls in table.values():
                if cls.__module__ == mod.__name__:
                    namespace[cls.__name__] = cls
                    names.append(cls.__name__)
    return sorted(set(names))


def load_plugins() -> None:
    """Import the modules third-party packages declare in the ``synthzoo.modules`` entry-point group
    (once).  An entry point that fails to import raises, naming it: nothing is skipped silently."""
    global _plugins_loaded
    if _plugins_loaded is not False:  # loaded, or loading (a plugin that imports synthzoo calls back here)
        return
    _plugins_loaded = None
    from importlib.metadata import entry_points

    failed = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):  # every plugin, so a broken one hides no other
        try:
            ep.load()
        except Exception as e:  # noqa: BLE001 - re-raised with the entry point's name
            failed.append((ep, e))
    if failed:
        _plugins_loaded = False  # raise again on the next call, until the plugin is fixed or removed
        ep, e = failed[0]
        more = f" (and {len(failed) - 1} more: {[f.name for f, _ in failed[1:]]})" if len(failed) > 1 else ""
        raise ConfigError(f"synthzoo plugin {ep.name!r} ({ep.value}) failed to load: {e}{more}") from e
    _plugins_loaded = True


def create(role: str, spec) -> Module:
    """A module instance from a registry name, a ``{"name": ..., **params}`` dict or an instance."""
    load_plugins()
    table = REGISTRY[role]
    if isinstance(spec, Module):
        if spec.role != role:
            raise ConfigError(f"{spec!r} is a {spec.role or 'unregistered'} module, not a {role} module")
        return spec.clone()
    params = {}
    if isinstance(spec, dict):
        spec = dict(spec)
        params = spec
        spec = params.pop("name", None)
    if not isinstance(spec, str):
        raise ConfigError(f"{role} module must be given by name or instance, got {spec!r}")
    if spec not in table:
        raise ConfigError(f"unknown {role} module {spec!r}; available: {sorted(table)}")
    sig = inspect.signature(table[spec]).parameters
    known = {k for k, p in sig.items() if p.kind is not p.VAR_KEYWORD}
    unknown = [] if len(known) < len(sig) else sorted(map(str, set(params) - known))
    if unknown:  # said with the parameters there are (the bare TypeError named neither)
        raise ConfigError(f"{role} module {spec!r}: unknown parameter(s) {unknown}; its parameters are "
                          f"{sorted(known)}")
    try:
        return table[spec](**params)
    except TypeError as e:
        raise ConfigError(f"{role} module {spec!r}: {e}") from None


def available(role: str | None = None) -> dict:
    """``{role: [names]}`` of the registered modules (plugins included)."""
    load_plugins()
    return {r: sorted(t) for r, t in REGISTRY.items() if role in (None, r)}

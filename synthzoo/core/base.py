"""The three module roles and the registry that names them.

The contract between roles is data, not inheritance (see DESIGN.md): a :class:`Domain`,
integer-coded records (:class:`EncodedData`) and a list of :class:`Measurement`.  As in
scikit-learn, ``__init__`` only stores parameters; work happens in ``fit``/``run``.
"""

from __future__ import annotations

import abc
import inspect
from typing import Any

import numpy as np
import pandas as pd

from .domain import Domain, EncodedData, Measurement
from .errors import ConfigError
from .privacy.ledger import Budget
from .schema import Column


class Module(abc.ABC):
    """Base of every pluggable module. Subclasses set ``role`` and get ``name`` from the registry."""

    role: str = ""
    name: str = ""
    paper: str = ""

    def get_params(self) -> dict[str, Any]:
        sig = inspect.signature(type(self).__init__)
        return {p: getattr(self, p) for p in sig.parameters if p != "self" and hasattr(self, p)}

    def check_params(self) -> None:
        """Raise :class:`ConfigError` naming a bad parameter. The pipeline calls it at construction,
        so a bad value fails before any data is read or budget spent."""

    def clone(self) -> "Module":
        """An unfitted copy with the same parameters (as scikit-learn's ``clone``)."""
        return type(self)(**self.get_params())

    @classmethod
    def hyperparameter_space(cls) -> dict:
        """Search space for the tuner: ``{param: ("float"|"int"|"log"|"cat", low_or_choices, high)}``."""
        return {}

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({params})"


class Preprocessor(Module):
    """Turns raw columns of some kinds into a small finite domain (and back, via core encoders)."""

    role = "preprocess"
    kinds: tuple[str, ...] = ()
    uses_budget = False

    def check_columns(self, df: pd.DataFrame, columns: list[Column]) -> None:
        """Every column is of a kind this module handles and is present in ``df``."""
        from .errors import SchemaError

        for col in columns:
            if col.kind not in self.kinds:
                raise ConfigError(f"preprocessor {self.name!r} handles {self.kinds} columns, "
                                  f"but column {col.name!r} is {col.kind}")
            if col.name not in df.columns:
                raise SchemaError(f"column {col.name!r}: not in the frame given to preprocessor {self.name!r}")

    @abc.abstractmethod
    def fit(self, df: pd.DataFrame, columns: list[Column], budget: Budget, rng: np.random.Generator) -> dict:
        """Return ``{column name: encoder}`` for ``columns`` (all of a kind in ``self.kinds``)."""


class Selector(Module):
    """Chooses which marginals to measure and measures them with calibrated noise."""

    role = "select"
    adaptive = False  # adaptive selectors call ``model.fit`` / ``model.project`` between rounds

    def check_run_inputs(self, data: EncodedData, budget: Budget, model: "Model | None" = None) -> None:
        """Checks every selector makes before touching data: encoded records, a model to ask between
        rounds when adaptive, and budget left to spend."""
        if not isinstance(data, EncodedData):
            raise ConfigError(f"{self.name}.run needs EncodedData, got {type(data).__name__}")
        if self.adaptive and model is None:
            raise ConfigError(f"{self.name} is adaptive: it needs a measurement-fitting model (e.g. model='pgm') "
                              "to estimate the candidate marginals between rounds")
        if budget.private and not budget.remaining > 0:
            raise ConfigError(f"{self.name}: the budget {budget.name!r} has nothing left to spend")

    @abc.abstractmethod
    def run(self, data: EncodedData, budget: Budget, rng: np.random.Generator,
            model: "Model | None" = None) -> list[Measurement]:
        """Select and measure marginals of ``data``, charging ``budget``; return the measurements."""


class Model(Module):
    """Synthesis module. Measurement models fit noisy marginals; record models fit records under DP-SGD."""

    role = "model"
    uses_measurements = True

    def fit(self, domain: Domain, measurements: list[Measurement], rng: np.random.Generator) -> "Model":
        """Fit noisy measurements (post-processing: spends no budget)."""
        raise ConfigError(f"model {self.name!r} fits records, not measurements")

    def fit_round(self, domain: Domain, measurements: list[Measurement], rng: np.random.Generator) -> "Model":
        """The estimate an adaptive selector asks for between rounds.  Defaults to :meth:`fit`; a
        model may answer with a cheaper warm-started refit (PGM does), since the pipeline fits the
        final measurements with :meth:`fit` afterwards."""
        return self.fit(domain, measurements, rng)

    def fit_records(self, data: EncodedData, budget: Budget, rng: np.random.Generator) -> "Model":
        """Fit encoded records directly, charging ``budget`` (record models only)."""
        raise ConfigError(f"model {self.name!r} fits measurements, not records")

    def project(self, clique) -> np.ndarray:
        """Current model estimate of the marginal over ``clique`` (used by adaptive selectors)."""
        raise ConfigError(f"model {self.name!r} cannot answer marginal queries for an adaptive selector")

    @abc.abstractmethod
    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` encoded records, shape (n, len(domain))."""

    @abc.abstractmethod
    def get_state(self) -> dict:
        """JSON-able fitted state. Must hold only what the DP release may depend on."""

    @abc.abstractmethod
    def set_state(self, state: dict, domain: Domain) -> None:
        """Restore what :meth:`get_state` returned."""


REGISTRY: dict[str, dict[str, type]] = {"preprocess": {}, "select": {}, "model": {}}


def register(role: str, name: str):
    """Class decorator: make a module available by ``name`` (e.g. ``sz.make`` / ``Synthesizer``)."""

    def deco(cls):
        if role not in REGISTRY:
            raise ValueError(f"unknown role {role!r}")
        if name in REGISTRY[role]:
            raise ValueError(f"{role} module {name!r} registered twice")
        cls.role, cls.name = role, name
        REGISTRY[role][name] = cls
        return cls

    return deco


def create(role: str, spec) -> Module:
    """A module instance from a registry name, a ``{"name": ..., **params}`` dict or an instance."""
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
    try:
        return table[spec](**params)
    except TypeError as e:
        raise ConfigError(f"{role} module {spec!r}: {e}") from None


def available(role: str | None = None) -> dict:
    return {r: sorted(t) for r, t in REGISTRY.items() if role in (None, r)}

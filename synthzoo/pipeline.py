"""Synthesizer = preprocessors + selector + model, with one privacy ledger.

The framework is the one of Chen et al., "Benchmarking Differentially Private Tabular Data
Synthesis": preprocessing turns columns into a small finite domain (spending a share of the
budget where it measures the data), a selector picks and measures marginals, a model fits the
noisy measurements (or, for DP-SGD models, the records) and samples.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import io
import json
import math
import os
import re
import sys
import time
import warnings
from pathlib import Path

import dp_accounting as dpa
import numpy as np
import pandas as pd

from ._version import __version__
from .core import base
from .core.base import Preprocessor, create
from .core.domain import EncodedData
from .core.encoding import CategoricalEncoder, TableEncoder
from .core.features import FeatureData, FeatureTable
from .core.tokens import TokenData, TokenTable
from .core.errors import (BudgetExceededError, ConfigError, NotFittedError, PrivacySettingsWarning, SchemaError,
                          TimeZoneWarning)
from .core.measurements import estimate_total, total_sigma
from .core.params import check_seed
from .core.privacy.ledger import (EPSILON_MAX, REPLAYABLE_WARNING, Budget, PrivacyLedger, PrivacySpent,
                                  NOTE_CHARS, SavedAccount, charge_owner, check_privacy_params, gaussian_sigma,
                                  privacy_warnings, release_warnings, rho_for, rho_of_event)
from .core.statecheck import printable
from .core.privacy.dpsgd import schedule as dpsgd_schedule
from .core.dpschema import check_dp_schema_meta, dp_schema_report, measured_under_dp
from .core.csvfile import check_output_path
from .core.schema import READ_FROM_ROWS, Schema, parse_json_bytes, read_json
from .modelfile import FORMAT, MAX_BYTES, check_document, check_not_the_key, sign_document, verify_document

#: Rows per block of a sample: every sample is generated block by block, block k from a random stream
#: derived from the seed and k, so that one-go, chunked and streamed samples hold the same rows.
SAMPLE_BLOCK = 100_000
#: Most memory a loaded model file's default in-memory sample (``sample()`` without ``n``) may take, estimated
#: from the schema (:meth:`Synthesizer._frame_bytes`).  The streaming calls (``sample_chunks``, ``sample_to_csv``,
#: ``synthzoo sample``) hold a block at a time and are bounded by the sampling work alone.
MAX_DEFAULT_SAMPLE_BYTES = 4e9
#: The most rows one sample may ask for (2^53, about 9e15: beyond every disk, and where a count read as a float,
#: such as the command line's -n 1e16, stops being exact); more was an OverflowError deep in the blocks' loop.
MAX_SAMPLE_ROWS = 2 ** 53
DEFAULT_NUMERIC = {"name": "uniform"}  # numeric columns no preprocessor claims are binned on public bounds
DEFAULT_FEATURES = {"name": "features"}  # a model that fits features: scaled numbers, one-hot categories
DEFAULT_TOKENS = {"name": "tokens"}  # a model that fits token rows: category tokens, digits of numbers


def _unencodable(frame: pd.DataFrame, encoding: str, err: UnicodeEncodeError) -> str:
    """The message for synthetic rows that the CSV's text encoding cannot write, naming the column (or
    the header) that holds a character it lacks, instead of pandas' UnicodeEncodeError."""
    def fits(text: str) -> bool:
        return text.encode(encoding, errors="ignore").decode(encoding) == text

    where, what = "the rows", f"character {err.object[err.start:err.end]!r}"
    names = [str(c) for c in frame.columns if not fits(str(c))]
    if names:
        where, what = "the header", f"column name {names[0]!r}"
    else:
        for c in frame.columns:
            hit = next((v for v in frame[c].dropna().astype(str).unique() if not fits(v)), None)
            if hit is not None:
                where, what = f"column {str(c)!r}", f"value {hit!r}"
                break
    return (f"the text encoding {encoding!r} cannot write the {what} of {where}; write the CSV in an encoding that "
            "holds it, e.g. utf-8")


def _csv_opener(path: Path):
    """``open`` for a CSV file named ``path``, compressed as its name says (``.gz``, ``.bz2``, ``.xz``: what
    pandas reads back by the name); a name pandas would read as another archive is a ConfigError."""
    import bz2
    import gzip
    import lzma

    name = path.name.lower()
    if re.search(r"\.(zip|zst|tar|tgz|tar\.(gz|bz2|xz))$", name):
        raise ConfigError(f"{str(path)!r}: a sample is written as plain CSV, or compressed as .gz, .bz2 or .xz by "
                          "the file name; name it e.g. fake.csv or fake.csv.gz")
    return {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}.get(path.suffix.lower(), open)


def _check_disk_room(fh, part_path: Path, path: Path, rows: int, n: int) -> None:
    """After a sample's first chunk: ConfigError when the ``n`` rows, at the size the first ``rows`` took, would
    not fit in the free space of the file's disk (``sample -n 1e12`` began writing a file of ~100 TB and ran
    until the disk was full)."""
    import shutil

    try:
        fh.flush()
        written = part_path.stat().st_size
        free = shutil.disk_usage(part_path.parent).free
    except OSError:  # a file system that does not say: write on, as before
        return
    need = written / rows * n
    if need - written > free:
        raise ConfigError(f"{str(path)!r}: {n:,} rows would take about {_bytes_text(need)} (the first {rows:,} took "
                          f"{written / rows:.0f} bytes a row), and its disk has {_bytes_text(free)} free; draw fewer "
                          "rows, compress (a .gz name), or write elsewhere")


def _bytes_text(b: float) -> str:
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if b >= size:
            return f"{b / size:,.1f} {unit}"
    return f"{b / 1e3:,.1f} kB"


class Synthesizer:
    """A differentially private synthesizer assembled from interchangeable modules.

    Parameters
    ----------
    preprocess : list of str, dict or Preprocessor, optional
        Modules by registry name, ``{"name": ..., **params}`` or instance (cloned, as scikit-learn
        clones estimators: the fitted modules are this synthesizer's ``preprocess``, ``select`` and
        ``model``); each handles the column kinds it declares.  Numeric columns no preprocessor
        claims get ``"uniform"`` binning on public bounds; categorical ones keep their schema
        categories.
    select : str, dict, Selector or None, default None
        The selector; None for a model that fits records directly.
    model : str, dict or Model, default "gum"
        The synthesis model.
    epsilon : float or None, default 1.0
        The privacy request; ``None`` (or ``inf``) is a non-private run, reported as such.
    delta : float, default 1e-5
    schema : Schema, optional
        Public knowledge about the table.  ``None`` infers one from the training frame, which warns
        that it is not covered by DP.
    seed : int, default 0
        Governs sampling from the fitted model and every post-processing step: the same fitted
        model and the same seed give the same synthetic data.  It never decides DP noise, which
        comes from OS entropy that is never stored (two fits with the same seed release
        different noise).
    budget_split : dict, optional
        ``{"preprocess": share, "select": share}`` (``"model"`` for record models), fractions of
        the total zCDP budget; default 0.1 to preprocessing when a preprocessor spends budget, the
        rest to selection and measurement (or to the model).
    out_of_bounds : {"raise", "clip"}, default "raise"
        What numeric values outside the public bounds do.
    name : str, optional
        A label (presets set their name).
    schema_ledger : PrivacyLedger, optional
        The ledger :func:`synthzoo.dp_schema` returned when the schema itself was measured from the
        private data; its charges are replayed into this synthesizer's ledger, so the reported
        (epsilon, delta) covers the schema too, and the stages share what is left.
    noise_seed : int or None, default None
        Test-only opt-in for replayable noise: the same ``noise_seed`` gives the same noise, so the
        release is private only while it stays secret.  Every report and the saved file say so;
        the noise seed itself is never saved.

    Attributes
    ----------
    account_ : PrivacyLedger or SavedAccount
        The privacy account (the live ledger after ``fit``, the saved one after ``load``).
    n_estimate_ : float
        The DP estimate of the number of training rows (post-processing of the release).

    Examples
    --------
    >>> import synthzoo as sz
    >>> df, schema = sz.datasets.make_demo(n=2000)                           # doctest: +SKIP
    >>> synth = sz.Synthesizer(preprocess=["privtree"], select="mst", model="pgm",
    ...                        epsilon=1.0, delta=1e-5, schema=schema).fit(df)  # doctest: +SKIP
    >>> fake = synth.sample()                                               # doctest: +SKIP
    """

    def __init__(self, preprocess=None, select=None, model="gum", epsilon=1.0, delta=1e-5, schema=None,
                 seed=0, budget_split=None, out_of_bounds="raise", name=None, schema_ledger=None,
                 noise_seed=None):
        given_epsilon = epsilon
        self.epsilon, self.delta = check_privacy_params(epsilon, delta)
        privacy_warnings(self.epsilon, self.delta)  # from the request alone; the table's size is judged after fit
        if noise_seed is not None and (isinstance(noise_seed, bool) or not isinstance(noise_seed, (int, np.integer))
                                       or noise_seed < 0):
            raise ConfigError(f"noise_seed must be None or a non-negative integer, got {noise_seed!r}")
        self._noise_seed = noise_seed  # never saved, never in config()
        if schema is not None and not isinstance(schema, Schema):
            raise ConfigError(f"schema must be a synthzoo.Schema (e.g. Schema.from_json(path)), got {type(schema).__name__}")
        self._schema_cost_elsewhere = False  # a dp_schema measured on a shared ledger: fit needs schema_ledger
        if schema_ledger is None and schema is not None:
            schema_ledger, self._schema_cost_elsewhere = schema_cost(schema, self.epsilon)
        if schema_ledger is not None:
            if not isinstance(schema_ledger, PrivacyLedger):
                raise ConfigError("schema_ledger must be the PrivacyLedger returned by synthzoo.dp_schema")
            if schema_ledger.private != (self.epsilon is not None):
                raise ConfigError("schema_ledger and this synthesizer disagree on whether the run is private")
            if schema_ledger.private and schema_ledger.extra_delta >= self.delta:
                raise ConfigError("schema_ledger's additive delta uses up this synthesizer's delta")
        self.schema_ledger = schema_ledger
        check_seed(seed)
        if out_of_bounds not in ("raise", "clip"):
            raise ConfigError("out_of_bounds must be 'raise' or 'clip'")
        self.schema, self.seed, self.out_of_bounds = schema, int(seed), out_of_bounds
        if name is not None and not isinstance(name, str):  # a model file holds a string: save wrote what load refused
            raise ConfigError(f"name must be a string or None, got {name!r}")
        self.name = name
        if preprocess is not None and not isinstance(preprocess, (str, dict, base.Module, list, tuple)):
            raise ConfigError(f"preprocess must be a module (name, dict or instance) or a list of them, got "
                              f"{preprocess!r}")
        pre = [] if preprocess is None else ([preprocess] if isinstance(preprocess, (str, dict, base.Module))
                                             else list(preprocess))
        self.preprocess = [create("preprocess", p) for p in pre]
        self.model = create("model", model)
        self.select = None if select is None else create("select", select)  # each checks its parameters
        self._check_combination()
        if schema is not None:
            self._check_schema(schema)
        self.budget_split = self._split(budget_split)
        if self.epsilon is None:
            warnings.warn(f"epsilon={given_epsilon}: this is a NON-PRIVATE run; the synthetic data carries no "
                          "differential privacy guarantee", UserWarning, stacklevel=2)
        self._fitted = False
        self._sample_calls = 0

    # -- construction-time checks --------------------------------------------------------
    def _check_combination(self) -> None:
        """What the modules' tags say about each other: kinds claimed once, a selector exactly when
        the model fits measurements, an adaptive selector only with a model that answers marginals."""
        claimed: dict[str, str] = {}
        for p in self.preprocess:
            for kind in p.kinds:
                if kind in claimed:
                    raise ConfigError(f"preprocessors {claimed[kind]!r} and {p.name!r} both handle {kind} columns; "
                                      "keep one")
                claimed[kind] = p.name
        m, s = self.model.get_tags(), self.select
        makes = {p.name: p.get_tags()["output"] for p in self.preprocess}
        wrong = [n for n, out in makes.items() if out != m["input"]]
        if wrong:
            raise ConfigError(f"model {self.model.name!r} fits {m['input']}, but preprocessor(s) {wrong} make "
                              f"{makes[wrong[0]]}; use {_MAKERS.get(m['input'], 'uniform, privtree or rare_merge')}")
        if m["fits"] == "measurements" and s is None:
            raise ConfigError(f"model {self.model.name!r} fits noisy measurements: give a selector, e.g. select='indif'")
        if m["fits"] == "records" and s is not None:
            raise ConfigError(f"model {self.model.name!r} fits records directly under DP; it takes no selector "
                              f"(got {s.name!r}); use select=None")
        if s is not None and s.get_tags()["adaptive"] and not m["answers_marginals"]:
            raise ConfigError(f"selector {s.name!r} is adaptive and needs a model that estimates marginals; "
                              f"{self.model.name!r} cannot")

    def _check_schema(self, schema: Schema) -> None:
        """Each module's checks of its parameters against the schema, before any budget is spent."""
        for m in [*self.preprocess, self.select, self.model]:
            if m is not None:
                m.check_schema(schema, self.epsilon is not None)

    @property
    def _main_stage(self) -> str:
        return "select" if self.model.get_tags()["fits"] == "measurements" else "model"

    def _spenders(self) -> list:
        return [p for p in self.preprocess if p.get_tags()["spends_budget"]]

    def _split(self, split) -> dict:
        main = self._main_stage
        spenders = self._spenders()
        if split is None:
            pre = 0.1 if spenders else 0.0
            return {"preprocess": pre, main: 1.0 - pre}
        if not isinstance(split, dict):
            raise ConfigError("budget_split must be a dict like {'preprocess': 0.1, 'select': 0.9}")
        allowed = {"preprocess", main}
        unknown = set(split) - allowed
        if unknown:
            raise ConfigError(f"budget_split: unknown stage(s) {sorted(unknown)}; stages are {sorted(allowed)}")
        for k, v in split.items():  # float() took "0.9" and True, and raised a TypeError on None
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise ConfigError(f"budget_split[{k!r}] must be a number (a share of the budget), got {v!r}")
        out = {"preprocess": float(split.get("preprocess", 0.0)), main: float(split.get(main, 0.0))}
        if any(v < 0 or math.isnan(v) for v in out.values()) or sum(out.values()) > 1 + 1e-9:
            raise ConfigError(f"budget_split shares must be >= 0 and sum to at most 1, got {out}")
        if spenders and out["preprocess"] <= 0:
            raise ConfigError(f"preprocessor(s) {[p.name for p in spenders]} spend budget but budget_split gives "
                              "preprocessing none")
        if out[main] <= 0:
            raise ConfigError(f"budget_split gives the {main} stage no budget")
        if not spenders and out["preprocess"] > 0:  # a warning: a saved model's split must still load
            warnings.warn(f"budget_split gives preprocessing {out['preprocess']:g} of the budget, but no "
                          f"preprocessor here spends any ({[p.name for p in self.preprocess]}): that share goes "
                          f"unspent, and the release spends less epsilon than requested; give it to the {main} "
                          "stage", PrivacySettingsWarning, stacklevel=3)
        return out

    # -- fit ------------------------------------------------------------------------------
    def fit(self, df: pd.DataFrame, progress: bool = False) -> "Synthesizer":
        """Learn from the private frame ``df``. Every access to it is charged to the ledger.

        ``progress=True`` prints each stage and its time to stderr and, on a terminal, shows the
        running stage live (elapsed time; for a selector, the share of its budget spent so far).
        torch's global random generator is left as it was: a model's initialisation and dropout draw
        from it during the fit (in a private fit seeded from the secret noise).
        """
        with _torch_global_rng_kept():
            return self._fit(df, progress)

    def _fit(self, df: pd.DataFrame, progress: bool) -> "Synthesizer":
        from .core.progress import stage_progress

        say = (lambda msg: print(f"  [synthzoo] {msg}", file=sys.stderr, flush=True)) if progress else (lambda m: None)
        if self._schema_cost_elsewhere:
            raise ConfigError("schema: it was measured by dp_schema on a shared ledger, so its cost is not with it; "
                              "pass that ledger as schema_ledger=... (or measure the schema with its own epsilon)")
        live = None if progress else False  # live lines only on a terminal
        schema = self.schema
        if schema is None:
            if not isinstance(df, pd.DataFrame) or len(df) == 0:
                raise SchemaError("fit needs a non-empty pandas DataFrame")
            schema = Schema.infer(df)
        # a model of codes: categorical columns are matched to the schema once, here, and encoded from the codes
        df = schema.validate(df, out_of_bounds=self.out_of_bounds,
                             categories=self.model.get_tags()["input"] == "codes")
        if self.schema is None:
            self._check_schema(schema)
        if self.epsilon is not None and "rows" in schema.meta:
            # a row count describes the table, not its domain: no module needs it, and saved with a release it
            # would state what the release's DP count hides (a shipped dataset's schema carries the exact one)
            warnings.warn(f"the schema's 'rows' ({schema.meta['rows']!r}) is not saved with a private release: no "
                          "DP covers a row count given there; the release carries its own DP estimate",
                          PrivacySettingsWarning, stacklevel=2)
            schema = Schema(list(schema.columns), {k: v for k, v in schema.meta.items() if k != "rows"})
        self.schema_ = schema
        self.columns_ = list(df.columns)  # the order only: dtypes come from the schema
        self.ledger_ = self.account_ = self._new_ledger()
        seeds = np.random.SeedSequence(self.seed).spawn(3)
        timings = {}

        t0 = time.perf_counter()
        pre_rng = np.random.default_rng(seeds[0])
        with stage_progress("  [synthzoo] preprocess", enabled=live), warnings.catch_warnings():
            warnings.simplefilter("ignore", TimeZoneWarning)  # validate() said it; the encoders read the column again
            self.encoder_ = self._fit_preprocess(df, schema, pre_rng)
            if isinstance(self.encoder_, FeatureTable):
                # the encoding's draws for each record (a mode from its posterior, a point within an integer's
                # level) are handed out by row: from a public seed a neighbouring table would shift them for
                # every later record, so a private fit draws them from the secret noise
                draws = self.ledger_.noise.generator() if self.ledger_.private else pre_rng
                data = FeatureData(self.encoder_.transform(df, draws), self.encoder_)
                shape = f"{data.x.shape[1]} features"
            elif isinstance(self.encoder_, TokenTable):
                data = TokenData(self.encoder_.transform(df), self.encoder_)
                shape = f"{data.x.shape[1]} tokens per row, vocabulary {self.encoder_.vocab_size}"
            else:
                data = EncodedData(self.encoder_.transform(df), self.encoder_.domain)
                shape = f"domain of {len(data.domain)} columns, {data.domain.size():.3g} cells"
        timings["preprocess"] = time.perf_counter() - t0
        say(f"preprocess ({', '.join(p.name for p in self.preprocess) or 'default'}): {shape}, "
            f"{timings['preprocess']:.1f}s")

        t0 = time.perf_counter()
        rng = np.random.default_rng(seeds[1])
        if self._main_stage == "select":
            self.model.check_domain(self.encoder_.domain)  # a model that cannot hold the domain, before selection
            budget = self._stage(self.select.name, self.budget_split["select"])
            spent = (lambda: budget.spent / budget.rho) if budget.private and budget.rho > 0 else None
            with stage_progress(f"  [synthzoo] select ({self.select.name})", enabled=live, fraction=spent):
                measurements = self.select.run(data, budget, rng, model=self.model)
            timings["select"] = time.perf_counter() - t0
            say(f"select ({self.select.name}): {len(measurements)} noisy marginals, {timings['select']:.1f}s")
            t0 = time.perf_counter()
            with stage_progress(f"  [synthzoo] model ({self.model.name})", enabled=live):
                self.model.fit(self.encoder_.domain, measurements, np.random.default_rng(seeds[2]))
            self.n_estimate_ = estimate_total(measurements, floor=0.0)
            n_sigma = total_sigma(measurements)
            masses = [m.sigma * math.sqrt(2 / math.pi) * np.size(m.noisy) for m in measurements]
            noise_mass = float(np.median(masses)) if masses else None
        else:
            budget = self._stage(self.model.name, self.budget_split["model"])
            with stage_progress(f"  [synthzoo] model ({self.model.name})", enabled=live):
                self.model.fit_records(data, budget, np.random.default_rng(seeds[2]))
            self.n_estimate_ = _implied_rows(self.model)[0]
            n_sigma = getattr(self.model, "total_sigma_", None)
            noise_mass = None
        timings["model"] = time.perf_counter() - t0
        say(f"model ({self.model.name}): {timings['model']:.1f}s; {self.ledger_.spent()}")
        del data  # nothing private is kept past fit

        spent = self.ledger_.spent()
        if self.ledger_.private and spent.epsilon > self.epsilon * (1 + 1e-9):
            raise RuntimeError(f"ledger overspent: {spent}")  # the ledger refuses first; belt and braces
        self.timings_ = timings
        # judged on the DP estimate of the row count (post-processing), never on len(df)
        self.warnings_ = release_warnings(self.epsilon, self.delta, self.n_estimate_, noise_mass,
                                          "DP estimate" if self.ledger_.private else "exact count, non-private run",
                                          n_sigma=n_sigma)
        self.tuning_ = None  # a fresh fit; a tuner that selected this configuration says so (see privacy_report)
        self._fitted = True
        self._from_file = False  # fitted here: the default sample size is this fit's own
        self._sample_calls = 0
        return self

    def _new_ledger(self) -> PrivacyLedger:
        prior = self.schema_ledger
        if prior is None:
            return PrivacyLedger(self.epsilon, self.delta, noise_seed=self._noise_seed)
        ledger = PrivacyLedger(self.epsilon, self.delta, reserved_delta=prior.extra_delta, noise_seed=self._noise_seed)
        try:
            ledger.absorb(prior, "schema:")  # refused if the schema alone exceeds this request
        except BudgetExceededError:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                # a ledger with the largest budget there is (EPSILON_MAX), to say what the schema alone costs
                alone = PrivacyLedger(EPSILON_MAX, self.delta, reserved_delta=prior.extra_delta)
                try:
                    alone.absorb(prior)
                    shown = f"{alone.spent().epsilon:.4g}"
                except BudgetExceededError:
                    shown = f"more than {EPSILON_MAX:g}"
            raise BudgetExceededError(
                f"the schema's DP measurement (schema_ledger) alone comes to epsilon={shown} at "
                f"this fit's delta={self.delta:g}, past its epsilon={self.epsilon:g}: a release on a schema dp_schema "
                "measured reports their total, so ask for a larger epsilon, or measure the schema with a smaller "
                "one") from None
        if ledger.private and not ledger.rho_remaining > 1e-12 * ledger.total_rho:
            raise BudgetExceededError(
                f"the schema's DP measurement (schema_ledger) spent all of this fit's epsilon={self.epsilon:g}, so "
                "nothing is left to fit the synthesizer with: a release on a schema dp_schema measured reports their "
                "total, so ask for a larger epsilon than the schema's, or measure the schema with a smaller one")
        self._stage_rho = ledger.rho_remaining
        return ledger

    def _stage(self, name: str, share: float) -> Budget:
        """A stage's budget: ``share`` of what the ledger had when fitting started (after any schema cost)."""
        if not self.ledger_.private:
            return self.ledger_.stage(name, share)
        avail = getattr(self, "_stage_rho", None) if self.schema_ledger is not None else None
        return Budget(self.ledger_, name, share * (self.ledger_.total_rho if avail is None else avail))

    def _assignments(self, schema: Schema) -> list[tuple[Preprocessor, list]]:
        """Each preprocessor that runs, with the schema columns it encodes (the configured ones, and
        the default for a model's input or for numbers none of them claims)."""
        mods: list[Preprocessor] = list(self.preprocess)
        wants = self.model.get_tags()["input"]
        features, tokens = wants == "features", wants == "tokens"
        default = DEFAULT_FEATURES if features else DEFAULT_TOKENS if tokens else DEFAULT_NUMERIC
        if (features or tokens) and not mods:
            mods.append(create("preprocess", dict(default)))
        elif not any(set(p.kinds) & {"numerical", "datetime"} for p in mods) and any(c.is_numeric for c in schema):
            mods.append(create("preprocess", dict(default)))
        out = [(p, [c for c in schema.columns if c.kind in p.kinds]) for p in mods]
        return [(p, cols) for p, cols in out if cols]

    def _fit_preprocess(self, df, schema, rng) -> TableEncoder | FeatureTable:
        encoders: dict = {}
        spenders = self._spenders()
        wants = self.model.get_tags()["input"]
        features, tokens = wants == "features", wants == "tokens"
        for p, cols in self._assignments(schema):
            if p in spenders:
                budget = self._stage(p.name, self.budget_split["preprocess"] / len(spenders))
            else:
                budget = _no_budget()
            encoders.update(p.fit(df, cols, budget, rng))
        for c in schema.columns:
            if c.name not in encoders:
                if c.kind != "categorical" or features or tokens:
                    raise ConfigError(f"column {c.name!r}: no preprocessor encodes {c.kind} columns")
                encoders[c.name] = CategoricalEncoder(c)
        if tokens:
            return TokenTable(schema, encoders)
        return FeatureTable(schema, encoders) if features else TableEncoder(schema, encoders)

    # -- sample ---------------------------------------------------------------------------
    def sample(self, n: int | None = None, seed: int | None = None) -> pd.DataFrame:
        """``n`` synthetic rows with the training frame's columns, in order, typed by the schema
        (:attr:`synthzoo.Column.output_dtype`; never by the private frame's dtypes).

        ``n=None`` draws as many rows as the DP estimate of the training rows
        (:attr:`n_estimate_`, computed from the noisy release; the exact count is never used).  For a
        synthesizer read from a model file by :meth:`load` that default is the file's claim: when drawing it
        would take more than :data:`~synthzoo.core.base.MAX_DEFAULT_SAMPLE_WORK` (rows times the model's
        :meth:`~synthzoo.core.base.Model.sample_work`: as long as 1,000 records at the most a file may ask,
        about 7 CPU minutes), :class:`ConfigError` asks for ``n`` instead of drawing it (or silently fewer
        rows); an explicit ``n`` is the caller's choice and is not limited beyond :data:`MAX_SAMPLE_ROWS` (2^53)
        (:meth:`sample_chunks` and :meth:`sample_to_csv` likewise).
        Without ``seed`` the k-th call after fit/load draws from a stream fixed by the
        synthesizer's seed and k, so the same seed gives the same synthetic data.

        The rows are drawn in blocks of :data:`SAMPLE_BLOCK`, exactly as :meth:`sample_chunks`
        and :meth:`sample_to_csv` draw them: the same model and seed give the same rows whether
        they are sampled in one go, in chunks of any size or to a file.
        """
        if n is None and getattr(self, "_from_file", False):
            self._check_default_memory(self._sample_size(None))
        parts = list(self.sample_chunks(n, chunk=SAMPLE_BLOCK, seed=seed))
        return parts[0] if len(parts) == 1 else pd.concat(parts, ignore_index=True)

    def sample_chunks(self, n: int | None = None, chunk: int | None = None, seed: int | None = None,
                      progress: bool | None = False):
        """Iterate over ``n`` synthetic rows as data frames of ``chunk`` rows (the last one shorter),
        so that memory does not grow with ``n``.

        The rows are those :meth:`sample` returns for the same ``n`` and ``seed``, whatever ``chunk``
        is: they are generated in fixed blocks of :data:`SAMPLE_BLOCK` rows, block ``k`` from a
        random stream derived from the seed and ``k``, and regrouped into chunks (memory holds
        about ``max(chunk, SAMPLE_BLOCK)`` rows).  ``chunk=None`` yields whole blocks.
        ``progress``: a bar over the rows on stderr (None: when stderr is a terminal and ``n`` spans
        several blocks).
        """
        self._check_fitted()
        n = self._sample_size(n)
        if chunk is None:
            chunk = SAMPLE_BLOCK
        if isinstance(chunk, bool) or not isinstance(chunk, (int, np.integer)) or chunk < 1:
            raise ConfigError(f"chunk must be a positive integer, got {chunk!r}")
        base = self._sample_entropy(seed)
        return self._chunks(n, int(chunk), base, progress)

    def sample_to_csv(self, path, n: int | None = None, chunk: int | None = None, seed: int | None = None,
                      progress: bool | None = None, **to_csv) -> int:
        """Write ``n`` synthetic rows to the CSV file ``path`` chunk by chunk (the rows :meth:`sample`
        returns for the same ``n`` and ``seed``; memory does not grow with ``n``).  ``to_csv``
        keywords go to :meth:`pandas.DataFrame.to_csv` (``sep``, ``encoding``, ...).  The rows go
        to ``<path>.part``, renamed to ``path`` once complete (an interrupted run leaves no file
        that looks finished); a ``path`` that exists and is not a regular file (``/dev/null``, a pipe)
        is written directly, never replaced, and so is an open text file (``sys.stdout``).  Returns the
        number of rows written."""
        to_csv.setdefault("index", False)
        encoding = to_csv.pop("encoding", None)
        self._check_fitted()
        stream = hasattr(path, "write")
        if not stream:
            path = _as_path(path, "sample_to_csv")
            special = path.exists() and not path.is_file() and not path.is_dir()
            if not special:  # said now, naming the caller's path, not the .part file after the model's work
                check_output_path(path, "sample_to_csv")
        n = self._sample_size(n)
        chunks = self.sample_chunks(n, chunk=chunk, seed=seed, progress=progress)
        rows = 0

        def write(fh, code: str, room=None) -> None:
            nonlocal rows
            for part in chunks:
                try:
                    part.to_csv(fh, header=rows == 0, **to_csv)
                except UnicodeEncodeError as e:
                    raise ConfigError(_unencodable(part, code, e)) from None
                rows += len(part)
                if room is not None and rows == len(part) and rows < n:
                    room(fh)

        if stream:  # an open text stream: written as it is, by its own encoding
            write(path, getattr(path, "encoding", None) or "utf-8")
            path.flush()
            return rows
        opener = open if special else _csv_opener(path)  # a .gz name gets gzip, as pandas' to_csv does
        part_path = path if special else path.with_name(path.name + ".part")
        try:
            with opener(part_path, "wt", newline="", encoding=encoding or "utf-8") as fh:
                write(fh, encoding or "utf-8", None if special else
                      (lambda f: _check_disk_room(f, part_path, path, rows, n)))
            if not special:
                part_path.replace(path)
        finally:
            if not special:
                part_path.unlink(missing_ok=True)
        return rows

    def _sample_size(self, n) -> int:
        if n is None:
            est = getattr(self, "n_estimate_", float("nan"))
            if not (isinstance(est, float) and math.isfinite(est)):
                raise ConfigError("this model has no DP estimate of the number of records; pass n")
            if round(est) < 1:  # the noise swamped a tiny table's count: one row would be a silent guess
                raise ConfigError(f"this model's DP estimate of the number of records is {est:.3g} (the noise of a "
                                  "tiny table's count); pass n")
            n = int(round(est))
            if getattr(self, "_from_file", False):
                self._check_default_work(n)
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ConfigError(f"n must be a positive integer, got {n!r}")
        if n > MAX_SAMPLE_ROWS:
            raise ConfigError(f"n must be at most 2^53 ({MAX_SAMPLE_ROWS:.3g}) rows, got {int(n):.3g}")
        return int(n)

    def _check_default_work(self, n: int) -> None:
        """A model file's default sample size times its work per record, within
        :data:`~synthzoo.core.base.MAX_DEFAULT_SAMPLE_WORK`: a file cannot make ``sample()`` run for hours
        unasked.  An explicit ``n`` is the caller's choice and is not limited."""
        work, drivers = self.model._sample_work()
        total = n * (float(work) + base.ROW_WORK)  # decoding a row costs time whatever the model (base.ROW_WORK)
        if not total <= base.MAX_DEFAULT_SAMPLE_WORK:
            minutes = total / base.WORK_PER_SECOND / 60
            raise ConfigError(f"model file: the default sample size, {n:,} rows (the file's estimate of the training "
                              f"rows), would take ~{total:.2g} operations with model {self.model.name!r} "
                              f"(~{work:.2g} per record: {drivers}; ~{base.ROW_WORK:.2g} more to decode it), about "
                              f"{minutes:,.0f} CPU minutes; pass n (-n on the command line) to draw that many or fewer")

    def _check_default_memory(self, n: int) -> None:
        """A model file's default in-memory sample within :data:`MAX_DEFAULT_SAMPLE_BYTES`: a file claiming a
        billion training rows of a cheap model cannot make ``sample()`` build a frame larger than the machine."""
        need = n * self._frame_bytes()
        if not need <= MAX_DEFAULT_SAMPLE_BYTES:
            raise ConfigError(f"model file: the default sample size, {n:,} rows (the file's estimate of the training "
                              f"rows), would take ~{need / 1e9:,.1f} GB in memory, more than sample() draws unasked "
                              f"({MAX_DEFAULT_SAMPLE_BYTES / 1e9:g} GB); pass n, or write the rows in chunks with "
                              "sample_to_csv() or sample_chunks()")

    def _frame_bytes(self) -> float:
        """Bytes a synthetic row takes while :meth:`sample` builds its frame, from the schema alone: each
        column's cell (8 bytes for numbers, times and a text cell's reference, plus a category's mean length
        should the text be stored by value; a date written as text is its own string object), twice over for
        the blocks and the frame they are joined into.  Adult's 15 columns: 405 bytes estimated, 252 measured
        (the process's peak growth over 2 million rows of ``mst``, pandas holding text by reference)."""
        row = 0.0
        for c in self.columns_:
            col = self.schema_[c]
            dtype = col.output_dtype
            if col.kind == "datetime" and not isinstance(dtype, (np.dtype, pd.DatetimeTZDtype)):
                row += 8 + 80  # a distinct ISO string each row
            elif isinstance(dtype, np.dtype):
                row += dtype.itemsize
            elif col.kind == "categorical" and not isinstance(dtype, pd.CategoricalDtype):
                row += 8 + sum(len(str(v)) for v in col.categories) / max(len(col.categories), 1)
            else:  # nullable and categorical dtypes: values or codes, and a mask
                row += 9
        return 2.0 * row

    def _sample_entropy(self, seed) -> list[int]:
        """The entropy every random stream of one sample derives from: the seed given, or the
        synthesizer's seed and the number of earlier seedless calls."""
        if seed is None:
            base = [self.seed, 1, self._sample_calls]
            self._sample_calls += 1
            return base
        check_seed(seed)  # the one rule for every seed (a model file holds the synthesizer's as a signed int64)
        return [int(seed), 2]

    def _chunks(self, n: int, chunk: int, base: list[int], progress):
        """Blocks of SAMPLE_BLOCK rows (block k from SeedSequence(base + [1, k]); what the model's
        blocks share from SeedSequence(base + [0])), regrouped into chunks of ``chunk`` rows."""
        from .core.progress import progress_bar

        draw = self.model.sampler(n, np.random.default_rng(np.random.SeedSequence([*base, 0])))
        starts = range(0, n, SAMPLE_BLOCK)
        if progress is None:
            progress = sys.stderr.isatty() and n > SAMPLE_BLOCK
        bar = progress_bar(starts, total=len(starts), desc=f"sampling {n:,} rows in blocks of {SAMPLE_BLOCK:,}",
                           enabled=bool(progress))
        pending, held = [], 0
        for k, start in enumerate(bar):
            size = min(SAMPLE_BLOCK, n - start)
            r_model, r_decode = (np.random.default_rng(s) for s in np.random.SeedSequence([*base, 1, k]).spawn(2))
            codes = draw(start, size, r_model)
            pending.append(self._decode(codes, r_decode))
            held += size
            while held >= chunk or (start + size == n and held):
                frame = pending[0] if len(pending) == 1 else pd.concat(pending, ignore_index=True)
                out, rest = frame.iloc[:chunk], frame.iloc[chunk:]
                yield out.reset_index(drop=True)
                pending, held = ([rest] if len(rest) else []), len(rest)

    def _decode(self, codes: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
        raw = self.encoder_.inverse(codes, rng)
        return pd.DataFrame({c: self.schema_[c].typed(raw[c].to_numpy()) for c in self.columns_},
                            columns=self.columns_)

    # -- privacy --------------------------------------------------------------------------
    # One state answers every privacy question: the live ledger after fit, the saved account after load.
    def privacy_spent(self) -> PrivacySpent:
        """(epsilon, delta) spent by everything the release depends on -- except a schema read from
        the rows (:meth:`Schema.infer`, the default without ``schema=``), which no DP covers:
        :attr:`schema_covered` is then False and :meth:`privacy_report` says so first."""
        self._check_fitted()
        return self.account_.spent()

    @property
    def schema_covered(self) -> bool:
        """False when the schema was read from the rows (:meth:`Schema.infer`, marked in its meta),
        so that the release's (epsilon, delta) does not cover its kinds, bounds and categories."""
        self._check_fitted()
        return READ_FROM_ROWS not in self.schema_.meta

    def privacy_breakdown(self) -> pd.DataFrame:
        """Per-module rho, share of the budget, mechanisms and epsilon of that module alone."""
        self._check_fitted()
        return pd.DataFrame(self.account_.breakdown(),
                            columns=["module", "rho", "share", "charges", "mechanisms", "epsilon_alone"])

    def privacy_report(self) -> str:
        """The ledger's account: (epsilon, delta) spent and requested, per-module rho and mechanisms;
        for a schema measured by :func:`synthzoo.dp_schema`, what it measured and why (its DP
        releases only: bounds, margins, merged categories, missing values)."""
        self._check_fitted()
        text = self.account_.report()
        if not self.schema_covered and self.account_.private:
            text = ("NOT COVERED BY DP: the schema -- every column's kind, bounds, categories and missing values -- "
                    f"was read from the private rows ({self.schema_.meta[READ_FROM_ROWS].split(':')[0]}), outside "
                    "the ledger. The (epsilon, delta) below covers the fit given that schema, not the schema: a "
                    "release can show the rows' exact extremes and rare categories. Use a public schema "
                    "(Schema.from_json) or measure it with sz.dp_schema.\n" + text)
        tuned = getattr(self, "tuning_", None)
        if tuned:  # how a tuner selected this configuration (a non-private tuning's reads are not covered)
            if isinstance(self.account_, SavedAccount):  # a file's words: nothing in it shows how it was tuned
                tuned += " (this statement was read from the model file as written; it is not verified)"
            text = tuned + "\n" + text
        schema_text = dp_schema_report(self.schema_)
        text += "\n" + schema_text if schema_text else ""
        sig = getattr(self, "signature_", None)
        if isinstance(self.account_, SavedAccount):  # read from a file: say whether anyone vouches for it
            text += ("\n(signed with key " + sig["key"] + (", verified against your trusted key: the file is as that "
                     "key's holder saved it" if sig["verified"] else "; NOT verified: pass the signer's public key "
                     "as trusted_keys (--trust on the command line)") + ")") if sig else \
                "\n(not signed: nothing shows who saved this file or that it is unchanged)"
        return text

    #: A tuner's statement of how it selected this configuration (``tuning.tune`` sets it on the synthesizer it
    #: releases): shown first in :meth:`privacy_report` and saved as the model file's ``"tuning"`` field.
    tuning_: str | None = None

    @property
    def replayable_noise(self) -> bool:
        """True when the release's noise came from a ``noise_seed`` (test-only; not private once
        the noise seed is known)."""
        self._check_fitted()
        return self.account_.replayable

    def _check_fitted(self):
        if not self._fitted:
            raise NotFittedError("call fit(df) (or Synthesizer.load) first")

    def __repr__(self) -> str:
        pre = ", ".join(p.name for p in self.preprocess)
        sel = self.select.name if self.select else None
        return (f"Synthesizer(preprocess=[{pre}], select={sel}, model={self.model.name}, epsilon={self.epsilon}, "
                f"delta={self.delta}, seed={self.seed})")

    # -- save / load ----------------------------------------------------------------------
    def config(self) -> dict:
        """The construction parameters (modules by name with their parameters), JSON-able."""
        return {"preprocess": [{"name": p.name, **p.get_params()} for p in self.preprocess],
                "select": None if self.select is None else {"name": self.select.name, **self.select.get_params()},
                "model": {"name": self.model.name, **self.model.get_params()},
                "epsilon": self.epsilon, "delta": self.delta, "seed": self.seed,
                "budget_split": self.budget_split, "out_of_bounds": self.out_of_bounds, "name": self.name}
        # schema_ledger is not saved: its cost is already inside the saved privacy account

    def to_json(self) -> dict:
        """The fitted synthesizer as a JSON document: configuration, public schema, the DP-released
        encodings and model state, and the privacy account.  No private record, no executable code,
        no noise seed."""
        self._check_fitted()
        # a parameter past what a model file may set (GUM's iterations, pool=None, ...) wrote a file that load
        # refused; refuse it here instead, before anything is written
        self.model._check_load_limits(f"cannot save: model {self.model.name!r}")
        self.model._check_sample_work(f"cannot save: model {self.model.name!r}")
        doc = {"format": FORMAT, "version": __version__, "saved": _dt.datetime.now(_dt.timezone.utc).isoformat(),
               "config": self.config(), "schema": self.schema_.to_dict(), "columns": self.columns_,
               "encoding": ("features" if isinstance(self.encoder_, FeatureTable)
                            else "tokens" if isinstance(self.encoder_, TokenTable) else "codes"),
               "encoder": self.encoder_.to_state(), "model_state": self.model.get_state(),
               "n_estimate": _finite_or_none(getattr(self, "n_estimate_", None)),
               "privacy": self.account_.account()}
        if self.replayable_noise:
            doc["warning"] = REPLAYABLE_WARNING
        if getattr(self, "tuning_", None):
            doc["tuning"] = self.tuning_
        return json.loads(json.dumps(doc, default=_json_default))

    @classmethod
    def from_json(cls, doc: dict, account: PrivacyLedger | None = None, trusted_keys=None) -> "Synthesizer":
        """Rebuild a synthesizer from :meth:`to_json`'s document.

        The document is untrusted input: it is validated whole against the format before anything is
        built (:func:`synthzoo.modelfile.check_document`), then each part where it is built -- the
        schema, the encoders (bin edges within the schema's bounds), the model state (parameter
        ranges, the limits a file may set, and the sampling work per record they multiply to, at most
        :data:`~synthzoo.core.base.MAX_SAMPLE_WORK`), and the privacy account, whose (epsilon, delta) is
        recomputed from its recorded events and must match the claim, the request and the model's
        noisy measurements.  Anything wrong raises :class:`ConfigError` naming the field.  Modules
        come from the registry; no code is read.

        ``account`` replaces the saved privacy account with a live ledger that covers more than the
        fit (the tuner's random-stopping charge).  ``trusted_keys`` (public key files): the document
        must carry a signature by one of them over its whole content
        (:func:`synthzoo.modelfile.verify_document`), checked before anything is built."""
        check_document(doc)
        signer = verify_document(doc, trusted_keys) if trusted_keys is not None else None
        stage = "schema"
        try:
            schema = Schema.from_dict(doc["schema"])
            stage = "config"
            cfg = dict(doc["config"])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the non-private and settings warnings were given at fit time
                self = cls(schema=schema, **cfg)
            self.schema_ = schema
            self.columns_ = list(doc["columns"])
            est = doc["n_estimate"]
            self.n_estimate_ = float(est) if est is not None else float("nan")
            stage = "encoder"
            encoding = doc["encoding"]
            if encoding != self.model.get_tags()["input"]:
                raise ConfigError(f"encoding {encoding!r} does not suit model {self.model.name!r}")
            if encoding == "features":
                self.encoder_ = FeatureTable.from_state(schema, doc["encoder"])
            elif encoding == "tokens":
                self.encoder_ = TokenTable.from_state(schema, doc["encoder"])
            else:
                self.encoder_ = TableEncoder.from_state(schema, doc["encoder"])
            stage = "model_state"
            configured = _json_params(self.model)
            self.model.set_state(doc["model_state"], self.encoder_.domain if encoding == "codes" else self.encoder_)
            # the state's parameters are the ones the model samples with; a config that says otherwise
            # was edited, and would show (and refit with) parameters the saved model never had
            restored = _json_params(self.model)
            # a parameter added since the file was written: its config states none, and the state's value holds
            stated = cfg["model"] if isinstance(cfg.get("model"), dict) else {}
            for k in sorted(configured.keys() & restored.keys()):
                if k in getattr(self.model, "_params_added", {}) and k not in stated:
                    continue
                if configured[k] != restored[k]:
                    raise ConfigError(f"model file: config.model.{k}={configured[k]} disagrees with "
                                      f"model_state.params.{k}={restored[k]} (edited?)")
            stage = "encoder"
            _check_free_encoders(self)
            stage = "privacy"
            saved = SavedAccount(doc["privacy"])
            _bind_account(saved, self)
            stage = "n_estimate"
            implied, exact = _implied_rows(self.model)
            # sample() without n draws n_estimate rows: a file may not state another count than its model's (a
            # measurement model's own total may be estimated otherwise than the pipeline's: within a factor of 2)
            if est is not None and not math.isnan(implied) and not (
                    math.isclose(est, implied, rel_tol=1e-6) if exact else implied / 2 - 1 <= est <= 2 * implied + 1):
                raise ConfigError(f"{est!r} is not the {implied:.6g} rows the model's state implies "
                                  "(edited?)")
        except (ConfigError, SchemaError) as e:
            msg = str(e)
            raise ConfigError(msg if msg.startswith("model file") else f"model file: {stage}: {msg}") from None
        except (KeyError, TypeError, ValueError, IndexError, AttributeError, ArithmeticError, RuntimeError,
                RecursionError) as e:
            raise ConfigError(f"model file: {stage}: malformed ({e!r})") from None
        except MemoryError:
            raise ConfigError(f"model file: {stage}: not enough memory to build what the file describes") from None
        self.account_ = account if account is not None else saved
        if account is not None:
            self.ledger_ = account
        sig = doc.get("signature")
        self.signature_ = None if sig is None else {"key": sig["key"], "verified": signer is not None}
        self.tuning_ = doc.get("tuning")
        self._fitted = True
        return self

    def save(self, path, sign_with: str | Path | None = None) -> None:
        """Write :meth:`to_json`'s document to ``path``, a file name or an open file (binary or text; written
        as UTF-8 JSON from its current position) (refused, before anything is written, when :meth:`load`
        would refuse it: a parameter past its model's limits or sampling work past
        :data:`~synthzoo.core.base.MAX_SAMPLE_WORK`); ``sign_with`` (an Ed25519 private key file from
        :func:`synthzoo.modelfile.generate_key` or ``synthzoo keygen``) adds a signature over it, so
        that whoever holds the public key can tell the file is as you saved it."""
        if hasattr(path, "write"):  # an open file, as torch.save and joblib.dump take one
            if sign_with is not None and getattr(path, "name", None) is not None:
                check_not_the_key(path.name, sign_with)
        else:
            path = _as_path(path, "save")
            check_output_path(path, "save")
            if sign_with is not None:
                check_not_the_key(path, sign_with)
        doc = self.to_json()
        if sign_with is not None:
            doc = sign_document(doc, sign_with)
        text = json.dumps(doc)
        if not hasattr(path, "write"):
            path.write_text(text)
        elif isinstance(path, io.TextIOBase):
            path.write(text)
        else:
            path.write(text.encode("utf-8"))

    @classmethod
    def load(cls, path, max_bytes: int = MAX_BYTES, trusted_keys=None) -> "Synthesizer":
        """Read a file written by :meth:`save` (at most ``max_bytes``), from a file name or an open file (binary
        or text, read from its current position). Only JSON is parsed, and the
        document is checked as untrusted input (see :meth:`from_json`); modules come from the registry.
        ``trusted_keys``: public key files; the file must be signed by one of them and unchanged since.

        What a file can make sampling cost is bounded: a model whose work per record
        (:meth:`~synthzoo.core.base.Model.sample_work`: steps times network size, GUM's rounds times its
        marginals, ...) exceeds :data:`~synthzoo.core.base.MAX_SAMPLE_WORK` (about 7 minutes per 1,000
        records on one CPU thread) is refused, naming the parameters that drive it; and :meth:`sample`
        without ``n`` draws the file's default sample size only when that takes no longer than 1,000
        records at the limit (else it asks for ``n``)."""
        if hasattr(path, "read"):  # an open file (binary or text), read as a file name is: at most max_bytes
            data = path.read(max_bytes + 1)
            if isinstance(data, str):
                data = data.encode("utf-8")
            if not isinstance(data, bytes):
                raise ConfigError(f"load: the open file gave {type(data).__name__}, not bytes or text")
            path = getattr(path, "name", None) or "the open file"
            doc, problem = ((None, f"holds more than max_bytes={max_bytes:,} bytes; not read") if len(data) > max_bytes
                            else parse_json_bytes(data))
        else:
            path = _as_path(path, "load")
            if not path.exists():
                raise ConfigError(f"{path}: file not found")
            if not path.is_file():
                raise ConfigError(f"{path}: not a file")
            doc, problem = read_json(path, max_bytes)
        if problem is not None:
            if problem.startswith(("is empty", "ends in the middle")):  # a damaged file, not another format
                raise ConfigError(f"{path}: the model file {problem}")
            raise ConfigError(f"{path}: not a synthzoo model file (it {problem})")
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise ConfigError(f"{path}: not a synthzoo model file")
        synth = cls.from_json(doc, trusted_keys=trusted_keys)
        # its default sample size is the file's claim (see _sample_size); a document rebuilt in this process
        # (the tuner's runs) is not a file's
        synth._from_file = True
        return synth


def _as_path(path, method: str) -> Path:
    """A file name (str or os.PathLike) as a Path; anything else is said to be no file name, not os.fspath's
    TypeError (``save(3)``, ``load(None)``)."""
    if isinstance(path, (str, os.PathLike)) and not isinstance(path, bytes):
        return Path(path)
    raise ConfigError(f"{method}: expected a file name (str or pathlib.Path) or an open file, got "
                      f"{type(path).__name__}")


#: Which preprocessors make a model's input, for the error that names them.
_MAKERS = {"features": "features, mode_features or quantile_features", "tokens": "tokens"}


def schema_cost(schema: Schema, epsilon) -> tuple[PrivacyLedger | None, bool]:
    """The cost of a schema :func:`synthzoo.dp_schema` measured, from the account it carries (replayed and
    checked as a model file's is), so that the release's report covers it without ``schema_ledger``; and
    whether the cost is elsewhere (measured on a shared ledger: fitting then needs ``schema_ledger``)."""
    try:
        info = check_dp_schema_meta(schema)
    except SchemaError as e:
        raise ConfigError(str(e)) from None
    if info is None:
        return None, False
    if info.get("epsilon") is None:
        if epsilon is not None:
            raise ConfigError("schema: it was read from the data WITHOUT privacy (dp_schema with epsilon=None); a "
                              "private release cannot rest on it. Measure it with a finite epsilon, or use a public schema")
        return None, False
    if info.get("account") is None:
        return None, True
    saved = SavedAccount(info["account"])
    ledger = saved.ledger
    if saved.replayable:
        ledger._replayed_charges = True
    return ledger, False


def _bind_account(saved: SavedAccount, synth: "Synthesizer") -> None:
    """Tie a file's verified privacy account to the rest of the file: the request it was charged
    against is the configuration's (or, for a tuned model, covers it), and the model's noisy
    measurements are the ones its charges calibrated."""
    tuned = "tuning" in saved.modules()
    per_run = None
    if tuned:
        # accounted tuning leaves one charge, the random-stopping selection over all runs, whose event holds
        # the per-run cost; before it only the charges of a DP schema (released once, before tuning).
        # Anything else beside it would skip the checks below
        charges = saved.ledger.charges
        schema_charges = [c for c in charges[:-1] if c.module.startswith("schema:")]
        if not (charges and charges[-1].module == "tuning" and len(schema_charges) == len(charges) - 1
                and isinstance(charges[-1].event, dpa.dp_event.RepeatAndSelectDpEvent)):
            raise ConfigError("model file: privacy: a tuned model's account is one 'tuning' charge of a "
                              "repeat_and_select (random stopping) event, after its schema's charges only (edited?)")
        per_run = rho_of_event(charges[-1].event.event)
        schema_rho = [rho_of_event(c.event) for c in schema_charges]
        # the run's request covers its schema's cost and its own fit, which lies within the per-run budget
        if saved.private and (per_run is None or None in schema_rho or synth.epsilon is None
                              or rho_for(synth.epsilon, synth.delta - saved.ledger.reserved_delta)
                              > (per_run + sum(schema_rho)) * (1 + 1e-9)):
            raise ConfigError("model file: privacy: the tuned run's configuration (epsilon="
                              f"{synth.epsilon}) asks for more than the per-run budget its random-stopping charge "
                              "records (edited?)")
    if saved.private != (synth.epsilon is not None):
        raise ConfigError("model file: privacy: the account and config.epsilon disagree on whether the run is "
                          "private (edited?)")
    eps, delta = saved.requested
    if not tuned and (eps != synth.epsilon or delta != synth.delta):
        raise ConfigError(f"model file: privacy.requested (epsilon={eps}, delta={delta}) differs from the "
                          f"configuration (epsilon={synth.epsilon}, delta={synth.delta}) (edited?)")
    if measured_under_dp(synth.schema):
        info = synth.schema.meta["dp_schema"]
        # each column the schema says was measured under DP has its charge among the account's schema charges
        noted = {c.note.split(":", 1)[0] for c in saved.ledger.charges if c.module.startswith("schema:")}
        lacking = [c for c in info.get("measured", []) if printable(c, NOTE_CHARS) not in noted]  # as noted
        if lacking:
            raise ConfigError(f"model file: schema: column(s) {lacking} are said to be measured under DP, but the "
                              "privacy account holds no charge for them (the schema or the account was edited)")
    if any(c.module.startswith("schema:") for c in saved.ledger.charges) and not measured_under_dp(synth.schema):
        raise ConfigError("model file: privacy: the account holds 'schema:' charges, but the schema says it was not "
                          "measured under DP (the schema or the account was edited)")
    if saved.private and not tuned:
        _check_modules_charged(saved, synth)
        _check_dpsgd_runs(saved, synth)
    measurements = getattr(synth.model, "measurements_", None)
    if measurements is not None and saved.private:
        exact = [list(m.clique) for m in measurements if not float(m.sigma) > 0]
        if exact:  # a private release never holds a noiseless count
            raise ConfigError(f"model file: the measurement over {exact[0]} has no noise (sigma 0) in a private "
                              "model (the model or the account was edited)")
    if measurements is not None and not tuned:
        saved.check_measurements(measurements)
    elif measurements is not None and saved.private:
        # the run's own charges are inside the random-stopping event: no measurement of sensitivity 1 can
        # have cost more than the whole run, so none can carry less noise than that run's budget calibrates
        floor = gaussian_sigma(per_run, 1.0)
        low = [list(m.clique) for m in measurements if float(m.sigma) < floor * (1 - 1e-9)]
        if low:
            raise ConfigError(f"model file: the measurement over {low[0]} carries less noise than the tuned run's "
                              f"whole budget allows (sigma < {floor:.4g}; the model or the account was edited)")


def _check_modules_charged(saved: SavedAccount, synth: "Synthesizer") -> None:
    """A private account holds the charges of every module that read the private rows, and only
    theirs: each budget-spending preprocessor's for each column it measures (its
    :meth:`~synthzoo.core.base.Preprocessor.measured_columns`, public), the selector's, and a
    record model's own.  An account with a module's charges deleted (a cheaper claim for the same
    model) or taken from another configuration's fit fails here."""
    modules = {c.module for c in saved.ledger.charges if not c.module.startswith("schema:")}
    notes: dict[str, set] = {}
    for c in saved.ledger.charges:
        if c.module in modules:
            notes.setdefault(charge_owner(c.module), set()).add(c.note)
    ran = set()
    for p, cols in synth._assignments(synth.schema_):
        ran.add(p.name)
        lacking = [c for c in p.measured_columns(cols) if printable(c, NOTE_CHARS) not in notes.get(p.name, ())]
        if lacking:
            raise ConfigError(f"model file: privacy: preprocessor {p.name!r} measures column(s) {lacking} in a "
                              "private fit, but the account holds no charge of its for them (the account was edited)")
    model = synth.model
    if model.get_tags()["spends_budget"]:  # a measurement model only post-processes: it has no charges of its own
        ran.add(model.name)
    if synth.select is not None:
        if synth.select.name not in notes:
            raise ConfigError(f"model file: privacy: selector {synth.select.name!r} measured the private rows, but "
                              "the account holds no charge of its (the account was edited)")
        ran.add(synth.select.name)
    if model.get_tags()["spends_budget"] and model.name not in notes:
        raise ConfigError(f"model file: privacy: model {model.name!r} trains on the private rows, but the account "
                          "holds no charge of its (the account was edited)")
    foreign = sorted(m for m in modules if charge_owner(m) not in ran)
    if foreign:
        raise ConfigError(f"model file: privacy: the account holds charges of {foreign}, which are not modules of "
                          "this configuration (an account from another fit?)")


def _dpsgd_shape(event) -> tuple[int, float] | None:
    """(steps, sampling rate) of a DP-SGD event (Gaussian noise, Poisson sampling, composed), else None."""
    if (isinstance(event, dpa.dp_event.SelfComposedDpEvent) and isinstance(event.event, dpa.dp_event.PoissonSampledDpEvent)
            and isinstance(event.event.event, dpa.dp_event.GaussianDpEvent)):
        return int(event.count), float(event.event.sampling_probability)
    return None


def _check_dpsgd_runs(saved: SavedAccount, synth: "Synthesizer") -> None:
    """A private account holds one DP-SGD charge for each run the model declares
    (:meth:`~synthzoo.core.base.Model.dpsgd_runs`), recording the steps and sampling rate that its epochs and
    batch size give on the model's DP record count, and no other: a DP-SGD event edited to fewer steps or a
    lower rate (a smaller epsilon for the same weights) no longer matches the model it is saved with."""
    model = synth.model
    mine = [c for c in saved.ledger.charges if charge_owner(c.module) == model.name]
    sgd = [c for c in mine if c.mechanism == "dp_sgd" or _dpsgd_shape(c.event) is not None]
    total = float(getattr(model, "total_", float("nan")))
    want = sorted(dpsgd_schedule(epochs, total, batch) for epochs, batch in model.dpsgd_runs())
    got = sorted(s for s in map(_dpsgd_shape, (c.event for c in sgd)) if s is not None)
    if len(got) != len(sgd) or len(got) != len(want) or any(
            gs != ws or not math.isclose(gq, wq, rel_tol=1e-9) for (gs, gq), (ws, wq) in zip(got, want)):
        said = ", ".join(f"{s} steps at q={q:.6g}" for s, q in want) or "none"
        found = ", ".join(f"{s} steps at q={q:.6g}" for s, q in got) or "none"
        raise ConfigError(f"model file: privacy: model {model.name!r}'s parameters and DP record count "
                          f"(total={total:g}) give DP-SGD run(s) of {said}, but its account records {found}"
                          f"{'' if len(got) == len(sgd) else ' and a dp_sgd charge of another form'} "
                          "(the account or the model was edited)")


def _no_budget() -> Budget:
    """The budget a preprocessor that reads no private value gets: nothing to spend, nothing charged to the
    release's ledger."""
    return PrivacyLedger(None).stage("none", 0.0)


@contextlib.contextmanager
def _torch_global_rng_kept():
    """Restore torch's global generators (CPU, and CUDA's when in use) after a fit that reseeds them: a
    private fit seeds them from the secret noise, and ``torch.initial_seed()`` would hand those bits to
    whatever runs next in the process, as a non-private fit would replace the user's own seeding.  A fit
    that imports torch first leaves it freshly seeded from the OS, not at the fit's seed."""
    torch = sys.modules.get("torch")
    cpu = torch.random.get_rng_state() if torch is not None else None
    cuda = torch.cuda.get_rng_state_all() if torch is not None and torch.cuda.is_initialized() else None
    try:
        yield
    finally:
        torch = sys.modules.get("torch")
        if cpu is not None:
            torch.random.set_rng_state(cpu)
        elif torch is not None:
            torch.seed()
        if torch is not None and torch.cuda.is_initialized():
            if cuda is not None:
                torch.cuda.set_rng_state_all(cuda)
            else:
                torch.cuda.seed_all()


def _implied_rows(model) -> tuple[float, bool]:
    """The DP estimate of the training rows a fitted model's own state implies (what ``n_estimate_`` is
    set from), and whether exactly: the inverse-variance total of the noisy measurements a measurement
    model keeps, or a record model's noisy count (exact); else the total a measurement model's state
    holds (GUM's, a generator's: its own estimate, close to the pipeline's); NaN without one."""
    measurements = getattr(model, "measurements_", None)
    records = model.get_tags()["fits"] == "records"
    if not records and measurements:
        with np.errstate(over="ignore"):  # an edited count of 1e308 sums to inf: a mismatch, not a pass
            return estimate_total(measurements, floor=0.0), True
    return float(getattr(model, "total_", float("nan"))), records


def _json_params(model) -> dict:
    """A model's saved parameters, each as its canonical JSON text (tuples as lists, NaN equal to NaN)."""
    return {k: json.dumps(v, sort_keys=True) for k, v in model._saved_params().items()}


def _check_free_encoders(synth: "Synthesizer") -> None:
    """Every column no budget-spending preprocessor measured has the encoder the schema alone gives (a
    free preprocessor's, a spender's for a column it leaves, a category's identity): a file whose
    configuration was edited so that a spender no longer runs cannot keep the encoder it fitted to the
    rows while dropping its charges."""
    import pandas as pd

    schema, saved = synth.schema_, synth.encoder_.to_state()
    same = lambda a, b: json.dumps(a, default=_json_default) == json.dumps(b, default=_json_default)  # noqa: E731
    claimed = set()
    for p, cols in synth._assignments(schema):
        claimed |= {c.name for c in cols}
        measured = set(p.measured_columns(cols))
        free = [c for c in cols if c.name not in measured]
        if not free:
            continue
        frame = pd.DataFrame({c.name: pd.Series([], dtype="object") for c in free})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = {k: e.to_state() for k, e in p.fit(frame, free, _no_budget(), np.random.default_rng(0)).items()}
        bad = [c for c in want if not same(want[c], saved.get(c))]
        if bad:
            raise ConfigError(f"column(s) {bad} hold an encoder {p.name!r} does not make from the schema "
                              "alone, yet no charge measured them (the configuration or the encoder was edited)")
    bad = [c.name for c in schema.columns if c.name not in claimed and c.kind == "categorical"
           and saved.get(c.name) != CategoricalEncoder(c).to_state()]
    if bad:
        raise ConfigError(f"column(s) {bad} hold merged categories, yet no preprocessor measured them "
                          "(the configuration or the encoder was edited)")


def _finite_or_none(x):
    return float(x) if isinstance(x, (int, float, np.number)) and math.isfinite(float(x)) else None


def _json_default(o):
    if isinstance(o, np.generic):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, set):
        return sorted(o)
    raise TypeError(f"cannot save object of type {type(o).__name__}")

"""Risk insertion: validate privacy metrics by releasing tables whose risk is set on purpose, as in
Plasencia et al., "Empirical evaluation of structured synthetic data privacy metrics: novel
experimental framework" (2024), and watch which metric follows which risk.

The real rows are split into three equal parts (:func:`synthzoo.metrics.leaky.leaky_split`):
members (the training rows), control (the holdout every metric reads against) and a pool of
non-members.  A *risk model* turns a level into a release fitted on the members:

* ``leaky`` -- a fraction f of the released rows are member rows, the rest pool rows
  (:class:`synthzoo.metrics.mds.LeakySynthesizer`); f = 0 ... 1;
* ``overfit`` -- a non-private deep model trained f_o times as long as it takes to converge,
  f_o = 1 ... 2 (the factory decides the model; ``benchmarks/bench_risk.py`` uses TVAE and reads
  the converged length off a probe fit's loss curve with :func:`converged_epochs`);
* ``dp`` -- the same model (or AIM) trained with differential privacy at epsilon = 1 ... 100.

This module only needs a ``synthesizer_factory(level, seed)``; the layer above builds the
concrete synthesizers (metrics depend on the core only).

**Canaries** (Carlini, Liu, Erlingsson, Kos, Song, "The Secret Sharer", USENIX Security 2019, for
tables): 100 records drawn uniformly from the schema's public domain -- outliers no real row
resembles -- are added to the members before fitting.  Each canary has 99 siblings drawn the
same way and never inserted; a record's score is minus its Gower distance to the closest
released row, and its *exposure* is log2(100) - log2(rank of the canary among its 100
candidates).  Mean exposure ~1.4 bits means the release says nothing about the canaries
(ranks uniform); log2(100) = 6.6 bits means every canary is the closest of its candidates.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

from ..core.errors import ConfigError
from ..core.schema import Schema
from ._common import check_frame, check_positive_int, resolve_schema
from .distance import GowerSpace
from .leaky import FRACTIONS, leaky_split
from .mds import LeakySynthesizer

#: the levels of each risk model swept by default
LEVELS = {"leaky": FRACTIONS, "overfit": (1.0, 1.25, 1.5, 1.75, 2.0), "dp": (1.0, 5.0, 10.0, 50.0, 100.0)}


def converged_epochs(losses, window: int = 10, rtol: float = 0.01) -> int | None:
    """The epoch at which a training loss curve has converged, or None if it has not within the curve.

    The curve is smoothed by a moving mean over ``window`` epochs; it has converged at the end of the
    first window whose mean improves on the window before it by less than ``rtol`` times the
    improvement since the first window.  The rule is scale-free (a loss may be negative, as a
    Gaussian likelihood's is) and ignores the slow decline a model keeps while it memorises.

    Parameters
    ----------
    losses : array-like of float
        One training loss per epoch (e.g. TVAE's ``loss_history_``).
    window : int, default 10
        Epochs per smoothing window.
    rtol : float, default 0.01
        The relative improvement below which the loss counts as settled.

    Returns
    -------
    int or None
        Epochs trained to the end of that window (at least ``2 * window``).
    """
    window = check_positive_int(window, "window")
    if not 0 < rtol < 1:
        raise ConfigError(f"converged_epochs: rtol must lie in (0, 1), got {rtol}")
    loss = np.asarray(losses, dtype=float)
    if loss.ndim != 1 or len(loss) < 2 * window or not np.isfinite(loss).all():
        raise ConfigError(f"converged_epochs: losses must be at least 2 * window = {2 * window} finite values, "
                          f"got shape {loss.shape}")
    ma = np.convolve(loss, np.ones(window) / window, mode="valid")   # ma[i]: mean of epochs i .. i+window-1
    for i in range(window, len(ma)):
        total = ma[0] - ma[i]
        if total > 0 and ma[i - window] - ma[i] < rtol * total:
            return i + window
    return None


def random_records(schema: Schema, n: int, seed: int = 0) -> pd.DataFrame:
    """``n`` records drawn uniformly from the schema's public domain: numbers uniform on the bounds
    (rounded for integer columns), categories uniform, never missing."""
    rng = np.random.default_rng(seed)
    out = {}
    for c in schema.columns:
        if c.kind == "categorical":
            out[c.name] = rng.choice(np.asarray(c.categories, dtype=object), n)
        else:
            x = rng.uniform(c.lower, c.upper, n)
            if getattr(c, "integer", False):
                x = np.round(x)
            if c.kind == "datetime":
                x = pd.to_datetime(x, unit="s")
            out[c.name] = x
    return pd.DataFrame(out)


def canaries(schema: Schema, n_canaries: int = 100, n_candidates: int = 100, seed: int = 0):
    """(canaries, candidates): ``n_canaries`` records to insert and, per canary, ``n_candidates``
    records (the canary first, then its never-inserted siblings) as an (n_canaries * n_candidates)-row
    frame."""
    n_canaries = check_positive_int(n_canaries, "n_canaries")
    n_candidates = check_positive_int(n_candidates, "n_candidates", 2)
    cand = random_records(schema, n_canaries * n_candidates, seed=seed)
    first = np.arange(n_canaries) * n_candidates
    return cand.iloc[first].reset_index(drop=True), cand


def canary_exposure(release: pd.DataFrame, candidates: pd.DataFrame, schema: Schema, n_candidates: int = 100) -> dict:
    """Exposure of each canary (see the module docstring): ``mean`` and ``max`` exposure in bits,
    ``top1`` (share of canaries closest among their candidates), ``exposures`` and the ceiling
    ``log2(n_candidates)``."""
    space = GowerSpace(schema)
    d = space.nearest(space.encode(candidates, "candidates"), space.encode(release, "release"), 1)[0][:, 0]
    d = d.reshape(-1, n_candidates)
    # rank 1 = closest; ties share the mean of their ranks (a tie with a sibling is no evidence)
    below = (d[:, 1:] < d[:, :1]).sum(1)
    ties = (d[:, 1:] == d[:, :1]).sum(1)
    rank = 1 + below + ties / 2
    exp = np.log2(n_candidates) - np.log2(rank)
    return {"mean": float(exp.mean()), "max": float(exp.max()), "top1": float(np.mean(rank == 1)),
            "exposures": exp, "ceiling": float(np.log2(n_candidates))}


def leaky_factory(pool: pd.DataFrame) -> Callable:
    """The leaky risk model as ``factory(f, seed)``."""
    return lambda f, seed: LeakySynthesizer(f, pool, seed=seed)


def risk_response(df: pd.DataFrame, schema: Schema, synthesizer_factory: Callable | None, levels,
                  risk_model: str = "leaky", metrics="privacy", n_canaries: int = 100, seed: int = 0,
                  max_rows: int | None = None, log=None, **evaluate_kw) -> pd.DataFrame:
    """Sweep one risk model: for each level, fit ``synthesizer_factory(level, seed)`` on the members
    (plus the canaries), release as many rows as there are members, and score every privacy
    metric against the control part, plus the canaries' mean exposure (``canary_exposure``).

    ``synthesizer_factory=None`` with ``risk_model="leaky"`` uses the leaky model itself.  Returns a
    frame, one row per metric and one column per (risk model, level); see
    :func:`correlation_matrix` for how the metrics move together."""
    from .evaluate import evaluate
    schema = resolve_schema(schema, df)
    df = check_frame(df, schema, "data")
    if max_rows is not None and len(df) > max_rows:
        df = df.iloc[np.random.default_rng(seed).choice(len(df), max_rows, replace=False)].reset_index(drop=True)
    members, control, pool = leaky_split(df, seed)
    if synthesizer_factory is None:
        if risk_model != "leaky":
            raise ConfigError(f"risk model {risk_model!r} needs a synthesizer_factory(level, seed)")
        synthesizer_factory = leaky_factory(pool)
    canary_rows, candidates = canaries(schema, n_canaries, seed=seed + 7) if n_canaries else (None, None)
    fit_rows = members if canary_rows is None else pd.concat([members, canary_rows], ignore_index=True)
    cols = {}
    for level in levels:
        synth = synthesizer_factory(level, seed)
        synth.fit(fit_rows)
        release = check_frame(synth.sample(len(members)), schema, "release")
        table = evaluate(fit_rows if canary_rows is not None else members, release, test=control, schema=schema,
                         metrics=metrics, baselines=False, seed=seed, **evaluate_kw)
        col = dict(zip(table["metric"], table["value"]))
        if canary_rows is not None:
            col["canary_exposure"] = canary_exposure(release, candidates, schema)["mean"]
        cols[(risk_model, level)] = col
        if log:
            log(f"{risk_model} {level}: " + ", ".join(f"{k}={v:.3f}" for k, v in col.items()))
    out = pd.DataFrame(cols)
    out.columns = pd.MultiIndex.from_tuples(out.columns, names=["risk_model", "level"])
    out.index.name = "metric"
    return out


def correlation_matrix(*tables: pd.DataFrame, method: str = "spearman") -> pd.DataFrame:
    """Rank correlations between the metrics over every release of the given risk-response tables
    (metrics as variables, releases as observations): which metric tracks which."""
    joined = pd.concat(tables, axis=1)
    return joined.T.astype(float).corr(method=method)


def level_correlation(*tables: pd.DataFrame, method: str = "spearman") -> pd.DataFrame:
    """How each metric follows each risk model's level: the rank correlation, within one risk
    model, between a metric and the level (metrics x risk models; +1 = rises with every step of the
    risk, blank = the metric did not move).  Leaky f and overfit f_o raise the risk; for a DP risk
    model the level is epsilon, so a metric that tracks privacy loss also correlates positively."""
    joined = pd.concat(tables, axis=1)
    out = {}
    for model in dict.fromkeys(joined.columns.get_level_values(0)):
        part = joined[model].astype(float)
        levels = pd.Series([float(x) for x in part.columns], index=part.columns)
        # a metric that does not move has no rank order: blank, without scipy's constant-input warning
        out[model] = part.apply(lambda row: row.corr(levels, method=method) if row.nunique() > 1 else np.nan,
                                axis=1)
    return pd.DataFrame(out)

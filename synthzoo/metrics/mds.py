"""Membership disclosure score (MDS) of Du & Li, "Systematic assessment of tabular data synthesis
algorithms" (2024).

MDS is a property of a *synthesizer*, not of one released table: shadow copies of it are
trained on random halves of the real rows, arranged so that every record is a member of
exactly half of them.  For a record x, let D_in(x) be its mean distance to the closest
synthetic row over the shadow models that trained on it, and D_out(x) the same over those
that did not; its disclosure score is DS(x) = |D_in(x) - D_out(x)| and

    MDS = max_x DS(x).

A synthesizer that copies records has D_in = 0 for every record and MDS = the largest
distance from a record to the other half's rows; one that never looks at individual records
has DS ~ 0 up to sampling noise.  Distances are Gower distances (mixed types; the paper uses
Euclidean distance on normalised columns divided by sqrt(#columns)).  The paper's thorough
setting is 20 shadow models x 100 synthetic samples; the default here is 4 x 1.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

from ..core.errors import ConfigError
from ..core.schema import Schema
from ._common import check_frame, check_positive_int, resolve_schema
from .baselines import independent_sample
from .distance import GowerSpace


def check_options(synthesizer_factory, n_shadow, n_samples, names=("n_shadow", "n_samples")) -> tuple[int, int]:
    """``(n_shadow, n_samples)`` checked, or ``ConfigError`` under ``names`` (``evaluate`` checks its
    ``mds_*`` options here before any metric runs)."""
    n_shadow = check_positive_int(n_shadow, names[0], 2)
    if n_shadow % 2:
        raise ConfigError(f"{names[0]} must be even so that each record is a member of exactly half the shadow "
                          f"models, got {n_shadow}")
    n_samples = check_positive_int(n_samples, names[1])
    if not callable(synthesizer_factory):
        raise ConfigError("synthesizer_factory must be a callable seed -> synthesizer with fit(df) and sample(n)")
    return n_shadow, n_samples


def membership_disclosure(data: pd.DataFrame, schema: Schema, synthesizer_factory: Callable, n_shadow: int = 4,
                          n_samples: int = 1, sample_size: int | None = None, seed: int = 0,
                          max_records: int | None = None) -> dict:
    """Run the shadow-model experiment; returns ``{"mds", "ds" (per record), "records" (row
    positions in the deduplicated data), "d_in", "d_out", "n_shadow", "n_samples"}``.

    ``synthesizer_factory(seed)`` must return an object with ``fit(frame)`` and
    ``sample(n) -> frame``, e.g. ``lambda s: synthzoo.make("privsyn", epsilon=1.0, delta=1e-5,
    schema=schema, seed=s)``.  ``sample_size`` defaults to the shadow training size;
    ``max_records`` scores DS on a random subset of records (all records still take part in
    the shadow splits) to bound the distance computations.
    """
    schema = resolve_schema(schema, data)
    n_shadow, n_samples = check_options(synthesizer_factory, n_shadow, n_samples)
    data = check_frame(data, schema, "data")
    # duplicates would be members and non-members at once; the paper drops them
    data = data.loc[~data.astype(str).duplicated()].reset_index(drop=True)
    n = len(data)
    if n < 4:
        raise ConfigError("membership_disclosure: needs at least 4 distinct records")
    rng = np.random.default_rng(seed)
    # column m of `order` ranks the shadow models for record i: member of the n_shadow/2 lowest
    keep = np.argsort(rng.random((n_shadow, n)), axis=0) < n_shadow // 2
    records = np.arange(n) if max_records is None or max_records >= n else np.sort(
        rng.choice(n, check_positive_int(max_records, "max_records"), replace=False))
    space = GowerSpace(schema)
    query = space.encode(data.iloc[records], "data")
    dist = np.zeros((n_shadow, len(records)))
    for m in range(n_shadow):
        members = data.iloc[np.nonzero(keep[m])[0]].reset_index(drop=True)
        synth = synthesizer_factory(seed * 1000 + m)
        synth.fit(members)
        size = sample_size or len(members)
        acc = np.zeros(len(records))
        for _ in range(n_samples):
            fake = synth.sample(size)
            d, _ = space.nearest(query, space.encode(check_frame(fake, schema, "shadow synthetic"), "synthetic"), 1)
            acc += d[:, 0]
        dist[m] = acc / n_samples
    member = keep[:, records]
    d_in = np.where(member, dist, 0).sum(0) / member.sum(0)
    d_out = np.where(~member, dist, 0).sum(0) / (~member).sum(0)
    ds = np.abs(d_in - d_out)
    return {"mds": float(ds.max()), "ds": ds, "records": records, "d_in": d_in, "d_out": d_out,
            "n_shadow": n_shadow, "n_samples": n_samples}


def membership_disclosure_score(data, schema, synthesizer_factory, n_shadow: int = 4, n_samples: int = 1,
                                **kw) -> float:
    """MDS = max over records of |mean in-member DCR - mean out-member DCR| (lower is better)."""
    return membership_disclosure(data, schema, synthesizer_factory, n_shadow, n_samples, **kw)["mds"]


# -- trivial synthesizers: the MDS baselines and test doubles ----------------------------

class CopySynthesizer:
    """Releases its training rows (the SELF baseline as a synthesizer)."""

    def __init__(self, seed: int = 0):
        self.seed = seed

    def fit(self, df: pd.DataFrame):
        self.df = df.reset_index(drop=True)
        self._rng = np.random.default_rng(self.seed)  # successive samples differ, the sequence is seeded
        return self

    def sample(self, n: int) -> pd.DataFrame:
        if n == len(self.df):
            return self.df.copy()
        return self.df.iloc[self._rng.choice(len(self.df), n, replace=n > len(self.df))].reset_index(drop=True)


class BootstrapSynthesizer(CopySynthesizer):
    """Releases a bootstrap resample of its training rows (copies, with repeats)."""

    def sample(self, n: int) -> pd.DataFrame:
        return self.df.iloc[self._rng.integers(len(self.df), size=n)].reset_index(drop=True)


class IndependentSynthesizer(CopySynthesizer):
    """Resamples each column on its own (the INDEPENDENT baseline as a synthesizer)."""

    def sample(self, n: int) -> pd.DataFrame:
        return independent_sample(self.df, n, seed=int(self._rng.integers(2**31)))


class LeakySynthesizer(CopySynthesizer):
    """The leaky risk model as a synthesizer: a fraction ``f`` of the released rows are
    training rows, the rest drawn from a pool of rows it never trained on."""

    def __init__(self, f: float, pool: pd.DataFrame, seed: int = 0):
        super().__init__(seed)
        if not 0 <= f <= 1:
            raise ConfigError(f"f must lie in [0, 1], got {f!r}")
        self.f, self.pool = float(f), pool.reset_index(drop=True)

    def sample(self, n: int) -> pd.DataFrame:
        rng = self._rng
        k = int(round(self.f * n))
        a = self.df.iloc[rng.choice(len(self.df), k, replace=k > len(self.df))]
        b = self.pool.iloc[rng.choice(len(self.pool), n - k, replace=n - k > len(self.pool))]
        return pd.concat([a, b], ignore_index=True)

"""Adversarial records for sensitivity tests: what an attacker adds to a table to move a
statistic as far as one record can."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.schema import Schema

NUMERIC = ("lower", "upper", "out", "missing")
CATEGORY = ("random", "last", "new", "missing")


def adversarial_records(schema: Schema, numeric: str, category: str, n: int, seed: int = 0) -> pd.DataFrame:
    """``n`` adversarial records shaped by ``schema``.

    Parameters
    ----------
    schema : Schema
        The public schema the records are shaped by.
    numeric : {"lower", "upper", "out", "missing"}
        Numeric and datetime values at the lower or upper bound, far outside them (``"out"``), or
        missing (also where the schema allows none).  With ``category="random"``, a bound value is
        swapped for the other bound with probability 0.3, so the records mix the two extremes.
    category : {"random", "last", "new", "missing"}
        Categories drawn at random, the schema's last one, one the schema never lists, or missing.
    n : int
        Number of records.  Random categories vary the records, so a caller can pick among them
        (e.g. the one a keyed hash puts first).
    seed : int
        Seed of the test's own generator (no DP noise is drawn here).
    """
    if numeric not in NUMERIC or category not in CATEGORY:
        raise ValueError(f"numeric must be one of {NUMERIC} and category one of {CATEGORY}, "
                         f"got {numeric!r}, {category!r}")
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(n):
        row = {}
        for col in schema.columns:
            if col.kind == "categorical":
                row[col.name] = {"random": col.categories[rng.integers(len(col.categories))],
                                 "last": col.categories[-1], "new": f"never-seen-{rng.integers(10 ** 6)}",
                                 "missing": None}[category]
            else:
                far = 3e9 if col.kind == "datetime" else 1e12 * (col.upper - col.lower + 1)  # ~95 years / huge
                v = {"lower": col.lower, "upper": col.upper, "missing": np.nan, "out": col.upper + far}[numeric]
                if numeric in ("lower", "upper") and category == "random" and rng.random() < 0.3:
                    v = col.lower if v != col.lower else col.upper
                row[col.name] = pd.Timestamp(v, unit="s") if col.kind == "datetime" and not pd.isna(v) else v
        rows.append(row)
    return pd.DataFrame(rows, columns=schema.names)

"""The preset table behind ``synthzoo bench``: one preset on the shared datasets at several epsilons,
quality and time next to reference rows.

Each run fits on an 80 % split (seed 0), samples the fitted model's DP estimate of the training rows,
and scores against the real training rows (2-way TVD with numeric columns in 10 quantile bins, mean
error of 1,000 random 3-way queries).  Reference rows on the same split: INDEPENDENT (each column
resampled alone -- what a synthesizer that learnt no correlation would score) and HALF (two halves
of the real training rows -- about the best any synthesizer can hope for).
"""

from __future__ import annotations

import platform
import time
from typing import Callable, Iterable

import numpy as np
import pandas as pd

from .._threads import thread_settings
from ..datasets import load_shared, train_test_split
from ..isolation import peak_rss_mb
from ..metrics import half_split, independent_sample, query_error_3way, tvd_2way
from ..presets import make


def score(real: pd.DataFrame, fake: pd.DataFrame, schema) -> dict:
    return {"tvd_2way": tvd_2way(real, fake, schema, bins=10),
            "query_3way": query_error_3way(real, fake, schema, n_queries=1000, seed=0)}


def run(datasets: Iterable[str] = ("adult", "hmeq", "housing"), epsilons: Iterable = (0.2, 1.0, 5.0),
        synth: str = "privsyn", seeds: Iterable[int] = (0,), delta: float = 1e-5, root=None,
        overrides: dict | None = None, log: Callable[[str], None] = print) -> pd.DataFrame:
    """Run the grid and return one row per (dataset, epsilon, seed) plus reference rows.

    The whole request -- the preset, the datasets (each loaded), the budgets, delta and the seeds -- is
    checked before any row is computed: a ConfigError names the value."""
    from ..core.errors import ConfigError
    from ..presets import PRESETS
    from .grid import check_grid_values

    datasets, epsilons, seeds = list(datasets), list(epsilons), list(seeds)
    check_grid_values(datasets, epsilons, seeds, delta, what="bench")
    if synth not in PRESETS:
        raise ConfigError(f"bench: unknown preset {synth!r}; available: {sorted(PRESETS)}")
    loaded = [(name, *load_shared(name, root)) for name in datasets]  # a missing one before any work
    rows = []
    log(f"# synthzoo bench: synth={synth} delta={delta:g}; {thread_settings()}; python {platform.python_version()}")
    for name, df, schema in loaded:
        train, _test = train_test_split(df, test_size=0.2, seed=0)
        a, b = half_split(train, 0)
        for label, fake, real in (("INDEPENDENT", independent_sample(train, seed=0), train), ("HALF", b, a)):
            rows.append({"dataset": name, "method": label, "epsilon": np.nan, "seed": 0, **score(real, fake, schema),
                         "fit_s": np.nan, "sample_s": np.nan})
            log(_fmt(rows[-1]))
        for eps in epsilons:
            for seed in seeds:
                s = make(synth, epsilon=eps, delta=delta, schema=schema, seed=seed, **(overrides or {}))
                t0 = time.perf_counter()
                s.fit(train)
                t1 = time.perf_counter()
                fake = s.sample()  # as many rows as the DP estimate of the training rows
                t2 = time.perf_counter()
                spent = s.privacy_spent()
                rows.append({"dataset": name, "method": synth, "epsilon": eps, "seed": seed,
                             **score(train, fake, schema), "fit_s": t1 - t0, "sample_s": t2 - t1,
                             "eps_spent": spent.epsilon})
                log(_fmt(rows[-1]))
    rows_df = pd.DataFrame(rows)
    rows_df.attrs["threads"] = thread_settings()
    rows_df.attrs["peak_rss_mb"] = peak_rss_mb()
    return rows_df


def _fmt(r: dict) -> str:
    eps = "-" if pd.isna(r["epsilon"]) else f"{r['epsilon']:g}"
    t = "" if pd.isna(r["fit_s"]) else f"  fit {r['fit_s']:6.1f}s  sample {r['sample_s']:6.1f}s  " \
                                       f"eps spent {r['eps_spent']:.4f}"
    return (f"{r['dataset']:<8} {r['method']:<12} eps={eps:<4} seed={r['seed']}  tvd2={r['tvd_2way']:.4f}  "
            f"q3={r['query_3way']:.4f}{t}")

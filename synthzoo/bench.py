"""Benchmark: quality and time of synthesizers on the shared datasets, next to reference rows.

Each cell fits on an 80 % split (seed 0), samples as many rows, and scores against the real
training rows (2-way TVD with numeric columns in 10 quantile bins, mean error of 1,000 random
3-way queries).  Reference rows on the same split: INDEPENDENT (each column resampled alone —
what a synthesizer that learnt no correlation would score) and HALF (two halves of the real
training rows — about the best any synthesizer can hope for).
"""

from __future__ import annotations

import os
import platform
import resource
import time
from typing import Callable, Iterable

import numpy as np
import pandas as pd

from ._threads import single_thread_defaults, thread_settings
from .datasets import load_shared, read_csv, train_test_split
from .metrics import query_error_3way, tvd_2way
from .presets import make


def independent(df: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """Each column resampled on its own (a non-private reference, not a synthesizer)."""
    rng = np.random.default_rng(seed)
    return pd.DataFrame({c: df[c].to_numpy()[rng.integers(0, len(df), len(df))] for c in df.columns})


def halves(df: pd.DataFrame, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    idx = np.random.default_rng(seed).permutation(len(df))
    h = len(df) // 2
    return df.iloc[idx[:h]].reset_index(drop=True), df.iloc[idx[h:2 * h]].reset_index(drop=True)


def score(real: pd.DataFrame, fake: pd.DataFrame, schema) -> dict:
    return {"tvd_2way": tvd_2way(real, fake, schema, bins=10),
            "query_3way": query_error_3way(real, fake, schema, n_queries=1000, seed=0)}


def run(datasets: Iterable[str] = ("adult", "hmeq", "housing"), epsilons: Iterable = (0.2, 1.0, 5.0),
        synth: str = "privsyn", seeds: Iterable[int] = (0,), delta: float = 1e-5, root=None,
        overrides: dict | None = None, log: Callable[[str], None] = print) -> pd.DataFrame:
    """Run the grid and return one row per (dataset, epsilon, seed) plus reference rows."""
    rows = []
    log(f"# synthzoo bench: synth={synth} delta={delta:g}; {thread_settings()}; python {platform.python_version()}")
    for name in datasets:
        df, schema = load_shared(name, root)
        train, _test = train_test_split(df, test_size=0.2, seed=0)
        ref = {"INDEPENDENT": independent(train, 0)}
        a, b = halves(train, 0)
        for label, fake, real in (("INDEPENDENT", ref["INDEPENDENT"], train), ("HALF", b, a)):
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
                rows.append({"dataset": name, "method": synth, "epsilon": eps, "seed": seed, **score(train, fake, schema),
                             "fit_s": t1 - t0, "sample_s": t2 - t1, "eps_spent": spent.epsilon})
                log(_fmt(rows[-1]))
    rows_df = pd.DataFrame(rows)
    rows_df.attrs["threads"] = thread_settings()
    rows_df.attrs["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return rows_df


def _fmt(r: dict) -> str:
    eps = "-" if pd.isna(r["epsilon"]) else f"{r['epsilon']:g}"
    t = "" if pd.isna(r["fit_s"]) else f"  fit {r['fit_s']:6.1f}s  sample {r['sample_s']:6.1f}s  " \
                                       f"eps spent {r['eps_spent']:.4f}"
    return (f"{r['dataset']:<8} {r['method']:<12} eps={eps:<4} seed={r['seed']}  tvd2={r['tvd_2way']:.4f}  "
            f"q3={r['query_3way']:.4f}{t}")


# -------------------------------------------------------------------------------------------------
# ablation grid: selector x model cells, each fitted in its own child process
# -------------------------------------------------------------------------------------------------
GRID_COLUMNS = ["dataset", "kind", "selector", "model", "epsilon", "seed", "status", "reason", "tvd_2way",
                "query_3way", "ml_f1", "ml_r2", "fit_s", "sample_s", "wall_s", "cpu_s", "peak_rss_mb", "base_rss_mb",
                "eps_spent", "delta_spent", "budget_ok", "n_train", "n_test"]


def _maxrss_mb() -> float:
    """Peak resident memory of this process in MB.

    Linux's VmHWM first: ``ru_maxrss`` of a spawned child also counts the parent's memory at
    the fork before the exec, so a small cell started by a large parent would read as large.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB (macOS: bytes)


def _cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _child_main(conn, func, args: tuple) -> None:
    """Entry point of a spawned cell process: run ``func(*args)`` and send back
    ``(status, result or reason, base RSS, peak RSS, CPU seconds of func)``."""
    single_thread_defaults()
    base, cpu0 = _maxrss_mb(), _cpu_s()
    try:
        out = func(*args)
        conn.send(("ok", out, base, _maxrss_mb(), _cpu_s() - cpu0))
    except Exception as e:  # reported as the cell's reason; the grid goes on
        conn.send(("error", f"{type(e).__name__}: {e}", base, _maxrss_mb(), _cpu_s() - cpu0))
    finally:
        conn.close()


def run_isolated(func: Callable, args: tuple = (), timeout: float | None = None) -> dict:
    """Run ``func(*args)`` in a fresh process (multiprocessing 'spawn') and measure it.

    Returns ``{"status": "ok"|"error"|"timeout"|"crashed", "result", "reason", "wall_s", "cpu_s",
    "peak_rss_mb", "base_rss_mb"}``.  ``cpu_s`` (user + system seconds of ``func``) is the
    number to compare on a shared machine, where wall time depends on the other processes.
    ``peak_rss_mb`` is the child's peak resident memory (VmHWM) — the whole process, interpreter and imports
    included (``base_rss_mb`` is that peak before ``func`` ran), which is how a separate
    script's memory is measured too.  tracemalloc would miss
    numpy/jax buffers and slow numpy-heavy code down.  A child still running after ``timeout``
    seconds is terminated.  ``func`` must be importable (a module-level function).
    """
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child_main, args=(send, func, args), daemon=True)
    t0 = time.perf_counter()
    proc.start()
    send.close()
    out = {"status": "crashed", "result": None, "reason": "", "wall_s": np.nan, "cpu_s": np.nan,
           "peak_rss_mb": np.nan, "base_rss_mb": np.nan}
    try:
        if recv.poll(timeout):
            status, res, base, peak, cpu = recv.recv()
            out.update(status=status, base_rss_mb=base, peak_rss_mb=peak, cpu_s=cpu)
            out["result" if status == "ok" else "reason"] = res
        else:
            out.update(status="timeout", reason=f"no result within --cell-timeout {timeout:g}s; process terminated")
    except EOFError:  # child died without a word (killed for memory, segfault)
        pass
    finally:
        out["wall_s"] = time.perf_counter() - t0
        if out["status"] == "timeout":
            proc.terminate()
        proc.join(10)
        if proc.is_alive():
            proc.kill()
            proc.join()
        recv.close()
    if out["status"] == "crashed":
        out["reason"] = f"cell process exited with code {proc.exitcode} without a result"
    return out


def fit_sample(train: pd.DataFrame, schema_dict: dict, config: dict, epsilon: float, delta: float, seed: int,
               n: int | None = None) -> dict:
    """Fit one pipeline configuration on ``train`` and sample ``n`` rows (default: the fitted model's
    DP estimate of the training rows, so the release's size says nothing exact about them).

    ``config`` holds :class:`~synthzoo.pipeline.Synthesizer` arguments (``preprocess``,
    ``select``, ``model``, ``budget_split``).  Module-level, so a spawned cell process can run it.
    """
    from .core.schema import Schema
    from .pipeline import Synthesizer

    schema = Schema.from_dict(schema_dict)
    synth = Synthesizer(epsilon=epsilon, delta=delta, schema=schema, seed=seed, **config)
    t0 = time.perf_counter()
    synth.fit(train)
    t1 = time.perf_counter()
    fake = synth.sample(None if n is None else int(n))
    t2 = time.perf_counter()
    spent = synth.privacy_spent()
    return {"fake": fake, "fit_s": t1 - t0, "sample_s": t2 - t1, "eps_spent": float(spent.epsilon),
            "delta_spent": float(spent.delta)}


def grid_config(selector: str, model: str, base: str = "privsyn", preprocess=None) -> dict:
    """Synthesizer arguments of one grid cell: the preset ``base``'s preprocessing and budget split
    with ``selector`` (``"none"`` for record models) and ``model`` put in."""
    from .presets import preset_config

    cfg = preset_config(base)
    cfg["select"] = None if selector in (None, "none") else selector
    cfg["model"] = model
    split = cfg.get("budget_split")
    if cfg["select"] is None and split and "select" in split:  # a record model spends the selector's share
        split = dict(split)
        split["model"] = split.pop("select")
        cfg["budget_split"] = split
    if preprocess is not None:
        cfg["preprocess"] = list(preprocess)
        cfg["budget_split"] = None  # the preset's preprocessing share may have no spender left
    return cfg


def _load(data: str, schema, root) -> tuple[str, pd.DataFrame, object]:
    """``data`` is a shared dataset name or a CSV path (then ``schema`` is a Schema or a JSON path)."""
    from .core.errors import ConfigError
    from .core.schema import Schema

    is_file = data.lower().endswith(".csv") or os.path.isfile(data)
    if not is_file:
        if schema is not None:
            raise ConfigError(f"--schema is for a CSV path; {data!r} is a shared dataset name with its own schema")
        df, sch = load_shared(data, root)
        return data, df, sch
    if schema is None:
        raise ConfigError(f"data {data!r} is a CSV file: give its public schema (--schema schema.json)")
    if not os.path.isfile(data):
        raise FileNotFoundError(f"data file {data!r} not found")
    sch = schema if isinstance(schema, Schema) else Schema.from_json(schema)
    return os.path.splitext(os.path.basename(data))[0], read_csv(data, sch), sch


def _ml(train, fake, test, schema) -> dict:
    """Train-on-synthetic, test-on-real score with one boosted evaluator (LightGBM)."""
    from .metrics import ml_scores

    if not schema.meta.get("target"):
        return {"ml_f1": np.nan, "ml_r2": np.nan}
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = ml_scores(train, fake, test, schema, evaluators=("gbm",))
    s = dict(zip(df["score"], df["synthetic"]))
    return {"ml_f1": s.get("f1", np.nan), "ml_r2": s.get("r2", np.nan)}


def _grid_score(train, fake, test, schema, ml: bool) -> dict:
    out = {"tvd_2way": tvd_2way(test, fake, schema, bins=10),
           "query_3way": query_error_3way(test, fake, schema, n_queries=1000, seed=0)}
    out.update(_ml(train, fake, test, schema) if ml else {"ml_f1": np.nan, "ml_r2": np.nan})
    return out


def grid(data="adult", selectors: Iterable[str] = ("indif", "mst", "aim"), models: Iterable[str] = ("gum", "pgm"),
         epsilons: Iterable = (0.2, 1.0, 5.0), seeds: Iterable[int] = (0,), delta: float = 1e-5, schema=None,
         base: str = "privsyn", preprocess=None, cell_timeout: float | None = None, isolate: bool = True,
         ml: bool = True, references: bool = True, root=None, out: str | None = None, plot: str | None = None,
         log: Callable[[str], None] = print) -> pd.DataFrame:
    """Ablation grid: every selector x model cell on each dataset, epsilon and seed.

    The framework is the one of Chen et al., "Benchmarking Differentially Private Tabular Data
    Synthesis": a cell is the preset ``base``'s preprocessing with one selector and one model.
    ``data`` is a shared dataset name, a list of them, or a CSV path (with ``schema``: a
    :class:`Schema` or a JSON path).  Each cell fits on an 80 % split (seed 0), samples as many
    rows, and is scored on the held-out 20 %: 2-way TVD (numeric columns in 10 quantile bins),
    mean error of 1,000 random 3-way queries and, when the schema names a target, the macro F1
    (classification) or R² (regression) of LightGBM trained on the synthetic rows.  Wall time
    and peak RSS come from a child process per cell (``isolate=False`` runs in this process and
    leaves the memory columns empty); the (epsilon, delta) spent is checked against the request.

    Cells that cannot run — a module name not registered, a combination the pipeline refuses
    with :class:`ConfigError` — get ``status="skipped"`` and the reason; a cell that raises gets
    ``"error"``, one past ``cell_timeout`` seconds ``"timeout"``.  Reference rows (``kind=
    "reference"``): TRAIN (the real training rows themselves: the floor set by sampling noise)
    and INDEPENDENT (each training column resampled alone).  Writes ``out`` (CSV) and ``plot``
    (PNG heatmaps) when given; ``log`` gets one line per cell as it finishes.
    """
    from .core.errors import ConfigError
    from .pipeline import Synthesizer

    selectors, models = list(selectors), list(models)
    epsilons, seeds = [float(e) for e in epsilons], [int(s) for s in seeds]
    if not selectors or not models or not epsilons or not seeds:
        raise ConfigError("grid needs at least one selector, model, epsilon and seed")
    if cell_timeout is not None and not cell_timeout > 0:
        raise ConfigError(f"cell_timeout must be a positive number of seconds, got {cell_timeout!r}")
    if cell_timeout is not None and not isolate:
        log("# note: cell_timeout applies to isolated cells only; running in this process without one")
    names = [data] if isinstance(data, str) else list(data)
    loaded = [_load(d, schema, root) for d in names]
    total = len(loaded) * len(selectors) * len(models) * len(epsilons) * len(seeds)
    log(f"# synthzoo bench grid: {len(loaded)} dataset(s) x {len(selectors)} selectors x {len(models)} models x "
        f"{len(epsilons)} epsilons x {len(seeds)} seeds = {total} cells; base={base} delta={delta:g} "
        f"isolate={isolate}; {thread_settings()}; python {platform.python_version()}")
    rows, done = [], 0
    for name, df, sch in loaded:
        train, test = train_test_split(df, test_size=0.2, seed=0)
        common = {"dataset": name, "n_train": len(train), "n_test": len(test)}
        if references:
            for label, fake in (("TRAIN", train), ("INDEPENDENT", independent(train, 0))):
                rows.append({**common, "kind": "reference", "selector": "-", "model": label, "epsilon": np.nan,
                             "seed": 0, "status": "ok", "reason": "", **_grid_score(train, fake, test, sch, ml)})
                log(f"[ref] {name} {label}: tvd2={rows[-1]['tvd_2way']:.4f} q3={rows[-1]['query_3way']:.4f}"
                    f"{_ml_txt(rows[-1])}")
        sdict = sch.to_dict()
        for sel in selectors:
            for mod in models:
                cfg = grid_config(sel, mod, base, preprocess)
                for eps in epsilons:
                    for seed in seeds:
                        done += 1
                        row = {**common, "kind": "cell", "selector": sel, "model": mod, "epsilon": eps, "seed": seed,
                               "status": "ok", "reason": ""}
                        try:  # construction checks names and combination before any data is read
                            Synthesizer(epsilon=eps, delta=delta, schema=sch, seed=seed, **cfg)
                        except ConfigError as e:
                            row.update(status="skipped", reason=str(e))
                        if row["status"] == "ok":
                            row.update(_run_cell(train, test, sch, sdict, cfg, eps, delta, seed, isolate,
                                                 cell_timeout, ml))
                        rows.append(row)
                        log(f"[{done}/{total}] {_cell_txt(row)}")
                        if out:  # rewritten after every cell: a long grid stopped midway keeps what it did
                            pd.DataFrame(rows).reindex(columns=GRID_COLUMNS).to_csv(out, index=False)
    res = pd.DataFrame(rows).reindex(columns=GRID_COLUMNS)
    res.attrs["threads"] = thread_settings()
    if out:
        res.to_csv(out, index=False)
        log(f"# wrote {out}")
    if plot:
        if plot_grid(res, plot):
            log(f"# wrote {plot}")
    return res


def _run_cell(train, test, sch, sdict, cfg, eps, delta, seed, isolate, timeout, ml) -> dict:
    if isolate:
        r = run_isolated(fit_sample, (train, sdict, cfg, eps, delta, seed), timeout)
        out = {k: r[k] for k in ("wall_s", "cpu_s", "peak_rss_mb", "base_rss_mb")}
        if r["status"] != "ok":
            return {**out, "status": r["status"], "reason": r["reason"]}
        res = r["result"]
    else:
        t0, c0 = time.perf_counter(), _cpu_s()
        try:
            res = fit_sample(train, sdict, cfg, eps, delta, seed)
        except Exception as e:  # noqa: BLE001 - recorded as the cell's reason
            return {"status": "error", "reason": f"{type(e).__name__}: {e}", "wall_s": time.perf_counter() - t0}
        out = {"wall_s": time.perf_counter() - t0, "cpu_s": _cpu_s() - c0}
    fake = res.pop("fake")
    ok = res["eps_spent"] <= eps * (1 + 1e-9) and res["delta_spent"] <= delta * (1 + 1e-9)
    out.update(res, budget_ok=bool(ok), **_grid_score(train, fake, test, sch, ml))
    if not ok:
        out.update(status="error", reason=f"privacy spent ({res['eps_spent']:.6g}, {res['delta_spent']:.3g}) exceeds "
                                          f"the request ({eps:g}, {delta:g})")
    return out


def _ml_txt(r: dict) -> str:
    if not pd.isna(r.get("ml_f1", np.nan)):
        return f" f1={r['ml_f1']:.3f}"
    if not pd.isna(r.get("ml_r2", np.nan)):
        return f" r2={r['ml_r2']:.3f}"
    return ""


def _cell_txt(r: dict) -> str:
    head = f"{r['dataset']} {r['selector']} x {r['model']} eps={r['epsilon']:g} seed={r['seed']}"
    if r["status"] != "ok":
        return f"{head}: {r['status'].upper()} - {r['reason']}"
    mem = "" if pd.isna(r.get("peak_rss_mb", np.nan)) else f" peak {r['peak_rss_mb']:.0f}MB"
    return (f"{head}: tvd2={r['tvd_2way']:.4f} q3={r['query_3way']:.4f}{_ml_txt(r)} fit {r['fit_s']:.1f}s "
            f"sample {r['sample_s']:.1f}s cpu {r['cpu_s']:.1f}s{mem} eps spent {r['eps_spent']:.4f}")


def plot_grid(res: pd.DataFrame, path: str) -> bool:
    """Heatmaps of the mean 2-way TVD over seeds: selector (rows) x model (columns), one panel per
    dataset and epsilon; cells that did not run are marked with their status. Returns False when
    there is no cell to draw."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = res[res["kind"] == "cell"]
    if cells.empty:
        return False
    dsets = list(dict.fromkeys(cells["dataset"]))
    epss = sorted(cells["epsilon"].unique())
    sels, mods = list(dict.fromkeys(cells["selector"])), list(dict.fromkeys(cells["model"]))
    fig, axes = plt.subplots(len(dsets), len(epss), squeeze=False,
                             figsize=(1.5 + (0.2 + 0.8 * len(mods)) * len(epss),
                                      0.6 + (0.5 + 0.45 * len(sels)) * len(dsets)))
    ok = cells[cells["status"] == "ok"]
    vmin, vmax = (float(ok["tvd_2way"].min()), float(ok["tvd_2way"].max())) if len(ok) else (0.0, 1.0)
    vmax = max(vmax, vmin + 1e-6)
    for i, ds in enumerate(dsets):
        for j, eps in enumerate(epss):
            ax = axes[i, j]
            sub = cells[(cells["dataset"] == ds) & (cells["epsilon"] == eps)]
            m = np.full((len(sels), len(mods)), np.nan)
            for a, s in enumerate(sels):
                for b, mo in enumerate(mods):
                    c = sub[(sub["selector"] == s) & (sub["model"] == mo)]
                    good = c[c["status"] == "ok"]["tvd_2way"]
                    if len(good):
                        m[a, b] = good.mean()
                        dark = (m[a, b] - vmin) / (vmax - vmin) > 0.6  # viridis_r is dark at the top end
                        ax.text(b, a, f"{m[a, b]:.3f}", ha="center", va="center", fontsize=7,
                                color="white" if dark else "black")
                    elif len(c):
                        ax.text(b, a, c["status"].iloc[0], ha="center", va="center", fontsize=6, color="grey")
            im = ax.imshow(m, cmap="viridis_r", vmin=vmin, vmax=vmax, aspect="auto")
            ax.set_xticks(range(len(mods)), mods, fontsize=7)
            ax.set_yticks(range(len(sels)), sels if j == 0 else [""] * len(sels), fontsize=7)
            ax.set_title(f"{ds}  eps={eps:g}", fontsize=8)
    fig.colorbar(im, ax=axes.ravel().tolist(), shrink=0.8, label="2-way TVD (held-out, lower is better)")
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return True

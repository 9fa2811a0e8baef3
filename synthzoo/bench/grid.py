"""The ablation grid: every selector x model cell on each dataset, epsilon and seed, each cell in a
worker process of its own (:mod:`synthzoo.isolation`), scored on held-out rows."""

from __future__ import annotations

import os
import platform
import time
from typing import Callable, Iterable

import numpy as np
import pandas as pd

from .._threads import thread_settings
from ..datasets import load_shared, read_csv, train_test_split
from ..isolation import cpu_seconds, run_isolated
from ..metrics._common import count as plural
from ..metrics import independent_sample, query_error_3way, tvd_2way
from .plot import plot_grid

GRID_COLUMNS = ["dataset", "kind", "selector", "model", "epsilon", "seed", "status", "reason", "tvd_2way",
                "query_3way", "ml_f1", "ml_r2", "fit_s", "sample_s", "wall_s", "cpu_s", "peak_rss_mb", "base_rss_mb",
                "eps_spent", "delta_spent", "budget_ok", "n_train", "n_test"]


def fit_sample(train: pd.DataFrame, schema_dict: dict, config: dict, epsilon: float, delta: float, seed: int,
               n: int | None = None) -> dict:
    """Fit one pipeline configuration on ``train`` and sample ``n`` rows (default: the fitted model's
    DP estimate of the training rows, so the release's size says nothing exact about them).

    ``config`` holds :class:`~synthzoo.pipeline.Synthesizer` arguments (``preprocess``,
    ``select``, ``model``, ``budget_split``).  Module-level, so a spawned cell process can run it.
    """
    from ..core.schema import Schema
    from ..pipeline import Synthesizer

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
    with ``selector`` (``"none"`` for record models) and ``model`` (a name, or ``{"name": ...,
    **params}``) put in."""
    from ..presets import preset_config

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
    else:
        from ..core.base import REGISTRY

        cls = REGISTRY["model"].get(_name(model))
        if cls is not None and cls.get_tags()["input"] == "features":
            cfg["preprocess"] = ["mode_features"]  # a model of continuous features: CTGAN's encoding
        elif cls is not None and cls.get_tags()["input"] == "tokens":
            cfg["preprocess"] = ["tokens"]  # a token model: digits on public bounds, spends nothing
            cfg["budget_split"] = None
    return cfg


def _name(module) -> str:
    if module is None:
        return "none"
    return module.get("name", "?") if isinstance(module, dict) else str(module)


def module_labels(modules, role: str = "model") -> list[str]:
    """The grid's label of each module (``role``: model or selector): its name, and where two share a
    name (variants of one module, ``{"name": "gum", "iterations": 50}`` and ``{"name": "gum",
    "iterations": 500}``) the name with the parameters in which the variants differ, sorted
    (``gum(iterations=50)``), so that rows, tables and heatmaps never merge them.  Two entries that
    are the same module are a ConfigError naming both."""
    from ..core.errors import ConfigError

    def params(m) -> dict:
        return {k: v for k, v in m.items() if k != "name"} if isinstance(m, dict) else {}

    labels = []
    for m in modules:
        same = [o for o in modules if _name(o) == _name(m)]
        if len(same) == 1:
            labels.append(_name(m))
            continue
        keys = sorted({k for o in same for k in params(o)
                       if any(params(o).get(k, _UNSET) != params(x).get(k, _UNSET) for x in same)})
        shown = ", ".join(f"{k}={params(m)[k]!r}" if isinstance(params(m)[k], str) else f"{k}={params(m)[k]}"
                          for k in keys if k in params(m))
        labels.append(f"{_name(m)}({shown})" if shown else _name(m))  # the plain one keeps its name
    seen: dict[str, int] = {}
    for i, lab in enumerate(labels):
        if lab in seen:
            raise ConfigError(f"grid: {role}s {modules[seen[lab]]!r} and {modules[i]!r} are the same {role} (label "
                              f"{lab!r}); each cell would run twice")
        seen[lab] = i
    # labels differ where parameters are spelled differently: 'gum' and {"name": "gum", "iterations": 100}
    # (its default) are one model under two labels, so the parameters are compared with the defaults filled in
    same: dict[str, int] = {}
    for i, m in enumerate(modules):
        key = _effective(m, "select" if role == "selector" else "model")
        if key in same:
            raise ConfigError(f"grid: {role}s {modules[same[key]]!r} and {modules[i]!r} are the same {role} (the same "
                              "parameters once its defaults are filled in); each cell would run twice")
        same[key] = i
    return labels


def _effective(module, registry_role: str) -> str:
    """A module's name and every parameter it runs with (its registered defaults filled in), as JSON:
    equal for two spellings of one configuration."""
    import inspect
    import json

    from ..core.base import REGISTRY, load_plugins
    from ..core.errors import ConfigError

    params = {k: v for k, v in module.items() if k != "name"} if isinstance(module, dict) else {}
    try:
        load_plugins()  # a plugin's defaults as in the cell that builds it
    except ConfigError:
        pass  # the cell reports the broken plugin
    cls = REGISTRY[registry_role].get(_name(module))
    defaults = {} if cls is None else {k: p.default for k, p in inspect.signature(cls).parameters.items()
                                       if p.default is not p.empty}
    # via JSON: a tuple default and a list given, or NumPy and Python numbers, compare equal
    return json.dumps([_name(module), {**defaults, **params}], sort_keys=True,
                      default=lambda o: o.item() if isinstance(o, np.generic) else repr(o))


def model_labels(models) -> list[str]:
    """:func:`module_labels` of the grid's models."""
    return module_labels(models, "model")


_UNSET = object()


def _load(data: str, schema, root) -> tuple[str, pd.DataFrame, object]:
    """``data`` is a shared dataset name or a CSV path (then ``schema`` is a Schema or a JSON path)."""
    from ..core.errors import ConfigError
    from ..core.schema import Schema

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
    from ..metrics import ml_scores

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


def check_grid_values(names, epsilons, seeds, delta, what: str = "grid") -> None:
    """The datasets, budgets and seeds of a grid (``what``: or of the preset table), checked before any work:
    ConfigError naming the value."""
    from ..core.errors import ConfigError
    from ..core.privacy.ledger import check_privacy_params

    names, epsilons, seeds = list(names), list(epsilons), list(seeds)
    if not names or any(not isinstance(n, str) or not n.strip() for n in names):
        raise ConfigError(f"{what}: datasets must be non-empty names or paths, got {names!r}")
    if not epsilons:
        raise ConfigError(f"{what}: no epsilon given; give at least one privacy budget, e.g. 0.2,1,5")
    if not seeds:
        raise ConfigError(f"{what}: no seed given; give at least one synthesizer seed")
    try:  # delta alone first: a bad delta is not the first epsilon's fault
        check_privacy_params(None, delta)
    except ConfigError as err:
        raise ConfigError(f"{what}: {err}") from None
    for e in epsilons:
        try:
            check_privacy_params(e, delta)
        except ConfigError as err:
            raise ConfigError(f"{what}: epsilon {e!r}: {err}") from None
    bad = [s for s in seeds if isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 0]
    if bad:
        raise ConfigError(f"{what}: seeds must be whole numbers >= 0, got {bad}")
    twice = [n for i, n in enumerate(names) if n in names[:i]]
    if twice:
        raise ConfigError(f"{what}: dataset(s) {twice} listed twice (each of their rows would run twice)")
    if len({None if e is None else float(e) for e in epsilons}) != len(epsilons) or len(set(seeds)) != len(seeds):
        raise ConfigError(f"{what}: an epsilon or seed is listed twice (each cell would run twice)")


def data_fingerprint(train: pd.DataFrame, test: pd.DataFrame, sch) -> str:
    """SHA-256 of a dataset's split rows and schema as loaded: equal wherever the same data are read, so
    that a grid resumed or shared across machines never mixes rows of two versions of a dataset."""
    import hashlib
    import json

    h = hashlib.sha256(json.dumps(sch.to_dict(), sort_keys=True, default=str).encode())
    for part in (train, test):
        h.update(pd.util.hash_pandas_object(part, index=True).to_numpy().tobytes())
    return h.hexdigest()[:32]


def spec_differences(have: dict, spec: dict) -> list[str]:
    """The fields in which two grid specifications differ, sorted (for the error that names them)."""
    return sorted(k for k in set(have) | set(spec) if have.get(k) != spec.get(k))


def _row_key(r) -> tuple:
    """A result row's cell: (dataset, selector, model label, epsilon, seed); references by their label."""
    if r["kind"] == "reference":
        return (str(r["dataset"]), "-", str(r["model"]), None, 0)
    return (str(r["dataset"]), str(r["selector"]), str(r["model"]), float(r["epsilon"]), int(r["seed"]))


def _resumed_rows(out: str, spec: dict) -> dict:
    """The rows of an earlier run of the same grid in ``out`` (keyed by :func:`_row_key`), checked
    against its ``<out>.spec.json``; {} when there is no earlier run."""
    import json

    from ..core.errors import ConfigError

    spec_path = out + ".spec.json"
    if not os.path.exists(out):
        return {}
    if not os.path.exists(spec_path):
        raise ConfigError(f"--resume: {out} has no {spec_path} beside it (written by an older version or by "
                          "hand), so it cannot be told to be this grid's; move it away to start afresh")
    have = json.loads(open(spec_path, encoding="utf-8").read())
    if have != spec:
        raise ConfigError(f"--resume: {out} holds another grid (it differs in {spec_differences(have, spec)}); "
                          "give another --out or "
                          "the same grid")
    df = pd.read_csv(out)
    # the cell's names as written, not as pandas' defaults type them: dataset "007" (from 007.csv) read as 7 and
    # "NA" as missing, so no kept row matched its cell and every cell ran again.  Not core.csvfile's reader: that
    # one is for data files (a schema, a table with rows), and this is the grid's own table, rows or none
    names = pd.read_csv(out, usecols=lambda c: c in _NAME_COLUMNS, dtype=str, keep_default_na=False)
    df[list(names.columns)] = names
    rows = {}
    for r in df.to_dict("records"):
        rows.setdefault(_row_key(r), r)  # a row written twice by an older version: the first
    return rows


#: the grid table's columns that hold names (of the dataset, the modules, the row's kind)
_NAME_COLUMNS = ("dataset", "kind", "selector", "model")


def _write_atomic(res: pd.DataFrame, out: str) -> None:
    """The table to ``out`` through a temporary file renamed over it: a crash while writing never
    leaves a cut CSV (a resume would read it)."""
    tmp = out + ".part"
    res.to_csv(tmp, index=False)
    os.replace(tmp, out)


def grid(data="adult", selectors: Iterable[str] = ("indif", "mst", "aim"), models: Iterable[str] = ("gum", "pgm"),
         epsilons: Iterable = (0.2, 1.0, 5.0), seeds: Iterable[int] = (0,), delta: float = 1e-5, schema=None,
         base: str = "privsyn", preprocess=None, cell_timeout: float | None = None, isolate: bool = True,
         ml: bool = True, references: bool = True, root=None, out: str | None = None, plot: str | None = None,
         log: Callable[[str], None] = print, resume: bool = False) -> pd.DataFrame:
    """Ablation grid: every selector x model cell on each dataset, epsilon and seed.

    The framework is the one of Chen et al., "Benchmarking Differentially Private Tabular Data
    Synthesis": a cell is the preset ``base``'s preprocessing with one selector and one model
    (``selectors`` may hold ``"none"`` for record models; ``models`` names, or ``{"name": ...,
    **params}`` for a model with its own parameters, e.g. a short training run, and selectors alike;
    variants of one module are labelled by the parameters in which they differ, :func:`module_labels`).
    ``data`` is a shared dataset name, a list of them, or a CSV path (with ``schema``: a
    :class:`Schema` or a JSON path).
    Each cell fits on an 80 % split (seed 0), samples as many rows, and is scored on the held-out
    20 %: 2-way TVD (numeric columns in 10 quantile bins), mean error of 1,000 random 3-way queries
    and, when the schema names a target, the macro F1 (classification) or R² (regression) of
    LightGBM trained on the synthetic rows.  Wall time
    and peak RSS come from a child process per cell (``isolate=False`` runs in this process and
    leaves the memory columns empty); the (epsilon, delta) spent is checked against the request.

    Cells that cannot run — a module name not registered, a combination the pipeline refuses
    with :class:`ConfigError` — get ``status="skipped"`` and the reason; a cell that raises gets
    ``"error"``, one past ``cell_timeout`` seconds ``"timeout"``.  Reference rows (``kind=
    "reference"``): TRAIN (the real training rows themselves: the floor set by sampling noise)
    and INDEPENDENT (each training column resampled alone).  Writes ``out`` (CSV) and ``plot``
    (PNG heatmaps) when given; ``log`` gets one line per cell as it finishes.  ``out`` is rewritten
    after every cell, with the grid's specification in ``<out>.spec.json`` (a fresh start empties it
    first); ``resume=True`` keeps the rows an earlier run of the same grid left in ``out`` (a
    ConfigError names what differs if it was another grid) and runs only the cells it lacks.
    """
    from ..core.errors import ConfigError
    from ..metrics._common import check_bool

    # a text such as "no" is truthy: ml="no" scored LightGBM, resume="false" resumed
    isolate, ml, references, resume = (check_bool(v, k) for v, k in (
        (isolate, "isolate"), (ml, "ml"), (references, "references"), (resume, "resume")))
    selectors, models = list(selectors), list(models)
    names = [data] if isinstance(data, str) else list(data)
    epsilons, seeds = list(epsilons), list(seeds)
    check_grid_values(names, epsilons, seeds, delta)
    epsilons, seeds = [float(e) for e in epsilons], [int(s) for s in seeds]
    if not selectors or not models:
        raise ConfigError("grid needs at least one selector, model, epsilon and seed")
    if cell_timeout is not None and not cell_timeout > 0:
        raise ConfigError(f"cell_timeout must be a positive number of seconds, got {cell_timeout!r}")
    if cell_timeout is not None and not isolate:
        log("# note: cell_timeout applies to isolated cells only; running in this process without one")
    labels, sel_labels = model_labels(models), module_labels(selectors, "selector")
    if resume and not out:
        raise ConfigError("resume needs out: the CSV an earlier run of the grid wrote")
    loaded = [_load(d, schema, root) for d in names]
    splits = [(name, *train_test_split(df, test_size=0.2, seed=0), sch) for name, df, sch in loaded]
    spec = None
    kept: dict = {}
    if out:
        import json

        spec = json.loads(json.dumps({
            # the configurations, not only their labels: a lone variant is labelled by its name alone
            "data": names, "selectors": selectors, "models": models, "epsilons": epsilons, "seeds": seeds,
            "delta": float(delta), "base": base, "preprocess": None if preprocess is None else list(preprocess),
            "ml": bool(ml), "references": bool(references),
            "fingerprints": [data_fingerprint(tr, te, sch) for _, tr, te, sch in splits]}, default=str))
        if resume:
            kept = _resumed_rows(out, spec)
        if not kept:  # a fresh start: an earlier grid's rows must not sit beside this grid's spec (a resume keeps them)
            _write_atomic(pd.DataFrame(columns=GRID_COLUMNS), out)
        with open(out + ".spec.json.part", "w", encoding="utf-8") as fh:  # renamed whole: a cut spec never reads
            json.dump(spec, fh, indent=1)
        os.replace(out + ".spec.json.part", out + ".spec.json")
    total = len(loaded) * len(selectors) * len(models) * len(epsilons) * len(seeds)
    log(f"# synthzoo bench grid: {len(loaded)} dataset(s) x {len(selectors)} selectors x {len(models)} models x "
        f"{len(epsilons)} epsilons x {len(seeds)} seeds = {total} cells; base={base} delta={delta:g} "
        f"isolate={isolate}; {thread_settings()}; python {platform.python_version()}")
    if kept:
        log(f"# resuming {out}: {plural(len(kept), 'row')} kept from the earlier run")
    rows, done = [], 0
    for name, train, test, sch in splits:
        if references:
            for label in REFERENCES:
                key = (name, "-", label, None, 0)
                rows.append(kept[key] if key in kept else reference_row(name, train, test, sch, label, ml))
                log(f"[ref] {name} {label}: tvd2={rows[-1]['tvd_2way']:.4f} q3={rows[-1]['query_3way']:.4f}"
                    f"{_ml_txt(rows[-1])}{' (kept)' if key in kept else ''}")
                if out:
                    _write_atomic(pd.DataFrame(rows).reindex(columns=GRID_COLUMNS), out)
        for sel, sel_label in zip(selectors, sel_labels):
            for mod, label in zip(models, labels):
                for eps in epsilons:
                    for seed in seeds:
                        done += 1
                        key = (name, sel_label, label, eps, seed)
                        if key in kept:
                            rows.append(kept[key])
                            log(f"[{done}/{total}] {_cell_txt(rows[-1])} (kept)")
                            continue
                        rows.append(cell_row(name, train, test, sch, sel, mod, eps, seed, delta=delta, base=base,
                                             preprocess=preprocess, isolate=isolate, cell_timeout=cell_timeout,
                                             ml=ml, label=label, selector_label=sel_label))
                        log(f"[{done}/{total}] {_cell_txt(rows[-1])}")
                        if out:  # rewritten after every cell: a grid stopped midway keeps what it did (resume)
                            _write_atomic(pd.DataFrame(rows).reindex(columns=GRID_COLUMNS), out)
    res = pd.DataFrame(rows).reindex(columns=GRID_COLUMNS)
    res.attrs["threads"] = thread_settings()
    if out:
        _write_atomic(res, out)
        log(f"# wrote {out}")
    if plot:
        if plot_grid(res, plot):
            log(f"# wrote {plot}")
    return res


#: The reference rows of every dataset: the real training rows, and each column resampled alone.
REFERENCES = ("TRAIN", "INDEPENDENT")


def reference_row(name: str, train: pd.DataFrame, test: pd.DataFrame, sch, label: str, ml: bool = True) -> dict:
    """A reference row (``kind="reference"``): ``TRAIN`` scores the training rows themselves (the
    floor set by sampling noise), ``INDEPENDENT`` each training column resampled alone."""
    fake = train if label == "TRAIN" else independent_sample(train, seed=0)
    return {"dataset": name, "n_train": len(train), "n_test": len(test), "kind": "reference", "selector": "-",
            "model": label, "epsilon": np.nan, "seed": 0, "status": "ok", "reason": "",
            **_grid_score(train, fake, test, sch, ml)}


def cell_row(name: str, train: pd.DataFrame, test: pd.DataFrame, sch, selector: str, model, epsilon: float,
             seed: int, delta: float = 1e-5, base: str = "privsyn", preprocess=None, isolate: bool = True,
             cell_timeout: float | None = None, ml: bool = True, label: str | None = None,
             selector_label: str | None = None) -> dict:
    """One grid cell, fitted on ``train`` and scored on ``test``: the row :func:`grid` writes
    (``status`` "skipped" with the reason when the pipeline refuses the combination); ``label`` and
    ``selector_label`` name the model and the selector in the row (:func:`module_labels`; default their
    names)."""
    from ..core.errors import ConfigError
    from ..pipeline import Synthesizer

    cfg = grid_config(selector, model, base, preprocess)
    row = {"dataset": name, "n_train": len(train), "n_test": len(test), "kind": "cell",
           "selector": selector_label or _name(selector),
           "model": label or _name(model), "epsilon": float(epsilon), "seed": int(seed), "status": "ok", "reason": ""}
    try:  # construction checks names and combination before any data is read
        Synthesizer(epsilon=epsilon, delta=delta, schema=sch, seed=seed, **cfg)
    except ConfigError as e:
        return {**row, "status": "skipped", "reason": str(e)}
    row.update(_run_cell(train, test, sch, sch.to_dict(), cfg, float(epsilon), delta, int(seed), isolate,
                         cell_timeout, ml))
    return row


def _run_cell(train, test, sch, sdict, cfg, eps, delta, seed, isolate, timeout, ml) -> dict:
    if isolate:
        r = run_isolated(f"{__name__}:fit_sample", (train, sdict, cfg, eps, delta, seed), timeout)
        out = {"wall_s": r.wall_s, "cpu_s": r.cpu_s, "peak_rss_mb": r.peak_rss_mb, "base_rss_mb": r.base_rss_mb}
        if r.status != "ok":
            reason = r.reason if r.status != "timeout" else f"{r.reason} (--cell-timeout)"
            return {**out, "status": r.status, "reason": reason}
        res = r.value
    else:
        t0, c0 = time.perf_counter(), cpu_seconds()
        try:
            res = fit_sample(train, sdict, cfg, eps, delta, seed)
        except Exception as e:  # noqa: BLE001 - recorded as the cell's reason
            return {"status": "error", "reason": f"{type(e).__name__}: {e}", "wall_s": time.perf_counter() - t0}
        out = {"wall_s": time.perf_counter() - t0, "cpu_s": cpu_seconds() - c0}
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

"""Command line: ``synthzoo fit | sample | demo | bench | eval | list``."""

from __future__ import annotations

import argparse
import os
import sys
import time

from ._threads import single_thread_defaults


def _floats(s: str) -> list[float]:
    return [float(x) for x in s.split(",") if x]


def _names(s: str | None) -> list[str] | None:
    return None if s is None else [x for x in s.split(",") if x]


def _epsilon(s: str):
    return None if s.lower() in ("none", "inf", "nonprivate", "non-private") else float(s)


def cmd_fit(a) -> int:
    import pandas as pd

    import synthzoo as sz

    schema = sz.Schema.from_json(a.schema) if a.schema else None
    df = pd.read_csv(a.data)
    over = {}
    if a.preprocess is not None:
        over["preprocess"] = _names(a.preprocess)
    if a.select is not None:
        over["select"] = None if a.select == "none" else a.select
    if a.model is not None:
        over["model"] = a.model
    synth = sz.make(a.synth, epsilon=a.epsilon, delta=a.delta, schema=schema, seed=a.seed,
                    out_of_bounds="clip" if a.clip else "raise", noise_seed=a.noise_seed, **over)
    print(f"fitting {synth!r} on {a.data} ({len(df):,} rows x {df.shape[1]} columns)", file=sys.stderr)
    t0 = time.perf_counter()
    synth.fit(df, progress=True)
    synth.save(a.out)
    print(f"fitted in {time.perf_counter() - t0:.1f}s; saved to {a.out}", file=sys.stderr)
    print(synth.privacy_report())
    return 0


def cmd_sample(a) -> int:
    import synthzoo as sz

    synth = sz.Synthesizer.load(a.model)
    t0 = time.perf_counter()
    fake = synth.sample(a.n, seed=a.seed)  # n None: the model's DP estimate of the training rows
    fake.to_csv(a.out, index=False)
    print(f"sampled {len(fake):,} rows in {time.perf_counter() - t0:.1f}s -> {a.out}", file=sys.stderr)
    print(synth.privacy_report())
    return 0


def cmd_demo(a) -> int:
    import synthzoo as sz
    from synthzoo.metrics import independent_sample
    from synthzoo.datasets import make_demo, train_test_split
    from synthzoo.metrics import query_error_3way, tvd_2way

    df, schema = make_demo(n=a.n, seed=a.seed)
    train, test = train_test_split(df, test_size=0.2, seed=a.seed)
    print(f"1. built-in demo table: {len(df):,} rows, columns {list(df.columns)}")
    print(f"   public schema: {sum(c.kind == 'numerical' for c in schema)} numerical, "
          f"{sum(c.kind == 'categorical' for c in schema)} categorical, {sum(c.kind == 'datetime' for c in schema)} "
          f"datetime; {len(train):,} training rows")
    synth = sz.make(a.synth, epsilon=a.epsilon, delta=a.delta, schema=schema, seed=a.seed)
    print(f"2. fitting {synth!r}")
    t0 = time.perf_counter()
    synth.fit(train, progress=True)
    t1 = time.perf_counter()
    fake = synth.sample()  # as many rows as the DP estimate of the training rows
    t2 = time.perf_counter()
    print(f"3. fitted in {t1 - t0:.1f}s, sampled {len(fake):,} rows in {t2 - t1:.1f}s; first rows:")
    print(fake.head(5).to_string(max_colwidth=14))
    print("4. " + synth.privacy_report().replace("\n", "\n   "))
    ind = independent_sample(train, seed=a.seed)
    print("5. quality against the training rows (lower is better):")
    print(f"   {'':<22}{'2-way TVD':>10}{'3-way query err':>17}")
    for label, f in ((a.synth, fake), ("independent columns", ind)):
        print(f"   {label:<22}{tvd_2way(train, f, schema):>10.4f}{query_error_3way(train, f, schema):>17.4f}")
    if a.out:
        fake.to_csv(a.out, index=False)
        print(f"6. wrote {a.out}")
    return 0


def cmd_bench(a) -> int:
    from synthzoo import bench

    grid_mode = (a.select is not None or a.model is not None or a.schema is not None or a.cell_timeout is not None
                 or a.preprocess is not None or (a.data is not None and os.path.isfile(a.data)))
    if grid_mode:
        return _bench_grid(a, bench)
    if a.no_ml or a.in_process or a.plot:
        print("synthzoo: error: --no-ml, --in-process and --plot belong to the grid mode (give --select/--model)",
              file=sys.stderr)
        return 2
    res = bench.run(datasets=_names(a.data or "adult,hmeq,housing"), epsilons=_floats(a.epsilon), synth=a.synth,
                    seeds=range(a.seeds), delta=a.delta, root=a.root)
    print()
    cols = ["dataset", "method", "epsilon", "seed", "tvd_2way", "query_3way", "fit_s", "sample_s"]
    print(res[cols].to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    print(f"# threads: {res.attrs['threads']}; peak RSS {res.attrs['peak_rss_mb']:.0f} MB")
    if a.out:
        res.to_csv(a.out, index=False)
        print(f"# wrote {a.out}")
    return 0


def _bench_grid(a, bench) -> int:
    """`synthzoo bench --select ... --model ...`: every selector x model cell (the preset --synth
    gives the preprocessing, the budget split and whichever of selector/model is not given)."""
    from synthzoo.presets import preset_config

    base = preset_config(a.synth)
    sel = _names(a.select) if a.select is not None else [base["select"] or "none"]
    mod = _names(a.model) if a.model is not None else [base["model"] if isinstance(base["model"], str)
                                                       else base["model"]["name"]]
    pre = None
    if a.preprocess is not None:
        pre = [] if a.preprocess.lower() == "none" else _names(a.preprocess)
    data = a.data or "adult"
    data = data if os.path.isfile(data) or a.schema else _names(data)
    out = a.out or "bench_grid.csv"
    plot = a.plot or os.path.splitext(out)[0] + ".png"
    res = bench.grid(data, selectors=sel, models=mod, epsilons=_floats(a.epsilon), seeds=range(a.seeds),
                     delta=a.delta, schema=a.schema, base=a.synth, preprocess=pre, cell_timeout=a.cell_timeout,
                     isolate=not a.in_process, ml=not a.no_ml, root=a.root, out=out, plot=plot,
                     log=lambda s: print(s, flush=True))
    cells = res[res["kind"] == "cell"]
    n_ok, n_skip = int((cells["status"] == "ok").sum()), int((cells["status"] == "skipped").sum())
    print(f"# {n_ok} of {len(cells)} cells ran; {n_skip} skipped, {len(cells) - n_ok - n_skip} failed "
          "(error/timeout/crashed)")
    return 0


def cmd_eval(a) -> int:
    """``synthzoo eval REAL FAKE [--test T] [--schema S] [--out report.html] [--metrics a,b]``: writes the
    report and prints the metric table."""
    import pandas as pd

    from synthzoo.metrics import evaluate_files

    metrics = [m.strip() for m in a.metrics.split(",") if m.strip()] if a.metrics else None
    table = evaluate_files(a.real, a.fake, test=a.test, schema=a.schema, out=a.out, metrics=metrics,
                           risk=getattr(a, "risk", None))
    with pd.option_context("display.width", 160):
        print(table.drop(columns="description").to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    print(f"# wrote {a.out}")
    return 0


def cmd_list(a) -> int:
    import synthzoo as sz

    for role, names in sz.available().items():
        print(f"{role:<11} {', '.join(names)}")
    for name, paper in sz.available_presets().items():
        print(f"preset      {name:<10} {paper}")
    return 0


def cmd_tune(a) -> int:
    import warnings

    import pandas as pd

    import synthzoo as sz
    from synthzoo.datasets import train_test_split
    from tuning import tune

    schema = sz.Schema.from_json(a.schema)
    train = pd.read_csv(a.data)
    if a.val:
        val = pd.read_csv(a.val)
    elif a.privacy == "accounted":
        # no seeded split (one added record would move hundreds of others): every run splits the records
        # itself, each with an independent secret draw, and nothing about the split is printed or stored
        val = None
        print(f"no --val: each run scores on about 20% of the records of {a.data}, chosen record by record "
              "with secret randomness", file=sys.stderr)
    elif a.privacy != "public":
        train, val = train_test_split(train, test_size=0.2, seed=a.seed)
        print(f"no --val: holding out 20% of {a.data} ({len(val):,} rows) for validation", file=sys.stderr)
    else:
        val = None
    choices = {}
    if a.numeric:
        choices["preprocess.numeric"] = _names(a.numeric)
    if a.select_model:
        choices["select_model"] = _names(a.select_model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the privacy statement is printed in the summary below
        res = tune(a.synth, train, val, epsilon=a.epsilon, delta=a.delta, schema=schema, n_trials=a.trials,
                   privacy=a.privacy, public=pd.read_csv(a.public) if a.public else None, storage=a.storage,
                   study_name=a.study_name, weights=_floats(a.weights) if a.weights else None,
                   multi_objective=a.multi_objective, choose_modules=not a.fixed_modules, choices=choices or None,
                   seed=a.seed, sampler_seed=a.sampler_seed, trial_timeout=a.timeout, stopping=a.stopping,
                   models_dir=a.models_dir, isolate=not a.in_process, verbose=True, score_rows=a.score_rows,
                   noise_seed=a.noise_seed)
    print(res.summary())
    if a.out:
        res.save(a.out)
        print(f"wrote {a.out}" + (" and its .model.json" if res.synthesizer is not None else ""), file=sys.stderr)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="synthzoo", description="Tabular data synthesis with differential privacy.")
    sub = p.add_subparsers(dest="cmd", required=True)

    f = sub.add_parser("fit", help="fit a synthesizer on a CSV and save it")
    f.add_argument("data")
    f.add_argument("--schema", help="public schema JSON (without it, one is inferred and NOT covered by DP)")
    f.add_argument("--synth", default="privsyn", help="preset name (see `synthzoo list`)")
    f.add_argument("--preprocess", help="override: comma-separated preprocessors")
    f.add_argument("--select", help="override: selector ('none' for record models)")
    f.add_argument("--model", help="override: synthesis model")
    f.add_argument("--epsilon", type=_epsilon, default=1.0, help="'none' for a non-private run")
    f.add_argument("--delta", type=float, default=1e-5)
    f.add_argument("--seed", type=int, default=0)
    f.add_argument("--clip", action="store_true", help="clip numeric values outside the public bounds")
    f.add_argument("--noise-seed", type=int, default=None,
                   help="TEST ONLY: replayable DP noise; the release is private only while this seed stays secret "
                        "(default: noise from OS entropy, never stored)")
    f.add_argument("--out", required=True, help="model file to write")
    f.set_defaults(func=cmd_fit)

    s = sub.add_parser("sample", help="sample rows from a saved synthesizer")
    s.add_argument("model")
    s.add_argument("-n", type=int, default=None,
                   help="rows to draw (default: the model's DP estimate of the number of training rows)")
    s.add_argument("--seed", type=int, default=None)
    s.add_argument("--out", required=True)
    s.set_defaults(func=cmd_sample)

    d = sub.add_parser("demo", help="end to end on a built-in generated table (no files needed)")
    d.add_argument("--synth", default="privsyn")
    d.add_argument("--epsilon", type=_epsilon, default=1.0)
    d.add_argument("--delta", type=float, default=1e-5)
    d.add_argument("--n", type=int, default=20_000)
    d.add_argument("--seed", type=int, default=0)
    d.add_argument("--out", help="also write the synthetic rows to this CSV")
    d.set_defaults(func=cmd_demo)

    b = sub.add_parser("bench", help="quality and time on the shared datasets; with --select/--model, the "
                                     "selector x model ablation grid")
    b.add_argument("--data", help="shared dataset name(s), comma-separated, or a CSV path (with --schema); "
                                  "default adult,hmeq,housing (grid: adult)")
    b.add_argument("--schema", help="public schema JSON of a --data CSV")
    b.add_argument("--epsilon", default="0.2,1,5")
    b.add_argument("--synth", default="privsyn", help="preset (grid: gives preprocessing and budget split)")
    b.add_argument("--select", help="grid: comma-separated selectors ('none' for record models)")
    b.add_argument("--model", help="grid: comma-separated models")
    b.add_argument("--preprocess", help="grid: comma-separated preprocessors instead of the preset's ('none')")
    b.add_argument("--seeds", type=int, default=1)
    b.add_argument("--delta", type=float, default=1e-5)
    b.add_argument("--cell-timeout", type=float, help="grid: seconds before a cell's process is stopped")
    b.add_argument("--no-ml", action="store_true", help="grid: skip the LightGBM macro-F1 / R2 score")
    b.add_argument("--in-process", action="store_true",
                   help="grid: run cells in this process (faster start; no per-cell memory or timeout)")
    b.add_argument("--plot", help="grid: heatmap PNG (default: the CSV's name with .png)")
    b.add_argument("--root", help="datasets folder (default ../shared/datasets or $SYNTHZOO_DATASETS)")
    b.add_argument("--out", help="write the table as CSV (grid default: bench_grid.csv)")
    b.set_defaults(func=cmd_bench)

    from synthzoo.metrics.evaluate import METRICS, PRESETS
    e = sub.add_parser("eval", help="evaluate synthetic against real rows; write an HTML report",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="metric sets: " + ", ".join(f"{k} ({len(v)} metrics)" for k, v in PRESETS.items())
                       + "; groups: fidelity, utility (the default adds the core privacy metrics)\nmetrics:\n"
                       + "\n".join(f"  {k:22s} {v[2]}" for k, v in METRICS.items()))
    e.add_argument("real", help="training CSV (the rows the synthesizer was fitted on)")
    e.add_argument("fake", help="synthetic CSV")
    e.add_argument("--test", help="real held-out CSV (needed by the ML and privacy metrics)")
    e.add_argument("--schema", help="public schema JSON (default: inferred from REAL, with a warning)")
    e.add_argument("--out", default="report.html", help="HTML report (default report.html)")
    e.add_argument("--metrics", help="comma-separated metric names or sets: fast, full, privacy, fidelity, "
                                     "utility (default: the fidelity, utility and privacy groups); see below")
    e.add_argument("--risk", help="a risk-response CSV (benchmarks/bench_risk.py --out) to plot in the report")
    e.set_defaults(func=cmd_eval)

    t = sub.add_parser("tune", help="tune a preset with Optuna (fidelity + MLA + query error), privacy stated")
    t.add_argument("data", help="private training CSV")
    t.add_argument("--val", help="validation CSV (default: 20%% of DATA held out; accounted: each run draws "
                                 "its own 20%% record by record with secret randomness)")
    t.add_argument("--public", help="public/proxy CSV for --privacy public")
    t.add_argument("--schema", required=True, help="public schema JSON")
    t.add_argument("--synth", default="privsyn", help="preset name")
    t.add_argument("--privacy", default="non-private", choices=["non-private", "public", "accounted"])
    t.add_argument("--epsilon", type=_epsilon, default=1.0)
    t.add_argument("--delta", type=float, default=1e-5)
    t.add_argument("--trials", type=int, default=20, help="trials (accounted: their mean)")
    t.add_argument("--storage", help="Optuna storage URL or SQLite file (default sqlite:///synthzoo-tune.db)")
    t.add_argument("--study-name", help="study name; workers sharing a storage use the same one")
    t.add_argument("--weights", help="a1,a2,a3 for fidelity,MLA,query error (default 1/3 each)")
    t.add_argument("--multi-objective", action="store_true", help="Pareto front over the three terms")
    t.add_argument("--fixed-modules", action="store_true", help="tune parameters only, not the module choice")
    t.add_argument("--numeric", help="numeric binning choices, e.g. privtree,uniform")
    t.add_argument("--select-model", help="selector+model choices, e.g. indif+gum,mst+pgm")
    t.add_argument("--timeout", type=float,
                   help="seconds per trial; a hard limit: the trial's process is killed and the trial pruned")
    t.add_argument("--in-process", action="store_true",
                   help="run trials in this process (debugging; --timeout cannot stop a long native call)")
    t.add_argument("--stopping", default="geometric", choices=["geometric", "poisson"])
    t.add_argument("--models-dir", help="accounted mode: also save each trial's synthesizer here")
    t.add_argument("--score-rows", type=int, default=1000,
                   help="accounted mode: the public number of validation rows each run is scored on (a fixed-size "
                        "sample of the validation records, padded when there are fewer); default 1000")
    t.add_argument("--noise-seed", type=int, default=None,
                   help="TEST ONLY: replayable DP noise, stopping coins and score noise; private only while this "
                        "seed stays secret (default: OS entropy, never stored)")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--sampler-seed", type=int, help="TPE seed (give each worker its own; not used in accounted "
                                                    "mode, whose random search is seeded secretly)")
    t.add_argument("--out", help="write the tuning metadata JSON (and the best synthesizer as .model.json)")
    t.set_defaults(func=cmd_tune)

    ls = sub.add_parser("list", help="registered modules and presets")
    ls.set_defaults(func=cmd_list)
    return p


def main(argv=None) -> int:
    from synthzoo.core.errors import SynthzooError

    single_thread_defaults()  # OpenMP spin-waiting hurts on small machines; a user's setting is kept
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (SynthzooError, FileNotFoundError) as e:
        print(f"synthzoo: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

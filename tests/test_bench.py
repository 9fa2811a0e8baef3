"""The ablation grid runner (synthzoo.bench.grid) and `synthzoo bench` in grid mode, on tiny demo data."""

import numpy as np
import pandas as pd
import pytest

from synthzoo import bench
from synthzoo.cli import main
from synthzoo.core.errors import ConfigError
from synthzoo.datasets import make_demo


@pytest.fixture(scope="module")
def demo_csv(tmp_path_factory):
    df, schema = make_demo(n=500, seed=1)
    d = tmp_path_factory.mktemp("benchdata")
    df.to_csv(d / "demo.csv", index=False)
    schema.to_json(d / "schema.json")
    return str(d / "demo.csv"), str(d / "schema.json")


@pytest.fixture(scope="module")
def small_grid(demo_csv, tmp_path_factory):
    csv, sch = demo_csv
    out = tmp_path_factory.mktemp("benchout")
    lines = []
    res = bench.grid(csv, schema=sch, selectors=["indif", "no_such_selector"], models=["gum", "no_such_model"],
                     epsilons=[1.0], seeds=[0], isolate=False, ml=True, out=str(out / "grid.csv"),
                     plot=str(out / "grid.png"), log=lines.append)
    return res, out, lines


def test_grid_csv_columns_and_rows(small_grid):
    res, out, _ = small_grid
    csv = pd.read_csv(out / "grid.csv")
    assert list(csv.columns) == bench.GRID_COLUMNS
    cells = csv[csv["kind"] == "cell"]
    assert len(cells) == 4  # 2 selectors x 2 models x 1 epsilon x 1 seed
    refs = csv[csv["kind"] == "reference"]
    assert set(refs["model"]) == {"TRAIN", "INDEPENDENT"}
    assert (out / "grid.png").stat().st_size > 1000


def test_grid_skipped_cells_say_why(small_grid):
    res, _, lines = small_grid
    cells = res[res["kind"] == "cell"].set_index(["selector", "model"])
    assert cells.loc[("indif", "gum"), "status"] == "ok"
    for key in [("no_such_selector", "gum"), ("no_such_selector", "no_such_model"), ("indif", "no_such_model")]:
        assert cells.loc[key, "status"] == "skipped"
        assert "unknown" in cells.loc[key, "reason"]
    assert "no_such_selector" in cells.loc[("no_such_selector", "gum"), "reason"]
    assert "no_such_model" in cells.loc[("indif", "no_such_model"), "reason"]
    assert np.isnan(cells.loc[("indif", "no_such_model"), "tvd_2way"])
    # one progress line per cell, with a counter
    assert sum(line.startswith("[") and "/4]" in line for line in lines) == 4


def test_grid_scores_and_budget(small_grid):
    res, _, _ = small_grid
    ok = res[(res["kind"] == "cell") & (res["status"] == "ok")]
    assert len(ok) == 1
    r = ok.iloc[0]
    assert r["eps_spent"] <= 1.0 + 1e-9 and r["delta_spent"] <= 1e-5
    assert bool(r["budget_ok"])
    assert 0 < r["tvd_2way"] < 1 and 0 <= r["query_3way"] < 1
    assert 0 <= r["ml_f1"] <= 1  # the demo schema names a classification target (churn)
    assert r["fit_s"] > 0 and r["wall_s"] >= r["fit_s"]
    train_ref = res[(res["kind"] == "reference") & (res["model"] == "TRAIN")].iloc[0]
    assert train_ref["tvd_2way"] < r["tvd_2way"] + 0.2


def test_impossible_combination_is_skipped(demo_csv):
    csv, sch = demo_csv
    # a measurement model without a selector is refused by the pipeline's construction checks
    res = bench.grid(csv, schema=sch, selectors=["none"], models=["gum"], epsilons=[1.0], references=False,
                     isolate=False, ml=False, log=lambda s: None)
    assert res["status"].tolist() == ["skipped"]
    assert "give a selector" in res["reason"].iloc[0]


def test_isolated_cell_measures_memory_and_times_out(demo_csv):
    csv, sch = demo_csv
    res = bench.grid(csv, schema=sch, selectors=["indif"], models=["gum"], epsilons=[1.0], references=False,
                     isolate=True, ml=False, log=lambda s: None)
    r = res.iloc[0]
    assert r["status"] == "ok", r["reason"]
    assert r["peak_rss_mb"] >= r["base_rss_mb"] > 10
    assert r["eps_spent"] <= 1.0
    res = bench.grid(csv, schema=sch, selectors=["indif"], models=["gum"], epsilons=[1.0], references=False,
                     isolate=True, ml=False, cell_timeout=0.05, log=lambda s: None)
    assert res["status"].iloc[0] == "timeout" and "cell-timeout" in res["reason"].iloc[0]


@pytest.mark.slow
def test_run_isolated_reports_errors():
    from synthzoo.isolation import run_isolated

    r = run_isolated("synthzoo.bench:grid_config", ("indif", "gum", "no_such_preset"), timeout=60)
    assert r.status == "error" and "no_such_preset" in r.reason
    with pytest.raises(Exception, match="no_such_preset"):
        r.raise_error()


def test_grid_bad_input(demo_csv):
    csv, sch = demo_csv
    with pytest.raises(ConfigError, match="schema"):
        bench.grid(csv, selectors=["indif"], models=["gum"], log=lambda s: None)
    with pytest.raises(ConfigError, match="cell_timeout"):
        bench.grid(csv, schema=sch, selectors=["indif"], models=["gum"], cell_timeout=0, log=lambda s: None)
    with pytest.raises(ConfigError, match="at least one"):
        bench.grid(csv, schema=sch, selectors=[], models=["gum"], log=lambda s: None)


@pytest.mark.parametrize("option", ["ml", "references", "isolate", "resume"])
def test_grid_yes_no_options_take_only_a_bool(demo_csv, tmp_path, option):
    # before: ml="no" is truthy and scored LightGBM, resume="false" resumed (evaluate's baselines="no" is refused)
    csv, sch = demo_csv
    with pytest.raises(ConfigError, match=f"{option} must be True or False, got 'no'"):
        bench.grid(csv, schema=sch, selectors=["indif"], models=["gum"], epsilons=[1.0], out=str(tmp_path / "g.csv"),
                   log=lambda s: None, **{option: "no"})
    assert not (tmp_path / "g.csv").exists()  # refused before any work


def test_cli_bench_grid(demo_csv, tmp_path, capsys):
    csv, sch = demo_csv
    out = tmp_path / "g.csv"
    rc = main(["bench", "--select", "indif,no_such", "--model", "gum", "--data", csv, "--schema", sch,
               "--epsilon", "1", "--seeds", "1", "--in-process", "--no-ml", "--out", str(out)])
    assert rc == 0
    res = pd.read_csv(out)
    assert list(res.columns) == bench.GRID_COLUMNS
    assert set(res.loc[res["kind"] == "cell", "status"]) == {"ok", "skipped"}
    assert (tmp_path / "g.png").exists()
    text = capsys.readouterr().out
    assert "[1/2]" in text and "[2/2]" in text and "SKIPPED" in text


def test_cli_bench_grid_takes_a_presets_selector_with_parameters(demo_csv, tmp_path):
    """`bench --synth aim --model gum` gives the grid the aim preset's selector, a dict of parameters;
    before selectors had labels the grid stopped at its first cell (TypeError: unhashable type: 'dict')."""
    csv, sch = demo_csv
    out = tmp_path / "g.csv"
    assert main(["bench", "--synth", "aim", "--model", "gum", "--data", csv, "--schema", sch, "--epsilon", "1",
                 "--in-process", "--no-ml", "--out", str(out)]) == 0
    cells = pd.read_csv(out).query("kind == 'cell'")
    assert cells[["selector", "model", "status"]].values.tolist() == [["aim", "gum", "ok"]]


def test_cli_bench_grid_needs_schema_for_csv(demo_csv, capsys):
    csv, _ = demo_csv
    assert main(["bench", "--select", "indif", "--model", "gum", "--data", csv, "--in-process"]) == 2
    assert "--schema" in capsys.readouterr().err


def test_grid_config_gives_a_record_model_the_selector_share():
    from synthzoo.bench import grid_config

    cfg = grid_config("none", "dpmerf")
    assert cfg["select"] is None and cfg["budget_split"] == {"preprocess": 0.1, "model": 0.9}
    assert grid_config("aim", "pgm")["budget_split"] == {"preprocess": 0.1, "select": 0.9}


def test_grid_runs_record_models_without_a_selector(demo_csv):
    """`--select none --model ctgan,tvae,pategan`: the record models in the ablation grid (tiny
    training runs), each on CTGAN's encoding, within the request."""
    from synthzoo.models import CTGAN, PATEGAN, TVAE

    csv, sch = demo_csv
    models = [{"name": n, **cls._test_params} for n, cls in (("ctgan", CTGAN), ("tvae", TVAE), ("pategan", PATEGAN))]
    res = bench.grid(csv, schema=sch, selectors=["none"], models=models, epsilons=[1.0], seeds=[0], isolate=False,
                     ml=False, references=False, log=lambda _: None)
    assert res["model"].tolist() == ["ctgan", "tvae", "pategan"]
    assert res["status"].tolist() == ["ok"] * 3, res["reason"].tolist()
    assert res["budget_ok"].all() and (res["eps_spent"] > 0.99).all()
    assert res["tvd_2way"].between(0, 1).all()


def test_grid_runs_the_transformer_on_tokens(demo_csv):
    """`--select none --model transformer`: the token model gets the tokens preprocessor and the whole
    budget (tiny training run)."""
    from synthzoo.bench import grid_config
    from synthzoo.models import Transformer

    cfg = grid_config("none", "transformer")
    assert cfg["preprocess"] == ["tokens"] and cfg["budget_split"] is None and cfg["select"] is None
    csv, sch = demo_csv
    res = bench.grid(csv, schema=sch, selectors=["none"], models=[{"name": "transformer", **Transformer._test_params}],
                     epsilons=[1.0], seeds=[0], isolate=False, ml=False, references=False, log=lambda _: None)
    assert res["status"].tolist() == ["ok"], res["reason"].tolist()
    assert res["budget_ok"].all() and (res["eps_spent"] > 0.99).all()


def test_grid_variants_of_one_model_get_labels_of_their_own(demo_csv):
    """Two configurations of one model were both labelled 'gum': rows, tables and heatmaps merged them."""
    from synthzoo.core.errors import ConfigError

    csv, sch = demo_csv
    models = [{"name": "gum", "iterations": 5}, {"name": "gum", "iterations": 20}, "pgm"]
    res = bench.grid(csv, schema=sch, selectors=["indif"], models=models, epsilons=[1.0], seeds=[0], isolate=False,
                     ml=False, references=False, log=lambda _: None)
    assert res["model"].tolist() == ["gum(iterations=5)", "gum(iterations=20)", "pgm"]
    assert (res["status"] == "ok").all(), res["reason"].tolist()
    with pytest.raises(ConfigError, match=r"models 'gum' and \{'name': 'gum'\} are the same model"):
        bench.grid(csv, schema=sch, selectors=["indif"], models=["gum", {"name": "gum"}], epsilons=[1.0],
                   isolate=False, ml=False, references=False, log=lambda _: None)


def test_heatmap_says_when_a_cell_averages_fewer_seeds_than_it_ran(tmp_path):
    from synthzoo.bench.plot import plot_grid

    base = {"dataset": "d", "kind": "cell", "selector": "indif", "epsilon": 1.0, "reason": ""}
    res = pd.DataFrame([{**base, "model": "gum", "seed": s, "status": st, "tvd_2way": v}
                        for s, st, v in ((0, "ok", 0.10), (1, "error", float("nan")), (2, "ok", 0.20))]
                       + [{**base, "model": "pgm", "seed": s, "status": "ok", "tvd_2way": 0.3} for s in range(3)])
    with pytest.warns(RuntimeWarning, match=r"1 heatmap cell\(s\) average fewer seeds.*d eps=1 indif x gum: 2/3"):
        assert plot_grid(res, str(tmp_path / "g.png"))
    assert (tmp_path / "g.png").stat().st_size > 1000


def test_resume_reads_the_cells_names_as_written(tmp_path):
    # before: the grid's table was read back with pandas' defaults: dataset "007" (from 007.csv) came back as
    # 7 and "NA" as missing, so no kept row matched its cell and the resumed grid ran every cell again
    import importlib
    import json

    grid_mod = importlib.import_module("synthzoo.bench.grid")
    out = str(tmp_path / "g.csv")
    rows = [{"dataset": d, "kind": "cell", "selector": "indif", "model": "gum", "epsilon": 1.0, "seed": 0,
             "status": "ok", "tvd_2way": 0.1} for d in ("007", "NA")]
    pd.DataFrame(rows).reindex(columns=grid_mod.GRID_COLUMNS).to_csv(out, index=False)
    with open(out + ".spec.json", "w") as fh:
        json.dump({"data": ["007.csv", "NA.csv"]}, fh)
    kept = grid_mod._resumed_rows(out, {"data": ["007.csv", "NA.csv"]})
    assert set(kept) == {("007", "indif", "gum", 1.0, 0), ("NA", "indif", "gum", 1.0, 0)}
    assert kept[("NA", "indif", "gum", 1.0, 0)]["tvd_2way"] == 0.1


def test_a_stopped_local_grid_resumes_without_rerunning_its_rows(demo_csv, tmp_path, monkeypatch, capsys):
    """The local grid lost everything on Ctrl-C or a crash: --resume keeps an earlier run's rows of the
    same grid and runs only the missing cells; another grid's CSV is refused, naming what differs."""
    import importlib

    grid_mod = importlib.import_module("synthzoo.bench.grid")  # the module (synthzoo.bench.grid is the function)

    csv, sch = demo_csv
    out = str(tmp_path / "g.csv")
    kw = dict(schema=sch, selectors=["indif", "mst"], models=["gum"], epsilons=[1.0, 5.0], seeds=[0],
              isolate=False, ml=False, out=out, log=lambda _: None)
    full = bench.grid(csv, **kw)
    assert len(full) == 2 + 4
    pd.read_csv(out).head(3).to_csv(out, index=False)  # stopped after two references and one cell
    ran = []
    real = grid_mod.cell_row
    monkeypatch.setattr(grid_mod, "cell_row", lambda *a, **k: ran.append(a[4:8]) or real(*a, **k))
    res = bench.grid(csv, resume=True, **kw)
    assert ran == [("indif", "gum", 5.0, 0), ("mst", "gum", 1.0, 0), ("mst", "gum", 5.0, 0)]
    keys = list(zip(res["kind"], res["selector"], res["model"], res["epsilon"].fillna(-1)))
    assert len(keys) == len(set(keys)) == 6 and (res["status"] == "ok").all()
    assert res.loc[2, "tvd_2way"] == pytest.approx(full.loc[2, "tvd_2way"])  # the kept row, as written
    assert len(pd.read_csv(out)) == 6
    with pytest.raises(ConfigError, match=r"g\.csv holds another grid \(it differs in \['epsilons'\]\)"):
        bench.grid(csv, resume=True, **{**kw, "epsilons": [1.0]})
    monkeypatch.undo()
    (tmp_path / "g.csv.spec.json").unlink()
    with pytest.raises(ConfigError, match="has no .*spec.json beside it"):
        bench.grid(csv, resume=True, **kw)
    assert main(["bench", "--storage", str(tmp_path / "s.db"), "--select", "indif", "--resume"]) == 2
    assert "--resume does not apply to a shared grid" in capsys.readouterr().err


def test_grid_variants_of_one_selector_get_labels_of_their_own(demo_csv):
    """Two configurations of one selector: the selector column held the dicts themselves (the
    heatmap could not group them) and nothing refused one selector listed twice."""
    csv, sch = demo_csv
    sels = [{"name": "indif", "select_share": 0.1}, {"name": "indif", "select_share": 0.3}]
    res = bench.grid(csv, schema=sch, selectors=sels, models=["gum"], epsilons=[1.0], seeds=[0], isolate=False,
                     ml=False, references=False, log=lambda _: None)
    assert res["selector"].tolist() == ["indif(select_share=0.1)", "indif(select_share=0.3)"]
    assert (res["status"] == "ok").all(), res["reason"].tolist()
    with pytest.raises(ConfigError, match=r"selectors 'indif' and \{'name': 'indif'\} are the same selector"):
        bench.grid(csv, schema=sch, selectors=["indif", {"name": "indif"}], models=["gum"], epsilons=[1.0],
                   isolate=False, ml=False, references=False, log=lambda _: None)


def test_one_configuration_spelled_two_ways_is_refused_as_the_same_module(demo_csv):
    """Labels show the parameters in which same-named entries differ, so 'gum' and {"name": "gum",
    "iterations": 100} (gum's default) were 'gum' and 'gum(iterations=100)': the default model ran
    every cell twice under two labels.  A tuple default given as a list is the same configuration."""
    csv, sch = demo_csv
    kw = dict(schema=sch, epsilons=[1.0], seeds=[0], isolate=False, ml=False, references=False, log=lambda _: None)
    with pytest.raises(ConfigError, match=r"models 'gum' and \{'name': 'gum', 'iterations': 100\} are the same "
                                          r"model \(the same parameters once its defaults are filled in\)"):
        bench.grid(csv, selectors=["indif"], models=["gum", {"name": "gum", "iterations": 100}], **kw)
    with pytest.raises(ConfigError, match=r"selectors \{'name': 'mst', 'shares': \[0\.5, 0\.25, 0\.25\]\} and "
                                          r"\{'name': 'mst', 'shares': \(0\.5, 0\.25, 0\.25\)\} are the same"):
        bench.module_labels(["mst", {"name": "mst", "shares": [0.5, 0.25, 0.25]},
                             {"name": "mst", "shares": (0.5, 0.25, 0.25)}], "selector")
    assert bench.module_labels(["gum", {"name": "gum", "iterations": 5}]) == ["gum", "gum(iterations=5)"]


def test_resume_refuses_the_rows_of_another_variant_of_a_model(demo_csv, tmp_path):
    """The resume check compared model labels only, and a lone variant is labelled by its name: a grid
    of gum(iterations=5) resumed as one of gum(iterations=20) kept the other's rows."""
    csv, sch = demo_csv
    out = str(tmp_path / "g.csv")
    kw = dict(schema=sch, selectors=["indif"], epsilons=[1.0], seeds=[0], isolate=False, ml=False, out=out,
              references=False, log=lambda _: None)
    bench.grid(csv, models=[{"name": "gum", "iterations": 5}], **kw)
    with pytest.raises(ConfigError, match=r"holds another grid \(it differs in \['models'\]\)"):
        bench.grid(csv, models=[{"name": "gum", "iterations": 20}], resume=True, **kw)


def test_resume_never_keeps_the_rows_of_a_grid_started_afresh_over_them(demo_csv, tmp_path, monkeypatch):
    """A grid started afresh over another's CSV wrote its spec at once but the CSV only after its first
    cell: stopped before then, a resume took the other grid's rows as its own."""
    import importlib

    grid_mod = importlib.import_module("synthzoo.bench.grid")
    csv, sch = demo_csv
    out = str(tmp_path / "g.csv")
    kw = dict(schema=sch, selectors=["indif"], models=["gum"], epsilons=[1.0, 5.0], seeds=[0], isolate=False,
              ml=False, out=out, log=lambda _: None)
    bench.grid(csv, **kw)

    def stop(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(grid_mod, "cell_row", stop)
    with pytest.raises(KeyboardInterrupt):  # another grid (delta) over the same CSV, stopped in its first cell
        bench.grid(csv, delta=1e-6, **kw)
    monkeypatch.undo()
    ran = []
    real = grid_mod.cell_row
    monkeypatch.setattr(grid_mod, "cell_row", lambda *a, **k: ran.append(a[4:8]) or real(*a, **k))
    res = bench.grid(csv, delta=1e-6, resume=True, **kw)
    assert ran == [("indif", "gum", 1.0, 0), ("indif", "gum", 5.0, 0)]  # none of the first grid's rows kept
    assert len(res) == 4 and (res["delta_spent"].dropna() <= 1e-6).all()


@pytest.mark.parametrize("args, said", [
    (["--epsilon", ""], "--epsilon '' gives no number"),  # ran the reference rows only, without a word
    (["--epsilon", "0"], "--epsilon '0': each privacy budget must be a positive number"),  # after the references
    (["--data", "demo,demo"], "bench: dataset(s) ['demo'] listed twice"),  # ran each row twice
    (["--epsilon", "1,1"], "bench: an epsilon or seed is listed twice"),  # ran each row twice
    (["--synth", "no_such"], "bench: unknown preset 'no_such'"),  # after the references
    (["--delta", "0.5"], "bench: delta=0.5 gives no meaningful guarantee"),  # after the references
    (["--data", ""], "--data '' names no dataset"),  # ran adult
    (["--data", "demo,no_such"], "dataset 'no_such' not found"),  # after demo's rows
])
def test_cli_bench_table_refuses_bad_values_before_any_row(monkeypatch, capsys, args, said):
    from synthzoo.bench import table

    def load(name, root=None):
        if name == "no_such":
            raise FileNotFoundError("dataset 'no_such' not found")
        return make_demo(n=300, seed=0)

    scored = []
    monkeypatch.setattr(table, "load_shared", load)
    monkeypatch.setattr(table, "score", lambda *a: scored.append(a) or {"tvd_2way": 0.0, "query_3way": 0.0})
    assert main(["bench", "--data", "demo", "--epsilon", "1", *args]) == 2
    assert said in capsys.readouterr().err
    assert scored == []  # said before any row was computed


def test_cli_bench_seeds_is_a_count_of_at_least_one(capsys):
    # --seeds 0 ran the reference rows only (table) or said "grid needs at least one dataset, selector, ..."
    with pytest.raises(SystemExit):
        main(["bench", "--data", "demo", "--seeds", "0"])
    assert "argument --seeds: must be at least 1, got 0" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["bench", "--select", "indif", "--model", "gum", "--cell-timeout", "0"])
    assert "argument --cell-timeout: must be a positive number of seconds" in capsys.readouterr().err


def test_grid_says_a_bad_delta_is_delta_not_the_first_epsilon(demo_csv):
    csv, sch = demo_csv
    with pytest.raises(ConfigError, match=r"^grid: delta must be a number in \(0, 0.1\), got 2.0$"):
        bench.grid(csv, schema=sch, selectors=["indif"], models=["gum"], delta=2.0, log=lambda s: None)
    with pytest.raises(ConfigError, match="grid: no epsilon given"):
        bench.grid(csv, schema=sch, selectors=["indif"], models=["gum"], epsilons=[], log=lambda s: None)


def warn_in_a_cell(text):
    """A cell that warns (run by name in a worker process)."""
    import warnings

    from synthzoo.core.errors import PrivacySettingsWarning

    warnings.warn(text, PrivacySettingsWarning)
    warnings.warn(text, PrivacySettingsWarning)  # said twice, shown once on the command line
    return 7


def test_a_cells_warnings_are_shown_by_the_calling_process(monkeypatch, capsys):
    # the grid's cell processes printed their warnings with Python's source lines
    # ('.../grid.py:39: PrivacySettingsWarning: ...' and '  synth.fit(train)'), bypassing the command line's
    # one-line display; they now come back with the result and are issued in the caller
    from pathlib import Path

    from synthzoo.cli import plain_warnings
    from synthzoo.core.errors import PrivacySettingsWarning
    from synthzoo.isolation import run_isolated

    monkeypatch.syspath_prepend(str(Path(__file__).parent))  # the worker gets this sys.path
    with pytest.warns(PrivacySettingsWarning, match="planted in a cell"):
        assert run_isolated("test_bench:warn_in_a_cell", ("planted in a cell",), timeout=120).value == 7
    capsys.readouterr()
    with plain_warnings():
        assert run_isolated("test_bench:warn_in_a_cell", ("planted again",), timeout=120).value == 7
    err = capsys.readouterr().err
    assert err == "synthzoo: warning: planted again\n"


def test_cli_grid_does_not_replace_an_earlier_grids_rows_without_force(demo_csv, tmp_path, capsys):
    # a second grid run emptied --out (bench_grid.csv by default) before its first cell: the earlier grid's
    # rows were lost without a word
    csv, sch = demo_csv
    out = tmp_path / "g.csv"
    args = ["bench", "--select", "indif", "--model", "gum", "--data", csv, "--schema", sch, "--epsilon", "1",
            "--in-process", "--no-ml", "--out", str(out)]
    assert main(args) == 0
    before = out.read_text()
    capsys.readouterr()
    assert main([*args[:9], "--epsilon", "5", *args[11:]]) == 2
    assert (f"--out {str(out)!r} holds 3 rows of an earlier grid run; pass --resume to keep them and run only "
            "the missing cells (same grid), --force to replace them") in capsys.readouterr().err
    assert out.read_text() == before
    assert main(args + ["--resume"]) == 0 and out.read_text() == before  # nothing missing: kept as it was
    assert main(args + ["--force"]) == 0 and len(pd.read_csv(out)) == 3

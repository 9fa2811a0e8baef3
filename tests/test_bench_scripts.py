"""The benchmark scripts' model factories build what their options say (the scripts themselves are
run by hand: benchmarks/*.py)."""

import sys
from pathlib import Path

import pandas as pd
import pytest

import synthzoo as sz
from synthzoo.datasets import make_demo

from conftest import DATASETS

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_attacks  # noqa: E402
import bench_dp_bounds  # noqa: E402
import bench_dp_schema  # noqa: E402
import bench_risk  # noqa: E402


@pytest.mark.filterwarnings("ignore:epsilon=None")
def test_bench_attacks_epochs_set_both_tldm_stages_and_keep_dp_private():
    # --epochs once wrote an "epochs" key that TLDM does not have; both of its stages must follow it
    schema = make_demo(n=50, seed=0)[1]
    tldm = bench_attacks.make("tldm", schema, 1.0, 0, 7)
    assert tldm.epsilon is None and (tldm.model.vae_epochs, tldm.model.diffusion_epochs) == (7, 7)
    assert bench_attacks.make("tvae", schema, 1.0, 0, 9).model.epochs == 9
    dp = bench_attacks.make("dp-tldm", schema, 1.0, 0, None)
    assert dp.epsilon == 1.0 and dp.model.vae_epochs == sz.presets.preset_config("dp-tldm")["model"]["vae_epochs"]


@pytest.mark.filterwarnings("ignore:epsilon=None")
def test_bench_risk_overfit_trains_multiples_of_the_probed_converged_length():
    df, schema = make_demo(n=300, seed=0)
    logs = []
    make = bench_risk.overfit_factory(schema, "tvae", probe_epochs=60, log=logs.append, rtol=0.1)
    first = make(1.0, 0)
    first._make = lambda epochs, f=first._make: _small(f(epochs))
    first.fit(df)
    e = first.cache["epochs"]
    assert 20 <= e < 60 and len(first.cache["history"]) == 60 and "converges at epoch" in logs[0]
    assert first.synth.model.epochs == e
    second = make(1.5, 0)          # the same sweep: the probe is not fitted again
    second._make = lambda epochs, f=second._make: _small(f(epochs))
    second.fit(df)
    assert second.synth.model.epochs == round(1.5 * e) and len(logs) == 1
    assert isinstance(second.sample(10), pd.DataFrame)


def _small(synth):
    """A narrower TVAE (the test's speed; the widths do not change what is probed)."""
    for k, v in dict(embedding_dim=8, compress_dims=(16,), decompress_dims=(16,), batch_size=50, lr=1e-2).items():
        setattr(synth.model, k, v)
    return synth


def test_bench_dp_bounds_scores_every_case(capsys):
    out = bench_dp_bounds.main(["--draws", "4"])
    assert out["draws"] == 4 and len(out["cases"]) == 10 and out["code"].endswith("synthzoo")
    for case in out["cases"].values():
        assert case["draws_over_2pct"] + case["draws_without_a_range"] <= 4
        assert case["lower_range"][0] <= case["lower_median"] <= case["lower_range"][1]
        assert case["log2_width"] > 0  # the bounds are wider than the data's range in every case here
    assert out["cases"]["0-99 score, 12 % -1 sentinel"]["lower_range"][1] <= -1  # the sentinel kept


def test_bench_dp_bounds_counts_adults_negative_lower_bounds(adult):
    out = bench_dp_bounds.main(["--adult", str(DATASETS / "adult"), "--draws", "2"])
    assert set(out["adult"]) == {"age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week",
                                 "all columns"}
    for col in out["adult"].values():
        assert 0 <= col["below_-2"] <= col["below_0"] <= 2


def test_bench_dp_schema_counts_what_each_draw_clips(capsys):
    # three replayed draws on a small COMPAS-like table: every column is scored in every draw, and a
    # column counted over the limit in k draws has a worst share above it
    out = bench_dp_schema.main(["--draws", "3", "--rows", "1500", "--epsilon", "0.5", "--limit", "0.001"])
    assert out["draws"] == 3 and out["noise_seeds"] == [1000, 1002] and out["category_lists"]
    for col, k in out["draws_over_limit_per_column"].items():
        assert 1 <= k <= 3 and out["worst_pct"][col] > 0.1
    assert out["draws_with_any_column_over_limit"] <= 3
    # the other side of declaring missing values on evidence: fills of hidden ones, and false declarations
    assert out["missing_z"] == 2.0 and out["columns_with_missing_values"] == ["days_b_screening_arrest"]
    assert set(out["draws_filling_over_limit_per_column"]) <= {"days_b_screening_arrest"}
    assert out["draws_with_any_column_over_limit"] <= out["draws_filling_or_clipping_over_limit"] <= 3
    assert "days_b_screening_arrest" not in out["false_missing_declarations_per_column"]
    assert out["draws_declaring_missing_without_any"] <= sum(out["false_missing_declarations_per_column"].values())
    assert set(out["mean_log2_range_over_data_range"]) == {"dob", "age", "juv_fel_count", "juv_misd_count",
                                                           "priors_count", "screening_date",
                                                           "days_b_screening_arrest", "decile_score"}
    assert '"draws": 3' in capsys.readouterr().out


def test_bench_grid_tables_say_which_means_lack_failed_cells(capsys):
    # the tables averaged the successful cells only without saying so, and a pair that never ran was absent
    import bench_grid

    base = {"dataset": "d", "kind": "cell", "selector": "indif", "epsilon": 1.0, "seed": 0, "reason": ""}
    rows = [{**base, "model": "gum", "epsilon": e, "status": st, "tvd_2way": v, "cpu_s": 2.0}
            for e, st, v in ((0.2, "ok", 0.10), (1.0, "error", float("nan")), (5.0, "ok", 0.20))]
    rows += [{**base, "model": "pgm", "epsilon": e, "status": "ok", "tvd_2way": 0.3, "cpu_s": 1.0} for e in (0.2, 1, 5)]
    rows += [{**base, "selector": "mst", "model": "pgm", "epsilon": e, "status": "timeout", "tvd_2way": float("nan"),
              "cpu_s": float("nan")} for e in (0.2, 1, 5)]
    with pytest.warns(RuntimeWarning, match=r"tvd_2way: 1 cell\(s\) average fewer rows.*indif x gum: 2/3") as caught:
        bench_grid.print_tables(pd.DataFrame(rows))
    assert len(caught) == 1  # once for the rows, not once per table
    lines = capsys.readouterr().out.splitlines()
    tvd = lines[lines.index("# mean 2-way TVD over datasets and epsilons, selector x model") + 1:][:3]
    assert tvd[1].split() == ["indif", "0.150", "n=2/3", "0.300"]
    assert tvd[2].split() == ["mst", "-"]  # no successful cell: missing, not 0 (mst x gum was not in the grid)


def test_bench_sample_refuses_a_precision_for_a_model_without_the_choice(tmp_path):
    """``--presets mst:bfloat16`` must not time mst in float32 under a bfloat16 label."""
    import warnings

    import bench_sample

    import synthzoo as sz
    from synthzoo.datasets import make_demo

    df, schema = make_demo(300, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sz.make("privsyn", epsilon=1.0, schema=schema, seed=0).fit(df).save(tmp_path / "m.szm")
    with pytest.raises(sz.ConfigError, match="no choice of sampling precision"):
        bench_sample.worker(str(tmp_path / "m.szm"), 100, 100, "codes", "bfloat16")


def test_bench_precision_counts_a_cell_missing_in_both_samples_as_identical():
    import bench_precision
    import numpy as np

    a = pd.DataFrame({"x": [1.0, np.nan, 3.0, np.nan], "c": ["u", None, "w", "v"]})
    b = pd.DataFrame({"x": [1.0, np.nan, 4.0, 2.0], "c": ["u", None, "w", None]})
    assert bench_precision.identical_share(a, b) == 5 / 8


@pytest.mark.parametrize("preset", ["aim", "privmrf"])
def test_bench_pgm_replay_records_a_run_and_replays_it(adult, tmp_path, preset):
    """``bench_pgm_replay.py`` wraps ``PGM._estimate``: it must pass on every keyword the model adds
    (it broke once on ``compile_ok``), and a replay in the same checkout gives the same estimate, for
    AIM's refits and PrivMRF's."""
    import json
    import os
    import subprocess

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_pgm_replay.py"
    root = script.parents[1]
    env = dict(os.environ, PYTHONPATH=str(root), SYNTHZOO_DATASETS=str(DATASETS))
    out = tmp_path / "run.json"
    rec = subprocess.run([sys.executable, str(script), "record", "--rows", "2000", "--preset", preset,
                          "--out", str(out)],
                         env=env, cwd=root, capture_output=True, text=True)
    assert rec.returncode == 0, rec.stderr[-2000:]
    head = json.loads(rec.stdout.strip().splitlines()[-1])
    assert head["preset"] == preset and head["rows"] == 2000 and head["calls"] > 0 and head["iterations"] > 0
    rep = subprocess.run([sys.executable, str(script), "replay", str(out), "--baseline", str(root)],
                         env=env, cwd=root, capture_output=True, text=True)
    assert rep.returncode == 0, rep.stderr[-2000:]
    lines = [json.loads(x) for x in rep.stdout.strip().splitlines()]
    assert [x.get("tree") for x in lines[:2]] == ["this", "baseline"]
    assert lines[0]["calls"] == head["calls"] and lines[0]["iterations"] == lines[1]["iterations"]
    assert lines[2]["max_cell_diff_over_rows"] == 0.0


def test_bench_deep_takes_model_parameters_after_the_preset():
    """``--methods dp-tvae,dp-tvae:prior_share=0`` runs an ablation beside the preset in one command."""
    import bench_deep

    assert bench_deep.method_spec("dp-tvae:prior_share=0:lr=0.002") == ("dp-tvae", {"prior_share": 0, "lr": 0.002})
    assert bench_deep.method_spec("aim") == ("aim", {})
    with pytest.raises(SystemExit, match="PRESET:NAME=VALUE"):
        bench_deep.method_spec("dp-tvae:prior_share")
    _, schema = make_demo(n=50, seed=0)
    m = bench_deep.make_ours("dp-tvae:prior_share=0", schema, 1.0, 7, 0).model
    assert (m.prior_share, m.epochs, m.batch_size) == (0, 7, 1000)  # the preset's batch kept
    from synthzoo.models import TVAE

    assert bench_deep.make_ours("dp-tvae", schema, 1.0, 0, 0).model.prior_share == TVAE().prior_share  # the model's


def test_bench_scale_counts_the_outermost_compilations_once():
    """``bench_scale.py --cold-cache`` reports numba's compile seconds: a kernel's callees compile
    inside it, so only the outermost compilations are summed (no second count of the nested ones)."""
    import time

    import bench_scale
    import numpy as np
    from numba import njit

    @njit
    def inner(x):
        return x * 2.0

    @njit
    def outer(x):
        return inner(x) + 1.0

    from numba.core import event

    total = bench_scale._compile_seconds()
    try:
        t0 = time.perf_counter()
        assert outer(np.float64(1.5)) == 4.0
        wall = time.perf_counter() - t0
    finally:
        event.unregister("numba:compile", total.listener)
    assert 0 < total() <= wall

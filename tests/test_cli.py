"""The command line, run in-process: fit -> sample round trip, demo, list, errors."""

import re

import pandas as pd

from synthzoo.cli import main
from synthzoo.datasets import make_demo


def test_fit_then_sample(tmp_path, capsys):
    df, schema = make_demo(n=1500, seed=0)
    df.to_csv(tmp_path / "data.csv", index=False)
    schema.to_json(tmp_path / "schema.json")
    assert main(["fit", str(tmp_path / "data.csv"), "--schema", str(tmp_path / "schema.json"),
                 "--synth", "privsyn", "--epsilon", "1", "--out", str(tmp_path / "model.szm")]) == 0
    assert "privacy spent" in capsys.readouterr().out
    assert main(["sample", str(tmp_path / "model.szm"), "-n", "300", "--out", str(tmp_path / "fake.csv")]) == 0
    fake = pd.read_csv(tmp_path / "fake.csv")
    assert list(fake.columns) == list(df.columns) and len(fake) == 300


def test_fit_reports_bad_input_clearly(tmp_path, capsys):
    df, schema = make_demo(n=200, seed=0)
    df.loc[0, "region"] = "atlantis"
    df.to_csv(tmp_path / "data.csv", index=False)
    schema.to_json(tmp_path / "schema.json")
    rc = main(["fit", str(tmp_path / "data.csv"), "--schema", str(tmp_path / "schema.json"),
               "--out", str(tmp_path / "m")])
    err = capsys.readouterr().err
    assert rc == 2 and "'region'" in err and "atlantis" in err


def test_unknown_preset_and_bad_epsilon(tmp_path, capsys):
    df, schema = make_demo(n=200, seed=0)
    df.to_csv(tmp_path / "d.csv", index=False)
    assert main(["fit", str(tmp_path / "d.csv"), "--synth", "nope", "--out", str(tmp_path / "m")]) == 2
    assert "unknown preset 'nope'" in capsys.readouterr().err
    assert main(["fit", str(tmp_path / "d.csv"), "--epsilon", "-1", "--out", str(tmp_path / "m")]) == 2
    assert "epsilon must be > 0" in capsys.readouterr().err
    # past EPSILON_MAX: said as the command line's option, before the file is read
    with pytest.raises(SystemExit) as e:
        main(["fit", str(tmp_path / "nowhere.csv"), "--epsilon", "1e300", "--out", str(tmp_path / "m")])
    assert e.value.code == 2
    assert "--epsilon: 1e300 is past 1e+06" in capsys.readouterr().err


def test_demo_runs_without_files(capsys, tmp_path):
    assert main(["demo", "--n", "2000", "--out", str(tmp_path / "demo.csv")]) == 0
    out = capsys.readouterr().out
    assert "privacy spent" in out and "2-way TVD" in out and (tmp_path / "demo.csv").exists()


def test_list(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "privtree" in out and "indif" in out and "privsyn" in out
    papers = [line.index(" McKenna") if " McKenna" in line else line.index(" Zhang") for line in out.splitlines()
              if line.startswith("preset") and (" McKenna" in line or " Zhang" in line)]
    assert len(papers) >= 3 and len(set(papers)) == 1  # the papers start in one column
    assert "preset      tablediffusion Truda" in out


# --------------------------------------------------------------------------------------------------
# the command line as people use it: one test per row of the behaviour table
import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import synthzoo as sz  # noqa: E402
from synthzoo.cli import build_parser, read_csv  # noqa: E402
from synthzoo.core.errors import ConfigError  # noqa: E402


@pytest.fixture(scope="module")
def demo_files(tmp_path_factory):
    """The demo table (1,500 rows) as CSV + schema, and a privsyn model fitted on it."""
    d = tmp_path_factory.mktemp("cli")
    df, schema = make_demo(n=1500, seed=0)
    df.to_csv(d / "data.csv", index=False)
    schema.to_json(d / "schema.json")
    sz.make("privsyn", epsilon=1.0, schema=schema, seed=0).fit(df).save(d / "model.szm")
    return d, df, schema


def test_preset_is_another_name_for_synth():
    # `--preset aim` (the name sz.make and available_presets use) was "unrecognized arguments"
    for cmd in (["fit", "d.csv", "--out", "m.szm"], ["tune", "d.csv", "--schema", "s.json"], ["demo"]):
        assert build_parser().parse_args(cmd + ["--preset", "aim"]).synth == "aim"
        assert build_parser().parse_args(cmd + ["--synth", "mst"]).synth == "mst"


def test_an_option_a_command_does_not_take_is_refused_with_that_commands_usage(capsys):
    # argparse refused it with the top level's usage ("synthzoo [-h] [--version] COMMAND ..."), no option listed
    for argv, said in ((["fit", "d.csv", "--epsilom", "1", "--out", "m.szm"], "(did you mean --epsilon?)"),
                       (["eval", "r.csv", "f.csv", "--html", "r.html"], "unrecognized arguments: --html r.html;"),
                       (["eval", "r.csv", "f.csv", "--tset=t.csv"], "(did you mean --sep, --target, --test?)")):
        with pytest.raises(SystemExit) as e:
            main(argv)
        err = capsys.readouterr().err
        assert e.value.code == 2 and said in err and f"usage: synthzoo {argv[0]} [-h]" in err
        assert f"synthzoo {argv[0]} --help` lists its options" in err and "--help?" not in err


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"synthzoo {sz.__version__}"


def test_python_dash_m_synthzoo_runs_the_command_line():
    # `python -m synthzoo --version` said "No module named synthzoo.__main__"
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(sz.__file__).resolve().parents[1])
    out = subprocess.run([sys.executable, "-m", "synthzoo", "--version"], capture_output=True, text=True, cwd=root,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == f"synthzoo {sz.__version__}", out.stderr


def test_every_argument_has_help():
    parser = build_parser()
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    missing = [f"{name} {a.dest}" for name, p in subs.choices.items() for a in p._actions
               if not isinstance(a, argparse._HelpAction) and not (a.help or "").strip()]
    assert not missing, f"arguments without help: {missing}"
    assert all((c.help or "").strip() for c in subs._choices_actions)


def test_metrics_help_lists_what_the_metrics_package_defines(capsys):
    from synthzoo.metrics.evaluate import GROUPS, METRICS

    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps lines
    for name in [*GROUPS, *(m for m in METRICS if m != "mds")]:
        assert name in text, name


def test_semicolon_csv_says_pass_sep_and_then_works(demo_files, tmp_path, capsys):
    d, df, _ = demo_files
    df.to_csv(tmp_path / "semi.csv", sep=";", index=False)
    args = ["fit", str(tmp_path / "semi.csv"), "--schema", str(d / "schema.json"), "--out", str(tmp_path / "m.szm")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "single column" in err and "semicolons" in err and "--sep ';'" in err and "Traceback" not in err
    assert main(args + ["--sep", ";"]) == 0 and (tmp_path / "m.szm").exists()


def test_tab_separated_input_by_name(demo_files, tmp_path):
    d, df, _ = demo_files
    df.to_csv(tmp_path / "t.tsv", sep="\t", index=False)
    got = read_csv(tmp_path / "t.tsv", sep="\t")
    assert list(got.columns) == list(df.columns)
    with pytest.raises(ConfigError, match=r"separated by tabs.*--sep '\\t'"):
        read_csv(tmp_path / "t.tsv")
    assert main(["split", str(tmp_path / "t.tsv"), "--sep", "tab"]) == 0


def test_categories_spelt_like_missing_values_stay_categories(tmp_path, capsys):
    # pandas reads "NA" and "None" as missing in every column: the fit refused this file for 195 missing
    # values of a column that holds none; a listed category now stays one, other missing texts do not
    rng = np.random.default_rng(0)
    n = 400
    region = rng.choice(["NA", "EU", "None", "ASIA"], n).astype(object)
    df = pd.DataFrame({"region": region, "x": rng.integers(0, 50, n).astype(float),
                       "plan": rng.choice(["basic", "pro"], n).astype(object)})
    df.loc[:9, "x"] = np.nan
    df.loc[:4, "plan"] = None
    df.to_csv(tmp_path / "d.csv", index=False, na_rep="NA")  # as R writes its missing values
    schema = sz.Schema.from_dict({"columns": {
        "region": {"type": "categorical", "categories": ["ASIA", "EU", "NA", "None"]},
        "x": {"type": "numerical", "lower": 0, "upper": 49, "integer": True, "missing": True},
        "plan": {"type": "categorical", "categories": ["basic", "pro"], "missing": True}}})
    schema.to_json(tmp_path / "s.json")
    got = read_csv(tmp_path / "d.csv", schema=schema)
    assert got["region"].tolist() == df["region"].tolist()  # no NaN: "NA" and "None" are categories
    assert got["x"].isna().sum() == 10 and got["plan"].isna().sum() == 5  # missing values elsewhere still are
    assert read_csv(tmp_path / "d.csv")["region"].isna().sum() > 0  # without a schema, as pandas reads it
    out = tmp_path / "m.szm"
    assert main(["fit", str(tmp_path / "d.csv"), "--schema", str(tmp_path / "s.json"), "--out", str(out)]) == 0
    assert main(["sample", str(out), "-n", "500", "--out", str(tmp_path / "f.csv")]) == 0
    fake = read_csv(tmp_path / "f.csv", schema=schema)
    assert fake["region"].notna().all() and {"NA", "None"} <= set(fake["region"])
    # a partial description for --dp-schema: its listed categories are read as themselves too
    kinds = {"columns": {"region": {"type": "categorical", "categories": ["ASIA", "EU", "NA", "None"]},
                         "x": {"type": "numerical", "integer": True}, "plan": "categorical"}}
    (tmp_path / "k.json").write_text(json.dumps(kinds))
    # replayable noise: "missing" is declared on a noisy count over 2 standard deviations, which fresh noise
    # gave a column without missing values in about 1 run in 50 (this test then failed)
    assert main(["fit", str(tmp_path / "d.csv"), "--schema", str(tmp_path / "k.json"), "--dp-schema", "1",
                 "--epsilon", "3", "--noise-seed", "0", "--out", str(out)]) == 0
    assert sz.Synthesizer.load(out).schema_["region"].missing is False


def test_dp_schema_reads_its_partial_schema_file_once(tmp_path, monkeypatch):
    # it was read twice (for the CSV's category texts, then for the kinds): a file changed between the two
    # reads made the CSV be read by one description and measured by another
    import synthzoo.core.schema as schema_module

    df = pd.DataFrame({"g": ["a", "b", "NA"] * 100, "x": np.arange(300) % 40})
    df.to_csv(tmp_path / "d.csv", index=False)
    (tmp_path / "k.json").write_text(json.dumps({"columns": {"g": {"type": "categorical", "categories": ["a", "b", "NA"]},
                                                             "x": {"type": "numerical", "integer": True}}}))
    reads, real = [], schema_module.read_json_file
    monkeypatch.setattr(schema_module, "read_json_file", lambda path, what: reads.append(str(path)) or real(path, what))
    assert main(["fit", str(tmp_path / "d.csv"), "--schema", str(tmp_path / "k.json"), "--dp-schema", "1",
                 "--epsilon", "3", "--out", str(tmp_path / "m.szm")]) == 0
    assert reads == [str(tmp_path / "k.json")]


def test_codes_with_leading_zeros_stay_as_written(tmp_path, capsys):
    # ZIP codes read as numbers: a schema listing "02139" refused the file ("['2139', ...] not among the
    # schema's categories", values it does not hold), and without a schema, split, fit and sample wrote 2139
    rng = np.random.default_rng(0)
    n = 300
    df = pd.DataFrame({"zip": rng.choice(["02139", "00501", "10001"], n), "v": rng.integers(0, 10, n)})
    df.to_csv(tmp_path / "z.csv", index=False)
    schema = sz.Schema.from_dict({"columns": {
        "zip": {"type": "categorical", "categories": ["02139", "00501", "10001"]},
        "v": {"type": "numerical", "lower": 0, "upper": 9, "integer": True}}})
    schema.to_json(tmp_path / "s.json")
    out, fake = tmp_path / "m.szm", tmp_path / "f.csv"
    assert main(["fit", str(tmp_path / "z.csv"), "--schema", str(tmp_path / "s.json"), "--out", str(out)]) == 0
    assert main(["sample", str(out), "-n", "200", "--out", str(fake)]) == 0
    assert set(pd.read_csv(fake, dtype=str)["zip"]) <= {"02139", "00501", "10001"}
    assert main(["split", str(tmp_path / "z.csv")]) == 0
    assert set(pd.read_csv(tmp_path / "z.train.csv", dtype=str)["zip"]) == {"02139", "00501", "10001"}
    assert main(["fit", str(tmp_path / "z.csv"), "--epsilon", "none", "--out", str(out)]) == 0
    assert main(["sample", str(out), "-n", "200", "--out", str(fake)]) == 0
    assert set(pd.read_csv(fake, dtype=str)["zip"]) <= {"02139", "00501", "10001"}
    assert read_csv(tmp_path / "z.csv")["v"].dtype == "int64"  # plain numbers are still numbers
    # a schema that types the column as numbers reads it as numbers
    kinds = {"columns": {"zip": {"type": "numerical", "integer": True}, "v": {"type": "numerical"}}}
    (tmp_path / "k.json").write_text(json.dumps(kinds))
    assert main(["fit", str(tmp_path / "z.csv"), "--schema", str(tmp_path / "k.json"), "--dp-schema", "1",
                 "--epsilon", "3", "--out", str(out)]) == 0
    assert sz.Synthesizer.load(out).schema_["zip"].kind == "numerical"
    # months written "01".."12" under a schema listing 1..12 still match as numbers
    month = pd.DataFrame({"m": [f"{m:02d}" for m in rng.integers(1, 13, n)], "v": df["v"]})
    month.to_csv(tmp_path / "m.csv", index=False)
    sz.Schema.from_dict({"columns": {"m": {"type": "categorical", "categories": list(range(1, 13))},
                                     "v": {"type": "numerical", "lower": 0, "upper": 9, "integer": True}}}
                        ).to_json(tmp_path / "ms.json")
    assert main(["fit", str(tmp_path / "m.csv"), "--schema", str(tmp_path / "ms.json"), "--out", str(out)]) == 0


def test_a_header_field_without_a_name_is_said_by_position(tmp_path, capsys):
    # pandas names such a column 'Unnamed: 7': a trailing separator on every line (Excel exports) failed as
    # "column 'Unnamed: 7': every value is missing", and a saved row index or a blank header field was
    # synthesized and written back under a header the file does not have
    rows = "".join(f"{i % 3},{i % 5}\n" for i in range(60))
    (tmp_path / "trail.csv").write_text("a,b,\n" + rows.replace("\n", ",\n"))
    (tmp_path / "index.csv").write_text(",a,b\n" + "".join(f"{i},{r}" for i, r in enumerate(rows.splitlines(True))))
    (tmp_path / "blank.csv").write_text("a,,b\n" + "".join(f"{r[0]},{i},{r[2:]}" for i, r in
                                                          enumerate(rows.splitlines(True))))
    for name, said in [("trail", "field 3 is empty and so is every value under it"),
                       ("index", "column 1 has no name in its header"),
                       ("blank", "column 2 has no name in its header")]:
        for argv in (["fit", str(tmp_path / f"{name}.csv"), "--epsilon", "none", "--out", str(tmp_path / "m.szm")],
                     ["split", str(tmp_path / f"{name}.csv")]):
            assert main(argv) == 2, (name, argv)
            err = capsys.readouterr().err
            assert said in err and "Unnamed" not in err and "Traceback" not in err, err
    (tmp_path / "na.csv").write_text("NA,b\n" + rows)  # a column named NA is a name
    assert list(read_csv(tmp_path / "na.csv").columns) == ["NA", "b"]


def test_dp_schema_says_a_wrong_synthesizer_setting_before_measuring(tmp_path, capsys, monkeypatch):
    # fit --dp-schema measured the schema (charging the private rows, printing the measured schema) and only
    # then said that the preset, a module or a parameter was misspelt, or that --delta made no sense
    import synthzoo.core.dpschema as dps
    rng = np.random.default_rng(0)
    pd.DataFrame({"a": rng.choice(["x", "y"], 300), "v": rng.integers(0, 50, 300)}).to_csv(tmp_path / "d.csv",
                                                                                          index=False)
    (tmp_path / "k.json").write_text(json.dumps({"columns": {"a": "categorical", "v": "numerical"}}))
    measured = []
    real = dps.dp_schema
    monkeypatch.setattr(dps, "dp_schema", lambda *args, **kw: measured.append(1) or real(*args, **kw))
    monkeypatch.setattr(sz, "dp_schema", dps.dp_schema)
    base = ["fit", str(tmp_path / "d.csv"), "--schema", str(tmp_path / "k.json"), "--dp-schema", "1",
            "--epsilon", "3", "--out", str(tmp_path / "m.szm")]
    for extra, said in [(["--synth", "privsin"], "unknown preset 'privsin'"), (["--select", "foo"], "foo"),
                        (["--model", "foo"], "foo"), (["--preprocess", "foo"], "foo"),
                        (["--set", "model.foo=1"], "unknown parameter(s) ['foo']"),
                        (["--synth", "ctgan", "--select", "mst"], "takes no selector"),
                        (["--delta", "0.5"], "delta=0.5 gives no meaningful guarantee"),
                        (["--synth", "tabddpm", "--set", "model.steps=100000000"], "what a model file may set")]:
        assert main(base + extra) == 2, extra
        err = capsys.readouterr().err
        assert said in err and "schema measured under DP" not in err, (extra, err)
    assert measured == []
    assert main(base) == 0 and measured == [1]  # and a good command still measures once


def test_split_of_a_compressed_csv_names_its_parts_like_it(demo_files, tmp_path):
    # data.csv.gz was split into data.csv.train.csv and data.csv.test.csv
    _, df, _ = demo_files
    df.head(200).to_csv(tmp_path / "data.csv.gz", index=False)
    assert main(["split", str(tmp_path / "data.csv.gz")]) == 0
    train, test = pd.read_csv(tmp_path / "data.train.csv.gz"), pd.read_csv(tmp_path / "data.test.csv.gz")
    assert len(train) + len(test) == 200 and not (tmp_path / "data.csv.train.csv").exists()
    assert (tmp_path / "data.train.csv.gz").read_bytes()[:2] == b"\x1f\x8b"  # gzip, as its name says


def test_empty_file_gets_a_clear_message(demo_files, tmp_path, capsys):
    d, _, _ = demo_files
    (tmp_path / "empty.csv").write_bytes(b"")
    assert main(["fit", str(tmp_path / "empty.csv"), "--schema", str(d / "schema.json"),
                 "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert "is empty (0 bytes)" in err and "header line" in err and "Traceback" not in err


def test_blank_lines_only_and_missing_file(tmp_path, capsys):
    (tmp_path / "blank.csv").write_text("\n\n")
    assert main(["split", str(tmp_path / "blank.csv")]) == 2
    assert "holds no columns" in capsys.readouterr().err
    assert main(["split", str(tmp_path / "nope.csv")]) == 2
    assert "not found" in capsys.readouterr().err


def test_wrong_encoding_says_pass_encoding(tmp_path, capsys):
    schema = sz.Schema.from_dict({"columns": {"city": {"type": "categorical", "categories": ["Zürich", "Genève"]},
                                              "n": {"type": "numerical", "lower": 0, "upper": 10}}})
    df = pd.DataFrame({"city": ["Zürich", "Genève"] * 100, "n": np.arange(200) % 10})
    df.to_csv(tmp_path / "l1.csv", index=False, encoding="latin-1")
    schema.to_json(tmp_path / "s.json")
    args = ["fit", str(tmp_path / "l1.csv"), "--schema", str(tmp_path / "s.json"), "--out", str(tmp_path / "m")]
    assert main(args) == 2
    assert "--encoding" in capsys.readouterr().err
    assert main(args + ["--encoding", "latin-1"]) == 0
    # sample writing in an encoding that lacks a category's character: pandas' UnicodeEncodeError and
    # traceback, now an error naming the column and value, and no file left behind
    out = tmp_path / "f.csv"
    assert main(["sample", str(tmp_path / "m"), "-n", "50", "--encoding", "ascii", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "'ascii' cannot write the value" in err and "column 'city'" in err and "Traceback" not in err
    assert not out.exists() and not (tmp_path / "f.csv.part").exists()


def test_ragged_rows_point_at_sep(tmp_path, capsys):
    (tmp_path / "bad.csv").write_text("a,b\n1,2\n3,4,5\n")
    assert main(["split", str(tmp_path / "bad.csv")]) == 2
    err = capsys.readouterr().err
    assert "not a well-formed CSV" in err and "--sep" in err


def test_out_of_bounds_names_clip_then_clip_warns_in_one_line(demo_files, tmp_path, capsys):
    d, df, _ = demo_files
    bad = df.copy()
    bad.loc[0, "age"] = 140
    bad.to_csv(tmp_path / "oob.csv", index=False)
    args = ["fit", str(tmp_path / "oob.csv"), "--schema", str(d / "schema.json"), "--out", str(tmp_path / "m")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "'age'" in err and "--clip" in err and "out_of_bounds=" not in err
    assert main(args + ["--clip"]) == 0
    err = capsys.readouterr().err
    warned = [line for line in err.splitlines() if line.startswith("synthzoo: warning:")]
    assert any("'age'" in line and "clipped" in line for line in warned)
    # one line per warning: no source file, line number or source line
    assert ".py:" not in err and "warnings.warn" not in err and "UserWarning" not in err


def test_warning_display_is_restored_after_the_command(demo_files, tmp_path):
    import warnings

    before = warnings.showwarning
    main(["sample", str(demo_files[0] / "model.szm"), "-n", "10", "--out", str(tmp_path / "f.csv")])
    assert warnings.showwarning is before


def test_sample_in_chunks_writes_the_rows_of_one_go(demo_files, tmp_path, capsys):
    d, _, _ = demo_files
    assert main(["sample", str(d / "model.szm"), "-n", "2.5e3", "--chunk", "700", "--seed", "4",
                 "--out", str(tmp_path / "f.csv")]) == 0
    got = pd.read_csv(tmp_path / "f.csv")
    one_go = sz.Synthesizer.load(d / "model.szm").sample(2500, seed=4)
    one_go.to_csv(tmp_path / "g.csv", index=False)
    pd.testing.assert_frame_equal(got, pd.read_csv(tmp_path / "g.csv"))
    assert "sampled 2,500 rows" in capsys.readouterr().err


def test_sample_writes_with_sep(demo_files, tmp_path):
    d, df, _ = demo_files
    assert main(["sample", str(d / "model.szm"), "-n", "50", "--sep", ";", "--out", str(tmp_path / "f.csv")]) == 0
    assert list(pd.read_csv(tmp_path / "f.csv", sep=";").columns) == list(df.columns)


@pytest.mark.filterwarnings("ignore:epsilon=None")
def test_sample_precision_bfloat16_for_a_generator_and_refused_for_a_marginal_model(demo_files, tmp_path, capsys):
    from synthzoo.models import CTGAN

    d, df, schema = demo_files
    gan = sz.make("ctgan", epsilon=None, schema=schema, seed=0, model={"name": "ctgan", **CTGAN._test_params})
    gan.fit(df.head(300)).save(tmp_path / "gan.szm")
    assert main(["sample", str(tmp_path / "gan.szm"), "-n", "400", "--seed", "2", "--precision", "bfloat16",
                 "--out", str(tmp_path / "f.csv")]) == 0
    gan.model.sample_precision = "bfloat16"
    gan.sample(400, seed=2).to_csv(tmp_path / "g.csv", index=False)
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "f.csv"), pd.read_csv(tmp_path / "g.csv"))
    capsys.readouterr()
    assert main(["sample", str(d / "model.szm"), "-n", "10", "--precision", "bfloat16",
                 "--out", str(tmp_path / "h.csv")]) == 2
    err = capsys.readouterr().err
    assert "--precision bfloat16: 'privsyn' (model 'gum')" in err and "ctgan" in err
    assert not (tmp_path / "h.csv").exists()


def test_sample_precision_help_says_what_bfloat16_costs_where(capsys):
    """The help names no machine of ours as "here": the rows change, and how the speed depends on the CPU."""
    with pytest.raises(SystemExit):
        main(["sample", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert not re.search(r"\bhere\b", text) and "different rows" in text and "AVX2-only" in text and "warns" in text


def test_bad_row_counts_are_refused(demo_files, tmp_path, capsys):
    for n in ("0", "1.5", "ten"):
        with pytest.raises(SystemExit):
            main(["sample", str(demo_files[0] / "model.szm"), "-n", n, "--out", str(tmp_path / "f.csv")])
        assert "-n" in capsys.readouterr().err


def test_sample_progress_bar_on_request(demo_files, capsys):
    s = sz.Synthesizer.load(demo_files[0] / "model.szm")
    list(s.sample_chunks(300, chunk=100, progress=True))
    assert "sampling 300 rows" in capsys.readouterr().err


def test_fit_stage_progress_reports_the_budget_share():
    from synthzoo.core.progress import stage_progress

    class Budget:
        spent, rho = 0.0, 2.0

    import io
    import sys

    b = Budget()
    old, sys.stderr = sys.stderr, io.StringIO()
    try:
        with stage_progress("select (aim)", enabled=True, fraction=lambda: b.spent / b.rho, interval=0.01):
            b.spent = 1.0
        shown = sys.stderr.getvalue()
    finally:
        sys.stderr = old
    assert "select (aim)" in shown and "50% of its budget spent" in shown


def test_split_then_eval_with_test_shows_each_step(demo_files, tmp_path, capsys):
    d, df, _ = demo_files
    data = tmp_path / "data.csv"
    df.to_csv(data, index=False)
    assert main(["split", str(data), "--test-size", "0.2", "--seed", "0"]) == 0
    train, test = pd.read_csv(tmp_path / "data.train.csv"), pd.read_csv(tmp_path / "data.test.csv")
    assert (len(train), len(test)) == (1200, 300)
    assert "data.test.csv" in capsys.readouterr().err
    assert main(["split", str(data)]) == 2 and "--force" in capsys.readouterr().err
    assert main(["split", str(data), "--test-size", "1", "--force"]) == 0
    assert "(1 row: hold them out" in capsys.readouterr().err  # was "(1 rows: ..."
    assert main(["split", str(data), "--test-size", "100", "--force"]) == 0
    assert len(pd.read_csv(tmp_path / "data.test.csv")) == 100
    fake = sz.Synthesizer.load(d / "model.szm").sample(len(train), seed=0)
    fake.to_csv(tmp_path / "fake.csv", index=False)
    assert main(["eval", str(tmp_path / "data.train.csv"), str(tmp_path / "fake.csv"), "--test",
                 str(tmp_path / "data.test.csv"), "--schema", str(d / "schema.json"), "--metrics",
                 "tvd_2way,ml_f1,ml_affinity,dcr_risk", "--out", str(tmp_path / "r.html")]) == 0
    cap = capsys.readouterr()
    assert "[synthzoo] eval: tvd_2way" in cap.err and "[synthzoo] eval: ML metrics" in cap.err
    assert "[synthzoo] eval: dcr_risk" in cap.err
    assert {"tvd_2way", "ml_f1", "ml_affinity", "dcr_risk"} <= set(cap.out.split())
    assert (tmp_path / "r.html").stat().st_size > 1000


def test_eval_progress_gives_a_steps_wall_time_not_its_units_summed(demo_files, tmp_path, capsys, monkeypatch):
    # before: a step's line added up its units' seconds, which run side by side (the release, HALF and
    # INDEPENDENT 0.5 s each, 2 at a time; SELF's is 0 by definition): "tvd_2way (1.5s)" for a step that took
    # 1.0 s, and 256.9 s in a 224 s run
    import importlib
    import time

    ev = importlib.import_module("synthzoo.metrics.evaluate")
    d, df, _ = demo_files
    monkeypatch.setattr(ev, "_BASELINE_CACHE", {})  # HALF and INDEPENDENT are scored here, not read from a cache
    monkeypatch.setattr(ev, "tvd_2way", lambda *a, **k: time.sleep(0.5) or 0.0)
    assert main(["eval", str(d / "data.csv"), str(d / "data.csv"), "--schema", str(d / "schema.json"),
                 "--metrics", "tvd_2way", "--out", str(tmp_path / "r.html")]) == 0
    err = capsys.readouterr().err
    line = re.search(r"eval: tvd_2way \((\S+)s wall; (\S+)s summed over its 4 units, which ran side by side\)", err)
    assert line, err
    assert 0.95 < float(line[1]) < 1.4 and float(line[2]) >= 1.5
    assert "time (synthetic, summed over its units)" in (tmp_path / "r.html").read_text()


def test_eval_progress_wall_time_counts_only_while_the_steps_units_ran():
    # hmeq's ML metrics read "268.3s wall; 12.4s summed over its 4 units": two units ran at the start, two
    # queued behind the Wasserstein units, and the wall time ran from the first start to the last end
    from synthzoo.cli import _busy_seconds

    assert _busy_seconds([(0, 3), (0.5, 3), (250, 253), (255, 258)]) == pytest.approx(9)
    assert _busy_seconds([(0, 2), (1, 4), (3, 5)]) == pytest.approx(5)
    assert _busy_seconds([(2, 3)]) == pytest.approx(1) and _busy_seconds([]) == 0


def test_eval_unknown_metric_is_a_clear_error(demo_files, tmp_path, capsys):
    d, df, _ = demo_files
    assert main(["eval", str(d / "data.csv"), str(d / "data.csv"), "--metrics", "tvd_9way",
                 "--out", str(tmp_path / "r.html")]) == 2
    assert "--metrics: unknown metric or set 'tvd_9way'" in capsys.readouterr().err


@pytest.mark.parametrize("given", ["", " , "])
def test_eval_empty_metric_list_is_an_error_not_the_default_set(demo_files, tmp_path, capsys, given):
    d, df, _ = demo_files
    assert main(["eval", str(d / "data.csv"), str(d / "data.csv"), "--metrics", given,
                 "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert "--metrics: an empty list names no metric" in err and "tvd_2way" in err and "Traceback" not in err
    assert not (tmp_path / "r.html").exists()


def test_tune_says_where_the_study_and_the_model_go(demo_files, tmp_path, capsys):
    import warnings

    d, _, _ = demo_files
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rc = main(["tune", str(d / "data.csv"), "--schema", str(d / "schema.json"), "--trials", "1",
                   "--storage", str(tmp_path / "t.db"), "--select-model", "indif+gum", "--numeric", "uniform",
                   "--in-process", "--out", str(tmp_path / "tuned.json")])
    assert rc == 0
    err = capsys.readouterr().err
    assert f"study database: {(tmp_path / 't.db').resolve()} (SQLite)" in err
    assert f"tuned synthesizer to {tmp_path / 'tuned.model.json'}" in err
    assert json.loads((tmp_path / "tuned.json").read_text())["study_name"] in err


def test_european_csv_semicolons_and_decimal_commas(demo_files, tmp_path, capsys):
    d, df, _ = demo_files
    df.to_csv(tmp_path / "eu.csv", sep=";", decimal=",", index=False)
    args = ["fit", str(tmp_path / "eu.csv"), "--schema", str(d / "schema.json"), "--out", str(tmp_path / "m.szm"),
            "--sep", ";"]
    assert main(args) == 2
    assert "--decimal ','" in capsys.readouterr().err
    assert main(args + ["--decimal", ","]) == 0


def test_ragged_rows_from_another_separator_name_it(tmp_path, capsys):
    (tmp_path / "eu.csv").write_text("a;b;c\n1,5;2;3\n4;5,5;6,25\n")
    assert main(["split", str(tmp_path / "eu.csv")]) == 2
    assert "--sep ';'" in capsys.readouterr().err


def test_unwritable_out_and_unknown_encoding_are_said_before_any_work(demo_files, tmp_path, capsys):
    d, _, _ = demo_files
    fit = ["fit", str(d / "data.csv"), "--schema", str(d / "schema.json"), "--synth", "mst", "--epsilon", "1"]
    assert main([*fit, "--out", str(tmp_path / "nodir" / "m.szm")]) == 2
    err = capsys.readouterr().err
    assert "--out: folder" in err and "does not exist" in err and "fitting" not in err  # before the fit
    assert main(["sample", str(d / "model.szm"), "-n", "5", "--out", str(tmp_path)]) == 2
    assert "is a folder; give a file name inside it" in capsys.readouterr().err
    assert main([*fit, "--encoding", "bogus", "--out", str(tmp_path / "m.szm")]) == 2
    assert "--encoding: unknown text encoding 'bogus'" in capsys.readouterr().err


def test_library_hints_are_said_in_command_line_words(demo_files, tmp_path, capsys):
    d, _, _ = demo_files
    assert main(["eval", str(d / "data.csv"), str(d / "data.csv"), "--schema", str(d / "schema.json"),
                 "--metrics", "ml_f1", "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert "pass --test FILE" in err and "test=" not in err
    with pytest.raises(SystemExit):
        main(["fit", str(d / "data.csv"), "--epsilon", "abc", "--out", str(tmp_path / "m.szm")])
    assert "epsilon must be a positive number (or 'none' for a non-private run), got 'abc'" in capsys.readouterr().err


def test_tune_without_a_target_stops_before_the_first_trial(demo_files, tmp_path, capsys):
    d, df, schema = demo_files
    doc = json.loads((d / "schema.json").read_text())
    doc.pop("target", None)
    (tmp_path / "s.json").write_text(json.dumps(doc))
    assert main(["tune", str(d / "data.csv"), "--schema", str(tmp_path / "s.json"), "--trials", "1",
                 "--storage", str(tmp_path / "t.db"), "--in-process"]) == 2
    err = capsys.readouterr().err
    assert 'add "target": "<column>"' in err and "--weights a,0,b" in err
    assert "trial" not in err.lower().replace("before the first trial", "")


def test_dp_schema_suggests_a_type_for_every_column_of_a_usual_table(tmp_path, capsys):
    # hmeq's 13 columns: the suggested file held 8, and a file made from it was refused for the other 5
    # and whole numbers are suggested as integers (a private run does not read that from the dtype, and warned,
    # a second round trip), also where missing values made them floats
    df = pd.DataFrame({f"c{i}": np.arange(20.0) + 0.5 * (i == 0) for i in range(13)})
    df.loc[3, "c1"] = np.nan
    df.to_csv(tmp_path / "d.csv", index=False)
    assert main(["fit", str(tmp_path / "d.csv"), "--dp-schema", "0.3", "--epsilon", "1", "--synth", "mst",
                 "--out", str(tmp_path / "m.szm")]) == 2
    err = capsys.readouterr().err
    assert "... (13 columns)" in err and "for all 13," in err
    suggested = json.loads(err[err.index('{"columns"'):].strip())
    assert list(suggested["columns"]) == [f"c{i}" for i in range(13)]
    assert suggested["columns"]["c0"] == {"type": "numerical"}
    assert suggested["columns"]["c1"] == suggested["columns"]["c2"] == {"type": "numerical", "integer": True}


def test_dp_schema_needs_a_type_for_every_column_and_suggests_one(tmp_path, capsys):
    # a private --dp-schema took each undescribed column's type from what read_csv guessed from the values (one
    # record of text made a numeric column categorical); it is now an error before any charge, with a schema to
    # start from (dates as dates), and with the types given the fit runs and dates come back in their layout
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"dob": (pd.Timestamp("1950-01-01") + pd.to_timedelta(rng.integers(0, 20000, 500), unit="D"))
                       .strftime("%Y-%m-%d"), "x": rng.normal(size=500)})
    df.to_csv(tmp_path / "d.csv", index=False)
    assert main(["fit", str(tmp_path / "d.csv"), "--dp-schema", "0.3", "--epsilon", "1", "--synth", "mst",
                 "--out", str(tmp_path / "m.szm")]) == 2
    err = capsys.readouterr().err
    assert "no \"type\" for column(s) ['dob', 'x']; column 'dob': its text reads as ISO dates" in err
    assert '{"columns": {"dob": {"type": "datetime", "resolution": "day"}, "x": {"type": "numerical"}}}' in err
    assert "what the reader guessed, for all 2, to check against your data dictionary" in err
    assert not (tmp_path / "m.szm").exists()
    (tmp_path / "s.json").write_text('{"columns": {"dob": {"type": "datetime", "resolution": "day"}, '
                                     '"x": {"type": "numerical", "lower": -6, "upper": 6}}}')
    assert main(["fit", str(tmp_path / "d.csv"), "--schema", str(tmp_path / "s.json"), "--dp-schema", "0.5",
                 "--epsilon", "2", "--synth", "mst", "--out", str(tmp_path / "m.szm")]) == 0
    assert main(["sample", str(tmp_path / "m.szm"), "-n", "50", "--out", str(tmp_path / "o.csv")]) == 0
    assert pd.read_csv(tmp_path / "o.csv")["dob"].dropna().str.fullmatch(r"\d{4}-\d{2}-\d{2}").all()


def test_dp_schema_suggests_the_resolution_date_times_are_written_at(tmp_path, capsys):
    # the suggested schema said "resolution": "day" for every text column of dates, also for date-times such
    # as pandas' to_csv of a timestamp column; taken as given, the fit then failed on resolution
    rng = np.random.default_rng(0)
    ts = pd.Timestamp("2021-01-01") + pd.to_timedelta(rng.integers(0, 10 ** 5, 300), unit="min")
    df = pd.DataFrame({"at": ts.astype(str), "x": rng.normal(size=300)})
    df.to_csv(tmp_path / "d.csv", index=False)
    assert main(["fit", str(tmp_path / "d.csv"), "--dp-schema", "0.3", "--out", str(tmp_path / "m.szm")]) == 2
    err = capsys.readouterr().err
    assert '"at": {"type": "datetime", "resolution": "minute"}' in err


def test_messages_and_warnings_use_the_command_lines_words(demo_files, tmp_path, capsys):
    # errors and warnings said epsilon=None, select=None and synthzoo.dp_schema(df, kinds, ...) on the command line
    d, df, schema = demo_files
    out = str(tmp_path / "m.szm")
    assert main(["fit", str(d / "data.csv"), "--epsilon", "0", "--out", out]) == 2
    assert "(or 'none' for a non-private run)" in capsys.readouterr().err
    assert main(["fit", str(d / "data.csv"), "--synth", "tvae", "--select", "mst", "--out", out]) == 2
    assert "pass --select none" in capsys.readouterr().err
    assert main(["fit", str(d / "data.csv"), "--select", "none", "--out", out]) == 2  # said select='indif'
    err = capsys.readouterr().err
    assert "give a selector, e.g. --select indif" in err and "select='indif'" not in err
    assert main(["fit", str(d / "data.csv"), "--noise-seed", "-1", "--out", out]) == 2  # said noise_seed must be
    assert "--noise-seed must be a non-negative integer" in capsys.readouterr().err
    assert main(["fit", str(d / "data.csv"), "--epsilon", "none", "--synth", "mst", "--out", out]) == 0
    err = capsys.readouterr().err
    assert "--epsilon none: this is a NON-PRIVATE run" in err and "--schema FILE" in err
    assert "epsilon=None: this" not in err and "dp_schema(df" not in err


def test_eval_says_what_it_skips_and_why(demo_files, tmp_path, capsys):
    # without --test the ML metrics and attacks were left out silently (the HTML alone said so), and without a
    # target in the schema the ML metrics vanished with no note anywhere
    d, df, schema = demo_files
    df.iloc[:200].to_csv(tmp_path / "fake.csv", index=False)
    doc = json.loads((d / "schema.json").read_text())
    doc.pop("target", None)
    doc.pop("task", None)
    (tmp_path / "s.json").write_text(json.dumps(doc))
    test = str(d / "data.csv")
    assert main(["eval", str(d / "data.csv"), str(tmp_path / "fake.csv"), "--schema", str(tmp_path / "s.json"),
                 "--test", test, "--out", str(tmp_path / "r.html")]) == 0
    err = capsys.readouterr().err
    assert 'the schema names no "target", so nothing to predict: skipped ml_f1' in err and "without --test" not in err
    assert 'names no &quot;target&quot;, so nothing to predict: skipped ml_f1' in (tmp_path / "r.html").read_text()
    assert 'give --target COLUMN, or add "target" and "task" to the schema file (--schema), to score them' in err
    (tmp_path / "r.html").unlink()
    assert main(["eval", str(d / "data.csv"), str(tmp_path / "fake.csv"), "--schema", str(tmp_path / "s.json"),
                 "--test", test, "--metrics", "tvd_2way,ml_f1", "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err  # a named ML metric without a target: an error before any work, not a warning
    assert "metrics ['ml_f1'] predict a target column" in err and "schema file (--schema)" in err
    assert not (tmp_path / "r.html").exists()
    assert main(["eval", str(d / "data.csv"), str(tmp_path / "fake.csv"), "--schema", str(d / "schema.json"),
                 "--metrics", "fidelity", "--out", str(tmp_path / "r.html")]) == 0
    assert "skipped" not in capsys.readouterr().err  # metrics named: nothing left out by default


def test_eval_takes_the_target_on_the_command_line(demo_files, tmp_path, capsys):
    # without --schema (inferred from the rows) there was no file to add "target" to, so the ML metrics could
    # not be scored from the command line at all; --target (and --task) name it there
    d, df, schema = demo_files
    target = schema.meta["target"]
    df.iloc[:200].to_csv(tmp_path / "fake.csv", index=False)
    base = ["eval", str(d / "data.csv"), str(tmp_path / "fake.csv"), "--out", str(tmp_path / "r.html")]
    assert main(base + ["--metrics", "tvd_2way,ml_f1"]) == 2
    assert "give --target COLUMN" in capsys.readouterr().err
    assert main(base + ["--target", target, "--metrics", "tvd_2way,ml_f1", "--test", str(d / "data.csv")]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^\s*ml_f1\s+utility\s+[0-9.]+\s", out, re.M), out  # scored
    for extra, said in ((["--target", target[:-1] + "X"], f"did you mean {target!r}?"),
                        (["--task", "regression"], "give --target COLUMN too"),
                        (["--target", target, "--task", "regresion"], "--task: unknown task 'regresion'"),
                        (["--target", target, "--task", "regression"], "is categorical; a categorical target is classified")):
        assert main(base + extra + ["--metrics", "tvd_2way"]) == 2, extra
        assert said in capsys.readouterr().err, extra


def test_a_file_in_another_encoding_is_placed_by_line_and_column(tmp_path, capsys):
    # the decoder's byte offset counted from the reader's chunk: "byte 8" or "byte 5" for one file by --sep
    (tmp_path / "l.csv").write_bytes(b"a,b\n1,x\n2,caf\xe9\n")
    for sep in (",", ";"):
        assert main(["fit", str(tmp_path / "l.csv"), "--sep", sep, "--out", str(tmp_path / "m.szm")]) == 2
        err = capsys.readouterr().err
        assert "is not utf-8 text (line 3, column 6: byte b'\\xe9'" in err and "--encoding latin-1" in err


def test_fit_without_a_schema_says_its_epsilon_does_not_cover_the_schema(demo_files, tmp_path, capsys):
    d, df, schema = demo_files
    assert main(["fit", str(d / "data.csv"), "--synth", "mst", "--out", str(tmp_path / "m.szm")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("NOT COVERED BY DP: the schema") and "--schema FILE" in out and "sz.dp_schema" not in out


def test_keygen_fit_sign_and_sample_trust(tmp_path, capsys):
    df, schema = make_demo(n=300, seed=0)
    df.to_csv(tmp_path / "data.csv", index=False)
    schema.to_json(tmp_path / "schema.json")
    assert main(["keygen", str(tmp_path / "owner")]) == 0
    assert main(["keygen", str(tmp_path / "other")]) == 0
    assert main(["fit", str(tmp_path / "data.csv"), "--schema", str(tmp_path / "schema.json"), "--synth", "mst",
                 "--out", str(tmp_path / "m.json"), "--sign", str(tmp_path / "owner")]) == 0
    capsys.readouterr()
    assert main(["sample", str(tmp_path / "m.json"), "-n", "10", "--out", str(tmp_path / "f.csv"),
                 "--trust", str(tmp_path / "owner.pub")]) == 0
    assert "verified against your trusted key" in capsys.readouterr().out
    assert main(["sample", str(tmp_path / "m.json"), "-n", "10", "--out", str(tmp_path / "f.csv"),
                 "--trust", str(tmp_path / "other.pub")]) == 2
    assert "which is not a trusted key" in capsys.readouterr().err


def test_grid_options_that_make_no_sense_are_refused(capsys):
    import pytest

    assert main(["bench", "--select", "indif", "--model", "gum", "--epsilon", "True"]) == 2
    assert "--epsilon 'True': give comma-separated numbers" in capsys.readouterr().err
    for argv in (["bench-worker", "--storage", "x.db", "--heartbeat", "0"], ["bench", "--workers", "-3"]):
        with pytest.raises(SystemExit):
            main(argv)
        assert "must be at least 1" in capsys.readouterr().err


def test_eval_privacy_set_without_test_says_what_it_drops(demo_files, tmp_path, capsys):
    # `--metrics privacy` without --test scored 2 of its 14 metrics and said nothing of the other 12
    d, df, _ = demo_files
    df.iloc[:200].to_csv(tmp_path / "fake.csv", index=False)
    assert main(["eval", str(d / "data.csv"), str(tmp_path / "fake.csv"), "--schema", str(d / "schema.json"),
                 "--metrics", "privacy", "--out", str(tmp_path / "r.html")]) == 0
    err = capsys.readouterr().err
    assert "dcr_risk" in err and "pass --test FILE" in err and "left out" in err
    # the help names 'privacy' once as a set and says what the default run's privacy metrics are
    from synthzoo.cli import _metric_help
    h = _metric_help()
    assert "privacy (14 metrics)" in h and "privacy = " not in h and "default run's privacy metrics" in h


def test_a_warning_repeated_by_several_metrics_is_printed_once(demo_files, tmp_path, capsys):
    # eval printed "synthetic table, column ...: value(s) outside the schema's categories" once per metric
    # that read the column (17 identical lines for a default eval); each distinct warning is now one line
    d, df, _ = demo_files
    fake = sz.Synthesizer.load(d / "model.szm").sample(500, seed=0)
    fake.loc[0, "region"] = "atlantis"
    fake.to_csv(tmp_path / "fake.csv", index=False)
    assert main(["eval", str(d / "data.csv"), str(tmp_path / "fake.csv"), "--schema", str(d / "schema.json"),
                 "--metrics", "tvd_1way,tvd_2way,hellinger", "--out", str(tmp_path / "r.html")]) == 0
    lines = [ln for ln in capsys.readouterr().err.splitlines() if "atlantis" in ln]
    assert len(lines) == 1 and lines[0].startswith("synthzoo: warning: synthetic table, column 'region'")


def test_out_naming_an_input_file_is_refused_before_any_work(demo_files, tmp_path, capsys):
    # `fit data.csv --out data.csv` replaced the private rows with the model file, and `sample m.szm --out m.szm`
    # the model with its sample, without a word
    d, _, _ = demo_files
    data = tmp_path / "data.csv"
    data.write_bytes((d / "data.csv").read_bytes())
    assert main(["fit", str(data), "--schema", str(d / "schema.json"), "--out", str(data)]) == 2
    assert "is the input file given as DATA" in capsys.readouterr().err
    assert data.read_bytes() == (d / "data.csv").read_bytes()
    model = tmp_path / "m.szm"
    model.write_bytes((d / "model.szm").read_bytes())
    assert main(["sample", str(model), "-n", "5", "--out", str(model)]) == 2
    assert "is the input file given as MODEL" in capsys.readouterr().err
    sz.Synthesizer.load(model)  # still the model


def test_a_thousands_separator_is_not_only_called_a_decimal_comma(tmp_path, capsys):
    # '4,324' in a numerical column: the error ended "pass --decimal ','", which reads it as 4.324
    schema = sz.Schema.from_dict({"columns": {"mass": {"type": "numerical", "lower": 0, "upper": 9000}}})
    pd.DataFrame({"mass": [f"{v:,}" for v in range(1936, 6806, 61)]}).to_csv(tmp_path / "d.csv", index=False)
    schema.to_json(tmp_path / "s.json")
    assert main(["fit", str(tmp_path / "d.csv"), "--schema", str(tmp_path / "s.json"),
                 "--out", str(tmp_path / "m.szm")]) == 2
    err = capsys.readouterr().err
    assert "if its commas separate thousands, pass --thousands ','" in err and "--decimal ','" in err
    assert main(["fit", str(tmp_path / "d.csv"), "--schema", str(tmp_path / "s.json"), "--thousands", ",",
                 "--out", str(tmp_path / "m.szm")]) == 0
    assert sz.Synthesizer.load(tmp_path / "m.szm").sample(200, seed=0)["mass"].median() > 100  # not 1.936 to 6.806


@pytest.mark.parametrize("european, options, hint", [
    (False, ["--thousands", ","],
     "its commas separate thousands (the point is the decimal mark): pass --thousands ','"),
    (True, ["--decimal", ",", "--thousands", "."],
     "if the file writes decimals with a comma and thousands with a point, pass --decimal ',' --thousands '.'"),
])
def test_numbers_with_thousands_separators_read_with_thousands(tmp_path, capsys, european, options, hint):
    # '40,123.45' (or '40.123,45' in a semicolon file) in a numerical column: refused as non-numeric with no way to
    # read it (no --thousands; the hint said to rewrite the file), and without a schema taken as 400 categories
    values = [f"{v:,.2f}" for v in np.random.default_rng(0).normal(40_000, 9_000, 400)]
    if european:
        values = [v.replace(",", "#").replace(".", ",").replace("#", ".") for v in values]
    sep = ["--sep", ";"] if european else []
    pd.DataFrame({"salary": values, "k": ["a", "b"] * 200}).to_csv(tmp_path / "d.csv", index=False,
                                                                    sep=";" if european else ",")
    schema = {"salary": {"type": "numerical", "lower": 0, "upper": 100_000},
              "k": {"type": "categorical", "categories": ["a", "b"]}}
    sz.Schema.from_dict({"columns": schema}).to_json(tmp_path / "s.json")
    base = ["fit", str(tmp_path / "d.csv"), "--schema", str(tmp_path / "s.json"), "--out", str(tmp_path / "m.szm"),
            *sep]
    assert main(base) == 2
    assert hint in capsys.readouterr().err
    assert main(base + options) == 0
    fake = sz.Synthesizer.load(tmp_path / "m.szm").sample(200, seed=0)
    assert fake["salary"].dtype == np.float64 and fake["salary"].median() > 10_000
    # without a schema, Schema.infer's warning says what to pass
    assert main(["fit", str(tmp_path / "d.csv"), "--out", str(tmp_path / "m2.szm"), *sep]) == 0
    assert ("pass --decimal ',' --thousands '.'" if european else "pass --thousands ','") in capsys.readouterr().err


def test_a_thousands_separator_that_is_the_decimal_mark_or_a_letter_is_refused(demo_files, tmp_path, capsys):
    d, _, _ = demo_files
    base = ["fit", str(d / "data.csv"), "--schema", str(d / "schema.json"), "--out", str(tmp_path / "m.szm")]
    with pytest.raises(SystemExit):
        main(base + ["--thousands", "ab"])
    assert "argument --thousands: a thousands separator is one character" in capsys.readouterr().err
    assert main(base + ["--thousands", "."]) == 2
    assert "the thousands separator '.' is also the decimal mark; they must differ (for 1.234,5 pass --decimal ','" \
        in capsys.readouterr().err
    with pytest.raises(SystemExit):  # sample writes numbers without separators: no such option there
        main(["sample", str(d / "model.szm"), "-n", "5", "--out", str(tmp_path / "f.csv"), "--thousands", ","])


def test_bad_tune_weights_and_timeout_name_their_own_options(demo_files, tmp_path, capsys):
    # `tune --weights a,b,c` said "--epsilon 'a,b,c': give comma-separated numbers", and `--timeout -5`
    # "trial_timeout must be a positive number of seconds" (the tuner's Python argument)
    d, _, _ = demo_files
    base = ["tune", str(d / "data.csv"), "--schema", str(d / "schema.json"), "--trials", "1",
            "--storage", str(tmp_path / "t.db"), "--in-process"]
    assert main(base + ["--weights", "a,b,c"]) == 2
    err = capsys.readouterr().err
    assert "--weights 'a,b,c': give comma-separated numbers" in err and "--epsilon" not in err
    assert main(base + ["--timeout", "-5"]) == 2
    err = capsys.readouterr().err
    assert "--timeout must be a positive number of seconds" in err and "trial_timeout" not in err


def test_split_never_writes_its_outputs_over_each_other_or_its_input(demo_files, tmp_path, capsys):
    # `split d.csv --train a.csv --test a.csv --force` wrote the test rows over the training rows (and said it
    # wrote both), and `split d.csv --train d.csv --force` replaced the table being split with its training part
    d, df, _ = demo_files
    data = tmp_path / "d.csv"
    data.write_bytes((d / "data.csv").read_bytes())
    a = str(tmp_path / "a.csv")
    assert main(["split", str(data), "--train", a, "--test", a, "--force"]) == 2
    assert "--train and --test both name" in capsys.readouterr().err and not (tmp_path / "a.csv").exists()
    assert main(["split", str(data), "--train", str(data), "--force"]) == 2
    assert "--train" in capsys.readouterr().err
    assert data.read_bytes() == (d / "data.csv").read_bytes()


@pytest.mark.parametrize("option, value", [("--sep", ""), ("--sep", ";;"), ("--sep", "auto"), ("--decimal", ""),
                                           ("--decimal", ",,")])
def test_a_separator_or_decimal_mark_of_other_than_one_character_is_refused(demo_files, tmp_path, capsys,
                                                                            option, value):
    # --sep '' and --decimal '' or ',,' ended in pandas' ValueError traceback, `sample --sep ';;'` in csv's
    # TypeError, and `fit --sep ';;'` read the separator as a regular expression after pandas' ParserWarning
    d, _, _ = demo_files
    for cmd in (["fit", str(d / "data.csv"), "--out", str(tmp_path / "m.szm")],
                ["sample", str(d / "model.szm"), "-n", "5", "--out", str(tmp_path / "f.csv")]):
        with pytest.raises(SystemExit):
            main(cmd + [option, value])
        err = capsys.readouterr().err
        assert f"argument {option}: a " in err and "one character" in err and "Traceback" not in err


def test_fit_refuses_a_parameter_its_model_file_could_not_hold_before_fitting(demo_files, tmp_path, capsys):
    # `fit --set model.iterations=10001` (or model.pool=null) spent the budget and saved a file that `sample`
    # refused: "parameter iterations=10001 exceeds what a model file may set (10000)"
    d, _, _ = demo_files
    for value in ("iterations=10001", "pool=null"):
        assert main(["fit", str(d / "data.csv"), "--schema", str(d / "schema.json"), "--set", f"model.{value}",
                     "--out", str(tmp_path / "m.szm")]) == 2
        err = capsys.readouterr().err
        assert f"parameter {value.replace('null', 'None')}" in err and "model file" in err
        assert "fitting" in err and "privacy spent" not in err and not (tmp_path / "m.szm").exists()


def test_eval_risk_that_is_not_a_risk_table_is_named(demo_files, tmp_path, capsys):
    # `eval --risk data.csv` (any plain CSV) ended in float()'s ValueError traceback from read_risk_csv
    d, _, _ = demo_files
    assert main(["eval", str(d / "data.csv"), str(d / "data.csv"), "--schema", str(d / "schema.json"),
                 "--metrics", "tvd_1way", "--risk", str(d / "data.csv"), "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert "is not a risk-response CSV" in err and "Traceback" not in err


def test_preprocess_none_means_none_in_fit_as_in_bench(demo_files, tmp_path, capsys):
    # fit --preprocess none said 'none' was an unknown module (bench --preprocess none took it), and
    # fit --preprocess '' or ',,' fitted with no preprocessing without a word
    d, _, _ = demo_files
    out = tmp_path / "m.szm"
    assert main(["fit", str(d / "data.csv"), "--schema", str(d / "schema.json"), "--synth", "mst", "--epsilon", "1",
                 "--preprocess", "none", "--out", str(out)]) == 0
    assert sz.Synthesizer.load(out).preprocess == []
    capsys.readouterr()
    for bad in ("", ",,"):
        assert main(["fit", str(d / "data.csv"), "--schema", str(d / "schema.json"), "--synth", "mst",
                     "--epsilon", "1", "--preprocess", bad, "--out", str(tmp_path / "x.szm")]) == 2
        assert f"--preprocess {bad!r} names no preprocessor" in capsys.readouterr().err
        assert not (tmp_path / "x.szm").exists()


@pytest.mark.parametrize("n", ["1", "3"])
def test_demo_on_a_tiny_table_names_its_own_option_not_sample_s(capsys, monkeypatch, n):
    # `synthzoo demo --n 3` said "pass -n ROWS" (sample's option; demo has none) when the DP estimate of the
    # row count came out 0, and `--n 1` named train_test_split, a Python function
    fit = sz.Synthesizer.fit

    def fit_to_a_zero_estimate(self, *args, **kwargs):  # the noise is secret: make its outcome certain
        out = fit(self, *args, **kwargs)
        self.n_estimate_ = 0.0
        return out

    monkeypatch.setattr(sz.Synthesizer, "fit", fit_to_a_zero_estimate)
    assert main(["demo", "--n", n]) == 2
    err = capsys.readouterr().err
    assert f"demo: a table of --n {n} row" in err and "give --n 1000 or more" in err
    assert "-n ROWS" not in err and "train_test_split" not in err


@pytest.mark.parametrize("key", ["nosuch", "owner.pub"])
def test_fit_sign_with_an_unusable_key_is_refused_before_the_fit(tmp_path, capsys, key):
    # `fit --sign nosuch` fitted (spending the budget on the private rows) and only then failed to read the key
    df, schema = make_demo(n=300, seed=0)
    df.to_csv(tmp_path / "data.csv", index=False)
    schema.to_json(tmp_path / "schema.json")
    assert main(["keygen", str(tmp_path / "owner")]) == 0
    capsys.readouterr()
    assert main(["fit", str(tmp_path / "data.csv"), "--schema", str(tmp_path / "schema.json"), "--synth", "mst",
                 "--out", str(tmp_path / "m.json"), "--sign", str(tmp_path / key)]) == 2
    err = capsys.readouterr().err
    assert "private key" in err and "fitting" not in err and not (tmp_path / "m.json").exists()


@pytest.mark.parametrize("args, said", [
    (["--test-size", "0"], "--test-size is a fraction in (0, 1) or a whole number of rows, got 0"),
    (["--test-size", "99999"], "--test-size 99,999 rows: "),
    (["--stratify", "regoin"], "--stratify 'regoin': "),
])
def test_split_errors_name_split_s_options_not_python_arguments(demo_files, tmp_path, capsys, args, said):
    # said "test_size must be a fraction ...", "test_size=99999 rows must lie in [1, 1499]" and
    # "stratify names column 'regoin', which the frame lacks": train_test_split's words
    d, _, _ = demo_files
    assert main(["split", str(d / "data.csv"), *args, "--train", str(tmp_path / "a.csv"),
                 "--test", str(tmp_path / "b.csv")]) == 2
    err = capsys.readouterr().err
    assert said in err and "test_size" not in err and "frame" not in err, err
    if "--stratify" in args:
        assert "did you mean 'region'?" in err


def test_inferred_schema_warnings_use_the_command_lines_words(tmp_path, capsys):
    # fit without --schema warned "read the file with decimal=',' (the command line's --decimal ',')",
    # "(more than max_categories=50)" and "let dp_schema choose them": Python arguments on the command line
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"x": [f"{v:.3f}".replace(".", ",") for v in rng.uniform(0, 9, 300)],
                       "c": rng.choice(["a", "b"], 300)})
    df.to_csv(tmp_path / "eu.csv", sep=";", index=False)
    assert main(["fit", str(tmp_path / "eu.csv"), "--sep", ";", "--synth", "mst", "--epsilon", "none",
                 "--out", str(tmp_path / "m.szm")]) == 0
    err = capsys.readouterr().err
    assert "pass --decimal ','" in err and "--dp-schema EPS" in err and "(more than 50)" in err, err
    assert "decimal=','" not in err and "max_categories" not in err and "dp_schema choose" not in err


def test_a_model_or_schema_file_where_a_csv_belongs_is_named(demo_files, tmp_path, capsys):
    # `eval data.csv model.szm` said the CSV "names column(s) [' \"missing\": false}', ...] more than once in its
    # header", and `fit schema.json` that it was "not a well-formed CSV file ...; check --sep"
    d, _, _ = demo_files
    assert main(["eval", str(d / "data.csv"), str(d / "model.szm"), "--schema", str(d / "schema.json"),
                 "--metrics", "tvd_2way", "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert f"synthetic: '{d / 'model.szm'}' is a synthzoo model file, not a CSV file" in err
    assert f"synthzoo sample {d / 'model.szm'} --out fake.csv" in err
    assert main(["fit", str(d / "schema.json"), "--schema", str(d / "schema.json"), "--out",
                 str(tmp_path / "m.szm")]) == 2
    assert f"data: '{d / 'schema.json'}' is a JSON document, not a CSV file" in capsys.readouterr().err


def test_an_absurd_row_count_is_refused_not_an_overflow_traceback(demo_files, tmp_path, capsys):
    # `sample -n 1e30` (a typo for 1e3) ended in "OverflowError: Python int too large to convert to C ssize_t"
    with pytest.raises(SystemExit):
        main(["sample", str(demo_files[0] / "model.szm"), "-n", "1e30", "--out", str(tmp_path / "f.csv")])
    assert "argument -n: a number of rows must be at most 2^53 (about 9e15), got '1e30'" in capsys.readouterr().err
    s = sz.Synthesizer.load(demo_files[0] / "model.szm")
    with pytest.raises(ConfigError, match=r"n must be at most 2\^53"):
        s.sample(10 ** 30)
    assert len(next(iter(s.sample_chunks(2 ** 53, chunk=5, seed=0)))) == 5  # the largest allowed starts at once


@pytest.mark.parametrize("command", ["split", "eval", "demo", "tune", "tune-sampler"])
def test_a_negative_seed_is_refused_by_its_option_not_numpys_traceback(demo_files, tmp_path, capsys, command):
    # `split/eval/demo/tune --seed -1` (and tune --sampler-seed -1) ended in numpy's
    # "ValueError: expected non-negative integer" (or "Seed must be between 0 and 2**32 - 1") traceback
    d, _, _ = demo_files
    data, schema = str(d / "data.csv"), str(d / "schema.json")
    args = {"split": ["split", data, "--train", str(tmp_path / "a.csv"), "--test", str(tmp_path / "b.csv")],
            "eval": ["eval", data, data, "--schema", schema, "--out", str(tmp_path / "r.html")],
            "demo": ["demo", "--n", "500"],
            "tune": ["tune", data, "--schema", schema, "--storage", str(tmp_path / "s.db")],
            "tune-sampler": ["tune", data, "--schema", schema, "--storage", str(tmp_path / "s.db")]}[command]
    option = "--sampler-seed" if command == "tune-sampler" else "--seed"
    for bad in ("-1", str(2 ** 63)):  # 2^63 was read, and refused later by the synthesizer as "seed"
        with pytest.raises(SystemExit) as e:
            main([*args, option, bad])
        assert e.value.code == 2
        assert f"argument {option}: a seed is a whole number in [0, 2^63), got '{bad}'" in capsys.readouterr().err


def test_tune_takes_any_seed_below_2_63_and_refuses_others_by_name(demo_files, tmp_path, capsys):
    # --sampler-seed 4294967296 (2^32) and tune(seed=2**40) ended in "ValueError: Seed must be between 0 and
    # 2**32 - 1" from Optuna's TPE sampler, after the study was opened
    pytest.importorskip("optuna")
    from tuning import tune

    d, df, schema = demo_files
    with pytest.raises(ConfigError, match=r"sampler_seed must be a non-negative integer below 2\^63, got -1"):
        tune("privsyn", df, df, schema=schema, n_trials=1, sampler_seed=-1, storage=str(tmp_path / "s.db"))
    assert not (tmp_path / "s.db").exists()
    assert main(["tune", str(d / "data.csv"), "--schema", str(d / "schema.json"), "--trials", "1", "--fixed-modules",
                 "--weights", "0,0,1", "--sampler-seed", str(2 ** 32), "--in-process",
                 "--storage", str(tmp_path / "t.db")]) == 0


def test_a_header_without_rows_and_a_written_index_are_named(demo_files, tmp_path, capsys):
    # a CSV of a header line alone said "fit needs a non-empty pandas DataFrame"; a CSV written by pandas' to_csv
    # with its index said "the table has column(s) ['Unnamed: 0'] that the schema does not describe" and no more
    d, df, _ = demo_files
    (tmp_path / "head.csv").write_text(",".join(df.columns) + "\n")
    assert main(["fit", str(tmp_path / "head.csv"), "--out", str(tmp_path / "m.szm")]) == 2
    assert f"data: '{tmp_path / 'head.csv'}' has a header line but no rows" in capsys.readouterr().err
    df.head(50).to_csv(tmp_path / "idx.csv")  # index=True, pandas' default
    assert main(["fit", str(tmp_path / "idx.csv"), "--schema", str(d / "schema.json"),
                 "--out", str(tmp_path / "m.szm")]) == 2
    err = capsys.readouterr().err
    assert "column 1 has no name in its header (such as the row index pandas' to_csv writes without " \
        "index=False); name it in the header line, or drop it" in err


def test_columns_other_than_the_schema_s_are_named_with_the_file_before_the_fit(demo_files, tmp_path, capsys):
    # a CSV whose header differs from the schema (Age for age) said "the table lacks schema column(s) ['age'] ..."
    # after "fitting ... on", without the file or what the difference was
    d, df, _ = demo_files
    renamed = tmp_path / "renamed.csv"
    df.head(100).rename(columns={"age": "Age", "income": "salary"}).to_csv(renamed, index=False)
    assert main(["fit", str(renamed), "--schema", str(d / "schema.json"), "--out", str(tmp_path / "m.szm")]) == 2
    err = capsys.readouterr().err
    assert err == (f"synthzoo: error: data: {str(renamed)!r} lacks schema column(s) ['age', 'income'] and has "
                   "column(s) ['Age', 'salary'] that the schema does not describe ('Age' is 'age' in other letter "
                   "case)\n")
    assert main(["eval", str(d / "data.csv"), str(renamed), "--schema", str(d / "schema.json"),
                 "--metrics", "tvd_2way", "--out", str(tmp_path / "r.html")]) == 2
    assert f"synthzoo: error: synthetic: {str(renamed)!r} lacks schema column(s)" in capsys.readouterr().err


def test_a_utf8_file_with_a_byte_order_mark_read_in_another_encoding_is_named(demo_files, tmp_path, capsys):
    # Excel's "CSV UTF-8" starts with a byte-order mark; read with --encoding latin-1 its first column was 'ï»¿age',
    # refused as a column the schema does not describe
    d, df, _ = demo_files
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + df.head(200).to_csv(index=False).encode())
    args = ["fit", str(bom), "--schema", str(d / "schema.json"), "--out", str(tmp_path / "m.szm")]
    assert main(args + ["--encoding", "latin-1"]) == 2
    err = capsys.readouterr().err
    assert err == (f"synthzoo: error: data: {str(bom)!r} starts with a UTF-8 byte-order mark, so it is UTF-8 text, "
                   "not latin-1: drop --encoding latin-1 (or pass --encoding utf-8)\n")
    assert main(args) == 0 and main(args + ["--encoding", "utf8"]) == 0  # the mark is dropped from 'age'


@pytest.mark.parametrize("delta, said", [("2", "--delta must be a number in (0, 0.1), got 2.0"),
                                         ("0", "--delta must be > 0 (and below 0.1), got 0")])
def test_a_delta_out_of_range_names_the_option(demo_files, tmp_path, capsys, delta, said):
    # it said "delta must be ...", the ledger's argument, not fit's option
    d, _, _ = demo_files
    assert main(["fit", str(d / "data.csv"), "--schema", str(d / "schema.json"), "--delta", delta,
                 "--out", str(tmp_path / "m.szm")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"synthzoo: error: {said}") and "delta=" not in err


def test_eval_unknown_metric_suggests_the_close_name_and_lists_only_what_eval_takes(demo_files, tmp_path, capsys):
    # 'tvd2way' listed every name, mds too, which `synthzoo eval` refuses (it needs a synthesizer factory)
    d, _, _ = demo_files
    assert main(["eval", str(d / "data.csv"), str(d / "data.csv"), "--metrics", "tvd2way",
                 "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err
    assert "--metrics: unknown metric or set 'tvd2way' (did you mean 'tvd_2way'?); choose from" in err
    assert "attr_disclosure" in err and "mds" not in err


def test_split_copies_every_field_as_the_file_writes_it(tmp_path, capsys):
    # split read the rows as typed values and wrote them back: "NA" (North America) and "None" became empty fields,
    # so missing values; 3 became 3.0 in a column with a gap, 4.000 became 4.0 and 1e3 1000.0
    lines = ["NA,02139,1.50,3", "EU,10001,2.25,", "NA,00501,3.10,7", "EU,02139,1e3,2", "None,10001,4.000,1"] * 6
    (tmp_path / "d.csv").write_text("region,zip,amount,n\n" + "\n".join(lines) + "\n")
    for extra in ([], ["--stratify", "region"]):
        assert main(["split", str(tmp_path / "d.csv"), "--test-size", "10", "--force", *extra]) == 0
        train = (tmp_path / "d.train.csv").read_text().splitlines()
        test = (tmp_path / "d.test.csv").read_text().splitlines()
        assert train[0] == test[0] == "region,zip,amount,n" and len(test) == 11
        assert sorted(train[1:] + test[1:]) == sorted(lines)
    assert sorted(x.split(",")[0] for x in test[1:]) == ["EU"] * 4 + ["NA"] * 4 + ["None"] * 2  # stratified
    with pytest.raises(SystemExit):  # the fields are copied, so no option reads numbers
        main(["split", str(tmp_path / "d.csv"), "--decimal", ","])
    assert "unrecognized arguments: --decimal" in capsys.readouterr().err


def test_sample_out_dash_writes_the_rows_to_standard_output(demo_files, tmp_path, capsys, monkeypatch):
    # `sample --out -` wrote a file named '-'; the rows are for a pipe, the messages for the terminal
    d, _, _ = demo_files
    monkeypatch.chdir(tmp_path)
    assert main(["sample", str(d / "model.szm"), "-n", "50", "--seed", "3", "--out", "-"]) == 0
    got = capsys.readouterr()
    assert not (tmp_path / "-").exists()
    assert main(["sample", str(d / "model.szm"), "-n", "50", "--seed", "3", "--out", "f.csv"]) == 0
    assert got.out == (tmp_path / "f.csv").read_text()  # the same rows, nothing else
    assert "sampled 50 rows" in got.err and "standard output" in got.err and "privacy spent" in got.err
    # a reader that stops early (`| head -1`) ends the sampling quietly, not with a BrokenPipeError traceback
    proc = subprocess.Popen([sys.executable, "-m", "synthzoo", "sample", str(d / "model.szm"), "-n", "3e6", "--out",
                             "-"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ,
                             "PYTHONPATH": str(Path(sz.__file__).parents[1])})
    assert proc.stdout.readline().decode().startswith("age,")
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0 and "Traceback" not in err, err
    assert "standard output was closed by its reader; sampling stopped" in err


def test_booleans_declared_numerical_are_said_with_schema_and_csv_fixes(tmp_path, capsys):
    # fit said "convert it first, e.g. df['b'].astype(int)" (Python), and fit --dp-schema only "has dtype bool;
    # convert it to numbers first"
    rows = "".join(f"{i % 7},{i % 2 == 0}\n" for i in range(60))
    (tmp_path / "d.csv").write_text("x,b\n" + rows)
    num = {"type": "numerical", "lower": 0, "upper": 10}
    (tmp_path / "s.json").write_text(json.dumps({"columns": {"x": num, "b": num}}))
    for extra in ([], ["--dp-schema", "0.3"]):
        assert main(["fit", str(tmp_path / "d.csv"), "--schema", str(tmp_path / "s.json"), "--epsilon", "1",
                     "--out", str(tmp_path / "m.szm"), *extra]) == 2
        err = capsys.readouterr().err
        assert "column 'b': declared numerical but holds booleans" in err, err
        assert '"categories": ["False", "True"] in the --schema file, or write it as 0 and 1 in the CSV' in err
        assert "df[" not in err and "astype" not in err


def test_dp_schema_asks_for_a_datetime_resolution_in_the_schema_file(tmp_path, capsys):
    # the warning said "Declare it in kinds (e.g. {'t': {'type': 'datetime', 'resolution': 'day'}} for dates)"
    (tmp_path / "d.csv").write_text("x,t\n" + "".join(f"{i % 7},2020-01-{i % 28 + 1:02d}\n" for i in range(60)))
    (tmp_path / "s.json").write_text(json.dumps({"columns": {
        "x": {"type": "numerical", "lower": 0, "upper": 10, "integer": True},
        "t": {"type": "datetime", "lower": "2020-01-01", "upper": "2021-01-01"}}}))
    assert main(["fit", str(tmp_path / "d.csv"), "--schema", str(tmp_path / "s.json"), "--dp-schema", "0.3",
                 "--epsilon", "1", "--synth", "privsyn", "--out", str(tmp_path / "m.szm")]) == 0
    err = capsys.readouterr().err
    assert ('column \'t\': no "resolution" declared; dp_schema does not read it from the values, so the column is '
            'measured and synthesized to the second. Give it a "resolution" in the --schema file (e.g. '
            '"resolution": "day" for dates)') in err, err
    assert "kinds" not in err and "{'type'" not in err


def test_dp_schema_integer_coded_categories_are_said_in_schema_file_words(tmp_path, capsys):
    # "list the column's public categories in kinds, or declare it {'type': 'numerical', 'integer': True}"
    (tmp_path / "d.csv").write_text("x,k\n" + "".join(f"{i % 7},{i % 3 + 1}\n" for i in range(60)))
    (tmp_path / "s.json").write_text(json.dumps({"columns": {"x": {"type": "numerical", "lower": 0, "upper": 10},
                                                             "k": {"type": "categorical", "dtype": "int64"}}}))
    assert main(["fit", str(tmp_path / "d.csv"), "--schema", str(tmp_path / "s.json"), "--dp-schema", "0.3",
                 "--epsilon", "1", "--out", str(tmp_path / "m.szm")]) == 2
    err = capsys.readouterr().err
    assert ("which dtype 'int64' cannot hold; list the column's public \"categories\" in the --schema file, or give "
            'it "type": "numerical", "integer": true to measure its bounds') in err, err
    assert "kinds" not in err and "True}" not in err


def test_dp_schema_report_says_where_to_list_categories_in_schema_file_words(tmp_path, capsys):
    # the measured schema's report ended "-- list the public categories in kinds to keep them"
    (tmp_path / "d.csv").write_text("x,c\n" + "".join(f"{i % 7},{'ab'[i % 2]}\n" for i in range(100)))
    (tmp_path / "s.json").write_text(json.dumps({"columns": {"x": {"type": "numerical", "lower": 0, "upper": 10},
                                                             "c": {"type": "categorical"}}}))
    assert main(["fit", str(tmp_path / "d.csv"), "--schema", str(tmp_path / "s.json"), "--dp-schema", "0.5",
                 "--epsilon", "1", "--synth", "privsyn", "--out", str(tmp_path / "m.szm")]) == 0
    err = capsys.readouterr().err
    assert "conform lists which, for your eyes only) -- list the public \"categories\" in the --schema file to " \
           "keep them" in err, err
    assert "in kinds" not in err  # (conform's warning says "(kinds, or the --schema file ...)": both ways)


def test_dp_schema_bounds_not_measured_says_raise_dp_schema_eps(tmp_path, capsys):
    # "give dp_schema more budget": a Python function's name, not the option that sets its budget
    (tmp_path / "d.csv").write_text("x,c\n" + "".join(f"{i % 7},{'ab'[i % 2]}\n" for i in range(60)))
    (tmp_path / "s.json").write_text(json.dumps({"columns": {"x": {"type": "numerical", "integer": True},
                                                             "c": {"type": "categorical", "categories": ["a", "b"]}}}))
    assert main(["fit", str(tmp_path / "d.csv"), "--schema", str(tmp_path / "s.json"), "--dp-schema", "0.1",
                 "--epsilon", "1", "--noise-seed", "0", "--out", str(tmp_path / "m.szm")]) == 2
    err = capsys.readouterr().err
    assert "column 'x': no value range could be measured" in err and "give --dp-schema a larger EPS, or declare" in err
    assert "dp_schema more budget" not in err

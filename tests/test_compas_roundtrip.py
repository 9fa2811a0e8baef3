"""A COMPAS-like table through every surface: a date-only column (datetime64 at midnight), a date
given as ISO text, sentinel values, rare categories and missing values keep their dtypes and date
resolution through fit, sample, save, load and the command line; ``dp_schema`` at epsilon 0.1 does
not damage it."""

import json
import re
import warnings

import numpy as np
import pandas as pd
import pytest

import synthzoo as sz
from synthzoo.cli import main as cli
from synthzoo.core.dpschema import OTHER, clipped_shares, dp_schema, dp_schema_report, public_kinds
from synthzoo.datasets import make_compas_like
from helpers import cli_fit_and_sample

DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@pytest.fixture(scope="module")
def compas():
    return make_compas_like(n=2500, seed=3)


@pytest.fixture(scope="module")
def fitted(compas):
    df, schema = compas
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sz.make("privsyn", epsilon=1.0, delta=1e-5, schema=schema, seed=0).fit(df)


def _check_release(fake: pd.DataFrame, schema):
    assert list(fake.columns) == schema.names
    assert {c: fake[c].dtype for c in fake} == {c.name: c.output_dtype for c in schema}
    dob = fake["dob"]
    assert dob.dtype == np.dtype("datetime64[ns]")
    assert (dob == dob.dt.normalize()).all()  # dates, not timestamps with random nanoseconds
    assert fake["screening_date"].map(lambda s: bool(DATE.fullmatch(s))).all()  # ISO date text, as given
    assert fake["days_b_screening_arrest"].dtype == pd.Int64Dtype()  # integer with missing values
    assert set(fake["race"]) <= set(schema["race"].categories)
    schema.validate(fake)


def test_the_generator_has_what_makes_real_extracts_hard(compas):
    df, schema = compas
    schema.validate(df)
    assert df["dob"].dtype == np.dtype("datetime64[ns]") and schema["dob"].resolution == "day"
    assert df["screening_date"].map(lambda s: bool(DATE.fullmatch(s))).all() and schema["screening_date"].dtype == "string"
    assert (df["decile_score"] == -1).any() and (df["is_recid"] == "-1").any()  # sentinels
    shares = df["race"].value_counts(normalize=True)
    assert shares[["Asian", "Native American"]].max() < 0.01 and 0.03 < shares["Other"] < 0.08
    assert 0.02 < df["days_b_screening_arrest"].isna().mean() < 0.07


def test_fit_sample_keep_dtypes_and_date_resolution(fitted, compas):
    _check_release(fitted.sample(3000, seed=1), compas[1])


def test_save_load_keeps_dtypes_resolution_and_samples(fitted, compas, tmp_path):
    fitted.save(tmp_path / "compas.szm")
    again = sz.Synthesizer.load(tmp_path / "compas.szm")
    a, b = fitted.sample(800, seed=5), again.sample(800, seed=5)
    pd.testing.assert_frame_equal(a, b)
    _check_release(b, compas[1])
    doc = json.loads((tmp_path / "compas.szm").read_text())
    assert doc["schema"]["columns"]["dob"]["resolution"] == "day" and doc["schema"]["columns"]["dob"]["lower"] == "1900-01-01"


def test_cli_round_trip_writes_dates_as_dates(compas, tmp_path, capsys):
    df, schema = compas
    text = cli_fit_and_sample(df, schema, tmp_path, 500)
    assert text["dob"].map(lambda s: bool(DATE.fullmatch(s))).all()  # no " 00:00:00", no nanoseconds
    assert text["screening_date"].map(lambda s: bool(DATE.fullmatch(s))).all()
    back = pd.read_csv(tmp_path / "fake.csv")
    schema.validate(back)
    days = back["days_b_screening_arrest"].dropna()
    assert (days == np.round(days)).all()  # an integer column with missing values is written as integers


# ------------------------------------------------------------------------------------------------ dp_schema
def test_dp_schema_at_epsilon_0_1_clips_under_2_percent_of_any_column():
    # the full 7,214 rows, the README's settings (epsilon 0.1, delta 1e-6), the public facts of a data
    # dictionary; bounds of the 8 numeric and date columns are measured under DP.  A rate, over 60 replayed
    # draws (each 0.04 CPU s): days_b_screening_arrest's spread two-sided tail is below one standard deviation
    # per bucket, and 2,000 draws of benchmarks/bench_dp_schema.py (seeds 1000-2999) clip over 2 % of it in 41
    # (2.05 %; 1 of these 60, seed 24); every other column keeps 98 % in all 2,000
    df, public = make_compas_like()
    kinds = public_kinds(public)
    over = []
    for noise_seed in range(60):
        schema, ledger = dp_schema(df, kinds, epsilon=0.1, delta=1e-6, noise_seed=noise_seed)
        assert ledger.spent().epsilon <= 0.1 + 1e-9
        damage = clipped_shares(df, schema)
        over += [(noise_seed, c) for c, v in damage.items() if v >= 0.02]
        # birth dates are bounded on year blocks over history, not power-of-two seconds around 1970
        assert schema["dob"].resolution == "day" and schema["dob"].lower <= pd.Timestamp("1945-01-01").timestamp()
        assert schema["age"].upper >= 90  # not capped at 64
        # a count is never made negative beyond a weakly evidenced -1 (it was -4 to -131072 in every draw)
        assert all(schema[c].lower >= -64 for c in ("juv_fel_count", "juv_misd_count", "priors_count")), schema
    assert len(over) <= 6 and all(c == "days_b_screening_arrest" for _, c in over), over


@pytest.mark.filterwarnings("ignore:noise_seed")
@pytest.mark.parametrize("noise_seed, column, before", [
    (1173, "dob", 0.0349),  # one 16-year block of margin after a walk that stopped short
    (1213, "dob", 0.0349),
])
def test_dp_schema_draws_that_clipped_before_now_keep_98_percent(noise_seed, column, before):
    # replayed draws (2,000 were measured by benchmarks/bench_dp_schema.py) in which stop 24's bounds
    # clipped `before` of `column`; the same noise now keeps over 98 % of every column.  (Draws 1075 for
    # priors_count and 1059 for days_b_screening_arrest were here too; since the integer buckets stop at 2^53
    # and one-signed data gets rings of the other sign, the noise of every column after the first integer one
    # is drawn in another order, so those seeds no longer replay those draws; nor, since the datetime blocks go on
    # past 1700-2260 and dob's histogram has two more, do these: they stay as two more draws that keep 98 %.)
    df, public = make_compas_like()
    schema, _ = dp_schema(df, public_kinds(public), epsilon=0.1, delta=1e-6, noise_seed=noise_seed)
    damage = clipped_shares(df, schema)
    assert damage[column] < 0.02 < before and max(damage.values()) < 0.02, damage
    # missing declared on DP evidence (2 sigma): of the 13 columns without missing values, a false one at most
    assert sum(c.missing for c in schema if c.name != "days_b_screening_arrest") <= 1
    report = dp_schema_report(schema)
    assert "days_b_screening_arrest" in report and "widened" in report


def test_dp_schema_report_is_in_privacy_report_and_says_what_was_merged(compas):
    df, _ = compas
    public = make_compas_like()[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        schema, led = dp_schema(df, public_kinds(public, categories=False), epsilon=0.3, delta=1e-6, noise_seed=0)
        fixed = sz.conform(df, schema)
        synth = sz.make("mst", epsilon=1.0, delta=1e-5, schema=schema, schema_ledger=led).fit(fixed)
    text = synth.privacy_report()
    assert "schema measured under DP (epsilon=0.3" in text and f"merged into {OTHER!r}" in text
    assert "list the public categories in kinds" in text
    released = [c for c in schema["race"].categories if c != OTHER]
    race_line = next(line for line in text.splitlines() if line.strip().startswith("race"))
    assert all(repr(c) in race_line for c in released)       # the report names what was kept (DP releases)
    # conform names, for the owner, exactly which values were merged, with their counts, and the remedy
    merged = df["race"][~df["race"].isin(released)].value_counts()
    assert len(merged) > 0
    with pytest.warns(UserWarning, match=r"race: [\d,]+ value\(s\) .* merged into '__other__'") as rec:
        sz.conform(df, schema)
    msg = next(str(w.message) for w in rec if "race:" in str(w.message))
    line = next(x for x in msg.splitlines() if x.strip().startswith("race:"))
    assert all(f"{k!r} {v:,}" in line for k, v in merged.items()) and "public categories" in line


def test_cli_dp_schema_with_a_partial_schema(compas, tmp_path, capsys):
    df, public = compas
    df.to_csv(tmp_path / "c.csv", index=False)
    (tmp_path / "partial.json").write_text(json.dumps({"name": "compas", "columns": public_kinds(public)}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # replayed noise (test-only opt-in): with secret noise a rare draw finds no range for priors_count at this
        # budget (a clear error, as dp_schema documents; seen once in CI, 0 of 60 reruns), which is not what this tests
        assert cli(["fit", str(tmp_path / "c.csv"), "--schema", str(tmp_path / "partial.json"), "--dp-schema", "0.2",
                    "--synth", "mst", "--epsilon", "1", "--noise-seed", "0", "--out", str(tmp_path / "m.szm")]) == 0
        assert cli(["sample", str(tmp_path / "m.szm"), "-n", "300", "--out", str(tmp_path / "f.csv")]) == 0
    out = capsys.readouterr()
    assert "schema measured under DP (epsilon=0.2" in out.err + out.out
    text = pd.read_csv(tmp_path / "f.csv", dtype=str, keep_default_na=False)
    # the DP schema may declare dob possibly missing (its noise is secret: a few draws in 100 do), so the
    # release may hold empty cells; every date it holds is a date, and most rows hold one
    dob = text["dob"][text["dob"] != ""]
    assert len(dob) >= len(text) // 2
    assert dob.map(lambda s: bool(DATE.fullmatch(s))).all()
    assert sz.Synthesizer.load(tmp_path / "m.szm").privacy_spent().epsilon <= 1.0 + 1e-9

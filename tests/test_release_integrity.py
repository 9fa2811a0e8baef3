"""Regression tests for the attacks on a release that the reported epsilon must survive.

Each test plays an attacker who holds the released model file (or synthetic CSV) and this code:
replaying a seed to subtract the noise, telling neighbouring inputs apart by the output's dtypes,
reading the exact row count.  See also tests/test_audit.py (empirical DP audits).
"""

import json
import math

import numpy as np
import pandas as pd
import pytest

import synthzoo as sz
from synthzoo.core.errors import PrivacySettingsWarning
from synthzoo.core.privacy.noise import NoiseSource
from synthzoo.datasets import make_demo
from synthzoo.cli import main as cli
from synthzoo.core.privacy.ledger import REPLAYABLE_WARNING


def _one_way(doc: dict) -> list[tuple[str, np.ndarray, float]]:
    """The saved one-way measurements of an MST/PGM model file: (attribute, noisy counts, sigma)."""
    out = []
    for m in doc["model_state"]["measurements"]:
        if len(m["clique"]) == 1:
            out.append((m["clique"][0], np.asarray(m["noisy"], dtype=float).reshape(m["shape"]), float(m["sigma"])))
    return out


def _recovers(one_way, noise_for) -> bool:
    """Whether subtracting candidate noise makes the one-way marginals a consistent exact release:
    every cell >= 0 and every marginal summing to the same record count (true counts always do;
    a wrong guess almost never does)."""
    totals, ok = [], True
    for k, (attr, noisy, sigma) in enumerate(one_way):
        rec = noisy - noise_for(k, noisy.shape, sigma)
        ok &= bool(np.all(rec >= -1e-6))
        totals.append(rec.sum())
    return ok and np.ptp(totals) < 1e-6


def _seed_stream_attack(seed: int):
    """The attack that worked before: the selector's noise was drawn in order from
    SeedSequence(seed).spawn(3)[1] (one normal draw per measurement)."""
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(3)[1])
    return lambda k, shape, sigma: rng.normal(0.0, sigma, size=shape)


@pytest.fixture(scope="module")
def hmeq_release(hmeq, tmp_path_factory):
    df, schema = hmeq
    path = tmp_path_factory.mktemp("release") / "mst.szm"
    synth = sz.make("mst", epsilon=1.0, delta=1e-5, schema=schema, seed=0, model={"name": "pgm", "iters": 200})
    synth.fit(df)
    synth.save(path)
    return df, schema, synth, path


def test_attack_detector_has_power():
    """Positive control: measurements made with the old seeded stream ARE recovered by the check."""
    rng = np.random.default_rng(np.random.SeedSequence(5).spawn(3)[1])
    truth = [np.array([30.0, 70.0]), np.array([10.0, 50.0, 40.0])]
    one_way = [(str(i), t + rng.normal(0, 3.0, t.shape), 3.0) for i, t in enumerate(truth)]
    assert _recovers(one_way, _seed_stream_attack(5))
    assert not _recovers(one_way, _seed_stream_attack(6))


def test_no_seed_replays_the_noise_of_a_released_file(hmeq_release):
    df, schema, synth, path = hmeq_release
    doc = json.loads(path.read_text())
    one_way = _one_way(doc)
    assert len(one_way) == len(schema)
    assert '"noise_seed"' not in path.read_text()
    saved_seed = doc["config"]["seed"]
    for seed in sorted(set(range(51)) | {saved_seed}):
        assert not _recovers(one_way, _seed_stream_attack(seed)), seed
        replay = NoiseSource(seed)  # the opt-in stream under this seed
        assert not _recovers(one_way, lambda k, shape, sigma: replay.discrete_gaussian(sigma, shape)), seed


def test_two_fits_with_the_same_seed_release_different_measurements(hmeq):
    df, schema = hmeq
    runs = [sz.make("mst", epsilon=1.0, delta=1e-5, schema=schema, seed=0, model={"name": "pgm", "iters": 50})
            .fit(df) for _ in range(2)]
    a, b = ([m.noisy for m in r.model.measurements_ if len(m.clique) == 1] for r in runs)
    assert any(not np.array_equal(x, y) for x, y in zip(a, b))
    # released counts are integers: discrete Gaussian noise on integer counts
    assert all(np.all(np.mod(x, 1) == 0) for x in a)


def test_noise_seed_opt_in_is_flagged_and_never_saved(tmp_path):
    df, schema = make_demo(n=600, seed=0)
    s = sz.make("privsyn", epsilon=1.0, schema=schema, seed=0, noise_seed=987654321).fit(df)
    assert s.replayable_noise and REPLAYABLE_WARNING in s.privacy_report()
    s.save(tmp_path / "m.szm")
    text = (tmp_path / "m.szm").read_text()
    assert "987654321" not in text and '"noise_seed"' not in text
    doc = json.loads(text)
    assert doc["privacy"]["replayable_noise"] is True and doc["warning"] == REPLAYABLE_WARNING
    loaded = sz.Synthesizer.load(tmp_path / "m.szm")
    assert loaded.replayable_noise and REPLAYABLE_WARNING in loaded.privacy_report()
    plain = sz.make("privsyn", epsilon=1.0, schema=schema, seed=0).fit(df)
    assert not plain.replayable_noise and "REPLAYABLE" not in plain.privacy_report()


# ---------------------------------------------------------------------------------- dtypes
def _neighbours():
    """A frame and its neighbour: one more record, with a missing value in an integer column.
    pandas stores the first column as int64 and the second as float64."""
    schema = sz.Schema.from_dict({"columns": {
        "n": {"type": "numerical", "lower": 0, "upper": 20, "integer": True, "missing": True},
        "c": {"type": "categorical", "categories": ["a", "b", "c", "d"], "missing": False},
        "x": {"type": "numerical", "lower": 0, "upper": 1, "missing": False}}})
    rng = np.random.default_rng(0)
    d = pd.DataFrame({"n": rng.integers(0, 21, 400), "c": rng.choice(["a", "b"], 400), "x": rng.random(400)})
    d_prime = pd.concat([d, pd.DataFrame({"n": [np.nan], "c": ["a"], "x": [0.5]})], ignore_index=True)
    assert d["n"].dtype != d_prime["n"].dtype
    return schema, d, d_prime


def test_neighbouring_frames_give_identical_dtypes():
    schema, d, d_prime = _neighbours()
    outs = [sz.make("privsyn", epsilon=1.0, schema=schema, seed=0).fit(f).sample(300) for f in (d, d_prime)]
    assert outs[0].dtypes.to_dict() == outs[1].dtypes.to_dict() == {c.name: c.output_dtype for c in schema}
    assert str(outs[0]["n"].dtype) == "Int64"  # integer with missing values allowed: nullable integer


def test_category_dtype_column_keeps_unobserved_categories_and_loads(tmp_path):
    schema, d, _ = _neighbours()
    d = d.assign(c=pd.Categorical(d["c"], categories=["a", "b"]))  # the frame saw only a and b
    s = sz.make("privsyn", epsilon=1.0, schema=schema, seed=0).fit(d)
    fake = s.sample(4000)
    assert fake["c"].notna().all() and set(fake["c"]) <= {"a", "b", "c", "d"}
    s.save(tmp_path / "m.szm")
    again = sz.Synthesizer.load(tmp_path / "m.szm")  # used to crash on a 'category' dtype
    pd.testing.assert_frame_equal(again.sample(50, seed=1), s.sample(50, seed=1))


def test_neighbouring_frames_give_identical_csv_through_the_cli(tmp_path, capsys):
    schema, d, d_prime = _neighbours()
    schema.to_json(tmp_path / "schema.json")
    texts = []
    for i, frame in enumerate((d, d_prime)):
        frame.to_csv(tmp_path / f"d{i}.csv", index=False)
        assert cli(["fit", str(tmp_path / f"d{i}.csv"), "--schema", str(tmp_path / "schema.json"),
                    "--out", str(tmp_path / f"m{i}.szm")]) == 0
        assert cli(["sample", str(tmp_path / f"m{i}.szm"), "-n", "200", "--out", str(tmp_path / f"f{i}.csv")]) == 0
        texts.append((tmp_path / f"f{i}.csv").read_text())
    # the integer column is written as integers in both releases (float64 would write "3.0")
    for t in texts:
        col = pd.read_csv(pd.io.common.StringIO(t), dtype=str)["n"].dropna()
        assert not col.str.contains(r"\.").any()


# ------------------------------------------------------------------------- row count
def test_default_sample_size_is_a_dp_estimate_not_the_row_count(tmp_path):
    df, schema = make_demo(n=3000, seed=0)
    s = sz.make("privsyn", epsilon=1.0, schema=schema, seed=0).fit(df)
    assert math.isfinite(s.n_estimate_) and abs(s.n_estimate_ - len(df)) < 0.05 * len(df)
    assert len(s.sample()) == round(s.n_estimate_)
    s.save(tmp_path / "m.szm")
    df.to_csv(tmp_path / "d.csv", index=False)
    assert cli(["sample", str(tmp_path / "m.szm"), "--out", str(tmp_path / "f.csv")]) == 0
    assert len(pd.read_csv(tmp_path / "f.csv")) == round(s.n_estimate_)
    # nothing in the file is the exact count
    doc = json.loads((tmp_path / "m.szm").read_text())
    assert doc["n_estimate"] == s.n_estimate_


def test_a_private_release_does_not_carry_a_row_count_given_in_the_schema(tmp_path):
    # the shipped datasets' schemas state their exact row count; a private model file copied it next to its DP count
    df, schema = make_demo(n=300, seed=0)
    given = sz.Schema(list(schema.columns), {**schema.meta, "rows": len(df)})
    with pytest.warns(PrivacySettingsWarning, match="'rows' \\(300\\) is not saved with a private release"):
        s = sz.make("mst", epsilon=1.0, schema=given).fit(df)
    s.save(tmp_path / "m.szm")
    assert "rows" not in s.schema_.meta and '"rows"' not in (tmp_path / "m.szm").read_text()
    assert "rows" in sz.make("mst", epsilon=None, schema=given).fit(df).schema_.meta  # non-private: as given

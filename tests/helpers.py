"""Test data and test doubles shared by several test files (small tables with known structure,
a stand-in measurement model, budgets).  Imported as ``helpers`` (the tests folder is on the path)."""

import numpy as np
import pandas as pd

from synthzoo.core.base import Model
from synthzoo.core.domain import Domain, EncodedData, Measurement
from synthzoo.core.privacy.ledger import PrivacyLedger
from synthzoo.core.schema import Column
from synthzoo.select.mst import independent_estimate


def chain_data(n=3000, seed=0) -> EncodedData:
    """Five attributes: a -> b -> c -> e <- d (tree-structured dependencies)."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, n)
    b = (a + rng.integers(0, 2, n)) % 4
    c = (2 * b + rng.integers(0, 2, n)) % 5
    d = rng.integers(0, 2, n)
    e = (c + d) % 3
    dom = Domain(list("abcde"), [3, 4, 5, 2, 3])
    return EncodedData(np.stack([a, b, c, d, e], axis=1), dom)


class ProductModel(Model):
    """Test double: any measurement model works with the selectors. Estimates every marginal as the
    product of the measured one-way marginals."""

    _tags = {"answers_marginals": True}

    def fit(self, domain, measurements, rng):
        self.domain_ = domain
        self.one_ = {m.clique[0]: m.noisy for m in measurements if len(m.clique) == 1}
        self.fits_ = getattr(self, "fits_", 0) + 1
        return self

    def project(self, clique):
        return independent_estimate(self.one_, tuple(clique))

    def sample(self, n, rng):
        return np.zeros((n, len(self.domain_)), dtype=np.int64)

    def get_state(self):
        return {}

    def set_state(self, state, domain):
        pass


def selector_stage(epsilon, share=1.0, noise_seed=None):
    ledger = PrivacyLedger(epsilon, 1e-5, noise_seed=noise_seed)
    return ledger, ledger.stage("select", share)


def small_table(n=3000, seed=0) -> EncodedData:
    """Four attributes; b depends strongly on a, the others are weakly tied."""
    rng = np.random.default_rng(seed)
    a = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
    b = np.where(rng.random(n) < 0.8, a, rng.integers(0, 4, size=n))
    c = rng.integers(0, 2, size=n)
    e = np.where(rng.random(n) < 0.3, c * 2, rng.integers(0, 3, size=n))
    return EncodedData(np.stack([a, b, c, e], axis=1), Domain(["a", "b", "c", "e"], [3, 4, 2, 3]))


def exact(data, cliques):
    return [Measurement(cl, data.project(cl), 0.0) for cl in cliques]


def preprocess_budget(epsilon=1.0, share=0.1, noise_seed=None):
    """The preprocessing Budget the brief prescribes (a non-private one for epsilon=None)."""
    return PrivacyLedger(epsilon, 1e-5, noise_seed=noise_seed).stage("preprocess", share)


def numeric_frame(n=3000, seed=0, missing=0.0):
    rng = np.random.default_rng(seed)
    age = rng.integers(17, 91, n).astype(float)
    income = np.concatenate([rng.exponential(2e4, n - n // 10), rng.uniform(0, 1e6, n // 10)])
    income = np.clip(income, 0, 1e6)
    dates = pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.uniform(0, 700, n), unit="D")
    df = pd.DataFrame({"age": age, "income": income, "when": pd.Series(dates)})
    if missing:
        na = rng.random(n) < missing
        df.loc[na, "age"] = np.nan
        df.loc[rng.random(n) < missing, "when"] = pd.NaT
    cols = [Column("age", "numerical", lower=17, upper=90, integer=True, missing=missing > 0),
            Column("income", "numerical", lower=0, upper=1e6),
            Column("when", "datetime", lower="2020-01-01", upper="2021-12-31", missing=missing > 0)]
    return df, cols


def categorical_frame(n=5000, seed=0, missing=0.0):
    rng = np.random.default_rng(seed)
    cats = ["A", "B", "C", "r1", "r2", "r3"]
    p = np.array([0.5, 0.3, 0.2 - 3e-4, 1e-4, 1e-4, 1e-4])
    s = pd.Series(rng.choice(cats, n, p=p / p.sum()), dtype=object)
    s.iloc[:3] = ["r1", "r2", "r3"]  # each rare category occurs at least once
    if missing:
        s[rng.random(n) < missing] = np.nan
    return pd.DataFrame({"x": s}), [Column("x", "categorical", categories=cats, missing=missing > 0)]


def correlated_table(n=3000, seed=0):
    """A chain a -> b -> c plus an independent d and a noisy copy e of a."""
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 4, n)
    b = (a + rng.integers(0, 2, n)) % 5
    c = (2 * b + rng.integers(0, 3, n)) % 7
    d = rng.integers(0, 3, n)
    e = np.where(rng.random(n) < 0.8, a, rng.integers(0, 4, n))
    dom = Domain(list("abcde"), [4, 5, 7, 3, 4])
    return EncodedData(np.stack([a, b, c, d, e], axis=1), dom)


def skewed_table(n=2000, missing=0.3, number="gamma"):
    """A category of 90 % beside four rare ones and a number (``"gamma"``: skewed, ``"normal"``) missing
    in ``missing`` of the rows: what a decoder or denoiser that DP-SGD barely moves from its start
    draws far too evenly."""
    import synthzoo as sz

    rng = np.random.default_rng(5)
    cat = rng.choice(list("abcde"), size=n, p=[0.9, 0.04, 0.03, 0.02, 0.01])
    x = (rng.gamma(2.0, 10.0, n) if number == "gamma" else rng.normal(50.0, 10.0, n)).clip(0, 100)
    x[rng.random(n) < missing] = np.nan
    schema = sz.Schema.from_dict({"columns": {
        "c": {"kind": "categorical", "categories": list("abcde")},
        "x": {"kind": "numerical", "lower": 0, "upper": 100, "missing": True}}})
    return pd.DataFrame({"c": cat, "x": x}), schema


def fit_from_the_start(df, schema, preprocess: str, model: dict):
    """A private fit of :func:`skewed_table` at epsilon 20 with replayed noise (test-only) and 4,000 rows of
    it: ``(synthesizer, notes of its 'starting biases' releases, share of "a", share missing, rows)``."""
    import synthzoo as sz

    s = sz.Synthesizer(preprocess=[preprocess], model=model, epsilon=20.0, schema=schema, seed=0,
                       noise_seed=11).fit(df)
    notes = [c.note for c in s.ledger_.charges if "starting biases" in c.note]
    fake = s.sample(4000, seed=1)
    return s, notes, (fake["c"] == "a").mean(), fake["x"].isna().mean(), fake


def load_as_written_before(synth, tmp_path, params, state=()):
    """``synth`` saved, then loaded from a copy of its file without the model parameters ``params`` (in its
    config and its state) and the state entries ``state``: a file written before they existed.  Returns
    ``(loaded synthesizer, that document)``."""
    import json

    import synthzoo as sz

    synth.save(tmp_path / "m.szm")
    doc = json.loads((tmp_path / "m.szm").read_text())
    for key in params:
        del doc["config"]["model"][key], doc["model_state"]["params"][key]
    for key in state:
        del doc["model_state"][key]
    (tmp_path / "old.szm").write_text(json.dumps(doc))
    return sz.Synthesizer.load(tmp_path / "old.szm"), doc


def schema_features(df: pd.DataFrame, schema):
    """``df`` as continuous features on the public schema alone (one-hot categories, numbers scaled
    on the bounds): what the record models fit."""
    from synthzoo.core.features import FeatureData, FeatureTable, OneHot, ScaledNumber

    table = FeatureTable(schema, {c.name: OneHot(c) if c.kind == "categorical" else ScaledNumber(c) for c in schema})
    return FeatureData(table.transform(df, np.random.default_rng(0)), table)


def cli_fit_and_sample(df: pd.DataFrame, schema, tmp_path, n: int) -> pd.DataFrame:
    """``synthzoo fit`` (mst, epsilon 1) on ``df`` written as a CSV with ``schema``'s file, then ``synthzoo
    sample -n n``: the sampled CSV as text (no value parsed, "NA" kept), as a user's next program reads it."""
    import warnings

    from synthzoo.cli import main as cli

    df.to_csv(tmp_path / "in.csv", index=False)
    schema.to_json(tmp_path / "schema.json")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert cli(["fit", str(tmp_path / "in.csv"), "--schema", str(tmp_path / "schema.json"), "--synth", "mst",
                    "--epsilon", "1", "--out", str(tmp_path / "m.szm")]) == 0
        assert cli(["sample", str(tmp_path / "m.szm"), "-n", str(n), "--out", str(tmp_path / "fake.csv")]) == 0
    return pd.read_csv(tmp_path / "fake.csv", dtype=str, keep_default_na=False)

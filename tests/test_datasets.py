"""The built-in demo table, the shared-dataset loader and the train/test split."""

import json

import numpy as np
import pandas as pd
import pytest

from synthzoo.core.errors import ConfigError
from synthzoo.core.schema import Schema
from synthzoo.datasets import datasets_root, demo_schema, load_shared, make_demo, train_test_split


@pytest.fixture(scope="module")
def demo():
    return make_demo(5000, seed=0)


def test_demo_frame_validates_against_its_schema(demo):
    df, schema = demo
    assert df.shape == (5000, 11)
    assert list(df.columns) == schema.names
    assert schema.validate(df) is df  # nothing outside the bounds, nothing to clip
    assert schema.meta["target"] == "churn"
    kinds = {c.name: c.kind for c in schema}
    assert sorted(set(kinds.values())) == ["categorical", "datetime", "numerical"]
    assert pd.api.types.is_datetime64_any_dtype(df["signup_date"])
    assert pd.api.types.is_integer_dtype(df["age"]) and pd.api.types.is_integer_dtype(df["purchases"])


def test_demo_missing_values_where_the_schema_allows_them(demo):
    df, schema = demo
    with_na = {c for c in df.columns if df[c].isna().any()}
    assert with_na == {c.name for c in schema if c.missing} == {"income", "avg_order_value", "satisfaction"}
    assert 0.02 < df["income"].isna().mean() < 0.07
    # structural missingness: no purchases, no average order value
    assert (df["avg_order_value"].isna() == (df["purchases"] == 0)).all()


def test_demo_is_reproducible():
    a, sa = make_demo(800, seed=3)
    b, sb = make_demo(800, seed=3)
    pd.testing.assert_frame_equal(a, b)
    assert sa.to_dict() == sb.to_dict()
    c, _ = make_demo(800, seed=4)
    assert not a.equals(c)


def test_demo_schema_is_public_not_read_from_the_sample():
    small, s1 = make_demo(50, seed=1)
    _, s2 = make_demo(3000, seed=2)
    assert s1.to_dict() == s2.to_dict() == demo_schema().to_dict() and "rows" not in s1.meta
    # the bounds are the design's, wider than what a small sample shows
    assert s1["income"].upper == 400_000 > small["income"].max()
    s1.validate(small)


def test_demo_has_real_dependencies(demo):
    df, _ = demo
    med = df.groupby("education")["income"].median()
    assert med["doctorate"] > med["master"] > med["bachelor"] > med["secondary"] > med["primary"]
    by_age = df.groupby(pd.cut(df["age"], [17, 25, 45, 60, 90]), observed=True)["income"].median()
    assert by_age.iloc[1] > 1.8 * by_age.iloc[0]  # careers start, then income grows
    assert df["income"].skew() > 1.0
    rho = df[["income", "purchases"]].corr(method="spearman").iloc[0, 1]
    assert rho > 0.25
    churn_sat = df.groupby("churn")["satisfaction"].mean()
    assert churn_sat["no"] - churn_sat["yes"] > 0.4
    assert df.groupby("churn")["purchases"].mean()["no"] > 1.5 * df.groupby("churn")["purchases"].mean()["yes"]
    young, old = df[df["age"] < 30], df[df["age"] >= 60]
    assert (young["channel"] == "mobile").mean() > 3 * (old["channel"] == "mobile").mean()
    assert young["signup_date"].median() > old["signup_date"].median() + pd.Timedelta(days=700)
    assert (df.loc[df["occupation"] == "retired", "age"] >= 60).all()


def test_demo_has_rare_categories(demo):
    df, schema = demo
    share = df["occupation"].value_counts(normalize=True)
    rare = share[share < 0.005]
    assert len(rare) >= 2 and set(rare.index) <= set(schema["occupation"].categories)
    assert (df["region"] == "overseas").mean() < 0.02


def test_demo_bad_arguments():
    for n in (0, -5, 2.5, "10", True):
        with pytest.raises(ConfigError, match="n must"):
            make_demo(n)
    with pytest.raises(ConfigError, match="seed"):
        make_demo(10, seed="x")
    df, schema = make_demo(1)
    schema.validate(df)


# ------------------------------------------------------------------------------------ load_shared
def _fake_dataset(root, name="toy"):
    folder = root / name
    folder.mkdir(parents=True)
    pd.DataFrame({"x": [1, 2, 3], "c": ["a", "b", "a"], "d": ["2020-01-01", "2020-06-01", "2021-01-01"]}) \
        .to_csv(folder / f"{name}.csv", index=False)
    with open(folder / "schema.json", "w") as f:
        json.dump({"name": name, "columns": {
            "x": {"type": "numerical", "lower": 0, "upper": 10, "integer": True},
            "c": {"type": "categorical", "categories": ["a", "b"]},
            "d": {"type": "datetime", "lower": "2019-01-01", "upper": "2022-01-01"}}}, f)
    return folder


def test_load_shared_reads_csv_and_schema(tmp_path):
    _fake_dataset(tmp_path)
    df, schema = load_shared("toy", root=tmp_path)
    assert list(df.columns) == ["x", "c", "d"] and len(df) == 3
    assert pd.api.types.is_datetime64_any_dtype(df["d"])
    schema.validate(df)


def test_load_shared_uses_the_environment_variable(tmp_path, monkeypatch):
    _fake_dataset(tmp_path)
    monkeypatch.setenv("SYNTHZOO_DATASETS", str(tmp_path))
    assert datasets_root() == tmp_path
    df, _ = load_shared("toy")
    assert len(df) == 3


def test_load_shared_says_where_it_looked(tmp_path):
    _fake_dataset(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"nope.*available there: \['toy'\]") as e:
        load_shared("nope", root=tmp_path)
    assert str(tmp_path / "nope") in str(e.value)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_shared("toy", root=tmp_path / "elsewhere")
    with pytest.raises(ConfigError):
        load_shared("../etc", root=tmp_path)


def test_csv_reading_keeps_listed_categories_spelt_as_missing_values_or_with_leading_zeros(tmp_path):
    # before: datasets.read_csv (so load_shared and the bench grid's CSV data) read with pandas' defaults:
    # the listed category "NA" became a missing value (SchemaError on validate) and "02139" the number 2139
    from synthzoo.bench.grid import _load
    from synthzoo.datasets import read_csv
    schema = Schema.from_dict({"columns": {
        "x": {"type": "numerical", "lower": 0, "upper": 3},
        "region": {"type": "categorical", "categories": ["NA", "EU", "AS"]},
        "zip": {"type": "categorical", "categories": ["02139", "10001"]}}})
    folder = tmp_path / "toy"
    folder.mkdir()
    (folder / "toy.csv").write_text("x,region,zip\n1.5,NA,02139\n2.0,EU,10001\n0.5,AS,02139\n")
    schema.to_json(folder / "schema.json")
    expected = {"x": [1.5, 2.0, 0.5], "region": ["NA", "EU", "AS"], "zip": ["02139", "10001", "02139"]}
    for df in (read_csv(folder / "toy.csv", schema), load_shared("toy", root=tmp_path)[0],
               _load(str(folder / "toy.csv"), str(folder / "schema.json"), None)[1]):
        assert df.to_dict("list") == expected
        schema.validate(df)


def test_default_root_is_next_to_the_repository(monkeypatch):
    monkeypatch.delenv("SYNTHZOO_DATASETS", raising=False)
    import synthzoo.datasets as mod
    from pathlib import Path
    assert datasets_root() == Path(mod.__file__).resolve().parents[2] / "shared" / "datasets"


@pytest.fixture
def shared_root():
    root = datasets_root()
    if not (root / "adult").is_dir():
        pytest.skip(f"shared datasets are absent (looked in {root})")
    return root


@pytest.mark.parametrize("name", ["adult", "hmeq", "housing", "adult_pgm"])
def test_shared_datasets_load_and_validate(shared_root, name):
    if not (shared_root / name).is_dir():
        pytest.skip(f"{shared_root / name} is absent")
    df, schema = load_shared(name)
    assert isinstance(schema, Schema) and len(df) > 1000
    schema.validate(df)


# ------------------------------------------------------------------------------------ split
def test_train_test_split_is_a_reproducible_partition():
    df = pd.DataFrame({"i": np.arange(1000), "y": np.r_[np.zeros(900), np.ones(100)]})
    tr, te = train_test_split(df, test_size=0.2, seed=5)
    assert len(tr) == 800 and len(te) == 200
    assert sorted(np.r_[tr["i"], te["i"]].tolist()) == list(range(1000))
    tr2, te2 = train_test_split(df, test_size=0.2, seed=5)
    pd.testing.assert_frame_equal(te, te2)
    _, te3 = train_test_split(df, test_size=0.2, seed=6)
    assert set(te["i"]) != set(te3["i"])
    _, te4 = train_test_split(df, test_size=150, seed=0)
    assert len(te4) == 150
    trs, tes = train_test_split(df, test_size=0.2, seed=0, stratify="y")
    assert tes["y"].sum() == 20 and trs["y"].sum() == 80


def test_train_test_split_bad_arguments():
    df = pd.DataFrame({"a": range(10)})
    for bad in (0.0, 1.0, 0, 10, "0.2", True):
        with pytest.raises(ConfigError, match="test_size"):
            train_test_split(df, test_size=bad)
    with pytest.raises(ConfigError, match="'zz'"):
        train_test_split(df, stratify="zz")
    with pytest.raises(ConfigError, match="2 rows"):
        train_test_split(df.iloc[:1])


def test_wide_table_validates_and_has_its_designed_structure():
    from synthzoo.datasets import make_wide, wide_schema, wide_structure

    df, schema = make_wide(3000, n_columns=100, seed=0)
    assert df.shape == (3000, 100) and list(df.columns) == schema.names
    assert schema.validate(df) is df
    assert schema.to_dict() == wide_schema(100).to_dict()  # public: fixed by n_columns, not by the rows
    kinds = {c.kind for c in schema}
    assert kinds == {"categorical", "numerical"}
    assert {c.name for c in schema if c.missing} >= {c for c in df.columns if df[c].isna().any()}
    # the designed chain carries signal between neighbours; far, unlinked columns are near independent
    structure = wide_structure(100)
    num = [j for j, c in enumerate(structure) if c["kind"] != "categorical" and not c["missing"]]
    pairs = [(a, b) for a, b in zip(num, num[1:]) if b == a + 1]
    assert pairs
    near = np.mean([abs(df.iloc[:, a].rank().corr(df.iloc[:, b].rank())) for a, b in pairs])
    far_pairs = [(a, b) for a in num for b in num if b > a + 20 and a not in structure[b]["parents"]][:30]
    far = np.mean([abs(df.iloc[:, a].rank().corr(df.iloc[:, b].rank())) for a, b in far_pairs])
    assert near > 0.3 > 0.1 > far
    b, _ = make_wide(3000, n_columns=100, seed=0)
    pd.testing.assert_frame_equal(df, b)
    with pytest.raises(ConfigError, match="n_columns"):
        make_wide(10, n_columns=1)
    with pytest.raises(ConfigError, match="n must"):
        make_wide(0)

"""Built-in demo table and loaders for the shared benchmark datasets.

* :func:`make_demo` generates a realistic mixed-type "customers" table from a fixed causal
  model (no files, no downloads), with the public :class:`Schema` of its design.
* :func:`make_compas_like` generates a table shaped like ProPublica's COMPAS extract (dates, a
  date given as text, sentinels, rare categories, missing values), with its public schema.
* :func:`make_wide` generates a table of many mixed columns (100 by default) with known structure
  (:func:`wide_structure`), for scaling tests.
* :func:`load_shared` reads ``shared/datasets/<name>/`` (CSV + ``schema.json``).
* :func:`train_test_split` splits a frame reproducibly (optionally stratified).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd

from .core import csvfile
from .core.errors import ConfigError, SchemaError
from .core.params import check_seed
from .core.schema import Column, Schema, numeric_values

EDUCATION = ["primary", "secondary", "vocational", "bachelor", "master", "doctorate"]
OCCUPATIONS = ["professional", "manager", "clerical", "sales", "service", "technician", "manual", "student",
               "retired", "unemployed", "artist", "farmer", "military", "clergy"]
REGIONS = ["north", "south", "east", "west", "central", "overseas"]
CHANNELS = ["web", "mobile", "store", "phone"]
SIGNUP_START, SIGNUP_END = pd.Timestamp("2016-01-01"), pd.Timestamp("2024-12-31")


def demo_schema() -> Schema:
    """The public schema of :func:`make_demo`: bounds and categories fixed by the generator's design."""
    cols = [
        Column("age", "numerical", lower=18, upper=90, integer=True),
        Column("education", "categorical", categories=EDUCATION),
        Column("occupation", "categorical", categories=OCCUPATIONS),
        Column("region", "categorical", categories=REGIONS),
        Column("income", "numerical", lower=0, upper=400_000, missing=True, decimals=0),
        Column("signup_date", "datetime", lower=SIGNUP_START, upper=SIGNUP_END),
        Column("channel", "categorical", categories=CHANNELS),
        Column("purchases", "numerical", lower=0, upper=300, integer=True),
        Column("avg_order_value", "numerical", lower=0, upper=2_000, missing=True, decimals=2),
        Column("satisfaction", "numerical", lower=1, upper=5, integer=True, missing=True),
        Column("churn", "categorical", categories=["no", "yes"]),
    ]
    meta = {"name": "demo_customers", "target": "churn", "task": "binary classification",
            "source": "synthzoo.datasets.make_demo: generated from a fixed model; no real people. "
                      "income is missing for some (more often high earners), avg_order_value is missing "
                      "exactly when purchases == 0, satisfaction when the survey went unanswered."}
    return Schema(cols, meta)  # no row count: a schema describes the domain, not one table of it


def _pick(rng: np.random.Generator, weights: np.ndarray) -> np.ndarray:
    """One index per row from unnormalised row weights (Gumbel-max trick)."""
    with np.errstate(divide="ignore"):
        return np.argmax(np.log(weights) + rng.gumbel(size=weights.shape), axis=1)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def make_demo(n: int = 5000, seed: int = 0) -> tuple[pd.DataFrame, Schema]:
    """A synthetic "customers" table of ``n`` rows and its public schema; same seed, same frame.

    Eleven columns with real dependencies, so that 2-way marginals carry signal:
    ``age`` (integer) drives ``education`` (ordered levels; younger people studied longer),
    ``occupation`` (students, retirees; education shifts the mix; rare ``military``,
    ``clergy``, ``farmer``), ``signup_date`` (the young joined later) and ``channel``
    (mobile vs. store/phone).  ``income`` (skewed, log-normal) rises with education and
    age and depends on occupation and ``region``; ``purchases`` (integer, over-dispersed)
    grows with income and tenure; ``avg_order_value`` follows income and is missing exactly
    when there were no purchases; ``satisfaction`` (1-5, partly missing) depends on channel
    and region; ``churn`` ("yes"/"no") is likelier with low satisfaction, few purchases and
    short tenure.  ``income`` is missing for about 4% (more often for high earners).
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ConfigError(f"n must be a positive integer, got {n!r}")
    check_seed(seed)
    n = int(n)
    rng = np.random.default_rng(int(seed))

    # age: a working-age and an older mode
    older = rng.random(n) < 0.4
    age = np.where(older, rng.normal(60, 12, n), rng.normal(36, 10, n))
    age = np.clip(np.rint(age), 18, 90).astype(np.int64)

    # education: ordered logit, younger cohorts study longer
    latent = -0.03 * (age - 45) + rng.logistic(0, 1, n)
    edu = np.searchsorted(np.array([-2.6, -0.6, 0.3, 1.7, 3.4]), latent)

    # occupation: education shifts the mix; age decides students and retirees
    e = edu[:, None].astype(float)
    w = np.hstack([0.03 + 0.10 * e, 0.03 + 0.05 * e, np.full_like(e, 0.14), np.full_like(e, 0.13),
                   np.maximum(0.25 - 0.04 * e, 0.03), np.full_like(e, 0.12), np.maximum(0.32 - 0.07 * e, 0.01),
                   np.zeros_like(e), np.zeros_like(e), np.full_like(e, 0.05), np.full_like(e, 0.012),
                   np.full_like(e, 0.008), np.full_like(e, 0.004), np.full_like(e, 0.002)])
    w[:, 7] = np.where(age < 25, 1.0, np.where(age < 30, 0.05, 0.0))          # student
    w[:, 8] = np.where(age >= 67, 4.0, np.where(age >= 60, 0.4, 0.0))          # retired
    occ = _pick(rng, w)

    region = rng.choice(len(REGIONS), size=n, p=[0.18, 0.27, 0.20, 0.24, 0.103, 0.007])

    # income: log-normal, concave in age, driven by education, occupation and region
    occ_eff = np.array([0.35, 0.45, 0.0, 0.05, -0.2, 0.15, -0.1, -1.3, -0.45, -1.0, -0.3, -0.2, 0.0, -0.3])
    reg_eff = np.array([0.05, -0.15, 0.0, 0.15, 0.1, -0.3])
    a = (age - 18) / 10.0
    log_inc = (9.7 + 0.22 * edu + 0.45 * a - 0.055 * a ** 2 + occ_eff[occ] + reg_eff[region]
               + rng.normal(0, 0.45, n))
    income_true = np.clip(np.round(np.exp(log_inc), -1), 0, 400_000)

    # signup date: younger customers joined later
    frac = _sigmoid(0.4 - 0.04 * (age - 45) + rng.normal(0, 1.0, n))
    span_days = (SIGNUP_END - SIGNUP_START).days
    days = np.floor(frac * span_days).astype(np.int64)
    signup = pd.Series(SIGNUP_START + pd.to_timedelta(days, unit="D")).astype("datetime64[ns]")
    tenure = (SIGNUP_END - signup).dt.days.to_numpy() / 365.25

    # channel: the young buy on their phones, the old in the store or by phone
    cw = np.column_stack([np.full(n, 1.0), np.exp(-0.06 * (age - 30)) * 1.5,
                          0.3 + 0.02 * np.maximum(age - 30, 0), 0.05 + 0.012 * np.maximum(age - 45, 0)])
    channel = _pick(rng, cw)

    # purchases: over-dispersed counts (gamma-Poisson) rising with income and tenure
    lam = np.exp(0.9 + 0.55 * np.log(income_true / 40_000 + 1e-3) + 0.15 * tenure
                 + np.array([0.1, 0.2, -0.1, -0.3])[channel])
    purchases = np.clip(rng.poisson(lam * rng.gamma(2.0, 0.5, n)), 0, 300).astype(np.int64)

    # average order value: follows income; undefined without purchases
    aov = np.exp(3.7 + 0.4 * np.log(income_true / 40_000 + 1e-3) + rng.normal(0, 0.35, n))
    aov = np.clip(np.round(aov, 2), 0, 2_000)
    aov[purchases == 0] = np.nan

    # satisfaction 1-5: channel and region matter; about 9% never answered the survey
    sat_lat = (3.4 + np.array([0.0, 0.2, 0.3, -0.6])[channel] + np.array([0, -0.1, 0, 0.1, 0.2, -0.5])[region]
               + 0.02 * np.minimum(purchases, 30) + rng.normal(0, 0.9, n))
    satisfaction = np.clip(np.rint(sat_lat), 1, 5).astype(float)
    satisfaction[rng.random(n) < 0.09] = np.nan

    # churn: low satisfaction, few purchases, short tenure
    s = np.where(np.isnan(satisfaction), 2.8, satisfaction)
    logit = (1.5 - 1.1 * (s - 3.0) - 1.0 * np.log1p(purchases) - 0.2 * tenure
             + 0.8 * (channel == 3) + 0.8 * (occ == 9) - 0.015 * (age - 45))
    churn = np.where(rng.random(n) < _sigmoid(logit), "yes", "no")

    # income non-response, likelier for high earners (missing not at random)
    income = income_true.copy()
    top = income_true > np.quantile(income_true, 0.9)
    income[rng.random(n) < np.where(top, 0.12, 0.03)] = np.nan

    df = pd.DataFrame({
        "age": age,
        "education": np.asarray(EDUCATION, dtype=object)[edu],
        "occupation": np.asarray(OCCUPATIONS, dtype=object)[occ],
        "region": np.asarray(REGIONS, dtype=object)[region],
        "income": income,
        "signup_date": signup,
        "channel": np.asarray(CHANNELS, dtype=object)[channel],
        "purchases": purchases,
        "avg_order_value": aov,
        "satisfaction": satisfaction,
        "churn": churn.astype(object),
    })
    return df, demo_schema()


# -------------------------------------------------------------------------------------------------
# a COMPAS-like table: the kind of real-world extract users bring
# -------------------------------------------------------------------------------------------------
RACES = ["African-American", "Caucasian", "Hispanic", "Other", "Asian", "Native American"]
RACE_SHARES = [0.512, 0.340, 0.088, 0.052, 0.0044, 0.0036]
AGE_CATS = ["Less than 25", "25 - 45", "Greater than 45"]
SCREEN_START, SCREEN_END = pd.Timestamp("2013-01-01"), pd.Timestamp("2014-12-31")


def compas_schema() -> Schema:
    """The public schema of :func:`make_compas_like`: what a data owner could publish about a
    pretrial risk-assessment extract without looking at its rows."""
    cols = [
        Column("sex", "categorical", categories=["Male", "Female"]),
        Column("dob", "datetime", lower="1900-01-01", upper="2000-12-31"),          # days, as a datetime
        Column("age", "numerical", lower=18, upper=100, integer=True),
        Column("age_cat", "categorical", categories=AGE_CATS),
        Column("race", "categorical", categories=RACES),
        Column("juv_fel_count", "numerical", lower=0, upper=50, integer=True),
        Column("juv_misd_count", "numerical", lower=0, upper=50, integer=True),
        Column("priors_count", "numerical", lower=0, upper=60, integer=True),
        Column("screening_date", "datetime", lower="2013-01-01", upper="2014-12-31", dtype="string"),
        Column("days_b_screening_arrest", "numerical", lower=-500, upper=1100, integer=True, missing=True),
        Column("c_charge_degree", "categorical", categories=["F", "M"]),
        Column("decile_score", "numerical", lower=-1, upper=10, integer=True),
        Column("is_recid", "categorical", categories=["-1", "0", "1"]),
        Column("two_year_recid", "categorical", categories=["0", "1"]),
    ]
    meta = {"name": "compas_like", "target": "two_year_recid", "task": "binary classification",
            "source": "synthzoo.datasets.make_compas_like: generated from a fixed model shaped after ProPublica's "
                      "COMPAS two-year extract; no real people. dob is a date-only datetime column, screening_date "
                      "ISO date text; decile_score -1 and is_recid -1 are sentinels ('not scored', 'unknown'); "
                      "days_b_screening_arrest is missing for some rows; three race categories are rare."}
    return Schema(cols, meta)


def make_compas_like(n: int = 7214, seed: int = 0) -> tuple[pd.DataFrame, Schema]:
    """A table shaped like ProPublica's COMPAS two-year extract (7,214 rows), and its public schema.

    What makes real extracts hard, on purpose: a date-only birth date (``dob``, datetime64 at
    midnight, 1919-1996) and a screening date given as ISO text (``screening_date``); sentinel values
    (``decile_score == -1``, "not scored", ~0.6 %; ``is_recid == "-1"``, ~3 %); rare categories (race:
    Asian 0.44 %, Native American 0.36 %, Other 5.2 %); missing values (``days_b_screening_arrest``,
    ~4 %, whose values pile up at -1 and 0 with a long two-sided tail); heavy-tailed counts
    (``priors_count``, ``juv_*``).  ``age`` and ``age_cat`` follow from ``dob`` and the screening date;
    the scores and outcomes depend on age, priors and charge degree.  Same seed, same frame.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ConfigError(f"n must be a positive integer, got {n!r}")
    check_seed(seed)
    n = int(n)
    rng = np.random.default_rng(int(seed))
    sex = np.where(rng.random(n) < 0.81, "Male", "Female")
    race = rng.choice(len(RACES), size=n, p=np.asarray(RACE_SHARES) / sum(RACE_SHARES))
    # age at screening: 18 + a right-skewed gamma (median ~31, 1.5 % over 65, oldest ~96)
    age = np.clip(18 + np.floor(rng.gamma(1.9, 8.0, n)).astype(np.int64), 18, 96)
    screen_days = rng.integers(0, (SCREEN_END - SCREEN_START).days + 1, n)
    screening = SCREEN_START + pd.to_timedelta(screen_days, unit="D")
    # a birth date consistent with the age on the screening day
    back = (age * 365.25 + rng.integers(1, 365, n)).astype(np.int64)
    dob = pd.Series(screening - pd.to_timedelta(back, unit="D")).dt.floor("D")
    age = ((screening - pd.DatetimeIndex(dob)).days.to_numpy() / 365.25).astype(np.int64)
    age_cat = np.where(age < 25, 0, np.where(age <= 45, 1, 2))
    young = (age < 25).astype(float)
    # counts: over-dispersed, more for the young and for men
    juv_fel = np.where(rng.random(n) < 0.03 + 0.05 * young, 1 + rng.geometric(0.55, n) - 1, 0)
    juv_misd = np.where(rng.random(n) < 0.04 + 0.06 * young, 1 + rng.geometric(0.5, n) - 1, 0)
    mean_priors = 3.4 * np.exp(0.012 * (age - 32)) * np.where(sex == "Male", 1.15, 0.65)
    priors = np.clip(rng.negative_binomial(0.65, 0.65 / (0.65 + mean_priors)), 0, 38)
    felony = rng.random(n) < 1 / (1 + np.exp(-(0.45 + 0.05 * np.minimum(priors, 10))))
    # days between screening and arrest: a pile at -1 and 0, a long two-sided tail, ~4 % missing
    kind = rng.random(n)
    tail = np.rint(rng.laplace(0, 40, n)).astype(np.int64)
    days_b = np.where(kind < 0.62, -1, np.where(kind < 0.80, 0, np.clip(tail, -414, 1057))).astype(float)
    days_b[rng.random(n) < 0.043] = np.nan
    # the risk score (1-10), -1 when the assessment was not scored
    latent = 4.2 - 0.09 * (age - 32) + 0.35 * np.sqrt(priors) + 0.6 * juv_fel + 0.3 * (race == 0) + rng.normal(0, 1.9, n)
    decile = np.clip(np.rint(latent), 1, 10).astype(np.int64)
    decile[rng.random(n) < 0.006] = -1
    p_recid = 1 / (1 + np.exp(-(-1.4 + 0.22 * np.maximum(decile, 1) + 0.05 * np.minimum(priors, 15)
                                - 0.02 * (age - 32) + 0.2 * felony)))
    two_year = (rng.random(n) < p_recid).astype(np.int64)
    is_recid = np.where(rng.random(n) < 0.03, "-1", two_year.astype(str))
    df = pd.DataFrame({
        "sex": sex.astype(object),
        "dob": dob.astype("datetime64[ns]"),
        "age": age,
        "age_cat": np.asarray(AGE_CATS, dtype=object)[age_cat],
        "race": np.asarray(RACES, dtype=object)[race],
        "juv_fel_count": juv_fel.astype(np.int64),
        "juv_misd_count": juv_misd.astype(np.int64),
        "priors_count": priors.astype(np.int64),
        "screening_date": pd.Series(screening.strftime("%Y-%m-%d"), dtype=object),
        "days_b_screening_arrest": days_b,
        "c_charge_degree": np.where(felony, "F", "M").astype(object),
        "decile_score": decile,
        "is_recid": is_recid.astype(object),
        "two_year_recid": two_year,
    })
    return df, compas_schema()


# -------------------------------------------------------------------------------------------------
# wide table (many columns, known structure)
# -------------------------------------------------------------------------------------------------
def wide_structure(n_columns: int = 100) -> list[dict]:
    """The public design of :func:`make_wide`: per column its name, kind, size (categories or
    bounds) and parents (earlier columns it depends on, with weights).  Fixed by ``n_columns`` alone
    (drawn from a generator seeded by it), so schema and structure are public knowledge."""
    if isinstance(n_columns, bool) or not isinstance(n_columns, (int, np.integer)) or n_columns < 2:
        raise ConfigError(f"n_columns must be an integer >= 2, got {n_columns!r}")
    rng = np.random.default_rng(1_000_003 + int(n_columns))
    cols = []
    for j in range(int(n_columns)):
        r = rng.random()
        if r < 0.5:
            kind, spec = "categorical", {"k": int(rng.choice([2, 3, 4, 5, 8, 12, 20]))}
        elif r < 0.75:
            kind, spec = "continuous", {"skew": bool(rng.random() < 0.5)}
        else:
            kind, spec = "count", {"upper": int(rng.choice([10, 50, 200]))}
        # a chain to the previous column, and sometimes a second parent further back
        parents = {}
        if j:
            parents[j - 1] = float(rng.choice([-1, 1]) * rng.uniform(0.5, 1.2))
            if j >= 3 and rng.random() < 0.4:
                parents[int(rng.integers(0, j - 1))] = float(rng.choice([-1, 1]) * rng.uniform(0.3, 0.9))
        cols.append({"name": f"{kind[:3]}_{j:03d}", "kind": kind, "parents": parents,
                     "missing": bool(rng.random() < 0.1), **spec})
    return cols


def wide_schema(n_columns: int = 100) -> Schema:
    """The public schema of :func:`make_wide`."""
    out = []
    for c in wide_structure(n_columns):
        if c["kind"] == "categorical":
            out.append(Column(c["name"], "categorical", categories=[f"v{i}" for i in range(c["k"])],
                              missing=c["missing"]))
        elif c["kind"] == "continuous":
            lo, hi = (0.0, 1000.0) if c["skew"] else (-10.0, 10.0)
            out.append(Column(c["name"], "numerical", lower=lo, upper=hi, missing=c["missing"]))
        else:
            out.append(Column(c["name"], "numerical", lower=0, upper=c["upper"], integer=True, missing=c["missing"]))
    meta = {"name": f"wide_{n_columns}", "target": out[-1].name if out[-1].kind == "categorical" else None,
            "source": "synthzoo.datasets.make_wide: a Gaussian latent chain with random long-range parents "
                      "(wide_structure gives it); no real people"}
    if meta["target"] is not None:
        meta["task"] = "classification"
    return Schema(out, {k: v for k, v in meta.items() if v is not None})


def make_wide(n: int = 5000, n_columns: int = 100, seed: int = 0) -> tuple[pd.DataFrame, Schema]:
    """A mixed table of ``n`` rows and ``n_columns`` columns with known structure, and its schema.

    Each column has a standard-normal latent ``z_j = sum_p w_jp z_p + e_j`` (rescaled to unit
    variance) over its parents in :func:`wide_structure`: the previous column (a chain through the
    whole table) and, for about 40 % of the columns, one further back.  The latent becomes a
    categorical column (2-20 levels, by fixed thresholds with uneven level sizes), a continuous one
    (symmetric on [-10, 10] or log-normal on [0, 1000]) or a count (Poisson, 0 to 10/50/200);
    about 10 % of the columns have 5 % missing values.  Its 2-way marginals along the chain and the
    extra edges carry signal, the others are close to independent: the scaling test for marginal
    methods (how their candidates, model sizes and times grow with the columns) and record models."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ConfigError(f"n must be a positive integer, got {n!r}")
    check_seed(seed)
    structure = wide_structure(n_columns)
    rng = np.random.default_rng(int(seed))
    z = np.empty((int(n), len(structure)))
    data = {}
    for j, c in enumerate(structure):
        zj = rng.standard_normal(n)
        for p, w in c["parents"].items():
            zj = zj + w * z[:, p]
        zj = zj / np.sqrt(1.0 + sum(w * w for w in c["parents"].values()))
        z[:, j] = zj
        if c["kind"] == "categorical":
            k = c["k"]
            cuts = np.quantile(np.random.default_rng(k).standard_normal(4000), np.cumsum(np.linspace(2, 1, k))[:-1]
                               / np.linspace(2, 1, k).sum())
            col = np.asarray([f"v{i}" for i in range(k)], dtype=object)[np.searchsorted(cuts, zj)]
        elif c["kind"] == "continuous":
            col = np.clip(np.exp(4.0 + 1.0 * zj), 0, 1000) if c["skew"] else np.clip(3.0 * zj, -10, 10)
            col = np.round(col, 3)
        else:
            col = np.clip(rng.poisson(c["upper"] / 10.0 * np.exp(0.5 * zj - 0.125)), 0, c["upper"]).astype(float)
        if c["missing"]:
            col = col.astype(object) if c["kind"] == "categorical" else col.astype(float)
            col[rng.random(n) < 0.05] = np.nan
        data[c["name"]] = col
    df = pd.DataFrame(data)
    for c in structure:  # counts without missing values stay integers
        if c["kind"] == "count" and not c["missing"]:
            df[c["name"]] = df[c["name"]].astype(np.int64)
    return df, wide_schema(n_columns)


# -------------------------------------------------------------------------------------------------
# shared datasets
# -------------------------------------------------------------------------------------------------
def datasets_root(root: str | os.PathLike | None = None) -> Path:
    """Where shared datasets live: ``root``, else ``$SYNTHZOO_DATASETS``, else ``shared/datasets``
    next to the repository."""
    if root is not None:
        return Path(root)
    env = os.environ.get("SYNTHZOO_DATASETS")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "shared" / "datasets"


def load_shared(name: str, root: str | os.PathLike | None = None) -> tuple[pd.DataFrame, Schema]:
    """Read ``<root>/<name>/`` (a CSV and its ``schema.json``) as ``(frame, schema)``.

    ``root`` defaults to ``$SYNTHZOO_DATASETS`` or the ``shared/datasets`` folder next to the
    repository.  The CSV is ``<name>.csv`` or the folder's only CSV.  A folder with a
    private-pgm ``*-domain.json`` instead of a schema (``adult_pgm``) gets a schema of
    categorical codes ``0 .. size-1``.  Datetime columns are parsed.  Raises
    :class:`FileNotFoundError` saying where it looked.
    """
    if not isinstance(name, str) or not name or "/" in name or "\\" in name or name in (".", ".."):
        raise ConfigError(f"dataset name must be a plain folder name, got {name!r}")
    base = datasets_root(root)
    folder = base / name
    if not folder.is_dir():
        have = sorted(p.name for p in base.iterdir() if p.is_dir()) if base.is_dir() else []
        hint = f"; available there: {have}" if have else " (that folder does not exist)" if not base.is_dir() else ""
        raise FileNotFoundError(
            f"dataset {name!r} not found: looked for the folder {folder}{hint}. Set SYNTHZOO_DATASETS or pass "
            "root= to point at the shared datasets")
    csvs = sorted(folder.glob("*.csv"))
    csv = folder / f"{name}.csv"
    if not csv.is_file():
        if len(csvs) != 1:
            raise FileNotFoundError(f"dataset {name!r}: expected {csv} or exactly one CSV in {folder}, "
                                    f"found {[p.name for p in csvs]}")
        csv = csvs[0]
    schema_path = folder / "schema.json"
    if schema_path.is_file():
        schema = Schema.from_json(schema_path)
    else:
        domains = sorted(folder.glob("*domain.json"))
        if len(domains) != 1:
            raise FileNotFoundError(f"dataset {name!r}: no schema.json (nor a single *domain.json) in {folder}")
        with open(domains[0]) as f:
            sizes = json.load(f)
        schema = Schema([Column(c, "categorical", categories=[str(i) for i in range(int(k))])
                         for c, k in sizes.items()], {"name": name, "source": f"private-pgm domain {domains[0].name}"})
    return read_csv(csv, schema, label=f"dataset {name!r}: {csv.name}"), schema


def read_csv(path, schema: Schema, label: str | None = None) -> pd.DataFrame:
    """A CSV's schema columns, in schema order, with datetime columns parsed as the schema says
    (its ``format`` and ``tz``; other columns dropped).  Read as the command line reads it
    (:func:`synthzoo.core.csvfile.read_csv`): a listed category such as "NA" stays that category and
    "02139" stays text, where pandas' defaults read a missing value and the number 2139."""
    df = csvfile.read_csv(path, role=label or "data", schema=schema)
    missing = [c for c in schema.names if c not in df.columns]
    if missing:
        raise SchemaError(f"{label or path}: lacks schema column(s) {missing}")
    for col in schema:
        if col.kind == "datetime":
            df[col.name] = col.datetimes(numeric_values(df[col.name], col), snap=False)
    return df[schema.names]


def train_test_split(df: pd.DataFrame, test_size: float | int = 0.2, seed: int = 0,
                     stratify: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Shuffle and split ``df`` into ``(train, test)`` (indexes reset); same seed, same split.

    ``test_size`` is a fraction in (0, 1) or a row count; ``stratify`` names a column whose
    value shares are kept (about) equal in both parts.
    """
    if not isinstance(df, pd.DataFrame):
        raise ConfigError(f"train_test_split expects a DataFrame, got {type(df).__name__}")
    n = len(df)
    if n < 2:
        raise ConfigError(f"train_test_split needs at least 2 rows, got {n}")
    if isinstance(test_size, bool):
        raise ConfigError(f"test_size must be a fraction in (0, 1) or a row count, got {test_size!r}")
    if isinstance(test_size, (int, np.integer)):
        if not 1 <= test_size <= n - 1:
            raise ConfigError(f"test_size={test_size} rows must lie in [1, {n - 1}]")
        frac = test_size / n
    elif isinstance(test_size, (float, np.floating)) and 0.0 < test_size < 1.0:
        frac = float(test_size)
    else:
        raise ConfigError(f"test_size must be a fraction in (0, 1) or a row count, got {test_size!r}")
    check_seed(seed)
    n_test = min(max(int(round(frac * n)), 1), n - 1)
    rng = np.random.default_rng(int(seed))
    if stratify is None:
        perm = rng.permutation(n)
        test_idx = perm[:n_test]
    else:
        if stratify not in df.columns:
            raise ConfigError(f"stratify names column {stratify!r}, which the frame lacks")
        labels = df[stratify].astype(object).where(df[stratify].notna(), "__missing__").to_numpy()
        parts = []
        for value in pd.unique(labels):
            rows = rng.permutation(np.flatnonzero(labels == value))
            parts.append(rows[: int(round(frac * rows.size))])
        test_idx = np.concatenate(parts)
        if test_idx.size == 0 or test_idx.size == n:
            raise ConfigError(f"stratified split by {stratify!r} left one part empty; use more rows or "
                              "a larger test_size")
    mask = np.zeros(n, dtype=bool)
    mask[test_idx] = True
    order = rng.permutation(n)  # shuffle within parts too, so row order carries no signal
    train = df.iloc[order[~mask[order]]].reset_index(drop=True)
    test = df.iloc[order[mask[order]]].reset_index(drop=True)
    return train, test

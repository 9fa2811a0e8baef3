"""Side-by-side runs of our metrics and the reference implementations they are named after:
``anonymeter`` (singling out, linkability, inference; Giomi et al., PoPETs 2023) and ``syntheval``
(Lautrup et al. 2024).  The reference packages are optional (``pip install synthzoo[crosscheck]``);
each function here raises :class:`~synthzoo.core.errors.ConfigError` naming the missing package.

Both references need frames without missing values (SynthEval fails on NaN; Anonymeter counts two
missing values as *different* in its Gower distance), so the comparisons run on the complete rows
(:func:`complete_rows`).  ``benchmarks/bench_crosscheck.py`` prints the agreement tables and
``tests/metrics/test_crosscheck.py`` asserts them.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ..core.errors import ConfigError
from ..core.schema import Schema
from ._common import category_codes
from .baselines import half_split, independent_sample


def _need(module: str):
    import importlib
    try:
        return importlib.import_module(module)
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ConfigError(f"the cross-check needs the reference package {module!r} "
                          f"(pip install 'synthzoo[crosscheck]'): {e}") from None


def complete_rows(*frames: pd.DataFrame) -> list[pd.DataFrame]:
    """Each frame without its rows holding a missing value (index reset), nullable numbers as plain
    float64: a release's integer column with missing values is ``Int64``, whose ``.values`` are
    Python objects that anonymeter's numba distance cannot type."""
    out = []
    for f in frames:
        f = f.dropna().reset_index(drop=True)
        nullable = [c for c in f.columns if isinstance(f[c].dtype, pd.api.extensions.ExtensionDtype)
                    and pd.api.types.is_numeric_dtype(f[c].dtype)]
        out.append(f.astype({c: "float64" for c in nullable}) if nullable else f)
    return out


def releases(train: pd.DataFrame, seed: int = 0, privsyn=None) -> dict[str, tuple[pd.DataFrame, pd.DataFrame]]:
    """``{name: (members, release)}``: the releases the agreement tables score, each with the real
    rows it is read against.

    * ``HALF`` -- members are half the training rows, the release is the other half (no leak);
    * ``INDEPENDENT`` -- each column of the training rows resampled on its own;
    * ``COPIED50`` -- half the rows copied from the training rows, half from INDEPENDENT;
    * ``COPY`` -- the training rows themselves;
    * ``privsyn`` -- a frame passed as ``privsyn`` (a DP release fitted on ``train``)."""
    rng = np.random.default_rng([seed, 50])
    a, b = half_split(train, seed)
    ind = independent_sample(train, seed=seed + 1)
    perm = rng.permutation(len(train))
    h = len(train) // 2
    copied = pd.concat([train.iloc[perm[:h]], ind.iloc[perm[h:]]], ignore_index=True)
    out = {"HALF": (a, b), "INDEPENDENT": (train, ind), "COPIED50": (train, copied.iloc[rng.permutation(len(copied))]
                                                                   .reset_index(drop=True)),
           "COPY": (train, train)}
    if privsyn is not None:
        out["privsyn"] = (train, privsyn)
    return out


# ---------------------------------------------------------------------------------------
# anonymeter
# ---------------------------------------------------------------------------------------

def anonymeter_risks(train, synthetic, control, schema: Schema, n_attacks: int = 500, secret: str | None = None,
                     aux_cols=None, seed: int = 0, singling_out_attempts: int = 10_000_000) -> dict:
    """Anonymeter's three evaluators on the given frames: ``{"singling_out", "linkability",
    "inference"}`` -> ``{"risk", "ci_low", "ci_high", "tau_train", "tau_control"}``.  Linkability
    takes ``aux_cols`` (two column lists), inference the ``secret`` column (default the schema's
    target) with every other column known."""
    _need("anonymeter")
    from anonymeter.evaluators import InferenceEvaluator, LinkabilityEvaluator, SinglingOutEvaluator
    secret = secret or schema.meta.get("target") or schema.names[-1]
    if aux_cols is None:
        rng = np.random.default_rng(seed)
        perm = list(rng.permutation(schema.names))
        aux_cols = (perm[: len(perm) // 2], perm[len(perm) // 2:])
    aux_cols = (list(aux_cols[0]), list(aux_cols[1]))
    out = {}
    np.random.seed(seed)  # anonymeter's linkability and inference draw targets with pandas' global state
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        so = SinglingOutEvaluator(ori=train, syn=synthetic, control=control, n_attacks=n_attacks, seed=seed,
                                  max_attempts=singling_out_attempts).evaluate(mode="multivariate")
        out["singling_out"] = _anon(so)
        lk = LinkabilityEvaluator(ori=train, syn=synthetic, control=control, n_attacks=n_attacks,
                                  aux_cols=aux_cols).evaluate(n_jobs=1)
        out["linkability"] = _anon(lk)
        known = [c for c in schema.names if c != secret]
        inf = InferenceEvaluator(ori=train, syn=synthetic, control=control, aux_cols=known, secret=secret,
                                 n_attacks=n_attacks).evaluate(n_jobs=1)
        out["inference"] = _anon(inf)
    out["aux_cols"], out["secret"] = aux_cols, secret
    return out


def _anon(ev) -> dict:
    r = ev.risk()
    res = ev.results()
    return {"risk": float(r.value), "ci_low": float(r.ci[0]), "ci_high": float(r.ci[1]),
            "tau_train": float(res.attack_rate.value),
            "tau_control": float(res.control_rate.value) if res.control_rate is not None else float("nan")}


def our_anonymeter_risks(train, synthetic, control, schema: Schema, n_attacks: int = 500, secret: str | None = None,
                         aux_cols=None, seed: int = 0, ties: str = "first", size_correction: str = "subsample",
                         max_attempts: int = 100_000) -> dict:
    """Our singling-out, linkability and inference risks with Anonymeter's settings (the same
    targets' definition, auxiliary columns and secret)."""
    from .privacy import _inference, _linkability, _singling_out, _Tables
    secret = secret or schema.meta.get("target") or schema.names[-1]
    t = _Tables(train, synthetic, control, schema)
    return {"singling_out": _singling_out(t, n_attacks, 3, seed, "multivariate", max_attempts, size_correction),
            "linkability": _linkability(t, n_attacks, seed, aux_cols, ties),
            "inference": _inference(t, secret, n_attacks, 0.05, seed)}


# ---------------------------------------------------------------------------------------
# syntheval
# ---------------------------------------------------------------------------------------

#: our name -> (syntheval metric key, its keyword arguments, how to read its result)
SYNTHEVAL_METRICS = {
    "ks_distance": ("ks_test", {"sig_lvl": 0.05, "n_perms": 1000}, lambda r: r["avg stat"]),
    "ks_significant": ("ks_test", {"sig_lvl": 0.05, "n_perms": 1000}, lambda r: r["num sigs"]),
    "hellinger_categorical": ("h_dist", {}, None),  # read per column below
    "pmse": ("p_mse", {"k_folds": 5, "max_iter": 100, "solver": "liblinear"}, lambda r: r["avg pMSE"]),
    "pca_eigval_diff": ("pca", {"preprocess": "std"}, lambda r: r["exp_var_diff"]),
    "pca_angle_diff": ("pca", {"preprocess": "std"}, lambda r: r["comp_angle_diff"]),
    "ci_overlap": ("cio", {"ci": "std", "confidence": 95}, lambda r: r["avg overlap"]),
    "mi_diff": ("mi_diff", {}, lambda r: r["mutual_inf_diff"]),
    "dwm": ("dwm", {}, lambda r: r["avg"]),
    "corr_diff": ("corr_diff", {"mixed_corr": True}, lambda r: r["corr_mat_diff"]),
    "nnaa": ("nnaa", {"n_resample": 30}, lambda r: r["avg"]),
    "hitting_rate": ("hit_rate", {"thres_percent": 1 / 30}, lambda r: r["hit rate"]),
    "eps_identifiability": ("eps_risk", {}, lambda r: r["eps_risk"]),
    "mia_f1": ("mia", {"num_eval_iter": 5}, lambda r: r["MIA macro F1"]),
    "attr_disclosure": ("att_discl", {}, lambda r: r["Attr Dis accuracy"]),
    "auroc_diff": ("auroc_diff", {"model": "log_reg", "num_boots": 1}, lambda r: r["auroc_diff"]),
}


def _syntheval_class(key: str):
    _need("syntheval")
    from syntheval.metrics import load_metrics
    return load_metrics()[key]


def syntheval_reference(real, synthetic, schema: Schema, holdout=None, metrics=None) -> dict:
    """The ``syntheval`` package's values of our SynthEval-named ``metrics`` (default all of
    :data:`SYNTHEVAL_METRICS`) on complete rows, with SynthEval's own preprocessing."""
    _need("syntheval")
    from syntheval.utils.configuration import AnalysisConfig
    cat = [c.name for c in schema.columns if c.kind == "categorical"]
    num = [c.name for c in schema.columns if c.kind != "categorical"]
    target = schema.meta.get("target")
    out, cache = {}, {}
    for name in metrics or SYNTHEVAL_METRICS:
        key, kw, read = SYNTHEVAL_METRICS[name]
        if key not in cache:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cls = _syntheval_class(key)
                at = AnalysisConfig(dataset=real, target_vars=target) if target else None
                if at is not None and schema[target].kind == "categorical":
                    # SynthEval reads "categorical" from an object dtype; pandas 3 reads text as "str"
                    at.target_types = {target: int(real[target].nunique())}
                m = cls(real, synthetic, holdout, cat_cols=cat, num_cols=num, nn_dist="gower",
                        analysis_target=at, do_preprocessing=True, verbose=False, plot_figures=False)
                cache[key] = (m, m.evaluate(**kw))
        m, res = cache[key]
        if name == "hellinger_categorical":
            from syntheval.metrics.utility.metric_hellinger_distance import _hellinger
            vals = []
            for c in cat:
                k = len(np.unique(m.real_data[c]))
                p = np.histogram(m.real_data[c], bins=k)[0]
                q = np.histogram(m.synt_data[c], bins=k)[0]
                vals.append(_hellinger(p / p.sum(), q / q.sum()))
            out[name] = float(np.mean(vals))
        else:
            out[name] = float(read(res))
    return out


def our_syntheval_metrics(real, synthetic, schema: Schema, holdout=None, metrics=None, seed: int = 0) -> dict:
    """Our values of the SynthEval-named ``metrics`` (see :data:`SYNTHEVAL_METRICS`)."""
    from . import disclosure as D
    from . import statistical as S
    from .ml import auroc_difference
    out, cache = {}, {}

    def once(key, fn):
        if key not in cache:
            cache[key] = fn()
        return cache[key]
    for name in metrics or SYNTHEVAL_METRICS:
        if name in ("ks_distance", "ks_significant"):
            r = once("ks", lambda: S.ks_test(real, synthetic, schema, seed=seed))
            out[name] = r["avg_stat"] if name == "ks_distance" else r["n_significant"]
        elif name == "hellinger_categorical":
            r = once("h", lambda: S.hellinger_distance(real, synthetic, schema))["columns"]
            out[name] = float(r.loc[r.kind == "categorical", "hellinger"].mean())
        elif name == "pmse":
            out[name] = S.pmse(real, synthetic, schema)["pmse"]
        elif name in ("pca_eigval_diff", "pca_angle_diff"):
            r = once("pca", lambda: S.pca_difference(real, synthetic, schema))
            out[name] = r["eigval_diff"] if name == "pca_eigval_diff" else r["angle_diff"]
        elif name == "ci_overlap":
            out[name] = S.ci_overlap(real, synthetic, schema)["avg_overlap"]
        elif name == "mi_diff":
            out[name] = S.mutual_information_difference(real, synthetic, schema)
        elif name == "dwm":
            out[name] = S.dimensionwise_means(real, synthetic, schema)
        elif name == "corr_diff":
            out[name] = S.correlation_difference(real, synthetic, schema)
        elif name == "nnaa":
            out[name] = D.nnaa(real, synthetic, schema, seed=seed)["nnaa"]
        elif name == "hitting_rate":
            out[name] = D.hitting_rate(real, synthetic, schema)
        elif name == "eps_identifiability":
            out[name] = D.epsilon_identifiability(real, synthetic, schema)["eps_risk"]
        elif name == "mia_f1":
            out[name] = D.mia_classifier(real, synthetic, holdout, schema, seed=seed)["f1"]
        elif name == "attr_disclosure":
            out[name] = D.attribute_disclosure(real, synthetic, schema, holdout=holdout, seed=seed)["accuracy"]
        elif name == "auroc_diff":
            out[name] = auroc_difference(real, synthetic, holdout, schema)["auroc_diff"]
        else:
            raise ConfigError(f"metrics: {name!r} is not a SynthEval-named metric; choose from "
                              f"{sorted(SYNTHEVAL_METRICS)}")
    return out


def schema_for(frames, schema: Schema, categories: str = "schema") -> Schema:
    """``schema`` with each numeric column's bounds set to the range the frames show together --
    the scale SynthEval and Anonymeter normalise with -- so the comparison isolates the metric.

    ``categories="observed"`` also cuts each categorical column's categories to those the frames
    hold, in the schema's order: the codes SynthEval's ``OrdinalEncoder`` gives (fitted on the real,
    synthetic and held-out tables together), which differ from the schema's ranks after a category
    none of the frames holds (see :func:`~synthzoo.metrics.ml.auroc_difference`).  The default
    ``"schema"`` keeps the schema's categories."""
    if categories not in ("schema", "observed"):
        raise ConfigError(f"categories must be 'schema' or 'observed', got {categories!r}")
    spec = schema.to_dict()
    for c in schema.columns:
        if c.kind != "categorical":
            spec["columns"][c.name]["lower"] = min(float(pd.to_numeric(f[c.name]).min()) for f in frames)
            spec["columns"][c.name]["upper"] = max(float(pd.to_numeric(f[c.name]).max()) for f in frames)
        elif categories == "observed":
            seen = np.zeros(len(c.categories) + 2, dtype=bool)  # + missing and out-of-schema codes
            for f in frames:
                seen[category_codes(f[c.name], c, warn=False)] = True
            cats = spec["columns"][c.name]["categories"]
            spec["columns"][c.name]["categories"] = [k for k, s in zip(cats, seen) if s]
    return Schema.from_dict(spec)

"""Privacy-risk metrics of a released synthetic table against its training rows.

Roles: ``train`` — the rows the synthesizer saw (members); ``holdout`` — real rows it did not
see (non-members from the same population), used as the *control* every risk is read against;
``synthetic`` — the released table.  Every risk below is normalised so that 0 means "no more
revealing than releasing unrelated real rows" and 1 means "as revealing as the definition
allows" (reached when the training rows themselves are released), following the normalised
risk R = (tau_train - tau_control) / (1 - tau_control) of Giomi et al. (Anonymeter, "A unified
framework for quantifying privacy risk in synthetic data", PoPETs 2023):

* **DCR** (distance to closest record; percentile-based against a real holdout as in Plasencia
  et al., "Empirical evaluation of structured synthetic data privacy metrics"): the share of
  synthetic rows closer to a training row than the ``alpha`` quantile of holdout-to-train
  distances, normalised against ``alpha`` (the share a non-member release shows).
* **identical-match share** (IMS): the share of synthetic rows equal to a training row,
  normalised against the share of holdout rows equal to a training row.
* **NNDR** (nearest-neighbour distance ratio d1/d2 to the training rows): percentile-based
  like DCR — a small ratio means a synthetic row sits next to one specific training row.
* **singling out, linkability, attribute inference** (Anonymeter-style attacks with a control
  set) — success rates on members and on control rows, R and a 95% confidence interval.
* **DOMIAS-style membership inference** (van Breugel et al., "Membership inference attacks
  against synthetic data through overfitting detection", AISTATS 2023): a record's score is the
  density ratio p_synthetic(x) / p_reference(x); densities are 1-nearest-neighbour estimates
  under Gower distance (the ratio of k-NN densities ranks records by d_ref / d_synth whatever
  the dimension), so copied or overfitted records score high.  Reported as ROC AUC (0.5 = no
  signal, 1 = every member detected).

Distances are Gower distances (:mod:`synthzoo.metrics.distance`): mixed types without one-hot
blow-ups.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd

from ..core.errors import ConfigError
from ..core.schema import Schema
from ._common import check_frames, check_positive_int, count, resolve_schema, views
from .distance import GowerSpace, concat_rows, take_rows

try:  # numba is a dependency; without it singling out counts with bit sets only
    from . import _singling_numba as _sn
except ImportError:  # pragma: no cover
    _sn = None

Z95 = 1.959963984540054


# ---------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------

def _risk_at_most(values: np.ndarray, ref: np.ndarray, alpha: float) -> tuple[float, float, float]:
    """(risk, share, base): the share of ``values`` at most the ``alpha`` quantile q of ``ref``,
    normalised by the share of ``ref`` itself at most q.

    Ties matter: when many holdout rows have exact duplicates among the training rows (adult cut
    to its categorical columns: 94.7 %), q is 0 and the holdout's own share at 0 is far above
    ``alpha``.  Reading the release against that share -- not against ``alpha`` -- keeps the
    promise of the scale: 0 for a release like the holdout, 1 for the training rows themselves
    (every distance 0 <= q), whatever the ties; without ties the base is ``alpha`` (up to 1/n)."""
    q = float(np.quantile(ref, alpha, method="inverted_cdf"))
    base = float(np.mean(ref <= q))
    share = float(np.mean(values <= q))
    return _normalise(share, base), share, base


def _normalise(share: float, base: float) -> float:
    return (share - base) / (1.0 - base) if base < 1 else 0.0


def normalised_risk(n_success_train: int, n_train: int, n_success_control: int, n_control: int,
                    top: float = 1.0) -> dict:
    """R = (tau_train - tau_control) / (top - tau_control) with a 95% confidence interval.

    ``top`` is the rate an attack on a verbatim copy of the training rows reaches: 1 (Anonymeter's R),
    or less where the training side is scored at a smaller size (singling out with a smaller
    holdout), so that a copy reads 1 whatever that size.  The interval propagates both rates' standard
    errors through R with the delta method (rates smoothed by +0.5/+1 so a 0 or 1 rate still has an
    uncertainty): binomial for the control, and for the training side the largest variance of values
    in [0, top] with its mean (Bhatia-Davis; binomial at ``top`` 1).  A control rate at or above ``top``
    leaves no scale: risk NaN."""
    tt, tc = n_success_train / n_train, n_success_control / n_control
    ttp = (n_success_train + 0.5) / (n_train + 1)
    tcp = (n_success_control + 0.5) / (n_control + 1)
    var_t, var_c = ttp * (max(top, ttp) - ttp) / n_train, tcp * (1 - tcp) / n_control
    if tc >= top:
        r, se = (0.0, 0.0) if top >= 1 else (math.nan, math.nan)
    else:
        r = (tt - tc) / (top - tc)
        se = math.sqrt(var_t / (top - tc) ** 2 + var_c * ((top - tt) / (top - tc) ** 2) ** 2)
    return {"risk": r, "ci_low": r - Z95 * se, "ci_high": r + Z95 * se,
            "tau_train": tt, "tau_control": tc, "n_train": n_train, "n_control": n_control}


def _subschema(schema: Schema, cols) -> Schema:
    return Schema([schema[c] for c in cols])


class _Tables:
    """Checked frames and their Gower encodings, shared by the metrics of one evaluation.

    ``shared`` (a :class:`~synthzoo.metrics._common.OnceCache`) and ``tokens`` (a name for each
    role's frame, e.g. ``{"train": "A", "synthetic": "B", "holdout": "test"}``) let several
    evaluations that hold the same frames share their encodings and neighbour searches, on
    threads: ``evaluate`` scores a release and its three baselines, which search the same
    holdout-to-training and training-to-training neighbours.  Two roles with one token must hold
    the same rows.  ``labels`` name a role's frame in messages where it holds other rows than the
    role's name says (a membership attack's targets in the "train" role)."""

    def __init__(self, train, synthetic, holdout, schema: Schema, shared=None, tokens: dict | None = None,
                 labels: dict | None = None):
        self.schema = resolve_schema(schema, train)
        self._labels = {"train": "train", "synthetic": "synthetic", "holdout": "holdout", **(labels or {})}
        f = check_frames(self.schema, **{self._labels[r]: df for r, df in
                                         (("train", train), ("synthetic", synthetic), ("holdout", holdout))})
        f = {r: f.get(self._labels[r]) for r in ("train", "synthetic", "holdout")}
        self.train, self.synthetic, self.holdout = f["train"], f["synthetic"], f.get("holdout")
        self._tokens = {r: ("frame", r) for r in ("train", "synthetic", "holdout")}
        if tokens:
            self._tokens.update({r: ("frame", tok) for r, tok in tokens.items()})
        # the training frame released as it is (the SELF baseline): every row's nearest training
        # row is itself, at distance 0, so that search need not run
        self.synthetic_is_train = synthetic is train or self._tokens["synthetic"] == self._tokens["train"]
        self._shared = shared
        self._memo: dict = {}
        self.space = GowerSpace(self.schema)

    def _key(self, key: tuple) -> tuple:
        return tuple(self._tokens.get(k, k) if isinstance(k, str) else k for k in key)

    def memo(self, key: tuple, compute):
        """``compute()`` once per ``key``, a tuple in which role names (``"train"``, ...) stand for
        their frames; shared with the other evaluations of ``shared`` when given."""
        key = self._key(key)
        if self._shared is not None:
            return self._shared.get(key, compute)
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def _known(self, key: tuple):
        key = self._key(key)
        return self._shared.known(key) if self._shared is not None else self._memo.get(key)

    def _same(self, a: str, b: str) -> bool:
        return self._tokens[a] == self._tokens[b]

    def enc(self, role: str) -> dict:
        return self.memo(("gower-encoding", role), lambda: self.space.encode(getattr(self, role), self._labels[role]))

    def nn(self, query: str, ref: str, k: int = 2):
        """The ``k`` nearest ``ref`` rows of each ``query`` row (cached; ``k <= 2`` always searches the
        two nearest -- one more argmin pass -- so that every metric reads one search; a table against
        itself uses the upper triangle, and a pair searched in both directions by :meth:`nn_both` is
        reused).  For a release that is the training frame itself,
        ("synthetic", "train") gives each row itself at distance 0 and leaves the further neighbours
        unsearched (distance NaN, index -1): DCR, the identical-match share and NNDR read only the
        first (NNDR's ratio is 0 when that distance is 0)."""
        if (query, ref) == ("synthetic", "train") and self.synthetic_is_train:
            def own():
                n = len(self.train)
                d = np.full((n, max(k, 2)), np.nan)
                i = np.full((n, max(k, 2)), -1, dtype=np.int64)
                d[:, 0], i[:, 0] = 0.0, np.arange(n)
                return d, i
            d, i = self.memo(("self-nearest", "train", max(k, 2)), own)
            return d[:, :k], i[:, :k]
        if k <= 2:
            if self._same(query, ref):  # a table against itself: the upper triangle suffices
                d, i = self.memo(("gower-self", query), lambda: self.space.nearest_self(self.enc(query)))
                return d[:, :k], i[:, :k]
            for a, b, side in ((query, ref, 0), (ref, query, 1)):  # searched with the other direction?
                got = self._known(("gower-pair", a, b))
                if got is not None:
                    d, i = got[side]
                    return d[:, :k], i[:, :k]
        kk = max(k, 2)
        d, i = self.memo(("gower-nearest", query, ref, kk),
                         lambda: self.space.nearest(self.enc(query), self.enc(ref), kk))
        return d[:, :k], i[:, :k]

    def nn_both(self, a: str, b: str):
        """``(nn(a, b, 2), nn(b, a, 2))`` from one pass over the distances (see
        :meth:`~synthzoo.metrics.distance.GowerSpace.nearest_pair`), for metrics that need both."""
        if self._same(a, b):
            both = self.nn(a, a, 2)
            return both, both
        if self._known(("gower-pair", b, a)) is not None:
            back, fwd = self._known(("gower-pair", b, a))
            return fwd, back
        fwd, back = self._known(("gower-nearest", a, b, 2)), self._known(("gower-nearest", b, a, 2))
        if fwd is not None or back is not None:  # one direction is known: search the other alone
            return self.nn(a, b, 2), self.nn(b, a, 2)
        return self.memo(("gower-pair", a, b), lambda: self.space.nearest_pair(self.enc(a), self.enc(b)))

    def need_holdout(self, metric: str):
        if self.holdout is None:
            raise ConfigError(f"{metric}: needs real holdout rows the synthesizer never saw (holdout=... / test=...)")


# ---------------------------------------------------------------------------------------
# distance-based metrics
# ---------------------------------------------------------------------------------------

def _dcr(t: _Tables, alpha: float) -> dict:
    t.need_holdout("dcr")
    ds, _ = t.nn("synthetic", "train", 2)
    dh, _ = t.nn("holdout", "train", 2)
    risk, share, base = _risk_at_most(ds[:, 0], dh[:, 0], alpha)
    return {"risk": risk, "share": share, "share_holdout": base, "alpha": alpha,
            "median_dcr_synthetic": float(np.median(ds[:, 0])), "median_dcr_holdout": float(np.median(dh[:, 0]))}


def _ims(t: _Tables) -> dict:
    t.need_holdout("identical_match_share")
    ds, _ = t.nn("synthetic", "train", 2)
    dh, _ = t.nn("holdout", "train", 2)
    s, h = float(np.mean(ds[:, 0] == 0)), float(np.mean(dh[:, 0] == 0))
    return {"risk": _normalise(s, h), "share": s, "share_holdout": h}


def _ratio(d: np.ndarray) -> np.ndarray:
    # an exact copy has ratio 0 even when the training rows hold duplicates of it (0/0)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.where(d[:, 0] == 0, 0.0, d[:, 0] / d[:, 1])
    return r


def _nndr(t: _Tables, alpha: float) -> dict:
    t.need_holdout("nndr")
    if len(t.train) < 2:  # the ratio's denominator is the second-nearest training row
        raise ConfigError(f"nndr_risk: needs at least 2 training rows (nearest / second-nearest), got {len(t.train)}")
    ds, _ = t.nn("synthetic", "train", 2)
    dh, _ = t.nn("holdout", "train", 2)
    rs, rh = _ratio(ds), _ratio(dh)
    risk, share, base = _risk_at_most(rs, rh, alpha)
    return {"risk": risk, "share": share, "share_holdout": base, "alpha": alpha,
            "mean_nndr_synthetic": float(np.mean(rs)), "mean_nndr_holdout": float(np.mean(rh))}


def dcr_risk(train, synthetic, holdout, schema, alpha: float = 0.05) -> float:
    """Percentile-based DCR risk (Plasencia et al.): the share of synthetic rows whose Gower
    distance to the closest training row is below the ``alpha`` quantile of the holdout rows'
    distances, normalised so that 0 = a non-member release and 1 = the training rows released."""
    return _dcr(_Tables(train, synthetic, holdout, schema), _alpha(alpha))["risk"]


def identical_match_share(train, synthetic, schema, holdout=None) -> float:
    """Share of synthetic rows identical to a training row (raw, without holdout normalisation)."""
    t = _Tables(train, synthetic, holdout, schema)
    ds, _ = t.nn("synthetic", "train", 1)
    return float(np.mean(ds[:, 0] == 0))


def nndr_risk(train, synthetic, holdout, schema, alpha: float = 0.05) -> float:
    """Percentile-based nearest-neighbour distance ratio risk (normalised like :func:`dcr_risk`)."""
    return _nndr(_Tables(train, synthetic, holdout, schema), _alpha(alpha))["risk"]


def _alpha(alpha: float) -> float:
    if not (0 < alpha < 1):
        raise ConfigError(f"alpha must lie in (0, 1), got {alpha!r}")
    return float(alpha)


# ---------------------------------------------------------------------------------------
# DOMIAS-style density-ratio membership inference
# ---------------------------------------------------------------------------------------

def _domias(t: _Tables, n_candidates: int, seed: int) -> dict:
    from sklearn.metrics import roc_auc_score
    t.need_holdout("domias_auc")
    rng = np.random.default_rng(seed)
    h = rng.permutation(len(t.holdout))
    half = len(h) // 2
    if half < 5:
        raise ConfigError("domias_auc: the holdout needs at least 10 rows (half reference, half candidates)")
    if len(t.train) < 10:  # the members are training rows: an AUC over one member is 0, 0.5 or 1, not a risk
        raise ConfigError(f"domias_auc: the training table needs at least 10 rows (as the holdout), got "
                          f"{len(t.train)}")
    ref_rows, cand_rows = h[:half], h[half:]
    m = min(n_candidates, len(cand_rows), len(t.train))
    cand_rows = cand_rows[:m]
    mem_rows = rng.choice(len(t.train), m, replace=False)
    space = t.space
    ref = take_rows(t.enc("holdout"), ref_rows)
    synth = t.enc("synthetic")
    cands = concat_rows(take_rows(t.enc("train"), mem_rows), take_rows(t.enc("holdout"), cand_rows))
    d_s, _ = space.nearest(cands, synth, 1)
    d_r, _ = space.nearest(cands, ref, 1)
    eps = 1e-6  # a copied record (d_s = 0) gets the largest finite scores
    score = np.log(d_r[:, 0] + eps) - np.log(d_s[:, 0] + eps)
    y = np.r_[np.ones(m), np.zeros(m)]
    auc = float(roc_auc_score(y, score))
    return {"risk": max(0.0, 2 * auc - 1), "auc": auc, "n_members": m, "n_nonmembers": m}


def domias_auc(train, synthetic, holdout, schema, n_candidates: int = 2000, seed: int = 0) -> float:
    """ROC AUC of a DOMIAS-style density-ratio membership inference attack (0.5 = no signal).

    Half the holdout rows form the reference (population) sample, the other half are the
    non-member candidates; as many training rows are the member candidates."""
    return _domias(_Tables(train, synthetic, holdout, schema), n_candidates, seed)["auc"]


# ---------------------------------------------------------------------------------------
# Anonymeter-style attacks with a control set
# ---------------------------------------------------------------------------------------

def _targets(t: _Tables, n_attacks: int, rng) -> tuple[np.ndarray, np.ndarray]:
    """Equal numbers of member targets (training rows) and control targets (holdout rows)."""
    m = min(n_attacks, len(t.holdout), len(t.train))
    return rng.choice(len(t.train), m, replace=False), rng.choice(len(t.holdout), m, replace=False)


def _inference(t: _Tables, secret: str | None, n_attacks: int, tolerance: float, seed: int) -> dict:
    """Attribute inference: the attacker knows every other column of a target and guesses the
    secret as the secret value of the closest synthetic row on the known columns."""
    t.need_holdout("inference_risk")
    schema = t.schema
    secret = secret or schema.meta.get("target") or schema.names[-1]
    if secret not in schema:
        raise ConfigError(f"secret: {secret!r} is not a schema column")
    known = [c for c in schema.names if c != secret]
    if not known:
        raise ConfigError("inference_risk: needs at least two columns")
    rng = np.random.default_rng(seed)
    mem, ctl = _targets(t, n_attacks, rng)
    sub = _subschema(schema, known)
    space = GowerSpace(sub)
    synth = space.encode(t.synthetic, "synthetic")
    col = schema[secret]
    sv = views(t.synthetic[[secret]], _subschema(schema, [secret]), "synthetic")
    out = []
    for frame, rows, role in ((t.train, mem, "train"), (t.holdout, ctl, "holdout")):
        tgt = frame.iloc[rows]
        _, idx = space.nearest(space.encode(tgt, role), synth, 1)
        tv = views(tgt[[secret]], _subschema(schema, [secret]), role)
        if col.kind == "categorical":
            ok = sv.cat[secret][idx[:, 0]] == tv.cat[secret]
        else:
            g, x = sv.num[secret][idx[:, 0]], tv.num[secret]
            span = (col.upper - col.lower) or 1.0
            ok = (np.abs(g - x) <= tolerance * span) | (np.isnan(g) & np.isnan(x))
        out.append(int(ok.sum()))
    res = normalised_risk(out[0], len(mem), out[1], len(ctl))
    res["secret"] = secret
    return res


def _linkability(t: _Tables, n_attacks: int, seed: int, aux_cols=None, ties: str = "any") -> dict:
    """Linkability (Anonymeter's attack): the attacker holds two disjoint column sets A and B of a
    target (as in two separately released tables) and links them through the synthetic table --
    success when the closest synthetic row on A and the closest on B are the same row.

    ``ties="any"`` (default) counts a link whenever some synthetic row is at the minimal distance
    on both sides: an attacker who intersects the tied candidates, so a released copy of the
    training rows scores 1 even when one column set is coarse (a few categorical columns tie
    thousands of rows).  ``"first"`` takes, on each side, the first synthetic row among tied
    closest ones -- Anonymeter's attacker, whose (unstable) argsort picks one of the tied rows;
    on coarse column sets it rarely links even a copy."""
    t.need_holdout("linkability_risk")
    if ties not in ("first", "any"):
        raise ConfigError(f"ties must be 'first' or 'any', got {ties!r}")
    schema = t.schema
    rng = np.random.default_rng(seed)
    if aux_cols is None:
        perm = list(rng.permutation(schema.names))
        h = len(perm) // 2
        aux_cols = (perm[:h], perm[h:])
    a_cols, b_cols = list(aux_cols[0]), list(aux_cols[1])
    if not a_cols or not b_cols or set(a_cols) & set(b_cols):
        raise ConfigError("aux_cols: needs two non-empty, disjoint column lists")
    unknown = [c for c in a_cols + b_cols if c not in schema]
    if unknown:
        raise ConfigError(f"aux_cols: {unknown} are not schema columns")
    mem, ctl = _targets(t, n_attacks, rng)
    spaces = [GowerSpace(_subschema(schema, cols)) for cols in (a_cols, b_cols)]
    synth = [sp.encode(t.synthetic, "synthetic") for sp in spaces]
    out = []
    for frame, rows, role in ((t.train, mem, "train"), (t.holdout, ctl, "holdout")):
        tgt = frame.iloc[rows]
        enc = [sp.encode(tgt, role) for sp in spaces]
        (da, ia), (db, ib) = (sp.nearest(e, s, 1) for sp, e, s in zip(spaces, enc, synth))
        ok = ia[:, 0] == ib[:, 0]
        if ties == "any":  # is B's choice also at the minimal A distance (or vice versa)?
            r = np.arange(len(rows))
            da_of_b = spaces[0].rowwise(enc[0], r, synth[0], ib[:, 0])
            db_of_a = spaces[1].rowwise(enc[1], r, synth[1], ia[:, 0])
            ok |= (da_of_b <= da[:, 0] + 1e-9) | (db_of_a <= db[:, 0] + 1e-9)
        out.append(int(ok.sum()))
    res = normalised_risk(out[0], len(mem), out[1], len(ctl))
    res["aux_cols"] = (a_cols, b_cols)
    return res


# -- singling out, as Anonymeter defines it ---------------------------------------------

SINGLING_OUT_MODES = ("multivariate", "univariate")


def _so_matrix(df: pd.DataFrame, schema: Schema, role: str) -> np.ndarray:
    """One float column per schema column: category codes or numbers, NaN = missing, after
    dropping duplicate rows (Anonymeter attacks the distinct records)."""
    df = df.drop_duplicates()
    v = views(df, schema, role)
    cols = []
    for c in schema.columns:
        if c.kind == "categorical":
            x = v.cat[c.name].astype(float)
            x[x == len(c.categories)] = np.nan  # the missing code
            cols.append(x)
        else:
            cols.append(v.num[c.name])
    return np.stack(cols, axis=1)


class _Predicates:
    """A batch of conjunctive predicates ``column op value``, arrays of shape (Q, k); op 0: is
    missing, 1: ==, 2: >=, 3: <=."""

    def __init__(self, cols: np.ndarray, ops: np.ndarray, vals: np.ndarray):
        self.cols, self.ops, self.vals = cols, ops, vals

    def __len__(self):
        return len(self.cols)

    def take(self, keep) -> "_Predicates":
        return _Predicates(self.cols[keep], self.ops[keep], self.vals[keep])

    def keys(self) -> list:
        return [tuple(zip(c.tolist(), o.tolist(), np.nan_to_num(v, nan=-np.inf).tolist()))
                for c, o, v in zip(self.cols, self.ops, self.vals)]


class _BitIndex:
    """A table's rows indexed for counting the rows that conjunctive predicates match.

    Each column's values get dense ranks; every one-column predicate is a rank interval [lo, hi].
    :meth:`counts` scans, per predicate, the rows of its narrowest interval (rows sorted by rank:
    one slice) and checks the other conditions (compiled, :mod:`._singling_numba`), stopping at
    ``cap`` -- fast enough for the hundreds of thousands of candidate predicates a singling-out
    attack draws on a table like adult.  :meth:`bits` gives the matched rows as bit sets:
    prefix(hi) minus prefix(lo - 1), where prefix(k) is the set of rows of rank at most k."""

    def __init__(self, x: np.ndarray):
        self.n, self.d = x.shape
        self.w = max(1, (self.n + 63) // 64)
        self.rows = np.arange(self.n)
        # a row's bit within its 64-bit word, split in 32-bit halves: bincount sums them exactly
        shift = self.rows & 63
        self._word = self.rows >> 6
        self._lo32 = np.where(shift < 32, np.left_shift(1, np.minimum(shift, 31)), 0).astype(float)
        self._hi32 = np.where(shift >= 32, np.left_shift(1, np.maximum(shift - 32, 0)), 0).astype(float)
        self.uniq, self.rank = [], []
        for j in range(self.d):
            v = x[:, j]
            ok = ~np.isnan(v)
            u = np.unique(v[ok])
            r = np.full(self.n, len(u), dtype=np.int64)  # missing: beyond every prefix
            r[ok] = np.searchsorted(u, v[ok])
            self.uniq.append(u)
            self.rank.append(r)
        self._sorted = None

    def unpack(self, bits: np.ndarray) -> np.ndarray:
        """(Q, w) words -> (Q, n) booleans."""
        return np.unpackbits(bits.view(np.uint8), axis=-1, bitorder="little")[:, : self.n].astype(bool)

    def _intervals(self, p: _Predicates) -> tuple[np.ndarray, np.ndarray]:
        """Each condition's rank interval [lo, hi] (empty when hi < lo); "is missing" is the rank of
        every missing value, one past the column's distinct values."""
        q, k = p.cols.shape
        lo = np.zeros((q, k), np.int64)
        hi = np.zeros((q, k), np.int64)
        for j in np.unique(p.cols):
            at = p.cols == j
            u, v, op = self.uniq[j], p.vals[at], p.ops[at]
            left = np.searchsorted(u, v, "left")
            right = np.searchsorted(u, v, "right") - 1
            lo[at] = np.where(op == 0, len(u), np.where(op == 3, 0, left))
            hi[at] = np.where(op == 0, len(u), np.where(op == 2, len(u) - 1, right))
        return lo, hi

    def bits(self, p: _Predicates) -> np.ndarray:
        """(Q, w) uint64: the rows each predicate matches."""
        q, k = p.cols.shape
        out = np.full((q, self.w), np.uint64(0xFFFFFFFFFFFFFFFF))
        if self.n % 64:
            out[:, -1] = np.uint64((1 << (self.n % 64)) - 1)
        lo, hi = self._intervals(p)
        for j in np.unique(p.cols):
            at = p.cols == j
            ks, inv = np.unique(np.concatenate([hi[at], lo[at] - 1]), return_inverse=True)
            # block of each row: the first needed prefix that holds it (via a table over ranks)
            blk = np.searchsorted(ks, np.arange(len(self.uniq[j]) + 1), "left")[self.rank[j]]
            where = blk * self.w + self._word
            size = (len(ks) + 1) * self.w
            delta = (np.bincount(where, self._lo32, size).astype(np.uint64)
                     | (np.bincount(where, self._hi32, size).astype(np.uint64) << np.uint64(32)))
            prefix = np.bitwise_or.accumulate(delta.reshape(len(ks) + 1, self.w)[:-1], axis=0)
            n_at = int(at.sum())
            qi = np.nonzero(at)[0]
            out[qi] &= prefix[inv[:n_at]] & ~prefix[inv[n_at:]]
        return out

    def counts(self, p: _Predicates, cap: int | None = None) -> np.ndarray:
        """How many rows each predicate matches, counting no further than ``cap`` (``cap=2`` tells
        whether a predicate singles out one row: 0, 1 or "more")."""
        if not len(p):
            return np.zeros(0, np.int64)
        if _sn is None:  # pragma: no cover - numba is a dependency
            full = np.concatenate([np.bitwise_count(self.bits(p.take(slice(s, s + 2000)))).sum(1, dtype=np.int64)
                                   for s in range(0, len(p), 2000)])
            return full if cap is None else np.minimum(full, cap)
        if self._sorted is None:  # each column's rows sorted by rank, and where each rank starts
            rank = np.stack(self.rank) if self.d else np.zeros((0, self.n), np.int64)
            order = np.argsort(rank, axis=1, kind="stable")
            width = max((len(u) for u in self.uniq), default=0) + 2
            start = np.stack([np.searchsorted(rank[j][order[j]], np.arange(width), "left") for j in range(self.d)]) \
                if self.d else np.zeros((0, width), np.int64)
            self._sorted = (rank, order, start)
        lo, hi = self._intervals(p)
        return _sn.count_matches(*self._sorted, np.ascontiguousarray(p.cols), lo, hi,
                                 self.n + 1 if cap is None else int(cap))


def _unique_singling(cand: _Predicates, index: _BitIndex, seen: set, found: list, n_wanted: int) -> None:
    """Append to ``found`` the candidates that isolate exactly one synthetic record and are new."""
    ok = np.nonzero(index.counts(cand, cap=2) == 1)[0]
    if not len(ok):
        return
    keys = cand.take(ok).keys()
    for i, key in zip(ok, keys):
        if len(found) >= n_wanted:
            return
        if key not in seen:
            seen.add(key)
            found.append(cand.take(np.array([i])))


def _multivariate_queries(synth, is_cat, n_queries, n_cols, max_attempts, rng, batch=1000) -> _Predicates:
    """Anonymeter's multivariate attack: a random synthetic record and ``n_cols`` random columns;
    equality on a categorical value, a one-sided range towards the tail on a number (``>= v``
    above the synthetic median, ``<= v`` otherwise), "is missing" on a missing value."""
    d = synth.shape[1]
    n_cols = min(n_cols, d)
    med = np.zeros(d)
    for j in np.nonzero(~is_cat)[0]:
        x = synth[:, j]
        med[j] = np.median(x[~np.isnan(x)]) if (~np.isnan(x)).any() else 0.0
    index = _BitIndex(synth)
    found, seen, attempts = [], set(), 0
    while len(found) < n_queries and attempts < max_attempts:
        b = min(batch, max_attempts - attempts)
        rows = rng.integers(len(synth), size=b)
        cols = np.argsort(rng.random((b, d)), axis=1)[:, :n_cols]
        vals = synth[rows[:, None], cols]
        ops = np.where(np.isnan(vals), 0, np.where(is_cat[cols], 1, np.where(vals > med[cols], 2, 3)))
        _unique_singling(_Predicates(cols, ops, vals), index, seen, found, n_queries)
        attempts += b
    return _stack(found, n_cols)


def _univariate_queries(synth, is_cat, n_queries, rng) -> _Predicates:
    """Anonymeter's univariate attack: "is missing" where exactly one record is missing, the
    minimum and maximum of each number (``<= min``, ``>= max``) and every value held by one
    record only, shuffled; those isolating one synthetic record are kept."""
    cols, ops, vals = [], [], []
    for j in range(synth.shape[1]):
        x = synth[:, j]
        na = np.isnan(x)
        if na.sum() == 1:
            cols.append(j), ops.append(0), vals.append(np.nan)
        if not is_cat[j] and (~na).any():
            cols += [j, j]
            ops += [3, 2]
            vals += [float(np.nanmin(x)), float(np.nanmax(x))]
        u, c = np.unique(x[~na], return_counts=True)
        for v in u[c == 1]:
            cols.append(j), ops.append(1), vals.append(float(v))
    order = rng.permutation(len(cols))
    cand = _Predicates(np.asarray(cols, dtype=np.int64)[order, None], np.asarray(ops, dtype=np.int64)[order, None],
                       np.asarray(vals, dtype=float)[order, None])
    found, seen = [], set()
    _unique_singling(cand, _BitIndex(synth), seen, found, n_queries)
    return _stack(found, 1)


def _stack(found: list, k: int) -> _Predicates:
    if not found:
        return _Predicates(np.zeros((0, k), np.int64), np.zeros((0, k), np.int64), np.zeros((0, k)))
    return _Predicates(np.concatenate([f.cols for f in found]), np.concatenate([f.ops for f in found]),
                       np.concatenate([f.vals for f in found]))


def _singling_probability_integral(n, w_max):
    """Integral over w in [0, w_max] of n w (1 - w)^(n-1), the chance that a predicate of weight w
    isolates one record among n (Cohen & Nissim 2020), as Anonymeter fits it."""
    return (1.0 - (n * w_max + 1.0) * (1.0 - w_max) ** n) / (n + 1.0)


def _control_size_correction(masks: np.ndarray, n_target: int, rng) -> float:
    """Anonymeter's correction of the control success count for a control set of a different size
    than the training rows: the number of predicates isolating one record is measured on random
    subsets of the control rows (10 sizes x 5 draws), a curve norm * integral(n, w_eff) is fitted to
    it, and the count is scaled by curve(n_target) / curve(n_control)."""
    from scipy.optimize import curve_fit
    n_c = masks.shape[1]
    sizes, succ = [], []
    for n_rows in np.linspace(min(1000, n_c), n_c, 10).astype(int):
        for _ in range(5):
            sub = rng.choice(n_c, n_rows, replace=False)
            succ.append(int((masks[:, sub].sum(1) == 1).sum()))
            sizes.append(n_rows)
    sizes, succ = np.asarray(sizes, float), np.asarray(succ, float)

    def model(x, w_eff, norm):
        return norm * _singling_probability_integral(x, w_eff)

    w0 = 1.0 / sizes.max()
    p0 = (w0, 1.0 / _singling_probability_integral(sizes.max(), w0))
    try:
        popt, _ = curve_fit(model, sizes, succ, bounds=(0, (1, np.inf)), p0=p0)
    except (RuntimeError, ValueError):
        return 1.0
    den = model(n_c, *popt)
    return float(model(n_target, *popt) / den) if den > 0 else 1.0


def _posterior_size_correction(counts: np.ndarray, n_control: int, n_target: int) -> float:
    """Per-predicate correction of the control success count to the training rows' size.

    A predicate matching k of the n_c control rows has population weight w ~ Beta(k + 1, n_c - k + 1)
    (uniform prior); it isolates one of n rows with probability n w (1 - w)^(n - 1), whose posterior
    mean is n B(k + 2, n_c - k + n) / B(k + 1, n_c - k + 1).  The correction is the ratio of these
    expectations summed over the predicates at n = n_target and at n = n_control -- Anonymeter's
    ratio with each predicate's own weight in place of one effective weight fitted to subsample
    counts, so it does not swing with the noise of a two-parameter curve fit."""
    from scipy.special import betaln
    k = counts.astype(float)
    a, b = k + 1.0, n_control - k + 1.0

    def expected(n):
        return float(np.sum(n * np.exp(betaln(a + 1.0, b + n - 1.0) - betaln(a, b))))
    den = expected(n_control)
    return expected(n_target) / den if den > 0 else 1.0


def _isolation_at_size(counts: np.ndarray, n_rows: int, m: int) -> np.ndarray:
    """Per predicate, the probability that it isolates exactly one row of a uniformly random
    ``m``-row subset of the ``n_rows`` rows, given that it matches ``counts`` of them:
    hypergeometric ``k C(n - k, m - 1) / C(n, m)`` (the indicator ``k == 1`` when ``m == n``).

    Two i.i.d. samples of the same population, thinned to the same size, are again i.i.d. samples
    of one size, so their expected isolation rates are equal whatever the ratio of their sizes:
    a release independent of the training rows scores 0 in expectation, with no model of the
    predicates' weights (a larger set cannot be extrapolated to from a smaller one without one:
    ``n w (1 - w)^(n - 1)`` has no unbiased estimator from fewer than ``n`` draws)."""
    k = np.asarray(counts, dtype=float)
    if m >= n_rows:
        return (k == 1).astype(float)
    from scipy.special import gammaln

    def lchoose(a, b):
        return gammaln(a + 1.0) - gammaln(b + 1.0) - gammaln(a - b + 1.0)
    ok = (k >= 1) & (n_rows - k >= m - 1)
    out = np.zeros_like(k)
    kk = k[ok]
    out[ok] = np.exp(np.log(kk) + lchoose(n_rows - kk, m - 1.0) - lchoose(float(n_rows), float(m)))
    return np.minimum(out, 1.0)


SIZE_CORRECTIONS = ("subsample", "posterior", "fit", "none")


def _singling_out(t: _Tables, n_attacks: int, n_cols: int, seed: int, mode: str = "multivariate",
                  max_attempts: int = 100_000, size_correction: str = "subsample") -> dict:
    """Singling out as Anonymeter runs it (Giomi et al., PoPETs 2023): predicates built from the
    synthetic table that isolate exactly one distinct synthetic record; an attack succeeds when
    its predicate isolates exactly one distinct training record, and the control rate is the same
    on the holdout rows.  When the two sets differ in size (``size_correction``):

    ``"subsample"`` (default) compares both at the smaller size m, each predicate scored by its
    exact chance of isolating one row of a random m-row subset (:func:`_isolation_at_size`):
    unbiased under the null at any ratio.  With a holdout smaller than the training rows, a predicate
    isolating one training record counts m / n_train, so R is read against what a verbatim copy
    reaches, R = (tau_train - tau_control) / (m / n_train - tau_control): a copy reads 1 and a
    half-copied release about .5 at any ratio (as Anonymeter's R at equal sizes, where m / n_train is
    1), and a smaller holdout costs power -- the interval widens by about (1 - tau_control) /
    (m / n_train - tau_control), 7x on make_demo at 2000:500 -- never bias or scale.  Where the
    control rate reaches m / n_train there is no scale: risk NaN, with a warning.
    ``"fit"`` is Anonymeter's curve fit (:func:`_control_size_correction`), ``"posterior"``
    :func:`_posterior_size_correction`, ``"none"`` raw rates: all three are biased
    for a non-member release when the sizes differ (``"posterior"``: about +0.15 at a 1:4
    holdout, -0.1 at 3:1, because its uniform prior on a predicate's weight ignores that the
    predicate was chosen to isolate one synthetic record); kept to reproduce earlier numbers."""
    t.need_holdout("singling_out_risk")
    if mode not in SINGLING_OUT_MODES:
        raise ConfigError(f"mode: singling out runs {SINGLING_OUT_MODES}, got {mode!r}")
    if size_correction not in SIZE_CORRECTIONS:
        raise ConfigError(f"size_correction must be one of {SIZE_CORRECTIONS}, got {size_correction!r}")
    schema = t.schema
    rng = np.random.default_rng(seed)
    synth = _so_matrix(t.synthetic, schema, "synthetic")
    train = _so_matrix(t.train, schema, "train")
    control = _so_matrix(t.holdout, schema, "holdout")
    is_cat = np.array([c.kind == "categorical" for c in schema.columns])
    if mode == "multivariate":
        preds = _multivariate_queries(synth, is_cat, n_attacks, n_cols, max_attempts, rng)
    else:
        preds = _univariate_queries(synth, is_cat, n_attacks, rng)
    q = len(preds)
    n_t, n_c = len(train), len(control)
    m = min(n_t, n_c) if size_correction == "subsample" else n_t
    if q == 0:
        return {**normalised_risk(0, 1, 0, 1), "n_predicates": 0, "mode": mode, "control_correction": 1.0,
                "size_correction": size_correction, "compared_at": m, "tau_copy": m / n_t if n_t else 1.0}
    sub = size_correction == "subsample" and n_t != n_c
    tcounts = _BitIndex(train).counts(preds, cap=None if sub and n_t > m else 2)
    succ = float(_isolation_at_size(tcounts, n_t, m).sum()) if sub else float((tcounts == 1).sum())
    cindex = _BitIndex(control)
    ccounts = cindex.counts(preds)
    raw_ctrl = float((ccounts == 1).sum())
    ctrl, correction = raw_ctrl, 1.0
    if sub:
        ctrl = float(_isolation_at_size(ccounts, n_c, m).sum())
        correction = ctrl / raw_ctrl if raw_ctrl > 0 else 1.0
    elif n_c != n_t and size_correction == "fit":
        correction = _control_size_correction(cindex.unpack(cindex.bits(preds)), n_t, rng)
    elif n_c != n_t and size_correction == "posterior":
        correction = _posterior_size_correction(ccounts, n_c, n_t)
    if not sub:
        ctrl = min(ctrl * correction, q)
    # a predicate isolating one training record isolates it in a random m-row subset with probability m / n_t:
    # what a verbatim copy reaches, so the scale's 1
    top = m / n_t if sub else 1.0
    res = normalised_risk(succ, q, ctrl, q, top=top)
    if math.isnan(res["risk"]):  # the reason also under "why", for evaluate's nan_reasons and the report
        res["why"] = (f"singling_out_risk: a holdout of {count(n_c, 'row')} isolates records as often as a copy of "
                      f"the {count(n_t, 'training row')} would ({res['tau_control']:.3f} >= {top:.3f}), so no risk "
                      "can be read; use a holdout as large as the training rows")
        warnings.warn(res["why"], RuntimeWarning, stacklevel=3)
    res.update(n_predicates=q, mode=mode, control_correction=correction, size_correction=size_correction,
               compared_at=m, tau_copy=top)
    return res


def inference_risk(train, synthetic, holdout, schema, secret: str | None = None, n_attacks: int = 1000,
                   tolerance: float = 0.05, seed: int = 0) -> dict:
    """Attribute-inference risk R with 95% CI (keys ``risk``, ``ci_low``, ``ci_high``, rates).
    ``secret`` defaults to the schema's target; numeric guesses within ``tolerance`` x the
    column's public range count as correct."""
    return _inference(_Tables(train, synthetic, holdout, schema), secret,
                      check_positive_int(n_attacks, "n_attacks"), tolerance, seed)


def linkability_risk(train, synthetic, holdout, schema, n_attacks: int = 1000, seed: int = 0, aux_cols=None,
                     ties: str = "any") -> dict:
    """Linkability risk R with 95% CI (Anonymeter's attack, Giomi et al. 2023); ``aux_cols`` = (columns
    A, columns B), default a random split of the columns in halves; ``ties`` see :func:`_linkability`.
    Distances are Gower distances on the schema's public bounds (Anonymeter scales numbers by the
    range the two frames show; the same when those ranges are the bounds)."""
    return _linkability(_Tables(train, synthetic, holdout, schema), check_positive_int(n_attacks, "n_attacks"),
                        seed, aux_cols, ties)


def singling_out_risk(train, synthetic, holdout, schema, n_attacks: int = 500, n_cols: int = 3,
                      mode: str = "multivariate", seed: int = 0, max_attempts: int = 100_000,
                      size_correction: str = "subsample") -> dict:
    """Singling-out risk R with 95% CI, as Anonymeter defines it (Giomi et al., "A unified framework
    for quantifying privacy risk in synthetic data", PoPETs 2023).

    ``mode="multivariate"`` builds each predicate from a random synthetic record on ``n_cols`` random
    columns -- equality on categories, one-sided ranges towards the tail on numbers (``>= v`` when v
    lies above the synthetic median, ``<= v`` otherwise); ``"univariate"`` uses single-column
    predicates: values held by one record, each number's minimum and maximum, a lone missing value.
    A predicate counts when it isolates exactly one distinct synthetic record; the attack succeeds
    when it isolates exactly one distinct training record, the control rate is the same on the
    holdout rows, and R = (tau_train - tau_control) / (1 - tau_control) at equal sizes (1: the rate a
    copy of the training rows reaches; ``tau_copy`` below where the holdout is smaller).

    A holdout of another size than the training rows isolates records at another rate (a
    predicate of weight w isolates one of n rows with probability n w (1 - w)^(n - 1)); by default
    both sides are compared at the smaller size, exactly (``size_correction``, see
    :func:`_singling_out`), so a release independent of the training rows scores ~0 and a verbatim
    copy 1 at any ratio.  Anonymeter instead scales the control count by one curve fitted to subsample counts
    (``"fit"``; on adult (80/20) that factor swung from 0.25 to 2.4 between draws).  Other
    differences from Anonymeter 1.1: R is not clipped
    at 0 (a negative value says the release singles out non-members as often), rates are plain
    shares of the predicates found rather than Wilson-centred shares of ``n_attacks`` (the same
    when all ``n_attacks`` predicates are found), and ``max_attempts`` defaults to 100,000 rather
    than 10 million candidates.  Keys: ``risk``, ``ci_low``, ``ci_high``, ``tau_train``,
    ``tau_control`` (both at the compared size), ``tau_copy`` (the rate a verbatim copy reaches at that
    size, the 1 of the scale: R = (tau_train - tau_control) / (tau_copy - tau_control)), ``n_predicates``,
    ``control_correction``, ``size_correction``, ``compared_at`` (the row count both rates refer to)."""
    return _singling_out(_Tables(train, synthetic, holdout, schema), check_positive_int(n_attacks, "n_attacks"),
                         check_positive_int(n_cols, "n_cols"), seed, mode,
                         check_positive_int(max_attempts, "max_attempts"), size_correction)


# ---------------------------------------------------------------------------------------
# all at once
# ---------------------------------------------------------------------------------------

PRIVACY_METRICS = ("dcr", "ims", "nndr", "domias", "singling_out", "linkability", "inference")


def privacy_scores(train: pd.DataFrame, synthetic: pd.DataFrame, holdout: pd.DataFrame, schema: Schema,
                   metrics=PRIVACY_METRICS, alpha: float = 0.05, n_attacks: int = 1000, seed: int = 0) -> pd.DataFrame:
    """Every privacy metric in one pass (nearest-neighbour searches shared).

    Returns one row per metric: ``metric``, ``risk`` (normalised, 0 = like a non-member release,
    1 = maximal), ``ci_low``/``ci_high`` (attacks), ``raw`` (the metric's natural value: share,
    AUC or attack success rate) and ``detail`` (a dict of the rest).  ``train`` may be a
    :class:`_Tables` already holding the three frames (and their cached searches)."""
    t = train if isinstance(train, _Tables) else _Tables(train, synthetic, holdout, schema)
    t.need_holdout("privacy_scores")
    alpha = _alpha(alpha)
    n_attacks = check_positive_int(n_attacks, "n_attacks")
    rows = []
    for m in metrics:
        if m == "dcr":
            r = _dcr(t, alpha)
            rows.append(("dcr_risk", r["risk"], np.nan, np.nan, r["median_dcr_synthetic"], r))
        elif m == "ims":
            r = _ims(t)
            rows.append(("identical_match_risk", r["risk"], np.nan, np.nan, r["share"], r))
        elif m == "nndr":
            r = _nndr(t, alpha)
            rows.append(("nndr_risk", r["risk"], np.nan, np.nan, r["mean_nndr_synthetic"], r))
        elif m == "domias":
            r = _domias(t, 2 * n_attacks, seed)
            rows.append(("domias_auc", r["auc"], np.nan, np.nan, r["auc"], r))
        elif m == "singling_out":
            r = _singling_out(t, max(1, n_attacks // 2), 3, seed)
            rows.append(("singling_out_risk", r["risk"], r["ci_low"], r["ci_high"], r["tau_train"], r))
        elif m == "linkability":
            r = _linkability(t, n_attacks, seed)
            rows.append(("linkability_risk", r["risk"], r["ci_low"], r["ci_high"], r["tau_train"], r))
        elif m == "inference":
            r = _inference(t, None, n_attacks, 0.05, seed)
            rows.append(("inference_risk", r["risk"], r["ci_low"], r["ci_high"], r["tau_train"], r))
        else:
            raise ConfigError(f"metrics: unknown privacy metric {m!r}; choose from {PRIVACY_METRICS}")
    return pd.DataFrame(rows, columns=["metric", "risk", "ci_low", "ci_high", "raw", "detail"])

"""GUM, the Gradually Update Method of PrivSyn.

Zhang, Wang, Li, He, Chen, Chen, "PrivSyn: Differentially Private Data Synthesis"
(USENIX Security 2021), Section 6.  ``fit`` makes the noisy marginals consistent and
non-negative (:mod:`synthzoo.models.consistency`); ``sample`` starts from records drawn
attribute by attribute from the one-way marginals and then, for a number of rounds, visits
every marginal (worst-fitting first) and moves records from over-represented cells to
under-represented ones: a share of the moved records become copies of records that already
lie in the under-represented cell ("duplicate"), the rest only get the marginal's attributes
overwritten ("replace").  The step size ``alpha`` caps the relative change of a cell per step
and decays over the rounds, which is what makes the procedure converge.

Everything is vectorised over records and cells; the only Python loops run over rounds and
marginals.  Post-processing only: no privacy cost.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ..core.base import WORK_ROWS, MeasurementModel, register
from ..core.domain import Domain, Measurement, count
from ..core.errors import ConfigError
from ..core.params import Function, Integral, Interval, Options, Real, Sequence
from ..core.sampling import allocate
from ..core.statecheck import INTEGER, NUMBER, TEXT, shaped
from .consistency import make_consistent

_PAPER = "Zhang et al., PrivSyn: Differentially Private Data Synthesis (USENIX Security 2021)"


class _Target:
    """One marginal GUM fits: column indices, strides for cell keys, cell table and target shares."""

    def __init__(self, domain: Domain, clique: tuple, counts: np.ndarray):
        self.clique = clique
        self.cols = np.array([domain.index(a) for a in clique], dtype=np.int64)
        self.shape = tuple(domain.project(clique).shape)
        self.cells = int(np.prod(self.shape, dtype=np.int64))
        self.strides = [int(np.prod(self.shape[i + 1:], dtype=np.int64)) for i in range(len(clique))]
        self.key_dtype = np.uint16 if self.cells <= 2 ** 16 else np.int64
        self.table = np.stack(np.unravel_index(np.arange(self.cells), self.shape), axis=1).astype(np.int32)
        flat = np.asarray(counts, dtype=float).ravel()
        tot = flat.sum()
        self.share = flat / tot if tot > 0 else np.full(self.cells, 1.0 / self.cells)
        self.copy_cols = None  # columns a duplicated record takes from its source (None: all)

    def keys(self, rec: np.ndarray) -> np.ndarray:
        """Cell index of every record.  Where the marginal has at most 65,536 cells the key is computed in
        16 bits from 16-bit records (numpy counts and compares 16-bit keys several times faster)."""
        if self.key_dtype == np.uint16 and rec.dtype == np.uint16:
            key = rec[:, self.cols[0]] * np.uint16(self.strides[0])
            for c, s in zip(self.cols[1:], self.strides[1:]):
                key += rec[:, c] * np.uint16(s)  # no overflow: every key is below cells <= 65,536
            return key
        wide = np.int32 if self.cells < 2 ** 31 else np.int64
        key = rec[:, self.cols[0]].astype(wide) * self.strides[0]
        for c, s in zip(self.cols[1:], self.strides[1:]):
            key += rec[:, c].astype(wide) * s
        return key.astype(self.key_dtype, copy=False)

    def error(self, rec: np.ndarray) -> float:
        """L1 distance between the records' share per cell and the target share."""
        n = rec.shape[0]
        return float(np.abs(np.bincount(self.keys(rec), minlength=self.cells) / n - self.share).sum())


def _reduce_level(excess: np.ndarray, synth: np.ndarray, need: float) -> float:
    """Smallest beta in [0, 1] with sum(min(excess, beta * synth)) >= need (PrivSyn's beta), in closed form."""
    ratio = excess / synth
    o = np.argsort(ratio, kind="stable")
    r, e, s = ratio[o], excess[o], synth[o]
    done = np.concatenate([[0.0], np.cumsum(e)])            # excess of the k most saturated cells
    rest = np.concatenate([np.cumsum(s[::-1])[::-1], [0.0]])  # synth share of the others
    if need >= done[-1]:
        return 1.0
    at = done[:-1] + r * rest[:-1]                           # f(beta) at each breakpoint, increasing
    k = int(np.searchsorted(at, need, side="left"))
    return float(min(1.0, (need - done[k]) / rest[k])) if rest[k] > 0 else 1.0


def _pick(key: np.ndarray, cnt: np.ndarray, want: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Positions of ``want[c]`` records of every cell ``c`` (all of its records where it has fewer),
    grouped by cell in cell order; every record of a cell is picked with the same probability.

    A first pass keeps each record of cell ``c`` with probability ``q_c``, set so that about
    ``want + 4 sqrt(want) + 4`` of the cell's records pass (fewer than ``want`` pass with negligible
    probability; then all that passed are taken); the cell's picks are a cyclic window of its
    candidates at a random offset.  Only the candidates are sorted (by cell, a radix sort on 16-bit
    keys), never all records, and the records need no reshuffling between rounds.
    """
    want = np.minimum(want, cnt)
    live = want > 0
    w = want[live].astype(float)
    thr = np.zeros(cnt.size, dtype=np.uint32)  # q_c in units of 2**-16 (rounded up)
    thr[live] = np.ceil(np.minimum(1.0, (w + 4.0 * np.sqrt(w) + 4.0) / cnt[live]) * 65536)
    cand = np.flatnonzero(rng.integers(0, 65536, key.size, dtype=np.uint16) < thr[key])
    ck = key[cand]
    o = np.argsort(ck, kind="stable")
    cand, ck = cand[o], ck[o]
    ccnt = np.bincount(ck, minlength=cnt.size)
    take = np.minimum(want, ccnt)
    start = np.cumsum(ccnt) - ccnt
    offset = np.floor(rng.random(cnt.size) * ccnt).astype(np.int64)
    j = np.arange(int(take.sum())) - np.repeat(np.cumsum(take) - take, take)
    return cand[np.repeat(start, take) + (np.repeat(offset, take) + j) % np.repeat(np.maximum(ccnt, 1), take)]


def _update(rec: np.ndarray, tgt: _Target, alpha: float, dup_ratio: float, rng: np.random.Generator) -> float:
    """One GUM step on one marginal, in place: move records from over- to under-represented cells.
    Returns the marginal's L1 error before the step (the next round's order of the marginals).

    The records an over-represented cell gives up, and those an under-represented cell lends as
    sources of copies, are uniformly random subsets of the cell (:func:`_pick`).
    """
    n = rec.shape[0]
    key = tgt.keys(rec)
    cnt = np.bincount(key, minlength=tgt.cells)
    s = cnt / n
    t = tgt.share
    err = float(np.abs(s - t).sum())
    under = (s < t) & (cnt > 0)
    zero = (cnt == 0) & (t > 0)
    add = np.zeros(tgt.cells, dtype=np.int64)
    # a cell grows by at most alpha times its current size (cells still empty: alpha times the target)
    add[under] = np.rint(np.minimum(t[under] - s[under], alpha * s[under]) * n)
    add[zero] = np.rint(alpha * t[zero] * n)
    need = int(add.sum())
    is_over = s > t
    over = np.flatnonzero(is_over)
    if need == 0 or over.size == 0:
        return err
    beta = _reduce_level(s[over] - t[over], s[over], need / n)
    red = np.minimum(np.rint(np.minimum(s[over] - t[over], beta * s[over]) * n).astype(np.int64), cnt[over])

    cells_u = np.flatnonzero(under & (add > 0))
    a_u = add[cells_u]
    k_dup = np.minimum(np.rint(dup_ratio * a_u).astype(np.int64), cnt[cells_u])
    want = np.zeros(tgt.cells, dtype=np.int64)  # over and under cells are disjoint: one pass picks both
    want[over] = red
    want[cells_u] = k_dup
    picked = _pick(key, cnt, want, rng)
    from_over = is_over[key[picked]]
    throw = picked[from_over]
    if throw.size == 0:
        return err
    src = picked[~from_over]  # grouped by cell, in the order of cells_u
    k_dup = np.bincount(key[src], minlength=tgt.cells)[cells_u]  # what each cell could lend
    cells_z = np.flatnonzero(zero)
    rep_cells = np.concatenate([np.repeat(cells_u, a_u - k_dup), np.repeat(cells_z, add[cells_z])])

    n_dup, total = src.size, src.size + rep_cells.size
    throw = rng.permutation(throw)
    if throw.size < total:
        # fewer records freed than requested (rounding): serve a random subset of the requests
        pick = np.sort(rng.choice(total, size=throw.size, replace=False))
        is_dup = pick < n_dup
        src = src[pick[is_dup]]
        rep_cells = rep_cells[pick[~is_dup] - n_dup]
        n_dup = src.size
    else:
        throw = throw[:total]
    if n_dup:
        if tgt.copy_cols is None:
            rec[throw[:n_dup]] = rec[src]
        else:
            for col in tgt.copy_cols:
                rec[throw[:n_dup], col] = rec[src, col]
    if rep_cells.size:
        rows = throw[n_dup:]
        for c, col in enumerate(tgt.cols):
            rec[rows, col] = tgt.table[rep_cells, c]
    return err


#: Most records one GUM run of the sampler holds (the pool, or the training-size estimate it follows).
MAX_RUN = 10_000_000


@register("model", "gum")
class GUM(MeasurementModel):
    """PrivSyn's Gradually Update Method (Zhang et al., USENIX Security 2021).

    Parameters
    ----------
    iterations : int, default 100
        Rounds over all marginals in :meth:`sample`.
    alpha : float, default 1.0
        Initial step size (largest relative growth of a cell in one step), in (0, 1].
    alpha_decay, decay_every : float, int, default 0.84, 20
        Step decay, ``alpha_t = alpha * alpha_decay ** (t // decay_every)`` (PrivSyn's schedule).
    duplicate_ratio : float or pair of floats, default (0.5, 1.0)
        Share of moved records that copy an existing record of the target cell ("duplicate"; the
        rest are "replaced"), alternating between the two values on even and odd rounds (PrivSyn's
        strategy "S5" is ``(0.5, 1.0)``).
    duplicate_scope : {"neighbours", "record"}, default "neighbours"
        Which attributes a duplicated record copies from its source; see Notes.
    consist_iterations : int, default 100
        Most rounds of (consistency, Norm-Sub) in :meth:`fit`.
    progress : callable or None, default None
        ``callable(round, rounds, mean_l1_error)``; when None a tqdm bar is shown on a TTY.
    pool : int or None, default 20_000
        When the pipeline draws a sample (:meth:`sampler`), GUM runs on at most ``max(pool, the
        model's estimate of the number of training records)`` records: a sample up to that size is
        one GUM run, as in PrivSyn (which synthesises as many records as the table has; the estimate
        counts up to :data:`MAX_RUN`, 10^7, so that memory stays bounded); a larger
        one is drawn from that run's records, each used equally often (``n // size`` or one more
        times, in a random order), as RAP++ and GSD cycle their synthetic tables, so that its time
        per row stays close to the other models' instead of growing with GUM's rounds.  The
        decoding (values inside bins, members of merged categories) is drawn afresh for every row.
        ``None``: one GUM run on all ``n`` records (time and memory grow with ``n``; refused in a
        model file, which may not make sampling unbounded).

    Notes
    -----
    ``duplicate_scope="record"`` is PrivSyn's whole-record copy; ``"neighbours"`` copies the
    marginal's attributes and those of every marginal overlapping it, so all measured correlations
    touching the marginal move with the record, while attributes unrelated to it keep their
    values.  Whole-record copies shrink the number of distinct records and so add spurious
    correlation between attributes no marginal links (on adult at epsilon=1: mean 2-way TVD 0.032
    vs 0.039).

    Examples
    --------
    >>> sz.Synthesizer(preprocess=["privtree"], select="indif", model=GUM(iterations=50), epsilon=1.0)  # doctest: +SKIP
    """

    paper = _PAPER
    # sample() runs `iterations` rounds over all marginals on a run of up to `pool` records
    _load_limits = {"iterations": 10_000, "pool": MAX_RUN}
    _parameter_constraints = {
        "iterations": [Interval(Integral, 0, None)], "alpha": [Interval(Real, 0, 1, closed="right")],
        "alpha_decay": [Interval(Real, 0, 1, closed="right")], "decay_every": [Interval(Integral, 1, None)],
        "duplicate_ratio": [Interval(Real, 0, 1), Sequence(Interval(Real, 0, 1), length=2)],
        "duplicate_scope": [Options("neighbours", "record")], "consist_iterations": [Interval(Integral, 1, None)],
        "progress": [None, Function()], "pool": [None, Interval(Integral, 1, None)]}

    def __init__(self, iterations: int = 100, alpha: float = 1.0, alpha_decay: float = 0.84, decay_every: int = 20,
                 duplicate_ratio=(0.5, 1.0), duplicate_scope: str = "neighbours", consist_iterations: int = 100,
                 progress: Callable[[int, int, float], None] | None = None, pool: int | None = 20_000):
        self.iterations = iterations
        self.alpha = alpha
        self.alpha_decay = alpha_decay
        self.decay_every = decay_every
        self.duplicate_ratio = duplicate_ratio
        self.duplicate_scope = duplicate_scope
        self.consist_iterations = consist_iterations
        self.progress = progress
        self.pool = pool

    @classmethod
    def hyperparameter_space(cls) -> dict:
        return {"iterations": ("int", 20, 200), "alpha": ("float", 0.2, 1.0), "alpha_decay": ("float", 0.5, 1.0),
                "decay_every": ("int", 5, 40), "duplicate_scope": ("cat", ["neighbours", "record"])}

    def _dup_ratios(self) -> tuple[float, float]:
        dr = self.duplicate_ratio
        return (float(dr), float(dr)) if isinstance(dr, (int, float)) else (float(dr[0]), float(dr[1]))

    # ------------------------------------------------------------------- fit
    def _fit(self, domain: Domain, measurements: list[Measurement], rng: np.random.Generator) -> None:
        """Make the measurements consistent and non-negative (post-processing; spends nothing)."""
        try:
            margs, total = make_consistent(domain, measurements, iterations=self.consist_iterations)
        except ValueError as e:
            raise ConfigError(f"GUM: {e}") from None
        self._set_fitted(domain, margs, total, int(rng.integers(0, 2 ** 62)))

    def _set_fitted(self, domain: Domain, margs: dict, total: float, seed: int) -> None:
        self._fitted(domain)
        self.marginals_ = margs
        self.total_ = float(total)
        self._seed = int(seed)
        self._internal = None  # synthetic set answering project() for cliques no marginal covers

    # ---------------------------------------------------------------- sample
    def _targets(self) -> tuple[list[_Target], list[np.ndarray]]:
        """Marginals to fit (those not inside another) and the one-way share of every attribute."""
        cl = list(self.marginals_)
        maximal = [c for c in cl if not any(set(c) < set(o) for o in cl)]
        targets = [_Target(self.domain_, c, self.marginals_[c]) for c in maximal]
        if self.duplicate_scope == "neighbours":
            for tg in targets:
                near = {a for c in maximal if set(c) & set(tg.clique) for a in c}
                tg.copy_cols = sorted(self.domain_.index(a) for a in near)
        one_way = []
        for a in self.domain_.attrs:
            holder = next((c for c in sorted(cl, key=len) if a in c), None)
            if holder is None:  # nothing measured about a: uniform over its (public) domain
                one_way.append(np.full(self.domain_[a], 1.0 / self.domain_[a]))
            else:
                arr = self.marginals_[holder]
                other = tuple(i for i, x in enumerate(holder) if x != a)
                one_way.append(arr.sum(axis=other) if other else arr)
        return targets, one_way

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` records (int codes, shape (n, len(domain))) fitted to the consistent marginals by GUM."""
        self._require_fit()
        n = self._check_n(n)
        d = len(self.domain_)
        if n == 0:
            return np.zeros((0, d), dtype=np.int64)
        targets, one_way = self._targets()
        # column-major: every step reads whole columns, while only the moved rows are written; 16-bit
        # codes where the domain allows (half the memory traffic, and 16-bit cell keys)
        wide = max(self.domain_.shape) > 2 ** 16
        rec = np.empty((n, d), dtype=np.int32 if wide else np.uint16, order="F")
        for i, p in enumerate(one_way):
            rec[:, i] = rng.permutation(np.repeat(np.arange(p.size), allocate(p, n)))

        rounds = int(self.iterations) if targets else 0  # nothing beyond one-way marginals: the draw above is final
        bar = None
        if self.progress is None and rounds:
            from tqdm.auto import tqdm
            bar = tqdm(total=rounds, desc="GUM", disable=None, leave=False)
        ratios = self._dup_ratios()
        for it in range(rounds):
            alpha = self.alpha * self.alpha_decay ** (it // self.decay_every)
            # worst-fitting marginals first, as PrivSyn does
            errors = np.array([tg.error(rec) for tg in targets])
            for k in np.argsort(-errors, kind="stable"):
                _update(rec, targets[k], alpha, ratios[it % 2], rng)
            if self.progress is not None:
                self.progress(it + 1, rounds, float(errors.mean()))
            elif bar is not None:
                bar.update(1)
                bar.set_postfix(l1=f"{errors.mean():.4f}", refresh=False)
        if bar is not None:
            bar.close()
        return rec.astype(np.int64)

    def sampler(self, n: int, rng: np.random.Generator):
        """Draw a sample of ``n`` records block by block from one GUM run on at most ``max(pool,
        estimated training records)`` records (see the ``pool`` parameter); ``rng`` drives that run
        and the order its records are used in."""
        self._require_fit()
        n = self._check_n(n)
        total = self.total_ if math.isfinite(self.total_) and self.total_ > 0 else 0.0
        size = n if self.pool is None else min(n, max(int(self.pool), min(math.ceil(total), MAX_RUN)))
        pool = self.sample(size, rng)
        if size == n:
            return lambda start, m, r: pool[start:start + m]
        order_seed = int(rng.integers(0, 2 ** 62))
        perms: dict = {}

        def draw(start: int, m: int, r) -> np.ndarray:
            # row i of the sample is pool[perm_e[i - e * size]] with e = i // size: every record is used
            # once per `size` rows, whichever blocks the rows are drawn in
            out = np.empty((m, pool.shape[1]), dtype=pool.dtype)
            i = start
            while i < start + m:
                e, off = divmod(i, size)
                if e not in perms:
                    perms.clear()
                    perms[e] = np.random.default_rng([order_seed, e]).permutation(size)
                k = min(size - off, start + m - i)
                out[i - start:i - start + k] = pool[perms[e][off:off + k]]
                i += k
            return out
        return draw

    def _sample_work(self) -> tuple[float, str]:
        """A run on :data:`~synthzoo.core.base.WORK_ROWS` records: every round visits every marginal, reading
        each record's cell key and a few random numbers per record, and counting, comparing and picking over
        every cell.  All the marginals are counted (those inside another are not visited: an upper bound
        found without comparing every pair, which finding them in :meth:`_targets` does once per run)."""
        if getattr(self, "domain_", None) is None:
            return 0.0, "not fitted"
        rounds, k = int(self.iterations), len(self.marginals_)
        width = sum(len(c) + 6 for c in self.marginals_)
        cells = sum(a.size for a in self.marginals_.values())
        work = rounds * (width + 10.0 * cells / WORK_ROWS) + k * k * 4.0 / WORK_ROWS + 4.0 * len(self.domain_)
        return work, f"iterations={rounds} x {k} marginals of {cells:.2g} cells"

    # --------------------------------------------------------------- project
    def _project(self, clique: tuple) -> np.ndarray:
        """Answered exactly from a consistent marginal that covers the clique; otherwise from an
        internal synthetic set drawn by GUM once (seeded at fit) and scaled to the total."""
        for c, arr in self.marginals_.items():
            if set(clique) <= set(c):
                other = tuple(i for i, a in enumerate(c) if a not in clique)
                out = arr.sum(axis=other) if other else arr
                kept = [a for a in c if a in clique]
                return np.transpose(out, [kept.index(a) for a in clique]).copy() if clique else np.asarray(out)
        if self._internal is None:
            size = int(min(max(round(self.total_), 1000), 100_000))
            self._internal = self.sample(size, np.random.default_rng(self._seed))
        idx = [self.domain_.index(a) for a in clique]
        counts = count(self._internal[:, idx], self.domain_.project(clique).shape)
        return counts * (self.total_ / self._internal.shape[0])

    # ----------------------------------------------------------------- state
    def _saved_params(self) -> dict:
        params = {k: v for k, v in self.get_params().items() if k != "progress"}  # a callback is not data
        params["duplicate_ratio"] = list(self._dup_ratios())
        return params

    _state_spec = {"total": NUMBER, "seed": INTEGER,
                   "marginals": [{"clique": [TEXT], "shape": [INTEGER], "counts": [NUMBER]}]}

    def _get_state(self) -> dict:
        """The consistent marginals (derived from noisy measurements only), the total and the seed
        of the internal set."""
        return {
            "total": self.total_,
            "seed": self._seed,
            "marginals": [{"clique": list(c), "shape": list(a.shape), "counts": a.ravel().tolist()}
                          for c, a in self.marginals_.items()],
        }

    def _set_state(self, state: dict, domain: Domain) -> None:
        total, seed = float(state["total"]), int(state["seed"])
        margs = {}
        for i, m in enumerate(state["marginals"]):
            clique = tuple(m["clique"])
            if (not all(isinstance(a, str) and a in domain for a in clique) or len(set(clique)) != len(clique)
                    or clique in margs or tuple(m["shape"]) != domain.project(clique).shape):
                raise ConfigError(f"GUM.set_state: marginal over {clique} does not fit the domain (or repeats)")
            margs[clique] = shaped(m["counts"], m["shape"], f"model file: model_state.marginals[{i}]")
            if not (np.all(np.isfinite(margs[clique])) and np.all(margs[clique] >= 0)):
                raise ConfigError(f"GUM.set_state: marginal over {clique} holds negative or non-finite counts")
            # counts of records: their sum is a record count, at most what a state may claim (finite counts
            # of 1e308 summed to inf, and sampling turned them into a broadcast error)
            if not margs[clique].sum() <= self.MAX_TOTAL:
                raise ConfigError(f"GUM.set_state: marginal over {clique} counts {margs[clique].sum():.3g} records, "
                                  f"more than a model file may claim ({self.MAX_TOTAL:g})")
        self._set_fitted(domain, margs, total, seed)

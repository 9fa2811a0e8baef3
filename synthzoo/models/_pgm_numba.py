"""Compiled kernels of :mod:`.pgm_engine` (numba): calibration and the whole mirror-descent loop.

The kernels read the junction tree from the plan's flat index arrays, so one compiled function
serves every model structure: nothing is recompiled when AIM's model grows a clique, and the
compiled code is cached on disk (:func:`~synthzoo.core.jit.cached_njit`) for later processes.  They run exactly the
algorithm of the numpy path in :mod:`.pgm_engine` (same loss, gradient, Armijo rule, momentum and
stopping rule), with every per-node and per-measurement step a loop instead of a numpy call: an adaptive
selector's ~10^4 iterations on small models cost microseconds each instead of the ~150 numpy calls'
overhead.  On large trees an iteration is bound by memory traffic: maps between tables are read as
blocks (:func:`~.pgm_engine.block_map`), and the one exponential per cell is vectorised
(:func:`_exp_below`).

What a fresh install's first fit spends compiling (numba's front end, mostly, not LLVM) is kept down three
ways.  A call from one cached kernel to another passes its constants typed (``np.int64(0)``,
``np.bool_(True)``): numba types a bare ``0`` or ``True`` as a literal and compiles another copy of the
callee for it (about 4 s).  Arrays are copied into slices by loops: ``a[lo:hi] = b[lo:hi]`` compiles numba's
broadcasting assignment and its shape-mismatch error (about 2 s for two of them).  Blocks of 2-4 cells are
written out rather than inlined (below ``_mul_run``; about 2.5 s).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..core.jit import cached_njit


#: Below this a message summed in probability space is recomputed by log-sum-exp: its terms are
#: ``exp(log-belief - node max)``, which lose their significant digits as they near the subnormal range.
_TINY = 1e-280


_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01  # ln 2 in two parts (Cody & Waite): k * _LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10
_ROUND = 6755399441055744.0  # 1.5 * 2**52: adding it rounds to an integer, held in the low mantissa bits
_ROUND_BITS = 0x4338000000000000  # its bit pattern
_CHUNK = 512


@cached_njit(nogil=True, fastmath={"contract"})
def _exp_below(t, lo, hi, top, u, kb):  # pragma: no cover - compiled
    """``u[i] = exp(t[i] - top)`` for ``i`` in ``[lo, hi)``, every ``t[i] <= top``; exact to about 1.5 ulp, 0 below
    ``e^-708`` (subnormal, where calibration recomputes from logs anyway), NaN for NaN. ``math.exp`` is a scalar
    libm call here (numba has no vector math library on this build), 5.3-5.8 ns a cell against 1.9-2.3 for this
    vectorised form (Cody-Waite reduction ``x = k ln2 + r``, ``|r| <= ln2 / 2``, Taylor polynomial to ``r^12``,
    ``2^k`` built in the exponent bits), and calibration takes one exponential per cell. ``kb``: scratch of
    :data:`_CHUNK` cells, so the exponent bits stay in the cache."""
    kbi = kb.view(np.int64)
    for c0 in range(lo, hi, _CHUNK):
        n = min(_CHUNK, hi - c0)
        # the chunk as views indexed from 0: an index the compiler knows is not negative needs no
        # wraparound test, without which the loops vectorise (2.4x faster than indexing t[c0 + i])
        tc, uc = t[c0:c0 + n], u[c0:c0 + n]
        for i in range(n):
            v = tc[i] - top
            v = v if v > -708.0 else -708.0
            kf = v * _LOG2E + _ROUND
            k = kf - _ROUND
            r = (v - k * _LN2_HI) - k * _LN2_LO
            p = 1.0 / 479001600.0
            p = p * r + 1.0 / 39916800.0
            p = p * r + 1.0 / 3628800.0
            p = p * r + 1.0 / 362880.0
            p = p * r + 1.0 / 40320.0
            p = p * r + 1.0 / 5040.0
            p = p * r + 1.0 / 720.0
            p = p * r + 1.0 / 120.0
            p = p * r + 1.0 / 24.0
            p = p * r + 1.0 / 6.0
            p = p * r + 0.5
            p = p * r + 1.0
            uc[i] = p * r + 1.0
            kb[i] = kf
        for i in range(n):
            kbi[i] = (kbi[i] - _ROUND_BITS + 1023) << 52
        for i in range(n):  # NaN stays NaN, so that a step that made one is rejected as before
            x = tc[i] - top
            uc[i] = uc[i] * kb[i] if x > -708.0 else (0.0 if x <= -708.0 else x)


#: Blocks shorter than this are summed inline: a call per block costs more than it saves there (the maps of
#: a node's kept or summed last axis of a few values; the layout of Plan leaves few of them).
_LONG = 16


@cached_njit(nogil=True, fastmath={"reassoc"})
def _bsum(x, lo, n):  # pragma: no cover - compiled
    """``x[lo:lo + n].sum()``, reassociated so that it vectorises (the order of a block's additions)."""
    s = 0.0
    xv = x[lo:lo + n]  # indexed from 0, so with no wraparound test: 3-4x faster on blocks of 16-1,800 cells
    for j in range(n):
        s += xv[j]
    return s


@njit(inline="always")
def _sum(x, lo, n):  # pragma: no cover - compiled
    if n >= _LONG:
        return _bsum(x, lo, n)
    s = 0.0
    xv = x[lo:lo + n]
    for j in range(n):
        s += xv[j]
    return s


@njit(inline="always")
def _add(dst, d, dd, src, o, od, n):  # pragma: no cover - compiled
    """``dst[d + j dd] += src[o + j od]`` for ``j < n`` (inlined where it is used).  Contiguous runs
    and a broadcast (``od`` 0) vectorise, 3x faster on blocks of hundreds of cells than the strided
    loop, so they get their own."""
    if dd == 1 and od == 1:
        dv, sv = dst[d:d + n], src[o:o + n]
        for j in range(n):
            dv[j] += sv[j]
    elif dd == 1 and od == 0:
        v, dv = src[o], dst[d:d + n]
        for j in range(n):
            dv[j] += v
    else:
        for j in range(n):
            dst[d + j * dd] += src[o + j * od]


@njit(inline="always")
def _fwd_run(src, s0, nb, dst, d0, bk, L, ds, summed):  # pragma: no cover - compiled
    """``nb`` blocks of ``L`` source cells from ``src[s0]``: each summed into ``dst[d0 + first]``, or added
    onto ``L`` cells ``ds`` apart from there."""
    for b in range(nb):
        o, d = s0 + b * L, d0 + bk[b]
        if summed:
            dst[d] += _sum(src, o, L)
        else:
            _add(dst, d, ds, src, o, 1, L)


@njit(inline="always")
def _bwd_run(out, o0, nb, vals, v0, bk, L, ds):  # pragma: no cover - compiled
    """The gather of ``nb`` blocks: ``out``'s ``L`` cells of block ``b`` get ``vals``' cells ``ds`` apart
    (``ds`` 0: the one cell) from ``v0 + first``."""
    for b in range(nb):
        _add(out, o0 + b * L, 1, vals, v0 + bk[b], ds, L)


@njit(inline="always")
def _mul_run(out, u, o0, nb, vals, bk, L, ds):  # pragma: no cover - compiled
    """``out = u * vals[target]`` over ``nb`` blocks (``ds`` 0: one value a block); returns the sum."""
    tot = 0.0
    for b in range(nb):
        o, d = o0 + b * L, bk[b]
        ov, uv = out[o:o + L], u[o:o + L]
        for j in range(L):
            ov[j] = uv[j] * vals[d + j * ds]
        tot += _sum(ov, np.int64(0), L)
    return tot


# Blocks of 2-4 cells (a summed or kept last axis of 2-4 values: reductions onto potentials, some parents' maps)
# are written out below, one statement a cell, so that no inner loop runs: 1.3-2x faster per cell than a loop
# whose length is only known at run time.  (They were the runs above inlined with ``L`` a constant; numba
# copies and re-types an inlined function's IR for every call, which cost a fresh install about 2.5 s of
# compiling for these three kernels.)  The additions keep the runs' order, so the sums are the same.


@cached_njit(nogil=True)
def _fwd(src, s0, n, dst, d0, k, B):  # pragma: no cover - compiled
    """Block map ``k`` (:func:`~.pgm_engine.block_map`; ``B`` the plan's block-map arrays) forward:
    source cells ``src[s0:s0 + n]`` added into ``dst[d0 + target]``."""
    kind, bL, bds, lo, blk = B
    L, ds, b0 = bL[k], bds[k], lo[k]
    nb = n // L
    bk, sv, dv = blk[b0:b0 + nb], src[s0:s0 + n], dst[d0:]
    if kind[k] == 0:  # each block summed onto one cell
        if L == 2:
            for b in range(nb):
                dv[bk[b]] += sv[2 * b] + sv[2 * b + 1]
        elif L == 3:
            for b in range(nb):
                dv[bk[b]] += sv[3 * b] + sv[3 * b + 1] + sv[3 * b + 2]
        elif L == 4:
            for b in range(nb):
                dv[bk[b]] += sv[4 * b] + sv[4 * b + 1] + sv[4 * b + 2] + sv[4 * b + 3]
        else:
            _fwd_run(sv, 0, nb, dv, 0, bk, L, 0, True)
    elif L == 2:  # each block added onto L cells ds apart
        for b in range(nb):
            d = bk[b]
            dv[d] += sv[2 * b]
            dv[d + ds] += sv[2 * b + 1]
    elif L == 3:
        for b in range(nb):
            d = bk[b]
            dv[d] += sv[3 * b]
            dv[d + ds] += sv[3 * b + 1]
            dv[d + 2 * ds] += sv[3 * b + 2]
    elif L == 4:
        for b in range(nb):
            d = bk[b]
            dv[d] += sv[4 * b]
            dv[d + ds] += sv[4 * b + 1]
            dv[d + 2 * ds] += sv[4 * b + 2]
            dv[d + 3 * ds] += sv[4 * b + 3]
    else:
        _fwd_run(sv, 0, nb, dv, 0, bk, L, ds, False)


@cached_njit(nogil=True)
def _bwd(out, o0, n, vals, v0, k, B):  # pragma: no cover - compiled
    """Block map ``k`` backward, a gather: ``out[o0 + i] += vals[v0 + target(i)]`` for ``i < n``."""
    kind, bL, bds, lo, blk = B
    L, b0 = bL[k], lo[k]
    nb = n // L
    bk, ov, vv = blk[b0:b0 + nb], out[o0:o0 + n], vals[v0:]
    if kind[k] == 0:  # a broadcast: one value a block
        if L == 2:
            for b in range(nb):
                v = vv[bk[b]]
                ov[2 * b] += v
                ov[2 * b + 1] += v
        elif L == 3:
            for b in range(nb):
                v = vv[bk[b]]
                ov[3 * b] += v
                ov[3 * b + 1] += v
                ov[3 * b + 2] += v
        elif L == 4:
            for b in range(nb):
                v = vv[bk[b]]
                ov[4 * b] += v
                ov[4 * b + 1] += v
                ov[4 * b + 2] += v
                ov[4 * b + 3] += v
        else:  # ds a constant 0, so that it vectorises
            _bwd_run(ov, 0, nb, vv, 0, bk, L, 0)
        return
    ds = bds[k]
    if L == 2:
        for b in range(nb):
            v = bk[b]
            ov[2 * b] += vv[v]
            ov[2 * b + 1] += vv[v + ds]
    elif L == 3:
        for b in range(nb):
            v = bk[b]
            ov[3 * b] += vv[v]
            ov[3 * b + 1] += vv[v + ds]
            ov[3 * b + 2] += vv[v + 2 * ds]
    elif L == 4:
        for b in range(nb):
            v = bk[b]
            ov[4 * b] += vv[v]
            ov[4 * b + 1] += vv[v + ds]
            ov[4 * b + 2] += vv[v + 2 * ds]
            ov[4 * b + 3] += vv[v + 3 * ds]
    else:
        _bwd_run(ov, 0, nb, vv, 0, bk, L, ds)


@cached_njit(nogil=True)
def _target(i, k, B):  # pragma: no cover - compiled
    """The target of source cell ``i`` under block map ``k`` (for the rare per-cell paths)."""
    kind, bL, bds, lo, blk = B
    b = i // bL[k]
    return blk[lo[k] + b] + (0 if kind[k] == 0 else (i - b * bL[k]) * bds[k])


@cached_njit(nogil=True)
def _bwd_mul_into(out, u, o0, n, vals, k, B):  # pragma: no cover - compiled
    """``out[o0 + i] = u[o0 + i] * vals[target(i)]`` through block map ``k`` (``out`` may be ``u``);
    returns their sum."""
    kind, bL, bds, lo, blk = B
    L, b0 = bL[k], lo[k]
    ds = 0 if kind[k] == 0 else bds[k]
    nb = n // L
    bk, ov, uv = blk[b0:b0 + nb], out[o0:o0 + n], u[o0:o0 + n]
    tot = 0.0
    if L == 2:
        for b in range(nb):
            d = bk[b]
            x0, x1 = uv[2 * b] * vals[d], uv[2 * b + 1] * vals[d + ds]
            ov[2 * b], ov[2 * b + 1] = x0, x1
            tot += x0 + x1
    elif L == 3:
        for b in range(nb):
            d = bk[b]
            x0, x1, x2 = uv[3 * b] * vals[d], uv[3 * b + 1] * vals[d + ds], uv[3 * b + 2] * vals[d + 2 * ds]
            ov[3 * b], ov[3 * b + 1], ov[3 * b + 2] = x0, x1, x2
            tot += x0 + x1 + x2
    elif L == 4:
        for b in range(nb):
            d = bk[b]
            x0, x1 = uv[4 * b] * vals[d], uv[4 * b + 1] * vals[d + ds]
            x2, x3 = uv[4 * b + 2] * vals[d + 2 * ds], uv[4 * b + 3] * vals[d + 3 * ds]
            ov[4 * b], ov[4 * b + 1], ov[4 * b + 2], ov[4 * b + 3] = x0, x1, x2, x3
            tot += x0 + x1 + x2 + x3
    elif kind[k] == 0:  # ds a constant 0, so that it vectorises
        tot = _mul_run(ov, uv, 0, nb, vals, bk, L, 0)
    else:
        tot = _mul_run(ov, uv, 0, nb, vals, bk, L, ds)
    return tot


@cached_njit(nogil=True)
def calibrate(logb, total, P, out, u, t, scr, lmsg, msg, sepsum):  # pragma: no cover - compiled
    """Hugin collect/distribute: ``out`` gets the node marginals (each node summing to ``total``).

    Beliefs are ``exp(log-belief - node max)``; messages are kept as logs on the absolute scale, and
    a separator cell whose every belief underflowed gets its message by a log-sum-exp over its
    cells (and its cells' marginals from logs), so extreme potentials lose nothing.  ``t`` holds
    the log-beliefs of nodes with children (a leaf's are ``logb``), ``scr`` is scratch of the
    separators' size.  Each node's map onto its separator (``sep_map``) and its parent's
    (``pp_map``) are block maps.  False when a node's marginal vanishes or is not finite.  ``P``:
    the plan's arrays (:meth:`~.pgm_engine.Plan.kernel_arrays`)."""
    node_lo, parent, child_ptr, child_list, sep_lo, sep_map, pp_map = P[:7]
    B = P[15:]
    kb = np.empty(_CHUNK)
    n_nodes = parent.shape[0]
    for c in range(n_nodes - 1, -1, -1):  # collect: children (later in the layout) first
        lo, hi = node_lo[c], node_lo[c + 1]
        c0, c1 = child_ptr[c], child_ptr[c + 1]
        top = -math.inf  # the node's largest log-belief
        if c0 < c1:  # the children's messages: a leaf's log-beliefs are its potentials (src = logb)
            tv, bv = t[lo:hi], logb[lo:hi]
            for i in range(hi - lo):
                tv[i] = bv[i]
            for j in range(c0, c1):
                _bwd(t, lo, hi - lo, lmsg, np.int64(0), pp_map[child_list[j]], B)
        src = t if c0 < c1 else logb
        sv = src[lo:hi]
        for i in range(hi - lo):
            top = max(top, sv[i])
        if not (top > -math.inf and top < math.inf):
            return False
        _exp_below(src, lo, hi, top, u, kb)
        if parent[c] >= 0:
            s0, s1 = sep_lo[c], sep_lo[c + 1]
            for s in range(s0, s1):
                msg[s] = 0.0
            _fwd(u, lo, hi - lo, msg, np.int64(0), sep_map[c], B)
            under = False
            for s in range(s0, s1):
                if msg[s] < _TINY:  # near-subnormal sums have lost their precision: from logs instead
                    msg[s] = 0.0
                if msg[s] > 0:
                    lmsg[s] = math.log(msg[s]) + top
                else:
                    under = True
            if under:  # log-sum-exp over the cells of the separator cells that underflowed
                for s in range(s0, s1):
                    scr[s] = -math.inf
                    sepsum[s] = 0.0
                for i in range(lo, hi):
                    s = _target(i - lo, sep_map[c], B)
                    if msg[s] == 0 and src[i] > scr[s]:
                        scr[s] = src[i]
                for i in range(lo, hi):
                    s = _target(i - lo, sep_map[c], B)
                    if msg[s] == 0 and scr[s] > -math.inf:
                        sepsum[s] += math.exp(src[i] - scr[s])
                for s in range(s0, s1):
                    if msg[s] == 0:
                        lmsg[s] = math.log(sepsum[s]) + scr[s] if sepsum[s] > 0 else -math.inf
    for c in range(n_nodes):  # distribute: parents first
        lo, hi = node_lo[c], node_lo[c + 1]
        p = parent[c]
        if p >= 0:
            s0, s1 = sep_lo[c], sep_lo[c + 1]
            for s in range(s0, s1):
                sepsum[s] = 0.0
            plo = node_lo[p]
            _fwd(out, plo, node_lo[p + 1] - plo, sepsum, np.int64(0), pp_map[c], B)
            under = False
            for s in range(s0, s1):
                if msg[s] > 0:
                    sepsum[s] = sepsum[s] / msg[s]
                else:  # an underflowed message: this separator cell's marginals from logs
                    scr[s] = math.log(sepsum[s]) - lmsg[s] if sepsum[s] > 0 else -math.inf
                    sepsum[s] = 0.0
                    under = True
            if not under:  # the parent's marginal gives this node its mass (``total`` up to rounding)
                tot = _bwd_mul_into(out, u, lo, hi - lo, sepsum, sep_map[c], B)
                if not (tot > 0 and tot < math.inf):
                    return False
                continue
            _bwd_mul_into(u, u, lo, hi - lo, sepsum, sep_map[c], B)
            src = t if child_ptr[c] < child_ptr[c + 1] else logb
            tot = 0.0
            for i in range(lo, hi):
                s = _target(i - lo, sep_map[c], B)
                if msg[s] == 0 and scr[s] > -math.inf:
                    u[i] = math.exp(src[i] + scr[s])
                tot += u[i]
        else:
            tot = _sum(u, lo, hi - lo)
        if not (tot > 0 and tot < math.inf):
            return False
        f = total / tot
        ov, uv = out[lo:hi], u[lo:hi]
        for i in range(hi - lo):
            ov[i] = uv[i] * f
    return True



@cached_njit(nogil=True)
def _reduce(z, marg, P):  # pragma: no cover - compiled
    """The plan's reduction program forward: node marginals ``marg`` summed onto the potential
    cliques (``z[:T]``) through the intermediates (``z[T:]``)."""
    st_node, st_src, st_len, st_dst, st_map = P[7:12]
    B = P[15:]
    z[:] = 0.0
    for s in range(st_src.shape[0]):
        if st_node[s]:
            _fwd(marg, st_src[s], st_len[s], z, st_dst[s], st_map[s], B)
        else:
            _fwd(z, st_src[s], st_len[s], z, st_dst[s], st_map[s], B)


@cached_njit(nogil=True)
def _spread(node, z, vals, P):  # pragma: no cover - compiled
    """The reduction program backward: per-potential ``vals`` (length ``T``) summed onto the node
    cells they belong to (``node``; zero elsewhere), through the intermediates in ``z``."""
    st_node, st_src, st_len, st_dst, st_map = P[7:12]
    B = P[15:]
    nT = vals.shape[0]
    for i in range(nT):
        z[i] = vals[i]
    z[nT:] = 0.0
    node[:] = 0.0
    for s in range(st_src.shape[0] - 1, -1, -1):
        if st_node[s]:
            _bwd(node, st_src[s], st_len[s], z, st_dst[s], st_map[s], B)
        else:
            _bwd(z, st_src[s], st_len[s], z, st_dst[s], st_map[s], B)


@cached_njit(nogil=True)
def _measurements(out, vals, P, forward):  # pragma: no cover - compiled
    """Through each measurement's map from its potential: forward, the measurement marginals ``out``
    (length ``M``) of the potential marginals ``vals = z[:T]``; backward, the loss's gradient over
    the potentials ``out`` (length ``T``) of the weighted residuals ``vals``."""
    ms_map, ms_src, ms_len = P[12:15]
    B = P[15:]
    out[:] = 0.0
    for m in range(ms_map.shape[0]):
        if forward:
            _fwd(vals, ms_src[m], ms_len[m], out, np.int64(0), ms_map[m], B)
        else:
            _bwd(out, ms_src[m], ms_len[m], vals, np.int64(0), ms_map[m], B)


@cached_njit(nogil=True)
def _evaluate(lb, total, y, w, P, marg, u, t, scr, lmsg, msg, sepsum, z, ym, wr):  # pragma: no cover - compiled
    """Marginals of the model with node log-potentials ``lb``, its measurement marginals ``ym``,
    weighted residuals ``wr`` and loss; loss NaN when calibration failed."""
    if not calibrate(lb, total, P, marg, u, t, scr, lmsg, msg, sepsum):
        return math.nan
    _reduce(z, marg, P)
    _measurements(ym, z, P, np.bool_(True))  # the potential marginals are z[:T]
    loss = 0.0
    for i in range(y.shape[0]):
        r = ym[i] - y[i]
        wr[i] = w[i] * r
        loss += 0.5 * r * wr[i]
    return loss


@cached_njit(nogil=True)
def mirror_descent(T, y, w, total, iters, tol, window, scale, alpha, mom, P, Z):  # pragma: no cover - compiled
    """The loop of :func:`synthzoo.models.pgm_engine.mirror_descent`; returns
    ``(T, marg, iterations, loss, alpha, converged)``.  ``T`` is updated in place."""
    node_lo, sep_lo = P[0], P[4]
    N = node_lo[node_lo.shape[0] - 1]
    S = sep_lo[sep_lo.shape[0] - 1]
    nT, M = T.shape[0], y.shape[0]
    u, t, marg, marg2 = np.empty(N), np.empty(N), np.empty(N), np.empty(N)
    z = np.empty(Z)
    lb, lb2, G = np.empty(N), np.empty(N), np.empty(N)
    lmsg, msg, sepsum, scr = np.empty(S), np.empty(S), np.empty(S), np.empty(S)
    grad = np.empty(nT)
    ym, ym2, wr, wr2 = np.empty(M), np.empty(M), np.empty(M), np.empty(M)
    hist = np.empty(iters + 1)

    # node beliefs of T; linear in T, so a step moves them by -alpha G
    _spread(lb, z, T, P)
    loss = _evaluate(lb, total, y, w, P, marg, u, t, scr, lmsg, msg, sepsum, z, ym, wr)
    if not (loss == loss):
        return T, marg, 0, loss, alpha, False
    _measurements(grad, wr, P, np.bool_(False))
    _spread(G, z, grad, P)
    hist[0] = loss
    done = 0
    converged = False
    dT, dlb, step = np.zeros(nT), np.zeros(N), np.empty(N)  # the last accepted step (momentum), this one
    k = 0  # accepted steps since the last restart
    while done < iters:
        done += 1
        beta = k / (k + 3.0) if mom else 0.0
        for i in range(N):
            d = beta * dlb[i] - alpha * G[i]
            step[i] = d
            lb2[i] = lb[i] + d
        loss2 = _evaluate(lb2, total, y, w, P, marg2, u, t, scr, lmsg, msg, sepsum, z, ym2, wr2)
        if loss2 == loss2:
            if beta > 0:
                ok = loss2 < loss
            else:
                gain = 0.0
                for i in range(M):
                    gain += wr[i] * (ym[i] - ym2[i])
                ok = loss - loss2 >= 0.5 * alpha * gain
        else:  # the step drove a belief to underflow: rejected, as mbi's NaN loss is
            ok = False
        if ok:
            for i in range(nT):
                dT[i] = beta * dT[i] - alpha * grad[i]
                T[i] += dT[i]
            dlb, step = step, dlb
            lb, lb2 = lb2, lb
            marg, marg2 = marg2, marg
            ym, ym2 = ym2, ym
            wr, wr2 = wr2, wr
            loss = loss2
            _measurements(grad, wr, P, np.bool_(False))
            _spread(G, z, grad, P)
            alpha *= 1.01
            k += 1
        elif beta > 0:  # momentum overshot: restart from a plain step
            k = 0
        else:
            alpha *= 0.5
        hist[done] = loss
        if tol > 0 and done >= window and hist[done - window] - loss <= tol * max(loss, scale):
            converged = True
            break
    return T, marg, done, loss, alpha, converged

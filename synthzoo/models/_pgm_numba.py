"""Compiled kernels of :mod:`.pgm_engine` (numba): calibration and the whole mirror-descent loop.

The kernels read the junction tree from the plan's flat index arrays, so one compiled function
serves every model structure: nothing is recompiled when AIM's model grows a clique, and the
compiled code is cached on disk (``cache=True``) for later processes.  They run exactly the
algorithm of the numpy path in :mod:`.pgm_engine` (same loss, gradient, Armijo rule, momentum and
stopping rule), with every per-node and per-measurement step a loop instead of a numpy call: an adaptive
selector's ~10^4 iterations on small models cost microseconds each instead of the ~150 numpy calls'
overhead.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


#: Below this a message summed in probability space is recomputed by log-sum-exp: its terms are
#: ``exp(log-belief - node max)``, which lose their significant digits as they near the subnormal range.
_TINY = 1e-280


@njit(cache=True, nogil=True)
def calibrate(logb, total, node_lo, parent, child_ptr, child_list, sep_lo, sep_of, pp, pp_lo,
              out, u, t, scr, lmsg, msg, sepsum):  # pragma: no cover - compiled
    """Hugin collect/distribute: ``out`` gets the node marginals (each node summing to ``total``).

    Beliefs are ``exp(log-belief - node max)``; messages are kept as logs on the absolute scale, and
    a separator cell whose every belief underflowed gets its message by a log-sum-exp over its
    cells (and its cells' marginals from logs), so extreme potentials lose nothing.  ``t`` holds
    the log-beliefs, ``scr`` is scratch of the separators' size.  False when a node's marginal
    vanishes or is not finite."""
    n_nodes = parent.shape[0]
    for c in range(n_nodes - 1, -1, -1):  # collect: children (later in the layout) first
        lo, hi = node_lo[c], node_lo[c + 1]
        c0, c1 = child_ptr[c], child_ptr[c + 1]
        top = -math.inf  # the node's largest log-belief, taken in the pass that completes them
        if c0 == c1:
            for i in range(lo, hi):
                v = logb[i]
                t[i] = v
                if v > top:
                    top = v
        else:
            for i in range(lo, hi):
                t[i] = logb[i]
            for j in range(c0, c1 - 1):
                base = pp_lo[child_list[j]]
                for i in range(hi - lo):
                    t[lo + i] += lmsg[pp[base + i]]
            base = pp_lo[child_list[c1 - 1]]
            for i in range(hi - lo):
                v = t[lo + i] + lmsg[pp[base + i]]
                t[lo + i] = v
                if v > top:
                    top = v
        if not (top > -math.inf and top < math.inf):
            return False
        if parent[c] < 0:
            for i in range(lo, hi):
                u[i] = math.exp(t[i] - top)
        else:
            s0, s1 = sep_lo[c], sep_lo[c + 1]
            for s in range(s0, s1):
                msg[s] = 0.0
            for i in range(lo, hi):
                e = math.exp(t[i] - top)
                u[i] = e
                msg[sep_of[i]] += e
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
                    s = sep_of[i]
                    if msg[s] == 0 and t[i] > scr[s]:
                        scr[s] = t[i]
                for i in range(lo, hi):
                    s = sep_of[i]
                    if msg[s] == 0 and scr[s] > -math.inf:
                        sepsum[s] += math.exp(t[i] - scr[s])
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
            base = pp_lo[c]
            for i in range(node_lo[p + 1] - plo):
                sepsum[pp[base + i]] += out[plo + i]
            under = False
            for s in range(s0, s1):
                if msg[s] > 0:
                    sepsum[s] = sepsum[s] / msg[s]
                else:  # an underflowed message: this separator cell's marginals from logs
                    scr[s] = math.log(sepsum[s]) - lmsg[s] if sepsum[s] > 0 else -math.inf
                    sepsum[s] = 0.0
                    under = True
            tot = 0.0
            for i in range(lo, hi):
                v = u[i] * sepsum[sep_of[i]]
                u[i] = v
                tot += v
            if under:
                tot = 0.0
                for i in range(lo, hi):
                    s = sep_of[i]
                    if msg[s] == 0 and scr[s] > -math.inf:
                        u[i] = math.exp(t[i] + scr[s])
                    tot += u[i]
        else:
            tot = 0.0
            for i in range(lo, hi):
                tot += u[i]
        if not (tot > 0 and tot < math.inf):
            return False
        f = total / tot
        for i in range(lo, hi):
            out[i] = u[i] * f
    return True



@njit(cache=True, nogil=True)
def _scatter(dst, idx_dst, src, idx_src):  # pragma: no cover - compiled
    dst[:] = 0.0
    for j in range(idx_dst.shape[0]):
        dst[idx_dst[j]] += src[idx_src[j]]


@njit(cache=True, nogil=True)
def _reduce(z, marg, st_node, st_src, st_len, st_dst, st_idx, red_idx):  # pragma: no cover - compiled
    """The plan's reduction program forward: node marginals ``marg`` summed onto the potential
    cliques (``z[:T]``) through the intermediates (``z[T:]``)."""
    z[:] = 0.0
    for s in range(st_src.shape[0]):
        lo, base, dst = st_src[s], st_idx[s], st_dst[s]
        if st_node[s]:
            for j in range(st_len[s]):
                z[dst + red_idx[base + j]] += marg[lo + j]
        else:
            for j in range(st_len[s]):
                z[dst + red_idx[base + j]] += z[lo + j]


@njit(cache=True, nogil=True)
def _spread(node, z, vals, st_node, st_src, st_len, st_dst, st_idx, red_idx):  # pragma: no cover - compiled
    """The reduction program backward: per-potential ``vals`` (length ``T``) summed onto the node
    cells they belong to (``node``; zero elsewhere), through the intermediates in ``z``."""
    nT = vals.shape[0]
    z[:nT] = vals
    z[nT:] = 0.0
    node[:] = 0.0
    for s in range(st_src.shape[0] - 1, -1, -1):
        lo, base, dst = st_src[s], st_idx[s], st_dst[s]
        if st_node[s]:
            for j in range(st_len[s]):
                node[lo + j] += z[dst + red_idx[base + j]]
        else:
            for j in range(st_len[s]):
                z[lo + j] += z[dst + red_idx[base + j]]


@njit(cache=True, nogil=True)
def _evaluate(lb, total, y, w, node_lo, parent, child_ptr, child_list, sep_lo, sep_of, pp, pp_lo,
              st_node, st_src, st_len, st_dst, st_idx, red_idx, mp_t, mp_m, marg, u, t, scr, lmsg, msg, sepsum, z,
              ym, wr):  # pragma: no cover - compiled
    """Marginals of the model with node log-potentials ``lb``, its measurement marginals ``ym``,
    weighted residuals ``wr`` and loss; loss NaN when calibration failed."""
    if not calibrate(lb, total, node_lo, parent, child_ptr, child_list, sep_lo, sep_of, pp, pp_lo,
                     marg, u, t, scr, lmsg, msg, sepsum):
        return math.nan
    _reduce(z, marg, st_node, st_src, st_len, st_dst, st_idx, red_idx)
    _scatter(ym, mp_m, z, mp_t)  # the potential marginals are z[:T]
    loss = 0.0
    for i in range(y.shape[0]):
        r = ym[i] - y[i]
        wr[i] = w[i] * r
        loss += 0.5 * r * wr[i]
    return loss


@njit(cache=True, nogil=True)
def mirror_descent(T, y, w, total, iters, tol, window, scale, alpha, mom, node_lo, parent, child_ptr, child_list,
                   sep_lo, sep_of, pp, pp_lo, st_node, st_src, st_len, st_dst, st_idx, red_idx, Z, mp_t,
                   mp_m):  # pragma: no cover - compiled
    """The loop of :func:`synthzoo.models.pgm_engine.mirror_descent`; returns
    ``(T, marg, iterations, loss, alpha, converged)``.  ``T`` is updated in place."""
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
    _spread(lb, z, T, st_node, st_src, st_len, st_dst, st_idx, red_idx)
    loss = _evaluate(lb, total, y, w, node_lo, parent, child_ptr, child_list, sep_lo, sep_of, pp, pp_lo,
                     st_node, st_src, st_len, st_dst, st_idx, red_idx, mp_t, mp_m, marg, u, t, scr, lmsg, msg,
                     sepsum, z, ym, wr)
    if not (loss == loss):
        return T, marg, 0, loss, alpha, False
    _scatter(grad, mp_t, wr, mp_m)
    _spread(G, z, grad, st_node, st_src, st_len, st_dst, st_idx, red_idx)
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
        loss2 = _evaluate(lb2, total, y, w, node_lo, parent, child_ptr, child_list, sep_lo, sep_of, pp, pp_lo,
                          st_node, st_src, st_len, st_dst, st_idx, red_idx, mp_t, mp_m, marg2, u, t, scr, lmsg, msg,
                          sepsum, z, ym2, wr2)
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
            _scatter(grad, mp_t, wr, mp_m)
            _spread(G, z, grad, st_node, st_src, st_len, st_dst, st_idx, red_idx)
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

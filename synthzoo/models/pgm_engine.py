"""Mirror descent for Private-PGM in numpy: no compilation, so a changing model costs nothing.

An adaptive selector (AIM, PrivMRF, RAP++) refits the graphical model after every measurement,
and every refit has a new set of cliques.  A jitted JAX program is compiled once per clique
structure -- on adult that compile is most of the round's time.  This engine runs the same
algorithm (McKenna, Sheldon, Miklau, ICML 2019, Algorithm 1: entropic mirror descent on the
marginal polytope, ``mbi``'s Armijo step-size rule) with a precomputed plan of numpy
reductions over the junction tree:

* potentials live on the maximal measured cliques (as in ``mbi``), so the previous round's
  potentials are a valid warm start for the next round's larger model;
* calibration is a collect/distribute (Hugin) pass in probability space: beliefs are
  ``exp(theta - max)``, messages are rescaled to a maximum of 1, so nothing overflows and
  a message never costs a ``log``;
* an accepted step's marginals are those of the next iteration, so an iteration costs one
  calibration (two only when the step is rejected).

Loss, gradient and step rule are ``mbi``'s: ``L(mu) = sum_m ||(mu_m - y_m) / sigma_m||^2 / 2``,
initial step ``2 / (L_grad * total)`` with ``L_grad`` the Lipschitz constant from metadata,
accept on ``L(mu) - L(mu') >= alpha/2 <grad, mu - mu'>`` and grow alpha by 1 %, else halve it.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from ..core.domain import Domain


class Plan:
    """The reductions of one model structure: junction tree, where each potential and each
    measurement lives, and the axes every message sums out."""

    def __init__(self, domain: Domain, nodes: list[tuple], edges: list[tuple], cliques: list[tuple],
                 meas_cliques: list[tuple]):
        self.domain = domain
        self.nodes = [tuple(n) for n in nodes]
        self.shape = {n: domain.project(n).shape for n in self.nodes}
        self.cliques = [tuple(c) for c in cliques]
        adj: dict[tuple, list[tuple]] = {n: [] for n in self.nodes}
        for u, v in edges:
            adj[tuple(u)].append(tuple(v))
            adj[tuple(v)].append(tuple(u))
        # breadth-first order per component: parents before children
        self.order: list[tuple] = []
        self.parent: dict[tuple, tuple | None] = {}
        for root in self.nodes:
            if root in self.parent:
                continue
            self.parent[root] = None
            queue = deque([root])
            while queue:
                u = queue.popleft()
                self.order.append(u)
                for v in adj[u]:
                    if v not in self.parent:
                        self.parent[v] = u
                        queue.append(v)
        self.children = {n: [v for v in adj[n] if self.parent.get(v) == n] for n in self.nodes}
        # per non-root node: axes of the node summed out for the upward message, the message's
        # view in the parent, and the axes of the parent summed out for the downward message
        self.up: dict[tuple, tuple] = {}
        for c in self.order:
            p = self.parent[c]
            if p is None:
                continue
            sep_c = tuple(a for a in c if a in p)  # separator, in the child's axis order
            out_c = tuple(i for i, a in enumerate(c) if a not in p)
            out_p = tuple(i for i, a in enumerate(p) if a not in c)
            sep_p = tuple(a for a in p if a in c)  # separator in the parent's order
            self.up[c] = (out_c, self._shape_in(sep_c, p), out_p, self._shape_in(sep_p, c),
                          [sep_c.index(a) for a in sep_p])
        # each potential clique -> its host node (smallest holding it); each measurement -> a clique
        self.host = {}
        for cl in self.cliques:
            self.host[cl] = min((n for n in self.nodes if set(cl) <= set(n)), key=domain.size)
        self.pot_view = {cl: self._shape_in(cl, self.host[cl]) for cl in self.cliques}
        self.pot_perm = {cl: [cl.index(a) for a in self.host[cl] if a in cl] for cl in self.cliques}
        self.to_clique = {}
        for cl in self.cliques:
            h = self.host[cl]
            out = tuple(i for i, a in enumerate(h) if a not in cl)
            kept = tuple(a for a in h if a in cl)
            self.to_clique[cl] = (out, [kept.index(a) for a in cl])
        self.meas_host = []
        for mc in meas_cliques:
            mc = tuple(mc)
            cl = min((c for c in self.cliques if set(mc) <= set(c)), key=domain.size)
            out = tuple(i for i, a in enumerate(cl) if a not in mc)
            kept = tuple(a for a in cl if a in mc)
            back = [mc.index(a) for a in cl if a in mc]
            self.meas_host.append((cl, out, [kept.index(a) for a in mc], back, self._shape_in(mc, cl)))

    def _shape_in(self, src: tuple, dst: tuple) -> list[int]:
        """Shape of a table over ``src`` (axes already in ``dst``'s order) broadcast into ``dst``."""
        return [self.domain[a] if a in src else 1 for a in dst]

    # ------------------------------------------------------------------ inference
    def beliefs(self, theta: dict) -> dict:
        """Node log-potentials: every clique potential added into its host node."""
        logb = {n: None for n in self.nodes}
        for cl, t in theta.items():
            h = self.host[cl]
            v = np.transpose(t, self.pot_perm[cl]).reshape(self.pot_view[cl])
            logb[h] = v if logb[h] is None else logb[h] + v
        return {n: (np.zeros(self.shape[n]) if b is None else np.broadcast_to(b, self.shape[n]))
                for n, b in logb.items()}

    def calibrate(self, theta: dict, total: float) -> dict:
        """Clique marginals (counts summing to ``total``) of the model with potentials ``theta``."""
        logb = self.beliefs(theta)
        up_belief, msg = {}, {}
        for c in reversed(self.order):  # collect: leaves first
            b = logb[c]
            u = np.exp(b - b.max())
            for k in self.children[c]:
                u = u * msg[k]
            up_belief[c] = u
            if self.parent[c] is not None:
                out_c, view_p, _, _, perm = self.up[c]
                m = u.sum(axis=out_c) if out_c else u
                m = np.transpose(m, perm).reshape(view_p)
                top = m.max()
                msg[c] = m / top if top > 0 else m
        marg = {}
        for c in self.order:  # distribute: roots first
            p = self.parent[c]
            if p is None:
                mu = up_belief[c]
            else:
                # the upward message depends on the separator only, so dividing it out after
                # summing costs a separator-sized division instead of a parent-sized one
                out_p = self.up[c][2]
                sep_sum = marg[p].sum(axis=out_p, keepdims=True) if out_p else marg[p]
                down = np.divide(sep_sum, msg[c], out=np.zeros(sep_sum.shape), where=msg[c] > 0)
                mu = up_belief[c] * self._to_child(down, p, c)
            s = mu.sum()
            if not (s > 0 and np.isfinite(s)):
                raise FloatingPointError("PGM engine: a clique marginal vanished")
            marg[c] = mu * (total / s)
        return marg

    def _to_child(self, down: np.ndarray, p: tuple, c: tuple) -> np.ndarray:
        """A table over the separator (parent's axis order, size-1 elsewhere) viewed in the child."""
        sep_p = tuple(a for a in p if a in c)
        down = down.reshape([self.domain[a] for a in sep_p])
        perm = [sep_p.index(a) for a in c if a in p]
        return np.transpose(down, perm).reshape(self._shape_in(sep_p, c))

    def clique_marginals(self, marg: dict) -> dict:
        out = {}
        for cl in self.cliques:
            h = self.host[cl]
            axes, perm = self.to_clique[cl]
            m = marg[h].sum(axis=axes) if axes else marg[h]
            out[cl] = np.transpose(m, perm)
        return out

    # ---------------------------------------------------------------- loss and gradient
    def loss_grad(self, mu: dict, ys: list, weights: list) -> tuple[float, dict]:
        loss = 0.0
        grad = {cl: np.zeros(mu[cl].shape) for cl in self.cliques}
        for (cl, out, perm, back, view), y, w in zip(self.meas_host, ys, weights):
            m = mu[cl].sum(axis=out) if out else mu[cl]
            r = np.transpose(m, perm) - y
            loss += 0.5 * w * float(np.vdot(r, r))
            grad[cl] += (w * np.transpose(r, back)).reshape(view)
        return loss, grad

    def loss(self, mu: dict, ys: list, weights: list) -> float:
        loss = 0.0
        for (cl, out, perm, _, _), y, w in zip(self.meas_host, ys, weights):
            m = mu[cl].sum(axis=out) if out else mu[cl]
            r = np.transpose(m, perm) - y
            loss += 0.5 * w * float(np.vdot(r, r))
        return loss


def lipschitz(domain: Domain, cliques: list[tuple], meas_cliques: list[tuple], sigmas: list[float]) -> float:
    """``mbi``'s metadata bound: ``max_C sum_{m -> C} |C| / |m| / sigma_m^2`` (exact for marginals)."""
    blocks: dict[tuple, float] = {}
    for mc, s in zip(meas_cliques, sigmas):
        cl = min((c for c in cliques if set(mc) <= set(c)), key=domain.size)
        blocks[cl] = blocks.get(cl, 0.0) + domain.size(cl) / domain.size(mc) / max(s, 1e-12) ** 2
    return max(blocks.values())


def mirror_descent(plan: Plan, ys: list, sigmas: list[float], theta: dict, total: float, iters: int,
                   lipschitz_constant: float) -> dict:
    """``iters`` steps of mirror descent from ``theta`` (clique -> log-potential table); returns theta."""
    weights = [1.0 / max(s, 1e-12) ** 2 for s in sigmas]
    alpha = 2.0 / (lipschitz_constant * total)
    mu = plan.clique_marginals(plan.calibrate(theta, total))
    loss, grad = plan.loss_grad(mu, ys, weights)
    for _ in range(int(iters)):
        new = {cl: theta[cl] - alpha * grad[cl] for cl in theta}
        try:
            mu2 = plan.clique_marginals(plan.calibrate(new, total))
        except FloatingPointError:  # the step drove a belief to underflow: reject it, as mbi's NaN loss does
            alpha *= 0.5
            continue
        loss2 = plan.loss(mu2, ys, weights)
        gain = sum(float(np.vdot(grad[cl], mu[cl] - mu2[cl])) for cl in theta)
        if loss - loss2 >= 0.5 * alpha * gain:
            theta, mu = new, mu2
            loss, grad = plan.loss_grad(mu, ys, weights)
            alpha *= 1.01
        else:
            alpha *= 0.5
    return theta

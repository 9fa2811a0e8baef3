"""Relaxed projection: a synthetic dataset relaxed to per-attribute probability vectors.

Aydore, Brown, Kearns, Kenthapadi, Melis, Roth, Siva, "Differentially Private Query Release
Through Adaptive Projection" (RAP, ICML 2021), and Vietri, Archambeau, Aydore, Brown, Kearns,
Roth, Siva, Tang, Wu, "Private Synthetic Data for Multitask Learning and Marginal Queries"
(RAP++, NeurIPS 2022).

The model is ``n_rows`` synthetic rows, each holding, for every attribute, a softmax over the
attribute's codes (the relaxation of a one-hot row, as in RAP++).  The relaxed answer to a
marginal is the average over rows of the outer product of the rows' attribute vectors; for a
one-way marginal that is the mean of the vectors, and a two-way marginal over (a, b) is
``P_a^T P_b / n_rows``; the measured pairs sharing a first attribute are answered by one matrix
product, so a step costs (measured cells) x ``n_rows``.  ``fit`` minimises the squared error
between the relaxed answers and the noisy measured marginals divided by the estimated total
(RAP's projection step), with Adam on the softmax logits (torch, on the GPU when there is one;
``tol`` may stop a fit early).  Repeated ``fit`` calls -- an adaptive
selector refits every round -- continue from the previous logits.

``sample`` draws records: each draw picks a synthetic row (every row used equally often, up to
one) and then a code per attribute from that row's softmax.  ``project`` answers in numpy, in
counts (relaxed answer times the estimated total).

Post-processing only: the model sees noisy measurements, never records, and spends no budget.
"""

from __future__ import annotations

import math

import numpy as np

from ..core.base import MeasurementModel, register
from ..core.domain import Domain, Measurement
from ..core.measurements import estimate_total
from ..core.errors import ConfigError
from ..core.params import Boolean, Integral, Interval, Real
from ..core.sampling import cycle_rows, inverse_cdf, softmax_blocks
from ..core.statecheck import NUMBER, shaped

_PAPER = ("Aydore et al., Differentially Private Query Release Through Adaptive Projection (ICML 2021); "
          "Vietri et al., Private Synthetic Data for Multitask Learning and Marginal Queries (NeurIPS 2022)")


def _torch():
    try:
        import torch
    except ImportError:  # pragma: no cover - depends on the installation
        raise ConfigError("model 'rp' needs PyTorch: pip install torch==2.13.0") from None
    return torch


@register("model", "rp")
class RP(MeasurementModel):
    """Relaxed projection (RAP, Aydore et al. ICML 2021; RAP++, Vietri et al. NeurIPS 2022): ``n_rows``
    synthetic rows of per-attribute softmax vectors fitted to the noisy marginals by Adam.

    Parameters
    ----------
    n_rows : int, default 1000
        Synthetic rows ``N'`` of the relaxed dataset.
    iters : int, default 500
        Adam steps per ``fit`` (at most; see ``tol``).
    lr : float, default 0.1
        Adam learning rate on the softmax logits.
    tol : float, default 1e-3
        Stop a ``fit`` early when 100 steps improve the loss by less than this fraction (0: never).
    warm_start : bool, default True
        A repeated ``fit`` over the same domain starts from the previous logits.

    Examples
    --------
    >>> sz.Synthesizer(select={"name": "rap++", "rounds": "d-1"}, model=RP(n_rows=1000), epsilon=1.0)  # doctest: +SKIP
    """

    paper = _PAPER
    _parameter_constraints = {"n_rows": [Interval(Integral, 1, None)], "iters": [Interval(Integral, 1, None)],
                              "lr": [Interval(Real, 0, None, closed="neither")],
                              "tol": [Interval(Real, 0, 1, closed="left")], "warm_start": [Boolean()]}

    def __init__(self, n_rows: int = 1000, iters: int = 500, lr: float = 0.1, tol: float = 1e-3,
                 warm_start: bool = True):
        self.n_rows = n_rows
        self.iters = iters
        self.lr = lr
        self.tol = tol
        self.warm_start = warm_start

    @classmethod
    def hyperparameter_space(cls) -> dict:
        return {"n_rows": ("int", 200, 5000), "iters": ("int", 200, 3000), "lr": ("log", 0.005, 0.5)}

    # ------------------------------------------------------------------------ fit

    def _fit(self, domain: Domain, measurements: list[Measurement], rng: np.random.Generator) -> None:
        """Fit the relaxed rows to the noisy marginals (post-processing: spends no budget)."""
        torch = _torch()
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        total = estimate_total(measurements)  # at least 1
        n_rows, D = int(self.n_rows), int(sum(domain.shape))
        offs = np.concatenate([[0], np.cumsum(domain.shape)[:-1]]).astype(np.int64)

        prev = getattr(self, "_logits", None)
        if self.warm_start and prev is not None and getattr(self, "domain_", None) == domain \
                and prev.shape == (n_rows, D):
            init = torch.from_numpy(prev.copy())
            self.warm_started_ = True
        else:
            gen = torch.Generator().manual_seed(int(rng.integers(0, 2 ** 62)))
            # small random logits: all-equal rows would be a saddle point that never learns correlations
            init = 0.1 * torch.randn((n_rows, D), generator=gen, dtype=torch.float32)
            self.warm_started_ = False
        # codes x rows layout: every gather and scatter below then moves whole contiguous rows
        logits = init.T.contiguous().to(device).requires_grad_(True)

        # softmax per attribute over the flat (codes, rows) layout: seg[j] is the attribute of code j
        d = len(domain)
        seg = torch.as_tensor(np.repeat(np.arange(d), domain.shape), device=device)
        seg_cols = seg[:, None].expand(D, n_rows)

        def softmax(z):
            with torch.no_grad():  # the shift cancels in the softmax, so it needs no gradient
                top = torch.full((d, n_rows), -math.inf, device=device).scatter_reduce_(
                    0, seg_cols, z, "amax", include_self=True)
            e = torch.exp(z - top.index_select(0, seg))
            return e / torch.zeros((d, n_rows), device=device).index_add(0, seg, e).index_select(0, seg)

        # targets. One-way cells index the mean vector.  Two-way measurements are grouped by their
        # first attribute a (in domain order): one product P_a^T P[:, partners of a] answers all of
        # a's pairs, so only measured cells are computed (a full Gram matrix costs (codes)^2 * rows).
        one_idx, one_tgt, pairs, higher = [], [], {}, []
        for m in measurements:
            tgt = m.noisy / total
            if len(m.clique) == 1:
                a = domain.index(m.clique[0])
                one_idx.append(offs[a] + np.arange(domain.shape[a]))
                one_tgt.append(tgt.ravel())
            elif len(m.clique) == 2:
                a, b = (domain.index(x) for x in m.clique)
                if a > b:
                    a, b, tgt = b, a, tgt.T
                pairs.setdefault(a, []).append((b, tgt))
            elif len(m.clique) > 2:
                blocks = [(int(offs[domain.index(x)]), domain[x]) for x in m.clique]
                higher.append((blocks, torch.as_tensor(tgt.ravel(), dtype=torch.float32, device=device)))
        one_i = torch.as_tensor(np.concatenate(one_idx), device=device) if one_idx else None
        one_t = torch.as_tensor(np.concatenate(one_tgt), dtype=torch.float32, device=device) if one_tgt else None
        two = []
        for a, lst in sorted(pairs.items()):
            cols = np.concatenate([offs[b] + np.arange(domain.shape[b]) for b, _ in lst])
            tgt = np.concatenate([t for _, t in lst], axis=1)
            two.append((int(offs[a]), domain.shape[a], torch.as_tensor(cols, device=device),
                        torch.as_tensor(tgt, dtype=torch.float32, device=device)))

        def loss_fn(z):
            P = softmax(z)  # (codes, rows)
            loss = z.new_zeros(())
            if one_i is not None:
                loss = loss + ((P.mean(1).index_select(0, one_i) - one_t) ** 2).sum()
            for o, k, cols, tgt in two:
                block = P[o:o + k] @ P.index_select(0, cols).T / n_rows
                loss = loss + ((block - tgt) ** 2).sum()
            for blocks, tgt in higher:
                o, k = blocks[0]
                acc = P[o:o + k].T
                for o, k in blocks[1:]:
                    acc = (acc[:, :, None] * P[o:o + k].T[:, None, :]).reshape(n_rows, -1)
                loss = loss + ((acc.mean(0) - tgt) ** 2).sum()
            return loss

        # Adam (Kingma & Ba 2015) written out: building torch.optim.Adam imports torch._dynamo, seconds
        # of start-up per process for a three-line update
        lr, b1, b2, eps = float(self.lr), 0.9, 0.999, 1e-8
        m1, m2 = torch.zeros_like(logits), torch.zeros_like(logits)
        window, last = 100, None
        for it in range(int(self.iters)):
            loss = loss_fn(logits)
            (g,) = torch.autograd.grad(loss, logits)
            with torch.no_grad():
                m1.mul_(b1).add_(g, alpha=1 - b1)
                m2.mul_(b2).addcmul_(g, g, value=1 - b2)
                step = lr / (1 - b1 ** (it + 1))
                denom = (m2 / (1 - b2 ** (it + 1))).sqrt_().add_(eps)
                logits.addcdiv_(m1, denom, value=-step)
            if self.tol > 0 and (it + 1) % window == 0:
                cur = float(loss.detach())
                if last is not None and last - cur <= self.tol * last:
                    break
                last = cur
        with torch.no_grad():
            self.loss_ = float(loss_fn(logits))
        self.iters_run_ = it + 1
        self._set_fitted(domain, logits.detach().T.cpu().numpy().astype(np.float32), total)

    def _set_fitted(self, domain: Domain, logits: np.ndarray, total: float) -> None:
        self._fitted(domain)
        self.total_ = float(total)
        self._logits = logits
        self._probs = softmax_blocks(logits, domain.shape)

    # ----------------------------------------------------------------- queries
    def _project(self, clique: tuple) -> np.ndarray:
        """Relaxed answer over ``clique`` (axes in the given order) times the estimated total."""
        if not clique:
            return np.array(self.total_)
        ps = [self._probs[self.domain_.index(a)] for a in clique]
        cells = int(np.prod([p.shape[1] for p in ps], dtype=np.int64))
        n = ps[0].shape[0]
        step = max(1, 4_000_000 // cells)  # rows per chunk: bounds the (rows, cells) intermediate
        acc = np.zeros(cells)
        for s in range(0, n, step):
            t = ps[0][s:s + step]
            for p in ps[1:]:
                t = (t[:, :, None] * p[s:s + step, None, :]).reshape(t.shape[0], -1)
            acc += t.sum(axis=0)
        return (acc / n * self.total_).reshape(self.domain_.project(clique).shape)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` records: rows of the relaxed dataset taken equally often (a random subset for the
        remainder), each turned into codes by one categorical draw per attribute from its softmax."""
        self._require_fit()
        n = self._check_n(n)
        rows = cycle_rows(self._logits.shape[0], n, rng)
        out = np.empty((n, len(self.domain_)), dtype=np.int64)
        for j, p in enumerate(self._probs):
            u = rng.random(n)
            for s in range(0, n, 200_000):  # chunks bound the (n, codes) comparison
                out[s:s + 200_000, j] = inverse_cdf(p[rows[s:s + 200_000]], u[s:s + 200_000])
        return out

    def _sample_work(self) -> tuple[float, str]:
        """A row of the relaxed dataset per record and an inverse-CDF draw over every attribute's codes."""
        if getattr(self, "domain_", None) is None:
            return 0.0, "not fitted"
        codes = sum(self.domain_.shape)
        return 3.0 * codes + 4.0 * len(self.domain_), f"draws over {codes} codes"

    # ------------------------------------------------------------------- state
    _state_spec = {"total": NUMBER, "logits": [[NUMBER]]}

    def _get_state(self) -> dict:
        """The estimated total and the softmax logits (functions of the noisy measurements only); a
        loaded model samples exactly as the fitted one."""
        return {"total": self.total_, "logits": self._logits.astype(float).tolist()}

    def _set_state(self, state: dict, domain: Domain) -> None:
        total = float(state["total"])
        # one row of logits per synthetic record, one logit per code of each attribute (rows of unequal lengths:
        # named, not numpy's bare ValueError)
        logits = shaped(state["logits"], [len(state["logits"]), sum(domain.shape)],
                        "model file: model_state.logits").astype(np.float32)
        if logits.ndim != 2 or logits.shape[0] == 0 or logits.shape[1] != sum(domain.shape) or not np.all(np.isfinite(logits)):
            raise ConfigError(f"RP.set_state: logits of shape {logits.shape} do not fit the domain")
        self._set_fitted(domain, logits, total)

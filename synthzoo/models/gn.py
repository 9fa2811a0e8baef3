"""GEM: a generative network fitted to noisy marginals.

Liu, Vietri, Steinke, Ullman, Wu, "Iterative Methods for Private Synthetic Data: Unifying
Framework and New Methods" (NeurIPS 2021), the "GEM" method (Generative networks with the
Exponential Mechanism; here the selection is the pipeline's selector and this module is the
generative-network estimator).  A multilayer perceptron ``G`` maps Gaussian noise vectors ``z``
to one softmax per attribute.  For a batch ``z_1..z_B`` the network's answer to a marginal over
attributes ``(a_1..a_k)`` is ``1/B * sum_b  G(z_b)_{a_1} x ... x G(z_b)_{a_k}`` (batch-averaged
outer products of the softmaxes: each noise vector stands for a product distribution, the batch
for their mixture).  ``G`` is trained with Adam to minimise the error (L1 by default, or
squared) between these answers and the normalised noisy measurements; ``sample`` draws fresh
noise vectors and, from each, ``draws_per_z`` records by one categorical draw from each softmax.

Torch is imported lazily (a :class:`ConfigError` says so when it is missing).  All randomness
comes from the caller's ``numpy`` generator through a seeded ``torch.Generator``, so the same
seed gives the same model and the same records.  Post-processing only: no privacy cost.
"""

from __future__ import annotations

import numpy as np

from ..core.base import MeasurementModel, register
from ..core.domain import Domain, Measurement
from ..core.measurements import normalised_targets
from ..core.params import MAX_BATCH, Boolean, Integral, Interval, Options, Real
from ..core.statecheck import INTEGER, NUMBER, TENSOR
from .torch_mlp import MLP_CONSTRAINTS, TorchMLP, torch_module

_PAPER = ("Liu, Vietri, Steinke, Ullman, Wu, Iterative Methods for Private Synthetic Data: Unifying Framework "
          "and New Methods (NeurIPS 2021)")

_EVAL_BATCH = 4096  # noise vectors behind project(): fixed at fit, so answers are deterministic
_LETTERS = "abcdefghijklmnopqrstuvwxy"  # "z" indexes the noise batch


def _torch():
    return torch_module("gn")


def _pairs_by_gram(n_pairs: int, k_max: int, width: int) -> bool:
    """Whether the two-way answers of a step are cheaper from the Gram matrix of all real softmax
    columns (``width``^2 multiply-adds per noise vector in one large product) than from the batched
    product over the pairs (``k_max``^2 each in many small products, with gathers of (pairs, ``k_max``)
    blocks and their gradients).  The factor 10 is measured: on a 100-column table (``width`` 1,048,
    ``k_max`` 29, a 512-512 network, batch 1,024, one CPU thread) the two cost the same at about 110
    measured pairs (0.075 s a step for the Gram matrix; 0.2 s for 250 pairs batched, 0.38 s for 500)."""
    return width * width < 10 * n_pairs * k_max * (k_max + 8)


def _einsum_spec(k: int) -> str:
    """``'za,zb,zc->abc'``: batch-summed outer product of ``k`` softmaxes."""
    return ",".join("z" + _LETTERS[i] for i in range(k)) + "->" + _LETTERS[:k]


def _row_outer(ops: list[np.ndarray]) -> np.ndarray:
    """Per row, the flattened outer product of the rows of ``ops``: shape (batch, prod of sizes)."""
    t = ops[0]
    for o in ops[1:]:
        t = (t[:, :, None] * o[:, None, :]).reshape(t.shape[0], -1)
    return t


def _mixture_marginal(ops: list[np.ndarray]) -> np.ndarray:
    """``sum_b outer(ops[0][b], ..., ops[k-1][b])`` in the attributes' shape.

    The attributes are split in two groups of balanced size; each group's per-row outer products
    are formed and the batch sum is one matrix product (BLAS), over chunks of the batch so that
    no intermediate holds more than about 2e7 numbers."""
    shape = tuple(o.shape[1] for o in ops)
    if len(ops) == 1:
        return ops[0].sum(axis=0)
    cum = np.cumprod(shape)
    h = int(np.argmin(np.abs(np.log(cum[:-1]) - np.log(cum[-1]) / 2))) + 1
    width = max(int(np.prod(shape[:h])), int(np.prod(shape[h:])))
    step = max(1, int(2e7 // width))
    out = 0.0
    for lo in range(0, ops[0].shape[0], step):
        part = [o[lo:lo + step] for o in ops]
        out = out + _row_outer(part[:h]).T @ _row_outer(part[h:])
    return np.asarray(out).reshape(shape)


@register("model", "gn")
class GN(TorchMLP, MeasurementModel):
    """GEM's generative network (Liu, Vietri, Steinke, Ullman, Wu, NeurIPS 2021).

    Parameters
    ----------
    hidden : int or tuple of int, default (128,)
        Widths of the hidden ReLU layers.
    iters : int, default 500
        Adam steps per ``fit`` (each on a fresh batch of noise vectors); with ``threshold_factor``, the most.
    lr : float, default 1e-3
        Adam learning rate.
    batch : int, default 256
        Noise vectors per step (the size of the mixture the answers average over).
    noise_dim : int, default 32
        Length of a noise vector ``z``.
    loss : {"l1", "l2"}, default "l1"
        GEM's error measure (it fitted correlations better than ``"l2"`` in our runs) or squared error.
    warm_start : bool, default True
        A repeated ``fit`` on the same domain (adaptive selectors) continues from the previous weights.
    device : {"auto", "cpu", "cuda"}, default "auto"
        CUDA when available, else CPU.
    threshold_factor : float or None, default None
        GEM's reference optimisation (its code's ``ema_error_factor``).  ``None``: every step minimises
        the error over all measured cells, ``iters`` steps (the paper's objective).  A factor ``f``: at
        a fit's first step the largest cell error (normalised answer against normalised measurement)
        updates a moving average ``m`` (weight 0.5, kept across warm refits), each step minimises the
        mean error of the ``max_cells`` worst cells whose error is at least ``f * m``, and the fit stops
        when no cell is -- so an adaptive round's refit works on the new measurement and stops,
        ``iters`` being the most.  As in the reference, the normalised measurements are clipped to
        [0, 1] (a negative noisy proportion would hold a cell above any threshold).  The steps the
        last fit took are ``steps_``.
    max_cells : int, default 100
        With ``threshold_factor``, the most cells a step minimises (the reference's ``max_idxs``).
    draws_per_z : int, default 4
        Records :meth:`sample` draws from each noise vector's product distribution (sampling only).
        Each record is an exact draw from the generator's mixture; records sharing a noise vector are
        independent given it.  The network's forward pass dominates sampling, so sharing divides its
        cost per record (GEM's reference code draws every record of a sample from one batch of
        1,024 noise vectors); 1 gives every record its own noise vector.

    Examples
    --------
    >>> sz.make("gem", epsilon=1.0, model=GN(hidden=(512, 512)))  # doctest: +SKIP
    """

    paper = _PAPER
    _load_limits = {"draws_per_z": 1024}  # sample() draws this many records per noise vector at once
    _parameter_constraints = {
        **MLP_CONSTRAINTS, "iters": [Interval(Integral, 0, None)], "lr": [Interval(Real, 0, None, closed="neither")],
        "batch": [Interval(Integral, 1, MAX_BATCH)], "noise_dim": [Interval(Integral, 1, None)],
        "loss": [Options("l1", "l2")], "warm_start": [Boolean()], "draws_per_z": [Interval(Integral, 1, None)],
        "threshold_factor": [None, Interval(Real, 0, None, closed="neither")],
        "max_cells": [Interval(Integral, 1, None)]}
    _test_params = {"hidden": (32,), "iters": 60, "batch": 64}
    _pair_path = None  # "gram" / "batched" force a path (tests); None chooses by work

    def __init__(self, hidden=(128,), iters: int = 500, lr: float = 1e-3, batch: int = 256,
                 noise_dim: int = 32, loss: str = "l1", warm_start: bool = True, device: str = "auto",
                 draws_per_z: int = 4, threshold_factor: float | None = None, max_cells: int = 100):
        self.hidden = hidden
        self.iters = iters
        self.lr = lr
        self.batch = batch
        self.noise_dim = noise_dim
        self.loss = loss
        self.warm_start = warm_start
        self.device = device
        self.draws_per_z = draws_per_z
        self.threshold_factor = threshold_factor
        self.max_cells = max_cells

    @classmethod
    def hyperparameter_space(cls) -> dict:
        return {"iters": ("int", 200, 3000), "lr": ("log", 1e-4, 1e-2), "batch": ("int", 64, 1024),
                "noise_dim": ("int", 8, 128), "loss": ("cat", ["l1", "l2"])}

    def _layers(self) -> list[int]:
        return [int(self.noise_dim), *self._hidden(), len(self.domain_) * max(self.domain_.shape)]

    # -------------------------------------------------------------------- network
    def _padded_softmax(self, ws, z, pad, real=None):
        """All attributes' softmaxes of ``G(z)`` as one (batch, d, K) tensor, zero on padding."""
        return _torch().softmax(self._padded_logits(ws, z, pad, real), dim=2)

    def _softmaxes(self, ws, z) -> list:
        """Per-attribute softmax of ``G(z)``: a list of (batch, size) tensors."""
        soft = self._padded_softmax(ws, z, self._pad_mask(self.domain_.shape, z.device))
        return [soft[:, j, :n] for j, n in enumerate(self.domain_.shape)]

    # ------------------------------------------------------------------------ fit
    def _fit(self, domain: Domain, measurements: list[Measurement], rng: np.random.Generator) -> None:
        """Train the generator on the noisy marginals with Adam (post-processing: spends no budget)."""
        targets, total = normalised_targets("GN", domain, measurements)
        if self.threshold_factor is not None:  # GEM's measurements are proportions: clipped to [0, 1]
            targets = [(c, np.clip(v, 0.0, 1.0), sd) for c, v, sd in targets]
        torch = _torch()
        dev = self._device()
        seed = int(rng.integers(0, 2 ** 62))
        gen = torch.Generator().manual_seed(seed)

        prev = getattr(self, "_weights", None)
        old_domain = getattr(self, "domain_", None)
        self.domain_ = domain
        warm = (self.warm_start and prev is not None and old_domain == domain
                and [tuple(w.shape) for w in prev] == self._shapes())
        init = [w.detach().clone() for w in prev] if warm else self._init_weights(gen)
        ema = getattr(self, "_ema_error", None) if warm else None
        ws = [w.to(dev).requires_grad_(True) for w in init]

        # every attribute's softmax in one (batch, d, K) tensor, padded with zeros to the largest
        # attribute: all one-way answers come from one mean, and all two-way answers either from one
        # batched matrix product over the measured pairs or, when that is cheaper, from the Gram matrix
        # of the real softmax columns (one large product whatever the number of pairs), so a step costs
        # a few tensor operations however many marginals are measured (larger cliques, from adaptive
        # selectors, go one by one)
        sizes = list(domain.shape)
        K = max(sizes)
        pad_t = self._pad_mask(domain.shape, dev)
        real = self._real_rows(pad_t)  # once: finding it reads the mask back from the device
        idx = {a: i for i, a in enumerate(domain.attrs)}

        def padded(groups, k):
            cols = [[idx[a] for a in c] for c, _, _ in groups]
            t = np.zeros((len(groups),) + (K,) * k)
            for r, (_, v, _) in enumerate(groups):
                t[(r,) + tuple(slice(0, n) for n in v.shape)] = v
            return ([torch.as_tensor([c[i] for c in cols], device=dev) for i in range(k)],
                    torch.as_tensor(t, dtype=torch.float32, device=dev))

        one = padded([t for t in targets if len(t[0]) == 1], 1)
        pairs = [t for t in targets if len(t[0]) == 2]
        width = int(sum(sizes))
        # work per step (multiply-adds per noise vector): the batched product forms K x K cells per pair
        # and moves (pairs, K) blocks through gathers and their gradients; the Gram matrix width^2 cells
        gram = bool(pairs) and _pairs_by_gram(len(pairs), K, width) if self._pair_path is None \
            else self._pair_path == "gram"
        if gram:
            off = np.r_[0, np.cumsum(sizes)[:-1]]
            cells = np.concatenate([((off[idx[c[0]]] + np.arange(v.shape[0]))[:, None] * width
                                     + off[idx[c[1]]] + np.arange(v.shape[1])[None, :]).ravel() for c, v, _ in pairs])
            two = (torch.as_tensor(cells, device=dev),
                   torch.as_tensor(np.concatenate([v.ravel() for _, v, _ in pairs]), dtype=torch.float32, device=dev))
        else:
            two = padded(pairs, 2)
        more = [([idx[a] for a in c], _einsum_spec(len(c)), torch.as_tensor(v, dtype=torch.float32, device=dev))
                for c, v, _ in targets if len(c) > 2]
        opt = torch.optim.Adam(ws, lr=float(self.lr))
        B = int(self.batch)
        l1 = self.loss == "l1"

        factor = None if self.threshold_factor is None else float(self.threshold_factor)
        n_cells = int(self.max_cells)

        def total_error(errs):  # the paper's objective: every measured cell
            return sum(e.abs().sum() if l1 else (e * e).sum() for e in errs)

        threshold, steps, objective = None, 0, None
        zs = []
        for it in range(int(self.iters)):
            if dev.type == "cpu":
                z = torch.randn(B, int(self.noise_dim), generator=gen)
            else:  # drawn ahead in pinned memory: no step waits for a host-to-device copy of its noise
                if not zs:
                    k = min(64, int(self.iters) - it)
                    zs = list(torch.randn(k, B, int(self.noise_dim), generator=gen).pin_memory()
                              .to(dev, non_blocking=True).unbind(0))[::-1]
                z = zs.pop()
            soft = self._padded_softmax(ws, z, pad_t, real)                # (B, d, K), zero on padding
            errs = []                                                      # answer - measurement, normalised
            if one[0][0].numel():
                errs.append(soft[:, one[0][0]].mean(0) - one[1])
            if gram:
                flat = soft.reshape(B, -1)[:, real]                           # (B, width): the real columns
                errs.append((flat.T @ flat).reshape(-1)[two[0]] / B - two[1])
            elif pairs:
                errs.append(torch.einsum("bmk,bml->mkl", soft[:, two[0][0]], soft[:, two[0][1]]) / B - two[1])
            for cols, spec, t in more:
                errs.append(torch.einsum(spec, *[soft[:, i, :sizes[i]] for i in cols]) / B - t)
            objective = total_error(errs)
            if factor is None:
                loss = objective
            else:  # GEM's reference optimisation: the worst cells above a moving threshold, until none is
                e = torch.cat([x.reshape(-1) for x in errs])
                size = e.detach().abs()                                    # padding cells are 0: never above
                if threshold is None:  # the moving average of each fit's starting largest error
                    worst = float(size.max())
                    ema = worst if ema is None else 0.5 * ema + 0.5 * worst
                    threshold = factor * ema
                above = size >= threshold
                n_above = int(above.sum())
                if n_above == 0 or threshold <= 0:
                    break
                top = torch.topk(torch.where(above, size, -1.0), min(n_cells, n_above)).indices
                loss = e[top].abs().mean() if l1 else (e[top] * e[top]).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            steps += 1
        self.loss_ = float(objective.detach()) if torch.is_tensor(objective) else float("nan")
        self.steps_ = steps
        self._ema_error = ema
        self._set_fitted(domain, [w.detach().cpu() for w in ws], total, int(rng.integers(0, 2 ** 62)))

    def _set_fitted(self, domain: Domain, weights: list, total: float, eval_seed: int) -> None:
        torch = _torch()
        self._fitted(domain)
        self._weights = [w.to(torch.float32) for w in weights]
        self.total_ = float(total)
        self._eval_seed = int(eval_seed)
        self._eval = None

    def _probs(self, z) -> list[np.ndarray]:
        torch = _torch()
        dev = self._device()
        with torch.no_grad():
            ws = [w.to(dev) for w in self._weights]
            return [s.double().cpu().numpy() for s in self._softmaxes(ws, z.to(dev))]

    # -------------------------------------------------------------------- queries
    def _project(self, clique: tuple) -> np.ndarray:
        """The network's answer over ``clique`` on a fixed batch of noise vectors drawn at fit,
        scaled to the estimated total."""
        if self._eval is None:
            torch = _torch()
            gen = torch.Generator().manual_seed(self._eval_seed)
            self._eval = self._probs(torch.randn(_EVAL_BATCH, int(self.noise_dim), generator=gen))
        if not clique:
            return np.array(self.total_)
        ops = [self._eval[self.domain_.index(a)] for a in clique]
        return _mixture_marginal(ops) * (self.total_ / _EVAL_BATCH)

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` records: fresh noise vectors, each giving ``draws_per_z`` records by one categorical
        draw from each of its softmaxes."""
        self._require_fit()
        n, d = self._check_n(n), len(self.domain_)
        torch = _torch()
        gen = torch.Generator().manual_seed(int(rng.integers(0, 2 ** 62)))
        out = np.empty((n, d), dtype=np.int64)
        sizes = list(self.domain_.shape)
        dev = self._device(sampling=True)
        net = self._sampling_net([w.to(dev) for w in self._weights], sizes)
        per = int(self.draws_per_z)
        step = 8192 * per
        for lo in range(0, n, step):
            hi = min(n, lo + step)
            g = -(-(hi - lo) // per)  # noise vectors of this step, each giving `per` records
            z = torch.randn(g, int(self.noise_dim), generator=gen).to(dev)
            out[lo:hi] = self._draw_codes(net, z, sizes, rng.random((g * per, d)), per)[:hi - lo]
        return out

    def _sample_work(self) -> tuple[float, str]:
        if getattr(self, "domain_", None) is None:
            return 0.0, "not fitted"
        return self._mlp_work(self.domain_.shape)

    # ---------------------------------------------------------------------- state
    def _saved_params(self) -> dict:
        return {**self.get_params(), "hidden": self._hidden()}

    _state_spec = {"total": NUMBER, "eval_seed": INTEGER, "weights": [TENSOR]}

    def _get_state(self) -> dict:
        """The estimated total and the network weights (a function of the noisy measurements and
        the training randomness only)."""
        return {"total": self.total_, "eval_seed": self._eval_seed, "weights": self._weights_state()}

    def _set_state(self, state: dict, domain: Domain) -> None:
        total, eval_seed = float(state["total"]), int(state["eval_seed"])
        self.domain_ = domain  # the layer sizes depend on it
        self._set_fitted(domain, self._weights_from(state["weights"]), total, eval_seed)

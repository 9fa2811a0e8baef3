"""DP-SGD, the one private training mechanism every record model uses.

Abadi et al., "Deep Learning with Differential Privacy" (CCS 2016): at each of a fixed number of
steps a batch is drawn by Poisson sampling (each record independently with rate ``q``), every
record's gradient is clipped to L2 norm ``C``, and Gaussian noise ``N(0, (sigma C)^2)`` is added to
their sum.  The whole run is the ``dp_accounting`` event
``SelfComposed(PoissonSampled(q, Gaussian(sigma)), steps)``.

How it meets the ledger:

* ``sigma`` is calibrated by the ledger's own accountant (the RDP accountant that reports the
  release's epsilon): the smallest ``sigma`` for which composing the run onto everything charged so
  far gives no more epsilon than spending the stage's remaining zCDP budget would.  The run is
  charged **before** the first step, so no other accountant (Opacus' disagrees by a few percent)
  can overrun the ledger.
* ``q = B / n_hat`` where ``B`` is the public expected batch size and ``n_hat`` a DP record count the
  model charged first; the clipped sum is divided by ``B`` (public), never by the private batch size.
* Batches and noise come from the ledger's secret :class:`~synthzoo.core.privacy.noise.NoiseSource`,
  and so do the loop's draws for the batch's records (:meth:`DPSGD.private_draws`); the user's seed
  initialises the weights.
* Per-sample clipping runs through Opacus (``GradSampleModuleFastGradientClipping``): ghost
  clipping computes the per-sample gradient norms from activations and output gradients without
  materialising per-sample gradients (about the cost of a non-private step, where Opacus' per-sample
  hooks cost ~11x on a small MLP); a second backward pass weights each record's loss by
  ``min(1, C / ||g_i||)``.  The loss must therefore be per record, which every record model here
  arranges (a row of the batch sees one private record or none).
* An empty Poisson batch still takes its step: the update is noise only, as the accountant assumes.

``epsilon=None`` trains without privacy: shuffled batches of exactly ``B``, no clipping, no noise.
"""

from __future__ import annotations

import math
import warnings
from typing import Iterator

import dp_accounting as dpa
import numpy as np

from ..errors import BudgetExceededError, ConfigError
from .ledger import Budget, matched_rho


def batch_for(batch_size: int, n_hat: float, multiple: int = 1) -> int:
    """The batch a run takes: ``batch_size``, but no more than the DP record count ``n_hat`` (rounded up to a
    whole ``multiple``, PacGAN's groups).  A larger one samples every record at each step anyway (``q = 1``), and
    it made ctgan draw that many generated rows per step and its epochs one step in all."""
    m = max(int(multiple), 1)
    return min(int(batch_size), max(m, math.ceil(max(float(n_hat), 1.0) / m) * m))


def schedule(epochs: int, n_hat: float, batch_size: int) -> tuple[int, float]:
    """A DP-SGD run's fixed number of steps, ``ceil(epochs * n_hat / B)``, and its Poisson sampling rate
    ``q = B / n_hat`` (at most 1), with ``B`` the batch :func:`batch_for` gives, from its epochs, the DP record
    count ``n_hat`` and the batch size: public values, so that a saved account's DP-SGD events can be checked
    against a model's state."""
    n = max(float(n_hat), 1.0)
    b = batch_for(batch_size, n)
    return max(1, math.ceil(int(epochs) * n / b)), min(1.0, b / n)


def dpsgd_event(q: float, sigma: float, steps: int):
    """The ``dp_accounting`` event of a DP-SGD run."""
    return dpa.SelfComposedDpEvent(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(sigma)), int(steps))


def calibrate_noise_multiplier(budget: Budget, q: float, steps: int, rho: float | None = None) -> float:
    """The smallest noise multiplier ``sigma`` (to a relative 1e-9) for which charging
    ``dpsgd_event(q, sigma, steps)`` to ``budget``'s ledger costs no more total epsilon than charging
    ``rho`` zCDP (default: all that is left of the budget) would.  The returned ``sigma`` always meets
    the budget: it is checked through the ledger's accountant, and raised until it does.

    The root of ``epsilon(sigma) = target`` is bracketed by doubling and halving, then found by Brent's
    method on ``log sigma`` (Brent, *Algorithms for minimization without derivatives*, 1973): about 10
    accountant calls where a bisection to the same precision took 40 -- each call composes the RDP of a
    sampled Gaussian at every order, about a tenth of a second, and was most of a small private fit."""
    from scipy.optimize import brentq

    rho = budget.remaining if rho is None else float(rho)
    if not (rho > 0 and math.isfinite(rho)):
        raise BudgetExceededError(f"{budget.name}: DP-SGD needs a positive, finite budget, got rho={rho}")
    ledger = budget.ledger
    target = ledger.epsilon_if([dpa.ZCDpEvent(rho)])
    seen: dict[float, float] = {}

    def eps(sigma):  # quiet: the ledger's accountant calls are; each sigma asked once
        if sigma not in seen:
            seen[sigma] = ledger.epsilon_if([dpsgd_event(q, sigma, steps)])
        return seen[sigma]

    hi = 1.0
    while eps(hi) > target:
        hi *= 2.0
        if hi > 1e6:
            raise BudgetExceededError(f"{budget.name}: no noise level meets the budget for {steps} DP-SGD steps")
    lo = hi / 2.0
    while lo > 1e-3 and eps(lo) <= target:
        lo /= 2.0
    if eps(lo) <= target:  # meets the budget at the smallest noise looked at
        return lo
    u = brentq(lambda v: eps(math.exp(v)) - target, math.log(lo), math.log(hi), xtol=1e-10, rtol=1e-12)
    sigma, step = min(hi, math.exp(u)), 1e-10
    while eps(sigma) > target:  # the root's estimate may sit a hair on the wrong side
        sigma, step = min(hi, sigma * (1.0 + step)), step * 10.0
    return sigma


class DPSGD:
    """One DP-SGD run, calibrated and charged to ``budget`` when built.

    Parameters
    ----------
    budget : Budget
        Charged once, before any step; its noise source draws the batches and the noise.
    n_hat : float
        A DP estimate of the number of records (charged by the caller), which sets ``q = B / n_hat``.
    batch_size : int
        The public expected batch size ``B``.
    steps : int
        The fixed number of steps.
    max_grad_norm : float, default 1.0
        The per-record clipping norm ``C``.
    rho : float, optional
        The zCDP budget the run may cost (default: all that is left of ``budget``).
    note : str
        Ledger note (e.g. the model and network trained).

    Examples
    --------
    >>> sgd = DPSGD(budget, n_hat=26_000, batch_size=500, steps=2000)      # doctest: +SKIP
    >>> for idx in sgd.batches(len(x), rng):                                # doctest: +SKIP
    ...     loss_per_record = ...; sgd.step(module, params, loss_per_record, optimizer)
    """

    def __init__(self, budget: Budget, n_hat: float, batch_size: int, steps: int, max_grad_norm: float = 1.0,
                 rho: float | None = None, note: str = ""):
        if int(steps) < 1 or int(batch_size) < 1:
            raise ConfigError(f"DP-SGD needs steps >= 1 and batch_size >= 1, got {steps}, {batch_size}")
        if not (max_grad_norm > 0 and math.isfinite(max_grad_norm)):
            raise ConfigError(f"DP-SGD needs a positive clipping norm, got {max_grad_norm}")
        self.batch_size, self.steps, self.max_grad_norm = int(batch_size), int(steps), float(max_grad_norm)
        self.private = budget.private
        #: the mean training loss of every step, recorded without privacy only: under DP a loss read
        #: from the private batch would be a release that no step's noise accounts for
        self.losses: list[float] = []
        self.noise = budget.noise
        if self.private:
            self.q = schedule(1, n_hat, self.batch_size)[1]
            self.sigma = calibrate_noise_multiplier(budget, self.q, self.steps, rho)
            event = dpsgd_event(self.q, self.sigma, self.steps)
            used = matched_rho(budget.ledger, event, budget.remaining if rho is None else float(rho))
            budget.charge("dp_sgd", event, used,
                          note=f"{note}: {self.steps} steps, q={self.q:.4g}, sigma={self.sigma:.4g}, C={max_grad_norm:g}")
        else:
            self.q, self.sigma = float("nan"), 0.0
            budget.charge("dp_sgd", None, math.inf, note=f"{note}: {self.steps} steps, non-private")

    def private_draws(self, torch, gen, rng):
        """``(torch generator, numpy generator)`` for a training loop's draws made for the batch's records
        (reparameterisation and diffusion noise, timesteps, dropout masks, a real row's condition).

        Non-private: ``gen`` and ``rng`` as given (from the user's seed, so the fit reproduces).  Private:
        fresh generators seeded from the ledger's secret noise, and torch's global generator (dropout)
        reseeded from it too.  Draws from a public seed are handed out by a record's rank in its batch, so
        in a neighbouring table every later record of the batch would get another draw: the clipped sums
        would differ in many records' terms, not one, and the step's sensitivity would not hold."""
        if not self.private:
            return gen, rng
        torch.manual_seed(int(self.noise.seed_material() % 2 ** 63))
        return torch.Generator().manual_seed(int(self.noise.seed_material() % 2 ** 63)), self.noise.generator()

    # ------------------------------------------------------------------ batches
    def batches(self, n: int, rng: np.random.Generator) -> Iterator[np.ndarray]:
        """``steps`` index arrays into the ``n`` records: Poisson sampling at rate ``q`` from the secret
        noise (private), or shuffled batches of ``B`` from ``rng`` (non-private)."""
        if self.private:
            for _ in range(self.steps):
                yield np.flatnonzero(self.noise.bernoulli(self.q, n))
            return
        order, pos = rng.permutation(n), 0
        for _ in range(self.steps):
            if pos + self.batch_size > n:
                order, pos = rng.permutation(n), 0
            yield order[pos:pos + self.batch_size]
            pos += self.batch_size

    def loss_history(self, epochs: int) -> np.ndarray | None:
        """The recorded step losses as ``epochs`` per-epoch means (consecutive equal groups of steps),
        or None for a private run, which records none."""
        if self.private or not self.losses:
            return None
        return np.array([g.mean() for g in np.array_split(np.asarray(self.losses), max(1, min(int(epochs),
                                                                                         len(self.losses))))])

    # ------------------------------------------------------------------ steps
    def wrap(self, module):
        """``module`` with Opacus' ghost clipping hooks (private), or as it is (non-private)."""
        if not self.private:
            return module
        from opacus.grad_sample import GradSampleModuleFastGradientClipping

        return GradSampleModuleFastGradientClipping(module, max_grad_norm=self.max_grad_norm, loss_reduction="sum",
                                                    use_ghost_clipping=True)

    def backward(self, wrapped, params: list, loss_per_record) -> None:
        """Gradients of the batch into ``params``' ``.grad``: the mean of the losses (non-private), or
        the noisy sum of the records' clipped gradients divided by ``B`` (private).  ``loss_per_record``
        is None for an empty batch (the step is then noise only)."""
        import torch

        for p in params:
            p.grad = None
        if not self.private:
            loss = loss_per_record.mean()
            loss.backward()
            self.losses.append(float(loss.detach()))
            return
        if loss_per_record is not None and loss_per_record.numel():
            with warnings.catch_warnings():  # Opacus' hooks on layers whose inputs need no gradient
                warnings.filterwarnings("ignore", message="Full backward hook is firing")
                loss_per_record.sum().backward(retain_graph=True)     # pass 1: the hooks record ||g_i||
                coeff = wrapped.get_clipping_coef().to(loss_per_record.device)
                for p in params:
                    p.grad = None
                wrapped.disable_hooks()
                (coeff * loss_per_record).sum().backward()             # pass 2: sum of clipped gradients
                wrapped.enable_hooks()
        std = self.sigma * self.max_grad_norm
        for p in params:
            z = torch.from_numpy(self.noise.normal(std, tuple(p.shape)).astype(np.float32)).to(p.device)
            g = p.grad if p.grad is not None else torch.zeros_like(p)
            p.grad = (g + z) / self.batch_size

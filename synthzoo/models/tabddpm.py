"""TabDDPM: Kotelnikov, Baranchuk, Rubachev, Babenko, "TabDDPM: Modelling Tabular Data with Diffusion
Models" (ICML 2023), and DP-TabDDPM.

Diffusion on the continuous-feature layout: Gaussian diffusion (Ho et al. 2020, noise prediction) on
every scalar and missing flag (flags as -1/+1), multinomial diffusion (Hoogeboom et al. 2021) on every
one-hot block, one MLP denoiser with a sinusoidal timestep embedding predicting both the Gaussian
noise and the clean categories.  The per-record loss is the Gaussian MSE plus the mean over blocks of
the multinomial KL between the true and the predicted posteriors (cross-entropy at the first step),
as in the paper.  Sampling runs the reverse chain from pure noise for all rows at once.

Where the paper reads the data, we do not: its quantile transform is fitted on the raw column; here
the numbers come from the pipeline's feature preprocessing (``mode_features``, whose modes are fitted
to a DP histogram, or ``features``, scaled on the public bounds).

DP-TabDDPM trains the denoiser with :class:`~synthzoo.core.privacy.dpsgd.DPSGD`: each record's loss
involves that record (and its own timestep and noise) only, so Opacus' ghost clipping clips exactly
per record.  The record count that sets the sampling rate is a discrete Gaussian count charged first.
Not built: augmentation multiplicity (several timesteps per record averaged before clipping) -- with
ghost clipping each timestep copy would be its own row and clipped alone, so a record's sensitivity
would be the number of copies times the clipping norm.

Defaults are the paper's design scaled for a CPU: a cosine schedule of 200 diffusion steps (the
paper: 1,000; sampling runs every step, and 1,000 took 7.5 minutes for adult's 26,049 rows on one
core), hidden widths (256, 256, 256) (the paper's adult network is wider and deeper), AdamW with
learning rate 2e-3 and weight decay 1e-5, batches of 512, 100 epochs (about 5,100 steps on adult;
the paper: 30,000 steps of 4,096 rows).
"""

from __future__ import annotations

import math

import numpy as np

from ..core.base import Model, register
from ..core.features import FeatureData, FeatureTable
from ..core.params import Boolean, Integral, Interval, Options, Real, Sequence
from ..core.privacy.ledger import Budget
from ..core.progress import progress_bar
from .torch_features import Head, OneNetwork, dpsgd_run, sample_rows, torch_module

_PAPER = ("Kotelnikov, Baranchuk, Rubachev, Babenko, TabDDPM: Modelling Tabular Data with Diffusion Models "
          "(ICML 2023)")


def cosine_schedule(steps: int) -> np.ndarray:
    """The betas of Nichol & Dhariwal's cosine schedule (as TabDDPM), clipped at 0.999."""
    s = 0.008
    t = np.arange(steps + 1, dtype=np.float64) / steps
    f = np.cos((t + s) / (1 + s) * math.pi / 2) ** 2
    return np.clip(1 - f[1:] / f[:-1], 0.0, 0.999)


def _network(torch, dim: int, hidden: list, emb: int):
    """The denoiser: x_t projected, plus the timestep embedding, through an MLP back to the layout."""

    class Denoiser(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(dim, emb)
            self.time = torch.nn.Sequential(torch.nn.Linear(emb, emb), torch.nn.SiLU(), torch.nn.Linear(emb, emb))
            layers, width = [], emb
            for h in hidden:
                layers += [torch.nn.Linear(width, h), torch.nn.ReLU()]
                width = h
            self.mlp = torch.nn.Sequential(*layers, torch.nn.Linear(width, dim))

        def embed(self, t):
            half = emb // 2
            freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
            a = t.float()[:, None] * freqs[None, :]
            e = torch.cat([torch.cos(a), torch.sin(a)], dim=1)
            return torch.nn.functional.pad(e, (0, emb - e.shape[1]))

        def forward(self, x, t):
            return self.mlp(self.proj(x) + self.time(self.embed(t)))

    return Denoiser()


class _Diffusion:
    """The two forward processes and their posteriors on one layout (torch tensors, padded blocks)."""

    def __init__(self, torch, head: Head, steps: int, device):
        self.torch, self.head, self.T = torch, head, int(steps)
        beta = cosine_schedule(self.T)
        alpha = 1.0 - beta
        abar = np.cumprod(alpha)
        abar_prev = np.concatenate([[1.0], abar[:-1]])
        f = lambda a: torch.as_tensor(a, dtype=torch.float32, device=device)  # noqa: E731
        self.beta, self.alpha, self.abar, self.abar_prev = f(beta), f(alpha), f(abar), f(abar_prev)
        self.post_var = f(beta * (1 - abar_prev) / (1 - abar))
        self.cont = torch.cat([head.tanh, head.sigm]) if head.sigm.numel() else head.tanh
        self.k = head.soft_mask.sum(1).float()                              # categories per block

    # -- categorical blocks as (n, blocks, width) probabilities, padding 0
    def blocks(self, x):
        return x[:, self.head.soft_idx] * self.head.soft_mask

    def _mix(self, p, a):  # a * p + (1 - a) / K on the real entries of each block
        return (a[:, None, None] * p + ((1 - a)[:, None, None] / self.k[None, :, None])) * self.head.soft_mask

    def posterior(self, xt, x0, t):
        """q(x_{t-1} | x_t, x_0) of every block (x_0 may be the model's probabilities)."""
        p = self._mix(xt, self.alpha[t]) * self._mix(x0, self.abar_prev[t])
        return p / p.sum(2, keepdim=True).clamp_min(1e-30)

    def noisy(self, x0, t, eps, u):
        """x_t from x_0: the Gaussian part and a draw of each block from q(x_t | x_0)."""
        torch = self.torch
        xt = torch.zeros_like(x0)
        c = self.cont
        if c.numel():
            ab = self.abar[t][:, None]
            xt[:, c] = ab.sqrt() * x0[:, c] + (1 - ab).sqrt() * eps
        if self.head.n_soft:
            xt = self.head._scatter_soft(xt, self.draw(self._mix(self.blocks(x0), self.abar[t]), u))
        return xt

    def draw(self, p, u):
        """One-hot draws from block probabilities ``p`` with uniforms ``u`` (n, blocks)."""
        cdf = p.cumsum(2)
        k = (cdf < u[:, :, None] * cdf[:, :, -1:]).sum(2).clamp_max(p.shape[2] - 1)
        out = self.torch.zeros_like(p).scatter_(2, k[:, :, None], 1.0)
        return out * self.head.soft_mask

    def loss(self, net, x0, t, eps, u):
        """TabDDPM's per-record loss: Gaussian MSE + mean over blocks of the multinomial KL."""
        torch = self.torch
        xt = self.noisy(x0, t, eps, u)
        out = net(xt, t)
        loss = x0.new_zeros(x0.shape[0])
        c = self.cont
        if c.numel():
            loss = loss + ((out[:, c] - eps) ** 2).mean(1)
        if self.head.n_soft:
            logits = out[:, self.head.soft_idx].masked_fill(~self.head.soft_mask, float("-inf"))
            x0_hat = torch.softmax(logits, dim=2).masked_fill(~self.head.soft_mask, 0.0)
            b0, bt = self.blocks(x0), self.blocks(xt)
            q_true, q_model = self.posterior(bt, b0, t), self.posterior(bt, x0_hat, t)
            kl = (q_true * (torch.log(q_true.clamp_min(1e-30)) - torch.log(q_model.clamp_min(1e-30)))).sum(2)
            nll = -(b0 * torch.log(x0_hat.clamp_min(1e-30))).sum(2)                 # the first step
            first = (t == 0)[:, None]
            loss = loss + torch.where(first, nll, kl).mean(1)
        return loss

    def sample(self, net, m: int, gen):
        """The reverse chain for ``m`` rows; returns raw outputs that :class:`Head` activates to them."""
        torch = self.torch
        dev = self.beta.device
        x = torch.zeros(m, self.head.dim, device=dev)
        c = self.cont
        if c.numel():
            x[:, c] = torch.randn(m, c.numel(), generator=gen).to(dev)
        if self.head.n_soft:
            uniform = self.head.soft_mask[None].float() / self.k[None, :, None]
            x = self.head._scatter_soft(x, self.draw(uniform.expand(m, -1, -1),
                                                     torch.rand(m, self.head.n_soft, generator=gen).to(dev)))
        for i in reversed(range(self.T)):
            t = torch.full((m,), i, dtype=torch.long, device=dev)
            out = net(x, t)
            new = torch.zeros_like(x)
            if c.numel():
                eps = out[:, c]
                mean = (x[:, c] - self.beta[i] / (1 - self.abar[i]).sqrt() * eps) / self.alpha[i].sqrt()
                z = torch.randn(m, c.numel(), generator=gen).to(dev) if i > 0 else 0.0
                new[:, c] = mean + self.post_var[i].sqrt() * z
            if self.head.n_soft:
                logits = out[:, self.head.soft_idx].masked_fill(~self.head.soft_mask, float("-inf"))
                x0_hat = torch.softmax(logits, dim=2).masked_fill(~self.head.soft_mask, 0.0)
                p = self.posterior(self.blocks(x), x0_hat, t) if i > 0 else x0_hat
                new = self.head._scatter_soft(new, self.draw(p, torch.rand(m, self.head.n_soft, generator=gen).to(dev)))
            x = new
        # raw outputs for Head.activate: tanh^-1 of the scalars, logits of the flags, log one-hots
        raw = torch.zeros_like(x)
        if self.head.tanh.numel():
            raw[:, self.head.tanh] = torch.atanh(x[:, self.head.tanh].clamp(-0.999, 0.999))
        if self.head.sigm.numel():
            p = ((x[:, self.head.sigm] + 1) / 2).clamp(1e-4, 1 - 1e-4)
            raw[:, self.head.sigm] = torch.log(p) - torch.log1p(-p)
        if self.head.n_soft:
            raw = self.head._scatter_soft(raw, torch.log(self.blocks(x).clamp_min(1e-12)))
        return raw


@register("model", "tabddpm")
class TabDDPM(OneNetwork, Model):
    """TabDDPM and DP-TabDDPM (Kotelnikov et al., ICML 2023): Gaussian and multinomial diffusion on
    continuous features with one MLP denoiser, trained by DP-SGD when the run is private.

    Parameters
    ----------
    steps : int, default 200
        Diffusion steps T (cosine schedule); sampling runs all of them.
    hidden : tuple of int, default (256, 256, 256)
        Hidden widths of the denoiser.
    embedding_dim : int, default 128
        Width of the input projection and the timestep embedding.
    epochs : int, default 100
        Passes over the (estimated) number of records; ``ceil(epochs * n_hat / batch_size)`` steps.
    batch_size : int, default 512
        Batch size (the expected one under Poisson sampling).
    lr : float, default 2e-3
    weight_decay : float, default 1e-5
        AdamW's weight decay.
    max_grad_norm : float, default 1.0
        DP-SGD's per-record clipping norm.
    count_share : float, default 0.02
        Share of the model's budget for the DP record count that sets the sampling rate.
    device : {"auto", "cpu", "cuda"}, default "auto"
    progress : bool or None, default None
        A progress bar over the training steps (None: on a terminal).

    Examples
    --------
    >>> sz.make("tabddpm", epsilon=None, schema=schema).fit(df).sample(1000)  # doctest: +SKIP
    >>> sz.make("dp-tabddpm", epsilon=1.0, schema=schema).fit(df)              # doctest: +SKIP
    """

    paper = _PAPER
    _load_limits = {"steps": 10_000}  # sample() runs the reverse chain this many steps
    _tags = {"fits": "records", "input": "features", "spends_budget": True}
    _parameter_constraints = {
        "steps": [Interval(Integral, 2, None)], "hidden": [Sequence(Interval(Integral, 1, None), min_length=1)],
        "embedding_dim": [Interval(Integral, 2, None)], "epochs": [Interval(Integral, 1, None)],
        "batch_size": [Interval(Integral, 1, None)], "lr": [Interval(Real, 0, None, closed="neither")],
        "weight_decay": [Interval(Real, 0, None)], "max_grad_norm": [Interval(Real, 0, None, closed="neither")],
        "count_share": [Interval(Real, 0, 1, closed="neither")], "device": [Options("auto", "cpu", "cuda")],
        "progress": [None, Boolean()]}
    _test_params = {"steps": 10, "hidden": (16,), "embedding_dim": 8, "epochs": 2, "batch_size": 200}

    def __init__(self, steps: int = 200, hidden=(256, 256, 256), embedding_dim: int = 128, epochs: int = 100,
                 batch_size: int = 512, lr: float = 2e-3, weight_decay: float = 1e-5, max_grad_norm: float = 1.0,
                 count_share: float = 0.02, device: str = "auto", progress: bool | None = None):
        self.steps = steps
        self.hidden = hidden
        self.embedding_dim = embedding_dim
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.weight_decay = weight_decay
        self.max_grad_norm = max_grad_norm
        self.count_share = count_share
        self.device = device
        self.progress = progress

    @classmethod
    def hyperparameter_space(cls) -> dict:
        # after the paper's own tuning space (learning rate log-uniform up to 3e-3, T in {100, 1000},
        # batches of 256 or 4,096), with 200 steps and 512 rows added for the CPU defaults
        return {"lr": ("log", 1e-5, 3e-3), "steps": ("cat", [100, 200, 1000]), "epochs": ("int", 30, 300),
                "batch_size": ("cat", [256, 512, 4096])}

    def _build(self, table: FeatureTable):
        return _network(torch_module(), table.dim, list(self.hidden), int(self.embedding_dim))

    def fit_records(self, data: FeatureData, budget: Budget, rng: np.random.Generator) -> "TabDDPM":
        """Train the denoiser on the feature rows, by DP-SGD charged to ``budget`` when private."""
        torch, dev, gen, net, head = self._start(data, rng)
        diff = _Diffusion(torch, head, int(self.steps), dev)
        n_hat, n_steps, sgd = dpsgd_run(self, data, budget, "tabddpm")
        wrapped = sgd.wrap(net)
        params = list(net.parameters())
        opt = torch.optim.AdamW(params, lr=float(self.lr), weight_decay=float(self.weight_decay))
        x_all = torch.as_tensor(data.x, device=dev)
        if diff.cont.numel() and head.sigm.numel():  # flags diffuse as -1/+1
            x_all = x_all.clone()
            x_all[:, head.sigm] = 2 * x_all[:, head.sigm] - 1
        n_cont = int(diff.cont.numel())
        for idx in progress_bar(sgd.batches(data.n, rng), total=n_steps, desc="tabddpm", enabled=self.progress):
            loss = None
            if len(idx):
                b = len(idx)
                x0 = x_all[torch.as_tensor(idx, dtype=torch.long, device=dev)]
                t = torch.randint(0, diff.T, (b,), generator=gen).to(dev)
                eps = torch.randn(b, n_cont, generator=gen).to(dev)
                u = torch.rand(b, max(head.n_soft, 1), generator=gen).to(dev)[:, :head.n_soft]
                loss = diff.loss(wrapped, x0, t, eps, u)
            sgd.backward(wrapped, params, loss)
            opt.step()
        self._set_fitted(data.table, net, n_hat)
        return self

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` feature rows from the reverse chain (8,192 rows at a time)."""
        self._require_fit()
        torch = torch_module()
        diff = _Diffusion(torch, Head(self.domain_, "cpu"), int(self.steps), "cpu")
        return sample_rows(self.domain_, self._check_n(n), rng, lambda m, gen: diff.sample(self._net, m, gen))

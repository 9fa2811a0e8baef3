"""TabDDPM: Kotelnikov, Baranchuk, Rubachev, Babenko, "TabDDPM: Modelling Tabular Data with Diffusion
Models" (ICML 2023), and DP-TabDDPM.

The model, as the paper and its reference code (yandex-research/tab-ddpm) define it:

* **Gaussian diffusion** (Ho et al. 2020, noise prediction, cosine schedule) on every numeric scalar
  and missing flag (flags as -1/+1).  A column encoded by ``quantile_features`` diffuses as its
  normal score ``Phi^-1(u)`` of its quantile level ``u`` -- the paper's
  ``QuantileTransformer(output_distribution="normal")``, whose quantiles here come from a DP
  histogram (or, non-privately, from the column).  Each record's level is drawn within the levels its
  value decodes from (``quantile_features``' ``dequantize``): the transformer's one spike per value
  of a discrete column is learnt as a smooth density instead, and adult's hours-per-week (47 % at
  40) stops pulling its neighbours into the spike.  The reverse step uses the variance ``beta_t``.
* **Multinomial diffusion** (Hoogeboom et al. 2021) on every one-hot block, in log space: the
  posterior ``q(x_{t-1} | x_t, x_0)``, the model's posterior with the predicted ``x_0``, their KL
  (the decoder's negative log-likelihood at the first step), weighted by ``1 / p(t) = T`` as the
  reference's ``vb_stochastic`` loss, averaged over the blocks.  The per-record loss is that plus
  the Gaussian MSE (the reference adds the two unweighted).
* **Denoiser**: the MLP of the reference (``proj(x_t) + time_embed(t) [+ SiLU(label_emb(y))]`` into
  Linear-ReLU-Dropout blocks and a linear head), timesteps uniform, AdamW with the learning rate
  annealed linearly to 0.  The one-hot state enters the network as 0/1 (the reference feeds the
  log one-hot, 0 / -69: the same information through an affine map).
* **Conditioning on the target** (the reference's ``is_y_cond`` for classification): the schema's
  categorical target is taken out of the diffused state, enters the denoiser as a label embedding,
  and sampling draws the labels first from their distribution -- here a discrete Gaussian count per
  label (charged; the counts' sum is the record count the DP-SGD rate needs), never the exact one.

DP-TabDDPM trains the denoiser with :class:`~synthzoo.core.privacy.dpsgd.DPSGD` with **augmentation
multiplicity** (De et al. 2022; Ghalebikesabi et al. 2023 for diffusion): each record in a Poisson
batch is diffused at ``multiplicity`` K independent timesteps and noises, laid out as a
``(batch, K, dim)`` tensor through the network; the record's loss is the mean over its K copies,
and Opacus' ghost clipping (exact for ``(batch, K, dim)`` inputs to Linear and Embedding layers)
clips that one per-record gradient to C.  A record's influence is C whatever K is, and the K copies
average away much of the diffusion loss's own variance, which single-timestep DP-SGD drowns in noise.

**The marginal start** (ours, not the paper's; private runs, ``prior_share`` > 0). A few dozen to a
few hundred DP-SGD steps barely move a denoiser from its initialisation, and the paper's
initialisation samples nothing like the data: on hmeq at epsilon 1 DP-TabDDPM drew 49-54 % missing
values in every numeric column (real 1.6-21 %) and numbers spread over their ranges (1-way TVD .49).
So the denoiser predicts what the columns' marginals alone leave unexplained. ``prior_share`` of the
budget releases one-way counts of every one-hot block and missing flag
(:func:`~.torch_features.output_priors`: one discrete Gaussian release); the network's last layer
starts with the blocks' log-frequencies as its biases (0 on the Gaussian outputs), and the Gaussian
outputs are added to the noise that the Bayes denoiser of independent marginals predicts
(:meth:`_Diffusion.with_prior`): a normal score is N(0, 1) by its encoding (a missing value sits at
0), a flag -1/+1 with the released log-odds (a table of numbers alone releases nothing and keeps the
normal scores' part). An untrained network thus samples every column near its noisy marginal (its
random weights add a little), and training adds what the columns share. Its weights start as the
paper's: a last layer at 0 gave the same one-way fit and a worse one on pairs (housing 2-way TVD
.191 against .181, R^2 .47 against .52). Measured in the README's paragraph on the record models
under DP-SGD.

Defaults are the paper's design sized for a CPU (``synthzoo/presets.py`` lists the presets): the
reference's adult configuration is T = 100 diffusion steps, a (256, 1024, 1024, 1024, 1024, 256)
network, 30,000 steps of 4,096 rows at learning rate 2e-3, weight decay 0, label-conditional.  Here
T = 100, hidden (256, 512, 512, 256), batches of 1,024 for 240 epochs (about 6,100 steps on adult's
26,049 training rows: 1/20 of the reference's rows seen, on a narrower network; about 7.5 CPU minutes
on one thread) -- README's paragraph on the diffusion models gives the measured quality and time on adult
(120 epochs: 2-way TVD .037 +- .002 over three seeds; 240: .035, within .01 of HALF's .029 in each).
"""

from __future__ import annotations

import math

import numpy as np

from ..core.base import Model, register
from ..core.errors import ConfigError
from ..core.features import FeatureData, FeatureTable, QuantileNumber
from ..core.params import MAX_BATCH, Boolean, Integral, Interval, Options, Real, Sequence
from ..core.privacy.ledger import Budget
from ..core.progress import progress_bar
from ..core.statecheck import NUMBER
from .torch_features import (OneNetwork, SamplingNet, dpsgd_run, draw_weighted, mlp_weights, output_priors,
                             resolve_device, sample_rows, torch_module)

_PAPER = ("Kotelnikov, Baranchuk, Rubachev, Babenko, TabDDPM: Modelling Tabular Data with Diffusion Models "
          "(ICML 2023)")
#: logit of the padding entries of a block (never drawn, weightless in every sum)
_NEG = -1e4


def cosine_schedule(steps: int) -> np.ndarray:
    """The betas of Nichol & Dhariwal's cosine schedule (as TabDDPM), clipped at 0.999."""
    s = 0.008
    t = np.arange(steps + 1, dtype=np.float64) / steps
    f = np.cos((t + s) / (1 + s) * math.pi / 2) ** 2
    return np.clip(1 - f[1:] / f[:-1], 0.0, 0.999)


def _network(torch, dim: int, hidden: list, emb: int, n_labels: int, dropout: float):
    """The reference's MLPDiffusion: ``proj(x) + time_embed(t) [+ SiLU(label_emb(y))]`` through an
    MLP (Linear, ReLU, Dropout blocks) back to ``dim`` outputs.  Any leading shape: ``x (..., dim)``,
    ``t (...)``, ``y (...)`` -- a (batch, K, dim) input keeps every record on its own batch row."""

    class Denoiser(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(dim, emb)
            self.time = torch.nn.Sequential(torch.nn.Linear(emb, emb), torch.nn.SiLU(), torch.nn.Linear(emb, emb))
            self.label = torch.nn.Embedding(n_labels, emb) if n_labels else None
            layers, width = [], emb
            for h in hidden:
                layers += [torch.nn.Linear(width, h), torch.nn.ReLU(), torch.nn.Dropout(dropout)]
                width = h
            self.mlp = torch.nn.Sequential(*layers, torch.nn.Linear(width, dim))

        def embed(self, t):
            half = emb // 2
            freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
            a = t.float()[..., None] * freqs
            e = torch.cat([torch.cos(a), torch.sin(a)], dim=-1)
            return torch.nn.functional.pad(e, (0, emb - e.shape[-1]))

        def condition(self, t, y=None):
            """What the timesteps (and labels) add to the projected input."""
            h = self.time(self.embed(t))
            if self.label is not None:
                h = h + torch.nn.functional.silu(self.label(y))
            return h

        def forward(self, x, t, y=None):
            return self.mlp(self.proj(x) + self.condition(t, y))

    return Denoiser()


def _ndtri_floor() -> float:
    """Phi^-1(1e-7): the lowest normal score of a quantile level (the levels are clipped to
    [1e-7, 1 - 1e-7], as scikit-learn's QuantileTransformer does)."""
    from scipy.special import ndtri

    return float(ndtri(1e-7))


class _Layout:
    """How the feature matrix diffuses: the columns that diffuse (all but a conditioning target's
    block), among them the Gaussian ones (scalars, normal scores of quantile features, flags as
    -1/+1) and the one-hot blocks as a padded (blocks, width) index."""

    def __init__(self, torch, table: FeatureTable, target: str | None, normal_scores: bool, device):
        self.torch, self.dim = torch, table.dim
        self.target = target
        tgt = [s for s in table.layout if s.column == target and s.activation == "softmax"]
        self.target_slice = (tgt[0].start, tgt[0].stop) if tgt else None
        self.n_labels = tgt[0].width if tgt else 0
        segs = [s for s in table.layout if not (tgt and s.column == target)]
        keep, gauss, normal, flags, blocks, ranges = [], [], [], [], [], []
        for s in segs:
            pos = len(keep)
            keep.extend(range(s.start, s.stop))
            if s.activation == "softmax":
                blocks.append(list(range(pos, pos + s.width)))
                ranges.append((pos, s.width))
            else:
                gauss.append(pos)
                if s.activation == "sigmoid":
                    flags.append(pos)
                elif normal_scores and isinstance(table.encoders[s.column], QuantileNumber):
                    normal.append(pos)
        self.d = len(keep)
        w = max([len(b) for b in blocks], default=1)
        idx = np.zeros((len(blocks), w), dtype=np.int64)
        mask = np.zeros((len(blocks), w), dtype=bool)
        for i, b in enumerate(blocks):
            idx[i, :len(b)] = b
            mask[i, :len(b)] = True
        t = lambda a: torch.as_tensor(np.asarray(a, dtype=np.int64), device=device)  # noqa: E731
        self.keep, self.gauss, self.normal, self.flags = t(keep), t(gauss), t(normal), t(flags)
        self.n_gauss, self.n_blocks, self.width = len(gauss), len(blocks), w
        self.block_ranges = ranges  # (first column, width) of each one-hot block in the state
        # the range every Gaussian coordinate of a record lies in (public: the encoding fixes it):
        # normal scores within Phi^-1(1e-7) of 0, scalars and flags in [-1, 1]
        top = np.where(np.isin(gauss, normal), -_ndtri_floor(), 1.0)
        self.hi = torch.as_tensor(top, dtype=torch.float32, device=device)
        self.idx, self.mask = t(idx), torch.as_tensor(mask, device=device)

    def block_cols(self) -> np.ndarray:
        """Which state columns belong to a one-hot block (d,) bool."""
        out = np.zeros(self.d, dtype=bool)
        for start, width in self.block_ranges:
            out[start:start + width] = True
        return out

    # -- features <-> diffusion state
    def to_state(self, x):
        """Feature rows (n, table.dim) -> the diffusion state (n, d) and the labels (n,) or None."""
        torch = self.torch
        z = x[:, self.keep].clone()
        if self.normal.numel():
            u = ((z[:, self.normal] + 1) / 2).clamp(1e-7, 1 - 1e-7)
            z[:, self.normal] = torch.special.ndtri(u.double()).float()
        if self.flags.numel():
            z[:, self.flags] = 2 * z[:, self.flags] - 1
        y = x[:, self.target_slice[0]:self.target_slice[1]].argmax(1) if self.target_slice else None
        return z, y

    def to_features(self, z, y):
        """A finished diffusion state (one-hot blocks) and labels -> feature rows."""
        torch = self.torch
        g = z.clone()
        if self.normal.numel():
            g[:, self.normal] = 2 * torch.special.ndtr(g[:, self.normal].double()).float() - 1
        if self.flags.numel():
            g[:, self.flags] = (g[:, self.flags] > 0).float()
        scal = [i for i in self.gauss.tolist() if i not in set(self.flags.tolist())]
        if scal:
            g[:, scal] = g[:, scal].clamp(-1.0, 1.0)
        x = torch.zeros(z.shape[0], self.dim, device=z.device)
        x[:, self.keep] = g
        if self.target_slice:
            x[torch.arange(z.shape[0], device=z.device), self.target_slice[0] + y] = 1.0
        return x

    def scatter_blocks(self, z, onehot):
        """``z`` with its one-hot blocks set from a padded (..., blocks, width) tensor."""
        flat = self.idx[self.mask]
        z[..., flat] = onehot[..., self.mask]
        return z


class _Diffusion:
    """The two forward processes, their posteriors and the reference's losses, on a :class:`_Layout`.

    One-hot blocks are padded (..., blocks, width) tensors.  The model's posterior, whose gradient
    trains the network, is taken in log space from the logits (log-softmax at the first step, where a
    softmax probability may underflow); the data's posterior and the sampling chain need no gradient
    and run on probabilities, whose smallest entry, ``(1 - alpha_t) / K``, is far above float32's
    floor for t >= 1.
    """

    def __init__(self, torch, lay: _Layout, steps: int, device, prior=None, score_prior: float = 1.0):
        self.torch, self.lay, self.T = torch, lay, int(steps)
        beta = cosine_schedule(self.T)
        alpha = 1.0 - beta
        abar = np.cumprod(alpha)
        abar_prev = np.concatenate([[1.0], abar[:-1]])
        f = lambda a: torch.as_tensor(np.asarray(a, dtype=np.float64), dtype=torch.float32, device=device)  # noqa
        self.beta, self.alpha, self.abar, self.abar_prev = f(beta), f(alpha), f(abar), f(abar_prev)
        post_var = beta * (1 - abar_prev) / (1 - abar)
        self.var = f(np.concatenate([[post_var[1] if self.T > 1 else beta[0]], beta[1:]]))  # the reference's
        self.coef0 = f(beta * np.sqrt(abar_prev) / (1 - abar))                  # posterior mean: coef0 x_0
        self.coeft = f((1 - abar_prev) * np.sqrt(alpha) / (1 - abar))           #               + coeft x_t
        self.inv_k = (1.0 / lay.mask.sum(1).float())[:, None] * lay.mask         # (blocks, width), 0 on padding
        # the marginal denoiser the network's Gaussian outputs are added to (see :meth:`with_prior`)
        self.flag_logit = None
        if prior is not None and lay.n_gauss:
            gauss = lay.gauss.cpu().numpy()
            # the normal scores' part of the prior, weighed by score_prior (0 on flags and scalars)
            self.normal_weight = f(np.isin(gauss, lay.normal.cpu().numpy()) * float(score_prior))
            flag = np.isin(gauss, lay.flags.cpu().numpy())
            self.is_flag = f(flag)
            self.flag_logit = f(np.where(flag, np.asarray(prior)[gauss], 0.0))

    @staticmethod
    def _at(v, t):  # a schedule value per (..., ) timestep, broadcast over blocks and width
        return v[t][..., None, None]

    # -- multinomial diffusion (Hoogeboom et al.; the reference's q_pred / q_posterior)
    def _mix(self, p, a):
        """a p + (1 - a) / K on each block's entries (padding 0)."""
        return a * p + (1 - a) * self.inv_k

    def q_pred(self, p0, t):
        """q(x_t | x_0) of each block."""
        return self._mix(p0, self._at(self.abar, t))

    def posterior(self, p0, xt, t):
        """q(x_{t-1} | x_t, x_0) of each block, ``x_0`` given as probabilities (at t = 0 the
        reference's: x_0 reweighted by q(x_t | x_{t-1}))."""
        un = self._mix(p0, self._at(self.abar_prev, t)) * self._mix(xt, self._at(self.alpha, t))
        return un / un.sum(-1, keepdim=True).clamp_min(1e-30)

    def log_posterior_model(self, logits, xt, t):
        """log p(x_{t-1} | x_t): the posterior at the predicted ``x_0 = softmax(logits)``, in log space
        (padding at a large negative value)."""
        torch, mask = self.torch, self.lay.mask
        logits = logits.masked_fill(~mask, _NEG)
        lx0 = torch.log_softmax(logits, dim=-1)
        prev = torch.log(self._mix(torch.softmax(logits, dim=-1), self._at(self.abar_prev, t)).clamp_min(1e-30))
        prev = torch.where((t == 0)[..., None, None], lx0, prev)
        un = (prev + torch.log(self._mix(xt, self._at(self.alpha, t)).clamp_min(1e-30))).masked_fill(~mask, _NEG)
        return (un - torch.logsumexp(un, dim=-1, keepdim=True)).masked_fill(~mask, _NEG)

    def draw(self, p, u):
        """One-hot draws from block probabilities ``p`` with one uniform per block ``u`` (..., blocks)."""
        cdf = p.cumsum(-1)
        k = (cdf < u[..., None] * cdf[..., -1:]).sum(-1, keepdim=True).clamp_max(p.shape[-1] - 1)
        return self.torch.zeros_like(p).scatter_(-1, k, 1.0) * self.lay.mask

    # -- the marginal denoiser
    def with_prior(self, out, x, ab):
        """The denoiser's output with, on its Gaussian coordinates, the noise that the best denoiser
        of the columns' marginals alone predicts from ``x`` (the state at ``abar_t = ab``), so that the
        network learns what the marginals leave: a normal score is N(0, 1) by its encoding (predicted
        noise ``sqrt(1 - ab) x``; a missing value's 0 is left to the network); a flag is -1/+1 with the
        released log-odds ``L``, whose posterior mean is ``tanh(L / 2 + sqrt(ab) x / (1 - ab))``;
        scalars get nothing.  A network that outputs 0 then
        draws every column from its marginal.  Unchanged without a prior."""
        if self.flag_logit is None:
            return out
        torch, lay = self.torch, self.lay
        g = x[..., lay.gauss]
        s, v = ab.sqrt(), 1.0 - ab
        m = torch.tanh(0.5 * self.flag_logit + s * g / v)
        eps = self.normal_weight * v.sqrt() * g + self.is_flag * (g - s * m) / v.sqrt()
        add = torch.zeros_like(out)
        add[..., lay.gauss] = eps
        return out + add

    # -- the training loss of one batch
    def loss(self, net, z0, y, t, eps, u):
        """Per-record loss (B,) of records ``z0`` (B, d) with labels ``y`` (B,) or None, diffused at
        timesteps ``t`` (B, K) with Gaussian noise ``eps`` (B, K, n_gauss) and uniforms ``u``
        (B, K, blocks): the mean over the K copies of the Gaussian MSE plus ``T`` times the mean over
        blocks of the multinomial KL (the NLL at t = 0), the reference's ``vb_stochastic`` loss with
        uniform timesteps.  Each record's loss reads its own row only."""
        torch, lay = self.torch, self.lay
        B, K = t.shape
        x0 = z0[:, None, :].expand(B, K, lay.d)
        xt = torch.zeros_like(x0)
        if lay.n_gauss:
            ab = self.abar[t][..., None]
            xt[..., lay.gauss] = ab.sqrt() * x0[..., lay.gauss] + (1 - ab).sqrt() * eps
        if lay.n_blocks:
            b0 = x0[..., lay.idx] * lay.mask
            bt = self.draw(self.q_pred(b0, t), u)
            xt = lay.scatter_blocks(xt, bt)
        out = net(xt, t, y[:, None].repeat(1, K) if y is not None else None)
        out = self.with_prior(out, xt, self.abar[t][..., None])
        loss = x0.new_zeros(B, K)
        if lay.n_gauss:
            loss = loss + ((out[..., lay.gauss] - eps) ** 2).mean(-1)
        if lay.n_blocks:
            l_model = self.log_posterior_model(out[..., lay.idx], bt, t)
            q_true = self.posterior(b0, bt, t)
            kl = (q_true * (torch.log(q_true.clamp_min(1e-30)) - l_model)).sum(-1)
            nll = -(b0 * l_model).sum(-1)
            lt = torch.where((t == 0)[..., None], nll, kl)                       # (B, K, blocks)
            loss = loss + self.T * lt.mean(-1)
        return loss.mean(1)

    # -- sampling
    def sample(self, net, m: int, labels, gen, clip: bool = True):
        """The reverse chain for ``m`` rows with labels (m,) or None; returns the final state.
        ``clip`` keeps each step's predicted ``x_0`` in the range records live in (Ho et al.'s
        ``clip_denoised``).

        Every step is the network's forward pass (the timestep's embedding made once for all rows,
        the labels' once for the chain, the MLP as a :class:`~.torch_features.SamplingNet`) and each
        one-hot block's posterior drawn on its own columns: the weights
        ``(abar' p0 + (1 - abar') / K) (alpha x_t + (1 - alpha) / K)`` by inverse CDF, with no
        padding and no normalising (the same law as :meth:`posterior` then :meth:`draw`)."""
        torch, lay = self.torch, self.lay
        dev = self.beta.device
        linears = [mod for mod in net.mlp if isinstance(mod, torch.nn.Linear)]   # Linear, ReLU, Dropout, ..., Linear
        mlp = SamplingNet([(fc, None, "relu") for fc in linears[:-1]] + [(linears[-1], None, "linear")], 0,
                          linears[0].in_features, device=dev)
        label_term = torch.nn.functional.silu(net.label(labels)) if net.label is not None else 0.0
        ranges = lay.block_ranges
        z = torch.zeros(m, lay.d, device=dev)
        if lay.n_gauss:
            z[:, lay.gauss] = torch.randn(m, lay.n_gauss, generator=gen).to(dev)
        if lay.n_blocks:
            uniform = self.inv_k.expand(m, -1, -1)
            z = lay.scatter_blocks(z, self.draw(uniform, torch.rand(m, lay.n_blocks, generator=gen).to(dev)))
        for i in reversed(range(self.T)):
            out = self.with_prior(self.network_step(net, mlp, z, i, label_term), z, self.abar[i])
            new = torch.zeros_like(z)
            if lay.n_gauss:
                x = z[:, lay.gauss]
                x0 = (x - (1 - self.abar[i]).sqrt() * out[:, lay.gauss]) / self.abar[i].sqrt()
                if clip:
                    x0 = torch.maximum(torch.minimum(x0, lay.hi), -lay.hi)
                mean = self.coef0[i] * x0 + self.coeft[i] * x
                noise = torch.randn(m, lay.n_gauss, generator=gen).to(dev) if i > 0 else 0.0
                new[:, lay.gauss] = mean + self.var[i].sqrt() * noise
            if lay.n_blocks:
                u = torch.rand(m, lay.n_blocks, generator=gen).to(dev)
                a_prev, a = float(self.abar_prev[i]), float(self.alpha[i])
                hot = torch.empty(m, lay.n_blocks, dtype=torch.long, device=dev)
                for b, (start, width) in enumerate(ranges):
                    w = self.block_weights(out[:, start:start + width], z[:, start:start + width], a_prev, a)
                    hot[:, b:b + 1] = draw_weighted(w, u[:, b:b + 1]).add_(start)
                new.scatter_(1, hot, 1.0)
            z = new
        return z

    @staticmethod
    def network_step(net, mlp, z, i: int, label_term):
        """The denoiser's output ``net(z, t = i, labels)``, with the timestep embedded once for all
        rows and ``label_term`` (``silu(label embedding)`` of the rows, or 0) made once per chain."""
        torch = torch_module()
        h = net.time(net.embed(torch.full((1,), i, dtype=torch.long, device=z.device))) + label_term
        return mlp(net.proj(z).add_(h))

    @staticmethod
    def block_weights(logits, xt, a_prev: float, a: float):
        """Unnormalised ``q(x_{t-1} | x_t, x_0 = softmax(logits))`` of one block (m, K):
        ``(a_prev p0 + (1 - a_prev) / K) (a x_t + (1 - a) / K)`` with ``a_prev = abar_{t-1}``,
        ``a = alpha_t`` (:meth:`posterior` before its normalising)."""
        torch = torch_module()
        width = logits.shape[1]
        p0 = torch.exp(logits - logits.amax(dim=1, keepdim=True))
        p0.mul_(a_prev / p0.sum(dim=1, keepdim=True)).add_((1 - a_prev) / width)
        return p0.mul_(xt.mul(a).add_((1 - a) / width))


@register("model", "tabddpm")
class TabDDPM(OneNetwork, Model):
    """TabDDPM and DP-TabDDPM (Kotelnikov et al., ICML 2023): Gaussian and multinomial diffusion on
    continuous features with one MLP denoiser, label-conditional, trained by DP-SGD with augmentation
    multiplicity when the run is private.

    Parameters
    ----------
    steps : int, default 100
        Diffusion steps T (cosine schedule); sampling runs all of them (the reference's adult: 100).
    hidden : tuple of int, default (256, 512, 512, 256)
        Hidden widths of the denoiser (the reference's adult: 256, 1024 x 4, 256).
    embedding_dim : int, default 128
        Width of the input projection and the timestep (and label) embedding.
    dropout : float, default 0.0
        Dropout after each hidden layer (the reference's adult: 0).
    epochs : int, default 240
        Passes over the (estimated) number of records; ``ceil(epochs * n_hat / batch_size)`` steps.
    batch_size : int, default 1024
        Batch size (the expected one under Poisson sampling).
    multiplicity : int, default 1
        Timesteps (and noises) per record and step, averaged in the record's loss before clipping.
    lr : float, default 2e-3
        AdamW's initial learning rate, annealed linearly to 0 over the run (the reference's).
    weight_decay : float, default 0.0
    conditional : bool, default True
        Condition on the schema's target when it is categorical (the reference's ``is_y_cond``);
        its label distribution is a DP count.  No effect without a categorical target.
    normal_scores : bool, default True
        Diffuse quantile features (``quantile_features``) as normal scores (the paper's transform).
    clip_denoised : bool, default True
        Keep each reverse step's predicted ``x_0`` in the range records live in (normal scores within
        +-5.2, scalars and flags in [-1, 1]), as Ho et al.; the reference leaves it off.  A denoiser
        trained under DP-SGD is too coarse near t = T for an unclipped chain, whose ``1 / sqrt(alpha_t)``
        factors then blow the numbers up to the ends of their ranges.
    max_grad_norm : float, default 1.0
        DP-SGD's per-record clipping norm.
    count_share : float, default 0.02
        Share of the model's budget for the DP counts (per label when conditional, else one record
        count) that set the sampling rate and the label distribution.
    prior_share : float, default 0.05
        Private runs: share of what is left of the budget (after the counts) for one-way counts of
        every one-hot block and missing flag (the target's block aside), which start the denoiser at
        the columns' marginals (this module's docstring says how).  0 trains as the paper does;
        non-private runs always do.
    score_prior : float, default 1.0
        With the marginal start, the weight of the normal scores' part of the marginal denoiser (1: the
        N(0, 1) prior in full; 0: flags only).  Lower weights keep more of the numbers' link to a target
        and fit their marginals less closely (README, *Record models under DP-SGD*): a knob for the tuner.
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
        "embedding_dim": [Interval(Integral, 2, None)], "dropout": [Interval(Real, 0, 1, closed="left")],
        "epochs": [Interval(Integral, 1, None)], "batch_size": [Interval(Integral, 1, MAX_BATCH)],
        "multiplicity": [Interval(Integral, 1, None)], "lr": [Interval(Real, 0, None, closed="neither")],
        "weight_decay": [Interval(Real, 0, None)], "conditional": [Boolean()], "normal_scores": [Boolean()],
        "clip_denoised": [Boolean()],
        "max_grad_norm": [Interval(Real, 0, None, closed="neither")],
        "count_share": [Interval(Real, 0, 1, closed="neither")],
        "prior_share": [Interval(Real, 0, 1, closed="left")], "score_prior": [Interval(Real, 0, 1, closed="both")],
        "device": [Options("auto", "cpu", "cuda")], "progress": [None, Boolean()]}
    # files written before them: the paper's denoiser, no marginal prior; the normal scores' prior in full
    _params_added = {"prior_share": 0.0, "score_prior": 1.0}
    _test_params = {"steps": 10, "hidden": (16,), "embedding_dim": 8, "epochs": 2, "batch_size": 200,
                    "multiplicity": 2}

    def __init__(self, steps: int = 100, hidden=(256, 512, 512, 256), embedding_dim: int = 128,
                 dropout: float = 0.0, epochs: int = 240, batch_size: int = 1024, multiplicity: int = 1,
                 lr: float = 2e-3, weight_decay: float = 0.0, conditional: bool = True, normal_scores: bool = True,
                 clip_denoised: bool = True, max_grad_norm: float = 1.0, count_share: float = 0.02,
                 prior_share: float = 0.05, score_prior: float = 1.0, device: str = "auto",
                 progress: bool | None = None):
        self.steps = steps
        self.hidden = hidden
        self.embedding_dim = embedding_dim
        self.dropout = dropout
        self.epochs = epochs
        self.batch_size = batch_size
        self.multiplicity = multiplicity
        self.lr = lr
        self.weight_decay = weight_decay
        self.conditional = conditional
        self.normal_scores = normal_scores
        self.clip_denoised = clip_denoised
        self.max_grad_norm = max_grad_norm
        self.count_share = count_share
        self.prior_share = prior_share
        self.score_prior = score_prior
        self.device = device
        self.progress = progress

    @classmethod
    def hyperparameter_space(cls) -> dict:
        # SynMeter's TabDDPM space (after the paper's): learning rate log-uniform in [1e-5, 3e-3], T in
        # {100, 1000}, batches of 256 or 4,096 (training length in epochs here, not steps)
        # and ours: the weight of the normal scores' prior in a private run's marginal start
        return {"lr": ("log", 1e-5, 3e-3), "steps": ("cat", [100, 1000]), "epochs": ("int", 30, 300),
                "batch_size": ("cat", [256, 1024, 4096]), "score_prior": ("float", 0.0, 1.0)}

    # ------------------------------------------------------------------ layout
    def _target(self, table: FeatureTable) -> str | None:
        t = table.schema.meta.get("target") if self.conditional else None
        # a target that is the only column leaves nothing to diffuse beside it: it diffuses itself
        if t in table.schema.names and table.schema[t].kind == "categorical" and len(table.schema.names) > 1:
            return t
        return None

    def _layout(self, table: FeatureTable, device) -> _Layout:
        return _Layout(torch_module(), table, self._target(table), bool(self.normal_scores), device)

    def _build(self, table: FeatureTable):
        lay = self._layout(table, "cpu")
        return _network(torch_module(), lay.d, list(self.hidden), int(self.embedding_dim), lay.n_labels,
                        float(self.dropout))

    # ------------------------------------------------------------------ fit
    def _label_counts(self, y: np.ndarray, k: int, budget: Budget) -> tuple[np.ndarray, float]:
        """The labels' counts and their noise's standard deviation: discrete Gaussian (L2 sensitivity 1,
        ``count_share`` of the budget) when private, exact (recorded as non-private) otherwise."""
        from ..core.privacy.mechanisms import discrete_gaussian

        counts = np.bincount(y, minlength=k).astype(float)
        rho = float(self.count_share) * budget.remaining if budget.private else math.inf
        return discrete_gaussian(budget, counts, 1.0, rho, mechanism="label_counts", note="tabddpm: labels")

    def fit_records(self, data: FeatureData, budget: Budget, rng: np.random.Generator) -> "TabDDPM":
        """Train the denoiser on the feature rows, by DP-SGD charged to ``budget`` when private."""
        torch, dev, gen, net, head = self._start(data, rng)
        lay = self._layout(data.table, dev)
        z_all, y_all = lay.to_state(torch.as_tensor(data.x, device=dev))
        n_hat = None
        self.label_probs_ = None
        if lay.n_labels:
            noisy, sigma = self._label_counts(y_all.cpu().numpy(), lay.n_labels, budget)
            n_hat = float(np.clip(noisy, 0, None).sum())
            self.total_sigma_ = float(sigma) * math.sqrt(lay.n_labels)
            self.label_probs_ = _probs(noisy)
        bias = output_priors(data, head, budget, float(self.prior_share), "tabddpm", skip=lay.target)
        if bias is None and budget.private and self.prior_share > 0:  # no block or flag: the normal scores' prior
            bias = np.zeros(data.table.dim)
        self.prior_ = None if bias is None else bias[lay.keep.cpu().numpy()]
        if self.prior_ is not None:  # the last layer's biases: the blocks' log-frequencies, 0 elsewhere
            last = net.mlp[-1]
            with torch.no_grad():
                last.bias.copy_(torch.as_tensor(np.where(lay.block_cols(), self.prior_, 0.0), dtype=last.bias.dtype))
        diff = _Diffusion(torch, lay, int(self.steps), dev, self.prior_, float(self.score_prior))
        n_hat, n_steps, sgd = dpsgd_run(self, data, budget, "tabddpm", n_hat=n_hat)
        wrapped = sgd.wrap(net)
        params = list(net.parameters())
        opt = torch.optim.AdamW(params, lr=float(self.lr), weight_decay=float(self.weight_decay))
        gen, rng = sgd.private_draws(torch, gen, rng)
        K = int(self.multiplicity)
        net.train()
        for step, idx in enumerate(progress_bar(sgd.batches(data.n, rng), total=n_steps, desc="tabddpm",
                                                enabled=self.progress)):
            loss = None
            if len(idx):
                b = len(idx)
                rows = torch.as_tensor(idx, dtype=torch.long, device=dev)
                t = torch.randint(0, diff.T, (b, K), generator=gen).to(dev)
                eps = torch.randn(b, K, lay.n_gauss, generator=gen).to(dev)
                u = torch.rand(b, K, lay.n_blocks, generator=gen).to(dev)
                loss = diff.loss(wrapped, z_all[rows], y_all[rows] if y_all is not None else None, t, eps, u)
            sgd.backward(wrapped, params, loss)
            opt.step()
            for g in opt.param_groups:  # the reference's linear annealing to 0
                g["lr"] = float(self.lr) * (1.0 - (step + 1) / n_steps)
        self._set_fitted(data.table, net, n_hat)
        return self

    # ------------------------------------------------------------------ sample / state
    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` feature rows from the reverse chain (16,384 rows at a time, on the model's device);
        labels first, from the noisy label distribution, when conditional."""
        self._require_fit()
        torch = torch_module()
        dev = resolve_device(self.device, self.name, sampling=True)
        lay = self._layout(self.domain_, dev)
        diff = _Diffusion(torch, lay, int(self.steps), dev, self.prior_, float(self.score_prior))
        probs = torch.as_tensor(self.label_probs_, dtype=torch.float64) if lay.n_labels else None
        net = self._net.to(dev)

        def decode(m, gen):
            y = torch.multinomial(probs, m, replacement=True, generator=gen).to(dev) if probs is not None else None
            return lay.to_features(diff.sample(net, m, y, gen, bool(self.clip_denoised)), y)

        try:
            return sample_rows(self.domain_, self._check_n(n), rng, decode, finished=True)
        finally:
            self._net.cpu()

    def _sample_work(self) -> tuple[float, str]:
        """Every reverse step is one pass of the denoiser per record (its input projection and MLP; the
        timestep's and labels' embeddings are made once for all rows) and a few operations per feature for
        the step's draws.  Unfitted: the hidden layers alone (a lower bound)."""
        table = getattr(self, "domain_", None)
        d = self._layout(table, "cpu").d if table is not None else 0
        emb = int(self.embedding_dim)
        weights = d * emb + mlp_weights([emb, *self.hidden, d])
        steps = int(self.steps)
        return steps * (weights + 10.0 * d), f"steps={steps} x a denoiser of {weights:.2g} weights"

    _state_spec = {**OneNetwork._state_spec, "label_probs": ("optional", [NUMBER]), "prior": ("optional", [NUMBER])}

    def _get_state(self) -> dict:
        state = super()._get_state()
        state["label_probs"] = None if self.label_probs_ is None else list(map(float, self.label_probs_))
        state["prior"] = None if self.prior_ is None else list(map(float, self.prior_))
        return state

    def set_state(self, state: dict, domain) -> None:
        if isinstance(state, dict) and "prior" not in state:  # written before the prior existed: it had none
            state = {**state, "prior": None}
        super().set_state(state, domain)

    def _set_state(self, state: dict, table) -> None:
        lay = self._layout(table, "cpu")
        probs = state.get("label_probs")
        if lay.n_labels:
            p = np.asarray(probs, dtype=float) if probs is not None else np.zeros(0)
            if p.shape != (lay.n_labels,) or not np.all(np.isfinite(p)) or np.any(p < 0) or abs(p.sum() - 1) > 1e-6:
                raise ConfigError(f"{self.name}.set_state: the saved label distribution does not fit the target")
            self.label_probs_ = p
        elif probs is not None:
            raise ConfigError(f"{self.name}.set_state: a label distribution for a model without conditioning")
        else:
            self.label_probs_ = None
        prior = state.get("prior")
        if prior is not None:
            prior = np.asarray(prior, dtype=float)
            # a released log-frequency is within log(records / noise) of 0: 1e3 is far past any
            if prior.shape != (lay.d,) or not np.all(np.abs(prior) <= 1e3):
                raise ConfigError(f"model file: model_state.prior: {lay.d} numbers within +-1000 (one per "
                                  f"diffused feature) expected, got {prior.size}")
        self.prior_ = prior
        super()._set_state(state, table)

    def _set_fitted(self, table, net, total):
        super()._set_fitted(table, net, total)
        if not hasattr(self, "label_probs_"):
            self.label_probs_ = None
        if not hasattr(self, "prior_"):
            self.prior_ = None


def _probs(noisy: np.ndarray) -> np.ndarray:
    """A distribution from noisy counts (negatives clipped; uniform when nothing is left)."""
    c = np.clip(np.asarray(noisy, dtype=float), 0.0, None)
    return c / c.sum() if c.sum() > 0 else np.full(c.size, 1.0 / c.size)

"""Latent diffusion for tables: TabSyn (Zhang et al., ICLR 2024) and DP-TLDM (Zhu et al.) with both
stages charged.

TabSyn, "Mixed-Type Tabular Data Synthesis with Score-based Diffusion in Latent Space" (Zhang, Zhang,
Srinivasan, Shen, Qin, Faloutsos, Rangwala, Karypis, ICLR 2024), in two stages:

1. **A column-tokenising VAE.**  Every slice of the feature layout becomes one token of width
   ``d_token``: a scalar ``x_j`` (a number scaled on its bounds, or CTGAN's within-mode value) becomes
   ``w_j x_j + b_j`` with learned vectors ``w_j, b_j``; a one-hot block (a category, CTGAN's mode
   indicator) or a missing flag becomes the learned embedding of its category.  A [CLS] token
   (``w_0``, no bias) is prepended.  Two small pre-norm transformers (self-attention written with
   ``nn.Linear``, LayerNorm, a ReLU feed-forward ``factor`` times wider) give each token's posterior
   mean and log-variance; a third transformer decodes the sampled latents (without [CLS]) and a
   per-token read-out gives the scalars back (``<h_j, r_j>``, squared error) and each block's logits
   (cross-entropy).  The per-record loss is ``mean squared error + mean cross-entropy + beta * KL``
   (KL averaged over tokens and dimensions), with TabSyn's adaptive beta: from ``beta_max`` down by
   ``beta_decay`` whenever the reconstruction loss has not improved for ``beta_patience`` epochs, no
   lower than ``beta_min``.
2. **Score-based diffusion on the latents.**  The posterior means of the tokens, flattened to one
   vector per record, are standardised and modelled by EDM (Karras, Aittala, Aila, Laine,
   "Elucidating the Design Space of Diffusion-Based Generative Models", NeurIPS 2022), as TabSyn: an
   MLP denoiser (input projection plus a sinusoidal embedding of ``log(sigma) / 4``, then widths
   ``w, 2w, 2w, w``, SiLU), EDM's preconditioning (``c_skip, c_out, c_in, c_noise`` with
   ``sigma_data = 0.5``), training noise levels ``ln sigma ~ N(-1.2, 1.2^2)`` and EDM's loss weight.
   Sampling runs EDM's Heun sampler (``sigma`` from 80 to 0.002, ``rho = 7``, TabSyn's small churn)
   for all rows at once, maps the latents back and decodes them; categories are the decoder's argmax
   (TabSyn) or drawn from its softmax (``decode="sample"``).

Where TabSyn reads data we must not, we do not:

* **No test-set choices.**  TabSyn's code picks its VAE checkpoint, and drives the beta schedule and
  the learning-rate plateau, on the *test* split.  Here training runs a fixed number of epochs and
  keeps the last weights; the adaptive beta watches the epoch-mean *training* reconstruction loss
  (as SynMeter's port of TabSyn does) and only in a non-private run -- reading that loss is reading
  the data.  A private run uses a data-independent schedule: beta falls geometrically from
  ``beta_max`` to ``beta_min`` over the training steps (``beta_schedule="fixed"``, which the default
  ``"auto"`` becomes when private).  No learning-rate plateau.
* **Latent normalisation.**  TabSyn centres the training latents on their mean.  Here each latent
  coordinate is standardised to ``sigma_data``.  ``latent_norm="stats"``: a non-private run reads
  the exact mean and standard deviation (recorded on the ledger as a non-private access); a private
  run starts from a *public reference* -- the mean and spread of the encoder's latents of 4,096
  records drawn uniformly from the public layout, post-processing of the DP encoder -- and releases
  the means of the latents standardised by it, each coordinate clipped to ``latent_clip``, and one
  overall scale factor, by the Gaussian mechanism (``stats_share`` of the diffusion stage's budget;
  :meth:`TLDM._dp_moments`).  One factor rather than a scale per coordinate: measured on adult at
  epsilon 1, a DP second moment per clipped coordinate had noise larger than its value, while the
  reference's spreads are within a factor of about 1.5-3 of the true ones.  ``latent_norm="public"``
  takes the reference alone and ``"prior"`` the prior's (0, 1); neither reads a record.
* **Features.**  The numbers come from the pipeline's feature preprocessing (TabSyn fits a quantile
  transform on the raw column); categories and missing flags from the public schema.

DP-TLDM (Zhu et al., "Quantifying and Mitigating Privacy Risks for Tabular Generative Models") trains
the autoencoder by DP-SGD and then the diffusion model, without privacy, on the latents ``E(x_i)`` of
the private records, and calls the second stage post-processing.  **It is not.**  Post-processing
covers functions of the DP release alone; stage 2 is a function of the DP encoder *and of every
private record again*: ``E(x_i)`` is record ``i`` seen through a public map, and a non-private model
trained on it may memorise it (decoding a memorised latent gives the record back -- the membership
attack Zhu et al. themselves report against non-private TLDM works the same way against a diffusion
model trained without noise on latents).  For neighbouring tables the encoder's distribution moves by
(epsilon_1, delta_1), but given the encoder, the diffusion weights of a table with ``x*`` and without
it may differ without bound: the pair has no finite epsilon.  So here **both stages are DP-SGD runs
on the one ledger**: ``stage_split`` of the model's budget (after the record count) to the VAE, the
rest to the diffusion stage (its latent statistics and its DP-SGD on the latents, one latent per
record, per-record loss, clipped per record).  The two runs, the count and the statistics compose
adaptively through the ledger's RDP accountant, which reports the release's (epsilon, delta).
Two more of the paper's steps are not used: its batch clipping with sensitivity normalised by ``C``
(under its replace-one neighbouring a batch-clipped gradient moves by ``2C``), and its asymptotic
mu-GDP (central limit) conversion, which is not an upper bound at a finite number of steps.  Here
every record's gradient is clipped to ``C`` (Opacus' ghost clipping, exact per record), batches are
Poisson-sampled (add/remove neighbours: a record moves the clipped sum by at most ``C``), and the
accountant is the ledger's.

The diffusion stage's DP-SGD may use augmentation multiplicity (``noise_levels`` = K): each record in a
batch is noised at K noise levels, as a ``(batch, K, latent)`` tensor, and its loss is the mean over
the K -- still one record per row of the batch, so ghost clipping bounds the record's whole
contribution by ``C`` (checked against a per-record loop in the tests).

**The marginal start** (ours, not the paper's; private runs, ``prior_share`` > 0).  The preset's VAE
takes about 70 DP-SGD steps on a table of 5,000 rows, which barely move the decoder's category
read-out from its random start: on hmeq at epsilon 1 the decoder gave one category for every record in
most categorical tokens and two numeric columns came out 100 % missing.  So ``prior_share`` of the
budget (after the record count) releases the one-way counts of every categorical token in one discrete
Gaussian release (:func:`~.torch_features.output_priors`), and the read-out's biases start at their
log-frequencies (a flag's two codes at minus and plus half its log-odds).  An argmax decoder that has
learned little then gives every record the mode, so the ``dp-tldm`` preset draws the categories from
the decoder's softmax (``decode="sample"``).

Scaled for a CPU (defaults; TabSyn's in brackets): the VAE as TabSyn (``d_token`` 4, 2 layers, 1 head,
factor 32, Adam 1e-3, beta 1e-2 -> 1e-5 by 0.7) but 100 epochs of batches of 512 [4,000 epochs of
4,096, test-set checkpoint]; the denoiser 256 wide [1,024], 300 epochs of batches of 512 [up to
10,000 epochs of 4,096, early stopping on the training loss]; Heun with 50 steps as TabSyn.
"""

from __future__ import annotations

import math

import numpy as np

from ..core.base import Model, register
from ..core.features import FeatureData, FeatureTable
from ..core.params import MAX_BATCH, Boolean, Integral, Interval, Options, Real
from ..core.privacy.ledger import Budget
from ..core.progress import progress_bar
from .torch_features import (OneNetwork, mlp_weights, output_priors, record_count, resolve_device, sample_rows,
                             torch_module)

_TABSYN = ("Zhang, Zhang, Srinivasan, Shen, Qin, Faloutsos, Rangwala, Karypis, Mixed-Type Tabular Data Synthesis "
           "with Score-based Diffusion in Latent Space (TabSyn), ICLR 2024")
_EDM = "Karras, Aittala, Aila, Laine, Elucidating the Design Space of Diffusion-Based Generative Models, NeurIPS 2022"
_DPTLDM = "Zhu et al., Quantifying and Mitigating Privacy Risks for Tabular Generative Models (DP-TLDM)"

#: EDM's constants as TabSyn uses them: the data scale the preconditioning assumes, the training noise
#: distribution ln(sigma) ~ N(P_MEAN, P_STD^2), and the sampler's noise range and schedule exponent.
SIGMA_DATA, P_MEAN, P_STD = 0.5, -1.2, 1.2
SIGMA_MIN, SIGMA_MAX, RHO = 0.002, 80.0, 7.0


class Tokens:
    """The token layout of a :class:`FeatureTable`: every ``tanh`` slice is a numeric token, every
    ``softmax`` block and ``sigmoid`` flag a categorical one (a flag has two categories).  Numeric
    tokens come first, then categorical ones, each in layout order (TabSyn's order)."""

    def __init__(self, table: FeatureTable):
        segs = table.layout
        self.dim = table.dim
        self.num = [s.start for s in segs if s.activation == "tanh"]
        cats = [s for s in segs if s.activation != "tanh"]
        self.cat_start = [s.start for s in cats]
        self.flag = [s.activation == "sigmoid" for s in cats]
        self.sizes = [2 if s.activation == "sigmoid" else s.width for s in cats]
        self.offsets = list(np.concatenate([[0], np.cumsum(self.sizes)[:-1]]).astype(int)) if cats else []
        self.n_num, self.n_cat = len(self.num), len(cats)
        self.n_tokens = self.n_num + self.n_cat
        self.width = max(self.sizes, default=1)
        # the softmax blocks' entries: (token, category) -> layout column
        tok, k, col = [], [], []
        for t, s in enumerate(cats):
            if s.activation == "softmax":
                tok += [t] * s.width
                k += list(range(s.width))
                col += list(range(s.start, s.stop))
        self.soft_tok, self.soft_k, self.soft_col = tok, k, col
        self.flag_tok = [t for t, f in enumerate(self.flag) if f]
        self.flag_col = [self.cat_start[t] for t in self.flag_tok]

    def code_bias(self, layout_bias: np.ndarray) -> np.ndarray:
        """A bias on the layout (a block's logits, a flag's log-odds) as one per category code: a flag's
        two codes get minus and plus half its log-odds."""
        out = np.zeros(max(sum(self.sizes), 1))
        for start, size, flag, off in zip(self.cat_start, self.sizes, self.flag, self.offsets):
            if flag:
                out[off:off + 2] = np.array([-0.5, 0.5]) * layout_bias[start]
            else:
                out[off:off + size] = layout_bias[start:start + size]
        return out

    def split(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Feature rows as ``(numbers (n, n_num) float32, category codes (n, n_cat) int64)``; an
        all-zero block (a mode block of a missing number) reads as its first category."""
        x = np.asarray(x, dtype=np.float32)
        num = x[:, self.num] if self.num else np.zeros((x.shape[0], 0), dtype=np.float32)
        codes = np.zeros((x.shape[0], self.n_cat), dtype=np.int64)
        for t, (start, size, flag) in enumerate(zip(self.cat_start, self.sizes, self.flag)):
            codes[:, t] = (x[:, start] > 0.5) if flag else np.argmax(x[:, start:start + size], axis=1)
        return num, codes

    def raw(self, torch, num, logits, argmax: bool):
        """Decoder outputs as raw outputs on the layout (what :class:`~.torch_features.Head` activates):
        ``atanh`` of the scalars, each block's logits (the argmax as a near one-hot when ``argmax``),
        each flag's log-odds."""
        m = num.shape[0] if self.n_num else logits.shape[0]
        raw = torch.zeros(m, self.dim, device=logits.device if self.n_cat else num.device)
        if self.n_num:
            raw[:, self.num] = torch.atanh(num.clamp(-0.999, 0.999))
        if self.n_cat:
            if argmax:
                top = logits.argmax(dim=2, keepdim=True)
                logits = torch.full_like(logits, -30.0).scatter_(2, top, 0.0)
            else:
                logits = torch.log_softmax(logits, dim=2)
            if self.soft_col:
                raw[:, self.soft_col] = logits[:, self.soft_tok, self.soft_k]
            if self.flag_col:
                f = logits[:, self.flag_tok]
                raw[:, self.flag_col] = f[:, :, 1] - f[:, :, 0]
        return raw


def _index(torch, cache: dict, key: str, values, device):
    """A small index tensor made once per device (plain attributes: Opacus refuses modules with buffers)."""
    k = (key, str(device))
    if k not in cache:
        cache[k] = torch.as_tensor(values, dtype=torch.long, device=device)
    return cache[k]


def _vae(torch, tok: Tokens, d: int, n_layers: int, n_heads: int, factor: int):
    """TabSyn's VAE on the token layout; its forward is the per-record loss."""
    nn = torch.nn

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.q, self.k, self.v = nn.Linear(d, d), nn.Linear(d, d), nn.Linear(d, d)
            self.out = nn.Linear(d, d) if n_heads > 1 else None
            for lin in (self.q, self.k, self.v):
                nn.init.zeros_(lin.bias)

        def forward(self, x):
            b, t, _ = x.shape
            dh = d // n_heads

            def heads(y):
                return y.reshape(b, t, n_heads, dh).transpose(1, 2)

            q, k, v = heads(self.q(x)), heads(self.k(x)), heads(self.v(x))
            a = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(dh), dim=-1)
            o = (a @ v).transpose(1, 2).reshape(b, t, d)
            return self.out(o) if self.out is not None else o

    class Block(nn.Module):
        def __init__(self, first: bool):
            super().__init__()
            self.attention = Attention()
            self.norm0 = None if first else nn.LayerNorm(d)  # pre-norm; the first block has none (TabSyn)
            self.norm1 = nn.LayerNorm(d)
            self.linear0, self.linear1 = nn.Linear(d, d * factor), nn.Linear(d * factor, d)

        def forward(self, x):
            x = x + self.attention(x if self.norm0 is None else self.norm0(x))
            return x + self.linear1(torch.relu(self.linear0(self.norm1(x))))

    def transformer():
        return nn.Sequential(*[Block(i == 0) for i in range(n_layers)])

    def _init(w, fan):
        bound = 1.0 / math.sqrt(fan)  # nn.Linear's (Kaiming-uniform) range, as TabSyn's tokenizer
        nn.init.uniform_(w, -bound, bound)

    n_num, n_cat, n_codes = tok.n_num, tok.n_cat, max(sum(tok.sizes), 1)

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.num_weight = nn.Embedding(n_num + 1, d)      # [CLS] and one vector per scalar
            self.num_bias = nn.Embedding(max(n_num, 1), d)
            self.categories = nn.Embedding(n_codes, d)
            for e in (self.num_weight, self.num_bias, self.categories):
                _init(e.weight, d)
            # without numbers the scalar biases, without categorical tokens the category embedding, are
            # unused and get no gradient: not trained (Opacus' clipping needs a per-record gradient of
            # every trained parameter)
            self.num_bias.requires_grad_(n_num > 0)
            self.categories.requires_grad_(n_cat > 0)
            self.mu, self.logvar = transformer(), transformer()
            self._idx = {}

        def tokens(self, x_num, codes):
            b, dev = codes.shape[0], codes.device
            w = self.num_weight(_index(torch, self._idx, "w", list(range(n_num + 1)), dev).expand(b, -1).contiguous())
            vals = torch.cat([torch.ones(b, 1, device=dev), x_num], dim=1)
            parts = [w * vals[:, :, None]]
            if n_num:
                bias = self.num_bias(_index(torch, self._idx, "b", list(range(n_num)), dev).expand(b, -1).contiguous())
                parts[0] = parts[0] + torch.cat([torch.zeros(b, 1, d, device=dev), bias], dim=1)
            if n_cat:
                parts.append(self.categories(codes + _index(torch, self._idx, "o", tok.offsets, dev)[None, :]))
            return torch.cat(parts, dim=1)                    # (b, 1 + tokens, d)

        def forward(self, x_num, codes):
            t = self.tokens(x_num, codes)
            return self.mu(t), self.logvar(t)

    class Decoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.transformer = transformer()
            self.num_out = nn.Embedding(max(n_num, 1), d)      # <h_j, r_j> per scalar
            nn.init.xavier_uniform_(self.num_out.weight, gain=1 / math.sqrt(2))
            self.num_out.requires_grad_(n_num > 0)              # unused without numbers
            self.cat_out = nn.Linear(d, n_codes)              # each token reads its own block of it
            nn.init.xavier_uniform_(self.cat_out.weight, gain=1 / math.sqrt(2))
            self.cat_out.requires_grad_(n_cat > 0)              # unused without categorical tokens
            idx = np.zeros((max(n_cat, 1), tok.width), dtype=np.int64)
            mask = np.zeros((max(n_cat, 1), tok.width), dtype=bool)
            for t, (o, s) in enumerate(zip(tok.offsets, tok.sizes)):
                idx[t, :s], mask[t, :s] = np.arange(o, o + s), True
            self._gather, self._mask = idx, mask
            self._idx = {}

        def forward(self, z):
            """Latent tokens (b, tokens, d) -> (scalars (b, n_num), padded logits (b, n_cat, width))."""
            b, dev = z.shape[0], z.device
            h = self.transformer(z)
            num = logits = None
            if n_num:
                r = self.num_out(_index(torch, self._idx, "n", list(range(n_num)), dev).expand(b, -1).contiguous())
                num = (h[:, :n_num] * r).sum(-1)
            if n_cat:
                full = self.cat_out(h[:, n_num:])                               # (b, n_cat, codes)
                gi = _index(torch, self._idx, "g", self._gather, dev)
                logits = torch.gather(full, 2, gi[None].expand(b, -1, -1))
                mask = self._idx.setdefault(("m", str(dev)), torch.as_tensor(self._mask, device=dev))
                logits = logits.masked_fill(~mask[None], float("-inf"))
            return num, logits

    class VAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder, self.decoder = Encoder(), Decoder()
            self.track, self.last_recon = False, 0.0

        def forward(self, x_num, codes, eps, beta: float):
            mu, logvar = self.encoder(x_num, codes)
            z = mu + eps * torch.exp(0.5 * logvar)
            num, logits = self.decoder(z[:, 1:])
            recon = mu.new_zeros(mu.shape[0])
            if n_num:
                recon = recon + ((num - x_num) ** 2).mean(1)
            if n_cat:
                logp = torch.log_softmax(logits, dim=2)
                recon = recon - logp.gather(2, codes[:, :, None]).squeeze(2).mean(1)
            kl = -0.5 * (1 + logvar - mu ** 2 - torch.exp(logvar)).mean(dim=(1, 2))
            if self.track:  # the adaptive beta's signal (non-private runs only)
                self.last_recon = float(recon.detach().sum())
            return recon + beta * kl

    return VAE()


def _edm(torch, dim: int, width: int):
    """TabSyn's MLP denoiser inside EDM's preconditioning; its forward is the per-record loss of
    latents ``y`` (b, K, dim) at noise levels ``sigma`` (b, K) with unit noise ``n``."""
    nn = torch.nn

    class Denoiser(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(dim, width)
            self.time = nn.Sequential(nn.Linear(width, width), nn.SiLU(), nn.Linear(width, width))
            self.mlp = nn.Sequential(nn.Linear(width, 2 * width), nn.SiLU(), nn.Linear(2 * width, 2 * width), nn.SiLU(),
                                     nn.Linear(2 * width, width), nn.SiLU(), nn.Linear(width, dim))

        def embed(self, c):
            half = width // 2
            freqs = (1.0 / 10000.0) ** (torch.arange(half, dtype=torch.float32, device=c.device) / half)
            a = c[..., None] * freqs
            e = torch.cat([torch.sin(a), torch.cos(a)], dim=-1)
            return torch.nn.functional.pad(e, (0, width - e.shape[-1]))

        def forward(self, x, c_noise):
            return self.mlp(self.proj(x) + self.time(self.embed(c_noise)))

    class EDM(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = Denoiser()

        def denoise(self, x, sigma):
            """EDM's preconditioned denoiser D(x; sigma) (Karras et al., Table 1): ``sigma`` per row
            (...), or one float for every row (the sampler's levels: the noise level's embedding is
            then made once and broadcast, not once per row)."""
            if isinstance(sigma, float):
                sd2 = SIGMA_DATA ** 2
                c_noise = torch.full((1,), math.log(sigma) / 4, device=x.device)
                norm = math.sqrt(sigma ** 2 + sd2)
                out = self.net(x / norm, c_noise)
                return out.mul_(sigma * SIGMA_DATA / norm).add_(x, alpha=sd2 / norm ** 2)
            s = sigma[..., None]
            sd2 = SIGMA_DATA ** 2
            c_skip = sd2 / (s ** 2 + sd2)
            c_out = s * SIGMA_DATA / (s ** 2 + sd2).sqrt()
            c_in = 1.0 / (s ** 2 + sd2).sqrt()
            return c_skip * x + c_out * self.net(c_in * x, sigma.log() / 4)

        def forward(self, y, sigma, n):
            weight = (sigma ** 2 + SIGMA_DATA ** 2) / (sigma * SIGMA_DATA) ** 2
            err = (self.denoise(y + n * sigma[..., None], sigma) - y) ** 2
            return (weight * err.mean(-1)).mean(-1)

    return EDM()


def edm_sample(edm, m: int, dim: int, steps: int, gen, device, churn: float = 1.0):
    """EDM's stochastic Heun sampler (Karras et al., Alg. 2) for ``m`` latents at once, as TabSyn runs
    it: ``steps`` noise levels from ``SIGMA_MAX`` to ``SIGMA_MIN`` (``rho = 7``), churn ``gamma =
    min(churn / steps, sqrt(2) - 1)`` at every level, Euler then the second-order correction."""
    torch = torch_module()
    i = torch.arange(steps, dtype=torch.float64)
    lo, hi = SIGMA_MIN ** (1 / RHO), SIGMA_MAX ** (1 / RHO)
    ts = (hi + i / max(steps - 1, 1) * (lo - hi)) ** RHO
    ts = torch.cat([ts, torch.zeros(1, dtype=torch.float64)]).tolist()
    gamma = min(churn / steps, math.sqrt(2) - 1)

    def noise():
        return torch.randn(m, dim, generator=gen).to(device)

    def d_of(x, t):
        return (x - edm.denoise(x, float(t))) / t

    x = noise() * ts[0]
    for k in range(steps):
        t_cur, t_next = ts[k], ts[k + 1]
        t_hat = t_cur * (1 + gamma)
        x_hat = x + math.sqrt(t_hat ** 2 - t_cur ** 2) * noise()
        d_cur = d_of(x_hat, t_hat)
        x = x_hat + (t_next - t_hat) * d_cur
        if k < steps - 1:
            x = x_hat + (t_next - t_hat) * (0.5 * d_cur + 0.5 * d_of(x, t_next))
    return x


def _network(torch, tok: Tokens, d: int, n_layers: int, n_heads: int, factor: int, width: int):
    """The whole fitted model in one module: the VAE, the EDM denoiser and the latent scale
    (buffers, saved with the weights)."""

    class TLDMNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.vae = _vae(torch, tok, d, n_layers, n_heads, factor)
            self.edm = _edm(torch, tok.n_tokens * d, width)
            self.register_buffer("latent_mean", torch.zeros(tok.n_tokens * d))
            self.register_buffer("latent_std", torch.ones(tok.n_tokens * d))

    return TLDMNet()


@register("model", "tldm")
class TLDM(OneNetwork, Model):
    """TabSyn and DP-TLDM: a column-tokenising VAE and EDM score-based diffusion on its latents
    (Zhang et al., ICLR 2024; Karras et al., NeurIPS 2022); when private, DP-SGD on *both* stages
    (DP-TLDM of Zhu et al., with the diffusion stage charged -- see the module docstring).

    Parameters
    ----------
    d_token : int, default 4
        Width of a column token (and of each token's latent).
    n_layers : int, default 2
        Transformer blocks in each of the encoder's two transformers and the decoder's.
    n_heads : int, default 1
        Attention heads (must divide ``d_token``).
    factor : int, default 32
        Width of the feed-forward layers, in multiples of ``d_token``.
    vae_epochs : int, default 100
        Passes over the (estimated) number of records for the VAE.
    vae_batch_size : int, default 512
    vae_lr : float, default 1e-3
        Adam's learning rate for the VAE.
    beta_max, beta_min : float, default 1e-2, 1e-5
        The KL weight's start and floor.
    beta_decay : float, default 0.7
        The KL weight's decay factor (TabSyn's lambda).
    beta_schedule : {"auto", "fixed"}, default "auto"
        "auto": TabSyn's adaptive rule on the epoch-mean training reconstruction loss when the run is
        non-private, "fixed" when it is private (the loss is private data); "fixed": geometric from
        ``beta_max`` to ``beta_min`` over the steps, reading nothing, in either run.
    beta_patience : int, default 10
        Epochs without improvement before the adaptive beta decays.
    width : int, default 256
        The denoiser's width (TabSyn: 1,024); its hidden layers are ``width, 2 width, 2 width, width``.
    diffusion_epochs : int, default 300
        Passes over the (estimated) number of records for the denoiser.
    diffusion_batch_size : int, default 512
    diffusion_lr : float, default 1e-3
        Adam's learning rate for the denoiser.
    noise_levels : int, default 1
        Noise levels per record and step (augmentation multiplicity); the record's loss is their mean.
    sampling_steps : int, default 50
        Noise levels of the Heun sampler (about twice as many denoiser evaluations).
    latent_norm : {"stats", "public", "prior"}, default "stats"
        How the latents are standardised: their mean and standard deviation (non-private), or a DP mean
        around the public reference (private); the public reference alone; the prior's (0, 1).
    latent_clip : float, default 4.0
        Private ``"stats"``: each latent coordinate, standardised by the reference, is clipped to
        ``[-latent_clip, latent_clip]``.
    stats_share : float, default 0.05
        Private ``"stats"``: share of the diffusion stage's budget for the latent statistics.
    stage_split : float, default 0.5
        Share of the model's budget (after the record count) for the VAE's DP-SGD; the rest is the
        diffusion stage's.
    vae_max_grad_norm, diffusion_max_grad_norm : float, default 1.0
        DP-SGD's per-record clipping norms.
    count_share : float, default 0.02
        Share of the model's budget for the DP record count that sets the sampling rates.
    prior_share : float, default 0.05
        Private runs: share of the model's budget (after the record count) for the one-way counts of every
        categorical token, whose log-frequencies start the decoder's category read-out (ours, not the
        paper's; 0: the paper's initialisation).  See :func:`~.torch_features.output_priors`.
    decode : {"argmax", "sample"}, default "argmax"
        Categories from the decoder: its argmax (TabSyn) or a draw from its softmax.
    device : {"auto", "cpu", "cuda"}, default "auto"
    progress : bool or None, default None
        Progress bars over the training steps (None: on a terminal).

    Examples
    --------
    >>> sz.make("tldm", epsilon=None, schema=schema).fit(df).sample(1000)     # doctest: +SKIP
    >>> s = sz.make("dp-tldm", epsilon=1.0, schema=schema).fit(df)            # doctest: +SKIP
    >>> print(s.privacy_report())            # the count, tldm/vae, tldm/latent_stats, tldm/diffusion
    """

    paper = f"{_TABSYN}; {_EDM}; {_DPTLDM}"
    _tags = {"fits": "records", "input": "features", "spends_budget": True}
    _parameter_constraints = {
        "d_token": [Interval(Integral, 1, None)], "n_layers": [Interval(Integral, 1, None)],
        "n_heads": [Interval(Integral, 1, None)], "factor": [Interval(Integral, 1, None)],
        "vae_epochs": [Interval(Integral, 1, None)], "vae_batch_size": [Interval(Integral, 1, MAX_BATCH)],
        "vae_lr": [Interval(Real, 0, None, closed="neither")],
        "beta_max": [Interval(Real, 0, None)], "beta_min": [Interval(Real, 0, None)],
        "beta_decay": [Interval(Real, 0, 1, closed="right")],
        "beta_schedule": [Options("auto", "fixed")], "beta_patience": [Interval(Integral, 1, None)],
        "width": [Interval(Integral, 2, None)], "diffusion_epochs": [Interval(Integral, 1, None)],
        "diffusion_batch_size": [Interval(Integral, 1, MAX_BATCH)],
        "diffusion_lr": [Interval(Real, 0, None, closed="neither")],
        "noise_levels": [Interval(Integral, 1, None)], "sampling_steps": [Interval(Integral, 1, None)],
        "latent_norm": [Options("stats", "public", "prior")],
        "latent_clip": [Interval(Real, 0, None, closed="neither")],
        "stats_share": [Interval(Real, 0, 1, closed="neither")],
        "stage_split": [Interval(Real, 0, 1, closed="neither")],
        "vae_max_grad_norm": [Interval(Real, 0, None, closed="neither")],
        "diffusion_max_grad_norm": [Interval(Real, 0, None, closed="neither")],
        "count_share": [Interval(Real, 0, 1, closed="neither")],
        "prior_share": [Interval(Real, 0, 1, closed="left")],
        "decode": [Options("argmax", "sample")], "device": [Options("auto", "cpu", "cuda")],
        "progress": [None, Boolean()]}
    _params_added = {"prior_share": 0.0}  # files written before it: the decoder started as the paper's
    # sample() runs the reverse chain sampling_steps times; the network is built layer by layer (and
    # head by head) before its shapes can be compared with the saved weights
    _load_limits = {"sampling_steps": 10_000, "n_layers": 64, "n_heads": 64}
    _test_params = {"d_token": 2, "n_layers": 1, "factor": 4, "vae_epochs": 2, "vae_batch_size": 200, "width": 16,
                    "diffusion_epochs": 2, "diffusion_batch_size": 200, "sampling_steps": 5}

    def dpsgd_runs(self) -> list[tuple[int, int]]:
        return [(self.vae_epochs, self.vae_batch_size), (self.diffusion_epochs, self.diffusion_batch_size)]

    def __init__(self, d_token: int = 4, n_layers: int = 2, n_heads: int = 1, factor: int = 32, vae_epochs: int = 100,
                 vae_batch_size: int = 512, vae_lr: float = 1e-3, beta_max: float = 1e-2, beta_min: float = 1e-5,
                 beta_decay: float = 0.7, beta_schedule: str = "auto", beta_patience: int = 10, width: int = 256,
                 diffusion_epochs: int = 300, diffusion_batch_size: int = 512, diffusion_lr: float = 1e-3,
                 noise_levels: int = 1, sampling_steps: int = 50, latent_norm: str = "stats",
                 latent_clip: float = 4.0, stats_share: float = 0.05, stage_split: float = 0.5,
                 vae_max_grad_norm: float = 1.0, diffusion_max_grad_norm: float = 1.0, count_share: float = 0.02,
                 prior_share: float = 0.05, decode: str = "argmax", device: str = "auto",
                 progress: bool | None = None):
        self.d_token = d_token
        self.n_layers = n_layers
        self.n_heads = n_heads
        self.factor = factor
        self.vae_epochs = vae_epochs
        self.vae_batch_size = vae_batch_size
        self.vae_lr = vae_lr
        self.beta_max = beta_max
        self.beta_min = beta_min
        self.beta_decay = beta_decay
        self.beta_schedule = beta_schedule
        self.beta_patience = beta_patience
        self.width = width
        self.diffusion_epochs = diffusion_epochs
        self.diffusion_batch_size = diffusion_batch_size
        self.diffusion_lr = diffusion_lr
        self.noise_levels = noise_levels
        self.sampling_steps = sampling_steps
        self.latent_norm = latent_norm
        self.latent_clip = latent_clip
        self.stats_share = stats_share
        self.stage_split = stage_split
        self.vae_max_grad_norm = vae_max_grad_norm
        self.diffusion_max_grad_norm = diffusion_max_grad_norm
        self.count_share = count_share
        self.prior_share = prior_share
        self.decode = decode
        self.device = device
        self.progress = progress

    def _check_related_params(self) -> None:
        if int(self.d_token) % int(self.n_heads):
            self._bad("n_heads", f"must divide d_token={self.d_token}")
        if self.beta_min > self.beta_max:
            self._bad("beta_min", f"must not exceed beta_max={self.beta_max}")

    @classmethod
    def hyperparameter_space(cls) -> dict:
        # SynMeter does not tune TabSyn (its defaults, "robust to hyperparameters"); this space covers
        # the CPU scaling (widths, epochs), the learning rates around TabSyn's 1e-3, and the split and
        # augmentation multiplicity that matter under DP
        return {"vae_epochs": ("int", 20, 200), "diffusion_epochs": ("int", 50, 500),
                "width": ("cat", [128, 256, 512, 1024]), "vae_lr": ("log", 3e-4, 3e-3),
                "diffusion_lr": ("log", 3e-4, 3e-3), "stage_split": ("float", 0.2, 0.8),
                "noise_levels": ("cat", [1, 4, 8])}

    # ------------------------------------------------------------------ fit
    def _build(self, table: FeatureTable):
        return _network(torch_module(), Tokens(table), int(self.d_token), int(self.n_layers), int(self.n_heads),
                        int(self.factor), int(self.width))

    def fit_records(self, data: FeatureData, budget: Budget, rng: np.random.Generator) -> "TLDM":
        """Train the VAE, then the denoiser on the VAE's latents of the same records; both by DP-SGD
        charged to ``budget`` when private (``stage_split`` between them)."""
        torch, dev, gen, net, head = self._start(data, rng)
        tok = Tokens(data.table)
        x_num, codes = (torch.as_tensor(a, device=dev) for a in tok.split(data.x))
        n_hat = record_count(self, data, budget, self.name)
        prior = output_priors(data, head, budget, float(self.prior_share), self.name)
        if prior is not None:
            with torch.no_grad():
                net.vae.decoder.cat_out.bias.copy_(torch.as_tensor(tok.code_bias(prior), dtype=torch.float32))
        rest = budget.remaining
        split = float(self.stage_split)
        vae_budget = budget.sub(f"{budget.name}/vae", split * rest if budget.private else math.inf)
        diff_budget = budget.sub(f"{budget.name}/diffusion", (1 - split) * rest if budget.private else math.inf)
        self._train_vae(torch, net.vae, x_num, codes, n_hat, vae_budget, dev, gen, rng)
        z = self._latents(torch, net.vae, x_num, codes)
        self._latent_scale(torch, net, tok, z, n_hat, diff_budget, gen)
        self._train_diffusion(torch, net, z, n_hat, diff_budget, dev, gen, rng)
        self._set_fitted(data.table, net, n_hat)
        return self

    def _train_vae(self, torch, vae, x_num, codes, n_hat, budget: Budget, dev, gen, rng) -> None:
        from ..core.privacy.dpsgd import DPSGD, schedule

        n = codes.shape[0]
        bs = int(self.vae_batch_size)
        steps = schedule(self.vae_epochs, n_hat, bs)[0]
        sgd = DPSGD(budget, n_hat, bs, steps, float(self.vae_max_grad_norm), note=f"{self.name}: VAE")
        wrapped = sgd.wrap(vae)
        params = [p for p in vae.parameters() if p.requires_grad]
        opt = torch.optim.Adam(params, lr=float(self.vae_lr))
        gen, rng = sgd.private_draws(torch, gen, rng)
        d, n_tok = int(self.d_token), codes.shape[1] + x_num.shape[1] + 1
        adaptive = vae.track = self.beta_schedule == "auto" and not budget.private
        bmax, bmin, decay = float(self.beta_max), float(self.beta_min), float(self.beta_decay)
        n_dec = (math.ceil(math.log(bmin / bmax) / math.log(decay)) if 0 < bmin < bmax and decay < 1 else 0)
        per_epoch = max(1, math.ceil(n / bs))
        beta, best, patience, epoch_loss, seen = bmax, math.inf, 0, 0.0, 0
        for step, idx in enumerate(progress_bar(sgd.batches(n, rng), total=steps, desc=f"{self.name} vae",
                                                enabled=self.progress)):
            if not adaptive:  # data-independent: beta_max * decay^k, k rising evenly to reach beta_min
                beta = max(bmin, bmax * decay ** math.floor(step / steps * (n_dec + 1)))
            loss = None
            if len(idx):
                i = torch.as_tensor(idx, dtype=torch.long, device=dev)
                eps = torch.randn(len(idx), n_tok, d, generator=gen).to(dev)
                loss = wrapped(x_num[i], codes[i], eps, beta)
                if adaptive:
                    epoch_loss, seen = epoch_loss + vae.last_recon, seen + len(idx)
            sgd.backward(wrapped, params, loss)
            opt.step()
            if adaptive and (step + 1) % per_epoch == 0:  # TabSyn's plateau rule, on the training loss
                mean = epoch_loss / max(seen, 1)
                epoch_loss, seen = 0.0, 0
                if mean < best:
                    best, patience = mean, 0
                else:
                    patience += 1
                    if patience == int(self.beta_patience) and beta > bmin:
                        beta = max(bmin, beta * decay)
        vae.track, vae.last_recon = False, 0.0
        if sgd.private:
            wrapped.remove_hooks()

    @staticmethod
    def _latents(torch, vae, x_num, codes):
        """The posterior means of every record's tokens (without [CLS]), flattened: (n, tokens * d)."""
        out = []
        with torch.no_grad():
            for lo in range(0, codes.shape[0], 8192):
                mu, _ = vae.encoder(x_num[lo:lo + 8192], codes[lo:lo + 8192])
                out.append(mu[:, 1:].reshape(mu.shape[0], -1))
        return torch.cat(out)

    def _reference(self, torch, vae, tok: Tokens, gen, dev):
        """Per-coordinate mean and standard deviation of the latents of 4,096 records drawn from the
        public layout alone (scalars uniform on [-1, 1], categories uniform): post-processing of the
        trained encoder, it reads no record."""
        m = 4096
        num = (torch.rand(m, tok.n_num, generator=gen) * 2 - 1).to(dev)
        codes = torch.stack([torch.randint(0, k, (m,), generator=gen) for k in tok.sizes], dim=1) if tok.n_cat \
            else torch.zeros(m, 0, dtype=torch.long)
        z = self._latents(torch, vae, num, codes.to(dev))
        return z.mean(0), z.std(0).clamp_min(1e-6)

    def _latent_scale(self, torch, net, tok: Tokens, z, n_hat: float, budget: Budget, gen) -> None:
        """The latents' per-coordinate mean and standard deviation (``latent_norm``): ``"stats"``: exact
        when non-private (recorded on the ledger), else by the Gaussian mechanism on the latents
        standardised by the public reference (:meth:`_reference`) and clipped to ``latent_clip``;
        ``"public"``: the reference alone; ``"prior"``: 0 and 1."""
        if self.latent_norm == "prior":
            return
        row = f"{budget.name.rsplit('/', 1)[0]}/latent_stats"
        if self.latent_norm == "stats" and not budget.private:
            budget.charge("latent_stats", None, math.inf, note=f"{self.name}: latent mean and std (non-private)",
                          module=row)
            mean, std = z.mean(0), z.std(0)
        else:
            mean, std = self._reference(torch, net.vae, tok, gen, z.device)
            if self.latent_norm == "stats":
                mean, std = self._dp_moments(torch, z, mean, std, n_hat, budget, row)
        net.latent_mean.copy_(mean)
        net.latent_std.copy_(std.clamp_min(1e-6))

    def _dp_moments(self, torch, z, ref_mean, ref_std, n_hat: float, budget: Budget, row: str):
        """Private ``"stats"``: one Gaussian release of each coordinate's mean and of one overall scale.

        Each record's latents, standardised by the public reference and clipped, ``u = clip((z - m) / s,
        -c, c) / c`` (every coordinate in [-1, 1]), contribute ``(u, sqrt(D) |u|^2 / D)``: L2 norm at most
        ``sqrt(2 D)``.  The sums, divided by the DP count, give each coordinate's mean and the average
        second moment, hence one factor ``r`` by which the reference's spreads are rescaled.  (A second
        moment per coordinate was tried: on adult at epsilon 1 its noise exceeded its value.)"""
        from ..core.privacy.mechanisms import gaussian

        c, dim = float(self.latent_clip), z.shape[1]
        # summed in float64: float32 sums of a large table round so that removing one record moved them by
        # more than its own contribution (4.14 in L2 against sqrt(2 D) = 4 at 4,000,000 rows, D = 8)
        u = ((z - ref_mean) / ref_std).clamp(-c, c) / c
        w = math.sqrt(dim)
        sums = torch.cat([u.sum(0, dtype=torch.float64),
                          (w * (u ** 2).mean(1, dtype=torch.float64)).sum()[None]]).cpu().numpy()
        stats = budget.sub(row, float(self.stats_share) * budget.remaining)
        noisy, _ = gaussian(stats, sums, math.sqrt(2 * dim), stats.remaining, mechanism="gaussian",
                            note=f"{self.name}: latent means and overall scale around the public reference, "
                                 f"clipped at {c:g}")
        noisy = torch.as_tensor(noisy / max(n_hat, 1.0), dtype=torch.float32, device=z.device)
        m1 = noisy[:dim].clamp(-1, 1)
        second = float(noisy[dim]) / w
        r = c * math.sqrt(max(second - float((m1 ** 2).mean()), 1e-4))  # the floor: a hundredth of the clip
        return ref_mean + ref_std * c * m1, ref_std * r

    def _train_diffusion(self, torch, net, z, n_hat: float, budget: Budget, dev, gen, rng) -> None:
        from ..core.privacy.dpsgd import DPSGD, schedule

        edm = net.edm
        y_all = (z - net.latent_mean) / net.latent_std * SIGMA_DATA
        n, dim = y_all.shape
        bs, k = int(self.diffusion_batch_size), int(self.noise_levels)
        steps = schedule(self.diffusion_epochs, n_hat, bs)[0]
        sgd = DPSGD(budget, n_hat, bs, steps, float(self.diffusion_max_grad_norm), note=f"{self.name}: diffusion")
        wrapped = sgd.wrap(edm)
        params = list(edm.parameters())
        opt = torch.optim.Adam(params, lr=float(self.diffusion_lr))
        gen, rng = sgd.private_draws(torch, gen, rng)
        for idx in progress_bar(sgd.batches(n, rng), total=steps, desc=f"{self.name} diffusion",
                                enabled=self.progress):
            loss = None
            if len(idx):
                b = len(idx)
                y = y_all[torch.as_tensor(idx, dtype=torch.long, device=dev)][:, None, :].expand(b, k, dim)
                sigma = (torch.randn(b, k, generator=gen) * P_STD + P_MEAN).exp().to(dev)
                noise = torch.randn(b, k, dim, generator=gen).to(dev)
                loss = wrapped(y, sigma, noise)
            sgd.backward(wrapped, params, loss)
            opt.step()
        if sgd.private:
            wrapped.remove_hooks()

    # ------------------------------------------------------------------ sample
    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` feature rows: latents drawn by the Heun sampler for 16,384 rows at a time, mapped back
        to the latent scale and decoded (on the GPU when ``device`` gives one)."""
        self._require_fit()
        torch = torch_module()
        tok = Tokens(self.domain_)
        dev = resolve_device(self.device, self.name, sampling=True)
        net = self._net if dev.type == "cpu" else _copy_to(torch, self._net, self.domain_, self, dev)
        d, steps, argmax = int(self.d_token), int(self.sampling_steps), self.decode == "argmax"
        dim = tok.n_tokens * d

        def decode(m, gen):
            y = edm_sample(net.edm, m, dim, steps, gen, dev)
            z = y / SIGMA_DATA * net.latent_std + net.latent_mean
            num, logits = net.vae.decoder(z.reshape(m, tok.n_tokens, d))
            return tok.raw(torch, num, logits, argmax).cpu()

        return sample_rows(self.domain_, self._check_n(n), rng, decode)

    def _sample_work(self) -> tuple[float, str]:
        """Heun's ``2 sampling_steps - 1`` passes of the denoiser per record (the noise level's embedding is
        made once for all rows), then one pass of the decoder's transformer over the record's tokens and its
        read-out.  Unfitted: with no tokens (a lower bound: the denoiser's hidden layers)."""
        table = getattr(self, "domain_", None)
        tok = Tokens(table) if table is not None else None
        n_tok, n_num, n_cat = (tok.n_tokens, tok.n_num, tok.n_cat) if tok else (0, 0, 0)
        n_codes = max(sum(tok.sizes), 1) if tok else 0
        d, w, layers = int(self.d_token), int(self.width), int(self.n_layers)
        dim = n_tok * d
        weights = dim * w + mlp_weights([w, 2 * w, 2 * w, w, dim])
        passes = max(2 * int(self.sampling_steps) - 1, 1)
        per_token = (3 + (int(self.n_heads) > 1) + 2 * int(self.factor)) * d * d
        decoder = layers * (n_tok * per_token + 2 * n_tok * n_tok * d) + n_cat * d * n_codes + n_num * d
        return (passes * weights + decoder,
                f"sampling_steps={self.sampling_steps} (x2, Heun) x a denoiser of {weights:.2g} weights, and a "
                f"decoder of n_layers={layers} (d_token={d}, factor={self.factor}) at {decoder:.2g} per record")


def _copy_to(torch, net, table, model, dev):
    """A copy of the fitted network on ``dev`` (sampling on a GPU; the fitted one stays on the CPU)."""
    other = model._build(table)
    other.load_state_dict(net.state_dict())
    return other.to(dev).eval()

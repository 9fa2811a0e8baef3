"""TVAE: the tabular variational autoencoder of Xu, Skoularidou, Cuesta-Infante, Veeramachaneni,
"Modeling Tabular Data using Conditional GAN" (NeurIPS 2019), and DP-TVAE.

An encoder maps a record's features to a Gaussian posterior over a latent vector; a decoder maps
latents back to the feature layout: a Gaussian with a learned scale for every tanh scalar (CTGAN's
``alpha`` or a scaled number), a categorical for every one-hot block and a Bernoulli for every
missing flag.  Training minimises ``loss_factor * reconstruction + KL`` per record; sampling draws
latents from the prior, decodes them, draws each category from its softmax and adds the learned
noise to the scalars (as the paper's code does).

DP-TVAE trains encoder and decoder jointly with :class:`~synthzoo.core.privacy.dpsgd.DPSGD`: each
record's loss involves that record only, so per-record clipping holds exactly and Opacus' ghost
clipping computes it at about the cost of a non-private step.  The learned scales are a linear layer
fed a constant (its weight plus its bias, as training and sampling both read them), so they are clipped
with the rest.  The record count that sets the
sampling rate is a discrete Gaussian count charged first (``count_share`` of the budget).

**The marginal start and pull** (ours, not the paper's; private runs, ``prior_share`` > 0).  With the
record count, ``count_share + prior_share`` of the budget releases the one-way counts of every one-hot
block (categories and the numbers' mode indicators) and the missing flags' counts in one go
(:func:`~synthzoo.models.torch_features.release_marginal_targets`, the same release the GANs' start
uses).  Their log-frequencies start the decoder's output biases: DP-SGD moves a logit little per step,
and a decoder started near uniform kept drawing rare categories and missing values far too often
(housing at epsilon 1: 6.9 % ISLAND for 0.03 % real, 12 % missing ``total_bedrooms`` for 1 %; with the
start 0.2 % and 1.5 %).  Every DP-SGD step then adds, weighted ``marginal_weight``, the gradient of the
GANs' pull (:class:`~synthzoo.models.torch_features.MarginalPull`) on rows the decoder draws from the
prior, as sampling draws them, and towards the encoding's own law of each mode's values: the biases
alone leave the within-mode values where the few hundred noisy steps put them (hmeq: ``CLNO`` and
``YOJ`` .21-.26 per-column TVD).  The pull reads no record,
only the release, fresh noise and the network, so it is post-processing beside the clipped, noised
gradient.  ``prior_share=0`` trains as the paper does; ``marginal_weight=0`` keeps the start alone.

Paper settings (the defaults): latent 128, two hidden layers of 128 in each network, Adam with
learning rate 1e-3 and weight decay 1e-5, batches of 500, 300 epochs, loss factor 2.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..core.base import Model, register
from ..core.features import FeatureData, FeatureTable
from ..core.params import MAX_BATCH, Boolean, Integral, Interval, Options, Real, Sequence
from ..core.privacy.ledger import Budget
from ..core.progress import progress_bar
from .torch_features import (
    OneNetwork,
    dpsgd_run,
    head_work,
    linear_weights,
    release_marginal_targets,
    sample_rows,
    torch_module,
)

#: rows the decoder draws from the prior for each step's marginal pull: its statistics are batch averages, and
#: 250 rows gave the TVD of 1,000 (hmeq and housing, replayed noise, seeds 0-3) at a quarter of the pull's cost
PULL_ROWS = 250

_PAPER = ("Xu, Skoularidou, Cuesta-Infante, Veeramachaneni, Modeling Tabular Data using Conditional GAN "
          "(NeurIPS 2019): TVAE")


def _mlp(torch, sizes: list[int]):
    layers = []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [torch.nn.Linear(a, b), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers)


def _network(torch, dim: int, n_scalars: int, emb: int, enc: list, dec: list):
    """Encoder, decoder and the scales' layer in one module whose forward is the per-record loss."""

    class VAE(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.enc = _mlp(torch, [dim, *enc])
            self.mu = torch.nn.Linear(enc[-1], emb)
            self.logvar = torch.nn.Linear(enc[-1], emb)
            self.dec = _mlp(torch, [emb, *dec])
            self.out = torch.nn.Linear(dec[-1], dim)
            self.log_sigma = torch.nn.Linear(1, max(n_scalars, 1))  # the log-scales: a layer fed a constant
            torch.nn.init.zeros_(self.log_sigma.weight)
            torch.nn.init.constant_(self.log_sigma.bias, math.log(0.1))
            # a table without numbers has no scales: the layer is unused, gets no gradient, so no training
            # (Opacus' clipping needs a per-record gradient of every trained parameter)
            self.log_sigma.requires_grad_(n_scalars > 0)

        def decode(self, z):
            return self.out(self.dec(z))

        def scales(self):
            """The learnt standard deviations of the scalars, as ``forward`` forms them (the layer's weight
            fed 1, plus its bias: both are trained)."""
            log_sigma = (self.log_sigma.weight[:, 0] + self.log_sigma.bias)[:n_scalars]
            return torch.exp(log_sigma.clamp(math.log(0.01), 0.0))

        def forward(self, x, eps, head, factor):
            h = self.enc(x)
            mu, logvar = self.mu(h), self.logvar(h).clamp(-20.0, 20.0)
            z = mu + eps * torch.exp(0.5 * logvar)
            log_sigma = self.log_sigma(torch.ones(x.shape[0], 1, device=x.device))[:, :n_scalars]
            log_sigma = log_sigma.clamp(math.log(0.01), 0.0)  # TVAE keeps sigma in [0.01, 1]
            kl = -0.5 * (1 + logvar - mu ** 2 - torch.exp(logvar)).sum(dim=1)
            return factor * head.recon_loss(self.decode(z), x, log_sigma) + kl

    return VAE()


@register("model", "tvae")
class TVAE(OneNetwork, Model):
    """TVAE and DP-TVAE (Xu et al., NeurIPS 2019): a variational autoencoder on continuous features,
    trained by DP-SGD when the run is private.

    Parameters
    ----------
    embedding_dim : int, default 128
        Latent size.
    compress_dims, decompress_dims : tuple of int, default (128, 128)
        Hidden widths of the encoder and the decoder.
    epochs : int, default 300
        Passes over the (estimated) number of records; a private run takes
        ``ceil(epochs * n_hat / batch_size)`` DP-SGD steps.
    batch_size : int, default 500
        Batch size (the expected one under Poisson sampling).
    lr : float, default 1e-3
    l2scale : float, default 1e-5
        Adam's weight decay.
    loss_factor : float, default 2.0
        Weight of the reconstruction term.
    max_grad_norm : float, default 1.0
        DP-SGD's per-record clipping norm.
    count_share : float, default 0.02
        Share of the model's budget for the DP record count that sets the sampling rate.
    prior_share : float, default 0.15
        Private runs: a share of the model's budget, beside ``count_share``, for the marginal start and
        pull (module docstring): released with the record count, the one-way counts of every one-hot
        block and missing flag, whose log-frequencies start the decoder's output biases. 0 starts the
        decoder as the paper does, without a pull.
        With the pull, 0.15 beat 0.05 on hmeq, housing and adult at epsilon 1 (2-way TVD .186 -> .170,
        .212 -> .210, .131 -> .113), and 0.3 was no better on hmeq (.172).
    marginal_weight : float, default 1.0
        Private runs with ``prior_share`` > 0: weight of the marginal pull on the decoder's prior draws in
        every DP-SGD step (0: the starting biases alone).
    device : {"auto", "cpu", "cuda"}, default "auto"
    progress : bool or None, default None
        A progress bar over the training steps (None: on a terminal).

    Examples
    --------
    >>> sz.make("tvae", epsilon=None, schema=schema).fit(df).sample(1000)     # doctest: +SKIP
    >>> sz.make("dp-tvae", epsilon=1.0, schema=schema).fit(df)                 # doctest: +SKIP
    """

    paper = _PAPER
    _tags = {"fits": "records", "input": "features", "spends_budget": True}
    _parameter_constraints = {
        "embedding_dim": [Interval(Integral, 1, None)],
        "compress_dims": [Sequence(Interval(Integral, 1, None), min_length=1)],
        "decompress_dims": [Sequence(Interval(Integral, 1, None), min_length=1)],
        "epochs": [Interval(Integral, 1, None)], "batch_size": [Interval(Integral, 1, MAX_BATCH)],
        "lr": [Interval(Real, 0, None, closed="neither")], "l2scale": [Interval(Real, 0, None)],
        "loss_factor": [Interval(Real, 0, None, closed="neither")],
        "max_grad_norm": [Interval(Real, 0, None, closed="neither")],
        "count_share": [Interval(Real, 0, 1, closed="neither")],
        "prior_share": [Interval(Real, 0, 1, closed="left")], "marginal_weight": [Interval(Real, 0, None)],
        "device": [Options("auto", "cpu", "cuda")], "progress": [None, Boolean()]}
    # files written before them: the decoder started as the paper's, then without a pull
    _params_added = {"prior_share": 0.0, "marginal_weight": 0.0}
    _test_params = {"embedding_dim": 8, "compress_dims": (16,), "decompress_dims": (16,), "epochs": 2,
                    "batch_size": 200}

    def __init__(self, embedding_dim: int = 128, compress_dims=(128, 128), decompress_dims=(128, 128),
                 epochs: int = 300, batch_size: int = 500, lr: float = 1e-3, l2scale: float = 1e-5,
                 loss_factor: float = 2.0, max_grad_norm: float = 1.0, count_share: float = 0.02,
                 prior_share: float = 0.15, marginal_weight: float = 1.0, device: str = "auto",
                 progress: bool | None = None):
        self.embedding_dim = embedding_dim
        self.compress_dims = compress_dims
        self.decompress_dims = decompress_dims
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.l2scale = l2scale
        self.loss_factor = loss_factor
        self.max_grad_norm = max_grad_norm
        self.count_share = count_share
        self.prior_share = prior_share
        self.marginal_weight = marginal_weight
        self.device = device
        self.progress = progress

    def _check_related_params(self) -> None:
        if self.count_share + self.prior_share >= 1:
            self._bad("prior_share", f"with count_share={self.count_share} must leave some of the budget for "
                                     "DP-SGD (their sum below 1)")

    @classmethod
    def hyperparameter_space(cls) -> dict:
        # SynMeter's TVAE space (Du & Li, "Towards Principled Assessment of Tabular Data Synthesis
        # Algorithms", 2024; their synthesizer/tvae.py): epochs 100-500, batches 500-5000, weight
        # decay 1e-6-1e-3 on a log scale, loss factor 1-5; the widths stay fixed there (and here)
        return {"epochs": ("int", 100, 500), "batch_size": ("cat", [500, 1000, 2000, 5000]),
                "l2scale": ("log", 1e-6, 1e-3), "loss_factor": ("float", 1.0, 5.0)}

    # ------------------------------------------------------------------ fit
    def _build(self, table: FeatureTable):
        torch = torch_module()
        n_scalars = sum(s.activation == "tanh" for s in table.layout)
        return _network(torch, table.dim, n_scalars, int(self.embedding_dim), list(self.compress_dims),
                        list(self.decompress_dims))

    def fit_records(self, data: FeatureData, budget: Budget, rng: np.random.Generator) -> "TVAE":
        """Train on the feature rows, by DP-SGD charged to ``budget`` when private."""
        torch, dev, gen, net, head = self._start(data, rng)
        n_hat, pull = None, None
        weight = float(self.marginal_weight)
        if budget.private and self.prior_share > 0:  # one release: the count, the start and the pull's targets
            n_hat, cond, pull = release_marginal_targets(data, head, budget,
                                                         float(self.count_share) + float(self.prior_share), "tvae")
            self.total_sigma_ = cond.n_sigma
            with torch.no_grad():
                net.out.bias.copy_(torch.as_tensor(pull.output_biases(), dtype=net.out.bias.dtype))
        n_hat, n_steps, sgd = dpsgd_run(self, data, budget, "tvae", n_hat=n_hat)
        wrapped = sgd.wrap(net)
        params = [p for p in net.parameters() if p.requires_grad]
        opt = torch.optim.Adam(params, lr=float(self.lr), weight_decay=float(self.l2scale))
        gen, rng = sgd.private_draws(torch, gen, rng)
        x_all = torch.as_tensor(data.x, device=dev)
        emb = int(self.embedding_dim)
        factor = float(self.loss_factor)
        for idx in progress_bar(sgd.batches(data.n, rng), total=n_steps, desc="tvae", enabled=self.progress):
            x = x_all[torch.as_tensor(idx, dtype=torch.long, device=dev)]
            loss = None
            if len(idx):
                eps = torch.randn(len(idx), emb, generator=gen).to(dev)
                loss = wrapped(x, eps, head, factor)
            sgd.backward(wrapped, params, loss)
            if pull is not None and weight > 0 and not pull.empty:
                self._pull_step(torch, net, wrapped, head, pull, weight, gen, dev)
            opt.step()
        self._set_fitted(data.table, net, n_hat)
        # per-epoch mean training loss of a non-private fit (None under DP): how long it takes to
        # converge, for the overfit risk model (synthzoo.metrics.risk.converged_epochs)
        self.loss_history_ = sgd.loss_history(int(self.epochs))
        return self

    def _pull_step(self, torch, net, wrapped, head, pull, weight: float, gen, dev) -> None:
        """Add the marginal pull's gradient to the step's (noisy) one: a batch (at most :data:`PULL_ROWS`)
        decoded from prior latents, its scalars with the learned noise as sampling adds it.  Reads no record; Opacus' hooks are off,
        so nothing of it enters the clipping."""
        n_scalars = head.tanh.numel()
        wrapped.disable_hooks()
        try:
            with warnings.catch_warnings():  # the disabled hooks still fire (and return) on inputs needing no grad
                warnings.filterwarnings("ignore", message="Full backward hook is firing")
                m = min(int(self.batch_size), PULL_ROWS)
                out = net.decode(torch.randn(m, int(self.embedding_dim), generator=gen).to(dev))
                probs = head.activate(out)
                fake = probs
                if n_scalars:
                    noise = torch.zeros_like(probs)
                    noise[:, head.tanh] = torch.randn(out.shape[0], n_scalars, generator=gen).to(dev) * net.scales()
                    fake = probs + noise
                (weight * pull.loss(out, fake, probs)).backward()
        finally:
            wrapped.enable_hooks()

    # ------------------------------------------------------------------ sample
    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` feature rows: latents from the prior, decoded, categories and flags drawn, the learned
        noise added to the scalars."""
        self._require_fit()
        torch = torch_module()
        net = self._net
        with torch.no_grad():
            # the scales training learnt (weight plus bias); sampling read the bias alone, which on hmeq
            # without privacy (30 epochs) drew the numbers' alpha with 0.072 where training had learnt 0.052
            sigma = net.scales().numpy()
        return sample_rows(self.domain_, self._check_n(n), rng,
                           lambda m, gen: net.decode(torch.randn(m, int(self.embedding_dim), generator=gen)), sigma)

    def _sample_work(self) -> tuple[float, str]:
        """One pass of the decoder per record, then the head's draws (the network has no step multiplier: the
        file's size bounds it; unfitted, 0)."""
        if getattr(self, "domain_", None) is None:
            return 0.0, "not fitted"
        weights = linear_weights(self._net.dec, self._net.out)
        return weights + head_work(self.domain_), f"a decoder of {weights:.2g} weights"

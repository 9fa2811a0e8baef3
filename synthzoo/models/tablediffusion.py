"""TableDiffusion: Truda, "Generating tabular datasets under differential privacy" (arXiv 2308.14784,
2023) -- the few-step DP diffusion model that SynMeter and the DP synthesis benchmarks run.

The design of the reference code (gianlucatruda/TableDiffusion, ``table_diffusion.py``, and
SynMeter's copy of it):

* **Encoding**: numbers through a ``QuantileTransformer`` to [0, 1], categories one-hot.  Here the
  ``quantile_features`` preprocessor, whose quantile function comes from a DP histogram (the
  reference fits it on the raw column for free), gives ``2 u - 1``; the model diffuses ``u`` (every
  scalar mapped back to [0, 1], flags and one-hot blocks as 0/1), as the reference does.
* **Forward process**: ``x_t = x_0 + sqrt(beta_t) eps`` with ``beta_t = (1 - cos(pi t / T)) / 2 + 0.1``
  for the T (default 5) steps -- not variance-preserving, no timestep input to the network.
* **Network**: CTGAN's residual generator (each block ``[ReLU(Norm(Linear(h))), h]`` concatenated,
  widths 128, 128) from the feature dimension back to it.  The reference's ``GroupNorm(1, width)``
  on a (batch, width) input is exactly ``LayerNorm(width)``, used here so that the (batch, T, width)
  layout below keeps each record on its own row.
* **Loss**: every record is noised at **every** one of the T steps in each batch and the record's
  loss is the mean over them of the noise-prediction MSE (``predict_noise=True``); with
  ``predict_noise=False`` the network denoises instead (MSE on the scalars, and on the one-hot blocks
  a cross-entropy over the total number of categories, on softmax outputs).
* **Training**: Adam (learning rate 0.005, betas 0.5, 0.999), Poisson batches of 1,024 rows, 5
  epochs, clipping norm 1, under DP-SGD (the reference: Opacus' ``make_private_with_epsilon``).
* **Sampling**: from ``N(0, I)``, T steps of ``x <- x - sqrt(beta_t) eps_hat(x)`` (or ``x <- x_hat(x)``),
  then each block's argmax and each flag above 0.5, the scalars clipped to [0, 1].

DP: the T noised copies of a record are laid out as a (batch, T, dim) tensor through the network and
the record's loss is their mean, so the core :class:`~synthzoo.core.privacy.dpsgd.DPSGD`'s ghost
clipping clips one gradient per record to C (Opacus' hooks in the reference accumulate the T
passes' per-sample gradients before clipping: the same sensitivity).  The sampling rate uses a DP
record count (charged) where the reference reads ``len(data)``.  ``epsilon=None`` trains the same
network without clipping or noise.

Known weakness, kept as the reference has it: after the first draw the sampler is deterministic
(``x <- x - sqrt(beta_t) eps_hat(x)`` with no fresh noise, no timestep input), so the samples
collapse towards conditional means.  On adult (one run each, 80/20 split, seed 0, one thread) the
preset scores a 2-way TVD of .50 at epsilon 1 and .61 without DP (numbers bunched in the middle of
their ranges, one category taking most rows), against .084 for independent columns.
"""

from __future__ import annotations

import numpy as np

from ..core.base import Model, register
from ..core.features import FeatureData, FeatureTable
from ..core.params import MAX_BATCH, Boolean, Integral, Interval, Options, Real, Sequence
from ..core.privacy.ledger import Budget
from ..core.progress import progress_bar
from .torch_features import (SAMPLE_PRECISIONS, OneNetwork, SamplingNet, dpsgd_run, resolve_device,
                             sample_precision_of, sample_rows, saved_sampling_params, torch_module)

_PAPER = "Truda, Generating tabular datasets under differential privacy, arXiv 2308.14784 (2023) (TableDiffusion)"


def noise_schedule(steps: int) -> np.ndarray:
    """TableDiffusion's ``beta_t = (1 - cos(pi t / T)) / 2 + 0.1`` for t = 0 .. T - 1."""
    t = np.arange(int(steps), dtype=np.float64)
    return (1 - np.cos(np.pi * t / steps)) / 2 + 0.1


def _network(torch, dim: int, hidden: list):
    """CTGAN's residual generator from ``dim`` back to ``dim`` (LayerNorm for the reference's
    GroupNorm(1, width)); any leading shape."""

    class Residual(torch.nn.Module):
        def __init__(self, i, o):
            super().__init__()
            self.fc, self.norm = torch.nn.Linear(i, o), torch.nn.LayerNorm(o)

        def forward(self, x):
            return torch.cat([torch.relu(self.norm(self.fc(x))), x], dim=-1)

    layers, width = [], dim
    for h in hidden:
        layers.append(Residual(width, h))
        width += h
    return torch.nn.Sequential(*layers, torch.nn.Linear(width, dim))


class _Layout:
    """The feature layout as TableDiffusion sees it: scalars on [0, 1] (``(x + 1) / 2``), flags and
    one-hot blocks as 0/1."""

    def __init__(self, torch, table: FeatureTable, device):
        self.torch, self.dim = torch, table.dim
        t = lambda a: torch.as_tensor(np.asarray(a, dtype=np.int64), device=device)  # noqa: E731
        self.scal = t([s.start for s in table.layout if s.activation == "tanh"])
        self.flags = t([s.start for s in table.layout if s.activation == "sigmoid"])
        self.numeric = t(sorted(self.scal.tolist() + self.flags.tolist()))
        blocks = [s for s in table.layout if s.activation == "softmax"]
        w = max([s.width for s in blocks], default=1)
        idx = np.zeros((len(blocks), w), dtype=np.int64)
        mask = np.zeros((len(blocks), w), dtype=bool)
        for i, s in enumerate(blocks):
            idx[i, :s.width] = np.arange(s.start, s.stop)
            mask[i, :s.width] = True
        self.idx, self.mask = t(idx), torch.as_tensor(mask, device=device)
        self.n_blocks = len(blocks)
        self.ranges = [(s.start, s.width) for s in blocks]
        self.n_categories = int(mask.sum())

    def to_state(self, x):
        z = x.clone()
        if self.scal.numel():
            z[:, self.scal] = (z[:, self.scal] + 1) / 2
        return z

    def to_features(self, z):
        """A sampled state -> feature rows: scalars clipped to [0, 1] and mapped back, flags above 0.5,
        each block's argmax one-hot (as scikit-learn's ``OneHotEncoder.inverse_transform``)."""
        torch = self.torch
        x = torch.zeros_like(z)
        if self.scal.numel():
            x[:, self.scal] = 2 * z[:, self.scal].clamp(0.0, 1.0) - 1
        if self.flags.numel():
            x[:, self.flags] = (z[:, self.flags] > 0.5).float()
        if self.n_blocks:  # block by block on its own columns (no padded gather)
            hot = torch.stack([z[:, a:a + w].argmax(1) + a for a, w in self.ranges], dim=1)
            x.scatter_(1, hot, 1.0)
        return x

    def denoised(self, out):
        """The ``predict_noise=False`` network output: scalars as they are, blocks through a softmax."""
        torch = self.torch
        if not self.n_blocks:
            return out
        p = torch.softmax(out[..., self.idx].masked_fill(~self.mask, -1e4), dim=-1)
        res = out.clone()
        res[..., self.idx[self.mask]] = p[..., self.mask]
        return res


@register("model", "tablediffusion")
class TableDiffusion(OneNetwork, Model):
    """TableDiffusion (Truda, 2023): few-step Gaussian diffusion on the encoded features with a
    residual MLP denoiser, trained by DP-SGD (every record noised at all T steps, averaged before
    clipping) when the run is private.

    Parameters
    ----------
    steps : int, default 5
        Diffusion steps T (the reference's ``diffusion_steps``).
    hidden : tuple of int, default (128, 128)
        Widths of the residual blocks.
    epochs : int, default 5
        Passes over the (estimated) number of records (the reference's ``epoch_target``).
    batch_size : int, default 1024
        Expected (Poisson) batch size.
    lr : float, default 0.005
        Adam's learning rate (betas 0.5, 0.999, as the reference).
    predict_noise : bool, default True
        Predict the noise (the reference's default) or the denoised row.
    max_grad_norm : float, default 1.0
        DP-SGD's per-record clipping norm.
    count_share : float, default 0.02
        Share of the model's budget for the DP record count that sets the sampling rate.
    device : {"auto", "cpu", "cuda"}, default "auto"
    progress : bool or None, default None
        A progress bar over the training steps (None: on a terminal).
    sample_precision : {"float32", "bfloat16"}, default "float32"
        Precision of the network's passes in :meth:`sample` (training is float32 either way): bf16 is
        faster where the CPU has bf16 instructions, slower where not (:class:`~.torch_features.SamplingNet`).

    Examples
    --------
    >>> sz.make("tablediffusion", epsilon=1.0, schema=schema).fit(df).sample(1000)  # doctest: +SKIP
    """

    paper = _PAPER
    _tags = {"fits": "records", "input": "features", "spends_budget": True}
    _parameter_constraints = {
        "steps": [Interval(Integral, 1, None)], "hidden": [Sequence(Interval(Integral, 1, None), min_length=1)],
        "epochs": [Interval(Integral, 1, None)], "batch_size": [Interval(Integral, 1, MAX_BATCH)],
        "lr": [Interval(Real, 0, None, closed="neither")], "predict_noise": [Boolean()],
        "max_grad_norm": [Interval(Real, 0, None, closed="neither")],
        "count_share": [Interval(Real, 0, 1, closed="neither")], "device": [Options("auto", "cpu", "cuda")],
        "progress": [None, Boolean()], "sample_precision": [Options(*SAMPLE_PRECISIONS)]}
    _load_limits = {"steps": 10_000}  # sample() runs the reverse chain this many steps
    _test_params = {"steps": 3, "hidden": (16, 16), "epochs": 2, "batch_size": 200}

    def __init__(self, steps: int = 5, hidden=(128, 128), epochs: int = 5, batch_size: int = 1024, lr: float = 0.005,
                 predict_noise: bool = True, max_grad_norm: float = 1.0, count_share: float = 0.02,
                 device: str = "auto", progress: bool | None = None, sample_precision: str = "float32"):
        self.steps = steps
        self.hidden = hidden
        self.epochs = epochs
        self.batch_size = batch_size
        self.lr = lr
        self.predict_noise = predict_noise
        self.max_grad_norm = max_grad_norm
        self.count_share = count_share
        self.device = device
        self.progress = progress
        self.sample_precision = sample_precision

    @classmethod
    def hyperparameter_space(cls) -> dict:
        # SynMeter's TableDiffusion space (its tuner also draws the widths)
        return {"batch_size": ("cat", [128, 256, 512, 1024]), "steps": ("cat", [3, 5, 10, 15, 20]),
                "predict_noise": ("cat", [True, False]), "epochs": ("cat", [5, 10, 15, 20]),
                "lr": ("log", 1e-4, 1e-2)}

    def _saved_params(self) -> dict:
        return saved_sampling_params(self.get_params())

    def _build(self, table: FeatureTable):
        return _network(torch_module(), table.dim, list(self.hidden))

    def _loss(self, net, lay: _Layout, x0, noise, scale):
        """Per-record loss (B,) of rows ``x0`` (B, dim) noised at every step: ``noise`` (B, T, dim) is
        standard normal, ``scale`` (T,) the steps' ``sqrt(beta_t)``."""
        torch = torch_module()
        eps = noise * scale[None, :, None]
        out = net(x0[:, None, :] + eps)                                          # (B, T, dim)
        if self.predict_noise:
            return ((out - eps) ** 2).mean(dim=(1, 2))
        den = lay.denoised(out)
        loss = x0.new_zeros(x0.shape[0], out.shape[1])
        if lay.numeric.numel():
            loss = loss + ((den[..., lay.numeric] - x0[:, None, lay.numeric]) ** 2).mean(-1)
        if lay.n_blocks:  # KLDivLoss(log p, one-hot) of every block, over the total number of categories
            logp = torch.log(den[..., lay.idx].clamp_min(1e-30))
            target = x0[:, None, :][..., lay.idx] * lay.mask
            loss = loss - (target * logp).sum(dim=(-1, -2)) / lay.n_categories
        return loss.mean(1)

    def fit_records(self, data: FeatureData, budget: Budget, rng: np.random.Generator) -> "TableDiffusion":
        """Train the denoiser on the feature rows, by DP-SGD charged to ``budget`` when private."""
        torch, dev, gen, net, _ = self._start(data, rng)
        lay = _Layout(torch, data.table, dev)
        x_all = lay.to_state(torch.as_tensor(data.x, device=dev))
        scale = torch.as_tensor(np.sqrt(noise_schedule(int(self.steps))), dtype=torch.float32, device=dev)
        n_hat, n_steps, sgd = dpsgd_run(self, data, budget, "tablediffusion")
        wrapped = sgd.wrap(net)
        params = list(net.parameters())
        opt = torch.optim.Adam(params, lr=float(self.lr), betas=(0.5, 0.999))
        gen, rng = sgd.private_draws(torch, gen, rng)
        for idx in progress_bar(sgd.batches(data.n, rng), total=n_steps, desc="tablediffusion",
                                enabled=self.progress):
            loss = None
            if len(idx):
                x0 = x_all[torch.as_tensor(idx, dtype=torch.long, device=dev)]
                noise = torch.randn(len(idx), int(self.steps), data.table.dim, generator=gen).to(dev)
                loss = self._loss(wrapped, lay, x0, noise, scale)
            sgd.backward(wrapped, params, loss)
            opt.step()
        self._set_fitted(data.table, net, n_hat)
        return self

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` feature rows: T reverse steps from standard normal noise (16,384 rows at a time)."""
        self._require_fit()
        torch = torch_module()
        dev = resolve_device(self.device, self.name, sampling=True)
        lay = _Layout(torch, self.domain_, dev)
        scale = np.sqrt(noise_schedule(int(self.steps)))
        net = self._net
        # the residual network as fused products (LayerNorm applied, inputs never concatenated)
        fast = SamplingNet([(r.fc, r.norm, "residual") for r in net[:-1]] + [(net[-1], None, "linear")], 0,
                           self.domain_.dim, device=dev, dtype=sample_precision_of(self))

        def decode(m, gen):
            z = torch.randn(m, self.domain_.dim, generator=gen).to(dev)
            for t in reversed(range(int(self.steps))):
                out = fast(z)
                z = z - float(scale[t]) * out if self.predict_noise else lay.denoised(out)
            return lay.to_features(z)

        return sample_rows(self.domain_, self._check_n(n), rng, decode, finished=True)

    def _sample_work(self) -> tuple[float, str]:
        """Every reverse step is one pass of the residual denoiser per record (each layer reads the input and
        every earlier layer's output).  Unfitted: with no input columns (a lower bound)."""
        table = getattr(self, "domain_", None)
        dim = int(table.dim) if table is not None else 0
        weights, width = 0, dim
        for h in self.hidden:
            weights, width = weights + width * int(h), width + int(h)
        weights += width * dim
        steps = int(self.steps)
        return steps * (weights + 10.0 * dim), f"steps={steps} x a denoiser of {weights:.2g} weights"

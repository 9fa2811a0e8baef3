"""CTGAN (Xu, Skoularidou, Cuesta-Infante, Veeramachaneni, "Modeling Tabular Data using Conditional
GAN", NeurIPS 2019) and DP-CTGAN.

Non-private (the paper): a residual generator (batch norm, ReLU) maps noise and a conditional
vector to the feature layout (tanh scalars, Gumbel-softmax one-hot blocks at temperature 0.2); a
PacGAN critic (``pac`` rows judged together, LeakyReLU 0.2, dropout 0.5) is trained as a WGAN with
gradient penalty 10; *training-by-sampling* picks a categorical column uniformly and one of its
categories with probability proportional to the log of its frequency, conditions the generator on
it, draws the real batch among the rows holding it, and adds the cross-entropy between the
generated block and the condition to the generator's loss.

DP-CTGAN, designed so that the accountant's assumptions hold (the paper's sampler and penalty do
not: training-by-sampling chooses real rows by their values, which is not Poisson sampling, and the
gradient penalty mixes records and needs a second derivative per record):

* the critic's real batch is Poisson-sampled (:class:`~synthzoo.core.privacy.dpsgd.DPSGD`), and each
  real row is conditioned on a categorical column drawn uniformly and *its own* category there, so a
  row of the batch depends on one record only;
* the critic scores single rows (``pac = 1``) with the non-saturating GAN loss (binary cross-entropy,
  as smartnoise's DP-CTGAN), no gradient penalty: every row's loss is a function of one record (or of
  none: the generated rows), so per-row clipping -- Opacus ghost clipping -- bounds a record's
  influence by the clipping norm, and the Gaussian noise covers it;
* generated rows for the critic are conditioned on categories drawn from the *noisy* one-way
  marginals (discrete Gaussian counts, charged), in proportion to frequency, which is the law of
  the real rows' conditions; the generator's own steps draw theirs the same way, as sampling does,
  and read no record (post-processing of the private critic).  They used the paper's log-frequency
  rule: a critic that never saw log-frequency conditions and a pull averaged over them (rare
  conditions' rows already hold the rare categories, so the pull pushed the other rows to the
  majority) made the release over-draw every majority (adult at epsilon 1: 95.5 % ``United-States``
  for 90.6 %; with frequency-drawn conditions 91.0 %, 1-way TVD .028 -> .017, 2-way .099 -> .091);
* the sampling rate comes from a charged DP record count.

**The marginal start** (ours, not the paper's; private runs, ``marginal_share`` > 0).  The preset's
20 epochs on a table of a few thousand rows are about a hundred critic steps, and the generator,
which learns only from the critic and its conditional loss, stayed near its initialisation: on hmeq
at epsilon 1 it drew ``BAD`` 56/44 where the table holds 80/20, and numbers fell in the wrong
modes (1-way TVD .38).  So the record count, the categories' and the mode indicators' one-way
marginals and the flags' rates are released together
(:func:`~.torch_features.release_marginal_targets`, ``count_share + marginal_share`` of the budget,
before the critic's DP-SGD is calibrated on what is left); the generator takes ``warmup_steps`` on
its conditional loss and the pull towards them and towards the encoding's own within-mode law
(:class:`~.torch_features.MarginalPull`, :class:`~.torch_features.ModeMoments`) before the
first critic step, and keeps the pull, weighted ``marginal_weight``, beside the critic's score.  Both
are post-processing of the release.  PATE-GAN's generator has the same start.

Defaults are the paper's (noise 128, generator and critic 256-256, Adam 2e-4 with betas (0.5,
0.9) and weight decay 1e-6, batches of 500, 300 epochs, pac 10); ``epochs`` is what presets scale.
"""

from __future__ import annotations

import numpy as np

from ..core.base import Model, register
from ..core.errors import ConfigError
from ..core.features import FeatureData, FeatureTable
from ..core.params import MAX_BATCH, Boolean, Integral, Interval, Options, Real, Sequence
from ..core.privacy.dpsgd import DPSGD, batch_for, schedule
from ..core.privacy.ledger import Budget
from ..core.progress import progress_bar
from ..core.statecheck import NUMBER, TENSOR
from .torch_features import (SAMPLE_PRECISIONS, Conditions, Head, OnePassGenerator, build_for_saved, load_json_state,
                             release_marginal_targets, resolve_device, state_dict_to_json, torch_module)

_PAPER = ("Xu, Skoularidou, Cuesta-Infante, Veeramachaneni, Modeling Tabular Data using Conditional GAN "
          "(NeurIPS 2019): CTGAN")


def _networks(torch, dim: int, cond_dim: int, emb: int, gen_dims: list, dis_dims: list, pac: int):
    class Residual(torch.nn.Module):
        def __init__(self, i, o):
            super().__init__()
            self.fc, self.bn = torch.nn.Linear(i, o), torch.nn.BatchNorm1d(o)

        def forward(self, x):
            return torch.cat([torch.relu(self.bn(self.fc(x))), x], dim=1)

    class Generator(torch.nn.Module):
        def __init__(self):
            super().__init__()
            layers, d = [], emb + cond_dim
            for h in gen_dims:
                layers.append(Residual(d, h))
                d += h
            self.body = torch.nn.Sequential(*layers)
            self.out = torch.nn.Linear(d, dim)

        def forward(self, z):
            return self.out(self.body(z))

    class Critic(torch.nn.Module):
        def __init__(self):
            super().__init__()
            layers, d = [], (dim + cond_dim) * pac
            for h in dis_dims:
                layers += [torch.nn.Linear(d, h), torch.nn.LeakyReLU(0.2), torch.nn.Dropout(0.5)]
                d = h
            self.body = torch.nn.Sequential(*layers, torch.nn.Linear(d, 1))

        def forward(self, x):
            return self.body(x.reshape(-1, (dim + cond_dim) * pac)).squeeze(1)

    return Generator(), Critic()


@register("model", "ctgan")
class CTGAN(OnePassGenerator, Model):
    """CTGAN and DP-CTGAN (Xu et al., NeurIPS 2019): a conditional GAN on continuous features; the DP
    variant trains its critic by DP-SGD (see the module docstring for the design).

    Parameters
    ----------
    embedding_dim : int, default 128
        Noise size.
    generator_dim, discriminator_dim : tuple of int, default (256, 256)
    epochs : int, default 300
        Passes over the (estimated) records: ``ceil(epochs * n / batch_size)`` critic steps.
    batch_size : int, default 500
    generator_lr, discriminator_lr : float, default 2e-4
    weight_decay : float, default 1e-6
    pac : int, default 10
        PacGAN group size (non-private runs; the DP critic scores single rows).
    discriminator_steps : int, default 1
        Critic steps per generator step.
    max_grad_norm : float, default 1.0
        DP-SGD's per-row clipping norm.
    count_share : float, default 0.05
        Share of the model's budget for the DP record count and the categorical one-way marginals.
    marginal_share : float, default 0.05
        Private runs: a further share for the marginal start (module docstring), released with the
        record count and the categories' marginals: the mode indicators' one-way marginals and the
        missing flags' rates.  0: the generator learns from its critic and
        its conditional loss alone (DP-CTGAN as before).  Non-private runs take the paper's generator.
    warmup_steps : int, default 200
        Generator steps on the conditional loss and the marginal pull alone before the first critic
        step (post-processing; with ``marginal_share`` > 0 in a private run).
    marginal_weight : float, default 1.0
        Weight of the marginal pull in the generator's adversarial steps (0: the warm start only).
    device : {"auto", "cpu", "cuda"}, default "auto"
    progress : bool or None, default None
    sample_precision : {"float32", "bfloat16"}, default "float32"
        Precision of the network's passes in :meth:`sample` (training is float32 either way): bf16 is
        faster where the CPU has bf16 instructions, slower where not (:class:`~.torch_features.SamplingNet`).

    Examples
    --------
    >>> sz.make("ctgan", epsilon=None, schema=schema).fit(df).sample(1000)    # doctest: +SKIP
    >>> sz.make("dp-ctgan", epsilon=1.0, schema=schema).fit(df)                # doctest: +SKIP
    """

    paper = _PAPER
    _tags = {"fits": "records", "input": "features", "spends_budget": True}
    _parameter_constraints = {
        "embedding_dim": [Interval(Integral, 1, None)],
        "generator_dim": [Sequence(Interval(Integral, 1, None), min_length=1)],
        "discriminator_dim": [Sequence(Interval(Integral, 1, None), min_length=1)],
        "epochs": [Interval(Integral, 1, None)], "batch_size": [Interval(Integral, 2, MAX_BATCH)],
        "generator_lr": [Interval(Real, 0, None, closed="neither")],
        "discriminator_lr": [Interval(Real, 0, None, closed="neither")],
        "weight_decay": [Interval(Real, 0, None)], "pac": [Interval(Integral, 1, None)],
        "discriminator_steps": [Interval(Integral, 1, None)],
        "max_grad_norm": [Interval(Real, 0, None, closed="neither")],
        "count_share": [Interval(Real, 0, 1, closed="neither")],
        "marginal_share": [Interval(Real, 0, 1, closed="left")], "warmup_steps": [Interval(Integral, 0, None)],
        "marginal_weight": [Interval(Real, 0, None)], "device": [Options("auto", "cpu", "cuda")],
        "progress": [None, Boolean()], "sample_precision": [Options(*SAMPLE_PRECISIONS)]}
    _test_params = {"embedding_dim": 8, "generator_dim": (16,), "discriminator_dim": (16,), "epochs": 2,
                    "batch_size": 100, "pac": 2, "warmup_steps": 2}
    # files written before the marginal start: their generators learnt from the critic alone
    _params_added = {"marginal_share": 0.0, "warmup_steps": 0, "marginal_weight": 0.0}

    def __init__(self, embedding_dim: int = 128, generator_dim=(256, 256), discriminator_dim=(256, 256),
                 epochs: int = 300, batch_size: int = 500, generator_lr: float = 2e-4, discriminator_lr: float = 2e-4,
                 weight_decay: float = 1e-6, pac: int = 10, discriminator_steps: int = 1,
                 max_grad_norm: float = 1.0, count_share: float = 0.05, marginal_share: float = 0.05,
                 warmup_steps: int = 200, marginal_weight: float = 1.0, device: str = "auto",
                 progress: bool | None = None, sample_precision: str = "float32"):
        self.embedding_dim = embedding_dim
        self.generator_dim = generator_dim
        self.discriminator_dim = discriminator_dim
        self.epochs = epochs
        self.batch_size = batch_size
        self.generator_lr = generator_lr
        self.discriminator_lr = discriminator_lr
        self.weight_decay = weight_decay
        self.pac = pac
        self.discriminator_steps = discriminator_steps
        self.max_grad_norm = max_grad_norm
        self.count_share = count_share
        self.marginal_share = marginal_share
        self.warmup_steps = warmup_steps
        self.marginal_weight = marginal_weight
        self.device = device
        self.progress = progress
        self.sample_precision = sample_precision

    def _check_related_params(self) -> None:
        if self.batch_size % self.pac:
            self._bad("batch_size", f"must be a multiple of pac={self.pac} (PacGAN groups whole batches)")
        if self.count_share + self.marginal_share >= 1:
            self._bad("marginal_share", f"with count_share={self.count_share} must leave some of the budget for "
                                        "the critic's DP-SGD (their sum below 1)")

    @classmethod
    def hyperparameter_space(cls) -> dict:
        # SynMeter's CTGAN space (Du & Li, "Towards Principled Assessment of Tabular Data Synthesis
        # Algorithms", 2024; their synthesizer/ctgan.py): epochs 100-500, batches 500-5000 and both
        # learning rates 1e-5-1e-3 on a log scale; the widths stay fixed there (and here)
        return {"epochs": ("int", 100, 500), "batch_size": ("cat", [500, 1000, 2000, 5000]),
                "generator_lr": ("log", 1e-5, 1e-3), "discriminator_lr": ("log", 1e-5, 1e-3)}

    def _build(self, table: FeatureTable, cond_dim: int, private: bool):
        torch = torch_module()
        return _networks(torch, table.dim, cond_dim, int(self.embedding_dim), list(self.generator_dim),
                         list(self.discriminator_dim), 1 if private else int(self.pac))

    # ------------------------------------------------------------------ fit
    def fit_records(self, data: FeatureData, budget: Budget, rng: np.random.Generator) -> "CTGAN":
        """Train on the feature rows; the critic by DP-SGD charged to ``budget`` when private."""
        if not isinstance(data, FeatureData):
            raise ConfigError(f"ctgan fits continuous features (FeatureData), got {type(data).__name__}")
        torch = torch_module()
        dev = resolve_device(self.device, "ctgan")
        torch.manual_seed(int(rng.integers(2 ** 62)))  # initialisation and Gumbel draws: the user's seed
        gen_t = torch.Generator().manual_seed(int(rng.integers(2 ** 62)))
        table, private = data.table, budget.private
        head = Head(table, dev)
        pull = None
        if private and self.marginal_share > 0:  # one release; the generator is conditioned on categories only
            n_hat, every, pull = release_marginal_targets(data, head, budget,
                                                          float(self.count_share) + float(self.marginal_share), "ctgan")
            cond = every.categorical_only(table, head)
        else:
            n_hat, cond = Conditions.from_data(data, head, budget, float(self.count_share), "ctgan")
        self.total_sigma_ = cond.n_sigma
        G, D = (m.to(dev) for m in self._build(table, cond.dim, private))
        opt_g = torch.optim.Adam(G.parameters(), lr=float(self.generator_lr), betas=(0.5, 0.9),
                                 weight_decay=float(self.weight_decay))
        opt_d = torch.optim.Adam(D.parameters(), lr=float(self.discriminator_lr), betas=(0.5, 0.9),
                                 weight_decay=float(self.weight_decay))
        B = batch_for(self.batch_size, n_hat, self.pac)  # its generated rows too: never more than the table's
        steps = schedule(self.epochs, n_hat, B)[0]
        sgd = DPSGD(budget, n_hat, B, steps, float(self.max_grad_norm), note="ctgan: critic")
        x_all = torch.as_tensor(data.x, device=dev)
        emb = int(self.embedding_dim)

        def generate(c):
            z = torch.randn(c.shape[0], emb, generator=gen_t).to(dev)
            return head.activate(G(torch.cat([z, c], dim=1)), tau=0.2, generator=gen_t)

        def generator_step(critic) -> None:
            """One step of the generator (reads no record: the critic, the noisy marginals, fresh noise);
            without ``critic`` the warm start's, on the conditional loss and the marginal pull alone."""
            if cond.dim:  # private: by frequency, as the critic's fake rows and sampling (module docstring)
                blk, cat, c_np = cond.draw(B, rng, log=not private)
                c = torch.as_tensor(c_np, device=dev)
            else:
                c = torch.zeros(B, 0, device=dev)
            out = G(torch.cat([torch.randn(B, emb, generator=gen_t).to(dev), c], dim=1))
            fake = head.activate(out, tau=0.2, generator=gen_t)
            loss_g = cond.loss(out, blk, cat) if cond.dim else out.new_zeros(())
            if critic is not None:
                score = critic(torch.cat([fake, c], dim=1))
                loss_g = loss_g + (torch.nn.functional.softplus(-score).mean() if private else -score.mean())
            weight = 1.0 if critic is None else float(self.marginal_weight)
            if pull is not None and weight > 0:
                loss_g = loss_g + weight * pull.loss(out, fake)
            opt_g.zero_grad(set_to_none=True)
            loss_g.backward()
            opt_g.step()

        if private:
            wrapped = sgd.wrap(D)
            d_params = list(D.parameters())
            gen_t, rng = sgd.private_draws(torch, gen_t, rng)  # real rows' conditions, dropout, the fakes
        else:
            rows_of = self._rows_by_category(data.x, cond)
        for _ in range(int(self.warmup_steps) if pull is not None else 0):
            generator_step(None)
        for t, idx in enumerate(progress_bar(sgd.batches(data.n, rng), total=steps, desc="ctgan",
                                             enabled=self.progress)):
            # ---- critic
            if private:
                blk = rng.integers(max(len(cond.blocks), 1), size=len(idx))
                real = x_all[torch.as_tensor(idx, dtype=torch.long, device=dev)]
                if cond.dim:
                    c_real = torch.as_tensor(cond.onehot(blk, cond.of_rows(data.x[idx], blk)), device=dev)
                    _, _, c_fake_np = cond.draw(B, rng, log=False)
                else:
                    c_real = torch.zeros(len(idx), 0, device=dev)
                    c_fake_np = np.zeros((B, 0), dtype=np.float32)
                c_fake = torch.as_tensor(c_fake_np, device=dev)
                with torch.no_grad():
                    fake = generate(c_fake)
                rows = torch.cat([torch.cat([real, c_real], dim=1), torch.cat([fake, c_fake], dim=1)])
                score = wrapped(rows)
                sign = torch.cat([-torch.ones(len(idx), device=dev), torch.ones(B, device=dev)])
                per_row = torch.nn.functional.softplus(sign * score)   # -log D(real), -log(1 - D(fake))
                sgd.backward(wrapped, d_params, per_row)
                opt_d.step()
            else:
                c_fake, real_rows = self._conditioned_batch(cond, rows_of, B, rng, dev, x_all)
                with torch.no_grad():
                    fake = generate(c_fake)
                real = torch.cat([real_rows, c_fake], dim=1)
                fake_in = torch.cat([fake, c_fake], dim=1)
                loss_d = D(fake_in).mean() - D(real).mean() + self._penalty(torch, D, real, fake_in)
                opt_d.zero_grad(set_to_none=True)
                loss_d.backward()
                opt_d.step()
            if (t + 1) % int(self.discriminator_steps):
                continue
            # ---- generator
            if private:
                wrapped.disable_hooks()  # the generator's step needs no per-row norms of the critic
            generator_step(D)
            if private:
                wrapped.enable_hooks()
        self._set_fitted(table, G, cond, n_hat)
        return self

    @staticmethod
    def _rows_by_category(x: np.ndarray, cond: Conditions) -> list[list[np.ndarray]]:
        return [[np.flatnonzero(x[:, s + k] > 0.5) for k in range(w)] for _, s, w in cond.blocks]

    @staticmethod
    def _conditioned_batch(cond, rows_of, B, rng, dev, x_all):
        """Training-by-sampling (non-private): conditions by log-frequency, real rows that hold them."""
        torch = torch_module()
        if not cond.dim:
            idx = rng.integers(x_all.shape[0], size=B)
            return torch.zeros(B, 0, device=dev), x_all[torch.as_tensor(idx, device=dev)]
        blk, cat, c_np = cond.draw(B, rng, log=True)
        idx = np.empty(B, dtype=np.int64)
        for i, (b, k) in enumerate(zip(blk, cat)):
            pool = rows_of[b][k]
            idx[i] = pool[rng.integers(pool.size)] if pool.size else rng.integers(x_all.shape[0])
        return torch.as_tensor(c_np, device=dev), x_all[torch.as_tensor(idx, device=dev)]

    def _penalty(self, torch, D, real, fake):
        """WGAN-GP's gradient penalty (weight 10) on PacGAN groups of interpolates."""
        pac = int(self.pac)
        alpha = torch.rand(real.shape[0] // pac, 1, 1, device=real.device).repeat(1, pac, real.shape[1])
        alpha = alpha.reshape(-1, real.shape[1])
        mix = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
        grad = torch.autograd.grad(D(mix).sum(), mix, create_graph=True)[0]
        return 10.0 * ((grad.reshape(-1, pac * real.shape[1]).norm(2, dim=1) - 1) ** 2).mean()

    def _set_fitted(self, table: FeatureTable, G, cond: Conditions, total: float) -> None:
        self._fitted(table)
        self._gen = G.cpu().eval()
        self._cond = cond
        self.total_ = float(total)
        self._sampler = None  # the fused forward pass, made on the first sample

    # ------------------------------------------------------------------ sample
    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` feature rows from the generator, conditioned on categories drawn by frequency from the
        (noisy) one-way marginals, one category per block drawn from the generated softmax.  The
        generator runs as :class:`~.torch_features.SamplingNet` (batch norm folded, the
        condition gathered): the same network, fewer operations."""
        self._require_fit()
        G = self._gen
        return self._sample_generator(
            n, rng, lambda: [(r.fc, r.bn, "residual") for r in G.body] + [(G.out, None, "linear")],
            int(self.embedding_dim))

    # ------------------------------------------------------------------ state
    _state_spec = {"total": NUMBER, "frequencies": [("nonempty", [NUMBER])], "weights": ("map", TENSOR)}

    def dpsgd_runs(self) -> list[tuple[int, int]]:
        return [(self.epochs, self.batch_size)]  # the critic's

    def _get_state(self) -> dict:
        """The generator's weights, the (noisy) category frequencies and the DP count."""
        return {"total": self.total_, "frequencies": [f.tolist() for f in self._cond.freq],
                "weights": state_dict_to_json(self._gen)}

    def _set_state(self, state: dict, table) -> None:
        cond = Conditions.from_state(table, state["frequencies"], "ctgan")
        # the generator only (the critic is not saved, and its widths must not allocate anything)
        G = build_for_saved(lambda: _networks(torch_module(), table.dim, cond.dim, int(self.embedding_dim),
                                              list(self.generator_dim), [1], 1)[0], state["weights"], "ctgan")
        load_json_state(G, state["weights"], "ctgan")
        self._set_fitted(table, G, cond, float(state["total"]))

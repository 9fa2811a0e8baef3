"""DP-MERF: a generator trained to match a differentially private random-feature mean embedding.

Harder, Adamczewski, Park, "DP-MERF: Differentially Private Mean Embeddings with Random Features
for Practical Privacy-preserving Data Generation" (AISTATS 2021).  The data are touched once:
the mean embedding ``mu = (1/n) sum_i phi(x_i)`` of random Fourier features of the records is
released with Gaussian noise (see :mod:`synthzoo.models.merf_features` for the features, the
sensitivity and how ``n`` is released), and a generator ``G`` is then trained, as
post-processing, to minimise ``||mu_noisy - mean_b phi(G(z_b))||^2``.

How this follows the reference code (``ParkLabML/DP-MERF``, ``code_tab/single_generator_priv_all.py``)
and where it departs:

* **Features.**  The reference embeds numerical columns with Gaussian random features and appends
  the categorical columns linearly (one-hot / sqrt(#columns)).  Here every column is already a
  code over a finite domain (numerical ones binned by a preprocessor), so the Gaussian kernel is
  applied to the concatenated one-hot vector of all attributes; it is a product kernel over
  attributes and so carries the interactions the reference's linear categorical part misses.
  The kernel length scale is ``length_scale * sqrt(d)`` (one-hot units): ``sqrt(d)`` is the
  distance between two records that disagree on half of their ``d`` attributes, a
  data-independent stand-in for the reference's median heuristic, which reads (a few discarded)
  private records.
* **Labels.**  ``label=None`` (default) embeds all attributes unconditionally: a public schema's
  target is not known to the model, and the label is then one more attribute of the product
  kernel.  ``label="<column>"`` gives the paper's class-conditional embedding
  ``sum_i e_{y_i} phi(x_{i,-y})`` and a generator conditioned on a one-hot label drawn from the
  noisy class shares.  The loss is the MMD of the joint (the per-class embeddings weighted by the
  class shares); the reference divides each class's embedding by its share (a class-balanced
  MMD), which amplifies the noise on rare classes.
* **Generator.**  The reference's MLP (ReLU, batch norm, width ``4 * #columns``,
  ``2 * #columns``; noise of length 10; Adam, lr 1e-2) ends in sigmoids on binary categorical
  columns, rounded at sampling.  Here it ends in one softmax per attribute and a record takes
  one categorical draw from each.  What enters ``phi`` during training is set by ``output``:
  ``"gumbel"`` (default) a hard one-hot draw per attribute, straight-through Gumbel-softmax
  gradients -- the features trained are those of records distributed as :meth:`DPMERF.sample`
  draws them; ``"expected"`` the exact expected features of those draws (given ``z`` the
  attributes are independent, so ``E[exp(i w.x) | z] = prod_a sum_k p_ak exp(i w_ak)``): exact
  gradients, but about three times the cost per step on CPU; ``"softmax"`` the relaxed one-hot
  vector itself (as the reference feeds its sigmoids): its features are not those of any record,
  and it fitted adult far worse.  No batch norm: in training mode it makes a record depend on the
  other noise vectors in its batch, and plain ReLU layers trained stably at lr 1e-2.
* **Length of training and defaults.**  The reference takes one Adam step per "epoch" on a
  generated batch of ``0.1 n`` records, 200 epochs by default and up to 8000 in its adult grid,
  with ``n_features = 2000`` by default (grid 500 .. 50000) and a constant lr.  The defaults here
  (1000 steps of 500 generated records, lr 1e-2 decaying to 5e-4, length scale ``0.5 sqrt(d)``,
  2000 features) come from runs on adult at epsilon 1 (2-way TVD about 0.066, 40 s on one CPU
  thread); ``batch`` is a record count, because a fraction would read ``n``.

Torch is imported lazily.  All randomness comes from the caller's numpy generator (frequencies,
noise, and a seeded ``torch.Generator`` for the training and sampling noise), so the same seed
gives the same model and records.  The saved state holds the generator's weights and the noisy
class shares: functions of the DP release and public randomness only.
"""

from __future__ import annotations

import math

import numpy as np

from ..core.base import Model, register
from ..core.domain import Domain, EncodedData
from ..core.errors import ConfigError
from ..core.params import MAX_BATCH, Integral, Interval, Options, Real, Text
from ..core.sampling import allocate
from ..core.statecheck import NUMBER, TENSOR, TEXT
from .torch_mlp import MLP_CONSTRAINTS, TorchMLP, torch_module
from .merf_features import RandomFourierFeatures, noisy_mean_embedding

_PAPER = ("Harder, Adamczewski, Park, DP-MERF: Differentially Private Mean Embeddings with Random Features "
          "for Practical Privacy-preserving Data Generation (AISTATS 2021)")
_OUTPUTS = ("expected", "softmax", "gumbel")


def _torch():
    return torch_module("dpmerf")


@register("model", "dpmerf")
class DPMERF(TorchMLP, Model):
    """DP-MERF (Harder, Adamczewski, Park, AISTATS 2021): a generator matched to a noisy random-feature
    mean embedding of the records.

    Parameters
    ----------
    n_features : int, default 2000
        ``D``, the number of random features (even; ``D/2`` frequencies); the reference's default.
    length_scale : float, default 0.5
        Gaussian kernel length scale in units of ``sqrt(d)`` (``d`` embedded attributes).
    hidden : int or tuple of int, default (256, 256)
        Widths of the generator's hidden ReLU layers.
    iters : int, default 1000
        Adam steps (each on a fresh generated batch; the reference's "epochs").
    lr : float, default 1e-2
        Adam learning rate (the reference's).
    lr_decay : float, default 0.05
        The learning rate decays exponentially to ``lr * lr_decay`` at the last step (1: constant).
    batch : int, default 500
        Generated records per step.
    noise_dim : int, default 10
        Length of the generator's noise input (the reference's).
    count_share : float, default 0.02
        Share of the budget for the record count (class counts with ``label``); the rest goes to
        the sum embedding.
    label : str or None, default None
        ``None`` (unconditional embedding) or the name of a column to condition on.
    output : {"expected", "softmax", "gumbel"}, default "gumbel"
        Exact expected features of the per-attribute categorical draws, a relaxed one-hot, or a
        straight-through Gumbel-softmax.
    temperature : float, default 1.0
        Gumbel-softmax temperature (``output="gumbel"`` only).
    device : {"auto", "cpu", "cuda"}, default "auto"
    draws_per_z : int, default 2
        Records :meth:`sample` draws from each noise vector's product distribution (sampling only).
        Each record is an exact draw from the generator's mixture; records sharing a noise vector
        are independent given it.  Sharing halves the network's work per record, which dominates
        sampling; 1 gives every record its own noise vector.

    Examples
    --------
    >>> sz.Synthesizer(preprocess=["privtree"], model=DPMERF(iters=500), epsilon=1.0)  # doctest: +SKIP
    """

    paper = _PAPER
    _tags = {"fits": "records", "spends_budget": True}
    _test_params = {"n_features": 200, "hidden": (32,), "iters": 40, "batch": 200}
    _load_limits = {"draws_per_z": 1024}  # sample() draws this many records per noise vector at once
    _parameter_constraints = {
        **MLP_CONSTRAINTS, "n_features": [Interval(Integral, 2, None)],
        "length_scale": [Interval(Real, 0, None, closed="neither")], "iters": [Interval(Integral, 0, None)],
        "lr": [Interval(Real, 0, None, closed="neither")], "lr_decay": [Interval(Real, 0, 1, closed="right")],
        "batch": [Interval(Integral, 1, MAX_BATCH)], "noise_dim": [Interval(Integral, 1, None)],
        "count_share": [Interval(Real, 0, 1, closed="neither")], "label": [None, Text()],
        "output": [Options(*_OUTPUTS)], "temperature": [Interval(Real, 0, None, closed="neither")],
        "draws_per_z": [Interval(Integral, 1, None)]}

    def __init__(self, n_features: int = 2000, length_scale: float = 0.5, hidden=(256, 256), iters: int = 1000,
                 lr: float = 1e-2, lr_decay: float = 0.05, batch: int = 500, noise_dim: int = 10,
                 count_share: float = 0.02, label: str | None = None, output: str = "gumbel",
                 temperature: float = 1.0, device: str = "auto", draws_per_z: int = 2):
        self.n_features = n_features
        self.length_scale = length_scale
        self.hidden = hidden
        self.iters = iters
        self.lr = lr
        self.lr_decay = lr_decay
        self.batch = batch
        self.noise_dim = noise_dim
        self.count_share = count_share
        self.label = label
        self.output = output
        self.temperature = temperature
        self.device = device
        self.draws_per_z = draws_per_z

    @classmethod
    def hyperparameter_space(cls) -> dict:
        return {"n_features": ("int", 500, 10000), "length_scale": ("log", 0.25, 4.0),
                "iters": ("int", 200, 4000), "lr": ("log", 1e-3, 3e-2), "lr_decay": ("log", 0.01, 1.0),
                "batch": ("int", 200, 4000),
                "noise_dim": ("int", 5, 64), "count_share": ("log", 0.005, 0.2),
                "output": ("cat", list(_OUTPUTS))}

    def _check_related_params(self) -> None:
        if self.n_features % 2:
            self._bad("n_features", "must be even (D/2 frequencies, a cosine and a sine each)")

    def check_schema(self, schema, private: bool) -> None:
        # at construction (or before anything is charged): at fit it came after the preprocessors' charges
        if self.label is not None and self.label not in schema:
            self._bad("label", f"is not a column of the schema {schema.names}")
        if self.label is not None and len(schema) == 1:
            self._bad("label", "leaves no column to embed besides the label")

    # -------------------------------------------------------------------- layout
    def _check_label(self, domain: Domain) -> None:
        """ConfigError unless ``label`` (when given) is a column of ``domain``: at fit, and for a model file's
        parameters (a label the file's domain lacks was a bare KeyError)."""
        if self.label is not None and self.label not in domain:
            raise ConfigError(f"DPMERF parameter label={self.label!r}: not a column of the domain "
                              f"{list(domain.attrs)}")

    def _feature_attrs(self, domain: Domain) -> tuple:
        return tuple(a for a in domain.attrs if a != self.label)

    def _layers(self) -> list[int]:
        n_cls = self.domain_[self.label] if self.label is not None else 0
        sizes = [self.domain_[a] for a in self.attrs_]
        return [int(self.noise_dim) + n_cls, *self._hidden(), len(sizes) * max(sizes)]

    # ------------------------------------------------------------------- network
    def _logits(self, ws, inp, pad, real=None):
        """Padded logits ``(batch, d, K)``, ``-inf`` on padding."""
        return self._padded_logits(ws, inp, pad, real)

    def _sizes(self) -> list[int]:
        return [self.domain_[a] for a in self.attrs_]

    def _inputs(self, z, labels, dev):
        """Generator input: noise, and the one-hot label when conditioning."""
        torch = _torch()
        if self.label is None:
            return z.to(dev)
        onehot = torch.zeros(z.shape[0], self.domain_[self.label])
        onehot[torch.arange(z.shape[0]), torch.as_tensor(labels, dtype=torch.long)] = 1.0
        return torch.cat([z, onehot], dim=1).to(dev)

    # ------------------------------------------------------------------------ fit
    def fit_records(self, data: EncodedData, budget, rng: np.random.Generator) -> "DPMERF":
        """Release the noisy mean embedding (charging all of ``budget``), then train the generator."""
        if not isinstance(data, EncodedData):
            raise ConfigError(f"DPMERF.fit_records needs EncodedData, got {type(data).__name__}")
        domain = data.domain
        self._check_label(domain)
        attrs = self._feature_attrs(domain)
        if not attrs:
            raise ConfigError("DPMERF: the domain has no attribute to embed besides the label")
        torch = _torch()
        dev = self._device()

        feats = RandomFourierFeatures(domain, int(self.n_features), float(self.length_scale) * math.sqrt(len(attrs)),
                                      rng, attrs=attrs)
        emb = noisy_mean_embedding(data, feats, budget, count_share=float(self.count_share),
                                   label=self.label, module="dpmerf")
        self.sigma_sum_, self.sigma_count_ = emb.sigma_sum, emb.sigma_count
        self.domain_, self.attrs_ = domain, attrs
        gen = torch.Generator().manual_seed(int(rng.integers(0, 2 ** 62)))
        ws = [w.to(dev).requires_grad_(True) for w in self._init_weights(gen)]

        F = feats.n_freq
        K = int(max(feats.sizes))
        d = len(attrs)
        Wp = np.zeros((d, K, F))
        for j, blk in enumerate(feats.blocks()):
            Wp[j, :blk.shape[0]] = blk
        f32 = dict(dtype=torch.float32, device=dev)
        W_flat = torch.as_tensor(Wp.reshape(d * K, F), **f32)          # padded rows are zero, never weighted
        expW = torch.as_tensor(np.exp(1j * Wp), dtype=torch.complex64, device=dev)   # (d, K, F)
        target = torch.as_tensor(emb.mean, **f32)                        # (C, D)
        pad = self._pad_mask(self._sizes(), dev)
        real = self._real_rows(pad)  # once (see TorchMLP._padded_logits)
        B = int(self.batch)
        n_cls = target.shape[0]
        # labels in proportion to the noisy class shares (largest remainders), in class order
        labels = (np.repeat(np.arange(len(emb.weights)), allocate(emb.weights, B)) if self.label is not None
                  else np.zeros(B, dtype=np.int64))
        lab_t = torch.as_tensor(labels, dtype=torch.long, device=dev)
        scale = feats.scale
        tau = float(self.temperature)
        opt = torch.optim.Adam(ws, lr=float(self.lr))
        # exponential decay that reaches lr * lr_decay at the last step
        sched = torch.optim.lr_scheduler.ExponentialLR(
            opt, gamma=float(self.lr_decay) ** (1.0 / max(1, int(self.iters) - 1)))
        loss = None
        for _ in range(int(self.iters)):
            z = torch.randn(B, int(self.noise_dim), generator=gen)
            logits = self._logits(ws, self._inputs(z, labels, dev), pad, real)
            if self.output == "expected":
                p = torch.softmax(logits, dim=2).transpose(0, 1).to(torch.complex64)   # (d, B, K)
                factors = torch.bmm(p, expW).unbind(0)     # d x (B, F): E[exp(i w . x_a) | z], one per attribute
                prod = factors[0]
                for f in factors[1:]:                       # independent given z: the expectation factorises
                    prod = prod * f
                re, im = prod.real, prod.imag
            else:
                if self.output == "gumbel":
                    u = torch.rand(logits.shape, generator=gen).clamp_(1e-10, 1.0 - 1e-7).to(dev)
                    soft = torch.softmax((logits - torch.log(-torch.log(u))) / tau, dim=2)
                    hard = torch.zeros_like(soft).scatter_(2, soft.argmax(dim=2, keepdim=True), 1.0)
                    x = hard - soft.detach() + soft
                else:
                    x = torch.softmax(logits, dim=2)
                theta = x.reshape(B, d * K) @ W_flat
                re, im = torch.cos(theta), torch.sin(theta)
            phi = torch.cat([re, im], dim=1) * scale                           # (B, D): E[phi(x) | z]
            if n_cls == 1:
                mean = phi.mean(0, keepdim=True)
            else:
                mean = torch.zeros(n_cls, phi.shape[1], device=dev).index_add(0, lab_t, phi) / B
            loss = ((target - mean) ** 2).sum()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
        self.loss_ = float(loss.detach()) if loss is not None else float("nan")
        self._set_fitted(domain, attrs, [w.detach().cpu() for w in ws], emb.weights, emb.total)
        return self

    def _set_fitted(self, domain: Domain, attrs: tuple, weights: list, class_weights, total: float) -> None:
        torch = _torch()
        self._fitted(domain)
        self.attrs_ = tuple(attrs)
        self._weights = [w.to(torch.float32) for w in weights]
        self.class_weights_ = np.asarray(class_weights, dtype=float)
        self.total_ = float(total)

    # -------------------------------------------------------------------- sample
    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` records: fresh noise vectors (with a label from the noisy class shares when
        conditioning), each giving ``draws_per_z`` records by one categorical draw from each
        attribute's softmax."""
        self._require_fit()
        n = self._check_n(n)
        torch = _torch()
        dev = self._device(sampling=True)
        out = np.empty((n, len(self.domain_)), dtype=np.int64)
        gen = torch.Generator().manual_seed(int(rng.integers(0, 2 ** 62)))
        cols = [self.domain_.index(a) for a in self.attrs_]
        sizes = [self.domain_[a] for a in self.attrs_]
        net = self._sampling_net([w.to(dev) for w in self._weights], sizes)
        per = int(self.draws_per_z)
        step = 8192 * per
        for lo in range(0, n, step):
            hi = min(n, lo + step)
            m = hi - lo
            g = -(-m // per)  # noise vectors (and labels) of this step, each giving `per` records
            labels = None
            if self.label is not None:
                labels = rng.choice(len(self.class_weights_), size=g, p=self.class_weights_)
                out[lo:hi, self.domain_.index(self.label)] = np.repeat(labels, per)[:m]
            z = torch.randn(g, int(self.noise_dim), generator=gen)
            codes = self._draw_codes(net, self._inputs(z, labels, dev), sizes, rng.random((g * per, len(cols))), per)
            out[lo:hi, cols] = codes[:m]
        return out

    def _sample_work(self) -> tuple[float, str]:
        if getattr(self, "domain_", None) is None:
            return 0.0, "not fitted"
        return self._mlp_work([self.domain_[a] for a in self.attrs_])

    # --------------------------------------------------------------------- state
    def _saved_params(self) -> dict:
        return {**self.get_params(), "hidden": self._hidden()}

    _state_spec = {"attrs": [TEXT], "class_weights": [NUMBER], "total": NUMBER, "weights": [TENSOR]}

    def _get_state(self) -> dict:
        """The generator's weights, the noisy class shares and noisy count (functions of the DP
        release and of public randomness only; no record, no raw embedding)."""
        return {"attrs": list(self.attrs_), "class_weights": self.class_weights_.tolist(), "total": self.total_,
                "weights": self._weights_state()}

    def _set_state(self, state: dict, domain: Domain) -> None:
        attrs = tuple(state["attrs"])
        class_weights = np.asarray(state["class_weights"], dtype=float)
        total = float(state["total"])
        self._check_label(domain)
        if attrs != self._feature_attrs(domain):
            raise ConfigError("DPMERF.set_state: the saved attributes do not match the domain and label")
        n_cls = domain[self.label] if self.label is not None else 1
        if class_weights.shape != (n_cls,) or not np.all(class_weights >= 0) or not np.isclose(class_weights.sum(), 1):
            raise ConfigError("DPMERF.set_state: malformed class weights")
        self.domain_, self.attrs_ = domain, attrs  # the layer sizes depend on them
        self._set_fitted(domain, attrs, self._weights_from(state["weights"]), class_weights, total)

"""What the record models that fit continuous features share (``tvae``, ``ctgan``, ``pategan``,
``tabddpm``): the output head of a feature layout, its per-record losses, saved weights, the
opening of a DP-SGD run (:func:`dpsgd_run`) with the state of a one-network model
(:class:`OneNetwork`), and CTGAN's conditional vectors drawn from charged one-way marginals
(:class:`Conditions`, used by ``ctgan`` and ``pategan``).  A helper of those model files, not a module.

A :class:`~synthzoo.core.features.FeatureTable`'s layout says how each slice is produced: ``tanh``
scalars, ``softmax`` one-hot blocks, ``sigmoid`` flags.  Everything here is vectorised over the
layout: the softmax blocks are gathered into one padded tensor, so a head costs a few tensor
operations however many columns the table has.
"""

from __future__ import annotations

import math

import numpy as np

from ..core.errors import ConfigError
from ..core.features import NONFINITE_OUTPUT, FeatureTable
from ..core.statecheck import NUMBER, TENSOR


def torch_module():
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a declared dependency
        raise ConfigError("record models need PyTorch: pip install torch") from None
    return torch


class Head:
    """Index tensors of one layout: the tanh columns, the sigmoid columns and the softmax blocks
    (padded to the widest block, padding masked)."""

    def __init__(self, table: FeatureTable, device):
        torch = torch_module()
        segs = table.layout
        self.dim = table.dim
        self.tanh = torch.as_tensor([s.start for s in segs if s.activation == "tanh"], dtype=torch.long, device=device)
        self.sigm = torch.as_tensor([s.start for s in segs if s.activation == "sigmoid"], dtype=torch.long,
                                    device=device)
        soft = [s for s in segs if s.activation == "softmax"]
        self.n_soft = len(soft)
        self.width = max([s.width for s in soft], default=1)
        idx = np.zeros((len(soft), self.width), dtype=np.int64)
        mask = np.zeros((len(soft), self.width), dtype=bool)
        for i, s in enumerate(soft):
            idx[i, :s.width] = np.arange(s.start, s.stop)
            mask[i, :s.width] = True
        self.soft_idx = torch.as_tensor(idx, device=device)
        self.soft_mask = torch.as_tensor(mask, device=device)
        #: for each softmax block, its columns and its position in the layout (CTGAN's conditions)
        self.blocks = [(s.column, s.start, s.width) for s in soft]

    def _gather_soft(self, z):
        g = z[:, self.soft_idx]                                  # (n, blocks, width)
        return g.masked_fill(~self.soft_mask, float("-inf")) if self.n_soft else g

    def _scatter_soft(self, out, p):
        if self.n_soft:
            flat_idx = self.soft_idx[self.soft_mask]
            out[:, flat_idx] = p[:, self.soft_mask]
        return out

    def activate(self, logits, tau: float | None = None, generator=None, hard: bool = False):
        """Outputs on the layout: tanh scalars, sigmoid flags, softmax blocks (Gumbel-softmax with
        temperature ``tau`` when given, as CTGAN's generator; ``hard`` straight-through one-hot, and
        flags drawn 0/1 with the probability's gradient)."""
        torch = torch_module()
        out = torch.zeros_like(logits)
        if self.tanh.numel():
            out[:, self.tanh] = torch.tanh(logits[:, self.tanh])
        if self.sigm.numel():
            p = torch.sigmoid(logits[:, self.sigm])
            if hard:
                u = torch.rand(p.shape, generator=generator).to(p.device)
                p = (u < p).to(p.dtype) - p.detach() + p
            out[:, self.sigm] = p
        if self.n_soft:
            z = self._gather_soft(logits)
            if tau is not None:
                u = torch.rand(z.shape, generator=generator).to(z.device).clamp_(1e-10, 1 - 1e-10)
                z = (z - torch.log(-torch.log(u))) / tau
            p = torch.softmax(z, dim=2)
            if hard:
                h = torch.zeros_like(p).scatter_(2, p.argmax(dim=2, keepdim=True), 1.0)
                p = h - p.detach() + p
            out = self._scatter_soft(out, p)
        return out

    def recon_loss(self, logits, x, log_sigma):
        """TVAE's per-record reconstruction loss: Gaussian on the tanh scalars (learned ``sigma`` per
        scalar), cross-entropy on the softmax blocks, binary cross-entropy on the flags."""
        torch = torch_module()
        loss = logits.new_zeros(logits.shape[0])
        if self.tanh.numel():
            sig = torch.exp(log_sigma)
            diff = x[:, self.tanh] - torch.tanh(logits[:, self.tanh])
            loss = loss + ((diff ** 2) / (2 * sig ** 2) + log_sigma).sum(dim=1)
        if self.sigm.numel():
            loss = loss + torch.nn.functional.binary_cross_entropy_with_logits(
                logits[:, self.sigm], x[:, self.sigm], reduction="none").sum(dim=1)
        if self.n_soft:
            logp = torch.log_softmax(self._gather_soft(logits), dim=2)
            target = x[:, self.soft_idx] * self.soft_mask
            loss = loss - (target * logp.masked_fill(~self.soft_mask, 0.0)).sum(dim=(1, 2))
        return loss

    def draw(self, logits, generator, sigma=None) -> np.ndarray:
        """Feature rows drawn from a model's raw outputs on the layout (sampling): each softmax
        block's category drawn from its softmax, each flag from its sigmoid, each tanh scalar kept
        (plus Gaussian noise of ``sigma`` when given, as TVAE samples) and clipped to [-1, 1].

        The softmax is never formed (:func:`draw_categories`: the inverse CDF of one uniform per
        block), which is the softmax's law at a fraction of the work of activating and normalising
        the padded blocks.  A flag is ``u < sigmoid``.
        All draws come from the CPU torch ``generator``.  Returns float32 rows (n, dim)."""
        torch = torch_module()
        with torch.no_grad():
            x = logits.detach().to("cpu", torch.float32)
            if not all_finite(x):  # a NaN flag's draw was silently 0, a NaN scalar a missing value
                raise ConfigError(NONFINITE_OUTPUT)
            n = x.shape[0]
            out = torch.zeros(n, self.dim)
            if self.tanh.numel():
                t = self.tanh.cpu()
                v = torch.tanh(x[:, t])
                if sigma is not None:
                    s = torch.as_tensor(np.asarray(sigma, dtype=np.float32))
                    v.add_(torch.randn(v.shape, generator=generator).mul_(s))
                out[:, t] = v.clamp_(-1.0, 1.0)
            if self.sigm.numel():
                f = self.sigm.cpu()
                out[:, f] = (torch.rand(n, f.numel(), generator=generator) < torch.sigmoid(x[:, f])).float()
            if self.n_soft:
                u = torch.rand(n, self.n_soft, generator=generator)
                hot = torch.empty(n, self.n_soft, dtype=torch.long)
                for b, (_, start, width) in enumerate(self.blocks):
                    hot[:, b:b + 1] = draw_categories(x[:, start:start + width], u[:, b:b + 1]).add_(start)
                out.scatter_(1, hot, 1.0)
        return out.numpy()


def resolve_device(spec: str, who: str, sampling: bool = False):
    """``"auto"`` (CUDA when available, else the CPU), ``"cpu"`` or ``"cuda"`` as a torch device.

    ``"cuda"`` without a CUDA device is an error for a fit; for ``sampling`` it is a warning and the
    CPU: a released model file must not need its producer's hardware (the rows are the GPU's up to
    float rounding, which can move a category drawn at a boundary)."""
    import warnings

    torch = torch_module()
    if spec == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if spec == "cuda" and not torch.cuda.is_available():
        if not sampling:
            raise ConfigError(f"{who} parameter device='cuda': no CUDA device is available")
        warnings.warn(f"{who} has device='cuda' but no CUDA device is available: sampling on the CPU",
                      RuntimeWarning, stacklevel=3)
        return torch.device("cpu")
    return torch.device(spec)


def draw_categories(logits, u):
    """Categorical draws from the softmax of each row of ``logits`` (m, k) by inverse CDF on the
    uniforms ``u`` (m, r): ``r`` draws per row, as (m, r) codes.  The weights are ``exp(logits -
    max)``, the softmax up to its normaliser, so the law is the softmax's without forming it, and a
    code whose weight underflows to 0 is never drawn."""
    torch = torch_module()
    return draw_weighted(torch.exp(logits - logits.amax(dim=1, keepdim=True)), u)


def all_finite(t) -> bool:
    """Whether every value of the float tensor ``t`` is finite: a NaN or an infinity reaches its minimum or
    maximum, and one ``aminmax`` pass costs a twentieth of ``isfinite(t).all()``'s mask (measured: 1.8 against
    38 ms on 12 million float32 values, one thread), which took 8 % of a TVAE sample."""
    torch = torch_module()
    if t.numel() == 0:
        return True
    lo, hi = torch.aminmax(t)
    return bool(torch.isfinite(lo) & torch.isfinite(hi))


def draw_weighted(weights, u):
    """Categorical draws in proportion to the non-negative ``weights`` (m, k), which need no
    normalising, by inverse CDF on the uniforms ``u`` (m, r): the first code whose cumulative weight
    exceeds ``u`` times the row's total (a code of weight 0 is never drawn).  Returns (m, r) codes.
    ``weights`` is overwritten by its cumulative sums."""
    torch = torch_module()
    if not all_finite(weights):  # NaN logits drew the last code of every row, silently
        raise ConfigError(NONFINITE_OUTPUT)
    cdf = weights.cumsum_(dim=1)
    return torch.searchsorted(cdf, u * cdf[:, -1:], right=True).clamp_(max=weights.shape[1] - 1)


#: Rows per network pass when sampling: large enough that a pass is a few large matrix products,
#: small enough that a generator's activations stay tens of MB.
SAMPLE_BATCH = 16_384


def sample_rows(table: FeatureTable, n: int, rng: np.random.Generator, decode, sigma=None,
                finished: bool = False) -> np.ndarray:
    """``n`` feature rows, :data:`SAMPLE_BATCH` at a time, without autograd: ``decode(m, generator)``
    gives a batch's raw outputs (a torch generator seeded from ``rng`` draws its noise), and
    :meth:`Head.draw` draws the categories and flags from them with the same generator (and adds
    ``sigma`` noise to the scalars, TVAE's sampling).  With ``finished=True`` the decoder's output
    already is feature rows (a diffusion model's chain ends on one-hot categories) and is taken as
    it is."""
    torch = torch_module()
    head = Head(table, "cpu")
    gen = torch.Generator().manual_seed(int(rng.integers(2 ** 62)))
    out = np.empty((n, table.dim), dtype=np.float32)
    with torch.inference_mode():
        for lo in range(0, n, SAMPLE_BATCH):
            m = min(SAMPLE_BATCH, n - lo)
            raw = decode(m, gen)
            out[lo:lo + m] = raw.cpu().numpy() if finished else head.draw(raw, gen, sigma)
    return out


def mlp_weights(widths) -> int:
    """Weights (multiply-adds per row) of a chain of linear layers of ``widths``, input first."""
    widths = [int(w) for w in widths]
    return sum(a * b for a, b in zip(widths[:-1], widths[1:]))


def linear_weights(*modules) -> int:
    """Weights (multiply-adds per row of one pass) of every ``nn.Linear`` in ``modules``."""
    torch = torch_module()
    return sum(m.in_features * m.out_features for mod in modules for m in mod.modules()
               if isinstance(m, torch.nn.Linear))


def head_work(table) -> int:
    """Operations per record of :meth:`Head.draw` and the decoding around it: a few per feature column."""
    return 4 * int(getattr(table, "dim", 0))


def state_dict_to_json(module) -> dict:
    """A module's weights as JSON arrays (no pickle)."""
    return {k: {"shape": list(v.shape), "values": v.detach().cpu().reshape(-1).tolist()}
            for k, v in module.state_dict().items()}


def build_for_saved(build, saved, who: str):
    """``build()`` for weights read from a file: first on PyTorch's ``meta`` device, which allocates
    nothing, so that parameters a file sets to absurd widths are refused (their shapes must be those
    of the saved weights, whose values the file holds) before any memory is taken; then for real."""
    torch = torch_module()
    try:
        with torch.device("meta"):
            want = build().state_dict()
    except RuntimeError as e:  # widths whose product torch cannot size (d_token=1e9 x factor): not a network at all
        raise ConfigError(f"{who}.set_state: the parameters describe a network too large to build ({e}); the saved "
                          "weights' shapes are the network's") from None
    if not isinstance(saved, dict) or set(saved) != set(want):
        raise ConfigError(f"{who}.set_state: the saved weights do not match the network the parameters describe")
    for k, ref in want.items():
        w = saved[k]
        shape = w.get("shape") if isinstance(w, dict) else None
        if (not isinstance(shape, list) or [int(x) if isinstance(x, int) else None for x in shape] != list(ref.shape)
                or not isinstance(w.get("values"), list) or len(w["values"]) != int(np.prod(shape, dtype=np.int64))):
            raise ConfigError(f"{who}.set_state: saved weight {k!r} does not have the shape {list(ref.shape)} the "
                              "parameters describe")
    return build()


def load_json_state(module, saved: dict, who: str) -> None:
    """Load :func:`state_dict_to_json`'s output into ``module``, checking names, shapes and values."""
    torch = torch_module()
    want = module.state_dict()
    if not isinstance(saved, dict) or set(saved) != set(want):
        raise ConfigError(f"{who}.set_state: the saved weights do not match the network")
    new = {}
    for k, ref in want.items():
        w = saved[k]
        t = torch.tensor(w["values"], dtype=ref.dtype).reshape(w["shape"])
        if tuple(t.shape) != tuple(ref.shape) or (t.is_floating_point() and not bool(torch.isfinite(t).all())):
            raise ConfigError(f"{who}.set_state: saved weight {k!r} has the wrong shape or non-finite values")
        new[k] = t
    module.load_state_dict(new)


def record_count(model, data, budget, who: str) -> float:
    """The record count that sets a DP-SGD run's sampling rate: a discrete Gaussian count of
    ``model.count_share`` of the budget when private (clipped at 0; its noise's standard deviation in
    ``model.total_sigma_``, which the release's warnings read), the exact count (recorded as a
    non-private access) otherwise."""
    import math

    from ..core.privacy.mechanisms import noisy_count

    if budget.private:
        n_hat, model.total_sigma_ = noisy_count(budget, data.n, float(model.count_share) * budget.remaining,
                                                note=f"{who}: record count", with_sigma=True)
        return n_hat
    budget.charge("record_count", None, math.inf, note=f"{who}: record count (non-private)")
    model.total_sigma_ = 0.0
    return float(data.n)


def column_counts(x: np.ndarray, start: int, width: int = 1) -> np.ndarray:
    """Exact counts of the 0/1 feature columns ``start .. start + width`` (a one-hot block's categories, a
    flag's ones), what a DP release of them adds its noise to.  Counted in float64: a float32 sum of float32
    features is exact only up to 2^24 records, past which one added record moved a count by 2 (or by 0),
    not the 1 the charge assumes."""
    return x[:, start:start + width].sum(axis=0, dtype=np.float64).round()


def output_priors(data, head: Head, budget, share: float, who: str, skip: str | None = None) -> np.ndarray | None:
    """Starting biases for an output layer on the layout, from DP one-way counts: each softmax block's
    log-frequencies and each flag's log-odds (0 on the tanh scalars, and on column ``skip``'s block, which
    is neither counted nor charged: a conditioning target counted elsewhere).  ``None`` when ``share`` is
    0 or the run is not private (the paper's initialisation).

    Why: DP-SGD's clipped, noised gradient moves a logit by little per step, and a private run takes a
    few hundred steps, so an output layer initialised near uniform keeps much of its uniform law: DP-TVAE
    on housing at epsilon 1 drew 6.9 % ISLAND (real 0.03 %) and 12 % missing ``total_bedrooms`` (real
    1 %).  The counts of every block and of both values of every flag are released together by the
    discrete Gaussian mechanism (each record adds 1 to one cell of each, so the L2 sensitivity is the
    square root of their number), charged ``share`` of what is left of ``budget``; the biases are
    post-processing of them.  A count below half the noise's standard deviation is raised to it: the
    release cannot tell a category from an empty one below that, and a logit far below the others
    would take the whole run to climb back."""
    if not budget.private or share <= 0.0:
        return None
    import math

    from ..core.privacy.mechanisms import discrete_gaussian

    cells = [(start, width) for column, start, width in head.blocks if column != skip]
    flags = [int(f) for f in head.sigm.cpu().tolist()]
    if not cells and not flags:
        return None
    exact = [column_counts(data.x, s, w) for s, w in cells]
    for f in flags:
        on = float(column_counts(data.x, f)[0])
        exact.append(np.array([data.n - on, on]))
    sizes = [c.size for c in exact]
    noisy, sigma = discrete_gaussian(budget, np.concatenate(exact), math.sqrt(len(exact)),
                                     float(share) * budget.remaining,
                                     note=f"{who}: one-way counts of {len(cells)} one-hot block(s) and "
                                          f"{len(flags)} flag(s) for the output layer's starting biases")
    parts = floored_parts(noisy, sigma, sizes)
    bias = np.zeros(head.dim, dtype=np.float64)
    for (s, w), c in zip(cells, parts[:len(cells)]):
        bias[s:s + w] = centred_log_frequencies(c)
    for f, c in zip(flags, parts[len(cells):]):
        bias[f] = math.log(c[1] / c[0])
    return bias


def floored_parts(noisy: np.ndarray, sigma: float, sizes: list[int]) -> list[np.ndarray]:
    """A release of several count vectors split back into them, every count raised to half the noise's
    standard deviation (at least 1): below that the release cannot tell a cell from an empty one, and a
    logit far below the others would take the whole run to climb back."""
    return np.split(np.maximum(noisy, max(0.5 * sigma, 1.0)), np.cumsum(sizes)[:-1])


def centred_log_frequencies(counts: np.ndarray) -> np.ndarray:
    """A softmax block's starting biases: the log-frequencies of (floored, positive) counts, centred."""
    lg = np.log(counts / counts.sum())
    return lg - lg.mean()


def dpsgd_run(model, data, budget, who: str, n_hat: float | None = None):
    """The opening every DP-SGD record model shares: the record count (:func:`record_count`), the
    fixed number of steps ``ceil(epochs * n_hat / batch_size)`` and the
    :class:`~synthzoo.core.privacy.dpsgd.DPSGD` run, charged before any step.  A model that has
    already released a count (TabDDPM's label counts sum to one) passes it as ``n_hat`` and no other
    is taken.  Returns ``(n_hat, steps, sgd)``."""
    from ..core.privacy.dpsgd import DPSGD, schedule

    n_hat = float(n_hat) if n_hat is not None else record_count(model, data, budget, who)
    steps = schedule(model.epochs, n_hat, model.batch_size)[0]
    return n_hat, steps, DPSGD(budget, n_hat, int(model.batch_size), steps, float(model.max_grad_norm), note=who)


class OneNetwork:
    """State of a record model that is one network (``_build(table)``) plus its DP record count:
    ``_net`` and ``total_`` after the fit, saved as JSON weights."""

    def _start(self, data, rng: np.random.Generator):
        """The opening of a fit: the input checked, the device, a torch generator for the training's
        own randomness and the network initialised, both from the user's seed (the DP noise and batches
        come from the ledger, and a private loop's draws for its records from
        :meth:`~synthzoo.core.privacy.dpsgd.DPSGD.private_draws`), and the layout's head.
        Returns ``(torch, device, generator, net, head)``."""
        from ..core.features import FeatureData

        if not isinstance(data, FeatureData):
            raise ConfigError(f"{self.name} fits continuous features (FeatureData), got {type(data).__name__}")
        torch = torch_module()
        dev = resolve_device(self.device, self.name)
        gen = torch.Generator().manual_seed(int(rng.integers(2 ** 62)))
        torch.manual_seed(int(rng.integers(2 ** 62)))
        return torch, dev, gen, self._build(data.table).to(dev), Head(data.table, dev)

    def _set_fitted(self, table: FeatureTable, net, total: float) -> None:
        self._fitted(table)
        self._net = net.cpu().eval()
        self.total_ = float(total)
        self._sampler = None  # what a model derives from the network for sampling, made on the first sample

    _state_spec = {"total": NUMBER, "weights": ("map", TENSOR)}

    def dpsgd_runs(self) -> list[tuple[int, int]]:
        return [(self.epochs, self.batch_size)]  # one network, trained by dpsgd_run

    def _get_state(self) -> dict:
        """The network's weights (a function of the DP training and public randomness) and the DP count."""
        return {"total": self.total_, "weights": state_dict_to_json(self._net)}

    def _set_state(self, state: dict, table) -> None:
        net = build_for_saved(lambda: self._build(table), state["weights"], self.name)
        load_json_state(net, state["weights"], self.name)
        self._set_fitted(table, net, float(state["total"]))


def batch_mean(values, weights=None):
    """The mean over a batch's rows (dimension 0), weighted by ``weights`` (one a row) when given."""
    if weights is None:
        return values.mean(0)
    return (weights[:, None] * values).sum(0) / weights.sum()


class Conditions:
    """CTGAN's conditional vectors (Xu et al., NeurIPS 2019): the categorical blocks a condition can
    name and each one's category probabilities, by frequency and by log-frequency.

    The probabilities come from one-way marginals that :meth:`from_data` releases by the discrete
    Gaussian mechanism (charged) in a private run, so drawing conditions, the conditional loss and
    sampling read no record."""

    def __init__(self, table: FeatureTable, head: Head, counts: list[np.ndarray], every_block: bool = False):
        freq, logf = [], []
        for c in counts:
            c = np.clip(np.asarray(c, dtype=float), 0.0, None)
            freq.append(c / c.sum() if c.sum() > 0 else np.full(c.size, 1.0 / c.size))
            lg = np.log1p(c)
            logf.append(lg / lg.sum() if lg.sum() > 0 else np.full(c.size, 1.0 / c.size))
        self._set_blocks(self.blocks_of(table, head, every_block), freq, logf)

    def _set_blocks(self, blocks: list, freq: list, logf: list) -> None:
        self.blocks, self.freq, self.logf = blocks, freq, logf
        self.offsets = np.concatenate([[0], np.cumsum([w for _, _, w in self.blocks])]).astype(int)
        self.dim = int(self.offsets[-1])
        # every block's cells in the layout and their frequencies, flat (what marginal_loss gathers each step)
        self._cells = np.concatenate([np.arange(s, s + w) for _, s, w in blocks] or [np.zeros(0, dtype=int)])
        self._flat_freq = np.concatenate(freq) if freq else np.zeros(0)
        self._flat_logf = np.concatenate(logf) if logf else np.zeros(0)

    def categorical_only(self, table: FeatureTable, head: Head) -> Conditions:
        """These conditions on the categorical columns' blocks alone (CTGAN's conditional vector), from
        a release that also holds the mode indicators' marginals."""
        keep = set(self.blocks_of(table, head))
        idx = [i for i, b in enumerate(self.blocks) if b in keep]
        sub = object.__new__(Conditions)
        sub._set_blocks([self.blocks[i] for i in idx], [self.freq[i] for i in idx], [self.logf[i] for i in idx])
        sub.n_sigma = getattr(self, "n_sigma", 0.0)
        return sub

    @staticmethod
    def blocks_of(table: FeatureTable, head: Head, every_block: bool = False) -> list[tuple[str, int, int]]:
        """The one-hot blocks a condition can name: the categorical columns' (CTGAN), or with
        ``every_block`` also the mode indicators of mode-normalised numbers."""
        cats = {c.name for c in table.schema.columns if c.kind == "categorical"}
        return [(col, start, width) for col, start, width in head.blocks if every_block or col in cats]

    @classmethod
    def from_data(cls, data, head: Head, budget, share: float, who: str,
                  every_block: bool = False) -> tuple[float, "Conditions"]:
        """The record count and the blocks' one-way marginals: discrete Gaussian counts sharing
        ``share`` of what is left of ``budget`` equally (each of L2 sensitivity 1) when private, exact
        counts (recorded as non-private) otherwise.  Returns ``(n_hat, conditions)``; the count's noise
        standard deviation is ``conditions.n_sigma``."""
        import math

        from ..core.privacy.mechanisms import discrete_gaussian, noisy_count

        blocks = cls.blocks_of(data.table, head, every_block)
        if not budget.private:
            budget.charge("record_count", None, math.inf, note=f"{who}: counts (non-private)")
            counts = [column_counts(data.x, s, w) for _, s, w in blocks]
            cond = cls(data.table, head, counts, every_block)
            cond.n_sigma, cond.counts, cond.sigma = 0.0, counts, 0.0
            return float(data.n), cond
        rho_each = float(share) * budget.remaining / (1 + len(blocks))
        n_hat, n_sigma = noisy_count(budget, data.n, rho_each, note=f"{who}: record count", with_sigma=True)
        counts, sigma = [], 0.0
        for col, s, w in blocks:
            exact = column_counts(data.x, s, w)
            noisy, sigma = discrete_gaussian(budget, exact, 1.0, rho_each, note=f"{who}: one-way marginal of {col}")
            counts.append(noisy)
        cond = cls(data.table, head, counts, every_block)
        cond.n_sigma = n_sigma
        cond.counts, cond.sigma = [np.asarray(c, dtype=float) for c in counts], float(sigma)
        return n_hat, cond

    @classmethod
    def from_state(cls, table: FeatureTable, frequencies: list, who: str, every_block: bool = False) -> "Conditions":
        """The saved category frequencies (:attr:`freq`), checked against the layout."""
        saved = [np.asarray(f, dtype=float) for f in frequencies]
        # probabilities, as saved: finite counts of 1e308 summed to inf, normalised to zeros, and sampling
        # raised numpy's "probabilities do not sum to 1"
        if not all(f.ndim == 1 and np.all((f >= 0) & (f <= 1)) and abs(f.sum() - 1.0) <= 1e-6 for f in saved):
            raise ConfigError(f"{who}.set_state: the saved frequencies must be probabilities (each in [0, 1], "
                              "summing to 1 in each block)")
        cond = cls(table, Head(table, "cpu"), saved, every_block)
        if len(cond.freq) != len(cond.blocks) or any(f.size != w or not np.isfinite(f).all()
                                                     for f, (_, _, w) in zip(cond.freq, cond.blocks)):
            raise ConfigError(f"{who}.set_state: the saved frequencies do not fit the feature layout")
        return cond

    def draw(self, m: int, rng: np.random.Generator, log: bool):
        """``m`` conditions: (block, category, one-hot matrix); the block uniformly, the category by
        frequency or (``log``) by log-frequency."""
        blk, cat = self.draw_codes(m, rng, log)
        return blk, cat, self.onehot(blk, cat)

    def draw_codes(self, m: int, rng: np.random.Generator, log: bool = False):
        """``m`` conditions as (block, category) without the one-hot matrix (what :meth:`draw`
        draws from the same ``rng``); ``self.offsets[block] + category`` is the column of the 1."""
        blk = rng.integers(len(self.blocks), size=m)
        cat = np.empty(m, dtype=np.int64)
        table = self.logf if log else self.freq
        for b in np.unique(blk):
            sel = blk == b
            cat[sel] = rng.choice(table[b].size, size=int(sel.sum()), p=table[b])
        return blk, cat

    def sampling_weights(self, blk, cat) -> np.ndarray:
        """Each condition's weight ``freq / logf`` when it was drawn by log-frequency (:meth:`draw` with
        ``log``): a batch average weighted by them estimates the average over conditions drawn by frequency,
        as sampling draws them, which is what the marginal pull must hold to the released marginals."""
        cell = self.offsets[np.asarray(blk)] + np.asarray(cat)
        p, q = self._flat_freq[cell], self._flat_logf[cell]
        return np.where(q > 0, p / np.where(q > 0, q, 1.0), 0.0)

    def onehot(self, blk, cat) -> np.ndarray:
        out = np.zeros((len(blk), self.dim), dtype=np.float32)
        out[np.arange(len(blk)), self.offsets[blk] + cat] = 1.0
        return out

    def of_rows(self, x: np.ndarray, blk: np.ndarray) -> np.ndarray:
        """Each row's own category in its block (one record, one condition)."""
        cat = np.empty(len(blk), dtype=np.int64)
        for b in np.unique(blk):
            sel = blk == b
            _, start, width = self.blocks[b]
            cat[sel] = np.argmax(x[sel, start:start + width], axis=1)
        return cat

    def loss(self, out, blk, cat):
        """The generator's conditional loss: the cross-entropy between the block each condition names
        (of the raw outputs ``out``) and its category."""
        torch = torch_module()
        dev = out.device
        cols = torch.as_tensor(self.offsets_in_layout[blk], device=dev)
        width = max(w for _, _, w in self.blocks)
        ar = torch.arange(width, device=dev)
        idx = cols[:, None] + ar[None, :]
        valid = ar[None, :] < torch.as_tensor(self.widths[blk], device=dev)[:, None]
        logits = out.gather(1, idx.clamp(max=out.shape[1] - 1)).masked_fill(~valid, float("-inf"))
        return torch.nn.functional.cross_entropy(logits, torch.as_tensor(cat, device=dev))

    @property
    def offsets_in_layout(self) -> np.ndarray:
        return np.array([s for _, s, _ in self.blocks], dtype=np.int64)

    @property
    def widths(self) -> np.ndarray:
        return np.array([w for _, _, w in self.blocks], dtype=np.int64)

    def marginal_loss(self, probs, weights=None):
        """Sum over the blocks of the KL divergence from the (noisy) one-way marginal to the batch's
        average of the generated block ``probs`` (softmax outputs; weighted by ``weights``, a tensor of one
        weight a row, when given): post-processing of the marginals that keeps a generator's one-way
        marginals where the released counts say."""
        torch = torch_module()
        if not self.blocks:
            return probs.new_zeros(())
        # every block's cells at once (one gather: a loop over a 100-column table's blocks cost more than the
        # generator's own step); the blocks' KL divergences sum cell by cell
        cells = torch.as_tensor(self._cells, device=probs.device)
        target = torch.as_tensor(self._flat_freq, dtype=probs.dtype, device=probs.device)
        avg = batch_mean(probs.index_select(1, cells), weights).clamp_min(1e-8)
        return (target * (torch.log(target.clamp_min(1e-8)) - torch.log(avg))).sum()


class ModeMoments:
    """The within-mode values ``alpha`` of mode-normalised numbers (CTGAN's encoding): for each mode, the
    mean and standard deviation of ``alpha`` that :meth:`loss` holds a generator's rows to.

    In a private run these are the encoding's own model of every mode, ``N(0, 1/4^2)``: ``alpha`` is a
    value's distance from its mode's mean in units of four of the mode's standard deviations, and the
    modes were fitted to the histograms the encoder released (charged), so nothing more is read or
    released.  They were the Gaussian release of each mode's sums of ``(alpha, alpha^2)`` (L2 sensitivity
    sqrt(2)), at the share of the budget the start can spare: the released spreads ranged from 0.005 to
    1 where the rows' were about 0.25 (hmeq and housing at epsilon 1), and the pull drew the numbers
    towards that noise; without the release the generators' 2-way TVD fell on all three tables (README,
    *Spike modes and the within-mode targets*).  Without privacy, the rows' exact moments (recorded as non-private), shrunk
    towards the model by 20 pseudo-records so that a mode with a handful of records takes the model's
    values; standard deviations of at least 0.005 (a point mass decodes within a fraction of a unit)."""

    PRIOR_STD, PSEUDO = 0.25, 20.0

    def __init__(self, table, cond: Conditions, data, n_hat: float, budget, who: str, pulled: bool = True):
        from ..core.privacy.mechanisms import gaussian

        freq = {col: f for (col, _, _), f in zip(cond.blocks, cond.freq)}
        self.columns = []  # (alpha index, mode start, width, target means, target stds, weights)
        segs = {}
        for g in table.layout:
            segs.setdefault(g.column, []).append(g)
        cols = [c for c in table.schema.names
                if pulled and getattr(table.encoders[c], "kind", "") == "modes" and c in freq]
        for c in cols:
            a, m = segs[c][0].start, segs[c][1]
            if budget.private:
                mean, std = np.zeros(m.width), np.full(m.width, self.PRIOR_STD)
            else:
                # in float64: float32 sums of a large table round
                onehot, alpha = data.x[:, m.start:m.stop].astype(np.float64), data.x[:, a].astype(np.float64)
                sums, _ = gaussian(budget, np.concatenate([onehot.T @ alpha, onehot.T @ alpha ** 2]), math.sqrt(2.0),
                                   math.inf, note=f"{who}: within-mode moments of {c}")
                count = np.clip(freq[c] * n_hat, 0.0, None)
                s1, s2 = sums[:m.width], sums[m.width:]
                mean = np.clip(s1 / (count + self.PSEUDO), -1.0, 1.0)
                second = (s2 + self.PSEUDO * self.PRIOR_STD ** 2) / (count + self.PSEUDO)
                std = np.sqrt(np.clip(second - mean ** 2, 0.005 ** 2, 1.0))
            self.columns.append((a, m.start, m.width, mean, std, freq[c]))
        # every mode of every column, flat: its indicator's column, its number's alpha column, its targets
        self._cells = np.concatenate([np.arange(s, s + w) for _, s, w, *_ in self.columns] or [np.zeros(0, dtype=int)])
        self._alpha = np.concatenate([np.full(w, a) for a, _, w, *_ in self.columns] or [np.zeros(0, dtype=int)])
        self._targets = [np.concatenate([c[k] for c in self.columns]) if self.columns else np.zeros(0) for k in (3, 4, 5)]

    def loss(self, fake, weights=None):
        """How far the generated rows' per-mode means and standard deviations of ``alpha`` are from
        the targets: the squared 2-Wasserstein distance between the two normal laws, weighted by
        the modes' frequencies.  It was their KL divergence, which divides by the target's variance: a
        point-mass mode (hmeq's ``DEROG`` = 0, 76 % of the rows; standard deviation 0.005) made the loss
        3,000 times the blocks', the blocks' marginals were left behind (a zero-inflated column drew 22 %
        zeros against 75 %), and for such a mode ``alpha`` does not even matter to the decoded value."""
        torch = torch_module()
        if not self.columns:
            return fake.new_zeros(())
        # every mode of every column at once (one gather, not a loop per column)
        mean, std, w = (torch.as_tensor(t, dtype=fake.dtype, device=fake.device) for t in self._targets)
        h = fake.index_select(1, torch.as_tensor(self._cells, device=fake.device))
        if weights is not None:  # each row's mode memberships weighted as the batch average is (batch_mean)
            h = h * (weights / weights.mean())[:, None]
        x = fake.index_select(1, torch.as_tensor(self._alpha, device=fake.device))
        n = h.sum(0) + 1e-6
        m = (h * x).sum(0) / n
        v = ((h * x ** 2).sum(0) / n - m ** 2).clamp_min(1e-8)
        return (w * ((m - mean) ** 2 + (torch.sqrt(v + 1e-6) - std) ** 2)).sum()


class FlagRates:
    """The flags' rates (a column's missing values): for each flag a discrete Gaussian count of the
    records that raise it (L2 sensitivity 1), over the DP record count; the generator's mean flag
    probability is pulled to it by a binary KL.  Without it only the student's score spoke for the
    flags, which it hardly separates: hmeq's numbers came out missing at 6-7 % each without privacy
    and from 40 to 98 % at epsilon 1 (real 1-22 %)."""

    def __init__(self, head, data, n_hat: float, budget, rho: float, who: str):
        from ..core.privacy.mechanisms import discrete_gaussian

        self.idx = head.sigm
        cols = self.idx.cpu().numpy()
        self.rates, self.log_odds = [], []
        for j in cols:
            count = float(column_counts(data.x, int(j))[0])
            noisy, sigma = discrete_gaussian(budget, count, 1.0, rho / max(len(cols), 1),
                                             note=f"{who}: flag count of feature {int(j)}")
            self.rates.append(float(np.clip(float(noisy) / max(n_hat, 1.0), 1e-4, 1 - 1e-4)))
            # a starting bias: both counts floored at half the noise, as output_priors floors them
            floor = max(0.5 * float(sigma), 1.0)
            self.log_odds.append(math.log(max(float(noisy), floor) / max(n_hat - float(noisy), floor)))

    def loss(self, probs, weights=None):
        torch = torch_module()
        if not self.rates:
            return probs.new_zeros(())
        t = torch.as_tensor(self.rates, dtype=probs.dtype, device=probs.device)
        q = batch_mean(probs[:, self.idx], weights).clamp(1e-6, 1 - 1e-6)
        return (t * torch.log(t / q) + (1 - t) * torch.log((1 - t) / (1 - q))).sum()


def release_marginal_targets(data, head: Head, budget, share: float, who: str,
                             every_block: bool = True) -> tuple[float, Conditions, MarginalPull]:
    """What a generator can be pulled towards besides its adversary, in one release of ``share`` of
    what is left of ``budget``: the record count and the one-way marginals of the one-hot blocks
    (categories and, with ``every_block``, the mode indicators of mode-normalised numbers) as
    :class:`Conditions` and the flags' rates (:class:`FlagRates`), the share split evenly over the count,
    the blocks and the flags; with ``every_block`` also the within-mode laws of the numbers
    (:class:`ModeMoments`: in a private run the encoding's own model, which releases nothing).
    Exact (recorded as non-private) when the run is not private.  Returns ``(n_hat, conditions, pull)``."""
    table = data.table
    n_blocks = len(Conditions.blocks_of(table, head, every_block))
    n_flags = int(head.sigm.numel())
    parts = 1 + n_blocks + n_flags
    rho_stats = float(share) * budget.remaining if budget.private else math.inf
    n_hat, cond = Conditions.from_data(data, head, budget, float(share) * (1 + n_blocks) / parts, who, every_block)
    within = ModeMoments(table, cond, data, n_hat, budget, who, pulled=every_block)
    flags = FlagRates(head, data, n_hat, budget, rho_stats * n_flags / parts, who)
    return n_hat, cond, MarginalPull(head, cond, within, flags)


class MarginalPull:
    """A generator's loss towards released one-way statistics (:func:`release_marginal_targets`):
    the KL divergences of the blocks' batch averages (:meth:`Conditions.marginal_loss`) and of the flags'
    rates (:meth:`FlagRates.loss`), and the distance of the modes' within-mode laws from their targets
    (:meth:`ModeMoments.loss`).  Post-processing of the release: reads no record."""

    def __init__(self, head: Head, cond: Conditions, moments: ModeMoments, flags: FlagRates):
        self.head, self.cond, self.moments, self.flags = head, cond, moments, flags

    @property
    def empty(self) -> bool:
        """Nothing to pull towards (a table of scaled numbers alone): the loss is a constant 0."""
        return not (self.cond.dim or self.moments.columns or self.flags.rates)

    def loss(self, out, fake, probs=None, weights=None):
        """The pull on a batch: ``out`` the generator's raw outputs, ``fake`` the rows it feeds its
        adversary (the activated layout); ``probs``, ``head.activate(out)``, when the caller has it;
        ``weights`` (one a row, :meth:`Conditions.sampling_weights`) when the batch's conditions were drawn
        otherwise than sampling draws them."""
        probs = self.head.activate(out) if probs is None else probs
        if weights is not None:
            weights = torch_module().as_tensor(weights, dtype=probs.dtype, device=probs.device)
        loss = self.moments.loss(fake, weights) + self.flags.loss(probs, weights)
        return loss + self.cond.marginal_loss(probs, weights) if self.cond.dim else loss

    def output_biases(self) -> np.ndarray:
        """Starting biases for an output layer on the layout from the same release (what
        :func:`output_priors` makes from its own): each block's centred log-frequencies and each flag's
        log-odds, counts floored at half the noise's standard deviation (at least 1); 0 on the scalars.
        Needs a release of every block (``every_block``)."""
        bias = np.zeros(self.head.dim, dtype=np.float64)
        floor = max(0.5 * self.cond.sigma, 1.0)
        for (_, start, width), c in zip(self.cond.blocks, self.cond.counts):
            bias[start:start + width] = centred_log_frequencies(np.maximum(c, floor))
        for f, lo in zip(self.head.sigm.cpu().tolist(), self.flags.log_odds):
            bias[int(f)] = lo
        return bias


class OnePassGenerator:
    """Mixin of the models whose ``sample`` is one pass of a generator ``self._gen`` per record (ctgan,
    pate-gan): their sampling work and their saved parameters."""

    def _sample_work(self) -> tuple[float, str]:
        """One pass of the generator per record, then the head's draws (the network has no step multiplier:
        the file's size bounds it; unfitted, 0)."""
        if getattr(self, "domain_", None) is None:
            return 0.0, "not fitted"
        weights = linear_weights(self._gen)
        return weights + head_work(self.domain_), f"a generator of {weights:.2g} weights"

    def _saved_params(self) -> dict:
        return saved_sampling_params(self.get_params())

    def _sample_generator(self, n: int, rng: np.random.Generator, layers, noise_dim: int) -> np.ndarray:
        """``n`` feature rows from the generator run as :class:`SamplingNet` over ``layers()`` (``(linear,
        batch norm or None, activation)`` triples, built on the first sample and again when the precision
        changes), each row conditioned on a category drawn by the (noisy) frequencies ``self._cond``."""
        torch = torch_module()
        precision = sample_precision_of(self)
        if self._sampler is None or self._sampler.dtype != getattr(torch, precision):
            self._sampler = SamplingNet(layers(), self._cond.dim, int(noise_dim), dtype=precision)
        cond, net, emb = self._cond, self._sampler, int(noise_dim)

        def decode(m, gen):
            column = None
            if cond.dim:
                blk, cat = cond.draw_codes(m, rng)
                column = cond.offsets[blk] + cat
            return net(torch.randn(m, emb, generator=gen), column)

        return sample_rows(self.domain_, self._check_n(n), rng, decode)


#: The precisions a model's sampling passes may run in (``sample_precision``; :class:`SamplingNet`'s ``dtype``).
SAMPLE_PRECISIONS = ("float32", "bfloat16")


def saved_sampling_params(params: dict) -> dict:
    """The parameters a model with a choice of sampling precision saves: ``sample_precision`` only where
    it is not float32, so that files written before it existed, which lack it, load and sample as they did."""
    return {k: v for k, v in params.items() if not (k == "sample_precision" and v == "float32")}


def sample_precision_of(model) -> str:
    """``model.sample_precision``, checked again at :meth:`sample` time: a value set by hand after
    construction (``model.sample_precision = "float16"``, ``None``) raises :class:`ConfigError` naming
    the parameter, as :meth:`check_params` would, instead of failing inside torch."""
    v = model.sample_precision
    if not (isinstance(v, str) and v in SAMPLE_PRECISIONS):
        model._bad("sample_precision", f"must be one of {', '.join(map(repr, SAMPLE_PRECISIONS))}")
    return v


def cpu_has_bf16_kernels() -> bool:
    """Whether torch runs bfloat16 matrix products on this CPU through oneDNN (AVX-512 or AMX, native
    or converted).  Without them (an AVX2-only x86 CPU) torch falls back to a reference kernel tens of
    times slower than float32's (40x measured with oneDNN held to AVX2).  True where torch cannot tell."""
    torch = torch_module()
    try:
        return bool(torch.ops.mkldnn._is_mkldnn_bf16_supported())
    except (AttributeError, RuntimeError):  # pragma: no cover - another torch build
        return True


class SamplingNet:
    """A generator's forward pass for sampling, as a few fused matrix products: the network's
    linear layers with any batch norm (in its evaluation form) folded into them, in-place
    activations, residual inputs never concatenated (each input piece meets its own block of the
    weight), and a one-hot condition that ends the network's input entered as a gathered row
    instead of ``cond_dim`` multiply-adds per output.

    ``W [x, e_j] + b = W_x x + (W_c[:, j] + b)``: each layer whose input ends in the condition keeps
    ``W_x`` and a table whose row ``j`` is ``W_c[:, j] + b``.  The logits are those of the network up
    to float rounding (the tests compare the two); on CTGAN's adult layout (a condition of 104
    columns) the pass takes 23 % fewer multiply-adds.

    Parameters
    ----------
    layers : list of (linear, norm or None, kind)
        In order; ``norm`` a ``BatchNorm1d`` (folded into the linear layer) or a ``LayerNorm``
        (applied after it); ``kind`` is ``"residual"`` (CTGAN's block: ``[relu(norm(fc(x))), x]``,
        the input carried on, condition included), ``"relu"`` or ``"linear"`` (the output).
    cond_dim : int
        Width of the one-hot condition at the end of the first layer's input (0: none).
    noise_dim : int
        Width of the rest of the first layer's input (a generator's noise).
    device : torch device, optional
        Where the fused weights live (the CPU by default).
    dtype : {"float32", "bfloat16"}, default "float32"
        Precision of the weights and activations.  ``"bfloat16"`` (8 bits of mantissa, float32's range;
        products accumulated in float32 by the CPU's bf16 instructions) runs the matrix products 3-5x
        faster on CPUs with native bf16 (AVX512-BF16, AMX; measured on this project's machine),
        somewhat slower on AVX-512 CPUs without it (oneDNN converts: 1.15x float32's time) and tens of
        times slower where oneDNN has no bf16 kernel at all (AVX2-only CPUs: torch's reference kernel,
        40x); there, on the CPU, it warns (:func:`cpu_has_bf16_kernels`).  The outputs are returned in
        float32.
    """

    def __init__(self, layers, cond_dim: int, noise_dim: int, device=None, dtype: str = "float32"):
        torch = torch_module()
        if dtype not in SAMPLE_PRECISIONS:
            raise ValueError(f"SamplingNet: dtype must be 'float32' or 'bfloat16', got {dtype!r}")
        self.dtype = getattr(torch, dtype)
        on_cpu = device is None or torch.device(device).type == "cpu"
        if dtype == "bfloat16" and on_cpu and not cpu_has_bf16_kernels():
            import warnings

            warnings.warn("sample_precision='bfloat16': this CPU has no bfloat16 matrix kernels (oneDNN needs "
                          "AVX-512 or AMX), so torch emulates them, tens of times slower than float32; sample "
                          "in float32 here (sample_precision='float32', or leave out `sample --precision`)",
                          RuntimeWarning, stacklevel=3)
        if not layers or layers[-1][2] != "linear" or any(k not in ("residual", "relu") for _, _, k in layers[:-1]):
            raise ValueError("SamplingNet: residual or relu layers, then one linear output layer")
        self.cond_dim = int(cond_dim)
        self.layers = []
        widths = [int(noise_dim)]  # the pieces of the current input (without the condition), in order
        carries = True  # does this layer's input still end in the condition?
        with torch.no_grad():
            for fc, bn, kind in layers:
                w, b = fc.weight.detach().float().cpu(), fc.bias.detach().float().cpu()
                ln = None
                if isinstance(bn, torch.nn.BatchNorm1d):  # eval mode: (x - mean) / sqrt(var + eps) * gamma + beta
                    scale = bn.weight.detach().float().cpu() / torch.sqrt(bn.running_var.float().cpu() + bn.eps)
                    w = w * scale[:, None]
                    b = (b - bn.running_mean.float().cpu()) * scale + bn.bias.detach().float().cpu()
                elif isinstance(bn, torch.nn.LayerNorm):  # a function of the whole row: applied, not folded
                    ln = (bn.normalized_shape, bn.weight.detach().float().cpu(), bn.bias.detach().float().cpu(), bn.eps)
                elif bn is not None:
                    raise ValueError(f"SamplingNet: unsupported normalisation {type(bn).__name__}")
                cond = carries and self.cond_dim > 0
                if cond:
                    table = (w[:, -self.cond_dim:].T + b).contiguous()
                    w = w[:, :-self.cond_dim]
                else:
                    table = b[None, :].contiguous()
                # one weight block per input piece: the residual inputs are never concatenated
                blocks = [blk.T.contiguous().to(self.dtype) for blk in torch.split(w, widths, dim=1)]
                table = table.to(self.dtype)
                if device is not None:
                    blocks, table = [blk.to(device) for blk in blocks], table.to(device)
                    ln = ln and (ln[0], ln[1].to(device), ln[2].to(device), ln[3])
                self.layers.append((blocks, table, kind, cond, ln))
                out = w.shape[0]
                widths = [out, *widths] if kind == "residual" else [out]
                carries = carries and kind == "residual"

    def __call__(self, z, column=None):
        """Outputs for the input ``z`` (m, noise_dim) and, with a condition, ``column`` (m,): the
        position of each row's 1 in the condition."""
        torch = torch_module()
        pieces = [z.to(self.dtype)]
        j = torch.as_tensor(column, dtype=torch.long, device=z.device) if column is not None else None
        for blocks, table, kind, cond, ln in self.layers:
            y = torch.addmm(table.index_select(0, j) if cond else table, pieces[0], blocks[0])
            for x, wt in zip(pieces[1:], blocks[1:]):
                y.addmm_(x, wt)
            if ln is not None:  # normalised in float32: a row's mean and variance need the precision
                y = torch.nn.functional.layer_norm(y.float(), *ln).to(self.dtype)
            if kind == "residual":
                pieces = [y.relu_(), *pieces]
            elif kind == "relu":
                pieces = [y.relu_()]
        return y.float()

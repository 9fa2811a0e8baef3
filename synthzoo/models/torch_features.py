"""What the record models that fit continuous features share (``tvae``, ``ctgan``, ``pategan``,
``tabddpm``): the output head of a feature layout, its per-record losses, saved weights, and the
opening of a DP-SGD run (:func:`dpsgd_run`) with the state of a one-network model
(:class:`OneNetwork`).  A helper of those model files, not a module.

A :class:`~synthzoo.core.features.FeatureTable`'s layout says how each slice is produced: ``tanh``
scalars, ``softmax`` one-hot blocks, ``sigmoid`` flags.  Everything here is vectorised over the
layout: the softmax blocks are gathered into one padded tensor, so a head costs a few tensor
operations however many columns the table has.
"""

from __future__ import annotations

import numpy as np

from ..core.errors import ConfigError
from ..core.features import FeatureTable


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
        temperature ``tau`` when given, as CTGAN's generator; ``hard`` straight-through one-hot)."""
        torch = torch_module()
        out = torch.zeros_like(logits)
        if self.tanh.numel():
            out[:, self.tanh] = torch.tanh(logits[:, self.tanh])
        if self.sigm.numel():
            out[:, self.sigm] = torch.sigmoid(logits[:, self.sigm])
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

    def finish(self, out, rng: np.random.Generator, sigma=None) -> np.ndarray:
        """Model outputs to feature rows: softmax blocks drawn (one category each), flags drawn, tanh
        scalars kept (with Gaussian noise of ``sigma`` when given, as TVAE samples)."""
        x = out.detach().cpu().double().numpy()
        res = np.zeros_like(x)
        t = self.tanh.cpu().numpy()
        if t.size:
            v = x[:, t]
            if sigma is not None:
                v = v + rng.normal(size=v.shape) * np.asarray(sigma)[None, :]
            res[:, t] = np.clip(v, -1.0, 1.0)
        f = self.sigm.cpu().numpy()
        if f.size:
            res[:, f] = (rng.random((x.shape[0], f.size)) < x[:, f]).astype(float)
        for column, start, width in self.blocks:
            p = np.clip(x[:, start:start + width], 0.0, None) + 1e-12
            cdf = np.cumsum(p, axis=1)
            k = np.minimum((cdf < rng.random(x.shape[0])[:, None] * cdf[:, -1:]).sum(axis=1), width - 1)
            res[np.arange(x.shape[0]), start + k] = 1.0
        return res.astype(np.float32)


def resolve_device(spec: str, who: str):
    """``"auto"`` (CUDA when available, else the CPU), ``"cpu"`` or ``"cuda"`` as a torch device."""
    torch = torch_module()
    if spec == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if spec == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"{who} parameter device='cuda': no CUDA device is available")
    return torch.device(spec)


def sample_rows(table: FeatureTable, n: int, rng: np.random.Generator, decode, sigma=None) -> np.ndarray:
    """``n`` feature rows, 8,192 at a time: ``decode(m, generator)`` gives a batch's raw outputs (a
    torch generator seeded from ``rng`` draws its noise), the head activates them and draws the
    categories and flags (and adds ``sigma`` noise to the scalars, TVAE's sampling)."""
    torch = torch_module()
    head = Head(table, "cpu")
    gen = torch.Generator().manual_seed(int(rng.integers(2 ** 62)))
    out = []
    with torch.no_grad():
        for lo in range(0, n, 8192):
            out.append(head.finish(head.activate(decode(min(8192, n - lo), gen)), rng, sigma))
    return np.concatenate(out) if out else np.zeros((0, table.dim), dtype=np.float32)


def state_dict_to_json(module) -> dict:
    """A module's weights as JSON arrays (no pickle)."""
    return {k: {"shape": list(v.shape), "values": v.detach().cpu().reshape(-1).tolist()}
            for k, v in module.state_dict().items()}


def build_for_saved(build, saved, who: str):
    """``build()`` for weights read from a file: first on PyTorch's ``meta`` device, which allocates
    nothing, so that parameters a file sets to absurd widths are refused (their shapes must be those
    of the saved weights, whose values the file holds) before any memory is taken; then for real."""
    torch = torch_module()
    with torch.device("meta"):
        want = build().state_dict()
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


def dpsgd_run(model, data, budget, who: str):
    """The opening every DP-SGD record model shares: the record count (a discrete Gaussian count of
    ``model.count_share`` of the budget when private), the fixed number of steps
    ``ceil(epochs * n_hat / batch_size)`` and the :class:`~synthzoo.core.privacy.dpsgd.DPSGD` run,
    charged before any step.  Returns ``(n_hat, steps, sgd)``."""
    import math

    from ..core.privacy.dpsgd import DPSGD
    from ..core.privacy.mechanisms import noisy_count

    if budget.private:
        n_hat = noisy_count(budget, data.n, float(model.count_share) * budget.remaining, note=f"{who}: record count")
    else:
        n_hat = float(data.n)
        budget.charge("record_count", None, math.inf, note=f"{who}: record count (non-private)")
    steps = max(1, math.ceil(int(model.epochs) * max(n_hat, 1.0) / int(model.batch_size)))
    return n_hat, steps, DPSGD(budget, n_hat, int(model.batch_size), steps, float(model.max_grad_norm), note=who)


class OneNetwork:
    """State of a record model that is one network (``_build(table)``) plus its DP record count:
    ``_net`` and ``total_`` after the fit, saved as JSON weights."""

    def _start(self, data, rng: np.random.Generator):
        """The opening of a fit: the input checked, the device, a torch generator for the training's
        own randomness and the network initialised, both from the user's seed (data-independent; the
        DP noise and batches come from the ledger), and the layout's head.
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

    def _get_state(self) -> dict:
        """The network's weights (a function of the DP training and public randomness) and the DP count."""
        return {"total": self.total_, "weights": state_dict_to_json(self._net)}

    def _set_state(self, state: dict, table) -> None:
        net = build_for_saved(lambda: self._build(table), state["weights"], self.name)
        load_json_state(net, state["weights"], self.name)
        self._set_fitted(table, net, float(state["total"]))

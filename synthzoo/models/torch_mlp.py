"""What the torch generator models (``gn``, ``dpmerf``) share: a lazy torch import, device choice,
and a plain MLP with a padded per-attribute softmax head whose weights are a list of tensors (so
they save as JSON arrays and seed exactly).  A helper of those model files, not a module."""

from __future__ import annotations

import numpy as np

from ..core.errors import ConfigError
from ..core.params import Integral, Interval, Options, Sequence
from ..core.statecheck import shaped
from .torch_features import draw_categories, mlp_weights, resolve_device

#: Constraints of the parameters every torch MLP model has.
MLP_CONSTRAINTS = {"hidden": [Interval(Integral, 1, None), Sequence(Interval(Integral, 1, None), min_length=1)],
                   "device": [Options("auto", "cpu", "cuda")]}


def torch_module(model: str):
    """``torch``, or a :class:`ConfigError` saying that model ``model`` needs it."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a declared dependency
        raise ConfigError(f"model {model!r} needs PyTorch: pip install torch") from None
    return torch


class TorchMLP:
    """Mixin: subclasses define ``_layers()`` (widths, input first), ``hidden`` and ``device``
    parameters, and keep their fitted weights in ``self._weights``."""

    def _hidden(self) -> list[int]:
        h = self.hidden
        return [int(h)] if isinstance(h, (int, np.integer)) else [int(x) for x in h]

    def _shapes(self) -> list[tuple]:
        sizes = self._layers()
        return [s for a, b in zip(sizes[:-1], sizes[1:]) for s in ((b, a), (b,))]

    def _device(self, sampling: bool = False):
        return resolve_device(self.device, self._label(), sampling)

    def _init_weights(self, gen) -> list:
        """PyTorch's default Linear initialisation, U(-1/sqrt(fan_in), 1/sqrt(fan_in)), drawn from ``gen``."""
        torch = torch_module(self.name)
        ws = []
        sizes = self._layers()
        for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
            bound = 1.0 / np.sqrt(fan_in)
            ws.append((torch.rand(fan_out, fan_in, generator=gen) * 2 - 1) * bound)
            ws.append((torch.rand(fan_out, generator=gen) * 2 - 1) * bound)
        return ws

    @staticmethod
    def _pad_mask(sizes, dev):
        """(attributes, largest size) mask of the padding codes of the padded output layer."""
        sizes = np.asarray(sizes)
        return torch_module("mlp").as_tensor(np.arange(sizes.max())[None, :] >= sizes[:, None], device=dev)

    @staticmethod
    def _real_rows(pad):
        """Indices of the real codes in the padded (attribute, code) layout, flattened attribute by
        attribute: the output layer's rows that are not padding."""
        return (~pad).reshape(-1).nonzero().squeeze(1)

    @staticmethod
    def _padded_logits(ws, inp, pad, real=None):
        """ReLU MLP on ``inp``; the output laid out (batch, attribute, code up to the largest
        attribute), padding logits at ``-inf`` -- so all the softmaxes are one reshape and one softmax.
        ``real`` is :meth:`_real_rows` of ``pad``, computed once by a training loop: finding it reads the
        mask back from the device, which on a GPU would stall every step until the queue drains."""
        torch = torch_module("mlp")
        h = inp
        for i in range(0, len(ws) - 2, 2):
            h = torch.relu(h @ ws[i].T + ws[i + 1])
        if real is None:
            real = TorchMLP._real_rows(pad)
        if real.numel() == pad.numel():  # no padding (a size known on the host: no device read)
            return (h @ ws[-2].T + ws[-1]).view(inp.shape[0], *pad.shape)
        # only the real rows of the output layer are multiplied (on a 100-column table with attributes
        # of 2 to 29 codes, 1,048 of 2,900 padded rows): the padding logits are -inf whatever their
        # weights, so their rows never receive a gradient and the answer is the padded layer's
        out = torch.full((inp.shape[0], pad.numel()), float("-inf"), dtype=h.dtype, device=h.device)
        out[:, real] = torch.addmm(ws[-1][real], h, ws[-2][real].T)
        return out.view(inp.shape[0], *pad.shape)

    @staticmethod
    def _sampling_net(ws, sizes) -> list:
        """The weights for sampling: the output layer without the rows of its padding logits, so a
        forward pass computes only the ``sum(sizes)`` real logits (a third of the padded layer's
        work on adult)."""
        keep = TorchMLP._real_rows(TorchMLP._pad_mask(sizes, ws[-2].device))
        return [*ws[:-2], ws[-2][keep].contiguous(), ws[-1][keep].contiguous()]

    @staticmethod
    def _draw_codes(net, inp, sizes, u: np.ndarray, per: int = 1) -> np.ndarray:
        """Categorical draws from the softmaxes of the network ``net`` (from :meth:`_sampling_net`)
        on the ``m`` rows of ``inp``: ``per`` records for each row (record ``i * per + r`` from row
        ``i``), each attribute drawn by inverse CDF on the uniforms ``u`` (``m * per`` records,
        attributes) -- the code whose cumulative probability first exceeds ``u``."""
        torch = torch_module("mlp")
        with torch.inference_mode():
            h = inp
            for i in range(0, len(net) - 2, 2):
                h = torch.addmm(net[i + 1], h, net[i].T).relu_()
            logits = torch.addmm(net[-1], h, net[-2].T)
            m = logits.shape[0]
            u_t = torch.as_tensor(u, dtype=torch.float32, device=logits.device).view(m, per, len(sizes))
            out = torch.empty((m, per, len(sizes)), dtype=torch.int64, device=logits.device)
            off = 0
            for j, k in enumerate(sizes):
                out[:, :, j] = draw_categories(logits[:, off:off + k], u_t[:, :, j])
                off += k
        return out.view(m * per, len(sizes)).cpu().numpy()

    def _mlp_work(self, sizes) -> tuple[float, str]:
        """Work per record of :meth:`_draw_codes` on :meth:`_sampling_net`: one pass per ``draws_per_z``
        records (the output layer's real rows only), then an inverse-CDF draw over each attribute's codes."""
        layers = self._layers()
        weights = mlp_weights(layers[:-1]) + layers[-2] * int(sum(sizes))
        per = int(self.draws_per_z)
        return weights / per + 2.0 * sum(sizes), f"a network of {weights:.2g} weights / draws_per_z={per}"

    def _weights_state(self) -> list[dict]:
        return [{"shape": list(w.shape), "values": w.reshape(-1).tolist()} for w in self._weights]

    def _weights_from(self, saved) -> list:
        """Saved weights as float32 tensors, checked against the layer sizes the parameters imply."""
        torch = torch_module(self.name)
        want = self._shapes()
        if len(saved) != len(want):
            raise ConfigError(f"{self._label()}.set_state: the saved weights do not match the network's layer sizes "
                              f"(model file: model_state.weights holds {len(saved)} tensors, the layers {len(want)})")
        ws = []
        for i, (w, shape) in enumerate(zip(saved, want)):
            # checked against the layers the parameters give before anything is reshaped: a file's own shape
            # ([-42], [10**30], one of the wrong size) was a reshape's bare ValueError or TypeError naming no field
            where = f"model file: model_state.weights[{i}]"
            if w["shape"] != list(shape):
                raise ConfigError(f"{where}.shape: {w['shape']!r:.60} is not the {list(shape)} the network's layer sizes "
                                  "give")
            ws.append(torch.as_tensor(shaped(w["values"], list(shape), where), dtype=torch.float32))
        if not all(bool(torch.isfinite(w).all()) for w in ws):
            raise ConfigError(f"{self._label()}.set_state: the saved weights hold non-finite values")
        return ws

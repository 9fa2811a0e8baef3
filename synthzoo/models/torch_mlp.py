"""What the torch generator models (``gn``, ``dpmerf``) share: a lazy torch import, device choice,
and a plain MLP whose weights are a list of tensors (so they save as JSON and seed exactly)."""

from __future__ import annotations

import numpy as np

from ..core.errors import ConfigError


def torch_module(model: str):
    """``torch``, or a :class:`ConfigError` saying that model ``model`` needs it."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a declared dependency
        raise ConfigError(f"model {model!r} needs PyTorch: pip install torch") from None
    return torch


class TorchMLP:
    """Mixin: subclasses define ``_layers()`` (widths, input first), a ``device`` parameter and
    ``_LABEL`` (the name used in error messages)."""

    _LABEL = "model"

    def _shapes(self) -> list[tuple]:
        sizes = self._layers()
        return [s for a, b in zip(sizes[:-1], sizes[1:]) for s in ((b, a), (b,))]

    def _restore_params(self, params: dict, state: dict, domain) -> None:
        """``set_state``'s shared part: the saved state belongs to ``domain`` and names only this
        model's parameters; they are set and checked."""
        from ..core.domain import Domain

        if "domain" in state and Domain.from_dict(state["domain"]) != domain:
            raise ConfigError(f"{self._LABEL}.set_state: the saved state was fitted on a different domain")
        for k, v in params.items():
            if k not in self.get_params():
                raise ConfigError(f"{self._LABEL}.set_state: unknown parameter {k!r}")
            setattr(self, k, tuple(v) if k == "hidden" else v)
        self.check_params()

    def _device(self):
        torch = torch_module(self.name)
        if self.device == "auto":
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        if self.device == "cuda" and not torch.cuda.is_available():
            raise ConfigError(f"{self._LABEL} parameter device='cuda': no CUDA device is available")
        return torch.device(self.device)

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

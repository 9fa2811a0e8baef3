"""Synthesis models: fit noisy measurements (or records) and sample synthetic records."""

from .dpmerf import DPMERF
from .gum import GUM
from .gn import GN
from .gsd import GSD
from .pgm import PGM
from .rp import RP

__all__ = ["DPMERF", "GN", "GSD", "GUM", "PGM", "RP"]

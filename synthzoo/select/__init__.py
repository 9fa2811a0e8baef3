"""Selectors: choose which marginals to measure and measure them with calibrated noise."""

from .aim import AIM
from .indif import InDif
from .mst import MST
from .privmrf import PrivMRF
from .rappp import RAPpp

__all__ = ["AIM", "InDif", "MST", "PrivMRF", "RAPpp"]

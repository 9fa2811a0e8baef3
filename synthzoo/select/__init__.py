"""Selectors: choose which marginals to measure and measure them with calibrated noise.

Every module file in this folder registers itself (``@register``); the folder imports them all, so
a new module is one file, and the registered classes are exported here by their class names.
"""

from ..core.base import discover

__all__ = discover(__name__, globals())

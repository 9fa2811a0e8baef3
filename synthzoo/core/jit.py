"""numba's ``njit`` for the library's compiled kernels, cached on disk where a cache can be written.

Every kernel is compiled once and kept in numba's on-disk cache (``cache=True``): in ``NUMBA_CACHE_DIR``
when it is set, else next to the module (``__pycache__``), else in the user's cache folder.  An installation that
can write none of them -- a read-only package run by a user without a writable home, as a container
with ``USER nobody``, a service with a dynamic user or a read-only root file system has it -- made
numba refuse the decorator itself ("cannot cache function ...: no locator available"), so ``import
synthzoo`` failed.  There the kernels are compiled in every process instead (the first ``aim`` fit of
a process then spends about 10 s compiling), and one warning says how to keep them:
``NUMBA_CACHE_DIR`` set to a writable folder.
"""

from __future__ import annotations

import os
import sys
import warnings

from numba import njit as _njit

_warned = False
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _outside_level() -> int:
    """The ``stacklevel`` of the first caller outside synthzoo and the import machinery: the warning is
    raised while ``import synthzoo`` runs, and a line of ours would tell the reader nothing."""
    level, f = 1, sys._getframe(1)
    while f is not None and (f.f_code.co_filename.startswith(_PACKAGE) or f.f_code.co_filename.startswith("<")):
        f = f.f_back
        # warnings.warn does not count the import machinery's frames
        if f is not None and not ("importlib" in f.f_code.co_filename and "_bootstrap" in f.f_code.co_filename):
            level += 1
    return level


def cached_njit(**options):
    """A decorator: ``numba.njit(cache=True, **options)``, or the same without the disk cache (and a
    warning, once a process) where numba finds no folder it can write its cache to."""

    def decorate(fn):
        global _warned
        try:
            return _njit(cache=True, **options)(fn)
        except RuntimeError as e:  # numba's "no locator available": nowhere to write the cache
            if "locator" not in str(e):
                raise
            if not _warned:
                _warned = True
                warnings.warn(
                    "synthzoo: numba cannot write its cache of compiled kernels (not next to the package, not "
                    "in the home folder), so they are compiled again in every process (about 10 s at a "
                    "process's first aim fit); set NUMBA_CACHE_DIR to a writable folder to keep them",
                    RuntimeWarning, stacklevel=_outside_level())
            return _njit(**options)(fn)

    return decorate

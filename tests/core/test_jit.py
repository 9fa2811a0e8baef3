"""The compiled kernels where numba cannot write its disk cache (a read-only install run by a user without a
writable home: a container's ``USER nobody``, a read-only root file system)."""

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

pytest.importorskip("numba")


def test_a_kernel_compiles_without_its_disk_cache_where_no_cache_folder_can_be_written(monkeypatch):
    """numba refuses ``cache=True`` itself when it finds no folder to write to; the kernel is then compiled
    per process, with one warning a process that says how to keep it (``NUMBA_CACHE_DIR``)."""
    from numba.core import caching

    from synthzoo.core import jit

    monkeypatch.setattr(caching.CacheImpl, "_locator_classes", [])
    monkeypatch.delenv("NUMBA_CACHE_LOCATOR_CLASSES", raising=False)
    monkeypatch.setattr(caching.config, "CACHE_LOCATOR_CLASSES", "", raising=False)
    monkeypatch.setattr(jit, "_warned", False)

    def twice(x):
        return 2 * x

    def thrice(x):
        return 3 * x

    with pytest.warns(RuntimeWarning, match="NUMBA_CACHE_DIR"):
        f = jit.cached_njit(nogil=True)(twice)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the second kernel of the process says nothing more
        g = jit.cached_njit(nogil=True)(thrice)
    assert f(np.int64(4)) == 8 and g(np.int64(4)) == 12
    assert f._cache.__class__.__name__ == "NullCache"  # compiled, not cached
    with pytest.raises(RuntimeError, match="locator"):  # what the decorator did before
        from numba import njit

        njit(cache=True)(twice)


def test_synthzoo_imports_and_fits_where_numba_has_nowhere_to_write_its_cache():
    """``import synthzoo`` decorated its kernels with ``cache=True`` at import and failed there
    ("cannot cache function '_count_rows': no locator available"); now it imports, warns and fits."""
    code = """
import warnings
from numba.core import caching
caching.CacheImpl._locator_classes = []   # no folder numba could write its cache to
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    import synthzoo as sz
    from synthzoo.metrics import _distance_numba, _singling_numba, _transport_numba
print(sum("NUMBA_CACHE_DIR" in str(x.message) for x in w))
import numpy as np
from synthzoo.core.domain import Domain, EncodedData
codes = np.random.default_rng(0).integers(0, 3, size=(300_000, 2)).astype(np.int8)
data = EncodedData(codes, Domain(("a", "b"), (3, 3)))
print(int(data.project(("a", "b")).sum()))
"""
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "NUMBA_CACHE_LOCATOR_CLASSES")}
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600,
                       check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["1", "300000"]

"""Thread settings in one place.  On small machines OpenMP spin-waiting made torch and
scikit-learn 20-80x slower under load, so the command line, the benchmarks and the bench's child
processes run one thread per library unless the user set otherwise; the figures they print name
the settings.  The library itself leaves threads to the user."""

from __future__ import annotations

import os

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def single_thread_defaults() -> None:
    """Default every thread variable to 1 (a value the user set is kept), and cap thread pools that
    are already loaded (numpy's BLAS reads its variable when it loads)."""
    for k in THREAD_VARS:
        os.environ.setdefault(k, "1")
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - scikit-learn depends on it
        return
    threadpool_limits(int(os.environ["OMP_NUM_THREADS"]))


def thread_settings() -> str:
    """The thread variables and the CPU count, for every benchmark figure."""
    return ", ".join(f"{k}={os.environ.get(k, 'unset')}" for k in THREAD_VARS) + f"; cpus={os.cpu_count()}"

"""Test configuration. Thread settings go first: OpenMP spin-waiting on a 2-core machine made
torch and scikit-learn 20-80x slower when another process was busy."""

import os

for _k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_k, "1")
os.environ.setdefault("JAX_ENABLE_X64", "1")
os.environ.setdefault("JAX_ENABLE_COMPILATION_CACHE", "false")

from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

DATASETS = Path(os.environ.get("SYNTHZOO_DATASETS",
                               Path(__file__).resolve().parents[2] / "shared" / "datasets"))


def shared_dataset(name: str):
    """(frame, schema) of ../shared/datasets/<name>, or skip the test with the reason."""
    from synthzoo.core.schema import Schema

    folder = DATASETS / name
    if not (folder / "schema.json").exists():
        pytest.skip(f"shared dataset {name!r} not found at {folder} (set SYNTHZOO_DATASETS)")
    return pd.read_csv(folder / f"{name}.csv"), Schema.from_json(folder / "schema.json")


def process_alive(pid: int) -> bool:
    """Running (a zombie waiting for its reaper does not count)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return not Path("/proc").is_dir()  # gone meanwhile (Linux), or no /proc to ask


@pytest.fixture(scope="session")
def adult():
    return shared_dataset("adult")


@pytest.fixture(scope="session")
def hmeq():
    return shared_dataset("hmeq")


@pytest.fixture(scope="session")
def housing():
    return shared_dataset("housing")


@pytest.fixture
def mechanism_inputs(monkeypatch):
    """What reaches a noise mechanism: ``mechanism_inputs("gaussian")`` returns a list to which every exact
    value passed to ``synthzoo.core.privacy.mechanisms.gaussian`` from then on is appended (a float64 copy),
    the mechanism itself still running (a test's sensitivity check compares these between neighbours)."""
    import synthzoo.core.privacy.mechanisms as mech

    def spy_on(name: str) -> list:
        seen, real = [], getattr(mech, name)

        def spy(budget, values, *args, **kwargs):
            seen.append(np.asarray(values, dtype=np.float64).copy())
            return real(budget, values, *args, **kwargs)

        monkeypatch.setattr(mech, name, spy)
        return seen
    return spy_on

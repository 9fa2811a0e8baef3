"""The models on a GPU against the same machine's CPU (adult, 80/20 split, seed 0): fit and sampling
wall seconds, 2-way TVD against the held-out 20 %, and three checks a release on a GPU depends on.

    python benchmarks/bench_gpu.py --methods tabddpm,ctgan,aim --epochs 5 --cpu-epochs 1 --out gpu.csv

Each method runs on the CPU (``device="cpu"``, PGM ``engine="numpy"``) and on the GPU
(``device="auto"``, which a file loaded on a machine without CUDA resolves to the CPU; PGM
``engine`` from ``--gpu-engine``: ``auto``, which takes the torch engine on CUDA for a junction tree
of 2**18 cells or more and numpy below, ``torch`` or ``jax`` always).  Record models train ``--epochs`` epochs on the GPU and ``--cpu-epochs`` on the
CPU (the per-epoch column compares them; a fit's fixed costs are in it too); ``0`` keeps the
preset's own.  The checks, on the GPU's model:

* ``same_sample``: ``sample(2000, seed=1)`` twice gives the same rows (same fitted model, same seed);
* ``cpu_load``: the saved file loads in a process that sees no CUDA device and samples there; the
  column is the share of its rows equal to the GPU's sample with the same seed (float rounding
  differs between devices, so a category drawn at a boundary may differ);
* ``eps``: the epsilon spent, which must not depend on the device.

The DP noise is drawn on the CPU from the ledger's source and copied to the device, so nothing
secret comes from a GPU generator.  Thread settings, torch and the device are printed first.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

for _k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_k, "1")  # set them to the core count for a CPU reference that uses the machine
os.environ.setdefault("JAX_ENABLE_X64", "1")
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # jax would take 75 % of the GPU

import pandas as pd  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
EPOCH_KEYS = ("epochs", "vae_epochs", "diffusion_epochs")
_LOAD = """
import os, sys, warnings
warnings.simplefilter("ignore")
import torch, synthzoo as sz
assert not torch.cuda.is_available()
s = sz.Synthesizer.load(sys.argv[1])
s.sample(2000, seed=1).to_csv(sys.argv[2], index=False)
"""


def configure(preset: str, device: str, epochs: int, schema, epsilon: float | None, gpu_engine: str = "auto"):
    """The preset's synthesizer on ``device`` ("cpu" or "gpu"), with ``epochs`` epochs (0: its own)."""
    import synthzoo as sz

    cfg = sz.presets.preset_config(preset)
    model = dict(cfg["model"]) if isinstance(cfg["model"], dict) else {"name": cfg["model"]}
    params = sz.core.base.REGISTRY["model"][model["name"]]().get_params()
    if "device" in params:
        model["device"] = "cpu" if device == "cpu" else "auto"
    if "engine" in params:
        model["engine"] = "numpy" if device == "cpu" else gpu_engine
    keys = [k for k in EPOCH_KEYS if k in params] if epochs else []
    model.update({k: int(epochs) for k in keys})
    return sz.make(preset, epsilon=epsilon, schema=schema, seed=0, model=model), bool(keys)


def run(preset, device, epochs, train, test, schema, epsilon, tmp: Path, gpu_engine: str = "auto") -> dict:
    import torch

    from synthzoo.metrics import tvd_2way

    synth, epochs_set = configure(preset, device, epochs, schema, epsilon, gpu_engine)
    epochs = epochs if epochs_set else 0
    if device == "gpu" and torch.cuda.is_available():
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    synth.fit(train)
    t1 = time.perf_counter()
    fake = synth.sample(len(train))
    t2 = time.perf_counter()
    row = {"method": preset, "device": device, "epochs": epochs or "preset", "fit_s": t1 - t0,
           "sample_s": t2 - t1, "tvd_2way": tvd_2way(test, fake, schema), "eps": synth.privacy_spent()[0]}
    if epochs:
        row["fit_s_per_epoch"] = (t1 - t0) / epochs
    if device == "gpu":
        a, b = synth.sample(2000, seed=1), synth.sample(2000, seed=1)
        row["same_sample"] = bool(a.equals(b))
        path = tmp / f"{preset}.szm"
        synth.save(path)
        out = tmp / f"{preset}.csv"
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "JAX_PLATFORMS": "cpu"}
        r = subprocess.run([sys.executable, "-c", _LOAD, str(path), str(out)], env=env, capture_output=True,
                           text=True, check=False)
        if r.returncode:
            row["cpu_load"] = "error: " + (r.stderr.strip().splitlines() or ["?"])[-1][:160]
        else:
            c, g = (_cells(pd.read_csv(f)) for f in (out, _roundtrip(a, tmp / "a.csv")))
            row["cpu_load"] = float((c == g).all(axis=1).mean())
    return row


def _cells(df: pd.DataFrame):
    return df.astype(object).fillna("<NA>").astype(str).values  # missing equals missing


def _roundtrip(df: pd.DataFrame, path: Path) -> Path:
    df.to_csv(path, index=False)  # both sides through CSV, so dtypes compare alike
    return path


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--methods", default="tabddpm,ctgan,tvae,dp-tabddpm,dp-ctgan,realtabformer,tldm,aim")
    p.add_argument("--epsilon", type=float, default=1.0, help="for the DP presets")
    p.add_argument("--epochs", type=int, default=5, help="GPU epochs (0: the preset's own)")
    p.add_argument("--cpu-epochs", type=int, default=1, help="CPU epochs (0: the preset's own)")
    p.add_argument("--devices", default="cpu,gpu")
    p.add_argument("--gpu-engine", default="auto", choices=("auto", "torch", "jax"),
                   help="PGM engine of the GPU rows: auto (torch on CUDA where the junction tree is large), "
                        "torch or jax always")
    p.add_argument("--out", help="CSV of the table")
    a = p.parse_args(argv)
    import warnings

    import torch

    import synthzoo as sz
    from synthzoo._threads import thread_settings

    warnings.simplefilter("ignore")
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    print(f"# {thread_settings()}; torch threads {torch.get_num_threads()}; torch {torch.__version__}; "
          f"GPU {gpu}; python {sys.version.split()[0]}", flush=True)
    df, schema = sz.datasets.load_shared("adult")
    train, test = sz.datasets.train_test_split(df, test_size=0.2, seed=0)
    non_private = {"ctgan", "tvae", "tabddpm", "tldm", "realtabformer"}
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for m in [x for x in a.methods.split(",") if x]:
            eps = None if m in non_private else a.epsilon
            for dev in a.devices.split(","):
                ep = a.cpu_epochs if dev == "cpu" else a.epochs
                try:
                    row = run(m, dev, ep, train, test, schema, eps, Path(d), a.gpu_engine)
                except Exception as e:  # noqa: BLE001 - a benchmark row records the failure and goes on
                    row = {"method": m, "device": dev, "error": f"{type(e).__name__}: {e}"[:300]}
                rows.append(row)
                print(json.dumps(row, default=str), flush=True)
    res = pd.DataFrame(rows)
    with pd.option_context("display.width", 220, "display.max_columns", 20):
        print(res.to_string(index=False, float_format=lambda x: f"{x:.4f}"))
    if a.out:
        res.to_csv(a.out, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())

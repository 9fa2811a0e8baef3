"""Run one peer library's synthesizer in the benchmark's own environment (never a project
dependency): read a training CSV, fit, sample, write the synthetic CSV, print one JSON line.

    .bench-venv/bin/python benchmarks/peers/run_peer.py METHOD TRAIN.csv OUT.csv --epochs 50 [--epsilon 1]

METHOD: sdv-ctgan, sdv-tvae (the `ctgan` package of sdv-dev), snsynth-dpctgan, snsynth-pategan
(`smartnoise-synth`), rtf-realtabformer (the `realtabformer` package, non-private).  The categorical
columns come from a JSON list (--discrete).

rtf-realtabformer builds its GPT-2 from a config (nothing downloaded; HF_HUB_OFFLINE=1 is set) at the
size of our `realtabformer` preset: 2 layers of width 128, 4 heads, batches of 512 (128 x its 4
gradient-accumulation steps), learning rate 1e-3, a fixed number of epochs (``n_critic=0``: no DCR
early stopping), sampled 1,024 rows a batch.  It needs its own environment (its pins differ):

    python3 -m venv /work/venvs/rtf && /work/venvs/rtf/bin/pip install torch==2.13.0
    /work/venvs/rtf/bin/pip install realtabformer lightgbm "transformers>=4.46,<5" "pandas<3" "datasets<4.5"

(realtabformer 0.2.4 passes ``overwrite_output_dir``, which transformers 5 removed, and fails on
pandas 3's string columns; datasets 5 needs a huggingface-hub that transformers 4 refuses.)
"""

import argparse
import json
import os
import time

for _k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_k, "1")

import pandas as pd  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("method")
    p.add_argument("train")
    p.add_argument("out")
    p.add_argument("--epochs", type=int, default=50)
    p.add_argument("--epsilon", type=float, default=None)
    p.add_argument("--discrete", required=True, help="JSON list of categorical columns")
    p.add_argument("--n", type=int, default=None)
    p.add_argument("--seed", type=int, default=0, help="seeds torch and numpy (the peers' own randomness)")
    a = p.parse_args()
    import numpy as np
    import torch

    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    torch.manual_seed(a.seed)
    np.random.seed(a.seed)
    df = pd.read_csv(a.train)
    discrete = json.loads(a.discrete)
    n = a.n or len(df)
    t0 = time.process_time(), time.perf_counter()
    if a.method == "rtf-realtabformer":
        import tempfile

        os.environ["HF_HUB_OFFLINE"] = "1"
        from realtabformer import REaLTabFormer
        from transformers import GPT2Config

        work = tempfile.mkdtemp()
        model = REaLTabFormer(model_type="tabular", tabular_config=GPT2Config(n_layer=2, n_embd=128, n_head=4),
                              epochs=a.epochs, batch_size=128, random_state=a.seed, checkpoints_dir=f"{work}/ck",
                              samples_save_dir=f"{work}/s", full_save_dir=f"{work}/f",
                              learning_rate=1e-3, report_to="none", save_strategy="no", eval_strategy="no",
                              load_best_model_at_end=False, use_cpu=True)
        model.fit(df, n_critic=0, device="cpu")
    elif a.method in ("sdv-ctgan", "sdv-tvae"):
        from ctgan import CTGAN, TVAE

        model = (CTGAN if a.method == "sdv-ctgan" else TVAE)(epochs=a.epochs)
        model.set_random_state(a.seed)
        model.fit(df, discrete_columns=discrete)
    else:
        from snsynth import Synthesizer

        name = "dpctgan" if a.method == "snsynth-dpctgan" else "pategan"
        kw = {"epochs": a.epochs} if name == "dpctgan" else {}
        model = Synthesizer.create(name, epsilon=a.epsilon, **kw)
        cont = [c for c in df.columns if c not in discrete]
        model.fit(df, categorical_columns=discrete, continuous_columns=cont, preprocessor_eps=0.1 * a.epsilon,
                  nullable=True)
    t1 = time.process_time(), time.perf_counter()
    fake = model.sample(n_samples=n, gen_batch=1024, device="cpu") if a.method == "rtf-realtabformer" else model.sample(n)
    fake.to_csv(a.out, index=False)
    print(json.dumps({"method": a.method, "fit_cpu_s": t1[0] - t0[0], "fit_wall_s": t1[1] - t0[1],
                      "sample_wall_s": time.perf_counter() - t1[1]}))


if __name__ == "__main__":
    main()

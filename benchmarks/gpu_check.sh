#!/bin/bash
# The GPU check (README, "Every torch model takes `device`"): the model, conformance, model-file and sampling
# tests with CUDA visible, then benchmarks/bench_gpu.py (each preset on the GPU against the same machine's
# CPU) and benchmarks/bench_pgm_engines.py (the jitted PGM engine).  Run from the repository root on a machine
# with a CUDA build of torch (and jax with CUDA for the PGM engine):
#
#     SYNTHZOO_DATASETS=/path/to/shared/datasets bash benchmarks/gpu_check.sh [all|tests|bench|pgm]
#
# pgm: tests/models/test_pgm.py with CUDA visible, the torch engine eager against its CUDA graph
# (bench_pgm_torch.py, with a profile), the PGM engines (torch on CUDA against numba, PGM_ITERS
# iterations, default 300) on models of KS (default 3 10) chained 4-way marginals, then
# bench_scale.py's aim on adult and aim / privmrf on adult resampled to 3 million rows with engine="auto"
# (SCALE_T seconds each, default 240).
#
# WHEELS=folder installs the wheels there first (into /tmp/site, put on PYTHONPATH) for a machine with no
# package index; OUT=folder (default gpu_out) gets the logs.  NW (test workers, default 14), TEST_T, BENCH_T
# and PGM_T (seconds) bound each part; METHODS picks bench_gpu's presets.
set -u
T0=$(date +%s)
OUT=${OUT:-gpu_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false JAX_ENABLE_X64=1 JAX_ENABLE_COMPILATION_CACHE=false \
  MPLBACKEND=Agg
if [ -n "${WHEELS:-}" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    "$WHEELS"/*.whl > "$OUT/install.txt" 2>&1 || { cat "$OUT/install.txt"; exit 1; }
  export PYTHONPATH=/tmp/site:$PWD
fi
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; nproc; python3 -c "
import sys, torch, jax, pandas, numpy
print(sys.version); print('torch', torch.__version__, torch.cuda.is_available(), torch.version.cuda)
print('jax', jax.__version__, jax.devices()); print('pandas', pandas.__version__, 'numpy', numpy.__version__)"
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"; echo "setup $(( $(date +%s) - T0 )) s"
MODE=${1:-all}
if [ "$MODE" = all ] || [ "$MODE" = tests ]; then
  OMP_NUM_THREADS=1 timeout "${TEST_T:-200}" python3 -m pytest tests/models tests/test_conformance.py \
    tests/test_model_files.py tests/test_sampling.py -n "${NW:-14}" -q -p no:cacheprovider --timeout 170 -rfE \
    > "$OUT/tests.txt" 2>&1
  echo "tests rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "passed|failed|^FAILED|^ERROR" "$OUT/tests.txt" | tail -40
fi
if [ "$MODE" = all ] || [ "$MODE" = bench ]; then
  N=$(nproc)
  OMP_NUM_THREADS=$N MKL_NUM_THREADS=$N OPENBLAS_NUM_THREADS=$N timeout "${BENCH_T:-200}" python3 benchmarks/bench_gpu.py \
    --methods "${METHODS:-tabddpm,ctgan,dp-ctgan,tvae,realtabformer,mst,aim,dp-tabddpm,tldm}" --epochs 5 --cpu-epochs 1 \
    --out "$OUT/gpu.csv" > "$OUT/bench.txt" 2>&1
  echo "bench rc=$? at $(( $(date +%s) - T0 )) s"; tail -14 "$OUT/bench.txt"
  OMP_NUM_THREADS=1 timeout "${PGM_T:-90}" python3 benchmarks/bench_pgm_engines.py 10 1000 torch numpy jax \
    > "$OUT/pgm.txt" 2>&1
  echo "pgm rc=$? at $(( $(date +%s) - T0 )) s"; tail -8 "$OUT/pgm.txt"
fi
if [ "$MODE" = pgm ]; then
  OMP_NUM_THREADS=1 timeout "${TEST_T:-200}" python3 -m pytest tests/models/test_pgm.py -n 4 -q -p no:cacheprovider \
    -rfE > "$OUT/tests_pgm.txt" 2>&1
  echo "pgm tests rc=$? at $(( $(date +%s) - T0 )) s"; grep -E "passed|failed|^FAILED|^ERROR" "$OUT/tests_pgm.txt" | tail
  OMP_NUM_THREADS=1 timeout "${PGM_T:-90}" python3 benchmarks/bench_pgm_torch.py 3 300 --profile 20 > "$OUT/pgm_torch.txt" 2>&1
  echo "pgm torch eager/graph rc=$? at $(( $(date +%s) - T0 )) s"; grep '^{' "$OUT/pgm_torch.txt"
  for K in ${KS:-3 10}; do  # torch first: numba alone took over 80 s for 1,000 iterations at 3 million cells
    OMP_NUM_THREADS=1 timeout "${PGM_T:-90}" python3 benchmarks/bench_pgm_engines.py $K ${PGM_ITERS:-300} torch numpy \
      >> "$OUT/pgm.txt" 2>&1
    echo "pgm K=$K rc=$? at $(( $(date +%s) - T0 )) s"
  done
  grep '^{' "$OUT/pgm.txt"
  for run in "adult aim" "adult aim" "resampled aim --rows 3000000" "resampled privmrf --rows 3000000"; do
    OMP_NUM_THREADS=1 timeout "${SCALE_T:-240}" python3 benchmarks/bench_scale.py $run >> "$OUT/scale.txt" 2>&1
    echo "scale $run rc=$? at $(( $(date +%s) - T0 )) s"; grep '^{' "$OUT/scale.txt" | tail -1
  done
fi

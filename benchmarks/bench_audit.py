"""Print the empirical DP audit table: every DP mechanism of synthzoo, run through its real code
path on neighbouring inputs, with the Clopper-Pearson lower bound on epsilon next to the claim --
for the real mechanism (must stay at or below the claim) and for deliberately broken variants
(noise halved / quartered, noise replayed from a known seed, partition selection's threshold
without its "+1"; must exceed it).  See synthzoo/testing/mechanisms.py for the design of each audit.

    OMP_NUM_THREADS=1 python benchmarks/bench_audit.py                    # thorough sizes, 99 % confidence
    OMP_NUM_THREADS=1 python benchmarks/bench_audit.py --fast             # the test suite's sizes, 95 %
    OMP_NUM_THREADS=1 python benchmarks/bench_audit.py --only privtree exponential
    OMP_NUM_THREADS=1 python benchmarks/bench_audit.py --skip mst_e2e     # leave out the slowest (~4 min)

Columns: claim eps / delta -- what the real mechanism promises (zCDP claims converted at delta 1e-5
by the ledger's RDP accountant; pure-DP claims at delta 0); calls/side -- mechanism runs on each
input; draws/side -- independent samples used for the bound (vectorised audits take many per call;
audits that choose a threshold spend half the draws on that choice, not counted here);
conf -- the confidence of the bound; "> claim" -- whether the bound refutes the claim.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

for _k in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_k, "1")
os.environ.setdefault("JAX_ENABLE_X64", "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from synthzoo._threads import thread_settings
from synthzoo.testing.mechanisms import AUDITS, NOT_DETECTABLE, REAL, format_table, run_audit


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fast", action="store_true", help="the test suite's sizes (default: thorough)")
    ap.add_argument("--confidence", type=float, default=None, help="default 0.99 thorough, 0.95 fast")
    ap.add_argument("--only", nargs="+", choices=sorted(AUDITS), help="run these audits only")
    ap.add_argument("--skip", nargs="+", choices=sorted(AUDITS), default=[], help="leave these out")
    args = ap.parse_args(argv)
    conf = args.confidence if args.confidence is not None else (0.95 if args.fast else 0.99)
    names = [n for n in (args.only or AUDITS) if n not in args.skip]

    print(f"synthzoo DP audit table ({'fast' if args.fast else 'thorough'} sizes, {100 * conf:g}% confidence; "
          f"{thread_settings()})", flush=True)
    rows, bad, t_all = [], [], time.perf_counter()
    for name in names:
        for variant in AUDITS[name][1]:
            t = time.perf_counter()
            row = run_audit(name, variant, thorough=not args.fast, confidence=conf)
            rows.append(row)
            blind = (name, variant) in NOT_DETECTABLE
            expect = "<= claim" if variant == REAL else ("not expected to be caught" if blind else "> claim")
            ok = (not row.refuted) if variant == REAL else (row.refuted or blind)
            if not ok:
                bad.append(row)
            print(f"  {name:<21} {variant:<16} {time.perf_counter() - t:7.1f}s  {row.result}  "
                  f"[{expect}: {'ok' if ok else 'FAILED'}]", flush=True)
    print()
    print(format_table(rows))
    print(f"\n{len(rows)} audits in {time.perf_counter() - t_all:.0f}s; "
          f"{'all as expected' if not bad else f'{len(bad)} NOT as expected'}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())

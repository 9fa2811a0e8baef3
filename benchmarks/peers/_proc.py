"""What the marginal-method peer runners of this folder share: the command line that
``benchmarks/bench_scale.py --peer`` calls them with, and their process measurements.  They run in
the peers' own environments, where synthzoo is not installed (so ``synthzoo.isolation.peak_rss_mb``
is repeated here, once for all of them)."""

import argparse
import resource


def parser() -> argparse.ArgumentParser:
    """``METHOD TRAIN.csv SCHEMA.json OUT.csv --epsilon --delta [--n] [--progress FILE]``."""
    p = argparse.ArgumentParser()
    p.add_argument("method", choices=["aim", "mst"])
    p.add_argument("train")
    p.add_argument("schema")
    p.add_argument("out")
    p.add_argument("--epsilon", type=float, default=1.0)
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument("--n", type=int, default=None, help="rows to sample (default: as many as the training rows)")
    p.add_argument("--progress", default=None, help="a file for one JSON line per round, where the runner can")
    return p


def peak_rss_mb() -> float:
    """This process's own peak resident memory in MB (Linux's VmHWM: ``ru_maxrss`` would carry over the
    peak of the parent that forked it, which fitted our preset first)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_s() -> float:
    """CPU seconds of this process and its waited-for children."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime + ch.ru_utime + ch.ru_stime

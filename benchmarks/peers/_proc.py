"""Process measurements for the peer runners of this folder, which run in the peers' own
environments where synthzoo is not installed (so ``synthzoo.isolation.peak_rss_mb`` is repeated
here, once for all of them)."""

import resource


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

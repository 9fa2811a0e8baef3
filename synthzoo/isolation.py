"""Calls in a separate Python process, with a hard time limit and their own CPU and memory
figures: what the benchmark grid (one process per cell) and the tuner (one process reused across
trials) both need, in one place.

A :class:`Worker` is a fresh interpreter (``python -c``, like multiprocessing's "spawn": no fork of
this process's JAX/torch threads, no re-import of the caller's ``__main__``), connected by a socket
pair with multiprocessing's :class:`Connection`.  It runs importable functions by name.  A call past
its ``timeout`` is stopped with SIGKILL, which interrupts any native call (a long jax, numpy or
torch kernel); a worker that dies is reported as crashed.  The worker exits when this process
dies (``PR_SET_PDEATHSIG`` on Linux, a watcher thread elsewhere), so a killed parent leaves no
orphan.  A function may talk back during the call through the ``ask`` callable it receives when
the caller passes ``on_message`` (the tuner's pruning questions).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import os
import pickle
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

#: "module:function" called once in each worker before its first call (tests use it to make a call
#: hang or to record what it read; a debugging hook, not an API).
WORKER_INIT_ENV = "SYNTHZOO_WORKER_INIT"
START_TIMEOUT = 300.0  # seconds for a worker to import and say it is ready

_SETUP: dict = {}


def setup() -> Any:
    """In a worker: the object the parent passed as ``setup`` (sent once, shared by every call)."""
    return _SETUP.get("value")


@dataclass
class Outcome:
    """What one call gave: ``status`` is "ok", "error", "timeout" or "crashed"; ``value`` the return
    value; ``error`` the exception raised in the worker (``traceback`` its text); ``cpu_s`` the
    user + system seconds of the call, ``peak_rss_mb`` the worker's peak resident memory (VmHWM:
    interpreter and imports included, as a separate script is measured) and ``base_rss_mb`` that
    peak before the call."""

    status: str
    value: Any = None
    reason: str = ""
    error: BaseException | None = None
    traceback: str = ""
    wall_s: float = float("nan")
    cpu_s: float = float("nan")
    peak_rss_mb: float = float("nan")
    base_rss_mb: float = float("nan")
    extra: dict = field(default_factory=dict)

    def raise_error(self):
        """Re-raise the worker's exception here, with its traceback as the cause."""
        cause = RuntimeError("raised in the worker process:\n" + self.traceback)
        err = self.error if isinstance(self.error, BaseException) else RuntimeError(self.reason)
        raise err from cause


class Worker:
    """A separate interpreter that runs functions by name (see the module docstring).

    Parameters
    ----------
    setup : object, optional
        Sent once (pickled) and readable in the worker through :func:`setup`: data every call shares.

    Examples
    --------
    >>> with Worker() as w:                                                  # doctest: +SKIP
    ...     out = w.call("synthzoo.bench.fit_sample", args, timeout=600)
    ...     print(out.status, out.cpu_s, out.peak_rss_mb)
    """

    def __init__(self, setup: Any = None):
        self._setup = setup
        self.proc = None
        self.conn = None

    def __enter__(self) -> "Worker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _start(self) -> None:
        from multiprocessing.connection import Connection

        ours, theirs = socket.socketpair()
        code = (f"import json, sys; sys.path[:] = json.loads(sys.argv[3]); from {__name__} import _worker_main; "
                "_worker_main(int(sys.argv[1]), int(sys.argv[2]))")
        with theirs:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", code, str(theirs.fileno()), str(os.getpid()),
                 json.dumps([str(p) for p in sys.path])], pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL)
        self.conn = Connection(ours.detach())
        try:
            self.conn.send(("setup", self._setup))
            if not self.conn.poll(START_TIMEOUT):
                raise EOFError
            msg = self.conn.recv()
            assert msg[0] == "ready", msg
        except (EOFError, OSError):
            code = self.kill()
            raise RuntimeError(f"the worker process did not start (exit code {code}); its error, if any, is "
                               "printed above") from None

    def call(self, target: str, args: tuple = (), timeout: float | None = None,
             on_message: Callable[[Any], Any] | None = None) -> Outcome:
        """Run ``target`` ("module:function" or "module.function") with ``args`` in the worker.

        ``on_message(payload)`` answers what the function sends with ``ask(payload)`` (it is
        given ``ask=`` only when ``on_message`` is set).  The time limit counts from the call, not
        the worker's start-up; past it the worker is killed and the next call starts a new one.
        """
        if self.proc is None:
            self._start()
        deadline = None if timeout is None else time.monotonic() + timeout
        t0 = time.perf_counter()
        out = Outcome("crashed")
        try:
            self.conn.send(("call", target, args, on_message is not None))
            while True:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                if not self.conn.poll(left):
                    self.kill()
                    out = Outcome("timeout", reason=f"no result within its time limit of {timeout:g}s; "
                                                    "the process was killed")
                    break
                msg = self.conn.recv()
                if msg[0] == "ask":
                    self.conn.send(on_message(msg[1]))
                    continue
                status, value, tb, base, peak, cpu, caught = msg[1:]
                _warn_again(caught)  # the call's warnings, shown here as this process shows its own
                if status == "ok":
                    out = Outcome("ok", value=value)
                else:
                    err = None
                    with contextlib.suppress(Exception):
                        err = pickle.loads(value) if value is not None else None
                    last = tb.strip().splitlines()[-1] if tb.strip() else "error in the worker process"
                    out = Outcome("error", reason=last, error=err, traceback=tb)
                out.base_rss_mb, out.peak_rss_mb, out.cpu_s = base, peak, cpu
                break
        except (EOFError, OSError):
            code = self.kill()
            out = Outcome("crashed", reason=f"the worker process died without a result (exit code {code})")
        except BaseException:
            self.kill()  # interrupted here (Ctrl-C, a storage error) while the worker may be mid-call
            raise
        out.wall_s = time.perf_counter() - t0
        return out

    def kill(self):
        """Stop the worker now; its exit code."""
        if self.proc is None:
            return None
        with contextlib.suppress(OSError):
            self.proc.kill()
        code = self.proc.wait()
        self.conn.close()
        self.proc = self.conn = None
        return code

    def close(self) -> None:
        """Ask the worker to stop, and kill it if it does not."""
        if self.proc is None:
            return
        with contextlib.suppress(OSError):
            self.conn.send(("stop",))
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)
        self.kill()


def _warn_again(caught) -> None:
    """Issue here the warnings a worker's call raised, ``(category module, category name, message, file,
    line)`` each: this process's filters and display (the command line's) apply to them."""
    for module, name, message, filename, lineno in caught:
        category = UserWarning
        with contextlib.suppress(Exception):
            found = importlib.import_module(module)
            for part in name.split("."):
                found = getattr(found, part)
            if isinstance(found, type) and issubclass(found, Warning):
                category = found
        warnings.warn_explicit(message, category, filename, lineno)


def run_isolated(target: str, args: tuple = (), timeout: float | None = None) -> Outcome:
    """``target(*args)`` in a fresh worker of its own (so its peak memory is its own), then stopped."""
    with Worker() as w:
        return w.call(target, args, timeout)


# ------------------------------------------------------------------------------- worker side
def peak_rss_mb() -> float:
    """Peak resident memory of this process in MB (Linux's VmHWM; ``ru_maxrss`` elsewhere)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB (macOS: bytes)


def cpu_seconds() -> float:
    """User + system CPU seconds of this process so far."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _resolve(target: str) -> Callable:
    mod, sep, name = target.partition(":")
    if not sep:
        mod, _, name = target.rpartition(".")
    obj = importlib.import_module(mod)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def _exit_with_parent(parent_pid: int) -> None:
    """End this worker when the parent dies (a killed tuner or grid leaves no orphan)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            import ctypes

            ctypes.CDLL(None).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG: survives native calls

    def watch():
        while os.getppid() == parent_pid:
            time.sleep(1.0)
        os._exit(1)

    if os.getppid() != parent_pid:
        os._exit(1)
    threading.Thread(target=watch, name="synthzoo-parent-watch", daemon=True).start()


def _worker_main(fd: int, parent_pid: int) -> None:
    """Entry point of a worker: read the setup, then run calls until told to stop."""
    from multiprocessing.connection import Connection

    from ._threads import single_thread_defaults

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the parent, which stops this process
    _exit_with_parent(parent_pid)
    single_thread_defaults()
    conn = Connection(fd)
    try:
        _, _SETUP["value"] = conn.recv()
        hook = os.environ.get(WORKER_INIT_ENV)
        if hook:
            _resolve(hook)()
        conn.send(("ready",))
        while True:
            msg = conn.recv()
            if msg[0] != "call":
                return
            _, target, args, talks = msg

            def ask(payload):
                conn.send(("ask", payload))
                return conn.recv()

            base, cpu0 = peak_rss_mb(), cpu_seconds()
            # the call's warnings go back with its result, to be shown by the caller's process (the command
            # line's one line each, said once), not printed here with their source lines
            with warnings.catch_warnings(record=True) as caught:
                try:
                    value = _resolve(target)(*args, **({"ask": ask} if talks else {}))
                    reply = ("ok", value, "")
                except Exception as e:  # noqa: BLE001 - sent back; the caller decides
                    try:
                        payload = pickle.dumps(e)
                    except Exception:  # noqa: BLE001 - an exception that does not pickle
                        payload = None
                    reply = ("error", payload, traceback.format_exc())
            sent = [(w.category.__module__, w.category.__qualname__, str(w.message), w.filename, w.lineno)
                    for w in caught]
            conn.send(("result", *reply, base, peak_rss_mb(), cpu_seconds() - cpu0, sent))
    except (EOFError, OSError):  # the parent closed the connection or died
        return

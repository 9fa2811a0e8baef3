"""Optuna RDB storage in one place: what the tuner (:mod:`tuning`) and the distributed ablation grid
(:mod:`synthzoo.bench.distributed`) both open -- a SQLite file, PostgreSQL or MySQL URL with
heartbeats, so a worker killed mid-trial leaves a trial that any other worker marks failed (at
once on the same host, whose dead process id it sees; elsewhere after the grace period) and
re-enqueues with its parameters."""

from __future__ import annotations

import contextlib
import os
import random
import socket
import time
import warnings
from pathlib import Path

from .core.errors import ConfigError


def rdb_storage(storage, heartbeat_interval=None, grace_period=None, retry: bool = True):
    """An RDB storage for ``storage`` (URL, file path, or an optuna storage object, used as is).
    ``retry``: re-enqueue a dead worker's trial with its parameters (off in accounted mode, whose
    runs must each draw a fresh configuration; the dead run still counts)."""
    import optuna

    url = storage
    if not isinstance(url, str):
        return url  # an optuna storage object
    if not url.startswith(("sqlite:", "postgresql", "mysql")):
        if "://" in url:
            raise ConfigError(f"storage {redact(url)!r}: unsupported kind of database "
                              f"{url.split('://', 1)[0]!r}; give a SQLite file (path or sqlite:///file.db), "
                              "postgresql://user@host/db or mysql://user@host/db")
        url = f"sqlite:///{Path(url).resolve()}"  # a plain file path
    url = pg_driver(url)
    _check_sqlite_path(url)
    with storage_errors(url, storage):
        from sqlalchemy.engine import make_url

        try:
            make_url(url).port  # noqa: B018 - parsed lazily: a port that is not a number raises here
        except ValueError as e:
            raise ConfigError(f"storage {redact(storage)!r}: not a database URL SQLAlchemy can read "
                              f"({_hide(e, url)})") from None
    kw = {}
    if heartbeat_interval:
        # a worker killed mid-trial leaves a RUNNING trial; the heartbeat lets any later worker mark
        # it failed and re-enqueue its parameters, so the study stays resumable
        kw = {"heartbeat_interval": int(heartbeat_interval), "grace_period": int(grace_period or 3 * heartbeat_interval)}
        if retry:
            kw.update(_retry_callback_kw())
    engine = {"pool_pre_ping": True} if url.startswith("postgresql") else None
    if url.startswith("sqlite:"):  # several local workers write to one file: wait for its lock
        engine = {"connect_args": {"timeout": 60}}
    for attempt in range(CREATE_TRIES):
        try:
            with storage_errors(url, storage), warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)  # heartbeat: stable
                rdb = optuna.storages.RDBStorage(url, engine_kwargs=engine, **kw)
            break
        except ConfigError as e:
            # two workers opening a fresh storage at once both find it empty and both create Optuna's tables
            # and version rows: the second one's CREATE or INSERT fails.  The first one's tables are there
            # now, so opening again succeeds (Optuna then checks the schema version, which the first wrote).
            if attempt == CREATE_TRIES - 1 or not _creation_race(e.__cause__):
                raise
            time.sleep(0.1 * (attempt + 1) + random.random() * 0.2)
    if url.startswith("sqlite:"):
        serialize_sqlite(rdb.engine)
    return rdb


CREATE_TRIES = 6  # opening a fresh storage: tries while another worker creates the same tables


def _creation_race(error) -> bool:
    """Whether ``error`` (SQLAlchemy's) is what a worker gets when another one creates a fresh storage's
    tables at the same moment: a duplicate version row or type (IntegrityError), or a table or type that
    exists already or a locked file (OperationalError; PostgreSQL's DuplicateTable/DuplicateObject come
    as ProgrammingError)."""
    from sqlalchemy import exc

    if isinstance(error, exc.IntegrityError):
        return True
    text = str(getattr(error, "orig", error)).lower()
    return (isinstance(error, (exc.OperationalError, exc.ProgrammingError))
            and ("already exists" in text or "locked" in text))


def _check_sqlite_path(url: str) -> None:
    """A SQLite storage's file: its folder must exist and the path must not be a folder (SQLite says
    only "unable to open database file")."""
    if not url.startswith("sqlite:///") or url == "sqlite:///:memory:" or "mode=memory" in url:
        return
    path = Path(url[len("sqlite:///"):].split("?", 1)[0])
    if path.is_dir():
        raise ConfigError(f"storage {url!r}: {path} is a folder, not a database file; name a file in it "
                          f"(e.g. {path / 'study.db'})")
    if not path.parent.is_dir():
        raise ConfigError(f"storage {url!r}: the folder {path.parent} does not exist; create it or name a file "
                          "in an existing folder")


@contextlib.contextmanager
def storage_errors(url: str, given: str | None = None, during: bool = False):
    """Turn what the database layer raises while opening or reading the storage ``url`` (a malformed URL,
    an unreachable server, an unwritable file, a missing driver) into a :class:`ConfigError` that names
    the URL without its password, instead of SQLAlchemy's traceback.  ``during``: the storage was open
    and stopped answering while a study ran (a server restarted, a file removed or made read-only)."""
    from sqlalchemy import exc

    shown = redact(given or url)  # the URL as the user gave it (``url`` may name the driver)
    try:
        yield
    except exc.ArgumentError as e:  # a URL SQLAlchemy cannot parse, or a dialect it does not know
        raise ConfigError(f"storage {shown!r}: not a database URL SQLAlchemy can read ({_hide(e, url)})") from e
    except exc.SQLAlchemyError as e:
        why = _hide(getattr(e, "orig", None) or e, url)
        if during:
            raise ConfigError(f"storage {shown!r} stopped answering during the study: {why}. The trials it "
                              "recorded before are kept there; run the same command again to resume") from e
        if url.startswith("sqlite:") and "unable to open" in why:
            why += " (is the folder writable?)"
        raise ConfigError(f"storage {shown!r}: cannot open it: {why}") from e
    except ImportError as e:  # the database driver (SQLAlchemy's import, or Optuna's message about it)
        raise ConfigError(f"storage {shown!r}: its database driver is not installed ({_hide(e, url)}); install "
                          "it (PostgreSQL: psycopg or psycopg2, MySQL: pymysql)") from e


def _hide(error, url: str) -> str:
    """``error``'s message on one line, without the URL's password wherever it appears."""
    import re

    text = " ".join(str(error).split())
    text = re.sub(r"\(Background on this error at: [^)]*\)", "", text).strip()
    secrets = set()
    m = re.match(r"[^:]+://[^:/@]+:([^/]*)@", url)
    if m and m.group(1):
        secrets.add(m.group(1))
    with contextlib.suppress(Exception):
        from sqlalchemy.engine import make_url

        secrets.add(make_url(url).password or "")
    for secret in sorted(secrets - {""}, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def serialize_sqlite(engine) -> None:
    """Make every transaction on a SQLite engine ``BEGIN IMMEDIATE`` (SQLAlchemy's pysqlite recipe).

    Optuna pops an enqueued trial by reading that it is WAITING and then writing RUNNING, under a
    ``SELECT ... FOR UPDATE`` that SQLite ignores; and pysqlite opens its transaction only at the
    write, after the read.  Two workers could both read WAITING and both run the trial (measured: 19
    to 23 of 200 enqueued trials popped twice by four processes).  With the write lock taken at the
    start of each transaction, read and write are one step and a trial is popped once."""
    from sqlalchemy import event

    @event.listens_for(engine, "connect")
    def _no_lazy_begin(dbapi_connection, _record):
        dbapi_connection.isolation_level = None  # pysqlite would issue its own (deferred) BEGIN

    @event.listens_for(engine, "begin")
    def _begin_immediate(connection):
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    engine.dispose()  # connections opened before the listeners (optuna's schema check) are dropped


def redact(url: str) -> str:
    """The storage URL without its password (it goes into saved metadata)."""
    import re

    return re.sub(r"(//[^:/@]+):[^/]*@", r"\1:***@", url)  # up to the last @ before the path


def fail_dead_local_trials(study, retry: bool = True) -> None:
    """Mark FAIL the running trials of workers on this host whose process is gone (a killed run),
    so a resumed study re-runs them at once instead of waiting for the heartbeat grace period
    (``retry=False``, accounted mode: failed only; a run that started still counts)."""
    import optuna

    host = socket.gethostname()
    for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)):
        w_host, _, pid = str(t.user_attrs.get("worker", "")).rpartition(":")
        if w_host != host or not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            try:
                study._storage.set_trial_state_values(t._trial_id, state=optuna.trial.TrialState.FAIL)
            except optuna.exceptions.UpdateFinishedTrialError:
                continue  # another worker saw it first and failed (and re-enqueued) it
            if retry:  # re-enqueued with its parameters, as the heartbeat's retry callback does
                retry_callback(optuna)[1](study, study._storage.get_trial(t._trial_id))
        except PermissionError:
            pass  # alive, another user's


def finished_states():
    import optuna

    return (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.PRUNED)


def retry_callback(optuna):
    """Optuna's callback that re-enqueues a stale trial's parameters (renamed in Optuna 4.9)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "experimental" notice
        if hasattr(optuna.storages, "RetryHeartbeatStaleTrialCallback"):
            return "heartbeat_stale_trial_callback", optuna.storages.RetryHeartbeatStaleTrialCallback(max_retry=1)
        return "failed_trial_callback", optuna.storages.RetryFailedTrialCallback(max_retry=1)


def _retry_callback_kw() -> dict:
    import optuna

    name, cb = retry_callback(optuna)
    return {name: cb}


def pg_driver(url: str) -> str:
    """SQLAlchemy 2.1 reads a bare ``postgresql://`` as psycopg 3; use psycopg2 when only it is installed."""
    if not url.startswith("postgresql://"):
        return url
    import importlib.util

    if importlib.util.find_spec("psycopg") is None and importlib.util.find_spec("psycopg2") is not None:
        return "postgresql+psycopg2://" + url[len("postgresql://"):]
    return url

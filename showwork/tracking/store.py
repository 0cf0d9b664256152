"""An MLflow store opened, created or migrated safely, and checked with one cheap call.

A SQLite store is created or migrated under a file lock (``mlflow.db.lock`` beside it), so
processes opening a fresh store together do not race on making its tables; a new store is built
under a temporary name and renamed into place when complete, so a process killed while making it
leaves no half-made ``mlflow.db``. :func:`read_client` opens an existing store for reading,
:func:`prepare_store` makes one before ``mlflow ui`` opens it.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import secrets
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from showwork.cache import cache_directory
from showwork.environment import strip_credentials
from showwork.errors import InputError
from showwork.files import create_own_file, fsync_dir, read_own_file, write_atomic
from showwork.tracking.errors import TrackingUnavailableError, short_reason
from showwork.tracking.mlflow_import import import_mlflow
from showwork.tracking.uris import sqlite_path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no flock
    fcntl = None

if TYPE_CHECKING:  # pragma: no cover
    from mlflow.tracking import MlflowClient

__all__ = ["open_client", "prepare_store", "probe_client", "read_client"]


_STORE_LOCK_WAIT_S = 300.0  # creating and migrating a fresh store takes seconds; a holder this long is stuck


@contextlib.contextmanager
def _store_lock(tracking_uri: str):
    """Hold ``<database>.lock`` (``fcntl.flock``) for a SQLite store, so that one process creates or migrates it.

    MLflow builds a missing SQLite store's tables when a client opens it, without a lock: two searches
    (or a search and ``showwork ui``) starting together in a fresh folder both tried, and one failed
    ("table experiments already exists", "duplicate column name"). Under this lock the second finds the
    store made. Anything but a SQLite file (a server, ``:memory:``), a folder that does not exist or
    cannot take the lock file (read-only: nothing can be created there anyway) goes on without it.

    Raises
    ------
    TrackingUnavailableError
        Another process held the lock for over 300 s.
    """
    database = sqlite_path(tracking_uri)
    if database is None or fcntl is None or not database.parent.is_dir():
        yield
        return
    lock_path = database.with_name(database.name + ".lock")
    try:
        descriptor = os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0), 0o600)
    except OSError:
        yield
        return
    try:
        deadline = time.monotonic() + _STORE_LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TrackingUnavailableError(
                        f"the MLflow database {database}: another process has held {lock_path} for over"
                        f" {_STORE_LOCK_WAIT_S:.0f} s while creating the store; if none is running, delete the lock file"
                    ) from None
                time.sleep(0.05)
        yield
    finally:
        os.close(descriptor)  # closing releases the lock


def open_client(tracking_uri: str) -> MlflowClient:
    """An ``MlflowClient``; a SQLite store is created (:func:`_create_store`) or migrated under :func:`_store_lock`.

    Raises
    ------
    TrackingUnavailableError
        The SQLite store was left half-made or half-migrated (:func:`_half_made`).
    """
    client_class = import_mlflow()
    database = sqlite_path(tracking_uri)
    with _store_lock(tracking_uri):
        if database is not None and _not_made(database):
            _create_store(database)
        if database is None:
            return client_class(tracking_uri=tracking_uri)
        try:
            client = client_class(tracking_uri=tracking_uri)
            client.search_experiments(max_results=1)  # the store is whole before another process opens it
        except Exception as error:
            message = _half_made(database, error)
            if message is None:
                raise
            raise TrackingUnavailableError(message) from error
    return client


_TEMPORARY_STORE = ".{name}.{token}.creating"  # a store being made, beside the database it becomes


def _not_made(database: Path) -> bool:
    """Whether ``database`` is still to be made: missing, empty, or a SQLite file without a table.

    A file that is not SQLite is left for MLflow to refuse (its message names the file); it is never replaced.
    """
    try:
        if database.stat().st_size == 0:
            return True
    except FileNotFoundError:
        return True
    except OSError:
        return False
    try:
        with contextlib.closing(sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True)) as connection:
            return connection.execute("SELECT count(*) FROM sqlite_master WHERE type = 'table'").fetchone()[0] == 0
    except sqlite3.Error:
        return False


def _create_store(database: Path) -> None:
    """Make the SQLite store ``database``: MLflow builds and migrates it under a temporary name beside it, then
    it is renamed into place (issue 23 item 3).

    MLflow makes a store's tables in a few dozen migrations, each committed on its own: a search killed
    while the first search made ``mlflow.db`` left one half-migrated, and every later search failed
    ("table secrets already exists", "duplicate column name: step"). Now ``mlflow.db`` appears only
    complete. Called under :func:`_store_lock`, which also makes it safe to remove what a killed
    creator left (``.mlflow.db.<token>.creating`` and its journal).
    """
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore  # lazy: `import showwork` must not load mlflow

    for leftover in database.parent.glob(_TEMPORARY_STORE.format(name=database.name, token="*") + "*"):
        with contextlib.suppress(OSError):
            leftover.unlink()
    temporary = database.with_name(_TEMPORARY_STORE.format(name=database.name, token=secrets.token_hex(8)))
    artifacts = (database.parent / "mlartifacts").as_uri()  # nothing is written there
    try:
        if not _copy_empty_store(temporary, artifacts):
            store = SqlAlchemyStore(f"sqlite:///{temporary}", artifacts)
            store.engine.dispose()  # every connection closed: the file is whole, its journal gone
            _keep_empty_store(temporary)
        descriptor = os.open(temporary, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        os.replace(temporary, database)
        fsync_dir(database.parent)
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink()


def _empty_store_template() -> Path:
    """Where a made, empty store of this MLflow version is kept (:mod:`showwork.cache`): a copy of it is a new store."""
    import mlflow  # lazy: `import showwork` must not load mlflow

    return cache_directory() / "mlflow-stores" / f"empty-mlflow-{mlflow.__version__}.db"


def _keep_empty_store(made: Path) -> None:
    """Keep a copy of the store just made (no run, one experiment: MLflow's Default) for the next new store.

    MLflow makes a store in a few dozen migrations: about a second of CPU, which a search's start-up
    spends while Ray starts on the same cores (issue 23 item 15). A cache, never a source of truth:
    any failure here is ignored (the next new store is made again)."""
    with contextlib.suppress(OSError):
        write_atomic(_empty_store_template(), made.read_bytes(), mode=0o600)


def _copy_empty_store(target: Path, artifacts: str) -> bool:
    """Make the new store ``target`` from the kept empty store, with its Default experiment's artifact
    folder and times its own; False (nothing left at ``target``) when there is no usable one."""
    try:
        data = read_own_file(_empty_store_template())
    except (OSError, ValueError):  # none yet; or a link, a FIFO: not ours
        return False
    try:
        descriptor = create_own_file(target, mode=0o600)  # the temporary name: made under the store's lock
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(descriptor, view):]
        finally:
            os.close(descriptor)
        now = int(time.time() * 1000)
        with contextlib.closing(sqlite3.connect(target)) as connection:
            experiments = connection.execute("SELECT experiment_id FROM experiments").fetchall()
            runs = connection.execute("SELECT count(*) FROM runs").fetchone()[0]
            if experiments != [(0,)] or runs or not connection.execute("SELECT * FROM alembic_version").fetchone():
                raise sqlite3.DatabaseError("not an empty store")
            with connection:
                connection.execute("UPDATE experiments SET artifact_location = ?, creation_time = ?,"
                                   " last_update_time = ? WHERE experiment_id = 0", (f"{artifacts}/0", now, now))
        return True
    except (OSError, sqlite3.Error):  # a damaged copy: made the long way instead
        with contextlib.suppress(OSError):
            target.unlink()
        return False


_HALF_MADE = re.compile(r"already exists|duplicate column name", re.IGNORECASE)


def _half_made(database: Path, error: BaseException) -> str | None:
    """One line naming ``database`` and what to do, when opening it failed because it is half-made or
    half-migrated (a table or column that a migration makes is there, or one it needs is not); else None."""
    seen = 0
    while error is not None and seen < 10:
        found = _HALF_MADE.search(str(error))
        if found:
            detail = str(error).splitlines()[0] if str(error).strip() else found.group(0)
            detail = re.sub(r"^\([^)]*\)\s*", "", re.sub(r"\s*\[SQL: .*", "", detail))[:160]
            runs = _run_count(database)
            fix = (f"it holds no runs: delete it (rm {database}) and run again" if not runs else
                   f"it holds {runs} runs: restore it from a backup, or move it aside and run again"
                   " (a new store is made; the ledgers under --storage keep every trial)")
            return (f"the MLflow database {database} is half-made ({detail}): a process was stopped while creating"
                    f" or upgrading it; {fix}")
        error = error.__cause__ or error.__context__
        seen += 1
    return None


def _run_count(database: Path) -> int:
    """The runs a SQLite store holds (0 without a ``runs`` table or when it cannot be read)."""
    try:
        with contextlib.closing(sqlite3.connect(f"{database.as_uri()}?mode=ro", uri=True)) as connection:
            return int(connection.execute("SELECT count(*) FROM runs").fetchone()[0])
    except sqlite3.Error:
        return 0


def prepare_store(tracking_uri: str) -> None:
    """Create or migrate a SQLite store now, under the store's lock (before ``mlflow ui`` opens it); others: nothing.

    Raises
    ------
    TrackingUnavailableError
        The database cannot be opened or made.
    """
    if sqlite_path(tracking_uri) is not None:
        probe_client(lambda: open_client(tracking_uri), tracking_uri, 5.0)


def _not_mlflow(error: BaseException) -> str | None:
    """How a server showed it is not MLflow (a web page, HTTP 404 to MLflow's API), from the exception chain; or None."""
    seen = 0
    while error is not None and seen < 10:
        text = str(error)
        if "response body was not in a valid JSON format" in text:
            return "it answered MLflow's API with something other than MLflow's JSON"
        status = re.search(r"failed with error code (404|405|501) != 200", text)
        if status:
            return f"it answered MLflow's API with HTTP {status.group(1)}"
        error = error.__cause__ or error.__context__
        seen += 1
    return None


def probe_client(get_client: Callable[[], MlflowClient], tracking_uri: str, timeout_s: float) -> MlflowClient:
    """Get the client (a SQLite store opens here) and make one cheap call, MLflow's HTTP retries off.

    ``timeout_s`` limits each HTTP request; return the client.

    Raises
    ------
    TrackingUnavailableError
        The server or database cannot be reached or read; the message names it and a remedy.
    """
    names = ("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "MLFLOW_HTTP_REQUEST_TIMEOUT")
    saved = {name: os.environ.get(name) for name in names}
    os.environ["MLFLOW_HTTP_REQUEST_MAX_RETRIES"] = "0"
    os.environ["MLFLOW_HTTP_REQUEST_TIMEOUT"] = str(max(1, math.ceil(timeout_s)))
    try:
        client = get_client()
        client.search_experiments(max_results=1)
        return client
    except TrackingUnavailableError:
        raise
    except Exception as error:
        database = sqlite_path(tracking_uri)
        answer = None if database else _not_mlflow(error)
        if answer:  # a web server, a proxy's error page, another service: a wrong URI, so bad input
            raise InputError(
                f"{strip_credentials(tracking_uri)} is not an MLflow tracking server ({answer}); check the tracking URI"
            ) from error
        where = f"the MLflow database {database}" if database else f"the MLflow tracking server at {strip_credentials(tracking_uri)}"
        if database:
            hint = "check that the file is an MLflow SQLite database and its directory is writable"
        elif re.search(r"too many 5\d\d error responses", str(error)):
            hint = "the server is up but failing: check its log and its backend database"
        else:
            hint = "start it (`mlflow server ...`) or pass another tracking URI"
        raise TrackingUnavailableError(f"cannot reach {where}: {short_reason(error)}; {hint}") from error
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def read_client(tracking_uri: str, timeout_s: float = 5.0) -> MlflowClient:
    """Return an ``MlflowClient`` for reading an existing tracking store, checked with one cheap call.

    Unlike a :class:`~showwork.tracking.tracker.Tracker`, it creates nothing: MLflow would make an empty database (and its
    directory) for a mistyped SQLite path, so a missing database file is an error here.

    Raises
    ------
    InputError
        A ``sqlite:///`` URI whose file does not exist.
    TrackingUnavailableError
        The server or database cannot be reached or read.
    """
    if not isinstance(tracking_uri, str) or not tracking_uri.strip():
        raise InputError(f"MLflow tracking URI must be a non-empty string, not {tracking_uri!r}")
    tracking_uri = tracking_uri.strip()
    database = sqlite_path(tracking_uri)
    if database is not None and not database.is_file():
        raise InputError(f"no MLflow database at {database} (tracking URI {tracking_uri})")
    return probe_client(lambda: open_client(tracking_uri), tracking_uri, timeout_s)

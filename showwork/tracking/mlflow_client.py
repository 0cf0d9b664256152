"""A small MLflow client that retries: connection errors and "database is locked" are retried, an outage is remembered.

Every MLflow call of :mod:`showwork.tracking.runs` goes through :meth:`RetryingClient.call`: on connection
errors and "database is locked" it retries with exponential backoff (5 attempts over about 8 s by
default), then raises :class:`TrackingUnavailableError`. Once a call has failed every attempt, the
client takes MLflow for down: later calls make one attempt each, without waiting or warning, until
one gets an answer, so that a search whose server stays down does not spend 8 s on each of its
queued writes (its writer warns once per outage). Retries warn once, not once each, until a call
succeeds again, and MLflow's own traceback of a locked SQLite database is not printed: a lock held
30 s is one warning line. A SQLite store is created or migrated under
a file lock (``mlflow.db.lock`` beside it), so processes opening a fresh store together do not
race on making its tables; a new store is built under a temporary name and renamed into place
when complete, so a process killed while making it leaves no half-made ``mlflow.db``.

:meth:`RetryingClient.transaction` makes the store calls of one unit of work (a trial's run
created with its params, or its projection completed) share one database transaction on a
SQLAlchemy store (SQLite, or a database URI): one COMMIT for the unit, where MLflow's store makes
one or more per call.

``mlflow`` is imported lazily, on first use, so that ``import showwork`` stays light; before it is
imported, ``MLFLOW_DISABLE_TELEMETRY`` is set to ``true`` unless already set.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import secrets
import sqlite3
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from showwork.environment import strip_credentials
from showwork.errors import InputError, UnavailableError
from showwork.files import fsync_dir

if TYPE_CHECKING:  # pragma: no cover
    from mlflow.entities import Run
    from mlflow.tracking import MlflowClient

__all__ = [
    "TrackingUnavailableError",
    "RetryingClient",
    "SharedSessionAborted",
    "all_runs",
    "entities",
    "import_mlflow",
    "is_transient",
    "prepare_store",
    "read_client",
    "short_reason",
    "sqlite_path",
    "check_run_id",
]

_RUN_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_TRANSIENT_TEXT = re.compile(
    r"database is locked|database table is locked|unable to open database|connection (refused|reset|aborted)"
    r"|failed to establish a new connection|max retries exceeded|could not connect|connection timed out"
    r"|read timed out|temporarily unavailable|server closed the connection|remote end closed"
    r"|error code (429|502|503|504)",
    re.IGNORECASE,
)

T = TypeVar("T")


class TrackingUnavailableError(UnavailableError):
    """MLflow cannot be reached (server down, database locked or unreadable).

    The ledger keeps every result; ``showwork search SPACE --resume`` (:func:`showwork.tracking.runs.sync_ledger`)
    replays them later.
    """


def import_mlflow():
    """Import mlflow (about 2 s) with telemetry off unless the user set it; return the client class."""
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    from mlflow.tracking import MlflowClient

    _quiet_lock_tracebacks()
    return MlflowClient


class _StoreNoise(logging.Filter):
    """Drops what MLflow's database code logs that showwork says itself: a transient error's traceback
    (:class:`RetryingClient` retries it and warns once) and its notes on making tables."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:  # "Creating initial MLflow database tables...", "Updating database tables"
            return False
        error = record.exc_info[1] if record.exc_info else None
        return error is None or not is_transient(error)


def _quiet_lock_tracebacks() -> None:
    """MLflow logs each "database is locked" of its SQLAlchemy store with a traceback (``logger.exception``):
    a SQLite database locked for 30 s printed two tracebacks beside showwork's own warning."""
    logger = logging.getLogger("mlflow.store.db.utils")
    if not any(isinstance(f, _StoreNoise) for f in logger.filters):
        logger.addFilter(_StoreNoise())


def entities():
    """Return mlflow's ``(Metric, Param, RunTag, ViewType)`` classes."""
    import_mlflow()
    from mlflow.entities import Metric, Param, RunTag, ViewType

    return Metric, Param, RunTag, ViewType


def _short(error: BaseException, limit: int = 300) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def short_reason(error: BaseException) -> str:
    """A short human reason for a failed MLflow call (connection refused, unknown host, ...), without SQL."""
    text = str(error)
    status = re.search(r"too many (\d{3}) error responses", text)  # MLflow's HTTP client, retries exhausted
    if status:
        code = status.group(1)
        return f"the server answered HTTP {code}" + (" (Service Unavailable: is its database down?)" if code == "503" else "")
    for pattern, reason in (
        (r"connection refused", "connection refused"),
        (r"remote end closed connection|connection aborted|connection reset", "the connection was cut"),
        (r"name or service not known|nodename nor servname|temporary failure in name resolution", "unknown host"),
        (r"read timed out|connect timeout|timed out", "no answer in time"),
        (r"database is locked", "the database is locked"),
    ):
        if re.search(pattern, text, re.IGNORECASE):
            return reason
    text = re.sub(r"\s*\[SQL: .*?\]|\s*\(Background on this error at: [^)]*\)", "", text, flags=re.DOTALL)
    return _short(Exception(text) if text.strip() else error)


def is_transient(error: BaseException) -> bool:
    """True for connection errors and "database is locked", anywhere in the exception chain."""
    try:
        import requests

        network = (requests.exceptions.ConnectionError, requests.exceptions.Timeout)
    except ImportError:  # pragma: no cover - requests comes with mlflow
        network = ()
    try:
        from sqlalchemy.exc import OperationalError
    except ImportError:  # pragma: no cover - only a server-backed mlflow lacks it
        OperationalError = ()  # noqa: N806
    seen = 0
    while error is not None and seen < 10:
        if isinstance(error, network) or isinstance(error, (ConnectionError, TimeoutError)):
            return True
        if isinstance(error, OperationalError) and _TRANSIENT_TEXT.search(str(error)):
            return True
        if type(error).__name__ == "MlflowException":
            if getattr(error, "error_code", None) == "TEMPORARILY_UNAVAILABLE" or _TRANSIENT_TEXT.search(str(error)):
                return True
        error = error.__cause__ or error.__context__
        seen += 1
    return False


def sqlite_path(uri: str) -> Path | None:
    if not uri.startswith("sqlite:///"):
        return None
    rest = uri[len("sqlite:///"):].split("?", 1)[0]
    if not rest or rest == ":memory:":
        return None
    return Path(rest).expanduser().absolute()


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
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no flock
        fcntl = None
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


def _open_client(tracking_uri: str) -> MlflowClient:
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
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

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
    import mlflow

    from showwork.cache import cache_directory

    return cache_directory() / "mlflow-stores" / f"empty-mlflow-{mlflow.__version__}.db"


def _keep_empty_store(made: Path) -> None:
    """Keep a copy of the store just made (no run, one experiment: MLflow's Default) for the next new store.

    MLflow makes a store in a few dozen migrations: about a second of CPU, which a search's start-up
    spends while Ray starts on the same cores (issue 23 item 15). A cache, never a source of truth:
    any failure here is ignored (the next new store is made again)."""
    from showwork.files import write_atomic

    with contextlib.suppress(OSError):
        write_atomic(_empty_store_template(), made.read_bytes(), mode=0o600)


def _copy_empty_store(target: Path, artifacts: str) -> bool:
    """Make the new store ``target`` from the kept empty store, with its Default experiment's artifact
    folder and times its own; False (nothing left at ``target``) when there is no usable one."""
    from showwork.files import create_own_file, read_own_file

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
        _probe(lambda: _open_client(tracking_uri), tracking_uri, 5.0)


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


def _probe(get_client: Callable[[], MlflowClient], tracking_uri: str, timeout_s: float) -> MlflowClient:
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

    Unlike a :class:`Tracker`, it creates nothing: MLflow would make an empty database (and its
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
    return _probe(lambda: _open_client(tracking_uri), tracking_uri, timeout_s)


def all_runs(client: MlflowClient, experiment_id: str, filter_string: str = "") -> list[Run]:
    """Return every active (not deleted) run of an experiment that matches ``filter_string``, oldest first."""
    ViewType = entities()[3]  # noqa: N806

    runs, token = [], None
    while True:
        page = client.search_runs(
            [experiment_id], filter_string=filter_string, run_view_type=ViewType.ACTIVE_ONLY,
            max_results=1000, order_by=["attributes.start_time ASC"], page_token=token,
        )
        runs.extend(page)
        token = page.token
        if not token:
            return runs


class SharedSessionAborted(Exception):
    """MLflow rolled back a session that :meth:`RetryingClient.transaction` shares: the unit runs again without sharing."""


_shared = threading.local()  # .session: (store, _SharedSession) of the transaction this thread is in


class _SharedSession:
    """The session of a :meth:`RetryingClient.transaction` as MLflow's store calls see it: ``commit`` flushes
    (the transaction commits once, at its end), ``close`` does nothing and ``rollback`` aborts the unit."""

    def __init__(self, session) -> None:
        self._session = session

    def __getattr__(self, name: str):
        return getattr(self._session, name)

    def commit(self) -> None:
        self._session.flush()

    def rollback(self) -> None:
        raise SharedSessionAborted("MLflow rolled back a shared session")

    def close(self) -> None:
        pass


def _aborted_share(error: BaseException | None) -> bool:
    seen = 0
    while error is not None and seen < 10:
        if isinstance(error, SharedSessionAborted):
            return True
        error = error.__cause__ or error.__context__
        seen += 1
    return False


def _sql_store(client: MlflowClient):
    """The ``SqlAlchemyStore`` behind ``client`` (without a read replica), or None for any other store."""
    try:
        from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore

        store = client._tracking_client.store  # MLflow's client keeps its store there (3.x)
    except Exception:  # noqa: BLE001 - a server-only MLflow, another layout: calls go one by one
        return None
    if not isinstance(store, SqlAlchemyStore) or getattr(store, "read_engine", None) is not None:
        return None
    return store


def _share_sessions(store):
    """Let ``store``'s calls use the shared session of this thread's transaction; return its own session maker.

    MLflow's store opens each session with ``store.ManagedSessionMaker(read_only=...)``; that is
    replaced, once per store, by one that yields the shared session inside a transaction of this
    thread and MLflow's own session everywhere else (other threads included).
    """
    own = getattr(store, "_showwork_own_sessions", None)
    if own is not None:
        return own
    own = store.ManagedSessionMaker

    @contextlib.contextmanager
    def sessions(read_only: bool = True):
        shared = getattr(_shared, "session", None)
        if shared is not None and shared[0] is store:
            yield shared[1]
        else:
            with own(read_only=read_only) as session:
                yield session

    store.ManagedSessionMaker = sessions
    store._showwork_own_sessions = own
    return own


class RetryingClient:
    """An ``MlflowClient`` whose calls are retried on transient failures (see the module docstring).

    Nothing touches MLflow until first use. A pickled copy (Ray Tune pickles the driver's callbacks
    into its experiment state under --storage) keeps neither the client nor a password in the
    URI; it reconnects on first use (``MLFLOW_TRACKING_USERNAME``/``PASSWORD`` authenticate it).

    Parameters
    ----------
    tracking_uri : str
        ``sqlite:///...``, ``http(s)://...`` or any URI MLflow accepts.
    attempts : int, default 5
        Tries per call on connection errors and "database is locked".
    backoff_s : float, default 0.5
        First delay between tries; it doubles each time (0.5 + 1 + 2 + 4 = 7.5 s in all).
    """

    def __init__(self, tracking_uri: str, *, attempts: int = 5, backoff_s: float = 0.5) -> None:
        if not isinstance(tracking_uri, str) or not tracking_uri.strip():
            raise InputError(f"MLflow tracking URI must be a non-empty string, not {tracking_uri!r}")
        if attempts < 1 or backoff_s < 0:
            raise InputError(f"Tracker: attempts must be >= 1 and backoff_s >= 0 (attempts={attempts}, backoff_s={backoff_s})")
        self.tracking_uri = tracking_uri.strip()
        self.shown_uri = strip_credentials(self.tracking_uri)  # in messages: no user or password
        self.attempts = attempts
        self.backoff_s = backoff_s
        self._client: MlflowClient | None = None
        self._down = False  # a call failed every attempt; no answer from MLflow since
        self._retrying = False  # a retry was warned of; no call has succeeded since

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_client"] = None
        state["tracking_uri"] = self.shown_uri
        return state

    @property
    def down(self) -> bool:
        """Whether a call failed every attempt and no MLflow call has got an answer since."""
        return self._down

    @property
    def client(self) -> MlflowClient:
        """The ``MlflowClient`` (mlflow is imported on first access)."""
        if self._client is None:
            self._client = _open_client(self.tracking_uri)
        return self._client

    def probe(self, timeout_s: float = 5.0) -> None:
        """Make one cheap call, without retries and with ``timeout_s`` per HTTP request (see :func:`read_client`)."""
        _probe(lambda: self.client, self.tracking_uri, timeout_s)

    def call(self, what: str, function: Callable[[], T]) -> T:
        """Run ``function`` (an idempotent MLflow operation), retrying transient failures.

        The first retry is warned of; later ones are not, until a call succeeds again. After a
        call that failed every attempt, MLflow counts as down: each later call makes a single
        attempt, without retries or waiting, until a call gets an answer again.

        Raises
        ------
        TrackingUnavailableError
            When the last attempt fails with a transient error. Other errors propagate unchanged.
        """
        delay = self.backoff_s
        attempts = 1 if self._down else self.attempts
        for attempt in range(1, attempts + 1):
            try:
                result = function()
                self._down = self._retrying = False
                return result
            except TrackingUnavailableError:
                raise
            except Exception as error:
                if not is_transient(error):
                    self._down = self._retrying = False  # MLflow answered
                    raise
                if attempt == attempts:
                    self._down = True
                    tries = f"failed {attempts} times" if attempts > 1 else "failed, not retried while MLflow is down"
                    raise TrackingUnavailableError(
                        f"MLflow at {self.shown_uri}: {what} {tries} ({short_reason(error)});"
                        " the ledger keeps the results, `showwork search SPACE --resume` replays them"
                    ) from error
                if not self._retrying:  # once until a call succeeds: a 30 s lock is one line, not one per retry
                    self._retrying = True
                    warnings.warn(
                        f"MLflow at {self.shown_uri}: {what} failed ({short_reason(error)}); retrying (up to"
                        f" {self.attempts - 1} more tries over {self.backoff_s * (2 ** (self.attempts - 1) - 1):.3g} s"
                        " per call; said once until a call succeeds)",
                        stacklevel=3,
                    )
                time.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")  # pragma: no cover

    def log_batch(self, run_id: str, metrics=(), params=(), tags=()) -> None:
        """One ``log_batch``, synchronously (errors surface here); not retried by itself.

        MLflow splits it into store calls of at most 100 params, 100 tags and 1,000 entities in
        all. Inside :meth:`transaction` they commit together; elsewhere a run's key maps
        (:mod:`showwork.tracking.mlflow_format`) may land after its values, which a replay finds again
        (a run is complete only once tagged ``showwork.logged=1``).
        """
        params, tags, metrics = list(params), list(tags), list(metrics)
        if params or tags or metrics:
            self.client.log_batch(run_id, metrics=metrics, params=params, tags=tags, synchronous=True)

    @contextlib.contextmanager
    def transaction(self):
        """Make the store calls inside share one database transaction: one COMMIT, on success only.

        On a SQLAlchemy store (SQLite, or a database URI) MLflow opens a session, and commits it,
        for each call and each part of a ``log_batch`` (4 COMMITs for params, metrics and tags);
        here they share one session, whose commits are flushes, committed when the block ends. An
        error rolls the whole block back. MLflow handles some integrity errors by rolling its
        session back and looking again (a duplicate metric point); a shared session cannot, so
        the block is then run again with MLflow's own sessions (:class:`SharedSessionAborted`, see
        :meth:`unit`). A server, a file store or a nested block: the calls go as they are.
        """
        store = _sql_store(self.client)
        if store is None or getattr(_shared, "session", None) is not None:
            yield
            return
        own_sessions = _share_sessions(store)
        with own_sessions(read_only=False) as session:
            _shared.session = (store, _SharedSession(session))
            try:
                yield
            finally:
                _shared.session = None

    def unit(self, what: str, function: Callable[[], T]) -> T:
        """:meth:`call` of ``function`` inside one :meth:`transaction`; run again without one if MLflow needed its own.

        ``function`` must be one idempotent unit of work: it is tried again whole on transient
        errors, and after a rolled-back transaction nothing of it is in the store.
        """
        def attempt() -> T:
            try:
                with self.transaction():
                    return function()
            except Exception as error:
                if not _aborted_share(error):
                    raise
            return function()  # MLflow's own sessions: its handling of duplicates and races

        return self.call(what, attempt)

    def get_run(self, run_id: str) -> Run:
        """The run ``run_id`` (not retried by itself).

        Raises
        ------
        InputError
            ``run_id`` is not a run id, or there is no such run.
        """
        check_run_id(run_id)
        try:
            return self.client.get_run(run_id)
        except Exception as error:
            if is_transient(error):
                raise
            raise InputError(f"MLflow at {self.shown_uri}: no run {run_id!r} ({_short(error, 160)})") from error


def check_run_id(run_id: str) -> None:
    """Refuse what cannot be an MLflow run id (it goes into search filters).

    Raises
    ------
    InputError
    """
    if not isinstance(run_id, str) or not _RUN_ID.match(run_id):
        raise InputError(f"MLflow run id {run_id!r} is not valid")

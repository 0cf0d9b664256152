"""A small MLflow client that retries: connection errors and "database is locked" are retried, an outage is remembered.

Every MLflow call of :mod:`showwork.tracking` goes through :meth:`RetryingClient.call`: on connection
errors and "database is locked" it retries with exponential backoff (5 attempts over about 8 s by
default), warning on each retry, then raises :class:`TrackingUnavailableError`. Once a call has
failed every attempt, the client takes MLflow for down: later calls make one attempt each, without
waiting or warning, until one gets an answer, so that a search whose server stays down does not
spend 8 s on each of its queued writes (its writer warns once per outage). A SQLite store is
created or migrated under a file lock (``mlflow.db.lock`` beside it), so processes opening a fresh
store together do not race on making its tables.

``mlflow`` is imported lazily, on first use, so that ``import showwork`` stays light; before it is
imported, ``MLFLOW_DISABLE_TELEMETRY`` is set to ``true`` unless already set.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from showwork.environment import strip_credentials
from showwork.errors import InputError, UnavailableError

if TYPE_CHECKING:  # pragma: no cover
    from mlflow.entities import Run
    from mlflow.tracking import MlflowClient

__all__ = [
    "TrackingUnavailableError",
    "RetryingClient",
    "all_runs",
    "entities",
    "import_mlflow",
    "is_transient",
    "prepare_store",
    "read_client",
    "sqlite_path",
    "check_run_id",
]

_PARAMS_PER_BATCH = 100
_METRICS_PER_BATCH = 1000
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

    The ledger keeps every result; ``showwork search SPACE --resume`` (:func:`showwork.tracking.sync_ledger`)
    replays them later.
    """


def import_mlflow():
    """Import mlflow (about 2 s) with telemetry off unless the user set it; return the client class."""
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    from mlflow.tracking import MlflowClient

    return MlflowClient


def entities():
    """Return mlflow's ``(Metric, Param, RunTag, ViewType)`` classes."""
    import_mlflow()
    from mlflow.entities import Metric, Param, RunTag, ViewType

    return Metric, Param, RunTag, ViewType


def _short(error: BaseException, limit: int = 300) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _reason(error: BaseException) -> str:
    """A short human reason for a failed MLflow call (connection refused, unknown host, ...)."""
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
    """An ``MlflowClient``; a SQLite store is created or migrated under :func:`_store_lock` (MLflow does it on opening)."""
    client_class = import_mlflow()
    with _store_lock(tracking_uri):
        client = client_class(tracking_uri=tracking_uri)
        if sqlite_path(tracking_uri) is not None:
            client.search_experiments(max_results=1)  # the store is whole before another process opens it
    return client


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
        raise TrackingUnavailableError(f"cannot reach {where}: {_reason(error)}; {hint}") from error
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

        After a call that failed every attempt, MLflow counts as down: each later call makes a
        single attempt, without retries or waiting, until a call gets an answer again.

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
                self._down = False
                return result
            except TrackingUnavailableError:
                raise
            except Exception as error:
                if not is_transient(error):
                    self._down = False  # MLflow answered
                    raise
                if attempt == attempts:
                    self._down = True
                    tries = f"failed {attempts} times" if attempts > 1 else "failed, not retried while MLflow is down"
                    raise TrackingUnavailableError(
                        f"MLflow at {self.shown_uri}: {what} {tries} ({_reason(error)});"
                        " the ledger keeps the results, `showwork search SPACE --resume` replays them"
                    ) from error
                warnings.warn(
                    f"MLflow at {self.shown_uri}: {what} failed ({_reason(error)});"
                    f" retry {attempt} of {self.attempts - 1} in {delay:.1f} s",
                    stacklevel=3,
                )
                time.sleep(delay)
                delay *= 2
        raise AssertionError("unreachable")  # pragma: no cover

    def log_batch(self, run_id: str, metrics=(), params=(), tags=()) -> None:
        """``log_batch`` in chunks within MLflow's limits, synchronously (errors surface here); not retried by itself.

        Tags go first: a map of renamed keys (:mod:`showwork.mlflow_format`) is there before the values.
        """
        client = self.client
        params, tags, metrics = list(params), list(tags), list(metrics)
        for start in range(0, len(tags), _PARAMS_PER_BATCH):
            client.log_batch(run_id, tags=tags[start:start + _PARAMS_PER_BATCH], synchronous=True)
        for start in range(0, len(params), _PARAMS_PER_BATCH):
            client.log_batch(run_id, params=params[start:start + _PARAMS_PER_BATCH], synchronous=True)
        for start in range(0, len(metrics), _METRICS_PER_BATCH):
            client.log_batch(run_id, metrics=metrics[start:start + _METRICS_PER_BATCH], synchronous=True)

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

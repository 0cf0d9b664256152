"""A small MLflow client that retries: connection errors and "database is locked" are retried, an outage is remembered.

Every MLflow call of the tracker (:mod:`showwork.tracking.tracker`, :mod:`showwork.tracking.trial_runs`) goes
through :meth:`RetryingClient.call`: on connection
errors and "database is locked" it retries with exponential backoff (5 attempts over about 8 s by
default), then raises :class:`TrackingUnavailableError`. Once a call has failed every attempt, the
client takes MLflow for down: later calls make one attempt each, without waiting or warning, until
one gets an answer, so that a search whose server stays down does not spend 8 s on each of its
queued writes (its writer warns once per outage). Retries warn once, not once each, until a call
succeeds again, and MLflow's own traceback of a locked SQLite database is not printed: a lock held
30 s is one warning line. The store is opened by :func:`showwork.tracking.store.open_client`.

:meth:`RetryingClient.transaction` makes the store calls of one unit of work (a trial's run
created with its params, or its projection completed) share one database transaction on a
SQLAlchemy store (SQLite, or a database URI): one COMMIT for the unit, where MLflow's store makes
one or more per call.

``mlflow`` is imported lazily, on first use, so that ``import showwork`` stays light.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from showwork.environment import strip_credentials
from showwork.errors import InputError
from showwork.tracking.errors import TrackingUnavailableError, is_store_full, is_transient, one_line, short_reason
from showwork.tracking.mlflow_import import entities
from showwork.tracking.store import open_client, probe_client

if TYPE_CHECKING:  # pragma: no cover
    from mlflow.entities import Run
    from mlflow.tracking import MlflowClient

__all__ = ["RetryingClient", "SharedSessionAborted", "all_runs", "check_run_id"]

_RUN_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")

T = TypeVar("T")


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
        from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore  # lazy: `import showwork` must not load mlflow

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
        self.failed_calls = 0  # calls that ended in TrackingUnavailableError, since this client was made
        self.failure_reason: str | None = None  # short_reason of the last of them

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
            self._client = open_client(self.tracking_uri)
        return self._client

    def probe(self, timeout_s: float = 5.0) -> None:
        """Make one cheap call, without retries and with ``timeout_s`` per HTTP request
        (see :func:`~showwork.tracking.store.read_client`)."""
        probe_client(lambda: self.client, self.tracking_uri, timeout_s)

    def call(self, what: str, function: Callable[[], T]) -> T:
        """Run ``function`` (an idempotent MLflow operation), retrying transient failures.

        The first retry is warned of; later ones are not, until a call succeeds again. After a
        call that failed every attempt, MLflow counts as down: each later call makes a single
        attempt, without retries or waiting, until a call gets an answer again. A full store
        (:func:`~showwork.tracking.errors.is_store_full`) is not retried. Each call that fails is
        counted (``failed_calls``, ``failure_reason``): a search says the count once, at its end.

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
                if attempt == attempts or is_store_full(error):  # a full disk is freed by a person, not within 8 s
                    self._down = True
                    self.failed_calls += 1
                    self.failure_reason = short_reason(error)
                    tries = (f"failed {attempt} times" if attempt > 1 else "failed, not retried while MLflow is down"
                             if attempts == 1 else "failed, not retried")
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
            raise InputError(f"MLflow at {self.shown_uri}: no run {run_id!r} ({one_line(error, 160)})") from error


def check_run_id(run_id: str) -> None:
    """Refuse what cannot be an MLflow run id (it goes into search filters).

    Raises
    ------
    InputError
    """
    if not isinstance(run_id, str) or not _RUN_ID.match(run_id):
        raise InputError(f"MLflow run id {run_id!r} is not valid")

"""What a failed MLflow call means: an outage (retried, then :class:`TrackingUnavailableError`) or an answer.

Connection errors, "database is locked" and a full disk under the store, anywhere in an exception's
chain, are transient (:func:`is_transient`): an outage of the store, which may end (a lock released,
space freed) while the ledger keeps every result; :func:`short_reason` says why a call failed in a
few words, without SQL.
"""

from __future__ import annotations

import re

from showwork.errors import UnavailableError

__all__ = ["TrackingUnavailableError", "is_store_full", "is_transient", "one_line", "short_reason"]

_TRANSIENT_TEXT = re.compile(
    r"database is locked|database table is locked|unable to open database|connection (refused|reset|aborted)"
    r"|failed to establish a new connection|max retries exceeded|could not connect|connection timed out"
    r"|read timed out|temporarily unavailable|server closed the connection|remote end closed"
    r"|error code (429|502|503|504)",
    re.IGNORECASE,
)


# The store's disk, not the data: SQLite's SQLITE_FULL and SQLITE_IOERR, PostgreSQL's and MySQL's words for them.
_STORE_FULL_TEXT = re.compile(
    r"database or disk is full|disk i/o error|no space left on device|could not extend file|the table \S+ is full",
    re.IGNORECASE,
)


class TrackingUnavailableError(UnavailableError):
    """MLflow cannot be reached (server down, database locked or unreadable).

    The ledger keeps every result; ``showwork search SPACE --resume`` (:func:`showwork.tracking.ledger_sync.sync_ledger`)
    replays them later.
    """


def one_line(error: BaseException, limit: int = 300) -> str:
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
        (r"database or disk is full|no space left on device|could not extend file|the table \S+ is full",
         "the database or disk is full"),
        (r"disk i/o error", "a disk I/O error"),
    ):
        if re.search(pattern, text, re.IGNORECASE):
            return reason
    text = re.sub(r"\s*\[SQL: .*?\]|\s*\(Background on this error at: [^)]*\)", "", text, flags=re.DOTALL)
    return one_line(Exception(text) if text.strip() else error)


def _chain(error: BaseException | None, limit: int = 10):
    """``error`` and its causes (``__cause__``, else ``__context__``), at most ``limit`` of them."""
    while error is not None and limit > 0:
        yield error
        error = error.__cause__ or error.__context__
        limit -= 1


def is_store_full(error: BaseException) -> bool:
    """True when the store's disk refused a write (full, or an I/O error), anywhere in the exception chain.

    An outage, not an answer: the data is fine and the ledger keeps it. Not worth retrying within
    seconds (a person frees the space), so :class:`~showwork.tracking.client.RetryingClient` tries once.
    """
    return any(_STORE_FULL_TEXT.search(str(cause)) for cause in _chain(error))


def is_transient(error: BaseException) -> bool:
    """True for connection errors, "database is locked" and a full store (:func:`is_store_full`), anywhere in
    the exception chain."""
    try:
        import requests  # lazy: about 0.1 s, needed once a call has failed; it comes with mlflow

        network = (requests.exceptions.ConnectionError, requests.exceptions.Timeout)
    except ImportError:  # pragma: no cover - requests comes with mlflow
        network = ()
    try:
        from sqlalchemy.exc import OperationalError  # lazy: about 0.25 s, needed once a call has failed
    except ImportError:  # pragma: no cover - only a server-backed mlflow lacks it
        OperationalError = ()  # noqa: N806
    if is_store_full(error):
        return True
    for cause in _chain(error):
        if isinstance(cause, network) or isinstance(cause, (ConnectionError, TimeoutError)):
            return True
        if isinstance(cause, OperationalError) and _TRANSIENT_TEXT.search(str(cause)):
            return True
        if type(cause).__name__ == "MlflowException":
            if getattr(cause, "error_code", None) == "TEMPORARILY_UNAVAILABLE" or _TRANSIENT_TEXT.search(str(cause)):
                return True
    return False

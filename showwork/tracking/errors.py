"""What a failed MLflow call means: an outage (retried, then :class:`TrackingUnavailableError`) or an answer.

Connection errors and "database is locked", anywhere in an exception's chain, are transient
(:func:`is_transient`); :func:`short_reason` says why a call failed in a few words, without SQL.
"""

from __future__ import annotations

import re

from showwork.errors import UnavailableError

__all__ = ["TrackingUnavailableError", "is_transient", "one_line", "short_reason"]

_TRANSIENT_TEXT = re.compile(
    r"database is locked|database table is locked|unable to open database|connection (refused|reset|aborted)"
    r"|failed to establish a new connection|max retries exceeded|could not connect|connection timed out"
    r"|read timed out|temporarily unavailable|server closed the connection|remote end closed"
    r"|error code (429|502|503|504)",
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
    ):
        if re.search(pattern, text, re.IGNORECASE):
            return reason
    text = re.sub(r"\s*\[SQL: .*?\]|\s*\(Background on this error at: [^)]*\)", "", text, flags=re.DOTALL)
    return one_line(Exception(text) if text.strip() else error)


def is_transient(error: BaseException) -> bool:
    """True for connection errors and "database is locked", anywhere in the exception chain."""
    try:
        import requests  # lazy: about 0.1 s, needed once a call has failed; it comes with mlflow

        network = (requests.exceptions.ConnectionError, requests.exceptions.Timeout)
    except ImportError:  # pragma: no cover - requests comes with mlflow
        network = ()
    try:
        from sqlalchemy.exc import OperationalError  # lazy: about 0.25 s, needed once a call has failed
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

"""mlflow itself, imported on first use: telemetry off unless the user set it, its lock tracebacks quiet; its entities.

``mlflow`` takes about 2 s to import: ``import showwork`` and ``showwork --help`` load none of it,
so every module of :mod:`showwork.tracking` imports it through :func:`import_mlflow` or :func:`entities`,
on first use. Before it is imported, ``MLFLOW_DISABLE_TELEMETRY`` is set to ``true`` unless already set.
"""

from __future__ import annotations

import logging
import os

from showwork.tracking.errors import is_transient

__all__ = ["entities", "import_mlflow"]


def import_mlflow():
    """Import mlflow (about 2 s) with telemetry off unless the user set it; return the client class."""
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    from mlflow.tracking import MlflowClient  # lazy: about 2 s; `import showwork` and `showwork --help` must not load it

    _quiet_lock_tracebacks()
    return MlflowClient


class _StoreNoise(logging.Filter):
    """Drops what MLflow's database code logs that showwork says itself: a transient error's traceback
    (:class:`~showwork.tracking.client.RetryingClient` retries it and warns once) and its notes on making tables."""

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
    from mlflow.entities import Metric, Param, RunTag, ViewType  # lazy: `import showwork` must not load mlflow

    return Metric, Param, RunTag, ViewType

"""Where an MLflow store is: the tracking URI a command uses, a SQLite store's file."""

from __future__ import annotations

from pathlib import Path

__all__ = ["sqlite_path"]


def sqlite_path(uri: str) -> Path | None:
    if not uri.startswith("sqlite:///"):
        return None
    rest = uri[len("sqlite:///"):].split("?", 1)[0]
    if not rest or rest == ":memory:":
        return None
    return Path(rest).expanduser().absolute()

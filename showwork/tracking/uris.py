"""Where an MLflow store is: the tracking URI a command uses, a SQLite store's file, its artifacts' folder."""

from __future__ import annotations

import os
import re
import urllib.parse
from pathlib import Path

from showwork.environment import strip_credentials
from showwork.store import Ledger

__all__ = ["artifact_root", "chosen_tracking_uri", "default_artifact_location", "default_tracking_uri",
           "password_on_the_command_line", "recorded_tracking_uri", "sqlite_path"]


def password_on_the_command_line(given: str | None) -> str | None:
    """The warning for a ``--tracking-uri`` that carries a password (``postgresql://me:PASSWORD@db/x``), which `ps`
    shows to every user of the machine while the command runs; None when ``given`` (the option's value, None
    when not given) carries none. The one text of ``search``, ``race``, ``resume``, ``rerun`` and ``ui``.

    Examples
    --------
    >>> password_on_the_command_line("postgresql://me:pw@db.example.org/mlflow")
    '--tracking-uri postgresql://db.example.org/mlflow carries a password, which `ps` shows to every user of this machine: set MLFLOW_TRACKING_URI instead'
    >>> password_on_the_command_line("postgresql://me@db/x") is None, password_on_the_command_line(None) is None
    (True, True)
    """
    try:
        password = bool(given) and urllib.parse.urlsplit(given).password
    except ValueError:  # not a URI urllib can split ("http://[x"): MLflow refuses it, with its own message
        return None
    if not password:
        return None
    return (f"--tracking-uri {strip_credentials(given)} carries a password, which `ps` shows to every user of this"
            " machine: set MLFLOW_TRACKING_URI instead")


def default_tracking_uri(workdir: str | os.PathLike) -> str:
    """Return ``sqlite:///<absolute path>/mlflow.db`` for a working directory (nothing is created)."""
    return f"sqlite:///{Path(workdir).expanduser().resolve() / 'mlflow.db'}"


def chosen_tracking_uri(given: str | None) -> str:
    """The MLflow store a command or :func:`showwork.search` uses: ``given``, else ``$MLFLOW_TRACKING_URI``, else
    :func:`default_tracking_uri` of the current directory (``sqlite:///<cwd>/mlflow.db``)."""
    if given:
        return given
    return os.environ.get("MLFLOW_TRACKING_URI") or default_tracking_uri(Path.cwd())


def recorded_tracking_uri(storage_dir: str | os.PathLike, name: str, given: str | None) -> str:
    """The MLflow store of a search that continues from its ledger (``resume``, ``rerun``): ``given``, else
    ``$MLFLOW_TRACKING_URI``, else the store the search recorded, else :func:`default_tracking_uri` of the
    current directory."""
    if given or os.environ.get("MLFLOW_TRACKING_URI"):
        return chosen_tracking_uri(given)
    return Ledger(Path(storage_dir), name).read_meta().get("tracking_uri") or chosen_tracking_uri(None)


def default_artifact_location(tracking_uri: str, experiment_name: str) -> str | None:
    """Where a new experiment keeps its artifacts: beside a SQLite database, else the server's choice (None).

    MLflow's own default is ``./mlruns`` under whatever the current directory is.
    """
    root = artifact_root(tracking_uri)
    return None if root is None else (root / re.sub(r"[^A-Za-z0-9._-]", "_", experiment_name)).as_uri()


def artifact_root(tracking_uri: str) -> Path | None:
    """``mlartifacts/`` beside a SQLite database, the folder of every default artifact location; None for a server."""
    database = sqlite_path(tracking_uri)
    return None if database is None else database.parent / "mlartifacts"


def sqlite_path(uri: str) -> Path | None:
    if not uri.startswith("sqlite:///"):
        return None
    rest = uri[len("sqlite:///"):].split("?", 1)[0]
    if not rest or rest == ":memory:":
        return None
    return Path(rest).expanduser().absolute()

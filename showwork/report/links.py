"""Where a report's families' MLflow runs are: the parent run, and the link to its runs table (issue 34 item 5).

When the address is known
-------------------------
The report links the search's runs table only where the tracking URI is the address of a
tracking server, ``http://`` or ``https://`` (a path prefix kept: a server behind a proxy at
``https://host/mlflow`` serves its UI there too). Its URL is
:func:`showwork.tracking.mlflow_format.runs_table_path` (the one builder of these links, which
``showwork search`` and ``showwork ui`` print too) on that address: the search's trial runs, best
first.

A store without a server (a SQLite file, a file store, a database that ``mlflow server`` reads)
has no address: the report gives the command that serves it, ``showwork ui --tracking-uri ...``,
and the runs table's URL at that command's default address (:func:`showwork.tracking.ui.ui_address`,
``http://127.0.0.1:5000``), as ``showwork search`` words it. Other stores (Databricks, a plugin's
scheme) get the parent run's id alone.

What the report never shows
---------------------------
Secrets: a URI's user, password and query (:func:`showwork.redaction.strip_credentials`).
Folders of the machine the report was written on: a SQLite file or a file store is shown by its
name alone (``sqlite:////home/me/x/mlflow.db`` as ``sqlite:///mlflow.db``), and the command serves
it from the folder that holds it.
"""

from __future__ import annotations

import posixpath
import re
import urllib.parse
from dataclasses import asdict, dataclass
from pathlib import PurePath

from showwork.redaction import strip_credentials
from showwork.report.inputs import FamilyResults
from showwork.report.render import Linked
from showwork.tracking.mlflow_format import runs_table_path
from showwork.tracking.ui import ui_address

__all__ = [
    "shown_source","RunLinks", "family_links", "run_links", "runs_line", "shown_store"]

_SERVER_SCHEMES = ("http", "https")
_DATABASE_DIALECTS = ("postgresql", "mysql", "mssql")  # what `mlflow server` reads besides SQLite and files
_OTHER_STORES = ("databricks", "databricks-uc", "uc")  # no scheme, or not one `showwork ui` can serve
DEFAULT_SCORE_KEY = "best_val_score"
"""The metric every trial run of a ``showwork search`` holds its score in: the runs table's order."""


@dataclass(frozen=True)
class RunLinks:
    """A family's MLflow runs as the report names them.

    Attributes
    ----------
    parent_run_id : str or None
        The search's parent run (None: runs read from MLflow without one, or a ledger that recorded none).
    experiment_id : str or None
        Its experiment (None: a ledger written before showwork recorded it).
    tracking_uri : str
        The store as shown (:func:`shown_store`): no credentials, no folders.
    runs_url : str or None
        The runs table on the tracking server itself; only for ``http(s)://`` stores.
    ui_command : str or None
        For a store without a server: the command that serves it.
    ui_runs_url : str or None
        ... and the runs table's URL once that command serves it at its default address.
    """

    parent_run_id: str | None
    experiment_id: str | None
    tracking_uri: str
    runs_url: str | None = None
    ui_command: str | None = None
    ui_runs_url: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)

    @property
    def url(self) -> str | None:
        """The runs table's URL the report links: the server's, else the one ``showwork ui`` would serve."""
        return self.runs_url or self.ui_runs_url

    def text(self) -> str:
        """The "Runs" sentence, without the URL that follows it (:attr:`url`)."""
        if self.parent_run_id:
            what = f"MLflow parent run {self.parent_run_id}"
            if self.experiment_id:
                what += f", experiment {self.experiment_id}"
        else:
            what = f"MLflow experiment {self.experiment_id}" if self.experiment_id else "MLflow runs"
        where = "at" if _scheme(self.tracking_uri) in _SERVER_SCHEMES else "in"
        out = f"{what} {where} {self.tracking_uri}"
        if self.runs_url:
            return out + "; its runs table, best first:"
        if self.ui_command:
            if self.ui_runs_url:
                return out + f"; serve it with {self.ui_command}{self._folder_note()}, then its runs table:"
            return out + f"; {self.ui_command}{self._folder_note()} lists each search's runs table."
        return out + "."

    def _folder_note(self) -> str:
        """Where to run the command: a local store is shown by its name alone."""
        if _scheme(self.tracking_uri) in ("sqlite", ""):
            return f" (in the folder that holds {_file_name(self.tracking_uri)})"
        return ""


def shown_store(tracking_uri: str) -> str:
    """``tracking_uri`` as a report shows it: without credentials or query, a local store by its name alone.

    Examples
    --------
    >>> shown_store("http://user:secret@host:5000/")
    'http://host:5000'
    >>> shown_store("sqlite:////home/me/x/mlflow.db")
    'sqlite:///mlflow.db'
    >>> shown_store("file:///home/me/x/mlruns")
    './mlruns'
    """
    uri = tracking_uri.strip()
    scheme = _scheme(uri)
    if scheme in _SERVER_SCHEMES:
        return strip_credentials(uri).rstrip("/")
    if scheme == "sqlite":
        return f"sqlite:///{_file_name(uri)}"
    if scheme in ("", "file"):
        return f"./{_file_name(uri)}"
    return strip_credentials(uri)


_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S+")
_TRAILING = ",;:)]'\""


def shown_source(source: str) -> str:
    """Where a family's trials were read from, as a report shows it: no folder of the user's machine or of a repository.

    A store's URI is shown as :func:`shown_store` shows it (no credentials, a local store by its
    name); any other word with a folder in it (a results file, a ledger's folder, a Ray Tune
    experiment) by its last part. Error messages keep the whole path (they are for the user, on
    their machine); the report's files are for others.

    Examples
    --------
    >>> shown_source("/home/me/paper/results/deberta.csv")
    'deberta.csv'
    >>> shown_source("MLflow at sqlite:////home/me/x/mlflow.db, experiment 'mlp'")
    "MLflow at sqlite:///mlflow.db, experiment 'mlp'"
    >>> shown_source("Ray Tune experiment ~/ray_results/mlp (each trial's best acc)")
    "Ray Tune experiment mlp (each trial's best acc)"
    """
    words = []
    for word in source.split(" "):
        core = word.rstrip(_TRAILING)
        tail = word[len(core):]
        if _URI.fullmatch(core) or core.startswith("sqlite:") or core.startswith("file:"):
            core = shown_store(core)
        elif "/" in core or "\\" in core:
            core = PurePath(core.replace("\\", "/")).name or core
        words.append(core + tail)
    return " ".join(words)


def run_links(tracking_uri: str, experiment_id: str | None, parent_run_id: str | None, *, mode: str = "max",
              metric: str = DEFAULT_SCORE_KEY) -> RunLinks:
    """The links to a search's runs in ``tracking_uri`` (see the module's docstring for what is shown where).

    ``mode`` (max or min) and ``metric`` (the trial runs' score) order the runs table, best first;
    ``parent_run_id`` filters it to that run's children (without it: every run of the experiment).
    """
    store = shown_store(tracking_uri)
    scheme = _scheme(tracking_uri.strip())
    path = None if not experiment_id else runs_table_path(experiment_id, mode, metric=metric, parent_run_id=parent_run_id)
    if scheme in _SERVER_SCHEMES:
        return RunLinks(parent_run_id, experiment_id, store, runs_url=f"{store}/{path}" if path else None)
    if _local_file(tracking_uri) or scheme.partition("+")[0] in _DATABASE_DIALECTS:
        return RunLinks(parent_run_id, experiment_id, store, ui_command=f"showwork ui --tracking-uri {store}",
                        ui_runs_url=f"{ui_address()}/{path}" if path else None)
    return RunLinks(parent_run_id, experiment_id, store)


def family_links(results: FamilyResults) -> RunLinks | None:
    """A family's :class:`RunLinks`, from what its reader recorded (``meta``); None for a source without MLflow.

    Ledgers record ``tracking_uri``, ``parent_run_id`` and (since issue 34) ``experiment_id``;
    :func:`showwork.report.sources_mlflow.from_mlflow` records them and ``score_key``, the metric
    the runs hold the score in. Results files, Ray Tune experiments and Optuna studies have none.
    """
    meta = results.meta
    uri = meta.get("tracking_uri")
    if not isinstance(uri, str) or not uri.strip():
        return None
    return run_links(uri, meta.get("experiment_id"), meta.get("parent_run_id"), mode="min" if results.minimize else "max",
                     metric=meta.get("score_key") or DEFAULT_SCORE_KEY)


def runs_line(name: str, results: FamilyResults) -> str | Linked | None:
    """The family's "Runs" line of the report's sources (ending in the runs table's link where there is one);
    None for a source without MLflow."""
    links = family_links(results)
    if links is None:
        return None
    line = f"{name} runs: {links.text()}"
    return Linked(line, links.url) if links.url else line


def _scheme(uri: str) -> str:
    """The URI's scheme, lower case; "" for a local path; the name of a store without one (``databricks``)."""
    if uri.lower() in _OTHER_STORES:
        return uri.lower()
    scheme = urllib.parse.urlsplit(uri).scheme.lower()
    return "" if len(scheme) == 1 else scheme  # C:\\mlruns: a drive letter, not a scheme


def _local_file(uri: str) -> bool:
    """Whether the store is a file or folder ``showwork ui`` can serve (a SQLite file, a file store), not SQLite in memory."""
    scheme = _scheme(uri.strip())
    if scheme == "sqlite":
        return _file_name(uri) not in ("", ":memory:")
    return scheme in ("", "file")


def _file_name(uri: str) -> str:
    """The last part of a local store's path (``sqlite:////a/b/mlflow.db`` -> ``mlflow.db``), without a query."""
    path = uri.split("?", 1)[0]
    if "://" in path:
        path = path.split("://", 1)[1]
    elif path.lower().startswith("file:"):
        path = path[len("file:"):]
    return posixpath.basename(path.replace("\\", "/").rstrip("/"))

"""The projection of a search's ledger into MLflow: one parent run per search, one child per trial.

MLflow is a *view* of the ledger (:mod:`showwork.ledger`), never the source of truth. Only the
driver writes to it, through :class:`Tracker`, which uses ``mlflow.tracking.MlflowClient``
explicitly (no global active run) and makes every write idempotent: a child run is found by its
trial index before one is created, metric points already logged are not logged again, and a run
whose projection is complete carries the tag ``showwork.logged=1``. So the projection can be
replayed at any time — after a driver crash or an MLflow outage — with :func:`sync_ledger`.

Every MLflow call goes through a retry helper: on connection errors and "database is locked" it
retries with exponential backoff (5 attempts over about 8 s by default), warning on each retry,
then raises :class:`TrackingUnavailableError`. The driver catches that and goes on; the ledger
holds the result and a later replay (``showwork search SPACE --resume``, :func:`sync_ledger`)
logs it. Once a call has failed every attempt, the tracker takes MLflow for down: later calls
make one attempt each, without waiting, until one succeeds, so that a search whose server stays
down does not spend 8 s on each of its queued writes.

Param and metric names go to MLflow under the injective keys of :mod:`showwork.mlflow_format`: a
name MLflow cannot take as it is (``acc@1``, a name over 250 characters) gets a cleaned key with a
hash suffix, recorded in the run's tags ``showwork.param_names`` / ``showwork.metric_names``, so no
two names share a key and no value is lost; :func:`showwork.report.inputs.from_mlflow` reads the names
back. A SQLite store is created or migrated under a file lock (``mlflow.db.lock`` beside it), so
processes opening a fresh store together do not race on making its tables.

``mlflow`` is imported lazily, on first use, so that ``import showwork`` stays light; before it is
imported, ``MLFLOW_DISABLE_TELEMETRY`` is set to ``true`` unless already set.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import time
import warnings
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from showwork.environment import strip_credentials
from showwork.errors import InputError
from showwork.ledger import Ledger, TrialRecord
from showwork.mlflow_format import (
    METRIC_NAMES_TAG,
    PARAM_NAMES_TAG,
    KeyCollisionError,
    key_names,
    key_names_tags,
    mlflow_keys,
    shown_name,
)

if TYPE_CHECKING:  # pragma: no cover
    from mlflow.entities import Run
    from mlflow.tracking import MlflowClient

__all__ = [
    "TrackingUnavailableError",
    "Tracker",
    "default_tracking_uri",
    "all_runs",
    "check_param_names",
    "environment_tags",
    "parent_payload",
    "prepare_store",
    "read_client",
    "space_markdown",
    "sync_ledger",
]

MAX_PARAM_LENGTH = 6000  # mlflow.utils.validation.MAX_PARAM_VAL_LENGTH
MAX_TAG_LENGTH = 8000  # mlflow.utils.validation.MAX_TAG_VAL_LENGTH
MAX_KEY_LENGTH = 250  # mlflow.utils.validation.MAX_ENTITY_KEY_LENGTH
_PARAMS_PER_BATCH = 100
_METRICS_PER_BATCH = 1000
_ERROR_TAG_LENGTH = 5000

TRIAL_INDEX_TAG = "showwork.trial_index"
SEARCH_TAG = "showwork.search"
SEARCH_ID_TAG = "showwork.search_id"  # the ledger's id of a search, on its parent run
LOGGED_TAG = "showwork.logged"
ROLE_TAG = "showwork.role"  # "parent" (the search) or "trial"
_HISTORY_TAG = "showwork.history_logged"
_PARENT_TAG = "mlflow.parentRunId"
_TERMINAL = ("FINISHED", "FAILED", "KILLED")
_STATUS_OF = {"finished": "FINISHED", "failed": "FAILED", "timeout": "FAILED"}
_FINAL_METRICS = ("best_val_score", "test_score", "runtime_s", "gpu_seconds")
_RESERVED_PARAMS = ("trial_index", "seed")
_KEY_CHARS = re.compile(r"[^A-Za-z0-9_\-. :/]")
_RUN_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_TRANSIENT_TEXT = re.compile(
    r"database is locked|database table is locked|unable to open database|connection (refused|reset|aborted)"
    r"|failed to establish a new connection|max retries exceeded|could not connect|connection timed out"
    r"|read timed out|temporarily unavailable|server closed the connection|remote end closed"
    r"|error code (429|502|503|504)",
    re.IGNORECASE,
)

T = TypeVar("T")


class TrackingUnavailableError(InputError):
    """MLflow cannot be reached (server down, database locked or unreadable).

    The ledger keeps every result; ``showwork search SPACE --resume`` (:func:`sync_ledger`) replays them later.
    """


def default_tracking_uri(workdir: str | os.PathLike) -> str:
    """Return ``sqlite:///<absolute path>/mlflow.db`` for a working directory (nothing is created)."""
    return f"sqlite:///{Path(workdir).expanduser().resolve() / 'mlflow.db'}"


def _import_mlflow():
    """Import mlflow (about 2 s) with telemetry off unless the user set it; return the client class."""
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    from mlflow.tracking import MlflowClient

    return MlflowClient


def _entities():
    """Return mlflow's ``(Metric, Param, RunTag, ViewType)`` classes."""
    _import_mlflow()
    from mlflow.entities import Metric, Param, RunTag, ViewType

    return Metric, Param, RunTag, ViewType


# ---------------------------------------------------------------- small pure helpers


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


def _is_transient(error: BaseException) -> bool:
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


def _tag_key(name: str) -> str:
    """An MLflow-legal tag key for showwork's own tag names: other characters become ``_``; at most 250 characters.

    Params and metrics, whose names come from the user, go through :func:`showwork.mlflow_format.mlflow_keys`
    instead (injective, recorded on the run).
    """
    return _KEY_CHARS.sub("_", str(name))[:MAX_KEY_LENGTH] or "_"


def _renaming_warning(kind: str, keys: Mapping[str, str], tag: str) -> str | None:
    """One line naming the ``kind`` (param, metric) names that MLflow gets under another key, or None."""
    renamed = sorted((name, key) for name, key in keys.items() if name != key)
    if not renamed:
        return None
    shown = "; ".join(f"{shown_name(name)} as {shown_name(key)}" for name, key in renamed[:5])
    more = f"; and {len(renamed) - 5} more" if len(renamed) > 5 else ""
    return (
        f"MLflow keys are at most {MAX_KEY_LENGTH} letters, digits and _-. :/ characters, so these {kind} names are"
        f" logged under other keys (the run's tag {tag} maps them back; showwork report mlflow: reads the names):"
        f" {shown}{more}"
    )


def check_param_names(names: Iterable[str], where: str = "the search space") -> dict[str, str]:
    """Map hyperparameter names to the MLflow param keys of a search (``hp.`` prefix, ``space.`` on the parent).

    Call it before a search starts: it warns once about the names MLflow gets under another key and
    refuses names built so that no two distinct keys are left.

    Returns
    -------
    dict
        ``{name: key}`` of the child runs' params.

    Raises
    ------
    InputError
        Two names cannot be given distinct keys (the message names both).
    """
    names = list(names)
    child = {_param_name(name): name for name in names}
    try:
        keys = mlflow_keys([*child, *_RESERVED_PARAMS])
        parent_keys = mlflow_keys(f"space.{name}" for name in names)  # the parent's description of the space
    except KeyCollisionError as error:
        raise InputError(f"{where}: parameters {error}") from None
    message = _renaming_warning("parameter", {**parent_keys, **keys}, PARAM_NAMES_TAG)
    if message:
        warnings.warn(message, stacklevel=2)
    return {child[name]: key for name, key in keys.items() if name in child}


def _param_name(name: str) -> str:
    """The param name of a hyperparameter on a child run: ``hp.<name>`` for the names showwork logs itself."""
    return f"hp.{name}" if name in _RESERVED_PARAMS else name


def _mlflow_keys(names: Iterable[Any], taken: Mapping[str, str]) -> dict[str, str]:
    """:func:`showwork.mlflow_format.mlflow_keys`, its refusal as an InputError (names built to collide)."""
    try:
        return mlflow_keys((str(name) for name in names), taken)
    except KeyCollisionError as error:
        raise InputError(f"MLflow: {error}") from None


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _head_and_tail(text: str, limit: int) -> str:
    """Shorten a traceback to ``limit`` characters, keeping its start and its end."""
    if len(text) <= limit:
        return text
    half = (limit - 5) // 2
    return text[:half] + "\n...\n" + text[-half:]


def _millis(timestamp: str | None) -> int | None:
    if not timestamp:
        return None
    try:
        return int(datetime.fromisoformat(timestamp).timestamp() * 1000)
    except ValueError:
        return None


def _numeric_items(values: Mapping[str, Any], prefix: str = "") -> list[tuple[str, float]]:
    """Flatten nested mappings with dots and keep the numbers (bools and strings are skipped)."""
    out = []
    for name, value in values.items():
        key = f"{prefix}{name}"
        if isinstance(value, Mapping):
            out.extend(_numeric_items(value, f"{key}."))
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out.append((key, float(value)))
    return out


def _same(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def _clamped(value: float) -> float:
    """MLflow stores +-inf as +-1.7976931348623157e308; compare logged values after the same clamp."""
    if math.isinf(value):
        return math.copysign(1.7976931348623157e308, value)
    return value


def _sqlite_path(uri: str) -> Path | None:
    if not uri.startswith("sqlite:///"):
        return None
    rest = uri[len("sqlite:///"):].split("?", 1)[0]
    if not rest or rest == ":memory:":
        return None
    return Path(rest).expanduser().absolute()


def _describe(distribution: Any) -> str:
    """A distribution's readable description: its ``describe()`` if it has one, else ``str()``."""
    describe = getattr(distribution, "describe", None)
    return str(describe()) if callable(describe) else str(distribution)


def space_markdown(space: Mapping[str, Any], title: str = "Search space") -> str:
    """Return a Markdown table of the search space.

    ``space`` maps each hyperparameter name to a distribution (its ``describe()`` is used, e.g.
    a :class:`showwork.search_space.SearchSpace`) or directly to a description string.
    """
    lines = [f"# {title}", "", "| hyperparameter | distribution |", "| --- | --- |"]
    for name, distribution in space.items():
        cell = _describe(distribution).replace("|", "\\|").replace("\n", " ")
        lines.append(f"| `{name}` | {cell} |")
    return "\n".join(lines) + "\n"


def environment_tags(environment: Mapping[str, Any]) -> dict[str, str]:
    """Return run tags from :func:`showwork.environment.collect_environment` output.

    ``showwork.git_commit`` and ``mlflow.source.git.commit`` (the commit the MLflow UI shows),
    ``showwork.git_dirty``, ``showwork.cpu``, ``showwork.gpu``, ``showwork.gpu_count``,
    ``showwork.cuda``, ``showwork.nvidia_driver``, ``showwork.python`` and one
    ``showwork.package.<name>`` per installed package. Unknown values are left out.
    """
    tags: dict[str, str] = {}
    commit = environment.get("git_commit")
    if commit:
        tags["showwork.git_commit"] = str(commit)
        tags["mlflow.source.git.commit"] = str(commit)
    if environment.get("git_dirty") is not None:
        tags["showwork.git_dirty"] = str(bool(environment["git_dirty"])).lower()
    for tag, key in (
        ("showwork.cpu", "cpu_model"), ("showwork.gpu", "gpu_model"), ("showwork.gpu_count", "gpu_count"),
        ("showwork.cuda", "cuda_version"), ("showwork.nvidia_driver", "nvidia_driver"), ("showwork.python", "python"),
    ):
        if environment.get(key) is not None:
            tags[tag] = _truncate(str(environment[key]), MAX_TAG_LENGTH)
    for name, version in (environment.get("packages") or {}).items():
        if version:
            tags[f"showwork.package.{name}"] = str(version)
    return tags


def parent_payload(
    spec_yaml: str,
    seed: int,
    num_trials: int,
    space: Mapping[str, Any],
    environment: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], dict[str, str], dict[str, str]]:
    """Return ``(params, tags, artifacts)`` for :meth:`Tracker.start_parent` of a search.

    Parameters
    ----------
    spec_yaml : str
        The search's YAML file, as written (artifact ``search.yaml``).
    seed, num_trials : int
        Params ``seed`` and ``num_trials``.
    space : mapping
        Hyperparameter name → distribution (or its description): params ``space.<name>``
        (truncated to MLflow's 6000 characters) and the artifact ``space.md``.
    environment : mapping, optional
        :func:`showwork.environment.collect_environment` output: tags (:func:`environment_tags`)
        and the artifact ``environment.json``.
    """
    params: dict[str, Any] = {"seed": seed, "num_trials": num_trials}
    params.update(_space_params(space))
    artifacts = {"search.yaml": spec_yaml, "space.md": space_markdown(space)}
    tags: dict[str, str] = {}
    if environment is not None:
        tags.update(environment_tags(environment))
        artifacts["environment.json"] = _environment_json(environment)
    return params, tags, artifacts


def _space_params(space: Mapping[str, Any]) -> dict[str, str]:
    return {f"space.{name}": _describe(distribution) for name, distribution in space.items()}


def _environment_json(environment: Mapping[str, Any]) -> str:
    return json.dumps(environment, indent=2, sort_keys=True, default=str) + "\n"


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
    database = _sqlite_path(tracking_uri)
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
    client_class = _import_mlflow()
    with _store_lock(tracking_uri):
        client = client_class(tracking_uri=tracking_uri)
        if _sqlite_path(tracking_uri) is not None:
            client.search_experiments(max_results=1)  # the store is whole before another process opens it
    return client


def prepare_store(tracking_uri: str) -> None:
    """Create or migrate a SQLite store now, under the store's lock (before ``mlflow ui`` opens it); others: nothing.

    Raises
    ------
    TrackingUnavailableError
        The database cannot be opened or made.
    """
    if _sqlite_path(tracking_uri) is not None:
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
        database = _sqlite_path(tracking_uri)
        answer = None if database else _not_mlflow(error)
        if answer:  # a web server, a proxy's error page, another service: say so in one short line
            raise TrackingUnavailableError(
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
    database = _sqlite_path(tracking_uri)
    if database is not None and not database.is_file():
        raise InputError(f"no MLflow database at {database} (tracking URI {tracking_uri})")
    return _probe(lambda: _open_client(tracking_uri), tracking_uri, timeout_s)


def all_runs(client: MlflowClient, experiment_id: str, filter_string: str = "") -> list[Run]:
    """Return every active (not deleted) run of an experiment that matches ``filter_string``, oldest first."""
    ViewType = _entities()[3]  # noqa: N806

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


# ---------------------------------------------------------------- the tracker


class Tracker:
    """Writes a search into one MLflow experiment through an explicit ``MlflowClient``.

    Nothing touches MLflow until first use: the constructor is instant and cannot fail on an
    unreachable server; call :meth:`check_reachable` before starting trials.

    Parameters
    ----------
    tracking_uri : str
        ``sqlite:///...``, ``http(s)://...`` or any URI MLflow accepts.
    experiment_name : str
        The experiment, created if missing (the search's name).
    artifact_location : str, optional
        Where a *new* experiment stores artifacts. Default for a SQLite URI:
        ``<directory of the database>/mlartifacts/<experiment>`` (MLflow's own default is
        ``./mlruns`` under whatever the current directory is); for a server: the server's choice.
    attempts : int, default 5
        Tries per MLflow call on connection errors and "database is locked".
    backoff_s : float, default 0.5
        First delay between tries; it doubles each time (0.5 + 1 + 2 + 4 = 7.5 s in all).

    Notes
    -----
    For an HTTP server, MLflow's own per-request retries are kept short
    (``MLFLOW_HTTP_REQUEST_MAX_RETRIES=0`` and ``MLFLOW_HTTP_REQUEST_TIMEOUT=30`` unless set in
    the environment) since the tracker retries itself; otherwise one unreachable call would take
    minutes.
    """

    def __init__(
        self,
        tracking_uri: str,
        experiment_name: str,
        *,
        artifact_location: str | None = None,
        attempts: int = 5,
        backoff_s: float = 0.5,
    ) -> None:
        if not isinstance(tracking_uri, str) or not tracking_uri.strip():
            raise InputError(f"MLflow tracking URI must be a non-empty string, not {tracking_uri!r}")
        if not isinstance(experiment_name, str) or not experiment_name.strip():
            raise InputError(f"MLflow experiment name must be a non-empty string, not {experiment_name!r}")
        if attempts < 1 or backoff_s < 0:
            raise InputError(f"Tracker: attempts must be >= 1 and backoff_s >= 0 (attempts={attempts}, backoff_s={backoff_s})")
        self.tracking_uri = tracking_uri.strip()
        self.shown_uri = strip_credentials(self.tracking_uri)  # in messages: no user or password
        self.experiment_name = experiment_name
        self.attempts = attempts
        self.backoff_s = backoff_s
        if artifact_location is None:
            database = _sqlite_path(self.tracking_uri)
            if database is not None:
                safe = re.sub(r"[^A-Za-z0-9._-]", "_", experiment_name)
                artifact_location = (database.parent / "mlartifacts" / safe).as_uri()
        self.artifact_location = artifact_location
        if self.tracking_uri.startswith(("http://", "https://")):
            os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
            os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")
            # MLflow prints two "View run ... at URI" lines per ended run (an extra request each),
            # with the URI as given, password included; showwork prints its own summary.
            os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
        self._client: MlflowClient | None = None
        self._experiment_id: str | None = None
        self._children: dict[tuple[str, int], str] = {}
        self._metric_names: dict[str, dict[str, str]] = {}  # run id -> {key: name} recorded on it
        self._warned: set[str] = set()  # metric names already reported as renamed
        self._down = False  # a call failed every attempt; no answer from MLflow since

    def __repr__(self) -> str:
        return f"Tracker({self.shown_uri!r}, {self.experiment_name!r})"

    def __getstate__(self) -> dict[str, Any]:
        # Ray Tune pickles the driver's callbacks, and with them this tracker, into its experiment
        # state under --storage: no client and no password go there (a copy reconnects without it;
        # MLFLOW_TRACKING_USERNAME/PASSWORD authenticate it).
        state = dict(self.__dict__)
        state["_client"] = None
        state["tracking_uri"] = self.shown_uri
        return state

    # -- plumbing

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

    def _call(self, what: str, function: Callable[[], T]) -> T:
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
                if not _is_transient(error):
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

    @property
    def experiment_id(self) -> str:
        """The id of the experiment, created on first access if it does not exist."""
        if self._experiment_id is None:
            self._experiment_id = self._call("getting the experiment", self._get_or_create_experiment)
        return self._experiment_id

    def _get_or_create_experiment(self) -> str:
        experiment = self.client.get_experiment_by_name(self.experiment_name)
        if experiment is None:
            try:
                return self.client.create_experiment(
                    self.experiment_name, artifact_location=self.artifact_location, tags={SEARCH_TAG: self.experiment_name}
                )
            except Exception as error:
                if "already exists" not in str(error).lower():  # created meanwhile by someone else
                    raise
                experiment = self.client.get_experiment_by_name(self.experiment_name)
                if experiment is None:
                    raise
        if experiment.lifecycle_stage != "active":
            raise InputError(
                f"MLflow at {self.shown_uri}: experiment {self.experiment_name!r} (id {experiment.experiment_id})"
                " is deleted; restore it (`mlflow experiments restore`), delete it for good"
                " (`mlflow gc`), or name the search differently"
            )
        return experiment.experiment_id

    def check_reachable(self, timeout_s: float = 5.0) -> None:
        """Make one cheap call (no retries, ``timeout_s`` per HTTP request), then get the experiment.

        Raises
        ------
        TrackingUnavailableError
            If the server or database cannot be reached or read; the message names the URI.
        InputError
            If the experiment exists but is deleted.
        """
        _probe(lambda: self.client, self.tracking_uri, timeout_s)
        self.experiment_id  # noqa: B018  (creates the experiment now, not mid-search)

    # -- writing helpers

    def _log_batch(self, run_id: str, metrics=(), params=(), tags=()) -> None:
        """``log_batch`` in chunks within MLflow's limits, synchronously (errors surface here).

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

    @staticmethod
    def _param_entities(params: Mapping[str, Any], run_tags: Mapping[str, str]) -> tuple[list, dict[str, str]]:
        """Params under injective keys (those already recorded in ``run_tags`` kept): ``(entities, {name: key})``."""
        Param = _entities()[1]  # noqa: N806

        keys = _mlflow_keys(params, key_names(run_tags, PARAM_NAMES_TAG))
        entities = [Param(keys[str(name)], _truncate(str(value), MAX_PARAM_LENGTH)) for name, value in params.items()]
        return entities, keys

    @staticmethod
    def _tag_entities(tags: Mapping[str, Any]):
        RunTag = _entities()[2]  # noqa: N806

        return [RunTag(_tag_key(name), _truncate(str(value), MAX_TAG_LENGTH)) for name, value in tags.items()]

    def _metric_keys(self, run_id: str, names: Iterable[str], run_tags: Mapping[str, str] | None = None) -> dict[str, str]:
        """``{name: key}`` for a run's metrics; new renamings are recorded on the run (and warned of once) first.

        The map is kept per run, so a run logged epoch by epoch, then replayed, uses one key per name.
        """
        known = self._metric_names.get(run_id)
        if known is None:
            tags = run_tags if run_tags is not None else self._get_run(run_id).data.tags
            known = self._metric_names[run_id] = key_names(tags, METRIC_NAMES_TAG)
        keys = _mlflow_keys(names, known)
        new = {name: key for name, key in keys.items() if key != name and key not in known}
        if new:
            known = {**known, **{key: name for name, key in new.items()}}
            recorded = key_names_tags({name: key for key, name in known.items()}, METRIC_NAMES_TAG)
            self._log_batch(run_id, tags=self._tag_entities(recorded))  # the map before the values
            self._metric_names[run_id] = known  # only once recorded: a failed write is tried again
            message = _renaming_warning("metric", {n: k for n, k in new.items() if n not in self._warned}, METRIC_NAMES_TAG)
            self._warned.update(new)
            if message:
                warnings.warn(f"{message} (in every trial that reports them)", stacklevel=4)
        return keys

    def _get_run(self, run_id: str) -> Run:
        if not isinstance(run_id, str) or not _RUN_ID.match(run_id):
            raise InputError(f"MLflow run id {run_id!r} is not valid")
        try:
            return self.client.get_run(run_id)
        except Exception as error:
            if _is_transient(error):
                raise
            raise InputError(f"MLflow at {self.shown_uri}: no run {run_id!r} ({_short(error, 160)})") from error

    # -- the parent run

    def start_parent(
        self,
        run_name: str,
        params: Mapping[str, Any],
        tags: Mapping[str, Any],
        artifacts: Mapping[str, str],
        *,
        environment: Mapping[str, Any] | None = None,
        space: Mapping[str, Any] | None = None,
        search_id: str | None = None,
    ) -> str:
        """Create the parent run of a search and log its params, tags and text artifacts.

        With ``search_id``, the run is found or created by its tag ``showwork.search_id``, and
        whatever of its params is already there is left as it is: a driver killed after it created
        the run (before the ledger kept the run's id), or a creation whose reply was lost, is
        finished on the next call instead of leaving a second parent behind.

        Parameters
        ----------
        run_name : str
        params : mapping
            Values are logged as strings truncated to 6000 characters (MLflow's limit); a name
            MLflow cannot take as a key gets the key of :func:`showwork.mlflow_format.mlflow_keys`
            (recorded in the tag ``showwork.param_names``).
        tags : mapping
            Tags (truncated to 8000 characters); ``showwork.search`` and ``showwork.role=parent``
            are added.
        artifacts : mapping
            Artifact file name (``search.yaml``, ``space.md``, ...) → text.
        environment : mapping, optional
            :func:`showwork.environment.collect_environment` output: adds the tags of
            :func:`environment_tags` (``tags`` win on a clash) and the artifact
            ``environment.json`` (unless ``artifacts`` has one).
        space : mapping, optional
            Hyperparameter name → distribution (e.g. a :class:`showwork.search_space.SearchSpace`)
            or description: adds params ``space.<name>`` and the artifact ``space.md`` (unless
            ``artifacts`` has one).
        search_id : str, optional
            The search's id from the ledger's metadata (written before this call).

        Returns
        -------
        str
            The run id (store it in the ledger's metadata to resume).

        See Also
        --------
        parent_payload : the params, tags and artifacts of a search.
        """
        params, artifacts = dict(params), dict(artifacts)
        all_tags: dict[str, Any] = {}
        if environment is not None:
            all_tags.update(environment_tags(environment))
            artifacts.setdefault("environment.json", _environment_json(environment))
        if space is not None:
            params.update({k: v for k, v in _space_params(space).items() if k not in params})
            artifacts.setdefault("space.md", space_markdown(space))
        all_tags.update({**tags, SEARCH_TAG: self.experiment_name, ROLE_TAG: "parent"})
        if search_id is not None:
            if not isinstance(search_id, str) or not _RUN_ID.match(search_id):
                raise InputError(f"start_parent: search_id must be 1 to 64 letters, digits, '_' or '-', not {search_id!r}")
            all_tags[SEARCH_ID_TAG] = search_id
        experiment_id = self.experiment_id

        def find_or_create() -> Run:  # one retried unit: a retry searches again before creating
            if search_id is not None:
                found = self._find_children(f"tags.`{SEARCH_ID_TAG}` = '{search_id}'")
                if found:
                    return found[0]
            first_tags = {SEARCH_TAG: self.experiment_name, **({SEARCH_ID_TAG: search_id} if search_id else {})}
            return self.client.create_run(experiment_id, run_name=run_name, tags=first_tags)

        run = self._call("creating the parent run", find_or_create)
        run_id = run.info.run_id
        logged = run.data.params
        entities, keys = self._param_entities(params, run.data.tags)
        new_params = [entity for entity in entities if entity.key not in logged]
        all_tags.update(key_names_tags(keys, PARAM_NAMES_TAG))
        self._call(
            "logging the parent's params and tags",
            lambda: self._log_batch(run_id, params=new_params, tags=self._tag_entities(all_tags)),
        )
        for name, text in artifacts.items():
            self._call(f"logging artifact {name}", lambda name=name, text=text: self.client.log_text(run_id, text, name))
        return run_id

    def resume_parent(self, run_id: str) -> None:
        """Set the parent run of a resumed search back to RUNNING.

        Raises
        ------
        InputError
            If the run does not exist or belongs to another experiment.
        """
        run = self._call("reading the parent run", lambda: self._get_run(run_id))
        if run.info.experiment_id != self.experiment_id:
            raise InputError(
                f"MLflow at {self.shown_uri}: run {run_id} belongs to experiment {run.info.experiment_id},"
                f" not to {self.experiment_name!r} ({self.experiment_id})"
            )
        if run.info.lifecycle_stage != "active":
            raise InputError(f"MLflow at {self.shown_uri}: parent run {run_id} is deleted; restore it or start afresh")
        self._call("resuming the parent run", lambda: self.client.update_run(run_id, status="RUNNING"))

    def finish_parent(self, run_id: str, status: str = "FINISHED", summary_metrics: Mapping[str, Any] | None = None) -> None:
        """Log summary metrics (numbers only) on the parent and terminate it.

        Parameters
        ----------
        status : {"FINISHED", "FAILED", "KILLED"}
        """
        if status not in _TERMINAL:
            raise InputError(f"finish_parent: status must be one of {', '.join(_TERMINAL)}, not {status!r}")
        Metric = _entities()[0]  # noqa: N806

        now = int(time.time() * 1000)
        summary = _numeric_items(summary_metrics or {})
        keys = _mlflow_keys((k for k, _ in summary), {})  # showwork's own names: each its own key
        metrics = [Metric(keys[k], v, now, 0) for k, v in summary]
        self._call("logging the summary metrics", lambda: self._log_batch(run_id, metrics=metrics))
        self._call("terminating the parent run", lambda: self.client.set_terminated(run_id, status))

    def log_report(self, run_id: str, directory: str | os.PathLike, artifact_path: str = "report") -> None:
        """Log every file under ``directory`` (subdirectories kept) as artifacts of a run.

        Works on a terminated run too: the report of a finished search goes on its parent run.
        Files already there under the same names are replaced, so a retry or a second report
        is harmless.

        Parameters
        ----------
        run_id : str
        directory : path
            An existing directory (e.g. the output of ``showwork report``).
        artifact_path : str, default "report"
            The artifact folder the files go to; ``""`` for the run's artifact root.

        Raises
        ------
        InputError
            ``directory`` is not a directory, or there is no run ``run_id``.
        TrackingUnavailableError
            MLflow stayed unreachable through every retry.
        """
        directory = Path(directory)
        if not directory.is_dir():
            raise InputError(f"log_report: {directory} is not a directory")

        def log() -> None:  # one retried unit; logging the same files again overwrites them
            self._get_run(run_id)
            self.client.log_artifacts(run_id, str(directory), artifact_path or None)

        self._call(f"logging the report {directory} on run {run_id}", log)

    # -- child runs

    def _find_children(self, filter_string: str) -> list[Run]:
        return all_runs(self.client, self.experiment_id, filter_string)

    def children(self, parent_run_id: str) -> dict[int, Run]:
        """Return the active child runs of a parent by trial index (the earliest if several)."""
        self._check_run_id(parent_run_id)
        runs = self._call(
            "listing the trial runs",
            lambda: self._find_children(f"tags.`{_PARENT_TAG}` = '{parent_run_id}'"),
        )
        found: dict[int, Run] = {}
        for run in runs:
            index = run.data.tags.get(TRIAL_INDEX_TAG)
            if index is not None and index.isdigit() and int(index) not in found:
                found[int(index)] = run
                self._children[(parent_run_id, int(index))] = run.info.run_id
        return found

    @staticmethod
    def _check_run_id(run_id: str) -> None:
        if not isinstance(run_id, str) or not _RUN_ID.match(run_id):
            raise InputError(f"MLflow run id {run_id!r} is not valid")

    def child_run(self, parent_run_id: str, index: int, start_time: str | None = None) -> str:
        """Return the child run of trial ``index``, creating it (``trial-0007``) only if there is none.

        The run is found by its tags ``showwork.trial_index`` and ``mlflow.parentRunId``, so a
        resumed search never makes a second child for the same trial.

        Parameters
        ----------
        start_time : str, optional
            ISO-8601 start of the trial, used as the run's start time when it is created.
        """
        self._check_run_id(parent_run_id)
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise InputError(f"child_run: a trial index must be an integer >= 0, not {index!r}")
        cached = self._children.get((parent_run_id, index))
        if cached is not None:
            return cached

        def find_or_create() -> str:  # one retried unit: a retry searches again before creating
            runs = self._find_children(
                f"tags.`{TRIAL_INDEX_TAG}` = '{index}' and tags.`{_PARENT_TAG}` = '{parent_run_id}'"
            )
            if len(runs) > 1:
                warnings.warn(
                    f"MLflow at {self.shown_uri}: {len(runs)} runs for trial {index} of parent {parent_run_id};"
                    f" using the first, {runs[0].info.run_id}",
                    stacklevel=4,
                )
            if runs:
                return runs[0].info.run_id
            tags = {
                _PARENT_TAG: parent_run_id,
                TRIAL_INDEX_TAG: str(index),
                SEARCH_TAG: self.experiment_name,
                ROLE_TAG: "trial",
            }
            run = self.client.create_run(
                self.experiment_id, start_time=_millis(start_time), tags=tags, run_name=f"trial-{index:04d}"
            )
            self._metric_names[run.info.run_id] = {}  # a new run has renamed no metric yet
            return run.info.run_id

        run_id = self._call(f"finding or creating the run of trial {index}", find_or_create)
        self._children[(parent_run_id, index)] = run_id
        return run_id

    def log_epoch(self, run_id: str, metrics: Mapping[str, Any], step: int) -> None:
        """Log one epoch's numeric metrics (nested mappings flattened with dots) at ``step``."""
        Metric = _entities()[0]  # noqa: N806

        now = int(time.time() * 1000)
        values = [(k, v) for k, v in _numeric_items(metrics) if k != "epoch"]
        if not values:
            return

        def log() -> None:  # one retried unit: the key map is recorded on the run before the values
            keys = self._metric_keys(run_id, (k for k, _ in values))
            self._log_batch(run_id, metrics=[Metric(keys[k], v, now, int(step)) for k, v in values])

        self._call(f"logging epoch {step}", log)

    def log_trial(self, parent_run_id: str, record: TrialRecord) -> str:
        """Project a ledger record into its child run, idempotently; return the child's run id.

        Logs params (the hyperparameters under their dotted names, ``trial_index`` and ``seed``;
        a hyperparameter named ``trial_index`` or ``seed`` is logged as ``hp.<name>``), the
        per-epoch metrics of ``record.history`` with ``step = epoch`` (points already in the run,
        e.g. from :meth:`log_epoch`, are not logged again), the final metrics ``best_val_score``
        (``record.score``), ``test_score``, ``runtime_s``, ``gpu_seconds`` and the numeric
        ``record.metrics`` not already in the history, and the tags ``showwork.status``,
        ``showwork.error`` (start and end of the traceback, at most 5000 characters),
        ``showwork.node_id``, ``showwork.hostname``, ``showwork.pid``, ``showwork.attempts``.
        Then it tags ``showwork.logged=1`` and terminates the run: FINISHED for a finished trial,
        FAILED for a failed or timed-out one. Calling it again changes nothing.

        MLflow stores +-inf as +-1.7976931348623157e308 and keeps NaN; the ledger keeps the exact
        value. A param already logged with another value (MLflow refuses changes) is left as it is,
        with a warning.
        """
        if not isinstance(record, TrialRecord):
            raise TypeError(f"log_trial expects a TrialRecord, not {type(record).__name__}")
        run_id = self.child_run(parent_run_id, record.index, start_time=record.started_at)
        self._call(f"logging trial {record.index}", lambda: self._project(run_id, record))
        return run_id

    def _project(self, run_id: str, record: TrialRecord) -> None:
        Metric = _entities()[0]  # noqa: N806

        run = self._get_run(run_id)
        tags_now = run.data.tags
        if tags_now.get(LOGGED_TAG) == "1" and run.info.status in _TERMINAL:
            return
        # params
        params: dict[str, Any] = {_param_name(name): value for name, value in record.params.items()}
        params["trial_index"] = record.index
        params["seed"] = record.seed
        entities, param_keys = self._param_entities(params, tags_now)
        wanted = {entity.key: entity for entity in entities}
        recorded = key_names_tags(param_keys, PARAM_NAMES_TAG)
        if any(tags_now.get(tag) != value for tag, value in recorded.items()):
            self._log_batch(run_id, tags=self._tag_entities(recorded))
        logged = run.data.params
        new_params = []
        for key, entity in wanted.items():
            if key not in logged:
                new_params.append(entity)
            elif logged[key] != entity.value:
                warnings.warn(
                    f"MLflow run {run_id} (trial {record.index}): param {key!r} is already {logged[key]!r};"
                    f" the ledger says {entity.value!r} (MLflow params cannot change)",
                    stacklevel=4,
                )
        self._log_batch(run_id, params=new_params)
        # per-epoch history
        now = int(time.time() * 1000)  # like log_epoch: MLflow orders a history by timestamp
        history = [
            (int(entry["epoch"]), _numeric_items({k: v for k, v in entry.items() if k != "epoch"}))
            for entry in record.history
        ]
        final_values = _numeric_items(record.metrics)
        keys = self._metric_keys(
            run_id, [name for _, values in history for name, _ in values] + [name for name, _ in final_values], tags_now
        )
        history_keys = {keys[name] for _, values in history for name, _ in values}
        if tags_now.get(_HISTORY_TAG) != "1":
            points: dict[str, list[tuple[int, float]]] = {}
            for epoch, values in history:
                for name, value in values:
                    points.setdefault(keys[name], []).append((epoch, value))
            metrics = []
            for key, series in points.items():
                present: list[tuple[int, float]] = []
                if key in run.data.metrics:
                    present = [(m.step, m.value) for m in self.client.get_metric_history(run_id, key)]
                for step, value in series:
                    if not any(s == step and _same(v, _clamped(value)) for s, v in present):
                        metrics.append(Metric(key, value, now, step))
            self._log_batch(run_id, metrics=metrics)
            self._log_batch(run_id, tags=self._tag_entities({_HISTORY_TAG: "1"}))
        # final metrics
        finals: dict[str, float | None] = {
            "best_val_score": record.score,
            "test_score": record.test_score,
            "runtime_s": record.runtime_s,
            "gpu_seconds": record.gpu_seconds,
        }
        for name, value in final_values:
            key = keys[name]
            if key not in finals and key not in history_keys:
                finals[key] = value
        last_step = max((int(entry["epoch"]) for entry in record.history), default=0)
        metrics = [
            Metric(key, value, now, last_step)
            for key, value in finals.items()
            if value is not None and key not in run.data.metrics
        ]
        self._log_batch(run_id, metrics=metrics)
        # tags, then the marks of completion
        tags: dict[str, Any] = {"showwork.status": record.status, "showwork.attempts": record.attempts}
        for name in ("node_id", "hostname", "pid", "started_at", "finished_at"):
            if getattr(record, name) is not None:
                tags[f"showwork.{name}"] = getattr(record, name)
        if record.error:
            tags["showwork.error"] = _head_and_tail(record.error, _ERROR_TAG_LENGTH)
        tags[LOGGED_TAG] = "1"
        self._log_batch(run_id, tags=self._tag_entities(tags))
        self.client.set_terminated(run_id, _STATUS_OF[record.status], end_time=_millis(record.finished_at))

    def retire_stale_children(self, parent_run_id: str, completed: set[int]) -> list[str]:
        """Mark as KILLED the child runs left RUNNING by a crashed driver for trials without a record.

        Such a run holds the partial live history of an attempt that will run again. It is kept
        (never deleted) but loses its ``showwork.trial_index`` tag (it gets
        ``showwork.superseded_trial_index`` instead), so the next attempt gets a fresh child run.
        Call it when resuming, before starting trials, with ``ledger.completed_indices()``.

        Returns
        -------
        list of str
            The run ids retired.
        """
        retired = []
        for index, run in self.children(parent_run_id).items():
            if index in completed or run.data.tags.get(LOGGED_TAG) == "1":
                continue
            run_id = run.info.run_id

            def retire(run_id: str = run_id, index: int = index) -> None:  # idempotent, so retried safely
                self._log_batch(run_id, tags=self._tag_entities(
                    {"showwork.superseded_trial_index": str(index), "showwork.status": "superseded"}
                ))
                current = self.client.get_run(run_id)
                if TRIAL_INDEX_TAG in current.data.tags:
                    self.client.delete_tag(run_id, TRIAL_INDEX_TAG)
                if current.info.status not in _TERMINAL:
                    self.client.set_terminated(run_id, "KILLED")

            self._call(f"retiring the stale run of trial {index}", retire)
            self._children.pop((parent_run_id, index), None)
            retired.append(run_id)
        return retired


# ---------------------------------------------------------------- replay


def sync_ledger(tracker: Tracker, ledger: Ledger, parent_run_id: str) -> int:
    """Project into MLflow every ledger record not yet (completely) there; return how many.

    A record is skipped when its ``mlflow_run_id`` is the child run of its trial under
    ``parent_run_id`` and that run is terminated and tagged ``showwork.logged=1``. Every other
    record is logged with :meth:`Tracker.log_trial` and its run id written back into the ledger
    (``replace=True``, the only field that changes). A record whose run id points elsewhere (an
    MLflow database that was lost, another server) gets a new child run.

    Raises
    ------
    TrackingUnavailableError
        If MLflow becomes unreachable; the records logged so far keep their run ids.
    """
    children = tracker.children(parent_run_id)
    logged = 0
    for record in ledger.records():
        child = children.get(record.index)
        if (
            child is not None
            and record.mlflow_run_id == child.info.run_id
            and child.info.status in _TERMINAL
            and child.data.tags.get(LOGGED_TAG) == "1"
        ):
            continue
        run_id = tracker.log_trial(parent_run_id, record)
        if record.mlflow_run_id != run_id:
            ledger.set_mlflow_run_id(record.index, run_id)
        logged += 1
    return logged

"""``showwork ui``: MLflow's UI for the tracking store that ``showwork search`` logs to.

The server is ``mlflow server`` run by this Python (``sys.executable -m mlflow``: the virtualenv
showwork is installed in, whether or not its ``bin/`` is on ``PATH``), bound to 127.0.0.1 unless
``--host`` says otherwise, with one worker and without MLflow's job runner.

Secrets: the store's URI may hold a password (``postgresql://user:PASSWORD@host/db``). It reaches
the server through the environment (``MLFLOW_BACKEND_STORE_URI``, which ``mlflow server`` reads
and hands to its workers the same way), never through a command line, where ``ps`` would show it
to every user; what is printed is the URI without its credentials, and the server's own output
(MLflow quotes the whole URI in some errors) is relayed with them masked.

Lifetime: the server runs in a process group (and session) of its own, so that stopping it
reaches its workers too. ``showwork ui`` stops the whole group when it ends for any reason: the
server exiting (a port taken between the check and the start, a store it cannot open: exit 1
with the reason), SIGINT (Ctrl-C: exit 130) or SIGTERM (exit 143). Only SIGKILL of ``showwork ui``
itself leaves the server running, as it leaves any child.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import TextIO

from showwork.environment import strip_credentials
from showwork.errors import InputError
from showwork.escaping import terminal_text
from showwork.tracking.mlflow_format import ROLE_TAG, SEARCH_TAG, counted_run, runs_table_path
from showwork.tracking.store import prepare_store, read_client

__all__ = ["UiSettings", "masked", "port_taken", "search_links", "serve", "server_command", "server_environment",
           "ui_address"]

EXIT_OUTAGE = 1
_STOP_GRACE_S = 10.0  # SIGTERM first; what is left of the group after this gets SIGKILL
_POLL_S = 0.25


@dataclass(frozen=True)
class UiSettings:
    """What ``showwork ui`` serves: the store (possibly with credentials) and where."""

    tracking_uri: str
    host: str = "127.0.0.1"
    port: int = 5000


class _Stopped(Exception):
    """``showwork ui`` received ``signum`` (SIGINT or SIGTERM)."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def ui_address(host: str = "127.0.0.1", port: int = 5000) -> str:
    """The address a browser opens for a UI serving on ``host:port`` (all interfaces: this machine's loopback)."""
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else "[::1]" if host == "::" else f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


_LINKS_SHOWN = 20


def search_links(tracking_uri: str, address: str) -> list[str]:
    """``NAME: LINK`` of each showwork search in the store (the 20 updated last): its runs table, best trial first,
    filtered to its current parent run's trials (not those of an attempt abandoned when its ledger was removed).

    MLflow 3.17 opens an experiment's page on its GenAI Overview (traces, token usage), not on its
    runs (issue 23 item 16); :func:`showwork.tracking.mlflow_format.runs_table_path` is the runs table with
    every trial a row. Nothing when the store cannot be read (the server says why).
    """
    try:
        client = read_client(tracking_uri)
        searches = client.search_experiments(filter_string=f"tags.`{SEARCH_TAG}` ILIKE '%'",
                                             order_by=["last_update_time DESC"], max_results=_LINKS_SHOWN + 1)
        links = []
        for experiment in searches[:_LINKS_SHOWN]:
            # the current attempt's parent: an abandoned attempt's (showwork.abandoned) and its runs are left out
            parents = [run for run in client.search_runs([experiment.experiment_id], f"tags.`{ROLE_TAG}` = 'parent'",
                                                         max_results=_LINKS_SHOWN) if counted_run(run)]
            mode = parents[0].data.params.get("mode", "max") if parents else "max"
            parent = parents[0].info.run_id if len(parents) == 1 else None  # several searches: the whole table
            links.append(f"{experiment.name}: {address}/{runs_table_path(experiment.experiment_id, mode, parent_run_id=parent)}")
    except Exception:  # noqa: BLE001 - the links are a convenience: the server itself reports a store it cannot open
        return []
    if len(searches) > _LINKS_SHOWN:
        links.append(f"(and more: the runs table of any experiment is {address}/#/experiments/ID/runs)")
    return links


def server_command(settings: UiSettings) -> list[str]:
    """The server's command line: this Python's ``mlflow server``, without the store's URI.

    One worker: a personal UI starts in about a third of the time of MLflow's default four.
    """
    return [sys.executable, "-m", "mlflow", "server", "--host", settings.host, "--port", str(settings.port),
            "--workers", "1"]


def server_environment(settings: UiSettings, base: Mapping[str, str]) -> dict[str, str]:
    """The server's environment: ``base`` with the store's URI, and MLflow's extras off unless ``base`` sets them."""
    environment = dict(base)
    environment["MLFLOW_BACKEND_STORE_URI"] = settings.tracking_uri
    environment.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    # MLflow's job runner (GenAI scorers and periodic tasks) starts a pool of worker processes that
    # browsing runs never uses.
    environment.setdefault("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", "false")
    return environment


def masked(text: str, uri: str) -> str:
    """``text`` with ``uri`` shown without its credentials, and its password (with the user name
    before it) and query, as written and decoded, replaced by ``***`` wherever else they appear.

    Examples
    --------
    >>> masked("cannot open postgresql://me:p%40ss@db/x (password p@ss)", "postgresql://me:p%40ss@db/x")
    'cannot open postgresql://db/x (password ***)'
    >>> masked("postgresql: role postgres", "postgresql://postgres@db/x")
    'postgresql: role postgres'
    """
    text = text.replace(uri, strip_credentials(uri))
    parts = urllib.parse.urlsplit(uri)
    if not parts.password and not parts.query:  # a user name alone is no secret (and "postgres" is in "postgresql")
        return text
    userinfo = parts.netloc.rpartition("@")[0] if parts.password else ""
    secrets = {userinfo, parts.password or "", parts.query}
    secrets |= {urllib.parse.unquote(secret) for secret in secrets}
    for secret in sorted(secrets - {""}, key=len, reverse=True):  # the longest first: a password inside user:password
        text = text.replace(secret, "***")
    return text


def _relay(stream, uri: str, out: TextIO) -> None:
    """Copy the server's output to ``out`` line by line, credentials masked, until it ends."""
    for line in iter(stream.readline, b""):
        out.write(masked(line.decode(errors="replace"), uri))
        out.flush()
    stream.close()


def port_taken(host: str, port: int) -> str | None:
    """Why the server could not listen on ``host:port`` (e.g. "Address already in use"), or None if it can.

    Binds the way the server's uvicorn does (``SO_REUSEADDR``), so a port left in TIME_WAIT by an
    earlier UI counts as free and one that something listens on does not.

    Raises
    ------
    InputError
        ``host`` is not a name or address of this machine.
    """
    try:
        family, kind, protocol, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except socket.gaierror as error:
        raise InputError(f"--host {host}: {error.strerror}") from None
    with socket.socket(family, kind, protocol) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as error:
            return error.strerror or str(error)
    return None


def _answers(host: str, port: int) -> bool:
    target = "127.0.0.1" if host in ("0.0.0.0", "") else "::1" if host == "::" else host
    try:
        with socket.create_connection((target, port), timeout=1):
            return True
    except OSError:
        return False


@contextlib.contextmanager
def _signals_raise() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM raise :class:`_Stopped` (in the main thread)."""

    def stop(signum, frame):
        raise _Stopped(signum)

    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a process of another user reuses the id: not ours
        return False
    return True


def _stop_group(server: subprocess.Popen) -> None:
    """Stop the server's process group: SIGTERM, then SIGKILL for what is left after the grace period."""
    group = server.pid  # start_new_session: the server leads its own group
    with contextlib.suppress(ProcessLookupError):
        os.killpg(group, signal.SIGTERM)
    deadline = time.monotonic() + _STOP_GRACE_S
    while time.monotonic() < deadline:
        with contextlib.suppress(subprocess.TimeoutExpired):
            server.wait(timeout=_POLL_S)  # reap the leader, so that only live members keep the group
        if server.returncode is not None and not _group_alive(group):
            return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)
    server.wait()


def _wait(server: subprocess.Popen, settings: UiSettings, shown: str, out: TextIO, relay: threading.Thread,
          links: list[str]) -> int:
    """Wait for the server to answer (say so, with the ``links`` to each search's runs), then for it to exit; its status."""
    serving = False
    while True:
        status = server.poll()
        if status is not None:
            relay.join(timeout=2)  # its last words before ours
            if status == 0:
                return 0
            state = "stopped" if serving else "exited before serving"
            print(terminal_text(f"showwork: error: the MLflow server for {shown} {state} (status {status}; its output is above)"),
                  file=sys.stderr, flush=True)
            return EXIT_OUTAGE
        if not serving and _answers(settings.host, settings.port):
            serving = True
            print(terminal_text(f"serving on http://{settings.host}:{settings.port}"), file=out, flush=True)
            if links:
                print(terminal_text("each search's runs (MLflow's runs table, best trial first):\n  " + "\n  ".join(links)),
                      file=out, flush=True)
        time.sleep(_POLL_S)


def serve(settings: UiSettings, *, uri_in_argv: bool = False, environment: Mapping[str, str] | None = None,
          out: TextIO | None = None) -> int:
    """Run MLflow's UI for ``settings`` until it exits or this process is told to stop; the exit status.

    Exit status: 0 when the server ended by itself without error, 1 when it could not serve
    (port taken, store unusable), 130 after SIGINT, 143 after SIGTERM. ``uri_in_argv``: the URI
    came on showwork's own command line, where a password in it is for every user to see: warn.

    Raises
    ------
    InputError
        mlflow is not installed in this Python's environment, or ``--host`` is unknown.
    """
    out = out or sys.stdout
    if importlib.util.find_spec("mlflow") is None:
        raise InputError("the MLflow UI needs mlflow: pip install showwork-tuning (mlflow is one of its dependencies)")
    shown = strip_credentials(settings.tracking_uri)
    if uri_in_argv and urllib.parse.urlsplit(settings.tracking_uri).password:
        print(terminal_text(f"showwork: warning: --tracking-uri {shown} carries a password, which `ps` shows to every user of"
                            " this machine: set MLFLOW_TRACKING_URI instead"), file=sys.stderr, flush=True)
    taken = port_taken(settings.host, settings.port)
    if taken is not None:
        print(terminal_text(f"showwork: error: cannot serve the MLflow UI on {settings.host}:{settings.port}: {taken}"
                            " (choose another --port)"), file=sys.stderr, flush=True)
        return EXIT_OUTAGE
    prepare_store(settings.tracking_uri)  # a fresh SQLite store is made under its lock, not raced by a search
    links = search_links(settings.tracking_uri, ui_address(settings.host, settings.port))
    print(terminal_text(f"MLflow UI for {shown} on http://{settings.host}:{settings.port} (starting; Ctrl-C to stop)"),
          file=out, flush=True)
    with _signals_raise():
        server = None
        try:
            server = subprocess.Popen(
                server_command(settings),
                env=server_environment(settings, os.environ if environment is None else environment),
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                start_new_session=True,  # its own group: stopping it reaches its workers
            )
            relay = threading.Thread(target=_relay, args=(server.stdout, settings.tracking_uri, sys.stderr), daemon=True)
            relay.start()
            return _wait(server, settings, shown, out, relay, links)
        except _Stopped as stop:
            return 128 + stop.signum
        finally:
            if server is not None:
                with _signals_ignored():  # a second Ctrl-C must not cut the clean-up short
                    _stop_group(server)


@contextlib.contextmanager
def _signals_ignored() -> Iterator[None]:
    previous = {signum: signal.signal(signum, signal.SIG_IGN) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)

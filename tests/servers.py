"""Test servers: a throwaway PostgreSQL cluster and an ``mlflow server`` on 127.0.0.1.

:class:`Postgres` runs ``initdb`` + ``pg_ctl`` in a fresh temporary directory on a free port
(as the ``postgres`` user when the tests run as root: ``initdb`` refuses root), listening on
127.0.0.1 only, with trust authentication for local connections. :class:`MlflowServer` starts
``mlflow server`` with a backend store URI (PostgreSQL here), artifacts served by the server
from a temporary directory, one worker, in a process group of its own so that it can be killed
whole and started again on the same port.

Missing PostgreSQL binaries or psycopg2 skip the tests that need them, with the reason, except
under CI (``CI=true``), where they fail: CI installs both (``.ci/run``, the ``test`` extra).
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

__all__ = ["MlflowServer", "Postgres", "free_port", "pg_binary", "unavailable"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def unavailable(reason: str):
    """Skip with ``reason``; under CI (``CI`` set to true) fail instead: CI must run these tests."""
    if os.environ.get("CI", "").strip().lower() in ("1", "true", "yes"):
        pytest.fail(f"{reason} (CI is set, so this is a failure, not a skip)", pytrace=False)
    pytest.skip(reason)


def _version_key(path: str) -> tuple:
    parts = Path(path).parts
    version = parts[-3] if len(parts) >= 3 else ""
    return tuple(int(p) if p.isdigit() else 0 for p in version.split("."))


def pg_binary(name: str) -> str | None:
    """``name`` (``initdb``, ``pg_ctl``) on PATH, else the newest ``/usr/lib/postgresql/*/bin/name``."""
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), key=_version_key)
    return candidates[-1] if candidates else None


def _tail(path: Path, limit: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-limit:]
    except OSError:
        return ""


class Postgres:
    """A PostgreSQL cluster of its own: ``start()``, ``stop()``, ``uri(database)``, ``cleanup()``."""

    def __init__(self) -> None:
        try:
            import psycopg2  # noqa: F401  (MLflow's postgresql+psycopg2 driver)
        except ImportError:
            unavailable("psycopg2 is not installed (pip install psycopg2-binary)")
        self.initdb, self.pg_ctl = pg_binary("initdb"), pg_binary("pg_ctl")
        if not (self.initdb and self.pg_ctl):
            unavailable("PostgreSQL is not installed: no initdb/pg_ctl on PATH or under /usr/lib/postgresql/*/bin")
        self.as_root = os.geteuid() == 0
        if self.as_root:
            try:
                import pwd

                self._owner = pwd.getpwnam("postgres")
            except KeyError:
                unavailable("running as root, and there is no `postgres` user to run PostgreSQL as")
            self._runuser = shutil.which("runuser")
            if self._runuser is None:
                unavailable("running as root, and there is no runuser to start PostgreSQL as `postgres`")
        # Not under pytest's tmp_path: as root, that directory (0700) is closed to the postgres user.
        self.root = Path(tempfile.mkdtemp(prefix="showwork-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "postgres.log"
        self.port = free_port()
        self.user = "postgres" if self.as_root else "showwork"
        try:
            if self.as_root:
                os.chown(self.root, self._owner.pw_uid, self._owner.pw_gid)
            self._run([self.initdb, "-D", str(self.data), "-U", self.user, "-A", "trust", "-E", "UTF8",
                       "--no-sync", "--locale=C"], timeout=120)
        except BaseException:
            shutil.rmtree(self.root, ignore_errors=True)
            raise

    def _run(self, argv: list[str], timeout: float = 60) -> subprocess.CompletedProcess:
        if self.as_root:
            argv = [self._runuser, "-u", "postgres", "--", *argv]
        done = subprocess.run(argv, cwd=self.root, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(
                f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}\n{_tail(self.log)}"
            )
        return done

    def start(self) -> None:
        options = (f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.root} -c fsync=off"
                   " -c synchronous_commit=off -c full_page_writes=off -c max_connections=100")
        self._run([self.pg_ctl, "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "-t", "60", "start"],
                  timeout=90)

    def stop(self, mode: str = "fast") -> None:
        """Stop the cluster (``fast``: roll back and disconnect every client; ``immediate``: like a crash)."""
        self._run([self.pg_ctl, "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop"], timeout=90)

    def running(self) -> bool:
        argv = [self.pg_ctl, "-D", str(self.data), "status"]
        if self.as_root:
            argv = [self._runuser, "-u", "postgres", "--", *argv]
        return subprocess.run(argv, capture_output=True).returncode == 0

    def create_database(self, name: str) -> str:
        """Create database ``name``; return its ``postgresql+psycopg2://`` URI."""
        import psycopg2

        connection = psycopg2.connect(host="127.0.0.1", port=self.port, user=self.user, dbname="postgres")
        try:
            connection.autocommit = True
            with connection.cursor() as cursor:
                cursor.execute(f'CREATE DATABASE "{name}"')
        finally:
            connection.close()
        return self.uri(name)

    def uri(self, database: str) -> str:
        return f"postgresql+psycopg2://{self.user}@127.0.0.1:{self.port}/{database}"

    def cleanup(self) -> None:
        with contextlib.suppress(Exception):
            if self.running():
                self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)


class MlflowServer:
    """``mlflow server`` on 127.0.0.1:``port`` (one worker) for ``backend_uri``, artifacts under ``artifacts``."""

    def __init__(self, backend_uri: str, artifacts: Path, log: Path, port: int | None = None) -> None:
        self.backend_uri = backend_uri
        self.artifacts = Path(artifacts)
        self.log = Path(log)
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 120) -> None:
        """Start the server and wait until ``/health`` answers (the first start migrates the schema)."""
        assert self.process is None, "already started"
        self.artifacts.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ)
        env.update(
            MLFLOW_DISABLE_TELEMETRY="true",
            # mlflow 3.x starts a job runner (huey workers) with the server unless told not to.
            MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false",
        )
        env.pop("MLFLOW_TRACKING_URI", None)
        command = [
            sys.executable, "-m", "mlflow", "server",
            "--backend-store-uri", self.backend_uri,
            "--serve-artifacts", "--artifacts-destination", str(self.artifacts),
            "--host", "127.0.0.1", "--port", str(self.port), "--workers", "1",
            "--allowed-hosts", f"127.0.0.1:{self.port},localhost:{self.port}",
        ]
        with self.log.open("a") as log:
            log.write(f"\n=== start {time.strftime('%H:%M:%S')}: {' '.join(command)}\n")
            log.flush()
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                            env=env, start_new_session=True)
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                code = self.process.returncode
                self.process = None
                raise RuntimeError(f"mlflow server exited {code} on start:\n{_tail(self.log)}")
            if self.healthy():
                return
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"mlflow server did not answer within {timeout:.0f} s:\n{_tail(self.log)}")
            time.sleep(0.25)

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/health", timeout=2) as response:
                return response.status == 200
        except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
            return False

    def stop(self) -> None:
        """Kill the server and its workers (the whole process group) at once, like a crash."""
        if self.process is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)
        self.process = None
        deadline = time.monotonic() + 10  # until the port is closed
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) != 0:
                    return
            time.sleep(0.1)

    def log_tail(self, limit: int = 3000) -> str:
        return _tail(self.log, limit)

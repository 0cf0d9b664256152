"""``showwork ui`` run as a user runs it: a separate process, with this virtualenv's ``bin/`` off PATH.

``make test`` (and CI) run the venv's python without its ``bin/`` on PATH; so does a user who
calls ``.venv/bin/showwork`` directly. The UI must work there, so the tests start it that way.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from processes import descendants, process_stat

__all__ = ["UiRun", "command_line", "environment_without_venv_bin"]


def environment_without_venv_bin(**extra: str) -> dict[str, str]:
    """This process's environment without the directory of ``sys.executable`` on PATH, plus ``extra``."""
    venv_bin = os.path.dirname(os.path.abspath(sys.executable))
    path = [entry for entry in os.environ.get("PATH", "").split(os.pathsep)
            if entry and os.path.abspath(entry) != venv_bin]
    environment = {**os.environ, "PATH": os.pathsep.join(path) or "/usr/bin:/bin", "MLFLOW_DISABLE_TELEMETRY": "true"}
    environment.pop("MLFLOW_TRACKING_URI", None)
    return {**environment, **extra}


def command_line(pid: int) -> str | None:
    """``/proc/PID/cmdline`` with spaces between the arguments; None for a process that is gone."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None


def _alive(pid: int) -> bool:
    fields = process_stat(pid)
    return fields is not None and fields[0] != "Z"


class UiRun:
    """``python -m showwork ui ARGV`` in ``folder``, its output in ``folder/ui.log``, in a session of its own."""

    def __init__(self, folder: Path, *argv: str, environment: dict[str, str] | None = None) -> None:
        self.log = folder / "ui.log"
        with open(self.log, "wb") as log:  # a file, not a pipe: a full pipe would stall the server
            self.process = subprocess.Popen(
                [sys.executable, "-m", "showwork", "ui", *argv], cwd=folder,
                env=environment or environment_without_venv_bin(), stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.seen: set[int] = set()  # every process below showwork ui seen so far

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def below(self) -> set[int]:
        """The live processes below ``showwork ui`` (the MLflow server and its workers); remembered in :attr:`seen`."""
        found = {pid for pid in descendants(self.process.pid) - {self.process.pid} if _alive(pid)}
        self.seen |= found
        return found

    def wait_for_server_process(self, timeout_s: float = 60) -> set[int]:
        """Wait until ``showwork ui`` has started the server (a process runs ``-m mlflow``)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"showwork ui exited: {self.output()[-2000:]}"
            below = self.below()
            if any("-m mlflow" in (command_line(pid) or "") for pid in below):
                return below
            time.sleep(0.1)
        raise AssertionError(f"no MLflow server process below showwork ui after {timeout_s} s: {self.output()[-2000:]}")

    def wait_serving(self, port: int, timeout_s: float = 120) -> None:
        """Wait until the UI answers HTTP 200 on 127.0.0.1:``port`` and showwork ui has said that it serves."""
        deadline = time.monotonic() + timeout_s
        while True:
            assert self.process.poll() is None, f"showwork ui exited: {self.output()[-2000:]}"
            self.below()
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as response:
                    if response.status == 200 and "serving on http://" in self.output():
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            assert time.monotonic() < deadline, f"showwork ui did not answer on 127.0.0.1:{port}: {self.output()[-2000:]}"
            time.sleep(0.25)

    def left_behind(self, timeout_s: float = 5) -> list[int]:
        """The processes of :attr:`seen` still alive ``timeout_s`` after showwork ui ended (none, if it cleaned up)."""
        deadline = time.monotonic() + timeout_s
        while (left := [pid for pid in self.seen if _alive(pid)]) and time.monotonic() < deadline:
            time.sleep(0.1)
        return left

    def kill_everything(self) -> None:
        """Clean-up after a test: SIGKILL showwork ui's session and every process seen below it."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        for pid in self.seen:
            if _alive(pid):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
        self.process.wait()

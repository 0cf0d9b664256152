"""SIGTERM or SIGINT to a command's whole process group (issue 35 item 4): `search`, `race` and `ui`.

``timeout``, Slurm and a terminal's Ctrl-C signal every process of the foreground process group, not
the command alone. Each case starts the command in a session of its own, waits until it really
works (a trial running, the server answering), signals the group as ``timeout`` does, and checks the
exit status (128 + the signal), the time to exit (under 10 s), the resume command where there is
one, and that no process of the command (Ray's GCS, raylet, workers, trial processes, the MLflow
server) is left 15 s after the signal. ``report`` has the same cases in ``test_report_signals.py``.

Before, SIGTERM to the group reached Ray's processes too: the GCS died under the search, which waited
60 s on "Failed to connect to GCS" and exited 1 without the resume command.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from helpers import search_process_environment
from processes import descendants, kill_session, needs_proc, process_stat
from servers import free_port
from ui_runs import UiRun, command_line

pytestmark = [pytest.mark.slow, pytest.mark.integration, needs_proc]

# Each trial says it runs (a file named by its process id), then trains far longer than the test waits.
FAMILY = """
    import os
    import time
    from pathlib import Path


    def train(config, *, seed, device, reporter, data):
        Path(data["started"], str(os.getpid())).touch()
        time.sleep(120)
        return {"val_accuracy": config["x"]}
"""

EXIT_WITHIN_S = 10
NOTHING_LEFT_AFTER_S = 15


def space(folder: Path, name: str, seed: int = 7) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(textwrap.dedent(f"""\
        name: {name}
        family: slow.py:train
        metric: {{name: val_accuracy, mode: max, bounds: [0, 1]}}
        num_trials: 4
        seed: {seed}
        max_concurrent: 2
        data: {{started: {folder / 'started'}}}
        space:
          x: {{distribution: uniform, low: 0.0, high: 1.0}}
    """))
    return path


def alive(pid: int) -> bool:
    fields = process_stat(pid)
    return fields is not None and fields[0] != "Z"


def in_session_or_group(pid: int, leader: int) -> bool:
    fields = process_stat(pid)
    return fields is not None and fields[0] != "Z" and leader in (int(fields[2]), int(fields[3]))


def left_after(leader: int, seen: set[int], deadline: float) -> list[str]:
    """The processes still alive at ``deadline`` (waiting no longer once none is) of the session or process group of
    ``leader``, or among ``seen`` (those below it while it ran: Ray's, the server's, in a group of their own)."""
    while True:
        left = sorted({pid for pid in os.listdir("/proc") if pid.isdigit() and in_session_or_group(int(pid), leader)}
                      | {str(pid) for pid in seen if alive(pid)})
        if not left or time.monotonic() >= deadline:
            return [f"{pid} {command_line(int(pid))}" for pid in left]
        time.sleep(0.2)


def signal_the_group(process: subprocess.Popen, signum: int, working: Callable[[], bool], what: str, err: Callable[[], str],
                     seen: set[int] | None = None) -> tuple[int, float, list[str]]:
    """Wait until ``working()`` (collecting the processes below ``process``), signal its whole group as ``timeout``
    does; its exit status, the seconds it took to exit, and what was left of it 15 s after the signal."""
    seen = set() if seen is None else seen
    deadline = time.monotonic() + 240  # Ray's start on a busy 2-core machine
    while not working():
        assert process.poll() is None, f"the command ended before {what}: {err()}"
        assert time.monotonic() < deadline, f"not {what} within 240 s: {err()}"
        seen |= descendants(process.pid) - {process.pid}
        time.sleep(0.1)
    seen |= descendants(process.pid) - {process.pid}
    signalled = time.monotonic()
    os.killpg(process.pid, signum)
    try:
        code = process.wait(timeout=90)
    except subprocess.TimeoutExpired:
        code = None
    took = time.monotonic() - signalled
    return code, took, left_after(process.pid, seen, signalled + NOTHING_LEFT_AFTER_S)


def start(folder: Path, *argv) -> subprocess.Popen:
    with (folder / "out").open("w") as out, (folder / "err").open("w") as err:
        return subprocess.Popen([sys.executable, "-m", "showwork", *map(str, argv), "--no-progress", "--storage", "runs",
                                 "--tracking-uri", f"sqlite:///{folder / 'mlflow.db'}", "--num-cpus", "2"],
                                cwd=folder, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                env=search_process_environment(), start_new_session=True)


@pytest.fixture
def folder(tmp_path, template_db) -> Path:
    shutil.copy(template_db, tmp_path / "mlflow.db")
    (tmp_path / "slow.py").write_text(textwrap.dedent(FAMILY).lstrip())
    (tmp_path / "started").mkdir()
    return tmp_path


@pytest.mark.parametrize("command, signum", [("search", signal.SIGTERM), ("search", signal.SIGINT), ("race", signal.SIGTERM)],
                         ids=["search-SIGTERM", "search-SIGINT", "race-SIGTERM"])
def test_a_signal_to_the_group_while_trials_run_ends_the_command_with_its_resume_command(folder, command, signum):
    if command == "search":
        process = start(folder, "search", space(folder, "lone"))
        resume = "  showwork resume lone --storage runs"
    else:
        process = start(folder, "race", space(folder, "first").name, space(folder, "second", seed=8).name, "--looks", "4",
                        "--decide-at", "2", "--name", "duel")
        resume = (f"  showwork race first.yaml second.yaml --looks 4 --decide-at 2 --name duel --storage runs --tracking-uri"
                  f" sqlite:///{folder / 'mlflow.db'} --num-cpus 2 --resume")
    try:
        code, took, left = signal_the_group(process, signum, lambda: any((folder / "started").iterdir()), "a trial ran",
                                              (folder / "err").read_text)
    finally:
        kill_session(process)
    err = (folder / "err").read_text()
    assert code == 128 + signum, err
    assert took < EXIT_WITHIN_S, err
    assert left == []
    assert "Traceback" not in err and "GCS" not in err
    assert err.rstrip().splitlines()[-1] == resume, err


def test_sigterm_to_the_group_of_showwork_ui_stops_its_server(tmp_path, template_db):
    """The MLflow server runs in a group of its own (so that its workers are stopped with it): the group's SIGTERM
    reaches showwork ui, which stops the server's group."""
    shutil.copy(template_db, tmp_path / "mlflow.db")
    port = free_port()
    ui = UiRun(tmp_path, "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}", "--port", str(port))
    try:
        def serving() -> bool:
            ui.wait_serving(port, timeout_s=240)
            return True

        code, took, left = signal_the_group(ui.process, signal.SIGTERM, serving, "serving", ui.output, ui.seen)
    finally:
        ui.kill_everything()
    assert code == 128 + signal.SIGTERM, ui.output()
    assert took < EXIT_WITHIN_S, ui.output()
    assert left == []
    assert "Traceback" not in ui.output()

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

import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from helpers import search_process_environment
from processes import kill_session, needs_proc, signal_the_group
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
                                            (folder / "err").read_text, left_after_s=NOTHING_LEFT_AFTER_S)
    finally:
        kill_session(process)
    err = (folder / "err").read_text()
    assert code == 128 + signum, err
    assert took < EXIT_WITHIN_S, err
    assert [command_line(pid) for pid in left] == []
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

        code, took, left = signal_the_group(ui.process, signal.SIGTERM, serving, "serving", ui.output, ui.seen,
                                            left_after_s=NOTHING_LEFT_AFTER_S)
    finally:
        ui.kill_everything()
    assert code == 128 + signal.SIGTERM, ui.output()
    assert took < EXIT_WITHIN_S, ui.output()
    assert [command_line(pid) for pid in left] == []
    assert "Traceback" not in ui.output()

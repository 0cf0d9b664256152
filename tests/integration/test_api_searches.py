"""The Python API runs real searches: Ray Tune trials, the ledger, MLflow, an interrupt and its resume.

A search from Python is the search `showwork search` runs: the same records (configurations and
seeds drawn for (seed, index)), the same MLflow runs. Ctrl-C reaches the calling script as a
KeyboardInterrupt, and the search resumes from Python. examples/python_api.py runs as README.md
says.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import showwork
from showwork.errors import InputError
from showwork.sampling import trial_config, trial_seed
from showwork.space import load_search_spec
from showwork.store import Ledger

from helpers import REPO_ROOT, runs_of, search_process_environment

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TRAINABLE = """
    import time


    def train(config, *, seed, device, reporter, data):
        time.sleep(float(data.get("sleep", 0)))
        reporter(epoch=0, val_accuracy=config["x"])
        return {"val_accuracy": config["x"], "test_accuracy": config["x"] / 2}
"""


def space_file(folder: Path, name: str, *, num_trials: int, sleep: float = 0.0) -> Path:
    (folder / "family.py").write_text(textwrap.dedent(TRAINABLE).lstrip())
    path = folder / f"{name}.yaml"
    path.write_text(textwrap.dedent(f"""\
        name: {name}
        family: family.py:train
        metric: {{name: val_accuracy, mode: max, test: test_accuracy, bounds: [0, 1]}}
        num_trials: {num_trials}
        seed: 5
        max_concurrent: 2
        max_retries: 0
        data: {{sleep: {sleep}}}
        space:
          x: {{distribution: uniform, low: 0.0, high: 1.0}}
          width: {{distribution: int_uniform, low: 8, high: 64}}
        """))
    return path


def test_a_search_from_python_records_what_showwork_search_records_and_extends(home):
    path = space_file(home, "py", num_trials=3)
    uri = f"sqlite:///{home / 'mlflow.db'}"
    found = showwork.search(path, storage="runs", tracking_uri=uri, num_cpus=2, progress=False)
    assert (found.name, found.storage) == ("py", Path("runs"))
    assert (found.summary.finished, found.summary.num_trials, found.summary.failed) == (3, 3, 0)
    spec = load_search_spec(path)
    records = Ledger(home / "runs", "py").records()
    assert [r.index for r in records] == [0, 1, 2]
    for record in records:
        assert record.params == trial_config(spec.space, spec.seed, record.index)
        assert record.seed == trial_seed(spec.seed, record.index) and record.score == record.params["x"]
    frame = found.to_dataframe()
    assert list(frame["score"]) == [r.score for r in records] and list(frame["param.width"]) == [r.params["width"] for r in records]
    assert found.best()[0].score == max(r.score for r in records)
    parents = [r for r in runs_of(uri, "py") if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs_of(uri, "py") if "mlflow.parentRunId" in r.data.tags]
    assert len(parents) == 1 and parents[0].info.status == "FINISHED" and len(children) == 3

    # Running it again is refused as the command refuses it; resume with more trials adds the next indices.
    with pytest.raises(InputError, match="already exists"):
        showwork.search(path, storage="runs", tracking_uri=uri, progress=False)
    more = showwork.open_search("py", storage="runs").resume(num_trials=5, num_cpus=2, progress=False)
    assert (more.summary.finished, more.summary.num_trials) == (5, 5)
    assert [r.to_dict() for r in Ledger(home / "runs", "py").records()[:3]] == [r.to_dict() for r in records]
    assert len([r for r in runs_of(uri, "py") if "mlflow.parentRunId" in r.data.tags]) == 5
    files = more.report(home / "report")
    assert files.html.is_file() and len(more.curve().k) == 5


INTERRUPTED = """
import sys
import showwork

try:
    showwork.search(sys.argv[1], storage="runs", tracking_uri=sys.argv[2], num_cpus=2, progress=False)
except KeyboardInterrupt as stop:
    print(f"caught {type(stop).__name__}: {stop}", flush=True)
    sys.exit(3)
print("not interrupted", flush=True)
"""


def test_ctrl_c_reaches_the_script_as_a_keyboard_interrupt_and_the_search_resumes_from_python(home):
    path = space_file(home, "stopped", num_trials=6, sleep=1.0)
    uri = f"sqlite:///{home / 'mlflow.db'}"
    (home / "script.py").write_text(INTERRUPTED)
    log = home / "script.log"
    with log.open("w") as out:
        script = subprocess.Popen([sys.executable, str(home / "script.py"), str(path), uri], cwd=home, stdout=out,
                                  stderr=subprocess.STDOUT, env=search_process_environment(), start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while not list((home / "runs" / "stopped" / "trials").glob("[0-9]*.json")):
            assert script.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, "no trial recorded within 180 s"
            time.sleep(0.1)
        script.send_signal(signal.SIGINT)
        assert script.wait(timeout=120) == 3, log.read_text()[-3000:]
    finally:
        if script.poll() is None:
            script.kill()
            script.wait()
        try:
            os.killpg(script.pid, signal.SIGKILL)  # anything of its Ray left behind
        except (ProcessLookupError, PermissionError):
            pass
    finished = sum(r.status == "finished" for r in Ledger(home / "runs", "stopped").records())
    assert 1 <= finished < 6
    assert (f"caught SearchInterruptedError: interrupted: {finished} of 6 trials finished; the ledger keeps every"
            " finished trial; continue with showwork.open_search('stopped', storage='runs').resume()") in log.read_text()

    resumed = showwork.open_search("stopped", storage="runs").resume(num_cpus=2, progress=False)
    assert (resumed.summary.finished, resumed.summary.num_trials) == (6, 6)
    records = Ledger(home / "runs", "stopped").records()
    assert [r.index for r in records] == list(range(6)) and all(r.status == "finished" for r in records)
    parents = [r for r in runs_of(uri, "stopped") if "mlflow.parentRunId" not in r.data.tags]
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"


def test_the_example_script_runs_a_search_shows_its_curve_and_writes_its_report(tmp_path):
    command = [sys.executable, str(REPO_ROOT / "examples" / "python_api.py"), "--workdir", "work"]
    done = subprocess.run(command, cwd=tmp_path, env=search_process_environment(), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "toy-python-api: 12 of 12 trials finished" in done.stdout
    assert "k = 12: median" in done.stdout and "best: trial" in done.stdout
    assert (tmp_path / "work" / "report" / "report.html").is_file()
    assert len(Ledger(tmp_path / "work" / "runs", "toy-python-api").records()) == 12

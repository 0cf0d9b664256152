"""Issue 17 item 1: ``pip install showwork-tuning`` alone (no extra) gives a working search, report and UI.

The test builds the wheel from this checkout, installs it into a fresh virtual environment (no
``--system-site-packages``: nothing of this test's environment is visible there) from the package
indexes pip is configured with, and runs what a new user runs first: a 3-trial search of a tiny
trainable file, its report, and ``showwork ui``. torch belongs to the ``models`` extra only: the
base install must not pull it. About 2-4 minutes on a busy 2-core machine, most of it pip
installing Ray and MLflow.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from showwork.store import Ledger

from helpers import REPO_ROOT, search_process_environment

pytestmark = [pytest.mark.slow, pytest.mark.integration]

# What the wheel is built from: the files pyproject.toml packages (a copy, so that the build's
# build/ and *.egg-info never land in the checkout, where parallel runs would share them).
_SOURCES = ("pyproject.toml", "README.md", "showwork", "models", "showwork_models")

TRAINABLE = """\
def train(config, *, seed, device, reporter, data):
    return {"acc": float(config["x"])}
"""

SPACE = """\
name: tiny
family: tiny_model.py:train
metric: {name: acc, mode: max}
num_trials: 3
space:
  x: {distribution: uniform, low: 0.0, high: 1.0}
"""


def _run(command: list[str | Path], *, cwd: Path, env: dict[str, str], timeout: float) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{command}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def _fresh_environment(venv: Path) -> dict[str, str]:
    """The search's test environment with only the fresh venv's bin/ added in front of PATH (no PYTHONPATH)."""
    env = search_process_environment()
    for name in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"):
        env.pop(name, None)
    venv_bin = os.path.dirname(os.path.abspath(sys.executable))  # this test's venv: off PATH
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and os.path.abspath(p) != venv_bin]
    env["PATH"] = os.pathsep.join([str(venv / "bin"), *path])
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Iterator[Path]:
    """A fresh virtual environment with the wheel of this checkout installed, no extras."""
    root = tmp_path_factory.mktemp("install")
    source, wheels, venv = root / "source", root / "wheels", root / "venv"
    source.mkdir()
    for name in _SOURCES:
        origin = REPO_ROOT / name
        if origin.is_dir():
            shutil.copytree(origin, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(origin, source / name)
    env = _fresh_environment(venv)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", wheels, source],
         cwd=root, env=env, timeout=300)
    [wheel] = wheels.glob("showwork_tuning-*.whl")
    _run([sys.executable, "-m", "venv", venv], cwd=root, env=env, timeout=120)
    _run([venv / "bin" / "python", "-m", "pip", "install", "--quiet", wheel], cwd=root, env=env, timeout=900)
    yield venv
    shutil.rmtree(root, ignore_errors=True)  # about 1 GB (Ray, MLflow, pyarrow): not left in the temporary folder


def test_the_wheel_installs_without_torch_and_without_this_checkout(installed):
    probe = ("import importlib.util, json, showwork, ray, mlflow, rich\n"
             "print(json.dumps({'showwork': showwork.__file__, 'torch': importlib.util.find_spec('torch') is not None,"
             " 'ray': ray.__version__, 'mlflow': mlflow.__version__}))")
    done = _run([installed / "bin" / "python", "-c", probe], cwd=installed, env=_fresh_environment(installed), timeout=120)
    found = json.loads(done.stdout.splitlines()[-1])
    assert Path(found["showwork"]).is_relative_to(installed), found  # the installed copy, not the checkout
    assert found["torch"] is False  # torch comes with the models extra only
    assert (found["ray"], found["mlflow"]) == ("2.60.0", "3.17.2")


def test_a_search_of_a_tiny_trainable_file_and_its_report_run_from_the_base_install(installed, tmp_path):
    (tmp_path / "tiny_model.py").write_text(TRAINABLE)
    (tmp_path / "tiny.yaml").write_text(SPACE)
    env, showwork = _fresh_environment(installed), installed / "bin" / "showwork"
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    _run([showwork, "search", "tiny.yaml", "--no-progress", "--num-cpus", "2", "--storage", "runs", "--tracking-uri", uri],
         cwd=tmp_path, env=env, timeout=600)
    records = Ledger(tmp_path / "runs", "tiny").records()
    assert [r.status for r in records] == ["finished"] * 3, [r.error for r in records]
    assert all(r.score == pytest.approx(r.params["x"]) for r in records)
    _run([showwork, "report", "tiny", "--storage", "runs", "--tracking-uri", uri, "--out", "report", "--formats", "png"],
         cwd=tmp_path, env=env, timeout=600)
    report = (tmp_path / "report" / "report.md").read_text()
    assert "3 trials run" in report, report[:2000]
    assert list((tmp_path / "report").rglob("*.png"))


def test_showwork_ui_serves_from_the_base_install(installed, tmp_path):
    with contextlib.closing(__import__("socket").socket()) as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = tmp_path / "ui.log"
    with open(log, "wb") as out:
        ui = subprocess.Popen([str(installed / "bin" / "showwork"), "ui", "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}",
                               "--port", str(port)], cwd=tmp_path, env=_fresh_environment(installed), stdout=out,
                              stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while True:
            assert ui.poll() is None, log.read_text(errors="replace")[-3000:]
            with contextlib.suppress(urllib.error.URLError, ConnectionError, TimeoutError):
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as response:
                    if response.status == 200:
                        break
            assert time.monotonic() < deadline, log.read_text(errors="replace")[-3000:]
            time.sleep(0.5)
        ui.send_signal(signal.SIGTERM)
        assert ui.wait(timeout=60) == 128 + signal.SIGTERM
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(ui.pid, signal.SIGKILL)
        ui.wait()

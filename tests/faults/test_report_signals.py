"""``showwork report`` stopped by SIGTERM or Ctrl-C while it draws (issue 34 item 6).

A report is written into a hidden staging folder first (inside an existing ``--out``, or beside a
new one) and moved into place only when whole. SIGTERM used to kill the process where it stood,
the staging folder left behind; now it stops the report as Ctrl-C does: the staging folder
removed, ``--out`` as it was (a new one not created), exit 143, one line that says so. Sent to the
process or to its whole process group (what ``timeout``, Slurm and Kubernetes do).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from showwork.report import FamilyResults, ReportSettings, analyze, write_report
from showwork.report import output as output_module
from showwork.report.output import MANIFEST_NAME, WrittenThenInterrupted
from showwork.run.interrupts import Interrupts

from helpers import run_cli, search_process_environment

STAGING = "showwork-report-staging-"


def results_csv(folder: Path, families: int = 30) -> Path:
    """``families`` families of 40 trials; 30 make a report of several seconds of figures (a summary and pages of
    small multiples)."""
    rng = np.random.default_rng(0)
    path = folder / "results.csv"
    rows = [f"{rng.uniform(0.5, 0.9):.4f},fam{f},{10 ** rng.uniform(-5, -1):.3g}" for f in range(families) for _ in range(40)]
    path.write_text("score,family,lr\n" + "\n".join(rows) + "\n")
    return path


def snapshot(root: Path) -> dict[str, str]:
    """Every entry under ``root`` (hidden ones too): files by content hash, folders as such."""
    return {path.relative_to(root).as_posix(): "folder" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(root.rglob("*"))}


def staged_figures(parent: Path) -> list[Path]:
    """The figures already written in a staging folder under ``parent``."""
    return [p for folder in parent.glob(f".*{STAGING}*") for p in (folder / "figures").glob("*.png")]


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize("existing", [True, False], ids=["existing-out", "new-out"])
@pytest.mark.parametrize("how", ["SIGTERM", "SIGTERM-to-the-group", "Ctrl-C-to-the-group"])
def test_a_report_stopped_while_it_draws_removes_its_staging_folder_and_leaves_out_as_it_was(tmp_path, existing, how):
    source = results_csv(tmp_path)
    parent = tmp_path / "reports"
    parent.mkdir()
    out = parent / "paper"
    if existing:
        out.mkdir()
        (out / "notes.txt").write_text("the user's own file\n")
    before = snapshot(parent)
    command = [sys.executable, "-m", "showwork", "report", str(source), "--score", "score", "--group", "family",
               "--params", "lr", "--a", "0", "--b", "1", "--no-mlflow", "--out", str(out)]
    with (tmp_path / "report.err").open("w") as err:
        process = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL,
                                   env=search_process_environment(), start_new_session=True)
    try:
        staging_parent = out if existing else parent
        deadline = time.monotonic() + 120
        while not staged_figures(staging_parent):  # mid-figures: the staging folder holds some of them
            assert process.poll() is None, f"the report ended before a figure was staged: {(tmp_path / 'report.err').read_text()}"
            assert time.monotonic() < deadline, "no figure staged within 120 s"
            time.sleep(0.02)
        signum = signal.SIGINT if how.startswith("Ctrl-C") else signal.SIGTERM
        if how.endswith("group"):
            os.killpg(process.pid, signum)
        else:
            os.kill(process.pid, signum)
        code = process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    err = (tmp_path / "report.err").read_text()
    assert code == 128 + signum, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"showwork: stopped by {signum.name}"), err
    assert "nothing was written" in lines[0] and str(out) in lines[0]
    assert snapshot(parent) == before  # no staging folder left, --out as it was (a new one not created)


# ------------------------------------------------- a signal while the files move in: held until the report is whole


@pytest.fixture(scope="module")
def report():
    rng = np.random.default_rng(1)
    params = tuple({"lr": float(10 ** rng.uniform(-5, -1))} for _ in range(20))
    families = [FamilyResults(name, rng.uniform(0.5, 0.9, size=20), ("finished",) * 20, "val_acc", params=params)
                for name in ("a", "b")]
    return analyze(families, ReportSettings(a=0, b=1))


def signal_while_moving_in(monkeypatch, signum=signal.SIGTERM) -> None:
    """The signal comes as the report starts to move into --out (its manifest written first, in both cases)."""
    real = output_module._write_manifest

    def write_manifest(*args, **kwargs):
        signal.raise_signal(signum)
        return real(*args, **kwargs)

    monkeypatch.setattr(output_module, "_write_manifest", write_manifest)


@pytest.mark.parametrize("existing", [True, False], ids=["existing-out", "new-out"])
def test_a_signal_while_the_files_move_in_is_held_until_the_report_is_whole(report, tmp_path, monkeypatch, existing):
    """Stopped half-way through the renames, --out would hold some files of each report (and say 'nothing was
    written'); the signal waits until the report is whole, then stops it as WrittenThenInterrupted."""
    out = tmp_path / "out"
    if existing:
        write_report(report, out, figure_formats=("png",))
        (out / "notes.txt").write_text("mine")
    signal_while_moving_in(monkeypatch)
    with Interrupts() as interrupts, pytest.raises(WrittenThenInterrupted) as stopped:
        write_report(report, out, figure_formats=("png", "svg"))
    assert interrupts.signum == signal.SIGTERM
    manifest = json.loads((out / MANIFEST_NAME).read_text())
    assert "incoming" not in manifest  # the commit finished
    written = {p.relative_to(out).as_posix() for p in stopped.value.files.all()}
    assert written <= set(manifest["files"]) and "figures/cdfs.svg" in written
    assert all((out / rel).is_file() for rel in written)
    assert not [p for p in tmp_path.rglob(f"*{STAGING}*")]
    assert not existing or (out / "notes.txt").read_text() == "mine"


def test_the_command_says_the_report_was_written_when_the_signal_came_as_it_moved_in(tmp_path, monkeypatch, capsys):
    source = results_csv(tmp_path, families=2)
    signal_while_moving_in(monkeypatch)
    handler = signal.getsignal(signal.SIGTERM)
    code, _, err = run_cli(capsys, "report", source, "--score", "score", "--group", "family", "--params", "lr",
                           "--a", 0, "--b", 1,
                           "--no-mlflow", "--formats", "png", "--out", tmp_path / "out")
    assert code == 128 + signal.SIGTERM
    assert err == f"showwork: stopped by SIGTERM after the report was written to {tmp_path / 'out'}\n"
    assert (tmp_path / "out" / "report.html").is_file()
    assert signal.getsignal(signal.SIGTERM) == handler  # the command's handler is gone with it

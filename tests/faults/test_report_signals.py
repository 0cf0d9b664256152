"""``showwork report`` stopped by SIGTERM or Ctrl-C while it draws (issue 34 item 6).

A report is written into a hidden staging folder first (inside an existing ``--out``, or beside a
new one) and moved into place only when whole. SIGTERM used to kill the process where it stood,
the staging folder left behind; now it stops the report as Ctrl-C does: the staging folder
removed, ``--out`` as it was (a new one not created), exit 143, one line that says so. Sent to the
process or to its whole process group (what ``timeout``, Slurm and Kubernetes do).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from showwork.report import FamilyResults, ReportSettings, analyze, write_report
from showwork.report import output as output_module
from showwork.report.figures.style import TEX_SYSTEMS
from showwork.report.output import MANIFEST_NAME, WrittenThenInterrupted
from showwork.run.interrupts import Interrupts

from helpers import run_cli, search_process_environment
from processes import kill_session, session_processes

STAGING = "showwork-report-staging-"
needs_tex = pytest.mark.skipif(not any(shutil.which(t) for t in TEX_SYSTEMS) and not os.environ.get("CI"),
                               reason="no TeX system for the PGF backend (CI installs one)")


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


def stop_report_while_it_draws(tmp_path: Path, out: Path, how: str, formats: str = "png,svg,pdf") -> tuple[int, str, list[int]]:
    """Run ``showwork report`` into ``out`` in a session of its own, send ``how`` once a figure is staged; its exit
    status, its stderr, and the processes left in its session after it ended (LaTeX's, with pgf). It must end within
    10 s of the signal, as ``timeout`` and Slurm expect (issue 35 item 4)."""
    staged = "*.pgf" if "pgf" in formats else "*.png"
    command = [sys.executable, "-m", "showwork", "report", str(results_csv(tmp_path)), "--score", "score", "--group", "family",
               "--params", "lr", "--a", "0", "--b", "1", "--no-mlflow", "--formats", formats, "--out", str(out)]
    with (tmp_path / "report.err").open("w") as err:
        process = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL,
                                   env=search_process_environment(), start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        # mid-figures: the staging folder (inside an existing --out, beside a new one) holds some of them
        while not [p for folder in out.parent.glob(f"**/.*{STAGING}*") for p in (folder / "figures").glob(staged)]:
            assert process.poll() is None, f"the report ended before a figure was staged: {(tmp_path / 'report.err').read_text()}"
            assert time.monotonic() < deadline, "no figure staged within 120 s"
            time.sleep(0.02)
        signum = signal.SIGINT if how.startswith("Ctrl-C") else signal.SIGTERM
        (os.killpg if how.endswith("group") else os.kill)(process.pid, signum)
        signalled = time.monotonic()
        code = process.wait(timeout=60)
        assert time.monotonic() - signalled < 10, (tmp_path / "report.err").read_text()
        time.sleep(0.5)  # a child's last moment after its parent
        left = session_processes(process.pid)
    finally:
        kill_session(process)
    return code, (tmp_path / "report.err").read_text(), left


def assert_stopped_with_nothing_written(code: int, err: str, how: str, out: Path) -> None:
    signum = signal.SIGINT if how.startswith("Ctrl-C") else signal.SIGTERM
    assert code == 128 + signum, err
    assert err == f"showwork: stopped by {signum.name}: nothing was written (--out {out} is as it was)\n"


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.parametrize("existing", [True, False], ids=["existing-out", "new-out"])
@pytest.mark.parametrize("how", ["SIGTERM", "SIGTERM-to-the-group", "Ctrl-C-to-the-group"])
def test_a_report_stopped_while_it_draws_removes_its_staging_folder_and_leaves_out_as_it_was(tmp_path, existing, how):
    """Before, SIGTERM ended the process where it stood (exit -15) and left the staging folder with its figures."""
    parent = tmp_path / "reports"
    parent.mkdir()
    out = parent / "paper"
    if existing:
        out.mkdir()
        (out / "notes.txt").write_text("the user's own file\n")
    before = snapshot(parent)
    code, err, left = stop_report_while_it_draws(tmp_path, out, how)
    assert_stopped_with_nothing_written(code, err, how, out)
    assert snapshot(parent) == before  # no staging folder left, --out as it was (a new one not created)
    assert left == []


@pytest.mark.slow
@pytest.mark.integration
@needs_tex
def test_a_report_stopped_while_latex_measures_its_pgf_texts_ends_the_same(tmp_path):
    """SIGTERM to the group reaches the LaTeX that matplotlib's PGF backend runs too: still one line, exit 143, nothing left."""
    out = tmp_path / "paper"
    code, err, left = stop_report_while_it_draws(tmp_path, out, "SIGTERM-to-the-group", formats="png,pgf")
    assert_stopped_with_nothing_written(code, err, "SIGTERM-to-the-group", out)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.err", "results.csv"]
    assert left == []


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

"""`showwork search` under faults of the driver's surroundings (issue 14, items 8, 16, 19, 20, 21).

- A trial that no node of the cluster can hold (item 8): refused before anything is created, or,
  on a cluster that scales up, a warning and a "waiting for resources" line.
- Warnings are printed when they happen, not when the command ends (item 16).
- A trainable that raises KeyboardInterrupt or calls ``sys.exit(0)`` (item 19).
- ``--resume`` with fewer trials than the ledger holds (item 20).
- The storage folder fills up or turns read-only mid-search (item 21): real ENOSPC and EROFS on a
  small tmpfs mounted for the test (root, or CAP_SYS_ADMIN, only; skipped otherwise, failing
  under CI).

Each search is a real one (Ray, the ledger, MLflow in SQLite) with a trainable of a few lines and
a handful of trials.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import pytest

from showwork.recorded import recorded_spec
from showwork.sampling import trial_config, trial_seed
from showwork.space import load_search_spec
from showwork.store import Ledger
from showwork.trials.ray_executor import ClusterResources

from helpers import cli_in_process as cli_run
from helpers import runs_of, search_environment, search_process_environment
from processes import descendants, kill_session, process_stat, session_processes
from servers import MlflowServer, unavailable

pytestmark = pytest.mark.integration

# A trainable whose behaviour per trial comes from data["plan"] (by training seed): "ok" by default.
TRAINABLE = """
    import json
    import os
    import sys
    import time
    from pathlib import Path


    def train(config, *, seed, device, reporter, data):
        plan = json.loads(Path(data["plan"]).read_text()) if data.get("plan") else {}
        behaviour = plan.get(str(seed), "ok")
        time.sleep(float(data.get("sleep", 0)))
        if behaviour == "interrupt":
            raise KeyboardInterrupt
        if behaviour == "exit0":
            sys.exit(0)
        if behaviour == "die":
            os._exit(1)
        if behaviour == "error":
            raise ValueError(f"x = {config['x']:.3f} is refused")
        reporter(epoch=0, val_accuracy=config["x"])
        return {"val_accuracy": config["x"]}
"""


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def space_file(folder: Path, name: str, *, num_trials: int, seed: int = 7, extra: str = "",
               data: dict | None = None) -> Path:
    write(folder / "faulty.py", TRAINABLE)
    lines = [f"name: {name}", "family: faulty.py:train", "metric: {name: val_accuracy, mode: max}",
             f"num_trials: {num_trials}", f"seed: {seed}", f"data: {json.dumps(data or {})}", *extra.splitlines(),
             "space:", "  x: {distribution: uniform, low: 0.0, high: 1.0}"]
    path = folder / f"{name}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def record_count(storage: Path, name: str) -> int:
    return len(list((storage / name / "trials").glob("[0-9]*.json")))


class Driver:
    """``showwork search`` as a subprocess in its own session (so that its Ray can be found and ended),
    its stdout and stderr in files that the test reads while it runs."""

    def __init__(self, folder: Path, space: Path, *extra, env: dict | None = None, progress: bool = False):
        self.out_path, self.err_path = folder / "driver.out", folder / "driver.err"
        command = [sys.executable, "-m", "showwork", "search", str(space), *map(str, extra)]
        if not progress:
            command.append("--no-progress")
        with self.out_path.open("w") as out, self.err_path.open("w") as err:
            self.process = subprocess.Popen(command, cwd=folder, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                            env=search_process_environment(**(env or {})), start_new_session=True)

    @property
    def out(self) -> str:
        return self.out_path.read_text()

    @property
    def err(self) -> str:
        return self.err_path.read_text()

    def wait_for(self, predicate, what: str, timeout: float = 180):
        """Poll until ``predicate()`` is truthy (returned) while the driver runs."""
        deadline = time.monotonic() + timeout
        while not (value := predicate()):
            assert self.process.poll() is None, f"the search ended before {what}: {self.err[-3000:]}"
            assert time.monotonic() < deadline, f"not {what} within {timeout:.0f} s: {self.err[-3000:]}"
            time.sleep(0.1)
        return value

    def wait(self, timeout: float = 300) -> int:
        return self.process.wait(timeout=timeout)

    def end_session(self) -> None:
        """Kill what is left of the session (the driver, its Ray)."""
        kill_session(self.process)


def first_line(text: str, start: str) -> str | None:
    return next((line for line in text.splitlines() if start in line), None)


# ---------------------------------------------------------------- item 16: warnings at once


def test_a_warning_is_printed_when_it_happens_not_when_the_command_ends(monkeypatch):
    seen_during_the_command = []

    def handler(args):
        warnings.warn("MLflow is unreachable, the ledger keeps every result")
        warnings.warn("a library's deprecation", DeprecationWarning)
        seen_during_the_command.append(sys.stderr.getvalue())
        return 0

    from showwork.commands import validate

    monkeypatch.setattr(validate, "_run_validate", handler)  # the handler the parser is built with
    code, out, err = cli_run("validate", "any.yaml")
    assert code == 0
    assert seen_during_the_command == ["showwork: warning: MLflow is unreachable, the ledger keeps every result\n"]
    assert err == seen_during_the_command[0]  # once, and deprecations never


@pytest.mark.slow
def test_the_warning_of_an_mlflow_outage_arrives_while_the_trials_still_run(home, tmp_path):
    """A search into an MLflow server that is killed after the first trial: the outage's warning
    is on stderr while trials still run (before, it came only after the search ended)."""
    server = MlflowServer(f"sqlite:///{home / 'mlflow.db'}", tmp_path / "artifacts", tmp_path / "server.log")
    server.start()
    space = space_file(home, "outage", num_trials=6, extra="max_concurrent: 1", data={"sleep": 2})
    driver = Driver(home, space, "--num-cpus", 2, "--storage", home / "runs", "--tracking-uri", server.url)
    try:
        driver.wait_for(lambda: record_count(home / "runs", "outage") >= 1, "a trial was recorded")
        server.stop()
        driver.wait_for(lambda: first_line(driver.err, "showwork: warning: MLflow"), "MLflow's outage was told")
        recorded_when_warned = record_count(home / "runs", "outage")
        assert driver.wait() == 0, driver.err
    finally:
        server.stop()
        driver.end_session()
    assert recorded_when_warned < 6, "the warning came only after every trial had ended"
    assert record_count(home / "runs", "outage") == 6


# ---------------------------------------------------------------- item 8: a trial that fits no node


def test_cluster_resources_fit_and_describe():
    one = ClusterResources(nodes=((2.0, 0.0),))
    assert one.fits(2, 0) and one.fits(0.5, 0) and not one.fits(64, 0) and not one.fits(1, 1)
    assert not one.may_fit_later(1, 1)
    assert one.describe() == "1 node: cpus=2, gpus=0"
    mixed = ClusterResources(nodes=((8.0, 1.0), (8.0, 1.0), (2.0, 0.0)), scalable=((16.0, 4.0),))
    assert not mixed.fits(9, 1) and mixed.fits(8, 1) and not mixed.fits(2, 2)  # one node holds a trial
    assert mixed.may_fit_later(16, 4) and not mixed.may_fit_later(16, 8)
    assert mixed.describe() == "3 nodes: 2 × (cpus=8, gpus=1), 1 × (cpus=2, gpus=0)"
    assert ClusterResources(nodes=((2.0, 0.0),), autoscaling_declared=True).may_fit_later(64, 8)


@pytest.mark.slow
@pytest.mark.parametrize("resources, asks, has", [
    ("{cpus: 64}", "cpus=64, gpus=0", "cpus=2, gpus=0"),
    ("{gpus: 1}", "cpus=1, gpus=1", "cpus=2, gpus=0"),
], ids=["64-cpus-on-2", "a-gpu-without-gpus"])
def test_a_trial_that_no_node_can_hold_is_refused_before_anything_is_created(home, resources, asks, has):
    space = space_file(home, "too-big", num_trials=2, extra=f"resources: {resources}")
    uri = f"sqlite:///{home / 'mlflow.db'}"
    # A local Ray of 2 CPUs and no GPU, whatever the machine has (Ray counts the GPUs it can see).
    driver = Driver(home, space, "--num-cpus", 2, "--storage", home / "runs", "--tracking-uri", uri,
                    env={"CUDA_VISIBLE_DEVICES": ""})
    try:
        driver.wait()
        err = driver.err
        deadline = time.monotonic() + 30
        while (session := session_processes(driver.process.pid)) and time.monotonic() < deadline:
            time.sleep(0.5)  # Ray's processes end a moment after the driver
    finally:
        driver.end_session()
    assert driver.process.returncode == 2, err
    lines = [line for line in err.splitlines() if line.startswith("showwork:")]
    assert lines == [lines[0]] and lines[0].startswith("showwork: error: ") and "Traceback" not in err
    assert f"each trial asks {asks}" in lines[0] and f"the local Ray has 1 node: {has}" in lines[0]
    assert "too-big.yaml" in lines[0] and "resources" in lines[0]
    assert not (home / "runs").exists()  # no ledger folder, not even the lock
    assert runs_of(uri, "too-big") == []  # no MLflow experiment or run
    assert session == []  # Ray was shut down


@pytest.mark.slow
def test_on_a_cluster_that_scales_up_the_search_warns_and_waits_then_resumes(home):
    space = space_file(home, "pending", num_trials=2, extra="resources: {gpus: 1}")
    uri = f"sqlite:///{home / 'mlflow.db'}"
    driver = Driver(home, space, "--num-cpus", 2, "--storage", home / "runs", "--tracking-uri", uri,
                    env={"CUDA_VISIBLE_DEVICES": "", "SHOWWORK_AUTOSCALING": "1"}, progress=True)
    try:
        waiting = driver.wait_for(lambda: first_line(driver.out, "waiting for resources"), "the waiting line")
        assert waiting.startswith("pending: waiting for resources: each trial asks cpus=1, gpus=1;"
                                  " the local Ray has 1 node: cpus=2, gpus=0")
        time.sleep(2)
        assert driver.process.poll() is None  # it waits
    finally:
        driver.end_session()
    err = driver.err
    assert "showwork: warning: no node can run a trial yet (each trial asks cpus=1, gpus=1" in err
    assert record_count(home / "runs", "pending") == 0
    # With resources that fit, the same search resumes and completes.
    space.write_text(space.read_text().replace("resources: {gpus: 1}", "resources: {cpus: 1}"))
    code, out, err = cli_run("search", space, "--resume", "--no-progress", "--num-cpus", 2, "--storage", "runs",
                             "--tracking-uri", uri)
    assert code == 0, err
    assert "search pending: 2 finished, 0 failed, 0 timed out of 2" in out


# ------------------------------------------------- item 19: KeyboardInterrupt, sys.exit; item 20: fewer trials

BEHAVIOURS = ["interrupt", "exit0", "die", "ok"]


@pytest.fixture(scope="module")
def quitting(template_db, tmp_path_factory):
    """Four trials: one raises KeyboardInterrupt, one calls sys.exit(0), one's worker dies, one finishes."""
    folder = tmp_path_factory.mktemp("quitting")
    shutil.copy(template_db, folder / "mlflow.db")
    plan = folder / "plan.json"
    plan.write_text(json.dumps({str(trial_seed(7, i)): b for i, b in enumerate(BEHAVIOURS)}))
    space = space_file(folder, "quitting", num_trials=4, extra="max_retries: 1\nmax_concurrent: 2",
                       data={"plan": str(plan)})
    uri = f"sqlite:///{folder / 'mlflow.db'}"
    with search_environment(folder):
        code, out, err = cli_run("search", space, "--no-progress", "--num-cpus", 2, "--storage", "runs",
                                 "--tracking-uri", uri)
    return folder, space, uri, code, out, err


@pytest.mark.slow
def test_keyboard_interrupt_and_sys_exit_in_a_trainable_are_recorded_as_such_and_not_retried(quitting):
    folder, space, uri, code, out, err = quitting
    assert code == 0, err
    records = Ledger(folder / "runs", "quitting").records()
    assert [r.index for r in records] == [0, 1, 2, 3]
    interrupted, exited, died, ok = records
    assert interrupted.status == "failed" and interrupted.error.startswith("the trainable raised KeyboardInterrupt")
    assert exited.status == "failed" and exited.error.startswith("the trainable called sys.exit(0)")
    assert interrupted.attempts == exited.attempts == 1  # not retried: not a worker death
    assert died.status == "failed" and died.error.startswith("WorkerDied") and died.attempts == 2
    assert ok.status == "finished"
    assert "search quitting: 1 finished, 3 failed, 0 timed out of 4" in out


@pytest.mark.slow
def test_a_search_with_failures_ends_with_them_by_kind_and_where_the_tracebacks_are(quitting):
    folder, space, uri, code, out, err = quitting
    assert code == 0, err  # one trial finished
    block = out[out.index("failures (3 of 4 trials), by kind:"):].splitlines()
    assert block[1:3] == [
        "  1 x the trainable raised KeyboardInterrupt, first trial 0: the trainable raised KeyboardInterrupt",
        "  1 x the trainable called sys.exit(0), first trial 1: the trainable called sys.exit(0)",
    ]
    # How the trial's process ended (issue 23 item 6: each trial runs in a process of its own)
    pid = Ledger(folder / "runs", "quitting").read(2).error.split("(pid ")[1].split(")")[0]
    assert block[3] == (f"  1 x WorkerDied, first trial 2: WorkerDied: the trial's process (pid {pid}) exited with status 1"
                        " without writing a record")
    ledger = Ledger(folder / "runs", "quitting")
    assert f"tracebacks: each trial's record ({ledger.path(0)}" in block[4]
    assert "showwork results quitting --storage runs --csv" in block[4]
    (log,) = (folder / "runs" / "quitting" / "ray").glob("run-*.log")
    assert block[5] == f"  and Ray's log of the run: {log}"


@pytest.mark.slow
def test_a_search_in_which_every_trial_failed_exits_1_with_the_reasons(home):
    plan = home / "plan.json"
    plan.write_text(json.dumps({str(trial_seed(7, i)): "error" for i in range(2)}))
    space = space_file(home, "hopeless", num_trials=2, extra="max_concurrent: 1", data={"plan": str(plan)})
    code, out, err = cli_run("search", space, "--no-progress", "--num-cpus", 2, "--storage", "runs",
                             "--tracking-uri", f"sqlite:///{home / 'mlflow.db'}")
    assert code == 1, err
    assert "search hopeless: 0 finished, 2 failed, 0 timed out of 2" in out
    x = trial_config(load_search_spec(space).space, 7, 0)["x"]
    assert f"  2 x ValueError, first trial 0: ValueError: x = {x:.3f} is refused" in out.splitlines()
    lines = [line for line in err.splitlines() if line.startswith("showwork:")]
    assert lines == ["showwork: error: no trial of search hopeless finished (2 failed, 0 timed out); see the failures above"]


@pytest.mark.slow
def test_ray_tracebacks_go_to_the_log_file_not_the_terminal(quitting):
    folder, space, uri, code, out, err = quitting
    for text in (out, err):
        assert "Traceback" not in text and "Trial task failed" not in text and "(raylet)" not in text
        assert "completed. Last result" not in text
    logs = list((folder / "runs" / "quitting" / "ray").glob("run-*.log"))
    assert len(logs) == 1
    log = logs[0].read_text()
    assert "Trial task failed" in log and "Traceback" in log  # the dead trial's process, once per attempt but the last
    assert "TrialProcessDied: the trial's process (pid " in log and "exited with status 1 without writing a record" in log


@pytest.mark.slow
def test_resuming_with_fewer_trials_than_recorded_is_refused(quitting):
    folder, space, uri, code, out, err = quitting
    ledger = Ledger(folder / "runs", "quitting")
    before, meta, runs = [r.to_dict() for r in ledger.records()], ledger.read_meta(), len(runs_of(uri, "quitting"))
    with search_environment(folder):
        code, out, err = cli_run("search", space, "--resume", "--no-progress", "--num-trials", 3,
                                 "--storage", "runs", "--tracking-uri", uri)
        assert code == 2
        assert err.startswith("showwork: error: ") and len(err.strip().splitlines()) == 1
        assert "4 recorded trials" in err and "num_trials >= 4" in err
        assert [r.to_dict() for r in ledger.records()] == before and ledger.read_meta() == meta
        assert len(runs_of(uri, "quitting")) == runs
        # The recorded number itself resumes (nothing to run: Ray is not even started).
        code, out, err = cli_run("search", space, "--resume", "--no-progress", "--num-trials", 4,
                                 "--storage", "runs", "--tracking-uri", uri)
    assert code == 0, err
    assert "search quitting: 1 finished, 3 failed, 0 timed out of 4" in out


# ---------------------------------------------------------------- item 21: the storage fails mid-search


@contextlib.contextmanager
def small_filesystem(folder: Path, size: str = "8m"):
    """A tmpfs of ``size`` mounted at ``folder`` (needs root or CAP_SYS_ADMIN)."""
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        unavailable(f"cannot mount a small tmpfs for the full-disk test: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        for _ in range(20):
            if subprocess.run(["umount", "-R", str(folder)], capture_output=True).returncode == 0:
                break
            time.sleep(0.5)  # the killed search's leftovers may still hold a file open


def fill(folder: Path) -> Path:
    """Fill the file system of ``folder`` to the last byte; return the filler file."""
    filler = folder / "filler"
    with open(filler, "wb") as handle:
        with contextlib.suppress(OSError):
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
    return filler


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["full-disk", "read-only", "full-disk-and-a-worker-dies"])
def test_a_storage_folder_that_fails_mid_search_stops_it_with_one_line_and_the_resume_completes(home, fault):
    """The worker of the running trial finds the folder full or read-only (it reports that to the
    driver), or, in the third case, the worker dies and the driver cannot write its failed record."""
    disk = small_filesystem(home / "disk")
    dies = fault == "full-disk-and-a-worker-dies"
    with disk:
        storage = home / "disk" / "runs"
        trials = storage / "faulty" / "trials"
        plan = home / "plan.json"
        plan.write_text(json.dumps({str(trial_seed(7, 2)): "die"} if dies else {}))
        space = space_file(home, "faulty", num_trials=6, extra="max_concurrent: 1\nmax_retries: 0",
                           data={"sleep": 1.5, "plan": str(plan)})
        uri = f"sqlite:///{home / 'mlflow.db'}"
        driver = Driver(home, space, "--num-cpus", 2, "--storage", storage, "--tracking-uri", uri)
        undo = None
        try:
            # Two records, each with its MLflow run id (the driver's own write into the record): the
            # next write is the running trial's worker's (or, when that worker dies, the driver's).
            driver.wait_for(lambda: sum(r.mlflow_run_id is not None for r in Ledger(storage, "faulty").records()) >= 2,
                            "two trials were recorded and projected")
            if fault.startswith("full-disk"):
                filler = fill(home / "disk")
                undo = filler.unlink
            else:  # the trials folder becomes read-only (root ignores file modes, not a read-only mount)
                subprocess.run(["mount", "--bind", str(trials), str(trials)], check=True)
                subprocess.run(["mount", "-o", "remount,bind,ro", str(trials)], check=True)
                undo = lambda: subprocess.run(["umount", str(trials)], check=True)  # noqa: E731
            driver.wait()
            out, err = driver.out, driver.err
        finally:
            driver.end_session()
        recorded = {r.index: r.to_dict() for r in Ledger(storage, "faulty").records()}
        undo()
        assert driver.process.returncode == 1, err
        reason = "[Errno 30] Read-only file system" if fault == "read-only" else "[Errno 28] No space left on device"
        lines = [line for line in err.splitlines() if line.startswith("showwork:")]
        assert len(lines) == 1, err
        line = lines[0]
        assert line.startswith(f"showwork: error: cannot write to {trials}: {reason}")
        assert line.endswith(f"continue with: showwork resume faulty --storage {storage}")
        assert "Traceback" not in err + out
        assert 2 <= len(recorded) < 6 and all(record["status"] == "finished" for record in recorded.values())

        code, out, err = cli_run("search", space, "--resume", "--no-progress", "--num-cpus", 2,
                                 "--storage", storage, "--tracking-uri", uri)
        assert code == 0, err
        assert f"search faulty: {5 if dies else 6} finished, {1 if dies else 0} failed, 0 timed out of 6" in out
        records = Ledger(storage, "faulty").records()
        assert [r.index for r in records] == list(range(6))  # none lost, none twice
        spec_space = load_search_spec(space).space
        for record in records:
            assert record.params == trial_config(spec_space, 7, record.index)
            if record.index in recorded:  # written before the fault: untouched but for the MLflow run id
                assert {**record.to_dict(), "mlflow_run_id": None} == {**recorded[record.index], "mlflow_run_id": None}
        runs = runs_of(uri, "faulty")
        parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
        assert len(parents) == 1 and parents[0].info.status == "FINISHED"
        children = [r for r in runs if "showwork.trial_index" in r.data.tags and r.info.lifecycle_stage == "active"]
        assert sorted(int(r.data.tags["showwork.trial_index"]) for r in children) == list(range(6))
        # One run per trial index: the run of the attempt the fault stopped is deleted, never logged.
        deleted = [r for r in runs if r.info.lifecycle_stage == "deleted"]
        assert all("showwork.logged" not in r.data.tags for r in deleted)
        assert all(r.info.status == ("FAILED" if dies and r.data.tags["showwork.trial_index"] == "2" else "FINISHED")
                   for r in children)
        if dies:  # recorded once the disk had room again: by the resume, whose worker died too
            assert records[2].status == "failed" and records[2].error.startswith("WorkerDied")


# ---------------------------------------------------------------- issue 23 item 9: the folder moved mid-search


@pytest.mark.slow
@pytest.mark.parametrize("fault", ["renamed", "deleted"])
def test_a_search_folder_moved_or_deleted_mid_search_stops_it_with_one_line_and_the_resume_completes(home, fault):
    """Before: the workers made a new folder at the old path and wrote the next records there, the search
    exited 0 with "6 finished of 8", and `showwork resume` then refused (that folder held no spec)."""
    storage = home / "runs"
    space = space_file(home, "moving", num_trials=8, extra="max_concurrent: 1\nmax_retries: 0", data={"sleep": 1.5})
    uri = f"sqlite:///{home / 'mlflow.db'}"
    driver = Driver(home, space, "--num-cpus", 2, "--storage", storage, "--tracking-uri", uri)
    moved = storage / "moving.moved"
    try:
        driver.wait_for(lambda: record_count(storage, "moving") >= 2, "two trials were recorded")
        if fault == "renamed":
            (storage / "moving").rename(moved)
        else:  # gone at once (a recursive delete races with the search's writes, as `rm -rf` would)
            (storage / "moving").rename(home / "trash")
            shutil.rmtree(home / "trash")
        code = driver.wait()
        out, err = driver.out, driver.err
    finally:
        driver.end_session()
    assert code == 1, err
    line = one_line(err)
    assert line.startswith(f"showwork: error: {storage / 'moving'}: the search's folder was moved, deleted or replaced"
                           " while the search ran (no search.json there); the search stopped. Put the folder back at")
    assert line.endswith(f"continue with: showwork resume moving --storage {storage}")
    assert "search moving:" not in out
    assert not (storage / "moving").exists()  # no second ledger at the old path (Ray's copy of its state removed)
    if fault == "renamed":
        recorded = Ledger(storage, "moving.moved").records()
        assert 2 <= len(recorded) < 8 and all(r.status == "finished" for r in recorded)
        moved.rename(storage / "moving")
        code, out, err = cli_run("resume", "moving", "--storage", storage, "--no-progress", "--num-cpus", 2)
    else:
        code, out, err = cli_run("search", space, "--resume", "--no-progress", "--num-cpus", 2, "--storage", storage,
                                 "--tracking-uri", uri)
    assert code == 0, err
    assert "search moving: 8 finished, 0 failed, 0 timed out of 8" in out
    records = Ledger(storage, "moving").records()
    assert [r.index for r in records] == list(range(8))
    assert all(r.params == trial_config(load_search_spec(space).space, 7, r.index) for r in records)


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("showwork:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# ------------------------------------------- issue 15, items 1 and 2: Ctrl-C, SIGTERM; resume by name


def parent_and_children(uri: str, name: str) -> tuple:
    runs = runs_of(uri, name)
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    return parents, [r for r in runs if "mlflow.parentRunId" in r.data.tags]


def session_after_exit(session: int, timeout: float = 30) -> list[int]:
    """The processes left in ``session`` once they have had ``timeout`` s to end (Ray's end a moment after the driver)."""
    deadline = time.monotonic() + timeout
    while (left := session_processes(session)) and time.monotonic() < deadline:
        time.sleep(0.5)
    return left


@pytest.mark.slow
@pytest.mark.parametrize("signals", [("SIGINT",), ("SIGINT", "SIGINT"), ("SIGTERM",), ("Ctrl-C",)],
                         ids=["SIGINT", "SIGINT-twice", "SIGTERM", "Ctrl-C-to-the-process-group"])
def test_an_interrupted_search_says_so_exits_128_plus_the_signal_and_resume_by_name_completes_it(home, signals):
    """Before the fix, one SIGINT ended with the normal summary and exit 0 (Tune's own handler), and
    the hint to continue dropped the --seed override."""
    space = space_file(home, "stopped", num_trials=5, extra="max_concurrent: 1\nmax_retries: 0", data={"sleep": 1.0})
    uri = f"sqlite:///{home / 'mlflow.db'}"
    driver = Driver(home, space, "--seed", 11, "--num-cpus", 2, "--storage", "runs", "--tracking-uri", uri)
    try:
        driver.wait_for(lambda: record_count(home / "runs", "stopped") >= 1, "a trial finished")
        for name in signals:
            if name == "Ctrl-C":  # a terminal's Ctrl-C: SIGINT to the whole foreground process group
                os.killpg(driver.process.pid, signal.SIGINT)
            else:
                os.kill(driver.process.pid, getattr(signal, name))
            time.sleep(0.2)
        code = driver.wait(timeout=120)
        left = session_after_exit(driver.process.pid)
        out, err = driver.out, driver.err
    finally:
        driver.end_session()
    first = signal.SIGINT if signals[0] == "Ctrl-C" else getattr(signal, signals[0])
    assert code == 128 + first, err
    assert left == []  # no Ray (or other) process of the search is left
    finished = sum(r.status == "finished" for r in Ledger(home / "runs", "stopped").records())
    assert 1 <= finished < 5
    assert f"interrupted: {finished} of 5 trials finished" in err.splitlines()
    assert err.rstrip().splitlines()[-1] == "  showwork resume stopped --storage runs"
    assert "Traceback" not in err + out and "search stopped:" not in out  # no normal summary
    assert all(r.status == "finished" for r in Ledger(home / "runs", "stopped").records())  # none marked failed
    parents, _ = parent_and_children(uri, "stopped")
    assert len(parents) == 1 and parents[0].info.status == "KILLED"

    (home / "moved").mkdir()  # the YAML file is not needed: it moved away (and changed)
    space.rename(home / "moved" / space.name)
    with search_environment(home):
        code, out, err = cli_run("resume", "stopped", "--storage", "runs", "--no-progress", "--num-cpus", 2)
    assert code == 0, err
    assert "search stopped: 5 finished, 0 failed, 0 timed out of 5" in out
    records = Ledger(home / "runs", "stopped").records()
    assert [r.index for r in records] == list(range(5))  # each index once
    assert all(r.seed == trial_seed(11, r.index) for r in records)  # the --seed override was kept
    parents, children = parent_and_children(uri, "stopped")  # the recorded MLflow store, without --tracking-uri
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"


@pytest.mark.slow
def test_a_refused_resume_names_each_changed_field_and_resume_by_name_needs_only_the_ledger(home):
    space = space_file(home, "seeded", num_trials=1)
    uri = f"sqlite:///{home / 'mlflow.db'}"
    code, out, err = cli_run("search", space, "--seed", 11, "--no-progress", "--num-cpus", 2, "--storage", "runs",
                             "--tracking-uri", uri)
    assert code == 0, err
    assert recorded_spec(home / "runs", "seeded") == load_search_spec(space, {"seed": 11})
    before = [r.to_dict() for r in Ledger(home / "runs", "seeded").records()]

    # --seed 11 forgotten, and the space changed since: each difference named, old value and new.
    space.write_text(space.read_text().replace("high: 1.0", "high: 2.0"))
    code, out, err = cli_run("search", space, "--resume", "--no-progress", "--storage", "runs", "--tracking-uri", uri)
    assert code == 2
    assert err.startswith("showwork: error: ") and len(err.strip().splitlines()) == 1
    assert "seed: 11 recorded, 7 now" in err and "space.x.high: 1.0 recorded, 2.0 now" in err
    assert f"`showwork resume seeded --storage {(home / 'runs').resolve()}`" in err and "new --name" not in err

    # The YAML file is gone: resume by name reads the spec from the ledger (nothing left to run: no Ray).
    space.unlink()
    code, out, err = cli_run("resume", "seeded", "--storage", "runs", "--no-progress")
    assert code == 0, err
    assert "search seeded: 1 finished, 0 failed, 0 timed out of 1" in out
    assert [r.to_dict() for r in Ledger(home / "runs", "seeded").records()] == before
    # ... and extends it: the next index, drawn with the recorded seed.
    code, out, err = cli_run("resume", "seeded", "--storage", "runs", "--num-trials", 2, "--no-progress", "--num-cpus", 2)
    assert code == 0, err
    assert "search seeded: 2 finished, 0 failed, 0 timed out of 2" in out
    records = Ledger(home / "runs", "seeded").records()
    assert [r.to_dict() for r in records[:1]] == before and [r.seed for r in records] == [trial_seed(11, i) for i in range(2)]


def test_resume_by_name_refuses_an_unknown_search_or_a_ledger_without_its_spec_in_one_line(home):
    code, out, err = cli_run("resume", "nothing", "--storage", "runs")
    assert code == 2 and err.startswith("showwork: error: no search 'nothing' in runs") and len(err.splitlines()) == 1
    ledger = Ledger(home / "runs", "old")
    ledger.update_meta(num_trials=3)  # a ledger written before the spec was recorded
    code, out, err = cli_run("resume", "old", "--storage", "runs")
    assert code == 2 and "holds no recorded spec" in err and "showwork search SPACE --resume" in err
    assert len(err.splitlines()) == 1
    ledger.update_meta(spec={"name": "old", "num_trials": "three"})  # edited by hand
    code, out, err = cli_run("resume", "old", "--storage", "runs")
    assert code == 2 and "the recorded spec is not valid" in err and len(err.splitlines()) == 1


def exit_and_what_is_left(driver: Driver, timeout: float = 120, settle_s: float = 5) -> tuple[int | None, list[int]]:
    """Wait for the driver to exit; its exit status, and which of the processes it ever had below it (whatever
    their session) are still alive ``settle_s`` seconds later."""
    seen, deadline = set(), time.monotonic() + timeout
    while driver.process.poll() is None and time.monotonic() < deadline:
        seen |= descendants(driver.process.pid) - {driver.process.pid}
        time.sleep(0.05)
    code = driver.process.poll()
    time.sleep(settle_s)
    return code, sorted(pid for pid in seen if (state := process_stat(pid)) is not None and state[0] != "Z")


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("moment", ["first process", "raylet"])
def test_a_signal_while_ray_starts_ends_it_and_leaves_nothing_running(home, signum, moment):
    """Issue 23 item 10: every process Ray started is gone within seconds of the exit, in its session or not."""
    space = space_file(home, "early", num_trials=2, data={"sleep": 1.0})
    uri = f"sqlite:///{home / 'mlflow.db'}"
    driver = Driver(home, space, "--num-cpus", 2, "--storage", "runs", "--tracking-uri", uri)
    try:
        if moment == "raylet":
            driver.wait_for(lambda: any("raylet" in command_of(pid) for pid in descendants(driver.process.pid)),
                            "Ray started its raylet")
        else:
            driver.wait_for(lambda: len(descendants(driver.process.pid)) > 1, "Ray started its first process")
        os.kill(driver.process.pid, signum)
        code, left = exit_and_what_is_left(driver)
        left += session_after_exit(driver.process.pid, timeout=0)
        err = driver.err
    finally:
        driver.end_session()
    assert code == 128 + signum, err
    assert left == []
    assert "interrupted: 0 of 2 trials finished" in err.splitlines() and "Traceback" not in err
    # Stopped before the search was recorded (the usual case): nothing to resume; after: the command.
    recorded = (home / "runs" / "early" / "search.json").exists()
    assert ("showwork resume early --storage runs" in err) == recorded


def command_of(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


@pytest.mark.slow
def test_a_sigterm_while_ray_starts_a_process_is_not_lost(home):
    """Issue 23 item 10. Before, Ray's own SIGTERM handler was in charge while ``ray.init`` ran: it raised
    ``SystemExit`` wherever the driver was. Inside Python's fork hooks (run as Ray starts each process) that
    exception is swallowed: the SIGTERM was lost and the search ran on to exit 0; inside logging's hook it
    also left logging's lock held, and the search hung with Ray running. Now the signal waits until Ray has
    started, then stops the search: exit 143, and nothing left running."""
    space = space_file(home, "forked", num_trials=2, data={"sleep": 1.0})
    faults = home / "faults"
    faults.mkdir()
    python_path = os.pathsep.join([str(Path(__file__).parent), *filter(None, [os.environ.get("PYTHONPATH")])])
    driver = Driver(home, space, "--num-cpus", 2, "--storage", "runs", "--tracking-uri", f"sqlite:///{home / 'mlflow.db'}",
                    env={"PYTHONPATH": python_path, "SHOWWORK_SIGNAL_IN_FORK": "start_raylet",
                         "SHOWWORK_FAULT_DIR": str(faults)})
    try:
        code, left = exit_and_what_is_left(driver)
        err = driver.err
    finally:
        driver.end_session()
    assert (faults / "signalled").read_text().strip() == str(driver.process.pid)  # sent while Ray started the raylet
    assert code == 128 + signal.SIGTERM, err
    assert left == []
    assert "interrupted: 0 of 2 trials finished" in err.splitlines() and "Traceback" not in err

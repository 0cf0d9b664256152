"""The driver killed with SIGKILL at nine moments of a search, then resumed (issue 7, item 1).

Each case starts ``showwork search`` in a process of its own with a named fault point of
``showwork/faults.py`` armed (by ``tests/faults/sitecustomize.py``): the process that reaches the
point stops itself there, frozen mid-operation. The test checks that the search really is at that moment (a temp file half-way
through a ledger write, a child run with params only, ...), SIGKILLs the driver (and before it a
stopped worker, frozen as it is), ends whatever Ray processes it left, and runs
``showwork search --resume``. Afterwards the search must be the
search an uninterrupted run with the same seed gives: exactly N records, each index once, the same
configurations, seeds and scores, and MLflow consistent with the ledger (one parent, one logged
child per trial with the ledger's score and its whole history; runs of interrupted attempts are
deleted, so MLflow shows nothing else).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from showwork.store import Ledger

from helpers import REPO_ROOT, search_process_environment
from processes import session_processes

pytestmark = [pytest.mark.slow, pytest.mark.integration]

FAULTS = REPO_ROOT / "tests" / "faults"
N = 6

TRAINABLE = """
    import time


    def train(config, *, seed, device, reporter, data):
        for epoch in range(3):
            time.sleep(0.15)
            reporter(epoch=epoch, val_accuracy=config["quality"] * (epoch + 1) / 3)
        return {"val_accuracy": config["quality"]}
"""

SPACE = f"""
    name: kills
    family: slow.py:train
    metric: {{name: val_accuracy, mode: max}}
    num_trials: {N}
    seed: 23
    max_concurrent: 2
    max_retries: 1
    space:
      quality: {{distribution: uniform, low: 0.5, high: 1.0}}
      width: {{distribution: int_uniform, low: 8, high: 64}}
"""


@dataclass
class Workspace:
    root: Path

    @property
    def storage(self) -> Path:
        return self.root / "runs"

    @property
    def uri(self) -> str:
        return f"sqlite:///{self.root / 'mlflow.db'}"

    @property
    def ledger(self) -> Ledger:
        return Ledger(self.storage, "kills")

    def command(self, *extra: str) -> list[str]:
        return [sys.executable, "-m", "showwork", "search", str(self.root / "kills.yaml"), "--no-progress",
                "--storage", str(self.storage), "--tracking-uri", self.uri, *extra]

    def runs(self) -> list:
        from mlflow.entities import ViewType
        from mlflow.tracking import MlflowClient

        client = MlflowClient(tracking_uri=self.uri)
        experiment = client.get_experiment_by_name("kills")
        if experiment is None:
            return []
        return client.search_runs([experiment.experiment_id], run_view_type=ViewType.ALL, max_results=1000)

    def history(self, run_id: str, key: str) -> list[tuple[int, float]]:
        from mlflow.tracking import MlflowClient

        return sorted((m.step, m.value) for m in MlflowClient(tracking_uri=self.uri).get_metric_history(run_id, key))


def environment(faults: Path | None = None, point: str | None = None) -> dict[str, str]:
    env = search_process_environment()
    for name in ("SHOWWORK_FAULT", "SHOWWORK_FAULT_DIR"):
        env.pop(name, None)
    if point is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(FAULTS), *filter(None, [env.get("PYTHONPATH")])])
        env["SHOWWORK_FAULT"], env["SHOWWORK_FAULT_DIR"] = point, str(faults)
    return env


def make_workspace(root: Path) -> Workspace:
    root.mkdir(parents=True, exist_ok=True)
    (root / "slow.py").write_text(textwrap.dedent(TRAINABLE).lstrip())
    (root / "kills.yaml").write_text(textwrap.dedent(SPACE).lstrip())
    return Workspace(root)


def run_to_the_end(workspace: Workspace, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(workspace.command(*extra), cwd=workspace.root, env=environment(), capture_output=True,
                          text=True, timeout=300)


def kill_at(workspace: Workspace, point: str, *extra: str, check=None) -> dict:
    """Run the search until a process reaches ``point``, check the moment, SIGKILL the driver."""
    faults = workspace.root / f"faults-{point.replace('@', '-')}"
    faults.mkdir()
    log = workspace.root / f"driver-{point.replace('@', '-')}.log"
    # A session of its own: the Ray processes the killed driver leaves behind are ended with it.
    driver = subprocess.Popen(workspace.command(*extra), cwd=workspace.root, env=environment(faults, point),
                              stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while not (faults / "reached.json").exists():
            assert driver.poll() is None, f"the search ended before it reached {point}:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"{point} not reached within 180 s:\n{log.read_text()[-3000:]}"
            time.sleep(0.05)
        reached = json.loads((faults / "reached.json").read_text())
        assert f"{reached['point']}@{reached['hit']}" == point, reached
        if check is not None:
            check(workspace, reached, driver.pid)
        if reached["pid"] != driver.pid:
            # A worker stopped at the point dies first, as it is: once the driver is dead, the kernel
            # sends SIGCONT to the stopped processes of the process group it orphans, and the worker
            # would finish its write or its trial before end_session reached it (a flaky resume).
            os.kill(reached["pid"], signal.SIGKILL)
        os.kill(driver.pid, signal.SIGKILL)
        assert driver.wait(timeout=30) == -signal.SIGKILL
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
        end_session(driver.pid)
    return reached


def end_session(session: int) -> None:
    """SIGKILL every process left in ``session`` (Ray's, and a stopped worker), and wait until none is."""
    deadline = time.monotonic() + 30
    while left := session_processes(session):
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        assert time.monotonic() < deadline, f"processes of the killed driver still alive: {left}"
        time.sleep(0.1)


# ---------------------------------------------------------------- the reference


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Workspace:
    """The same search, never interrupted."""
    workspace = make_workspace(tmp_path_factory.mktemp("reference"))
    done = run_to_the_end(workspace)
    assert done.returncode == 0, done.stderr[-3000:]
    return workspace


def assert_same_search(workspace: Workspace, reference: Workspace) -> None:
    """Exactly N records, as the uninterrupted run has them, and MLflow consistent with the ledger."""
    records, expected = workspace.ledger.records(), reference.ledger.records()
    assert [r.index for r in records] == list(range(N)) == [r.index for r in expected]
    assert sorted(p.name for p in workspace.ledger.trials_dir.glob("[0-9]*.json")) == [f"{i:06d}.json" for i in range(N)]
    for record, twin in zip(records, expected):
        assert record.status == "finished", record.error
        assert (record.params, record.seed, record.score, record.history) == (twin.params, twin.seed, twin.score,
                                                                              twin.history)
    runs = workspace.runs()
    parents = [r for r in runs if r.data.tags.get("showwork.role") == "parent"]
    assert len(parents) == 1, f"{len(parents)} parent runs"
    parent = parents[0]
    meta = workspace.ledger.read_meta()
    assert parent.info.run_id == meta["parent_run_id"] and parent.info.status == "FINISHED"
    assert parent.data.tags.get("showwork.search_id") == meta["search_id"]
    assert {"seed", "family", "space.quality"} <= set(parent.data.params) and parent.data.metrics["num_trials"] == N
    assert parent.data.metrics["trials_finished"] == N
    children = [r for r in runs if "showwork.trial_index" in r.data.tags and r.info.lifecycle_stage == "active"]
    assert sorted(int(r.data.tags["showwork.trial_index"]) for r in children) == list(range(N))
    for run in children:
        record = records[int(run.data.tags["showwork.trial_index"])]
        assert run.data.tags["mlflow.parentRunId"] == parent.info.run_id
        assert run.info.status == "FINISHED" and run.data.tags["showwork.logged"] == "1"
        assert record.mlflow_run_id == run.info.run_id
        assert run.data.metrics["best_val_score"] == record.score
        assert run.data.params["quality"] == str(record.params["quality"])
        assert workspace.history(run.info.run_id, "val_accuracy") == [(h["epoch"], h["val_accuracy"])
                                                                      for h in record.history]
    # One run per trial (issue 15 item 4): runs of attempts the kill interrupted are deleted, not kept beside.
    active = [r for r in runs if r.info.lifecycle_stage == "active"]
    assert len(active) == 1 + N, "a run that is neither the parent nor a trial's child"
    for run in runs:
        if run.info.lifecycle_stage != "active":
            assert run.data.tags.get("showwork.logged") != "1" and run.data.tags["mlflow.parentRunId"] == parent.info.run_id


def resume(workspace: Workspace, *extra: str) -> str:
    done = run_to_the_end(workspace, "--resume", *extra)
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"search kills: {N} finished, 0 failed, 0 timed out of {N}" in done.stdout
    return done.stdout


# ---------------------------------------------------------------- what each moment looks like


def temp_files(folder: Path, stem: str) -> list[Path]:
    return sorted(folder.glob(f".{stem}.*.tmp"))


def parent_created(workspace, reached, driver):
    meta = workspace.ledger.read_meta()
    assert meta["search_id"] and "parent_run_id" not in meta
    (run,) = workspace.runs()
    assert run.data.tags["showwork.search_id"] == meta["search_id"] and not run.data.params


def meta_written(workspace, reached, driver):
    assert temp_files(workspace.ledger.root, "search.json")
    assert "parent_run_id" not in workspace.ledger.read_meta()  # the rename that would add it never happens


def trial_running(workspace, reached, driver):
    assert "default_worker" in reached["argv"][0] and reached["pid"] != driver


def worker_writing(workspace, reached, driver):
    (temp,) = temp_files(workspace.ledger.trials_dir, "[0-9]" * 6 + ".json")
    index = int(temp.name[1:7])
    assert workspace.ledger.read(index) is None and "default_worker" in reached["argv"][0]


def child_half_logged(workspace, reached, driver):
    half = [r for r in workspace.runs() if "showwork.trial_index" in r.data.tags and r.data.params
            and "showwork.logged" not in r.data.tags]
    assert half and "best_val_score" not in half[0].data.metrics


def driver_writing(workspace, reached, driver):
    (temp,) = temp_files(workspace.ledger.trials_dir, "[0-9]" * 6 + ".json")
    record = workspace.ledger.read(int(temp.name[1:7]))
    assert record is not None and record.mlflow_run_id is None and json.loads(temp.read_text())["mlflow_run_id"]


def between_trials(workspace, reached, driver):
    assert len(workspace.ledger.records()) == 2  # one trial at a time: the second has ended, the third not begun


def summary_logged(workspace, reached, driver):
    assert len(workspace.ledger.records()) == N
    (parent,) = [r for r in workspace.runs() if r.data.tags.get("showwork.role") == "parent"]
    assert parent.info.status == "RUNNING" and parent.data.metrics["trials_finished"] == N


CASES = {
    "parent-created@1": parent_created,  # MLflow has the parent, the ledger not its id
    "meta-write@2": meta_written,  # the parent's id half-way into search.json
    "trial-reported@3": trial_running,  # a trial in the middle of its epochs
    "worker-record-write@2": worker_writing,  # a worker half-way through writing its record
    "child-params-logged@2": child_half_logged,  # a child run with params only
    "driver-record-write@1": driver_writing,  # the driver half-way through adding a run id to a record
    "trial-ended@2": between_trials,  # between two trials
    "summary-logged@1": summary_logged,  # every trial done, the parent not yet ended
}
# The two kills of the test below: a trial just ended, its child run half-logged (its params and first
# epochs, written as it ran), then the replay of the resume.
REPLAY_CASES = ("trial-ended@1", "trial-logged@1")


@pytest.mark.parametrize("point", list(CASES))
def test_resume_after_the_driver_is_killed_at(point, reference, tmp_path):
    workspace = make_workspace(tmp_path)
    extra = ("--num-cpus", "1") if point.startswith("trial-ended") else ()  # one 1-CPU trial at a time
    kill_at(workspace, point, *extra, check=CASES[point])
    resume(workspace)
    assert_same_search(workspace, reference)
    if point.startswith(("trial-reported", "worker-record-write")):  # the interrupted trial ran again
        assert max(r.attempts for r in workspace.ledger.records()) == 2


def test_resume_after_kills_in_the_run_and_in_the_replay_of_the_resume(reference, tmp_path):
    """Killed with a child half-logged, then killed again while the resume replays it into MLflow."""
    workspace = make_workspace(tmp_path)
    in_run, in_replay = REPLAY_CASES
    kill_at(workspace, in_run, check=child_half_logged)
    unlogged = [r.index for r in workspace.ledger.records() if r.mlflow_run_id is None]
    assert unlogged
    kill_at(workspace, in_replay, "--resume")
    resume(workspace)
    assert_same_search(workspace, reference)

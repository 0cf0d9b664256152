"""`showwork search` end to end: Ray Tune trials, the ledger, MLflow (SQLite), resume, kills, failures.

Each search pays about 10 s of Ray start-up, so the searches run once in module-scoped fixtures
and several tests inspect each result. Everything lives in temporary directories: the ledger
(``--storage``), the MLflow database (``sqlite:///{tmp}/mlflow.db``) and the current directory.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from showwork.cli import main
from showwork.sampling import trial_config, trial_seed
from showwork.space import SearchSpec, load_search_spec
from showwork.statistics import tuning_curve
from showwork.store import Ledger

from helpers import REPO_ROOT, chromium, page_text, runs_of
from processes import kill_session
from servers import free_port
from ui_runs import UiRun, command_line, environment_without_venv_bin

pytestmark = pytest.mark.integration

DEMO = REPO_ROOT / "search_spaces" / "demo_sst2.yaml"


# ---------------------------------------------------------------- helpers


def cli(*argv) -> tuple[int, str, str]:
    """Run ``showwork ARGV`` in this process; return (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exit:  # argparse: --help, bad option values
            code = exit.code
    return code, out.getvalue(), err.getvalue()


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def mlflow_client(uri: str):
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=uri)


def trial_files(storage: Path, name: str) -> list[Path]:
    return sorted((storage / name / "trials").glob("[0-9]*.json"))


@dataclass
class Search:
    """A search that a fixture ran: where it lives, its spec, and what the command said."""

    root: Path
    storage: Path
    uri: str
    spec: SearchSpec
    code: int
    out: str
    err: str

    @property
    def ledger(self) -> Ledger:
        return Ledger(self.storage, self.spec.name)

    def search(self, space: Path, *extra) -> tuple[int, str, str]:
        return cli("search", space, "--no-progress", "--storage", self.storage, "--tracking-uri", self.uri, *extra)


# the module fixtures `environment` and `template_db` are in conftest.py


@pytest.fixture
def workspace(environment, template_db, tmp_path) -> tuple[Path, str]:
    """A fresh ledger directory and MLflow database for one test."""
    shutil.copy(template_db, tmp_path / "mlflow.db")
    return tmp_path / "runs", f"sqlite:///{tmp_path / 'mlflow.db'}"


def run_search_once(factory, template_db, label: str, space: Path, overrides: dict) -> Search:
    """Run ``showwork search SPACE`` with ``overrides`` as flags, in its own directory and database."""
    root = factory.mktemp(label)
    shutil.copy(template_db, root / "mlflow.db")
    spec = load_search_spec(space, overrides)
    search = Search(root, root / "runs", f"sqlite:///{root / 'mlflow.db'}", spec, 0, "", "")
    flags = [f"--{key.replace('_', '-')}" for key in overrides]
    argv = [item for flag, value in zip(flags, overrides.values()) for item in (flag, value)]
    search.code, search.out, search.err = search.search(space, *argv)
    return search


# ---------------------------------------------------------------- 1. the main search


@pytest.fixture(scope="module")
def demo(environment, template_db, tmp_path_factory) -> Search:
    """The demo SST-2 space, 6 trials, 2 at a time, through Ray and MLflow-SQLite."""
    return run_search_once(tmp_path_factory, template_db, "demo", DEMO, {"num_trials": 6, "max_concurrent": 2})


@pytest.mark.slow
def test_search_exits_0_and_prints_the_summary(demo):
    assert demo.code == 0, demo.err
    assert f"search {demo.spec.name}: 6 finished, 0 failed, 0 timed out of 6" in demo.out
    assert "showwork results" in demo.out and "showwork report" in demo.out
    # issue 23 item 16: the runs table, not the experiment's page (MLflow 3's GenAI Overview)
    experiment = mlflow_client(demo.uri).get_experiment_by_name(demo.spec.name).experiment_id
    parent = demo.ledger.read_meta()["parent_run_id"]  # its trials, not an abandoned attempt's (issue 35 item 3)
    assert (f"\n  showwork ui --tracking-uri {demo.uri}   (then its runs table: http://127.0.0.1:5000/#/experiments/"
            f"{experiment}/runs?orderByKey=metrics.%60best_val_score%60&orderByAsc=false"
            f"&searchFilter=tags.%60mlflow.parentRunId%60%20%3D%20%27{parent}%27)\n") in demo.out


def majority_share(labels) -> float:
    """The accuracy of always predicting the larger class."""
    positive = float(labels.mean())
    return max(positive, 1.0 - positive)


@pytest.mark.slow
def test_ledger_has_one_finished_record_per_trial(demo):
    from showwork_models.data import load_dataset

    dataset = load_dataset("sst2", demo.spec.data)
    dev_labels, test_labels = dataset.dev.labels, dataset.test.labels
    records = demo.ledger.records()
    assert [r.index for r in records] == list(range(6))
    for i, record in enumerate(records):
        assert record.status == "finished", record.error
        # Every trial learns: better than always predicting the larger class (0.55 of dev, 0.51 of test).
        assert majority_share(dev_labels) < record.score < 1.0
        assert majority_share(test_labels) < record.test_score < 1.0
        assert record.runtime_s > 0
        assert record.hostname and record.node_id
        assert record.params == trial_config(demo.spec.space, demo.spec.seed, i)
        assert record.seed == trial_seed(demo.spec.seed, i)
        assert [row["epoch"] for row in record.history] == list(range(len(record.history)))
        assert record.attempts == 1
        # The sizes the trial used: bow subsamples SST-2's training split to 8,000 sentences by default.
        used = load_dataset("sst2", {"train_size": 8000, **demo.spec.data})
        assert record.metrics["split_sizes"] == {"train": len(used.train), "dev": len(used.dev), "test": len(used.test)}


@pytest.mark.slow
def test_mlflow_parent_run(demo):
    client = mlflow_client(demo.uri)
    parents = [r for r in runs_of(demo.uri, demo.spec.name) if "mlflow.parentRunId" not in r.data.tags]
    assert len(parents) == 1
    parent = parents[0]
    assert parent.info.status == "FINISHED"
    assert parent.info.run_id == demo.ledger.read_meta()["parent_run_id"]
    assert parent.data.params["seed"] == str(demo.spec.seed) and parent.data.metrics["num_trials"] == 6
    # the kind MLflow 3 shows the experiment as (issue 15 item 6); its page still opens on the GenAI Overview (issue 23 item 16)
    assert client.get_experiment(parent.info.experiment_id).tags["mlflow.experimentKind"] == "custom_model_development"
    artifacts = {f.path for f in client.list_artifacts(parent.info.run_id)}
    assert {"search.yaml", "search.resolved.yaml", "space.md", "environment.json"} <= artifacts
    assert parent.data.metrics["trials_finished"] == 6
    # The resolved file carries the command line's overrides (6 trials, 2 at a time), the raw file does not.
    resolved = Path(client.download_artifacts(parent.info.run_id, "search.resolved.yaml", str(demo.root)))
    assert load_search_spec(resolved) == demo.spec


@pytest.mark.slow
def test_report_of_the_search_fills_the_checklist_and_lands_on_the_parent_run(demo):
    # The main path: `showwork search`, then `showwork report NAME`.
    assert "showwork report demo-sst2-bow --out demo-sst2-bow-report" in demo.out
    out_dir = demo.root / "report"
    code, out, err = cli("report", demo.spec.name, "--storage", demo.storage, "--out", out_dir, "--formats", "png")
    assert code == 0, err
    parent = demo.ledger.read_meta()["parent_run_id"]
    assert f"logged to MLflow parent run {parent}" in out
    client = mlflow_client(demo.uri)
    logged = {f.path for f in client.list_artifacts(parent, "report")}
    assert {"report/report.html", "report/report.md", "report/report.json", "report/figures", "report/latex"} <= logged
    data = json.loads((out_dir / "report.json").read_text())
    (family,) = data["families"]
    assert family["summary"]["n_trials"] == 6
    # issue 34 item 5: the search's ledger records its experiment, so the report links the runs table of its trials
    experiment = mlflow_client(demo.uri).get_experiment_by_name(demo.spec.name).experiment_id
    assert family["mlflow"]["parent_run_id"] == parent and family["mlflow"]["experiment_id"] == experiment
    assert family["mlflow"]["ui_runs_url"].startswith(f"http://127.0.0.1:5000/#/experiments/{experiment}/runs?")
    assert family["curve"]["a"] == 0.0 and family["curve"]["b"] == 1.0  # metric.bounds of the YAML
    items = {(item["checklist"][:5], item["number"]): item for item in data["checklist"]}
    assert len(items) == 19
    # What a showwork search records, the checklist states: split sizes, hardware, seed, packages.
    recorded = {key for key, item in items.items() if item["recorded"]}
    assert ("Dodge", "3") in recorded and ("Dodge", "1") in recorded and ("Dodge", "9") in recorded
    text = json.dumps(items[("Dodge", "3")]["answers"])
    sizes = demo.ledger.records()[0].metrics["split_sizes"]
    assert all(str(v) in text for v in sizes.values())


@pytest.mark.slow
def test_mlflow_has_one_finished_child_per_trial(demo):
    client = mlflow_client(demo.uri)
    runs = runs_of(demo.uri, demo.spec.name)
    parent = demo.ledger.read_meta()["parent_run_id"]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent]
    assert len(children) == 6 and len(runs) == 7
    by_index = {int(r.data.tags["showwork.trial_index"]): r for r in children}
    assert sorted(by_index) == list(range(6))
    for record in demo.ledger.records():
        run = by_index[record.index]
        assert run.info.status == "FINISHED"
        assert run.data.tags["showwork.status"] == "finished"
        assert record.mlflow_run_id == run.info.run_id
        assert {name: run.data.params[name] for name in record.params} == {k: str(v) for k, v in record.params.items()}
        assert run.data.params["seed"] == str(record.seed) and run.data.params["trial_index"] == str(record.index)
        history = sorted(client.get_metric_history(run.info.run_id, "val_accuracy"), key=lambda m: m.step)
        assert [(m.step, m.value) for m in history] == [(row["epoch"], row["val_accuracy"]) for row in record.history]
        assert run.data.metrics["best_val_score"] == record.score
        for split, size in record.metrics["split_sizes"].items():  # a nested mapping, flattened with dots
            assert run.data.metrics[f"split_sizes.{split}"] == size


@pytest.mark.slow
def test_mlflow_child_runs_last_as_long_as_their_trials(demo):
    """Issue 15 item 3: a child run's start and end were the driver's times (durations negative or wrong)."""
    from datetime import datetime

    runs = {r.info.run_id: r for r in runs_of(demo.uri, demo.spec.name)}
    for record in demo.ledger.records():
        run = runs[record.mlflow_run_id]
        assert run.info.start_time == round(datetime.fromisoformat(record.started_at).timestamp() * 1000)
        assert abs((run.info.end_time - run.info.start_time) / 1000 - record.runtime_s) <= 0.050


IMPORT_SLEEP_S = 1.5
SLOW_IMPORT_TRAINABLE = f"""
import time

time.sleep({IMPORT_SLEEP_S})  # a family whose import is slow (torch, a tokenizer): once per worker process


def train(config, *, seed, device, reporter, data):
    time.sleep(0.05)
    return {{"val_accuracy": config["x"]}}
"""


@pytest.mark.slow
def test_a_workers_import_time_is_setup_not_runtime(environment, template_db, tmp_path_factory):
    """Issue 15 item 3: the first trial of a worker counted the family's import in its runtime_s,
    which inflated the report's mean runtime; it is the record's setup_s (and an MLflow metric)."""
    from showwork.report.inputs import from_ledger
    from showwork.tracking.mlflow_format import trial_fields

    folder = tmp_path_factory.mktemp("slow-import-space")
    write(folder / "slow_import.py", SLOW_IMPORT_TRAINABLE)
    space = write(folder / "slow-import.yaml", """
        name: slow-import
        family: slow_import.py:train
        metric: {name: val_accuracy, mode: max}
        num_trials: 3
        seed: 3
        max_concurrent: 1
        space:
          x: {distribution: uniform, low: 0.0, high: 1.0}
    """)
    search = run_search_once(tmp_path_factory, template_db, "slow-import", space, {})
    assert search.code == 0, search.err
    records = search.ledger.records()
    assert [r.status for r in records] == ["finished"] * 3
    assert all(r.runtime_s < IMPORT_SLEEP_S for r in records), [r.runtime_s for r in records]
    assert all(r.setup_s is not None and r.setup_s >= 0 for r in records)
    assert max(r.setup_s for r in records) > IMPORT_SLEEP_S  # the worker's first trial imported the module
    assert from_ledger(search.storage, "slow-import").mean_runtime_s == pytest.approx(sum(r.runtime_s for r in records) / 3)
    assert from_ledger(search.storage, "slow-import").mean_runtime_s < IMPORT_SLEEP_S / 3
    runs = {r.info.run_id: r for r in runs_of(search.uri, "slow-import")}
    for record in records:
        fields = trial_fields(runs[record.mlflow_run_id])
        assert fields.setup_s == pytest.approx(record.setup_s)
        assert abs((fields.ended_ms - fields.started_ms) / 1000 - record.runtime_s) <= 0.050


@pytest.mark.slow
def test_results_csv_has_one_row_per_trial_and_every_hyperparameter(demo):
    code, out, err = cli("results", demo.spec.name, "--storage", demo.storage, "--csv")
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert len(rows) == 6
    columns = set(rows[0])
    assert {"trial", "status", "score", "runtime_s", "node_id", "hostname"} <= columns
    assert {f"param.{name}" for name in demo.spec.space.names} <= columns
    for i, row in enumerate(rows):
        record = demo.ledger.read(i)
        assert row["trial"] == str(i) and row["status"] == "finished"
        assert float(row["score"]) == record.score and row["hostname"] == record.hostname
        assert float(row["param.lr"]) == record.params["lr"]


# ---------------------------------------------------------------- 2. concurrency, 3. resume


@pytest.fixture(scope="module")
def sequential(environment, template_db, tmp_path_factory) -> Search:
    """The demo space again under another name, 3 trials, one at a time."""
    return run_search_once(
        tmp_path_factory, template_db, "sequential", DEMO,
        {"name": "demo-sequential", "num_trials": 3, "max_concurrent": 1},
    )


@pytest.mark.slow
def test_configurations_do_not_depend_on_concurrency(demo, sequential):
    assert sequential.code == 0, sequential.err
    one_at_a_time = {r.index: (r.params, r.seed) for r in sequential.ledger.records() if r.index < 3}
    two_at_a_time = {r.index: (r.params, r.seed) for r in demo.ledger.records() if r.index < 3}
    assert sorted(one_at_a_time) == [0, 1, 2]
    assert one_at_a_time == two_at_a_time


@pytest.mark.slow
def test_existing_search_without_resume_is_refused(sequential):
    before = [r.to_dict() for r in sequential.ledger.records()]
    runs = len(runs_of(sequential.uri, sequential.spec.name))
    code, out, err = sequential.search(DEMO, "--name", sequential.spec.name, "--num-trials", 4)
    assert code == 2
    assert "already exists" in err and "--resume" in err
    assert [r.to_dict() for r in sequential.ledger.records()] == before
    assert len(runs_of(sequential.uri, sequential.spec.name)) == runs


@pytest.mark.slow
def test_resume_with_another_seed_is_refused(sequential):
    before = [r.to_dict() for r in sequential.ledger.records()]
    code, out, err = sequential.search(DEMO, "--name", sequential.spec.name, "--num-trials", 3, "--seed", 1, "--resume")
    assert code == 2
    assert "mix configurations" in err
    assert [r.to_dict() for r in sequential.ledger.records()] == before


@pytest.mark.slow
def test_resume_with_more_trials_runs_only_the_new_indices(demo, sequential):
    name = sequential.spec.name
    before = {r.index: r.to_dict() for r in sequential.ledger.records()}
    assert sorted(before) == [0, 1, 2]
    code, out, err = sequential.search(DEMO, "--name", name, "--num-trials", 4, "--max-concurrent", 1, "--resume")
    assert code == 0, err
    assert f"search {name}: 4 finished, 0 failed, 0 timed out of 4" in out
    records = {r.index: r for r in sequential.ledger.records()}
    assert sorted(records) == [0, 1, 2, 3]
    for index, old in before.items():  # untouched: same start time, same everything
        assert records[index].to_dict() == old
    attempts = sorted(p.name for p in (sequential.ledger.root / "attempts").iterdir())
    assert attempts == ["000000.1", "000001.1", "000002.1", "000003.1"]  # no trial ran twice
    assert records[3].params == trial_config(sequential.spec.space, sequential.spec.seed, 3)
    assert records[3].params == demo.ledger.read(3).params
    parent = sequential.ledger.read_meta()["parent_run_id"]
    runs = runs_of(sequential.uri, name)
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent]
    assert len(runs) == 5 and len(children) == 4  # the same parent, one more child
    assert all(r.info.status == "FINISHED" for r in runs)
    # MLflow params cannot change: the number of trials is a metric whose history shows the extension
    history = mlflow_client(sequential.uri).get_metric_history(parent, "num_trials")
    assert [m.value for m in history] == [3, 4]


@pytest.mark.slow
def test_a_resume_with_nothing_to_run_keeps_the_recorded_environment(sequential):
    # The checklist reports the environment the trials ran in. A resume that ran no trial (to report
    # again, from a newer checkout) replaced it with its own commit and dirty state.
    name = sequential.spec.name
    recorded = {**sequential.ledger.read_meta()["environment"], "git_commit": "0123abcd", "git_dirty": True}
    sequential.ledger.update_meta(environment=recorded)  # what the checkout the trials ran in recorded
    sequential.ledger.update_meta(experiment_id=None)  # a search begun before the ledger recorded it (issue 34 item 5)
    planned = len(sequential.ledger.records())
    code, out, err = sequential.search(DEMO, "--name", name, "--num-trials", planned, "--resume")
    assert code == 0, err
    assert sequential.ledger.read_meta()["environment"] == recorded
    experiment = mlflow_client(sequential.uri).get_experiment_by_name(name).experiment_id
    assert sequential.ledger.read_meta()["experiment_id"] == experiment  # recorded on resume


# ---------------------------------------------------------------- 4. killing the driver

SLOW_TRAINABLE = """
    import time


    def train(config, *, seed, device, reporter, data):
        for epoch in range(3):
            time.sleep(0.5)
            reporter(epoch=epoch, val_accuracy=config["quality"] * (epoch + 1) / 3)
        return {"val_accuracy": config["quality"]}
"""

SLOW_SPACE = """
    name: killed
    family: slow.py:train
    metric: {name: val_accuracy, mode: max}
    num_trials: 8
    seed: 11
    max_concurrent: 2
    max_retries: 1
    space:
      quality: {distribution: uniform, low: 0.5, high: 1.0}
      width: {distribution: int_uniform, low: 8, high: 64}
"""


def interrupted_trial(storage: Path, uri: str, name: str) -> int | None:
    """A trial whose MLflow child is RUNNING with part of its history, once 2 trials are recorded."""
    done = {int(path.stem) for path in trial_files(storage, name)}
    if len(done) < 2:
        return None
    try:
        runs = runs_of(uri, name)
    except Exception:  # the driver is writing to the database; look again
        return None
    for run in runs:
        index = run.data.tags.get("showwork.trial_index")
        if index is not None and int(index) not in done and run.info.status == "RUNNING" \
                and "val_accuracy" in run.data.metrics:
            return int(index)
    return None


@pytest.mark.slow
def test_resume_after_the_driver_is_killed(workspace, tmp_path):
    storage, uri = workspace
    write(tmp_path / "slow.py", SLOW_TRAINABLE)
    space = write(tmp_path / "killed.yaml", SLOW_SPACE)
    spec = load_search_spec(space)
    command = [sys.executable, "-m", "showwork", "search", str(space), "--num-trials", "8", "--max-concurrent", "2",
               "--no-progress", "--storage", str(storage), "--tracking-uri", uri]
    log = tmp_path / "driver.log"
    # Its own session, so that the Ray processes the killed driver leaves behind can be ended afterwards.
    driver = subprocess.Popen(command, cwd=tmp_path, stdout=log.open("w"), stderr=subprocess.STDOUT,
                              start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while (interrupted := interrupted_trial(storage, uri, spec.name)) is None:
            assert driver.poll() is None, f"the search ended before it was killed: {log.read_text()[-2000:]}"
            assert time.monotonic() < deadline, "no two trial records and a running trial within 120 s"
            time.sleep(0.1)
        driver.send_signal(signal.SIGKILL)
        assert driver.wait(timeout=30) == -signal.SIGKILL

        code, out, err = cli("search", space, "--resume", "--no-progress", "--storage", storage, "--tracking-uri", uri)
    finally:
        kill_session(driver)  # leftovers of the killed driver only
    assert code == 0, err
    assert f"search {spec.name}: 8 finished, 0 failed, 0 timed out of 8" in out
    records = Ledger(storage, spec.name).records()
    assert [r.index for r in records] == list(range(8))
    for record in records:
        assert record.status == "finished", record.error
        assert record.params == trial_config(spec.space, spec.seed, record.index)
        assert record.seed == trial_seed(spec.seed, record.index)
        assert record.score == record.params["quality"]
    runs = runs_of(uri, spec.name)
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    indexed = [r for r in runs if "showwork.trial_index" in r.data.tags and r.info.lifecycle_stage == "active"]
    assert sorted(int(r.data.tags["showwork.trial_index"]) for r in indexed) == list(range(8))
    for run in indexed:
        record = records[int(run.data.tags["showwork.trial_index"])]
        assert run.info.status == "FINISHED" and run.data.tags["mlflow.parentRunId"] == parents[0].info.run_id
        assert record.mlflow_run_id == run.info.run_id
    # One run per trial (issue 15 item 4): the killed driver's run of the interrupted trial is deleted
    # (MLflow's soft delete) when the trial runs again, not kept beside the new one.
    active = [r for r in runs if r.info.lifecycle_stage == "active"]
    assert len(active) == 1 + 8
    deleted = [r for r in runs if r.info.lifecycle_stage == "deleted"]
    assert all(r.info.status != "FINISHED" and r.data.tags.get("showwork.logged") != "1" for r in deleted)
    if records[interrupted].attempts == 2:  # it ran again (no leftover worker of the killed driver finished it)
        assert [int(r.data.tags["showwork.trial_index"]) for r in deleted].count(interrupted) == 1


# ---------------------------------------------------------------- 5. failing trials

FAILING_TRAINABLE = """
    import json
    import os
    import time
    from pathlib import Path


    def train(config, *, seed, device, reporter, data):
        behaviour = json.loads(Path(data["plan"]).read_text())[str(seed)]
        reporter(epoch=0, val_accuracy=0.6)
        if behaviour == "raise":
            raise ValueError("this configuration diverges")
        if behaviour == "nan":
            return {"val_accuracy": float("nan")}
        if behaviour == "inf":
            return {"val_accuracy": float("inf")}
        if behaviour == "oom":
            raise MemoryError("simulated out of memory")
        if behaviour == "hang":
            time.sleep(60)
        if behaviour == "die":
            os._exit(1)
        return {"val_accuracy": 0.5 + config["x"] / 4}
"""

BEHAVIOURS = ["ok", "raise", "nan", "oom", "hang", "die", "inf", "ok"]


@pytest.fixture(scope="module")
def failing(environment, template_db, tmp_path_factory) -> Search:
    """Eight trials, trial i does BEHAVIOURS[i] (decided by its training seed): two finish, six fail."""
    folder = tmp_path_factory.mktemp("failing-space")
    write(folder / "failing.py", FAILING_TRAINABLE)
    seeds = [trial_seed(5, i) for i in range(len(BEHAVIOURS))]
    assert len(set(seeds)) == len(seeds)
    plan = folder / "plan.json"
    plan.write_text(json.dumps({str(seed): behaviour for seed, behaviour in zip(seeds, BEHAVIOURS)}))
    space = write(folder / "failing.yaml", f"""
        name: failing
        family: failing.py:train
        data: {{plan: {json.dumps(str(plan))}}}
        metric: {{name: val_accuracy, mode: max}}
        num_trials: 8
        seed: 5
        max_concurrent: 2
        timeout_s: 3
        max_retries: 1
        failure_policy: worst
        space:
          x: {{distribution: uniform, low: 0.0, high: 1.0}}
    """)
    return run_search_once(tmp_path_factory, template_db, "failing", space, {})


@pytest.mark.slow
def test_failures_are_recorded_and_the_search_goes_on(failing):
    assert failing.code == 0, failing.err
    assert "search failing: 2 finished, 5 failed, 1 timed out of 8" in failing.out
    records = failing.ledger.records()
    assert [r.index for r in records] == list(range(8))
    for record in records:
        assert record.seed == trial_seed(5, record.index)
        assert record.params == trial_config(failing.spec.space, 5, record.index)
    ok, raised, nan, oom, hang, died, inf, ok2 = records
    for record in (ok, ok2):
        assert record.status == "finished" and record.score == 0.5 + record.params["x"] / 4 and record.error is None
    assert inf.status == "failed" and inf.score == math.inf and "non-finite score val_accuracy = inf" in inf.error
    assert raised.status == "failed" and raised.error.startswith("ValueError: this configuration diverges")
    assert nan.status == "failed" and math.isnan(nan.score) and "non-finite" in nan.error
    assert oom.status == "failed" and oom.error.startswith("MemoryError: simulated out of memory")
    assert hang.status == "timeout" and "timed out after 3 s" in hang.error and hang.score is None
    # timeout_s bounds the trainable's call (issue 23 item 5: not the worker's set-up); runtime_s is that call
    assert 3 <= hang.runtime_s < 30
    assert died.status == "failed" and died.error.startswith("WorkerDied") and died.score is None
    assert died.attempts == 2  # max_retries 1: the first run and one retry, both died
    for record in (raised, oom):
        assert record.history == [{"epoch": 0, "val_accuracy": 0.6}] and record.attempts == 1


@pytest.mark.slow
def test_failures_in_mlflow(failing):
    parent = failing.ledger.read_meta()["parent_run_id"]
    runs = [r for r in runs_of(failing.uri, "failing") if r.data.tags.get("mlflow.parentRunId") == parent]
    children = [r for r in runs if r.info.lifecycle_stage == "active"]
    assert len(children) == 8
    # a worker Ray restarted: its first attempt's run is deleted when the retry reports (one run per trial)
    for run in runs:
        if run.info.lifecycle_stage != "active":
            assert failing.ledger.read(int(run.data.tags["showwork.trial_index"])).attempts >= 2
            assert run.data.tags.get("showwork.logged") != "1"
    for run in children:
        record = failing.ledger.read(int(run.data.tags["showwork.trial_index"]))
        assert run.data.tags["showwork.status"] == record.status
        assert run.info.status == ("FINISHED" if record.status == "finished" else "FAILED")
        assert record.mlflow_run_id == run.info.run_id
        assert (record.error is None) == ("showwork.error" not in run.data.tags)
    assert mlflow_client(failing.uri).get_run(parent).info.status == "FINISHED"


@pytest.mark.slow
def test_failures_reach_the_tuning_curve(failing):
    code, out, err = cli("results", "failing", "--storage", failing.storage, "--csv")
    assert code == 0, err
    table = failing.root / "failing.csv"
    table.write_text(out)
    assert [row["status"] for row in csv.DictReader(io.StringIO(out))] == [
        "finished", "failed", "failed", "failed", "timeout", "failed", "failed", "finished"]
    code, out, err = cli("curve", table, "--score", "score", "--failed", "worst")
    assert code == 0, err
    assert "6 of 8 trials failed" in out
    code, out, err = cli("curve", table, "--score", "score")  # the default policy refuses failures
    assert code == 2 and "fail" in err


@pytest.mark.slow
def test_the_report_counts_failures_and_applies_the_policy(failing, tmp_path):
    """`showwork report` of the search: every failure counted, and the search's policy (worst) applied."""
    code, out, err = cli("report", "failing", "--storage", failing.storage, "--out", tmp_path / "r",
                         "--formats", "png", "--no-mlflow")
    assert code == 0, err
    data = json.loads((tmp_path / "r" / "report.json").read_text())
    (family,) = data["families"]
    assert (family["summary"]["n_trials"], family["summary"]["n_failed"]) == (8, 6)
    curve = family["curve"]
    assert (curve["n"], curve["n_failed"], curve["failure_policy"]) == (8, 6, "worst")
    scores = [r.score if r.status == "finished" else math.nan for r in failing.ledger.records()]
    expected = tuning_curve(scores, curve["k"], failure_policy="worst")
    assert curve["v"] == pytest.approx(expected.v.tolist()) and curve["u"] == pytest.approx(expected.u.tolist())
    worst = min(s for s in scores if not math.isnan(s))  # no metric bounds: the worst finished score
    # every failure counted, by its kind (issue 28: the report names the kinds, as `search` does)
    kinds = ("(1 × ValueError, 1 × non-finite score val_accuracy = nan, 1 × MemoryError, 1 × timeout, 1 × WorkerDied,"
             " 1 × non-finite score val_accuracy = inf)")
    assert f"6 of 8 trials failed {kinds}; counted as the worst value {worst!r}." in out
    assert f"6 of 8 trials failed {kinds}; counted as the worst value {worst!r} (failure policy worst)".replace(
        "_", "\\_") in (tmp_path / "r" / "report.md").read_text()  # Markdown escapes the underscores
    assert "| 8 trials run, 6 failed; failure policy: worst (the search's) |" in (tmp_path / "r" / "report.md").read_text()
    code, out, err = cli("report", "failing", "--storage", failing.storage, "--out", tmp_path / "e",
                         "--formats", "png", "--no-mlflow", "--failed", "error")
    assert code == 2 and "6 of 8" in err


NEEDS_A_FILE = """
    from pathlib import Path


    def train(config, *, seed, device, reporter, data):
        if seed in data["needs_marker"] and not Path(data["marker"]).exists():
            raise FileNotFoundError(f"no data at {data['marker']}")
        return {"val_accuracy": 0.5 + config["x"] / 4}
"""


@pytest.mark.slow
def test_resume_retry_failed_runs_the_failed_trials_again_and_keeps_every_attempt(workspace, tmp_path):
    """Issue 35 item 1: trials failed for want of a file; the file is made; ``resume --retry-failed`` runs them again
    with their configurations and seeds. The ledger keeps both attempts (the last counts), MLflow shows the failed
    run beside the retry's, and the summary and the report say how many trials were retried."""
    storage, uri = workspace
    marker = tmp_path / "data.ready"
    needs = [trial_seed(9, 1), trial_seed(9, 3)]
    write(tmp_path / "needs.py", NEEDS_A_FILE)
    space = write(tmp_path / "needs.yaml", f"""
        name: needs
        family: needs.py:train
        data: {{marker: {json.dumps(str(marker))}, needs_marker: {json.dumps(needs)}}}
        metric: {{name: val_accuracy, mode: max}}
        num_trials: 4
        seed: 9
        max_concurrent: 2
        failure_policy: worst
        space:
          x: {{distribution: uniform, low: 0.0, high: 1.0}}
    """)
    code, out, err = cli("search", space, "--no-progress", "--storage", storage, "--tracking-uri", uri, "--num-cpus", 2)
    assert code == 0, err
    assert "2 finished, 2 failed, 0 timed out of 4" in out
    retry = f"showwork resume needs --storage {storage} --retry-failed"
    assert retry in out  # the failures end with the command that retries them
    ledger = Ledger(storage, "needs")
    failed = {r.index: r for r in ledger.records() if r.status == "failed"}
    assert sorted(failed) == [1, 3]

    code, out, err = cli("resume", "needs", "--no-progress", "--storage", storage, "--tracking-uri", uri)
    assert code == 0, err  # without the flag, as before: nothing runs, the failures are kept and the flag is named
    assert "2 finished, 2 failed, 0 timed out of 4" in out and retry in out

    marker.write_text("ready")
    code, out, err = cli("resume", "needs", "--retry-failed", "--no-progress", "--storage", storage, "--tracking-uri", uri,
                         "--num-cpus", 2)
    assert code == 0, err
    assert "4 finished, 0 failed, 0 timed out of 4 (2 retried: their last attempt counts)" in out
    assert "--retry-failed" not in out

    records = ledger.records()
    assert [(r.index, r.status) for r in records] == [(i, "finished") for i in range(4)]  # one counted record per index
    assert {index: [r.to_dict() for r in kept] for index, kept in ledger.superseded().items()} == {
        index: [record.to_dict()] for index, record in failed.items()}  # the failed attempts, unchanged
    for index in (1, 3):
        assert (records[index].params, records[index].seed) == (failed[index].params, failed[index].seed)
        assert records[index].attempts == 2 and ledger.position(index) == 2

    parent = ledger.read_meta()["parent_run_id"]
    runs = [r for r in runs_of(uri, "needs")
            if r.data.tags.get("mlflow.parentRunId") == parent and r.info.lifecycle_stage == "active"]
    superseded = {r.info.run_id: r for r in runs if r.data.tags.get("showwork.superseded") == "1"}
    assert set(superseded) == {failed[1].mlflow_run_id, failed[3].mlflow_run_id}  # the failed runs stay
    assert all(r.info.status == "FAILED" and r.data.tags["showwork.attempt"] == "1" for r in superseded.values())
    counted = {r.info.run_id: r for r in runs if r.info.run_id not in superseded}
    assert set(counted) == {r.mlflow_run_id for r in records}
    assert {counted[records[i].mlflow_run_id].data.tags.get("showwork.attempt") for i in (1, 3)} == {"2"}

    code, out, err = cli("results", "needs", "--storage", storage, "--csv")
    assert code == 0 and [row["status"] for row in csv.DictReader(io.StringIO(out))] == ["finished"] * 4
    code, out, err = cli("report", "needs", "--storage", storage, "--out", tmp_path / "r", "--formats", "png",
                         "--no-mlflow")
    assert code == 0, err
    assert "| 4 trials run, 0 failed, 2 retried (each counted by its last attempt); failure policy" in (
        tmp_path / "r" / "report.md").read_text()
    summary = json.loads((tmp_path / "r" / "report.json").read_text())["families"][0]["summary"]
    assert (summary["n_trials"], summary["n_failed"], summary["n_retried"]) == (4, 0, 2)

    # Issue 35 item 3: the ledger removed, the search begun again under its name: the earlier attempt's runs are tagged
    from showwork.report.sources_mlflow import from_mlflow

    shutil.rmtree(storage / "needs")
    code, out, err = cli("search", space, "--no-progress", "--storage", storage, "--tracking-uri", uri, "--num-cpus", 2)
    assert code == 0, err
    meta = ledger.read_meta()
    assert meta["parent_run_id"] != parent
    tags = {r.info.run_id: r.data.tags for r in runs_of(uri, "needs") if r.info.lifecycle_stage == "active"}
    earlier = {run_id for run_id, tag in tags.items() if run_id == parent or tag.get("mlflow.parentRunId") == parent}
    assert len(earlier) == 7  # the parent, four counted trials and two superseded ones
    assert {tags[run_id].get("showwork.abandoned") for run_id in earlier} == {meta["search_id"]}
    assert not any(tag.get("showwork.abandoned") for run_id, tag in tags.items() if run_id not in earlier)
    assert from_mlflow(uri, "needs").meta["parent_run_id"] == meta["parent_run_id"]  # the current attempt is read


# ---------------------------------------------------------------- 6. refused before anything starts


@pytest.mark.parametrize("family", ["no_such_family", "missing.py:train"])
def test_a_bad_family_is_refused_before_any_run(workspace, tmp_path, family):
    storage, uri = workspace
    space = write(tmp_path / "bad.yaml", f"""
        name: bad-family
        family: {family}
        metric: {{name: val_accuracy}}
        num_trials: 2
        space:
          x: {{distribution: uniform, low: 0.0, high: 1.0}}
    """)
    code, out, err = cli("search", space, "--no-progress", "--storage", storage, "--tracking-uri", uri)
    assert code == 2
    assert err.startswith("showwork: error: ") and family in err and len(err.strip().splitlines()) == 1
    assert not (storage / "bad-family").exists()
    assert mlflow_client(uri).get_experiment_by_name("bad-family") is None


@pytest.mark.slow  # starts Ray (with the tracking check, as a search does)
@pytest.mark.integration
def test_an_unreachable_tracking_server_is_refused_before_any_trial(environment, tmp_path):
    storage = tmp_path / "runs"
    uri = f"http://127.0.0.1:{free_port()}"
    start = time.perf_counter()
    code, out, err = cli("search", DEMO, "--num-trials", 2, "--no-progress", "--storage", storage, "--tracking-uri", uri)
    assert code == 1  # an outage, not bad input
    assert "cannot reach the MLflow tracking server" in err and uri in err
    assert trial_files(storage, "demo-sst2-bow") == []
    assert not Ledger(storage, "demo-sst2-bow").exists()
    assert not (storage / "demo-sst2-bow").exists()  # not even the driver's lock file
    assert time.perf_counter() - start < 30


# ---------------------------------------------------------------- 7. the MLflow UI


def test_ui_help():
    code, out, err = cli("ui", "--help")
    assert code == 0
    assert "--tracking-uri" in out and "127.0.0.1" in out


@pytest.mark.slow
@pytest.mark.integration
def test_ui_serves_the_tracking_store_and_sigterm_stops_its_server(workspace, tmp_path):
    """Issue 15 item 6: with the venv's bin/ off PATH it serves; SIGTERM to it stops the server and its workers."""
    _, uri = workspace
    port = free_port()
    ui = UiRun(tmp_path, "--tracking-uri", uri, "--port", str(port))
    try:
        ui.wait_serving(port, timeout_s=90)  # about 30 s on a busy 2-core machine
        # No MLflow job runner (a pool of huey consumers): the UI is MLflow's server and one worker.
        commands = [command_line(pid) or "" for pid in ui.below()]
        assert len(commands) <= 2 and not [c for c in commands if "huey" in c or "_job_runner" in c], commands
        os.kill(ui.process.pid, signal.SIGTERM)  # showwork ui alone, as `kill PID` does
        assert ui.process.wait(timeout=30) == 128 + signal.SIGTERM
        assert not ui.left_behind(), [command_line(pid) for pid in ui.left_behind(0)]
        assert f"serving on http://127.0.0.1:{port}" in ui.output()
        assert "Traceback" not in ui.output()
    finally:
        ui.kill_everything()


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.skipif(chromium() is None and not os.environ.get("CI"), reason="no Chromium here (CI installs it)")
def test_the_printed_link_opens_the_runs_table_with_every_trial_in_chromium(workspace, tmp_path):
    """Issue 23 item 16: the experiment's page, where `search` and `ui` sent a fresh browser, is MLflow 3.17's
    GenAI Overview (traces, token usage), whatever the experiment's tags; the links now land on its runs table."""
    import re

    from showwork.tracking.ledger_sync import sync_ledger
    from showwork.tracking.tracker import Tracker

    from helpers import trial_record

    storage, uri = workspace
    tracker = Tracker(uri, "linked")
    ledger = Ledger(storage, "linked")
    here = {"showwork.ledger": str(ledger.root)}
    abandoned = tracker.start_parent("linked", {"seed": 1, "num_trials": 3, "mode": "max"}, here, {}, search_id="a" * 32)
    tracker.log_trial(abandoned, trial_record(0, score=0.99))  # an attempt whose ledger was removed (issue 35 item 3)
    parent = tracker.start_parent("linked", {"seed": 1, "num_trials": 3, "mode": "max"}, here, {}, search_id="b" * 32)
    assert len(tracker.abandon_other_attempts("b" * 32, str(ledger.root))) == 2
    for index in range(3):
        ledger.write(trial_record(index))
    sync_ledger(tracker, ledger, parent)
    tracker.finish_parent(parent, "FINISHED", {"trials_finished": 3})
    port = free_port()
    ui = UiRun(tmp_path, "--tracking-uri", uri, "--port", str(port))
    try:
        ui.wait_serving(port, timeout_s=120)
        found = re.search(r"^  linked: (http://\S+)$", ui.output(), re.M)
        assert found, ui.output()
        link = found.group(1)
        assert link == (f"http://127.0.0.1:{port}/#/experiments/{tracker.experiment_id}/runs"
                        "?orderByKey=metrics.%60best_val_score%60&orderByAsc=false"
                        f"&searchFilter=tags.%60mlflow.parentRunId%60%20%3D%20%27{parent}%27")  # its current trials
        shown = page_text(link)
        assert "Training runs" in shown and "3 matching runs" in shown, shown[:3000]
        assert all(f"trial-000{index}" in shown for index in range(3)), shown[:3000]  # every trial a row
        assert shown.index("trial-0002") < shown.index("trial-0001") < shown.index("trial-0000")  # best first
        overview = page_text(f"http://127.0.0.1:{port}/#/experiments/{tracker.experiment_id}")  # the old link
        assert "Token Usage" in overview and "trial-0000" not in overview, overview[:3000]
    finally:
        ui.kill_everything()


@pytest.mark.slow
@pytest.mark.integration
def test_ui_ctrl_c_stops_the_server_without_a_traceback(workspace, tmp_path):
    _, uri = workspace
    ui = UiRun(tmp_path, "--tracking-uri", uri, "--port", str(free_port()))
    try:
        ui.wait_for_server_process()
        os.kill(ui.process.pid, signal.SIGINT)  # Ctrl-C reaches showwork ui; its server runs in a group of its own
        assert ui.process.wait(timeout=30) == 130
        assert not ui.left_behind(), [command_line(pid) for pid in ui.left_behind(0)]
        assert "Traceback" not in ui.output() and "KeyboardInterrupt" not in ui.output(), ui.output()
    finally:
        ui.kill_everything()


def test_ui_without_mlflow_says_what_to_install(monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mlflow" else find_spec(name, *a))
    code, out, err = cli("ui", "--port", free_port())
    assert code == 2
    assert err == "showwork: error: the MLflow UI needs mlflow: pip install showwork-tuning (mlflow is one of its dependencies)\n"


def test_ui_refuses_a_port_in_use(tmp_path, monkeypatch):
    """Issue 14 item 17: it said it served on a taken port and exited 0."""
    monkeypatch.chdir(tmp_path)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, out, err = cli("ui", "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}", "--port", port)
    assert code == 1
    [line] = err.splitlines()
    assert line.startswith("showwork: error: ") and f"127.0.0.1:{port}" in line and "in use" in line
    assert "http://" not in out  # no claim to serve
    assert not (tmp_path / "mlflow.db").exists()  # no server was started


@pytest.mark.slow
@pytest.mark.integration
def test_ui_reports_a_server_that_exits_early(tmp_path):
    """A server that ends before serving (here: a store it cannot open) is an error, exit 1, with the reason."""
    uri = "bogus://someone:ui-secret-pw@127.0.0.1:1/store"
    result = subprocess.run([sys.executable, "-m", "showwork", "ui", "--tracking-uri", uri, "--port", str(free_port())],
                            cwd=tmp_path, env=environment_without_venv_bin(), capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stderr[-2000:]
    assert result.stderr.splitlines()[-1] == (
        "showwork: error: the MLflow server for bogus://127.0.0.1:1/store exited before serving (status 1; its output is above)")
    assert "unsupported URI" in result.stderr  # MLflow's own reason, relayed
    assert "ui-secret-pw" not in result.stdout + result.stderr  # MLflow quotes the URI: the relay masks it


def test_progress_display_survives_pickling_while_live():
    # Regression: on a terminal, Ray Tune pickled the projection callback, which held the rich
    # Live display (and its lock): `showwork search` crashed with "cannot pickle '_thread.RLock'".
    import pickle

    from rich.console import Console
    from rich.live import Live

    from showwork.run.progress import Progress
    from showwork.space import load_search_spec
    from showwork.store import Ledger

    spec = load_search_spec(DEMO)
    with tempfile.TemporaryDirectory() as folder:
        display = Progress(spec.name, spec.num_trials, spec.metric.name, spec.metric.mode,
                           Ledger(Path(folder), spec.name).records(), enabled=True)
        display._live = Live(console=Console(file=io.StringIO(), force_terminal=True))
        with display._live:
            copy = pickle.loads(pickle.dumps(display))
    assert copy._live is None and copy.total == spec.num_trials


def test_metric_bounds_enter_the_identity_only_when_given(tmp_path):
    # Searches started before metric bounds existed must still resume: a spec without bounds has the
    # identity it always had; bounds, once given, are part of what the search is.
    from showwork.recorded import search_identity
    from showwork.space import load_search_spec

    text = "name: x\nfamily: bow_sst2\nmetric: {name: val_accuracy, mode: max}\nnum_trials: 2\nspace: {lr: 0.1}\n"
    (tmp_path / "a.yaml").write_text(text)
    (tmp_path / "b.yaml").write_text(text.replace("mode: max}", "mode: max, bounds: [0, 1]}"))
    plain, bounded = (search_identity(load_search_spec(tmp_path / f"{n}.yaml")) for n in "ab")
    assert plain["metric"] == {"name": "val_accuracy", "mode": "max", "test": None}
    assert bounded["metric"]["bounds"] == [0.0, 1.0]

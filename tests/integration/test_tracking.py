"""MLflow projection of the ledger: idempotent child runs, replay with sync_ledger, clear outage errors."""

from __future__ import annotations

import contextlib
import http.server
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from showwork import environment as environment_module
from showwork.environment import PACKAGES, collect_environment, git_remote_url, git_state, strip_credentials
from showwork.errors import InputError
from showwork.store import Ledger, TrialRecord
from showwork.tracking.errors import TrackingUnavailableError, is_transient
from showwork.tracking.ledger_sync import sync_ledger
from showwork.tracking.parent_payload import environment_tags, parent_payload
from showwork.tracking.store import read_client
from showwork.tracking.tracker import Tracker
from showwork.tracking.uris import default_tracking_uri

os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"


def make_record(index: int, **changes) -> TrialRecord:
    fields = dict(
        index=index,
        status="finished",
        params={"optimizer.lr": 0.001 * (index + 1), "model.layers": 2, "act": "relu"},
        seed=100 + index,
        score=0.8 + index / 100,
        test_score=0.7,
        metrics={"val_acc": 0.8 + index / 100, "train_time": 3.5},
        history=[{"epoch": e, "val_acc": 0.2 * e, "loss": 1.0 / e} for e in (1, 2, 3)],
        runtime_s=10.0 + index,
        gpu_seconds=None,
        node_id="node-abc",
        hostname="host-1",
        pid=123,
        started_at="2025-03-01T10:00:00+00:00",
        finished_at="2025-03-01T10:00:10+00:00",
    )
    fields.update(changes)
    return TrialRecord(**fields)


# the module fixture `template_db` (an empty MLflow store to copy) is in conftest.py


@pytest.fixture
def tracker(tmp_path, template_db) -> Tracker:
    shutil.copy(template_db, tmp_path / "mlflow.db")
    return Tracker(f"sqlite:///{tmp_path / 'mlflow.db'}", "search-x", backoff_s=0.01)


def child_runs(tracker: Tracker, parent: str):
    return tracker.client.search_runs([tracker.experiment_id], f"tags.`mlflow.parentRunId` = '{parent}'")


pytestmark = pytest.mark.integration


def test_default_tracking_uri(tmp_path):
    assert default_tracking_uri(tmp_path) == f"sqlite:///{tmp_path.resolve()}/mlflow.db"
    assert default_tracking_uri(tmp_path).startswith("sqlite:////")
    assert not (tmp_path / "mlflow.db").exists()


def test_importing_showwork_does_not_import_mlflow():
    code = "import showwork.store.ledger, showwork.tracking.tracker, showwork.tracking.ledger_sync, showwork.environment, sys; assert 'mlflow' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_parent_run_with_params_tags_and_artifacts(tracker, tmp_path):
    environment = collect_environment(tmp_path)
    params, tags, artifacts = parent_payload(
        "space:\n  lr: loguniform(1e-5, 1e-1)\n", seed=7, num_trials=20,
        space={"optimizer.lr": "LogUniform(1e-05, 0.1)", "long": "x" * 7000},
        environment=environment,
    )
    tracker.check_reachable()
    parent = tracker.start_parent("search-x", params, {**tags, "custom": "yes"}, artifacts)
    run = tracker.client.get_run(parent)
    assert run.info.status == "RUNNING" and run.info.run_name == "search-x"
    assert run.data.params["seed"] == "7" and run.data.metrics["num_trials"] == 20  # a metric: a resume may extend it
    assert "num_trials" not in run.data.params
    assert run.data.params["space.optimizer.lr"] == "LogUniform(1e-05, 0.1)"
    assert len(run.data.params["space.long"]) == 6000
    assert run.data.tags["custom"] == "yes" and run.data.tags["showwork.role"] == "parent"
    assert run.data.tags["showwork.search"] == "search-x"
    assert run.data.tags["showwork.python"] == environment["python"]
    files = {f.path for f in tracker.client.list_artifacts(parent)}
    assert files == {"search.yaml", "space.md", "environment.json"}
    # artifacts go next to the database, not into ./mlruns of the current directory
    assert run.info.artifact_uri.startswith((tmp_path / "mlartifacts" / "search-x").as_uri())
    local = Path(tracker.client.download_artifacts(parent, "space.md", str(tmp_path)))
    assert "| `optimizer.lr` | LogUniform(1e-05, 0.1) |" in local.read_text()
    tracker.finish_parent(parent, "FINISHED", {"best_score": 0.9, "n_failed": 1, "note": "skip"})
    run = tracker.client.get_run(parent)
    assert run.info.status == "FINISHED" and run.data.metrics == {"num_trials": 20, "best_score": 0.9, "n_failed": 1.0}
    tracker.resume_parent(parent)
    assert tracker.client.get_run(parent).info.status == "RUNNING"


class _Distribution:
    def __init__(self, text):
        self.text = text

    def describe(self):
        return self.text


def test_parent_run_from_environment_and_space_objects(tracker, tmp_path):
    environment = {**collect_environment(tmp_path), "git_commit": "b" * 40, "git_dirty": False}
    space = {"optimizer.lr": _Distribution("log-uniform on [1e-05, 0.1]"), "act": "choice of relu, gelu"}
    parent = tracker.start_parent(
        "search-x", {"seed": 1}, {"showwork.git_dirty": "unknown"}, {"search.yaml": "seed: 1\n"},
        environment=environment, space=space,
    )
    run = tracker.client.get_run(parent)
    assert run.data.params["space.optimizer.lr"] == "log-uniform on [1e-05, 0.1]"
    assert run.data.params["space.act"] == "choice of relu, gelu"
    assert run.data.tags["mlflow.source.git.commit"] == "b" * 40
    assert run.data.tags["showwork.git_dirty"] == "unknown"  # explicit tags win
    assert {f.path for f in tracker.client.list_artifacts(parent)} == {"search.yaml", "space.md", "environment.json"}


def test_parent_run_with_a_search_id_is_found_again_not_made_twice(tracker):
    """A driver killed after creating the parent (before the ledger kept its id) finds it again."""
    search_id = "0123456789abcdef0123456789abcdef"
    created = tracker.mlflow.call("creating the parent run", lambda: tracker.client.create_run(
        tracker.experiment_id, run_name="s", tags={"showwork.search_id": search_id}))  # what the killed driver left
    parent = tracker.start_parent("s", {"seed": 1, "family": "a"}, {}, {"search.yaml": "seed: 1\n"}, search_id=search_id)
    assert parent == created.info.run_id
    again = tracker.start_parent("s", {"seed": 1, "family": "b"}, {}, {"search.yaml": "seed: 1\n"}, search_id=search_id)
    assert again == parent  # a param already there keeps its value (MLflow params cannot change)
    run = tracker.client.get_run(parent)
    assert run.data.params["family"] == "a" and run.data.tags["showwork.role"] == "parent"
    assert len(tracker.client.search_runs([tracker.experiment_id])) == 1
    other = tracker.start_parent("s", {"seed": 1}, {}, {}, search_id="f" * 32)
    assert other != parent
    with pytest.raises(InputError, match="search_id"):
        tracker.start_parent("s", {"seed": 1}, {}, {}, search_id="not an id!")


def test_child_run_is_idempotent(tracker):
    parent = tracker.start_parent("p", {}, {}, {})
    first = tracker.child_run(parent, 7, start_time="2025-03-01T10:00:00+00:00")
    assert tracker.child_run(parent, 7) == first
    # a fresh tracker (a resumed driver, no cache) finds the same run
    again = Tracker(tracker.tracking_uri, tracker.experiment_name)
    assert again.child_run(parent, 7) == first
    other = tracker.child_run(parent, 8)
    assert other != first
    runs = child_runs(tracker, parent)
    assert sorted(r.data.tags["showwork.trial_index"] for r in runs) == ["7", "8"]
    run = tracker.client.get_run(first)
    assert run.info.run_name == "trial-0007" and run.data.tags["mlflow.parentRunId"] == parent
    assert run.info.start_time == int(1740823200 * 1000)
    # another parent's trial 7 is another run
    assert tracker.child_run(tracker.start_parent("p2", {}, {}, {}), 7) != first


def test_log_trial_twice_makes_one_child_and_no_duplicate_history(tracker):
    parent = tracker.start_parent("p", {}, {}, {})
    record = make_record(3)
    run_id = tracker.log_trial(parent, record)
    assert Tracker(tracker.tracking_uri, tracker.experiment_name).log_trial(parent, record) == run_id
    assert tracker.log_trial(parent, record) == run_id
    assert len(child_runs(tracker, parent)) == 1
    run = tracker.client.get_run(run_id)
    assert run.info.status == "FINISHED"
    assert run.data.params["optimizer.lr"] == "0.004" and run.data.params["trial_index"] == "3"
    assert run.data.params["seed"] == "103"
    assert run.data.tags["showwork.status"] == "finished" and run.data.tags["showwork.logged"] == "1"
    assert run.data.tags["showwork.hostname"] == "host-1"
    assert run.data.metrics["best_val_score"] == pytest.approx(0.83) and run.data.metrics["runtime_s"] == 13.0
    assert run.data.metrics["train_time"] == 3.5 and "gpu_seconds" not in run.data.metrics
    history = tracker.client.get_metric_history(run_id, "val_acc")
    assert [(m.step, m.value) for m in history] == [(1, 0.2), (2, 0.4), (3, pytest.approx(0.6))]
    assert len(tracker.client.get_metric_history(run_id, "best_val_score")) == 1


def test_live_epochs_are_not_logged_twice(tracker):
    parent = tracker.start_parent("p", {}, {}, {})
    record = make_record(0)
    run_id = tracker.child_run(parent, 0, start_time=record.started_at)  # at the worker's first report
    for entry in record.history[:2]:  # the driver logged two epochs live, then crashed
        tracker.log_epoch(run_id, entry, step=entry["epoch"])
    assert tracker.log_trial(parent, record) == run_id
    assert [m.step for m in tracker.client.get_metric_history(run_id, "loss")] == [1, 2, 3]


def test_failed_and_non_finite_trials(tracker):
    parent = tracker.start_parent("p", {}, {}, {})
    error = "RuntimeError: CUDA out of memory\n" + "  frame\n" * 2000 + "last line"
    failed = make_record(1, status="timeout", score=math.nan, test_score=None, error=error,
                         history=[{"epoch": 1, "loss": math.inf}], params={"seed": 5, "lr": 0.1})
    run_id = tracker.log_trial(parent, failed)
    tracker.log_trial(parent, failed)
    run = tracker.client.get_run(run_id)
    assert run.info.status == "FAILED" and run.data.tags["showwork.status"] == "timeout"
    tag = run.data.tags["showwork.error"]
    assert len(tag) <= 5000 and tag.startswith("RuntimeError: CUDA") and tag.endswith("last line")
    assert math.isnan(run.data.metrics["best_val_score"])
    assert run.data.params["hp.seed"] == "5" and run.data.params["seed"] == "101"
    assert len(tracker.client.get_metric_history(run_id, "loss")) == 1  # +inf, clamped by MLflow, not re-logged


def test_sync_ledger_logs_only_missing_and_writes_run_ids_back(tracker, tmp_path):
    ledger = Ledger(tmp_path / "runs", "search-x")
    for index in range(4):
        ledger.write(make_record(index))
    parent = tracker.start_parent("p", {}, {}, {})
    # trial 1 was projected live (its run id reached the ledger); trial 2 reached MLflow but
    # the driver crashed before writing the run id back
    logged_1 = tracker.log_trial(parent, ledger.read(1))
    ledger.write(TrialRecord.from_dict({**ledger.read(1).to_dict(), "mlflow_run_id": logged_1}), replace=True)
    logged_2 = tracker.log_trial(parent, ledger.read(2))

    assert sync_ledger(tracker, ledger, parent) == 3  # 0, 2 and 3
    records = ledger.records()
    assert all(r.mlflow_run_id for r in records)
    assert records[1].mlflow_run_id == logged_1 and records[2].mlflow_run_id == logged_2
    assert len(child_runs(tracker, parent)) == 4
    assert sync_ledger(Tracker(tracker.tracking_uri, tracker.experiment_name), ledger, parent) == 0
    assert len(child_runs(tracker, parent)) == 4

    # a new trial finishes; a replay to a fresh parent (a lost database) gets new children
    ledger.write(make_record(4))
    assert sync_ledger(tracker, ledger, parent) == 1
    fresh = tracker.start_parent("p-again", {}, {}, {})
    assert sync_ledger(tracker, ledger, fresh) == 5
    assert {r.mlflow_run_id for r in ledger.records()} == {r.info.run_id for r in child_runs(tracker, fresh)}


def test_stale_children_are_deleted_so_each_trial_has_one_run(tracker):
    """Issue 15 item 4: an interrupted attempt's run is deleted on resume, not kept beside the trial's new run."""
    parent = tracker.start_parent("p", {}, {}, {})
    stale = tracker.child_run(parent, 2, start_time="2025-03-01T09:00:00+00:00")
    tracker.log_epoch(stale, {"loss": 3.0}, step=1)
    done = tracker.log_trial(parent, make_record(1))
    assert tracker.delete_stale_children(parent, completed={1}) == [stale]
    assert tracker.client.get_run(stale).info.lifecycle_stage == "deleted"
    assert tracker.delete_stale_children(parent, completed={1}) == []
    fresh = tracker.child_run(parent, 2)
    assert fresh not in (stale, done)
    assert tracker.child_run(parent, 1) == done
    assert sorted(tracker.children(parent)) == [1, 2]


def test_a_new_attempt_of_a_trial_replaces_the_run_of_the_earlier_one(tracker):
    """A worker Ray restarts (or a resumed trial) starts later: its run starts then; the earlier attempt's is deleted."""
    parent = tracker.start_parent("p", {}, {}, {})
    first = tracker.child_run(parent, 3, start_time="2025-03-01T10:00:00+00:00")
    tracker.log_epoch(first, {"loss": 3.0}, step=1)
    assert tracker.child_run(parent, 3, start_time="2025-03-01T10:00:00+00:00") == first
    record = make_record(3, started_at="2025-03-01T10:05:00.250+00:00", runtime_s=12.3456)
    second = tracker.log_trial(parent, record)
    assert second != first and tracker.client.get_run(first).info.lifecycle_stage == "deleted"
    run = tracker.client.get_run(second)
    assert [r.info.run_id for r in child_runs(tracker, parent)] == [second]
    assert run.info.end_time - run.info.start_time == 12346  # the ledger's runtime_s, to the millisecond
    assert run.info.start_time == int(datetime.fromisoformat(record.started_at).timestamp() * 1000)
    assert tracker.log_trial(parent, record) == second  # logged: kept, whatever asks for it


def test_the_experiment_is_tagged_as_model_training(tracker):
    """Issue 15 item 6: the kind tag, which MLflow 3's sidebar reads. It does not make the experiment's page open
    on the runs table (issue 23 item 16: tests/integration/test_search.py::test_the_printed_link_opens_the_runs_table_in_chromium)."""
    experiment = tracker.client.get_experiment(tracker.experiment_id)
    assert experiment.tags["mlflow.experimentKind"] == "custom_model_development"
    older = tracker.client.create_experiment("made-by-an-earlier-showwork")  # no kind tag
    assert "mlflow.experimentKind" not in tracker.client.get_experiment(older).tags
    Tracker(tracker.tracking_uri, "made-by-an-earlier-showwork").check_reachable()
    assert tracker.client.get_experiment(older).tags["mlflow.experimentKind"] == "custom_model_development"


def test_num_trials_follows_an_extension(tracker):
    """Issue 15 item 4: a resume with more trials (25 -> 30) shows 30 on the parent; the history keeps 25."""
    parent = tracker.start_parent("p", {"seed": 1, "num_trials": 25}, {}, {})
    tracker.resume_parent(parent, num_trials=25)
    tracker.resume_parent(parent, num_trials=30)
    assert tracker.client.get_run(parent).data.metrics["num_trials"] == 30
    history = tracker.client.get_metric_history(parent, "num_trials")
    assert [(m.step, m.value) for m in history] == [(0, 25.0), (1, 30.0)]


def test_check_reachable_fails_fast_on_an_unreachable_server(monkeypatch):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_TIMEOUT", "2")
    tracker = Tracker(f"http://127.0.0.1:{port}", "search-x", backoff_s=0.01, attempts=2)
    start = time.monotonic()
    with pytest.raises(TrackingUnavailableError, match=f"cannot reach the MLflow tracking server at http://127.0.0.1:{port}"):
        tracker.check_reachable(timeout_s=2)
    assert time.monotonic() - start < 10
    # other calls retry, warn of the retries once, then raise the same error type
    with pytest.warns(UserWarning, match="retrying .up to 1 more tries over 0.01 s per call; said once"):
        with pytest.raises(TrackingUnavailableError, match="failed 2 times"):
            tracker.start_parent("p", {}, {}, {})


def test_check_reachable_on_a_file_that_is_not_a_database(tmp_path):
    junk = tmp_path / "mlflow.db"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(TrackingUnavailableError, match="cannot reach the MLflow database"):
        Tracker(f"sqlite:///{junk}", "x").check_reachable()


def test_retry_helper_retries_only_transient_errors(tracker):
    from sqlalchemy.exc import OperationalError

    calls = []

    def locked_twice():
        calls.append(1)
        if len(calls) < 3:
            raise OperationalError("INSERT ...", {}, Exception("database is locked"))
        return "ok"

    with pytest.warns(UserWarning, match="database is locked"):
        assert tracker.mlflow.call("a test", locked_twice) == "ok"
    assert len(calls) == 3
    with pytest.raises(ValueError):
        tracker.mlflow.call("a test", lambda: (_ for _ in ()).throw(ValueError("a bug")))
    assert not is_transient(ValueError("Changing param values is not allowed"))
    assert is_transient(ConnectionRefusedError())


def test_environment_collection_never_raises(tmp_path, monkeypatch):
    environment = collect_environment(tmp_path)
    expected = {
        "python", "platform", "hostname", "cpu_model", "cpu_count", "memory_total_bytes", "gpus", "gpu_model",
        "gpu_count", "nvidia_driver", "cuda_version", "packages", "git_commit", "git_dirty", "git_remote", "code_files",
    }
    assert set(environment) == expected
    assert set(environment["packages"]) == set(PACKAGES)
    assert environment["packages"]["mlflow"] is not None
    assert environment["git_commit"] is None and environment["git_dirty"] is None  # tmp_path: no repo
    assert environment["git_remote"] is None
    assert environment["gpu_count"] == len(environment["gpus"])
    json.dumps(environment)
    repo = Path(__file__).resolve().parents[2]
    commit, dirty = git_state(repo)
    assert commit is None or (len(commit) == 40 and isinstance(dirty, bool))
    # nothing on PATH: no git, no nvidia-smi; still no exception
    monkeypatch.setenv("PATH", str(tmp_path))
    bare = collect_environment(repo)
    assert bare["gpus"] == [] and bare["gpu_count"] == 0 and bare["git_commit"] is None and bare["git_remote"] is None
    tags = environment_tags({**bare, "git_commit": "a" * 40, "git_dirty": True})
    assert tags["mlflow.source.git.commit"] == "a" * 40 and tags["showwork.git_dirty"] == "true"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, timeout=30)


def test_git_remote_prefers_origin_and_drops_credentials(tmp_path):
    _git(tmp_path, "init", "-q")
    assert git_remote_url(tmp_path) is None  # a repository without remotes
    _git(tmp_path, "remote", "add", "upstream", "https://alice:p@ss@example.org/lab/code.git")
    _git(tmp_path, "remote", "add", "my.fork", "ssh://git@example.org/alice/code.git")
    assert git_remote_url(tmp_path) == "https://example.org/lab/code.git"  # no origin: the first remote
    _git(tmp_path, "remote", "add", "origin", "https://ghp_token123@github.com/lab/code.git?private_token=x")
    environment = collect_environment(tmp_path)
    assert environment["git_remote"] == "https://github.com/lab/code.git"
    assert "ghp_token123" not in json.dumps(environment) and "private_token" not in json.dumps(environment)
    assert git_remote_url(tmp_path / "missing") is None


def test_strip_credentials_keeps_addresses_without_them():
    assert strip_credentials("https://user:tok@host:8443/a/b.git") == "https://host:8443/a/b.git"
    assert strip_credentials("ssh://git@host/a/b.git") == "ssh://host/a/b.git"
    assert strip_credentials("git@github.com:owner/repo.git") == "git@github.com:owner/repo.git"
    assert strip_credentials("/srv/git/repo.git") == "/srv/git/repo.git"
    assert strip_credentials("file:///srv/git/repo.git") == "file:///srv/git/repo.git"


def test_total_memory_from_sysconf_or_meminfo(monkeypatch):
    meminfo = Path("/proc/meminfo")
    if not meminfo.is_file():
        pytest.skip("no /proc/meminfo to check against")
    kib = next(int(line.split()[1]) for line in meminfo.read_text().splitlines() if line.startswith("MemTotal:"))
    assert collect_environment()["memory_total_bytes"] == kib * 1024  # sysconf and the kernel agree
    monkeypatch.setattr(os, "sysconf", lambda name: (_ for _ in ()).throw(ValueError(name)))
    assert collect_environment()["memory_total_bytes"] == kib * 1024  # the /proc/meminfo fallback
    monkeypatch.setattr(environment_module, "open", lambda *a, **k: (_ for _ in ()).throw(OSError("no")), raising=False)
    assert collect_environment()["memory_total_bytes"] is None


def test_cuda_version_is_read_from_torch_without_importing_it(tmp_path, monkeypatch):
    fake = tmp_path / "torch"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise RuntimeError('imported')\n")
    (fake / "version.py").write_text("from typing import Optional\n__version__ = '9.9.9'\ncuda: Optional[str] = '12.4'\n")
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert collect_environment(tmp_path)["cuda_version"] == "12.4"
    assert "torch" not in sys.modules
    (fake / "version.py").write_text("cuda = None\n")  # a CPU-only build
    assert collect_environment(tmp_path)["cuda_version"] is None
    (fake / "version.py").write_text("cuda = (\n")  # unreadable: still no exception
    assert collect_environment(tmp_path)["cuda_version"] is None


def test_a_pickled_tracker_keeps_no_password_and_no_client(tracker):
    """Ray Tune pickles the driver's callbacks (and their tracker) into files under --storage."""
    import pickle

    secret = Tracker("http://someone:pw-sw-51d@127.0.0.1:5999/", "search-x")
    assert secret.shown_uri == "http://127.0.0.1:5999/" and "pw-sw" not in repr(secret)
    copy = pickle.loads(pickle.dumps(secret))
    assert b"pw-sw" not in pickle.dumps(secret) and copy.tracking_uri == "http://127.0.0.1:5999/"
    tracker.experiment_id  # a connected tracker pickles without its client
    assert pickle.loads(pickle.dumps(tracker)).mlflow._client is None


# ---------------------------------------------------------------- issue 14 item 4: one MLflow key per name


def test_colliding_metric_names_keep_every_value_and_record_their_names(tracker):
    """`a!b` and `a?b` were both logged as `a_b`: one value was lost. Now each has its own key, recorded on the run."""
    from showwork.tracking.mlflow_keys import METRIC_NAMES_TAG, key_names, original_names

    parent = tracker.start_parent("p", {}, {}, {})
    history = [{"epoch": e, "a!b": 1.0 * e, "a?b": 10.0 * e, "a_b": 100.0 * e} for e in (1, 2)]
    record = make_record(0, history=history, metrics={"a!b": 2.0, "a?b": 20.0, "acc@1": 0.5})
    run_id = tracker.child_run(parent, 0, start_time=record.started_at)
    with pytest.warns(UserWarning, match=r"metric names are logged under other keys.*'a!b' as 'a_b-[0-9a-f]{8}'"):
        tracker.log_epoch(run_id, history[0], step=1)  # live, then the driver crashed
    assert Tracker(tracker.tracking_uri, tracker.experiment_name).log_trial(parent, record) == run_id  # the replay
    run = tracker.client.get_run(run_id)
    names = key_names(run.data.tags, METRIC_NAMES_TAG)
    assert sorted(names.values()) == ["a!b", "a?b", "acc@1"]
    metrics = original_names(run.data.metrics, names)
    assert {k: metrics[k] for k in ("a!b", "a?b", "a_b", "acc@1")} == {"a!b": 2.0, "a?b": 20.0, "a_b": 200.0, "acc@1": 0.5}
    by_name = {name: key for key, name in names.items()}
    for name, scale in (("a!b", 1.0), ("a?b", 10.0)):  # each epoch once, under one key
        history_points = tracker.client.get_metric_history(run_id, by_name[name])
        assert sorted((m.step, m.value) for m in history_points) == [(1, scale), (2, 2 * scale)]


def test_a_metric_key_map_whose_write_failed_is_written_on_the_retry(tracker, monkeypatch):
    from sqlalchemy.exc import OperationalError

    from showwork.tracking.mlflow_keys import METRIC_NAMES_TAG, key_names

    run_id = tracker.child_run(tracker.start_parent("p", {}, {}, {}), 0)
    real, failed = tracker.client.log_batch, []

    def locked_once(run_id, metrics=(), params=(), tags=(), synchronous=True):
        if tags and not failed:
            failed.append(True)
            raise OperationalError("INSERT ...", {}, Exception("database is locked"))
        return real(run_id, metrics=metrics, params=params, tags=tags, synchronous=synchronous)

    monkeypatch.setattr(tracker.client, "log_batch", locked_once)
    with pytest.warns(UserWarning, match="database is locked"):
        tracker.log_epoch(run_id, {"a!b": 1.0}, step=1)
    run = tracker.client.get_run(run_id)
    names = key_names(run.data.tags, METRIC_NAMES_TAG)
    assert failed and list(names.values()) == ["a!b"] and run.data.metrics == {next(iter(names)): 1.0}


def test_long_parameter_names_sharing_their_start_get_distinct_keys(tracker):
    """Names equal in their first 250 characters made MLflow refuse the batch ("Duplicate parameter keys")."""
    from showwork.tracking.mlflow_keys import PARAM_NAMES_TAG, key_names, original_names
    from showwork.tracking.run_entities import check_param_names

    long_a, long_b = "p" * 244 + ".alpha", "p" * 244 + ".beta1"  # 250 characters: space.<name> on the parent is not
    with pytest.warns(UserWarning, match=r"parameter names are logged under other keys.*'space\.p+\.\.\.p+\.alpha' as 'space\.p+\.\.\.p+-[0-9a-f]{8}'"):
        keys = check_param_names([long_a, long_b, "lr"])
    assert keys == {long_a: long_a, long_b: long_b, "lr": "lr"}
    longer_a, longer_b = long_a + "_x", long_b + "_x"  # 252 characters: the trials' keys differ too
    with pytest.warns(UserWarning, match="parameter names are logged under other keys"):
        keys = check_param_names([longer_a, longer_b])
    assert keys[longer_a] != keys[longer_b] and max(map(len, keys.values())) == 250
    parent = tracker.start_parent("p", {}, {}, {}, space={long_a: "uniform", long_b: "uniform"})
    parent_run = tracker.client.get_run(parent)
    assert set(original_names(parent_run.data.params, key_names(parent_run.data.tags, PARAM_NAMES_TAG))) == {
        f"space.{long_a}", f"space.{long_b}"
    }
    run_id = tracker.log_trial(parent, make_record(0, params={longer_a: 1, longer_b: 2, "lr": 0.1}))
    run = tracker.client.get_run(run_id)
    params = original_names(run.data.params, key_names(run.data.tags, PARAM_NAMES_TAG))
    assert {k: params[k] for k in (longer_a, longer_b, "lr")} == {longer_a: "1", longer_b: "2", "lr": "0.1"}
    assert run.info.status == "FINISHED"


def test_parameter_names_built_to_collide_are_refused_before_anything_starts():
    from showwork.tracking.mlflow_keys import candidate_keys
    from showwork.tracking.run_entities import check_param_names

    victim = "q" * 300
    with pytest.raises(InputError, match=r"space.yaml: parameters 'q+\.\.\.q+' and 'q+\.\.\.[0-9a-f]+' would have the same MLflow key; rename one"):
        check_param_names([victim, *candidate_keys(victim)], "space.yaml")


# ---------------------------------------------------------------- issue 14 item 15: a web server is not MLflow


class _WebPage(http.server.BaseHTTPRequestHandler):
    """A web server that is not MLflow: an HTML page for every request (as a proxy or another service would)."""

    status = 200

    def _answer(self):
        body = b"<!DOCTYPE html><html><head><title>Welcome</title></head><body>" + b"<p>hello</p>" * 60 + b"</body></html>"
        self.send_response(self.status)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args):  # quiet
        pass


class _NotFound(_WebPage):
    status = 404


@pytest.mark.parametrize("handler", [_WebPage, _NotFound], ids=["html-page", "404"])
def test_a_server_that_is_not_mlflow_is_named_in_one_short_line(handler, monkeypatch):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)  # this machine only
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        uri = f"http://127.0.0.1:{server.server_port}"
        with pytest.raises(InputError) as caught:
            Tracker(uri, "search-x").check_reachable(timeout_s=2)
        message = str(caught.value)
        assert message.startswith(f"{uri} is not an MLflow tracking server (it answered MLflow's API with")
        assert "<" not in message and "start it" not in message and len(message) < 160 and "\n" not in message
        with pytest.raises(InputError, match="is not an MLflow tracking server"):
            read_client(uri, timeout_s=2)
    finally:
        server.shutdown()
        server.server_close()


# ---------------------------------------------------------------- issue 14 item 18: a fresh store, opened at once

_OPEN_STORE = """
import sys
from showwork.tracking.tracker import Tracker
Tracker(sys.argv[1], sys.argv[2]).check_reachable(timeout_s=30)
"""


@pytest.mark.slow
def test_processes_opening_a_fresh_sqlite_store_at_once_all_succeed(tmp_path):
    """Two searches in a fresh folder raced on creating mlflow.db ("table experiments already exists")."""
    environment = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"}
    for round_ in range(3):
        uri = f"sqlite:///{tmp_path / f'round{round_}' / 'mlflow.db'}"
        (tmp_path / f"round{round_}").mkdir()
        processes = [
            subprocess.Popen([sys.executable, "-c", _OPEN_STORE, uri, f"search-{i % 2}"], env=environment,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for i in range(4)
        ]
        results = [(p.wait(timeout=300), p.stderr.read()) for p in processes]
        for p in processes:
            p.stdout.close()
            p.stderr.close()
        assert all(code == 0 for code, _ in results), [err[-800:] for code, err in results if code]
        client = Tracker(uri, "search-0").client
        assert sorted(e.name for e in client.search_experiments()) == ["Default", "search-0", "search-1"]


# ---------------------------------------------------------------- real searches (items 4 and 18)

KEYS_TRAINABLE = '''
def train(config, *, seed, device, reporter, data):
    for epoch in (1, 2):
        reporter(epoch=epoch, score=config["lr"] * epoch, **{"a!b": 1.0 * epoch, "a?b": 10.0 * epoch})
    return {"score": 2 * config["lr"], "a!b": 2.0, "a?b": 20.0}
'''

LONG_A, LONG_B = "w" * 246 + "_one_a", "w" * 246 + "_two_b"  # 252 characters, equal in their first 246

KEYS_SPACE = f"""
name: {{name}}
family: trainable.py:train
metric: {{{{name: score, mode: max}}}}
num_trials: 2
seed: 3
max_concurrent: 1
space:
  lr: {{{{distribution: uniform, low: 0.1, high: 1.0}}}}
  {LONG_A}: {{{{distribution: int_uniform, low: 1, high: 9}}}}
  {LONG_B}: {{{{distribution: int_uniform, low: 10, high: 19}}}}
"""


def search_command(space: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "showwork", "search", str(space), "--no-progress", "--num-cpus", "1", *extra]


def run_searches(folder: Path, commands: list[list[str]], timeout_s: float = 420) -> list[tuple[int, str]]:
    """Start ``commands`` together in ``folder`` (each in a session of its own), wait for all; ``(code, output)`` each."""
    from helpers import search_process_environment

    environment = search_process_environment()
    processes = [
        subprocess.Popen(command, cwd=folder, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, start_new_session=True)
        for command in commands
    ]
    try:
        return [(process.wait(timeout=timeout_s), process.communicate()[0]) for process in processes]
    finally:
        for process in processes:  # leftovers of a search that failed: its own session only
            if process.poll() is None:
                process.kill()
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGKILL)


@pytest.mark.slow
def test_a_search_with_colliding_metric_and_long_parameter_names_keeps_and_reports_them(tmp_path):
    """`a!b`/`a?b` lost a value and 252-character names crashed the search and --resume ("Duplicate parameter keys")."""
    from showwork.report.inputs import from_ledger
    from showwork.report.sources_mlflow import from_mlflow

    (tmp_path / "trainable.py").write_text(KEYS_TRAINABLE)
    space = tmp_path / "keys.yaml"
    space.write_text(KEYS_SPACE.format(name="keys"))
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    flags = ("--storage", str(tmp_path / "runs"), "--tracking-uri", uri)
    [(code, output)] = run_searches(tmp_path, [search_command(space, *flags)])
    assert code == 0, output[-3000:]
    assert "parameter names are logged under other keys" in output and "metric names are logged under other keys" in output
    [(code, output)] = run_searches(tmp_path, [search_command(space, "--resume", "--num-trials", "3", *flags)])
    assert code == 0, output[-3000:]
    assert "search keys: 3 finished, 0 failed, 0 timed out of 3" in output

    ledger = from_ledger(tmp_path / "runs", "keys")
    family = from_mlflow(uri, "keys")
    assert family.statuses == ("finished",) * 3
    np.testing.assert_array_equal(family.scores, ledger.scores)
    for params, recorded in zip(family.params, ledger.params):
        assert {k: params[k] for k in ("lr", LONG_A, LONG_B)} == {k: recorded[k] for k in ("lr", LONG_A, LONG_B)}
    for metrics in family.trial_metrics:
        assert metrics["a!b"] == 2.0 and metrics["a?b"] == 20.0  # both values, under their own names
    runs = Tracker(uri, "keys").client.search_runs([Tracker(uri, "keys").experiment_id])
    assert sorted(r.info.status for r in runs) == ["FINISHED"] * 4  # the parent and three trials


@pytest.mark.slow
def test_two_searches_started_together_in_a_fresh_folder_both_finish(tmp_path):
    (tmp_path / "trainable.py").write_text(KEYS_TRAINABLE)
    commands = []
    for name in ("first", "second"):
        space = tmp_path / f"{name}.yaml"
        space.write_text(KEYS_SPACE.format(name=name))
        commands.append(search_command(space))  # the default store: sqlite:///<folder>/mlflow.db, made by both
    assert not (tmp_path / "mlflow.db").exists()
    results = run_searches(tmp_path, commands)
    for (code, output), name in zip(results, ("first", "second")):
        assert code == 0, output[-3000:]
        assert f"search {name}: 2 finished, 0 failed, 0 timed out of 2" in output
    client = read_client(default_tracking_uri(tmp_path))
    assert {"first", "second"} <= {e.name for e in client.search_experiments()}


def test_the_parent_payload_states_a_parameters_step_and_condition():
    # Issue 16: the parent run's space.<name> params and space.md say when a conditional parameter is drawn.
    from showwork.space import SearchSpace

    space = SearchSpace.from_dict({
        "optimizer": {"distribution": "categorical", "choices": ["sgd", "adam"]},
        "momentum": {"distribution": "uniform", "low": 0.0, "high": 0.9, "step": 0.1, "when": {"optimizer": "sgd"}},
    })
    params, _, artifacts = parent_payload("name: x\n", 0, 4, space)
    assert params["space.optimizer"] == "uniform choice among 'sgd', 'adam'"
    assert params["space.momentum"] == "uniform on [0.0, 0.9] step 0.1 (only when optimizer = 'sgd')"
    assert "| `momentum` | uniform on [0.0, 0.9] step 0.1 (only when optimizer = 'sgd') |" in artifacts["space.md"]


# ---------------------------------------------------------------- issue 23: MLflow writes that keep up


class WriterCounts:
    """The MLflow client calls and the SQL COMMITs made by the search's writer thread ("showwork-mlflow"), by trial.

    The client is wrapped (each call of a public method of ``tracker.client`` counts once, as a request
    to a server would); COMMITs are SQLAlchemy's ``commit`` events on the store's engine (SQLite).
    """

    def __init__(self, tracker: Tracker) -> None:
        from sqlalchemy import event

        self.calls: list[str] = []
        self.commits = 0
        client = tracker.client
        store = client._tracking_client.store
        event.listen(store.engine, "commit", self._commit)
        counts = self

        class Counting:
            def __getattr__(self, name):
                attribute = getattr(client, name)
                if name.startswith("_") or not callable(attribute):
                    return attribute

                def counted(*args, **kwargs):
                    if threading.current_thread().name == "showwork-mlflow":
                        counts.calls.append(name)
                    return attribute(*args, **kwargs)

                return counted

        tracker.mlflow._client = Counting()

    def _commit(self, connection) -> None:
        if threading.current_thread().name == "showwork-mlflow":
            self.commits += 1

    def take(self) -> tuple[list[str], int]:
        """The calls and COMMITs since the last take."""
        calls, commits = self.calls, self.commits
        self.calls, self.commits = [], 0
        return calls, commits


class QuietDisplay:
    """The display's hooks (:class:`showwork.run.progress.Progress`), drawing nothing."""

    def started(self, index):
        pass

    def reported(self, index, rows):
        pass

    def dropped(self, index):
        pass

    def ended(self, record):
        pass


class TuneTrial:
    def __init__(self, index: int) -> None:
        self.config, self.num_failures = {"index": index}, 0


def search_writer(tracker: Tracker, tmp_path: Path):
    """A search's parent run, ledger, first replay and Tune callback, as the driver has them when trials start."""
    from showwork.run.callback import ProjectionCallback
    from showwork.run.driver import replay

    parent = tracker.start_parent("search-x", {"seed": 1, "num_trials": 3}, {}, {}, search_id="s1")
    ledger = Ledger(tmp_path / "runs", "search-x")
    replay(tracker, ledger, parent, [])  # the driver's replay before the trials: it lists the (no) trial runs
    callback = ProjectionCallback(tracker, ledger, parent, QuietDisplay(), trial_of=lambda index: ({"lr": 0.1 * index}, 7))
    return parent, ledger, callback


def epoch_rows(count: int) -> list[dict]:
    return [{"epoch": e, "val_acc": e / max(count, 1), "loss": 1.0 / (e + 1)} for e in range(count)]


def ended_record(index: int, rows: list[dict], started: str) -> TrialRecord:
    return make_record(index, params={"lr": 0.1 * index}, seed=7, history=rows, metrics={"val_acc": 0.5},
                       started_at=started, finished_at=started, runtime_s=0.25)


@pytest.mark.parametrize("epochs", [1, 5, 200, 1000])
def test_a_trial_costs_at_most_four_mlflow_calls_and_four_commits_whatever_its_epochs(tracker, tmp_path, epochs):
    """Issue 23 item 14: 14 MLflow calls and 27 COMMITs per trial of 5 epochs, more with each epoch.

    Each trial as Tune delivers it at worst: its first report alone (the run is created), its later
    epochs in several reports, then its end, the writer idle in between."""
    from showwork.trials.execution import REPORT_KEY, TRIAL_START_KEY

    parent, ledger, callback = search_writer(tracker, tmp_path)
    counts = WriterCounts(tracker)
    for index in range(3):
        started = f"2025-03-01T10:00:0{index}+00:00"
        rows = epoch_rows(epochs)
        callback.on_trial_start(0, [], TuneTrial(index))
        for start in (0, 1, *range(2, epochs, max(1, epochs // 4))):  # the first row, then batches (EpochReports)
            end = 1 if start == 0 else min(epochs, start + max(1, epochs // 4)) if start > 1 else 2
            if start < epochs:
                callback.on_trial_result(0, [], TuneTrial(index), {REPORT_KEY: rows[start:end], TRIAL_START_KEY: started})
                callback.idle()
        ledger.write(ended_record(index, rows, started))
        callback.on_trial_complete(0, [], TuneTrial(index))
        callback.idle()
        calls, commits = counts.take()
        # the run with its params and first epoch; the rest with its end (one transaction each)
        assert calls == ["create_run", "log_batch", "log_batch", "set_terminated"] and commits == 2, (calls, commits)
    callback.close()
    for index, run in tracker.children(parent).items():
        assert run.info.status == "FINISHED" and run.data.tags["showwork.logged"] == "1"
        assert ledger.read(index).mlflow_run_id == run.info.run_id
        history = tracker.client.get_metric_history(run.info.run_id, "val_acc")
        assert sorted((m.step, m.value) for m in history) == [(row["epoch"], row["val_acc"]) for row in epoch_rows(epochs)]
        assert run.data.params == {"lr": str(0.1 * index), "trial_index": str(index), "seed": "7"}
        assert run.data.metrics["best_val_score"] == ledger.read(index).score
        assert run.info.end_time - run.info.start_time == 250  # the trial's runtime
    from showwork.run.driver import replay

    replay(tracker, ledger, parent, ledger.records())  # the replay after the trials: only its listing
    assert counts.take() == ([], 0)


def test_five_thousand_reports_in_a_tenth_of_a_second_are_in_mlflow_within_seconds_of_the_trials_end(tracker, tmp_path):
    """Issue 23 item 14: logged one report at a time, 5,000 took about 3 minutes after the trial had ended."""
    from showwork.trials.execution import REPORT_KEY, TRIAL_START_KEY

    parent, ledger, callback = search_writer(tracker, tmp_path)
    rows = [{"epoch": e, "val_acc": e / 5000} for e in range(5000)]
    started = "2025-03-01T10:00:00+00:00"
    callback.on_trial_result(0, [], TuneTrial(0), {REPORT_KEY: rows[:1], TRIAL_START_KEY: started})  # as EpochReports
    callback.on_trial_result(0, [], TuneTrial(0), {REPORT_KEY: rows[1:], TRIAL_START_KEY: started})  # sends them
    ledger.write(ended_record(0, rows, started))
    ended = time.monotonic()
    callback.on_trial_complete(0, [], TuneTrial(0))
    callback.close()
    assert time.monotonic() - ended < 10
    run = tracker.children(parent)[0]
    assert run.data.tags["showwork.logged"] == "1" and run.info.status == "FINISHED"
    assert len(tracker.client.get_metric_history(run.info.run_id, "val_acc")) == 5000


def test_a_record_mlflow_refuses_is_marked_and_the_other_trials_and_the_parent_finish(tracker, tmp_path):
    """Issue 23 item 2: an epoch of 2**63 (accepted by reporter before) made every replay, and every resume, crash."""
    import warnings as warnings_module

    from showwork.run.driver import finish_parent
    from showwork.run.summary import summarize

    parent = tracker.start_parent("p", {"seed": 1}, {}, {})
    ledger = Ledger(tmp_path / "runs", "search-x")
    huge = make_record(1, history=[{"epoch": 2**63, "val_acc": 0.3}])
    for record in (make_record(0), huge, make_record(2)):
        ledger.write(record)
    for attempt in range(2):  # the search's replay, then a resume's (another driver): each says it once
        replaying = Tracker(tracker.tracking_uri, "search-x", backoff_s=0.01)
        with warnings_module.catch_warnings(record=True) as caught:
            warnings_module.simplefilter("always")
            assert sync_ledger(replaying, ledger, parent) == (3 if attempt == 0 else 1)
            assert sync_ledger(replaying, ledger, parent) == 0  # the same driver's second replay: not again
        lines = [str(w.message) for w in caught]
        assert len(lines) == 1 and "\n" not in lines[0], lines
        assert lines[0].startswith("MLflow refused trial 1's record (MlflowException: ")
        assert "showwork.projection_error" in lines[0] and "a resume tries again" in lines[0]
        finish_parent(replaying, parent, "FINISHED", summarize("search-x", 3, "max", ledger.records(), ledger, tmp_path,
                                                              parent, tracker.shown_uri, 1.0))
    children = tracker.children(parent)
    assert [children[i].info.status for i in range(3)] == ["FINISHED", "FAILED", "FINISHED"]
    assert children[1].data.tags["showwork.projection_error"].startswith("MlflowException: ")
    assert "showwork.logged" not in children[1].data.tags
    assert children[1].info.end_time - children[1].info.start_time == 11_000  # the trial's runtime, as for any trial
    assert [r.mlflow_run_id for r in ledger.records()] == [children[i].info.run_id for i in range(3)]
    assert tracker.client.get_run(parent).info.status == "FINISHED"


def test_the_parents_active_time_sums_its_drivers_and_its_duration_spans_the_gaps(tracker, tmp_path):
    """Issue 23 item 16: after an interrupt and a resume, the parent's duration (1,687 s) was not the work (200 s)."""
    from showwork.run.driver import finish_parent
    from showwork.run.summary import summarize

    ledger = Ledger(tmp_path / "runs", "search-x")
    ledger.write(make_record(0))

    def summary(elapsed: float):
        return summarize("search-x", 2, "max", ledger.records(), ledger, tmp_path, parent, tracker.shown_uri, elapsed)

    parent = tracker.start_parent("p", {"seed": 1}, {}, {})
    finish_parent(tracker, parent, "KILLED", summary(120.5))  # interrupted
    time.sleep(1.2)  # the gap before the resume
    resumed = Tracker(tracker.tracking_uri, "search-x")
    resumed.resume_parent(parent, num_trials=2)
    finish_parent(resumed, parent, "FINISHED", summary(80.0))
    run = tracker.client.get_run(parent)
    assert run.data.metrics["active_s"] == pytest.approx(200.5)
    assert run.info.end_time - run.info.start_time >= 1200  # wall-clock: the gap is in MLflow's duration


@pytest.mark.slow
def test_a_sqlite_store_locked_for_30_s_is_one_warning_line(tracker, tmp_path, capfd):
    """Issue 23 item 12: a lock held 30 s printed MLflow's tracebacks ("database is locked") beside showwork's warnings."""
    import sqlite3
    import warnings as warnings_module

    parent = tracker.start_parent("p", {"seed": 1}, {}, {})
    tracker.mlflow.backoff_s = 0.5
    locked, release = threading.Event(), threading.Event()

    def hold() -> None:
        connection = sqlite3.connect(tracker.tracking_uri.removeprefix("sqlite:///"), isolation_level=None)
        connection.execute("BEGIN EXCLUSIVE")
        locked.set()
        release.wait(30)
        connection.execute("COMMIT")
        connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    assert locked.wait(10)
    threading.Timer(30, release.set).start()
    capfd.readouterr()
    with warnings_module.catch_warnings(record=True) as caught:
        warnings_module.simplefilter("always")
        run_id = tracker.log_trial(parent, make_record(0))
    holder.join()
    err = capfd.readouterr().err
    assert "Traceback" not in err and "database is locked" not in err, err[-2000:]
    lines = [str(w.message) for w in caught]
    assert len(lines) == 1 and "the database is locked" in lines[0] and "said once until a call succeeds" in lines[0], lines
    assert tracker.client.get_run(run_id).data.tags["showwork.logged"] == "1"


BURST_TRAINABLE = '''
import time


def train(config, *, seed, device, reporter, data):
    start = time.perf_counter()
    for epoch in range(5000):
        reporter(epoch=epoch, score=config["lr"] * epoch / 5000)
    assert time.perf_counter() - start < 0.5, "5,000 reporter calls took longer than a burst"
    return {"score": config["lr"]}
'''


@pytest.mark.slow
def test_a_real_search_with_5000_reports_in_a_burst_has_them_in_mlflow_within_10_s_of_the_trials_end(tmp_path):
    """Issue 23 item 14 through Ray Tune: 5,000 reporter calls in a burst were in MLflow about 3 minutes after the
    trial's end (one write per report); the search now returns, its writer closed and its replay done, within 10 s."""
    from datetime import datetime

    from showwork.cli import main

    from helpers import search_environment

    (tmp_path / "burst.py").write_text(BURST_TRAINABLE)
    space = tmp_path / "burst.yaml"
    space.write_text("name: burst\nfamily: burst.py:train\nmetric: {name: score, mode: max}\nnum_trials: 1\nseed: 3\n"
                     "space:\n  lr: {distribution: uniform, low: 0.1, high: 1.0}\n")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    with search_environment(tmp_path):
        code = main(["search", str(space), "--no-progress", "--num-cpus", "1", "--storage", str(tmp_path / "runs"),
                     "--tracking-uri", uri])
    returned = time.time()
    assert code == 0
    (record,) = Ledger(tmp_path / "runs", "burst").records()
    assert len(record.history) == 5000
    assert returned - datetime.fromisoformat(record.finished_at).timestamp() < 10
    tracker = Tracker(uri, "burst")
    run = tracker.client.get_run(record.mlflow_run_id)
    assert run.data.tags["showwork.logged"] == "1" and run.info.status == "FINISHED"
    history = tracker.client.get_metric_history(run.info.run_id, "score")
    assert sorted(m.step for m in history) == list(range(5000))


def test_a_retried_trials_failed_run_stays_beside_the_retry_tagged_superseded(tracker, tmp_path):
    """Issue 35 item 1: ``resume --retry-failed`` keeps the failed attempt's run, tagged superseded with its attempt."""
    from showwork.report.sources_mlflow import from_mlflow
    from showwork.run.driver import supersede_failed

    ledger = Ledger(tmp_path / "runs", "search-x")
    ledger.update_meta(num_trials=3)
    failed = make_record(1, status="failed", score=None, error="FileNotFoundError: no data")
    ledger.write(make_record(0))
    ledger.write(failed)
    ledger.write(make_record(2, status="timeout", score=None, error="timed out after 3 s"))
    parent = tracker.start_parent("p", {}, {}, {})
    sync_ledger(tracker, ledger, parent)
    failed_run = ledger.read(1).mlflow_run_id

    kept = supersede_failed(tracker, ledger, parent, ledger.records(), 3)
    assert [r.index for r in kept] == [0] and ledger.read(1) is None and ledger.read(2) is None  # failed and timed out
    assert tracker.delete_stale_children(parent, {0}) == []  # the failed runs are no stale runs: they stay
    retry = make_record(1, attempts=2, started_at="2025-03-01T11:00:00+00:00")
    ledger.write(retry)  # the retries' workers
    ledger.write(make_record(2, attempts=2, started_at="2025-03-01T11:00:00+00:00"))
    assert sync_ledger(tracker, ledger, parent) == 2
    retried_run = ledger.read(1).mlflow_run_id

    assert retried_run != failed_run
    old, new = tracker.client.get_run(failed_run), tracker.client.get_run(retried_run)
    assert (old.info.status, old.data.tags["showwork.superseded"], old.data.tags["showwork.attempt"]) == ("FAILED", "1", "1")
    assert new.info.status == "FINISHED" and new.data.tags["showwork.attempt"] == "2"
    assert "showwork.superseded" not in new.data.tags
    assert tracker.children(parent)[1].info.run_id == retried_run  # the trial's run is its last attempt's
    assert len(child_runs(tracker, parent)) == 5  # trial 0, and both attempts of trials 1 and 2
    assert sync_ledger(Tracker(tracker.tracking_uri, tracker.experiment_name), ledger, parent) == 0
    assert ledger.superseded()[1][0].mlflow_run_id == failed_run  # the ledger's earlier attempt names its run
    family = from_mlflow(tracker.tracking_uri, "search-x")  # a report of the MLflow runs counts the last attempt too
    assert family.statuses == ("finished",) * 3 and family.trial_attempts == (1, 2, 2) and family.n_retried == 2


def test_the_runs_of_an_abandoned_attempt_are_tagged_and_left_out_of_the_report(tracker):
    """Issue 35 item 3: a search begun again under its name after its ledger was removed: the earlier attempt's
    runs (parent, trials, re-runs) are tagged showwork.abandoned, and reading the experiment finds the current one."""
    from showwork.report.sources_mlflow import from_mlflow
    from showwork.tracking.mlflow_format import LEDGER_TAG, RERUN_OF_TAG

    here, elsewhere = "/data/searches/search-x", "/other/searches/search-x"
    old_id, new_id, other_id = "a" * 32, "b" * 32, "c" * 32
    old = tracker.start_parent("search-x", {}, {LEDGER_TAG: here}, {}, search_id=old_id)
    old_trial = tracker.log_trial(old, make_record(0, score=0.1))
    reruns = tracker.client.create_run(tracker.experiment_id, tags={"mlflow.parentRunId": old, RERUN_OF_TAG: old}).info.run_id
    rerun = tracker.client.create_run(tracker.experiment_id, tags={"mlflow.parentRunId": reruns}).info.run_id
    other = tracker.start_parent("search-x", {}, {LEDGER_TAG: elsewhere}, {}, search_id=other_id)  # another storage folder's

    new = tracker.start_parent("search-x", {}, {LEDGER_TAG: here}, {}, search_id=new_id)
    new_trial = tracker.log_trial(new, make_record(0, score=0.9))
    tagged = tracker.abandon_other_attempts(new_id, here)
    assert sorted(tagged) == sorted([old, old_trial, reruns, rerun])
    assert tagged[-1] == old  # the attempt's parent last: tagged, it says its runs are
    assert tracker.abandon_other_attempts(new_id, here) == []  # tagged once
    for run_id in (old, old_trial, reruns, rerun):
        assert tracker.client.get_run(run_id).data.tags["showwork.abandoned"] == new_id
    for run_id in (new, new_trial, other):
        assert "showwork.abandoned" not in tracker.client.get_run(run_id).data.tags

    with pytest.raises(InputError, match="holds 2 showwork searches"):  # the current one and the other folder's
        from_mlflow(tracker.tracking_uri, "search-x")
    tracker.client.delete_run(other)
    family = from_mlflow(tracker.tracking_uri, "search-x")
    assert family.meta["parent_run_id"] == new and list(family.scores) == [pytest.approx(0.9)]
    with pytest.raises(InputError, match="abandoned attempt"):
        from_mlflow(tracker.tracking_uri, old)


def test_a_retry_stopped_between_tagging_the_run_and_moving_the_record_leaves_one_run_per_attempt(tracker, tmp_path):
    """The driver tags the failed run superseded, then moves the record aside; killed between the two, the record still
    counts: the next replay makes its run the trial's again (no second run), and the next retry tags it again."""
    from showwork.run.driver import supersede_failed

    ledger = Ledger(tmp_path / "runs", "search-x")
    ledger.update_meta(num_trials=1)
    ledger.write(make_record(0, status="failed", score=None, error="OSError: disk full"))
    parent = tracker.start_parent("p", {}, {}, {})
    sync_ledger(tracker, ledger, parent)
    failed_run = ledger.read(0).mlflow_run_id
    tracker.supersede_child(parent, ledger.read(0), 1)  # ... and the driver is killed here

    again = Tracker(tracker.tracking_uri, tracker.experiment_name)  # the next driver
    sync_ledger(again, ledger, parent)
    assert ledger.read(0).mlflow_run_id == failed_run and len(child_runs(tracker, parent)) == 1
    assert "showwork.superseded" not in tracker.client.get_run(failed_run).data.tags
    assert again.children(parent)[0].info.run_id == failed_run  # the trial's run again, as the ledger says

    supersede_failed(again, ledger, parent, ledger.records(), 1)
    assert [r.info.run_id for r in child_runs(tracker, parent)] == [failed_run]
    assert tracker.client.get_run(failed_run).data.tags["showwork.superseded"] == "1"
    assert [r.mlflow_run_id for r in ledger.superseded()[0]] == [failed_run] and ledger.read(0) is None

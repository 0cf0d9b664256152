"""`showwork search` against a real MLflow tracking server on PostgreSQL, through outages; and concurrency.

One PostgreSQL cluster (``initdb`` + ``pg_ctl``, 127.0.0.1, a free port) and one ``mlflow server``
on it (artifacts served from a temporary directory, one worker) serve the whole module; each test
uses a search (an MLflow experiment) of its own. The outages are real: the server's process group
is killed and started again on the same port, PostgreSQL is stopped and started again.

Whatever happens to MLflow, the ledger has every trial, and once MLflow is back (at the end of the
search, or on ``showwork search --resume``) the projection is complete: one FINISHED child run per
trial with its whole per-epoch history, the parent FINISHED, each record pointing at its child.

The searches run ``python -m showwork search`` in a process group of their own, so that the test
can act while they run and end their Ray leftovers afterwards.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from showwork.space import load_search_spec
from showwork.store import Ledger

from servers import MlflowServer, Postgres, free_port

pytestmark = [pytest.mark.slow, pytest.mark.integration]


# ---------------------------------------------------------------- fixtures


# the module fixture `environment` is in conftest.py


@pytest.fixture(scope="module")
def postgres(environment):
    cluster = Postgres()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.cleanup()


@pytest.fixture(scope="module")
def server(postgres, tmp_path_factory):
    folder = tmp_path_factory.mktemp("mlflow-server")
    mlflow = MlflowServer(postgres.create_database("mlflow"), folder / "artifacts", folder / "server.log")
    mlflow.start(timeout=180)  # the first start creates the schema
    try:
        yield mlflow
    finally:
        mlflow.stop()


@pytest.fixture
def up(server, postgres):
    """The server and its database, running before the test (whatever an earlier test left)."""
    if not postgres.running():
        postgres.start()
    if server.process is None or server.process.poll() is not None:
        server.process = None
        server.start()
    yield server
    if not postgres.running():
        postgres.start()


# ---------------------------------------------------------------- a search in a process of its own

EPOCHS = 5

# Five epochs; while the file data["hold"] exists a trial waits after each epoch, so that a test
# can keep the search going until MLflow is back.
TRAINABLE = f"""
    import time
    from pathlib import Path


    def metrics(config, epoch):
        return {{"val_accuracy": config["quality"] * (epoch + 1) / {EPOCHS},
                 "loss": 1.0 / (epoch + 1) + config["width"] / 1000}}


    def train(config, *, seed, device, reporter, data):
        hold = Path(data["hold"])
        for epoch in range({EPOCHS}):
            time.sleep(float(data.get("sleep", 0.4)))
            reporter(epoch=epoch, **metrics(config, epoch))
            deadline = time.monotonic() + 120
            while hold.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        return {{"val_accuracy": config["quality"]}}
"""


def space_file(folder: Path, name: str, num_trials: int = 8, sleep: float = 0.4) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "outage.py").write_text(textwrap.dedent(TRAINABLE).lstrip())
    path = folder / f"{name}.yaml"
    path.write_text(textwrap.dedent(f"""
        name: {name}
        family: outage.py:train
        data: {{hold: {json.dumps(str(folder / 'hold'))}, sleep: {sleep}}}
        metric: {{name: val_accuracy, mode: max}}
        num_trials: {num_trials}
        seed: 3
        max_concurrent: 2
        max_retries: 1
        space:
          quality: {{distribution: uniform, low: 0.5, high: 1.0}}
          width: {{distribution: int_uniform, low: 8, high: 64}}
    """).lstrip())
    return path


@dataclass
class Driver:
    """``showwork search`` running in its own session; ``finish()`` waits and ends its leftovers."""

    process: subprocess.Popen
    out: Path
    err: Path

    @classmethod
    def start(cls, folder: Path, space: Path, storage: Path, uri: str, *extra) -> "Driver":
        command = [sys.executable, "-m", "showwork", "search", str(space), "--no-progress",
                   "--storage", str(storage), "--tracking-uri", uri, *map(str, extra)]
        out, err = folder / "driver.out", folder / "driver.err"
        with out.open("w") as stdout, err.open("w") as stderr:
            process = subprocess.Popen(command, cwd=folder, stdout=stdout, stderr=stderr, stdin=subprocess.DEVNULL,
                                       start_new_session=True)
        return cls(process, out, err)

    def running(self) -> bool:
        return self.process.poll() is None

    def finish(self, timeout: float = 240) -> tuple[int, str, str]:
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.process.pid, signal.SIGKILL)  # Ray processes left in its session
            self.process.wait()
        out, err = self.out.read_text(), self.err.read_text()
        assert code is not None, f"the search did not end within {timeout:.0f} s:\n{err[-3000:]}"
        return code, out, err


def records(storage: Path, name: str) -> int:
    return len(list((storage / name / "trials").glob("[0-9]*.json")))


def wait_for(condition, timeout: float, what: str, driver: Driver | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if driver is not None:
            assert driver.running(), f"the search ended before {what}:\n{driver.err.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"not within {timeout:.0f} s: {what}"
        time.sleep(0.1)


def expected_metrics(config: dict, epoch: int) -> dict[str, float]:
    return {"val_accuracy": config["quality"] * (epoch + 1) / EPOCHS, "loss": 1.0 / (epoch + 1) + config["width"] / 1000}


def assert_complete_projection(uri: str, storage: Path, space: Path, num_trials: int = 8) -> None:
    """Every trial in the ledger and, once, completely, in MLflow under the one FINISHED parent."""
    from mlflow.entities import ViewType
    from mlflow.tracking import MlflowClient

    spec = load_search_spec(space)
    ledger = Ledger(storage, spec.name)
    by_index = {r.index: r for r in ledger.records()}
    assert sorted(by_index) == list(range(num_trials))
    assert records(storage, spec.name) == num_trials
    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name(spec.name)
    runs = client.search_runs([experiment.experiment_id], run_view_type=ViewType.ALL, max_results=1000)
    parent_id = ledger.read_meta()["parent_run_id"]
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    assert [p.info.run_id for p in parents] == [parent_id]
    assert parents[0].info.status == "FINISHED"
    assert parents[0].data.metrics["trials_finished"] == num_trials
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent_id]
    assert len(runs) == 1 + num_trials and len(children) == num_trials, "a trial has no child run, or several"
    indexed = {int(r.data.tags["showwork.trial_index"]): r for r in children}
    assert sorted(indexed) == list(range(num_trials))
    for index, record in by_index.items():
        run = indexed[index]
        assert record.status == "finished", record.error
        assert record.score == record.params["quality"]
        assert run.info.status == "FINISHED", (index, run.info.status)
        assert run.data.tags["showwork.logged"] == "1"
        assert run.data.metrics["best_val_score"] == record.score
        assert record.mlflow_run_id == run.info.run_id
        assert run.info.lifecycle_stage == "active"
        for key in ("val_accuracy", "loss"):
            history = sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id, key))
            assert history == [(e, expected_metrics(record.params, e)[key]) for e in range(EPOCHS)], (index, key)
            assert [row[key] for row in record.history] == [expected_metrics(record.params, e)[key] for e in range(EPOCHS)]


def warnings_of(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("showwork: warning:")]


def assert_outage_warned(err: str, url: str) -> None:
    """At least one warning names the server, says that the ledger keeps the results and how to replay them."""
    said = [w for w in warnings_of(err) if url in w and "ledger keeps the results" in w and "--resume" in w]
    assert said, f"no warning names {url}, the ledger and --resume:\n{err[-3000:]}"
    assert "showwork sync" not in err  # no such command
    assert "Traceback" not in err, err[-3000:]


# ---------------------------------------------------------------- item 3: outages of the tracking server


def test_a_search_survives_the_tracking_server_restarting(up, tmp_path):
    """(a) The server is killed once two trials are recorded and started again while the search goes on."""
    space = space_file(tmp_path, "server-restart")
    storage, hold = tmp_path / "runs", tmp_path / "hold"
    driver = Driver.start(tmp_path, space, storage, up.url)
    try:
        wait_for(lambda: records(storage, "server-restart") >= 2, 120, "two trial records", driver)
        up.stop()
        killed = time.monotonic()
        time.sleep(3)  # trials report epochs and end while the server is down
        assert driver.running(), "the search ended before the server came back"
        hold.touch()  # keep the search going until the server answers again
        # Down long enough for one write to fail all its retries (7.5 s), however fast the server starts.
        time.sleep(max(0.0, killed + 9 - time.monotonic()))
        up.start()
        assert driver.running(), "the search ended before the server came back"
    finally:
        hold.unlink(missing_ok=True)
    code, out, err = driver.finish()
    assert code == 0, err[-3000:]
    assert "search server-restart: 8 finished, 0 failed, 0 timed out of 8" in out
    assert_outage_warned(err, up.url)
    assert_complete_projection(up.url, storage, space)


def test_a_search_ends_while_the_server_is_down_and_resume_replays_it(up, tmp_path):
    """(b) The server is killed mid-search and stays down past the end; --resume replays everything."""
    space = space_file(tmp_path, "server-down")
    storage = tmp_path / "runs"
    driver = Driver.start(tmp_path, space, storage, up.url)
    try:
        wait_for(lambda: records(storage, "server-down") >= 2, 120, "two trial records", driver)
        up.stop()
        code, out, err = driver.finish()
    finally:
        up.start()
    assert code == 0, err[-3000:]
    assert "search server-down: 8 finished, 0 failed, 0 timed out of 8" in out
    assert_outage_warned(err, up.url)
    # One call waits through its retries, warned of once (issue 23 item 12; each retry was a line); after
    # it, MLflow counts as down and no write waits again (each used to: the search spent 8 s on each
    # queued write after its trials had ended).
    assert len([w for w in warnings_of(err) if "; retrying (up to 4 more tries" in w]) == 1, err[-3000:]
    # The projection's writes that fail while MLflow is down are counted, not each warned about.
    assert len([w for w in warnings_of(err) if "the ledger has the result" in w]) == 1, err[-3000:]
    assert records(storage, "server-down") == 8
    attempts = sorted(p.name for p in (storage / "server-down" / "attempts").iterdir())

    (tmp_path / "resume").mkdir()
    resumed = Driver.start(tmp_path / "resume", space, storage, up.url, "--resume")
    code, out, err = resumed.finish()
    assert code == 0, err[-3000:]
    assert "search server-down: 8 finished, 0 failed, 0 timed out of 8" in out
    assert warnings_of(err) == []
    assert sorted(p.name for p in (storage / "server-down" / "attempts").iterdir()) == attempts  # nothing ran again
    assert_complete_projection(up.url, storage, space)


def test_a_search_survives_postgresql_restarting(up, postgres, tmp_path):
    """(c) The server stays up; its PostgreSQL is stopped mid-search and started again a few seconds later."""
    space = space_file(tmp_path, "database-restart")
    storage, hold = tmp_path / "runs", tmp_path / "hold"
    driver = Driver.start(tmp_path, space, storage, up.url)
    try:
        wait_for(lambda: records(storage, "database-restart") >= 2, 120, "two trial records", driver)
        postgres.stop("fast")  # every open connection of the server is cut
        time.sleep(4)
        assert driver.running(), "the search ended before the database came back"
        hold.touch()
        postgres.start()
    finally:
        hold.unlink(missing_ok=True)
    code, out, err = driver.finish()
    assert code == 0, err[-3000:]
    assert "search database-restart: 8 finished, 0 failed, 0 timed out of 8" in out
    assert "Traceback" not in err, err[-3000:]
    assert_complete_projection(up.url, storage, space)


def test_a_password_in_the_tracking_uri_is_neither_kept_nor_shown(up, tmp_path):
    """A URI with user and password works, and neither the output nor the storage folder holds the password."""
    secret = "pw-sw-8c1f0e"
    uri = up.url.replace("http://", f"http://someone:{secret}@")
    storage = tmp_path / "runs"
    code, out, err = Driver.start(tmp_path, space_file(tmp_path, "with-password", num_trials=2, sleep=0.05),
                                  storage, uri).finish()
    assert code == 0, err[-3000:]
    assert "search with-password: 2 finished" in out
    assert secret not in out and secret not in err
    assert Ledger(storage, "with-password").read_meta()["tracking_uri"] == up.url
    leaked = [path for path in storage.rglob("*") if path.is_file() and secret.encode() in path.read_bytes()]
    assert not leaked  # Ray Tune's own files included (it pickles the driver's callbacks)


@pytest.mark.parametrize("outage", ["closed port", "database down", "database down before the first request"])
def test_an_unreachable_server_is_refused_before_any_trial(up, postgres, tmp_path, outage):
    """(d) Exit 2 with one `showwork: error:` line naming the URI; no ledger directory, no Ray.

    "database down": the server has been serving and its PostgreSQL stops; it answers 503.
    "database down before the first request": a server started but not yet asked anything when its
    PostgreSQL stops; its worker connects on the first request and retries for minutes, so the
    probe's time limit (5 s) answers.
    """
    import io

    from mlflow.tracking import MlflowClient

    from showwork.cli import main

    space = space_file(tmp_path, "unreachable")
    storage = tmp_path / "runs"
    fresh = None
    if outage == "closed port":
        url = f"http://127.0.0.1:{free_port()}"
    elif outage == "database down":
        url = up.url
        MlflowClient(tracking_uri=url).search_experiments(max_results=1)  # the worker is connected
    else:
        fresh = MlflowServer(up.backend_uri, tmp_path / "artifacts", tmp_path / "fresh-server.log")
        fresh.start()
        url = fresh.url
    try:
        if outage != "closed port":
            postgres.stop("fast")
        out, err = io.StringIO(), io.StringIO()
        start = time.perf_counter()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["search", str(space), "--no-progress", "--storage", str(storage), "--tracking-uri", url])
        elapsed = time.perf_counter() - start
    finally:
        if fresh is not None:
            fresh.stop()
        if not postgres.running():
            postgres.start()
    err = err.getvalue()
    assert code == 1  # an outage, not bad input
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("showwork: error: "), err
    assert f"cannot reach the MLflow tracking server at {url}" in lines[0]
    if outage == "closed port":
        assert "connection refused" in lines[0]
    elif outage == "database down":  # the server answers, so the error says what it answered
        assert "the server answered HTTP 503" in lines[0] and "database" in lines[0], lines[0]
        assert "start it" not in lines[0]
    else:
        assert "no answer in time" in lines[0], lines[0]
    assert not storage.exists()  # not the search's folder, its lock, its Ray results
    ray = sys.modules.get("ray")
    assert ray is None or not ray.is_initialized()
    assert elapsed < 30


def test_after_a_call_fails_every_attempt_later_calls_do_not_wait(environment, tmp_path):
    """The tracker's retries: full for the first failing call, one attempt while MLflow stays down."""
    import warnings

    from showwork.tracking.errors import TrackingUnavailableError
    from showwork.tracking.tracker import Tracker

    tracker = Tracker(f"sqlite:///{tmp_path / 'mlflow.db'}", "down", attempts=3, backoff_s=0.2)
    calls = []

    def refused():
        calls.append(time.monotonic())
        raise ConnectionRefusedError("connection refused")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(TrackingUnavailableError, match="failed 3 times .connection refused.*--resume"):
            tracker.mlflow.call("a write", refused)
        assert len(calls) == 3 and len(caught) == 1  # two retries, warned once (issue 23 item 12)
        start = time.monotonic()
        for _ in range(5):
            with pytest.raises(TrackingUnavailableError, match="not retried while MLflow is down.*--resume"):
                tracker.mlflow.call("a write", refused)
        assert len(calls) == 8 and len(caught) == 1 and time.monotonic() - start < 0.2
        assert tracker.mlflow.call("a write", lambda: "answered") == "answered"  # MLflow is back
        with pytest.raises(TrackingUnavailableError, match="failed 3 times"):
            tracker.mlflow.call("a write", refused)  # a new outage: full retries again
        assert len(calls) == 11 and len(caught) == 2  # a new outage: its retries warned once again
    assert not any("showwork sync" in str(w.message) for w in caught)


# ---------------------------------------------------------------- item 5: concurrency

FAST_EPOCHS = 30
# Each trial waits (at most 60 s) until all 8 have started, then reports its 30 epochs at once:
# the 8 report together instead of one after the other as their worker processes come up.
FAST_TRAINABLE = f"""
    import time
    from pathlib import Path


    def metrics(config, epoch):
        return {{"val_accuracy": config["quality"] * (epoch + 1) / {FAST_EPOCHS},
                 "loss": config["width"] / (epoch + 1),
                 "lr": config["quality"] / 10 + epoch}}


    def train(config, *, seed, device, reporter, data):
        started = Path(data["started"])
        (started / str(seed)).touch()
        deadline = time.monotonic() + 60
        while len(list(started.iterdir())) < 8 and time.monotonic() < deadline:
            time.sleep(0.02)
        peers = len(list(started.iterdir()))
        for epoch in range({FAST_EPOCHS}):
            reporter(epoch=epoch, **metrics(config, epoch))
        return {{"val_accuracy": config["quality"], "peers": peers}}
"""


def fast_metrics(config: dict, epoch: int) -> dict[str, float]:
    return {"val_accuracy": config["quality"] * (epoch + 1) / FAST_EPOCHS,
            "loss": config["width"] / (epoch + 1), "lr": config["quality"] / 10 + epoch}


def fast_space(folder: Path, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "fast.py").write_text(textwrap.dedent(FAST_TRAINABLE).lstrip())
    (folder / "started").mkdir()
    path = folder / f"{name}.yaml"
    path.write_text(textwrap.dedent(f"""
        name: {name}
        family: fast.py:train
        data: {{started: {json.dumps(str(folder / 'started'))}}}
        metric: {{name: val_accuracy, mode: max}}
        num_trials: 8
        seed: 9
        max_concurrent: 8
        resources: {{cpus: 0.25}}
        space:
          quality: {{distribution: uniform, low: 0.5, high: 1.0}}
          width: {{distribution: int_uniform, low: 8, high: 64}}
    """).lstrip())
    return path


def assert_every_point(uri: str, storage: Path, name: str) -> None:
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    ledger = Ledger(storage, name)
    children = {}
    parent = ledger.read_meta()["parent_run_id"]
    experiment = client.get_experiment_by_name(name)
    for run in client.search_runs([experiment.experiment_id], max_results=1000):
        if run.data.tags.get("mlflow.parentRunId") == parent:
            children[int(run.data.tags["showwork.trial_index"])] = run
    assert sorted(children) == list(range(8))
    for record in ledger.records():
        run = children[record.index]
        assert run.info.status == "FINISHED" and record.mlflow_run_id == run.info.run_id
        if (os.cpu_count() or 1) >= 2:  # 8 trials of 0.25 CPU fit at once: they reported together
            assert record.metrics["peers"] == 8, record.metrics
        for key in ("val_accuracy", "loss", "lr"):
            history = sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id, key))
            assert history == [(e, fast_metrics(record.params, e)[key]) for e in range(FAST_EPOCHS)], (record.index, key)


@pytest.mark.parametrize("store", ["sqlite", "server"])
def test_eight_concurrent_trials_lose_no_metric_point(environment, request, tmp_path, store):
    if store == "server":
        uri = request.getfixturevalue("up").url
    else:
        uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    name = f"concurrent-{store}"
    space = fast_space(tmp_path, name)
    storage = tmp_path / "runs"
    driver = Driver.start(tmp_path, space, storage, uri)
    code, out, err = driver.finish()
    assert code == 0, err[-3000:]
    assert f"search {name}: 8 finished, 0 failed, 0 timed out of 8" in out
    assert "database is locked" not in (out + err).lower()
    assert warnings_of(err) == [], err[-3000:]
    assert_every_point(uri, storage, name)


STRESS_PROCESSES = 8
STRESS_EPOCHS = 50


def _stress_worker(uri: str, parent: str, index: int, barrier, errors) -> None:
    """One process: its own Tracker, its own child run, 50 epoch batches of 3 metrics."""
    import traceback
    import warnings

    try:
        from showwork.tracking.tracker import Tracker

        tracker = Tracker(uri, "stress")
        tracker.check_reachable()
        barrier.wait(timeout=120)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            run = tracker.child_run(parent, index)
            for epoch in range(STRESS_EPOCHS):
                tracker.log_epoch(run, {"a": index + epoch, "b": index * epoch / 7, "c": -epoch}, epoch)
        for w in caught:
            errors.put(f"process {index}: warning: {w.message}")
    except BaseException:  # noqa: BLE001 - reported to the test
        errors.put(f"process {index}: {traceback.format_exc()}")


def test_eight_processes_log_to_one_sqlite_file(environment, tmp_path):
    from mlflow.tracking import MlflowClient

    from showwork.tracking.tracker import Tracker

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    parent = Tracker(uri, "stress").start_parent("stress", {}, {}, {})
    context = multiprocessing.get_context("spawn")
    barrier, errors = context.Barrier(STRESS_PROCESSES), context.Queue()
    processes = [context.Process(target=_stress_worker, args=(uri, parent, i, barrier, errors))
                 for i in range(STRESS_PROCESSES)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=240)
    alive = [p for p in processes if p.is_alive()]
    for process in alive:
        process.kill()
    reported = []
    while not errors.empty():
        reported.append(errors.get())
    assert not alive, "a process did not end in 240 s"
    assert [p.exitcode for p in processes] == [0] * STRESS_PROCESSES
    problems = [r for r in reported if not r.split(": ", 1)[1].startswith("warning:")]
    assert problems == [], "\n".join(problems)  # no exception escaped, "database is locked" included
    retries = len(reported) - len(problems)
    print(f"{retries} retry warnings in {STRESS_PROCESSES} processes")
    client = MlflowClient(tracking_uri=uri)
    tracker = Tracker(uri, "stress")
    children = tracker.children(parent)
    assert sorted(children) == list(range(STRESS_PROCESSES))
    for index, run in children.items():
        for key, value in (("a", lambda e: index + e), ("b", lambda e: index * e / 7), ("c", lambda e: -e)):
            history = sorted((m.step, m.value) for m in client.get_metric_history(run.info.run_id, key))
            assert history == [(e, float(value(e))) for e in range(STRESS_EPOCHS)], (index, key)

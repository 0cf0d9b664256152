"""The report's MLflow side: families read from a tracking store (from_mlflow), reports logged on a run (log_report)."""

from __future__ import annotations

import contextlib
import html
import json
import math
import os
import re
import shutil
import socket
import urllib.parse
import urllib.request
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

from showwork.errors import InputError
from showwork.escaping import html_text, markdown_text
from showwork.redaction import strip_credentials
from showwork.report import ReportSettings, analyze, log_report, write_report
from showwork.report.inputs import from_ledger
from showwork.report.sources_mlflow import from_mlflow
from showwork.space import load_search_spec
from showwork.store import Ledger
from showwork.tracking.errors import TrackingUnavailableError
from showwork.tracking.ledger_sync import sync_ledger
from showwork.tracking.mlflow_format import runs_table_path
from showwork.tracking.tracker import Tracker

from helpers import chromium, cli_in_process, page_dom, page_text, trial_record, write_search
from servers import MlflowServer

os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

pytestmark = pytest.mark.integration

SPEC_YAML = """\
name: sst-bow
family: bow_sst2
metric: {name: val_acc, mode: max}
num_trials: 20
seed: 5
space:
  optimizer.lr: {distribution: loguniform, low: 1e-5, high: 1e-1}
  model.layers: {distribution: int_uniform, low: 1, high: 3}
  act: {distribution: categorical, choices: [relu, gelu]}
  seed: {distribution: int_uniform, low: 0, high: 9}
"""
ENVIRONMENT = {"python": "3.11.9", "cpu_model": "Test CPU", "packages": {"numpy": "2.0"}}


def records():
    """Four trials: finished, finished, failed, timed out without runtime (each with a reserved-name
    hyperparameter, ``seed``, once written: :func:`project_search`)."""
    return [
        trial_record(0, score=0.71),
        trial_record(1, score=0.83),
        trial_record(2, status="failed", score=None, test_score=None, error="RuntimeError: diverged"),
        trial_record(3, status="timeout", score=None, runtime_s=0.0),
    ]


# the module fixture `template_db` (an empty MLflow store to copy) is in conftest.py


def fresh_store(directory: Path, template_db: Path) -> str:
    shutil.copy(template_db, directory / "mlflow.db")
    return f"sqlite:///{directory / 'mlflow.db'}"


def project_search(uri: str, storage: Path, spec_path: Path) -> tuple[Tracker, str]:
    """What ``showwork search`` writes, without Ray: the ledger, the parent run (as search.py makes it), the trials."""
    spec = load_search_spec(spec_path, overrides={"num_trials": 4})  # as if --num-trials 4 was given
    ledger = Ledger(storage, spec.name)
    tracker = Tracker(uri, spec.name, backoff_s=0.01)
    parent = tracker.start_parent(
        run_name=spec.name,
        params={"seed": spec.seed, "num_trials": spec.num_trials, "family": spec.family,
                "metric": spec.metric.name, "mode": spec.metric.mode},
        tags={"showwork.search": spec.name},
        artifacts={"search.yaml": spec.source_text},
        environment=ENVIRONMENT,
        space=spec.space,
    )
    write_search(ledger, spec, records(), tracking_uri=strip_credentials(uri), parent_run_id=parent,
                 experiment_id=tracker.experiment_id, environment=ENVIRONMENT)  # as the driver records them
    assert sync_ledger(tracker, ledger, parent) == 4
    tracker.finish_parent(parent, "FINISHED", {"trials_finished": 2})
    return tracker, parent


@pytest.fixture(scope="module")
def search(tmp_path_factory, template_db):
    """A finished showwork search in a SQLite store: ``(uri, storage, parent run id, tracker)``; read only."""
    root = tmp_path_factory.mktemp("search")
    (root / "search.yaml").write_text(SPEC_YAML)
    uri = fresh_store(root, template_db)
    tracker, parent = project_search(uri, root / "runs", root / "search.yaml")
    return uri, root / "runs", parent, tracker


def assert_same_trials(mlflow_family, ledger_family):
    np.testing.assert_array_equal(mlflow_family.scores, ledger_family.scores)  # NaN == NaN here
    np.testing.assert_array_equal(mlflow_family.test_scores, ledger_family.test_scores)
    np.testing.assert_array_equal(mlflow_family.runtimes_s, ledger_family.runtimes_s)
    assert mlflow_family.statuses == ledger_family.statuses
    assert mlflow_family.params == ledger_family.params
    assert (mlflow_family.name, mlflow_family.metric, mlflow_family.minimize) == (
        ledger_family.name, ledger_family.metric, ledger_family.minimize)
    assert mlflow_family.spec == ledger_family.spec


def test_a_showwork_search_reads_the_same_from_mlflow_as_from_its_ledger(search):
    uri, storage, parent, _ = search
    ledger_family = from_ledger(storage, "sst-bow")
    assert ledger_family.statuses == ("finished", "finished", "failed", "timeout")
    by_name = from_mlflow(uri, "sst-bow")
    by_run = from_mlflow(uri, parent)
    assert_same_trials(by_name, ledger_family)
    assert_same_trials(by_run, ledger_family)
    assert by_name.n_failed == 2 and by_name.best_trial() == 1
    assert by_name.params[1]["seed"] == Ledger(storage, "sst-bow").read(1).params["seed"]  # hp.seed back to seed
    assert "trial_index" not in by_name.params[0]
    assert by_name.spec["num_trials"] == 4 and by_name.spec["seed"] == 5  # the parent's params beat the YAML
    meta = by_run.meta
    assert meta["tracking_uri"] == uri and meta["parent_run_id"] == parent and meta["experiment"] == "sst-bow"
    assert meta["environment"] == ENVIRONMENT and meta["seed"] == 5 and meta["num_trials"] == 4
    assert meta["spec_yaml"] == SPEC_YAML and len(meta["run_ids"]) == 4
    # final metrics the trial returned: "epochs" (not in the history), no bookkeeping keys
    assert by_name.trial_metrics[0]["epochs"] == 3 and "runtime_s" not in by_name.trial_metrics[0]
    assert from_mlflow(uri, "sst-bow", label="BoW").name == "BoW"


def test_a_showwork_search_with_another_score_direction_and_runtime(search):
    uri, _, _, tracker = search
    experiment_id = tracker.client.get_experiment_by_name("sst-bow").experiment_id
    family = from_mlflow(uri, experiment_id, score="val_acc", minimize=True, runtime="gpu_seconds")
    expected = [r.history[-1]["val_acc"] if r.status == "finished" else math.nan for r in records()]
    np.testing.assert_array_equal(family.scores, expected)  # MLflow keeps the last epoch's value
    assert family.metric == "val_acc" and family.minimize
    np.testing.assert_array_equal(family.runtimes_s, [r.gpu_seconds for r in records()])


def test_unfinished_and_deleted_trial_runs_are_left_out(tmp_path, template_db):
    (tmp_path / "search.yaml").write_text(SPEC_YAML)
    uri = fresh_store(tmp_path, template_db)
    tracker, parent = project_search(uri, tmp_path / "runs", tmp_path / "search.yaml")
    tracker.child_run(parent, 4)  # a trial in flight: RUNNING, no record yet
    tracker.client.delete_run(tracker.children(parent)[0].info.run_id)
    family = from_mlflow(uri, "sst-bow")
    assert family.statuses == ("finished", "failed", "timeout")
    np.testing.assert_array_equal(family.scores, [records()[1].score, math.nan, math.nan])
    # without its status tag, a FAILED run is a failed trial
    tracker.client.delete_tag(tracker.children(parent)[3].info.run_id, "showwork.status")
    assert from_mlflow(uri, "sst-bow").statuses == ("finished", "failed", "failed")
    tracker.client.delete_experiment(tracker.experiment_id)
    with pytest.raises(InputError, match="experiment 'sst-bow' is deleted"):
        from_mlflow(uri, "sst-bow")


def test_runtime_without_a_runtime_metric_is_the_runs_wall_time(tmp_path, template_db):
    uri = fresh_store(tmp_path, template_db)
    tracker = Tracker(uri, "bare", backoff_s=0.01)
    parent = tracker.start_parent("bare", {"metric": "acc", "mode": "max"}, {}, {})
    child = tracker.child_run(parent, 0, start_time="2025-01-01T00:00:00+00:00")
    tracker.client.log_metric(child, "best_val_score", 0.5)
    tracker.client.set_terminated(child, "FINISHED", end_time=int(datetime.fromisoformat("2025-01-01T00:01:30+00:00").timestamp() * 1000))
    family = from_mlflow(uri, "bare")
    assert family.statuses == ("finished",) and family.scores[0] == 0.5 and family.metric == "acc"
    assert family.runtimes_s[0] == 90.0 and math.isnan(family.test_scores[0])
    assert family.spec is None and "environment" not in family.meta


@pytest.fixture(scope="module")
def plain(tmp_path_factory, template_db):
    """An experiment logged by a plain MLflow loop: ``(uri, client, experiment id, run ids)``; read only."""
    uri = fresh_store(tmp_path_factory.mktemp("plain"), template_db)
    client = Tracker(uri, "unused").client
    experiment = client.create_experiment("plain-loop")
    start = 1_700_000_000_000
    runs = []
    # (final val_acc, status, seconds); created out of order to check the order by start time
    for i, (score, status, seconds) in sorted(
        enumerate([(0.70, "FINISHED", 10), (0.80, "FINISHED", 20), (None, "FAILED", 5), (math.nan, "FINISHED", 7)]),
        key=lambda item: -item[0],
    ):
        run = client.create_run(experiment, start_time=start + 1000 * i, run_name=f"run-{i}")
        client.log_param(run.info.run_id, "lr", 10 ** -(i + 1))
        client.log_param(run.info.run_id, "optimizer", "adam")
        client.log_metric(run.info.run_id, "val_acc", 0.1, step=0)
        if score is not None:
            client.log_metric(run.info.run_id, "val_acc", score, step=1)
        client.log_metric(run.info.run_id, "test_acc", 0.5 + i / 10)
        client.set_terminated(run.info.run_id, status, end_time=start + 1000 * i + 1000 * seconds)
        runs.append((i, run.info.run_id))
    runs = [run_id for _, run_id in sorted(runs)]
    nested = client.create_run(experiment, start_time=start + 500, tags={"mlflow.parentRunId": runs[0]})
    client.log_metric(nested.info.run_id, "val_acc", 0.99)
    client.set_terminated(nested.info.run_id)
    deleted = client.create_run(experiment, start_time=start + 100)
    client.log_metric(deleted.info.run_id, "val_acc", 0.98)
    client.delete_run(deleted.info.run_id)
    return uri, client, experiment, runs


def test_a_plain_mlflow_experiment_is_one_trial_per_top_level_run(plain):
    uri, _, experiment, runs = plain
    family = from_mlflow(uri, "plain-loop", score="val_acc", test="test_acc")
    assert family.statuses == ("finished", "finished", "failed", "failed")  # FAILED; FINISHED but NaN
    np.testing.assert_array_equal(family.scores, [0.70, 0.80, math.nan, math.nan])
    np.testing.assert_array_equal(family.runtimes_s, [10, 20, 5, 7])
    np.testing.assert_allclose(family.test_scores, [0.5, 0.6, 0.7, 0.8])
    assert family.params == tuple({"lr": 10 ** -(i + 1), "optimizer": "adam"} for i in range(4))
    assert family.metric == "val_acc" and not family.minimize and family.spec is None
    assert family.name == "plain-loop" and family.meta["run_ids"] == tuple(runs)
    by_id = from_mlflow(uri, experiment, score="val_acc", minimize=True)
    np.testing.assert_array_equal(by_id.scores, family.scores)
    assert by_id.minimize and by_id.best_trial() == 0 and by_id.test_scores is None
    # a parent run of another tool: its children are the trials
    nested = from_mlflow(uri, runs[0], score="val_acc")
    assert nested.n_trials == 1 and nested.scores[0] == 0.99 and nested.name == "run-0"


def test_errors_name_what_was_looked_for(plain, tmp_path):
    uri, client, _, runs = plain
    with pytest.raises(InputError, match=r"not a showwork search; name the score metric \(metrics: test_acc, val_acc\)"):
        from_mlflow(uri, "plain-loop")
    with pytest.raises(InputError, match=r"no run has the score metric 'f1' \(metrics: test_acc, val_acc\)"):
        from_mlflow(uri, "plain-loop", score="f1")
    with pytest.raises(InputError, match="no run has the runtime metric 'secs'"):
        from_mlflow(uri, "plain-loop", score="val_acc", runtime="secs")
    with pytest.raises(InputError, match=f"MLflow at {uri}: no experiment named 'nope' \\(experiments: .*'plain-loop'"):
        from_mlflow(uri, "nope")
    with pytest.raises(InputError, match="no experiment named '9999' and no experiment with that id"):
        from_mlflow(uri, "9999")
    with pytest.raises(InputError, match="no experiment named '0{32}' and no experiment with that id and no run with that id"):
        from_mlflow(uri, "0" * 32)  # MLflow alone would read it as experiment id 0
    with pytest.raises(InputError, match="no experiment named 'a{32}' and no run with that id"):
        from_mlflow(uri, "a" * 32)
    client.create_experiment("empty")
    with pytest.raises(InputError, match="experiment 'empty': no runs"):
        from_mlflow(uri, "empty", score="val_acc")
    with pytest.raises(InputError, match=f"parent run {runs[1]}: no child runs"):
        from_mlflow(uri, runs[1], score="val_acc")
    missing = tmp_path / "elsewhere" / "mlflow.db"
    with pytest.raises(InputError, match=f"no MLflow database at {missing}"):
        from_mlflow(f"sqlite:///{missing}", "plain-loop")
    assert not missing.parent.exists()  # nothing created
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(TrackingUnavailableError, match=f"cannot reach the MLflow database {junk}"):
        from_mlflow(f"sqlite:///{junk}", "plain-loop")


def test_an_unreachable_server_fails_fast():
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(TrackingUnavailableError, match=f"cannot reach the MLflow tracking server at http://127.0.0.1:{port}"):
        from_mlflow(f"http://127.0.0.1:{port}", "x", score="acc")


def test_a_trial_run_is_not_a_search(search):
    uri, _, parent, tracker = search
    child = tracker.children(parent)[1].info.run_id
    with pytest.raises(InputError, match=f"run {child} is trial 1 of a search, not its parent; pass the parent run {parent}"):
        from_mlflow(uri, child)


def test_two_searches_in_one_experiment_need_a_parent_run_id(tmp_path, template_db):
    uri = fresh_store(tmp_path, template_db)
    tracker = Tracker(uri, "twice", backoff_s=0.01)
    first = tracker.start_parent("twice", {}, {}, {})
    second = tracker.start_parent("twice", {}, {}, {})
    with pytest.raises(InputError, match=f"holds 2 showwork searches; pass one parent run id \\({first}, {second}\\)"):
        from_mlflow(uri, "twice")


def test_log_report_puts_a_directory_on_a_finished_run(search, tmp_path):
    _, _, parent, tracker = search
    assert tracker.client.get_run(parent).info.status == "FINISHED"
    report = tmp_path / "report"
    (report / "figures").mkdir(parents=True)
    (report / "report.md").write_text("# Tuning curves\n")
    (report / "figures" / "curve.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    tracker.log_report(parent, report)
    listed = {f.path: f.is_dir for f in tracker.client.list_artifacts(parent, "report")}
    assert listed == {"report/report.md": False, "report/figures": True}
    assert [f.path for f in tracker.client.list_artifacts(parent, "report/figures")] == ["report/figures/curve.png"]
    local = Path(tracker.client.download_artifacts(parent, "report/figures/curve.png", str(tmp_path / "back")))
    assert local.read_bytes() == (report / "figures" / "curve.png").read_bytes()
    tracker.log_report(parent, report / "figures", artifact_path="")  # at the run's root
    assert "curve.png" in {f.path for f in tracker.client.list_artifacts(parent)}
    with pytest.raises(InputError, match="is not a directory"):
        tracker.log_report(parent, report / "report.md")
    with pytest.raises(InputError, match="no run 'f+'"):
        tracker.log_report("f" * 32, report)


def test_log_report_retries_then_raises_the_tracking_error(search, tmp_path, monkeypatch):
    _, _, parent, tracker = search
    (tmp_path / "a.txt").write_text("a")
    calls = []
    real = tracker.client.log_artifacts

    def flaky(*args):
        calls.append(args)
        if len(calls) == 1:
            raise ConnectionRefusedError("connection refused")
        return real(*args)

    monkeypatch.setattr(tracker.client, "log_artifacts", flaky)
    with pytest.warns(UserWarning, match="logging the report .* retrying .up to 4 more tries"):
        tracker.log_report(parent, tmp_path, artifact_path="flaky")
    assert len(calls) == 2 and [f.path for f in tracker.client.list_artifacts(parent, "flaky")] == ["flaky/a.txt"]
    monkeypatch.setattr(tracker.client, "log_artifacts", lambda *args: (_ for _ in ()).throw(ConnectionRefusedError()))
    with pytest.warns(UserWarning), pytest.raises(TrackingUnavailableError, match="failed 5 times"):
        tracker.log_report(parent, tmp_path)


def test_names_mlflow_could_not_take_are_read_back_as_the_search_had_them(tmp_path, template_db):
    """Issue 14 item 4: keys renamed for MLflow (a!b, a?b, 260-character names) come back under their own names."""
    uri = fresh_store(tmp_path, template_db)
    long_name = "h" * 260
    tracker = Tracker(uri, "renamed", backoff_s=0.01)
    parent = tracker.start_parent("renamed", {}, {}, {})
    tracker.finish_parent(parent)
    tracker.client.set_tag(parent, "showwork.role", "parent")
    for index in range(2):
        record = trial_record(index, params={long_name: index, "seed": 5, "lr": 0.1},
                              metrics={"a!b": 1.0 + index, "a?b": 10.0 + index, "a_b": 100.0})
        with pytest.warns(UserWarning) if index == 0 else contextlib.nullcontext():  # renamings are reported once
            tracker.log_trial(parent, record)
    family = from_mlflow(uri, "renamed")
    assert [{k: p[k] for k in (long_name, "seed", "lr")} for p in family.params] == [
        {long_name: 0, "seed": 5, "lr": 0.1}, {long_name: 1, "seed": 5, "lr": 0.1}
    ]
    assert [{k: m[k] for k in ("a!b", "a?b", "a_b")} for m in family.trial_metrics] == [
        {"a!b": 1.0, "a?b": 10.0, "a_b": 100.0}, {"a!b": 2.0, "a?b": 11.0, "a_b": 100.0}
    ]
    with pytest.raises(InputError, match=r"no run has the score metric 'nope' \(metrics: .*a!b, a\?b, a_b"):
        from_mlflow(uri, "renamed", score="nope")
    assert from_mlflow(uri, "renamed", score="a?b").scores.tolist() == [10.0, 11.0]


def test_the_scores_by_parameter_figure_is_logged_with_the_report(search, tmp_path):
    """Issue 26 item 4: the new figure, from a ledger's trials and space (failed and timed-out trials drawn), on MLflow."""
    _, storage, parent, tracker = search
    report = analyze([from_ledger(storage, "sst-bow")], ReportSettings(a=0, b=1))
    files = write_report(report, tmp_path / "out", figure_formats=("png", "svg"))
    assert [p.name for p in files.figures["scores_by_parameter"]] == ["scores_by_parameter.png", "scores_by_parameter.svg"]
    svg = files.figures["scores_by_parameter"][1].read_text()
    for panel in ("optimizer.lr", "model.layers", "act"):  # seed: an int_uniform of the space too
        assert f"<!-- {panel} -->" in svg
    assert "failed or timed out (no score)" in svg
    assert log_report(report, files, artifact_path="figures-logged") == [parent]
    logged = {f.path for f in tracker.client.list_artifacts(parent, "figures-logged/figures")}
    assert {"figures-logged/figures/scores_by_parameter.png", "figures-logged/figures/scores_by_parameter.svg"} <= logged


# ---------------------------------------------------------------- the report links its runs (issue 34 item 5)


def report_outputs(out: Path) -> tuple[dict, str, str]:
    """``report.json`` (its one family's ``mlflow``), ``report.md`` and ``report.html`` of a report in ``out``."""
    (family,) = json.loads((out / "report.json").read_text())["families"]
    return family["mlflow"], (out / "report.md").read_text(), (out / "report.html").read_text()


def report(source: str, storage: Path, uri: str, out: Path, *more: str) -> str:
    """``showwork report SOURCE`` through the real command; its stdout and stderr."""
    code, stdout, stderr = cli_in_process("report", source, "--storage", storage, "--tracking-uri", uri, "--out", out,
                                          "--formats", "png", *more)
    assert code == 0, stderr
    return stdout + stderr


def test_a_report_of_a_sqlite_store_names_the_parent_run_and_the_command_that_serves_its_runs(search, tmp_path):
    """No server: the run, `showwork ui --tracking-uri` with the database's name (not its folder), and the
    URL that command serves the runs table at, from the ledger and from MLflow alike; a results file has none."""
    uri, storage, parent, tracker = search
    experiment = tracker.experiment_id
    url = f"http://127.0.0.1:5000/{runs_table_path(experiment, parent_run_id=parent)}"
    line = (f"sst-bow runs: MLflow parent run {parent}, experiment {experiment} in sqlite:///mlflow.db; serve it with"
            " showwork ui --tracking-uri sqlite:///mlflow.db (in the folder that holds mlflow.db), then its runs table:")
    for source in ("sst-bow", "mlflow:sst-bow"):
        out = tmp_path / source.replace(":", "-")
        report(source, storage, uri, out, "--no-mlflow")  # `search` is read only
        links, markdown, page = report_outputs(out)
        assert links == {"parent_run_id": parent, "experiment_id": experiment, "tracking_uri": "sqlite:///mlflow.db",
                         "runs_url": None, "ui_command": "showwork ui --tracking-uri sqlite:///mlflow.db",
                         "ui_runs_url": url}, source
        assert f"- {markdown_text(line)} <{url}>\n" in markdown
        assert f'<li>{html_text(line)} <a href="{html_text(url)}">{html_text(url)}</a></li>' in page
        folder = str(Path(uri.removeprefix("sqlite:///")).parent)
        assert folder not in json.dumps(links)  # the store by its name alone
    results = tmp_path / "results.csv"
    results.write_text("acc\n0.5\n0.7\n0.6\n")
    code, _, err = cli_in_process("report", results, "--score", "acc", "--out", tmp_path / "file", "--formats", "png",
                                  "--no-mlflow")
    assert code == 0, err
    links, markdown, _ = report_outputs(tmp_path / "file")
    assert links is None and " runs: MLflow" not in markdown


@pytest.fixture(scope="module")
def served(tmp_path_factory, template_db):
    """The search of ``search`` on an ``mlflow server`` (a SQLite database behind it): ``(server, storage, parent, tracker)``."""
    root = tmp_path_factory.mktemp("served")
    (root / "search.yaml").write_text(SPEC_YAML)
    shutil.copy(template_db, root / "server.db")
    server = MlflowServer(f"sqlite:///{root / 'server.db'}", root / "artifacts", root / "server.log")
    server.start()
    try:
        tracker, parent = project_search(server.url, root / "runs", root / "search.yaml")
        yield server, root / "runs", parent, tracker
    finally:
        server.stop()


@pytest.mark.slow
def test_a_report_of_a_tracking_server_links_the_runs_table_of_the_search(served, tmp_path):
    """An http:// store is the server itself: the report links its runs table, filtered to the search's trial runs,
    best first, from the ledger and from MLflow alike; a password in the tracking URI reaches none of its files."""
    server, storage, parent, tracker = served
    experiment = tracker.experiment_id
    url = f"{server.url}/{runs_table_path(experiment, parent_run_id=parent)}"
    secret = "pw-sw-34i5"
    with_password = server.url.replace("http://", f"http://someone:{secret}@")
    for source in ("sst-bow", "mlflow:sst-bow"):
        out = tmp_path / source.replace(":", "-")
        printed = report(source, storage, with_password, out)  # and logged to the parent run, over HTTP
        assert f"logged to MLflow parent run {parent}" in printed and secret not in printed
        links, markdown, page = report_outputs(out)
        assert links == {"parent_run_id": parent, "experiment_id": experiment, "tracking_uri": server.url,
                         "runs_url": url, "ui_command": None, "ui_runs_url": None}, source
        assert f"its runs table, best first: <{url}>\n" in markdown
        assert f'<a href="{html_text(url)}">{html_text(url)}</a></li>' in page
        leaked = [p for p in out.rglob("*") if p.is_file() and (secret.encode() in p.read_bytes() or b"someone" in p.read_bytes())]
        assert not leaked, leaked
    # The URL is MLflow's UI on that server (the route after "#" is the browser's) ...
    with urllib.request.urlopen(url, timeout=30) as response:
        assert response.status == 200 and b"<title>MLflow</title>" in response.read()
    # ... on the runs table of the search's experiment, its filter naming the parent run: the search's trial runs.
    route, _, query = urllib.parse.urlsplit(url).fragment.partition("?")
    view = dict(urllib.parse.parse_qsl(query))
    assert route == f"/experiments/{experiment}/runs"
    assert view["searchFilter"] == f"tags.`mlflow.parentRunId` = '{parent}'"
    assert view["orderByKey"] == "metrics.`best_val_score`" and view["orderByAsc"] == "false"
    runs = tracker.client.search_runs([experiment], view["searchFilter"], order_by=[f"{view['orderByKey']} DESC"])
    assert sorted(run.info.run_id for run in runs) == sorted(run.info.run_id for run in tracker.children(parent).values())
    assert [run.data.tags["showwork.trial_index"] for run in runs][:2] == ["1", "0"]  # 0.83, then 0.71


@pytest.mark.slow
@pytest.mark.skipif(chromium() is None and not os.environ.get("CI"), reason="no Chromium here (CI installs it)")
def test_the_link_of_the_html_report_opens_the_searchs_trials_in_chromium(served, tmp_path):
    """The page a browser shows: report.html holds the link as an <a href>, and MLflow's UI at that link lists
    the search's four trial runs (its parent and anything else in the experiment filtered out), best first."""
    server, storage, parent, tracker = served
    url = f"{server.url}/{runs_table_path(tracker.experiment_id, parent_run_id=parent)}"
    report("sst-bow", storage, server.url, tmp_path / "out", "--no-mlflow")
    dom = page_dom((tmp_path / "out" / "report.html").resolve().as_uri(), budget_ms=1000)
    assert [html.unescape(href) for href in re.findall(r'<a href="([^"]+)"', dom)] == [url]
    shown = page_text(url)
    assert "4 matching runs" in shown, shown[:3000]
    assert all(f"trial-000{index}" in shown for index in range(4)), shown[:3000]
    assert shown.index("trial-0001") < shown.index("trial-0000"), shown[:3000]  # best first


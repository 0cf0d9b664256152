"""The compose stack's topology, run with plain processes on 127.0.0.1 (issue 8, item 3).

docker/compose.yaml runs PostgreSQL, an MLflow tracking server backed by it (artifacts served by
the server), a Ray head without CPUs for trials, and Ray workers, all sharing one ledger volume;
the search is started on the head with ``RAY_ADDRESS`` and ``MLFLOW_TRACKING_URI`` in its
environment. No Docker engine runs here or in CI, so this test starts the same services as
processes (``tests/servers.py``, ``tests/ray_cluster.py``) and runs the same commands.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from test_cluster import start_cluster

from showwork.store import Ledger

from helpers import search_process_environment
from servers import MlflowServer, Postgres

pytestmark = [pytest.mark.slow, pytest.mark.integration]

TRAINABLE = """
    import time


    def train(config, *, seed, device, reporter, data):
        for epoch in range(2):
            time.sleep(0.3)
            reporter(epoch=epoch, val_accuracy=config["quality"] * (epoch + 1) / 2)
        return {"val_accuracy": config["quality"]}
"""

SPACE = """
    name: stack
    family: probe.py:train
    metric: {name: val_accuracy, mode: max, bounds: [0, 1]}
    num_trials: 6
    seed: 29
    resources: {cpus: 1}
    max_concurrent: 2
    space:
      quality: {distribution: uniform, low: 0.5, high: 1.0}
"""


@pytest.fixture(scope="module")
def stack(tmp_path_factory):
    """PostgreSQL, MLflow on it, and a Ray head (0 CPUs) with two 1-CPU workers; all on 127.0.0.1."""
    root = tmp_path_factory.mktemp("stack")
    postgres = Postgres()
    try:
        postgres.start()
        server = MlflowServer(postgres.create_database("mlflow"), root / "mlartifacts", root / "mlflow.log")
        server.start()
        try:
            clusters = start_cluster([{"num_cpus": 0}, {"num_cpus": 1}, {"num_cpus": 1}])
            cluster = next(clusters)
            try:
                yield root, server, cluster
            finally:
                clusters.close()
        finally:
            server.stop()
    finally:
        postgres.cleanup()


def run(root: Path, server: MlflowServer, cluster, *argv: str) -> subprocess.CompletedProcess:
    """A ``showwork`` command as the compose file runs it on the head: the cluster and server from the environment."""
    env = search_process_environment(RAY_ADDRESS=cluster.address, MLFLOW_TRACKING_URI=server.url)
    return subprocess.run([sys.executable, "-m", "showwork", *argv], cwd=root, env=env, capture_output=True, text=True,
                          timeout=300)


def test_a_search_and_its_report_on_the_stack(stack):
    from mlflow.tracking import MlflowClient

    root, server, cluster = stack
    (root / "space").mkdir()
    (root / "space" / "probe.py").write_text(textwrap.dedent(TRAINABLE).lstrip())
    (root / "space" / "stack.yaml").write_text(textwrap.dedent(SPACE).lstrip())
    storage = root / "runs"  # the shared ledger volume (/runs in the compose file)
    done = run(root, server, cluster, "search", "space/stack.yaml", "--storage", str(storage), "--no-progress")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "search stack: 6 finished, 0 failed, 0 timed out of 6" in done.stdout
    records = Ledger(storage, "stack").records()
    head, *workers = cluster.node_ids
    assert {r.node_id for r in records} == set(workers)  # the head keeps no CPU for trials
    meta = Ledger(storage, "stack").read_meta()
    assert meta["tracking_uri"] == server.url

    client = MlflowClient(tracking_uri=server.url)
    experiment = client.get_experiment_by_name("stack")
    runs = client.search_runs([experiment.experiment_id])
    parent = client.get_run(meta["parent_run_id"])
    assert parent.info.status == "FINISHED"
    children = {int(r.data.tags["showwork.trial_index"]): r for r in runs if "showwork.trial_index" in r.data.tags}
    assert sorted(children) == list(range(6)) and len(runs) == 7
    for record in records:
        child = children[record.index]
        assert child.info.status == "FINISHED" and child.data.metrics["best_val_score"] == record.score
        assert child.data.tags["showwork.node_id"] == record.node_id
        history = sorted((m.step, m.value) for m in client.get_metric_history(child.info.run_id, "val_accuracy"))
        assert history == [(h["epoch"], h["val_accuracy"]) for h in record.history]

    # The report, written locally and logged on the parent run through the server's artifact proxy.
    done = run(root, server, cluster, "report", "stack", "--storage", str(storage), "--out", str(root / "report"),
               "--formats", "png")
    assert done.returncode == 0, done.stderr[-3000:]
    logged = {item.path for item in client.list_artifacts(parent.info.run_id, "report")}
    assert {"report/report.html", "report/report.json", "report/report.md"} <= logged
    assert (root / "mlartifacts").is_dir() and any((root / "mlartifacts").rglob("report.json"))
    data = json.loads((root / "report" / "report.json").read_text())
    assert data["families"][0]["summary"]["n_trials"] == 6

"""`showwork search --address` on a real multi-node Ray cluster on 127.0.0.1 (issue 8, items 1 and 2).

``tests/ray_cluster.py`` starts a head node and worker nodes, each with its own raylet as on
separate machines, all on loopback. The ledger folder and the MLflow SQLite store are shared by
the nodes (one machine: one file system), as a cluster would share them through NFS and a server.
The GPU cluster's worker declares two GPUs that do not exist: Ray schedules and isolates them all the same
(``CUDA_VISIBLE_DEVICES`` per trial), which is what fractional GPUs per trial rely on.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import pytest

from showwork.sampling import trial_config, trial_seed
from showwork.space import load_search_spec
from showwork.store import Ledger

from helpers import REPO_ROOT, search_process_environment
from processes import alive, descendants, kill_session, listening_sockets, needs_proc, not_on_loopback, signal_the_group

pytestmark = [pytest.mark.slow, pytest.mark.integration]

TRAINABLE = """
    import os
    import time


    def train(config, *, seed, device, reporter, data):
        start = time.time()
        time.sleep(data.get("sleep", 0.8))
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
        return {
            "val_accuracy": config["quality"],
            "started": start,
            "ended": time.time(),
            "on_cuda": float(device == "cuda"),
            "visible_devices": float(len([d for d in visible.split(",") if d])),
            "device_id": float(visible) if visible.isdigit() else -1.0,
        }
"""


def space(folder: Path, name: str, resources: str = "{cpus: 1}", num_trials: int = 6, max_concurrent: int = 2) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "probe.py").write_text(textwrap.dedent(TRAINABLE).lstrip())
    path = folder / f"{name}.yaml"
    path.write_text(textwrap.dedent(f"""
        name: {name}
        family: probe.py:train
        metric: {{name: val_accuracy, mode: max}}
        num_trials: {num_trials}
        seed: 17
        resources: {resources}
        max_concurrent: {max_concurrent}
        space:
          quality: {{distribution: uniform, low: 0.5, high: 1.0}}
          width: {{distribution: int_uniform, low: 8, high: 64}}
    """).lstrip())
    return path


@dataclass
class Cluster:
    address: str
    node_ids: list[str]
    process: subprocess.Popen


def start_cluster(nodes: list[dict]):
    """Run ``tests/ray_cluster.py`` with ``nodes`` (the first is the head); yield the :class:`Cluster`."""
    temp = tempfile.mkdtemp(prefix="sw-cluster-")  # short: Ray's socket paths live under it
    process = subprocess.Popen(
        [sys.executable, str(REPO_ROOT / "tests" / "ray_cluster.py"), json.dumps({"temp_dir": temp, "nodes": nodes})],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=search_process_environment(),
        start_new_session=True,
    )
    try:
        line = process.stdout.readline()
        assert line, "the test cluster did not start"
        info = json.loads(line)
        yield Cluster(info["address"], info["node_ids"], process)
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.fixture(scope="module")
def cluster():
    """A head node and a worker node, one CPU each."""
    yield from start_cluster([{"num_cpus": 1}, {"num_cpus": 1}])


@pytest.fixture(scope="module")
def gpu_cluster():
    """A head node without resources and a worker node with 2 CPUs and 2 declared GPUs."""
    yield from start_cluster([{"num_cpus": 0}, {"num_cpus": 2, "num_gpus": 2}])


def search(space_file: Path, workdir: Path, *extra: str, env: dict | None = None) -> subprocess.CompletedProcess:
    command = [sys.executable, "-m", "showwork", "search", str(space_file), "--no-progress",
               "--storage", str(workdir / "runs"), "--tracking-uri", f"sqlite:///{workdir / 'mlflow.db'}", *extra]
    return subprocess.run(command, cwd=workdir, env=env or search_process_environment(), capture_output=True, text=True, timeout=300)


@needs_proc
def test_the_cluster_listens_on_loopback_only(cluster):
    sockets = listening_sockets(descendants(cluster.process.pid))
    assert sockets and not not_on_loopback(sockets)
    assert int(cluster.address.rpartition(":")[2]) in {port for _, port, _ in sockets}


@pytest.fixture(scope="module")
def on_the_cluster(cluster, tmp_path_factory) -> tuple[Path, Path]:
    workdir = tmp_path_factory.mktemp("cluster-search")
    space_file = space(workdir / "space", "spread")
    done = search(space_file, workdir, "--address", cluster.address)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "search spread: 6 finished, 0 failed, 0 timed out of 6" in done.stdout
    return workdir, space_file


def test_trials_run_on_both_cpu_nodes_and_share_the_ledger(cluster, on_the_cluster):
    workdir, _ = on_the_cluster
    records = Ledger(workdir / "runs", "spread").records()
    assert [r.index for r in records] == list(range(6))
    # One CPU per trial, two trials at a time, one CPU per node: both nodes ran trials.
    assert {r.node_id for r in records} == set(cluster.node_ids)
    assert all(r.hostname for r in records)


def test_the_cluster_draws_the_configurations_of_a_local_run(cluster, on_the_cluster, tmp_path):
    workdir, space_file = on_the_cluster
    local = search(space_file, tmp_path)  # a local Ray: no --address, no RAY_ADDRESS
    assert local.returncode == 0, local.stderr[-3000:]
    spec = load_search_spec(space_file)
    remote, here = Ledger(workdir / "runs", "spread").records(), Ledger(tmp_path / "runs", "spread").records()
    assert [r.params for r in remote] == [r.params for r in here] == [trial_config(spec.space, 17, i) for i in range(6)]
    assert [r.seed for r in remote] == [r.seed for r in here] == [trial_seed(17, i) for i in range(6)]
    assert [r.score for r in remote] == [r.score for r in here]
    assert {r.node_id for r in here}.isdisjoint(cluster.node_ids)


def test_mlflow_records_the_node_of_every_trial(on_the_cluster):
    from mlflow.tracking import MlflowClient

    workdir, _ = on_the_cluster
    client = MlflowClient(tracking_uri=f"sqlite:///{workdir / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("spread")
    runs = [r for r in client.search_runs([experiment.experiment_id]) if "showwork.trial_index" in r.data.tags]
    records = {r.index: r for r in Ledger(workdir / "runs", "spread").records()}
    assert len(runs) == 6
    for run in runs:
        record = records[int(run.data.tags["showwork.trial_index"])]
        assert run.data.tags["showwork.node_id"] == record.node_id and record.mlflow_run_id == run.info.run_id


def test_ray_address_from_the_search_process_environment(cluster, tmp_path):
    space_file = space(tmp_path / "space", "from-env", num_trials=2)
    done = search(space_file, tmp_path, env=search_process_environment(RAY_ADDRESS=cluster.address))
    assert done.returncode == 0, done.stderr[-3000:]
    assert {r.node_id for r in Ledger(tmp_path / "runs", "from-env").records()} <= set(cluster.node_ids)


def test_fractional_gpus_pack_trials_and_each_sees_only_its_device(gpu_cluster, tmp_path):
    """0.5 GPU per trial on a node with 2 GPUs: 4 trials at once, 2 per device, each seeing one device."""
    space_file = space(tmp_path / "space", "packed", resources="{cpus: 0.5, gpus: 0.5}", num_trials=8, max_concurrent=8)
    done = search(space_file, tmp_path, "--address", gpu_cluster.address)
    assert done.returncode == 0, done.stderr[-3000:]
    records = Ledger(tmp_path / "runs", "packed").records()
    assert len(records) == 8 and all(r.status == "finished" for r in records)
    gpu_node = gpu_cluster.node_ids[1]
    for record in records:
        assert record.node_id == gpu_node  # the only node with GPUs
        assert record.metrics["on_cuda"] == 1.0  # the trainable is told to use the GPU
        assert record.metrics["visible_devices"] == 1.0 and record.metrics["device_id"] in (0.0, 1.0)
        assert record.gpu_seconds == pytest.approx(record.runtime_s * 0.5)
    # At any moment, at most two trials share a device, and at most four run at all.
    events = sorted((r.metrics[edge], +1 if edge == "started" else -1, r.metrics["device_id"])
                    for r in records for edge in ("started", "ended"))
    running: dict[float, int] = {0.0: 0, 1.0: 0}
    peak = {0.0: 0, 1.0: 0}
    for _, change, device in events:
        running[device] += change
        peak[device] = max(peak[device], running[device])
    assert max(peak.values()) <= 2 and sum(peak.values()) >= 3  # packed, not one trial per GPU
    assert datetime.fromisoformat(records[0].started_at)  # the ledger keeps when each attempt ran


# --- issue 16 item 5: a family file that imports a module beside it ---------------------------------

MULTI_FILE_TRAINABLE = """
    import time
    from pathlib import Path

    import quality_helpers


    def train(config, *, seed, device, reporter, data):
        time.sleep(0.8)  # as the probe: long enough that both nodes take trials
        here = Path(__file__).resolve().parent
        return {
            "val_accuracy": quality_helpers.doubled(config["quality"]),
            "from_shipped_copy": float(here != Path(data["family_folder"]).resolve()),
            "helper_beside": float(Path(quality_helpers.__file__).resolve().parent == here),
            "outputs_left_out": float(not any((here / name).exists() for name in ("showwork_runs", "mlflow.db", ".venv"))),
        }
"""


def multi_file_family(root: Path, name: str) -> Path:
    """``root/spaces/NAME.yaml`` naming ``../code/multi.py:train``, which imports ``quality_helpers`` beside it.

    The code folder also holds what must never be shipped: a ledger folder, an MLflow store and a virtualenv.
    """
    code, spaces = root / "code", root / "spaces"
    code.mkdir(parents=True)
    spaces.mkdir(parents=True)
    (code / "multi.py").write_text(textwrap.dedent(MULTI_FILE_TRAINABLE).lstrip())
    (code / "quality_helpers.py").write_text("def doubled(x):\n    return 2 * x\n")
    (code / "showwork_runs" / "old").mkdir(parents=True)
    (code / "showwork_runs" / "old" / "search.json").write_text("{}")
    (code / "mlflow.db").write_bytes(b"SQLite format 3\0")
    (code / ".venv").mkdir()
    (code / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    path = spaces / f"{name}.yaml"
    path.write_text(textwrap.dedent(f"""
        name: {name}
        family: ../code/multi.py:train
        data: {{family_folder: {code}}}
        metric: {{name: val_accuracy, mode: max}}
        num_trials: 6
        seed: 17
        resources: {{cpus: 1}}
        max_concurrent: 2
        space:
          quality: {{distribution: uniform, low: 0.5, high: 1.0}}
    """).lstrip())
    return path


def test_a_family_importing_a_module_beside_it_runs_on_every_node_from_the_shipped_folder(cluster, tmp_path):
    """The family file's folder (resolved relative to the YAML file) is shipped with Ray's runtime
    environment; the workers load the family and its helper from their node's copy, which lacks
    showwork's outputs and the virtualenv. Before, every trial failed with ModuleNotFoundError."""
    space_file = multi_file_family(tmp_path / "project", "multi-file")
    workdir = tmp_path / "elsewhere"  # not the family's folder: nothing is found through the current directory
    workdir.mkdir()
    done = search(space_file, workdir, "--address", cluster.address)
    assert done.returncode == 0, done.stderr[-3000:]
    records = Ledger(workdir / "runs", "multi-file").records()
    assert [r.status for r in records] == ["finished"] * 6, [r.error for r in records]
    assert {r.node_id for r in records} == set(cluster.node_ids)
    for record in records:
        assert record.score == pytest.approx(2 * record.params["quality"])
        assert record.metrics["from_shipped_copy"] == 1.0
        assert record.metrics["helper_beside"] == 1.0
        assert record.metrics["outputs_left_out"] == 1.0


MARKING_TRAINABLE = """
    import os
    import time
    from pathlib import Path


    def train(config, *, seed, device, reporter, data):
        Path(data["started"], str(os.getpid())).touch()
        time.sleep(120)
        return {"val_accuracy": config["quality"]}
"""


@needs_proc
def test_sigterm_to_the_group_of_a_search_on_a_cluster_stops_the_search_and_leaves_the_cluster_up(cluster, tmp_path):
    """Issue 35 item 4: SIGTERM to the search's process group (as `timeout` sends it) ends the search within 10 s with
    exit 143 and its resume command; the cluster it joined (--address) is not its own: its GCS and raylets stay up."""
    (tmp_path / "marking.py").write_text(textwrap.dedent(MARKING_TRAINABLE).lstrip())
    (tmp_path / "started").mkdir()
    (tmp_path / "held.yaml").write_text(textwrap.dedent(f"""
        name: held
        family: marking.py:train
        data: {{started: {tmp_path / 'started'}}}
        metric: {{name: val_accuracy, mode: max}}
        num_trials: 4
        seed: 17
        max_concurrent: 2
        space:
          quality: {{distribution: uniform, low: 0.5, high: 1.0}}
    """).lstrip())

    def cluster_servers() -> set[int]:
        return {pid for pid in descendants(cluster.process.pid) if alive(pid)
                and any(name in Path(f"/proc/{pid}/cmdline").read_bytes() for name in (b"gcs_server", b"raylet"))}

    servers = cluster_servers()
    assert len(servers) == 3  # the GCS and the raylets of the two nodes
    with (tmp_path / "err").open("w") as err:
        driver = subprocess.Popen([sys.executable, "-m", "showwork", "search", "held.yaml", "--no-progress", "--storage", "runs",
                                   "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}", "--address", cluster.address],
                                  cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=err, stdin=subprocess.DEVNULL,
                                  env=search_process_environment(), start_new_session=True)
    try:
        code, took, _ = signal_the_group(driver, signal.SIGTERM, lambda: any((tmp_path / "started").iterdir()), "a trial ran",
                                         (tmp_path / "err").read_text, left_after_s=0)
    finally:
        kill_session(driver)
    err = (tmp_path / "err").read_text()
    assert code == 128 + signal.SIGTERM and took < 10, err
    assert err.rstrip().splitlines()[-1] == "  showwork resume held --storage runs", err
    time.sleep(5)
    assert cluster_servers() == servers

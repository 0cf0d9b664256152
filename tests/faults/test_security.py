"""Security (issue 7, item 6): what listens, what is recorded, and which user code runs.

Rules and the decisions behind them:

1. **Binding.** ``showwork ui`` binds 127.0.0.1 unless ``--host`` says otherwise, and a local Ray
   started by :class:`~showwork.trials.ray_executor.RayExecutor` listens on loopback only, without the
   dashboard. "Listens on loopback only" is checked on the sockets themselves: every TCP socket in
   LISTEN state held by a process this test started (the UI's, Ray's GCS, raylet and workers) has
   a loopback local address; and where the machine has a network address, the UI's port refuses a
   connection on it. (Ray on Linux replaces ``_node_ip_address="127.0.0.1"`` by the network address
   and then listens on all interfaces: ``RayExecutor`` now keeps it on loopback.)
2. **Secrets.** Environment variables are not recorded: after a real search run with secrets in the
   environment (which the trials do see) and a git remote URL holding a password, the marker
   ``sw-secret`` is in no MLflow param, tag, metric name, run name or artifact, in no byte of the
   MLflow database and artifact store, and in no file of the ledger directory (Ray Tune's files
   under it included). The environment record keeps the remote, without its credentials.
3. **User code.** A family names one thing and only that is loaded: ``package.module:function``
   imports that module (and, as Python does, its parent packages) and nothing else;
   ``path/to/file.py:function`` executes exactly that file, resolved against the search-space
   file's directory (not the current directory). A relative path with ``..`` and an absolute path
   are *allowed*: the search-space file is the user's own and is trusted like the code it names;
   showwork is not a sandbox, it only guarantees that nothing but the named file runs. No family
   string reaches a shell; strings outside the grammar of
   :func:`showwork.space.family_kind` (shell metacharacters, a trailing newline, code) are
   refused before anything is imported. The function must have the trainable's signature, with
   ``seed``, ``device``, ``reporter`` and ``data`` as named parameters (``**kwargs`` alone is not
   enough): ``os:system``, ``builtins:eval``, ``subprocess:run`` are refused before any trial runs.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

from showwork.cli import EXIT_BAD_INPUT
from showwork.errors import InputError
from showwork.families import resolve_family
from showwork.space import load_search_spec
from showwork.store import Ledger

from helpers import cli_in_process as cli
from helpers import trial_record, write_search
from processes import descendants, listening_sockets, needs_proc, not_on_loopback
from servers import Postgres, free_port
from ui_runs import UiRun, command_line, environment_without_venv_bin

SECRET = "sw-secret"
SECRET_ENVIRONMENT = {
    "AWS_SECRET_ACCESS_KEY": f"{SECRET}-xyz",
    "HF_TOKEN": f"{SECRET}-hf",
    "MLFLOW_TRACKING_PASSWORD": f"{SECRET}-pw",
    "WANDB_API_KEY": f"{SECRET}-wandb",
    "GITHUB_TOKEN": f"{SECRET}-gh",
}
SECRET_REMOTE = f"https://user:{SECRET}-git@example.com/r.git"


# ---------------------------------------------------------------- helpers


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def network_address() -> str | None:
    """A non-loopback IPv4 address of this machine, or None if it has none."""
    candidates = []
    with contextlib.suppress(OSError):
        candidates += socket.gethostbyname_ex(socket.gethostname())[2]
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        probe.connect(("192.0.2.1", 9))  # UDP: no packet is sent; this only picks the outgoing interface
        candidates.append(probe.getsockname()[0])
    for candidate in candidates:
        address = ipaddress.ip_address(candidate)
        if not (address.is_loopback or address.is_unspecified):
            return candidate
    return None


def connects(host: str, port: int, timeout_s: float = 2.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def files_containing(needle: str, root: Path) -> list[Path]:
    """Every file under ``root`` (or ``root`` itself) whose bytes contain ``needle``."""
    paths = [root] if root.is_file() else [p for p in root.rglob("*") if p.is_file()]
    return [p for p in paths if needle.encode() in p.read_bytes()]


# ---------------------------------------------------------------- 1. binding: the UI's command


def test_ui_binds_loopback_by_default(monkeypatch, tmp_path):
    from showwork.tracking.ui import UiSettings, server_command

    served: list[UiSettings] = []
    monkeypatch.setattr("showwork.tracking.ui.serve", lambda settings, **options: served.append(settings) or 0)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    code, out, err = cli("ui", "--port", 5123)
    assert code == 0, err
    [settings] = served
    assert (settings.host, settings.port) == ("127.0.0.1", 5123)
    command = server_command(settings)
    assert command[:3] == [sys.executable, "-m", "mlflow"]  # this Python's MLflow, whatever PATH holds
    assert command[command.index("--host") + 1] == "127.0.0.1"
    code, _, _ = cli("ui", "--host", "0.0.0.0")  # exposing it takes an explicit choice
    assert code == 0 and served[-1].host == "0.0.0.0"


def test_ui_server_gets_the_store_through_its_environment():
    """Issue 14 item 2: the store's URI (and its password) is in no command line."""
    from showwork.tracking.ui import UiSettings, server_command, server_environment

    settings = UiSettings(f"postgresql://me:{SECRET}-pw@db.example.org/mlflow", "127.0.0.1", 5123)
    assert not [argument for argument in server_command(settings) if SECRET in argument or "postgresql" in argument]
    assert server_environment(settings, {"PATH": "/bin"})["MLFLOW_BACKEND_STORE_URI"] == settings.tracking_uri


# ---------------------------------------------------------------- 2. secrets, and Ray's binding


SCORING_TRAINABLE = """
    import os
    import sys


    def train(config, *, seed, device, reporter, data):
        # Proves the secrets reached the trial's process.
        seen = all(os.environ.get(name, "").startswith("sw-") for name in data["secret_names"])
        # A careless trial prints one: Ray keeps a worker's output in its logs folder.
        print("key:", os.environ.get("AWS_SECRET_ACCESS_KEY"), file=sys.stderr, flush=True)
        reporter(epoch=1, score=config["x"])
        return {"score": config["x"], "saw_secrets": float(seen)}
"""


LEAKY_TRAINABLE = """
    import os


    def train(config, *, seed, device, reporter, data):
        raise ValueError("creds " + os.environ["AWS_SECRET_ACCESS_KEY"])  # issue 23 item 11
"""


@dataclass
class SecretSearch:
    root: Path
    space_dir: Path
    storage: Path
    uri: str
    code: int
    out: str
    err: str
    ray_address_info: dict
    ray_sockets: list[tuple[str, int, int]]
    system_temp: Path  # the search's RAY_TMPDIR, shared like /tmp
    leaky: tuple[int, str, str]  # exit status, stdout and stderr of the search whose every trial raises the key


@pytest.fixture(scope="module")
def secret_search(tmp_path_factory, ui_process) -> SecretSearch:
    """A two-trial search with secrets in the environment and in the git remote of the space.

    Then, on the same Ray, a second search (``leaky``) whose trainable raises an exception holding
    the AWS key, so that every one of its trials fails with the secret in its message.

    The local Ray is started by ``RayExecutor`` here (the search then uses it), so that its
    sockets can be read while it is up. Its temp folder is a fresh one, shared like /tmp
    (``RAY_TMPDIR``; short, because Ray's socket paths must fit in 107 bytes), so that what this
    search leaves there is all that is scanned.
    """
    import ray

    from showwork.trials.ray_executor import RayExecutor

    root = tmp_path_factory.mktemp("secrets")
    root.chmod(0o755)  # pytest's own folder is private: the scans below must not rely on it
    system_temp = Path(tempfile.mkdtemp(prefix="sw", dir="/tmp" if Path("/tmp").is_dir() else None))
    system_temp.chmod(0o1777)
    space_dir = root / "space"
    write(space_dir / "scoring.py", SCORING_TRAINABLE)
    space = write(space_dir / "space.yaml", f"""
        name: secrets
        family: scoring.py:train
        data: {{secret_names: {json.dumps(sorted(SECRET_ENVIRONMENT))}}}
        metric: {{name: score, mode: max}}
        num_trials: 2
        seed: 3
        max_concurrent: 2
        space:
          x: {{distribution: uniform, low: 0.0, high: 1.0}}
    """)
    git = ["git", "-C", str(space_dir), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    for command in (["init", "-q"], ["remote", "add", "origin", SECRET_REMOTE], ["add", "."], ["commit", "-qm", "space"]):
        subprocess.run(git + command, check=True, capture_output=True)
    write(space_dir / "leaky.py", LEAKY_TRAINABLE)
    leaky_space = write(space_dir / "leaky.yaml", """
        name: leaky
        family: leaky.py:train
        metric: {name: score, mode: max}
        num_trials: 2
        seed: 3
        space:
          x: {distribution: uniform, low: 0.0, high: 1.0}
    """)
    storage, uri = root / "runs", f"sqlite:///{root / 'mlflow.db'}"
    with pytest.MonkeyPatch.context() as mp:
        for name, value in SECRET_ENVIRONMENT.items():
            mp.setenv(name, value)
        mp.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
        mp.setenv("RAY_TMPDIR", str(system_temp))
        mp.delenv("RAY_ADDRESS", raising=False)
        mp.delenv("MLFLOW_TRACKING_URI", raising=False)
        mp.chdir(root)
        if ray.is_initialized():  # a Ray left by another test would be tested instead of ours
            ray.shutdown()
        with RayExecutor(num_cpus=2) as executor:
            assert executor._started
            info = dict(ray._private.worker.global_worker.node.address_info)
            code, out, err = cli("search", space, "--no-progress", "--storage", storage, "--tracking-uri", uri)
            ray_processes = descendants(os.getpid()) - descendants(ui_process[0].pid)
            sockets = listening_sockets(ray_processes) if Path("/proc/net/tcp").exists() else []
            leaky = cli("search", leaky_space, "--no-progress", "--storage", storage, "--tracking-uri", uri)
    yield SecretSearch(root, space_dir, storage, uri, code, out, err, info, sockets, system_temp, leaky)
    shutil.rmtree(system_temp, ignore_errors=True)


@pytest.mark.slow
def test_local_ray_has_loopback_addresses_and_no_dashboard(secret_search):
    info = secret_search.ray_address_info
    assert info["node_ip_address"] == "127.0.0.1"
    assert info["gcs_address"].rpartition(":")[0] == "127.0.0.1"
    assert not info.get("webui_url")  # include_dashboard=False


@pytest.mark.slow
@needs_proc
def test_local_ray_listens_on_loopback_only(secret_search):
    sockets = secret_search.ray_sockets
    gcs_port = int(secret_search.ray_address_info["gcs_address"].rpartition(":")[2])
    assert gcs_port in {s[1] for s in sockets}, sockets  # the check sees Ray's own sockets
    assert not not_on_loopback(sockets)


def open_to_others(path: Path, root: Path) -> list[str]:
    """Why users other than the owner could read ``path`` (a file or folder under ``root``); [] if they cannot.

    Two rules, each enough to fail: ``path`` itself grants group or other read, and no folder
    from ``path`` (a folder) or its parent up to ``root`` is closed to group and other (mode ``0?00``), so that
    nothing stops another user from reaching it. Folders between ``path`` and the closed one may
    be open (Ray makes its own 0777): they cannot be entered from outside.
    """
    mode = stat.S_IMODE(path.lstat().st_mode)
    reasons = [f"{path.relative_to(root)} is {mode:04o}"] if mode & 0o044 else []
    closed = [folder for folder in [path, *path.parents] if folder.is_dir()
              and (folder == root or root in folder.parents) and not folder.lstat().st_mode & 0o077]
    if not closed:
        reasons.append(f"no folder between {path.relative_to(root)} and {root} is closed to others")
    return reasons


@pytest.mark.slow
def test_local_ray_keeps_its_files_private(secret_search):
    """Issue 14 item 1: Ray opens its temp folder to 0777, and its logs held the AWS key."""
    from showwork.trials.ray_setup import private_ray_dir

    assert secret_search.code == 0, secret_search.err
    system_temp = secret_search.system_temp
    session = Path(secret_search.ray_address_info["session_dir"])
    outer = session.parent.parent
    assert outer.parent == system_temp
    info = outer.stat()  # before calling private_ray_dir() below, which would tighten it
    assert stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == os.getuid()
    written = [p for p in system_temp.rglob("*") if not p.is_symlink()]
    assert len([p for p in written if p.name.startswith("worker-")]) >= 2  # the trials' output files are here
    # Everything under Ray's folder (what its processes wrote, and Tune's state that the driver
    # writes there) is behind the closed folder; Ray's processes write for their owner only.
    assert not [reason for path in written for reason in open_to_others(path, system_temp) if "closed" in reason]
    logs = [p for p in (session / "logs").rglob("*") if p.is_file()]
    assert logs and not [p.name for p in logs if p.stat().st_mode & 0o044]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAY_TMPDIR", str(system_temp))
        assert session.parent == private_ray_dir()


@pytest.mark.slow
def test_no_file_holding_a_secret_is_readable_by_another_user(secret_search):
    """Issue 14 item 1: every file the search left with a secret in it is its owner's only."""
    assert secret_search.code == 0, secret_search.err
    holders = {secret_search.system_temp: files_containing(SECRET, secret_search.system_temp),
               secret_search.root: files_containing(SECRET, secret_search.root)}
    printed = [p for p in holders[secret_search.system_temp] if p.name.startswith("worker-")]
    assert printed, "the trial printed the key: the scan must find it in the worker's output"
    exposed = [reason for root, paths in holders.items() for path in paths for reason in open_to_others(path, root)
               if path.parent.name != ".git"]  # the space's git config holds the remote's password: the user's own file
    assert not exposed, exposed


@pytest.mark.slow
def test_ray_is_not_handed_the_credentials(secret_search):
    """Ray Tune copies AWS_* into each trial actor's runtime_env, which Ray logs: showwork stops that copy."""
    from ray.tune.execution import class_cache

    assert secret_search.code == 0, secret_search.err
    holders = files_containing(SECRET, secret_search.system_temp)
    assert not [p for p in holders if not p.name.startswith("worker-")], holders  # only what the trial printed
    assert "AWS_SECRET_ACCESS_KEY" in class_cache.ENV_VARS_TO_PROPAGATE  # Ray's own setting is back after the search


def test_private_ray_dir_refuses_what_is_not_the_users_own_folder(tmp_path, monkeypatch):
    from showwork.trials.ray_setup import private_ray_dir

    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))
    folder = tmp_path / f"showwork-ray-{os.getuid()}"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    assert private_ray_dir() == folder / "ray" and (folder.stat().st_mode & 0o777) == 0o700  # tightened
    folder.rmdir()
    (tmp_path / "elsewhere").mkdir()
    folder.symlink_to(tmp_path / "elsewhere")  # a link planted where the folder goes
    with pytest.raises(InputError, match="not a directory of yours"):
        private_ray_dir()


def mlflow_runs(uri: str, name: str) -> list:
    from mlflow.entities import ViewType
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name(name)
    assert experiment is not None
    return client.search_runs([experiment.experiment_id], run_view_type=ViewType.ALL, max_results=1000)


@pytest.mark.slow
def test_search_ran_with_the_secrets_in_its_environment(secret_search):
    assert secret_search.code == 0, secret_search.err
    assert "2 finished" in secret_search.out
    children = [r for r in mlflow_runs(secret_search.uri, "secrets") if "mlflow.parentRunId" in r.data.tags]
    assert len(children) == 2
    assert all(r.data.metrics["saw_secrets"] == 1.0 for r in children)  # else the test below proves nothing
    assert files_containing(SECRET, secret_search.space_dir / ".git" / "config")  # and the scan can see one


@pytest.mark.slow
def test_no_secret_in_mlflow(secret_search, tmp_path):
    import mlflow

    assert secret_search.code == 0, secret_search.err
    runs = mlflow_runs(secret_search.uri, "secrets")
    assert len(runs) == 3
    for run in runs:
        texts = [run.info.run_name or "", *run.data.params, *run.data.params.values(),
                 *run.data.tags, *run.data.tags.values(), *run.data.metrics]
        assert not [t for t in texts if SECRET in t], run.info.run_id
        folder = Path(mlflow.artifacts.download_artifacts(
            run_id=run.info.run_id, dst_path=str(tmp_path / run.info.run_id), tracking_uri=secret_search.uri))
        assert not files_containing(SECRET, folder)
    parent = next(r for r in runs if r.data.tags.get("showwork.role") == "parent")
    assert (tmp_path / parent.info.run_id / "environment.json").is_file()  # the artifacts were scanned
    # The store's raw bytes: the database and the artifact directory.
    assert not files_containing(SECRET, secret_search.root / "mlflow.db")
    assert not files_containing(SECRET, secret_search.root / "mlartifacts")


@pytest.mark.slow
def test_no_secret_in_the_ledger(secret_search):
    assert secret_search.code == 0, secret_search.err
    folder = secret_search.storage / "secrets"
    scanned = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}
    assert {"search.json", "trials/000000.json", "trials/000001.json"} <= scanned
    assert {Path(p).name for p in scanned if p.startswith("ray/")} >= {"tuner.pkl"}  # Ray Tune's files too
    assert not files_containing(SECRET, secret_search.storage)


@pytest.mark.slow
def test_a_trainables_error_holding_a_secret_is_redacted_where_it_leaves_showwork(secret_search):
    """Issue 23 item 11: ``ValueError("creds " + os.environ["AWS_SECRET_ACCESS_KEY"])`` was printed in the
    failure summary, kept in the ledger's records and tagged on the MLflow runs (the scans of the ledger,
    the database and MLflow above cover this search too)."""
    from showwork.store import Ledger

    code, out, err = secret_search.leaky
    assert code == 1, err  # no trial finished
    assert "2 x ValueError, first trial 0: ValueError: creds [redacted AWS_SECRET_ACCESS_KEY]" in out
    assert SECRET not in out + err
    records = Ledger(secret_search.storage, "leaky").records()
    assert len(records) == 2
    assert all(r.error.startswith("ValueError: creds [redacted AWS_SECRET_ACCESS_KEY]\n") for r in records)
    children = [r for r in mlflow_runs(secret_search.uri, "leaky") if "mlflow.parentRunId" in r.data.tags]
    assert len(children) == 2
    assert all(r.data.tags["showwork.error"].startswith("ValueError: creds [redacted AWS_SECRET_ACCESS_KEY]") for r in children)


@pytest.mark.slow
def test_the_tracking_stores_artifacts_and_rays_folder_of_the_search_are_owner_only(secret_search):
    """Issue 23 item 11: as a real search leaves them (MLflow makes its folders 0755, Ray Tune its files 0644):
    ``mlartifacts/`` beside the SQLite store and ``STORAGE/NAME/ray/`` are closed to other users, and the
    files below them behind those folders."""
    assert secret_search.code == 0, secret_search.err
    artifacts = secret_search.root / "mlartifacts"
    rays = [secret_search.storage / name / "ray" for name in ("secrets", "leaky")]
    for folder in (artifacts, *rays):
        assert folder.is_dir() and stat.S_IMODE(folder.stat().st_mode) == 0o700, (folder, oct(folder.stat().st_mode))
    written = [p for folder in (artifacts, *rays) for p in folder.rglob("*")]
    assert any(p.name == "environment.json" for p in written) and any(p.name == "tuner.pkl" for p in written)
    assert not [reason for p in written for reason in open_to_others(p, secret_search.root) if "closed" in reason]
    assert {p.name for folder in rays for p in folder.glob("run-*.log")}  # Ray's log of the run is among them


@pytest.mark.slow
def test_environment_records_the_remote_without_credentials(secret_search):
    from showwork.store import Ledger

    assert secret_search.code == 0, secret_search.err
    environment = Ledger(secret_search.storage, "secrets").read_meta()["environment"]
    assert environment["git_remote"] == "https://example.com/r.git"
    assert environment["git_commit"] and environment["git_dirty"] is False


# ---------------------------------------------------------------- 3. binding: the MLflow UI on the network
# (after the search, whose fixture starts the UI early so that the two start-ups overlap)


@pytest.fixture(scope="module")
def ui_process(tmp_path_factory):
    """``showwork ui`` (default host) on a free port, in its own session; stopped after the module.

    The secrets search requests it too, only so that the UI's slow start (three Python processes
    importing MLflow) overlaps the search.
    """
    port, folder = free_port(), tmp_path_factory.mktemp("ui")
    ui = UiRun(folder, "--port", str(port))  # with the venv's bin/ off PATH, as `make test` runs
    process = ui.process
    process.log = ui.log
    yield process, port
    with contextlib.suppress(ProcessLookupError):
        os.kill(process.pid, signal.SIGTERM)  # showwork ui stops its server's group
    try:
        process.wait(timeout=30)
    finally:
        ui.kill_everything()


@pytest.fixture(scope="module")
def ui_server(ui_process):
    """The UI of :func:`ui_process`, once it answers HTTP on 127.0.0.1."""
    process, port = ui_process
    deadline = time.monotonic() + 90
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as response:
                assert response.status == 200
            return process, port
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"showwork ui did not answer on 127.0.0.1:{port}: {process.log.read_text()[-2000:]}")
            time.sleep(0.25)


@pytest.mark.slow
@needs_proc
def test_ui_listens_on_loopback_only(ui_server):
    process, port = ui_server
    sockets = listening_sockets(descendants(process.pid))
    assert port in {s[1] for s in sockets}, sockets  # the check sees the UI's own socket
    assert not not_on_loopback(sockets)


@pytest.mark.slow
def test_ui_is_not_reachable_on_the_network_address(ui_server):
    _, port = ui_server
    address = network_address()
    if address is None:
        pytest.skip("this machine has no non-loopback address")
    assert connects("127.0.0.1", port)
    assert not connects(address, port), f"the UI answers on {address}:{port}"


@pytest.mark.slow
@pytest.mark.integration
@needs_proc
def test_ui_keeps_the_store_password_out_of_command_lines_and_output(tmp_path):
    """Issue 14 item 2: it printed ``postgresql://u:PASSWORD@...`` and passed it on the server's command line."""
    postgres = Postgres()
    try:
        postgres.start()
        plain = postgres.create_database("ui")  # trust authentication: any password is accepted
        uri = plain.replace(f"//{postgres.user}@", f"//{postgres.user}:{SECRET}-pw@")
        assert SECRET in uri
        port = free_port()
        # The password comes in the environment: on showwork's own command line `ps` would show it (warned below).
        ui = UiRun(tmp_path, "--port", str(port), environment=environment_without_venv_bin(MLFLOW_TRACKING_URI=uri))
        try:
            ui.wait_serving(port, timeout_s=180)  # the first start creates MLflow's schema
            lines = {pid: command_line(pid) for pid in ui.below() | {ui.process.pid}}
            assert not [line for line in lines.values() if SECRET in (line or "")], lines
            assert len(lines) >= 2 and any("-m mlflow" in (line or "") for line in lines.values()), lines  # all seen
            os.kill(ui.process.pid, signal.SIGTERM)
            assert ui.process.wait(timeout=30) == 128 + signal.SIGTERM
            output = ui.output()
            assert SECRET not in output, output[-2000:]
            assert f"MLflow UI for {plain.replace(f'{postgres.user}@', '')} on http://127.0.0.1:{port}" in output
        finally:
            ui.kill_everything()
    finally:
        postgres.cleanup()


def test_ui_warns_of_a_password_on_its_own_command_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with socket.socket() as taken:  # a port in use: the command stops right after its checks
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, out, err = cli("ui", "--tracking-uri", f"postgresql://me:{SECRET}-pw@db.example.org/mlflow", "--port", port)
    assert code == 1
    assert SECRET not in out + err
    warning, error = err.splitlines()
    assert warning == ("showwork: warning: --tracking-uri postgresql://db.example.org/mlflow carries a password, which"
                       " `ps` shows to every user of this machine: set MLFLOW_TRACKING_URI instead")
    assert error.startswith("showwork: error: cannot serve the MLflow UI on 127.0.0.1:")


@pytest.mark.parametrize("command", ["search", "race"])
def test_search_and_race_warn_of_a_password_on_their_own_command_line(tmp_path, monkeypatch, command):
    """Issue 35 item 7: only `ui` warned. Each command here is refused right after (the search exists already), before
    Ray starts or MLflow is reached."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    spaces = []
    for name, seed in (("pw-a", 1), ("pw-b", 2)):
        (tmp_path / f"{name}.yaml").write_text(f"name: {name}\nfamily: t.py:train\nmetric: {{name: acc, mode: max}}\n"
                                               f"num_trials: 4\nseed: {seed}\nspace:\n  x: {{distribution: uniform, low: 0, high: 1}}\n")
        spaces.append(tmp_path / f"{name}.yaml")
    (tmp_path / "t.py").write_text("def train(config, *, seed, device, reporter, data):\n    return {'acc': config['x']}\n")
    spec = load_search_spec(spaces[0])
    write_search(Ledger(tmp_path / "runs", "pw-a"), spec, [trial_record(0)])  # refused: it exists, and no --resume
    argv = [command, *(spaces[:1] if command == "search" else (*spaces, "--looks", "4,8", "--decide-at", "2"))]
    code, out, err = cli(*argv, "--storage", "runs", "--tracking-uri", f"postgresql://me:{SECRET}-pw@db.example.org/mlflow")
    assert code == 2
    assert SECRET not in out + err
    warning, error = err.splitlines()
    assert warning == ("showwork: warning: --tracking-uri postgresql://db.example.org/mlflow carries a password, which"
                       " `ps` shows to every user of this machine: set MLFLOW_TRACKING_URI instead")
    assert error.startswith("showwork: error: ") and "pw-a" in error


# ---------------------------------------------------------------- 4. user code

TRAINABLE_MODULE = """
    from pathlib import Path

    Path({marker!r}).touch()


    def train(config, *, seed, device, reporter, data):
        return {{"score": 1.0}}
"""


@pytest.fixture
def code(tmp_path, monkeypatch):
    """A factory of modules that leave a marker file when executed; ``imported()`` lists the markers.

    Module names carry the test's directory name, so no two tests share a cached module, and the
    modules are removed from ``sys.modules`` afterwards.
    """
    markers = tmp_path / "markers"
    markers.mkdir()
    before = set(sys.modules)

    class Code:
        tag = "swsec_" + "".join(c if c.isalnum() else "_" for c in tmp_path.name)

        @staticmethod
        def module(path: Path, label: str) -> Path:
            return write(path, TRAINABLE_MODULE.format(marker=str(markers / label)))

        @staticmethod
        def imported() -> set[str]:
            return {p.name for p in markers.iterdir()}

    monkeypatch.chdir(tmp_path)
    yield Code
    for name in set(sys.modules) - before:
        del sys.modules[name]


def test_module_family_imports_only_the_named_module(code, tmp_path, monkeypatch):
    folder = tmp_path / "lib"
    code.module(folder / f"{code.tag}_target.py", "target")
    code.module(folder / f"{code.tag}_sibling.py", "sibling")
    code.module(folder / f"{code.tag}_pkg" / "__init__.py", "pkg")
    code.module(folder / f"{code.tag}_pkg" / "a.py", "pkg.a")
    code.module(folder / f"{code.tag}_pkg" / "b.py", "pkg.b")
    monkeypatch.syspath_prepend(str(folder))
    train = resolve_family(f"{code.tag}_target:train", base_dir=tmp_path)
    assert code.imported() == {"target"}
    assert train is sys.modules[f"{code.tag}_target"].train
    resolve_family(f"{code.tag}_pkg.a:train")
    assert code.imported() == {"target", "pkg", "pkg.a"}  # a module's parent packages, as Python imports them


def test_file_family_loads_exactly_that_file(code, tmp_path):
    space = tmp_path / "space"
    code.module(space / "a.py", "space-a")
    code.module(space / "b.py", "space-b")
    code.module(tmp_path / "a.py", "cwd-a")  # the current directory has an a.py too
    code.module(space / "sub" / "a.py", "sub-a")
    train = resolve_family("a.py:train", base_dir=space)
    assert code.imported() == {"space-a"}
    assert train.__code__.co_filename == str((space / "a.py").resolve())
    resolve_family("sub/a.py:train", base_dir=space)
    assert code.imported() == {"space-a", "sub-a"}


@pytest.mark.parametrize("form", ["dotdot", "absolute"])
def test_file_family_outside_the_space_folder_is_allowed_and_loads_that_file_only(code, tmp_path, form):
    space, elsewhere = tmp_path / "spaces" / "one", tmp_path / "shared"
    code.module(elsewhere / "model.py", "shared-model")
    code.module(space / "model.py", "space-model")
    code.module(elsewhere / "other.py", "shared-other")
    where = "../../shared/model.py" if form == "dotdot" else str(elsewhere / "model.py")
    train = resolve_family(f"{where}:train", base_dir=space)
    assert code.imported() == {"shared-model"}
    assert train.__code__.co_filename == str((elsewhere / "model.py").resolve())


@pytest.mark.parametrize("template", [
    "{tag}_target:train; touch {marker}",
    "{tag}_target:train && touch {marker}",
    "{tag}_target:train | touch {marker}",
    "{tag}_target:train\nimport os; os.system('touch {marker}')",
    "{tag}_target:train\n",
    "__import__('os').system('touch {marker}'):train",
    "$(touch {marker}).py:train",
    "`touch {marker}`.py:train",
    "{tag}_target.py:train; touch {marker}",
    "{tag}_target:train:os.system",
])
def test_family_strings_cannot_smuggle_code(code, tmp_path, monkeypatch, template):
    code.module(tmp_path / f"{code.tag}_target.py", "target")
    monkeypatch.syspath_prepend(str(tmp_path))
    smuggled = tmp_path / "smuggled"
    family = template.format(tag=code.tag, marker=smuggled)
    with pytest.raises(InputError, match="family"):
        resolve_family(family, base_dir=tmp_path)
    assert not smuggled.exists()
    assert code.imported() == set()  # not even the module the string starts with


@pytest.mark.parametrize("family", [
    "os:system", "os:popen", "builtins:eval", "builtins:exec", "builtins:print", "subprocess:run",
    "subprocess:Popen", "shutil:rmtree", "os:__class__",
])
def test_callables_that_are_not_trainables_are_refused(family):
    with pytest.raises(InputError, match=r"is not a trainable.*def train\(config, \*, seed, device, reporter, data\)"):
        resolve_family(family)


def test_trainable_signature_rule(code, tmp_path):
    write(tmp_path / "forms.py", """
        import functools


        def plain(config, *, seed, device, reporter, data):
            return {}


        def positional(config, seed, device, reporter, data, extra=None):
            return {}


        def kwargs_only(config, **kwargs):
            return {}


        def no_config(*, seed, device, reporter, data):
            return {}


        def extra_required(config, *, seed, device, reporter, data, epochs):
            return {}


        def logged(function):
            @functools.wraps(function)
            def wrapper(*args, **kwargs):
                return function(*args, **kwargs)
            return wrapper


        decorated = logged(plain)
    """)
    for name in ("plain", "positional", "decorated"):
        assert callable(resolve_family(f"forms.py:{name}", base_dir=tmp_path))
    for name in ("kwargs_only", "no_config", "extra_required"):
        with pytest.raises(InputError, match=f"forms.py:{name}.* is not a trainable"):
            resolve_family(f"forms.py:{name}", base_dir=tmp_path)
    assert callable(resolve_family("bow_sst2"))  # a built-in family passes its own rule


def test_search_with_a_non_trainable_is_refused_before_anything_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    space = write(tmp_path / "space.yaml", """
        name: shell
        family: os:system
        metric: {name: score, mode: max}
        num_trials: 1
        space:
          x: {distribution: uniform, low: 0.0, high: 1.0}
    """)
    code, _, err = cli("search", space, "--no-progress", "--storage", tmp_path / "runs",
                       "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert code == EXIT_BAD_INPUT
    assert "os:system(command) is not a trainable" in err
    assert not (tmp_path / "runs").exists() and not (tmp_path / "mlflow.db").exists()


def test_a_loopback_cluster_address_is_joined_on_loopback():
    """Ray would rewrite 127.0.0.1 to the network address; for a loopback-only head that fails."""
    from ray._private import services

    from showwork.trials.ray_setup import _loopback_only

    network = services.node_ip_address_from_perspective(None)
    with socket.socket() as loopback, socket.socket() as everywhere:
        loopback.bind(("127.0.0.1", 0))
        loopback.listen()
        everywhere.bind(("0.0.0.0", 0))
        everywhere.listen()
        assert _loopback_only(f"127.0.0.1:{loopback.getsockname()[1]}")
        assert _loopback_only(f"localhost:{loopback.getsockname()[1]}")
        if not ipaddress.ip_address(network).is_loopback:  # a machine with a network address
            assert not _loopback_only(f"127.0.0.1:{everywhere.getsockname()[1]}")
    assert not _loopback_only("10.1.2.3:6379") and not _loopback_only("head.example.org:6379")
    assert not _loopback_only("127.0.0.1")  # no port: left to Ray


@pytest.mark.slow
@pytest.mark.integration
def test_a_search_prints_no_ray_token_notice_and_keeps_token_authentication(tmp_path):
    # Every fresh `showwork search` printed Ray's "Token authentication is enabled for this Ray
    # cluster" on stderr, before the one `showwork: error:` line of a refused search too.
    (tmp_path / "t.py").write_text(
        "import os\n\n\ndef train(config, *, seed, device, reporter, data):\n"
        "    return {'acc': config['x'], 'token_mode': float(os.environ.get('RAY_AUTH_MODE') == 'token')}\n"
    )
    (tmp_path / "s.yaml").write_text(
        "name: token-notice\nfamily: t.py:train\nmetric: {name: acc, mode: max}\nnum_trials: 2\n"
        "space:\n  x: {distribution: uniform, low: 0, high: 1}\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_AUTH_MODE", "RAY_ADDRESS")}
    done = subprocess.run(
        [sys.executable, "-m", "showwork", "search", "s.yaml", "--no-progress", "--storage", "runs",
         "--tracking-uri", "sqlite:///mlflow.db"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180,
    )
    assert done.returncode == 0, done.stderr
    assert "Token authentication" not in done.stderr
    records = [json.loads(p.read_text()) for p in sorted((tmp_path / "runs" / "token-notice" / "trials").glob("*.json"))]
    assert len(records) == 2 and all(r["metrics"]["token_mode"] == 1.0 for r in records)  # Ray's default protection kept

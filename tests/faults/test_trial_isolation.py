"""What one trial changes in its process, the next trial of the same worker does not see (issue 23 item 6).

Ray reuses a worker process for many trials (``reuse_actors``). Before, a trial's changes to its
process were the next one's starting point: an environment variable set by trial 0 was seen by
trial 1, and a trial that lowered its ``RLIMIT_AS`` made the next trial in that worker hang forever.
Now each trial runs in a process forked from its worker (:mod:`showwork.isolation`).

One real search, one trial at a time on one CPU, so that both trials run in the same worker (the
test checks it): trial 0 changes each of the six things, trial 1 reports what it finds. The search
runs as a subprocess with a time limit (before the fix, trial 1 could hang for ever).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from showwork.sampling import trial_seed
from showwork.store import Ledger

from helpers import search_process_environment
from processes import session_processes

pytestmark = [pytest.mark.slow, pytest.mark.integration]

SEED = 3
LEAKED_PATH = "/leaked/by/trial/0"

FAMILY = """
    import ctypes
    import json
    import os
    import random
    import resource
    import signal
    import sys
    from pathlib import Path

    import numpy as np

    HERE = Path(__file__).resolve().parent
    CHANGER = CHANGER_SEED  # the training seed of trial 0, which changes its process; trial 1 only looks


    def sigusr1_ignored():
        line = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("SigIgn:"))
        return bool(int(line.split()[1], 16) >> (signal.SIGUSR1 - 1) & 1)


    def change_the_process():
        os.environ["SHOWWORK_TRIAL_0"] = "was here"
        status = Path("/proc/self/status").read_text().splitlines()
        size = int(next(line for line in status if line.startswith("VmSize:")).split()[1]) * 1024
        room = size + 512 * 2**20  # enough for this trial to end; too little for a worker's next trial
        resource.setrlimit(resource.RLIMIT_AS, (room, room))  # a process cannot raise its hard limit again
        (HERE / "elsewhere").mkdir(exist_ok=True)
        os.chdir(HERE / "elsewhere")
        sys.path.insert(0, "LEAKED_PATH")
        ctypes.CDLL(None).signal(int(signal.SIGUSR1), ctypes.c_void_p(1))  # SIG_IGN, set in C as a library would
        random.seed(12345)
        np.random.seed(12345)


    def train(config, *, seed, device, reporter, data):
        seen = {
            "pid": os.getpid(), "ppid": os.getppid(),
            "environment_variable": os.environ.get("SHOWWORK_TRIAL_0"),
            "rlimit_as": [float(limit) for limit in resource.getrlimit(resource.RLIMIT_AS)],
            "cwd": os.getcwd(),
            "sys_path": "LEAKED_PATH" in sys.path,
            "signal_handler": sigusr1_ignored(),
            "random_state": [random.random(), float(np.random.random_sample())],
        }
        role = "change" if seed == CHANGER else "look"
        (HERE / f"seen-{role}.json").write_text(json.dumps(seen))
        if role == "change":
            change_the_process()
        return {"score": 1.0}
""".replace("LEAKED_PATH", LEAKED_PATH).replace("CHANGER_SEED", str(trial_seed(SEED, 0)))

ITEMS = ["environment_variable", "rlimit_as", "cwd", "sys_path", "signal_handler", "random_state"]


@pytest.fixture(scope="module")
def trials(tmp_path_factory, template_db) -> dict:
    """Run the search; return what trial 0 saw before it changed its process, and what trial 1 saw."""
    folder = tmp_path_factory.mktemp("isolation")
    shutil.copy(template_db, folder / "mlflow.db")
    (folder / "family.py").write_text(textwrap.dedent(FAMILY).lstrip())
    (folder / "space.yaml").write_text(textwrap.dedent(f"""
        name: isolation
        family: family.py:train
        metric: {{name: score, mode: max}}
        num_trials: 2
        seed: {SEED}
        max_concurrent: 1
        timeout_s: 60
        space:
          x: {{distribution: uniform, low: 0.0, high: 1.0}}
    """).lstrip())
    command = [sys.executable, "-m", "showwork", "search", "space.yaml", "--no-progress", "--num-cpus", "1",
               "--storage", "runs", "--tracking-uri", f"sqlite:///{folder / 'mlflow.db'}"]
    process = subprocess.Popen(command, cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               stdin=subprocess.DEVNULL, start_new_session=True,
                               # Tune moves each trial into a folder of its own unless told not to: cwd is then the worker's
                               env=search_process_environment(RAY_CHDIR_TO_TRIAL_DIR="0"))
    try:
        out, err = process.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        out, err = "", "the search did not end within 180 s"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        for pid in session_processes(process.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    seen = {role: json.loads((folder / f"seen-{role}.json").read_text()) if (folder / f"seen-{role}.json").exists() else None
            for role in ("change", "look")}
    return {"code": process.returncode, "out": out, "err": err, "records": Ledger(folder / "runs", "isolation").records(),
            "folder": folder, **seen}


def test_both_trials_finish_in_the_same_worker_each_in_a_process_of_its_own(trials):
    assert trials["code"] == 0, trials["err"]
    assert [(r.index, r.status) for r in trials["records"]] == [(0, "finished"), (1, "finished")]
    change, look = trials["change"], trials["look"]
    assert change["ppid"] == look["ppid"]  # one Ray worker ran both (the reuse that leaked state before)
    assert len({change["pid"], look["pid"], change["ppid"]}) == 3
    assert {r.pid for r in trials["records"]} == {change["ppid"]}  # a record names the worker (its logs are named by it)


@pytest.mark.parametrize("item", ITEMS)
def test_a_trial_does_not_see_what_the_previous_trial_changed(trials, item):
    """environment_variable: before, trial 1 saw trial 0's variable; rlimit_as: before, trial 1 hung for ever."""
    look = trials["look"]
    assert look is not None, f"trial 1 did not run: {trials['err'][-2000:]}"
    if item == "random_state":  # the draws trial 0's seeding would have given
        assert look[item] != [random.Random(12345).random(), float(np.random.RandomState(12345).random_sample())]
    else:
        assert look[item] == trials["change"][item], item


CUDA_AT_IMPORT = """
    import os
    import sys

    import torch

    if sys.modules.get("ray") is not None and sys.modules["ray"].is_initialized():
        # A stand-in for a module that initialises CUDA when a worker imports it (a tensor put on the GPU at
        # import): torch's own flag says so, as it would after that, on a machine without a GPU.
        torch.cuda.is_initialized = lambda: True


    def train(config, *, seed, device, reporter, data):
        return {"score": 1.0, "pid": os.getpid()}
"""


def test_a_family_that_initialises_cuda_at_import_runs_its_trials_in_the_worker_and_the_driver_warns(tmp_path, template_db):
    """CUDA does not survive fork: such a worker cannot fork usable trial processes, so it runs its trials itself."""
    shutil.copy(template_db, tmp_path / "mlflow.db")
    (tmp_path / "family.py").write_text(textwrap.dedent(CUDA_AT_IMPORT).lstrip())
    (tmp_path / "space.yaml").write_text("name: cuda-at-import\nfamily: family.py:train\nmetric: {name: score, mode: max}\n"
                                         "num_trials: 2\nmax_concurrent: 1\nspace:\n"
                                         "  x: {distribution: uniform, low: 0.0, high: 1.0}\n")
    done = subprocess.run([sys.executable, "-m", "showwork", "search", "space.yaml", "--no-progress", "--num-cpus", "1",
                           "--storage", "runs", "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}"], cwd=tmp_path,
                          capture_output=True, text=True, env=search_process_environment(), timeout=300)
    assert done.returncode == 0, done.stderr
    records = Ledger(tmp_path / "runs", "cuda-at-import").records()
    assert [r.status for r in records] == ["finished", "finished"]
    assert all(r.metrics["pid"] == r.pid for r in records)  # in the worker itself, not in a process of its own
    warnings = [line for line in done.stderr.splitlines() if line.startswith("showwork: warning:")]
    assert len(warnings) == 1 and "initialised CUDA when the worker imported it" in warnings[0]
    assert "not in processes of their own" in warnings[0]

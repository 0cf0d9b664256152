"""GPU trials in processes of their own (issue 23 items 4 and 6), on a real GPU: skipped without one.

Each trial runs in a process forked from its Ray worker, which never initialises CUDA (CUDA does not
survive ``fork``): the trial's process does, and its memory goes with it, also when it is killed at
its timeout. The family's module asks ``torch.cuda.is_available()`` when imported, as many do: the
worker answers it through NVML (``PYTORCH_NVML_BASED_CUDA_CHECK``), so its trials stay isolated; and it
initialises NVML itself, which on driver 580 opens the device files ``cuInit`` opens (issue 36).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap

import pytest

from showwork.sampling import trial_seed
from showwork.store import Ledger

from helpers import search_process_environment

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.slow, pytest.mark.integration,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

SEED = 4
HOLD_GIB = 2

FAMILY = """
    import json
    import os
    import time
    from pathlib import Path

    import torch

    from showwork.energy import load_nvml

    HERE = Path(__file__).resolve().parent
    AVAILABLE = torch.cuda.is_available()  # at import, in the worker: must not initialise CUDA there
    NVML = load_nvml() is not None  # NVML in the worker (as the energy reading): opens /dev/nvidia-uvm on driver 580
    HOLDER = HOLDER_SEED


    def train(config, *, seed, device, reporter, data):
        x = torch.ones(1, device=device)  # CUDA initialised here, in the trial's own process
        free, total = torch.cuda.mem_get_info()
        seen = {"pid": os.getpid(), "ppid": os.getppid(), "device": device, "available_at_import": AVAILABLE, "nvml": NVML,
                "free": free, "total": total, "ok": float(x.item())}
        (HERE / f"seen-{seed}.json").write_text(json.dumps(seen))
        if seed == HOLDER:  # holds GiB of GPU memory, then hangs past its timeout
            held = torch.empty(HOLD_GIB * 2**30, dtype=torch.uint8, device=device)
            torch.cuda.synchronize()
            time.sleep(3600)
            del held
        return {"score": 1.0}
"""


def test_a_gpu_trial_killed_at_its_timeout_gives_its_memory_back_to_the_next_trial(tmp_path, template_db):
    shutil.copy(template_db, tmp_path / "mlflow.db")
    holder = trial_seed(SEED, 0)
    (tmp_path / "family.py").write_text(textwrap.dedent(FAMILY).lstrip().replace("HOLDER_SEED", str(holder))
                                        .replace("HOLD_GIB", str(HOLD_GIB)))
    (tmp_path / "space.yaml").write_text(textwrap.dedent(f"""
        name: gpu-isolation
        family: family.py:train
        metric: {{name: score, mode: max}}
        num_trials: 2
        seed: {SEED}
        resources: {{cpus: 1, gpus: 1}}
        max_concurrent: 1
        timeout_s: 20
        space:
          x: {{distribution: uniform, low: 0.0, high: 1.0}}
    """).lstrip())
    done = subprocess.run([sys.executable, "-m", "showwork", "search", "space.yaml", "--no-progress", "--storage", "runs",
                           "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}"], cwd=tmp_path, capture_output=True,
                          text=True, env=search_process_environment(), timeout=600)
    assert done.returncode == 0, done.stderr
    records = Ledger(tmp_path / "runs", "gpu-isolation").records()
    assert [r.status for r in records] == ["timeout", "finished"]
    held, after = (json.loads((tmp_path / f"seen-{trial_seed(SEED, i)}.json").read_text()) for i in (0, 1))
    assert held["device"] == after["device"] == "cuda" and held["ok"] == after["ok"] == 1.0
    assert held["available_at_import"] and held["ppid"] == after["ppid"]  # one worker, still isolated
    assert held["nvml"]  # NVML initialised in the worker did not turn the isolation off (issue 36: an H200)
    assert held["pid"] != after["pid"]
    # The killed trial's GiB are free again for the next trial of the same GPU (its own context aside).
    assert after["free"] >= held["free"] - 2**29, (held, after)
    assert "showwork: warning: the family" not in done.stderr  # no fallback to unisolated trials

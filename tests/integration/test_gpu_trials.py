"""Trials on GPUs without a GPU (issue 28 items 2-3): each trial's energy from NVML (a stand-in here),
CUDA out of memory as a failure kind of its own, the optional memory cap, and cached memory given back;
with NVML used in the worker, the trials still in processes of their own (issue 36 item 1).

NVML is ``tests/standins/pynvml.py``; in the searches Ray is told that the node has one GPU
(``RAY_OVERRIDE_RESOURCES``), so it packs the trials on it and hands them ``CUDA_VISIBLE_DEVICES``
as on a GPU machine.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest

from showwork import energy
from showwork.constants import CUDA_OUT_OF_MEMORY
from showwork.store import Ledger, TrialRecord, failure_kind
from showwork.trials.execution import SearchContext, cuda_out_of_memory, run_trial

from helpers import search_process_environment, trial_record

STANDINS = Path(__file__).resolve().parents[1] / "standins"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def nvml(monkeypatch, tmp_path):
    """The stand-in NVML as ``pynvml``, with devices whose energy counters (mJ) the test sets."""
    spec = importlib.util.spec_from_file_location("pynvml", STANDINS / "pynvml.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "pynvml", module)  # before it runs: its dataclasses look their module up
    spec.loader.exec_module(module)

    class Devices:
        def set(self, *devices: dict) -> list[Path]:
            counters = []
            for i, device in enumerate(devices):
                counter = tmp_path / f"energy{i}.txt"
                counter.write_text(str(device.pop("mj", 0)))
                device.setdefault("energy_file", str(counter))
                device.setdefault("uuid", f"GPU-{i:04d}")
                counters.append(counter)
            monkeypatch.setenv("SHOWWORK_STANDIN_NVML", json.dumps({"devices": list(devices)}))
            return counters

    monkeypatch.delenv("CUDA_DEVICE_ORDER", raising=False)
    return Devices()


# ---------------------------------------------------------------- the split rule and the counter


def test_a_trial_is_charged_its_share_of_each_device():
    assert energy.device_share(0.25, 1) == 0.25
    assert energy.device_share(1, 1) == energy.device_share(2, 2) == energy.device_share(4, 2) == 1.0
    assert energy.device_share(0.5, 2) == 0.25
    with pytest.raises(ValueError, match="at least one device"):
        energy.device_share(0, 1)
    assert energy.joules_to_kwh(3.6e6) == 1.0


def test_the_energy_is_the_counters_growth_over_the_trial_times_the_share(nvml):
    (counter,) = nvml.set({"name": "H100", "mj": 10_000})
    meter = energy.GpuEnergy.start(0.25, visible="0")
    counter.write_text(str(10_000 + 8_000_000))  # the device used 8 kJ during the trial
    assert meter.joules() == pytest.approx(2000.0)  # a quarter of it
    meter.close()


def test_a_trial_on_two_devices_is_charged_both(nvml):
    first, second = nvml.set({"name": "H100", "mj": 0}, {"name": "H100", "mj": 500})
    meter = energy.GpuEnergy.start(2, visible="0,1")
    first.write_text("1000000")
    second.write_text("3000500")
    assert meter.joules() == pytest.approx(4000.0)
    meter.close()


def test_devices_named_by_uuid_are_found_by_uuid(nvml):
    _, second = nvml.set({"name": "H100", "uuid": "GPU-aaaa", "mj": 0}, {"name": "H100", "uuid": "GPU-bbbb", "mj": 0})
    meter = energy.GpuEnergy.start(1, visible="GPU-bbbb")
    second.write_text("2000000")
    assert meter.joules() == pytest.approx(2000.0)
    meter.close()


@pytest.mark.parametrize("visible, devices, why", [
    ("MIG-1234", [{"name": "A100"}], "a MIG instance has no counter of its own"),
    ("0", [{"name": "K80", "energy": False}], "no energy counter before Volta"),
    ("", [{"name": "H100"}], "no device visible"),
    ("3", [{"name": "H100"}], "a device NVML does not have"),
    ("1", [{"name": "H100"}, {"name": "A100"}], "mixed models: CUDA's numbers may not be NVML's"),
])
def test_energy_is_not_recorded_where_it_cannot_be_measured(nvml, visible, devices, why):
    nvml.set(*devices)
    assert energy.GpuEnergy.start(1, visible=visible) is None, why


def test_mixed_models_are_matched_by_pci_bus_order_when_cuda_uses_it(nvml, monkeypatch):
    _, second = nvml.set({"name": "H100", "mj": 0}, {"name": "A100", "mj": 0})
    monkeypatch.setenv("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    meter = energy.GpuEnergy.start(1, visible="1")
    second.write_text("1000000")
    assert meter.joules() == pytest.approx(1000.0)
    meter.close()


def test_without_a_driver_nothing_is_recorded(nvml, monkeypatch):
    monkeypatch.delenv("SHOWWORK_STANDIN_NVML", raising=False)  # the stand-in then fails as NVML does without a driver
    assert energy.load_nvml() is None
    assert energy.GpuEnergy.start(1, visible="0") is None


# ---------------------------------------------------------------- CUDA out of memory


def test_running_out_of_gpu_memory_is_its_own_failure_kind_whatever_carried_it():
    assert failure_kind("failed", "OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB") == CUDA_OUT_OF_MEMORY
    assert failure_kind("failed", "RuntimeError: CUDA error: out of memory\nCUDA kernel errors ...") == CUDA_OUT_OF_MEMORY
    assert failure_kind("failed", "RuntimeError: CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate") == CUDA_OUT_OF_MEMORY
    assert failure_kind("failed", "WorkerDied: the worker process died") == "WorkerDied"
    assert failure_kind("failed", "MemoryError: host memory") == "MemoryError"  # the host's RAM is not the GPU's
    assert trial_record(0, status="failed", score=None, error="CUDA out of memory: ValueError: x").failure_kind == CUDA_OUT_OF_MEMORY

    try:
        try:
            raise RuntimeError("CUDA out of memory. Tried to allocate 20.00 MiB")
        except RuntimeError as oom:
            raise ValueError("the training step failed") from oom
    except ValueError as wrapped:
        assert cuda_out_of_memory(wrapped)
    assert not cuda_out_of_memory(ValueError("lr must be positive"))


class FakeCuda:
    """torch.cuda as far as the worker uses it, on one initialised device."""

    def __init__(self) -> None:
        self.empty_cache_calls = 0
        self.fractions: list[tuple[float, int]] = []

    def is_available(self) -> bool:
        return True

    def is_initialized(self) -> bool:
        return True

    def device_count(self) -> int:
        return 1

    def reset_peak_memory_stats(self, device: int) -> None:
        pass

    def max_memory_allocated(self, device: int) -> int:
        return 1 << 20

    def max_memory_reserved(self, device: int) -> int:
        return 2 << 20

    def empty_cache(self) -> None:
        self.empty_cache_calls += 1

    def set_per_process_memory_fraction(self, fraction: float, device: int) -> None:
        self.fractions.append((fraction, device))


FAMILY = '''
import os
from pathlib import Path


def train(config, *, seed, device, reporter, data):
    assert device == "cuda", device
    counter = Path(os.environ["ENERGY_COUNTER"])
    counter.write_text(str(int(counter.read_text()) + 6_000_000))  # the GPU used 6 kJ during this trial
    reporter(epoch=0, acc=config["x"])
    if config["x"] > data["oom_above"]:
        try:
            raise RuntimeError("CUDA out of memory. Tried to allocate 9.00 GiB. GPU 0 has a total capacity of 8 GiB")
        except RuntimeError as error:
            raise ValueError("the step failed") from error
    return {"acc": config["x"]}
'''


def context(tmp_path: Path, **changes) -> SearchContext:
    from showwork.space import SearchSpace

    (tmp_path / "family.py").write_text(FAMILY)
    space = SearchSpace.from_dict({"x": {"distribution": "uniform", "low": 0.0, "high": 1.0}})
    fields = dict(name="gpu", storage_dir=str(tmp_path / "runs"), space=space.to_dict(), seed=0, family="family.py:train",
                  base_dir=str(tmp_path), data={"oom_above": 2.0}, metric="acc", mode="max", gpus_per_trial=0.5)
    fields.update(changes)
    return SearchContext(**fields)


def test_a_trial_on_a_gpu_records_its_energy_share_and_gives_its_cached_memory_back(nvml, monkeypatch, tmp_path):
    (counter,) = nvml.set({"name": "H100", "mj": 1000})
    monkeypatch.setenv("ENERGY_COUNTER", str(counter))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")  # what Ray sets for a trial it gave a GPU
    monkeypatch.setattr("showwork.trials.execution._device", lambda: "cuda")
    cuda = FakeCuda()
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    record = run_trial(context(tmp_path), 0)
    assert record.status == "finished", record.error
    assert record.gpu_energy_j == pytest.approx(3000.0)  # half the GPU: half of 6 kJ
    assert record.gpu_seconds == pytest.approx(0.5 * record.runtime_s)
    assert cuda.empty_cache_calls == 1 and cuda.fractions == []  # no cap unless asked for
    assert json.loads(record.to_json())["gpu_energy_j"] == pytest.approx(3000.0)


def test_the_memory_cap_gives_torch_the_trials_share_before_the_trainable_runs(nvml, monkeypatch, tmp_path):
    (counter,) = nvml.set({"name": "H100", "mj": 0})
    monkeypatch.setenv("ENERGY_COUNTER", str(counter))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    monkeypatch.setattr("showwork.trials.execution._device", lambda: "cuda")
    cuda = FakeCuda()
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    record = run_trial(context(tmp_path, gpus_per_trial=0.25, gpu_memory_cap=True), 0)
    assert record.status == "finished", record.error
    assert cuda.fractions == [(0.25, 0)]


def test_a_trial_out_of_gpu_memory_is_recorded_as_such_and_its_memory_given_back(nvml, monkeypatch, tmp_path):
    (counter,) = nvml.set({"name": "H100", "mj": 0})
    monkeypatch.setenv("ENERGY_COUNTER", str(counter))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    monkeypatch.setattr("showwork.trials.execution._device", lambda: "cuda")
    cuda = FakeCuda()
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    record = run_trial(context(tmp_path, data={"oom_above": -1.0}), 0)
    assert record.status == "failed" and record.failure_kind == CUDA_OUT_OF_MEMORY
    assert record.error.startswith("CUDA out of memory: ValueError: the step failed"), record.error
    assert record.gpu_energy_j == pytest.approx(3000.0)  # a failed trial used the GPU too
    assert cuda.empty_cache_calls == 1


def test_a_cpu_trial_records_no_energy_and_writes_no_energy_field(tmp_path):
    (tmp_path / "cpu.py").write_text("def train(config, *, seed, device, reporter, data):\n    return {'acc': config['x']}\n")
    record = run_trial(context(tmp_path, gpus_per_trial=0.0, family="cpu.py:train"), 0)
    assert record.status == "finished" and record.gpu_energy_j is None
    assert "gpu_energy_j" not in json.loads(record.to_json())  # records keep their old bytes without it
    assert TrialRecord.from_json(record.to_json()).gpu_energy_j is None


# ---------------------------------------------------------------- a real search, packed on a stand-in GPU


SEARCH_FAMILY = '''
import json
import os
import time
from pathlib import Path

import pynvml

try:  # at import, in the worker, as torch's NVML-based is_available() does: the GPU's device files opened
    pynvml.nvmlInit()
except pynvml.NVMLError:  # no driver (the search without NVML)
    pass


def train(config, *, seed, device, reporter, data):
    assert device == "cuda" and os.environ.get("CUDA_VISIBLE_DEVICES") == "0", (device, os.environ.get("CUDA_VISIBLE_DEVICES"))
    parent = Path(f"/proc/{os.getppid()}/cmdline").read_bytes().split(b"\\0")[0].decode()
    Path(__file__).with_name(f"seen-{seed}.json").write_text(json.dumps({"pid": os.getpid(), "parent": parent}))
    time.sleep(1.0)
    reporter(epoch=0, acc=config["x"])
    if config["x"] > data["oom_above"]:
        raise RuntimeError("CUDA out of memory. Tried to allocate 9.00 GiB")
    return {"acc": config["x"]}
'''


def standin_environment() -> dict[str, str]:
    """A search's environment on the stand-in GPU: Ray told of one GPU, the stand-ins first on ``PYTHONPATH``."""
    env = search_process_environment(RAY_OVERRIDE_RESOURCES=json.dumps({"GPU": 1}))
    env["PYTHONPATH"] = os.pathsep.join([str(STANDINS), str(REPO), *filter(None, [env.get("PYTHONPATH")])])
    env.pop("CUDA_VISIBLE_DEVICES", None)
    return env


def test_the_stand_ins_go_before_the_callers_python_path_and_keep_it(monkeypatch):
    # Packages carried on PYTHONPATH (a GPU machine without a package index) must stay importable.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(["/carried/packages", "/more"]))
    assert standin_environment()["PYTHONPATH"].split(os.pathsep) == [str(STANDINS), str(REPO), "/carried/packages", "/more"]
    monkeypatch.delenv("PYTHONPATH")
    assert standin_environment()["PYTHONPATH"].split(os.pathsep) == [str(STANDINS), str(REPO)]


def run_showwork(tmp_path: Path, *argv: str, nvml_watts: float | None = 100.0) -> subprocess.CompletedProcess:
    env = standin_environment()
    if nvml_watts is not None:
        env["SHOWWORK_STANDIN_NVML"] = json.dumps({"devices": [{"name": "Stand-in H100", "watts": nvml_watts}], "origin": 0,
                                                   "dev": str(tmp_path / "dev")})
    else:
        env.pop("SHOWWORK_STANDIN_NVML", None)
    return subprocess.run([sys.executable, "-m", "showwork", *argv], capture_output=True, text=True, timeout=600,
                          cwd=tmp_path, env=env)


def write_search(tmp_path: Path, name: str, oom_above: float, **resources) -> Path:
    (tmp_path / "family.py").write_text(SEARCH_FAMILY)
    space = tmp_path / f"{name}.yaml"
    space.write_text(textwrap.dedent(f"""
        name: {name}
        family: family.py:train
        data: {{oom_above: {oom_above}}}
        metric: {{name: acc, mode: max, bounds: [0, 1]}}
        num_trials: 4
        seed: 3
        resources: {json.dumps({"cpus": 0.5, **resources})}
        max_concurrent: 2
        failure_policy: worst
        space:
          x: {{distribution: uniform, low: 0.0, high: 1.0}}
    """).lstrip())
    return space


@pytest.mark.slow
@pytest.mark.integration
def test_a_packed_search_records_energy_counts_ooms_and_reports_both(tmp_path):
    from mlflow.tracking import MlflowClient

    from showwork.sampling import trial_config
    from showwork.space import load_search_spec

    space = write_search(tmp_path, "packed", oom_above=0.95, gpus=0.5)
    xs = [trial_config(load_search_spec(space).space, 3, i)["x"] for i in range(4)]
    assert sum(x > 0.95 for x in xs) == 1, xs  # the seed gives one trial that runs out of memory
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    done = run_showwork(tmp_path, "search", str(space), "--no-progress", "--storage", "runs", "--tracking-uri", uri)
    assert "1 x CUDA out of memory, first trial" in done.stdout, done.stdout + done.stderr

    records = Ledger(tmp_path / "runs", "packed").records()
    # NVML in the worker (its family's import, each trial's energy reading) leaves the trials in processes of
    # their own, forked from their Ray worker (issue 36 item 1); unforked, a trial's parent is the raylet.
    assert "showwork: warning: the family" not in done.stderr
    seen = [json.loads((tmp_path / f"seen-{r.seed}.json").read_text()) for r in records]
    assert all(trial["parent"].startswith("ray::") for trial in seen), seen
    assert len({trial["pid"] for trial in seen}) == len(records)
    assert [r.failure_kind for r in records] == [CUDA_OUT_OF_MEMORY if x > 0.95 else None for x in xs]
    for record in records:
        # 100 W for the trial's wall time (its sleep), half of it charged to a trial holding half the GPU
        assert record.gpu_energy_j == pytest.approx(0.5 * 100.0 * record.runtime_s, rel=0.05, abs=5.0), record
    child_runs = MlflowClient(tracking_uri=uri).search_runs(
        [MlflowClient(tracking_uri=uri).get_experiment_by_name("packed").experiment_id], "tags.`showwork.role` = 'trial'")
    logged = sorted(run.data.metrics["gpu_energy_j"] for run in child_runs)
    assert logged == pytest.approx(sorted(r.gpu_energy_j for r in records))

    out = tmp_path / "report"
    done = run_showwork(tmp_path, "report", "packed", "--storage", "runs", "--out", str(out), "--no-mlflow",
                        "--grid-intensity", "400")
    assert done.returncode == 0, done.stderr
    markdown = (out / "report.md").read_text()
    kwh = sum(r.gpu_energy_j for r in records) / 3.6e6
    assert "1 of 4 trials failed (1 × CUDA out of memory); counted as the worst value 0.0" in markdown
    assert "GPU energy: " in markdown and "kWh over 4 trials" in markdown
    assert "gCO₂e at the 400 gCO₂e/kWh given for the grid" in markdown
    assert f"{kwh:.3g}" in markdown or f"{kwh:.2g}" in markdown
    # the same from the MLflow projection alone
    out = tmp_path / "report-mlflow"
    done = run_showwork(tmp_path, "report", "mlflow:packed", "--tracking-uri", uri, "--out", str(out), "--no-mlflow")
    assert done.returncode == 0, done.stderr
    markdown = (out / "report.md").read_text()
    assert "1 of 4 trials failed (1 × CUDA out of memory); counted as the worst value 0.0" in markdown
    assert "kWh over 4 trials" in markdown


@pytest.mark.slow
@pytest.mark.integration
def test_without_nvml_the_energy_is_not_recorded_and_the_checklist_says_so(tmp_path):
    space = write_search(tmp_path, "blind", oom_above=2.0, gpus=1)
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    done = run_showwork(tmp_path, "search", str(space), "--no-progress", "--storage", "runs", "--tracking-uri", uri,
                        nvml_watts=None)
    assert done.returncode == 0, done.stderr
    records = Ledger(tmp_path / "runs", "blind").records()
    assert all(r.status == "finished" and r.gpu_energy_j is None and r.gpu_seconds > 0 for r in records)
    assert not any("gpu_energy_j" in json.loads(p.read_text()) for p in (tmp_path / "runs" / "blind" / "trials").glob("*.json"))
    out = tmp_path / "report"
    assert run_showwork(tmp_path, "report", "blind", "--storage", "runs", "--out", str(out), "--no-mlflow").returncode == 0
    assert "GPU energy: not recorded" in (out / "report.md").read_text()


def test_a_memory_cap_without_gpus_is_refused_with_its_line(tmp_path):
    space = write_search(tmp_path, "capped", oom_above=2.0, gpus=0, gpu_memory_cap=True)
    done = run_showwork(tmp_path, "validate", str(space), "--no-family")
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"showwork: error: {space}:") and "gpu_memory_cap needs gpus > 0" in line, line

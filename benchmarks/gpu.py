"""GPU packing: ``showwork search`` of one seeded trial list at 1, ½ and ¼ GPU per trial on one GPU.

Usage::

    python benchmarks/gpu.py [--device cuda|cpu] [--smoke] [--families deberta,mlp] [--packings 1,0.5,0.25]
                             [--trials N] [--trial-s FAMILY=S,...] [--min-trials N] [--budget-s S]
                             [--json PATH] [--markdown PATH] [--workdir DIR]

Run it from the repository root (the package need not be installed: the script puts the repository
root on ``sys.path`` and on ``PYTHONPATH`` for its child processes). It needs what ``showwork
search`` needs (Ray Tune 2.60, MLflow 3.17, pydantic, PyYAML) and what the families need (torch,
transformers, tokenizers, scikit-learn); it names what is missing and exits 2 before it starts.
The data come from ``$SHOWWORK_DATA_DIR`` (default ``../shared/data``): the MultiNLI sample
(``nli/mnli_lmbff_kshot_480.tsv``) and Reuters (``reuters/``).

What runs
---------
Two families, each one search space with a fixed seed, so the trial list (configurations and
training seeds) is the same at every packing:

- **deberta**: a DeBERTa-v3-small-sized model (6 layers, hidden 768, 12 heads, FFN 3,072,
  256 relative-position buckets, 128,100 embedding rows: 141 M parameters, as
  ``microsoft/deberta-v3-small``'s ``config.json``) built from a config with random weights
  (:func:`showwork_models.deberta.build_tiny_checkpoint`; no hub download), its tokenizer learned from the
  sample, fine-tuned on the sample's 320 training pairs (``--smoke``: the tiny 2-layer stand-in on
  32 pairs);
- **mlp**: the Reuters MLP of Tang et al. (2020) (``search_spaces/reuters_mlp.yaml``'s space, a few
  epochs, no early stopping; ``--smoke``: 200 documents).

Each runs as ``showwork search`` (a fresh Ray, a fresh MLflow SQLite store, a fresh ledger) at each
packing ``f``: ``resources: {cpus: C, gpus: f}``, ``max_concurrent: 1/f``, the same ``C`` at every
packing. An NVML sampler in this process reads the GPU every 0.2 s: utilisation, memory used,
each process's memory, and the total-energy counter.

What the table shows, per family and packing
--------------------------------------------
- **trials / hour**: finished trials over the trials phase (first trial's worker set-up started to
  last trial finished, from the ledger), and over the whole ``showwork search`` command (Ray and
  MLflow start-up included); the speed-up is the phase's against 1 GPU per trial.
- **GPU util.**: the median of NVML's utilisation samples over the trials phase (the share of
  time a kernel ran, not how much of the GPU it used); "not reported by NVML" where every sample said
  0 % while a trial held GPU memory (an H200 with driver 580 did).
- **peak GPU memory per trial**: the largest of torch's peak reserved memory of a trial
  (``peak_gpu_reserved_bytes`` in its record) and the largest NVML reading of the trial's process
  while it ran (the CUDA context included; also what a reused worker still held from before); "not
  reported by NVML" where no sample listed a process while a trial held GPU memory.
- **OOM**: trials recorded with the failure kind ``CUDA out of memory``; other failures by kind
  in the footnotes.
- **idle between trials**: over the search, the seconds from a trial's end until the next trial's
  worker set-up started on the share it freed (Ray's release of the share, the next trial's
  scheduling, and any wait for GPU memory not yet released), summed, and per trial.
- **energy / trial**: the mean of the records' ``gpu_energy_j`` (showwork's split rule,
  :data:`showwork.energy.SPLIT_RULE`); the same rule applied to this process's NVML timeline over
  each trial's ``runtime_s`` (a check on the recorded figure, measured outside the trial:
  :func:`runtime_energies_j`); and the device's whole energy over the trials phase divided by the
  trials (idle shares and the search's own overhead included).
- **scores vs 1 GPU**: whether every trial that finished at both packings has the identical score
  (the families seed everything and ask for deterministic kernels), else the largest difference.

``--device cpu`` (with ``--smoke``: what CI runs) takes the same path on a machine without a GPU: Ray
is told the node has one GPU (``RAY_OVERRIDE_RESOURCES``) so that it packs the trials as on a GPU,
NVML is the stand-in of ``tests/standins/pynvml.py`` (a 100 W device), and a family file beside
the spaces runs the built-in trainables on the CPU. Its numbers say nothing about GPUs.

``--budget-s`` bounds the searches (the warm-up and the DeBERTa checkpoint's build come before): a
search still running when its share of the budget is spent is stopped (Ctrl-C, as a user would) and
its finished trials count, marked "(stopped)" in the table; searches with no time left are skipped
and say so. The budget is planned before anything starts (:func:`plan_budget`): from the seconds a
trial takes at 1 GPU per trial (``--trial-s``; with ``--device cuda`` the H100's,
:data:`H100_TRIAL_S`) and :data:`STARTUP_S` per search, each search gets a share in proportion to
what it needs if packing gains nothing, and the run says up front how many trials finish at least in
each; it refuses (exit 2) a budget in which fewer than ``--min-trials`` (default: all ``--trials``,
16 without ``--smoke``) would finish in some search, and names the budget that suffices; without
``--budget-s`` it takes that budget. A search that ends early leaves its time to the ones after it.
Before the first search, what a search imports is imported once (:data:`WARM_UP_MODULES`; a cold
file cache would slow only the first search): where that fails, the run stops with the import's
error (exit 2) instead of failing every search. The JSON (``--json``) and Markdown (``--markdown``)
are rewritten after every search, so an interrupted run keeps what it measured.
"""

from __future__ import annotations

import argparse
import bisect
import heapq
import importlib.util
import json
import math
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

STANDIN_NVML_DIR = REPO_ROOT / "tests" / "standins"
FAMILIES = ("deberta", "mlp")
DEFAULT_PACKINGS = (1.0, 0.5, 0.25)
MIB = 2.0**20
DEFAULT_BUDGET_S = 420.0  # where no trial time is known (--smoke, --device cpu); else what the plan needs
DEFAULT_TRIALS = 16  # issue 36: at least 16 trials finished per family at every packing
SMOKE_TRIALS = 2
STARTUP_S = 40.0
"""A search's command beyond its trials phase (Ray's and MLflow's start, the search's end): 31-40 s in the
H100 runs (docs/measurements/gpu-h100-2026-11-26), the most of them here."""
H100_TRIAL_S = {"deberta": 10.6, "mlp": 6.0}
"""Seconds of the trials phase per finished trial at 1 GPU per trial on the H100 (2026-11-26: DeBERTa
53.2 s for 5, the MLP 30.0 s for 5): the trial time a --device cuda run assumes unless --trial-s says."""
WARM_UP_MODULES = ("torch", "transformers", "sklearn", "ray.tune", "mlflow", "showwork.cli", "showwork.run.driver",
                   "showwork.trials.worker", "showwork_models.deberta", "showwork_models.mlp")
"""What a search imports (its driver, its workers, the families), read once before the first search."""
NOT_REPORTED = "not reported by NVML"
MEMORY_HELD_BYTES = 64 * MIB  # device memory above the first sample's: some trial held memory
SEED = 0
SAMPLE_INTERVAL_S = 0.2
CUDA_OUT_OF_MEMORY = "CUDA out of memory"  # showwork.constants.CUDA_OUT_OF_MEMORY, read after the requirements check

# microsoft/deberta-v3-small config.json: the encoder's size, built with random weights.
DEBERTA_V3_SMALL = {
    "hidden_size": 768, "num_hidden_layers": 6, "num_attention_heads": 12, "intermediate_size": 3072,
    "max_position_embeddings": 512, "position_buckets": 256, "embedding_rows": 128_100, "dropout": 0.1,
    "do_lower_case": False, "vocab_size": 8000,
}
TINY_DEBERTA = {"vocab_size": 1000}  # build_tiny_checkpoint's defaults: 2 layers, 64 wide


@dataclass(frozen=True)
class Workload:
    """One family's search at every packing: its space's fixed part and its size."""

    family: str
    trials: int
    data: dict
    space: dict
    metric: dict
    timeout_s: float


def workloads(smoke: bool, trials: int | None, checkpoint: str) -> list[Workload]:
    """The two families' searches (``--smoke``: small enough for a 2-core CI machine)."""
    deberta_space = {
        "lr": {"distribution": "loguniform", "low": 1e-5, "high": 1e-4},
        "batch_size": {"distribution": "categorical", "choices": [16, 32]},
        "warmup": {"distribution": "uniform", "low": 0.0, "high": 0.3},
        "dropout": {"distribution": "uniform", "low": 0.0, "high": 0.3},
        "epochs": 1 if smoke else 4,
        "max_length": 32 if smoke else 128,
        "evals_per_epoch": 1,
        "weight_decay": 0.01,
        "clip_norm": 1.0,
    }
    mlp_space = {  # search_spaces/reuters_mlp.yaml (Tang et al. 2020), a few epochs without early stopping
        "batch_size": {"distribution": "categorical", "choices": [16, 32, 64]},
        "lr": 0.001,
        "seed": {"distribution": "int_uniform", "low": 0, "high": 10_000_000},
        "dropout": {"distribution": "uniform", "low": 0.05, "high": 0.7},
        "num_layers": 1,
        "hidden_dim": {"distribution": "int_uniform", "low": 256, "high": 768},
        "features": "tfidf",
        "epochs": 1 if smoke else 4,
        "patience": 0,
    }
    n = trials or (SMOKE_TRIALS if smoke else DEFAULT_TRIALS)
    return [
        Workload("deberta", n, {"dataset": "mnli", "model": checkpoint, **({"train_size": 32} if smoke else {})},
                 deberta_space, {"name": "val_accuracy", "mode": "max", "test": "test_accuracy", "bounds": [0, 1]},
                 120.0 if smoke else 300.0),
        Workload("mlp", n, {"dataset": "reuters", **({"train_size": 200} if smoke else {})}, mlp_space,
                 {"name": "val_f1", "mode": "max", "test": "test_f1", "bounds": [0, 1]}, 120.0 if smoke else 300.0),
    ]


# --- what the benchmark needs ---------------------------------------------------------------------------


REQUIREMENTS = {  # import name -> what to install
    "ray.tune": "ray[tune]==2.60.0 (a dependency of showwork-tuning)",
    "mlflow": "mlflow==3.17.2 (a dependency of showwork-tuning)",
    "pydantic": "pydantic>=2.6",
    "yaml": "pyyaml>=6",
    "rich": "rich>=13",
    "scipy": "scipy>=1.11",
    "torch": "torch (the `models` extra: pip install 'showwork-tuning[models]')",
    "transformers": "transformers>=5,<6 (the `models` extra)",
    "tokenizers": "tokenizers (the `models` extra)",
    "sklearn": "scikit-learn (the `models` extra)",
}


def missing_requirements() -> list[str]:
    """What to install for each module that cannot be found here."""
    missing = []
    for module, what in REQUIREMENTS.items():
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:  # the parent package is missing (ray for ray.tune)
            found = False
        if not found:
            missing.append(f"{module}: {what}")
    return missing


def data_dir() -> Path:
    return Path(os.environ.get("SHOWWORK_DATA_DIR") or REPO_ROOT.parent / "shared" / "data")


def missing_data(root: Path) -> list[str]:
    needed = ("nli/mnli_lmbff_kshot_480.tsv", "reuters/modapte90_train.jsonl.gz", "reuters/modapte90_test.jsonl.gz")
    return [str(root / path) for path in needed if not (root / path).exists()]


def warm_up(env: dict) -> str | None:
    """Import what a search imports (:data:`WARM_UP_MODULES`) once in a throwaway process, so that a cold file
    cache slows no search; None, or why it failed (its last line of stderr): the searches would fail the same way."""
    try:
        done = subprocess.run([sys.executable, "-c", "import " + ", ".join(WARM_UP_MODULES)], env=env, capture_output=True,
                              text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return "it took more than 300 s"
    if done.returncode == 0:
        return None
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    return (lines or [f"exit {done.returncode}"])[-1][:400]


# --- the budget, planned -------------------------------------------------------------------------------


@dataclass(frozen=True)
class SearchPlan:
    """One search's share of the budget and the trials that finish in it by the estimate."""

    family: str
    packing: float
    share_s: float
    at_least: int | None  # None: no trial time known for the family


def search_need_s(trials: int, trial_s: float) -> float:
    """Seconds a search of ``trials`` trials needs if packing gains nothing: :data:`STARTUP_S` and the trials one
    after another. Packed trials that run faster than that (the H100: 1.5-2.5x) only leave time to spare."""
    return STARTUP_S + trials * trial_s


def plan_searches(budget_s: float, searches: list[tuple[str, float]], trials: int,
                  trial_s: dict[str, float]) -> list[SearchPlan]:
    """The ``budget_s`` split over ``searches`` ((family, packing), in the order they run): in proportion to what
    each needs (:func:`search_need_s`) where every family's trial time is known, else equally; and how many trials
    finish in each share at least, by the same estimate (``min(trials, (share - STARTUP_S) // trial_s)``)."""
    if not searches:
        return []
    known = all(family in trial_s for family, _ in searches)
    needs = [search_need_s(trials, trial_s[family]) if known else 1.0 for family, _ in searches]
    plans = []
    for (family, packing), need in zip(searches, needs):
        share = budget_s * need / sum(needs)
        at_least = None
        if family in trial_s:
            at_least = max(0, min(trials, math.floor((share - STARTUP_S) / trial_s[family] + 1e-9)))  # not 7.999...
        plans.append(SearchPlan(family, packing, share, at_least))
    return plans


def budget_needed_s(searches: list[tuple[str, float]], trials: int, min_trials: int, trial_s: dict[str, float]) -> float:
    """The least budget whose :func:`plan_searches` lets ``min_trials`` finish in every search (trial times known)."""
    needs = [search_need_s(trials, trial_s[family]) for family, _ in searches]
    return sum(needs) * max(search_need_s(min_trials, trial_s[family]) / need for (family, _), need in zip(searches, needs))


# --- NVML, sampled --------------------------------------------------------------------------------------


@dataclass
class Sample:
    t: float
    utilization: float | None
    memory_used: float | None
    energy_mj: float | None
    processes: dict[int, float] = field(default_factory=dict)


class GpuSampler:
    """Reads device 0 through NVML every :data:`SAMPLE_INTERVAL_S` seconds in a thread, until :meth:`stop`."""

    def __init__(self) -> None:
        from showwork.energy import load_nvml

        self.nvml = load_nvml()
        self.samples: list[Sample] = []
        self.device: dict | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if self.nvml is not None:
            try:
                self.handle = self.nvml.nvmlDeviceGetHandleByIndex(0)
                name = self.nvml.nvmlDeviceGetName(self.handle)
                memory = self.nvml.nvmlDeviceGetMemoryInfo(self.handle)
                self.device = {"name": name.decode() if isinstance(name, bytes) else str(name), "memory_total": memory.total}
            except Exception as error:  # no device 0
                self.device = {"error": f"{type(error).__name__}: {error}"}
                self.nvml = None

    def _read(self, call, *args):
        try:
            return call(self.handle, *args)
        except Exception:
            return None

    def sample(self) -> Sample:
        nvml = self.nvml
        utilization = self._read(nvml.nvmlDeviceGetUtilizationRates)
        memory = self._read(nvml.nvmlDeviceGetMemoryInfo)
        energy = self._read(nvml.nvmlDeviceGetTotalEnergyConsumption)
        processes = {}
        for process in self._read(nvml.nvmlDeviceGetComputeRunningProcesses) or ():
            used = getattr(process, "usedGpuMemory", None)
            if used is not None and used < 2**63:  # NVML_VALUE_NOT_AVAILABLE is 2**64 - 1
                processes[int(process.pid)] = float(used)
        return Sample(time.time(), None if utilization is None else float(utilization.gpu),
                      None if memory is None else float(memory.used), None if energy is None else float(energy), processes)

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_INTERVAL_S):
            self.samples.append(self.sample())

    def start(self) -> GpuSampler:
        if self.nvml is not None:
            self.samples.append(self.sample())
            self._thread = threading.Thread(target=self._run, name="gpu-sampler", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self.nvml is not None:
            try:
                self.nvml.nvmlShutdown()
            except Exception:
                pass

    def between(self, start: float, end: float) -> list[Sample]:
        return [s for s in list(self.samples) if start <= s.t <= end]


def nvml_gaps(samples: list[Sample], memory_held: bool) -> list[str]:
    """What NVML did not report while a trial held GPU memory: ``"utilization"`` where every sample said 0 %,
    ``"process_memory"`` where no sample listed a process (an H200 with driver 580 did both while a trial held
    2 GiB). Without memory held, 0 % and no process are what NVML should say."""
    if not samples or not memory_held:
        return []
    gaps = []
    if not any(s.utilization for s in samples):
        gaps.append("utilization")
    if not any(s.processes for s in samples):
        gaps.append("process_memory")
    return gaps


def counter_at(counter: list[tuple[float, float]], t: float) -> float | None:
    """The energy counter (mJ) at time ``t``, interpolated between the samples ``(time, mJ)`` around it (in time
    order); None outside them."""
    times = [time_ for time_, _ in counter]
    i = bisect.bisect_left(times, t)
    if not counter or i >= len(counter) or (i == 0 and times[0] != t):
        return None
    if times[i] == t:
        return counter[i][1]
    (t0, e0), (t1, e1) = counter[i - 1], counter[i]
    return e0 + (e1 - e0) * (t - t0) / (t1 - t0)


def runtime_energies_j(records: list, counter: list[tuple[float, float]], packing: float) -> dict[int, float]:
    """Each finished trial's energy over its ``runtime_s`` (from ``started_at``, the trainable's call), from the
    device's counter samples and showwork's split rule: what showwork charges, measured outside the trial."""
    from showwork.energy import device_share

    share = device_share(packing, 1)
    energies = {}
    for r in records:
        start = _timestamp(r.started_at)
        if r.status != "finished" or start is None or r.runtime_s is None:
            continue
        before, after = counter_at(counter, start), counter_at(counter, start + r.runtime_s)
        if before is not None and after is not None:
            energies[r.index] = (after - before) / 1000.0 * share
    return energies


# --- one search -----------------------------------------------------------------------------------------


def write_space(folder: Path, name: str, workload: Workload, packing: float, cpus: float, family: str) -> Path:
    import yaml

    document = {
        "name": name,
        "family": family,
        "data": workload.data,
        "metric": workload.metric,
        "num_trials": workload.trials,
        "seed": SEED,
        "resources": {"cpus": cpus, "gpus": packing},
        "max_concurrent": max(1, round(1 / packing)),
        "timeout_s": workload.timeout_s,
        "max_retries": 1,
        "failure_policy": "worst",
        "space": workload.space,
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


CPU_FAMILIES = '''\
"""The built-in trainables on the CPU, for `benchmarks/gpu.py --device cpu`: Ray gives the trials a GPU
it does not have (RAY_OVERRIDE_RESOURCES), so showwork hands them device "cuda"."""
from showwork_models import deberta as _deberta
from showwork_models import mlp as _mlp


def deberta(config, *, seed, device, reporter, data):
    return _deberta.train(config, seed=seed, device="cpu", reporter=reporter, data=data)


def mlp(config, *, seed, device, reporter, data):
    return _mlp.train(config, seed=seed, device="cpu", reporter=reporter, data=data)
'''


def run_search(space: Path, folder: Path, env: dict, limit_s: float) -> dict:
    """``showwork search SPACE`` in ``folder`` (its own ledger and MLflow store), stopped with
    Ctrl-C (SIGINT to its process group) when ``limit_s`` seconds have passed."""
    command = [sys.executable, "-m", "showwork", "search", str(space), "--no-progress", "--storage", str(folder / "runs"),
               "--tracking-uri", f"sqlite:///{folder / 'mlflow.db'}"]
    started = time.time()
    process = subprocess.Popen(command, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    stopped = False
    try:
        out, err = process.communicate(timeout=max(1.0, limit_s))
    except subprocess.TimeoutExpired:
        stopped = True
        os.killpg(process.pid, signal.SIGINT)
        try:
            out, err = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, err = process.communicate()
    ended = time.time()
    (folder / "search.out").write_text(out or "")
    (folder / "search.err").write_text(err or "")
    error = None
    if process.returncode != 0 and not stopped:
        lines = [line for line in (err or "").strip().splitlines() if line.strip()]
        error = (lines or [f"exit {process.returncode}"])[-1][:400]
    return {"command_started": started, "command_ended": ended, "wall_s": ended - started, "stopped": stopped,
            "exit": process.returncode, "error": error}


def _timestamp(text: str | None) -> float | None:
    return None if not text else datetime.fromisoformat(str(text)).timestamp()


def idle_between_trials(intervals: list[tuple[float, float]], slots: int) -> float:
    """Seconds the ``slots`` shares sat free between trials: each trial (start, end), in order of
    start, takes the share freed earliest; the time from that share's last end to the start counts.

    >>> idle_between_trials([(0, 10), (0, 10), (12, 20), (11, 15)], 2)
    3.0
    """
    free = [-math.inf] * slots  # a share not used yet: its first trial's wait is start-up, not idle time
    heapq.heapify(free)
    idle = 0.0
    for start, end in sorted(intervals):
        available = heapq.heappop(free)
        if math.isfinite(available):
            idle += max(0.0, start - available)
        heapq.heappush(free, max(end, start))
    return idle


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def measure(folder: Path, name: str, packing: float, run: dict, sampler: GpuSampler | None) -> dict:
    """The row of one search, from its ledger and the NVML samples taken while it ran."""
    from showwork.store import Ledger

    records = Ledger(folder / "runs", name).records() if (folder / "runs" / name).exists() else []
    finished = [r for r in records if r.status == "finished"]
    intervals, by_trial = [], {}
    for r in records:
        start, end = _timestamp(r.started_at), _timestamp(r.finished_at)
        if start is None or end is None:
            continue
        begun = start - (r.setup_s or 0.0)  # the worker's set-up for this trial began
        intervals.append((begun, end))
        by_trial[r.index] = (begun, end, r.pid)
    phase = (min(s for s, _ in intervals), max(e for _, e in intervals)) if intervals else None
    phase_s = phase[1] - phase[0] if phase else None
    slots = max(1, round(1 / packing))
    row = {
        "packing": packing, "concurrency": slots, "trials": len(records), "finished": len(finished),
        "failed_by_kind": {}, "oom": 0, "phase_s": phase_s, "wall_s": run["wall_s"], "stopped": run["stopped"],
        "error": run["error"], "scores": {r.index: r.score for r in finished},
        "per_hour_phase": len(finished) / phase_s * 3600 if phase_s else None,
        "per_hour_command": len(finished) / run["wall_s"] * 3600 if run["wall_s"] > 0 else None,
        "idle_s": idle_between_trials(intervals, slots) if intervals else None,
        "runtime_s": _median([r.runtime_s for r in finished]),
        "setup_s": _median([r.setup_s for r in finished if r.setup_s is not None]),
    }
    for r in records:
        if r.failure_kind is not None:
            row["failed_by_kind"][r.failure_kind] = row["failed_by_kind"].get(r.failure_kind, 0) + 1
    row["oom"] = row["failed_by_kind"].get(CUDA_OUT_OF_MEMORY, 0)
    reserved = [r.peak_gpu_reserved_bytes for r in records if r.peak_gpu_reserved_bytes is not None]
    row["torch_reserved_max"] = max(reserved) if reserved else None
    row["torch_reserved_median"] = _median(reserved)
    energies = [r.gpu_energy_j for r in finished if r.gpu_energy_j is not None]
    row["energy_j_recorded"] = sum(energies) / len(energies) if energies else None
    row["energy_recorded_trials"] = len(energies)
    row.update(utilization_median=None, process_memory_max=None, device_memory_max=None, energy_j_device=None,
               energy_j_runtime=None, nvml_not_reported=[])
    if sampler is not None and sampler.nvml is not None and phase:
        samples = sampler.between(*phase)
        row["utilization_median"] = _median([s.utilization for s in samples if s.utilization is not None])
        row["device_memory_max"] = max((s.memory_used for s in samples if s.memory_used is not None), default=None)
        idle = sampler.samples[0].memory_used if sampler.samples else None  # before the first search
        held = bool(row["torch_reserved_max"]) or (row["device_memory_max"] is not None and idle is not None
                                                   and row["device_memory_max"] - idle > MEMORY_HELD_BYTES)
        row["nvml_not_reported"] = nvml_gaps(samples, held)
        if "utilization" in row["nvml_not_reported"]:
            row["utilization_median"] = None
        per_trial = []
        for begun, end, pid in by_trial.values():
            used = [s.processes[pid] for s in sampler.between(begun, end) if pid in s.processes]
            if used:
                per_trial.append(max(used))
        row["process_memory_max"] = max(per_trial) if per_trial else None
        counters = [s.energy_mj for s in samples if s.energy_mj is not None]
        if len(counters) >= 2 and finished:
            row["energy_j_device"] = (counters[-1] - counters[0]) / 1000.0 / len(finished)
        timeline = [(s.t, s.energy_mj) for s in list(sampler.samples) if s.energy_mj is not None]
        row["energy_j_runtime"] = _mean(list(runtime_energies_j(records, timeline, packing).values()))
    return row


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


# --- the run ------------------------------------------------------------------------------------------


def build_checkpoint(workdir: Path, smoke: bool) -> tuple[str, dict]:
    """The DeBERTa checkpoint the trials fine-tune, and what it is."""
    from showwork_models.data import load_dataset
    from showwork_models.deberta import build_tiny_checkpoint

    texts = load_dataset("mnli", {}).train.texts
    sizes = dict(TINY_DEBERTA if smoke else DEBERTA_V3_SMALL)
    started = time.time()
    path = build_tiny_checkpoint(workdir / ("deberta-tiny" if smoke else "deberta-v3-small-sized"), texts, **sizes)
    import torch  # noqa: F401 - build_tiny_checkpoint imported it
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(path)
    weights = sum(f.stat().st_size for f in path.glob("*.safetensors"))
    return str(path), {"layers": config.num_hidden_layers, "hidden": config.hidden_size, "embedding_rows": config.vocab_size,
                       "weights_mib": weights / MIB, "parameters_m": weights / 4 / 1e6, "build_s": time.time() - started}


def search_env(device: str, workdir: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    env["MLFLOW_DISABLE_TELEMETRY"] = "true"
    env.setdefault("SHOWWORK_DATA_DIR", str(data_dir()))
    for name in ("RAY_ADDRESS", "MLFLOW_TRACKING_URI"):
        env.pop(name, None)
    if device == "cpu":
        env["RAY_OVERRIDE_RESOURCES"] = json.dumps({"GPU": 1})
        env["PYTHONPATH"] = os.pathsep.join((str(STANDIN_NVML_DIR), env["PYTHONPATH"]))
        env.pop("CUDA_VISIBLE_DEVICES", None)  # Ray sets each trial's (its one stand-in GPU: "0")
    return env


def compare_scores(rows: list[dict]) -> None:
    """Each row's scores against the 1-GPU row of its family: ``scores_vs_one``."""
    base = next((r for r in rows if r["packing"] == 1.0), None)
    for row in rows:
        if base is None or row is base:
            row["scores_vs_one"] = None if base is None else {"common": len(row["scores"]), "max_abs_diff": 0.0}
            continue
        common = sorted(set(base["scores"]) & set(row["scores"]))
        diffs = [abs(base["scores"][i] - row["scores"][i]) for i in common]
        row["scores_vs_one"] = {"common": len(common), "max_abs_diff": max(diffs) if diffs else None}


def _fraction(packing: float) -> str:
    return {1.0: "1", 0.5: "½", 0.25: "¼"}.get(packing, f"{packing:g}")


def _mib(value: float | None) -> str:
    return "—" if value is None else f"{value / MIB:,.0f} MiB"


def _number(value: float | None, digits: int = 0, suffix: str = "") -> str:
    return "—" if value is None else f"{value:,.{digits}f}{suffix}"


def _energy(recorded: float | None, runtime: float | None, device: float | None) -> str:
    if recorded is None and runtime is None and device is None:
        return "not recorded"
    return f"{_number(recorded, 0, ' J')} / {_number(runtime, 0, ' J')} / {_number(device, 0, ' J')}"


def _utilization(row: dict) -> str:
    return NOT_REPORTED if "utilization" in row.get("nvml_not_reported", ()) else _number(row["utilization_median"], 0, " %")


def _process_memory(row: dict) -> str:
    return NOT_REPORTED if "process_memory" in row.get("nvml_not_reported", ()) else _mib(row["process_memory_max"])


def _scores_cell(row: dict) -> str:
    compared = row.get("scores_vs_one")
    if compared is None:
        return "—"
    if row["packing"] == 1.0:
        return "(reference)"
    if not compared["common"]:
        return "no common trials"
    if compared["max_abs_diff"] == 0.0:
        return f"identical ({compared['common']} trials)"
    return f"max \\|Δ\\| {compared['max_abs_diff']:.4g} ({compared['common']} trials)"


TABLE_HEADER = (
    "| family | GPU per trial | trials at once | finished (failed) | trials / hour: trials phase (command) "
    "| speed-up | median GPU util. | peak GPU memory per trial: torch reserved / process (NVML) | OOM "
    "| idle between trials | energy / trial: recorded / over runtime_s (NVML timeline) / device | scores vs 1 GPU |",
    "|---|---|---|---|---|---|---|---|---|---|---|---|",
)


def table_rows(family: dict) -> list[str]:
    """One family's rows of the table (``family``: an entry of the report's ``families``)."""
    label = family["family"] + (f" ({family['model']})" if family.get("model") else "")
    if family.get("skipped"):
        return [f"| {label} | — | — | — | — | — | — | — | — | — | — | {family['skipped']} |"]
    lines = []
    base = next((r for r in family["rows"] if r["packing"] == 1.0 and r["per_hour_phase"]), None)
    for row in family["rows"]:
        if row.get("skipped"):
            lines.append(f"| {label} | {_fraction(row['packing'])} | {row['concurrency']} | — | — | — | — | — | — | — | — "
                         f"| {row['skipped']} |")
            continue
        speed = f"{row['per_hour_phase'] / base['per_hour_phase']:.2f}×" if base and row["per_hour_phase"] else "—"
        failed = row["trials"] - row["finished"]
        stopped = " (stopped)" if row["stopped"] else ""
        idle = "—" if row["idle_s"] is None else f"{row['idle_s']:.1f} s ({row['idle_s'] / max(1, row['trials']):.2f} s/trial)"
        lines.append(
            f"| {label} | {_fraction(row['packing'])} | {row['concurrency']} | {row['finished']} ({failed}){stopped} "
            f"| {_number(row['per_hour_phase'])} ({_number(row['per_hour_command'])}) | {speed} "
            f"| {_utilization(row)} | {_mib(row['torch_reserved_max'])} / {_process_memory(row)} "
            f"| {row['oom']} | {idle} | {_energy(row['energy_j_recorded'], row.get('energy_j_runtime'), row['energy_j_device'])} "
            f"| {_scores_cell(row)} |"
        )
    return lines


def markdown(report: dict) -> str:
    device = report["device"]
    lines = [f"GPU packing — `showwork search` on {device['label']}; {report['trials_note']}", "", *TABLE_HEADER]
    for family in report["families"]:
        lines += table_rows(family)
    lines += ["", *report["notes"]]
    for family in report["families"]:
        for row in family.get("rows", ()):
            for kind, count in sorted(row.get("failed_by_kind", {}).items()):
                lines.append(f"- {family['family']} at {_fraction(row['packing'])} GPU: {count} × {kind}")
            if row.get("error"):
                lines.append(f"- {family['family']} at {_fraction(row['packing'])} GPU: the search failed: {row['error']}")
    return "\n".join(lines)


def notes(report: dict) -> list[str]:
    device = report["device"]
    out = [
        "Trials / hour: finished trials over the trials phase (first worker set-up to last trial's end, from the ledger); "
        "in brackets over the whole `showwork search` command (Ray and MLflow start-up included). Speed-up: the phase's "
        "against 1 GPU per trial. GPU util.: median of NVML's utilisation samples (every 0.2 s) over the phase.",
        "Peak GPU memory: the largest torch peak reserved memory of a trial (its record) / the largest NVML reading of a "
        "trial's process while it ran (CUDA context included). Idle between trials: seconds from a trial's end until the "
        "next trial's set-up began on the share it freed, summed over the search (per trial in brackets).",
        "Energy / trial: the mean recorded `gpu_energy_j` (NVML's total-energy counter; "
        "a trial holding g GPUs on n devices is charged min(1, g/n) of each device's energy over its wall time) / the "
        "same rule over each trial's `runtime_s`, from this run's NVML timeline (a check on the recorded figure) / the "
        "device's whole energy over the trials phase per finished trial (idle shares and overhead included).",

        f"Each search: a fresh Ray and MLflow SQLite store; `resources.cpus` {report['cpus_per_trial']:g} at every packing; "
        f"seed {SEED}, so every packing trains the same configurations with the same seeds.",
    ]
    if any(row.get("nvml_not_reported") for family in report["families"] for row in family.get("rows", ())):
        out.append(f"`{NOT_REPORTED}`: while a trial held GPU memory, every NVML sample of the phase said 0 % utilisation, "
                   "or none listed a process: the driver gave no figure, and 0 % would be a claim.")
    if report.get("plan_note"):
        out.append(report["plan_note"])
    if device["kind"] == "cpu":
        out.append("CPU mode (`--device cpu`): Ray was told of one GPU that is not there and NVML is a 100 W stand-in; the "
                   "trials ran on the CPU. These numbers exercise the path and say nothing about GPUs.")
    return out


def run(args) -> dict:
    from showwork.constants import CUDA_OUT_OF_MEMORY as oom_kind

    assert oom_kind == CUDA_OUT_OF_MEMORY
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="showwork-bench-gpu-"))
    workdir.mkdir(parents=True, exist_ok=True)
    failure = warm_up(search_env(args.device, workdir))  # a cold file cache would slow the first search's imports only
    if failure:
        if not args.workdir and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        raise WarmUpFailed(failure)
    trial_s = trial_times(args)
    if args.device == "cpu":
        sys.path.insert(0, str(STANDIN_NVML_DIR))
        os.environ.setdefault("SHOWWORK_STANDIN_NVML", json.dumps(
            {"devices": [{"name": "stand-in GPU (CPU run)", "uuid": "GPU-standin-0", "watts": 100.0}], "origin": time.time()}))
        sys.modules.pop("pynvml", None)
    sampler = GpuSampler().start()
    import torch

    if args.device == "cuda" and sampler.device and "name" in sampler.device:  # no CUDA context in this process
        label = f"{sampler.device['name']} ({sampler.device['memory_total'] / 2**30:.0f} GiB)"
    elif args.device == "cuda":
        label = f"{torch.cuda.get_device_name(0)} ({torch.cuda.get_device_properties(0).total_memory / 2**30:.0f} GiB)"
    else:
        label = f"CPU ({os.cpu_count()} cores; stand-in GPU)"
    cpus = args.cpus if args.cpus else max(0.5, min(4.0, (os.cpu_count() or 2) // max(1, round(1 / min(args.packings)))))
    report = {"device": {"kind": args.device, "label": label, "nvml": sampler.device, "torch": torch.__version__,
                         "cuda": getattr(torch.version, "cuda", None)},
              "python": platform.python_version(), "cpus": os.cpu_count(), "cpus_per_trial": cpus,
              "packings": list(args.packings), "budget_s": args.budget_s, "families": [], "notes": [],
              "plan": [vars(plan) for plan in args.plan], "plan_note": args.plan_note}
    env = search_env(args.device, workdir)
    if args.device == "cpu":
        (workdir / "cpu_families.py").write_text(CPU_FAMILIES)
    checkpoint, model, unbuilt = None, None, None
    if "deberta" in args.families:
        progress("building the DeBERTa checkpoint ...")
        try:
            checkpoint, model = build_checkpoint(workdir, args.smoke)
            progress(f"  {model['parameters_m']:.3g} M parameters in {model['build_s']:.1f} s")
        except Exception as error:  # the other family still runs; the row says why this one did not
            unbuilt = f"not run: the checkpoint could not be built ({type(error).__name__}: {str(error)[:200]})"
            progress(unbuilt)
    plans = [w for w in workloads(args.smoke, args.trials, checkpoint or "") if w.family in args.families]
    report["trials_note"] = ", ".join(f"{w.trials} trials of {w.family}" for w in plans) + " per packing"
    remaining = [(w.family, packing) for w in plans for packing in args.packings]  # the searches not run yet, in order
    deadline = time.time() + args.budget_s  # the searches' budget, as planned: the warm-up and the checkpoint come before
    try:
        for workload in plans:
            entry = {"family": workload.family, "rows": []}
            if workload.family == "deberta" and unbuilt:
                entry["skipped"] = unbuilt
                report["families"].append(entry)
                remaining = [search for search in remaining if search[0] != workload.family]
                continue
            if workload.family == "deberta":
                entry["model"] = ("tiny stand-in" if args.smoke else "v3-small-sized") + f", {model['parameters_m']:.3g} M parameters"
                entry["checkpoint"] = model
            report["families"].append(entry)
            family = workload.family if args.device == "cuda" else f"../cpu_families.py:{workload.family}"
            for packing in args.packings:
                name = f"gpu-{workload.family}-{str(packing).replace('.', 'p')}"
                left = deadline - time.time()
                planned = plan_searches(left, remaining, workload.trials, trial_s)[0]  # with what the ones before left over
                share = planned.share_s
                remaining.pop(0)
                if left < 20:
                    entry["rows"].append({"packing": packing, "concurrency": max(1, round(1 / packing)),
                                          "skipped": "not run: the time budget was spent"})
                    continue
                folder = workdir / name
                shutil.rmtree(folder, ignore_errors=True)
                folder.mkdir()
                space = write_space(folder, name, workload, packing, cpus, family)
                estimate = "" if planned.at_least is None else f", at least {planned.at_least} trials by the estimate"
                progress(f"{workload.family} at {packing:g} GPU per trial (at most {share:.0f} s{estimate}) ...")
                outcome = run_search(space, folder, env, share)
                try:
                    row = measure(folder, name, packing, outcome, sampler)
                except Exception as error:  # a record it cannot read: the row says so, the others still run
                    row = {"packing": packing, "concurrency": max(1, round(1 / packing)),
                           "skipped": f"not measured: {type(error).__name__}: {str(error)[:200]}"}
                    progress(row["skipped"])
                    entry["rows"].append(row)
                    continue
                entry["rows"].append(row)
                progress(f"  {row['finished']}/{row['trials']} finished in {outcome['wall_s']:.1f} s"
                         + (f", {row['per_hour_phase']:.0f} trials/h" if row["per_hour_phase"] else "")
                         + (f": {row['error']}" if row["error"] else ""))
                compare_scores([r for r in entry["rows"] if not r.get("skipped")])
                save(report, args, sampler)
    finally:
        sampler.stop()
        if not args.workdir and not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    save(report, args, sampler)
    return report


class WarmUpFailed(Exception):
    """The warm-up import failed: every search would fail the same way."""


def save(report: dict, args, sampler: GpuSampler | None = None) -> None:
    report["notes"] = notes(report)
    if sampler is not None:  # the NVML timeline: time, utilisation %, memory used, energy counter (mJ)
        report["samples"] = [[round(s.t, 2), s.utilization, s.memory_used, s.energy_mj] for s in list(sampler.samples)]
    text = markdown(report)
    if args.markdown:
        Path(args.markdown).write_text(text + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2, default=str))


def progress(message: str) -> None:
    print(f"[gpu] {message}", file=sys.stderr, flush=True)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda", help="cuda (default) or cpu: the same path without a GPU")
    parser.add_argument("--smoke", action="store_true", help="tiny models and data, 2 trials per search (CI)")
    parser.add_argument("--families", default=",".join(FAMILIES), metavar="LIST", help="deberta,mlp (default both)")
    parser.add_argument("--packings", default=",".join(f"{p:g}" for p in DEFAULT_PACKINGS), metavar="F1,F2,...",
                        help="GPUs per trial, each 1/k (default 1,0.5,0.25)")
    parser.add_argument("--trials", type=int, metavar="N",
                        help=f"trials per search (default {DEFAULT_TRIALS}, {SMOKE_TRIALS} with --smoke)")
    parser.add_argument("--trial-s", default="", metavar="FAMILY=S,...",
                        help="seconds per trial at 1 GPU per trial, to plan the budget (default with --device cuda: the H100's, "
                             + ", ".join(f"{f}={t:g}" for f, t in H100_TRIAL_S.items()) + ")")
    parser.add_argument("--min-trials", type=int, metavar="N",
                        help="refuse a budget in which fewer trials finish in some search, by the estimate (default: --trials; 0: never)")
    parser.add_argument("--cpus", type=float, metavar="C", help="resources.cpus per trial (default: CPUs // the most trials at once, 0.5 to 4)")
    parser.add_argument("--budget-s", type=float, metavar="S",
                        help=f"the whole run's time (default: what the plan needs where trial times are known, else {DEFAULT_BUDGET_S:g})")
    parser.add_argument("--json", metavar="PATH", help="write the rows, per-trial scores and the device as JSON (after every search)")
    parser.add_argument("--markdown", metavar="PATH", help="write the table as Markdown (after every search)")
    parser.add_argument("--workdir", metavar="DIR", help="keep the spaces, ledgers and MLflow stores here (default: a temporary folder, removed)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    args = parser.parse_args(argv)
    args.families = [f.strip() for f in args.families.split(",") if f.strip()]
    unknown = [f for f in args.families if f not in FAMILIES]
    if unknown or not args.families:
        parser.error(f"--families: {', '.join(unknown) or 'none given'} (known: {', '.join(FAMILIES)})")
    try:
        packings = [float(x) for x in args.packings.split(",") if x.strip()]
    except ValueError:
        parser.error("--packings: comma-separated numbers such as 1,0.5,0.25")
    if not packings or any(not 0 < p <= 1 or abs(1 / p - round(1 / p)) > 1e-9 for p in packings):
        parser.error("--packings: each must be 1/k for a whole k >= 1 (1, 0.5, 0.25, ...)")
    args.packings = sorted(set(packings), reverse=True)
    if args.trials is not None and args.trials < 1:
        parser.error("--trials must be at least 1")
    if (args.budget_s is not None and args.budget_s <= 0) or (args.cpus is not None and args.cpus <= 0):
        parser.error("--budget-s and --cpus must be positive")
    if args.min_trials is not None and args.min_trials < 0:
        parser.error("--min-trials must be 0 or more")
    stated, args.trial_s = args.trial_s, {}
    for item in filter(None, (part.strip() for part in stated.split(","))):
        family, _, seconds = item.partition("=")
        try:
            args.trial_s[family.strip()] = float(seconds)
        except ValueError:
            parser.error(f"--trial-s: {item!r} is not FAMILY=SECONDS")
        if family.strip() not in FAMILIES or not args.trial_s[family.strip()] > 0:
            parser.error(f"--trial-s: {item!r}: FAMILY is one of {', '.join(FAMILIES)} and SECONDS positive")
    return args


def trial_times(args) -> dict[str, float]:
    """Seconds per trial at 1 GPU per trial for the families run: --trial-s, else the H100's with --device cuda."""
    known = dict(H100_TRIAL_S) if args.device == "cuda" and not args.smoke else {}
    known.update(args.trial_s)
    return {family: seconds for family, seconds in known.items() if family in args.families}


def plan_budget(args) -> str | None:
    """Set ``args.budget_s`` (where not given), ``args.plan`` and ``args.plan_note``; the refusal, where the budget
    is too small for ``--min-trials`` trials to finish in every search by the estimate, else None."""
    trials = args.trials or (SMOKE_TRIALS if args.smoke else DEFAULT_TRIALS)
    least = trials if args.min_trials is None else args.min_trials
    searches = [(family, packing) for family in FAMILIES if family in args.families for packing in args.packings]
    trial_s = trial_times(args)
    everything_known = all(family in trial_s for family in args.families)
    if args.budget_s is None:
        args.budget_s = budget_needed_s(searches, trials, trials, trial_s) if everything_known else DEFAULT_BUDGET_S
    args.plan = plan_searches(args.budget_s, searches, trials, trial_s)
    times = ", ".join(f"{family} {seconds:g} s" for family, seconds in trial_s.items())
    if not trial_s:
        args.plan_note = (f"The plan: {args.budget_s:.0f} s split equally over {len(searches)} searches of {trials} trials; "
                          "how many finish is not estimated (no trial time known: --trial-s FAMILY=S).")
    else:
        args.plan_note = (f"The plan: {args.budget_s:.0f} s over {len(searches)} searches of {trials} trials ({times} per trial "
                          f"at 1 GPU, {STARTUP_S:g} s of start-up per search, packing assumed to gain nothing): at least "
                          + ", ".join(f"{'?' if plan.at_least is None else plan.at_least} ({plan.family} at "
                                      f"{_fraction(plan.packing)})" for plan in args.plan) + " finish.")
    short = [plan for plan in args.plan if plan.at_least is not None and plan.at_least < least]
    if not short:
        return None
    plan = short[0]
    needed = budget_needed_s(searches, trials, least, {f: trial_s.get(f, 0.0) for f, _ in searches}) if everything_known else None
    return (f"--budget-s {args.budget_s:g} is too small: by the estimate ({times} per trial at 1 GPU, {STARTUP_S:g} s of start-up "
            f"per search, packing assumed to gain nothing) only {plan.at_least} of {trials} trials finish in the {plan.family} "
            f"search at {_fraction(plan.packing)} GPU, and {least} must finish in every search"
            + (f": give --budget-s {math.ceil(needed)} or more" if needed else "")
            + " (or fewer --trials, a smaller --min-trials, or the measured --trial-s)")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    refusal = plan_budget(args)
    if refusal:
        print(f"benchmarks/gpu.py: error: {refusal}", file=sys.stderr)
        return 2
    progress(args.plan_note)
    missing = missing_requirements()
    if missing:
        print("benchmarks/gpu.py: error: it runs `showwork search` and the model families, and this Python "
              f"({sys.executable}) lacks:\n  " + "\n  ".join(missing), file=sys.stderr)
        return 2
    absent = missing_data(data_dir())
    if absent:
        print(f"benchmarks/gpu.py: error: data missing (set SHOWWORK_DATA_DIR): {', '.join(absent)}", file=sys.stderr)
        return 2
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("benchmarks/gpu.py: error: --device cuda, but torch sees no CUDA device (torch "
              f"{torch.__version__}); on a machine without a GPU run --device cpu --smoke", file=sys.stderr)
        return 2
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    try:
        report = run(args)
    except WarmUpFailed as error:
        print(f"benchmarks/gpu.py: error: importing what a search imports ({', '.join(WARM_UP_MODULES)}) failed: {error}",
              file=sys.stderr)
        return 2
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Measure what one trial of each built-in model family costs, to choose ``resources.gpus`` (GPU packing).

Usage::

    python benchmarks/families.py [--quick] [--families mlp,lstm,...] [--trials N] [--max-epochs E]
                                  [--train-size N] [--dev-size N] [--threads T] [--trial-timeout S]
                                  [--deberta-model ID_OR_DIR] [--json PATH]
    python benchmarks/families.py --gpu-fractions 1,0.5,0.25 ...   # the fractions the suggestion picks from

Run it from the repository root (the package need not be installed: the script puts the repository
root on ``sys.path`` and on ``PYTHONPATH`` for its child processes). It prints one Markdown table,
``family | space | trials | caps | peak RSS | peak GPU memory | trial time | parameters |
suggested resources.gpus``, measured in this one run on this machine, followed by footnotes. With
``--json PATH`` the same rows (display strings and raw per-trial numbers) and the environment are
also written to PATH.

What is measured
----------------
For each built-in family, with its paper search space (``search_spaces/*.yaml``, one row per file),
trial ``i = 0 .. N-1`` runs the configuration drawn exactly as ``showwork search`` draws it,
``trial_config(spec.space, spec.seed, i)`` with the training seed ``trial_seed(spec.seed, i)``, on
the space's ``data`` — each trial in a fresh Python process (so nothing is cached in memory and the
peak of one trial is not the peak of another), on ``cuda`` when ``torch.cuda.is_available()``, else
on ``cpu``, with ``OMP_NUM_THREADS`` (torch's intra-op threads) set to the space's ``resources.cpus``
(at most this machine's CPUs), as a Ray worker would have it. Per trial:

- **trial time**: wall time of the ``train(...)`` call alone (data loading, tokenisation — cached on
  disk in ``$SHOWWORK_CACHE_DIR`` after the first trial — model building, training and evaluation);
- **peak RSS**: ``ru_maxrss`` of the child process (the interpreter, torch and the other imports
  included: the footnotes give the median resident set just before ``train`` was called);
- **peak GPU memory**, on CUDA only: ``torch.cuda.max_memory_allocated`` (tensors) and
  ``torch.cuda.max_memory_reserved`` (what PyTorch's caching allocator held), and, where
  ``nvidia-smi`` (or ``pynvml``) shows this process, the GPU memory the process used at the end of
  the trial, whose excess over the reserved memory is the CUDA context;
- **parameters**: the count the family returns (``parameters``), with the split sizes it trained on.

Caps, so that the CPU run finishes in minutes: ``--max-epochs E`` (default 1) replaces a
configuration's ``epochs`` by ``min(epochs, E)`` (0: no cap), and the training set is subsampled with
``data.train_size`` (``--train-size N`` for every family, else a per-family default where a full epoch
on a CPU takes minutes: ``CPU_TRAIN_SIZE``), and where a capped trial would be mostly dev evaluation
the dev set carved out of the training set is made smaller with ``data.dev_size`` (``--dev-size N``, else
``CPU_DEV_SIZE``: the LSTM's). The table states the caps of each row. Peak memory does
not depend on the number of epochs, but it does on the training set where the vocabulary is built from
it (the MLP's input layer, the embedding matrices of the LSTM, CNN and BCN): a row trained on a
subsample understates those (the parameter count shows by how much), so the GPU numbers to act on come
from a run without ``--train-size`` caps on a GPU machine.

The suggestion: ``resources.gpus`` is the smallest of ``--gpu-fractions`` (default 1, 0.5, 0.25) — the
most trials per GPU — such that ``(1 + 20 %) x (max reserved + CUDA context)`` fits into that fraction
of the GPU's total memory, where the CUDA context is the measured median (or ``ASSUMED_CONTEXT_MIB``
when no trial's process memory could be read). The 20 % safety margin covers batches longer than any
the trials drew and allocator fragmentation. Families that never touch the GPU (``logreg``,
``bow_sst2``) get ``0``. Memory that fits is necessary, not sufficient: trials sharing a GPU also
share its compute, which ``benchmarks/gpu.py`` measures. On a machine without a GPU the column says
"needs a GPU run".

The throughput of packed trials (trials per hour, utilisation, energy at 1, ½ and ¼ GPU per trial,
through ``showwork search``) is ``benchmarks/gpu.py``'s to measure.

BCN runs in its own environment (``.venv-bcn``, allennlp-light, see the Makefile); without it the
row says so. DeBERTa: without ``--deberta-model`` (a hub id such as ``microsoft/deberta-v3-base``, on a
machine that reaches the hub, or a local checkpoint directory) the trials use a tiny random
DeBERTa-v2 checkpoint written by ``showwork_models.deberta.build_tiny_checkpoint`` (2 layers, 64 wide, the
family tests' stand-in): its row then measures the family's code path, not DeBERTa-base's memory.

``--quick`` runs 1 trial per family with smaller training sets, for CI smoke tests. Linux or macOS
(``resource``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)

SPACES_DIR = Path(REPO_ROOT) / "search_spaces"
BCN_VENV = Path(REPO_ROOT) / ".venv-bcn"

DEFAULT_TRIALS = 3
QUICK_TRIALS = 1
DEFAULT_MAX_EPOCHS = 1
DEFAULT_FRACTIONS = (1.0, 0.5, 0.25)
SAFETY_MARGIN = 0.20  # on top of the measured reserved memory and CUDA context
ASSUMED_CONTEXT_MIB = 500.0  # CUDA context per process when it cannot be measured
DEFAULT_TRIAL_TIMEOUT_S = 1800.0
MIB = 1024.0**2

# data.train_size per family where a full CPU epoch takes minutes (None: the whole training set).
# Full-epoch CPU times on 2 cores (README): mlp ~12 s, logreg ~5 s per fit, cnn ~45 s, bcn ~4 min, lstm ~25 min.
CPU_TRAIN_SIZE = {"bow_sst2": None, "mlp": None, "lstm": 300, "cnn": None, "logreg": None, "bcn": 1000, "deberta": None}
QUICK_TRAIN_SIZE = {"bow_sst2": 2000, "mlp": 500, "lstm": 60, "cnn": 400, "logreg": 1500, "bcn": 200, "deberta": 64}
# data.dev_size where the dev set is carved out of the training set and its evaluation dominates a capped
# CPU trial: the LSTM reads 512 tokens of each of Reuters' 1,943 dev documents (and 3,019 test ones).
CPU_DEV_SIZE = {"lstm": 300}
NO_GPU_FAMILIES = {"logreg", "bow_sst2"}  # numpy / scikit-learn: never touch the GPU


# --- the child: one trial ------------------------------------------------------------------------


def _rss_now_kib() -> float | None:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1024.0
    except (OSError, ValueError, IndexError):
        return None


def _peak_rss_kib() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / 1024.0 if sys.platform == "darwin" else float(peak)  # bytes on macOS, KiB on Linux


def _process_gpu_mib(pid: int) -> float | None:
    """GPU memory used by process ``pid`` (NVML, else nvidia-smi); None where neither shows it."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            for i in range(pynvml.nvmlDeviceGetCount()):
                handle = pynvml.nvmlDeviceGetHandleByIndex(i)
                for proc in pynvml.nvmlDeviceGetComputeRunningProcesses(handle):
                    if proc.pid == pid and proc.usedGpuMemory:
                        return proc.usedGpuMemory / MIB
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        pass
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                                 capture_output=True, text=True, timeout=30).stdout
            for line in out.splitlines():
                parts = [p.strip() for p in line.split(",")]
                if len(parts) == 2 and parts[0] == str(pid):
                    return float(parts[1])
        except (OSError, ValueError, subprocess.SubprocessError):
            pass
    return None  # e.g. another PID namespace (containers)


def _child_main(task_path: str) -> None:
    with open(task_path) as f:
        task = json.load(f)
    started = time.perf_counter()
    result: dict = {"status": "failed"}
    try:
        from showwork.families import resolve_family
        from showwork.sampling import nest, trial_config, trial_seed
        from showwork.space import load_search_spec
        from showwork.trainable import Reporter

        spec = load_search_spec(task["space"])
        train = resolve_family(spec.family, Path(task["space"]).parent)
        flat = trial_config(spec.space, spec.seed, task["index"])
        if task["max_epochs"] and "epochs" in flat:
            result["epochs_drawn"] = flat["epochs"]
            flat["epochs"] = min(int(flat["epochs"]), task["max_epochs"])
        data = {**spec.data, **task["data"]}
        seed = trial_seed(spec.seed, task["index"])
        result["config"] = flat
        result["rss_before_kib"] = _rss_now_kib()
        reporter = Reporter()
        clock = time.perf_counter()
        outcome = train(nest(flat), seed=seed, device=task["device"], reporter=reporter, data=data)
        result["trial_s"] = time.perf_counter() - clock
        result["status"] = "finished"
        result["parameters"] = outcome.get("parameters")
        result["split_sizes"] = outcome.get("split_sizes")
        result["score"] = outcome.get(spec.metric.name)
        result["epochs_run"] = outcome.get("epochs_run")
    except BaseException as error:  # noqa: BLE001 - a failed trial is a result, reported in the table
        if isinstance(error, KeyboardInterrupt):
            raise
        result["error"] = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"[:300]
    result["peak_rss_kib"] = _peak_rss_kib()
    torch = sys.modules.get("torch")  # only a family that imported torch can have used the GPU
    if task["device"] == "cuda" and torch is not None and torch.cuda.is_initialized():
        torch.cuda.synchronize()
        result["gpu_allocated_mib"] = torch.cuda.max_memory_allocated() / MIB
        result["gpu_reserved_mib"] = torch.cuda.max_memory_reserved() / MIB
        result["gpu_process_mib"] = _process_gpu_mib(os.getpid())
    elif task["device"] == "cuda":
        result["gpu_allocated_mib"] = result["gpu_reserved_mib"] = 0.0
        result["gpu_unused"] = True
    result["child_s"] = time.perf_counter() - started
    with open(task["result"], "w") as f:
        json.dump(result, f)


# --- the parent ----------------------------------------------------------------------------------


def _spaces() -> list[tuple[str, Path, object]]:
    """(family, path, spec) of every built-in family's paper space, in BUILTIN_FAMILIES order."""
    from showwork.families import BUILTIN_FAMILIES
    from showwork.space import load_search_spec

    out = []
    for path in sorted(SPACES_DIR.glob("*.yaml")):
        spec = load_search_spec(path)
        if spec.family in BUILTIN_FAMILIES:
            out.append((spec.family, path, spec))
    order = list(BUILTIN_FAMILIES)
    return sorted(out, key=lambda item: (order.index(item[0]), item[1].name))


def _gpu() -> dict | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    props = torch.cuda.get_device_properties(0)
    return {"name": props.name, "total_mib": props.total_memory / MIB, "count": torch.cuda.device_count()}


def _python_for(family: str) -> tuple[str | None, str | None]:
    """The interpreter that runs ``family``'s trials, or (None, why not)."""
    if family != "bcn":
        return sys.executable, None
    python = BCN_VENV / "bin" / "python"
    if python.exists():
        return str(python), None
    try:  # allennlp-light in this environment after all
        import importlib.util

        if importlib.util.find_spec("allennlp") is not None:
            return sys.executable, None
    except (ImportError, ValueError):
        pass
    return None, ("not run: needs .venv-bcn (allennlp-light in an environment of its own; `make test` builds it, "
                  "or `python -m venv .venv-bcn && .venv-bcn/bin/pip install -e '.[bcn]'`)")


def _tiny_deberta(workdir: Path, spec) -> str:
    from showwork_models.data import load_dataset
    from showwork_models.deberta import build_tiny_checkpoint

    data = {k: v for k, v in spec.data.items() if k in ("dir", "source")}
    texts = load_dataset(spec.data.get("dataset", "mnli"), data).train.texts
    return str(build_tiny_checkpoint(workdir / "tiny-deberta", texts))


def _env(threads: int | None) -> dict:
    """The children's environment; ``threads`` None leaves the thread counts to Ray (its workers get
    ``OMP_NUM_THREADS`` = their ``resources.cpus`` when the driver's environment does not set it)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = REPO_ROOT + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        if threads is None:
            env.pop(name, None)
        else:
            env[name] = str(threads)
    return env


def _run_trial(python: str, space: Path, index: int, device: str, data: dict, max_epochs: int, threads: int,
               timeout: float, workdir: Path) -> dict:
    task_path, result_path = workdir / f"task-{index}.json", workdir / f"result-{index}.json"
    result_path.unlink(missing_ok=True)
    task = {"space": str(space), "index": index, "device": device, "data": data, "max_epochs": max_epochs,
            "result": str(result_path)}
    task_path.write_text(json.dumps(task))
    started = time.perf_counter()
    try:
        done = subprocess.run([python, os.path.abspath(__file__), "--child", str(task_path)], env=_env(threads),
                              capture_output=True, text=True, timeout=timeout, cwd=REPO_ROOT)
    except subprocess.TimeoutExpired:
        return {"status": "failed", "error": f"timed out after {timeout:g} s", "process_s": time.perf_counter() - started}
    if not result_path.exists():
        tail = (done.stderr or "").strip().splitlines()[-1:] or [f"exit status {done.returncode}"]
        return {"status": "failed", "error": f"child died (exit {done.returncode}): {tail[0][:300]}",
                "process_s": time.perf_counter() - started}
    result = json.loads(result_path.read_text())
    result["process_s"] = time.perf_counter() - started
    return result


def _fraction_text(f: float) -> str:
    return f"{f:g}"


def suggest(trials: list[dict], gpu: dict | None, fractions: tuple[float, ...], family: str) -> tuple[str, dict]:
    """The ``resources.gpus`` suggestion for a row, with the numbers it rests on."""
    if family in NO_GPU_FAMILIES:
        return "0 (CPU only)", {"fraction": 0.0}
    if gpu is None:
        return "needs a GPU run", {}
    done = [t for t in trials if t.get("status") == "finished" and t.get("gpu_reserved_mib") is not None]
    if not done:
        return "—", {}
    reserved = max(t["gpu_reserved_mib"] for t in done)
    contexts = [t["gpu_process_mib"] - t["gpu_reserved_mib"] for t in done if t.get("gpu_process_mib") is not None]
    context = statistics.median(contexts) if contexts else ASSUMED_CONTEXT_MIB
    need = (1.0 + SAFETY_MARGIN) * (reserved + context)
    fitting = [f for f in fractions if need <= f * gpu["total_mib"]]
    basis = {"reserved_max_mib": reserved, "context_mib": context, "context_measured": bool(contexts), "need_mib": need}
    if not fitting:
        return f"1 (needs {need / 1024:.1f} GiB > {min(fractions):g}…1 × {gpu['total_mib'] / 1024:.0f} GiB)", basis
    best = min(fitting)
    basis["fraction"] = best
    return f"{_fraction_text(best)} ({round(1 / best)} per GPU)", basis


def fmt_mib(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x / 1024:.2f} GiB" if x >= 1024 else f"{x:.0f} MiB"


def fmt_s(x: float | None) -> str:
    if x is None:
        return "—"
    if x >= 120:
        return f"{x / 60:.1f} min"
    return f"{x:.1f} s" if x >= 1 else f"{x * 1000:.0f} ms"


def fmt_count(x: float | None) -> str:
    if x is None:
        return "—"
    x = float(x)
    if x >= 1e6:
        return f"{x / 1e6:.1f} M"
    if x >= 1e3:
        return f"{x / 1e3:.0f} k"
    return f"{x:.0f}"


def _med_max(values: list[float], fmt) -> str:
    if not values:
        return "—"
    return f"{fmt(statistics.median(values))} / {fmt(max(values))}"


def _train_size(args, family: str) -> int | None:
    """data.train_size of ``family``'s trials: --train-size (0: none), else the per-family default."""
    if args.train_size is not None:
        return args.train_size or None
    return (QUICK_TRAIN_SIZE if args.quick else CPU_TRAIN_SIZE).get(family)


def _dev_size(args, family: str) -> int | None:
    """data.dev_size of ``family``'s trials: --dev-size (0: none), else the per-family default."""
    if args.dev_size is not None:
        return args.dev_size or None
    return CPU_DEV_SIZE.get(family)


def measure(args, progress) -> dict:
    gpu = _gpu()
    device = "cuda" if gpu else "cpu"
    rows = []
    workroot = Path(tempfile.mkdtemp(prefix="showwork-bench-families-"))
    cpus = os.cpu_count() or 1
    try:
        for family, path, spec in _spaces():
            if args.families and family not in args.families:
                continue
            name = path.name
            row = {"family": family, "space": name, "trials": [], "notes": []}
            rows.append(row)
            python, why_not = _python_for(family)
            size = _train_size(args, family)
            data: dict = {}
            if size:
                data["train_size"] = size
            dev = _dev_size(args, family)
            if dev:
                data["dev_size"] = dev
            threads = max(1, min(int(spec.resources.cpus), cpus)) if args.threads is None else args.threads
            row["caps"] = {"max_epochs": args.max_epochs or None, "train_size": size, "dev_size": dev, "threads": threads}
            if why_not:
                row["skipped"] = why_not
                progress(f"{family}: {why_not}")
                continue
            workdir = workroot / family
            workdir.mkdir()
            if family == "deberta":
                if args.deberta_model:
                    data["model"] = args.deberta_model
                    row["notes"].append(f"checkpoint {args.deberta_model}")
                else:
                    data["model"] = _tiny_deberta(workdir, spec)
                    row["notes"].append("tiny stand-in")
                    row["tiny"] = True
            for index in range(args.trials):
                progress(f"{family} ({name}) trial {index} ...")
                result = _run_trial(python, path, index, device, data, args.max_epochs, threads, args.trial_timeout, workdir)
                row["trials"].append(result)
                progress(f"  {result['status']} in {fmt_s(result.get('trial_s') or result.get('process_s'))}, "
                         f"peak RSS {fmt_mib((result.get('peak_rss_kib') or 0) / 1024)}"
                         + (f", GPU reserved {fmt_mib(result.get('gpu_reserved_mib'))}" if gpu else "")
                         + (f": {result['error']}" if result.get("error") else ""))
            row["suggestion"], row["suggestion_basis"] = suggest(row["trials"], gpu, args.fractions, family)
    finally:
        shutil.rmtree(workroot, ignore_errors=True)
    return {"gpu": gpu, "device": device, "rows": rows}


def _caps_text(row: dict) -> str:
    caps, parts = row["caps"], []
    drawn = [t["epochs_drawn"] for t in row["trials"] if t.get("epochs_drawn") is not None]
    if caps["max_epochs"] and (drawn or row.get("skipped")):
        parts.append(f"≤ {caps['max_epochs']} epoch{'s' if caps['max_epochs'] != 1 else ''}"
                     + (f" (of {'/'.join(str(e) for e in drawn)})" if drawn else ""))
    elif drawn:
        parts.append("all epochs")
    parts.append(f"train {caps['train_size']:,}" if caps["train_size"] else "whole train set")
    if caps.get("dev_size"):
        parts.append(f"dev {caps['dev_size']:,}")
    parts.append(f"{caps['threads']} thread{'s' if caps['threads'] != 1 else ''}")
    return ", ".join(parts)


def table_rows(report: dict) -> list[dict]:
    gpu = report["gpu"]
    out = []
    for row in report["rows"]:
        trials = row["trials"]
        done = [t for t in trials if t.get("status") == "finished"]
        family = row["family"] + (" (tiny stand-in)" if row.get("tiny") else "")
        cells = {"family": family, "space": row["space"], "caps": _caps_text(row)}
        if row.get("skipped"):
            cells.update(trials="0", rss="—", gpu="—", time="—", parameters="—", suggestion=row["skipped"].split(" (")[0])
            out.append(cells)
            continue
        failed = len(trials) - len(done)
        cells["trials"] = f"{len(done)}" + (f" (+{failed} failed)" if failed else "")
        cells["rss"] = _med_max([t["peak_rss_kib"] / 1024 for t in trials if t.get("peak_rss_kib")], fmt_mib)
        if gpu is None:
            cells["gpu"] = "no GPU"
        elif row["family"] in NO_GPU_FAMILIES or any(t.get("gpu_unused") for t in done):
            cells["gpu"] = "not used"
        else:
            alloc = [t["gpu_allocated_mib"] for t in done if t.get("gpu_allocated_mib") is not None]
            res = [t["gpu_reserved_mib"] for t in done if t.get("gpu_reserved_mib") is not None]
            cells["gpu"] = f"{_med_max(alloc, fmt_mib)} allocated; {_med_max(res, fmt_mib)} reserved"
        cells["time"] = fmt_s(statistics.median([t["trial_s"] for t in done])) if done else "—"
        params = [t["parameters"] for t in done if t.get("parameters")]
        cells["parameters"] = (fmt_count(min(params)) + ("" if min(params) == max(params) else f"–{fmt_count(max(params))}")) if params else "—"
        cells["suggestion"] = row["suggestion"]
        if failed and not done:
            cells["suggestion"] = "— (all trials failed: " + trials[0].get("error", "?")[:120] + ")"
        out.append(cells)
    return out


def footnotes(report: dict, args) -> list[str]:
    gpu, notes = report["gpu"], []
    fr = ", ".join(_fraction_text(f) for f in args.fractions)
    if gpu:
        notes.append(f"Device: {gpu['name']} ({gpu['total_mib'] / 1024:.1f} GiB; {gpu['count']} visible), one trial at a time.")
    else:
        notes.append("Device: CPU only (torch.cuda.is_available() is False): no GPU memory was measured, and the "
                     "suggested resources.gpus needs a GPU run (`python benchmarks/families.py` on a GPU machine; "
                     "the throughput of packed trials: `python benchmarks/gpu.py`).")
    notes.append(f"Configurations: trial_config(spec.space, spec.seed, i) for i = 0..{args.trials - 1}, exactly as "
                 "`showwork search` draws them, each trial in a fresh process; trial time is the train() call (data "
                 "loading, tokenisation — cached on disk after the first trial — training, dev and test evaluation).")
    notes.append("Caps: `≤ E epochs` replaces each configuration's epochs by min(epochs, E); `train N` is data.train_size "
                 "(a seeded subsample of the training set); `dev N` is data.dev_size (a smaller dev set carved out of the training set, where a capped trial's time would be mostly dev evaluation). Peak memory does not grow with epochs, but the vocabulary is "
                 "built from the training set: a subsampled row understates the MLP's input layer and the LSTM/CNN/BCN "
                 "embedding matrices (compare the parameter counts with an uncapped run).")
    befores = [t["rss_before_kib"] / 1024 for r in report["rows"] for t in r["trials"] if t.get("rss_before_kib")]
    if befores:
        notes.append(f"Peak RSS is the child's ru_maxrss, interpreter and imports included: the resident set just before "
                     f"train() was {fmt_mib(min(befores))}–{fmt_mib(max(befores))} (torch, showwork, the family's module).")
    notes.append(f"Suggested resources.gpus: the smallest of {fr} (the most trials per GPU) with (1 + {SAFETY_MARGIN:.0%}) × "
                 f"(max reserved + CUDA context) ≤ fraction × the GPU's memory; the CUDA context is measured through "
                 f"NVML/nvidia-smi where they show the process, else assumed {ASSUMED_CONTEXT_MIB:.0f} MiB. logreg and "
                 "bow_sst2 (numpy / scikit-learn) never use a GPU: gpus 0. Fitting in memory is necessary, not "
                 "sufficient: packed trials share the GPU's compute (benchmarks/gpu.py measures the throughput).")
    for row in report["rows"]:
        if row.get("tiny"):
            notes.append("deberta (tiny stand-in): no hub access here, so the trials load the tiny random DeBERTa-v2 "
                         "checkpoint of showwork_models.deberta.build_tiny_checkpoint (2 layers, 64 wide, 1,000-piece vocabulary) "
                         "on the local MultiNLI sample (320 / 80 / 80 pairs) — the family's code path, not DeBERTa-base "
                         "(184 M parameters): its real numbers need a GPU run with `--deberta-model microsoft/deberta-v3-base`.")
        if row.get("skipped"):
            notes.append(f"{row['family']}: {row['skipped']}.")
        errors = sorted({t.get("error") for t in row["trials"] if t.get("error")})
        for error in errors:
            notes.append(f"{row['family']}: failed trial: {error}")
    return notes


def markdown(report: dict, args) -> str:
    env = report["environment"]
    header = (f"Model families, one trial at a time — torch {env.get('torch') or '—'}, Python {env['python']}, "
              f"{env['cpus']} CPUs, device {report['device']}")
    lines = [header, "",
             "| family | space | trials | caps | median / max peak RSS | median / max peak GPU memory | median trial time "
             "| parameters | suggested `resources.gpus` per trial |",
             "|---|---|---|---|---|---|---|---|---|"]
    for c in report["table"]:
        cells = [c["family"], f"`{c['space']}`", c["trials"], c["caps"], c["rss"], c["gpu"], c["time"], c["parameters"],
                 c["suggestion"]]
        lines.append("| " + " | ".join(str(x).replace("|", "\\|") for x in cells) + " |")
    lines.append("")
    lines += [f"{i}. {n}" for i, n in enumerate(report["footnotes"], 1)]
    lines += ["", f"Total benchmark time {env['total_seconds']:.0f} s."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", metavar="LIST", help="comma-separated built-in families (default all)")
    parser.add_argument("--trials", type=int, default=None, metavar="N",
                        help=f"trials per family (default {DEFAULT_TRIALS}, {QUICK_TRIALS} with --quick)")
    parser.add_argument("--max-epochs", type=int, default=DEFAULT_MAX_EPOCHS, metavar="E",
                        help=f"cap every configuration's epochs at E (default {DEFAULT_MAX_EPOCHS}; 0: no cap)")
    parser.add_argument("--train-size", type=int, default=None, metavar="N",
                        help="data.train_size for every family (default: CPU_TRAIN_SIZE per family; 0: whole training sets)")
    parser.add_argument("--dev-size", type=int, default=None, metavar="N",
                        help="data.dev_size where dev is carved from train (default: CPU_DEV_SIZE per family; 0: as the data)")
    parser.add_argument("--threads", type=int, default=None, metavar="T",
                        help="torch threads per trial (default: the space's resources.cpus, at most the CPUs here)")
    parser.add_argument("--trial-timeout", type=float, default=DEFAULT_TRIAL_TIMEOUT_S, metavar="S",
                        help=f"seconds before a trial's process is killed (default {DEFAULT_TRIAL_TIMEOUT_S:g})")
    parser.add_argument("--deberta-model", metavar="ID_OR_DIR",
                        help="DeBERTa checkpoint (hub id or directory; default: the tiny random stand-in)")
    parser.add_argument("--gpu-fractions", metavar="F1,F2,...", nargs="?", const="1,0.5,0.25",
                        help="the resources.gpus fractions the suggestion picks from (default 1,0.5,0.25); their "
                             "throughput: benchmarks/gpu.py")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_TRIALS} trial per family on small training sets (CI smoke)")
    parser.add_argument("--json", metavar="PATH", help="also write the rows, per-trial numbers and environment as JSON to PATH")
    parser.add_argument("--child", metavar="TASK", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child_main(args.child)
        return 0
    args.trials = args.trials if args.trials is not None else (QUICK_TRIALS if args.quick else DEFAULT_TRIALS)
    from showwork.families import BUILTIN_FAMILIES

    if args.families:
        args.families = [f.strip() for f in args.families.split(",") if f.strip()]
        unknown = [f for f in args.families if f not in BUILTIN_FAMILIES]
        if unknown:
            parser.error(f"--families: unknown {', '.join(unknown)} (built-in: {', '.join(BUILTIN_FAMILIES)})")
    try:
        fractions = tuple(float(x) for x in (args.gpu_fractions or ",".join(map(str, DEFAULT_FRACTIONS))).split(","))
    except ValueError:
        parser.error("--gpu-fractions: comma-separated numbers in (0, 1], e.g. 1,0.5,0.25")
    if not fractions or any(not 0 < f <= 1 for f in fractions):
        parser.error("--gpu-fractions: every fraction must be in (0, 1]")
    args.fractions = tuple(sorted(set(fractions), reverse=True))
    if args.trials < 1 or args.max_epochs < 0 or (args.train_size is not None and args.train_size < 0) \
            or (args.dev_size is not None and args.dev_size < 0):
        parser.error("--trials must be >= 1, --max-epochs, --train-size and --dev-size >= 0")

    def progress(message: str) -> None:
        print(f"[families] {message}", file=sys.stderr, flush=True)

    started = time.time()
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    report = measure(args, progress)
    report["table"] = table_rows(report)
    report["footnotes"] = footnotes(report, args)
    try:
        import torch

        torch_version = torch.__version__
    except ImportError:
        torch_version = None
    report["environment"] = {
        "python": platform.python_version(), "torch": torch_version, "cpus": os.cpu_count(),
        "machine": platform.platform(), "total_seconds": time.time() - started, "trials": args.trials,
        "max_epochs": args.max_epochs, "train_size": args.train_size, "fractions": args.fractions,
        "safety_margin": SAFETY_MARGIN, "assumed_context_mib": ASSUMED_CONTEXT_MIB, "quick": args.quick,
    }
    print(markdown(report, args))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2, default=str)
    return 0


if __name__ == "__main__":
    sys.exit(main())

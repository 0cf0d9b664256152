"""What a search ran on: CPU, memory, GPUs, CUDA, package versions and the git state, without importing torch.

Every probe is best effort: a probe that fails (no ``nvidia-smi``, not a git repository, a
package not installed) records None or an empty list, and :func:`collect_environment` never
raises — a missing detail must not stop a search.
"""

from __future__ import annotations

import ast
import functools
import gc
import hashlib
import importlib.metadata
import importlib.util
import inspect
import os
import platform
import resource
import socket
import subprocess
import sys
import threading
import types
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from showwork.redaction import strip_credentials

__all__ = [
    "PACKAGES", "WORKER_PACKAGES", "PeakMemory", "cap_cuda_memory", "collect_environment", "file_sha256", "git_remote_url",
    "git_state", "release_cuda_cache",
    "module_distributions", "namespace_modules", "referenced_modules", "source_file", "strip_credentials", "worker_software",
]

PACKAGES = ("numpy", "scipy", "ray", "mlflow", "pydantic", "showwork-tuning")
"""Distributions of the driver whose versions the search's environment records (None when not installed):
showwork's own. What a trainable used is recorded per trial, in the worker (:func:`worker_software`)."""

_TIMEOUT_S = 5.0


def collect_environment(
    directory: str | os.PathLike | None = None, code_files: Iterable[str | os.PathLike | None] = ()
) -> dict[str, Any]:
    """Describe the machine and software a search runs with.

    Parameters
    ----------
    directory : path, optional
        Where to look for the git repository of the code being tuned (default: the current
        directory).
    code_files : paths, optional
        Files that define the search (the YAML file, the family's file): their absolute paths and
        SHA-256 digests are recorded under ``code_files``, what identifies the code outside git.

    Returns
    -------
    dict
        ``python`` (version), ``platform``, ``hostname``, ``cpu_model`` (str or None),
        ``cpu_count`` (logical CPUs, int or None), ``memory_total_bytes`` (physical RAM the
        operating system reports, int or None; a container's memory limit may be lower),
        ``gpus`` (list of ``{"name", "memory_total", "driver_version"}`` from ``nvidia-smi``;
        empty without NVIDIA GPUs), ``gpu_model`` (the distinct GPU names joined by ``", "``, or
        None), ``gpu_count`` (int), ``nvidia_driver`` (str or None), ``cuda_version`` (the CUDA
        version torch was built with: ``torch.version.cuda`` when torch is already imported,
        else read from the text of ``torch/version.py`` — importing torch costs seconds; None
        without torch or for a CPU-only build), ``packages`` (name → version or None),
        ``git_commit`` (str or None outside a repository), ``git_dirty`` (bool or None) and
        ``git_remote`` (URL of the ``origin`` remote, else of the first remote, without
        credentials; None when there is none), ``code_files`` (``[{"path", "sha256"}]`` of
        ``code_files``; a file that cannot be read has ``sha256`` None). Never raises.
    """
    gpus = _safe(_gpus, [])
    names = list(dict.fromkeys(gpu["name"] for gpu in gpus))
    drivers = list(dict.fromkeys(gpu["driver_version"] for gpu in gpus if gpu.get("driver_version")))
    commit, dirty = _safe(lambda: git_state(directory if directory is not None else Path.cwd()), (None, None))
    return {
        "python": platform.python_version(),
        "platform": _safe(platform.platform, None),
        "hostname": _safe(socket.gethostname, None),
        "cpu_model": _safe(_cpu_model, None),
        "cpu_count": _safe(os.cpu_count, None),
        "memory_total_bytes": _safe(_memory_total_bytes, None),
        "gpus": gpus,
        "gpu_model": ", ".join(names) if names else None,
        "gpu_count": len(gpus),
        "nvidia_driver": ", ".join(drivers) if drivers else None,
        "cuda_version": _safe(_cuda_version, None),
        "packages": {name: _safe(lambda name=name: _version(name), None) for name in PACKAGES},
        "git_commit": commit,
        "git_dirty": dirty,
        "git_remote": _safe(lambda: git_remote_url(directory if directory is not None else Path.cwd()), None),
        "code_files": [
            {"path": str(Path(path).resolve()), "sha256": _safe(lambda path=path: file_sha256(path), None)}
            for path in dict.fromkeys(code_files) if path is not None
        ],
    }


def source_file(function: Any) -> str | None:
    """The file that defines ``function`` (a family's trainable), or None (a built-in, a C function)."""
    return _safe(lambda: inspect.getsourcefile(function), None)


def file_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 of a file's bytes, in hex."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def git_state(directory: str | os.PathLike) -> tuple[str | None, bool | None]:
    """Return ``(commit, dirty)`` of the git repository containing ``directory``.

    ``dirty`` is True when a *tracked* file differs from the commit (``git status --porcelain
    --untracked-files=no``): the files a search writes beside its YAML (``mlflow.db``,
    ``showwork_runs/``, ``mlartifacts/``) are untracked and must not count as uncommitted changes
    of the code. ``(None, None)`` outside a repository or without git.
    """
    commit = _run(["git", "-C", str(directory), "rev-parse", "HEAD"])
    if commit is None:
        return None, None
    status = _run(["git", "-C", str(directory), "status", "--porcelain", "--untracked-files=no"])
    return commit.strip() or None, (bool(status.strip()) if status is not None else None)


def git_remote_url(directory: str | os.PathLike) -> str | None:
    """Return the URL of the ``origin`` remote (else of the first remote configured), credentials stripped.

    None outside a repository, without remotes or without git. The URL is read from the git
    configuration (``remote.<name>.url``), as written there: ``insteadOf`` rewrites are not applied.
    """
    output = _run(["git", "-C", str(directory), "config", "--get-regexp", r"^remote\..*\.url$"])
    if not output:
        return None
    urls: dict[str, str] = {}
    for line in output.splitlines():
        key, _, url = line.partition(" ")
        name = key.removeprefix("remote.").removesuffix(".url")
        if url.strip():
            urls.setdefault(name, url.strip())
    if not urls:
        return None
    return strip_credentials(urls.get("origin") or next(iter(urls.values())))


def _safe(probe, default):
    try:
        return probe()
    except Exception:  # a probe must never stop a search
        return default


def _run(command: list[str]) -> str | None:
    """Run a command; return its stdout, or None if it is missing, fails or takes over 5 s."""
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=_TIMEOUT_S, stdin=subprocess.DEVNULL, check=False
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    return done.stdout if done.returncode == 0 else None


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Hardware", "cpu model") and value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or None


def _memory_total_bytes() -> int | None:
    try:
        pages, page_size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
        if pages > 0 and page_size > 0:
            return int(pages) * int(page_size)
    except (AttributeError, ValueError, OSError):  # not POSIX, or the name is unknown here
        pass
    try:
        with open("/proc/meminfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                fields = value.split()
                if key == "MemTotal" and fields and fields[0].isdigit():
                    return int(fields[0]) * 1024  # reported in kB (KiB)
    except OSError:
        pass
    return None


def _gpus() -> list[dict[str, str]]:
    output = _run(
        ["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader"]
    )
    if not output:
        return []
    gpus = []
    for line in output.splitlines():
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) == 3 and cells[0]:
            gpus.append({"name": cells[0], "memory_total": cells[1], "driver_version": cells[2]})
    return gpus


def _cuda_version() -> str | None:
    torch = sys.modules.get("torch")
    if torch is not None:
        version = getattr(getattr(torch, "version", None), "cuda", None)
        return str(version) if version else None
    # Not imported: read the assignment ``cuda = '12.4'`` from torch/version.py without running it.
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    source = Path(next(iter(spec.submodule_search_locations)), "version.py").read_text(encoding="utf-8")
    for node in ast.parse(source).body:
        target = node.target if isinstance(node, ast.AnnAssign) else (node.targets[0] if isinstance(node, ast.Assign) else None)
        if isinstance(target, ast.Name) and target.id == "cuda" and node.value is not None:
            version = ast.literal_eval(node.value)
            return str(version) if version else None
    return None


@functools.lru_cache(maxsize=None)
def _version(name: str) -> str | None:
    """The installed version of distribution ``name`` (None if it is not installed), read once per process.

    Read from the ``Version:`` header of its metadata, not through ``importlib.metadata.version``, which
    parses the whole file (a long description included) with the email parser: 2 ms a distribution, and
    every trial's record names several (its process is forked afresh, so only the worker's cache lasts).
    Once per process is also what is true: a module already loaded keeps its version if pip changes it."""
    try:
        dist = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        return None
    for line in (dist.read_text("METADATA") or dist.read_text("PKG-INFO") or "").splitlines():
        if not line:  # the end of the headers
            break
        if line.startswith("Version:"):
            return line.partition(":")[2].strip() or dist.version
    return dist.version


# ---------------------------------------------------------------- what a trial ran with (measured in the worker)

WORKER_PACKAGES = ("showwork-tuning", "ray", "mlflow")
"""Distributions every trial record names besides those its trainable imported: the framework that ran it."""


@functools.lru_cache(maxsize=1)
def _distributions_of_top_level() -> dict[str, tuple[str, ...]]:
    """``importlib.metadata.packages_distributions()``, read once per process (it scans every installed distribution)."""
    return {name: tuple(dict.fromkeys(dists)) for name, dists in importlib.metadata.packages_distributions().items()}


def module_distributions(module_names: Iterable[str]) -> dict[str, str]:
    """The installed distributions (name → version) that provide the top-level packages of ``module_names``.

    ``sklearn.linear_model._logistic`` counts as ``sklearn`` → ``scikit-learn``. Modules of the
    standard library and of loose files (a family's own folder) belong to no distribution and are
    left out. Sorted by distribution name (case-insensitive). Never raises.
    """
    try:
        owners = _distributions_of_top_level()
    except Exception:  # a broken distribution's metadata must not fail a trial
        return {}
    found: dict[str, str] = {}
    for top in {name.partition(".")[0] for name in module_names if isinstance(name, str) and name}:
        for dist in owners.get(top, ()):
            if dist not in found:
                version = _safe(lambda dist=dist: _version(dist), None)
                if version is not None:
                    found[dist] = version
    return dict(sorted(found.items(), key=lambda item: item[0].lower()))


def namespace_modules(namespace: Mapping[str, Any]) -> set[str]:
    """The names of the modules a module's namespace refers to: ``import numpy as np`` → ``numpy``,
    ``from sklearn.svm import SVC`` → ``sklearn.svm._classes`` (the module that defines ``SVC``)."""
    names = set()
    for value in list(namespace.values()):
        if isinstance(value, types.ModuleType):
            names.add(value.__name__)
            continue
        module = getattr(value, "__module__", None) if isinstance(value, (type, types.FunctionType, types.BuiltinFunctionType)) else None
        if isinstance(module, str):
            names.add(module)
    return names


def referenced_modules(function: Any) -> set[str]:
    """The modules a trainable's code refers to by name: those of its module's namespace
    (:func:`namespace_modules`) and, through helper modules that live in the same folder as its
    file (a multi-file trainable), theirs. Catches a package the worker had loaded before the trial
    (``sys.modules`` then shows nothing new) that the trainable imports all the same."""
    source = source_file(function)
    folder = Path(source).resolve().parent if source else None
    names: set[str] = set()
    pending = [getattr(function, "__globals__", None) or {}]
    while pending:
        found = namespace_modules(pending.pop()) - names
        names |= found
        for name in found:
            path = getattr(sys.modules.get(name), "__file__", None)
            if folder is not None and path and _safe(lambda path=path: Path(path).resolve().is_relative_to(folder), False):
                pending.append(vars(sys.modules[name]))
    return names


def worker_software(trainable_modules: Iterable[str]) -> tuple[str, dict[str, str]]:
    """``(python version, {distribution: version})`` of a trial: the distributions of the modules its
    trainable imported (:func:`module_distributions`) and :data:`WORKER_PACKAGES`, as installed in the worker."""
    packages = module_distributions(trainable_modules)
    for name in WORKER_PACKAGES:
        version = _safe(lambda name=name: _version(name), None)
        if version is not None:
            packages.setdefault(name, version)
    return platform.python_version(), dict(sorted(packages.items(), key=lambda item: item[0].lower()))


class PeakMemory:
    """The peak memory of one trial in the worker process: resident memory (RAM) and, with torch, CUDA memory.

    Ray reuses a worker process for several trials (``reuse_actors``), so the process's lifetime
    peaks (``ru_maxrss``, torch's ``max_memory_allocated``) would carry an earlier trial's peak into a
    later one. Each counter is therefore reset, or compared, at the trial's start:

    - resident memory of the process: on Linux, the kernel's high-water mark ``VmHWM`` is reset at
      :meth:`start` (``5`` written to ``/proc/self/clear_refs``, Linux >= 4.0) and read at
      :meth:`peaks`: the exact peak of this process during the trial;
    - its child processes (``joblib``/``multiprocessing`` workers the trainable starts): a thread
      samples the resident memory of the process and all its live descendants every
      :attr:`interval_s` seconds (``/proc/<pid>/status``, ``/proc/<pid>/task/*/children``); the
      largest sum is kept, so a child's peak between two samples can be missed. Children that ended
      during the trial add the largest such child's own peak when that exceeds what came before
      (``RUSAGE_CHILDREN`` is per process lifetime, so only its growth during the trial is the trial's);
    - without ``/proc`` (macOS): ``ru_maxrss`` of the process when it grew during the trial (then it is
      the trial's own peak), else None (not measurable without resetting it);
    - CUDA: torch's peak counters, reset with ``torch.cuda.reset_peak_memory_stats`` on every visible
      device at :meth:`start` and summed over the devices at :meth:`peaks` (allocated by tensors, and
      reserved by torch's caching allocator), only when the trainable imported torch and CUDA was
      initialised; None otherwise (memory other CUDA libraries take is not counted).

    ``peak_rss_bytes`` is the largest of: the process's exact peak, the largest sampled sum over the
    process tree, and the process's current size plus a grown ``RUSAGE_CHILDREN`` peak.
    """

    interval_s = 0.1

    def __init__(self) -> None:
        self._stop = threading.Event()
        self._sampled = 0
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._hwm_reset = False
        self._self_maxrss = 0
        self._children_maxrss = 0

    def start(self) -> PeakMemory:
        """Reset the counters and start sampling (a daemon thread); returns self."""
        self._hwm_reset = _safe(_reset_high_water_mark, False)
        self._self_maxrss = _safe(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, 0)
        self._children_maxrss = _safe(lambda: resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, 0)
        _safe(_reset_cuda_peaks, None)
        self._sample()
        if os.path.isdir("/proc/self/task"):
            self._thread = threading.Thread(target=self._run, name="showwork-peak-memory", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the sampling thread (the peaks stay readable)."""
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def _sample(self) -> None:
        total = _safe(_tree_rss_bytes, None)
        if total is not None:
            with self._lock:
                self._sampled = max(self._sampled, total)

    def peaks(self, torch_imported: bool) -> dict[str, int | None]:
        """``peak_rss_bytes``, ``peak_gpu_allocated_bytes`` and ``peak_gpu_reserved_bytes`` since :meth:`start`
        (None where not measurable; the GPU peaks only when ``torch_imported``)."""
        self._sample()
        with self._lock:
            candidates = [self._sampled] if self._sampled else []
        unit = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB on Linux
        if self._hwm_reset:
            hwm = _safe(_high_water_mark_bytes, None)
            if hwm is not None:
                candidates.append(hwm)
        else:
            grown = _safe(lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, 0)
            if grown > self._self_maxrss:
                candidates.append(grown * unit)
        children = _safe(lambda: resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, 0)
        current = _safe(_process_rss_bytes, None)
        if children > self._children_maxrss and current is not None:
            candidates.append(current + children * unit)
        allocated, reserved = _safe(_cuda_peaks, (None, None)) if torch_imported else (None, None)
        return {
            "peak_rss_bytes": max(candidates) if candidates else None,
            "peak_gpu_allocated_bytes": allocated,
            "peak_gpu_reserved_bytes": reserved,
        }


def _reset_high_water_mark() -> bool:
    with open("/proc/self/clear_refs", "w", encoding="ascii") as handle:
        handle.write("5")  # resets VmHWM to the current RSS (Documentation/filesystems/proc.rst)
    return _high_water_mark_bytes() is not None


def _status_kib(pid: int | str, key: str) -> int | None:
    with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as handle:
        for line in handle:
            if line.startswith(key + ":"):
                fields = line.split()
                return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else None
    return None


def _high_water_mark_bytes() -> int | None:
    kib = _status_kib("self", "VmHWM")
    return None if kib is None else kib * 1024


def _process_rss_bytes(pid: int | str = "self") -> int | None:
    kib = _status_kib(pid, "VmRSS")
    return None if kib is None else kib * 1024


def _children(pid: int) -> list[int]:
    found = []
    for task in os.scandir(f"/proc/{pid}/task"):
        try:
            with open(os.path.join(task.path, "children"), encoding="ascii") as handle:
                found += [int(child) for child in handle.read().split()]
        except OSError:  # the thread ended meanwhile
            continue
    return found


def _tree_rss_bytes() -> int:
    """Resident memory of this process and all its live descendants, in bytes (Linux ``/proc``)."""
    total, seen, pending = 0, set(), [os.getpid()]
    while pending:
        pid = pending.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            total += _process_rss_bytes(pid) or 0
            pending += _children(pid)
        except (OSError, ValueError):  # it ended meanwhile
            continue
    return total


def _cuda_devices():
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    if cuda is None or not cuda.is_available() or not cuda.is_initialized():
        return None, ()
    return cuda, range(cuda.device_count())


def release_cuda_cache() -> None:
    """Give the GPU memory torch's caching allocator holds but no tensor uses back to the driver.

    Only where the trainable imported torch and initialised CUDA; best effort. Objects kept alive
    by reference cycles (a failed trial's traceback holds its frames, and their tensors) are
    collected first.
    """
    cuda, devices = _cuda_devices()
    if cuda is None or not devices:
        return
    gc.collect()
    _safe(cuda.empty_cache, None)


def cap_cuda_memory(fraction: float) -> None:
    """Let torch's caching allocator take at most ``fraction`` of each visible GPU's memory
    (``torch.cuda.set_per_process_memory_fraction``; initialises CUDA). An allocation over it
    raises torch's ``OutOfMemoryError``. Not counted: the CUDA context, cuBLAS/cuDNN workspaces,
    other libraries' memory."""
    import torch  # lazy: only where a GPU trial caps its memory; nothing else here imports torch (see the docstring)

    for device in range(torch.cuda.device_count()):
        torch.cuda.set_per_process_memory_fraction(fraction, device)


def _reset_cuda_peaks() -> None:
    cuda, devices = _cuda_devices()
    for device in devices:
        cuda.reset_peak_memory_stats(device)


def _cuda_peaks() -> tuple[int | None, int | None]:
    cuda, devices = _cuda_devices()
    if cuda is None or not devices:
        return None, None
    return (
        sum(int(cuda.max_memory_allocated(device)) for device in devices),
        sum(int(cuda.max_memory_reserved(device)) for device in devices),
    )

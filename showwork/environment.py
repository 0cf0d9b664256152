"""What a search ran on: CPU, GPUs, CUDA, package versions and the git state, without importing torch.

Every probe is best effort: a probe that fails (no ``nvidia-smi``, not a git repository, a
package not installed) records None or an empty list, and :func:`collect_environment` never
raises — a missing detail must not stop a search.
"""

from __future__ import annotations

import importlib.metadata
import os
import platform
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["PACKAGES", "collect_environment", "git_state"]

PACKAGES = ("numpy", "scipy", "ray", "mlflow", "torch", "transformers", "pydantic", "showwork-tuning")
"""Distributions whose versions are recorded (None when not installed)."""

_TIMEOUT_S = 5.0


def collect_environment(directory: str | os.PathLike | None = None) -> dict[str, Any]:
    """Describe the machine and software a search runs with.

    Parameters
    ----------
    directory : path, optional
        Where to look for the git repository of the code being tuned (default: the current
        directory).

    Returns
    -------
    dict
        ``python`` (version), ``platform``, ``hostname``, ``cpu_model`` (str or None),
        ``cpu_count`` (logical CPUs, int or None), ``gpus`` (list of ``{"name", "memory_total",
        "driver_version"}`` from ``nvidia-smi``; empty without NVIDIA GPUs), ``gpu_model`` (the
        distinct GPU names joined by ``", "``, or None), ``gpu_count`` (int), ``nvidia_driver``
        (str or None), ``cuda_version`` (``torch.version.cuda``, only when torch is already
        imported — importing it costs seconds — else None), ``packages`` (name → version or
        None), ``git_commit`` (str or None outside a repository) and ``git_dirty`` (bool or None).
        Never raises.
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
        "gpus": gpus,
        "gpu_model": ", ".join(names) if names else None,
        "gpu_count": len(gpus),
        "nvidia_driver": ", ".join(drivers) if drivers else None,
        "cuda_version": _safe(_cuda_version, None),
        "packages": {name: _safe(lambda name=name: _version(name), None) for name in PACKAGES},
        "git_commit": commit,
        "git_dirty": dirty,
    }


def git_state(directory: str | os.PathLike) -> tuple[str | None, bool | None]:
    """Return ``(commit, dirty)`` of the git repository containing ``directory``.

    ``dirty`` is True when ``git status --porcelain`` lists anything (untracked files included:
    they can change what runs). ``(None, None)`` outside a repository or without git.
    """
    commit = _run(["git", "-C", str(directory), "rev-parse", "HEAD"])
    if commit is None:
        return None, None
    status = _run(["git", "-C", str(directory), "status", "--porcelain"])
    return commit.strip() or None, (bool(status.strip()) if status is not None else None)


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
    if torch is None:
        return None
    version = getattr(getattr(torch, "version", None), "cuda", None)
    return str(version) if version else None


def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None

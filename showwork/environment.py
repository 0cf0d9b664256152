"""What a search ran on: CPU, memory, GPUs, CUDA, package versions and the git state, without importing torch.

Every probe is best effort: a probe that fails (no ``nvidia-smi``, not a git repository, a
package not installed) records None or an empty list, and :func:`collect_environment` never
raises — a missing detail must not stop a search.
"""

from __future__ import annotations

import ast
import importlib.metadata
import importlib.util
import os
import platform
import re
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["PACKAGES", "collect_environment", "git_remote_url", "git_state", "strip_credentials"]

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
        credentials; None when there is none). Never raises.
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


def strip_credentials(url: str) -> str:
    """Remove what may be a secret from a remote URL: the user and password, the query and the fragment.

    Only URLs with a scheme (``https://``, ``ssh://``, ...) carry them; scp-like addresses
    (``git@host:owner/repo.git``) and local paths are returned unchanged.

    Examples
    --------
    >>> strip_credentials("https://user:ghp_secret@github.com/owner/repo.git")
    'https://github.com/owner/repo.git'
    >>> strip_credentials("git@github.com:owner/repo.git")
    'git@github.com:owner/repo.git'
    >>> strip_credentials("sqlite:////home/me/mlflow.db")  # the rest is kept as written
    'sqlite:////home/me/mlflow.db'
    """
    match = re.match(r"([A-Za-z][A-Za-z0-9+.-]*://)([^/?#]*)([^?#]*)", url)
    if match is None:
        return url
    scheme, authority, path = match.groups()
    # The last "@" ends the user information: a password may hold an unescaped "@".
    return scheme + authority.rpartition("@")[2] + path


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


def _version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None

"""A stand-in for NVML's Python bindings (``pynvml``, from nvidia-ml-py), for machines without an NVIDIA GPU.

Put its folder first on ``sys.path`` (or ``PYTHONPATH``, for Ray's workers) and set
``SHOWWORK_STANDIN_NVML`` to a JSON object::

    {"devices": [{"name": "Stand-in GPU", "uuid": "GPU-0000", "watts": 100.0,
                  "energy_file": "/path/mj.txt", "energy": true}],
     "origin": 1700000000.0, "dev": "/path/to/a/folder"}

Each device's total-energy counter, in millijoules, is the integer in its ``energy_file`` when
one is given (a test sets it), else ``watts`` times the seconds since ``origin`` (the same in
every process that reads it). ``"energy": false`` makes the counter unsupported (a GPU before
Volta). Without the variable, :func:`nvmlInit` fails as it does without a driver. Utilisation is
``utilization`` percent (default 0); no process uses memory. Only the calls showwork and
``benchmarks/gpu.py`` make are here.

``nvmlInit`` opens what the real one opens (driver 580.159.04 on an H200, where it was seen):
``nvidiactl``, one ``nvidiaN`` per device, ``nvidia-uvm`` twice and every ``nvidia-caps/*``, in the
folder ``"dev"`` names in place of ``/dev`` (files it creates there); they stay open until the last
``nvmlShutdown``. Without ``"dev"`` it opens nothing.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path


class NVMLError(Exception):
    pass


class NVMLError_NotSupported(NVMLError):  # noqa: N801 - pynvml's name
    pass


class NVMLError_LibraryNotFound(NVMLError):  # noqa: N801
    pass


@dataclass(frozen=True)
class _Handle:
    index: int


@dataclass(frozen=True)
class _Utilization:
    gpu: int
    memory: int


@dataclass(frozen=True)
class _Memory:
    total: int
    free: int
    used: int


_initialised = 0
_opened: list[int] = []  # the device files nvmlInit opened, closed by the last nvmlShutdown


def _open_devices(state: dict) -> None:
    if not state.get("dev"):
        return
    dev = Path(state["dev"])
    caps = dev / "nvidia-caps"
    if not caps.is_dir():
        caps.mkdir(parents=True)
        for name in ("nvidia-cap1", "nvidia-cap2"):
            (caps / name).touch()
    names = ["nvidiactl", *(f"nvidia{i}" for i in range(len(state["devices"]))), "nvidia-uvm", "nvidia-uvm"]
    for path in [dev / name for name in names] + sorted(caps.iterdir()):
        path.touch()
        _opened.append(os.open(path, os.O_RDWR))


def _state() -> dict:
    text = os.environ.get("SHOWWORK_STANDIN_NVML")
    if not text:
        raise NVMLError_LibraryNotFound("no NVIDIA driver (stand-in NVML without SHOWWORK_STANDIN_NVML)")
    return json.loads(text)


def _device(handle: _Handle) -> dict:
    if _initialised <= 0:
        raise NVMLError("NVML not initialised")
    return _state()["devices"][handle.index]


def nvmlInit() -> None:  # noqa: N802 - pynvml's names
    global _initialised
    state = _state()
    if _initialised == 0:
        _open_devices(state)
    _initialised += 1


def nvmlShutdown() -> None:  # noqa: N802
    global _initialised
    if _initialised <= 0:
        raise NVMLError("NVML not initialised")
    _initialised -= 1
    if _initialised == 0:
        while _opened:
            os.close(_opened.pop())


def nvmlDeviceGetCount() -> int:  # noqa: N802
    if _initialised <= 0:
        raise NVMLError("NVML not initialised")
    return len(_state()["devices"])


def nvmlDeviceGetHandleByIndex(index: int) -> _Handle:  # noqa: N802
    if not 0 <= index < nvmlDeviceGetCount():
        raise NVMLError(f"invalid device index {index}")
    return _Handle(int(index))


def nvmlDeviceGetHandleByUUID(uuid: bytes | str) -> _Handle:  # noqa: N802
    text = uuid.decode() if isinstance(uuid, bytes) else uuid
    for index, device in enumerate(_state()["devices"]):
        if device.get("uuid") == text:
            return nvmlDeviceGetHandleByIndex(index)
    raise NVMLError(f"no device with UUID {text}")


def nvmlDeviceGetName(handle: _Handle) -> str:  # noqa: N802
    return _device(handle).get("name", "Stand-in GPU")


def nvmlDeviceGetUUID(handle: _Handle) -> str:  # noqa: N802
    return _device(handle).get("uuid", f"GPU-{handle.index:04d}")


def nvmlDeviceGetTotalEnergyConsumption(handle: _Handle) -> int:  # noqa: N802
    device = _device(handle)
    if not device.get("energy", True):
        raise NVMLError_NotSupported("Not Supported")
    if device.get("energy_file"):
        with open(device["energy_file"]) as f:
            return int(f.read().strip())
    return int((time.time() - float(_state().get("origin", 0.0))) * float(device.get("watts", 100.0)) * 1000)


def nvmlDeviceGetPowerUsage(handle: _Handle) -> int:  # noqa: N802 - milliwatts
    return int(float(_device(handle).get("watts", 100.0)) * 1000)


def nvmlDeviceGetUtilizationRates(handle: _Handle) -> _Utilization:  # noqa: N802
    percent = int(_device(handle).get("utilization", 0))
    return _Utilization(gpu=percent, memory=percent)


def nvmlDeviceGetMemoryInfo(handle: _Handle) -> _Memory:  # noqa: N802
    total = int(_device(handle).get("memory_total", 16 * 2**30))
    return _Memory(total=total, free=total, used=0)


def nvmlDeviceGetComputeRunningProcesses(handle: _Handle) -> list:  # noqa: N802
    _device(handle)
    return []

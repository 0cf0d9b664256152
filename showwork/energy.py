"""A trial's GPU energy: NVML's total-energy counter over the trial, and the rule that splits a shared GPU.

No hyperparameter tool reports a search's energy per trial; ACL's Responsible NLP checklist (C1)
and NeurIPS's (item 8) ask for the compute used. On NVIDIA GPUs from Volta on, NVML keeps a
counter of the energy each device has used since its driver loaded
(``nvmlDeviceGetTotalEnergyConsumption``, millijoules). A worker reads it on each of its trial's
devices when the trial starts and when it ends.

The rule (:data:`SPLIT_RULE`): a trial holding ``g`` GPUs on ``n`` devices is charged
``min(1, g / n)`` of each device's energy over its own wall time. One trial per GPU (``gpus: 1``)
is charged all of it; four trials packed on one GPU (``gpus: 0.25``) are charged a quarter each,
whether their neighbours ran or not. So the energy of a share that no trial held (the tail of a
search, a slot between two trials) is charged to no trial, and the trials' sum is at most the
devices' total. Ray's GPU fractions are bookkeeping (no isolation), so no measurement can tell one
process's share of a device's power; the rule charges by what the trial held, which is also how
GPU-hours are counted (:data:`showwork.constants.COST_UNITS`).

NVML comes from ``pynvml`` (the ``nvidia-ml-py`` distribution), else from the copy Ray ships
(``ray._private.thirdparty.pynvml``). Where neither loads, no NVIDIA driver answers, the device
has no energy counter (before Volta; a MIG instance) or CUDA's device numbers cannot be matched
to NVML's, the trial's energy is not recorded (None), never guessed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

__all__ = ["SPLIT_RULE", "GpuEnergy", "device_share", "joules_to_kwh", "load_nvml"]

SPLIT_RULE = (
    "a trial holding g GPUs on n devices is charged min(1, g/n) of each device's energy (NVML's total-energy"
    " counter) over its own wall time; energy of shares no trial held is charged to no trial"
)
"""The rule, in the words the checklist and the docs print."""

JOULES_PER_KWH = 3.6e6


def joules_to_kwh(joules: float) -> float:
    """Kilowatt-hours in ``joules`` (1 kWh = 3.6 MJ)."""
    return joules / JOULES_PER_KWH


def device_share(gpus_per_trial: float, devices: int) -> float:
    """The part of each of its ``devices`` a trial holding ``gpus_per_trial`` GPUs is charged.

    >>> device_share(0.25, 1), device_share(1, 1), device_share(2, 2)
    (0.25, 1.0, 1.0)
    """
    if devices < 1 or not gpus_per_trial > 0:
        raise ValueError(f"a trial holds GPUs on at least one device (got {gpus_per_trial!r} GPUs on {devices} devices).")
    return min(1.0, float(gpus_per_trial) / devices)


def load_nvml() -> ModuleType | None:
    """The NVML bindings, initialised: ``pynvml`` (nvidia-ml-py), else Ray's copy; None where none
    loads or no driver answers. Each successful call must be paired with ``nvmlShutdown``
    (NVML counts its initialisations)."""
    module: Any = None
    try:
        import pynvml as module  # lazy: an optional package, loaded only where a trial holds GPUs
    except ImportError:
        try:
            from ray._private.thirdparty import pynvml as module  # lazy: Ray's copy, the fallback of the line above
        except ImportError:
            return None
    try:
        module.nvmlInit()
    except Exception:  # no driver, no library (NVMLError_LibraryNotFound, OSError, ...)
        return None
    return module


def _device_handles(nvml: ModuleType, visible: str) -> list[Any] | None:
    """NVML handles of the devices CUDA numbers ``visible`` (``CUDA_VISIBLE_DEVICES``), or None.

    UUIDs (``GPU-…``) name a device exactly. Numbers are CUDA's, which follow NVML's (PCI bus)
    order when ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` or when every device is of one model (CUDA's
    default order, fastest first, then breaks ties by PCI bus); otherwise the match is unknown.
    MIG instances (``MIG-…``) have no energy counter of their own.
    """
    names = [item.strip() for item in visible.split(",") if item.strip()]
    if not names or any(name.startswith("MIG-") for name in names):
        return None
    if all(name.startswith("GPU-") for name in names):
        return [nvml.nvmlDeviceGetHandleByUUID(name.encode()) for name in names]
    if not all(name.isdigit() for name in names):
        return None
    count = nvml.nvmlDeviceGetCount()
    if any(int(name) >= count for name in names):
        return None
    if os.environ.get("CUDA_DEVICE_ORDER") != "PCI_BUS_ID":
        models = {_text(nvml.nvmlDeviceGetName(nvml.nvmlDeviceGetHandleByIndex(i))) for i in range(count)}
        if len(models) > 1:
            return None
    return [nvml.nvmlDeviceGetHandleByIndex(int(name)) for name in names]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@dataclass
class GpuEnergy:
    """The energy counters of one trial's devices, read at its start; :meth:`joules` reads them again.

    Make one with :meth:`start`, which returns None where the energy cannot be measured (see the
    module docstring); call :meth:`close` when the trial's record is written.
    """

    nvml: ModuleType
    handles: Sequence[Any]
    share: float
    started_mj: tuple[int, ...]

    @classmethod
    def start(cls, gpus_per_trial: float, visible: str | None = None) -> GpuEnergy | None:
        """Read the counters of the devices in ``visible`` (default ``$CUDA_VISIBLE_DEVICES``, as Ray sets it)."""
        visible = os.environ.get("CUDA_VISIBLE_DEVICES") if visible is None else visible
        if not visible or not gpus_per_trial > 0:
            return None
        nvml = load_nvml()
        if nvml is None:
            return None
        try:
            handles = _device_handles(nvml, visible)
            if handles:
                counters = tuple(int(nvml.nvmlDeviceGetTotalEnergyConsumption(h)) for h in handles)
                return cls(nvml, handles, device_share(gpus_per_trial, len(handles)), counters)
        except Exception:  # NVMLError_NotSupported (before Volta), a device gone, a bad UUID
            pass
        _shutdown(nvml)
        return None

    def joules(self) -> float | None:
        """The trial's energy so far in joules, by :data:`SPLIT_RULE`; None if a counter cannot be read."""
        try:
            now = [int(self.nvml.nvmlDeviceGetTotalEnergyConsumption(h)) for h in self.handles]
        except Exception:
            return None
        used_mj = sum(max(0, after - before) for before, after in zip(self.started_mj, now))
        return used_mj / 1000.0 * self.share

    def close(self) -> None:
        _shutdown(self.nvml)


def _shutdown(nvml: ModuleType) -> None:
    try:
        nvml.nvmlShutdown()
    except Exception:
        pass

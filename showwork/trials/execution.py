"""Running one trial in a process (:func:`run_trial`), and what the driver and its workers share to run it
(:class:`SearchContext`, the keys of a trial's reports). The Ray worker's side is :mod:`showwork.trials.worker`;
many trials on Ray Tune, :class:`~showwork.trials.ray_executor.RayExecutor`; starting Ray, :mod:`showwork.trials.ray_setup`.

Each trial is identified by its index alone. The worker rebuilds the configuration from (seed,
index) — :func:`showwork.sampling.trial_config` — runs the family's train function, and writes
its own :class:`~showwork.store.TrialRecord` atomically into the ledger before returning, so a
finished trial survives anything that later happens to the driver. A worker that finds a record
for its index returns at once: retries and resumes never run a recorded trial twice.

Ray Tune runs one trial per index (a grid over the missing indices, no search algorithm and no
early-stopping scheduler: random search stays i.i.d.), with per-trial resources (fractional GPUs
too), a cap on concurrency, and retries when a worker process dies. A per-trial timeout is
enforced inside the worker: a watchdog records the trial as ``timeout`` and ends the process,
which Ray reports as a failed trial and does not retry into a second run. A trainable's own
``KeyboardInterrupt`` or ``sys.exit`` is its failure, recorded as such, not a worker death. Ray's
messages during a run (tracebacks of failed trials, notices of dead workers) go to
``{storage}/{name}/ray/run-<time>.log``, not the terminal. A ledger write that fails in a worker is
reported to the driver (:data:`STORAGE_FAILURE_KEY`), which stops the search.

A family file may import helper modules from its own folder (issue 16 item 5). On this machine the
workers read the file where it is (its folder goes first on their ``sys.path``,
:func:`showwork.families.resolve_family`). On a cluster (``--address``) the folder is shipped to
every node as the job's Ray runtime environment (``working_dir``, :func:`~showwork.trials.ray_executor.family_runtime_env`), less
showwork's own outputs, ``.git`` and virtualenvs, and at most :data:`~showwork.trials.ray_executor.FAMILY_FOLDER_LIMIT_MIB` MiB;
the workers load the family from their node's copy.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import socket
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from showwork.constants import CUDA_OUT_OF_MEMORY, CUDA_OUT_OF_MEMORY_SIGNS, DEFAULT_SETUP_TIMEOUT_S
from showwork.energy import GpuEnergy
from showwork.environment import PeakMemory, cap_cuda_memory, referenced_modules, release_cuda_cache, worker_software
from showwork.families import resolve_family, unpickled_function
from showwork.redaction import redact
from showwork.sampling import nest, trial_config, trial_seed
from showwork.space import SearchSpace
from showwork.store import Ledger, LedgerConflictError, LedgerWriteError, TrialRecord, utc_now_iso
from showwork.trainable import Reporter, check_outcome, score_from

_TIMEOUT_EXIT_CODE = 3


REPORT_KEY = "showwork"  # the trainable's per-epoch reports (a list of rows), inside Ray Tune's result dict


REPORT_INTERVAL_S = 1.0  # a worker hands its epoch rows to the driver at most this often (see EpochReports)


STORAGE_FAILURE_KEY = "showwork_storage_failure"  # a worker could not write into the ledger (the message)


TRIAL_START_KEY = "showwork_started_at"  # beside it: the attempt's start (ISO-8601), the start of its MLflow run


WORKER_KEY = "showwork_worker"  # beside it: the worker's pid and node, its trial's pid, whether the trial is isolated


TRIAL_KILL_MARGIN_S = 2.0
"""Seconds after ``timeout_s`` at which a worker kills its trial's process if the trial's own watchdog has not
ended it (a process stopped by SIGSTOP, or in C code holding its GIL, cannot end itself)."""


TIMEOUT_GRACE_S = 10.0
"""Seconds after ``timeout_s`` (from the trainable's start) or ``setup_timeout_s`` (from the trial's start)
at which the driver kills a worker that has not ended its trial (a worker stopped by SIGSTOP, or hung):
:class:`showwork.run.deadlines.TrialDeadlines`."""


@dataclass(frozen=True)
class SearchContext:
    """Everything a worker needs to run trial ``index`` of a search (small and picklable)."""

    name: str
    storage_dir: str
    space: dict  # SearchSpace.to_dict()
    seed: int
    family: str
    base_dir: str
    data: dict
    metric: str
    mode: str
    test_metric: str | None = None
    timeout_s: float | None = None  # the trainable's call
    setup_timeout_s: float = DEFAULT_SETUP_TIMEOUT_S  # the worker's set-up before it: the family's import
    max_retries: int = 1  # runs again of a trial whose process died
    family_shipped: bool = False  # the family file's folder is the job's Ray working_dir: load it from the node's copy
    gpus_per_trial: float = 0.0
    gpu_memory_cap: bool = False  # resources.gpu_memory_cap: torch may take at most the trial's share of each GPU
    # Re-runs (showwork rerun): {index: (params, seed)}, given instead of drawn from (space, seed, index).
    assignments: dict[int, tuple[dict, int]] | None = None
    # The running search's id (search.json): the worker's writes check that the folder still holds it (Ledger).
    search_id: str | None = None
    # A <function NAME> family's function, pickled by value (showwork.families.pickled_function): it travels in the
    # context Ray ships to every worker, on this machine or a cluster's nodes, where no file or module names it.
    function: bytes | None = None

    def trial(self, index: int) -> tuple[dict[str, Any], int]:
        """The configuration and training seed of trial ``index``: drawn from ``(seed, index)``
        (:mod:`showwork.sampling`), or the re-run's own when ``assignments`` gives them."""
        if self.assignments is not None:
            params, seed = self.assignments[index]
            return dict(params), int(seed)
        return trial_config(SearchSpace.from_dict(self.space), self.seed, index), trial_seed(self.seed, index)


@dataclass(frozen=True)
class TrialClock:
    """When a trial's measured time began: ``started_at`` (ISO-8601) and the same moment on the
    monotonic clock; ``setup_s``, the set-up that came before, once the trainable is called."""

    started_at: str
    origin: float
    setup_s: float | None = None

    @classmethod
    def start(cls) -> TrialClock:
        return cls(started_at=utc_now_iso(), origin=time.perf_counter())

    def started_training(self) -> TrialClock:
        """The clock of the trainable's call: it starts now, after ``setup_s`` seconds of set-up."""
        now = time.perf_counter()
        return TrialClock(started_at=utc_now_iso(), origin=now, setup_s=now - self.origin)

    def elapsed(self) -> float:
        return time.perf_counter() - self.origin


def _error_text(error: BaseException) -> str:
    tail = "".join(traceback.format_exception(type(error), error, error.__traceback__)[-6:])
    return f"{type(error).__name__}: {error}\n{tail[-2000:]}"


def cuda_out_of_memory(error: BaseException) -> bool:
    """Whether ``error``, or an exception it was raised from, says that CUDA ran out of memory
    (:data:`~showwork.constants.CUDA_OUT_OF_MEMORY_SIGNS`; torch's ``OutOfMemoryError`` says so)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if any(sign in str(current) for sign in CUDA_OUT_OF_MEMORY_SIGNS):
            return True
        current = current.__cause__ or current.__context__
    return False


def _failure_text(error: BaseException) -> str:
    """The recorded reason of a trainable's exception.

    ``KeyboardInterrupt`` and ``SystemExit`` raised by the trainable are its own doing, not a death
    of its worker: they are named as such (Ray would record them as ``WorkerDied`` and retry). An
    error that says CUDA ran out of memory, directly or through the exceptions it was raised from,
    begins with :data:`~showwork.constants.CUDA_OUT_OF_MEMORY`: its own failure kind.
    """
    if cuda_out_of_memory(error):
        return f"{CUDA_OUT_OF_MEMORY}: {_error_text(error)}"
    if isinstance(error, SystemExit):
        return f"the trainable called sys.exit({error.code!r})\n{_error_text(error)}"
    if isinstance(error, KeyboardInterrupt):
        return f"the trainable raised KeyboardInterrupt\n{_error_text(error)}"
    return _error_text(error)


def _node_identity() -> tuple[str | None, str]:
    node_id = None
    try:
        import ray  # lazy: Ray loads when a search starts it, not when its input is checked

        if ray.is_initialized():
            node_id = ray.get_runtime_context().get_node_id()
    except Exception:  # outside Ray, or Ray without a runtime context
        node_id = None
    return node_id, socket.gethostname()


def _device() -> str:
    try:
        import ray  # lazy: Ray loads when a search starts it, not when its input is checked

        if ray.is_initialized() and ray.get_gpu_ids():
            return "cuda"  # Ray sets CUDA_VISIBLE_DEVICES to this trial's devices only
    except Exception:
        pass
    return "cpu"


class TrialStopped(BaseException):
    """The runner stopped the trial while it reported (Ray Tune's ``tune.report`` raises ``SystemExit``
    in the trial's thread when the search stops it, e.g. after Ctrl-C): not the trainable's failure;
    the trial stays unrecorded and a resume runs it again. A ``BaseException``, so that a trainable's
    ``except Exception`` does not swallow it."""


def stoppable(sink: Callable[[dict], None]) -> Callable[[dict], None]:
    def report(row: dict) -> None:
        try:
            sink(row)
        except SystemExit as stop:  # raised by the runner inside its report call, not by the trainable
            raise TrialStopped() from stop

    return report


@dataclass(frozen=True)
class WorkerPlace:
    """Where a trial runs, as the Ray worker sees it (its Ray APIs answer in the worker only, not in a
    process forked from it): the node, the host, the device and the family to load from where."""

    node_id: str | None
    hostname: str
    device: str  # "cuda" when Ray gave the trial GPUs, else "cpu"
    family: str
    family_folder: Path
    pid: int = dataclasses.field(default_factory=os.getpid)  # the worker's (its log files are named by it)

    @classmethod
    def here(cls, context: SearchContext) -> WorkerPlace:
        node_id, hostname = _node_identity()
        family, folder = _family_in_worker(context)
        return cls(node_id=node_id, hostname=hostname, device=_device(), family=family, family_folder=folder)


def _start_watchdog(timeout_s: float | None, expire: Callable[[], None]) -> threading.Timer | None:
    if timeout_s is None:
        return None
    watchdog = threading.Timer(timeout_s, expire)
    watchdog.daemon = True
    watchdog.start()
    return watchdog


def run_trial(
    context: SearchContext,
    index: int,
    sink: Callable[[dict, str], None] | None = None,
    on_timeout: Callable[[], None] | None = None,
    *,
    place: WorkerPlace | None = None,
    entered: TrialClock | None = None,
    on_training: Callable[[str], None] | None = None,
    interruptible: bool = True,
    train: Callable[..., Any] | None = None,
):
    """Run trial ``index`` in this process and return its :class:`~showwork.store.TrialRecord`.

    Never raises for a failure of the trainable: exceptions (MemoryError, ``sys.exit`` and a
    ``KeyboardInterrupt`` of its own included), a missing or non-finite score become a ``failed``
    record with the reason; only a ``KeyboardInterrupt`` in the main thread (a Ctrl-C: Ray runs
    trainables in another thread; not with ``interruptible=False``, in a trial's own process) and
    :class:`TrialStopped` (``sink`` or ``on_training`` raised ``SystemExit``: the runner stopped the
    trial) propagate, with nothing recorded. ``sink`` receives each per-epoch report and the trial's
    ``started_at`` (the start of the trial's MLflow run); ``on_training`` receives ``started_at`` when
    the trainable is called. With ``context.timeout_s``, a watchdog started then calls ``on_timeout``
    ``timeout_s`` later, after recording the trial as ``timeout`` (a Ray worker passes a function that
    ends the process). ``place`` is where the trial runs (default: this process, :meth:`WorkerPlace.here`);
    ``entered`` when its set-up began (default: now); ``train``, the family's function where the caller has
    looked it up already (default: :func:`family_function`).

    The record's ``runtime_s`` runs from ``started_at``, when the trainable is called, and so does
    ``timeout_s``; what comes before (importing the family's module, which a worker does for its
    first trial only, and rebuilding the configuration) is ``setup_s``, bounded by the worker's
    ``setup_timeout_s`` (:class:`TrialSupervisor`), not by ``timeout_s``. A trial whose set-up fails (a
    family that does not import) has no ``setup_s``: its ``runtime_s`` is the set-up's.
    """
    entered = entered or TrialClock.start()

    ledger = search_ledger(context)
    params, seed = context.trial(index)
    place = place or WorkerPlace.here(context)
    clock = entered  # until the trainable is called (then: clock.started_training())
    reporter = Reporter(None if sink is None else stoppable(lambda row: sink(row, clock.started_at)))
    attempts = ledger.begin_attempt(index)
    done = threading.Lock()  # whoever takes it first (the trial or the watchdog) writes the record
    resolved, train = train, None  # the family's function, once resolved
    modules_before = _LoadedModules.now(_WORKER_MODULES)  # what the trainable imports is new after this
    memory = PeakMemory().start()
    energy = None  # the GPUs' energy counters, read when the trainable is called (the span of runtime_s)

    def record(status: str, **fields: Any):
        runtime = clock.elapsed()
        joules = None if energy is None else energy.joules()  # the same span as runtime_s
        return TrialRecord(
            **_worker_fields(context, modules_before, train, memory),
            index=index,
            status=status,
            params=params,
            seed=seed,
            history=list(reporter.history),
            runtime_s=runtime,
            setup_s=clock.setup_s,
            gpu_seconds=runtime * context.gpus_per_trial if place.device == "cuda" else None,
            gpu_energy_j=joules,
            node_id=place.node_id,
            hostname=place.hostname,
            pid=place.pid,
            started_at=clock.started_at,
            finished_at=utc_now_iso(),
            attempts=attempts,
            **fields,
        )

    def expire():
        if done.acquire(blocking=False):
            try:
                ledger.write(
                    record("timeout", score=None, test_score=None, metrics={},
                           error=f"timed out after {context.timeout_s:g} s")
                )
            except (LedgerWriteError, LedgerConflictError):  # unrecorded, or recorded by the worker or the driver
                pass
            if on_timeout is not None:
                on_timeout()

    watchdog = None
    try:
        try:
            train = resolved or family_function(context, place)
            if context.gpu_memory_cap and place.device == "cuda":
                cap_cuda_memory(min(1.0, context.gpus_per_trial))
            clock = entered.started_training()
            watchdog = _start_watchdog(context.timeout_s, expire)  # timeout_s is the trainable's time (issue 23 item 5)
            if on_training is not None:
                stoppable(on_training)(clock.started_at)
            energy = _energy_meter(context, place.device)
            outcome = check_outcome(train(nest(params), seed=seed, device=place.device, reporter=reporter,
                                          data=dict(context.data)))
            result = _scored(record, outcome, reporter.history, context)
        except BaseException as error:  # noqa: BLE001 - a trial's failure is data, not a crash
            if isinstance(error, TrialStopped):
                raise
            if (isinstance(error, KeyboardInterrupt) and interruptible
                    and threading.current_thread() is threading.main_thread()):
                raise  # Ctrl-C of whoever runs the trial in this process (signals reach the main thread only)
            result = record("failed", score=None, test_score=None, metrics={}, error=redact(_failure_text(error)))  # before the ledger has it
    finally:
        if watchdog is not None:
            watchdog.cancel()
        _stop_measuring(memory, energy)
    if not done.acquire(blocking=False):  # the watchdog recorded a timeout first
        return ledger.read(index)
    try:
        ledger.write(result)
    except LedgerConflictError:  # the trial's worker or the driver recorded it as timed out meanwhile
        return ledger.read(index)
    return result


def _scored(record: Callable[..., Any], outcome: dict, history: list[dict], context: SearchContext):
    """The record of a trainable that returned ``outcome``: finished, or failed for a missing or non-finite score."""
    score = score_from(outcome, history, context.metric, context.mode)
    test = outcome.get(context.test_metric) if context.test_metric else None
    if score is None:
        return record("failed", score=None, test_score=test, metrics=outcome,
                      error=f"the trainable neither returned nor reported the metric {context.metric!r}")
    if score != score or score in (float("inf"), float("-inf")):
        return record("failed", score=score, test_score=test, metrics=outcome,
                      error=f"non-finite score {context.metric} = {score!r}")
    return record("finished", score=score, test_score=test, metrics=outcome, error=None)


class EpochReports:
    """A trial's per-epoch rows on their way to the driver: at most one ``send`` per ``interval_s``.

    A function trainable's ``tune.report`` waits until the driver has taken the result, a round
    trip per call; a trial of short epochs spent most of its overhead there (issue 15 item 8: 5
    reports per 0.5 s trial put the trial phase 11 % over the ideal). So the trainable's start goes
    at once (:meth:`start`: the driver then counts ``timeout_s``, and the trial's MLflow run opens),
    rows wait until ``interval_s`` has passed since the last send (the first row at most that long
    after the start: MLflow gets it at once, see ``showwork.run.callback``); what is left when the
    trial ends is not sent: its record holds the whole history, which the driver reads.
    Epochs longer than the interval (real training) are still sent one by one, as they end.
    ``send`` gets ``{REPORT_KEY: [row, ...], TRIAL_START_KEY: started_at}``.
    """

    def __init__(self, send: Callable[[dict], None], interval_s: float = REPORT_INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic, worker: dict | None = None) -> None:
        self._send, self._interval_s, self._clock = send, interval_s, clock
        self._rows: list[dict] = []
        self._started_at: str | None = None
        self._sent_at: float | None = None  # the last send (the start's included)
        self.worker = dict(worker or {})  # sent with every report (WORKER_KEY, if any): how the driver can end the trial

    def start(self, started_at: str) -> None:
        """Tell the driver at once that the trainable was called at ``started_at``: from then on it
        counts ``timeout_s`` (before: ``setup_timeout_s``)."""
        self._started_at = started_at
        self._sent_at = self._clock()
        self._send(self._report([], started_at))

    def add(self, row: dict, started_at: str) -> None:
        self._rows.append(dict(row))
        self._started_at = started_at
        if self._sent_at is None or self._clock() - self._sent_at >= self._interval_s:
            self.flush()

    def flush(self) -> None:
        if self._rows:
            rows, self._rows = self._rows, []
            self._sent_at = self._clock()
            self._send(self._report(rows, self._started_at))

    def _report(self, rows: list[dict], started_at: str | None) -> dict:
        report = {REPORT_KEY: rows, TRIAL_START_KEY: started_at}
        if self.worker:
            report[WORKER_KEY] = dict(self.worker)
        return report


@dataclass(frozen=True)
class _LoadedModules:
    """The names in ``sys.modules`` at one moment, with how many there were and the last one added."""

    names: frozenset[str]
    count: int
    last: str | None

    @classmethod
    def now(cls, before: _LoadedModules | None = None) -> _LoadedModules:
        """``sys.modules``'s names now: ``before`` itself when none was added or removed since (the same
        count and last name: a dict keeps its insertion order).

        Why not always ``set(sys.modules)``: in a trial's process forked from the worker, touching every
        module's entry writes to the pages it shares with the worker, and the kernel copies them (about
        4 ms, twice per trial)."""
        count, last = len(sys.modules), next(reversed(sys.modules), None)
        if before is not None and before.count == count and before.last == last:
            return before
        return cls(frozenset(sys.modules.copy()), count, last)


_WORKER_MODULES: _LoadedModules | None = None
"""What this worker had loaded when it last prepared a trial (:func:`prepare_worker`, :meth:`TrialSupervisor.run`):
a trial's process forked from it starts with the same."""


_TRAINABLE_MODULES: dict[tuple[str, str], set[str]] = {}
"""Per family (name, base folder), the modules first imported in this process during one of its trials.

A reused worker (Ray's ``reuse_actors``) imports a family's modules in its first trial only; later
trials of the same family inherit what the earlier ones imported."""


def _family_in_worker(context: SearchContext) -> tuple[str, Path]:
    """The family and the folder to resolve it in: the search's, or the node's copy of the shipped folder.

    Ray unpacks the job's ``working_dir`` into a folder of its own on each node and puts that folder
    first on the workers' ``PYTHONPATH``; its name is the package's (``_ray_pkg_<hash>``, from the
    ``gcs://_ray_pkg_<hash>.zip`` URI in the job's runtime environment).
    """
    if not context.family_shipped:
        return context.family, Path(context.base_dir)
    import ray  # lazy: Ray loads when a search starts it, not when its input is checked

    where, _, function = context.family.rpartition(":")
    uri = ray.get_runtime_context().runtime_env.working_dir()
    package = uri.rpartition("/")[2].removesuffix(".zip")
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        if entry and Path(entry).name == package:
            return f"{Path(where).name}:{function}", Path(entry)
    raise RuntimeError(f"the family's folder was shipped as {uri!r}, and this worker has no copy of it on its PYTHONPATH")


def family_function(context: SearchContext, place: WorkerPlace) -> Callable[..., Any]:
    """The family's train function in this process: the search's own function where it gave one (``<function NAME>``,
    unpickled once per process), else :func:`~showwork.families.resolve_family` of ``place.family`` in its folder."""
    if context.function is not None:
        return unpickled_function(context.function)
    return resolve_family(place.family, place.family_folder)


def note_family_modules(context: SearchContext, names: set[str]) -> None:
    """Count ``names`` among the family's modules in this process (:data:`_TRAINABLE_MODULES`): the worker's import of it."""
    _TRAINABLE_MODULES.setdefault((context.family, context.base_dir), set()).update(names)


def _energy_meter(context: SearchContext, device: str) -> Any:
    """The trial's :class:`~showwork.energy.GpuEnergy` where it holds GPUs, else None."""
    return GpuEnergy.start(context.gpus_per_trial) if device == "cuda" else None


def _stop_measuring(memory: Any, energy: Any) -> None:
    """End a trial's measurements, and give its cached GPU memory back.

    A reused worker would keep the trial's cached GPU blocks from the trials packed beside it (Ray's
    GPU fractions do not free memory: ray#32725); after a CUDA OOM they are the trial's leftovers.
    """
    memory.stop()
    if energy is not None:
        energy.close()
    release_cuda_cache()


def _worker_fields(context: SearchContext, modules_before: _LoadedModules, train: Any, memory: Any) -> dict[str, Any]:
    """The record's ``python``, ``packages`` and peak memory fields, measured now, in the worker.

    The trainable's modules are those that appeared in ``sys.modules`` during this family's trials
    in this process, plus those the family's module and its helper modules refer to by name
    (``import numpy as np`` of a package the worker had already loaded:
    :func:`showwork.environment.referenced_modules`); their distributions:
    :func:`showwork.environment.worker_software`.
    """
    imported = _TRAINABLE_MODULES.setdefault((context.family, context.base_dir), set())
    modules_now = _LoadedModules.now(modules_before)
    if modules_now is not modules_before:
        imported.update(modules_now.names - modules_before.names)
    names = set(imported)
    if train is not None:
        names |= referenced_modules(train)
    python, packages = worker_software(names)
    torch_imported = any(name == "torch" or name.startswith("torch.") for name in names)
    return {"python": python, "packages": packages, **memory.peaks(torch_imported=torch_imported)}


def end_process() -> None:
    os._exit(_TIMEOUT_EXIT_CODE)


def note_worker_modules() -> object:
    """Note what this worker has loaded now (a trial's process forked next starts with it) and return it: the
    same object as the last time while nothing was loaded or unloaded since."""
    global _WORKER_MODULES
    _WORKER_MODULES = _LoadedModules.now(_WORKER_MODULES)
    return _WORKER_MODULES


@functools.lru_cache(maxsize=8)
def _ledger_of(storage_dir: str, name: str, search_id: str | None) -> Any:
    return Ledger(Path(storage_dir), name, search_id)


def search_ledger(context: SearchContext) -> Any:
    """The search's :class:`~showwork.store.ledger.Ledger`, one per process: it remembers which ``search.json`` it
    found to hold the search (:meth:`~showwork.store.ledger.Ledger.moved`), so a trial's process forked from a
    worker that checked it once only ``stat``s the file, where a new Ledger read and parsed it again (about
    6 ms of every trial in a running search)."""
    return _ledger_of(str(context.storage_dir), context.name, context.search_id)

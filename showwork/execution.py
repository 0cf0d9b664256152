"""Running trials: one trial in a process (:func:`run_trial`), many on Ray Tune (:class:`RayExecutor`).

Each trial is identified by its index alone. The worker rebuilds the configuration from (seed,
index) — :func:`showwork.sampling.trial_config` — runs the family's train function, and writes
its own :class:`~showwork.ledger.TrialRecord` atomically into the ledger before returning, so a
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
every node as the job's Ray runtime environment (``working_dir``, :func:`family_runtime_env`), less
showwork's own outputs, ``.git`` and virtualenvs, and at most :data:`FAMILY_FOLDER_LIMIT_MIB` MiB;
the workers load the family from their node's copy.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import os
import socket
import sys
import threading
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from showwork.constants import DEFAULT_SETUP_TIMEOUT_S, FAMILY_IMPORT_TIMEOUT
from showwork.redaction import RedactingFormatter, owner_only_folder, redact
from showwork.trainable import Reporter, check_outcome, score_from

__all__ = [
    "FAMILY_FOLDER_LIMIT_MIB", "ClusterResources", "EpochReports", "SearchContext", "TrialStopped", "TrialSupervisor",
    "WorkerPlace", "prepare_worker", "run_trial",
    "RayExecutor", "credentials_not_forwarded", "cuda_out_of_memory", "family_runtime_env", "loopback_kept", "owner_only_files",
    "private_ray_dir",
]

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
FAMILY_FOLDER_LIMIT_MIB = 100  # what a family file's folder may weigh to be shipped to a cluster (Ray's own cap: 512 MiB)
# Never shipped with a family's folder: showwork's own outputs, git's history, Python's caches.
_NOT_SHIPPED = ("showwork_runs", "mlartifacts", "mlruns", ".git", "__pycache__")
_NOT_SHIPPED_FILES = ("mlflow.db", "mlflow.db-journal", "mlflow.db-wal", "mlflow.db-shm")


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

    def trial(self, index: int) -> tuple[dict[str, Any], int]:
        """The configuration and training seed of trial ``index``: drawn from ``(seed, index)``
        (:mod:`showwork.sampling`), or the re-run's own when ``assignments`` gives them."""
        if self.assignments is not None:
            params, seed = self.assignments[index]
            return dict(params), int(seed)
        from showwork.sampling import trial_config, trial_seed
        from showwork.space import SearchSpace

        return trial_config(SearchSpace.from_dict(self.space), self.seed, index), trial_seed(self.seed, index)


@dataclass(frozen=True)
class _TrialClock:
    """When a trial's measured time began: ``started_at`` (ISO-8601) and the same moment on the
    monotonic clock; ``setup_s``, the set-up that came before, once the trainable is called."""

    started_at: str
    origin: float
    setup_s: float | None = None

    @classmethod
    def start(cls) -> _TrialClock:
        from showwork.ledger import utc_now_iso

        return cls(started_at=utc_now_iso(), origin=time.perf_counter())

    def started_training(self) -> _TrialClock:
        """The clock of the trainable's call: it starts now, after ``setup_s`` seconds of set-up."""
        from showwork.ledger import utc_now_iso

        now = time.perf_counter()
        return _TrialClock(started_at=utc_now_iso(), origin=now, setup_s=now - self.origin)

    def elapsed(self) -> float:
        return time.perf_counter() - self.origin


def _error_text(error: BaseException) -> str:
    tail = "".join(traceback.format_exception(type(error), error, error.__traceback__)[-6:])
    return f"{type(error).__name__}: {error}\n{tail[-2000:]}"


def cuda_out_of_memory(error: BaseException) -> bool:
    """Whether ``error``, or an exception it was raised from, says that CUDA ran out of memory
    (:data:`~showwork.constants.CUDA_OUT_OF_MEMORY_SIGNS`; torch's ``OutOfMemoryError`` says so)."""
    from showwork.constants import CUDA_OUT_OF_MEMORY_SIGNS

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
        from showwork.constants import CUDA_OUT_OF_MEMORY

        return f"{CUDA_OUT_OF_MEMORY}: {_error_text(error)}"
    if isinstance(error, SystemExit):
        return f"the trainable called sys.exit({error.code!r})\n{_error_text(error)}"
    if isinstance(error, KeyboardInterrupt):
        return f"the trainable raised KeyboardInterrupt\n{_error_text(error)}"
    return _error_text(error)


def _node_identity() -> tuple[str | None, str]:
    node_id = None
    try:
        import ray

        if ray.is_initialized():
            node_id = ray.get_runtime_context().get_node_id()
    except Exception:  # outside Ray, or Ray without a runtime context
        node_id = None
    return node_id, socket.gethostname()


def _device() -> str:
    try:
        import ray

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


def _stoppable(sink: Callable[[dict], None]) -> Callable[[dict], None]:
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
    entered: _TrialClock | None = None,
    on_training: Callable[[str], None] | None = None,
    interruptible: bool = True,
):
    """Run trial ``index`` in this process and return its :class:`~showwork.ledger.TrialRecord`.

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
    ``entered`` when its set-up began (default: now).

    The record's ``runtime_s`` runs from ``started_at``, when the trainable is called, and so does
    ``timeout_s``; what comes before (importing the family's module, which a worker does for its
    first trial only, and rebuilding the configuration) is ``setup_s``, bounded by the worker's
    ``setup_timeout_s`` (:class:`TrialSupervisor`), not by ``timeout_s``. A trial whose set-up fails (a
    family that does not import) has no ``setup_s``: its ``runtime_s`` is the set-up's.
    """
    entered = entered or _TrialClock.start()
    from showwork.environment import PeakMemory, cap_cuda_memory
    from showwork.families import resolve_family
    from showwork.ledger import LedgerConflictError, LedgerWriteError, TrialRecord, utc_now_iso
    from showwork.sampling import nest

    ledger = search_ledger(context)
    params, seed = context.trial(index)
    place = place or WorkerPlace.here(context)
    clock = entered  # until the trainable is called (then: clock.started_training())
    reporter = Reporter(None if sink is None else _stoppable(lambda row: sink(row, clock.started_at)))
    attempts = ledger.begin_attempt(index)
    done = threading.Lock()  # whoever takes it first (the trial or the watchdog) writes the record
    train = None  # the family's function, once resolved
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
            train = resolve_family(place.family, place.family_folder)
            if context.gpu_memory_cap and place.device == "cuda":
                cap_cuda_memory(min(1.0, context.gpus_per_trial))
            clock = entered.started_training()
            watchdog = _start_watchdog(context.timeout_s, expire)  # timeout_s is the trainable's time (issue 23 item 5)
            if on_training is not None:
                _stoppable(on_training)(clock.started_at)
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


def _family_in_worker(context: SearchContext) -> tuple[str, Path]:
    """The family and the folder to resolve it in: the search's, or the node's copy of the shipped folder.

    Ray unpacks the job's ``working_dir`` into a folder of its own on each node and puts that folder
    first on the workers' ``PYTHONPATH``; its name is the package's (``_ray_pkg_<hash>``, from the
    ``gcs://_ray_pkg_<hash>.zip`` URI in the job's runtime environment).
    """
    if not context.family_shipped:
        return context.family, Path(context.base_dir)
    import ray

    where, _, function = context.family.rpartition(":")
    uri = ray.get_runtime_context().runtime_env.working_dir()
    package = uri.rpartition("/")[2].removesuffix(".zip")
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        if entry and Path(entry).name == package:
            return f"{Path(where).name}:{function}", Path(entry)
    raise RuntimeError(f"the family's folder was shipped as {uri!r}, and this worker has no copy of it on its PYTHONPATH")


def family_runtime_env(folder: Path) -> dict[str, Any]:
    """Ray's runtime environment that ships a family file's ``folder`` to every node of a cluster.

    Left out: showwork's own outputs (``showwork_runs/``, ``mlflow.db``, ``mlartifacts/``), ``.git``,
    ``__pycache__`` and virtualenvs (folders holding a ``pyvenv.cfg``), at any depth. Ray also leaves
    out what the folder's ``.gitignore`` and ``.rayignore`` files name, which the size limit does not
    subtract (it is checked before Ray starts, without Ray's pattern matching).

    Raises
    ------
    InputError
        What would be shipped weighs more than :data:`FAMILY_FOLDER_LIMIT_MIB` MiB.
    """
    from showwork.errors import InputError

    limit = FAMILY_FOLDER_LIMIT_MIB * 2**20
    excludes: list[str] = [*_NOT_SHIPPED, *_NOT_SHIPPED_FILES]  # gitignore patterns: at any depth (a .git file too)
    total = 0
    for root, dirs, files in os.walk(folder):
        kept = []
        for name in dirs:
            path = Path(root, name)
            if name in _NOT_SHIPPED or path.is_symlink():
                continue
            if (path / "pyvenv.cfg").is_file():  # a virtualenv, whatever its name
                excludes.append(f"/{path.relative_to(folder).as_posix()}/")
                continue
            kept.append(name)
        dirs[:] = kept
        for name in files:
            if name in _NOT_SHIPPED_FILES or name in _NOT_SHIPPED:
                continue
            try:
                total += Path(root, name).lstat().st_size
            except OSError:  # vanished meanwhile
                continue
        if total > limit:
            raise InputError(
                f"the family file's folder {folder} holds more than {FAMILY_FOLDER_LIMIT_MIB} MiB besides showwork_runs/,"
                " mlflow.db, mlartifacts/, .git and virtualenvs; the search ships that folder to every node of the"
                " cluster. Put the family file and the modules it imports in a folder of their own, and the data"
                " elsewhere."
            )
    return {"working_dir": str(folder), "excludes": excludes}


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


def _energy_meter(context: SearchContext, device: str) -> Any:
    """The trial's :class:`~showwork.energy.GpuEnergy` where it holds GPUs, else None."""
    from showwork.energy import GpuEnergy

    return GpuEnergy.start(context.gpus_per_trial) if device == "cuda" else None


def _stop_measuring(memory: Any, energy: Any) -> None:
    """End a trial's measurements, and give its cached GPU memory back.

    A reused worker would keep the trial's cached GPU blocks from the trials packed beside it (Ray's
    GPU fractions do not free memory: ray#32725); after a CUDA OOM they are the trial's leftovers.
    """
    from showwork.environment import release_cuda_cache

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
    from showwork.environment import referenced_modules, worker_software

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


def _end_process() -> None:
    os._exit(_TIMEOUT_EXIT_CODE)


def _ray_trial(config: dict, context: SearchContext) -> None:
    """The Ray Tune function trainable: one trial per index, idempotent across retries.

    The worker imports the family (once: a warm worker has it) and runs the trial in a child process
    forked for it (:class:`TrialSupervisor`, :mod:`showwork.isolation`); where the family's import
    initialised CUDA here, in this process, as before (unisolated: the driver warns).
    """
    from ray import tune

    from showwork.ledger import Ledger, LedgerWriteError

    index = int(config["index"])
    if Ledger(Path(context.storage_dir), context.name).read(index) is not None:
        return
    entered = _TrialClock.start()
    place = WorkerPlace.here(context)
    isolated = prepare_worker(context, place)
    # Reports go under one key so the driver can tell them from Ray's own result fields.
    reports = EpochReports(tune.report, worker={"pid": os.getpid(), "node_id": place.node_id, "isolated": isolated})
    try:
        if isolated:
            failure = TrialSupervisor(context, index, place, reports, entered).run()
        else:
            run_trial(context, index, sink=reports.add, on_timeout=_end_process, place=place, entered=entered,
                      on_training=reports.start)
            failure = None
        # The epochs not sent yet are not sent: the record holds the trial's whole history, and the driver reads it
        # (one round trip to the driver less per trial; its MLflow run gets them with its end).
    except TrialStopped:  # the search stopped it (Ctrl-C): unrecorded, so a resume runs it again
        return
    except LedgerWriteError as error:
        failure = str(error)
    if failure is not None:
        # The storage failed, not the trial: told to the driver, which stops the search (no retry
        # into the same full disk); the trial stays unrecorded, so a resume runs it again.
        tune.report({STORAGE_FAILURE_KEY: failure})


def prepare_worker(context: SearchContext, place: WorkerPlace) -> bool:
    """The worker's set-up, before it forks a trial: import the family (a warm worker has it; a failing import
    is left to the trial's process, which records why), count the modules it imported as the family's, and
    fill the caches every trial's process reads (the installed distributions, which a cold process takes a
    few hundred milliseconds to list). Returns whether a forked process can run the trial: False where CUDA
    is initialised in this process."""
    from showwork.families import resolve_family
    from showwork.isolation import FORK_SAFE_CUDA_CHECK, cuda_initialised

    if context.gpus_per_trial > 0:
        os.environ.setdefault(*FORK_SAFE_CUDA_CHECK)  # torch.cuda.is_available() at import: without initialising CUDA
    before = set(sys.modules.copy())
    try:
        resolve_family(place.family, place.family_folder)
    except BaseException:  # noqa: BLE001 - the trial's own process imports it again and records the failure
        pass
    finally:
        _TRAINABLE_MODULES.setdefault((context.family, context.base_dir), set()).update(set(sys.modules.copy()) - before)
    _fill_worker_caches()
    search_ledger(context).moved()  # checked once here: each trial's process inherits what it found
    _note_worker_modules()
    return not cuda_initialised()


def _note_worker_modules() -> None:
    global _WORKER_MODULES
    _WORKER_MODULES = _LoadedModules.now(_WORKER_MODULES)


@functools.lru_cache(maxsize=8)
def _ledger_of(storage_dir: str, name: str, search_id: str | None) -> Any:
    from showwork.ledger import Ledger

    return Ledger(Path(storage_dir), name, search_id)


def search_ledger(context: SearchContext) -> Any:
    """The search's :class:`~showwork.ledger.Ledger`, one per process: it remembers which ``search.json`` it
    found to hold the search (:meth:`~showwork.ledger.Ledger.moved`), so a trial's process forked from a
    worker that checked it once only ``stat``s the file, where a new Ledger read and parsed it again (about
    6 ms of every trial in a running search)."""
    return _ledger_of(str(context.storage_dir), context.name, context.search_id)


@functools.lru_cache(maxsize=1)
def _fill_worker_caches() -> None:
    """Once per worker process: fill what every trial's process forked from it would otherwise compute again."""
    import encodings.ascii  # noqa: F401 - a trial's record is encoded with it: each process would import it again

    import showwork.energy  # noqa: F401 - run_trial imports it: 2.5 ms of a 0 s trial when each process did
    from showwork.environment import worker_software

    worker_software(())  # the installed distributions and their top-level modules, cached by environment


def _trial_in_child(send: Any, context: SearchContext, index: int, place: WorkerPlace,
                    entered: _TrialClock) -> None:
    """What a trial's own process runs (:class:`~showwork.isolation.ChildProcess`): :func:`run_trial`, whose
    start, epochs and storage failure go to the worker as ``("training", started_at)``, ``("row", row)`` and
    ``("storage", message)``. Its own watchdog ends it at ``timeout_s``.

    The trainable is called only once the driver has the start (the worker answers ``"training"`` when its
    report returned, which is after the driver's hooks took it): from then on the driver counts ``timeout_s``,
    so a worker stopped right after the trainable's call is ended at ``timeout_s`` and its grace, not at
    ``setup_timeout_s`` (the driver would not have heard that the trainable was called)."""
    from showwork.ledger import LedgerWriteError

    try:
        run_trial(context, index, sink=lambda row, started_at: send(("row", row)), on_timeout=_end_process,
                  place=place, entered=entered, on_training=lambda started_at: send.ask(("training", started_at)),
                  interruptible=False)
    except LedgerWriteError as error:
        send(("storage", str(error)))
    send(("ended", None))  # the worker goes on now, while this process's memory is torn down


class TrialProcessDied(RuntimeError):
    """A trial's process ended without a record (``os._exit``, a crash, the OOM killer) and may run again:
    raised in the worker, so that Ray Tune runs the trial again (``max_retries``) in a fresh worker."""


class TrialSupervisor:
    """The worker's side of a trial run in a process of its own (:mod:`showwork.isolation`).

    It forks the trial's process from this warm worker, relays its start and epochs to the driver
    (``reports``), and ends it at its deadlines, which the trial's own watchdog cannot keep when its
    process is stopped or holds its GIL in C code:

    - set-up: ``setup_timeout_s`` after ``entered`` (the worker's import of the family included), the
      trainable must have been called, else the trial is recorded as ``timeout`` of kind
      :data:`~showwork.constants.FAMILY_IMPORT_TIMEOUT`;
    - the trainable: ``timeout_s`` after its start the watchdog in the trial's process records the
      timeout; :data:`TRIAL_KILL_MARGIN_S` later the worker kills the process and records it.

    Either way the worker stays: the next trial does not import the family again. A process that
    dies without a record is run again by Ray Tune (:class:`TrialProcessDied`), up to ``max_retries``;
    the last death is recorded here, with how the process ended.
    """

    def __init__(self, context: SearchContext, index: int, place: WorkerPlace, reports: EpochReports,
                 entered: _TrialClock | None = None) -> None:
        from showwork.ledger import Ledger

        self.context, self.index, self.place, self.reports = context, index, place, reports
        self.entered = entered or _TrialClock.start()  # when the worker took the trial (its set-up began)
        self.ledger = Ledger(Path(context.storage_dir), context.name)
        self.rows: list[dict] = []
        self.started_at: str | None = None  # the trainable's start, from the trial's process
        self.training_since: float | None = None  # ... on this worker's clock
        self.storage_failure: str | None = None

    def run(self) -> str | None:
        """Run the trial to its record; return the storage failure that left it unrecorded, if any.

        Raises
        ------
        TrialProcessDied
            The trial's process died without a record, and ``max_retries`` allows another run.
        TrialStopped
            Ray Tune stopped the trial (its process is killed; nothing is recorded).
        """
        from showwork.isolation import ChildProcess, exit_description

        _note_worker_modules()  # what the trial's process starts with (nothing to do when the worker imported nothing since)
        child = ChildProcess(_trial_in_child, self.context, self.index, self.place, self.entered)
        self.reports.worker["trial_pid"] = child.pid
        try:
            how_it_ended = self._relay(child)
        except BaseException:
            child.kill()
            raise
        if how_it_ended == "expired":
            return self.storage_failure
        if how_it_ended == "said" and (self.storage_failure is not None or self.ledger.read(self.index) is not None):
            # Its exit (the kernel freeing a copy of the worker's memory: milliseconds) need not hold up the
            # next trial: it is reaped meanwhile.
            threading.Thread(target=child.wait, name="showwork-reap-trial", daemon=True).start()
            return self.storage_failure
        status = child.wait()
        if self.ledger.read(self.index) is not None or self.storage_failure is not None:
            return self.storage_failure
        how = f"the trial's process (pid {child.pid}) {exit_description(status)} without writing a record"
        if self.ledger.attempts_started(self.index) <= self.context.max_retries:
            raise TrialProcessDied(how)
        self._write(self._died(how))
        return self.storage_failure

    def _deadline(self) -> float | None:
        if self.training_since is None:
            return self.entered.origin + self.context.setup_timeout_s
        if self.context.timeout_s is None:
            return None
        return self.training_since + self.context.timeout_s + TRIAL_KILL_MARGIN_S

    def _relay(self, child) -> str:
        """Pass the child's messages on until it says it has ended (``"said"``), it is gone (``"gone"``: it
        ended without saying so), or its time is up (``"expired"``: killed, and recorded)."""
        while True:
            deadline = self._deadline()
            try:
                kind, value = child.receive(None if deadline is None else deadline - time.perf_counter())
            except TimeoutError:
                self._expired(child)
                return "expired"
            except EOFError:
                return "gone"
            if kind == "ended":
                return "said"
            if kind == "training":
                self.started_at, self.training_since = value, time.perf_counter()
                _stoppable(self.reports.start)(value)  # returns once the driver's hooks have the start
                child.reply(True)
            elif kind == "row":
                self.rows.append(value)
                _stoppable(lambda row: self.reports.add(row, self.started_at))(value)
            elif kind == "storage":
                self.storage_failure = value

    def _expired(self, child) -> None:
        """Kill the trial's process at its deadline and record the timeout, unless it recorded itself meanwhile."""
        from showwork.ledger import TrialRecord, utc_now_iso

        peak = child.peak_rss_bytes()
        child.kill()
        if self.ledger.read(self.index) is not None:
            return
        params, seed = self.context.trial(self.index)
        now = time.perf_counter()
        if self.training_since is None:
            error = (f"{FAMILY_IMPORT_TIMEOUT}: the worker's set-up (importing the family {self.context.family!r}) did"
                     f" not end within setup_timeout_s = {self.context.setup_timeout_s:g} s; its process was killed")
            runtime, setup, started_at = now - self.entered.origin, None, self.started_at
        else:
            error = (f"timed out after {self.context.timeout_s:g} s\nthe trial's process did not end at its timeout"
                     f" (stopped, or in code that holds the GIL) and was killed {TRIAL_KILL_MARGIN_S:g} s later")
            runtime, setup, started_at = now - self.training_since, self.training_since - self.entered.origin, self.started_at
        record = TrialRecord(
            index=self.index, status="timeout", params=params, seed=seed, score=None, history=list(self.rows),
            runtime_s=max(0.0, runtime), setup_s=setup, error=error, node_id=self.place.node_id,
            hostname=self.place.hostname, pid=self.place.pid, peak_rss_bytes=peak, started_at=started_at or self.entered.started_at,
            finished_at=utc_now_iso(), attempts=max(1, self.ledger.attempts_started(self.index)),
            gpu_seconds=max(0.0, runtime) * self.context.gpus_per_trial if self.place.device == "cuda" else None,
        )
        self._write(record)

    def _died(self, how: str):
        from showwork.ledger import TrialRecord

        params, seed = self.context.trial(self.index)
        runtime = 0.0 if self.training_since is None else time.perf_counter() - self.training_since
        return TrialRecord.failed_without_worker(
            self.index, params=params, seed=seed, reason=how, attempts=max(1, self.ledger.attempts_started(self.index)),
            started_at=self.started_at, runtime_s=runtime, node_id=self.place.node_id, hostname=self.place.hostname,
        )

    def _write(self, record) -> None:
        from showwork.ledger import LedgerConflictError, LedgerWriteError

        try:
            self.ledger.write(record)
        except LedgerConflictError:  # the trial's process or the driver recorded it first: that record stands
            pass
        except LedgerWriteError as error:
            self.storage_failure = str(error)


def private_ray_dir() -> Path:
    """The local Ray's temp folder: ``showwork-ray-<uid>/ray`` in the system temp folder.

    Ray's logs keep what it is handed (``runtime_env_agent.log`` listed the ``AWS_*`` variables
    Ray Tune forwards to its workers, keys included; a worker's ``worker-*.out`` keeps whatever
    the trial prints), and ``ray.init`` makes its temp folder, sessions and logs folders
    world-writable (``chmod 0777``, ``ray._common.utils.try_make_directory_shared``) whatever mode
    they had. So Ray gets the ``ray`` folder *inside* ``showwork-ray-<uid>``, which showwork
    keeps at 0700 and Ray never touches: no other user can enter it, whatever Ray does below.
    The temp folder is the one Ray would use (``$RAY_TMPDIR``, on Linux ``$TMPDIR``, else ``/tmp``).
    Ray's own default, ``/tmp/ray``, is shared and world-readable.

    Raises
    ------
    InputError
        The outer folder exists and is not a directory owned by this user (a symlink, another user's).
    """
    import stat

    from ray._common.utils import get_default_system_temp_dir

    from showwork.errors import InputError

    base = get_default_system_temp_dir()
    uid = os.getuid() if hasattr(os, "getuid") else None
    folder = Path(base) / (f"showwork-ray-{uid}" if uid is not None else "showwork-ray")
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        info = folder.lstat()
    except OSError as error:
        raise InputError(f"{folder}: cannot create the local Ray's folder ({error.strerror})") from None
    if not stat.S_ISDIR(info.st_mode) or (uid is not None and info.st_uid != uid):
        raise InputError(f"{folder}: exists but is not a directory of yours; remove it, or set RAY_TMPDIR")
    if info.st_mode & 0o077:  # opened up, e.g. by a Ray that had this folder as its temp folder (earlier showwork)
        folder.chmod(0o700)
    return folder / "ray"


@contextlib.contextmanager
def owner_only_files() -> Iterator[None]:
    """Within the block, this process creates files and folders for its owner only (umask 077).

    Ray's processes (GCS, raylet, agents and, through the raylet, every worker) inherit the umask
    of the process that starts them, so the files they write are 0600 (folders 0700) unless Ray
    sets a mode itself. The umask is per process: other threads of the driver are affected during
    the block too, which makes what they create more private, never less.
    """
    previous = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(previous)


@contextlib.contextmanager
def credentials_not_forwarded() -> Iterator[None]:
    """Within the block, Ray Tune does not copy the driver's ``AWS_*`` credentials into its trial actors.

    Ray Tune adds ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SECURITY_TOKEN`` and
    ``AWS_SESSION_TOKEN`` from the driver's environment to each trial actor's ``runtime_env``
    (``ray.tune.execution.class_cache.ENV_VARS_TO_PROPAGATE``, for its own S3 syncing), and
    Ray then writes that ``runtime_env`` into its logs, keys included. showwork's trials write to a
    local ledger and do not need them: workers of a local Ray inherit the user's environment
    anyway, and those of a cluster get the cluster's own.
    """
    from ray.tune.execution import class_cache

    forwarded = class_cache.ENV_VARS_TO_PROPAGATE
    class_cache.ENV_VARS_TO_PROPAGATE = frozenset(name for name in forwarded if not name.startswith("AWS_"))
    try:
        yield
    finally:
        class_cache.ENV_VARS_TO_PROPAGATE = forwarded


@contextlib.contextmanager
def loopback_kept() -> Iterator[None]:
    """Within the block, Ray keeps a node address of 127.0.0.1 instead of replacing it.

    On Linux, Ray replaces 127.0.0.1 by the machine's network address (so that other machines can
    reach the node), and its gRPC servers (GCS, raylet, workers) then listen on all interfaces. It
    keeps loopback where clusters are off (its macOS/Windows default,
    ``ray_constants.ENABLE_RAY_CLUSTER``), so that flag is off in the block only: a later
    ``ray.init(address=...)`` in the process still joins clusters normally.
    """
    from ray._private import ray_constants

    clusters = getattr(ray_constants, "ENABLE_RAY_CLUSTER", None)
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        if clusters is None:
            del ray_constants.ENABLE_RAY_CLUSTER
        else:
            ray_constants.ENABLE_RAY_CLUSTER = clusters


@contextlib.contextmanager
def ray_sigterm_handlers_kept_out() -> Iterator[None]:
    """Within the block, ``ray.init`` does not install its SIGTERM handlers: the caller's handler stays.

    ``ray.init`` installs one that calls ``sys.exit`` (and a local head node one that kills Ray's processes
    and calls ``sys.exit``) while it starts Ray's processes. A SIGTERM then raised ``SystemExit`` wherever
    the driver was, inside the ``fork`` hooks of ``logging`` too, where it was swallowed and left logging's
    lock held: the search hung with Ray running (issue 23 item 10). showwork's own handler
    (:class:`showwork.run.interrupts.Interrupts`) waits until Ray has started, then shuts it down.
    """
    from ray._private import utils

    installer = utils.set_sigterm_handler
    utils.set_sigterm_handler = lambda handler: None
    try:
        yield
    finally:
        utils.set_sigterm_handler = installer


_RAY_TOKEN_LOGGER = "ray._private.authentication.authentication_token_setup"


def _drop_token_auth_notice(record: logging.LogRecord) -> bool:
    """A logging filter: False for Ray's "Token authentication is enabled for this Ray cluster" notice."""
    return not str(record.msg).startswith("Token authentication is enabled for this Ray cluster")


def _init_local_ray(num_cpus: int | None) -> None:
    """Start a local Ray on 127.0.0.1 only (:func:`loopback_kept`), without the dashboard, in
    :func:`private_ray_dir`, its processes writing files for their owner only (:func:`owner_only_files`)."""
    import ray

    temp_dir = private_ray_dir()
    # Ray 2.60 turns token authentication on for a new local cluster when RAY_AUTH_MODE is unset,
    # and says so in a warning line on stderr: in every `showwork search`, and before the one
    # `showwork: error:` line of a refused search. Only that notice is dropped (Ray's default, the
    # protection, is kept; setting RAY_AUTH_MODE=token ourselves would skip Ray's creation of the token).
    logging.getLogger(_RAY_TOKEN_LOGGER).addFilter(_drop_token_auth_notice)
    with loopback_kept(), owner_only_files():
        ray.init(
            num_cpus=num_cpus,
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            _temp_dir=str(temp_dir),
            log_to_driver=False,
            configure_logging=False,
        )


def _loopback_only(address: str) -> bool:
    """Whether ``address`` is ``127.x.x.x:port`` (or ``localhost:port``) and that port is closed
    on this machine's network address: a cluster whose nodes listen on loopback only."""
    import ipaddress

    host, _, port = address.rpartition(":")
    if not port.isdigit():
        return False
    try:
        if host != "localhost" and not ipaddress.ip_address(host).is_loopback:
            return False
    except ValueError:  # a host name
        return False
    from ray._private import services

    network = services.node_ip_address_from_perspective(None)
    if ipaddress.ip_address(network).is_loopback:
        return True
    try:
        with socket.create_connection((network, int(port)), timeout=2):
            return False  # the head listens on the network too: Ray's own address rewriting works
    except OSError:
        return True


def _init_cluster(address: str, runtime_env: dict[str, Any] | None = None) -> None:
    """Join the existing cluster at ``address``.

    Ray replaces a loopback address by this machine's network address before connecting (so that
    the node it starts can be reached from other machines), which cannot reach a cluster whose
    nodes listen on 127.0.0.1 only — a one-machine cluster started as safely as the local Ray of
    :func:`_init_local_ray`. For such a cluster the replacement is turned off during this call.
    """
    import ray

    if address.startswith("ray://") or address == "auto" or not _loopback_only(address):
        ray.init(address=address, log_to_driver=False, configure_logging=False, runtime_env=runtime_env)
        return
    with loopback_kept():
        ray.init(address=address, _node_ip_address="127.0.0.1", log_to_driver=False, configure_logging=False,
                 runtime_env=runtime_env)


@dataclass(frozen=True)
class ClusterResources:
    """The CPUs and GPUs of a Ray cluster's alive nodes, and the node types its autoscaler can add.

    A trial is one bundle of ``{CPU, GPU}``: it runs only on a node that has both (Ray never
    splits a bundle), so a request that no node fits waits forever unless a node that fits joins.
    """

    nodes: tuple[tuple[float, float], ...]  # (CPUs, GPUs) of each alive node
    scalable: tuple[tuple[float, float], ...] = ()  # (CPUs, GPUs) of each node type the autoscaler can add
    autoscaling_declared: bool = False  # $SHOWWORK_AUTOSCALING says nodes join on demand

    @staticmethod
    def _fit(shapes, cpus: float, gpus: float) -> bool:
        slack = 1e-6  # Ray keeps resources in units of 1e-4
        return any(c + slack >= cpus and g + slack >= gpus for c, g in shapes)

    def fits(self, cpus: float, gpus: float) -> bool:
        """Whether some alive node has ``cpus`` CPUs and ``gpus`` GPUs in all."""
        return self._fit(self.nodes, cpus, gpus)

    def may_fit_later(self, cpus: float, gpus: float) -> bool:
        """Whether the autoscaler can add a node that fits (or the user declared that nodes join)."""
        return self.autoscaling_declared or self._fit(self.scalable, cpus, gpus)

    def describe(self) -> str:
        """``1 node: cpus=2, gpus=0``, ``3 nodes: 2 × (cpus=8, gpus=1), 1 × (cpus=2, gpus=0)``."""
        if not self.nodes:
            return "no alive node"
        shapes: dict[tuple[float, float], int] = {}
        for shape in self.nodes:
            shapes[shape] = shapes.get(shape, 0) + 1
        count = f"{len(self.nodes)} node{'s' if len(self.nodes) > 1 else ''}"
        if len(shapes) == 1:
            ((cpus, gpus),) = shapes
            return f"{count}: cpus={cpus:g}, gpus={gpus:g}"
        parts = [f"{n} × (cpus={c:g}, gpus={g:g})" for (c, g), n in sorted(shapes.items(), key=lambda x: -x[1])]
        return f"{count}: " + ", ".join(parts)


def _declared_autoscaling() -> bool | None:
    """``$SHOWWORK_AUTOSCALING``: true/false where the cluster's autoscaler is not visible to Ray's state API."""
    value = os.environ.get("SHOWWORK_AUTOSCALING", "").strip().lower()
    if value in ("1", "true", "yes"):
        return True
    if value in ("0", "false", "no"):
        return False
    return None


def _scalable_node_types() -> tuple[tuple[float, float], ...]:
    """The (CPUs, GPUs) of the node types Ray's autoscaler can still add, from the cluster config it publishes.

    The same test as Ray Data's ``is_autoscaling_enabled``: a node type scales up when its
    ``max_count`` is -1 (unlimited) or above its ``min_count``. A cluster without autoscaler
    (``ray start`` by hand, a local Ray) publishes no config: nothing.
    """
    try:
        import ray._private.state

        config = ray._private.state.state.get_cluster_config()
    except Exception:  # an older GCS, a client connection: no config to read
        return ()
    if not config or not config.node_group_configs:
        return ()
    return tuple(
        (float(group.resources.get("CPU", 0)), float(group.resources.get("GPU", 0)))
        for group in config.node_group_configs
        if group.resources and group.max_count != 0 and (group.max_count == -1 or group.max_count > group.min_count)
    )


class _QuietStreamHandler(logging.StreamHandler):
    def handleError(self, record) -> None:  # a full disk: the message is lost, no "--- Logging error ---"
        pass


@contextlib.contextmanager
def _ray_messages_to(log_path: Path) -> Iterator[None]:
    """Within the block, the driver's Ray messages go to ``log_path`` instead of the terminal.

    Those are Ray Tune's tracebacks of failed trials ("Trial task failed ...", several per dead
    worker, one per retry) and the raylet's notices about dead workers, which Ray prints on the
    driver's stdout. showwork's progress already says which trial failed and why; the details
    stay in the log. If the file cannot be opened, the messages stay on the terminal.
    """
    from ray._private import worker as ray_worker

    from showwork.files import create_own_file

    try:
        stream = os.fdopen(create_own_file(log_path), "a", encoding="utf-8")  # a new file, never through a link
    except OSError:
        yield
        return
    handler = _QuietStreamHandler(stream)
    handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    ray_logger = logging.getLogger("ray")
    terminal = list(ray_logger.handlers)
    for old in terminal:
        ray_logger.removeHandler(old)
    ray_logger.addHandler(handler)
    raylet_logger = logging.getLogger("ray.raylet_messages")
    printer = getattr(ray_worker, "print_to_stdstream", None)

    def to_log(data: dict, ignore_prefix: bool = False) -> None:  # Ray's error listener thread calls it
        for line in data.get("lines", ()):
            raylet_logger.error("(%s) %s", data.get("pid", "raylet"), line)

    if printer is not None:
        ray_worker.print_to_stdstream = to_log
    try:
        yield
    finally:
        if printer is not None:
            ray_worker.print_to_stdstream = printer
        ray_logger.removeHandler(handler)
        for old in terminal:
            ray_logger.addHandler(old)
        handler.close()
        with contextlib.suppress(OSError):  # its last flush, on a full disk
            stream.close()


class RayExecutor:
    """Runs trials on Ray Tune: a local Ray on 127.0.0.1, or an existing cluster at ``address``.

    Parameters
    ----------
    address : str, optional
        ``ray://...`` or ``host:port`` of an existing cluster; default ``$RAY_ADDRESS`` or a local Ray.
    num_cpus : int, optional
        CPUs of the local Ray (default: all).
    family_folder : Path, optional
        The folder of the family file, shipped to a cluster's nodes (:func:`family_runtime_env`);
        a local Ray's workers read it where it is.
    """

    def __init__(self, address: str | None = None, num_cpus: int | None = None, family_folder: Path | None = None):
        self.address = address or os.environ.get("RAY_ADDRESS") or None
        self.num_cpus = num_cpus
        self.family_folder = family_folder
        self._shipped = False  # this executor's Ray job ships the family folder
        self._started = False
        self._kept = contextlib.ExitStack()  # settings of Ray held while the executor is entered
        self.run_folder: Path | None = None  # Ray Tune's folder of the last run (``ray/run-<time>``)

    def __enter__(self) -> "RayExecutor":
        os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")  # no experiment banner; showwork draws its own progress
        os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")
        os.environ.setdefault("RAY_DEDUP_LOGS", "0")
        import logging

        import ray

        # Tune's per-trial log lines and its result-grid warnings duplicate showwork's own display.
        for logger in ("ray.tune", "ray.train", "ray.air"):
            logging.getLogger(logger).setLevel(logging.ERROR)
        ship = bool(self.address and self.family_folder is not None and not ray.is_initialized())
        runtime_env = family_runtime_env(self.family_folder) if ship else None  # too big: refused before Ray starts
        self._kept.enter_context(credentials_not_forwarded())
        self._kept.enter_context(ray_sigterm_handlers_kept_out())
        if not ray.is_initialized():
            try:
                if self.address:
                    _init_cluster(self.address, runtime_env)
                    self._shipped = ship
                else:
                    _init_local_ray(self.num_cpus)
            except BaseException:  # a failed start, or Ctrl-C during it: end what it started
                self._kept.close()
                ray.shutdown()
                raise
            self._started = True
        return self

    def __exit__(self, *exc) -> None:
        self._kept.close()
        if self._started:
            import ray

            ray.shutdown()

    def cluster_resources(self) -> ClusterResources:
        """What the (started) Ray offers trials now: see :class:`ClusterResources`."""
        import ray

        nodes = tuple(
            (float(node["Resources"].get("CPU", 0)), float(node["Resources"].get("GPU", 0)))
            for node in ray.nodes() if node.get("Alive")
        )
        declared = _declared_autoscaling()
        return ClusterResources(
            nodes=nodes,
            scalable=() if declared is False else _scalable_node_types(),
            autoscaling_declared=bool(declared),
        )

    def run(
        self,
        context: SearchContext,
        indices: list[int],
        *,
        cpus_per_trial: float,
        gpus_per_trial: float,
        max_concurrent: int | None,
        max_retries: int,
        callbacks: list | None = None,
        stop_when: Callable[[], bool] | None = None,
    ) -> None:
        """Run the trials ``indices`` (each writes its own ledger record) and return when all ended.

        ``callbacks`` are objects with the trial hooks of ``tune.Callback`` (``on_trial_start``,
        ``on_trial_result``, ``on_trial_complete``, ``on_trial_error``, with Tune's arguments);
        Tune calls them through a ``tune.Callback`` that passes them on, so that their classes need
        no Ray import. ``stop_when``, asked after every trial event, ends the whole run early when
        it returns True (the running trials are stopped, the others never start). The run's
        folder is ``run_folder`` (in the ledger's ``ray/``).
        """
        if not indices:
            return
        from ray import tune
        from ray.tune.progress_reporter import TrialProgressCallback

        class Quiet(TrialProgressCallback):
            """In place of Tune's own progress printer (lines like "Trial ... completed. Last result:"
            on stdout): showwork draws its own progress, and the trials' errors are in their records."""

            def on_trial_result(self, *args, **kwargs) -> None:
                pass

            def on_trial_error(self, *args, **kwargs) -> None:
                pass

            def on_trial_complete(self, *args, **kwargs) -> None:
                pass

        class Forward(tune.Callback):
            """Tune's four trial hooks, passed on to one of ``callbacks``."""

            def __init__(self, target) -> None:
                self.target = target

            def on_trial_start(self, iteration, trials, trial, **info) -> None:
                self.target.on_trial_start(iteration, trials, trial, **info)

            def on_trial_result(self, iteration, trials, trial, result, **info) -> None:
                self.target.on_trial_result(iteration, trials, trial, result, **info)

            def on_trial_complete(self, iteration, trials, trial, **info) -> None:
                self.target.on_trial_complete(iteration, trials, trial, **info)

            def on_trial_error(self, iteration, trials, trial, **info) -> None:
                self.target.on_trial_error(iteration, trials, trial, **info)

        class StopWhen(tune.Stopper):
            def __call__(self, trial_id, result) -> bool:
                return False

            def stop_all(self) -> bool:
                return bool(stop_when and stop_when())

        from showwork.ledger import Ledger, utc_file_stamp

        if self._shipped:
            context = dataclasses.replace(context, family_shipped=True)
        run_name = f"run-{utc_file_stamp()}"
        # Owner-only: Tune writes its files 0644 there, and Ray's log of the run keeps its tracebacks.
        storage_path = owner_only_folder(Ledger(Path(context.storage_dir).resolve(), context.name).ray_folder())
        self.run_folder = storage_path / run_name
        trainable = tune.with_resources(
            tune.with_parameters(_ray_trial, context=context),
            {"cpu": cpus_per_trial, "gpu": gpus_per_trial},
        )
        tuner = tune.Tuner(
            trainable,
            param_space={"index": tune.grid_search(list(indices))},
            tune_config=tune.TuneConfig(
                num_samples=1,
                max_concurrent_trials=max_concurrent,
                reuse_actors=True,
            ),
            run_config=tune.RunConfig(
                name=run_name,
                storage_path=str(storage_path),
                verbose=0,
                stop=StopWhen() if stop_when else None,
                callbacks=[*(Forward(callback) for callback in callbacks or ()), Quiet()],
                failure_config=tune.FailureConfig(max_failures=max_retries),
            ),
        )
        # Tune's SIGINT handler ends the run as if it had completed (the caller would see a normal end):
        # the caller handles signals (showwork.run.driver stops the run through ``stop_when``).
        os.environ["TUNE_DISABLE_SIGINT_HANDLER"] = "1"
        with _ray_messages_to(storage_path / f"{run_name}.log"):
            try:
                tuner.fit()
            except Exception:
                if not (stop_when and stop_when()):
                    raise
                # Stopped for a failed storage: Tune's own files there (a trial's pickled error) may be
                # empty too, and reading them back for its result grid fails (EOFError). The ledger,
                # not Tune's results, is what the search keeps.
                logging.getLogger("ray.tune").exception("Ray Tune failed after the search was stopped")

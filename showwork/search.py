"""The search driver: space → sampled configs → Ray Tune trials → ledger → MLflow.

:func:`run_search` is what ``showwork search`` calls. It takes the ledger's lock (one driver per
search), checks the tracking store before any trial starts, opens (or re-opens) the parent MLflow
run, replays into MLflow any ledger record not yet logged, runs exactly the missing trial indices
on Ray, projects every trial into a nested MLflow child run as it starts, reports and ends, and
finally replays again. After Ctrl-C, a crash or ``kill -9`` of the driver, ``--resume`` runs only
the indices without a record; raising ``num_trials`` and resuming adds the next indices (lowering it
below the recorded trials is refused). Ray starts before anything is written, so that a trial no
node can hold is refused with nothing created; a ledger write that fails mid-search stops the
search (:class:`SearchStorageError`) and leaves the unrecorded trials to the resume.

Interrupts: showwork, not Ray Tune, handles SIGINT and SIGTERM during a search (Tune's own SIGINT
handler, which ends the run as if it had completed, is disabled in :class:`~showwork.execution.RayExecutor`).
The first signal during the trials stops them (Tune stops the running trials; those left without a
record run again on resume); a second one, or a first one at any other moment, stops at once
(``KeyboardInterrupt``); further ones are ignored while Ray shuts down. Either way the parent run
is marked KILLED and :class:`SearchInterrupted` says how far the search got.
"""

from __future__ import annotations

import contextlib
import queue
import signal
import sys
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from showwork import faults
from showwork.errors import InputError, UnavailableError

if TYPE_CHECKING:  # the annotations only: the modules load when a search runs
    from showwork.ledger import Ledger, TrialRecord
    from showwork.search_space import SearchSpec
    from showwork.tracking import Tracker

__all__ = [
    "FailureKind", "ProjectionCallback", "SearchInterrupted", "SearchStorageError", "SearchSummary", "TrialCounts",
    "failure_kinds", "recorded_reruns", "recorded_spec", "resume_command", "run_reruns", "run_search", "search_context",
    "trial_counts",
]

# Fields of the spec that decide which configurations are drawn: a resume must not change them.
_IDENTITY_FIELDS = ("family", "seed", "space", "metric", "data")


class SearchStorageError(UnavailableError):
    """The search stopped because the ledger's folder refused a write (a full disk, a read-only folder).

    An outage, not bad input (the command exits 1). The message names the folder and the error;
    every record written before it is kept, and ``--resume`` runs the unrecorded trials once the
    folder takes writes again.
    """


class SearchInterrupted(Exception):
    """The search was stopped by SIGINT (Ctrl-C) or SIGTERM; its records are kept.

    Attributes
    ----------
    name : str
    storage_dir : Path
    finished, num_trials : int
        Trials recorded as finished, and trials planned.
    signum : int
        The first signal received (``signal.SIGINT`` or ``signal.SIGTERM``); the command exits
        ``128 + signum``.
    resumable : bool
        Whether the ledger knows the search (False when it stopped before anything was recorded).
    """

    def __init__(self, name: str, storage_dir: Path, finished: int, num_trials: int, signum: int, resumable: bool):
        super().__init__(f"interrupted: {finished} of {num_trials} trials finished")
        self.name, self.storage_dir, self.finished, self.num_trials = name, Path(storage_dir), finished, num_trials
        self.signum, self.resumable = signum, resumable


class _Interrupts:
    """SIGINT and SIGTERM while a search runs (see the module docstring), in the main thread only.

    ``graceful`` is True while Tune runs the trials: the first signal then only sets ``signum``
    (the run's stop condition reads it); otherwise, and for the second signal, the handler raises
    ``KeyboardInterrupt``; after that, signals are ignored so that the clean-up (the parent run,
    ``ray.shutdown``) is not cut short and leaves no process behind.
    """

    def __init__(self) -> None:
        self.signum: int | None = None
        self.graceful = False
        self._raised = False
        self._previous: dict[int, object] = {}

    def install(self) -> None:
        """Take both signals (again: ``ray.init`` installs its own SIGTERM handler)."""
        if threading.current_thread() is not threading.main_thread():
            return
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous = signal.signal(signum, self._handle)
            self._previous.setdefault(signum, previous)

    def __enter__(self) -> "_Interrupts":
        self.install()
        return self

    def __exit__(self, *exc) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)

    def _handle(self, signum: int, frame) -> None:
        if self._raised:
            return
        if self.signum is None:
            self.signum = signum
            if self.graceful:
                print("\nshowwork: stopping the running trials (press Ctrl-C again to stop at once)",
                      file=sys.stderr, flush=True)
                return
        self._raised = True
        raise KeyboardInterrupt


@dataclass(frozen=True)
class FailureKind:
    """The trials that failed (or timed out) for one kind of reason.

    ``kind`` is :attr:`showwork.ledger.TrialRecord.failure_kind`: ``CUDA out of memory``, the
    exception's type for another raised error (``ValueError``, ``WorkerDied``), ``timeout`` for a
    trial over its time limit, else the reason's first line (a missing or non-finite score,
    ``sys.exit``); ``first_message`` is the first line of the error of the lowest trial index of
    the kind, ``first_index`` that index.
    """

    kind: str
    count: int
    first_index: int
    first_message: str


def failure_kinds(records) -> tuple[FailureKind, ...]:
    """The failed and timed-out ``records`` grouped by kind of reason (see :class:`FailureKind`), most frequent first."""
    groups: dict[str, list] = {}
    for record in sorted(records, key=lambda r: r.index):
        kind = record.failure_kind
        if kind is None:
            continue
        first = (record.error or f"{record.status} without a reason").strip().splitlines()[0]
        groups.setdefault(kind, []).append((record.index, first))
    kinds = [FailureKind(kind, len(items), items[0][0], items[0][1]) for kind, items in groups.items()]
    return tuple(sorted(kinds, key=lambda k: (-k.count, k.first_index)))


@dataclass(frozen=True)
class SearchSummary:
    """What :func:`run_search` reports: the counts of the trials up to ``num_trials``, the best
    finished one, the failures by kind, and where Ray's logs of this search are (``ray_logs``: their
    tracebacks of failed trials, beside the short ones in the records)."""

    name: str
    storage_dir: Path
    num_trials: int
    finished: int
    failed: int
    timeout: int
    best_score: float | None
    best_index: int | None
    parent_run_id: str | None
    tracking_uri: str
    elapsed_s: float
    failures: tuple[FailureKind, ...] = ()
    ray_logs: tuple[Path, ...] = ()


def search_context(spec, storage_dir: Path):
    """The picklable :class:`~showwork.execution.SearchContext` of a spec."""
    from showwork.execution import SearchContext

    base = Path(spec.source_path).resolve().parent if spec.source_path else Path.cwd()
    return SearchContext(
        name=spec.name,
        storage_dir=str(Path(storage_dir).resolve()),
        space=spec.space.to_dict(),
        seed=spec.seed,
        family=spec.family,
        base_dir=str(base),
        data=dict(spec.data),
        metric=spec.metric.name,
        mode=spec.metric.mode,
        test_metric=spec.metric.test,
        timeout_s=spec.timeout_s,
        gpus_per_trial=spec.resources.gpus,
        gpu_memory_cap=spec.resources.gpu_memory_cap,
    )


def _identity(spec) -> dict:
    dumped = spec.model_dump(mode="json")
    if dumped["metric"].get("bounds") is None:  # searches started before bounds existed resume unchanged
        dumped["metric"].pop("bounds", None)
    return {key: dumped[key] for key in _IDENTITY_FIELDS}


def run_search(
    spec,
    storage_dir: Path,
    tracking_uri: str,
    *,
    resume: bool = False,
    address: str | None = None,
    progress: bool = True,
    num_cpus: int | None = None,
) -> SearchSummary:
    """Run (or resume) the random search described by ``spec``; see the module docstring.

    Raises
    ------
    InputError
        The search exists and ``resume`` is False; the resumed spec draws other configurations
        than the recorded one, or a ``num_trials`` below its recorded trials; no node of the Ray
        cluster can hold a trial.
    TrackingUnavailableError
        The tracking store is unreachable.
    LedgerLockedError
        Another driver holds the lock (an outage: exit 1).
    SearchStorageError
        A ledger write failed mid-search (a full disk, a read-only folder): the search was stopped.
    LedgerWriteError
        The ledger's folder refused the search's metadata before any trial.
    SearchInterrupted
        SIGINT or SIGTERM stopped the search (the parent run, if any, is marked KILLED).
    """
    from showwork.ledger import Ledger

    start = time.perf_counter()
    with _Interrupts() as interrupts:
        try:
            return _run(spec, storage_dir, tracking_uri, resume, address, progress, num_cpus, start, interrupts)
        except KeyboardInterrupt:
            pass
    ledger = Ledger(Path(storage_dir), spec.name)
    records = [r for r in ledger.records() if r.index < spec.num_trials] if ledger.exists() else []
    raise SearchInterrupted(spec.name, Path(storage_dir), sum(r.status == "finished" for r in records),
                            spec.num_trials, interrupts.signum or signal.SIGINT, bool(ledger.exists() and ledger.read_meta()))


def _run(spec, storage_dir, tracking_uri, resume, address, progress, num_cpus, start, interrupts) -> SearchSummary:
    """The body of :func:`run_search`, phase by phase; a signal raises ``KeyboardInterrupt`` here, or
    sets ``interrupts.signum``. The ledger's records are read once per phase: the check, the check
    under the lock (which the replay, the stale-run clean-up and the missing indices share), and the
    read after the trials."""
    from showwork.ledger import Ledger, missing_indices
    from showwork.tracking import Tracker

    train = _check_inputs(spec, address)
    ledger = Ledger(Path(storage_dir), spec.name)
    _, records = _check_existing(spec, ledger, resume)
    tracker = Tracker(tracking_uri, spec.name)
    with contextlib.ExitStack() as stack:
        start_ray = lambda: _start_ray(spec, address, num_cpus, stack, interrupts)  # noqa: E731
        executor, waiting = _start_up(spec, tracker, missing_indices(records, spec.num_trials), start_ray, interrupts, progress)
        with ledger.lock():
            parent, records = _open_search(spec, ledger, tracker, resume, train)
            try:
                return _run_trials(spec, storage_dir, tracker, ledger, parent, records, resume, progress, interrupts,
                                   executor, waiting, start_ray, start)
            except KeyboardInterrupt:
                # Tune has stopped the trials (first signal) or was cut short (second): the parent is KILLED.
                elapsed = time.perf_counter() - start
                summary = _summarize(spec, ledger.records(), ledger, storage_dir, parent, "", elapsed)
                _finish_parent(tracker, parent, "KILLED", summary)
                raise


def _check_inputs(spec, address: str | None) -> Callable:
    """Phase 1: refuse what every trial would trip on — MLflow keys that collide, a family that
    cannot be loaded (the line `showwork validate` gives, at the ``family:`` key), data the family's
    ``check_data`` rejects, a family folder too big to ship to a cluster — before any run or record.
    Return the family's train function."""
    import os

    from showwork.execution import family_runtime_env
    from showwork.families import check_family_data, family_file, load_family
    from showwork.tracking import check_param_names

    check_param_names(spec.space, spec.source_path or spec.name)  # MLflow keys: one per name, or refused here
    train = load_family(spec)
    check_family_data(spec, train, address)
    if (address or os.environ.get("RAY_ADDRESS")) and family_file(spec) is not None:
        family_runtime_env(family_file(spec).parent)  # too big to ship to the cluster: refused before anything exists
    return train


def _start_up(spec, tracker, missing: list[int], start_ray, interrupts, progress: bool):
    """Phase 2: start Ray (when trials are missing) while MLflow opens; return ``(executor, waiting)``.

    Ray starts before anything is written: a trial that no node can hold is refused with no ledger
    folder and no MLflow run, like any other bad input. MLflow is opened meanwhile (the two do not
    depend on each other; issue 15 item 8). With no trial missing, only MLflow is checked.
    """
    with _StartupLine(spec.name, enabled=progress) as line:
        if missing:
            return _start_ray_and_open_mlflow(start_ray, interrupts, tracker, line)
        line.show("opening MLflow")
        tracker.check_reachable()  # before anything is written: an unreachable store leaves no trace
        return None, None


def _open_search(spec, ledger, tracker, resume: bool, train: Callable) -> tuple[str, list]:
    """Phase 3, under the ledger's lock: check the search again (another driver may have begun it
    meanwhile), record its metadata, open or re-open its MLflow parent run; return the parent run's
    id and the ledger's records. The environment names the YAML's and ``train``'s files (their SHA-256
    outside git); a resume with no trial to run keeps the recorded one."""
    from showwork.environment import collect_environment, source_file
    from showwork.ledger import missing_indices
    from showwork.search_space import resolved_yaml

    meta, records = _check_existing(spec, ledger, resume)
    if meta.get("environment") and not missing_indices(records, spec.num_trials):
        # Nothing will run: the recorded environment stays the one the trials ran in (the
        # checklist reports it), not this driver's (a report-only resume from a newer checkout).
        environment = meta["environment"]
    else:
        environment = collect_environment(Path(spec.source_path).resolve().parent if spec.source_path else None,
                                          code_files=(spec.source_path, source_file(train)))
    # The ledger knows the search (and its id) before MLflow does: a driver killed between
    # creating the parent run and recording its id finds that run again by the id's tag.
    meta = ledger.update_meta(
        identity=_identity(spec),
        search_id=meta.get("search_id") or uuid.uuid4().hex,
        spec=spec.model_dump(mode="json"),  # the space serialises as SearchSpace.to_dict()
        spec_yaml=spec.source_text,
        # where the YAML was: relative family files and data paths resolve from its folder on `showwork resume`
        spec_path=str(Path(spec.source_path).resolve()) if spec.source_path else None,
        num_trials=spec.num_trials,
        seed=spec.seed,
        tracking_uri=tracker.shown_uri,  # without a password: give it in MLFLOW_TRACKING_PASSWORD
        environment=environment,
    )
    parent = meta.get("parent_run_id")
    if parent:
        tracker.resume_parent(parent, num_trials=spec.num_trials)
        return parent, records
    parent = tracker.start_parent(
        run_name=spec.name,
        params={"seed": spec.seed, "num_trials": spec.num_trials, "family": spec.family,
                "metric": spec.metric.name, "mode": spec.metric.mode,
                "search_strategy": "random search (i.i.d.)"},
        tags={"showwork.search": spec.name},
        artifacts={"search.yaml": spec.source_text or "", "search.resolved.yaml": resolved_yaml(spec)},
        environment=environment,
        space=spec.space,
        search_id=meta["search_id"],
    )
    ledger.update_meta(parent_run_id=parent)
    return parent, records


def _run_trials(spec, storage_dir, tracker, ledger, parent, records, resume, progress, interrupts, executor, waiting,
                start_ray, start, context=None) -> SearchSummary:
    """Phase 4: replay, run the missing trials, replay again, close the parent run.

    ``records`` are the ledger's records read under the lock; the records are read once more, after
    the trials. ``context`` (default :func:`search_context` of ``spec``) says where the trials'
    ledger is and what each trial trains: the re-runs of :func:`run_reruns` give their own."""
    from showwork.ledger import missing_indices
    from showwork.tracking import TrackingUnavailableError

    _replay(tracker, ledger, parent, records)
    if resume:  # runs an interrupted driver left for trials that will run again: one run per trial
        try:
            tracker.delete_stale_children(parent, {record.index for record in records})
        except TrackingUnavailableError as error:
            warnings.warn(f"MLflow: could not delete stale child runs ({error}).")
    missing = missing_indices(records, spec.num_trials)
    display = _Progress(spec, records, enabled=progress)
    storage_failure = None
    if missing:
        if executor is None:  # a record vanished meanwhile (moved aside as unreadable)
            executor, waiting = start_ray()
        display.waiting = waiting
        context = context or search_context(spec, storage_dir)
        callback = ProjectionCallback(tracker, ledger, parent, display, spec,
                                      interrupted=lambda: interrupts.signum is not None, trial_of=context.trial)
        with display:
            interrupts.graceful = True  # the first signal stops the trials through Tune, the second at once
            try:
                executor.run(
                    context,
                    missing,
                    cpus_per_trial=spec.resources.cpus,
                    gpus_per_trial=spec.resources.gpus,
                    max_concurrent=spec.max_concurrent,
                    max_retries=spec.max_retries,
                    callbacks=[callback],
                    stop_when=lambda: callback.storage_failure is not None or interrupts.signum is not None,
                )
            finally:
                interrupts.graceful = False
                callback.close()
        storage_failure = callback.storage_failure
    if interrupts.signum is not None:
        raise KeyboardInterrupt  # the trials have stopped: run_search reports the interrupt
    records = ledger.records() if missing else records
    if storage_failure is None:
        records = _replay(tracker, ledger, parent, records)  # it writes run ids into the records
    summary = _summarize(spec, records, ledger, storage_dir, parent, tracker.shown_uri, time.perf_counter() - start)
    complete = summary.finished + summary.failed + summary.timeout == spec.num_trials
    _finish_parent(tracker, parent, "FINISHED" if complete else "KILLED", summary)
    if storage_failure is not None:
        raise SearchStorageError(storage_failure)
    return summary


def _finish_parent(tracker, parent: str, status: str, summary: SearchSummary) -> None:
    """End the parent run with ``status`` (FINISHED for a complete search, else KILLED) and the counts of ``summary``."""
    from showwork.tracking import TrackingUnavailableError

    metrics = {k: v for k, v in {"trials_finished": summary.finished, "trials_failed": summary.failed,
                                 "trials_timeout": summary.timeout, "best_val_score": summary.best_score}.items()
               if v is not None}
    try:
        tracker.finish_parent(parent, status, metrics)
    except TrackingUnavailableError as error:
        warnings.warn(f"MLflow: could not close the parent run ({error}); a resume replays it.")


class _InBackground:
    """``function()`` run in a daemon thread from construction; :meth:`result` waits for it and
    returns its value or raises its exception (``BaseException`` included) in the caller's thread."""

    def __init__(self, function, name: str) -> None:
        self._function = function
        self._value = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._call, name=name, daemon=True)
        self._thread.start()

    def _call(self) -> None:
        try:
            self._value = self._function()
        except BaseException as error:  # noqa: BLE001 - handed to the caller by result()
            self._error = error

    def wait(self, timeout_s: float | None = None) -> bool:
        """Wait (at most ``timeout_s``); whether the call has ended."""
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def result(self):
        self.wait()
        if self._error is not None:
            raise self._error
        return self._value


def _start_ray_and_open_mlflow(start_ray: Callable, interrupts: _Interrupts, tracker, line: "_StartupLine"):
    """``start_ray()`` (:func:`_start_ray`), while a thread opens MLflow (``tracker.check_reachable``: the probe, the
    store's creation or migration, the experiment); see :func:`_start_ray` for what it returns.

    The two take seconds each and do not depend on each other, so the search starts sooner (issue 15
    item 8). Nothing is written into the ledger before both have ended, so an unreachable store
    still leaves no trace there; when both fail, MLflow's failure is the one raised (an outage,
    checked first before the overlap), and Ray is shut down again by ``stack``.

    ``ray.init`` runs under umask 077 (:func:`~showwork.execution.owner_only_files`), which is per
    process: the whole overlapped phase runs under it, so that the files MLflow creates meanwhile (a
    new SQLite store, its artifact folder) are always owner-only rather than depending on timing —
    more private than MLflow's default, never less.
    """
    from showwork.execution import owner_only_files

    line.show("starting Ray, opening MLflow")
    with owner_only_files():
        def open_mlflow() -> None:
            tracker.check_reachable()
            line.show("starting Ray")

        opening = _InBackground(open_mlflow, "showwork-open-mlflow")
        try:
            started = start_ray()
            if not opening.wait(0):
                line.show("opening MLflow")
            opening.wait()
        except KeyboardInterrupt:
            opening.wait(10.0)  # let a store being created finish its transaction; never block an interrupt long
            raise
        except BaseException:
            opening.wait()
            opening.result()  # an unreachable store is named first, as when it was checked before Ray
            raise
    opening.result()
    return started


class _StartupLine:
    """The progress line before the first trial (on a terminal): "starting Ray…", "opening MLflow…"."""

    def __init__(self, name: str, enabled: bool = True) -> None:
        self.name = name
        self.enabled = enabled and sys.stdout.isatty()
        self.start = time.perf_counter()
        self._live = None
        self._state = ""

    def __enter__(self) -> "_StartupLine":
        if self.enabled:
            from rich.live import Live
            from rich.text import Text

            self._live = Live(Text(""), refresh_per_second=4, transient=True, get_renderable=self._render)
            self._live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._live is not None:
            self._live.__exit__(*exc)
            self._live = None

    def show(self, state: str) -> None:
        self._state = state

    def _render(self):
        from rich.text import Text

        elapsed = time.perf_counter() - self.start
        return Text(f"{self.name}: {self._state}…, elapsed {elapsed:.0f} s" if self._state else "")


def _start_ray(spec, address: str | None, num_cpus: int | None, stack: contextlib.ExitStack, interrupts: _Interrupts):
    """Start the local Ray (or join the cluster) in ``stack``, and check that a trial fits on one of its nodes.

    A trial's CPUs and GPUs are one bundle that Ray places on one node; if no node has them,
    Ray Tune waits forever, silently. Where the cluster's autoscaler can add a node that fits (or
    ``SHOWWORK_AUTOSCALING=1`` says one will join), the search warns and waits instead.

    Returns
    -------
    (RayExecutor, str | None)
        The executor, and the pending state for the progress line while the trials wait for a node.
        ``interrupts`` handle SIGINT and SIGTERM again once Ray has started.

    Raises
    ------
    InputError
        No node can hold a trial and none can be added (Ray is shut down again by ``stack``).
    """
    from showwork.execution import RayExecutor
    from showwork.families import family_file

    try:
        file = family_file(spec)
        executor = stack.enter_context(RayExecutor(address, num_cpus, file.parent if file is not None else None))
    except SystemExit:
        # While ray.init runs, its own SIGTERM handlers are in charge: they end Ray's processes (the
        # executor shuts down what was started) and call sys.exit. That is this search's SIGTERM.
        interrupts.signum = interrupts.signum or signal.SIGTERM
        raise KeyboardInterrupt from None
    interrupts.install()  # again: ray.init replaced the SIGTERM handler
    cpus, gpus = spec.resources.cpus, spec.resources.gpus
    cluster = executor.cluster_resources()
    if cluster.fits(cpus, gpus):
        return executor, None
    asks = f"each trial asks cpus={cpus:g}, gpus={gpus:g}"
    has = f"the {'Ray cluster' if executor.address else 'local Ray'} has {cluster.describe()}"
    if cluster.may_fit_later(cpus, gpus):
        warnings.warn(f"no node can run a trial yet ({asks}; {has}): the trials wait until the autoscaler"
                      " adds a node that fits.")
        return executor, f"waiting for resources: {asks}; {has}, and it scales up"
    advice = (", or use a cluster with such a node (set SHOWWORK_AUTOSCALING=1 if nodes that fit join on demand)"
              if executor.address else " (the local Ray offers this machine's CPUs and GPUs, fewer with --num-cpus)")
    raise InputError(
        f"{spec.source_path or spec.name}: resources: {asks}, but no node has that much ({has});"
        f" lower resources.cpus or resources.gpus{advice}. Nothing was started."
    )


def _check_existing(spec, ledger, resume: bool) -> tuple[dict, list[TrialRecord]]:
    """The recorded metadata and records of the search ({} and [] for a new one), after checking
    that this run may continue it.

    Raises
    ------
    InputError
        The search exists and ``resume`` is False; it was started with another identity; or
        ``spec.num_trials`` would leave recorded trials out.
    """
    meta = ledger.read_meta()
    if meta and not resume:
        raise InputError(
            f"search {spec.name!r} already exists in {ledger.storage_dir}; add --resume to continue it"
            " (or choose another --name)."
        )
    if meta and meta.get("identity") != _identity(spec):
        changes = "; ".join(_differences(meta.get("identity") or {}, _identity(spec))) or "the recorded identity is unreadable"
        raise InputError(
            f"search {spec.name!r} in {ledger.storage_dir} was started with other settings than these ({changes});"
            " resuming would mix configurations from two searches. To continue it as it was started, run"
            f" `{resume_command(spec.name, ledger.storage_dir)}` (it reads the settings from the ledger)."
        )
    records = ledger.records() if meta else []
    _check_num_trials_keeps_records(spec, ledger, records)
    return meta, records


def _differences(recorded, given, path: str = "") -> list[str]:
    """``key: recorded → given`` for each leaf that differs between two JSON-like values (dotted keys)."""
    import json

    if isinstance(recorded, dict) and isinstance(given, dict):
        found = []
        for key in [*recorded, *(k for k in given if k not in recorded)]:
            old, new = recorded.get(key, _ABSENT), given.get(key, _ABSENT)
            if old != new:
                found += _differences(old, new, f"{path}.{key}" if path else str(key))
        return found
    shown = ["(none)" if v is _ABSENT else json.dumps(v, sort_keys=True) for v in (recorded, given)]
    return [f"{path}: {shown[0]} recorded, {shown[1]} now"]


_ABSENT = object()


def resume_command(name: str, storage_dir, default_storage: str = "showwork_runs") -> str:
    """The command that continues search ``name`` of ``storage_dir`` (``--storage`` only when not the default)."""
    import shlex

    storage = str(storage_dir)
    extra = "" if Path(storage) == Path(default_storage) else f" --storage {shlex.quote(storage)}"
    return f"showwork resume {shlex.quote(name)}{extra}"


def recorded_spec(storage_dir: Path, name: str, num_trials: int | None = None):
    """The spec a search was started (or last resumed) with, read from its ledger: ``showwork resume``.

    The resolved spec (the YAML with the command line's overrides applied) is in the ledger's
    metadata, with the YAML text and the folder it was in (relative family files resolve from
    there): neither the YAML file nor the overrides are needed again.

    Parameters
    ----------
    num_trials : int, optional
        A new number of trials (more to extend the search); default the recorded one.

    Raises
    ------
    InputError
        No such search, or its metadata holds no spec (a search started before it was recorded,
        or one stopped before its first write).
    """
    from showwork.ledger import Ledger, list_searches
    from showwork.search_space import SearchSpec, SpecError

    ledger = Ledger(Path(storage_dir), name)
    if not ledger.exists():
        known = ", ".join(list_searches(Path(storage_dir))) or "none"
        raise InputError(f"no search {name!r} in {storage_dir} (searches there: {known})")
    meta = ledger.read_meta()
    if not isinstance(meta.get("spec"), dict):
        raise InputError(f"{ledger.meta_path}: holds no recorded spec; resume it with `showwork search SPACE --resume`")
    fields = {**meta["spec"], "source_path": meta.get("spec_path"), "source_text": meta.get("spec_yaml")}
    if num_trials is not None:
        fields["num_trials"] = num_trials
    try:
        return SearchSpec.model_validate(fields)
    except (ValueError, SpecError) as error:  # pydantic's ValidationError: a hand-edited metadata file
        first = str(error).splitlines()
        raise InputError(f"{ledger.meta_path}: the recorded spec is not valid ({' '.join(first[:3])})") from None


def run_reruns(
    spec,
    storage_dir: Path,
    tracking_uri: str,
    *,
    seeds: int,
    top: int = 1,
    address: str | None = None,
    progress: bool = True,
    num_cpus: int | None = None,
) -> SearchSummary:
    """Train the ``top`` best configurations of the search ``spec`` again under ``seeds`` fresh training seeds.

    The same path as a search (Ray Tune trials, each worker writing its record, the driver projecting
    records into MLflow, signals, storage failures), into a ledger of its own,
    ``{storage_dir}/{name}/reruns/`` (:data:`showwork.selection.RERUN_LEDGER`), whose metadata holds
    the plan (:func:`showwork.selection.extend_plan`): the search's records, its results, tuning
    curves and report statistics are untouched. MLflow: one parent run "NAME re-runs" (role
    ``reruns``) nested under the search's parent run, one child run per re-run tagged by
    :func:`showwork.mlflow_format.rerun_child_tags`. Seeds: :func:`showwork.sampling.fresh_training_seeds`
    of the search's seed, avoiding its trials' seeds. Calling it again runs only the planned re-runs
    without a record (after an interrupt), plus those that more seeds or a larger ``top`` add. The
    search's lock is held throughout, so that no search driver changes its best trials meanwhile.

    ``spec`` is the search's recorded spec (:func:`recorded_spec`). The summary counts the plan's
    re-runs; its ``name`` is ``NAME/reruns``.

    Raises
    ------
    InputError
        No finished trial to re-run; a malformed recorded plan; no node can hold a trial.
    LedgerLockedError
        A driver runs the search or its re-runs.
    SearchInterrupted
        SIGINT or SIGTERM stopped the re-runs (the re-runs' parent run is marked KILLED).
    """
    from showwork.ledger import Ledger
    from showwork.selection import RERUN_LEDGER, plan_from_meta

    start = time.perf_counter()
    with _Interrupts() as interrupts:
        try:
            return _rerun(spec, Path(storage_dir), tracking_uri, seeds, top, address, progress, num_cpus, start, interrupts)
        except KeyboardInterrupt:
            pass
    reruns = Ledger(Path(storage_dir) / spec.name, RERUN_LEDGER)
    plan = plan_from_meta(reruns.read_meta(), str(reruns.meta_path)) if reruns.exists() else ()
    finished = sum(r.status == "finished" for r in reruns.records()) if plan else 0
    raise SearchInterrupted(f"{spec.name}/{RERUN_LEDGER}", Path(storage_dir), finished, len(plan),
                            interrupts.signum or signal.SIGINT, bool(plan))


def _rerun(spec, storage_dir: Path, tracking_uri, seeds, top, address, progress, num_cpus, start, interrupts) -> SearchSummary:
    """The body of :func:`run_reruns`; a signal raises ``KeyboardInterrupt`` here, or sets ``interrupts.signum``."""
    import dataclasses

    from showwork.environment import collect_environment, source_file
    from showwork.ledger import Ledger, missing_indices
    from showwork.mlflow_format import rerun_child_tags, rerun_parent_tags
    from showwork.sampling import fresh_training_seeds
    from showwork.search_space import resolved_yaml
    from showwork.selection import RERUN_LEDGER, extend_plan, plan_from_meta, ranked_trials
    from showwork.tracking import Tracker

    train = _check_inputs(spec, address)
    search = Ledger(storage_dir, spec.name)
    reruns = Ledger(search.root, RERUN_LEDGER)
    with search.lock():  # no search driver adds trials (and changes the best) while the re-runs are planned and run
        records = search.records()
        selected = ranked_trials(records, spec.metric.mode)[:top]
        if not selected:
            raise InputError(f"search {spec.name!r} in {storage_dir} has no finished trial with a finite"
                             f" {spec.metric.name} to re-run")
        fresh = fresh_training_seeds(spec.seed, seeds, taken=(r.seed for r in records))
        plan = extend_plan(plan_from_meta(reruns.read_meta(), str(reruns.meta_path)), selected, fresh)
        rerun_spec = spec.model_copy(update={"name": f"{spec.name}/{RERUN_LEDGER}", "num_trials": len(plan)})
        context = dataclasses.replace(search_context(spec, search.root), name=RERUN_LEDGER,
                                      assignments={r.index: (dict(r.params), r.seed) for r in plan})
        tracker = Tracker(tracking_uri, spec.name, child_run_name="rerun",
                          child_tags={r.index: rerun_child_tags(r.trial, r.replicate) for r in plan})
        with contextlib.ExitStack() as stack:
            start_ray = lambda: _start_ray(rerun_spec, address, num_cpus, stack, interrupts)  # noqa: E731
            executor, waiting = _start_up(rerun_spec, tracker, missing_indices(reruns.records(), len(plan)), start_ray,
                                          interrupts, progress)
            with reruns.lock():
                search_parent = search.read_meta().get("parent_run_id")
                environment = collect_environment(Path(spec.source_path).resolve().parent if spec.source_path else None,
                                                  code_files=(spec.source_path, source_file(train)))
                meta = reruns.update_meta(
                    search=spec.name,
                    search_id=reruns.read_meta().get("search_id") or uuid.uuid4().hex,
                    plan=[r.to_dict() for r in plan],
                    search_seed=spec.seed,
                    search_parent_run_id=search_parent,
                    tracking_uri=tracker.shown_uri,
                    environment=environment,
                )
                parent = meta.get("parent_run_id")
                if parent:
                    tracker.resume_parent(parent, num_trials=len(plan))
                else:
                    parent = tracker.start_parent(
                        run_name=f"{spec.name} re-runs",
                        params={"num_trials": len(plan), "search_seed": spec.seed, "family": spec.family,
                                "metric": spec.metric.name, "mode": spec.metric.mode},
                        tags=rerun_parent_tags(search_parent),
                        artifacts={"search.resolved.yaml": resolved_yaml(spec)},
                        environment=environment,
                        search_id=meta["search_id"],
                    )
                    reruns.update_meta(parent_run_id=parent)
                try:
                    return _run_trials(rerun_spec, storage_dir, tracker, reruns, parent, reruns.records(), True, progress,
                                       interrupts, executor, waiting, start_ray, start, context=context)
                except KeyboardInterrupt:
                    summary = _summarize(rerun_spec, reruns.records(), reruns, storage_dir, parent, "",
                                         time.perf_counter() - start)
                    _finish_parent(tracker, parent, "KILLED", summary)
                    raise


def recorded_reruns(storage_dir: Path, name: str, mode: str, records=None) -> tuple:
    """The :class:`~showwork.selection.RerunSummary` of each configuration ``showwork rerun`` re-trained
    in search ``name`` (empty when there are none), ranked by the search's ``records`` (read when not given).

    Raises
    ------
    InputError
        The re-runs' recorded plan is malformed.
    """
    from showwork.ledger import Ledger
    from showwork.selection import RERUN_LEDGER, plan_from_meta, ranked_trials, rerun_summaries

    search = Ledger(Path(storage_dir), name)
    reruns = Ledger(search.root, RERUN_LEDGER)
    if not reruns.meta_path.exists():
        return ()
    plan = plan_from_meta(reruns.read_meta(), str(reruns.meta_path))
    ranked = [r.index for r in ranked_trials(search.records() if records is None else records, mode)]
    return rerun_summaries(plan, reruns.records(), ranked)


def _check_num_trials_keeps_records(spec, ledger, records) -> None:
    """Refuse a resumed ``num_trials`` that leaves out recorded trials.

    The report, ``showwork results`` and the checklist use every record of the ledger, while the
    summary and the progress count ``num_trials``: a lower number would make them disagree (and
    would call the search complete with records beyond its plan). Lowering it to a count that
    keeps every record (a killed search with fewer records than planned) stays allowed.

    Raises
    ------
    InputError
        A record has an index >= ``spec.num_trials``.
    """
    indices = {record.index for record in records}
    if indices and max(indices) >= spec.num_trials:
        needed = max(indices) + 1
        raise InputError(
            f"search {spec.name!r} in {ledger.storage_dir} has {len(indices)} recorded trials (indices up to"
            f" {needed - 1}); num_trials {spec.num_trials} would leave recorded trials out of the search."
            f" Resume with num_trials >= {needed}."
        )


def _replay(tracker, ledger, parent, records) -> list[TrialRecord]:
    """:func:`~showwork.tracking.sync_ledger` of ``records``; return them with the run ids it wrote."""
    from showwork.tracking import TrackingUnavailableError, sync_ledger

    by_index = {record.index: record for record in records}
    try:
        sync_ledger(tracker, ledger, parent, records, written=lambda record: by_index.__setitem__(record.index, record))
    except TrackingUnavailableError as error:
        warnings.warn(f"MLflow unreachable ({error}); the ledger keeps every result and a resume replays them.")
    return [by_index[index] for index in sorted(by_index)]


@dataclass(frozen=True)
class TrialCounts:
    """The status counts of a search's trials and its best finished one.

    ``finished``, ``failed`` and ``timeout`` count the records by status; ``best_score`` is the best
    finite score of a finished trial (highest for ``mode="max"``, lowest for ``"min"``) and
    ``best_index`` its trial (the lowest index on ties); both None when no trial finished with one.
    """

    finished: int = 0
    failed: int = 0
    timeout: int = 0
    best_score: float | None = None
    best_index: int | None = None

    @property
    def unfinished(self) -> int:
        """Failed and timed-out trials."""
        return self.failed + self.timeout

    @property
    def ended(self) -> int:
        return self.finished + self.unfinished


def trial_counts(records: Iterable[TrialRecord], num_trials: int, mode: str) -> TrialCounts:
    """The :class:`TrialCounts` of the ``records`` of indices below ``num_trials`` (the summary, the
    progress line and the parent run's metrics all count with it)."""
    from showwork.selection import ranked_trials

    planned = sorted((r for r in records if r.index < num_trials), key=lambda r: r.index)
    best = next(iter(ranked_trials(planned, mode)), None)
    return TrialCounts(
        finished=sum(r.status == "finished" for r in planned),
        failed=sum(r.status == "failed" for r in planned),
        timeout=sum(r.status == "timeout" for r in planned),
        best_score=None if best is None else best.score,
        best_index=None if best is None else best.index,
    )


def _summarize(spec, records, ledger, storage_dir, parent, tracking_uri, elapsed) -> SearchSummary:
    """The :class:`SearchSummary` of the search's ``records`` (read by the caller, once)."""
    records = [r for r in records if r.index < spec.num_trials]
    counts = trial_counts(records, spec.num_trials, spec.metric.mode)
    return SearchSummary(
        name=spec.name,
        storage_dir=Path(storage_dir),
        num_trials=spec.num_trials,
        finished=counts.finished,
        failed=counts.failed,
        timeout=counts.timeout,
        best_score=counts.best_score,
        best_index=counts.best_index,
        parent_run_id=parent,
        tracking_uri=tracking_uri,
        elapsed_s=elapsed,
        failures=failure_kinds(records),
        ray_logs=ledger.ray_logs(),
    )


class ProjectionCallback:
    """Ray Tune's trial hooks during a search: each trial's MLflow child run, and the progress line.

    Tune waits for its callbacks (a trial's report blocks until the driver handled it), so the
    hooks only update the display and queue MLflow work; one writer thread does the MLflow calls
    in order. The ledger stays the source of truth: whatever the writer misses, the replay after
    the run repairs. A trial's MLflow run starts at its worker's start, which its first report (or
    its record) gives.

    A ledger write that fails (here, or in a worker, which reports it) sets ``storage_failure``;
    the run's stop condition then ends the search. Ray runs the hooks inside its own loop, so they
    never raise: an exception there ends in Ray's traceback. The hooks take Tune's arguments
    (``trial`` has ``config["index"]`` and ``num_failures``); the class needs no Ray:
    :meth:`showwork.execution.RayExecutor.run` hands the hooks to Tune.

    Parameters
    ----------
    tracker : Tracker
        The search's MLflow writer.
    ledger : Ledger
        The search's ledger: the records the workers wrote, and the driver's record of a trial
        whose worker died.
    parent_run_id : str
        The search's MLflow parent run.
    display : _Progress
        The progress line.
    spec : SearchSpec
        The search (its space and seed give a dead worker's trial its configuration).
    interrupted : callable
        True once a signal stopped the search: a trial that Tune then stops without a record is
        left unrecorded (a resume runs it), not recorded as failed.
    trial_of : callable, optional
        ``index -> (params, seed)`` of a trial (default: drawn from the spec's space and seed);
        the re-runs pass :meth:`showwork.execution.SearchContext.trial`.
    """

    def __init__(
        self,
        tracker: Tracker,
        ledger: Ledger,
        parent_run_id: str,
        display: _Progress,
        spec: SearchSpec,
        interrupted: Callable[[], bool] = lambda: False,
        trial_of: Callable[[int], tuple[dict, int]] | None = None,
    ) -> None:
        self.tracker, self.ledger, self.parent_run_id = tracker, ledger, parent_run_id
        self.display, self.spec, self.interrupted = display, spec, interrupted
        self.trial_of = trial_of
        self.storage_failure: str | None = None
        self.started: dict[int, str] = {}  # the worker's start of each running trial (from its reports)
        self._queue: queue.Queue | None = None
        self._writer: threading.Thread | None = None

    def __getstate__(self) -> dict:  # Tune pickles callbacks with its experiment state; the writer stays here
        state = dict(self.__dict__)
        state["_queue"] = state["_writer"] = None
        return state

    # -- Tune's hooks

    def on_trial_start(self, iteration, trials, trial, **info) -> None:
        self.display.started(int(trial.config["index"]))

    def on_trial_result(self, iteration, trials, trial, result, **info) -> None:
        from showwork.execution import REPORT_KEY, STORAGE_FAILURE_KEY, TRIAL_START_KEY

        index = int(trial.config["index"])
        if result.get(STORAGE_FAILURE_KEY):  # the worker could not write into the ledger
            self._storage_failed(result[STORAGE_FAILURE_KEY])
            return
        rows, started = result.get(REPORT_KEY), result.get(TRIAL_START_KEY)
        if not isinstance(rows, list) or not isinstance(started, str):  # Tune's own result, not a report
            return
        self.started[index] = started
        for row in rows:  # the epochs since the worker's last report (EpochReports)
            self._log_epoch(index, started, row)

    def _log_epoch(self, index: int, started: str, row: dict) -> None:
        metrics = {k: float(v) for k, v in row.items()
                   if k != "epoch" and isinstance(v, (int, float)) and not isinstance(v, bool)}
        if not metrics:
            return
        tracker, parent, epoch = self.tracker, self.parent_run_id, int(row.get("epoch", 0))

        def log() -> None:
            tracker.log_epoch(tracker.child_run(parent, index, start_time=started), metrics, epoch)

        self._submit(f"epoch of trial {index}", log)

    def on_trial_complete(self, iteration, trials, trial, **info) -> None:
        self._ended(trial, died=False)

    def on_trial_error(self, iteration, trials, trial, **info) -> None:
        self._ended(trial, died=True)

    # -- the driver's side

    def close(self) -> None:
        """Wait until every queued MLflow call is done."""
        if self._writer is not None:
            self._queue.put(None)
            self._writer.join()
            self._writer = None

    def _ended(self, trial, died: bool) -> None:
        from showwork.ledger import LedgerWriteError

        index = int(trial.config["index"])
        record = self.ledger.read(index)
        if record is None and (self.storage_failure is not None or self.interrupted()):
            # Stopped because the storage failed or a signal came: not the trial's fault, and left
            # unrecorded so that a resume runs it.
            self.display.running.discard(index)
            return
        if record is None:  # the worker died before it could write (killed, segfault, OOM killer)
            record = self._worker_died(index, trial, died)
            try:
                self.ledger.write(record)
            except LedgerWriteError as error:
                self._storage_failed(error)
                self.display.running.discard(index)
                return
        self.display.ended(record)
        tracker, ledger, parent = self.tracker, self.ledger, self.parent_run_id

        def log() -> None:
            run = tracker.log_trial(parent, record)
            if run and record.mlflow_run_id != run:
                ledger.set_mlflow_run_id(index, run)

        self._submit(f"logging trial {index}", log)

    def _worker_died(self, index: int, trial, died: bool) -> TrialRecord:
        """The driver's record of trial ``index``, whose worker ended without writing one."""
        from showwork.ledger import TrialRecord
        from showwork.sampling import trial_config, trial_seed

        started = self.started.get(index)  # from its reports: its MLflow run started then
        if self.trial_of is not None:
            params, seed = self.trial_of(index)
        else:
            params, seed = trial_config(self.spec.space, self.spec.seed, index), trial_seed(self.spec.seed, index)
        return TrialRecord.failed_without_worker(
            index,
            started_at=started,
            runtime_s=_seconds_since(started),
            params=params,
            seed=seed,
            reason="the worker process died" if died else "the trial ended without a record",
            # Ray has already counted this failure in num_failures; a worker that died before
            # marking its attempt is counted by Ray alone.
            attempts=max(1, self.ledger.attempts_started(index), int(getattr(trial, "num_failures", 0))),
        )

    def _storage_failed(self, error) -> None:
        if self.storage_failure is None:  # the first failure is the one to name
            self.storage_failure = str(error)

    def _submit(self, what: str, call: Callable[[], None]) -> None:
        if self._writer is None:
            self._queue = queue.Queue()
            self._writer = threading.Thread(target=self._drain, name="showwork-mlflow", daemon=True)
            self._writer.start()
        self._queue.put((what, call))

    def _drain(self) -> None:
        from showwork.ledger import LedgerWriteError
        from showwork.tracking import TrackingUnavailableError

        missed = 0  # writes lost to the current outage: one warning when it starts, one when it ends
        while True:
            item = self._queue.get()
            if item is None:
                return
            what, call = item
            try:
                call()
            except LedgerWriteError as error:  # adding a run id to a record: the disk, not MLflow
                self._storage_failed(error)
                continue
            except TrackingUnavailableError as error:
                if not missed:
                    warnings.warn(f"MLflow: {what} failed ({error}); the ledger has the result, it will be"
                                  " replayed. Until MLflow answers again, its failed writes are counted, not shown.")
                missed += 1
                continue
            except Exception as error:  # noqa: BLE001 - never lose the search to a logging problem
                warnings.warn(f"MLflow: {what} failed ({type(error).__name__}: {error}); it will be replayed.")
            if missed and not self.tracker.down:  # a call got an answer (a write may also have had nothing to send)
                warnings.warn(f"MLflow answers again; {missed} writes failed meanwhile and will be replayed.")
                missed = 0


def _seconds_since(timestamp: str | None) -> float:
    """Seconds from an ISO-8601 timestamp with offset until now (0 without one)."""
    from datetime import datetime, timezone

    if timestamp is None:
        return 0.0
    return max(0.0, (datetime.now(timezone.utc) - datetime.fromisoformat(timestamp)).total_seconds())


class _Progress:
    """Live progress: done / running / failed, best so far, elapsed and ETA (rich on a terminal)."""

    def __init__(self, spec, records, enabled: bool = True):
        self.spec = spec
        self.total = spec.num_trials
        self.records = {r.index: r for r in records if r.index < self.total}
        self.counts = trial_counts(self.records.values(), self.total, spec.metric.mode)
        self.already = self.counts.ended
        self.running: set[int] = set()
        self.started_any = False
        self.waiting: str | None = None  # while no node fits a trial and the cluster scales up
        self.enabled = enabled
        self.start = time.perf_counter()
        self._live = None

    def __getstate__(self):
        # Ray Tune pickles its callbacks (and so this display) with the experiment state; the live
        # terminal display (with its lock) stays in the driver.
        state = dict(self.__dict__)
        state["_live"] = None
        return state

    def __enter__(self):
        if self.enabled and sys.stdout.isatty():
            from rich.live import Live

            self._live = Live(self._render(), refresh_per_second=4, transient=False)
            self._live.__enter__()
        elif self.enabled and self.waiting:
            print(f"{self.spec.name}: {self.waiting}", flush=True)
        return self

    def __exit__(self, *exc):
        if self._live is not None:
            self._live.update(self._render())
            self._live.__exit__(*exc)

    def _line(self) -> str:
        elapsed = time.perf_counter() - self.start
        counts = self.counts
        ended = counts.ended - self.already
        left = self.total - counts.ended
        eta = f"{elapsed / ended * left:.0f} s" if ended else "?"
        best = "-" if counts.best_score is None else f"{counts.best_score:.6g}"
        if self.waiting and not self.started_any:
            return f"{self.spec.name}: {self.waiting}, elapsed {elapsed:.0f} s"
        return (
            f"{self.spec.name}: {counts.ended}/{self.total} done ({counts.unfinished} failed),"
            f" {len(self.running)} running, best {self.spec.metric.name} {best}, elapsed {elapsed:.0f} s, ETA {eta}"
        )

    def _render(self):
        from rich.text import Text

        return Text(self._line())

    def started(self, index: int) -> None:
        self.running.add(index)
        self.started_any = True
        if self._live is not None:
            self._live.update(self._render())

    def ended(self, record) -> None:
        self.running.discard(record.index)
        self.records[record.index] = record
        self.counts = trial_counts(self.records.values(), self.total, self.spec.metric.mode)
        if self._live is not None:
            self._live.update(self._render())
        elif self.enabled:
            status = record.status if record.status == "finished" else f"{record.status}: {(record.error or '').splitlines()[0][:80]}"
            print(f"trial {record.index}: {status}; {self._line()}", flush=True)
        faults.point("trial-ended")

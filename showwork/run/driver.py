"""The search driver: space → sampled configs → Ray Tune trials → ledger → MLflow, for a search and for its re-runs.

:func:`run_search` is what ``showwork search`` calls. It takes the ledger's lock (one driver per
search), checks the tracking store before any trial starts, opens (or re-opens) the parent MLflow
run, replays into MLflow any ledger record not yet logged, runs exactly the missing trial indices
on Ray, projects every trial into a nested MLflow child run as it starts, reports and ends, and
finally replays again. After Ctrl-C, a crash or ``kill -9`` of the driver, ``--resume`` runs only
the indices without a record; raising ``num_trials`` and resuming adds the next indices (lowering it
below the recorded trials is refused). Ray starts before anything is written, so that a trial no
node can hold is refused with nothing created; a ledger write that fails mid-search stops the
search (:class:`~showwork.run.summary.SearchStorageError`) and leaves the unrecorded trials to the resume, as
does a run whose first trials all fail alike (:mod:`showwork.run.fail_fast`).

:func:`run_reruns` (``showwork rerun``) trains the best configurations again under fresh seeds
through the same driver (:func:`_drive`): only what it records and the parent run it opens differ.
Signals: :mod:`showwork.run.interrupts`; either way the parent run is marked KILLED and
:class:`~showwork.run.summary.SearchInterrupted` says how far the search got.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import time
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path

from showwork.constants import INTERRUPT_GRACE_S
from showwork.distributions import Constant
from showwork.environment import collect_environment, source_file
from showwork.errors import InputError
from showwork.families import function_code, pickled_function
from showwork.recorded import check_existing, check_records, resume_command, search_identity
from showwork.run.callback import ProjectionCallback
from showwork.run.deadlines import TrialDeadlines
from showwork.run.fail_fast import FailFast, SearchFailedFast
from showwork.run.interrupts import Interrupts
from showwork.run.progress import Progress
from showwork.run.startup import check_inputs, start_ray, start_up
from showwork.run.summary import SearchFolderMovedError, SearchInterrupted, SearchStorageError, SearchSummary, summarize
from showwork.sampling import fresh_training_seeds
from showwork.selection import RERUN_LEDGER, extend_plan, plan_from_meta, ranked_trials
from showwork.space import resolved_yaml
from showwork.store import Ledger, LedgerMovedError, TrialRecord, missing_indices, utc_now_iso
from showwork.tracking.errors import TrackingUnavailableError
from showwork.tracking.ledger_sync import sync_ledger
from showwork.tracking.mlflow_format import ACTIVE_METRIC, LEDGER_TAG, rerun_child_tags, rerun_parent_tags
from showwork.tracking.tracker import Tracker
from showwork.trials.execution import SearchContext

__all__ = ["run_reruns", "run_search", "search_context"]

def search_context(spec, storage_dir: Path):
    """The picklable :class:`~showwork.trials.execution.SearchContext` of a spec."""
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
        setup_timeout_s=spec.setup_timeout_s,
        max_retries=spec.max_retries,
        gpus_per_trial=spec.resources.gpus,
        gpu_memory_cap=spec.resources.gpu_memory_cap,
        function=None if spec.function is None else pickled_function(spec.function),
    )


def run_search(
    spec,
    storage_dir: Path,
    tracking_uri: str,
    *,
    resume: bool = False,
    address: str | None = None,
    progress: bool = True,
    num_cpus: int | None = None,
    parent_tags: dict[str, str] | None = None,
    race: str | None = None,
    retry_failed: bool = False,
    allow_changed_code: bool = False,
) -> SearchSummary:
    """Run (or resume) the random search described by ``spec``; see the module docstring.

    A spec with a function trainable (``spec.function``, family ``<function NAME>``) ships it pickled to the
    workers (:attr:`~showwork.trials.execution.SearchContext.function`) and records its code
    (:func:`_function_fields`); resuming it with other code is refused unless ``allow_changed_code``.

    ``retry_failed`` (with ``resume``: ``showwork resume NAME --retry-failed``) runs the failed and timed-out
    trials again, each with its configuration and seed: their records are superseded, kept in the ledger
    (:meth:`~showwork.store.ledger.Ledger.supersede`), and their MLflow runs tagged so
    (:func:`supersede_failed`); the trial's last attempt counts.

    ``parent_tags`` are added to the tags of the search's MLflow parent run when this run creates it
    (a race names itself there: ``showwork.race``). ``race``: the race that runs the search; it holds
    the search's lock (:meth:`~showwork.store.folder.SearchFolder.lock`) for the whole race, so this
    run takes none, and the search's metadata records the race (``race``): no other race adopts it.

    Raises
    ------
    InputError
        ``retry_failed`` without ``resume``; the search exists and ``resume`` is False; the resumed spec draws other configurations
        than the recorded one, or a ``num_trials`` below its recorded trials; no node of the Ray
        cluster can hold a trial.
    TrackingUnavailableError
        The tracking store is unreachable.
    LedgerLockedError
        Another driver holds the lock (an outage: exit 1).
    SearchStorageError
        A ledger write failed mid-search (a full disk, a read-only folder): the search was stopped.
    SearchFailedFast
        The run's first ``spec.fail_fast_after`` trials to end all failed with the same error
        (:mod:`showwork.run.fail_fast`): the search was stopped, resumable.
    LedgerWriteError
        The ledger's folder refused the search's metadata before any trial.
    SearchInterrupted
        SIGINT or SIGTERM stopped the search (the parent run, if any, is marked KILLED).
    """
    start = time.perf_counter()
    with Interrupts() as interrupts:
        try:
            if retry_failed and not resume:
                raise InputError("retry_failed: failed trials are retried when a search is resumed (resume=True)")
            train = check_inputs(spec, address)
            ledger = Ledger(Path(storage_dir), spec.name)
            _, records = check_existing(spec, ledger, resume, allow_changed_code)
            to_run = missing_indices(records, spec.num_trials)
            if retry_failed:
                to_run = sorted({*to_run, *(r.index for r in records if r.status != "finished" and r.index < spec.num_trials)})
            return _drive(spec, storage_dir, ledger, Tracker(tracking_uri, spec.name), search_context(spec, storage_dir),
                          to_run, lambda tracker: _open_search(spec, ledger, tracker, resume, train, parent_tags, race,
                                                               allow_changed_code),
                          resume=resume, retry_failed=retry_failed, address=address, progress=progress, num_cpus=num_cpus,
                          start=start, interrupts=interrupts, locked=race is not None,
                          # a function's search is resumed from Python: the same call writes the ledger to MLflow
                          again=resume_command(spec.name, storage_dir) if race is None and spec.function is None else None)
        except KeyboardInterrupt:
            pass
    ledger = Ledger(Path(storage_dir), spec.name)
    records = [r for r in ledger.records() if r.index < spec.num_trials] if ledger.exists() else []
    raise SearchInterrupted(spec.name, Path(storage_dir), sum(r.status == "finished" for r in records),
                            spec.num_trials, interrupts.signum or signal.SIGINT, bool(ledger.exists() and ledger.read_meta()))


def _drive(spec, storage_dir, ledger: Ledger, tracker, context, missing: list[int], open_parent: Callable, *, resume: bool,
           retry_failed: bool = False, address: str | None, progress: bool, num_cpus: int | None, start: float,
           interrupts: Interrupts, locked: bool = False, again: str | None = None) -> SearchSummary:
    """The phases every run of trials goes through, a search's or its re-runs': start Ray (when
    ``missing`` is not empty) while MLflow opens; under ``ledger``'s lock, ``open_parent(tracker)``
    (record the run's metadata, open or re-open its parent run: ``(parent_run_id, records)``); run the
    trials of ``context``; close the parent run (KILLED when a signal stops them); say in one line how many
    MLflow calls failed, if any, and that ``again`` (None: the same command) writes the ledger to MLflow. A
    signal raises ``KeyboardInterrupt`` here, or sets ``interrupts.signum``. ``locked``: the caller (a race)
    holds the lock.

    Once the search is recorded, the ledger and the workers' context carry its ``search_id``: no write
    goes into a folder that no longer holds the search (:meth:`~showwork.store.ledger.Ledger.moved`)."""
    with contextlib.ExitStack() as stack:
        def ray() -> tuple:
            return start_ray(spec, address, num_cpus, stack, interrupts)

        executor, waiting = start_up(spec, tracker, missing, ray, interrupts, progress)
        with contextlib.nullcontext() if locked else ledger.lock():
            parent, records = open_parent(tracker)
            search_id = ledger.read_meta().get("search_id")
            ledger = Ledger(ledger.storage_dir, ledger.name, search_id)
            context = dataclasses.replace(context, search_id=search_id)
            try:
                return _run_trials(spec, storage_dir, context, tracker, ledger, parent, records, resume, progress,
                                   interrupts, (executor, waiting), ray, start, retry_failed=retry_failed)
            except KeyboardInterrupt:
                # Tune has stopped the trials (first signal) or was cut short (second): the parent is KILLED.
                summary = summarize(spec.name, spec.num_trials, spec.metric.mode, ledger.records(), ledger,
                                    storage_dir, parent, "", time.perf_counter() - start)
                finish_parent(tracker, parent, "KILLED", summary)
                raise
            finally:
                mlflow_failures(tracker, again)


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

    The same driver as a search (:func:`_drive`: Ray Tune trials, each worker writing its record,
    the driver projecting records into MLflow, signals, storage failures), into a ledger of its own,
    ``{storage_dir}/{name}/reruns/`` (:data:`showwork.selection.RERUN_LEDGER`), whose metadata holds
    the plan (:func:`showwork.selection.extend_plan`): the search's records, its results, tuning
    curves and report statistics are untouched. MLflow: one parent run "NAME re-runs" (role
    ``reruns``) nested under the search's parent run, one child run per re-run tagged by
    :func:`showwork.tracking.mlflow_format.rerun_child_tags`. Seeds: :func:`showwork.sampling.fresh_training_seeds`
    of the search's seed, avoiding its trials' seeds. Calling it again runs only the planned re-runs
    without a record (after an interrupt), plus those that more seeds or a larger ``top`` add. The
    search's lock is held throughout, so that no search driver changes its best trials meanwhile.

    ``spec`` is the search's recorded spec (:func:`showwork.recorded.recorded_spec`). The summary
    counts the plan's re-runs; its ``name`` is ``NAME/reruns``.

    Raises
    ------
    InputError
        No finished trial to re-run; a malformed recorded plan; no node can hold a trial.
    LedgerLockedError
        A driver runs the search or its re-runs.
    SearchInterrupted
        SIGINT or SIGTERM stopped the re-runs (the re-runs' parent run is marked KILLED).
    """
    start = time.perf_counter()
    search = Ledger(Path(storage_dir), spec.name)
    reruns = Ledger(search.root, RERUN_LEDGER)
    with Interrupts() as interrupts:
        try:
            train = check_inputs(spec, address)
            with search.lock():  # no search driver adds trials (and changes the best) while the re-runs are planned and run
                records = search.records()
                check_records(spec, search, records)  # only the search's own trials are re-run
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
                return _drive(rerun_spec, storage_dir, reruns, tracker, context, missing_indices(reruns.records(), len(plan)),
                              lambda tracker: _open_reruns(spec, search, reruns, plan, tracker, train),
                              resume=True, address=address, progress=progress, num_cpus=num_cpus, start=start,
                              interrupts=interrupts, again=None)
        except KeyboardInterrupt:
            pass
    plan = plan_from_meta(reruns.read_meta(), str(reruns.meta_path)) if reruns.exists() else ()
    finished = sum(r.status == "finished" for r in reruns.records()) if plan else 0
    raise SearchInterrupted(f"{spec.name}/{RERUN_LEDGER}", Path(storage_dir), finished, len(plan),
                            interrupts.signum or signal.SIGINT, bool(plan))


def _open_reruns(spec, search: Ledger, reruns: Ledger, plan, tracker, train: Callable) -> tuple[str, list]:
    """Under the re-runs' lock: record the plan and the environment, open or re-open the re-runs'
    parent run (nested under the search's); return its id and the re-runs' records."""
    search_parent = search.read_meta().get("parent_run_id")
    environment = collect_environment(Path(spec.source_path).resolve().parent if spec.source_path else None,
                                      code_files=(spec.source_path, source_file(train)))
    meta = reruns.update_meta(
        search=spec.name,
        search_id=reruns.read_meta().get("search_id") or uuid.uuid4().hex,
        plan=[r.to_dict() for r in plan],
        num_trials=len(plan),  # the indices the re-runs' ledger owns (Ledger.owned_trials)
        search_seed=spec.seed,
        search_parent_run_id=search_parent,
        tracking_uri=tracker.shown_uri,
        environment=environment,
    )
    parent = meta.get("parent_run_id")
    if parent:
        tracker.resume_parent(parent, num_trials=len(plan))
        return parent, reruns.records()
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
    return parent, reruns.records()


def _open_search(spec, ledger, tracker, resume: bool, train: Callable, parent_tags: dict[str, str] | None = None,
                 race: str | None = None, allow_changed_code: bool = False) -> tuple[str, list]:
    """Under the ledger's lock: check the search again (another driver may have begun it
    meanwhile), record its metadata, open or re-open its MLflow parent run; return the parent run's
    id and the ledger's records. The environment names the YAML's and ``train``'s files (their SHA-256
    outside git); a resume with no trial to run keeps the recorded one."""
    meta, records = check_existing(spec, ledger, resume, allow_changed_code)
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
        identity=search_identity(spec),
        search_id=meta.get("search_id") or uuid.uuid4().hex,
        spec=spec.model_dump(mode="json"),  # the space serialises as SearchSpace.to_dict()
        spec_yaml=spec.source_text,
        # where the YAML was: relative family files and data paths resolve from its folder on `showwork resume`
        spec_path=str(Path(spec.source_path).resolve()) if spec.source_path else None,
        num_trials=spec.num_trials,
        seed=spec.seed,
        tracking_uri=tracker.shown_uri,  # without a password: give it in MLFLOW_TRACKING_PASSWORD
        environment=environment,
        **({"race": race} if race is not None else {}),
        **_function_fields(spec, ledger, meta, allow_changed_code),
    )
    # a search begun again under its name after its ledger was removed: the earlier attempt's runs are tagged
    tracker.abandon_other_attempts(meta["search_id"], str(ledger.root))
    parent = meta.get("parent_run_id")
    if parent:
        tracker.resume_parent(parent, num_trials=spec.num_trials)
        # the report's link to its runs table (issue 34 item 5); a search begun before it was recorded gets it here
        ledger.update_meta(experiment_id=tracker.known_experiment_id)
        return parent, records
    parent = tracker.start_parent(
        run_name=spec.name,
        params={"seed": spec.seed, "num_trials": spec.num_trials, "family": spec.family,
                "metric": spec.metric.name, "mode": spec.metric.mode,
                "search_strategy": "random search (i.i.d.)"},
        tags={"showwork.search": spec.name, LEDGER_TAG: str(ledger.root), **(parent_tags or {})},
        artifacts={"search.yaml": spec.source_text or "", "search.resolved.yaml": resolved_yaml(spec)},
        environment=environment,
        space=spec.space,
        search_id=meta["search_id"],
    )
    ledger.update_meta(parent_run_id=parent, experiment_id=tracker.known_experiment_id)  # the report links its runs table
    return parent, records


def _function_fields(spec, ledger: Ledger, meta: dict, allow_changed_code: bool) -> dict:
    """The metadata of a search's function trainable, its source kept first in the ledger's folder (write-once,
    ``functions/<sha256>.py``); {} for the other families.

    ``function``: the code this run runs (:meth:`~showwork.families.FunctionCode.to_dict`, with ``source_file``, the
    source's path in the search's folder, or None where Python had none); ``function_history``: one entry more per
    run, with its time and whether ``allow_changed_code`` let it run code other than the last run's (``changed``)."""
    if spec.function is None:
        return {}
    code = function_code(spec.function)
    source = None if code.source is None else ledger.write_function_source(code.sha256, code.source)
    entry = {**code.to_dict(), "source_file": None if source is None else source.relative_to(ledger.root).as_posix()}
    before = meta.get("function")
    changed = isinstance(before, dict) and before.get("sha256") != code.sha256
    history = [*(meta.get("function_history") or ()),
               {**entry, "at": utc_now_iso(), "changed": changed, "allowed_changed_code": allow_changed_code}]
    return {"function": entry, "function_history": history}


def _run_trials(spec, storage_dir, context, tracker, ledger, parent, records, resume, progress, interrupts, started,
                start_ray, start, retry_failed: bool = False) -> SearchSummary:
    """Replay, supersede the failed trials' records (``retry_failed``), run the missing trials, replay again, close
    the parent run.

    ``records`` are the ledger's records read under the lock; the records are read once more, after
    the trials. ``context`` says where the trials' ledger is and what each trial trains (the
    re-runs give their own); ``started`` is ``(executor, waiting)`` from the start-up, ``(None,
    None)`` when no trial was missing then."""
    records = replay(tracker, ledger, parent, records)
    if retry_failed:
        records = supersede_failed(tracker, ledger, parent, records, spec.num_trials)
    if resume:  # runs an interrupted driver left for trials that will run again: one run per trial
        try:
            tracker.delete_stale_children(parent, {record.index for record in records})
        except TrackingUnavailableError as error:
            warnings.warn(f"MLflow: could not delete stale child runs ({error}).")
    missing = missing_indices(records, spec.num_trials)
    display = Progress(spec.name, spec.num_trials, spec.metric.name, spec.metric.mode, records, enabled=progress,
                       trial_of=context.trial, fixed=_constant_names(spec.space))
    storage_failure = None
    watch = FolderWatch(ledger)
    fail_fast = FailFast(spec.fail_fast_after)  # the first trials all failing alike stop the run (issue 35 item 2)
    if missing:
        executor, waiting = started
        if executor is None:  # a record vanished meanwhile (moved aside as unreadable)
            executor, waiting = start_ray()
        display.waiting = waiting
        callback = ProjectionCallback(tracker, ledger, parent, display, trial_of=context.trial, fail_fast=fail_fast,
                                      interrupted=lambda: (interrupts.signum is not None or watch.problem is not None
                                                           or fail_fast.tripped is not None))
        deadlines = TrialDeadlines(ledger, context)  # the driver ends a trial its worker does not end (issue 23 item 4)

        def stop_now() -> bool:
            if interrupts.signum is not None:
                deadlines.end_all_after(INTERRUPT_GRACE_S)  # not Tune's 10 s for a trial in a long epoch
                return True
            return ((callback.storage_failure or deadlines.storage_failure) is not None or fail_fast.tripped is not None
                    or watch() is not None)

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
                    callbacks=[deadlines, callback],
                    stop_when=stop_now,
                )
            finally:
                interrupts.graceful = False
                deadlines.close()
                callback.close()
        storage_failure = callback.storage_failure or deadlines.storage_failure
        if watch.problem is not None or ledger.moved() is not None:
            _remove_what_ray_recreated(ledger, executor.run_folder)
    if interrupts.signum is not None:
        raise KeyboardInterrupt  # the trials have stopped: the caller reports the interrupt
    moved = ledger.moved()  # then its records went with the folder: the parent run's counts are those at the start
    if moved is None:
        records = ledger.records() if missing else records
    if storage_failure is None and moved is None:
        records = replay(tracker, ledger, parent, records)  # it writes run ids into the records
    summary = summarize(spec.name, spec.num_trials, spec.metric.mode, records, ledger, storage_dir, parent,
                        tracker.shown_uri, time.perf_counter() - start)
    summary = dataclasses.replace(summary, experiment_id=tracker.known_experiment_id)  # the link to its runs table
    complete = summary.finished + summary.failed + summary.timeout == spec.num_trials
    finish_parent(tracker, parent, "FINISHED" if complete else "KILLED", summary)
    if moved is not None:  # whatever a worker reported meanwhile, this is the news
        raise SearchFolderMovedError(str(LedgerMovedError(ledger.root, moved)), ledger.root)
    if storage_failure is not None:
        raise SearchStorageError(storage_failure)
    if fail_fast.tripped is not None:
        raise SearchFailedFast(spec.name, fail_fast.tripped, ledger.path(fail_fast.tripped.index))
    return summary


def _constant_names(space) -> tuple[str, ...]:
    """The parameters of ``space`` that every trial gets alike (the live table leaves them out)."""
    return tuple(name for name in space.names if isinstance(space[name], Constant))


def _remove_what_ray_recreated(ledger: Ledger, run_folder: Path | None) -> None:
    """Once the search's folder has moved away, Ray Tune still saves its run's state under the old path as it
    stops, making a new search folder that holds only ``ray/run-<time>/``: a copy of Ray's own files of this
    run (those of the moved folder are complete), in the way of putting the folder back. Remove exactly
    that, and only while the path holds nothing else (no ``search.json``, no record): otherwise leave it."""
    if run_folder is None:
        return
    run_folder = ledger.ray_dir / run_folder.name  # the executor's path may be the resolved one
    try:
        if ledger.root.is_symlink() or ledger.ray_dir.is_symlink():
            return
        if os.listdir(ledger.root) != ["ray"] or os.listdir(ledger.ray_dir) != [run_folder.name]:
            return
        shutil.rmtree(run_folder)
        os.rmdir(ledger.ray_dir)
        os.rmdir(ledger.root)
    except OSError:  # gone meanwhile, or something was added: left as it is
        pass


class FolderWatch:
    """Whether the search's folder still holds the search (:meth:`~showwork.store.ledger.Ledger.moved`), looked at
    no more than once every ``interval_s`` (Tune asks its stop condition many times a second).

    Calling it returns what showed the folder was moved, deleted or replaced, or None; once seen,
    ``problem`` keeps it."""

    def __init__(self, ledger: Ledger, interval_s: float = 1.0) -> None:
        self.ledger, self.interval_s = ledger, interval_s
        self.problem: str | None = None
        self._next = 0.0

    def __call__(self) -> str | None:
        now = time.monotonic()
        if self.problem is None and now >= self._next:
            self._next = now + self.interval_s
            self.problem = self.ledger.moved()
        return self.problem


def finish_parent(tracker, parent: str, status: str, summary: SearchSummary) -> None:
    """End the parent run with ``status`` (FINISHED for a complete search, else KILLED) and the counts of ``summary``.

    ``active_s`` (:data:`~showwork.tracking.mlflow_format.ACTIVE_METRIC`) is the time the search's drivers
    ran: this one's, plus what the parent held when this driver re-opened it. MLflow's duration of
    the parent is wall-clock time from its first start to its last end, idle gaps between an
    interrupt and its resume included (issue 23 item 16: 1,687 s shown for about 200 s of work).
    """
    metrics = {k: v for k, v in {"trials_finished": summary.finished, "trials_failed": summary.failed,
                                 "trials_timeout": summary.timeout, "best_val_score": summary.best_score,
                                 ACTIVE_METRIC: tracker.active_before.get(parent, 0.0) + summary.elapsed_s}.items()
               if v is not None}
    try:
        tracker.finish_parent(parent, status, metrics)
    except TrackingUnavailableError:  # counted: the search's end line says it (mlflow_failures)
        tracker.behind = True


def supersede_failed(tracker, ledger: Ledger, parent: str, records: list[TrialRecord], num_trials: int) -> list[TrialRecord]:
    """Make room for a retry of each failed or timed-out trial of ``records`` (below ``num_trials``): tag its MLflow
    run superseded (:meth:`~showwork.tracking.tracker.Tracker.supersede_child`), then move its record to the
    ledger's superseded records (:meth:`~showwork.store.ledger.Ledger.supersede`); return the records left.

    The run is tagged first: a driver stopped between the two leaves the record counted and its run tagged
    superseded; the next driver's replay removes the tag (:func:`~showwork.tracking.ledger_sync.sync_ledger`),
    and its next ``--retry-failed`` does both again. The other order would leave an untagged run that the
    retry's attempt would be written into.
    """
    kept = []
    for record in records:
        if record.status == "finished" or record.index >= num_trials:
            kept.append(record)
            continue
        position = ledger.position(record.index)
        if position is None:  # the record vanished meanwhile (moved aside as unreadable): the trial runs again anyway
            continue
        tracker.supersede_child(parent, record, position)
        ledger.supersede(record.index)
    return kept


def replay(tracker, ledger, parent, records) -> list[TrialRecord]:
    """:func:`~showwork.tracking.ledger_sync.sync_ledger` of ``records``; return them with the run ids it wrote."""
    by_index = {record.index: record for record in records}
    try:
        sync_ledger(tracker, ledger, parent, records, written=lambda record: by_index.__setitem__(record.index, record))
        tracker.behind = False
    except TrackingUnavailableError:  # counted: the search's end line says it (mlflow_failures)
        tracker.behind = True
    return [by_index[index] for index in sorted(by_index)]


def mlflow_failures(tracker, again: str | None) -> None:
    """Warn, in one line, of the MLflow calls of this search that failed (an outage, a full disk): how many,
    why, and the command that writes the ledger to MLflow. Not once per call, nor MLflow's tracebacks
    (455 lines for a full SQLite store): the ledger has every trial, MLflow is its copy."""
    line = tracker.failures_line(again)
    if line is not None:
        warnings.warn(line)

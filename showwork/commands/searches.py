"""Running a search from the command line: what `search`, `resume` and `rerun` share."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from showwork.constants import DEFAULT_STORAGE
from showwork.escaping import terminal_text
from showwork.tracking.mlflow_format import runs_table_path
from showwork.trials import ray_setup

T = TypeVar("T")


def runnable_spec(path: str, overrides: dict):
    """The search spec of ``path``, refused exactly where ``showwork search`` would refuse it before any trial."""
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    from showwork.space import load_search_spec
    from showwork.tracking.run_entities import check_param_names

    spec = load_search_spec(path, overrides)
    check_param_names(spec.space, spec.source_path or spec.name)  # MLflow's keys: refused here if search would refuse
    return spec


def tracking_uri(value: str | None) -> str:
    """``--tracking-uri``, else ``$MLFLOW_TRACKING_URI``, else the store here (:func:`showwork.tracking.uris.chosen_tracking_uri`)."""
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    from showwork.tracking.uris import chosen_tracking_uri

    return chosen_tracking_uri(value)


def check_ray_options(args: argparse.Namespace) -> None:
    ray_setup.check_ray_options(args.num_cpus, args.address)


def run_spec(spec, args: argparse.Namespace, uri: str, resume: bool, retry_failed: bool = False) -> int:
    """Run (or resume) ``spec`` for `search` and `resume`; print the summary, or the interrupt and the command that continues."""
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    from showwork.recorded import resume_command
    from showwork.run import SearchInterrupted, run_search
    from showwork.tracking.ui import ui_address

    try:
        summary = run_outcome(lambda: run_search(spec, Path(args.storage), uri, resume=resume, address=args.address,
                                                 progress=not args.no_progress, num_cpus=args.num_cpus,
                                                 retry_failed=retry_failed),
                              resume_command(spec.name, args.storage), "its records are kept",
                              retry_with=f"{resume_command(spec.name, args.storage)} --retry-failed")
    except SearchInterrupted as stop:
        print(terminal_text(f"\n{stop}"), file=sys.stderr)  # interrupted: F of N trials finished
        if stop.resumable:
            print(terminal_text(f"the ledger keeps every finished trial; continue with:\n  {resume_command(spec.name, args.storage)}"),
                  file=sys.stderr)
        return 128 + stop.signum
    if isinstance(summary, int):
        return summary
    best = "-" if summary.best_score is None else f"{summary.best_score:.6g} (trial {summary.best_index})"
    print(terminal_text(
        f"\nsearch {summary.name}: {summary.finished} finished, {summary.failed} failed, {summary.timeout} timed out"
        f" of {summary.num_trials}{f' ({summary.retried} retried: their last attempt counts)' if summary.retried else ''} in {summary.elapsed_s:.0f} s; best {spec.metric.name} {best}\n"
        f"ledger: {summary.storage_dir / summary.name}   MLflow: {summary.tracking_uri}, parent run {summary.parent_run_id}\n"
        f"next:\n  showwork results {summary.name} --storage {args.storage} --csv > {summary.name}.csv\n"
        f"  showwork report {summary.name} --out {summary.name}-report"
        + (f" --storage {args.storage}" if args.storage != DEFAULT_STORAGE else "") + "\n"
        "  showwork ui" + (f" --tracking-uri {summary.tracking_uri}" if args.tracking_uri else "")
        # the runs table of this search's trials: not those of an abandoned attempt of its name (showwork.abandoned)
        + (f"   (then its runs table: {ui_address()}/"
           f"{runs_table_path(summary.experiment_id, spec.metric.mode, parent_run_id=summary.parent_run_id)})"
           if summary.experiment_id else "")
    ))
    if summary.failures:
        print_failures(summary, args.storage)
    if summary.finished == 0:  # nothing to report: `showwork search X && showwork report X` stops here
        print(terminal_text(f"showwork: error: no trial of search {summary.name} finished ({summary.failed} failed,"
                            f" {summary.timeout} timed out); see the failures above"), file=sys.stderr)
        return 1
    return 0


def run_outcome(run: Callable[[], T], continue_with: str, kept: str, retry_with: str | None = None) -> T | int:
    """``run()`` (a search's driver, or a race's); an outage of the ledger's folder, or a search whose first
    trials all failed alike (:class:`~showwork.run.SearchFailedFast`), becomes its one ``showwork: error:``
    line, with ``kept`` (what is kept) and ``continue_with`` (the command that continues), and exit status 1.
    ``retry_with``, where there is one, is the command that also runs the failed trials again
    (``resume --retry-failed``): the one a search stopped by its failures is continued with."""
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    from showwork.run import SearchFailedFast, SearchFolderMovedError, SearchStorageError
    from showwork.store import LedgerWriteError

    try:
        return run()
    except SearchFailedFast as error:  # the environment the trials run in, not the input: exit 1
        again = (f"fix the cause, then run its failed trials again and continue with: {retry_with}" if retry_with
                 else f"fix the cause, then continue with: {continue_with}")
        print(terminal_text(f"showwork: error: {error}; {kept}; {again}"), file=sys.stderr)
        return 1
    except SearchFolderMovedError as error:  # an outage too: the records are where the folder went
        print(terminal_text(f"showwork: error: {error}; the search stopped. Put the folder back at {error.folder} (its"
                            f" records are in it), then continue with: {continue_with}"), file=sys.stderr)
        return 1
    except (SearchStorageError, LedgerWriteError) as error:  # an outage, not bad input: exit 1
        print(terminal_text(f"showwork: error: {error}; the search stopped, {kept}; once the folder takes"
                            f" writes again, continue with: {continue_with}"), file=sys.stderr)
        return 1


def print_failures(summary, storage: str) -> None:
    """The failures of a search by kind, with the first message of each, where the full tracebacks are, and the
    command that retries them."""
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    from showwork.recorded import resume_command
    from showwork.store import Ledger

    ledger = Ledger(summary.storage_dir, summary.name)
    count = sum(kind.count for kind in summary.failures)
    print(terminal_text(f"\nfailures ({count} of {summary.num_trials} trials), by kind:"))
    for kind in summary.failures:  # a trial's message is the trainable's: it may quote anything
        print(terminal_text(f"  {kind.count} x {kind.kind}, first trial {kind.first_index}: {kind.first_message[:200]}"))
    first = summary.failures[0].first_index
    print(terminal_text(f"tracebacks: each trial's record ({ledger.path(first)}, field \"error\"; all of them:"
                        f" showwork results {summary.name} --storage {storage} --csv)"))
    for log in summary.ray_logs:
        print(terminal_text(f"  and Ray's log of the run: {log}"))
    print(terminal_text(f"run the failed and timed-out trials again (same configurations and seeds; every attempt is kept):\n"
                        f"  {resume_command(summary.name, storage)} --retry-failed"))


def recorded_tracking_uri(args: argparse.Namespace) -> str:
    """The MLflow store of a recorded search (``resume``, ``rerun``): :func:`showwork.tracking.uris.recorded_tracking_uri`."""
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    from showwork.tracking.uris import recorded_tracking_uri as recorded

    return recorded(args.storage, args.name, args.tracking_uri)

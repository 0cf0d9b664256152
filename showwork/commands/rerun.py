"""``showwork rerun``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from showwork.commands.options import add_run_options, integer
from showwork.commands.searches import check_ray_options, recorded_tracking_uri
from showwork.constants import DEFAULT_STORAGE
from showwork.escaping import terminal_text


def add_to(commands: Any) -> None:
    """Add the command's parser to ``commands`` (argparse sub-parsers)."""
    rerun = commands.add_parser(
        "rerun",
        help="train the best configuration(s) of a search again under fresh training seeds",
        description="Train the K best configurations of search NAME again, each under the same N fresh training"
        " seeds (deterministic given the search's seed, never a seed of its trials), through Ray, the ledger and"
        " MLflow like a search. The re-runs have a ledger of their own (NAME/reruns/ under --storage) and an MLflow"
        " parent run nested under the search's, so the search's results, tuning curves and report statistics never"
        " see them; `showwork report NAME` adds their mean ± sd. Interrupt it at any time: the same command again"
        " runs only the re-runs without a record.",
    )
    rerun.add_argument("name", metavar="NAME", help="search name")
    rerun.add_argument("--seeds", type=integer("--seeds", 1, 10_000), required=True, metavar="N", help="fresh training seeds per configuration")
    rerun.add_argument("--top", type=integer("--top", 1, 1000), default=1, metavar="K", help="re-run the K best configurations (default 1)")
    add_run_options(rerun, "MLflow tracking URI (default: --tracking-uri, else $MLFLOW_TRACKING_URI, else the search's store)")
    rerun.set_defaults(handler=_run_rerun)


def _run_rerun(args: argparse.Namespace) -> int:
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    from showwork.recorded import recorded_reruns, recorded_spec
    from showwork.run import SearchFailedFast, SearchFolderMovedError, SearchInterrupted, SearchStorageError, run_reruns
    from showwork.store import LedgerWriteError

    check_ray_options(args)
    spec = recorded_spec(Path(args.storage), args.name)
    uri = recorded_tracking_uri(args)
    again = f"showwork rerun {args.name} --seeds {args.seeds} --top {args.top}" + (
        f" --storage {args.storage}" if args.storage != DEFAULT_STORAGE else "")
    try:
        summary = run_reruns(spec, Path(args.storage), uri, seeds=args.seeds, top=args.top, address=args.address,
                             progress=not args.no_progress, num_cpus=args.num_cpus)
    except SearchInterrupted as stop:
        print(terminal_text(f"\n{stop}"), file=sys.stderr)
        print(terminal_text(f"the re-runs' ledger keeps every finished re-run; continue with:\n  {again}"), file=sys.stderr)
        return 128 + stop.signum
    except SearchFailedFast as error:
        print(terminal_text(f"showwork: error: {error}; the re-runs' records are kept; fix the cause, then continue with: {again}"),
              file=sys.stderr)
        return 1
    except SearchFolderMovedError as error:
        print(terminal_text(f"showwork: error: {error}; the re-runs stopped. Put the folder back at {error.folder} (their"
                            f" records are in it), then continue with: {again}"), file=sys.stderr)
        return 1
    except (SearchStorageError, LedgerWriteError) as error:
        print(terminal_text(f"showwork: error: {error}; the re-runs stopped, their records are kept; continue with: {again}"),
              file=sys.stderr)
        return 1
    print(terminal_text(f"\nre-runs of {args.name}: {summary.finished} finished, {summary.failed} failed, {summary.timeout} timed out"
                        f" of {summary.num_trials} in {summary.elapsed_s:.0f} s\n"
                        f"ledger: {summary.storage_dir / args.name / 'reruns'}   MLflow: {summary.tracking_uri},"
                        f" parent run {summary.parent_run_id}"))
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    from showwork.report.tables import rerun_sentence

    for rerun in recorded_reruns(Path(args.storage), args.name, spec.metric.mode):
        print(terminal_text(f"  {rerun_sentence(rerun, spec.metric.name, spec.metric.test)}"))
    print(terminal_text(f"next:\n  showwork report {args.name} --out {args.name}-report"
                        + (f" --storage {args.storage}" if args.storage != DEFAULT_STORAGE else "")))
    return 0 if summary.finished else 1

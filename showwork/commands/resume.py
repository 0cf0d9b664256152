"""``showwork resume``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from showwork.commands.options import add_run_options, integer
from showwork.commands.searches import check_ray_options, recorded_tracking_uri, run_spec
from showwork.errors import InputError


def add_to(commands: Any) -> None:
    """Add the command's parser to ``commands`` (argparse sub-parsers)."""
    resume = commands.add_parser(
        "resume",
        help="continue an interrupted search by its name, with the settings it was started with",
        description="Continue search NAME: run only its trials that have no record (with --retry-failed, its failed and"
        " timed-out trials too), with the spec (the YAML and the command line's overrides) recorded in its ledger; the"
        " YAML file is not read again. MLflow: --tracking-uri, else $MLFLOW_TRACKING_URI, else the store the search"
        " recorded.",
    )
    resume.add_argument("name", metavar="NAME", help="search name")
    resume.add_argument("--num-trials", type=integer("--num-trials", 1, 1_000_000), metavar="N",
                        help="trials of the search (more than recorded extends it; default: the recorded number)")
    resume.add_argument("--retry-failed", action="store_true",
                        help="run the failed and timed-out trials again, each with its configuration and seed; the"
                        " ledger keeps every attempt (trials/superseded/) and the last one counts; their earlier MLflow"
                        " runs stay, tagged showwork.superseded")
    add_run_options(resume, "MLflow tracking URI (default: see above)")
    resume.set_defaults(handler=_run_resume)


def _run_resume(args: argparse.Namespace) -> int:
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    from showwork.recorded import needs_function, recorded_spec

    check_ray_options(args)
    spec = recorded_spec(Path(args.storage), args.name, args.num_trials)
    if spec.family_kind == "function":  # its function was given from Python, and is nowhere a command can find it
        raise InputError(needs_function(args.name, args.storage))
    uri = recorded_tracking_uri(args)
    return run_spec(spec, args, uri, resume=True, retry_failed=args.retry_failed)

"""``showwork search``."""

from __future__ import annotations

import argparse
from typing import Any

from showwork.commands.options import add_override_options, add_run_options, override_values
from showwork.commands.searches import check_ray_options, run_spec, tracking_uri


def add_to(commands: Any) -> None:
    """Add the command's parser to ``commands`` (argparse sub-parsers)."""
    search = commands.add_parser(
        "search",
        help="run (or resume) an i.i.d. random search on Ray Tune, tracked in MLflow",
        description="Run the random search described by a search-space file: one Ray Tune trial per sampled"
        " configuration, every trial recorded in the ledger (--storage) and in MLflow (--tracking-uri)."
        " Interrupt it at any time; --resume runs only the trials that have no record.",
    )
    search.add_argument("space", metavar="SPACE", help="search-space YAML file")
    add_override_options(search)
    search.add_argument("--resume", action="store_true", help="continue an existing search: run only the missing trials")
    add_run_options(search, "MLflow tracking URI (default sqlite:///mlflow.db here)")
    search.set_defaults(handler=_run_search)


def _run_search(args: argparse.Namespace) -> int:
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    from showwork.api import search_spec

    check_ray_options(args)
    overrides = override_values(args)
    spec = search_spec(args.space, **overrides)
    return run_spec(spec, args, tracking_uri(args.tracking_uri), resume=args.resume)

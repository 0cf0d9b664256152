"""``showwork plan``."""

from __future__ import annotations

import argparse
import json
from typing import Any

from showwork.commands.options import finite, probability
from showwork.commands.scores import band_spec
from showwork.constants import BAND_METHODS  # no imports of their own: --help stays instant
from showwork.errors import InputError


def add_to(commands: Any) -> None:
    """Add the command's parser to ``commands`` (argparse sub-parsers)."""
    plan = commands.add_parser(
        "plan",
        help="number of trials needed for informative bands up to a budget",
        description="Smallest number of trials whose median-curve bands stay informative (below the"
        " trivial bound) up to budget K.",
    )
    plan.add_argument("--k", type=finite("--k"), required=True, metavar="K", help="largest budget to bound (>= 1)")
    plan.add_argument("--confidence", type=probability("--confidence"), default=0.8, help="band confidence (default 0.8)")
    plan.add_argument("--method", choices=BAND_METHODS, default="ld-hd", help="band method (default ld-hd)")
    plan.add_argument("--quantile", type=probability("--quantile"), default=0.5, help="quantile tuning curve (default 0.5)")
    plan.add_argument("--min", dest="minimize", action="store_true", help="lower scores are better (matters for quantiles other than 0.5)")
    plan.add_argument("--json", action="store_true", help="print one JSON object")
    plan.set_defaults(handler=_run_plan)


def _run_plan(args: argparse.Namespace) -> int:
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    from showwork.statistics import BudgetOutOfReachError, informative_budget, trials_needed

    if args.k < 1:
        raise InputError(f"--k must be at least 1 (got {args.k:g})")
    bands = band_spec(args)
    try:
        n = trials_needed(args.k, minimize=args.minimize, bands=bands)
    except BudgetOutOfReachError as error:  # no number of trials up to its limit reaches --k
        raise InputError(f"--k {args.k:g}: {error}") from None
    reach = informative_budget(n, minimize=args.minimize, bands=bands)
    if args.json:
        print(json.dumps({"k": args.k, "confidence": args.confidence, "method": args.method, "quantile": args.quantile,
                          "trials_needed": n, "informative_budget": reach, "ratio": n / args.k}))
        return 0
    print(
        f"To bound the {'median' if args.quantile == 0.5 else f'{args.quantile:g}-quantile'} tuning curve up to"
        f" k = {args.k:g} with {args.method} bands at {args.confidence:g} confidence, run at least n = {n} trials"
        f" ({n / args.k:.2f} per unit of budget; with n = {n} the bands are informative up to k = {reach:.2f})."
    )
    return 0

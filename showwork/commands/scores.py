"""Scores of a results file or a ray: experiment, and their bands: what `curve`, `compare` and `plan` share."""

from __future__ import annotations

import argparse
import math
from typing import Any, Callable, NamedTuple

from showwork.errors import InputError
from showwork.results_table import read_results_table


class Scores(NamedTuple):
    """One source's scores and runtimes in trial order, and how its own numbering names the trial at a position."""

    scores: Any
    runtimes: Any
    trial_name: Callable[[int], str]


def read_scores(path: str, args: argparse.Namespace, runtime_column: str | None = None) -> Scores:
    """Scores (and runtimes) of one results file or ray: experiment, in trial order; missing cells and failed trials are NaN."""

    if path.startswith("ray:"):  # runtimes: Ray's time_total_s (a --runtime column does not apply)
        # lazy: `showwork --help` imports every command's module; these load when the command runs
        from showwork.report.sources_ray import from_ray_tune

        if runtime_column:
            raise InputError("--runtime: a ray: source's runtimes are Ray's time_total_s; leave --runtime out")
        family = from_ray_tune(path.removeprefix("ray:"), args.score, reduce=getattr(args, "reduce", "last"), minimize=args.minimize)
        ids = family.meta.get("trial_ids") or ()
        return Scores(family.scores, family.runtimes_s, lambda i: f"Ray trial {ids[i]}" if i < len(ids) else f"trial {i + 1}")
    if getattr(args, "reduce", "last") != "last":
        raise InputError("--reduce applies to ray: sources only")

    table = read_results_table(path)
    runtimes = table.runtime_column(runtime_column) if runtime_column else None
    # Rows count from 1 below the header; the line is the file's own (blank lines are no rows).
    return Scores(table.score_column(args.score), runtimes, lambda i: f"row {i + 1}, line {table.lines[i]} of the file")


def band_spec(args: argparse.Namespace):
    """The bands' settings of `curve`, `compare` and `plan` (which has no --a/--b), built once from the options."""
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    from showwork.statistics import BandSpec

    a = -math.inf if getattr(args, "a", None) is None else args.a
    b = math.inf if getattr(args, "b", None) is None else args.b
    if a > b:  # a == b is a point mass, as in the library: constant scores there give exact bands
        raise InputError(f"--a ({a}) must not be greater than --b ({b})")
    return BandSpec(confidence=args.confidence, method=args.method, quantile=args.quantile, a=a, b=b)  # argparse checked each


def tuning_curve_of(path: str, read: Scores, args: argparse.Namespace, bands, k, runtimes=None):
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    from showwork.statistics import ArgumentError, FailedTrialsError, tuning_curve

    try:
        return tuning_curve(
            read.scores, k, bands=bands, minimize=args.minimize, runtimes=runtimes, failure_policy=args.failed, name=path
        )
    except FailedTrialsError as error:  # named as the source numbers its trials, with the option that decides
        message = error.what(read.trial_name(error.failed[0])).replace("choose a failure policy:", "choose --failed:")
        raise InputError(f"{path}: column {args.score!r}: {message}") from None
    except ArgumentError as error:  # the user's scores or options, passed on: not a bug in the computation
        raise InputError(f"{path}: column {args.score!r}: {error}") from None




def extrapolation_of(curve, args: argparse.Namespace, name: str | None = None):
    """``--extrapolate K``: ``curve`` extrapolated to K (an ``Extrapolation``, or an ``ExtrapolationRefused`` with its
    reason: an answer, not an error); None without the option. K must lie above every budget the curve shows."""
    if args.extrapolate is None:
        if args.tail_fraction is not None:
            raise InputError("--tail-fraction applies to --extrapolate K: give both")
        return None
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    from showwork.statistics import ArgumentError
    from showwork.statistics.extrapolation import extrapolate

    shown = float(curve.k[-1]) if curve.k.size else 0.0
    if args.extrapolate <= shown:
        raise InputError(f"--extrapolate {args.extrapolate}: K must be above the budgets shown (up to k = {shown:g});"
                         f" the curve up to there is observed")
    try:
        return extrapolate(curve, args.extrapolate, tail_fraction=args.tail_fraction)
    except ArgumentError as error:  # the user's K or tail fraction against these scores
        raise InputError(f"{name or curve.name}: --extrapolate {args.extrapolate}: {error}") from None

"""Argument types and the options several commands share, each declared once."""

from __future__ import annotations

import argparse
import math

from showwork.constants import (  # no imports of their own: --help stays instant
    BAND_METHODS,
    DEFAULT_STORAGE,
    EXTRAPOLATION_MAX_K,
    EXTRAPOLATION_TAIL_FRACTION,
    FAILURE_POLICIES,
    FIGURE_FORMATS,
    FIGURE_SIZE_INCHES,
)
from showwork.errors import InputError


def _number(name: str, text: str) -> float:
    """``text`` as a float, or the option's one-line error naming it."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{name} must be a number, not {text!r}") from None


def probability(name: str):
    def parse(text: str) -> float:
        # lazy: `showwork --help` imports every command's module; the statistics load when an option is parsed
        from showwork.statistics.errors import ArgumentError, check_probability

        value = _number(name, text)
        try:
            return check_probability(value, name)
        except ArgumentError as error:  # the library's one message, without its full stop (argparse adds its own text)
            raise argparse.ArgumentTypeError(str(error).rstrip(".")) from None

    return parse


def finite(name: str):
    def parse(text: str) -> float:
        value = _number(name, text)
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{name} must be finite (got {text})")
        return value

    return parse


def positive(name: str):
    def parse(text: str) -> float:
        value = finite(name)(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{name} must be positive (got {text})")
        return value

    return parse


def finite_list(name: str):
    def parse(text: str) -> list[float]:
        parse_one = finite(name)
        items = [item.strip() for item in text.split(",")]
        if not all(items):
            raise argparse.ArgumentTypeError(f"{name} has an empty item in {text!r}")
        return [parse_one(item) for item in items]

    return parse




def figure_formats(text: str) -> tuple[str, ...]:
    formats = tuple(dict.fromkeys(item.strip().lower() for item in text.split(",")))
    unknown = [f for f in formats if f not in FIGURE_FORMATS]
    if unknown or not formats:
        raise argparse.ArgumentTypeError(f"--formats must be a comma list of {', '.join(FIGURE_FORMATS)} (got {text!r})")
    return formats


def figure_size(text: str) -> tuple[float, float]:
    """Parse ``--figsize W,H``: two numbers of inches, within the limits the figures check (their check, called here)."""
    parts = [part.strip() for part in text.split(",")]
    try:
        size = tuple(float(part) for part in parts)
    except ValueError:
        size = ()
    if len(size) != 2:
        low, high = FIGURE_SIZE_INCHES
        raise argparse.ArgumentTypeError(f"--figsize takes W,H: two numbers of inches, each {low:g} to {high:g}, e.g. 3.3,2.4"
                                         f" (got {text!r})")
    # lazy: the check's module loads matplotlib, which `showwork --help` must not; a given --figsize may
    from showwork.report.figures.style import check_figsize

    return _checked(check_figsize, size)


def figure_curves(text: str) -> tuple[str, ...]:
    """Parse ``--curves LIST``: what the tuning-curve figures draw (the figures' check, called here)."""
    # lazy: the check's module loads matplotlib, which `showwork --help` must not; a given --curves may
    from showwork.report.figures.style import check_curves

    return _checked(check_curves, [part for part in text.split(",") if part.strip()])


def font_size(text: str) -> float:
    """Parse ``--font-size PT``: a number of points, within the limits the figures check (their check, called here)."""
    value = _number("--font-size", text)
    # lazy: the check's module loads matplotlib, which `showwork --help` must not; a given --font-size may
    from showwork.report.figures.style import check_font_size

    return _checked(check_font_size, value)


def _checked(check, value):
    """``check(value)``, its InputError as argparse's error (the one message, without its full stop: argparse adds its own)."""
    try:
        return check(value)
    except InputError as error:
        raise argparse.ArgumentTypeError(str(error).rstrip(".")) from None


def parse_budgets(text: str) -> list[float]:
    """Parse ``--k``: ``K``, ``A..B`` (integers, inclusive), or a comma list of those; reals allowed for single values."""
    out: list[float] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            raise argparse.ArgumentTypeError(f"--k has an empty item in {text!r}")
        if ".." in part:
            lo_text, _, hi_text = part.partition("..")
            try:
                lo, hi = int(lo_text), int(hi_text)
            except ValueError:
                raise argparse.ArgumentTypeError(f"--k range {part!r} must be two integers, like 1..50") from None
            if lo < 1 or hi < lo:
                raise argparse.ArgumentTypeError(f"--k range {part!r} must satisfy 1 <= start <= end")
            if hi - lo >= 10_000_000:
                raise argparse.ArgumentTypeError(f"--k range {part!r} has more than 10 million budgets")
            out.extend(float(v) for v in range(lo, hi + 1))
        else:
            try:
                value = float(part)
            except ValueError:
                raise argparse.ArgumentTypeError(f"--k value {part!r} is not a number") from None
            if not (math.isfinite(value) and value >= 1):
                raise argparse.ArgumentTypeError(f"--k values must be finite and at least 1 (got {part})")
            out.append(value)
    return out


def integer(name: str, minimum: int | None = None, maximum: int | None = None):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be an integer, not {text!r}") from None
        if minimum is not None and value < minimum:
            raise argparse.ArgumentTypeError(f"{name} must be at least {minimum} (got {text})")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"{name} must be at most {maximum:,} (got {text})")
        return value

    return parse


def add_run_options(p: argparse.ArgumentParser, tracking_help: str) -> None:
    """Where a search runs and records: the options `search` and `resume` share."""
    add_storage_option(p)
    p.add_argument("--tracking-uri", metavar="URI", help=tracking_help)
    p.add_argument("--address", metavar="ADDR", help="an existing Ray cluster (default $RAY_ADDRESS, else a local Ray on 127.0.0.1)")
    p.add_argument("--num-cpus", type=integer("--num-cpus", minimum=1), metavar="N",
                   help="CPUs the local Ray offers to trials (default: all of this machine's); not with --address")
    p.add_argument("--no-progress", action="store_true", help="no live progress display")


def add_override_options(p: argparse.ArgumentParser) -> None:
    """The search-space fields that `validate` and `search` let the command line override."""
    p.add_argument("--name", help="override the search's name (its ledger and MLflow experiment)")
    p.add_argument("--num-trials", type=integer("--num-trials"), metavar="N", help="override num_trials (raise it and --resume to add trials)")
    p.add_argument("--seed", type=integer("--seed"), metavar="S", help="override the search's seed")
    p.add_argument("--max-concurrent", type=integer("--max-concurrent"), metavar="N", help="override max_concurrent")
    p.add_argument("--fail-fast-after", type=integer("--fail-fast-after", 0), metavar="N",
                   help="override fail_fast_after: stop when the first N trials to end all failed with the same error (0: never)")


def override_values(args: argparse.Namespace) -> dict:
    """The values of :func:`add_override_options` by spec key (None where not given): `validate` and `search` alike."""
    return {"name": args.name, "num_trials": args.num_trials, "seed": args.seed, "max_concurrent": args.max_concurrent,
            "fail_fast_after": args.fail_fast_after}


def add_band_options(p: argparse.ArgumentParser) -> None:
    """The bands' settings, the same for `curve`, `compare` and `report`."""
    p.add_argument("--confidence", type=probability("--confidence"), default=0.8, help="simultaneous band confidence (default 0.8)")
    p.add_argument("--method", choices=BAND_METHODS, default="ld-hd", help="CDF band method (default ld-hd)")
    p.add_argument("--quantile", type=probability("--quantile"), default=0.5, help="quantile tuning curve (default 0.5: median)")


def add_curve_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--score", required=True, metavar="COLUMN", help="column holding the validation score")
    p.add_argument("--min", dest="minimize", action="store_true", help="lower scores are better (losses)")
    p.add_argument("--a", type=finite("--a"), metavar="A", help="lower bound of the score's support (e.g. 0)")
    p.add_argument("--b", type=finite("--b"), metavar="B", help="upper bound of the score's support (e.g. 1)")
    add_band_options(p)
    p.add_argument(
        "--failed",
        choices=FAILURE_POLICIES,
        default="error",
        help="trials with a missing, NaN or infinite score: refuse (error, default), count as the worst value, or exclude",
    )


def add_extrapolation_options(p: argparse.ArgumentParser) -> None:
    """``--extrapolate K`` and ``--tail-fraction F``: the extrapolated tuning curve of `curve`, `compare` and `report`."""
    p.add_argument("--extrapolate", type=integer("--extrapolate", minimum=2, maximum=EXTRAPOLATION_MAX_K), metavar="K",
                   help="also extrapolate the tuning curve to budget K (a whole number above the budgets shown) by the"
                   " noisy-quadratic law of the best trials (Lourie, He & Cho 2025); every extrapolated number is labelled"
                   " model-based, and where the law does not fit the extrapolation is refused with the reason")
    add_tail_fraction_option(p)


def add_tail_fraction_option(p: argparse.ArgumentParser) -> None:
    """``--tail-fraction F``: the pre-registered share of the trials an extrapolation's law is fitted to."""
    p.add_argument("--tail-fraction", type=probability("--tail-fraction"), metavar="F",
                   help=f"the extrapolation's share of the trials, the best ones, the law is fitted to (default"
                   f" {EXTRAPOLATION_TAIL_FRACTION:g}); fix it before reading the scores: it is stated in every output")


def add_storage_option(p: argparse.ArgumentParser) -> None:
    """``--storage``: the ledger directory of every command that reads or runs a search."""
    p.add_argument("--storage", default=DEFAULT_STORAGE, metavar="DIR", help=f"ledger directory (default ./{DEFAULT_STORAGE})")


def add_reduce_option(p: argparse.ArgumentParser) -> None:
    """``--reduce``: which value of a ray: source's metric is a trial's score."""
    p.add_argument("--reduce", choices=("last", "best"), default="last", help="ray: sources: each trial's last or best value of --score (default last)")

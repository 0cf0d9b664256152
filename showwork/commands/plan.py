"""``showwork plan``: trials for one fixed n (``--k``), or what a race's schedule costs (``--looks``)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
from typing import Any

from showwork.commands.options import (
    add_storage_option,
    add_tail_fraction_option,
    finite,
    finite_list,
    integer,
    positive,
    probability,
)
from showwork.commands.scores import band_spec
from showwork.constants import BAND_METHODS, FAILURE_POLICIES  # no imports of their own: --help stays instant
from showwork.errors import InputError
from showwork.escaping import terminal_text

DEFAULT_RACES = 1_000
"""Simulated races of ``plan --pilot``: the Monte Carlo error of a probability is at most 0.016 (one SE)."""


def add_to(commands: Any) -> None:
    """Add the command's parser to ``commands`` (argparse sub-parsers)."""
    plan = commands.add_parser(
        "plan",
        help="number of trials needed for informative bands up to a budget, or what a race's looks cost",
        description="Smallest number of trials whose median-curve bands stay informative (below the"
        " trivial bound) up to budget K (--k). With --looks N1,N2,...: a race's schedule (showwork race)"
        " — per look the joint pointwise level c* at which each model's bands hold at every look at once,"
        " and the informative budget with those bands and with fixed-n bands; with --pilot A B and"
        " --decide-at K, where races between models like the pilots would stop (simulated by bootstrap:"
        " each simulated search draws its trials with replacement from its pilot's scores).",
    )
    plan.add_argument("--k", type=finite("--k"), metavar="K", help="largest budget to bound (>= 1): plan one fixed n")
    plan.add_argument("--looks", metavar="N1,N2,...", help="a race's schedule of looks (trials per model, increasing)")
    plan.add_argument("--confidence", type=probability("--confidence"), default=0.8, help="band confidence (default 0.8)")
    plan.add_argument("--method", choices=BAND_METHODS, default="ld-hd", help="band method (default ld-hd; --looks: ld-hd or ld-et)")
    plan.add_argument("--quantile", type=probability("--quantile"), default=0.5, help="quantile tuning curve (default 0.5)")
    plan.add_argument("--min", dest="minimize", action="store_true", help="lower scores are better (matters for quantiles other than 0.5)")
    pilot = plan.add_argument_group("expected stopping point of a race (with --looks)")
    pilot.add_argument("--pilot", nargs=2, metavar=("A", "B"), help="two pilot searches, one per model, each a search's name"
                       " (its ledger in --storage), a results file (.csv, .tsv, .jsonl; optionally .gz) or ray:PATH,"
                       " read as `showwork report` reads them")
    pilot.add_argument("--score", metavar="COLUMN", help="the pilots' score column (results files and ray: sources)")
    add_storage_option(pilot)
    pilot.add_argument("--failed", choices=FAILURE_POLICIES, default="error",
                       help="pilot trials with a missing, NaN or infinite score: refuse (error, default), count as the worst"
                       " finished score, or exclude")
    pilot.add_argument("--decide-at", type=finite_list("--decide-at"), metavar="K[,K2,...]",
                       help="the race's budgets (each >= 1; the winner must be resolved at every one)")
    pilot.add_argument("--races", type=integer("--races", minimum=1, maximum=1_000_000), default=DEFAULT_RACES,
                       help=f"simulated races (default {DEFAULT_RACES:,})")
    pilot.add_argument("--seed", type=integer("--seed"), default=0, help="seed of the simulated races (default 0)")
    within = plan.add_argument_group("trials to come within EPS of the best score more tuning can reach")
    within.add_argument("--within", type=positive("--within"), metavar="EPS",
                        help="how many trials the median best needs to come within EPS of the asymptote of the scores of"
                        " --scores, by the noisy-quadratic law fitted to their best trials and for every law consonant with"
                        " them (model-based: Lourie, He & Cho 2025); --score, --min and --failed as for --pilot")
    within.add_argument("--scores", metavar="SOURCE", help="with --within: a search's name (its ledger in --storage), a results"
                        " file or ray:PATH")
    add_tail_fraction_option(within)
    plan.add_argument("--json", action="store_true", help="print one JSON object")
    plan.set_defaults(handler=_run_plan)


def _run_plan(args: argparse.Namespace) -> int:
    if args.within is not None or args.scores is not None:
        given = [option for option, value in (("--k", args.k), ("--looks", args.looks), ("--pilot", args.pilot)) if value]
        if given:
            raise InputError(f"--within plans from one search's scores: it takes no {', '.join(given)}")
        return _run_plan_within(args)
    if args.tail_fraction is not None:
        raise InputError("--tail-fraction applies to --within EPS --scores SOURCE")
    if args.looks is not None:
        if args.k is not None:
            raise InputError("give --k (one fixed n) or --looks (a race's schedule), not both; a race's budgets are --decide-at")
        return _run_plan_looks(args)
    if args.pilot or args.decide_at:
        raise InputError("--pilot and --decide-at plan a race: give its schedule with --looks N1,N2,...")
    if args.k is None:
        raise InputError("give --k K (the largest budget, for one fixed n) or --looks N1,N2,... (a race's schedule)")
    return _run_plan_k(args)


def _run_plan_k(args: argparse.Namespace) -> int:
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
    print(terminal_text(
        f"To bound the {_curve_name(args)} tuning curve up to"
        f" k = {args.k:g} with {args.method} bands at {args.confidence:g} confidence, run at least n = {n} trials"
        f" ({n / args.k:.2f} per unit of budget; with n = {n} the bands are informative up to k = {reach:.2f})."
    ))
    return 0


PLAN_EXTRAPOLATION_FACTOR = 10
"""``plan --within``: the scores are extrapolated to this many times their number of trials (its band is shown; the
trials to come within EPS are the law's, wherever they lie)."""


def _run_plan_within(args: argparse.Namespace) -> int:
    """``plan --within EPS --scores SOURCE``: trials for the median best to come within EPS of the asymptote, model-based."""
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    import numpy as np

    from showwork.report.sources import read_sources
    from showwork.report.wording import (
        MODEL_BASED,
        extrapolation_estimates_text,
        extrapolation_refused_text,
        tail_rule_text,
        trials_within_text,
    )
    from showwork.statistics import ArgumentError, tuning_curve
    from showwork.statistics.extrapolation import ExtrapolationRefused, extrapolate

    if args.within is None or args.scores is None:
        raise InputError("--within EPS and --scores SOURCE go together: the trials to come within EPS of the scores' asymptote")
    [family] = read_sources([args.scores], storage=args.storage, score=args.score, minimize=args.minimize)
    scores = _pilot_scores(args.scores, family, args)
    try:
        curve = tuning_curve(scores, np.arange(1.0, scores.size + 1), bands=band_spec(args), minimize=args.minimize,
                             name=args.scores)
        result = extrapolate(curve, PLAN_EXTRAPOLATION_FACTOR * scores.size, tail_fraction=args.tail_fraction)
    except ArgumentError as error:
        raise InputError(f"{args.scores}: score {family.metric!r}: {error}") from None
    if isinstance(result, ExtrapolationRefused):  # an answer, not an error: the reason, exit 0
        if args.json:
            print(json.dumps({"within": args.within, "scores": args.scores, "extrapolation": result.to_dict()}))
        else:
            print(terminal_text(extrapolation_refused_text(result)))
        return 0
    by_fit, every_law = result.trials_within(args.within)
    if args.json:
        print(json.dumps({"within": args.within, "scores": args.scores, "source": MODEL_BASED,
                          "trials_within": {"by_fit": by_fit, "every_consonant_law": every_law},
                          "extrapolation": result.to_dict()}, allow_nan=False))
        return 0
    print(terminal_text(trials_within_text(args.within, by_fit, every_law, args.minimize, args.quantile) + "."))
    print(terminal_text(f"Estimates: {extrapolation_estimates_text(result)}; the law is fitted to"
                        f" {tail_rule_text(result.tail_fraction, result.n_tail, result.n)}."))
    return 0


def _curve_name(args: argparse.Namespace) -> str:
    return "median" if args.quantile == 0.5 else f"{args.quantile:g}-quantile"


def _run_plan_looks(args: argparse.Namespace) -> int:
    """``plan --looks``: the schedule's joint level and informative budgets per look; with pilots, simulated races."""
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    from showwork.statistics import ArgumentError, LookSchedule, informative_budget

    try:
        schedule = LookSchedule.parse(args.looks)
        fixed = band_spec(args)
        joint = dataclasses.replace(fixed, looks=schedule.looks)  # refuses DKW/KS: the joint level is an LD level
        rows = []
        for n in schedule.looks:
            level, exact = joint.critical_level(n)
            rows.append({"look": n, "critical_coverage": level, "exact": exact,
                         "informative_k": _finite(informative_budget(n, minimize=args.minimize, bands=joint)),
                         "informative_k_fixed_n": _finite(informative_budget(n, minimize=args.minimize, bands=fixed))})
    except ArgumentError as error:
        raise InputError(f"--looks {args.looks}: {error}") from None
    races = _simulated_races(args, joint) if args.pilot or args.decide_at else None
    if args.json:
        print(json.dumps({"looks": list(schedule.looks), "confidence": args.confidence, "method": args.method,
                          "quantile": args.quantile, "per_look": rows, "races": races}, allow_nan=False))
        return 0
    _print_schedule(args, schedule.looks, rows)
    if races is not None:
        _print_races(args, races)
    return 0


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _print_schedule(args: argparse.Namespace, looks, rows) -> None:
    print(terminal_text(f"Race at looks {','.join(map(str, looks))}: {args.method} bands of the {_curve_name(args)} curve, each model's"
                        f" bands holding at every look at once with confidence {args.confidence:g}"))
    print("  look  trials  joint c*   exact  informative k (joint bands)  (fixed-n bands)")
    for i, row in enumerate(rows, 1):
        joint, fixed = (f"{k:.2f}" if k is not None else "inf" for k in (row["informative_k"], row["informative_k_fixed_n"]))
        print(terminal_text(f"  {i:>4}  {row['look']:>6}  {row['critical_coverage']:.6f}  {'yes' if row['exact'] else 'no ':>5}"
                            f"  {joint:>27}  {fixed:>15}"))
    if not all(row["exact"] for row in rows):
        print("  exact no: the schedule is beyond the exact computation; c* solves a bound (Hunter-Worsley) and the"
              " joint coverage is at least the confidence")
    last = rows[-1]
    if last["informative_k"] is not None and last["informative_k_fixed_n"] is not None:
        print(terminal_text(f"What the looks cost: at n = {last['look']} the joint bands are informative up to k = {last['informative_k']:.2f},"
                            f" one look at n = {last['look']} up to k = {last['informative_k_fixed_n']:.2f}; a budget K can be decided"
                            " only at the looks whose informative k is at least K."))


def _simulated_races(args: argparse.Namespace, joint) -> dict:
    """``--pilot A B --decide-at K``: races resampling the pilots (bootstrap), summarised."""
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    import numpy as np

    from showwork.report.sources import read_sources
    from showwork.statistics import simulate_races

    if not (args.pilot and args.decide_at):
        raise InputError("--pilot A B and --decide-at K go together: the races resample the pilots and decide at K")
    if args.pilot[0] == args.pilot[1]:
        raise InputError("--pilot: the same file is given twice")
    if any(k < 1 for k in args.decide_at):
        raise InputError(f"--decide-at values must be at least 1 (got {','.join(f'{k:g}' for k in args.decide_at)})")
    pilots = {source: _pilot_scores(source, family, args)
              for source, family in zip(args.pilot, read_sources(args.pilot, storage=args.storage, score=args.score,
                                                                  minimize=args.minimize))}
    last = joint.looks[-1]

    def bootstrap(scores):
        return lambda rng: rng.choice(scores, size=last, replace=True)

    a, b = args.pilot
    simulation = simulate_races(bootstrap(pilots[a]), bootstrap(pilots[b]), joint, args.decide_at, args.races, args.seed,
                                minimize=args.minimize, names=(a, b))
    return simulation.summary() | {"decide_at": list(args.decide_at), "resampling": "bootstrap",
                                   "pilot_scores": {path: int(np.size(s)) for path, s in pilots.items()}}


def _pilot_scores(source: str, family, args: argparse.Namespace):
    """A pilot's scores to resample: its trials with --failed applied (a trial that did not finish counts as failed)."""
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    import numpy as np

    from showwork.statistics import ArgumentError, FailedTrialsError, apply_failure_policy

    if family.minimize != args.minimize:
        raise InputError(f"{source}: the search {'minimizes' if family.minimize else 'maximizes'} {family.metric!r};"
                         f" {'give' if family.minimize else 'leave out'} --min")
    finished = np.array([status == "finished" for status in family.statuses], dtype=bool)
    raw = np.where(finished, np.asarray(family.scores, dtype=float), np.nan)
    try:
        scores, _ = apply_failure_policy(raw, args.failed, args.minimize)
    except FailedTrialsError as error:  # named as the source numbers its trials, with the option that decides
        message = error.what(f"trial {error.failed[0] + 1}").replace("choose a failure policy:", "choose --failed:")
        raise InputError(f"{source}: score {family.metric!r}: {message}") from None
    except ArgumentError as error:
        raise InputError(f"{source}: score {family.metric!r}: {error}") from None
    if scores.size < 2:
        raise InputError(f"{source}: score {family.metric!r}: a pilot needs at least two scores to resample (got {scores.size})")
    return scores


def _print_races(args: argparse.Namespace, races: dict) -> None:
    pilots = ", ".join(f"{path} ({n} scores)" for path, n in races["pilot_scores"].items())
    print(terminal_text(f"\nSimulated races ({races['races']:,}, seed {races['seed']}), each search resampling its pilot"
                        f" with replacement (bootstrap) — {pilots}; decided at K = {','.join(f'{k:g}' for k in races['decide_at'])}:"))
    stops = ", ".join(f"look {n} {p:.3f}" for n, p in races["stop_probability"].items())
    print(terminal_text(f"  P(stop): {stops}; never (undecided after the last look) {1 - races['stop_probability_any']:.3f}"))
    print(terminal_text(f"  trials per model: median {races['median_trials']:g}, mean {races['mean_trials']:.1f};"
                        f" expected trials saved against the last look: {100 * races['trials_saved']:.1f} %"))
    wins = ", ".join(f"{name} {p:.3f}" for name, p in races["wins"].items() if name != "none")
    print(terminal_text(f"  winner: {wins}; undecided {races['wins']['none']:.3f}"))

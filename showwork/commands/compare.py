"""``showwork compare``."""

from __future__ import annotations

import argparse
import json
from typing import Any

from showwork.commands.options import add_curve_options, add_extrapolation_options, add_reduce_option, finite, parse_budgets
from showwork.commands.scores import band_spec, extrapolation_of, read_scores, tuning_curve_of
from showwork.commands.text import json_floats
from showwork.errors import InputError
from showwork.escaping import terminal_text
from showwork.results_table import read_results_table


def add_to(commands: Any) -> None:
    """Add the command's parser to ``commands`` (argparse sub-parsers)."""
    compare = commands.add_parser(
        "compare",
        help="evidence between the tuning curves of two or more results files",
        description="Compare tuning curves budget by budget: no / weak / fair / strong evidence"
        " (Lourie, Cho & He 2024), crossover budgets, and budgets to reach a target. A budget is resolved"
        " only where the evidence is strong within both informative budgets: the chance of any false"
        " resolved budget of a pair is at most 1 - c^2 for bands at confidence c (2(1 - c) under any dependence).",
    )
    compare.add_argument("files", nargs="+", help="one results file (.csv, .tsv, .jsonl; optionally .gz) or ray:PATH"
                         " per model family")
    add_curve_options(compare)
    add_reduce_option(compare)
    compare.add_argument("--k", type=parse_budgets, metavar="K", help="budgets: K, 1..K, or a comma list (default 1..min n)")
    compare.add_argument("--statistic", choices=("median", "mean"), default="median", help="curves to compare (default median)")
    compare.add_argument("--target", type=finite("--target"), help="also report the budget at which each curve reaches this score")
    compare.add_argument("--runtime", metavar="COLUMN", help="results files: per-trial runtime in seconds (for --cost runtime)")
    compare.add_argument("--cost", metavar="runtime|COLUMN", help="compare at equal total cost too: runtime (each trial's runtime in seconds: --runtime COLUMN, a ray: source's time)"
                         " or COLUMN (a per-trial cost such as epochs or FLOPs); each family at k = cost / its mean cost per trial,"
                         " failed trials included in the mean; with --failed exclude k counts successful trials, each costing"
                         " total cost / successful trials (Lourie et al. 2024, Dodge et al. 2019)")
    add_extrapolation_options(compare)
    compare.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    compare.set_defaults(handler=_run_compare)


def _run_compare(args: argparse.Namespace) -> int:
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    import numpy as np

    from showwork.report.wording import resolved_rule_text
    from showwork.statistics import ArgumentError, budgets_to_reach, compare_curves, informative_budget

    if len(args.files) < 2:
        raise InputError("compare needs at least two results files")
    if len(set(args.files)) != len(args.files):
        raise InputError("the same file is given twice")
    read = {f: read_scores(f, args, args.runtime) for f in args.files}
    scores = {f: r.scores for f, r in read.items()}
    k = args.k
    if k is None:
        k = list(np.arange(1, min(len(s) for s in scores.values()) + 1, dtype=float))
    bands = band_spec(args)
    curves = [tuning_curve_of(f, r, args, bands, k) for f, r in read.items()]
    try:
        pairs = compare_curves(curves, args.statistic)
    except ArgumentError as error:
        raise InputError(str(error)) from None
    cost = _compare_at_equal_cost(args, read, bands) if args.cost else None
    extrapolated = _extrapolated_evidence(args, curves, pairs) if args.extrapolate is not None else None
    reach = {c.name: budgets_to_reach(c, args.target) for c in curves} if args.target is not None else None
    # Past a curve's informative budget a band end is the score's bound: a budget found there is an
    # extrapolation (the report's target table says the same). The pessimistic band holds everywhere.
    informative = {c.name: informative_budget(c.band.n, minimize=args.minimize, bands=bands) for c in curves} if reach else {}
    pessimistic = ("median_upper", "mean_upper") if args.minimize else ("median_lower", "mean_lower")
    if args.json:
        out = {
            "statistic": args.statistic,
            "method": args.method,
            "confidence": args.confidence,
            "curves": [c.to_dict() for c in curves],
            "pairs": [p.to_dict() for p in pairs],
            "budgets_to_reach": reach,
            "informative_k": informative if reach is not None else None,
            "target": args.target,
            "cost": None if cost is None else {
                "cost": args.cost, "unit": cost[0], "mean_costs": cost[1], "axis": json_floats(cost[2][0].k),
                "pairs": [p.to_dict() | {"k_a": json_floats(p.k_a), "k_b": json_floats(p.k_b)} for p in cost[2]],
            },
            "extrapolation": extrapolated,
        }
        print(json.dumps(out, allow_nan=False))
        return 0
    print(terminal_text(f"{args.statistic} tuning curves, {args.method} bands at {args.confidence:g} confidence"))
    print(terminal_text(f"{resolved_rule_text(args.confidence)}\n"))
    _print_pairs(pairs)
    if cost is not None:
        unit, means, cost_pairs = cost
        shown = "; ".join(f"{name} {m:.4g}" for name, m in means.items())
        excluded = ("; under --failed exclude k counts successful trials, and a successful trial costs the failed attempts"
                    " it took too: total cost / successful trials" if args.failed == "exclude" else "")
        print(terminal_text(f"at equal cost ({args.cost}, in {unit}): each file at k = cost / its mean cost per trial ({shown});"
                            f" failed trials cost too and count in the mean{excluded}\n"))
        _print_pairs(cost_pairs, unit)
    if extrapolated is not None:
        _print_extrapolated(extrapolated)
    if reach is not None:
        print(terminal_text(f"budget (trials) to reach {args.target:g}; '-' = not within reach:"))
        for name, values in reach.items():
            limit = informative[name]
            shown = ", ".join(
                f"{key} {'-' if v is None else v}"
                + (f" (beyond k ≈ {limit:.3g}: more trials needed)" if v is not None and v > limit and key not in pessimistic else "")
                for key, v in values.items()
            )
            print(terminal_text(f"  {name}: {shown}"))
    return 0


def _print_pairs(pairs, unit: str | None = None) -> None:
    """Each pair's evidence by range (budget k, or total cost in ``unit``) and its crossovers."""
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    from showwork.report.wording import evidence_text, verdict_text

    name, fmt = ("k", "g") if unit is None else ("cost", ".4g")
    suffix = "" if unit is None else f" {unit}"
    for p in pairs:
        print(terminal_text(f"{p.a}  vs  {p.b}"))
        for r in p.ranges:
            span = (f"{name} = {r.k_start:{fmt}}" if r.k_start == r.k_end else f"{name} = {r.k_start:{fmt}}..{r.k_end:{fmt}}") + suffix
            who = f" for {r.favoured}" if r.favoured else ""
            verdict = verdict_text(r.resolved, r.level, p.confidence, p.independent)
            if r.k_start > p.informative_k and p.informative_k < p.k[0]:
                verdict = "unresolved: at every point compared at least one band is uninformative"
            elif r.k_start > p.informative_k:
                verdict = f"unresolved: beyond {name} = {p.informative_k:{'.1f' if unit is None else '.4g'}}{suffix} at least one band is uninformative"
            print(terminal_text(f"  {span}: {evidence_text(r.level)}{who} ({verdict})"))
        cross = ", ".join(f"{c:{fmt}}" for c in p.crossovers) or "none"
        print(terminal_text(f"  point estimates cross at {name} = {cross}{suffix if p.crossovers else ''}\n"))


def _compare_at_equal_cost(args: argparse.Namespace, read: dict, bands):
    """``compare --cost``: (unit, mean cost per trial of each file, the pairs compared on the cost axis)."""
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    import warnings

    import numpy as np

    from showwork.statistics import ArgumentError, apply_failure_policy, compare_curves, cost_per_trial, equal_cost_axis

    means, counted = {}, {}
    for path, (scores, runtimes, _) in read.items():
        if args.cost == "runtime":
            if runtimes is None:
                raise InputError(f"{path}: --cost runtime needs each trial's runtime: give --runtime COLUMN")
            costs = runtimes
        elif path.startswith("ray:"):
            raise InputError(f"{path}: a ray: source's cost is its runtime: use --cost runtime")
        else:
            costs = read_results_table(path).runtime_column(args.cost)  # numbers >= 0, like runtimes
        try:
            with warnings.catch_warnings():  # --failed exclude warns; the trial view's curves have said so
                warnings.simplefilter("ignore", UserWarning)
                failures = apply_failure_policy(scores, args.failed, args.minimize, bands.a, bands.b)[1]
            # per trial of the curve: the mean over all trials; under --failed exclude, the total cost over the successful ones
            means[path] = cost_per_trial(np.asarray(costs, dtype=float), failures)
        except ArgumentError as error:
            raise InputError(f"{path}: --cost {args.cost}: {error}") from None
        counted[path] = failures.n_counted
    try:
        axis, ks = equal_cost_axis(means, counted)
        curves = {path: tuning_curve_of(path, read[path], args, bands, ks[path]) for path in read}
        unit = "seconds" if args.cost == "runtime" else args.cost
        return unit, means, compare_curves(curves, args.statistic, axis=axis, axis_name=unit)
    except ArgumentError as error:
        raise InputError(str(error)) from None


def _extrapolated_evidence(args: argparse.Namespace, curves, pairs) -> dict:
    """``--extrapolate K``: each curve extrapolated to K (or its refusal), and per pair the evidence levels
    (:func:`~showwork.statistics.comparison.evidence`) between the two extrapolated bands at every budget past the
    pair's informative budget up to K; every such budget is model-based, never resolved."""
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    import numpy as np

    from showwork.report.wording import MODEL_BASED, extrapolation_assumption_text
    from showwork.statistics.comparison import evidence, evidence_ranges
    from showwork.statistics.extrapolation import Extrapolation

    if args.statistic != "median":
        raise InputError("--extrapolate compares the median (--quantile) curves: leave out --statistic mean")
    extrapolations = {c.name: extrapolation_of(c, args) for c in curves}
    out_pairs = []
    for p in pairs:
        ea, eb = extrapolations[p.a], extrapolations[p.b]
        if not (isinstance(ea, Extrapolation) and isinstance(eb, Extrapolation)):
            refused = [name for name, e in ((p.a, ea), (p.b, eb)) if not isinstance(e, Extrapolation)]
            out_pairs.append({"a": p.a, "b": p.b, "refused": f"no extrapolation of {' and '.join(refused)}"})
            continue
        past = ea.k > p.informative_k  # the budgets past where both exact bands are informative
        levels, favoured = evidence(ea.point[past], ea.lower[past], ea.upper[past], eb.point[past], eb.lower[past],
                                    eb.upper[past], minimize=args.minimize)
        k = ea.k[past]
        never = np.zeros(k.size, dtype=bool)  # all past the informative budget, none resolved
        ranges = evidence_ranges(k, levels, favoured, never, never, p.a, p.b)
        out_pairs.append({"a": p.a, "b": p.b, "source": MODEL_BASED,
                          "informative_k": p.informative_k if np.isfinite(p.informative_k) else None,
                          "k": json_floats(k), "levels": levels.tolist(), "favoured": favoured.tolist(),
                          "ranges": [r.__dict__ | {"source": MODEL_BASED} for r in ranges]})
    return {"K": args.extrapolate, "source": MODEL_BASED, "assumption": extrapolation_assumption_text(),
            "curves": {name: e.to_dict() for name, e in extrapolations.items()}, "pairs": out_pairs}


def _print_extrapolated(extrapolated: dict) -> None:
    """The model-based evidence past each pair's informative budget, every range labelled model-based."""
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    from showwork.report.wording import MODEL_BASED, evidence_text

    print(terminal_text(f"extrapolated to K = {extrapolated['K']} ({MODEL_BASED}: {extrapolated['assumption']}; never"
                        " resolved: no error bound holds without that assumption):"))
    for name, e in extrapolated["curves"].items():
        if "refused" in e:
            print(terminal_text(f"  {name}: no extrapolation: {e['refused']}"))
    for p in extrapolated["pairs"]:
        print(terminal_text(f"{p['a']}  vs  {p['b']}"))
        if "refused" in p:
            print(terminal_text(f"  {p['refused']}"))
            continue
        for r in p["ranges"]:
            span = f"k = {r['k_start']:g}" if r["k_start"] == r["k_end"] else f"k = {r['k_start']:g}..{r['k_end']:g}"
            who = f" for {r['favoured']}" if r["favoured"] else ""
            print(terminal_text(f"  {span}: {evidence_text(r['level'])}{who} ({MODEL_BASED})"))
        print()

"""``showwork curve``."""

from __future__ import annotations

import argparse
import json
import math
import os
from typing import Any

from showwork.commands.options import add_curve_options, add_extrapolation_options, add_reduce_option, parse_budgets, positive
from showwork.commands.scores import band_spec, extrapolation_of, read_scores, tuning_curve_of
from showwork.commands.text import format_score, progress_line, table_lines
from showwork.constants import COST_UNITS  # no imports of their own: --help stays instant
from showwork.escaping import terminal_text


def add_to(commands: Any) -> None:
    """Add the command's parser to ``commands`` (argparse sub-parsers)."""
    curve = commands.add_parser(
        "curve",
        help="tuning curve with confidence bands from a results file",
        description="Estimate the tuning curve (V, U, median with simultaneous bands, mean bands) from a table"
        " of random-search results: CSV, TSV or JSON lines (Ray Tune, W&B, MLflow exports, opda data).",
    )
    curve.add_argument("file", help="results file (.csv, .tsv, .jsonl; optionally .gz), or ray:PATH (a Ray Tune experiment folder)")
    add_curve_options(curve)
    add_reduce_option(curve)
    curve.add_argument("--k", type=parse_budgets, metavar="K", help="budgets: K, 1..K, or a comma list (default 1..n)")
    curve.add_argument("--runtime", metavar="COLUMN", help="column of per-trial runtimes in seconds (adds a cost axis)")
    curve.add_argument("--cost-unit", choices=tuple(COST_UNITS), default="hours", help="unit of the cost axis (default hours)")
    curve.add_argument("--gpus-per-trial", type=positive("--gpus-per-trial"), default=1.0, help="GPUs each trial held, for gpu-hours (default 1)")
    add_extrapolation_options(curve)
    curve.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    curve.set_defaults(handler=_run_curve)


_CURVE_EVERY_BUDGET_MAX_N = 10_000  # above this many scores the default budgets are a grid, not 1..n


_PROGRESS_MIN_N = 50_000  # from about this many scores `curve` takes seconds: say what it is doing


_PROGRESS_MIN_BYTES = 8 << 20


def _run_curve(args: argparse.Namespace) -> int:
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    import numpy as np

    from showwork.statistics import informative_budget

    try:
        if os.stat(args.file).st_size >= _PROGRESS_MIN_BYTES:
            progress_line(f"reading {args.file} …")
    except OSError:
        pass  # the reader gives the error
    read = read_scores(args.file, args, args.runtime)
    scores, runtimes = read.scores, read.runtimes
    k, grid_note = args.k, None
    n = int(np.isfinite(np.asarray(scores, dtype=float)).sum()) if args.failed == "exclude" else len(scores)
    if k is None and n > _CURVE_EVERY_BUDGET_MAX_N:
        # lazy: `showwork --help` imports every command's module; these load when the command runs
        from showwork.report.analysis import GRID_DENSE, GRID_SPARSE_POINTS, budget_grid

        k = budget_grid(n)
        grid_note = (
            f"budgets: every k up to {GRID_DENSE}, then {GRID_SPARSE_POINTS} geometric steps up to n"
            f" (the default above {_CURVE_EVERY_BUDGET_MAX_N:,} trials; --k 1..{n} gives every budget)"
        )
    if n >= _PROGRESS_MIN_N:
        progress_line(f"computing the {args.method} band and the tuning curves for n = {n:,} …")
    bands = band_spec(args)
    curve = tuning_curve_of(args.file, read, args, bands, k, runtimes)
    informative = informative_budget(curve.n, minimize=args.minimize, bands=bands)
    extrapolation = extrapolation_of(curve, args)
    if args.json:
        out = curve.to_dict(args.cost_unit, args.gpus_per_trial)
        out["file"] = args.file
        out["score"] = args.score
        out["informative_budget"] = informative if math.isfinite(informative) else None
        out["budgets_note"] = grid_note
        out["critical_coverage_note"] = _critical_note(curve.band)
        if extrapolation is not None:
            out["extrapolation"] = extrapolation.to_dict()
        print(json.dumps(out, allow_nan=False))
        return 0
    _print_curve(curve, args, informative, grid_note)
    if extrapolation is not None:
        print()
        print_extrapolation(extrapolation)
    return 0


def _critical_note(band) -> str | None:
    """How the LD critical level was obtained, when it is not exact."""
    if band.critical_exact:
        return None
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    from showwork.statistics.critical_levels import EXACT_MAX_N, EXTRAPOLATION_COVERAGE_EXCESS

    return (
        f"extrapolated from the exact levels at n = {EXACT_MAX_N // 4:,} and {EXACT_MAX_N:,} (the exact recursion"
        f" costs ~n^1.5); conservative: the simultaneous coverage is between {band.confidence:g} and"
        f" {band.confidence + EXTRAPOLATION_COVERAGE_EXCESS:g}"
    )


def _print_curve(curve, args, informative: float, grid_note: str | None = None) -> None:
    band = curve.band
    q = "median" if curve.quantile == 0.5 else f"q={curve.quantile:g}"
    lines = [
        f"file: {args.file}  score: {args.score} ({'minimized' if curve.minimize else 'maximized'})",
        f"trials: {curve.failures.describe()}",
        f"bands: {band.method} at {band.confidence:g} simultaneous confidence"
        + (f", critical pointwise coverage {band.critical_coverage:.10g}" if band.critical_coverage is not None else ""),
        f"support: [{format_score(band.a)}, {format_score(band.b)}]; bands informative up to k = {informative:.1f}",
    ]
    if band.critical_coverage is not None and not band.critical_exact:
        lines.append(f"critical coverage {_critical_note(band)}")
    if grid_note is not None:
        lines.append(grid_note)
    if curve.mean_runtime_s is not None:
        per = ("per successful trial (all trials' runtime / successful trials: failed trials excluded)"
               if curve.failures.policy == "exclude" and curve.failures.n_failed else "per trial")
        lines.append(f"mean runtime: {curve.mean_runtime_s:.4g} s {per}")
    print(terminal_text("\n".join(lines) + "\n"))  # the file's and the score column's names are the user's
    header = ["k", "V", "U", q, "lower", "upper"]
    columns = [curve.k, curve.v, curve.u, curve.quantile_curve, curve.quantile_curve_lower, curve.quantile_curve_upper]
    if curve.mean_lower is not None:
        header += ["mean lower", "mean upper"]
        columns += [curve.mean_lower, curve.mean_upper]
    if curve.mean_runtime_s is not None:
        header.append(f"cost ({args.cost_unit})")
        columns.append(curve.cost(args.cost_unit, args.gpus_per_trial))
    rows = [[format_score(float(c[i])) for c in columns] for i in range(curve.k.size)]
    print("\n".join(table_lines(header, rows, right=True)))


def print_extrapolation(extrapolation) -> None:
    """The extrapolated curve (``--extrapolate``): its sentences, or the refusal's reason; then its band at the 1-2-5
    budgets up to K, each row's source named (an extrapolated number never reads as an observed one)."""
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    from showwork.report.analysis import table_budgets
    from showwork.report.wording import MODEL_BASED, extrapolation_refused_text, extrapolation_sentences
    from showwork.statistics.extrapolation import ExtrapolationRefused

    if isinstance(extrapolation, ExtrapolationRefused):
        print(terminal_text(extrapolation_refused_text(extrapolation)))
        return
    e = extrapolation
    q = "median" if e.quantile == 0.5 else f"q={e.quantile:g}"
    print(terminal_text(f"extrapolated {q} tuning curve to k = {e.K}:"))
    for sentence in extrapolation_sentences(e):
        print(terminal_text(f"  {sentence}"))
    header, columns = ["k", f"{q} (fit)", "lower", "upper"], [e.k, e.point, e.lower, e.upper]
    if e.mean_point is not None:  # with bounds a and b: the mean curve too (its bands conservative)
        header, columns = header + ["mean (fit)", "mean lower", "mean upper"], columns + [e.mean_point, e.mean_lower, e.mean_upper]
    shown = set(table_budgets(e.K))
    rows = [[format_score(float(c[i])) for c in columns] + [str(e.source[i])] for i in range(e.k.size) if int(e.k[i]) in shown]
    print("\n".join(table_lines([*header, "source"], rows, right=True)))
    print(terminal_text(f"source {MODEL_BASED}: the band past the informative budget holds only if the tail is noisy-quadratic"
                        + ("; the mean band is conservative" if e.mean_point is not None else "")))

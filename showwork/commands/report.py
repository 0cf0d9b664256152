"""``showwork report``."""

from __future__ import annotations

import argparse
import dataclasses
import math
import signal
import sys
import warnings
from typing import Any

from showwork.commands.options import (
    add_band_options,
    add_extrapolation_options,
    add_reduce_option,
    add_storage_option,
    figure_curves,
    figure_formats,
    figure_size,
    finite,
    finite_list,
    font_size,
    parse_budgets,
)
from showwork.commands.searches import tracking_uri
from showwork.constants import (  # no imports of their own: --help stays instant
    COST_UNITS,
    DEFAULT_FIGURE_CURVES,
    FAILURE_POLICIES,
    FIGURE_CURVES,
    FIGURE_SIZE_INCHES,
    FONT_SIZE_POINTS,
    MAX_STYLE_FILE_BYTES,
)
from showwork.errors import InputError
from showwork.escaping import terminal_text
from showwork.tracking.errors import TrackingUnavailableError


def add_to(commands: Any) -> None:
    """Add the command's parser to ``commands`` (argparse sub-parsers)."""
    report = commands.add_parser(
        "report",
        help="tuning curves, comparisons and the reproducibility checklist of one or more searches",
        description="Report one or more random searches: tuning-curve and CDF figures (PNG, SVG, PDF), tables,"
        " evidence between families, advice on the number of trials, and the reproducibility checklists"
        " (Dodge et al. 2019, ACL Rolling Review C1-C4, NeurIPS 4-8), written to --out as Markdown, one"
        " self-contained HTML page, LaTeX snippets and JSON, and logged on each search's MLflow parent run.",
    )
    report.add_argument(
        "sources",
        nargs="*",
        metavar="SOURCE",
        help="a search name (its ledger under --storage), a results file (.csv, .tsv, .jsonl; needs --score),"
        " mlflow:EXPERIMENT (an MLflow experiment name or id, or a parent run id; see --tracking-uri),"
        " ray:PATH (a Ray Tune experiment folder, storage_path/name; needs --score)"
        " or optuna:STORAGE_URL (an Optuna storage, e.g. optuna:sqlite:///optuna.db; see --study)",
    )
    report.add_argument("--race", metavar="RACE", help="instead of SOURCEs: the race RACE of --storage (`showwork race`): its two"
                        " searches' first n trials, n the look it stopped at, with its joint bands and a Sequential comparison section")
    report.add_argument("--out", required=True, metavar="DIR", help="directory that receives every output")
    add_storage_option(report)
    report.add_argument("--tracking-uri", metavar="URI", help="MLflow store of mlflow: sources (default $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db here)")
    report.add_argument("--label", action="append", metavar="NAME", help="name of a source's family in the report (repeat, in source order)")
    report.add_argument("--score", metavar="COLUMN", help="results files, plain MLflow runs and ray: sources: the validation-score column or metric"
                        " (optuna: sources: the objective of a multi-objective study)")
    report.add_argument("--runtime", metavar="COLUMN", help="results files: per-trial runtime in seconds (time axis, compute)")
    report.add_argument("--test", metavar="COLUMN", help="results files: per-trial test score (optuna: sources: a trial user attribute)")
    report.add_argument("--params", metavar="COLUMNS", help="results files: comma list of hyperparameter columns")
    report.add_argument("--group", metavar="COLUMN", help="results files: one family per value of this column")
    report.add_argument("--min", dest="minimize", action="store_true", help="results files and ray: sources: lower scores are better (losses; optuna: sources use the study's direction)")
    add_reduce_option(report)
    report.add_argument("--study", metavar="NAME", help="optuna: sources: the study (may be left out when the storage holds one)")
    report.add_argument("--sampler", metavar="NAME", help="every source: how the trials were drawn, where the source does not"
                        " record it (results files, other programs' MLflow runs, an Optuna study without a trace, a Ray"
                        " experiment without its tuner.pkl): random asserts i.i.d. draws, as the bands assume; anything"
                        " else is reported as not i.i.d.; refused where it contradicts the record")
    report.add_argument("--a", type=finite("--a"), metavar="A", help="lower bound of the score (default: the search's metric bounds)")
    report.add_argument("--b", type=finite("--b"), metavar="B", help="upper bound of the score (default: the search's metric bounds)")
    add_band_options(report)
    report.add_argument("--failed", choices=FAILURE_POLICIES, help="failed trials: error, worst or exclude (default: each search's policy, else worst)")
    report.add_argument("--k", type=parse_budgets, metavar="K", help="budgets of the curves: K, 1..K, or a comma list (default 1..largest n)")
    report.add_argument("--at", type=parse_budgets, metavar="K", help="budgets of the tables (default 1, 2, 5, 10, ... up to the largest n)")
    report.add_argument("--target", type=finite_list("--target"), metavar="SCORES", help="comma list of scores: budget needed to reach each")
    add_extrapolation_options(report)
    report.add_argument("--bound-k", type=finite("--bound-k"), metavar="K", help="budget the advice plans for (default: the next round budget past the bands' reach)")
    report.add_argument("--cost-unit", choices=tuple(COST_UNITS), default="hours", help="unit of the time axis and compute totals (default hours)")
    report.add_argument("--cost", metavar="runtime|COLUMN", help="compare at equal total cost too: runtime (each trial's runtime in seconds: a search's runtime_s, --runtime COLUMN of a results file)"
                         " or COLUMN (a per-trial cost such as epochs or FLOPs); each family at k = cost / its mean cost per trial,"
                         " failed trials included in the mean; with --failed exclude k counts successful trials, each costing"
                         " total cost / successful trials (the failed attempts it took) (Lourie et al. 2024, Dodge et al. 2019)"
                        " (COLUMN: a results-file column, or a hyperparameter or metric of each trial; the figure comparison_cost)")
    report.add_argument("--gpus-per-trial", type=finite("--gpus-per-trial"), metavar="G", help="GPUs each trial held (default: the search's resources)")
    report.add_argument("--grid-intensity", type=finite("--grid-intensity"), metavar="G",
                        help="gCO2e per kWh of the electricity the GPUs used: the checklist gives the recorded GPU energy in gCO2e too")
    by = report.add_mutually_exclusive_group()
    by.add_argument("--by", metavar="PARAM", help="one curve per value of this categorical or discrete hyperparameter, from the trials"
                    " that drew it (i.i.d. draws of the search with PARAM fixed), with the evidence between values"
                    " (results files: a column; trials without PARAM, e.g. a `when:` condition, and values with too few trials are left out, each said in one line)")
    by.add_argument("--tuning-risk", metavar="PARAM=DEFAULT", help="compare tuning every hyperparameter (all trials) with the trials"
                    " at PARAM's default (Weerts et al. 2020): per trial, and at equal cost with --cost")
    report.add_argument("--formats", type=figure_formats, default=("png", "svg", "pdf"), metavar="LIST",
                        help="figure formats among png, svg, pdf (fonts embedded as TrueType) and pgf (for LaTeX's \\input;"
                        " needs xelatex, lualatex or pdflatex) (default png,svg,pdf; png is always written)")
    _add_figure_style_options(report)
    x_scale = report.add_mutually_exclusive_group()
    x_scale.add_argument("--log-x", dest="log_x", action="store_const", const=True, default=None,
                         help="logarithmic budget axis (the default when the largest budget is over 100)")
    x_scale.add_argument("--linear-x", dest="log_x", action="store_const", const=False,
                         help="linear budget axis even when the largest budget is over 100")
    report.add_argument("--no-mlflow", action="store_true", help="do not log the report on the searches' MLflow parent runs")
    # None where not given: a race's report takes the race's bands, and refuses other ones given (see _bands)
    report.set_defaults(handler=_run_report, confidence=None, method=None, quantile=None)


def _add_figure_style_options(report: argparse.ArgumentParser) -> None:
    """The figures' look for a paper (FigureStyle): title, size, fonts, style file, score label."""
    look = report.add_argument_group("figures for a paper")
    look.add_argument("--no-title", dest="title", action="store_false", help="no figure titles (the caption says it)")
    (least_in, most_in), (least_pt, most_pt) = FIGURE_SIZE_INCHES, FONT_SIZE_POINTS
    look.add_argument("--figsize", type=figure_size, metavar="W,H", help="every figure's width and height in inches, e.g. 3.3,2.4"
                      f" (each {least_in:g} to {most_in:g})")
    look.add_argument("--font-size", type=font_size, metavar="PT", help=f"base font size in points (matplotlib's 10;"
                      f" {least_pt:g} to {most_pt:g})")
    look.add_argument("--style", metavar="FILE", help="a matplotlib style file (key: value lines, as matplotlibrc; at most"
                      f" {MAX_STYLE_FILE_BYTES // 1024} KiB) of appearance keys only: fonts, font sizes, line widths, colours,"
                      " grid, ticks, legend frame, axes.prop_cycle (docs/figures.md lists them)")
    look.add_argument("--score-label", metavar="TEXT", help="label of the score axis (default: the metric's name)")
    look.add_argument("--curves", type=figure_curves, default=DEFAULT_FIGURE_CURVES, metavar="LIST",
                      help=f"what the tuning-curve figures draw of each family, a comma list of {', '.join(FIGURE_CURVES)}: the"
                      " median curve and its band, the V and U estimates of the expected best, the mean curve's band"
                      f" (default {','.join(DEFAULT_FIGURE_CURVES)})")


def _report_families(args: argparse.Namespace) -> list:
    """Read every SOURCE of ``showwork report`` into FamilyResults, in order (:func:`showwork.report.sources.read_sources`)."""
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    from showwork.report.sources import read_sources

    params = [c.strip() for c in args.params.split(",") if c.strip()] if args.params else None
    needs_mlflow = any(source.startswith("mlflow:") for source in args.sources)
    return read_sources(args.sources, storage=args.storage, tracking_uri=tracking_uri(args.tracking_uri) if needs_mlflow else None,
                        score=args.score, runtime=args.runtime, test=args.test, params=_with_trial_columns(params, args),
                        group=args.group, minimize=args.minimize, reduce=args.reduce, study=args.study,
                        sampler=args.sampler, labels=args.label)


def _race(args: argparse.Namespace):
    """``--race RACE``: the race's record (:func:`showwork.report.sources.race_record`), after refusing what it does not take."""
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    from showwork.report.sources import race_record

    given = [option for option, value in (("SOURCE", args.sources), ("--label", args.label), ("--by", args.by),
                                          ("--tuning-risk", args.tuning_risk), ("--a", args.a), ("--b", args.b),
                                          ("--failed", args.failed)) if value]
    if given:
        raise InputError(f"--race reports the race's two searches as it decided them (their first n trials, its support"
                         f" and failure policy): it takes no {', '.join(given)}")
    return race_record(args.storage, args.race)


def _bands(args: argparse.Namespace, race) -> dict:
    """The report's band settings: the options (their defaults where not given); a race's, and no other, for --race."""
    if race is None:
        if not args.sources:
            raise InputError("give at least one SOURCE (a search, a results file, ...) or --race RACE")
        return {"confidence": 0.8 if args.confidence is None else args.confidence, "method": args.method or "ld-hd",
                "quantile": 0.5 if args.quantile is None else args.quantile, "a": args.a, "b": args.b,
                "failure_policy": args.failed}
    s = race.settings
    for option, given, own in (("--confidence", args.confidence, s.confidence), ("--method", args.method, s.method),
                               ("--quantile", args.quantile, 0.5)):
        if given is not None and given != own:
            raise InputError(f"{option} {given}: race {race.name!r} was decided with {own} (its record); its report"
                             " uses the race's bands")
    a, b = (None if not math.isfinite(x) else x for x in s.support)
    return {"confidence": s.confidence, "method": s.method, "quantile": 0.5, "a": a, "b": b,
            "failure_policy": s.failure_policy, "looks": s.looks}


def _with_trial_columns(params: list[str] | None, args: argparse.Namespace) -> list[str] | None:
    """The --params columns of a results file, and the per-trial columns --cost, --by and --tuning-risk name (read the same way)."""
    risk = getattr(args, "tuning_risk", None)
    columns = (getattr(args, "cost", None), getattr(args, "by", None), risk.split("=", 1)[0] if risk else None)
    extra = [c for c in columns if c and c != "runtime"]
    if not extra:
        return params
    return list(dict.fromkeys((params or []) + extra))


def _run_report(args: argparse.Namespace) -> int:
    """Write the report, then say what it found and log it to MLflow; stopped by SIGTERM or Ctrl-C, exit 128 + the signal.

    The signals are handled as a search handles them (:class:`~showwork.run.interrupts.Interrupts`): the first
    raises ``KeyboardInterrupt`` wherever the report is, so that :func:`~showwork.report.write_report` removes its
    staging folder on the way out (SIGTERM's default would end the process where it stands and leave it);
    later ones are ignored while it does.
    """
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    from showwork.report.output import WrittenThenInterrupted
    from showwork.run.interrupts import Interrupts

    with Interrupts() as interrupts, warnings.catch_warnings():
        try:
            report, files = _write(args)
        except WrittenThenInterrupted as stop:  # the signal came while the files moved in: held until they were
            return _stopped(interrupts, args, stop.files)
        except KeyboardInterrupt:
            return _stopped(interrupts, args, None)
        try:
            return _tell(args, report, files)
        except KeyboardInterrupt:
            return _stopped(interrupts, args, files)


def _stopped(interrupts, args: argparse.Namespace, files) -> int:
    """One line on stderr for a report stopped by a signal (SIGINT where none is known); its exit status."""
    # A file a library had open where the signal landed is closed as the traceback is dropped, with a
    # ResourceWarning (PIL's save closes its file on Exception only): not the user's business.
    warnings.simplefilter("ignore", ResourceWarning)
    signum = interrupts.signum or signal.SIGINT
    if files is None:
        print(terminal_text(f"showwork: stopped by {signal.Signals(signum).name}: nothing was written (--out {args.out} is as it"
                            " was)"), file=sys.stderr, flush=True)
    else:
        logged = "" if args.no_mlflow else "; it may not be logged to MLflow"
        print(terminal_text(f"showwork: stopped by {signal.Signals(signum).name} after the report was written to"
                            f" {files.directory}{logged}"), file=sys.stderr, flush=True)
    return 128 + signum


def _write(args: argparse.Namespace) -> tuple:
    """Read the sources, analyse them and write the report to --out; the report and its files."""
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    from showwork.report import FigureStyle, ReportSettings, analyze, write_report
    from showwork.report.sources import from_race
    from showwork.report.wording import sequential_sentences

    style = FigureStyle(title=args.title, figsize=args.figsize, font_size=args.font_size, style_file=args.style,
                        score_label=args.score_label, curves=args.curves)  # a bad style file: refused before the sources are read
    race = _race(args) if args.race else None
    bands = _bands(args, race)
    families = _report_families(args) if race is None else from_race(args.storage, race)
    settings = ReportSettings(
        **bands, budgets=tuple(args.k) if args.k else None,
        table_budgets=tuple(int(round(k)) for k in args.at) if args.at else None,
        targets=tuple(args.target or ()), bound_k=args.bound_k, cost_unit=args.cost_unit, gpus_per_trial=args.gpus_per_trial,
        grid_intensity=args.grid_intensity, cost=args.cost, extrapolate=args.extrapolate, tail_fraction=args.tail_fraction,
    )
    families, notes = _by_parameter(families, args, settings)
    report = dataclasses.replace(analyze(families, settings), notes=notes, race=race)
    for note in notes:  # the families' names and a parameter's values are the user's: shown, never acted on
        print(terminal_text(note))
    if race is not None:
        for sentence in sequential_sentences(race):
            print(terminal_text(sentence))
    return report, write_report(report, args.out, figure_formats=args.formats, log_x=args.log_x, figure_style=style)


def _tell(args: argparse.Namespace, report, files) -> int:
    """What the written report found, on stdout, and the report logged to each search's MLflow parent run."""
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    from showwork.report import log_report, report_artifact_path
    from showwork.report.inputs import iid_caveats
    from showwork.report.output import FROM_MLFLOW_ARTIFACTS
    from showwork.report.tables import failures_sentence
    from showwork.report.wording import extrapolation_paragraph, resolved_bound_text

    if report.reference is None:
        for family in report.families:
            print(terminal_text(f"{family.name}: {failures_sentence(family)}. {family.advice.text()}"))
            if family.extrapolation is not None:
                print(terminal_text(f"  {extrapolation_paragraph(family.extrapolation)}"))
        for pair in report.pairs:
            print(terminal_text(f"{pair.comparison.a} vs {pair.comparison.b}:"))
            for sentence in pair.sentences():
                print(terminal_text(f"  {sentence}"))
        _print_cost_view(report)
    else:  # many families: the ranking's verdict here, each family's in the report
        beaten = sum(1 for pair in report.pairs if pair.resolved_for(report.reference).size)
        print(terminal_text(
            f"{len(report.families)} families, ranked by their curves at k = {report.ranking_k:g}; best: {report.reference}."
            f" {report.reference} is shown better (strong evidence, resolved; {resolved_bound_text(report.settings.confidence, report.pairs_independent)}"
            f" per pair) than {beaten} of the other {len(report.pairs)}"
            " at some budget; the report compares each family with it (ranking table, summary figure)."))
    for caveat in iid_caveats([family.results for family in report.families]):  # one line per distinct reason
        print(terminal_text(f"not i.i.d.: {caveat}"))
    print(terminal_text(f"report: {files.html}  (also {files.markdown.name}, {files.json.name}, latex/, figures/ in {files.directory})"))
    if not args.no_mlflow:
        try:
            runs = log_report(report, files)
        except TrackingUnavailableError as error:  # the files are written; MLflow is a copy
            print(terminal_text(f"showwork: warning: the report was not logged to MLflow ({error})"), file=sys.stderr)
        else:
            path = report_artifact_path(report)
            kept = ("; read from MLflow's runs, it goes beside the search's own report/ (from its ledger), never over it"
                    if path.startswith(FROM_MLFLOW_ARTIFACTS) else "")
            for run_id in runs:
                print(terminal_text(f"logged to MLflow parent run {run_id} (artifacts: {path}/{kept})"))
    return 0


def _by_parameter(families: list, args: argparse.Namespace, settings) -> tuple[list, tuple[str, ...]]:
    """``--by PARAM`` and ``--tuning-risk PARAM=DEFAULT``: the families to report, and one line per trial set handled apart."""
    if not args.by and not args.tuning_risk:
        return families, ()
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    from showwork.report.by_param import split_by, tuning_risk_families
    from showwork.statistics import trials_needed

    least = trials_needed(1.0, minimize=any(f.minimize for f in families), bands=settings.bands)  # bands that bound k = 1
    if args.by:
        split = split_by(families, args.by, least)
    else:
        param, sep, default = args.tuning_risk.partition("=")
        if not sep or not param.strip() or not default.strip():
            raise InputError(f"--tuning-risk takes PARAM=DEFAULT, e.g. num_train_epochs=3 (got {args.tuning_risk!r})")
        split = tuning_risk_families(families, param.strip(), default.strip(), least)
    return list(split.families), split.notes


def _print_cost_view(report) -> None:
    """The report's cost view beside its trial view (``--cost``)."""
    if report.cost is None:
        return
    print(terminal_text(report.cost.note()))
    for pair in report.cost.pairs:
        print(terminal_text(f"{pair.comparison.a} vs {pair.comparison.b} at equal cost:"))
        for sentence in pair.sentences():
            print(terminal_text(f"  {sentence}"))

"""The ``showwork`` command line.

Only the standard library is imported at start-up so that ``showwork --help`` answers at once;
each command imports numpy/scipy and the statistics when it runs. Exit statuses: 0 done; 2 bad
input (a file, a column, an option value: one ``showwork: error: ...`` line on stderr); 1 an outage
(MLflow or the ledger's folder unavailable, the search busy in another driver: one line too), a
search in which no trial finished, or a bug (its traceback: ``main`` catches only
:class:`~showwork.errors.ShowworkError`); 130 (143) a search stopped by SIGINT (SIGTERM).
``showwork --debug COMMAND`` adds the traceback to the one line.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import sys
import warnings
from typing import Any, Callable, NamedTuple, Sequence

from showwork.constants import (  # no imports of their own: --help stays instant
    BAND_METHODS,
    COST_UNITS,
    DEFAULT_STORAGE,
    FAILURE_POLICIES,
)
from showwork.errors import InputError, ShowworkError
from showwork.values import value_text

EXIT_BAD_INPUT = 2  # = showwork.errors.EXIT_BAD_INPUT (kept here: the parser exits with it before any import)
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a Ctrl-C


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line (``showwork: error: ...``) and exit 2.

    No abbreviated options (``allow_abbrev=False``, for the parser and every command's, which are
    of this class): a shortened or misspelt option is an error, never silently read as another
    (``--cost`` taken for ``--cost-unit``).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        self.exit(EXIT_BAD_INPUT, f"showwork: error: {self.prog}: {message} (see '{self.prog} --help')\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; return its exit status.

    A :class:`~showwork.errors.ShowworkError` becomes one ``showwork: error: ...`` line and its
    exit code (2 for bad input, 1 for an outage); with ``--debug``, its traceback comes first.
    Any other exception is a bug: Python's traceback, exit 1. What the command writes to stdout and
    stderr, from any thread, is redacted (:mod:`showwork.redaction`): no value of a secret-looking
    environment variable, no password of a URI.
    """
    with _redacted_output():
        return _main(argv)


@contextlib.contextmanager
def _redacted_output():
    """Within the block, ``sys.stdout`` and ``sys.stderr`` pass their text on redacted."""
    from showwork.redaction import RedactedStream, Redactor

    redactor = Redactor.from_environment()
    streams = sys.stdout, sys.stderr
    wrapped = tuple(stream if stream is None else RedactedStream(stream, redactor) for stream in streams)
    sys.stdout, sys.stderr = wrapped
    try:
        yield
    finally:
        for stream in wrapped:
            with contextlib.suppress(AttributeError, OSError, ValueError):  # none, a closed pipe (`| head`), a closed stream
                stream.flush()
        sys.stdout, sys.stderr = streams


def _main(argv: Sequence[str] | None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "handler"):
        parser.print_help()
        return EXIT_BAD_INPUT
    try:
        # Each warning is printed when it happens (from any thread: the MLflow writer warns from its
        # own), not held until the command ends: a driver killed mid-search has already said it.
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            warnings.showwarning = _show_warning
            return args.handler(args)
    except ShowworkError as error:
        if args.debug:
            import traceback

            traceback.print_exc()
        print(f"showwork: error: {error}", file=sys.stderr)
        return error.exit_code
    except BrokenPipeError:  # e.g. `showwork curve ... | head`
        return 0
    except KeyboardInterrupt:  # Ctrl-C outside a search (a search reports its own interrupt)
        if args.debug:
            raise
        print("\nshowwork: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """``warnings.showwarning`` for the command line: one ``showwork: warning: ...`` line on stderr, at once."""
    if issubclass(category, DeprecationWarning):  # third-party deprecations are not the user's business
        return
    try:
        text = " ".join(part.strip() for part in str(message).splitlines() if part.strip())
        print(f"showwork: warning: {text}", file=sys.stderr, flush=True)
    except (OSError, ValueError):  # stderr closed or gone: a warning must never end the command
        pass


# --- argument parsing ----------------------------------------------------------------------


def _probability(name: str):
    def parse(text: str) -> float:
        from showwork.statistics.errors import ArgumentError, check_probability  # when an option is parsed, not for --help

        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number, not {text!r}") from None
        try:
            return check_probability(value, name)
        except ArgumentError as error:  # the library's one message, without its full stop (argparse adds its own text)
            raise argparse.ArgumentTypeError(str(error).rstrip(".")) from None

    return parse


def _finite(name: str):
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name} must be a number, not {text!r}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{name} must be finite (got {text})")
        return value

    return parse


def _positive(name: str):
    def parse(text: str) -> float:
        value = _finite(name)(text)
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{name} must be positive (got {text})")
        return value

    return parse


def _finite_list(name: str):
    def parse(text: str) -> list[float]:
        parse_one = _finite(name)
        items = [item.strip() for item in text.split(",")]
        if not all(items):
            raise argparse.ArgumentTypeError(f"{name} has an empty item in {text!r}")
        return [parse_one(item) for item in items]

    return parse


FIGURE_FORMATS = ("png", "svg", "pdf")


def _figure_formats(text: str) -> tuple[str, ...]:
    formats = tuple(dict.fromkeys(item.strip().lower() for item in text.split(",")))
    unknown = [f for f in formats if f not in FIGURE_FORMATS]
    if unknown or not formats:
        raise argparse.ArgumentTypeError(f"--formats must be a comma list of {', '.join(FIGURE_FORMATS)} (got {text!r})")
    return formats


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


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="showwork",
        description="Hyperparameter search and reporting that shows your work: tuning curves with exact confidence bands.",
    )
    from showwork import __version__

    parser.add_argument("--version", action="version", version=f"showwork {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error, not only its one line")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", parser_class=_Parser)

    curve = commands.add_parser(
        "curve",
        help="tuning curve with confidence bands from a results file",
        description="Estimate the tuning curve (V, U, median with simultaneous bands, mean bands) from a table"
        " of random-search results: CSV, TSV or JSON lines (Ray Tune, W&B, MLflow exports, opda data).",
    )
    curve.add_argument("file", help="results file (.csv, .tsv, .jsonl; optionally .gz), or ray:PATH (a Ray Tune experiment folder)")
    _add_curve_options(curve)
    curve.add_argument("--reduce", choices=("last", "best"), default="last", help="ray: sources: each trial's last or best value of --score (default last)")
    curve.add_argument("--k", type=parse_budgets, metavar="K", help="budgets: K, 1..K, or a comma list (default 1..n)")
    curve.add_argument("--runtime", metavar="COLUMN", help="column of per-trial runtimes in seconds (adds a cost axis)")
    curve.add_argument("--cost-unit", choices=tuple(COST_UNITS), default="hours", help="unit of the cost axis (default hours)")
    curve.add_argument("--gpus-per-trial", type=_positive("--gpus-per-trial"), default=1.0, help="GPUs each trial held, for gpu-hours (default 1)")
    curve.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    curve.set_defaults(handler=_run_curve)

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
    _add_curve_options(compare)
    compare.add_argument("--reduce", choices=("last", "best"), default="last", help="ray: sources: each trial's last or best value of --score (default last)")
    compare.add_argument("--k", type=parse_budgets, metavar="K", help="budgets: K, 1..K, or a comma list (default 1..min n)")
    compare.add_argument("--statistic", choices=("median", "mean"), default="median", help="curves to compare (default median)")
    compare.add_argument("--target", type=_finite("--target"), help="also report the budget at which each curve reaches this score")
    compare.add_argument("--runtime", metavar="COLUMN", help="results files: per-trial runtime in seconds (for --cost runtime)")
    compare.add_argument("--cost", metavar="runtime|COLUMN", help="compare at equal total cost too: runtime (each trial's runtime in seconds: --runtime COLUMN, a ray: source's time)"
                         " or COLUMN (a per-trial cost such as epochs or FLOPs); each family at k = cost / its mean cost per trial,"
                         " failed trials included in the mean (Lourie et al. 2024, Dodge et al. 2019)")
    compare.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    compare.set_defaults(handler=_run_compare)

    plan = commands.add_parser(
        "plan",
        help="number of trials needed for informative bands up to a budget",
        description="Smallest number of trials whose median-curve bands stay informative (below the"
        " trivial bound) up to budget K.",
    )
    plan.add_argument("--k", type=_finite("--k"), required=True, metavar="K", help="largest budget to bound (>= 1)")
    plan.add_argument("--confidence", type=_probability("--confidence"), default=0.8, help="band confidence (default 0.8)")
    plan.add_argument("--method", choices=BAND_METHODS, default="ld-hd", help="band method (default ld-hd)")
    plan.add_argument("--quantile", type=_probability("--quantile"), default=0.5, help="quantile tuning curve (default 0.5)")
    plan.add_argument("--min", dest="minimize", action="store_true", help="lower scores are better (matters for quantiles other than 0.5)")
    plan.add_argument("--json", action="store_true", help="print one JSON object")
    plan.set_defaults(handler=_run_plan)

    validate = commands.add_parser(
        "validate",
        help="check a search-space YAML file and print it resolved",
        description="Check a search-space file (what `showwork search` runs) and print it with defaults filled in"
        " and overrides applied, as YAML that loads back to the same search, then a table of its parameters"
        " (as YAML comments).",
    )
    validate.add_argument("space", metavar="SPACE", help="search-space YAML file")
    _add_override_options(validate)
    validate.add_argument(
        "--no-family", action="store_true",
        help="do not load the family (by default validate imports it, checks the trainable's signature and runs its"
        " check_data on the data section, as `showwork search` does before it starts; check_data is skipped when"
        " $RAY_ADDRESS names a cluster, whose data are its own)",
    )
    validate.set_defaults(handler=_run_validate)

    sample = commands.add_parser(
        "sample",
        help="print the configurations of the first trials of a search",
        description="Print the configurations (and training seeds) of trials 0..N-1 of a search space, exactly"
        " as `showwork search` will draw them: each is a pure function of (seed, trial index).",
    )
    sample.add_argument("space", metavar="SPACE", help="search-space YAML file")
    sample.add_argument("-n", type=_integer("-n", 1, 1_000_000), required=True, metavar="N", help="number of trials (1 to 1,000,000)")
    sample.add_argument("--seed", type=_integer("--seed"), metavar="S", help="override the search's seed")
    sample.add_argument("--json", action="store_true", help='one JSON object per line: {"trial", "seed", "params"}')
    sample.set_defaults(handler=_run_sample)

    search = commands.add_parser(
        "search",
        help="run (or resume) an i.i.d. random search on Ray Tune, tracked in MLflow",
        description="Run the random search described by a search-space file: one Ray Tune trial per sampled"
        " configuration, every trial recorded in the ledger (--storage) and in MLflow (--tracking-uri)."
        " Interrupt it at any time; --resume runs only the trials that have no record.",
    )
    search.add_argument("space", metavar="SPACE", help="search-space YAML file")
    _add_override_options(search)
    search.add_argument("--resume", action="store_true", help="continue an existing search: run only the missing trials")
    _add_run_options(search, "MLflow tracking URI (default sqlite:///mlflow.db here)")
    search.set_defaults(handler=_run_search)

    resume = commands.add_parser(
        "resume",
        help="continue an interrupted search by its name, with the settings it was started with",
        description="Continue search NAME: run only its trials that have no record, with the spec (the YAML and the"
        " command line's overrides) recorded in its ledger; the YAML file is not read again. MLflow: --tracking-uri,"
        " else $MLFLOW_TRACKING_URI, else the store the search recorded.",
    )
    resume.add_argument("name", metavar="NAME", help="search name")
    resume.add_argument("--num-trials", type=_integer("--num-trials", 1, 1_000_000), metavar="N",
                        help="trials of the search (more than recorded extends it; default: the recorded number)")
    _add_run_options(resume, "MLflow tracking URI (default: see above)")
    resume.set_defaults(handler=_run_resume)

    results = commands.add_parser(
        "results",
        help="the trials of a search, from its ledger",
        description="Print the trial records of a search (one row per trial) or export them as CSV.",
    )
    results.add_argument("name", metavar="NAME", help="search name")
    results.add_argument("--storage", default=DEFAULT_STORAGE, metavar="DIR", help=f"ledger directory (default ./{DEFAULT_STORAGE})")
    results.add_argument("--csv", action="store_true", help="CSV to stdout: trial, status, score, runtime_s, node_id, hostname, param.<name>, ...")
    results.set_defaults(handler=_run_results)

    best = commands.add_parser(
        "best",
        help="the best configuration(s) of a search by validation score, or as YAML to train again",
        description="Rank the finished trials of search NAME by validation score (the metric's mode decides the"
        " direction; ties go to the lower trial index; failed trials are never chosen) and print the top K. With"
        " --yaml, print each as a search-space YAML whose parameters are all constants (one YAML document per"
        " configuration), which `showwork validate` accepts and `showwork search` trains again.",
    )
    best.add_argument("name", metavar="NAME", help="search name")
    best.add_argument("--storage", default=DEFAULT_STORAGE, metavar="DIR", help=f"ledger directory (default ./{DEFAULT_STORAGE})")
    best.add_argument("--top", type=_integer("--top", 1, 1_000_000), default=1, metavar="K", help="the K best configurations (default 1)")
    best.add_argument("--yaml", action="store_true", help="print search-space YAML (every parameter a constant) instead of a table")
    best.set_defaults(handler=_run_best)

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
    rerun.add_argument("--seeds", type=_integer("--seeds", 1, 10_000), required=True, metavar="N", help="fresh training seeds per configuration")
    rerun.add_argument("--top", type=_integer("--top", 1, 1000), default=1, metavar="K", help="re-run the K best configurations (default 1)")
    _add_run_options(rerun, "MLflow tracking URI (default: --tracking-uri, else $MLFLOW_TRACKING_URI, else the search's store)")
    rerun.set_defaults(handler=_run_rerun)

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
        nargs="+",
        metavar="SOURCE",
        help="a search name (its ledger under --storage), a results file (.csv, .tsv, .jsonl; needs --score),"
        " mlflow:EXPERIMENT (an MLflow experiment name or id, or a parent run id; see --tracking-uri),"
        " ray:PATH (a Ray Tune experiment folder, storage_path/name; needs --score)"
        " or optuna:STORAGE_URL (an Optuna storage, e.g. optuna:sqlite:///optuna.db; see --study)",
    )
    report.add_argument("--out", required=True, metavar="DIR", help="directory that receives every output")
    report.add_argument("--storage", default=DEFAULT_STORAGE, metavar="DIR", help=f"ledger directory (default ./{DEFAULT_STORAGE})")
    report.add_argument("--tracking-uri", metavar="URI", help="MLflow store of mlflow: sources (default $MLFLOW_TRACKING_URI, else sqlite:///mlflow.db here)")
    report.add_argument("--label", action="append", metavar="NAME", help="name of a source's family in the report (repeat, in source order)")
    report.add_argument("--score", metavar="COLUMN", help="results files, plain MLflow runs and ray: sources: the validation-score column or metric"
                        " (optuna: sources: the objective of a multi-objective study)")
    report.add_argument("--runtime", metavar="COLUMN", help="results files: per-trial runtime in seconds (time axis, compute)")
    report.add_argument("--test", metavar="COLUMN", help="results files: per-trial test score (optuna: sources: a trial user attribute)")
    report.add_argument("--params", metavar="COLUMNS", help="results files: comma list of hyperparameter columns")
    report.add_argument("--group", metavar="COLUMN", help="results files: one family per value of this column")
    report.add_argument("--min", dest="minimize", action="store_true", help="results files and ray: sources: lower scores are better (losses; optuna: sources use the study's direction)")
    report.add_argument("--reduce", choices=("last", "best"), default="last", help="ray: sources: each trial's last or best value of --score (default last)")
    report.add_argument("--study", metavar="NAME", help="optuna: sources: the study (may be left out when the storage holds one)")
    report.add_argument("--sampler", metavar="NAME", help="every source: how the trials were drawn, where the source does not"
                        " record it (results files, other programs' MLflow runs, an Optuna study without a trace, a Ray"
                        " experiment without its tuner.pkl): random asserts i.i.d. draws, as the bands assume; anything"
                        " else is reported as not i.i.d.; refused where it contradicts the record")
    report.add_argument("--a", type=_finite("--a"), metavar="A", help="lower bound of the score (default: the search's metric bounds)")
    report.add_argument("--b", type=_finite("--b"), metavar="B", help="upper bound of the score (default: the search's metric bounds)")
    _add_band_options(report)
    report.add_argument("--failed", choices=FAILURE_POLICIES, help="failed trials: error, worst or exclude (default: each search's policy, else worst)")
    report.add_argument("--k", type=parse_budgets, metavar="K", help="budgets of the curves: K, 1..K, or a comma list (default 1..largest n)")
    report.add_argument("--at", type=parse_budgets, metavar="K", help="budgets of the tables (default 1, 2, 5, 10, ... up to the largest n)")
    report.add_argument("--target", type=_finite_list("--target"), metavar="SCORES", help="comma list of scores: budget needed to reach each")
    report.add_argument("--bound-k", type=_finite("--bound-k"), metavar="K", help="budget the advice plans for (default: the next round budget past the bands' reach)")
    report.add_argument("--cost-unit", choices=tuple(COST_UNITS), default="hours", help="unit of the time axis and compute totals (default hours)")
    report.add_argument("--cost", metavar="runtime|COLUMN", help="compare at equal total cost too: runtime (each trial's runtime in seconds: a search's runtime_s, --runtime COLUMN of a results file)"
                         " or COLUMN (a per-trial cost such as epochs or FLOPs); each family at k = cost / its mean cost per trial,"
                         " failed trials included in the mean (Lourie et al. 2024, Dodge et al. 2019)"
                        " (COLUMN: a results-file column, or a hyperparameter or metric of each trial; the figure comparison_cost)")
    report.add_argument("--gpus-per-trial", type=_finite("--gpus-per-trial"), metavar="G", help="GPUs each trial held (default: the search's resources)")
    report.add_argument("--grid-intensity", type=_finite("--grid-intensity"), metavar="G",
                        help="gCO2e per kWh of the electricity the GPUs used: the checklist gives the recorded GPU energy in gCO2e too")
    by = report.add_mutually_exclusive_group()
    by.add_argument("--by", metavar="PARAM", help="one curve per value of this categorical or discrete hyperparameter, from the trials"
                    " that drew it (i.i.d. draws of the search with PARAM fixed), with the evidence between values"
                    " (results files: a column; trials without PARAM, e.g. a `when:` condition, and values with too few trials are left out, each said in one line)")
    by.add_argument("--tuning-risk", metavar="PARAM=DEFAULT", help="compare tuning every hyperparameter (all trials) with the trials"
                    " at PARAM's default (Weerts et al. 2020): per trial, and at equal cost with --cost")
    report.add_argument("--formats", type=_figure_formats, default=("png", "svg", "pdf"), metavar="LIST", help="figure formats (default png,svg,pdf)")
    x_scale = report.add_mutually_exclusive_group()
    x_scale.add_argument("--log-x", dest="log_x", action="store_const", const=True, default=None,
                         help="logarithmic budget axis (the default when the largest budget is over 100)")
    x_scale.add_argument("--linear-x", dest="log_x", action="store_const", const=False,
                         help="linear budget axis even when the largest budget is over 100")
    report.add_argument("--no-mlflow", action="store_true", help="do not log the report on the searches' MLflow parent runs")
    report.set_defaults(handler=_run_report)

    ui = commands.add_parser(
        "ui",
        help="start the MLflow UI on 127.0.0.1 for the same tracking store",
        description="Start the MLflow UI for the tracking store showwork search logs to (default sqlite:///mlflow.db).",
    )
    ui.add_argument("--tracking-uri", metavar="URI", help="backend store (default sqlite:///mlflow.db here)")
    ui.add_argument("--host", default="127.0.0.1", help="interface to bind (default 127.0.0.1; another exposes the UI)")
    ui.add_argument("--port", type=_integer("--port", 1, 65535), default=5000, help="port (default 5000)")
    ui.set_defaults(handler=_run_ui)
    return parser


def _add_run_options(p: argparse.ArgumentParser, tracking_help: str) -> None:
    """Where a search runs and records: the options `search` and `resume` share."""
    p.add_argument("--storage", default=DEFAULT_STORAGE, metavar="DIR", help=f"ledger directory (default ./{DEFAULT_STORAGE})")
    p.add_argument("--tracking-uri", metavar="URI", help=tracking_help)
    p.add_argument("--address", metavar="ADDR", help="an existing Ray cluster (default $RAY_ADDRESS, else a local Ray on 127.0.0.1)")
    p.add_argument("--num-cpus", type=_integer("--num-cpus", minimum=1), metavar="N",
                   help="CPUs the local Ray offers to trials (default: all of this machine's); not with --address")
    p.add_argument("--no-progress", action="store_true", help="no live progress display")


def _add_override_options(p: argparse.ArgumentParser) -> None:
    """The search-space fields that `validate` and `search` let the command line override."""
    p.add_argument("--name", help="override the search's name (its ledger and MLflow experiment)")
    p.add_argument("--num-trials", type=_integer("--num-trials"), metavar="N", help="override num_trials (raise it and --resume to add trials)")
    p.add_argument("--seed", type=_integer("--seed"), metavar="S", help="override the search's seed")
    p.add_argument("--max-concurrent", type=_integer("--max-concurrent"), metavar="N", help="override max_concurrent")


def _add_band_options(p: argparse.ArgumentParser) -> None:
    """The bands' settings, the same for `curve`, `compare` and `report`."""
    p.add_argument("--confidence", type=_probability("--confidence"), default=0.8, help="simultaneous band confidence (default 0.8)")
    p.add_argument("--method", choices=BAND_METHODS, default="ld-hd", help="CDF band method (default ld-hd)")
    p.add_argument("--quantile", type=_probability("--quantile"), default=0.5, help="quantile tuning curve (default 0.5: median)")


def _add_curve_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--score", required=True, metavar="COLUMN", help="column holding the validation score")
    p.add_argument("--min", dest="minimize", action="store_true", help="lower scores are better (losses)")
    p.add_argument("--a", type=_finite("--a"), metavar="A", help="lower bound of the score's support (e.g. 0)")
    p.add_argument("--b", type=_finite("--b"), metavar="B", help="upper bound of the score's support (e.g. 1)")
    _add_band_options(p)
    p.add_argument(
        "--failed",
        choices=FAILURE_POLICIES,
        default="error",
        help="trials with a missing, NaN or infinite score: refuse (error, default), count as the worst value, or exclude",
    )


# --- commands -------------------------------------------------------------------------------


class _Scores(NamedTuple):
    """One source's scores and runtimes in trial order, and how its own numbering names the trial at a position."""

    scores: Any
    runtimes: Any
    trial_name: Callable[[int], str]


def _read_scores(path: str, args: argparse.Namespace, runtime_column: str | None = None) -> _Scores:
    """Scores (and runtimes) of one results file or ray: experiment, in trial order; missing cells and failed trials are NaN."""
    from showwork.results_table import read_results_table

    if path.startswith("ray:"):  # runtimes: Ray's time_total_s (a --runtime column does not apply)
        from showwork.report.sources_ray import from_ray_tune

        if runtime_column:
            raise InputError("--runtime: a ray: source's runtimes are Ray's time_total_s; leave --runtime out")
        family = from_ray_tune(path.removeprefix("ray:"), args.score, reduce=getattr(args, "reduce", "last"), minimize=args.minimize)
        ids = family.meta.get("trial_ids") or ()
        return _Scores(family.scores, family.runtimes_s, lambda i: f"Ray trial {ids[i]}" if i < len(ids) else f"trial {i + 1}")
    if getattr(args, "reduce", "last") != "last":
        raise InputError("--reduce applies to ray: sources only")

    table = read_results_table(path)
    runtimes = table.runtime_column(runtime_column) if runtime_column else None
    # Rows count from 1 below the header; the line is the file's own (blank lines are no rows).
    return _Scores(table.score_column(args.score), runtimes, lambda i: f"row {i + 1}, line {table.lines[i]} of the file")


def _band_spec(args: argparse.Namespace):
    """The bands' settings of `curve`, `compare` and `plan` (which has no --a/--b), built once from the options."""
    from showwork.statistics import BandSpec

    a = -math.inf if getattr(args, "a", None) is None else args.a
    b = math.inf if getattr(args, "b", None) is None else args.b
    if a > b:  # a == b is a point mass, as in the library: constant scores there give exact bands
        raise InputError(f"--a ({a}) must not be greater than --b ({b})")
    return BandSpec(confidence=args.confidence, method=args.method, quantile=args.quantile, a=a, b=b)  # argparse checked each


def _curve(path: str, read: _Scores, args: argparse.Namespace, bands, k, runtimes=None):
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


_CURVE_EVERY_BUDGET_MAX_N = 10_000  # above this many scores the default budgets are a grid, not 1..n
_PROGRESS_MIN_N = 50_000  # from about this many scores `curve` takes seconds: say what it is doing
_PROGRESS_MIN_BYTES = 8 << 20


def _progress(message: str) -> None:
    """A progress line on stderr (stdout may be --json)."""
    print(f"showwork: {message}", file=sys.stderr, flush=True)


def _run_curve(args: argparse.Namespace) -> int:
    import os

    import numpy as np

    from showwork.statistics import informative_budget

    try:
        if os.stat(args.file).st_size >= _PROGRESS_MIN_BYTES:
            _progress(f"reading {args.file} …")
    except OSError:
        pass  # the reader gives the error
    read = _read_scores(args.file, args, args.runtime)
    scores, runtimes = read.scores, read.runtimes
    k, grid_note = args.k, None
    n = int(np.isfinite(np.asarray(scores, dtype=float)).sum()) if args.failed == "exclude" else len(scores)
    if k is None and n > _CURVE_EVERY_BUDGET_MAX_N:
        from showwork.report.analysis import GRID_DENSE, GRID_SPARSE_POINTS, budget_grid

        k = budget_grid(n)
        grid_note = (
            f"budgets: every k up to {GRID_DENSE}, then {GRID_SPARSE_POINTS} geometric steps up to n"
            f" (the default above {_CURVE_EVERY_BUDGET_MAX_N:,} trials; --k 1..{n} gives every budget)"
        )
    if n >= _PROGRESS_MIN_N:
        _progress(f"computing the {args.method} band and the tuning curves for n = {n:,} …")
    bands = _band_spec(args)
    curve = _curve(args.file, read, args, bands, k, runtimes)
    informative = informative_budget(curve.n, minimize=args.minimize, bands=bands)
    if args.json:
        out = curve.to_dict(args.cost_unit, args.gpus_per_trial)
        out["file"] = args.file
        out["score"] = args.score
        out["informative_budget"] = informative if math.isfinite(informative) else None
        out["budgets_note"] = grid_note
        out["critical_coverage_note"] = _critical_note(curve.band)
        print(json.dumps(out, allow_nan=False))
        return 0
    _print_curve(curve, args, informative, grid_note)
    return 0


def _critical_note(band) -> str | None:
    """How the LD critical level was obtained, when it is not exact."""
    if band.critical_exact:
        return None
    from showwork.statistics.critical_levels import EXACT_MAX_N, EXTRAPOLATION_COVERAGE_EXCESS

    return (
        f"extrapolated from the exact levels at n = {EXACT_MAX_N // 4:,} and {EXACT_MAX_N:,} (the exact recursion"
        f" costs ~n^1.5); conservative: the simultaneous coverage is between {band.confidence:g} and"
        f" {band.confidence + EXTRAPOLATION_COVERAGE_EXCESS:g}"
    )


def _fmt(x: float) -> str:
    if math.isnan(x):
        return "-"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.6g}"


def _print_curve(curve, args, informative: float, grid_note: str | None = None) -> None:
    band = curve.band
    q = "median" if curve.quantile == 0.5 else f"q={curve.quantile:g}"
    lines = [
        f"file: {args.file}  score: {args.score} ({'minimized' if curve.minimize else 'maximized'})",
        f"trials: {curve.failures.describe()}",
        f"bands: {band.method} at {band.confidence:g} simultaneous confidence"
        + (f", critical pointwise coverage {band.critical_coverage:.10g}" if band.critical_coverage is not None else ""),
        f"support: [{_fmt(band.a)}, {_fmt(band.b)}]; bands informative up to k = {informative:.1f}",
    ]
    if band.critical_coverage is not None and not band.critical_exact:
        lines.append(f"critical coverage {_critical_note(band)}")
    if grid_note is not None:
        lines.append(grid_note)
    if curve.mean_runtime_s is not None:
        lines.append(f"mean runtime: {curve.mean_runtime_s:.4g} s per trial")
    print("\n".join(lines) + "\n")
    header = ["k", "V", "U", q, "lower", "upper"]
    columns = [curve.k, curve.v, curve.u, curve.quantile_curve, curve.quantile_curve_lower, curve.quantile_curve_upper]
    if curve.mean_lower is not None:
        header += ["mean lower", "mean upper"]
        columns += [curve.mean_lower, curve.mean_upper]
    if curve.mean_runtime_s is not None:
        header.append(f"cost ({args.cost_unit})")
        columns.append(curve.cost(args.cost_unit, args.gpus_per_trial))
    rows = [[_fmt(float(c[i])) for c in columns] for i in range(curve.k.size)]
    print("\n".join(_table_lines(header, rows, right=True)))


def _run_compare(args: argparse.Namespace) -> int:
    import numpy as np

    from showwork.report.analysis import resolved_rule_text
    from showwork.statistics import ArgumentError, budgets_to_reach, compare_curves, informative_budget

    if len(args.files) < 2:
        raise InputError("compare needs at least two results files")
    if len(set(args.files)) != len(args.files):
        raise InputError("the same file is given twice")
    read = {f: _read_scores(f, args, args.runtime) for f in args.files}
    scores = {f: r.scores for f, r in read.items()}
    k = args.k
    if k is None:
        k = list(np.arange(1, min(len(s) for s in scores.values()) + 1, dtype=float))
    bands = _band_spec(args)
    curves = [_curve(f, r, args, bands, k) for f, r in read.items()]
    try:
        pairs = compare_curves(curves, args.statistic)
    except ArgumentError as error:
        raise InputError(str(error)) from None
    cost = _compare_at_equal_cost(args, read, bands) if args.cost else None
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
                "cost": args.cost, "unit": cost[0], "mean_costs": cost[1], "axis": _json_floats(cost[2][0].k),
                "pairs": [p.to_dict() | {"k_a": _json_floats(p.k_a), "k_b": _json_floats(p.k_b)} for p in cost[2]],
            },
        }
        print(json.dumps(out, allow_nan=False))
        return 0
    print(f"{args.statistic} tuning curves, {args.method} bands at {args.confidence:g} confidence")
    print(f"{resolved_rule_text(args.confidence)}\n")
    _print_pairs(pairs)
    if cost is not None:
        unit, means, cost_pairs = cost
        shown = "; ".join(f"{name} {m:.4g}" for name, m in means.items())
        print(f"at equal cost ({args.cost}, in {unit}): each file at k = cost / its mean cost per trial ({shown});"
              " failed trials cost too and count in the mean\n")
        _print_pairs(cost_pairs, unit)
    if reach is not None:
        print(f"budget (trials) to reach {args.target:g}; '-' = not within reach:")
        for name, values in reach.items():
            limit = informative[name]
            shown = ", ".join(
                f"{key} {'-' if v is None else v}"
                + (f" (beyond k ≈ {limit:.3g}: more trials needed)" if v is not None and v > limit and key not in pessimistic else "")
                for key, v in values.items()
            )
            print(f"  {name}: {shown}")
    return 0


def _json_floats(values) -> list[float]:
    return [float(v) for v in values]


def _print_pairs(pairs, unit: str | None = None) -> None:
    """Each pair's evidence by range (budget k, or total cost in ``unit``) and its crossovers."""
    from showwork.report.analysis import evidence_text, verdict_text

    name, fmt = ("k", "g") if unit is None else ("cost", ".4g")
    suffix = "" if unit is None else f" {unit}"
    for p in pairs:
        print(f"{p.a}  vs  {p.b}")
        for r in p.ranges:
            span = (f"{name} = {r.k_start:{fmt}}" if r.k_start == r.k_end else f"{name} = {r.k_start:{fmt}}..{r.k_end:{fmt}}") + suffix
            who = f" for {r.favoured}" if r.favoured else ""
            verdict = verdict_text(r.resolved, r.level, p.confidence)
            if r.k_start > p.informative_k and p.informative_k < p.k[0]:
                verdict = "unresolved: at every point compared at least one band is uninformative"
            elif r.k_start > p.informative_k:
                verdict = f"unresolved: beyond {name} = {p.informative_k:{'.1f' if unit is None else '.4g'}}{suffix} at least one band is uninformative"
            print(f"  {span}: {evidence_text(r.level)}{who} ({verdict})")
        cross = ", ".join(f"{c:{fmt}}" for c in p.crossovers) or "none"
        print(f"  point estimates cross at {name} = {cross}{suffix if p.crossovers else ''}\n")


def _compare_at_equal_cost(args: argparse.Namespace, read: dict, bands):
    """``compare --cost``: (unit, mean cost per trial of each file, the pairs compared on the cost axis)."""
    import numpy as np

    from showwork.statistics import ArgumentError, compare_curves, equal_cost_axis, mean_runtime

    means = {}
    for path, (scores, runtimes, _) in read.items():
        if args.cost == "runtime":
            if runtimes is None:
                raise InputError(f"{path}: --cost runtime needs each trial's runtime: give --runtime COLUMN")
            costs = runtimes
        elif path.startswith("ray:"):
            raise InputError(f"{path}: a ray: source's cost is its runtime: use --cost runtime")
        else:
            from showwork.results_table import read_results_table

            costs = read_results_table(path).runtime_column(args.cost)  # numbers >= 0, like runtimes
        try:
            means[path] = mean_runtime(np.asarray(costs, dtype=float))  # failed trials' costs included
        except ArgumentError as error:
            raise InputError(f"{path}: --cost {args.cost}: {error}") from None
    try:
        axis, ks = equal_cost_axis(means, {path: len(r.scores) for path, r in read.items()})
        curves = {path: _curve(path, read[path], args, bands, ks[path]) for path in read}
        unit = "seconds" if args.cost == "runtime" else args.cost
        return unit, means, compare_curves(curves, args.statistic, axis=axis, axis_name=unit)
    except ArgumentError as error:
        raise InputError(str(error)) from None


def _run_plan(args: argparse.Namespace) -> int:
    from showwork.statistics import BudgetOutOfReachError, informative_budget, trials_needed

    if args.k < 1:
        raise InputError(f"--k must be at least 1 (got {args.k:g})")
    bands = _band_spec(args)
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


def _integer(name: str, minimum: int | None = None, maximum: int | None = None):
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


def _table_lines(header: Sequence[str], rows: Sequence[Sequence[str]], right: bool = False) -> list[str]:
    """Columns padded to their widest cell; ``right`` aligns them to the right (for numbers)."""
    widths = [max(len(h), *(len(r[j]) for r in rows)) for j, h in enumerate(header)]
    pad = str.rjust if right else str.ljust
    return ["  ".join(pad(c, w) for c, w in zip(row, widths)).rstrip() for row in [list(header), *rows]]


def _runnable_spec(path: str, overrides: dict):
    """The search spec of ``path``, refused exactly where ``showwork search`` would refuse it before any trial."""
    from showwork.space import load_search_spec
    from showwork.tracking import check_param_names

    spec = load_search_spec(path, overrides)
    check_param_names(spec.space, spec.source_path or spec.name)  # MLflow's keys: refused here if search would refuse
    return spec


def _run_validate(args: argparse.Namespace) -> int:
    from showwork.space import resolved_yaml

    overrides = {"name": args.name, "num_trials": args.num_trials, "seed": args.seed, "max_concurrent": args.max_concurrent}
    spec = _runnable_spec(args.space, overrides)
    import_s = None
    if not args.no_family:  # what search refuses before it starts: a family that does not load, data it would miss
        from showwork.families import check_family_data, load_family_timed

        train, import_s = load_family_timed(spec)
        check_family_data(spec, train, None)
    described = spec.space.describe()
    conditional = any(r["when"] for r in described)  # a "drawn when" column only for a space that has conditions
    rows = [[r["name"], r["distribution"], r["bounds"], *([r["when"] or "always"] if conditional else [])] for r in described]
    lines = _table_lines(["parameter", "distribution", "bounds", *(["drawn when"] if conditional else [])], rows)
    print(resolved_yaml(spec), end="")
    print(f"#\n# {len(rows)} parameters ('[' includes a bound, ')' excludes it; {{a, ..., b}}: integers a to b, both included):")
    print("\n".join(f"#   {line}" for line in lines))
    from showwork.families import LONG_IMPORT_S

    if import_s is not None and import_s >= LONG_IMPORT_S:
        print(f"#\n# importing the family took {import_s:.1f} s here; each worker imports it once, before its first trial,"
              f" within setup_timeout_s = {spec.setup_timeout_s:g} s (timeout_s counts the trainable only)")
    return 0


def _run_sample(args: argparse.Namespace) -> int:
    from showwork.sampling import trial_config, trial_seed

    spec = _runnable_spec(args.space, {"seed": args.seed})
    trials = ((i, trial_seed(spec.seed, i), trial_config(spec.space, spec.seed, i)) for i in range(args.n))
    if args.json:
        for i, seed, params in trials:
            print(json.dumps({"trial": i, "seed": seed, "params": params}, allow_nan=False))
        return 0
    names = list(spec.space.names)
    rows = [[str(i), str(seed), *(value_text(params[name]) if name in params else "-" for name in names)] for i, seed, params in trials]
    absent = "; '-': a conditional parameter left out of that trial" if spec.space.conditions else ""
    print(f"{spec.name}: trials 0..{args.n - 1} of a search of {spec.num_trials} with seed {spec.seed}; trial_seed is"
          f" each trial's training seed (floats rounded to 6 digits; --json gives them exactly){absent}\n")
    print("\n".join(_table_lines(["trial", "trial_seed", *names], rows)))
    return 0


def _tracking_uri(value: str | None) -> str:
    from showwork.tracking import chosen_tracking_uri

    return chosen_tracking_uri(value)


def _run_search(args: argparse.Namespace) -> int:
    from showwork.api import search_spec

    _check_ray_options(args)
    overrides = {"name": args.name, "num_trials": args.num_trials, "seed": args.seed, "max_concurrent": args.max_concurrent}
    spec = search_spec(args.space, **overrides)
    return _search(spec, args, _tracking_uri(args.tracking_uri), resume=args.resume)


def _run_resume(args: argparse.Namespace) -> int:
    from pathlib import Path

    from showwork.recorded import recorded_spec
    from showwork.tracking import recorded_tracking_uri

    _check_ray_options(args)
    spec = recorded_spec(Path(args.storage), args.name, args.num_trials)
    return _search(spec, args, recorded_tracking_uri(args.storage, args.name, args.tracking_uri), resume=True)


def _check_ray_options(args: argparse.Namespace) -> None:
    from showwork.ray_setup import check_ray_options

    check_ray_options(args.num_cpus, args.address)


def _search(spec, args: argparse.Namespace, uri: str, resume: bool) -> int:
    """Run (or resume) ``spec`` for `search` and `resume`; print the summary, or the interrupt and the command that continues."""
    from pathlib import Path

    from showwork.ledger import LedgerWriteError
    from showwork.mlflow_format import runs_table_path
    from showwork.recorded import resume_command
    from showwork.run import SearchFolderMovedError, SearchInterrupted, SearchStorageError, run_search
    from showwork.ui import ui_address

    try:
        summary = run_search(spec, Path(args.storage), uri, resume=resume, address=args.address,
                             progress=not args.no_progress, num_cpus=args.num_cpus)
    except SearchInterrupted as stop:
        print(f"\n{stop}", file=sys.stderr)  # interrupted: F of N trials finished
        if stop.resumable:
            print(f"the ledger keeps every finished trial; continue with:\n  {resume_command(spec.name, args.storage)}",
                  file=sys.stderr)
        return 128 + stop.signum
    except SearchFolderMovedError as error:  # an outage too: the records are where the folder went
        print(f"showwork: error: {error}; the search stopped. Put the folder back at {error.folder} (its records are"
              f" in it), then continue with: {resume_command(spec.name, args.storage)}", file=sys.stderr)
        return 1
    except (SearchStorageError, LedgerWriteError) as error:  # an outage, not bad input: exit 1
        print(f"showwork: error: {error}; the search stopped, its records are kept; once the folder takes"
              f" writes again, continue with: {resume_command(spec.name, args.storage)}", file=sys.stderr)
        return 1
    best = "-" if summary.best_score is None else f"{summary.best_score:.6g} (trial {summary.best_index})"
    print(
        f"\nsearch {summary.name}: {summary.finished} finished, {summary.failed} failed, {summary.timeout} timed out"
        f" of {summary.num_trials} in {summary.elapsed_s:.0f} s; best {spec.metric.name} {best}\n"
        f"ledger: {summary.storage_dir / summary.name}   MLflow: {summary.tracking_uri}, parent run {summary.parent_run_id}\n"
        f"next:\n  showwork results {summary.name} --storage {args.storage} --csv > {summary.name}.csv\n"
        f"  showwork report {summary.name} --out {summary.name}-report"
        + (f" --storage {args.storage}" if args.storage != DEFAULT_STORAGE else "") + "\n"
        "  showwork ui" + (f" --tracking-uri {summary.tracking_uri}" if args.tracking_uri else "")
        + (f"   (then its runs table: {ui_address()}/{runs_table_path(summary.experiment_id, spec.metric.mode)})"
           if summary.experiment_id else "")
    )
    if summary.failures:
        _print_failures(summary, args.storage)
    if summary.finished == 0:  # nothing to report: `showwork search X && showwork report X` stops here
        print(f"showwork: error: no trial of search {summary.name} finished ({summary.failed} failed,"
              f" {summary.timeout} timed out); see the failures above", file=sys.stderr)
        return 1
    return 0


def _print_failures(summary, storage: str) -> None:
    """The failures of a search by kind, with the first message of each and where the full tracebacks are."""
    from showwork.ledger import Ledger

    ledger = Ledger(summary.storage_dir, summary.name)
    count = sum(kind.count for kind in summary.failures)
    print(f"\nfailures ({count} of {summary.num_trials} trials), by kind:")
    for kind in summary.failures:
        print(f"  {kind.count} x {kind.kind}, first trial {kind.first_index}: {kind.first_message[:200]}")
    first = summary.failures[0].first_index
    print(f"tracebacks: each trial's record ({ledger.path(first)}, field \"error\"; all of them:"
          f" showwork results {summary.name} --storage {storage} --csv)")
    for log in summary.ray_logs:
        print(f"  and Ray's log of the run: {log}")


def _run_results(args: argparse.Namespace) -> int:
    from pathlib import Path

    from showwork.ledger import Ledger, list_searches
    from showwork.recorded import recorded_records

    ledger = Ledger(Path(args.storage), args.name)
    if not ledger.exists():
        known = ", ".join(list_searches(Path(args.storage))) or "none"
        raise InputError(f"no search {args.name!r} in {args.storage} (searches there: {known})")
    _, records = recorded_records(Path(args.storage), args.name)
    if args.csv:
        ledger.export_csv(sys.stdout, records)
        return 0
    rows = ledger.export_rows(records)
    if not rows:
        print(f"search {args.name}: no trial recorded yet")
        return 0
    columns = ["trial", "status", "score", "test_score", "runtime_s"] + [c for c in rows[0] if c.startswith("param.")]
    table = [[value_text(row.get(c)) if row.get(c) not in (None, "") else "-" for c in columns] for row in rows]
    print("\n".join(_table_lines(columns, table)))
    return 0


def _run_best(args: argparse.Namespace) -> int:
    from pathlib import Path

    from showwork.recorded import recorded_records, recorded_spec
    from showwork.report.tables import tie_sentence
    from showwork.selection import best_configuration_yaml, ranked_tie, ranked_trials

    spec = recorded_spec(Path(args.storage), args.name)  # no spec recorded: refused here
    _, records = recorded_records(Path(args.storage), args.name)
    ranked = ranked_trials(records, spec.metric.mode)
    if not ranked:
        raise InputError(f"search {args.name!r} in {args.storage} has no finished trial with a finite {spec.metric.name} yet")
    chosen = ranked[: args.top]
    if args.yaml:
        spec_dir = str(Path(spec.source_path).parent) if spec.source_path else None
        documents = [best_configuration_yaml(spec.model_dump(mode="json"), record, search=args.name, rank=rank,
                                             finished=len(ranked), spec_dir=spec_dir)
                     for rank, record in enumerate(chosen, start=1)]
        print("---\n".join(documents), end="")
        return 0
    names = list(dict.fromkeys(name for record in chosen for name in record.params))
    rows = [[str(rank), str(r.index), value_text(r.score), "-" if r.test_score is None else value_text(r.test_score), str(r.seed),
             *("-" if name not in r.params else value_text(r.params[name]) for name in names)]
            for rank, r in enumerate(chosen, start=1)]
    direction = "highest" if spec.metric.mode == "max" else "lowest"
    which = "the best" if len(chosen) == 1 else f"the {len(chosen)} best"
    print(f"{args.name}: {which} of {len(ranked)} finished trials by validation {spec.metric.name}"
          f" ({direction} first; ties: the lower trial); --yaml writes them as search spaces to train again\n")
    print("\n".join(_table_lines(["rank", "trial", spec.metric.name, spec.metric.test or "test", "seed", *names], rows)))
    tie = tie_sentence(ranked_tie(ranked), spec.metric.test or "test score")
    if tie:
        print(f"\n{tie}.")
    return 0


def _run_rerun(args: argparse.Namespace) -> int:
    from pathlib import Path

    from showwork.ledger import LedgerWriteError
    from showwork.recorded import recorded_reruns, recorded_spec
    from showwork.run import SearchFolderMovedError, SearchInterrupted, SearchStorageError, run_reruns
    from showwork.tracking import recorded_tracking_uri

    _check_ray_options(args)
    spec = recorded_spec(Path(args.storage), args.name)
    uri = recorded_tracking_uri(args.storage, args.name, args.tracking_uri)
    again = f"showwork rerun {args.name} --seeds {args.seeds} --top {args.top}" + (
        f" --storage {args.storage}" if args.storage != DEFAULT_STORAGE else "")
    try:
        summary = run_reruns(spec, Path(args.storage), uri, seeds=args.seeds, top=args.top, address=args.address,
                             progress=not args.no_progress, num_cpus=args.num_cpus)
    except SearchInterrupted as stop:
        print(f"\n{stop}", file=sys.stderr)
        print(f"the re-runs' ledger keeps every finished re-run; continue with:\n  {again}", file=sys.stderr)
        return 128 + stop.signum
    except SearchFolderMovedError as error:
        print(f"showwork: error: {error}; the re-runs stopped. Put the folder back at {error.folder} (their records are"
              f" in it), then continue with: {again}", file=sys.stderr)
        return 1
    except (SearchStorageError, LedgerWriteError) as error:
        print(f"showwork: error: {error}; the re-runs stopped, their records are kept; continue with: {again}",
              file=sys.stderr)
        return 1
    print(f"\nre-runs of {args.name}: {summary.finished} finished, {summary.failed} failed, {summary.timeout} timed out"
          f" of {summary.num_trials} in {summary.elapsed_s:.0f} s\n"
          f"ledger: {summary.storage_dir / args.name / 'reruns'}   MLflow: {summary.tracking_uri},"
          f" parent run {summary.parent_run_id}")
    from showwork.report.tables import rerun_sentence

    for rerun in recorded_reruns(Path(args.storage), args.name, spec.metric.mode):
        print(f"  {rerun_sentence(rerun, spec.metric.name, spec.metric.test)}")
    print(f"next:\n  showwork report {args.name} --out {args.name}-report"
          + (f" --storage {args.storage}" if args.storage != DEFAULT_STORAGE else ""))
    return 0 if summary.finished else 1


def _report_families(args: argparse.Namespace) -> list:
    """Read every SOURCE of ``showwork report`` into FamilyResults, in order."""
    from pathlib import Path

    from showwork.ledger import Ledger, list_searches
    from showwork.report import from_ledger, from_mlflow, from_results_file

    labels = list(args.label or [])
    if labels and len(labels) != len(args.sources):
        raise InputError(f"--label was given {len(labels)} times for {len(args.sources)} sources; give one per source")
    if labels and args.group:
        raise InputError("--label and --group exclude each other: --group names the families by its values")
    params = [c.strip() for c in args.params.split(",") if c.strip()] if args.params else None
    params = _with_trial_columns(params, args)
    for option, prefix in (("study", "optuna:"), ("reduce", "ray:")):
        if getattr(args, option) not in (None, "last") and not any(s.startswith(prefix) for s in args.sources):
            raise InputError(f"--{option} applies to {prefix} sources only, and none was given")
    families = []
    for i, source in enumerate(args.sources):
        label = labels[i] if labels else None
        if source.startswith("ray:"):
            from showwork.report.sources_ray import from_ray_tune

            families.append(from_ray_tune(source.removeprefix("ray:"), args.score, reduce=args.reduce,
                                          minimize=args.minimize, label=label, sampler=args.sampler))
        elif source.startswith("optuna:"):
            from showwork.report.sources_optuna import from_optuna

            families.append(from_optuna(source.removeprefix("optuna:"), args.study, score=args.score, test=args.test,
                                        sampler=args.sampler, minimize=True if args.minimize else None, label=label))
        elif source.startswith("mlflow:"):
            families.append(from_mlflow(_tracking_uri(args.tracking_uri), source.removeprefix("mlflow:"), score=args.score,
                                        runtime=args.runtime, test=args.test, minimize=True if args.minimize else None,
                                        label=label, sampler=args.sampler))
        elif Path(source).exists() and not (Path(source).is_dir() and _plain_name(source)):
            # FIFOs, devices and folders given as paths too: the reader says what they are. A plain name
            # that is a folder here is more likely a search's name: the message below lists the searches.
            if not args.score:
                raise InputError(f"{source}: a results file needs --score COLUMN (the validation score)")
            families.extend(from_results_file(source, args.score, runtime=args.runtime, test=args.test, params=params,
                                              minimize=args.minimize, group=args.group, label=label, sampler=args.sampler))
        elif _plain_name(source) and Ledger(Path(args.storage), source).exists():
            families.append(from_ledger(Path(args.storage), source, label, sampler=args.sampler))
        else:
            known = ", ".join(list_searches(Path(args.storage))) or "none"
            raise InputError(f"{source}: not a results file, nor a search in {args.storage} (searches there: {known}),"
                            " nor mlflow:EXPERIMENT, ray:PATH or optuna:STORAGE_URL")
    return families


def _with_trial_columns(params: list[str] | None, args: argparse.Namespace) -> list[str] | None:
    """The --params columns of a results file, and the per-trial columns --cost, --by and --tuning-risk name (read the same way)."""
    risk = getattr(args, "tuning_risk", None)
    columns = (getattr(args, "cost", None), getattr(args, "by", None), risk.split("=", 1)[0] if risk else None)
    extra = [c for c in columns if c and c != "runtime"]
    if not extra:
        return params
    return list(dict.fromkeys((params or []) + extra))


def _plain_name(text: str) -> bool:
    return bool(text) and "/" not in text and "\\" not in text and text not in (".", "..")


def _run_report(args: argparse.Namespace) -> int:
    from showwork.report import ReportSettings, analyze, log_report, report_artifact_path, write_report
    from showwork.report.analysis import resolved_bound_text
    from showwork.report.inputs import iid_caveats
    from showwork.report.output import FROM_MLFLOW_ARTIFACTS
    from showwork.report.tables import failures_sentence

    families = _report_families(args)
    settings = ReportSettings(
        confidence=args.confidence, method=args.method, quantile=args.quantile, a=args.a, b=args.b,
        failure_policy=args.failed, budgets=tuple(args.k) if args.k else None,
        table_budgets=tuple(int(round(k)) for k in args.at) if args.at else None,
        targets=tuple(args.target or ()), bound_k=args.bound_k, cost_unit=args.cost_unit, gpus_per_trial=args.gpus_per_trial,
        grid_intensity=args.grid_intensity, cost=args.cost,
    )
    families, notes = _by_parameter(families, args, settings)
    report = dataclasses.replace(analyze(families, settings), notes=notes)
    for note in notes:
        print(note)
    files = write_report(report, args.out, figure_formats=args.formats, log_x=args.log_x)
    if report.reference is None:
        for family in report.families:
            print(f"{family.name}: {failures_sentence(family)}. {family.advice.text()}")
        for pair in report.pairs:
            print(f"{pair.comparison.a} vs {pair.comparison.b}:")
            for sentence in pair.sentences():
                print(f"  {sentence}")
        _print_cost_view(report)
    else:  # many families: the ranking's verdict here, each family's in the report
        beaten = sum(1 for pair in report.pairs if pair.resolved_for(report.reference).size)
        print(f"{len(report.families)} families, ranked by their curves at k = {report.ranking_k:g}; best: {report.reference}."
              f" {report.reference} is shown better (strong evidence, resolved; {resolved_bound_text(report.settings.confidence)}"
              f" per pair) than {beaten} of the other {len(report.pairs)}"
              " at some budget; the report compares each family with it (ranking table, summary figure).")
    for caveat in iid_caveats([family.results for family in report.families]):  # one line per distinct reason
        print(f"not i.i.d.: {caveat}")
    print(f"report: {files.html}  (also {files.markdown.name}, {files.json.name}, latex/, figures/ in {files.directory})")
    if not args.no_mlflow:
        from showwork.tracking import TrackingUnavailableError

        try:
            runs = log_report(report, files)
        except TrackingUnavailableError as error:  # the files are written; MLflow is a copy
            print(f"showwork: warning: the report was not logged to MLflow ({error})", file=sys.stderr)
        else:
            path = report_artifact_path(report)
            kept = ("; read from MLflow's runs, it goes beside the search's own report/ (from its ledger), never over it"
                    if path.startswith(FROM_MLFLOW_ARTIFACTS) else "")
            for run_id in runs:
                print(f"logged to MLflow parent run {run_id} (artifacts: {path}/{kept})")
    return 0


def _by_parameter(families: list, args: argparse.Namespace, settings) -> tuple[list, tuple[str, ...]]:
    """``--by PARAM`` and ``--tuning-risk PARAM=DEFAULT``: the families to report, and one line per trial set handled apart."""
    if not args.by and not args.tuning_risk:
        return families, ()
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
    print(report.cost.note())
    for pair in report.cost.pairs:
        print(f"{pair.comparison.a} vs {pair.comparison.b} at equal cost:")
        for sentence in pair.sentences():
            print(f"  {sentence}")


def _run_ui(args: argparse.Namespace) -> int:
    from showwork.ui import UiSettings, serve

    return serve(UiSettings(_tracking_uri(args.tracking_uri), args.host, args.port), uri_in_argv=bool(args.tracking_uri))


if __name__ == "__main__":
    raise SystemExit(main())

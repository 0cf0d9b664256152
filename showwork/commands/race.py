"""``showwork race``."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from typing import Any

from showwork.commands.options import add_run_options, finite_list, integer, probability
from showwork.commands.searches import check_ray_options, run_outcome, runnable_spec, tracking_uri
from showwork.constants import DEFAULT_STORAGE
from showwork.escaping import terminal_text


def add_to(commands: Any) -> None:
    """Add the command's parser to ``commands`` (argparse sub-parsers)."""
    race = commands.add_parser(
        "race",
        help="compare two search spaces at pre-planned looks; stop at the first look that decides",
        description="Race two models: run the searches of spaces A and B side by side up to each look of --looks"
        " (both reach a look before any trial beyond it starts; trials counted by index), compare their tuning"
        " curves at the budgets --decide-at with bands that hold at every look at once, and stop at the first"
        " look where one model is shown better (strong evidence) at every budget. The chance of ever declaring"
        " a wrong winner, over all looks, is at most 1 - c^2 (c: --confidence). A separate command rather than"
        " `search --looks`: a search runs one space; a race runs two, decides between them and keeps its own"
        " record (STORAGE/_races/RACE/race.json) beside the two searches' ordinary ledgers. Interrupt it at any"
        " time; the same command with --resume takes the next look. Report it with `showwork report --race RACE`.",
    )
    race.add_argument("space_a", metavar="A.yaml", help="search-space YAML file of model A")
    race.add_argument("space_b", metavar="B.yaml", help="search-space YAML file of model B")
    race.add_argument("--looks", required=True, metavar="N1,N2,...",
                      help="trials per model at each look, strictly increasing (e.g. 12,24,48); fixed before the race")
    race.add_argument("--decide-at", required=True, type=finite_list("--decide-at"), metavar="K[,K2,...]",
                      help="budgets (numbers of trials, >= 1) at which one model must be shown better to stop")
    race.add_argument("--decide-by", choices=("median", "mean"), default="median",
                      help="compare the median tuning curves (default) or the mean ones (needs metric.bounds)")
    race.add_argument("--confidence", type=probability("--confidence"), default=0.8, metavar="C",
                      help="joint confidence of each model's bands over all looks (default 0.8; wrong-winner bound 1 - c^2)")
    race.add_argument("--method", choices=("ld-hd", "ld-et"), default="ld-hd", help="LD band method (default ld-hd)")
    race.add_argument("--name", metavar="RACE", help="the race's name (default A-vs-B, from the two searches' names)")
    race.add_argument("--resume", action="store_true", help="continue the race: keep its looks, take the next one")
    race.add_argument("--adopt", action="store_true",
                      help="race searches that already exist (run with these same spaces: same family, seed, space, metric"
                      " and data) instead of refusing them: their recorded trials count toward the looks, none is run"
                      " again, and trials are added only as the looks need")
    race.add_argument("--max-concurrent", type=integer("--max-concurrent", 1), metavar="N",
                      help="override both spaces' max_concurrent")
    race.add_argument("--json", action="store_true", help="print the race's record as JSON on stdout (the look lines go to stderr)")
    add_run_options(race, "MLflow tracking URI (default sqlite:///mlflow.db here)")
    race.set_defaults(handler=_run_race)


def _run_race(args: argparse.Namespace) -> int:
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    from showwork.run.race import RaceInterrupted, race_request, run_race
    from showwork.run.race_lines import RaceLines

    check_ray_options(args)
    overrides = {"max_concurrent": args.max_concurrent} if args.max_concurrent else {}
    specs = (runnable_spec(args.space_a, dict(overrides)), runnable_spec(args.space_b, dict(overrides)))
    request = race_request(specs, args.name, args.looks, args.decide_at, args.decide_by, args.confidence, args.method,
                           adopt=args.adopt)
    name = request.name
    lines = RaceLines(args.storage, sys.stderr if args.json else sys.stdout)
    uri = tracking_uri(args.tracking_uri)  # before the race starts: it warns of a password in --tracking-uri
    try:
        record = run_outcome(
            lambda: run_race(request, args.storage, uri, resume=args.resume,
                             address=args.address, num_cpus=args.num_cpus, progress=not args.no_progress,
                             on_look=lines.on_look, on_start=lines.on_start),
            _resume_command(args, name), "the ledgers keep every finished trial and the race its looks",
        )
    except RaceInterrupted as stop:
        print(terminal_text(f"\n{stop}"), file=sys.stderr)
        print(terminal_text(f"the ledgers keep every finished trial and the race its looks; continue with:\n  {_resume_command(args, name)}"),
              file=sys.stderr)
        return 128 + stop.signum
    if isinstance(record, int):  # an outage, already said
        return record
    lines.end(record)
    print(terminal_text(f"next: showwork report --race {name} --out {name}-report"
                        + (f" --storage {args.storage}" if args.storage != DEFAULT_STORAGE else "")), file=lines.stream)
    if args.json:
        print(json.dumps(record.to_dict() | {"saved_trials_per_model": record.saved_trials()}, indent=2))
    return 0


def _resume_command(args: argparse.Namespace, name: str) -> str:
    """The command that continues the race: the same arguments and --resume."""
    from showwork.run.race_lines import budgets_text  # lazy: as in _run_race

    words = ["showwork", "race", args.space_a, args.space_b, "--looks", args.looks, "--decide-at", budgets_text(args.decide_at)]
    if args.decide_by != "median":
        words += ["--decide-by", args.decide_by]
    if args.confidence != 0.8:
        words += ["--confidence", repr(args.confidence)]
    if args.method != "ld-hd":
        words += ["--method", args.method]
    words += ["--name", name]
    for option, value in (("--max-concurrent", args.max_concurrent), ("--storage", None if args.storage == DEFAULT_STORAGE else args.storage),
                          ("--tracking-uri", args.tracking_uri), ("--address", args.address), ("--num-cpus", args.num_cpus)):
        if value is not None:
            words += [option, str(value)]
    return shlex.join([*words, "--resume"])

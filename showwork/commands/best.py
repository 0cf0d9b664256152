"""``showwork best``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from showwork.commands.options import add_storage_option, integer
from showwork.commands.text import table_lines
from showwork.errors import InputError
from showwork.escaping import terminal_text
from showwork.values import value_text


def add_to(commands: Any) -> None:
    """Add the command's parser to ``commands`` (argparse sub-parsers)."""
    best = commands.add_parser(
        "best",
        help="the best configuration(s) of a search by validation score, or as YAML to train again",
        description="Rank the finished trials of search NAME by validation score (the metric's mode decides the"
        " direction; ties go to the lower trial index; failed trials are never chosen) and print the top K. With"
        " --yaml, print each as a search-space YAML whose parameters are all constants (one YAML document per"
        " configuration), which `showwork validate` accepts and `showwork search` trains again.",
    )
    best.add_argument("name", metavar="NAME", help="search name")
    add_storage_option(best)
    best.add_argument("--top", type=integer("--top", 1, 1_000_000), default=1, metavar="K", help="the K best configurations (default 1)")
    best.add_argument("--yaml", action="store_true", help="print search-space YAML (every parameter a constant) instead of a table")
    best.set_defaults(handler=_run_best)


def _run_best(args: argparse.Namespace) -> int:
    # lazy: `showwork --help` imports every command's module; these load when the command runs
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
        # The comments quote the search's words (its name, its metric's) as plain text: escaped like any line. The
        # YAML itself is left exact, to be read back: it writes a value's control characters as its own escapes.
        lines = "---\n".join(documents).splitlines(keepends=True)
        print("".join(terminal_text(line) if line.startswith("#") else line for line in lines), end="")
        return 0
    names = list(dict.fromkeys(name for record in chosen for name in record.params))
    rows = [[str(rank), str(r.index), value_text(r.score), "-" if r.test_score is None else value_text(r.test_score), str(r.seed),
             *("-" if name not in r.params else value_text(r.params[name]) for name in names)]
            for rank, r in enumerate(chosen, start=1)]
    direction = "highest" if spec.metric.mode == "max" else "lowest"
    which = "the best" if len(chosen) == 1 else f"the {len(chosen)} best"
    print(terminal_text(f"{args.name}: {which} of {len(ranked)} finished trials by validation {spec.metric.name}"
                        f" ({direction} first; ties: the lower trial); --yaml writes them as search spaces to train again\n"))
    print("\n".join(table_lines(["rank", "trial", spec.metric.name, spec.metric.test or "test", "seed", *names], rows)))
    tie = tie_sentence(ranked_tie(ranked), spec.metric.test or "test score")
    if tie:
        print(terminal_text(f"\n{tie}."))
    return 0

"""``showwork results``."""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path
from typing import Any

from showwork.commands.options import add_storage_option
from showwork.commands.text import table_lines
from showwork.errors import InputError
from showwork.escaping import terminal_text
from showwork.values import value_text


def add_to(commands: Any) -> None:
    """Add the command's parser to ``commands`` (argparse sub-parsers)."""
    results = commands.add_parser(
        "results",
        help="the trials of a search, from its ledger",
        description="Print the trial records of a search (one row per trial) or export them as CSV.",
    )
    results.add_argument("name", metavar="NAME", help="search name")
    add_storage_option(results)
    results.add_argument("--csv", action="store_true", help="CSV to stdout: trial, status, score, runtime_s, node_id, hostname, param.<name>, ...")
    results.set_defaults(handler=_run_results)


def _run_results(args: argparse.Namespace) -> int:
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    from showwork.recorded import recorded_records
    from showwork.store import Ledger, list_searches

    ledger = Ledger(Path(args.storage), args.name)
    if not ledger.exists():
        known = ", ".join(list_searches(Path(args.storage))) or "none"
        raise InputError(f"no search {args.name!r} in {args.storage} (searches there: {known})")
    _, records = recorded_records(Path(args.storage), args.name)
    if args.csv:
        if not sys.stdout.isatty():  # a file or a pipe: the values exactly as recorded
            ledger.export_csv(sys.stdout, records)
            return 0
        # On a terminal, for a reader (as `ls` shows a file name): a value's control characters as escapes.
        shown = io.StringIO()
        ledger.export_csv(shown, records)
        print(terminal_text(shown.getvalue()), end="")
        return 0
    rows = ledger.export_rows(records)
    if not rows:
        print(terminal_text(f"search {args.name}: no trial recorded yet"))
        return 0
    columns = ["trial", "status", "score", "test_score", "runtime_s"] + [c for c in rows[0] if c.startswith("param.")]
    table = [[value_text(row.get(c)) if row.get(c) not in (None, "") else "-" for c in columns] for row in rows]
    print("\n".join(table_lines(columns, table)))
    return 0

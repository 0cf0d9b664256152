"""``showwork validate``."""

from __future__ import annotations

import argparse
from typing import Any

from showwork.commands.options import add_override_options, override_values
from showwork.commands.searches import runnable_spec
from showwork.commands.text import table_lines
from showwork.escaping import terminal_text


def add_to(commands: Any) -> None:
    """Add the command's parser to ``commands`` (argparse sub-parsers)."""
    validate = commands.add_parser(
        "validate",
        help="check a search-space YAML file and print it resolved",
        description="Check a search-space file (what `showwork search` runs) and print it with defaults filled in"
        " and overrides applied, as YAML that loads back to the same search, then a table of its parameters"
        " (as YAML comments).",
    )
    validate.add_argument("space", metavar="SPACE", help="search-space YAML file")
    add_override_options(validate)
    validate.add_argument(
        "--no-family", action="store_true",
        help="do not load the family (by default validate imports it, checks the trainable's signature and runs its"
        " check_data on the data section, as `showwork search` does before it starts; check_data is skipped when"
        " $RAY_ADDRESS names a cluster, whose data are its own)",
    )
    validate.set_defaults(handler=_run_validate)


def _run_validate(args: argparse.Namespace) -> int:
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    from showwork.space import resolved_yaml

    overrides = override_values(args)
    spec = runnable_spec(args.space, overrides)
    import_s = None
    if not args.no_family:  # what search refuses before it starts: a family that does not load, data it would miss
        # lazy: `showwork --help` imports every command's module; these load when the command runs
        from showwork.families import check_family_data, load_family_timed

        train, import_s = load_family_timed(spec)
        check_family_data(spec, train, None)
    described = spec.space.describe()
    conditional = any(r["when"] for r in described)  # a "drawn when" column only for a space that has conditions
    rows = [[r["name"], r["distribution"], r["bounds"], *([r["when"] or "always"] if conditional else [])] for r in described]
    lines = table_lines(["parameter", "distribution", "bounds", *(["drawn when"] if conditional else [])], rows)
    print(resolved_yaml(spec), end="")
    print(terminal_text(f"#\n# {len(rows)} parameters ('[' includes a bound, ')' excludes it; {{a, ..., b}}: integers a to b, both included):"))
    print(terminal_text("\n".join(f"#   {line}" for line in lines)))
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    from showwork.families import LONG_IMPORT_S

    if import_s is not None and import_s >= LONG_IMPORT_S:
        print(terminal_text(f"#\n# importing the family took {import_s:.1f} s here; each worker imports it once, before its first trial,"
                            f" within setup_timeout_s = {spec.setup_timeout_s:g} s (timeout_s counts the trainable only)"))
    return 0

"""``showwork sample``."""

from __future__ import annotations

import argparse
import json
from typing import Any

from showwork.commands.options import integer
from showwork.commands.searches import runnable_spec
from showwork.commands.text import table_lines
from showwork.escaping import terminal_text
from showwork.values import value_text


def add_to(commands: Any) -> None:
    """Add the command's parser to ``commands`` (argparse sub-parsers)."""
    sample = commands.add_parser(
        "sample",
        help="print the configurations of the first trials of a search",
        description="Print the configurations (and training seeds) of trials 0..N-1 of a search space, exactly"
        " as `showwork search` will draw them: each is a pure function of (seed, trial index).",
    )
    sample.add_argument("space", metavar="SPACE", help="search-space YAML file")
    sample.add_argument("-n", type=integer("-n", 1, 1_000_000), required=True, metavar="N", help="number of trials (1 to 1,000,000)")
    sample.add_argument("--seed", type=integer("--seed"), metavar="S", help="override the search's seed")
    sample.add_argument("--json", action="store_true", help='one JSON object per line: {"trial", "seed", "params"}')
    sample.set_defaults(handler=_run_sample)


def _run_sample(args: argparse.Namespace) -> int:
    # lazy: `showwork --help` imports every command's module; these load when the command runs
    from showwork.sampling import trial_config, trial_seed

    spec = runnable_spec(args.space, {"seed": args.seed})
    trials = ((i, trial_seed(spec.seed, i), trial_config(spec.space, spec.seed, i)) for i in range(args.n))
    if args.json:
        for i, seed, params in trials:
            print(json.dumps({"trial": i, "seed": seed, "params": params}, allow_nan=False))
        return 0
    names = list(spec.space.names)
    rows = [[str(i), str(seed), *(value_text(params[name]) if name in params else "-" for name in names)] for i, seed, params in trials]
    absent = "; '-': a conditional parameter left out of that trial" if spec.space.conditions else ""
    print(terminal_text(f"{spec.name}: trials 0..{args.n - 1} of a search of {spec.num_trials} with seed {spec.seed}; trial_seed is"
                        f" each trial's training seed (floats rounded to 6 digits; --json gives them exactly){absent}\n"))
    print("\n".join(table_lines(["trial", "trial_seed", *names], rows)))
    return 0

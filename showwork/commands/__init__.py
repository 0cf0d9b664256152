"""The commands of ``showwork``, one module each; :data:`COMMANDS` is the registry the parser is built from.

Each command module has ``add_to(commands)``, which declares its arguments (the options several
commands share are declared once, in :mod:`~showwork.commands.options`) and sets its handler. Only
the standard library and showwork's constants are imported here and at the top of each module, so
``showwork --help`` answers at once; a command imports numpy, Ray, MLflow and the statistics when it runs.
"""

from __future__ import annotations

from showwork.commands import (
    best,
    compare,
    curve,
    plan,
    race,
    report,
    rerun,
    results,
    resume,
    sample,
    search,
    ui,
    validate,
)

COMMANDS = (curve, compare, plan, validate, sample, search, resume, race, results, best, rerun, report, ui)
"""In the order ``showwork --help`` lists them."""

__all__ = ["COMMANDS"]

"""``showwork report``: what a paper's appendix needs from one or more random searches.

One module per stage, in the order the data flows:

- :mod:`~showwork.report.inputs` reads searches (ledgers, MLflow experiments) or results files
  into :class:`FamilyResults`; :mod:`~showwork.report.sources_ray` and
  :mod:`~showwork.report.sources_optuna` read Ray Tune experiments and Optuna studies;
- :mod:`~showwork.report.analysis` computes every number (:func:`analyze` → :class:`Report`),
  all of it with :mod:`showwork.statistics`, as :mod:`~showwork.report.settings` says;
  :mod:`~showwork.report.contents` holds what it computed, :mod:`~showwork.report.wording` words it;
- :mod:`~showwork.report.tables` and :mod:`~showwork.report.checklist` turn it into text tables
  and the reproducibility checklists; :mod:`~showwork.report.figures` draws it;
- :mod:`~showwork.report.render` writes Markdown, HTML and LaTeX;
  :mod:`~showwork.report.output` writes the files and logs them to MLflow.

Example
-------
>>> from showwork.report import ReportSettings, analyze, from_results_file, write_report  # doctest: +SKIP
>>> families = from_results_file("results.csv", "val_acc", group="model")                  # doctest: +SKIP
>>> report = analyze(families, ReportSettings(a=0.0, b=1.0))                               # doctest: +SKIP
>>> write_report(report, "report/")                                                        # doctest: +SKIP

Importing :mod:`showwork.report` loads none of these modules: each name below loads its module
when first used (PEP 562). A command that needs one part of the report loads that part alone:
``showwork compare`` the wording, ``showwork best`` the tables, not the MLflow readers, pydantic's
specs or matplotlib (``tests/unit/test_report_figures.py``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from showwork.report.analysis import analyze
    from showwork.report.contents import Report
    from showwork.report.figures.style import FigureStyle
    from showwork.report.inputs import FamilyResults, from_ledger, from_results_file
    from showwork.report.output import ReportFiles, log_report, report_artifact_path, write_report
    from showwork.report.settings import ReportSettings
    from showwork.report.sources import read_sources
    from showwork.report.sources_mlflow import from_mlflow
    from showwork.report.sources_optuna import from_optuna
    from showwork.report.sources_ray import from_ray_tune

_MODULE_OF = {
    "FamilyResults": "inputs",
    "FigureStyle": "figures.style",
    "Report": "contents",
    "ReportFiles": "output",
    "ReportSettings": "settings",
    "analyze": "analysis",
    "from_ledger": "inputs",
    "from_mlflow": "sources_mlflow",
    "from_optuna": "sources_optuna",
    "from_ray_tune": "sources_ray",
    "from_results_file": "inputs",
    "read_sources": "sources",
    "log_report": "output",
    "report_artifact_path": "output",
    "write_report": "output",
}
"""Each public name of the package, and the module of ``showwork.report`` that defines it."""

__all__ = [
    "FamilyResults",
    "FigureStyle",
    "Report",
    "ReportFiles",
    "ReportSettings",
    "analyze",
    "from_ledger",
    "from_mlflow",
    "from_optuna",
    "from_ray_tune",
    "from_results_file",
    "read_sources",
    "log_report",
    "report_artifact_path",
    "write_report",
]


def __getattr__(name: str) -> Any:
    """A public name of the report, from its module when first asked for (PEP 562)."""
    if name not in _MODULE_OF:
        raise AttributeError(f"module 'showwork.report' has no attribute {name!r}")
    # lazy: showwork best, compare and curve import one module of the report, not every module this package names
    return getattr(importlib.import_module(f"showwork.report.{_MODULE_OF[name]}"), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_MODULE_OF})

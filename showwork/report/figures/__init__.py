"""The report's figures: tuning curves with their bands, score CDFs, and the evidence between families.

Every figure is a :class:`matplotlib.figure.Figure` on the Agg canvas, never ``pyplot``: no global
state, no GUI backend, and a figure is freed as soon as it is dropped. The modules import
matplotlib at their top (0.5 s); :mod:`showwork.report` loads a module of its own only when one of
its names is used, so ``showwork --help``, ``best``, ``compare`` and ``curve``, which draw nothing,
never load it.

Figures draw what :func:`showwork.report.analysis.analyze` computed, on the report's budget grid;
nothing here estimates anything. Artists carry ``gid`` s (``"median:<family>"``,
``"median-band:<family>"``, ``"v:<family>"``, ``"u:<family>"``, ``"mean-lower:<family>"``,
``"mean-upper:<family>"``, ``"informative:<family>"``, ``"ecdf:<family>"``,
``"cdf-band:<family>"``, ``"evidence:<a> vs <b>:<level>"``, ``"crossovers:<a> vs <b>"``,
``"informative:<a> vs <b>"``, ``"uninformative:<a> vs <b>"``) so that the drawn data can be
checked, and so that SVG output can be styled or scripted.

:func:`save_figure` writes byte-identical files for the same figure: fixed dpi, no dates or
creator in the metadata, a fixed SVG hash salt.

One module per kind of figure, on what they all share:

- :mod:`~showwork.report.figures.common`: colours, labels, value ranges, the x axis, a new figure,
  the legend, :func:`literal_text`;
- :mod:`~showwork.report.figures.curves`: :func:`tuning_curve_figure` and :func:`cdf_figure`;
- :mod:`~showwork.report.figures.comparison`: :func:`comparison_figure` and
  :func:`cost_comparison_figure`, the curves with the evidence strips of each pair;
- :mod:`~showwork.report.figures.extrapolation`: :func:`extrapolation_figure`, a family's curve
  extrapolated past its search (``report --extrapolate``), one figure per family;
- :mod:`~showwork.report.figures.pages`: many families, :func:`summary_figure` and pages of
  small multiples (:func:`tuning_curve_page`, :func:`cdf_page`);
- :mod:`~showwork.report.figures.parameters`: :func:`scores_by_parameter_figure`, each trial's
  score against each hyperparameter's value;
- :mod:`~showwork.report.figures.fitting`: texts fitted to the figure's size, measured: wrapped
  titles and labels, legends as wide as the figure, tick labels apart, optional labels left out
  where they do not fit; :func:`layout_problems` says what still overlaps or runs off the canvas;
- :mod:`~showwork.report.figures.style`: :class:`FigureStyle`, the title, size, fonts, style file
  and score label of every figure, applied by :func:`report_figures` in one place;
- :mod:`~showwork.report.figures.saving`: :func:`save_figure` and :func:`report_figures`, which
  draws and saves every figure of a report (a new kind of figure is added there).
"""

from showwork.report.figures.common import DPI, EVIDENCE_COLOURS, LOG_X_ABOVE, PALETTE, compute_unit, literal_text, use_log_x
from showwork.report.figures.comparison import comparison_figure, cost_comparison_figure
from showwork.report.figures.curves import cdf_figure, tuning_curve_figure
from showwork.report.figures.extrapolation import EXTRAPOLATION_FIGURE, extrapolation_figure, extrapolation_figures
from showwork.report.figures.fitting import layout_problems
from showwork.report.figures.pages import (
    PAGE_SIZE,
    PAGED_UP_TO,
    SUMMARY_COLOURS,
    SUMMARY_NAMED_UP_TO,
    cdf_page,
    family_pages,
    page_grid,
    summary_evidence,
    summary_figure,
    tuning_curve_page,
)
from showwork.report.figures.parameters import (
    PARAMETERS_PER_PAGE,
    ParameterAxis,
    parameter_axes,
    parameter_grid,
    parameter_pages,
    scores_by_parameter_figure,
)
from showwork.report.figures.saving import (
    DEFAULT_FORMATS,
    FIGURE_FORMATS,
    SCORES_BY_PARAMETER,
    lay_out_figure,
    report_drawings,
    report_figures,
    save_figure,
)
from showwork.report.figures.style import FigureStyle

__all__ = [
    "DEFAULT_FORMATS",
    "DPI",
    "EVIDENCE_COLOURS",
    "EXTRAPOLATION_FIGURE",
    "FIGURE_FORMATS",
    "FigureStyle",
    "LOG_X_ABOVE",
    "PALETTE",
    "ParameterAxis",
    "SCORES_BY_PARAMETER",
    "PAGED_UP_TO",
    "PAGE_SIZE",
    "PARAMETERS_PER_PAGE",
    "SUMMARY_COLOURS",
    "SUMMARY_NAMED_UP_TO",
    "cdf_figure",
    "cdf_page",
    "comparison_figure",
    "compute_unit",
    "cost_comparison_figure",
    "extrapolation_figure",
    "extrapolation_figures",
    "family_pages",
    "lay_out_figure",
    "layout_problems",
    "literal_text",
    "parameter_axes",
    "page_grid",
    "parameter_grid",
    "parameter_pages",
    "report_drawings",
    "report_figures",
    "save_figure",
    "scores_by_parameter_figure",
    "summary_evidence",
    "summary_figure",
    "tuning_curve_figure",
    "tuning_curve_page",
    "use_log_x",
]

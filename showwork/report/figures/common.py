"""What every figure of a report shares: colours, labels, the value range and the x axis, a figure on the
Agg canvas, its legend, and texts drawn as typed.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

from showwork.errors import InputError
from showwork.report.contents import FamilyAnalysis, Report
from showwork.report.figures.fitting import LegendEntry, fit_legend, remember_legend
from showwork.report.tables import duration_unit
from showwork.report.wording import percent_text
from showwork.statistics import budget_cost

__all__ = [
    "DPI",
    "EVIDENCE_COLOURS",
    "LOG_X_ABOVE",
    "PALETTE",
    "UNINFORMATIVE_COLOUR",
    "X_AXES",
    "Y_MARGIN",
    "add_legend",
    "axes_fraction",
    "band_text",
    "clip_infinite",
    "compute_unit",
    "curve_name",
    "curves_y_range",
    "family_colour",
    "informative_budget_x",
    "key_entry",
    "literal_text",
    "metric_label",
    "metric_names",
    "new_figure",
    "score_texts",
    "set_x_range",
    "set_x_scale",
    "use_log_x",
    "x_values",
]

PALETTE = ("#648FFF", "#DC267F", "#FE6100", "#FFB000", "#785EF0", "#009E73", "#000000", "#A6611A")
"""Family colours, cycled: the IBM colour-blind-safe palette (as in opda), then Okabe and Ito's bluish
green and black, and a brown: eight families, eight colours."""
EVIDENCE_COLOURS = {"none": "#f0f0f0", "weak": "#bdd7e7", "fair": "#6baed6", "strong": "#2171b5"}
"""One sequential colour per evidence level (ColorBrewer Blues; "none" a light grey)."""
DPI = 150
Y_MARGIN = 0.05
"""Fraction of the plotted value range added above and below it."""
X_AXES = ("trials", "time")
LOG_X_ABOVE = 100
"""By default the budget axis is logarithmic when the largest budget is above this."""
UNINFORMATIVE_COLOUR = "0.88"


# ------------------------------------------------------------------ labels and ranges


def literal_text(draw):
    """Decorate a function that draws or saves figures: within it every text is drawn as typed.

    matplotlib reads the text between two ``$`` as mathtext, and the texts of a report come from
    its user (family labels, metric and column names, notes): ``$\\frac{$`` would stop the report
    with matplotlib's parse error, and ``$\\alpha$`` be drawn as α while the tables print it as
    typed. No figure of showwork uses mathtext, so it is turned off (``text.parse_math``) both
    while the figure is built and while it is saved, when matplotlib makes the tick labels.
    """

    @functools.wraps(draw)
    def literal(*args, **kwargs):
        with matplotlib.rc_context({"text.parse_math": False}):
            return draw(*args, **kwargs)

    return literal



def family_colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def band_text(report: Report) -> str:
    """E.g. "80% LD-HD band"."""
    return f"{percent_text(report.settings.confidence)} {report.settings.method.upper()} band"


def curve_name(report: Report) -> str:
    q = report.settings.quantile
    return "median" if q == 0.5 else f"{q:g}-quantile"


def metric_names(report: Report) -> str:
    """The families' metrics, each once: e.g. "val_accuracy" or "f1 / accuracy"."""
    return " / ".join(dict.fromkeys(f.results.metric for f in report.families))


def metric_label(report: Report) -> str:
    """The score axis's label: the metrics, and "(lower is better)" for losses."""
    metrics = metric_names(report)
    return f"{metrics} (lower is better)" if report.minimize else metrics


def score_texts(report: Report) -> tuple[str, ...]:
    """Every label a figure gives the score axis (what ``--score-label`` replaces)."""
    return (metric_label(report), metric_names(report))


def curves_y_range(families: Sequence[FamilyAnalysis], point_estimates: bool = True) -> tuple[float, float]:
    """The y range of the curves drawn: every finite estimate, and the band ends the data determined, plus a margin.

    The medians, and V and U when ``point_estimates``, at every budget; the median's band only up to
    the family's informative budget. Past it one band end is the score's bound (the data cannot
    bound the curve there), and band ends equal to a support bound are left out everywhere: such a
    band runs off the plot (its clipped ends marked by :func:`_mark_clipped`) instead of squashing
    the curves against ``[a, b]``. The range never extends past finite support bounds.
    """
    values = []
    lo_bound, hi_bound = math.inf, -math.inf
    for f in families:
        c = f.curve
        a, b = c.band.a, c.band.b
        lo_bound, hi_bound = min(lo_bound, a), max(hi_bound, b)
        informative = c.k <= f.advice.informative_k
        drawn = [c.quantile_curve] + ([c.v, c.u] if point_estimates else [])
        drawn += [c.quantile_curve_lower[informative], c.quantile_curve_upper[informative]]
        for series in drawn:
            values.append(series[np.isfinite(series) & (series != a) & (series != b)])
    data = np.concatenate(values)
    if data.size == 0:  # every band end at a bound: the curves themselves lie inside
        data = np.concatenate([f.curve.quantile_curve for f in families])
    lo, hi = float(data.min()), float(data.max())
    margin = Y_MARGIN * (hi - lo) if hi > lo else 0.05 * max(abs(lo), 1.0)
    lo, hi = max(lo - margin, lo_bound), min(hi + margin, hi_bound)
    if not hi > lo:  # all values on one finite bound
        lo, hi = lo - 0.05 * max(abs(lo), 1.0), hi + 0.05 * max(abs(hi), 1.0)
    return lo, hi


def clip_infinite(values: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Replace -inf by ``lo`` and +inf by ``hi``; finite values are left for the axes to clip."""
    return np.where(values == -math.inf, lo, np.where(values == math.inf, hi, values))


def x_values(report: Report, axis: str, unit: str) -> list[np.ndarray]:
    """Each family's x coordinates: its budgets, or their expected compute in ``unit``."""
    if axis == "trials":
        return [f.curve.k for f in report.families]
    out = []
    for f in report.families:
        if f.curve.mean_runtime_s is None:
            raise InputError(
                f"{f.name} ({f.results.source}): no runtimes were recorded, so its tuning curve cannot be"
                " drawn against compute; give a runtime column or use the trials axis."
            )
        out.append(f.curve.cost(unit, _gpus(f, unit)))
    return out


def _gpus(family: FamilyAnalysis, unit: str) -> float:
    """GPUs per trial for ``unit`` (only GPU-hours depend on it)."""
    if unit != "gpu-hours":
        return 1.0
    gpus = family.summary.gpus_per_trial
    if not gpus > 0:
        raise InputError(
            f"{family.name}: its trials held no GPUs, so its compute cannot be given in GPU-hours;"
            " use another cost unit or set the GPUs per trial."
        )
    return gpus


def new_figure(width: float, height: float, layout: str | None = "constrained", size: tuple[float, float] | None = None) -> Figure:
    """A figure on the Agg canvas, outside pyplot (no global state, no GUI backend).

    ``width`` × ``height`` inches is the figure's own size; ``size`` (``--figsize``) replaces it.
    """
    figure = Figure(figsize=size or (width, height), dpi=DPI, layout=layout)
    FigureCanvasAgg(figure)
    return figure


def add_legend(figure: Figure, entries: Sequence[LegendEntry], **kwargs: Any) -> None:
    """One legend under the plot (never over the data or the title), filled row by row, fitted to the figure.

    :func:`~showwork.report.figures.fitting.fit_legend` lays it out now, and again when the figure
    is saved (:func:`~showwork.report.figures.fitting.fit_texts`), at the size it is saved at.
    """
    remember_legend(figure, entries, kwargs)
    fit_legend(figure, entries, **kwargs)


def key_entry(handle: Any) -> LegendEntry:
    """A legend entry for a line style or shade (not a family): its label, wrapped but never shortened."""
    return LegendEntry(handle, "", handle.get_label())


def set_x_range(ax: Axes, xs: Sequence[np.ndarray]) -> None:
    """x limits at the first and last budget (no margins); a single budget is left to autoscaling."""
    lo, hi = min(float(x[0]) for x in xs), max(float(x[-1]) for x in xs)
    if hi > lo:
        ax.set_xlim(lo, hi)


def use_log_x(report: Report, log_x: bool | None) -> bool:
    """Whether the budget axis is logarithmic: as asked, else (None) when the largest budget is above ``LOG_X_ABOVE``."""
    return bool(log_x) if log_x is not None else float(report.budgets[-1]) > LOG_X_ABOVE


def _plain_number(x: float, _pos: Any = None) -> str:
    """A tick label without scientific notation: 1, 10, 100, 1000; 0.5, 0.01 on a compute axis."""
    return f"{x:.0f}" if x >= 1 and float(x).is_integer() else f"{x:g}"


def set_x_scale(ax: Axes, log_x: bool, *, budgets: bool = False) -> None:
    """The x scale and its ticks: log or linear; on a budget axis (``budgets``) only integer ticks (never 2.5)."""
    if log_x:
        ax.set_xscale("log")
        # Major ticks at powers of ten, labelled 1, 10, 100 (not 10⁰); minor ticks unlabelled.
        ax.xaxis.set_major_locator(LogLocator(base=10))
        ax.xaxis.set_major_formatter(FuncFormatter(_plain_number))
        ax.xaxis.set_minor_formatter(NullFormatter())
    elif budgets:
        ax.xaxis.set_major_locator(MaxNLocator(nbins="auto", steps=[1, 2, 5, 10], integer=True, min_n_ticks=2))


def compute_unit(report: Report) -> str:
    """The unit of the compute axis: GPU-hours when the report counts them, else by size (seconds, minutes, hours).

    The size is the largest expected compute drawn (the last budget times the mean runtime), so the
    axis never reads "0.0005 h" (the thresholds of :func:`showwork.report.tables.duration_unit`).
    """
    if report.settings.cost_unit == "gpu-hours":
        return "gpu-hours"
    largest = [float(f.curve.k[-1]) * f.curve.mean_runtime_s for f in report.families if f.curve.mean_runtime_s is not None]
    return duration_unit(max(largest)) if largest else report.settings.cost_unit


def informative_budget_x(family: FamilyAnalysis, axis: str, unit: str) -> float:
    """The family's informative budget on the x axis: in trials, or its expected compute in ``unit``."""
    k = family.advice.informative_k
    return k if axis == "trials" else float(budget_cost(k, family.curve.mean_runtime_s, unit, _gpus(family, unit)))


def axes_fraction(x0: float, x1: float, lim: tuple[float, float], log: bool) -> float:
    """The share of the axes' width between x0 and x1."""
    if not lim[1] > lim[0]:
        return 1.0
    if log:
        return (math.log(x1) - math.log(x0)) / (math.log(lim[1]) - math.log(lim[0]))
    return (x1 - x0) / (lim[1] - lim[0])

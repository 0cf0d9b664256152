"""The families compared: their median curves and, below them, one evidence strip per pair (by trials or
at equal cost).
"""

from __future__ import annotations

import math

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch, Rectangle

from showwork.report.contents import PairAnalysis, Report
from showwork.report.figures.common import (
    EVIDENCE_COLOURS,
    add_legend,
    axes_fraction,
    curve_name,
    curves_y_range,
    literal_text,
    metric_label,
    new_figure,
    percent_text,
    set_x_range,
    set_x_scale,
    use_log_x,
)
from showwork.report.figures.curves import draw_curves, shade_uninformative
from showwork.report.wording import evidence_text, resolved_bound_text
from showwork.statistics import EVIDENCE_LEVELS

__all__ = [
    "comparison_figure",
    "cost_comparison_figure",
    "evidence_label",
]

def _pair_name(pair: PairAnalysis) -> str:
    return f"{pair.comparison.a} vs {pair.comparison.b}"


def _segment_edges(k: np.ndarray, start: float, end: float) -> tuple[float, float]:
    """The x extent of the budgets ``start..end`` of grid ``k``: halfway (geometrically) to each neighbour.

    Neighbouring ranges then tile the axis without gaps, on a linear or a log scale, and a range of
    one budget still has a width.
    """
    i, j = int(np.searchsorted(k, start)), int(np.searchsorted(k, end))
    left = float(k[0]) if i == 0 else math.sqrt(k[i - 1] * k[i])
    right = float(k[-1]) if j == k.size - 1 else math.sqrt(k[j] * k[j + 1])
    return left, right


def _draw_strip(ax: Axes, pair: PairAnalysis, log_x: bool) -> None:
    """One pair's evidence by budget range: coloured segments, favoured-family labels, crossovers, reach."""
    c = pair.comparison
    name = _pair_name(pair)
    k = np.asarray(c.k, dtype=float)
    lim = (float(k[0]), float(k[-1]))
    extents = [_segment_edges(k, r.k_start, r.k_end) for r in c.ranges]
    for level in EVIDENCE_LEVELS:
        spans = [(x0, x1 - x0) for r, (x0, x1) in zip(c.ranges, extents) if r.level == level]
        if spans:
            ax.broken_barh(spans, (0.0, 1.0), facecolors=EVIDENCE_COLOURS[level], edgecolor="none",
                           gid=f"evidence:{name}:{level}")
    for r, (x0, x1) in zip(c.ranges, extents):
        if r.favoured is None:
            continue
        # About 1.1 % of the width per character at this font size (8 in wide figure).
        if axes_fraction(x0, x1, lim, log_x) < 0.011 * len(r.favoured) + 0.01:
            continue
        centre = math.sqrt(x0 * x1) if log_x else (x0 + x1) / 2
        ax.text(centre, 0.5, r.favoured, ha="center", va="center", fontsize="x-small", clip_on=True,
                color="white" if r.level in ("fair", "strong") else "black")
    if c.crossovers:
        ax.vlines(c.crossovers, 0.0, 1.0, colors="black", linewidth=1.5, gid=f"crossovers:{name}")
    reach = pair.informative_k
    if reach < lim[1]:
        if reach >= lim[0]:
            ax.axvline(reach, color="0.2", linewidth=1.0, linestyle="--", gid=f"informative:{name}")
        start = max(reach, lim[0])
        ax.add_patch(Rectangle((start, 0.0), lim[1] - start, 1.0, facecolor="none", edgecolor="0.3",
                               hatch="///", linewidth=0, gid=f"uninformative:{name}"))
    ax.set_ylim(0.0, 1.0)
    ax.set_yticks([0.5], [name], fontsize="small")
    ax.tick_params(axis="y", length=0)


def evidence_label(name: str, confidence: float, cell: bool = False) -> str:
    """A legend entry for an evidence level (or, with ``cell``, a summary cell "strong: family better"):
    strong is resolved within reach, with its error bound; fair and weak have none."""
    level = name.split(":")[0]
    text = name if cell and level != "none" else evidence_text(level)
    if level == "strong":
        return f"{text} (resolved within reach; {resolved_bound_text(confidence)})"
    if level in ("weak", "fair"):
        return f"{text} (no error bound: not resolved)"
    return text


@literal_text
def comparison_figure(report: Report, *, log_x: bool | None = None) -> Figure | None:
    """The median curves with their bands, and below them one evidence strip per pair of families.

    A strip colours each budget range by the evidence that one family beats the other there
    (none / weak / fair / strong, from :func:`showwork.statistics.compare_curves`), names the
    favoured family where the range is wide enough, marks the crossovers of the medians, and
    hatches the budgets past the pair's informative budget (where at least one band is trivial,
    so nothing there is resolved). The legend says that only strong evidence within reach is
    resolved, with its error bound (:func:`~showwork.report.wording.resolved_bound_text`). In the top panel each family's band is a light fill, outlined
    and hatched in its own direction, so two overlapping bands stay readable; the uninformative
    budgets are shaded and labelled as in :func:`tuning_curve_figure`.

    Parameters
    ----------
    report : Report
    log_x : bool, optional
        Logarithmic budget axis; default (None) when the largest budget is above ``LOG_X_ABOVE``.

    Returns
    -------
    matplotlib.figure.Figure or None
        None when the report has fewer than two families.
    """
    if len(report.families) < 2 or not report.pairs:
        return None

    n_pairs = len(report.pairs)
    figure = new_figure(8.0, 4.2 + 0.42 * n_pairs + 0.5)
    grid = figure.add_gridspec(1 + n_pairs, 1, height_ratios=[9.0] + [1.0] * n_pairs)
    top = figure.add_subplot(grid[0])
    log_x = use_log_x(report, log_x)
    set_x_scale(top, log_x, budgets=True)
    xs = [f.curve.k for f in report.families]
    handles = draw_curves(top, report, xs, point_estimates=False, ylim=curves_y_range(report.families, point_estimates=False),
                           hatch=True)
    shade_uninformative(top, report, xs, [f.advice.informative_k for f in report.families])
    top.set_ylabel(metric_label(report))
    top.grid(True, linewidth=0.4, alpha=0.4)
    top.tick_params(axis="x", labelbottom=False)
    top.set_title(
        f"{curve_name(report).capitalize()} tuning curves ({percent_text(report.settings.confidence)}"
        f" {report.settings.method.upper()} bands) and the evidence between them",
        fontsize="medium",
    )
    _evidence_strips(figure, grid, top, report.pairs, log_x, "budget k (trials)", xs, handles, report.settings.confidence)
    return figure


def _evidence_strips(figure: Figure, grid, top, pairs, log_x: bool, xlabel: str, xs, handles, confidence: float) -> None:
    """Below ``top``, one evidence strip per pair (:func:`_draw_strip`) sharing its x axis, and the legend:
    the curves' ``handles``, the evidence levels (what is resolved, with its bound), crossings, shade."""
    strips = []
    for row, pair in enumerate(pairs, start=1):
        ax = figure.add_subplot(grid[row], sharex=top)
        _draw_strip(ax, pair, log_x)
        ax.tick_params(axis="x", labelbottom=row == len(pairs))
        strips.append(ax)
    strips[-1].set_xlabel(xlabel)
    set_x_range(top, xs)
    key = [Patch(facecolor=EVIDENCE_COLOURS[level], edgecolor="0.6", linewidth=0.5, label=evidence_label(level, confidence))
           for level in EVIDENCE_LEVELS]
    key.append(Line2D([], [], color="black", linewidth=1.5, label="medians cross"))
    key.append(Patch(facecolor="none", edgecolor="0.3", hatch="///", linewidth=0, label="bands uninformative"))
    add_legend(figure, handles + key)


_COST_LOG_X_SPAN = 10.0
"""A cost axis spanning more than this factor is logarithmic unless told otherwise (the cheap family's
k = c / m grows fast: linear, the first trials of the dear family are a sliver)."""


@literal_text
def cost_comparison_figure(report: Report, *, log_x: bool | None = None) -> Figure | None:
    """:func:`comparison_figure` on the cost axis: the families compared at equal total cost.

    Each family's median curve and band are drawn at k = c / (its mean cost per trial) for every
    total cost c of ``report.cost.axis`` (Lourie et al. 2024, §2), and below them one evidence strip
    per pair (:func:`_draw_strip`, the comparison figure's drawing) with crossovers in cost. The
    shade starts at the first family's informative budget converted to cost. Logarithmic when
    asked, else (None) when the axis spans more than a factor ``_COST_LOG_X_SPAN``.

    Returns None without a cost view or with fewer than two families.
    """
    view = report.cost
    if view is None or not view.pairs or len(report.families) < 2:
        return None

    n_pairs = len(view.pairs)
    figure = new_figure(8.0, 4.2 + 0.42 * n_pairs + 0.5)
    grid = figure.add_gridspec(1 + n_pairs, 1, height_ratios=[9.0] + [1.0] * n_pairs)
    top = figure.add_subplot(grid[0])
    x = np.asarray(view.axis, dtype=float)
    log_x = bool(log_x) if log_x is not None else float(x[-1]) > _COST_LOG_X_SPAN * float(x[0])
    set_x_scale(top, log_x)
    curves = [f.cost_curve for f in report.families]
    xs = [x] * len(report.families)
    handles = draw_curves(top, report, xs, point_estimates=False, ylim=curves_y_range(report.families, point_estimates=False),
                           hatch=True, curves=curves)
    shade_uninformative(top, report, xs, [f.advice.informative_k * view.mean_costs[f.name] for f in report.families],
                         label=False)
    top.set_ylabel(metric_label(report))
    top.grid(True, linewidth=0.4, alpha=0.4)
    top.tick_params(axis="x", labelbottom=False)
    top.set_title(
        f"{curve_name(report).capitalize()} tuning curves at equal cost ({percent_text(report.settings.confidence)}"
        f" {report.settings.method.upper()} bands)",
        fontsize="medium",
    )
    _evidence_strips(figure, grid, top, view.pairs, log_x, f"total cost ({view.unit})", xs, handles,
                     report.settings.confidence)
    return figure

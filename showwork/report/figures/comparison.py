"""The families compared: their median curves and, below them, one evidence strip per pair (by trials or
at equal cost).
"""

from __future__ import annotations

import dataclasses
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
    curve_name,
    curves_y_range,
    key_entry,
    literal_text,
    metric_label,
    new_figure,
    set_x_range,
    set_x_scale,
    use_log_x,
)
from showwork.report.figures.curves import draw_curves, shade_uninformative
from showwork.report.figures.fitting import LegendEntry, font_points, mark_optional, text_width
from showwork.report.wording import evidence_text, percent_text, resolved_bound_text
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


def _draw_strip(ax: Axes, pair: PairAnalysis, log_x: bool, label: str, short: dict[str, str]) -> None:
    """One pair's evidence by budget range: coloured segments, favoured-family labels, crossovers, reach.

    ``label`` names the strip ("A vs B"); ``short`` gives each family's name as the strip writes it
    (its letter where the figure uses letters).
    """
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
        # Named where the range is wide enough: measured when the figure is saved (mark_optional).
        centre = math.sqrt(x0 * x1) if log_x else (x0 + x1) / 2
        mark_optional(ax.text(centre, 0.5, short.get(r.favoured, r.favoured), ha="center", va="center", fontsize="x-small",
                              color="white" if r.level in ("fair", "strong") else "black", gid=f"favoured:{name}"),
                      within=(x0, x1))
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
    ax.set_yticks([0.5], [label], fontsize="small")
    ax.tick_params(axis="y", length=0)


def evidence_label(name: str, confidence: float, cell: bool = False, compact: bool = False, independent: bool = True) -> str:
    """A legend entry for an evidence level (or, with ``cell``, a summary cell "strong: family better"):
    strong is resolved within reach, with its error bound (``independent``: the pairs drawn are
    independent searches; False where any shares trials, :func:`~showwork.report.wording.resolved_bound_text`);
    fair and weak have none. ``compact``: the level alone ("strong evidence"), for a legend with little room."""
    level = name.split(":")[0]
    text = name if cell and level != "none" else evidence_text(level)
    if compact:
        return text
    if level == "strong":
        return f"{text} (resolved within reach; {resolved_bound_text(confidence, independent)})"
    if level in ("weak", "fair"):
        return f"{text} (no error bound: not resolved)"
    return text


@literal_text
def comparison_figure(report: Report, *, log_x: bool | None = None, size: tuple[float, float] | None = None) -> Figure | None:
    """The median curves with their bands, and below them one evidence strip per pair of families.

    A strip colours each budget range by the evidence that one family beats the other there
    (none / weak / fair / strong, from :func:`showwork.statistics.compare_curves`), names the
    favoured family where the range is wide enough, marks the crossovers of the medians, and
    hatches the budgets past the pair's informative budget (where at least one band is trivial,
    so nothing there is resolved). The legend says that only strong evidence within reach is
    resolved, with its error bound (:func:`~showwork.report.wording.resolved_bound_text`). In the top panel each family's band is a light fill, outlined
    and hatched in its own direction, so two overlapping bands stay readable; the uninformative
    budgets are shaded and labelled as in :func:`tuning_curve_figure`.

    A strip is named "A vs B" by its families' names where they fit a quarter of the figure's
    width, else by letters that the legend gives each family ("A: DeBERTa (n = 50)"). A figure of
    a given ``size`` holds as many strips as leave the curves room (at least one): the others
    are left out, and its x label says how many are shown (the report's tables give every pair).

    Parameters
    ----------
    report : Report
    log_x : bool, optional
        Logarithmic budget axis; default (None) when the largest budget is above ``LOG_X_ABOVE``.
    size : (float, float), optional
        The figure's width and height in inches; default 8 inches wide, its height growing with
        the number of pairs.

    Returns
    -------
    matplotlib.figure.Figure or None
        None when the report has fewer than two families.
    """
    if len(report.families) < 2 or not report.pairs:
        return None
    log_x = use_log_x(report, log_x)
    figure, grid, top, pairs, labels, codes = _comparison_axes(report, report.pairs, size)
    set_x_scale(top, log_x, budgets=True)
    xs = [f.curve.k for f in report.families]
    handles = draw_curves(top, report, xs, ylim=curves_y_range(report.families, point_estimates=False), hatch=True,
                          codes=codes)
    shade_uninformative(top, report, xs, [f.advice.informative_k for f in report.families])
    top.set_ylabel(metric_label(report))
    top.grid(True, linewidth=0.4, alpha=0.4)
    top.tick_params(axis="x", labelbottom=False)
    top.set_title(
        f"{curve_name(report).capitalize()} tuning curves ({percent_text(report.settings.confidence)}"
        f" {report.settings.method.upper()} bands) and the evidence between them",
        fontsize="medium",
    )
    _evidence_strips(figure, grid, top, pairs, labels, codes, report, log_x, "budget k (trials)", xs, handles,
                     len(report.pairs))
    return figure


_STRIP_LINES = 1.9
"""The least height of an evidence strip, in lines of its label's font."""
_STRIPS_SHARE = 0.25
"""The most of a figure's height the evidence strips may take (a figure of a given size)."""
_LEGEND_SHARE = 0.27
"""The most of the figure's height the legend may take before it is set smaller (the strips need room too)."""
_NAMED_STRIP_SHARE = 0.25
"""A strip is named by its families' names where "A vs B" fits this share of the figure's width."""


def _comparison_axes(report: Report, all_pairs, size: tuple[float, float] | None):
    """The comparison figure's axes: the curves on top and room for the strips of the pairs that fit.

    Returns the figure, its grid of axes, the top axes, the pairs shown, their strips' labels and the families'
    letters (None where the strips name the families).
    """
    line = 1.25 * font_points("small") / 72.0  # inches
    strip = _STRIP_LINES * line
    if size is None:
        pairs = list(all_pairs)
        figure = new_figure(8.0, 4.2 + 0.42 * len(pairs) + 0.5)
    else:
        fits = max(1, int(_STRIPS_SHARE * size[1] // strip))
        pairs = list(all_pairs)[:fits]
        figure = new_figure(*size)
    n = len(pairs)
    # The strips' share of the axes' height: their least height where that is more than 1 : 9 of the curves.
    axes_height = 0.55 * figure.get_figheight()
    share = min(0.5, max(n / (9.0 + n), n * strip / axes_height))
    grid = figure.add_gridspec(1 + n, 1, height_ratios=[1.0 - share] + [share / n] * n)
    top = figure.add_subplot(grid[0])
    names = [f.name for f in report.families]
    measure = lambda text: text_width(figure, text, font_points("small"))  # noqa: E731 - used just below
    full = [f"{p.comparison.a} vs {p.comparison.b}" for p in pairs]
    if max(measure(label) for label in full) <= _NAMED_STRIP_SHARE * figure.bbox.width:
        return figure, grid, top, pairs, full, None
    codes = [_letters(i) for i in range(len(names))]
    code = dict(zip(names, codes))
    return figure, grid, top, pairs, [f"{code[p.comparison.a]} vs {code[p.comparison.b]}" for p in pairs], codes


def _letters(i: int) -> str:
    """A, B, ..., Z, AA, AB, ...: a family's letter."""
    out = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        out = chr(ord("A") + r) + out
    return out


def _evidence_strips(figure: Figure, grid, top, pairs, labels, codes, report: Report, log_x: bool, xlabel: str, xs,
                     handles, total: int) -> None:
    """Below ``top``, one evidence strip per pair (:func:`_draw_strip`) sharing its x axis, and the legend:
    the curves' ``handles``, the evidence levels (what is resolved, with its bound), crossings, shade.
    ``total`` is the number of pairs compared (the x label says when fewer are shown)."""
    short = {} if codes is None else dict(zip((f.name for f in report.families), codes))
    strips = []
    for row, (pair, label) in enumerate(zip(pairs, labels), start=1):
        ax = figure.add_subplot(grid[row], sharex=top)
        _draw_strip(ax, pair, log_x, label, short)
        ax.tick_params(axis="x", labelbottom=row == len(pairs))
        strips.append(ax)
    if len(pairs) < total:
        xlabel += f"; {len(pairs)} of {total} pairs shown"
    strips[-1].set_xlabel(xlabel)
    set_x_range(top, xs)
    confidence = report.settings.confidence
    # Where the legend has little room, one entry shows the four levels, from none to strong.
    patches = [Patch(facecolor=EVIDENCE_COLOURS[level], edgecolor="0.6", linewidth=0.5) for level in EVIDENCE_LEVELS]
    independent = all(p.comparison.independent for p in pairs)  # the bound that holds for every pair drawn
    key = [LegendEntry(patch, "", evidence_label(level, confidence, independent=independent), compact="")
           for patch, level in zip(patches, EVIDENCE_LEVELS)]
    key[-1] = dataclasses.replace(key[-1], compact="evidence: " + ", ".join(EVIDENCE_LEVELS),
                                  compact_handle=tuple(patches))
    key.append(key_entry(Line2D([], [], color="black", linewidth=1.5, label="medians cross")))
    key.append(key_entry(Patch(facecolor="none", edgecolor="0.3", hatch="///", linewidth=0, label="bands uninformative")))
    add_legend(figure, handles + key, height_share=_LEGEND_SHARE)


_COST_LOG_X_SPAN = 10.0
"""A cost axis spanning more than this factor is logarithmic unless told otherwise (the cheap family's
k = c / m grows fast: linear, the first trials of the dear family are a sliver)."""


@literal_text
def cost_comparison_figure(report: Report, *, log_x: bool | None = None, size: tuple[float, float] | None = None) -> Figure | None:
    """:func:`comparison_figure` on the cost axis: the families compared at equal total cost.

    Each family's median curve and band are drawn at k = c / (its mean cost per trial) for every
    total cost c of ``report.cost.axis`` (Lourie et al. 2024, §2), and below them one evidence strip
    per pair (:func:`_draw_strip`, the comparison figure's drawing) with crossovers in cost. The
    shade starts at the first family's informative budget converted to cost. Logarithmic when
    asked, else (None) when the axis spans more than a factor ``_COST_LOG_X_SPAN``. ``size`` as in
    :func:`comparison_figure`.

    Returns None without a cost view or with fewer than two families.
    """
    view = report.cost
    if view is None or not view.pairs or len(report.families) < 2:
        return None
    figure, grid, top, pairs, labels, codes = _comparison_axes(report, view.pairs, size)
    x = np.asarray(view.axis, dtype=float)
    log_x = bool(log_x) if log_x is not None else float(x[-1]) > _COST_LOG_X_SPAN * float(x[0])
    set_x_scale(top, log_x)
    curves = [f.cost_curve for f in report.families]
    xs = [x] * len(report.families)
    handles = draw_curves(top, report, xs, ylim=curves_y_range(report.families, point_estimates=False), hatch=True,
                          curves=curves, codes=codes)
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
    _evidence_strips(figure, grid, top, pairs, labels, codes, report, log_x, f"total cost ({view.unit})", xs, handles,
                     len(view.pairs))
    return figure

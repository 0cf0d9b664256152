"""Each family's tuning curve extrapolated past its search (``report --extrapolate K``), one figure per family: the
observed band, the model-based band, and the asymptote with its interval."""

from __future__ import annotations

import math

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from showwork.report.contents import FamilyAnalysis, Report
from showwork.report.figures.common import (
    LOG_X_ABOVE,
    Y_MARGIN,
    add_legend,
    band_text,
    clip_infinite,
    curve_name,
    family_colour,
    literal_text,
    metric_label,
    new_figure,
    set_x_scale,
)
from showwork.report.figures.fitting import LegendEntry
from showwork.report.wording import MODEL_BASED, percent_text
from showwork.statistics.extrapolation import Extrapolation

__all__ = ["EXTRAPOLATION_FIGURE", "extrapolation_figure", "extrapolation_figures"]

EXTRAPOLATION_FIGURE = "extrapolation"
"""The name of a family's extrapolation figure: ``extrapolation_<i>``, i its position among the report's families."""

_MODEL_BASED_HATCH = "////"
"""The hatch of a model-based band: never read as the observed, nonparametric one (a plain fill)."""


def _y_range(family: FamilyAnalysis) -> tuple[float, float]:
    """Every finite value drawn: the observed median and informative band ends, the extrapolated band, the asymptote.

    The asymptote's interval is not in it: where it runs past the band (often, with few trials) it
    would squash the curves; its bar runs to the edge instead, marked by a triangle.
    """
    e, c = family.extrapolation, family.curve
    informative = c.k <= family.advice.informative_k
    values = [c.quantile_curve, c.quantile_curve_lower[informative], c.quantile_curve_upper[informative],
              e.point, e.lower, e.upper, [e.asymptote.estimate]]
    finite = np.concatenate([np.asarray(v, dtype=float) for v in values])
    finite = finite[np.isfinite(finite)]
    lo, hi = float(finite.min()), float(finite.max())
    margin = Y_MARGIN * (hi - lo) if hi > lo else 0.05 * max(abs(lo), 1.0)
    return lo - margin, hi + margin


def _key(handle, label: str, compact: str) -> LegendEntry:
    """A key entry (not a family) with a shorter form for a legend with little room (a paper's column)."""
    return LegendEntry(handle, "", label, compact=compact)


def extrapolation_figures(report: Report) -> list[tuple[str, FamilyAnalysis]]:
    """The extrapolation figures of a report: ``extrapolation_<i>`` for the i-th family (from 1) whose curve was
    extrapolated (``FamilyAnalysis.extrapolation`` an :class:`Extrapolation`; a refused one has none)."""
    return [(f"{EXTRAPOLATION_FIGURE}_{i}", f) for i, f in enumerate(report.families, start=1)
            if isinstance(f.extrapolation, Extrapolation)]


@literal_text
def extrapolation_figure(report: Report, family: FamilyAnalysis, *, log_x: bool | None = None,
                         size: tuple[float, float] | None = None) -> Figure:
    """One family's tuning curve extrapolated past its search (``report --extrapolate K``).

    In the family's colour: the observed median (or ``settings.quantile``) curve, solid, with its
    nonparametric band as a plain light fill up to its informative budget; the extrapolation's band
    where its ``source`` is model-based as a hatched fill with dashed ends, and the fitted law's
    curve dashed over it; the asymptote as a dotted horizontal line with its interval as a bar on the right edge
    (at k = K), run to the edge with a triangle where it reaches past the curves' range (not widened to hold it:
    with few trials the interval can be many times the band's width). Artists carry gids ``"observed:<family>"``,
    ``"observed-band:<family>"``, ``"model-based-band:<family>"``, ``"model-based-lower:<family>"``,
    ``"model-based-upper:<family>"``, ``"fitted:<family>"``, ``"asymptote:<family>"``, ``"asymptote-interval:<family>"``
    and, at its ends, ``"asymptote-interval-end:<family>"`` or ``"asymptote-interval-clipped:<family>"``.

    Parameters
    ----------
    report : Report
    family : FamilyAnalysis
        One of ``report.families`` whose ``extrapolation`` is an :class:`Extrapolation`.
    log_x : bool, optional
        Logarithmic budget axis (``--log-x``; False: ``--linear-x``); default (None) when K is above ``LOG_X_ABOVE``.
    size : (float, float), optional
        The figure's width and height in inches; default 8 × 4.8.
    """
    e, c, colour = family.extrapolation, family.curve, family_colour(report.families.index(family))
    lo, hi = _y_range(family)
    figure = new_figure(8.0, 4.8, size=size)
    ax = figure.add_subplot()
    set_x_scale(ax, bool(log_x) if log_x is not None else e.K > LOG_X_ABOVE, budgets=True)
    name = family.name
    seen = c.k <= family.advice.informative_k  # past it the observed band is the score's bound: the model-based one speaks
    ax.fill_between(c.k[seen], clip_infinite(c.quantile_curve_lower[seen], lo, hi), clip_infinite(c.quantile_curve_upper[seen], lo, hi),
                    facecolor=colour, alpha=0.18, linewidth=0, gid=f"observed-band:{name}")
    ax.plot(c.k, c.quantile_curve, color=colour, linewidth=1.8, gid=f"observed:{name}")
    past = np.asarray(e.source == MODEL_BASED)
    if past.any():
        start = max(int(np.argmax(past)) - 1, 0)  # joined to the last nonparametric budget: one band, no gap
        k, lower, upper = e.k[start:], clip_infinite(e.lower[start:], lo, hi), clip_infinite(e.upper[start:], lo, hi)
        ax.fill_between(k, lower, upper, facecolor="none", edgecolor=colour, linewidth=0, hatch=_MODEL_BASED_HATCH,
                        alpha=0.6, gid=f"model-based-band:{name}")
        for side, values in (("lower", lower), ("upper", upper)):
            ax.plot(k, values, color=colour, linewidth=0.9, linestyle="--", gid=f"model-based-{side}:{name}")
        ax.plot(k, e.point[start:], color=colour, linewidth=1.4, linestyle=(0, (5, 2)), gid=f"fitted:{name}")
    a = e.asymptote
    # A bar on the right edge, not a strip across the figure: a strip as wide as the axes read as a band over every budget.
    bar_lo, bar_hi = max(a.lower, lo), min(a.upper, hi)
    if bar_lo < bar_hi:
        ax.plot([float(e.K)] * 2, [bar_lo, bar_hi], color=colour, linewidth=2.0, clip_on=False, zorder=5,
                gid=f"asymptote-interval:{name}")
        for end, y, past in (("lower", bar_lo, a.lower < lo), ("upper", bar_hi, a.upper > hi)):
            ax.plot([float(e.K)], [y], color=colour, clip_on=False, zorder=5, linestyle="none",
                    marker=("v" if end == "lower" else "^") if past else "_", markersize=5 if past else 9,
                    gid=f"asymptote-interval-{'clipped' if past else 'end'}:{name}")
    if math.isfinite(a.estimate):
        ax.axhline(a.estimate, color=colour, linewidth=1.0, linestyle=":", gid=f"asymptote:{name}")
    grey = "0.35"
    runs_past = bar_lo < bar_hi and (a.lower < lo or a.upper > hi)
    entries = [
        LegendEntry((Patch(facecolor=colour, alpha=0.25, linewidth=0), Line2D([], [], color=colour, linewidth=1.8)),
                    name, f" (n = {c.n})", gid=f"legend:{name}"),
        _key(Patch(facecolor=(0.35, 0.35, 0.35, 0.18), linewidth=0), f"observed {curve_name(report)}, {band_text(report)}",
             f"observed, {percent_text(report.settings.confidence)} band"),
        _key(Patch(facecolor="none", edgecolor=grey, hatch=_MODEL_BASED_HATCH, linewidth=0.9, linestyle="--"),
             f"{MODEL_BASED} band and fitted curve (hold if the tail is noisy-quadratic)", f"{MODEL_BASED} (if the tail is noisy-quadratic)"),
        _key(Line2D([], [], color=grey, linewidth=1.0, linestyle=":"),
             "asymptote; its interval " + ("(bar at right, triangle: past the axis)" if runs_past else "(the bar at the right)"),
             "asymptote (bar: its interval)"),
    ]
    ax.set_xlim(1.0, float(e.K))
    ax.set_ylim(lo, hi)
    ax.set_xlabel("budget k (trials)")
    ax.set_ylabel(metric_label(report))
    # The band's level is in the legend: the title, wrapped at a column's width, stays short.
    ax.set_title(f"{name}: {curve_name(report)} curve extrapolated to k = {e.K}", fontsize="medium")
    ax.grid(True, linewidth=0.4, alpha=0.4)
    add_legend(figure, entries)
    return figure

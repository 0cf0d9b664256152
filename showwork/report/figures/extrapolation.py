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
    key_entry,
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
    """Every finite value drawn: the observed median and informative band ends, the extrapolated band, the asymptote."""
    e, c = family.extrapolation, family.curve
    informative = c.k <= family.advice.informative_k
    values = [c.quantile_curve, c.quantile_curve_lower[informative], c.quantile_curve_upper[informative],
              e.point, e.lower, e.upper, [e.asymptote.lower, e.asymptote.upper]]
    finite = np.concatenate([np.asarray(v, dtype=float) for v in values])
    finite = finite[np.isfinite(finite)]
    lo, hi = float(finite.min()), float(finite.max())
    margin = Y_MARGIN * (hi - lo) if hi > lo else 0.05 * max(abs(lo), 1.0)
    return lo - margin, hi + margin


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
    (at k = K). Artists carry gids ``"observed:<family>"``, ``"observed-band:<family>"``,
    ``"model-based-band:<family>"``, ``"model-based-lower:<family>"``, ``"model-based-upper:<family>"``,
    ``"fitted:<family>"``, ``"asymptote:<family>"`` and ``"asymptote-interval:<family>"``.

    Parameters
    ----------
    report : Report
    family : FamilyAnalysis
        One of ``report.families`` whose ``extrapolation`` is an :class:`Extrapolation`.
    log_x : bool, optional
        Logarithmic budget axis; default (None) when K is above ``LOG_X_ABOVE``.
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
    if math.isfinite(a.lower) and math.isfinite(a.upper):
        # A bar on the right edge, not a strip across the figure: a strip as wide as the axes read as a band over every budget.
        ax.plot([float(e.K)] * 2, [a.lower, a.upper], color=colour, linewidth=2.0, marker="_", markersize=9,
                clip_on=False, zorder=5, gid=f"asymptote-interval:{name}")
    if math.isfinite(a.estimate):
        ax.axhline(a.estimate, color=colour, linewidth=1.0, linestyle=":", gid=f"asymptote:{name}")
    grey = "0.35"
    entries = [
        LegendEntry((Patch(facecolor=colour, alpha=0.25, linewidth=0), Line2D([], [], color=colour, linewidth=1.8)),
                    name, f" (n = {c.n})", gid=f"legend:{name}"),
        key_entry(Patch(facecolor=(0.35, 0.35, 0.35, 0.18), linewidth=0, label=f"observed {curve_name(report)}, {band_text(report)}")),
        key_entry(Patch(facecolor="none", edgecolor=grey, hatch=_MODEL_BASED_HATCH, linewidth=0.9, linestyle="--",
                        label=f"{MODEL_BASED} band and fitted curve (hold if the tail is noisy-quadratic)")),
        key_entry(Line2D([], [], color=grey, linewidth=1.0, linestyle=":", label="asymptote; its interval: the bar at the right edge")),
    ]
    ax.set_xlim(1.0, float(e.K))
    ax.set_ylim(lo, hi)
    ax.set_xlabel("budget k (trials)")
    ax.set_ylabel(metric_label(report))
    ax.set_title(f"{name}: {curve_name(report)} tuning curve extrapolated to k = {e.K}"
                 f" ({percent_text(report.settings.confidence)} bands)", fontsize="medium")
    ax.grid(True, linewidth=0.4, alpha=0.4)
    add_legend(figure, entries)
    return figure

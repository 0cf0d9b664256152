"""Each family's tuning curve with its bands, and its score CDF with the CDF band, on one plot each."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from showwork.constants import DEFAULT_FIGURE_CURVES, FIGURE_CURVES
from showwork.errors import InputError
from showwork.report.contents import Report
from showwork.report.figures.common import (
    UNINFORMATIVE_COLOUR,
    X_AXES,
    Y_MARGIN,
    add_legend,
    axes_fraction,
    band_text,
    clip_infinite,
    compute_unit,
    curve_name,
    curves_y_range,
    family_colour,
    informative_budget_x,
    key_entry,
    literal_text,
    metric_label,
    metric_names,
    new_figure,
    set_x_range,
    set_x_scale,
    use_log_x,
    x_values,
)
from showwork.report.figures.fitting import LegendEntry, font_points, mark_optional, text_width
from showwork.report.wording import budget_text, percent_text
from showwork.statistics import TuningCurve
from showwork.statistics.cost import COST_UNITS

__all__ = [
    "cdf_figure",
    "draw_curves",
    "shade_uninformative",
    "tuning_curve_figure",
]

_BAND_HATCHES = ("////", "\\\\\\\\", "----", "||||", "xxxx", "++++", "....")
"""Hatches of the families' bands in the comparison figure, so overlapping bands stay apart."""


def draw_curves(
    ax: Axes,
    report: Report,
    xs: Sequence[np.ndarray],
    *,
    shown: Sequence[str] = DEFAULT_FIGURE_CURVES,
    ylim: tuple[float, float],
    hatch: bool = False,
    curves: Sequence[TuningCurve] | None = None,
    codes: Sequence[str] | None = None,
) -> list[LegendEntry]:
    """Draw every family's curves: of ``shown`` (:data:`~showwork.constants.FIGURE_CURVES`), the median
    (or ``settings.quantile``) curve and its band, the V and U statistics, the mean curve's band.

    The one drawing of tuning curves, shared by :func:`tuning_curve_figure` and
    :func:`comparison_figure`. A band is a light fill with its two ends outlined in the family's
    colour, so overlapping bands of two families stay apart (no blended block); with ``hatch``
    each family's fill is also hatched in its own direction. Band ends that run past the y range
    are marked where they leave it (:func:`_mark_clipped`). ``curves`` replaces each family's
    curve (the cost view's curves at equal cost); ``codes`` are the families' letters where the
    figure names them so (the evidence strips of a narrow comparison). Returns the legend entries:
    one per family (its band and curve in one key: "name (n = 50)"), then one per line style.
    """
    unknown = set(shown) - set(FIGURE_CURVES)
    if unknown or not shown:
        raise InputError(f"curves must be among {', '.join(FIGURE_CURVES)} (got {', '.join(map(str, shown)) or 'none'}).")
    lo, hi = ylim
    band_label = band_text(report)
    entries: list[LegendEntry] = []
    has_mean = False
    clipped = False
    median = "median" in shown
    for i, (f, x) in enumerate(zip(report.families, xs)):
        c, colour = f.curve if curves is None else curves[i], family_colour(i)
        hatch_i = _BAND_HATCHES[i % len(_BAND_HATCHES)] if hatch else None
        if median:
            lower, upper = clip_infinite(c.quantile_curve_lower, lo, hi), clip_infinite(c.quantile_curve_upper, lo, hi)
            ax.fill_between(
                x, lower, upper, facecolor=colour, alpha=0.12, linewidth=0, gid=f"median-band:{f.name}",
                label=f"{f.name} {band_label}",
            )
            if hatch:
                # A second, unfilled polygon carries the hatch: the fill's alpha would fade it.
                ax.fill_between(x, lower, upper, facecolor="none", edgecolor=colour, linewidth=0,
                                hatch=hatch_i, alpha=0.5, gid=f"median-band-hatch:{f.name}")
            for side, values in (("lower", lower), ("upper", upper)):
                ax.plot(x, values, color=colour, linewidth=0.7, alpha=0.8, gid=f"median-{side}:{f.name}")
            ax.plot(x, c.quantile_curve, color=colour, linewidth=1.8, marker="o" if len(x) == 1 else None,
                    gid=f"median:{f.name}", label=f"{f.name} {curve_name(report)}")
            clipped |= _mark_clipped(ax, x, (c.quantile_curve_lower, c.quantile_curve_upper), (lo, hi), colour, f"clipped:{f.name}")
            handle: Any = (Patch(facecolor=colour, alpha=0.25, edgecolor=colour, linewidth=0.7, hatch=hatch_i),
                           Line2D([], [], color=colour, linewidth=1.8))
        else:
            handle = Line2D([], [], color=colour, linewidth=1.8)
        entries.append(LegendEntry(handle, f.name, f" (n = {c.n})", gid=f"legend:{f.name}", code=codes[i] if codes else ""))
        if "v" in shown:
            ax.plot(x, c.v, color=colour, linewidth=1.2, linestyle="--", gid=f"v:{f.name}", label=f"{f.name} V statistic")
        if "u" in shown:
            # U is NaN where undefined (k > n or not an integer): the line stops there.
            ax.plot(x, c.u, color=colour, linewidth=1.2, linestyle=":", gid=f"u:{f.name}", label=f"{f.name} U statistic")
        if "mean" in shown and c.mean_lower is not None and c.mean_upper is not None:
            has_mean = True
            for side, values in (("lower", c.mean_lower), ("upper", c.mean_upper)):
                ax.plot(x, values, color=colour, linewidth=0.8, linestyle="-.", gid=f"mean-{side}:{f.name}",
                        label=f"{f.name} mean-curve {band_label} ({side})")
            clipped |= _mark_clipped(ax, x, (c.mean_lower, c.mean_upper), (lo, hi), colour, f"mean-clipped:{f.name}")
    ax.set_ylim(lo, hi)
    set_x_range(ax, xs)
    grey = "0.35"
    if median:
        entries.append(LegendEntry((Patch(facecolor=(0.35, 0.35, 0.35, 0.15), edgecolor=grey, linewidth=0.7,
                                          hatch="////" if hatch else None),
                                    Line2D([], [], color=grey, linewidth=1.8)), "", f"{curve_name(report)}, {band_label}"))
    if "v" in shown:
        entries.append(key_entry(Line2D([], [], color=grey, linewidth=1.2, linestyle="--", label="V (expected best, Dodge)")))
    if "u" in shown:
        entries.append(key_entry(Line2D([], [], color=grey, linewidth=1.2, linestyle=":", label="U (expected best, Tang)")))
    if has_mean:
        entries.append(key_entry(Line2D([], [], color=grey, linewidth=0.8, linestyle="-.", label=f"mean curve, {band_label}")))
    if clipped:
        entries.append(key_entry(Line2D([], [], color=grey, linestyle="none", marker="^", markersize=5,
                                        label="band runs past the axis")))
    return entries


def _clipped_starts(x: np.ndarray, values: np.ndarray, lo: float, hi: float) -> list[tuple[float, float]]:
    """Where a series leaves the y range ``[lo, hi]``: (x, edge) at the first point of each run outside it."""
    above, below = values > hi, values < lo
    out = []
    for outside, edge in ((above, hi), (below, lo)):
        starts = outside & ~np.concatenate([[False], outside[:-1]])
        out += [(float(xi), edge) for xi in np.asarray(x, dtype=float)[starts]]
    return sorted(out)


def _mark_clipped(
    ax: Axes, x: np.ndarray, series: Sequence[np.ndarray], ylim: tuple[float, float], colour: str, gid: str
) -> bool:
    """Mark with a triangle on the axes' edge (pointing the way the band goes on) each place a band end leaves the plot.

    Returns whether anything was marked. The markers are not clipped to the axes, so they sit on
    its frame.
    """
    lo, hi = ylim
    points = sorted({p for values in series for p in _clipped_starts(x, values, lo, hi)})
    if not points:
        return False
    for edge, marker in ((hi, "^"), (lo, "v")):
        at = [xi for xi, yi in points if yi == edge]
        if at:
            ax.plot(at, [edge] * len(at), linestyle="none", marker=marker, markersize=6, color=colour,
                    markeredgecolor="white", markeredgewidth=0.5, clip_on=False, zorder=5,
                    gid=f"{gid}:{'top' if edge == hi else 'bottom'}")
    return True


def shade_uninformative(
    ax: Axes, report: Report, xs: Sequence[np.ndarray], informative_x: Sequence[float], *, label: bool = True
) -> float | None:
    """Shade the budgets past the smallest informative budget, where some family's band is the score's bound.

    ``informative_x`` is each family's informative budget on the x axis (trials or compute). Past
    the largest of them (every band uninformative) the shade is darker: on a compute axis the
    families' budgets can lie far apart. With
    ``label`` the region says why ("bands uninformative past k ≈ 4.6: more trials needed", with each
    family's budget when they differ). Returns where the shading starts, or None when every band is
    informative over the whole axis.
    """
    x_hi = max(float(x[-1]) for x in xs)
    x_lo = min(float(x[0]) for x in xs)
    start = min(informative_x)
    if not start < x_hi:
        return None
    start = max(start, x_lo)
    ax.axvspan(start, x_hi, facecolor=UNINFORMATIVE_COLOUR, alpha=0.6, edgecolor="none", zorder=0,
               gid="uninformative-region")
    every = max(informative_x)
    if start < every < x_hi:
        ax.axvspan(every, x_hi, facecolor=UNINFORMATIVE_COLOUR, alpha=0.6, edgecolor="none", zorder=0,
                   gid="uninformative-region:every")
    if label:
        _label_uninformative(ax, report, start, x_lo, x_hi)
    return start


def _label_uninformative(ax: Axes, report: Report, start: float, x_lo: float, x_hi: float) -> None:
    """Say in the shaded region why it is shaded: "bands uninformative past k ≈ 4.6: more trials needed".

    Families whose informative budgets differ are each named ("k ≈ 4 (MLP), k ≈ 8 (LSTM)") where
    that fits the plot's width, else the range of budgets is given. Just inside the region when
    the text fits in it, else against the axes' right edge; at the bottom when higher is better,
    where tuning curves rarely are (they rise), else at the top. Where it fits nowhere (a small
    figure), the figure leaves it out when it is saved (the report's text says it).
    """
    ks = [f.advice.informative_k for f in report.families]
    figure = ax.get_figure(root=True)
    size = font_points("small")
    measure = lambda text: text_width(figure, text, size)  # noqa: E731 - one line, used twice
    axes_width = ax.get_position().width * figure.bbox.width
    if len({budget_text(k) for k in ks}) == 1:
        lines = [f"bands uninformative past k ≈ {budget_text(ks[0])}:"]
    else:
        named = ", ".join(f"k ≈ {budget_text(k)} ({f.name})" for f, k in zip(report.families, ks)) + ":"
        if measure(named) > 0.9 * axes_width:
            named = f"k ≈ {budget_text(min(ks))} to {budget_text(max(ks))}:"
        lines = ["bands uninformative past", named]
    lines.append("more trials needed")
    text = "\n".join(f" {line} " for line in lines)
    lim = ax.get_xlim() if ax.get_xlim()[1] > ax.get_xlim()[0] else (x_lo, x_hi)
    region = axes_fraction(start, x_hi, lim, ax.get_xscale() == "log") * axes_width
    x, ha = (start, "left") if measure(text) + 4 <= region else (x_hi, "right")
    y, va = (0.015, "bottom") if not report.minimize else (0.985, "top")
    note = ax.text(x, y, text, ha=ha, va=va, fontsize="small", color="0.25", transform=ax.get_xaxis_transform(),
                   gid="uninformative-label", bbox={"facecolor": "white", "alpha": 0.75, "edgecolor": "none", "pad": 1.5},
                   zorder=6)
    mark_optional(note)


@literal_text
def tuning_curve_figure(
    report: Report,
    *,
    axis: str = "trials",
    log_x: bool | None = None,
    cost_unit: str | None = None,
    curves: Sequence[str] = DEFAULT_FIGURE_CURVES,
    size: tuple[float, float] | None = None,
) -> Figure:
    """Every family's tuning curve on one plot.

    Per family (one colour each), of ``curves``: the median (or ``settings.quantile``) curve,
    solid, with its simultaneous band (light fill, outlined ends) — the default, as in Lourie et
    al. 2024's figures; the V statistic (dashed) and U statistic (dotted, only where defined:
    integer k <= n); the mean-curve band as thin dash-dot lines when the support is bounded. A
    faint vertical line marks each family's informative budget when it is inside the x range. The budgets past the smallest informative budget are shaded and labelled
    ("bands uninformative past k ≈ 4.6: more trials needed"): there a band end is the score's bound.
    The y range covers the curves and the informative part of the bands; band ends past it (and
    infinite ones, with unbounded support) run to the edge, marked by a triangle where they leave.
    Budget ticks are integers.

    Parameters
    ----------
    report : Report
    axis : {"trials", "time"}, default "trials"
        x is the budget k in trials, or the expected compute ``k × mean runtime`` of each family.
    log_x : bool, optional
        Logarithmic x axis; default (None) when the largest budget is above ``LOG_X_ABOVE`` (100).
    cost_unit : str, optional
        Unit of the time axis (one of ``showwork.statistics.cost.COST_UNITS``); default
        :func:`compute_unit` (by size, or GPU-hours when the report counts them).
    curves : sequence of {"median", "v", "u", "mean"}, default ("median",)
        What is drawn of each family (``report --curves``).
    size : (float, float), optional
        The figure's width and height in inches; default 8 × 4.8.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    InputError
        Unknown axis or unit; ``axis="time"`` and a family without runtimes (named); GPU-hours for
        a family whose trials held no GPU.
    """
    if axis not in X_AXES:
        raise InputError(f"figure axis must be one of {', '.join(X_AXES)} (got {axis!r}).")
    if cost_unit is not None and cost_unit not in COST_UNITS:
        raise InputError(f"cost unit must be one of {', '.join(COST_UNITS)} (got {cost_unit!r}).")
    unit = cost_unit or compute_unit(report)
    xs = x_values(report, axis, unit)
    figure = new_figure(8.0, 4.8, size=size)
    ax = figure.add_subplot()
    set_x_scale(ax, use_log_x(report, log_x), budgets=axis == "trials")
    estimates = bool({"v", "u"} & set(curves))
    handles = draw_curves(ax, report, xs, shown=curves, ylim=curves_y_range(report.families, point_estimates=estimates))
    informative_x = [informative_budget_x(f, axis, unit) for f in report.families]
    if shade_uninformative(ax, report, xs, informative_x) is not None:
        handles.append(key_entry(Patch(facecolor=UNINFORMATIVE_COLOUR, alpha=0.6, label="bands uninformative")))
    x_lo, x_hi = ax.get_xlim()
    marked = False
    for i, (f, x) in enumerate(zip(report.families, informative_x)):
        if math.isfinite(x) and x_lo <= x <= x_hi:
            ax.axvline(x, color=family_colour(i), linewidth=1.0, alpha=0.45, gid=f"informative:{f.name}",
                       label=f"{f.name} informative budget")
            marked = True
    if marked:
        handles.append(key_entry(Line2D([], [], color="0.35", linewidth=1.0, alpha=0.45, label="informative budget")))
    ax.set_xlabel("budget k (trials)" if axis == "trials" else f"expected compute ({unit}, k × mean runtime)")
    ax.set_ylabel(metric_label(report))
    ax.set_title(
        f"{curve_name(report).capitalize()} tuning curves with {percent_text(report.settings.confidence)}"
        f" simultaneous {report.settings.method.upper()} bands",
        fontsize="medium",
    )
    ax.grid(True, linewidth=0.4, alpha=0.4)
    add_legend(figure, handles)
    return figure


@literal_text
def cdf_figure(report: Report, *, size: tuple[float, float] | None = None) -> Figure:
    """Each family's empirical CDF of the scores its curve used, with the simultaneous CDF band.

    The scores are those left after the failure policy (``curve.band.values``); the band is the
    step function ``band.lower`` / ``band.upper`` (indexed by the number of scores <= y).

    Parameters
    ----------
    report : Report
    size : (float, float), optional
        The figure's width and height in inches; default 8 × 4.8.

    Returns
    -------
    matplotlib.figure.Figure
    """
    bands = [f.curve.band for f in report.families]
    lo = min(float(b.values[0]) for b in bands)
    hi = max(float(b.values[-1]) for b in bands)
    margin = Y_MARGIN * (hi - lo) if hi > lo else 0.05 * max(abs(lo), 1.0)
    lo = max(lo - margin, min(b.a for b in bands))
    hi = min(hi + margin, max(b.b for b in bands))
    if not hi > lo:  # every score on one finite bound (a == b: a point mass)
        lo, hi = lo - 0.05 * max(abs(lo), 1.0), hi + 0.05 * max(abs(hi), 1.0)
    figure = new_figure(8.0, 4.8, size=size)
    ax = figure.add_subplot()
    band_label = f"{percent_text(report.settings.confidence)} {report.settings.method.upper()} CDF band"
    handles: list[LegendEntry] = []
    for i, (f, band) in enumerate(zip(report.families, bands)):
        colour = family_colour(i)
        # Steps start at the left edge (no score <= y: count 0) and hold past the largest score.
        x = np.concatenate([[lo], band.values, [hi]])
        counts = np.arange(band.n + 1)
        ecdf = np.append(counts / band.n, 1.0)
        lower, upper = np.append(band.lower, band.lower[-1]), np.append(band.upper, band.upper[-1])
        ax.fill_between(x, lower, upper, step="post", color=colour, alpha=0.2, linewidth=0,
                        gid=f"cdf-band:{f.name}", label=f"{f.name} {band_label}")
        ax.step(x, ecdf, where="post", color=colour, linewidth=1.4, gid=f"ecdf:{f.name}", label=f"{f.name} empirical CDF")
        handles.append(LegendEntry((Patch(facecolor=colour, alpha=0.2, linewidth=0), Line2D([], [], color=colour, linewidth=1.4)),
                                   f.name, f" (n = {band.n})", gid=f"legend:{f.name}"))
    handles.append(LegendEntry((Patch(facecolor="0.35", alpha=0.25, linewidth=0), Line2D([], [], color="0.35", linewidth=1.4)),
                               "", f"empirical CDF, {band_label}"))
    ax.set_xlim(lo, hi)
    ax.set_ylim(0.0, 1.0)
    ax.set_xlabel(metric_names(report))
    ax.set_ylabel("CDF: fraction of trials scoring ≤ x")
    ax.set_title(
        f"Score distributions with {percent_text(report.settings.confidence)} simultaneous"
        f" {report.settings.method.upper()} bands",
        fontsize="medium",
    )
    ax.grid(True, linewidth=0.4, alpha=0.4)
    add_legend(figure, handles)
    return figure

"""The report's figures: tuning curves with their bands, score CDFs, and the evidence between families.

Every figure is a :class:`matplotlib.figure.Figure` on the Agg canvas, never ``pyplot``: no global
state, no GUI backend, and a figure is freed as soon as it is dropped. matplotlib is imported
inside the functions, so importing this module (and ``showwork --help``) stays instant.

Figures draw what :func:`showwork.report.analysis.analyze` computed, on the report's budget grid;
nothing here estimates anything. Artists carry ``gid`` s (``"median:<family>"``,
``"median-band:<family>"``, ``"v:<family>"``, ``"u:<family>"``, ``"mean-lower:<family>"``,
``"mean-upper:<family>"``, ``"informative:<family>"``, ``"ecdf:<family>"``,
``"cdf-band:<family>"``, ``"evidence:<a> vs <b>:<level>"``, ``"crossovers:<a> vs <b>"``,
``"informative:<a> vs <b>"``, ``"uninformative:<a> vs <b>"``) so that the drawn data can be
checked, and so that SVG output can be styled or scripted.

:func:`save_figure` writes byte-identical files for the same figure: fixed dpi, no dates or
creator in the metadata, a fixed SVG hash salt.
"""

from __future__ import annotations

import functools
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from showwork.errors import InputError
from showwork.report.contents import FamilyAnalysis, PairAnalysis, Report
from showwork.report.tables import duration_unit
from showwork.report.wording import budget_text, evidence_text, resolved_bound_text
from showwork.statistics import EVIDENCE_LEVELS, budget_cost
from showwork.statistics.cost import COST_UNITS

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from showwork.statistics import TuningCurve

__all__ = [
    "EVIDENCE_COLOURS",
    "FIGURE_FORMATS",
    "PALETTE",
    "PAGED_UP_TO",
    "PAGE_SIZE",
    "SUMMARY_NAMED_UP_TO",
    "cdf_figure",
    "cdf_page",
    "literal_text",
    "comparison_figure",
    "cost_comparison_figure",
    "family_pages",
    "summary_figure",
    "tuning_curve_page",
    "report_figures",
    "save_figure",
    "tuning_curve_figure",
]

PALETTE = ("#648FFF", "#DC267F", "#FE6100", "#FFB000", "#785EF0")
"""Family colours, cycled: the IBM colour-blind-safe palette (as in opda)."""
EVIDENCE_COLOURS = {"none": "#f0f0f0", "weak": "#bdd7e7", "fair": "#6baed6", "strong": "#2171b5"}
"""One sequential colour per evidence level (ColorBrewer Blues; "none" a light grey)."""
FIGURE_FORMATS = ("png", "svg", "pdf")
DPI = 150
_METADATA = {"png": {"Software": None}, "svg": {"Date": None}, "pdf": {"CreationDate": None, "ModDate": None}}
_SVG_HASH_SALT = "showwork"
_Y_MARGIN = 0.05
"""Fraction of the plotted value range added above and below it."""
_AXES = ("trials", "time")
LOG_X_ABOVE = 100
"""By default the budget axis is logarithmic when the largest budget is above this."""
_UNINFORMATIVE_COLOUR = "0.88"
_BAND_HATCHES = ("////", "\\\\\\\\", "----", "||||", "xxxx")
"""Hatches of the families' bands in the comparison figure, so overlapping bands stay apart."""


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
        import matplotlib

        with matplotlib.rc_context({"text.parse_math": False}):
            return draw(*args, **kwargs)

    return literal



def _colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def _percent(confidence: float) -> str:
    return f"{100 * confidence:.10g}%"


def _band_label(report: Report) -> str:
    """E.g. "80% LD-HD band"."""
    return f"{_percent(report.settings.confidence)} {report.settings.method.upper()} band"


def _curve_name(report: Report) -> str:
    q = report.settings.quantile
    return "median" if q == 0.5 else f"{q:g}-quantile"


def _metric_label(report: Report) -> str:
    metrics = " / ".join(dict.fromkeys(f.results.metric for f in report.families))
    return f"{metrics} (lower is better)" if report.minimize else metrics


def _pair_name(pair: PairAnalysis) -> str:
    return f"{pair.comparison.a} vs {pair.comparison.b}"


def _value_range(families: Sequence[FamilyAnalysis], point_estimates: bool = True) -> tuple[float, float]:
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
    margin = _Y_MARGIN * (hi - lo) if hi > lo else 0.05 * max(abs(lo), 1.0)
    lo, hi = max(lo - margin, lo_bound), min(hi + margin, hi_bound)
    if not hi > lo:  # all values on one finite bound
        lo, hi = lo - 0.05 * max(abs(lo), 1.0), hi + 0.05 * max(abs(hi), 1.0)
    return lo, hi


def _clip_infinite(values: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """Replace -inf by ``lo`` and +inf by ``hi``; finite values are left for the axes to clip."""
    return np.where(values == -math.inf, lo, np.where(values == math.inf, hi, values))


def _x_values(report: Report, axis: str, unit: str) -> list[np.ndarray]:
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


# ------------------------------------------------------------------ drawing helpers


def _new_figure(width: float, height: float, layout: str | None = "constrained") -> Figure:
    """A figure on the Agg canvas, outside pyplot (no global state, no GUI backend)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=DPI, layout=layout)
    FigureCanvasAgg(figure)
    return figure


def _draw_curves(
    ax: Axes,
    report: Report,
    xs: Sequence[np.ndarray],
    *,
    point_estimates: bool,
    ylim: tuple[float, float],
    hatch: bool = False,
    curves: Sequence[TuningCurve] | None = None,
) -> list[Any]:
    """Draw every family's median curve and band (and V, U, mean bands if ``point_estimates``).

    The one drawing of tuning curves, shared by :func:`tuning_curve_figure` and
    :func:`comparison_figure`. A band is a light fill with its two ends outlined in the family's
    colour, so overlapping bands of two families stay apart (no blended block); with ``hatch``
    each family's fill is also hatched in its own direction. Band ends that run past the y range
    are marked where they leave it (:func:`_mark_clipped`). ``curves`` replaces each family's
    curve (the cost view's curves at equal cost). Returns the legend handles: one per family, then
    the line styles.
    """
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    lo, hi = ylim
    band_label = _band_label(report)
    handles: list[Any] = []
    has_mean = False
    clipped = False
    for i, (f, x) in enumerate(zip(report.families, xs)):
        c, colour = f.curve if curves is None else curves[i], _colour(i)
        lower, upper = _clip_infinite(c.quantile_curve_lower, lo, hi), _clip_infinite(c.quantile_curve_upper, lo, hi)
        ax.fill_between(
            x, lower, upper, facecolor=colour, alpha=0.12, linewidth=0, gid=f"median-band:{f.name}",
            label=f"{f.name} {band_label}",
        )
        if hatch:
            # A second, unfilled polygon carries the hatch: the fill's alpha would fade it.
            ax.fill_between(x, lower, upper, facecolor="none", edgecolor=colour, linewidth=0,
                            hatch=_BAND_HATCHES[i % len(_BAND_HATCHES)], alpha=0.5, gid=f"median-band-hatch:{f.name}")
        for side, values in (("lower", lower), ("upper", upper)):
            ax.plot(x, values, color=colour, linewidth=0.7, alpha=0.8, gid=f"median-{side}:{f.name}")
        ax.plot(x, c.quantile_curve, color=colour, linewidth=1.8, marker="o" if len(x) == 1 else None,
                gid=f"median:{f.name}", label=f"{f.name} {_curve_name(report)}")
        clipped |= _mark_clipped(ax, x, (c.quantile_curve_lower, c.quantile_curve_upper), (lo, hi), colour, f"clipped:{f.name}")
        handles.append(Line2D([], [], color=colour, linewidth=1.8, label=f"{f.name} (n = {c.n})"))
        if not point_estimates:
            continue
        ax.plot(x, c.v, color=colour, linewidth=1.2, linestyle="--", gid=f"v:{f.name}", label=f"{f.name} V statistic")
        # U is NaN where undefined (k > n or not an integer): the line stops there.
        ax.plot(x, c.u, color=colour, linewidth=1.2, linestyle=":", gid=f"u:{f.name}", label=f"{f.name} U statistic")
        if c.mean_lower is not None and c.mean_upper is not None:
            has_mean = True
            for side, values in (("lower", c.mean_lower), ("upper", c.mean_upper)):
                ax.plot(x, values, color=colour, linewidth=0.8, linestyle="-.", gid=f"mean-{side}:{f.name}",
                        label=f"{f.name} mean-curve {band_label} ({side})")
            clipped |= _mark_clipped(ax, x, (c.mean_lower, c.mean_upper), (lo, hi), colour, f"mean-clipped:{f.name}")
    ax.set_ylim(lo, hi)
    _set_x_range(ax, xs)
    grey = "0.35"
    handles.append(Line2D([], [], color=grey, linewidth=1.8, label=_curve_name(report)))
    handles.append(Patch(facecolor=(0.35, 0.35, 0.35, 0.15), edgecolor=grey, linewidth=0.7,
                         hatch="////" if hatch else None, label=band_label))
    if point_estimates:
        handles.append(Line2D([], [], color=grey, linewidth=1.2, linestyle="--", label="V (expected best, Dodge)"))
        handles.append(Line2D([], [], color=grey, linewidth=1.2, linestyle=":", label="U (expected best, Tang)"))
        if has_mean:
            handles.append(Line2D([], [], color=grey, linewidth=0.8, linestyle="-.", label=f"mean curve, {band_label}"))
    if clipped:
        handles.append(Line2D([], [], color=grey, linestyle="none", marker="^", markersize=5, label="band runs past the axis"))
    return handles


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


def _shade_uninformative(
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
    ax.axvspan(start, x_hi, facecolor=_UNINFORMATIVE_COLOUR, alpha=0.6, edgecolor="none", zorder=0,
               gid="uninformative-region")
    every = max(informative_x)
    if start < every < x_hi:
        ax.axvspan(every, x_hi, facecolor=_UNINFORMATIVE_COLOUR, alpha=0.6, edgecolor="none", zorder=0,
                   gid="uninformative-region:every")
    if label:
        ks = [f.advice.informative_k for f in report.families]
        if len({budget_text(k) for k in ks}) == 1:
            lines = [f"bands uninformative past k ≈ {budget_text(ks[0])}:"]
        else:
            lines = ["bands uninformative past", ", ".join(f"k ≈ {budget_text(k)} ({f.name})" for f, k in zip(report.families, ks)) + ":"]
        lines.append("more trials needed")
        # Just inside the region when the text fits in it (about 1 % of the axes' width per character
        # at this size), else against the axes' right edge: never off the figure. Vertically at the
        # bottom when higher is better, where tuning curves rarely are (they rise), else at the top.
        lim = ax.get_xlim() if ax.get_xlim()[1] > ax.get_xlim()[0] else (x_lo, x_hi)
        fits = _axes_fraction(start, x_hi, lim, ax.get_xscale() == "log") >= 0.0105 * (1 + max(map(len, lines)))
        x, ha = (start, "left") if fits else (x_hi, "right")
        y, va = (0.015, "bottom") if not report.minimize else (0.985, "top")
        ax.text(x, y, "\n".join(f" {line} " for line in lines), ha=ha, va=va,
                fontsize="small", color="0.25", transform=ax.get_xaxis_transform(), gid="uninformative-label",
                bbox={"facecolor": "white", "alpha": 0.75, "edgecolor": "none", "pad": 1.5}, zorder=6)
    return start


def _legend(figure: Figure, handles: Sequence[Any]) -> None:
    """One legend under the plot (never over the data or the title), filled row by row."""
    ncols = min(4, len(handles))
    # Legends fill columns first; reorder so entries read left to right, then down.
    rows = -(-len(handles) // ncols)
    order = [handles[r * ncols + c] for c in range(ncols) for r in range(rows) if r * ncols + c < len(handles)]
    figure.legend(handles=order, loc="outside lower center", ncols=ncols, fontsize="small", frameon=False)


def _set_x_range(ax: Axes, xs: Sequence[np.ndarray]) -> None:
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


def _set_x_scale(ax: Axes, log_x: bool, *, budgets: bool = False) -> None:
    """The x scale and its ticks: log or linear; on a budget axis (``budgets``) only integer ticks (never 2.5)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, MaxNLocator, NullFormatter

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


# ------------------------------------------------------------------ figures


def _informative_x(family: FamilyAnalysis, axis: str, unit: str) -> float:
    """The family's informative budget on the x axis: in trials, or its expected compute in ``unit``."""
    k = family.advice.informative_k
    return k if axis == "trials" else float(budget_cost(k, family.curve.mean_runtime_s, unit, _gpus(family, unit)))


@literal_text
def tuning_curve_figure(
    report: Report,
    *,
    axis: str = "trials",
    log_x: bool | None = None,
    cost_unit: str | None = None,
) -> Figure:
    """Every family's tuning curve on one plot.

    Per family (one colour each): the median (or ``settings.quantile``) curve, solid, with its
    simultaneous band (light fill, outlined ends); the V statistic (dashed) and U statistic
    (dotted, only where defined: integer k <= n); the mean-curve band as thin dash-dot lines when
    the support is bounded; and a faint vertical line at the family's informative budget when it
    is inside the x range. The budgets past the smallest informative budget are shaded and labelled
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

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    InputError
        Unknown axis or unit; ``axis="time"`` and a family without runtimes (named); GPU-hours for
        a family whose trials held no GPU.
    """
    if axis not in _AXES:
        raise InputError(f"figure axis must be one of {', '.join(_AXES)} (got {axis!r}).")
    if cost_unit is not None and cost_unit not in COST_UNITS:
        raise InputError(f"cost unit must be one of {', '.join(COST_UNITS)} (got {cost_unit!r}).")
    unit = cost_unit or compute_unit(report)
    xs = _x_values(report, axis, unit)
    figure = _new_figure(8.0, 4.8)
    ax = figure.add_subplot()
    _set_x_scale(ax, use_log_x(report, log_x), budgets=axis == "trials")
    handles = _draw_curves(ax, report, xs, point_estimates=True, ylim=_value_range(report.families))
    informative_x = [_informative_x(f, axis, unit) for f in report.families]
    if _shade_uninformative(ax, report, xs, informative_x) is not None:
        from matplotlib.patches import Patch

        handles.append(Patch(facecolor=_UNINFORMATIVE_COLOUR, alpha=0.6, label="bands uninformative"))
    x_lo, x_hi = ax.get_xlim()
    marked = False
    for i, (f, x) in enumerate(zip(report.families, informative_x)):
        if math.isfinite(x) and x_lo <= x <= x_hi:
            ax.axvline(x, color=_colour(i), linewidth=1.0, alpha=0.45, gid=f"informative:{f.name}",
                       label=f"{f.name} informative budget")
            marked = True
    if marked:
        from matplotlib.lines import Line2D

        handles.append(Line2D([], [], color="0.35", linewidth=1.0, alpha=0.45, label="informative budget"))
    ax.set_xlabel("budget k (trials)" if axis == "trials" else f"expected compute ({unit}, k × mean runtime)")
    ax.set_ylabel(_metric_label(report))
    ax.set_title(
        f"{_curve_name(report).capitalize()} tuning curves with {_percent(report.settings.confidence)}"
        f" simultaneous {report.settings.method.upper()} bands",
        fontsize="medium",
    )
    ax.grid(True, linewidth=0.4, alpha=0.4)
    _legend(figure, handles)
    return figure


@literal_text
def cdf_figure(report: Report) -> Figure:
    """Each family's empirical CDF of the scores its curve used, with the simultaneous CDF band.

    The scores are those left after the failure policy (``curve.band.values``); the band is the
    step function ``band.lower`` / ``band.upper`` (indexed by the number of scores <= y).

    Parameters
    ----------
    report : Report

    Returns
    -------
    matplotlib.figure.Figure
    """
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    bands = [f.curve.band for f in report.families]
    lo = min(float(b.values[0]) for b in bands)
    hi = max(float(b.values[-1]) for b in bands)
    margin = _Y_MARGIN * (hi - lo) if hi > lo else 0.05 * max(abs(lo), 1.0)
    lo = max(lo - margin, min(b.a for b in bands))
    hi = min(hi + margin, max(b.b for b in bands))
    if not hi > lo:  # every score on one finite bound (a == b: a point mass)
        lo, hi = lo - 0.05 * max(abs(lo), 1.0), hi + 0.05 * max(abs(hi), 1.0)
    figure = _new_figure(8.0, 4.8)
    ax = figure.add_subplot()
    band_label = f"{_percent(report.settings.confidence)} {report.settings.method.upper()} CDF band"
    handles: list[Any] = []
    for i, (f, band) in enumerate(zip(report.families, bands)):
        colour = _colour(i)
        # Steps start at the left edge (no score <= y: count 0) and hold past the largest score.
        x = np.concatenate([[lo], band.values, [hi]])
        counts = np.arange(band.n + 1)
        ecdf = np.append(counts / band.n, 1.0)
        lower, upper = np.append(band.lower, band.lower[-1]), np.append(band.upper, band.upper[-1])
        ax.fill_between(x, lower, upper, step="post", color=colour, alpha=0.2, linewidth=0,
                        gid=f"cdf-band:{f.name}", label=f"{f.name} {band_label}")
        ax.step(x, ecdf, where="post", color=colour, linewidth=1.4, gid=f"ecdf:{f.name}", label=f"{f.name} empirical CDF")
        handles.append(Line2D([], [], color=colour, linewidth=1.4, label=f"{f.name} (n = {band.n})"))
    handles.append(Line2D([], [], color="0.35", linewidth=1.4, label="empirical CDF"))
    handles.append(Patch(facecolor="0.35", alpha=0.25, linewidth=0, label=band_label))
    ax.set_xlim(lo, hi)
    ax.set_ylim(0.0, 1.0)
    metrics = " / ".join(dict.fromkeys(f.results.metric for f in report.families))
    ax.set_xlabel(metrics)
    ax.set_ylabel("CDF: fraction of trials scoring ≤ x")
    ax.set_title(
        f"Score distributions with {_percent(report.settings.confidence)} simultaneous"
        f" {report.settings.method.upper()} bands",
        fontsize="medium",
    )
    ax.grid(True, linewidth=0.4, alpha=0.4)
    _legend(figure, handles)
    return figure


def _segment_edges(k: np.ndarray, start: float, end: float) -> tuple[float, float]:
    """The x extent of the budgets ``start..end`` of grid ``k``: halfway (geometrically) to each neighbour.

    Neighbouring ranges then tile the axis without gaps, on a linear or a log scale, and a range of
    one budget still has a width.
    """
    i, j = int(np.searchsorted(k, start)), int(np.searchsorted(k, end))
    left = float(k[0]) if i == 0 else math.sqrt(k[i - 1] * k[i])
    right = float(k[-1]) if j == k.size - 1 else math.sqrt(k[j] * k[j + 1])
    return left, right


def _axes_fraction(x0: float, x1: float, lim: tuple[float, float], log: bool) -> float:
    """The share of the axes' width between x0 and x1."""
    if not lim[1] > lim[0]:
        return 1.0
    if log:
        return (math.log(x1) - math.log(x0)) / (math.log(lim[1]) - math.log(lim[0]))
    return (x1 - x0) / (lim[1] - lim[0])


def _draw_strip(ax: Axes, pair: PairAnalysis, log_x: bool) -> None:
    """One pair's evidence by budget range: coloured segments, favoured-family labels, crossovers, reach."""
    from matplotlib.patches import Rectangle

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
        if _axes_fraction(x0, x1, lim, log_x) < 0.011 * len(r.favoured) + 0.01:
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


def _evidence_label(name: str, confidence: float, cell: bool = False) -> str:
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
    figure = _new_figure(8.0, 4.2 + 0.42 * n_pairs + 0.5)
    grid = figure.add_gridspec(1 + n_pairs, 1, height_ratios=[9.0] + [1.0] * n_pairs)
    top = figure.add_subplot(grid[0])
    log_x = use_log_x(report, log_x)
    _set_x_scale(top, log_x, budgets=True)
    xs = [f.curve.k for f in report.families]
    handles = _draw_curves(top, report, xs, point_estimates=False, ylim=_value_range(report.families, point_estimates=False),
                           hatch=True)
    _shade_uninformative(top, report, xs, [f.advice.informative_k for f in report.families])
    top.set_ylabel(_metric_label(report))
    top.grid(True, linewidth=0.4, alpha=0.4)
    top.tick_params(axis="x", labelbottom=False)
    top.set_title(
        f"{_curve_name(report).capitalize()} tuning curves ({_percent(report.settings.confidence)}"
        f" {report.settings.method.upper()} bands) and the evidence between them",
        fontsize="medium",
    )
    _evidence_strips(figure, grid, top, report.pairs, log_x, "budget k (trials)", xs, handles, report.settings.confidence)
    return figure


def _evidence_strips(figure: Figure, grid, top, pairs, log_x: bool, xlabel: str, xs, handles, confidence: float) -> None:
    """Below ``top``, one evidence strip per pair (:func:`_draw_strip`) sharing its x axis, and the legend:
    the curves' ``handles``, the evidence levels (what is resolved, with its bound), crossings, shade."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    strips = []
    for row, pair in enumerate(pairs, start=1):
        ax = figure.add_subplot(grid[row], sharex=top)
        _draw_strip(ax, pair, log_x)
        ax.tick_params(axis="x", labelbottom=row == len(pairs))
        strips.append(ax)
    strips[-1].set_xlabel(xlabel)
    _set_x_range(top, xs)
    key = [Patch(facecolor=EVIDENCE_COLOURS[level], edgecolor="0.6", linewidth=0.5, label=_evidence_label(level, confidence))
           for level in EVIDENCE_LEVELS]
    key.append(Line2D([], [], color="black", linewidth=1.5, label="medians cross"))
    key.append(Patch(facecolor="none", edgecolor="0.3", hatch="///", linewidth=0, label="bands uninformative"))
    _legend(figure, handles + key)


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
    figure = _new_figure(8.0, 4.2 + 0.42 * n_pairs + 0.5)
    grid = figure.add_gridspec(1 + n_pairs, 1, height_ratios=[9.0] + [1.0] * n_pairs)
    top = figure.add_subplot(grid[0])
    x = np.asarray(view.axis, dtype=float)
    log_x = bool(log_x) if log_x is not None else float(x[-1]) > _COST_LOG_X_SPAN * float(x[0])
    _set_x_scale(top, log_x)
    curves = [f.cost_curve for f in report.families]
    xs = [x] * len(report.families)
    handles = _draw_curves(top, report, xs, point_estimates=False, ylim=_value_range(report.families, point_estimates=False),
                           hatch=True, curves=curves)
    _shade_uninformative(top, report, xs, [f.advice.informative_k * view.mean_costs[f.name] for f in report.families],
                         label=False)
    top.set_ylabel(_metric_label(report))
    top.grid(True, linewidth=0.4, alpha=0.4)
    top.tick_params(axis="x", labelbottom=False)
    top.set_title(
        f"{_curve_name(report).capitalize()} tuning curves at equal cost ({_percent(report.settings.confidence)}"
        f" {report.settings.method.upper()} bands)",
        fontsize="medium",
    )
    _evidence_strips(figure, grid, top, view.pairs, log_x, f"total cost ({view.unit})", xs, handles,
                     report.settings.confidence)
    return figure


# ------------------------------------------------------------------ many families: a summary and pages of small multiples
#
# Beyond ALL_PAIRS_UP_TO families one plot per kind cannot be read (five colours cycle over dozens of
# curves) and constrained layout over hundreds of axes takes minutes. The report then draws a
# summary (every family ranked, with its evidence against the reference at every budget) and pages
# of PAGE_SIZE small multiples in rank order, on shared axes, each panel with the reference's curve
# in grey. Their layout is fixed (margins in inches), so no layout engine runs.

PAGE_COLUMNS = 5
PAGE_ROWS = 4
PAGE_SIZE = PAGE_COLUMNS * PAGE_ROWS
"""Families per page of small multiples."""
PAGED_UP_TO = 15 * PAGE_SIZE
"""The best-ranked families drawn on pages of small multiples (300: 15 pages of each kind). A page
costs about half a second in each format; beyond, the pages would take minutes (1,000 families: 100
pages) and nobody reads them; every family is in the summary figure and the tables."""
SUMMARY_NAMED_UP_TO = 300
"""Up to this many families the summary figure names each on its row; beyond, its rows are ranks
in a figure of fixed height (the ranking table names them): a row per family made the summary of
4,000 families 442 inches tall, 50 s and 2.2 GB to save."""
_PANEL_HEIGHT = 1.9
_PAGE_WIDTH = 11.0
_REFERENCE_COLOUR = "0.55"
SUMMARY_COLOURS = {
    "reference": "#404040",
    "none": EVIDENCE_COLOURS["none"],
    # The reference is better: the blues of EVIDENCE_COLOURS; the family is better: oranges.
    "weak: reference better": "#bdd7e7", "fair: reference better": "#6baed6", "strong: reference better": "#2171b5",
    "weak: family better": "#fdd0a2", "fair: family better": "#fd8d3c", "strong: family better": "#d94801",
    "beyond the bands' reach": "#ffffff",
}
"""Cells of the summary's evidence map."""


def family_pages(report: Report) -> list[tuple[FamilyAnalysis, ...]]:
    """The ``PAGED_UP_TO`` best-ranked families in rank order, cut into pages of ``PAGE_SIZE``."""
    ranked = [report.family(name) for name in report.ranking[:PAGED_UP_TO]]
    return [tuple(ranked[i : i + PAGE_SIZE]) for i in range(0, len(ranked), PAGE_SIZE)]


def _short(name: str, limit: int = 26) -> str:
    return name if len(name) <= limit else name[: limit - 1] + "…"


def _page_figure(rows: int, title: str) -> tuple[Figure, np.ndarray]:
    """A page of ``rows`` × PAGE_COLUMNS panels (given the same axes by :func:`_same_axes`), with fixed margins (in inches)."""
    top, bottom, left, right = 0.55, 1.05, 0.8, 0.15
    height = top + bottom + rows * _PANEL_HEIGHT
    figure = _new_figure(_PAGE_WIDTH, height, layout=None)
    axes = figure.subplots(rows, PAGE_COLUMNS, squeeze=False)
    figure.subplots_adjust(left=left / _PAGE_WIDTH, right=1 - right / _PAGE_WIDTH, top=1 - top / height,
                           bottom=bottom / height, wspace=0.08, hspace=0.32)
    figure.suptitle(title, fontsize="medium", y=1 - 0.12 / height, va="top")
    return figure, axes


def _page_legend(figure: Figure, handles: Sequence[Any], xlabel: str, ylabel: str) -> None:
    height = figure.get_figheight()
    figure.supxlabel(xlabel, y=0.62 / height, va="bottom", fontsize="small")
    figure.supylabel(ylabel, x=0.08 / _PAGE_WIDTH, ha="left", fontsize="small")
    figure.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 0.05 / height), ncols=len(handles),
                  fontsize="small", frameon=False)


def _panel_title(ax: Axes, report: Report, f: FamilyAnalysis) -> None:
    rank = report.rank(f.name)
    # An explicit y turns off matplotlib's automatic title placement, which measures every panel's ticks.
    ax.set_title(f"{rank}. {_short(f.name)} (n = {f.curve.n})", fontsize="x-small", pad=3, y=1.0)


def _same_axes(
    axes: np.ndarray, used: int, xlim: tuple[float, float], ylim: tuple[float, float], *, log_x: bool = False,
    integer_x: bool = False,
) -> None:
    """Give the first ``used`` panels of a page the same limits and ticks; hide the rest.

    Not matplotlib's shared axes: those share one tick locator, so every panel still makes, formats
    and lays out every tick label, shown or not (a third of a page's drawing time). Here the tick
    positions are computed once, and only the outer panels have ticks: the last panel of each
    column its x ticks, the first of each row its y ticks. The grid is drawn at the same positions
    as two line collections per panel, not by ticks (a tick is four artists, and most of a page's
    drawing time went to the ticks of inner panels that show no label).
    """
    from matplotlib.ticker import FixedLocator, LogLocator, MaxNLocator, NullLocator

    x0, x1 = xlim
    if not x1 > x0:  # a single budget or value
        x0, x1 = (x0 / 2, x1 * 2) if log_x else (x0 - 0.5, x1 + 0.5)
    x_ticks = [t for t in (LogLocator() if log_x else MaxNLocator(4, integer=integer_x, steps=[1, 2, 5, 10])).tick_values(x0, x1) if x0 <= t <= x1]
    y_ticks = [t for t in MaxNLocator(4).tick_values(*ylim) if ylim[0] <= t <= ylim[1]]
    columns = axes.shape[1]
    last_row = {column: max(i for i in range(used) if i % columns == column) for column in range(min(used, columns))}
    for i, ax in enumerate(axes.flat):
        if i >= used:
            ax.set_visible(False)
            continue
        _set_x_scale(ax, log_x)
        ax.set_xlim(x0, x1)
        ax.set_ylim(*ylim)
        grid = {"colors": "#b0b0b0", "linewidth": 0.3, "alpha": 0.4, "zorder": 0.5}
        ax.vlines(x_ticks, 0.0, 1.0, transform=ax.get_xaxis_transform(), gid="grid-x", **grid)
        ax.hlines(y_ticks, 0.0, 1.0, transform=ax.get_yaxis_transform(), gid="grid-y", **grid)
        labelled = (last_row[i % columns] == i, i % columns == 0)
        for axis, ticks, shown in ((ax.xaxis, x_ticks, labelled[0]), (ax.yaxis, y_ticks, labelled[1])):
            axis.set_major_locator(FixedLocator(ticks) if shown else NullLocator())
            axis.set_minor_locator(NullLocator())
            if shown:
                axis.set_tick_params(labelsize="x-small")


@literal_text
def tuning_curve_page(
    report: Report,
    families: Sequence[FamilyAnalysis],
    page: int,
    pages: int,
    *,
    axis: str = "trials",
    log_x: bool | None = None,
    cost_unit: str | None = None,
    value_range: tuple[float, float] | None = None,
) -> Figure:
    """One page of small multiples: each family's median curve and band, V and U, and the reference's median.

    Every panel shares the axes of the whole report (not just of the page), so panels on different
    pages compare too; each shades the budgets past its family's informative budget. ``axis``,
    ``log_x`` and ``cost_unit`` as in :func:`tuning_curve_figure`; ``value_range`` is the y range of
    every family's curves (computed when not given; :func:`report_figures` computes it once for
    every page).
    """
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    if axis not in _AXES:
        raise InputError(f"figure axis must be one of {', '.join(_AXES)} (got {axis!r}).")
    unit = cost_unit or compute_unit(report)
    log_x = use_log_x(report, log_x)
    all_xs = _x_values(report, axis, unit)
    x_of = {f.name: x for f, x in zip(report.families, all_xs)}
    lo, hi = value_range or _value_range(report.families)
    reference = report.family(report.ranking[0])
    rows = -(-len(families) // PAGE_COLUMNS)
    figure, axes = _page_figure(
        rows, f"{_curve_name(report).capitalize()} tuning curves with {_band_label(report)}s, families ranked"
        f" {report.rank(families[0].name)}–{report.rank(families[-1].name)}"
        f" of {len(report.families)} (page {page} of {pages})",
    )
    colour = PALETTE[0]
    for ax, f in zip(axes.flat, families):
        c, x = f.curve, x_of[f.name]
        if f.name != reference.name:
            ax.plot(x_of[reference.name], reference.curve.quantile_curve, color=_REFERENCE_COLOUR, linewidth=1.0,
                    gid=f"reference:{f.name}")
        ax.fill_between(x, _clip_infinite(c.quantile_curve_lower, lo, hi), _clip_infinite(c.quantile_curve_upper, lo, hi),
                        color=colour, alpha=0.25, linewidth=0, gid=f"median-band:{f.name}")
        ax.plot(x, c.quantile_curve, color=colour, linewidth=1.4, marker="o" if len(x) == 1 else None, gid=f"median:{f.name}")
        ax.plot(x, c.v, color=colour, linewidth=0.9, linestyle="--", gid=f"v:{f.name}")
        ax.plot(x, c.u, color=colour, linewidth=0.9, linestyle=":", gid=f"u:{f.name}")
        start = _informative_x(f, axis, unit)
        if start < float(x[-1]):
            ax.axvspan(max(start, float(x[0])), float(x[-1]), facecolor=_UNINFORMATIVE_COLOUR, alpha=0.6,
                       edgecolor="none", zorder=0, gid=f"uninformative-region:{f.name}")
        _panel_title(ax, report, f)
    x_range = (min(float(x[0]) for x in all_xs), max(float(x[-1]) for x in all_xs))
    _same_axes(axes, len(families), x_range, (lo, hi), log_x=log_x, integer_x=axis == "trials")
    handles = [
        Line2D([], [], color=colour, linewidth=1.4, label=_curve_name(report)),
        Patch(facecolor=colour, alpha=0.25, linewidth=0, label=_band_label(report)),
        Patch(facecolor=_UNINFORMATIVE_COLOUR, alpha=0.6, linewidth=0, label="bands uninformative"),
        Line2D([], [], color=colour, linewidth=0.9, linestyle="--", label="V (expected best, Dodge)"),
        Line2D([], [], color=colour, linewidth=0.9, linestyle=":", label="U (expected best, Tang)"),
        Line2D([], [], color=_REFERENCE_COLOUR, linewidth=1.0, label=f"{_short(reference.name)} (rank 1) {_curve_name(report)}"),
    ]
    xlabel = "budget k (trials)" if axis == "trials" else f"expected compute ({unit}, k × mean runtime)"
    _page_legend(figure, handles, xlabel, _metric_label(report))
    return figure


@literal_text
def cdf_page(report: Report, families: Sequence[FamilyAnalysis], page: int, pages: int) -> Figure:
    """One page of small multiples of the score CDFs with their bands, and the reference's CDF in grey."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    bands = [f.curve.band for f in report.families]
    lo = min(float(b.values[0]) for b in bands)
    hi = max(float(b.values[-1]) for b in bands)
    margin = _Y_MARGIN * (hi - lo) if hi > lo else 0.05 * max(abs(lo), 1.0)
    lo, hi = max(lo - margin, min(b.a for b in bands)), min(hi + margin, max(b.b for b in bands))
    reference = report.family(report.ranking[0])
    rows = -(-len(families) // PAGE_COLUMNS)
    band_label = f"{_percent(report.settings.confidence)} {report.settings.method.upper()} CDF band"
    figure, axes = _page_figure(
        rows, f"Score distributions with {band_label}s, families ranked {report.rank(families[0].name)}–"
        f"{report.rank(families[-1].name)} of {len(report.families)} (page {page} of {pages})",
    )

    def steps(band):
        x = np.concatenate([[lo], band.values, [hi]])
        return x, np.append(np.arange(band.n + 1) / band.n, 1.0)

    colour = PALETTE[0]
    ref_x, ref_y = steps(reference.curve.band)
    for ax, f in zip(axes.flat, families):
        band = f.curve.band
        x, ecdf = steps(band)
        if f.name != reference.name:
            ax.step(ref_x, ref_y, where="post", color=_REFERENCE_COLOUR, linewidth=1.0, gid=f"reference:{f.name}")
        ax.fill_between(x, np.append(band.lower, band.lower[-1]), np.append(band.upper, band.upper[-1]), step="post",
                        color=colour, alpha=0.25, linewidth=0, gid=f"cdf-band:{f.name}")
        ax.step(x, ecdf, where="post", color=colour, linewidth=1.2, gid=f"ecdf:{f.name}")
        _panel_title(ax, report, f)
    _same_axes(axes, len(families), (lo, hi), (0.0, 1.0))
    handles = [
        Line2D([], [], color=colour, linewidth=1.2, label="empirical CDF"),
        Patch(facecolor=colour, alpha=0.25, linewidth=0, label=band_label),
        Line2D([], [], color=_REFERENCE_COLOUR, linewidth=1.0, label=f"{_short(reference.name)} (rank 1)"),
    ]
    metrics = " / ".join(dict.fromkeys(f.results.metric for f in report.families))
    _page_legend(figure, handles, metrics, "fraction of trials scoring ≤ x")
    return figure


def summary_evidence(report: Report) -> np.ndarray:
    """The summary's evidence map: one row per family in rank order, one column per budget, cells keys of SUMMARY_COLOURS."""
    keys = list(SUMMARY_COLOURS)
    against = {p.comparison.b: p for p in report.pairs}
    cells = np.empty((len(report.ranking), report.budgets.size), dtype=object)
    for row, name in enumerate(report.ranking):
        pair = against.get(name)
        if pair is None:
            cells[row] = "reference"
            continue
        c = pair.comparison
        levels = np.asarray(c.levels, dtype=object)
        some = levels != "none"
        levels[some] = levels[some] + np.where(np.asarray(c.favoured)[some] > 0, ": reference better", ": family better")
        levels[np.asarray(c.k) > pair.informative_k] = "beyond the bands' reach"
        cells[row] = levels
    unknown = set(cells.flat) - set(keys)
    if unknown:
        raise ValueError(f"evidence levels without a colour: {sorted(unknown)}")
    return cells


def _ranking_range(families: Sequence[FamilyAnalysis], *series: np.ndarray) -> tuple[float, float]:
    """The x range of the summary's intervals: the finite values that are not a support bound, plus a margin.

    As in :func:`_value_range`, a band end at a bound (the data cannot bound it) runs off the plot.
    """
    a = min(f.curve.band.a for f in families)
    b = max(f.curve.band.b for f in families)
    values = np.concatenate(series)
    shown = values[np.isfinite(values) & (values != a) & (values != b)]
    if shown.size == 0:
        shown = series[0][np.isfinite(series[0])]
    if shown.size == 0:
        return (0.0, 1.0)
    lo, hi = float(shown.min()), float(shown.max())
    margin = _Y_MARGIN * (hi - lo) if hi > lo else 0.05 * max(abs(lo), 1.0)
    return max(lo - margin, a), min(hi + margin, b)


def _rank_ticks(ax: Axes, n: int) -> None:
    """Label the rows ``0 .. n - 1`` of ``ax`` by rank (row + 1) at round ranks, and say so on the axis."""
    from matplotlib.ticker import MaxNLocator

    ranks = [1] + [int(r) for r in MaxNLocator(10, integer=True).tick_values(1, n) if 1 < r <= n]
    ax.set_yticks([r - 1 for r in ranks], [f"{r:,}" for r in ranks], fontsize="x-small")
    ax.set_ylabel("rank (the ranking table names each family)", fontsize="small")


@literal_text
def summary_figure(report: Report) -> Figure | None:
    """Every family ranked: its median at the ranking budget with the band, and its evidence against the reference.

    Left: the median (``settings.quantile``) curve of each family at ``report.ranking_k`` with its
    band, best first, the reference's band shaded across. Right: at every budget of the grid, the
    evidence that the reference beats the family (blues) or the family beats the reference
    (oranges), white beyond the pair's informative budget. None when every pair is compared
    (few families): the comparison figure shows that. Up to ``SUMMARY_NAMED_UP_TO`` families each
    row is named, with its band as a line and its median as a dot; beyond, the figure has a fixed
    height, its rows are ranks, and the bands are one filled area around the line of the medians.
    """
    if report.reference is None:
        return None
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    n = len(report.ranking)
    named = n <= SUMMARY_NAMED_UP_TO
    top, bottom = 0.75, 1.3
    height = top + bottom + (max(n, 8) * (0.16 if n <= 60 else 0.11) if named else 9.0)
    figure = _new_figure(_PAGE_WIDTH, height, layout=None)
    left_ax, right_ax = figure.subplots(1, 2, sharey=True, gridspec_kw={"width_ratios": [2, 3]})
    figure.subplots_adjust(left=(2.0 if named else 0.8) / _PAGE_WIDTH, right=1 - 0.2 / _PAGE_WIDTH, top=1 - top / height,
                           bottom=bottom / height, wspace=0.04)
    i = int(np.searchsorted(report.budgets, report.ranking_k))
    families = [report.family(name) for name in report.ranking]
    y = np.arange(n)
    median = np.array([f.curve.quantile_curve[i] for f in families])
    lower = np.array([f.curve.quantile_curve_lower[i] for f in families])
    upper = np.array([f.curve.quantile_curve_upper[i] for f in families])
    lo, hi = _ranking_range(families, median, lower, upper)
    lower, upper = _clip_infinite(lower, lo, hi), _clip_infinite(upper, lo, hi)
    left_ax.axvspan(lower[0], upper[0], color=_REFERENCE_COLOUR, alpha=0.2, linewidth=0, gid="reference-band")
    if named:
        left_ax.hlines(y, lower, upper, color=PALETTE[0], linewidth=1.6, gid="bands")
        left_ax.plot(median, y, "o", color="black", markersize=2.5 if n > 60 else 3.5, gid="medians")
        left_ax.set_yticks(y, [f"{r}. {_short(name, 30)}" for r, name in enumerate(report.ranking, start=1)],
                           fontsize=7 if n <= 60 else 5)
    else:  # thousands of rows: one area and one line, not an artist per family
        left_ax.fill_betweenx(y, lower, upper, color=PALETTE[0], alpha=0.5, linewidth=0, gid="bands")
        left_ax.plot(median, y, color="black", linewidth=0.8, gid="medians")
        _rank_ticks(left_ax, n)
    left_ax.set_xlim(lo, hi)
    left_ax.set_ylim(n - 0.5, -0.5)
    left_ax.tick_params(axis="x", labelsize="x-small")
    left_ax.grid(True, axis="x", linewidth=0.3, alpha=0.4)
    k_text = f"{report.ranking_k:g}"
    left_ax.set_xlabel(f"{_curve_name(report)} at k = {k_text}, {_band_label(report)}\n({_metric_label(report)})", fontsize="small")

    keys = list(SUMMARY_COLOURS)
    cells = summary_evidence(report)
    index = np.vectorize(keys.index, otypes=[int])(cells)
    right_ax.imshow(index, cmap=ListedColormap(list(SUMMARY_COLOURS.values())), vmin=-0.5, vmax=len(keys) - 0.5,
                    aspect="auto", interpolation="nearest", gid="evidence-map")
    ticks = [k for k in report.table_budgets if k in set(report.budgets.tolist())]
    if len(ticks) < 2:  # budgets given with --k that miss the table's: a few of the grid's own
        ticks = [float(k) for k in report.budgets[np.unique(np.linspace(0, report.budgets.size - 1, 6).round().astype(int))]]
    right_ax.set_xticks([int(np.searchsorted(report.budgets, k)) for k in ticks], [f"{k:g}" for k in ticks], fontsize="x-small")
    right_ax.tick_params(axis="y", length=0)
    right_ax.set_xlabel(f"budget k (trials; columns are the budgets of the grid), evidence against {_short(report.reference, 30)}",
                        fontsize="small")
    figure.suptitle(f"{n} families ranked by the {_curve_name(report)} tuning curve at k = {k_text}, and the evidence"
                    f" that the best, {_short(report.reference, 30)}, beats each", fontsize="medium",
                    y=1 - 0.15 / height, va="top")
    present = set(cells.flat)
    key = [Patch(facecolor=colour, edgecolor="0.6", linewidth=0.5,
                 label=_evidence_label(name, report.settings.confidence, cell=True))
           for name, colour in SUMMARY_COLOURS.items() if name in present]
    figure.legend(handles=key, loc="lower center", bbox_to_anchor=(0.5, 0.05 / height), ncols=min(4, len(key)),
                  fontsize="x-small", frameon=False)
    return figure


# ------------------------------------------------------------------ files


def _check_formats(formats: Sequence[str]) -> tuple[str, ...]:
    if isinstance(formats, str):
        formats = (formats,)
    unknown = [f for f in formats if f not in FIGURE_FORMATS]
    if unknown or not formats:
        raise InputError(f"figure formats must be among {', '.join(FIGURE_FORMATS)} (got {', '.join(map(str, formats)) or 'none'}).")
    return tuple(dict.fromkeys(formats))


def _freeze_layout(figure: Figure) -> None:
    """Run the figure's layout engine once, keep its result, and remove the engine.

    With an engine (even a placeholder) every save draws the figure twice, and constrained layout
    runs again each time; without, a save draws once. A frozen layout also lays every format of
    a figure out alike.
    """
    import matplotlib

    engine = figure.get_layout_engine()
    if engine is None:
        return
    engine.execute(figure)
    # set_layout_engine(None) falls back to the rc defaults; make sure they name no engine.
    with matplotlib.rc_context({"figure.autolayout": False, "figure.constrained_layout.use": False}):
        figure.set_layout_engine(None)


@literal_text
def save_figure(
    figure: Figure,
    directory: str | os.PathLike,
    stem: str,
    formats: Sequence[str] = FIGURE_FORMATS,
) -> list[Path]:
    """Write ``figure`` as ``directory/stem.<format>`` for each format; the same figure gives the same bytes.

    Parameters
    ----------
    figure : matplotlib.figure.Figure
    directory : path
        Created (with parents) if missing.
    stem : str
        File name without suffix.
    formats : sequence of {"png", "svg", "pdf"}

    Returns
    -------
    list of Path, one per format, in the order given.

    Raises
    ------
    InputError
        An unknown format.
    """
    import matplotlib

    formats = _check_formats(formats)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    _freeze_layout(figure)
    paths = []
    # A fixed salt makes SVG ids reproducible; the metadata drop dates and the software version.
    with matplotlib.rc_context({"svg.hashsalt": _SVG_HASH_SALT}):
        for fmt in formats:
            path = directory / f"{stem}.{fmt}"
            figure.savefig(path, format=fmt, dpi=DPI, metadata=_METADATA[fmt])
            paths.append(path)
    return paths


@literal_text
def report_figures(
    report: Report,
    directory: str | os.PathLike,
    *,
    formats: Sequence[str] = FIGURE_FORMATS,
    axis: str = "trials",
    log_x: bool | None = None,
    title_note: str | None = None,
) -> dict[str, list[Path]]:
    """Draw and save every figure of a report.

    Writes ``tuning_curves.*`` (x: ``axis``), ``tuning_curves_time.*`` (when ``axis`` is
    "trials" and every family has runtimes, and GPUs if the cost unit is GPU-hours), ``cdfs.*``
    and ``comparison.*`` (two or more families).

    With more than ``ALL_PAIRS_UP_TO`` families (``report.reference`` set) it writes instead
    ``summary.*`` (:func:`summary_figure`) and pages of ``PAGE_SIZE`` small multiples in rank
    order: ``tuning_curves_page<i>.*``, ``tuning_curves_time_page<i>.*`` (same condition as
    above) and ``cdfs_page<i>.*``, for the ``PAGED_UP_TO`` (300) best-ranked families.

    Parameters
    ----------
    report : Report
    directory : path
        Created if missing.
    formats : sequence of {"png", "svg", "pdf"}, default all three
    axis : {"trials", "time"}, default "trials"
    log_x : bool, optional
        Logarithmic x axis on the tuning-curve and comparison figures; default (None) when the
        largest budget is above ``LOG_X_ABOVE`` (100).
    title_note : str, optional
        Appended to every figure's title, e.g. ``"not i.i.d.: tpe-study"`` for trials the bands'
        i.i.d. assumption does not cover.

    Returns
    -------
    dict
        Figure name -> the paths written, in the order above.

    Raises
    ------
    InputError
        Unknown format or axis; ``axis="time"`` and a family without runtimes.
    """
    formats = _check_formats(formats)
    log_x = use_log_x(report, log_x)
    unit = report.settings.cost_unit
    timed = axis == "trials" and all(
        f.curve.mean_runtime_s is not None and (unit != "gpu-hours" or f.summary.gpus_per_trial > 0) for f in report.families
    )
    drawings: list[tuple[str, Any]]
    if report.reference is not None:  # many families: a summary and pages of small multiples
        pages = family_pages(report)
        drawings = [("summary", lambda: summary_figure(report))]
        y_range = _value_range(report.families)  # every page has the report's axes
        for kind, draw in (
            ("tuning_curves", lambda fs, p: tuning_curve_page(report, fs, p, len(pages), axis=axis, log_x=log_x, value_range=y_range)),
            ("tuning_curves_time", lambda fs, p: tuning_curve_page(report, fs, p, len(pages), axis="time", log_x=log_x,
                                                                   value_range=y_range)),
            ("cdfs", lambda fs, p: cdf_page(report, fs, p, len(pages))),
        ):
            if kind == "tuning_curves_time" and not timed:
                continue
            drawings += [(f"{kind}_page{p}", lambda fs=fs, p=p, draw=draw: draw(fs, p)) for p, fs in enumerate(pages, start=1)]
    else:
        drawings = [("tuning_curves", lambda: tuning_curve_figure(report, axis=axis, log_x=log_x))]
        if timed:
            drawings.append(("tuning_curves_time", lambda: tuning_curve_figure(report, axis="time", log_x=log_x)))
        drawings.append(("cdfs", lambda: cdf_figure(report)))
        drawings.append(("comparison", lambda: comparison_figure(report, log_x=log_x)))
        drawings.append(("comparison_cost", lambda: cost_comparison_figure(report, log_x=log_x)))
    out: dict[str, list[Path]] = {}
    for name, draw in drawings:
        figure = draw()
        if figure is None:
            continue
        if title_note:
            _add_title_note(figure, title_note)
        out[name] = save_figure(figure, directory, name, formats)
        # No figure.clear(): it resets every axes (seconds for a page of panels); the figure is
        # freed when dropped (reference cycles at the next garbage collection).
    return out


def _add_title_note(figure: Figure, note: str) -> None:
    """Append ``note`` to the figure's title: its suptitle, else the first titled axes'."""
    if figure.get_suptitle():
        # The suptitle's own Text: figure.suptitle() would reset the position and size it was drawn with.
        figure._suptitle.set_text(f"{figure.get_suptitle()} ({note})")
        return
    for ax in figure.axes:
        if ax.get_title():
            ax.set_title(f"{ax.get_title()}\n({note})", fontsize="medium")
            return

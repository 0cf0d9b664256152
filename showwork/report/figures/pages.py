"""Many families: a summary of every family ranked, and pages of small multiples of the best-ranked."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from matplotlib.axes import Axes
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, LogLocator, MaxNLocator, NullLocator

from showwork.constants import DEFAULT_FIGURE_CURVES
from showwork.errors import InputError
from showwork.report.contents import FamilyAnalysis, Report
from showwork.report.figures.common import (
    EVIDENCE_COLOURS,
    PALETTE,
    UNINFORMATIVE_COLOUR,
    X_AXES,
    Y_MARGIN,
    add_legend,
    band_text,
    clip_infinite,
    compute_unit,
    curve_name,
    curves_y_range,
    informative_budget_x,
    key_entry,
    literal_text,
    metric_label,
    metric_names,
    new_figure,
    set_x_scale,
    use_log_x,
    x_values,
)
from showwork.report.figures.comparison import evidence_label
from showwork.report.figures.fitting import (
    LegendEntry,
    drawn_tick_labels,
    fixed_layout,
    font_points,
    panels_that_fit,
    shorten,
    text_width,
    unique_shortened,
    wrap_to,
)
from showwork.report.wording import percent_text

__all__ = [
    "PAGED_UP_TO",
    "PAGE_COLUMNS",
    "PAGE_ROWS",
    "PAGE_SIZE",
    "SUMMARY_COLOURS",
    "SUMMARY_NAMED_UP_TO",
    "cdf_page",
    "family_pages",
    "page_grid",
    "summary_evidence",
    "summary_figure",
    "tuning_curve_page",
]

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


def page_grid(size: tuple[float, float] | None) -> tuple[int, int]:
    """Columns and rows of a page of small multiples of ``size`` inches (None: the page's own size, 5 × 4).

    A given size holds as many panels as :func:`~showwork.report.figures.fitting.panels_that_fit`, at
    most 5 × 4.
    """
    if size is None:
        return PAGE_COLUMNS, PAGE_ROWS
    columns, rows = panels_that_fit(size, PAGE_COLUMNS)
    return columns, min(rows, PAGE_ROWS)


def family_pages(report: Report, size: tuple[float, float] | None = None) -> list[tuple[FamilyAnalysis, ...]]:
    """The ``PAGED_UP_TO`` best-ranked families in rank order, cut into pages of :func:`page_grid`'s panels."""
    columns, rows = page_grid(size)
    per_page = columns * rows
    ranked = [report.family(name) for name in report.ranking[:PAGED_UP_TO]]
    return [tuple(ranked[i : i + per_page]) for i in range(0, len(ranked), per_page)]


def _page_figure(count: int, title: str, size: tuple[float, float] | None) -> tuple[Figure, np.ndarray]:
    """A page of panels for ``count`` families (given the same axes by :func:`_same_axes`), laid out by
    :func:`_place_page` when saved.

    Its own size is :data:`_PAGE_WIDTH` wide and :data:`_PANEL_HEIGHT` per row of
    :data:`PAGE_COLUMNS`; ``size`` replaces it, with :func:`page_grid`'s columns.
    """
    columns, _ = page_grid(size)
    columns = min(columns, count)
    rows = -(-count // columns)
    figure = new_figure(_PAGE_WIDTH, 1.6 + rows * _PANEL_HEIGHT, layout=None, size=size)
    axes = figure.subplots(rows, columns, squeeze=False)
    figure.suptitle(title, fontsize="medium", va="top")
    fixed_layout(figure, lambda: _place_page(figure, axes))
    return figure, axes


def _extent(texts, renderer, along: str) -> float:
    """The largest height (``along="y"``) or width of the shown, non-empty ``texts``, in pixels (0 without)."""
    sizes = [t.get_window_extent(renderer) for t in texts if t is not None and t.get_visible() and t.get_text().strip()]
    return max(((b.height if along == "y" else b.width) for b in sizes), default=0.0)


@dataclass(frozen=True)
class _Room:
    """What a fixed layout leaves room for, in pixels, measured on a figure's texts (they do not depend on where the
    axes are, so one measurement places them)."""

    pad: float
    tick: float  # a tick's length and padding
    ticks_x: float  # the x tick labels' height
    ticks_x_width: float
    ticks_y: float  # the y tick labels' width
    title: float
    legend: float

    @classmethod
    def of(cls, figure: Figure, axes: Sequence[Axes]) -> _Room:
        renderer = figure.canvas.get_renderer()

        def ticks(axis_of, along: str) -> float:
            return max((_extent(drawn_tick_labels(axis_of(ax)), renderer, along) for ax in axes), default=0.0)

        return cls(
            pad=0.5 * font_points("medium") * figure.dpi / 72.0,
            tick=_tick_room(axes[0], figure) if axes else 0.0,
            ticks_x=ticks(lambda ax: ax.xaxis, "y"),
            ticks_x_width=ticks(lambda ax: ax.xaxis, "x"),
            ticks_y=ticks(lambda ax: ax.yaxis, "x"),
            title=_extent([figure._suptitle], renderer, "y"),
            legend=max((lg.get_window_extent(renderer).height for lg in figure.legends), default=0.0),
        )

    @property
    def top(self) -> float:
        return self.title + 1.5 * self.pad

    @property
    def right(self) -> float:
        """An x tick label at the last panel's edge reaches half its width past it."""
        return 0.8 * self.pad + 0.5 * self.ticks_x_width

    def bottom(self, labels: float) -> float:
        """The legend, x axis labels ``labels`` high, tick labels and ticks."""
        return self.legend + labels + self.ticks_x + self.tick + 2.5 * self.pad

    def anchor(self, figure: Figure) -> None:
        """The title at the top, the legend at the bottom."""
        height = figure.bbox.height
        if figure._suptitle is not None:
            figure._suptitle.set_y(1 - 0.5 * self.pad / height)
        for lg in figure.legends:
            lg.set_bbox_to_anchor((0.5, 0.5 * self.pad / height), transform=figure.transFigure)


def _place_page(figure: Figure, axes: np.ndarray) -> None:
    """Place a page's panels: margins measured from its texts (title, legend, axis labels, ticks, panel titles).

    No layout engine: constrained layout over a page's twenty panels costs seconds a page. Panel
    titles are shortened to their panel's width.
    """
    renderer = figure.canvas.get_renderer()
    width, height = figure.bbox.width, figure.bbox.height
    shown = [ax for ax in axes.flat if ax.get_visible()]
    rows, columns = axes.shape
    room = _Room.of(figure, shown)
    pad, tick, ticks_x = room.pad, room.tick, room.ticks_x
    xlabel = _extent([figure._supxlabel], renderer, "y")
    panel_title = max((_extent([ax.title], renderer, "y") for ax in shown), default=0.0)
    top, bottom, right = room.top, room.bottom(xlabel), room.right
    wrap_to(figure._supylabel, height - top - bottom)  # the panels' height, not the page's
    ylabel = _extent([figure._supylabel], renderer, "x")
    left = ylabel + room.ticks_y + tick + 1.5 * pad
    gap_x = 0.8 * pad + room.ticks_x_width  # an x tick label at a panel's edge reaches into the next panel's half
    panel_w = max(1.0, (width - left - right - (columns - 1) * gap_x) / columns)
    # Between rows: the panel title, and the x tick labels of a panel that is the last of its column.
    panel_h = max(1.0, (height - top - bottom - rows * (panel_title + 0.5 * pad) - (rows - 1) * (ticks_x + tick + 0.5 * pad))
                  / rows)
    for i, ax in enumerate(axes.flat):
        row, column = divmod(i, columns)
        x = left + column * (panel_w + gap_x)
        y = height - top - (row + 1) * (panel_h + panel_title + 0.5 * pad) - row * (ticks_x + tick + 0.5 * pad)
        ax.set_position([x / width, y / height, panel_w / width, panel_h / height])
        full = getattr(ax, "_showwork_title", None)
        if full is not None and ax.get_visible():
            size = ax.title.get_fontsize()
            ax.set_title(shorten(full, panel_w, lambda text, size=size: text_width(figure, text, size)),
                         fontsize=size, pad=3, y=1.0)
    room.anchor(figure)
    if figure._supxlabel is not None:
        figure._supxlabel.set_y((room.legend + 1.2 * pad) / height)
        figure._supxlabel.set_x((left + (width - left - right) / 2) / width)
    if figure._supylabel is not None:
        figure._supylabel.set_x(0.5 * pad / width)
        figure._supylabel.set_y((bottom + (height - top - bottom) / 2) / height)


def _tick_room(ax: Axes, figure: Figure) -> float:
    """The length of ``ax``'s major ticks and their padding, in pixels."""
    tick = ax.xaxis.get_major_ticks()[0] if ax.xaxis.get_major_ticks() else None
    points = (tick.get_tick_padding() + tick.get_pad()) if tick is not None else 6.0
    return points * figure.dpi / 72.0


def _page_legend(figure: Figure, entries: Sequence[LegendEntry], xlabel: str, ylabel: str) -> None:
    figure.supxlabel(xlabel, va="bottom", fontsize="small")
    figure.supylabel(ylabel, ha="left", fontsize="small")
    add_legend(figure, entries, loc="lower center", bbox_to_anchor=(0.5, 0.01))


def _panel_title(ax: Axes, report: Report, f: FamilyAnalysis) -> None:
    rank = report.rank(f.name)
    # An explicit y turns off matplotlib's automatic title placement, which measures every panel's ticks.
    ax._showwork_title = f"{rank}. {f.name} (n = {f.curve.n})"  # shortened to the panel when placed
    ax.set_title(ax._showwork_title, fontsize="x-small", pad=3, y=1.0)


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
        set_x_scale(ax, log_x)
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
    curves: Sequence[str] = DEFAULT_FIGURE_CURVES,
    size: tuple[float, float] | None = None,
) -> Figure:
    """One page of small multiples: each family's median curve and band (V and U if in ``curves``), and the reference's median.

    Every panel shares the axes of the whole report (not just of the page), so panels on different
    pages compare too; each shades the budgets past its family's informative budget. ``axis``,
    ``log_x`` and ``cost_unit`` as in :func:`tuning_curve_figure`; ``value_range`` is the y range of
    every family's curves (computed when not given; :func:`report_figures` computes it once for
    every page). ``size`` (inches) replaces the page's own; give ``families`` from
    :func:`family_pages` of the same size.
    """
    if axis not in X_AXES:
        raise InputError(f"figure axis must be one of {', '.join(X_AXES)} (got {axis!r}).")
    unit = cost_unit or compute_unit(report)
    log_x = use_log_x(report, log_x)
    all_xs = x_values(report, axis, unit)
    x_of = {f.name: x for f, x in zip(report.families, all_xs)}
    lo, hi = value_range or curves_y_range(report.families)
    reference = report.family(report.ranking[0])
    figure, axes = _page_figure(
        len(families), f"{curve_name(report).capitalize()} tuning curves with {band_text(report)}s, families ranked"
        f" {report.rank(families[0].name)}–{report.rank(families[-1].name)}"
        f" of {len(report.families)} (page {page} of {pages})", size,
    )
    colour = PALETTE[0]
    for ax, f in zip(axes.flat, families):
        c, x = f.curve, x_of[f.name]
        if f.name != reference.name:
            ax.plot(x_of[reference.name], reference.curve.quantile_curve, color=_REFERENCE_COLOUR, linewidth=1.0,
                    gid=f"reference:{f.name}")
        ax.fill_between(x, clip_infinite(c.quantile_curve_lower, lo, hi), clip_infinite(c.quantile_curve_upper, lo, hi),
                        color=colour, alpha=0.25, linewidth=0, gid=f"median-band:{f.name}")
        ax.plot(x, c.quantile_curve, color=colour, linewidth=1.4, marker="o" if len(x) == 1 else None, gid=f"median:{f.name}")
        if "v" in curves:
            ax.plot(x, c.v, color=colour, linewidth=0.9, linestyle="--", gid=f"v:{f.name}")
        if "u" in curves:
            ax.plot(x, c.u, color=colour, linewidth=0.9, linestyle=":", gid=f"u:{f.name}")
        start = informative_budget_x(f, axis, unit)
        if start < float(x[-1]):
            ax.axvspan(max(start, float(x[0])), float(x[-1]), facecolor=UNINFORMATIVE_COLOUR, alpha=0.6,
                       edgecolor="none", zorder=0, gid=f"uninformative-region:{f.name}")
        _panel_title(ax, report, f)
    x_range = (min(float(x[0]) for x in all_xs), max(float(x[-1]) for x in all_xs))
    _same_axes(axes, len(families), x_range, (lo, hi), log_x=log_x, integer_x=axis == "trials")
    handles = [
        LegendEntry((Patch(facecolor=colour, alpha=0.25, linewidth=0), Line2D([], [], color=colour, linewidth=1.4)), "",
                    f"{curve_name(report)}, {band_text(report)}"),
        key_entry(Patch(facecolor=UNINFORMATIVE_COLOUR, alpha=0.6, linewidth=0, label="bands uninformative")),
    ]
    if "v" in curves:
        handles.append(key_entry(Line2D([], [], color=colour, linewidth=0.9, linestyle="--", label="V (expected best, Dodge)")))
    if "u" in curves:
        handles.append(key_entry(Line2D([], [], color=colour, linewidth=0.9, linestyle=":", label="U (expected best, Tang)")))
    handles.append(LegendEntry(Line2D([], [], color=_REFERENCE_COLOUR, linewidth=1.0), reference.name,
                               f" (rank 1) {curve_name(report)}", gid=f"legend:{reference.name}"))
    xlabel = "budget k (trials)" if axis == "trials" else f"expected compute ({unit}, k × mean runtime)"
    _page_legend(figure, handles, xlabel, metric_label(report))
    return figure


@literal_text
def cdf_page(report: Report, families: Sequence[FamilyAnalysis], page: int, pages: int, *,
             size: tuple[float, float] | None = None) -> Figure:
    """One page of small multiples of the score CDFs with their bands, and the reference's CDF in grey (``size`` as
    in :func:`tuning_curve_page`)."""
    bands = [f.curve.band for f in report.families]
    lo = min(float(b.values[0]) for b in bands)
    hi = max(float(b.values[-1]) for b in bands)
    margin = Y_MARGIN * (hi - lo) if hi > lo else 0.05 * max(abs(lo), 1.0)
    lo, hi = max(lo - margin, min(b.a for b in bands)), min(hi + margin, max(b.b for b in bands))
    reference = report.family(report.ranking[0])
    band_label = f"{percent_text(report.settings.confidence)} {report.settings.method.upper()} CDF band"
    figure, axes = _page_figure(
        len(families), f"Score distributions with {band_label}s, families ranked {report.rank(families[0].name)}–"
        f"{report.rank(families[-1].name)} of {len(report.families)} (page {page} of {pages})", size,
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
        LegendEntry((Patch(facecolor=colour, alpha=0.25, linewidth=0), Line2D([], [], color=colour, linewidth=1.2)), "",
                    f"empirical CDF, {band_label}"),
        LegendEntry(Line2D([], [], color=_REFERENCE_COLOUR, linewidth=1.0), reference.name, " (rank 1)",
                    gid=f"legend:{reference.name}"),
    ]
    _page_legend(figure, handles, metric_names(report), "fraction of trials scoring ≤ x")
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

    As in :func:`curves_y_range`, a band end at a bound (the data cannot bound it) runs off the plot.
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
    margin = Y_MARGIN * (hi - lo) if hi > lo else 0.05 * max(abs(lo), 1.0)
    return max(lo - margin, a), min(hi + margin, b)


def _rank_ticks(ax: Axes, n: int) -> None:
    """Label the rows ``0 .. n - 1`` of ``ax`` by rank (row + 1) at round ranks, and say so on the axis."""
    ranks = [1] + [int(r) for r in MaxNLocator(10, integer=True).tick_values(1, n) if 1 < r <= n]
    ax.set_yticks([r - 1 for r in ranks], [f"{r:,}" for r in ranks], fontsize="x-small")
    ax.set_ylabel("rank (the ranking table names each family)", fontsize="small")


@literal_text
def summary_figure(report: Report, *, size: tuple[float, float] | None = None) -> Figure | None:
    """Every family ranked: its median at the ranking budget with the band, and its evidence against the reference.

    Left: the median (``settings.quantile``) curve of each family at ``report.ranking_k`` with its
    band, best first, the reference's band shaded across. Right: at every budget of the grid, the
    evidence that the reference beats the family (blues) or the family beats the reference
    (oranges), white beyond the pair's informative budget. None when every pair is compared
    (few families): the comparison figure shows that. Up to ``SUMMARY_NAMED_UP_TO`` families each
    row is named, with its band as a line and its median as a dot; beyond, the figure has a fixed
    height, its rows are ranks, and the bands are one filled area around the line of the medians;
    so too in a figure of a given ``size`` (inches) whose rows are too low for their names.
    """
    if report.reference is None:
        return None
    n = len(report.ranking)
    top, bottom = 0.75, 1.3
    height = top + bottom + (max(n, 8) * (0.16 if n <= 60 else 0.11) if n <= SUMMARY_NAMED_UP_TO else 9.0)
    figure = new_figure(_PAGE_WIDTH, height, layout=None, size=size)
    name_points = 7 if n <= 60 else 5
    # Named rows where each row is at least a line of its name high (in half the figure's height).
    named = n <= SUMMARY_NAMED_UP_TO and 0.5 * figure.get_figheight() / n >= 1.3 * name_points / 72.0
    left_ax, right_ax = figure.subplots(1, 2, sharey=True, gridspec_kw={"width_ratios": [2, 3]})
    fixed_layout(figure, lambda: _place_summary(figure, left_ax, right_ax))
    i = int(np.searchsorted(report.budgets, report.ranking_k))
    families = [report.family(name) for name in report.ranking]
    y = np.arange(n)
    median = np.array([f.curve.quantile_curve[i] for f in families])
    lower = np.array([f.curve.quantile_curve_lower[i] for f in families])
    upper = np.array([f.curve.quantile_curve_upper[i] for f in families])
    lo, hi = _ranking_range(families, median, lower, upper)
    lower, upper = clip_infinite(lower, lo, hi), clip_infinite(upper, lo, hi)
    left_ax.axvspan(lower[0], upper[0], color=_REFERENCE_COLOUR, alpha=0.2, linewidth=0, gid="reference-band")
    if named:
        left_ax.hlines(y, lower, upper, color=PALETTE[0], linewidth=1.6, gid="bands")
        left_ax.plot(median, y, "o", color="black", markersize=2.5 if n > 60 else 3.5, gid="medians")
        measure = lambda text: text_width(figure, text, name_points)  # noqa: E731 - used just below
        names = unique_shortened(list(report.ranking), 0.25 * figure.bbox.width, measure)
        left_ax.set_yticks(y, [f"{r}. {name}" for r, name in enumerate(names, start=1)], fontsize=name_points)
    else:  # thousands of rows: one area and one line, not an artist per family
        left_ax.fill_betweenx(y, lower, upper, color=PALETTE[0], alpha=0.5, linewidth=0, gid="bands")
        left_ax.plot(median, y, color="black", linewidth=0.8, gid="medians")
        _rank_ticks(left_ax, n)
    left_ax.set_xlim(lo, hi)
    left_ax.set_ylim(n - 0.5, -0.5)
    left_ax.tick_params(axis="x", labelsize="x-small")
    left_ax.grid(True, axis="x", linewidth=0.3, alpha=0.4)
    k_text = f"{report.ranking_k:g}"
    left_ax.set_xlabel(f"{curve_name(report)} at k = {k_text}, {band_text(report)}\n({metric_label(report)})", fontsize="small")

    keys = list(SUMMARY_COLOURS)
    cells = summary_evidence(report)
    index = np.vectorize(keys.index, otypes=[int])(cells)
    colours = {"cmap": ListedColormap(list(SUMMARY_COLOURS.values())), "vmin": -0.5, "vmax": len(keys) - 0.5}
    if named:  # vector cells: a PGF figure holds no separate image file for the document to find
        right_ax.pcolormesh(np.arange(index.shape[1] + 1) - 0.5, np.arange(n + 1) - 0.5, index, gid="evidence-map", **colours)
        right_ax.set_xlim(-0.5, index.shape[1] - 0.5)
    else:  # thousands of rows: one image (a PGF figure writes it beside itself as <name>-img0.png)
        right_ax.imshow(index, aspect="auto", interpolation="nearest", gid="evidence-map", **colours)
    ticks = [k for k in report.table_budgets if k in set(report.budgets.tolist())]
    if len(ticks) < 2:  # budgets given with --k that miss the table's: a few of the grid's own
        ticks = [float(k) for k in report.budgets[np.unique(np.linspace(0, report.budgets.size - 1, 6).round().astype(int))]]
    right_ax.set_xticks([int(np.searchsorted(report.budgets, k)) for k in ticks], [f"{k:g}" for k in ticks], fontsize="x-small")
    right_ax.tick_params(axis="y", length=0)
    right_ax.set_xlabel(f"budget k (trials; columns are the budgets of the grid), evidence against {report.reference}",
                        fontsize="small")
    figure.suptitle(f"{n} families ranked by the {curve_name(report)} tuning curve at k = {k_text}, and the evidence"
                    f" that the best, {report.reference}, beats each", fontsize="medium", va="top")
    present = set(cells.flat)
    key = [LegendEntry(Patch(facecolor=colour, edgecolor="0.6", linewidth=0.5), "",
                       evidence_label(name, report.settings.confidence, cell=True, independent=report.pairs_independent),
                       compact=evidence_label(name, report.settings.confidence, cell=True, compact=True))
           for name, colour in SUMMARY_COLOURS.items() if name in present]
    add_legend(figure, key, fontsize="x-small", loc="lower center", bbox_to_anchor=(0.5, 0.01))
    return figure


def _place_summary(figure: Figure, left_ax: Axes, right_ax: Axes) -> None:
    """Place the summary's two panels: margins measured from its texts (title, legend, labels, ticks)."""
    renderer = figure.canvas.get_renderer()
    width, height = figure.bbox.width, figure.bbox.height
    room = _Room.of(figure, [left_ax, right_ax])  # the right panel shares the left's rows: only the left names them
    xlabels = max(_extent([ax.xaxis.label], renderer, "y") for ax in (left_ax, right_ax))
    ylabel = _extent([left_ax.yaxis.label], renderer, "x")
    top, bottom = room.top, room.bottom(xlabels)
    left = room.ticks_y + ylabel + room.tick + 1.5 * room.pad
    gap = 0.6 * room.pad + room.ticks_x_width
    inner = max(2.0, width - left - room.right - gap)
    panel_h = max(1.0, height - top - bottom)
    left_ax.set_position([left / width, bottom / height, 0.4 * inner / width, panel_h / height])
    right_ax.set_position([(left + 0.4 * inner + gap) / width, bottom / height, 0.6 * inner / width, panel_h / height])
    room.anchor(figure)

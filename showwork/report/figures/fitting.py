"""Texts that fit their figure, measured: wrapped titles, shortened names, legends as wide as the figure, ticks apart.

matplotlib lays out the axes of a figure (constrained layout) but not its texts: a legend wider
than the figure runs off both edges, a long title off one side, the tick labels of a narrow panel
run into each other, and a label placed inside a plot may cover another. At a paper's sizes
(3.3 × 2.4 inches at 8 pt) all of these happen. Everything here measures the texts with the
figure's own renderer, at the size and fonts the figure is saved with (the report draws inside
:meth:`FigureStyle.rc_context`), and changes only what is shown, never what is plotted:

- :func:`wrap_text` and :func:`shorten` fit a text to a width (words wrapped; a name shortened in
  its middle with "…", so that "bert-base-lr-sweep-01" and "…-02" stay apart);
- :func:`fit_legend` lays a legend out under the plot in as many columns as the width holds, in a
  smaller font and with shortened names when it would take more than a share of the height;
- :func:`fit_texts`, run when the figure is saved, wraps titles and axis labels to their width,
  thins tick labels that would touch, and hides the optional labels drawn inside plots
  (:func:`mark_optional`) that would leave their axes or cover another text.

Why one module: the legends, the wrapping, the save-time pass and the check of what still
overlaps are one job, fitting a figure's texts to its size; they share one measurement (the
figure's renderer, widths remembered per text) and the pass refits the legend, so split in two each
half would import the other.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from matplotlib.axis import Axis
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.legend import Legend
from matplotlib.text import Text
from matplotlib.ticker import FixedFormatter, FixedLocator, FuncFormatter, LogLocator, MaxNLocator
from matplotlib.transforms import Bbox

from showwork.escaping import visible_text

__all__ = [
    "ELLIPSIS",
    "LEGEND_HEIGHT_SHARE",
    "MIN_LEGEND_POINTS",
    "MIN_PANEL_LINES",
    "LegendEntry",
    "drawn_text_boxes",
    "fit_legend",
    "fixed_layout",
    "place_fixed_layout",
    "fit_texts",
    "font_points",
    "layout_problems",
    "make_visible",
    "mark_optional",
    "overlapping",
    "panels_that_fit",
    "refit_legend",
    "remember_legend",
    "shorten",
    "text_width",
    "unique_shortened",
    "wrap_text",
    "wrap_to",
]

ELLIPSIS = "…"
LEGEND_HEIGHT_SHARE = 0.34
"""The most of a figure's height its legend may take before it is set smaller or its names shortened."""
MIN_LEGEND_POINTS = 5.0
"""The smallest font a legend is set in to fit (a paper's 8 pt "small" is 6.7 pt)."""
MIN_PANEL_LINES = (13.0, 10.0)
"""The least width and height of a panel in a figure of a given size, in lines of the base font (:func:`panels_that_fit`)."""


def font_points(size: Any) -> float:
    """A font size in points: a number, or a relative size ("small", "x-small") at the current ``font.size``."""
    return float(FontProperties(size=size).get_size_in_points())


def panels_that_fit(size: tuple[float, float], most_columns: int) -> tuple[int, int]:
    """Columns (at most ``most_columns``) and rows of panels that a figure of ``size`` inches holds, each panel at
    least :data:`MIN_PANEL_LINES` lines of the current base font wide and high, in 60 % of the height (the rest is
    the title, legend and labels'); at least one of each."""
    line = font_points("medium") / 72.0  # inches
    columns = max(1, min(most_columns, int(size[0] // (MIN_PANEL_LINES[0] * line))))
    rows = max(1, int(0.6 * size[1] // (MIN_PANEL_LINES[1] * line)))
    return columns, rows


def text_width(figure: Figure, text: str, size: Any) -> float:
    """The width in pixels of ``text`` (its widest line) at font ``size``, as ``figure`` draws it (control characters
    as their visible escapes)."""
    renderer = figure.canvas.get_renderer()
    prop = FontProperties(size=size)
    shown = visible_text(text)  # as it is drawn (make_visible): a control character is its escape, not a missing glyph
    return max((renderer.get_text_width_height_descent(line, prop, ismath=False)[0] for line in shown.split("\n") if line),
               default=0.0)


def shorten(text: str, width: float, measure: Callable[[str], float]) -> str:
    """``text`` if it fits ``width`` (``measure`` gives a text's width), else its start and end around "…".

    The middle goes, not the end: names of one search's variants share their starts
    ("deberta-v3-base-lr-1e-5", "deberta-v3-base-lr-3e-5"). At least one character of the text
    is kept.
    """
    if measure(text) <= width or len(text) <= 1:
        return text

    def cut(keep: int) -> str:
        head = (keep + 1) // 2
        return text[:head] + ELLIPSIS + (text[len(text) - (keep - head):] if keep > head else "")

    lo, hi = 1, len(text) - 1  # the most characters kept that still fit: binary search
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if measure(cut(mid)) <= width:
            lo = mid
        else:
            hi = mid - 1
    return cut(lo)


def unique_shortened(names: Sequence[str], width: float, measure: Callable[[str], float]) -> list[str]:
    """Each name shortened to ``width`` (:func:`shorten`), kept longer where two distinct names would read the same.

    Names that would collide are shortened to a wider width, step by step, up to their full text;
    names that are equal (or empty) stay equal.
    """
    out = [shorten(name, width, measure) for name in names]
    wider = max(width, 1.0)
    widest = max((measure(name) for name in names), default=0.0)
    while True:
        fulls: dict[str, set[str]] = {}
        for full, short in zip(names, out):
            fulls.setdefault(short, set()).add(full)
        clashing = {short for short, of in fulls.items() if len(of) > 1}
        if not clashing:
            return out
        if wider > widest:  # every name whole (distinct names stay apart; equal ones stay equal)
            return list(names)
        wider *= 1.15
        out = [shorten(full, wider, measure) if short in clashing else short for full, short in zip(names, out)]


_WORD_JOINTS = "_-/."
"""Where a word too long for its line (a metric's name) is broken first."""


def wrap_text(text: str, width: float, measure: Callable[[str], float]) -> str:
    """``text`` with line breaks so that each line fits ``width``: between words, or inside a word longer than a line."""
    lines: list[str] = []
    for paragraph in text.split("\n"):
        line = ""
        for word in paragraph.split(" "):
            trial = f"{line} {word}" if line else word
            if measure(trial) <= width or not line and measure(word) <= width:
                line = trial
                continue
            if line:
                lines.append(line)
            while measure(word) > width and len(word) > 1:  # a word wider than a line: broken where it must be,
                cut = max(1, next((i for i in range(len(word), 0, -1) if measure(word[:i]) <= width), 1))
                joint = max(word.rfind(c, 0, cut) for c in _WORD_JOINTS)  # after its last "_", "-", "/" or "." that fits
                cut = joint + 1 if joint > 0 else cut  # "matched_acc_" / "best", not "matched_ac" / "c_best"
                lines.append(word[:cut])
                word = word[cut:]
            line = word
        lines.append(line)
    return "\n".join(lines)


# ------------------------------------------------------------------ legends


@dataclass(frozen=True)
class LegendEntry:
    """One legend entry: its handle, the ``name`` that may be shortened, and a ``detail`` kept whole (" (n = 50)").

    ``code`` (a family's letter, "A") is written before the name: "A: name (n = 50)". ``gid``
    goes to the entry's text in the legend (tests find a family's entry by it). ``compact``
    replaces ``detail`` where the legend has too little room ("strong" for "strong evidence
    (resolved within reach; ...)": the caption and the report's text say the rest), with
    ``compact_handle`` in place of ``handle`` if given; an entry whose ``compact`` is "" is left
    out there (another entry's compact form speaks for it).
    """

    handle: Any
    name: str
    detail: str = ""
    gid: str | None = None
    code: str = ""
    compact: str | None = None
    compact_handle: Any = None

    def label(self, name: str | None = None, compact: bool = False) -> str:
        """The entry's text, with ``name`` (a shortened name) in place of its own, compact if asked and it has a compact form."""
        detail = self.compact if compact and self.compact is not None else self.detail
        return visible_text(f"{self.code + ': ' if self.code else ''}{self.name if name is None else name}{detail}")


def _columns_width(widths: Sequence[float], ncols: int, spacing: float) -> float:
    """The width of a legend of entries ``widths`` filled row by row in ``ncols`` columns."""
    columns = [max(widths[c::ncols]) for c in range(ncols) if widths[c::ncols]]
    return sum(columns) + spacing * (len(columns) - 1)


def _legend_layout(figure: Figure, entries: Sequence[LegendEntry], size: float, name_width: float | None,
                   avail: float, compact: bool) -> tuple[list[str], int, float]:
    """Labels (names shortened to ``name_width`` pixels if given; ``compact`` details), columns and estimated
    height at ``size`` points."""
    px = size * figure.dpi / 72.0
    measure = _measurer(figure, size)
    entries = _shown(entries, compact)
    names = [e.name for e in entries]
    if name_width is not None:
        names = unique_shortened(names, name_width, measure)
    handle_room = (2.0 + 0.8) * px  # handlelength + handletextpad, in font sizes
    # A label wider than the figure (a long key such as the evidence levels' bounds) is wrapped.
    labels = [wrap_text(e.label(name, compact), avail - handle_room - 1.0 * px, measure) for name, e in zip(names, entries)]
    widths = [handle_room + measure(label) for label in labels]
    spacing = 1.2 * px
    ncols = 1
    for c in range(len(entries), 0, -1):
        if _columns_width(widths, c, spacing) + 0.8 * px <= avail:
            ncols = c
            break
    rows = -(-len(entries) // ncols)
    lines_per_row = [max(label.count("\n") + 1 for label in labels[r * ncols:(r + 1) * ncols]) for r in range(rows)]
    height = (sum(lines_per_row) * 1.2 + (rows - 1) * 0.5 + 0.8) * px
    return labels, ncols, height


def _shown(entries: Sequence[LegendEntry], compact: bool) -> list[LegendEntry]:
    """The entries a legend shows: all, or (``compact``) those that have not given way to another's compact form."""
    return [e for e in entries if not (compact and e.compact == "")]


def _measurer(figure: Figure, size: float) -> Callable[[str], float]:
    """A text's width in pixels at ``size`` points in ``figure`` (remembered per text)."""
    cache: dict[str, float] = {}

    def measure(text: str) -> float:
        if text not in cache:
            cache[text] = text_width(figure, text, size)
        return cache[text]

    return measure


def fit_legend(figure: Figure, entries: Sequence[LegendEntry], *, fontsize: Any = "small",
               height_share: float = LEGEND_HEIGHT_SHARE, **kwargs: Any) -> Legend:
    """A legend under the plot (``loc="outside lower center"``) that fits the figure's width and a share of its height.

    Entries fill rows left to right, in as many columns as the figure's width holds. When the
    legend would take more than ``height_share`` of the figure's height, its font is set smaller
    (down to :data:`MIN_LEGEND_POINTS`), then the entries that have a compact form take it, then
    its names are shortened in their middle (:func:`unique_shortened`) so that more columns fit;
    a name wider than the figure is always shortened. Each entry's ``detail`` is kept whole
    (wrapped if wider than the figure). ``kwargs`` go to :meth:`Figure.legend`.
    """
    base = font_points(fontsize)
    avail = figure.bbox.width * 0.98
    height_limit = height_share * figure.bbox.height
    sizes = [base] + [s for s in (base * 0.9, base * 0.8) if s >= MIN_LEGEND_POINTS]
    if base > MIN_LEGEND_POINTS and sizes[-1] > MIN_LEGEND_POINTS and base * 0.8 < MIN_LEGEND_POINTS:
        sizes.append(MIN_LEGEND_POINTS)
    # In order: smaller fonts, then compact details, then names shortened more and more; the first
    # that fits the height, else the lowest.
    tries = [(size, 0.95, False) for size in sizes] + [(size, 0.95, True) for size in sizes]
    tries += [(sizes[-1], share, True) for share in (0.6, 0.45, 0.34, 0.25)]
    choice = None
    for size, share, compact in tries:
        layout = _legend_layout(figure, entries, size, avail * share, avail, compact)
        if choice is None or layout[2] < choice[3][2] or layout[2] <= height_limit:
            choice = size, share, compact, layout
        if layout[2] <= height_limit:
            break
    size, _, compact, (labels, ncols, _) = choice
    entries = _shown(entries, compact)
    handles = [e.compact_handle if compact and e.compact_handle is not None else e.handle for e in entries]
    options = {"loc": "outside lower center", "frameon": False, "columnspacing": 1.2, "handletextpad": 0.8} | kwargs

    def make(ncols: int) -> Legend:
        rows = -(-len(handles) // ncols)
        # Legends fill columns first; reorder so entries read left to right, then down.
        order = [r * ncols + c for c in range(ncols) for r in range(rows) if r * ncols + c < len(handles)]
        legend = figure.legend(handles=[handles[i] for i in order], labels=[labels[i] for i in order], ncols=ncols,
                               fontsize=size, **options)
        for text, i in zip(legend.get_texts(), order):
            text.set_gid(None if entries[i].gid is None else visible_text(entries[i].gid))
        return legend

    legend = make(ncols)
    # The estimate can be a little short of what the legend measures: fewer columns until it fits.
    renderer = figure.canvas.get_renderer()
    while ncols > 1 and legend.get_window_extent(renderer).width > avail:
        legend.remove()
        ncols -= 1
        legend = make(ncols)
    return legend


def fixed_layout(figure: Figure, place: Callable[[], None]) -> None:
    """Keep the function that places the axes of a figure without a layout engine (run by :func:`place_fixed_layout`)."""
    figure._showwork_place = place


def place_fixed_layout(figure: Figure) -> None:
    """Place the axes of a figure of fixed layout with the function :func:`fixed_layout` kept (nothing without one)."""
    place = getattr(figure, "_showwork_place", None)
    if place is not None:
        place()


def remember_legend(figure: Figure, entries: Sequence[LegendEntry], kwargs: dict[str, Any]) -> None:
    """Keep a figure's legend entries, so that :func:`fit_texts` lays the legend out again if the figure is saved at
    another size or font size than its legend was fitted at (:func:`fit_legend` right after)."""
    figure._showwork_legend = (tuple(entries), dict(kwargs), _fitted_at(figure))


def _fitted_at(figure: Figure) -> tuple[float, ...]:
    """What a fitted legend depends on besides its entries: the figure's size in pixels and the base font size."""
    return (figure.bbox.width, figure.bbox.height, font_points("medium"))


def refit_legend(figure: Figure, height_share: float | None = None) -> None:
    """Lay out again the legend that :func:`remember_legend` kept, where the figure was resized (or its font size
    changed) since, or in at most ``height_share`` of the figure's height if given (its own share if lower)."""
    kept = getattr(figure, "_showwork_legend", None)
    if kept is None:
        return
    entries, kwargs, fitted_at = kept
    if height_share is None and fitted_at == _fitted_at(figure) and figure.legends:
        return  # drawn at the size it is saved at: the legend fitted then fits now
    for legend in list(figure.legends):
        legend.remove()
    if height_share is not None:
        kwargs = kwargs | {"height_share": min(height_share, kwargs.get("height_share", LEGEND_HEIGHT_SHARE))}
    fit_legend(figure, entries, **kwargs)
    figure._showwork_legend = (entries, kept[1], _fitted_at(figure))


# ------------------------------------------------------------------ the pass at save time


def wrap_to(text: Text | None, width: float) -> bool:
    """Wrap a title or label to ``width`` pixels, in its own font; returns whether its text changed."""
    if text is None or not text.get_visible() or not text.get_text().strip() or width <= 0:
        return False
    figure = text.get_figure(root=True)
    measure = _measurer(figure, text.get_fontsize())
    original = getattr(text, "_showwork_unwrapped", None)
    if original is None:  # wrapping again (a later save, a second pass) starts from the text as drawn
        original = text._showwork_unwrapped = text.get_text()
    before = text.get_text()
    text.set_text(wrap_text(original, width, measure))
    return text.get_text() != before


def wrap_titles_and_labels(figure: Figure) -> bool:
    """Wrap the figure's titles to its width and each axes' title and labels to the axes' extent.

    Returns whether any text changed (the layout must then run again).
    """
    width, height = figure.bbox.width, figure.bbox.height
    changed = wrap_to(figure._suptitle, 0.96 * width)
    changed |= wrap_to(figure._supxlabel, 0.96 * width)
    changed |= wrap_to(figure._supylabel, 0.9 * height)
    for ax in figure.axes:
        if not ax.get_visible():
            continue
        box = ax.get_position()
        # A title is centred on its axes: no wider than the room on both sides of the axes' middle.
        middle = (box.x0 + box.x1) / 2 * width
        for title in (ax.title, ax._left_title, ax._right_title):
            changed |= wrap_to(title, 0.96 * 2 * min(middle, width - middle))
        changed |= wrap_to(ax.xaxis.label, max(box.width * width, 0.15 * width))
        changed |= wrap_to(ax.yaxis.label, max(box.height * height, 0.15 * height))
    return changed


def drawn_tick_labels(axis: Axis) -> list[Text]:
    """The tick labels ``axis`` draws: those of its major and minor ticks inside its view, shown and not empty."""
    lo, hi = sorted(axis.get_view_interval())
    span = hi - lo
    out = []
    for locs, labels in ((axis.get_majorticklocs(), axis.get_majorticklabels()),
                         (axis.get_minorticklocs(), axis.get_minorticklabels())):
        for loc, label in zip(locs, labels):
            inside = lo - 1e-9 * abs(span) <= loc <= hi + 1e-9 * abs(span)
            if inside and label.get_visible() and label.get_text().strip():
                out.append(label)
    return out


def _touching(boxes: Sequence[Bbox]) -> bool:
    return any(overlapping(a, b, gap=2.0) for i, a in enumerate(boxes) for b in boxes[i + 1:])


def thin_ticks(figure: Figure) -> bool:
    """Fewer ticks on every axis whose tick labels touch; returns whether any axis changed."""
    renderer = figure.canvas.get_renderer()
    changed = False
    for ax in figure.axes:
        if not ax.get_visible():
            continue
        for axis in (ax.xaxis, ax.yaxis):
            for _ in range(12):
                boxes = [label.get_window_extent(renderer) for label in drawn_tick_labels(axis)]
                if len(boxes) < 2 or not _touching(boxes):
                    break
                _fewer_ticks(axis, len(boxes))
                changed = True
    return changed


def _fewer_ticks(axis: Axis, shown: int) -> None:
    """Give ``axis`` a locator of fewer ticks than the ``shown`` ones, of the same kind."""
    locator = axis.get_major_locator()
    if isinstance(locator, FixedLocator):
        # Every other tick, its label with it (a FixedFormatter labels ticks by position).
        formatter = axis.get_major_formatter()
        labels = list(getattr(formatter, "seq", []))
        ticks = list(locator.locs)
        if labels and len(labels) == len(ticks):
            axis.set_ticks(ticks[::2], labels[::2])
        else:
            axis.set_major_locator(FixedLocator(ticks[::2]))
    elif isinstance(locator, LogLocator):
        axis.set_major_locator(LogLocator(base=10, numticks=max(2, shown - 1)))
    else:
        axis.set_major_locator(MaxNLocator(nbins=max(1, shown - 2), steps=[1, 2, 2.5, 5, 10], min_n_ticks=1))


def overlapping(a: Bbox, b: Bbox, gap: float = 0.0) -> bool:
    """Whether two extents (pixels) cover each other, or come closer than ``gap`` pixels."""
    return min(a.x1, b.x1) - max(a.x0, b.x0) > -gap and min(a.y1, b.y1) - max(a.y0, b.y0) > -gap


def drawn_text_boxes(figure: Figure) -> list[tuple[Text, Bbox]]:
    """Every text ``figure`` draws, with its extent in pixels: titles, labels, tick labels, legends, annotations.

    Tick labels count only where their tick is drawn (inside the axis's view); texts of hidden
    axes, empty texts and hidden ones do not count.
    """
    renderer = figure.canvas.get_renderer()
    out = []
    tick_labels: set[int] = set()
    for ax in figure.axes:
        for axis in (ax.xaxis, ax.yaxis):
            for tick in [*axis.get_major_ticks(), *axis.get_minor_ticks()]:
                tick_labels.update((id(tick.label1), id(tick.label2)))
            if ax.get_visible():
                out += [(label, label.get_window_extent(renderer)) for label in drawn_tick_labels(axis)]
    for text in figure.findobj(Text):
        if id(text) in tick_labels or not text.get_visible() or not text.get_text().strip():
            continue
        if text.axes is not None and not text.axes.get_visible():
            continue
        out.append((text, text.get_window_extent(renderer)))
    return out


def mark_optional(text: Text, within: tuple[float, float] | None = None) -> Text:
    """Mark a text drawn inside a plot as one the figure may leave out where it does not fit.

    Such texts (a range's favoured family in an evidence strip, the note on the uninformative
    budgets) say what the figure's caption and the report's text say too; when the figure is
    saved, each that would leave its axes (or the x range ``within``, in data coordinates) or
    cover another text is hidden (:func:`fit_texts`).
    """
    text._showwork_optional = True if within is None else within
    return text


def _hide_colliding(figure: Figure) -> None:
    """Hide each optional text (:func:`mark_optional`) outside its axes or over another text."""
    if not any(_optional(text) for text in figure.findobj(Text)):
        return
    _draw_quietly(figure)  # places what only a draw places (a legend's texts)
    renderer = figure.canvas.get_renderer()
    boxes = drawn_text_boxes(figure)
    kept: list[Bbox] = [box for text, box in boxes if not _optional(text)]
    for text, box in boxes:
        if not _optional(text):
            continue
        inside = text.axes is None or _within(box, text.axes.get_window_extent(renderer))
        region = getattr(text, "_showwork_optional")
        if inside and isinstance(region, tuple) and text.axes is not None:
            x0, x1 = sorted(text.axes.transData.transform([(region[0], 0.0), (region[1], 0.0)])[:, 0])
            inside = box.x0 >= x0 - 0.5 and box.x1 <= x1 + 0.5
        if not inside or any(overlapping(box, other) for other in kept):
            text.set_visible(False)
        else:
            kept.append(box)


def _optional(text: Text) -> bool:
    return getattr(text, "_showwork_optional", False) is not False


def _within(box: Bbox, outer: Bbox, tolerance: float = 0.5) -> bool:
    return box.x0 >= outer.x0 - tolerance and box.x1 <= outer.x1 + tolerance and box.y0 >= outer.y0 - tolerance \
        and box.y1 <= outer.y1 + tolerance


def make_visible(figure: Figure) -> None:
    """Every text and gid of ``figure`` with its control characters as visible escapes (:func:`~showwork.escaping.visible_text`).

    A family's name, a categorical value or a metric's name is the user's: an ESC in it would be
    drawn as a box, and break the SVG (XML has no place for it) where it goes into an element's
    text or id. Legends drawn later take their labels through :meth:`LegendEntry.label`, which
    does the same.
    """
    for artist in figure.findobj():
        gid = artist.get_gid()
        if isinstance(gid, str) and visible_text(gid, one_line=True) != gid:  # an SVG id: XML reads a line break as a space
            artist.set_gid(visible_text(gid, one_line=True))
        if isinstance(artist, Text) and visible_text(artist.get_text()) != artist.get_text():
            artist.set_text(visible_text(artist.get_text()))
    for ax in figure.axes:
        for axis in (ax.xaxis, ax.yaxis):
            formatter = axis.get_major_formatter()
            if isinstance(formatter, FixedFormatter):
                formatter.seq = [visible_text(str(label)) for label in formatter.seq]
            elif isinstance(formatter, FuncFormatter) and not getattr(formatter, "_showwork_visible", False):
                # Labels given with set_xticks(ticks, labels) become a FuncFormatter over them.
                formatter.func = functools.partial(_visible_label, formatter.func)
                formatter._showwork_visible = True


def _visible_label(format_label: Callable[..., Any], x: float, pos: int | None = None) -> str:
    return visible_text(str(format_label(x, pos)))


def fit_texts(figure: Figure, run_layout: Callable[[], None], name: str = "a figure") -> None:
    """Fit every text of a drawn figure, at its final size, before it is saved.

    Control characters become visible escapes (:func:`make_visible`). Titles and axis labels are wrapped (:func:`wrap_titles_and_labels`), the layout runs
    (``run_layout``: constrained layout, once), tick labels that touch are thinned
    (:func:`thin_ticks`; the layout runs again if any were), and optional texts inside plots that
    would leave their axes or cover another text are hidden. Where the texts leave the plots no
    room even with a lower legend, one warning names the figure (``name``).
    """
    make_visible(figure)
    refit_legend(figure)
    wrap_titles_and_labels(figure)
    fits = _laid_out(run_layout)
    for share in (0.2, 0.12):  # the texts leave the plot no room: a lower legend (names shortened more)
        if fits:
            break
        refit_legend(figure, height_share=share)
        fits = _laid_out(run_layout)
    for _ in range(3):  # the axes' own extents are known now; a text wrapped anew needs another layout
        if not wrap_titles_and_labels(figure):
            break
        fits = _laid_out(run_layout)
    if thin_ticks(figure):
        fits = _laid_out(run_layout)
    _hide_colliding(figure)
    if not fits:
        width, height = figure.get_size_inches()
        warnings.warn(f"{name}: its texts leave its plots no room at {width:g} × {height:g} inches and {font_points('medium'):g} pt,"
                      " and some overlap; a larger --figsize or a smaller --font-size lays it out", stacklevel=2)


def _draw_quietly(figure: Figure) -> None:
    """Draw ``figure`` without rendering; a layout engine still attached that cannot place the plots says so in
    :func:`fit_texts`'s one warning, not again here."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*collapsed to zero")
        figure.draw_without_rendering()


def _laid_out(run_layout: Callable[[], None]) -> bool:
    """Run the layout; whether it could place the plots (constrained layout warns, and leaves them, when its texts
    leave the plots no room)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run_layout()
    collapsed = [w for w in caught if "collapsed to zero" in str(w.message)]
    for w in caught:
        if w not in collapsed:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return not collapsed


def layout_problems(figure: Figure, tolerance: float = 0.5) -> list[str]:
    """What is wrong with a drawn figure's texts: each text outside the canvas, each two that cover each other.

    Measured on the figure as it is drawn now (lay it out first: :func:`fit_texts`, or a save).
    Empty when every text lies inside the canvas and no two texts overlap. Tests and the docs'
    figure gallery check every figure kind with it.
    """
    _draw_quietly(figure)
    canvas = figure.bbox
    boxes = drawn_text_boxes(figure)
    problems = []
    for text, box in boxes:
        if not _within(box, canvas, tolerance):
            problems.append(f"{text.get_text()!r} runs outside the canvas ({_box_text(box)} of {_box_text(canvas)})")
    for i, (a, box_a) in enumerate(boxes):
        for b, box_b in boxes[i + 1:]:
            if overlapping(box_a, box_b, gap=-tolerance):
                problems.append(f"{a.get_text()!r} and {b.get_text()!r} overlap ({_box_text(box_a)}, {_box_text(box_b)})")
    return problems


def _box_text(box: Bbox) -> str:
    return f"x {box.x0:.0f}..{box.x1:.0f}, y {box.y0:.0f}..{box.y1:.0f}"

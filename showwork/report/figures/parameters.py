"""Scores against each hyperparameter: one small panel per parameter, every trial a point (Optuna's slice plot).

Each panel puts each trial's validation score (y) against the value it drew of one parameter (x):
a logarithmic x axis for a log-scale distribution, categorical values as strips (their labels on
the axis, each trial jittered sideways by a fixed seed, so the same report draws the same points),
and the trials that failed or timed out as ``x`` markers on the panel's bottom edge (they have no
score). With several families each has its colour. With more parameters than
:data:`PARAMETERS_PER_PAGE` the panels go on several pages.

Which parameters, and how each is drawn, come from the search space its search recorded
(:func:`parameter_axes`): every parameter but the constants, in the space's order. A source without
a space (a results file, other programs' MLflow runs) has only the values its trials recorded (a
results file's ``--params`` columns): a parameter with one value is a constant and left out; one
whose values are all numbers is numeric, on a logarithmic axis when they look log-uniform (all
positive, over two decades or more, fewer than half in the top decade: a learning rate, not a
dropout rate that once drew 0.0002); any other is categorical. A trial without the parameter (a ``when:`` condition that failed, an empty
cell) is not in its panel; the panel's axis label counts the trials that are.

Artists carry gids ``"scores:<param>:<family>"`` (the finished trials) and
``"failed:<param>:<family>"`` (the others).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.transforms import blended_transform_factory

from showwork.distributions import Categorical, Constant, LogIntUniform, LogUniform
from showwork.errors import InputError
from showwork.report.contents import Report
from showwork.report.figures.common import (
    Y_MARGIN,
    add_legend,
    family_colour,
    key_entry,
    literal_text,
    metric_label,
    new_figure,
    set_x_scale,
)
from showwork.report.figures.fitting import LegendEntry, font_points, panels_that_fit, text_width, unique_shortened
from showwork.space import SearchSpace

__all__ = [
    "FAILED_MARKER_Y",
    "JITTER_SEED",
    "LOG_SPAN",
    "PARAMETERS_PER_PAGE",
    "ParameterAxis",
    "parameter_axes",
    "parameter_grid",
    "parameter_pages",
    "scores_by_parameter_figure",
]

PARAMETERS_PER_PAGE = 12
"""Panels on one page (4 rows of 3); more parameters go on more pages."""
_COLUMNS = 3
_PANEL_SIZE = (2.9, 2.2)
"""Width and height of one panel, in inches (the figure's own size)."""
JITTER_SEED = 0
"""The seed of the sideways jitter of categorical strips: the same report draws the same points."""
_JITTER = 0.18
"""Half the width of a strip, in category slots."""
LOG_SPAN = 100.0
"""A parameter without a recorded space may be on a log axis when its values are positive and max/min >= this."""
FAILED_MARKER_Y = 0.03
"""Height of the failed trials' markers, as a fraction of the panel (on its bottom edge)."""
FAILED_LABEL = "failed or timed out (no score)"
_LOG_KINDS = (LogUniform, LogIntUniform)


@dataclass(frozen=True)
class ParameterAxis:
    """How one parameter's panel draws its x axis.

    Attributes
    ----------
    name : str
        The parameter's dotted name, as the trials record it.
    scale : {"linear", "log", "categorical"}
    categories : tuple
        The values of a categorical axis, in the order drawn (the space's choices, then any other
        value a trial recorded); empty otherwise.
    """

    name: str
    scale: str
    categories: tuple = ()


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _recorded_values(report: Report, name: str) -> list[Any]:
    return [p[name] for f in report.families for p in f.results.params if p.get(name) is not None]


def _with_recorded(categories: Sequence[Any], values: Sequence[Any]) -> tuple:
    """``categories`` then every other value recorded, each once (1 and 1.0, True and 1 kept apart)."""
    out = list(categories)
    for value in values:
        if not any(type(value) is type(c) and value == c for c in out):
            out.append(value)
    return tuple(out)


def _space_of(report: Report) -> dict[str, Any]:
    """Every family's recorded space, merged in order (the first family's distribution of a name wins)."""
    merged: dict[str, Any] = {}
    for f in report.families:
        space = (f.results.spec or {}).get("space")
        if not isinstance(space, Mapping) or not space:
            continue
        for name, dist in SearchSpace.from_dict(space).items():
            merged.setdefault(name, dist)
    return merged


def _looks_log_scale(values: Sequence[float]) -> bool:
    """Positive values over :data:`LOG_SPAN` or more, fewer than half of them in the top decade.

    Log-uniform draws over four decades put a quarter of their values in the top one; uniform
    draws on ``[0, b]`` (a dropout rate that drew 0.0002) put nine tenths there.
    """
    lo, hi = min(values), max(values)
    return lo > 0 and hi / lo >= LOG_SPAN and sum(1 for v in values if v > hi / 10) < len(values) / 2


def _inferred_axis(name: str, values: Sequence[Any]) -> ParameterAxis | None:
    if len({(type(v), v) for v in values}) < 2:  # one value: a constant of the search
        return None
    if all(_is_number(v) for v in values):
        return ParameterAxis(name, "log" if _looks_log_scale(values) else "linear")
    order = sorted(set(map(str, values)))  # no space: the values in text order, each type once
    ordered = sorted(values, key=lambda v: (order.index(str(v)), type(v).__name__))
    return ParameterAxis(name, "categorical", _with_recorded((), ordered))


def parameter_axes(report: Report) -> list[ParameterAxis]:
    """One axis per parameter of the report's trials, constants left out (see the module's docstring).

    Parameters from the recorded spaces come first, in their order; then any parameter the trials
    recorded that no space names (results files: the ``--params`` columns), in order of first
    appearance. A parameter no trial drew is left out.

    Raises
    ------
    InputError
        A recorded space that cannot be read (an edited ledger).
    """
    space = _space_of(report)
    names = [name for name in space if not isinstance(space[name], Constant)]
    for f in report.families:
        for params in f.results.params:
            names += [name for name in params if name not in names and name not in space]
    axes = []
    for name in names:
        values = _recorded_values(report, name)
        if not values:
            continue
        dist = space.get(name)
        if dist is None:
            inferred = _inferred_axis(name, values)
            axes.extend([inferred] if inferred is not None else [])
        elif isinstance(dist, Categorical) or not all(_is_number(v) for v in values):
            axes.append(ParameterAxis(name, "categorical", _with_recorded(getattr(dist, "choices", ()), values)))
        else:
            axes.append(ParameterAxis(name, "log" if isinstance(dist, _LOG_KINDS) else "linear"))
    return axes


def parameter_grid(size: tuple[float, float] | None, n: int) -> tuple[int, int]:
    """Columns and rows of the panels of ``n`` parameters on a page of ``size`` inches (None: the figure's own size).

    The figure's own size grows with the parameters: :data:`PARAMETERS_PER_PAGE` (4 rows of 3)
    to a page. A given size holds as many panels as
    :func:`~showwork.report.figures.fitting.panels_that_fit`, at least one.
    """
    n = max(n, 1)
    if size is None:
        columns = min(_COLUMNS, n)
        return columns, -(-min(n, PARAMETERS_PER_PAGE) // columns)
    columns, rows = panels_that_fit(size, n)
    return columns, min(rows, -(-n // columns))


def parameter_pages(report: Report, size: tuple[float, float] | None = None) -> list[list[ParameterAxis]]:
    """The parameters' axes, as many to a page as :func:`parameter_grid` holds; empty when no trial recorded a parameter."""
    axes = parameter_axes(report)
    columns, rows = parameter_grid(size, len(axes))
    per_page = columns * rows
    return [axes[i : i + per_page] for i in range(0, len(axes), per_page)]


def _category_index(categories: tuple, value: Any) -> int:
    return next(i for i, c in enumerate(categories) if type(value) is type(c) and value == c)


def _x_positions(axis: ParameterAxis, values: Sequence[Any], rng: np.random.Generator) -> np.ndarray:
    if axis.scale != "categorical":
        return np.asarray(values, dtype=float)
    slots = np.array([_category_index(axis.categories, v) for v in values], dtype=float)
    return slots + rng.uniform(-_JITTER, _JITTER, size=len(slots))


def _score_range(report: Report) -> tuple[float, float]:
    scores = np.concatenate([f.results.scores[np.isfinite(f.results.scores)] for f in report.families])
    if scores.size == 0:
        return 0.0, 1.0
    lo, hi = float(scores.min()), float(scores.max())
    margin = Y_MARGIN * (hi - lo) if hi > lo else 0.05 * max(abs(lo), 1.0)
    return lo - margin, hi + margin


def _draw_panel(ax: Axes, report: Report, axis: ParameterAxis, ylim: tuple[float, float], panel_width: float) -> None:
    """One parameter's panel; ``panel_width`` is its width in pixels, about (categorical labels are fitted to it)."""
    rng = np.random.default_rng(JITTER_SEED)  # per panel: a panel's points do not depend on the others
    bottom = blended_transform_factory(ax.transData, ax.transAxes)
    drew = total = 0
    for i, f in enumerate(report.families):
        r = f.results
        rows = [j for j, p in enumerate(r.params) if p.get(axis.name) is not None]
        total += r.n_trials if rows else 0  # a family without the parameter is not this panel's
        drew += len(rows)
        x = _x_positions(axis, [r.params[j][axis.name] for j in rows], rng)
        scored = np.array([r.statuses[j] == "finished" and math.isfinite(r.scores[j]) for j in rows], dtype=bool)
        scores = np.array([r.scores[j] for j in rows], dtype=float)
        colour = family_colour(i)
        if scored.any():
            ax.scatter(x[scored], scores[scored], s=12, color=colour, alpha=0.7, linewidths=0, gid=f"scores:{axis.name}:{f.name}")
        if (~scored).any():
            ax.scatter(x[~scored], np.full(int((~scored).sum()), FAILED_MARKER_Y), s=22, marker="x", color=colour,
                       linewidths=1.0, transform=bottom, clip_on=False, gid=f"failed:{axis.name}:{f.name}")
    if axis.scale == "log":
        set_x_scale(ax, True)  # ticks 0.001, 0.01 as text (no mathtext: texts are drawn as typed)
    elif axis.scale == "categorical":
        # Each value's label shortened to its slot (a value's start and end, "…" between), never rotated.
        figure = ax.get_figure(root=True)
        size = font_points("x-small")
        slot = 0.85 * panel_width / len(axis.categories)
        labels = unique_shortened([str(c) for c in axis.categories], slot, lambda text: text_width(figure, text, size))
        ax.set_xticks(range(len(axis.categories)), labels)
        ax.set_xlim(-0.5, len(axis.categories) - 0.5)
    ax.set_ylim(*ylim)
    counted = "" if drew == total else f" ({drew} of {total} trials)"
    ax.set_xlabel(f"{axis.name}{counted}", fontsize="small")
    ax.tick_params(labelsize="x-small")
    ax.grid(True, linewidth=0.4, alpha=0.4)


@literal_text
def scores_by_parameter_figure(report: Report, axes: Sequence[ParameterAxis] | None = None, page: int = 1,
                               pages: int = 1, *, size: tuple[float, float] | None = None) -> Figure:
    """Each trial's score against each parameter's value: one panel per parameter, on one figure.

    Parameters
    ----------
    report : Report
    axes : sequence of ParameterAxis, optional
        The panels, in order; default every parameter (:func:`parameter_axes`; see
        :func:`parameter_pages` for many).
    page, pages : int
        This page's number and the number of pages, for the title.
    size : (float, float), optional
        The figure's width and height in inches; default 2.9 × 2.2 inches per panel, three panels
        to a row. Give ``axes`` from :func:`parameter_pages` of the same size.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    InputError
        No trial of the report recorded a parameter.
    """
    axes = parameter_axes(report) if axes is None else list(axes)
    if not axes:
        raise InputError("no trial of the report recorded a hyperparameter (results files: give --params).")
    columns, _ = parameter_grid(size, len(axes))
    rows = -(-len(axes) // columns)
    figure = new_figure(columns * _PANEL_SIZE[0] + 0.6, rows * _PANEL_SIZE[1] + 1.3, size=size)
    panels = figure.subplots(rows, columns, squeeze=False, sharey=True)
    ylim = _score_range(report)
    panel_width = 0.8 * figure.bbox.width / columns
    for slot, ax in enumerate(panels.flat):
        if slot >= len(axes):
            ax.set_visible(False)
            continue
        _draw_panel(ax, report, axes[slot], ylim, panel_width)
        if slot % columns == 0:
            ax.set_ylabel(metric_label(report), fontsize="small")
    several = len(report.families) > 1
    handles = [LegendEntry(Line2D([], [], linestyle="none", marker="o", markersize=4, color=family_colour(i) if several else "0.35"),
                           f.name, f" (n = {f.results.n_trials})", gid=f"legend:{f.name}")
               for i, f in enumerate(report.families[: 10 if several else 1])]
    if any(f.results.n_failed for f in report.families):
        handles.append(key_entry(Line2D([], [], linestyle="none", marker="x", color="0.35", label=FAILED_LABEL)))
    add_legend(figure, handles)
    of = f" ({page} of {pages})" if pages > 1 else ""
    figure.suptitle(f"Validation score against each hyperparameter{of}", fontsize="medium")
    return figure

"""A report's figure files: each figure saved byte-identically, and every figure of a report drawn and saved."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib
from matplotlib.figure import Figure

from showwork.errors import InputError
from showwork.report.contents import Report
from showwork.report.figures.common import DPI, curves_y_range, literal_text, use_log_x
from showwork.report.figures.comparison import comparison_figure, cost_comparison_figure
from showwork.report.figures.curves import cdf_figure, tuning_curve_figure
from showwork.report.figures.pages import cdf_page, family_pages, summary_figure, tuning_curve_page

__all__ = [
    "FIGURE_FORMATS",
    "report_figures",
    "save_figure",
]

FIGURE_FORMATS = ("png", "svg", "pdf")
_METADATA = {"png": {"Software": None}, "svg": {"Date": None}, "pdf": {"CreationDate": None, "ModDate": None}}
_SVG_HASH_SALT = "showwork"


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
        y_range = curves_y_range(report.families)  # every page has the report's axes
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

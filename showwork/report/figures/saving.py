"""A report's figure files: each figure saved byte-identically, and every figure of a report drawn and saved."""

from __future__ import annotations

import contextlib
import glob
import io
import os
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import matplotlib
from matplotlib.backends import backend_pgf
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from showwork.constants import FIGURE_FORMATS
from showwork.errors import InputError
from showwork.escaping import latex_text
from showwork.report.contents import Report
from showwork.report.figures.common import DPI, curves_y_range, literal_text, score_texts, use_log_x
from showwork.report.figures.comparison import comparison_figure, cost_comparison_figure
from showwork.report.figures.curves import cdf_figure, tuning_curve_figure
from showwork.report.figures.extrapolation import extrapolation_figure, extrapolation_figures
from showwork.report.figures.fitting import fit_texts, place_fixed_layout
from showwork.report.figures.pages import cdf_page, family_pages, summary_figure, tuning_curve_page
from showwork.report.figures.parameters import parameter_pages, scores_by_parameter_figure
from showwork.report.figures.style import PDF_FONT_TYPE, FigureStyle, pgf_rc, title_text

__all__ = [
    "DEFAULT_FORMATS",
    "FIGURE_FORMATS",
    "SCORES_BY_PARAMETER",
    "figure_png",
    "lay_out_figure",
    "report_drawings",
    "report_figures",
    "save_figure",
]

"""Every format a figure can be saved in; a report writes the first three unless asked (pgf needs a TeX system)."""
DEFAULT_FORMATS = ("png", "svg", "pdf")
_METADATA = {"png": {"Software": None}, "svg": {"Date": None}, "pdf": {"CreationDate": None, "ModDate": None}, "pgf": None}
_SVG_HASH_SALT = "showwork"
SCORES_BY_PARAMETER = "scores_by_parameter"
"""The name of the figure of scores against each hyperparameter (``<name>_page<i>`` when paged)."""


# ------------------------------------------------------------------ files


def _check_formats(formats: Sequence[str]) -> tuple[str, ...]:
    if isinstance(formats, str):
        formats = (formats,)
    unknown = [f for f in formats if f not in FIGURE_FORMATS]
    if unknown or not formats:
        raise InputError(f"figure formats must be among {', '.join(FIGURE_FORMATS)} (got {', '.join(map(str, formats)) or 'none'}).")
    if "pgf" in formats:
        pgf_rc()  # no TeX: refused before anything is drawn
    return tuple(dict.fromkeys(formats))


def _save_rc(formats: Sequence[str]) -> dict[str, Any]:
    """What saving sets: a fixed SVG hash salt (reproducible ids), TrueType fonts in PDF, the PGF's TeX."""
    return {"svg.hashsalt": _SVG_HASH_SALT, "pdf.fonttype": PDF_FONT_TYPE, **(pgf_rc() if "pgf" in formats else {})}


def lay_out_figure(figure: Figure, name: str = "a figure") -> None:
    """Fit the figure's texts at the size it is saved at (:func:`fit_texts`), run its layout, and keep the result.

    The layout engine (constrained layout) runs inside :func:`fit_texts`, then is removed: with an
    engine every save draws the figure twice and lays it out again each time; without, a save
    draws once, and every format of a figure is laid out alike. A figure of fixed layout (pages
    of small multiples) places its axes with the function :func:`fixed_layout` kept.
    """
    if not isinstance(figure.canvas, FigureCanvasAgg):  # a Figure made outside new_figure: measured on Agg all the same
        FigureCanvasAgg(figure)
    engine = figure.get_layout_engine()

    def run() -> None:
        if engine is not None:
            engine.execute(figure)
        else:
            place_fixed_layout(figure)

    fit_texts(figure, run, name)
    if engine is not None:
        # set_layout_engine(None) falls back to the rc defaults; make sure they name no engine.
        with matplotlib.rc_context({"figure.autolayout": False, "figure.constrained_layout.use": False}):
            figure.set_layout_engine(None)


@literal_text
def save_figure(
    figure: Figure,
    directory: str | os.PathLike,
    stem: str,
    formats: Sequence[str] = DEFAULT_FORMATS,
) -> list[Path]:
    """Write ``figure`` as ``directory/stem.<format>`` for each format; the same figure gives the same bytes.

    Parameters
    ----------
    figure : matplotlib.figure.Figure
    directory : path
        Created (with parents) if missing.
    stem : str
        File name without suffix.
    formats : sequence of {"png", "svg", "pdf", "pgf"}
        PDF embeds its fonts as TrueType (:data:`~showwork.report.figures.style.PDF_FONT_TYPE`);
        PGF (for LaTeX's ``\\input``) needs a TeX system to measure the texts, and leaves the
        font to the document.

    Returns
    -------
    list of Path, one per format, in the order given.

    Raises
    ------
    InputError
        An unknown format; pgf without a TeX system on PATH.
    """
    formats = _check_formats(formats)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    lay_out_figure(figure, f"figure {stem}")
    paths = []
    # The metadata drop dates and the software version (PGF records neither, and takes no metadata).
    with matplotlib.rc_context(_save_rc(formats)):
        for fmt in formats:
            path = directory / f"{stem}.{fmt}"
            metadata = {} if _METADATA[fmt] is None else {"metadata": _METADATA[fmt]}
            with latex_escaped_pgf() if fmt == "pgf" else contextlib.nullcontext():
                figure.savefig(path, format=fmt, dpi=DPI, **metadata)
            paths.append(path)
            if fmt == "pgf":  # the images a PGF file names (<stem>-img<i>.png, written beside it) are its too
                paths += sorted(directory.glob(f"{glob.escape(stem)}-img*.png"))
    return paths


@literal_text
def figure_png(figure: Figure) -> bytes:
    """The PNG :func:`save_figure` writes of ``figure``, as bytes (a notebook shows it inline, nothing is written)."""
    lay_out_figure(figure)
    buffer = io.BytesIO()
    with matplotlib.rc_context(_save_rc(("png",))):
        figure.savefig(buffer, format="png", dpi=DPI, metadata=_METADATA["png"])
    return buffer.getvalue()


@contextlib.contextmanager
def latex_escaped_pgf() -> Iterator[None]:
    r"""Within this, matplotlib's PGF backend writes (and measures) every text through :func:`~showwork.escaping.latex_text`.

    The PGF backend passes a figure's texts to LaTeX as they are — it only replaces the minus
    sign (``backend_pgf._tex_escape``) — both into the ``.pgf`` file and into the LaTeX process
    that measures them while the file is written. A family named ``\immediate\write18{...}``
    would then run a command in any paper built with ``-shell-escape`` that inputs the figure,
    ``\input{/etc/hostname}`` would pull a local file into it, ``ELECTRA & T5`` would stop it
    with an error and ``\def\x{\x}\x`` would hang the report. The texts of showwork's figures
    are plain text (drawn as typed, :func:`literal_text`), so every one is escaped, in the one
    function through which the backend writes and measures them. The module attribute is
    matplotlib's (3.8 and later); without it, PGF is refused rather than written unescaped.
    """
    if not callable(getattr(backend_pgf, "_tex_escape", None)):
        raise RuntimeError("matplotlib's PGF backend has no _tex_escape: showwork cannot escape the texts of PGF figures"
                           f" with matplotlib {matplotlib.__version__}; leave pgf out of the formats.")
    original = backend_pgf._tex_escape
    backend_pgf._tex_escape = latex_text
    try:
        yield
    finally:
        backend_pgf._tex_escape = original


@literal_text
def report_figures(
    report: Report,
    directory: str | os.PathLike,
    *,
    formats: Sequence[str] = DEFAULT_FORMATS,
    axis: str = "trials",
    log_x: bool | None = None,
    title_note: str | None = None,
    style: FigureStyle = FigureStyle(),
) -> dict[str, list[Path]]:
    """Draw and save every figure of a report.

    Writes ``tuning_curves.*`` (x: ``axis``), ``tuning_curves_time.*`` (when ``axis`` is
    "trials" and every family has runtimes, and GPUs if the cost unit is GPU-hours), ``cdfs.*``
    and ``comparison.*`` (two or more families).

    With more than ``ALL_PAIRS_UP_TO`` families (``report.reference`` set) it writes instead
    ``summary.*`` (:func:`summary_figure`) and pages of ``PAGE_SIZE`` small multiples in rank
    order: ``tuning_curves_page<i>.*``, ``tuning_curves_time_page<i>.*`` (same condition as
    above) and ``cdfs_page<i>.*``, for the ``PAGED_UP_TO`` (300) best-ranked families.

    Then, when the trials recorded their hyperparameters, ``scores_by_parameter.*``
    (:func:`~showwork.report.figures.parameters.scores_by_parameter_figure`), or pages
    ``scores_by_parameter_page<i>.*`` of ``PARAMETERS_PER_PAGE`` parameters.

    With ``settings.extrapolate``, ``extrapolation_<i>.*`` before those, one per family (the i-th, from 1)
    whose extrapolation was not refused (:func:`~showwork.report.figures.extrapolation.extrapolation_figure`).

    Parameters
    ----------
    report : Report
    directory : path
        Created if missing.
    formats : sequence of {"png", "svg", "pdf", "pgf"}, default the first three
    axis : {"trials", "time"}, default "trials"
    log_x : bool, optional
        Logarithmic x axis on the tuning-curve and comparison figures; default (None) when the
        largest budget is above ``LOG_X_ABOVE`` (100).
    title_note : str, optional
        Appended to every figure's title, e.g. ``"not i.i.d.: tpe-study"`` for trials the bands'
        i.i.d. assumption does not cover (not with ``style.title`` False).
    style : FigureStyle, optional
        Title, size, fonts, style file, score label of every figure, and what the tuning-curve
        figures draw of each family (``curves``: the median and its band unless told).

    Returns
    -------
    dict
        Figure name -> the paths written, in the order above.

    Raises
    ------
    InputError
        Unknown format or axis; ``axis="time"`` and a family without runtimes; pgf without TeX.
    """
    formats = _check_formats(formats)
    out: dict[str, list[Path]] = {}
    with style.rc_context():  # the style file and font size, while every figure is drawn and saved
        for name, draw in report_drawings(report, axis=axis, log_x=log_x, title_note=title_note, style=style):
            figure = draw()
            if figure is None:
                continue
            out[name] = save_figure(figure, directory, name, formats)
            # No figure.clear(): it resets every axes (seconds for a page of panels); the figure is
            # freed when dropped (reference cycles at the next garbage collection).
    return out


def report_drawings(
    report: Report,
    *,
    axis: str = "trials",
    log_x: bool | None = None,
    title_note: str | None = None,
    style: FigureStyle = FigureStyle(),
) -> list[tuple[str, Callable[[], Figure | None]]]:
    """Every figure of :func:`report_figures`: its name, and what draws it (None where the report has no such figure).

    A drawn figure has its title note and ``style`` applied, ready for :func:`save_figure` (which
    lays it out: :func:`lay_out_figure`). Call each inside ``style.rc_context()``, as
    :func:`report_figures` does. The parameters are those of :func:`report_figures`.
    """

    def styled(draw: Callable[[], Figure | None]) -> Callable[[], Figure | None]:
        def drawn() -> Figure | None:
            figure = draw()
            if figure is not None:
                if title_note and style.title:
                    _add_title_note(figure, title_note)
                style.apply(figure, score_texts(report))
            return figure

        return drawn

    return [(name, styled(draw)) for name, draw in _drawings(report, axis, log_x, style.curves, style.figsize)]


def _drawings(report: Report, axis: str, asked_log_x: bool | None, curves: tuple[str, ...],
              size: tuple[float, float] | None) -> list[tuple[str, Callable[[], Figure | None]]]:
    """Every figure of the report: its name and what draws it, in the order of :func:`report_figures`.

    ``asked_log_x`` is ``--log-x``/``--linear-x`` (None: neither); an extrapolation's default goes by its own K.
    """
    log_x = use_log_x(report, asked_log_x)
    unit = report.settings.cost_unit
    timed = axis == "trials" and all(
        f.curve.mean_runtime_s is not None and (unit != "gpu-hours" or f.summary.gpus_per_trial > 0) for f in report.families
    )
    drawings: list[tuple[str, Any]]
    if report.reference is not None:  # many families: a summary and pages of small multiples
        pages = family_pages(report, size)
        drawings = [("summary", lambda: summary_figure(report, size=size))]
        y_range = curves_y_range(report.families)  # every page has the report's axes
        for kind, draw in (
            ("tuning_curves", lambda fs, p: tuning_curve_page(report, fs, p, len(pages), axis=axis, log_x=log_x, value_range=y_range,
                                                              curves=curves, size=size)),
            ("tuning_curves_time", lambda fs, p: tuning_curve_page(report, fs, p, len(pages), axis="time", log_x=log_x,
                                                                   value_range=y_range, curves=curves, size=size)),
            ("cdfs", lambda fs, p: cdf_page(report, fs, p, len(pages), size=size)),
        ):
            if kind == "tuning_curves_time" and not timed:
                continue
            drawings += [(f"{kind}_page{p}", lambda fs=fs, p=p, draw=draw: draw(fs, p)) for p, fs in enumerate(pages, start=1)]
    else:
        drawings = [("tuning_curves", lambda: tuning_curve_figure(report, axis=axis, log_x=log_x, curves=curves, size=size))]
        if timed:
            drawings.append(("tuning_curves_time", lambda: tuning_curve_figure(report, axis="time", log_x=log_x, curves=curves,
                                                                               size=size)))
        drawings.append(("cdfs", lambda: cdf_figure(report, size=size)))
        drawings.append(("comparison", lambda: comparison_figure(report, log_x=log_x, size=size)))
        drawings.append(("comparison_cost", lambda: cost_comparison_figure(report, log_x=log_x, size=size)))
    drawings += [(name, lambda f=f: extrapolation_figure(report, f, log_x=asked_log_x, size=size))
                 for name, f in extrapolation_figures(report)]
    parameters = parameter_pages(report, size)
    for p, axes in enumerate(parameters, start=1):
        name = SCORES_BY_PARAMETER if len(parameters) == 1 else f"{SCORES_BY_PARAMETER}_page{p}"
        drawings.append((name, lambda axes=axes, p=p: scores_by_parameter_figure(report, axes, p, len(parameters), size=size)))
    return drawings


def _add_title_note(figure: Figure, note: str) -> None:
    """Append ``note`` to the figure's title (:func:`~showwork.report.figures.style.title_text`)."""
    title = title_text(figure)
    if title is None:
        return
    if title.get_text() == figure.get_suptitle():
        title.set_text(f"{title.get_text()} ({note})")
    else:  # an axes' title: the note on a line of its own
        title.set_text(f"{title.get_text()}\n({note})")
        title.set_fontsize("medium")

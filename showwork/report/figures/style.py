"""How a report's figures look on a page: :class:`FigureStyle`, the options a paper needs, applied in one place.

``showwork report --no-title --figsize W,H --font-size PT --style FILE --score-label TEXT`` (and
``Search.report(figure_style=...)``) make one :class:`FigureStyle`; :func:`report_figures` draws
and saves every figure inside its :meth:`FigureStyle.rc_context` (the style file, then the font
size) and gives each figure :meth:`FigureStyle.apply` (title, size, score label) before it is
saved. Nothing else reads the options, so a new figure follows them without a line of its own.
The default style changes nothing: the files are those of a report without these options.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import math
import os
import shutil
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib
from matplotlib.figure import Figure
from matplotlib.text import Text

from showwork.errors import InputError

__all__ = ["NOT_STYLE", "PDF_FONT_TYPE", "TEX_SYSTEMS", "FigureStyle", "pgf_rc", "title_text"]

NOT_STYLE = frozenset({
    "backend", "backend_fallback", "interactive", "toolbar", "timezone", "webagg.port", "webagg.address",
    "webagg.port_retries", "webagg.open_in_browser", "figure.max_open_warning", "figure.raise_window",
    "savefig.directory", "tk.window_focus", "docstring.hardcopy", "date.epoch",
})
"""Settings a style file may hold that are not about style: ignored, as ``matplotlib.style.use`` ignores them
(its own list is private)."""

PDF_FONT_TYPE = 42
"""Fonts in PDF figures are embedded as TrueType (Type 42), not Type 3: LaTeX includes them as they
are, and the checks of IEEE PDF eXpress, ACM's and others' pass (they refuse Type 3 fonts)."""
TEX_SYSTEMS = ("xelatex", "lualatex", "pdflatex")
"""Matplotlib's PGF backend measures every text with LaTeX: the first of these found on PATH."""


def pgf_rc() -> dict[str, Any]:
    """The settings of a PGF file: the first TeX of :data:`TEX_SYSTEMS` on PATH, the document's own fonts.

    ``pgf.rcfonts`` off: the figure's texts take the font of the document that inputs it.

    Raises
    ------
    InputError
        No TeX system on PATH (before anything is drawn).
    """
    found = next((name for name in TEX_SYSTEMS if shutil.which(name)), None)
    if found is None:
        raise InputError(f"figure format pgf: matplotlib's PGF backend measures text with LaTeX, and none of"
                         f" {', '.join(TEX_SYSTEMS)} is on PATH; install one (TeX Live) or leave pgf out of the formats.")
    return {"pgf.texsystem": found, "pgf.rcfonts": False}


def title_text(figure: Figure) -> Text | None:
    """The figure's title: its suptitle, else the title of its first titled axes (None if it has none)."""
    if figure.get_suptitle():
        return figure._suptitle  # the Text itself: figure.suptitle() would reset its position and size
    for ax in figure.axes:
        if ax.get_title():
            return ax.title
    return None


def _positive_finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value > 0


@dataclass(frozen=True)
class FigureStyle:
    """How every figure of a report looks; the defaults draw the figures as they always were.

    Attributes
    ----------
    title : bool, default True
        False (``--no-title``): no figure title (a paper's caption says it), the suptitle or the
        main axes' title removed, with the "not i.i.d." note it would carry. Panel titles of pages
        (family or parameter names) stay.
    figsize : (float, float) or None
        Every figure's width and height in inches (``--figsize W,H``); None: each figure's own.
    font_size : float or None
        The base font size in points (``--font-size``, matplotlib's ``font.size``); the figures'
        relative sizes (small, x-small) follow it. None: matplotlib's (10 pt) or the style file's.
    style_file : path or None
        A matplotlib style file (``--style``, ``key: value`` lines as in ``matplotlibrc``), applied
        before ``font_size``: fonts, line widths, grid and face colours, ... The families' colours
        stay the report's colour-blind-safe palette. Keys that are not about style (``backend``, ...)
        are ignored, as ``matplotlib.style.use`` does.
    score_label : str or None
        The label of the score axis (``--score-label``) in place of the metric's name.

    Raises
    ------
    InputError
        A size that is not two positive finite numbers, a font size that is not a positive finite
        number, an empty score label, or a style file that is missing, unreadable or has a bad
        line (the file and its line named).
    """

    title: bool = True
    figsize: tuple[float, float] | None = None
    font_size: float | None = None
    style_file: str | os.PathLike | None = None
    score_label: str | None = None

    def __post_init__(self) -> None:
        if self.figsize is not None:
            size = tuple(self.figsize) if isinstance(self.figsize, (tuple, list)) else ()
            if len(size) != 2 or not all(_positive_finite(v) for v in size):
                raise InputError(f"--figsize must be two positive finite numbers of inches, W,H (got {self.figsize!r}).")
            object.__setattr__(self, "figsize", (float(size[0]), float(size[1])))
        if self.font_size is not None and not _positive_finite(self.font_size):
            raise InputError(f"--font-size must be a positive finite number of points (got {self.font_size!r}).")
        if self.score_label is not None and not str(self.score_label).strip():
            raise InputError("--score-label must not be empty.")
        self.style_params  # reads and checks the style file now, before anything is drawn

    @functools.cached_property
    def style_params(self) -> dict[str, Any]:
        """The style file's settings (empty without one), read and checked once; not a field."""
        if self.style_file is None:
            return {}
        path = Path(self.style_file)
        if not path.is_file():  # a folder or a FIFO exists but is no style file (and a FIFO would block the read)
            raise InputError(f"--style {path}: " + ("not a regular file." if path.exists() else "no such file."))
        caught = _Caught()
        logger = logging.getLogger("matplotlib")
        logger.addHandler(caught)
        try:
            path.read_bytes()
            with warnings.catch_warnings(record=True) as warned:
                warnings.simplefilter("always")
                params = matplotlib.rc_params_from_file(path, fail_on_error=True, use_default_template=False)
        except OSError as error:
            raise InputError(f"--style {path}: cannot read it ({error.strerror or error}).") from None
        except (ValueError, UnicodeDecodeError) as error:  # a value matplotlib refuses, or not text
            raise InputError(f"--style {path}: not a matplotlib style file ({_one_line(error)}).") from None
        finally:
            logger.removeHandler(caught)
        # An unknown key or a line without a colon: matplotlib only logs (or warns) and goes on.
        problems = caught.messages + [str(w.message) for w in warned]
        if problems:
            raise InputError(f"--style {path}: not a matplotlib style file ({_one_line(problems[0].strip().splitlines()[0])}).")
        return {key: value for key, value in params.items() if key not in NOT_STYLE}

    def rc(self) -> dict[str, Any]:
        """The matplotlib settings every figure is drawn and saved with: the style file's, then the font size."""
        out = dict(self.style_params)
        if self.font_size is not None:
            out["font.size"] = float(self.font_size)
        return out

    @contextlib.contextmanager
    def rc_context(self) -> Iterator[None]:
        """Draw and save within this: :meth:`rc` in force (nothing changes with the defaults)."""
        with matplotlib.rc_context(self.rc()):
            yield

    def apply(self, figure: Figure, score_texts: tuple[str, ...]) -> None:
        """Give a drawn figure the title, size and score label asked for (before it is saved).

        ``score_texts`` are the labels the figures give the score axis (the metric's name, with or
        without "lower is better"); every axis or figure label equal to one reads ``score_label``.
        """
        if not self.title and (title := title_text(figure)) is not None:
            title.set_text("")
        if self.figsize is not None:
            figure.set_size_inches(self.figsize)
        if self.score_label is not None:
            labels = [figure._supxlabel, figure._supylabel]
            for ax in figure.axes:
                labels += [ax.xaxis.label, ax.yaxis.label]
            for label in labels:
                if label is not None and label.get_text() in score_texts:
                    label.set_text(self.score_label)


class _Caught(logging.Handler):
    """The warnings matplotlib logs while it reads a style file."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _one_line(error: object) -> str:
    return " ".join(str(error).split())

"""How a report's figures look on a page: :class:`FigureStyle`, the options a paper needs, applied in one place.

``showwork report --no-title --figsize W,H --font-size PT --style FILE --score-label TEXT`` (and
``Search.report(figure_style=...)``) make one :class:`FigureStyle`; :func:`report_figures` draws
and saves every figure inside its :meth:`FigureStyle.rc_context` (the style file, then the font
size) and gives each figure :meth:`FigureStyle.apply` (title, size, score label) before it is
saved. Nothing else reads the options, so a new figure follows them without a line of its own.
The default style changes nothing: the files are those of a report without these options.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import os
import shutil
import stat
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import matplotlib
from matplotlib.figure import Figure
from matplotlib.text import Text

from showwork.constants import DEFAULT_FIGURE_CURVES, FIGURE_CURVES, FIGURE_SIZE_INCHES, FONT_SIZE_POINTS, MAX_STYLE_FILE_BYTES
from showwork.errors import InputError, did_you_mean, show_value

__all__ = [
    "FIGURE_SIZE_INCHES", "FONT_SIZE_POINTS", "LENGTH_POINTS", "LINE_WIDTH_POINTS", "MAX_CYCLE_ENTRIES", "MAX_FONT_NAMES",
    "MAX_STYLE_FILE_BYTES", "PDF_FONT_TYPE", "STYLE_KEYS", "TEX_SYSTEMS", "FigureStyle", "check_curves", "check_figsize", "check_font_size",
    "pgf_rc", "title_text",
]

# The limits of the figure options. FIGURE_SIZE_INCHES, FONT_SIZE_POINTS and MAX_STYLE_FILE_BYTES live in
# showwork.constants (the command line states them in its help without loading matplotlib); the others are here.
LINE_WIDTH_POINTS = (0.1, 72.0)
"""Line widths of a style file, in points: 0 (no line), or within these. A dashed or dotted line's dashes are
its width times the pattern: a width of 1e-9 pt made matplotlib draw billions of dashes (no end in 5 minutes)."""
LENGTH_POINTS = (0.0, 72.0)
"""Marker sizes, tick lengths and pads of a style file, in points (72 points are an inch)."""
MAX_FONT_NAMES = 16
"""The most font names a style file's ``font.family`` (or ``font.serif``, ...) lists: each missing one is looked up."""
MAX_CYCLE_ENTRIES = 64
"""The most entries of a style file's ``axes.prop_cycle``. matplotlib builds the cycle to check it: a product of a
few lists (``cycler(color=[...]) * cycler(linestyle=[...]) * ...``), 700 bytes, filled the memory and died after
211 s. A product (``*``) is refused, and the length counted on the text before matplotlib reads it."""
NAMED_LINE_STYLES = ("-", "--", "-.", ":", "solid", "dashed", "dashdot", "dotted", "None", "none", " ", "")
"""The line styles a style file may name. Dash patterns (``(0, (1, 2))``) are refused: a pattern of tiny dashes
takes matplotlib unbounded time to draw, or stops it."""
CYCLE_PROPERTIES = ("color", "linestyle", "linewidth", "marker", "markersize", "markeredgewidth", "markerfacecolor",
                    "markeredgecolor", "alpha")
"""The properties an ``axes.prop_cycle`` may cycle (aliases such as ``c`` and ``lw`` too), each checked as its rc key is."""

_FONTS, _FONT_SIZE, _CHOICE, _COLOUR, _SWITCH = "fonts", "font size", "choice", "colour", "switch"
_WIDTH, _LENGTH, _FRACTION, _LINE_STYLE, _CYCLE = "line width", "length", "fraction", "line style", "cycle"
STYLE_KEYS: Mapping[str, str] = MappingProxyType({
    # fonts: families (lists of at most MAX_FONT_NAMES names), style, weight; sizes in points or named (large, ...)
    **dict.fromkeys(("font.family", "font.serif", "font.sans-serif", "font.monospace", "font.cursive", "font.fantasy"), _FONTS),
    **dict.fromkeys(("font.style", "font.variant", "font.weight", "font.stretch", "mathtext.fontset", "axes.titleweight",
                     "axes.labelweight", "figure.titleweight", "figure.labelweight", "axes.titlelocation"), _CHOICE),
    **dict.fromkeys(("font.size", "axes.titlesize", "axes.labelsize", "xtick.labelsize", "ytick.labelsize", "legend.fontsize",
                     "legend.title_fontsize", "figure.titlesize", "figure.labelsize"), _FONT_SIZE),
    # line widths and marker sizes
    **dict.fromkeys(("lines.linewidth", "axes.linewidth", "grid.linewidth", "patch.linewidth", "hatch.linewidth",
                     "lines.markeredgewidth", "xtick.major.width", "xtick.minor.width", "ytick.major.width",
                     "ytick.minor.width"), _WIDTH),
    **dict.fromkeys(("lines.markersize", "errorbar.capsize", "xtick.major.size", "xtick.minor.size", "ytick.major.size",
                     "ytick.minor.size", "xtick.major.pad", "xtick.minor.pad", "ytick.major.pad", "ytick.minor.pad",
                     "axes.titlepad", "axes.labelpad"), _LENGTH),
    # colours of faces, edges, texts, ticks and the grid
    **dict.fromkeys(("axes.facecolor", "axes.edgecolor", "axes.labelcolor", "axes.titlecolor", "figure.facecolor",
                     "figure.edgecolor", "text.color", "xtick.color", "ytick.color", "xtick.labelcolor", "ytick.labelcolor",
                     "grid.color", "legend.facecolor", "legend.edgecolor", "legend.labelcolor", "lines.color",
                     "lines.markerfacecolor", "lines.markeredgecolor", "patch.facecolor", "patch.edgecolor", "hatch.color"),
                    _COLOUR),
    # the grid, line styles and ends, tick directions, the legend's frame
    **dict.fromkeys(("axes.grid.axis", "axes.grid.which", "axes.axisbelow", "xtick.direction", "ytick.direction",
                     "lines.solid_capstyle", "lines.dash_capstyle", "lines.solid_joinstyle", "lines.dash_joinstyle"), _CHOICE),
    **dict.fromkeys(("grid.linestyle", "lines.linestyle"), _LINE_STYLE),
    **dict.fromkeys(("grid.alpha", "legend.framealpha"), _FRACTION),
    # on or off: the grid, the axes' spines, ticks and tick labels on each side, the legend's frame
    **dict.fromkeys(("axes.grid", "axes.spines.left", "axes.spines.right", "axes.spines.top", "axes.spines.bottom",
                     "xtick.top", "xtick.bottom", "ytick.left", "ytick.right", "xtick.labeltop", "xtick.labelbottom",
                     "ytick.labelleft", "ytick.labelright", "xtick.minor.visible", "ytick.minor.visible", "legend.frameon",
                     "legend.fancybox", "legend.shadow", "patch.force_edgecolor"), _SWITCH),
    "axes.prop_cycle": _CYCLE,
})
"""The keys a style file (``--style``) may set, each with the kind of value it takes: the figures' appearance and
nothing else. Any other key is refused, with the line that sets it -- among them ``text.usetex`` and
``text.latex.preamble`` (LaTeX run on every text), ``pgf.*``, ``backend*``, ``savefig.*`` (where and how a figure is
saved), ``figure.figsize`` and ``figure.dpi`` (``--figsize`` and the report own them), ``interactive``, ``webagg.*``.
Numbers are bounded: font sizes by :data:`FONT_SIZE_POINTS`, line widths by :data:`LINE_WIDTH_POINTS`, other lengths by
:data:`LENGTH_POINTS`, transparencies 0 to 1; lists by :data:`MAX_FONT_NAMES` and :data:`MAX_CYCLE_ENTRIES`. docs/figures.md
lists the keys (a test keeps the two equal)."""

_OWN_CHOICES = {"font.style": ("normal", "italic", "oblique"), "font.variant": ("normal", "small-caps")}
"""Choices matplotlib takes as any text when it reads the file, and refuses only when it draws."""
_REFUSED_BECAUSE = (
    ("text.usetex", "it has LaTeX typeset every text"), ("text.latex.", "it has LaTeX typeset every text"),
    ("pgf.", "--formats pgf owns the PGF backend's settings"), ("backend", "the report chooses how it draws"),
    ("savefig.", "the report decides where and how its figures are saved"),
    ("figure.figsize", "--figsize sets the figures' size"), ("figure.dpi", "the report draws its figures at 150 dpi"),
    ("interactive", "a report draws no window"), ("webagg.", "a report draws no window"),
)

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


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _within(value: float, limits: tuple[float, float]) -> bool:
    return limits[0] <= value <= limits[1]  # False for NaN


def _range(limits: tuple[float, float], unit: str) -> str:
    return f"{limits[0]:g} to {limits[1]:g} {unit}"


def check_curves(curves: Any) -> tuple[str, ...]:
    """``curves`` as a tuple of :data:`~showwork.constants.FIGURE_CURVES`, each once, in their order.

    Raises
    ------
    InputError
        Not a non-empty sequence of those names (the one message of ``--curves`` and ``FigureStyle``).
    """
    given = (curves,) if isinstance(curves, str) else tuple(curves) if isinstance(curves, (tuple, list)) else ()
    names = tuple(str(c).strip().lower() for c in given)
    if not names or any(name not in FIGURE_CURVES for name in names):
        raise InputError(f"--curves must be a comma list of {', '.join(FIGURE_CURVES)} (got {', '.join(map(str, given)) or 'none'}).")
    return tuple(name for name in FIGURE_CURVES if name in names)


def check_figsize(value: Any) -> tuple[float, float]:
    """``--figsize``: two numbers of inches, each within :data:`FIGURE_SIZE_INCHES`; as floats.

    One check for the Python API (:class:`FigureStyle`) and the command line, which calls it on the numbers it parsed.

    Raises
    ------
    InputError
        Not two numbers, or one outside the limits (the option and the limits named).
    """
    size = tuple(value) if isinstance(value, (tuple, list)) else ()
    if len(size) != 2 or not all(_number(v) and _within(v, FIGURE_SIZE_INCHES) for v in size):
        shown = ",".join(f"{v:g}" if _number(v) else show_value(v) for v in size) if size else show_value(value)
        raise InputError(f"--figsize W,H must be two numbers, each from {_range(FIGURE_SIZE_INCHES, 'inches')} (got {shown}).")
    return float(size[0]), float(size[1])


def check_font_size(value: Any) -> float:
    """``--font-size``: a number of points within :data:`FONT_SIZE_POINTS`; as a float (the API and the command line).

    Raises
    ------
    InputError
        Not a number, or outside the limits (the option and the limits named).
    """
    if not (_number(value) and _within(value, FONT_SIZE_POINTS)):
        shown = f"{value:g}" if _number(value) else show_value(value)
        raise InputError(f"--font-size must be a number from {_range(FONT_SIZE_POINTS, 'points')} (got {shown}).")
    return float(value)


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
        Every figure's width and height in inches (``--figsize W,H``), each within
        :data:`FIGURE_SIZE_INCHES` (1 to 50); None: each figure's own.
    font_size : float or None
        The base font size in points (``--font-size``, matplotlib's ``font.size``), within
        :data:`FONT_SIZE_POINTS` (4 to 72); the figures' relative sizes (small, x-small) follow it.
        None: matplotlib's (10 pt) or the style file's.
    style_file : path or None
        A matplotlib style file (``--style``, ``key: value`` lines as in ``matplotlibrc``) of at
        most :data:`MAX_STYLE_FILE_BYTES` (64 KiB), applied before ``font_size``: fonts, line
        widths, grid and face colours, ... only the keys of :data:`STYLE_KEYS`, with bounded values.
        The families' colours stay the report's colour-blind-safe palette.
    score_label : str or None
        The label of the score axis (``--score-label``) in place of the metric's name.
    curves : tuple of {"median", "v", "u", "mean"}, default ("median",)
        What the tuning-curve figures draw of each family (``--curves``): the median (or the
        report's quantile) curve and its band, as Lourie et al. 2024's figures do; V, U and the
        mean curve's band on request (:data:`~showwork.constants.FIGURE_CURVES`).

    Raises
    ------
    InputError
        A size or font size that is not a number within its limits, an empty score label, or a
        style file that is missing, not a regular file, over 64 KiB, unreadable, or has a bad line:
        no colon, a key not in :data:`STYLE_KEYS`, a value matplotlib refuses or out of its limits
        (the file, the line and the key named).
    """

    title: bool = True
    figsize: tuple[float, float] | None = None
    font_size: float | None = None
    style_file: str | os.PathLike | None = None
    score_label: str | None = None
    curves: tuple[str, ...] = DEFAULT_FIGURE_CURVES

    def __post_init__(self) -> None:
        object.__setattr__(self, "curves", check_curves(self.curves))
        if self.figsize is not None:
            object.__setattr__(self, "figsize", check_figsize(self.figsize))
        if self.font_size is not None:
            check_font_size(self.font_size)
        if self.score_label is not None and not str(self.score_label).strip():
            raise InputError("--score-label must not be empty.")
        self.style_params  # reads and checks the style file now, before anything is drawn

    @functools.cached_property
    def style_params(self) -> dict[str, Any]:
        """The style file's settings (empty without one), read and checked once; not a field."""
        if self.style_file is None:
            return {}
        path = Path(self.style_file)
        return _style_settings(path, _read_style_file(path))

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


def _read_style_file(path: Path) -> str:
    """The text of a style file, of at most :data:`MAX_STYLE_FILE_BYTES`: no more than one byte past it is read."""
    if not path.is_file():  # a folder or a FIFO exists but is no style file (and a FIFO would block the read)
        raise InputError(f"--style {path}: " + ("not a regular file." if path.exists() else "no such file."))
    try:
        # O_NONBLOCK: a FIFO swapped in since the check above neither blocks the open nor passes the fstat
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0))
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise InputError(f"--style {path}: not a regular file.")
            chunks, left = [], MAX_STYLE_FILE_BYTES + 1
            while left > 0 and (chunk := os.read(fd, left)):
                chunks.append(chunk)
                left -= len(chunk)
        finally:
            os.close(fd)
    except OSError as error:
        raise InputError(f"--style {path}: cannot read it ({error.strerror or error}).") from None
    if left <= 0:
        raise InputError(f"--style {path}: is over {MAX_STYLE_FILE_BYTES // 1024} KiB, the most a style file may be"
                         " (a few dozen key: value lines).")
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"--style {path}: not a matplotlib style file (not UTF-8 text).") from None


def _style_settings(path: Path, text: str) -> dict[str, Any]:
    """The settings of a style file's ``text`` (matplotlibrc's ``key: value`` lines), each checked (:data:`STYLE_KEYS`).

    The lines are read here, as matplotlib reads them (``#`` comments outside double quotes, the value's double
    quotes stripped), not by ``matplotlib.rc_params_from_file``: each key is refused or checked before matplotlib
    sees its value, and each value is checked after matplotlib reads it.
    """
    out: dict[str, Any] = {}
    first_line: dict[str, int] = {}
    params = matplotlib.RcParams()  # validates each value it is given, as matplotlib reads a style file
    for number, line in enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), start=1):
        where = f"--style {path}, line {number}"
        content = _without_comment(line, where)
        if not content:
            continue
        key, colon, value = content.partition(":")
        key, value = key.strip(), value.strip()
        if not colon:
            raise InputError(f"{where}: not a matplotlib style file (no colon: a line is key: value; got {show_value(content)}).")
        if value.startswith('"') and value.endswith('"'):
            value = value[1:-1]
        if key in first_line:
            raise InputError(f"{where}: sets {key} again (first on line {first_line[key]}).")
        first_line[key] = number
        out[key] = _style_value(params, key, value, f"{where}: {key}")
    return out


def _without_comment(line: str, where: str) -> str:
    """``line`` without its comment (from the first ``#`` outside double quotes), stripped; in one pass."""
    quoted = False
    for i, char in enumerate(line):
        if char == '"':
            quoted = not quoted
        elif char == "#" and not quoted:
            return line[:i].strip()
    if quoted:
        raise InputError(f"{where}: not a matplotlib style file (a double quote is not closed).")
    return line.strip()


def _style_value(params: matplotlib.RcParams, key: str, value: str, where: str) -> Any:
    """The value of ``key`` read by matplotlib, after the checks before (the key, the text) and after (the limits)."""
    kind = STYLE_KEYS.get(key)
    if kind is None:
        because = next((f" ({why})" for prefix, why in _REFUSED_BECAUSE if key.startswith(prefix)), "")
        hint = "" if because else did_you_mean(key, tuple(STYLE_KEYS))  # a typo, not a key refused on purpose
        raise InputError(f"{where}: refused{because}; a style file sets only the figures' appearance, the keys of"
                         " docs/figures.md (fonts, font sizes, line widths, marker sizes, colours, grid, spines, ticks,"
                         f" legend frame, hatch, axes.prop_cycle){hint or '.'}")
    if kind == _LINE_STYLE and value not in NAMED_LINE_STYLES:
        raise InputError(f"{where} {show_value(value)}: not a named line style ({', '.join(NAMED_LINE_STYLES[:8])} or none);"
                         " dash patterns are refused (tiny dashes take matplotlib unbounded time to draw).")
    if kind == _CYCLE:
        _check_cycle_text(value, where)  # before matplotlib builds the cycle
    if key in _OWN_CHOICES and value not in _OWN_CHOICES[key]:
        raise InputError(f"{where} {show_value(value)}: must be one of {', '.join(_OWN_CHOICES[key])}.")
    reason = None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a deprecated or doubtful value: refused, not passed on
            params[key] = value
    except (ValueError, TypeError, Warning) as error:  # a value matplotlib refuses
        reason = _one_line(error)
    except (RecursionError, MemoryError):  # Python's parser on a text nested too deep (a colour is tried as a tuple)
        reason = "nested too deep to read"
    if reason is not None:
        raise InputError(f"{where}: not a value matplotlib takes ({reason[:200]}{'...' if len(reason) > 200 else ''}).")
    checked = params[key]
    _check_limits(kind, checked, where)
    return checked


def _check_limits(kind: str, value: Any, where: str) -> None:
    """Refuse a value of ``kind``, as matplotlib read it, outside its limits (:data:`STYLE_KEYS`)."""
    if kind == _FONT_SIZE and _number(value) and not _within(value, FONT_SIZE_POINTS):  # not a named size (large, ...)
        raise InputError(f"{where} {value:g}: must be {_range(FONT_SIZE_POINTS, 'points')} (or a named size).")
    if kind == _WIDTH and value != 0 and not _within(value, LINE_WIDTH_POINTS):
        raise InputError(f"{where} {value:g}: must be 0 (no line) or {_range(LINE_WIDTH_POINTS, 'points')}.")
    if kind == _LENGTH and not _within(value, LENGTH_POINTS):
        raise InputError(f"{where} {value:g}: must be {_range(LENGTH_POINTS, 'points')}.")
    if kind == _FRACTION and value is not None and not _within(value, (0.0, 1.0)):
        raise InputError(f"{where} {value:g}: must be 0 to 1.")
    if kind == _FONTS and len(value) > MAX_FONT_NAMES:
        raise InputError(f"{where}: lists {len(value)} fonts; at most {MAX_FONT_NAMES}.")
    if kind == _CYCLE:
        _check_cycle(value, where)


_CYCLE_KINDS = {"linewidth": _WIDTH, "markeredgewidth": _WIDTH, "markersize": _LENGTH, "alpha": _FRACTION}


def _check_cycle(cycle: Any, where: str) -> None:
    """An ``axes.prop_cycle`` as matplotlib read it (a ``cycler.Cycler``): :data:`CYCLE_PROPERTIES` only, each value
    within its limits."""
    if len(cycle) > MAX_CYCLE_ENTRIES:  # counted on the text already; a check that costs nothing
        raise InputError(f"{where}: cycles {len(cycle)} entries; at most {MAX_CYCLE_ENTRIES}.")
    for prop, values in cycle.by_key().items():
        if prop not in CYCLE_PROPERTIES:
            raise InputError(f"{where}: cycles {prop}; a cycle may set only {', '.join(CYCLE_PROPERTIES)}.")
        for value in values:
            if prop == "linestyle" and (not isinstance(value, str) or value not in NAMED_LINE_STYLES):
                raise InputError(f"{where}: linestyle {show_value(value)}: not a named line style; dash patterns are refused.")
            if prop == "marker" and isinstance(value, str) and value.startswith("$"):
                raise InputError(f"{where}: marker {show_value(value)}: text markers ($...$) are refused.")
            if prop in _CYCLE_KINDS:
                _check_limits(_CYCLE_KINDS[prop], value, f"{where}: {prop}")


def _check_cycle_text(text: str, where: str) -> None:
    """Refuse an ``axes.prop_cycle`` that is not a sum, concatenation or slice of ``cycler(...)`` calls of literal
    values, or whose length could pass :data:`MAX_CYCLE_ENTRIES`, on its text (never built: a product of cycles is
    the product of their lengths)."""
    try:
        entries = _cycle_entries(ast.parse(text, mode="eval").body, where)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # not Python; nested past the stack
        raise InputError(f"{where}: not a cycle matplotlib takes (cycler(color=[...]), sums and concat of those).") from None
    if entries > MAX_CYCLE_ENTRIES:
        raise InputError(f"{where}: cycles {entries} entries; at most {MAX_CYCLE_ENTRIES}.")


def _cycle_entries(node: ast.expr, where: str) -> int:
    """The most entries the cycle expression ``node`` can have (InputError for what matplotlib would multiply)."""
    if isinstance(node, ast.BinOp):
        if isinstance(node.op, ast.Mult):
            raise InputError(f"{where}: a product of cycles ('*' multiplies their lengths) is refused; list the entries,"
                             f" at most {MAX_CYCLE_ENTRIES}.")
        if not isinstance(node.op, ast.Add):
            raise ValueError("not a cycle")
        return max(_cycle_entries(node.left, where), _cycle_entries(node.right, where))  # a sum pairs equal lengths
    if isinstance(node, ast.Subscript):  # a slice of a cycle: at most its entries
        return _cycle_entries(node.value, where)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "concat":
        return sum(_cycle_entries(arg, where) for arg in node.args)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "cycler":
        if node.keywords:  # cycler(color=[...], lw=[...])
            return max(_values_entries(keyword.value) for keyword in node.keywords)
        if len(node.args) == 2:  # cycler("color", [...])
            return _values_entries(node.args[1])
        if len(node.args) == 1:  # cycler(cycler(...))
            return _cycle_entries(node.args[0], where)
    raise ValueError("not a cycle")


def _values_entries(node: ast.expr) -> int:
    """How many values a ``cycler`` call's literal list, tuple or text (each character a value) holds."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return len(node.elts)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return len(node.value)
    raise ValueError("not a list of values")


def _one_line(error: object) -> str:
    return " ".join(str(error).split())

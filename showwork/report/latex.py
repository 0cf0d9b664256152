r"""The report's LaTeX: one snippet per table, and the preamble they and the PGF figures need.

``latex/<table>.tex`` holds a table; ``latex/preamble.tex`` the lines a document's preamble needs to
``\input`` every table and every ``figures/*.pgf`` of the report, with pdfLaTeX, LuaLaTeX or
XeLaTeX (:data:`PREAMBLE`, also printed in ``docs/figures.md``). Every string is escaped by
:func:`~showwork.escaping.latex_text`, the one owner of LaTeX escaping.

Tables fit the line's width, whatever it is (an article's ``\textwidth``, a two-column paper's
``\columnwidth``): a table whose cells are short keeps its columns at their natural width (``l``
and ``r``) when that is at most :data:`NATURAL_WIDTH_PT` (it then fits a two-column paper's
column); a wider one gets paragraph columns whose widths are shares of ``\linewidth``, each in
proportion to what its cells need, text broken inside long names and ranges where it must. A
table at its natural width of at most :data:`FLOAT_ROWS` rows is a ``table`` float; any other (a
checklist, a long ranking, a table of paragraph columns) is a ``longtable`` that breaks across
pages, its header repeated on each.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from showwork.escaping import latex_text, visible_text
from showwork.report.tables import Table

__all__ = ["FLOAT_ROWS", "NATURAL_WIDTH_PT", "PREAMBLE", "PREAMBLE_KEY", "TEXT_WIDTH_PT", "latex_snippets", "latex_table"]

PREAMBLE_KEY = "preamble"
"""``latex/preamble.tex``: the snippet that is the preamble, not a table (no table has this key)."""

PREAMBLE = r"""% The preamble of a showwork report's LaTeX: \input{latex/preamble.tex} in your document's
% preamble (or copy these lines), then \input{latex/<table>.tex} for a table and
% \showworkfigure{figures/<name>.pgf} (or \input{figures/<name>.pgf}) for a figure.
% Works with pdfLaTeX, LuaLaTeX and XeLaTeX; every package is in TeX Live's basic and recommended sets.
\usepackage{booktabs}   % the tables' rules
\usepackage{longtable}  % tables that break across pages
\usepackage{array}      % column types >{...}p{...}
\usepackage{graphicx}   % \resizebox, for \showworkfigure
\usepackage{pgf}        % figures written with --formats pgf
% matplotlib's PGF files may mark numbers with \mathdefault.
\providecommand\mathdefault[1]{#1}
% \showworkfigure{FILE}: a PGF figure as it was drawn, scaled down to the line's width if it is wider
% (a figure made with --figsize at your column's width is input at its own size).
\newsavebox\showworkfigurebox
\providecommand\showworkfigure[1]{%
  \sbox\showworkfigurebox{\input{#1}}%
  \ifdim\wd\showworkfigurebox>\linewidth
    \resizebox{\linewidth}{!}{\usebox\showworkfigurebox}%
  \else
    \usebox\showworkfigurebox
  \fi}
"""
"""The preamble every table and PGF figure of a report compiles with (``latex/preamble.tex``)."""

NATURAL_WIDTH_PT = 220.0
"""A table whose estimated natural width is at most this (points) keeps its columns at their natural width: it
fits a two-column paper's column (about 240 pt) and an article's text (345 pt)."""
TEXT_WIDTH_PT = 345.0
"""The line a wide table is fitted to: an article's ``\\textwidth`` at 10 pt (the widest a table's smallest
pieces may add up to; its columns then take shares of whatever ``\\linewidth`` is)."""
FLOAT_ROWS = 12
"""A table at its natural width of at most this many rows is a ``table`` float; any other is a ``longtable``
(its wrapped cells may run taller than a page)."""
_SIZES = ((r"\small", 9.0, 6.0), (r"\footnotesize", 8.0, 4.0), (r"\scriptsize", 7.0, 2.5))
"""The font sizes a table is set in (command, points, ``\\tabcolsep`` in points): the first its pieces fit."""
_BREAK_AFTER = re.compile(r"(?<=[-_/,:;=+|)\]}–])(?=\S)|(?<=\.)(?=[A-Za-z])")
"""Where a long token may break: after punctuation that joins its parts (a name's - _ / or a range's –; a dot
before a letter, not inside a number)."""
_RUN = 20
"""A run without a break longer than this may break every :data:`_PIECE` characters (a hash, 40 x's); a shorter
word is left whole (TeX hyphenates words in a paragraph column)."""
_PIECE = 10
_HEADER_PIECE = 7
"""A header's words hyphenate (``\\hspace{0pt}`` lets TeX break a cell's first word): no column need be wider
than this many characters for its header."""


def _width_pt(text: str, points: float) -> float:
    """An estimate, on the wide side, of ``text``'s width in Computer Modern at ``points``."""
    em = points / 10.0
    total = 0.0
    for char in text:
        if char in "MWmw@%&—":
            total += 9.6
        elif char.isupper():
            total += 7.4
        elif char in ".,;:'!|il()[]":
            total += 3.0
        elif char == " ":
            total += 3.4
        else:
            total += 5.3
    return total * em


def _pieces(token: str) -> list[str]:
    """``token`` cut where it may break: after joining punctuation, and inside long runs of letters and digits."""
    out: list[str] = []
    for part in _BREAK_AFTER.split(token):
        while len(part) > _RUN and part[:_PIECE].isascii() and part[_PIECE:_PIECE + 1].isascii():
            out.append(part[:_PIECE])
            part = part[_PIECE:]
        out.append(part)
    return [p for p in out if p]


def _least_pt(text: str, points: float, header: bool) -> float:
    """The width of ``text``'s widest piece that cannot break (a header's words hyphenate, down to a few letters)."""
    pieces = [p for token in visible_text(text).split() for p in _pieces(token)]
    if header:  # a header's words hyphenate (TeX's patterns know words of letters only)
        pieces = [p[:_HEADER_PIECE] if p.isalpha() else p for p in pieces]
    return max((_width_pt(p, points) for p in pieces), default=0.0)


def _breakable(text: str) -> str:
    r"""``text`` escaped for LaTeX, with ``\allowbreak`` where a long token may break (a paragraph column's cell)."""
    words = []
    for token in visible_text(text).split(" "):
        words.append(r"\allowbreak{}".join(latex_text(p) for p in _pieces(token)))
    return " ".join(words)


def _column_specs(table: Table) -> tuple[list[str], bool, str, float]:
    r"""Each column's LaTeX type, whether the table is at its natural width, its font size command and ``\tabcolsep``.

    Natural width (``l``, ``r``) where the estimate allows (:data:`NATURAL_WIDTH_PT`); else the first
    of :data:`_SIZES` at which every column's least width (its widest unbreakable piece) fits
    :data:`TEXT_WIDTH_PT`: each column gets that least width, and the rest of the line in proportion
    to what its cells need beyond it.
    """
    align = table.numeric or (False,) * len(table.columns)
    n = len(table.columns)
    cells = [[row[i] for row in table.rows] for i in range(n)]
    command, points, sep = _SIZES[0]
    natural = sum(max(_width_pt(visible_text(x), points) for x in [c, *column]) for c, column in zip(table.columns, cells))
    if natural + 2 * sep * n <= NATURAL_WIDTH_PT:
        return ["r" if right else "l" for right in align], True, command, sep
    for command, points, sep in _SIZES:
        least = [round(max([_least_pt(c, points, True)] + [_least_pt(x, points, False) for x in column]) + 1.0, 1)
                 for c, column in zip(table.columns, cells)]
        if sum(least) + 2 * sep * n <= TEXT_WIDTH_PT:
            break
    need = [max(_width_pt(visible_text(x)[:48], points) for x in column) if column else 0.0 for column in cells]
    extra = [max(want - low, 0.0) for want, low in zip(need, least)]
    # Rounded down: shares that add up to a hair over 1 make the table a hair too wide.
    shares = [math.floor(1000 * (e / sum(extra) if sum(extra) > 0 else 1.0 / n)) / 1000 for e in extra]
    rest = rf"\dimexpr\linewidth-{2 * n}\tabcolsep-{sum(least):.1f}pt\relax"
    specs = []
    for right, low, share in zip(align, least, shares):
        ragged = r"\raggedleft" if right else r"\raggedright"
        specs.append(rf">{{{ragged}\arraybackslash\hspace{{0pt}}}}p{{\dimexpr{low:.1f}pt+{share:.3f}{rest}\relax}}")
    return specs, False, command, sep


def latex_table(table: Table, label_prefix: str = "tab:showwork") -> str:
    r"""A table as LaTeX: a ``table`` float or a ``longtable``, booktabs rules, fitted to ``\linewidth``.

    Needs the packages of :data:`PREAMBLE` (booktabs, longtable, array). The caption is the
    table's title and notes; the label ``<label_prefix>:<key>``.
    """
    specs, natural, size, sep = _column_specs(table)
    cell = latex_text if natural else _breakable
    # A float cannot break across pages: only a table at its natural width (short lines) of a few rows is one.
    long = not natural or len(table.rows) > FLOAT_ROWS
    header = " & ".join(cell(c) for c in table.columns) + r" \\"
    rows = [" & ".join(cell(x) for x in row) + r" \\" for row in table.rows]
    caption = latex_text(table.title) + ("" if not table.notes else ". " + " ".join(latex_text(n) for n in table.notes))
    label = rf"\label{{{label_prefix}:{table.key}}}"
    spec = "".join(specs)
    lines = [f"% {latex_text(table.title)} -- generated by showwork report"]  # a title's line break would end the comment
    if long:
        columns = len(table.columns)
        lines += [
            rf"\begingroup{size}\setlength{{\tabcolsep}}{{{sep:g}pt}}",
            rf"\begin{{longtable}}{{{spec}}}",
            rf"\caption{{{caption}}}{label}\\",
            r"\toprule", header, r"\midrule", r"\endfirsthead",
            rf"\multicolumn{{{columns}}}{{@{{}}l}}{{\footnotesize\itshape (continued)}}\\",
            r"\toprule", header, r"\midrule", r"\endhead",
            r"\bottomrule", r"\endlastfoot",
            *rows,
            r"\end{longtable}",
            r"\endgroup",
        ]
    else:
        lines += [
            r"\begin{table}[htbp]", r"\centering", size, rf"\setlength{{\tabcolsep}}{{{sep:g}pt}}",
            rf"\begin{{tabular}}{{{spec}}}",
            r"\toprule", header, r"\midrule", *rows, r"\bottomrule",
            r"\end{tabular}",
            rf"\caption{{{caption}}}{label}",
            r"\end{table}",
        ]
    return "\n".join(lines) + "\n"


def latex_snippets(tables: Sequence[Table]) -> dict[str, str]:
    """One LaTeX snippet per table, keyed by the table's key, and the preamble (:data:`PREAMBLE_KEY`)."""
    snippets = {t.key: latex_table(t) for t in tables}
    if PREAMBLE_KEY in snippets:
        raise ValueError(f"a table may not be keyed {PREAMBLE_KEY!r}: latex/{PREAMBLE_KEY}.tex is the preamble.")
    return {**snippets, PREAMBLE_KEY: PREAMBLE}

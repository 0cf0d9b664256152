"""Every string that leaves showwork, escaped for the document it enters: one owner per target.

A search's strings are the user's: a categorical value, a family name, a parameter name, an error
message quoting a file name. None of them may act on the document it is written into (an ESC that
clears the terminal or sets its window title, a "|" that splits a Markdown table's cell, a "<" that
opens an HTML tag, a "%" that comments out the rest of a LaTeX line) or hide what it says from its
reader (a bidi override that shows "gpj.exe" as "exe.jpg"). Each target has one function here, and
whatever writes into that target calls it once, on the plain Unicode text, as the last step:

- :func:`visible_text`: the shared core, which every other target starts from (and figures use for
  their texts).
- :func:`terminal_text`: what a command prints, plainly or through rich.
- :func:`markdown_text`: ``report.md``.
- :func:`html_text`: ``report.html``.
- :func:`latex_text`: the report's LaTeX (tables, captions, figure labels).

And one for the terminal's character set: :func:`ascii_fallback` and :func:`fitted_to_encoding`
(below, "What a stream cannot encode").

What becomes a visible escape
-----------------------------
Every character of Unicode's general category Cc (the C0 controls U+0000–U+001F, DEL U+007F, the C1
controls U+0080–U+009F), the bidi controls (Unicode's Bidi_Control property: U+061C, U+200E, U+200F,
U+202A–U+202E, U+2066–U+2069; they reorder what a reader sees without being seen) and the
surrogates U+D800–U+DFFF (a Python string can hold one alone; no UTF-8 document can). Each is
written as a Python string literal spells it, which a user can paste back into a search space:
``\\xHH`` below U+0100 (``\\x1b``, ``\\x0d`` for a carriage return), ``\\uHHHH`` above (``\\u202e``).
Other invisible characters (zero-width joiners, soft hyphens) are left alone: they hide nothing,
and emoji sequences need the joiner.

A line break (``"\\n"``) is kept where the target has line breaks of its own (a message on the
terminal, HTML, a figure's text), and is a visible ``\\x0a`` where a line is the unit a reader
trusts (a cell of a terminal table, where a line break could forge a row); it becomes a space in
Markdown (a table row is one line) and LaTeX (a blank line would end the paragraph of a cell).

A backslash already in the text is left as it is: the escapes are for a reader, not a round trip,
and doubling every backslash would garble the Windows paths and LaTeX-looking parameter names that
a search prints. A user's literal ``\\x1b`` (four characters) therefore reads the same as an
escaped ESC; both are harmless, which is what matters.
"""

from __future__ import annotations

import codecs
import contextlib
import html
import re
import unicodedata
from collections.abc import Iterator
from typing import IO

__all__ = ["FALLBACK_ERRORS", "ascii_fallback", "fitted_to_encoding", "html_text", "latex_text", "markdown_text",
           "terminal_text", "visible_text"]

# Category Cc except "\n" (each caller decides on it), the Bidi_Control characters, the surrogates.
_INVISIBLE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escape(char: str) -> str:
    """One character as a Python string literal spells it: ``\\x1b``, ``\\u202e``, ``\\U0001f600``."""
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def visible_text(text: str, *, one_line: bool = False) -> str:
    r"""Control characters, bidi controls and lone surrogates as visible escapes; line breaks kept unless
    ``one_line`` (then ``\x0a``: a table's cell, an SVG id, which XML would read with a space there).

    The shared core of every target (the module's docstring says what is escaped, and why a
    backslash already in the text is left alone).

    Parameters
    ----------
    text : str
        Any text, e.g. a categorical value of a search.
    one_line : bool, default False
        Show a line break as ``\x0a`` too.

    Returns
    -------
    str
        The text with each such character replaced by ``\xHH`` (below U+0100) or ``\uHHHH``; it
        holds no character of those kinds, and is valid UTF-8 once encoded.

    Examples
    --------
    >>> visible_text("\x1b]0;title\x07done")
    '\\x1b]0;title\\x07done'
    >>> visible_text("abc\u202edef\nnext line")
    'abc\\u202edef\nnext line'
    >>> visible_text(r"C:\data\x1b")
    'C:\\data\\x1b'
    """
    shown = _INVISIBLE.sub(lambda match: _escape(match.group(0)), text)
    return shown.replace("\n", "\\x0a") if one_line else shown


def terminal_text(text: str, *, one_line: bool = False) -> str:
    r"""Text for the terminal: no control sequence can act, nothing reorders what the reader sees.

    Parameters
    ----------
    text : str
    one_line : bool, default False
        Show a line break as ``\x0a`` too: for a cell of a table, where a line break in a value
        would start a line that reads as another row.

    Returns
    -------
    str
        :func:`visible_text` of the text (line breaks as ``one_line`` says). Plain text: a
        "[red]" of the user's stays as it is.

    Notes
    -----
    No rich markup is escaped here: the commands print with ``print``, and where a text goes
    through rich (the live progress table) it goes in as a :class:`rich.text.Text`, which rich
    does not read as markup. Escaping markup here as well would show a "[" of a plain ``print``
    with a stray backslash; one owner, rich's ``Text``, decides for rich.

    Examples
    --------
    >>> terminal_text("\x1b[2Jcleared\r")
    '\\x1b[2Jcleared\\x0d'
    >>> terminal_text("relu\n99  finished", one_line=True)
    'relu\\x0a99  finished'
    >>> terminal_text("[bold]not markup[/bold]")
    '[bold]not markup[/bold]'
    """
    return visible_text(text, one_line=one_line)


# CommonMark lets any ASCII punctuation be backslash-escaped; these are the ones that act in a
# sentence or a table cell: the backslash, code, emphasis, GitHub's strikethrough and $math$,
# links and images, raw HTML and character references (an "&#x202e;" would be a bidi override
# once rendered), pipes, headings.
_MD_SPECIAL = re.compile(r"([\\`*_~$\[\]{}<>&|#])")
# At the start of a line, these open a block: a list item (a marker "-", "+", "1." or "1)" followed by a
# space or nothing), a thematic break or a setext underline (a line of "-" or "="). A number ("0.5",
# "-1", "2024-01-01") opens none and is left as it is.
_MD_BLOCK_START = re.compile(r"^(?:([-+])(?= |$)|(\d{1,9})([.)])(?= |$)|([-=])(?=[-= ]*$))")


def markdown_text(text: str) -> str:
    r"""Text for a Markdown sentence or table cell: specials backslash-escaped, controls visible, one line.

    Parameters
    ----------
    text : str

    Returns
    -------
    str
        :func:`visible_text` of the text, then Markdown's specials escaped with a backslash (so the
        backslash of a visible escape shows too), line breaks as spaces (a table row is one line),
        leading spaces dropped (Markdown drops them too, and four would start a code block), and a
        list marker at the start escaped (so a "1. " of the text stays text in a list item).

    Examples
    --------
    >>> markdown_text("a|b *c* [d]")
    'a\\|b \\*c\\* \\[d\\]'
    >>> markdown_text("bell\x07 & $x$")
    'bell\\\\x07 \\& \\$x\\$'
    >>> markdown_text("1. first")
    '1\\. first'
    """
    line = _MD_SPECIAL.sub(r"\\\1", visible_text(text)).replace("\n", " ").lstrip(" ")
    return _MD_BLOCK_START.sub(lambda m: f"{m.group(2)}\\{m.group(3)}" if m.group(2) else "\\" + m.group(0), line)


def html_text(text: str) -> str:
    r"""Text for HTML content or a quoted attribute value: controls visible, ``& < > " '`` as references.

    Parameters
    ----------
    text : str

    Returns
    -------
    str
        :func:`html.escape` (quotes included) of :func:`visible_text` of the text: HTML forbids
        control characters in text, and line breaks are whitespace there.

    Examples
    --------
    >>> html_text('<b class="x">\x1b[2J</b>')
    '&lt;b class=&quot;x&quot;&gt;\\x1b[2J&lt;/b&gt;'
    """
    return html.escape(visible_text(text), quote=True)


_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    # OT1, pdfLaTeX's default font encoding, typesets these as "¡", "¿", "—" and "”"; the quote
    # is also babel's shorthand (ngerman) and \textquotedbl is not defined in OT1.
    "<": r"\textless{}",
    ">": r"\textgreater{}",
    "|": r"\textbar{}",
    '"': r"{\ttfamily\char34}",
    # After a row's "\\" LaTeX looks for "*" and "[": a cell beginning "[0.1, 1]" would be read as
    # the row's spacing (an error); braced, they are text everywhere.
    "[": "{[}",
    "]": "{]}",
    "*": "{*}",
    # Unicode the report's own text uses, which pdfLaTeX's default fonts do not hold.
    "–": "--",
    "—": "---",
    "−": "$-$",
    "≈": r"$\approx$",
    "≥": r"$\geq$",
    "≤": r"$\leq$",
    "±": r"$\pm$",
    "×": r"$\times$",
    "✕": r"$\times$",
    "∞": r"$\infty$",
    "⁹": r"\textsuperscript{9}",
    "₂": r"\textsubscript{2}",
    "‘": "`",
    "’": "'",
    "“": "``",
    "”": "''",
    "…": r"\ldots{}",
}

# The non-ASCII characters pdfLaTeX typesets in a document with no packages (OT1 fonts, UTF-8
# input), probed one by one with TeX Live 2022: Latin-1 and Latin Extended-A but the letters OT1
# lacks (ogonek, eth, thorn, guillemets, ...), and a few symbols. LuaLaTeX's default font holds them
# all. Any other character (CJK, emoji, Greek, combining marks left after NFC) is written as a
# visible escape instead, for both engines: pdfLaTeX stops at it ("not set up for use with LaTeX"),
# and LuaLaTeX's Latin Modern has no glyph for it either, so it would vanish from the page.
_PDFLATEX_LACKS = frozenset("«»ÐÞðþĄąĐđĘęĦħĮįĸĿŀŉŊŋŦŧŲųſ")
_PDFLATEX_SYMBOLS = frozenset("†‡•‰€™←↑→↓")


def _latex_char(char: str) -> str:
    if char in _LATEX_SPECIAL:
        return _LATEX_SPECIAL[char]
    code = ord(char)
    if code < 0x80 or (0xA0 <= code < 0x180 and char not in _PDFLATEX_LACKS) or char in _PDFLATEX_SYMBOLS:
        return char  # ASCII here is printable: visible_text has escaped the controls
    return r"\textbackslash{}" + _escape(char)[1:]


_LATEX_ACTIVE = re.compile(r"[^\x20-\x7e]|[\\&%$#_{}~^<>|\"\[\]*]")


def latex_text(text: str) -> str:
    r"""Text for LaTeX's text mode (a paragraph, a tabular cell, a caption): compiles with pdfLaTeX and LuaLaTeX.

    Parameters
    ----------
    text : str

    Returns
    -------
    str
        :func:`visible_text` of the text (NFC-normalized first, so that "e" and a combining
        accent are "é"), line breaks as spaces, and then: each LaTeX special as a command or in
        braces (``\textbackslash{}``, ``\%``, ``{[}``), the Unicode the report's tables use in
        pdfLaTeX's terms (``$\approx$``), the Latin letters pdfLaTeX's default fonts hold as they
        are, and any other character as a visible escape (``\textbackslash{}u4e2d``), the same
        for both engines.

    Notes
    -----
    TeX's ligatures are left alone: "--" typesets as an en dash and "``" as an opening quote, as
    in any LaTeX text. A visible escape's backslash comes out as ``\textbackslash{}``, so nothing
    of the text can become a command: not ``\write18`` (shell escape), not ``\input``.

    Examples
    --------
    >>> latex_text("50% of k_max ≈ 5 & more")
    '50\\% of k\\_max $\\approx$ 5 \\& more'
    >>> latex_text("\x1b[2J café 中")
    '\\textbackslash{}x1b{[}2J café \\textbackslash{}u4e2d'
    """
    shown = visible_text(unicodedata.normalize("NFC", text)).replace("\n", " ")
    return _LATEX_ACTIVE.sub(lambda match: _latex_char(match.group(0)), shown)


# What a stream cannot encode
# ---------------------------
# A terminal's encoding is the locale's (LANG=C with Python's locale coercion off: ASCII) or
# PYTHONIOENCODING's. showwork's own texts use a few glyphs ("…", "×", "≤", "—", "±", rich's box
# drawing) and a search's values may hold any character; on such a stream each character it cannot
# encode is written as the ASCII below, or else as a visible escape. A codec error handler does it as
# the stream encodes, so what the stream can encode (a Latin-1 terminal's "×" and "±") is left as it
# is and no print needs a try/except. Reports and the ledger are files in UTF-8, never through here.
_ASCII_FALLBACKS = {
    "…": "...", "×": "x", "✕": "x", "≤": "<=", "≥": ">=", "≈": "~", "≠": "!=", "±": "+/-", "−": "-",
    "—": "--", "–": "-", "‘": "'", "’": "'", "“": '"', "”": '"', "→": "->", "←": "<-", "∞": "inf",
    "·": ".", "•": "*", "✓": "ok", "²": "^2", "⁹": "^9", "₂": "2", "\u00a0": " ",
    # Box drawing (rich's tables and rules).
    **dict.fromkeys("─━═╌╍┄┅┈┉╴╶╸╺", "-"), **dict.fromkeys("│┃║╎╏┆┇┊┋╵╷╹╻", "|"),
    **dict.fromkeys("┌┍┎┏┐┑┒┓└┕┖┗┘┙┚┛├┝┞┟┠┡┢┣┤┥┦┧┨┩┪┫┬┭┮┯┰┱┲┳┴┵┶┷┸┹┺┻┼┽┾┿╀╁╂╃╄╅╆╇╈╉╊╋"
                    "╒╓╔╕╖╗╘╙╚╛╜╝╞╟╠╡╢╣╤╥╦╧╨╩╪╫╬╭╮╯╰", "+"),
}
FALLBACK_ERRORS = "showwork.ascii_fallback"
"""The name of the codec error handler that writes :func:`ascii_fallback` of what a stream cannot encode."""


def ascii_fallback(text: str) -> str:
    r"""Text in ASCII: each glyph showwork prints as its ASCII spelling, any other non-ASCII character as a visible escape.

    Parameters
    ----------
    text : str

    Returns
    -------
    str
        ASCII text: "…" as "...", "×" as "x", "≤" as "<=", "—" as "--", "±" as "+/-", box drawing as
        "-", "|" and "+"; any other character above U+007F as ``\xHH``, ``\uHHHH`` or ``\UHHHHHHHH``.

    Examples
    --------
    >>> ascii_fallback("n ≤ 28 × 2 … café ─┼─")
    'n <= 28 x 2 ... caf\\xe9 -+-'
    """
    return "".join(char if char < "\x80" else _ASCII_FALLBACKS.get(char) or _escape(char) for char in text)


def _encode_fallback(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeEncodeError):  # decoding is not ours to guess
        raise error
    return ascii_fallback(error.object[error.start:error.end]), error.end


codecs.register_error(FALLBACK_ERRORS, _encode_fallback)


@contextlib.contextmanager
def fitted_to_encoding(stream: IO[str] | None) -> Iterator[None]:
    """Within the block, what ``stream`` cannot encode is written as :func:`ascii_fallback` of it.

    Only a stream that can be reconfigured (a file or terminal's :class:`io.TextIOWrapper`) and
    whose encoding is not a UTF is changed; its error handler is restored after the block.
    """
    encoding = getattr(stream, "encoding", None)
    reconfigure = getattr(stream, "reconfigure", None)
    if not encoding or reconfigure is None or codecs.lookup(encoding).name.startswith("utf"):
        yield
        return
    errors = stream.errors
    reconfigure(errors=FALLBACK_ERRORS)
    try:
        yield
    finally:
        with contextlib.suppress(OSError, ValueError):  # a closed stream, a closed pipe (`| head`)
            reconfigure(errors=errors)

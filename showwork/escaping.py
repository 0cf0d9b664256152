"""Every string that leaves showwork, escaped for the document it enters: one owner per target.

A search's strings are the user's: a categorical value, a family name, a parameter name, an error
message quoting a file name. None of them may act on the document it is written into (an ESC that
clears the terminal or sets its window title, a "|" that splits a Markdown table's cell, a "<" that
opens an HTML tag, a "%" that comments out the rest of a LaTeX line) or hide what it says from the
reader (a bidi override that shows "gpj.exe" as "exe.jpg"). Each target has one function here, and
every caller writing into that target calls it, once, on the plain Unicode text:

- :func:`visible_text`: the shared core. Control characters, bidi controls and lone surrogates
  become visible escapes (``\\x1b``, ``\\u202e``); figures use it for their texts.
- :func:`terminal_text`: what a command prints (plain ``print`` or rich, with markup off).
- :func:`markdown_text`: ``report.md``.
- :func:`html_text`: ``report.html``.
- :func:`latex_text`: the report's LaTeX tables and figure labels.

What becomes a visible escape
-----------------------------
Every character of Unicode's general category Cc (C0 controls U+0000–U+001F, DEL U+007F, C1
controls U+0080–U+009F), the bidi controls (Unicode's Bidi_Control property: U+061C, U+200E,
U+200F, U+202A–U+202E, U+2066–U+2069; they reorder what a reader sees without being seen) and
the surrogates U+D800–U+DFFF (a Python string can hold one alone; no UTF-8 document can). A
character below U+0100 is written as ``\\xHH``, others as ``\\uHHHH`` — the spelling of a Python
string literal, which a user can paste into a search space. A line break (``"\\n"``) is kept where
the target has line breaks of its own (the terminal, HTML, figures) and becomes a space where it
would change the document's structure (a Markdown table row, a LaTeX paragraph inside a cell).

A backslash already in the text is left as it is: the escapes are for a reader, not a round trip,
and doubling every backslash would garble the Windows paths and LaTeX-looking parameter names that
are common in what a search prints. A user's literal ``\\x1b`` (four characters) therefore reads
the same as an escaped ESC; both are harmless, which is the point.
"""

from __future__ import annotations

import html
import re

__all__ = ["html_text", "latex_text", "markdown_text", "terminal_text", "visible_text"]

# C0 without "\n", DEL, C1; bidi controls; surrogates. "\n" is the caller's choice (the module's docstring).
_INVISIBLE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escaped(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible_text(text: str) -> str:
    r"""Control characters, bidi controls and lone surrogates shown as visible escapes; line breaks kept.

    The shared core of every target (the module's docstring says what is escaped and why a
    backslash in the text is left alone).

    Parameters
    ----------
    text : str
        Any text, e.g. a categorical value of a search.

    Returns
    -------
    str
        The text with each such character replaced by ``\xHH`` (below U+0100) or ``\uHHHH``.

    Examples
    --------
    >>> visible_text("\x1b]0;title\x07done")
    '\\x1b]0;title\\x07done'
    >>> visible_text("abc\u202edef\nnext line")
    'abc\\u202edef\nnext line'
    >>> visible_text(r"C:\data")
    'C:\\data'
    """
    return _INVISIBLE.sub(_escaped, text)


def terminal_text(text: str) -> str:
    r"""Text as a terminal should show it: control sequences cannot act (see the notes), line breaks kept.

    Parameters
    ----------
    text : str

    Returns
    -------
    str
        :func:`visible_text` of the text.

    Notes
    -----
    Only plain text comes out: no rich markup is escaped, because one owner decides and the
    commands print plain text. Where the text goes through rich (the live progress table), it goes
    in as :class:`rich.text.Text` or with ``markup=False``, so that a "[red]" of the user's is
    printed as it is, neither rendered nor shown with an added backslash.

    Examples
    --------
    >>> terminal_text("\x1b[2Jcleared\r")
    '\\x1b[2Jcleared\\x0d'
    >>> terminal_text("[bold]not markup[/bold]")
    '[bold]not markup[/bold]'
    """
    return visible_text(text)


# CommonMark lets any ASCII punctuation be backslash-escaped; these are the ones that act in a
# sentence or a table cell: code, emphasis, strikethrough, links and images, HTML and entities,
# pipes, headings, GitHub's $math$, and the backslash itself.
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>|#])")


def markdown_text(text: str) -> str:
    r"""Text for a Markdown sentence or table cell: specials backslash-escaped, controls visible, one line.

    Parameters
    ----------
    text : str

    Returns
    -------
    str
        :func:`visible_text` of the text, then Markdown's specials escaped with a backslash
        (so the backslash of a visible escape shows), then line breaks as spaces (a table row is one
        line).

    Examples
    --------
    >>> markdown_text("a|b *c* [d]")
    'a\\|b \\*c\\* \\[d\\]'
    >>> markdown_text("bell\x07")
    'bell\\\\x07'
    """
    return _MD_SPECIAL.sub(r"\\\1", visible_text(text)).replace("\n", " ")


def html_text(text: str) -> str:
    r"""Text for HTML content or a quoted attribute value: controls visible, ``& < > " '`` as references.

    Parameters
    ----------
    text : str

    Returns
    -------
    str
        :func:`html.escape` (quotes included) of :func:`visible_text` of the text. HTML forbids
        control characters in text; line breaks are kept (HTML's whitespace).

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
    # Unicode the tables use, which pdfLaTeX without extra packages does not accept.
    "–": "--",
    "—": "---",
    "−": "$-$",
    "≈": r"$\approx$",
    "≥": r"$\geq$",
    "≤": r"$\leq$",
    "±": r"$\pm$",
    "×": r"$\times$",
    "∞": r"$\infty$",
    "⁹": r"\textsuperscript{9}",
    "’": "'",
    "“": "``",
    "”": "''",
    "…": r"\ldots{}",
    "<": r"\textless{}",
    ">": r"\textgreater{}",
}
_LATEX_PATTERN = re.compile("|".join(re.escape(k) for k in _LATEX_SPECIAL))


def latex_text(text: str) -> str:
    r"""Text for LaTeX's text mode (a paragraph, a tabular cell, a caption): specials and controls escaped.

    Parameters
    ----------
    text : str

    Returns
    -------
    str
        :func:`visible_text` of the text with line breaks as spaces, then each LaTeX special
        written as a command (a visible escape's backslash as ``\textbackslash{}``).

    Examples
    --------
    >>> latex_text("50% of k_max ≈ 5 & more")
    '50\\% of k\\_max $\\approx$ 5 \\& more'
    >>> latex_text("\x1b[2J")
    '\\textbackslash{}x1b[2J'
    """
    return _LATEX_PATTERN.sub(lambda m: _LATEX_SPECIAL[m.group(0)], visible_text(text).replace("\n", " "))

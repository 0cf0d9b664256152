"""Markup for the report's text: Markdown and self-contained HTML (LaTeX: :mod:`showwork.report.latex`).

Everything here is a pure function from already formatted text (:class:`~showwork.report.tables.Table`,
sentences, figure files) to a string. Cells are plain Unicode text; each format escapes every string
once, with its owner in :mod:`showwork.escaping` (:func:`~showwork.escaping.markdown_text`,
:func:`~showwork.escaping.html_text`, :func:`~showwork.escaping.latex_text`): specials, and control
characters made visible.
"""

from __future__ import annotations

import base64
import urllib.parse
from dataclasses import dataclass
from pathlib import Path

from showwork.escaping import html_text, markdown_text
from showwork.report.tables import Table

__all__ = [
    "Document",
    "Linked",
    "html_document",
    "html_table",
    "markdown_document",
    "markdown_table",
]


@dataclass(frozen=True)
class Document:
    """The parts of a report in reading order, format-neutral.

    Attributes
    ----------
    title : str
    summary : tuple of str
        Paragraphs (sentences) that open the report: settings, verdicts, advice.
    figures : tuple of (caption, stem path without suffix)
        Each figure was saved as ``stem.png`` (and other formats) next to the documents.
    tables : tuple of Table
        Result tables, then checklist tables.
    sources : tuple of (str or Linked)
        Where each family's trials were read from, and where its runs are (a line that ends in a link).
    """

    title: str
    summary: tuple[str, ...]
    figures: tuple[tuple[str, Path], ...]
    tables: tuple[Table, ...]
    sources: tuple[str | Linked, ...] = ()


@dataclass(frozen=True)
class Linked:
    """A line of text followed by a link to ``url``, shown as the URL itself.

    Only ``http://`` and ``https://`` addresses become links (anything else is shown as text: a
    report never carries a ``javascript:`` link); characters a link may not hold are percent-encoded.
    """

    text: str
    url: str


# RFC 3986's unreserved and reserved characters, and "%" (the URL is already encoded where it needs to be);
# anything else (a space, "<", ">", a quote, a control character) is percent-encoded.
_URL_SAFE = "-._~:/?#[]@!$&'()*+,;=%"


def _link_address(url: str) -> str | None:
    """``url`` ready for a link's target: percent-encoded where it must be; None unless it is an http(s) address."""
    if urllib.parse.urlsplit(url).scheme.lower() not in ("http", "https"):
        return None
    return urllib.parse.quote(url, safe=_URL_SAFE)


# ------------------------------------------------------------------ Markdown

def markdown_table(table: Table) -> str:
    """A GitHub-flavoured Markdown table with its title (level-3 heading) and notes."""
    align = table.numeric or (False,) * len(table.columns)
    lines = [f"### {markdown_text(table.title)}", ""]
    lines.append("| " + " | ".join(markdown_text(c) for c in table.columns) + " |")
    lines.append("|" + "|".join("---:" if right else "---" for right in align) + "|")
    for row in table.rows:
        lines.append("| " + " | ".join(markdown_text(cell) for cell in row) + " |")
    for note in table.notes:
        lines += ["", markdown_text(note)]
    return "\n".join(lines) + "\n"


def markdown_document(doc: Document, relative_to: Path) -> str:
    """The whole report as Markdown; figures are linked as PNG files relative to ``relative_to``."""
    parts = [f"# {markdown_text(doc.title)}", ""]
    parts += [markdown_text(p) + "\n" for p in doc.summary]
    for caption, stem in doc.figures:
        link = _relative(stem.with_suffix(".png"), relative_to)
        parts += [f"![{markdown_text(caption)}]({link})", "", f"*{markdown_text(caption)}*", ""]
    for table in doc.tables:
        parts.append(markdown_table(table))
    if doc.sources:
        parts += ["### Sources", ""] + [f"- {_markdown_line(s)}" for s in doc.sources] + [""]
    return "\n".join(parts)


def _markdown_line(line: str | Linked) -> str:
    """A line of text; a :class:`Linked` line ends in its URL as an autolink (``<https://...>``)."""
    if isinstance(line, str):
        return markdown_text(line)
    address = _link_address(line.url)
    return f"{markdown_text(line.text)} " + (f"<{address}>" if address else markdown_text(line.url))


def _relative(path: Path, base: Path) -> str:
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return path.as_posix()


# ------------------------------------------------------------------ HTML

_CSS = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 72em; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 2em; } h3 { font-size: 1.05em; }
table { border-collapse: collapse; margin: 0.5em 0 1em; font-size: 0.9em; }
th, td { border-bottom: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
p.note { font-size: 0.85em; color: #555; max-width: 60em; }
figure { margin: 1em 0 2em; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 0.9em; color: #444; }
"""


def html_table(table: Table) -> str:
    """An HTML ``<table>`` with a heading and the notes as paragraphs."""
    esc = html_text
    align = table.numeric or (False,) * len(table.columns)

    def cls(right: bool) -> str:
        return ' class="num"' if right else ""

    head = "".join(f"<th{cls(r)}>{esc(c)}</th>" for c, r in zip(table.columns, align))
    body = "\n".join("<tr>" + "".join(f"<td{cls(r)}>{esc(cell)}</td>" for cell, r in zip(row, align)) + "</tr>" for row in table.rows)
    notes = "".join(f'<p class="note">{esc(n)}</p>' for n in table.notes)
    return (
        f'<section id="{table.key}"><h3>{esc(table.title)}</h3>\n'
        f"<table><thead><tr>{head}</tr></thead>\n<tbody>\n{body}\n</tbody></table>\n{notes}</section>\n"
    )


def html_document(doc: Document) -> str:
    """A single self-contained HTML page: styles inline, figures embedded as base64 PNG."""
    esc = html_text
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(doc.title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{esc(doc.title)}</h1>",
    ]
    parts += [f"<p>{esc(p)}</p>" for p in doc.summary]
    for caption, stem in doc.figures:
        data = base64.b64encode(stem.with_suffix(".png").read_bytes()).decode("ascii")
        parts.append(
            f'<figure id="figure-{esc(stem.name)}"><img alt="{esc(caption)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{esc(caption)}</figcaption></figure>"
        )
    parts += [html_table(t) for t in doc.tables]
    if doc.sources:
        parts.append("<h3>Sources</h3><ul>" + "".join(f"<li>{_html_line(s)}</li>" for s in doc.sources) + "</ul>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _html_line(line: str | Linked) -> str:
    """A line of text; a :class:`Linked` line ends in its URL as an ``<a href>``."""
    if isinstance(line, str):
        return html_text(line)
    address = _link_address(line.url)
    link = f'<a href="{html_text(address)}">{html_text(line.url)}</a>' if address else html_text(line.url)
    return f"{html_text(line.text)} {link}"

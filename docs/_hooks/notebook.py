"""The example notebook (``examples/notebook.ipynb``): executed with its outputs, and shown on the site.

Two jobs, one file:

- ``make notebook`` (``python docs/_hooks/notebook.py``) executes the notebook in a fresh Jupyter kernel
  (nbclient, ipykernel: the test extras) and writes it back with its outputs, each code cell stamped with the
  SHA-256 of the source it ran (``metadata.showwork.source_sha256``), so that an edited cell whose outputs were
  not made again is seen (``tests/integration/test_example_notebook.py``). The notebook's first cell moves into a
  temporary folder of its own: nothing it writes lands in the repository, and that folder is removed afterwards.
- As an MkDocs hook (``mkdocs.yml``: ``hooks:``), it adds the executed notebook to the site as
  ``how-to/notebook.md``: its Markdown cells as they are, its code in fences, its outputs as HTML. The outputs
  are the user's content: every HTML output is rebuilt from an allow-list of tags and attributes
  (:func:`sanitized_html`): no script, no event handler, no style, no link (a link of an output points into the
  kernel's folder, which the site does not have), images only as inline PNG, JPEG or SVG data.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import html
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "examples" / "notebook.ipynb"
SITE_PAGE = "how-to/notebook.md"
CELL_TIMEOUT_S = 300
STAMP = "source_sha256"
# tqdm's warning, on import, that ipywidgets is missing names the file of tqdm on this machine: a path that the
# committed outputs must not hold (Ray's line that says the same, without a path, stays).
KERNEL_WARNINGS = "ignore:IProgress not found"


# ------------------------------------------------------------------ executing


def source_sha256(cell: dict[str, Any]) -> str:
    """The SHA-256 of a cell's source, as its stamp records it."""
    return hashlib.sha256(joined_text(cell["source"]).encode("utf-8")).hexdigest()


# The cell `executed` adds at the end, and takes away: where the notebook wrote (its first cell moves there).
_WHERE = "import os\nprint(os.getcwd())"


@contextlib.contextmanager
def executed(notebook) -> Iterator[tuple[Any, Path]]:
    """``notebook`` (an ``nbformat`` notebook, changed in place) executed in a fresh ``python3`` kernel, each code cell
    stamped with the SHA-256 of its source, and the folder it wrote in; the folder is removed afterwards. An error in
    a cell raises (``nbclient.exceptions.CellExecutionError``)."""
    # lazy: the site's build (this module's hook) needs neither
    import nbclient
    import nbformat

    notebook.cells.append(nbformat.v4.new_code_cell(_WHERE))
    with tempfile.TemporaryDirectory(prefix="showwork-kernel-") as start:
        try:
            nbclient.NotebookClient(notebook, kernel_name="python3", timeout=CELL_TIMEOUT_S,
                                    resources={"metadata": {"path": start}}).execute(
                env={**os.environ, "PYTHONWARNINGS": KERNEL_WARNINGS})
        finally:
            where = notebook.cells.pop()
        folder = Path("".join(o.get("text", "") for o in where.outputs if o.output_type == "stream").strip())
        for cell in notebook.cells:
            if cell.cell_type == "code":
                cell.metadata.setdefault("showwork", {})[STAMP] = source_sha256(cell)
        try:
            yield notebook, folder
        finally:
            if folder.name.startswith("showwork-notebook-") and folder.parent == Path(tempfile.gettempdir()):
                shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    import nbformat  # lazy: as in executed()

    with executed(nbformat.read(NOTEBOOK, as_version=4)) as (notebook, _):
        nbformat.write(notebook, NOTEBOOK)
    print(f"wrote {NOTEBOOK.relative_to(ROOT)}")


# ------------------------------------------------------------------ sanitising an output's HTML

_KEPT_TAGS = frozenset({"div", "p", "span", "b", "strong", "em", "i", "small", "sub", "sup", "code", "pre", "br", "hr",
                        "ul", "ol", "li", "table", "caption", "thead", "tbody", "tfoot", "tr", "th", "td", "img",
                        "h3", "h4", "h5", "h6"})  # not h1, h2: the page's own title and sections
_VOID_TAGS = frozenset({"br", "hr", "img"})
# Tags dropped with everything inside them (their text is code or markup, not something to read).
_DROPPED_WITH_CONTENT = frozenset({"script", "style", "template", "iframe", "object", "embed", "svg", "math", "noscript",
                                   "textarea", "select", "title"})
_KEPT_ATTRIBUTES = {"*": frozenset({"class", "title"}), "th": frozenset({"colspan", "rowspan", "align"}),
                    "td": frozenset({"colspan", "rowspan", "align"}), "img": frozenset({"src", "alt", "width", "height"})}
_IMAGE_DATA = re.compile(r"data:image/(png|jpeg|svg\+xml);base64,[A-Za-z0-9+/=\s]+")


class _Sanitizer(HTMLParser):
    """HTML rebuilt from what the parser read: kept tags with kept attributes, every text and value escaped, every
    element closed, so that nothing an output holds can run or close the page's own elements."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.out: list[str] = []
        self.open: list[str] = []
        self.dropping: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.dropping or tag in _DROPPED_WITH_CONTENT:
            if tag not in _VOID_TAGS:
                self.dropping.append(tag)
            return
        if tag not in _KEPT_TAGS:
            return
        kept = _KEPT_ATTRIBUTES["*"] | _KEPT_ATTRIBUTES.get(tag, frozenset())
        values = [(name, value or "") for name, value in attrs if name in kept]
        if tag == "img":
            if not any(name == "src" and _IMAGE_DATA.fullmatch(value) for name, value in values):
                return
        written = "".join(f' {name}="{html.escape(value, quote=True)}"' for name, value in values)
        self.out.append(f"<{tag}{written}>")
        if tag not in _VOID_TAGS:
            self.open.append(tag)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID_TAGS:  # <b/>: opened and closed at once
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if self.dropping:
            if tag == self.dropping[-1]:
                self.dropping.pop()
            return
        if tag in self.open:  # close it, and what was left open inside it
            while self.open:
                last = self.open.pop()
                self.out.append(f"</{last}>")
                if last == tag:
                    break

    def handle_data(self, data: str) -> None:
        if not self.dropping:
            self.out.append(html.escape(data, quote=False))

    def text(self) -> str:
        self.close()
        return "".join(self.out) + "".join(f"</{tag}>" for tag in reversed(self.open))


def sanitized_html(markup: str) -> str:
    """``markup`` with only the allow-listed tags and attributes, every text escaped and every element closed."""
    sanitizer = _Sanitizer()
    sanitizer.feed(markup)
    return sanitizer.text()


# ------------------------------------------------------------------ the page

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def joined_text(text: str | list[str]) -> str:
    """A text of a notebook's JSON, which holds it as one string or as a list of lines."""
    return text if isinstance(text, str) else "".join(text)


def _pre(text: str, kind: str) -> str:
    return f'<pre class="notebook-{kind}">{html.escape(_ANSI.sub("", text), quote=False)}</pre>'


def output_html(output: dict[str, Any]) -> str:
    """One output of a code cell as HTML for the site; empty for an output that shows nothing (a line cleared)."""
    kind = output["output_type"]
    if kind == "stream":
        text = joined_text(output["text"])
        return _pre(text, output["name"]) if text.strip() else ""
    if kind == "error":
        return _pre("\n".join(output["traceback"]) or f"{output['ename']}: {output['evalue']}", "error")
    data = output.get("data", {})
    if joined_text(data.get("text/html", "")).strip():
        return sanitized_html(joined_text(data["text/html"]))
    for mime in ("image/png", "image/jpeg", "image/svg+xml"):
        if mime in data:
            encoded = joined_text(data[mime])
            if mime == "image/svg+xml":
                encoded = base64.b64encode(encoded.encode("utf-8")).decode("ascii")
            return sanitized_html(f'<img src="data:{mime};base64,{encoded.strip()}" alt="output">')
    text = joined_text(data.get("text/plain", ""))
    return _pre(text, "text") if text.strip() else ""


def notebook_markdown(notebook: dict[str, Any]) -> str:
    """The page of an executed notebook (its JSON, as ``.ipynb`` holds it): Markdown cells as they are, code in
    ``python`` fences, each output in a ``div.notebook-output`` of sanitised HTML (a raw HTML block, one line, so that
    Markdown leaves it alone)."""
    blocks = []
    for cell in notebook["cells"]:
        source = joined_text(cell["source"])
        if cell["cell_type"] == "markdown":
            blocks.append(source)
        elif cell["cell_type"] == "code":
            blocks.append(f"```python\n{source}\n```")
            shown = [output_html(output) for output in cell.get("outputs", [])]
            blocks += [f'<div class="notebook-output">{_one_line(part)}</div>' for part in shown if part]
    return "\n\n".join(blocks) + "\n"


def _one_line(markup: str) -> str:
    """``markup`` without a blank line (which would end Markdown's raw HTML block): inside ``pre`` a newline becomes
    ``&#10;``, elsewhere a space."""
    parts = re.split(r"(<pre[^>]*>.*?</pre>)", markup, flags=re.S)
    return "".join(part.replace("\n", "&#10;") if part.startswith("<pre") else part.replace("\n", " ") for part in parts)


def on_files(files, config):
    """MkDocs: the executed notebook as the page ``how-to/notebook.md``."""
    from mkdocs.structure.files import File  # lazy: `make notebook` runs without MkDocs

    markdown = notebook_markdown(json.loads(NOTEBOOK.read_text(encoding="utf-8")))
    files.append(File.generated(config, SITE_PAGE, content=markdown))
    return files


if __name__ == "__main__":
    sys.exit(main())

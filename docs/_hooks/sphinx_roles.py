"""A griffe extension for the API reference: docstrings written for Sphinx and doctest, shown as Markdown.

showwork's docstrings are numpy style and name other objects with Sphinx roles
(``:func:`~showwork.api.search```, ``:class:`TuningCurve```), which mkdocstrings would print as they are.
This shows each as inline code, the short name where the role says ``~``: the text a reader needs,
without a link that may point at a module the reference does not document. Doctest lines (``>>>``),
which Markdown would read as quotes, become a ``pycon`` code block.
"""

from __future__ import annotations

import re

import griffe

ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|data|attr|exc|obj|const|ref):`(~?)([^`]+)`")


def role_as_code(match: re.Match[str]) -> str:
    short, target = match.group(1), match.group(2)
    return f"`{target.rsplit('.', 1)[-1] if short else target}`"


def doctest_as_code(text: str) -> str:
    """Each run of ``>>>`` lines (with their ``...`` continuations and output up to a blank line) fenced as ``pycon``."""
    out: list[str] = []
    in_block = False
    for line in text.split("\n"):
        stripped = line.lstrip()
        if not in_block and stripped.startswith(">>>"):
            indent = line[: len(line) - len(stripped)]
            out.append(f"{indent}```pycon")
            in_block = True
        elif in_block and not stripped:
            out.append(f"{indent}```")
            in_block = False
        out.append(line)
    if in_block:
        out.append(f"{indent}```")
    return "\n".join(out)


class SphinxRolesAsCode(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs) -> None:
        if obj.docstring is not None:
            obj.docstring.value = doctest_as_code(ROLE.sub(role_as_code, obj.docstring.value))

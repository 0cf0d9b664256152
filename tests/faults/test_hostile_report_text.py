"""A report's documents show a search's control characters as visible escapes (issue 34 item 2).

Found by a hostile test: raw ESC and BEL bytes of a family's name reached ``report.md`` and the
LaTeX tables. A results file whose family names (``--group``), a categorical value (``--params``)
and the score column's name hold an OSC title sequence, a screen clear, a carriage return and a
bidi override is reported; ``report.md``, ``report.html`` and ``latex/*.tex`` hold none of those
characters, the HTML parses with the visible escapes in its text, and the LaTeX tables compile with
pdfLaTeX and LuaLaTeX (where they are installed; CI installs them).
"""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from helpers import cli_in_process

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TITLE, CLEAR, RETURN, BIDI = "\x1b]0;title\x07", "\x1b[2J", "a\rb", "\u202eexe.jpg"
SHOWN = ("\\x1b]0;title\\x07", "\\x1b[2J", "a\\x0db", "\\u202eexe.jpg")
FAMILIES = (f"base{TITLE}", f"new{BIDI}")
SCORE = f"acc{CLEAR}"
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


_VOID = {"meta", "img", "br", "hr", "link", "input", "col", "wbr"}


class _Text(HTMLParser):
    """The text of a page, and whether its tags nest: a "<" of a text would open one that never closes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.open: list[str] = []

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag not in _VOID:
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.open and self.open.pop() == tag, (tag, self.open)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The report of two families of 40 trials each, its families, score and a parameter's values hostile."""
    folder = tmp_path_factory.mktemp("hostile")
    rng = random.Random(34)
    rows = [f"family,{SCORE},act,lr"]
    for family, act in zip(FAMILIES, (RETURN, CLEAR)):  # each family's best configuration shows its value
        rows += [f'"{family}",{rng.random():.4f},"{act}",{rng.random():.4f}' for _ in range(40)]
    (folder / "hostile.csv").write_text("\n".join(rows) + "\n")
    out = folder / "report"
    code, stdout, err = cli_in_process("report", folder / "hostile.csv", "--score", SCORE, "--group", "family",
                                       "--params", "act,lr", "--out", out, "--no-mlflow", "--formats", "png")
    assert code == 0, err
    assert not RAW.search(stdout) and f"base{SHOWN[0]}" in stdout  # what it printed, too
    return out


def test_no_control_character_reaches_the_documents(report):
    documents = [report / "report.md", report / "report.html", *sorted((report / "latex").glob("*.tex"))]
    assert len(documents) > 4
    for path in documents:
        text = path.read_text(encoding="utf-8")
        assert not RAW.search(text), (path.name, RAW.search(text))
    markdown = (report / "report.md").read_text()
    # Markdown escapes the backslash of a visible escape (and "]", "["): it renders as \x1b]0;title\x07.
    assert "base\\\\x1b\\]0;title\\\\x07" in markdown and "new\\\\u202eexe.jpg" in markdown
    assert "acc\\\\x1b\\[2J" in markdown and "a\\\\x0db" in markdown  # the score's name, a categorical value
    families = (report / "latex" / "best_configurations.tex").read_text()
    assert "base\\textbackslash{}x1b" in families and "title\\textbackslash{}x07" in families
    assert "a\\textbackslash{}x0db" in families


def test_the_html_parses_and_shows_the_escapes_as_text(report):
    reader = _Text()
    reader.feed((report / "report.html").read_text(encoding="utf-8"))
    reader.close()
    assert reader.open == []
    text = "".join(reader.text)
    for shown in (f"base{SHOWN[0]}", f"new{SHOWN[3]}", f"acc{SHOWN[1]}", SHOWN[2]):
        assert shown in text, shown


def _engine(name: str) -> bool:
    if shutil.which(name) is None:
        return False
    return name != "lualatex" or subprocess.run(  # its OpenType loader (Debian: texlive-luatex)
        ["kpsewhich", "luaotfload-main.lua"], capture_output=True, text=True).stdout.strip() != ""


@pytest.mark.parametrize("engine", ["pdflatex", "lualatex"])
def test_the_latex_tables_compile(report, engine, tmp_path):
    """Every table of the report, \\input into one document: the hostile names, the report's own Unicode (≈, ≥, –)."""
    if not _engine(engine):
        if os.environ.get("CI") == "true":
            pytest.fail(f"{engine} is missing (CI installs it)")
        pytest.skip(f"no {engine} here (CI installs it)")
    preamble = report / "latex" / "preamble.tex"  # the packages the tables need, where the report writes them
    packages = f"\\input{{{preamble}}}\n" if preamble.exists() else "\\usepackage{booktabs}\n\\usepackage{longtable}\n"
    tables = "\n".join(f"\\input{{{path}}}\n\\clearpage" for path in sorted((report / "latex").glob("*.tex")) if path != preamble)
    (tmp_path / "doc.tex").write_text("\\documentclass{article}\n" + packages + "\\begin{document}\n" + tables + "\n\\end{document}\n")
    done = subprocess.run([engine, "-interaction=nonstopmode", "-halt-on-error", "-no-shell-escape", "doc.tex"],
                          cwd=tmp_path, capture_output=True, text=True, errors="replace", timeout=300)
    log = (tmp_path / "doc.log").read_text(errors="replace")
    assert done.returncode == 0, log[-3000:]
    assert "Missing character" not in log

"""Issue 34 items 2 and 3: what goes into the paper compiles, as documented, and runs nothing.

A report whose family names, categorical values and score label hold every LaTeX special, control
characters and the shell-escape and file-input commands is written with ``--formats pgf``; then a
document that inputs ``latex/preamble.tex``, every table and every PGF figure compiles with pdfLaTeX
and with LuaLaTeX under ``-shell-escape``: no command of a label runs, no local file is read, no box
is more than 1 pt too wide at an article's text width, and no output names a folder of this machine.
"""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import showwork

ENGINES = ("pdflatex", "lualatex")
HOSTILE = (
    r"\immediate\write18{touch PWNED}",
    r"\input{/etc/hostname}",
    r"\def\x{\x}\x",
    "ELECTRA & T5 #2",
    "T5 {x}_y 50% $ ~ ^ \\",
    'café <b> | " * [0.1] \x1b[2J\x07',
    "中文 😀 ≈ ≤ × –",
    "deberta-v3-base-mnli-lr-sweep-ablation01",
)
REPOSITORY = Path(showwork.__file__).resolve().parents[1]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.integration,
    pytest.mark.skipif(not all(shutil.which(e) for e in ENGINES) and not os.environ.get("CI"),
                       reason="no pdflatex and lualatex here (CI installs them)"),
]


def _results(path: Path, families: int) -> Path:
    rng = np.random.default_rng(families)
    rows = []
    for name in HOSTILE[:families]:
        for _ in range(30):
            lr = 10 ** rng.uniform(-5, -1)
            rows.append({"family": name, "score": 0.6 + 0.3 * np.exp(-((np.log10(lr) + 3) ** 2)) + rng.normal(0, 0.02),
                         "runtime": rng.uniform(5, 50), "lr": lr, "act": rng.choice([r"\def\y{\y}\y", "relu & gelu", "tanh\x07", "50%_#"]),
                         "epochs": int(rng.integers(1, 5))})
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def _report(tmp_path: Path, families: int, *options: str) -> Path:
    out = tmp_path / "report"
    done = subprocess.run(
        [sys.executable, "-m", "showwork", "report", str(_results(tmp_path / "results.csv", families)), "--score", "score",
         "--runtime", "runtime", "--params", "lr,act,epochs", "--group", "family", "--sampler", "random", "--a", "0", "--b", "1",
         "--cost", "runtime", "--score-label", r"Dev acc & \textbf{x} #1 \write18{touch PWNED}", "--formats", "png,svg,pgf",
         "--out", str(out), "--no-mlflow", *options],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,  # no label can hang the report
        env={**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def _document(folder: Path, out: Path) -> Path:
    """What docs/figures.md tells a paper to write: the preamble, then every table and every figure."""
    tables = sorted(p.relative_to(folder).as_posix() for p in (out / "latex").glob("*.tex") if p.stem != "preamble")
    figures = sorted(p.relative_to(folder).as_posix() for p in (out / "figures").glob("*.pgf"))
    assert tables and figures
    lines = [r"\documentclass{article}", rf"\input{{{(out / 'latex' / 'preamble.tex').relative_to(folder).as_posix()}}}",
             r"\begin{document}"]
    lines += [rf"\input{{{table}}}" for table in tables]
    lines += [rf"\begin{{figure}}\centering\showworkfigure{{{figure}}}\caption{{A figure.}}\end{{figure}}" for figure in figures]
    lines += [r"\end{document}"]
    paper = folder / "paper.tex"
    paper.write_text("\n".join(lines) + "\n")
    return paper


def _compile(engine: str, paper: Path) -> str:
    done = subprocess.run([engine, "-shell-escape", "-interaction=nonstopmode", "-halt-on-error", paper.name], cwd=paper.parent,
                          capture_output=True, text=True, timeout=300)
    log = paper.with_suffix(".log").read_text(errors="replace")
    assert done.returncode == 0, f"{engine}:\n{log[-3000:]}"
    return log


def test_the_documented_preamble_is_the_one_a_report_writes(tmp_path):
    """docs/figures.md prints latex/preamble.tex as it is."""
    from showwork.report.latex import PREAMBLE

    docs = (REPOSITORY / "docs" / "figures.md").read_text(encoding="utf-8")
    assert f"```latex\n{PREAMBLE}```" in docs
    assert "underscore" not in docs  # no longer needed (and with it a table's \label failed)


def _overfull(log: str) -> list[float]:
    return [float(points) for points in re.findall(r"Overfull \\hbox \(([0-9.]+)pt too wide\)", log)]


@pytest.mark.parametrize("families, options", [
    # one column of a paper: figures input at their size; with the extrapolation's table and figure (issue 38)
    (3, ("--figsize", "3.3,2.4", "--font-size", "8", "--extrapolate", "300")),
    (8, ()),  # eight families (a summary and pages), figures at their own size, scaled to the line
], ids=["one-column", "eight-families"])
def test_a_hostile_report_compiles_with_both_engines_and_runs_nothing(tmp_path, families, options):
    out = _report(tmp_path, families, *options)
    if "--extrapolate" in options:
        assert (out / "latex" / "extrapolation.tex").is_file() and any((out / "figures").glob("extrapolation_*.pgf"))
    paper = _document(tmp_path, out)
    for engine in ENGINES:
        log = _compile(engine, paper)
        assert not list(tmp_path.rglob("PWNED")), f"{engine} ran a label's \\write18"
        assert "/etc/hostname" not in log, f"{engine} read /etc/hostname"
        assert (tmp_path / "paper.pdf").read_bytes().startswith(b"%PDF")
        assert max(_overfull(log), default=0.0) <= 1.0, f"{engine}: {_overfull(log)}"
        assert "Runaway argument" not in log and "Undefined control sequence" not in log


def test_no_output_names_a_folder_of_this_machine(tmp_path):
    """The results file's folder, the report's, the repository's: in none of the files a report writes."""
    out = _report(tmp_path, 2)
    folders = {str(tmp_path), str(tmp_path.resolve()), str(REPOSITORY), str(Path.home())}
    for path in out.rglob("*"):
        if path.is_file() and path.suffix in {".md", ".html", ".json", ".tex", ".pgf", ".svg"}:
            text = path.read_text(errors="replace")
            found = [folder for folder in folders if folder and folder != "/" and folder in text]
            assert not found, f"{path.relative_to(out)} names {found}"
    assert "results.csv" in (out / "report.md").read_text()  # the source, by its name


def test_figures_show_control_characters_as_escapes_and_stay_valid_svg(tmp_path):
    """A name holding ESC and BEL: drawn as the visible escapes, and every SVG still parses (XML has no place for them)."""
    import xml.etree.ElementTree as ElementTree

    out = _report(tmp_path, 6)
    for svg in (out / "figures").glob("*.svg"):
        text = svg.read_text()
        assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", text), svg.name
        ElementTree.fromstring(svg.read_bytes())
    assert "\\x1b[2J\\x07" in (out / "figures" / "tuning_curves.svg").read_text()  # the legend's entry, as the escapes

"""Text a user controls is drawn as typed in the report's figures (issue 23, item 12).

matplotlib reads a text between two ``$`` as mathtext: a family label ``$\\frac{$`` made
``showwork report`` die with a matplotlib traceback, and ``$\\alpha$`` was drawn as α in the
figures while the tables printed it as typed. Every figure now draws its texts literally
(``text.parse_math`` off, :func:`showwork.report.figures.literal_text`). The labels, the score
column (the metric's name on the axes) and the figure checked below come from
``tests/bad_inputs/labels/``.

The check reads the texts of the SVG, saved with ``svg.fonttype: none`` (text as ``<text>``
elements instead of glyph paths): a literal label is one element holding it as typed, where
mathtext would have split it into its symbols (α, β).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from helpers import run_cli

pytestmark = [pytest.mark.integration, pytest.mark.slow]

LABELS = Path(__file__).resolve().parents[1] / "bad_inputs" / "labels"
SCORE = "$\\beta$"


@pytest.fixture(autouse=True)
def svg_text_as_text(monkeypatch):
    import matplotlib

    monkeypatch.setitem(matplotlib.rcParams, "svg.fonttype", "none")


def texts(svg: Path) -> str:
    """Every ``<text>`` of ``svg``, one a line."""
    root = ElementTree.parse(svg).getroot()
    return "\n".join("".join(element.itertext()).strip() for element in root.iter("{http://www.w3.org/2000/svg}text"))


@pytest.mark.parametrize("results", ["two_families.csv", "eight_families.csv"])
def test_labels_with_dollar_signs_are_drawn_as_typed(capsys, tmp_path, results):
    """Two families: the all-pairs figures; eight: the summary and pages of small multiples."""
    out = tmp_path / "report"
    code, stdout, err = run_cli(capsys, "report", LABELS / results, "--score", SCORE, "--group", "family",
                                "--out", out, "--no-mlflow", "--formats", "svg")
    assert code == 0, err
    assert "Traceback" not in err and "ParseException" not in err
    svgs = sorted((out / "figures").glob("*.svg"))
    assert len(svgs) >= 3
    for svg in svgs:
        drawn = texts(svg)
        assert "$\\alpha$" in drawn and SCORE in drawn, svg.name  # the label and the metric as typed
        assert "α" not in drawn and "β" not in drawn, svg.name  # nothing read as mathtext
    assert "$\\frac{$" in texts(out / "figures" / ("cdfs.svg" if results.startswith("two") else "cdfs_page1.svg"))
    # The documents keep the labels as typed, as before (Markdown escapes them, JSON holds them).
    data = (out / "report.json").read_text()
    assert json.dumps("$\\alpha$") in data and json.dumps("$\\frac{$") in data


def test_figures_drawn_outside_a_report_are_literal_too(tmp_path):
    """The figure functions of the library: texts set while drawing and tick labels made when saving."""
    from showwork.report import ReportSettings, analyze, from_results_file
    from showwork.report.figures import save_figure, summary_figure, tuning_curve_figure

    report = analyze(from_results_file(LABELS / "eight_families.csv", SCORE, group="family"), ReportSettings())
    [summary] = save_figure(summary_figure(report), tmp_path, "summary", ("svg",))
    assert "$\\frac{$" in texts(summary) and "α" not in texts(summary)  # the summary's tick labels, made while saving
    few = analyze(from_results_file(LABELS / "two_families.csv", SCORE, group="family"), ReportSettings())
    [curves] = save_figure(tuning_curve_figure(few), tmp_path, "curves", ("svg",))
    assert "$\\alpha$" in texts(curves) and "β" not in texts(curves)

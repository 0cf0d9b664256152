"""The figure options of a report (issue 26 item 3), each shown by the files it writes."""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import sys

import matplotlib
import numpy as np
import pytest

from showwork.commands import options
from showwork.errors import InputError
from showwork.report import FamilyResults, FigureStyle, ReportSettings, analyze
from showwork.report.figures import DPI, FIGURE_FORMATS, report_figures, save_figure, tuning_curve_figure
from showwork.report.figures import style as style_module

from helpers import run_cli


@pytest.fixture(scope="module")
def report():
    rng = np.random.default_rng(0)
    scores = rng.uniform(0.6, 0.9, size=30)
    params = tuple({"lr": float(10 ** rng.uniform(-5, -1)), "act": ["relu", "gelu"][i % 2]} for i in range(30))
    return analyze([FamilyResults("mlp", scores, ("finished",) * 30, "val_acc", params=params)], ReportSettings(a=0, b=1))


def written(report, tmp_path, style=None, formats=("png", "svg", "pdf")):
    """The tuning curves' files, and the new figure's, under the style."""
    kwargs = {} if style is None else {"style": style}
    out = report_figures(report, tmp_path, formats=formats, **kwargs)
    return {name: {p.suffix[1:]: p for p in paths} for name, paths in out.items()}


def png_size(path):
    width, height = struct.unpack(">II", path.read_bytes()[16:24])
    return width, height


def svg_size_pt(path):
    head = path.read_text()[:2000]
    return tuple(float(re.search(rf'{what}="([0-9.]+)pt"', head).group(1)) for what in ("width", "height"))


def svg_texts(path):
    """The texts of an SVG (matplotlib draws glyphs as paths, each text preceded by a comment with it)."""
    return re.findall(r"<!-- (.*?) -->", path.read_text())


def test_the_default_style_writes_what_the_figures_always_were(report, tmp_path):
    files = written(report, tmp_path / "styled")
    before = save_figure(tuning_curve_figure(report), tmp_path / "plain", "tuning_curves", ("png", "svg"))
    assert [p.read_bytes() for p in before] == [files["tuning_curves"][f].read_bytes() for f in ("png", "svg")]


def test_figsize_sets_every_figure_in_inches(report, tmp_path):
    files = written(report, tmp_path, FigureStyle(figsize=(3.5, 2.5)))
    # At a column's width the parameters' panels go on pages of two.
    assert "scores_by_parameter" not in files and "scores_by_parameter_page2" in files
    for name in ("tuning_curves", "cdfs", "scores_by_parameter_page1", "scores_by_parameter_page2"):
        assert png_size(files[name]["png"]) == (round(3.5 * DPI), round(2.5 * DPI))
        assert svg_size_pt(files[name]["svg"]) == (3.5 * 72, 2.5 * 72)


def test_no_title_leaves_no_title_text(report, tmp_path):
    default = written(report, tmp_path / "a")
    untitled = written(report, tmp_path / "b", FigureStyle(title=False))
    title = "Median tuning curves with 80% simultaneous LD-HD bands"
    assert title in svg_texts(default["tuning_curves"]["svg"])
    assert title not in svg_texts(untitled["tuning_curves"]["svg"])
    assert not any(t.startswith("Validation score against") for t in svg_texts(untitled["scores_by_parameter"]["svg"]))
    assert any(t.startswith("Validation score against") for t in svg_texts(default["scores_by_parameter"]["svg"]))


def glyph_scales(path):
    """The sizes the SVG's texts are drawn at: matplotlib scales each glyph group by font size / 100."""
    return {round(100 * float(s), 2) for s in re.findall(r"scale\(([0-9.]+) -[0-9.]+\)", path.read_text())}


def test_font_size_is_the_size_of_the_texts(report, tmp_path):
    default = glyph_scales(written(report, tmp_path / "a")["tuning_curves"]["svg"])
    bigger = glyph_scales(written(report, tmp_path / "b", FigureStyle(font_size=14))["tuning_curves"]["svg"])
    assert 10.0 in default and 14.0 not in default
    assert 14.0 in bigger and 10.0 not in bigger  # the title (medium) at 14 pt; smaller texts scale with it


def test_a_style_file_colour_appears_in_the_figures(report, tmp_path):
    style = tmp_path / "paper.mplstyle"
    style.write_text("axes.facecolor: fafad2\n# a comment\ngrid.color: 8b0000\n")
    files = written(report, tmp_path / "out", FigureStyle(style_file=style))
    for name in ("tuning_curves", "scores_by_parameter"):
        svg = files[name]["svg"].read_text()
        assert "#fafad2" in svg and "#8b0000" in svg
    assert "#fafad2" not in written(report, tmp_path / "plain")["tuning_curves"]["svg"].read_text()


def test_score_label_replaces_the_metric_on_the_score_axis(report, tmp_path):
    files = written(report, tmp_path, FigureStyle(score_label="Accuracy (dev)"))
    assert "Accuracy (dev)" in svg_texts(files["tuning_curves"]["svg"])  # y axis
    assert "Accuracy (dev)" in svg_texts(files["cdfs"]["svg"])  # x axis
    assert "Accuracy (dev)" in svg_texts(files["scores_by_parameter"]["svg"])
    assert "val_acc" not in svg_texts(files["tuning_curves"]["svg"])


def test_pdf_embeds_truetype_fonts(report, tmp_path):
    pdf = written(report, tmp_path, formats=("pdf",))["tuning_curves"]["pdf"].read_bytes()
    # TrueType outlines embedded (/FontFile2, as CID fonts), no Type 3 font (what venues' PDF checks refuse).
    assert b"/FontFile2" in pdf and b"/CIDFontType2" in pdf
    assert b"/Type3" not in pdf


@pytest.mark.skipif(not any(shutil.which(t) for t in style_module.TEX_SYSTEMS) and not os.environ.get("CI"),
                    reason="no TeX system for the PGF backend (CI installs one)")
def test_pgf_is_a_pgf_picture_with_nothing_outside_it(report, tmp_path):
    files = written(report, tmp_path, formats=("pgf",))
    for name, paths in files.items():
        text = paths["pgf"].read_text()
        assert text.startswith("%% Creator: Matplotlib, PGF backend"), name
        assert "\\begin{pgfpicture}" in text and "\\end{pgfpicture}" in text
        assert "\\includegraphics" not in text  # no raster image beside it to lose
    assert files["tuning_curves"]["pgf"].read_bytes() == written(report, tmp_path / "again", formats=("pgf",))[
        "tuning_curves"]["pgf"].read_bytes()


def _lualatex_with_fonts() -> bool:
    """lualatex with its OpenType loader (Debian: texlive-luatex), which the document below needs."""
    return shutil.which("lualatex") is not None and subprocess.run(
        ["kpsewhich", "luaotfload-main.lua"], capture_output=True, text=True).stdout.strip() != ""


@pytest.mark.slow
@pytest.mark.skipif(not _lualatex_with_fonts() and not os.environ.get("CI"), reason="no lualatex here (CI installs it)")
def test_a_pgf_figure_is_included_as_is_by_a_latex_document(report, tmp_path):
    """What docs/figures.md says a paper does: \\input the .pgf after the preamble its header names; every glyph
    found (a sans font with ≤ and ≈: the figures' texts hold them), a PDF out."""
    figure = written(report, tmp_path, formats=("pgf",))["tuning_curves"]["pgf"]
    fonts = os.path.join(matplotlib.get_data_path(), "fonts", "ttf") + "/"
    (tmp_path / "paper.tex").write_text(
        "\\documentclass{article}\n\\usepackage{pgf}\n\\usepackage{fontspec}\n"
        f"\\setsansfont{{DejaVuSans}}[Path={fonts}, Extension=.ttf, BoldFont=DejaVuSans-Bold]\n"
        "\\usepackage{underscore}\n\\def\\mathdefault#1{#1}\n"
        f"\\begin{{document}}\n\\begin{{figure}}\\input{{{figure}}}\\end{{figure}}\n\\end{{document}}\n")
    done = subprocess.run(["lualatex", "-interaction=nonstopmode", "-halt-on-error", "paper.tex"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    log = (tmp_path / "paper.log").read_text(errors="replace")
    assert done.returncode == 0, log[-2000:]
    assert "Missing character" not in log
    assert (tmp_path / "paper.pdf").read_bytes().startswith(b"%PDF")


def test_pgf_without_tex_is_refused_before_anything_is_written(report, tmp_path, monkeypatch):
    monkeypatch.setattr(style_module.shutil, "which", lambda name: None)
    with pytest.raises(InputError, match="pgf.*xelatex, lualatex, pdflatex"):
        report_figures(report, tmp_path / "out", formats=("png", "pgf"))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("bad, fragment", [
    ({"figsize": (0, 2)}, "--figsize"), ({"figsize": (float("inf"), 2)}, "--figsize"), ({"figsize": (3,)}, "--figsize"),
    ({"font_size": -1}, "--font-size"), ({"font_size": float("nan")}, "--font-size"), ({"score_label": " "}, "--score-label"),
])
def test_bad_values_are_input_errors(bad, fragment):
    with pytest.raises(InputError, match=fragment):
        FigureStyle(**bad)


@pytest.mark.parametrize("content, fragment", [
    (None, "no such file"),
    ("axes.facecolour: red\n", "axes.facecolour"),
    ("this is not a setting\n", "line 1"),
    ("axes.linewidth: thick\n", "axes.linewidth"),
    (b"\xff\xfe\x00bad", "not a matplotlib style file"),
])
def test_a_bad_style_file_is_named(tmp_path, content, fragment):
    path = tmp_path / "bad.mplstyle"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    with pytest.raises(InputError, match=re.escape(f"--style {path}")) as error:
        FigureStyle(style_file=path)
    assert fragment in str(error.value) and "\n" not in str(error.value)


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_style_path_that_is_no_regular_file_is_refused_without_reading_it(tmp_path, kind):
    """A FIFO would block the read; a folder is no style file: each is named as not a regular file."""
    path = tmp_path / "style.mplstyle"
    os.mkfifo(path) if kind == "fifo" else path.mkdir()
    with pytest.raises(InputError, match=re.escape(f"--style {path}: not a regular file.")):
        FigureStyle(style_file=path)


@pytest.mark.parametrize("argv, fragment", [
    (["--figsize", "3"], "--figsize"), (["--figsize", "3,-2"], "--figsize"), (["--figsize", "a,b"], "--figsize"),
    (["--font-size", "0"], "--font-size"), (["--style", "{missing}"], "--style"), (["--formats", "png,eps"], "--formats"),
])
def test_the_command_refuses_bad_figure_options_with_one_line(capsys, tmp_path, argv, fragment):
    results = tmp_path / "r.csv"
    results.write_text("score\n" + "".join(f"0.{i}\n" for i in range(1, 9)))
    argv = [a.replace("{missing}", str(tmp_path / "none.mplstyle")) for a in argv]
    code, _, err = run_cli(capsys, "report", results, "--score", "score", "--out", tmp_path / "out", "--no-mlflow", *argv)
    assert code == 2 and err.startswith("showwork: error:") and err.count("\n") == 1, err
    assert fragment in err
    assert not (tmp_path / "out").exists()


def test_the_command_line_knows_the_figure_formats_the_figures_do():
    assert options.FIGURE_FORMATS is FIGURE_FORMATS  # one tuple, in showwork.constants
    assert options.figure_formats("PNG, pgf") == ("png", "pgf")


def test_help_lists_the_figure_options():
    out = subprocess.run([sys.executable, "-m", "showwork", "report", "--help"], capture_output=True, text=True, check=True).stdout
    for option in ("--no-title", "--figsize", "--font-size", "--style", "--score-label", "pgf"):
        assert option in out


def test_curves_choose_what_the_tuning_curve_figures_draw(report, tmp_path):
    """Issue 34 item 1: the median and its band by default (Lourie et al.'s figures); V, U and the mean band on request."""
    from showwork.report.figures import report_drawings

    def drawn(style):
        with style.rc_context():
            figure = dict(report_drawings(report, style=style))["tuning_curves"]()
        return {gid.split(":")[0] for gid in (a.get_gid() for a in figure.findobj()) if isinstance(gid, str)}

    assert FigureStyle().curves == ("median",)
    default = drawn(FigureStyle())
    assert {"median", "median-band"} <= default and not {"v", "u", "mean-lower"} & default
    every = FigureStyle(curves=["u", "MEAN", "median", "v"])
    assert every.curves == ("median", "v", "u", "mean")  # each once, in one order
    assert {"median", "v", "u", "mean-lower", "mean-upper"} <= drawn(every)
    assert not {"median", "median-band"} & drawn(FigureStyle(curves=("v",)))
    for bad in ((), ("median", "w"), "bands", (1,)):
        with pytest.raises(InputError, match="--curves must be a comma list of median, v, u, mean"):
            FigureStyle(curves=bad)


def test_the_curves_option_of_the_command(report, tmp_path, capsys):
    results = tmp_path / "results.csv"
    results.write_text("score\n" + "\n".join(f"{0.5 + 0.01 * i}" for i in range(20)) + "\n")
    code, out, err = run_cli(capsys, "report", results, "--score", "score", "--a", "0", "--b", "1", "--curves", "median,x",
                             "--out", tmp_path / "bad", "--no-mlflow")
    assert code == 2 and "--curves must be a comma list of median, v, u, mean (got median, x)" in err
    assert not (tmp_path / "bad").exists()
    code, out, err = run_cli(capsys, "report", results, "--score", "score", "--a", "0", "--b", "1", "--curves", "median,u,v",
                             "--formats", "svg", "--out", tmp_path / "good", "--no-mlflow")
    assert code == 0, err
    assert "each family's median with its simultaneous band, V and U." in (tmp_path / "good" / "report.md").read_text()
    svg = (tmp_path / "good" / "figures" / "tuning_curves.svg").read_text()
    assert 'id="v:results"' in svg and 'id="u:results"' in svg and 'id="mean-lower:results"' not in svg

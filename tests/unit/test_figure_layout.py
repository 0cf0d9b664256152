"""Issue 34 item 1: every figure kind holds its layout at every documented size.

At the default size, one column (3.3 × 2.4 in, 8 pt) and two columns (6.8 × 2.6 in, 8 pt), with 1
to 8 families whose names run to 40 characters: no text outside the canvas, no two texts
overlapping (measured with matplotlib's renderer on the figure as it is saved), each family in the
legend once.
"""

from __future__ import annotations

import csv
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from showwork.report import ReportSettings, analyze
from showwork.report.figures import FigureStyle, lay_out_figure, layout_problems, report_drawings
from showwork.report.inputs import from_results_file

SIZES = {
    "default": FigureStyle(),
    "one column": FigureStyle(figsize=(3.3, 2.4), font_size=8),
    "two columns": FigureStyle(figsize=(6.8, 2.6), font_size=8),
}
NAMES = (
    "deberta-v3-base-mnli-lr-sweep-ablation01",
    "ELECTRA & T5 #2 with_underscore {x} 50% $",
    "deberta-v3-base-mnli-lr-sweep-ablation02",
    "BERT",
    "LSTM + attention (GloVe 840B, 300 d) ≤ ×",
    "roberta-large",
    "x" * 40,
    "\\immediate\\write18{touch X} ~ ^ _",
)
FAMILY_LEGEND_KINDS = ("tuning_curves", "cdfs", "comparison", "scores_by_parameter")


def _report(tmp_path: Path, families: int, **settings):
    """``families`` families of 40 trials with long names, four hyperparameters (log, linear, categorical, integer),
    runtimes, compared per trial and at equal cost."""
    rng = np.random.default_rng(families)
    rows = []
    for f in range(families):
        for _ in range(40):
            lr = 10 ** rng.uniform(-5, -1)
            score = 0.6 + 0.04 * f / families + 0.3 * np.exp(-((np.log10(lr) + 3) ** 2)) + rng.normal(0, 0.02)
            rows.append({"family": NAMES[f][:40], "score": min(score, 1.0), "runtime": rng.uniform(10, 100), "lr": lr,
                         "dropout": rng.uniform(0, 0.5), "activation": rng.choice(["relu", "gelu", "tanh-with-a-long-name"]),
                         "layers": int(rng.integers(1, 10))})
    rows[3]["score"] = ""  # a failed trial: the parameters' figure marks it
    path = tmp_path / "results.csv"
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    found = from_results_file(path, "score", runtime="runtime", params=["lr", "dropout", "activation", "layers"], group="family",
                              sampler="random")
    return analyze(found, ReportSettings(a=0, b=1, cost="runtime", **settings))


@pytest.mark.slow
@pytest.mark.parametrize("families", range(1, 9))
def test_every_figure_fits_at_every_documented_size(tmp_path, families):
    report = _report(tmp_path, families)
    names = [f.name for f in report.families]
    problems: list[str] = []
    drawn: set[str] = set()
    for size, style in SIZES.items():
        with style.rc_context():
            for kind, draw in report_drawings(report, style=style, title_note="not i.i.d.: a long note on the title"):
                figure = draw()
                if figure is None:
                    continue
                drawn.add(kind.split("_page")[0])
                lay_out_figure(figure)
                problems += [f"{size}, {kind}: {problem}" for problem in layout_problems(figure)]
                if kind.startswith(FAMILY_LEGEND_KINDS) and not kind.startswith(("tuning_curves_page", "tuning_curves_time_page",
                                                                                 "cdfs_page")):
                    for name in names:
                        entries = [t for legend in figure.legends for t in legend.get_texts() if t.get_gid() == f"legend:{name}"]
                        if len(entries) != 1:
                            problems.append(f"{size}, {kind}: {name!r} is in the legend {len(entries)} times")
    assert not problems, "\n".join(problems)
    expected = {"tuning_curves", "tuning_curves_time", "cdfs", "scores_by_parameter"}
    expected |= {"comparison", "comparison_cost"} if 2 <= families <= 6 else set()
    expected |= {"summary"} if families > 6 else set()
    assert expected <= drawn


@pytest.mark.slow
@pytest.mark.parametrize("families", (2, 6))
def test_every_curve_fits_too(tmp_path, families):
    """``--curves median,v,u,mean``: the figures that draw them still fit."""
    report = _report(tmp_path, families)
    problems = []
    for size, style in SIZES.items():
        with style.rc_context():
            every = dataclasses.replace(style, curves=("median", "v", "u", "mean"))
            for kind, draw in report_drawings(report, style=every):
                if not kind.startswith("tuning_curves"):
                    continue
                figure = draw()
                lay_out_figure(figure)
                problems += [f"{size}, {kind}: {problem}" for problem in layout_problems(figure)]
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_the_extrapolation_figure_fits_too(tmp_path):
    """``--extrapolate K`` (issue 38): its figures, one per family, fit at every documented size, each naming its family."""
    from showwork.statistics.extrapolation import Extrapolation

    report = _report(tmp_path, 3, extrapolate=400)
    drawn = [f.name for f in report.families if isinstance(f.extrapolation, Extrapolation)]
    assert drawn  # the figure has something to draw
    problems = []
    for size, style in SIZES.items():
        with style.rc_context():
            figures = [(kind, draw()) for kind, draw in report_drawings(report, style=style) if kind.startswith("extrapolation_")]
            assert len(figures) == len(drawn)  # one per family extrapolated
            for (kind, figure), name in zip(figures, drawn):
                lay_out_figure(figure)
                problems += [f"{size}, {kind}: {problem}" for problem in layout_problems(figure)]
                entries = [t for legend in figure.legends for t in legend.get_texts() if t.get_gid() == f"legend:{name}"]
                if len(entries) != 1:
                    problems.append(f"{size}, {kind}: {name!r} is in the legend {len(entries)} times")
    assert not problems, "\n".join(problems)


def test_layout_problems_finds_a_legend_off_the_canvas():
    """The check itself: a legend wider than its figure, and two texts on one spot, are found."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(3.3, 2.4), dpi=150, layout="constrained")
    FigureCanvasAgg(figure)
    ax = figure.add_subplot()
    ax.plot([0, 1], label="a family name much longer than a column is wide, as papers have them " * 2)
    figure.legend(loc="outside lower center")
    figure.canvas.draw()
    assert any("runs outside the canvas" in p for p in layout_problems(figure))
    figure = Figure(figsize=(3.3, 2.4), dpi=150)
    FigureCanvasAgg(figure)
    figure.text(0.5, 0.5, "one text")
    figure.text(0.5, 0.5, "another text")
    figure.canvas.draw()
    assert any("overlap" in p for p in layout_problems(figure))


@pytest.mark.slow
def test_a_figure_too_small_for_its_texts_says_so_once_and_is_still_written(tmp_path):
    """Within the limits of --figsize and --font-size, 1 × 1 inches at 72 pt holds no plot: one warning per figure
    that names it, not matplotlib's warning at every layout, and the files are written."""
    import warnings

    from showwork.report.figures import report_figures

    report = _report(tmp_path, 2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        written = report_figures(report, tmp_path / "out", formats=("png",), style=FigureStyle(figsize=(1, 1), font_size=72))
    messages = [str(w.message) for w in caught]
    assert "tuning_curves" in written and all(paths[0].is_file() for paths in written.values())
    assert "figure tuning_curves: its texts leave its plots no room at 1 × 1 inches and 72 pt, and some overlap; a larger"\
        " --figsize or a smaller --font-size lays it out" in messages
    assert not [m for m in messages if "collapsed to zero" in m]
    assert len(messages) == len(set(messages)) <= len(written)


def test_a_word_too_long_for_its_line_breaks_after_a_joint():
    """A metric's name on a short axis: "matched_acc_" / "best", not "matched_ac" / "c_best" (the y label of the
    extrapolation figure at one column); a word without joints still breaks where it must."""
    from showwork.report.figures.fitting import wrap_text

    assert wrap_text("matched_acc_best", 12, len) == "matched_acc_\nbest"
    assert wrap_text("val-loss/epoch", 10, len) == "val-loss/\nepoch"
    assert wrap_text("abcdefghij", 4, len) == "abcd\nefgh\nij"


@pytest.mark.slow
def test_the_extrapolation_figure_takes_the_budget_axis_asked_and_runs_a_long_interval_off_the_axis(tmp_path):
    """--linear-x / --log-x reach the extrapolation figure (its default goes by K); an asymptote interval longer than
    the band runs to the edge with a triangle instead of squashing the curves (issue 38's figure at a column's width)."""
    report = _report(tmp_path, 1, extrapolate=400)
    e = report.families[0].extrapolation
    scales = {}
    for asked in (None, False, True):
        (figure,) = [draw() for kind, draw in report_drawings(report, log_x=asked) if kind.startswith("extrapolation_")]
        ax = figure.axes[0]
        scales[asked] = ax.get_xscale()
        lo, hi = ax.get_ylim()
        assert lo > e.asymptote.lower  # this search's interval reaches far below its curves: not in the y range
        assert [line.get_gid() for line in ax.lines if str(line.get_gid()).startswith("asymptote-interval-clipped")]
    assert scales == {None: "log", False: "linear", True: "log"}  # K = 400 > LOG_X_ABOVE: log by default

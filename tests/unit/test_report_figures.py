"""The report's figures (showwork/report/figures.py): what is drawn equals what the analysis computed."""

from __future__ import annotations

import csv
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from matplotlib.colors import to_rgba

import showwork
from showwork.errors import InputError
from showwork.report import FamilyResults, ReportSettings, analyze
from showwork.report.figures import (
    EVIDENCE_COLOURS,
    PALETTE,
    cdf_figure,
    comparison_figure,
    report_figures,
    save_figure,
    tuning_curve_figure,
)
from showwork.report.inputs import from_results_file
from showwork.report.tables import report_tables
from showwork.statistics import EVIDENCE_LEVELS, budget_cost

from helpers import deberta_families, load_column

EVERY_CURVE = ("median", "v", "u", "mean")
HEADERS = {"png": b"\x89PNG\r\n\x1a\n", "pdf": b"%PDF"}


def artist(figure, gid):
    """The one artist of ``figure`` with this gid."""
    found = figure.findobj(lambda a: a.get_gid() == gid)
    assert len(found) == 1, f"{len(found)} artists with gid {gid!r}"
    return found[0]


def has_artist(figure, gid) -> bool:
    return bool(figure.findobj(lambda a: a.get_gid() == gid))


@pytest.fixture(scope="module")
def deberta_report(search_results_dir):
    return analyze(deberta_families(search_results_dir), ReportSettings(a=0, b=1))


@pytest.fixture(scope="module")
def reuters(search_results_dir):
    """MLP (145 trials) and LSTM (152): the grid runs past the MLP's n; the medians cross."""
    families = (from_results_file(search_results_dir / "reuters_mlp_f1.csv", "f1", label="MLP")
                + from_results_file(search_results_dir / "reuters_lstm_f1.csv", "f1", label="LSTM"))
    return analyze(families, ReportSettings(a=0, b=1))


@pytest.fixture(scope="module")
def imagenet(search_results_dir):
    """AlexNet and ConvNeXt with their runtimes; unbounded support (infinite band ends)."""
    return analyze([
        f
        for name, label in (("alexnet_imagenet_tuning.csv", "AlexNet"), ("convnext-tiny_imagenet_tuning.csv", "ConvNeXt"))
        for f in from_results_file(search_results_dir / name, "top1_best", runtime="train_time_s", label=label)
    ])


REAL_SEARCH = Path(__file__).resolve().parents[2] / "experiments" / "results" / "real_search" / "results"


@pytest.fixture(scope="module")
def real_search_results():
    """The two real 50-trial searches on SST-5 (experiments/results/real_search): runtimes ~1.5 s and ~1 min."""
    return {
        name: from_results_file(REAL_SEARCH / f"sst5-{stem}-study.csv", "score", runtime="runtime_s", label=name)[0]
        for name, stem in (("logreg", "logreg"), ("cnn", "cnn-cpu"))
    }


@pytest.fixture(scope="module")
def sst5(real_search_results):
    return analyze([real_search_results["logreg"], real_search_results["cnn"]], ReportSettings(a=0, b=1))


def test_report_figures_writes_every_format_with_valid_headers(reuters, tmp_path):
    out = report_figures(reuters, tmp_path / "nested" / "figures")
    # No runtimes: no time axis; two families: a comparison.
    assert list(out) == ["tuning_curves", "cdfs", "comparison"]
    for name, paths in out.items():
        assert [p.name for p in paths] == [f"{name}.{fmt}" for fmt in ("png", "svg", "pdf")]
        for path in paths:
            head = path.read_bytes()[:1000]
            assert head.startswith(HEADERS[path.suffix[1:]]) if path.suffix != ".svg" else b"<svg" in head, path


def test_the_same_report_gives_identical_files(reuters, tmp_path):
    figure = comparison_figure(reuters)
    once = [p.read_bytes() for p in save_figure(figure, tmp_path / "a", "comparison")]
    again = [p.read_bytes() for p in save_figure(figure, tmp_path / "b", "comparison")]
    redrawn = [p.read_bytes() for p in save_figure(comparison_figure(reuters), tmp_path / "c", "comparison")]
    assert once == again == redrawn
    assert b"<dc:date>" not in once[1] and b"CreationDate" not in once[2] and b"Software" not in once[0]


def test_unknown_format_or_axis_is_an_input_error(reuters, tmp_path):
    figure = cdf_figure(reuters)
    with pytest.raises(InputError, match="jpeg"):
        save_figure(figure, tmp_path, "x", formats=("png", "jpeg"))
    with pytest.raises(InputError, match="jpeg"):
        report_figures(reuters, tmp_path, formats=("jpeg",))
    with pytest.raises(InputError, match="days"):
        tuning_curve_figure(reuters, axis="days")
    assert not any(tmp_path.iterdir())
    assert [p.name for p in save_figure(figure, tmp_path / "new", "x", formats=("svg",))] == ["x.svg"]


def test_median_line_and_band_are_the_curve(deberta_report):
    figure = tuning_curve_figure(deberta_report)
    ax = figure.axes[0]
    lo, hi = ax.get_ylim()
    for f in deberta_report.families:
        c = f.curve
        line = artist(figure, f"median:{f.name}")
        np.testing.assert_array_equal(line.get_xdata(), c.k)
        np.testing.assert_array_equal(line.get_ydata(), c.median)
        band = artist(figure, f"median-band:{f.name}")
        assert "80% LD-HD band" in band.get_label()
        vertices = np.concatenate([p.vertices for p in band.get_paths()])
        for k, lower, upper in zip(c.k, c.median_lower, c.median_upper):
            ys = vertices[vertices[:, 0] == k, 1]
            # With support [0, 1] every band end is finite: the polygon spans it exactly.
            assert ys.min() == pytest.approx(lower) and ys.max() == pytest.approx(upper)
        # The data cannot bound the upper band at large k (it is b = 1): it runs off the plot.
        assert c.median_upper[-1] == 1.0 and hi < 1.0
        assert lo <= c.median.min() and c.median.max() <= hi
    title = ax.get_title()
    assert "80%" in title and "LD-HD" in title
    assert ax.get_xlabel() == "budget k (trials)" and ax.get_ylabel() == "matched_acc_best"


def test_v_u_mean_bands_and_informative_budget(reuters, imagenet):
    figure = tuning_curve_figure(reuters, curves=EVERY_CURVE)
    for f in reuters.families:
        c = f.curve
        np.testing.assert_array_equal(artist(figure, f"v:{f.name}").get_ydata(), c.v)
        u = np.asarray(artist(figure, f"u:{f.name}").get_ydata(), dtype=float)
        defined = c.k <= c.n
        assert np.isfinite(u[defined]).all() and np.isnan(u[~defined]).all()
        np.testing.assert_array_equal(u[defined], c.u[defined])
        # Support [0, 1]: the mean-curve band is drawn.
        np.testing.assert_array_equal(artist(figure, f"mean-lower:{f.name}").get_ydata(), c.mean_lower)
        np.testing.assert_array_equal(artist(figure, f"mean-upper:{f.name}").get_ydata(), c.mean_upper)
        marker = artist(figure, f"informative:{f.name}")
        assert np.all(np.asarray(marker.get_xdata()) == f.advice.informative_k)
    mlp = reuters.family("MLP").curve
    assert mlp.n < reuters.budgets[-1]  # so the U check above saw undefined budgets
    # Unbounded support: no mean band; infinite band ends are drawn at the edge of the plot.
    figure = tuning_curve_figure(imagenet)
    lo, hi = figure.axes[0].get_ylim()
    for f in imagenet.families:
        assert not has_artist(figure, f"mean-lower:{f.name}")
        c = f.curve
        assert np.isinf(c.median_upper).any()
        vertices = np.concatenate([p.vertices for p in artist(figure, f"median-band:{f.name}").get_paths()])
        assert np.isfinite(vertices).all()
        top = {float(k): vertices[vertices[:, 0] == k, 1].max() for k in c.k}
        for k, upper in zip(c.k, c.median_upper):
            assert top[float(k)] == pytest.approx(hi if math.isinf(upper) else upper)


def test_time_axis_plots_expected_compute(imagenet, tmp_path):
    figure = tuning_curve_figure(imagenet, axis="time")
    assert figure.axes[0].get_xlabel() == "expected compute (hours, k × mean runtime)"
    for f in imagenet.families:
        np.testing.assert_allclose(artist(figure, f"median:{f.name}").get_xdata(), f.curve.cost("hours"))
        expected = budget_cost(f.advice.informative_k, f.curve.mean_runtime_s, "hours")
        assert np.allclose(artist(figure, f"informative:{f.name}").get_xdata(), expected)
    figure = tuning_curve_figure(imagenet, axis="time", cost_unit="minutes", log_x=True)
    assert figure.axes[0].get_xscale() == "log"
    for f in imagenet.families:
        np.testing.assert_allclose(artist(figure, f"median:{f.name}").get_xdata(), f.curve.cost("minutes"))
    out = report_figures(imagenet, tmp_path, formats=("svg",))
    assert list(out) == ["tuning_curves", "tuning_curves_time", "cdfs", "comparison"]


def test_time_axis_without_runtimes_names_the_family(search_results_dir, tmp_path):
    families = (from_results_file(search_results_dir / "alexnet_imagenet_tuning.csv", "top1_best", runtime="train_time_s", label="AlexNet")
                + from_results_file(search_results_dir / "reuters_mlp_f1.csv", "f1", label="MLP"))
    report = analyze(families)
    with pytest.raises(InputError, match=r"^MLP .*no runtimes"):
        tuning_curve_figure(report, axis="time")
    with pytest.raises(InputError, match="MLP"):
        report_figures(report, tmp_path, axis="time")
    assert "tuning_curves_time" not in report_figures(report, tmp_path, formats=("svg",))


def test_cdf_figure_draws_the_band_of_the_scores_used(reuters):
    figure = cdf_figure(reuters)
    for f in reuters.families:
        band = f.curve.band
        ecdf = artist(figure, f"ecdf:{f.name}")
        x, y = np.asarray(ecdf.get_xdata()), np.asarray(ecdf.get_ydata())
        np.testing.assert_array_equal(x[1:-1], band.values)
        # After the i-th smallest score the step is at i / n.
        np.testing.assert_allclose(y[1:-1], np.arange(1, band.n + 1) / band.n)
        vertices = np.concatenate([p.vertices for p in artist(figure, f"cdf-band:{f.name}").get_paths()])
        # At a score y the step band jumps from its value below y to its value at y (ties: all copies at once).
        for value in np.unique(band.values):
            ys = vertices[vertices[:, 0] == value, 1]
            below, at = np.searchsorted(band.values, value, "left"), np.searchsorted(band.values, value, "right")
            assert ys.min() == pytest.approx(band.lower[below]) and ys.max() == pytest.approx(band.upper[at])


def strips(figure, pair_name):
    """The drawn evidence segments of one pair: (x0, x1, level), left to right."""
    out = []
    for level in EVIDENCE_LEVELS:
        gid = f"evidence:{pair_name}:{level}"
        if not has_artist(figure, gid):
            continue
        collection = artist(figure, gid)
        assert tuple(collection.get_facecolor()[0]) == pytest.approx(to_rgba(EVIDENCE_COLOURS[level]))
        for path in collection.get_paths():
            out.append((path.vertices[:, 0].min(), path.vertices[:, 0].max(), level))
    return sorted(out)


@pytest.mark.parametrize("name", ["deberta_report", "reuters"])
def test_comparison_strips_are_the_evidence_ranges(name, request):
    report = request.getfixturevalue(name)
    figure = comparison_figure(report)
    pair = report.pairs[0]
    c = pair.comparison
    pair_name = f"{c.a} vs {c.b}"
    if name == "reuters":  # so that every branch below is exercised
        assert c.crossovers and "none" in c.levels
    drawn = strips(figure, pair_name)
    assert [level for _, _, level in drawn] == [r.level for r in c.ranges]
    # The segments tile the budget axis, and each covers exactly the budgets of its range.
    assert drawn[0][0] == c.k[0] and drawn[-1][1] == pytest.approx(c.k[-1])
    for (x0, x1, _), (y0, _, _) in zip(drawn, drawn[1:]):
        assert x1 == pytest.approx(y0)
    for (x0, x1, _), r in zip(drawn, c.ranges):
        covered = c.k[(c.k >= x0) & (c.k <= x1)]
        np.testing.assert_array_equal(covered, c.k[(c.k >= r.k_start) & (c.k <= r.k_end)])
    assert len(set(EVIDENCE_COLOURS.values())) == 4
    # The top panel draws the medians (the one drawing helper of the tuning-curve figure).
    for f in report.families:
        np.testing.assert_array_equal(artist(figure, f"median:{f.name}").get_ydata(), f.curve.median)
    if c.crossovers:
        segments = artist(figure, f"crossovers:{pair_name}").get_segments()
        assert sorted(s[0][0] for s in segments) == list(c.crossovers)
    else:
        assert not has_artist(figure, f"crossovers:{pair_name}")
    assert pair.informative_k < c.k[-1]
    assert np.all(np.asarray(artist(figure, f"informative:{pair_name}").get_xdata()) == pair.informative_k)
    hatched = artist(figure, f"uninformative:{pair_name}")
    assert hatched.get_hatch() == "///"
    assert hatched.get_x() == pair.informative_k and hatched.get_x() + hatched.get_width() == pytest.approx(c.k[-1])


def test_comparison_needs_two_families(search_results_dir, tmp_path):
    report = analyze(from_results_file(search_results_dir / "reuters_mlp_f1.csv", "f1"), ReportSettings(a=0, b=1))
    assert comparison_figure(report) is None
    assert list(report_figures(report, tmp_path, formats=("png",))) == ["tuning_curves", "cdfs"]


def test_log_x_by_default_past_100_budgets(reuters, deberta_report, sst5):
    """Issue 17 item 6: log x when the largest budget is over 100 (reuters 152, DeBERTa 1024), else linear."""
    assert reuters.budgets[-1] > 100 and sst5.budgets[-1] <= 100
    for report in (reuters, deberta_report):
        assert tuning_curve_figure(report).axes[0].get_xscale() == "log"
        assert all(ax.get_xscale() == "log" for ax in comparison_figure(report).axes)
        assert tuning_curve_figure(report, log_x=False).axes[0].get_xscale() == "linear"
        assert all(ax.get_xscale() == "linear" for ax in comparison_figure(report, log_x=False).axes)
    assert tuning_curve_figure(sst5).axes[0].get_xscale() == "linear"
    assert tuning_curve_figure(sst5, log_x=True).axes[0].get_xscale() == "log"
    # Powers of ten labelled as plain integers: 1, 10, 100 (not 10⁰, 10¹).
    ax = comparison_figure(reuters).axes[-1]
    figure_draw(ax.figure)
    assert visible_ticks(ax) == [1, 10, 100]
    lo, hi = ax.get_xlim()
    assert [t.get_text() for t in ax.get_xticklabels() if lo <= t.get_position()[0] <= hi] == ["1", "10", "100"]


def figure_draw(figure):
    figure.canvas.draw()


def visible_ticks(ax) -> list[float]:
    lo, hi = ax.get_xlim()
    return [float(t) for t in ax.get_xticks() if lo <= t <= hi]


def first_trials(search_results_dir, n):
    """The first n trials of the Reuters MLP and LSTM: a grid of budgets 1..n."""
    families = []
    for file, label in (("reuters_mlp_f1.csv", "MLP"), ("reuters_lstm_f1.csv", "LSTM")):
        family = from_results_file(search_results_dir / file, "f1", label=label)[0]
        families.append(family.first_trials(n))
    return analyze(families, ReportSettings(a=0, b=1))


@pytest.mark.parametrize("n", [4, 5, 8, 13, 50])
def test_budget_ticks_are_integers(n, search_results_dir):
    """Issue 17 item 6: a budget axis never has a tick at 2.5 or 7.5, whatever the number of trials."""
    report = first_trials(search_results_dir, n)
    assert report.budgets[-1] == n
    for figure in (tuning_curve_figure(report), comparison_figure(report)):
        figure_draw(figure)
        for ax in figure.axes:
            ticks = visible_ticks(ax)
            assert len(ticks) >= 2 and all(t.is_integer() for t in ticks), (n, ticks)


@pytest.mark.parametrize(("families", "unit"), [(("logreg",), "seconds"), (("logreg", "cnn"), "minutes")])
def test_compute_axis_picks_its_unit_by_size(families, unit, real_search_results):
    """Issue 17 item 6: 50 logistic-regression trials (about 1.5 s each) in seconds, the CNN's (about 1 min) in minutes."""
    report = analyze([real_search_results[name] for name in families], ReportSettings(a=0, b=1))
    largest = max(float(f.curve.k[-1]) * f.curve.mean_runtime_s for f in report.families)
    assert (largest < 120) == (unit == "seconds")
    figure = tuning_curve_figure(report, axis="time")
    ax = figure.axes[0]
    assert ax.get_xlabel() == f"expected compute ({unit}, k × mean runtime)"
    for f in report.families:
        np.testing.assert_allclose(artist(figure, f"median:{f.name}").get_xdata(), f.curve.cost(unit))
    # The largest compute reads as a number of at least 1 (never 0.0005 h), and less than 120 of the unit.
    assert 1 <= largest / {"seconds": 1, "minutes": 60}[unit] < 120
    # An explicit unit is kept.
    assert tuning_curve_figure(report, axis="time", cost_unit="hours").axes[0].get_xlabel().startswith("expected compute (hours")


def test_uninformative_budgets_are_shaded_and_labelled(sst5, reuters):
    """Issue 17 item 5: the budgets past the informative budget are shaded, with the label that says why."""
    (k,) = {f.advice.informative_k for f in sst5.families}  # 50 trials each: one informative budget
    for figure in (tuning_curve_figure(sst5), comparison_figure(sst5)):
        region = artist(figure, "uninformative-region")
        assert region.get_x() == pytest.approx(k) and region.get_x() + region.get_width() == pytest.approx(sst5.budgets[-1])
        label = artist(figure, "uninformative-label")
        assert [line.strip() for line in label.get_text().split("\n")] == [f"bands uninformative past k ≈ {k:.1f}:", "more trials needed"]
        assert label.get_position()[0] == pytest.approx(k) and label.get_horizontalalignment() == "left"
    # Two families with different informative budgets: each named, the shade from the smaller.
    figure = tuning_curve_figure(reuters)
    ks = {f.name: f.advice.informative_k for f in reuters.families}
    assert ks["MLP"] < ks["LSTM"]
    text = artist(figure, "uninformative-label").get_text()
    assert f"k ≈ {ks['MLP']:.0f} (MLP), k ≈ {ks['LSTM']:.0f} (LSTM)" in text and "more trials needed" in text
    assert artist(figure, "uninformative-region").get_x() == pytest.approx(ks["MLP"])
    assert artist(figure, "uninformative-region:every").get_x() == pytest.approx(ks["LSTM"])
    assert "bands uninformative" in [h.get_text() for h in figure.legends[0].get_texts()]


def test_y_range_is_the_informative_part_and_clipped_band_ends_are_marked(sst5, imagenet):
    """Issue 17 item 5: the y range holds the curves and the bands up to the informative budget; band ends
    past it are marked where they leave the plot."""
    for report in (sst5, imagenet):
        figure = tuning_curve_figure(report, curves=EVERY_CURVE)
        lo, hi = figure.axes[0].get_ylim()
        for f in report.families:
            c = f.curve
            inside = c.k <= f.advice.informative_k
            for series in (c.median, c.v, c.median_lower[inside], c.median_upper[inside]):
                shown = series[np.isfinite(series) & (series != c.band.a) & (series != c.band.b)]
                assert lo <= shown.min() and shown.max() <= hi
            # Past the informative budget the upper band leaves the plot (the score's bound, or +inf).
            assert (c.median_upper[~inside] > hi).all()
            expected = set()
            for series in (c.median_lower, c.median_upper, c.mean_lower, c.mean_upper):
                if series is None:
                    continue
                for outside, edge in ((series > hi, hi), (series < lo, lo)):
                    starts = outside & ~np.concatenate([[False], outside[:-1]])
                    expected |= {(float(x), edge) for x in c.k[starts]}
            drawn = set()
            for kind in ("clipped", "mean-clipped"):
                for side in ("top", "bottom"):
                    for marker in figure.findobj(lambda a, g=f"{kind}:{f.name}:{side}": a.get_gid() == g):
                        drawn |= {(float(x), float(y)) for x, y in zip(marker.get_xdata(), marker.get_ydata())}
                        assert not marker.get_clip_on()
            assert drawn == expected and any(x > f.advice.informative_k for x, _ in drawn)
        assert "band runs past the axis" in [t.get_text() for t in figure.legends[0].get_texts()]


def test_overlapping_bands_stay_readable_in_the_comparison(sst5):
    """Issue 17 item 7: each band a light fill, outlined, and hatched its own way (no blended purple block)."""
    figure = comparison_figure(sst5)
    hatches = []
    for i, f in enumerate(sst5.families):
        c = f.curve
        fill = artist(figure, f"median-band:{f.name}")
        assert fill.get_alpha() <= 0.15
        hatch = artist(figure, f"median-band-hatch:{f.name}")
        assert hatch.get_hatch() and tuple(hatch.get_edgecolor()[0][:3]) == pytest.approx(to_rgba(PALETTE[i])[:3])
        hatches.append(hatch.get_hatch())
        lo, hi = figure.axes[0].get_ylim()
        for side, values in (("lower", c.median_lower), ("upper", c.median_upper)):
            line = artist(figure, f"median-{side}:{f.name}")
            np.testing.assert_array_equal(line.get_ydata(), np.clip(values, -np.inf, np.inf))
            assert to_rgba(line.get_color())[:3] == pytest.approx(to_rgba(PALETTE[i])[:3])
    assert len(set(hatches)) == len(hatches)
    # The two bands do overlap somewhere: the case the hatching is for.
    a, b = (f.curve for f in sst5.families)
    assert (np.minimum(a.median_upper, b.median_upper) > np.maximum(a.median_lower, b.median_lower)).any()


def test_evidence_is_worded_no_evidence(reuters):
    """Issue 17 item 7: "no evidence", never "none evidence", in the figure's key and in the tables."""
    figure = comparison_figure(reuters)
    texts = [t.get_text() for t in figure.findobj(lambda a: hasattr(a, "get_text"))]
    assert "no evidence" in texts and not any("none evidence" in t for t in texts)
    assert "none" in reuters.pairs[0].comparison.levels
    cells = [cell for t in report_tables(reuters) for row in t.rows for cell in row] + [n for t in report_tables(reuters) for n in t.notes]
    assert "no evidence" in cells and not any("none evidence" in c or c == "none" for c in cells)


def test_minimizing_report_draws(search_results_dir, tmp_path):
    families = []
    for name, label in (("reuters_mlp_f1.csv", "MLP"), ("reuters_lstm_f1.csv", "LSTM")):
        path = tmp_path / f"{label}.csv"
        with path.open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(["error"])
            writer.writerows([[-x] for x in load_column(search_results_dir / name, "f1")])
        families += from_results_file(path, "error", minimize=True, label=label)
    report = analyze(families)
    assert report.minimize
    out = report_figures(report, tmp_path / "figures", formats=("svg",), log_x=True)
    assert list(out) == ["tuning_curves", "cdfs", "comparison"]
    figure = tuning_curve_figure(report)
    assert "lower is better" in figure.axes[0].get_ylabel()
    for f in report.families:
        np.testing.assert_array_equal(artist(figure, f"median:{f.name}").get_ydata(), f.curve.median)
        vertices = np.concatenate([p.vertices for p in artist(figure, f"median-band:{f.name}").get_paths()])
        assert np.isfinite(vertices).all()
    drawn = strips(comparison_figure(report), "MLP vs LSTM")
    assert [level for _, _, level in drawn] == [r.level for r in report.pairs[0].comparison.ranges]


def test_matplotlib_loads_with_the_figures_not_with_the_rest_of_the_report():
    """showwork best, compare and curve import the report's tables, wording or analysis: matplotlib (0.5 s) loads only
    with the figures, when a report is written (showwork.report's names load their modules when first used)."""
    code = ("import sys, showwork.report, showwork.report.analysis, showwork.report.tables, showwork.report.wording;"
            " assert 'matplotlib' not in sys.modules, 'loaded without drawing';"
            " from showwork.report import write_report; assert 'matplotlib' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(showwork.__file__).parent.parent)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)) | st.sampled_from(list("\x1b\x07\r\n<>&'\"$\\{}%#_^~")),
                    min_size=1, max_size=30).filter(str.strip))
@example(name="0\n")  # XML reads a line break in an id as a space: ids are one line
def test_an_svg_figure_is_valid_xml_whatever_a_family_is_named(tmp_path, name):
    """Issue 34 item 2, the SVG target: a family's name goes into texts and ids; the file parses, and holds no
    character XML forbids (control characters are drawn as their visible escapes)."""
    import xml.etree.ElementTree as ElementTree

    from showwork.escaping import visible_text

    scores = np.linspace(0.5, 0.9, 12)
    report = analyze([FamilyResults(name, scores, ("finished",) * 12, "acc")], ReportSettings(a=0, b=1))
    (path,) = save_figure(cdf_figure(report), tmp_path, "cdfs", ("svg",))
    data = path.read_bytes()
    ElementTree.fromstring(data)
    assert not re.search(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]", data)
    root = ElementTree.fromstring(data)
    ids = {element.get("id") for element in root.iter() if element.get("id")}
    assert f"ecdf:{visible_text(name, one_line=True)}" in ids

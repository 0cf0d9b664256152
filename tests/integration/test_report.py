"""``showwork report``: the numbers, the verdicts, the tables, the documents and the command.

On the papers' real random-search results: DeBERTaV3 beats DeBERTa on MultiNLI with strong evidence
at every budget the 1,024 trials can speak about; 25 trials of the Reuters MLP and LSTM leave the
comparison unresolved beyond the few budgets they bound. Table cells are checked against
:mod:`showwork.statistics` called directly, so a report can never drift from the statistics.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from showwork.errors import InputError
from showwork.escaping import latex_text
from showwork.report import ReportSettings, analyze, from_results_file, write_report
from showwork.report.analysis import budget_grid, next_round_budget, table_budgets
from showwork.report.latex import latex_table
from showwork.report.render import html_table, markdown_table
from showwork.report.tables import Table, format_number, report_tables, tuning_curve_table
from showwork.statistics import budgets_to_reach, compare_curves, informative_budget, trials_needed, tuning_curve

from helpers import deberta_families, run_cli


def reuters(search_results_dir, n=None):
    out = []
    for name, file in (("MLP", "reuters_mlp_f1.csv"), ("LSTM", "reuters_lstm_f1.csv")):
        family = from_results_file(search_results_dir / file, "f1", label=name)[0]
        if n is not None:
            family = family.first_trials(n)
        out.append(family)
    return out


@pytest.fixture(scope="module")
def deberta_report(search_results_dir):
    return analyze(deberta_families(search_results_dir), ReportSettings(a=0.0, b=1.0, targets=(0.88, 0.9)))


# ---------------------------------------------------------------- the verdicts of the issue


def test_debertav3_beats_deberta_with_strong_evidence_at_every_informative_budget(deberta_report):
    (pair,) = deberta_report.pairs
    informative = informative_budget(1024, 0.8, "ld-hd")
    assert pair.informative_k == pytest.approx(informative)
    inside = pair.comparison.k <= informative
    assert inside.sum() >= 140
    assert set(pair.comparison.levels[inside]) == {"strong"}
    assert set(pair.comparison.favoured[inside]) == {-1}  # b = DeBERTaV3
    assert np.array_equal(pair.resolved_budgets, pair.comparison.k[inside])
    assert pair.sentences()[0] == "k = 1–140: strong evidence that DeBERTaV3 beats DeBERTa (resolved; false-resolved chance ≤ 0.36)."


def test_twenty_five_reuters_trials_leave_the_comparison_unresolved(search_results_dir):
    report = analyze(reuters(search_results_dir, 25), ReportSettings(a=0.0, b=1.0))
    (pair,) = report.pairs
    assert pair.informative_k == pytest.approx(informative_budget(25))
    beyond = pair.comparison.k > pair.informative_k
    assert beyond.sum() >= 20
    # Beyond what 25 trials can bound, no budget gets more than weak evidence: unresolved.
    assert set(pair.comparison.levels[beyond]) <= {"none", "weak"}
    assert pair.resolved_budgets.max() <= pair.informative_k
    text = " ".join(pair.sentences())
    assert "unresolved" in text and "uninformative" in text
    # The full searches show why it matters: with all trials the LSTM catches up at large budgets.
    full = analyze(reuters(search_results_dir), ReportSettings(a=0.0, b=1.0))
    favoured_late = {r.favoured for r in full.pairs[0].comparison.ranges if r.k_start > 25}
    assert "LSTM" in favoured_late


def test_mixed_directions_and_duplicate_names_are_refused(search_results_dir):
    a, b = deberta_families(search_results_dir)
    with pytest.raises(InputError, match="give them distinct labels"):
        analyze([a, dataclasses.replace(b, name="DeBERTa")])
    with pytest.raises(InputError, match="minimize"):
        analyze([a, dataclasses.replace(b, minimize=True)])
    with pytest.raises(InputError, match="nothing to report"):
        analyze([])


def test_failure_policy_comes_from_the_search_else_worst(search_results_dir, tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("score,x\n0.5,1\n,2\n0.7,3\nnan,4\n0.6,5\n")
    (family,) = from_results_file(path, "score")
    report = analyze([family])
    assert report.families[0].curve.failures.policy == "worst"
    assert report.families[0].curve.failures.n_failed == 2
    spec = {"failure_policy": "exclude"}
    report = analyze([dataclasses.replace(family, spec=spec)])
    assert report.families[0].curve.n == 3
    with pytest.raises(InputError, match="choose a failure policy"):
        analyze([family], ReportSettings(failure_policy="error"))


@pytest.mark.parametrize(
    "settings_, message",
    [({"confidence": 1.0}, "confidence must be strictly"), ({"method": "ld"}, "method must be one of"),
     ({"quantile": 0.0}, "quantile must be strictly")],
)
def test_settings_check_the_bands_once_as_a_band_spec(settings_, message, tmp_path):
    """Issue 18 item 6: the settings' bands are one BandSpec, refused as bad input; each family's curve gets it with its support."""
    from showwork.statistics import BandSpec

    with pytest.raises(InputError, match=message):
        ReportSettings(**settings_)
    settings_ = ReportSettings(confidence=0.9, method="ks", quantile=0.25, a=0.0)
    assert settings_.bands == BandSpec(0.9, "ks", 0.25)
    assert "bands" not in dataclasses.asdict(settings_)  # report.json's settings are unchanged
    path = tmp_path / "r.csv"
    path.write_text("score\n0.5\n0.7\n0.6\n0.65\n")
    (family,) = from_results_file(path, "score")
    (analysis,) = analyze([family], settings_).families
    assert analysis.curve.bands == BandSpec(0.9, "ks", 0.25, 0.0, math.inf)


# ---------------------------------------------------------------- numbers equal the statistics module's


def test_table_cells_are_the_statistics_modules_numbers(deberta_report, search_results_dir):
    table = tuning_curve_table(deberta_report)
    ks = deberta_report.table_budgets
    assert ks == table_budgets(1024) == (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 1024)
    for family in deberta_families(search_results_dir):
        direct = tuning_curve(family.scores, ks, a=0.0, b=1.0, failure_policy="worst")
        rows = [row for row in table.rows if row[0] == family.name]
        assert len(rows) == len(ks)
        for i, row in enumerate(rows):
            cells = dict(zip(table.columns, row))
            assert cells["k"] == format_number(float(ks[i]))
            assert cells["V"] == format_number(direct.v[i])
            assert cells["U"] == format_number(direct.u[i])
            assert cells["median"] == format_number(direct.median[i])
            assert cells["median band"] == f"[{format_number(direct.median_lower[i])}, {format_number(direct.median_upper[i])}]"
            assert cells["mean band"] == f"[{format_number(direct.mean_lower[i])}, {format_number(direct.mean_upper[i])}]"


def test_targets_advice_and_comparisons_match_the_statistics(deberta_report, search_results_dir):
    families = deberta_families(search_results_dir)
    grid = budget_grid(1024)
    curves = {f.name: tuning_curve(f.scores, grid, a=0.0, b=1.0, failure_policy="worst", name=f.name) for f in families}
    for analysis in deberta_report.families:
        for target in (0.88, 0.9):
            assert analysis.targets[target] == budgets_to_reach(curves[analysis.name], target)
        assert analysis.advice.informative_k == pytest.approx(informative_budget(1024))
        assert analysis.advice.bound_k == next_round_budget(analysis.advice.informative_k) == 200
        assert analysis.advice.trials_needed == trials_needed(200)
        assert analysis.advice.text() == f"With 1024 trials the bands are informative up to k ≈ 140; to bound k = 200 you need n ≥ {trials_needed(200)}."
    (direct,) = compare_curves(curves)
    (pair,) = deberta_report.pairs
    assert pair.comparison.ranges == direct.ranges and pair.comparison.crossovers == direct.crossovers


def test_summary_statistics(deberta_report, search_results_dir):
    for analysis, family in zip(deberta_report.families, deberta_families(search_results_dir)):
        s = analysis.summary
        assert s.n_trials == 1024 and s.n_failed == 0
        assert s.best_score == family.scores.max() and s.best_index == int(np.argmax(family.scores))
        assert s.median == pytest.approx(np.median(family.scores))
        assert (s.q25, s.q75) == pytest.approx(tuple(np.percentile(family.scores, [25, 75])))
        assert s.mean_runtime_s is None and s.compute_hours is None and s.gpu_hours is None


def test_runtimes_give_compute_and_a_cost_column(search_results_dir):
    families = from_results_file(search_results_dir / "alexnet_imagenet_tuning.csv", "top1_best", runtime="train_time_s", label="AlexNet")
    report = analyze(families, ReportSettings(a=0.0, b=1.0, gpus_per_trial=8))
    s = report.families[0].summary
    runtimes = families[0].runtimes_s
    assert s.compute_hours == pytest.approx(runtimes.sum() / 3600)
    assert s.gpu_hours == pytest.approx(8 * runtimes.sum() / 3600)
    table = tuning_curve_table(report)
    assert "cost (hours)" in table.columns
    first = dict(zip(table.columns, table.rows[0]))
    assert first["cost (hours)"] == format_number(runtimes.mean() / 3600, 3)


def test_grids():
    assert table_budgets(1) == (1,)
    assert table_budgets(20) == (1, 2, 5, 10, 20)
    grid = budget_grid(5000)
    assert grid[0] == 1 and grid[-1] == 5000 and np.all(np.diff(grid) > 0) and grid.size < 330
    assert next_round_budget(0.3) == 2.0 and next_round_budget(22.4) == 50.0


# ---------------------------------------------------------------- rendering


def test_every_format_escapes_what_it_must():
    table = Table("t", "A | B_1 & 50%", ("name", "k ≈ 5"), (("a|b *c* <x>", "1–2 ≥ ∞ $#_{}~^\\"),), ("note & <b>",), (False, True))
    md = markdown_table(table)
    assert "a\\|b \\*c\\* \\<x\\>" in md and "|---|---:|" in md
    page = html_table(table)
    assert "a|b *c* &lt;x&gt;" in page and "note &amp; &lt;b&gt;" in page and 'class="num"' in page
    tex = latex_table(table)
    body = tex.split("\\midrule")[1]
    assert "1--2 $\\geq$ $\\infty$ \\$\\#\\_\\{\\}\\textasciitilde{}\\textasciicircum{}\\textbackslash{}" in body
    assert not re.search(r"(?<!\\)[&%](?! )", body.replace(" & ", " "))
    assert latex_text("k ≈ 140") == "k $\\approx$ 140"


def test_tables_have_consistent_shapes(deberta_report):
    keys = [t.key for t in report_tables(deberta_report)]
    assert keys == ["families", "tuning_curves", "comparisons", "crossovers", "targets", "advice", "best_configurations"]


def test_crossovers_have_their_own_table(search_results_dir, deberta_report):
    """Issue 17 item 7: one row per crossover of the medians, who leads on each side, and whether the bands reach it."""
    report = analyze(reuters(search_results_dir), ReportSettings(a=0.0, b=1.0))
    (pair,) = report.pairs
    c = pair.comparison
    table = next(t for t in report_tables(report) if t.key == "crossovers")
    assert c.crossovers and [row[1] for row in table.rows] == [f"{k:g}" for k in c.crossovers]
    mlp, lstm = (report.family(name).curve.median for name in (c.a, c.b))
    for row, k in zip(table.rows, c.crossovers):
        j = int(np.searchsorted(c.k, k))
        assert row[0] == "MLP vs LSTM"
        assert row[2] == ("MLP" if mlp[j - 1] > lstm[j - 1] else "LSTM") and row[3] == ("MLP" if mlp[j] > lstm[j] else "LSTM")
        assert row[2] != row[3]
        assert (row[4] == "within the bands' reach") == (k <= pair.informative_k)
    # The comparison table no longer carries a crossovers row.
    comparisons = next(t for t in report_tables(report) if t.key == "comparisons")
    assert all(row[1] != "crossovers" for row in comparisons.rows)
    # DeBERTaV3 leads at every budget: one row that says the medians do not cross.
    (row,) = next(t for t in report_tables(deberta_report) if t.key == "crossovers").rows
    assert row[1] == "—" and row[2] == row[3] == "DeBERTaV3" and row[4].startswith("the medians do not cross")


def test_a_target_budget_beyond_the_informative_budget_says_so(search_results_dir):
    """Issue 17 item 7: "106, beyond k ≈ 23.3", not a bare "106", when the budget is past the bands' reach."""
    report = analyze(reuters(search_results_dir), ReportSettings(a=0.0, b=1.0, targets=(0.85, 0.9)))
    table = next(t for t in report_tables(report) if t.key == "targets")
    marked = 0
    for row in table.rows:
        f = report.family(row[0])
        reach = f.targets[float(row[1])]
        for cell, key in zip(row[2:], ("v", "u", "median", "median_lower", "median_upper")):
            k = reach.get(key)
            if k is None:
                assert cell == "—"
            elif k > f.advice.informative_k and key != "median_lower":  # the pessimistic band holds everywhere
                assert cell == f"{k}, beyond k ≈ {format_number(f.advice.informative_k, 3)}"
                marked += 1
            else:
                assert cell == str(k)
    assert marked and any("beyond k ≈" in note for note in table.notes)


# ---------------------------------------------------------------- files and the command


def test_write_report_writes_every_output(deberta_report, tmp_path):
    files = write_report(deberta_report, tmp_path / "out")
    names = sorted(p.relative_to(tmp_path / "out").as_posix() for p in files.all())
    for stem in ("tuning_curves", "cdfs", "comparison"):
        for suffix in ("png", "svg", "pdf"):
            assert f"figures/{stem}.{suffix}" in names
    for key in ("families", "tuning_curves", "comparisons", "checklist_dodge", "checklist_arr", "checklist_neurips"):
        assert f"latex/{key}.tex" in names
    page = files.html.read_text()
    assert page.count("data:image/png;base64,") >= 3 and "src=\"figures/" not in page  # self-contained
    markdown = files.markdown.read_text()
    assert "![" in markdown and "(figures/tuning_curves.png)" in markdown
    data = json.loads(files.json.read_text())
    assert [f["name"] for f in data["families"]] == ["DeBERTa", "DeBERTaV3"]
    assert data["pairs"][0]["ranges"][0]["level"] == "strong"
    assert len(data["checklist"]) == 19


cli = run_cli


@pytest.mark.integration
def test_report_command_on_results_files(capsys, tmp_path, search_results_dir):
    code, out, err = cli(
        capsys, "report", search_results_dir / "reuters_mlp_f1.csv", search_results_dir / "reuters_lstm_f1.csv",
        "--score", "f1", "--label", "MLP", "--label", "LSTM", "--a", "0", "--b", "1", "--target", "0.8",
        "--formats", "png", "--out", tmp_path / "r",
    )
    assert code == 0, err
    assert "MLP vs LSTM:" in out and "informative up to k ≈ 22" in out
    assert (tmp_path / "r" / "report.html").is_file() and not (tmp_path / "r" / "figures" / "cdfs.svg").exists()
    data = json.loads((tmp_path / "r" / "report.json").read_text())
    assert data["settings"]["targets"] == [0.8]


@pytest.mark.integration
def test_report_command_groups_one_file(capsys, tmp_path, search_results_dir):
    lines = ["model,acc"]
    for name, file in (("base", "deberta-base_mnli_tuning.csv"), ("v3", "deberta-v3-base_mnli_tuning.csv")):
        family = from_results_file(search_results_dir / file, "matched_acc_best")[0]
        lines += [f"{name},{float(s)!r}" for s in family.scores[:60]]
    (tmp_path / "both.csv").write_text("\n".join(lines) + "\n")
    code, out, err = cli(capsys, "report", tmp_path / "both.csv", "--score", "acc", "--group", "model", "--formats", "png", "--out", tmp_path / "r")
    assert code == 0, err
    assert "base vs v3:" in out


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["nope"], "not a results file, nor a search in"),
        (["{file}"], "needs --score COLUMN"),
        (["{file}", "--score", "f2"], "f2"),
        (["{file}", "--score", "f1", "--label", "a", "--label", "b"], "--label was given 2 times for 1 sources"),
        (["{file}", "--score", "f1", "--confidence", "1.5"], "--confidence"),
        (["{file}", "--score", "f1", "--formats", "gif"], "--formats"),
        (["{file}", "--score", "f1", "--a", "1", "--b", "0"], "a <= b"),
        (["{file}", "--score", "f1", "--failed", "error", "--group", "model_name", "--k", "0"], "--k"),
    ],
)
def test_report_command_refuses_bad_input_with_one_line(capsys, tmp_path, search_results_dir, argv, fragment):
    argv = [a.replace("{file}", str(search_results_dir / "reuters_mlp_f1.csv")) for a in argv]
    code, out, err = cli(capsys, "report", *argv, "--out", tmp_path / "r")
    assert code == 2
    assert err.startswith("showwork: error:") and err.count("\n") == 1, err
    assert fragment in err
    assert not (tmp_path / "r" / "report.html").exists()


def test_report_command_log_x_by_default_past_100_and_linear_x_turns_it_off(capsys, tmp_path, search_results_dir, monkeypatch):
    """Issue 17 item 6: 152 Reuters budgets draw on a log axis unless --linear-x; --log-x and --linear-x exclude each other."""
    from showwork.report.figures import saving as figures_module

    scales = []
    original = figures_module.comparison_figure

    def recording(report, **kwargs):
        figure = original(report, **kwargs)
        scales.append(figure.axes[0].get_xscale())
        return figure

    monkeypatch.setattr(figures_module, "comparison_figure", recording)
    files = [search_results_dir / "reuters_mlp_f1.csv", search_results_dir / "reuters_lstm_f1.csv"]
    for option, scale in ((None, "log"), ("--log-x", "log"), ("--linear-x", "linear")):
        argv = [*files, "--score", "f1", "--a", "0", "--b", "1", "--formats", "png", "--no-mlflow", "--out", tmp_path / scale]
        code, _, err = cli(capsys, "report", *argv, *([option] if option else []))
        assert code == 0, err
        assert scales.pop() == scale
    code, _, err = cli(capsys, "report", *files, "--score", "f1", "--log-x", "--linear-x", "--out", tmp_path / "both")
    assert code == 2 and "not allowed with argument" in err


def test_out_must_be_a_directory(capsys, tmp_path, search_results_dir):
    (tmp_path / "file").write_text("x")
    code, _, err = cli(capsys, "report", search_results_dir / "reuters_mlp_f1.csv", "--score", "f1", "--out", tmp_path / "file")
    assert code == 2 and "not a directory" in err


# ---------------------------------------------------------------- the page in a browser


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.skipif(chromium() is None and not __import__("os").environ.get("CI"), reason="no Chromium here (CI installs it)")
def test_html_report_shows_its_figure_in_headless_chromium(deberta_report, tmp_path):
    from PIL import Image

    files = write_report(deberta_report, tmp_path / "out", figure_formats=("png",))
    shot = tmp_path / "shot.png"
    done = subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--force-device-scale-factor=1",
         "--window-size=1200,2400", f"--screenshot={shot}", files.html.resolve().as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    assert shot.is_file(), done.stderr
    image = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    # The figures draw the families in the palette's first two colours; nothing else on the page does.
    for colour in ((0x64, 0x8F, 0xFF), (0xDC, 0x26, 0x7F)):
        close = (np.abs(image - np.array(colour)).sum(axis=2) < 40).sum()
        assert close > 500, (colour, close)
    # The page itself rendered (title text is dark pixels at the top).
    assert (image[:120].sum(axis=2) < 200).sum() > 200


_ELEMENTS_SCRIPT = """
const box = (root, id) => {
  const e = root.querySelector(`[id="${id}"]`);
  if (!e) return null;
  const r = e.getBoundingClientRect();
  return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width, height: r.height,
          text: e.textContent.trim()};
};
const out = {};
for (const root of document.querySelectorAll("div.figure")) {
  const families = root.dataset.families.split(",");
  out[root.id] = {
    svg: root.querySelector("svg").getBoundingClientRect().toJSON(),
    label: box(root, "uninformative-label"),
    region: box(root, "uninformative-region"),
    // Tick labels as the browser lays them out: their text and their centre.
    xticks: [...root.querySelectorAll('g[id^="xtick_"]')].map(g => {
      const r = g.getBoundingClientRect(); return {text: g.textContent.trim(), x: (r.left + r.right) / 2};
    }).filter(t => t.text),
    hatches: families.map(name => {
      const e = root.querySelector(`[id="median-band-hatch:${name}"] path`);
      if (!e) return null;
      const fill = getComputedStyle(e).fill, id = (fill.match(/#([^"')]+)/) || [])[1];
      return {fill, pattern: !!(id && document.getElementById(id)), box: box(root, `median-band-hatch:${name}`)};
    }),
  };
}
document.getElementById("result").textContent = JSON.stringify(out);
"""


@pytest.mark.slow
@pytest.mark.integration
@pytest.mark.skipif(chromium() is None and not __import__("os").environ.get("CI"), reason="no Chromium here (CI installs it)")
def test_new_figure_elements_in_headless_chromium(search_results_dir, tmp_path):
    """Issue 17 items 5-7 as a browser lays the figures out: the uninformative region's label inside the
    shaded region, integer tick labels, a log budget axis (equal spacing per decade) past 100 budgets, and
    two overlapping comparison bands hatched with two different patterns."""
    import html

    import matplotlib

    from showwork.report.figures import report_figures

    large = analyze(reuters(search_results_dir), ReportSettings(a=0.0, b=1.0))  # 152 budgets: log x
    small = analyze(reuters(search_results_dir, n=5), ReportSettings(a=0.0, b=1.0))  # budgets 1..5: linear
    divs = []
    for name, report in (("large", large), ("small", small)):
        with matplotlib.rc_context({"svg.fonttype": "none"}):  # text as <text>: the page's DOM carries it
            figures = report_figures(report, tmp_path / name, formats=("svg",))
        for kind in ("tuning_curves", "comparison"):
            svg = figures[kind][0].read_text()
            svg = svg[svg.index("<svg"):]
            divs.append(f'<div class="figure" id="{name}-{kind}" data-families="MLP,LSTM">{svg}</div>')
    page = tmp_path / "figures.html"
    page.write_text(f"<!DOCTYPE html><html><body>{''.join(divs)}<pre id=\"result\"></pre>"
                    f"<script>{_ELEMENTS_SCRIPT}</script></body></html>")
    done = subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1400,3000", "--virtual-time-budget=10000",
         "--dump-dom", page.resolve().as_uri()],
        capture_output=True, text=True, timeout=120,
    )
    found = re.search(r'<pre id="result">(.*?)</pre>', done.stdout, re.S)
    assert found and found.group(1), done.stderr[-2000:]
    seen = json.loads(html.unescape(found.group(1)))
    for figure in ("large-tuning_curves", "large-comparison", "small-tuning_curves", "small-comparison"):
        fig = seen[figure]
        label, region, svg = fig["label"], fig["region"], fig["svg"]
        # The shaded region and its label are drawn, the label inside the region and on the figure.
        assert region["width"] > 20 and label["width"] > 50 and label["height"] > 5, (figure, fig)
        text = " ".join(label["text"].split())
        assert text.startswith("bands uninformative past k ≈") and text.endswith("more trials needed"), text
        # (The label's white box reaches its padding, 1.5 pt, past the text.)
        assert region["left"] - 4 <= label["left"] and label["right"] <= svg["right"] + 1
        assert region["top"] - 4 <= label["top"] and label["bottom"] <= region["bottom"] + 4
        # Budget tick labels are whole numbers (never 2.5).
        texts = [t["text"] for t in fig["xticks"]]
        assert texts and all(re.fullmatch(r"\d+", t) for t in texts), (figure, texts)
    # Past 100 budgets the axis is logarithmic: 1, 10, 100, a decade apart at equal distances.
    for figure in ("large-tuning_curves", "large-comparison"):
        ticks = seen[figure]["xticks"]
        assert [t["text"] for t in ticks] == ["1", "10", "100"]
        (x1, x10, x100) = (t["x"] for t in ticks)
        assert abs((x10 - x1) - (x100 - x10)) < 1.0 and x10 - x1 > 50
    assert "k ≈ 22 (MLP), k ≈ 23 (LSTM):" in seen["large-tuning_curves"]["label"]["text"]
    small_ticks = [int(t["text"]) for t in seen["small-tuning_curves"]["xticks"]]
    assert small_ticks == sorted(small_ticks) and 1 <= small_ticks[0] and small_ticks[-1] <= 5
    # The comparison's two bands overlap on the page and each is hatched with its own pattern.
    for figure in ("large-comparison", "small-comparison"):
        mlp, lstm = seen[figure]["hatches"]
        assert mlp["pattern"] and lstm["pattern"] and mlp["fill"] != lstm["fill"], (mlp, lstm)
        a, b = mlp["box"], lstm["box"]
        assert min(a["right"], b["right"]) > max(a["left"], b["left"]) and min(a["bottom"], b["bottom"]) > max(a["top"], b["top"])


def test_help_lists_report():
    done = subprocess.run([sys.executable, "-m", "showwork", "report", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "--out DIR" in done.stdout and "mlflow:EXPERIMENT" in done.stdout


def test_a_second_report_in_the_same_directory_leaves_nothing_stale(deberta_report, search_results_dir, tmp_path):
    out = tmp_path / "out"
    write_report(deberta_report, out, figure_formats=("png",))
    (out / "notes.txt").write_text("mine")
    (out / "latex" / "mine.tex").write_text("% my own table\n")
    single = analyze(deberta_families(search_results_dir)[:1], ReportSettings(a=0.0, b=1.0))
    files = write_report(single, out, figure_formats=("png",))
    assert not (out / "figures" / "comparison.png").exists() and not (out / "latex" / "comparisons.tex").exists()
    assert (out / "notes.txt").read_text() == "mine" and (out / "latex" / "mine.tex").exists()
    written = {p.resolve() for p in files.all()}
    users = {(out / "notes.txt").resolve(), (out / "latex" / "mine.tex").resolve(), (out / ".showwork-report.json").resolve()}
    generated = {p.resolve() for p in out.rglob("*") if p.is_file()} - users
    assert generated == written


@pytest.mark.integration
def test_report_command_figure_options_and_the_scores_by_parameter_figure(capsys, tmp_path):
    """Issue 26 items 3 and 4 on the real SST-5 CNN search: every option in the files, the new figure listed, --by beside it."""
    results = Path(__file__).resolve().parents[2] / "experiments" / "results" / "real_search" / "results" / "sst5-cnn-cpu-study.csv"
    style = tmp_path / "paper.mplstyle"
    style.write_text("axes.facecolor: fafad2\n")
    params = "param.lr,param.dropout,param.max_filter_size,param.activation"
    code, out, err = cli(capsys, "report", results, "--score", "score", "--params", params, "--a", "0", "--b", "1",
                         "--formats", "png,svg,pdf", "--no-title", "--figsize", "3.3,2.4", "--font-size", "8", "--style", style,
                         "--score-label", "SST-5 accuracy", "--out", tmp_path / "r", "--no-mlflow")
    assert code == 0, err
    figures = tmp_path / "r" / "figures"
    # At one column's width the parameters' panels go on pages of two (issue 34 item 1).
    assert not (figures / "scores_by_parameter.svg").exists() and not (figures / "scores_by_parameter_page3.svg").exists()
    svg = (figures / "scores_by_parameter_page1.svg").read_text()
    assert 'width="237.6pt" height="172.8pt"' in svg and "#fafad2" in svg and "<!-- SST-5 accuracy -->" in svg
    assert "Validation score against" not in svg and "<!-- param.lr -->" in svg
    assert "<!-- param.max_filter_size -->" in (figures / "scores_by_parameter_page2.svg").read_text()
    assert "(figures/scores_by_parameter_page1.png)" in (tmp_path / "r" / "report.md").read_text()
    assert "against each hyperparameter" in (tmp_path / "r" / "report.html").read_text()
    code, out, err = cli(capsys, "report", results, "--score", "score", "--params", params, "--by", "param.max_filter_size",
                         "--formats", "png", "--out", tmp_path / "by", "--no-mlflow")
    assert code == 0, err
    names = sorted(p.stem for p in (tmp_path / "by" / "figures").glob("*.png"))
    assert {"tuning_curves", "comparison", "scores_by_parameter"} <= set(names)  # the curves by value beside it

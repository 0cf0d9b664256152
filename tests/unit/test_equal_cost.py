"""Comparisons at equal compute (issue 24 item 6): ``--cost runtime|COLUMN`` in the report and `compare`."""

from __future__ import annotations

import json
import math
import shlex
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from showwork.errors import InputError
from showwork.report import ReportSettings, analyze
from showwork.report.equal_cost import trial_costs
from showwork.report.figures import cost_comparison_figure, report_figures
from showwork.report.inputs import FamilyResults, from_results_file
from showwork.statistics import ArgumentError, apply_failure_policy, equal_cost_axis, tuning_curve
from showwork.statistics.cost import cost_per_trial

from helpers import run_cli


def write_family(path, scores, costs, runtimes=None):
    lines = ["trial,acc,epochs,runtime"] + [
        f"{i},{'' if np.isnan(s) else repr(float(s))},{c!r},{(runtimes or costs)[i]!r}" for i, (s, c) in enumerate(zip(scores, costs))
    ]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def cheap_and_dear(tmp_path):
    """cheap: 60 trials of 1 epoch; dear: 60 trials of 20 epochs, each score 0.03 higher than cheap's draw.

    Per trial the dear family is better at every budget; at equal cost the cheap one runs 20 times as
    many trials, and its best-of-20 beats one dear trial.
    """
    rng = np.random.default_rng(5)
    base = rng.beta(4, 4, size=60)
    cheap = write_family(tmp_path / "cheap.csv", base, [1.0] * 60)
    dear = write_family(tmp_path / "dear.csv", np.minimum(rng.beta(4, 4, size=60) + 0.03, 1.0), [20.0] * 60)
    return cheap, dear


def test_equal_cost_axis_starts_at_one_trial_of_the_dearest_family():
    cost, ks = equal_cost_axis({"a": 2.0, "b": 0.5}, {"a": 10, "b": 100}, points=50)
    assert cost[0] == 2.0 and cost[-1] == 50.0  # b's 100 trials cost 50, more than a's 10 (20)
    np.testing.assert_allclose(ks["a"], cost / 2.0)
    np.testing.assert_allclose(ks["b"], cost / 0.5)
    assert np.all(np.diff(cost) > 0)
    with pytest.raises(ArgumentError, match="positive"):
        equal_cost_axis({"a": 0.0, "b": 1.0}, {"a": 3, "b": 3})


def test_report_cost_view_is_each_family_at_k_equal_cost_over_its_mean_cost(cheap_and_dear):
    families = [f for path in cheap_and_dear for f in from_results_file(path, "acc", params=["epochs"])]
    report = analyze(families, ReportSettings(a=0, b=1, cost="epochs"))
    view = report.cost
    assert view.mean_costs == {"cheap": 1.0, "dear": 20.0} and view.unit == "epochs"
    assert view.axis[0] == 20.0 and view.axis[-1] == 1200.0
    for f in report.families:
        k = view.axis / view.mean_costs[f.name]
        np.testing.assert_array_equal(f.cost_curve.k, k)
        direct = tuning_curve(f.results.scores, k=k, a=0, b=1)
        np.testing.assert_array_equal(f.cost_curve.quantile_curve, direct.quantile_curve)
        np.testing.assert_array_equal(f.cost_curve.quantile_curve_lower, direct.quantile_curve_lower)
    # Per trial the dear family leads; at equal cost the cheap family does (20 trials against 1 at first).
    (trials,) = report.pairs
    assert set(trials.comparison.favoured.tolist()) <= {0, -1} and -1 in trials.comparison.favoured
    (pair,) = view.pairs
    assert pair.comparison.axis == "epochs" and pair.comparison.favoured[0] == 1  # a = cheap
    assert pair.comparison.k_a[0] == 20.0 and pair.comparison.k_b[0] == 1.0
    assert any("at equal cost 20" in s and "cheap beats dear" in s for s in pair.sentences())


def test_failed_trials_cost_too(tmp_path):
    scores = np.r_[np.linspace(0.1, 0.9, 9), np.nan]  # the last trial failed after 11 epochs
    path = write_family(tmp_path / "f.csv", scores, [1.0] * 9 + [11.0])
    other = write_family(tmp_path / "g.csv", np.linspace(0.2, 0.8, 10), [2.0] * 10)
    families = [f for p in (path, other) for f in from_results_file(p, "acc", params=["epochs"])]
    # worst: the failed trial is a trial of the curve, at its own cost: (9 + 11) / 10, not 1
    report = analyze(families, ReportSettings(a=0, b=1, cost="epochs", failure_policy="worst"))
    assert report.cost.mean_costs["f"] == pytest.approx(2.0)
    assert "failed trials cost too" in report.cost.note() and "successful" not in report.cost.note()
    # exclude: the curve counts the 9 successful trials, which took all 20 epochs: 20 / 9 per successful trial
    report = analyze(families, ReportSettings(a=0, b=1, cost="epochs", failure_policy="exclude"))
    assert report.cost.mean_costs["f"] == pytest.approx(20 / 9) and report.cost.mean_costs["g"] == 2.0
    assert report.cost.axis[-1] == pytest.approx(20.0)  # the largest total cost: f's 20 and g's 20 epochs
    np.testing.assert_allclose(report.family("f").cost_curve.k, report.cost.axis * 9 / 20)
    assert "f 2.22 per successful trial" in report.cost.note()
    assert "total cost / successful trials" in report.cost.note()


_costs = st.one_of(st.just(0.0), st.floats(1e-3, 1e3))


@settings(max_examples=60, deadline=None)
@given(trials=st.lists(st.tuples(st.booleans(), _costs), min_size=4, max_size=40), policy=st.sampled_from(["worst", "exclude"]),
       other=st.lists(_costs, min_size=4, max_size=40))
def test_a_family_with_failures_is_read_at_k_equal_cost_times_its_counted_trials_over_its_total_cost(trials, policy, other):
    # exclude: k counts successful trials, each of which also cost the failed attempts before it, so
    # k = c × n_ok / total (Wald: a success costs 1/p attempts of mean cost); worst: k = c × n / total.
    failed = [f for f, _ in trials]
    assume(not all(failed) and sum(c for _, c in trials) > 0 and sum(other) > 0)
    rng = np.random.default_rng(len(trials))
    scores = np.where(failed, np.nan, rng.uniform(0, 1, len(trials)))

    def family(name, scores, costs):
        return FamilyResults(name, np.asarray(scores, dtype=float), ("finished",) * len(scores), "acc",
                             params=tuple({"epochs": c} for c in costs))

    families = [family("f", scores, [c for _, c in trials]), family("g", rng.uniform(0, 1, len(other)), other)]
    report = analyze(families, ReportSettings(a=0, b=1, cost="epochs", failure_policy=policy))
    total = sum(c for _, c in trials)
    counted = len(trials) - sum(failed) if policy == "exclude" else len(trials)
    f = report.family("f")
    assert f.curve.n == counted
    np.testing.assert_allclose(f.cost_curve.k, report.cost.axis * counted / total, rtol=1e-12)
    assert report.cost.axis[-1] == pytest.approx(max(total, sum(other)), rel=1e-12)  # all the compute of the dearest search


def test_trial_costs_read_params_then_metrics_and_refuse_what_is_not_a_cost():
    def family(**kw):
        return FamilyResults(name="x", scores=np.array([0.5, 0.6]), statuses=("finished", "finished"), metric="acc", **kw)

    assert trial_costs(family(params=({"epochs": 2}, {"epochs": 3})), "epochs").tolist() == [2.0, 3.0]
    assert trial_costs(family(trial_metrics=({"flops": 1e12}, {"flops": 2e12})), "flops").tolist() == [1e12, 2e12]
    assert trial_costs(family(runtimes_s=np.array([1.0, np.nan])), "runtime")[0] == 1.0
    with pytest.raises(InputError, match="no trial recorded the cost 'flops'"):
        trial_costs(family(params=({"epochs": 2}, {"epochs": 3})), "flops")
    with pytest.raises(InputError, match="trial 2 records the cost 'epochs' as 'many'"):
        trial_costs(family(params=({"epochs": 2}, {"epochs": "many"})), "epochs")
    with pytest.raises(InputError, match="needs each trial's runtime"):
        trial_costs(family(), "runtime")
    with pytest.raises(InputError, match="finite and >= 0"):
        trial_costs(family(params=({"epochs": -1}, {"epochs": 3})), "epochs")


def test_cost_figure_draws_the_curves_on_the_cost_axis_with_the_evidence_strip(cheap_and_dear, tmp_path):
    families = [f for path in cheap_and_dear for f in from_results_file(path, "acc", params=["epochs"])]
    report = analyze(families, ReportSettings(a=0, b=1, cost="epochs"))
    figure = cost_comparison_figure(report)
    median = figure.findobj(lambda a: a.get_gid() == "median:cheap")[0]
    np.testing.assert_array_equal(median.get_xdata(), report.cost.axis)
    assert figure.findobj(lambda a: a.get_gid() == "evidence:cheap vs dear:fair") or figure.findobj(
        lambda a: a.get_gid() == "evidence:cheap vs dear:strong")
    assert figure.axes[-1].get_xlabel() == "total cost (epochs)"
    assert "comparison_cost" in report_figures(report, tmp_path, formats=("png",))
    assert "comparison_cost" not in report_figures(analyze(families, ReportSettings(a=0, b=1)), tmp_path / "no", formats=("png",))


def test_report_cli_gives_the_trial_view_and_the_cost_view(cheap_and_dear, tmp_path, capsys):
    code, out, err = run_cli(capsys, "report", *cheap_and_dear, "--score", "acc", "--a", "0", "--b", "1", "--cost", "epochs",
                             "--out", tmp_path / "r", "--no-mlflow", "--formats", "png")
    assert code == 0, err
    assert "cheap vs dear:" in out and "cheap vs dear at equal cost:" in out
    assert "each family at k = c / its mean cost per trial (cheap 1; dear 20)" in out
    markdown = (tmp_path / "r" / "report.md").read_text()
    assert "at equal cost 20" in markdown and "comparison_cost" in markdown
    data = json.loads((tmp_path / "r" / "report.json").read_text())
    assert data["cost"]["mean_costs"] == {"cheap": 1.0, "dear": 20.0} and data["cost"]["pairs"][0]["axis"] == "epochs"


def test_compare_cli_at_equal_cost(cheap_and_dear, capsys):
    code, out, err = run_cli(capsys, "compare", *cheap_and_dear, "--score", "acc", "--a", "0", "--b", "1", "--cost", "epochs")
    assert code == 0, err
    assert "at equal cost (epochs, in epochs)" in out and "cost = 20..1200 epochs" not in out
    assert "cost = 20" in out and f"for {cheap_and_dear[0]}" in out
    code, out, _ = run_cli(capsys, "compare", *cheap_and_dear, "--score", "acc", "--a", "0", "--b", "1", "--cost", "runtime",
                           "--runtime", "runtime", "--json")
    cost = json.loads(out)["cost"]
    assert cost["mean_costs"] == {str(cheap_and_dear[0]): 1.0, str(cheap_and_dear[1]): 20.0}
    assert cost["pairs"][0]["k_b"][0] == 1.0
    code, _, err = run_cli(capsys, "compare", *cheap_and_dear, "--score", "acc", "--cost", "runtime")
    assert code == 2 and "--cost runtime needs each trial's runtime: give --runtime COLUMN" in err


def test_the_real_search_study_at_equal_cost_reads_as_the_readme_says():
    """experiments/README.md: the logistic regression leads at small costs, the medians cross near 3 minutes, nothing resolved."""
    folder = Path(__file__).resolve().parents[2] / "experiments" / "results" / "real_search" / "results"
    families = [from_results_file(folder / f"sst5-{stem}-study.csv", "score", runtime="runtime_s", label=label)[0]
                for stem, label in (("logreg", "logistic regression"), ("cnn-cpu", "CNN"))]
    report = analyze(families, ReportSettings(a=0, b=1, cost="runtime", cost_unit="seconds"))
    (pair,) = report.cost.pairs
    c = pair.comparison
    assert round(report.cost.mean_costs["logistic regression"], 2) == 0.5 and round(report.cost.mean_costs["CNN"]) == 68
    assert c.levels[0] == "fair" and c.favoured[0] == 1 and round(c.k_a[0]) == 137 and c.k_b[0] == 1.0
    assert c.favoured[-1] == -1 and [round(x) for x in c.crossovers] == [176]
    assert not c.resolved.any()
    (trials,) = report.pairs
    assert trials.comparison.resolved.any() and trials.comparison.crossovers == ()


def test_make_demo_shows_a_cost_view(search_results_dir, tmp_path, capsys):
    """The Makefile's demo reports the two DeBERTa families with --cost (figures/comparison_cost)."""
    makefile = (Path(__file__).resolve().parents[2] / "Makefile").read_text()
    demo = makefile.split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    report = demo.split("showwork report $(SHOWWORK_DATA_DIR)", 1)[1].split("showwork plan", 1)[0]
    argv = shlex.split(report.replace("\\\n", " ").replace("$(VENV)/bin/", ""))
    argv = [str(search_results_dir.parent) + argv[0]] + argv[1:]
    argv = [a.replace("$(SHOWWORK_DATA_DIR)", str(search_results_dir.parent)) for a in argv]
    assert "--cost" in argv
    out = argv.index("--out")
    argv[out + 1] = str(tmp_path / "deberta")
    code, stdout, err = run_cli(capsys, "report", *argv, "--no-mlflow", "--formats", "png")
    assert code == 0, err
    assert "DeBERTa vs DeBERTaV3 at equal cost:" in stdout
    assert (tmp_path / "deberta" / "figures" / "comparison_cost.png").is_file()
    # The released searches were random searches (Lourie et al. 2024; the data README): --sampler random says
    # so, and the headline figure carries no "not i.i.d." caveat.
    assert "not i.i.d." not in stdout and "Not i.i.d." not in (tmp_path / "deberta" / "report.md").read_text()


def _demo_arguments(text: str) -> list[str]:
    """The arguments of the DeBERTa report command in ``text``, its files by name (the folder written as each page writes it)."""
    start = text.rindex("showwork report ", 0, text.index("deberta-base_mnli_tuning.csv"))
    command = text[start:text.index("--out reports/deberta", start)] + "--out reports/deberta"
    argv = shlex.split(" ".join(command.replace("\\\n", " ").replace("`", " ").split()))[2:]
    return [Path(a).name if a.endswith(".csv") else a for a in argv]


def test_every_page_quotes_the_demo_command_of_the_makefile():
    root = Path(__file__).resolve().parents[2]
    expected = _demo_arguments((root / "Makefile").read_text())
    assert expected[expected.index("--sampler") + 1] == "random"
    for page in ("README.md", "docs/index.md", "docs/tutorial.md"):
        assert _demo_arguments((root / page).read_text(encoding="utf-8")) == expected, page


@pytest.mark.filterwarnings("ignore:excluding")  # policy exclude says so
@settings(max_examples=200, deadline=None)
@given(trials=st.lists(st.tuples(st.booleans(), st.one_of(st.just(math.nan), st.floats(0.0, 1e6))), min_size=1, max_size=50),
       policy=st.sampled_from(["worst", "exclude"]))
def test_a_trial_of_the_curve_costs_the_compute_of_all_trials_over_the_trials_the_curve_counts(trials, policy):
    failed = [f for f, _ in trials]
    costs = np.array([c for _, c in trials])
    assume(not all(failed) and np.isfinite(costs).any())
    scores = np.where(failed, np.nan, 0.5)
    ys, failures = apply_failure_policy(scores, policy)
    known = costs[np.isfinite(costs)]
    total = known.mean() * len(trials)  # every cost known: their sum; else n × the mean of the known ones
    per_trial = cost_per_trial(costs, failures)
    assert per_trial == pytest.approx(total / ys.size, rel=1e-12, abs=1e-300)
    assert failures.n_counted == ys.size
    curve = tuning_curve(scores, k=[ys.size], runtimes=costs, failure_policy=policy)  # its cost axis: k × that cost
    assert curve.mean_runtime_s == per_trial and float(curve.cost("seconds")[0]) == pytest.approx(total, rel=1e-12, abs=1e-300)
    assert cost_per_trial(costs) == pytest.approx(known.mean(), rel=1e-12, abs=1e-300)  # no policy: every trial counts
    with pytest.raises(ArgumentError, match="one cost per trial"):
        cost_per_trial(np.r_[costs, 1.0], failures)


def test_compare_and_curve_charge_the_failed_trials_to_the_successful_ones_under_exclude(tmp_path, capsys):
    scores = np.r_[np.linspace(0.1, 0.9, 9), np.nan]  # the last trial failed after 11 epochs: 20 epochs in all
    f = write_family(tmp_path / "f.csv", scores, [1.0] * 9 + [11.0])
    g = write_family(tmp_path / "g.csv", np.linspace(0.2, 0.8, 10), [2.0] * 10)
    argv = ["compare", f, g, "--score", "acc", "--a", "0", "--b", "1", "--cost", "epochs", "--json"]
    code, out, err = run_cli(capsys, *argv, "--failed", "worst")
    assert code == 0, err
    assert json.loads(out)["cost"]["mean_costs"] == {str(f): 2.0, str(g): 2.0}  # 20 epochs / 10 trials
    code, out, err = run_cli(capsys, *argv, "--failed", "exclude")
    assert code == 0, err
    cost = json.loads(out)["cost"]
    assert cost["mean_costs"][str(f)] == pytest.approx(20 / 9) and cost["axis"][-1] == pytest.approx(20.0)
    np.testing.assert_allclose(cost["pairs"][0]["k_a"], np.asarray(cost["axis"]) * 9 / 20)
    code, out, err = run_cli(capsys, *argv[:-1], "--failed", "exclude")
    assert code == 0, err
    assert "under --failed exclude k counts successful trials" in out and "total cost / successful trials" in out
    code, out, err = run_cli(capsys, "curve", f, "--score", "acc", "--runtime", "runtime", "--failed", "exclude", "--cost-unit", "seconds")
    assert code == 0, err
    assert "mean runtime: 2.222 s per successful trial" in out

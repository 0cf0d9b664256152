"""Fixes from the outside audit of the statistics (issue 17, items 8 and 10-16).

Each test here failed on the code before the fix it pins.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy import special

from showwork.cli import main
from showwork.results_table import read_results_table
from showwork.statistics import (
    ArgumentError,
    apply_failure_policy,
    best_of_k_std,
    beta_intervals,
    bootstrap_interval,
    cdf_band,
    compare_curves,
    dkw_epsilon,
    informative_budget,
    ks_epsilon,
    mean_runtime,
    order_statistics_coverage,
    quantile_tuning_curve,
    running_max,
    trials_needed,
    tuning_curve,
    u_statistic,
    v_statistic,
)
from showwork.statistics.tuning_curve_bands import quantile_levels

PROPERTY = settings(max_examples=200, deadline=None)


# --- item 13: a highest-density interval contains the mode at every coverage ----------------------


@st.composite
def order_statistic_and_excluded(draw):
    n = draw(st.integers(2, 400))
    i = draw(st.integers(1, n))
    excluded = draw(
        st.one_of(
            st.floats(1e-15, 1e-3),  # coverage near 1 (what the LD bands use)
            st.floats(1e-3, 1.0 - 1e-3),
            st.floats(1e-16, 1e-3).map(lambda coverage: 1.0 - coverage),  # coverage near 0
            st.sampled_from([1.0 - 1e-16, 1.0 - 1e-12, 1.0 - 1e-9]),
        ).filter(lambda e: 0.0 < e < 1.0)
    )
    return n, i, excluded


@given(order_statistic_and_excluded())
@example((14, 5, 1.0 - 1e-12))  # the audit's case: Beta(5, 10), interval at 0.30768921939, mode 0.307692307692
@example((14, 5, 1.0 - 1e-16))  # the audit's case: it landed at 0.41728
@example((181, 181, 1.0 - 1e-14))  # [q, 1] with q = 1 - 5.5e-17: rounds to 1.0, mass 0 instead of 1e-14
@PROPERTY
def test_highest_density_interval_contains_the_mode_at_every_coverage(case):
    n, i, excluded = case
    lower, upper, share = beta_intervals(n, excluded, "highest_density")
    a, b = i, n + 1 - i
    mode = (a - 1) / (a + b - 2)  # 0 for i = 1, 1 for i = n (one-sided intervals)
    lo, hi = lower[i - 1], upper[i - 1]
    assert 0.0 <= lo <= mode <= hi <= 1.0
    # The interval holds its coverage, to what the rounding of its ends resolves: a relative
    # rounding eps of an end x moves the mass by about eps * x * pdf(x).
    coverage = 1.0 - excluded
    mass = special.betainc(a, b, hi) - special.betainc(a, b, lo)
    resolution = 4e-15 + 8 * np.finfo(float).eps * sum(x * _beta_pdf(x, a, b) for x in (lo, hi))
    assert mass == pytest.approx(coverage, rel=1e-6, abs=resolution)


def _beta_pdf(x: float, a: float, b: float) -> float:
    # At the ends the limit: Beta(a, 1) has density a at 1 and Beta(1, b) density b at 0 (an end
    # rounded to 1.0 or 0.0 still resolves its mass only to eps times that density).
    if x == 1.0:
        return float(a) if b == 1 else 0.0
    if x == 0.0:
        return float(b) if a == 1 else 0.0
    return math.exp((a - 1) * math.log(x) + (b - 1) * math.log1p(-x) - special.betaln(a, b))


@pytest.mark.parametrize("excluded", [1.0 - 1e-12, 0.5, 1e-9])
def test_interpolated_highest_density_intervals_contain_the_modes(excluded):
    n = 20_000  # above INTERPOLATED_ABOVE_N: the interpolated, Newton-polished path
    lower, upper, _ = beta_intervals(n, excluded, "highest_density")
    mode = np.arange(n) / (n - 1)
    assert np.all((lower <= mode) & (mode <= upper))


# --- item 11: 2-D input is refused, never flattened ------------------------------------------------

TABLE = [[0.1, 0.2], [0.3, 0.4]]


@pytest.mark.parametrize(
    "call",
    [
        lambda: tuning_curve(TABLE, k=[1, 2]),
        lambda: apply_failure_policy(TABLE),
        lambda: mean_runtime(TABLE),
        lambda: tuning_curve([0.1, 0.2, 0.3, 0.4], runtimes=TABLE),
        lambda: tuning_curve([0.1, 0.2, 0.3, 0.4], runtimes=[1.0, 2.0]),  # one runtime per trial
        # These refused already; pinned so that every public function taking scores stays so.
        lambda: cdf_band(TABLE),
        lambda: v_statistic(TABLE),
        lambda: u_statistic(TABLE),
        lambda: running_max(TABLE),
        lambda: best_of_k_std(TABLE),
        lambda: bootstrap_interval(TABLE),
        lambda: order_statistics_coverage(TABLE, TABLE),
        lambda: tuning_curve([0.1, 0.2, 0.3], k=TABLE),
    ],
    ids=[
        "tuning_curve", "apply_failure_policy", "mean_runtime", "runtimes_2d", "runtimes_length", "cdf_band",
        "v_statistic", "u_statistic", "running_max", "best_of_k_std", "bootstrap_interval",
        "order_statistics_coverage", "budgets_2d",
    ],
)
def test_two_dimensional_input_is_refused_not_flattened(call):
    with pytest.raises(ArgumentError, match="1-D"):
        call()


# --- item 12: dkw_epsilon / ks_epsilon validate their arguments -----------------------------------


@pytest.mark.parametrize("epsilon", [dkw_epsilon, ks_epsilon])
@pytest.mark.parametrize(
    ("n", "confidence", "message"),
    [
        (10, -0.1, "confidence"),
        (10, 0.0, "confidence"),
        (10, 1.0, "confidence"),  # refused as everywhere in the API (opda returns inf)
        (10, 1.5, "confidence"),
        (10, math.nan, "confidence"),
        (10, True, "confidence"),
        (0, 0.8, "positive integer"),
        (-3, 0.8, "positive integer"),
        (1.5, 0.8, "positive integer"),
        (10.0, 0.8, "positive integer"),
        (True, 0.8, "positive integer"),
    ],
)
def test_band_half_widths_validate_their_arguments(epsilon, n, confidence, message):
    with pytest.raises(ArgumentError, match=message):
        epsilon(n, confidence)


def test_band_half_widths_unchanged_for_valid_arguments():
    assert dkw_epsilon(10, 0.8) == pytest.approx(math.sqrt(math.log(2 / 0.2) / 20), rel=1e-15)
    assert dkw_epsilon(np.int64(10), 0.8) == dkw_epsilon(10, 0.8)
    assert 0.0 < ks_epsilon(10, 0.8) < dkw_epsilon(10, 0.8)


# --- item 14: order_statistics_coverage refuses NaN -----------------------------------------------


@pytest.mark.parametrize(
    ("lower", "upper"),
    [([math.nan], [0.2]), ([0.1], [math.nan]), ([0.0, math.nan], [0.5, 1.0]), ([-math.inf], [0.5])],
)
def test_order_statistics_coverage_refuses_nan(lower, upper):
    with pytest.raises(ArgumentError, match="finite"):
        order_statistics_coverage(lower, upper)


# --- item 15: the exact coverage of the quantile-curve bands quoted in the docstring --------------


def _quantile_curve_coverage(n: int, ks: np.ndarray, q: float = 0.5) -> float:
    """Exact probability that the q-quantile curve bands hold at every budget in ``ks`` (continuous F).

    With the scores 1..n, the bands read off order statistics by index: the upper band at k is
    y_(i) (F^{-1}(p) <= y_(i) iff U_(i) >= p, p = q^(1/k)), the lower band y_(j) (y_(j) <= F^{-1}(p)
    iff U_(j) <= p; j = 0 is the bound a, no constraint). The event is a box for the uniform order
    statistics, whose probability order_statistics_coverage computes exactly.
    """
    band = cdf_band(np.arange(1.0, n + 1), 0.8, "ld-hd", a=0.0)
    lower_band, _, upper_band = quantile_tuning_curve(band, ks, q)
    lower, upper = np.zeros(n), np.ones(n)
    for p, i, j in zip(q ** (1.0 / np.asarray(ks, dtype=float)), upper_band, lower_band):
        if np.isfinite(i):  # b (inf): the data do not bound the curve there, no constraint
            lower[int(i) - 1] = max(lower[int(i) - 1], p)
        if j >= 1:
            upper[int(j) - 1] = min(upper[int(j) - 1], p)
    return order_statistics_coverage(lower, upper)


def test_quantile_curve_coverage_at_nominal_80_for_30_trials():
    # The docstring of quantile_tuning_curve said "about 0.89"; the exact values are 0.941 over the
    # integer budgets 1..30 and 0.881 over all real k >= 1 (the supremum over a fine grid of k).
    assert _quantile_curve_coverage(30, np.arange(1, 31)) == pytest.approx(0.941, abs=5e-4)
    assert _quantile_curve_coverage(30, np.geomspace(1.0, 1e6, 20_000)) == pytest.approx(0.881, abs=5e-4)
    # Over every budget the levels q^(1/k) cover [q, 1): nearer the nominal 0.8 the finer the grid.
    assert 0.8 <= _quantile_curve_coverage(30, np.geomspace(1.0, 1e6, 20_000)) < _quantile_curve_coverage(30, np.arange(1, 31))
    documented = quantile_tuning_curve.__doc__
    assert "0.941" in documented and "0.881" in documented and "0.89 " not in documented


# --- item 16: a == b (a point mass) is accepted by the library and by the command line alike -----


def _constant_curve_checks(data: dict) -> None:
    for key in ("median", "median_lower", "median_upper", "mean_lower", "mean_upper", "v"):
        assert data[key] == [0.5] * len(data["k"]), key


@pytest.mark.parametrize("method", ["ld-hd", "ld-et", "ks", "dkw"])
def test_point_mass_support_gives_exact_bands_in_the_library(method):
    # Support [0.5, 0.5]: every score is 0.5, so every curve and every band is exactly 0.5.
    curve = tuning_curve([0.5] * 6, a=0.5, b=0.5, method=method)
    _constant_curve_checks(curve.to_dict())


@pytest.mark.integration
def test_point_mass_support_on_the_command_line(capsys, tmp_path):
    path = tmp_path / "constant.csv"
    path.write_text("acc\n" + "0.5\n" * 6)
    assert main(["curve", str(path), "--score", "acc", "--a", "0.5", "--b", "0.5", "--json"]) == 0
    out, _ = capsys.readouterr()
    cli = json.loads(out)
    _constant_curve_checks(cli)
    library = tuning_curve([0.5] * 6, a=0.5, b=0.5, name=str(path)).to_dict()
    assert {key: cli[key] for key in library} == library
    # a > b is still refused, with one line naming both options.
    assert main(["curve", str(path), "--score", "acc", "--a", "0.6", "--b", "0.5"]) == 2
    _, err = capsys.readouterr()
    assert err.startswith("showwork: error:") and "--a (0.6) must not be greater than --b (0.5)" in err and err.count("\n") == 1


@pytest.mark.integration
def test_point_mass_support_in_a_report(capsys, tmp_path):
    # `report --a 0.5 --b 0.5` was refused ("support bounds need a < b") while curve and the library took it.
    path = tmp_path / "constant.csv"
    path.write_text("acc\n" + "0.5\n" * 6)
    out_dir = tmp_path / "report"
    assert main(["report", str(path), "--score", "acc", "--a", "0.5", "--b", "0.5", "--out", str(out_dir)]) == 0
    _, err = capsys.readouterr()
    assert "warning" not in err  # no singular axis limits on the CDF figure
    family = json.loads((out_dir / "report.json").read_text())["families"][0]
    _constant_curve_checks(family["curve"])
    assert (out_dir / "figures" / "cdfs.png").is_file()
    assert main(["report", str(path), "--score", "acc", "--a", "0.6", "--b", "0.5", "--out", str(tmp_path / "r2")]) == 2


# --- item 10: a row whose cells are all empty is a failed trial in CSV, TSV and JSON lines alike ---

# The audit's file (printf 'f1,lr\n0.7,0.1\n,\n0.8,0.2\n0.75,0.3\n') gave n = 3, n_failed = 0 in CSV.
EMPTY_ROW_FILES = {
    "trials.csv": "f1,lr\n0.7,0.1\n,\n0.8,0.2\n0.75,0.3\n",
    "trials.tsv": "f1\tlr\n0.7\t0.1\n\t\n0.8\t0.2\n0.75\t0.3\n",
    "trials.jsonl": '{"f1": 0.7, "lr": 0.1}\n{}\n{"f1": 0.8, "lr": 0.2}\n{"f1": 0.75, "lr": 0.3}\n',
    "spaces.csv": "f1,lr\n0.7,0.1\n , \n0.8,0.2\n0.75,0.3\n",  # cells of blanks are empty too
}


@pytest.mark.parametrize("name", sorted(EMPTY_ROW_FILES))
def test_all_empty_row_is_a_failed_trial_in_every_format(tmp_path, name):
    path = tmp_path / name
    path.write_text(EMPTY_ROW_FILES[name])
    table = read_results_table(path)
    assert table.lines == ((1, 2, 3, 4) if name.endswith(".jsonl") else (2, 3, 4, 5))  # no header in JSON lines
    scores = table.numeric_column("f1")
    assert len(scores) == 4 and math.isnan(scores[1])
    assert table.text_column("lr")[1] is None
    curve = tuning_curve(scores, failure_policy="worst", a=0.0)
    assert (curve.failures.n_trials, curve.failures.n_failed, curve.failures.failed) == (4, 1, (1,))


@pytest.mark.integration
@pytest.mark.parametrize("name", sorted(EMPTY_ROW_FILES))
def test_all_empty_row_on_the_command_line(capsys, tmp_path, name):
    path = tmp_path / name
    path.write_text(EMPTY_ROW_FILES[name])
    assert main(["curve", str(path), "--score", "f1"]) == 2  # the default policy refuses failed trials
    _, err = capsys.readouterr()
    line = 2 if name.endswith(".jsonl") else 3  # JSON lines have no header line
    assert f"1 of 4 trials have no finite score (the first is row 2, line {line} of the file)" in err
    assert err.count("\n") == 1
    assert main(["curve", str(path), "--score", "f1", "--failed", "worst", "--a", "0", "--json"]) == 0
    out, _ = capsys.readouterr()
    assert (json.loads(out)["n"], json.loads(out)["n_failed"]) == (4, 1)


def test_blank_lines_and_empty_rows_above_the_header_are_no_rows(tmp_path):
    path = tmp_path / "blank.csv"
    path.write_text(",\n\nf1,lr\n0.7,0.1\n\n   \n0.8,0.2\n")
    table = read_results_table(path)
    assert table.lines == (4, 7) and table.numeric_column("f1") == [0.7, 0.8]
    jsonl = tmp_path / "blank.jsonl"
    jsonl.write_text('{"f1": 0.7}\n\n   \n{"f1": 0.8}\n')
    assert read_results_table(jsonl).lines == (1, 4)


def test_failure_message_counts_trials_from_one():
    with pytest.raises(ArgumentError, match=r"the first is trial 1, counting from 1"):
        apply_failure_policy([math.nan, 0.5, 0.7])


# --- item 8: one keyword for the quantile; compare_curves names its curves and marks what is resolved


def test_quantile_is_the_one_keyword_and_q_a_deprecated_alias():
    band = cdf_band(np.linspace(0.1, 0.9, 30), 0.8, "ld-hd", a=0.0, b=1.0)
    calls = [
        (informative_budget, (30,), {}),
        (trials_needed, (5.0,), {}),
        (quantile_tuning_curve, (band, [1.0, 4.0]), {}),
        (quantile_levels, ([1.0, 4.0],), {}),
    ]
    for function, args, kwargs in calls:
        new = function(*args, quantile=0.75, **kwargs)
        with pytest.warns(DeprecationWarning, match=rf"{function.__name__}\(q=\.\.\.\) is deprecated.*use quantile="):
            old = function(*args, q=0.75, **kwargs)
        np.testing.assert_array_equal(np.asarray(old, dtype=float), np.asarray(new, dtype=float))
        with pytest.raises(ArgumentError, match="give quantile= only"):
            function(*args, q=0.75, quantile=0.75, **kwargs)
    # The same name as tuning_curve's keyword and TuningCurve's attribute.
    assert tuning_curve(np.linspace(0.1, 0.9, 30), quantile=0.75).quantile == 0.75
    with pytest.raises(ArgumentError, match="quantile must be strictly between 0 and 1"):
        informative_budget(30, quantile=1.0)


def test_compare_curves_names_curves_after_their_inputs():
    rng = np.random.default_rng(0)
    first, second = rng.beta(5, 2, 20), rng.beta(2, 5, 20)
    (pair,) = compare_curves([tuning_curve(first, k=[1, 2]), tuning_curve(second, k=[1, 2])])
    assert (pair.a, pair.b) == ("curve 1", "curve 2")  # their place in the input, counting from 1
    (pair,) = compare_curves([tuning_curve(first, k=[1, 2], name="cnn"), tuning_curve(second, k=[1, 2])])
    assert (pair.a, pair.b) == ("cnn", "curve 2")
    (pair,) = compare_curves({"A": tuning_curve(first, k=[1, 2], name="x"), "B": tuning_curve(second, k=[1, 2])})
    assert (pair.a, pair.b) == ("A", "B")  # a mapping's keys name them
    # Two curves of one name: one would hide the other (the old code compared "cnn" with nothing).
    with pytest.raises(ArgumentError, match="two curves are named 'cnn'"):
        compare_curves([tuning_curve(first, k=[1, 2], name="cnn"), tuning_curve(second, k=[1, 2], name="cnn")])
    with pytest.raises(ArgumentError, match="two curves are named 'curve 2'"):
        compare_curves([tuning_curve(first, k=[1, 2], name="curve 2"), tuning_curve(second, k=[1, 2])])


def _separated_pair(n: int = 25, k_max: int = 60):
    # Scores that do not overlap; the mean-curve bands (support [0, 1]) stay strong past the
    # informative budget (~4.6 for 25 trials) before the trivial band catches up.
    rng = np.random.default_rng(1)
    good, bad = 0.6 + 0.4 * rng.random(n), 0.4 * rng.random(n)
    ks = np.arange(1, k_max + 1, dtype=float)
    curves = {"good": tuning_curve(good, k=ks, a=0.0, b=1.0), "bad": tuning_curve(bad, k=ks, a=0.0, b=1.0)}
    return compare_curves(curves, statistic="mean")[0]


def test_compare_curves_marks_budgets_beyond_the_informative_budget_unresolved():
    pair = _separated_pair()
    assert pair.informative_k == pytest.approx(informative_budget(25))
    beyond = pair.k > pair.informative_k
    assert beyond.any() and (~beyond).any()
    # Strong evidence from k = 1 to 12; resolved only within the informative budget.
    assert set(pair.levels[pair.k <= 12]) == {"strong"}
    np.testing.assert_array_equal(pair.resolved, ~beyond)
    # The strong run is split at the informative budget; no range straddles it.
    assert [(r.k_start, r.k_end, r.level, r.resolved) for r in pair.ranges[:2]] == [
        (1.0, 4.0, "strong", True),
        (5.0, 12.0, "strong", False),
    ]
    assert not any(r.resolved for r in pair.ranges[1:])
    data = pair.to_dict()
    assert data["informative_k"] == pytest.approx(pair.informative_k)
    assert [r["resolved"] for r in data["ranges"]] == [True] + [False] * (len(data["ranges"]) - 1)


def test_the_report_reads_the_comparison_rule_from_one_place(search_results_dir):
    from showwork.report import ReportSettings, analyze
    from showwork.report.inputs import from_results_file

    families = [
        from_results_file(search_results_dir / file, "f1", label=name)[0]
        for name, file in (("MLP", "reuters_mlp_f1.csv"), ("LSTM", "reuters_lstm_f1.csv"))
    ]
    (pair,) = analyze(families, ReportSettings(a=0.0, b=1.0)).pairs
    c = pair.comparison
    assert pair.informative_k == c.informative_k
    np.testing.assert_array_equal(pair.resolved_budgets, c.k[c.resolved])
    for r, sentence in zip(c.ranges, pair.sentences()):
        assert r.resolved == (r.level == "strong" and r.k_end <= c.informative_k)
        assert sentence.endswith("(resolved; false-resolved chance ≤ 0.36)." if r.resolved else ").")
        assert ("(unresolved" in sentence) != r.resolved
        if r.level in ("weak", "fair"):
            assert f"(unresolved: {r.level} evidence has no error bound)" in sentence


@pytest.mark.integration
def test_compare_command_marks_unresolved_budgets(capsys, tmp_path):
    rng = np.random.default_rng(1)
    paths = []
    for name, scores in (("good", 0.6 + 0.4 * rng.random(25)), ("bad", 0.4 * rng.random(25))):
        path = tmp_path / f"{name}.csv"
        path.write_text("acc\n" + "".join(f"{s!r}\n" for s in scores.tolist()))
        paths.append(str(path))
    argv = ["compare", *paths, "--score", "acc", "--k", "1..60", "--a", "0", "--b", "1", "--statistic", "mean"]
    assert main(argv) == 0
    out, _ = capsys.readouterr()
    assert f"k = 1..4: strong evidence for {paths[0]} (resolved; false-resolved chance ≤ 0.36)" in out
    assert "at most 1 − c² = 0.36 for independent searches (2(1 − c) = 0.4 under any dependence)" in out
    assert f"k = 5..12: strong evidence for {paths[0]} (unresolved: beyond k = 4.6 at least one band" in out
    assert main(["compare", *paths, "--score", "acc", "--k", "1..60"]) == 0  # median: trivial bands there
    out, _ = capsys.readouterr()
    assert "none evidence" not in out and "(resolved; false-resolved chance ≤ 0.36)" in out

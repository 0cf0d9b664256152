"""The command line: `curve`, `compare`, `plan`; bad input gives one line on stderr and exit 2."""

import json
import math
import subprocess
import sys
import time

import numpy as np
import pytest

from showwork.cli import main
from showwork.statistics import tuning_curve

pytestmark = pytest.mark.integration


def run(capsys, *argv):
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exit:  # argparse rejects option values itself
        code = exit.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def scores_file(tmp_path):
    rng = np.random.default_rng(3)
    scores = rng.beta(5, 2, size=40)
    path = tmp_path / "results.csv"
    lines = ["trial,acc,time_s"] + [f"{i},{float(s)!r},{10 + i}" for i, s in enumerate(scores)]
    path.write_text("\n".join(lines) + "\n")
    return path, scores


def test_help_is_instant_and_lists_commands():
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "showwork", "--help"], capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    assert done.returncode == 0
    for command in ("curve", "compare", "plan"):
        assert command in done.stdout
    assert elapsed < 2.0  # generous for a loaded CI machine; numpy/scipy are not imported
    probe = "import sys, showwork.cli; print('numpy' in sys.modules or 'scipy' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout.strip() == "False"


def test_curve_json_matches_the_library(capsys, scores_file):
    path, scores = scores_file
    code, out, err = run(capsys, "curve", path, "--score", "acc", "--a", 0, "--b", 1, "--k", "1..10,12.5", "--json")
    assert code == 0, err
    data = json.loads(out)
    expected = tuning_curve(scores, [*range(1, 11), 12.5], a=0.0, b=1.0)
    for key in ("v", "median", "median_lower", "median_upper", "mean_lower", "mean_upper"):
        np.testing.assert_array_equal(data[key], getattr(expected, key))
    assert data["k"][-1] == 12.5 and data["u"][-1] is None
    assert data["n"] == 40 and data["method"] == "ld-hd" and data["confidence"] == 0.8
    assert 0.8 < data["critical_coverage"] < 1.0


def test_curve_json_without_bounds_has_null_mean_bands(capsys, scores_file):
    path, _ = scores_file
    code, out, _ = run(capsys, "curve", path, "--score", "acc", "--method", "ks", "--k", "3", "--json")
    data = json.loads(out)
    assert code == 0 and data["mean_lower"] is None and data["mean_upper"] is None
    assert data["critical_coverage"] is None and data["k"] == [3.0]


def test_curve_table_with_runtime_and_minimize(capsys, scores_file):
    path, _ = scores_file
    code, out, err = run(capsys, "curve", path, "--score", "acc", "--min", "--runtime", "time_s", "--k", "1,2")
    assert code == 0, err
    assert "minimized" in out and "cost (hours)" in out and "mean runtime: 29.5 s" in out
    code, out, _ = run(capsys, "curve", path, "--score", "acc", "--runtime", "time_s", "--k", "1,2",
                       "--cost-unit", "gpu-hours", "--gpus-per-trial", 0.5, "--json")
    data = json.loads(out)
    assert code == 0 and data["cost_unit"] == "gpu-hours"
    np.testing.assert_allclose(data["cost"], [29.5 * 0.5 / 3600, 2 * 29.5 * 0.5 / 3600])


def test_failed_trials_need_a_policy(capsys, tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("acc\n0.5\nnan\n0.7\n\n0.6\n")
    code, _, err = run(capsys, "curve", path, "--score", "acc")
    assert code == 2 and "1 of 4 trials have no finite score" in err and err.count("\n") == 1
    # Issue 24 item 4: a file's trials are its rows; the error names the row and the file's line, and the option.
    assert "(the first is row 2, line 3 of the file); choose --failed:" in err
    code, _, err = run(capsys, "compare", path, tmp_path / "r.csv", "--score", "acc")
    assert code == 2 and "the same file" in err
    other = tmp_path / "s.csv"
    other.write_text("acc\n0.5\n0.7\n")
    for argv in ((other, path), (other, path, "--cost", "acc")):  # each comparison names it alike
        code, _, err = run(capsys, "compare", *argv, "--score", "acc")
        assert code == 2 and f"{path}: column 'acc': 1 of 4 trials" in err and "(the first is row 2, line 3 of the file)" in err
    code, out, err = run(capsys, "curve", path, "--score", "acc", "--failed", "exclude", "--json")
    assert code == 0 and json.loads(out)["n_failed"] == 1 and "warning: excluding 1 failed" in err
    code, out, _ = run(capsys, "curve", path, "--score", "acc", "--failed", "worst", "--a", 0, "--json")
    data = json.loads(out)
    assert code == 0 and data["n"] == 4 and data["n_failed"] == 1


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--score", "nope"], "no column 'nope'"),
        (["--score", "acc", "--confidence", "1.5"], "--confidence must be strictly between 0 and 1"),
        (["--score", "acc", "--confidence", "x"], "--confidence must be a number"),
        (["--score", "acc", "--k", "0"], "--k values must be finite and at least 1"),
        (["--score", "acc", "--k", "5..2"], "--k range"),
        (["--score", "acc", "--k", "a"], "is not a number"),
        (["--score", "acc", "--a", "0.9"], "lower bound a=0.9 is greater than the smallest score"),
        (["--score", "acc", "--b", "0.1"], "upper bound b=0.1 is less than the largest score"),
        (["--score", "acc", "--a", "1", "--b", "0"], "--a (1.0) must not be greater than --b (0.0)"),
        (["--score", "acc", "--a", "nan"], "--a must be finite"),
        (["--score", "acc", "--method", "bootstrap"], "invalid choice"),
        (["--score", "trial_name"], "holds 'x0', which is not a number"),
    ],
)
def test_bad_curve_input_exits_2_with_one_line(capsys, tmp_path, argv, message):
    path = tmp_path / "r.csv"
    path.write_text("acc,trial_name\n0.5,x0\n0.7,x1\n0.6,x2\n")
    code, out, err = run(capsys, "curve", path, *argv)
    assert code == 2
    assert message in err
    assert err.startswith("showwork: error:") and err.count("\n") == 1 and out == ""


@pytest.mark.parametrize("content, message", [("", "is empty"), ("acc\n", "header but no rows")])
def test_empty_files_exit_2(capsys, tmp_path, content, message):
    path = tmp_path / "r.csv"
    path.write_text(content)
    code, _, err = run(capsys, "curve", path, "--score", "acc")
    assert code == 2 and message in err


def test_missing_file_exits_2(capsys, tmp_path):
    code, _, err = run(capsys, "curve", tmp_path / "none.csv", "--score", "acc")
    assert code == 2 and "no such file" in err


def test_curve_json_writes_the_quantile_curve_under_both_names(capsys, scores_file):
    """Issue 18 item 6: quantile_curve* are the names; median* stay in the JSON for one release."""
    path, scores = scores_file
    code, out, err = run(capsys, "curve", path, "--score", "acc", "--quantile", 0.25, "--confidence", 0.9, "--json")
    assert code == 0, err
    data = json.loads(out)
    expected = tuning_curve(scores, quantile=0.25, confidence=0.9).to_dict()
    for new, old in (("quantile_curve", "median"), ("quantile_curve_lower", "median_lower"),
                     ("quantile_curve_upper", "median_upper")):
        assert data[new] == data[old] == expected[new]
    assert data["quantile"] == 0.25 and data["confidence"] == 0.9


def test_plan_matches_library(capsys):
    from showwork.statistics import trials_needed

    code, out, _ = run(capsys, "plan", "--k", 10, "--json")
    data = json.loads(out)
    assert code == 0 and data["trials_needed"] == trials_needed(10)
    assert data["informative_budget"] >= 10
    code, out, _ = run(capsys, "plan", "--k", 10)
    assert code == 0 and f"n = {data['trials_needed']} trials" in out


def test_plan_rejects_k_below_one(capsys):
    code, _, err = run(capsys, "plan", "--k", 0.5)
    assert code == 2 and "--k must be at least 1" in err


def test_compare_on_real_deberta_results(capsys, search_results_dir):
    base = search_results_dir / "deberta-base_mnli_tuning.csv"
    v3 = search_results_dir / "deberta-v3-base_mnli_tuning.csv"
    code, out, err = run(capsys, "compare", base, v3, "--score", "matched_acc_best", "--k", "1..10", "--target", 0.89, "--json")
    assert code == 0, err
    data = json.loads(out)
    (pair,) = data["pairs"]
    assert pair["ranges"] == [{"k_start": 1.0, "k_end": 10.0, "level": "strong", "favoured": str(v3), "resolved": True}]
    assert pair["informative_k"] > 10  # n = 1,024: every budget asked is within reach
    reach = data["budgets_to_reach"]
    assert reach[str(v3)]["median"] < reach[str(base)]["median"]
    code, out, _ = run(capsys, "compare", base, v3, "--score", "matched_acc_best", "--k", "1..5")
    assert code == 0 and "strong evidence for" in out


def test_compare_needs_two_distinct_files(capsys, scores_file):
    path, _ = scores_file
    code, _, err = run(capsys, "compare", path, "--score", "acc")
    assert code == 2 and "at least two" in err
    code, _, err = run(capsys, "compare", path, path, "--score", "acc")
    assert code == 2 and "twice" in err


def test_curve_on_real_reuters_mlp(capsys, search_results_dir):
    code, out, _ = run(capsys, "curve", search_results_dir / "reuters_mlp_f1.csv", "--score", "f1", "--k", "1..20", "--json")
    data = json.loads(out)
    assert code == 0 and data["n"] == 145
    assert all(lo <= m <= hi for lo, m, hi in zip(data["median_lower"], data["median"], data["median_upper"]))
    assert math.isclose(data["u"][0], data["v"][0]) and data["u"][19] >= data["v"][19]  # U >= V: V is biased low


def test_cli_choices_are_the_librarys_constants():
    # One home each (showwork.constants, import-light so that `showwork --help` need not import numpy/scipy).
    from showwork import constants, sampling, space
    from showwork.commands import curve, options, plan, report
    from showwork.statistics import FAILURE_POLICIES, METHODS
    from showwork.statistics.cost import COST_UNITS
    from showwork.store import records
    from showwork.tracking import mlflow_format

    assert options.BAND_METHODS is plan.BAND_METHODS is METHODS is constants.BAND_METHODS
    assert options.FAILURE_POLICIES is report.FAILURE_POLICIES is FAILURE_POLICIES is space.FAILURE_POLICIES is constants.FAILURE_POLICIES
    assert curve.COST_UNITS is report.COST_UNITS is COST_UNITS is constants.COST_UNITS
    assert records.STATUSES is mlflow_format.TRIAL_STATUSES is constants.TRIAL_STATUSES
    assert sampling.MAX_SEED == space.SearchSpec.model_fields["seed"].metadata[-1].le == 2**63 - 1


# --- issue 15, "Errors": bad input is one line and exit 2; a bug is a traceback ----------------------


def test_a_bug_raising_value_error_is_a_traceback_not_bad_input(monkeypatch, capsys):
    """Before, main caught every ValueError: a bug in numpy or showwork read as 'showwork: error:', exit 2."""
    import showwork.statistics

    def broken(*args, **kwargs):
        raise ValueError("an internal invariant failed")

    monkeypatch.setattr(showwork.statistics, "trials_needed", broken)
    with pytest.raises(ValueError, match="an internal invariant failed"):  # python -m showwork: traceback, exit 1
        main(["plan", "--k", "5"])
    assert "showwork: error" not in capsys.readouterr().err


def test_a_bug_in_a_subprocess_shows_its_traceback_and_exits_1():
    code = ("import sys, showwork.statistics as s; from showwork.cli import main\n"
            "s.informative_budget = lambda *a, **k: 1 / 0\n"
            "sys.exit(main(['plan', '--k', '5']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "Traceback (most recent call last)" in done.stderr and "ZeroDivisionError" in done.stderr
    assert "showwork: error" not in done.stderr


def test_debug_shows_the_traceback_of_bad_input_too(capsys):
    assert main(["plan", "--k", "0.5"]) == 2
    err = capsys.readouterr().err
    assert err == "showwork: error: --k must be at least 1 (got 0.5)\n"
    assert main(["--debug", "plan", "--k", "0.5"]) == 2
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "InputError" in err
    assert err.splitlines()[-1] == "showwork: error: --k must be at least 1 (got 0.5)"


def test_the_error_classes_say_bad_input_or_outage_and_none_is_a_value_error():
    from showwork.errors import InputError, ShowworkError, UnavailableError
    from showwork.run import SearchStorageError
    from showwork.store import LedgerLockedError, LedgerWriteError

    assert not issubclass(ShowworkError, ValueError)
    assert InputError.exit_code == 2
    for outage in (UnavailableError, LedgerLockedError, LedgerWriteError, SearchStorageError):
        assert issubclass(outage, ShowworkError) and not issubclass(outage, InputError) and outage.exit_code == 1


def test_a_value_error_inside_the_curve_computation_is_a_traceback_but_bad_scores_stay_bad_input(tmp_path, monkeypatch, capsys):
    """curve used to turn every ValueError of tuning_curve into bad input; now only the statistics' ArgumentError."""
    import showwork.statistics.tuning_curves

    results = tmp_path / "r.csv"
    results.write_text("acc\n0.5\n0.7\n0.6\n")
    assert main(["curve", str(results), "--score", "acc", "--a", "0.6"]) == 2  # a score below --a: bad input
    assert "showwork: error:" in capsys.readouterr().err

    def broken(*args, **kwargs):
        raise ValueError("operands could not be broadcast together")

    monkeypatch.setattr(showwork.statistics.tuning_curves, "quantile_tuning_curve", broken)
    with pytest.raises(ValueError, match="broadcast"):
        main(["curve", str(results), "--score", "acc"])


def test_compare_words_no_evidence(capsys, search_results_dir):
    """Issue 17 item 7: a range without evidence reads "no evidence", never "none evidence"."""
    mlp, lstm = search_results_dir / "reuters_mlp_f1.csv", search_results_dir / "reuters_lstm_f1.csv"
    code, out, err = run(capsys, "compare", mlp, lstm, "--score", "f1", "--a", 0, "--b", 1)
    assert code == 0, err
    assert "no evidence" in out and "none evidence" not in out


def test_compare_marks_target_budgets_beyond_the_informative_budget(tmp_path, capsys):
    # `compare --target` printed a bare "v 97" for a budget far past what 50 trials can bound.
    rng = np.random.default_rng(7)
    low, high = tmp_path / "low.csv", tmp_path / "high.csv"
    low.write_text("acc\n" + "".join(f"{x:.4f}\n" for x in rng.uniform(0.30, 0.40, 20)))
    high.write_text("acc\n" + "".join(f"{x:.4f}\n" for x in rng.uniform(0.35, 0.45, 20)))
    assert main(["compare", str(low), str(high), "--score", "acc", "--target", "0.399", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    limit = data["informative_k"][str(low)]
    assert 1 < limit < 20 and data["budgets_to_reach"][str(low)]["v"] > limit
    assert main(["compare", str(low), str(high), "--score", "acc", "--target", "0.399"]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if line.startswith(f"  {low}:"))
    assert f"v {data['budgets_to_reach'][str(low)]['v']} (beyond k ≈ {limit:.3g}: more trials needed)" in line
    cells = dict(cell.split(" ", 1) for cell in line.split(": ", 1)[1].split(", "))
    assert "beyond" not in cells["median_lower"]  # the pessimistic band holds at every budget: never marked


@pytest.mark.parametrize("command", ["curve", "compare", "report"])
def test_reduce_is_refused_without_a_ray_source(tmp_path, capsys, command):
    path = tmp_path / "trials.csv"
    path.write_text("acc\n0.5\n0.6\n0.7\n")
    files = [str(path)] if command != "compare" else [str(path), str(path.with_name("b.csv"))]
    path.with_name("b.csv").write_text("acc\n0.4\n0.6\n0.8\n")
    extra = ["--out", str(tmp_path / "r")] if command == "report" else []
    assert main([command, *files, "--score", "acc", "--reduce", "best", *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith("showwork: error:") and "--reduce" in err and "ray:" in err and err.count("\n") == 1


@pytest.mark.parametrize("command, option", [("report", "--cost-u"), ("report", "--grid"), ("curve", "--run"), ("compare", "--conf")])
def test_a_shortened_option_is_an_error_not_another_option(tmp_path, capsys, command, option):
    """argparse's prefix matching is off in every command: `--cost-u hours` is not read as --cost-unit."""
    path = tmp_path / "trials.csv"
    path.write_text("acc\n0.5\n0.6\n0.7\n")
    files = [str(path)] if command != "compare" else [str(path), str(path)]
    extra = ["--out", str(tmp_path / "r")] if command == "report" else []
    code, out, err = run(capsys, command, *files, "--score", "acc", *extra, option, "1")
    assert code == 2 and out == ""
    assert err.startswith("showwork: error:") and err.count("\n") == 1 and "unrecognized arguments" in err and option in err
    assert not (tmp_path / "r").exists()

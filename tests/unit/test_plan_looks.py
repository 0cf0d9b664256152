"""`showwork plan --looks`: the parser and the handler without files (the schedule's levels and budgets)."""

import json

import pytest

from showwork.statistics import BandSpec, informative_budget, ld_joint_critical_coverage
from tests.helpers import run_cli


def test_per_look_numbers_are_the_librarys(capsys):
    code, out, err = run_cli(capsys, "plan", "--looks", "12,24,48", "--confidence", "0.9", "--json")
    assert code == 0, err
    data = json.loads(out)
    level = ld_joint_critical_coverage((12, 24, 48), 0.9, "highest_density")
    assert data["looks"] == [12, 24, 48] and data["races"] is None
    for row, n in zip(data["per_look"], (12, 24, 48)):
        assert row["look"] == n and row["critical_coverage"] == level.critical_coverage and row["exact"] is level.exact
        assert row["informative_k"] == informative_budget(n, bands=BandSpec(confidence=0.9, looks=(12, 24, 48)))
        assert row["informative_k_fixed_n"] == informative_budget(n, confidence=0.9)
        assert row["informative_k"] < row["informative_k_fixed_n"]  # what the schedule costs


def test_text_names_each_look_and_what_the_schedule_costs(capsys):
    code, out, _ = run_cli(capsys, "plan", "--looks", "12,24,48")
    lines = out.splitlines()
    assert code == 0 and "Race at looks 12,24,48" in lines[0]
    assert [line.split()[1] for line in lines[2:5]] == ["12", "24", "48"]
    assert "at n = 48 the joint bands are informative up to k = 6.98, one look at n = 48 up to k = 8.15" in out


def test_a_schedule_beyond_the_exact_computation_says_its_level_is_a_bound(capsys):
    code, out, _ = run_cli(capsys, "plan", "--looks", "8,16,24,32,40,48", "--json")
    assert code == 0 and not any(row["exact"] for row in json.loads(out)["per_look"])
    code, out, _ = run_cli(capsys, "plan", "--looks", "8,16,24,32,40,48")
    assert "Hunter-Worsley" in out


def test_plan_k_is_unchanged(capsys):
    code, out, _ = run_cli(capsys, "plan", "--k", "10", "--json")
    assert code == 0 and json.loads(out)["trials_needed"] >= 10


@pytest.mark.parametrize("argv, message", [
    ([], "give --k K (the largest budget, for one fixed n) or --looks"),
    (["--looks", "12,24", "--k", "3"], "not both"),
    (["--looks", "24,12"], "--looks 24,12: looks must be strictly increasing"),
    (["--looks", "12,,24"], "looks must be whole trial counts"),
    (["--looks", "0,12"], "strictly increasing trial counts"),
    (["--looks", "12,24", "--method", "ks"], "looks need an LD method"),
    (["--looks", "12,24", "--decide-at", "2"], "--pilot A B and --decide-at K go together"),
    (["--looks", "12,24", "--pilot", "a.csv", "b.csv"], "--pilot A B and --decide-at K go together"),
    (["--looks", "12,24", "--pilot", "a.csv", "b.csv", "--decide-at", "2"], "a.csv: not a results file, nor a search in"),
    (["--looks", "12,24", "--pilot", "a.csv", "a.csv", "--decide-at", "2", "--score", "x"], "the same file is given twice"),
    (["--looks", "12,24", "--pilot", "a.csv", "b.csv", "--decide-at", "0.5", "--score", "x"], "--decide-at values must be at least 1"),
    (["--k", "3", "--pilot", "a.csv", "b.csv", "--decide-at", "2"], "give its schedule with --looks"),
    (["--looks", "12,24", "--decide-at", "x"], "--decide-at must be a number"),
    (["--looks", "12,24", "--races", "0"], "--races must be at least 1"),
])
def test_bad_input_is_one_error_line_and_exit_2(capsys, argv, message):
    code, out, err = run_cli(capsys, "plan", *argv)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("showwork: error:") and message in lines[0]

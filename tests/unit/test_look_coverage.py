"""The joint coverage of nested samples at a schedule of looks, and the joint LD level.

Checked against brute-force enumeration (every assignment of the draws to the cells between the
end points: the events only depend on which cell each draw falls in), against the one-sample
recursion, against Monte Carlo, and the Hunter-Worsley bound against the exact value.
"""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from showwork.statistics import (
    ArgumentError,
    BandSpec,
    LookSchedule,
    beta_intervals,
    cdf_band,
    compare_curves,
    informative_budget,
    joint_failure_bound,
    ld_critical_coverage,
    ld_joint_critical_coverage,
    nested_coverage,
    order_statistics_coverage,
    trials_needed,
    tuning_curve,
)
from showwork.statistics.look_coverage import nested_coverage_work


def brute_force(looks, lowers, uppers) -> float:
    """P(every look's order statistics in their intervals), by enumerating the draws' cells."""
    lowers = [np.maximum.accumulate(np.clip(np.asarray(x, float), 0, 1)) for x in lowers]
    uppers = [np.minimum.accumulate(np.clip(np.asarray(x, float), 0, 1)[::-1])[::-1] for x in uppers]
    edges = np.unique(np.concatenate([[0.0, 1.0], *lowers, *uppers]))
    left, right, mass = edges[:-1], edges[1:], np.diff(edges)
    keep = mass > 0
    left, right, mass = left[keep], right[keep], mass[keep]
    total = 0.0
    n = looks[-1]
    for cells in itertools.product(range(mass.size), repeat=n):
        cells = np.array(cells)
        ok = True
        for look, lo, hi in zip(looks, lowers, uppers):
            first = np.sort(cells[:look])
            # The i-th smallest draw lies in cell first[i]: inside [lo_i, hi_i] iff the whole cell is.
            if np.any(left[first] < lo) or np.any(right[first] > hi):
                ok = False
                break
        if ok:
            total += float(np.prod(mass[cells]))
    return total


def random_bounds(rng, looks):
    lowers, uppers = [], []
    for n in looks:
        centre = np.sort(rng.uniform(size=n))
        width = rng.uniform(0.05, 0.6, size=n)
        lowers.append(np.clip(centre - width * rng.uniform(size=n), 0, 1))
        uppers.append(np.clip(centre + width * rng.uniform(size=n), 0, 1))
    return lowers, uppers


@pytest.mark.parametrize("looks", [(1, 3), (2, 4), (1, 2, 4), (1, 2, 3, 4)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_nested_coverage_equals_brute_force_enumeration(looks, seed):
    lowers, uppers = random_bounds(np.random.default_rng(seed), looks)
    expected = brute_force(looks, lowers, uppers)
    assert nested_coverage(looks, lowers, uppers) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("looks", [(2, 4), (1, 2, 4), (2, 3, 4)])
def test_symmetric_bands_take_the_mirror_shortcut_and_still_equal_brute_force(looks):
    # LD intervals mirror (lower_i = 1 - upper_{n+1-i}): the walk stops at 1/2 and meets its mirror.
    bounds = [beta_intervals(n, 0.1, "highest_density")[:2] for n in looks]
    lowers, uppers = [b[0] for b in bounds], [b[1] for b in bounds]
    expected = brute_force(looks, lowers, uppers)
    assert nested_coverage(looks, lowers, uppers) == pytest.approx(expected, abs=1e-12)
    # Breaking the symmetry by a hair takes the full walk: the same value to that hair.
    uppers[0] = uppers[0].copy()
    uppers[0][0] = min(1.0, uppers[0][0] + 1e-11)
    assert nested_coverage(looks, lowers, uppers) == pytest.approx(expected, abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 30), st.integers(0, 10**6))
def test_one_look_is_the_one_sample_recursion(n, seed):
    lowers, uppers = random_bounds(np.random.default_rng(seed), (n,))
    assert nested_coverage([n], lowers, uppers) == pytest.approx(order_statistics_coverage(lowers[0], uppers[0]), abs=1e-13)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=2, max_size=3), st.integers(0, 10**6))
def test_hunter_worsley_bound_is_never_below_the_exact_failure(steps, seed):
    looks = tuple(np.cumsum(steps).tolist())
    lowers, uppers = random_bounds(np.random.default_rng(seed), looks)
    exact_failure = 1.0 - nested_coverage(looks, lowers, uppers)
    bound = joint_failure_bound(looks, lowers, uppers)
    assert bound >= exact_failure - 1e-12
    if len(looks) == 2:  # two looks: the inequality is an equality
        assert bound == pytest.approx(exact_failure, abs=1e-12)


def test_monte_carlo_agrees_with_the_exact_joint_coverage():
    looks, level = (12, 24, 48), 0.99
    bounds = [beta_intervals(n, 1 - level, "equal_tailed")[:2] for n in looks]
    exact = nested_coverage(looks, [b[0] for b in bounds], [b[1] for b in bounds])
    rng = np.random.default_rng(7)
    replicates = 40_000
    draws = rng.uniform(size=(replicates, looks[-1]))
    inside = np.ones(replicates, dtype=bool)
    for n, (lo, hi) in zip(looks, bounds):
        first = np.sort(draws[:, :n], axis=1)
        inside &= np.all((first >= lo) & (first <= hi), axis=1)
    estimate = inside.mean()
    standard_error = math.sqrt(exact * (1 - exact) / replicates)
    assert abs(estimate - exact) <= 3 * standard_error


def test_a_joint_level_holds_the_schedule_at_the_confidence_exactly():
    looks = (12, 24, 48)
    level = ld_joint_critical_coverage(looks, 0.8, "highest_density")
    assert level.exact
    bounds = [beta_intervals(n, 1 - level.critical_coverage, "highest_density")[:2] for n in looks]
    # Solved to 1e-7 in log(1 - c) and rounded up (the conservative side): at least 0.8, barely more.
    assert 0.8 - 1e-12 <= nested_coverage(looks, [b[0] for b in bounds], [b[1] for b in bounds]) <= 0.8 + 1e-6
    # Wider than the last look's own level (looking more often costs width), narrower than Bonferroni.
    assert level.critical_coverage > ld_critical_coverage(48, 0.8, "highest_density")
    assert level.critical_coverage < max(ld_critical_coverage(n, 1 - 0.2 / 3, "highest_density") for n in looks)


@pytest.mark.parametrize("looks", [(5, 10), (12, 24, 48), (25, 50, 100)])
@pytest.mark.parametrize("confidence", [0.8, 0.95])
@pytest.mark.parametrize("kind", ["equal_tailed", "highest_density"])
def test_an_exact_joint_level_covers_a_few_1e8_above_the_confidence_as_its_docstring_says(looks, confidence, kind):
    # JointLevel.exact: solved to a tolerance on the conservative side, so above the confidence, not equal to it.
    level = ld_joint_critical_coverage(looks, confidence, kind)
    assert level.exact
    bounds = [beta_intervals(n, 1 - level.critical_coverage, kind)[:2] for n in looks]
    excess = nested_coverage(looks, [b[0] for b in bounds], [b[1] for b in bounds]) - confidence
    assert 2.3e-8 <= excess <= 8e-8


def test_the_monte_carlo_of_the_issue_is_reproduced_for_equal_tailed_bands():
    # Issue 27: 40,000 Monte Carlo replicates gave c* = 0.98429 (n = 48) and 0.99175 (looks 12, 24, 48).
    assert ld_critical_coverage(48, 0.8, "equal_tailed") == pytest.approx(0.98429, abs=2e-4)
    assert ld_joint_critical_coverage((12, 24, 48), 0.8, "equal_tailed").critical_coverage == pytest.approx(0.99175, abs=2e-4)


def test_above_the_work_limit_the_level_is_a_conservative_bound():
    looks = (8, 16, 24, 32, 40, 48)
    bounds_of = lambda c: [beta_intervals(n, 1 - c, "equal_tailed")[:2] for n in looks]  # noqa: E731
    level = ld_joint_critical_coverage(looks, 0.8, "equal_tailed")
    assert not level.exact  # six axes: the exact state is too large for the limit
    bounds = bounds_of(level.critical_coverage)
    assert nested_coverage_work(looks, [b[0] for b in bounds], [b[1] for b in bounds], limit=1e9) > 3e8
    # Solved to 1e-5 in log(1 - c) on the conservative side: the bound's coverage within 5e-5 above 0.8.
    assert 0.8 - 1e-12 <= 1 - joint_failure_bound(looks, [b[0] for b in bounds], [b[1] for b in bounds]) <= 0.8 + 5e-5


@pytest.mark.slow
def test_the_bound_level_covers_at_least_the_confidence_by_monte_carlo():
    looks = (8, 16, 24, 32, 40, 48)
    level = ld_joint_critical_coverage(looks, 0.8, "equal_tailed")
    bounds = [beta_intervals(n, 1 - level.critical_coverage, "equal_tailed")[:2] for n in looks]
    rng = np.random.default_rng(11)
    draws = rng.uniform(size=(40_000, 48))
    inside = np.ones(len(draws), dtype=bool)
    for n, (lo, hi) in zip(looks, bounds):
        first = np.sort(draws[:, :n], axis=1)
        inside &= np.all((first >= lo) & (first <= hi), axis=1)
    assert inside.mean() >= 0.8 - 3 * math.sqrt(0.16 / len(draws))


def test_joint_levels_are_cached_on_disk_and_a_corrupt_cache_is_recomputed(tmp_path, monkeypatch):
    from showwork.statistics import joint_levels

    monkeypatch.setenv("SHOWWORK_CACHE_DIR", str(tmp_path))
    joint_levels._joint_level_cached.cache_clear()
    first = ld_joint_critical_coverage((5, 10), 0.9)
    (path,) = list(tmp_path.rglob("ld-joint-*/*.json"))
    assert json.loads(path.read_text())["critical_coverage"] == first.critical_coverage
    path.write_text("{not json")
    joint_levels._joint_level_cached.cache_clear()
    assert ld_joint_critical_coverage((5, 10), 0.9) == first


@pytest.mark.parametrize(
    "text, message",
    [("24,12", "strictly increasing"), ("0,5", "strictly increasing"), ("12,,24", "whole trial counts"), ("a", "whole trial counts"), ("12,12", "strictly increasing")],
)
def test_a_bad_schedule_is_refused_with_what_was_given(text, message):
    with pytest.raises(ArgumentError, match=message):
        LookSchedule.parse(text)


def test_band_specs_with_looks():
    spec = BandSpec(looks=[12, 24, 48])
    assert spec.looks == (12, 24, 48) and "looks=(12, 24, 48)" in repr(spec)
    assert "looks" not in repr(BandSpec())  # unchanged for fixed-n bands
    with pytest.raises(ArgumentError, match="LD method"):
        BandSpec(method="dkw", looks=(12, 24))
    with pytest.raises(ArgumentError, match="not one of the looks"):
        cdf_band(np.arange(20.0), bands=spec)
    band = cdf_band(np.arange(24.0), bands=spec)
    assert band.looks == (12, 24, 48) and band.critical_exact
    assert band.critical_coverage == ld_joint_critical_coverage((12, 24, 48), 0.8).critical_coverage
    # The joint bands are wider: their informative budget is smaller than the fixed-n one, at every look.
    for n in spec.looks:
        assert informative_budget(n, bands=spec) < informative_budget(n)
    with pytest.raises(ArgumentError, match="one fixed n"):
        trials_needed(5, bands=spec)


def test_curves_with_and_without_a_schedule_are_not_compared():
    scores = np.random.default_rng(0).normal(size=24)
    a = tuning_curve(scores, [1, 2], bands=BandSpec(looks=(12, 24)), name="a")
    b = tuning_curve(scores, [1, 2], name="b")
    with pytest.raises(ArgumentError, match="looks"):
        compare_curves([a, b])
    # And a curve of a schedule carries it, so its comparison reads the joint informative budget.
    (pair,) = compare_curves([a, tuning_curve(scores, [1, 2], bands=BandSpec(looks=(12, 24)), name="c")])
    assert pair.informative_k == pytest.approx(informative_budget(24, bands=BandSpec(looks=(12, 24))))


def test_bad_bounds_are_refused():
    with pytest.raises(ArgumentError, match="one lower and one upper"):
        nested_coverage([2, 3], [[0, 0]], [[1, 1]])
    with pytest.raises(ArgumentError, match="bounds of shapes"):
        nested_coverage([2, 3], [[0, 0], [0, 0]], [[1, 1], [1, 1, 1]])
    with pytest.raises(ArgumentError, match="finite"):
        nested_coverage([1, 2], [[np.nan], [0, 0]], [[1], [1, 1]])
    assert nested_coverage([1, 2], [[0.6], [0, 0]], [[0.5], [1, 1]]) == 0.0  # an empty interval


DOCS = __import__("pathlib").Path(__file__).resolve().parents[2] / "docs" / "statistics.md"


@pytest.mark.parametrize("looks, confidence", [((12, 24, 48), 0.8), ((12, 24, 48), 0.95), ((25, 50, 100), 0.8), ((8, 16, 24, 32, 40, 48), 0.8)])
def test_the_cost_table_of_the_statistics_page_is_what_the_code_computes(looks, confidence):
    spec = BandSpec(confidence=confidence, looks=looks)
    level = ld_joint_critical_coverage(looks, confidence)
    budgets = " · ".join(f"{informative_budget(n, bands=spec):.2f} / {informative_budget(n, confidence=confidence):.2f}" for n in looks)
    row = f"| {level.critical_coverage:.5f} | {ld_critical_coverage(looks[-1], confidence, 'highest_density'):.5f} | {budgets} |"
    assert row in DOCS.read_text(encoding="utf-8")
    assert level.exact == (len(looks) <= 3)  # the page says the six-look row is the bound


def test_the_joint_level_beats_bonferroni_over_the_looks_as_the_statistics_page_says():
    looks = (12, 24, 48)
    joint, bonferroni = BandSpec(looks=looks), BandSpec(confidence=1 - 0.2 / 3)
    for n in looks[1:]:
        assert informative_budget(n, bands=joint) > informative_budget(n, bands=bonferroni)
    assert informative_budget(12, bands=joint) < informative_budget(12, bands=bonferroni)
    page = DOCS.read_text(encoding="utf-8")
    assert f"{informative_budget(48, bands=bonferroni):.2f} instead of {informative_budget(48, bands=joint):.2f} at n = 48" in page
    assert f"{informative_budget(12, bands=bonferroni):.2f} instead of {informative_budget(12, bands=joint):.2f} at n = 12" in page


def test_the_cost_table_of_the_race_page_is_what_the_code_computes():
    import re

    page = (DOCS.parent / "how-to" / "race.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| ([\d, ]+) \| (\d+) \| ([\d.]+) \| ([\d.]+) \|$", page, flags=re.MULTILINE)
    assert len(rows) >= 6
    for schedule, n, joint, fixed in rows:
        looks = tuple(int(x) for x in schedule.split(","))
        assert f"{informative_budget(int(n), bands=BandSpec(looks=looks)):.2f}" == joint
        assert f"{informative_budget(int(n)):.2f}" == fixed


def test_the_informative_budgets_the_statistics_page_and_the_race_study_quote_are_the_codes():
    # The prose beside the race study's table, and the study's docstring, quote k* of the joint bands at
    # looks 12, 24, 48 for c = 0.8 and 0.95, and of the fixed-n bands at c = 0.8 (1.2947 was once written 1.30).
    looks = (12, 24, 48)
    joint = {c: [f"{informative_budget(n, bands=BandSpec(confidence=c, looks=looks)):.2f}" for n in looks] for c in (0.8, 0.95)}
    fixed = [f"{informative_budget(n, confidence=0.8):.2f}" for n in looks]
    page = " ".join(DOCS.read_text(encoding="utf-8").split())
    assert (f"12 (k* = {joint[0.8][0]} at c = 0.8, {joint[0.95][0]} at 0.95) and within it at 24 and 48"
            f" ({joint[0.8][1]}, {joint[0.8][2]}; {joint[0.95][1]}, {joint[0.95][2]}), where fixed-n bands reach"
            f" {', '.join(fixed)}") in page
    study = " ".join((DOCS.parents[1] / "experiments" / "sequential.py").read_text(encoding="utf-8").split())
    assert (f"(``informative_budget``: k* = {joint[0.8][1]} and {joint[0.8][2]} at c = 0.8; {joint[0.95][1]} and"
            f" {joint[0.95][2]} at 0.95) but not at look 12 ({joint[0.8][0]}; {joint[0.95][0]})") in study
    assert f"at c = 0.8 (k* = {fixed[0]})" in study

"""Issue 24 item 2: a budget is resolved only where the evidence has a stated error bound.

Strong evidence (the bands exclude each other) within both informative budgets is resolved; fair
and weak evidence are reported as such. Where both bands hold, strong evidence for a curve that is
not better cannot occur, so the chance of any false resolved budget is at most 1 - c² for
independent searches (2(1 - c) in any case): the derivation is in
``showwork/statistics/comparison.py``; the simulation that measures the rates is
``tests/integration/test_experiments_evidence_errors.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from showwork.statistics import (
    RESOLVED_LEVELS,
    ArgumentError,
    compare_curves,
    evidence,
    false_strong_bound,
    tuning_curve,
)


def _fair_pair():
    # Two samples of ONE distribution: fair evidence for b at k = 3, within the informative budget.
    rng = np.random.default_rng(0)
    a, b = rng.normal(0.5, 0.1, 30), rng.normal(0.5, 0.1, 30)
    ks = np.arange(1, 31, dtype=float)
    return compare_curves({"a": tuning_curve(a, k=ks), "b": tuning_curve(b, k=ks)})[0]


def test_fair_evidence_between_samples_of_one_distribution_is_not_resolved():
    pair = _fair_pair()
    fair = pair.levels == "fair"
    assert fair.any() and np.all(pair.k[fair] <= pair.informative_k)  # the old rule called these resolved
    assert not pair.resolved.any()
    assert RESOLVED_LEVELS == ("strong",)
    assert [r.resolved for r in pair.ranges if r.level == "fair"] == [False]


def test_false_strong_bound_is_one_minus_c_squared_or_the_union_bound():
    assert false_strong_bound(0.8) == pytest.approx(0.36)
    assert false_strong_bound(0.95) == pytest.approx(0.0975)
    assert false_strong_bound(0.8, independent=False) == pytest.approx(0.4)
    assert false_strong_bound(0.8, curves=3) == pytest.approx(1 - 0.8**3)
    assert false_strong_bound(0.8, curves=3, independent=False) == pytest.approx(0.6)
    assert false_strong_bound(0.2, curves=3, independent=False) == 1.0  # a probability: capped
    # Independence only helps: 1 - c^m <= m (1 - c) (Bernoulli's inequality).
    for c in np.linspace(0.01, 0.99, 50):
        assert false_strong_bound(c) <= false_strong_bound(c, independent=False) + 1e-15
    for bad in (0.0, 1.0, 1.5):
        with pytest.raises(ArgumentError):
            false_strong_bound(bad)
    with pytest.raises(ArgumentError):
        false_strong_bound(0.8, curves=1)


def test_a_comparison_carries_its_confidence_and_bound():
    pair = _fair_pair()
    assert pair.confidence == 0.8
    assert pair.false_resolved_bound == pytest.approx({"independent": 0.36, "any": 0.4})
    data = pair.to_dict()
    assert data["resolved_levels"] == ["strong"]
    assert data["false_resolved_bound"] == pytest.approx({"independent": 0.36, "any": 0.4})


_finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)


@settings(max_examples=300, deadline=None)
@given(
    truths=st.tuples(_finite, _finite),
    widths=st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False), min_size=4, max_size=4),
    points=st.tuples(st.floats(0, 1), st.floats(0, 1)),
    minimize=st.booleans(),
)
def test_where_both_bands_hold_strong_evidence_never_favours_a_curve_that_is_not_better(truths, widths, points, minimize):
    # The derivation's step 1: bands that contain the true curves (at any budget, any point
    # estimates inside them) give strong evidence only for the truly better curve, in both directions.
    (ta, tb), (da, ua, db, ub) = truths, widths
    la, ha, lb, hb = ta - da, ta + ua, tb - db, tb + ub
    pa, pb = la + points[0] * (ha - la), lb + points[1] * (hb - lb)
    levels, favoured = evidence(*(np.array([x]) for x in (pa, la, ha, pb, lb, hb)), minimize=minimize)
    if levels[0] == "strong":
        better = (ta < tb) if minimize else (ta > tb)
        worse = (ta > tb) if minimize else (ta < tb)
        assert (better and favoured[0] == 1) or (worse and favoured[0] == -1)


def test_the_report_states_what_resolved_means_and_its_bound(tmp_path):
    from showwork.report import ReportSettings, analyze
    from showwork.report.figures import comparison_figure
    from showwork.report.inputs import from_results_file
    from showwork.report.tables import comparison_table, ranking_table

    rng = np.random.default_rng(0)
    families = []
    for name in ("A", "B"):
        path = tmp_path / f"{name}.csv"
        path.write_text("acc\n" + "".join(f"{s!r}\n" for s in rng.normal(0.5, 0.1, 30).tolist()))
        families.append(from_results_file(path, "acc", label=name)[0])
    report = analyze(families, ReportSettings(confidence=0.9))
    table = comparison_table(report)
    note = " ".join(table.notes)
    assert "Resolved means strong evidence" in note
    assert "at most 1 − c² = 0.19 for independent searches (2(1 − c) = 0.2 under any dependence)" in note
    assert "Fair and weak evidence carry no such bound" in note
    assert ranking_table(report) is None  # two families: every pair is compared
    figure = comparison_figure(report)
    labels = [t.get_text() for legend in figure.legends for t in legend.get_texts()]
    assert "strong evidence (resolved within reach; false-resolved chance ≤ 0.19)" in labels
    assert "fair evidence (no error bound: not resolved)" in labels


def test_a_pair_marked_dependent_states_the_union_bound():
    rng = np.random.default_rng(1)
    ks = np.arange(1, 11, dtype=float)
    curves = {name: tuning_curve(rng.normal(mu, 0.1, 40), k=ks) for name, mu in (("a", 0.5), ("b", 0.6), ("c", 0.7))}
    pairs = {(p.a, p.b): p for p in compare_curves(curves, dependent=[("c", "a")])}  # either order names the pair
    assert [pairs[key].independent for key in (("a", "b"), ("a", "c"), ("b", "c"))] == [True, False, True]
    assert pairs["a", "c"].resolved_error_bound == pytest.approx(0.4) and pairs["a", "b"].resolved_error_bound == pytest.approx(0.36)
    data = pairs["a", "c"].to_dict()
    assert data["independent"] is False and data["resolved_error_bound"] == pytest.approx(0.4)
    assert data["false_resolved_bound"] == pytest.approx({"independent": 0.36, "any": 0.4})  # both, as before
    with pytest.raises(ArgumentError, match="'d', which is not among the curves compared"):
        compare_curves(curves, dependent=[("a", "d")])
    with pytest.raises(ArgumentError, match="two different curves"):
        compare_curves(curves, dependent=[("a", "a")])


@settings(max_examples=100, deadline=None)
@given(c=st.floats(0.01, 0.99), independent=st.booleans())
def test_the_wording_states_the_bound_of_the_pair(c, independent):
    from showwork.report.wording import resolved_bound_text, resolved_rule_text, verdict_text

    bound = false_strong_bound(c, independent=independent)
    assert resolved_bound_text(c, independent) == f"false-resolved chance ≤ {bound:.3g}"
    assert verdict_text(True, "strong", c, independent) == f"resolved; false-resolved chance ≤ {bound:.3g}"
    shared = resolved_rule_text(c, ["x vs y"])
    assert f"so its bound is 2(1 − c) = {false_strong_bound(c, independent=False):.3g}." in shared
    assert "Here" not in resolved_rule_text(c)

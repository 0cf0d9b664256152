"""Issue 24 item 2: the resolved rule's false rate, from simulations small enough for CI.

The rule (``showwork/statistics/comparison.py``): a budget is resolved only where the evidence is
strong within both informative budgets; the chance of any false resolved budget of a pair is at
most 1 - c² for independent searches. The simulations draw two independent searches from ONE
distribution (a reflected KDE of the shared DeBERTa search, ``experiments.common.family_kde``), so
every resolved budget is false, and count the replicates with any.

Tolerance: the full study (``python -m experiments.evidence_errors``, 10,000 replicates per
setting, experiments/README.md) measures at most 0.005 at c = 0.8 for the median curves, in every
family and n; the tests allow 0.02 (0.005 plus more than 4.5 binomial standard errors at 400
replicates), well below the bound 0.36 and below the 0.05–0.08 that the old rule (fair or strong)
gives at n = 30: that rule fails these tests.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from experiments import evidence_errors
from experiments.common import clopper_pearson, family_kde
from showwork.statistics import RESOLVED_LEVELS, compare_curves, false_strong_bound, tuning_curve

REPLICATES = 400
N = 30
CONFIDENCE = 0.8
TOLERANCE = 0.02


def _false_resolved_rate(statistic: str, minimize: bool, seed: int) -> float:
    kde = family_kde("deberta")
    rng = np.random.default_rng(seed)
    k = np.arange(1.0, N + 1.0)
    hits = 0
    for _ in range(REPLICATES):
        a, b = kde.sample(rng, N), kde.sample(rng, N)
        if minimize:  # error rates: lower is better, same distribution for both
            a, b = 1.0 - a, 1.0 - b
        curves = {name: tuning_curve(y, k=k, confidence=CONFIDENCE, a=0.0, b=1.0, minimize=minimize)
                  for name, y in (("a", a), ("b", b))}
        (pair,) = compare_curves(curves, statistic)
        hits += bool(pair.resolved.any())
    return hits / REPLICATES


@pytest.mark.parametrize("statistic, minimize", [("median", False), ("median", True), ("mean", False), ("mean", True)])
def test_resolved_false_rate_between_identical_distributions_is_below_the_bound(statistic, minimize):
    rate = _false_resolved_rate(statistic, minimize, seed=11)
    bound = false_strong_bound(CONFIDENCE)
    _, upper = clopper_pearson(round(rate * REPLICATES), REPLICATES, confidence=0.999)
    assert float(upper) < bound  # the derived bound, with the Monte Carlo error
    assert rate <= TOLERANCE  # the measured rate (module docstring), which the old rule exceeds


def test_the_study_bands_and_evidence_are_those_of_compare_curves():
    """The vectorised rank bands of the study give exactly the levels compare_curves gives."""
    rng = np.random.default_rng(5)
    kde = family_kde("lstm")
    n, c = 20, 0.9
    a, b = np.sort(kde.sample(rng, (15, n)), axis=1), np.sort(kde.sample(rng, (15, n)), axis=1)
    ranks, favoured = evidence_errors.pair_levels(a, b, n, c)
    k = np.arange(1.0, n + 1.0)
    names = np.array(["none", "weak", "fair", "strong"])
    for i in range(15):
        curves = {"a": tuning_curve(a[i], k=k, confidence=c, a=0.0, b=1.0), "b": tuning_curve(b[i], k=k, confidence=c, a=0.0, b=1.0)}
        (pair,) = compare_curves(curves)
        np.testing.assert_array_equal(names[ranks[i]], pair.levels)
        np.testing.assert_array_equal(favoured[i], pair.favoured)


def test_the_study_measures_false_rates_per_level_and_power():
    rng = np.random.default_rng(0)
    spread = family_kde("deberta").ppf([0.5, 0.9])
    delta = float(spread[1] - spread[0])
    same = evidence_errors.simulate(evidence_errors.Setting("deberta", 25, 0.8, 0.0, 0.0), 400, rng)
    shifted = evidence_errors.simulate(evidence_errors.Setting("deberta", 50, 0.8, 1.0, delta), 400, rng)
    se = math.sqrt(0.25 / 400)
    # Levels nest: weak or stronger >= fair or stronger >= strong. Full study (10,000 replicates):
    # identical, n = 25: weak 0.30, fair 0.05, strong 0.003; shifted by one spread, n = 50: power 0.96.
    f = same.false_within
    assert f["weak"] >= f["fair"] >= f["strong"]
    assert abs(f["weak"] - 0.30) <= 4.5 * se and abs(f["fair"] - 0.05) <= 4.5 * se
    assert f["strong"] <= TOLERANCE < same.bound
    assert shifted.false_within["strong"] <= TOLERANCE and shifted.power_within["strong"] > 0.85
    assert math.isnan(same.power_within["strong"]) and RESOLVED_LEVELS == ("strong",)

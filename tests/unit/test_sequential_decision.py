"""decide_at_look: the rule a race applies at each look."""

from __future__ import annotations

import numpy as np
import pytest

from showwork.statistics import ArgumentError, BandSpec, LookDecision, compare_curves, decide_at_look, tuning_curve

SCHEDULE = BandSpec(looks=(12, 24, 48))


def scores(seed: int, centre: float, n: int = 48) -> np.ndarray:
    return np.random.default_rng(seed).normal(centre, 0.1, n)


def test_a_clear_winner_is_declared_and_named():
    decision = decide_at_look(scores(0, 1.0), scores(1, 0.0), 24, [1, 2], SCHEDULE, names=("big", "small"))
    assert decision.winner == "big" and decision.decided
    assert decision.levels == ("strong", "strong") and decision.resolved == (True, True)
    assert decision.number == 2 and decision.look == 24
    # The same scores the other way round: the other name wins.
    assert decide_at_look(scores(1, 0.0), scores(0, 1.0), 24, [1, 2], SCHEDULE, names=("small", "big")).winner == "big"


def test_losses_are_decided_the_other_way():
    decision = decide_at_look(scores(0, 1.0), scores(1, 0.0), 24, [1], SCHEDULE, minimize=True)
    assert decision.winner == "B"


def test_only_the_first_n_trials_by_index_are_read():
    a, b = scores(0, 0.0), scores(1, 0.0)
    b[24:] = 100.0  # what comes after the look must not matter
    at_look = decide_at_look(a, b, 24, [1], SCHEDULE)
    assert at_look == decide_at_look(a, b[:24], 24, [1], SCHEDULE)


def test_a_budget_beyond_the_informative_budget_is_never_resolved():
    # At 12 trials the joint bands are informative up to k ~ 1.7 only: k = 2 cannot be decided there.
    decision = decide_at_look(scores(0, 1.0), scores(1, 0.0), 12, [1, 2], SCHEDULE)
    assert decision.informative_k < 2
    assert decision.resolved == (True, False) and decision.winner is None


def test_equal_models_are_not_decided_and_the_decision_is_what_compare_curves_says():
    a, b = scores(2, 0.5), scores(3, 0.5)
    decision = decide_at_look(a, b, 48, [1, 3, 5], SCHEDULE)
    assert decision.winner is None
    curves = {"A": tuning_curve(a, [1, 3, 5], bands=SCHEDULE, failure_policy="worst"),
              "B": tuning_curve(b, [1, 3, 5], bands=SCHEDULE, failure_policy="worst")}
    (pair,) = compare_curves(curves)
    assert decision.levels == tuple(pair.levels) and decision.resolved == tuple(pair.resolved)


def test_the_decision_round_trips_through_its_record():
    decision = decide_at_look(scores(0, 1.0), scores(1, 0.0), 24, [1, 2], SCHEDULE)
    assert LookDecision.from_dict(decision.to_dict()) == decision


def test_failed_trials_count_and_are_scored_by_the_policy():
    a, b = scores(0, 0.9), scores(1, 0.1)
    a[:3] = np.nan
    bounded = BandSpec(looks=(12, 24, 48), a=-10.0, b=10.0)
    decision = decide_at_look(a, b, 24, [1], bounded)  # "worst": a failure scores the support's bottom
    assert decision.look == 24
    with pytest.raises(Exception, match="fail"):
        decide_at_look(a, b, 24, [1], bounded, failure_policy="error")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"look": 20}, "not in the schedule"),
        ({"budgets": [0.5]}, ">= 1"),
        ({"budgets": [np.inf]}, "finite"),
        ({"decide_by": "best"}, "decide_by"),
        ({"names": ("A", "A")}, "two different names"),
        ({"bands": "ld-hd"}, "BandSpec"),
    ],
)
def test_bad_arguments_are_refused(kwargs, message):
    arguments = {"scores_a": scores(0, 0.0), "scores_b": scores(1, 0.0), "look": 24, "budgets": [1], "bands": SCHEDULE}
    arguments.update(kwargs)
    with pytest.raises(ArgumentError, match=message):
        decide_at_look(**arguments)


def test_too_few_scores_for_the_look_are_refused():
    with pytest.raises(ArgumentError, match="needs its first 48"):
        decide_at_look(scores(0, 0.0, 30), scores(1, 0.0), 48, [1], SCHEDULE)

"""Simulated races (showwork.statistics.race_simulation): the one rule, deterministic, summarised right."""

import numpy as np
import pytest

from showwork.statistics import ArgumentError, BandSpec, RaceSimulation, decide_at_look, simulate_races
from showwork.statistics.race_simulation import race_stop

LOOKS = (12, 24, 48)
SPEC = BandSpec(looks=LOOKS, a=0.0, b=1.0)


def _beta(alpha, beta):
    return lambda rng: rng.beta(alpha, beta, LOOKS[-1])


def test_a_race_stops_at_the_first_look_where_decide_at_look_names_a_winner():
    rng = np.random.default_rng(4)
    for _ in range(30):
        a, b = rng.beta(5, 2, 48), rng.beta(4, 2, 48)
        decisions = [decide_at_look(a, b, n, [1.5], SPEC) for n in LOOKS]
        first = next((i for i, d in enumerate(decisions) if d.winner), -1)
        expected = (first, 0 if first < 0 else 1 + ("A", "B").index(decisions[first].winner))
        assert race_stop(a, b, LOOKS, [1.5], SPEC) == expected


def test_the_simulation_is_deterministic_and_the_same_for_any_number_of_processes():
    one = simulate_races(_beta(5, 2), _beta(4, 2), SPEC, 1.5, races=40, seed=3)
    again = simulate_races(_beta(5, 2), _beta(4, 2), SPEC, 1.5, races=40, seed=3)
    two = simulate_races(_beta(5, 2), _beta(4, 2), SPEC, 1.5, races=40, seed=3, processes=2)
    other = simulate_races(_beta(5, 2), _beta(4, 2), SPEC, 1.5, races=40, seed=4)
    for sim in (again, two):
        np.testing.assert_array_equal(sim.stop_index, one.stop_index)
        np.testing.assert_array_equal(sim.winner, one.winner)
        np.testing.assert_array_equal(sim.scores_a, one.scores_a)
    assert not np.array_equal(other.scores_a, one.scores_a)
    # Each race is the rule applied to the scores it drew.
    for r in range(40):
        assert race_stop(one.scores_a[r], one.scores_b[r], LOOKS, [1.5], SPEC) == (one.stop_index[r], one.winner[r])


def test_clearly_different_models_stop_at_the_first_look_with_the_better_one_winning():
    simulation = simulate_races(lambda rng: rng.normal(0.0, 0.1, 48), lambda rng: rng.normal(1.0, 0.1, 48),
                                BandSpec(looks=LOOKS), 1.5, races=25, seed=0, names=("worse", "better"))
    assert simulation.stop_probability().tolist() == [1.0, 0.0, 0.0]
    assert simulation.win_rate("better") == 1.0 and simulation.win_rate(None) == 0.0
    assert simulation.median_trials == 12 and simulation.trials_saved == pytest.approx(0.75)


def test_the_summary_counts_never_stopping_races_at_the_last_look():
    simulation = RaceSimulation(LOOKS, ("A", "B"), np.array([0, 1, -1, -1, 2]), np.array([1, 2, 0, 0, 1]),
                                np.zeros((5, 48)), np.zeros((5, 48)), seed=0)
    np.testing.assert_array_equal(simulation.trials, [12, 24, 48, 48, 48])
    assert simulation.stop_probability().tolist() == [0.2, 0.2, 0.2]
    assert simulation.stopped == pytest.approx(0.6)
    assert simulation.median_trials == 48 and simulation.mean_trials == pytest.approx(36.0)
    assert simulation.trials_saved == pytest.approx(0.25)
    summary = simulation.summary()
    assert summary["wins"] == {"A": 0.4, "B": 0.2, "none": 0.4}
    assert summary["stop_probability"] == {"12": 0.2, "24": 0.2, "48": 0.2}


def test_the_naive_rule_takes_fixed_n_bands_at_the_given_looks():
    fixed = BandSpec(a=0.0, b=1.0)
    simulation = simulate_races(_beta(5, 2), _beta(4, 2), fixed, 1.5, races=20, seed=1, looks=LOOKS)
    for r in range(20):
        assert race_stop(simulation.scores_a[r], simulation.scores_b[r], LOOKS, [1.5], fixed) == (
            simulation.stop_index[r], simulation.winner[r])


@pytest.mark.parametrize("kwargs, message", [
    ({"races": 0}, "races must be a positive"),
    ({"processes": 0}, "processes must be a positive"),
    ({"looks": (12, 48)}, "differ from the bands' schedule"),
    ({"bands": BandSpec()}, "give looks= for bands without a schedule"),
    ({"sample_a": lambda rng: rng.random(30)}, "drew 30 scores; the last look needs 48"),
])
def test_bad_arguments_are_refused(kwargs, message):
    arguments = {"sample_a": _beta(2, 2), "sample_b": _beta(2, 2), "bands": SPEC, "budgets": 1.5, "races": 3} | kwargs
    with pytest.raises(ArgumentError, match=message):
        simulate_races(**arguments)

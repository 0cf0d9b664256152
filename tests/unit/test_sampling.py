"""Random search is reproducible: trial i's configuration is a pure function of (seed, i)."""

import json
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from showwork.distributions import (
    Categorical,
    Constant,
    IntUniform,
    LogIntUniform,
    LogUniform,
    Normal,
    TruncatedExponential,
    Uniform,
)
from showwork.errors import InputError
from showwork.sampling import (
    flatten,
    nest,
    parameter_rng,
    shared_stream,
    stable_id,
    trial_config,
    trial_plans,
    trial_seed,
)
from showwork.space import SearchSpace, load_search_spec
from showwork.values import NameClashError, is_integer, value_text

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "search_spaces" / "demo_sst2.yaml"

SPACE = SearchSpace(
    {
        "lr": LogUniform(1e-4, 1e-1),
        "hidden": IntUniform(16, 64),
        "act": Categorical(["relu", "tanh"]),
        "drop": Uniform(0, 0.5),
        "w": TruncatedExponential(0.001, 0.1, 1),
        "n": Normal(0, 1, low=-1, high=1),
        "li": LogIntUniform(1, 1000),
        "epochs": Constant(3),
    }
)


def test_golden_values_pin_the_stream_scheme():
    # If these change, every recorded search stops being reproducible: change the scheme only on purpose.
    assert trial_seed(0, 0) == 965244898 and trial_seed(0, 1) == 1618466515
    assert trial_config(SPACE, 0, 0) == {
        "lr": 0.0005355287122980053,
        "hidden": 38,
        "act": "tanh",
        "drop": 0.14394470002089466,
        "w": 0.020804927888347594,
        "n": 0.531195381194009,
        "li": 4,
        "epochs": 3,
    }


def test_same_seed_and_index_give_the_same_config_in_another_process():
    indices = [0, 1, 7, 123, 2**32 - 1]
    here = [[trial_seed(5, i), trial_config(SPACE, 5, i)] for i in indices]
    program = (
        "import json, sys\n"
        "from showwork.sampling import trial_config, trial_seed\n"
        "from showwork.space import SearchSpace\n"
        "space = SearchSpace.from_dict(json.loads(sys.argv[1]))\n"
        "print(json.dumps([[trial_seed(5, i), trial_config(space, 5, i)] for i in json.loads(sys.argv[2])]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program, json.dumps(SPACE.to_dict()), json.dumps(indices)],
        capture_output=True, text=True, check=True, cwd=REPO,
    )
    assert json.loads(done.stdout) == here


def test_config_does_not_depend_on_the_order_trials_are_drawn():
    forwards = [trial_config(SPACE, 3, i) for i in range(20)]
    backwards = [trial_config(SPACE, 3, i) for i in reversed(range(20))][::-1]
    assert forwards == backwards
    assert trial_config(SPACE, 3, 10) == forwards[10]  # e.g. after a resume


def test_different_indices_and_seeds_differ():
    configs = [trial_config(SPACE, 0, i) for i in range(50)]
    assert len({c["lr"] for c in configs}) == 50
    assert len({trial_seed(0, i) for i in range(50)}) == 50
    assert trial_config(SPACE, 0, 4) != trial_config(SPACE, 1, 4)
    assert trial_seed(0, 4) != trial_seed(1, 4)


def test_adding_removing_or_reordering_parameters_leaves_the_others_unchanged():
    base = {name: SPACE[name] for name in SPACE}
    grown = SearchSpace({"momentum": Uniform(0.8, 0.99), **base, "opt.beta2": Uniform(0.9, 0.999)})
    shrunk = SearchSpace({name: dist for name, dist in base.items() if name != "act"})
    shuffled = SearchSpace(dict(reversed(list(base.items()))))
    for i in range(10):
        original = trial_config(SPACE, 2, i)
        assert {k: v for k, v in trial_config(grown, 2, i).items() if k in original} == original
        assert trial_config(shrunk, 2, i) == {k: v for k, v in original.items() if k != "act"}
        assert trial_config(shuffled, 2, i) == original
        assert list(trial_config(shuffled, 2, i)) == list(reversed(list(original)))  # space order
        # and the training seed, as a search draws it with the configuration, depends on no parameter
        assert {trial_plans(space, 2, [i])[0][1] for space in (SPACE, grown, shrunk, shuffled)} == {trial_seed(2, i)}


def test_changing_a_distribution_changes_only_that_parameter():
    changed = SearchSpace({**{name: SPACE[name] for name in SPACE}, "drop": Uniform(0, 0.9)})
    a, b = trial_config(SPACE, 0, 5), trial_config(changed, 0, 5)
    assert a["drop"] != b["drop"] and {k: v for k, v in a.items() if k != "drop"} == {k: v for k, v in b.items() if k != "drop"}


def test_raising_num_trials_keeps_the_first_configs():
    small = load_search_spec(DEMO, {"num_trials": 5})
    large = load_search_spec(DEMO, {"num_trials": 50})
    assert [trial_config(small.space, small.seed, i) for i in range(5)] == [
        trial_config(large.space, large.seed, i) for i in range(5)
    ]


def test_trial_seed_range_and_stream_independence():
    seeds = [trial_seed(0, i) for i in range(2000)]
    assert all(type(s) is int and 0 <= s < 2**31 - 1 for s in seeds)
    # The training seed's stream is not a parameter's stream: for any name the draws differ.
    for name in ("", "seed", "lr", "a" * 100):
        assert int(parameter_rng(0, 3, name).integers(0, 2**31 - 1)) != trial_seed(0, 3)


def test_configs_across_trials_follow_the_distributions():
    space = SearchSpace({"c": Categorical(["a", "b", "c"], [0.2, 0.3, 0.5]), "u": Uniform(0, 1)})
    configs = [trial_config(space, 11, i) for i in range(6000)]
    counts = [sum(c["c"] == x for c in configs) for x in "abc"]
    assert stats.chisquare(counts, [1200, 1800, 3000]).pvalue > 1e-3
    assert stats.kstest([c["u"] for c in configs], "uniform").pvalue > 1e-3
    # Parameters of one trial are independent of each other.
    us = np.array([c["u"] for c in configs])
    is_c = np.array([c["c"] == "c" for c in configs], dtype=float)
    assert abs(np.corrcoef(us, is_c)[0, 1]) < 4 / np.sqrt(6000)


def test_values_are_plain_json():
    for i in range(20):
        json.dumps(trial_config(SPACE, 0, i), allow_nan=False)
        assert all(type(v) in (int, float, str, bool, type(None)) for v in trial_config(SPACE, 0, i).values())


def test_stable_id_is_the_crc32_of_the_utf8_name():
    assert stable_id("optimizer.lr") == zlib.crc32(b"optimizer.lr")
    assert stable_id("é") == zlib.crc32("é".encode("utf-8"))
    assert 0 <= stable_id("x") < 2**32


@pytest.mark.parametrize(
    "seed, index, fragment",
    [(-1, 0, "seed"), (2**63, 0, "seed"), (True, 0, "seed"), (1.0, 0, "seed"), (0, -1, "index"), (0, 2**32, "index"), (0, "3", "index")],
)
def test_bad_seed_or_index(seed, index, fragment):
    with pytest.raises(ValueError, match=fragment):
        trial_config(SPACE, seed, index)
    with pytest.raises(ValueError, match=fragment):
        trial_seed(seed, index)


def test_numpy_integers_are_accepted():
    assert trial_config(SPACE, np.int64(5), np.uint32(2)) == trial_config(SPACE, 5, 2)


def test_shared_stream_names_the_first_two_names_with_one_stream():
    # issue 18: one check, used by SearchSpace and trial_config
    assert shared_stream(["a", "plumless", "b", "buckeroo", "c"]) == ("plumless", "buckeroo")
    assert shared_stream(["a", "b"]) is None and shared_stream([]) is None
    with pytest.raises(InputError, match="space.buckeroo: 'buckeroo' and 'plumless' have the same CRC-32 stream id"):
        SearchSpace({"plumless": Uniform(0, 1), "buckeroo": Uniform(0, 1)})


def test_each_value_is_drawn_from_its_parameter_rng():
    config = trial_config(SPACE, 7, 3)
    assert config == {name: SPACE[name].sample(parameter_rng(7, 3, name)) for name in SPACE}


def test_a_crc32_collision_is_refused_even_in_a_plain_mapping():
    with pytest.raises(ValueError, match="same CRC-32"):
        trial_config({"plumless": Uniform(0, 1), "buckeroo": Uniform(0, 1)}, 0, 0)


# --- nest / flatten ----------------------------------------------------------------------------------


def test_nest_and_flatten():
    flat = {"optimizer.lr": 0.1, "optimizer.schedule.warmup": 0.05, "epochs": 3, "model.act": "relu"}
    nested = {"optimizer": {"lr": 0.1, "schedule": {"warmup": 0.05}}, "epochs": 3, "model": {"act": "relu"}}
    assert nest(flat) == nested
    assert flatten(nested) == flat and list(flatten(nested)) == ["optimizer.lr", "optimizer.schedule.warmup", "epochs", "model.act"]
    assert nest({"a": {"x": 1}}) == {"a": {"x": 1}}  # a dict value stays a value
    assert flatten({"a": {}, "b": 1}) == {"b": 1}  # empty mappings vanish


@pytest.mark.parametrize(
    "flat, fragment",
    [
        ({"a": 1, "a.b": 2}, "'a' and 'a.b' conflict"),
        ({"a.b": 2, "a": 1}, "'a' and 'a.b' conflict"),
        ({"a.b.c": 1, "a.b": 2}, "'a.b' and 'a.b.c' conflict"),
        ({"a..b": 1}, "empty part"),
        ({".a": 1}, "empty part"),
        ({1: 1}, "names must be text"),
    ],
)
def test_nest_refuses_conflicts(flat, fragment):
    with pytest.raises(ValueError, match=fragment):
        nest(flat)


def test_flatten_refuses_a_name_given_twice():
    with pytest.raises(ValueError, match="'a.b' is given twice"):
        flatten({"a.b": 1, "a": {"b": 2}})
    with pytest.raises(ValueError, match="keys must be text"):
        flatten({1: 2})
    with pytest.raises(NameClashError) as clash:
        flatten({"a": {"b": 1}, "a.b": 2})
    assert clash.value.name == "a.b"  # the results reader names it in its message


def test_the_shared_value_helpers():
    # showwork.values: one is_integer for every integer setting, one value_text for every table cell.
    assert [is_integer(v) for v in (3, np.int64(3), True, np.bool_(True), 3.0, "3", None)] == [True, True] + [False] * 5
    assert [value_text(v) for v in (0.00123456789, 1234567.0, "relu", True, None, 64, [1, 2])] == [
        "0.00123457", "1.23457e+06", "relu", "true", "null", "64", "[1, 2]",
    ]


names = st.lists(st.from_regex(r"[a-z]{1,3}", fullmatch=True), min_size=1, max_size=3).map(".".join)


@given(st.dictionaries(names, st.integers() | st.text(max_size=3) | st.none(), max_size=8))
def test_nest_then_flatten_is_the_identity_when_there_is_no_conflict(flat):
    try:
        nested = nest(flat)
    except ValueError:
        keys = list(flat)
        assert any(b.startswith(a + ".") for a in keys for b in keys)
        return
    assert flatten(nested) == flat


@pytest.mark.parametrize("lag", [1, 2, 3])
def test_draws_of_nearby_trials_are_independent(lag):
    # i.i.d. random search needs more than uniform margins: the draw of trial i must not predict
    # trial i + lag's. Chi-square test of independence on a 10 x 10 grid of (u_i, u_{i+lag}).

    from showwork.sampling import parameter_rng

    n = 3000
    u = np.array([parameter_rng(0, i, "lr").random() for i in range(n + lag)])
    counts, _, _ = np.histogram2d(u[:-lag], u[lag:], bins=10, range=[[0, 1], [0, 1]])
    assert stats.chi2_contingency(counts).pvalue > 1e-4
    # ... and two parameters of the same trial are independent too.
    v = np.array([parameter_rng(0, i, "batch_size").random() for i in range(n)])
    counts, _, _ = np.histogram2d(u[:n], v, bins=10, range=[[0, 1], [0, 1]])
    assert stats.chi2_contingency(counts).pvalue > 1e-4


# --- conditional parameters (issue 16) ------------------------------------------------------------


CONDITIONAL = """
optimizer: {distribution: categorical, choices: [sgd, adam, rmsprop]}
lr: {distribution: loguniform, low: 0.0001, high: 0.1}
momentum: {distribution: uniform, low: 0.0, high: 0.95, step: 0.05, when: {optimizer: sgd}}
beta2: {distribution: categorical, choices: [0.99, 0.999], when: {optimizer: {in: [adam, rmsprop]}}}
nesterov: {distribution: categorical, choices: [true, false], when: {optimizer: sgd}}
dampening: {distribution: constant, value: 0.1, when: {nesterov: false}}
"""


def conditional_space(text=CONDITIONAL):
    import yaml

    return SearchSpace.from_dict(yaml.safe_load(text))


def test_a_conditional_parameter_is_drawn_exactly_when_its_condition_holds():
    space = conditional_space()
    seen = set()
    for i in range(300):
        config = trial_config(space, 5, i)
        sgd = config["optimizer"] == "sgd"
        assert ("momentum" in config) == sgd and ("nesterov" in config) == sgd
        assert ("beta2" in config) == (not sgd)
        # A condition on a conditional parameter: absent when nesterov is absent or true.
        assert ("dampening" in config) == (config.get("nesterov") is False)
        assert list(config) == [n for n in space.names if n in config]  # space order, gaps for the left-out ones
        seen.add(tuple(sorted(config)))
    assert len(seen) == 3  # adam or rmsprop (beta2); sgd with nesterov; sgd without it (and dampening)


def test_adding_a_condition_changes_no_other_parameters_values():
    plain = conditional_space(CONDITIONAL.replace(", when: {optimizer: sgd}}", "}", 1))  # momentum unconditional
    conditional = conditional_space()
    for i in range(200):
        a, b = trial_config(plain, 9, i), trial_config(conditional, 9, i)
        assert {k: v for k, v in a.items() if k in b} == b  # every value drawn in both is the same
        if "momentum" in b:
            assert b["momentum"] == a["momentum"]  # the conditional parameter keeps its own stream too
        assert b == trial_config(conditional, 9, i)  # a pure function of (seed, i)


def test_the_conditions_survive_the_json_round_trip_the_workers_use():
    space = conditional_space()
    again = SearchSpace.from_dict(json.loads(json.dumps(space.to_dict())))
    assert again == space and again.conditions == space.conditions
    assert again.to_dict()["beta2"]["when"] == {"optimizer": {"in": ["adam", "rmsprop"]}}
    assert again != SearchSpace({name: space[name] for name in space})  # the conditions are part of equality
    assert [trial_config(again, 1, i) for i in range(20)] == [trial_config(space, 1, i) for i in range(20)]


# ---------------------------------------------------------------- many trials at once (checking a ledger)


@given(seed=st.one_of(st.integers(0, 2**32 - 1), st.integers(2**32, 2**63 - 1)),
       indices=st.lists(st.integers(0, 2**32 - 1), max_size=20))
def test_trial_plans_draw_what_trial_config_and_trial_seed_draw(seed, indices):
    """The batched seeding (numpy's SeedSequence on arrays) gives every stream numpy's own state."""
    for space in (SPACE, conditional_space()):
        assert trial_plans(space, seed, indices) == [(trial_config(space, seed, i), trial_seed(seed, i)) for i in indices]


def test_trial_plans_fall_back_to_numpys_seeding_if_it_ever_differs(monkeypatch):
    import showwork.sampling as sampling

    expected = [(trial_config(SPACE, 3, i), trial_seed(3, i)) for i in range(5)]
    monkeypatch.setattr(sampling, "_stream_states", lambda seed, trials, key: np.zeros((len(trials), 4), dtype=np.uint64))
    assert sampling.trial_plans(SPACE, 3, range(5)) == expected


def test_trial_plans_refuse_what_trial_config_refuses():
    with pytest.raises(ValueError, match="trial index"):
        trial_plans(SPACE, 0, [0, -1])
    with pytest.raises(ValueError, match="seed"):
        trial_plans(SPACE, -1, [0])
    assert trial_plans(SPACE, 0, []) == []

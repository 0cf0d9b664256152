"""Names ↔ MLflow keys (showwork.mlflow_format): legal, injective, stable, and read back; pure, no MLflow."""

from __future__ import annotations

import posixpath
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from showwork.mlflow_format import (
    MAX_KEY_LENGTH,
    METRIC_NAMES_TAG,
    KeyCollisionError,
    is_legal_key,
    key_names,
    key_names_tags,
    mlflow_keys,
    original_names,
)


def mlflow_accepts(key: str) -> bool:
    """MLflow 3's own check (mlflow.utils.validation): its character class, length and path rules."""
    from mlflow.utils.validation import path_not_unique, validate_param_and_metric_name

    return bool(validate_param_and_metric_name(key)) and not path_not_unique(key) and 0 < len(key) <= MAX_KEY_LENGTH


def adversarial_names(draw_names: list[str]) -> list[str]:
    """The names plus, for each, every hashed key it could get (legal names built to take those keys)."""
    from showwork.mlflow_format import candidate_keys

    out = list(draw_names)
    for name in draw_names:
        out.extend(candidate_keys(name)[-4:-1])  # all but the 64-digit form: each name keeps one key free
    return out


name_text = st.one_of(
    st.text(max_size=12),
    st.text(alphabet="ab!?/. _-:", max_size=12),
    st.builds(lambda prefix, tail: "x" * prefix + tail, st.integers(230, 300), st.text(alphabet="ab!/", max_size=4)),
)


def test_the_issues_collisions_get_distinct_keys():
    keys = mlflow_keys(["a!b", "a?b", "a_b"])
    assert keys["a_b"] == "a_b"  # a legal name is its own key
    assert len(set(keys.values())) == 3 and all(re.fullmatch(r"a_b-[0-9a-f]{8}", keys[n]) for n in ("a!b", "a?b"))
    long_a, long_b = "p" * 244 + "alpha_one", "p" * 244 + "alpha_two"
    keys = mlflow_keys([long_a, long_b])
    assert keys[long_a] != keys[long_b] and all(len(k) == MAX_KEY_LENGTH for k in keys.values())


@pytest.mark.parametrize("name", ["a//b", "./a", "a/", "/a", "..", ".", "a/../b", "", "é", "a\nb", "\ud800"])
def test_names_that_are_not_keys_as_they_are_become_keys_mlflow_accepts(name):
    key = mlflow_keys([name])[name]
    assert not is_legal_key(name) and is_legal_key(key) and mlflow_accepts(key)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(name_text, max_size=8))
def test_keys_are_legal_distinct_and_independent_of_order(names):
    keys = mlflow_keys(names)
    assert set(keys) == set(names)
    assert len(set(keys.values())) == len(keys)  # injective
    assert all(mlflow_accepts(key) for key in keys.values())
    assert all(keys[n] == n for n in names if is_legal_key(n))
    assert mlflow_keys(reversed(names)) == keys


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(name_text, min_size=1, max_size=5))
def test_names_built_to_take_each_others_keys_still_get_distinct_keys(names):
    everything = adversarial_names(names)
    keys = mlflow_keys(everything)
    assert len(set(keys.values())) == len(keys) == len(set(everything))
    assert all(mlflow_accepts(key) for key in keys.values())


def test_a_name_whose_every_key_is_taken_is_refused_naming_both():
    from showwork.mlflow_format import candidate_keys

    victim = "a!b"
    squatters = candidate_keys(victim)  # every key a!b could have, each a legal name of its own
    with pytest.raises(KeyCollisionError, match=r"'a!b' and 'a_b-[0-9a-f]{64}' would have the same MLflow key"):
        mlflow_keys([victim, *squatters])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(name_text, max_size=6), st.lists(name_text, max_size=6))
def test_a_run_logged_in_steps_keeps_every_key_and_reads_back(first, later):
    step_one = mlflow_keys(first)
    taken = key_names(key_names_tags(step_one, METRIC_NAMES_TAG), METRIC_NAMES_TAG)
    taken.update({n: n for n, k in step_one.items() if k == n})
    step_two = mlflow_keys(first + later, taken)
    assert {n: step_two[n] for n in first} == step_one  # no key changes once logged
    assert len(set(step_two.values())) == len(step_two)
    tags = key_names_tags(step_two, METRIC_NAMES_TAG)
    assert all(len(value) <= 8000 for value in tags.values())
    values = {key: float(i) for i, key in enumerate(step_two.values())}
    back = original_names(values, key_names(tags, METRIC_NAMES_TAG))
    assert back == {name: values[key] for name, key in step_two.items()}  # every value under its own name


def test_a_long_map_is_cut_into_several_tags_and_read_back_whole():
    names = [f"{'m' * 300}{i}!" for i in range(60)]
    keys = mlflow_keys(names)
    tags = key_names_tags(keys, METRIC_NAMES_TAG)
    assert len(tags) > 1 and set(tags) >= {METRIC_NAMES_TAG, f"{METRIC_NAMES_TAG}.2"}
    assert key_names(tags, METRIC_NAMES_TAG) == {key: name for name, key in keys.items()}
    assert key_names({METRIC_NAMES_TAG: "{not json"}, METRIC_NAMES_TAG) == {}
    assert key_names_tags({"a": "a"}, METRIC_NAMES_TAG) == {}


def test_hashed_keys_survive_path_normalisation():
    for name in ("a/b/" + "c" * 300, "x" * 245 + "/.."):
        key = mlflow_keys([name])[name]
        assert posixpath.normpath(key) == key and mlflow_accepts(key)

"""showwork.tracking.mlflow_keys and mlflow_format, pure, no MLflow: names ↔ keys (legal, injective, stable, read back); a record ↔ its run."""

from __future__ import annotations

import math
import posixpath
import re
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from showwork.store import TrialRecord
from showwork.tracking.mlflow_format import (
    PARENT_TAG,
    TRIAL_INDEX_TAG,
    clamped,
    stale_trial_runs,
    trial_fields,
    trial_projection,
    trial_runs,
    unclamped,
)
from showwork.tracking.mlflow_keys import (
    MAX_KEY_LENGTH,
    METRIC_NAMES_TAG,
    PARAM_NAMES_TAG,
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
    from showwork.tracking.mlflow_keys import candidate_keys

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
    from showwork.tracking.mlflow_keys import candidate_keys

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


# ---------------------------------------------------------------- a record's run, written and read back (no server)

def as_run(projection, *, logged: bool = True, start_ms=None, index=None):
    """What MLflow holds after the writer logged ``projection``: keys for names, clamped values, the maps as tags."""
    params = mlflow_keys(projection.params)
    metric_names = [*projection.history, *projection.final_metrics]
    metrics = mlflow_keys(metric_names)
    values = {name: series[-1][1] for name, series in projection.history.items()}
    values.update(projection.final_metrics)
    tags = {**projection.tags, **key_names_tags(params, PARAM_NAMES_TAG), **key_names_tags(metrics, METRIC_NAMES_TAG),
            TRIAL_INDEX_TAG: str(projection.index if index is None else index), "showwork.logged": "1" if logged else "0"}
    return SimpleNamespace(
        info=SimpleNamespace(status=projection.run_status, start_time=projection.start_ms if start_ms is None else start_ms,
                             end_time=projection.end_ms),
        data=SimpleNamespace(params={params[k]: v for k, v in projection.params.items()},
                             metrics={metrics[k]: clamped(v) for k, v in values.items()}, tags=tags),
    )


def record(**changes) -> TrialRecord:
    fields = dict(
        index=7, status="finished", seed=123, score=0.875, test_score=-math.inf,
        params={"lr": 0.001, "seed": 5, "trial_index": "x", "layers": 2, "act": None, "opt.name": "adam", "a!b": True, "h" * 260: "long"},
        metrics={"acc@1": 0.5, "split_sizes": {"train": 100, "dev": 10}, "note": "text"},
        history=[{"epoch": 1, "val acc": 0.5, "loss": math.inf}, {"epoch": 2, "val acc": 0.875, "loss": 0.25}],
        runtime_s=12.3456, setup_s=3.5, gpu_seconds=None, node_id="n", hostname="h", pid=42,
        started_at="2026-11-24T07:00:00.125+00:00", finished_at="2026-11-24T07:00:12.471+00:00",
    )
    return TrialRecord(**{**fields, **changes})


def test_a_record_comes_back_from_its_run():
    original = record()
    projection = trial_projection(original)
    fields = trial_fields(as_run(projection))
    assert (fields.index, fields.status, fields.seed) == (7, "finished", 123)
    assert fields.params == original.params  # names mapped back, values parsed back, hp.seed is seed again
    assert (fields.score, fields.test_score, fields.runtime_s) == (0.875, -math.inf, 12.3456)  # the clamp undone
    assert math.isnan(fields.gpu_seconds)
    assert fields.setup_s == 3.5  # a metric of its own, not in the run's duration
    assert fields.trial_metrics == {"acc@1": 0.5, "split_sizes.train": 100.0, "split_sizes.dev": 10.0,
                                    "val acc": 0.875, "loss": 0.25}
    assert projection.history["loss"] == [(1, math.inf), (2, 0.25)]
    assert projection.params["hp.seed"] == "5" and projection.params["seed"] == "123"
    assert fields.ended_ms - fields.started_ms == 12346  # MLflow's duration is the ledger's runtime_s (ms)
    assert projection.tags["showwork.status"] == "finished" and projection.run_status == "FINISHED"


def test_a_failed_record_and_the_clamp():
    projection = trial_projection(record(status="timeout", score=None, error="x" * 9000, history=[]))
    assert projection.run_status == "FAILED" and "best_val_score" not in projection.final_metrics
    assert len(projection.tags["showwork.error"]) <= 5000 and projection.final_step == 0
    fields = trial_fields(as_run(projection))
    assert fields.status == "timeout" and math.isnan(fields.score)
    for value in (math.inf, -math.inf, 1.5, 0.0):
        assert unclamped(clamped(value)) == value
    assert math.isnan(unclamped(clamped(math.nan)))


def test_each_trial_index_keeps_one_run():
    logged = as_run(trial_projection(record(index=1)))
    earlier = as_run(trial_projection(record(index=1)), logged=False, start_ms=1)
    running = as_run(trial_projection(record(index=2)), logged=False, start_ms=5)
    restarted = as_run(trial_projection(record(index=2)), logged=False, start_ms=9)
    runs = [earlier, logged, running, restarted]
    assert trial_runs(runs) == {1: logged, 2: running}
    assert stale_trial_runs(runs, completed={1}) == [earlier, running, restarted]  # 2 has no record: it runs again
    assert stale_trial_runs(runs, completed={1, 2}) == [earlier, restarted]
    assert stale_trial_runs(runs, completed=(), start_ms={2: 9}) == [earlier, running]  # the attempt now running
    assert PARENT_TAG == "mlflow.parentRunId"

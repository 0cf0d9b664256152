"""The fail-fast rule (issue 35 item 2): a run whose first trials all fail with the same error kind stops; its pure part."""

from __future__ import annotations

from pathlib import Path

import pytest

from showwork.errors import EXIT_UNAVAILABLE
from showwork.run import SearchFailedFast
from showwork.run.fail_fast import FailFast, FailFastTrip, error_kind, fail_fast_trip

from helpers import trial_record

MISSING = "DataUnavailable: data directory /data/run-{n} does not exist\nTraceback (most recent call last):\n  File ..."


def failed(index: int, error: str | None) -> object:
    return trial_record(index, status="failed", score=None, test_score=None, error=error)


def test_the_error_kind_is_the_first_line_without_its_numbers():
    assert error_kind(failed(0, MISSING.format(n=1))) == "DataUnavailable: data directory /data/run-# does not exist"
    assert error_kind(failed(0, "ValueError: lr 0.031 diverged at step 1e-05")) == "ValueError: lr # diverged at step #"
    assert error_kind(failed(0, "ActorDiedError: actor 9f8e7d6c5b4a diverged at 0x7f3a2b")) == "ActorDiedError: actor # diverged at #"
    assert error_kind(failed(0, "ValueError: a deadbeef-free word")) == "ValueError: a deadbeef-free word"  # no digit: a word
    assert error_kind(failed(0, None)) == "failed without a reason"
    # the same exception type with other words is another kind; trials that did not fail have none
    assert error_kind(failed(0, "ValueError: lr diverged")) != error_kind(failed(0, "ValueError: batch too large"))
    assert error_kind(trial_record(0)) is None
    assert error_kind(trial_record(0, status="timeout", score=None, error="timed out after 5 s")) is None


def test_the_first_trials_all_failing_alike_trip_it_and_name_the_lowest_index():
    first = [failed(4, MISSING.format(n=4)), failed(2, MISSING.format(n=2)), failed(7, MISSING.format(n=7))]
    assert fail_fast_trip(first, 3) == FailFastTrip(
        kind="DataUnavailable: data directory /data/run-# does not exist", count=3, index=2,
        message="DataUnavailable: data directory /data/run-2 does not exist",
    )
    assert fail_fast_trip(first[:2], 3) is None  # not yet: fewer than 3 have ended
    assert fail_fast_trip(first[:1], 1) is not None


@pytest.mark.parametrize("other", [
    trial_record(9),  # a finished trial among the first
    trial_record(9, status="timeout", score=None, error="timed out after 5 s"),  # a timeout: the search's own limit
    failed(9, "ValueError: lr diverged"),  # another error kind
])
def test_any_other_outcome_among_the_first_trials_never_trips_it(other):
    for position in range(3):
        first = [failed(i, MISSING.format(n=i)) for i in range(2)]
        first.insert(position, other)
        assert fail_fast_trip(first, 3) is None


def test_only_the_first_trials_of_the_run_count_and_zero_turns_it_off():
    rule = FailFast(3)
    for index, record in enumerate([trial_record(0), *(failed(i, MISSING.format(n=i)) for i in range(1, 10))]):
        rule.ended(record)
    assert rule.tripped is None  # a success came first: the failures after it are the search's results
    rule = FailFast(3)
    for index in range(3):
        assert rule.tripped is None
        rule.ended(failed(index, MISSING.format(n=index)))
    assert rule.tripped is not None and rule.tripped.index == 0
    rule.ended(trial_record(5))  # decided: later trials change nothing
    assert rule.tripped.index == 0
    off = FailFast(0)
    for index in range(20):
        off.ended(failed(index, MISSING.format(n=index)))
    assert off.tripped is None and fail_fast_trip([failed(0, MISSING)] * 5, 0) is None


def test_the_stop_is_an_outage_in_one_line_naming_the_error_and_the_trial(tmp_path):
    long = MISSING.replace("exist", "exist " + "x" * 300)  # a long first line
    trip = fail_fast_trip([failed(i, long.format(n=i)) for i in range(3)], 3)
    error = SearchFailedFast("demo", trip, tmp_path / "trials" / "000000.json")
    text = str(error)
    assert error.exit_code == EXIT_UNAVAILABLE and "\n" not in text
    assert text.startswith("search demo: its first 3 trials to end all failed with the same error, so it stopped: DataUnavailable:")
    assert f"(trial 0; its full error: {Path(tmp_path, 'trials', '000000.json')}, field \"error\")" in text
    assert "x" * 100 in text and "x" * 200 not in text and "x..." in text  # a long first line is cut

"""Issue 15 item 8: the search opens MLflow while Ray starts, and keeps the order of its refusals.

Fast tests without Ray or MLflow: ``start_ray`` and the tracker are stand-ins that sleep and record.
The real overlap is measured by ``benchmarks/search.py`` (its start-up row).
"""

from __future__ import annotations

import os
import threading
import time

import pytest

from showwork.errors import InputError
from showwork.run.interrupts import Interrupts
from showwork.run.progress import StartupLine
from showwork.run.startup import start_ray_and_open_mlflow
from showwork.tracking.errors import TrackingUnavailableError

STEP_S = 0.4


class FakeTracker:
    def __init__(self, error: BaseException | None = None):
        self.error = error
        self.span: tuple[float, float] | None = None
        self.umask: int | None = None
        self.thread: str | None = None

    def check_reachable(self) -> None:
        start = time.perf_counter()
        self.thread = threading.current_thread().name
        self.umask = os.umask(0o077)
        os.umask(self.umask)
        time.sleep(STEP_S)
        self.span = (start, time.perf_counter())
        if self.error is not None:
            raise self.error


@pytest.fixture
def fake_ray():
    """``start_ray`` replaced: it sleeps STEP_S, records its span, and raises ``ray_fails`` if set."""
    seen: dict = {"error": None}

    def start_ray():
        start = time.perf_counter()
        time.sleep(STEP_S)
        seen["span"] = (start, time.perf_counter())
        if seen["error"] is not None:
            raise seen["error"]
        return "executor", None

    seen["start_ray"] = start_ray
    return seen


def start(tracker, fake_ray):
    with StartupLine("s", enabled=False) as line:
        return start_ray_and_open_mlflow(fake_ray["start_ray"], Interrupts(), tracker, line)


def test_mlflow_opens_while_ray_starts_under_an_owner_only_umask(fake_ray):
    tracker = FakeTracker()
    before = os.umask(0o022)
    os.umask(before)
    began = time.perf_counter()
    assert start(tracker, fake_ray) == ("executor", None)
    took = time.perf_counter() - began
    assert tracker.thread != threading.main_thread().name
    (mlflow_start, mlflow_end), (ray_start, ray_end) = tracker.span, fake_ray["span"]
    assert mlflow_start < ray_end and ray_start < mlflow_end  # the two spans overlap
    assert took < 1.75 * STEP_S, took  # not one after the other (2 x STEP_S)
    # The files MLflow creates meanwhile are owner-only, whatever the timing; the umask is restored after.
    assert tracker.umask == 0o077
    assert os.umask(before) == before


def test_an_unreachable_store_is_raised_once_ray_has_started(fake_ray):
    with pytest.raises(TrackingUnavailableError, match="cannot reach"):
        start(FakeTracker(TrackingUnavailableError("cannot reach the MLflow tracking server")), fake_ray)
    assert "span" in fake_ray  # Ray was started (and its start ended) before the error came out


def test_when_both_fail_the_unreachable_store_is_named_as_before_the_overlap(fake_ray):
    fake_ray["error"] = InputError("resources: no node has that much")
    with pytest.raises(TrackingUnavailableError):
        start(FakeTracker(TrackingUnavailableError("cannot reach the MLflow tracking server")), fake_ray)


def test_a_ray_refusal_is_raised_when_mlflow_answers(fake_ray):
    fake_ray["error"] = InputError("resources: no node has that much")
    tracker = FakeTracker()
    with pytest.raises(InputError, match="no node"):
        start(tracker, fake_ray)
    assert tracker.span is not None  # MLflow's thread was waited for: nothing runs on after the refusal


def test_the_startup_line_names_the_state_and_is_silent_off_a_terminal(capsys):
    with StartupLine("demo", enabled=True) as line:  # pytest's stdout is not a terminal
        line.show("starting Ray")
        assert str(line._render()).startswith("demo: starting Ray…, elapsed ")
    assert capsys.readouterr().out == ""

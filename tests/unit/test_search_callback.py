"""The search's Tune callback and its counts, without Ray: Tune's hooks driven with fake trials
against a real ledger and a tracker that records its calls (issue 15, the driver reshaped)."""

from __future__ import annotations

import math
import pickle
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from showwork.run import callback as callback_module
from showwork.run import search_context
from showwork.run.callback import ProjectionCallback
from showwork.run.progress import Progress
from showwork.run.summary import TrialCounts, trial_counts
from showwork.sampling import trial_config, trial_seed
from showwork.space import load_search_spec
from showwork.store import Ledger
from showwork.tracking.errors import TrackingUnavailableError
from showwork.trials.execution import REPORT_KEY, STORAGE_FAILURE_KEY, TRIAL_START_KEY, EpochReports

from helpers import REPO_ROOT, trial_record

STARTED = "2026-11-24T08:00:00.000+00:00"


@dataclass
class FakeTrial:
    """What the callback reads of a Tune trial."""

    index: int
    num_failures: int = 0

    @property
    def config(self) -> dict:
        return {"index": self.index}


@dataclass
class FakeTracker:
    """The tracker's calls the callback makes, recorded; ``fail`` makes MLflow unreachable, ``refuse`` refuses them."""

    calls: list = field(default_factory=list)
    fail: bool = False
    refuse: bool = False
    down: bool = False

    def write_trial(self, parent, index, started_at, rows=(), *, params=None, seed=None, record=None):
        if self.fail:
            self.down = True
            raise TrackingUnavailableError("MLflow at sqlite:///x is unreachable")
        if self.refuse:
            raise ValueError("MLflow refuses this value")
        if record is not None:
            self.calls.append(("end", parent, index, started_at, record.index))
        else:
            self.calls.append(("rows", parent, index, started_at, [dict(row) for row in rows], params is not None, seed))
        return f"run-{index}"


def not_interrupted() -> bool:
    return False


def interrupted() -> bool:
    return True


@pytest.fixture
def spec():
    return load_search_spec(REPO_ROOT / "search_spaces" / "demo_sst2.yaml", {"num_trials": 6})


def projection(spec, storage: Path, tracker=None, stopped=not_interrupted) -> ProjectionCallback:
    ledger = Ledger(storage, spec.name)
    display = progress_line(spec, ledger.records())
    context = search_context(spec, storage)
    return ProjectionCallback(tracker or FakeTracker(), ledger, "parent-1", display, trial_of=context.trial, interrupted=stopped)


def progress_line(spec, records) -> Progress:
    return Progress(spec.name, spec.num_trials, spec.metric.name, spec.metric.mode, records, enabled=False)


def report(epoch: int, started: str = STARTED, **metrics) -> dict:
    return {REPORT_KEY: [{"epoch": epoch, **metrics}], TRIAL_START_KEY: started}


def test_a_report_opens_the_trials_run_at_the_workers_start_and_logs_its_numbers(spec, tmp_path):
    callback = projection(spec, tmp_path)
    trial = FakeTrial(3)
    callback.on_trial_start(0, [], trial)
    assert set(callback.display.running) == {3}
    callback.on_trial_result(1, [], trial, report(1, val_accuracy=0.5, note="text", flag=True, loss=2))
    callback.on_trial_result(2, [], trial, {"done": False})  # Tune's own result, not a report: ignored
    callback.close()
    assert callback.tracker.calls == [  # numbers only, bools are not; the run gets the trial's params and seed
        ("rows", "parent-1", 3, STARTED, [{"epoch": 1, "val_accuracy": 0.5, "loss": 2.0}], True, callback.trial_of(3)[1]),
    ]
    assert callback.started == {3: STARTED}


def test_a_workers_storage_failure_is_named_once_and_logs_nothing(spec, tmp_path):
    callback = projection(spec, tmp_path)
    callback.on_trial_result(1, [], FakeTrial(0), {STORAGE_FAILURE_KEY: "cannot write to x: [Errno 28] No space"})
    callback.on_trial_result(1, [], FakeTrial(1), {STORAGE_FAILURE_KEY: "a later one"})
    callback.close()
    assert callback.storage_failure == "cannot write to x: [Errno 28] No space"
    assert callback.tracker.calls == []


def test_a_recorded_trial_is_counted_and_logged_and_its_run_id_recorded(spec, tmp_path):
    callback = projection(spec, tmp_path)
    callback.ledger.write(trial_record(2, score=0.75))
    callback.on_trial_start(0, [], FakeTrial(2))
    callback.on_trial_complete(1, [], FakeTrial(2))
    callback.close()
    assert callback.tracker.calls == [("end", "parent-1", 2, callback.ledger.read(2).started_at, 2)]
    assert callback.ledger.read(2).mlflow_run_id == "run-2"
    assert not callback.display.running
    assert callback.display.counts == TrialCounts(finished=1, best_score=0.75, best_index=2)


def test_a_trial_whose_worker_died_is_recorded_by_the_driver(spec, tmp_path):
    callback = projection(spec, tmp_path)
    trial = FakeTrial(4, num_failures=3)
    callback.on_trial_result(1, [], trial, report(1, val_accuracy=0.5))
    callback.on_trial_error(2, [], trial)
    callback.close()
    record = callback.ledger.read(4)
    assert record.status == "failed" and record.error.startswith("WorkerDied: the worker process died")
    assert record.params == trial_config(spec.space, spec.seed, 4) and record.seed == trial_seed(spec.seed, 4)
    assert record.started_at == STARTED and record.attempts == 3  # Ray's count of the failures
    assert callback.display.counts.failed == 1
    assert callback.tracker.calls[-1] == ("end", "parent-1", 4, STARTED, 4)


def test_a_trial_stopped_by_an_interrupt_stays_unrecorded(spec, tmp_path):
    callback = projection(spec, tmp_path, stopped=interrupted)
    callback.on_trial_start(0, [], FakeTrial(1))
    callback.on_trial_complete(1, [], FakeTrial(1))
    callback.close()
    assert callback.ledger.read(1) is None  # a resume runs it again
    assert not callback.display.running and callback.display.counts.ended == 0
    assert callback.tracker.calls == []


def test_mlflow_down_is_a_warning_and_the_search_goes_on(spec, tmp_path):
    callback = projection(spec, tmp_path, tracker=FakeTracker(fail=True))
    callback.ledger.write(trial_record(0))
    with pytest.warns(UserWarning, match="the ledger has the result, it will be replayed"):
        callback.on_trial_complete(1, [], FakeTrial(0))
        callback.close()
    assert callback.storage_failure is None and callback.ledger.read(0).mlflow_run_id is None


def test_the_callback_pickles_without_its_writer_thread(spec, tmp_path):
    # Tune pickles its callbacks with the experiment state; a thread and a queue cannot be pickled.
    callback = projection(spec, tmp_path)
    callback.on_trial_result(1, [], FakeTrial(0), report(1, val_accuracy=0.5))
    assert callback._writer is not None
    copy = pickle.loads(pickle.dumps(callback))
    callback.close()
    assert copy._writer is None and copy._queue is None and copy.started == {0: STARTED}


def test_counts_take_the_best_finite_finished_score_lowest_index_on_ties():
    records = [
        trial_record(0, score=0.5),
        trial_record(1, score=math.nan),  # finished, but no score to compare
        trial_record(2, status="failed", score=0.99),  # not finished: never the best
        trial_record(3, score=0.75),
        trial_record(4, status="timeout", score=None),
        trial_record(5, score=0.75),
        trial_record(9, score=0.999),  # beyond num_trials: not counted
    ]
    assert trial_counts(records, 6, "max") == TrialCounts(finished=4, failed=1, timeout=1, best_score=0.75, best_index=3)
    assert trial_counts(records, 6, "min") == TrialCounts(finished=4, failed=1, timeout=1, best_score=0.5, best_index=0)
    assert trial_counts(records[1:3], 6, "max") == TrialCounts(finished=1, failed=1)
    assert trial_counts([], 6, "max").ended == 0


def test_the_progress_line_counts_with_the_summarys_function(spec, tmp_path):
    # The progress line took a NaN score of a finished trial as the best (max over NaN); the summary did not.
    ledger = Ledger(tmp_path, spec.name)
    for record in (trial_record(0, score=math.nan), trial_record(1, score=0.625), trial_record(2, status="failed", score=None)):
        ledger.write(record)
    display = progress_line(spec, ledger.records())
    assert display.counts == trial_counts(ledger.records(), spec.num_trials, spec.metric.mode)
    assert "3/6 done (1 failed)" in display._line() and "best val_accuracy 0.625" in display._line()


_ENDED = st.tuples(
    st.integers(0, 8),  # indices beyond num_trials (6) and indices that end again included
    st.sampled_from(["finished", "failed", "timeout"]),
    st.one_of(st.none(), st.sampled_from([0.25, 0.5, 0.75, math.nan, math.inf, -math.inf])),
)


@settings(max_examples=200, deadline=None)
@given(before=st.lists(_ENDED, max_size=6), ended=st.lists(_ENDED, max_size=20), mode=st.sampled_from(["max", "min"]))
def test_the_progress_lines_counts_after_each_end_are_the_summarys_counts(before, ended, mode):
    # The line counted every record again at each trial's end (O(n) per trial on Ray Tune's loop); it now adds
    # the one that ended, and must still agree with trial_counts, ties, NaN, re-ended indices and all.
    records = {}
    for index, status, score in before:
        records[index] = trial_record(index, status=status, score=score)
    display = Progress("s", 6, "val_accuracy", mode, list(records.values()), enabled=False)
    for index, status, score in ended:
        records[index] = trial_record(index, status=status, score=score)
        display.ended(records[index])
        assert display.counts == trial_counts(records.values(), 6, mode)


def test_a_batched_report_logs_its_epochs_in_order_in_one_write(spec, tmp_path):
    callback = projection(spec, tmp_path)
    trial = FakeTrial(2)
    batch = {REPORT_KEY: [{"epoch": 2, "val_accuracy": 0.5}, {"epoch": 3, "val_accuracy": 0.625}], TRIAL_START_KEY: STARTED}
    callback.on_trial_result(1, [], trial, batch)
    callback.close()
    assert [call[4] for call in callback.tracker.calls if call[0] == "rows"] == [
        [{"epoch": 2, "val_accuracy": 0.5}, {"epoch": 3, "val_accuracy": 0.625}],
    ]


def wait_for(condition, timeout_s: float = 5.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "not within 5 s"
        time.sleep(0.02)


class SlowTracker(FakeTracker):
    """A tracker whose writes wait until the test lets them go: what Tune queues meanwhile piles up."""

    def __init__(self):
        super().__init__()
        self.entered, self.gate = threading.Event(), threading.Event()

    def write_trial(self, *args, **kwargs):
        self.entered.set()
        self.gate.wait(10)
        return super().write_trial(*args, **kwargs)


def test_what_is_queued_of_a_trial_is_written_together(spec, tmp_path):
    # Issue 23 item 14: one write per trial when its reports and its end are queued together (0 s trials).
    callback = projection(spec, tmp_path, tracker=SlowTracker())
    callback.on_trial_result(1, [], FakeTrial(0), report(0, val_accuracy=0.1))
    assert callback.tracker.entered.wait(10)  # the writer took it and waits
    for index in (1, 2):
        callback.on_trial_result(1, [], FakeTrial(index), report(0, val_accuracy=0.2))
        callback.on_trial_result(2, [], FakeTrial(index), report(1, val_accuracy=0.3))
        callback.ledger.write(trial_record(index, started_at=STARTED))
        callback.on_trial_complete(3, [], FakeTrial(index))
    callback.tracker.gate.set()
    callback.close()
    assert [call[:3] for call in callback.tracker.calls] == [("rows", "parent-1", 0), ("end", "parent-1", 1),
                                                              ("end", "parent-1", 2)]


def test_a_running_trials_later_epochs_wait_for_the_live_interval_or_its_end(spec, tmp_path, monkeypatch):
    monkeypatch.setattr(callback_module, "LIVE_INTERVAL_S", 0.5)
    callback = projection(spec, tmp_path)
    trial = FakeTrial(5)
    callback.on_trial_result(1, [], trial, report(0, val_accuracy=0.1))
    wait_for(lambda: callback.tracker.calls)  # the first report at once: it opens the run
    for epoch in range(1, 4):
        callback.on_trial_result(1 + epoch, [], trial, report(epoch, val_accuracy=0.1 * epoch))
    time.sleep(0.2)
    assert [call[4] for call in callback.tracker.calls] == [[{"epoch": 0, "val_accuracy": 0.1}]]
    wait_for(lambda: len(callback.tracker.calls) == 2)
    assert [[row["epoch"] for row in call[4]] for call in callback.tracker.calls] == [[0], [1, 2, 3]]  # one batch
    callback.on_trial_result(9, [], trial, report(4, val_accuracy=0.5))
    callback.ledger.write(trial_record(5, started_at=STARTED))
    callback.on_trial_complete(10, [], trial)
    callback.close()
    assert [call[0] for call in callback.tracker.calls] == ["rows", "rows", "end"]  # epoch 4 went with the end


def test_a_run_opened_at_the_trainables_start_gets_its_first_epochs_at_once(spec, tmp_path, monkeypatch):
    # The worker's start report has no rows (EpochReports.start): the run it opens has no curve yet, so
    # its first epochs must not wait for the live interval (they waited 10 s: a killed driver's running
    # trial showed no history in MLflow).
    monkeypatch.setattr(callback_module, "LIVE_INTERVAL_S", 60.0)
    callback = projection(spec, tmp_path)
    trial = FakeTrial(6)
    callback.on_trial_result(1, [], trial, {REPORT_KEY: [], TRIAL_START_KEY: STARTED})
    wait_for(lambda: callback.tracker.calls)
    callback.on_trial_result(2, [], trial, report(0, val_accuracy=0.1))
    wait_for(lambda: len(callback.tracker.calls) == 2)
    assert [call[4] for call in callback.tracker.calls] == [[], [{"epoch": 0, "val_accuracy": 0.1}]]
    callback.on_trial_result(3, [], trial, report(1, val_accuracy=0.2))
    time.sleep(0.2)
    assert len(callback.tracker.calls) == 2  # later epochs wait for the interval (or the end)
    callback.close()


def test_a_trial_mlflow_refuses_is_left_to_the_replay_without_a_warning(spec, tmp_path):
    callback = projection(spec, tmp_path, tracker=FakeTracker(refuse=True))
    callback.on_trial_result(1, [], FakeTrial(0), report(0, val_accuracy=0.1))
    callback.ledger.write(trial_record(0, started_at=STARTED))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        callback.on_trial_complete(2, [], FakeTrial(0))
        callback.close()
    assert callback.storage_failure is None and callback.ledger.read(0).mlflow_run_id is None


def test_epoch_reports_send_the_first_row_at_once_then_at_most_one_batch_per_interval():
    # Each tune.report of a function trainable is a round trip to the driver: fast epochs are batched.
    now = [0.0]
    sent: list[dict] = []
    reports = EpochReports(sent.append, interval_s=1.0, clock=lambda: now[0])
    reports.add({"epoch": 1, "loss": 1.0}, STARTED)
    assert sent == [{REPORT_KEY: [{"epoch": 1, "loss": 1.0}], TRIAL_START_KEY: STARTED}]  # opens the MLflow run
    for epoch, t in ((2, 0.3), (3, 0.6)):
        now[0] = t
        reports.add({"epoch": epoch}, STARTED)
    assert len(sent) == 1
    now[0] = 1.2
    reports.add({"epoch": 4}, STARTED)  # a second since the last send: the three waiting rows go together
    assert sent[1][REPORT_KEY] == [{"epoch": 2}, {"epoch": 3}, {"epoch": 4}]
    now[0] = 1.5
    reports.add({"epoch": 5}, STARTED)
    reports.flush()  # the trial's end: what is left goes
    reports.flush()  # nothing left: nothing sent
    assert [[row["epoch"] for row in s[REPORT_KEY]] for s in sent] == [[1], [2, 3, 4], [5]]


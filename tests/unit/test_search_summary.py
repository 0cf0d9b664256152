"""The failures of a search grouped by kind of reason (issue 15, item 5): the summary's pure part."""

from __future__ import annotations

from showwork.run import FailureKind, failure_kinds
from showwork.store import TrialRecord


def record(index: int, status: str, error: str | None) -> TrialRecord:
    return TrialRecord(index=index, status=status, params={"x": 0.5}, seed=index, score=0.5 if status == "finished" else None,
                       runtime_s=1.0, error=error, started_at="2026-11-24T08:00:00.000+00:00",
                       finished_at="2026-11-24T08:00:01.000+00:00")


def test_failures_are_grouped_by_exception_type_or_reason_most_frequent_first():
    records = [
        record(4, "failed", "ValueError: lr = 3 is too large\nValueError: lr = 3 is too large\n  File ..."),
        record(0, "finished", None),
        record(2, "failed", "ValueError: lr = 2 is too large\n..."),
        record(3, "timeout", "timed out after 5 s"),
        record(1, "failed", "the trainable neither returned nor reported the metric 'acc'"),
        record(5, "failed", "torch.cuda.OutOfMemoryError: CUDA out of memory\n..."),
    ]
    assert failure_kinds(records) == (
        FailureKind("ValueError", 2, 2, "ValueError: lr = 2 is too large"),
        FailureKind("the trainable neither returned nor reported the metric 'acc'", 1, 1,
                    "the trainable neither returned nor reported the metric 'acc'"),
        FailureKind("timeout", 1, 3, "timed out after 5 s"),
        # issue 28 item 2: running out of GPU memory is a kind of its own, whatever exception carried it
        FailureKind("CUDA out of memory", 1, 5, "torch.cuda.OutOfMemoryError: CUDA out of memory"),
    )


def test_a_search_without_failures_has_no_failure_kinds():
    assert failure_kinds([record(0, "finished", None), record(1, "finished", None)]) == ()

"""Running trials: the search driver and what it shows and returns (see :mod:`showwork.run.driver`)."""

from showwork.run.driver import run_reruns, run_search, search_context
from showwork.run.fail_fast import SearchFailedFast
from showwork.run.summary import (
    FailureKind,
    SearchFolderMovedError,
    SearchInterrupted,
    SearchStorageError,
    SearchSummary,
    failure_kinds,
)

__all__ = [
    "FailureKind", "SearchFailedFast", "SearchFolderMovedError", "SearchInterrupted", "SearchStorageError", "SearchSummary", "failure_kinds",
    "run_reruns", "run_search", "search_context",
]

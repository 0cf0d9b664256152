"""The store: a search's ledger, the source of truth of every trial.

Each trial's record is written once, atomically, by the worker that ran it; MLflow is a projection
of it (:mod:`showwork.tracking`). One module per job:

- :mod:`~showwork.store.records`: a trial's record (:class:`TrialRecord`), its fields' checks, its JSON form;
- :mod:`~showwork.store.ledger`: the :class:`Ledger`, writing, reading, listing and exporting the records of
  one search's folder;
- :mod:`~showwork.store.folder`: the rest of that folder (its base class): ``search.json``, the driver's
  lock, the attempt markers, Ray's folder, and whether the folder still holds the search;
- :mod:`~showwork.store.names`: what may name a search, and the searches a storage folder holds;
- :mod:`~showwork.store.encoding`: non-finite floats and numpy scalars as strict JSON;
- :mod:`~showwork.store.errors`: the store's errors (bad records; a busy, refused or moved folder);
- :mod:`~showwork.store.races`: a race's record (``showwork race``), beside the two searches' ledgers. It
  holds the statistics' look decisions, so it is imported as ``showwork.store.races`` (not re-exported
  here: a trial's worker imports ``showwork.store`` and must not load scipy).

The public names are re-exported here: ``from showwork.store import Ledger, TrialRecord``.
"""

from showwork.store.errors import (
    InvalidRecordError,
    LedgerConflictError,
    LedgerLockedError,
    LedgerMovedError,
    LedgerWriteError,
)
from showwork.store.ledger import EXPORT_COLUMNS, Ledger, missing_indices, utc_file_stamp
from showwork.store.names import SEARCH_NAME_RULE, list_searches, search_name_problem
from showwork.store.records import STATUSES, TrialRecord, failure_kind, trial_score, utc_now_iso

__all__ = [
    "EXPORT_COLUMNS",
    "SEARCH_NAME_RULE",
    "STATUSES",
    "InvalidRecordError",
    "Ledger",
    "LedgerConflictError",
    "LedgerLockedError",
    "LedgerMovedError",
    "LedgerWriteError",
    "TrialRecord",
    "failure_kind",
    "list_searches",
    "missing_indices",
    "search_name_problem",
    "trial_score",
    "utc_file_stamp",
    "utc_now_iso",
]

"""The store's errors: a record that does not validate or conflicts with the one written (bad input, exit 2);
a search folder that is busy, refuses a write or was moved (an outage, exit 1)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from showwork.errors import InputError, UnavailableError

__all__ = ["InvalidRecordError", "LedgerConflictError", "LedgerLockedError", "LedgerMovedError", "LedgerWriteError"]


class InvalidRecordError(InputError):
    """A trial record that does not validate; the message names the file (or source) and field."""


class LedgerConflictError(InputError):
    """A write that would overwrite a *different* record of the same trial index."""


class LedgerLockedError(UnavailableError):
    """Another driver holds the lock of this search; the message names its pid and host.

    Not bad input (exit 1, not 2): the command is right, the search is busy; it succeeds once
    that driver ends (or, if it was killed, once its lock is found stale)."""


class LedgerWriteError(UnavailableError):
    """The ledger's folder refused a write (a full disk, a folder that became read-only): an outage, not bad input.

    The message names the folder and the error: ``cannot write to .../trials: [Errno 28] No space left on device``.
    """

    def __init__(self, folder: Path, error: OSError) -> None:
        super().__init__(f"cannot write to {folder}: [Errno {error.errno}] {error.strerror or error}")
        self.folder = folder
        self.errno = error.errno

    @classmethod
    @contextlib.contextmanager
    def raised_for(cls, folder: Path) -> Iterator[None]:
        """Within the block, an ``OSError`` becomes a :class:`LedgerWriteError` naming ``folder``."""
        try:
            yield
        except OSError as error:
            raise cls(folder, error) from error


class LedgerMovedError(LedgerWriteError):
    """The search's folder is no longer the one the search started in: it was moved (renamed), deleted
    or replaced while the search ran (its ``search.json`` is gone, or another search's). An outage (exit 1):
    the records are wherever the folder went, and the search continues once it is put back."""

    def __init__(self, root: Path, found: str) -> None:
        UnavailableError.__init__(self, f"{root}: the search's folder was moved, deleted or replaced while the search"
                                        f" ran ({found})")
        self.folder = root
        self.errno = None

"""A search's folder, ``{storage_dir}/{name}/``, and what it holds besides the trial records.

:class:`SearchFolder`, the base of :class:`~showwork.store.ledger.Ledger`: where the folder is and
whether it still holds the running search (:meth:`SearchFolder.moved`), ``search.json`` (the
metadata), ``driver.lock`` (the one driver running the search), the attempt markers, Ray's
folder and the sources of a function trainable (``functions/``). Nothing in it is opened through a link, nor read unless it is a regular file (the opens are
:mod:`showwork.files`'s).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import stat
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from showwork import faults
from showwork.errors import InputError
from showwork.files import (
    NotAFileError,
    create_own_file,
    fsync_dir,
    open_own_file,
    own_folder,
    read_own_file,
    write_atomic,
    write_temp_file,
)
from showwork.store.encoding import NotJsonError, decode_nonfinite, encode_nonfinite, reject_constant, to_plain
from showwork.store.errors import InvalidRecordError, LedgerLockedError, LedgerMovedError, LedgerWriteError
from showwork.store.names import search_name_problem
from showwork.store.records import utc_now_iso

__all__ = ["SearchFolder", "refused_if_foreign"]


@contextlib.contextmanager
def refused_if_foreign() -> Iterator[None]:
    """Within the block, a :class:`~showwork.files.NotAFileError` (a link, a FIFO, ... where the ledger keeps
    one of its files or folders) becomes one :class:`InputError` that names it and says what to do."""
    try:
        yield
    except NotAFileError as error:
        raise InputError(
            f"{error}; showwork opens no link and nothing but its own files and folders inside a search's folder"
            f" (someone or something put this one there): move it away, then run the command again"
        ) from None


_WARNED_WRITABLE: set[Path] = set()  # the folders a warning has named, once per process


def _warn_if_others_can_write(storage_dir: Path, root: Path) -> None:
    """Warn once per folder when users other than the owner and the group can write to the search's folder
    ``root`` or, unless its sticky bit keeps them from renaming what is not theirs, to ``storage_dir``.

    A warning, not a refusal (ssh refuses): the shared volumes of clusters are often such folders
    that the job's user cannot change (an NFS provisioner makes them mode 0777), and no file is
    opened through a link there anyway (:mod:`showwork.files`). A folder the group can write is
    a shared group folder: no warning."""
    for folder, sticky_suffices in ((storage_dir, True), (root, False)):
        try:
            mode = os.stat(folder).st_mode
        except OSError:
            continue
        if not mode & stat.S_IWOTH or (sticky_suffices and mode & stat.S_ISVTX) or folder in _WARNED_WRITABLE:
            continue
        _WARNED_WRITABLE.add(folder)
        warnings.warn(
            f"{folder}: every user of this machine can write to this folder (mode {stat.S_IMODE(mode):04o}): they could"
            f" remove, replace or add records of the search{'es' if sticky_suffices else ''} in it. showwork opens no link"
            f" there and checks each record against its search, but keep ledgers in a folder only you (or your group)"
            f" can write: chmod o-w {folder}",
            stacklevel=3,
        )


def _check_name(name: str) -> str:
    problem = search_name_problem(name)
    if problem is not None:
        raise InputError(f"search name {name!r} is not valid: it {problem}")
    return name


class SearchFolder:
    """The folder of one search, ``{storage_dir}/{name}/``: its place, its metadata, its driver lock, its
    attempt markers and Ray's folder. :class:`~showwork.store.ledger.Ledger` adds the trial records; its
    docstring has the parameters.
    """

    def __init__(self, storage_dir: str | os.PathLike, name: str, search_id: str | None = None) -> None:
        self.storage_dir = Path(storage_dir).expanduser().absolute()
        self.name = _check_name(name)
        self.search_id = search_id
        self.root = self.storage_dir / name
        self.trials_dir = self.root / "trials"
        self.corrupt_dir = self.trials_dir / "corrupt"
        self.meta_path = self.root / "search.json"
        self.lock_path = self.root / "driver.lock"
        self.attempts_dir = self.root / "attempts"
        self.ray_dir = self.root / "ray"  # Ray Tune's storage_path: its state and showwork's log of Ray's messages
        self.functions_dir = self.root / "functions"  # the sources of a function trainable, one file per SHA-256
        self._meta_seen: tuple | None = None  # stat of the search.json that moved() found to hold the search

    def moved(self) -> str | None:
        """What shows that the folder no longer holds the running search (``search.json`` gone, unreadable or
        another search's), or None while it does, or when no ``search_id`` was given."""
        if self.search_id is None:
            return None
        try:
            info = os.stat(self.meta_path)
        except FileNotFoundError:
            return f"no {self.meta_path.name} there"
        except OSError:
            return f"{self.meta_path.name} cannot be read"
        seen = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)
        if seen == self._meta_seen:  # the file found to hold the search before (it is replaced, never edited, when updated)
            return None
        try:
            found = self.read_meta().get("search_id")
        except InputError:
            return f"{self.meta_path.name} cannot be read"
        if found == self.search_id:
            self._meta_seen = seen
            return None
        return f"no {self.meta_path.name} there" if found is None else f"{self.meta_path.name} there is another search's"

    def _check_not_moved(self) -> None:
        problem = self.moved()
        if problem is not None:
            raise LedgerMovedError(self.root, problem)

    def exists(self) -> bool:
        """Whether the search has metadata or any trial record on disk."""
        return self.meta_path.exists() or self.trials_dir.is_dir()

    # -- attempts and Ray's folder

    def begin_attempt(self, index: int) -> int:
        """Mark a new attempt at trial ``index`` and return its number (1 for the first).

        One empty marker file per attempt (created exclusively, so concurrent workers get
        distinct numbers): the count survives worker deaths that leave no record.

        Raises
        ------
        LedgerWriteError
            The folder refused the marker.
        """
        self._check_not_moved()
        with LedgerWriteError.raised_for(self.attempts_dir), refused_if_foreign():
            own_folder(self.attempts_dir, parents=self.search_id is None)  # a running search's folder is never made anew
            n = 1
            while True:
                try:
                    os.close(create_own_file(self.attempts_dir / f"{index:06d}.{n}"))
                    return n
                except FileExistsError:
                    n += 1

    def attempts_started(self, index: int) -> int:
        """How many attempts at trial ``index`` workers have begun (:meth:`begin_attempt`)."""
        return sum(1 for _ in self.attempts_dir.glob(f"{index:06d}.*"))

    def ray_folder(self) -> Path:
        """Ray Tune's folder (:attr:`ray_dir`), created if needed, which Ray writes into.

        Raises
        ------
        InputError
            Something other than a folder is there (a link to a folder elsewhere: Ray would write there).
        LedgerWriteError
            The folder could not be created.
        """
        with LedgerWriteError.raised_for(self.root), refused_if_foreign():
            return own_folder(self.ray_dir, parents=True)

    def ray_logs(self) -> tuple[Path, ...]:
        """Ray's messages during each run of the search (``ray/run-<time>.log``), oldest first."""
        return tuple(sorted(self.ray_dir.glob("run-*.log")))

    # -- the source of a function trainable

    def function_source_path(self, sha256: str) -> Path:
        """Where the source whose SHA-256 is ``sha256`` is kept: ``functions/<sha256>.py``."""
        if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
            raise ValueError(f"not a SHA-256 in hex: {sha256!r}")
        return self.functions_dir / f"{sha256}.py"

    def write_function_source(self, sha256: str, source: str) -> Path:
        """Keep ``source``, the code of the search's function trainable, as :meth:`function_source_path`; return it.

        Write-once, as a record: linked into place (never over a file), so each source the search ran is kept
        whole, and a second write of the same source (a resume) leaves the first. The name is the source's
        hash, so a file there that holds other text was edited.

        Raises
        ------
        LedgerWriteError
            The folder refused the file.
        InvalidRecordError
            The file there holds another text than ``source``.
        """
        path = self.function_source_path(sha256)
        self._check_not_moved()
        with LedgerWriteError.raised_for(self.functions_dir), refused_if_foreign():
            own_folder(self.functions_dir, parents=self.search_id is None)
            if not path.exists():
                temp = write_temp_file(self.functions_dir, path.name, source, mode=0o644)
                try:
                    os.link(temp, path)
                    fsync_dir(self.functions_dir)
                except FileExistsError:  # another driver of the same source got there first: checked below
                    pass
                finally:
                    os.unlink(temp)
            found = read_own_file(path)
        if found != source.encode("utf-8"):
            raise InvalidRecordError(f"{path}: holds another source than the one whose SHA-256 names it (edited since);"
                                     " move it away to let the search record its function's source again")
        return path

    # -- metadata

    def read_meta(self) -> dict[str, Any]:
        """Return the search metadata from ``search.json`` ({} if there is none yet).

        Raises
        ------
        InputError
            If ``search.json`` is not a valid JSON object (it is written atomically, so this means
            it was edited or damaged by hand; it is left in place for you to repair).
        """
        try:
            with refused_if_foreign():
                text = read_own_file(self.meta_path).decode("utf-8")
        except FileNotFoundError:
            return {}
        except (OSError, UnicodeDecodeError) as error:
            raise InputError(f"{self.meta_path}: cannot be read ({error})") from None
        try:
            data = json.loads(text, parse_constant=reject_constant)
        except (json.JSONDecodeError, ValueError) as error:
            raise InputError(f"{self.meta_path}: not valid JSON ({error})") from None
        if not isinstance(data, dict):
            raise InputError(f"{self.meta_path}: must hold a JSON object, not {type(data).__name__}")
        return decode_nonfinite(data)

    def update_meta(self, **fields_: Any) -> dict[str, Any]:
        """Merge ``fields_`` into ``search.json`` (top-level keys replaced) atomically; return the result.

        Read-modify-write happens under an exclusive lock on ``.meta.lock``, so concurrent updates
        from several processes are not lost. Values must be JSON data (non-finite floats allowed).
        """
        try:
            payload = {key: to_plain(value, key) for key, value in fields_.items()}
        except NotJsonError as error:
            raise InvalidRecordError(f"{self.meta_path}: {error}") from None
        self._check_not_moved()
        with refused_if_foreign():
            own_folder(self.root, parents=True)
            handle = open_own_file(self.root / ".meta.lock")
        with handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                meta = self.read_meta()
                meta.update(payload)
                text = json.dumps(encode_nonfinite(meta), indent=2, allow_nan=False, ensure_ascii=False) + "\n"
                with LedgerWriteError.raised_for(self.root):
                    write_atomic(self.meta_path, text, before_replace=lambda: faults.point("meta-write"))
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        return meta

    # -- the driver lock

    @contextlib.contextmanager
    def lock(self, race: str | None = None) -> Iterator[None]:
        """Hold the driver lock of this search for the duration of a ``with`` block.

        The lock is an ``fcntl.flock`` on ``driver.lock``, taken without waiting; the kernel
        releases it when the process exits, however it exits, so a crashed driver never leaves a
        stale lock. The holder's pid, host and start time are written into the file for the error
        message of the next driver. Workers never take it. (``flock`` is per open file: a second
        ``lock()`` in the same process also fails.) A race (``race``: its name, recorded with the holder)
        holds the locks of its two searches from its first check to its end, and runs them under it.

        Raises
        ------
        LedgerLockedError
            If another driver holds the lock; the message names the pid recorded in the file.
        """
        with LedgerWriteError.raised_for(self.root), refused_if_foreign():
            own_folder(self.root, parents=True)
            handle = open_own_file(self.lock_path)  # never through a link: it is truncated below
        _warn_if_others_can_write(self.storage_dir, self.root)
        try:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as error:
                if error.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise
                raise LedgerLockedError(self._locked_message()) from None
            handle.seek(0)
            handle.truncate()
            holder = {"pid": os.getpid(), "hostname": socket.gethostname(), "since": utc_now_iso(),
                      **({"race": race} if race is not None else {})}
            handle.write(json.dumps(holder) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
            try:
                yield
            finally:
                handle.seek(0)
                handle.truncate()
                handle.flush()
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
        finally:
            handle.close()

    def lock_holder(self) -> str | None:
        """What :class:`LedgerLockedError` would say if a driver (or a race) holds the lock now; None when none does.

        Creates nothing: where ``driver.lock`` is absent (or not a regular file), no one holds it."""
        try:
            fd = os.open(self.lock_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # refused while a holder has it exclusively
            except OSError as error:
                if error.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise
                return self._locked_message()
            return None
        finally:
            os.close(fd)  # releases the shared lock, if it was taken

    def _locked_message(self) -> str:
        try:
            holder = json.loads(read_own_file(self.lock_path).decode("utf-8"))
            pid, host, since, race = holder.get("pid"), holder.get("hostname"), holder.get("since"), holder.get("race")
        except (OSError, ValueError, AttributeError):  # NotAFileError and UnicodeDecodeError are ValueErrors
            pid = host = since = race = None
        who = f"pid {pid}" if pid is not None else "a process whose pid is not recorded"
        if host:
            who += f" on {host}"
        if pid == os.getpid() and host == socket.gethostname():
            who += " (this process)"
        if since:
            who += f", since {since}"
        if isinstance(race, str):
            who = f"race {race!r} ({who})"
        return (
            f"{self.lock_path}: search {self.name!r} is already being run by {who}; wait for it"
            " to finish or stop it (the lock is released when that process exits)"
        )

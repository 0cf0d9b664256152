"""Files: reading a user's input safely, and writing a file atomically and durably.

Reading
-------
A user's input file is read as a regular file only, and never more than a stated number of bytes.

A path given on the command line may name a FIFO (opening it for reading blocks until a writer
appears), a character device such as ``/dev/zero`` or ``/dev/urandom`` (endless, while ``st_size``
says 0 bytes), a directory or a socket. :func:`read_regular_file` opens with ``O_NONBLOCK`` so that
opening a FIFO cannot block, checks with ``fstat`` on the opened descriptor (no race with a rename
between a check and the open) that it is a regular file, and counts the bytes it actually reads
against the cap instead of trusting ``st_size`` (a file can grow while it is read).

Writing
-------
:func:`write_atomic` (and :func:`atomic_writer` for writers that want a stream, such as
``numpy.savez``) is the one way showwork replaces a file: the bytes go to a new hidden temp file with
a unique random name, created exclusively (two writers of the same file never share a temp, and a user's file is never taken for one) in the same
folder, are flushed and fsynced, the temp is renamed over the target and the folder is fsynced. A
reader sees the old file or the whole new one, never half a file, and after a power loss the new
file is there complete or not at all. The ledger, the report's documents and the caches of critical
levels and encoded datasets all write this way.

Inside a search's folder
------------------------
Other users may be able to write into a storage folder (a shared one), and so plant a symbolic link
where showwork expects one of its own files: ``driver.lock -> ~/thesis.tex`` would have been
truncated by the next driver. Every file showwork opens in a ledger's folder is opened here without
following a link (``O_NOFOLLOW``) and only if it is a regular file, checked on the opened descriptor
(:func:`read_own_file`, :func:`open_own_file`, :func:`create_own_file`); a folder it writes into must
be a folder, not a link to one (:func:`own_folder`). What is found instead is a
:class:`NotAFileError` that names it. New files are created exclusively (``O_EXCL``), and a file is
replaced by renaming a new one over it (:func:`write_atomic`), which replaces a link, never its target.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from showwork.errors import InputError

__all__ = [
    "NotAFileError", "atomic_writer", "create_own_file", "fsync_dir", "open_own_file", "own_folder", "read_own_file",
    "read_regular_file", "write_atomic", "write_temp_file",
]

_CHUNK = 1 << 16
_NO_FOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOSE_ON_EXEC = getattr(os, "O_CLOEXEC", 0)

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
)


class NotAFileError(ValueError):
    """``path`` is something other than what showwork keeps there: ``kind`` says what (``"a symbolic link"``,
    ``"a FIFO (named pipe)"``, ``"a directory"``, ...), ``expected`` what it should be (``"a regular file"``)."""

    def __init__(self, path: str | os.PathLike, kind: str, expected: str = "a regular file") -> None:
        super().__init__(f"{path}: is {kind}, not {expected}")
        self.path, self.kind, self.expected = Path(path), kind, expected


def _kind(mode: int) -> str:
    """What a file of ``st_mode`` ``mode`` is, in words (``"a FIFO (named pipe)"``); for messages."""
    return next((text for test, text in _KINDS if test(mode)), "not a regular file")


def _open_no_follow(path: Path, flags: int, mode: int = 0o666) -> int:
    """``os.open`` without following a link at ``path`` (nor blocking on a FIFO); the descriptor of a regular file.

    Raises
    ------
    NotAFileError
        ``path`` is a link, a FIFO, a folder, a device or a socket (the descriptor is closed again).
    OSError
        Any other failure (``FileNotFoundError``, ``PermissionError``, ...).
    """
    try:
        fd = os.open(path, flags | _NO_FOLLOW | os.O_NONBLOCK | _CLOSE_ON_EXEC | getattr(os, "O_NOCTTY", 0), mode)
    except OSError as error:
        # O_NOFOLLOW on a link fails with ELOOP; a folder opened for writing with EISDIR.
        if error.errno not in (errno.ELOOP, errno.EISDIR, errno.ENXIO):  # ENXIO: a socket
            raise
        try:
            found = os.lstat(path).st_mode
        except OSError:
            raise error from None
        raise NotAFileError(path, _kind(found)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotAFileError(path, _kind(info.st_mode))
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_own_file(path: str | os.PathLike) -> bytes:
    """The bytes of the regular file ``path`` in a ledger's folder, never through a link nor from a FIFO.

    Raises
    ------
    NotAFileError
        ``path`` is not a regular file (nothing is read from it).
    OSError
        As ``open`` and ``read`` raise it (``FileNotFoundError`` for none).
    """
    fd = _open_no_follow(Path(path), os.O_RDONLY)
    try:
        chunks = []
        while chunk := os.read(fd, _CHUNK):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def open_own_file(path: str | os.PathLike, mode: int = 0o666) -> IO[str]:
    """Open (creating it, with ``mode`` less the umask) the regular file ``path`` in a ledger's folder for
    reading and writing in place, as a text stream positioned at its start, never through a link: its lock files.

    Raises
    ------
    NotAFileError
        ``path`` is not a regular file, or one with other hard links (which writing in place would change too).
    OSError
        As ``open`` raises it.
    """
    path = Path(path)
    fd = _open_no_follow(path, os.O_RDWR | os.O_CREAT, mode)
    links = os.fstat(fd).st_nlink
    if links > 1:
        os.close(fd)
        raise NotAFileError(path, f"a file with {links} hard links", "a file of its own")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "r+", encoding="utf-8")


def create_own_file(path: str | os.PathLike, mode: int = 0o666) -> int:
    """Create the new file ``path`` exclusively (``O_EXCL``: never an existing file or link) for appending; its descriptor.

    Raises
    ------
    FileExistsError
        Something (a file, a link, even a dangling one) is already at ``path``.
    OSError
        As ``open`` raises it.
    """
    return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | _NO_FOLLOW | _CLOSE_ON_EXEC, mode)


def own_folder(path: str | os.PathLike, parents: bool = False) -> Path:
    """Create the folder ``path`` if needed (its parents too with ``parents``) and check that it is a folder, not a link.

    Raises
    ------
    NotAFileError
        ``path`` is a link (to a folder or not).
    OSError
        As ``mkdir`` raises it (``FileExistsError`` for a file in its place, ``FileNotFoundError`` for a
        missing parent without ``parents``).
    """
    path = Path(path)
    path.mkdir(parents=parents, exist_ok=True)
    mode = os.lstat(path).st_mode
    if not stat.S_ISDIR(mode):
        raise NotAFileError(path, _kind(mode), "a folder")
    return path


def _size_text(n: int) -> str:
    """``1048576`` -> ``"1 MiB"``; other sizes in bytes."""
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= factor and n % factor == 0:
            return f"{n // factor} {unit}"
    return f"{n} bytes"


def read_regular_file(path: str | os.PathLike, max_bytes: int, what: str) -> bytes:
    """Return the bytes of the regular file ``path``, refusing anything else or anything over ``max_bytes``.

    Parameters
    ----------
    path : path-like
        The file, as the user gave it (the messages show it as given).
    max_bytes : int
        The most bytes accepted; a file with more is refused (the read stops at ``max_bytes + 1``).
    what : str
        What the file should be, for messages: ``"search space"``, ``"results file"``.

    Raises
    ------
    InputError
        One line starting with the path: no such file, permission denied, not a regular file
        (a directory, FIFO, device, socket), or larger than ``max_bytes``.
    """
    shown = str(path)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(Path(path), flags)
    except FileNotFoundError:
        raise InputError(f"{shown}: no such file") from None
    except NotADirectoryError:
        raise InputError(f"{shown}: no such file (a folder on the path is a file)") from None
    except OSError as error:
        raise InputError(f"{shown}: cannot be read ({error.strerror})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise InputError(f"{shown}: is {_kind(info.st_mode)}, not a regular file; a {what} must be a file")
        limit = _size_text(max_bytes)
        if info.st_size > max_bytes:
            raise InputError(f"{shown}: is larger than {limit} ({info.st_size} bytes), the limit for a {what}")
        chunks: list[bytes] = []
        count = 0
        while count <= max_bytes:
            try:
                chunk = os.read(fd, min(_CHUNK, max_bytes + 1 - count))
            except OSError as error:
                raise InputError(f"{shown}: cannot be read ({error.strerror})") from None
            if not chunk:
                break
            chunks.append(chunk)
            count += len(chunk)
        if count > max_bytes:  # it grew while being read
            raise InputError(f"{shown}: is larger than {limit}, the limit for a {what}")
        return b"".join(chunks)
    finally:
        os.close(fd)


def fsync_dir(directory: str | os.PathLike) -> None:
    """fsync a folder so that a rename or link in it survives a power loss (best effort off Linux)."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _new_temp(directory: Path, stem: str, mode: int) -> tuple[int, str]:
    """Create ``.{stem}.<16 random hex digits>.tmp`` exclusively (never an existing file) with ``mode`` less the umask."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    while True:
        name = str(directory / f".{stem}.{secrets.token_hex(8)}.tmp")
        try:
            return os.open(name, flags, mode), name
        except FileExistsError:  # 2**-64 per try
            continue


@contextlib.contextmanager
def _temp_file(directory: Path, stem: str, binary: bool, mode: int) -> Iterator[tuple[IO, Path]]:
    """A new hidden temp file in ``directory`` (:func:`_new_temp`), flushed and fsynced at the end of the block.

    If the block raises, the temp file is removed and the error goes on."""
    fd, name = _new_temp(directory, stem, mode)
    try:
        with os.fdopen(fd, "wb" if binary else "w", **({} if binary else {"encoding": "utf-8"})) as handle:
            yield handle, Path(name)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise


def write_temp_file(directory: str | os.PathLike, stem: str, text: str, mode: int = 0o600) -> Path:
    """Write ``text`` to a new hidden temp file in ``directory``, flushed and fsynced; return its path.

    For a caller that puts it in place itself (the ledger links it, so that a record is never
    overwritten); :func:`write_atomic` renames it over its target. ``mode`` as in :func:`atomic_writer`."""
    with _temp_file(Path(directory), stem, False, mode) as (handle, path):
        handle.write(text)
    return path


@contextlib.contextmanager
def atomic_writer(path: str | os.PathLike, binary: bool = False, mode: int = 0o600,
                  before_replace: Callable[[], None] | None = None) -> Iterator[IO]:
    """Yield a stream whose contents replace ``path`` atomically and durably when the block ends.

    The folder is created if needed. If the block raises, ``path`` is left as it was and the temp
    file is removed. The new file gets ``mode`` less the umask: by default readable by its owner
    only (as :func:`tempfile.mkstemp` makes it); ``0o666`` lets the umask decide, as ``open`` does.
    ``before_replace()`` runs between the durable temp file and the rename (a named fault point:
    :mod:`showwork.faults`). See the module docstring for the guarantees."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _temp_file(path.parent, path.name, binary, mode) as (handle, temp):
        yield handle
    try:
        if before_replace is not None:
            before_replace()
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    fsync_dir(path.parent)


def write_atomic(path: str | os.PathLike, data: str | bytes, mode: int = 0o600,
                 before_replace: Callable[[], None] | None = None) -> Path:
    """Replace ``path`` by ``data`` (text is written as UTF-8) atomically and durably; return ``path``.

    ``mode`` and ``before_replace`` as in :func:`atomic_writer`."""
    with atomic_writer(path, binary=isinstance(data, bytes), mode=mode, before_replace=before_replace) as handle:
        handle.write(data)
    return Path(path)

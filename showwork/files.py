"""Reading a user's input file whole, safely: only a regular file, and never more than a stated size.

``Path.read_bytes`` on a named pipe (FIFO) blocks until a writer comes, possibly forever; on
``/dev/zero`` or ``/dev/urandom`` it reads until memory runs out, and a size check by ``stat``
sees 0 bytes there. So the file is opened with ``O_NONBLOCK`` (opening a FIFO then returns at
once instead of waiting for a writer), the *opened descriptor* is checked with ``fstat`` (no
race with a file swapped in after a check by name), anything but a regular file is refused, and
the read stops as soon as more than ``max_bytes`` bytes have actually arrived (a file that grows
while it is read, or a /proc file whose reported size is 0, cannot slip past the limit).
"""

from __future__ import annotations

import os
import stat

from showwork.errors import InputError

__all__ = ["read_regular_file"]

_CHUNK = 1 << 20

# What a path is when it is not a regular file, for the message.
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def _size_text(n_bytes: int) -> str:
    """``2 GiB``, ``512 MiB``, ``1000 bytes``: a byte count as people read it.

    Examples
    --------
    >>> _size_text(2 << 30), _size_text(3 << 20), _size_text(1000)
    ('2 GiB', '3 MiB', '1000 bytes')
    """
    for shift, unit in ((30, "GiB"), (20, "MiB"), (10, "KiB")):
        if n_bytes >= 1 << shift and n_bytes % (1 << shift) == 0:
            return f"{n_bytes >> shift} {unit}"
    return f"{n_bytes} bytes"


def read_regular_file(path: str | os.PathLike, max_bytes: int, what: str) -> bytes:
    """Return the bytes of the regular file ``path``, refusing anything else and anything over ``max_bytes``.

    Parameters
    ----------
    path : str or path-like
        Symbolic links are followed (to a regular file they are fine).
    max_bytes : int
        The most bytes accepted; one more byte read is a refusal.
    what : str
        What the file should be, for the message (``"results file"``, ``"search space"``).

    Raises
    ------
    InputError
        Missing, unreadable, not a regular file (directory, FIFO, device, socket), or larger than
        ``max_bytes``; the message names the file and the problem.
    """
    try:
        # O_NOCTTY: opening a terminal device must not make it this process's controlling terminal.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except NotADirectoryError:
        raise InputError(f"{path}: no such file (a folder on the path is a file)") from None
    except OSError as error:
        raise InputError(f"{path}: cannot be read ({error.strerror or error})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = next((name for test, name in _KINDS if test(info.st_mode)), "not a regular file")
            raise InputError(f"{path}: is {kind}, not a regular file; a {what} must be a file")
        limit = _size_text(max_bytes)
        if info.st_size > max_bytes:
            raise InputError(f"{path}: is larger than {limit} ({info.st_size} bytes), the limit for a {what}")
        # One read of the announced size (plus one byte, to see growth), then chunks while more arrives.
        chunks = [os.read(fd, info.st_size + 1)] if info.st_size else []
        size = sum(len(c) for c in chunks)
        while size <= max_bytes and (not chunks or chunks[-1]):
            chunk = os.read(fd, min(_CHUNK, max_bytes + 1 - size))
            chunks.append(chunk)
            size += len(chunk)
        if size > max_bytes:
            raise InputError(f"{path}: is larger than {limit}, the limit for a {what}")  # it grew while being read
        return b"".join(chunks)
    except IsADirectoryError:  # not expected after the fstat check, but never a traceback
        raise InputError(f"{path}: is a directory, not a {what}") from None
    except BlockingIOError:
        raise InputError(f"{path}: would block on reading (not a regular file?), not a {what}") from None
    except OSError as error:
        raise InputError(f"{path}: cannot be read ({error.strerror or error})") from None
    finally:
        os.close(fd)

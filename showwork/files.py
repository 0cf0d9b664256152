"""Reading a user's input file safely: a regular file only, and never more than a stated number of bytes.

A path given on the command line may name a FIFO (opening it for reading blocks until a writer
appears), a character device such as ``/dev/zero`` or ``/dev/urandom`` (endless, while ``st_size``
says 0 bytes), a directory or a socket. :func:`read_regular_file` opens with ``O_NONBLOCK`` so that
opening a FIFO cannot block, checks with ``fstat`` on the opened descriptor (no race with a rename
between a check and the open) that it is a regular file, and counts the bytes it actually reads
against the cap instead of trusting ``st_size`` (a file can grow while it is read).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from showwork.errors import InputError

__all__ = ["read_regular_file"]

_CHUNK = 1 << 16

_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


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
            kind = next((text for test, text in _KINDS if test(info.st_mode)), "not a regular file")
            raise InputError(f"{shown}: is {kind}, not a regular file; a {what} must be a file")
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

"""Processes and their sockets, read from Linux /proc: what the tests of servers and clusters inspect."""

from __future__ import annotations

import contextlib
import ipaddress
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

__all__ = ["alive", "descendants", "kill_session", "left_after", "listening_sockets", "needs_proc", "not_on_loopback",
           "process_stat", "session_processes", "signal_the_group"]


def process_stat(pid: int) -> list[str] | None:
    """The fields of ``/proc/PID/stat`` after the command name (state, ppid, pgrp, session, ...);
    None for a process that is gone."""
    try:
        # the command name is in parentheses and may hold spaces: the fields follow the last ")"
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def descendants(root: int) -> set[int]:
    """``root`` and every process below it (from /proc)."""
    children: dict[int, list[int]] = {}
    for pid in _pids():
        fields = process_stat(pid)
        if fields:
            children.setdefault(int(fields[1]), []).append(pid)
    found, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo += children.get(pid, [])
    return found


def session_processes(session: int) -> list[int]:
    """The live (not zombie) processes whose session is ``session``."""
    found = []
    for pid in _pids():
        fields = process_stat(pid)
        if fields and fields[0] != "Z" and int(fields[3]) == session:
            found.append(pid)
    return found


def _proc_address(hex_address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    raw = bytes.fromhex(hex_address)
    if sys.byteorder == "little":  # /proc/net writes each 32-bit word in host byte order
        raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
    address = ipaddress.ip_address(raw)
    return getattr(address, "ipv4_mapped", None) or address


def listening_sockets(pids: set[int]) -> list[tuple[str, int, int]]:
    """``(local address, port, pid)`` of every TCP socket in LISTEN state held by ``pids`` (Linux)."""
    owner: dict[str, int] = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    link = os.readlink(f"/proc/{pid}/fd/{fd}")
                    if link.startswith("socket:["):
                        owner[link[len("socket:["):-1]] = pid
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                local, state, inode = fields[1], fields[3], fields[9]
                if state == "0A" and inode in owner:  # 0A: TCP_LISTEN
                    host, _, port = local.partition(":")
                    found.append((str(_proc_address(host)), int(port, 16), owner[inode]))
    return found


def not_on_loopback(sockets: list[tuple[str, int, int]]) -> list[tuple[str, int, int]]:
    return [s for s in sockets if not ipaddress.ip_address(s[0]).is_loopback]


needs_proc = pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads sockets from Linux /proc")


def kill_session(process: subprocess.Popen) -> None:
    """Clean-up after a test: kill ``process`` if it still runs, reap it, then SIGKILL what is left of its session
    (its Ray, its workers; the process was started with ``start_new_session=True``)."""
    if process.poll() is None:
        process.kill()
        process.wait()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie does not)."""
    fields = process_stat(pid)
    return fields is not None and fields[0] != "Z"


def _in_session_or_group(pid: int, leader: int) -> bool:
    fields = process_stat(pid)
    return fields is not None and fields[0] != "Z" and leader in (int(fields[2]), int(fields[3]))


def left_after(leader: int, seen: set[int], deadline: float) -> list[int]:
    """The processes still alive at ``deadline`` (waiting no longer once none is) of the session or process group of
    ``leader``, or among ``seen`` (those below it while it ran, whatever their group)."""
    while True:
        left = sorted({pid for pid in _pids() if _in_session_or_group(pid, leader)} | {pid for pid in seen if alive(pid)})
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.2)


def signal_the_group(process: subprocess.Popen, signum: int, working: Callable[[], bool], what: str, err: Callable[[], str],
                     seen: set[int] | None = None, left_after_s: float = 15) -> tuple[int | None, float, list[int]]:
    """Wait until ``working()`` (collecting the processes below ``process`` into ``seen``), then signal the whole
    process group of ``process`` (started with ``start_new_session=True``) as ``timeout`` does; its exit status
    (None if still running after 90 s), the seconds it took to exit, and what was left of it (:func:`left_after`)
    ``left_after_s`` after the signal. ``err()`` is its output, for the messages."""
    seen = set() if seen is None else seen
    deadline = time.monotonic() + 240  # Ray's start on a busy 2-core machine
    while not working():
        assert process.poll() is None, f"the command ended before {what}: {err()}"
        assert time.monotonic() < deadline, f"not {what} within 240 s: {err()}"
        seen |= descendants(process.pid) - {process.pid}
        time.sleep(0.1)
    seen |= descendants(process.pid) - {process.pid}
    signalled = time.monotonic()
    os.killpg(process.pid, signum)
    try:
        code = process.wait(timeout=90)
    except subprocess.TimeoutExpired:
        code = None
    took = time.monotonic() - signalled
    return code, took, left_after(process.pid, seen, signalled + left_after_s)

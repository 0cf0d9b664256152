"""Processes and their sockets, read from Linux /proc: what the tests of servers and clusters inspect."""

from __future__ import annotations

import contextlib
import ipaddress
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

__all__ = ["descendants", "kill_session", "listening_sockets", "needs_proc", "not_on_loopback", "process_stat", "session_processes"]


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

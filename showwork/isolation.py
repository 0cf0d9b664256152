"""A trial in a process of its own, forked from the warm worker that imported its family (issue 23 item 6).

Ray reuses a worker process for many trials (``reuse_actors``: that is why a search is fast), so
whatever a trial changed in its process was the next trial's starting point: an environment
variable it set, a resource limit it lowered (a lowered ``RLIMIT_AS`` made the next trial hang
forever), its working directory, ``sys.path``, signal handlers, the global random state, threads it
left running, GPU memory it held. So each trial runs in a child process that the worker forks for
it: the worker (the parent) has imported the family once, and the child starts from that state and
takes its changes with it when it ends. The parent runs no trial code: it relays what the child
sends, waits for it, and kills it when its time is up, which it can do whatever state the child is
in (stopped by SIGSTOP, or in C code that holds its GIL; a thread inside the trial's process could not).

:class:`ChildProcess` is the mechanism (fork, messages over a pipe, kill, wait);
:func:`showwork.trials.execution.run_trial` is what the child runs.

The child:

- dies with its parent (``PR_SET_PDEATHSIG`` = SIGKILL, Linux): a worker that Ray or the driver
  kills leaves no trial process behind, and a GPU trial's memory is freed with it;
- ignores SIGINT (a Ctrl-C reaches the whole process group, Ray's workers included: it is the
  search's, which stops its trials itself, not the trainable's own ``KeyboardInterrupt``), with a
  Python handler, so that programs the trainable starts get the default again; SIGTERM ends it;
- always ends with ``os._exit``: no ``atexit`` handler of Ray's runs in it, and nothing it does
  reaches Ray (its connections belong to the parent).

Forked ahead (issue 35 item 9): a fork of a worker of a few hundred MiB takes milliseconds (the kernel
copies its page tables), and so does the new process's first touch of the pages it shares. So the worker
forks the next trial's process while the current trial runs (:func:`fork_ahead`): it waits for its
trial's arguments (:meth:`ChildProcess.start`), and takes nothing from the trial before, which ran in
a process of its own. These processes are forked by one thread that lasts as long as the worker
(``PR_SET_PDEATHSIG`` ends a child when the *thread* that forked it ends), and each closes, in its
copy, the pipes of the worker's other trial processes. One the worker does not use is killed
(:meth:`ChildProcess.kill`), or ends when its worker ends (its pipe's end, or ``PR_SET_PDEATHSIG``).

Costs (``benchmarks/search.py``): a fork, a pipe and a wait per trial, done while the trial before
runs; and what a trainable caches in its process during a trial (a dataset it loads in ``train``) is
its trial's alone, while what the family's module sets up when imported is shared by every trial of
the worker.

CUDA: a process that has initialised CUDA cannot use it in a child forked from it (the CUDA
runtime does not survive ``fork``), and the worker never initialises it: the GPU is the child's
alone, initialised there, and freed when it ends. A family whose module initialises CUDA when
imported (a tensor created on the GPU at import) leaves the worker unable to fork usable children:
:func:`cuda_initialised` says so (it asks the CUDA driver whether ``cuInit`` was called), and the worker
then runs the trial itself, unisolated, as before (the driver warns). ``torch.cuda.is_available()`` at
import is fine: GPU trials run with ``PYTORCH_NVML_BASED_CUDA_CHECK=1`` (:data:`FORK_SAFE_CUDA_CHECK`),
which answers it through NVML without initialising CUDA; NVML itself (the trial's energy reading, Ray's
GPU detection) opens the GPU's device files but does not initialise CUDA, and does not count.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from multiprocessing.connection import Connection, Pipe
from pathlib import Path
from typing import Any

__all__ = ["FORK_SAFE_CUDA_CHECK", "ChildProcess", "cuda_initialised", "die_with_parent", "exit_description", "fork_ahead"]

FORK_SAFE_CUDA_CHECK = ("PYTORCH_NVML_BASED_CUDA_CHECK", "1")
"""Set in a GPU trial's worker before the family is imported: torch then answers ``torch.cuda.is_available()``
through NVML, without initialising CUDA in the worker (which would make its forked children unable to use it)."""

_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent(parent: int) -> bool:
    """Have the kernel SIGKILL this process when its parent thread ends (Linux ``PR_SET_PDEATHSIG``).

    Returns False where that is not available (not Linux), and ends the process at once when the
    parent is already gone (it may have died between the fork and this call)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        done = libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False
    if os.getppid() != parent:
        os._exit(1)
    return done


def _ignore(signum, frame) -> None:  # a Python handler, not SIG_IGN: programs the trial starts get the default back
    pass


class _ToParent:
    """The child's side of its pipes: ``send(message)``, and ``send.ask(message)``, which waits for the
    parent's :meth:`ChildProcess.reply`."""

    def __init__(self, writer: Connection, replies: Connection) -> None:
        self._writer, self._replies = writer, replies

    def __call__(self, message: Any) -> None:
        self._writer.send(message)

    def ask(self, message: Any) -> Any:
        self._writer.send(message)
        return self._replies.recv()

    def arguments(self) -> tuple:
        """The arguments the parent starts this child with (:meth:`ChildProcess.start`); EOFError if it never will."""
        return self._replies.recv()


class ChildProcess:
    """``function(send, *args)`` run in a child process forked from this one.

    ``send(message)`` pickles ``message`` to the parent, which reads it with :meth:`receive`;
    ``send.ask(message)`` also waits until the parent answers it with :meth:`reply`.
    The child ends with ``os._exit(0)`` when ``function`` returns, ``os._exit(1)`` when it raises
    (the traceback goes to stderr: the worker's log). See the module docstring for what else
    holds in the child. The child dies when the thread that forked it ends: only that thread may use
    it, unless it was forked by :func:`fork_ahead`'s thread, which lasts as long as this process.
    """

    def __init__(self, function: Callable[..., None], *args: Any) -> None:
        reader, writer = Pipe(duplex=False)
        replies, answer = Pipe(duplex=False)
        parent = os.getpid()
        _PARENT_ENDS_LOCK.acquire()  # no end is closed, nor added, while the child takes its copy of them
        pid = os.fork()
        if pid == 0:  # the child: never returns
            _PARENT_ENDS_LOCK.release()
            reader.close()
            answer.close()
            for fd in _PARENT_ENDS:  # this process's ends of its siblings' pipes: not the child's to hold open
                with contextlib.suppress(OSError):
                    os.close(fd)
            self._run_child(parent, _ToParent(writer, replies), function, args)
        _PARENT_ENDS.update((reader.fileno(), answer.fileno()))
        _PARENT_ENDS_LOCK.release()
        writer.close()
        replies.close()
        self.pid = pid
        self._reader: Connection | None = reader
        self._answer: Connection | None = answer
        self._status: int | None = None

    @staticmethod
    def _run_child(parent: int, send: _ToParent, function: Callable[..., None], args: tuple) -> None:
        code = 1
        try:
            die_with_parent(parent)
            signal.signal(signal.SIGINT, _ignore)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            function(send, *args)
            code = 0
        except BaseException:  # noqa: BLE001 - whatever happens, the child ends here, never in the caller's code
            with contextlib.suppress(BaseException):
                traceback.print_exc()
        finally:
            with contextlib.suppress(BaseException):
                sys.stdout.flush()
                sys.stderr.flush()
            os._exit(code)

    def receive(self, timeout: float | None) -> Any:
        """The child's next message.

        Raises
        ------
        TimeoutError
            None came within ``timeout`` seconds (None: wait as long as it takes).
        EOFError
            The child has ended and sent everything. (Processes it forked may keep the pipe open after it
            ended, so its end is also checked every :attr:`check_s` seconds.)
        """
        deadline = None if timeout is None else time.monotonic() + max(0.0, timeout)
        while self._reader is not None:
            left = self.check_s if deadline is None else min(self.check_s, deadline - time.monotonic())
            if self._reader.poll(max(0.0, left)):
                try:
                    return self._reader.recv()
                except (EOFError, OSError):
                    break
            if self._ended():
                if self._reader.poll(0):
                    continue  # what it sent before it ended
                break
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError
        self._close_reader()
        raise EOFError

    check_s = 0.5

    def start(self, *args: Any) -> None:
        """Give a child forked ahead (:func:`fork_ahead`) what it waits for: ``send.arguments()`` returns ``args``."""
        self.reply(args)

    def alive(self) -> bool:
        """Whether the child has not ended yet."""
        return not self._ended()

    def reply(self, message: Any) -> None:
        """Answer the child's :meth:`_ToParent.ask` (nothing happens if the child has gone)."""
        if self._answer is not None:
            with contextlib.suppress(OSError):  # BrokenPipeError: it ended
                self._answer.send(message)

    def _ended(self) -> bool:
        """Whether the child has ended (and is reaped)."""
        if self._status is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                pid, status = self.pid, 0
            if pid == 0:
                return False
            self._status = status
        return True

    def _close_reader(self) -> None:
        with _PARENT_ENDS_LOCK:
            for end in (self._reader, self._answer):
                if end is not None:
                    _PARENT_ENDS.discard(end.fileno())
                    end.close()
            self._reader = self._answer = None

    def peak_rss_bytes(self) -> int | None:
        """The child's peak resident memory (``VmHWM`` of ``/proc/PID/status``; Linux), while it is alive."""
        try:
            for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        except (OSError, ValueError, IndexError):
            pass
        return None

    def kill(self) -> None:
        """SIGKILL the child (whatever its state: stopped, or in C code) and wait until it is gone."""
        if self._status is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        self.wait()

    def wait_later(self) -> None:
        """Reap the child in the background (one thread for all of this process's children, started once): its
        exit, the kernel freeing its copy of the parent's memory, takes milliseconds that need not hold anyone up."""
        _background("reap").submit(self.wait)

    def wait(self) -> int:
        """Wait for the child to end; its ``waitpid`` status (see :func:`exit_description`)."""
        if self._status is None:
            while True:
                try:
                    _, self._status = os.waitpid(self.pid, 0)
                    break
                except ChildProcessError:  # reaped elsewhere (a SIGCHLD handler set to SIG_IGN)
                    self._status = 0
                    break
                except InterruptedError:
                    continue
        self._close_reader()
        return self._status


_PARENT_ENDS: set[int] = set()
"""This process's open ends of its children's pipes: a child forked later closes its copies of them."""
_PARENT_ENDS_LOCK = threading.Lock()


_BACKGROUND: dict[str, ThreadPoolExecutor] = {}
_BACKGROUND_LOCK = threading.Lock()


def _background(job: str) -> ThreadPoolExecutor:
    """This process's one thread for ``job`` ("fork", "reap"), started at its first use; it lasts as long as the process."""
    with _BACKGROUND_LOCK:
        if job not in _BACKGROUND:
            _BACKGROUND[job] = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"showwork-{job}")
        return _BACKGROUND[job]


def fork_ahead(function: Callable[..., None], *args: Any) -> Future[ChildProcess]:
    """``ChildProcess(function, *args)``, forked in the background by a thread that lasts as long as this process:
    the child dies with the process, not with the thread that asked (``PR_SET_PDEATHSIG``), and any thread may use it.

    ``function`` prepares what it can, then waits for the rest (``send.arguments()``, which
    :meth:`ChildProcess.start` answers and which raises EOFError when the parent kills it or ends)."""
    return _background("fork").submit(ChildProcess, function, *args)


def exit_description(status: int) -> str:
    """How a child with ``waitpid`` status ``status`` ended: ``"was killed by signal 9 (SIGKILL)"``, ``"exited with status 1"``."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = "unknown"
        return f"was killed by signal {number} ({name})"
    if os.WIFEXITED(status):
        return f"exited with status {os.WEXITSTATUS(status)}"
    return f"ended with wait status {status}"


CUDA_NOT_INITIALIZED = 3
"""``CUDA_ERROR_NOT_INITIALIZED`` (cuda.h): what every driver API call returns before the process's ``cuInit``."""


def cuda_initialised(proc: str = "/proc/self") -> bool:
    """Whether this process has initialised the CUDA driver, so that a child forked from it could not use CUDA.

    What a forked child inherits and cannot use is the driver's state after ``cuInit`` (the CUDA
    runtime, torch, CuPy and JAX all call it first), and the CUDA driver itself says whether
    ``cuInit`` was called: before it, every other driver API call returns
    ``CUDA_ERROR_NOT_INITIALIZED`` (NVIDIA's driver API reference, "Initialization"). So:

    1. torch's own flag where torch is imported (``torch.cuda.is_initialized()``);
    2. else, no CUDA driver library (``libcuda.so*``) mapped in ``PROC/maps``: nothing can have called
       ``cuInit``, so False. NVML is ``libnvidia-ml.so``, which does not load it: ``pynvml.nvmlInit()``,
       torch's NVML-based ``is_available()`` (:data:`FORK_SAFE_CUDA_CHECK`) and Ray's GPU detection leave
       it unmapped;
    3. else the driver is asked, through the library already mapped (``RTLD_NOLOAD``: no second copy):
       ``cuDeviceGetCount`` returns ``CUDA_ERROR_NOT_INITIALIZED`` (False) or anything else (True: initialised,
       or an initialisation that failed). Where it cannot be asked, True: the worker then runs its trials
       itself, which always works, instead of forking children that might not.

    Open device files are no sign: NVML opens the same ones as ``cuInit`` (``/dev/nvidiactl``,
    ``/dev/nvidia0``, ``/dev/nvidia-uvm`` twice and ``/dev/nvidia-caps/*`` on driver 580), so a process that
    only read the GPUs' counters looked initialised. ``proc`` is ``/proc/self`` (a test gives a folder in
    its place).
    """
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    with contextlib.suppress(Exception):
        if cuda is not None and cuda.is_initialized():
            return True
    libraries = _mapped_cuda_drivers(Path(proc) / "maps")
    return any(_driver_initialised(path) for path in libraries)


def _mapped_cuda_drivers(maps: Path) -> list[str]:
    """The paths of the CUDA driver libraries (``libcuda.so``, ``libcuda.so.1``, ...) mapped in ``maps``."""
    try:
        text = maps.read_text()
    except OSError:
        return []
    found: list[str] = []
    for line in text.splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) == 6 and os.path.basename(fields[5]).startswith("libcuda.so") and fields[5] not in found:
            found.append(fields[5])
    return found


def _driver_initialised(path: str) -> bool:
    """Whether the CUDA driver library at ``path``, already loaded in this process, has been initialised."""
    try:
        driver = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        count = ctypes.c_int(0)
        return driver.cuDeviceGetCount(ctypes.byref(count)) != CUDA_NOT_INITIALIZED
    except (OSError, AttributeError):  # not loadable as mapped (deleted, moved), or no such symbol: assume the worst
        return True

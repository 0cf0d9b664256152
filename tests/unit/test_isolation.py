"""A trial's own process (issue 23 item 6), without Ray: what the child may change stays in it, and
the parent can end it whatever state it is in; the driver's deadlines on a fake clock (item 4)."""

from __future__ import annotations

import ctypes
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from showwork.constants import FAMILY_IMPORT_TIMEOUT
from showwork.isolation import ChildProcess, cuda_initialised, exit_description, fork_ahead
from showwork.run.deadlines import TrialDeadlines
from showwork.store import Ledger, failure_kind
from showwork.trials.execution import REPORT_KEY, TRIAL_START_KEY, WORKER_KEY, SearchContext

from helpers import trial_record
from processes import process_stat

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; PR_SET_PDEATHSIG")


def _ignored_signals() -> int:
    """The mask of ignored signals of this process (``SigIgn`` of /proc/self/status)."""
    line = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("SigIgn:"))
    return int(line.split()[1], 16)


def _change_everything(send, folder: str) -> None:
    """What a trial may do to its process: every item of issue 23 item 6."""
    os.environ["SHOWWORK_TEST_LEAK"] = "set by the child"
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))  # lowered for good: a process cannot raise its hard limit
    os.chdir(folder)
    sys.path.insert(0, "/leaked/by/the/child")
    ctypes.CDLL(None).signal(int(signal.SIGUSR1), ctypes.c_void_p(1))  # SIG_IGN set in C, as a library would
    signal.signal(signal.SIGUSR2, lambda *a: None)
    random.seed(12345)
    np.random.seed(12345)
    send(("changed", os.getpid()))


@linux_only
def test_what_a_child_changes_in_its_process_stays_in_it(tmp_path):
    before = (dict(os.environ), resource.getrlimit(resource.RLIMIT_NOFILE), os.getcwd(), list(sys.path),
              _ignored_signals(), signal.getsignal(signal.SIGUSR2))
    random_state, numpy_state = random.getstate(), np.random.get_state()
    child = ChildProcess(_change_everything, str(tmp_path))
    assert child.receive(timeout=30) == ("changed", child.pid) and child.pid != os.getpid()
    with pytest.raises(EOFError):
        child.receive(timeout=30)
    assert child.wait() == 0
    after = (dict(os.environ), resource.getrlimit(resource.RLIMIT_NOFILE), os.getcwd(), list(sys.path),
             _ignored_signals(), signal.getsignal(signal.SIGUSR2))
    assert after == before
    assert random.getstate() == random_state
    assert all(np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b
               for a, b in zip(np.random.get_state(), numpy_state))


def _stop_and_wait(send) -> None:
    send(("stopping", os.getpid()))
    os.kill(os.getpid(), signal.SIGSTOP)
    time.sleep(3600)


def _hold_the_gil(send) -> None:
    send(("holding", os.getpid()))
    ctypes.PyDLL(None).sleep(3600)  # C code that keeps the GIL: no thread of this process runs meanwhile


@linux_only
@pytest.mark.parametrize("function", [_stop_and_wait, _hold_the_gil], ids=["stopped", "C code holding the GIL"])
def test_the_parent_ends_a_child_that_cannot_end_itself(function):
    child = ChildProcess(function)
    assert child.receive(timeout=30)[1] == child.pid
    with pytest.raises(TimeoutError):
        child.receive(timeout=0.2)
    started = time.monotonic()
    child.kill()
    assert time.monotonic() - started < 5
    assert exit_description(child.wait()) == "was killed by signal 9 (SIGKILL)"
    assert process_stat(child.pid) is None


def _leave_a_process_behind(send) -> None:
    grandchild = os.fork()
    if grandchild == 0:  # holds the pipe open, as a worker process the trainable started might
        time.sleep(60)
        os._exit(0)
    send(("left", grandchild))


def test_the_end_of_a_child_is_seen_while_a_process_it_started_holds_its_pipe():
    child = ChildProcess(_leave_a_process_behind)
    _, grandchild = child.receive(timeout=30)
    try:
        started = time.monotonic()
        with pytest.raises(EOFError):
            child.receive(timeout=None)
        assert time.monotonic() - started < 3
        assert child.wait() == 0
    finally:
        os.kill(grandchild, signal.SIGKILL)


def _exit_without_a_word(send) -> None:
    os._exit(7)


def _raise(send) -> None:
    raise ValueError("a bug")


def _ask_then_report(send) -> None:
    answer = send.ask(("training", "now"))
    send(("after the answer", answer, time.monotonic()))


def test_a_child_that_asks_waits_for_the_parents_answer():
    """The trial's process calls the trainable only once the worker has passed its start on to the driver."""
    child = ChildProcess(_ask_then_report)
    assert child.receive(timeout=30) == ("training", "now")
    with pytest.raises(TimeoutError):  # it waits: nothing more until the parent answers
        child.receive(timeout=0.5)
    answered = time.monotonic()
    child.reply("go on")
    kind, answer, when = child.receive(timeout=30)
    assert (kind, answer) == ("after the answer", "go on") and when >= answered
    assert child.wait() == 0
    child.reply("gone")  # an answer to a child that has ended is dropped, not an error


def test_how_a_child_ended_is_said_in_words():
    assert exit_description(ChildProcess(_exit_without_a_word).wait()) == "exited with status 7"
    assert exit_description(ChildProcess(_raise).wait()) == "exited with status 1"


def _wait_for_arguments(send, name) -> None:
    send(("waiting", name))
    send(("started", name, *send.arguments()))


@linux_only
def test_a_child_forked_ahead_waits_for_its_arguments_and_outlives_the_thread_that_asked():
    """Issue 35 item 9: the next trial's process is forked while the current trial runs, asked for by the current
    trial's thread, which Ray ends after the trial; a child dies when the thread that forked it ends."""
    forked = []

    def ask() -> None:  # and end once the child is waiting (after its PR_SET_PDEATHSIG)
        child = fork_ahead(_wait_for_arguments, "next").result(timeout=30)
        forked.append((child, child.receive(timeout=30)))

    asker = threading.Thread(target=ask)
    asker.start()
    asker.join()
    child, said = forked[0]
    assert said == ("waiting", "next")
    with pytest.raises(TimeoutError):  # it waits for its arguments; meanwhile its asker's end did not kill it
        child.receive(timeout=0.3)
    assert child.alive()
    child.start(7, "seven")
    assert child.receive(timeout=30) == ("started", "next", 7, "seven")
    assert child.wait() == 0 and not child.alive()


def _pipe_inodes(pid: int | str) -> set[int]:
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        link = os.readlink(f"/proc/{pid}/fd/{fd}") if os.path.islink(f"/proc/{pid}/fd/{fd}") else ""
        if link.startswith("pipe:["):
            inodes.add(int(link[6:-1]))
    return inodes


@linux_only
def test_a_child_holds_no_end_of_its_siblings_pipes():
    """A process forked ahead while a trial's process runs would otherwise keep copies of the worker's ends of
    that trial's pipes (it was forked from the worker while they were open)."""
    before = _pipe_inodes("self")
    first = ChildProcess(_wait_for_arguments, "first")
    first_ends = _pipe_inodes("self") - before  # the parent's ends of the first child's two pipes
    assert len(first_ends) == 2 and first.receive(timeout=30) == ("waiting", "first")
    second = fork_ahead(_wait_for_arguments, "second").result(timeout=30)
    try:
        assert second.receive(timeout=30) == ("waiting", "second")
        assert _pipe_inodes(second.pid) and not _pipe_inodes(second.pid) & first_ends
        first.start()
        assert first.receive(timeout=30) == ("started", "first")
        assert first.wait() == 0
    finally:
        first.kill()
        second.kill()


@linux_only
def test_a_child_dies_with_its_parent(tmp_path):
    """A worker that Ray or the driver kills leaves no trial process behind (PR_SET_PDEATHSIG)."""
    script = tmp_path / "parent.py"
    script.write_text(textwrap.dedent("""
        import sys, time
        from showwork.isolation import ChildProcess

        def sleep(send):
            send("ready")
            time.sleep(3600)

        child = ChildProcess(sleep)
        child.receive(timeout=30)
        print(child.pid, flush=True)
        time.sleep(3600)
    """))
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        grandchild = int(parent.stdout.readline())
        assert process_stat(grandchild) is not None
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 10
        while (state := process_stat(grandchild)) is not None and state[0] != "Z":
            assert time.monotonic() < deadline, "the trial's process outlived its worker"
            time.sleep(0.05)
    finally:
        parent.kill()


STANDINS = Path(__file__).resolve().parents[1] / "standins"


NVML_ONLY = """
import contextlib, json, os, sys
from pathlib import Path

import pynvml  # the stand-in, first on sys.path

from showwork.isolation import cuda_initialised

dev, proc = Path(sys.argv[1]), Path(sys.argv[2])
pynvml.nvmlInit()
(proc / "fd").mkdir(parents=True)  # this process's /proc/self, with the stand-in's device folder where /dev would be
for fd in os.listdir("/proc/self/fd"):
    with contextlib.suppress(OSError):
        (proc / "fd" / fd).symlink_to(os.readlink(f"/proc/self/fd/{fd}").replace(str(dev), "/dev"))
(proc / "maps").write_text(Path("/proc/self/maps").read_text().replace(str(dev), "/dev"))
opened = sorted(os.readlink(link) for link in (proc / "fd").iterdir() if os.readlink(link).startswith("/dev/nvidia"))
seen = cuda_initialised(proc=str(proc))
pynvml.nvmlShutdown()
left = []
for fd in os.listdir("/proc/self/fd"):
    with contextlib.suppress(OSError):  # the listing's own descriptor is gone
        if os.readlink(f"/proc/self/fd/{fd}").startswith(str(dev)):
            left.append(fd)
print(json.dumps({"opened": opened, "initialised": seen, "left_open": left}))
"""


def test_nvml_opening_the_gpus_device_files_is_not_cuda(tmp_path):
    """NVML (a trial's energy reading, torch's NVML-based ``is_available``) opens the device files that ``cuInit``
    opens, ``/dev/nvidia-uvm`` included (driver 580): the worker must still fork its trials (issue 36 item 1).
    In a process of its own, whose only GPU use is NVML (this one may have initialised CUDA on a GPU machine)."""
    nvml = json.dumps({"devices": [{"name": "H200"}], "dev": str(tmp_path / "dev")})
    done = subprocess.run([sys.executable, "-c", NVML_ONLY, str(tmp_path / "dev"), str(tmp_path / "proc")],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "SHOWWORK_STANDIN_NVML": nvml,
                               "PYTHONPATH": os.pathsep.join([str(STANDINS), *sys.path])})
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["opened"] == ["/dev/nvidia-caps/nvidia-cap1", "/dev/nvidia-caps/nvidia-cap2", "/dev/nvidia-uvm",
                              "/dev/nvidia-uvm", "/dev/nvidia0", "/dev/nvidiactl"]
    assert seen["initialised"] is False and seen["left_open"] == []
    assert not cuda_initialised(proc=str(tmp_path / "missing"))


FAKE_DRIVER = """
static int initialised = 0;
int cuInit(unsigned int flags) { initialised = 1; return 0; }
int cuDeviceGetCount(int *count) { if (!initialised) return 3; *count = 1; return 0; }
"""


@pytest.mark.skipif(shutil.which("cc") is None, reason="builds a stand-in CUDA driver with a C compiler")
def test_cuda_is_initialised_once_the_driver_was_initialised_not_when_it_is_loaded(tmp_path):
    """The sign is the driver's own answer: loaded (as ``import torch`` may do) is not initialised; ``cuInit`` is."""
    (tmp_path / "driver.c").write_text(FAKE_DRIVER)
    driver = tmp_path / "lib" / "libcuda.so.1"
    driver.parent.mkdir()
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(driver), str(tmp_path / "driver.c")], check=True)
    script = textwrap.dedent(f"""
        import ctypes
        from showwork.isolation import cuda_initialised
        assert not cuda_initialised()  # no CUDA driver in this process
        driver = ctypes.CDLL({str(driver)!r})
        assert not cuda_initialised(), "loaded, not initialised"
        assert driver.cuInit(0) == 0
        assert cuda_initialised()
        print("ok")
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert done.stdout.strip() == "ok", done.stderr
    # A driver mapped but not loadable as mapped (replaced since): assumed initialised, so trials run unforked.
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "maps").write_text(f"7f00-7f01 r-xp 00000000 08:01 42    {tmp_path / 'gone' / 'libcuda.so.1'}\n")
    assert cuda_initialised(proc=str(tmp_path / "proc"))


def test_a_timeout_of_the_workers_set_up_is_a_kind_of_its_own():
    assert failure_kind("timeout", f"{FAMILY_IMPORT_TIMEOUT}: the worker's set-up ...") == FAMILY_IMPORT_TIMEOUT
    assert failure_kind("timeout", "timed out after 5 s") == "timeout"
    assert failure_kind("timeout", None) == "timeout"
    assert failure_kind("failed", f"{FAMILY_IMPORT_TIMEOUT}: not a timeout") != FAMILY_IMPORT_TIMEOUT


# ---------------------------------------------------------------- the driver's deadlines (item 4)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def deadlines_for(tmp_path, **limits) -> tuple[TrialDeadlines, Ledger, Clock]:
    context = SearchContext(name="limits", storage_dir=str(tmp_path), space={"x": {"distribution": "uniform", "low": 0.0,
                            "high": 1.0}}, seed=3, family="slow.py:train", base_dir=str(tmp_path), data={},
                            metric="acc", mode="max", **limits)
    clock = Clock()
    return TrialDeadlines(Ledger(tmp_path, "limits"), context, grace_s=10.0, clock=clock), Ledger(tmp_path, "limits"), clock


def trial(index: int):
    return SimpleNamespace(config={"index": index}, temporary_state=SimpleNamespace(ray_actor=None))


def test_the_driver_records_a_set_up_past_its_limit_and_grace(tmp_path):
    deadlines, ledger, clock = deadlines_for(tmp_path, setup_timeout_s=30.0, timeout_s=5.0)
    deadlines.on_trial_start(0, [], trial(0))
    clock.now += 39.9
    assert deadlines.check() == [] and ledger.read(0) is None
    clock.now += 0.2
    assert deadlines.check() == [0]
    record = ledger.read(0)
    assert record.status == "timeout" and record.failure_kind == FAMILY_IMPORT_TIMEOUT
    assert "setup_timeout_s = 30 s" in record.error and "the driver killed the worker 10 s later" in record.error
    assert record.params == deadlines.context.trial(0)[0] and record.runtime_s == pytest.approx(40.1)
    assert deadlines.check() == []  # ended once
    deadlines.close()


def test_the_driver_counts_timeout_s_from_the_trainables_start_and_keeps_the_workers_own_record(tmp_path):
    deadlines, ledger, clock = deadlines_for(tmp_path, setup_timeout_s=30.0, timeout_s=5.0)
    for index in (0, 1):
        deadlines.on_trial_start(0, [], trial(index))
    clock.now += 25  # a long set-up, within its limit
    started = "2026-01-01T00:00:25+00:00"
    for index in (0, 1):
        deadlines.on_trial_result(0, [], trial(index), {REPORT_KEY: [{"epoch": 0, "acc": 0.5}], TRIAL_START_KEY: started,
                                                        WORKER_KEY: {"pid": 1, "node_id": None, "isolated": True}})
    ledger.write(trial_record(1, params=deadlines.context.trial(1)[0], seed=deadlines.context.trial(1)[1]))
    clock.now += 14.9
    assert deadlines.check() == []
    clock.now += 0.2
    assert deadlines.check() == [0, 1]
    record = ledger.read(0)
    assert record.status == "timeout" and record.failure_kind == "timeout" and record.error.startswith("timed out after 5 s")
    assert record.history == [{"epoch": 0, "acc": 0.5}] and record.started_at == started
    assert ledger.read(1).status == "finished"  # the worker's record stands
    deadlines.close()


def test_without_timeout_s_only_the_set_up_has_a_deadline_and_ended_trials_have_none(tmp_path):
    deadlines, ledger, clock = deadlines_for(tmp_path, setup_timeout_s=30.0)
    deadlines.on_trial_start(0, [], trial(0))
    deadlines.on_trial_start(0, [], trial(1))
    deadlines.on_trial_result(0, [], trial(0), {REPORT_KEY: [], TRIAL_START_KEY: "2026-01-01T00:00:00+00:00"})
    deadlines.on_trial_complete(0, [], trial(1))
    clock.now += 10**6
    assert deadlines.check() == [] and ledger.records() == []
    deadlines.close()


def test_a_stopped_search_kills_the_trials_still_running_after_the_grace_and_records_none(tmp_path, monkeypatch):
    """Issue 35 item 4: Ray Tune waited 10 s for a trial in the middle of a long epoch, and SIGTERM to a search
    ended it after 15 s; the driver now kills what still runs 2 s after the signal, as at a deadline but without a
    record (the trial runs again on resume)."""
    deadlines, ledger, clock = deadlines_for(tmp_path, setup_timeout_s=30.0, timeout_s=100.0)
    killed = []
    monkeypatch.setattr(deadlines, "_kill", killed.append)
    for index in (0, 1, 2):
        deadlines.on_trial_start(0, [], trial(index))
    deadlines.on_trial_complete(0, [], trial(2))  # stopped by Tune within the grace
    deadlines.end_all_after(2.0)
    clock.now += 1.9
    deadlines.end_all_after(2.0)  # asked again (Tune asks its stop condition often): the first time stands
    assert deadlines.check() == [] and killed == []
    clock.now += 0.2
    assert deadlines.check() == []  # not ended at a deadline: no timeout
    assert len(killed) == 2 and ledger.records() == []
    clock.now += 1000  # past every deadline: nothing is left to end
    assert deadlines.check() == [] and len(killed) == 2 and ledger.records() == []
    deadlines.close()


TRAIN_NOTING_ITS_CALL = """
import time
from pathlib import Path


def train(config, *, seed, device, reporter, data):
    Path(data["called"]).write_text(repr(time.monotonic()))
    return {"acc": config["x"]}
"""


def test_the_trainable_is_called_only_after_the_driver_has_its_start(tmp_path):
    """Before: the trial's process went on into the trainable while its worker was still reporting the start;
    a worker stopped then (the family stopped it at once) left the driver counting setup_timeout_s, not
    timeout_s, and the search hung past the 180 s of test_a_worker_stopped_by_sigstop_is_ended_by_the_driver (CI)."""
    from showwork.trials.execution import EpochReports, WorkerPlace
    from showwork.trials.worker import TrialSupervisor

    (tmp_path / "noting.py").write_text(TRAIN_NOTING_ITS_CALL)
    called = tmp_path / "called"
    context = SearchContext(name="order", storage_dir=str(tmp_path / "runs"), space={"x": {"distribution": "uniform",
                            "low": 0.0, "high": 1.0}}, seed=3, family="noting.py:train", base_dir=str(tmp_path),
                            data={"called": str(called)}, metric="acc", mode="max")
    returned: list[float] = []

    def to_the_driver(report: dict) -> None:  # tune.report: returns once the driver's hooks have the report
        if report[REPORT_KEY] == [] and not returned:  # the start
            time.sleep(1.0)
            returned.append(time.monotonic())

    place = WorkerPlace(node_id=None, hostname="here", device="cpu", family="noting.py:train", family_folder=tmp_path)
    assert TrialSupervisor(context, 0, place, EpochReports(to_the_driver)).run() is None
    assert Ledger(tmp_path / "runs", "order").read(0).status == "finished"
    assert float(called.read_text()) >= returned[0]


TRAIN_LISTING_ITS_IMPORTS = """
import sys
from pathlib import Path


def train(config, *, seed, device, reporter, data):
    before = set(Path(data["worker_modules"]).read_text().split())
    reporter(epoch=0, acc=config["x"])
    Path(data["imported"]).write_text("\\n".join(sorted(set(sys.modules) - before)))
    return {"acc": config["x"]}
"""


def test_a_trials_process_imports_nothing_its_worker_could_have(tmp_path):
    """Each forked trial process imported showwork.energy (and an encoding) anew, 2.5 ms of a 0 s trial: the
    worker's set-up (prepare_worker) imports what run_trial does, so every process forked from it has them."""
    import sys

    from showwork.trials.execution import EpochReports, WorkerPlace
    from showwork.trials.worker import TrialSupervisor, prepare_worker

    (tmp_path / "listing.py").write_text(TRAIN_LISTING_ITS_IMPORTS)
    data = {"worker_modules": str(tmp_path / "worker"), "imported": str(tmp_path / "imported")}
    context = SearchContext(name="imports", storage_dir=str(tmp_path / "runs"), space={"x": {"distribution": "uniform",
                            "low": 0.0, "high": 1.0}}, seed=3, family="listing.py:train", base_dir=str(tmp_path),
                            data=data, metric="acc", mode="max")
    place = WorkerPlace(node_id=None, hostname="here", device="cpu", family="listing.py:train", family_folder=tmp_path)
    assert prepare_worker(context, place)
    (tmp_path / "worker").write_text("\n".join(sys.modules))
    assert TrialSupervisor(context, 0, place, EpochReports(lambda report: None)).run() is None
    assert Ledger(tmp_path / "runs", "imports").read(0).status == "finished"
    assert (tmp_path / "imported").read_text() == ""


def test_loaded_modules_are_taken_again_only_when_the_set_changed(monkeypatch):
    """_LoadedModules.now reuses a snapshot while sys.modules holds the same names (its count and last name),
    so a trial's process does not touch every module's entry, which made the kernel copy the pages (4 ms a trial)."""
    import sys
    import types

    from showwork.trials.execution import _LoadedModules

    first = _LoadedModules.now()
    assert _LoadedModules.now(first) is first and first.names == frozenset(sys.modules)
    monkeypatch.setitem(sys.modules, "showwork_test_new_module", types.ModuleType("showwork_test_new_module"))
    added = _LoadedModules.now(first)
    assert added is not first and added.names - first.names == {"showwork_test_new_module"}
    # one removed and another added: the same count, another last name
    gone = next(name for name in sys.modules if name not in ("sys", "builtins", "showwork_test_new_module"))
    monkeypatch.delitem(sys.modules, gone)
    monkeypatch.setitem(sys.modules, "showwork_test_other_module", types.ModuleType("showwork_test_other_module"))
    swapped = _LoadedModules.now(added)
    assert swapped.count == added.count and swapped.names - added.names == {"showwork_test_other_module"}


TRAIN_IMPORTING_IN_TRAIN = """
def train(config, *, seed, device, reporter, data):
    import sortedcontainers  # noqa: F401 - a distribution the worker has not loaded

    return {"acc": config["x"]}
"""


def test_a_forked_trial_records_the_distributions_its_trainable_imports(tmp_path):
    import sys

    from showwork.trials.execution import EpochReports, WorkerPlace
    from showwork.trials.worker import TrialSupervisor, prepare_worker

    if "sortedcontainers" in sys.modules:
        pytest.skip("sortedcontainers is already loaded in this process")
    (tmp_path / "importing.py").write_text(TRAIN_IMPORTING_IN_TRAIN)
    context = SearchContext(name="importing", storage_dir=str(tmp_path / "runs"), space={"x": {"distribution": "uniform",
                            "low": 0.0, "high": 1.0}}, seed=3, family="importing.py:train", base_dir=str(tmp_path),
                            data={}, metric="acc", mode="max")
    place = WorkerPlace(node_id=None, hostname="here", device="cpu", family="importing.py:train", family_folder=tmp_path)
    assert prepare_worker(context, place)
    for index in (0, 1):  # each trial's process imports it anew; the worker never does
        assert TrialSupervisor(context, index, place, EpochReports(lambda report: None)).run() is None
        record = Ledger(tmp_path / "runs", "importing").read(index)
        assert record.status == "finished" and "sortedcontainers" in record.packages
    assert "sortedcontainers" not in sys.modules


TRAIN_NOTING_ITS_PROCESS = """
import json
import os
import time
from pathlib import Path


def train(config, *, seed, device, reporter, data):
    with open("/proc/self/stat") as stat:
        started = int(stat.read().rsplit(")", 1)[1].split()[19]) / os.sysconf("SC_CLK_TCK")  # since boot
    Path(data["folder"], f"{seed}.json").write_text(json.dumps({
        "forked_s_ago": time.clock_gettime(time.CLOCK_BOOTTIME) - started,
        "seen": os.environ.get("SHOWWORK_TEST_TRIAL"), "worker": os.environ.get("SHOWWORK_TEST_WORKER")}))
    os.environ["SHOWWORK_TEST_TRIAL"] = "set by a trial"
    time.sleep(float(data["sleep_s"]))
    return {"acc": config["x"]}
"""


@linux_only
def test_the_next_trial_runs_in_a_process_forked_while_the_trial_before_ran(tmp_path, monkeypatch):
    """Issue 35 item 9: a worker's next trial process is forked while the current trial runs, from the worker
    (never from a trial's process), and used only while the worker is as it was then."""
    import json

    from showwork.sampling import trial_seed
    from showwork.trials.execution import EpochReports, WorkerPlace
    from showwork.trials.worker import TrialProcesses, TrialSupervisor, prepare_worker

    (tmp_path / "noting.py").write_text(TRAIN_NOTING_ITS_PROCESS)
    context = SearchContext(name="ahead", storage_dir=str(tmp_path / "runs"), space={"x": {"distribution": "uniform",
                            "low": 0.0, "high": 1.0}}, seed=3, family="noting.py:train", base_dir=str(tmp_path),
                            data={"folder": str(tmp_path), "sleep_s": 0.5}, metric="acc", mode="max")
    place = WorkerPlace(node_id=None, hostname="here", device="cpu", family="noting.py:train", family_folder=tmp_path)
    monkeypatch.setenv("SHOWWORK_TEST_WORKER", "before")
    assert prepare_worker(context, place)
    processes = TrialProcesses()
    seen = []
    try:
        for index in range(3):
            if index == 2:  # the worker changed since the waiting process was forked: that process is not used
                monkeypatch.setenv("SHOWWORK_TEST_WORKER", "after")
            assert TrialSupervisor(context, index, place, EpochReports(lambda report: None), processes=processes).run() is None
            assert Ledger(tmp_path / "runs", "ahead").read(index).status == "finished"
            seen.append(json.loads((tmp_path / f"{trial_seed(3, index)}.json").read_text()))
    finally:
        processes.discard()
    # Trial 1's process was forked while trial 0 ran (0.5 s before its trainable's call); trials 0 and 2 got theirs then.
    assert [s["forked_s_ago"] >= 0.3 for s in seen] == [False, True, False], seen
    assert [s["seen"] for s in seen] == [None, None, None]  # never what the trial before set in its process
    assert [s["worker"] for s in seen] == ["before", "before", "after"]

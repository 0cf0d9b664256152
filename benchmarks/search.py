"""Benchmark ``showwork search`` (Ray Tune + MLflow + ledger) against plain Ray Tune, a process pool and a loop.

Usage::

    python benchmarks/search.py [--quick] [--sizes 40x0.5,200x0.02,1000x0,40x0.5x1,200x0.02x1] [--repeats R]
                                [--concurrency C] [--live 200x0.02|none] [--json PATH]

Run it from the repository root (the package need not be installed: the script puts the repository
root on ``sys.path`` and on ``PYTHONPATH`` for its child processes). It prints one Markdown table,
``case | showwork | plain Ray Tune | process pool | sequential | ratio | target | met``, medians of
``R`` runs (default 3) measured in this one run on this machine, followed by footnotes, then a second
table, ``case | reports | showwork | plain Ray Tune | ratio | between two trials ... | target | met``: each
case's wall times and their ratio beside the time between two trials of a worker, five reports per
trial against one (issue 35 item 9). With ``--json PATH`` the rows, every run's timeline and the
environment are also written to PATH.

What is measured
----------------
The same trainable (``sleepy.py:train``: ``S / R`` seconds of sleep ``R`` times, a reporter call after
each, a score from its two hyperparameters; a case ``NxS`` has ``R`` = 5 reports, ``NxSxR`` says ``R``)
runs on the same configurations, each way in a fresh Python process timed from just before it is
spawned until it has exited:

- **showwork**: ``showwork.run.run_search(spec, storage, "sqlite:///.../mlflow.db", progress=False)``
  end to end, exactly what ``showwork search`` does: a fresh MLflow SQLite store, a fresh local Ray,
  Ray Tune with ``reuse_actors=True``, a ledger record per trial, a nested MLflow child run per trial
  with every epoch logged, the final replay and ``ray.shutdown``;
- **plain Ray Tune**: what a Ray Tune user runs instead: ``ray.init``, a ``Tuner`` over the same
  configurations (a grid over the trials, no search algorithm or scheduler), ``reuse_actors=True``,
  the same concurrency and 1 CPU per trial, a ``tune.report`` per epoch and one with the result
  (with one report per trial, ``R`` = 1: a single ``tune.report``, the epoch's row with the result);
  no MLflow and no ledger;
- **process pool**: ``concurrent.futures.ProcessPoolExecutor(max_workers=C)`` calling the same
  function with a reporter stub that only keeps the rows;
- **sequential** (the first size only): the same calls one after another in one process.

The columns run interleaved (showwork, Ray Tune, pool, sequential, then again), so that a slow moment
of the machine does not fall on one of them. From each trial's start and end (the ledger's
``started_at``/``finished_at`` for showwork, timestamps around the call otherwise) and the process's
spawn and exit, each run is cut into the time to the first trial (start-up), the trials phase
(first trial started to last finished; ideal ``ceil(N / C) * S``) and the time after the last trial's
end (showwork: Tune's wind-down, ``ray.shutdown``, the MLflow replay and close, the interpreter's exit).
Light wrappers inside the showwork child (``time.time()`` around ``ray.init``, ``RayExecutor.run``,
``Tracker.check_reachable``, the Tracker's per-trial MLflow calls and the Tune callbacks) split its
start-up and teardown and show the driver's MLflow time per trial; they cost microseconds.

Targets: issue 35 item 9 against plain Ray Tune: with one report per trial, wall time <= 1.1x at
200 trials of 0.02 s; at every case with trials longer than 0 s, at most 20 ms between two trials of a
worker (the median, from one trial's end to the next one's start in the same worker). Issue 23 item 15
(wall time <= 1.05x at every size with trials longer than 0 s and five reports per trial; time to the first trial <= 1.05x; last trial's end -> exit <= 1.5x; at trials of
0 s, at most 10 % of showwork's wall time after the last trial), and issue 15 item 8's at the first
size (cold start-up <= 8 s, trials phase <= 1.10x the ideal, total <= 1.0x the sequential loop).
``--quick`` runs 12 trials of 0.5 s and 12 of 0.02 s with one report once, for CI smoke tests.

**Isolation** (issue 23 item 6): every showwork trial runs in a process forked from its warm Ray
worker, so the showwork column includes what that costs. Its own rows measure it directly, in a
fresh process holding what a worker holds (ray, ray.tune, numpy, showwork, the imported family):
the same trial of no time (five reporter calls, its ledger record) run by the worker itself
(``run_trial``, as before issue 23) and in a process forked for it (``TrialSupervisor``, as a
search runs it), at least 20 of each; the per-trial difference is what isolation costs. For
comparison, the design not taken: restoring the six items in the worker after each trial.

**Live table** (issue 26 item 2): the CLI ``showwork search`` on an 80 x 24 pseudo-terminal whose output a
thread reads as a terminal would, with its live table and with ``--no-progress``, ``R`` times each,
interleaved, at ``--live`` (default 200 trials of 0.02 s; ``--quick``: 12 of 0.5 s): the medians of the
wall times, spawn to exit, and their ratio (target: the table costs at most 5 %).

Before measuring, ray, ray.tune and mlflow are imported once in a throwaway process so that the
first measurement does not pay for a cold file cache (Ray itself is not started). Linux or macOS;
the CPU time that other processes used during each run is read from ``/proc`` (Linux only) and
printed, with a warning when it was large enough to inflate the times: on a 2-core machine a
busy neighbour shows up directly in Ray's start-up.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import platform
import pty
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)

SEARCH_NAME = "bench-sleepy"
EPOCHS = 5
SEED = 0
# trials x seconds x reports per trial: issue 23 item 15's cases, then issue 35 item 9's with one report
SIZES = ((40, 0.5, EPOCHS), (200, 0.02, EPOCHS), (1000, 0.0, EPOCHS), (40, 0.5, 1), (200, 0.02, 1))
QUICK_SIZES = ((12, 0.5, EPOCHS), (12, 0.02, 1))
REPEATS = 3
DEFAULT_CONCURRENCY = 2

# Issue 23 item 15, against plain Ray Tune in the same run (medians of REPEATS):
WALL_TARGET = 1.05  # showwork's wall time <= 1.05 x Ray Tune's, at every size with trials longer than 0 s (5 reports)
FIRST_TRIAL_TARGET = 1.05  # time to the first trial <= 1.05 x Ray Tune's
TEARDOWN_TARGET = 1.5  # last trial's end -> exit <= 1.5 x Ray Tune's
AFTER_LAST_TARGET = 0.10  # at trials of 0 s, at most 10 % of the wall time after the last trial
# Issue 15 item 8, at the first size: the cold start-up, the trials phase against the ideal, the total
# against a sequential loop.
STARTUP_TARGET_S = 8.0
TRIALS_TARGET = 1.10
SPEEDUP_TARGET = 1.0
LIVE_SIZE = (200, 0.02)  # issue 26 item 2: `showwork search` with its live table against --no-progress
LIVE_TARGET = 1.05  # the live table must not slow the search: wall time <= 1.05 x --no-progress
ISOLATION_TRIALS = 20  # trials of no time measured in the worker and forked, at least (issue 23 item 6)
# Issue 35 item 9: one report per trial, within 1.1 x Ray Tune at 200 trials of 0.02 s; between two trials of a
# worker at most 20 ms (median) at every case with trials longer than 0 s.
ONE_REPORT_TARGET = 1.10
ONE_REPORT_TARGET_SIZE = (200, 0.02)
BETWEEN_TRIALS_TARGET_S = 0.020
BUSY_OTHER_CPUS = 0.25  # other processes' average CPUs above which a run is flagged as disturbed

TRAINABLE = '''\
"""A trainable that only sleeps: everything else showwork spends on a trial is orchestration."""
import math
import time

EPOCHS = {epochs}
SECONDS = {seconds!r}  # in total, over the epochs


def train(config, *, seed, device, reporter, data):
    score = config["x"] * math.exp(-((math.log10(config["lr"]) + 2.0) ** 2))
    for epoch in range(EPOCHS):
        time.sleep(SECONDS / EPOCHS)
        reporter(epoch=epoch, val_score=score * (epoch + 1) / EPOCHS)
    return {{"val_score": score}}
'''

SPACE = """\
name: {name}
family: sleepy.py:train
metric: {{name: val_score, mode: max}}
num_trials: {trials}
seed: {seed}
resources: {{cpus: 1, gpus: 0}}
max_concurrent: {concurrency}
space:
  x: {{distribution: uniform, low: 0.0, high: 1.0}}
  lr: {{distribution: loguniform, low: 1e-4, high: 1e-1}}
"""


# --- the children ------------------------------------------------------------------------------


class _Calls:
    """Wraps functions and methods with ``time.time()`` stamps: label -> [(start, end), ...]."""

    def __init__(self):
        self.calls: dict[str, list[tuple[float, float]]] = defaultdict(list)
        self.missing: list[str] = []

    def timed(self, function, label: str):
        calls = self.calls[label]

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            start = time.time()
            try:
                return function(*args, **kwargs)
            finally:
                calls.append((start, time.time()))

        return wrapper

    def wrap(self, owner, attribute: str, label: str) -> None:
        original = getattr(owner, attribute, None)
        if original is None:  # renamed in showwork: the breakdown says so, the measurement is unaffected
            self.missing.append(label)
            return
        setattr(owner, attribute, self.timed(original, label))


def _instrument(calls: _Calls, session: dict) -> None:
    """Time the phases of ``run_search`` and the driver's per-trial work (best effort).

    ``session["dir"]`` receives the Ray session directory, whose worker logs tell how many trial
    actors Ray started (:func:`_count_actors`).
    """
    import ray

    import showwork.run.callback
    import showwork.run.driver
    import showwork.store.ledger
    import showwork.tracking.tracker
    import showwork.trials.ray_executor

    calls.wrap(ray, "init", "ray.init")
    calls.wrap(ray, "shutdown", "ray.shutdown")
    calls.wrap(showwork.trials.ray_executor.RayExecutor, "run", "tune.fit")
    fit = showwork.trials.ray_executor.RayExecutor.run

    @functools.wraps(fit)
    def remember_session(self, *args, **kwargs):
        try:
            session["dir"] = ray._private.worker._global_node.get_session_dir_path()
        except Exception:  # private API: the actor count is then "—"
            pass
        return fit(self, *args, **kwargs)

    showwork.trials.ray_executor.RayExecutor.run = remember_session
    calls.wrap(showwork.run.driver, "collect_environment", "collect_environment")  # where the driver calls them
    calls.wrap(showwork.run.driver, "sync_ledger", "sync_ledger")
    for method in ("check_reachable", "start_parent", "finish_parent", "write_trial", "log_trial"):
        calls.wrap(showwork.tracking.tracker.Tracker, method, f"mlflow.{method}")
    calls.wrap(showwork.store.ledger.Ledger, "set_mlflow_run_id", "ledger.set_mlflow_run_id")

    for hook in ("on_trial_start", "on_trial_result", "on_trial_complete", "on_trial_error"):
        calls.wrap(getattr(showwork.run.callback, "ProjectionCallback", None), hook, f"callback.{hook}")


def _child_showwork(task: dict) -> dict:
    entered = time.time()
    calls, session = _Calls(), {}
    from pathlib import Path

    from showwork.run import run_search
    from showwork.space import load_search_spec

    _instrument(calls, session)
    spec = load_search_spec(task["space"])
    called = time.time()
    summary = run_search(spec, Path(task["storage"]), task["tracking_uri"], progress=False)
    return {
        "entered": entered,
        "called": called,
        "returned": time.time(),
        "calls": {label: stamps for label, stamps in calls.calls.items()},
        "not_instrumented": calls.missing,
        "ray_session_dir": session.get("dir"),
        "summary": {"finished": summary.finished, "failed": summary.failed, "timeout": summary.timeout,
                    "elapsed_s": summary.elapsed_s, "best_score": summary.best_score},
    }


_TRAIN = None  # the trainable, loaded once per process


def _load_train(path: str):
    global _TRAIN
    if _TRAIN is None:
        import importlib.util

        spec = importlib.util.spec_from_file_location("bench_sleepy", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _TRAIN = module.train
    return _TRAIN


class _StubReporter:
    """The least a reporter can do: keep the rows."""

    def __init__(self):
        self.history = []

    def __call__(self, epoch=None, **metrics):
        self.history.append({"epoch": epoch, **metrics})


def _plain_trial(path: str, index: int, config: dict, seed: int) -> dict:
    train = _load_train(path)
    start = time.time()
    outcome = train(config, seed=seed, device="cpu", reporter=_StubReporter(), data={})
    return {"index": index, "start": start, "finish": time.time(), "worker": os.getpid(),
            "score": outcome["val_score"]}


def _child_reference(task: dict) -> dict:
    entered = time.time()
    trials = task["trials"]
    if task["kind"] == "sequential":
        done = [_plain_trial(task["trainable"], t["index"], t["config"], t["seed"]) for t in trials]
    else:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=task["concurrency"]) as pool:
            futures = [pool.submit(_plain_trial, task["trainable"], t["index"], t["config"], t["seed"])
                       for t in trials]
            done = [future.result() for future in futures]
    return {"entered": entered, "returned": time.time(), "trials": done}


def _tune_trial(config: dict) -> None:
    """What a Ray Tune user writes around the same trainable: a report to Tune per epoch, the result last; with
    one epoch, a single report (the epoch's row with the result)."""
    from ray import tune

    trial = config["trial"]
    train = _load_train(config["trainable"])
    one = config["reports"] == 1
    rows = []

    def reporter(epoch=None, **metrics):
        if one:
            rows.append({"epoch": epoch, **metrics})
        else:
            tune.report({"epoch": epoch, **metrics})

    start = time.time()
    outcome = train(trial["config"], seed=trial["seed"], device="cpu", reporter=reporter, data={})
    tune.report({**(rows[-1] if rows else {}), "val_score": outcome["val_score"], "index": trial["index"],
                 "start": start, "finish": time.time(), "worker": os.getpid()})


def _child_raytune(task: dict) -> dict:
    """Plain Ray Tune: a local Ray, a ``Tuner`` over the same configurations (a grid over the trials, no
    search algorithm or scheduler), ``reuse_actors=True``, the same concurrency and resources, results in
    a local folder; no MLflow, no ledger."""
    entered = time.time()
    import ray
    from ray import tune

    os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")
    ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
    called = time.time()
    trainable = tune.with_resources(_tune_trial, {"cpu": 1, "gpu": 0})
    tuner = tune.Tuner(
        trainable,
        param_space={"trainable": task["trainable"], "reports": task["reports"], "trial": tune.grid_search(task["trials"])},
        tune_config=tune.TuneConfig(num_samples=1, max_concurrent_trials=task["concurrency"], reuse_actors=True),
        run_config=tune.RunConfig(name="plain", storage_path=os.path.join(os.path.dirname(task["result"]), "ray_results"),
                                  verbose=0),
    )
    grid = tuner.fit()
    done = []
    for result in grid:
        m = result.metrics or {}
        if "start" in m:
            done.append({"index": m["index"], "start": m["start"], "finish": m["finish"], "worker": m["worker"],
                         "score": m["val_score"]})
    returned = time.time()
    ray.shutdown()
    return {"entered": entered, "called": called, "returned": returned, "trials": done}


def _restore_six_items_once() -> None:
    """The design not taken (issue 23 item 6): snapshot, then restore, what a trial must not pass on in its
    process — environment, resource limits, working directory, sys.path, Python's signal handlers, the global
    random states. It cannot raise a lowered hard limit again, nor see signal handlers set in C, threads a
    trial left running, or anything else it changed."""
    import random
    import resource
    import signal

    import numpy as np

    limits = [getattr(resource, name) for name in dir(resource) if name.startswith("RLIMIT_")]
    handled = [s for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP)]
    saved = (dict(os.environ), {lim: resource.getrlimit(lim) for lim in limits}, os.getcwd(), list(sys.path),
             {s: signal.getsignal(s) for s in handled}, random.getstate(), np.random.get_state())
    environment, rlimits, cwd, path, handlers, python_random, numpy_random = saved
    os.environ.clear()
    os.environ.update(environment)
    for lim, value in rlimits.items():
        if resource.getrlimit(lim) != value:
            resource.setrlimit(lim, value)
    os.chdir(cwd)
    sys.path[:] = path
    for number, handler in handlers.items():
        if handler is not None and signal.getsignal(number) is not handler:
            signal.signal(number, handler)
    random.setstate(python_random)
    np.random.set_state(numpy_random)


def _child_isolation(task: dict) -> dict:
    """What isolating a trial costs: the same trial run by the worker itself (run_trial, as before issue 23)
    and in a process forked for it (TrialSupervisor, what a search does), in a process holding what a Ray
    worker holds (ray, ray.tune, numpy, showwork, the imported family); and the restore design, for comparison."""
    import socket
    from pathlib import Path

    import numpy  # noqa: F401 - what a worker of a numpy family holds
    import ray.tune  # noqa: F401 - what a Ray worker holds

    from showwork.trials.execution import EpochReports, SearchContext, WorkerPlace, run_trial
    from showwork.trials.worker import TrialSupervisor, prepare_worker

    try:  # issue 35 item 9: each trial's process forked while the trial before ran, as a search does
        from showwork.trials.worker import TrialProcesses

        processes = TrialProcesses()
    except ImportError:  # the code before it, measured by this benchmark for comparison
        processes = None

    n = task["n"]
    folder = Path(task["trainable"]).parent
    context = SearchContext(name="isolation", storage_dir=task["storage"], space={"x": {"distribution": "uniform",
                            "low": 0.0, "high": 1.0}, "lr": {"distribution": "loguniform", "low": 1e-4, "high": 0.1}},
                            seed=SEED, family=f"{Path(task['trainable']).name}:train", base_dir=str(folder), data={},
                            metric="val_score", mode="max", timeout_s=60.0)
    place = WorkerPlace(node_id=None, hostname=socket.gethostname(), device="cpu", family=context.family,
                        family_folder=folder)
    prepare_worker(context, place)  # what a worker does before its first trial: it imports the family
    forked, in_worker, restore = [], [], []
    for i in range(n):  # first, as a search runs them: the worker itself runs no trial code
        start = time.perf_counter()
        TrialSupervisor(context, i, place, EpochReports(lambda report: None),
                        **({"processes": processes} if processes else {})).run()
        forked.append(time.perf_counter() - start)
    if processes:
        processes.discard()
    for i in range(n):  # then as before issue 23, in the worker, whose caches the trials fill
        start = time.perf_counter()
        run_trial(context, n + i, sink=lambda row, started_at: None, place=place)
        in_worker.append(time.perf_counter() - start)
        start = time.perf_counter()
        _restore_six_items_once()
        restore.append(time.perf_counter() - start)
    rss = int(next(line for line in Path("/proc/self/status").read_text().splitlines()
                   if line.startswith("VmRSS:")).split()[1]) * 1024 if Path("/proc/self/status").exists() else None
    return {"in_worker_s": in_worker, "forked_s": forked, "restore_s": restore, "worker_rss_bytes": rss}


def _child_main(task_path: str) -> None:
    with open(task_path) as f:
        task = json.load(f)
    children = {"showwork": _child_showwork, "raytune": _child_raytune, "isolation": _child_isolation}
    result = children.get(task["kind"], _child_reference)(task)
    with open(task["result"], "w") as f:
        json.dump(result, f)


# --- load of the machine -----------------------------------------------------------------------


class _LoadSampler(threading.Thread):
    """CPU seconds used by this benchmark's process tree and by every other process (from ``/proc``).

    Samples every ``interval`` seconds; a process is ours when this process is among its
    ancestors at the time of the sample. Inactive where ``/proc`` is missing (macOS).
    """

    def __init__(self, interval: float = 1.0):
        super().__init__(daemon=True)
        self.interval = interval
        self.root = os.getpid()
        self.tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self.available = os.path.exists(f"/proc/{self.root}/stat")
        self.ours = self.others = 0.0
        self._previous: dict[int, int] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def _snapshot(self) -> dict[int, tuple[int, int]]:
        out = {}
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    text = f.read().decode("ascii", "replace")
            except OSError:
                continue
            fields = text[text.rfind(")") + 2:].split()
            try:
                out[int(name)] = (int(fields[1]), int(fields[11]) + int(fields[12]))  # ppid, utime + stime
            except (IndexError, ValueError):
                continue
        return out

    def sample(self) -> None:
        if not self.available:
            return
        with self._lock:
            snap = self._snapshot()
            children = defaultdict(list)
            for pid, (ppid, _) in snap.items():
                children[ppid].append(pid)
            ours, stack = set(), [self.root]
            while stack:
                pid = stack.pop()
                if pid not in ours:
                    ours.add(pid)
                    stack.extend(children.get(pid, ()))
            mine = theirs = 0
            for pid, (_, ticks) in snap.items():
                # a process new since the last sample (or a reused pid) used all its CPU time since then
                delta = ticks - self._previous[pid] if pid in self._previous else ticks
                delta = ticks if delta < 0 else delta
                if pid in ours:
                    mine += delta
                else:
                    theirs += delta
            if self._previous:  # the first sample only sets the baseline
                self.ours += mine / self.tick
                self.others += theirs / self.tick
            self._previous = {pid: ticks for pid, (_, ticks) in snap.items()}

    def run(self) -> None:
        while not self._stop.wait(self.interval):
            self.sample()

    def totals(self) -> tuple[float, float, float]:
        """(CPU seconds of our tree, CPU seconds of the others, now) so far."""
        self.sample()
        with self._lock:
            return self.ours, self.others, time.time()

    def stop(self) -> None:
        self._stop.set()


_SAMPLER: _LoadSampler | None = None


# --- running one measurement -------------------------------------------------------------------


def _spawn(kind: str, task: dict, workdir: str, timeout: float) -> dict:
    """Run one child (cwd ``workdir``) and time it from just before the spawn to its exit."""
    task = dict(task, kind=kind, result=os.path.join(workdir, f"result-{kind}.json"))
    task_path = os.path.join(workdir, f"task-{kind}.json")
    with open(task_path, "w") as f:
        json.dump(task, f)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (REPO_ROOT, env.get("PYTHONPATH")) if p)
    env.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")  # as the Makefile does
    log_path = os.path.join(workdir, f"log-{kind}.txt")
    before = _SAMPLER.totals() if _SAMPLER else None
    with open(log_path, "w") as log:
        spawned = time.time()
        try:
            proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", task_path],
                                  env=env, cwd=workdir, stdout=log, stderr=subprocess.STDOUT, timeout=timeout)
            code = proc.returncode
        except subprocess.TimeoutExpired:
            code = "timeout"
        exited = time.time()
    after = _SAMPLER.totals() if _SAMPLER else None
    if code != 0 or not os.path.exists(task["result"]):
        with open(log_path, errors="replace") as f:
            tail = [line for line in f.read().strip().splitlines() if line.strip()][-1:] or [""]
        return {"error": f"child failed (exit {code}): {tail[0][:200]}", "spawned": spawned, "exited": exited}
    with open(task["result"]) as f:
        result = json.load(f)
    result.update(spawned=spawned, exited=exited)
    if before and after and after[2] > before[2]:
        result["cpu_seconds_ours"] = after[0] - before[0]
        result["other_cpus_busy"] = (after[1] - before[1]) / (after[2] - before[2])
    return result


def _ledger_trials(storage: str) -> list[dict]:
    from datetime import datetime
    from pathlib import Path

    from showwork.store import Ledger

    out = []
    for record in Ledger(Path(storage), SEARCH_NAME).records():
        out.append({"index": record.index, "status": record.status, "worker": record.pid,
                    "start": datetime.fromisoformat(record.started_at).timestamp(),
                    "finish": datetime.fromisoformat(record.finished_at).timestamp(),
                    "runtime_s": record.runtime_s, "attempts": record.attempts, "score": record.score})
    return out


def _count_actors(session_dir: str | None) -> dict | None:
    """Trial actors Ray started (``Creating actor``) and finished creating, from the session's worker logs."""
    if not session_dir or not os.path.isdir(os.path.join(session_dir, "logs")):
        return None
    started = ready = 0
    logs = os.path.join(session_dir, "logs")
    for name in os.listdir(logs):
        if not (name.startswith("python-core-worker-") and name.endswith(".log")):
            continue
        try:
            with open(os.path.join(logs, name), errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        started += "Creating actor" in text
        ready += "Actor creation task finished" in text
    return {"started": started, "ready": ready}


def _timeline(result: dict, trials: list[dict], n: int, seconds: float, concurrency: int) -> dict:
    """Start-up, trials, teardown, overheads per trial, and the per-worker gaps of one run."""
    total = result["exited"] - result["spawned"]
    first = min(t["start"] for t in trials)
    last = max(t["finish"] for t in trials)
    ideal = math.ceil(n / concurrency) * seconds
    startup = first - result["spawned"]
    phase = last - first
    teardown = result["exited"] - last
    inside = [(t["finish"] - t["start"]) - seconds for t in trials]
    by_worker = defaultdict(list)
    for t in trials:
        by_worker[t["worker"]].append(t)
    gaps = []
    for runs in by_worker.values():
        runs.sort(key=lambda t: t["start"])
        gaps += [b["start"] - a["finish"] for a, b in zip(runs, runs[1:])]
    return {
        "n": n, "trial_seconds": seconds, "concurrency": concurrency, "ideal_s": ideal,
        "total_s": total, "startup_s": startup, "trials_s": phase, "teardown_s": teardown,
        "overhead_per_trial_s": (total - startup - ideal) / n,
        "overhead_with_startup_per_trial_s": (total - ideal) / n,
        "steady_overhead_per_trial_s": (phase - ideal) / n,
        "inside_overhead_median_s": statistics.median(inside),
        "inside_overhead_mean_s": statistics.mean(inside),
        "gap_median_s": statistics.median(gaps) if gaps else None,
        "gap_mean_s": statistics.mean(gaps) if gaps else None,
        "gap_max_s": max(gaps) if gaps else None,
        "workers": len(by_worker),
        "mean_running": sum(t["finish"] - t["start"] for t in trials) / phase if phase > 0 else None,
        "completed": len(trials),
        "other_cpus_busy": result.get("other_cpus_busy"),
        "cpu_seconds_ours": result.get("cpu_seconds_ours"),
    }


def _breakdown(result: dict, trials: list[dict], n: int) -> dict:
    """Where showwork's start-up, teardown and per-trial driver time go (from the wrappers)."""
    calls = result.get("calls", {})
    spawned, first = result["spawned"], min(t["start"] for t in trials)
    last = max(t["finish"] for t in trials)

    def span(label, which=0):
        stamps = calls.get(label) or []
        return stamps[which] if len(stamps) > which else None

    out: dict = {"not_instrumented": result.get("not_instrumented", [])}
    out["python_and_imports_s"] = result["called"] - spawned
    reach, init, fit, shutdown = span("mlflow.check_reachable"), span("ray.init"), span("tune.fit"), span("ray.shutdown")
    if reach:
        out["mlflow_store_s"] = reach[1] - reach[0]
    if init:
        out["ray_init_s"] = init[1] - init[0]
    if reach and init:  # MLflow is opened in a thread while ray.init runs: the two spans overlap
        out["checks_before_ray_s"] = min(reach[0], init[0]) - result["called"]
        out["ray_and_mlflow_s"] = max(reach[1], init[1]) - min(reach[0], init[0])
        if fit:
            out["ledger_and_parent_run_s"] = fit[0] - max(reach[1], init[1])
    if fit:
        out["tune_setup_s"] = first - fit[0]
        out["tune_winddown_s"] = fit[1] - last
    if shutdown:
        out["ray_shutdown_s"] = shutdown[1] - shutdown[0]
    if shutdown or fit:
        out["replay_and_close_s"] = result["returned"] - (shutdown or fit)[1]
    out["interpreter_exit_s"] = result["exited"] - result["returned"]
    starts = calls.get("callback.on_trial_start") or []
    if starts:
        out["first_callback_to_first_trial_s"] = first - min(s for s, _ in starts)
    per_call = {}
    for label in ("mlflow.write_trial", "mlflow.log_trial", "ledger.set_mlflow_run_id",
                  "callback.on_trial_start", "callback.on_trial_result", "callback.on_trial_complete"):
        durations = [end - start for start, end in calls.get(label) or []]
        if durations:
            per_call[label] = {"calls": len(durations), "total_s": sum(durations),
                               "median_s": statistics.median(durations), "max_s": max(durations)}
    out["per_call"] = per_call
    callbacks = sum(v["total_s"] for k, v in per_call.items() if k.startswith("callback."))
    mlflow = sum(v["total_s"] for k, v in per_call.items() if k in ("mlflow.write_trial", "mlflow.log_trial"))
    out["driver_callbacks_per_trial_s"] = callbacks / n if per_call else None
    out["driver_mlflow_per_trial_s"] = mlflow / n if per_call else None
    return out


def measure(n: int, seconds: float, concurrency: int, kinds: tuple[str, ...], repeats: int, workdir: str,
            progress, reports: int = EPOCHS) -> dict:
    """Each of ``kinds`` run ``repeats`` times on N trials of ``seconds`` each (kinds interleaved, so that
    a slow moment of the machine does not fall on one kind); per kind, every run's timeline and their
    medians (``median``), and the run whose total is the median (``typical``: its breakdown and timeline)."""
    from showwork.sampling import nest, trial_config, trial_seed
    from showwork.space import load_search_spec

    os.makedirs(workdir)
    trainable = os.path.join(workdir, "sleepy.py")
    with open(trainable, "w") as f:
        f.write(TRAINABLE.format(epochs=reports, seconds=float(seconds)))
    space = os.path.join(workdir, "space.yaml")
    with open(space, "w") as f:
        f.write(SPACE.format(name=SEARCH_NAME, trials=n, seed=SEED, concurrency=concurrency))
    spec = load_search_spec(space)
    trials = [{"index": i, "config": nest(trial_config(spec.space, spec.seed, i)), "seed": trial_seed(spec.seed, i)}
              for i in range(n)]
    timeout = 600.0 + 5.0 * n * seconds
    out = {"n": n, "trial_seconds": seconds, "reports": reports, "concurrency": concurrency,
           "runs": {kind: [] for kind in kinds}}
    label = f"{n} trials x {seconds:g} s, {reports} report{'s' if reports != 1 else ''} each"
    for repeat in range(repeats):
        for kind in kinds:
            folder = os.path.join(workdir, f"{kind}-{repeat}")
            os.makedirs(folder)
            storage = os.path.join(folder, "runs")
            task = {"trainable": trainable, "trials": trials, "concurrency": concurrency, "space": space, "reports": reports,
                    "storage": storage, "tracking_uri": f"sqlite:///{os.path.join(folder, 'mlflow.db')}"}
            progress(f"{kind}: {label}, run {repeat + 1} of {repeats}"
                     + (f", concurrency {concurrency}" if kind != "sequential" else ""))
            result = _spawn(kind, task, folder, timeout)
            if "error" in result:
                out["runs"][kind].append({"error": result["error"]})
                continue
            ran = _ledger_trials(storage) if kind == "showwork" else result["trials"]
            if len(ran) != n:
                out["runs"][kind].append({"error": f"{len(ran)} of {n} trials recorded"})
                continue
            timeline = _timeline(result, ran, n, seconds, 1 if kind == "sequential" else concurrency)
            if kind == "showwork":
                timeline["breakdown"] = _breakdown(result, ran, n)
                timeline["actors"] = _count_actors(result.get("ray_session_dir"))
                timeline["statuses"] = {s: sum(t["status"] == s for t in ran) for s in ("finished", "failed", "timeout")}
            timeline["timeline"] = [{k: t[k] for k in ("index", "worker", "start", "finish")} for t in ran]
            out["runs"][kind].append(timeline)
    out["median"], out["typical"] = {}, {}
    for kind, runs in out["runs"].items():
        good = [r for r in runs if "error" not in r]
        if len(good) < len(runs) or not good:
            out["median"][kind] = {"error": next(r["error"] for r in runs if "error" in r)}
            continue
        keys = [k for k, v in good[0].items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
        out["median"][kind] = {k: statistics.median(r[k] for r in good if r.get(k) is not None) for k in keys
                               if any(r.get(k) is not None for r in good)}
        out["typical"][kind] = sorted(good, key=lambda r: r["total_s"])[len(good) // 2]
    return out


def _search_on_a_terminal(space: str, workdir: str, live: bool, timeout: float) -> dict:
    """``showwork search SPACE`` (a fresh ledger and MLflow store) on an 80 x 24 pseudo-terminal, its output
    read as a terminal would; ``live`` False adds ``--no-progress``. Timed from just before the spawn to its exit."""
    import fcntl
    import struct
    import termios

    storage = tempfile.mkdtemp(prefix="live-" if live else "plain-", dir=workdir)
    command = [sys.executable, "-m", "showwork", "search", space, "--storage", os.path.join(storage, "runs"),
               "--tracking-uri", f"sqlite:///{os.path.join(storage, 'mlflow.db')}"] + ([] if live else ["--no-progress"])
    env = dict(os.environ, TERM="xterm-256color", MLFLOW_DISABLE_TELEMETRY="true")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (REPO_ROOT, env.get("PYTHONPATH")) if p)
    for name in ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR"):
        env.pop(name, None)
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    written = [0]

    def read() -> None:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # every process holding the terminal has ended
                return
            if not chunk:
                return
            written[0] += len(chunk)

    reader = threading.Thread(target=read, daemon=True)
    spawned = time.time()
    proc = subprocess.Popen(command, cwd=os.path.dirname(space), env=env, stdin=slave, stdout=slave, stderr=slave,
                            start_new_session=True)
    os.close(slave)
    reader.start()
    try:
        code = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = "timeout"
    exited = time.time()
    reader.join(timeout=10)
    os.close(master)
    if code != 0:
        return {"error": f"showwork search failed (exit {code})"}
    return {"total_s": exited - spawned, "bytes": written[0]}


def measure_live(n: int, seconds: float, concurrency: int, repeats: int, workdir: str, progress) -> dict:
    """`showwork search` on a pseudo-terminal with its live table and with ``--no-progress``, ``repeats`` times
    each, interleaved; the medians of the wall times and their ratio (issue 26 item 2)."""
    os.makedirs(workdir)
    with open(os.path.join(workdir, "sleepy.py"), "w") as f:
        f.write(TRAINABLE.format(epochs=EPOCHS, seconds=float(seconds)))
    space = os.path.join(workdir, "space.yaml")
    with open(space, "w") as f:
        f.write(SPACE.format(name=SEARCH_NAME, trials=n, seed=SEED, concurrency=concurrency))
    runs: dict[str, list[dict]] = {"live": [], "plain": []}
    for repeat in range(repeats):
        for kind in runs:
            progress(f"live table: {n} trials x {seconds:g} s, {'live table' if kind == 'live' else '--no-progress'}"
                     f" on a terminal, run {repeat + 1}/{repeats}")
            runs[kind].append(_search_on_a_terminal(space, workdir, kind == "live", 600.0 + 5.0 * n * seconds))
    medians = {}
    for kind, done in runs.items():
        ok = [r for r in done if _ok(r)]
        medians[kind] = ({"total_s": statistics.median(r["total_s"] for r in ok),
                          "bytes": statistics.median(r["bytes"] for r in ok)}
                         if len(ok) == len(done) else next(r for r in done if not _ok(r)))
    return {"n": n, "trial_seconds": seconds, "runs": runs, "median": medians}


def measure_isolation(n: int, workdir: str, progress) -> dict:
    """What isolating a trial in a process of its own costs, per trial (:func:`_child_isolation`)."""
    os.makedirs(workdir)
    trainable = os.path.join(workdir, "sleepy.py")
    with open(trainable, "w") as f:
        f.write(TRAINABLE.format(epochs=EPOCHS, seconds=0.0))
    progress(f"isolation: {n} trials of no time, in the worker and in a process forked for each")
    result = _spawn("isolation", {"trainable": trainable, "n": n, "storage": os.path.join(workdir, "runs")}, workdir,
                    300.0 + n)
    if "error" in result:
        return result
    costs = sorted(f - w for f, w in zip(result["forked_s"], result["in_worker_s"]))

    def summary(values):
        values = sorted(values)
        return {"median_s": statistics.median(values), "p90_s": values[int(0.9 * (len(values) - 1))]}

    return {"n": n, "cost": summary(costs), "forked": summary(result["forked_s"]),
            "in_worker": summary(result["in_worker_s"]), "restore": summary(result["restore_s"]),
            "worker_rss_bytes": result.get("worker_rss_bytes")}


def _warm_imports(progress) -> float:
    """Import ray, ray.tune and mlflow once in a throwaway process (file cache), without starting Ray."""
    progress("warming the file cache (import ray, ray.tune, mlflow; Ray is not started)")
    start = time.time()
    subprocess.run([sys.executable, "-c", "import ray, ray.tune, mlflow.tracking"], capture_output=True,
                   env=dict(os.environ, MLFLOW_DISABLE_TELEMETRY="true"))
    return time.time() - start


# --- formatting --------------------------------------------------------------------------------


def fmt_s(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if abs(seconds) < 1.0:
        return f"{seconds * 1e3:.0f} ms"
    return f"{seconds:.3g} s" if abs(seconds) < 100 else f"{seconds:.0f} s"


def fmt_ratio(x: float | None) -> str:
    if x is None:
        return "—"
    return f"{x:,.0f}x" if x >= 100 else f"{x:.3g}x"


def _met(ok: bool | None) -> str:
    return "—" if ok is None else ("yes" if ok else "NO")


def _ok(r) -> bool:
    return isinstance(r, dict) and "error" not in r


def _cell(r, key) -> str:
    if not isinstance(r, dict):
        return "not run"
    if "error" in r:
        return r["error"]
    return fmt_s(r.get(key))


# --- the report --------------------------------------------------------------------------------


def run(sizes: tuple[tuple[int, float], ...], concurrency: int, repeats: int, progress,
        live: tuple[int, float] | None = LIVE_SIZE) -> dict:
    global _SAMPLER
    _SAMPLER = _LoadSampler()
    if _SAMPLER.available:
        _SAMPLER.sample()
        _SAMPLER.start()
    try:
        with tempfile.TemporaryDirectory(prefix="showwork-bench-search-") as workdir:
            return _run(sizes, concurrency, repeats, progress, workdir, live)
    finally:
        _SAMPLER.stop()


def _ratio(a: dict, b: dict, key: str) -> float | None:
    return a[key] / b[key] if _ok(a) and _ok(b) and a.get(key) is not None and b.get(key) else None


def _after_last_share(r: dict) -> float | None:
    return r["teardown_s"] / r["total_s"] if _ok(r) and r.get("total_s") else None


def _run(sizes, concurrency, repeats, progress, workdir, live) -> dict:
    load_before = os.getloadavg() if hasattr(os, "getloadavg") else None
    started = time.time()
    warm = _warm_imports(progress)
    measured = []
    for position, (n, seconds, reports) in enumerate(sizes):
        kinds = ("showwork", "raytune", "pool") + (("sequential",) if position == 0 else ())
        measured.append(measure(n, seconds, concurrency, kinds, repeats, os.path.join(workdir, f"size-{position}"), progress,
                                reports))
    isolation = measure_isolation(max(sizes[0][0], ISOLATION_TRIALS), os.path.join(workdir, "isolation"), progress)
    live_view = measure_live(*live, concurrency, repeats, os.path.join(workdir, "live"), progress) if live else None

    rows: list[dict] = []

    def row(case, m, key, ratio, target, met, fmt=fmt_s, **raw):
        cells = {}
        for kind in ("showwork", "raytune", "pool", "sequential"):
            r = m["median"].get(kind)
            cells[kind] = "—" if r is None else (r["error"] if "error" in r else fmt(r.get(key)))
        rows.append({"case": case, **cells, "ratio": ratio, "target": target, "met": met, "raw": raw})

    def share(x):
        return "—" if x is None else f"{100 * x:.1f} %"

    for position, m in enumerate(measured):
        med = m["median"]
        sw, rt, seq = med.get("showwork"), med.get("raytune"), med.get("sequential")
        n, seconds, reports = m["n"], m["trial_seconds"], m["reports"]
        tag = _tag(n, seconds, reports)
        wall = _ratio(sw, rt, "total_s")
        wall_target = _wall_target(n, seconds, reports)  # item 15: at 40 x 0.5 s and 200 x 0.02 s; issue 35 item 9
        row(f"**{tag}: wall time, process spawned -> exited**", m, "total_s",
            f"showwork {fmt_ratio(wall)} Ray Tune", f"<= {wall_target:g}x Ray Tune" if wall_target else "—",
            _met(None if wall is None or not wall_target else wall <= wall_target), n=n, seconds=seconds, reports=reports,
            wall_vs_raytune=wall)
        first = _ratio(sw, rt, "startup_s")
        row(f"**{tag}: time to the first trial, spawned -> first trial running**", m, "startup_s",
            f"showwork {fmt_ratio(first)} Ray Tune", f"<= {FIRST_TRIAL_TARGET:g}x Ray Tune",
            _met(None if first is None else first <= FIRST_TRIAL_TARGET), first_trial_vs_raytune=first)
        tail = _ratio(sw, rt, "teardown_s")
        row(f"**{tag}: last trial's end -> exit**" + (f" ({_teardown_split(m['typical']['showwork']['breakdown'])})"
                                                     if "showwork" in m["typical"] else ""), m, "teardown_s",
            f"showwork {fmt_ratio(tail)} Ray Tune", f"<= {TEARDOWN_TARGET:g}x Ray Tune",
            _met(None if tail is None else tail <= TEARDOWN_TARGET), teardown_vs_raytune=tail)
        after = _after_last_share(sw) if _ok(sw) else None
        after_target = seconds == 0
        rows.append({"case": f"{'**' if after_target else ''}{tag}: share of the wall time after the last trial's end"
                             f"{'**' if after_target else ''}",
                     **{kind: share(_after_last_share(med[kind])) if _ok(med.get(kind)) else "—"
                        for kind in ("showwork", "raytune", "pool", "sequential")},
                     "ratio": "—", "target": f"showwork <= {100 * AFTER_LAST_TARGET:g} %" if after_target else "—",
                     "met": _met(None if after is None or not after_target else after <= AFTER_LAST_TARGET),
                     "raw": {"after_last_share": after}})
        ideal = math.ceil(n / concurrency) * seconds
        phase = _ratio(sw, rt, "trials_s")
        row(f"{tag}: trials, first started -> last finished (ideal ceil(N/C) x S = {fmt_s(ideal)})", m, "trials_s",
            f"showwork {fmt_ratio(phase)} Ray Tune", "—", "—")
        row(f"{tag}: overhead per trial, (total - ideal) / N", m, "overhead_with_startup_per_trial_s",
            f"showwork {fmt_ratio(_ratio(sw, rt, 'overhead_with_startup_per_trial_s'))} Ray Tune", "—", "—")
        row(f"{tag}: between two trials of one worker, median", m, "gap_median_s", "—", "—", "—")
        row(f"{tag}: trials running at once, time-average over the trials phase", m, "mean_running", "—",
            f"— (ideal {concurrency})", "—", fmt=lambda x: "—" if x is None else f"{x:.2f}")
        typical = m["typical"].get("showwork")
        if typical and typical.get("breakdown", {}).get("per_call"):
            bd = typical["breakdown"]
            pc = bd["per_call"]
            parts = [f"{name} {pc[label]['calls']} x {fmt_s(pc[label]['median_s'])}"
                     for label, name in (("mlflow.write_trial", "write_trial"), ("mlflow.log_trial", "log_trial (replay)"))
                     if label in pc]
            rows.append({"case": f"{tag}: showwork's driver time in its Tune callbacks per trial (MLflow: {'; '.join(parts)})",
                         "showwork": f"{fmt_s(bd['driver_callbacks_per_trial_s'])} (MLflow {fmt_s(bd['driver_mlflow_per_trial_s'])})",
                         "raytune": "—", "pool": "—", "sequential": "—", "ratio": "—", "target": "—", "met": "—",
                         "raw": {"per_call": pc}})
        if position == 0 and _ok(seq):  # issue 15 item 8's targets, at the first size
            split = _startup_split(typical["breakdown"]) if typical else ""
            row(f"**{tag}: start-up, cold** ({split})" if split else f"**{tag}: start-up, cold**", m, "startup_s", "—",
                f"showwork <= {STARTUP_TARGET_S:g} s", _met(sw["startup_s"] <= STARTUP_TARGET_S if _ok(sw) else None))
            vs_ideal = sw["trials_s"] / ideal if _ok(sw) and ideal else None
            row(f"**{tag}: trials phase against the ideal**", m, "trials_s", f"showwork {fmt_ratio(vs_ideal)} ideal",
                f"showwork <= {TRIALS_TARGET:g}x ideal", _met(None if vs_ideal is None else vs_ideal <= TRIALS_TARGET))
            vs_seq = _ratio(sw, seq, "total_s")
            row(f"**{tag}: total against a sequential loop**", m, "total_s", f"showwork {fmt_ratio(vs_seq)} sequential",
                f"showwork <= {SPEEDUP_TARGET:g}x sequential", _met(None if vs_seq is None else vs_seq <= SPEEDUP_TARGET))

    notes = [
        f"Medians of {repeats} runs per column, the columns interleaved run by run; each run is one fresh process timed "
        "from just before its spawn to its exit. showwork: run_search with a fresh SQLite MLflow store and a fresh local "
        "Ray (what `showwork search` does: ledger, MLflow parent and child runs, every epoch logged). Ray Tune: a plain "
        f"Tuner over the same configurations (a grid over the trials), reuse_actors=True, max_concurrent_trials={concurrency}, "
        "1 CPU per trial, a tune.report per epoch and one with the result, no MLflow and no ledger: what a Ray Tune user "
        f"runs. Process pool: ProcessPoolExecutor({concurrency}) calling the same function with a reporter that keeps "
        f"the rows. Sequential (first size only): the same calls in one process. The trainable sleeps S/R R times "
        f"with a reporter call after each: R = {EPOCHS} unless the case says \"1 report\" (then plain Ray Tune makes "
        "one tune.report per trial, the epoch's row with the result).",
        f"Targets (issue 23 item 15): wall time <= {WALL_TARGET:g}x Ray Tune's at every size with S > 0 (issue 35 item 9: "
        f"<= {ONE_REPORT_TARGET:g}x with one report per trial at {ONE_REPORT_TARGET_SIZE[0]} x {ONE_REPORT_TARGET_SIZE[1]:g} s, "
        "no target at other one-report cases); time to the first "
        f"trial <= {FIRST_TRIAL_TARGET:g}x and last trial's end -> exit <= {TEARDOWN_TARGET:g}x Ray Tune's; at S = 0, at "
        f"most {100 * AFTER_LAST_TARGET:g} % of showwork's wall time after the last trial. At the first size the targets "
        f"of issue 15 item 8 as well: start-up <= {STARTUP_TARGET_S:g} s (cold), trials phase <= {TRIALS_TARGET:g}x the "
        f"ideal ceil(N/C) x S, total <= {SPEEDUP_TARGET:g}x a sequential loop.",
    ]

    # ---- isolation (issue 23 item 6) ------------------------------------------------------------
    def plain_row(case, showwork, ratio="—", **raw):
        rows.append({"case": case, "showwork": showwork, "raytune": "—", "pool": "—", "sequential": "—",
                     "ratio": ratio, "target": "—", "met": "—", "raw": raw})

    if "error" in isolation:
        plain_row("isolation per trial", isolation["error"])
    else:
        cost, forked, inside, restore = (isolation[k] for k in ("cost", "forked", "in_worker", "restore"))
        rss = isolation.get("worker_rss_bytes")
        plain_row(f"isolation per trial: the same trial ({EPOCHS} reporter calls, no sleep; {isolation['n']} of each) in a "
                  "process forked from the warm worker, as a search runs it, minus in the worker itself, as before issue "
                  f"23; median (p90){f', worker of {rss / 2**20:.0f} MiB' if rss else ''}",
                  f"{fmt_s(cost['median_s'])} ({fmt_s(cost['p90_s'])})",
                  f"forked {fmt_s(forked['median_s'])}, in the worker {fmt_s(inside['median_s'])} per trial",
                  isolation=isolation)
        plain_row("the design not taken: restoring environment, limits, folder, sys.path, Python's signal handlers and "
                  "random states in the worker after each trial, median (p90)",
                  f"{fmt_s(restore['median_s'])} ({fmt_s(restore['p90_s'])})")
        notes.append(
            "Isolation: each trial runs in a process forked from its warm Ray worker (showwork/isolation.py), so nothing a "
            "trial changes in its process reaches the next trial, and the worker can end a trial that is stopped or holds "
            "its GIL, and stays warm. Restoring the items in the worker would cost less per trial but cannot raise a "
            "lowered hard resource limit, see signal handlers set in C, or stop threads a trial left running, and a "
            "timed-out trial would still cost the worker (and the next trial's import). The showwork columns above "
            "include the isolation; what a trainable caches in its process during a trial (a dataset it loads in train) "
            "is its trial's alone."
        )
    if live_view is not None:  # issue 26 item 2
        shown, plain = live_view["median"]["live"], live_view["median"]["plain"]
        slower = _ratio(shown, plain, "total_s")
        plain_row(f"**{live_view['n']} x {live_view['trial_seconds']:g} s: `showwork search` on a terminal (80 x 24 "
                  "pseudo-terminal), wall time with the live table vs --no-progress**",
                  f"{_cell(shown, 'total_s')} vs {_cell(plain, 'total_s')}"
                  + (f" ({shown['bytes'] / 1024:.0f} KiB drawn)" if _ok(shown) else ""),
                  f"live {fmt_ratio(slower)} --no-progress", live=live_view, live_vs_plain=slower)
        rows[-1].update(target=f"<= {LIVE_TARGET:g}x --no-progress",
                        met=_met(None if slower is None else slower <= LIVE_TARGET))
        notes.append("Live table: the CLI `showwork search` (a fresh ledger and SQLite MLflow store each run) on an "
                     "80 x 24 pseudo-terminal whose output a thread reads, with the live table (rich, at most "
                     "4 redraws a second) and with --no-progress, interleaved; wall time from spawn to exit.")
    cpus = os.cpu_count() or 1
    if cpus < concurrency:
        notes.append(f"WARNING: {cpus} CPU(s) < concurrency {concurrency}: Ray cannot run {concurrency} trials of 1 CPU at once.")
    disturbed = []
    for m in measured:
        for kind, runs in m["runs"].items():
            for r in runs:
                if _ok(r) and r.get("other_cpus_busy") is not None:
                    disturbed.append((r["other_cpus_busy"], f"{kind} {m['n']} x {m['trial_seconds']:g} s"))
    if disturbed:
        worst = max(disturbed)
        busy = sorted({label for x, label in disturbed if x > BUSY_OTHER_CPUS})
        notes.append(
            (f"WARNING: other processes kept more than {BUSY_OTHER_CPUS:g} CPUs busy during some runs ({', '.join(busy)});"
             " those times are inflated. " if busy else "")
            + f"Most CPUs other processes kept busy during one run: {worst[0]:.2f} of {cpus} ({worst[1]})."
        )
    after = os.getloadavg() if hasattr(os, "getloadavg") else None
    from importlib import metadata

    def version(name):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    environment = {
        "python": platform.python_version(), "ray": version("ray"), "mlflow": version("mlflow"),
        "cpus": cpus, "machine": platform.platform(), "load_average_before": load_before,
        "load_average_after": after, "warm_imports_s": warm, "total_seconds": time.time() - started,
        "sizes": [list(size) for size in sizes], "concurrency": concurrency, "repeats": repeats, "epochs": EPOCHS,
    }
    return {"environment": environment, "rows": rows, "footnotes": notes, "measurements": measured,
            "isolation": isolation, "live": live_view, "comparison": _comparison(measured)}


def _tag(n: int, seconds: float, reports: int) -> str:
    """``200 x 0.02 s`` (five reports per trial, the cases of issue 23) or ``200 x 0.02 s, 1 report``."""
    return f"{n} x {seconds:g} s" + ("" if reports == EPOCHS else f", {reports} report{'s' if reports != 1 else ''}")


def _wall_target(n: int, seconds: float, reports: int) -> float | None:
    """The wall time's target against Ray Tune: issue 23 item 15's at five reports, issue 35 item 9's at one."""
    if seconds <= 0:
        return None
    if reports == EPOCHS:
        return WALL_TARGET
    return ONE_REPORT_TARGET if reports == 1 and (n, seconds) == ONE_REPORT_TARGET_SIZE else None


def _comparison(measured: list[dict]) -> list[dict]:
    """Per case: the wall times and their ratio, and the time between two trials of a worker (issue 35 item 9)."""
    out = []
    for m in measured:
        sw, rt = m["median"].get("showwork"), m["median"].get("raytune")
        wall_target = _wall_target(m["n"], m["trial_seconds"], m["reports"])
        wall = _ratio(sw, rt, "total_s")
        gap = sw.get("gap_median_s") if _ok(sw) else None
        between_target = m["trial_seconds"] > 0
        checks = [wall <= wall_target if wall is not None and wall_target else None,
                  gap <= BETWEEN_TRIALS_TARGET_S if gap is not None and between_target else None]
        out.append({
            "case": f"{m['n']} x {m['trial_seconds']:g} s", "reports": m["reports"],
            "showwork_s": sw.get("total_s") if _ok(sw) else None, "raytune_s": rt.get("total_s") if _ok(rt) else None,
            "wall_vs_raytune": wall, "between_trials_showwork_s": gap,
            "between_trials_raytune_s": rt.get("gap_median_s") if _ok(rt) else None,
            "target": "; ".join(([f"<= {wall_target:g}x Ray Tune"] if wall_target else [])
                                + ([f"between <= {fmt_s(BETWEEN_TRIALS_TARGET_S)}"] if between_target else [])) or "—",
            "met": _met(None if all(c is None for c in checks) else all(c for c in checks if c is not None)),
        })
    return out


def _startup_split(bd: dict) -> str:
    parts = []
    overlapped = (f" (ray.init {fmt_s(bd['ray_init_s'])}, MLflow import + store {fmt_s(bd['mlflow_store_s'])})"
                  if "ray_init_s" in bd and "mlflow_store_s" in bd else "")
    for key, name in (("python_and_imports_s", "Python + imports"), ("checks_before_ray_s", "checks before Ray"),
                      ("ray_and_mlflow_s", "ray.init with MLflow opened meanwhile"),
                      ("ledger_and_parent_run_s", "environment + ledger + parent run"),
                      ("tune_setup_s", "Tune set-up + trial actors")):
        if key in bd:
            parts.append(f"{name} {fmt_s(bd[key])}" + (overlapped if key == "ray_and_mlflow_s" else ""))
    return "showwork: " + ", ".join(parts) if parts else ""


def _teardown_split(bd: dict) -> str:
    parts = []
    for key, name in (("tune_winddown_s", "Tune wind-down"), ("ray_shutdown_s", "ray.shutdown"),
                      ("replay_and_close_s", "MLflow replay + close"), ("interpreter_exit_s", "interpreter exit")):
        if key in bd:
            parts.append(f"{name} {fmt_s(bd[key])}")
    return "showwork: " + ", ".join(parts) if parts else ""


def markdown(report: dict) -> str:
    env = report["environment"]
    load = env["load_average_before"]
    c = env["concurrency"]
    header = (
        f"showwork search orchestration — Ray {env['ray']}, MLflow {env['mlflow']}, Python {env['python']}, "
        f"{env['cpus']} CPUs, concurrency {c}, medians of {env['repeats']}"
        + (f", load average at start {load[0]:.2f}" if load else "")
    )
    lines = [header, "",
             f"| case | showwork (Ray Tune + MLflow + ledger) | plain Ray Tune | process pool ({c} workers) | sequential "
             "| ratio | target | met |",
             "|---|---|---|---|---|---|---|---|"]
    for r in report["rows"]:
        cells = [r["case"], r["showwork"], r["raytune"], r["pool"], r["sequential"], r["ratio"], r["target"], r["met"]]
        lines.append("| " + " | ".join(str(x).replace("|", "\\|") for x in cells) + " |")
    lines.append("")
    lines += report["footnotes"]
    after = env["load_average_after"]
    lines.append(f"Total benchmark time {env['total_seconds']:.0f} s" + (f"; load average at end {after[0]:.2f}." if after else "."))
    lines += ["", "Five reports per trial against one (issue 35 item 9): wall times, medians, spawned -> exited; between two "
              "trials of a worker, the median from one trial's end to the next one's start in the same worker.", "",
              "| case | reports per trial | showwork | plain Ray Tune | ratio | between two trials of a worker: showwork "
              "/ Ray Tune | target | met |", "|---|---|---|---|---|---|---|---|"]
    for r in report.get("comparison", []):
        cells = [r["case"], r["reports"], fmt_s(r["showwork_s"]), fmt_s(r["raytune_s"]),
                 f"showwork {fmt_ratio(r['wall_vs_raytune'])} Ray Tune",
                 f"{fmt_s(r['between_trials_showwork_s'])} / {fmt_s(r['between_trials_raytune_s'])}", r["target"], r["met"]]
        lines.append("| " + " | ".join(str(x) for x in cells) + " |")
    return "\n".join(lines)


def _sizes(text: str) -> tuple[tuple[int, float, int], ...]:
    """``40x0.5,200x0.02x1`` -> ((40, 0.5, 5), (200, 0.02, 1)): trials x seconds [x reports per trial, default 5]."""
    sizes = []
    for part in text.split(","):
        fields = part.strip().split("x")
        if len(fields) not in (2, 3):
            raise ValueError(text)
        sizes.append((int(fields[0]), float(fields[1]), int(fields[2]) if len(fields) == 3 else EPOCHS))
    if not sizes or any(n < 1 or seconds < 0 or reports < 1 for n, seconds, reports in sizes):
        raise ValueError(text)
    return tuple(sizes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--sizes", default=",".join(f"{n}x{s:g}" + ("" if r == EPOCHS else f"x{r}") for n, s, r in SIZES),
                        metavar="NxS[xR],...",
                        help=f"trials x seconds per trial [x reports per trial, default {EPOCHS}] of each case (default"
                             " %(default)s; the first also runs sequentially)")
    parser.add_argument("--repeats", type=int, default=None, metavar="R",
                        help=f"runs per column, the medians reported (default {REPEATS}, 1 with --quick)")
    parser.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY, metavar="C",
                        help=f"trials at once: max_concurrent, Ray Tune's max_concurrent_trials, pool workers (default {DEFAULT_CONCURRENCY})")
    parser.add_argument("--quick", action="store_true",
                        help=f"{QUICK_SIZES[0][0]} trials of {QUICK_SIZES[0][1]:g} s, {QUICK_SIZES[1][0]} of "
                             f"{QUICK_SIZES[1][1]:g} s with one report, one run (CI smoke)")
    parser.add_argument("--live", default=None, metavar="NxS",
                        help=f"the live table against --no-progress on a terminal at N trials of S s (default "
                             f"{LIVE_SIZE[0]}x{LIVE_SIZE[1]:g}, {QUICK_SIZES[0][0]}x{QUICK_SIZES[0][1]:g} with --quick;"
                             " none: not measured)")
    parser.add_argument("--json", metavar="PATH", help="also write the rows, timelines and environment as JSON to PATH")
    parser.add_argument("--child", metavar="TASK", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child_main(args.child)
        return 0
    try:
        sizes = QUICK_SIZES if args.quick else _sizes(args.sizes)
    except ValueError:
        parser.error("--sizes: comma-separated NxS[xR], N >= 1 trials of S >= 0 seconds [R >= 1 reports per trial]"
                     " (e.g. 40x0.5,200x0.02,1000x0,200x0.02x1)")
    try:
        live = (None if args.live == "none" else _sizes(args.live)[0][:2] if args.live
                else QUICK_SIZES[0][:2] if args.quick else LIVE_SIZE)
    except ValueError:
        parser.error("--live: NxS, N >= 1 trials of S >= 0 seconds (e.g. 200x0.02), or none")
    repeats = args.repeats if args.repeats is not None else (1 if args.quick else REPEATS)
    if repeats < 1 or args.concurrency < 1:
        parser.error("--repeats and --concurrency must be >= 1")

    def progress(message: str) -> None:
        print(f"[search] {message}", file=sys.stderr, flush=True)

    report = run(sizes, args.concurrency, repeats, progress, live)
    print(markdown(report))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark ``showwork.statistics`` against opda 0.8.0, the reference implementation.

Usage::

    python benchmarks/stats.py [--quick] [--opda-max-n N] [--json PATH]

(``--repeats R`` sets the number of fresh showwork processes per band size.)

Run it from the repository root (the package need not be installed: the script puts the repository
root on ``sys.path`` and on ``PYTHONPATH`` for its child processes). It prints one Markdown table,
``case | showwork | opda 0.8.0 | ratio | target | met``, measured in this one run on this machine,
followed by footnotes. With ``--json PATH`` the same rows (display strings and raw numbers) are
also written to PATH.

What is measured
----------------
- **LD highest-density CDF bands from a cold cache** at n = 48, 145, 1,024 and 4,096, confidence
  0.8: ``showwork.statistics.cdf_band(scores, 0.8, "ld-hd")`` against
  ``opda.nonparametric.EmpiricalDistribution.confidence_bands(scores, 0.8,
  method="ld_highest_density")``. Every measurement runs in a fresh Python process (so no
  in-memory cache helps); each showwork process gets ``SHOWWORK_CACHE_DIR`` set to a new, empty
  temporary directory (so no on-disk cache helps either). The time is that of the call alone,
  after the imports; showwork is run ``--repeats`` times (default 3, fresh process and fresh cache
  each time) and the median is shown with the range. opda is run once per n (it takes minutes)
  and only for n <= ``--opda-max-n`` (default 1,024: at n = 4,096 its 100,000 x n Monte Carlo
  matrix alone is 3.3 GB). ``--quick`` runs opda only at n = 48 and 145 (and skips opda's
  V-statistic at B = 10^6, ~7 s and 1 GB) and showwork once per n, for CI smoke tests.
- **Peak memory** of each child: the absolute peak resident set size (``ru_maxrss`` of the child
  itself) and its increase over the child's resident set after its imports and data loading.
  The 300 MB target is checked against the *absolute* peak RSS of the showwork child. opda's
  process pool workers are reported separately (``RUSAGE_CHILDREN`` of the opda child).
- **Correctness beside speed**: showwork's exact critical pointwise level ``1 - c*`` against the
  Monte Carlo level opda used, recovered from opda's returned upper band: for highest-density
  intervals the interval of the first order statistic, Beta(1, n), is one-sided, ``[0, q]`` with
  ``q = betaincinv(1, n, c)``, so ``1 - c = (1 - q)^n``. The difference is compared with the Monte
  Carlo standard error of opda's estimate (100,000 draws), derived from the exact slope of the
  simultaneous coverage in ``log(1 - c)``.
- **The command line, ``showwork curve FILE --score score``, on 100,000 and 1,000,000 rows** (issue
  14, item 11): a CSV of seeded Beta(8, 3) scores with a runtime column, run in a fresh process
  with an empty ``SHOWWORK_CACHE_DIR`` (cold), stdout discarded. Wall time, CPU time (user + sys)
  and the peak resident set size of that process (``os.wait4``) beside the targets (1,000,000 rows
  in <= 30 s and <= 1 GB). Options: the defaults, and ``--a 0 --b 1`` (adds the mean-curve bands);
  ``--quick`` runs the 100,000-row case only.
- **The joint LD level of a schedule of looks** (issue 27: sequential comparisons), cold (fresh
  process, empty ``SHOWWORK_CACHE_DIR``): ``ld_joint_critical_coverage(looks, 0.8,
  "highest_density")`` for looks 12,24,48 and 256,512,1024, against the target < 1 s for 3 looks up
  to n = 1,024; the row says whether the level is exact or the Hunter–Worsley bound.
- **The noisy-quadratic extrapolation** (issue 38): ``extrapolate(tuning_curve(scores, a=0, b=1), 480)``
  on 48 seeded DeBERTaV3 scores (the fit, the consonance set, the median and mean bands to K = 480, the
  goodness-of-fit test) beside opda's ``NoisyQuadraticDistribution.fit`` on the same scores and tail
  (the best half, concave form), cold, one core (OMP/OPENBLAS/MKL threads = 1), median of
  ``--repeats`` fresh processes each (opda once with ``--quick``), against the target <= 1 s; a second
  row prints both fitted laws and their median curves at K.
- **V- and U-statistics at B = 10^6**: a seeded Beta(8, 2) sample of 10^6 scores and 60
  log-spaced budgets from 1 to 10^6 rounded to integers (57 distinct values), against opda's
  ``v_tuning_curve`` / ``u_tuning_curve`` (timed from the raw scores, including opda's
  constructor). opda's U-statistic uses ``scipy.special.comb``, which overflows to inf (giving
  NaN) once ``C(B, k) > 1.8e308`` and builds B x K arrays, so it is compared at B = 10^4 instead.

Scores are the real search results in ``$SHOWWORK_DATA_DIR/search-results`` (else
``shared/data/search-results`` in the repository, else ``/work/shared/data/search-results``):
``reuters_mlp_f1.csv`` column ``f1`` (n = 145; its first 48 rows for n = 48) and
``deberta-base_mnli_tuning.csv`` column ``matched_acc_best`` (n = 1,024); n = 4,096 uses a seeded
normal sample. A missing file is replaced by a seeded normal sample and the table says so. The LD
band depends on the scores only through n.

Linux or macOS only (``resource``). Timings depend on the load of the machine: the CPU time that
other processes used during the run (from ``/proc/stat``, on Linux) is printed, with a warning
when it was large enough to inflate the times.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)

CONFIDENCE = 0.8
BAND_SIZES = (48, 145, 1024, 4096)
QUICK_OPDA_MAX_N = 145
SEED = 20240229
OPDA_SEED = 0  # opda.random.set_seed in the opda children: its Monte Carlo is then reproducible
OPDA_MC_TRIALS = 100_000  # opda's default n_trials in _ld_band_weights
VU_SIZE = 10**6
VU_U_OPDA_SIZE = 10**4
VU_GRID_POINTS = 60

SPEEDUP_TARGET = 100.0
TIME_TARGETS = {1024: 0.5, 4096: 5.0}  # seconds, showwork cold
RSS_TARGET_MB = 300.0
VU_TIME_TARGET = 1.0  # seconds, each of V and U at B = 10^6
AGREEMENT_TARGET = 1e-10  # max |showwork - opda| of the tuning-curve estimates
MC_SE_TARGET = 3.0  # |showwork - opda| of 1 - c within this many Monte Carlo standard errors
JOINT_LOOKS = ((12, 24, 48), (256, 512, 1024))  # schedules of 3 looks (issue 27)
JOINT_TIME_TARGET = 1.0  # seconds, cold, for 3 looks up to n = 1,024
EXTRAPOLATION_N, EXTRAPOLATION_K = 48, 480  # issue 38: 48 DeBERTaV3 scores extrapolated to 10x the budget
EXTRAPOLATION_TIME_TARGET = 1.0  # seconds, cold, one core: the fit and the bands
ONE_CORE = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
CURVE_CLI_ROWS = (100_000, 1_000_000)
CURVE_CLI_OPTIONS = ((), ("--a", "0", "--b", "1"))
CURVE_CLI_TARGETS = {1_000_000: (30.0, 1024.0)}  # rows: (seconds, peak RSS MB), cold cache


# --- measurement in a child process ------------------------------------------------------------


def _rss_now_mb() -> float:
    """Current resident set size of this process in MB (VmRSS), or its peak so far if unknown."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return _peak_rss_mb(self=True)


def _peak_rss_mb(self: bool = True) -> float:
    """Peak RSS in MB of this process (``self``) or of its largest reaped child (``not self``)."""
    import resource

    who = resource.RUSAGE_SELF if self else resource.RUSAGE_CHILDREN
    peak = resource.getrusage(who).ru_maxrss
    return peak / 2**20 if sys.platform == "darwin" else peak / 1024.0  # bytes on macOS, KB on Linux


def _child_main(task_path: str) -> None:
    """Run one measurement described by the JSON file ``task_path``; write the result beside it."""
    with open(task_path) as f:
        task = json.load(f)
    kind = task["kind"]
    started = time.perf_counter()
    if kind.startswith("showwork"):
        import showwork.statistics as sw
    else:
        import warnings

        import opda.random
        from opda.nonparametric import EmpiricalDistribution

        warnings.simplefilter("ignore")  # opda warns about tied scores; the LD band ignores ties
        opda.random.set_seed(OPDA_SEED)
    import numpy as np

    scores = np.load(task["scores"])
    ks = np.asarray(task["ks"], dtype=float) if "ks" in task else None
    import_s = time.perf_counter() - started
    baseline = _rss_now_mb()
    result: dict = {"import_s": import_s, "baseline_rss_mb": baseline}

    if kind == "showwork-band":
        cache = os.environ["SHOWWORK_CACHE_DIR"]
        result["cache_was_empty"] = not any(os.scandir(cache))
        t0 = time.perf_counter()
        band = sw.cdf_band(scores, CONFIDENCE, "ld-hd")
        result["seconds"] = time.perf_counter() - t0
        result["excluded"] = 1.0 - band.critical_coverage
        result["cache_files_after"] = sum(len(files) for _, _, files in os.walk(cache))
    elif kind == "opda-band":
        from scipy import special

        t0 = time.perf_counter()
        _, _, upper = EmpiricalDistribution.confidence_bands(
            scores, CONFIDENCE, method="ld_highest_density"
        )
        result["seconds"] = time.perf_counter() - t0
        n = scores.size
        # Upper CDF bound on [a, y_(1)): the upper end q of the Beta(1, n) interval [0, q].
        q = float(upper.cdf(np.nextafter(np.min(scores), -np.inf)))
        result["first_upper"] = q
        result["excluded"] = math.exp(n * math.log1p(-q))  # 1 - betainc(1, n, q) = (1 - q)^n
        result["coverage_betainc"] = float(special.betainc(1, n, q))
    elif kind == "showwork-joint":
        t0 = time.perf_counter()
        level = sw.ld_joint_critical_coverage(tuple(task["looks"]), CONFIDENCE, "highest_density")
        result["seconds"] = time.perf_counter() - t0
        result["critical_coverage"], result["exact"] = level.critical_coverage, level.exact
        result["cache_files_after"] = sum(len(files) for _, _, files in os.walk(os.environ["SHOWWORK_CACHE_DIR"]))
    elif kind == "showwork-extrapolate":
        curve = sw.tuning_curve(scores, a=0.0, b=1.0)  # the bounds: the mean bands are computed too
        t0, cpu0 = time.perf_counter(), time.process_time()
        fit = sw.extrapolate(curve, EXTRAPOLATION_K)
        result["seconds"], result["cpu_seconds"] = time.perf_counter() - t0, time.process_time() - cpu0
        result["refused"] = isinstance(fit, sw.ExtrapolationRefused)
        if not result["refused"]:
            law = fit.law
            result["law"] = [law.alpha, law.beta, law.gamma, law.sigma]
            result["curve_at_K"] = float(fit.point[-1])
    elif kind == "opda-nq-fit":
        from opda.parametric import NoisyQuadraticDistribution

        threshold = float(np.sort(scores)[scores.size - math.ceil(scores.size / 2)])  # the same tail: the best half
        t0, cpu0 = time.perf_counter(), time.process_time()
        law = NoisyQuadraticDistribution.fit(
            scores, limits=(threshold, np.inf), constraints={"convex": False}, generator=np.random.RandomState(OPDA_SEED)
        )
        result["seconds"], result["cpu_seconds"] = time.perf_counter() - t0, time.process_time() - cpu0
        result["law"] = [float(law.a), float(law.b), float(law.c), float(law.o)]
        result["curve_at_K"] = float(law.quantile_tuning_curve([EXTRAPOLATION_K])[0])
    elif kind in ("showwork-v", "showwork-u"):
        estimator = sw.v_statistic if kind == "showwork-v" else sw.u_statistic
        t0 = time.perf_counter()
        values = estimator(scores, ks)
        result["seconds"] = time.perf_counter() - t0
        result["values"] = [float(v) for v in values]
    elif kind in ("opda-v", "opda-u"):
        t0 = time.perf_counter()
        dist = EmpiricalDistribution(scores)
        curve = dist.v_tuning_curve if kind == "opda-v" else dist.u_tuning_curve
        with np.errstate(all="ignore"):
            values = curve(ks.astype(int))
        result["seconds"] = time.perf_counter() - t0
        result["values"] = [float(v) for v in values]
    else:
        raise ValueError(f"unknown task kind {kind!r}")

    result["peak_rss_mb"] = _peak_rss_mb(self=True)
    result["workers_peak_rss_mb"] = _peak_rss_mb(self=False)
    result["increase_mb"] = result["peak_rss_mb"] - baseline
    with open(task["result"], "w") as f:
        json.dump(result, f)


_OTHER_LOAD: list = []  # (CPUs kept busy by other processes, task kind, scores file) per child


def _cpu_snapshot() -> tuple[float, float, float] | None:
    """(busy CPU seconds of the whole machine, CPU seconds of this process and its reaped children, now).

    None where /proc/stat is unavailable (non-Linux).
    """
    import resource

    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    busy = sum(fields) - fields[3] - (fields[4] if len(fields) > 4 else 0)  # minus idle and iowait
    ours = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        ours += usage.ru_utime + usage.ru_stime
    return busy / os.sysconf("SC_CLK_TCK"), ours, time.perf_counter()


def _other_cpus_busy(before, after) -> float | None:
    """Average number of CPUs that processes other than this benchmark kept busy between snapshots."""
    if before is None or after is None or after[2] <= before[2]:
        return None
    return max(0.0, ((after[0] - before[0]) - (after[1] - before[1])) / (after[2] - before[2]))


def _measure(kind: str, scores_path: str, workdir: str, ks=None, looks=None) -> dict:
    """Run one task in a fresh interpreter; return its result, or ``{"error": ...}``."""
    task_dir = tempfile.mkdtemp(dir=workdir, prefix=f"{kind}-")
    task = {"kind": kind, "scores": scores_path, "result": os.path.join(task_dir, "result.json")}
    if ks is not None:
        task["ks"] = [float(k) for k in ks]
    if looks is not None:
        task["looks"] = [int(n) for n in looks]
    task_path = os.path.join(task_dir, "task.json")
    with open(task_path, "w") as f:
        json.dump(task, f)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (REPO_ROOT, env.get("PYTHONPATH")) if p)
    if kind in ("showwork-extrapolate", "opda-nq-fit"):
        env.update(ONE_CORE)  # the fit's target is on one core
    if kind.startswith("showwork"):
        cache = os.path.join(task_dir, "cache")
        os.mkdir(cache)  # fresh and empty: a cold cache
        env["SHOWWORK_CACHE_DIR"] = cache
    cpu0 = _cpu_snapshot()
    wall0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--child", task_path],
        env=env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - wall0
    if proc.returncode != 0 or not os.path.exists(task["result"]):
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [""]
        return {"error": f"child failed (exit {proc.returncode}): {tail[0][:160]}", "wall_s": wall}
    with open(task["result"]) as f:
        result = json.load(f)
    result["wall_s"] = wall
    result["other_cpus_busy"] = _other_cpus_busy(cpu0, _cpu_snapshot())
    _OTHER_LOAD.append((result["other_cpus_busy"], kind, os.path.basename(scores_path)))
    return result


def _measure_curve_cli(csv_path: str, options: tuple[str, ...], workdir: str) -> dict:
    """Run ``showwork curve`` on a results file in a fresh process with a cold cache.

    Returns the wall and CPU seconds, the process's own peak RSS (``os.wait4``), its exit status
    and its stderr (the progress lines).
    """
    cache = tempfile.mkdtemp(dir=workdir, prefix="curve-cache-")  # empty: a cold cache
    env = dict(os.environ, SHOWWORK_CACHE_DIR=cache)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (REPO_ROOT, env.get("PYTHONPATH")) if p)
    stderr_path = os.path.join(cache, "stderr.txt")
    cpu0 = _cpu_snapshot()
    with open(stderr_path, "w") as stderr:
        wall0 = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "showwork", "curve", csv_path, "--score", "score", *options],
            env=env, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=stderr,
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - wall0
    proc.returncode = os.waitstatus_to_exitcode(status)
    with open(stderr_path) as f:
        err = f.read()
    # ru_maxrss is in KiB on Linux, bytes on macOS
    peak_mb = usage.ru_maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024)
    other = _other_cpus_busy(cpu0, _cpu_snapshot())
    _OTHER_LOAD.append((other, "showwork-curve-cli", os.path.basename(csv_path)))
    return {"seconds": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_rss_mb": peak_mb,
            "exit": proc.returncode, "stderr": err, "other_cpus_busy": other}


def curve_cli_input(rows: int, workdir: str) -> str:
    """A CSV of ``rows`` seeded Beta(8, 3) scores and Gamma runtimes (the CLI benchmark's input)."""
    import numpy as np

    rng = np.random.default_rng(SEED + rows)
    scores, runtimes = rng.beta(8.0, 3.0, rows), rng.gamma(2.0, 100.0, rows)
    path = os.path.join(workdir, f"curve-{rows}.csv")
    with open(path, "w") as f:
        f.write("score,runtime\n")
        f.writelines(f"{s!r},{r!r}\n" for s, r in zip(scores.tolist(), runtimes.tolist()))
    return path


# --- inputs ------------------------------------------------------------------------------------


def _data_dir() -> str | None:
    candidates = []
    if os.environ.get("SHOWWORK_DATA_DIR"):
        candidates.append(os.path.join(os.environ["SHOWWORK_DATA_DIR"], "search-results"))
    candidates += [
        os.path.join(REPO_ROOT, "shared", "data", "search-results"),
        "/work/shared/data/search-results",
    ]
    return next((c for c in candidates if os.path.isdir(c)), None)


def _read_column(filename: str, column: str):
    import numpy as np

    root = _data_dir()
    if root is None or not os.path.exists(os.path.join(root, filename)):
        return None
    with open(os.path.join(root, filename), newline="") as f:
        values = [float(row[column]) for row in csv.DictReader(f) if row.get(column, "") != ""]
    return np.asarray(values, dtype=float)


def band_inputs() -> list[tuple[int, str, object]]:
    """(n, description, scores) for each band size; real scores where the data are present."""
    import numpy as np

    mlp = _read_column("reuters_mlp_f1.csv", "f1")
    deberta = _read_column("deberta-base_mnli_tuning.csv", "matched_acc_best")
    inputs = []
    for n in BAND_SIZES:
        if n == 48 and mlp is not None and mlp.size >= 48:
            inputs.append((n, "first 48 Reuters MLP F1 scores", mlp[:48]))
        elif n == 145 and mlp is not None and mlp.size == 145:
            inputs.append((n, "Reuters MLP F1 scores", mlp))
        elif n == 1024 and deberta is not None and deberta.size == 1024:
            inputs.append((n, "DeBERTa-base MNLI matched_acc_best", deberta))
        else:
            sample = np.random.default_rng([SEED, n]).normal(size=n)
            inputs.append((n, f"seeded normal sample, seed {SEED}", sample))
    return inputs


def vu_budgets(upper: int):
    import numpy as np

    grid = np.unique(np.round(np.geomspace(1.0, float(VU_SIZE), VU_GRID_POINTS)))
    return grid[grid <= upper]


# --- formatting --------------------------------------------------------------------------------


def fmt_n(n: int) -> str:
    return f"{n:,}"


def fmt_time(seconds: float) -> str:
    if seconds < 1.0:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds:.3g} s" if seconds < 100 else f"{seconds:.0f} s"


def fmt_mb(mb: float) -> str:
    return f"{mb:,.0f} MB" if mb < 10_000 else f"{mb / 1024:.1f} GB"


def fmt_ratio(x: float) -> str:
    return f"{x:,.0f}x" if x >= 100 else f"{x:.3g}x"


def _met(ok: bool | None) -> str:
    return "—" if ok is None else ("yes" if ok else "NO")


def _failed(r: dict | None) -> bool:
    return r is not None and "error" in r


# --- the benchmark -----------------------------------------------------------------------------


def run(quick: bool, opda_max_n: int, repeats: int, progress) -> dict:
    """Run every measurement (each in its own child process) and return the report."""
    with tempfile.TemporaryDirectory(prefix="showwork-bench-") as workdir:
        return _run(quick, opda_max_n, repeats, progress, workdir)


def _run(quick: bool, opda_max_n: int, repeats: int, progress, workdir: str) -> dict:
    import numpy as np
    import scipy

    opda_limit = min(opda_max_n, QUICK_OPDA_MAX_N) if quick else opda_max_n
    rows: list[dict] = []
    notes: list[str] = []
    load_before = os.getloadavg() if hasattr(os, "getloadavg") else None
    t_start = time.perf_counter()
    cpu_start = _cpu_snapshot()

    def row(case, showwork, opda, ratio, target, met, **raw):
        rows.append(
            {"case": case, "showwork": showwork, "opda": opda, "ratio": ratio, "target": target,
             "met": met, "raw": raw}
        )

    # ---- LD-HD bands -------------------------------------------------------------------------
    band = {}
    for n, description, scores in band_inputs():
        path = os.path.join(workdir, f"scores-{n}.npy")
        np.save(path, scores)
        runs = []
        for i in range(repeats):
            progress(f"showwork ld-hd n={n} (run {i + 1}/{repeats})")
            runs.append(_measure("showwork-band", path, workdir))
        opda_result = None
        if n <= opda_limit:
            progress(f"opda ld_highest_density n={n} (this can take minutes)")
            opda_result = _measure("opda-band", path, workdir)
        band[n] = (description, runs, opda_result)

    cold_checks = []
    import_times = []
    for n, (description, runs, opda_r) in band.items():
        ok_runs = [r for r in runs if not _failed(r)]
        case = f"LD-HD band, cold, n={fmt_n(n)} ({description})"
        targets = []
        if n in (145, 1024):
            targets.append(f">= {SPEEDUP_TARGET:.0f}x faster")
        if n in TIME_TARGETS:
            targets.append(f"showwork < {TIME_TARGETS[n]:g} s")
        if not ok_runs:
            row(case, runs[0]["error"], "—", "—", "; ".join(targets) or "—", "NO" if targets else "—")
            continue
        times = [r["seconds"] for r in ok_runs]
        median = statistics.median(times)
        cold_checks += [r["cache_was_empty"] and r["cache_files_after"] >= 1 for r in ok_runs]
        import_times += [r["import_s"] for r in ok_runs]
        sw_cell = fmt_time(median)
        if len(times) > 1:
            sw_cell += f" ({fmt_time(min(times))}–{fmt_time(max(times))})"
        ratio = None
        if opda_r is None:
            op_cell = "not run¹" if n > opda_max_n else ("not run (--quick)" if quick else "not run¹")
        elif _failed(opda_r):
            op_cell = opda_r["error"]
        else:
            op_cell = fmt_time(opda_r["seconds"])
            ratio = opda_r["seconds"] / median
        verdicts = []
        if n in (145, 1024):
            verdicts.append(None if ratio is None else ratio >= SPEEDUP_TARGET)
        if n in TIME_TARGETS:
            verdicts.append(median < TIME_TARGETS[n])
        met = "—"
        if verdicts:
            parts = [_met(v) if v is not None else "not checked (opda not run)" for v in verdicts]
            met = " / ".join(parts)
        row(case, sw_cell, op_cell, fmt_ratio(ratio) if ratio else "—", " and ".join(targets) or "—",
            met, n=n, showwork_seconds=times, opda_seconds=None if ratio is None else opda_r["seconds"],
            showwork_import_seconds=[r["import_s"] for r in ok_runs],
            showwork_process_wall_seconds=[r["wall_s"] for r in ok_runs],
            opda_process_wall_seconds=None if ratio is None else opda_r["wall_s"],
            speedup=ratio, targets=targets, verdicts=verdicts)

    for n, (description, runs, opda_r) in band.items():
        ok_runs = [r for r in runs if not _failed(r)]
        if not ok_runs:
            continue
        peak = max(r["peak_rss_mb"] for r in ok_runs)
        increase = max(r["increase_mb"] for r in ok_runs)
        sw_cell = f"{fmt_mb(peak)} (+{fmt_mb(increase)})"
        op_cell, ratio = "not run", None
        if opda_r is not None and _failed(opda_r):
            op_cell = "failed"
        elif opda_r is not None:
            op_cell = f"{fmt_mb(opda_r['peak_rss_mb'])} (+{fmt_mb(opda_r['increase_mb'])})"
            if opda_r["workers_peak_rss_mb"] > 0:
                op_cell += f"; each pool worker <= {fmt_mb(opda_r['workers_peak_rss_mb'])}"
            ratio = opda_r["peak_rss_mb"] / peak
        ok = peak < RSS_TARGET_MB
        row(f"peak RSS (absolute, +over post-import baseline), LD-HD band n={fmt_n(n)}", sw_cell, op_cell,
            fmt_ratio(ratio) if ratio else "—", f"showwork absolute < {RSS_TARGET_MB:.0f} MB", _met(ok),
            n=n, showwork_peak_rss_mb=peak, showwork_increase_mb=increase,
            opda_peak_rss_mb=None if ratio is None else opda_r["peak_rss_mb"],
            opda_increase_mb=None if ratio is None else opda_r["increase_mb"],
            opda_workers_peak_rss_mb=None if ratio is None else opda_r["workers_peak_rss_mb"])

    for n, (description, runs, opda_r) in band.items():
        ok_runs = [r for r in runs if not _failed(r)]
        if not ok_runs or opda_r is None or _failed(opda_r):
            continue
        exact = ok_runs[0]["excluded"]
        same = all(r["excluded"] == exact for r in ok_runs)
        mc = opda_r["excluded"]
        rel = mc / exact - 1.0
        se = _mc_standard_error(n)
        z = abs(rel) / se
        row(f"critical level 1 - c*, n={fmt_n(n)} (showwork exact vs opda Monte Carlo)",
            f"{exact:.6e}" + ("" if same else " (varies!)"),
            f"{mc:.6e} (MC s.e. {100 * se:.2g}%)",
            f"{1 + rel:.4f} ({100 * rel:+.2f}%, {z:.2g} s.e.)",
            f"within {MC_SE_TARGET:g} MC s.e.", _met(z <= MC_SE_TARGET),
            n=n, showwork_excluded=exact, opda_excluded=mc, relative_difference=rel,
            mc_relative_standard_error=se, opda_first_upper=opda_r["first_upper"],
            opda_coverage_betainc=opda_r["coverage_betainc"], deterministic=same)

    # ---- the joint level of a schedule of looks (sequential comparisons) ---------------------
    any_scores = os.path.join(workdir, f"scores-{BAND_SIZES[0]}.npy")  # the child loads one; the level needs none
    for looks in JOINT_LOOKS:
        runs = []
        for i in range(repeats):
            progress(f"showwork joint level, looks {looks} (run {i + 1}/{repeats})")
            runs.append(_measure("showwork-joint", any_scores, workdir, looks=looks))
        ok_runs = [r for r in runs if not _failed(r)]
        case = f"joint LD-HD level c*, cold, looks {','.join(map(str, looks))} at {CONFIDENCE:g}"
        target = f"showwork < {JOINT_TIME_TARGET:g} s (3 looks up to n = 1,024)"
        if not ok_runs:
            row(case, runs[0]["error"], "—", "—", target, "NO")
            continue
        times = [r["seconds"] for r in ok_runs]
        median = statistics.median(times)
        cell = fmt_time(median) + (f" ({fmt_time(min(times))}–{fmt_time(max(times))})" if len(times) > 1 else "")
        level = ok_runs[0]
        cell += f"; c* = {level['critical_coverage']:.6f} ({'exact' if level['exact'] else 'Hunter-Worsley bound'})"
        row(case, cell, "no such feature", "—", target, _met(median < JOINT_TIME_TARGET), looks=list(looks),
            showwork_seconds=times, critical_coverage=level["critical_coverage"], exact=level["exact"],
            cold=all(r["cache_files_after"] >= 1 for r in ok_runs))

    # ---- extrapolated tuning curves (issue 38): the noisy-quadratic fit and bands ---------------
    v3 = _read_column("deberta-v3-base_mnli_tuning.csv", "matched_acc_best")
    if v3 is not None and v3.size >= EXTRAPOLATION_N:
        nq_scores = np.random.default_rng(SEED).choice(v3, EXTRAPOLATION_N, replace=False)
        nq_source = f"{EXTRAPOLATION_N} of the DeBERTaV3 MNLI matched_acc_best scores (seeded)"
    else:
        nq_scores = np.random.default_rng([SEED, EXTRAPOLATION_N]).normal(size=EXTRAPOLATION_N)
        nq_source = f"seeded normal sample of {EXTRAPOLATION_N} (no DeBERTaV3 data)"
    nq_path = os.path.join(workdir, "scores-extrapolation.npy")
    np.save(nq_path, nq_scores)
    sw_runs, op_runs = [], []
    for i in range(repeats):
        progress(f"showwork extrapolate, n={EXTRAPOLATION_N}, K={EXTRAPOLATION_K} (run {i + 1}/{repeats})")
        sw_runs.append(_measure("showwork-extrapolate", nq_path, workdir))
    for i in range(1 if quick else repeats):
        progress(f"opda NoisyQuadraticDistribution.fit, n={EXTRAPOLATION_N} (run {i + 1})")
        op_runs.append(_measure("opda-nq-fit", nq_path, workdir))
    sw_ok, op_ok = [r for r in sw_runs if not _failed(r)], [r for r in op_runs if not _failed(r)]

    def timed(runs):
        times, cpus = [r["seconds"] for r in runs], [r["cpu_seconds"] for r in runs]
        cell = fmt_time(statistics.median(times)) + (f" ({fmt_time(min(times))}–{fmt_time(max(times))})" if len(times) > 1 else "")
        return cell + f", CPU {fmt_time(statistics.median(cpus))}", statistics.median(times)

    case = (f"noisy-quadratic fit + consonance bands 1..{EXTRAPOLATION_K} (median and mean), cold, one core: "
            f"{nq_source}, the best half as the tail")
    target = f"showwork <= {EXTRAPOLATION_TIME_TARGET:g} s"
    if sw_ok:
        sw_cell, sw_median = timed(sw_ok)
        op_cell, op_median = timed(op_ok) if op_ok else (op_runs[0]["error"] if op_runs else "—", None)
        if op_ok:
            op_cell += " (the fit alone)"
        row(case, sw_cell, op_cell, fmt_ratio(op_median / sw_median) if op_median else "—", target,
            _met(sw_median <= EXTRAPOLATION_TIME_TARGET), showwork_seconds=[r["seconds"] for r in sw_ok],
            showwork_cpu_seconds=[r["cpu_seconds"] for r in sw_ok],
            opda_seconds=[r["seconds"] for r in op_ok], showwork_law=sw_ok[0].get("law"),
            opda_law=op_ok[0]["law"] if op_ok else None)
        if op_ok and "law" in sw_ok[0]:
            (a1, b1, c1, o1), (a2, b2, c2, o2) = sw_ok[0]["law"], op_ok[0]["law"]
            row(f"the two fits (alpha, beta, gamma, sigma) and their median curves at K={EXTRAPOLATION_K}",
                f"{a1:.4f}, {b1:.4f}, {c1:g}, {o1:.2g}; {sw_ok[0]['curve_at_K']:.4f}",
                f"{a2:.4f}, {b2:.4f}, {c2:g}, {o2:.2g}; {op_ok[0]['curve_at_K']:.4f}", "—", "— (agreement shown)", "—")
    else:
        row(case, sw_runs[0]["error"], "—", "—", target, "NO")
    notes.append(
        "Extrapolation rows: `extrapolate(tuning_curve(scores, a=0, b=1), K)` (the fit, the consonance set, the "
        "median and mean bands 1..K, the goodness-of-fit test) against opda's `NoisyQuadraticDistribution.fit` "
        "(censored maximum spacing, concave form, the same tail), each in a fresh process with OMP/OPENBLAS/MKL "
        "threads = 1, timed after the imports; CPU = the process's own CPU time for the call."
    )

    # ---- V and U at B = 10^6 -----------------------------------------------------------------
    rng = np.random.default_rng(SEED)
    vu_scores = rng.beta(8.0, 2.0, size=VU_SIZE)
    vu_path = os.path.join(workdir, "scores-vu.npy")
    np.save(vu_path, vu_scores)
    small_path = os.path.join(workdir, "scores-vu-small.npy")
    np.save(small_path, vu_scores[:VU_U_OPDA_SIZE])
    ks = vu_budgets(VU_SIZE)
    ks_small = vu_budgets(VU_U_OPDA_SIZE)
    grid = f"{ks.size} log-spaced integer budgets 1..10^6"

    progress("showwork V-statistic B=10^6")
    sw_v = _measure("showwork-v", vu_path, workdir, ks)
    progress("showwork U-statistic B=10^6")
    sw_u = _measure("showwork-u", vu_path, workdir, ks)
    op_v = None
    if not quick:
        progress("opda v_tuning_curve B=10^6")
        op_v = _measure("opda-v", vu_path, workdir, ks)
    progress("showwork / opda U-statistic B=10^4")
    sw_u_small = _measure("showwork-u", small_path, workdir, ks_small)
    op_u_small = _measure("opda-u", small_path, workdir, ks_small)

    def seconds_cell(r):
        return r["error"] if _failed(r) else fmt_time(r["seconds"])

    ratio_v = None if op_v is None or _failed(op_v) or _failed(sw_v) else op_v["seconds"] / sw_v["seconds"]
    row(f"V-statistic, B=10^6 seeded Beta(8,2) sample, {grid}", seconds_cell(sw_v),
        "not run (--quick)" if op_v is None else seconds_cell(op_v),
        fmt_ratio(ratio_v) if ratio_v else "—", f"showwork < {VU_TIME_TARGET:g} s",
        _met(None if _failed(sw_v) else sw_v["seconds"] < VU_TIME_TARGET),
        showwork_seconds=sw_v.get("seconds"), opda_seconds=None if ratio_v is None else op_v["seconds"],
        speedup=ratio_v, budgets=ks.tolist())
    row(f"U-statistic, B=10^6 seeded Beta(8,2) sample, {grid}", seconds_cell(sw_u), "not run²", "—",
        f"showwork < {VU_TIME_TARGET:g} s", _met(None if _failed(sw_u) else sw_u["seconds"] < VU_TIME_TARGET),
        showwork_seconds=sw_u.get("seconds"))
    ratio_u = None if _failed(op_u_small) or _failed(sw_u_small) else op_u_small["seconds"] / sw_u_small["seconds"]
    row(f"U-statistic, B=10^4 (first 10^4 of that sample), the {ks_small.size} budgets <= 10^4",
        seconds_cell(sw_u_small), seconds_cell(op_u_small) + "²", fmt_ratio(ratio_u) if ratio_u else "—",
        "— (ratio only)", "—", showwork_seconds=sw_u_small.get("seconds"),
        opda_seconds=None if ratio_u is None else op_u_small["seconds"], speedup=ratio_u,
        budgets=ks_small.tolist())

    if op_v is not None and not _failed(op_v) and not _failed(sw_v):
        diff = float(np.max(np.abs(np.subtract(sw_v["values"], op_v["values"]))))
        row("V-statistic agreement, B=10^6: max abs(showwork - opda) over the budgets", f"{diff:.2g}", "", "",
            f"<= {AGREEMENT_TARGET:g}", _met(diff <= AGREEMENT_TARGET), max_abs_difference=diff)
    if not _failed(op_u_small) and not _failed(sw_u_small):
        op_vals = np.asarray(op_u_small["values"])
        finite = np.isfinite(op_vals)
        diff = float(np.max(np.abs(np.asarray(sw_u_small["values"])[finite] - op_vals[finite])))
        kmax = int(ks_small[finite].max()) if finite.any() else 0
        row(f"U-statistic agreement, B=10^4: max abs(showwork - opda) where opda is finite "
            f"({int(finite.sum())} of {finite.size} budgets, k <= {kmax})",
            f"{diff:.2g}", f"NaN for {int((~finite).sum())} budgets²", "", f"<= {AGREEMENT_TARGET:g}",
            _met(diff <= AGREEMENT_TARGET), max_abs_difference=diff, opda_finite=int(finite.sum()))

    vu_runs = [r for r in (sw_v, sw_u) if not _failed(r)]
    if vu_runs:
        peak = max(r["peak_rss_mb"] for r in vu_runs)
        increase = max(r["increase_mb"] for r in vu_runs)
        op_cell, ratio = "not run (--quick)", None
        if op_v is not None and not _failed(op_v):
            op_cell = f"{fmt_mb(op_v['peak_rss_mb'])} (+{fmt_mb(op_v['increase_mb'])}) (V only)"
            ratio = op_v["peak_rss_mb"] / peak
        row("peak RSS (absolute, +over post-import baseline), V and U at B=10^6",
            f"{fmt_mb(peak)} (+{fmt_mb(increase)})", op_cell, fmt_ratio(ratio) if ratio else "—",
            f"showwork absolute < {RSS_TARGET_MB:.0f} MB", _met(peak < RSS_TARGET_MB),
            showwork_peak_rss_mb=peak, showwork_increase_mb=increase,
            opda_peak_rss_mb=None if ratio is None else op_v["peak_rss_mb"])

    # ---- the command line: showwork curve on 10^5 and 10^6 rows, cold cache -------------------
    for rows_n in CURVE_CLI_ROWS[:1] if quick else CURVE_CLI_ROWS:
        csv_path = curve_cli_input(rows_n, workdir)
        for options in CURVE_CLI_OPTIONS:
            label = " ".join(options) or "default options"
            progress(f"showwork curve, {fmt_n(rows_n)} rows, {label}, cold cache")
            r = _measure_curve_cli(csv_path, options, workdir)
            target = CURVE_CLI_TARGETS.get(rows_n)
            target_cell = f"<= {target[0]:g} s and <= {fmt_mb(target[1])} peak RSS" if target else "—"
            case = f"CLI `showwork curve` ({label}), {fmt_n(rows_n)} rows, cold cache: wall time, CPU time, peak RSS"
            if r["exit"] != 0:
                tail = r["stderr"].strip().splitlines()[-1:] or [""]
                row(case, f"exit {r['exit']}: {tail[0][:120]}", "—", "—", target_cell, "NO" if target else "—",
                    rows=rows_n, options=list(options), exit=r["exit"])
                continue
            cell = f"{fmt_time(r['seconds'])} (CPU {fmt_time(r['cpu_s'])}), {fmt_mb(r['peak_rss_mb'])}"
            met = "—"
            if target:
                met = f"{_met(r['seconds'] <= target[0])} / {_met(r['peak_rss_mb'] <= target[1])}"
            row(case, cell, "—", "—", target_cell, met, rows=rows_n, options=list(options),
                wall_seconds=r["seconds"], cpu_seconds=r["cpu_s"], peak_rss_mb=r["peak_rss_mb"],
                other_cpus_busy=r["other_cpus_busy"], progress_lines=r["stderr"].strip().splitlines())
    notes.append(
        "CLI rows: one fresh `python -m showwork curve FILE --score score` process per row, empty "
        "SHOWWORK_CACHE_DIR, stdout discarded; wall time (CPU time = user + sys of that process) and its own "
        "peak RSS from os.wait4. Above 8,192 scores the LD critical level is extrapolated (conservative; the "
        "output says so) and above 10,000 the default budgets are a grid (every k up to 200, 120 geometric steps)."
    )

    # ---- footnotes ---------------------------------------------------------------------------
    opda_1024 = band.get(1024, (None, None, None))[2]
    extrapolation = ""
    if opda_1024 is not None and not _failed(opda_1024):
        extrapolation = (
            f" Scaling this run's n=1,024 figures ({fmt_time(opda_1024['seconds'])}, "
            f"{fmt_mb(opda_1024['peak_rss_mb'])}) at least linearly in n gives over "
            f"{fmt_time(4 * opda_1024['seconds'])} and {fmt_mb(4 * opda_1024['peak_rss_mb'])} at n=4,096."
        )
    notes.append(
        f"¹ opda is not run at n > {opda_max_n:,} (--opda-max-n). Its LD band is Monte Carlo: it sorts a "
        f"{OPDA_MC_TRIALS:,} x n float64 matrix ({OPDA_MC_TRIALS * 4096 * 8 / 1e9:.1f} GB at n=4,096) "
        "and bisects a Beta interval for every entry, so time and memory grow at least linearly in n."
        + extrapolation
    )
    notes.append(
        "² opda's u_tuning_curve computes (comb(j, k) - comb(j - 1, k)) / comb(B, k) with scipy.special.comb "
        "in floating point, materialising B x K arrays; comb overflows to inf (so the estimate is NaN) once "
        f"C(B, k) > 1.8e308, i.e. for k >= {_comb_overflow(VU_SIZE)} at B=10^6 and k >= "
        f"{_comb_overflow(VU_U_OPDA_SIZE)} at B=10^4. So it is not run at B=10^6; at B=10^4 it is timed over "
        "the same budgets and compared where finite."
    )
    notes.append(
        "Times are of the call alone in a fresh Python process, after the imports "
        f"(median import time of the showwork children: {fmt_time(statistics.median(import_times)) if import_times else '—'}); "
        f"showwork: median (min–max) of {repeats} fresh process(es); opda: one process, "
        f"opda.random.set_seed({OPDA_SEED}), default n_jobs (os.cpu_count() = {os.cpu_count()}). "
        "Ratios are opda / showwork."
    )
    if cold_checks:
        notes.append(
            "Cold cache: every showwork band child started with an empty SHOWWORK_CACHE_DIR and wrote "
            "its critical level there." if all(cold_checks)
            else "WARNING: some showwork band child did not start cold or did not write its cache."
        )
    notes.append(
        "Peak RSS = ru_maxrss of the child process (RUSAGE_SELF); '+' = peak minus the child's VmRSS after "
        "imports and data loading. The 300 MB target is checked against the absolute peak of the showwork "
        "child (the largest over its repeats). opda's pool workers are reaped children of the opda process "
        "(RUSAGE_CHILDREN, the largest one)."
    )
    notes.append(
        "Critical level: opda's 1 - c is recovered from its upper band on [a, y_(1)), q = betaincinv(1, n, c), "
        "as (1 - q)^n. The MC s.e. is relative, of 1 - c: sqrt(0.8 * 0.2 / 100,000) divided by |dP/dlog(1 - c)|, "
        "the slope of the exact simultaneous coverage P at showwork's c*."
    )
    load_after = os.getloadavg() if hasattr(os, "getloadavg") else None
    other_total = _other_cpus_busy(cpu_start, _cpu_snapshot())
    measured = [x for x in _OTHER_LOAD if x[0] is not None]
    if other_total is not None and measured:
        worst = max(measured)
        busy = other_total > 0.25 or worst[0] > 0.5
        notes.append(
            ("WARNING: the machine was busy. " if busy else "")
            + f"Other processes kept on average {other_total:.2f} of {os.cpu_count()} CPUs busy during this run "
            f"(most during one measurement: {worst[0]:.2f}, {worst[1]} on {worst[2]})"
            + ("; the times above are inflated accordingly (opda's band uses every CPU, so it suffers most)."
               if busy else ".")
        )
    from importlib import metadata

    environment = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "opda": metadata.version("opda"),
        "cpus": os.cpu_count(),
        "machine": platform.platform(),
        "load_average_before": load_before,
        "load_average_after": load_after,
        "other_cpus_busy_total": other_total,
        "other_cpus_busy_per_measurement": [
            {"kind": k, "scores": f, "other_cpus_busy": x} for x, k, f in _OTHER_LOAD
        ],
        "total_seconds": time.perf_counter() - t_start,
        "quick": quick,
        "opda_max_n": opda_limit,
        "repeats": repeats,
    }
    return {"environment": environment, "rows": rows, "footnotes": notes}


def _comb_overflow(size: int) -> int:
    """Smallest k at which ``scipy.special.comb(size, k)`` is inf."""
    import numpy as np
    from scipy import special

    ks = np.arange(1, size + 1)
    return int(ks[np.isinf(special.comb(size, ks))][0])


def _mc_standard_error(n: int) -> float:
    """Relative standard error of opda's Monte Carlo estimate of 1 - c* (100,000 draws)."""
    from showwork.statistics.beta_intervals import beta_intervals
    from showwork.statistics.critical_levels import ld_critical_coverage, order_statistics_coverage

    excluded = 1.0 - ld_critical_coverage(n, CONFIDENCE, "highest_density")
    h = 0.02

    def coverage(x: float) -> float:
        lower, upper, _ = beta_intervals(n, excluded * math.exp(x), "highest_density")
        return order_statistics_coverage(lower, upper)

    slope = (coverage(h) - coverage(-h)) / (2 * h)
    return math.sqrt(CONFIDENCE * (1 - CONFIDENCE) / OPDA_MC_TRIALS) / abs(slope)


def markdown(report: dict) -> str:
    env = report["environment"]
    load = env["load_average_before"]
    header = (
        f"showwork vs opda {env['opda']} — Python {env['python']}, numpy {env['numpy']}, scipy {env['scipy']}, "
        f"{env['cpus']} CPUs" + (f", load average at start {load[0]:.2f}" if load else "")
    )
    lines = [header, "", "| case | showwork | opda 0.8.0 | ratio | target | met |", "|---|---|---|---|---|---|"]
    for r in report["rows"]:
        cells = [r["case"], r["showwork"], r["opda"], r["ratio"], r["target"], r["met"]]
        lines.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
    lines.append("")
    lines += report["footnotes"]
    after = env["load_average_after"]
    lines.append(
        f"Total benchmark time {env['total_seconds']:.0f} s; load average at end "
        f"{after[0]:.2f}." if after else f"Total benchmark time {env['total_seconds']:.0f} s."
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help=f"run opda only at n <= {QUICK_OPDA_MAX_N} and showwork once per case (CI smoke)")
    parser.add_argument("--opda-max-n", type=int, default=1024, metavar="N",
                        help="largest n at which to run opda's LD band (default 1024)")
    parser.add_argument("--repeats", type=int, default=None,
                        help="fresh showwork processes per band size (default 3, 1 with --quick)")
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON to PATH")
    parser.add_argument("--child", metavar="TASK", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        _child_main(args.child)
        return 0
    repeats = args.repeats if args.repeats is not None else (1 if args.quick else 3)
    if repeats < 1:
        parser.error("--repeats must be at least 1")

    def progress(message: str) -> None:
        print(f"[stats] {message}", file=sys.stderr, flush=True)

    report = run(args.quick, args.opda_max_n, repeats, progress)
    print(markdown(report))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

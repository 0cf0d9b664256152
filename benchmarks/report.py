"""Benchmark ``showwork report``: 10,000 trials across 4 families (target < 10 s), and 50 to 10,000 small families.

Usage::

    python benchmarks/report.py [--trials-per-family N] [--groups LIST] [--repeats R] [--quick] [--json PATH]

Run it from the repository root. It prints one Markdown table, ``case | showwork | reference |
ratio | target | met``, measured in this one run on this machine, then footnotes.

What is measured
----------------
- **The command a user types**, in a fresh process, end to end (Python start-up, imports, reading,
  statistics, figures in PNG + SVG + PDF, Markdown, HTML, LaTeX, JSON; MLflow logging is off because
  a results file has no parent run): ``showwork report trials.csv --score score --runtime
  runtime_s --group family --a 0 --b 1 --target 0.8 --out DIR --no-mlflow``. The reference is the
  target, 10 s: the ratio is time / 10 s (met when below 1).
- **Cold and warm**: "cold" gives the process a new, empty ``SHOWWORK_CACHE_DIR``, so every exact
  LD critical level (the bands of 2,500 trials, and the larger sample sizes the advice plans for)
  is computed from scratch; "warm" runs again with that cache filled, as a second report would.
  Each is repeated ``--repeats`` times (default 3) and the median is shown with the range.
- **Stages**, in one process with a warm cache: reading the file, ``analyze`` (every number),
  the figures, and the documents, so a regression shows where it is.
- **Many families** (issue 14, issue 23 item 13): ``showwork report groups.csv --score score --group
  family --out DIR --no-mlflow`` over ``G`` families of 4 trials each (``--groups``, default 50, 300,
  1,000 and 10,000; ``--quick``: 50), with every figure format. Targets: 50 families ≤ 20 s, 300
  families ≤ 60 s (issue 14: before, 20 families took 18 s and 50 did not finish in 300 s); 1,000
  families ≤ 60 s and 10,000 ≤ 5 min, each at most 2 GB of peak memory (issue 23: before, 100 families
  took 164 s, and 1,000 and 10,000 had written nothing after 300 and 400 s). Beyond six families the
  report compares each family with the best one and draws a summary and pages of small multiples for
  the 300 best-ranked (see ``showwork.report.figures``), so its figures stop growing at 300 families;
  the numbers, tables and documents grow linearly. The peak memory is the process's maximum
  resident set (``wait4``'s ``ru_maxrss``).

The trials are the papers' real random-search results (``$SHOWWORK_DATA_DIR/search-results``):
DeBERTa and DeBERTaV3 on MultiNLI (score ``matched_acc_best``), AlexNet and ConvNeXt on ImageNet
(``top1_best``, runtime ``train_time_s``), each resampled with replacement (seed 0) to
``--trials-per-family`` (default 2,500) trials, so that the report has 4 × 2,500 = 10,000.
The DeBERTa files record no runtime; their rows get a runtime resampled from ConvNeXt's so that
every family has a time axis (the benchmark measures the report, not the data). The many-family
files draw each family's 4 trials from one of the four real score lists (family ``i`` from list
``i mod 4``, seed 0), without runtimes.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)

TARGET_S = 10.0
GROUP_TARGETS_S = {50: 20.0, 300: 60.0, 1000: 60.0, 10000: 300.0}
"""Target seconds of a report of that many 4-trial families (issue 14 item 10; issue 23 item 13)."""
GROUP_MEMORY_TARGET_GB = 2.0
"""Target peak memory of every many-family report (issue 23 item 13)."""
GROUP_ROWS = 4
FAMILIES = (
    ("DeBERTa", "deberta-base_mnli_tuning.csv", "matched_acc_best", None),
    ("DeBERTaV3", "deberta-v3-base_mnli_tuning.csv", "matched_acc_best", None),
    ("AlexNet", "alexnet_imagenet_tuning.csv", "top1_best", "train_time_s"),
    ("ConvNeXt", "convnext-tiny_imagenet_tuning.csv", "top1_best", "train_time_s"),
)


def _results_dir() -> str:
    candidates = []
    if os.environ.get("SHOWWORK_DATA_DIR"):
        candidates.append(os.path.join(os.environ["SHOWWORK_DATA_DIR"], "search-results"))
    candidates += [os.path.join(REPO_ROOT, "..", "shared", "data", "search-results"), "/work/shared/data/search-results"]
    for path in candidates:
        if os.path.isdir(path):
            return path
    sys.exit("benchmarks/report.py: no search-results directory; set SHOWWORK_DATA_DIR")


def _column(path: str, name: str) -> list[float]:
    with open(path, newline="", encoding="utf-8") as handle:
        return [float(row[name]) for row in csv.DictReader(handle)]


def write_trials(path: str, per_family: int, seed: int = 0) -> int:
    """Write the 4-family results file; return the number of rows."""
    import numpy as np

    rng = np.random.default_rng(seed)
    data = _results_dir()
    donor_runtimes = np.array(_column(os.path.join(data, "convnext-tiny_imagenet_tuning.csv"), "train_time_s"))
    rows = []
    for family, filename, score, runtime in FAMILIES:
        scores = np.array(_column(os.path.join(data, filename), score))
        runtimes = np.array(_column(os.path.join(data, filename), runtime)) if runtime else donor_runtimes
        pick = rng.integers(0, scores.size, per_family)
        times = runtimes[rng.integers(0, runtimes.size, per_family)] if runtime is None else runtimes[pick]
        rows += [(family, float(s), float(t)) for s, t in zip(scores[pick], times)]
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["family", "score", "runtime_s"])
        writer.writerows(rows)
    return len(rows)


def write_groups(path: str, groups: int, rows: int = GROUP_ROWS, seed: int = 0) -> int:
    """Write a results file of ``groups`` families of ``rows`` real scores each; return the number of rows."""
    import numpy as np

    rng = np.random.default_rng(seed)
    data = _results_dir()
    pools = [np.array(_column(os.path.join(data, filename), score)) for _, filename, score, _ in FAMILIES]
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["family", "score"])
        for g in range(groups):
            pool = pools[g % len(pools)]
            writer.writerows((f"family{g:03d}", float(s)) for s in pool[rng.integers(0, pool.size, rows)])
    return groups * rows


def _group_command(trials: str, out: str) -> list[str]:
    return [sys.executable, "-m", "showwork", "report", trials, "--score", "score", "--group", "family", "--out", out, "--no-mlflow"]


def _command(trials: str, out: str) -> list[str]:
    return [
        sys.executable, "-m", "showwork", "report", trials, "--score", "score", "--runtime", "runtime_s",
        "--group", "family", "--a", "0", "--b", "1", "--target", "0.8", "--out", out, "--no-mlflow",
    ]


def _timed_run(trials: str, out: str, cache: str, command=_command) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system) and peak memory (GB) of one fresh ``showwork report`` process.

    The CPU time tells a slow machine from a slow report: on a machine shared with other work the
    wall time grows with the load, the CPU time hardly (the report runs on one core). The memory is
    the process's maximum resident set, from ``wait4`` on that process alone.
    """
    env = dict(os.environ, SHOWWORK_CACHE_DIR=cache, MLFLOW_DISABLE_TELEMETRY="true", PYTHONPATH=REPO_ROOT)
    with tempfile.TemporaryFile("w+") as stderr:
        start = time.perf_counter()
        process = subprocess.Popen(command(trials, out), env=env, stdout=subprocess.DEVNULL, stderr=stderr, text=True)
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            stderr.seek(0)
            sys.exit(f"showwork report failed ({process.returncode}):\n{stderr.read()}")
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024 / 1e9  # ru_maxrss: KiB on Linux


def _row(case: str, runs: list[tuple[float, float, float]], target: float, target_text: str,
         memory_target_gb: float | None = None) -> dict:
    wall = [w for w, _, _ in runs]
    median = statistics.median(wall)
    cpu = statistics.median(c for _, c, _ in runs)
    peak = max(m for _, _, m in runs)
    spread = f" ({min(wall):.2f}–{max(wall):.2f})" if len(wall) > 1 else ""
    met = median <= target and (memory_target_gb is None or peak <= memory_target_gb)
    return {"case": case, "showwork_s": median, "cpu_s": cpu, "peak_gb": peak,
            "display": f"{median:.2f} s{spread}, CPU {cpu:.2f} s, peak {peak:.2f} GB",
            "reference_s": target, "ratio": median / target, "met": met, "target": target_text}


def _stages(trials: str, out: str) -> dict[str, float]:
    """Stage times in this process (the cache is warm by now)."""
    from showwork.report import ReportSettings, analyze, from_results_file
    from showwork.report.checklist import build_checklist
    from showwork.report.document import report_document, report_json
    from showwork.report.figures import report_figures
    from showwork.report.latex import latex_snippets
    from showwork.report.render import html_document, markdown_document

    times = {}
    start = time.perf_counter()
    families = from_results_file(trials, "score", runtime="runtime_s", group="family")
    times["read the file"] = time.perf_counter() - start
    start = time.perf_counter()
    report = analyze(families, ReportSettings(a=0.0, b=1.0, targets=(0.8,)))
    times["analyze (every number)"] = time.perf_counter() - start
    start = time.perf_counter()
    figures = report_figures(report, os.path.join(out, "figures"))
    times["figures (png, svg, pdf)"] = time.perf_counter() - start
    start = time.perf_counter()
    checklist = build_checklist(report)
    doc = report_document(report, figures, checklist)
    markdown_document(doc, __import__("pathlib").Path(out))
    html_document(doc)
    latex_snippets(doc.tables)
    json.dumps(report_json(report, checklist))
    times["tables, checklist, documents"] = time.perf_counter() - start
    return times


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials-per-family", type=int, default=2500)
    parser.add_argument("--groups", default=None, metavar="LIST",
                        help="comma list of family counts for the many-family cases (default 50,300,1000,10000; --quick: 50; 0: none)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="one repeat of each (CI smoke test)")
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args(argv)
    repeats = 1 if args.quick else max(1, args.repeats)
    groups = [int(g) for g in (args.groups or ("50" if args.quick else "50,300,1000,10000")).split(",") if int(g) > 0]

    with tempfile.TemporaryDirectory(prefix="showwork-bench-report-") as tmp:
        trials = os.path.join(tmp, "trials.csv")
        n = write_trials(trials, args.trials_per_family)
        cold, warm = [], []
        for r in range(repeats):
            cache = os.path.join(tmp, f"cache-{r}")
            cold.append(_timed_run(trials, os.path.join(tmp, f"out-cold-{r}"), cache))
            warm.append(_timed_run(trials, os.path.join(tmp, f"out-warm-{r}"), cache))
        grouped = {}
        for g in groups:
            path = os.path.join(tmp, f"groups-{g}.csv")
            write_groups(path, g)
            grouped[g] = [
                _timed_run(path, os.path.join(tmp, f"out-groups-{g}-{r}"), os.path.join(tmp, f"cache-groups-{g}-{r}"), _group_command)
                for r in range(repeats)
            ]
        sys.path.insert(0, REPO_ROOT)
        os.environ["SHOWWORK_CACHE_DIR"] = os.path.join(tmp, "cache-0")
        stages = _stages(trials, os.path.join(tmp, "out-stages"))

    rows = [
        _row(f"`showwork report`, {n:,} trials ({args.trials_per_family:,} × 4 families), cold cache", cold, TARGET_S, f"< {TARGET_S:.0f} s"),
        _row("same, warm cache", warm, TARGET_S, f"< {TARGET_S:.0f} s"),
    ]
    for g, runs in grouped.items():
        target = GROUP_TARGETS_S.get(g, 60.0)
        case = f"`showwork report --group`, {g:,} families × {GROUP_ROWS} trials, png + svg + pdf, cold cache"
        rows.append(_row(case, runs, target, f"≤ {target:.0f} s, ≤ {GROUP_MEMORY_TARGET_GB:.0f} GB", GROUP_MEMORY_TARGET_GB))
    print("| case | showwork | reference | ratio | target | met |\n|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['case']} | {row['display']} | {row['reference_s']:.0f} s (target) | {row['ratio']:.2f} | {row['target']} | {'yes' if row['met'] else 'no'} |")
    print("\nStages (one process, warm cache):\n\n| stage | time |\n|---|---|")
    for stage, seconds in stages.items():
        print(f"| {stage} | {seconds:.2f} s |")
    load = f", load average {os.getloadavg()[0]:.1f} at the end" if hasattr(os, "getloadavg") else ""
    print(f"\nMedian of {repeats} fresh process(es) each (wall time; CPU = user + system of the process; peak = the"
          f" largest maximum resident set of the runs); ratio = wall time / target; met: wall time (and, for the"
          f" many-family cases, peak memory) within the target. Machine: {os.cpu_count()} CPUs{load},"
          f" Python {sys.version.split()[0]}.")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"rows": rows, "stages": stages, "trials": n, "repeats": repeats}, handle, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

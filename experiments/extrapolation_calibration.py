"""The goodness-of-fit test of extrapolated tuning curves: its critical values, size and power, by simulation.

:func:`showwork.statistics.extrapolate` refuses when the censored Anderson–Darling statistic of the
tail (the best half of the trials) under the *fitted* noisy-quadratic law exceeds a critical value
that depends on n, ``showwork.constants.EXTRAPOLATION_GOF_CRITICAL_VALUES``. The law is fitted to the same scores, so the statistic's null
law is not the textbook one, and the null hypothesis is composite (any gamma, any noise): this study
simulates the statistic, through :func:`showwork.statistics.extrapolation.tail_statistic` (the same
tail, consonance set and fit as ``extrapolate``), and the critical value at n is the largest 95th
percentile over the laws tried.

What is simulated.

- Null laws: ``NoisyQuadratic(0, 1, gamma, sigma)`` (scale 1) for gamma in ``GAMMAS`` and sigma in
  ``SIGMAS`` (no noise to noise as large as the scale), at n in ``SIZES``. Stage 1 draws
  ``SCREEN_REPLICATES`` samples of every law; stage 2 tops up to ``WORST_REPLICATES`` the laws whose
  95th percentile came within ``TOP_UP_MARGIN`` of the largest at that n (always gamma = 1 and 10
  without noise, the worst cases found before); the laws clearly below keep fewer replicates. The
  distribution-free 95 % interval of each 95th percentile is written beside it (about ±0.06 at 400
  samples: the ±0.02 once aimed at would take about 4,000 per law). At ``LARGE_SIZES`` only the stage-2 laws of the largest calibrated n are run.
- Power at n = ``POWER_SIZE``: a gap (gamma = 3, the best 15 % of scores 0.5 higher), a t(3) tail
  and a top atom (gamma = 3, the best 20 % tied at the 80th percentile), ``POWER_REPLICATES`` each;
  the rejection rate counts the refusals before the test (no consonant law, no fit) as rejections.

The statistic is None where ``extrapolate`` refuses before the test; the percentiles are over the
samples that reach it (the size is then the conditional rejection rate of the test). Every sample
has its own seed, ``default_rng([seed, law, n, replicate])``, so the numbers do not depend on
``--workers`` or on the staging. The output, ``extrapolation_calibration.json`` (and a CSV of the
same rows), is what that constant is read from: a unit test checks that they agree.

Run: ``python -m experiments.extrapolation_calibration [--quick] [--workers W] [--seed S] [--out DIR]``.
"""

from __future__ import annotations

import csv
import json
import math
import sys
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import stats

from experiments.common import output_directory, study_parser
from showwork.statistics import NoisyQuadratic, tuning_curve
from showwork.statistics.extrapolation import gof_critical_value, tail_statistic

STUDY = "extrapolation_calibration"
LEVEL = 0.05  # the test's level: EXTRAPOLATION_GOF_LEVEL
GAMMAS = (1.0, 2.0, 3.0, 5.0, 10.0)
SIGMAS = (0.0, 0.1, 1.0)  # relative to the scale 1 of the law
WORST_LAWS = ((1.0, 0.0), (10.0, 0.0))  # always topped up: the worst cases of the earlier runs
SIZES = {True: (24,), False: (24, 48, 96, 192)}
LARGE_SIZES = {True: (), False: (384,)}
SCREEN_REPLICATES = {True: 6, False: 60}
WORST_REPLICATES = {True: 10, False: 400}
LARGE_REPLICATES = {True: 0, False: 200}
TOP_UP_MARGIN = 0.1
POWER_SIZE = 48
POWER_REPLICATES = {True: 4, False: 200}
ALTERNATIVES = ("gap", "t3", "top atom")
QUICK_GAMMAS = (1.0, 10.0)
QUICK_SIGMAS = (0.0,)


def law_name(gamma: float, sigma: float) -> str:
    return f"gamma={gamma:g} sigma={sigma:g}"


def draw(law: str, n: int, rng: np.random.Generator) -> NDArray[np.float64]:
    """n scores of a null law (``law_name``) or an alternative (``ALTERNATIVES``)."""
    if law == "gap":
        y = NoisyQuadratic(0.0, 1.0, 3.0, 0.0).sample(n, rng)
        return np.where(y > np.quantile(y, 0.85), y + 0.5, y)
    if law == "t3":
        return rng.standard_t(3.0, n)
    if law == "top atom":
        y = NoisyQuadratic(0.0, 1.0, 3.0, 0.0).sample(n, rng)
        return np.minimum(y, np.quantile(y, 0.8))
    gamma_part, sigma_part = law.split()
    return NoisyQuadratic(0.0, 1.0, float(gamma_part[6:]), float(sigma_part[6:])).sample(n, rng)


@dataclass(frozen=True)
class Task:
    law: str
    law_id: int
    n: int
    start: int
    stop: int
    seed: int


def simulate(task: Task) -> list[float | None]:
    """The statistic for replicates start..stop-1 of (law, n), each from its own seed."""
    out: list[float | None] = []
    for replicate in range(task.start, task.stop):
        rng = np.random.default_rng([task.seed, task.law_id, task.n, replicate])
        out.append(tail_statistic(tuning_curve(draw(task.law, task.n, rng))))
    return out


def run_tasks(tasks: list[Task], workers: int) -> list[list[float | None]]:
    if workers <= 1:
        return [simulate(task) for task in tasks]
    with ProcessPoolExecutor(workers) as pool:
        return list(pool.map(simulate, tasks, chunksize=1))


def split(law: str, law_id: int, n: int, start: int, stop: int, seed: int, chunk: int = 20) -> list[Task]:
    return [Task(law, law_id, n, i, min(i + chunk, stop), seed) for i in range(start, stop, chunk)]


def percentile_row(law: str, n: int, values: list[float | None]) -> dict[str, object]:
    """The 95th percentile of the statistics that reached the test, with its distribution-free 95 % interval."""
    reached = np.sort([v for v in values if v is not None])
    m = reached.size
    row: dict[str, object] = {"law": law, "n": n, "replicates": len(values), "reached_test": int(m)}
    if m == 0:
        return row | {"p95": None, "p95_low": None, "p95_high": None}
    p95 = float(np.quantile(reached, 1 - LEVEL))
    # The 95th percentile lies between these order statistics with probability >= 0.95 (binomial ranks).
    low_rank, high_rank = (int(stats.binom.ppf(p, m, 1 - LEVEL)) for p in (0.025, 0.975))
    low = float(reached[max(low_rank - 1, 0)])
    high = float(reached[high_rank]) if high_rank < m else None
    return row | {"p95": p95, "p95_low": low, "p95_high": high}


def critical_values(rows: list[dict[str, object]]) -> list[tuple[int, float]]:
    """Per n, the largest 95th percentile over the null laws, rounded up to 0.01: ``EXTRAPOLATION_GOF_CRITICAL_VALUES``."""
    by_n: dict[int, float] = {}
    for row in rows:
        if row["p95"] is not None:
            by_n[int(row["n"])] = max(by_n.get(int(row["n"]), 0.0), float(row["p95"]))
    return [(n, math.ceil(value * 100 - 1e-9) / 100) for n, value in sorted(by_n.items())]


def run(quick: bool, seed: int = 0, workers: int = 1) -> dict[str, object]:
    gammas, sigmas = (QUICK_GAMMAS, QUICK_SIGMAS) if quick else (GAMMAS, SIGMAS)
    laws = [law_name(g, s) for g in gammas for s in sigmas]
    law_ids = {law: i for i, law in enumerate(laws + list(ALTERNATIVES))}
    worst = {law_name(g, s) for g, s in WORST_LAWS}
    started = time.time()
    values: dict[tuple[str, int], list[float | None]] = {}

    def extend(plan: list[tuple[str, int, int]]) -> None:
        tasks = [t for law, n, stop in plan for t in split(law, law_ids[law], n, len(values.get((law, n), [])), stop, seed)]
        for task, result in zip(tasks, run_tasks(tasks, workers)):
            values.setdefault((task.law, task.n), []).extend(result)
        print(f"{STUDY}: {sum(map(len, values.values()))} samples, {time.time() - started:.0f} s", file=sys.stderr, flush=True)

    sizes = SIZES[quick]
    extend([(law, n, SCREEN_REPLICATES[quick]) for n in sizes for law in laws])  # stage 1: every law
    top_up = []
    for n in sizes:
        screened = {law: percentile_row(law, n, values[(law, n)])["p95"] for law in laws}
        largest = max((p for p in screened.values() if p is not None), default=0.0)
        chosen = [law for law, p in screened.items() if law in worst or (p is not None and p >= largest - TOP_UP_MARGIN)]
        top_up += [(law, n, WORST_REPLICATES[quick]) for law in chosen]
    extend(top_up)  # stage 2: the laws near the maximum
    last = [law for law, n, _ in top_up if n == sizes[-1]]
    extend([(law, n, LARGE_REPLICATES[quick]) for n in LARGE_SIZES[quick] for law in last])
    null_rows = [percentile_row(law, n, v) for (law, n), v in sorted(values.items(), key=lambda item: (item[0][1], item[0][0]))]
    critical = critical_values(null_rows)
    for row in null_rows:
        reached = [v for v in values[(str(row["law"]), int(row["n"]))] if v is not None]
        crit = gof_critical_value(int(row["n"]), critical)
        row["size"] = float(np.mean(np.array(reached) > crit)) if reached else None

    power_rows = []
    if quick or POWER_SIZE in sizes:
        plan = [(alt, POWER_SIZE, POWER_REPLICATES[quick]) for alt in ALTERNATIVES]
        extend(plan)
        crit = gof_critical_value(POWER_SIZE, critical)
        for alt in ALTERNATIVES:
            v = values[(alt, POWER_SIZE)]
            refused_before = sum(x is None for x in v)
            rejected = refused_before + sum(x is not None and x > crit for x in v)
            power_rows.append(
                {"alternative": alt, "n": POWER_SIZE, "replicates": len(v), "refused_before_test": refused_before,
                 "rejected": rejected, "power": rejected / len(v), "critical": crit}
            )
    return {
        "study": STUDY,
        "quick": quick,
        "seed": seed,
        "level": LEVEL,
        "tail_fraction": "default (EXTRAPOLATION_TAIL_FRACTION)",
        "critical_values": [[n, c] for n, c in critical],
        "beyond": "past the largest calibrated n its value; between the calibrated n, linear in log n",
        "null": null_rows,
        "power": power_rows,
        "seconds": round(time.time() - started, 1),
    }


def write(result: dict[str, object], directory) -> list:
    directory.mkdir(parents=True, exist_ok=True)
    json_path = directory / f"{STUDY}.json"
    json_path.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    csv_path = directory / f"{STUDY}.csv"
    rows = list(result["null"]) + list(result["power"])
    columns = list(dict.fromkeys(key for row in rows for key in row))
    with csv_path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    return [json_path, csv_path]


def main(argv: Sequence[str] | None = None) -> int:
    parser = study_parser(STUDY, __doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=1, help="processes (default 1)")
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error(f"--workers must be at least 1 (got {args.workers}).")
    for path in write(run(args.quick, args.seed, args.workers), output_directory(STUDY, args)):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())

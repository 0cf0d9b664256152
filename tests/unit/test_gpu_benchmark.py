"""benchmarks/gpu.py without a GPU (issue 36 item 1): what NVML does not report, the budget planned before
anything starts, the warm-up, the energy over ``runtime_s``; and the GPU packing page's table and energy
figures, recomputed from the stored H100 measurement (its JSON, ledgers and NVML timeline)."""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
import tarfile
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import pytest

from showwork.store import Ledger

from helpers import import_blocker, search_process_environment

REPO = Path(__file__).resolve().parents[2]
MEASURED = REPO / "docs" / "measurements" / "gpu-h100-2026-11-26"
PAGE = REPO / "docs" / "how-to" / "gpu-packing.md"

sys.path.insert(0, str(REPO / "benchmarks"))
try:
    import gpu
finally:
    sys.path.remove(str(REPO / "benchmarks"))


# ---------------------------------------------------------------- what NVML does not report


def sample(t: float, utilization: float, processes: dict | None = None) -> gpu.Sample:
    return gpu.Sample(t, utilization, 3 * 2**30, 0.0, processes or {})


def test_zero_utilisation_and_no_process_while_memory_is_held_are_not_reported_not_zero():
    silent = [sample(t, 0.0) for t in range(5)]  # an H200 (driver 580) while a trial held 2 GiB
    assert gpu.nvml_gaps(silent, memory_held=True) == ["utilization", "process_memory"]
    assert gpu.nvml_gaps(silent, memory_held=False) == []  # an idle GPU: 0 % and no process are the truth
    busy = [sample(0, 0.0), sample(1, 35.0, {123: 2.0 * 2**30})]
    assert gpu.nvml_gaps(busy, memory_held=True) == []
    family = {"family": "mlp", "rows": [{
        "packing": 1.0, "concurrency": 1, "trials": 2, "finished": 2, "stopped": False, "per_hour_phase": 100.0,
        "per_hour_command": 50.0, "utilization_median": None, "torch_reserved_max": 2 * 2**30, "process_memory_max": None,
        "oom": 0, "idle_s": 0.5, "energy_j_recorded": 10.0, "energy_j_runtime": 9.0, "energy_j_device": 12.0,
        "scores_vs_one": {"common": 2, "max_abs_diff": 0.0}, "nvml_not_reported": ["utilization", "process_memory"]}]}
    (line,) = gpu.table_rows(family)
    assert "| not reported by NVML | 2,048 MiB / not reported by NVML |" in line and "0 %" not in line
    assert "| 10 J / 9 J / 12 J |" in line


# ---------------------------------------------------------------- the energy over runtime_s, from the timeline


def test_the_energy_over_runtime_s_is_the_counters_growth_over_that_span_times_the_share():
    timeline = [(100.0 + t, 1000.0 * 200.0 * t) for t in range(0, 21)]  # 200 W, a sample a second
    record = SimpleNamespace(index=3, status="finished", started_at="1970-01-01T00:01:42.500000+00:00", runtime_s=10.0)
    assert gpu.counter_at(timeline, 102.5) == pytest.approx(500_000.0)
    assert gpu.counter_at(timeline, 99.0) is None and gpu.counter_at(timeline, 121.0) is None
    # 10 s at 200 W, a quarter of the GPU held: 500 J
    assert gpu.runtime_energies_j([record], timeline, 0.25) == {3: pytest.approx(500.0)}
    late = SimpleNamespace(index=4, status="finished", started_at="1970-01-01T00:01:55+00:00", runtime_s=10.0)
    failed = SimpleNamespace(index=5, status="failed", started_at="1970-01-01T00:01:42+00:00", runtime_s=1.0)
    assert gpu.runtime_energies_j([late, failed], timeline, 1.0) == {}  # past the timeline's end; not finished


# ---------------------------------------------------------------- the budget, planned before anything starts


def test_the_budget_is_split_by_what_each_search_needs_and_says_how_many_trials_finish():
    searches = [("deberta", 1.0), ("deberta", 0.25), ("mlp", 1.0)]
    times = {"deberta": 10.0, "mlp": 5.0}
    needed = gpu.budget_needed_s(searches, 16, 16, times)
    assert needed == pytest.approx(3 * gpu.STARTUP_S + 16 * (10 + 10 + 5))
    plans = gpu.plan_searches(needed, searches, 16, times)
    assert [p.at_least for p in plans] == [16, 16, 16]
    assert plans[0].share_s == pytest.approx(gpu.STARTUP_S + 160) and plans[2].share_s == pytest.approx(gpu.STARTUP_S + 80)
    assert [p.at_least for p in gpu.plan_searches(needed / 2, searches, 16, times)] == [
        math.floor((gpu.search_need_s(16, t) / 2 - gpu.STARTUP_S) / t) for t in (10, 10, 5)]
    enough_for_8 = gpu.budget_needed_s(searches, 16, 8, times)
    assert min(p.at_least for p in gpu.plan_searches(enough_for_8, searches, 16, times)) == 8
    assert min(p.at_least for p in gpu.plan_searches(enough_for_8 - 5, searches, 16, times)) < 8
    unknown = gpu.plan_searches(300.0, searches, 16, {})  # no trial time: equal shares, nothing estimated
    assert [p.share_s for p in unknown] == [100.0] * 3 and {p.at_least for p in unknown} == {None}


def test_the_trial_times_it_assumes_are_the_h100_runs():
    deberta = json.loads((MEASURED / "gpu2.json").read_text())["families"][0]["rows"][0]
    mlp = json.loads((MEASURED / "gpu.json").read_text())["families"][1]["rows"][0]
    assert deberta["packing"] == mlp["packing"] == 1.0
    assert gpu.H100_TRIAL_S == {"deberta": round(deberta["phase_s"] / deberta["finished"], 1),
                                "mlp": round(mlp["phase_s"] / mlp["finished"], 1)}
    overheads = [row["wall_s"] - row["phase_s"] for name in ("gpu.json", "gpu2.json")
                 for family in json.loads((MEASURED / name).read_text())["families"] for row in family["rows"]]
    assert max(overheads) <= gpu.STARTUP_S < max(overheads) + 1


def test_a_budget_too_small_for_its_trials_is_refused_up_front_with_the_budget_that_suffices(tmp_path):
    # issue 36: --budget-s 300 on an H200 gave each search 30-46 s, 1-3 trials, none for the MLP at 1/4
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "gpu.py"), "--device", "cuda", "--budget-s", "300"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path, env=search_process_environment())
    assert done.returncode == 2 and done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    searches = [(family, packing) for family in gpu.FAMILIES for packing in gpu.DEFAULT_PACKINGS]
    needed = math.ceil(gpu.budget_needed_s(searches, 16, 16, gpu.H100_TRIAL_S))
    assert line.startswith("benchmarks/gpu.py: error: --budget-s 300 is too small: ") and "16 must finish" in line
    assert f"give --budget-s {needed} or more" in line
    args = gpu.parse_args(["--device", "cuda"])  # without --budget-s: the budget the plan needs
    assert gpu.plan_budget(args) is None and args.budget_s == pytest.approx(needed, abs=1)
    assert "at least 16 (deberta at 1), 16 (deberta at ½), 16 (deberta at ¼), 16 (mlp at 1)" in args.plan_note
    args = gpu.parse_args(["--device", "cuda", "--budget-s", "300", "--min-trials", "0"])
    assert gpu.plan_budget(args) is None and "at least 1 (deberta at 1)" in args.plan_note  # said up front
    page = " ".join(PAGE.read_text().split())
    assert f"`--budget-s 300` needs {needed:,} s for 16 trials of both families" in page
    assert (f"the H100's {gpu.H100_TRIAL_S['deberta']:g} s and {gpu.H100_TRIAL_S['mlp']:g} s) and {gpu.STARTUP_S:g} s of "
            "start-up per search") in page
    smoke = gpu.parse_args(["--device", "cpu", "--smoke"])
    assert gpu.plan_budget(smoke) is None and smoke.budget_s == gpu.DEFAULT_BUDGET_S
    assert "not estimated" in smoke.plan_note


# ---------------------------------------------------------------- the warm-up


@pytest.mark.slow  # imports torch, transformers, Ray and MLflow twice: about 10 s
def test_the_warm_up_imports_modules_that_exist_and_a_failed_one_stops_the_run(tmp_path):
    assert all(importlib.util.find_spec(name) is not None for name in gpu.WARM_UP_MODULES)  # showwork.search was none
    blocker = import_blocker(tmp_path / "blocker", "name == 'showwork_models.mlp'", "'blocked here'")
    env = search_process_environment(PYTHONPATH=str(blocker))
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "gpu.py"), "--device", "cpu", "--smoke", "--families", "mlp"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    (line,) = [line for line in done.stderr.splitlines() if not line.startswith("[gpu] ")]
    assert line.startswith("benchmarks/gpu.py: error: importing what a search imports (torch, ")
    assert line.endswith("failed: ModuleNotFoundError: blocked here")


# ---------------------------------------------------------------- the GPU packing page, from the stored measurement


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> dict:
    """The page's rows (DeBERTa from the second run, the MLP from the first), each with its records and the
    energy over runtime_s recomputed from the run's NVML timeline."""
    families = {}
    for family, run, ledgers in (("deberta", "gpu2.json", "ledgers2.tgz"), ("mlp", "gpu.json", "ledgers.tgz")):
        report = json.loads((MEASURED / run).read_text())
        timeline = [(t, mj) for t, _, _, mj in report["samples"] if mj is not None]
        folder = tmp_path_factory.mktemp(family)
        with tarfile.open(MEASURED / ledgers) as archive:
            # tarfile's filters came with Python 3.11.4; CI's Debian Python 3.11.2 lacks them (our own archive).
            archive.extractall(folder, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
        entry = next(f for f in report["families"] if f["family"] == family)
        for row in entry["rows"]:
            name = f"gpu-{family}-{str(row['packing']).replace('.', 'p')}"
            row["records"] = [r for r in Ledger(folder / name / "runs", name).records() if r.status == "finished"]
            row["runtime_j"] = gpu.runtime_energies_j(row["records"], timeline, row["packing"])
            row["energy_j_runtime"] = sum(row["runtime_j"].values()) / len(row["runtime_j"])
        families[family] = entry
    return families


def test_the_pages_table_is_what_the_benchmark_prints_from_the_stored_runs(stored):
    table = "\n".join([*gpu.TABLE_HEADER, *gpu.table_rows(stored["deberta"]), *gpu.table_rows(stored["mlp"])])
    assert table in PAGE.read_text()
    stopped = [(f, r["packing"]) for f in ("deberta", "mlp") for r in stored[f]["rows"] if r["stopped"]]
    assert stopped == [("deberta", 1.0), ("deberta", 0.5), ("mlp", 1.0), ("mlp", 0.5), ("mlp", 0.25)]
    # the recorded energy is the timeline's over each trial's set-up and runtime_s: the reconstruction holds
    for family in stored.values():
        for row in family["rows"]:
            assert len(row["runtime_j"]) == row["finished"] == len(row["records"])


def reduction(recorded: list[float], over_runtime: list[float]) -> float:
    return 100 * (1 - sum(over_runtime) / sum(recorded))


def test_the_pages_energy_figures_are_recomputed_from_the_stored_timeline(stored):
    text = " ".join(PAGE.read_text().split())
    means, firsts = {}, {}
    for name, family in stored.items():
        means[name] = [reduction([r.gpu_energy_j for r in row["records"]], [row["runtime_j"][r.index] for r in row["records"]])
                       for row in family["rows"]]
        # a worker's first trial: the one with seconds of set-up (it imported the family; later ones take none)
        firsts[name] = [reduction([r.gpu_energy_j], [row["runtime_j"][r.index]]) for row in family["rows"]
                        for r in row["records"] if r.setup_s > 1.0]
    every = means["deberta"] + means["mlp"]
    notes = " ".join((MEASURED / "README.md").read_text().split())
    for page in (text, notes):
        assert f"by {min(every):.0f}–{max(every):.0f} %" in page
        for name, label in (("deberta", "DeBERTa"), ("mlp", "MLP")):
            assert f"{label} {min(means[name]):.0f}–{max(means[name]):.0f} %" in page
            assert f"{min(firsts[name]):.0f}–{max(firsts[name]):.0f} % for {label}" in page
    # the recorded span (set-up and runtime_s, until the record was built: about finished_at) from the same timeline
    for name, run in (("deberta", "gpu2.json"), ("mlp", "gpu.json")):
        timeline = [(t, mj) for t, _, _, mj in json.loads((MEASURED / run).read_text())["samples"] if mj is not None]
        for row in stored[name]["rows"]:
            for r in row["records"]:
                began = datetime.fromisoformat(r.started_at).timestamp() - r.setup_s
                spanned = gpu.counter_at(timeline, datetime.fromisoformat(r.finished_at).timestamp()) - gpu.counter_at(timeline, began)
                assert spanned / 1000 * row["packing"] == pytest.approx(r.gpu_energy_j, rel=0.04)
    assert "`gpu_energy_j` within 4 %" in notes
    finished_everywhere = {name: min(row["finished"] for row in family["rows"]) for name, family in stored.items()}
    assert finished_everywhere == {"deberta": 5, "mlp": 5}
    assert {row["finished"] for family in stored.values() for row in family["rows"] if row["packing"] < 1} == {8}
    assert "the packed ones finished 8" in text
    assert "5 trials per family finished at every packing" in text and "single runs" in text

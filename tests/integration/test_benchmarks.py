"""Smoke tests: the benchmarks still run end to end and its targets are wired up.

The benchmark itself (`make bench`) is what checks speed and memory; this only keeps it working.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import import_blocker, search_process_environment

REPO = Path(__file__).resolve().parents[2]


def run_benchmark(script: str, folder: Path, *argv: str, timeout: int = 600) -> subprocess.CompletedProcess:
    """``python benchmarks/SCRIPT ARGV`` in ``folder``, with the tests' data folder; it must exit 0."""
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / script), *argv], capture_output=True, text=True,
                          timeout=timeout, cwd=folder, env=search_process_environment())
    assert done.returncode == 0, done.stderr[-2000:]
    return done


@pytest.mark.slow
@pytest.mark.integration
def test_stats_benchmark_runs_and_prints_its_table(tmp_path):
    done = run_benchmark("stats.py", tmp_path, "--quick", "--opda-max-n", "48", "--json", str(tmp_path / "bench.json"))
    assert "| case | showwork | opda 0.8.0 | ratio | target | met |" in done.stdout
    assert "LD-HD band, cold, n=4,096" in done.stdout
    assert "CLI `showwork curve` (default options), 100,000 rows, cold cache" in done.stdout  # issue 14 item 11
    assert (tmp_path / "bench.json").stat().st_size > 0


@pytest.mark.slow
@pytest.mark.integration
def test_search_benchmark_runs_and_prints_its_table(tmp_path):
    done = run_benchmark("search.py", tmp_path, "--quick", "--json", str(tmp_path / "bench.json"))
    assert ("| case | showwork (Ray Tune + MLflow + ledger) | plain Ray Tune | process pool (2 workers) | sequential |"
            in done.stdout)
    assert "12 x 0.5 s: wall time, process spawned -> exited" in done.stdout and "showwork <= 10 %" not in done.stdout
    # issue 35 item 9: one report per trial beside five, and the table of ratios and times between two trials
    assert "12 x 0.02 s, 1 report: wall time, process spawned -> exited" in done.stdout
    assert ("| case | reports per trial | showwork | plain Ray Tune | ratio | between two trials of a worker: showwork / "
            "Ray Tune | target | met |") in done.stdout
    comparison = json.loads((tmp_path / "bench.json").read_text())["comparison"]
    assert [(row["case"], row["reports"]) for row in comparison] == [("12 x 0.5 s", 5), ("12 x 0.02 s", 1)]
    assert all(row["wall_vs_raytune"] > 0 and row["between_trials_showwork_s"] > 0 for row in comparison)
    assert "| isolation per trial: the same trial" in done.stdout  # issue 23 item 6: what a trial's own process costs
    assert "12 x 0.5 s: `showwork search` on a terminal" in done.stdout  # issue 26 item 2: the live table's cost
    live = json.loads((tmp_path / "bench.json").read_text())["live"]
    assert live["median"]["live"]["total_s"] > 0 and live["median"]["live"]["bytes"] > live["median"]["plain"]["bytes"]
    isolation = json.loads((tmp_path / "bench.json").read_text())["isolation"]
    assert isolation["n"] >= 20 and isolation["forked"]["median_s"] > 0 and isolation["restore"]["median_s"] > 0


@pytest.mark.slow
@pytest.mark.integration
def test_report_benchmark_runs_and_prints_its_table(tmp_path):
    done = run_benchmark("report.py", tmp_path, "--quick", "--trials-per-family", "300", "--json", str(tmp_path / "bench.json"))
    assert "| case | showwork | reference | ratio | target | met |" in done.stdout
    assert "1,200 trials (300 × 4 families), cold cache" in done.stdout
    assert (tmp_path / "bench.json").stat().st_size > 0


@pytest.mark.slow
@pytest.mark.integration
def test_families_benchmark_runs_and_prints_its_table(tmp_path):
    # Real trials of the cheap families (numpy, scikit-learn, a torch MLP) on small training sets; BCN
    # reports a missing .venv-bcn in its row instead of failing. --gpu-fractions gives the fractions the
    # suggestion picks from; the throughput of packed trials is benchmarks/gpu.py's (issue 28).
    import json

    done = run_benchmark("families.py", tmp_path, "--quick", "--families", "bow_sst2,logreg,mlp",
                         "--gpu-fractions", "1,0.5,0.25", "--json", str(tmp_path / "bench.json"))
    assert "| family | space | trials | caps | median / max peak RSS | median / max peak GPU memory |" in done.stdout
    report = json.loads((tmp_path / "bench.json").read_text())
    rows = {row["family"]: row for row in report["rows"]}
    assert set(rows) == {"bow_sst2", "logreg", "mlp"}
    for row in rows.values():
        assert [t["status"] for t in row["trials"]] == ["finished"], row["trials"]
        assert row["trials"][0]["peak_rss_kib"] > 0 and row["trials"][0]["trial_s"] > 0
    assert rows["mlp"]["trials"][0]["parameters"] > 0
    assert rows["logreg"]["suggestion"] == "0 (CPU only)"
    if report["gpu"] is None:
        assert "| mlp | `reuters_mlp.yaml` |" in done.stdout and "needs a GPU run" in done.stdout
        assert "the throughput of packed trials: `python benchmarks/gpu.py`" in done.stdout


def test_families_benchmark_reports_a_missing_bcn_environment(tmp_path):
    # The BCN row says what is missing rather than failing (only where .venv-bcn is absent).
    import importlib.util

    if (REPO / ".venv-bcn" / "bin" / "python").exists() or importlib.util.find_spec("allennlp") is not None:
        pytest.skip("the BCN environment exists here")
    done = run_benchmark("families.py", tmp_path, "--quick", "--families", "bcn", timeout=120)
    assert "| bcn | `sst2_bcn.yaml` | 0 |" in done.stdout and "not run: needs .venv-bcn" in done.stdout


# --- benchmarks/gpu.py (issue 28) --------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.integration
def test_gpu_benchmark_runs_its_path_on_the_cpu(tmp_path):
    # `--device cpu --smoke`: the same showwork searches at 1, 1/2 and 1/4 GPU per trial, Ray told of one
    # GPU it does not have (so it packs the trials), NVML a stand-in, the trainables on the CPU.
    import json

    done = run_benchmark("gpu.py", tmp_path, "--device", "cpu", "--smoke", "--json", str(tmp_path / "gpu.json"),
                         "--markdown", str(tmp_path / "gpu.md"), timeout=900)
    assert "| family | GPU per trial | trials at once | finished (failed) | trials / hour: trials phase (command) |" in done.stdout
    report = json.loads((tmp_path / "gpu.json").read_text())
    assert [f["family"] for f in report["families"]] == ["deberta", "mlp"]
    for family in report["families"]:
        rows = family["rows"]
        assert [(r["packing"], r["concurrency"]) for r in rows] == [(1.0, 1), (0.5, 2), (0.25, 4)]
        for row in rows:
            assert row["finished"] == row["trials"] == 2 and row["oom"] == 0 and row["per_hour_phase"] > 0, row
            # every trial's energy was recorded through the stand-in NVML (100 W), a share of it when packed
            assert row["energy_recorded_trials"] == 2 and row["energy_j_recorded"] > 0
        # seeded trials, deterministic on the CPU: the same scores at every packing
        assert all(r["scores_vs_one"]["max_abs_diff"] == 0.0 and r["scores_vs_one"]["common"] == 2 for r in rows[1:])
    assert (tmp_path / "gpu.md").read_text().strip() in done.stdout
    assert "identical (2 trials)" in done.stdout and "CPU mode (`--device cpu`)" in done.stdout


def test_gpu_benchmark_says_what_it_needs_and_exits_2_without_it(tmp_path):
    # A GPU machine may lack Ray and MLflow: the benchmark names what is missing before it starts.
    env = search_process_environment()
    blocker = import_blocker(tmp_path / "blocker", "name.split('.')[0] in ('ray', 'mlflow')", "name")
    env["PYTHONPATH"] = str(blocker)
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "gpu.py"), "--device", "cpu", "--smoke"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert done.returncode == 2, done.stderr
    assert "ray.tune: ray[tune]==2.60.0" in done.stderr and "mlflow: mlflow==3.17.2" in done.stderr
    assert done.stdout == ""


def test_gpu_benchmark_refuses_cuda_where_torch_sees_no_gpu(tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "gpu.py"), "--device", "cuda"], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path, env=search_process_environment())
    assert done.returncode == 2
    assert "torch sees no CUDA device" in done.stderr and "--device cpu --smoke" in done.stderr


def test_gpu_benchmark_counts_the_time_shares_sat_idle_between_trials():
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import gpu
    finally:
        sys.path.remove(str(REPO / "benchmarks"))
    # two shares: trials (0, 10) and (0, 10) start them; (11, 15) waits 1 s on a freed share, (12, 20) 2 s
    assert gpu.idle_between_trials([(0, 10), (0, 10), (12, 20), (11, 15)], 2) == 3.0
    # one share, back to back: nothing idle; the first trial's wait is start-up, not idle time
    assert gpu.idle_between_trials([(5, 6), (6, 7), (7, 8)], 1) == 0.0
    assert gpu.idle_between_trials([(5, 6), (8, 9)], 1) == 2.0

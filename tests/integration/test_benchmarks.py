"""Smoke tests: the benchmarks still run end to end and its targets are wired up.

The benchmark itself (`make bench`) is what checks speed and memory; this only keeps it working.
"""

import subprocess
import sys
from pathlib import Path

import pytest

from helpers import search_process_environment

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
    assert "| case | showwork (Ray + MLflow + ledger) | process pool (2 workers) | sequential |" in done.stdout
    assert (tmp_path / "bench.json").stat().st_size > 0


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
    # reports a missing .venv-bcn in its row instead of failing. Without a GPU, --gpu-fractions says
    # that it needs one and still exits 0 with the table.
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
        assert "--gpu-fractions 1,0.5,0.25: needs a GPU" in done.stdout


def test_families_benchmark_reports_a_missing_bcn_environment(tmp_path):
    # The BCN row says what is missing rather than failing (only where .venv-bcn is absent).
    import importlib.util

    if (REPO / ".venv-bcn" / "bin" / "python").exists() or importlib.util.find_spec("allennlp") is not None:
        pytest.skip("the BCN environment exists here")
    done = run_benchmark("families.py", tmp_path, "--quick", "--families", "bcn", timeout=120)
    assert "| bcn | `sst2_bcn.yaml` | 0 |" in done.stdout and "not run: needs .venv-bcn" in done.stdout

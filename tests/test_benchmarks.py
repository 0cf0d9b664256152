"""Smoke tests: the benchmarks still run end to end and its targets are wired up.

The benchmark itself (`make bench`) is what checks speed and memory; this only keeps it working.
"""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.slow
@pytest.mark.integration
def test_stats_benchmark_runs_and_prints_its_table(tmp_path):
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "stats.py"), "--quick", "--opda-max-n", "48",
         "--json", str(tmp_path / "bench.json")],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "| case | showwork | opda 0.8.0 | ratio | target | met |" in done.stdout
    assert "LD-HD band, cold, n=4,096" in done.stdout
    assert (tmp_path / "bench.json").stat().st_size > 0


@pytest.mark.slow
@pytest.mark.integration
def test_search_benchmark_runs_and_prints_its_table(tmp_path):
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "search.py"), "--quick", "--json", str(tmp_path / "bench.json")],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "| case | showwork (Ray + MLflow + ledger) | process pool (2 workers) | sequential |" in done.stdout
    assert (tmp_path / "bench.json").stat().st_size > 0


@pytest.mark.slow
@pytest.mark.integration
def test_report_benchmark_runs_and_prints_its_table(tmp_path):
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "report.py"), "--quick", "--trials-per-family", "300",
         "--json", str(tmp_path / "bench.json")],
        capture_output=True, text=True, timeout=600, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "| case | showwork | reference | ratio | target | met |" in done.stdout
    assert "1,200 trials (300 × 4 families), cold cache" in done.stdout
    assert (tmp_path / "bench.json").stat().st_size > 0

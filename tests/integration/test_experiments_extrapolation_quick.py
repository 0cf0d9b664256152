"""experiments/extrapolation.py (issue 38 item 4) in quick mode: it runs, its table has a row per case, and the worker count changes nothing.

The numbers of the full run are in experiments/README.md; one replicate per case says nothing
about coverage, so this test checks the plumbing: every case of the quick grid is tabled from its
own seeded replicates, and a replicate recomputed in this process equals the one the two worker
processes wrote.
"""

from __future__ import annotations

import csv
import json

import pytest

from experiments import extrapolation as study

pytestmark = [pytest.mark.slow, pytest.mark.integration]


def test_the_quick_mode_tables_every_case_and_does_not_depend_on_the_workers(tmp_path):
    assert study.main(["--quick", "--out", str(tmp_path), "--workers", "2"]) == 0
    quick = study.cases(quick=True)
    with (tmp_path / "extrapolation.csv").open(encoding="utf-8") as handle:
        table = list(csv.DictReader(handle))
    assert [row["case"] for row in table] == [c.key for c in quick]
    assert all(int(row["replicates"]) == study.QUICK_REPLICATES for row in table)
    assert {c.part for c in quick} == {"search", "law", "tail"}
    markdown = (tmp_path / "extrapolation.md").read_text(encoding="utf-8")
    for case in quick:
        assert f"| {case.label} |" in markdown or f"| {study.SEARCHES[case.source][2]} | {case.n} |" in markdown
    assert (tmp_path / "extrapolation.png").stat().st_size > 10_000

    lines = (tmp_path / study.records_path(tmp_path, 0).name).read_text(encoding="utf-8").splitlines()
    written = {(r["case"], r["replicate"]): r for r in map(json.loads, lines)}
    assert len(written) == len(quick) * study.QUICK_REPLICATES
    for case in (quick[0], quick[-1]):  # a search and a non-quadratic tail, recomputed here in one process
        again = study.run_replicate(case, 0, seed=0)
        before = written[(case.key, 0)]
        assert {k: v for k, v in again.items() if k != "seconds"} == {k: v for k, v in before.items() if k in again and k != "seconds"}

    # A rerun finds every replicate done and computes nothing: the table comes back the same.
    first = (tmp_path / "extrapolation.csv").read_text(encoding="utf-8")
    assert study.main(["--quick", "--out", str(tmp_path), "--workers", "1"]) == 0
    assert (tmp_path / "extrapolation.csv").read_text(encoding="utf-8") == first
    assert len((tmp_path / study.records_path(tmp_path, 0).name).read_text(encoding="utf-8").splitlines()) == len(lines)

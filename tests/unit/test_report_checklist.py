"""The reproducibility checklists of a report (showwork/report/checklist.py), from results files and ledgers."""

from __future__ import annotations

import dataclasses
import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from showwork.environment import collect_environment
from showwork.report import ReportSettings, analyze
from showwork.report.checklist import (
    ARR,
    DODGE,
    NEURIPS,
    NOT_RECORDED,
    ChecklistItem,
    build_checklist,
    checklist_tables,
)
from showwork.report.inputs import FamilyResults, from_ledger, from_results_file
from showwork.space import load_search_spec
from showwork.store import Ledger

from helpers import DEBERTA_RESULTS, DEBERTA_SCORE, REPO_ROOT, deberta_families, load_column, trial_record, write_search

NUMBERS = [(DODGE, str(i)) for i in range(1, 11)] + [(ARR, f"C{i}") for i in range(1, 5)] + [(NEURIPS, str(i)) for i in range(4, 9)]
SCORE = DEBERTA_SCORE
REMOTE = "https://example.com/lab/code.git"
SPLITS = {"train": 300, "dev": 500, "test": 872}
WORKER_PACKAGES = {"scikit-learn": "1.9.1", "ray": "2.60.0", "mlflow": "3.17.2", "showwork-tuning": "0.1.0"}


def item(items: tuple[ChecklistItem, ...], checklist: str, number: str) -> ChecklistItem:
    (found,) = [i for i in items if i.checklist == checklist and i.number == number]
    return found


def texts(found: ChecklistItem) -> list[str]:
    return [text for _, text in found.answers]


def assert_well_formed(items: tuple[ChecklistItem, ...]) -> None:
    assert [(i.checklist, i.number) for i in items] == NUMBERS
    for found in items:
        assert found.requirement.endswith("?") and found.answers
        for family, text in found.answers:
            assert family and text.strip()
            assert not re.search(r"\b(None|nan|NaN)\b", text), (found.number, text)
        assert found.recorded == all(NOT_RECORDED not in text for text in texts(found))


@pytest.fixture(scope="module")
def deberta_checklist(search_results_dir):
    """The checklist of the two released DeBERTa searches, labelled as the report labels results files (their stems)."""
    return build_checklist(analyze(deberta_families(search_results_dir, labels=None)))


def test_results_files_fill_what_the_trials_give_and_mark_the_rest(deberta_checklist, search_results_dir):
    assert_well_formed(deberta_checklist)
    recorded = {(i.checklist, i.number) for i in deberta_checklist if i.recorded}
    assert recorded == {(DODGE, "8"), (DODGE, "10"), (ARR, "C3")}  # the trials and what the report computes
    for checklist, number in [(DODGE, "1"), (DODGE, "3"), (DODGE, "5"), (DODGE, "6"), (DODGE, "7"), (ARR, "C1"),
                              (ARR, "C4"), (NEURIPS, "4"), (NEURIPS, "5"), (NEURIPS, "8")]:
        assert item(deberta_checklist, checklist, number).answers == (("all", NOT_RECORDED),)
    setup = texts(item(deberta_checklist, ARR, "C2"))[0]  # only the selection criterion is known
    assert setup.startswith(f"Search space: {NOT_RECORDED}. Selection: search method: {NOT_RECORDED} (a results file does not"
                            " record how its configurations were drawn; --sampler random asserts i.i.d. random draws),"
                            f" not known to be i.i.d. random draws; selected by {SCORE}")
    assert f"Best configuration: {NOT_RECORDED}. Data for hyperparameters: selected by {SCORE}, as given to the report" in setup
    assert texts(item(deberta_checklist, DODGE, "2")) == [f"mean runtime per trial: {NOT_RECORDED}"]  # no runtime column

    columns = {Path(name).stem: load_column(search_results_dir / name, SCORE) for name in DEBERTA_RESULTS}
    validation = dict(item(deberta_checklist, DODGE, "4").answers)
    assert set(validation) == set(columns)  # the families' best scores differ: one answer each
    for name, scores in columns.items():
        assert f"{np.nanmax(scores):.4g}" in validation[name] and "test score of that configuration: not recorded" in validation[name]
    (trials,) = {len(scores) for scores in columns.values()}
    assert texts(item(deberta_checklist, DODGE, "8")) == [f"{trials} trials run, 0 failed; failure policy: worst (the report's)"]
    selection = texts(item(deberta_checklist, DODGE, "9"))[0]
    assert selection.startswith(f"search method: {NOT_RECORDED}") and f"selected by {SCORE} (max), as given to the report" in selection
    assert "80 % LD-HD" in texts(item(deberta_checklist, DODGE, "10"))[0]
    significance = item(deberta_checklist, NEURIPS, "7")
    assert not significance.recorded and "bands" in texts(significance)[0]  # the i.i.d. assumption cannot be checked


def test_a_runtime_column_fills_runtime_and_compute(search_results_dir):
    path = search_results_dir / "alexnet_imagenet_tuning.csv"
    runtimes = load_column(path, "train_time_s")
    items = build_checklist(analyze(from_results_file(path, "top1_best", runtime="train_time_s")))
    runtime = item(items, DODGE, "2")
    assert runtime.recorded
    value, unit = re.search(r"per trial: ([0-9.]+) (s|min|h) ", texts(runtime)[0]).groups()
    assert float(value) * {"s": 1, "min": 60, "h": 3600}[unit] == pytest.approx(np.nanmean(runtimes), rel=5e-3)
    compute = texts(item(items, ARR, "C1"))[0]
    total, unit = re.search(r"total compute: ([0-9.,]+) (s|min|h) of trial wall time", compute).groups()
    assert float(total.replace(",", "")) * {"s": 1, "min": 60, "h": 3600}[unit] == pytest.approx(np.nansum(runtimes), rel=5e-3)
    assert f"GPU-hours: {NOT_RECORDED}" in compute  # a results file does not say what each trial held


def git_repository(path: Path) -> str:
    """A repository with one commit and an origin remote whose URL carries a token; returns the commit."""
    path.mkdir()
    for args in (["init", "-q"], ["remote", "add", "origin", REMOTE.replace("https://", "https://me:tok3n@")],
                 ["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "x"]):
        subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True, timeout=30)
    return subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def ledger_search(tmp_path):
    """The demo SST-2 search's spec and environment in a ledger, with six trials, trial 3 failed."""
    commit = git_repository(tmp_path / "code")
    spec = load_search_spec(REPO_ROOT / "search_spaces" / "demo_sst2.yaml")
    records = []
    for i in range(6):
        changes = dict(metrics={"parameters": 1234, "split_sizes": SPLITS}, python="3.11.7", packages=WORKER_PACKAGES,
                       peak_rss_bytes=(300 + i) * 2**20)
        if i == 3:
            changes.update(status="failed", score=None, test_score=None, error="RuntimeError: diverged")
        records.append(trial_record(i, **changes))
    # A CPU-only view of this machine, so the test reads the same on a GPU machine (GPUs: see below).
    records = write_search(Ledger(tmp_path / "store", spec.name), spec, records,
                           environment=collect_environment(tmp_path / "code") | {"gpus": [], "gpu_count": 0, "gpu_model": None})
    family = from_ledger(tmp_path / "store", spec.name)
    return family, spec, commit, records


def test_a_ledger_search_records_every_item(ledger_search):
    family, spec, commit, records = ledger_search
    items = build_checklist(analyze([family]))
    assert_well_formed(items)
    assert all(i.recorded for i in items), [(i.number, i.answers) for i in items if not i.recorded]
    assert all(len(i.answers) == 1 and i.answers[0][0] == "all" for i in items)  # one family

    bounds = texts(item(items, DODGE, "6"))[0]
    for name, distribution in spec.space.items():
        assert f"{name}: {distribution.kind}" in bounds
    code = texts(item(items, DODGE, "5"))[0]
    assert REMOTE in code and commit in code and "uncommitted changes to tracked files: none" in code
    assert all("tok3n" not in text for i in items for text in texts(i))
    failed = sum(r.status != "finished" for r in records)
    assert failed == 1
    assert texts(item(items, DODGE, "8"))[0].startswith(f"{len(records)} trials run, {failed} failed (of {spec.num_trials} planned)")
    best = max((r for r in records if r.status == "finished"), key=lambda r: r.score)
    assert f"lr={best.params['lr']:.6g}" in texts(item(items, DODGE, "7"))[0]
    scores = texts(item(items, DODGE, "4"))[0]
    assert f"{best.score:.4g}" in scores and f"test {spec.metric.test} of that configuration: {best.test_score:.4g}" in scores
    assert texts(item(items, DODGE, "3"))[0] == f"data: {spec.data['dataset']}; examples per split: train 300, dev 500, test 872"
    assert f"random search (i.i.d. samples), seed {spec.seed}, selected by {spec.metric.name} (max)" in texts(item(items, DODGE, "9"))[0]
    assert "parameters of the selected model: 1,234" in texts(item(items, ARR, "C1"))[0]
    packages = texts(item(items, ARR, "C4"))[0]
    assert packages.startswith("Python 3.11.7, mlflow 3.17.2, ray 2.60.0, scikit-learn 1.9.1, showwork-tuning 0.1.0 (")
    assert "torch" not in packages and "transformers" not in packages and "pydantic" not in packages
    compute = texts(item(items, NEURIPS, "8"))[0]
    assert "GPU-hours: none (CPU-only trials)" in compute
    # trials 0-5 peaked at 300-305 MiB (trial 3 failed, and is measured too)
    assert "peak resident memory per trial (worker process and its children): median 302 MiB, largest 305 MiB over 6 trials" in compute


def test_without_an_environment_exactly_the_machine_and_code_items_are_not_recorded(ledger_search):
    family = ledger_search[0]
    bare = dataclasses.replace(family, meta={k: v for k, v in family.meta.items() if k != "environment"})
    items = build_checklist(analyze([bare]))
    assert_well_formed(items)
    missing = {(i.checklist, i.number) for i in items if not i.recorded}
    # the packages (C4) come from the trial records, which the workers wrote: still recorded
    assert missing == {(DODGE, "1"), (DODGE, "5"), (ARR, "C1"), (NEURIPS, "4"), (NEURIPS, "5"), (NEURIPS, "8")}
    assert item(items, DODGE, "1").answers == (("all", NOT_RECORDED),)
    assert "Search space file: recorded" in texts(item(items, NEURIPS, "4"))[0]  # what the spec gives stays


def family(name: str, metrics: list[dict], environment: dict | None = None, gpus: float = 0.0,
           workers: tuple[dict, ...] = ()) -> FamilyResults:
    n = len(metrics)
    return FamilyResults(
        name=name, scores=np.linspace(0.5, 0.9, n), statuses=("finished",) * n, metric="acc",
        runtimes_s=np.full(n, 3600.0), trial_metrics=tuple(metrics), trial_worker=workers,
        spec={"metric": {"name": "acc", "mode": "max"}, "seed": 1, "resources": {"cpus": 4, "gpus": gpus}},
        meta={"seed": 1} | ({"environment": environment} if environment else {}),
    )


def test_split_sizes_from_mlflow_keys_and_when_trials_disagree():
    flat = [{f"split_sizes.{k}": float(v) for k, v in SPLITS.items()}] * 3
    varied = [{"split_sizes": {"train": 100 * (i + 1), "dev": 50}} for i in range(3)]
    items = build_checklist(analyze([family("flat", flat), family("varied", varied)]))
    answers = dict(item(items, DODGE, "3").answers)
    assert answers["flat"].endswith("examples per split: train 300, dev 500, test 872")
    # the best trial is the last (increasing scores): its sizes are shown, and the disagreement stated
    assert "train 300, dev 50 (the best trial's; they differ across trials: 3 distinct sets in 3 trials)" in answers["varied"]


def test_gpu_machines_name_driver_cuda_and_gpu_hours():
    gpu = {"name": "NVIDIA A100-SXM4-40GB", "memory_total": "40960 MiB", "driver_version": "535.104"}
    environment = {"cpu_model": "Xeon", "cpu_count": 32, "memory_total_bytes": 64 * 2**30, "gpus": [gpu, gpu],
                   "gpu_model": gpu["name"], "gpu_count": 2, "nvidia_driver": "535.104", "cuda_version": "12.1",
                   "platform": "Linux", "packages": {"torch": "2.13.0", "numpy": None}}
    metrics = [{}] * 4
    items = build_checklist(analyze([family("gpu", metrics, environment, gpus=0.5)]))
    machine = item(items, DODGE, "1")
    assert machine.recorded and machine.answers == (("all", "CPU: Xeon; logical CPUs: 32; RAM: 64.0 GiB; GPUs: 2 ×"
                                                     " NVIDIA A100-SXM4-40GB with 40960 MiB each; NVIDIA driver: 535.104;"
                                                     " CUDA (torch build): 12.1; platform: Linux"),)
    assert "GPU-hours: 2 (0.5 GPUs per trial)" in texts(item(items, ARR, "C1"))[0]  # 4 trials × 1 h × 0.5 GPU
    # a search recorded before the workers recorded packages: the driver's, and the trainable's imports not recorded
    assert texts(item(items, ARR, "C4")) == [f"torch 2.13.0 (where the search ran); packages the trainable imported: {NOT_RECORDED}"]
    assert f"peak resident memory per trial (worker process and its children): {NOT_RECORDED}" in texts(item(items, NEURIPS, "8"))[0]
    workers = tuple({"python": "3.12.1", "packages": {"torch": "2.13.0"}, "peak_rss_bytes": 3 * 2**30,
                     "peak_gpu_allocated_bytes": (i + 1) * 2**30, "peak_gpu_reserved_bytes": (i + 2) * 2**30} for i in range(4))
    measured = build_checklist(analyze([family("gpu", metrics, environment, gpus=0.5, workers=workers)]))
    compute = item(measured, NEURIPS, "8")
    assert compute.recorded  # the GPU energy was not recorded: said, but the item is answered (issue 28)
    assert f"GPU energy: {NOT_RECORDED}" in texts(compute)[0] and f"GPU energy: {NOT_RECORDED}" in texts(item(measured, ARR, "C1"))[0]
    with_energy = build_checklist(analyze([family("gpu", metrics, environment, gpus=0.5,
                                                  workers=tuple(w | {"gpu_energy_j": 1.8e6} for w in workers))],
                                          ReportSettings(grid_intensity=250)))
    assert ("GPU energy: 2 kWh over 4 trials, 0.5 kWh per trial on average (a trial holding g GPUs on n devices is charged"
            " min(1, g/n) of each device's energy (NVML's total-energy counter) over its own wall time; energy of shares no"
            " trial held is charged to no trial); 500 gCO₂e at the 250 gCO₂e/kWh given for the grid") in texts(
        item(with_energy, NEURIPS, "8"))[0]
    cpu_only = build_checklist(analyze([family("cpu", metrics, environment, gpus=0, workers=workers)]))
    assert "GPU energy" not in texts(item(cpu_only, NEURIPS, "8"))[0]  # CPU-only trials: nothing to say
    assert ("peak resident memory per trial (worker process and its children): median 3.00 GiB, largest 3.00 GiB over 4"
            " trials; peak GPU memory per trial (torch): largest 4.00 GiB allocated, largest 5.00 GiB reserved over 4 trials") in texts(compute)[0]
    assert texts(item(measured, ARR, "C4"))[0].startswith("Python 3.12.1, torch 2.13.0 (the packages the trainable imported")
    unknown_cuda = build_checklist(analyze([family("gpu", metrics, environment | {"cuda_version": None})]))
    assert not item(unknown_cuda, DODGE, "1").recorded
    assert f"CUDA (torch build): {NOT_RECORDED}" in texts(item(unknown_cuda, DODGE, "1"))[0]


def test_tables_one_per_checklist_with_a_row_per_answer(deberta_checklist):
    tables = checklist_tables(deberta_checklist)
    assert [t.key for t in tables] == ["checklist_dodge", "checklist_arr", "checklist_neurips"]
    for table, checklist in zip(tables, (DODGE, ARR, NEURIPS)):
        mine = [i for i in deberta_checklist if i.checklist == checklist]
        assert table.columns == ("item", "requirement", "answer")
        assert len(table.rows) == sum(len(i.answers) for i in mine)
        assert [row[0] for row in table.rows if row[0]] == [i.number for i in mine]
        assert all(isinstance(cell, str) for row in table.rows for cell in row)
        if any(not i.recorded for i in mine):
            assert any(NOT_RECORDED in note for note in table.notes)
    dodge = tables[0].rows
    first = next(r for r in dodge if r[0] == "4")
    following = dodge[dodge.index(first) + 1]
    assert first[2].startswith("deberta-base_mnli_tuning: validation") and following[:2] == ("", "")
    assert following[2].startswith("deberta-v3-base_mnli_tuning: validation")
    assert checklist_tables([i for i in deberta_checklist if i.checklist == ARR])[0].key == "checklist_arr"

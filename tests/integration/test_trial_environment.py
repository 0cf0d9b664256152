"""What really ran, recorded per trial (issue 16 items 7-10): the packages the trainable imported, the
code's files and git state, each trial's peak memory, and the checklist that reports them."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from showwork.environment import (
    PeakMemory,
    collect_environment,
    git_state,
    module_distributions,
    namespace_modules,
    worker_software,
)
from showwork.report.analysis import analyze
from showwork.report.checklist import ARR, DODGE, NEURIPS, NOT_RECORDED, build_checklist, checklist_tables
from showwork.report.inputs import FamilyResults
from showwork.store import InvalidRecordError, TrialRecord
from showwork.tracking.mlflow_format import trial_fields, trial_projection

from helpers import trial_record

MiB = 2**20
ADVICE = "run the search with showwork search, which records it"


def item(items, checklist: str, number: str):
    (found,) = [i for i in items if i.checklist == checklist and i.number == number]
    return found


def answer(items, checklist: str, number: str) -> str:
    (text,) = [text for _, text in item(items, checklist, number).answers]
    return text


# ---------------------------------------------------------------- packages (item 7)


def test_module_names_map_to_their_distributions_and_the_standard_library_to_none():
    found = module_distributions(["sklearn.linear_model._logistic", "numpy", "os", "json.decoder", "my_helper"])
    assert set(found) == {"scikit-learn", "numpy"}
    assert found["scikit-learn"] == __import__("sklearn").__version__


def test_a_family_namespace_names_what_it_imported_even_when_already_loaded():
    namespace = {}
    exec("import numpy as np\nfrom sklearn.linear_model import LogisticRegression\nfrom json import dumps\nx = 3", namespace)
    modules = namespace_modules(namespace)
    assert "numpy" in modules and "json" in modules
    assert any(name.startswith("sklearn.linear_model") for name in modules)
    python, packages = worker_software(modules)
    assert python == ".".join(map(str, sys.version_info[:3]))
    assert {"numpy", "scikit-learn", "ray", "mlflow", "showwork-tuning"} <= set(packages)
    assert "torch" not in packages and "transformers" not in packages and "pydantic" not in packages


def test_a_helper_module_beside_the_family_file_counts_as_the_trainables(tmp_path, monkeypatch):
    from showwork.families import resolve_family

    (tmp_path / "iris_helper_16.py").write_text("import numpy\n\ndef features(x):\n    return numpy.asarray(x)\n")
    (tmp_path / "family16.py").write_text(
        "from iris_helper_16 import features\n\ndef train(config, *, seed, device, reporter, data):\n    return {}\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "iris_helper_16", raising=False)
    train = resolve_family("family16.py:train", tmp_path)
    from showwork.environment import referenced_modules

    modules = referenced_modules(train)
    assert {"iris_helper_16", "numpy"} <= modules  # numpy: imported by the helper only, and loaded long before
    assert "numpy" in worker_software(modules)[1]


def test_records_without_the_new_fields_still_read_and_the_new_fields_round_trip():
    old = trial_record(0).to_dict()
    for name in ("python", "packages", "peak_rss_bytes", "peak_gpu_allocated_bytes", "peak_gpu_reserved_bytes"):
        old.pop(name)
    record = TrialRecord.from_dict(old)
    assert record.packages is None and record.peak_rss_bytes is None
    new = trial_record(1, python="3.12.1", packages={"scikit-learn": "1.9.1"}, peak_rss_bytes=5 * MiB,
                       peak_gpu_allocated_bytes=2 * MiB, peak_gpu_reserved_bytes=4 * MiB)
    assert TrialRecord.from_json(new.to_json()) == new
    for bad in ({"packages": {"scikit-learn": 1.9}}, {"packages": ["scikit-learn"]}, {"peak_rss_bytes": -1},
                {"peak_gpu_reserved_bytes": 1.5}, {"python": 3.12}):
        with pytest.raises(InvalidRecordError):
            TrialRecord.from_dict({**new.to_dict(), **bad})


def test_mlflow_child_runs_carry_packages_and_peak_memory_and_read_back():
    from types import SimpleNamespace

    packages = {f"package-{i:03d}": "1.0." + "9" * 60 for i in range(200)}  # over one tag's 8000 characters
    record = trial_record(2, python="3.12.1", packages=packages, peak_rss_bytes=300 * MiB, peak_gpu_allocated_bytes=7 * MiB)
    projection = trial_projection(record)
    assert projection.final_metrics["peak_rss_bytes"] == 300 * MiB
    assert "peak_gpu_reserved_bytes" not in projection.final_metrics  # not recorded: not logged
    assert all(len(value) <= 8000 for value in projection.tags.values()) and "showwork.packages.2" in projection.tags
    metrics = {**projection.final_metrics, "val_acc": 0.5}
    run = SimpleNamespace(data=SimpleNamespace(tags=projection.tags | {"showwork.trial_index": "2"}, params=projection.params,
                                               metrics=metrics),
                          info=SimpleNamespace(status="FINISHED", start_time=projection.start_ms, end_time=projection.end_ms))
    fields = trial_fields(run)
    assert fields.python == "3.12.1" and fields.packages == packages
    assert fields.measured == {"peak_rss_bytes": 300 * MiB, "peak_gpu_allocated_bytes": 7 * MiB}
    assert "peak_rss_bytes" not in fields.trial_metrics  # showwork's own, not the trainable's
    damaged = SimpleNamespace(data=SimpleNamespace(tags={**run.data.tags, "showwork.packages": "{not json"}, params=run.data.params,
                                                   metrics=metrics), info=run.info)
    assert trial_fields(damaged).packages is None  # unreadable: not recorded, never a partial list


# ---------------------------------------------------------------- peak memory (item 9)


def touch(size: int) -> bytearray:
    block = bytearray(size)
    for i in range(0, size, 4096):
        block[i] = 1
    return block


def rss_bytes() -> int:
    """This process's resident memory now (``VmRSS``, Linux)."""
    line = next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("VmRSS:"))
    return int(line.split()[1]) * 1024


CHILD = "import time\nb = bytearray({size})\nfor i in range(0, len(b), 4096): b[i] = 1\ntime.sleep(0.6)\n"


REUSED_WORKER = """
import json, subprocess, sys
from showwork.environment import PeakMemory

MiB = 2**20

def touch(size):
    block = bytearray(size)
    for i in range(0, size, 4096):
        block[i] = 1
    return block

def rss():
    line = next(l for l in open("/proc/self/status") if l.startswith("VmRSS:"))
    return int(line.split()[1]) * 1024

big = touch(400 * MiB)  # an earlier trial's peak, in the same process
del big
memory = PeakMemory().start()
small = touch(50 * MiB)
peaks = memory.peaks(torch_imported=False)
memory.stop()
del small
out = {"peaks": peaks, "now": rss()}
memory = PeakMemory().start()
subprocess.run([sys.executable, "-c", sys.argv[1]], check=True, timeout=60)
out["with_child"] = memory.peaks(torch_imported=False)["peak_rss_bytes"]
memory.stop()
out["after_child"] = rss()
print(json.dumps(out))
"""


def test_peak_memory_is_the_trials_own_in_a_reused_process_and_counts_children():
    # In a fresh process standing for a reused worker: the suite's own process has a heap that
    # earlier tests shaped (a 50 MiB block there once reused resident pages and did not raise the peak).
    done = subprocess.run([sys.executable, "-c", REUSED_WORKER, CHILD.format(size=300 * MiB)], capture_output=True,
                          text=True, timeout=120, check=True)
    out = json.loads(done.stdout)
    peaks, now = out["peaks"], out["now"]
    assert peaks["peak_gpu_allocated_bytes"] is None and peaks["peak_gpu_reserved_bytes"] is None
    assert peaks["peak_rss_bytes"] >= now + 40 * MiB  # the block counted
    assert peaks["peak_rss_bytes"] < now + 300 * MiB  # the earlier 400 MiB did not
    assert out["with_child"] >= out["after_child"] + 280 * MiB  # the child's 300 MiB, sampled while it lived


class FakeCuda:
    """torch.cuda's peak counters on two devices (no GPU here): what PeakMemory resets and reads."""

    def __init__(self) -> None:
        self.allocated = {0: 900 * MiB, 1: 800 * MiB}  # an earlier trial's peaks
        self.reserved = {0: 1000 * MiB, 1: 1000 * MiB}
        self.resets: list[int] = []

    def is_available(self) -> bool:
        return True

    def is_initialized(self) -> bool:
        return True

    def device_count(self) -> int:
        return 2

    def reset_peak_memory_stats(self, device: int) -> None:
        self.resets.append(device)
        self.allocated[device] = self.reserved[device] = 0

    def max_memory_allocated(self, device: int) -> int:
        return self.allocated[device]

    def max_memory_reserved(self, device: int) -> int:
        return self.reserved[device]


def test_gpu_peaks_are_reset_at_the_trials_start_summed_over_devices_and_only_with_torch(monkeypatch):
    import types

    cuda = FakeCuda()
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    memory = PeakMemory().start()
    assert sorted(cuda.resets) == [0, 1]
    cuda.allocated.update({0: 30 * MiB, 1: 10 * MiB})
    cuda.reserved.update({0: 64 * MiB, 1: 32 * MiB})
    peaks = memory.peaks(torch_imported=True)
    assert (peaks["peak_gpu_allocated_bytes"], peaks["peak_gpu_reserved_bytes"]) == (40 * MiB, 96 * MiB)
    assert memory.peaks(torch_imported=False)["peak_gpu_allocated_bytes"] is None  # a trainable without torch
    memory.stop()


# ---------------------------------------------------------------- code (item 8)


def git(path: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True, text=True, timeout=30).stdout


def test_dirty_means_a_tracked_file_changed_not_showworks_own_files(tmp_path):
    git(tmp_path, "init", "-q")
    (tmp_path / "model.py").write_text("x = 1\n")
    git(tmp_path, "add", "model.py")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "x")
    (tmp_path / "mlflow.db").write_bytes(b"SQLite format 3\x00")
    for folder in ("showwork_runs/search/trials", "mlartifacts/1"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "f.json").write_text("{}")
    commit, dirty = git_state(tmp_path)
    assert commit and dirty is False
    (tmp_path / "model.py").write_text("x = 2\n")
    assert git_state(tmp_path) == (commit, True)


def test_outside_git_the_code_is_the_files_path_and_sha256(tmp_path):
    yaml_file, family_file = tmp_path / "space.yaml", tmp_path / "model.py"
    yaml_file.write_text("name: x\n")
    family_file.write_text("def train(config, *, seed, device, reporter, data):\n    return {}\n")
    environment = collect_environment(tmp_path, code_files=(yaml_file, family_file, None))
    assert environment["git_commit"] is None
    assert environment["code_files"] == [
        {"path": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()} for path in (yaml_file, family_file)
    ]
    items = build_checklist(analyze([family("x", environment=environment)]))
    code = item(items, DODGE, "5")
    assert code.recorded
    # By name: the ledger records the whole path; the report shows no folder of the user's machine (issue 34).
    assert code.answers == (("all", f"not in a git repository; files: space.yaml (SHA-256 "
                             f"{hashlib.sha256(yaml_file.read_bytes()).hexdigest()}), model.py (SHA-256 "
                             f"{hashlib.sha256(family_file.read_bytes()).hexdigest()})"),)
    assert str(tmp_path) not in str(code.answers)


def test_a_family_file_given_by_its_path_is_named_by_its_file_alone(tmp_path):
    """NeurIPS 4: the family a search recorded, without the folder of the user's machine its YAML named (issue 34)."""
    results = family("x")
    results = FamilyResults(**{**results.__dict__, "spec": {**results.spec, "family": f"{tmp_path}/models/mlp.py:train"}})
    answers = str(item(build_checklist(analyze([results])), NEURIPS, "4").answers)
    assert "(family mlp.py:train)" in answers and str(tmp_path) not in answers


def family(name: str, environment: dict | None = None, spec: bool = True, workers: tuple = (), meta: dict | None = None,
           n: int = 4) -> FamilyResults:
    return FamilyResults(
        name=name, scores=np.linspace(0.5, 0.9, n), statuses=("finished",) * n, metric="acc", runtimes_s=np.full(n, 60.0),
        spec={"metric": {"name": "acc", "mode": "max"}, "seed": 1, "resources": {"cpus": 1, "gpus": 0}} if spec else None,
        meta={"seed": 1, **(meta or {})} | ({"environment": environment} if environment else {}), trial_worker=workers,
    )


@pytest.mark.slow
def test_other_programs_mlflow_runs_give_their_source_tags(tmp_path):
    from mlflow.tracking import MlflowClient

    from showwork.report.sources_mlflow import from_mlflow

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    client = MlflowClient(tracking_uri=uri)
    experiment = client.create_experiment("plain")
    for score in (0.5, 0.7):
        run = client.create_run(experiment, tags={"mlflow.source.name": "train.py", "mlflow.source.git.commit": "c0ffee" * 6 + "ab"})
        client.log_metric(run.info.run_id, "acc", score)
        client.set_terminated(run.info.run_id)
    results = from_mlflow(uri, "plain", score="acc")
    items = build_checklist(analyze([results]))
    assert answer(items, DODGE, "5") == f"script train.py; commit {'c0ffee' * 6 + 'ab'} (the runs' MLflow source tags)"
    assert item(items, DODGE, "5").recorded


# ---------------------------------------------------------------- the footnote (item 10)


def test_the_advice_to_run_showwork_search_is_only_for_results_it_did_not_run():
    searched = build_checklist(analyze([family("searched")]))  # no environment, no workers: several items missing
    missing = [i for i in searched if not i.recorded]
    assert missing
    notes = [note for table in checklist_tables(searched) for note in table.notes]
    assert not any(ADVICE in note for note in notes)
    assert any(NOT_RECORDED in note and "could not record" in note for note in notes)
    from_file = build_checklist(analyze([family("file", spec=False)]))
    assert any(ADVICE in note for table in checklist_tables(from_file) for note in table.notes)


# ---------------------------------------------------------------- a real search (Ray, MLflow)

SKLEARN_FAMILY = """
import subprocess
import sys

from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

CHILD = {child!r}


def train(config, *, seed, device, reporter, data):
    x, y = load_iris(return_X_y=True)
    train_x, dev_x, train_y, dev_y = train_test_split(x, y, random_state=seed)
    model = LogisticRegression(C=config["C"], max_iter=500).fit(train_x, train_y)
    if config["spawn"] > 0.5:  # a child process of 300 MiB, as joblib's workers would be
        subprocess.run([sys.executable, "-c", CHILD], check=True, timeout=60)
    return {{"accuracy": model.score(dev_x, dev_y)}}
"""


@pytest.mark.slow
@pytest.mark.integration
def test_a_scikit_learn_search_records_and_reports_what_ran(tmp_path, monkeypatch):
    from showwork.cli import main
    from showwork.report.inputs import from_ledger
    from showwork.report.sources_mlflow import from_mlflow
    from showwork.sampling import trial_config
    from showwork.space import load_search_spec
    from showwork.store import Ledger

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    family_file = tmp_path / "iris_model.py"
    family_file.write_text(SKLEARN_FAMILY.format(child=CHILD.format(size=300 * MiB)).lstrip())
    space = tmp_path / "iris.yaml"
    space.write_text(textwrap.dedent("""
        name: iris-logreg
        family: iris_model.py:train
        metric: {name: accuracy, mode: max}
        num_trials: 6
        seed: 4
        max_concurrent: 1
        space:
          C: {distribution: loguniform, low: 0.01, high: 100.0}
          spawn: {distribution: uniform, low: 0.0, high: 1.0}
    """).lstrip())
    spec = load_search_spec(space)
    spawns = [trial_config(spec.space, spec.seed, i)["spawn"] > 0.5 for i in range(6)]
    assert any(spawns) and not all(spawns)  # the seed gives both kinds of trial
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    started = time.perf_counter()
    assert main(["search", str(space), "--no-progress", "--storage", str(tmp_path / "runs"), "--tracking-uri", uri]) == 0
    records = Ledger(tmp_path / "runs", "iris-logreg").records()
    assert [r.status for r in records] == ["finished"] * 6, [r.error for r in records]

    for record in records:
        assert record.python == ".".join(map(str, sys.version_info[:3]))
        assert {"scikit-learn", "ray", "mlflow", "showwork-tuning"} <= set(record.packages), record.packages
        assert not {"torch", "transformers"} & set(record.packages), record.packages
        assert record.peak_rss_bytes > 0 and record.peak_gpu_allocated_bytes is None
    # Each trial's own peak, even in a reused worker: the trials that spawned a 300 MiB child peak higher.
    spawned = [r.peak_rss_bytes for r, spawn in zip(records, spawns) if spawn]
    plain = [r.peak_rss_bytes for r, spawn in zip(records, spawns) if not spawn]
    assert min(spawned) - max(plain) > 200 * MiB, (spawned, plain, [r.pid for r in records])

    for results in (from_ledger(tmp_path / "runs", "iris-logreg"), from_mlflow(uri, "iris-logreg")):
        items = build_checklist(analyze([results]))
        packages = answer(items, ARR, "C4")
        assert "scikit-learn " in packages and "torch" not in packages and "transformers" not in packages, packages
        compute = answer(items, NEURIPS, "8")
        assert "peak resident memory per trial (worker process and its children): median" in compute
        code = answer(items, DODGE, "5")  # tmp_path is no git repository
        for path in (space, family_file):  # by name: the report shows no folder of the user's machine (issue 34)
            assert f"{path.name} (SHA-256 {hashlib.sha256(path.read_bytes()).hexdigest()})" in code, code
            assert str(path.parent) not in code
        assert not any(ADVICE in note for table in checklist_tables(items) for note in table.notes)
    assert time.perf_counter() - started < 300
    # The MLflow metrics are the ledger's.
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    for record in records:
        run = client.get_run(record.mlflow_run_id)
        assert run.data.metrics["peak_rss_bytes"] == record.peak_rss_bytes
        assert json.loads(run.data.tags["showwork.packages"]) == record.packages


SLEEPY_FAMILY = """
import time

import numpy as np


def train(config, *, seed, device, reporter, data):
    time.sleep(config["sleep"])
    return {"accuracy": float(np.float64(0.5))}
"""


def test_a_trial_in_this_process_and_a_timed_out_one_record_packages_and_peak_memory(tmp_path):
    """run_trial (what each Ray worker runs): the record of a finished and of a timed-out trial carry both."""
    from showwork.trials.execution import SearchContext, run_trial

    (tmp_path / "sleepy16.py").write_text(SLEEPY_FAMILY.lstrip())
    space = {"sleep": {"distribution": "uniform", "low": 0.05, "high": 0.06}}
    context = SearchContext(name="sleepy", storage_dir=str(tmp_path / "runs"), space=space, seed=1,
                            family="sleepy16.py:train", base_dir=str(tmp_path), data={}, metric="accuracy", mode="max")
    finished = run_trial(context, 0)
    timed_out = run_trial(SearchContext(**{**context.__dict__, "space": {"sleep": {"distribution": "uniform", "low": 1.0, "high": 1.1}},
                                           "timeout_s": 0.3}), 1)
    assert (finished.status, timed_out.status) == ("finished", "timeout")
    for record in (finished, timed_out):
        assert "numpy" in record.packages and "torch" not in record.packages and "showwork-tuning" in record.packages
        assert record.python == ".".join(map(str, sys.version_info[:3]))
        assert record.peak_rss_bytes >= rss_bytes() // 2 and record.peak_gpu_allocated_bytes is None

"""Issue 16 items 11-12 end to end: `showwork best --yaml` trains again, `showwork rerun` re-trains the
best configurations over fresh seeds through Ray, the ledger and MLflow, apart from the search.

One small search (a trainable file whose test score depends on the training seed) runs once for the
module; each re-run pays Ray's start-up (about 10 s).
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_search import Search, cli, run_search_once, write

from showwork.report import from_ledger, from_mlflow
from showwork.report.tables import rerun_sentence
from showwork.sampling import fresh_training_seeds
from showwork.selection import ranked_trials
from showwork.store import Ledger

from helpers import runs_of
from processes import kill_session

pytestmark = [pytest.mark.integration, pytest.mark.slow]

TRAINABLE = """
    import time


    def train(config, *, seed, device, reporter, data):
        time.sleep(data.get("sleep_s", 0))
        reporter(epoch=0, val_accuracy=config["quality"] / 2)
        # the test score depends on the training seed: re-runs over seeds differ
        return {"val_accuracy": config["quality"], "test_accuracy": config["quality"] - (seed % 1000) / 1e5}
"""

SPACE = """
    name: tiny-rerun
    family: tiny.py:train
    metric: {name: val_accuracy, mode: max, test: test_accuracy, bounds: [0, 1]}
    num_trials: 4
    seed: 5
    max_concurrent: 2
    space:
      quality: {distribution: uniform, low: 0.5, high: 1.0}
      optimizer: {distribution: categorical, choices: [sgd, adam]}
      epochs: 2
"""


@pytest.fixture(scope="module")
def tiny(environment, template_db, tmp_path_factory) -> Search:
    folder = tmp_path_factory.mktemp("space")
    write(folder / "tiny.py", TRAINABLE)
    space = write(folder / "tiny.yaml", SPACE)
    search = run_search_once(tmp_path_factory, template_db, "tiny", space, {})
    assert search.code == 0, search.err
    return search


def rerun(search: Search, *extra) -> tuple[int, str, str]:
    return cli("rerun", search.spec.name, "--no-progress", "--storage", search.storage, "--tracking-uri", search.uri,
               "--num-cpus", "2", *extra)


def report_numbers(search: Search, out: Path) -> tuple[dict, str]:
    code, _, err = cli("report", search.spec.name, "--storage", search.storage, "--out", out, "--formats", "png", "--no-mlflow")
    assert code == 0, err
    data = json.loads((out / "report.json").read_text())
    (family,) = data["families"]
    return {key: family[key] for key in ("summary", "curve", "table_curve", "advice")}, (out / "report.md").read_text()


def test_best_yaml_trains_the_best_configuration_again(tiny, tmp_path):
    best = ranked_trials(tiny.ledger.records(), "max")[0]
    code, out, err = cli("best", tiny.spec.name, "--storage", tiny.storage, "--yaml")
    assert code == 0, err
    path = tmp_path / "best.yaml"  # another folder than the search's YAML: the family path was made absolute
    path.write_text(out)
    assert cli("validate", path)[0] == 0
    code, out, err = tiny.search(path)
    assert code == 0, err
    (record,) = Ledger(tiny.storage, "tiny-rerun-best").records()
    assert record.status == "finished" and record.params == best.params and record.score == best.score


def test_rerun_trains_the_best_over_fresh_seeds_and_leaves_the_search_alone(tiny, tmp_path):
    code, before_csv, _ = cli("results", tiny.spec.name, "--storage", tiny.storage, "--csv")
    assert code == 0
    (tmp_path / "results.csv").write_text(before_csv)
    code, before_curve, err = cli("curve", tmp_path / "results.csv", "--score", "score", "--json")
    assert code == 0, err
    before_report, before_md = report_numbers(tiny, tmp_path / "report-before")
    assert "over 3 seeds" not in before_md

    code, out, err = rerun(tiny, "--seeds", "3")
    assert code == 0, err
    records = tiny.ledger.records()
    best = ranked_trials(records, "max")[0]
    reruns = Ledger(tiny.ledger.root, "reruns").records()
    fresh = fresh_training_seeds(tiny.spec.seed, 3, taken=[r.seed for r in records])
    assert [r.seed for r in reruns] == list(fresh)
    assert not {r.seed for r in reruns} & {r.seed for r in records}  # fresh: no seed of the search's trials
    for record in reruns:
        assert record.status == "finished" and record.params == best.params and record.score == best.score
        assert record.test_score == pytest.approx(best.params["quality"] - (record.seed % 1000) / 1e5)
    assert "test test_accuracy of the selected configuration over 3 seeds:" in out

    # The search is untouched: its results, its curve, its report's statistics.
    code, after_csv, _ = cli("results", tiny.spec.name, "--storage", tiny.storage, "--csv")
    assert after_csv == before_csv
    (tmp_path / "results.csv").write_text(after_csv)
    assert cli("curve", tmp_path / "results.csv", "--score", "score", "--json")[1] == before_curve
    after_report, after_md = report_numbers(tiny, tmp_path / "report-after")
    assert after_report == before_report
    family = from_ledger(tiny.storage, tiny.spec.name)
    assert family.n_trials == 4 and len(family.reruns) == 1
    tests = [r.test_score for r in reruns]
    mean = sum(tests) / 3
    sd = (sum((t - mean) ** 2 for t in tests) / 2) ** 0.5
    sentence = rerun_sentence(family.reruns[0], "val_accuracy", "test_accuracy")
    assert sentence.startswith("test test_accuracy of the selected configuration over 3 seeds: ")
    assert family.reruns[0].test.mean == pytest.approx(mean) and family.reruns[0].test.sd == pytest.approx(sd)
    # ... in the tables and in the checklists' variance items (Dodge 10, ARR C3, NeurIPS 7)
    assert "Selected configurations over fresh training seeds" in after_md
    data = json.loads((tmp_path / "report-after" / "report.json").read_text())
    items = {(item["checklist"][:5], item["number"]): json.dumps(item["answers"], ensure_ascii=False) for item in data["checklist"]}
    assert sentence in items[("ACL R", "C3")] and sentence in items[("NeurI", "7")] and sentence in items[("Dodge", "10")]

    # MLflow: the re-runs' parent is nested under the search's; its children are tagged as re-runs.
    search_parent = tiny.ledger.read_meta()["parent_run_id"]
    rerun_meta = Ledger(tiny.ledger.root, "reruns").read_meta()
    runs = {r.info.run_id: r for r in runs_of(tiny.uri, tiny.spec.name)}
    parent = runs[rerun_meta["parent_run_id"]]
    assert parent.data.tags["showwork.role"] == "reruns" and parent.data.tags["mlflow.parentRunId"] == search_parent
    assert parent.info.status == "FINISHED"
    children = [r for r in runs.values() if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert sorted(int(r.data.tags["showwork.rerun_replicate"]) for r in children) == [0, 1, 2]
    for run in children:
        assert run.data.tags["showwork.role"] == "rerun" and run.data.tags["showwork.rerun_of_trial"] == str(best.index)
        assert run.info.status == "FINISHED" and run.info.run_name.startswith("rerun-")
    assert {r.mlflow_run_id for r in reruns} == {r.info.run_id for r in children}
    # ... and the search read back from MLflow still has its 4 trials, not 7
    assert from_mlflow(tiny.uri, tiny.spec.name).n_trials == 4

    # More seeds and a second configuration: only the missing re-runs run; the first three stay as they were.
    code, out, err = rerun(tiny, "--seeds", "4", "--top", "2")
    assert code == 0, err
    again = Ledger(tiny.ledger.root, "reruns").records()
    assert [r.to_dict() for r in again[:3]] == [r.to_dict() for r in reruns]
    second = ranked_trials(records, "max")[1]
    seeds = fresh_training_seeds(tiny.spec.seed, 4, taken=[r.seed for r in records])
    assert seeds[:3] == fresh
    assert [(r.params, r.seed) for r in again[3:]] == [(best.params, seeds[3]), *((second.params, seed) for seed in seeds)]
    assert "configuration 2 (trial" in out


def test_a_report_read_from_mlflow_never_replaces_the_searchs_own_report(tiny, tmp_path):
    """Issue 23 item 17: `showwork report mlflow:NAME` replaced the search's report/ artifact, made from its ledger
    with the re-runs over seeds, by a poorer one, saying only "logged to MLflow parent run"."""
    from mlflow.tracking import MlflowClient

    assert rerun(tiny, "--seeds", "3")[0] == 0  # re-runs over seeds, which only the ledger's report states
    parent = tiny.ledger.read_meta()["parent_run_id"]
    client = MlflowClient(tracking_uri=tiny.uri)

    def logged_report(path: str) -> str:
        back = tmp_path / "back" / path.replace("/", "_")
        return Path(client.download_artifacts(parent, f"{path}/report.md", str(back))).read_text()

    code, out, err = cli("report", tiny.spec.name, "--storage", tiny.storage, "--out", tmp_path / "own", "--formats", "png")
    assert code == 0, err
    assert f"logged to MLflow parent run {parent} (artifacts: report/)" in out
    own = logged_report("report")
    assert "Selected configurations over fresh training seeds" in own
    code, out, err = cli("report", f"mlflow:{tiny.spec.name}", "--tracking-uri", tiny.uri, "--out", tmp_path / "read-back",
                         "--formats", "png")
    assert code == 0, err
    path = f"reports/from-mlflow/{tiny.spec.name}"
    assert (f"logged to MLflow parent run {parent} (artifacts: {path}/; read from MLflow's runs, it goes beside the"
            " search's own report/ (from its ledger), never over it)") in out
    assert logged_report("report") == own  # the search's own report is kept
    assert "Selected configurations over fresh training seeds" not in logged_report(path)


def test_an_interrupted_rerun_runs_only_the_missing_seeds_again(environment, template_db, tmp_path):
    write(tmp_path / "tiny.py", TRAINABLE)
    space = write(tmp_path / "slow.yaml", SPACE.replace("name: tiny-rerun", "name: slow-rerun").replace(
        "    family: tiny.py:train\n", "    family: tiny.py:train\n    data: {sleep_s: 1.5}\n"))
    shutil.copy(template_db, tmp_path / "mlflow.db")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    storage = tmp_path / "runs"
    code, out, err = cli("search", space, "--no-progress", "--storage", storage, "--tracking-uri", uri, "--num-trials", "2")
    assert code == 0, err
    reruns = Ledger(storage / "slow-rerun", "reruns")
    command = [sys.executable, "-m", "showwork", "rerun", "slow-rerun", "--seeds", "6", "--no-progress", "--storage",
               str(storage), "--tracking-uri", uri, "--num-cpus", "1"]
    log = tmp_path / "driver.log"
    driver = subprocess.Popen(command, cwd=tmp_path, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while len(reruns.records()) < 2:
            assert driver.poll() is None, log.read_text()[-2000:]
            assert time.monotonic() < deadline, "no two re-runs recorded within 120 s"
            time.sleep(0.1)
        driver.send_signal(signal.SIGINT)
        assert driver.wait(timeout=60) == 130, log.read_text()[-2000:]
    finally:
        kill_session(driver)
    assert "showwork rerun slow-rerun --seeds 6" in log.read_text()
    done = {r.index: r.to_dict() for r in reruns.records()}
    assert 2 <= len(done) < 6
    code, out, err = cli("rerun", "slow-rerun", "--seeds", "6", "--no-progress", "--storage", storage, "--tracking-uri", uri,
                         "--num-cpus", "2")
    assert code == 0, err
    records = reruns.records()
    assert [r.index for r in records] == list(range(6)) and all(r.status == "finished" for r in records)
    # The recorded ones did not run again. One the interrupt caught between its ledger line and its MLflow run gets
    # its run id when the resumed rerun logs it (tracking.ledger_sync); nothing else about it changes.
    resumed = {r.index: r.to_dict() for r in records if r.index in done}
    assert all(resumed[i]["mlflow_run_id"] for i in done)
    assert all(done[i]["mlflow_run_id"] in (None, resumed[i]["mlflow_run_id"]) for i in done)
    assert ({i: {k: v for k, v in d.items() if k != "mlflow_run_id"} for i, d in resumed.items()}
            == {i: {k: v for k, v in d.items() if k != "mlflow_run_id"} for i, d in done.items()})
    assert all(reruns.attempts_started(index) == 1 for index in done)
    children = [r for r in runs_of(uri, "slow-rerun")
                if r.data.tags.get("showwork.role") == "rerun" and r.info.lifecycle_stage == "active"]
    assert sorted(int(r.data.tags["showwork.trial_index"]) for r in children) == list(range(6))

"""Fail fast (issue 35 item 2): a search whose first trials all fail with the same error stops, in one line, exit 1,
and resumes; the rule itself is tested in tests/unit/test_fail_fast.py.

Before, a search whose every trial failed alike (a data folder missing on a new machine) went on through all its
trials, each failing after its own set-up (50 trials of about 23 s in the issue).
"""

from __future__ import annotations

import json
import textwrap

import pytest

from showwork.sampling import trial_seed
from showwork.store import Ledger

from helpers import cli_in_process as cli_run

pytestmark = pytest.mark.integration

# Each trial's behaviour comes from data["plan"] (by training seed, else "default"): the error of a missing file
# (its path holds the seed: the same error kind whatever the number), another error, or a result.
TRAINABLE = """
    import json
    import time
    from pathlib import Path


    def train(config, *, seed, device, reporter, data):
        plan = json.loads(Path(data["plan"]).read_text())
        behaviour = plan.get(str(seed), plan["default"])
        time.sleep(plan["sleep"])
        if behaviour == "missing":
            raise FileNotFoundError(f"no corpus at /scratch/job-{seed}/corpus.txt")
        if behaviour == "diverge":
            raise ValueError(f"lr {config['x']:.3f} diverged")
        reporter(epoch=0, val_accuracy=config["x"])
        return {"val_accuracy": config["x"]}
"""


@pytest.mark.slow
def test_a_search_whose_first_trials_fail_alike_stops_in_one_line_and_resumes(home):
    (home / "family.py").write_text(textwrap.dedent(TRAINABLE).lstrip())
    plan = home / "plan.json"
    plan.write_text(json.dumps({"default": "missing", "sleep": 1.0}))
    space = home / "ff.yaml"
    space.write_text(textwrap.dedent(f"""
        name: ff
        family: family.py:train
        data: {{plan: {json.dumps(str(plan))}}}
        metric: {{name: val_accuracy, mode: max}}
        num_trials: 8
        seed: 7
        max_concurrent: 2
        space:
          x: {{distribution: uniform, low: 0.0, high: 1.0}}
    """).lstrip())
    storage, uri = home / "runs", f"sqlite:///{home / 'mlflow.db'}"
    code, out, err = cli_run("search", space, "--no-progress", "--num-cpus", 2, "--storage", storage, "--tracking-uri", uri)

    assert code == 1, err
    (line,) = [line for line in err.splitlines() if line.startswith("showwork")]
    assert line.startswith("showwork: error: search ff: its first 3 trials to end all failed with the same error, so it"
                           " stopped: FileNotFoundError: no corpus at /scratch/job-"), line
    ledger = Ledger(storage, "ff")
    named = int(line.split("(trial ")[1].split(";")[0])
    assert f"(trial {named}; its full error: {ledger.path(named)}, field \"error\")" in line
    assert line.endswith(f"its records are kept; fix the cause, then run its failed trials again and continue with:"
                         f" showwork resume ff --storage {storage} --retry-failed")
    first = {record.index: record for record in ledger.records()}
    # the third failure stopped the search: the trial running beside it is recorded if it ended first, else left to
    # the resume (not recorded as failed by the stop); no other trial started
    assert 3 <= len(first) <= 4 and named in first, sorted(first)
    assert all(r.status == "failed" and r.error.startswith("FileNotFoundError: no corpus at") for r in first.values())
    from mlflow.tracking import MlflowClient

    parent = ledger.read_meta()["parent_run_id"]
    assert MlflowClient(tracking_uri=uri).get_run(parent).info.status == "KILLED"

    # The cause fixed; the resumed run's first trials end in other ways (two error kinds at most twice each, and
    # results), so it runs to the end. Every record of the first run is kept as it was.
    rest = [index for index in range(8) if index not in first]
    behaviours = ["diverge", "missing", "ok"] * 3
    plan.write_text(json.dumps({"default": "ok", "sleep": 0.2,
                                **{str(trial_seed(7, index)): behaviours[i] for i, index in enumerate(rest)}}))
    code, out, err = cli_run("resume", "ff", "--no-progress", "--num-cpus", 2, "--storage", storage)
    assert code == 0, err
    records = {record.index: record for record in ledger.records()}
    assert sorted(records) == list(range(8))
    for index, record in first.items():
        assert records[index].model_dump(exclude={"mlflow_run_id"}) == record.model_dump(exclude={"mlflow_run_id"})
    statuses = [records[index].status for index in rest]
    assert statuses == ["finished" if b == "ok" else "failed" for b in behaviours[:len(rest)]]
    finished = statuses.count("finished")
    assert f"search ff: {finished} finished, {8 - finished} failed, 0 timed out of 8" in out

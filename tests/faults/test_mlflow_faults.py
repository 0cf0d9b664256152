"""The MLflow store under faults of its own (issue 23 items 2 and 3).

- A value MLflow cannot store in one trial's record (an epoch of 2**63, which ``reporter``
  accepted before): the search and every resume ended in tracebacks, exit 1, parent and child
  runs RUNNING. Now the ledger stays the truth: that trial's run is marked, one warning line, the
  other trials and the parent finish, and ``resume`` completes.
- A full disk under a SQLite store (issue 35 item 7): 2,145 lines of MLflow's tracebacks for a search of 12
  trials (each failed write logged with its traceback, retried 5 times over 7.5 s). Now one warning when
  the first write fails and one line at the end counting the failed calls with the command that writes
  them (``showwork resume NAME``); the search's records are all in the ledger.
- A process killed while it makes a fresh SQLite store: every later search failed ("table secrets
  already exists"). Now the store is made under a temporary name and renamed into place; a store
  left half-made by something else (MLflow itself, killed) is named in one line with the fix.

The kills are placed exactly: a SQLAlchemy event in the child process SIGKILLs it right before
MLflow stamps the migration that created the table ``secrets`` (its DDL is committed, its
``alembic_version`` not yet), the moment that left "table secrets already exists" behind.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from showwork.sampling import trial_seed
from showwork.store import Ledger

from helpers import cli_in_process as cli_run
from helpers import runs_of, search_environment, search_process_environment

pytestmark = pytest.mark.integration

# The child's last act: open a fresh store, killed right before MLflow records that "secrets" exists.
KILLED_WHILE_MAKING_THE_STORE = """
    import os, signal, sys
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    made = []

    @event.listens_for(Engine, "before_cursor_execute")
    def kill(connection, cursor, statement, *rest):
        text = " ".join(statement.split()).upper()
        if text.startswith("CREATE TABLE SECRETS"):
            made.append(True)
        elif made and text.startswith("UPDATE ALEMBIC_VERSION"):
            os.kill(os.getpid(), signal.SIGKILL)

    if sys.argv[2] == "showwork":
        from showwork.tracking.store import prepare_store
        prepare_store(sys.argv[1])
    else:
        from mlflow.tracking import MlflowClient
        MlflowClient(sys.argv[1]).search_experiments()
"""


def killed_while_making(database: Path, who: str) -> None:
    """Open a fresh store at ``database`` in a child process (through showwork, or MLflow alone) and SIGKILL it mid-way."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(KILLED_WHILE_MAKING_THE_STORE), f"sqlite:///{database}", who],
                          env={**search_process_environment(), "SHOWWORK_CACHE_DIR": str(database.parent / "fresh-cache")},
                          capture_output=True, text=True, timeout=300)  # no kept empty store: MLflow makes it
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]


@pytest.mark.slow
def test_a_process_killed_while_it_makes_the_store_leaves_no_half_made_store(tmp_path):
    """Before: mlflow.db was left half-migrated, and every later open failed ("table secrets already exists")."""
    from showwork.tracking.tracker import Tracker

    database = tmp_path / "mlflow.db"
    killed_while_making(database, "showwork")
    assert not database.exists()  # only the temporary store, which nothing opens
    assert [p.name for p in tmp_path.glob(".mlflow.db.*.creating*")]
    tracker = Tracker(f"sqlite:///{database}", "after-the-kill")
    tracker.check_reachable()  # makes the store anew
    assert database.exists() and not list(tmp_path.glob(".mlflow.db.*"))  # the killed creator's file is gone
    parent = tracker.start_parent("p", {"seed": 1}, {}, {})
    assert tracker.client.get_run(parent).info.status == "RUNNING"


@pytest.mark.slow
def test_a_half_made_store_is_one_line_naming_the_file_and_the_fix(tmp_path):
    """Before: exit 1 with "table secrets already exists" and nothing on what to do."""
    database = tmp_path / "mlflow.db"
    killed_while_making(database, "mlflow")  # MLflow on its own leaves it half-made
    space = tmp_path / "space.yaml"
    (tmp_path / "train.py").write_text("def train(config, *, seed, device, reporter, data):\n    return {'score': 0.5}\n")
    space.write_text("name: half\nfamily: train.py:train\nmetric: {name: score, mode: max}\nnum_trials: 1\nseed: 1\n"
                     "space:\n  x: {distribution: uniform, low: 0.0, high: 1.0}\n")
    with search_environment(tmp_path):
        code, out, err = cli_run("search", space, "--no-progress", "--num-cpus", 1, "--storage", tmp_path / "runs",
                                 "--tracking-uri", f"sqlite:///{database}")
        report = cli_run("report", "mlflow:half", "--tracking-uri", f"sqlite:///{database}", "--out", tmp_path / "out")
    line = (f"showwork: error: the MLflow database {database} is half-made (table secrets already exists): a process was"
            f" stopped while creating or upgrading it; it holds no runs: delete it (rm {database}) and run again\n")
    assert (code, err) == (1, line)
    assert report[0] == 1 and report[2] == line
    assert not (tmp_path / "runs").exists()  # nothing was started
    database.unlink()  # what the line says to do, then run again (a new process: this one keeps MLflow's engine)
    again = subprocess.run([sys.executable, "-m", "showwork", "search", str(space), "--no-progress", "--num-cpus", "1",
                            "--storage", str(tmp_path / "runs"), "--tracking-uri", f"sqlite:///{database}"],
                           cwd=tmp_path, env=search_process_environment(), capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]


# A trainable that reports an epoch of 2**63 for the trials the plan names, as showwork before issue 23 let it.
TRAINABLE = """
    import json
    from pathlib import Path

    import showwork.trainable


    def train(config, *, seed, device, reporter, data):
        plan = json.loads(Path(data["plan"]).read_text())
        epoch = 0
        if plan.get(str(seed)) == "huge_epoch":
            showwork.trainable.MAX_EPOCH = 2**64  # the bound of item 2a lifted: a ledger of an older showwork
            epoch = 2**63
        reporter(epoch=epoch, val_accuracy=config["x"])
        return {"val_accuracy": config["x"]}
"""


@pytest.mark.slow
def test_a_value_mlflow_cannot_store_costs_only_that_trials_run(template_db, tmp_path):
    """Before: tracebacks, exit 1, the parent and the child runs RUNNING, and every resume crashed the same way."""
    shutil.copy(template_db, tmp_path / "mlflow.db")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    (tmp_path / "huge.py").write_text(textwrap.dedent(TRAINABLE).lstrip())
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({str(trial_seed(7, 1)): "huge_epoch"}))
    space = tmp_path / "huge.yaml"
    space.write_text(f"name: huge\nfamily: huge.py:train\nmetric: {{name: val_accuracy, mode: max}}\nnum_trials: 4\n"
                     f"seed: 7\nmax_concurrent: 2\ndata: {json.dumps({'plan': str(plan)})}\n"
                     "space:\n  x: {distribution: uniform, low: 0.0, high: 1.0}\n")
    flags = ("--no-progress", "--num-cpus", 2, "--storage", tmp_path / "runs", "--tracking-uri", uri)
    with search_environment(tmp_path):
        code, out, err = cli_run("search", space, *flags)
        resumed = cli_run("resume", "huge", *flags[:1], *flags[3:])
    for code_, out_, err_ in ((code, out, err), resumed):
        assert code_ == 0, err_
        assert "Traceback" not in err_
        warned = [line for line in err_.splitlines() if line.startswith("showwork: warning:")]
        assert len(warned) == 1, err_
        assert warned[0].startswith("showwork: warning: MLflow refused trial 1's record (MlflowException: Python int too"
                                    " large to convert to SQLite INTEGER); its run ")
        assert "search huge: 4 finished, 0 failed, 0 timed out of 4" in out_
    ledger = Ledger(tmp_path / "runs", "huge")
    assert ledger.read(1).history[0]["epoch"] == 2**63  # the ledger keeps the trial as it was
    runs = [r for r in runs_of(uri, "huge") if r.info.lifecycle_stage == "active"]
    (parent,) = [r for r in runs if r.data.tags.get("showwork.role") == "parent"]
    assert parent.info.status == "FINISHED" and parent.info.run_id == ledger.read_meta()["parent_run_id"]
    children = {int(r.data.tags["showwork.trial_index"]): r for r in runs if "showwork.trial_index" in r.data.tags}
    assert sorted(children) == [0, 1, 2, 3]
    for index, run in children.items():
        assert ledger.read(index).mlflow_run_id == run.info.run_id
        if index == 1:
            assert run.info.status == "FAILED" and "showwork.logged" not in run.data.tags
            assert run.data.tags["showwork.projection_error"].startswith("MlflowException: Python int too large")
        else:
            assert run.info.status == "FINISHED" and run.data.tags["showwork.logged"] == "1"


# A search whose SQLite store may not grow: every connection's max_page_count is the database's size plus
# two pages (SQLite then answers "database or disk is full", SQLITE_FULL, as on a full disk).
SEARCH_ON_A_FULL_DISK = """
    import sys
    from sqlalchemy import event
    from sqlalchemy.engine import Engine

    @event.listens_for(Engine, "connect")
    def full(connection, record):
        cursor = connection.cursor()
        pages = cursor.execute("PRAGMA page_count").fetchone()[0]
        cursor.execute(f"PRAGMA max_page_count = {pages + 2}")
        cursor.close()

    from showwork.cli import main
    sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_a_full_disk_under_the_store_is_one_line_with_a_count_and_resume_writes_the_runs(template_db, tmp_path):
    shutil.copy(template_db, tmp_path / "mlflow.db")
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    (tmp_path / "steps.py").write_text("def train(config, *, seed, device, reporter, data):\n"
                                       "    for epoch in range(3):\n"
                                       "        reporter(epoch=epoch, acc=config['x'] * (epoch + 1))\n"
                                       "    return {'acc': config['x']}\n")
    (tmp_path / "full.yaml").write_text("name: full\nfamily: steps.py:train\nmetric: {name: acc, mode: max}\nnum_trials: 12\n"
                                        "space:\n  x: {distribution: uniform, low: 0, high: 1}\n")
    flags = ("--no-progress", "--storage", "runs", "--tracking-uri", uri)
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(SEARCH_ON_A_FULL_DISK), "search", "full.yaml", "--num-cpus", "2",
                           *flags], cwd=tmp_path, env=search_process_environment(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "search full: 12 finished, 0 failed, 0 timed out of 12" in done.stdout
    assert "Traceback" not in done.stderr and "sqlite3" not in done.stderr, done.stderr[-3000:]
    lines = done.stderr.splitlines()
    assert len(lines) == 2 and all(line.startswith("showwork: warning: MLflow") for line in lines), done.stderr[-3000:]
    assert "failed, not retried (the database or disk is full)" in lines[0]  # a full disk is not retried for 7.5 s
    assert re.fullmatch(rf"showwork: warning: MLflow at {re.escape(uri)}: \d+ calls failed \(the database or disk is full\);"
                        r" the ledger has every trial; `showwork resume full --storage runs` writes them to MLflow once it"
                        " answers", lines[1]), lines[1]
    ledger = Ledger(tmp_path / "runs", "full")
    assert len(ledger.records()) == 12

    with search_environment(tmp_path):  # the disk has room again
        code, out, err = cli_run("resume", "full", *flags)
    assert code == 0 and err == "", err
    children = [r for r in runs_of(uri, "full") if r.info.lifecycle_stage == "active" and "showwork.trial_index" in r.data.tags]
    assert sorted(int(r.data.tags["showwork.trial_index"]) for r in children) == list(range(12))
    assert all(r.data.tags["showwork.logged"] == "1" and ledger.read(int(r.data.tags["showwork.trial_index"])).mlflow_run_id
               == r.info.run_id for r in children)

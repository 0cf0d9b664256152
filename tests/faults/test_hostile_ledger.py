"""A search's folder that someone else (another user, a script, a careless copy) has changed (issue 23,
items 1, 7, 8 and the first half of 9; the folder moved mid-search is in test_search_faults.py).

- Item 1: a link planted where showwork keeps a file or folder of its own (``driver.lock ->
  ~/thesis.tex`` was truncated by the next ``resume``) is refused in one line, and its target is
  untouched; a storage folder every user can write is warned about.
- Item 7: only the record names the ledger writes (six ASCII digits) of the indices the search owns
  are read; a copy ``0000003.json``, other scripts' digits, an index beyond the search: left out,
  with one warning (``results`` said "7 trials" of a 6-trial search).
- Item 8: a record whose configuration the search does not draw for its index, or a ``search.json``
  whose spec was edited since the start, is refused in one line by ``results``, ``best``, ``report``
  and ``resume`` alike (before, the first three showed it as a trial).
- Item 9: a FIFO at a record's path is not read (``resume`` hung on it): moved aside like a corrupt
  record, the trial runs again.

None of these starts Ray.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import stat
import textwrap
import threading
import warnings

import pytest

from showwork.errors import InputError
from showwork.space import load_search_spec
from showwork.store import Ledger

from helpers import run_cli, search_environment, trial_record, write_search

SPACE = """
    name: tiny
    family: tiny.py:train
    metric: {name: val_accuracy, mode: max, test: test_accuracy}
    num_trials: 6
    seed: 7
    space:
      lr: {distribution: loguniform, low: 1e-4, high: 1e-1}
      optimizer:
        name: {distribution: categorical, choices: [sgd, adam]}
      epochs: 3
"""
SCORES = [0.5, 0.9, 0.7, 0.6, 0.8, 0.4]


@pytest.fixture
def search(tmp_path):
    """A finished 6-trial search as `showwork search` leaves it, in ``tmp_path/runs/tiny``; the current
    directory is ``tmp_path``. Returns its ledger."""
    (tmp_path / "tiny.yaml").write_text(textwrap.dedent(SPACE))
    (tmp_path / "tiny.py").write_text("def train(config, *, seed, device, reporter, data):\n"
                                      "    return {'val_accuracy': config['lr']}\n")
    ledger = Ledger(tmp_path / "runs", "tiny")
    write_search(ledger, load_search_spec(tmp_path / "tiny.yaml"), [trial_record(i, score=s) for i, s in enumerate(SCORES)],
                 tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    with search_environment(tmp_path):
        yield ledger


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("showwork:")]
    assert len(lines) == 1 and lines[0].startswith("showwork: error: "), err
    assert "Traceback" not in err
    return lines[0]


def record_bytes(ledger: Ledger) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(ledger.trials_dir.glob("*.json"))}


# ---------------------------------------------------------------- item 1: links where the ledger keeps its files


def test_a_linked_driver_lock_is_refused_by_resume_and_its_target_is_kept(search, tmp_path, capsys):
    """Before: `showwork resume` exited 0 and left thesis.tex at 0 bytes."""
    thesis = tmp_path / "thesis.tex"
    thesis.write_text("\\chapter{Results}\n")
    search.lock_path.symlink_to(thesis)
    code, out, err = run_cli(capsys, "resume", "tiny", "--storage", "runs", "--no-progress")
    assert code == 2, err
    line = one_error_line(err)
    assert line.startswith(f"showwork: error: {search.lock_path}: is a symbolic link, not a regular file;")
    assert "move it away" in line
    assert thesis.read_text() == "\\chapter{Results}\n"
    search.lock_path.unlink()
    code, out, err = run_cli(capsys, "resume", "tiny", "--storage", "runs", "--no-progress")
    assert code == 0, err
    assert "search tiny: 6 finished, 0 failed, 0 timed out of 6" in out


@pytest.mark.parametrize("planted", ["symlink", "fifo", "hard link"])
def test_the_driver_lock_is_opened_only_as_a_file_of_its_own(search, tmp_path, planted):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    if planted == "symlink":
        search.lock_path.symlink_to(victim)
    elif planted == "fifo":
        os.mkfifo(search.lock_path)
    else:
        os.link(victim, search.lock_path)
    kind = {"symlink": "a symbolic link", "fifo": "a FIFO (named pipe)", "hard link": "a file with 2 hard links"}[planted]
    with pytest.raises(InputError, match=re.escape(f"driver.lock: is {kind}, not")):
        with search.lock():
            pass
    assert victim.read_text() == "keep me"


def test_a_linked_metadata_lock_or_metadata_is_refused_and_nothing_is_created_at_the_target(search, tmp_path):
    target = tmp_path / "elsewhere" / "created-by-showwork"
    (tmp_path / "elsewhere").mkdir()
    (search.root / ".meta.lock").unlink()
    (search.root / ".meta.lock").symlink_to(target)  # dangling: `open(..., "a+")` created the target
    with pytest.raises(InputError, match=r"\.meta\.lock: is a symbolic link"):
        search.update_meta(note="x")
    assert not target.exists()
    (search.root / ".meta.lock").unlink()
    meta = search.meta_path.read_bytes()
    search.meta_path.unlink()
    other = tmp_path / "other.json"
    other.write_bytes(meta)
    search.meta_path.symlink_to(other)
    with pytest.raises(InputError, match=r"search\.json: is a symbolic link"):
        search.read_meta()
    search.meta_path.unlink()
    os.mkfifo(search.meta_path)  # reading it blocked forever
    with pytest.raises(InputError, match=r"search\.json: is a FIFO"):
        run_in_time(search.read_meta)


@pytest.mark.parametrize("folder", ["trials", "attempts", "corrupt", "ray"])
def test_a_folder_of_the_ledger_that_is_a_link_is_refused(search, tmp_path, folder):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    path = {"trials": search.trials_dir, "attempts": search.attempts_dir, "corrupt": search.corrupt_dir,
            "ray": search.ray_dir}[folder]
    if folder == "trials":
        shutil.rmtree(path)
    path.symlink_to(elsewhere, target_is_directory=True)
    act = {"trials": lambda: search.write(trial_record(0)), "attempts": lambda: search.begin_attempt(0),
           "ray": search.ray_folder}
    if folder == "corrupt":
        search.path(2).write_text("{ torn")
        act["corrupt"] = search.records
    with pytest.raises(InputError, match=f"{folder}: is a symbolic link, not a folder"):
        act[folder]()
    assert list(elsewhere.iterdir()) == []


def test_a_planted_attempt_marker_link_is_never_followed(search, tmp_path):
    target = tmp_path / "created-by-showwork"
    search.attempts_dir.mkdir()
    (search.attempts_dir / "000000.1").symlink_to(target)
    assert search.begin_attempt(0) == 2  # the link counts as taken; nothing is created through it
    assert not target.exists()


def test_a_record_that_is_a_link_is_moved_aside_and_its_target_kept(search, tmp_path):
    target = tmp_path / "copy.json"
    target.write_bytes(search.path(2).read_bytes())
    search.path(2).unlink()
    search.path(2).symlink_to(target)
    with pytest.warns(UserWarning, match=r"000002\.json: is a symbolic link, not a regular file .*moved to"):
        records = search.records()
    assert [r.index for r in records] == [0, 1, 3, 4, 5]
    assert target.read_bytes() and not search.path(2).is_symlink()
    (aside,) = search.corrupt_dir.iterdir()
    assert aside.is_symlink()  # the link itself was moved, not what it points to


@pytest.mark.parametrize("mode, named", [(0o777, "both"), (0o1777, "search"), (0o775, None), (0o755, None)])
def test_a_storage_folder_every_user_can_write_is_warned_about_once(tmp_path, mode, named):
    """A warning, not a refusal (see showwork.store.folder._warn_if_others_can_write); a group folder is no concern."""
    storage = tmp_path / f"shared-{mode:o}"
    ledger = Ledger(storage, "s")
    ledger.root.mkdir(parents=True)
    os.chmod(storage, mode)
    os.chmod(ledger.root, mode & 0o777)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            with ledger.lock():
                pass
    messages = [str(w.message) for w in caught]
    expected = {"both": [storage, ledger.root], "search": [ledger.root], None: []}[named]
    assert [m.split(": every user")[0] for m in messages] == [str(p) for p in expected], messages
    for message, folder in zip(messages, expected):
        assert f"(mode {stat.S_IMODE(os.stat(folder).st_mode):04o})" in message and f"chmod o-w {folder}" in message


# ---------------------------------------------------------------- item 7: files that are not the search's records


def plant_copies(ledger: Ledger) -> list[str]:
    """Files that look like records and are not: their names, sorted."""
    three = ledger.path(3).read_bytes()
    names = ["0000003.json", "\u0660\u0660\u0660\u0660\u0660\u0663.json", "000099.json", "000006.json"]
    for name in names[:2]:
        (ledger.trials_dir / name).write_bytes(three)
    for name, index in zip(names[2:], (99, 6)):
        (ledger.trials_dir / name).write_text(trial_record(index).to_json())
    return sorted(names)


def test_records_are_only_the_canonical_names_of_the_indices_the_search_owns(search):
    names = plant_copies(search)
    with pytest.warns(UserWarning) as caught:
        records = search.records()
    assert [r.index for r in records] == list(range(6))
    (warning,) = caught
    text = str(warning.message)
    assert text.startswith(f"{search.trials_dir}: 4 files left out, not records of this search: {', '.join(names)}")
    assert "six ASCII digits, 000000.json to 000005.json for its 6 trials" in text
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(search.records()) == 6  # told once per ledger object
    assert (search.trials_dir / "0000003.json").exists()  # left where it is


def test_results_and_report_count_only_the_searchs_records(search, tmp_path, capsys):
    """Before: "7 trials" (a copy counted twice), and the trial beyond num_trials counted."""
    plant_copies(search)
    code, out, err = run_cli(capsys, "results", "tiny", "--storage", "runs", "--csv")
    assert code == 0, err
    assert [line.split(",")[0] for line in out.splitlines()[1:]] == [str(i) for i in range(6)]
    assert err.count("showwork: warning:") == 1 and "4 files left out" in err
    code, out, err = run_cli(capsys, "report", "tiny", "--storage", "runs", "--out", tmp_path / "report", "--no-mlflow")
    assert code == 0, err
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    assert [family["summary"]["n_trials"] for family in report["families"]] == [6]


# ---------------------------------------------------------------- item 8: records and metadata the search did not write


def edit_record(ledger: Ledger, trial: int, **changes) -> None:
    data = json.loads(ledger.path(trial).read_text())
    data.update(changes)
    ledger.path(trial).write_text(json.dumps(data))


READERS = {"results": ["results", "tiny", "--storage", "runs"],
           "best": ["best", "tiny", "--storage", "runs"],
           "report": ["report", "tiny", "--storage", "runs", "--out", "report", "--no-mlflow"],
           "resume": ["resume", "tiny", "--storage", "runs", "--no-progress"]}


@pytest.mark.parametrize("command", list(READERS))
@pytest.mark.parametrize("change", ["param", "type", "seed", "copied"])
def test_a_record_the_search_did_not_draw_is_refused_by_every_command(search, tmp_path, capsys, command, change):
    record = search.read(2)
    if change == "param":
        edit_record(search, 2, params={**record.params, "optimizer.name": "adam" if record.params["optimizer.name"] == "sgd" else "sgd"})
    elif change == "type":
        edit_record(search, 2, params={**record.params, "epochs": 3.0})  # 3.0 is not the constant 3
    elif change == "seed":
        edit_record(search, 2, seed=record.seed + 1)
    else:  # trial 4's record copied over trial 2's, its index edited to match
        edit_record(search, 2, **{**json.loads(search.path(4).read_text()), "index": 2})
    before = record_bytes(search)
    code, out, err = run_cli(capsys, *READERS[command])
    assert code == 2, err
    line = one_error_line(err)
    assert line.startswith(f"showwork: error: {search.path(2)}: trial 2's configuration is not the one search 'tiny'"
                           " draws for it (")
    first = {"param": "params.optimizer.name:", "type": "params.epochs: 3.0 recorded, 3 drawn",
             "seed": "seed:", "copied": "params."}[change]
    assert first in line and "1 of 6 records differ (trial 2)" in line and f"out of {search.trials_dir}" in line
    assert out == "" and record_bytes(search) == before and not (tmp_path / "report").exists()


@pytest.mark.parametrize("command", list(READERS))
def test_a_search_json_whose_spec_was_edited_is_refused_by_every_command(search, tmp_path, capsys, command):
    meta = json.loads(search.meta_path.read_text())
    meta["spec"]["metric"]["mode"] = "min"  # `best` would rank the worst first
    search.meta_path.write_text(json.dumps(meta))
    code, out, err = run_cli(capsys, *READERS[command])
    assert code == 2, err
    line = one_error_line(err)
    assert line.startswith(f"showwork: error: {search.meta_path}: its spec is not the one search 'tiny' was started with"
                           ' (metric.mode: "max" at the start, "min" in its spec): the file was edited since.')
    assert out == ""


def test_a_rerun_record_its_plan_did_not_give_is_refused(search, capsys):
    from showwork.selection import Rerun

    reruns = Ledger(search.root, "reruns")
    best = search.read(1)
    plan = [Rerun(0, 1, 0, 11, dict(best.params)), Rerun(1, 1, 1, 12, dict(best.params))]
    reruns.update_meta(plan=[r.to_dict() for r in plan], num_trials=2, search="tiny")
    reruns.write(trial_record(0, params=dict(best.params), seed=11))
    reruns.write(trial_record(1, params=dict(best.params), seed=99))
    with pytest.raises(InputError, match=r"reruns/trials/000001\.json: trial 1's configuration is not the one the re-runs'"
                                         r" plan gives it \(seed: 99 recorded, 12 drawn\).*showwork rerun then runs"):
        from showwork.recorded import recorded_reruns

        recorded_reruns(search.storage_dir, "tiny", "max")


def test_the_checks_pass_on_the_searchs_own_records(search):
    from showwork.recorded import recorded_records

    spec, records = recorded_records(search.storage_dir, "tiny")
    assert spec.name == "tiny" and [r.index for r in records] == list(range(6))


# ---------------------------------------------------------------- item 9: a FIFO at a record's path


def run_in_time(function, seconds: float = 20):
    """``function()``, failing the test if it has not returned within ``seconds`` (a blocked read)."""
    outcome = {}

    def call():
        try:
            outcome["value"] = function()
        except BaseException as error:  # noqa: BLE001 - handed to the test
            outcome["error"] = error

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"{function} still blocked after {seconds} s"
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def test_a_fifo_at_a_records_path_is_moved_aside_without_being_read(search):
    search.path(2).unlink()
    os.mkfifo(search.path(2))
    with pytest.warns(UserWarning, match=r"000002\.json: is a FIFO \(named pipe\), not a regular file .*moved to .*run again"):
        assert run_in_time(lambda: search.read(2)) is None
    assert not search.path(2).exists()
    (aside,) = search.corrupt_dir.iterdir()
    assert stat.S_ISFIFO(aside.lstat().st_mode)
    assert search.write(trial_record(2)) is True  # the trial can be recorded again


@pytest.mark.slow
@pytest.mark.integration
def test_resume_with_a_fifo_at_a_records_path_runs_that_trial_again(search, tmp_path):
    """Before: the worker's read of the FIFO blocked, and `showwork resume` hung forever."""
    import signal
    import subprocess
    import sys

    from helpers import search_process_environment

    search.path(2).unlink()
    os.mkfifo(search.path(2))
    process = subprocess.Popen([sys.executable, "-m", "showwork", "resume", "tiny", "--storage", "runs", "--no-progress",
                                "--num-cpus", "2"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env=search_process_environment(), start_new_session=True)
    try:
        out, err = process.communicate(timeout=240)
    finally:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 0, err
    assert "search tiny: 6 finished, 0 failed, 0 timed out of 6" in out
    warning = [line for line in err.splitlines() if line.startswith("showwork: warning:")]
    assert len(warning) == 1 and "000002.json: is a FIFO (named pipe), not a regular file" in warning[0]
    assert [r.index for r in search.records()] == list(range(6)) and search.read(2).attempts == 1


@pytest.mark.parametrize("fault", ["renamed", "deleted", "replaced"])
def test_a_running_searchs_writes_never_go_into_a_folder_that_no_longer_holds_it(search, tmp_path, fault):
    """The ledger of a running search (its driver's and workers', which know its search_id) refuses to
    write, and never makes the folder anew, once the folder was moved, deleted or replaced."""
    from showwork.run.driver import FolderWatch
    from showwork.store import LedgerMovedError

    running = Ledger(search.storage_dir, "tiny", search.read_meta()["search_id"])
    watch = FolderWatch(running, interval_s=0)
    assert running.moved() is None and watch() is None
    assert running.begin_attempt(6) == 1
    if fault == "renamed":
        search.root.rename(tmp_path / "moved")
    elif fault == "deleted":
        shutil.rmtree(search.root)
    else:
        shutil.rmtree(search.root)
        Ledger(search.storage_dir, "tiny").update_meta(search_id="another search")
    found = "search.json there is another search's" if fault == "replaced" else "no search.json there"
    assert running.moved() == found and watch() == found
    for write in (lambda: running.write(trial_record(6)), lambda: running.begin_attempt(7),
                  lambda: running.set_mlflow_run_id(0, "abc")):
        with pytest.raises(LedgerMovedError, match=f"tiny: the search's folder was moved, deleted or replaced while the"
                                                   rf" search ran \({found}\)"):
            write()
    if fault == "replaced":  # nothing added to the other search's folder
        assert sorted(p.name for p in search.root.iterdir()) == [".meta.lock", "search.json"]
    else:  # not made anew
        assert not search.root.exists()

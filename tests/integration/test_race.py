"""`showwork race` end to end: two tiny searches on one local Ray, decided at pre-planned looks.

A race whose model A is clearly better stops at its first look with A the winner; one decided at a
budget no look can resolve runs every look and ends undecided; one interrupted (SIGINT) after its
first look keeps that look and, resumed with the command it printed, takes the next ones. Each
search holds exactly the trials of its last look, indices 0..n-1: nothing beyond a look ran. A look
decided again from the ledgers gives the decision the record holds.
"""

from __future__ import annotations

import json
import shlex
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from showwork.run.race import decide
from showwork.store import Ledger
from showwork.store.races import read_race

from helpers import REPO_ROOT, runs_of, search_process_environment
from helpers import cli_in_process as cli
from processes import session_processes

pytestmark = [pytest.mark.slow, pytest.mark.integration]

FAMILY = """
import random


def train(config, *, seed, device, reporter, data):
    rng = random.Random(seed)
    return {"val_accuracy": min(1.0, max(0.0, config["level"] + 0.05 * config["x"] + rng.gauss(0.0, 0.01)))}
"""




def write_space(folder: Path, name: str, level: float, seed: int) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(textwrap.dedent(f"""\
        name: {name}
        family: fam.py:train
        metric: {{name: val_accuracy, mode: max, bounds: [0, 1]}}
        num_trials: 100
        seed: {seed}
        max_concurrent: 2
        space:
          level: {level}
          x: {{distribution: uniform, low: 0.0, high: 1.0}}
    """))
    return path


@dataclass
class Workspace:
    root: Path
    storage: Path
    uri: str
    good: Path
    bad: Path
    twin: Path  # the same model as `good` under another seed

    def race(self, *argv) -> tuple[int, str, str]:
        return cli("race", *argv, "--no-progress", "--storage", self.storage, "--tracking-uri", self.uri)


def workspace(factory, template_db, label: str) -> Workspace:
    root = factory.mktemp(label)
    shutil.copy(template_db, root / "mlflow.db")
    (root / "fam.py").write_text(FAMILY)
    return Workspace(root, root / "runs", f"sqlite:///{root / 'mlflow.db'}", write_space(root, "good", 0.9, 1),
                     write_space(root, "bad", 0.2, 2), write_space(root, "twin", 0.9, 3))


def indices(storage: Path, name: str) -> list[int]:
    return [r.index for r in Ledger(storage, name).records()]


def assert_decisions_reproduce(storage: Path, race_name: str) -> None:
    """Every recorded look, decided again from the two ledgers, is the decision the record holds."""
    race = read_race(storage, race_name)
    for look in race.looks:
        assert decide(storage, race, look.look) == look


@pytest.fixture(scope="module")
def decided(environment, template_db, tmp_path_factory):
    ws = workspace(tmp_path_factory, template_db, "decided")
    result = ws.race(ws.good, ws.bad, "--looks", "6,12", "--decide-at", "1", "--name", "clear")
    return ws, result


def test_a_clear_winner_stops_the_race_at_the_first_look(decided):
    ws, (code, out, err) = decided
    assert code == 0, err
    assert ("look 1 of 2, n = 6 per model: K=1: strong for good (resolved) -> good wins; stopped, 6 trials per model"
            " saved against the last look (12)") in out
    assert "race clear: good is better at every K = 1 (strong evidence, resolved) after 6 trials per model" in out
    race = read_race(ws.storage, "clear")
    assert race.status == "decided" and race.winner == "good" and race.stopped_at == 6 and len(race.looks) == 1
    assert race.names == ("good", "bad")
    # Nothing beyond the look ran: each search holds trials 0..5 and was planned for 6.
    for name in ("good", "bad"):
        assert indices(ws.storage, name) == list(range(6))
        assert Ledger(ws.storage, name).read_meta()["num_trials"] == 6
    assert_decisions_reproduce(ws.storage, "clear")


def test_each_search_of_a_race_is_an_ordinary_search_tagged_with_the_race(decided):
    ws, (code, _, err) = decided
    assert code == 0, err
    for name in ("good", "bad"):
        parents = [r for r in runs_of(ws.uri, name) if "mlflow.parentRunId" not in r.data.tags]
        assert len(parents) == 1 and parents[0].data.tags["showwork.race"] == "clear"
        assert parents[0].info.status == "FINISHED"
        code, out, err = cli("results", name, "--storage", ws.storage, "--csv")
        assert code == 0 and out.count("\n") == 7, err  # a header and six trials


def test_the_race_report_shows_the_first_look(decided):
    ws, (code, _, err) = decided
    assert code == 0, err
    out_dir = ws.root / "report"
    code, out, err = cli("report", "--race", "clear", "--storage", ws.storage, "--out", out_dir, "--formats", "png",
                         "--no-mlflow")
    assert code == 0, err
    markdown = (out_dir / "report.md").read_text()
    assert "### Sequential comparison" in markdown and "| 1 | 6 | 1.1 | K=1: strong evidence for good, resolved | good wins: stop |" in markdown
    assert [f["summary"]["n_trials"] for f in json.loads((out_dir / "report.json").read_text())["families"]] == [6, 6]


def test_a_race_that_cannot_resolve_runs_every_look(environment, template_db, tmp_path_factory):
    ws = workspace(tmp_path_factory, template_db, "undecided")
    # K = 4 is beyond the informative budget of every look of 3,6 (about 1.1 at n = 6): no look can resolve it.
    code, out, err = ws.race(ws.good, ws.twin, "--looks", "3,6", "--decide-at", "4", "--name", "even", "--json")
    assert code == 0, err
    assert "look 1 of 2, n = 3 per model: K=4: " in err and "-> no winner yet; on to n = 6" in err
    assert "look 2 of 2, n = 6 per model: K=4: " in err and "-> no winner at the last look" in err
    assert "race even: undecided after all 2 looks (6 trials per model); evidence at the last look: K=4:" in err
    data = json.loads(out)
    assert data["status"] == "undecided" and data["winner"] is None and data["saved_trials_per_model"] == 0
    assert [look["look"] for look in data["looks"]] == [3, 6]
    for name in ("good", "twin"):
        assert indices(ws.storage, name) == list(range(6))
    assert_decisions_reproduce(ws.storage, "even")


def test_the_python_api_races_as_the_command_does(environment, template_db, tmp_path_factory, capfd):
    import showwork

    ws = workspace(tmp_path_factory, template_db, "api")
    race = showwork.race(ws.good, ws.bad, looks=(6, 12), decide_at=1, name="api", storage=ws.storage,
                         tracking_uri=ws.uri)
    # Its lines, as `showwork race` prints them, each once, in order, among the searches' progress (off a terminal,
    # one line per trial's end).
    out, err = capfd.readouterr()
    lines = [f"race api (from the start): good vs bad; looks 6,12, decided at K = 1 by the median curves, joint"
             f" confidence 0.8 per model (wrong-winner bound 0.36); record {ws.storage}/_races/api/race.json",
             "look 1 of 2, n = 6 per model: K=1: strong for good (resolved) -> good wins; stopped, 6 trials per model"
             " saved against the last look (12)",
             "race api: good is better at every K = 1 (strong evidence, resolved) after 6 trials per model; 6 trials per"
             " model saved against the last look (12)"]
    assert [line for line in out.splitlines() if line.startswith(("race ", "look "))] == lines
    assert "good: 6/6 done" in out and "bad: 6/6 done" in out and not any(line in err for line in lines)
    d = race.decision
    assert (d.status, d.winner, d.look, d.saved_trials) == ("decided", "good", 6, 6)
    assert read_race(ws.storage, "api") == race.record
    for name in ("good", "bad"):
        assert indices(ws.storage, name) == list(range(6))
    assert_decisions_reproduce(ws.storage, "api")
    # Resumed, the decided race runs nothing more and returns the same record; without progress it prints nothing.
    again = showwork.race(ws.good, ws.bad, looks="6,12", decide_at=(1,), name="api", storage=ws.storage,
                          tracking_uri=ws.uri, progress=False, resume=True)
    assert again.record == race.record and capfd.readouterr() == ("", "")
    assert showwork.open_race("api", ws.storage).record == race.record


def test_a_race_adopts_two_searches_already_run_and_runs_only_what_its_looks_need(environment, template_db,
                                                                                   tmp_path_factory):
    """The searches ran 4 trials each with `showwork search`; a race with looks 4,8 adopts them: their trials
    count toward the looks, none runs again (each record is byte for byte as it was), and only the trials a
    look needs beyond them run."""
    ws = workspace(tmp_path_factory, template_db, "adopt")
    for space in (ws.good, ws.bad):
        code, _, err = cli("search", space, "--num-trials", "4", "--no-progress", "--storage", ws.storage,
                           "--tracking-uri", ws.uri)
        assert code == 0, err
    before = {name: {p.name: p.read_bytes() for p in Ledger(ws.storage, name).trials_dir.iterdir() if p.is_file()} for name in ("good", "bad")}
    code, out, err = ws.race(ws.good, ws.bad, "--looks", "4,8", "--decide-at", "1", "--name", "adopted", "--adopt")
    assert code == 0, err
    assert "race adopted (from the start): good vs bad;" in out and "adopted good with 4 trials recorded and bad with 4" in out
    race = read_race(ws.storage, "adopted")
    n = race.looks[-1].look
    assert [s.adopted_trials for s in race.searches] == [4, 4] and race.status in ("decided", "undecided")
    for name in ("good", "bad"):
        assert indices(ws.storage, name) == list(range(n))  # each index once: nothing ran twice, nothing beyond the look
        files = {p.name: p.read_bytes() for p in Ledger(ws.storage, name).trials_dir.iterdir() if p.is_file()}
        assert {k: files[k] for k in before[name]} == before[name]  # the adopted trials' records, untouched
        assert all(r.attempts == 1 for r in Ledger(ws.storage, name).records())
        assert Ledger(ws.storage, name).read_meta()["race"] == "adopted"
    assert_decisions_reproduce(ws.storage, "adopted")


def test_an_interrupted_race_resumes_at_its_next_look(environment, template_db, tmp_path_factory):
    ws = workspace(tmp_path_factory, template_db, "interrupted")
    argv = ["race", ws.good, ws.twin, "--looks", "3,6,9", "--decide-at", "4", "--name", "stop", "--no-progress",
            "--storage", ws.storage, "--tracking-uri", ws.uri]
    process = subprocess.Popen([sys.executable, "-m", "showwork", *map(str, argv)], cwd=ws.root, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                               env=search_process_environment(PYTHONPATH=str(REPO_ROOT)))
    try:
        lines = []
        for line in process.stdout:  # the race's lines, as it prints them
            lines.append(line)
            if line.startswith("look 1 of 3"):
                break
        else:
            pytest.fail(f"the race ended before its first look: {''.join(lines)} {process.stderr.read()}")
        time.sleep(1.0)  # into the next look: the first search grows to 6
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, err
    assert "race stop interrupted at look n = 6" in err
    resume = err.split("continue with:\n", 1)[1].strip().splitlines()[0]
    assert resume.endswith("--resume") and "--looks 3,6,9 --decide-at 4 --name stop" in resume
    deadline = time.monotonic() + 30
    while session_processes(process.pid) and time.monotonic() < deadline:  # Ray stopped with the race
        time.sleep(0.5)
    assert not session_processes(process.pid)
    first = read_race(ws.storage, "stop")
    assert first.status == "running" and [look.look for look in first.looks] == [3]
    assert all(i < 6 for name in ("good", "twin") for i in indices(ws.storage, name))  # nothing beyond the look under way

    words = shlex.split(resume)
    assert words[:2] == ["showwork", "race"]
    code, out, err = cli(*words[1:], "--no-progress")
    assert code == 0, err
    assert "race stop (from look 2)" in out and "look 1 of 3" not in out
    race = read_race(ws.storage, "stop")
    assert race.looks[0] == first.looks[0]  # the look taken stays as it was
    assert [look.look for look in race.looks] == [3, 6, 9] and race.status == "undecided"
    for name in ("good", "twin"):
        assert indices(ws.storage, name) == list(range(9))  # exactly n_l trials, each index once
    assert_decisions_reproduce(ws.storage, "stop")


def test_a_race_holds_its_searches_so_a_second_race_sharing_one_is_refused(environment, template_db, tmp_path_factory):
    """Two races sharing search `good`: while the first runs, the second is refused at once, naming the first
    (exit 1, as a search's own lock refuses a second driver); it writes no record and adopts nothing."""
    ws = workspace(tmp_path_factory, template_db, "locked")
    argv = ["race", ws.good, ws.bad, "--looks", "6,12", "--decide-at", "1", "--name", "first", "--no-progress",
            "--storage", ws.storage, "--tracking-uri", ws.uri]
    process = subprocess.Popen([sys.executable, "-m", "showwork", *map(str, argv)], cwd=ws.root, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                               env=search_process_environment(PYTHONPATH=str(REPO_ROOT)))
    try:
        assert process.stdout.readline().startswith("race first (from the start)")  # printed under both locks
        time.sleep(1.0)
        started = time.monotonic()
        code, out, err = ws.race(ws.good, ws.twin, "--looks", "6,12", "--decide-at", "1", "--name", "second")
        assert time.monotonic() - started < 10  # at once, not after the first race
        rest, first_err = process.communicate(timeout=180)
    finally:
        if process.poll() is None:
            process.kill()
    assert code == 1 and err.startswith("showwork: error: ") and err.count("\n") == 1, err
    assert "search 'good' is already being run by race 'first' (pid " in err
    assert read_race(ws.storage, "second") is None and not Ledger(ws.storage, "twin").exists()
    assert process.returncode == 0, first_err
    race = read_race(ws.storage, "first")
    assert race.status == "decided" and race.winner == "good"
    assert Ledger(ws.storage, "good").read_meta()["race"] == "first"
    # Resumed or started again, the second race takes nothing of the first's.
    code, _, err = ws.race(ws.good, ws.twin, "--looks", "6,12", "--decide-at", "1", "--name", "second", "--resume")
    assert code == 2 and "no race 'second' in" in err
    code, _, err = ws.race(ws.good, ws.twin, "--looks", "6,12", "--decide-at", "1", "--name", "second")
    assert code == 2 and "search 'good' already exists in" in err


def test_a_model_whose_trials_all_fail_loses_the_race(environment, template_db, tmp_path_factory):
    """Every trial of `broken` fails: each scores the worst bound (metric.bounds: 0) and `good` wins; the report
    and a resume read the decision the ledgers give."""
    ws = workspace(tmp_path_factory, template_db, "failing")
    (ws.root / "broken.py").write_text("def train(config, *, seed, device, reporter, data):\n"
                                       "    raise RuntimeError('this model fails every trial')\n")
    broken = ws.root / "broken.yaml"
    # fail_fast_after: 0, or the search would stop after its first three alike failures (exit 1, resumable) before
    # its first look: this test is about the look that scores those failures.
    broken.write_text(ws.bad.read_text().replace("name: bad", "name: broken\nfail_fast_after: 0")
                      .replace("fam.py:train", "broken.py:train"))
    code, out, err = ws.race(ws.good, broken, "--looks", "8,16", "--decide-at", "1", "--name", "fails")
    assert code == 0, err
    assert "look 1 of 2, n = 8 per model: K=1: strong for good (resolved) -> good wins" in out
    assert {r.status for r in Ledger(ws.storage, "broken").records()} == {"failed"}
    race = read_race(ws.storage, "fails")
    assert race.status == "decided" and race.winner == "good" and race.stopped_at == 8
    assert_decisions_reproduce(ws.storage, "fails")
    code, out, err = ws.race(ws.good, broken, "--looks", "8,16", "--decide-at", "1", "--name", "fails", "--resume")
    assert code == 0 and "nothing to run: race fails: good is better" in out, err

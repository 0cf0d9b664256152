"""A race's record (showwork/store/races.py) and the report's "Sequential comparison" section, without Ray.

The report test builds a race from scores (the decisions are decide_at_look's, as the race takes
them) and two ledgers written as `showwork search` leaves them, then runs `showwork report --race`.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from showwork.errors import InputError
from showwork.run.race import RaceRequest, race_settings
from showwork.space import load_search_spec
from showwork.statistics import BandSpec, LookDecision, decide_at_look, informative_budget
from showwork.store import Ledger
from showwork.store.races import RaceRecord, RaceSearch, RaceSettings, first_difference, read_race, write_race

from helpers import run_cli, trial_record, write_search

SETTINGS = RaceSettings(looks=(4, 8, 16), budgets=(1.0, 2.0), decide_by="median", confidence=0.8, method="ld-hd",
                        minimize=False, support=(0.0, math.inf))


def decision(look: int, number: int, winner: str | None) -> LookDecision:
    level = "strong" if winner else "weak"
    return LookDecision(look, number, (1.0, 2.0), (level, level), (winner or "a", winner or "a"), (bool(winner),) * 2,
                        winner, 1.5)


def record(*looks: LookDecision) -> RaceRecord:
    race = RaceRecord("r", SETTINGS, (RaceSearch("a", {"seed": 1}), RaceSearch("b", {"seed": 2})))
    for look in looks:
        race = race.with_look(look)
    return race


def test_the_status_follows_the_looks():
    race = record()
    assert race.status == "running" and race.next_look == 4 and race.stopped_at is None and race.saved_trials() == 0
    race = race.with_look(decision(4, 1, None))
    assert race.status == "running" and race.next_look == 8
    decided = race.with_look(decision(8, 2, "b"))
    assert decided.status == "decided" and decided.winner == "b" and decided.stopped_at == 8
    assert decided.next_look is None and decided.saved_trials() == 8  # 16 - 8 per model
    undecided = race.with_look(decision(8, 2, None)).with_look(decision(16, 3, None))
    assert undecided.status == "undecided" and undecided.winner is None and undecided.saved_trials() == 0


def test_the_record_round_trips_through_its_file(tmp_path):
    race = record(decision(4, 1, None), decision(8, 2, "a"))
    path = write_race(tmp_path, race)
    assert path == tmp_path / "_races" / "r" / "race.json"
    assert read_race(tmp_path, "r") == race
    data = json.loads(path.read_text())
    assert data["settings"]["support"] == [0.0, None]  # strict JSON: no Infinity
    assert data["status"] == "decided" and data["winner"] == "a" and data["stopped_at"] == 8
    assert read_race(tmp_path, "other") is None
    assert oct(path.stat().st_mode & 0o777) == "0o600"


def test_a_record_whose_looks_are_not_the_schedules_is_refused(tmp_path):
    path = write_race(tmp_path, record(decision(4, 1, None)))
    data = json.loads(path.read_text())
    data["looks"][0]["look"] = 5
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match="its looks are not the schedule's first looks"):
        read_race(tmp_path, "r")


def test_first_difference_names_the_field():
    assert first_difference({"a": [1, 2], "b": {"c": 1}}, {"a": [1, 2], "b": {"c": 1}}) is None
    assert first_difference({"a": [1, 2]}, {"a": [1, 3]}) == "a[1]"
    assert first_difference({"a": [1, 2]}, {"a": [1, 2, 3]}) == "a"
    assert first_difference({"a": 1}, {"a": 1.0}) == "a"  # the type counts: 1 is not 1.0
    assert first_difference({"a": 1}, {"a": 1, "b": 2}) == "b"


FAMILY = "def train(config, *, seed, device, reporter, data):\n    return {'val_accuracy': config['x']}\n"


def write_ledgers(tmp_path, scores: dict[str, np.ndarray]) -> list:
    """Two searches as `showwork search` leaves them, with these scores by trial index; their specs."""
    (tmp_path / "fam.py").write_text(FAMILY)
    specs = []
    for seed, (name, values) in enumerate(scores.items(), start=1):
        path = tmp_path / f"{name}.yaml"
        path.write_text(f"name: {name}\nfamily: fam.py:train\nmetric: {{name: val_accuracy, bounds: [0, 1]}}\n"
                        f"num_trials: {len(values)}\nseed: {seed}\nspace:\n  x: {{distribution: uniform, low: 0.0, high: 1.0}}\n")
        spec = load_search_spec(path)
        write_search(Ledger(tmp_path / "runs", name), spec, [trial_record(i, score=float(v)) for i, v in enumerate(values)])
        specs.append(spec)
    return specs


def race_of(tmp_path, specs, looks, budgets, scores) -> RaceRecord:
    """The race the command would record: decide_at_look at each look until a winner."""
    settings = race_settings(specs, looks, budgets)
    race = RaceRecord("ab", settings, RaceRequest("ab", tuple(specs), settings).searches())
    bands = BandSpec(looks=settings.looks, a=0.0, b=1.0)
    while race.next_look is not None:
        n = race.next_look
        race = race.with_look(decide_at_look(scores["a"], scores["b"], n, settings.budgets, bands, names=("a", "b")))
    write_race(tmp_path / "runs", race)
    return race


def test_the_report_of_a_race_has_its_sequential_comparison(capsys, tmp_path):
    rng = np.random.default_rng(0)
    scores = {"a": rng.uniform(0.8, 0.9, 32), "b": rng.uniform(0.1, 0.2, 32)}
    specs = write_ledgers(tmp_path, scores)
    race = race_of(tmp_path, specs, "8,16,32", [1.0], scores)
    assert race.status == "decided" and race.winner == "a" and race.stopped_at == 8
    out_dir = tmp_path / "report"
    code, out, err = run_cli(capsys, "report", "--race", "ab", "--storage", tmp_path / "runs", "--out", out_dir,
                             "--formats", "png", "--no-mlflow")
    assert code == 0, err
    assert "It stopped at look 1 of 3 (n = 8 per model): a is better at every K = 1" in out
    markdown = (out_dir / "report.md").read_text()
    html = (out_dir / "report.html").read_text()
    assert "### Sequential comparison" in markdown and "<h3>Sequential comparison</h3>" in html
    for text in (markdown, html):
        assert "looks fixed before any trial at n = 8, 16, 32 trials per model" in text
        assert "no trial beyond a look started before its decision" in text
        assert "1 − c² = 0.36" in text and "c = 0.8" in text
        assert "24 trials per model were not run against the last look (n = 32)" in text
        assert "Trials saved against the last look: 24 per model." in text
    assert "| 1 | 8 | 1.2 | K=1: strong evidence for a, resolved | a wins: stop |" in markdown
    data = json.loads((out_dir / "report.json").read_text())
    assert data["race"]["status"] == "decided" and data["race"]["saved_trials_per_model"] == 24
    assert data["settings"]["looks"] == [8, 16, 32]
    # The families are the first 8 trials of each search, with the schedule's joint bands.
    assert [f["summary"]["n_trials"] for f in data["families"]] == [8, 8]
    joint = informative_budget(8, bands=BandSpec(looks=(8, 16, 32)))
    assert [f["advice"]["informative_k"] for f in data["families"]] == [pytest.approx(joint)] * 2
    assert joint < informative_budget(8, bands=BandSpec())  # the price of looking three times


def test_the_report_of_an_undecided_race_says_it_did_not_stop(capsys, tmp_path):
    rng = np.random.default_rng(1)
    scores = {"a": rng.uniform(0.4, 0.6, 8), "b": rng.uniform(0.4, 0.6, 8)}
    specs = write_ledgers(tmp_path, scores)
    race = race_of(tmp_path, specs, "4,8", [5.0], scores)  # K = 5 is beyond every look's informative budget
    assert race.status == "undecided" and len(race.looks) == 2
    out_dir = tmp_path / "report"
    code, out, err = run_cli(capsys, "report", "--race", "ab", "--storage", tmp_path / "runs", "--out", out_dir,
                             "--formats", "png", "--no-mlflow")
    assert code == 0, err
    markdown = (out_dir / "report.md").read_text()
    assert "It did not stop: after the last look (n = 8 per model) no model was resolved at every K = 5" in markdown
    assert "Trials saved against the last look: 0 (did not stop early)." in markdown
    assert "undecided: end" in markdown and "go on" in markdown
    assert [f["summary"]["n_trials"] for f in json.loads((out_dir / "report.json").read_text())["families"]] == [8, 8]

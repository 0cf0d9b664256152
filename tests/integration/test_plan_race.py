"""`showwork plan --looks --pilot A B --decide-at K` on the shared DeBERTa searches: simulated races resampling the pilots."""

import json

import numpy as np
import pytest

from showwork.space import load_search_spec
from showwork.statistics import BandSpec, simulate_races
from showwork.store import Ledger
from tests.helpers import load_column, run_cli, trial_record, write_search

pytestmark = [pytest.mark.integration, pytest.mark.slow]

RACES = 150
TINY_SPACE = """\
name: tiny
family: tiny.py:train
metric: {name: val_accuracy, mode: max}
num_trials: 30
seed: 7
space:
  lr: {distribution: loguniform, low: 1e-4, high: 1e-1}
"""


@pytest.fixture(scope="module")
def pilots(search_results_dir):
    return search_results_dir / "deberta-v3-base_mnli_tuning.csv", search_results_dir / "deberta-base_mnli_tuning.csv"


def _plan(capsys, pilots, *extra):
    return run_cli(capsys, "plan", "--looks", "12,24,48", "--pilot", *pilots, "--score", "matched_acc_best",
                   "--decide-at", "2", "--races", RACES, *extra)


def test_races_resampling_the_deberta_pilots(capsys, pilots):
    code, out, err = _plan(capsys, pilots, "--json")
    assert code == 0, err
    races = json.loads(out)["races"]
    v3, base = map(str, pilots)
    assert races["races"] == RACES and races["resampling"] == "bootstrap" and races["decide_at"] == [2.0]
    assert races["pilot_scores"] == {v3: 1024, base: 1024}
    # K = 2 is not informative at look 12 with the joint bands (k* = 1.75): no race stops there.
    assert races["stop_probability"]["12"] == 0.0
    assert races["stop_probability_any"] == pytest.approx(sum(races["stop_probability"].values()))
    assert races["wins"][v3] == races["stop_probability_any"] and races["wins"][base] == 0.0  # the better pilot wins, or none
    # docs/statistics.md: the bootstrap predicts P(stop) 0.97 and a median of 24 trials (1,000 races);
    # with 150 races, 0.9 and P(stop by look 24) = 0.69 > 0.5 are each more than 4 standard errors away.
    assert races["stop_probability_any"] > 0.9 and races["median_trials"] == 24
    assert races["trials_saved"] == pytest.approx(1 - races["mean_trials"] / 48)
    # The same races as the library's simulation with a bootstrap sampler of each pilot.
    scores = [load_column(path, "matched_acc_best") for path in pilots]
    expected = simulate_races(*(lambda rng, s=s: rng.choice(s, 48) for s in scores), BandSpec(looks=(12, 24, 48)), 2.0, RACES, 0,
                              names=(v3, base)).summary()
    assert {key: races[key] for key in expected} == expected


def test_the_races_are_deterministic_under_the_seed_and_the_text_says_what_they_are(capsys, pilots):
    first = _plan(capsys, pilots, "--json", "--seed", "5")[1]
    assert _plan(capsys, pilots, "--json", "--seed", "5")[1] == first
    assert _plan(capsys, pilots, "--json", "--seed", "6")[1] != first
    code, out, _ = _plan(capsys, pilots, "--seed", "5")
    assert code == 0 and "resampling its pilot with replacement (bootstrap)" in out
    stops = json.loads(first)["races"]["stop_probability"]
    assert f"look 24 {stops['24']:.3f}" in out and "expected trials saved against the last look" in out


def test_a_pilot_with_failed_trials_follows_failed(capsys, pilots, tmp_path):
    other, path = tmp_path / "other.csv", tmp_path / "pilot.csv"  # the pilots share --score: both name it acc
    other.write_text("trial,acc\n" + "".join(f"{i},{float(s)!r}\n" for i, s in enumerate(load_column(pilots[0], "matched_acc_best"))))
    scores = load_column(pilots[1], "matched_acc_best")
    path.write_text("trial,acc\n" + "".join(f"{i},{'' if i == 3 else repr(float(s))}\n" for i, s in enumerate(scores[:60])))
    argv = ("plan", "--looks", "12,24", "--pilot", other, path, "--score", "acc", "--decide-at", "2", "--races", "20")
    code, _, err = run_cli(capsys, *argv)
    assert code == 2 and err.count("\n") == 1 and err.startswith(f"showwork: error: {path}: score 'acc': 1 of 60 trials") and "--failed" in err
    code, out, err = run_cli(capsys, *argv, "--failed", "exclude", "--json")
    assert code == 0, err
    assert json.loads(out)["races"]["pilot_scores"][str(path)] == 59
    code, out, err = run_cli(capsys, *argv, "--failed", "worst", "--json")  # counted as the worst finished score
    assert code == 0, err
    assert json.loads(out)["races"]["pilot_scores"][str(path)] == 60


def test_a_missing_pilot_is_one_error_line(capsys, pilots, tmp_path):
    code, out, err = _plan(capsys, (pilots[0], tmp_path / "missing.csv"))
    assert code == 2 and out == "" and err.startswith("showwork: error:") and err.count("\n") == 1


def test_a_results_file_pilot_needs_score(capsys, pilots):
    code, _, err = run_cli(capsys, "plan", "--looks", "12,24", "--pilot", *pilots, "--decide-at", "2")
    assert code == 2 and err.count("\n") == 1 and "a results file needs --score COLUMN" in err


def test_pilots_can_be_searches_in_the_storage(capsys, tmp_path, monkeypatch):
    """A pilot named by its search (its ledger), as `showwork report` reads it; its metric's mode must match --min."""
    (tmp_path / "tiny.yaml").write_text(TINY_SPACE)
    rng = np.random.default_rng(0)
    for name, centre in (("good", 0.9), ("bad", 0.5)):
        spec = load_search_spec(tmp_path / "tiny.yaml").model_copy(update={"name": name})
        write_search(Ledger(tmp_path / "runs", name), spec,
                     [trial_record(i, score=float(s)) for i, s in enumerate(rng.normal(centre, 0.02, 30))])
    monkeypatch.chdir(tmp_path)
    argv = ("plan", "--looks", "10,20", "--pilot", "good", "bad", "--storage", "runs", "--decide-at", "2", "--races", "30")
    code, out, err = run_cli(capsys, *argv, "--json")
    assert code == 0, err
    races = json.loads(out)["races"]
    assert races["pilot_scores"] == {"good": 30, "bad": 30} and races["wins"]["good"] == 1.0
    assert races["stop_probability"] == {"10": 0.0, "20": 1.0}  # K = 2 is beyond look 10's informative budget
    code, _, err = run_cli(capsys, *argv, "--min")
    assert code == 2 and err.count("\n") == 1 and "good: the search maximizes 'val_accuracy'; leave out --min" in err

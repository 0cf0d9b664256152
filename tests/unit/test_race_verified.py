"""A race's record is recomputed from its two ledgers, never believed (issue 35 item 5), without Ray.

The ledgers are written as `showwork search` leaves them; the record is what the race decides from them
(:func:`showwork.run.race.take_look`, look by look). Each hand edit of ``race.json`` is then refused in one
line naming the field, at report (``verified_race``, what ``report --race`` reads) and at resume.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from showwork.errors import InputError
from showwork.run.race import RaceRequest, race_settings, take_look, verified_race
from showwork.space import load_search_spec
from showwork.statistics import BandSpec, decide_at_look
from showwork.store import Ledger, LedgerLockedError
from showwork.store.races import RaceRecord, read_race, write_race

from helpers import run_cli, trial_record, write_search

FAMILY = "def train(config, *, seed, device, reporter, data):\n    return {'val_accuracy': config['x']}\n"


def write_ledgers(tmp_path, scores: dict[str, list], bounds: str = "[0, 1]") -> list:
    """Two searches as a race's driver leaves them, with these scores by trial index (None: a failed trial)."""
    (tmp_path / "fam.py").write_text(FAMILY)
    specs = []
    for seed, (name, values) in enumerate(scores.items(), start=1):
        path = tmp_path / f"{name}.yaml"
        metric = f"{{name: val_accuracy, bounds: {bounds}}}" if bounds else "{name: val_accuracy}"
        path.write_text(f"name: {name}\nfamily: fam.py:train\nmetric: {metric}\nnum_trials: {len(values)}\nseed: {seed}\n"
                        "space:\n  x: {distribution: uniform, low: 0.0, high: 1.0}\n")
        spec = load_search_spec(path)
        records = [trial_record(i, score=None, status="failed") if v is None else trial_record(i, score=float(v))
                   for i, v in enumerate(values)]
        write_search(Ledger(tmp_path / "runs", name), spec, records, race="ab")
        specs.append(spec)
    return specs


def raced(tmp_path, specs, looks: str = "8,16,32", budgets=(1.0,)) -> tuple[RaceRecord, dict]:
    """The race of ``specs`` to its end, decided from the ledgers and written; its record and file's JSON."""
    settings = race_settings(specs, looks, budgets)
    race = RaceRecord("ab", settings, RaceRequest("ab", tuple(specs), settings).searches())
    while race.next_look is not None:
        race = take_look(tmp_path / "runs", race)
    path = write_race(tmp_path / "runs", race)
    return race, json.loads(path.read_text())


@pytest.fixture
def decided(tmp_path):
    """Model a near 0.85, b near 0.15: a wins at the first look (n = 8)."""
    rng = np.random.default_rng(0)
    specs = write_ledgers(tmp_path, {"a": rng.uniform(0.8, 0.9, 32), "b": rng.uniform(0.1, 0.2, 32)})
    race, data = raced(tmp_path, specs)
    assert race.status == "decided" and race.winner == "a" and race.stopped_at == 8
    return race, data


def edited(tmp_path, data: dict, path: str, value) -> None:
    """Write ``data`` with the field at dotted ``path`` (``looks[0].levels[0]``) set to ``value``."""
    data = json.loads(json.dumps(data))
    *parents, last = path.replace("[", ".[").split(".")
    target = data
    for part in parents:
        target = target[int(part[1:-1])] if part.startswith("[") else target[part]
    if last.startswith("["):
        target[int(last[1:-1])] = value
    else:
        target[last] = value
    (tmp_path / "runs" / "_races" / "ab" / "race.json").write_text(json.dumps(data))


def test_a_record_the_ledgers_decide_is_read_as_it_is(tmp_path, decided):
    race, _ = decided
    assert verified_race(tmp_path / "runs", "ab") == race
    bands = BandSpec(looks=(8, 16, 32), a=0.0, b=1.0)
    scores = [np.array([r.score for r in Ledger(tmp_path / "runs", n).records()]) for n in ("a", "b")]
    assert race.looks[0] == decide_at_look(*scores, 8, [1.0], bands, names=("a", "b"))  # the statistics' own decision


# Each field the race decides, edited by hand: refused naming it (what the user did, and more).
@pytest.mark.parametrize("field, value, said", [
    ("winner", "EVIL", "'EVIL' but the ledgers decide 'a'"),
    ("winner", "b", "'b' but the ledgers decide 'a'"),
    ("winner", None, "None but the ledgers decide 'a'"),
    ("status", "running", "'running' but the ledgers decide 'decided'"),
    ("status", "undecided", "'undecided' but the ledgers decide 'decided'"),
    ("reason", "made up", "'made up' but the ledgers decide None"),
    ("stopped_at", 16, "16 but the ledgers decide 8"),
    ("looks[0].winner", "EVIL", "'EVIL' but the ledgers decide 'a'"),
    ("looks[0].levels[0]", "weak", "'weak' but the ledgers decide 'strong'"),
    ("looks[0].favoured[0]", "b", "'b' but the ledgers decide 'a'"),
    ("looks[0].resolved[0]", False, "False but the ledgers decide True"),
    ("looks[0].number", 2, "2 but the ledgers decide 1"),
    ("looks[0].informative_k", 9.5, "9.5 but the ledgers decide"),
])
def test_a_decision_edited_by_hand_is_refused_naming_its_field(capsys, tmp_path, decided, field, value, said):
    edited(tmp_path, decided[1], field, value)
    with pytest.raises(InputError) as refused:
        verified_race(tmp_path / "runs", "ab")
    message = str(refused.value)
    assert f"race.json: field {field!r} says {said}" in message and "\n" not in message
    code, out, err = run_cli(capsys, "report", "--race", "ab", "--storage", tmp_path / "runs", "--out", tmp_path / "out",
                             "--no-mlflow")
    assert code == 2 and err == f"showwork: error: {message}\n"
    assert not (tmp_path / "out").exists()


def test_a_look_after_the_deciding_one_is_refused(tmp_path, decided):
    race, data = decided
    later = dict(data["looks"][0], look=16, number=2)
    edited(tmp_path, data, "looks", [data["looks"][0], later])  # status still "decided": the race "ran on"
    with pytest.raises(InputError, match=r"field 'looks' says 2 looks but the ledgers decide 1 look"):
        verified_race(tmp_path / "runs", "ab")


@pytest.mark.parametrize("field, value, said", [
    ("settings.confidence", 0.5, "(with the record's settings: confidence 0.5, ld-hd bands"),  # a look disagrees
    ("settings.confidence", 1.5, "its settings are not a race's"),
    ("settings.confidence", 0.0, "its settings are not a race's"),
    ("settings.method", "ks", "its settings are not a race's (--method must be one of ld-hd, ld-et"),
    ("settings.decide_by", "max", "its settings are not a race's (--decide-by must be one of median, mean"),
    ("settings.budgets", [0.5], "its settings are not a race's (--decide-at must be budgets K >= 1"),
    ("settings.minimize", True, "field 'settings.minimize' says True but the searches' specs give False"),
    ("settings.support", [0.0, 2.0], "field 'settings.support[1]' says 2.0 but the searches' specs give 1.0"),
    ("settings.failure_policy", "exclude", "field 'settings.failure_policy' says 'exclude' but the searches' specs give 'worst'"),
])
def test_settings_edited_by_hand_are_refused(tmp_path, decided, field, value, said):
    edited(tmp_path, decided[1], field, value)
    with pytest.raises(InputError) as refused:
        verified_race(tmp_path / "runs", "ab")
    assert said in str(refused.value) and "\n" not in str(refused.value)


def test_every_field_of_the_record_is_checked(tmp_path, decided):
    """Any one leaf of race.json changed (but its times, the format and where the YAML files were) is refused."""
    race, data = decided
    free = {"created_at", "updated_at", "spec_path", "format"}

    def leaves(value, path=""):
        if isinstance(value, dict):
            for key, item in value.items():
                if key not in free:
                    yield from leaves(item, f"{path}.{key}" if path else key)
        elif isinstance(value, list) and value:
            for i, item in enumerate(value):
                yield from leaves(item, f"{path}[{i}]")
        else:
            yield path, value

    def other(value):
        if isinstance(value, bool):
            return not value
        if isinstance(value, (int, float)):
            return value * 2 + 1
        return "EVIL"

    checked = 0
    for path, value in leaves(data):
        edited(tmp_path, data, path, other(value))
        with pytest.raises(InputError) as refused:
            verified_race(tmp_path / "runs", "ab")
        assert "\n" not in str(refused.value), path
        checked += 1
    assert checked > 25
    write_race(tmp_path / "runs", race)
    assert verified_race(tmp_path / "runs", "ab") == race


def test_a_resume_refuses_the_record_as_the_report_does(capsys, tmp_path, decided):
    edited(tmp_path, decided[1], "winner", "EVIL")
    code, out, err = run_cli(capsys, "race", tmp_path / "a.yaml", tmp_path / "b.yaml", "--looks", "8,16,32", "--decide-at", "1",
                             "--name", "ab", "--resume", "--storage", tmp_path / "runs", "--tracking-uri",
                             f"sqlite:///{tmp_path}/m.db", "--no-progress")
    assert code == 2 and err.startswith("showwork: error: ") and err.count("\n") == 1
    assert "field 'winner' says 'EVIL' but the ledgers decide 'a'" in err


def test_a_search_of_another_race_is_not_adopted(tmp_path, decided):
    Ledger(tmp_path / "runs", "b").update_meta(race="other")
    with pytest.raises(InputError, match="search 'b' in .* belongs to race 'other': race 'ab' adopts no other race's"):
        verified_race(tmp_path / "runs", "ab")


# --- a model whose trials all fail ----------------------------------------------------------------------


def test_a_model_whose_trials_all_fail_scores_the_worst_bound_and_loses(tmp_path):
    rng = np.random.default_rng(1)
    specs = write_ledgers(tmp_path, {"a": [None] * 16, "b": rng.uniform(0.4, 0.6, 16)})
    race, _ = raced(tmp_path, specs, looks="4,8,16")
    assert race.status == "decided" and race.winner == "b"
    assert verified_race(tmp_path / "runs", "ab") == race


@pytest.mark.parametrize("scores, bounds, reason", [
    ({"a": [None] * 8, "b": [None] * 8}, "[0, 1]", "no trial of a or b finished among the first 4: nothing to compare"),
    ({"a": [None] * 8, "b": [0.5] * 8}, None, "none of the first 4 trials of a finished, and without a finite worst bound"),
])
def test_a_look_that_cannot_be_decided_ends_the_race_saying_why(capsys, tmp_path, scores, bounds, reason):
    specs = write_ledgers(tmp_path, scores, bounds=bounds)
    race, data = raced(tmp_path, specs, looks="4,8")
    assert race.status == "undecidable" and race.next_look is None and race.looks == () and reason in race.reason
    assert data["status"] == "undecidable" and data["reason"] == race.reason and data["winner"] is None
    assert verified_race(tmp_path / "runs", "ab") == race
    assert read_race(tmp_path / "runs", "ab") == race
    # A resume says it ended (no Ray: it runs nothing), the report why there is nothing to report.
    code, out, err = run_cli(capsys, "race", tmp_path / "a.yaml", tmp_path / "b.yaml", "--looks", "4,8", "--decide-at", "1",
                             "--name", "ab", "--resume", "--storage", tmp_path / "runs", "--tracking-uri",
                             f"sqlite:///{tmp_path}/m.db", "--no-progress")
    assert code == 0, err
    assert f"nothing to run: race ab: ended at look 1 of 2 (n = 4 per model) without a decision: {race.reason}" in out
    code, out, err = run_cli(capsys, "report", "--race", "ab", "--storage", tmp_path / "runs", "--out", tmp_path / "out",
                             "--no-mlflow")
    assert code == 2 and "ended before deciding any look" in err and reason in err
    # Its reason is the ledgers' too.
    edited(tmp_path, data, "reason", "the dog ate it")
    with pytest.raises(InputError, match="field 'reason' says 'the dog ate it' but the ledgers decide '"):
        verified_race(tmp_path / "runs", "ab")


def test_an_undecidable_record_where_the_ledgers_decide_is_refused(tmp_path, decided):
    edited(tmp_path, decided[1], "looks", [])
    data = json.loads((tmp_path / "runs" / "_races" / "ab" / "race.json").read_text())
    edited(tmp_path, data | {"status": "undecidable", "reason": "made up", "winner": None, "stopped_at": None}, "reason", "made up")
    with pytest.raises(InputError, match="field 'status' says 'undecidable' but the ledgers decide 'decided'"):
        verified_race(tmp_path / "runs", "ab")
    edited(tmp_path, data | {"status": "undecidable", "winner": None, "stopped_at": None}, "reason", None)
    with pytest.raises(InputError, match="not a race's record .an undecidable race names the look it could not decide"):
        read_race(tmp_path / "runs", "ab")


def test_worst_bound():
    from showwork.statistics.failures import worst_bound

    assert worst_bound(False, 0.0, 1.0) == 0.0 and worst_bound(True, 0.0, 1.0) == 1.0
    assert worst_bound(False, -math.inf, 1.0) is None and worst_bound(True, 0.0, math.inf) is None


# --- the lock a race holds over its searches ------------------------------------------------------------


def test_a_race_holding_a_search_is_named_by_its_lock_and_lock_holder_creates_nothing(tmp_path):
    ledger = Ledger(tmp_path / "runs", "a")
    assert ledger.lock_holder() is None and not (tmp_path / "runs").exists()  # no folder, no lock file made
    with ledger.lock(race="first"):
        held = ledger.lock_holder()
        assert held is not None and "search 'a' is already being run by race 'first' (pid " in held
        with pytest.raises(LedgerLockedError) as refused:  # another driver (flock: per open file, even in one process)
            with Ledger(tmp_path / "runs", "a").lock():
                pass
        assert str(refused.value) == held
    assert ledger.lock_holder() is None
    with ledger.lock():  # a search's own driver: named by its pid alone, as before
        assert "already being run by pid " in ledger.lock_holder()

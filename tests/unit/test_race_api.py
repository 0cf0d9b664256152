"""A race from Python (issue 37 item 3): the object ``showwork.race`` returns, its lines, and races that adopt
searches already run -- without Ray.

The searches are written as ``showwork search`` leaves them (:func:`helpers.write_search`), with more trials
than the race's last look, so the race runs no trial (the ``isolated`` fixture fails a test that starts Ray):
what it decides, prints and records comes from the ledgers alone.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import showwork
from showwork.errors import InputError
from showwork.escaping import html_text
from showwork.report.wording import sequential_sentences
from showwork.run.race import verified_race
from showwork.space import load_search_spec
from showwork.store import Ledger
from showwork.store.races import read_race

from helpers import run_cli, trial_record, write_search

pytestmark = pytest.mark.usefixtures("isolated")  # tests/conftest.py: no Ray may start

FAMILY = "def train(config, *, seed, device, reporter, data):\n    return {'val_accuracy': config['x']}\n"
START = ("race ab (from the start): a vs b; looks 8,16, decided at K = 1 by the median curves, joint confidence 0.8 per"
         " model (wrong-winner bound 0.36); adopted a with 32 trials recorded and b with 32 trials recorded; record")
LOOK = ("look 1 of 2, n = 8 per model: K=1: strong for a (resolved) -> a wins; stopped, 8 trials per model saved against"
        " the last look (16)")
END = ("race ab: a is better at every K = 1 (strong evidence, resolved) after 8 trials per model; 8 trials per model saved"
       " against the last look (16)")


def write_space(folder: Path, name: str, seed: int, num_trials: int = 32) -> Path:
    (folder / "fam.py").write_text(FAMILY)
    path = folder / f"{name}.yaml"
    path.write_text(f"name: {name}\nfamily: fam.py:train\nmetric: {{name: val_accuracy, bounds: [0, 1]}}\n"
                    f"num_trials: {num_trials}\nseed: {seed}\nspace:\n  x: {{distribution: uniform, low: 0.0, high: 1.0}}\n")
    return path


def ran(folder: Path, name: str, seed: int, scores, skip: tuple[int, ...] = ()) -> Path:
    """Search ``name`` as ``showwork search`` leaves it, with these scores by index (None: a failed trial; ``skip``:
    indices without a record)."""
    path = write_space(folder, name, seed, len(scores))
    records = [trial_record(i, score=None, status="failed") if v is None else trial_record(i, score=float(v))
               for i, v in enumerate(scores) if i not in skip]
    write_search(Ledger(folder / "runs", name), load_search_spec(path), records)
    return path


@pytest.fixture
def searches(tmp_path) -> tuple[Path, Path]:
    """Searches a (scores near 0.85) and b (near 0.15), 32 trials each, begun by no race."""
    rng = np.random.default_rng(0)
    return ran(tmp_path, "a", 1, rng.uniform(0.8, 0.9, 32)), ran(tmp_path, "b", 2, rng.uniform(0.1, 0.2, 32))


def trial_files(storage: Path) -> dict[str, bytes]:
    """Every file of the searches' folders but their metadata: what a race must not rewrite."""
    return {str(p.relative_to(storage)): p.read_bytes() for p in sorted(storage.rglob("*"))
            if p.is_file() and p.name not in ("search.json", "driver.lock") and "_races" not in p.parts and ".meta.lock" != p.name}


def race(tmp_path, a, b, **options):
    options = {"looks": (8, 16), "decide_at": 1, "name": "ab", "storage": tmp_path / "runs",
               "tracking_uri": f"sqlite:///{tmp_path}/m.db", **options}
    return showwork.race(a, b, **options)


def test_a_race_adopts_two_searches_already_run_and_prints_its_lines_once(capsys, tmp_path, searches):
    before = trial_files(tmp_path / "runs")
    raced = race(tmp_path, *searches, adopt=True)
    out, err = capsys.readouterr()
    assert [out.count(line) for line in (START, LOOK, END)] == [1, 1, 1], out
    assert out.count("\n") == 3 and err == ""
    d = raced.decision
    assert (d.status, d.winner, d.look, d.look_number, d.saved_trials) == ("decided", "a", 8, 1, 8) and d.why == END
    assert d.last == raced.record.looks[-1] and raced.record == read_race(tmp_path / "runs", "ab")
    assert [s.adopted_trials for s in raced.record.searches] == [32, 32]
    # Nothing recorded was run or rewritten; each search is the race's now, so no other race adopts it.
    assert trial_files(tmp_path / "runs") == before
    assert [Ledger(tmp_path / "runs", n).read_meta()["race"] for n in "ab"] == ["ab", "ab"]
    # Read back, the race is what its ledgers decide.
    assert showwork.open_race("ab", tmp_path / "runs").record == raced.record
    # Resumed, it says it ended and runs nothing; with progress=False it prints nothing.
    assert race(tmp_path, *searches, resume=True, progress=False).record == raced.record
    assert capsys.readouterr() == ("", "")


def test_the_command_adopts_existing_searches_with_adopt_and_refuses_them_without(capsys, tmp_path, searches):
    """The example of docs/how-to/race.md (Racing searches you already ran)."""
    argv = ("race", *searches, "--looks", "8,16", "--decide-at", "1", "--name", "ab", "--storage", tmp_path / "runs",
            "--tracking-uri", f"sqlite:///{tmp_path}/m.db", "--no-progress")
    before = trial_files(tmp_path / "runs")
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and err.count("\n") == 1 and "search 'a' already exists in" in err and "add --adopt" in err
    assert read_race(tmp_path / "runs", "ab") is None
    code, out, err = run_cli(capsys, *argv, "--adopt")
    assert code == 0, err
    assert out.splitlines()[:3] == [f"{START} {tmp_path / 'runs'}/_races/ab/race.json", LOOK, END]
    assert trial_files(tmp_path / "runs") == before


def test_a_search_object_is_adopted_as_it_was_recorded(tmp_path, searches):
    a, b = (showwork.open_search(n, tmp_path / "runs") for n in "ab")
    raced = race(tmp_path, a, b, progress=False)
    assert raced.decision.winner == "a" and [s.name for s in raced.searches] == ["a", "b"]
    other = tmp_path / "elsewhere"
    with pytest.raises(InputError, match=r"space_a: search 'a' is in .*runs, the race's storage is .*elsewhere"):
        race(tmp_path, a, b, name="cd", storage=other, progress=False)


@pytest.mark.parametrize("change, fragment", [
    (lambda tmp_path: write_space(tmp_path, "a", seed=7),
     r"search 'a' in .* cannot be adopted: its seed is 1, .*a\.yaml gives 7; the race would count trials of other"),
    (lambda tmp_path: Ledger(tmp_path / "runs", "b").update_meta(race="other"),
     r"search 'b' in .* belongs to race 'other': a race adopts no other race's trials"),
    (lambda tmp_path: (tmp_path / "runs" / "b" / "search.json").write_text("{}"), r"search\.json: holds no recorded spec"),
])
def test_a_search_that_does_not_fit_is_refused_naming_it_and_the_field(tmp_path, searches, change, fragment):
    change(tmp_path)
    before = {p: p.read_bytes() for p in (tmp_path / "runs").rglob("*") if p.is_file()}
    with pytest.raises(InputError, match=fragment):
        race(tmp_path, *searches, adopt=True, progress=False)
    assert {p: p.read_bytes() for p in (tmp_path / "runs").rglob("*") if p.is_file()} == before  # nothing written


def test_a_search_missing_a_trial_below_a_look_it_was_extended_past_is_refused(tmp_path):
    rng = np.random.default_rng(0)
    a = ran(tmp_path, "a", 1, rng.uniform(0.8, 0.9, 32), skip=(3,))  # interrupted: trial 3 never ran
    b = ran(tmp_path, "b", 2, rng.uniform(0.1, 0.2, 32))
    with pytest.raises(InputError, match="search 'a' in .* was extended to 32 trials outside the race, and trial 3 of look 8"):
        race(tmp_path, a, b, adopt=True, progress=False)
    assert read_race(tmp_path / "runs", "ab") is None


def test_the_race_shows_its_looks_in_a_table_and_sentences(tmp_path, searches):
    raced = race(tmp_path, *searches, adopt=True, progress=False)
    table = raced.summary()
    assert list(table.columns) == ["n", "informative_k", "K=1 evidence", "K=1 favoured", "K=1 resolved", "winner"]
    assert table.index.tolist() == [1] and table.loc[1, "n"] == 8 and table.loc[1, "winner"] == "a"
    assert table.loc[1, "K=1 evidence"] == "strong" and bool(table.loc[1, "K=1 resolved"])
    assert table.loc[1, "informative_k"] == raced.record.looks[0].informative_k
    sentences = raced.sentences()
    assert sentences == sequential_sentences(raced.record)  # the report's words, one owner
    assert "It stopped at look 1 of 2 (n = 8 per model): a is better at every K = 1" in sentences[1]
    assert sentences[2].startswith("The race adopted a (32 trials) and b (32 trials) as they were recorded before it began")
    assert repr(raced) == f"Race('ab', 'a' vs 'b': a wins at n = 8, storage={str(tmp_path / 'runs')!r})"
    html = raced._repr_html_()
    assert html.count("<table>") == 1 and "<td>a wins: stop</td>" in html
    assert all(html_text(s) in html for s in sentences)


def test_open_race_recomputes_the_record_and_names_the_races_there(tmp_path, searches):
    race(tmp_path, *searches, adopt=True, progress=False)
    with pytest.raises(InputError, match=r"no race 'ba' in .* \(races there: ab\)"):
        showwork.open_race("ba", tmp_path / "runs")
    path = tmp_path / "runs" / "_races" / "ab" / "race.json"
    path.write_text(json.dumps(json.loads(path.read_text()) | {"winner": "b"}))
    with pytest.raises(InputError, match="field 'winner' says 'b' but the ledgers decide 'a'"):
        showwork.open_race("ab", tmp_path / "runs")


def test_a_race_that_adopted_a_search_before_recording_itself_there_is_still_its_own(tmp_path, searches):
    """Killed between writing race.json and recording the race in the adopted searches' search.json."""
    raced = race(tmp_path, *searches, adopt=True, progress=False, decide_at=30)  # no look resolves K = 30
    assert raced.decision.status == "undecided"
    for name in "ab":
        meta = json.loads((tmp_path / "runs" / name / "search.json").read_text())
        del meta["race"]
        (tmp_path / "runs" / name / "search.json").write_text(json.dumps(meta))
    assert verified_race(tmp_path / "runs", "ab") == raced.record
    data = json.loads((tmp_path / "runs" / "_races" / "ab" / "race.json").read_text())
    for search in data["searches"]:
        search["adopted_trials"] = None  # a search the race says it began, which records no race: refused
    (tmp_path / "runs" / "_races" / "ab" / "race.json").write_text(json.dumps(data | {"looks": [], "status": "running",
                                                                                      "winner": None, "stopped_at": None}))
    with pytest.raises(InputError, match="search 'a' in .* was not begun by this race"):
        verified_race(tmp_path / "runs", "ab")


def test_an_undecidable_race_says_why_in_its_sentences(tmp_path):
    """It said nothing of its end before (only a running race's or a decided one's)."""
    a, b = ran(tmp_path, "a", 1, [None] * 8), ran(tmp_path, "b", 2, [None] * 8)  # no trial of either finished
    raced = race(tmp_path, a, b, adopt=True, progress=False, looks=(4, 8))
    assert raced.decision.status == "undecidable" and (raced.decision.look, raced.decision.look_number) == (4, 1)
    assert raced.sentences()[1] == ("It ended at look 1 of 2 (n = 4 per model) without a decision: no trial of a or b"
                                     " finished among the first 4: nothing to compare.")
    assert repr(raced).startswith("Race('ab', 'a' vs 'b': undecidable,")
    assert raced.summary().empty and "<tbody>\n\n</tbody>" in raced._repr_html_()  # no look taken: no row

"""`showwork race` and `showwork report --race` with bad input: one ``showwork: error:`` line, exit 2, nothing lost.

None of these starts Ray (the ``isolated`` fixture fails a test whose race gets as far as starting it):
every refusal comes before any trial. "Nothing lost": a race's record, a file or a link in the race
folder's place, and the searches' folders are byte for byte what they were before the command.
"""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import numpy as np
import pytest

from showwork.run.race import RaceRequest, race_settings, take_look
from showwork.space import load_search_spec
from showwork.store import Ledger
from showwork.store.races import RaceRecord, read_race, write_race

from helpers import run_cli, trial_record, write_search

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("isolated")]  # isolated: tests/conftest.py

FAMILY = """
def train(config, *, seed, device, reporter, data):
    return {"val_accuracy": config["level"] + 0.01 * config["x"]}
"""


def space(folder: Path, name: str, level: float = 0.5, seed: int = 1, bounds: str = "[0, 1]", mode: str = "max") -> Path:
    (folder / "fam.py").write_text(FAMILY)
    path = folder / f"{name}.yaml"
    path.write_text(textwrap.dedent(f"""\
        name: {name}
        family: fam.py:train
        metric: {{name: val_accuracy, mode: {mode}, bounds: {bounds}}}
        num_trials: 4
        seed: {seed}
        space:
          level: {level}
          x: {{distribution: uniform, low: 0.0, high: 1.0}}
    """))
    return path


def race(capsys, folder: Path, a: Path, b: Path, *extra) -> tuple[int, str, str]:
    storage, db = folder / "runs", folder / "mlflow.db"
    return run_cli(capsys, "race", a, b, "--no-progress", "--storage", storage, "--tracking-uri", f"sqlite:///{db}", *extra)


def refused(code: int, err: str, fragment: str) -> str:
    assert code == 2, err
    assert err.startswith("showwork: error: ") and err.count("\n") == 1, err
    assert fragment in err, err
    return err


def snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every file, link and folder under ``folder``: its bytes, its target or a mark.

    Python's bytecode caches are left out: importing the family to check it writes
    ``__pycache__`` beside it unless PYTHONDONTWRITEBYTECODE is set (CI does not set it), and so is an
    empty ``driver.lock``: the lock a race takes over its searches (every search's driver leaves one)."""
    out: dict[str, bytes | str] = {}
    for path in sorted(folder.rglob("*")):
        if "__pycache__" in path.parts or (path.name == "driver.lock" and not path.read_bytes()):
            continue
        key = str(path.relative_to(folder))
        out[key] = f"-> {path.readlink()}" if path.is_symlink() else path.read_bytes() if path.is_file() else "dir"
    return out


@pytest.fixture
def spaces(tmp_path) -> tuple[Path, Path]:
    return space(tmp_path, "model-a", 0.9), space(tmp_path, "model-b", 0.2, seed=2)


def started(tmp_path: Path, a: Path, b: Path, looks: str = "4,8", budgets=(1.0,), **options) -> RaceRecord:
    """The record a race of ``a`` and ``b`` writes when it starts (as ``showwork race A B --looks ... --decide-at 1``)."""
    specs = (load_search_spec(a), load_search_spec(b))
    record = RaceRecord(f"{specs[0].name}-vs-{specs[1].name}", race_settings(specs, looks, budgets, **options),
                        RaceRequest("x", specs, race_settings(specs, looks, budgets, **options)).searches())
    write_race(tmp_path / "runs", record)
    return record


@pytest.mark.parametrize("looks, fragment", [
    ("8,4", "--looks: looks must be strictly increasing trial counts"),
    ("4,4", "--looks: looks must be strictly increasing trial counts"),
    ("0,4", "--looks: looks must be strictly increasing trial counts"),
    ("4,x", "--looks: looks must be whole trial counts separated by commas"),
])
def test_looks_that_do_not_increase_are_refused(capsys, tmp_path, spaces, looks, fragment):
    refused(*race(capsys, tmp_path, *spaces, "--looks", looks, "--decide-at", "1")[::2], fragment)
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("budgets", ["0", "0.5", "1,0"])
def test_a_budget_below_one_is_refused(capsys, tmp_path, spaces, budgets):
    refused(*race(capsys, tmp_path, *spaces, "--looks", "4,8", "--decide-at", budgets)[::2], "--decide-at must be budgets K >= 1")
    assert not (tmp_path / "runs").exists()


def test_the_same_space_twice_is_refused(capsys, tmp_path, spaces):
    refused(*race(capsys, tmp_path, spaces[0], spaces[0], "--looks", "4,8", "--decide-at", "1")[::2],
            "both search spaces name their search 'model-a'")
    assert not (tmp_path / "runs").exists()


def test_two_spaces_with_one_search_name_are_refused(capsys, tmp_path):
    a = space(tmp_path, "model-a", 0.9)
    other = tmp_path / "other"
    other.mkdir()
    b = space(other, "model-a", 0.2)  # another space, the same name: the two searches would share a ledger
    refused(*race(capsys, tmp_path, a, b, "--looks", "4,8", "--decide-at", "1")[::2], "both search spaces name their search 'model-a'")


def test_two_names_for_the_same_draws_are_refused(capsys, tmp_path):
    a = space(tmp_path, "model-a", 0.9)
    copy = tmp_path / "copy.yaml"
    copy.write_text(a.read_text().replace("name: model-a", "name: model-a-copy"))
    refused(*race(capsys, tmp_path, a, copy, "--looks", "4,8", "--decide-at", "1")[::2], "draw the same configurations")


def test_opposite_directions_are_refused(capsys, tmp_path):
    a, b = space(tmp_path, "model-a", 0.9), space(tmp_path, "model-b", 0.2, mode="min")
    refused(*race(capsys, tmp_path, a, b, "--looks", "4,8", "--decide-at", "1")[::2], "minimizes it (metric.mode)")


def test_the_mean_without_bounds_is_refused(capsys, tmp_path):
    a, b = space(tmp_path, "model-a", 0.9, bounds="null"), space(tmp_path, "model-b", 0.2, bounds="null")
    refused(*race(capsys, tmp_path, a, b, "--looks", "4,8", "--decide-at", "1", "--decide-by", "mean")[::2],
            "--decide-by mean needs the score's bounds")


def test_a_bad_race_name_is_refused(capsys, tmp_path, spaces):
    refused(*race(capsys, tmp_path, *spaces, "--looks", "4,8", "--decide-at", "1", "--name", "../up")[::2],
            "race name '../up' (--name): must be")


@pytest.mark.parametrize("kind", ["file", "symlink"])
def test_a_race_folder_that_is_a_file_or_a_link_is_refused_and_kept(capsys, tmp_path, spaces, kind):
    races = tmp_path / "runs" / "_races"
    races.mkdir(parents=True)
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    place = races / "model-a-vs-model-b"
    if kind == "file":
        place.write_text("not a folder")
    else:
        place.symlink_to(target)
    before = snapshot(tmp_path)
    err = refused(*race(capsys, tmp_path, *spaces, "--looks", "4,8", "--decide-at", "1")[::2], str(place))
    assert ("a symbolic link" if kind == "symlink" else "not a folder") in err
    assert snapshot(tmp_path) == before


def test_a_races_folder_that_is_a_link_is_refused(capsys, tmp_path, spaces):
    (tmp_path / "runs").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "runs" / "_races").symlink_to(tmp_path / "elsewhere")
    before = snapshot(tmp_path)
    refused(*race(capsys, tmp_path, *spaces, "--looks", "4,8", "--decide-at", "1")[::2], "is a symbolic link")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("text, fragment", [
    ("{not json", "not a race's record"),
    ('{"race": "model-a-vs-model-b"}', "not a race's record (no field 'searches')"),
    ("[1, 2]", "not a race's record (not a JSON object)"),
    ("\xff\xfe", "not a race's record"),
])
def test_a_corrupt_record_is_refused_and_left_in_place(capsys, tmp_path, spaces, text, fragment):
    folder = tmp_path / "runs" / "_races" / "model-a-vs-model-b"
    folder.mkdir(parents=True)
    (folder / "race.json").write_bytes(text.encode("latin-1"))
    before = snapshot(tmp_path)
    for resume in ((), ("--resume",)):
        refused(*race(capsys, tmp_path, *spaces, "--looks", "4,8", "--decide-at", "1", *resume)[::2], fragment)
    assert snapshot(tmp_path) == before


def test_a_record_of_another_race_is_refused(capsys, tmp_path, spaces):
    record = started(tmp_path, *spaces)
    folder = tmp_path / "runs" / "_races"
    (folder / record.name).rename(folder / "renamed")
    refused(*race(capsys, tmp_path, *spaces, "--looks", "4,8", "--decide-at", "1", "--name", "renamed", "--resume")[::2],
            "holds race 'model-a-vs-model-b', not 'renamed'")


def test_a_race_that_exists_is_refused_without_resume(capsys, tmp_path, spaces):
    started(tmp_path, *spaces)
    before = snapshot(tmp_path)
    refused(*race(capsys, tmp_path, *spaces, "--looks", "4,8", "--decide-at", "1")[::2],
            "race 'model-a-vs-model-b' already exists in")
    assert snapshot(tmp_path) == before


def test_resuming_a_race_that_does_not_exist_is_refused(capsys, tmp_path, spaces):
    refused(*race(capsys, tmp_path, *spaces, "--looks", "4,8", "--decide-at", "1", "--resume")[::2],
            "no race 'model-a-vs-model-b' in")
    assert not (tmp_path / "runs").exists()


def test_a_new_race_whose_search_exists_is_refused(capsys, tmp_path, spaces):
    (tmp_path / "runs" / "model-b").mkdir(parents=True)
    (tmp_path / "runs" / "model-b" / "search.json").write_text("{}")
    before = snapshot(tmp_path)
    refused(*race(capsys, tmp_path, *spaces, "--looks", "4,8", "--decide-at", "1")[::2],
            "search 'model-b' already exists in")
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("options, field", [
    (("--looks", "4,12", "--decide-at", "1"), "settings.looks[1]"),
    (("--looks", "4,8,16", "--decide-at", "1"), "settings.looks"),
    (("--looks", "4,8", "--decide-at", "2"), "settings.budgets[0]"),
    (("--looks", "4,8", "--decide-at", "1", "--confidence", "0.9"), "settings.confidence"),
    (("--looks", "4,8", "--decide-at", "1", "--method", "ld-et"), "settings.method"),
    (("--looks", "4,8", "--decide-at", "1", "--decide-by", "mean"), "settings.decide_by"),
])
def test_a_resume_that_changes_a_setting_is_refused_naming_it(capsys, tmp_path, spaces, options, field):
    started(tmp_path, *spaces)
    before = snapshot(tmp_path)
    err = refused(*race(capsys, tmp_path, *spaces, *options, "--resume")[::2], f"was started with another {field} than")
    assert "resume it with the arguments it was started with" in err
    assert snapshot(tmp_path) == before


def test_a_resume_with_an_edited_space_is_refused_naming_the_field(capsys, tmp_path, spaces):
    started(tmp_path, *spaces)
    spaces[1].write_text(spaces[1].read_text().replace("level: 0.2", "level: 0.3"))
    before = snapshot(tmp_path)
    refused(*race(capsys, tmp_path, *spaces, "--looks", "4,8", "--decide-at", "1", "--resume")[::2],
            "another searches[1].identity.space.level.value than")
    assert snapshot(tmp_path) == before


def test_resuming_an_ended_race_runs_nothing(capsys, tmp_path, spaces):
    """A race that has ended is only reported: no Ray (the fixture would fail), the record unchanged."""
    record = ended(tmp_path, *spaces)
    assert record.status == "decided" and record.winner == "model-a"
    before = snapshot(tmp_path)
    code, out, err = race(capsys, tmp_path, *spaces, "--looks", "4,8", "--decide-at", "1", "--resume")
    assert code == 0, err
    assert "nothing to run: race model-a-vs-model-b: model-a is better at every K = 1" in out
    assert snapshot(tmp_path) == before
    assert read_race(tmp_path / "runs", "model-a-vs-model-b").status == "decided"


def test_the_race_json_option_prints_the_record(capsys, tmp_path, spaces):
    record = ended(tmp_path, *spaces)
    code, out, err = race(capsys, tmp_path, *spaces, "--looks", "4,8", "--decide-at", "1", "--resume", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data == record.to_dict() | {"saved_trials_per_model": record.saved_trials()}
    assert data["winner"] == "model-a" and data["stopped_at"] == record.stopped_at
    assert "model-a is better" in err  # the lines go to stderr with --json


# --- showwork report --race ----------------------------------------------------------------------------


def test_report_of_no_race_lists_the_races(capsys, tmp_path, spaces):
    started(tmp_path, *spaces)
    refused(*run_cli(capsys, "report", "--race", "nope", "--storage", tmp_path / "runs", "--out", tmp_path / "out")[::2],
            "no race 'nope' in")
    refused(*run_cli(capsys, "report", "--race", "model-a-vs-model-b", "--storage", tmp_path / "runs", "--out", tmp_path / "out")[::2],
            "has taken no look yet")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("extra, fragment", [
    (("model-a",), "it takes no SOURCE"),
    (("--by", "x"), "it takes no --by"),
    (("--failed", "exclude"), "it takes no --failed"),
    (("--confidence", "0.9"), "--confidence 0.9: race 'model-a-vs-model-b' was decided with 0.8"),
    (("--method", "ks"), "--method ks: race 'model-a-vs-model-b' was decided with ld-hd"),
])
def test_report_of_a_race_refuses_other_sources_and_bands(capsys, tmp_path, spaces, extra, fragment):
    record = ended(tmp_path, *spaces)
    refused(*run_cli(capsys, "report", "--race", record.name, "--storage", tmp_path / "runs", "--out", tmp_path / "out",
                     *extra)[::2], fragment)


def test_report_without_a_source_or_a_race_is_refused(capsys, tmp_path):
    refused(*run_cli(capsys, "report", "--out", tmp_path / "out")[::2], "give at least one SOURCE")


# --- a resumed race whose trials are recorded: decided from the ledgers, no Ray -------------------------


def recorded_searches(tmp_path: Path, a: Path, b: Path, num_trials: int, recorded: int, hole: int | None = None) -> None:
    """Both searches as `showwork search` leaves them with ``num_trials`` planned and trials 0..recorded-1 (but
    ``hole``) recorded: model A's scores near 0.9, model B's near 0.2."""
    rng = np.random.default_rng(5)
    for path, level in ((a, 0.9), (b, 0.2)):
        spec = load_search_spec(path, {"num_trials": num_trials})
        records = [trial_record(i, score=float(level + 0.05 * rng.uniform())) for i in range(recorded) if i != hole]
        write_search(Ledger(tmp_path / "runs", spec.name), spec, records)
        Ledger(tmp_path / "runs", spec.name).update_meta(race="model-a-vs-model-b")  # as the race's driver records it


def ended(tmp_path: Path, a: Path, b: Path, looks: str = "4,8") -> RaceRecord:
    """A race of ``a`` and ``b`` that has ended, its record what the ledgers decide (model A near 0.9, B near 0.2)."""
    record = started(tmp_path, a, b, looks=looks)
    last = int(looks.split(",")[-1])
    recorded_searches(tmp_path, a, b, num_trials=last, recorded=last)
    while record.next_look is not None:
        record = take_look(tmp_path / "runs", record)
    write_race(tmp_path / "runs", record)
    return record


def test_a_race_whose_searches_were_extended_is_decided_from_their_first_trials(capsys, tmp_path, spaces):
    """Searches extended beyond the look outside the race (16 trials, look 8): nothing runs, the first 8 decide."""
    started(tmp_path, *spaces, looks="8,16")
    recorded_searches(tmp_path, *spaces, num_trials=16, recorded=16)
    code, out, err = race(capsys, tmp_path, *spaces, "--looks", "8,16", "--decide-at", "1", "--resume")
    assert code == 0, err
    assert "look 1 of 2, n = 8 per model: K=1: strong for model-a (resolved) -> model-a wins" in out
    race_record = read_race(tmp_path / "runs", "model-a-vs-model-b")
    assert race_record.status == "decided" and race_record.stopped_at == 8
    assert not (tmp_path / "mlflow.db").exists()  # no search was run, not even to replay


def test_an_extended_search_missing_a_trial_of_the_look_is_refused(capsys, tmp_path, spaces):
    started(tmp_path, *spaces, looks="8,16")
    recorded_searches(tmp_path, *spaces, num_trials=16, recorded=16, hole=3)
    before = snapshot(tmp_path)
    refused(*race(capsys, tmp_path, *spaces, "--looks", "8,16", "--decide-at", "1", "--resume")[::2],
            "search 'model-a' in")
    assert snapshot(tmp_path) == before


def test_a_race_interrupted_before_its_decision_decides_without_running_a_trial(capsys, tmp_path, spaces, template_db):
    """Both searches hold the look's trials (the race stopped after them, before recording the look): the resume
    brings MLflow up to date and decides, Ray never starts (the fixture fails the test if it does)."""
    shutil.copy(template_db, tmp_path / "mlflow.db")
    started(tmp_path, *spaces, looks="8,16")
    recorded_searches(tmp_path, *spaces, num_trials=8, recorded=8)
    code, out, err = race(capsys, tmp_path, *spaces, "--looks", "8,16", "--decide-at", "1", "--resume")
    assert code == 0, err
    assert "race model-a-vs-model-b (from the start)" in out and "-> model-a wins" in out
    assert read_race(tmp_path / "runs", "model-a-vs-model-b").winner == "model-a"


def test_the_python_api_refuses_what_the_command_refuses(tmp_path):
    import showwork
    from showwork.errors import InputError

    space = tmp_path / "a.yaml"
    space.write_text(
        "name: a\nfamily: fam.py:train\nmetric: {name: acc, mode: max, bounds: [0, 1]}\nnum_trials: 10\nseed: 1\n"
        "space:\n  x: {distribution: uniform, low: 0.0, high: 1.0}\n"
    )
    (tmp_path / "fam.py").write_text("def train(config, *, seed, device, reporter, data):\n    return {'acc': config['x']}\n")
    with pytest.raises(InputError, match="both search spaces name their search 'a'"):
        showwork.race(space, space, looks=(4, 8), decide_at=1, storage=tmp_path / "runs", tracking_uri=f"sqlite:///{tmp_path}/m.db")
    assert not (tmp_path / "runs").exists()

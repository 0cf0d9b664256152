"""The ledger: atomic, durable trial records that survive crashes, concurrent writers and junk files."""

from __future__ import annotations

import csv
import io
import json
import math
import multiprocessing
import os

import numpy as np
import pytest

from showwork.errors import InputError, UnavailableError
from showwork.files import atomic_writer, write_atomic, write_temp_file
from showwork.store import (
    EXPORT_COLUMNS,
    InvalidRecordError,
    Ledger,
    LedgerConflictError,
    LedgerLockedError,
    LedgerWriteError,
    TrialRecord,
    list_searches,
    utc_now_iso,
)

from helpers import trial_record as make_record


def same(a, b) -> bool:
    """Equality that treats NaN as equal to NaN, through nested containers."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


# ---------------------------------------------------------------- records


def test_record_round_trip_with_non_finite_values():
    record = make_record(
        3,
        status="failed",
        score=math.nan,
        test_score=-math.inf,
        metrics={"loss": math.inf, "nested": {"x": -math.inf, "ok": 1.5}, "note": "text"},
        history=[{"epoch": 1, "loss": 2.0}, {"epoch": 2, "loss": math.nan}],
        params={"act": "NaN", "lr": 1e-3, "flag": True, "nothing": None},
        error="ValueError: diverged\nTraceback (most recent call last):\n  File x, line 1",
    )
    text = record.to_json()
    json.loads(text)  # strict JSON: no bare NaN / Infinity
    assert "NaN" in text and '"Infinity"' in text and '"-Infinity"' in text
    for token in (": NaN", ": Infinity", ": -Infinity"):
        assert token not in text
    back = TrialRecord.from_json(text)
    assert math.isnan(back.score) and back.test_score == -math.inf
    assert back.metrics["loss"] == math.inf and back.metrics["nested"]["x"] == -math.inf
    assert math.isnan(back.history[1]["loss"])
    assert back.params == {"act": "NaN", "lr": 1e-3, "flag": True, "nothing": None}  # a string stays a string
    assert same(back.to_dict(), record.to_dict())
    assert back.to_json() == text


def test_record_normalises_numpy_and_int_values():
    record = make_record(0, score=np.float32(0.25), seed=np.int64(7), params={"lr": np.float64(0.1), "n": np.int32(3)})
    assert type(record.score) is float and record.score == 0.25
    assert type(record.seed) is int and record.params == {"lr": 0.1, "n": 3}
    assert type(make_record(0, score=1).score) is float


@pytest.mark.parametrize(
    "changes, field",
    [
        ({"status": "done"}, "status"),
        ({"index": -1}, "index"),
        ({"seed": 1.5}, "seed"),
        ({"score": "high"}, "score"),
        ({"runtime_s": -1.0}, "runtime_s"),
        ({"runtime_s": math.inf}, "runtime_s"),
        ({"setup_s": -0.5}, "setup_s"),
        ({"setup_s": "slow"}, "setup_s"),
        ({"params": {"lr": math.nan}}, "params"),
        ({"params": {"model": {"lr": 1}}}, "params"),
        ({"history": [{"loss": 1.0}]}, "history"),
        ({"started_at": "yesterday"}, "started_at"),
        ({"finished_at": "2025-01-01T00:00:00"}, "finished_at"),  # no UTC offset
        ({"attempts": 0}, "attempts"),
        ({"metrics": {"obj": object()}}, "metrics"),
    ],
)
def test_invalid_records_are_refused_naming_the_field(changes, field):
    changes = {"index": 1, **changes}
    with pytest.raises(InvalidRecordError, match=field):
        make_record(changes.pop("index"), **changes)


# A record as the dataclass TrialRecord (before issue 18 made it a pydantic model) wrote it, in one line.
WRITTEN_BEFORE = '{"index": 7, "status": "finished", "params": {"optimizer.lr": 0.001, "act": "NaN", "flag": true}, "seed": 1007, "score": "NaN", "test_score": null, "metrics": {"loss": "Infinity"}, "history": [{"epoch": 1, "loss": "-Infinity"}], "runtime_s": 2.5, "setup_s": 0.25, "gpu_seconds": null, "error": null, "node_id": null, "hostname": null, "pid": null, "python": null, "packages": {"torch": "2.5.1"}, "peak_rss_bytes": 1024, "peak_gpu_allocated_bytes": null, "peak_gpu_reserved_bytes": null, "started_at": "2025-01-01T00:00:00+00:00", "finished_at": "2025-01-01T00:00:02.500000+00:00", "attempts": 1, "mlflow_run_id": null}'


def test_a_record_written_before_reads_and_writes_back_the_same_bytes():
    before = json.dumps(json.loads(WRITTEN_BEFORE), indent=2, ensure_ascii=False) + "\n"
    record = TrialRecord.from_json(before, source="000007.json")
    assert math.isnan(record.score) and record.metrics == {"loss": math.inf} and record.params["act"] == "NaN"
    assert record.to_json() == before


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"index": -1}, "field 'index' must be >= 0, not -1"),
        ({"seed": True}, "field 'seed' must be an integer, not True"),
        ({"score": "high"}, "field 'score' must be a number or null, not 'high'"),
        ({"attempts": 1.0}, "field 'attempts' must be an integer, not 1.0"),
        ({"runtime_s": math.inf}, "field 'runtime_s' must be a finite number >= 0, not inf"),
        ({"status": "done"}, "field 'status' must be one of finished, failed, timeout, not 'done'"),
        ({"error": 3}, "field 'error' must be a string or null, not 3"),
        ({"params": {1: 2}}, "params has a key 1 that is not a string"),
        ({"history": [3]}, "field 'history' entry 0 must be an object, not int"),
        ({"packages": {"torch": 2}}, "field 'packages' must be an object of distribution names to version strings, or null"),
        ({"finished_at": "2025-01-01T00:00:00"}, "field 'finished_at' must carry a UTC offset"),
    ],
)
def test_a_refused_record_is_one_line_naming_the_source_and_field(changes, message):
    data = {**make_record(1).to_dict(), **changes}
    with pytest.raises(InvalidRecordError) as refused:
        TrialRecord.from_dict(data, source="trials/000001.json")
    assert str(refused.value).startswith(f"trials/000001.json: {message}")
    with pytest.raises(InvalidRecordError) as refused:
        make_record(**{"index": 1, **changes})
    assert str(refused.value).startswith(f"trial record {changes.get('index', 1)!r}: {message}")


def test_setup_s_is_kept_and_a_record_without_it_still_loads():
    record = make_record(4, runtime_s=2.0, setup_s=7.25)
    assert TrialRecord.from_json(record.to_json()).setup_s == 7.25
    older = record.to_dict()
    del older["setup_s"]  # written before setup_s was recorded
    back = TrialRecord.from_dict(older)
    assert back.setup_s is None and back.runtime_s == 2.0


def test_the_ledger_numbers_the_attempts_and_names_rays_folder(tmp_path):
    ledger = Ledger(tmp_path, "s")
    assert ledger.attempts_started(3) == 0 and ledger.ray_logs() == ()
    assert [ledger.begin_attempt(3) for _ in range(3)] == [1, 2, 3]
    assert ledger.begin_attempt(4) == 1 and ledger.attempts_started(3) == 3
    assert sorted(p.name for p in ledger.attempts_dir.iterdir()) == ["000003.1", "000003.2", "000003.3", "000004.1"]
    assert ledger.ray_dir == tmp_path / "s" / "ray"
    ledger.ray_dir.mkdir()
    for name in ("run-20261124T080000.000001Z.log", "run-20261124T070000.000001Z.log", "tuner.pkl"):
        (ledger.ray_dir / name).write_text("")
    assert [p.name for p in ledger.ray_logs()] == ["run-20261124T070000.000001Z.log", "run-20261124T080000.000001Z.log"]


def test_a_refused_attempt_marker_is_a_ledger_write_error(tmp_path):
    ledger = Ledger(tmp_path, "s")
    ledger.root.mkdir()
    ledger.attempts_dir.write_text("a file where the folder should be")
    with pytest.raises(LedgerWriteError, match="attempts"):
        ledger.begin_attempt(0)


def test_from_json_names_the_source_and_problem():
    good = make_record(2).to_dict()
    with pytest.raises(InvalidRecordError, match=r"somewhere\.json: not valid JSON"):
        TrialRecord.from_json('{"index": 2, ', source="somewhere.json")
    with pytest.raises(InvalidRecordError, match="missing field.*'seed'"):
        TrialRecord.from_dict({k: v for k, v in good.items() if k != "seed"})
    with pytest.raises(InvalidRecordError, match="unknown field.*'colour'"):
        TrialRecord.from_dict({**good, "colour": "red"})
    with pytest.raises(InvalidRecordError, match="bare NaN"):
        TrialRecord.from_json(json.dumps(good).replace('"score": 0.52', '"score": NaN'))
    assert issubclass(InvalidRecordError, InputError)


# ---------------------------------------------------------------- writing and reading


def test_atomic_writes_replace_whole_files_or_nothing(tmp_path):
    # showwork.files: the one atomic write of the ledger, the report and the caches.
    target = tmp_path / "deep" / "search.json"
    assert write_atomic(target, "old\n") == target and target.read_text() == "old\n"
    assert target.stat().st_mode & 0o777 == 0o600  # owner-only by default, as the ledger's files always were
    with pytest.raises(RuntimeError), atomic_writer(target) as handle:
        handle.write("half of the new")
        raise RuntimeError("the writer fails")
    assert target.read_text() == "old\n"
    write_atomic(target, b"new\n", mode=0o666)  # the umask decides, as for a report
    assert target.read_bytes() == b"new\n" and sorted(p.name for p in target.parent.iterdir()) == ["search.json"]
    first, second = (write_temp_file(tmp_path, "x", text) for text in ("1", "2"))
    assert first != second and first.read_text() == "1" and second.read_text() == "2"  # unique temp names




def test_write_read_records_missing(tmp_path):
    ledger = Ledger(tmp_path, "search-a")
    assert not ledger.exists() and ledger.records() == [] and ledger.missing(3) == [0, 1, 2]
    for index in (4, 0, 2):
        assert ledger.write(make_record(index)) is True
    assert (tmp_path / "search-a" / "trials" / "000004.json").is_file()
    assert [r.index for r in ledger.records()] == [0, 2, 4]
    assert ledger.completed_indices() == {0, 2, 4}
    assert ledger.missing(6) == [1, 3, 5]
    assert ledger.missing(0) == []
    assert same(ledger.read(2).to_dict(), make_record(2).to_dict())
    assert ledger.read(3) is None
    assert list_searches(tmp_path) == ["search-a"]
    with pytest.raises(InputError, match="num_trials"):
        ledger.missing(-1)


def test_atomic_write_leaves_no_temp_files(tmp_path):
    ledger = Ledger(tmp_path, "s")
    for index in range(5):
        ledger.write(make_record(index))
    ledger.write(make_record(1, mlflow_run_id="abc"), replace=True)
    ledger.update_meta(seed=1)
    names = sorted(p.name for p in (tmp_path / "s" / "trials").iterdir())
    assert names == [f"{i:06d}.json" for i in range(5)]
    assert not [p for p in (tmp_path / "s").rglob("*") if p.name.endswith(".tmp")]


def test_identical_write_is_a_no_op_and_different_is_refused(tmp_path):
    ledger = Ledger(tmp_path, "s")
    ledger.write(make_record(1, score=math.nan))
    before = ledger.path(1).stat().st_mtime_ns
    assert ledger.write(make_record(1, score=math.nan)) is False  # NaN == NaN for this purpose
    assert ledger.path(1).stat().st_mtime_ns == before
    with pytest.raises(LedgerConflictError, match=r"000001\.json.*different record of trial 1.*score"):
        ledger.write(make_record(1, score=0.9))
    assert math.isnan(ledger.read(1).score)
    assert ledger.write(make_record(1, score=math.nan, mlflow_run_id="run1"), replace=True) is True
    assert ledger.read(1).mlflow_run_id == "run1"


def test_set_mlflow_run_id_and_worker_death_records(tmp_path):
    ledger = Ledger(tmp_path, "s")
    ledger.write(make_record(0))
    assert ledger.set_mlflow_run_id(0, "run0").mlflow_run_id == "run0"
    assert ledger.read(0).mlflow_run_id == "run0"
    with pytest.raises(InputError, match="no record of trial 1"):
        ledger.set_mlflow_run_id(1, "run1")
    died = TrialRecord.failed_without_worker(1, params={"lr": 0.1}, seed=5, reason="killed by the OOM killer", attempts=2)
    assert died.status == "failed" and died.score is None and died.error == "WorkerDied: killed by the OOM killer"
    ledger.write(died)
    assert ledger.read(1).attempts == 2


def _write_many(args):
    storage, worker = args
    ledger = Ledger(storage, "shared")
    for index in range(worker, 80, 8):
        ledger.write(make_record(index, pid=os.getpid()))
    return worker


def test_concurrent_writers_from_eight_processes(tmp_path):
    with multiprocessing.get_context("fork").Pool(8) as pool:
        assert sorted(pool.map(_write_many, [(str(tmp_path), w) for w in range(8)])) == list(range(8))
    ledger = Ledger(tmp_path, "shared")
    records = ledger.records()
    assert [r.index for r in records] == list(range(80))
    assert len({r.pid for r in records}) > 1
    assert ledger.missing(80) == []
    assert not list((tmp_path / "shared" / "trials").glob(".*"))


def _write_same(args):
    storage, _ = args
    return Ledger(storage, "same").write(make_record(9, pid=1))


def test_concurrent_writers_of_the_same_record(tmp_path):
    with multiprocessing.get_context("fork").Pool(6) as pool:
        written = pool.map(_write_same, [(str(tmp_path), w) for w in range(6)])
    assert written.count(True) == 1  # the others found the identical record: no-ops
    assert [r.index for r in Ledger(tmp_path, "same").records()] == [9]
    assert not list((tmp_path / "same" / "trials").glob(".*"))


def test_records_are_keyword_only():
    with pytest.raises(TypeError):
        TrialRecord(0, "finished", {}, 1, 0.5)  # type: ignore[misc]


def test_corrupt_files_are_moved_aside_with_a_warning(tmp_path):
    ledger = Ledger(tmp_path, "s")
    for index in range(4):
        ledger.write(make_record(index))
    ledger.path(1).write_text('{"index": 1, "status": "fin')  # truncated
    ledger.path(2).write_bytes(b"\x00\x01junk")
    wrong = make_record(7).to_dict()
    ledger.path(3).write_text(json.dumps(wrong))  # valid record, wrong file
    with pytest.warns(UserWarning) as caught:
        records = ledger.records()
    messages = sorted(str(w.message) for w in caught)
    assert len(messages) == 3
    assert "000001.json: not valid JSON" in messages[0] and "moved to" in messages[0] and "corrupt" in messages[0]
    assert "holds trial 7, but its name says trial 3" in messages[2]
    assert [r.index for r in records] == [0]
    assert ledger.missing(4) == [1, 2, 3]
    aside = sorted(p.name for p in (tmp_path / "s" / "trials" / "corrupt").iterdir())
    assert len(aside) == 3 and all(name.startswith(("000001.json.", "000002.json.", "000003.json.")) for name in aside)
    # the data is kept, and the trial can be written again
    assert any(p.read_bytes() == b"\x00\x01junk" for p in (tmp_path / "s" / "trials" / "corrupt").iterdir())
    ledger.write(make_record(1))
    assert ledger.missing(4) == [2, 3]


def test_write_over_a_corrupt_file_moves_it_aside(tmp_path):
    ledger = Ledger(tmp_path, "s")
    ledger.trials_dir.mkdir(parents=True)
    ledger.path(5).write_text("not json")
    with pytest.warns(UserWarning, match="not valid JSON"):
        assert ledger.write(make_record(5)) is True
    assert ledger.read(5).index == 5


def test_metadata_merges(tmp_path):
    ledger = Ledger(tmp_path, "s")
    assert ledger.read_meta() == {}
    ledger.update_meta(seed=3, spec={"lr": {"loguniform": [1e-5, 1e-1]}}, best=math.inf)
    meta = ledger.update_meta(parent_run_id="abc", seed=4)
    assert meta == ledger.read_meta()
    assert meta["seed"] == 4 and meta["parent_run_id"] == "abc" and meta["best"] == math.inf
    assert meta["spec"] == {"lr": {"loguniform": [1e-5, 1e-1]}}
    assert list_searches(tmp_path) == ["s"]
    ledger.meta_path.write_text("[1, 2")
    with pytest.raises(InputError, match=r"search\.json: not valid JSON"):
        ledger.read_meta()


def test_invalid_search_name(tmp_path):
    for name in ("", "../up", "a/b", ".hidden"):
        with pytest.raises(InputError, match="search name"):
            Ledger(tmp_path, name)


# ---------------------------------------------------------------- the driver lock


def _try_lock(storage, queue):
    try:
        with Ledger(storage, "s").lock():
            queue.put("acquired")
    except LedgerLockedError as error:
        queue.put(str(error))


def test_lock_held_refuses_a_second_driver(tmp_path):
    ledger = Ledger(tmp_path, "s")
    context = multiprocessing.get_context("fork")
    with ledger.lock():
        queue = context.Queue()
        process = context.Process(target=_try_lock, args=(str(tmp_path), queue))
        process.start()
        process.join(20)
        message = queue.get(timeout=5)
        assert f"pid {os.getpid()}" in message and "already being run" in message
        with pytest.raises(LedgerLockedError, match=f"pid {os.getpid()}.*this process"):
            with Ledger(tmp_path, "s").lock():
                pass
    # released: a new driver gets it
    queue = context.Queue()
    process = context.Process(target=_try_lock, args=(str(tmp_path), queue))
    process.start()
    process.join(20)
    assert queue.get(timeout=5) == "acquired"
    assert issubclass(LedgerLockedError, UnavailableError) and not issubclass(LedgerLockedError, InputError)


def test_lock_is_released_when_the_block_raises(tmp_path):
    ledger = Ledger(tmp_path, "s")
    with pytest.raises(RuntimeError):
        with ledger.lock():
            raise RuntimeError("driver crashed")
    with ledger.lock():
        pass


# ---------------------------------------------------------------- export


def test_export_rows_and_csv(tmp_path):
    ledger = Ledger(tmp_path, "s")
    ledger.write(make_record(0, params={"b": 1, "a": "x"}, gpu_seconds=None))
    ledger.write(make_record(
        1, status="failed", params={"a": "y", "c": 0.5}, score=None, test_score=None,
        error="RuntimeError: boom\nTraceback (most recent call last):\n  line 3\n", mlflow_run_id="r1",
    ))
    ledger.write(make_record(2, params={"b": 2}, score=math.nan))
    rows = ledger.export_rows()
    assert list(rows[0]) == [*EXPORT_COLUMNS, "param.b", "param.a", "param.c"]
    assert rows[1]["error"] == "RuntimeError: boom | Traceback (most recent call last): | line 3"
    assert rows[0]["param.c"] is None and rows[2]["param.a"] is None

    stream = io.StringIO()
    assert ledger.export_csv(stream) == 3
    table = list(csv.reader(io.StringIO(stream.getvalue())))
    assert table[0] == [*EXPORT_COLUMNS, "param.b", "param.a", "param.c"]
    body = [dict(zip(table[0], row)) for row in table[1:]]
    assert [row["trial"] for row in body] == ["0", "1", "2"]
    assert body[0]["gpu_seconds"] == "" and body[0]["param.c"] == ""
    assert body[1]["score"] == "" and body[1]["status"] == "failed" and body[1]["mlflow_run_id"] == "r1"
    assert "\n" not in body[1]["error"]
    assert body[2]["score"] == "nan" and body[2]["param.b"] == "2"
    assert body[0]["score"] == repr(make_record(0).score)


def test_export_csv_is_readable_by_the_results_reader(tmp_path):
    from showwork.results_table import read_results_table

    ledger = Ledger(tmp_path, "s")
    for index in range(3):
        ledger.write(make_record(index))
    path = tmp_path / "export.csv"
    with open(path, "w", newline="") as handle:
        ledger.export_csv(handle)
    table = read_results_table(path)
    assert table.numeric_column("score") == [make_record(i).score for i in range(3)]
    assert "param.optimizer.lr" in table.columns


def test_timestamps_are_utc():
    assert utc_now_iso().endswith("+00:00")


# ---------------------------------------------------------------- retries: every attempt kept, the last one counts


def _failed(index: int, **changes) -> TrialRecord:
    return make_record(index, **{"status": "failed", "score": None, "error": "FileNotFoundError: no data", **changes})


def test_a_retried_trial_keeps_every_attempt_and_its_last_counts(tmp_path):
    ledger = Ledger(tmp_path, "s")
    ledger.update_meta(num_trials=3)
    first = _failed(1, mlflow_run_id="a" * 32)
    ledger.write(make_record(0))
    ledger.write(first)
    assert ledger.position(1) == 1 and ledger.superseded() == {}

    assert ledger.supersede(1) == first
    assert ledger.missing(3) == [1, 2]  # the trial runs again
    assert (ledger.superseded_dir / "000001.1.json").read_text() == first.to_json()  # moved unchanged
    second = _failed(1, attempts=2, error="ValueError: still no data")
    ledger.write(second)  # a worker writes the retry's record, as for any trial
    assert ledger.read(1) == second and ledger.position(1) == 2
    ledger.supersede(1)
    third = make_record(1, attempts=3)
    ledger.write(third)

    assert [r.index for r in ledger.records()] == [0, 1]  # one counted record per index: the last attempt
    assert ledger.read(1) == third and ledger.position(1) == 3
    assert ledger.superseded() == {1: [first, second]}, "every earlier attempt, oldest first"
    assert ledger.supersede(2) is None  # no record: nothing to move


def test_a_supersede_cut_short_between_its_link_and_unlink_finishes_next_time(tmp_path, monkeypatch):
    ledger = Ledger(tmp_path, "s")
    ledger.update_meta(num_trials=1)
    record = _failed(0)
    ledger.write(record)
    real_unlink = os.unlink

    def crash(path, *args, **kwargs):
        if str(path).endswith("000000.json"):
            raise KeyboardInterrupt  # the driver killed after the link, before the unlink
        real_unlink(path, *args, **kwargs)

    monkeypatch.setattr(os, "unlink", crash)
    with pytest.raises(KeyboardInterrupt):
        ledger.supersede(0)
    monkeypatch.setattr(os, "unlink", real_unlink)
    assert ledger.read(0) == record and ledger.superseded() == {0: [record]}  # both: nothing lost, nothing counted twice
    assert ledger.position(0) == 1  # the copy is this record's, not an earlier attempt

    assert ledger.supersede(0) == record  # finishes: no second copy
    assert sorted(os.listdir(ledger.superseded_dir)) == ["000000.1.json"]
    assert ledger.read(0) is None and ledger.superseded() == {0: [record]}


def test_superseded_records_beyond_the_search_and_foreign_names_are_not_read(tmp_path):
    ledger = Ledger(tmp_path, "s")
    ledger.update_meta(num_trials=2)
    record = _failed(1)
    ledger.write(record)
    ledger.supersede(1)
    (ledger.superseded_dir / "0000001.2.json").write_text(_failed(1, seed=7).to_json())  # not a name the ledger writes
    (ledger.superseded_dir / "notes.txt").write_text("mine")
    assert ledger.superseded() == {1: [record]}
    ledger.update_meta(num_trials=1)
    assert ledger.superseded() == {}  # trial 1 is not the search's any more


def test_a_link_in_place_of_the_superseded_folder_is_neither_read_nor_written_through(tmp_path):
    ledger = Ledger(tmp_path, "s")
    ledger.update_meta(num_trials=1)
    record = _failed(0)
    ledger.write(record)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "000000.1.json").write_text(record.to_json())
    ledger.superseded_dir.symlink_to(elsewhere)
    assert ledger.superseded() == {}
    with pytest.raises(InputError, match="opens no link"):
        ledger.supersede(0)
    assert ledger.read(0) == record and os.listdir(elsewhere) == ["000000.1.json"]  # nothing moved

"""A new SQLite store is a copy of a made, empty store kept per MLflow version (issue 23 item 15: start-up).

MLflow makes a store in a few dozen migrations, about a second of CPU that a search's start-up spent
while Ray started on the same two cores. The first store made keeps a copy in showwork's cache; later
new stores are copies of it, with their own Default experiment's artifact folder. A cache only: a
damaged, foreign or linked copy is not used, and the store is made the long way.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from showwork.tracking.store import prepare_store
from showwork.tracking.tracker import Tracker

pytestmark = pytest.mark.integration


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("SHOWWORK_CACHE_DIR", str(folder))
    return folder


def kept(cache: Path) -> Path:
    (template,) = (cache / "mlflow-stores").glob("empty-mlflow-*.db")
    return template


def default_experiment(database: Path) -> str:
    with sqlite3.connect(database) as connection:
        return connection.execute("SELECT artifact_location FROM experiments WHERE experiment_id = 0").fetchone()[0]


def test_a_new_store_is_a_copy_of_the_kept_empty_store_with_its_own_artifact_folder(cache, tmp_path):
    (tmp_path / "a").mkdir()
    prepare_store(f"sqlite:///{tmp_path / 'a' / 'mlflow.db'}")
    template = kept(cache)
    assert template.stat().st_mode & 0o777 == 0o600
    with sqlite3.connect(template) as connection:  # a mark the copy must carry: it was copied, not made again
        connection.execute("CREATE TABLE kept_mark (x)")
    (tmp_path / "b").mkdir()
    database = tmp_path / "b" / "mlflow.db"
    prepare_store(f"sqlite:///{database}")
    with sqlite3.connect(database) as connection:
        assert connection.execute("SELECT count(*) FROM sqlite_master WHERE name = 'kept_mark'").fetchone()[0] == 1
    assert default_experiment(database) == f"{(tmp_path / 'b' / 'mlartifacts').as_uri()}/0"
    assert database.stat().st_mode & 0o077 == 0
    tracker = Tracker(f"sqlite:///{database}", "copied")  # a working store
    tracker.check_reachable()
    parent = tracker.start_parent("p", {"seed": 1}, {}, {})
    assert tracker.client.get_run(parent).info.status == "RUNNING"


@pytest.mark.parametrize("damage", ["garbage", "a run", "a link"])
def test_a_damaged_or_foreign_kept_store_is_not_used(cache, tmp_path, damage):
    (tmp_path / "a").mkdir()
    prepare_store(f"sqlite:///{tmp_path / 'a' / 'mlflow.db'}")
    template = kept(cache)
    if damage == "garbage":
        template.write_bytes(b"not a database" * 100)
    elif damage == "a run":
        with sqlite3.connect(template) as connection:
            columns = [row[1] for row in connection.execute("PRAGMA table_info(runs)")]
            values = {"run_uuid": "r" * 32, "experiment_id": 0, "lifecycle_stage": "active", "status": "RUNNING",
                      "source_type": "LOCAL", "start_time": 1, "name": "x", "user_id": "u", "source_name": "",
                      "entry_point_name": "", "source_version": "", "artifact_uri": ""}
            use = [c for c in columns if c in values]
            connection.execute(f"INSERT INTO runs ({', '.join(use)}) VALUES ({', '.join('?' * len(use))})",
                               [values[c] for c in use])
    else:
        elsewhere = tmp_path / "elsewhere.db"
        template.rename(elsewhere)
        template.symlink_to(elsewhere)
    (tmp_path / "b").mkdir()
    database = tmp_path / "b" / "mlflow.db"
    prepare_store(f"sqlite:///{database}")
    with sqlite3.connect(database) as connection:
        assert connection.execute("SELECT count(*) FROM runs").fetchone()[0] == 0
    assert default_experiment(database) == f"{(tmp_path / 'b' / 'mlartifacts').as_uri()}/0"
    assert not list((tmp_path / "b").glob(".mlflow.db.*"))

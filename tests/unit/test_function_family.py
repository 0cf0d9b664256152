"""A Python function as a search's family (issue 37 item 1), without Ray: the spec a function and a dict make, checked
by the search file's validator in its words; the family's form; the code recorded and compared; the refusals of
the commands and of a resume with other code. The searches themselves run in tests/integration/test_function_searches.py."""

from __future__ import annotations

import functools
import hashlib
import inspect
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import showwork
from showwork.api import search_spec
from showwork.errors import InputError
from showwork.families import function_code, function_spec, pickled_function
from showwork.space import family_kind, function_family, load_search_spec
from showwork.store import Ledger
from showwork.store.errors import InvalidRecordError

from helpers import REPO_ROOT, run_cli, trial_record, write_search

SPACE = {"lr": {"distribution": "loguniform", "low": 1e-4, "high": 1e-1}, "epochs": 3}


def train(config, *, seed, device, reporter, data):
    return {"acc": config["lr"] * SCALE}


SCALE = 2.0  # a global of this module: pickled with train, by value


def other_train(config, *, seed, device, reporter, data):
    return {"acc": 0.0}


def spec_of(**changes):
    return search_spec(train, SPACE, **{"name": "fn", "metric": {"name": "acc"}, "num_trials": 4, **changes})


def test_a_function_and_a_dict_make_the_spec_a_search_file_makes():
    spec = spec_of(seed=7, resources={"cpus": 0.5}, timeout_s=30, failure_policy="exclude")
    assert (spec.family, spec.family_kind, spec.function) == ("<function train>", "function", train)
    assert (spec.seed, spec.resources.cpus, spec.timeout_s, spec.failure_policy) == (7, 0.5, 30, "exclude")
    assert spec.space.to_dict() == load_search_spec_of(SPACE).space.to_dict()
    assert "function" not in spec.model_dump()  # search.json records the spec a command reads: never the function itself


def load_search_spec_of(space):
    import tempfile

    import yaml

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "s.yaml"
        path.write_text(yaml.safe_dump({"name": "fn", "family": "<function train>", "metric": {"name": "acc"},
                                        "num_trials": 4, "space": space}))
        return load_search_spec(path)


def test_a_dict_is_refused_in_the_words_a_file_is_refused_in(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("name: fn\nfamily: bow_sst2\nmetric: {name: acc, mode: up}\nnum_trials: 4\n"
                    "space:\n  lr: {distribution: loguniform, low: 0, high: 1}\n")
    with pytest.raises(InputError) as from_file:
        load_search_spec(path)
    for changes, message in [
        ({"space": {"lr": {"distribution": "loguniform", "low": 0, "high": 1}}},
         "showwork.search(): space.lr.low: must be positive for a log-uniform distribution (low=0)"),
        ({"metric": {"name": "acc", "mode": "up"}}, "showwork.search(): metric.mode: must be 'max' or 'min' (got \"up\")"),
        ({"name": None, "num_trials": None}, "showwork.search(): name: missing required key (also missing: num_trials)"),
        ({"resources": {"cpu": 1}}, "showwork.search(): resources.cpu: unknown key; did you mean 'cpus'?"),
    ]:
        with pytest.raises(InputError) as refused:
            search_spec(train, changes.pop("space", SPACE), **{"name": "fn", "metric": {"name": "acc"}, "num_trials": 4, **changes})
        assert str(refused.value).startswith(message), str(refused.value)
    assert str(from_file.value).endswith("metric.mode: must be 'max' or 'min' (got \"up\")")  # the file's words, located


def test_what_is_not_a_trainable_function_is_refused_naming_train():
    with pytest.raises(InputError, match=r"^train: must be a Python function \(def or lambda\).*not partial"):
        search_spec(functools.partial(train), SPACE, name="fn", metric={"name": "acc"}, num_trials=4)
    with pytest.raises(InputError, match=r"^train: test_what.*<locals>.<lambda>\(config\) is not a trainable; a trainable is def train"):
        search_spec(lambda config: {}, SPACE, name="fn", metric={"name": "acc"}, num_trials=4)
    with pytest.raises(InputError, match="^metric, space: set in the search file"):
        search_spec("space.yaml", SPACE, metric={"name": "acc"})


def test_the_family_of_a_function_is_neither_a_file_nor_a_module_and_a_file_cannot_name_one(tmp_path, capsys):
    assert family_kind(function_family("train")) == "function" and function_family("<lambda>") == "<function lambda>"
    assert family_kind("function:train") == "module" and family_kind("functions.py:train") == "file"
    path = tmp_path / "s.yaml"
    path.write_text("name: fn\nfamily: <function train>\nmetric: {name: acc}\nnum_trials: 4\nspace: {x: 1}\n")
    code, _, err = run_cli(capsys, "validate", path)  # what `search` cannot run, `validate` does not accept
    assert code == 2 and err.count("\n") == 1
    assert f"{path}:2:1: family '<function train>' is a Python function given to showwork.search(train, space)" in err


def test_the_code_of_a_function_is_its_source_or_without_one_its_bytecode():
    code = function_code(train)
    assert (code.name, code.module, code.hashed, code.source) == ("train", __name__, "source", inspect.getsource(train))
    assert code.sha256 == hashlib.sha256(inspect.getsource(train).encode()).hexdigest() != function_code(other_train).sha256
    namespace = {"__name__": "__main__"}
    exec(compile("def train(config, *, seed, device, reporter, data):\n    return {}\n", "<string>", "exec"), namespace)  # noqa: S102
    exec_code = function_code(namespace["train"])
    assert (exec_code.source, exec_code.hashed, exec_code.to_dict()["source_available"]) == (None, "bytecode", False)


def test_a_function_of_a_module_reaches_a_process_that_cannot_import_the_module(tmp_path):
    """By value: a worker on a cluster's node has no tests/ folder on its path; train's global SCALE goes with it."""
    (tmp_path / "pickled").write_bytes(pickled_function(train))
    script = ("import pickle, sys; train = pickle.load(open(sys.argv[1], 'rb'))\n"
              "print(train({'lr': 0.25}, seed=0, device='cpu', reporter=None, data={}))")
    environment = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "pickled")], cwd=tmp_path, env=environment,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "{'acc': 0.5}", done.stderr


LOCK = threading.Lock()


def locked_train(config, *, seed, device, reporter, data):
    with LOCK:
        return {"acc": 1.0}


def test_a_function_that_refers_to_what_cannot_be_pickled_is_refused_naming_train():
    with pytest.raises(InputError, match=r"^train: locked_train cannot be shipped to Ray's workers: it refers to what"
                                         r" cannot be pickled \(TypeError: cannot pickle '_thread.lock' object\)$"):
        pickled_function(locked_train)


@pytest.fixture
def function_search(tmp_path, monkeypatch, template_db) -> Path:
    """A search of ``train`` written into a ledger as the driver leaves it (spec, identity, function, 2 records)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    shutil.copy(template_db, tmp_path / "mlflow.db")  # the default store of a resume here
    code = function_code(train)
    ledger = Ledger(tmp_path / "runs", "fn")
    write_search(ledger, spec_of(), [trial_record(0), trial_record(1)], function=code.to_dict())
    return tmp_path / "runs"


def test_a_resume_with_other_code_is_refused_before_anything_starts(function_search):
    before = Ledger(function_search, "fn").read_meta()
    with pytest.raises(InputError) as refused:
        showwork.open_search("fn", storage=function_search, train=other_train).resume(progress=False)
    recorded, now = function_code(train).sha256[:12], function_code(other_train).sha256[:12]
    assert str(refused.value).startswith(
        f"train: the code of other_train is not the code search 'fn' ran (SHA-256 of its source {recorded}... recorded,"
        f" {now}... now): its trials would mix two codes.")
    assert "allow_changed_code=True" in str(refused.value) and Ledger(function_search, "fn").read_meta() == before
    with pytest.raises(InputError, match=r"^search 'fn' trains a Python function .* train=train\)\.resume\(\)$"):
        showwork.open_search("fn", storage=function_search).resume(progress=False)  # no function given
    with pytest.raises(InputError, match=r"space.epochs.value: 3 recorded, 4 now.*run showwork.open_search\('fn', storage="):
        showwork.search(train, {**SPACE, "epochs": 4}, name="fn", metric={"name": "acc"}, num_trials=4,
                        storage=function_search, resume=True, progress=False)  # another space: resumed as it was started
    # The recorded code continues it (here with no trial left to run: no Ray), and the run is in its history
    done = showwork.open_search("fn", storage=function_search, train=train).resume(num_trials=2, progress=False)
    assert done.summary.finished == 2 and done.train is train
    history = Ledger(function_search, "fn").read_meta()["function_history"]
    assert [(h["sha256"], h["changed"], h["allowed_changed_code"]) for h in history] == [(function_code(train).sha256, False, False)]


def test_the_command_line_cannot_resume_a_function_and_says_how_to(function_search, capsys):
    code, _, err = run_cli(capsys, "resume", "fn", "--storage", function_search)
    assert code == 2 and err.count("\n") == 1
    assert err.endswith(f"resume it from Python, with the function: showwork.open_search('fn',"
                        f" storage={str(function_search)!r}, train=train).resume()\n")
    code, out, _ = run_cli(capsys, "best", "fn", "--storage", function_search)  # its results read as any search's
    assert code == 0 and out.splitlines()[-1].split()[:2] == ["1", "1"]
    found = showwork.open_search("fn", storage=function_search)  # and from Python without its function
    assert found.best()[0].index == 1 and list(found.curve(budgets=(1, 2)).k) == [1, 2]


def test_a_race_adopts_a_search_of_a_function_only_with_its_function(function_search):
    with pytest.raises(InputError, match=r"^space_a: search 'fn' trains a Python function, which the race runs only when"
                                         r" it is given: race showwork.open_search\('fn', storage=.*, train=train\)$"):
        showwork.race(showwork.open_search("fn", storage=function_search), "b.yaml", looks="2,4", decide_at=2,
                      storage=function_search)


def test_a_function_is_given_only_to_a_search_of_a_function(tmp_path):
    storage = tmp_path / "runs"
    write_search(Ledger(storage, "file"), load_search_spec_of(SPACE).model_copy(update={"family": "bow_sst2"}), [])
    with pytest.raises(InputError, match=r"^train: search 'file' trains the family 'bow_sst2'"):
        showwork.open_search("file", storage=storage, train=train)


def test_a_race_of_two_functions_builds_its_specs_as_a_search_does():
    from showwork.run.race import race_request

    sides = [function_spec(f, {"name": n, "metric": {"name": "acc"}, "num_trials": 4, "space": SPACE}, "showwork.race()")
             for f, n in ((train, "a"), (other_train, "b"))]
    request = race_request(sides, None, "2,4", (2.0,))
    assert request.name == "a-vs-b" and [s.function for s in request.specs] == [train, other_train]
    with pytest.raises(InputError, match=r"^showwork.race\(\): space_b: metric: missing required key$"):
        showwork.race((train, {"name": "a", "metric": {"name": "acc"}, "num_trials": 4, "space": SPACE}),
                      (other_train, {"name": "b", "num_trials": 4, "space": SPACE}), looks="2,4", decide_at=2)


def test_a_function_source_is_kept_once_and_an_edited_copy_is_refused(tmp_path):
    ledger = Ledger(tmp_path, "fn")
    source = inspect.getsource(train)
    digest = hashlib.sha256(source.encode()).hexdigest()
    path = ledger.write_function_source(digest, source)
    assert path == tmp_path / "fn" / "functions" / f"{digest}.py" and path.read_text() == source
    assert ledger.write_function_source(digest, source) == path and os.listdir(path.parent) == [path.name]
    path.write_text(source + "# edited\n")
    with pytest.raises(InvalidRecordError, match="holds another source than the one whose SHA-256 names it"):
        ledger.write_function_source(digest, source)

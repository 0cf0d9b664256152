"""A search of a Python function (``showwork.search(train, space)``, issue 37 item 1), run on Ray end to end: the
function reaches the workers (a test module's, and a notebook-like ``__main__``'s closure), the ledger records
its spec, source and hash, a resume with other code is refused unless allowed, and the commands read it."""

from __future__ import annotations

import hashlib
import inspect
import json
import linecache
import math
import os

import pytest

import showwork
from showwork.errors import InputError
from showwork.recorded import recorded_spec
from showwork.sampling import trial_config, trial_seed
from showwork.store import Ledger

from helpers import REPO_ROOT, cli_in_process

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SPACE = {"x": {"distribution": "uniform", "low": 0.0, "high": 1.0}, "width": {"distribution": "int_uniform", "low": 8, "high": 64}}
METRIC = {"name": "val_accuracy", "mode": "max", "test": "test_accuracy", "bounds": [0, 1]}


def train(config, *, seed, device, reporter, data):
    reporter(epoch=0, val_accuracy=config["x"])
    return {"val_accuracy": config["x"], "test_accuracy": config["x"] / 2, "pid": os.getpid()}


def train_changed(config, *, seed, device, reporter, data):  # another code: its score is halved
    return {"val_accuracy": config["x"] / 2, "test_accuracy": 0.0, "pid": os.getpid()}


def test_a_function_of_a_module_is_searched_recorded_reported_and_resumed_only_with_its_code(home):
    uri = f"sqlite:///{home / 'mlflow.db'}"
    found = showwork.search(train, SPACE, name="fn", metric=METRIC, num_trials=3, seed=5, max_retries=0,
                            storage="runs", tracking_uri=uri, num_cpus=2, progress=False)
    assert (found.summary.finished, found.summary.failed) == (3, 0) and found.train is train
    ledger = Ledger(home / "runs", "fn")
    records = ledger.records()
    for record in records:  # the search's configurations, trained by the function, in Ray's workers
        assert record.params == trial_config(found.spec.space, 5, record.index) and record.seed == trial_seed(5, record.index)
        assert record.score == record.params["x"] and record.metrics["pid"] != os.getpid()

    # search.json: a spec a command reads back, the function's name and the SHA-256 of its source, kept beside it
    meta = ledger.read_meta()
    source = inspect.getsource(train)
    digest = hashlib.sha256(source.encode()).hexdigest()
    assert meta["spec"]["family"] == "<function train>" and meta["spec"]["space"] == found.spec.space.to_dict()
    assert recorded_spec(home / "runs", "fn").metric.model_dump() == METRIC | {"bounds": (0.0, 1.0)}
    assert {k: meta["function"][k] for k in ("name", "sha256", "hashed", "source_file")} == {
        "name": "train", "sha256": digest, "hashed": "source", "source_file": f"functions/{digest}.py"}
    assert (ledger.root / "functions" / f"{digest}.py").read_text() == source

    # The commands read and report it; they cannot resume it, and say how to
    code, out, _ = cli_in_process("results", "fn", "--storage", "runs")
    assert code == 0 and out.count("finished") == 3
    code, out, _ = cli_in_process("best", "fn", "--storage", "runs")
    assert code == 0 and f"{max(r.score for r in records):.4f}"[:5] in out
    code, _, err = cli_in_process("resume", "fn", "--storage", "runs")
    assert code == 2 and err.count("\n") == 1 and "showwork.open_search('fn', storage='runs', train=train).resume()" in err
    code, _, err = cli_in_process("report", "fn", "--storage", "runs", "--out", "report", "--no-mlflow", "--formats", "svg")
    assert code == 0, err
    assert code_answer(home / "report").startswith(
        f"a Python function, train (module {__name__}), SHA-256 of its source {digest}; its source is in the search's"
        f" folder, functions/{digest}.py")

    # Resuming with other code is refused (nothing runs), and allowed when asked: recorded, and the checklist says so
    with pytest.raises(InputError, match=r"^train: the code of train_changed is not the code search 'fn' ran"):
        showwork.open_search("fn", storage="runs", train=train_changed).resume(num_trials=4, progress=False)
    assert len(ledger.records()) == 3
    more = showwork.open_search("fn", storage="runs", train=train_changed).resume(
        num_trials=4, num_cpus=2, progress=False, allow_changed_code=True)
    assert more.summary.finished == 4 and ledger.read(3).score == ledger.read(3).params["x"] / 2
    history = ledger.read_meta()["function_history"]
    assert [(h["name"], h["changed"], h["allowed_changed_code"]) for h in history] == [
        ("train", False, False), ("train_changed", True, True)]
    more.report(home / "report2", mlflow=False, figure_formats=("svg",))
    assert "; the code changed during the search (allowed with allow_changed_code): 2 versions ran" in code_answer(home / "report2")


def code_answer(report) -> str:
    """The checklist's answer about the code, from the report's JSON."""
    found = []

    def walk(value):
        if isinstance(value, str) and value.startswith("a Python function"):
            found.append(value)
        for item in value.values() if isinstance(value, dict) else value if isinstance(value, list) else ():
            walk(item)

    walk(json.loads((report / "report.json").read_text()))
    assert len(set(found)) == 1, found
    return found[0]


def test_the_docs_example_run_as_a_notebook_cell_sends_its_closure_to_the_workers(home):
    """docs/how-to/python.md's example, compiled as IPython compiles a cell: in a ``__main__`` namespace, its
    source kept by linecache. Its closure (best_lr) and the global it uses (math) reach Ray's workers by value."""
    page = (REPO_ROOT / "docs" / "how-to" / "python.md").read_text()
    cell = page.split("## A function and a dict")[1].split("```python\n")[1].split("```")[0]
    linecache.cache["<cell-1>"] = (len(cell), None, cell.splitlines(True), "<cell-1>")
    namespace = {"__name__": "__main__"}
    exec(compile(cell, "<cell-1>", "exec"), namespace)  # noqa: S102 - the documented cell
    found = namespace["search"]
    assert found.spec.family == "<function train>" and found.summary.finished == 4
    for record in found.records():  # the closure's best_lr, in a worker's process
        assert record.score == pytest.approx(1 - abs(math.log10(record.params["lr"] / 10 ** -2.5)) / 3)
        assert record.pid != os.getpid() and len(record.history) == 2
    function = found.ledger.read_meta()["function"]
    assert (function["name"], function["module"], function["hashed"]) == ("make_train.<locals>.train", "__main__", "source")
    assert (found.ledger.root / function["source_file"]).read_text() == inspect.getsource(namespace["train"])
    assert "    def train(config, *, seed, device, reporter, data):\n" in cell

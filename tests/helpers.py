"""Helpers shared by the tests (imported as ``from helpers import ...``; the fixtures live in conftest.py).

One module, one import path: ``tests/`` is on ``sys.path`` (pyproject's pytest ``pythonpath``), so
every test file, in any subfolder, loads this file as the same module.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import numpy as np
import pytest

from showwork.results_table import read_results_table
from showwork.store import TrialRecord

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA_DIR = REPO_ROOT.parent / "shared" / "data"
# What a search leaves in the folder it runs in: MLflow's SQLite store (showwork's default is ./mlflow.db) with
# its journal and showwork's lock beside it, MLflow's file store and artifacts. None of them belongs in the
# repository (a test once left a 970 KB x.db there, and it was committed).
STORE_FILES = ("*.db", "*.db-journal", "*.db-wal", "*.db-shm", "*.lock", "mlruns", "mlartifacts")


def store_files(names) -> set[str]:
    """The names (paths) among ``names`` whose last part matches one of :data:`STORE_FILES`."""
    import fnmatch

    return {name for name in map(str, names)
            if any(fnmatch.fnmatch(Path(name).name, pattern) for pattern in STORE_FILES)}


# The environment of a search under test: the real data, no MLflow telemetry, a local Ray of its
# own (no cluster address inherited) and the tracking URI given on the command line.
_INHERITED_SEARCH_SETTINGS = ("RAY_ADDRESS", "MLFLOW_TRACKING_URI")


def import_blocker(folder: Path, condition: str, message: str) -> Path:
    """``folder`` holding a ``sitecustomize.py`` that makes every import of a module name for which the Python
    expression ``condition`` (over ``name``) holds fail with ``ModuleNotFoundError(message)``; put it on PYTHONPATH."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "sitecustomize.py").write_text(
        "import importlib.abc, sys\n"
        "class Block(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if {condition}:\n"
        f"            raise ModuleNotFoundError({message})\n"
        "sys.meta_path.insert(0, Block())\n"
    )
    return folder


def search_process_environment(**extra: str) -> dict[str, str]:
    """``os.environ`` for a ``showwork search`` subprocess (see above), plus ``extra``."""
    env = dict(os.environ)
    env.setdefault("SHOWWORK_DATA_DIR", str(DEFAULT_DATA_DIR))
    env["MLFLOW_DISABLE_TELEMETRY"] = "true"
    for name in _INHERITED_SEARCH_SETTINGS:
        env.pop(name, None)
    env.update(extra)
    return env


@contextlib.contextmanager
def search_environment(home: Path, data_dir: Path | None = None):
    """The same settings for searches run in this process, with ``home`` as the current directory."""
    with pytest.MonkeyPatch.context() as mp:
        if data_dir is not None:
            mp.setenv("SHOWWORK_DATA_DIR", str(data_dir))
        elif not os.environ.get("SHOWWORK_DATA_DIR"):
            mp.setenv("SHOWWORK_DATA_DIR", str(DEFAULT_DATA_DIR))
        mp.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
        for name in _INHERITED_SEARCH_SETTINGS:
            mp.delenv(name, raising=False)
        mp.chdir(home)
        yield home


def load_column(path: str | os.PathLike, column: str) -> np.ndarray:
    """Return one column of a results file as floats, in file order; a missing cell becomes NaN.

    Goes through showwork's own reader, so the tests read data exactly as the CLI does.
    """
    path = Path(path)
    if not path.is_file():
        pytest.fail(f"data file not found: {path} (is SHOWWORK_DATA_DIR right?)", pytrace=False)
    return np.asarray(read_results_table(path).numeric_column(column), dtype=float)


# The released searches of Lourie, Cho & He (2024) in $SHOWWORK_DATA_DIR/search-results: DeBERTa and
# DeBERTaV3 on MultiNLI, 1,024 trials each, scored by their best matched validation accuracy.
DEBERTA_RESULTS = ("deberta-base_mnli_tuning.csv", "deberta-v3-base_mnli_tuning.csv")
DEBERTA_SCORE = "matched_acc_best"


def deberta_families(search_results_dir: Path, labels: tuple[str, str] | None = ("DeBERTa", "DeBERTaV3")) -> list:
    """The two released DeBERTa searches as report families (``FamilyResults``), DeBERTa first.

    ``labels=None`` keeps the report's default labels, the files' stems (``deberta-base_mnli_tuning``, ...).
    """
    from showwork.report import from_results_file

    names = labels or (None, None)
    return [family for file, label in zip(DEBERTA_RESULTS, names)
            for family in from_results_file(search_results_dir / file, DEBERTA_SCORE, label=label)]


def trial_record(index: int, **changes) -> TrialRecord:
    """A finished trial record with plausible values; ``changes`` replace fields."""
    fields = dict(
        index=index,
        status="finished",
        params={"optimizer.lr": 10 ** -(index % 5 + 1), "model.layers": index % 3 + 1, "act": "relu"},
        seed=1000 + index,
        score=0.5 + index / 100,
        test_score=0.4 + index / 100,
        metrics={"val_acc": 0.5 + index / 100, "epochs": 3},
        history=[{"epoch": e, "val_acc": 0.1 * e, "loss": 1.0 / e} for e in (1, 2, 3)],
        runtime_s=12.5,
        gpu_seconds=25.0,
        node_id="abc123",
        hostname="node-1",
        pid=4242,
        started_at="2025-01-01T00:00:00+00:00",
        finished_at="2025-01-01T00:00:12.500000+00:00",
    )
    fields.update(changes)
    return TrialRecord(**fields)


def write_search(ledger, spec, records: list[TrialRecord], **meta) -> list[TrialRecord]:
    """Write a search into ``ledger`` as ``showwork search`` leaves it: ``search.json`` with the ``spec`` and
    the identity it started with, and ``records`` with the configuration and training seed the search draws
    for their index (what ``results``, ``best``, ``report`` and ``resume`` check); return the records written.
    ``meta`` adds to ``search.json``."""
    import uuid

    from showwork.recorded import search_identity
    from showwork.sampling import trial_plans

    ledger.update_meta(search_id=uuid.uuid4().hex, spec=spec.model_dump(mode="json"), identity=search_identity(spec),
                       spec_yaml=spec.source_text,
                       spec_path=str(spec.source_path) if spec.source_path else None, seed=spec.seed,
                       num_trials=spec.num_trials, **meta)
    written = []
    for record, (params, seed) in zip(records, trial_plans(spec.space, spec.seed, [r.index for r in records])):
        written.append(record.model_copy(update={"params": params, "seed": seed}))
        ledger.write(written[-1])
    return written


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    """Run ``showwork ARGV`` in this process; return (exit status, stdout, stderr) as captured by ``capsys``."""
    from showwork.cli import main

    try:
        code = main([str(a) for a in argv])
    except SystemExit as exit:  # argparse: --help, bad option values
        code = exit.code
    out, err = capsys.readouterr()
    return code, out, err


def cli_in_process(*argv) -> tuple[int, str, str]:
    """Run ``showwork ARGV`` in this process with its own stdout and stderr; return (exit status, stdout, stderr)."""
    import contextlib
    import io

    from showwork.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in argv])
        except SystemExit as exit:
            code = exit.code
    return code, out.getvalue(), err.getvalue()


def runs_of(uri: str, name: str) -> list:
    """All runs (parent and children, active and deleted) of the experiment of search ``name``."""
    from mlflow.entities import ViewType
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    experiment = client.get_experiment_by_name(name)
    if experiment is None:
        return []
    return client.search_runs([experiment.experiment_id], run_view_type=ViewType.ALL, max_results=1000)


def chromium() -> str | None:
    """The headless browser the page tests use (CI installs it); None where there is none."""
    import shutil

    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def page_dom(url: str, budget_ms: int = 20000) -> str:
    """The DOM a fresh headless Chromium shows at ``url`` once ``budget_ms`` of the page's (virtual) time has run."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as profile:  # a fresh browser: no stored view of an MLflow experiment
        done = subprocess.run(
            [chromium(), "--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}",
             "--window-size=1400,1000", f"--virtual-time-budget={budget_ms}", "--dump-dom", url],
            capture_output=True, text=True, timeout=180,
        )
    return done.stdout


def page_text(url: str) -> str:
    """The text a fresh headless Chromium shows at ``url`` (an MLflow page: once it has loaded its runs)."""
    import html
    import re

    text = re.sub(r"<script.*?</script>|<style.*?</style>", " ", page_dom(url), flags=re.S)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", text)).split())

"""Loading a model family: `showwork validate` does it as `showwork search` does (issue 16 item 2), and a
family file may import modules beside it (item 5).

The bad cases are ``tests/bad_inputs/families/*.yaml``, with the family files they name beside them:
`validate` refuses each with one line that starts with the file, line and column of its ``family:``
key (its own ``check_data`` refusing the data: the file), `search` with the very same line and
nothing created, and `validate --no-family` and `sample`, which do not load the family, accept them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from showwork.errors import InputError
from showwork.families import resolve_family
from showwork.trials.ray_executor import FAMILY_FOLDER_LIMIT_MIB, family_runtime_env

from helpers import REPO_ROOT, run_cli, search_process_environment

FAMILIES = Path(__file__).resolve().parents[1] / "bad_inputs" / "families"
CASES = sorted(p.name for p in FAMILIES.glob("*.yaml"))

TRAINABLE = "def train(config, *, seed, device, reporter, data):\n    return {'acc': float(config['x'])}\n"


pytestmark = pytest.mark.usefixtures("isolated")  # tests/conftest.py: a bad input is refused before Ray starts


def family_key_position(space: Path) -> str:
    """``LINE:COLUMN`` of the top-level ``family:`` key, found in the text."""
    for number, line in enumerate(space.read_text().splitlines(), start=1):
        if line.startswith("family:"):
            return f"{number}:1"
    raise AssertionError(f"{space} has no family: key")


@pytest.mark.integration
@pytest.mark.parametrize("name", CASES)
def test_validate_refuses_a_family_that_search_would_refuse_with_the_same_line(capsys, tmp_path, name):
    space = FAMILIES / name
    code, out, err = run_cli(capsys, "validate", space)
    assert code == 2 and out == "" and err.startswith("showwork: error: ") and err.count("\n") == 1, err
    message = err.removeprefix("showwork: error: ").rstrip("\n")
    if name == "check_data_refuses.yaml":
        assert message == f"{space}: data.corpus 'wiki' is not downloaded. Nothing was started."
    else:
        assert message.startswith(f"{space}:{family_key_position(space)}: family "), message
    storage, db = tmp_path / "runs", tmp_path / "mlflow.db"
    code, out, searched = run_cli(capsys, "search", space, "--no-progress", "--storage", storage, "--tracking-uri", f"sqlite:///{db}")
    assert (code, out, searched) == (2, "", err)
    assert not storage.exists() and not db.exists()
    code, out, err = run_cli(capsys, "validate", "--no-family", space)
    assert code == 0 and f"family: {space.read_text().split('family: ')[1].splitlines()[0]}" in out, err
    code, out, err = run_cli(capsys, "sample", space, "-n", 2)
    assert code == 0, err


@pytest.mark.integration
@pytest.mark.parametrize(
    "name, fragment",
    [
        ("misspelt_file.yaml", f"no such file {FAMILIES / 'my_modle.py'} (did you mean my_model.py?)."),
        ("misspelt_function.yaml", "my_model.py has no function 'trian' (did you mean train?)."),
        ("not_a_trainable.yaml", "train(config) is not a trainable; a trainable is def train(config, *, seed, device, reporter, data)."),
        ("broken_import.yaml", "failed: ModuleNotFoundError: No module named 'no_such_helper_module'"),
        ("missing_module.yaml", "cannot import module 'no_such_package_xyz.models'"),
        ("misspelt_builtin.yaml", "family 'bow_sst' is not a built-in family (bcn, bow_sst2, "),
    ],
)
def test_each_refusal_says_what_is_wrong(capsys, name, fragment):
    code, _, err = run_cli(capsys, "validate", FAMILIES / name)
    assert code == 2 and fragment in err, err


def test_the_cases_family_file_itself_loads_with_its_helper():
    """The control of the misspelt cases: the file they misname is a trainable, helper import included."""
    train = resolve_family("my_model.py:train", FAMILIES)
    assert train({"x": 0.5}, seed=0, device="cpu", reporter=None, data={}) == {"acc": 0.25}


def test_a_family_file_imports_a_module_beside_it_whatever_the_current_directory(tmp_path, monkeypatch):
    """Item 5: before, ``import helpers`` in the family file failed (ModuleNotFoundError) unless the
    current directory or PYTHONPATH held its folder."""
    code = tmp_path / "project" / "code"
    code.mkdir(parents=True)
    (code / "family_with_helper.py").write_text("import helper_beside_family\n\n" + TRAINABLE.replace(
        "float(config['x'])", "helper_beside_family.twice(config['x'])"))
    (code / "helper_beside_family.py").write_text("def twice(x):\n    return 2.0 * x\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    train = resolve_family("../code/family_with_helper.py:train", tmp_path / "project" / "spaces")
    assert train({"x": 3}, seed=0, device="cpu", reporter=None, data={}) == {"acc": 6.0}
    assert sys.path[0] == str(code.resolve())  # first, as `python family_with_helper.py` would have it


@pytest.mark.integration
def test_family_paths_are_resolved_relative_to_the_yaml_file_not_the_current_directory(capsys, tmp_path, monkeypatch):
    """A ``model.py`` in the current directory that is not a trainable is ignored: the one beside the YAML is loaded."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "model.py").write_text(TRAINABLE)
    space = project / "space.yaml"
    space.write_text("name: rel\nfamily: model.py:train\nmetric: {name: acc}\nnum_trials: 1\nspace: {x: 1}\n")
    (tmp_path / "model.py").write_text("def train(config):\n    return {}\n")  # the current directory's: not a trainable
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "validate", "project/space.yaml")
    assert code == 0, err
    (project / "model.py").unlink()
    code, out, err = run_cli(capsys, "validate", "project/space.yaml")
    assert code == 2 and f"no such file {project / 'model.py'}" in err, err


@pytest.mark.integration
def test_validate_runs_check_data_except_for_a_cluster_and_with_no_family(capsys, monkeypatch):
    space = FAMILIES / "check_data_refuses.yaml"
    assert run_cli(capsys, "validate", space)[0] == 2
    assert run_cli(capsys, "validate", space, "--no-family")[0] == 0
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")  # the data are the cluster's, as `showwork search` sees it
    assert run_cli(capsys, "validate", space)[0] == 0


@pytest.mark.integration
def test_validate_of_a_builtin_family_imports_no_torch_ray_or_mlflow_unless_the_family_needs_them():
    """The demo's bag-of-words family is numpy only: validate loads it without torch, Ray or MLflow.
    The CNN family imports torch (its own need), still without Ray or MLflow."""
    probe = textwrap.dedent("""
        import sys
        from showwork.cli import main
        code = main(["validate", sys.argv[1]])
        print(code, *(name in sys.modules for name in ("torch", "ray", "mlflow")))
    """)
    env = search_process_environment()
    for space, torch in (("demo_sst2.yaml", "False"), ("sst5_cnn.yaml", "True")):
        done = subprocess.run([sys.executable, "-c", probe, str(REPO_ROOT / "search_spaces" / space)],
                              capture_output=True, text=True, env=env, timeout=120)
        assert done.stdout.splitlines()[-1] == f"0 {torch} False False", done.stderr[-2000:]


@pytest.mark.slow
@pytest.mark.integration
def test_a_real_local_search_runs_a_family_that_imports_a_module_beside_it(tmp_path):
    """The YAML in spaces/, the family in ../code/ with its helper, the search started from a third
    folder: every trial finishes (before: the search was refused, ModuleNotFoundError at import)."""
    code, spaces, elsewhere = tmp_path / "code", tmp_path / "spaces", tmp_path / "elsewhere"
    for folder in (code, spaces, elsewhere):
        folder.mkdir()
    (code / "local_multi.py").write_text("import local_multi_helpers\n\n" + TRAINABLE.replace(
        "float(config['x'])", "local_multi_helpers.halved(config['x'])"))
    (code / "local_multi_helpers.py").write_text("def halved(x):\n    return x / 2\n")
    space = spaces / "multi.yaml"
    space.write_text("name: local-multi\nfamily: ../code/local_multi.py:train\nmetric: {name: acc}\nnum_trials: 3\n"
                     "space:\n  x: {distribution: uniform, low: 0.0, high: 1.0}\n")
    command = [sys.executable, "-m", "showwork", "search", str(space), "--no-progress", "--num-cpus", "2",
               "--storage", str(elsewhere / "runs"), "--tracking-uri", f"sqlite:///{elsewhere / 'mlflow.db'}"]
    done = subprocess.run(command, cwd=elsewhere, env=search_process_environment(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    from showwork.store import Ledger

    records = Ledger(elsewhere / "runs", "local-multi").records()
    assert [r.status for r in records] == ["finished"] * 3, [r.error for r in records]
    assert all(r.score == pytest.approx(r.params["x"] / 2) for r in records)


# --- shipping the family's folder to a cluster ------------------------------------------------------


def test_the_shipped_folder_leaves_out_showwork_outputs_git_and_virtualenvs(tmp_path):
    (tmp_path / "model.py").write_text(TRAINABLE)
    (tmp_path / "envs" / "py311").mkdir(parents=True)
    (tmp_path / "envs" / "py311" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    env = family_runtime_env(tmp_path)
    assert env["working_dir"] == str(tmp_path)
    assert {"showwork_runs", "mlartifacts", ".git", "mlflow.db", "/envs/py311/"} <= set(env["excludes"])


def test_a_family_folder_over_the_limit_is_refused_and_left_out_parts_do_not_count(tmp_path):
    limit = FAMILY_FOLDER_LIMIT_MIB * 2**20
    (tmp_path / "model.py").write_text(TRAINABLE)
    for left_out in ("mlflow.db", "showwork_runs/ledger.bin", ".venv/lib.bin", ".git/pack.bin"):
        path = tmp_path / left_out
        path.parent.mkdir(exist_ok=True)
        with open(path, "wb") as file:  # sparse: the size without the disk
            file.truncate(limit + 1)
    (tmp_path / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    family_runtime_env(tmp_path)  # all of it is left out: accepted
    with open(tmp_path / "corpus.txt", "wb") as file:
        file.truncate(limit + 1)
    with pytest.raises(InputError, match=rf"folder {tmp_path} holds more than {FAMILY_FOLDER_LIMIT_MIB} MiB"):
        family_runtime_env(tmp_path)


@pytest.mark.integration
def test_search_on_a_cluster_refuses_an_oversized_family_folder_before_anything_exists(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "model.py").write_text(TRAINABLE)
    with open(project / "corpus.bin", "wb") as file:
        file.truncate(FAMILY_FOLDER_LIMIT_MIB * 2**20 + 1)
    space = project / "space.yaml"
    space.write_text("name: big\nfamily: model.py:train\nmetric: {name: acc}\nnum_trials: 1\nspace: {x: 1}\n")
    command = [sys.executable, "-m", "showwork", "search", str(space), "--no-progress", "--address", "127.0.0.1:9",
               "--storage", str(tmp_path / "runs"), "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}"]
    done = subprocess.run(command, cwd=tmp_path, env=search_process_environment(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.startswith(f"showwork: error: the family file's folder {project} holds more than")
    assert done.stderr.count("\n") == 1
    assert not (tmp_path / "runs").exists() and not (tmp_path / "mlflow.db").exists()
    # Nothing written beside the code (Python's own bytecode cache aside: where PYTHONDONTWRITEBYTECODE
    # is unset, checking the family imports model.py and Python writes __pycache__).
    assert sorted(n for n in os.listdir(project) if n != "__pycache__") == ["corpus.bin", "model.py", "space.yaml"]

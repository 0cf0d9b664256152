"""`showwork search` with bad input: one line naming the problem, exit status 2, and nothing created.

"Nothing" is checked three ways for every case: no folder under ``--storage`` (not even the storage
folder), no MLflow database file at the ``sqlite:///`` tracking URI, and no Ray: the executor is
replaced by one that fails the test if the search ever gets as far as starting Ray. So none of these
tests starts Ray, and none is slow.
"""

from __future__ import annotations

import secrets
import subprocess
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from showwork.errors import InputError
from showwork.families import check_family_data, resolve_family
from showwork.space import SearchSpec

from helpers import run_cli

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("isolated")]  # isolated: tests/conftest.py

SPACES = Path(__file__).resolve().parents[1] / "bad_inputs" / "spaces"


cli = run_cli


def write_space(folder: Path, family: str = "bow_sst2", data: str = "{dataset: sst2}", name: str = "bad-search") -> Path:
    path = folder / "space.yaml"
    path.write_text(textwrap.dedent(f"""\
        name: {name}
        family: {family}
        data: {data}
        metric: {{name: val_accuracy}}
        num_trials: 2
        space:
          lr: {{distribution: loguniform, low: 1e-3, high: 1.0}}
          epochs: 1
    """))
    return path


def refused_search(capsys, folder: Path, space: Path, fragment: str) -> str:
    """Run ``showwork search SPACE``; check the one-line refusal and that no ledger or MLflow store exists."""
    storage, db = folder / "runs", folder / "mlflow.db"
    code, out, err = cli(capsys, "search", space, "--no-progress", "--storage", storage, "--tracking-uri", f"sqlite:///{db}")
    assert code == 2, err
    assert out == ""
    assert err.startswith("showwork: error: ") and err.count("\n") == 1 and err.endswith("\n"), err
    assert fragment in err, err
    assert not storage.exists(), sorted(storage.rglob("*"))
    assert not db.exists()  # MLflow was never opened, so no experiment can exist
    return err.removeprefix("showwork: error: ").rstrip("\n")


# --- (a) an unknown model family --------------------------------------------------------------------


@pytest.mark.parametrize(
    "family, fragment",
    [
        ("bow_sst", "family 'bow_sst' is not a built-in family (bcn, bow_sst2, "),  # a built-in name misspelled
        ("showwork_models.bow:trian", "family 'showwork_models.bow:trian': showwork_models.bow has no function 'trian'"),
        ("no_such_package.models:train", "cannot import module 'no_such_package.models'"),
        ("missing.py:train", "no such file"),
    ],
)
def test_an_unknown_family_is_refused_before_anything_exists(capsys, tmp_path, family, fragment):
    message = refused_search(capsys, tmp_path, write_space(tmp_path, family=family), fragment)
    if family.endswith(".py:train"):
        assert str(tmp_path / "missing.py") in message  # resolved beside the space file


# --- (b) a missing data directory -------------------------------------------------------------------


def test_a_missing_data_dir_is_refused_before_any_trial(capsys, tmp_path):
    missing = tmp_path / "no-such-folder"
    space = write_space(tmp_path, data=f"{{dataset: sst2, dir: {missing}}}")
    message = refused_search(capsys, tmp_path, space, f"data directory {missing} does not exist")
    assert message.startswith(f"{space}: ")


def test_a_missing_showwork_data_dir_is_refused_before_any_trial(capsys, tmp_path, monkeypatch):
    missing = tmp_path / "no-such-folder"
    monkeypatch.setenv("SHOWWORK_DATA_DIR", str(missing))
    refused_search(capsys, tmp_path, write_space(tmp_path), f"data directory {missing} does not exist")


@pytest.mark.parametrize("command", ["validate", "search"])
def test_the_demo_with_an_empty_showwork_data_dir_is_refused_in_seconds_naming_it(capsys, tmp_path, monkeypatch, command):
    """Issue 35 item 2: before, the folder passed the check and each of the demo's 50 trials failed in turn."""
    empty = tmp_path / "data"
    empty.mkdir()
    monkeypatch.setenv("SHOWWORK_DATA_DIR", str(empty))
    demo = Path(__file__).resolve().parents[2] / "search_spaces" / "demo_sst2.yaml"
    started = time.perf_counter()
    fragment = (f"{demo}: dataset 'sst2': no sst/glue_sst2_train.tsv.xz, sst/glue_sst2_train.tsv or SST-2/train.tsv under"
                f" {empty} (the folder named by SHOWWORK_DATA_DIR or data.dir); point SHOWWORK_DATA_DIR at a folder")
    if command == "search":
        refused_search(capsys, tmp_path, demo, fragment)
    else:
        code, out, err = cli(capsys, "validate", demo)
        assert (code, out) == (2, "") and err.startswith(f"showwork: error: {fragment}") and err.count("\n") == 1, err
    assert time.perf_counter() - started < 10
    (empty / "sst").mkdir()  # the control: the files of a layout, and the check lets it through
    for name in ("glue_sst2_train.tsv.xz", "glue_sst2_dev.tsv"):
        (empty / "sst" / name).write_bytes(b"")
    assert cli(capsys, "validate", demo)[0] == 0


def test_local_data_without_any_folder_is_refused_before_any_trial(capsys, tmp_path, monkeypatch):
    monkeypatch.delenv("SHOWWORK_DATA_DIR", raising=False)
    space = write_space(tmp_path, data="{dataset: sst2, source: local}")
    refused_search(capsys, tmp_path, space, "no data directory: set SHOWWORK_DATA_DIR")


@pytest.mark.parametrize(
    "data, fragment",
    [
        ("{dataset: sst3}", "data.dataset: unknown dataset 'sst3'; choose one of reuters, sst2, "),
        ("{dataset: sst2, source: s3}", "data.source must be auto, local or hub (got 's3')"),
    ],
)
def test_an_unknown_dataset_or_source_is_refused_before_any_trial(capsys, tmp_path, data, fragment):
    # Before, every trial failed on it inside Ray, and the search exited 0.
    refused_search(capsys, tmp_path, write_space(tmp_path, data=data), fragment)


def spec_with(family: str, data: dict) -> SearchSpec:
    return SearchSpec.model_validate(
        {"name": "t", "family": family, "metric": {"name": "acc"}, "num_trials": 1, "data": data, "space": {"x": 1}}
    )


def test_the_data_check_leaves_alone_what_it_cannot_judge(tmp_path, monkeypatch):
    """The hub, a cluster's own filesystem, and families without the hook: not checked on this machine."""
    missing = str(tmp_path / "no-such-folder")
    monkeypatch.delenv("SHOWWORK_DATA_DIR", raising=False)
    (tmp_path / "my_models.py").write_text("def train(config, *, seed, device, reporter, data):\n    return {}\n")

    def check(family: str, data: dict, address=None) -> None:
        spec = spec_with(family, data)
        check_family_data(spec, resolve_family(family, tmp_path), address)

    with pytest.raises(InputError, match="does not exist"):  # the control: the check does bite
        check("bow_sst2", {"dataset": "sst2", "dir": missing})
    check("bow_sst2", {"dataset": "sst2", "dir": missing, "source": "hub"})
    check("bow_sst2", {"dataset": "sst2", "dir": missing}, "10.0.0.1:6379")
    check("my_models.py:train", {"dir": missing})  # no check_data beside its train: nothing to run
    check("bow_sst2", {"dataset": "sst2"})  # no folder named: the hub
    with pytest.raises(InputError, match="dataset 'sst2': no sst/glue_sst2_train.tsv.xz"):  # a folder without the dataset
        check("bow_sst2", {"dataset": "sst2", "dir": str(tmp_path)})
    (tmp_path / "SST-2").mkdir()
    for name in ("train.tsv", "dev.tsv"):
        (tmp_path / "SST-2" / name).write_bytes(b"")
    check("bow_sst2", {"dataset": "sst2", "dir": str(tmp_path)})  # its files' names are checked, not their contents
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    check("bow_sst2", {"dataset": "sst2", "dir": missing})


def test_a_user_familys_own_check_data_refuses_the_search(capsys, tmp_path):
    (tmp_path / "checked.py").write_text(
        "def check_data(data):\n    raise ValueError(f\"data.corpus {data.get('corpus')!r} is not downloaded.\")\n\n"
        "def train(config, *, seed, device, reporter, data):\n    return {'acc': 1.0}\n"
    )
    space = tmp_path / "space.yaml"
    space.write_text("name: t\nfamily: checked.py:train\ndata: {corpus: wiki}\nmetric: {name: acc}\nnum_trials: 1\nspace: {x: 1}\n")
    refused_search(capsys, tmp_path, space, "data.corpus 'wiki' is not downloaded. Nothing was started.")


# --- (c) a malformed search space -------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(p.name for p in SPACES.glob("*.yaml")))
def test_a_bad_space_gives_search_and_sample_the_same_line_as_validate(capsys, tmp_path, name):
    code, out, expected = cli(capsys, "validate", SPACES / name)
    assert code == 2 and out == "" and expected.startswith("showwork: error: ") and expected.count("\n") == 1, expected
    code, out, err = cli(capsys, "sample", SPACES / name, "-n", 3)
    assert (code, out, err) == (2, "", expected)
    message = refused_search(capsys, tmp_path, SPACES / name, expected.removeprefix("showwork: error: ").rstrip("\n"))
    assert message.startswith(str(SPACES / name))


# --- YAML is loaded safely ---------------------------------------------------------------------------

PAYLOADS = [
    'data: !!python/object/apply:os.system ["touch {marker}"]',
    'data: {{x: !!python/object/new:subprocess.check_call [["touch", "{marker}"]]}}',
    'data: !!python/object/apply:subprocess.run [["touch", "{marker}"]]',
]


@pytest.mark.parametrize("payload", PAYLOADS, ids=["os.system", "nested-new", "subprocess.run"])
def test_python_tags_are_refused_and_never_run(capsys, tmp_path, payload):
    marker = tmp_path / f"pwned-{secrets.token_hex(8)}"
    text = (
        "name: pwned\nfamily: bow_sst2\nmetric: {name: val_accuracy}\nnum_trials: 1\n"
        + payload.format(marker=marker)
        + "\nspace:\n  lr: {distribution: loguniform, low: 1e-4, high: 1e-1}\n"
    )
    space = tmp_path / "space.yaml"
    space.write_text(text)
    for argv in (["validate", space], ["sample", space, "-n", 1]):
        code, out, err = cli(capsys, *argv)
        assert code == 2 and out == "" and err.count("\n") == 1, err
        assert "YAML tag tag:yaml.org,2002:python/" in err and "is not allowed" in err, err
    refused_search(capsys, tmp_path, space, "is not allowed")
    assert not marker.exists()
    # The control: an unsafe loader runs the payload, so the check above can fail.
    yaml.unsafe_load(text)
    assert marker.exists()


@pytest.mark.parametrize("where", ["--address", "RAY_ADDRESS"])
def test_num_cpus_with_a_cluster_is_refused(capsys, tmp_path, monkeypatch, where):
    argv = ["--num-cpus", "2"]
    if where == "--address":
        argv += ["--address", "10.0.0.1:6379"]
    else:
        monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    space = write_space(tmp_path)
    storage, db = tmp_path / "runs", tmp_path / "mlflow.db"
    code, out, err = cli(capsys, "search", space, *argv, "--storage", storage, "--tracking-uri", f"sqlite:///{db}")
    assert code == 2 and "--num-cpus sizes the local Ray" in err and err.count("\n") == 1
    assert not storage.exists() and not db.exists()


# --- issue 14: what validate accepted and search could not run ---------------------------------------


@pytest.mark.parametrize("name", [".", "..", ".hidden", "-rf"])
def test_a_bad_name_override_is_refused_by_validate_sample_and_search_alike(capsys, tmp_path, name):
    """Item 5: validate said yes to these names (from the file or --name) and search said no."""
    space = write_space(tmp_path)
    expected = f"{space}: name (set by --name): must be 1 to 200 letters, digits, '.', '_' or '-', starting with a letter or digit"
    code, out, err = cli(capsys, "validate", space, f"--name={name}")
    assert (code, out) == (2, "") and err == f"showwork: error: {expected} (got \"{name}\")\n", err
    code, out, err = cli(capsys, "search", space, f"--name={name}", "--no-progress", "--storage", tmp_path / "runs",
                         "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert (code, out) == (2, "") and err == f"showwork: error: {expected} (got \"{name}\")\n", err
    assert not (tmp_path / "runs").exists() and not (tmp_path / "mlflow.db").exists()


def run_showwork(*argv, cwd: Path, timeout: float = 60) -> "subprocess.CompletedProcess[str]":
    """``python -m showwork ARGV`` in a child, so that a command that blocks fails the test instead of hanging it."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true"}
    env.pop("RAY_ADDRESS", None)
    env.pop("MLFLOW_TRACKING_URI", None)
    return subprocess.run([sys.executable, "-m", "showwork", *map(str, argv)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_a_fifo_as_space_file_is_refused_without_blocking(tmp_path):
    """Item 9: opening a FIFO for reading blocked until a writer came, forever."""
    import os

    fifo = tmp_path / "space.yaml"
    os.mkfifo(fifo)
    storage, db = tmp_path / "runs", tmp_path / "mlflow.db"
    for argv in (["validate", fifo], ["sample", fifo, "-n", 2],
                 ["search", fifo, "--no-progress", "--storage", storage, "--tracking-uri", f"sqlite:///{db}"]):
        done = run_showwork(*argv, cwd=tmp_path)
        assert (done.returncode, done.stdout) == (2, ""), done.stderr
        assert done.stderr == f"showwork: error: {fifo}: is a FIFO (named pipe), not a regular file; a search space (a page of YAML) must be a file\n"
    assert not storage.exists() and not db.exists()


def test_dev_zero_as_space_file_is_refused_by_sample_and_search(capsys, tmp_path):
    """Item 9: /dev/zero says it has 0 bytes and was read until MemoryError."""
    zero = Path("/dev/zero")
    if not zero.exists():
        pytest.skip("no /dev/zero")
    code, out, err = cli(capsys, "sample", zero, "-n", 1)
    assert (code, out) == (2, "") and err == "showwork: error: /dev/zero: is a character device, not a regular file; a search space (a page of YAML) must be a file\n"
    refused_search(capsys, tmp_path, zero, "/dev/zero: is a character device, not a regular file")

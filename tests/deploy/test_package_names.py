"""Issue 25 item 5: the distribution installs the top-level packages ``showwork`` and ``showwork_models``, no ``models``.

A top-level ``models`` in site-packages shadowed (or was shadowed by) the ``models`` package of most
ML repositories and Django projects. The repository keeps its ``models/`` folder; ``showwork_models``
is a link to it that setuptools packages. These tests build the wheel of this checkout and install
it, and install the checkout editable, each into a bare virtual environment whose only other
packages are this test environment's site-packages, added by a ``.pth`` path line (so that the
``.pth`` files there, among them the editable install of some checkout, are not run): the built-in
families load by their names and through Ray's workers, ``models`` is not importable, and a spec
that still says ``models.bow:train`` loads the built-in family with a warning, unless the user has a
``models`` package of their own, which then wins.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from showwork.store import Ledger

from helpers import REPO_ROOT, search_process_environment

pytestmark = [pytest.mark.slow, pytest.mark.integration]

# What the distribution is built from (as Docker's `COPY .` and a clone have it: the link stays a link).
_SOURCES = ("pyproject.toml", "README.md", "showwork", "models", "showwork_models")

PROBE = """\
import importlib.util, json, sys, warnings
import showwork, showwork_models
from showwork.families import BUILTIN_FAMILIES, resolve_family
import showwork_models.bow
assert resolve_family("bow_sst2") is showwork_models.bow.train
old = resolve_family("models.bow:train")
print(json.dumps({
    "showwork": showwork.__file__, "showwork_models": showwork_models.__file__,
    "models_importable": importlib.util.find_spec("models") is not None,
    "old_name_is_builtin": old is showwork_models.bow.train,
    "old_name_module": old.__module__,
    "builtins": sorted(BUILTIN_FAMILIES.values()),
    "loaded": sorted(m for m in sys.modules if m == "models" or m.startswith("models.")),
}))
"""

USER_MODELS_PROBE = """\
import json
from showwork.families import resolve_family
train = resolve_family("models.bow:train")
print(json.dumps({"file": train.__code__.co_filename, "module": train.__module__}))
"""

OLD_NAME_SPACE = """\
name: old-name
family: models.bow:train
data: {dataset: sst2, train_size: 400, dev_size: 200}
metric: {name: val_accuracy, mode: max}
num_trials: 2
seed: 0
resources: {cpus: 1, gpus: 0}
space:
  lr: {distribution: loguniform, low: 1e-2, high: 1.0}
  epochs: 1
"""


def _run(command: list, *, cwd: Path, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in command], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{command}: exit {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def _bare_environment(venv: Path) -> dict[str, str]:
    """The environment of a command in ``venv``: no PYTHONPATH (nothing of this checkout on the path)."""
    env = search_process_environment()
    for name in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME"):
        env.pop(name, None)
    env["PATH"] = os.pathsep.join([str(venv / "bin"), env.get("PATH", "")])
    return env


def _bare_venv(root: Path) -> tuple[Path, Path]:
    """A virtual environment without pip whose site-packages reach this one's dependencies by a path line."""
    venv = root / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=root, timeout=120)
    site = Path(_run([venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                     cwd=root, env=_bare_environment(venv)).stdout.strip())
    (site / "zz_test_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n")
    return venv, site


def _copy_sources(destination: Path) -> Path:
    destination.mkdir()
    for name in _SOURCES:
        origin = REPO_ROOT / name
        if origin.is_symlink():
            os.symlink(os.readlink(origin), destination / name)
        elif origin.is_dir():
            shutil.copytree(origin, destination / name, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copy2(origin, destination / name)
    return destination


def _probe(venv: Path, cwd: Path, code: str = PROBE) -> dict:
    return json.loads(_run([venv / "bin" / "python", "-c", code], cwd=cwd, env=_bare_environment(venv)).stdout.splitlines()[-1])


def _source_packages(root: Path) -> set[str]:
    """The packages under ``showwork/`` of the checkout, dotted."""
    return {".".join(init.parent.relative_to(root).parts) for init in (root / "showwork").rglob("__init__.py")}


def test_the_link_is_the_models_folder():
    link = REPO_ROOT / "showwork_models"
    assert link.is_symlink() and os.readlink(link) == "models"
    assert link.resolve() == (REPO_ROOT / "models").resolve()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("wheel")
    source = _copy_sources(root / "source")
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--quiet", "--wheel-dir", root / "wheels",
          source], cwd=root, timeout=300)
    [built] = (root / "wheels").glob("showwork_tuning-*.whl")
    return built


def test_the_wheel_holds_showwork_and_showwork_models_only(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert top == {"showwork", "showwork_models"}
    [top_level] = [name for name in names if name.endswith(".dist-info/top_level.txt")] or [None]
    if top_level is not None:
        assert zipfile.ZipFile(wheel).read(top_level).decode().split() == ["showwork", "showwork_models"]
    models = {Path(name).name for name in names if name.startswith("showwork_models/")}
    assert models == {path.name for path in (REPO_ROOT / "models").glob("*.py")}
    packages = {str(Path(name).parent).replace("/", ".") for name in names if name.endswith("/__init__.py")}
    assert packages == _source_packages(REPO_ROOT) | {"showwork_models"}


def test_the_installed_wheel_runs_the_built_in_families_and_has_no_models(wheel, tmp_path):
    venv, site = _bare_venv(tmp_path)
    _run([sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--target", site, wheel], cwd=tmp_path, timeout=300)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    found = _probe(venv, elsewhere)
    assert Path(found["showwork_models"]).parent == site / "showwork_models", found
    assert Path(found["showwork"]).is_relative_to(site), found
    assert found["models_importable"] is False  # nothing named models was installed
    assert found["old_name_is_builtin"] and found["old_name_module"] == "showwork_models.bow", found
    assert found["loaded"] == []  # the old name imported no second copy
    assert all(target.startswith("showwork_models.") for target in found["builtins"]), found

    # A search whose spec still says models.bow:train: it warns with the new name, and Ray's workers
    # (this venv's Python) load the installed built-in family.
    (elsewhere / "old.yaml").write_text(OLD_NAME_SPACE)
    done = _run([venv / "bin" / "python", "-m", "showwork", "search", "old.yaml", "--no-progress", "--num-cpus", "2",
                 "--storage", "runs", "--tracking-uri", f"sqlite:///{elsewhere / 'mlflow.db'}"],
                cwd=elsewhere, env=_bare_environment(venv), timeout=600)
    assert "the built-in families' package is now showwork_models; write 'showwork_models.bow:train'" in done.stderr
    assert "or the built-in name 'bow_sst2'" in done.stderr
    records = Ledger(elsewhere / "runs", "old-name").records()
    assert [r.status for r in records] == ["finished"] * 2, [r.error for r in records]

    # A user's own models package (beside their spec, the current folder) is theirs: the old name is not taken from them.
    user = tmp_path / "project"
    (user / "models").mkdir(parents=True)
    (user / "models" / "__init__.py").write_text("")
    (user / "models" / "bow.py").write_text("def train(config, *, seed, device, reporter, data):\n    return {'acc': 1.0}\n")
    mine = _probe(venv, user, USER_MODELS_PROBE)
    assert mine == {"file": str(user / "models" / "bow.py"), "module": "models.bow"}


def test_an_editable_install_maps_showwork_models_to_the_models_folder(tmp_path):
    source = _copy_sources(tmp_path / "source")
    venv, site = _bare_venv(tmp_path)
    _run([sys.executable, "-m", "pip", "--python", venv / "bin" / "python", "install", "--no-deps", "--no-build-isolation",
          "--quiet", "-e", source], cwd=tmp_path, env=_bare_environment(venv), timeout=300)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    found = _probe(venv, elsewhere)
    assert Path(found["showwork_models"]).resolve() == (source / "models" / "__init__.py").resolve(), found
    assert Path(found["showwork"]).resolve() == (source / "showwork" / "__init__.py").resolve(), found
    assert found["models_importable"] is False
    assert found["old_name_is_builtin"] and found["loaded"] == [], found
    # An edit of the folder is what the next import sees (editable, not a copy).
    (source / "models" / "bow.py").write_text((source / "models" / "bow.py").read_text() + "\nEDITED = True\n")
    edited = _run([venv / "bin" / "python", "-c", "import showwork_models.bow as b; print(b.EDITED)"], cwd=elsewhere,
                  env=_bare_environment(venv))
    assert edited.stdout.strip() == "True"

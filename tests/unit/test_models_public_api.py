"""The built-in families (models/, installed as ``showwork_models``) are written on showwork's public API only.

Issue 25 item 5: the folder is imported as ``showwork_models`` (``models`` was a top-level name that
collided with users' own packages), so it imports itself relatively, never as ``models.x`` or
``showwork_models.x``, and imports of showwork only from the modules a family author is given
(:mod:`showwork.trainable`). A built-in family named as before (``models.bow:train``) still loads.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import showwork.cache
import showwork.files
import showwork.trainable
import showwork.values
from showwork.families import BUILTIN_FAMILIES, BUILTIN_PACKAGE, load_family, renamed_builtin_module, resolve_family
from showwork.space import load_search_spec

from helpers import REPO_ROOT

# The showwork modules a family may import: the public trainable API.
ALLOWED_SHOWWORK_MODULES = {"showwork.trainable"}

MODEL_FILES = sorted((REPO_ROOT / "models").glob("*.py"))


def _absolute_imports(path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` of every absolute import in ``path`` (function bodies included)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def test_the_models_folder_has_its_modules():
    assert {path.stem for path in MODEL_FILES} >= {"__init__", "bow", "mlp", "lstm", "cnn", "logreg", "bcn", "deberta", "data"}


@pytest.mark.parametrize("path", MODEL_FILES, ids=lambda path: path.name)
def test_a_model_module_imports_only_the_public_api_and_itself_relatively(path):
    wrong = [
        f"{path.name}:{line}: {module}" for line, module in _absolute_imports(path)
        if module.split(".")[0] in {"models", BUILTIN_PACKAGE}
        or module.split(".")[0] == "showwork" and module not in ALLOWED_SHOWWORK_MODULES
    ]
    assert wrong == [], f"import the package relatively and showwork only from {sorted(ALLOWED_SHOWWORK_MODULES)}"


def test_the_helpers_a_family_gets_are_the_ones_showwork_uses():
    # One concept, one place: showwork.trainable re-exports them, it does not define them again.
    assert showwork.trainable.is_integer is showwork.values.is_integer
    assert showwork.trainable.cache_directory is showwork.cache.cache_directory
    assert showwork.trainable.atomic_writer is showwork.files.atomic_writer
    assert {"is_integer", "cache_directory", "atomic_writer", "Reporter"} <= set(showwork.trainable.__all__)


def test_the_built_in_families_are_in_showwork_models():
    for name, target in BUILTIN_FAMILIES.items():
        assert target.startswith(f"{BUILTIN_PACKAGE}."), (name, target)
    import showwork_models.bow

    assert resolve_family("bow_sst2") is showwork_models.bow.train


def test_the_old_name_of_a_built_in_module_loads_it_once_with_a_warning(tmp_path):
    import showwork_models.bow

    assert renamed_builtin_module("models.bow") == "showwork_models.bow"
    assert renamed_builtin_module("models.no_such_module") is None  # not ours: imported as named (and refused)
    assert renamed_builtin_module("mymodels.bow") is None
    (tmp_path / "old.yaml").write_text("name: old\nfamily: models.bow:train\nmetric: {name: val_accuracy}\nnum_trials: 1\n"
                                       "space:\n  lr: 0.1\n")
    spec = load_search_spec(tmp_path / "old.yaml")
    before = {name for name in sys.modules if name == "models" or name.startswith("models.")}
    with pytest.warns(UserWarning) as caught:
        train = load_family(spec)
    assert train is showwork_models.bow.train
    assert [str(w.message) for w in caught] == [
        "family 'models.bow:train': the built-in families' package is now showwork_models; write"
        " 'showwork_models.bow:train' or the built-in name 'bow_sst2' (the name 'models' is left to your own code)"
    ]
    assert {name for name in sys.modules if name == "models" or name.startswith("models.")} == before  # no second copy
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_family(spec.model_copy(update={"family": "showwork_models.bow:train"}))  # the new name: silent


def test_a_users_own_models_package_wins_over_the_old_name(tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text("")
    (tmp_path / "models" / "bow.py").write_text("def train(config, *, seed, device, reporter, data):\n    return {}\n")
    code = ("import json; from showwork.families import renamed_builtin_module, resolve_family\n"
            "train = resolve_family('models.bow:train')\n"
            "print(json.dumps([renamed_builtin_module('models.bow'), train.__module__, train.__code__.co_filename]))")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [None, "models.bow", str(tmp_path / "models" / "bow.py")]

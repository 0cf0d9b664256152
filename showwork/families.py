"""Finding a model family's train function from the name in a search-space file.

Three forms, and user code is imported only from exactly the place the user named:

- a built-in family name (``bow_sst2``, ...): the families of the papers, in the ``models`` package;
- ``package.module:function``: imported with :func:`importlib.import_module` (Python imports the
  parent packages first, nothing else);
- ``path/to/file.py:function``: that one file is executed, relative to the search-space file
  (``..`` and absolute paths are allowed: the search-space file is trusted like the code it names).

The function must have the trainable's signature (:mod:`showwork.trainable`): one positional
``config`` and the named keyword arguments ``seed``, ``device``, ``reporter`` and ``data``. This
refuses, before any trial runs, a name that points at something else (``os:system``,
``builtins:eval``, ``subprocess:run``).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from pathlib import Path

from showwork.errors import InputError
from showwork.search_space import family_kind
from showwork.trainable import TrainFunction

__all__ = ["BUILTIN_FAMILIES", "data_check", "resolve_family"]

# Built-in families: name -> "module:function" in the models package (written on the public API).
# Each module documents its hyperparameters and data options; the papers' spaces are in search_spaces/.
BUILTIN_FAMILIES: dict[str, str] = {
    "bow_sst2": "models.bow:train",  # hashed bag-of-words logistic regression (numpy only): the quick demo
    "mlp": "models.mlp:train",  # Reuters, Tang et al. 2020
    "lstm": "models.lstm:train",  # Reuters, regularised LSTM of Adhikari et al. 2019
    "cnn": "models.cnn:train",  # SST-5, Kim 2014 as in Dodge et al. 2019 Fig. 1
    "logreg": "models.logreg:train",  # SST-5, n-gram logistic regression of Dodge et al. 2019
    "bcn": "models.bcn:train",  # SST-2, McCann et al. 2017 (the `bcn` extra: allennlp-light)
    "deberta": "models.deberta:train",  # MultiNLI, Lourie et al. 2024 (transformers)
}

_TRAINABLE_KEYWORDS = ("seed", "device", "reporter", "data")


def resolve_family(family: str, base_dir: Path | None = None) -> TrainFunction:
    """Return the train function named by ``family``.

    Parameters
    ----------
    family : str
        A built-in name, ``package.module:function`` or ``path/to/file.py:function``.
    base_dir : Path, optional
        Directory that relative file paths are resolved against (the search-space file's).

    Raises
    ------
    InputError
        Unknown built-in name, module or file that cannot be imported, missing or non-callable function,
        or a function without the trainable's signature.
    """
    target = BUILTIN_FAMILIES.get(family, family)
    try:
        kind = family_kind(target)  # the syntax rule of search-space files, so a string names one thing only
    except ValueError as error:
        raise InputError(f"family {family!r}: {error}.") from None
    if kind == "builtin":
        known = ", ".join(sorted(BUILTIN_FAMILIES))
        raise InputError(
            f"family {family!r} is not a built-in family ({known}) nor of the form"
            " 'package.module:function' or 'path/to/file.py:function'."
        )
    where, _, name = target.rpartition(":")
    if kind == "file":
        module = _load_file(Path(where) if base_dir is None else (base_dir / where), family)
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as error:
            raise InputError(f"family {family!r}: cannot import module {where!r} ({error}).") from None
    function = getattr(module, name, None)
    if function is None:
        raise InputError(f"family {family!r}: {where} has no function {name!r}.")
    if not callable(function):
        raise InputError(f"family {family!r}: {where}:{name} is not callable.")
    _check_signature(function, family, f"{where}:{name}")
    return function


def _check_signature(function, family: str, label: str) -> None:
    """Refuse a callable that cannot be called as ``train(config, seed=, device=, reporter=, data=)``.

    The four keywords must be named parameters: ``**kwargs`` alone would let through callables
    that are not trainables (``subprocess.run``), only to fail in every trial.
    """
    expected = "a trainable is def train(config, *, seed, device, reporter, data)"
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # a C function without a readable signature
        raise InputError(f"family {family!r}: {label} is not a trainable (its signature cannot be read); {expected}.") from None
    named = {
        parameter.name for parameter in signature.parameters.values()
        if parameter.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    }
    try:
        signature.bind({}, **dict.fromkeys(_TRAINABLE_KEYWORDS))
        binds = True
    except TypeError:
        binds = False
    if not binds or not named.issuperset(_TRAINABLE_KEYWORDS):
        raise InputError(f"family {family!r}: {label}{signature} is not a trainable; {expected}.")


def _load_file(path: Path, family: str):
    path = path.resolve()
    if not path.is_file():
        raise InputError(f"family {family!r}: no such file {path}.")
    module_name = f"showwork_user_{abs(hash(str(path)))}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise InputError(f"family {family!r}: cannot load {path} as Python.")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as error:  # the user's module failed at import: say where
        del sys.modules[module_name]
        raise InputError(f"family {family!r}: importing {path} failed: {type(error).__name__}: {error}") from None
    return module


def data_check(train: TrainFunction):
    """The family's optional pre-flight hook ``check_data(data)``, defined beside its ``train``; None if absent.

    See :mod:`showwork.trainable`: the hook raises when the search's ``data`` would fail every trial
    (a missing data folder), so that ``showwork search`` can refuse before it starts anything.
    """
    module = sys.modules.get(getattr(train, "__module__", "") or "") or inspect.getmodule(train)
    check = getattr(module, "check_data", None)
    return check if callable(check) else None

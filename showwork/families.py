"""Finding a model family's train function from the name in a search-space file.

Three forms, and user code is imported only from exactly the place the user named:

- a built-in family name (``bow_sst2``, ...): the families of the papers, in the ``models`` package;
- ``package.module:function``: imported with :func:`importlib.import_module`;
- ``path/to/file.py:function``: loaded from that file, relative to the search-space file.
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
from pathlib import Path

from showwork.errors import InputError
from showwork.trainable import TrainFunction

__all__ = ["BUILTIN_FAMILIES", "resolve_family"]

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

_MODULE_FORM = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


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
        Unknown built-in name, module or file that cannot be imported, missing or non-callable function.
    """
    target = BUILTIN_FAMILIES.get(family, family)
    if ":" not in target:
        known = ", ".join(sorted(BUILTIN_FAMILIES))
        raise InputError(
            f"family {family!r} is not a built-in family ({known}) nor of the form"
            " 'package.module:function' or 'path/to/file.py:function'."
        )
    where, _, name = target.rpartition(":")
    if where.endswith(".py"):
        module = _load_file(Path(where) if base_dir is None else (base_dir / where), family)
    elif _MODULE_FORM.match(target):
        try:
            module = importlib.import_module(where)
        except ImportError as error:
            raise InputError(f"family {family!r}: cannot import module {where!r} ({error}).") from None
    else:
        raise InputError(f"family {family!r}: expected 'package.module:function' or 'path/to/file.py:function'.")
    function = getattr(module, name, None)
    if function is None:
        raise InputError(f"family {family!r}: {where} has no function {name!r}.")
    if not callable(function):
        raise InputError(f"family {family!r}: {where}:{name} is not callable.")
    return function


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

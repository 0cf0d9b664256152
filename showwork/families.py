"""Finding a model family's train function from the name in a search-space file.

Three forms, and user code is imported only from exactly the place the user named:

- a built-in family name (``bow_sst2``, ...): the families of the papers, in the ``showwork_models``
  package (the repository's ``models/`` folder, installed under a name of its own so that it never
  shadows a user's ``models`` package; ``models.mlp:train``, its name before, still loads it: see
  :func:`renamed_builtin_module`);
- ``package.module:function``: imported with :func:`importlib.import_module` (Python imports the
  parent packages first, nothing else);
- ``<function NAME>``: a Python function given to ``showwork.search(train, space)`` (:func:`function_code`
  identifies its code; it reaches the workers pickled by value, :func:`pickled_function`): a search
  file cannot name one, only a Python caller that holds it can run it;
- ``path/to/file.py:function``: that one file is executed, relative to the search-space file
  (``..`` and absolute paths are allowed: the search-space file is trusted like the code it names).
  Its folder goes first on ``sys.path``, as for ``python file.py``: the file may import helper
  modules beside it (on a Ray cluster the folder is shipped to the workers, see
  :mod:`showwork.trials.execution`).

The function must have the trainable's signature (:mod:`showwork.trainable`): one positional
``config`` and the named keyword arguments ``seed``, ``device``, ``reporter`` and ``data``. This
refuses, before any trial runs, a name that points at something else (``os:system``,
``builtins:eval``, ``subprocess:run``).
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import importlib
import importlib.util
import inspect
import marshal
import os
import pickle
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import yaml

from showwork.errors import InputError
from showwork.space import SpecError, family_kind, function_family, search_spec_from_mapping
from showwork.trainable import TrainFunction

if TYPE_CHECKING:
    from showwork.space import SearchSpec

__all__ = [
    "BUILTIN_FAMILIES", "BUILTIN_PACKAGE", "LONG_IMPORT_S", "FunctionCode", "check_family_data", "check_function",
    "data_check", "family_file", "function_code", "function_spec", "load_family", "load_family_timed", "pickled_function",
    "renamed_builtin_module", "resolve_family", "spec_folder", "unpickled_function",
]

BUILTIN_PACKAGE = "showwork_models"
"""The import name of the built-in families' package (the repository's ``models/`` folder)."""

_OLD_BUILTIN_PACKAGE = "models"  # its import name until issue 25 item 5: it collided with users' own `models`

# Built-in families: name -> "module:function" in the showwork_models package (written on the public API).
# Each module documents its hyperparameters and data options; the papers' spaces are in search_spaces/.
BUILTIN_FAMILIES: dict[str, str] = {
    "bow_sst2": "showwork_models.bow:train",  # hashed bag-of-words logistic regression (numpy only): the quick demo
    "mlp": "showwork_models.mlp:train",  # Reuters, Tang et al. 2020
    "lstm": "showwork_models.lstm:train",  # Reuters, regularised LSTM of Adhikari et al. 2019
    "cnn": "showwork_models.cnn:train",  # SST-5, Kim 2014 as in Dodge et al. 2019 Fig. 1
    "logreg": "showwork_models.logreg:train",  # SST-5, n-gram logistic regression of Dodge et al. 2019
    "bcn": "showwork_models.bcn:train",  # SST-2, McCann et al. 2017 (the `bcn` extra: allennlp-light)
    "deberta": "showwork_models.deberta:train",  # MultiNLI, Lourie et al. 2024 (transformers)
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
    if kind == "function":
        raise InputError(
            f"family {family!r} is a Python function given to showwork.search(train, space): no file or module names it,"
            " so only Python can run it, given the function again (showwork.open_search(NAME, train=train).resume())."
        )
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
            module = importlib.import_module(renamed_builtin_module(where) or where)
        except ImportError as error:
            raise InputError(f"family {family!r}: cannot import module {where!r} ({error}).") from None
    function = getattr(module, name, None)
    if function is None:
        close = difflib.get_close_matches(name, [n for n, v in vars(module).items() if callable(v) and not n.startswith("_")], n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise InputError(f"family {family!r}: {where} has no function {name!r}{hint}.")
    if not callable(function):
        raise InputError(f"family {family!r}: {where}:{name} is not callable.")
    _check_signature(function, family, f"{where}:{name}")
    return function


def renamed_builtin_module(module: str) -> str | None:
    """The built-in module that ``module`` named under the package's old name, or None.

    ``models.mlp`` was the import name of :data:`BUILTIN_PACKAGE`'s ``mlp`` until the package was
    renamed (a top-level ``models`` collided with a user's own ``models`` package): a spec, and a
    recorded search that ``showwork resume`` continues, may still say ``models.mlp:train``. It names
    ``showwork_models.mlp`` when no other ``models`` package is importable, or when the one that is is
    the repository's ``models/`` folder itself (importing it under both names would load two copies
    of every module). A user's own ``models`` package is theirs: None, and it is imported as named.
    Nothing is imported here (:func:`importlib.util.find_spec` of top-level names only).
    """
    package, dot, rest = module.partition(".")
    if package != _OLD_BUILTIN_PACKAGE or not dot:
        return None
    builtin = importlib.util.find_spec(BUILTIN_PACKAGE)
    if builtin is None or not builtin.submodule_search_locations:
        return None
    folders = {Path(folder).resolve() for folder in builtin.submodule_search_locations}
    if not any((folder / f"{rest.partition('.')[0]}.py").is_file() for folder in folders):
        return None  # not one of the built-in modules: the name means whatever it means
    try:
        other = importlib.util.find_spec(_OLD_BUILTIN_PACKAGE)
    except (ImportError, ValueError):
        other = None
    if other is not None and not folders.intersection(Path(f).resolve() for f in other.submodule_search_locations or ()):
        return None
    return f"{BUILTIN_PACKAGE}.{rest}"


def _check_signature(function, family: str, label: str, where: str | None = None) -> None:
    """Refuse a callable that cannot be called as ``train(config, seed=, device=, reporter=, data=)``.

    The four keywords must be named parameters: ``**kwargs`` alone would let through callables
    that are not trainables (``subprocess.run``), only to fail in every trial. The message begins with
    ``where`` (default: ``family 'FAMILY'``).
    """
    expected = "a trainable is def train(config, *, seed, device, reporter, data)"
    where = where or f"family {family!r}"
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # a C function without a readable signature
        raise InputError(f"{where}: {label} is not a trainable (its signature cannot be read); {expected}.") from None
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
        raise InputError(f"{where}: {label}{signature} is not a trainable; {expected}.")


def _load_file(path: Path, family: str):
    path = path.resolve()
    if not path.is_file():
        raise InputError(f"family {family!r}: no such file {path}{_close_files(path)}.")
    # As `python file.py` does: the file's folder first on sys.path, so that `import helpers` finds
    # helpers.py beside it (issue 16 item 5), in the driver and in every worker that loads it.
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)
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


def _close_files(path: Path) -> str:
    """The hint ``" (did you mean x.py?)"`` for a misspelt file name, from the ``.py`` files of its folder."""
    try:
        names = [entry.name for entry in path.parent.iterdir() if entry.suffix == ".py"] if path.parent.is_dir() else []
    except OSError:
        return ""
    close = difflib.get_close_matches(path.name, names, n=1)
    return f" (did you mean {close[0]}?)" if close else ""


def spec_folder(spec: SearchSpec) -> Path:
    """The folder that the spec's relative family path is resolved against: the search-space file's
    (the current directory for a spec that was not read from a file)."""
    return Path(spec.source_path).resolve().parent if spec.source_path else Path.cwd()


def family_file(spec: SearchSpec) -> Path | None:
    """The absolute path of the spec's family file (``path/to/file.py:function``); None for the other forms."""
    if spec.family_kind != "file":
        return None
    return (spec_folder(spec) / spec.family.rpartition(":")[0]).resolve()


def load_family(spec: SearchSpec) -> TrainFunction:
    """The spec's train function (:func:`resolve_family`, relative to the search-space file).

    What ``showwork validate`` and ``showwork search`` both run, so that they refuse a family alike.
    A built-in family named by the package's old name (``models.mlp:train``) loads, with a warning that
    names the new one (:func:`renamed_builtin_module`).

    Raises
    ------
    SpecError
        The family cannot be loaded; the message starts with ``FILE:LINE:COLUMN`` of the ``family:`` key.
    """
    if spec.function is not None:
        check_function(spec.function)
        return spec.function
    try:
        train = resolve_family(spec.family, spec_folder(spec))
    except InputError as error:
        shown = spec.source_path or spec.name
        line, column = _key_position(spec.source_text, "family")
        where = f"{shown}:{line}:{column}" if line is not None else shown
        raise SpecError(f"{where}: {error}", shown, line, column, "family") from None
    module, _, function = spec.family.rpartition(":")
    renamed = renamed_builtin_module(module) if spec.family_kind == "module" else None
    if renamed is not None:
        builtin = [name for name, target in BUILTIN_FAMILIES.items() if target == f"{renamed}:{function}"]
        short = f" or the built-in name '{builtin[0]}'" if builtin else ""
        warnings.warn(f"family {spec.family!r}: the built-in families' package is now {BUILTIN_PACKAGE}; write"
                      f" '{renamed}:{function}'{short} (the name 'models' is left to your own code)")
    return train


LONG_IMPORT_S = 1.0
"""An import of the family at least this long is mentioned by ``showwork validate`` (issue 23 item 5)."""


def load_family_timed(spec: SearchSpec) -> tuple[TrainFunction, float]:
    """:func:`load_family`, and how long it took in seconds (importing the family's module, on this machine).

    Each worker imports the family once, within the spec's ``setup_timeout_s`` (the trainable's ``timeout_s``
    does not count it). An import that takes more than half of that here warns: a worker that imports
    it more slowly (a busier node, a colder disk) would record its trial as a family import timeout.

    Raises
    ------
    SpecError
        As :func:`load_family`.
    """
    started = time.perf_counter()
    train = load_family(spec)
    seconds = time.perf_counter() - started
    if seconds > spec.setup_timeout_s / 2:
        warnings.warn(
            f"importing the family {spec.family!r} took {seconds:.1f} s here, more than half of its limit in the workers"
            f" (setup_timeout_s = {spec.setup_timeout_s:g} s): a worker that imports it more slowly records its trial as"
            " a family import timeout; raise setup_timeout_s"
        )
    return train, seconds


def _key_position(text: str | None, key: str) -> tuple[int | None, int | None]:
    """1-based line and column of the top-level ``key`` in the YAML ``text``; (None, None) if not found."""
    if not text:
        return None, None
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:  # the text was read by showwork's own loader; this one only locates the key
        return None, None
    for key_node, _ in getattr(root, "value", None) or ():
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
            return key_node.start_mark.line + 1, key_node.start_mark.column + 1
    return None, None


def check_family_data(spec: SearchSpec, train: TrainFunction, address: str | None) -> None:
    """Run the family's pre-flight hook ``check_data(data)`` when the trials will run on this machine.

    On a cluster (``address``, ``$RAY_ADDRESS``) the data are the workers' and are not checked here.

    Raises
    ------
    InputError
        The hook refused the search's ``data`` (its message says why).
    """
    check = data_check(train)
    if check is None or address or os.environ.get("RAY_ADDRESS"):
        return
    try:
        check(dict(spec.data))
    except Exception as error:  # the hook's own words: a missing folder, a bad option
        raise InputError(f"{spec.source_path or spec.name}: {error} Nothing was started.") from None


def data_check(train: TrainFunction):
    """The family's optional pre-flight hook ``check_data(data)``, defined beside its ``train``; None if absent.

    See :mod:`showwork.trainable`: the hook raises when the search's ``data`` would fail every trial
    (a missing data folder), so that ``showwork search`` can refuse before it starts anything.
    """
    module = sys.modules.get(getattr(train, "__module__", "") or "") or inspect.getmodule(train)
    check = getattr(module, "check_data", None)
    return check if callable(check) else None


# --- a Python function as the family: showwork.search(train, space) ---------------------------


@dataclass(frozen=True)
class FunctionCode:
    """What identifies the code of a function trainable, recorded with its search.

    Attributes
    ----------
    name : str
        ``__qualname__`` (``make.<locals>.train`` for a closure).
    module : str
        ``__module__`` (``__main__`` in a notebook or a script).
    source : str or None
        :func:`inspect.getsource` (a notebook's cell holds it; IPython keeps every cell in
        :mod:`linecache`); None where Python has no source (code built by ``exec`` of a string).
    sha256 : str
        The SHA-256 of ``source`` (UTF-8), or, without a source, of the function's code object
        (:func:`marshal.dumps`: its bytecode, constants and names; the same only under the same Python version).
    hashed : {"source", "bytecode"}
        Which of the two ``sha256`` is of.
    """

    name: str
    module: str
    source: str | None
    sha256: str
    hashed: Literal["source", "bytecode"]

    def to_dict(self) -> dict[str, Any]:
        """The JSON form recorded in ``search.json`` (the source itself goes to a file of its own)."""
        return {"name": self.name, "module": self.module, "sha256": self.sha256, "hashed": self.hashed,
                "source_available": self.source is not None}


def _plain_function(train: Any) -> Any:
    """The function object of ``train`` (a bound method's ``__func__``); None for what is not a Python function."""
    function = getattr(train, "__func__", train) if inspect.ismethod(train) else train
    return function if inspect.isfunction(function) else None


def check_function(train: Any) -> str:
    """The family of ``train``, ``<function NAME>`` (:func:`~showwork.space.function_family`), once it is checked to
    be a Python function (def or lambda) with the trainable's signature.

    A ``functools.partial`` or a callable object is refused too: showwork records the code of what
    it runs (:func:`function_code`), and has none to record for them.

    Raises
    ------
    InputError
        Naming the parameter ``train``.
    """
    function = _plain_function(train)
    if function is None:
        raise InputError(f"train: must be a Python function (def or lambda) whose code showwork can record, not"
                         f" {type(train).__name__}; wrap it: def train(config, *, seed, device, reporter, data): ...")
    family = function_family(function.__name__)
    _check_signature(train, family, function.__qualname__, where="train")
    return family


def function_spec(train: Any, fields: Any, where: str) -> SearchSpec:
    """The spec of a search of the Python function ``train``: ``fields`` are the other keys of a search file, checked
    by the one validator of search files (:func:`showwork.space.search_spec_from_mapping`, messages after ``where``).

    What ``showwork.search`` (from its keywords) and ``showwork.race`` (from each ``(train, settings)`` pair) build
    their specs with. The family is ``<function NAME>`` (:func:`check_function`); the function rides on the spec
    (``spec.function``) to the driver, which records its code and ships it to the workers.

    Raises
    ------
    InputError
        ``train`` is not a trainable function; ``fields`` name a family; a key is refused as in a file.
    """
    if "family" in fields:
        raise InputError(f"{where}: family: the function given is the family (leave family out)")
    return search_spec_from_mapping({**fields, "family": check_function(train)}, where, function=train)


def function_code(train: Any) -> FunctionCode:
    """The :class:`FunctionCode` of ``train`` (checked by :func:`check_function` first)."""
    function = _plain_function(train)
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):  # exec'd code, or a file gone since
        source = None
    if source is not None:
        digest, hashed = hashlib.sha256(source.encode("utf-8")).hexdigest(), "source"
    else:
        digest, hashed = hashlib.sha256(marshal.dumps(function.__code__)).hexdigest(), "bytecode"
    return FunctionCode(name=function.__qualname__, module=str(function.__module__), source=source, sha256=digest,
                        hashed=hashed)


def pickled_function(train: Any) -> bytes:
    """``train`` pickled as Ray ships functions (its ``cloudpickle``), with the module that defines it by value.

    By value: a notebook's ``__main__`` always is; a module of the user's is too, so that a worker
    (on this machine or a cluster's node) needs neither the module nor its folder on its path.
    What the function refers to in its own module (globals, helpers) travels with it; the modules
    it imports are imported by name in the workers.

    Raises
    ------
    InputError
        ``train`` refers to something that cannot be pickled (a lock, an open file).
    """
    from ray import cloudpickle  # lazy: Ray loads when a search starts it, not when its input is checked

    module = sys.modules.get(getattr(train, "__module__", None) or "")
    by_value = (module is not None and module.__name__ not in ("__main__", "builtins")
                and module.__name__ not in cloudpickle.list_registry_pickle_by_value())  # the caller's registration stays
    if by_value:
        cloudpickle.register_pickle_by_value(module)
    try:
        return cloudpickle.dumps(train)
    except Exception as error:  # noqa: BLE001 - cloudpickle raises whatever the unpicklable object's __reduce__ raises
        raise InputError(f"train: {getattr(train, '__qualname__', train)} cannot be shipped to Ray's workers: it refers to"
                         f" what cannot be pickled ({type(error).__name__}: {error})") from None
    finally:
        if by_value:
            cloudpickle.unregister_pickle_by_value(module)


@functools.lru_cache(maxsize=4)
def unpickled_function(pickled: bytes) -> TrainFunction:
    """The function :func:`pickled_function` pickled, unpickled once per process (a worker's trials share it)."""
    return pickle.loads(pickled)  # noqa: S301 - the search's own driver pickled it, as Ray ships every trainable

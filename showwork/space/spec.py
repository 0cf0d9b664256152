"""The whole search-space file as a pydantic model (:class:`SearchSpec`), and loading it (:func:`load_search_spec`)."""


from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from showwork.constants import DEFAULT_FAIL_FAST_AFTER, DEFAULT_SETUP_TIMEOUT_S, FAILURE_POLICIES, MAX_SEED
from showwork.errors import did_you_mean, show_value
from showwork.space.errors import Located, Marks, SpecError, dotted, mark_of
from showwork.space.space import SearchSpace
from showwork.space.yaml_reader import FlowMapping, SpecDumper, compose_yaml, read_spec_text
from showwork.store import search_name_problem

MAX_TRIALS = 1_000_000
OVERRIDABLE = {"name": "--name", "num_trials": "--num-trials", "seed": "--seed", "max_concurrent": "--max-concurrent",
               "fail_fast_after": "--fail-fast-after"}

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MODULE_TARGET = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*")
# Python's own repr of a function, less its address: no colon, so never a file's or a module's target.
_FUNCTION_TARGET = re.compile(r"<function ([A-Za-z_][A-Za-z0-9_]*)>")


# --- the whole file: pydantic models -------------------------------------------------------


def family_kind(family: str) -> Literal["builtin", "module", "file", "function"]:
    """Classify a ``family`` string by its syntax alone (nothing is imported or opened).

    - ``"builtin"``: an identifier, e.g. ``bow_sst2``;
    - ``"file"``: ``path/to/file.py:function`` (anything ending in ``.py`` before the last colon);
    - ``"module"``: ``package.module:function`` (dotted identifiers, a colon, an identifier);
    - ``"function"``: ``<function NAME>`` (:func:`function_family`), a Python function given to
      ``showwork.search(train, space)``: only a Python caller that holds the function can run it.

    Raises
    ------
    ValueError
        If the string is none of these.
    """
    if _IDENTIFIER.fullmatch(family):
        return "builtin"
    path, colon, function = family.rpartition(":")
    if colon and path.endswith(".py") and len(path) > 3 and _IDENTIFIER.fullmatch(function) and path.isprintable():
        return "file"
    if _MODULE_TARGET.fullmatch(family):
        return "module"
    if _FUNCTION_TARGET.fullmatch(family):
        return "function"
    raise ValueError(
        "must be a built-in family name (e.g. bow_sst2), package.module:function or"
        f" path/to/file.py:function (got {show_value(family, as_yaml=True)})"
    )


def function_family(name: str) -> str:
    """The ``family`` of a search whose trainable is the Python function called ``name`` (its ``__name__``):
    ``<function NAME>``, NAME an identifier (a lambda's ``<lambda>`` is written ``lambda``; any other character
    that is not one of an identifier's, ``_``)."""
    shown = "lambda" if name == "<lambda>" else re.sub(r"\W", "_", name, flags=re.ASCII) or "_"
    return f"<function {'_' + shown if shown[0].isdigit() else shown}>"


_STRICT = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False)


class MetricSpec(BaseModel):
    """The score to optimise: ``name`` (a key the trial reports), ``mode`` ``max`` or ``min``, and an optional ``test`` score.

    ``bounds``, optional, is ``[a, b]``: the values the score can take (``[0, 1]`` for accuracy).
    Reports use them for the mean tuning curve's bands, which need a bounded support.
    """

    model_config = _STRICT

    name: str = Field(min_length=1)
    mode: Literal["max", "min"] = "max"
    test: str | None = Field(default=None, min_length=1)
    bounds: tuple[float, float] | None = None

    @field_validator("bounds", mode="before")
    @classmethod
    def _bounds_pair(cls, value: Any) -> Any:
        # YAML gives a list; strict mode would refuse it for a tuple.
        return tuple(value) if isinstance(value, list) else value

    @model_validator(mode="after")
    def _bounds_ordered(self) -> "MetricSpec":
        if self.bounds is not None and not self.bounds[0] < self.bounds[1]:
            raise ValueError(f"bounds must be [a, b] with a < b (got {list(self.bounds)})")
        return self


RAY_RESOURCE_UNITS = 10_000  # Ray counts resources in fixed point: 10,000 units per CPU or GPU (0.0001 each)
MAX_RESOURCE = 1_000_000  # per trial; far beyond any node, and far inside Ray's fixed-point range
MAX_TIMEOUT_S = 365 * 24 * 3600  # one year; the watchdog's threading.Timer refuses more than threading.TIMEOUT_MAX


class ResourcesSpec(BaseModel):
    """What each trial holds: ``cpus`` (> 0) and ``gpus`` (>= 0; fractions share a GPU).

    Each is at most :data:`MAX_RESOURCE` and a whole number of Ray's resource units (0.0001):
    Ray would refuse ``1e-300`` with an internal error and silently round ``0.33333`` down.

    ``gpu_memory_cap: true`` caps each trial's torch allocations at its share of each of its GPUs
    (``torch.cuda.set_per_process_memory_fraction(min(1, gpus))`` in the worker, before the
    trainable runs): a packed trial that outgrows its share fails alone with a ``CUDA out of
    memory`` record instead of starving its neighbours. Its limits: it counts only torch's caching
    allocator (not the CUDA context of about 0.5 GiB per process, cuBLAS/cuDNN workspaces, or
    memory other libraries take), it is a fraction of the device's total memory, and it holds
    back only trials that have it. Refused without ``gpus``.
    """

    model_config = _STRICT

    cpus: float = Field(default=1.0, gt=0, le=MAX_RESOURCE)
    gpus: float = Field(default=0.0, ge=0, le=MAX_RESOURCE)
    gpu_memory_cap: bool = False

    @model_validator(mode="after")
    def _cap_needs_gpus(self) -> ResourcesSpec:
        if self.gpu_memory_cap and self.gpus == 0:
            raise ValueError("gpu_memory_cap needs gpus > 0 (it caps each trial's GPU memory at its share of the GPU)")
        return self

    @field_validator("cpus", "gpus")
    @classmethod
    def _whole_ray_units(cls, value: float) -> float:
        units = value * RAY_RESOURCE_UNITS
        whole = round(units)
        if (value > 0 and whole == 0) or not math.isclose(units, whole, rel_tol=1e-9, abs_tol=1e-6):
            nearest = max(whole, 1) / RAY_RESOURCE_UNITS
            raise ValueError(
                f"must be a multiple of 0.0001, the unit Ray counts resources in (got {value!r}; write {nearest:g})"
            )
        return value


# The validation context of load_search_spec: a bad space raises its Located problem (a ValueError,
# which pydantic carries to load_search_spec with its raw key path); a caller from Python gets the
# InputError of SearchSpace.from_dict, which pydantic lets through as it is.
_LOCATED = {"located": True}


def _coerce_space(value: Any, info: ValidationInfo) -> SearchSpace:
    if isinstance(value, SearchSpace):
        return value
    if info.context == _LOCATED:
        return SearchSpace.parsed(value)
    if isinstance(value, Mapping):
        return SearchSpace.from_dict(value)
    raise ValueError(f"must be a mapping of parameter names to distributions (got {show_value(value, as_yaml=True)})")


SpaceField = Annotated[
    SearchSpace,
    BeforeValidator(_coerce_space),
    PlainSerializer(lambda space: space.to_dict(), return_type=dict),
]


class SearchSpec(BaseModel):
    """A whole search-space file, validated.

    Attributes
    ----------
    name : str
        1 to 200 letters, digits, ``.``, ``_`` and ``-``, starting with a letter or digit (the rule of
        :data:`showwork.store.ledger.SEARCH_NAME_RULE`); names the search (its ledger folder, reports, MLflow).
    family : str
        The model family to train: a built-in name, ``package.module:function``,
        ``path/to/file.py:function`` or ``<function NAME>`` (checked for syntax only here; see :func:`family_kind`).
    data : dict
        Passed to the family as is (e.g. ``{dataset: sst2}``); default ``{}``.
    metric : MetricSpec
    num_trials : int
        Trials to run, 1 to 1,000,000 inclusive.
    seed : int
        Seed of the whole search, 0 to 2**63 - 1 inclusive; default 0. Trial ``i``'s configuration
        and training seed depend only on ``(seed, i)`` (see :mod:`showwork.sampling`).
    resources : ResourcesSpec
        Per trial; default 1 CPU, 0 GPUs.
    max_concurrent : int or None
        At most this many trials at once (>= 1); None: as many as the resources allow.
    timeout_s : float or None
        Wall-clock limit of each trial's trainable in seconds, from its call, > 0 and at most one year
        (:data:`MAX_TIMEOUT_S`); None: no limit. A trial past it is recorded as ``timeout``.
    setup_timeout_s : float
        Wall-clock limit of a worker's set-up before it calls the trainable (importing the family, which a warm
        worker has done already), > 0 and at most one year; default
        :data:`~showwork.constants.DEFAULT_SETUP_TIMEOUT_S` (600 s). A trial past it is recorded as ``timeout``
        of kind :data:`~showwork.constants.FAMILY_IMPORT_TIMEOUT`. Each limit is kept by the trial's process, then
        by its worker, and, :data:`~showwork.trials.execution.TIMEOUT_GRACE_S` later, by the driver.
    max_retries : int
        Restarts of a trial whose worker process died, 0 to 100 inclusive; default 1.
    fail_fast_after : int
        Stop a run of the search when the first this many trials to end in it all failed with the same
        error kind (:func:`showwork.run.fail_fast.error_kind`), 0 to 1,000,000 inclusive; 0 never stops;
        default :data:`~showwork.constants.DEFAULT_FAIL_FAST_AFTER` (3). The stopped search is resumable.
    failure_policy : {"error", "worst", "exclude"}
        How failed trials enter the tuning curve (see :mod:`showwork.statistics.failures`);
        default ``worst``.
    space : SearchSpace
        At least one parameter.
    source_path, source_text : str or None
        The file the spec was loaded from and its YAML text; not part of equality or of
        ``model_dump()``.
    function : callable or None
        The trainable of a ``<function NAME>`` family, as the Python caller gave it (never read from a
        file); not part of equality or of ``model_dump()``: the ledger records its source and hash.

    Notes
    -----
    Validation is strict: no text for numbers, no ``1.0`` for an integer, no booleans for numbers,
    no infinities, no unknown keys. Two specs are equal when their ``model_dump()`` are.
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False, arbitrary_types_allowed=True)

    name: str
    family: str
    data: dict[str, Any] = Field(default_factory=dict)
    metric: MetricSpec
    num_trials: int = Field(ge=1, le=MAX_TRIALS)
    seed: int = Field(default=0, ge=0, le=MAX_SEED)
    resources: ResourcesSpec = Field(default_factory=ResourcesSpec)
    max_concurrent: int | None = Field(default=None, ge=1)
    timeout_s: float | None = Field(default=None, gt=0, le=MAX_TIMEOUT_S)
    setup_timeout_s: float = Field(default=DEFAULT_SETUP_TIMEOUT_S, gt=0, le=MAX_TIMEOUT_S)
    max_retries: int = Field(default=1, ge=0, le=100)
    fail_fast_after: int = Field(default=DEFAULT_FAIL_FAST_AFTER, ge=0, le=MAX_TRIALS)
    failure_policy: Literal[FAILURE_POLICIES] = "worst"  # type: ignore[valid-type]
    space: SpaceField
    source_path: str | None = Field(default=None, exclude=True)
    source_text: str | None = Field(default=None, exclude=True, repr=False)
    function: Any = Field(default=None, exclude=True, repr=False)

    @field_validator("name")
    @classmethod
    def _name_syntax(cls, value: str) -> str:
        problem = search_name_problem(value)  # the ledger's rule: the name is a folder and an MLflow experiment
        if problem is not None:
            raise ValueError(f"{problem} (got {show_value(value, as_yaml=True)})")
        return value

    @field_validator("family")
    @classmethod
    def _family_syntax(cls, value: str) -> str:
        family_kind(value)
        return value

    @property
    def family_kind(self) -> str:
        """``"builtin"``, ``"module"``, ``"file"`` or ``"function"`` (see :func:`family_kind`)."""
        return family_kind(self.family)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SearchSpec):
            return NotImplemented
        return self.model_dump() == other.model_dump()

    __hash__ = None  # type: ignore[assignment]


USER_KEYS = tuple(name for name, field in SearchSpec.model_fields.items() if not field.exclude)  # what a file may set
_SECTIONS: dict[str, tuple[str, ...]] = {
    "": USER_KEYS,
    "metric": tuple(MetricSpec.model_fields),
    "resources": tuple(ResourcesSpec.model_fields),
}



# --- loading -------------------------------------------------------------------------------


def _pydantic_message(error: Mapping[str, Any]) -> str:
    kind = error["type"]
    if kind == "missing":
        return "missing required key"
    if kind == "value_error":
        return str(error["ctx"]["error"])
    if kind in ("model_type", "dict_type"):
        return f"must be a mapping (got {show_value(error.get('input'), as_yaml=True)})"
    message = error["msg"]
    for old, new in (
        ("Input should be a valid integer", "must be an integer"),
        ("Input should be a valid number", "must be a number"),
        ("Input should be a finite number", "must be finite"),
        ("Input should be a valid string", "must be text"),
        ("Input should be", "must be"),
        ("String should have at least 1 character", "must not be empty"),
        ("String should", "must"),
    ):
        if message.startswith(old):
            message = new + message[len(old):]
            break
    if "input" in error:
        message += f" (got {show_value(error['input'], as_yaml=True)})"
    return message


def _check_section_keys(data: Mapping[str, Any], marks: Marks) -> list[Located]:
    problems = []
    for section, allowed in _SECTIONS.items():
        mapping = data if not section else data.get(section)
        if not isinstance(mapping, Mapping):
            continue
        for key in mapping:
            if key not in allowed:
                path = (section, key) if section else (key,)
                problems.append(
                    Located(
                        path,
                        f"unknown key{did_you_mean(key, allowed)} (the keys here are {', '.join(allowed)})",
                        mark=mark_of(path, marks, key=True),
                    )
                )
    return problems


def _pydantic_problems(error: ValidationError, overrides: Mapping[str, Any], marks: Marks) -> list[Located]:
    """pydantic's errors as located problems; the space's arrives whole, as the :class:`Located` it raised."""
    problems = []
    for item in error.errors(include_url=False):
        cause = item.get("ctx", {}).get("error")
        if isinstance(cause, Located):  # the space: its raw key path, deeper than pydantic's ("space",)
            problems.append(cause.located(marks))
            continue
        loc = tuple(item["loc"])
        if item["type"] == "extra_forbidden":  # reported with "did you mean" by _check_section_keys
            continue
        note = f" (set by {OVERRIDABLE[loc[0]]})" if loc and loc[0] in overrides else ""
        mark = None if note else mark_of(loc, marks, key=item["type"] == "missing")
        problems.append(Located(loc, _pydantic_message(item), mark=mark, note=note))
    return problems


def load_search_spec(path: str | Path, overrides: Mapping[str, Any] | None = None) -> SearchSpec:
    """Read, check and validate a search-space YAML file.

    Parameters
    ----------
    path : str or Path
        The YAML file (UTF-8, at most 1 MiB).
    overrides : mapping, optional
        Values for ``name``, ``num_trials``, ``seed``, ``max_concurrent`` and ``fail_fast_after`` (the
        command-line flags, :data:`OVERRIDABLE`) that replace the file's before validation; a None value is ignored.

    Returns
    -------
    SearchSpec
        With ``source_path`` (the path as given) and ``source_text`` (the YAML text).

    Raises
    ------
    SpecError
        One line: ``FILE:LINE:COLUMN: dotted.key: what is wrong (the offending value)``; file-level
        problems (missing, empty, binary, not UTF-8, not a mapping) name only the file.
    ValueError
        An override key other than those above (a programming error).
    """
    shown = str(path)
    overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
    unknown = sorted(set(overrides) - set(OVERRIDABLE))
    if unknown:
        raise ValueError(f"only {', '.join(OVERRIDABLE)} can be overridden (got {', '.join(unknown)})")
    text = read_spec_text(Path(path), shown)
    data, marks = compose_yaml(text, shown)
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else f"a single value ({show_value(data, as_yaml=True)})"
        raise SpecError(
            f"{shown}: the top level must be a mapping of keys (name, family, metric, num_trials, space), not {kind}",
            shown,
        )
    data.update(overrides)
    return _validated(data, marks, shown, overrides, {"source_path": shown, "source_text": text})


def search_spec_from_mapping(data: Mapping[str, Any], shown: str, function: Any = None) -> SearchSpec:
    """Check and validate a spec given as Python data in the search file's form, as :func:`load_search_spec` checks a file.

    What ``showwork.search(train, space, name=..., ...)`` builds its spec with: the same keys, rules and
    messages as a file, each naming its dotted key after ``shown`` (``showwork.search(): space.lr.low: must be
    positive ...``), without a line (there is no file).

    Parameters
    ----------
    data : mapping
        The keys of a search file (``name``, ``family``, ``metric``, ``num_trials``, ``space``, ...).
    shown : str
        Where the data came from, for messages (the caller: ``showwork.search()``).
    function : callable, optional
        The trainable of a ``<function NAME>`` family (:attr:`SearchSpec.function`).

    Raises
    ------
    SpecError
        One line: ``SHOWN: dotted.key: what is wrong (the offending value)``.
    """
    return _validated(dict(data), {}, shown, {}, {"function": function})


def _validated(data: dict[str, Any], marks: Marks, shown: str, overrides: Mapping[str, Any], extra: dict[str, Any]) -> SearchSpec:
    """The :class:`SearchSpec` of a file's (or a caller's) ``data``, every problem located by ``marks`` (a file's
    positions; empty for Python data); ``extra``: the fields never taken from the data (``source_*``, ``function``)."""
    problems = _check_section_keys(data, marks)  # source_path, source_text and function are never taken from the data

    candidate = {k: v for k, v in data.items() if k in USER_KEYS}
    try:
        spec = SearchSpec.model_validate({**candidate, **extra}, context=_LOCATED)
    except ValidationError as error:
        problems.extend(_pydantic_problems(error, overrides, marks))
        spec = None
    missing = [p for p in problems if p.mark is None and not p.note and p.message == "missing required key"]
    if len(missing) > 1 and len(missing) == len(problems):
        others = ", ".join(dotted(p.path) for p in missing[1:])
        missing[0].message += f" (also missing: {others})"
    if problems:
        raise min(problems, key=Located.order).error(shown)
    assert spec is not None
    return spec


def resolved_yaml(spec: SearchSpec) -> str:
    """The spec after defaults and overrides, as YAML that :func:`load_search_spec` reads back to an equal spec.

    Every key is written, defaults included; the space is flat (dotted names), one flow-style
    mapping per parameter. Floats are written exactly (shortest repr).
    """
    data = spec.model_dump(mode="json")
    data["space"] = {name: FlowMapping(d) for name, d in data["space"].items()}
    source = " ".join(str(spec.source_path).split())
    header = f"# {source}, resolved by showwork (defaults filled in, overrides applied)\n" if spec.source_path else ""
    body = yaml.dump(data, Dumper=SpecDumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=4096)
    return header + body


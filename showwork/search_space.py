"""Search-space files: one YAML file becomes a validated :class:`SearchSpec`.

A user writes one file and runs ``showwork search SPACE.yaml``::

    name: sst2-bow
    family: bow_sst2                 # built-in, package.module:function or path/to/file.py:function
    data: {dataset: sst2}
    metric: {name: val_accuracy, mode: max, test: test_accuracy}
    num_trials: 20
    seed: 0
    resources: {cpus: 1, gpus: 0}
    max_concurrent: 2
    timeout_s: 300                   # the trainable's time; setup_timeout_s (default 600) bounds the import
    failure_policy: worst
    space:
      optimizer:
        lr: {distribution: loguniform, low: 1e-4, high: 1e-1}
      dropout: {distribution: uniform, low: 0.0, high: 0.5}
      epochs: 10                     # a bare scalar is a constant

Parameters may be nested (``optimizer: {lr: ...}``) or dotted (``optimizer.lr: ...``); both give
the parameter ``optimizer.lr``. A mapping with a ``distribution`` key is a distribution (see
:mod:`showwork.distributions`), any other mapping a group of parameters -- except that a group
whose keys look like a distribution's (a near miss of ``distribution``, an argument name such as
``low``, ``choices``, ``step`` or ``when``, or two near misses of argument names) is refused with
"did you mean", since it is almost always a misspelt distribution; parameters really named so are
written with dotted names (``thresholds.low: 0.1``).

A parameter may be conditional: ``when: {optimizer: sgd}`` (equality) or ``when: {optimizer:
{in: [sgd, adam]}}`` beside its ``distribution`` (a constant with a condition is written
``{distribution: constant, value: 0.9, when: ...}``). A condition names earlier categorical or
constant parameters (dotted names) and values they can take; several names must all hold. The
parameter is drawn only when its condition holds and is left out of the configuration otherwise
(:func:`showwork.sampling.trial_config`).

Loading is strict and safe: the file must be a regular file of at most 1 MiB (a FIFO or a device
is refused without being read; :func:`showwork.files.read_regular_file`), UTF-8 text;
``yaml.SafeLoader`` composes it, duplicate keys refused, YAML aliases (``*name``) refused outright
(so no alias bomb or recursive document can be expanded), only JSON values (text without lone
surrogates, finite numbers, booleans, null, lists, mappings with text keys).

Scalars are read by the YAML 1.2 core schema: ``true``/``false`` (also ``True``, ``TRUE``...),
``null``/``~``/nothing, integers ``10``, ``0o17``, ``0x10``, floats ``1e-4``, ``.5``; everything else
is text. A plain (unquoted, untagged) value that YAML 1.1 reads differently is refused, naming both
readings: ``no``/``yes``/``on``/``off``/``y``/``n`` (1.1: booleans), ``010`` (1.1: octal 8), ``09``,
``1:30`` (1.1: 90), ``1_000``, ``0b101``, ``-0x10``, ``2020-01-01`` (1.1: a date); quote it for text.
Keys are always text (``no:`` names a parameter ``no``). Explicit tags: ``!!str``, ``!!int``,
``!!float``, ``!!bool``, ``!!null`` (their text must be of that type), ``!!map`` and ``!!seq``; any
other tag is refused. Every error is a :class:`SpecError` of one line naming the file, the line and
column, and the dotted key::

    space.yaml:12:10: space.optimizer.lr.low: must be positive for a log-uniform distribution (low=0)
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping
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
from yaml.nodes import MappingNode, ScalarNode, SequenceNode

from showwork.constants import DEFAULT_SETUP_TIMEOUT_S, FAILURE_POLICIES, INT64_MAX, MAX_SEED
from showwork.distributions import (
    DISTRIBUTION_ARGUMENTS,
    Categorical,
    Condition,
    Constant,
    Distribution,
    DistributionError,
    distribution_from_dict,
)
from showwork.errors import InputError, did_you_mean, show_value
from showwork.files import read_regular_file
from showwork.ledger import search_name_problem
from showwork.sampling import shared_stream
from showwork.values import scalar_text

__all__ = [
    "FAILURE_POLICIES",
    "MetricSpec",
    "ResourcesSpec",
    "SearchSpace",
    "SearchSpec",
    "SpecError",
    "family_kind",
    "load_search_spec",
    "resolved_yaml",
]

MAX_TRIALS = 1_000_000
MAX_FILE_BYTES = 1 << 20  # a search space is a page of YAML; refuse anything over 1 MiB
MAX_DEPTH = 32  # nesting levels of mappings and lists
OVERRIDABLE = {"name": "--name", "num_trials": "--num-trials", "seed": "--seed", "max_concurrent": "--max-concurrent"}

_SEGMENT = re.compile(r"[A-Za-z0-9_-]+")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MODULE_TARGET = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*")


class SpecError(InputError):
    """An invalid search-space file; the message is one line naming the file, line, column and key.

    Attributes
    ----------
    path : str
        The file as given.
    line, column : int or None
        1-based position of the offending key or value, when there is one.
    key : str or None
        Dotted key of the offending value, e.g. ``"space.optimizer.lr.low"``.
    """

    def __init__(self, message: str, path: str, line: int | None = None, column: int | None = None, key: str | None = None):
        super().__init__(message)
        self.path, self.line, self.column, self.key = path, line, column, key


def _dotted(path: Iterable[Any]) -> str:
    """``("space", "batch", "choices", 2)`` -> ``"space.batch.choices[2]"``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


# --- the search space ----------------------------------------------------------------------


class _Located(ValueError):
    """A problem at a key of the file: the one type for every located problem in this module.

    ``path`` is the raw key path (``("space", "optimizer", "lr", "low")``; relative to ``space``
    while the space is parsed, see :meth:`under`); ``mark`` the YAML position when it is known
    before there is a path to look it up by (:func:`_mark_of`); ``other`` the path of a second
    place involved (the first of two duplicate names: "also at line N"); ``note`` what follows the
    key (`` (set by --seed)``). A ``ValueError``, so that raised inside the pydantic model's space
    validator it reaches :func:`load_search_spec` whole, path included, as pydantic's error context.
    """

    def __init__(self, path: tuple, message: str, *, mark: Any = None, other: tuple | None = None, note: str = ""):
        super().__init__(message)
        self.path, self.message, self.mark, self.other, self.note = path, message, mark, other, note

    def under(self, *prefix: Any) -> _Located:
        """The same problem with ``prefix`` before its paths (``under("space")``)."""
        other = None if self.other is None else prefix + self.other
        return _Located(prefix + self.path, self.message, mark=self.mark, other=other, note=self.note)

    def located(self, marks: Marks) -> _Located:
        """With its mark looked up in ``marks`` (the key's when it names a second place) and "also at line N"."""
        if self.mark is not None:
            return self
        message = self.message
        if self.other is not None:
            other = _mark_of(self.other, marks, key=True)
            if other is not None:
                message += f" (also at line {other.line + 1})"
        mark = None if self.note else _mark_of(self.path, marks, key=self.other is not None)
        return _Located(self.path, message, mark=mark, note=self.note)

    def order(self) -> tuple:
        if self.note:  # command-line overrides first: they are what the user just typed
            return (0, 0, 0)
        if self.mark is None:
            return (2, 0, 0)
        return (1, self.mark.line, self.mark.column)

    def error(self, shown: str) -> SpecError:
        """The one-line :class:`SpecError`: ``FILE:LINE:COLUMN: dotted.key: message``."""
        key = _dotted(self.path)
        where = f"{shown}:{_position(self.mark)}" if self.mark is not None else shown
        return SpecError(
            f"{where}: {key + self.note + ': ' if key + self.note else ''}{self.message}",
            shown,
            self.mark.line + 1 if self.mark is not None else None,
            self.mark.column + 1 if self.mark is not None else None,
            key or None,
        )

    def input_error(self) -> InputError:
        """For a caller from Python (no file): ``space.optimizer.lr.low: message``."""
        return InputError(f"{_dotted(self.path)}: {self.message}")


def _split_name(key: Any, path: tuple) -> list[str]:
    if not isinstance(key, str):
        raise _Located(path, f"parameter names must be text (got {show_value(key, as_yaml=True)})")
    segments = key.split(".")
    if not all(_SEGMENT.fullmatch(s) for s in segments):
        raise _Located(
            path, f"parameter names are dot-separated words of letters, digits, '_' and '-' (got {key!r})"
        )
    return segments


Entry = tuple  # (dotted name, raw key path, Distribution, Condition or None)


def _parse_distribution(value: Mapping, path: tuple) -> tuple[Distribution, Condition | None]:
    """A parameter's mapping -> its distribution and its ``when`` condition (None when it has none)."""
    arguments = {k: v for k, v in value.items() if k != "when"}
    for key in arguments:  # `wehn:` would otherwise be "not an argument of a uniform distribution"
        if isinstance(key, str) and key not in DISTRIBUTION_ARGUMENTS and difflib.get_close_matches(key.lower(), ["when"], cutoff=0.7):
            raise _Located(path + (key,), "unknown key; did you mean 'when'? (a condition: when: {parameter: value})")
    try:
        distribution = distribution_from_dict(arguments)
    except DistributionError as error:
        where = path + (error.field,) if error.field is not None and error.field in value else path
        raise _Located(where, error.reason) from None
    if "when" not in value:
        return distribution, None
    try:
        return distribution, Condition.from_dict(value["when"])
    except DistributionError as error:
        inside = path + ("when",)
        where = inside + (error.field,) if isinstance(value["when"], Mapping) and error.field in value["when"] else inside
        raise _Located(where, error.reason) from None


_NEAR_DISTRIBUTION = 0.6  # difflib ratio: "distribtion", "distrib", "Distribution" are near misses of `distribution`
_NEAR_ARGUMENT = 0.8  # "choises", "wieghts", "scael": misspellings of an argument (keys of 3+ characters: "lr" is 0.8 from "low")


def _looks_like_distribution(mapping: Mapping, path: tuple) -> None:
    """Refuse a group of parameters that is really a distribution whose ``distribution`` key is missing or misspelt.

    Before, ``l1_ratio: {distribtion: uniform, low: 0.0, high: 1.0}`` became three constants and every
    trial failed. A key counts when its value is not a mapping (a mapping is a parameter or a group)
    and it is a near miss of ``distribution``, exactly an argument name (``low``, ``choices``, ...,
    ``when``), or a near miss of one alongside another such key. Parameters really named so are
    written with dotted names (``thresholds.low: 0.1``), which are never read as arguments.
    """
    suspects: list[tuple[str, str, bool]] = []  # (key, the word it resembles, exactly that word)
    for key in mapping:
        if not isinstance(key, str) or "." in key:
            continue
        value = mapping[key]
        folded = key.lower()
        if isinstance(value, Mapping) and folded != "when":
            continue
        if difflib.get_close_matches(folded, ["distribution"], n=1, cutoff=_NEAR_DISTRIBUTION):
            suspects.append((key, "distribution", False))
            break
        if folded in DISTRIBUTION_ARGUMENTS:
            suspects.append((key, folded, True))
            continue
        close = difflib.get_close_matches(folded, list(DISTRIBUTION_ARGUMENTS), n=1, cutoff=_NEAR_ARGUMENT)
        if close and len(folded) >= 3:
            suspects.append((key, close[0], False))
    if not suspects:
        return
    decisive = [s for s in suspects if s[1] == "distribution" or s[2]]
    if not decisive and len(suspects) < 2:
        return  # one near miss alone (`weight: 0.5` in a group `loss`) is an ordinary parameter name
    key, word, exact = min(decisive or suspects, key=lambda suspect: suspect[1] != "distribution")
    group = _dotted(path)
    escape = f"if these are parameters named so, write them with dotted names ({group}.{key}: ...)"
    if word == "distribution":
        message = f"this mapping has no `distribution` key; did you mean 'distribution'? ({escape})"
    elif exact:
        message = (
            f"`{key}` is a distribution argument, but this mapping has no `distribution` key; add one, e.g."
            f" {{distribution: uniform, low: ..., high: ...}} ({escape})"
        )
    else:
        message = f"this mapping has no `distribution` key and `{key}` is not an argument; did you mean {word!r}? ({escape})"
    raise _Located(path + (key,), message)


def _parse_space(mapping: Any, path: tuple = (), names: tuple[str, ...] = ()) -> list[Entry]:
    """Walk a nested/dotted ``space`` mapping into ``(dotted name, raw key path, distribution, condition)``, in order."""
    if not isinstance(mapping, Mapping):
        raise _Located(path, f"must be a mapping of parameter names to distributions (got {show_value(mapping, as_yaml=True)})")
    if not mapping:
        raise _Located(path, "is empty: give at least one parameter" if not path else "is an empty group of parameters")
    if not path and "distribution" in mapping:
        raise _Located(
            ("distribution",), "the space maps parameter names to distributions; put this distribution under a name"
        )
    if path:  # the top level names parameters; `step: 10` there is a parameter called step
        _looks_like_distribution(mapping, path)
    out = []
    for key, value in mapping.items():
        where = path + (key,)
        name = names + tuple(_split_name(key, where))
        if isinstance(value, Mapping) and "distribution" in value:
            out.append((".".join(name), where, *_parse_distribution(value, where)))
        elif isinstance(value, Mapping):
            out.extend(_parse_space(value, where, name))
        elif isinstance(value, (list, tuple)):
            raise _Located(
                where,
                f"a list is not a distribution (got {show_value(value, as_yaml=True)}); to choose among values write"
                " {distribution: categorical, choices: [...]}",
            )
        elif value is None:
            raise _Located(
                where, "has no value; give a distribution, a constant, or {distribution: constant, value: null}"
            )
        else:
            try:
                out.append((".".join(name), where, Constant(value), None))
            except DistributionError as error:
                raise _Located(where, error.reason) from None
    return out


def _check_names(entries: list[Entry]) -> None:
    """Refuse a name given twice, a name that is also a group (``a`` and ``a.b``), and stream-id collisions."""
    seen: dict[str, tuple] = {}
    for name, path, _, _ in entries:
        if name in seen:
            raise _Located(path, f"parameter {name!r} is defined twice", other=seen[name])
        seen[name] = path
    for name, path, _, _ in entries:
        parts = name.split(".")
        for i in range(1, len(parts)):
            prefix = ".".join(parts[:i])
            if prefix in seen:
                raise _Located(
                    path, f"{name!r} needs {prefix!r} to be a group, but {prefix!r} is a parameter", other=seen[prefix]
                )
    clash = shared_stream(name for name, *_ in entries)
    if clash is not None:  # both parameters would draw the same random numbers
        first, second = clash
        raise _Located(
            seen[second], f"{second!r} and {first!r} have the same CRC-32 stream id; rename one", other=seen[first]
        )
    _check_conditions(entries)


def _check_conditions(entries: list[Entry]) -> None:
    """Each ``when`` names earlier categorical or constant parameters, with values they can take.

    Only earlier parameters: a trial's configuration is then drawn in file order, each condition
    deciding on values already drawn, and no cycle can exist (one would need a later reference).
    """
    order = {name: (i, path, dist, condition) for i, (name, path, dist, condition) in enumerate(entries)}
    for i, (name, path, _, condition) in enumerate(entries):
        if condition is None:
            continue
        for ref, values, _ in condition.tests:
            where = path + ("when", ref)
            if ref == name:
                raise _Located(where, f"{name!r} cannot depend on itself")
            if ref not in order:
                raise _Located(where, f"is not a parameter of this space{did_you_mean(ref, [n for n, *_ in entries[:i]])}")
            j, _, dist, ref_condition = order[ref]
            if j > i:
                cycle = ref_condition is not None and name in ref_condition.names
                raise _Located(
                    where,
                    f"{ref!r} is defined after {name!r}; a condition may only refer to parameters above it"
                    + (f" (and {ref!r} depends on {name!r}: a cycle)" if cycle else ""),
                )
            if isinstance(dist, Categorical):
                possible, what = dist.choices, f"among the choices of {ref!r} ({dist.choices_text()})"
            elif isinstance(dist, Constant):
                possible, what = (dist.value,), f"the constant value of {ref!r} ({json.dumps(dist.value)})"
            else:
                raise _Located(where, f"conditions test categorical or constant parameters; {ref!r} is {dist.kind}")
            for value in values:
                if not Condition(((ref, possible, True),)).holds({ref: value}):
                    hint = did_you_mean(value, [c for c in possible if isinstance(c, str)]) if isinstance(value, str) else ""
                    raise _Located(where, f"{json.dumps(value)} is not {what}, so it never holds{hint}")


class SearchSpace(Mapping):
    """An ordered mapping from dotted parameter names (``"optimizer.lr"``) to distributions.

    Parameters
    ----------
    params : mapping or iterable of (name, Distribution) pairs
        At least one parameter. Names are dot-separated words of letters, digits, ``_`` and
        ``-``; no name may also be a group of another (``a`` and ``a.b``).
    conditions : mapping of name to Condition, optional
        The conditional parameters: each is drawn only when its condition holds on the values
        drawn before it, and is left out of the configuration otherwise. A condition names
        earlier categorical or constant parameters and values they can take.

    Notes
    -----
    Equality is that of the mappings (same names, same distributions) and of the conditions;
    iteration keeps the order the file gave, which is the order of configurations and reports.
    """

    __slots__ = ("_params", "_conditions")

    def __init__(
        self,
        params: Mapping[str, Distribution] | Iterable[tuple[str, Distribution]],
        conditions: Mapping[str, Condition] | None = None,
    ):
        items = list(params.items()) if isinstance(params, Mapping) else list(params)
        conditions = dict(conditions or {})
        entries = []
        for name, dist in items:
            try:
                segments = _split_name(name, (name,))
                if not isinstance(dist, Distribution):
                    raise _Located((name,), f"must be a Distribution, not {type(dist).__name__}")
            except _Located as problem:
                raise InputError(f"space.{name}: {problem.message}") from None
            entries.append((".".join(segments), (name,), dist, conditions.get(name)))
        if not entries:
            raise InputError("space: is empty: give at least one parameter")
        unknown = sorted(set(conditions) - {name for name, *_ in entries})
        if unknown:
            raise InputError(f"space.{unknown[0]}: has a condition but is not a parameter")
        try:
            _check_names(entries)
        except _Located as problem:
            raise problem.under("space").input_error() from None
        self._set(entries)

    def _set(self, entries: list[Entry]) -> None:
        """Hold ``entries``, checked by :func:`_check_names`."""
        self._params: dict[str, Distribution] = {name: dist for name, _, dist, _ in entries}
        self._conditions: dict[str, Condition] = {name: c for name, _, _, c in entries if c is not None}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SearchSpace:
        """Build a space from its YAML/JSON form: nested or dotted names; distribution dicts (with ``when``) or bare scalars.

        Raises
        ------
        InputError
            The message starts with the dotted key at fault, e.g. ``space.optimizer.lr.low: ...``.
        """
        try:
            return cls._parsed(d)
        except _Located as problem:
            raise problem.input_error() from None

    @classmethod
    def _parsed(cls, d: Any) -> SearchSpace:
        """:meth:`from_dict`, raising the :class:`_Located` problem (raw key path under ``space``) for the file's marks."""
        try:
            entries = _parse_space(d)
            _check_names(entries)
        except _Located as problem:
            raise problem.under("space") from None
        space = cls.__new__(cls)
        space._set(entries)
        return space

    def __getitem__(self, name: str) -> Distribution:
        return self._params[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._params)

    def __len__(self) -> int:
        return len(self._params)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SearchSpace):
            return self._params == other._params and self._conditions == other._conditions
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        if self._conditions:
            return f"SearchSpace({self._params!r}, conditions={self._conditions!r})"
        return f"SearchSpace({self._params!r})"

    @property
    def names(self) -> tuple[str, ...]:
        """Dotted parameter names, in order."""
        return tuple(self._params)

    @property
    def conditions(self) -> dict[str, Condition]:
        """``{name: Condition}`` of the conditional parameters (see :func:`showwork.sampling.trial_config`)."""
        return dict(self._conditions)

    def to_dict(self) -> dict[str, dict[str, Any]]:
        """``{dotted name: distribution dict}`` in order, with ``when`` for a conditional parameter; :meth:`from_dict` inverts it exactly (also through JSON)."""
        out = {}
        for name, dist in self._params.items():
            out[name] = dist.to_dict()
            if name in self._conditions:
                out[name]["when"] = self._conditions[name].to_dict()
        return out

    def describe(self) -> list[dict[str, str]]:
        """One row per parameter for reports: ``{"name", "distribution", "bounds", "when"}``.

        ``distribution`` is the YAML name with any parameters that are not bounds (``normal
        (mean 0.5, std 0.1)``); ``bounds`` is the support in interval notation (``[1e-05, 0.001)``:
        ``[`` includes, ``)`` excludes; integers as ``{16, ..., 64}``; ``step s`` after a stepped
        one), the choices with their probabilities, or the constant value; ``when`` is the condition
        of a conditional parameter (``optimizer = 'sgd'``), else empty.
        """
        return [
            {
                "name": name,
                "distribution": d.kind_text(),
                "bounds": d.bounds_text(),
                "when": self._conditions[name].describe() if name in self._conditions else "",
            }
            for name, d in self._params.items()
        ]


# --- the whole file: pydantic models -------------------------------------------------------


def family_kind(family: str) -> Literal["builtin", "module", "file"]:
    """Classify a ``family`` string by its syntax alone (nothing is imported or opened).

    - ``"builtin"``: an identifier, e.g. ``bow_sst2``;
    - ``"file"``: ``path/to/file.py:function`` (anything ending in ``.py`` before the last colon);
    - ``"module"``: ``package.module:function`` (dotted identifiers, a colon, an identifier).

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
    raise ValueError(
        "must be a built-in family name (e.g. bow_sst2), package.module:function or"
        f" path/to/file.py:function (got {show_value(family, as_yaml=True)})"
    )


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


# The validation context of load_search_spec: a bad space raises its _Located problem (a ValueError,
# which pydantic carries to load_search_spec with its raw key path); a caller from Python gets the
# InputError of SearchSpace.from_dict, which pydantic lets through as it is.
_LOCATED = {"located": True}


def _coerce_space(value: Any, info: ValidationInfo) -> SearchSpace:
    if isinstance(value, SearchSpace):
        return value
    if info.context == _LOCATED:
        return SearchSpace._parsed(value)
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
        :data:`showwork.ledger.SEARCH_NAME_RULE`); names the search (its ledger folder, reports, MLflow).
    family : str
        The model family to train: a built-in name, ``package.module:function`` or
        ``path/to/file.py:function`` (checked for syntax only here; see :func:`family_kind`).
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
        by its worker, and, :data:`~showwork.execution.TIMEOUT_GRACE_S` later, by the driver.
    max_retries : int
        Restarts of a trial whose worker process died, 0 to 100 inclusive; default 1.
    failure_policy : {"error", "worst", "exclude"}
        How failed trials enter the tuning curve (see :mod:`showwork.statistics.failures`);
        default ``worst``.
    space : SearchSpace
        At least one parameter.
    source_path, source_text : str or None
        The file the spec was loaded from and its YAML text; not part of equality or of
        ``model_dump()``.

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
    failure_policy: Literal[FAILURE_POLICIES] = "worst"  # type: ignore[valid-type]
    space: SpaceField
    source_path: str | None = Field(default=None, exclude=True)
    source_text: str | None = Field(default=None, exclude=True, repr=False)

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
        """``"builtin"``, ``"module"`` or ``"file"`` (see :func:`family_kind`)."""
        return family_kind(self.family)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SearchSpec):
            return NotImplemented
        return self.model_dump() == other.model_dump()

    __hash__ = None  # type: ignore[assignment]


USER_KEYS = tuple(name for name in SearchSpec.model_fields if not name.startswith("source_"))
_SECTIONS: dict[str, tuple[str, ...]] = {
    "": USER_KEYS,
    "metric": tuple(MetricSpec.model_fields),
    "resources": tuple(ResourcesSpec.model_fields),
}


# --- YAML with positions -------------------------------------------------------------------


# Scalars are read by the YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution):
# null, true/false (three spellings each), decimal, 0o-octal and 0x-hex integers, and floats (``1e-4``
# is a float, ``.inf``/``.nan`` are refused later as not finite); everything else is text. A plain
# scalar that YAML 1.1 (PyYAML's default) reads differently -- ``no``/``yes``/``on``/``off``/``y``/``n``,
# ``010`` (octal 8), ``1:30`` (sexagesimal 90), ``1_000``, ``0b101``, ``2020-01-01`` -- is refused as
# ambiguous with both readings, so no file means one thing here and another to a 1.1 reader.
_STR_TAG, _INT_TAG, _FLOAT_TAG = "tag:yaml.org,2002:str", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
_BOOL_TAG, _NULL_TAG = "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null"
_CORE_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_CORE_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_CORE_INT = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
_CORE_FLOAT = re.compile(
    r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
_CORE_RESOLVERS = ((_NULL_TAG, _CORE_NULL), (_BOOL_TAG, _CORE_BOOL), (_INT_TAG, _CORE_INT), (_FLOAT_TAG, _CORE_FLOAT))
_LEADING_ZERO = re.compile(r"^[-+]?0[0-9]+$")  # 010: octal 8 in YAML 1.1, 10 in YAML 1.2
_YAML11_YES_NO = re.compile(r"^(?:y|Y|n|N)$")  # YAML 1.1 booleans that PyYAML does not implement
_MAX_NUMBER_CHARS = 400  # longer numerals are refused before int() or float() sees them


def _install_core_resolvers(cls: type, extra: Iterable[tuple[str, Any]] = ()) -> None:
    """Replace ``cls``'s implicit resolvers by the core schema's, then ``extra``, tried in that order.

    PyYAML indexes resolvers by the scalar's first character; every regexp is filed under every
    character that can begin a match of any of them (those of the core schema and of YAML 1.1).
    """
    firsts = {*"~nNtTfFyYoO-+0123456789.", "", *(k for k in yaml.SafeLoader.yaml_implicit_resolvers if k is not None)}
    table: dict[Any, list] = {}
    for tag, regexp in (*_CORE_RESOLVERS, *extra):
        for first in sorted(firsts):
            table.setdefault(first, []).append((tag, regexp))
    cls.yaml_implicit_resolvers = table


class _Loader(yaml.SafeLoader):
    """``SafeLoader`` that resolves plain scalars by the YAML 1.2 core schema and refuses aliases before expanding any.

    Scalars are constructed by :func:`_scalar`, not by PyYAML's constructors (whose YAML 1.1
    readings and failures on explicit tags such as ``!!bool maybe`` are what this replaces).
    """

    def compose_node(self, parent, index):  # noqa: D102 - PyYAML hook
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(
                None,
                None,
                f"YAML aliases (*{event.anchor}) are not allowed in a search space; write the value out",
                event.start_mark,
            )
        return super().compose_node(parent, index)

    def compose_scalar_node(self, anchor):  # noqa: D102 - PyYAML hook
        event = self.peek_event()
        explicit = event.tag not in (None, "!")
        node = super().compose_scalar_node(anchor)
        node.explicit_tag = explicit  # only an untagged plain scalar is checked for YAML 1.1 readings
        return node


class _Dumper(yaml.SafeDumper):
    """``SafeDumper`` that quotes every text :class:`_Loader` or a YAML 1.1 reader would not read as that text; no aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


_install_core_resolvers(_Loader)
# The dumper quotes a string when any resolver claims it: the core schema's first (so numbers and
# booleans are written plain), then YAML 1.1's (``no``, ``1:30``, dates), ``y``/``n`` and ``010``.
_install_core_resolvers(
    _Dumper,
    [
        *((tag, regexp) for resolvers in yaml.SafeLoader.yaml_implicit_resolvers.values() for tag, regexp in resolvers),
        (_BOOL_TAG, _YAML11_YES_NO),
        (_INT_TAG, _LEADING_ZERO),
    ],
)


def _yaml11_reading(text: str) -> Any:
    """What YAML 1.1 (PyYAML's resolvers and constructors) makes of a plain scalar; ``text`` itself if text.

    Returns a ``_Unreadable`` description when PyYAML would fail on it.
    """
    if _YAML11_YES_NO.match(text):
        return text in ("y", "Y")
    resolvers = yaml.SafeLoader.yaml_implicit_resolvers
    candidates = resolvers.get(text[:1] if text else "", []) + resolvers.get(None, [])
    tag = next((tag for tag, regexp in candidates if regexp.match(text)), _STR_TAG)
    if tag == _STR_TAG:
        return text
    constructor = yaml.constructor.SafeConstructor.yaml_constructors.get(tag)
    try:
        return constructor(yaml.constructor.SafeConstructor(), ScalarNode(tag, text))  # type: ignore[misc]
    except Exception:  # PyYAML's own failure on its own reading (e.g. the ``=`` value tag)
        return _Unreadable(tag)


class _Unreadable:
    def __init__(self, tag: str):
        self.tag = tag


def _reading_text(value: Any) -> str:
    """A YAML reading in words, for the ambiguity message."""
    if isinstance(value, _Unreadable):
        return f"a malformed !!{value.tag.rpartition(':')[2]}"
    if isinstance(value, str):
        return f"the text {json.dumps(value, ensure_ascii=False)}"
    if isinstance(value, bool) or value is None:
        return _reading_yaml(value)
    if isinstance(value, (int, float)):
        return repr(value)
    return f"a {type(value).__name__}"  # date, datetime


def _reading_yaml(value: Any) -> str | None:
    """How to write a reading so that both YAML versions agree, or None when it is no JSON value."""
    if isinstance(value, str):
        return f"{json.dumps(value, ensure_ascii=False)} in quotes"
    if value is None or isinstance(value, int) or (isinstance(value, float) and math.isfinite(value)):
        return scalar_text(value)  # null, true/false, a number
    return None


def _same_reading(a: Any, b: Any) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return a == b


def _ambiguity(text: str, core: Any) -> str | None:
    """The message for a plain scalar that YAML 1.1 and YAML 1.2 read differently, or None."""
    old = _yaml11_reading(text)
    if isinstance(old, str) and not _LEADING_ZERO.match(text):
        return None  # 1.1 reads text: 1.2's reading (e.g. 1e-4 as a number) is what the user wrote
    if not isinstance(old, str) and _same_reading(old, core):
        return None
    fixes = [fix for fix in (_reading_yaml(old), _reading_yaml(core)) if fix is not None]
    unsupported = " (date values are not supported)" if type(old).__name__ in ("date", "datetime") else ""
    return (
        f"{text} is ambiguous: YAML 1.1 reads it as {_reading_text(old)}{unsupported}, YAML 1.2 as"
        f" {_reading_text(core)}; write {' or '.join(fixes)}"
    )


def _scalar(node: ScalarNode) -> Any:
    """A scalar node as a JSON value by the YAML 1.2 core schema; a ``ValueError`` says why it cannot be one."""
    text, tag = node.value, node.tag
    if tag == _STR_TAG:
        return text
    if tag not in (_NULL_TAG, _BOOL_TAG, _INT_TAG, _FLOAT_TAG):
        raise ValueError(f"YAML tag {tag} is not allowed in a search space")
    shown = show_value(text, as_yaml=True)
    if tag == _NULL_TAG:
        if not _CORE_NULL.match(text):
            raise ValueError(f"!!null {shown} is not null (write null, ~ or nothing)")
        return None
    if tag == _BOOL_TAG:
        if not _CORE_BOOL.match(text):
            raise ValueError(f"!!bool {shown} is not a boolean (write true or false)")
        return text.lower() == "true"
    if tag == _INT_TAG and not _CORE_INT.match(text):
        raise ValueError(f"!!int {shown} is not an integer (YAML 1.2: decimal digits, 0o octal or 0x hex)")
    if tag == _FLOAT_TAG and not (_CORE_FLOAT.match(text) or _CORE_INT.match(text)):
        raise ValueError(f"!!float {shown} is not a number")
    if len(text) > _MAX_NUMBER_CHARS:
        raise ValueError(f"number too long: {text[:20]}... ({len(text)} characters)")
    if _CORE_INT.match(text):
        base = 8 if text.startswith("0o") else 16 if text.startswith("0x") else 10
        value = int(text[2:] if base != 10 else text, base)
        return float(value) if tag == _FLOAT_TAG else value
    special = text.lstrip("+-").lower()  # .inf, -.Inf, .NaN: refused later as not finite
    if special in (".inf", ".nan"):
        return math.nan if special == ".nan" else -math.inf if text.startswith("-") else math.inf
    return float(text)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _check_text(text: str) -> str:
    """Refuse a lone surrogate (``"\\ud800"`` escapes to one): it is not Unicode text and cannot be encoded."""
    found = _SURROGATE.search(text)
    if found:
        raise ValueError(
            f"contains a lone surrogate \\u{ord(found.group()):04x}, which is not a Unicode character"
            " (it cannot be written as UTF-8)"
        )
    return text


class _Flow(dict):
    """A mapping written in flow style (``{distribution: uniform, low: 0.0, high: 1.0}``)."""


_Dumper.add_representer(_Flow, lambda dumper, data: dumper.represent_mapping("tag:yaml.org,2002:map", data.items(), flow_style=True))


Marks = dict  # key path tuple -> (key mark, value mark)
_MAP_TAG, _SEQ_TAG = "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"


def _to_python(loader: _Loader, node: Any, path: tuple, marks: Marks, depth: int = 0) -> Any:
    """Turn a composed node into JSON values, recording the marks of every key path."""
    if depth > MAX_DEPTH:
        raise _Located(path, f"nested more than {MAX_DEPTH} levels deep", mark=node.start_mark)
    if not isinstance(node, ScalarNode) and node.tag not in (_MAP_TAG, _SEQ_TAG):
        raise _Located(path, f"YAML tag {node.tag} is not allowed in a search space", mark=node.start_mark)
    if isinstance(node, MappingNode):
        return _mapping_to_python(loader, node, path, marks, depth)
    if isinstance(node, SequenceNode):
        items = []
        for i, item in enumerate(node.value):
            marks[path + (i,)] = (item.start_mark, item.start_mark)
            items.append(_to_python(loader, item, path + (i,), marks, depth + 1))
        return items
    return _scalar_value(node, path, ambiguity=True)


def _mapping_to_python(loader: _Loader, node: MappingNode, path: tuple, marks: Marks, depth: int) -> dict[str, Any]:
    """A mapping node as a dict of text keys (see :func:`_to_python`); merge keys and duplicate keys refused."""
    out: dict[str, Any] = {}
    lines: dict[str, int] = {}
    for key_node, value_node in node.value:
        if not isinstance(key_node, ScalarNode):
            raise _Located(path, "keys must be text, not a list or mapping", mark=key_node.start_mark)
        if key_node.value == "<<" and key_node.style is None and not key_node.explicit_tag:
            # YAML 1.1 merges the mapping in; YAML 1.2 reads a key "<<": refused as ambiguous
            raise _Located(path, "YAML merge keys (<<) are not allowed in a search space", mark=key_node.start_mark)
        key = _scalar_value(key_node, path, ambiguity=False)
        if not isinstance(key, str):
            raise _Located(
                path, f"keys must be text (got {show_value(key, as_yaml=True)}); put the key in quotes", mark=key_node.start_mark
            )
        here = path + (key,)
        if key in out:
            raise _Located(
                here, f"duplicate key {key!r} (lines {lines[key]} and {key_node.start_mark.line + 1})", mark=key_node.start_mark
            )
        lines[key] = key_node.start_mark.line + 1
        marks[here] = (key_node.start_mark, value_node.start_mark)
        out[key] = _to_python(loader, value_node, here, marks, depth + 1)
    return out


def _scalar_value(node: ScalarNode, path: tuple, ambiguity: bool) -> Any:
    """A scalar node as a JSON value (see :func:`_scalar`); ``ambiguity``: refuse untagged plain scalars YAML 1.1 reads otherwise."""
    try:
        value = _scalar(node)
        if isinstance(value, str):
            _check_text(value)
    except ValueError as error:
        raise _Located(path, str(error), mark=node.start_mark) from None
    if ambiguity and node.style is None and not node.explicit_tag:
        message = _ambiguity(node.value, value)
        if message is not None:
            raise _Located(path, message, mark=node.start_mark)
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        if abs(value) > INT64_MAX:
            digits = node.value if len(node.value) <= 30 else f"{node.value[:20]}... ({len(node.value)} characters)"
            raise _Located(path, f"integer too large: {digits} (must fit in 64 bits)", mark=node.start_mark)
        return value
    if not math.isfinite(value):
        what = "too large (it overflows to infinity)" if re.search(r"[0-9]", node.value) else "not finite"
        raise _Located(path, f"number {node.value} is {what}; numbers must be finite", mark=node.start_mark)
    return value


def _read_text(path: Path, shown: str) -> str:
    try:
        raw = read_regular_file(path, MAX_FILE_BYTES, "search space (a page of YAML)")
    except InputError as error:
        raise SpecError(str(error), shown) from None
    nul = raw.find(b"\x00")
    if nul >= 0:
        raise SpecError(f"{shown}: is a binary file (NUL byte at offset {nul}), not YAML text", shown)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise SpecError(
            f"{shown}: is not UTF-8 text (byte 0x{raw[error.start]:02x} at offset {error.start})", shown
        ) from None
    return text


def _position(mark: Any) -> str:
    return f"{mark.line + 1}:{mark.column + 1}"


def _compose(text: str, shown: str) -> tuple[Any, Marks]:
    """YAML text -> (JSON value, marks); every YAML problem becomes a one-line SpecError."""
    loader = None
    marks: Marks = {}
    try:
        loader = _Loader(text)
        node = loader.get_single_node()
        if node is None:
            raise SpecError(
                f"{shown}: is empty; a search space needs at least name, family, metric, num_trials and space", shown
            )
        value = _to_python(loader, node, (), marks)
    except _Located as problem:
        raise problem.error(shown) from None
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        parts = [str(part) for part in (error.context, error.problem) if part]
        problem = " ".join("; ".join(parts or ["malformed YAML"]).split())
        where = f"{shown}:{_position(mark)}" if mark is not None else shown
        raise SpecError(
            f"{where}: invalid YAML: {problem}",
            shown,
            mark.line + 1 if mark is not None else None,
            mark.column + 1 if mark is not None else None,
        ) from None
    except yaml.reader.ReaderError as error:  # a control character or other unprintable character
        line = text.count("\n", 0, error.position) + 1
        column = error.position - text.rfind("\n", 0, error.position)
        raise SpecError(
            f"{shown}:{line}:{column}: invalid YAML: unacceptable character #x{error.character:04x} ({error.reason})",
            shown,
            line,
            column,
        ) from None
    except yaml.YAMLError as error:
        raise SpecError(f"{shown}: invalid YAML: {' '.join(str(error).split())}", shown) from None
    except RecursionError:
        raise SpecError(f"{shown}: invalid YAML: nested too deeply", shown) from None
    finally:
        if loader is not None:
            loader.dispose()
    return value, marks


# --- loading -------------------------------------------------------------------------------


def _mark_of(path: tuple, marks: Marks, key: bool = False) -> Any:
    """The mark of the value at ``path`` (or of its key), else of the closest enclosing key."""
    for end in range(len(path), 0, -1):
        if path[:end] in marks:
            key_mark, value_mark = marks[path[:end]]
            return key_mark if key or end < len(path) else value_mark
    return None


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


def _check_section_keys(data: Mapping[str, Any], marks: Marks) -> list[_Located]:
    problems = []
    for section, allowed in _SECTIONS.items():
        mapping = data if not section else data.get(section)
        if not isinstance(mapping, Mapping):
            continue
        for key in mapping:
            if key not in allowed:
                path = (section, key) if section else (key,)
                problems.append(
                    _Located(
                        path,
                        f"unknown key{did_you_mean(key, allowed)} (the keys here are {', '.join(allowed)})",
                        mark=_mark_of(path, marks, key=True),
                    )
                )
    return problems


def _pydantic_problems(error: ValidationError, overrides: Mapping[str, Any], marks: Marks) -> list[_Located]:
    """pydantic's errors as located problems; the space's arrives whole, as the :class:`_Located` it raised."""
    problems = []
    for item in error.errors(include_url=False):
        cause = item.get("ctx", {}).get("error")
        if isinstance(cause, _Located):  # the space: its raw key path, deeper than pydantic's ("space",)
            problems.append(cause.located(marks))
            continue
        loc = tuple(item["loc"])
        if item["type"] == "extra_forbidden":  # reported with "did you mean" by _check_section_keys
            continue
        note = f" (set by {OVERRIDABLE[loc[0]]})" if loc and loc[0] in overrides else ""
        mark = None if note else _mark_of(loc, marks, key=item["type"] == "missing")
        problems.append(_Located(loc, _pydantic_message(item), mark=mark, note=note))
    return problems


def load_search_spec(path: str | Path, overrides: Mapping[str, Any] | None = None) -> SearchSpec:
    """Read, check and validate a search-space YAML file.

    Parameters
    ----------
    path : str or Path
        The YAML file (UTF-8, at most 1 MiB).
    overrides : mapping, optional
        Values for ``name``, ``num_trials``, ``seed`` and ``max_concurrent`` (the command-line
        flags) that replace the file's before validation; a None value is ignored.

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
        An override key other than the four above (a programming error).
    """
    shown = str(path)
    overrides = {k: v for k, v in (overrides or {}).items() if v is not None}
    unknown = sorted(set(overrides) - set(OVERRIDABLE))
    if unknown:
        raise ValueError(f"only {', '.join(OVERRIDABLE)} can be overridden (got {', '.join(unknown)})")
    text = _read_text(Path(path), shown)
    data, marks = _compose(text, shown)
    if not isinstance(data, dict):
        kind = "a list" if isinstance(data, list) else f"a single value ({show_value(data, as_yaml=True)})"
        raise SpecError(
            f"{shown}: the top level must be a mapping of keys (name, family, metric, num_trials, space), not {kind}",
            shown,
        )
    data.update(overrides)
    problems = _check_section_keys(data, marks)  # source_path and source_text are never taken from the file

    candidate = {k: v for k, v in data.items() if k in USER_KEYS}
    try:
        spec = SearchSpec.model_validate({**candidate, "source_path": shown, "source_text": text}, context=_LOCATED)
    except ValidationError as error:
        problems.extend(_pydantic_problems(error, overrides, marks))
        spec = None
    missing = [p for p in problems if p.mark is None and not p.note and p.message == "missing required key"]
    if len(missing) > 1 and len(missing) == len(problems):
        others = ", ".join(_dotted(p.path) for p in missing[1:])
        missing[0].message += f" (also missing: {others})"
    if problems:
        raise min(problems, key=_Located.order).error(shown)
    assert spec is not None
    return spec


def resolved_yaml(spec: SearchSpec) -> str:
    """The spec after defaults and overrides, as YAML that :func:`load_search_spec` reads back to an equal spec.

    Every key is written, defaults included; the space is flat (dotted names), one flow-style
    mapping per parameter. Floats are written exactly (shortest repr).
    """
    data = spec.model_dump(mode="json")
    data["space"] = {name: _Flow(d) for name, d in data["space"].items()}
    source = " ".join(str(spec.source_path).split())
    header = f"# {source}, resolved by showwork (defaults filled in, overrides applied)\n" if spec.source_path else ""
    body = yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=False, width=4096)
    return header + body

"""The search space: parameters, their distributions and conditions (:class:`SearchSpace`)."""


from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

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
from showwork.sampling import shared_stream
from showwork.space.errors import Located, dotted

_SEGMENT = re.compile(r"[A-Za-z0-9_-]+")


# --- the search space ----------------------------------------------------------------------



def _split_name(key: Any, path: tuple) -> list[str]:
    if not isinstance(key, str):
        raise Located(path, f"parameter names must be text (got {show_value(key, as_yaml=True)})")
    segments = key.split(".")
    if not all(_SEGMENT.fullmatch(s) for s in segments):
        raise Located(
            path, f"parameter names are dot-separated words of letters, digits, '_' and '-' (got {key!r})"
        )
    return segments


Entry = tuple  # (dotted name, raw key path, Distribution, Condition or None)


def _parse_distribution(value: Mapping, path: tuple) -> tuple[Distribution, Condition | None]:
    """A parameter's mapping -> its distribution and its ``when`` condition (None when it has none)."""
    arguments = {k: v for k, v in value.items() if k != "when"}
    for key in arguments:  # `wehn:` would otherwise be "not an argument of a uniform distribution"
        if isinstance(key, str) and key not in DISTRIBUTION_ARGUMENTS and difflib.get_close_matches(key.lower(), ["when"], cutoff=0.7):
            raise Located(path + (key,), "unknown key; did you mean 'when'? (a condition: when: {parameter: value})")
    try:
        distribution = distribution_from_dict(arguments)
    except DistributionError as error:
        where = path + (error.field,) if error.field is not None and error.field in value else path
        raise Located(where, error.reason) from None
    if "when" not in value:
        return distribution, None
    try:
        return distribution, Condition.from_dict(value["when"])
    except DistributionError as error:
        inside = path + ("when",)
        where = inside + (error.field,) if isinstance(value["when"], Mapping) and error.field in value["when"] else inside
        raise Located(where, error.reason) from None


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
    group = dotted(path)
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
    raise Located(path + (key,), message)


def _parse_space(mapping: Any, path: tuple = (), names: tuple[str, ...] = ()) -> list[Entry]:
    """Walk a nested/dotted ``space`` mapping into ``(dotted name, raw key path, distribution, condition)``, in order."""
    if not isinstance(mapping, Mapping):
        raise Located(path, f"must be a mapping of parameter names to distributions (got {show_value(mapping, as_yaml=True)})")
    if not mapping:
        raise Located(path, "is empty: give at least one parameter" if not path else "is an empty group of parameters")
    if not path and "distribution" in mapping:
        raise Located(
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
            raise Located(
                where,
                f"a list is not a distribution (got {show_value(value, as_yaml=True)}); to choose among values write"
                " {distribution: categorical, choices: [...]}",
            )
        elif value is None:
            raise Located(
                where, "has no value; give a distribution, a constant, or {distribution: constant, value: null}"
            )
        else:
            try:
                out.append((".".join(name), where, Constant(value), None))
            except DistributionError as error:
                raise Located(where, error.reason) from None
    return out


def _check_names(entries: list[Entry]) -> None:
    """Refuse a name given twice, a name that is also a group (``a`` and ``a.b``), and stream-id collisions."""
    seen: dict[str, tuple] = {}
    for name, path, _, _ in entries:
        if name in seen:
            raise Located(path, f"parameter {name!r} is defined twice", other=seen[name])
        seen[name] = path
    for name, path, _, _ in entries:
        parts = name.split(".")
        for i in range(1, len(parts)):
            prefix = ".".join(parts[:i])
            if prefix in seen:
                raise Located(
                    path, f"{name!r} needs {prefix!r} to be a group, but {prefix!r} is a parameter", other=seen[prefix]
                )
    clash = shared_stream(name for name, *_ in entries)
    if clash is not None:  # both parameters would draw the same random numbers
        first, second = clash
        raise Located(
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
                raise Located(where, f"{name!r} cannot depend on itself")
            if ref not in order:
                raise Located(where, f"is not a parameter of this space{did_you_mean(ref, [n for n, *_ in entries[:i]])}")
            j, _, dist, ref_condition = order[ref]
            if j > i:
                cycle = ref_condition is not None and name in ref_condition.names
                raise Located(
                    where,
                    f"{ref!r} is defined after {name!r}; a condition may only refer to parameters above it"
                    + (f" (and {ref!r} depends on {name!r}: a cycle)" if cycle else ""),
                )
            if isinstance(dist, Categorical):
                possible, what = dist.choices, f"among the choices of {ref!r} ({dist.choices_text()})"
            elif isinstance(dist, Constant):
                possible, what = (dist.value,), f"the constant value of {ref!r} ({json.dumps(dist.value)})"
            else:
                raise Located(where, f"conditions test categorical or constant parameters; {ref!r} is {dist.kind}")
            for value in values:
                if not Condition(((ref, possible, True),)).holds({ref: value}):
                    hint = did_you_mean(value, [c for c in possible if isinstance(c, str)]) if isinstance(value, str) else ""
                    raise Located(where, f"{json.dumps(value)} is not {what}, so it never holds{hint}")


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
                    raise Located((name,), f"must be a Distribution, not {type(dist).__name__}")
            except Located as problem:
                raise InputError(f"space.{name}: {problem.message}") from None
            entries.append((".".join(segments), (name,), dist, conditions.get(name)))
        if not entries:
            raise InputError("space: is empty: give at least one parameter")
        unknown = sorted(set(conditions) - {name for name, *_ in entries})
        if unknown:
            raise InputError(f"space.{unknown[0]}: has a condition but is not a parameter")
        try:
            _check_names(entries)
        except Located as problem:
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
            return cls.parsed(d)
        except Located as problem:
            raise problem.input_error() from None

    @classmethod
    def parsed(cls, d: Any) -> SearchSpace:
        """:meth:`from_dict`, raising the :class:`Located` problem (raw key path under ``space``) for the file's marks."""
        try:
            entries = _parse_space(d)
            _check_names(entries)
        except Located as problem:
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



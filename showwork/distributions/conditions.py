"""Conditions: when a conditional parameter is drawn (a parameter's ``when`` key)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from showwork.distributions.base import DistributionError, Scalar, json_scalar
from showwork.errors import did_you_mean, show_value
from showwork.values import scalar_text

__all__ = ["Condition"]


def _same_value(a: Scalar, b: Scalar) -> bool:
    """Equality as categorical choices count it: ``1`` equals ``1.0``; ``true`` equals neither ``1`` nor ``"true"``."""
    if isinstance(a, str) or isinstance(b, str):
        return isinstance(a, str) and isinstance(b, str) and a == b
    return (type(a) is bool) == (type(b) is bool) and a == b


@dataclass(frozen=True)
class Condition:
    """When a conditional parameter is drawn: every test holds (``and``).

    The YAML form is a parameter's ``when`` key: ``when: {optimizer: sgd}`` (equality) or
    ``when: {optimizer: {in: [sgd, adam]}}`` (membership), several names meaning all of them.
    Names are dotted parameter names; :class:`~showwork.space.SearchSpace` checks that
    each is an earlier categorical or constant parameter and that each value can occur.

    Attributes
    ----------
    tests : tuple of (name, values)
        The parameter and the values it must take one of, in the order written; ``in`` is
        remembered so that ``to_dict`` gives back the form written.
    """

    tests: tuple[tuple[str, tuple[Scalar, ...], bool], ...]  # (name, values, written with `in`)

    def holds(self, config: Mapping[str, Any]) -> bool:
        """True when every named parameter is in ``config`` with one of its values (an absent one fails)."""
        return all(name in config and any(_same_value(config[name], v) for v in values) for name, values, _ in self.tests)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(name for name, _, _ in self.tests)

    def to_dict(self) -> dict[str, Any]:
        return {name: {"in": list(values)} if listed else values[0] for name, values, listed in self.tests}

    def describe(self) -> str:
        """``optimizer = 'sgd' and layers in {1, 2}``."""
        return " and ".join(
            f"{name} in {{{', '.join(scalar_text(v) for v in values)}}}" if listed else f"{name} = {scalar_text(values[0])}"
            for name, values, listed in self.tests
        )

    @classmethod
    def from_dict(cls, d: Any) -> Condition:
        """Parse a ``when`` mapping; :class:`DistributionError` (field ``when``, or the name at fault) otherwise."""
        if not isinstance(d, Mapping) or not d:
            raise DistributionError(
                "when", f"must map earlier parameters to a value or {{in: [values]}}, e.g. {{optimizer: sgd}} (got {show_value(d)})"
            )
        tests = []
        for name, wanted in d.items():
            if not isinstance(name, str) or not name:
                raise DistributionError("when", f"names parameters with text (got {show_value(name)})")
            if isinstance(wanted, Mapping):
                if set(wanted) != {"in"}:
                    keys = ", ".join(str(k) for k in wanted)
                    hint = (
                        "; `in` is the only key there" if "in" in wanted
                        else did_you_mean(keys, ("in",)) or f"; name a nested parameter by its dotted name ({name}.{keys.split(', ')[0]}: ...)"
                    )
                    raise DistributionError(name, f"must be a value or {{in: [values]}} (got a mapping with {keys}){hint}")
                values = wanted["in"]
                if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple)) or not values:
                    raise DistributionError(name, f"`in` must be a non-empty list of values (got {show_value(values)})")
                tests.append((name, tuple(json_scalar(name, v) for v in values), True))
            elif isinstance(wanted, (list, tuple)):
                raise DistributionError(name, f"is a list; for one of several values write {{in: {show_value(list(wanted))}}}")
            else:
                tests.append((name, (json_scalar(name, wanted),), False))
        return cls(tuple(tests))

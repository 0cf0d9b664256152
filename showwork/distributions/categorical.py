"""A choice among a finite list of values, uniformly or with given probabilities."""

from __future__ import annotations

import bisect
import itertools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from showwork.distributions.base import Distribution, DistributionError, Scalar, finite_number, json_scalar
from showwork.errors import show_value
from showwork.values import scalar_text

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["Categorical"]

WEIGHT_TOLERANCE = 1e-9  # categorical weights must sum to 1 within this


@dataclass(frozen=True)
class Categorical(Distribution):
    """A choice among a finite list of values, uniformly or with given probabilities.

    Parameters
    ----------
    choices : sequence of JSON scalars
        Text, finite numbers, booleans or null; non-empty and unique (``1`` and ``1.0`` count as
        the same choice; ``1`` and ``true`` do not). Stored as a tuple.
    weights : sequence of floats, optional
        The probability of each choice, in the same order: finite, non-negative, summing to 1
        within 1e-9 (``math.fsum``). Weights are probabilities and are NOT normalised, so a
        typo such as ``[0.5, 0.4, 0.2]`` is an error rather than a silently different search.
        None (the default) means every choice is equally likely.

    Notes
    -----
    Sampling draws ``u`` uniform on [0, 1) and returns the first choice whose cumulative weight
    (divided by the exact total) exceeds ``u``; a choice of weight 0 is never returned.
    """

    kind: ClassVar[str] = "categorical"
    choices: tuple[Scalar, ...]
    weights: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        choices = self.choices
        if isinstance(choices, (str, bytes)) or not isinstance(choices, (list, tuple)):
            raise DistributionError("choices", f"must be a list of values (choices={show_value(choices)})")
        if not choices:
            raise DistributionError("choices", "must not be empty (choices=[])")
        seen: dict[Any, int] = {}
        plain = []
        for i, choice in enumerate(choices):
            choice = json_scalar("choices", choice)
            plain.append(choice)
            key = (type(choice) is bool, choice)  # 1 and 1.0 are equal; True and 1 are not
            if key in seen:
                raise DistributionError(
                    "choices", f"must be unique ({scalar_text(choice)} appears at positions {seen[key]} and {i})"
                )
            seen[key] = i
        object.__setattr__(self, "choices", tuple(plain))
        if self.weights is None:
            return
        weights = self.weights
        if isinstance(weights, (str, bytes)) or not isinstance(weights, (list, tuple)):
            raise DistributionError("weights", f"must be a list of probabilities (weights={show_value(weights)})")
        if len(weights) != len(choices):
            raise DistributionError(
                "weights", f"must have one entry per choice ({len(weights)} weights for {len(choices)} choices)"
            )
        values = tuple(finite_number("weights", w) for w in weights)
        negative = [w for w in values if w < 0]
        if negative:
            raise DistributionError("weights", f"must be non-negative (weights={list(values)!r})")
        total = math.fsum(values)
        if abs(total - 1.0) > WEIGHT_TOLERANCE:
            raise DistributionError(
                "weights", f"must sum to 1 (weights={list(values)!r} sum to {total!r}); they are probabilities"
            )
        object.__setattr__(self, "weights", values)

    def probabilities(self) -> tuple[float, ...]:
        """The probability of each choice, in order (the weights, or ``1 / len(choices)`` each)."""
        if self.weights is None:
            return (1.0 / len(self.choices),) * len(self.choices)
        return self.weights

    def sample(self, rng: np.random.Generator) -> Scalar:
        if self.weights is None:
            return self.choices[int(rng.integers(len(self.choices)))]
        cumulative = list(itertools.accumulate(self.weights))
        total = cumulative[-1]
        cdf = [c / total for c in cumulative]  # the last entry is exactly 1.0
        index = bisect.bisect_right(cdf, float(rng.random()))
        return self.choices[min(index, len(self.choices) - 1)]

    def kind_text(self) -> str:
        return "categorical (weighted)" if self.weights is not None else self.kind

    def bounds_text(self) -> str:
        return self.choices_text()

    def choices_text(self) -> str:
        """``"16, 32, 64"``, or with weights ``"16 (p=0.25), 32 (p=0.5), 64 (p=0.25)"``."""
        if self.weights is None:
            return ", ".join(scalar_text(c) for c in self.choices)
        return ", ".join(f"{scalar_text(c)} (p={w!r})" for c, w in zip(self.choices, self.weights))

    def describe(self) -> str:
        how = "weighted choice" if self.weights is not None else "uniform choice"
        return f"{how} among {self.bounds_text()}"

    def bounds(self) -> dict[str, Any]:
        return {"choices": list(self.choices)}

"""A fixed value: every trial gets the same one."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from showwork.distributions.base import Distribution, Scalar, json_scalar

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = ["Constant"]


@dataclass(frozen=True)
class Constant(Distribution):
    """A fixed value: every trial gets ``value``.

    Parameters
    ----------
    value : JSON scalar
        Text, a finite number, a boolean or null.
    """

    kind: ClassVar[str] = "constant"
    value: Scalar

    def __post_init__(self) -> None:
        object.__setattr__(self, "value", json_scalar("value", self.value))

    def sample(self, rng: np.random.Generator) -> Scalar:
        return self.value

    def describe(self) -> str:
        return f"constant {self.bounds_text()}"

    def bounds_text(self) -> str:
        return json.dumps(self.value)

    def bounds(self) -> dict[str, Any]:
        return {"value": self.value}

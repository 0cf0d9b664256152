"""Distributions of a search space: what each hyperparameter is drawn from.

One small frozen dataclass per distribution. The constructor validates its arguments and the
message repeats the offending values; equality, hashing and a readable repr come from the
dataclass. Every distribution has

- ``sample(rng)``: one draw from a :class:`numpy.random.Generator`, as a plain Python value
  (``float``, ``int``, ``str``, ``bool`` or ``None``; never a numpy scalar);
- ``to_dict()`` and :func:`distribution_from_dict`: an exact JSON round trip, in the same form a
  search-space YAML file uses (``{"distribution": "uniform", "low": 0.0, "high": 1.0}``);
- ``describe()``: a one-line summary for reports, whose support is worded by ``bounds_text()``,
  the words of the space table (:meth:`showwork.space.SearchSpace.describe`, with ``kind_text()``);
- ``bounds()``: the support for the reproducibility checklist (Dodge et al. 2019: "the bounds
  for each hyperparameter"), as a JSON-ready dict.

A subclass with a ``kind`` registers itself under it in :data:`DISTRIBUTIONS`
(``Distribution.__init_subclass__``), and its dict form is its dataclass fields
(``arguments()``: those without a default required, the others optional and left out of
``to_dict()`` while they hold their default), as Optuna's ``distributions.py`` derives
serialisation from the class: a new distribution is one class, not a class and a table.

Continuous distributions are sampled by inverse CDF from a single ``rng.random()`` draw, so a
draw depends only on numpy's stable 53-bit uniform doubles. Numbers must be finite real numbers
(booleans are refused); bounds of integer distributions must lie within ±2**53, so that every
integer in range is exactly representable as a float and in JSON.

One module per job: :mod:`~showwork.distributions.base` (the interface, the registry, the checks
of arguments), :mod:`~showwork.distributions.grid` (stepped values), :mod:`~showwork.distributions.ranges`
(uniform, log-uniform, truncated exponential), :mod:`~showwork.distributions.categorical`,
:mod:`~showwork.distributions.normal` (the normal family and its inverse CDF),
:mod:`~showwork.distributions.constant` and :mod:`~showwork.distributions.conditions` (``when``); the
dict form of every distribution (:func:`distribution_from_dict`) is here, where all of them are registered.

These modules import only the standard library; scipy is imported lazily, and only to sample a
normal distribution truncated more than ~37 standard deviations into one tail.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# The classes register in DISTRIBUTIONS as they are defined, so the order of these imports is the order
# of DISTRIBUTIONS, of DISTRIBUTION_ARGUMENTS and of every message that lists the distributions.
from showwork.distributions.base import DISTRIBUTIONS, Distribution, DistributionError
from showwork.distributions.ranges import (
    IntTruncatedExponential,
    IntUniform,
    LogIntUniform,
    LogUniform,
    TruncatedExponential,
    Uniform,
)

# isort: split
from showwork.distributions.categorical import Categorical

# isort: split
from showwork.distributions.normal import IntNormal, Normal

# isort: split
from showwork.distributions.conditions import Condition
from showwork.distributions.constant import Constant
from showwork.errors import did_you_mean, show_value

__all__ = [
    "DISTRIBUTIONS",
    "Categorical",
    "Constant",
    "Distribution",
    "DistributionError",
    "Condition",
    "DISTRIBUTION_ARGUMENTS",
    "IntNormal",
    "IntTruncatedExponential",
    "IntUniform",
    "LogIntUniform",
    "LogUniform",
    "Normal",
    "TruncatedExponential",
    "Uniform",
    "distribution_from_dict",
]

# Every argument any distribution takes, and ``when`` (see :class:`Condition`): the keys that mark a
# mapping in a search space as a distribution (``low``...), even when its ``distribution`` key is misspelt.
DISTRIBUTION_ARGUMENTS: tuple[str, ...] = tuple(
    dict.fromkeys(key for cls in DISTRIBUTIONS.values() for group in cls.arguments() for key in group)
) + ("when",)


def distribution_from_dict(d: Mapping[str, Any]) -> Distribution:
    """Build a distribution from its dict form (the YAML/JSON form): the inverse of ``to_dict``.

    Parameters
    ----------
    d : mapping
        ``{"distribution": NAME, **arguments}``; NAME is one of ``uniform``, ``loguniform``,
        ``int_uniform``, ``log_int_uniform``, ``truncated_exponential``,
        ``int_truncated_exponential``, ``categorical``, ``normal``, ``int_normal``, ``constant``. ``choices`` and ``weights`` may be lists or tuples.

    Returns
    -------
    Distribution
        ``distribution_from_dict(json.loads(json.dumps(x.to_dict()))) == x`` for every ``x``.

    Raises
    ------
    DistributionError
        Unknown distribution name or key (with a "did you mean" suggestion), a missing key, or an
        invalid argument; ``field`` names the key at fault when there is one.

    Examples
    --------
    >>> distribution_from_dict({"distribution": "int_uniform", "low": 16, "high": 64})
    IntUniform(low=16, high=64)
    """
    if not isinstance(d, Mapping):
        raise DistributionError(None, f"a distribution must be a mapping with a `distribution` key, not {show_value(d)}")
    if "distribution" not in d:
        raise DistributionError(None, f"missing the `distribution` key (one of {', '.join(DISTRIBUTIONS)})")
    name = d["distribution"]
    if not isinstance(name, str) or name not in DISTRIBUTIONS:
        hint = did_you_mean(name, tuple(DISTRIBUTIONS)) if isinstance(name, str) else ""
        raise DistributionError(
            "distribution", f"is unknown ({show_value(name)}); choose one of {', '.join(DISTRIBUTIONS)}{hint}"
        )
    required, optional = DISTRIBUTIONS[name].arguments()
    for key in d:
        if key != "distribution" and key not in required + optional:
            allowed = required + optional
            raise DistributionError(
                key if isinstance(key, str) else None,
                f"is not an argument of a {name} distribution (its keys are {', '.join(allowed)})"
                + did_you_mean(str(key), allowed),
            )
    missing = [key for key in required if key not in d]
    if missing:
        raise DistributionError(
            None, f"a {name} distribution needs {', '.join(f'`{k}`' for k in missing)} (it takes {', '.join(required + optional)})"
        )
    arguments = {key: v for key, v in d.items() if key != "distribution"}
    return DISTRIBUTIONS[name](**arguments)

"""What a family accepts: its hyperparameter table (``PARAMS``), checked by :func:`check_config`, and its data.

Every family module declares its hyperparameters once, as a table from key to :class:`Param`::

    PARAMS: dict[str, Param] = {
        "lr": Param(0.001, float, low=0.0, low_open=True),                # float > 0
        "dropout": Param(0.5, float, low=0.0, high=1.0, high_open=True),  # float in [0, 1)
        "max_length": Param(None, int, low=1, optional=True),             # int >= 1 or None
        "mode": Param("static", str, choices=("static", "nonstatic", "rand")),
    }

and its ``validate_config(config)`` is ``check_config(config, PARAMS, family)`` plus, where a
family has rules that tie two keys together, a few lines after it. The table is the single source
of the defaults: a key missing from ``config`` takes its ``Param``'s default, which is checked like
a given value. :func:`check_config` is pure and needs neither torch nor the data, so a search space
can be checked before any trial runs.

Errors
------
Every problem is a ``ValueError`` whose message names the key, so a typo in a YAML search space
cannot be silently ignored:

- unknown keys: all of them, then the known ones
  (``mlp config: unknown key 'hidden_dimm'; known keys: batch_size, lr, ...``);
- a value of the wrong type or out of range: the key, the rule and the value
  (``lstm config key 'dropout' must be in [0.0, 1.0) (got 2.0)``).

Types are strict: ``True`` is not an integer, ``"0.5"`` is not a number, ``2.5`` is not an
integer, NaN and infinities are not numbers; an integer is accepted (and converted) where a float
is wanted. numpy scalars count as the Python type they stand for.

:func:`effective_seed` mixes a ``seed`` hyperparameter (Tang et al. 2020 and Dodge et al. 2019
search over one) into showwork's trial seed.

:func:`load_task` loads the dataset named by a trainable's ``data`` and refuses the kinds of task
(sentence pairs, multi-label documents) a family does not handle.

This module imports neither torch nor scikit-learn: the torch-free families (``logreg``) use it too.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from showwork.trainable import is_integer

from .data import TextDataset, load_dataset

__all__ = ["Param", "check_config", "effective_seed", "load_task"]


@dataclass(frozen=True)
class Param:
    """One hyperparameter: its default, its type and the values it may take.

    ``low`` / ``high`` are bounds (included unless ``low_open`` / ``high_open``); ``choices`` lists
    the allowed values; ``optional`` allows None.

    ``parse``, for values that are not a single number, string or bool (a list of filter widths,
    an n-gram range written ``'1-2'``): a callable that converts the value and raises a
    ``ValueError`` whose message completes the sentence "<family> config key '<name>' ...", e.g.
    ``"must look like '1-2' (got '3-1')"``. It replaces the ``kind`` conversion, ``choices`` and
    the bounds; ``kind`` then only documents the type ``parse`` returns.
    """

    default: Any
    kind: type
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple | None = None
    optional: bool = False
    parse: Callable[[Any], Any] | None = None

    def check(self, family: str, name: str, value: Any) -> Any:
        """``value`` converted to ``kind``; a ValueError naming ``name`` if it is not allowed."""
        where = f"{family} config key {name!r}"
        if value is None:
            if self.optional:
                return None
            raise ValueError(f"{where} must not be empty (got None).")
        if self.parse is not None:
            try:
                return self.parse(value)
            except ValueError as error:
                raise ValueError(f"{where} {error}") from None
        if self.kind is bool:
            if not isinstance(value, (bool, np.bool_)):
                raise ValueError(f"{where} must be true or false (got {value!r}).")
            return bool(value)
        if self.kind is str:
            if not isinstance(value, str):
                raise ValueError(f"{where} must be text (got {value!r}).")
        elif self.kind is int:
            if not is_integer(value):
                raise ValueError(f"{where} must be an integer (got {value!r}).")
            value = int(value)
        else:
            if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
                raise ValueError(f"{where} must be a finite number (got {value!r}).")
            value = float(value)
        if self.choices is not None and value not in self.choices:
            raise ValueError(f"{where} must be one of {', '.join(map(str, self.choices))} (got {value!r}).")
        too_low = self.low is not None and (value <= self.low if self.low_open else value < self.low)
        too_high = self.high is not None and (value >= self.high if self.high_open else value > self.high)
        if too_low or too_high:
            left = "(" if self.low_open else "["
            right = ")" if self.high_open else "]"
            low = "-inf" if self.low is None else self.low
            high = "inf" if self.high is None else self.high
            raise ValueError(f"{where} must be in {left}{low}, {high}{right} (got {value!r}).")
        return value


def check_config(config: Mapping[str, Any], params: Mapping[str, Param], family: str) -> dict[str, Any]:
    """The full configuration: ``config``'s values checked, defaults filled in.

    Raises
    ------
    ValueError
        An unknown key (named, with the known ones) or a value out of its range (named).
    """
    if not isinstance(config, Mapping):
        raise ValueError(f"{family} config must be a mapping (got {type(config).__name__}).")
    unknown = sorted(set(config) - set(params))
    if unknown:
        raise ValueError(
            f"{family} config: unknown key{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))};"
            f" known keys: {', '.join(params)}."
        )
    return {name: param.check(family, name, config.get(name, param.default)) for name, param in params.items()}


def effective_seed(seed: int, config_seed: int | None) -> int:
    """The training seed: the trial's ``seed``, with the config's ``seed`` hyperparameter mixed in.

    None leaves ``seed`` unchanged; otherwise the result is a pure function of both, in
    [0, 2**31 - 1), from :class:`numpy.random.SeedSequence`.
    """
    if config_seed is None:
        return int(seed)
    state = np.random.SeedSequence([int(seed), int(config_seed)]).generate_state(1, dtype=np.uint64)[0]
    return int(state % np.uint64(2**31 - 1))


def load_task(
    data: Mapping[str, Any] | None,
    family: str,
    *,
    default_dataset: str | None = None,
    multilabel_ok: bool = False,
    pairs_ok: bool = False,
) -> TextDataset:
    """The dataset named by a trainable's ``data`` (:func:`showwork_models.data.load_dataset`), if the family takes its kind.

    Parameters
    ----------
    data : mapping or None
        The trainable's ``data``; ``data['dataset']`` names the dataset.
    family : str
        Named in the error message.
    default_dataset : str, optional
        The dataset when ``data`` names none.
    multilabel_ok, pairs_ok : bool, default False
        Whether the family takes multi-label documents / (premise, hypothesis) pairs.

    Raises
    ------
    ValueError
        The dataset is of a kind the family does not take (the message names ``data.dataset``), or
        it is unknown.
    """
    data = dict(data or {})
    if default_dataset is not None:
        data.setdefault("dataset", default_dataset)
    dataset = load_dataset(data.get("dataset"), data)
    if dataset.pairs and not pairs_ok:
        kind = "sentence pairs"
    elif dataset.multilabel and not multilabel_ok:
        kind = "multi-label documents"
    else:
        return dataset
    takes = ("texts" if pairs_ok else "single texts") + ("" if multilabel_ok else " into one class")
    raise ValueError(f"data.dataset: the {family} family classifies {takes}; {dataset.name} has {kind}.")

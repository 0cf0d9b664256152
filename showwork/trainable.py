"""The public trainable API: how a model family plugs into ``showwork search``.

A trainable is a plain function::

    def train(config: dict, *, seed: int, device: str, reporter: Reporter, data: dict) -> dict:
        model = build(config, seed=seed).to(device)
        for epoch in range(config["epochs"]):
            ...
            reporter(epoch=epoch, val_accuracy=dev_acc)      # once per epoch
        return {"val_accuracy": best_dev_acc, "test_accuracy": test_acc}

- ``config``: the sampled hyperparameters, nested by their dotted names (``optimizer.lr`` is
  ``config["optimizer"]["lr"]``); constants from the space are included.
- ``seed``: the trial's own training seed (a pure function of the search seed and the trial index).
- ``device``: ``"cuda"`` when Ray gave the trial a GPU (it sees only its own devices), else ``"cpu"``.
- ``reporter``: call it once per epoch with the epoch number and validation metrics; the values
  go live to Ray Tune and MLflow and are kept in the trial's record. The epoch is an integer from
  0 to 2**63 - 1 (MLflow's step is a signed 64-bit integer); each value a number a float holds
  (|x| <= 1.8e308; ±inf and NaN are kept, MLflow stores ±inf as ±1.8e308). Anything else raises
  in the trainable and fails the trial, before it reaches the ledger or MLflow.
- ``data``: the ``data`` section of the search-space file (paths, dataset names).

The return value is a dict of numbers (or None): the validation metric named by ``metric.name``
in the space (if it is missing, the best reported value is the score; if neither, the trial
fails) and, when the space names one (``metric.test``), the test metric. Any other number is kept
in the trial's ledger record and logged as a metric of its MLflow child run. A value that is not a
number (a string, a bool), a non-finite score, or an exception fails the trial; its type and
message are recorded and the search goes on. showwork measures wall time (and GPU-seconds on a
GPU) itself.

Two keys mean something to the report:

- ``parameters``: the model's number of trainable parameters; the checklist states the selected
  (best) trial's ("parameters of the selected model", ACL's model-size item).
- ``split_sizes``: the number of examples of each split the trial actually used, a mapping
  ``{"train": int, "dev": int, "test": int}`` (after any subsampling; ``test`` 0 or absent when
  there is no test split). ``showwork report`` states them in its reproducibility checklist.
  The built-in families return it (:meth:`showwork_models.data.TextDataset.sizes`). It is kept as a
  mapping in the trial's ledger record (``TrialRecord.metrics["split_sizes"]``) and logged to
  MLflow as ``split_sizes.train``, ``split_sizes.dev``, ``split_sizes.test``.

Beside ``train``, the family's module may define a pre-flight check ``check_data(data) -> None``
that raises (with a message saying what is wrong) when ``data`` would fail every trial, e.g. a data
folder that does not exist. ``showwork validate`` and ``showwork search`` call it before they
create anything when the trials run on this machine (not with ``--address`` or ``$RAY_ADDRESS``),
and refuse the search with that message; ``validate --no-family`` skips it. The built-in families
use :func:`showwork_models.data.check_data`. The tests of each claim: ``tests/integration/test_trainable_contract.py``.

Helpers for a family's own code, re-exported here so that a family imports showwork's public API
only (the built-in families, the ``showwork_models`` package, import nothing else of showwork:
``tests/unit/test_models_public_api.py``); each is defined once, in the module named:

- :func:`is_integer` (:mod:`showwork.values`): an ``int`` or numpy integer, not a ``bool``, for
  checking integer hyperparameters;
- :func:`cache_directory` (:mod:`showwork.cache`): where recomputable files go (``$SHOWWORK_CACHE_DIR``,
  else ``~/.cache/showwork``), e.g. a tokenised dataset;
- :func:`atomic_writer` (:mod:`showwork.files`): a stream that replaces a file atomically and durably
  when the block ends, so that a cache file is whole or absent.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from typing import Any

from showwork import faults
from showwork.cache import cache_directory
from showwork.constants import INT64_MAX
from showwork.errors import InputError
from showwork.files import atomic_writer
from showwork.values import is_integer

__all__ = [
    "MAX_EPOCH", "Reporter", "TrainFunction", "atomic_writer", "cache_directory", "check_outcome", "is_integer", "score_from",
]

TrainFunction = Callable[..., Mapping[str, Any]]

MAX_EPOCH = INT64_MAX
"""The largest epoch ``reporter`` takes: MLflow stores the epoch as a metric's step, a signed 64-bit integer."""


class Reporter:
    """Receives per-epoch metrics from a trainable; passed to it as ``reporter``.

    Call it as ``reporter(epoch=3, val_accuracy=0.91, train_loss=0.2)``. ``epoch`` is an integer
    from 0 to :data:`MAX_EPOCH` (2**63 - 1: MLflow stores it as the step, a signed 64-bit
    integer); it defaults to the number of reports so far. Values must be numbers that a float
    holds: bools and strings are refused with a TypeError naming the metric, an integer beyond
    ±1.8e308 with a ValueError (±inf and NaN are kept). ``sink`` forwards each report (the epoch
    included) to Ray Tune; ``history`` keeps them all.
    """

    def __init__(self, sink: Callable[[dict[str, float]], None] | None = None):
        self._sink = sink
        self.history: list[dict[str, float]] = []

    def __call__(self, epoch: int | None = None, **metrics: float) -> None:
        if epoch is None:
            epoch = len(self.history)
        if not is_integer(epoch) or epoch < 0:
            raise TypeError(f"reporter: epoch must be a non-negative int (got {epoch!r}).")
        if epoch > MAX_EPOCH:  # MLflow refused the step after the trial was recorded (issue 23 item 2)
            raise ValueError(f"reporter: epoch {epoch} is beyond {MAX_EPOCH} (2**63 - 1, MLflow's largest step).")
        row: dict[str, float] = {"epoch": int(epoch)}
        for name, value in metrics.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
                raise TypeError(f"reporter: metric {name!r} must be a number (got {type(value).__name__}).")
            try:
                row[name] = float(value)
            except OverflowError:
                raise ValueError(f"reporter: metric {name!r} is beyond a float's range (±1.8e308).") from None
        self.history.append(row)
        if self._sink is not None:
            self._sink(dict(row))
        faults.point("trial-reported")


def score_from(final: Mapping[str, Any], history: list[dict[str, float]], metric: str, mode: str) -> float | None:
    """The trial's validation score: the returned ``metric``, else its best reported value.

    Returns None when the metric was neither returned nor reported.
    """
    if metric in final and final[metric] is not None:
        return float(final[metric])
    values = [row[metric] for row in history if metric in row]
    if not values:
        return None
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return values[-1]
    return max(finite) if mode == "max" else min(finite)


def check_outcome(value: Any) -> dict[str, Any]:
    """Validate what a trainable returned: metric names to numbers, or to mappings of numbers.

    Top-level numbers become floats. A nested mapping (``split_sizes``) is kept as a mapping,
    nested ones included; inside it integers stay ints (counts) and other numbers become floats.

    Raises
    ------
    InputError
        ``value`` is not a mapping, or holds something that is neither a number nor a mapping
        (the message names it, dotted: ``split_sizes.train``).
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InputError(f"the trainable must return a dict of metrics, not {type(value).__name__}.")
    return {str(name): _checked_metric(str(name), metric, nested=False) for name, metric in value.items()}


def _checked_metric(name: str, metric: Any, nested: bool) -> Any:
    if isinstance(metric, Mapping):
        return {str(key): _checked_metric(f"{name}.{key}", item, nested=True) for key, item in metric.items()}
    if isinstance(metric, bool) or not (isinstance(metric, (int, float)) or hasattr(metric, "__float__")):
        raise InputError(f"the trainable returned metric {name!r} = {metric!r}, which is not a number.")
    if nested and isinstance(metric, numbers.Integral):
        return int(metric)
    return float(metric)

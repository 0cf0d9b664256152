"""What every torch family shares: seeding, the device, mixed precision, minibatches, loss and metric, the epoch loop.

:func:`fit` is the loop of all neural families: train one epoch, evaluate on dev, report the epoch
to showwork, keep the best dev state, stop after ``patience`` epochs without improvement, then
score the best state on test. A family supplies the three things that differ: how to train one
epoch, how to evaluate a split, and (optionally) which weights to snapshot (e.g. averaged ones).

Minibatches are :func:`minibatches` (shuffled) or :func:`bucket_batches` (shuffled, of similar
lengths); :func:`loss_and_metric` and :func:`targets_of` give the loss, the metric and the label
tensors of a single-label (cross-entropy, accuracy) or multi-label (BCE, micro-F1) task.
:func:`run_training_epoch` is the inside of a family's ``train_epoch`` (one pass of optimizer
steps over given minibatches, returning the mean loss) and :func:`predict` the inside of its
``evaluate`` (the predictions of a split, batch by batch); a family supplies how a batch of indices
becomes a loss or logits.

Determinism: :func:`seed_everything` seeds Python, numpy and torch and asks torch for deterministic
kernels, so a trial's score is a function of its config and seed on a given machine (CPU results
are bit-identical run to run; on CUDA, cuDNN's deterministic algorithms are requested).
"""

from __future__ import annotations

import contextlib
import copy
import math
import os
import random
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from .metrics import accuracy, micro_f1  # re-exported: the torch families import them from here

__all__ = [
    "FitResult",
    "OptimizerStep",
    "accuracy",
    "autocast",
    "bucket_batches",
    "count_parameters",
    "fit",
    "loss_and_metric",
    "micro_f1",
    "minibatches",
    "predict",
    "predicted_classes",
    "predicted_labels",
    "reduce_on_plateau",
    "resolve_device",
    "run_training_epoch",
    "seed_everything",
    "targets_of",
]


def seed_everything(seed: int) -> None:
    """Seed Python, numpy and torch with ``seed`` and request deterministic torch kernels."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # deterministic cuBLAS (CUDA >= 10.2)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False


def resolve_device(device: str) -> torch.device:
    """``device`` as a torch device; ``cuda`` without a visible GPU is an error, not a silent CPU run."""
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(f"device {device!r} requested but torch sees no CUDA device.")
    return torch.device(device)


def count_parameters(model: torch.nn.Module, trainable_only: bool = False) -> int:
    """Number of parameters (all, or only those with ``requires_grad``)."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad or not trainable_only)


def _amp_dtype(device: torch.device) -> torch.dtype | None:
    if device.type != "cuda":
        return None
    return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16


def autocast(device: torch.device) -> contextlib.AbstractContextManager:
    """Mixed precision on CUDA (bfloat16 where supported, else float16); a no-op on CPU."""
    dtype = _amp_dtype(device)
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type="cuda", dtype=dtype)


class OptimizerStep:
    """Backward, optional gradient clipping, and the optimizer step, with loss scaling for float16.

    Call it with the loss of a minibatch; it zeroes the gradients afterwards.
    """

    def __init__(self, optimizer: torch.optim.Optimizer, device: torch.device, clip_norm: float | None = None):
        self.optimizer = optimizer
        self.clip_norm = clip_norm
        self.scaler = torch.amp.GradScaler("cuda", enabled=_amp_dtype(device) == torch.float16)

    def __call__(self, loss: torch.Tensor) -> None:
        self.scaler.scale(loss).backward()
        if self.clip_norm:
            self.scaler.unscale_(self.optimizer)
            parameters = [p for group in self.optimizer.param_groups for p in group["params"]]
            torch.nn.utils.clip_grad_norm_(parameters, self.clip_norm)
        self.scaler.step(self.optimizer)
        self.scaler.update()
        self.optimizer.zero_grad(set_to_none=True)


def minibatches(n: int, batch_size: int, rng: np.random.Generator | None = None) -> Iterator[np.ndarray]:
    """Index arrays of consecutive minibatches over ``n`` examples, shuffled when ``rng`` is given."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive (got {batch_size}).")
    order = rng.permutation(n) if rng is not None else np.arange(n)
    for start in range(0, n, batch_size):
        yield order[start : start + batch_size]


def bucket_batches(
    lengths: np.ndarray, batch_size: int, rng: np.random.Generator, *, noise: float = 0.0, pool: int | None = None
) -> list[np.ndarray]:
    """Shuffled minibatches of examples of similar length: less padding, fewer idle recurrent steps.

    The length-bucketing iterators of AllenNLP (``bucket`` iterator / ``BucketBatchSampler``) and of
    torchtext (``BucketIterator``), as one function of ``rng``'s state:

    1. each length is multiplied by U(1 - ``noise``, 1 + ``noise``) (AllenNLP's ``padding_noise``,
       0.1 there), so that equal lengths do not always meet in the same batch;
    2. with ``pool``, the examples are shuffled and cut into pools of ``pool * batch_size``
       (torchtext sorts within pools of 100 batches); without, all examples form one pool;
    3. each pool is sorted by (noisy) length, ascending and stably, and cut into consecutive batches
       of ``batch_size`` (the last of a pool may be smaller);
    4. the batches are returned in random order.

    Every index ``0 .. len(lengths) - 1`` is in exactly one batch.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be positive (got {batch_size}).")
    if not 0.0 <= noise < 1.0:
        raise ValueError(f"noise must be in [0, 1) (got {noise}).")
    if pool is not None and pool < 1:
        raise ValueError(f"pool must be a positive number of batches or None (got {pool}).")
    keys = np.asarray(lengths, dtype=float)
    if noise:
        keys = keys * rng.uniform(1 - noise, 1 + noise, size=len(keys))
    order = rng.permutation(len(keys)) if pool is not None else np.arange(len(keys))
    size = batch_size * pool if pool is not None else max(1, len(keys))
    batches = []
    for start in range(0, len(order), size):
        chunk = order[start : start + size]
        chunk = chunk[np.argsort(keys[chunk], kind="stable")]
        batches.extend(chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size))
    return [batches[i] for i in rng.permutation(len(batches))]


def run_training_epoch(
    model: torch.nn.Module,
    batches: Iterable[np.ndarray],
    batch_loss: Callable[[np.ndarray], torch.Tensor],
    step: Callable[[torch.Tensor], None],
    device: torch.device,
    after_step: Callable[[], None] | None = None,
) -> float:
    """One epoch of training: the mean loss per example over ``batches``.

    Puts ``model`` in training mode, then for each index array of ``batches`` (in their order):
    ``loss = batch_loss(indices)`` under :func:`autocast` ``(device)``, ``step(loss)`` (an
    :class:`OptimizerStep`), then ``after_step()`` if given (e.g. a weight average's update).

    Parameters
    ----------
    model : torch.nn.Module
        Set to ``train()`` mode first.
    batches : iterable of int arrays
        The example indices of each minibatch (e.g. :func:`minibatches` or :func:`bucket_batches`).
    batch_loss : callable(indices) -> scalar tensor
        The mean loss of a minibatch; it should cast the logits to float32 (``logits.float()``)
        before the loss, so that the loss is computed in float32 under mixed precision.
    step : callable(loss)
        Backward pass and optimizer step.
    device : torch.device
        Selects mixed precision (:func:`autocast`).
    after_step : callable, optional
        Called after every step.

    Returns
    -------
    float
        ``sum(loss_b * len(b)) / sum(len(b))`` accumulated in Python floats in batch order
        (0.0 without examples).
    """
    model.train()
    total, count = 0.0, 0
    for indices in batches:
        with autocast(device):
            loss = batch_loss(indices)
        step(loss)
        if after_step is not None:
            after_step()
        total += float(loss.detach()) * len(indices)
        count += len(indices)
    return total / max(count, 1)


def predict(
    model: torch.nn.Module,
    batches: Iterable[np.ndarray],
    batch_logits: Callable[[np.ndarray], torch.Tensor],
    to_prediction: Callable[[torch.Tensor], np.ndarray],
    n: int,
    device: torch.device,
) -> np.ndarray:
    """Predictions for examples ``0 .. n - 1`` of a split, in example order, computed batch by batch.

    Puts ``model`` in evaluation mode (and leaves it there) and, without gradients, computes
    ``to_prediction(batch_logits(indices).float())`` for each index array of ``batches`` under
    :func:`autocast` ``(device)``; row ``i`` of a batch's predictions belongs to example ``indices[i]``.

    Parameters
    ----------
    model : torch.nn.Module
        Set to ``eval()`` mode first.
    batches : iterable of int arrays
        Together they should cover ``0 .. n - 1`` once, in any grouping and order (e.g. sorted by
        length, for less padding); empty arrays are skipped. Rows not covered stay 0.
    batch_logits : callable(indices) -> tensor
        The logits ``(len(indices), classes)`` of a batch.
    to_prediction : callable(float32 logits) -> ndarray
        E.g. the arg-max class or the multi-hot labels (the ``predict`` of :func:`loss_and_metric`).
    n : int
        Number of examples of the split.
    device : torch.device
        Selects mixed precision (:func:`autocast`).

    Returns
    -------
    ndarray
        ``(n, ...)`` with the shape and dtype of a batch's predictions (``int64`` zeros of shape
        ``(0,)`` when there is no non-empty batch).
    """
    model.eval()
    predicted: np.ndarray | None = None
    with torch.no_grad():
        for indices in batches:
            if len(indices) == 0:
                continue
            with autocast(device):
                rows = to_prediction(batch_logits(indices).float())
            if predicted is None:
                predicted = np.zeros((n, *rows.shape[1:]), dtype=rows.dtype)
            predicted[indices] = rows
    return predicted if predicted is not None else np.zeros(n, dtype=np.int64)


def loss_and_metric(multilabel: bool) -> tuple[Callable, str, Callable[[torch.Tensor], np.ndarray], Callable]:
    """``(loss(logits, targets), metric name, predict(logits), score(predicted, labels))`` of a task.

    Multi-label: BCE with logits, a label where its sigmoid is above 0.5, micro-F1. Otherwise
    cross-entropy, the arg-max class, accuracy.
    """
    if multilabel:
        return F.binary_cross_entropy_with_logits, "f1", predicted_labels, micro_f1
    return F.cross_entropy, "accuracy", predicted_classes, accuracy


def predicted_classes(logits: torch.Tensor) -> np.ndarray:
    """The arg-max class of each row of ``(batch, classes)`` logits, as an int64 array."""
    return logits.argmax(dim=1).cpu().numpy()


def predicted_labels(logits: torch.Tensor) -> np.ndarray:
    """Multi-hot predictions: a label where its logit is positive (sigmoid above 0.5), as a bool array."""
    return (logits > 0).cpu().numpy()


def targets_of(labels: np.ndarray, multilabel: bool, device: torch.device) -> torch.Tensor:
    """Labels as the loss wants them: float multi-hot rows, or int64 class indices."""
    return torch.as_tensor(labels, dtype=torch.float32 if multilabel else torch.int64, device=device)


def reduce_on_plateau(optimizer: torch.optim.Optimizer, factor: float, patience: int) -> torch.optim.lr_scheduler.ReduceLROnPlateau | None:
    """Multiply the learning rate by ``factor`` after ``patience`` epochs without a dev improvement.

    PyTorch's ``ReduceLROnPlateau`` in ``max`` mode (the dev metric is higher-is-better), for
    :func:`fit`'s ``lr_schedule``; None when ``factor`` is 1 (no schedule; PyTorch refuses factor 1).
    """
    if not 0.0 < factor <= 1.0:
        raise ValueError(f"factor must be in (0, 1] (got {factor}).")
    if factor == 1.0:
        return None
    return torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="max", factor=factor, patience=patience)


@dataclass
class FitResult:
    """What :func:`fit` found: the best dev epoch, its dev metrics and the test metrics of its state."""

    best_epoch: int
    dev: dict[str, float]
    test: dict[str, float]
    epochs_run: int
    history: list[dict[str, float]] = field(default_factory=list)

    def metrics(self, parameters: int | None = None, split_sizes: Mapping[str, int] | None = None) -> dict[str, Any]:
        """The trainable's return value: ``val_<m>`` and ``test_<m>`` for every metric, plus bookkeeping.

        Parameters
        ----------
        parameters : int, optional
            The model's parameter count, returned as ``parameters`` (a float).
        split_sizes : mapping, optional
            The examples per split the trial was given, ``{"train": n, "dev": n, "test": n}``
            (:meth:`showwork_models.data.TextDataset.sizes`), returned as ``split_sizes`` with int values.

        Returns
        -------
        dict
            ``val_<m>`` / ``test_<m>`` (``test_<m>`` absent when test was not scored),
            ``best_epoch`` and ``epochs_run`` as floats, then ``parameters`` and ``split_sizes``
            when given.
        """
        out: dict[str, Any] = {f"val_{k}": v for k, v in self.dev.items()}
        out.update({f"test_{k}": v for k, v in self.test.items()})
        out["best_epoch"] = float(self.best_epoch)
        out["epochs_run"] = float(self.epochs_run)
        if parameters is not None:
            out["parameters"] = float(parameters)
        if split_sizes is not None:
            out["split_sizes"] = {str(name): int(size) for name, size in split_sizes.items()}
        return out


def fit(
    *,
    epochs: int,
    patience: int,
    train_epoch: Callable[[int], float],
    evaluate: Callable[[str], Mapping[str, float]],
    metric: str,
    reporter: Callable[..., None],
    state: Callable[[], dict] | None = None,
    load_state: Callable[[dict], None] | None = None,
    model: torch.nn.Module | None = None,
    evaluate_test: bool = True,
    lr_schedule: torch.optim.lr_scheduler.ReduceLROnPlateau | None = None,
) -> FitResult:
    """Train with early stopping on the dev ``metric`` (higher is better) and score the best state on test.

    Parameters
    ----------
    epochs : int
        Maximum number of epochs.
    patience : int
        Stop after this many epochs without a dev improvement (0: never stop early).
    train_epoch : callable(epoch) -> float
        Runs one epoch of training and returns its mean training loss.
    evaluate : callable(split) -> dict
        Metrics (higher is better) of the current weights on ``"dev"`` or ``"test"``.
    metric : str
        The key of ``evaluate``'s result that selects the best epoch.
    reporter : showwork Reporter
        Receives ``epoch``, ``train_loss`` and ``val_<metric>`` for every dev metric, every epoch.
    state, load_state : callables, optional
        Take and restore a snapshot of the weights that ``evaluate`` uses; default: ``model``'s
        ``state_dict`` (deep-copied).
    evaluate_test : bool, default True
        Evaluate the best state on the test split.
    lr_schedule : optional
        Stepped with the dev ``metric`` after every epoch's evaluation, before the next epoch
        (e.g. :func:`reduce_on_plateau`).

    Returns
    -------
    FitResult
    """
    if state is None or load_state is None:
        if model is None:
            raise ValueError("fit needs either a model or both state and load_state.")
        state = lambda: copy.deepcopy(model.state_dict())  # noqa: E731
        load_state = model.load_state_dict
    best_score, best_epoch, best_state, best_dev = -math.inf, -1, None, {}
    history = []
    epoch = -1
    for epoch in range(epochs):
        loss = float(train_epoch(epoch))
        dev = {k: float(v) for k, v in evaluate("dev").items()}
        if metric not in dev:
            raise KeyError(f"evaluate() returned no {metric!r} (got {sorted(dev)}).")
        row = {"train_loss": loss, **{f"val_{k}": v for k, v in dev.items()}}
        reporter(epoch=epoch, **row)
        history.append({"epoch": epoch, **row})
        if lr_schedule is not None:
            lr_schedule.step(dev[metric])
        if not math.isfinite(loss):
            break  # diverged: the best earlier state (if any) is kept
        if dev[metric] > best_score:
            best_score, best_epoch, best_state, best_dev = dev[metric], epoch, state(), dev
        elif patience and epoch - best_epoch >= patience:
            break
    if best_state is None:
        return FitResult(best_epoch, {metric: float("nan")}, {}, epoch + 1, history)
    load_state(best_state)
    test = {k: float(v) for k, v in evaluate("test").items()} if evaluate_test else {}
    return FitResult(best_epoch, best_dev, test, epoch + 1, history)

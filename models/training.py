"""What every torch family shares: seeding, the device, mixed precision, metrics, and the epoch loop.

:func:`fit` is the loop of all neural families: train one epoch, evaluate on dev, report the epoch
to showwork, keep the best dev state, stop after ``patience`` epochs without improvement, then
score the best state on test. A family supplies the three things that differ: how to train one
epoch, how to evaluate a split, and (optionally) which weights to snapshot (e.g. averaged ones).

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
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np
import torch

__all__ = [
    "FitResult",
    "OptimizerStep",
    "accuracy",
    "autocast",
    "count_parameters",
    "fit",
    "micro_f1",
    "minibatches",
    "resolve_device",
    "seed_everything",
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


def accuracy(predicted: np.ndarray, labels: np.ndarray) -> float:
    """Share of exact matches between predicted and true class indices."""
    return float(np.mean(np.asarray(predicted) == np.asarray(labels))) if len(labels) else 0.0


def micro_f1(predicted: np.ndarray, labels: np.ndarray) -> float:
    """Micro-averaged F1 of multi-hot predictions: 2·TP / (2·TP + FP + FN) over all (document, label) cells.

    The multi-label metric of Adhikari et al. (2019) and Tang et al. (2020) on Reuters. 0 when there
    are neither predicted nor true labels.
    """
    predicted = np.asarray(predicted, dtype=bool)
    labels = np.asarray(labels, dtype=bool)
    true_positive = np.count_nonzero(predicted & labels)
    denominator = np.count_nonzero(predicted) + np.count_nonzero(labels)
    return 2.0 * true_positive / denominator if denominator else 0.0


@dataclass
class FitResult:
    """What :func:`fit` found: the best dev epoch, its dev metrics and the test metrics of its state."""

    best_epoch: int
    dev: dict[str, float]
    test: dict[str, float]
    epochs_run: int
    history: list[dict[str, float]] = field(default_factory=list)

    def metrics(self, parameters: int | None = None) -> dict[str, float]:
        """The trainable's return value: ``val_<m>`` and ``test_<m>`` for every metric, plus bookkeeping."""
        out = {f"val_{k}": v for k, v in self.dev.items()}
        out.update({f"test_{k}": v for k, v in self.test.items()})
        out["best_epoch"] = float(self.best_epoch)
        out["epochs_run"] = float(self.epochs_run)
        if parameters is not None:
            out["parameters"] = float(parameters)
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

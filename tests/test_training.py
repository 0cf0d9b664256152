"""The epoch loop and helpers shared by the torch families (models/training.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from models.training import OptimizerStep, accuracy, count_parameters, fit, micro_f1, minibatches, resolve_device, seed_everything  # noqa: E402
from showwork.trainable import Reporter  # noqa: E402


class Scripted:
    """A fake model whose dev score per epoch is scripted; its 'state' is the epoch it was taken at."""

    def __init__(self, dev_scores, losses=None):
        self.dev_scores = dev_scores
        self.losses = losses or [1.0] * len(dev_scores)
        self.epoch = -1
        self.trained = []

    def train_epoch(self, epoch):
        self.epoch = epoch
        self.trained.append(epoch)
        return self.losses[epoch]

    def evaluate(self, split):
        if split == "test":
            return {"accuracy": 100.0 + self.epoch}
        return {"accuracy": self.dev_scores[self.epoch], "f1": 0.5}

    def run(self, epochs, patience, reporter=None):
        return fit(
            epochs=epochs,
            patience=patience,
            train_epoch=self.train_epoch,
            evaluate=self.evaluate,
            metric="accuracy",
            reporter=reporter or Reporter(),
            state=lambda: self.epoch,
            load_state=lambda epoch: setattr(self, "epoch", epoch),
        )


def test_fit_keeps_the_best_dev_epoch_and_scores_it_on_test():
    model = Scripted([0.5, 0.7, 0.6, 0.65, 0.9, 0.1])
    reporter = Reporter()
    result = model.run(epochs=6, patience=0, reporter=reporter)
    assert result.best_epoch == 4 and result.dev == {"accuracy": 0.9, "f1": 0.5}
    assert result.test == {"accuracy": 104.0}  # evaluated at the restored best state
    assert result.epochs_run == 6
    assert [row["epoch"] for row in reporter.history] == list(range(6))
    assert reporter.history[4]["val_accuracy"] == 0.9 and reporter.history[4]["train_loss"] == 1.0
    metrics = result.metrics(parameters=123)
    assert metrics["val_accuracy"] == 0.9 and metrics["test_accuracy"] == 104.0 and metrics["parameters"] == 123.0
    assert metrics["best_epoch"] == 4.0 and metrics["epochs_run"] == 6.0


def test_fit_stops_after_patience_epochs_without_improvement():
    model = Scripted([0.5, 0.7, 0.6, 0.65, 0.9, 0.1])
    result = model.run(epochs=6, patience=2)
    assert model.trained == [0, 1, 2, 3]  # epochs 2 and 3 did not beat epoch 1
    assert result.best_epoch == 1 and result.epochs_run == 4 and result.test == {"accuracy": 101.0}


def test_fit_stops_on_a_diverged_loss_and_keeps_the_earlier_best():
    model = Scripted([0.5, 0.7, 0.9], losses=[1.0, float("nan"), 1.0])
    result = model.run(epochs=3, patience=0)
    assert model.trained == [0, 1] and result.best_epoch == 0
    first = Scripted([0.5], losses=[float("inf")])
    result = first.run(epochs=3, patience=0)
    assert result.best_epoch == -1 and math.isnan(result.dev["accuracy"]) and result.test == {}


def test_fit_rejects_a_missing_metric():
    with pytest.raises(KeyError, match="'recall'"):
        fit(epochs=1, patience=0, train_epoch=lambda e: 0.0, evaluate=lambda s: {"accuracy": 1.0}, metric="recall", reporter=Reporter(), state=dict, load_state=print)
    with pytest.raises(ValueError, match="model or both"):
        fit(epochs=1, patience=0, train_epoch=lambda e: 0.0, evaluate=lambda s: {}, metric="x", reporter=Reporter())


def test_fit_with_a_real_model_restores_its_best_weights():
    seed_everything(0)
    model = torch.nn.Linear(2, 1)
    snapshots = []

    def train_epoch(epoch):
        with torch.no_grad():
            model.weight.add_(1.0)
        return 0.0

    def evaluate(split):
        w = float(model.weight.detach().sum())
        snapshots.append(w)
        return {"score": -abs(w - float(initial) - 4.0)}  # best after the 2nd epoch (+2 per epoch on 2 weights)

    initial = model.weight.detach().sum().clone()
    result = fit(epochs=4, patience=0, train_epoch=train_epoch, evaluate=evaluate, metric="score", reporter=Reporter(), model=model)
    assert result.best_epoch == 1
    assert float(model.weight.sum()) == pytest.approx(float(initial) + 4.0)


def test_seeding_makes_torch_deterministic():
    seed_everything(7)
    a = torch.randn(5)
    seed_everything(7)
    assert torch.equal(a, torch.randn(5))


def test_optimizer_step_clips_and_steps_on_cpu():
    model = torch.nn.Linear(3, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    before = model.weight.detach().clone()
    step = OptimizerStep(optimizer, torch.device("cpu"), clip_norm=1e-3)
    loss = (model(torch.ones(4, 3)) * 1e6).sum()
    step(loss)
    change = (model.weight.detach() - before).norm()
    assert 0 < float(change) <= 1e-3 + 1e-9  # clipped to norm 1e-3 (weight and bias together)
    assert all(p.grad is None for p in model.parameters())


def test_metrics_and_batches():
    assert accuracy(np.array([0, 1, 2]), np.array([0, 1, 1])) == pytest.approx(2 / 3)
    predicted = np.array([[1, 0, 1], [0, 0, 0]])
    labels = np.array([[1, 1, 0], [0, 0, 1]])
    assert micro_f1(predicted, labels) == pytest.approx(2 * 1 / (2 * 1 + 1 + 2))
    assert micro_f1(np.zeros((2, 2)), np.zeros((2, 2))) == 0.0
    batches = list(minibatches(10, 4, np.random.default_rng(0)))
    assert [len(b) for b in batches] == [4, 4, 2] and sorted(np.concatenate(batches)) == list(range(10))
    assert [b.tolist() for b in minibatches(5, 2)] == [[0, 1], [2, 3], [4]]
    with pytest.raises(ValueError, match="batch_size"):
        list(minibatches(5, 0))
    assert count_parameters(torch.nn.Linear(3, 2)) == 8
    frozen = torch.nn.Linear(3, 2)
    frozen.bias.requires_grad_(False)
    assert count_parameters(frozen, trainable_only=True) == 6


def test_cuda_without_a_gpu_is_an_error():
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(RuntimeError, match="no CUDA device"):
        resolve_device("cuda")
    assert resolve_device("cpu").type == "cpu"

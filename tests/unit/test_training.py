"""The epoch loop and helpers shared by the torch families (models/training.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from showwork.trainable import Reporter  # noqa: E402
from showwork_models.training import (  # noqa: E402
    OptimizerStep,
    accuracy,
    bucket_batches,
    count_parameters,
    fit,
    loss_and_metric,
    micro_f1,
    minibatches,
    predict,
    predicted_classes,
    predicted_labels,
    reduce_on_plateau,
    resolve_device,
    run_training_epoch,
    seed_everything,
    targets_of,
)


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


# --- length-bucketed minibatches (the lstm's torchtext pools, the bcn's AllenNLP noise) ------------


@pytest.mark.parametrize("options", [{"pool": 10}, {"noise": 0.1}, {"noise": 0.1, "pool": 10}, {}])
def test_bucket_batches_cover_every_example_once_in_similar_lengths(options):
    lengths = np.random.default_rng(1).integers(1, 300, size=1000)
    batches = bucket_batches(lengths, 16, np.random.default_rng(0), **options)
    assert sorted(np.concatenate(batches).tolist()) == list(range(1000))
    assert max(len(b) for b in batches) == 16
    spread = np.mean([np.ptp(lengths[b]) for b in batches])
    assert spread < np.ptp(lengths) / 4  # batches hold examples of similar length
    again = bucket_batches(lengths, 16, np.random.default_rng(0), **options)
    assert len(again) == len(batches) and all(np.array_equal(a, b) for a, b in zip(batches, again))
    other = bucket_batches(lengths, 16, np.random.default_rng(1), **options)
    assert not all(np.array_equal(a, b) for a, b in zip(batches, other))  # the batch order is shuffled


def test_bucket_batches_without_a_pool_cut_one_sorted_run():
    lengths = np.random.default_rng(0).integers(1, 60, size=1000)
    batches = bucket_batches(lengths, 64, np.random.default_rng(1), noise=0.1)
    assert [len(b) for b in batches].count(64) == 15 and len(batches) == 16
    spread = np.mean([np.ptp(lengths[b]) for b in batches if len(b) == 64])
    assert spread < 15  # random batches of 64 would spread over ~55
    exact = bucket_batches(lengths, 64, np.random.default_rng(1))
    ordered = sorted(exact, key=lambda b: lengths[b].min())
    assert all(lengths[a].max() <= lengths[b].min() for a, b in zip(ordered, ordered[1:]))  # no noise: disjoint ranges


def test_bucket_batches_pools_sort_only_within_a_pool():
    lengths = np.arange(100)[::-1].copy()
    batches = bucket_batches(lengths, 5, np.random.default_rng(2), pool=2)
    assert len(batches) == 20 and all(len(b) == 5 for b in batches)
    assert all(np.all(np.diff(lengths[b]) >= 0) for b in batches)  # ascending within a batch
    # Pools of 10 examples of a shuffled order: the two batches of a pool split it at its median.
    spreads = [np.ptp(lengths[b]) for b in batches]
    assert max(spreads) > 10  # a pool is a random sample, not a band of neighbouring lengths


@pytest.mark.parametrize("options, match", [({"batch_size": 0}, "batch_size"), ({"noise": 1.0}, "noise"), ({"pool": 0}, "pool")])
def test_bucket_batches_refuse_bad_arguments(options, match):
    arguments = {"batch_size": 4, **options}
    with pytest.raises(ValueError, match=match):
        bucket_batches(np.ones(10), arguments.pop("batch_size"), np.random.default_rng(0), **arguments)


def test_loss_and_metric_of_single_and_multi_label_tasks():
    device = torch.device("cpu")
    loss, metric, predict, score = loss_and_metric(multilabel=False)
    logits = torch.tensor([[2.0, 0.0, -1.0], [0.0, 0.5, 3.0]])
    assert metric == "accuracy" and predict(logits).tolist() == [0, 2]
    targets = targets_of(np.array([0, 1]), False, device)
    assert targets.dtype == torch.int64
    torch.testing.assert_close(loss(logits, targets), torch.nn.functional.cross_entropy(logits, targets))
    assert score(predict(logits), np.array([0, 1])) == 0.5
    loss, metric, predict, score = loss_and_metric(multilabel=True)
    multi_hot = np.array([[1, 0, 0], [0, 1, 1]])
    assert metric == "f1" and predict(logits).tolist() == [[True, False, False], [False, True, True]]
    targets = targets_of(multi_hot, True, device)
    assert targets.dtype == torch.float32
    torch.testing.assert_close(loss(logits, targets), torch.nn.functional.binary_cross_entropy_with_logits(logits, targets))
    assert score(predict(logits), multi_hot) == 1.0


# --- the learning-rate schedule of fit ---------------------------------------------------------------


def test_fit_steps_the_lr_schedule_with_each_dev_score():
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=1.0)
    schedule = reduce_on_plateau(optimizer, 0.5, patience=1)
    rates = []
    scripted = Scripted([0.5, 0.6, 0.6, 0.6, 0.6, 0.7])

    def train_epoch(epoch):
        rates.append(optimizer.param_groups[0]["lr"])
        return scripted.train_epoch(epoch)

    fit(epochs=6, patience=0, train_epoch=train_epoch, evaluate=scripted.evaluate, metric="accuracy",
        reporter=Reporter(), state=lambda: scripted.epoch, load_state=lambda s: None, lr_schedule=schedule)
    # Epochs 2 and 3 do not improve on 0.6 (epoch 1): after the second of them (patience 1) the rate
    # is halved, so epoch 4 trains at 0.5; epoch 4 alone is one bad epoch, within the patience.
    assert rates == [1.0, 1.0, 1.0, 1.0, 0.5, 0.5]


def test_reduce_on_plateau_is_off_at_factor_one():
    optimizer = torch.optim.SGD(torch.nn.Linear(2, 1).parameters(), lr=1.0)
    assert reduce_on_plateau(optimizer, 1.0, patience=2) is None
    assert reduce_on_plateau(optimizer, 0.5, patience=2).mode == "max"
    with pytest.raises(ValueError, match="factor"):
        reduce_on_plateau(optimizer, 0.0, patience=2)


# --- one epoch of training and the predictions of a split ------------------------------------------


def test_run_training_epoch_steps_every_batch_and_weights_the_mean_loss_by_batch_size():
    model = torch.nn.Linear(1, 1, bias=False)
    torch.nn.init.constant_(model.weight, 1.0)
    model.eval()
    x = torch.arange(5, dtype=torch.float32)[:, None]
    losses, steps, after = [], [], []

    def batch_loss(indices):
        assert model.training
        loss = model(x[torch.as_tensor(indices)]).mean()
        losses.append(float(loss.detach()))
        return loss

    def step(loss):
        steps.append(float(loss))

    batches = [np.array([0, 1, 2]), np.array([3, 4])]
    mean = run_training_epoch(model, batches, batch_loss, step, torch.device("cpu"), after_step=lambda: after.append(len(steps)))
    assert losses == steps == [1.0, 3.5] and after == [1, 2]
    assert mean == (1.0 * 3 + 3.5 * 2) / 5
    assert run_training_epoch(model, [], batch_loss, step, torch.device("cpu")) == 0.0


def test_run_training_epoch_trains_like_a_hand_written_loop():
    def epoch(use_helper):
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Dropout(0.3), torch.nn.Linear(4, 2))
        step = OptimizerStep(torch.optim.SGD(model.parameters(), lr=0.1), torch.device("cpu"))
        x, y = torch.randn(10, 3), torch.tensor([0, 1] * 5)
        batches = list(minibatches(10, 4, np.random.default_rng(1)))

        def batch_loss(b):
            return torch.nn.functional.cross_entropy(model(x[torch.as_tensor(b)]).float(), y[torch.as_tensor(b)])

        if use_helper:
            loss = run_training_epoch(model, batches, batch_loss, step, torch.device("cpu"))
        else:
            model.train()
            total, count = 0.0, 0
            for b in batches:
                value = batch_loss(b)
                step(value)
                total += float(value.detach()) * len(b)
                count += len(b)
            loss = total / count
        return loss, [p.detach().clone() for p in model.parameters()]

    (loss, weights), (expected_loss, expected_weights) = epoch(True), epoch(False)
    assert loss == expected_loss
    for w, e in zip(weights, expected_weights):
        assert torch.equal(w, e)


def test_predict_puts_each_batch_back_in_example_order():
    model = torch.nn.Dropout(0.5)  # the identity in evaluation mode
    model.train()
    logits = torch.tensor([[0.0, 1.0], [2.0, 0.0], [0.0, 3.0], [4.0, 0.0], [1.0, 0.5]])

    def batch_logits(indices):
        assert not model.training and not torch.is_grad_enabled()
        return model(logits[torch.as_tensor(indices)])

    predict_class = loss_and_metric(False)[2]
    batches = [np.array([4, 0]), np.array([], dtype=np.int64), np.array([3, 1, 2])]
    predicted = predict(model, batches, batch_logits, predict_class, 5, torch.device("cpu"))
    assert predicted.dtype == np.int64 and predicted.tolist() == [1, 0, 1, 0, 0]
    assert predicted_classes is predict_class
    multi_hot = predict(model, [np.array([2, 0, 1])], lambda i: logits[torch.as_tensor(i)] - 1.5, predicted_labels, 3, torch.device("cpu"))
    assert multi_hot.dtype == bool and multi_hot.tolist() == [[False, False], [True, False], [False, True]]
    assert predict(model, [], batch_logits, predict_class, 0, torch.device("cpu")).shape == (0,)

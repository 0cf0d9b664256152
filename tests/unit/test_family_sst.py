"""The SST pair of Dodge et al. (2019) Fig. 1: the Kim (2014) CNN (showwork_models.cnn) and n-gram logistic regression (showwork_models.logreg).

Trained on real slices of SST-5 from the shared data folder; the search spaces are the paper's
Appendix B Tables 2 and 3 (search_spaces/sst5_cnn.yaml, search_spaces/sst5_logreg.yaml).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from showwork.families import resolve_family
from showwork.sampling import nest, trial_config
from showwork.space import load_search_spec
from showwork.trainable import Reporter
from showwork_models import cnn, logreg
from showwork_models.data import load_dataset

REPO_ROOT = Path(__file__).resolve().parents[2]
SPACES = REPO_ROOT / "search_spaces"

# A small CNN that learns within one epoch on 2,000 sentences (the paper's defaults need ~40 s an epoch on CPU).
SMALL_CNN = {"num_filters": 64, "max_filter_size": 3, "lr": 0.01, "batch_size": 50, "epochs": 1}
MARGIN = 0.05  # accuracy points above the majority class that count as "clearly learned"


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py


def _data(shared_data_dir, dataset="sst5", **extra):
    return {"dataset": dataset, "dir": str(shared_data_dir), **extra}


# --- CNN ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cnn_run(shared_data_dir):
    reporter = Reporter()
    data = _data(shared_data_dir, train_size=2000)
    result = cnn.train(dict(SMALL_CNN), seed=3, device="cpu", reporter=reporter, data=data)
    return result, reporter, data


@pytest.mark.slow  # trains the model on real data
def test_cnn_beats_majority_after_one_epoch(cnn_run):
    result, _, data = cnn_run
    baseline = load_dataset("sst5", data).majority_baseline("dev")
    assert 0.25 < baseline < 0.26
    assert result["val_accuracy"] > baseline + MARGIN
    assert 0.0 <= result["test_accuracy"] <= 1.0
    assert result["best_epoch"] == 0 and result["epochs_run"] == 1
    assert result["parameters"] > 0


@pytest.mark.slow  # trains the model on real data
def test_cnn_returns_the_sizes_of_the_splits_it_used(cnn_run):
    result, _, data = cnn_run
    dataset = load_dataset("sst5", data)
    assert result["split_sizes"] == {"train": data["train_size"], "dev": len(dataset.dev), "test": len(dataset.test)}
    assert data["train_size"] < len(load_dataset("sst5", {**data, "train_size": None}).train)  # a real slice


@pytest.mark.slow  # trains the model on real data
def test_cnn_is_deterministic(cnn_run, shared_data_dir):
    result, _, data = cnn_run
    again = cnn.train(dict(SMALL_CNN), seed=3, device="cpu", reporter=Reporter(), data=data)
    assert again == result


@pytest.mark.slow  # trains the model on real data
def test_cnn_reports_every_epoch(cnn_run, shared_data_dir):
    _, reporter, _ = cnn_run
    assert [row["epoch"] for row in reporter.history] == [0]
    assert set(reporter.history[0]) == {"epoch", "train_loss", "val_accuracy"}
    tiny = {**SMALL_CNN, "num_filters": 8, "epochs": 3, "patience": 0, "lr_reduce_patience": 0}
    reporter = Reporter()
    result = cnn.train(tiny, seed=0, device="cpu", reporter=reporter, data=_data(shared_data_dir, train_size=200))
    assert [row["epoch"] for row in reporter.history] == [0, 1, 2]
    assert result["epochs_run"] == 3
    best = max(row["val_accuracy"] for row in reporter.history)
    assert result["val_accuracy"] == best


@pytest.mark.parametrize(
    "config, key",
    [
        ({"lr_rate": 0.1}, "lr_rate"),
        ({"dropout": 1.0}, "dropout"),
        ({"dropout": "0.5"}, "dropout"),
        ({"lr": 0.0}, "lr"),
        ({"max_filter_size": 0}, "max_filter_size"),
        ({"num_filters": 2.5}, "num_filters"),
        ({"batch_size": True}, "batch_size"),
        ({"num_layers": 1}, "num_layers"),
        ({"embedding_mode": "frozen"}, "embedding_mode"),
        ({"activation": "gelu"}, "activation"),
        ({"ngram_filter_sizes": "3,x"}, "ngram_filter_sizes"),
        ({"ngram_filter_sizes": [3, 4], "max_filter_size": 5}, "max_filter_size"),
        ({"lr_reduce_factor": 0.0}, "lr_reduce_factor"),
        ({"max_length": 0}, "max_length"),
    ],
)
def test_cnn_refuses_bad_config(config, key, shared_data_dir):
    with pytest.raises(ValueError, match=key):
        cnn.validate_config(config)
    with pytest.raises(ValueError, match=key):
        cnn.train(config, seed=0, device="cpu", reporter=Reporter(), data=_data(shared_data_dir))


@pytest.mark.parametrize("config", [{}, {"ngram_filter_sizes": "3,4,5"}, {"ngram_filter_sizes": [2], "hidden_dim": 8, "num_layers": 1}])
def test_cnn_checked_config_checks_again(config):
    checked = cnn.validate_config(config)
    assert cnn.validate_config(checked) == checked  # build_model re-checks the config train passes it


@pytest.mark.slow  # trains the model on real data
def test_cnn_trains_with_explicit_filter_sizes(shared_data_dir):
    config = {**SMALL_CNN, "num_filters": 8, "max_filter_size": None, "ngram_filter_sizes": "2,3"}  # None: not given
    result = cnn.train(config, seed=0, device="cpu", reporter=Reporter(), data=_data(shared_data_dir, train_size=200))
    assert result["parameters"] > 0
    with pytest.raises(ValueError, match="max_filter_size"):
        cnn.validate_config({"max_filter_size": None})


def test_cnn_refuses_wrong_embedding_dim_and_pairs(shared_data_dir):
    with pytest.raises(ValueError, match="embedding_dim"):
        cnn.train({**SMALL_CNN, "embedding_dim": 300}, seed=0, device="cpu", reporter=Reporter(), data=_data(shared_data_dir, train_size=50))
    with pytest.raises(ValueError, match="data.dataset"):
        cnn.train(dict(SMALL_CNN), seed=0, device="cpu", reporter=Reporter(), data=_data(shared_data_dir, "snli"))


def test_cnn_shapes_and_parameter_count():
    vocabulary, dim, classes = 100, 50, 5
    embedding = np.random.default_rng(0).uniform(-0.25, 0.25, (vocabulary, dim)).astype(np.float32)
    embedding[0] = 0
    config = {"max_filter_size": 3, "num_filters": 8, "hidden_dim": 16, "num_layers": 1, "dropout": 0.0}
    model = cnn.build_model(config, embedding, classes)
    assert cnn.filter_sizes(cnn.validate_config(config)) == (1, 2, 3)
    expected = (
        vocabulary * dim
        + sum(k * dim * 8 + 8 for k in (1, 2, 3))  # convolutions
        + (3 * 8) * 16 + 16  # CnnEncoder output_dim projection
        + 16 * 16 + 16  # one feedforward layer
        + 16 * classes + classes  # output layer
    )
    assert sum(p.numel() for p in model.parameters()) == expected
    ids = torch.tensor([[5, 6, 7, 8, 0, 0], [9, 0, 0, 0, 0, 0]])
    lengths = torch.tensor([4, 1])
    model.eval()
    with torch.no_grad():
        logits = model(ids, lengths)
        assert logits.shape == (2, classes)
        # Padding never changes a sentence's logits: alone and unpadded, or in a padded batch.
        assert torch.allclose(model(ids[:1, :4], lengths[:1]), logits[:1], atol=1e-6)
        assert torch.allclose(model(ids[1:, :1], lengths[1:]), logits[1:], atol=1e-6)


def test_cnn_sentences_shorter_than_the_widest_filter():
    embedding = np.ones((20, 4), dtype=np.float32)
    embedding[0] = 0
    model = cnn.build_model({"ngram_filter_sizes": "3,4,5", "num_filters": 2}, embedding, 3)
    assert model.sizes == (3, 4, 5)
    with torch.no_grad():
        assert model(torch.tensor([[7]]), torch.tensor([1])).shape == (1, 3)
        assert torch.isfinite(model(torch.tensor([[7, 8]]), torch.tensor([2]))).all()


def test_cnn_embedding_modes():
    embedding = np.random.default_rng(1).normal(size=(30, 6)).astype(np.float32)
    embedding[0] = 0
    static = cnn.build_model({"embedding_mode": "static"}, embedding, 5)
    nonstatic = cnn.build_model({"embedding_mode": "nonstatic"}, embedding, 5)
    assert not static.embedding.weight.requires_grad
    assert nonstatic.embedding.weight.requires_grad
    assert nonstatic.embedding.padding_idx == 0
    assert np.array_equal(static.embedding.weight.detach().numpy(), embedding)


@pytest.mark.slow  # trains the model on real data
@pytest.mark.parametrize("dataset, mode", [("sst2_trees", "static"), ("sst2", "rand")])
def test_cnn_other_sst_datasets(dataset, mode, shared_data_dir):
    reporter = Reporter()
    config = {**SMALL_CNN, "num_filters": 8, "embedding_mode": mode}
    result = cnn.train(config, seed=0, device="cpu", reporter=reporter, data=_data(shared_data_dir, dataset, train_size=300))
    assert {"val_accuracy", "test_accuracy", "parameters", "best_epoch", "epochs_run"} <= set(result)
    assert len(reporter.history) == 1
    # sst2 carves its dev set out of GLUE train (data.dev_size, default 2,000); sst2_trees has its own.
    used = load_dataset(dataset, _data(shared_data_dir, dataset, train_size=300))
    assert result["split_sizes"] == {"train": 300, "dev": len(used.dev), "test": len(used.test)}


# --- logistic regression ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def logreg_run(shared_data_dir):
    reporter = Reporter()
    data = _data(shared_data_dir, train_size=2000)
    return logreg.train({}, seed=3, device="cpu", reporter=reporter, data=data), reporter, data


@pytest.mark.slow  # trains the model on real data
def test_logreg_beats_majority(logreg_run):
    result, _, data = logreg_run
    assert result["val_accuracy"] > load_dataset("sst5", data).majority_baseline("dev") + MARGIN
    assert 0.0 <= result["test_accuracy"] <= 1.0
    assert result["best_epoch"] == 0 and result["epochs_run"] == 1
    assert 1 <= result["n_iter"] <= logreg.PARAMS["max_iter"].default
    dataset = load_dataset("sst5", data)
    assert result["split_sizes"] == {"train": data["train_size"], "dev": len(dataset.dev), "test": len(dataset.test)}


@pytest.mark.slow  # trains the model on real data
def test_logreg_is_deterministic_with_and_without_the_feature_cache(logreg_run):
    result, _, data = logreg_run
    assert logreg.train({}, seed=3, device="cpu", reporter=Reporter(), data=data) == result
    logreg._features.clear()
    assert logreg.train({}, seed=3, device="cpu", reporter=Reporter(), data=data) == result


@pytest.mark.slow  # trains the model on real data
def test_logreg_reports_one_epoch(logreg_run):
    result, reporter, _ = logreg_run
    assert reporter.history == [{"epoch": 0, "val_accuracy": result["val_accuracy"]}]


@pytest.mark.parametrize(
    "config, key",
    [
        ({"alpha": 1.0}, "alpha"),
        ({"C": 0.0}, "C"),
        ({"C": -1}, "C"),
        ({"tol": float("nan")}, "tol"),
        ({"penalty": "elasticnet"}, "penalty"),
        ({"weight": "tf-idf"}, "weight"),
        ({"ngram_range": "3-1"}, "ngram_range"),
        ({"ngram_range": "1 2"}, "ngram_range"),
        ({"ngram_range": [0, 2]}, "ngram_range"),
        ({"stopwords": "yes"}, "stopwords"),
        ({"max_iter": 0}, "max_iter"),
    ],
)
def test_logreg_refuses_bad_config(config, key, shared_data_dir):
    with pytest.raises(ValueError, match=key):
        logreg.validate_config(config)
    with pytest.raises(ValueError, match=key):
        logreg.train(config, seed=0, device="cpu", reporter=Reporter(), data=_data(shared_data_dir))


@pytest.mark.slow  # trains the model on real data
def test_logreg_parameter_count_and_penalties(shared_data_dir):
    data = _data(shared_data_dir, train_size=1000)
    dataset = load_dataset("sst5", data)
    x, _, _ = logreg.vectorize(dataset, (1, 2), True, "binary")
    result = logreg.train({"ngram_range": [1, 2]}, seed=0, device="cpu", reporter=Reporter(), data=data)
    assert result["parameters"] == 5 * (x.shape[1] + 1)  # one-vs-rest: a weight vector and an intercept per class
    zeros = {}
    for penalty in ("l1", "l2"):
        model = logreg.build_model({"penalty": penalty, "C": 0.1}, seed=0, num_classes=5).fit(x, dataset.train.labels)
        assert len(model.estimators_) == 5
        zeros[penalty] = float(np.mean([np.mean(e.coef_ == 0) for e in model.estimators_]))
    assert zeros["l1"] > 0.9 > 0.1 > zeros["l2"]  # L1 really is L1 (sparse), L2 dense
    binary = _data(shared_data_dir, "sst2_trees", train_size=1000)
    xb, _, _ = logreg.vectorize(load_dataset("sst2_trees", binary), (1, 2), True, "binary")
    result = logreg.train({}, seed=0, device="cpu", reporter=Reporter(), data=binary)
    assert result["parameters"] == xb.shape[1] + 1


def test_logreg_features(shared_data_dir):
    dataset = load_dataset("sst5", _data(shared_data_dir, train_size=500))
    assert logreg.parse_ngram_range("1-3") == (1, 3) == logreg.parse_ngram_range([1, 3])
    bigrams, _, _ = logreg.vectorize(dataset, (2, 3), False, "tf")
    counts, _, _ = logreg.vectorize(dataset, (1, 1), False, "tf")
    kept, _, _ = logreg.vectorize(dataset, (1, 1), True, "binary")
    tfidf, dev, _ = logreg.vectorize(dataset, (1, 1), False, "tfidf")
    assert counts.max() > 1 and kept.max() == 1  # counts vs 0/1
    assert kept.shape[1] < counts.shape[1]  # the stop words are gone
    assert bigrams.shape[1] > counts.shape[1]
    norms = np.sqrt(np.asarray(tfidf.multiply(tfidf).sum(axis=1))).ravel()
    assert np.allclose(norms[norms > 0], 1.0)
    assert dev.shape == (len(dataset.dev), tfidf.shape[1])  # the vocabulary is the training split's


@pytest.mark.slow  # trains the model on real data
def test_logreg_other_sst_datasets_and_pairs(shared_data_dir):
    for dataset in ("sst2_trees", "sst2"):
        data = _data(shared_data_dir, dataset, train_size=2000)
        result = logreg.train({}, seed=0, device="cpu", reporter=Reporter(), data=data)
        assert result["val_accuracy"] > load_dataset(dataset, data).majority_baseline("dev") + MARGIN
    with pytest.raises(ValueError, match="data.dataset"):
        logreg.train({}, seed=0, device="cpu", reporter=Reporter(), data=_data(shared_data_dir, "snli"))


def test_logreg_does_not_import_torch():
    code = "import sys, showwork_models.logreg; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO_ROOT)


# --- the search spaces ---------------------------------------------------------------------------


@pytest.mark.parametrize("name, family, module", [("sst5_cnn.yaml", "cnn", cnn), ("sst5_logreg.yaml", "logreg", logreg)])
def test_search_spaces_load_and_their_samples_validate(name, family, module):
    spec = load_search_spec(SPACES / name)
    assert spec.family == family and spec.data["dataset"] == "sst5"
    assert spec.num_trials == 50  # Dodge et al.: 50 trials per model
    assert resolve_family(spec.family) is module.train
    for index in range(50):
        config = nest(trial_config(spec.space, spec.seed, index))
        module.validate_config(config)


def test_search_spaces_hold_the_paper_bounds():
    space = load_search_spec(SPACES / "sst5_cnn.yaml").space.to_dict()
    assert space["lr"] == {"distribution": "loguniform", "low": 1e-6, "high": 0.1}
    assert space["dropout"] == {"distribution": "uniform", "low": 0.0, "high": 0.5}
    assert space["max_filter_size"] == {"distribution": "int_uniform", "low": 3, "high": 6}
    assert space["num_filters"] == {"distribution": "int_uniform", "low": 64, "high": 512}
    assert space["hidden_dim"] == {"distribution": "int_uniform", "low": 64, "high": 512}
    assert [space[k]["value"] for k in ("batch_size", "epochs", "patience", "lr_reduce_patience", "lr_reduce_factor")] == [64, 50, 10, 2, 0.5]
    space = load_search_spec(SPACES / "sst5_logreg.yaml").space.to_dict()
    assert space["C"] == {"distribution": "uniform", "low": 0.0, "high": 1.0}
    assert space["tol"] == {"distribution": "loguniform", "low": 1e-4, "high": 1e-2}
    assert set(space["ngram_range"]["choices"]) == {"1-2", "1-3", "2-3"}
    assert set(space["weight"]["choices"]) == {"tf", "tfidf", "binary"}
    assert set(space["penalty"]["choices"]) == {"l1", "l2"}
    assert space["max_iter"]["value"] == 100


def test_a_sampled_cnn_config_builds():
    spec = load_search_spec(SPACES / "sst5_cnn.yaml")
    config = nest(trial_config(spec.space, spec.seed, 0))
    embedding = np.zeros((10, 50), dtype=np.float32)
    model = cnn.build_model(config, embedding, 5)
    assert model.sizes == tuple(range(1, config["max_filter_size"] + 1))
    assert model.projection.out_features == config["hidden_dim"]

"""``split_sizes``: the examples per split a trial used, as every built-in family returns them.

One source (:meth:`showwork_models.data.TextDataset.sizes`), one way into a torch family's result
(:meth:`showwork_models.training.FitResult.metrics`); the family tests check each family's value.
"""

from __future__ import annotations

import json

import pytest

from showwork.errors import InputError
from showwork.trainable import Reporter, check_outcome
from showwork_models import bow
from showwork_models.data import load_dataset
from showwork_models.training import FitResult


def test_sizes_are_those_after_the_dev_carve_and_the_train_subsample(shared_data_dir):
    full = load_dataset("sst2", {"dir": str(shared_data_dir), "dev_size": 500})
    used = load_dataset("sst2", {"dir": str(shared_data_dir), "dev_size": 500, "train_size": 300})
    # GLUE train is split into dev (dev_size) and train (the rest); test is GLUE dev, untouched.
    assert used.sizes() == {"train": 300, "dev": 500, "test": len(full.test)}
    assert full.sizes()["train"] > 300
    assert all(type(size) is int for size in used.sizes().values())  # plain ints: JSON and MLflow take them
    assert json.loads(json.dumps(used.sizes())) == used.sizes()


def test_a_train_size_above_the_split_keeps_the_whole_split(shared_data_dir):
    whole = load_dataset("sst5", {"dir": str(shared_data_dir)})
    larger = load_dataset("sst5", {"dir": str(shared_data_dir), "train_size": len(whole.train) + 1})
    assert larger.sizes() == {"train": len(whole.train), "dev": len(whole.dev), "test": len(whole.test)}


def test_fit_result_returns_the_split_sizes_as_ints():
    result = FitResult(best_epoch=2, dev={"accuracy": 0.8}, test={"accuracy": 0.7}, epochs_run=4)
    sizes = {"train": 300, "dev": 500, "test": 872}
    out = result.metrics(parameters=10, split_sizes=sizes)
    assert out["split_sizes"] == sizes and all(type(v) is int for v in out["split_sizes"].values())
    assert out["val_accuracy"] == 0.8 and out["test_accuracy"] == 0.7 and out["parameters"] == 10.0
    sizes["train"] = 0
    assert out["split_sizes"]["train"] == 300  # a copy, not the caller's mapping
    assert "split_sizes" not in result.metrics(parameters=10)


def test_the_trainable_contract_keeps_split_sizes_a_mapping_of_ints():
    import numpy as np

    out = check_outcome({"val_accuracy": 1, "split_sizes": {"train": np.int64(300), "dev": 500, "test": 0}})
    assert out == {"val_accuracy": 1.0, "split_sizes": {"train": 300, "dev": 500, "test": 0}}
    assert type(out["val_accuracy"]) is float and all(type(v) is int for v in out["split_sizes"].values())
    with pytest.raises(InputError, match="'split_sizes.train'"):
        check_outcome({"split_sizes": {"train": "300"}})
    with pytest.raises(InputError, match="'split_sizes.dev'"):
        check_outcome({"split_sizes": {"dev": True}})


def test_bow_returns_the_sizes_of_the_splits_it_used(shared_data_dir):
    data = {"dataset": "sst2", "dir": str(shared_data_dir), "train_size": 400, "dev_size": 300}
    config = {"lr": 0.1, "epochs": 1, "hash_bits": 12, "ngrams": 1}
    out = bow.train(config, seed=0, device="cpu", reporter=Reporter(), data=data)
    assert out["split_sizes"] == {"train": 400, "dev": 300, "test": len(load_dataset("sst2", data).test)}
    out["split_sizes"]["train"] = -1  # the caller's copy: the cached features' sizes stay right
    assert bow.train(config, seed=0, device="cpu", reporter=Reporter(), data=data)["split_sizes"]["train"] == 400


def test_bow_records_its_default_train_size(shared_data_dir):
    # bow subsamples SST-2 to 8,000 sentences unless data.train_size says otherwise: the record must say so.
    data = {"dataset": "sst2", "dir": str(shared_data_dir), "dev_size": 300}
    out = bow.train({"lr": 0.1, "epochs": 1, "hash_bits": 10, "ngrams": 1}, seed=0, device="cpu", reporter=Reporter(), data=data)
    assert out["split_sizes"]["train"] == 8000 < len(load_dataset("sst2", data).train)

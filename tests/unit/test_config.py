"""A family's inputs (models/config.py): the PARAMS table, check_config, and load_task."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from showwork_models.config import Param, check_config, load_task

from helpers import REPO_ROOT


def _range(value):
    if not isinstance(value, str) or value.count("-") != 1:
        raise ValueError(f"must look like 'a-b' (got {value!r}).")
    low, high = (int(part) for part in value.split("-"))
    return low, high


PARAMS = {
    "lr": Param(0.1, float, low=0.0, low_open=True),
    "layers": Param(1, int, low=1, high=3),
    "mode": Param("a", str, choices=("a", "b")),
    "flag": Param(False, bool),
    "width": Param(None, int, low=1, optional=True),
    "span": Param("1-2", tuple, parse=_range),
}


def test_defaults_are_checked_and_filled_in():
    assert check_config({}, PARAMS, "toy") == {"lr": 0.1, "layers": 1, "mode": "a", "flag": False, "width": None, "span": (1, 2)}
    config = check_config({"lr": 1, "layers": np.int64(3), "flag": np.bool_(True), "span": "2-4"}, PARAMS, "toy")
    assert config["lr"] == 1.0 and isinstance(config["lr"], float)
    assert config["layers"] == 3 and type(config["layers"]) is int and config["flag"] is True and config["span"] == (2, 4)


def test_unknown_keys_are_all_named_with_the_known_ones():
    with pytest.raises(ValueError, match=r"toy config: unknown keys 'lrr', 'modes'; known keys: lr, layers, mode"):
        check_config({"lrr": 1, "modes": "a"}, PARAMS, "toy")
    with pytest.raises(ValueError, match="must be a mapping"):
        check_config([("lr", 1)], PARAMS, "toy")


@pytest.mark.parametrize(
    "key, value, message",
    [
        ("lr", 0.0, r"must be in \(0.0, inf\]"),
        ("lr", float("nan"), "must be a finite number"),
        ("lr", "0.1", "must be a finite number"),
        ("layers", 4, r"must be in \[1, 3\]"),
        ("layers", 2.0, "must be an integer"),
        ("layers", True, "must be an integer"),
        ("mode", "c", "must be one of a, b"),
        ("flag", "yes", "must be true or false"),
        ("width", 0, r"must be in \[1, inf\]"),
        ("layers", None, "must not be empty"),
        ("span", "2", "must look like 'a-b'"),
        ("span", None, "must not be empty"),
    ],
)
def test_a_bad_value_names_its_family_and_key(key, value, message):
    with pytest.raises(ValueError, match=f"toy config key '{key}' {message}"):
        check_config({key: value}, PARAMS, "toy")


def test_parse_replaces_the_type_choices_and_bounds():
    param = Param((1, 1), tuple, low=5, choices=("x",), parse=lambda value: tuple(value))
    assert param.check("toy", "pair", [1, 2]) == (1, 2)  # neither the bound nor the choices apply
    assert Param(None, tuple, optional=True, parse=_range).check("toy", "span", None) is None


def test_config_is_torch_free():
    code = "import sys, showwork_models.config; assert 'torch' not in sys.modules, 'torch imported'"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO_ROOT)


def test_load_task_refuses_the_kinds_a_family_does_not_take(shared_data_dir):
    data = {"dir": str(shared_data_dir), "train_size": 50}
    assert load_task({**data, "dataset": "sst5"}, "toy").name == "sst5"
    assert load_task(data, "toy", default_dataset="sst2_trees").name == "sst2_trees"
    assert load_task({**data, "dataset": "sst5"}, "toy", default_dataset="sst2_trees").name == "sst5"
    with pytest.raises(ValueError, match="data.dataset: the toy family classifies single texts into one class; snli has sentence pairs"):
        load_task({**data, "dataset": "snli"}, "toy")
    with pytest.raises(ValueError, match="data.dataset: the toy family classifies single texts into one class; reuters has multi-label"):
        load_task({**data, "dataset": "reuters"}, "toy")
    assert load_task({**data, "dataset": "reuters"}, "toy", multilabel_ok=True).multilabel
    with pytest.raises(ValueError, match="data.dataset: the toy family classifies single texts; snli has sentence pairs"):
        load_task({**data, "dataset": "snli"}, "toy", multilabel_ok=True)
    assert load_task({**data, "dataset": "snli"}, "toy", pairs_ok=True).pairs
    with pytest.raises(ValueError, match="data.dataset: unknown dataset None"):
        load_task(data, "toy")

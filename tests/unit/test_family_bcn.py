"""The BCN family (models/bcn.py) and its Dodge et al. search space (search_spaces/sst2_bcn.yaml).

The configuration, YAML and missing-dependency tests need no allennlp-light and run in every
environment. The model and training tests need it: they run in the BCN environment
(``.venv-bcn/bin/python -m pytest tests/unit/test_family_bcn.py``, see the Makefile) and skip elsewhere.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from showwork.families import resolve_family
from showwork.sampling import nest, trial_config
from showwork.space import load_search_spec
from showwork.trainable import Reporter
from showwork_models import bcn
from showwork_models.training import OptimizerStep

SPACE = Path(__file__).resolve().parents[2] / "search_spaces" / "sst2_bcn.yaml"
# Small dimensions and a learning rate that learns within one epoch of 2,000 sentences.
SMALL = dict(
    pre_encode_hidden_dim=16,
    encoder_hidden_dim=16,
    integrator_hidden_dim=16,
    output_layers=1,
    output_dim=16,
    embedding_dropout=0.1,
    pre_encode_dropout=0.1,
    integrator_dropout=0.1,
    output_dropout=0.1,
    lr=0.003,
    batch_size=16,
)

needs_allennlp = pytest.mark.skipif(
    importlib.util.find_spec("allennlp_light") is None,
    reason="allennlp-light is not installed (it lives in the BCN environment: pip install 'showwork-tuning[bcn]')",
)


pytestmark = pytest.mark.usefixtures("one_torch_thread")  # tests/conftest.py


@pytest.fixture()
def no_allennlp(monkeypatch):
    """Make ``import allennlp_light`` fail, as in an environment without it."""
    monkeypatch.setitem(sys.modules, "allennlp_light", None)


def data_for(root: Path, **extra) -> dict:
    return {"dataset": "sst2_trees", "dir": str(root), **extra}


# --- configuration (no allennlp-light needed) ------------------------------------------------------


def test_defaults_are_the_reference_sizes_and_dodge_settings():
    config = bcn.validate_config({})
    assert config["pre_encode_hidden_dim"] == config["encoder_hidden_dim"] == config["integrator_hidden_dim"] == 300
    assert (config["batch_size"], config["epochs"], config["patience"]) == (64, 50, 10)
    assert (config["lr_reduce_patience"], config["lr_reduce_factor"]) == (2, 0.5)
    assert config["embedding_mode"] == "nonstatic" and config["elmo"] is False


def test_unknown_key_is_named():
    with pytest.raises(ValueError, match="encoder_hiden_dim"):
        bcn.validate_config({"encoder_hiden_dim": 100})


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("embedding_dropout", 1.0),
        ("output_dropout", -0.1),
        ("lr", 0.0),
        ("grad_norm", -1.0),
        ("pool_size", 0),
        ("encoder_layers", 0),
        ("output_dim", 64.0),  # an integer is required
        ("pre_encode_activation", "sigmoid"),
        ("embedding_mode", "frozen"),
        ("lr_reduce_factor", 1.5),
        ("batch_size", True),
    ],
)
def test_bad_value_is_named(key, value):
    with pytest.raises(ValueError, match=repr(key)):
        bcn.validate_config({key: value})


@pytest.mark.parametrize("config", [{"elmo": True}, {"elmo_dropout": 0.2}, {"USE_INTEGRATOR_OUTPUT_ELMO": 0}])
def test_elmo_is_refused_clearly(config):
    with pytest.raises(ValueError, match="ELMo is not implemented"):
        bcn.validate_config(config)
    assert bcn.validate_config({"elmo": False})["elmo"] is False


def clipped_step(grad_norm) -> float:
    """The length of one SGD step (lr 1) on a gradient of norm 50, with the clipping a BCN config of this
    ``grad_norm`` gives its optimizer step (train: ``OptimizerStep(..., clip_norm=config["grad_norm"])``)."""
    weight = torch.nn.Parameter(torch.zeros(2))
    clip_norm = bcn.validate_config({"grad_norm": grad_norm})["grad_norm"]
    step = OptimizerStep(torch.optim.SGD([weight], lr=1.0), torch.device("cpu"), clip_norm=clip_norm)
    step((weight * torch.tensor([30.0, 40.0])).sum())  # gradient (30, 40)
    return float(weight.detach().norm())


def test_grad_norm_none_disables_clipping():
    assert bcn.validate_config({"grad_norm": None})["grad_norm"] is None
    assert clipped_step(None) == pytest.approx(50.0)  # the whole gradient
    assert clipped_step(5.0) == pytest.approx(5.0)  # clipped to the norm given
    assert clipped_step(bcn.validate_config({})["grad_norm"]) == pytest.approx(5.0)  # the default clips


def test_family_resolves_without_allennlp(no_allennlp):
    assert resolve_family("bcn") is bcn.train


def test_missing_allennlp_names_the_extra(no_allennlp, shared_data_dir):
    with pytest.raises(ImportError, match=r"pip install 'showwork-tuning\[bcn\]'"):
        bcn.build_model({}, np.zeros((10, 50), dtype=np.float32), 2)
    with pytest.raises(ImportError, match="separate environment"):
        bcn.train({"epochs": 1}, seed=0, device="cpu", reporter=Reporter(), data=data_for(shared_data_dir))
    with pytest.raises(ValueError, match="'lr'"):  # a bad config is still reported first
        bcn.train({"lr": -1.0}, seed=0, device="cpu", reporter=Reporter(), data=data_for(shared_data_dir))


# --- the search space (no allennlp-light needed) ---------------------------------------------------


def test_space_has_dodge_et_al_bounds():
    spec = load_search_spec(SPACE)
    assert spec.family == "bcn" and spec.data == {"dataset": "sst2_trees"}
    space = spec.space.to_dict()
    assert space["lr"] == {"distribution": "loguniform", "low": 1e-6, "high": 0.1}
    assert space["grad_norm"] == {"distribution": "uniform", "low": 5.0, "high": 10.0}
    for key in ("embedding_dropout", "pre_encode_dropout", "integrator_dropout", "output_dropout"):
        assert space[key] == {"distribution": "uniform", "low": 0.0, "high": 0.5}, key
    for key in ("pre_encode_hidden_dim", "encoder_hidden_dim", "integrator_hidden_dim", "output_dim"):
        assert space[key] == {"distribution": "int_uniform", "low": 64, "high": 511}, key  # np.random.randint(64, 512)
    for key in ("pre_encode_layers", "encoder_layers", "integrator_layers", "output_layers"):
        assert space[key]["choices"] == [1, 2, 3], key
    assert space["pool_size"] == {"distribution": "int_uniform", "low": 3, "high": 6}
    assert space["seed"] == {"distribution": "int_uniform", "low": 0, "high": 9999}
    fixed = {k: v["value"] for k, v in space.items() if v["distribution"] == "constant"}
    assert fixed == {"embedding_mode": "nonstatic", "batch_size": 64, "epochs": 50, "patience": 10, "lr_reduce_patience": 2, "lr_reduce_factor": 0.5}


def test_sampled_configs_are_valid():
    spec = load_search_spec(SPACE)
    for index in range(50):
        config = bcn.validate_config(nest(trial_config(spec.space, spec.seed, index)))
        assert 3 <= config["pool_size"] <= 6 and 1e-6 <= config["lr"] < 0.1


# --- the model (allennlp-light) --------------------------------------------------------------------


def expected_parameters(vocab: int, dim: int, classes: int, c: dict) -> int:
    def bilstm(inputs: int, hidden: int, layers: int) -> int:
        return sum(2 * (4 * hidden * ((inputs if layer == 0 else 2 * hidden) + hidden) + 8 * hidden) for layer in range(layers))

    h, e, i, o, p = c["pre_encode_hidden_dim"], c["encoder_hidden_dim"], c["integrator_hidden_dim"], c["output_dim"], c["pool_size"]
    feedforward = dim * h + h + (c["pre_encode_layers"] - 1) * (h * h + h)
    maxout = (8 * i * o * p + o * p) + (c["output_layers"] - 1) * (o * o * p + o * p)
    return vocab * dim + feedforward + bilstm(h, e, c["encoder_layers"]) + bilstm(6 * e, i, c["integrator_layers"]) + (2 * i + 1) + maxout + o * classes + classes


@needs_allennlp
@pytest.mark.parametrize(
    "config",
    [
        {},
        dict(pre_encode_layers=2, pre_encode_hidden_dim=20, encoder_hidden_dim=12, encoder_layers=3, integrator_hidden_dim=9, integrator_layers=2, output_layers=3, output_dim=7, pool_size=5),
    ],
)
def test_parameter_count_and_shapes(config):
    c = bcn.validate_config(config)
    model = bcn.build_model(config, np.random.default_rng(0).normal(size=(100, 50)).astype(np.float32), 3)
    assert sum(p.numel() for p in model.parameters()) == expected_parameters(100, 50, 3, c)
    ids = torch.randint(1, 100, (4, 9))
    lengths = torch.tensor([9, 5, 1, 3])
    model.eval()
    assert model.pooled(ids, lengths).shape == (4, 8 * c["integrator_hidden_dim"])
    logits = model(ids, lengths)
    assert logits.shape == (4, 3) and torch.isfinite(logits).all()


@needs_allennlp
def test_padding_and_batch_do_not_change_a_sentence():
    torch.manual_seed(0)
    model = bcn.build_model(dict(encoder_layers=2, integrator_layers=2, **SMALL), np.random.default_rng(0).normal(size=(50, 50)).astype(np.float32), 2)
    model.eval()
    lengths = torch.tensor([7, 3, 1, 5])
    ids = torch.randint(1, 50, (4, 7))
    ids[torch.arange(7)[None, :] >= lengths[:, None]] = 0
    together = model(ids, lengths)
    with torch.no_grad():
        for row in range(4):
            alone = model(ids[row : row + 1, : lengths[row]], lengths[row : row + 1])
            assert torch.allclose(together[row], alone[0], atol=1e-5), row
        garbage = ids.clone()
        garbage[ids == 0] = 17  # tokens past a sentence's length are ignored
        assert torch.allclose(model(garbage, lengths), together, atol=1e-6)


@needs_allennlp
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_mixed_precision_forward_and_backward(dtype):
    # CUDA runs under autocast; CPU autocast stands in for it (allennlp's masked_softmax refuses bfloat16).
    model = bcn.build_model(SMALL, np.random.default_rng(0).normal(size=(40, 50)).astype(np.float32), 2)
    with torch.autocast("cpu", dtype=dtype):
        logits = model(torch.randint(1, 40, (3, 6)), torch.tensor([6, 2, 4]))
    assert logits.dtype == dtype  # the model ran in reduced precision, not cast back to float32 inside
    loss = torch.nn.functional.cross_entropy(logits.float(), torch.tensor([0, 1, 1]))
    loss.backward()
    assert torch.isfinite(loss) and all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


@needs_allennlp
def test_static_embeddings_are_frozen():
    matrix = np.random.default_rng(0).normal(size=(30, 50)).astype(np.float32)
    assert not bcn.build_model({"embedding_mode": "static"}, matrix, 2).embedding.weight.requires_grad
    assert bcn.build_model({}, matrix, 2).embedding.weight.requires_grad


# --- training (allennlp-light, real SST-2 trees) ---------------------------------------------------


@pytest.mark.slow  # trains the model on real data
@needs_allennlp
def test_one_epoch_beats_the_majority_baseline_and_reports(shared_data_dir):
    from showwork_models.data import load_dataset

    data = data_for(shared_data_dir, train_size=2000)
    majority = load_dataset("sst2_trees", data).majority_baseline("dev")
    reporter = Reporter()
    result = bcn.train({**SMALL, "epochs": 1}, seed=0, device="cpu", reporter=reporter, data=data)
    assert result["val_accuracy"] > majority + 0.08, (result, majority)
    assert 0.5 < result["test_accuracy"] <= 1.0
    assert result["epochs_run"] == 1 and result["best_epoch"] == 0 and result["parameters"] > 0
    used = load_dataset("sst2_trees", data)
    assert result["split_sizes"] == {"train": 2000, "dev": len(used.dev), "test": len(used.test)}
    assert [row["epoch"] for row in reporter.history] == [0]
    assert reporter.history[0]["val_accuracy"] == result["val_accuracy"]
    assert np.isfinite(reporter.history[0]["train_loss"])


@pytest.mark.slow  # trains the model on real data
@needs_allennlp
@pytest.mark.parametrize("grad_norm", [None, 7.5])
def test_training_clips_with_the_configs_grad_norm(grad_norm, shared_data_dir, monkeypatch):
    made = []

    class RecordingStep(OptimizerStep):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self.clip_norm)

    monkeypatch.setattr(bcn, "OptimizerStep", RecordingStep)
    bcn.train({**SMALL, "epochs": 1, "grad_norm": grad_norm}, seed=0, device="cpu", reporter=Reporter(),
              data=data_for(shared_data_dir, train_size=50))
    assert made == [grad_norm]  # None: train's one optimizer step clips nothing (test_grad_norm_none_disables_clipping)


@pytest.mark.slow  # trains the model on real data
@needs_allennlp
def test_same_seed_same_score(shared_data_dir):
    data = data_for(shared_data_dir, train_size=200)
    config = {**SMALL, "epochs": 2, "lr_reduce_patience": 0, "seed": 7}
    runs = [Reporter(), Reporter()]
    first, second = (bcn.train(config, seed=3, device="cpu", reporter=r, data=data) for r in runs)
    assert first == second
    assert runs[0].history == runs[1].history and len(runs[0].history) == 2


@needs_allennlp
def test_bad_data_and_embedding_dim(shared_data_dir):
    with pytest.raises(ValueError, match="sentence pairs"):
        bcn.train({"epochs": 1}, seed=0, device="cpu", reporter=Reporter(), data={"dataset": "snli", "dir": str(shared_data_dir)})
    with pytest.raises(ValueError, match="'embedding_dim'"):
        bcn.train({"embedding_dim": 300}, seed=0, device="cpu", reporter=Reporter(), data=data_for(shared_data_dir, train_size=50))

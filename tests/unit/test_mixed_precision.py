"""The mixed-precision path of the torch families, exercised on the CPU.

On CUDA every family runs its forward passes under ``showwork_models.training.autocast`` (bfloat16 or
float16). CI has no GPU, so these tests swap that context for CPU autocast in bfloat16 — the same
reduced-precision activations, logits and losses the CUDA path produces — and train each family
for one short epoch: it must finish with finite losses and a sensible score, and its numbers must
differ from the float32 run (proof that the reduced precision was really in effect).
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from showwork.trainable import Reporter  # noqa: E402
from showwork_models import cnn, deberta, mlp, training  # noqa: E402

pytestmark = [pytest.mark.usefixtures("one_torch_thread"), pytest.mark.slow]


def cpu_bfloat16(device):
    return torch.autocast(device_type="cpu", dtype=torch.bfloat16)


# the fixture `tiny_deberta` (a tiny random checkpoint, built once per session) is in conftest.py


def cases(shared_data_dir, tiny_deberta):
    root = str(shared_data_dir)
    return {
        "cnn": (cnn.train, {"epochs": 1, "num_filters": 16, "max_filter_size": 3}, {"dataset": "sst5", "dir": root, "train_size": 300}, "val_accuracy"),
        "mlp": (mlp.train, {"epochs": 1, "hidden_dim": 32}, {"dataset": "reuters", "dir": root, "train_size": 200}, "val_f1"),
        "deberta": (deberta.train, {"epochs": 1, "batch_size": 16, "max_length": 32, "evals_per_epoch": 1}, {"dataset": "snli", "dir": root, "train_size": 160, "model": str(tiny_deberta)}, "val_accuracy"),
    }


# Not lstm: oneDNN has no bfloat16 primitive for its packed LSTM on this CPU ("could not create a
# primitive descriptor for the LSTM forward propagation primitive"), while cuDNN's has one; the BCN
# tests run their LSTMs under autocast unpacked (tests/unit/test_family_bcn.py).
@pytest.mark.parametrize("family", ["cnn", "mlp", "deberta"])
def test_family_trains_under_reduced_precision(family, shared_data_dir, tiny_deberta, monkeypatch):
    train, config, data, metric = cases(shared_data_dir, tiny_deberta)[family]
    full = Reporter()
    train(dict(config), seed=0, device="cpu", reporter=full, data=data)
    monkeypatch.setattr(training, "autocast", cpu_bfloat16)
    monkeypatch.setattr(deberta, "autocast", cpu_bfloat16)
    reduced = Reporter()
    out = train(dict(config), seed=0, device="cpu", reporter=reduced, data=data)
    assert 0.0 <= out[metric] <= 1.0
    assert all(math.isfinite(row["train_loss"]) for row in reduced.history)
    assert [row["train_loss"] for row in reduced.history] != [row["train_loss"] for row in full.history]

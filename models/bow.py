"""Bag-of-words logistic regression on SST-2: a small, real, CPU-only family (numpy + scipy).

Features are hashed unigram and bigram counts (``2**hash_bits`` buckets, sublinear tf), the model
is L2-regularised logistic regression trained by minibatch SGD with momentum; the dev accuracy of
every epoch is reported and the best epoch is kept (early stopping with ``patience``).

Hyperparameters (``config``): ``lr``, ``l2``, ``batch_size``, ``momentum``, ``epochs``,
``patience``, ``hash_bits``, ``ngrams`` (1 or 2). Data (``data``): GLUE SST-2 through
:func:`showwork_models.data.load_dataset` (``dir`` or $SHOWWORK_DATA_DIR, else the hub), ``train_size``
(default 8000 sentences, to keep a trial a few seconds on CPU).

Returns ``val_accuracy`` (best dev epoch), ``test_accuracy`` (at that epoch), ``best_epoch``,
``parameters`` and ``split_sizes``: the examples of each split used, ``{"train": n, "dev": n,
"test": n}`` after ``train_size`` (:meth:`showwork_models.data.TextDataset.sizes`).
"""

from __future__ import annotations

import re
import zlib
from functools import lru_cache

import numpy as np
from scipy import sparse

from .data import check_data as check_dataset
from .data import load_dataset

_TOKEN = re.compile(r"[a-z0-9']+")

__all__ = ["check_data", "train"]  # check_data: the pre-flight hook showwork search calls


def check_data(data: dict) -> None:
    """The pre-flight hook (:func:`showwork_models.data.check_data`) of this family's dataset, SST-2 unless ``data`` names one."""
    check_dataset({"dataset": "sst2", **data})


def _features(sentences: list[str], bits: int, ngrams: int) -> sparse.csr_matrix:
    rows, cols = [], []
    mask = (1 << bits) - 1
    for r, text in enumerate(sentences):
        tokens = _TOKEN.findall(text.lower())
        grams = tokens + ([a + " " + b for a, b in zip(tokens, tokens[1:])] if ngrams >= 2 else [])
        for g in grams:
            rows.append(r)
            cols.append(zlib.crc32(g.encode()) & mask)
    values = np.ones(len(rows))
    x = sparse.csr_matrix((values, (rows, cols)), shape=(len(sentences), 1 << bits))
    x.sum_duplicates()
    x.data = np.log1p(x.data)  # sublinear term frequency
    return x


@lru_cache(maxsize=4)
def _dataset(data_items: tuple, bits: int, ngrams: int):
    """The split sizes and the (features, labels) of train, dev and test (cached: do not mutate the sizes)."""
    dataset = load_dataset("sst2", dict(data_items))
    splits = tuple((_features(split.texts, bits, ngrams), split.labels) for split in (dataset.train, dataset.dev, dataset.test))
    return dataset.sizes(), splits


def _accuracy(w: np.ndarray, b: float, x: sparse.csr_matrix, y: np.ndarray) -> float:
    return float(np.mean(((x @ w + b) > 0).astype(int) == y))


def train(config: dict, *, seed: int, device: str, reporter, data: dict) -> dict:
    """Train and return ``val_accuracy`` (best dev epoch) and ``test_accuracy`` (at that epoch)."""
    data = {"train_size": 8000, **data}
    data_items = tuple(sorted((k, v) for k, v in data.items() if k != "dataset"))
    sizes, ((x, y), (xd, yd), (xt, yt)) = _dataset(data_items, int(config.get("hash_bits", 16)), int(config.get("ngrams", 2)))
    rng = np.random.default_rng(seed)
    lr, l2 = float(config["lr"]), float(config.get("l2", 0.0))
    batch, momentum = int(config.get("batch_size", 32)), float(config.get("momentum", 0.9))
    epochs, patience = int(config.get("epochs", 5)), int(config.get("patience", 2))
    w = np.zeros(x.shape[1])
    b = 0.0
    vw, vb = np.zeros_like(w), 0.0
    best = (-1.0, 0.0, -1)  # dev accuracy, test accuracy, epoch
    for epoch in range(epochs):
        order = rng.permutation(x.shape[0])
        for start in range(0, len(order), batch):
            idx = order[start : start + batch]
            xb, yb = x[idx], y[idx]
            p = 1.0 / (1.0 + np.exp(-np.clip(xb @ w + b, -30, 30)))
            g = p - yb
            grad_w = xb.T @ g / len(idx) + l2 * w
            vw = momentum * vw - lr * grad_w
            vb = momentum * vb - lr * float(g.mean())
            w += vw
            b += vb
        dev_acc = _accuracy(w, b, xd, yd)
        reporter(epoch=epoch, val_accuracy=dev_acc)
        if dev_acc > best[0]:
            best = (dev_acc, _accuracy(w, b, xt, yt), epoch)
        elif epoch - best[2] >= patience:
            break
    return {
        "val_accuracy": best[0],
        "test_accuracy": best[1],
        "best_epoch": float(best[2]),
        "parameters": float(w.size + 1),
        "split_sizes": dict(sizes),
    }

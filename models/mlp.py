"""Document MLP over bag-of-words / TF-IDF features: the Reuters MLP of Tang et al. (2020), in Hedwig.

The model is a multi-layer perceptron over a document's sparse bag-of-words vector::

    x (|V| features, TF-IDF)  ->  dropout  ->  [Linear -> ReLU -> dropout] x num_layers  ->  Linear (classes)

Hedwig's MLP (Adhikari et al. 2019, ``models/mlp``) is dropout on sklearn ``TfidfVectorizer`` features
followed by one linear layer; the search of Tang et al. (2020, "Showing your work doesn't always work",
castorini/meanmax ``confs/hedwig_reuters_mlp_search.json``) adds a hidden layer of ``hidden_dim`` units.
The first layer is an ``nn.EmbeddingBag`` (``mode="sum"``) whose per-sample weights are the feature
values, so ``x @ W`` is computed from the non-zero entries only; dropout on the input is dropout on
those weights, which is exactly dropout on the dense vector (zeros stay zero). Its weights are
initialised like an ``nn.Linear`` with ``|V|`` inputs.

Multi-label data (Reuters, 90 ModApte topics): ``BCEWithLogitsLoss``, a topic is predicted when its
sigmoid exceeds 0.5 (logit > 0), the metric is micro-F1 (:func:`showwork_models.training.micro_f1`) and the
trainable returns ``val_f1`` / ``test_f1``. Single-label datasets are accepted too (cross-entropy,
``val_accuracy`` / ``test_accuracy``); sentence-pair datasets are not.

Features
--------
Computed once per process for each (encoded dataset, ``features``, ``max_features``) from the token
ids of :func:`showwork_models.text.encode_dataset` (vocabulary of the training split, most frequent first;
``<pad>`` and ``<unk>`` are not features):

- ``tfidf``: raw counts times the smoothed idf of the training split, ``ln((1 + n) / (1 + df)) + 1``,
  rows scaled to unit L2 norm (sklearn's ``TfidfVectorizer`` defaults, as Hedwig; Hedwig also drops
  NLTK's English stop words, which is not done here);
- ``binary``: 1 where a word occurs; ``count``: raw counts (neither is normalised).

Hyperparameters (``config``)
----------------------------
batch_size : int, default 32
    Documents per Adam step (Tang et al.: {16, 32, 64}).
lr : float, default 0.001
    Adam's learning rate (Tang et al.: fixed at 0.001).
dropout : float in [0, 1), default 0.5
    Dropout on the input features and after every hidden layer (Tang et al.: U[0.05, 0.7]).
hidden_dim : int >= 1, default 512
    Units per hidden layer (Tang et al.: U{256..768}).
num_layers : int >= 1, default 1
    Hidden layers (Tang et al.: 1).
features : {"tfidf", "binary", "count"}, default "tfidf"
max_features : int >= 1 or None, default None
    Keep the ``max_features`` most frequent training words; None: the whole training vocabulary
    (about 30,850 words on Reuters).
epochs : int >= 1, default 50
    Maximum number of epochs (Hedwig's default).
patience : int >= 0, default 5
    Early stopping: epochs without a dev improvement (0: never stop early).
seed : int in [0, 2**63) or None, default None
    The ``seed`` hyperparameter of Tang et al.'s space (U{0..10^7}). Training is seeded by the
    trial's seed from showwork; when ``config["seed"]`` is given it is mixed into it
    (:func:`showwork_models.config.effective_seed`), so both change the run and a configuration plus a
    trial seed still determine the score.

Unknown keys and out-of-range values raise a ``ValueError`` that names the key (:mod:`showwork_models.config`).

Data (``data``)
---------------
``dataset`` (default ``reuters``), ``dir`` / ``$SHOWWORK_DATA_DIR``, ``source``, ``train_size``,
``dev_size``, ``split_seed``: passed to :func:`showwork_models.data.load_dataset`.

Returns
-------
dict
    ``val_f1`` (best dev epoch), ``test_f1`` (same weights), ``best_epoch``, ``epochs_run``,
    ``parameters`` and ``split_sizes``: the examples of each split used, ``{"train": n, "dev": n,
    "test": n}`` after ``train_size`` (see :meth:`showwork_models.training.FitResult.metrics` and
    :meth:`showwork_models.data.TextDataset.sizes`).

Devices
-------
CPU: bit-identical scores for the same config and seed. CUDA: mixed precision (:func:`autocast`).
One epoch on the full Reuters training split (5,827 documents, ~30,850 features, hidden 512, batch 32:
15.8 M parameters) takes about 12 s of CPU time on one core, dev evaluation included; the dense Adam
update of the |V| x hidden input layer dominates (fused Adam, several times faster here than the default).

References
----------
Tang, R., Lee, J., Xin, J., Liu, X., Yu, Y., Lin, J. (2020). Showing your work doesn't always work. ACL.
Adhikari, A., Ram, A., Tang, R., Lin, J. (2019). Rethinking complex neural network architectures for
document classification. NAACL. (Hedwig: github.com/castorini/hedwig)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from scipy import sparse
from torch import nn

from .config import Param, check_config, effective_seed, load_task
from .data import check_data
from .text import EncodedDataset, EncodedSplit, encode_dataset
from .training import (
    OptimizerStep,
    count_parameters,
    fit,
    loss_and_metric,
    minibatches,
    predict,
    resolve_device,
    run_training_epoch,
    seed_everything,
    targets_of,
)

__all__ = [
    "DocumentMLP",
    "FEATURES",
    "PARAMS",
    "build_model",
    "check_data",
    "document_features",
    "train",
    "validate_config",
]

FEATURES = ("tfidf", "binary", "count")
EVAL_BATCH_SIZE = 512


# --- features ----------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class DocumentFeatures:
    """CSR feature matrices (documents x features, float32) of the three splits."""

    train: sparse.csr_matrix
    dev: sparse.csr_matrix
    test: sparse.csr_matrix

    @property
    def num_features(self) -> int:
        return int(self.train.shape[1])


_feature_cache: dict[tuple, DocumentFeatures] = {}


def document_features(encoded: EncodedDataset, features: str = "tfidf", max_features: int | None = None) -> DocumentFeatures:
    """Bag-of-words features of an encoded dataset, cached per process.

    Feature ``j`` is token id ``j + 2`` (ids 0 and 1 are ``<pad>`` and ``<unk>``); with
    ``max_features`` only the first ``max_features`` (most frequent) words are kept.
    """
    if features not in FEATURES:
        raise ValueError(f"features must be one of {', '.join(FEATURES)} (got {features!r}).")
    key = (encoded.fingerprint, features, max_features)
    cached = _feature_cache.get(key)
    if cached is not None:
        return cached
    width = len(encoded.vocabulary) - 2 if max_features is None else min(int(max_features), len(encoded.vocabulary) - 2)
    counts = {name: _counts(getattr(encoded, name), width) for name in ("train", "dev", "test")}
    if features == "tfidf":
        n = counts["train"].shape[0]
        df = np.bincount(counts["train"].indices, minlength=width)
        idf = (np.log((1.0 + n) / (1.0 + df)) + 1.0).astype(np.float32)
        for name, x in counts.items():
            x = x @ sparse.diags(idf, format="csr")
            norms = np.sqrt(np.asarray(x.multiply(x).sum(axis=1)).ravel())
            norms[norms == 0] = 1.0
            counts[name] = sparse.csr_matrix(sparse.diags(1.0 / norms) @ x, dtype=np.float32)
    elif features == "binary":
        for x in counts.values():
            x.data[:] = 1.0
    out = DocumentFeatures(**{name: x.astype(np.float32) for name, x in counts.items()})
    for x in (out.train, out.dev, out.test):
        x.sort_indices()
    if len(_feature_cache) >= 4:
        _feature_cache.pop(next(iter(_feature_cache)))
    _feature_cache[key] = out
    return out


def _counts(split: EncodedSplit, width: int) -> sparse.csr_matrix:
    ids = split.ids.astype(np.int64) - 2
    rows = np.repeat(np.arange(len(split)), np.diff(split.offsets))
    keep = (ids >= 0) & (ids < width)
    x = sparse.csr_matrix((np.ones(int(keep.sum()), dtype=np.float32), (rows[keep], ids[keep])), shape=(len(split), width))
    x.sum_duplicates()
    return x


def _bag(x: sparse.csr_matrix, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """EmbeddingBag inputs of CSR rows: flat feature indices, bag offsets, per-sample weights."""
    return (
        torch.from_numpy(x.indices.astype(np.int64)).to(device),
        torch.from_numpy(x.indptr[:-1].astype(np.int64)).to(device),
        torch.from_numpy(x.data.astype(np.float32)).to(device),
    )


# --- the model -----------------------------------------------------------------------------------


class DocumentMLP(nn.Module):
    """MLP over sparse document vectors: an EmbeddingBag input layer, ReLU hidden layers, linear output.

    ``forward(indices, offsets, weights)`` takes a batch in ``nn.EmbeddingBag`` form (the non-zero
    feature indices of all documents, where each document starts, and the feature values) and
    returns ``(batch, num_classes)`` logits.
    """

    def __init__(self, num_features: int, num_classes: int, *, hidden_dim: int = 512, num_layers: int = 1, dropout: float = 0.5):
        super().__init__()
        self.dropout = dropout
        self.input = nn.EmbeddingBag(num_features, hidden_dim, mode="sum")
        self.input_bias = nn.Parameter(torch.empty(hidden_dim))
        bound = 1.0 / math.sqrt(num_features)  # nn.Linear's default initialisation for |V| inputs
        nn.init.uniform_(self.input.weight, -bound, bound)
        nn.init.uniform_(self.input_bias, -bound, bound)
        self.hidden = nn.ModuleList(nn.Linear(hidden_dim, hidden_dim) for _ in range(num_layers - 1))
        self.output = nn.Linear(hidden_dim, num_classes)

    def forward(self, indices: torch.Tensor, offsets: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        weights = F.dropout(weights, self.dropout, self.training)
        h = F.dropout(F.relu(self.input(indices, offsets, per_sample_weights=weights) + self.input_bias), self.dropout, self.training)
        for layer in self.hidden:
            h = F.dropout(F.relu(layer(h)), self.dropout, self.training)
        return self.output(h)


def build_model(num_features: int, num_classes: int, config: Mapping[str, Any]) -> DocumentMLP:
    """The MLP of a checked ``config`` (see :func:`validate_config`)."""
    return DocumentMLP(num_features, num_classes, hidden_dim=config["hidden_dim"], num_layers=config["num_layers"], dropout=config["dropout"])


PARAMS: dict[str, Param] = {
    "batch_size": Param(32, int, low=1),
    "lr": Param(0.001, float, low=0.0, low_open=True),
    "dropout": Param(0.5, float, low=0.0, high=1.0, high_open=True),
    "hidden_dim": Param(512, int, low=1),
    "num_layers": Param(1, int, low=1),
    "features": Param("tfidf", str, choices=FEATURES),
    "max_features": Param(None, int, low=1, optional=True),
    "epochs": Param(50, int, low=1),
    "patience": Param(5, int, low=0),
    "seed": Param(None, int, low=0, high=2**63 - 1, optional=True),
}


def validate_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The MLP's full configuration (defaults filled in); ValueError naming a bad or unknown key."""
    return check_config(config, PARAMS, "mlp")


# --- the trainable -------------------------------------------------------------------------------


def train(config: dict, *, seed: int, device: str, reporter, data: dict) -> dict:
    """Train the document MLP with early stopping on dev; return ``val_f1`` and ``test_f1`` (Reuters)."""
    config = validate_config(config)
    seed = effective_seed(seed, config["seed"])
    seed_everything(seed)
    device = resolve_device(device)
    dataset = load_task(data, "mlp", default_dataset="reuters", multilabel_ok=True)
    feats = document_features(encode_dataset(dataset), config["features"], config["max_features"])
    splits = {"train": feats.train, "dev": feats.dev, "test": feats.test}
    labels = {name: getattr(dataset, name).labels for name in splits}
    loss_fn, metric, to_prediction, score = loss_and_metric(dataset.multilabel)

    model = build_model(feats.num_features, dataset.num_classes, config).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=config["lr"], fused=True)  # the |V| x hidden update dominates
    step = OptimizerStep(optimizer, device)
    rng = np.random.default_rng(seed)

    def batch_loss(batch: np.ndarray) -> torch.Tensor:
        targets = targets_of(labels["train"][batch], dataset.multilabel, device)
        return loss_fn(model(*_bag(splits["train"][batch], device)).float(), targets)

    def train_epoch(epoch: int) -> float:
        return run_training_epoch(model, minibatches(len(labels["train"]), config["batch_size"], rng), batch_loss, step, device)

    def evaluate(split: str) -> dict[str, float]:
        x = splits[split]
        batches = minibatches(x.shape[0], EVAL_BATCH_SIZE)
        predicted = predict(model, batches, lambda batch: model(*_bag(x[batch], device)), to_prediction, x.shape[0], device)
        return {metric: score(predicted, labels[split])}

    result = fit(
        epochs=config["epochs"], patience=config["patience"], train_epoch=train_epoch, evaluate=evaluate,
        metric=metric, reporter=reporter, model=model,
    )
    return result.metrics(count_parameters(model), split_sizes=dataset.sizes())

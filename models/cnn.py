"""CNN sentence classifier over word vectors (Kim 2014), as in Dodge et al. (2019) Fig. 1 on SST-5.

Each sentence is embedded with GloVe vectors, read by parallel 1-D convolutions of several widths,
max-pooled over time, and classified by a softmax layer (Kim, 2014; the AllenNLP ``basic_classifier``
with a ``cnn`` encoder that Dodge et al. searched, allenai/show-your-work
``training_config/cnn_classifier.jsonnet``):

    tokens -> embedding -> for each width k: Conv1d(k) -> activation -> max over time -> concat
           -> [Linear(hidden_dim)] -> dropout -> [Linear(hidden_dim) -> activation -> dropout] x num_layers
           -> Linear(num_classes)

Training: Adam, cross-entropy, shuffled minibatches; the learning rate is halved when the dev
accuracy has not improved for ``lr_reduce_patience`` epochs (reduce-on-plateau, Dodge et al. Table 2;
:func:`showwork_models.training.reduce_on_plateau`); early stopping keeps the best dev epoch (``patience``),
which is then scored on test.

Positions past a sentence's end never win the max-pooling: a width-``k`` window counts only if it
starts inside the sentence and, for sentences shorter than ``k``, only the first window (zero-padded)
counts. So a sentence's features do not depend on the other sentences of its batch, and one-word
sentences work with any filter width.

Hyperparameters (``config``; the defaults are Dodge et al.'s best SST-5 assignment where they report one)
-------------------------------------------------------------------------------------------------------
embedding_mode : {'static', 'nonstatic', 'rand'}, default 'nonstatic'
    Pre-trained vectors frozen / fine-tuned, or random vectors (Kim 2014). Dodge et al. fine-tune GloVe.
embedding_dim : int, default 50
    Width of the random vectors of ``rand``; the pre-trained modes take the vectors' width and
    refuse any other value.
max_filter_size : int, default 4
    Filter widths ``1, 2, ..., max_filter_size`` (AllenNLP ``ngram_filter_sizes = range(1, max)``
    inclusive, as Dodge et al.). Not allowed together with ``ngram_filter_sizes`` (the checked
    configuration then holds None).
ngram_filter_sizes : list of int or str, default None
    Explicit widths instead, e.g. ``[3, 4, 5]`` or ``"3,4,5"`` (Kim 2014).
num_filters : int, default 332
    Filters per width.
activation : {'relu', 'tanh'}, default 'relu'
    Of the convolutions and of the feedforward layers.
hidden_dim : int or None, default None
    Width of a linear projection of the pooled features (AllenNLP ``CnnEncoder.output_dim``;
    Dodge et al.'s released space samples it, their Table 2 omits it). None: no projection (Kim 2014).
num_layers : int, default 0
    Feedforward layers of width ``hidden_dim`` (with ``activation``) before the output layer;
    needs ``hidden_dim``. Dodge et al.'s SST-5 CNN has none.
dropout : float in [0, 1), default 0.4
    On the pooled (projected) features and after every feedforward layer.
lr : float > 0, default 0.0008
    Adam's learning rate.
batch_size : int, default 64
epochs : int, default 50
    Maximum number of epochs.
patience : int, default 10
    Early stopping: epochs without a dev improvement (0: never stop early).
lr_reduce_patience : int, default 2
    Reduce-on-plateau: epochs without a dev improvement before the learning rate is multiplied
    by ``lr_reduce_factor``.
lr_reduce_factor : float in (0, 1], default 0.5
    1 disables the schedule.
max_length : int or None, default None
    Cut sentences after this many tokens (SST sentences have at most ~60).

Unknown keys and out-of-range values raise a ``ValueError`` that names the key (:func:`validate_config`,
:mod:`showwork_models.config`).

Data (``data``)
---------------
``dataset`` (``sst5``, ``sst2_trees`` or ``sst2``; any single-sentence, single-label dataset of
:mod:`showwork_models.data`), ``dir``/``source``/``train_size``/``dev_size``/``split_seed`` as in
:func:`showwork_models.data.load_dataset`, and ``embeddings`` as in :func:`showwork_models.embeddings.load_word_vectors`
(default: the GloVe 6B 50-d vectors of the data folder, the vectors of Dodge et al.). The vocabulary
is the training split's (:func:`showwork_models.text.encode_dataset`, cached).

Returns
-------
``val_accuracy`` (best dev epoch), ``test_accuracy`` (that epoch's weights), ``best_epoch``,
``epochs_run``, ``parameters`` (all, frozen embeddings included) and ``split_sizes``: the examples
of each split used, ``{"train": n, "dev": n, "test": n}`` after ``train_size``
(:meth:`showwork_models.data.TextDataset.sizes`). Every epoch reports ``train_loss`` and ``val_accuracy``.

CPU / CUDA
----------
Deterministic on CPU (same config and seed, same score). On CUDA the forward pass runs in mixed
precision (bfloat16 where supported) and cuDNN's deterministic algorithms are requested.

References
----------
Kim (2014), Convolutional Neural Networks for Sentence Classification, EMNLP.
Dodge, Gururangan, Card, Schwartz & Smith (2019), Show Your Work, EMNLP; Appendix B, Table 2.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from showwork.trainable import is_integer

from .config import Param, check_config, load_task
from .data import check_data
from .embeddings import EMBEDDING_MODES, initial_embeddings
from .text import encode_dataset
from .training import (
    OptimizerStep,
    accuracy,
    count_parameters,
    fit,
    minibatches,
    predict,
    predicted_classes,
    reduce_on_plateau,
    resolve_device,
    run_training_epoch,
    seed_everything,
)

__all__ = ["CnnClassifier", "PARAMS", "build_model", "check_data", "filter_sizes", "train", "validate_config"]

ACTIVATIONS = ("relu", "tanh")
_EVAL_BATCH = 512


# --- configuration ------------------------------------------------------------------------------


def _parse_sizes(value: Any) -> tuple[int, ...]:
    """``ngram_filter_sizes`` as a tuple: a list of positive integers, or one written ``'3,4,5'``."""
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",")]
        if not all(p.isdigit() for p in parts):
            raise ValueError(f"must be positive integers such as [3, 4, 5] or '3,4,5' (got {value!r}).")
        value = [int(p) for p in parts]
    if not isinstance(value, (list, tuple)) or not value:
        raise ValueError(f"must be a non-empty list of positive integers (got {value!r}).")
    for size in value:
        if not is_integer(size) or size < 1:
            raise ValueError(f"must hold positive integers (got {value!r}).")
    if len(set(value)) != len(value):
        raise ValueError(f"must not repeat a width (got {value!r}).")
    return tuple(int(s) for s in value)


_unit = dict(low=0.0, high=1.0, high_open=True)
PARAMS: dict[str, Param] = {
    "embedding_mode": Param("nonstatic", str, choices=EMBEDDING_MODES),
    "embedding_dim": Param(50, int, low=1),
    "max_filter_size": Param(4, int, low=1, optional=True),  # None once ngram_filter_sizes is given
    "ngram_filter_sizes": Param(None, tuple, optional=True, parse=_parse_sizes),
    "num_filters": Param(332, int, low=1),
    "activation": Param("relu", str, choices=ACTIVATIONS),
    "hidden_dim": Param(None, int, low=1, optional=True),
    "num_layers": Param(0, int, low=0),
    "dropout": Param(0.4, float, **_unit),
    "lr": Param(0.0008, float, low=0.0, low_open=True),
    "batch_size": Param(64, int, low=1),
    "epochs": Param(50, int, low=1),
    "patience": Param(10, int, low=0),
    "lr_reduce_patience": Param(2, int, low=0),
    "lr_reduce_factor": Param(0.5, float, low=0.0, high=1.0, low_open=True),
    "max_length": Param(None, int, low=1, optional=True),
}


def validate_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """Check a configuration and return it with the defaults filled in (:data:`PARAMS`).

    Beyond each key's own range: ``max_filter_size`` and ``ngram_filter_sizes`` exclude each other
    (the result holds ``max_filter_size=None`` when the widths are explicit, so that a checked
    configuration checks again), and ``num_layers > 0`` needs ``hidden_dim``.

    Raises
    ------
    ValueError
        An unknown key (all of them named), or a value of the wrong type or out of range; the
        message names the key.
    """
    out = check_config(config, PARAMS, "cnn")
    if out["ngram_filter_sizes"] is not None:
        if config.get("max_filter_size") is not None:
            raise ValueError("cnn config keys 'max_filter_size' and 'ngram_filter_sizes': give one of them, not both.")
        out["max_filter_size"] = None
    elif out["max_filter_size"] is None:
        raise ValueError("cnn config key 'max_filter_size' must not be empty without 'ngram_filter_sizes' (got None).")
    if out["num_layers"] > 0 and out["hidden_dim"] is None:
        raise ValueError("cnn config key 'num_layers' > 0 needs 'hidden_dim' (the width of the feedforward layers).")
    return out


def filter_sizes(config: Mapping[str, Any]) -> tuple[int, ...]:
    """The convolution widths of a validated config: ``ngram_filter_sizes`` or ``1..max_filter_size``."""
    if config.get("ngram_filter_sizes") is not None:
        return tuple(config["ngram_filter_sizes"])
    return tuple(range(1, int(config["max_filter_size"]) + 1))


# --- the model ----------------------------------------------------------------------------------


class CnnClassifier(nn.Module):
    """Embedding, parallel convolutions with masked max-over-time pooling, feedforward, output layer.

    Parameters
    ----------
    embedding : ndarray, shape (vocabulary size, d)
        Initial vectors; row 0 is ``<pad>`` (kept at zero).
    freeze : bool
        Keep the embeddings fixed (``static``).
    num_classes : int
    sizes : sequence of int
        Convolution widths.
    num_filters, activation, hidden_dim, num_layers, dropout
        As in the module docstring.
    """

    def __init__(
        self,
        embedding: np.ndarray,
        *,
        freeze: bool,
        num_classes: int,
        sizes: Sequence[int],
        num_filters: int,
        activation: str = "relu",
        hidden_dim: int | None = None,
        num_layers: int = 0,
        dropout: float = 0.0,
    ):
        super().__init__()
        self.embedding = nn.Embedding.from_pretrained(torch.as_tensor(embedding, dtype=torch.float32), freeze=freeze, padding_idx=0)
        dim = self.embedding.embedding_dim
        self.sizes = tuple(int(k) for k in sizes)
        self.convolutions = nn.ModuleList(nn.Conv1d(dim, num_filters, k) for k in self.sizes)
        self.activation = nn.ReLU() if activation == "relu" else nn.Tanh()
        width = num_filters * len(self.sizes)
        self.projection = nn.Linear(width, hidden_dim) if hidden_dim is not None else None
        width = hidden_dim if hidden_dim is not None else width
        self.feedforward = nn.ModuleList(nn.Linear(width, width) for _ in range(num_layers))
        self.dropout = nn.Dropout(dropout)
        self.output = nn.Linear(width, num_classes)

    def encode(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """The pooled features ``(batch, num_filters * len(sizes))`` of padded ``ids`` (0 = padding)."""
        shortfall = max(self.sizes) - ids.shape[1]
        if shortfall > 0:
            ids = nn.functional.pad(ids, (0, shortfall))
        x = self.embedding(ids).transpose(1, 2)  # (batch, dim, time)
        pooled = []
        for k, convolution in zip(self.sizes, self.convolutions):
            h = self.activation(convolution(x))  # (batch, filters, time - k + 1)
            last_start = torch.clamp(lengths - k, min=0)  # windows starting later run past the end
            valid = torch.arange(h.shape[2], device=h.device)[None, :] <= last_start[:, None]
            pooled.append(h.masked_fill(~valid[:, None, :], float("-inf")).amax(dim=2))
        return torch.cat(pooled, dim=1)

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Class logits ``(batch, num_classes)``."""
        h = self.encode(ids, lengths)
        if self.projection is not None:
            h = self.projection(h)
        h = self.dropout(h)
        for layer in self.feedforward:
            h = self.dropout(self.activation(layer(h)))
        return self.output(h)


def build_model(config: Mapping[str, Any], embedding: np.ndarray, num_classes: int) -> CnnClassifier:
    """The classifier of a config (validated here) around an initial ``embedding`` matrix."""
    config = validate_config(config)
    return CnnClassifier(
        embedding,
        freeze=config["embedding_mode"] == "static",
        num_classes=num_classes,
        sizes=filter_sizes(config),
        num_filters=config["num_filters"],
        activation=config["activation"],
        hidden_dim=config["hidden_dim"],
        num_layers=config["num_layers"],
        dropout=config["dropout"],
    )


# --- training -----------------------------------------------------------------------------------


def train(config: dict, *, seed: int, device: str, reporter, data: dict) -> dict:
    """Train the CNN on ``data['dataset']`` and return its best-dev-epoch metrics (see the module docstring)."""
    given, config = config, validate_config(config)
    seed_everything(seed)
    device = resolve_device(device)
    dataset = load_task(data, "cnn")
    encoded = encode_dataset(dataset)
    mode = config["embedding_mode"]
    dim = config["embedding_dim"] if mode == "rand" or "embedding_dim" in given else None
    matrix, _ = initial_embeddings(encoded.vocabulary, data, mode=mode, seed=seed, dim=dim, family="cnn")
    model = build_model(config, matrix, dataset.num_classes).to(device)
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=config["lr"])
    step = OptimizerStep(optimizer, device)
    rng = np.random.default_rng(seed)
    max_length = config["max_length"]

    def batch(split, indices) -> tuple[torch.Tensor, torch.Tensor]:
        ids, lengths = split.padded(indices, max_length)
        return torch.from_numpy(ids).to(device), torch.from_numpy(lengths).to(device)

    def batch_loss(indices: np.ndarray) -> torch.Tensor:
        labels = torch.from_numpy(encoded.train.labels[indices]).to(device)
        return nn.functional.cross_entropy(model(*batch(encoded.train, indices)).float(), labels)

    def train_epoch(epoch: int) -> float:
        batches = minibatches(len(encoded.train), config["batch_size"], rng)
        return run_training_epoch(model, batches, batch_loss, step, device)

    def evaluate(split_name: str) -> dict[str, float]:
        split = getattr(encoded, split_name)
        batches = minibatches(len(split), _EVAL_BATCH)
        predicted = predict(model, batches, lambda indices: model(*batch(split, indices)), predicted_classes, len(split), device)
        return {"accuracy": accuracy(predicted, split.labels)}

    result = fit(
        epochs=config["epochs"],
        patience=config["patience"],
        train_epoch=train_epoch,
        evaluate=evaluate,
        metric="accuracy",
        reporter=reporter,
        model=model,
        lr_schedule=reduce_on_plateau(optimizer, config["lr_reduce_factor"], config["lr_reduce_patience"]),
    )
    return result.metrics(count_parameters(model), split_sizes=dataset.sizes())

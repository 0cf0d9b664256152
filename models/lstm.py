"""The regularised BiLSTM document classifier (reg-LSTM) of Adhikari et al. (2019), as searched by Tang et al. (2020).

Architecture (Hedwig's ``models/reg_lstm``)::

    token ids -> embedding (with embedding dropout) -> BiLSTM (weight-dropped hidden-to-hidden weights)
              -> ReLU -> max-pool over time -> dropout -> Linear (classes)

The document vector is the element-wise maximum over time of the LSTM's outputs, each the
concatenation of the forward and backward hidden states at that position (Hedwig applies a ReLU
first, which also makes the zero padding harmless to the maximum); it is *not* the concatenation of
the final states. Regularisation follows Merity et al. (2018, AWD-LSTM):

- embedding dropout: each minibatch drops whole rows of the embedding matrix (a word type, wherever it
  occurs in the batch) with probability ``embed_dropout`` and scales the rest by 1 / (1 - p);
- weight dropping (DropConnect): each forward pass in training draws a fresh dropout mask on every
  hidden-to-hidden matrix ``weight_hh_l{k}[_reverse]`` (all layers and directions; Hedwig wraps only
  ``weight_hh_l0``) and runs the LSTM on the dropped weights through :func:`torch.func.functional_call`,
  so the module keeps ordinary parameters (state_dict, optimizer, averaging) and no
  ``flatten_parameters`` patch is needed;
- ``dropout`` on the pooled vector before the output layer, and between stacked LSTM layers
  (``nn.LSTM(dropout=...)``; Hedwig passes the same value to both);
- temporal averaging: an exponential moving average of the weights, updated after every Adam step,
  ``a_t = beta a_{t-1} + (1 - beta) w_t`` from ``a_0 = 0`` and divided by ``1 - beta^t`` (a proper
  weighted average of the iterates; Hedwig starts from the initial weights and divides as well, which
  over-weights them early on). Dev selection and the test score use the averaged weights; the
  best epoch's averaged weights are the snapshot that :func:`showwork_models.training.fit` restores.

Multi-label data (Reuters, 90 ModApte topics): ``BCEWithLogitsLoss``, a topic is predicted when its
sigmoid exceeds 0.5, the metric is micro-F1 and the trainable returns ``val_f1`` / ``test_f1``.
Single-label datasets give ``val_accuracy`` / ``test_accuracy`` (cross-entropy); sentence pairs are refused.

Documents are cut after ``max_length`` tokens. Training batches are bucketed like torchtext's
``BucketIterator`` (Hedwig; :func:`showwork_models.training.bucket_batches` with ``pool=100``): the shuffled
training set is cut into pools of 100 batches, each pool is sorted by length and split into batches,
and the batch order is shuffled; each batch is a packed sequence, so padding costs nothing.

Hyperparameters (``config``)
----------------------------
mode : {"static", "nonstatic", "rand"}, default "static"
    Pre-trained embeddings frozen / fine-tuned, or random U(-0.25, 0.25) (Tang et al.: {nonstatic .5,
    static .4, rand .1}). Words without a vector get random rows (:func:`showwork_models.embeddings.embedding_matrix`).
batch_size : int, default 32
    Tang et al.: {16, 32, 64}.
lr : float > 0, default 0.01
    Adam's learning rate (Tang et al.: truncated exponential on [0.001, 0.1]).
dropout : float in [0, 1), default 0.5
    Tang et al.: U[0.05, 0.7].
num_layers : int >= 1, default 1
    Tang et al.: {1: .75, 2: .25}.
hidden_dim : int >= 1, default 512
    Units per direction (Tang et al.: U{384..768}).
weight_dropout : float in [0, 1), default 0.1
    DropConnect rate on the hidden-to-hidden weights (Tang et al.: U[0, 0.3]).
embed_dropout : float in [0, 1), default 0.2
    Tang et al.: U[0, 0.3].
ema_beta : float in [0, 1), default 0.99
    Temporal-averaging decay; 0 turns averaging off (Tang et al.: U[0.985, 0.995]).
bidirectional : bool, default True
max_length : int >= 1 or None, default 512
    Tokens kept per document (512 keeps all of ~95 % of Reuters training documents; the median is
    about 100). None: whole documents.
epochs : int >= 1, default 30
    Maximum number of epochs (Hedwig's Reuters command line).
patience : int >= 0, default 5
    Early stopping on dev (0: never stop early).
seed : int in [0, 2**63) or None, default None
    The ``seed`` hyperparameter of Tang et al.'s space; mixed into the trial's seed
    (:func:`showwork_models.config.effective_seed`), which seeds initialisation, random embedding rows, dropout
    masks and batch order.

Unknown keys and out-of-range values raise a ``ValueError`` that names the key (:mod:`showwork_models.config`).

Data (``data``)
---------------
``dataset`` (default ``reuters``), ``dir`` / ``$SHOWWORK_DATA_DIR``, ``source``, ``train_size``,
``dev_size``, ``split_seed``: passed to :func:`showwork_models.data.load_dataset`. ``embeddings``: the word
vectors (:func:`showwork_models.embeddings.load_word_vectors`; default the 50-d GloVe of the data folder).

Returns
-------
dict
    ``val_f1``, ``test_f1``, ``best_epoch``, ``epochs_run``, ``parameters`` (all parameters, the
    embedding matrix included, frozen or not) and ``split_sizes``: the examples of each split used,
    ``{"train": n, "dev": n, "test": n}`` after ``train_size`` (:meth:`showwork_models.data.TextDataset.sizes`).

Devices
-------
CPU: deterministic (same config and seed, same score). CUDA: mixed precision (:func:`autocast`).
On CPU the full Reuters training split is slow: at ``max_length`` 512 and batch 32 (about 837,000
tokens) one training epoch takes about 1,400 s of CPU time on one core at hidden 384 and 2,400 s at
hidden 576 (BiLSTM, 1 layer), plus about 2 minutes to score dev and test, so the paper's space wants
a GPU. For quick runs use ``data.train_size`` and a small ``max_length`` and ``hidden_dim``.

References
----------
Adhikari, A., Ram, A., Tang, R., Lin, J. (2019). Rethinking complex neural network architectures for
document classification. NAACL. (Hedwig: github.com/castorini/hedwig, ``models/reg_lstm``)
Merity, S., Keskar, N. S., Socher, R. (2018). Regularizing and optimizing LSTM language models. ICLR.
Tang, R., Lee, J., Xin, J., Liu, X., Yu, Y., Lin, J. (2020). Showing your work doesn't always work. ACL.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .config import Param, check_config, effective_seed, load_task
from .data import DataUnavailable, check_data
from .embeddings import EMBEDDING_MODES, initial_embeddings, load_word_vectors
from .text import EncodedSplit, encode_dataset
from .training import (
    OptimizerStep,
    bucket_batches,
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
    "PARAMS",
    "ParameterAverage",
    "RegLSTM",
    "build_model",
    "check_data",
    "embedded_dropout",
    "train",
    "validate_config",
]

EVAL_BATCH_SIZE = 256
POOL_BATCHES = 100  # torchtext BucketIterator: sort within pools of 100 batches
RAND_DIM = 50  # embedding size of mode "rand" when no word vectors are available


def embedded_dropout(weight: torch.Tensor, ids: torch.Tensor, p: float, training: bool, padding_idx: int | None = 0) -> torch.Tensor:
    """Embedding lookup that drops whole rows of ``weight`` with probability ``p`` (Merity et al. 2018).

    The kept rows are scaled by ``1 / (1 - p)``; one mask per call (per minibatch).
    """
    if training and p > 0:
        mask = torch.empty((weight.shape[0], 1), device=weight.device, dtype=weight.dtype).bernoulli_(1.0 - p) / (1.0 - p)
        weight = weight * mask
    return F.embedding(ids, weight, padding_idx)


class RegLSTM(nn.Module):
    """Embedding -> (Bi)LSTM -> ReLU -> max over time -> dropout -> linear, with AWD-LSTM regularisers.

    ``forward(ids, lengths)``: ``ids`` a ``(batch, time)`` int64 matrix padded with 0, ``lengths``
    the true lengths (each >= 1, any order); returns ``(batch, num_classes)`` logits.
    """

    def __init__(
        self,
        embeddings: np.ndarray | torch.Tensor,
        num_classes: int,
        *,
        hidden_dim: int = 512,
        num_layers: int = 1,
        bidirectional: bool = True,
        freeze_embeddings: bool = False,
        dropout: float = 0.5,
        weight_dropout: float = 0.1,
        embed_dropout: float = 0.2,
    ):
        super().__init__()
        self.dropout = dropout
        self.weight_dropout = weight_dropout
        self.embed_dropout = embed_dropout
        self.embedding = nn.Embedding.from_pretrained(torch.as_tensor(embeddings, dtype=torch.float32), freeze=freeze_embeddings, padding_idx=0)
        self.lstm = nn.LSTM(
            self.embedding.embedding_dim, hidden_dim, num_layers=num_layers, bidirectional=bidirectional,
            batch_first=True, dropout=dropout if num_layers > 1 else 0.0,
        )
        self.recurrent_weights = [name for name, _ in self.lstm.named_parameters() if name.startswith("weight_hh_")]
        self.output = nn.Linear(hidden_dim * (2 if bidirectional else 1), num_classes)

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        x = embedded_dropout(self.embedding.weight, ids, self.embed_dropout, self.training)
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        if self.training and self.weight_dropout > 0:
            dropped = {name: F.dropout(getattr(self.lstm, name), self.weight_dropout, True) for name in self.recurrent_weights}
            out, _ = functional_call(self.lstm, dropped, (packed,))
        else:
            out, _ = self.lstm(packed)
        out, _ = pad_packed_sequence(out, batch_first=True, padding_value=0.0)
        pooled = F.relu(out).amax(dim=1)
        return self.output(F.dropout(pooled, self.dropout, self.training))


PARAMS: dict[str, Param] = {
    "mode": Param("static", str, choices=EMBEDDING_MODES),
    "batch_size": Param(32, int, low=1),
    "lr": Param(0.01, float, low=0.0, low_open=True),
    "dropout": Param(0.5, float, low=0.0, high=1.0, high_open=True),
    "num_layers": Param(1, int, low=1),
    "hidden_dim": Param(512, int, low=1),
    "weight_dropout": Param(0.1, float, low=0.0, high=1.0, high_open=True),
    "embed_dropout": Param(0.2, float, low=0.0, high=1.0, high_open=True),
    "ema_beta": Param(0.99, float, low=0.0, high=1.0, high_open=True),
    "bidirectional": Param(True, bool),
    "max_length": Param(512, int, low=1, optional=True),
    "epochs": Param(30, int, low=1),
    "patience": Param(5, int, low=0),
    "seed": Param(None, int, low=0, high=2**63 - 1, optional=True),
}


def validate_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The reg-LSTM's full configuration (defaults filled in); ValueError naming a bad or unknown key."""
    return check_config(config, PARAMS, "lstm")


def build_model(embeddings: np.ndarray | torch.Tensor, num_classes: int, config: Mapping[str, Any]) -> RegLSTM:
    """The reg-LSTM of a checked ``config`` over an initial embedding matrix (``static`` freezes it)."""
    return RegLSTM(
        embeddings, num_classes, hidden_dim=config["hidden_dim"], num_layers=config["num_layers"],
        bidirectional=config["bidirectional"], freeze_embeddings=config["mode"] == "static",
        dropout=config["dropout"], weight_dropout=config["weight_dropout"], embed_dropout=config["embed_dropout"],
    )


class ParameterAverage:
    """Bias-corrected exponential moving average of a model's trainable parameters, kept in a twin model.

    ``update()`` after every optimizer step; ``publish()`` writes ``shadow / (1 - beta^t)`` into the
    twin, which is then evaluated and snapshotted. Frozen parameters are copied once.
    """

    def __init__(self, model: nn.Module, twin: nn.Module, beta: float):
        twin.load_state_dict(model.state_dict())
        pairs = [(p, q) for p, q in zip(model.parameters(), twin.parameters()) if p.requires_grad]
        self.params = [p for p, _ in pairs]
        self.targets = [q for _, q in pairs]
        self.shadow = [torch.zeros_like(p, dtype=torch.float32) for p in self.params]
        self.beta = beta
        self.steps = 0

    @torch.no_grad()
    def update(self) -> None:
        self.steps += 1
        for average, p in zip(self.shadow, self.params):
            average.mul_(self.beta).add_(p.detach().float(), alpha=1.0 - self.beta)

    @torch.no_grad()
    def publish(self) -> None:
        if self.steps == 0:
            return
        correction = 1.0 - self.beta**self.steps
        for target, average in zip(self.targets, self.shadow):
            target.copy_(average / correction)


def _batch(split: EncodedSplit, indices: np.ndarray, max_length: int | None, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    ids, lengths = split.padded(indices, max_length)
    return torch.from_numpy(ids).to(device), torch.from_numpy(lengths.astype(np.int64))


def _rand_dim(mode: str, data: Mapping[str, Any]) -> int | None:
    """The width of the random vectors of mode ``rand``: the word vectors' width, ``RAND_DIM`` without vectors; None otherwise."""
    if mode != "rand":
        return None
    try:
        return load_word_vectors(data).dim
    except DataUnavailable:
        return RAND_DIM


def train(config: dict, *, seed: int, device: str, reporter, data: dict) -> dict:
    """Train the reg-LSTM with early stopping on dev; return ``val_f1`` and ``test_f1`` (Reuters)."""
    config = validate_config(config)
    seed = effective_seed(seed, config["seed"])
    seed_everything(seed)
    device = resolve_device(device)
    dataset = load_task(data, "lstm", default_dataset="reuters", multilabel_ok=True)
    encoded = encode_dataset(dataset)
    matrix, _ = initial_embeddings(encoded.vocabulary, data, mode=config["mode"], seed=seed, dim=_rand_dim(config["mode"], data), family="lstm")
    splits = {"train": encoded.train, "dev": encoded.dev, "test": encoded.test}
    labels = {name: getattr(dataset, name).labels for name in splits}
    loss_fn, metric, to_prediction, score = loss_and_metric(dataset.multilabel)

    model = build_model(matrix, dataset.num_classes, config).to(device)
    if config["ema_beta"] > 0:
        eval_model = build_model(matrix, dataset.num_classes, config).to(device)
        average = ParameterAverage(model, eval_model, config["ema_beta"])
    else:
        eval_model, average = model, None
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=config["lr"], fused=True)
    step = OptimizerStep(optimizer, device)
    rng = np.random.default_rng(seed)
    max_length = config["max_length"]
    train_lengths = encoded.train.lengths()
    if max_length is not None:
        train_lengths = np.minimum(train_lengths, max_length)

    def batch_loss(batch: np.ndarray) -> torch.Tensor:
        ids, lengths = _batch(encoded.train, batch, max_length, device)
        targets = targets_of(labels["train"][batch], dataset.multilabel, device)
        return loss_fn(model(ids, lengths).float(), targets)

    def train_epoch(epoch: int) -> float:
        batches = bucket_batches(train_lengths, config["batch_size"], rng, pool=POOL_BATCHES)
        loss = run_training_epoch(model, batches, batch_loss, step, device, after_step=average.update if average is not None else None)
        if average is not None:
            average.publish()
        return loss

    def evaluate(split: str) -> dict[str, float]:
        data_split = splits[split]
        order = np.argsort(-data_split.lengths(), kind="stable")  # similar lengths together: fewer idle steps
        batches = (order[rows] for rows in minibatches(len(order), EVAL_BATCH_SIZE))
        predicted = predict(eval_model, batches, lambda rows: eval_model(*_batch(data_split, rows, max_length, device)), to_prediction, len(order), device)
        return {metric: score(predicted, labels[split])}

    result = fit(
        epochs=config["epochs"], patience=config["patience"], train_epoch=train_epoch, evaluate=evaluate, metric=metric,
        reporter=reporter,
        state=lambda: {k: v.detach().clone() for k, v in eval_model.state_dict().items()},
        load_state=eval_model.load_state_dict,
    )
    return result.metrics(count_parameters(model), split_sizes=dataset.sizes())

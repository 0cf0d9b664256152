"""Biattentive classification network (BCN; McCann et al. 2017) on GloVe, as searched by Dodge et al. (2019) on SST-2.

The BCN of McCann et al. (2017, section 5) in the ``bcn_modified`` form of allenai/show-your-work
(``show_your_work/models/bcn.py``, configured by ``training_config/biattentive_classification_network.jsonnet``
with the space ``search_spaces/bcn_glove.json``), built from `allennlp-light
<https://pypi.org/project/allennlp-light/>`_ modules (``FeedForward``, ``Maxout``, the ``LstmSeq2SeqEncoder``
wrapper of ``torch.nn.LSTM`` and ``allennlp_light.nn.util``)::

    tokens -> GloVe embedding -> dropout(embedding_dropout)
           -> pre-encode FeedForward (pre_encode_layers x pre_encode_hidden_dim, activation, dropout)
           -> encoder biLSTM                                   X: (batch, T, 2 * encoder_hidden_dim)
           -> biattention  A = masked_softmax(X Xᵀ) over keys,  C = A X
           -> integrator biLSTM on [X; X - C; X ⊙ C]           Y: (batch, T, 2 * integrator_hidden_dim)
           -> [max; min; mean; self-attentive] pooling of Y    (batch, 8 * integrator_hidden_dim)
           -> dropout(integrator_dropout)
           -> Maxout (output_layers x output_dim, pool_size, output_dropout after every layer)
           -> Linear(output_dim -> classes)

Padding never reaches a sentence's representation: the LSTMs run on packed sequences, attention
keys and the pooled positions are masked, so a sentence's logits do not depend on its batch.
Dodge et al.'s ``bcn_modified`` differs from AllenNLP's ``bcn`` only in the output: every Maxout
layer has ``output_dim`` units and a final linear layer gives the logits (AllenNLP's last Maxout
layer has one unit per class).

Training (the ``trainer`` of Dodge et al.'s configuration): Adam, cross-entropy, gradients clipped
to norm ``grad_norm``, the learning rate halved after ``lr_reduce_patience`` epochs without a dev
improvement (:func:`showwork_models.training.reduce_on_plateau`), early stopping after ``patience`` such
epochs (the best dev epoch is kept and scored on test). Minibatches are length buckets as
AllenNLP's ``bucket`` iterator makes them (:func:`showwork_models.training.bucket_batches` with
``noise=0.1``): sentences sorted by length with ±10 % noise, cut into batches, batches in random order.

Hyperparameters (``config``)
----------------------------
Defaults are the sizes of AllenNLP's reference BCN (``training_config/biattentive_classification_network_elmo.jsonnet``:
300-unit feedforward and LSTMs, embedding dropout 0.5, ...) fitted to ``bcn_modified``'s output layer,
with Dodge et al.'s fixed settings (50 epochs, patience 10, batch 64, GloVe 6B 50-d fine-tuned).
The bracket after each key is Dodge et al.'s range (``search_spaces/sst2_bcn.yaml``).

embedding_mode : {'nonstatic', 'static', 'rand'}, default 'nonstatic'
    GloVe fine-tuned (Dodge et al.), frozen, or random vectors of ``embedding_dim`` dimensions.
embedding_dim : int, default 50
    Width of the ``rand`` vectors; the pre-trained modes take the vectors' width.
elmo : bool, default False
    ELMo input representations (Dodge et al.'s ``bcn_elmo_*`` spaces) are not implemented: True,
    or any other key naming ELMo (``elmo_dropout``, ``use_integrator_output_elmo``), is a ValueError.
embedding_dropout : float in [0, 1), default 0.5                        [U(0, 0.5)]
pre_encode_layers : int >= 1, default 1                                 [{1, 2, 3}]
pre_encode_hidden_dim : int >= 1, default 300                           [U{64..512}]
    Width of every pre-encode layer (and so the encoder's input).
pre_encode_activation : {'relu', 'tanh'}, default 'relu'                [{relu, tanh}]
pre_encode_dropout : float in [0, 1), default 0.25                      [U(0, 0.5)]
    After every pre-encode layer.
encoder_hidden_dim : int >= 1, default 300                              [U{64..512}]
    Units per direction of the encoder biLSTM.
encoder_layers : int >= 1, default 1                                    [{1, 2, 3}]
integrator_hidden_dim : int >= 1, default 300                           [U{64..512}]
integrator_layers : int >= 1, default 1                                 [{1, 2, 3}]
integrator_dropout : float in [0, 1), default 0.1                       [U(0, 0.5)]
    On the pooled representation.
output_layers : int >= 1, default 2                                     [{1, 2, 3}]
output_dim : int >= 1, default 300                                      [U{64..512}]
    Units of every Maxout layer.
output_dropout : float in [0, 1), default 0.2                           [U(0, 0.5)]
    After every Maxout layer.
pool_size : int >= 1, default 4                                         [U{3..7}]
    Linear pieces per Maxout unit.
lr : float > 0, default 0.001                                           [log-U(1e-6, 0.1)]
    Adam's learning rate.
grad_norm : float > 0 or None, default 5.0                              [U(5, 10)]
    Clip the gradient's global L2 norm to this; None: no clipping.
batch_size : int, default 64                                            [64]
epochs : int, default 50                                                [50]
patience : int >= 0, default 10                                         [10]
    Early stopping: epochs without a dev improvement (0: never stop early).
lr_reduce_patience : int >= 0, default 2                                [2]
lr_reduce_factor : float in (0, 1], default 0.5                         [0.5]
    1 disables the schedule.
max_length : int or None, default None
    Cut sentences after this many tokens (SST sentences have at most ~60).
seed : int or None, default None                                        [U{0..10000}]
    Dodge et al.'s ``SEED``; mixed into the trial's seed (:func:`showwork_models.config.effective_seed`).

Unknown keys and out-of-range values raise a ``ValueError`` naming the key (:func:`validate_config`,
which needs no allennlp-light).

Data (``data``)
---------------
``dataset`` (default ``sst2_trees``: SST-2 from the PTB trees, 6,920 / 872 / 1,821 sentences; any
single-sentence, single-label dataset of :mod:`showwork_models.data`), ``dir`` / ``source`` / ``train_size`` /
``dev_size`` / ``split_seed`` as in :func:`showwork_models.data.load_dataset`, and ``embeddings`` as in
:func:`showwork_models.embeddings.load_word_vectors` (default: the GloVe 6B 50-d vectors of the data folder).

Returns
-------
``val_accuracy`` (best dev epoch), ``test_accuracy`` (that epoch's weights), ``best_epoch``,
``epochs_run``, ``parameters`` (all, frozen embeddings included) and ``split_sizes``: the examples
of each split used, ``{"train": n, "dev": n, "test": n}`` after ``train_size``
(:meth:`showwork_models.data.TextDataset.sizes`). Every epoch reports ``train_loss`` and ``val_accuracy``.

CPU / CUDA
----------
Deterministic on CPU (same config and seed, same score). On CUDA the forward pass runs in mixed
precision (bfloat16 where supported; the attention softmaxes stay in float32) and cuDNN's
deterministic algorithms are requested. At the defaults (10.5 M parameters) one epoch over the 6,920
SST-2 training sentences, dev and test evaluation included, took 4.3 minutes with one torch thread on
a busy 2-core machine: the packed LSTMs run step by step on the CPU. Run CPU trials with one thread
each (``resources: {cpus: 1}``); two OpenMP threads on an oversubscribed machine were several times slower.

Installation
------------
allennlp-light is not a dependency of the other families and cannot share their environment: its
ai2-tango dependency pins ``huggingface-hub < 2``, which breaks ``transformers 5`` (the DeBERTa
family). Install the ``bcn`` extra in an environment of its own::

    python -m venv .venv-bcn && .venv-bcn/bin/pip install -e '.[bcn]'

``import showwork_models.bcn`` and :func:`validate_config` work without it; building the model raises an
ImportError that says so.

Deviations from Dodge et al.
----------------------------
- Training data: the 6,920 root-level sentences of the training trees; Dodge et al. (AllenNLP's
  ``sst_tokens`` reader, ``use_subtrees: true``) also train on every labelled phrase of the trees.
- Tokens are lower-cased and the vocabulary is the training split's (:mod:`showwork_models.text`); AllenNLP's
  default keeps case (GloVe 6B is lower-cased) and builds the vocabulary from all three splits.
  Words without a GloVe vector start as U(-0.25, 0.25) (:func:`showwork_models.embeddings.embedding_matrix`)
  rather than AllenNLP's normal draws with the GloVe matrix's mean and standard deviation.
- The reduce-on-plateau schedule watches the dev accuracy in ``max`` mode. Dodge et al.'s AllenNLP
  configuration gives no mode, so PyTorch's default ``min`` applied to ``+accuracy`` (allenai/allennlp
  issue #2895): there the rate was halved whenever the accuracy had not *fallen* for two epochs.
- ELMo (Dodge et al.'s ``bcn_elmo_frozen`` / ``bcn_elmo_ft`` spaces) is not implemented.

References
----------
McCann, Bradbury, Xiong & Socher (2017), Learned in Translation: Contextualized Word Vectors, NeurIPS.
Dodge, Gururangan, Card, Schwartz & Smith (2019), Show Your Work: Improved Reporting of Experimental
Results, EMNLP (allenai/show-your-work).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from torch import nn

from .config import Param, check_config, effective_seed, load_task
from .data import check_data
from .embeddings import EMBEDDING_MODES, initial_embeddings
from .text import EncodedSplit, encode_dataset
from .training import (
    OptimizerStep,
    accuracy,
    bucket_batches,
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

__all__ = [
    "BiattentiveClassificationNetwork",
    "PARAMS",
    "build_model",
    "check_data",
    "train",
    "validate_config",
]

ACTIVATIONS = ("relu", "tanh")
INSTALL_HINT = (
    "the bcn family needs allennlp-light: pip install 'showwork-tuning[bcn]' in a separate environment"
    " (allennlp-light's ai2-tango pins huggingface-hub < 2, which breaks transformers 5), e.g."
    " `python -m venv .venv-bcn && .venv-bcn/bin/pip install -e '.[bcn]'`."
)
_EVAL_BATCH = 256
_PADDING_NOISE = 0.1  # AllenNLP's BucketIterator default

_unit = dict(low=0.0, high=1.0, high_open=True)
PARAMS: dict[str, Param] = {
    "embedding_mode": Param("nonstatic", str, choices=EMBEDDING_MODES),
    "embedding_dim": Param(50, int, low=1),
    "elmo": Param(False, bool),
    "embedding_dropout": Param(0.5, float, **_unit),
    "pre_encode_layers": Param(1, int, low=1),
    "pre_encode_hidden_dim": Param(300, int, low=1),
    "pre_encode_activation": Param("relu", str, choices=ACTIVATIONS),
    "pre_encode_dropout": Param(0.25, float, **_unit),
    "encoder_hidden_dim": Param(300, int, low=1),
    "encoder_layers": Param(1, int, low=1),
    "integrator_hidden_dim": Param(300, int, low=1),
    "integrator_layers": Param(1, int, low=1),
    "integrator_dropout": Param(0.1, float, **_unit),
    "output_layers": Param(2, int, low=1),
    "output_dim": Param(300, int, low=1),
    "output_dropout": Param(0.2, float, **_unit),
    "pool_size": Param(4, int, low=1),
    "lr": Param(0.001, float, low=0.0, low_open=True),
    "grad_norm": Param(5.0, float, low=0.0, low_open=True, optional=True),
    "batch_size": Param(64, int, low=1),
    "epochs": Param(50, int, low=1),
    "patience": Param(10, int, low=0),
    "lr_reduce_patience": Param(2, int, low=0),
    "lr_reduce_factor": Param(0.5, float, low=0.0, high=1.0, low_open=True),
    "max_length": Param(None, int, low=1, optional=True),
    "seed": Param(None, int, low=0, high=2**63 - 1, optional=True),
}


# --- configuration ------------------------------------------------------------------------------


def _elmo_refused(key: str) -> ValueError:
    return ValueError(
        f"bcn config key {key!r}: ELMo is not implemented in the bcn family (GloVe only; Dodge et al.'s"
        " bcn_glove space). Remove the ELMo keys, or use AllenNLP itself for the bcn_elmo_* spaces."
    )


def validate_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """Check a configuration and return it with the defaults filled in (no allennlp-light needed).

    Raises
    ------
    ValueError
        An unknown key (all of them named, with the known ones), a value of the wrong type or out
        of range (the key named), or a request for ELMo.
    """
    if isinstance(config, Mapping):
        for key in config:
            if isinstance(key, str) and "elmo" in key.lower() and (key != "elmo" or config[key] is not False):
                raise _elmo_refused(key)
    return check_config(config, PARAMS, "bcn")


# --- the model ----------------------------------------------------------------------------------


def _allennlp():
    """The allennlp-light modules, imported on first use (an ImportError with the install line if missing)."""
    try:
        from allennlp_light import FeedForward, Maxout
        from allennlp_light.modules.seq2seq_encoders import LstmSeq2SeqEncoder
        from allennlp_light.nn import Activation, util
    except ImportError as error:
        raise ImportError(f"{INSTALL_HINT} ({error})") from error
    return FeedForward, Maxout, LstmSeq2SeqEncoder, Activation, util


class BiattentiveClassificationNetwork(nn.Module):
    """The BCN of Dodge et al.'s ``bcn_modified``: see the module docstring for the architecture.

    Parameters
    ----------
    embedding : ndarray, shape (vocabulary size, d)
        Initial vectors; row 0 is ``<pad>``.
    freeze : bool
        Keep the embeddings fixed (``static``).
    num_classes : int
    embedding_dropout, pre_encode_layers, ..., pool_size
        As in the module docstring.

    Raises
    ------
    ImportError
        allennlp-light is not installed (the message says how to install it).
    """

    def __init__(
        self,
        embedding: np.ndarray,
        *,
        freeze: bool,
        num_classes: int,
        embedding_dropout: float = 0.5,
        pre_encode_layers: int = 1,
        pre_encode_hidden_dim: int = 300,
        pre_encode_activation: str = "relu",
        pre_encode_dropout: float = 0.25,
        encoder_hidden_dim: int = 300,
        encoder_layers: int = 1,
        integrator_hidden_dim: int = 300,
        integrator_layers: int = 1,
        integrator_dropout: float = 0.1,
        output_layers: int = 2,
        output_dim: int = 300,
        output_dropout: float = 0.2,
        pool_size: int = 4,
    ):
        super().__init__()
        FeedForward, Maxout, LstmSeq2SeqEncoder, Activation, util = _allennlp()
        self._util = util
        self.embedding = nn.Embedding.from_pretrained(torch.as_tensor(embedding, dtype=torch.float32), freeze=freeze, padding_idx=0)
        self.embedding_dropout = nn.Dropout(embedding_dropout)
        self.pre_encode = FeedForward(
            self.embedding.embedding_dim,
            num_layers=pre_encode_layers,
            hidden_dims=pre_encode_hidden_dim,
            activations=Activation.by_name(pre_encode_activation)(),
            dropout=pre_encode_dropout,
        )
        self.encoder = LstmSeq2SeqEncoder(pre_encode_hidden_dim, encoder_hidden_dim, num_layers=encoder_layers, bidirectional=True)
        self.integrator = LstmSeq2SeqEncoder(
            3 * self.encoder.get_output_dim(), integrator_hidden_dim, num_layers=integrator_layers, bidirectional=True
        )
        self.integrator_dropout = nn.Dropout(integrator_dropout)
        self.attention_pooling = nn.Linear(self.integrator.get_output_dim(), 1)
        self.output = Maxout(
            4 * self.integrator.get_output_dim(),
            num_layers=output_layers,
            output_dims=output_dim,
            pool_sizes=pool_size,
            dropout=output_dropout,
        )
        self.logits = nn.Linear(output_dim, num_classes)

    def pooled(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """The pooled integrator states ``(batch, 8 * integrator_hidden_dim)``, before dropout."""
        util = self._util
        mask = torch.arange(ids.shape[1], device=ids.device)[None, :] < lengths.to(ids.device)[:, None]
        x = self.pre_encode(self.embedding_dropout(self.embedding(ids)))
        encoded = self.encoder(x, mask)  # (batch, T, 2h); zero at padded positions
        # Softmaxes in float32: allennlp's masked_softmax refuses bfloat16 (mixed precision on CUDA).
        attention = util.masked_softmax(encoded.bmm(encoded.transpose(1, 2).contiguous()).float(), mask)  # over keys
        context = util.weighted_sum(encoded, attention)
        integrated = self.integrator(torch.cat([encoded, encoded - context, encoded * context], dim=2), mask)
        states = mask.unsqueeze(2)
        max_pool = util.masked_max(integrated, states, dim=1)
        min_pool = -util.masked_max(-integrated, states, dim=1)
        mean_pool = util.masked_mean(integrated, states, dim=1)
        weights = util.masked_softmax(self.attention_pooling(integrated).squeeze(2).float(), mask)
        attentive_pool = util.weighted_sum(integrated, weights)
        return torch.cat([max_pool, min_pool, mean_pool, attentive_pool], dim=1)

    def forward(self, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Class logits ``(batch, num_classes)`` of padded ``ids`` (0 = padding) and their ``lengths``."""
        return self.logits(self.output(self.integrator_dropout(self.pooled(ids, lengths))))


_MODEL_KEYS = (
    "embedding_dropout",
    "pre_encode_layers",
    "pre_encode_hidden_dim",
    "pre_encode_activation",
    "pre_encode_dropout",
    "encoder_hidden_dim",
    "encoder_layers",
    "integrator_hidden_dim",
    "integrator_layers",
    "integrator_dropout",
    "output_layers",
    "output_dim",
    "output_dropout",
    "pool_size",
)


def build_model(config: Mapping[str, Any], embedding: np.ndarray, num_classes: int) -> BiattentiveClassificationNetwork:
    """The BCN of a config (validated here) around an initial ``embedding`` matrix.

    Raises
    ------
    ValueError
        A bad config (see :func:`validate_config`).
    ImportError
        allennlp-light is missing (install the ``bcn`` extra in its own environment).
    """
    config = validate_config(config)
    return BiattentiveClassificationNetwork(
        embedding,
        freeze=config["embedding_mode"] == "static",
        num_classes=num_classes,
        **{key: config[key] for key in _MODEL_KEYS},
    )


# --- training -----------------------------------------------------------------------------------


def train(config: dict, *, seed: int, device: str, reporter, data: dict) -> dict:
    """Train the BCN on ``data['dataset']`` and return its best-dev-epoch metrics (see the module docstring)."""
    given, config = config, validate_config(config)
    _allennlp()  # fail before loading data when allennlp-light is missing
    seed = effective_seed(seed, config["seed"])
    seed_everything(seed)
    device = resolve_device(device)
    dataset = load_task(data, "bcn", default_dataset="sst2_trees")
    encoded = encode_dataset(dataset)
    mode = config["embedding_mode"]
    dim = config["embedding_dim"] if mode == "rand" or "embedding_dim" in given else None
    matrix, _ = initial_embeddings(encoded.vocabulary, data, mode=mode, seed=seed, dim=dim, family="bcn")
    model = build_model(config, matrix, dataset.num_classes).to(device)
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=config["lr"])
    step = OptimizerStep(optimizer, device, clip_norm=config["grad_norm"])
    rng = np.random.default_rng(seed)
    max_length = config["max_length"]
    train_lengths = encoded.train.lengths()

    def batch(split: EncodedSplit, indices: np.ndarray) -> tuple[torch.Tensor, torch.Tensor]:
        ids, lengths = split.padded(indices, max_length)
        return torch.from_numpy(ids).to(device), torch.from_numpy(lengths)  # lengths stay on the CPU (packing)

    def batch_loss(indices: np.ndarray) -> torch.Tensor:
        labels = torch.from_numpy(encoded.train.labels[indices]).to(device)
        return nn.functional.cross_entropy(model(*batch(encoded.train, indices)).float(), labels)

    def train_epoch(epoch: int) -> float:
        batches = bucket_batches(train_lengths, config["batch_size"], rng, noise=_PADDING_NOISE)
        return run_training_epoch(model, batches, batch_loss, step, device)

    def evaluate(split_name: str) -> dict[str, float]:
        split = getattr(encoded, split_name)
        order = np.argsort(split.lengths(), kind="stable")  # similar lengths together: less padding
        batches = (order[rows] for rows in minibatches(len(order), _EVAL_BATCH))
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

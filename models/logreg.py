"""N-gram logistic regression (scikit-learn), the linear baseline of Dodge et al. (2019) Fig. 1 on SST-5.

Sentences become bag-of-n-gram vectors (scikit-learn's ``CountVectorizer`` / ``TfidfVectorizer``
with their default lower-casing and word pattern), and a ``LogisticRegression`` with the
``liblinear`` solver is fitted to them, one-vs-rest for more than two classes (one binary
classifier per class, predicting the class of the highest score), as scikit-learn's ``liblinear``
did in Dodge et al.'s experiments (allenai/show-your-work ``scripts/sklearn_lr.py``). Their space
follows Yogatama & Smith (2015): penalty, regularisation, n-grams, stop words, term weighting,
tolerance.

There are no epochs: one fit is one trial. It is reported as epoch 0 (``val_accuracy``), and the
result has the keys of the neural families (``best_epoch`` 0, ``epochs_run`` 1).

The vectorised splits are cached per process, keyed on the dataset's texts and labels and on
(``ngram_range``, ``stopwords``, ``weight``), so the trials of a search that share these settings
vectorise the data once. The vocabulary (and idf) is fitted on the training split only.

This module does not import torch: a search over this family needs only numpy, scipy and
scikit-learn.

Hyperparameters (``config``; the defaults are Dodge et al.'s best SST-5 assignment, their Table 3)
-----------------------------------------------------------------------------------------------
penalty : {'l1', 'l2'}, default 'l2'
C : float > 0, default 0.13
    Inverse regularisation strength.
tol : float > 0, default 0.00014
    Stopping tolerance of liblinear.
ngram_range : str or pair of int, default '1-2'
    ``'a-b'`` or ``[a, b]``: all n-grams with ``a <= n <= b`` (``'1-3'`` is uni-, bi- and trigrams).
stopwords : bool, default True
    Drop scikit-learn's English stop-word list.
weight : {'tf', 'tfidf', 'binary'}, default 'binary'
    Raw counts, tf-idf (``TfidfVectorizer`` defaults: smooth idf, l2-normalised rows), or 0/1.
max_iter : int, default 100
    Iteration limit of liblinear.

Unknown keys and out-of-range values raise a ``ValueError`` that names the key (:func:`validate_config`,
:mod:`showwork_models.config`).

Data (``data``)
---------------
``dataset`` (``sst5``, ``sst2_trees`` or ``sst2``; any single-sentence, single-label dataset of
:mod:`showwork_models.data`) and ``dir``/``source``/``train_size``/``dev_size``/``split_seed`` as in
:func:`showwork_models.data.load_dataset`.

Returns
-------
``val_accuracy``, ``test_accuracy``, ``best_epoch`` (0), ``epochs_run`` (1), ``parameters``
(weights plus intercepts of all the one-vs-rest classifiers), ``n_iter`` (the most iterations
any of them took; equal to ``max_iter`` when liblinear stopped at the limit rather than at ``tol``,
which the ConvergenceWarning it then raises, silenced here, would say) and ``split_sizes``: the
examples of each split used, ``{"train": n, "dev": n, "test": n}`` after ``train_size``
(:meth:`showwork_models.data.TextDataset.sizes`).

CPU / CUDA
----------
CPU only (``device`` is ignored). Deterministic: liblinear's random state is the trial's seed.

References
----------
Dodge, Gururangan, Card, Schwartz & Smith (2019), Show Your Work, EMNLP; Appendix B, Table 3.
Yogatama & Smith (2015), Bayesian Optimization of Text Representations, EMNLP.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import numpy as np

from showwork.trainable import is_integer

from .config import Param, check_config, load_task
from .data import TextDataset, check_data
from .metrics import accuracy
from .text import dataset_fingerprint

__all__ = [
    "PARAMS",
    "build_model",
    "check_data",
    "parse_ngram_range",
    "train",
    "validate_config",
    "vectorize",
]

PENALTIES = ("l1", "l2")
WEIGHTS = ("tf", "tfidf", "binary")
_CACHE_SIZE = 6


def parse_ngram_range(value: Any) -> tuple[int, int]:
    """``'1-3'``, ``[1, 3]`` or ``(1, 3)`` as ``(1, 3)``.

    Raises
    ------
    ValueError
        Anything else; the message completes "logreg config key 'ngram_range' ..." (:class:`showwork_models.config.Param`).
    """
    if isinstance(value, str):
        parts = value.split("-")
        if len(parts) != 2 or not all(p.strip().isdigit() for p in parts):
            raise ValueError(f"must look like '1-2' or [1, 2] (got {value!r}).")
        value = [int(p) for p in parts]
    if (
        not isinstance(value, (list, tuple))
        or len(value) != 2
        or not all(is_integer(v) for v in value)
    ):
        raise ValueError(f"must look like '1-2' or [1, 2] (got {value!r}).")
    low, high = int(value[0]), int(value[1])
    if not 1 <= low <= high:
        raise ValueError(f"needs 1 <= low <= high (got {value!r}).")
    return low, high


PARAMS: dict[str, Param] = {
    "penalty": Param("l2", str, choices=PENALTIES),
    "C": Param(0.13, float, low=0.0, low_open=True),
    "tol": Param(0.00014, float, low=0.0, low_open=True),
    "ngram_range": Param("1-2", tuple, parse=parse_ngram_range),
    "stopwords": Param(True, bool),
    "weight": Param("binary", str, choices=WEIGHTS),
    "max_iter": Param(100, int, low=1),
}


def validate_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """Check a configuration and return it with the defaults filled in (:data:`PARAMS`; ``ngram_range`` as a pair).

    Raises
    ------
    ValueError
        An unknown key (all of them named), or a value of the wrong type or out of range; the
        message names the key.
    """
    return check_config(config, PARAMS, "logreg")


# --- features -----------------------------------------------------------------------------------


_features: OrderedDict[str, tuple] = OrderedDict()


def vectorize(dataset: TextDataset, ngram_range: tuple[int, int], stopwords: bool, weight: str) -> tuple:
    """The train / dev / test feature matrices (CSR), fitted on the training texts; cached per process."""
    key = dataset_fingerprint(dataset, tuple(ngram_range), bool(stopwords), weight)
    if key in _features:
        _features.move_to_end(key)
        return _features[key]
    from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer

    options = {"ngram_range": tuple(ngram_range), "stop_words": "english" if stopwords else None, "lowercase": True}
    vectorizer = TfidfVectorizer(**options) if weight == "tfidf" else CountVectorizer(binary=weight == "binary", **options)
    train = vectorizer.fit_transform(dataset.train.texts)
    matrices = (train, vectorizer.transform(dataset.dev.texts), vectorizer.transform(dataset.test.texts))
    _features[key] = matrices
    while len(_features) > _CACHE_SIZE:
        _features.popitem(last=False)
    return matrices


# --- the model ----------------------------------------------------------------------------------


def build_model(config: Mapping[str, Any], *, seed: int, num_classes: int):
    """The unfitted scikit-learn estimator of a config (validated here): one-vs-rest liblinear for > 2 classes."""
    import sklearn
    from sklearn.linear_model import LogisticRegression
    from sklearn.multiclass import OneVsRestClassifier

    config = validate_config(config)
    options = {"C": config["C"], "tol": config["tol"], "max_iter": config["max_iter"], "solver": "liblinear", "random_state": seed % 2**32}
    version = tuple(int(p) for p in sklearn.__version__.split(".")[:2] if p.isdigit())
    if version >= (1, 8):  # `penalty` is deprecated from 1.8 on; l1_ratio 1 / 0 is L1 / L2
        options["l1_ratio"] = 1.0 if config["penalty"] == "l1" else 0.0
    else:
        options["penalty"] = config["penalty"]
    estimator = LogisticRegression(**options)
    return OneVsRestClassifier(estimator) if num_classes > 2 else estimator


def _parameters(model) -> int:
    estimators = getattr(model, "estimators_", [model])
    return int(sum(e.coef_.size + np.size(e.intercept_) for e in estimators))


def _iterations(model) -> int:
    estimators = getattr(model, "estimators_", [model])
    return int(max(int(np.max(e.n_iter_)) for e in estimators))


def train(config: dict, *, seed: int, device: str, reporter, data: dict) -> dict:
    """Fit the n-gram logistic regression on ``data['dataset']``; see the module docstring."""
    from sklearn.exceptions import ConvergenceWarning

    config = validate_config(config)
    dataset = load_task(data, "logreg")
    x_train, x_dev, x_test = vectorize(dataset, config["ngram_range"], config["stopwords"], config["weight"])
    model = build_model(config, seed=seed, num_classes=dataset.num_classes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        model.fit(x_train, dataset.train.labels)
    val = accuracy(model.predict(x_dev), dataset.dev.labels)
    reporter(epoch=0, val_accuracy=val)
    return {
        "val_accuracy": val,
        "test_accuracy": accuracy(model.predict(x_test), dataset.test.labels),
        "best_epoch": 0.0,
        "epochs_run": 1.0,
        "parameters": float(_parameters(model)),
        "n_iter": float(_iterations(model)),
        "split_sizes": dataset.sizes(),
    }

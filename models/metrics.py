"""Classification metrics of the built-in families (numpy only, so torch-free families share them)."""

from __future__ import annotations

import numpy as np

__all__ = ["accuracy", "micro_f1"]


def accuracy(predicted: np.ndarray, labels: np.ndarray) -> float:
    """Share of exact matches between predicted and true class indices (0 for no examples)."""
    return float(np.mean(np.asarray(predicted) == np.asarray(labels))) if len(labels) else 0.0


def micro_f1(predicted: np.ndarray, labels: np.ndarray) -> float:
    """Micro-averaged F1 of multi-hot predictions: 2·TP / (2·TP + FP + FN) over all (document, label) cells.

    The multi-label metric of Adhikari et al. (2019) and Tang et al. (2020) on Reuters. 0 when there
    are neither predicted nor true labels.
    """
    predicted = np.asarray(predicted, dtype=bool)
    labels = np.asarray(labels, dtype=bool)
    true_positive = np.count_nonzero(predicted & labels)
    denominator = np.count_nonzero(predicted) + np.count_nonzero(labels)
    return 2.0 * true_positive / denominator if denominator else 0.0

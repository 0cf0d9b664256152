"""Data loaders for the built-in families: local files first, the Hugging Face hub otherwise.

The data directory is ``data["dir"]`` from the search-space file, else ``$SHOWWORK_DATA_DIR``.
Each loader caches its result per process, so the trials that one Ray worker runs share it.
"""

from __future__ import annotations

import csv
import lzma
import os
from functools import lru_cache
from pathlib import Path

import numpy as np

__all__ = ["data_dir", "load_sst2"]


def data_dir(data: dict | None = None) -> Path:
    """The local data directory: ``data['dir']`` or ``$SHOWWORK_DATA_DIR``; a clear error if neither exists."""
    root = (data or {}).get("dir") or os.environ.get("SHOWWORK_DATA_DIR")
    if not root:
        raise FileNotFoundError(
            "no data directory: set SHOWWORK_DATA_DIR (or data.dir in the search space) to the folder with sst/, reuters/, ..."
        )
    path = Path(root).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(f"data directory {path} does not exist (from data.dir or SHOWWORK_DATA_DIR).")
    return path


def _read_tsv(path: Path) -> tuple[list[str], np.ndarray]:
    opener = lzma.open if path.suffix == ".xz" else open
    with opener(path, "rt", encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    return [r["sentence"] for r in rows], np.array([int(r["label"]) for r in rows])


@lru_cache(maxsize=4)
def load_sst2(root: str, train_size: int | None = None, dev_size: int = 2000, split_seed: int = 0):
    """GLUE SST-2 as (train, dev, test), each a (sentences, labels) pair.

    GLUE's test labels are hidden, so: **test** = the GLUE dev set (872 sentences); **dev** = a
    seeded random ``dev_size`` of the GLUE training set (67,349 sentences); **train** = the rest,
    or a seeded random ``train_size`` of it. The split depends only on ``split_seed``, never on a
    trial's seed, so every trial sees the same data.
    """
    folder = Path(root) / "sst"
    sentences, labels = _read_tsv(folder / "glue_sst2_train.tsv.xz")
    order = np.random.default_rng(split_seed).permutation(len(sentences))
    dev_idx, train_idx = order[:dev_size], order[dev_size:]
    if train_size is not None:
        train_idx = train_idx[:train_size]
    test = _read_tsv(folder / "glue_sst2_dev.tsv")
    pick = lambda idx: ([sentences[i] for i in idx], labels[idx])  # noqa: E731
    return pick(train_idx), pick(dev_idx), test

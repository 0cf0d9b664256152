"""Datasets of the built-in families: train / dev / test splits from a local folder or the Hugging Face hub.

``load_dataset(name, data)`` returns a :class:`TextDataset` whatever the source. ``data`` is the
``data`` section of the search-space file:

- ``dataset``: one of :data:`DATASETS` (the name can also be passed directly);
- ``source``: ``auto`` (default), ``local`` or ``hub``. ``auto`` reads the local folder when one is
  named (``data.dir`` or ``$SHOWWORK_DATA_DIR``) and the hub otherwise;
- ``dir``: the local data folder (else ``$SHOWWORK_DATA_DIR``), laid out as ``../shared/data``;
- ``train_size``: use a seeded random subset of this many training examples (quick runs);
- ``dev_size``: size of the dev set where it is carved out of the training set;
- ``split_seed``: the seed of every carved split and subset (default 0). Splits never depend on a
  trial's seed, so every trial of a search sees the same data.

Splits and their sizes
----------------------
===========  ====================================  =========================  =====================
dataset      train                                 dev                        test
===========  ====================================  =========================  =====================
reuters      ModApte train minus dev: 5,827        1,943 of ModApte train     ModApte test: 3,019
             (90 topics, multi-label)              (Hedwig's sizes; seeded)
sst2         GLUE train minus dev: 65,349          2,000 of GLUE train        GLUE dev: 872
sst2_trees   PTB trees, neutral dropped: 6,920     872                        1,821
sst5         PTB trees, 5 classes: 8,544           1,101                      2,210
mnli         GLUE train: 392,702                   dev matched: 9,815         dev mismatched: 9,832
rte          GLUE train minus dev: 2,241           249 of GLUE train          GLUE dev: 277
snli         549,367 (pairs without a gold label   9,842                      9,824
             dropped)
===========  ====================================  =========================  =====================

GLUE's test labels are hidden, hence the GLUE dev sets serving as test sets. The local sample files
of ``../shared/data`` give other sizes: MultiNLI is a 480-pair sample of the training set, split
320 / 80 / 80 (seeded); SNLI is the 1,666 / 200 / 400 original-pairs sample of Kaushik et al.;
Reuters from the jsonl files has 7,770 training documents (NLTK's corpus has 7,769), so train is
5,827 or 5,826. Every dataset records how its splits were made in :attr:`TextDataset.notes`, and
:meth:`TextDataset.sizes` gives the sizes after ``dev_size`` and ``train_size``: every built-in
family returns them as ``split_sizes``.

Labels are integers: SST-2 0 = negative, 1 = positive; SST-5 0 = very negative ... 4 = very
positive; NLI 0 = entailment, 1 = neutral (RTE: not_entailment), 2 = contradiction. Reuters labels
are a multi-hot ``uint8`` matrix over the 90 topics in alphabetical order.

Local layouts (under the data folder; the first that exists is used):

- reuters: ``reuters/modapte90_{train,test}.jsonl.gz``; an NLTK ``reuters`` corpus folder
  (``reuters/nltk`` or ``corpora/reuters``: ``cats.txt``, ``training/``, ``test/``); or the 22 UCI
  SGML files (``reuters/reuters21578/reut2-*.sgm``), split by the ModApte rule.
- sst2: ``sst/glue_sst2_{train,dev}.tsv[.xz]`` or ``SST-2/{train,dev}.tsv``.
- sst2_trees, sst5: ``sst/trainDevTestTrees_PTB.zip`` or ``sst/trees/{train,dev,test}.txt``.
- mnli: ``MNLI/{train,dev_matched,dev_mismatched}.tsv``, else ``nli/mnli_lmbff_kshot_480.tsv``.
- rte: ``nli/glue_rte_{train,dev}.tsv`` or ``RTE/{train,dev}.tsv``.
- snli: ``snli_1.0/snli_1.0_{train,dev,test}.jsonl``, else ``nli/snli_cad_original_{train,dev,test}.tsv``.

Hub sources: ``nyu-mll/glue`` (sst2, mnli, rte), ``SetFit/sst5`` (sst5, and sst2_trees by dropping
neutral), ``stanfordnlp/snli``, and for Reuters NLTK's corpus (``nltk.download('reuters')``).
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import lzma
import os
import re
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "DATASETS",
    "DataUnavailable",
    "Split",
    "TextDataset",
    "check_data",
    "data_dir",
    "load_dataset",
    "parse_ptb_tree",
    "read_reuters_nltk",
    "read_reuters_sgml",
]

NLI_LABELS = ("entailment", "neutral", "contradiction")
SST5_LABELS = ("very negative", "negative", "neutral", "positive", "very positive")
SST2_LABELS = ("negative", "positive")
RTE_LABELS = ("entailment", "not_entailment")

# name -> (hub id, hub config) for `datasets.load_dataset`; Reuters comes from NLTK instead.
HUB_SOURCES: dict[str, tuple[str, str | None]] = {
    "sst2": ("nyu-mll/glue", "sst2"),
    "sst2_trees": ("SetFit/sst5", None),
    "sst5": ("SetFit/sst5", None),
    "mnli": ("nyu-mll/glue", "mnli"),
    "rte": ("nyu-mll/glue", "rte"),
    "snli": ("stanfordnlp/snli", None),
}
DATASETS = ("reuters", "sst2", "sst2_trees", "sst5", "mnli", "rte", "snli")

_DEFAULT_DEV_SIZE = {"reuters": 1943, "sst2": 2000, "rte": 249}


class DataUnavailable(FileNotFoundError):
    """A dataset, word vectors or a pre-trained model cannot be loaded: not found locally and not reachable on the hub."""


@dataclass(frozen=True, eq=False)
class Split:
    """One split: ``texts`` (strings, or (premise, hypothesis) pairs) and their ``labels``.

    ``labels`` is an int64 vector, or for multi-label data a ``uint8`` matrix (examples × classes).
    """

    texts: list
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.texts)

    def subset(self, indices: Sequence[int] | np.ndarray) -> Split:
        indices = np.asarray(indices, dtype=np.int64)
        return Split([self.texts[i] for i in indices], self.labels[indices])


@dataclass(frozen=True, eq=False)
class TextDataset:
    """A text-classification dataset with train / dev / test splits.

    Attributes
    ----------
    name : str
        One of :data:`DATASETS`.
    train, dev, test : Split
    label_names : tuple of str
        The class names, in label order.
    multilabel : bool
        Labels are multi-hot rows (Reuters) rather than class indices.
    pairs : bool
        Texts are (premise, hypothesis) pairs (NLI).
    source : str
        Where it was read from: a local path or ``hub:<id>[/<config>]``.
    notes : str
        How the splits were made (carved dev sets, subsets, dropped examples).
    """

    name: str
    train: Split
    dev: Split
    test: Split
    label_names: tuple[str, ...]
    multilabel: bool = False
    pairs: bool = False
    source: str = ""
    notes: str = ""

    @cached_property
    def fingerprint(self) -> str:
        """A hex digest of the texts and labels of every split (computed once per dataset object).

        Equal fingerprints mean equal data, whatever the source it was read from; per-dataset caches
        key on it (see :func:`showwork_models.text.dataset_fingerprint`).
        """
        h = hashlib.blake2b(digest_size=16)
        h.update(f"{self.name}|{self.pairs}|{self.multilabel}".encode())
        for split in (self.train, self.dev, self.test):
            h.update(f"|{len(split)}|".encode())
            for text in split.texts:
                h.update(("\x1f".join(text) if isinstance(text, tuple) else text).encode())
                h.update(b"\x1e")
            h.update(np.ascontiguousarray(split.labels).tobytes())
        return h.hexdigest()

    @property
    def num_classes(self) -> int:
        return len(self.label_names)

    def sizes(self) -> dict[str, int]:
        """Number of examples per split: ``{"train": ..., "dev": ..., "test": ...}``, plain ints.

        The sizes of this object's splits, i.e. after the dev set was carved out of train and
        train subsampled to ``data.train_size``: the data a trial actually trains, selects and
        tests on. Every built-in family returns them as its ``split_sizes`` (for the report's
        reproducibility checklist). All three keys are always present; a split without examples
        counts 0 (every dataset of :data:`DATASETS` has a test split).
        """
        return {"train": len(self.train), "dev": len(self.dev), "test": len(self.test)}

    def majority_baseline(self, split: str = "dev") -> float:
        """Accuracy (micro-F1 for multi-label) of always predicting the training set's majority.

        For multi-label data the baseline predicts the single most frequent topic for every
        document, which is what a degenerate classifier reaches.
        """
        labels = getattr(self, split).labels
        if self.multilabel:
            top = int(np.argmax(self.train.labels.sum(axis=0)))
            predicted = np.zeros_like(labels)
            predicted[:, top] = 1
            true_positive = float((predicted & labels).sum())
            denominator = float(predicted.sum() + labels.sum())
            return 2 * true_positive / denominator if denominator else 0.0
        majority = int(np.bincount(self.train.labels, minlength=self.num_classes).argmax())
        return float(np.mean(labels == majority))


# --- the data folder ----------------------------------------------------------------------------


def data_dir(data: Mapping[str, Any] | None = None) -> Path:
    """The local data folder: ``data['dir']`` or ``$SHOWWORK_DATA_DIR``; a clear error if neither exists."""
    root = _local_root(data)
    if root is None:
        raise DataUnavailable(
            "no data directory: set SHOWWORK_DATA_DIR (or data.dir in the search space) to the folder with sst/, reuters/, ..."
        )
    return root


def check_data(data: Mapping[str, Any] | None = None) -> None:
    """Fail fast on an unknown dataset or source, or a local data folder that does not exist or lacks the dataset.

    The family's pre-flight check.

    ``showwork search`` calls a family module's ``check_data(data)`` before it starts anything (see
    :mod:`showwork.trainable`). A folder named by ``data['dir']`` or ``$SHOWWORK_DATA_DIR``, or
    ``source: local``, must exist and hold the files of ``data['dataset']`` in one of the local
    layouts (the module docstring; their names only are checked, not their contents); with no folder
    named (or ``source: hub``) the datasets come from the hub, which cannot be checked quickly here
    (nor offline): a search whose trials then all fail alike stops after its first ones
    (``fail_fast_after``).

    Raises
    ------
    ValueError
        ``data.dataset`` is not one of :data:`DATASETS`, or ``data.source`` is not auto, local or hub.
    DataUnavailable
        The named folder is missing or holds none of the dataset's files, or ``source: local`` names none;
        the message names ``SHOWWORK_DATA_DIR``.
    """
    data = data or {}
    if data.get("dataset") is not None:
        _check_dataset(data["dataset"])
    source = _check_source(data)
    if source == "local" or (source == "auto" and (data.get("dir") or os.environ.get("SHOWWORK_DATA_DIR"))):
        root = data_dir(data)
        if data.get("dataset") is not None:
            _check_local_files(data["dataset"], root)


def _check_local_files(name: str, root: Path) -> None:
    """Raise :class:`DataUnavailable` unless ``root`` holds each part of dataset ``name`` (:data:`_LOCAL_FILES`)."""
    for alternatives in _LOCAL_FILES[name]:
        if _first(root, *alternatives) is None:
            raise _missing(name, root, " or ".join((", ".join(alternatives[:-1]), alternatives[-1])) if alternatives[1:] else alternatives[0])


def _check_dataset(name: Any) -> str:
    if name not in DATASETS:
        raise ValueError(f"data.dataset: unknown dataset {name!r}; choose one of {', '.join(DATASETS)}.")
    return name


def _check_source(data: Mapping[str, Any]) -> str:
    source = data.get("source", "auto")
    if source not in ("auto", "local", "hub"):
        raise ValueError(f"data.source must be auto, local or hub (got {source!r}).")
    return source


def _local_root(data: Mapping[str, Any] | None) -> Path | None:
    root = (data or {}).get("dir") or os.environ.get("SHOWWORK_DATA_DIR")
    if not root:
        return None
    path = Path(str(root)).expanduser()
    if not path.is_dir():
        raise DataUnavailable(f"data directory {path} does not exist (from data.dir or SHOWWORK_DATA_DIR).")
    return path


# --- the entry point ------------------------------------------------------------------------------


def load_dataset(name: str | None = None, data: Mapping[str, Any] | None = None, *, hub_loader: Callable | None = None) -> TextDataset:
    """Load a dataset's train / dev / test splits (cached per process).

    Parameters
    ----------
    name : str, optional
        One of :data:`DATASETS`; default ``data['dataset']``.
    data : mapping, optional
        The ``data`` section of a search space (see the module docstring).
    hub_loader : callable, optional
        Replaces ``datasets.load_dataset`` (tests, mirrors). Called as ``hub_loader(id, config)``.

    Raises
    ------
    DataUnavailable
        The files are missing locally, or the hub cannot be reached; the message names
        ``SHOWWORK_DATA_DIR``.
    ValueError
        An unknown dataset name or option.
    """
    data = dict(data or {})
    name = _check_dataset(name or data.get("dataset"))
    source = _check_source(data)
    options = (
        int(data["train_size"]) if data.get("train_size") is not None else None,
        int(data.get("dev_size", _DEFAULT_DEV_SIZE.get(name, 0))),
        int(data.get("split_seed", 0)),
    )
    root = _local_root(data) if source != "hub" else None
    if source == "local" and root is None:
        data_dir(data)  # raises with the message that names SHOWWORK_DATA_DIR
    if hub_loader is not None:
        return _shape(_from_hub(name, hub_loader), *options)
    return _cached(name, str(root) if root is not None else None, options)


@lru_cache(maxsize=8)
def _cached(name: str, root: str | None, options: tuple) -> TextDataset:
    raw = _from_local(name, Path(root)) if root is not None else _from_hub(name, _datasets_hub_loader)
    return _shape(raw, *options)


# The loaders below return a "raw" dataset: the dataset's own splits, before the dev set is carved
# out of train (where the dataset has no labelled dev/test of its own) and before subsetting.


@dataclass(frozen=True, eq=False)
class _Raw:
    name: str
    train: Split
    dev: Split | None  # None: carve dev_size examples out of train
    test: Split
    label_names: tuple[str, ...]
    source: str
    multilabel: bool = False
    pairs: bool = False
    notes: tuple[str, ...] = ()


def _shape(raw: _Raw, train_size: int | None, dev_size: int, split_seed: int) -> TextDataset:
    notes = list(raw.notes)
    train, dev = raw.train, raw.dev
    rng = np.random.default_rng(split_seed)
    if dev is None:
        if not 0 < dev_size < len(train):
            raise ValueError(f"data.dev_size must be between 1 and {len(train) - 1} for {raw.name} (got {dev_size}).")
        order = rng.permutation(len(train))
        dev, train = train.subset(np.sort(order[:dev_size])), train.subset(np.sort(order[dev_size:]))
        notes.append(f"dev = {dev_size} training examples drawn with split_seed {split_seed}; train = the rest")
    if train_size is not None:
        if train_size < 1:
            raise ValueError(f"data.train_size must be positive (got {train_size}).")
        if train_size < len(train):
            keep = np.sort(np.random.default_rng([split_seed, 1]).permutation(len(train))[:train_size])
            train = train.subset(keep)
            notes.append(f"train subsampled to {train_size} examples (split_seed {split_seed})")
    return TextDataset(
        name=raw.name,
        train=train,
        dev=dev,
        test=raw.test,
        label_names=raw.label_names,
        multilabel=raw.multilabel,
        pairs=raw.pairs,
        source=raw.source,
        notes="; ".join(notes),
    )


# --- local files ----------------------------------------------------------------------------------


# What each dataset needs under the data folder, as the readers below look for it: for each part, the
# paths of which one must exist (a file, or a folder of the layout). check_data refuses a folder without
# them before any trial starts; the readers of sst2 and rte take their paths from here.
_LOCAL_FILES: dict[str, tuple[tuple[str, ...], ...]] = {
    "reuters": (("reuters/modapte90_train.jsonl.gz", "reuters/nltk/cats.txt", "corpora/reuters/cats.txt",
                 "reuters/cats.txt", "reuters/reuters21578", "reuters21578"),),
    "sst2": (("sst/glue_sst2_train.tsv.xz", "sst/glue_sst2_train.tsv", "SST-2/train.tsv"),
             ("sst/glue_sst2_dev.tsv", "SST-2/dev.tsv")),
    "sst2_trees": (("sst/trainDevTestTrees_PTB.zip", "sst/trees/train.txt"),),
    "sst5": (("sst/trainDevTestTrees_PTB.zip", "sst/trees/train.txt"),),
    "mnli": (("MNLI/train.tsv", "nli/MNLI/train.tsv", "nli/mnli/train.tsv", "nli/mnli_lmbff_kshot_480.tsv"),),
    "rte": (("nli/glue_rte_train.tsv", "RTE/train.tsv"), ("nli/glue_rte_dev.tsv", "RTE/dev.tsv")),
    "snli": (("snli_1.0", "nli/snli_1.0", "nli/snli_cad_original_train.tsv"),),
}


def _first(root: Path, *candidates: str) -> Path | None:
    for candidate in candidates:
        if (root / candidate).exists():
            return root / candidate
    return None


def _missing(name: str, root: Path, expected: str) -> DataUnavailable:
    return DataUnavailable(
        f"dataset {name!r}: no {expected} under {root} (the folder named by SHOWWORK_DATA_DIR or data.dir);"
        " point SHOWWORK_DATA_DIR at a folder laid out as ../shared/data, or use data.source: hub."
    )


def _from_local(name: str, root: Path) -> _Raw:
    return _LOCAL_READERS[name](root)


def _open_text(path: Path):
    if path.suffix == ".xz":
        return lzma.open(path, "rt", encoding="utf-8", newline="")
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


def _tsv_rows(path: Path) -> list[dict[str, str]]:
    with _open_text(path) as f:
        return list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))


def _pair(first: str, second: str) -> tuple[str, str]:
    return first.strip(), second.strip()


def _label_index(value: str, names: Sequence[str], where: str) -> int:
    try:
        return names.index(value.strip())
    except ValueError:
        raise ValueError(f"{where}: unknown label {value!r} (expected one of {', '.join(names)}).") from None


def _local_reuters(root: Path) -> _Raw:
    if (root / "reuters" / "modapte90_train.jsonl.gz").exists():
        folder = root / "reuters"
        docs = {}
        for split in ("train", "test"):
            with gzip.open(folder / f"modapte90_{split}.jsonl.gz", "rt", encoding="utf-8") as f:
                docs[split] = [json.loads(line) for line in f if line.strip()]
        return _reuters_from_docs(docs["train"], docs["test"], str(folder))
    nltk_dir = _first(root, "reuters/nltk", "corpora/reuters", "reuters")
    if nltk_dir is not None and (nltk_dir / "cats.txt").exists():
        train, test = read_reuters_nltk(nltk_dir)
        return _reuters_from_docs(train, test, str(nltk_dir))
    sgml_dir = _first(root, "reuters/reuters21578", "reuters21578")
    if sgml_dir is not None:
        train, test = read_reuters_sgml(sgml_dir)
        return _reuters_from_docs(train, test, str(sgml_dir))
    raise _missing("reuters", root, "reuters/modapte90_{train,test}.jsonl.gz, NLTK reuters corpus or reuters21578/*.sgm")


def _reuters_from_docs(train_docs: list[dict], test_docs: list[dict], source: str) -> _Raw:
    """ModApte-90: the topics with at least one training and one test document (Yang & Liu 1999)."""
    train_docs = [d for d in train_docs if d["labels"]]
    test_docs = [d for d in test_docs if d["labels"]]
    in_train = {t for d in train_docs for t in d["labels"]}
    in_test = {t for d in test_docs for t in d["labels"]}
    topics = tuple(sorted(in_train & in_test))
    position = {t: i for i, t in enumerate(topics)}

    def split(docs: list[dict]) -> Split:
        kept = [d for d in docs if any(t in position for t in d["labels"])]
        labels = np.zeros((len(kept), len(topics)), dtype=np.uint8)
        for row, doc in enumerate(kept):
            for topic in doc["labels"]:
                if topic in position:
                    labels[row, position[topic]] = 1
        texts = [(d.get("title") or "").strip() + "\n" + (d.get("text") or "").strip() for d in kept]
        return Split([t.strip() for t in texts], labels)

    return _Raw(
        "reuters",
        split(train_docs),
        None,
        split(test_docs),
        topics,
        source,
        multilabel=True,
        notes=(f"ModApte split, {len(topics)} topics with >= 1 training and >= 1 test document",),
    )


def read_reuters_nltk(folder: Path) -> tuple[list[dict], list[dict]]:
    """Read NLTK's ``reuters`` corpus folder: ``cats.txt`` (``training/123 topic ...``) and one file per document.

    NLTK's corpus is the ModApte split already (``training/`` and ``test/``); the first line of each
    document is its title.
    """
    folder = Path(folder)
    splits: dict[str, list[dict]] = {"training": [], "test": []}
    with open(folder / "cats.txt", encoding="latin-1") as f:
        for line_number, line in enumerate(f, 1):
            parts = line.split()
            if not parts:
                continue
            fileid, topics = parts[0], parts[1:]
            split, _, doc_id = fileid.partition("/")
            if split not in splits:
                raise ValueError(f"{folder / 'cats.txt'}:{line_number}: unexpected file id {fileid!r}")
            raw = (folder / fileid).read_text(encoding="latin-1")
            title, _, body = raw.partition("\n")
            splits[split].append({"id": doc_id, "labels": topics, "title": title.strip(), "text": body})
    return splits["training"], splits["test"]


_SGML_DOC = re.compile(r"<REUTERS\b([^>]*)>(.*?)</REUTERS>", re.S)
_SGML_ATTR = re.compile(r'(\w+)="([^"]*)"')
_SGML_TOPIC = re.compile(r"<D>(.*?)</D>", re.S)
_SGML_ENTITY = {"&lt;": "<", "&gt;": ">", "&amp;": "&", "&#3;": "", "&#5;": "", "&#22;": "", "&#30;": "", "&#31;": "", "&#127;": ""}


def _sgml_field(body: str, tag: str) -> str:
    match = re.search(rf"<{tag}>(.*?)</{tag}>", body, re.S)
    text = match.group(1) if match else ""
    for entity, char in _SGML_ENTITY.items():
        text = text.replace(entity, char)
    return text


def read_reuters_sgml(folder: Path) -> tuple[list[dict], list[dict]]:
    """Read the 22 UCI ``reut2-*.sgm`` files and split them by the ModApte rule.

    ModApte (Apté et al. 1994): ``LEWISSPLIT="TRAIN"`` / ``"TEST"`` with ``TOPICS="YES"``; other
    documents are unused. Topics are the ``<D>`` entries of ``<TOPICS>``.
    """
    files = sorted(Path(folder).glob("reut2-*.sgm"))
    if not files:
        raise DataUnavailable(f"no reut2-*.sgm files in {folder}")
    train, test = [], []
    for path in files:
        text = path.read_bytes().decode("latin-1")
        for attributes, body in _SGML_DOC.findall(text):
            attrs = dict(_SGML_ATTR.findall(attributes))
            if attrs.get("TOPICS") != "YES":
                continue
            topics_block = re.search(r"<TOPICS>(.*?)</TOPICS>", body, re.S)
            doc = {
                "id": int(attrs.get("NEWID", "0")),
                "labels": _SGML_TOPIC.findall(topics_block.group(1)) if topics_block else [],
                "title": _sgml_field(body, "TITLE"),
                "text": _sgml_field(body, "BODY"),
            }
            if attrs.get("LEWISSPLIT") == "TRAIN":
                train.append(doc)
            elif attrs.get("LEWISSPLIT") == "TEST":
                test.append(doc)
    return train, test


def _local_sst2(root: Path) -> _Raw:
    train, dev = (_first(root, *alternatives) for alternatives in _LOCAL_FILES["sst2"])
    if train is None or dev is None:
        raise _missing("sst2", root, "sst/glue_sst2_{train,dev}.tsv[.xz] or SST-2/{train,dev}.tsv")

    def split(path: Path) -> Split:
        rows = _tsv_rows(path)
        return Split([r["sentence"].strip() for r in rows], np.array([int(r["label"]) for r in rows], dtype=np.int64))

    return _Raw("sst2", split(train), None, split(dev), SST2_LABELS, str(train.parent), notes=("test = GLUE dev (GLUE's test labels are hidden)",))


# PTB trees: "(3 (2 It) (4 (2 's) ...))". The root label is the sentence's; leaves are the tokens.
_PTB_LEAF = re.compile(r"\(\d+ ([^()\s]+)\)")


def parse_ptb_tree(line: str) -> tuple[int, str]:
    """Return (root label, sentence) of one SST tree line; the sentence is its leaves joined by spaces."""
    line = line.strip()
    if not (line.startswith("(") and line.endswith(")")) or not line[1:2].isdigit():
        raise ValueError(f"not an SST tree: {line[:60]!r}")
    return int(line[1]), " ".join(_PTB_LEAF.findall(line))


def _read_trees(root: Path) -> dict[str, list[tuple[int, str]]]:
    archive = _first(root, "sst/trainDevTestTrees_PTB.zip")
    folder = _first(root, "sst/trees")
    out = {}
    for split in ("train", "dev", "test"):
        if archive is not None:
            with zipfile.ZipFile(archive) as z, z.open(f"trees/{split}.txt") as f:
                lines = io.TextIOWrapper(f, encoding="utf-8").read().splitlines()
        elif folder is not None and (folder / f"{split}.txt").exists():
            lines = (folder / f"{split}.txt").read_text(encoding="utf-8").splitlines()
        else:
            raise _missing("sst5", root, "sst/trainDevTestTrees_PTB.zip or sst/trees/{train,dev,test}.txt")
        out[split] = [parse_ptb_tree(line) for line in lines if line.strip()]
    return out


def _sst_from_trees(trees: Mapping[str, Iterable[tuple[int, str]]], binary: bool, source: str) -> _Raw:
    """SST-5 as is; SST-2 as AllenNLP's reader with ``granularity='2-class'``: neutral (2) dropped, 0-1 → 0, 3-4 → 1."""

    def split(items: Iterable[tuple[int, str]]) -> Split:
        texts, labels = [], []
        for label, sentence in items:
            if binary:
                if label == 2:
                    continue
                label = int(label > 2)
            texts.append(sentence)
            labels.append(label)
        return Split(texts, np.array(labels, dtype=np.int64))

    name = "sst2_trees" if binary else "sst5"
    notes = ("sentence-level (root) labels; neutral sentences dropped",) if binary else ("sentence-level (root) labels",)
    return _Raw(name, split(trees["train"]), split(trees["dev"]), split(trees["test"]), SST2_LABELS if binary else SST5_LABELS, source, notes=notes)


def _local_mnli(root: Path) -> _Raw:
    glue = _first(root, "MNLI", "nli/MNLI", "nli/mnli")
    if glue is not None and (glue / "train.tsv").exists():

        def split(path: Path) -> Split:
            rows = _tsv_rows(path)
            return Split(
                [_pair(r["sentence1"], r["sentence2"]) for r in rows],
                np.array([_label_index(r["gold_label"], NLI_LABELS, str(path)) for r in rows], dtype=np.int64),
            )

        return _Raw(
            "mnli",
            split(glue / "train.tsv"),
            split(glue / "dev_matched.tsv"),
            split(glue / "dev_mismatched.tsv"),
            NLI_LABELS,
            str(glue),
            pairs=True,
            notes=("dev = GLUE dev matched; test = GLUE dev mismatched",),
        )
    sample = _first(root, "nli/mnli_lmbff_kshot_480.tsv")
    if sample is None:
        raise _missing("mnli", root, "MNLI/{train,dev_matched,dev_mismatched}.tsv or nli/mnli_lmbff_kshot_480.tsv")
    rows = _tsv_rows(sample)
    whole = Split(
        [_pair(r["premise"], r["hypothesis"]) for r in rows],
        np.array([_label_index(r["label"], NLI_LABELS, str(sample)) for r in rows], dtype=np.int64),
    )
    # A 480-pair sample of the training set: split 2/3, 1/6, 1/6 with a fixed seed (not split_seed:
    # the test set must not move when a user changes the dev split).
    order = np.random.default_rng(0).permutation(len(whole))
    sixth = len(whole) // 6
    test, dev, train = (whole.subset(np.sort(part)) for part in (order[:sixth], order[sixth : 2 * sixth], order[2 * sixth :]))
    return _Raw(
        "mnli", train, dev, test, NLI_LABELS, str(sample), pairs=True,
        notes=(f"a {len(whole)}-pair sample of MultiNLI train split {len(train)}/{len(dev)}/{len(test)} (seed 0)",),
    )


def _local_rte(root: Path) -> _Raw:
    train, dev = (_first(root, *alternatives) for alternatives in _LOCAL_FILES["rte"])
    if train is None or dev is None:
        raise _missing("rte", root, "nli/glue_rte_{train,dev}.tsv or RTE/{train,dev}.tsv")

    def split(path: Path) -> Split:
        rows = _tsv_rows(path)
        return Split(
            [_pair(r["sentence1"], r["sentence2"]) for r in rows],
            np.array([_label_index(r["label"], RTE_LABELS, str(path)) for r in rows], dtype=np.int64),
        )

    return _Raw("rte", split(train), None, split(dev), RTE_LABELS, str(train.parent), pairs=True, notes=("test = GLUE dev (GLUE's test labels are hidden)",))


def _local_snli(root: Path) -> _Raw:
    official = _first(root, "snli_1.0", "nli/snli_1.0")
    if official is not None:

        def split(name: str) -> Split:
            with open(official / f"snli_1.0_{name}.jsonl", encoding="utf-8") as f:
                rows = [json.loads(line) for line in f if line.strip()]
            rows = [r for r in rows if r["gold_label"] in NLI_LABELS]
            return Split([_pair(r["sentence1"], r["sentence2"]) for r in rows], np.array([NLI_LABELS.index(r["gold_label"]) for r in rows], dtype=np.int64))

        return _Raw("snli", split("train"), split("dev"), split("test"), NLI_LABELS, str(official), pairs=True, notes=("pairs without a gold label dropped",))
    if _first(root, "nli/snli_cad_original_train.tsv") is None:
        raise _missing("snli", root, "snli_1.0/snli_1.0_{train,dev,test}.jsonl or nli/snli_cad_original_{train,dev,test}.tsv")

    def cad(name: str) -> Split:
        path = root / "nli" / f"snli_cad_original_{name}.tsv"
        rows = _tsv_rows(path)
        return Split(
            [_pair(r["sentence1"], r["sentence2"]) for r in rows],
            np.array([_label_index(r["gold_label"], NLI_LABELS, str(path)) for r in rows], dtype=np.int64),
        )

    return _Raw("snli", cad("train"), cad("dev"), cad("test"), NLI_LABELS, str(root / "nli"), pairs=True, notes=("the original-pairs sample of Kaushik et al. 2020",))


_LOCAL_READERS: dict[str, Callable[[Path], _Raw]] = {
    "reuters": _local_reuters,
    "sst2": _local_sst2,
    "sst2_trees": lambda root: _sst_from_trees(_read_trees(root), True, str(root / "sst")),
    "sst5": lambda root: _sst_from_trees(_read_trees(root), False, str(root / "sst")),
    "mnli": _local_mnli,
    "rte": _local_rte,
    "snli": _local_snli,
}


# --- the hub ---------------------------------------------------------------------------------------


def _datasets_hub_loader(hub_id: str, config: str | None):
    try:
        import datasets
    except ImportError:
        raise DataUnavailable(
            "the Hugging Face `datasets` package is not installed: `pip install datasets`, or set"
            " SHOWWORK_DATA_DIR to a local data folder."
        ) from None
    return datasets.load_dataset(hub_id, config) if config else datasets.load_dataset(hub_id)


def _from_hub(name: str, loader: Callable) -> _Raw:
    if name == "reuters":
        return _reuters_from_nltk_download()
    hub_id, config = HUB_SOURCES[name]
    where = f"hub:{hub_id}" + (f"/{config}" if config else "")
    try:
        splits = loader(hub_id, config)
    except DataUnavailable:
        raise
    except Exception as error:  # connection refused, offline mode, missing repo: all mean "not here"
        raise DataUnavailable(
            f"dataset {name!r}: cannot load {hub_id}{'/' + config if config else ''} from the Hugging Face hub"
            f" ({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}); set SHOWWORK_DATA_DIR"
            " (or data.dir) to a local data folder laid out as ../shared/data."
        ) from None
    return _HUB_CONVERTERS[name](splits, where)


def _hub_split(rows, text_columns: Sequence[str], label_column: str = "label", keep: Callable[[int], bool] = lambda label: label >= 0) -> Split:
    columns = {column: list(rows[column]) for column in (*text_columns, label_column)}
    labels = [int(v) for v in columns[label_column]]
    kept = [i for i, label in enumerate(labels) if keep(label)]
    # Stripped like the local files (GLUE's hub sentences end with a space).
    if len(text_columns) == 1:
        texts = [columns[text_columns[0]][i].strip() for i in kept]
    else:
        texts = [tuple(columns[c][i].strip() for c in text_columns) for i in kept]
    return Split(texts, np.array([labels[i] for i in kept], dtype=np.int64))


def _hub_sst2(splits, where: str) -> _Raw:
    train, test = _hub_split(splits["train"], ["sentence"]), _hub_split(splits["validation"], ["sentence"])
    return _Raw("sst2", train, None, test, SST2_LABELS, where, notes=("test = GLUE validation (GLUE's test labels are hidden)",))


def _hub_sst_trees(binary: bool):
    def convert(splits, where: str) -> _Raw:
        trees = {
            split: list(zip((int(v) for v in splits[hub_split]["label"]), (t.strip() for t in splits[hub_split]["text"])))
            for split, hub_split in (("train", "train"), ("dev", "validation"), ("test", "test"))
        }
        return _sst_from_trees(trees, binary, where)

    return convert


def _hub_mnli(splits, where: str) -> _Raw:
    pair = ["premise", "hypothesis"]
    return _Raw(
        "mnli",
        _hub_split(splits["train"], pair),
        _hub_split(splits["validation_matched"], pair),
        _hub_split(splits["validation_mismatched"], pair),
        NLI_LABELS,
        where,
        pairs=True,
        notes=("dev = GLUE validation matched; test = GLUE validation mismatched",),
    )


def _hub_rte(splits, where: str) -> _Raw:
    pair = ["sentence1", "sentence2"]
    return _Raw("rte", _hub_split(splits["train"], pair), None, _hub_split(splits["validation"], pair), RTE_LABELS, where, pairs=True, notes=("test = GLUE validation (GLUE's test labels are hidden)",))


def _hub_snli(splits, where: str) -> _Raw:
    pair = ["premise", "hypothesis"]
    return _Raw(
        "snli", *(_hub_split(splits[s], pair) for s in ("train", "validation", "test")), NLI_LABELS, where, pairs=True,
        notes=("pairs without a gold label (-1) dropped",),
    )


_HUB_CONVERTERS: dict[str, Callable[[Any, str], _Raw]] = {
    "sst2": _hub_sst2,
    "sst2_trees": _hub_sst_trees(True),
    "sst5": _hub_sst_trees(False),
    "mnli": _hub_mnli,
    "rte": _hub_rte,
    "snli": _hub_snli,
}


def _reuters_from_nltk_download() -> _Raw:
    """Reuters-21578 ModApte from NLTK's data server (``nltk.download('reuters')``)."""
    try:
        import nltk
    except ImportError:
        raise DataUnavailable(
            "dataset 'reuters': no local copy (set SHOWWORK_DATA_DIR to a folder with reuters/) and the"
            " `nltk` package to download it is not installed (`pip install nltk`)."
        ) from None
    from showwork.trainable import cache_directory

    target = cache_directory() / "nltk_data"
    corpus = target / "corpora" / "reuters"
    if not (corpus / "cats.txt").exists():
        archive = target / "corpora" / "reuters.zip"
        if not archive.exists() and not nltk.download("reuters", download_dir=str(target), quiet=True, raise_on_error=False):
            raise DataUnavailable(
                "dataset 'reuters': NLTK could not download the corpus (no internet?); set SHOWWORK_DATA_DIR"
                " to a local folder with reuters/modapte90_{train,test}.jsonl.gz or the UCI reuters21578/*.sgm files."
            )
        with zipfile.ZipFile(archive) as z:
            z.extractall(target / "corpora")
    train, test = read_reuters_nltk(corpus)
    return _reuters_from_docs(train, test, f"nltk:{corpus}")

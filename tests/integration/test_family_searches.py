"""The papers' search spaces run as real searches: `showwork search` → Ray Tune workers → each family.

Each space of ``search_spaces/`` is loaded as written (the papers' bounds), shrunk only where a CPU
test must be short — a few hundred training examples, one or two epochs — and run for two trials,
two at a time, through Ray and MLflow-SQLite. This is what the family unit tests cannot show:
that the families import, load their data and train inside Ray's worker processes, with configs
sampled from the papers' distributions.
"""

from __future__ import annotations

import contextlib
import io

import pytest
import yaml

from showwork.cli import main
from showwork.sampling import trial_config
from showwork.store import Ledger

from helpers import REPO_ROOT, search_environment

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SPACES = REPO_ROOT / "search_spaces"

# space file -> (data overrides, constants that replace sampled or fixed values to keep a CPU trial short)
CASES = {
    "sst5_logreg.yaml": ({"train_size": 1500}, {}),
    "sst5_cnn.yaml": ({"train_size": 400}, {"epochs": 1}),
    "reuters_mlp.yaml": ({"train_size": 300}, {"epochs": 1, "hidden_dim": 64}),
    "reuters_lstm.yaml": ({"train_size": 60}, {"epochs": 1, "max_length": 48, "hidden_dim": 32, "num_layers": 1}),
    # The DeBERTa space with a tiny random checkpoint in place of microsoft/deberta-v3-base (no hub here).
    "mnli_deberta.yaml": ({"train_size": 64, "model": "TINY"}, {"epochs": 1, "batch_size": 16, "max_length": 32, "eval_steps": 2}),
}


def cli(*argv) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def search_env(tmp_path_factory, shared_data_dir):
    with search_environment(tmp_path_factory.mktemp("family-searches"), shared_data_dir) as home:
        yield home


@pytest.mark.parametrize("space_file", sorted(CASES))
def test_paper_space_runs_as_a_search(space_file, search_env, request):
    data_overrides, constants = CASES[space_file]
    if data_overrides.get("model") == "TINY":
        data_overrides = {**data_overrides, "model": str(request.getfixturevalue("tiny_deberta"))}  # conftest.py
    document = yaml.safe_load((SPACES / space_file).read_text())
    document["data"] = {**document.get("data", {}), **data_overrides}
    document["space"] = {**document["space"], **constants}
    document["resources"] = {"cpus": 1, "gpus": 0}
    document["timeout_s"] = 240
    name = document["name"]
    space = search_env / space_file
    space.write_text(yaml.safe_dump(document, sort_keys=False))
    storage = search_env / "runs"
    code, out, err = cli(
        "search", space, "--no-progress", "--num-trials", 2, "--max-concurrent", 2,
        "--storage", storage, "--tracking-uri", f"sqlite:///{search_env / (name + '.db')}",
    )
    records = Ledger(storage, name).records()
    detail = "; ".join(f"{r.index}: {r.status} {r.error}" for r in records) + err[-2000:]
    assert code == 0, detail
    assert [r.index for r in records] == [0, 1]
    metric = document["metric"]["name"]
    from showwork.space import load_search_spec

    spec = load_search_spec(space)
    for record in records:
        assert record.status == "finished", record.error
        assert 0.0 < record.score <= 1.0, (metric, record.score)
        assert record.test_score is not None and 0.0 <= record.test_score <= 1.0
        assert record.params == trial_config(spec.space, spec.seed, record.index)
        assert record.metrics.get("parameters", 0) > 0

"""Issue 24, claims the report can back: which search produced the results (item 1).

Ray Tune experiments are built here by plain Ray Tune: a TPE search (``OptunaSearch``), a random search (Ray's default
``BasicVariantGenerator``) and a grid search; results files say nothing of their search."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import run_cli

pytestmark = pytest.mark.integration
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

RAY_SEARCHES = """
import sys
import ray
from ray import tune
from ray.tune.search.optuna import OptunaSearch

def trainable(config):
    tune.report({"acc": 1.0 - (config["lr"] - 0.3) ** 2})

ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
for name, search_alg, space in (
    ("tpe", OptunaSearch(seed=1), {"lr": tune.uniform(0.0, 1.0)}),
    ("random", None, {"lr": tune.uniform(0.0, 1.0)}),
    ("grid", None, {"lr": tune.grid_search([0.1, 0.5, 0.9])}),
):
    tune.Tuner(
        trainable,
        param_space=space,
        tune_config=tune.TuneConfig(metric="acc", mode="max", num_samples=1 if name == "grid" else 6, search_alg=search_alg),
        run_config=tune.RunConfig(storage_path=sys.argv[1], name=name, verbose=0),
    ).fit()
ray.shutdown()
"""


@pytest.fixture(scope="module")
def ray_searches(tmp_path_factory) -> Path:
    """The storage folder of three plain Ray Tune experiments: tpe/, random/ and grid/ (built in a separate process)."""
    storage = tmp_path_factory.mktemp("ray-searches")
    subprocess.run([sys.executable, "-c", RAY_SEARCHES, str(storage)], check=True, capture_output=True, timeout=300,
                   env={**os.environ, "RAY_DEDUP_LOGS": "0"})
    return storage


def report_parts(out: Path) -> tuple[str, dict, str]:
    """(the report's first paragraph, its checklist answers by (checklist, number), the figures' SVG text)."""
    first = (out / "report.md").read_text(encoding="utf-8").split("\n\n")[1].replace("\\_", "_")  # Markdown's escapes
    data = json.loads((out / "report.json").read_text(encoding="utf-8"))
    answers = {(item["checklist"].split()[0], item["number"]): item for item in data["checklist"]}
    titles = "\n".join(p.read_text(encoding="utf-8") for p in sorted((out / "figures").glob("*.svg")))
    return first, answers, titles


def report(capsys, tmp_path: Path, *argv: str) -> tuple[str, dict, str]:
    out = tmp_path / "report"
    code, _, err = run_cli(capsys, "report", *argv, "--failed", "worst", "--out", out, "--no-mlflow", "--formats", "svg")
    assert code == 0, err
    return report_parts(out)


@pytest.mark.slow
def test_a_ray_tpe_search_is_reported_as_not_iid_and_a_random_one_as_random(ray_searches, tmp_path, capsys):
    first, answers, titles = report(capsys, tmp_path / "tpe", f"ray:{ray_searches / 'tpe'}", "--score", "acc")
    assert first.startswith("Search results of tpe;") and "Random-search" not in first
    assert "Not i.i.d.: tpe: sampler OptunaSearch (Ray Tune recorded TuneConfig(search_alg=OptunaSearch)" in first
    assert "the bands assume i.i.d. random-search trials, so they do not hold" in first
    selection = answers[("Dodge", "9")]["answers"][0][1]
    assert selection.startswith("search method: sampler OptunaSearch (") and "not i.i.d. random search" in selection
    assert "not i.i.d.: tpe" in answers[("NeurIPS", "7")]["answers"][0][1]
    assert "not i.i.d.: tpe" in titles
    # --sampler random against a recorded searcher is refused.
    code, _, err = run_cli(capsys, "report", f"ray:{ray_searches / 'tpe'}", "--score", "acc", "--sampler", "random",
                           "--out", tmp_path / "r", "--no-mlflow")
    assert code == 2 and "contradicts the source" in err and "OptunaSearch" in err and err.count("\n") == 1

    first, answers, titles = report(capsys, tmp_path / "random", f"ray:{ray_searches / 'random'}", "--score", "acc")
    assert first.startswith("Random-search results of random;") and "not i.i.d." not in first.lower()
    selection = answers[("Dodge", "9")]["answers"][0][1]
    assert selection.startswith("search method: sampler BasicVariantGenerator (random search) (Ray Tune recorded"
                                " TuneConfig(search_alg=None) in tuner.pkl), i.i.d. random draws")
    assert "the trials are i.i.d. random draws (sampler BasicVariantGenerator" in answers[("NeurIPS", "7")]["answers"][0][1]
    assert "not i.i.d." not in titles

    first, _, titles = report(capsys, tmp_path / "grid", f"ray:{ray_searches / 'grid'}", "--score", "acc")
    assert "Not i.i.d.: grid: sampler BasicVariantGenerator with tune.grid_search" in first and "not i.i.d.: grid" in titles


@pytest.mark.slow
def test_the_search_algorithm_falls_back_to_rays_state_files(ray_searches, tmp_path):
    """Without tuner.pkl, the search algorithms' own state files tell searcher from random search; with neither, unknown."""
    import shutil

    from showwork.report.sources_ray import search_algorithm

    for name, iid, evidence in (("tpe", False, "search_gen_state-*.json"), ("random", True, "basic-variant-state-*.json")):
        folder = tmp_path / name
        shutil.copytree(ray_searches / name, folder)
        (folder / "tuner.pkl").write_bytes(b"not a pickle")
        found = search_algorithm(folder)
        assert found.iid is iid and evidence in found.evidence and "tuner.pkl unreadable" in found.evidence
        for state in [*folder.glob("search_gen_state-*"), *folder.glob("basic-variant-state-*")]:
            state.unlink()
        assert search_algorithm(folder).iid is None


def test_a_results_file_is_not_known_iid_until_sampler_random_says_so(tmp_path, capsys):
    path = tmp_path / "sweep.csv"
    path.write_text("acc\n" + "\n".join(f"{0.5 + i / 100}" for i in range(20)) + "\n")
    first, answers, titles = report(capsys, tmp_path / "unknown", str(path), "--score", "acc")
    assert first.startswith("Search results of sweep;")
    assert ("Not i.i.d.: sweep: sampler unknown (a results file does not record how its configurations were drawn;"
            " --sampler random asserts i.i.d. random draws): not known to be i.i.d. random draws; the bands hold only if"
            " they were.") in first
    assert "not known to be i.i.d. random draws" in answers[("Dodge", "9")]["answers"][0][1]
    assert "not known to be i.i.d. random draws" in answers[("NeurIPS", "7")]["answers"][0][1]
    assert not answers[("NeurIPS", "7")]["recorded"]
    assert "not i.i.d.: sweep" in titles

    first, answers, titles = report(capsys, tmp_path / "random", str(path), "--score", "acc", "--sampler", "random")
    assert first.startswith("Random-search results of sweep;") and "not i.i.d." not in first.lower()
    assert "i.i.d. random draws (sampler random search (given with --sampler))" in answers[("NeurIPS", "7")]["answers"][0][1]
    assert "not i.i.d." not in titles


def test_a_showwork_search_is_random_search_and_refuses_another_sampler(tmp_path, capsys):
    from showwork.space import load_search_spec
    from showwork.store import Ledger

    from helpers import trial_record, write_search

    spec_file = tmp_path / "space.yaml"
    spec_file.write_text("name: s\nfamily: sst2_bow\nnum_trials: 3\nseed: 1\nmetric: {name: val_acc, mode: max}\n"
                         "space:\n  lr: {distribution: loguniform, low: 0.001, high: 0.1}\n")
    spec = load_search_spec(spec_file)
    ledger = Ledger(tmp_path / "runs", spec.name)
    write_search(ledger, spec, [trial_record(i) for i in range(3)])
    first, answers, _ = report(capsys, tmp_path / "r", "s", "--storage", tmp_path / "runs")
    assert first.startswith("Random-search results of s;")
    assert answers[("Dodge", "9")]["answers"][0][1].startswith("random search (i.i.d. samples), seed")
    code, _, err = run_cli(capsys, "report", "s", "--storage", tmp_path / "runs", "--sampler", "tpe",
                           "--out", tmp_path / "t", "--no-mlflow")
    assert code == 2 and "contradicts the source" in err and "showwork search draws" in err


def tied_search(tmp_path: Path) -> tuple[Path, list[float]]:
    """A ledger of 30 trials, 20 of which (trials 3, 4, ..., 22) tie for the best validation score; returns their test scores."""
    from showwork.space import load_search_spec
    from showwork.store import Ledger

    from helpers import trial_record, write_search

    spec_file = tmp_path / "space.yaml"
    spec_file.write_text("name: ties\nfamily: sst2_bow\nnum_trials: 30\nseed: 1\n"
                         "metric: {name: val_acc, mode: max, test: test_acc}\n"
                         "space:\n  lr: {distribution: loguniform, low: 0.001, high: 0.1}\n")
    spec = load_search_spec(spec_file)
    tied = range(3, 23)
    tests = {i: 0.956 + (i - 3) * (0.983 - 0.956) / 19 for i in tied}
    records = [trial_record(i, score=1.0 if i in tied else 0.5 + i / 100, test_score=tests.get(i, 0.4)) for i in range(30)]
    write_search(Ledger(tmp_path / "runs", spec.name), spec, records)
    return tmp_path / "runs", [tests[i] for i in tied]


def test_ties_for_the_best_are_counted_with_the_tied_test_scores(tmp_path, capsys):
    import numpy as np

    storage, tests = tied_search(tmp_path)
    low, high, mean = "0.956", "0.983", f"{np.mean(tests):.4g}"
    code, out, err = run_cli(capsys, "best", "ties", "--storage", storage)
    assert code == 0, err
    assert (f"20 trials tie for the best validation score; the first, trial 3, is selected; test_acc over the tied"
            f" trials: {low}–{high}, mean {mean}.") in out
    assert out.splitlines()[2].split()[:4] == ["rank", "trial", "val_acc", "test_acc"]

    report_dir = tmp_path / "report"
    code, _, err = run_cli(capsys, "report", "ties", "--storage", storage, "--out", report_dir, "--no-mlflow", "--formats", "svg")
    assert code == 0, err
    markdown = (report_dir / "report.md").read_text(encoding="utf-8")
    assert f"| 0.956 (20 tied: {low}–{high}, mean {mean}) |" in markdown  # the family table's "test of best"
    assert "ties: 20 trials tie for the best validation score; the first, trial 3, is selected" in markdown
    from showwork.report import analyze, from_ledger
    from showwork.report.tables import best_configuration_table, family_table

    report = analyze([from_ledger(storage, "ties")])
    families = family_table(report)
    assert dict(zip(families.columns, families.rows[0]))["test of best"] == f"0.956 (20 tied: {low}–{high}, mean {mean})"
    assert any(note.startswith("ties: 20 trials tie for the best validation score") for note in families.notes)
    assert any("20 trials tie" in note for note in best_configuration_table(report).notes)
    data = json.loads((report_dir / "report.json").read_text(encoding="utf-8"))
    scores = next(item for item in data["checklist"] if item["checklist"].startswith("Dodge") and item["number"] == "4")
    assert f"test test_acc over the tied trials: {low}–{high}, mean {mean}" in scores["answers"][0][1]


def test_no_tie_says_nothing_of_ties(tmp_path, capsys):
    path = tmp_path / "plain.csv"
    path.write_text("acc,test\n" + "\n".join(f"{0.5 + i / 100},{0.4 + i / 100}" for i in range(10)) + "\n")
    out_dir = tmp_path / "r"
    code, _, err = run_cli(capsys, "report", path, "--score", "acc", "--test", "test", "--out", out_dir, "--no-mlflow", "--formats", "svg")
    assert code == 0, err
    assert "tie for the best" not in (out_dir / "report.md").read_text(encoding="utf-8")


def test_arr_c2_says_which_data_determined_the_hyperparameters_and_sentences_join_cleanly(tmp_path, capsys):
    from showwork.report import analyze, from_ledger, from_results_file
    from showwork.report.checklist import ARR, CHECKLIST_VERSIONS, build_checklist

    storage, _ = tied_search(tmp_path)
    items = build_checklist(analyze([from_ledger(storage, "ties")]))
    c2 = next(i for i in items if i.checklist == ARR and i.number == "C2")
    assert "which dataset was used to determine the hyperparameters" in c2.requirement and CHECKLIST_VERSIONS[ARR].startswith("2025")
    assert c2.answers[0][1].endswith("Data for hyperparameters: tuned on the validation split: every trial's val_acc (the"
                                     " search's metric.name) on the validation data decides; the test metric test_acc is"
                                     " recorded per trial and never used for selection")
    path = tmp_path / "plain.csv"
    path.write_text("acc\n" + "\n".join(f"{0.5 + i / 1000}" for i in range(40)) + "\n")
    file_items = build_checklist(analyze(from_results_file(path, "acc")))
    c2 = next(i for i in file_items if i.checklist == ARR and i.number == "C2")
    assert "Data for hyperparameters: selected by acc, as given to the report; the split it was computed on: not recorded" in c2.answers[0][1]
    # Sentences inside an answer join as one text: no "n ≥ 61.; test ..." (the advice, then the re-runs) nor "..".
    import dataclasses

    from showwork.selection import RerunSummary, Spread

    results = from_ledger(storage, "ties")
    spread = Spread(3, 0.97, 0.01, 0.96, 0.98)
    rerun = RerunSummary(trial=3, rank=1, params={"lr": 0.01}, planned=3, finished=3, failed=0, validation=spread, test=spread)
    rerun_items = build_checklist(analyze([dataclasses.replace(results, reruns=(rerun,))]))
    dodge10 = next(i for i in rerun_items if i.number == "10").answers[0][1]
    assert "you need n ≥ 61; test test_acc of the selected configuration over 3 seeds" in dodge10
    for item in (*items, *file_items, *rerun_items):
        for _, text in item.answers:
            assert ".;" not in text and ". ." not in text and ".. " not in text, (item.checklist, item.number, text)


def test_the_two_medians_are_defined_where_they_appear(tmp_path):
    """The family table's median (mean of the two middle scores) and the k = 1 median curve (an order statistic) differ."""
    import numpy as np

    from showwork.report import analyze, from_results_file
    from showwork.report.tables import family_table, tuning_curve_table

    path = tmp_path / "even.csv"
    scores = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]  # even n: the middle two are 0.5 and 0.6
    path.write_text("acc\n" + "\n".join(map(str, scores)) + "\n")
    report = analyze(from_results_file(path, "acc"))
    family = family_table(report)
    assert dict(zip(family.columns, family.rows[0]))["median"] == "0.55" and float(np.median(scores)) == 0.55
    curves = tuning_curve_table(report)
    k1 = next(row for row in curves.rows if row[1] == "1")
    assert dict(zip(curves.columns, k1))["median"] == "0.5"  # one trial's score
    assert any("mean of the two middle scores" in note and "lower empirical quantile" in note for note in family.notes)
    assert any("lower empirical quantile" in note and "family table's median" in note for note in curves.notes)


def test_the_family_tables_compute_column_reads_in_a_unit_chosen_by_size(tmp_path):
    """Issue 24 item 4: compute in the unit the figures use (by size), not always hours; the checklist too."""
    from showwork.report import analyze, from_results_file
    from showwork.report.checklist import build_checklist
    from showwork.report.tables import family_table

    def compute_of(runtime_s: float) -> tuple[str, str, str]:
        path = tmp_path / f"runs-{runtime_s}.csv"
        path.write_text("acc,secs\n" + "\n".join(f"{0.5 + i / 100},{runtime_s}" for i in range(10)) + "\n")
        report = analyze(from_results_file(path, "acc", runtime="secs"))
        table = family_table(report)
        header = table.columns[-1]
        answers = " ".join(text for item in build_checklist(report) for _, text in item.answers)
        return header, table.rows[0][-1], answers

    assert compute_of(0.5)[:2] == ("compute (s)", "5")  # 10 trials x 0.5 s: 5 s, not 0.00139 h
    assert "5 s of trial wall time in all" in compute_of(0.5)[2]
    assert compute_of(60.0)[:2] == ("compute (min)", "10")
    assert compute_of(3600.0)[:2] == ("compute (h)", "10")
    assert "10 h of trial wall time in all" in compute_of(3600.0)[2]


def test_families_sharing_a_not_iid_reason_share_one_line(tmp_path, capsys):
    """Six results files that say nothing of their sampler: one caveat line on the terminal and in the summary."""
    from showwork.report.inputs import SamplerInfo, iid_caveats, unknown_sampler

    paths = []
    for i in range(6):
        path = tmp_path / f"f{i}.csv"
        path.write_text("acc\n" + "\n".join(f"{0.5 + (i + j) / 100}" for j in range(12)) + "\n")
        paths.append(path)
    out_dir = tmp_path / "r"
    code, out, err = run_cli(capsys, "report", *paths, "--score", "acc", "--out", out_dir, "--no-mlflow", "--formats", "svg")
    assert code == 0, err
    lines = [line for line in out.splitlines() if line.startswith("not i.i.d.:")]
    assert len(lines) == 1 and lines[0].startswith("not i.i.d.: 6 families (f0, f1, f2, f3, …): sampler unknown (")
    summary = (out_dir / "report.md").read_text(encoding="utf-8")
    assert summary.count("not known to be i.i.d. random draws; the bands hold only if they were") >= 1
    assert "Not i.i.d.: 6 families (f0, f1, f2, f3, …)" in summary

    class Results:  # what iid_caveats reads of a family
        def __init__(self, name, sampler):
            self.name, self.meta = name, {"sampler": sampler}

    tpe = SamplerInfo("TPESampler", False, "Optuna recorded it")
    mixed = [Results("a", unknown_sampler("a results file")), Results("b", tpe), Results("c", unknown_sampler("a results file")),
             Results("d", SamplerInfo("random search", True, "given"))]
    caveats = iid_caveats(mixed)
    assert len(caveats) == 2 and caveats[0].startswith("a, c: sampler unknown") and caveats[1].startswith("b: sampler TPESampler")

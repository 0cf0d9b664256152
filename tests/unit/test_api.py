"""The Python API (showwork.api) against the commands, on searches written into a ledger (no Ray).

Each number the API gives is checked against what the command line prints for the same search:
`results --csv` (the DataFrame), `best` (the ranking and the tie), `curve` and `compare` on the
exported scores (the curve, the comparison), `report` (the files), and each refusal against the
command's `showwork: error:` line. The searches themselves run in tests/integration/test_api_searches.py.
"""

from __future__ import annotations

import io
import json
import math
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import showwork
import showwork.api
from showwork.errors import InputError
from showwork.space import load_search_spec
from showwork.store import Ledger

from helpers import REPO_ROOT, run_cli, trial_record, write_search

TRAINABLE = """
    def train(config, *, seed, device, reporter, data):
        return {"val_accuracy": config["x"]}
"""


def space(folder: Path, name: str, *, num_trials: int = 8, extra: str = "") -> Path:
    (folder / "family.py").write_text(textwrap.dedent(TRAINABLE).lstrip())
    path = folder / f"{name}.yaml"
    path.write_text("\n".join([
        f"name: {name}", "family: family.py:train", "metric: {name: val_accuracy, mode: max, test: test_accuracy}",
        f"num_trials: {num_trials}", "seed: 3", *extra.splitlines(), "space:",
        "  x: {distribution: uniform, low: 0.0, high: 1.0}",
        "  opt: {distribution: categorical, choices: [adam, sgd]}",
        "  momentum: {distribution: uniform, low: 0.0, high: 0.9, when: {opt: sgd}}",
    ]) + "\n")
    return path


def recorded(folder: Path, name: str, scores: list, *, statuses: dict | None = None, tests: list | None = None,
             extra: str = "") -> Path:
    """A search of ``len(scores)`` trials written as ``showwork search`` leaves it; returns the storage folder."""
    storage = folder / "runs"
    spec = load_search_spec(space(folder, name, num_trials=len(scores), extra=extra))
    records = [trial_record(i, score=score, test_score=None if tests is None else tests[i],
                            status=(statuses or {}).get(i, "finished"), error="boom" if i in (statuses or {}) else None)
               for i, score in enumerate(scores)]
    write_search(Ledger(storage, name), spec, records)
    return storage


SCORES = [0.61, 0.72, 0.55, 0.72, None, 0.68, 0.59, 0.70]  # trial 4 failed; trials 1 and 3 tie for the best
TESTS = [0.60, 0.71, 0.50, 0.69, None, 0.66, 0.58, 0.69]


@pytest.fixture
def storage(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return recorded(tmp_path, "toy", SCORES, statuses={4: "failed"}, tests=TESTS)


def test_import_showwork_stays_light_and_hands_out_the_api_on_first_use():
    code = ("import sys, showwork\n"
            "heavy = [m for m in ('ray', 'mlflow', 'numpy', 'pandas', 'showwork.api') if m in sys.modules]\n"
            "assert not heavy, heavy\n"
            "from showwork import Search, SearchInterruptedError, open_search, search\n"
            "assert search.__module__ == 'showwork.api' and issubclass(SearchInterruptedError, KeyboardInterrupt)\n"
            "assert {'search', 'open_search', 'Search'} <= set(dir(showwork))\n")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO_ROOT)
    with pytest.raises(AttributeError, match="no attribute 'serch'"):
        showwork.serch  # noqa: B018


def test_records_and_dataframe_are_the_ledger_as_results_csv_exports_it(storage, capsys):
    found = showwork.open_search("toy", storage=storage)
    assert [r.to_dict() for r in found.records()] == [r.to_dict() for r in Ledger(storage, "toy").records()]
    frame = found.to_dataframe()
    code, out, err = run_cli(capsys, "results", "toy", "--storage", storage, "--csv")
    assert code == 0, err
    exported = pd.read_csv(io.StringIO(out))
    assert ["trial", *frame.columns] == list(exported.columns)
    assert frame.index.name == "trial" and list(frame.index) == list(range(8))
    assert {"param.x", "param.opt", "param.momentum"} <= set(frame.columns)  # one column per flattened parameter
    for (index, row), (_, line) in zip(frame.iterrows(), exported.iterrows()):
        assert index == line["trial"]
        for column in frame.columns:
            mine, theirs = row[column], line[column]
            if mine is None or (isinstance(mine, float) and math.isnan(mine)):
                assert pd.isna(theirs), (index, column)
            else:
                assert mine == theirs, (index, column)
    assert frame.loc[4, "status"] == "failed" and pd.isna(frame.loc[4, "score"])
    conditional = frame["param.opt"] == "adam"  # momentum is drawn only with sgd
    assert conditional.any() and frame.loc[conditional, "param.momentum"].isna().all()
    assert frame.loc[~conditional, "param.momentum"].notna().all()


def test_an_empty_search_is_an_empty_dataframe_with_the_export_columns(tmp_path):
    storage = tmp_path / "runs"
    spec = load_search_spec(space(tmp_path, "empty"))
    write_search(Ledger(storage, "empty"), spec, [])
    frame = showwork.open_search("empty", storage=storage).to_dataframe()
    assert frame.empty and frame.index.name == "trial" and "score" in frame.columns


def test_best_and_its_tie_are_those_of_showwork_best(storage, capsys):
    found = showwork.open_search("toy", storage=storage)
    best = found.best(top=3)
    assert [r.index for r in best] == [1, 3, 7]  # the tie goes to the lower index; the failed trial never ranks
    code, out, err = run_cli(capsys, "best", "toy", "--storage", storage, "--top", 3)
    assert code == 0, err
    rows = [line.split() for line in out.splitlines() if line[:1].isdigit() and "tie" not in line]
    assert [int(row[1]) for row in rows] == [r.index for r in best]
    tie = found.tie()
    assert (tie.count, tie.selected, tie.tests) == (2, 1, (0.71, 0.69))
    assert f"{tie.count} trials tie for the best validation score; the first, trial {tie.selected}, is selected" in out
    assert found.best() == best[:1]
    with pytest.raises(InputError, match=r"top must be an integer >= 1 \(got 0\)"):
        found.best(top=0)


def test_no_finished_trial_means_no_best_and_no_tie(tmp_path):
    storage = recorded(tmp_path, "none", [None, None], statuses={0: "failed", 1: "failed"})
    found = showwork.open_search("none", storage=storage)
    assert found.best() == [] and found.tie() is None


def test_the_curve_is_showwork_curve_on_the_same_scores(storage, capsys, tmp_path):
    code, out, err = run_cli(capsys, "results", "toy", "--storage", storage, "--csv")
    (tmp_path / "toy.csv").write_text(out)
    code, out, err = run_cli(capsys, "curve", tmp_path / "toy.csv", "--score", "score", "--a", 0, "--b", 1,
                             "--failed", "worst", "--json")
    assert code == 0, err
    expected = json.loads(out)
    curve = showwork.open_search("toy", storage=storage).curve(a=0.0, b=1.0)  # the search's policy: worst
    mine = curve.to_dict()
    assert mine["failure_policy"] == "worst" and mine["n_failed"] == 1
    for key in ("k", "quantile_curve", "quantile_curve_lower", "quantile_curve_upper", "mean_lower", "mean_upper",
                "v", "u", "critical_coverage", "n", "a", "b"):
        assert mine[key] == expected[key], key
    # The report's defaults: every budget up to n; its bands and settings.
    assert list(curve.k) == list(range(1, 9)) and curve.band.confidence == 0.8 and curve.band.method == "ld-hd"
    other = showwork.open_search("toy", storage=storage).curve(confidence=0.9, budgets=(1, 4), failure_policy="exclude")
    assert list(other.k) == [1, 4] and other.band.confidence == 0.9 and other.failures.policy == "exclude"
    with pytest.raises(InputError, match="1 of 8 trials have no finite score") as refused:
        showwork.open_search("toy", storage=storage).curve(failure_policy="error")
    # Named as the ledger numbers its trials (from 0): trial 4 failed, not "trial 5, counting from 1".
    assert "(the first is trial 4)" in str(refused.value)
    code, _, err = run_cli(capsys, "report", "toy", "--storage", storage, "--out", tmp_path / "r", "--failed", "error",
                           "--no-mlflow")
    assert code == 2 and "(the first is trial 4)" in err and err.count("\n") == 1


def test_compare_is_showwork_compare_on_the_same_scores(storage, capsys, tmp_path):
    (tmp_path / "b").mkdir()
    other = recorded(tmp_path / "b", "other", [0.50, 0.52, 0.49, 0.55, 0.51, 0.53, 0.48, 0.54])
    files = []
    for name, folder in (("toy", storage), ("other", other)):
        code, out, err = run_cli(capsys, "results", name, "--storage", folder, "--csv")
        files.append(tmp_path / f"{name}.csv")
        files[-1].write_text(out)
    code, out, err = run_cli(capsys, "compare", *files, "--score", "score", "--failed", "worst", "--json")
    assert code == 0, err
    expected = json.loads(out)["pairs"][0]
    pair = showwork.open_search("toy", storage=storage).compare(showwork.open_search("other", storage=other))
    mine = pair.comparison.to_dict()
    assert (mine["a"], mine["b"]) == ("toy", "other")
    for key in set(expected) - {"a", "b"}:
        got, want = mine[key], expected[key]
        if isinstance(want, list) and want and isinstance(want[0], dict):  # the ranges name the favoured family
            renamed = {str(files[0]): "toy", str(files[1]): "other"}
            want = [{**r, "favoured": renamed.get(r.get("favoured"), r.get("favoured"))} for r in want]
        assert got == want, key
    assert any("toy" in sentence for sentence in pair.sentences())


def _report_json(folder: Path) -> dict:
    return json.loads((folder / "report.json").read_text())


def test_report_writes_what_showwork_report_writes(storage, capsys, tmp_path):
    code, out, err = run_cli(capsys, "report", "toy", "--storage", storage, "--out", tmp_path / "cli", "--no-mlflow",
                             "--formats", "png")
    assert code == 0, err
    files = showwork.open_search("toy", storage=storage).report(tmp_path / "api", mlflow=False, figure_formats=("png",))
    assert files.html == tmp_path / "api" / "report.html" and files.html.is_file()
    assert _report_json(tmp_path / "api") == _report_json(tmp_path / "cli")
    written = sorted(p.relative_to(tmp_path / "api").as_posix() for p in (tmp_path / "api").rglob("*") if p.is_file())
    assert written == sorted(p.relative_to(tmp_path / "cli").as_posix() for p in (tmp_path / "cli").rglob("*") if p.is_file())
    assert (tmp_path / "api" / "report.md").read_text() == (tmp_path / "cli" / "report.md").read_text()


def test_bad_input_raises_the_message_the_command_prints(storage, capsys, tmp_path):
    def cli_error(*argv) -> str:
        code, out, err = run_cli(capsys, *argv)
        assert code == 2 and err.startswith("showwork: error: "), err
        return err.strip().removeprefix("showwork: error: ")

    with pytest.raises(InputError) as refused:
        showwork.open_search("nothing", storage=storage)
    assert str(refused.value) == cli_error("results", "nothing", "--storage", storage)

    with pytest.raises(InputError) as refused:
        showwork.search(tmp_path / "missing.yaml", storage=storage)
    assert str(refused.value) == cli_error("search", tmp_path / "missing.yaml", "--storage", storage)

    bad = space(tmp_path, "bad")
    with pytest.raises(InputError) as refused:
        showwork.search(bad, num_trials=0, storage=storage)
    assert str(refused.value) == cli_error("search", bad, "--num-trials", 0, "--storage", storage)

    with pytest.raises(InputError) as refused:
        showwork.search(bad, num_cpus=2, address="127.0.0.1:1", storage=storage)
    assert str(refused.value) == cli_error("search", bad, "--num-cpus", 2, "--address", "127.0.0.1:1", "--storage", storage)

    # The driver's own refusal, before Ray starts: a search that exists, without resume.
    existing = tmp_path / "toy.yaml"
    with pytest.raises(InputError) as refused:
        showwork.search(existing, num_trials=8, storage=storage, tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    assert "already exists" in str(refused.value)
    assert str(refused.value) == cli_error("search", existing, "--num-trials", 8, "--storage", storage,
                                           "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}")

    with pytest.raises(InputError, match="overrides apply to a YAML file"):
        showwork.search(load_search_spec(bad), name="renamed", storage=storage)
    with pytest.raises(TypeError, match="not dict"):
        showwork.search({"name": "x"}, storage=storage)
    with pytest.raises(TypeError):
        showwork.open_search("toy", storage=storage).curve(confidance=0.9)


def test_an_interrupt_reaches_the_caller_as_a_keyboard_interrupt_that_says_how_to_continue(tmp_path, monkeypatch):
    import showwork.api
    from showwork.run import SearchInterrupted

    def interrupted(spec, storage_dir, *args, **kwargs):
        raise SearchInterrupted(spec.name, storage_dir, 2, spec.num_trials, signal.SIGTERM, True)

    monkeypatch.setattr(showwork.api, "run_search", interrupted)  # the driver api.search calls
    with pytest.raises(KeyboardInterrupt) as stopped:
        showwork.search(space(tmp_path, "stopped", num_trials=5), storage=tmp_path / "runs", tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    error = stopped.value
    assert isinstance(error, showwork.SearchInterruptedError)
    assert (error.name, error.finished, error.num_trials, error.signum, error.resumable) == ("stopped", 2, 5, signal.SIGTERM, True)
    assert str(error) == ("interrupted: 2 of 5 trials finished; the ledger keeps every finished trial; continue with"
                          f" showwork.open_search('stopped', storage={str(tmp_path / 'runs')!r}).resume()")


def test_a_race_interrupt_reaches_the_caller_as_a_keyboard_interrupt(tmp_path, monkeypatch):
    import showwork.run.race
    from showwork.run.race import RaceInterrupted

    def interrupted(request, *args, **kwargs):
        raise RaceInterrupted(request.name, 8, "b", signal.SIGTERM)

    monkeypatch.setattr(showwork.run.race, "run_race", interrupted)  # the driver api.race calls
    a, b = space(tmp_path, "a"), space(tmp_path, "b", extra="seed: 4").parent / "b.yaml"
    b.write_text(b.read_text().replace("seed: 3\n", "", 1))
    with pytest.raises(KeyboardInterrupt) as stopped:
        showwork.race(a, b, looks=(4, 8), decide_at=1, storage=tmp_path / "runs", tracking_uri="sqlite:///x.db")
    error = stopped.value
    assert isinstance(error, showwork.RaceInterruptedError)
    assert (error.race, error.look, error.search, error.signum) == ("a-vs-b", 8, "b", signal.SIGTERM)
    assert error.storage_dir == tmp_path / "runs"
    assert str(error) == ("race a-vs-b interrupted at look n = 8 (between searches); the ledgers keep every finished trial"
                          " and the race its looks; continue with the same showwork.race(...) call and resume=True")


def test_the_spec_and_the_curve_budgets_come_from_the_ledger(storage):
    found = showwork.open_search("toy", storage=storage)
    assert found.spec.name == "toy" and found.spec.num_trials == 8 and found.summary is None
    assert repr(found).startswith(f"Search('toy', storage={str(storage)!r}): 7 finished, 1 failed of 8 trials")
    assert np.array_equal(found.curve(budgets=(2, 1, 2)).k, [1, 2])


def test_a_retried_trial_is_read_once_by_its_last_attempt(storage, capsys):
    """Issue 35 item 1: after ``--retry-failed``, the API, ``results`` and ``best`` see one record per trial: the last."""
    ledger = Ledger(storage, "toy")
    failed = ledger.supersede(4)
    retry = failed.model_copy(update={"status": "finished", "score": 0.9, "error": None, "attempts": 2})
    ledger.write(retry)
    found = showwork.open_search("toy", storage=storage)
    assert [r.to_dict() for r in found.records()] == [r.to_dict() for r in ledger.records()]
    assert len(found.records()) == 8 and found.records()[4] == retry
    assert found.best()[0].index == 4  # the retry's score counts
    code, out, err = run_cli(capsys, "results", "toy", "--storage", storage, "--csv")
    assert code == 0, err
    assert [line.split(",")[1] for line in out.splitlines()[1:]] == ["finished"] * 8
    with pytest.raises(TypeError, match=r"Search.resume\(\): retry_failed must be a bool, not str \('yes'\)"):
        found.resume(retry_failed="yes")


def test_a_wrong_type_is_a_type_error_naming_the_parameter_and_its_type(storage, tmp_path):
    """Issue 35 item 7. Before: num_cpus='2' reached Ray (its bare AssertionError, after Ray started), compare(123)
    was an AttributeError on 123.family(), a storage of 5 a TypeError from pathlib naming neither."""
    toy = showwork.open_search("toy", storage=storage)
    calls = [
        (lambda: showwork.search(tmp_path / "toy.yaml", num_cpus="2"), "search(): num_cpus must be an int or None, not str ('2')"),
        (lambda: toy.compare(123), "Search.compare(): other must be a Search or a showwork.report.FamilyResults, not int (123)"),
        (lambda: showwork.open_search("toy", storage=5), "open_search(): storage must be a path (str or os.PathLike), not int (5)"),
        (lambda: showwork.search(tmp_path / "toy.yaml", resume="yes"), "search(): resume must be a bool, not str ('yes')"),
        (lambda: showwork.search(tmp_path / "toy.yaml", num_trials=True), "search(): num_trials must be an int or None, not bool (True)"),
        (lambda: showwork.race("a.yaml", "b.yaml", looks=12, decide_at=2), 'race(): looks must be a str such as "12,24,48" or a tuple of ints, not int (12)'),
        (lambda: showwork.race("a.yaml", "b.yaml", looks=(12, 24), decide_at="2"), "race(): decide_at must be a number or a tuple of numbers, not str ('2')"),
        (lambda: toy.report(tmp_path / "r", others=[toy, "b"]), "Search.report(): others must be a tuple of Search or showwork.report.FamilyResults, not list ([Search('toy'"),
        (lambda: toy.resume(num_trials=12.0), "Search.resume(): num_trials must be an int or None, not float (12.0)"),
        (lambda: toy.best("2"), "Search.best(): top must be an int, not str ('2')"),
        (lambda: showwork.api.search_spec(3), "search_spec(): spec_or_path must be a path to a YAML file (str or os.PathLike), a SearchSpec or a trainable function, not int (3)"),
    ]
    for call, message in calls:
        with pytest.raises(TypeError) as refused:
            call()
        assert str(refused.value).startswith(message), (str(refused.value), message)
    assert not (tmp_path / "r").exists()
    assert toy.best(np.int64(1)) == toy.best(1)  # numpy's integers are ints


def test_the_curve_extrapolated_is_the_report_s_and_shows_its_model_based_part(tmp_path, monkeypatch, search_results_dir):
    """Issue 38 item 3: ``Search.curve(extrapolate=K)`` gains ``.extrapolation``, the one ``report --extrapolate K``
    computes from the same scores, and its notebook view shows the extrapolated part, labelled model-based."""
    from helpers import cli_in_process, load_column

    monkeypatch.chdir(tmp_path)
    scores = load_column(search_results_dir / "deberta-v3-base_mnli_tuning.csv", "matched_acc_best")
    scores = np.random.default_rng(38).choice(scores, size=48, replace=False)  # as tests/integration/test_extrapolation_commands.py
    storage = recorded(tmp_path, "v3", [float(s) for s in scores])
    import showwork.report.analysis as analysis

    calls = []
    extrapolate = analysis.extrapolate
    monkeypatch.setattr(analysis, "extrapolate", lambda *a, **kw: calls.append(a) or extrapolate(*a, **kw))
    curve = showwork.open_search("v3", storage=storage).curve(extrapolate=480)
    e = curve.extrapolation
    assert e.K == 480 and list(e.k) == list(range(1, 481)) and str(e.source[-1]) == "model-based"
    assert "extrapolated to k = 480 (model-based past k ≈" in repr(curve)
    page = curve._repr_html_()
    assert "With 10× the trials (k = 480) the median best would reach at most" in page
    assert 'id="extrapolation"' in page and page.count("<img") == 2  # the tuning curves and the extrapolation figure
    assert len(calls) == 1  # computed by curve(), shown by the notebook view: not fitted a second time
    code, _, err = cli_in_process("report", "v3", "--storage", storage, "--out", tmp_path / "r", "--extrapolate", 480,
                                  "--no-mlflow")
    assert code == 0, err
    [family] = json.loads((tmp_path / "r" / "report.json").read_text())["families"]
    assert family["extrapolation"] == json.loads(json.dumps(e.to_dict()))
    code, out, err = cli_in_process("plan", "--within", "0.002", "--scores", "v3", "--storage", storage, "--json")
    assert code == 0, err  # `plan --within` reads a search by its name too
    assert json.loads(out)["extrapolation"] == family["extrapolation"]  # the same scores, K = 10 n: the same fit
    assert showwork.open_search("v3", storage=storage).curve().extrapolation is None  # not asked: none
    with pytest.raises(InputError, match=r"the budget to extrapolate to \(48\) must be above the curve's budgets"):
        showwork.open_search("v3", storage=storage).curve(extrapolate=48)

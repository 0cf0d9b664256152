"""A hyperparameter's effect and its tuning risk (issue 24 item 7): ``report --by PARAM``, ``--tuning-risk PARAM=DEFAULT``."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from showwork.errors import InputError
from showwork.report import ReportSettings, analyze
from showwork.report.by_param import split_by, tuning_risk_families
from showwork.report.inputs import FamilyResults, from_results_file
from showwork.statistics import tuning_curve

from helpers import run_cli


@pytest.fixture
def search_file(tmp_path):
    """60 trials: optimizer adam|sgd, momentum only with sgd (a `when:` parameter), epochs 1..3, a continuous lr,
    and 'rmsprop' drawn twice (too few for a band)."""
    rng = np.random.default_rng(11)
    rows = ["trial,acc,optimizer,momentum,epochs,lr"]
    for i in range(60):
        optimizer = "rmsprop" if i in (7, 30) else ("adam" if rng.random() < 0.5 else "sgd")
        epochs = int(rng.integers(1, 4))
        acc = float(np.clip(rng.normal(0.6 + 0.08 * epochs + (0.05 if optimizer == "adam" else 0.0), 0.05), 0, 1))
        momentum = f"{rng.uniform(0.8, 0.99):.3f}" if optimizer == "sgd" else ""
        rows.append(f"{i},{acc!r},{optimizer},{momentum},{epochs},{rng.uniform(1e-5, 1e-2)!r}")
    path = tmp_path / "search.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def read(path, *params):
    return from_results_file(path, "acc", params=list(params))


def test_by_draws_one_curve_per_value_from_the_trials_that_drew_it(search_file):
    (family,) = read(search_file, "optimizer")
    split = split_by([family], "optimizer", min_trials=4)
    assert [f.name for f in split.families] == ["optimizer=adam", "optimizer=sgd"]
    for f in split.families:
        rows = [i for i, p in enumerate(family.params) if f"optimizer={p['optimizer']}" == f.name]
        np.testing.assert_array_equal(f.scores, family.scores[rows])
        assert all(p["optimizer"] == f.name.split("=")[1] for p in f.params)
    assert split.notes == ("optimizer=rmsprop: only 2 trials, too few for a band that bounds even k = 1 (at least 4 at these settings); no curve.",)
    report = analyze(split.families, ReportSettings(a=0, b=1))
    assert len(report.pairs) == 1  # the evidence between the values
    adam = report.family("optimizer=adam")
    np.testing.assert_array_equal(adam.curve.quantile_curve, tuning_curve(adam.results.scores, k=report.budgets, a=0, b=1).quantile_curve)


def test_by_a_discrete_number_orders_its_values(search_file):
    split = split_by(read(search_file, "epochs"), "epochs", min_trials=4)
    assert [f.name for f in split.families] == ["epochs=1", "epochs=2", "epochs=3"] and split.notes == ()


def test_by_a_conditional_parameter_explains_the_trials_without_it(search_file):
    (family,) = read(search_file, "momentum")
    with pytest.raises(InputError, match="momentum took .* distinct values; --by takes a categorical or discrete parameter"):
        split_by([family], "momentum", min_trials=4)  # continuous: refused
    (family,) = read(search_file, "optimizer", "epochs")
    absent = sum(1 for p in family.params if p["optimizer"] != "sgd")
    # epochs drawn only `when: {optimizer: sgd}`: absent from the other trials
    family = dataclasses.replace(family, params=tuple({**p, "epochs": p["epochs"] if p["optimizer"] == "sgd" else None} for p in family.params))
    split = split_by([family], "epochs", min_trials=4)
    assert split.notes[0] == (f"search: {absent} of 60 trials did not draw epochs (a conditional parameter, `when:`, absent where"
                              " its condition fails, or an empty cell); they belong to no value's curve.")
    assert sum(f.n_trials for f in split.families) == 60 - absent


def test_tuning_risk_is_all_trials_against_the_trials_at_the_default(search_file):
    (family,) = read(search_file, "epochs")
    split = tuning_risk_families([family], "epochs", "2", min_trials=4)
    tuned, default = split.families
    assert (tuned.name, default.name) == ("tuning epochs", "epochs=2 (default)")
    np.testing.assert_array_equal(tuned.scores, family.scores)
    assert all(p["epochs"] == 2 for p in default.params) and default.n_trials == sum(p["epochs"] == 2 for p in family.params)
    with pytest.raises(InputError, match=r"0 trials drew epochs=7, fewer than the 4 a curve needs \(values drawn, with their trials: 1 \("):
        tuning_risk_families([family], "epochs", "7", min_trials=4)


def test_report_cli_by_and_tuning_risk(search_file, tmp_path, capsys):
    code, out, err = run_cli(capsys, "report", search_file, "--score", "acc", "--a", "0", "--b", "1", "--by", "optimizer",
                             "--out", tmp_path / "by", "--no-mlflow", "--formats", "png")
    assert code == 0, err
    assert "optimizer=rmsprop: only 2 trials" in out and "optimizer=adam vs optimizer=sgd:" in out
    data = json.loads((tmp_path / "by" / "report.json").read_text())
    assert [f["name"] for f in data["families"]] == ["optimizer=adam", "optimizer=sgd"] and data["notes"]
    assert "optimizer=rmsprop: only 2 trials" in (tmp_path / "by" / "report.md").read_text()

    code, out, err = run_cli(capsys, "report", search_file, "--score", "acc", "--a", "0", "--b", "1", "--tuning-risk", "epochs=3",
                             "--cost", "epochs", "--out", tmp_path / "risk", "--no-mlflow", "--formats", "png")
    assert code == 0, err
    assert "tuning epochs vs epochs=3 (default):" in out and "tuning epochs vs epochs=3 (default) at equal cost:" in out
    data = json.loads((tmp_path / "risk" / "report.json").read_text())
    assert data["cost"]["mean_costs"]["epochs=3 (default)"] == 3.0
    assert (tmp_path / "risk" / "figures" / "comparison_cost.png").is_file()


@pytest.mark.parametrize("argv, message", [
    (["--tuning-risk", "epochs"], "--tuning-risk takes PARAM=DEFAULT"),
    (["--by", "lr"], "lr took 60 distinct values"),
    (["--by", "nothing"], "no column 'nothing'"),
])
def test_report_cli_refuses_what_it_cannot_split(search_file, tmp_path, capsys, argv, message):
    code, _, err = run_cli(capsys, "report", search_file, "--score", "acc", *argv, "--out", tmp_path / "r", "--no-mlflow")
    assert code == 2 and message in err and err.count("\n") == 1


def test_by_and_tuning_risk_exclude_each_other(search_file, tmp_path, capsys):
    code, _, err = run_cli(capsys, "report", search_file, "--score", "acc", "--by", "epochs", "--tuning-risk", "epochs=3",
                           "--out", tmp_path / "r")
    assert code == 2 and "not allowed with argument" in err


def test_by_a_when_parameter_of_a_recorded_search(tmp_path, capsys):
    """A ledger whose space draws beta2 only `when: {optimizer: adam}`: the sgd trials have no beta2, and the report says so."""
    from showwork.space import load_search_spec
    from showwork.store import Ledger

    from helpers import trial_record, write_search

    path = tmp_path / "cond.yaml"
    path.write_text("name: cond\nfamily: mlp\nmetric: {name: val_acc, mode: max, bounds: [0, 1]}\nnum_trials: 40\nseed: 5\n"
                    "space:\n  optimizer: {distribution: categorical, choices: [sgd, adam]}\n"
                    "  beta2: {distribution: categorical, choices: [0.99, 0.999], when: {optimizer: adam}}\n")
    spec = load_search_spec(path)
    rng = np.random.default_rng(2)
    records = write_search(Ledger(tmp_path / "runs", "cond"), spec,
                           [trial_record(i, score=float(rng.uniform(0.5, 0.9))) for i in range(40)])
    without = sum(1 for r in records if "beta2" not in r.params)
    assert 0 < without < 40 and all((r.params["optimizer"] == "adam") == ("beta2" in r.params) for r in records)
    code, out, err = run_cli(capsys, "report", "cond", "--storage", tmp_path / "runs", "--by", "beta2", "--out", tmp_path / "r",
                             "--no-mlflow", "--formats", "png")
    assert code == 0, err
    assert f"cond: {without} of 40 trials did not draw beta2 (a conditional parameter, `when:`" in out
    assert "beta2=0.99 vs beta2=0.999:" in out
    code, out, err = run_cli(capsys, "report", "cond", "--storage", tmp_path / "runs", "--tuning-risk", "beta2=0.999",
                             "--out", tmp_path / "risk", "--no-mlflow", "--formats", "png")
    assert code == 0, err
    assert "they count in the tuned search only" in out and "tuning beta2 vs beta2=0.999 (default):" in out


@pytest.fixture
def risky_file(tmp_path):
    """200 trials whose default, epochs=1, scores far below the other values: tuning epochs is shown better (resolved)."""
    rng = np.random.default_rng(5)
    rows = ["acc,epochs"]
    for _ in range(200):
        epochs = int(rng.integers(1, 4))
        rows.append(f"{float(np.clip(rng.normal(0.5 if epochs == 1 else 0.9, 0.03), 0, 1))!r},{epochs}")
    path = tmp_path / "risky.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_a_tuning_risk_pair_states_the_bound_of_families_that_share_trials(risky_file, tmp_path, capsys):
    # The trials at the default are among all the trials, so the two bands are not independent: a false
    # resolved budget has chance <= 2(1 - c) = 0.4 at c = 0.8 (the union bound), not 1 - c² = 0.36.
    code, out, err = run_cli(capsys, "report", risky_file, "--score", "acc", "--a", "0", "--b", "1", "--tuning-risk", "epochs=1",
                             "--out", tmp_path / "risk", "--no-mlflow", "--formats", "png")
    assert code == 0, err
    assert "strong evidence that tuning epochs beats epochs=1 (default) (resolved; false-resolved chance ≤ 0.4)" in out
    assert "≤ 0.36" not in out
    data = json.loads((tmp_path / "risk" / "report.json").read_text())
    (pair,) = data["pairs"]
    assert pair["independent"] is False and pair["resolved_error_bound"] == pytest.approx(0.4)
    assert any("≤ 0.4)" in s for s in pair["sentences"]) and not any("≤ 0.36" in s for s in pair["sentences"])
    markdown = (tmp_path / "risk" / "report.md").read_text()
    assert "(resolved; false-resolved chance ≤ 0.4)" in markdown and "false-resolved chance ≤ 0.36" not in markdown
    assert "tuning epochs vs epochs=1 (default) share trials" in markdown  # the comparison table's note says why
    assert ("tuning epochs and epochs=1 (default) share trials (the trials of one are among the other's), so their bands"
            " are not independent: the chance of any false resolved budget of the pair is at most 2(1 − c) = 0.4,"
            " not 1 − c² = 0.36.") in out  # and the pair's sentences


def test_a_report_of_two_searches_states_the_bound_of_independent_searches(risky_file, tmp_path, capsys):
    (family,) = read(risky_file, "epochs")
    low, high = (family.subset([i for i, p in enumerate(family.params) if (p["epochs"] == 1) == is_low], name)
                 for is_low, name in ((True, "low"), (False, "high")))
    for f in (low, high):  # two searches, each its own file: no trial in common
        (tmp_path / f"{f.name}.csv").write_text("acc\n" + "".join(f"{s!r}\n" for s in f.scores.tolist()))
    code, out, err = run_cli(capsys, "report", tmp_path / "low.csv", tmp_path / "high.csv", "--score", "acc", "--a", "0", "--b", "1",
                             "--out", tmp_path / "two", "--no-mlflow", "--formats", "png")
    assert code == 0, err
    assert "(resolved; false-resolved chance ≤ 0.36)" in out and "≤ 0.4)" not in out
    (pair,) = json.loads((tmp_path / "two" / "report.json").read_text())["pairs"]
    assert pair["independent"] is True and pair["resolved_error_bound"] == pytest.approx(0.36)


def test_the_values_of_by_are_independent_searches(risky_file, tmp_path, capsys):
    # Disjoint subsets of one search's i.i.d. trials are independent given their sizes (by_param's docstring):
    # each pair of values states 1 - c².
    code, out, err = run_cli(capsys, "report", risky_file, "--score", "acc", "--a", "0", "--b", "1", "--by", "epochs",
                             "--out", tmp_path / "by", "--no-mlflow", "--formats", "png")
    assert code == 0, err
    assert "strong evidence that epochs=2 beats epochs=1 (resolved; false-resolved chance ≤ 0.36)" in out and "≤ 0.4)" not in out
    pairs = json.loads((tmp_path / "by" / "report.json").read_text())["pairs"]
    assert len(pairs) == 3 and all(p["independent"] is True for p in pairs)


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 30), data=st.data())
def test_families_share_trials_exactly_when_their_rows_of_one_search_meet(n, data):
    family = FamilyResults("s", np.linspace(0, 1, n), ("finished",) * n, "acc")
    rows = st.lists(st.integers(0, n - 1), unique=True, min_size=1)
    a, b = data.draw(rows), data.draw(rows)
    sub_a, sub_b = family.subset(a, "a"), family.subset(b, "b")
    assert sub_a.shares_trials(sub_b) == bool(set(a) & set(b)) == sub_b.shares_trials(sub_a)
    assert sub_a.shares_trials(family) and family.shares_trials(sub_b)  # a search shares every trial with its subsets
    inner = data.draw(st.lists(st.integers(0, len(a) - 1), unique=True, min_size=1))
    nested = sub_a.subset(inner, "nested")  # a subset of a subset: positions in the search, not in sub_a
    assert nested.shares_trials(sub_b) == bool({a[i] for i in inner} & set(b))
    other = FamilyResults("t", np.linspace(0, 1, n), ("finished",) * n, "acc")  # another search, however alike
    assert not other.subset(a).shares_trials(sub_a) and not other.shares_trials(family)


def test_a_ranked_report_of_tuning_risks_states_the_bound_of_shared_trials(risky_file):
    # Four searches' tuning risks: 8 families, each compared with the best; the ranking's note speaks for every pair.
    (family,) = read(risky_file, "epochs")
    searches = [dataclasses.replace(family, name=f"s{i}") for i in range(4)]
    split = tuning_risk_families(searches, "epochs", "1", min_trials=4)
    report = analyze(split.families, ReportSettings(a=0, b=1))
    assert report.reference is not None and not report.pairs_independent
    for p in report.pairs:  # only a search's own two families share trials
        same_search = p.comparison.a.split(":")[0] == p.comparison.b.split(":")[0]
        assert p.comparison.independent is not same_search
    from showwork.report.tables import ranking_table

    note = " ".join(ranking_table(report).notes)
    assert "(resolved; false-resolved chance ≤ 0.4 per pair, some of whose families share trials)" in note
    solo = analyze([*split_by(searches[:1], "epochs", min_trials=4).families, *searches[1:]], ReportSettings(a=0, b=1))
    assert solo.pairs_independent  # the values of one search and three other searches: no trial in common


def test_the_comparison_figure_of_a_tuning_risk_states_the_bound_of_shared_trials(risky_file, tmp_path, capsys):
    """The legend of the evidence says 2(1 - c) where the pair drawn shares trials (issue 34 item 7.1)."""
    from showwork.report import ReportSettings, analyze
    from showwork.report.by_param import tuning_risk_families
    from showwork.report.figures import comparison_figure

    (family,) = read(risky_file, "epochs")
    families = tuning_risk_families([family], "epochs", "1", min_trials=2).families
    legend = [t.get_text() for t in comparison_figure(analyze(families, ReportSettings(a=0, b=1))).legends[0].get_texts()]
    assert any("false-resolved chance ≤ 0.4)" in text for text in legend) and not any("≤ 0.36" in text for text in legend)

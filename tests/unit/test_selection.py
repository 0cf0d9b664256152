"""Issue 16 items 11-12, the pure part: ranking the trials, the best configuration as YAML, fresh
re-run seeds, the re-run plan and the summary a report prints; and `showwork best` on a ledger."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import pytest

from showwork.distributions import Constant
from showwork.errors import InputError
from showwork.report.tables import rerun_sentence, spread_text
from showwork.sampling import fresh_training_seeds, trial_seed
from showwork.selection import (
    Rerun,
    best_configuration_yaml,
    extend_plan,
    plan_from_meta,
    ranked_trials,
    rerun_summaries,
    spread,
)
from showwork.space import load_search_spec
from showwork.store import Ledger

from helpers import run_cli, trial_record, write_search

SPACE = """
    name: tiny
    family: tiny.py:train
    data: {size: 3}
    metric: {name: val_accuracy, mode: max, test: test_accuracy}
    num_trials: 6
    seed: 7
    space:
      lr: {distribution: loguniform, low: 1e-4, high: 1e-1}
      optimizer:
        name: {distribution: categorical, choices: [sgd, adam]}
      epochs: 3
"""


def records(scores, statuses=None):
    statuses = statuses or ["finished"] * len(scores)
    return [trial_record(i, score=s, status=st, error=None if st == "finished" else "ValueError: x")
            for i, (s, st) in enumerate(zip(scores, statuses))]


# ---------------------------------------------------------------- ranking


def test_ranking_follows_the_mode_and_breaks_ties_by_the_lower_index():
    trials = records([0.5, 0.9, 0.7, 0.9, 0.1])
    assert [r.index for r in ranked_trials(trials, "max")] == [1, 3, 2, 0, 4]
    assert [r.index for r in ranked_trials(trials, "min")] == [4, 0, 2, 1, 3]


def test_failed_timed_out_and_non_finite_trials_are_never_chosen():
    trials = records([0.99, 0.98, math.inf, math.nan, 0.2, 0.3], ["failed", "timeout", "finished", "finished", "finished", "finished"])
    assert [r.index for r in ranked_trials(trials, "max")] == [5, 4]
    assert ranked_trials(records([0.9], ["failed"]), "max") == []


def test_ranking_refuses_an_unknown_mode():
    with pytest.raises(InputError):
        ranked_trials(records([0.5]), "maximum")


# ---------------------------------------------------------------- fresh seeds


def test_fresh_seeds_are_deterministic_distinct_and_keep_their_prefix():
    seeds = fresh_training_seeds(7, 20)
    assert seeds == fresh_training_seeds(7, 20)
    assert len(set(seeds)) == 20 and all(0 <= s < 2**31 - 1 for s in seeds)
    assert fresh_training_seeds(7, 5) == seeds[:5]  # more seeds later keep the earlier ones
    assert fresh_training_seeds(8, 5) != seeds[:5]  # another search seed, other seeds


def test_fresh_seeds_avoid_the_searchs_trial_seeds():
    trial_seeds = {trial_seed(7, i) for i in range(1000)}
    assert not trial_seeds & set(fresh_training_seeds(7, 50, taken=trial_seeds))
    first = fresh_training_seeds(7, 3)
    # a seed taken by a trial is skipped, the next ones move up
    assert fresh_training_seeds(7, 2, taken=[first[0]]) == first[1:3]


# ---------------------------------------------------------------- the YAML of a configuration


def test_best_configuration_yaml_validates_with_every_parameter_a_constant(tmp_path: Path):
    (tmp_path / "space").mkdir()
    source = tmp_path / "space" / "tiny.yaml"
    source.write_text(textwrap.dedent(SPACE))
    spec = load_search_spec(source)
    best = trial_record(4, params={"lr": 0.0123, "optimizer.name": "adam", "epochs": 3}, score=0.91, seed=99)
    text = best_configuration_yaml(spec.model_dump(mode="json"), best, search="tiny", rank=1, finished=5,
                                   spec_dir=str(source.parent))
    assert "trial 4" in text and "seed 99" in text
    out = tmp_path / "elsewhere" / "best.yaml"
    out.parent.mkdir()
    out.write_text(text)
    again = load_search_spec(out)
    assert again.name == "tiny-best" and again.num_trials == 1 and again.seed == spec.seed
    assert again.family == f"{source.parent / 'tiny.py'}:train"  # relative to the old YAML: made absolute
    assert (again.data, again.metric, again.resources) == (spec.data, spec.metric, spec.resources)
    assert dict(again.space) == {"lr": Constant(0.0123), "optimizer.name": Constant("adam"), "epochs": Constant(3)}
    second = best_configuration_yaml(spec.model_dump(mode="json"), best, search="tiny", rank=2, finished=5, spec_dir=None)
    assert "name: tiny-top2" in second and "family: tiny.py:train" in second


def test_a_long_search_name_keeps_a_valid_name(tmp_path: Path):
    source = tmp_path / "tiny.yaml"
    source.write_text(textwrap.dedent(SPACE).replace("name: tiny", "name: " + "a" * 200))
    spec = load_search_spec(source)
    text = best_configuration_yaml(spec.model_dump(mode="json"), trial_record(0, params={"lr": 0.1}), search="a" * 200,
                                   rank=1, finished=1, spec_dir=None)
    (tmp_path / "best.yaml").write_text(text)
    assert load_search_spec(tmp_path / "best.yaml").name == "a" * 195 + "-best"


# ---------------------------------------------------------------- the re-run plan


def test_the_plan_keeps_its_entries_and_adds_only_what_is_missing():
    trials = records([0.5, 0.9, 0.7])
    best, second = ranked_trials(trials, "max")[:2]
    seeds = fresh_training_seeds(7, 3)
    plan = extend_plan((), [best], seeds[:2])
    assert [(r.index, r.trial, r.replicate, r.seed) for r in plan] == [(0, 1, 0, seeds[0]), (1, 1, 1, seeds[1])]
    assert plan[0].params == best.params
    wider = extend_plan(plan, [best, second], seeds)
    assert wider[:2] == plan
    assert [(r.trial, r.replicate) for r in wider[2:]] == [(1, 2), (2, 0), (2, 1), (2, 2)]
    assert [r.seed for r in wider if r.trial == 2] == list(seeds)  # every configuration gets the same seeds
    assert extend_plan(wider, [best], seeds[:1]) == wider  # fewer seeds later: nothing new
    assert plan_from_meta({"plan": [r.to_dict() for r in wider]}, "x") == wider


@pytest.mark.parametrize("plan", [
    "not a list",
    [{"index": 0, "trial": 1, "replicate": 0}],
    [{"index": 1, "trial": 1, "replicate": 0, "seed": 5, "params": {}}],
    [{"index": 0, "trial": -1, "replicate": 0, "seed": 5, "params": {}}],
    [{"index": 0, "trial": True, "replicate": 0, "seed": 5, "params": {}}],
])
def test_a_damaged_plan_is_bad_input(plan):
    with pytest.raises(InputError, match="search.json"):
        plan_from_meta({"plan": plan}, "runs/tiny/reruns/search.json")


# ---------------------------------------------------------------- what the report prints


def test_spread_is_mean_sample_sd_min_and_max():
    s = spread([0.8, 0.9, None, math.nan, 1.0])
    assert (s.n, s.low, s.high) == (3, 0.8, 1.0)
    assert s.mean == pytest.approx(0.9) and s.sd == pytest.approx(0.1)
    assert spread_text(s) == "0.9 ± 0.1 (0.8–1)"
    assert math.isnan(spread([0.5]).sd) and spread_text(spread([0.5])) == "0.5 ± — (0.5–0.5)"
    assert spread([None, math.inf]) is None


def test_summaries_give_the_test_score_over_seeds_or_say_there_is_none():
    plan = (Rerun(0, 3, 0, 11, {"lr": 0.1}), Rerun(1, 3, 1, 12, {"lr": 0.1}), Rerun(2, 3, 2, 13, {"lr": 0.1}),
            Rerun(3, 5, 0, 11, {"lr": 0.2}))
    reruns = [trial_record(0, score=0.8, test_score=0.70), trial_record(1, score=0.9, test_score=0.74),
              trial_record(2, status="failed", score=None, test_score=None, error="ValueError: x")]
    first, other = rerun_summaries(plan, reruns, ranked=[3, 5, 1])
    assert (first.trial, first.rank, first.planned, first.finished, first.failed) == (3, 1, 3, 2, 1)
    assert rerun_sentence(first, "val_accuracy", "test_accuracy") == (
        "test test_accuracy of the selected configuration over 2 seeds: 0.72 ± 0.02828 (0.7–0.74); 1 re-run failed")
    assert (other.trial, other.rank, other.finished) == (5, 2, 0)  # re-run 3 has no record yet
    assert rerun_sentence(other, "val_accuracy", None) == "configuration 2 (trial 5): no re-run finished (1 planned)"
    no_test = rerun_summaries(plan[:1], [trial_record(0, score=0.8, test_score=None)], ranked=[3])[0]
    assert rerun_sentence(no_test, "val_accuracy", None) == (
        "validation val_accuracy of the selected configuration over 1 seed (no test metric recorded): 0.8 ± — (0.8–0.8)")


# ---------------------------------------------------------------- `showwork best` on a ledger


def ledger_with(tmp_path: Path, scores, statuses=None) -> Path:
    """A search's ledger as `showwork search` leaves it (spec in search.json, one record per trial)."""
    source = tmp_path / "tiny.yaml"
    source.write_text(textwrap.dedent(SPACE))
    (tmp_path / "tiny.py").write_text("def train(config, *, seed, device, reporter, data):\n    return {'val_accuracy': config['lr']}\n")
    spec = load_search_spec(source)
    storage = tmp_path / "runs"
    write_search(Ledger(storage, "tiny"), spec, records(scores, statuses))
    return storage


@pytest.mark.integration
def test_best_prints_the_top_configurations(tmp_path, capsys):
    storage = ledger_with(tmp_path, [0.5, 0.95, 0.7, 0.95, 0.2], ["finished", "failed", "finished", "finished", "finished"])
    code, out, err = run_cli(capsys, "best", "tiny", "--storage", storage, "--top", "2")
    assert code == 0, err
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("rank"))
    assert lines[header].split() == ["rank", "trial", "val_accuracy", "test_accuracy", "seed", "lr", "optimizer.name", "epochs"]
    assert [line.split()[:2] for line in lines[header + 1:]] == [["1", "3"], ["2", "2"]]  # trial 1 failed
    assert "2 best of 4 finished trials" in out


@pytest.mark.integration
def test_best_yaml_validates(tmp_path, capsys):
    storage = ledger_with(tmp_path, [0.5, 0.9, 0.7])
    code, out, err = run_cli(capsys, "best", "tiny", "--storage", storage, "--yaml")
    assert code == 0, err
    path = tmp_path / "best.yaml"
    path.write_text(out)
    code, resolved, err = run_cli(capsys, "validate", path)
    assert code == 0, err
    spec = load_search_spec(path)
    best = Ledger(tmp_path / "runs", "tiny").read(1)  # score 0.9
    assert dict(spec.space) == {name: Constant(value) for name, value in best.params.items()}
    assert set(spec.space) == {"lr", "optimizer.name", "epochs"}
    code, out, err = run_cli(capsys, "best", "tiny", "--storage", storage, "--yaml", "--top", "2")
    assert code == 0 and out.count("\n---\n") == 1 and "name: tiny-top2" in out


@pytest.mark.integration
@pytest.mark.parametrize("case", ["unknown", "none_finished", "bad_top", "rerun_unknown", "rerun_none_finished",
                                  "rerun_no_seeds", "rerun_zero_seeds", "rerun_bad_plan"])
def test_best_and_rerun_refuse_with_one_line(tmp_path, capsys, case):
    storage = ledger_with(tmp_path, [0.5, 0.9], ["failed", "timeout"])
    if case == "rerun_bad_plan":  # a hand-damaged re-run plan; a finished trial so that the plan is read
        spec = load_search_spec(tmp_path / "tiny.yaml")
        write_search(Ledger(storage, "tiny"), spec, [trial_record(2)])
        Ledger(storage / "tiny", "reruns").update_meta(plan=[{"index": 0}])
    rerun = ["rerun", "tiny", "--storage", storage, "--tracking-uri", f"sqlite:///{tmp_path / 'mlflow.db'}"]
    argv = {"unknown": ["best", "nope", "--storage", storage],
            "none_finished": ["best", "tiny", "--storage", storage],
            "bad_top": ["best", "tiny", "--storage", storage, "--top", "0"],
            "rerun_unknown": ["rerun", "nope", "--storage", storage, "--seeds", "2"],
            "rerun_none_finished": [*rerun, "--seeds", "2"],
            "rerun_no_seeds": rerun,
            "rerun_zero_seeds": [*rerun, "--seeds", "0"],
            "rerun_bad_plan": [*rerun, "--seeds", "2"]}[case]
    records_before = [r.to_dict() for r in Ledger(storage, "tiny").records()]
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("showwork: error:") and err.count("\n") == 1, err
    assert [r.to_dict() for r in Ledger(storage, "tiny").records()] == records_before
    assert not (tmp_path / "mlflow.db").exists()  # refused before MLflow was opened

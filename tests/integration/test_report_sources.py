"""`showwork report ray:PATH` / `curve ray:PATH` and `showwork report optuna:STORAGE_URL`, on experiments made here
with plain Ray Tune (Tuner.fit on a function trainable) and plain Optuna (RandomSampler and TPESampler studies)."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import run_cli

pytestmark = pytest.mark.integration
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

# Each trial reports acc = lr * (1, 3, 2) (its best is the middle step, its last the third); lr = 0.4 raises
# after its first report; the configuration is nested (opt.momentum).
RAY_SCRIPT = """
import sys
import ray
from ray import tune

def trainable(config):
    for step, factor in enumerate((1.0, 3.0, 2.0)):
        tune.report({"acc": config["lr"] * factor, "loss": 1 - config["lr"]})
        if config["lr"] == 0.4:
            raise RuntimeError("diverged")

ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
tuner = tune.Tuner(
    trainable,
    param_space={"lr": tune.grid_search([0.1, 0.2, 0.3, 0.4]), "opt": {"momentum": tune.uniform(0.0, 0.1)}},
    tune_config=tune.TuneConfig(metric="acc", mode="max"),
    run_config=tune.RunConfig(storage_path=sys.argv[1], name="plain", verbose=0),
)
tuner.fit()
ray.shutdown()
"""


@pytest.fixture(scope="module")
def ray_experiment(tmp_path_factory) -> Path:
    """A Ray Tune experiment folder written by plain Ray Tune in a separate process (its Ray is shut down after)."""
    storage = tmp_path_factory.mktemp("ray-storage")
    subprocess.run([sys.executable, "-c", RAY_SCRIPT, str(storage)], check=True, capture_output=True, timeout=300,
                   env={**os.environ, "RAY_DEDUP_LOGS": "0"})
    return storage / "plain"


def report_json(out: Path) -> dict:
    return json.loads((out / "report.json").read_text(encoding="utf-8"))


@pytest.mark.slow
def test_ray_source_last_best_failures_params_runtime(ray_experiment, tmp_path, capsys):
    import ray
    from ray.tune import ExperimentAnalysis

    from showwork.report.sources_ray import from_ray_tune

    last = from_ray_tune(ray_experiment, "acc")
    best = from_ray_tune(ray_experiment, "acc", reduce="best")
    assert not ray.is_initialized()  # reading needs no Ray cluster
    by_lr = {p["lr"]: i for i, p in enumerate(last.params)}
    assert sorted(by_lr) == [0.1, 0.2, 0.3, 0.4]
    for lr, i in by_lr.items():
        if lr == 0.4:  # raised after reporting: a failure, whatever it reported
            assert last.statuses[i] == best.statuses[i] == "failed" and math.isnan(last.scores[i])
        else:
            assert last.statuses[i] == "finished"
            assert last.scores[i] == pytest.approx(2 * lr) and best.scores[i] == pytest.approx(3 * lr)
        assert 0.0 <= last.params[i]["opt.momentum"] <= 0.1  # nested config flattened
    truth = {t.trial_id: t.last_result["time_total_s"] for t in ExperimentAnalysis(str(ray_experiment)).trials if t.last_result}
    for trial_id, runtime in zip(last.meta["trial_ids"], last.runtimes_s):
        assert runtime == pytest.approx(truth[trial_id])
    assert best.minimize is False and from_ray_tune(ray_experiment, "loss", reduce="best", minimize=True).minimize

    out = tmp_path / "report"
    code, stdout, err = run_cli(capsys, "report", f"ray:{ray_experiment}", "--score", "acc", "--reduce", "best",
                                "--failed", "worst", "--out", out, "--no-mlflow")
    assert code == 0, err
    family = report_json(out)["families"][0]
    assert family["summary"]["n_trials"] == 4 and family["summary"]["n_failed"] == 1
    assert family["summary"]["best_score"] == pytest.approx(0.9)  # lr = 0.3's best, 3 * lr
    assert family["summary"]["best_params"]["lr"] == 0.3 and "opt.momentum" in family["summary"]["best_params"]
    assert "1 of 4 trials failed" in stdout

    code, stdout, err = run_cli(capsys, "curve", f"ray:{ray_experiment}", "--score", "acc", "--failed", "exclude", "--json")
    assert code == 0, err
    curve = json.loads(stdout)
    assert curve["n"] == 3 and curve["n_failed"] == 1
    assert curve["running_max"][-1] == pytest.approx(0.6)  # the last values, 2 * lr, of lr = 0.1, 0.2, 0.3
    # Under exclude a trial of the curve is a successful one, and costs the failed attempts it took too (issue 34 item 7.5).
    assert curve["mean_runtime_s"] == pytest.approx(float(last.runtimes_s.sum()) / 3)

    # Issue 24 item 4: without --failed the error names the failed trial as Ray does (its trial id), not by position.
    failed_id = last.meta["trial_ids"][by_lr[0.4]]
    code, _, err = run_cli(capsys, "curve", f"ray:{ray_experiment}", "--score", "acc")
    assert code == 2 and f"(the first is Ray trial {failed_id}); choose --failed:" in err and err.count("\n") == 1


@pytest.mark.slow
def test_ray_source_bad_inputs(ray_experiment, tmp_path, capsys):
    cases = [
        (["--score", "nope"], "no trial reported the metric 'nope' (metrics reported: acc,"),
        ([], "name the score metric with --score"),
    ]
    for extra, message in cases:
        code, _, err = run_cli(capsys, "report", f"ray:{ray_experiment}", *extra, "--out", tmp_path / "r", "--no-mlflow")
        assert code == 2 and message in err and err.count("\n") == 1, err
    code, _, err = run_cli(capsys, "report", f"ray:{ray_experiment.parent}", "--score", "acc", "--out", tmp_path / "r")
    assert code == 2 and "experiments in it: plain" in err
    code, _, err = run_cli(capsys, "curve", f"ray:{tmp_path / 'missing'}", "--score", "acc")
    assert code == 2 and "no such folder" in err
    assert not (tmp_path / "r").exists()


# --- Optuna ------------------------------------------------------------------------------------------


def make_studies(url: str) -> dict[str, list]:
    """Two 12-trial studies on one SQLite storage: 'random' (RandomSampler) and 'tpe' (TPESampler); trial 3 of each
    raises, trial 5 is pruned. Returns each study's trials."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)

    def objective(trial):
        x = trial.suggest_float("x", -1.0, 1.0)
        trial.suggest_categorical("kind", ["a", "b"])
        if trial.number == 3:
            raise RuntimeError("diverged")
        if trial.number == 5:
            raise optuna.TrialPruned()
        return 1.0 - x * x

    trials = {}
    for name, sampler in (("random", optuna.samplers.RandomSampler(seed=0)),
                          ("tpe", optuna.samplers.TPESampler(seed=0, n_startup_trials=3))):
        study = optuna.create_study(study_name=name, storage=url, sampler=sampler, direction="maximize")
        study.optimize(objective, n_trials=12, catch=(RuntimeError,))
        trials[name] = study.trials
    return trials


@pytest.fixture(scope="module")
def optuna_storage(tmp_path_factory) -> tuple[str, dict]:
    path = tmp_path_factory.mktemp("optuna") / "optuna.db"
    url = f"sqlite:///{path}"
    return url, make_studies(url)


def svg_titles(out: Path) -> str:
    """The text of the report's figures (matplotlib writes each text as a comment in its SVG)."""
    return "\n".join(p.read_text(encoding="utf-8") for p in sorted((out / "figures").glob("*.svg")))


def test_optuna_source_scores_failures_durations(optuna_storage, tmp_path, capsys):
    url, trials = optuna_storage
    from showwork.report.sources_optuna import from_optuna

    family = from_optuna(url, "random")
    assert family.statuses[3] == "failed" and family.statuses[5] == "pruned"
    assert family.n_failed == 2 and family.n_trials == 12
    for trial, score, runtime, params in zip(trials["random"], family.scores, family.runtimes_s, family.params):
        assert params == trial.params
        assert runtime == pytest.approx(trial.duration.total_seconds())
        if trial.value is not None:
            assert score == pytest.approx(trial.value)
    out = tmp_path / "report"
    code, stdout, err = run_cli(capsys, "report", f"optuna:{url}", "--study", "random", "--failed", "exclude",
                                "--a", "0", "--b", "1", "--out", out, "--no-mlflow", "--formats", "png,svg")
    assert code == 0, err
    summary = report_json(out)["families"][0]["summary"]
    assert summary["n_trials"] == 12 and summary["n_failed"] == 2


def test_optuna_unknown_sampler_is_not_shown_iid(optuna_storage, tmp_path, capsys):
    url, _ = optuna_storage
    out = tmp_path / "report"
    code, stdout, err = run_cli(capsys, "report", f"optuna:{url}", "--study", "random", "--failed", "worst",
                                "--out", out, "--no-mlflow", "--formats", "png,svg")
    assert code == 0, err
    assert "not i.i.d.: random: sampler unknown" in stdout
    markdown = (out / "report.md").read_text(encoding="utf-8")
    first_paragraph = markdown.split("\n\n")[1]
    assert "Not i.i.d.: random: sampler unknown" in first_paragraph and "--sampler random" in first_paragraph
    data = report_json(out)
    assert data["families"][0]["not_iid"].startswith("random: sampler unknown")
    answers = {item["number"]: item for item in data["checklist"] if item["checklist"].startswith("NeurIPS")}
    assert "not i.i.d." in answers["7"]["answers"][0][1] and not answers["7"]["recorded"]
    assert "not i.i.d.: random" in svg_titles(out)

    # The user asserts the random sampler: the trials are i.i.d. draws, and nothing says otherwise.
    out = tmp_path / "asserted"
    code, _, err = run_cli(capsys, "report", f"optuna:{url}", "--study", "random", "--sampler", "random",
                           "--failed", "worst", "--out", out, "--no-mlflow", "--formats", "png,svg")
    assert code == 0, err
    assert "not i.i.d." not in (out / "report.md").read_text(encoding="utf-8").lower()
    assert "not i.i.d." not in svg_titles(out)
    assert "i.i.d. random draws (sampler RandomSampler (given with --sampler))" in (out / "report.md").read_text(encoding="utf-8")


def test_optuna_tpe_sampler_found_from_its_trace(optuna_storage, tmp_path, capsys):
    url, _ = optuna_storage
    out = tmp_path / "report"
    code, _, err = run_cli(capsys, "report", f"optuna:{url}", "--study", "tpe", "--failed", "worst",
                           "--out", out, "--no-mlflow", "--formats", "png,svg")
    assert code == 0, err
    first_paragraph = (out / "report.md").read_text(encoding="utf-8").split("\n\n")[1]
    assert "sampler TPESampler (Optuna recorded trial" in first_paragraph and "not a random sampler" in first_paragraph
    assert "not i.i.d.: tpe" in svg_titles(out)
    # Two studies on one report: each family's verdicts and the comparison, then both caveats; every figure says so.
    out = tmp_path / "two"
    code, stdout, err = run_cli(capsys, "report", f"optuna:{url}", f"optuna:{url}", "--study", "tpe", "--label", "A",
                                "--label", "B", "--failed", "worst", "--out", out, "--no-mlflow", "--formats", "svg")
    assert code == 0, err
    lines = stdout.splitlines()
    assert lines[0].startswith("A: 2 of 12 trials failed") and lines[2] == "A vs B:"
    assert [line[:20] for line in lines if line.startswith("not i.i.d.")] == ["not i.i.d.: A, B: sa"]  # one reason, one line
    for figure in ("tuning_curves", "cdfs", "comparison"):
        assert "not i.i.d.: A, B" in (out / "figures" / f"{figure}.svg").read_text(encoding="utf-8"), figure
    # An assertion the study contradicts is refused.
    code, _, err = run_cli(capsys, "report", f"optuna:{url}", "--study", "tpe", "--sampler", "random",
                           "--out", tmp_path / "r", "--no-mlflow")
    assert code == 2 and "contradicts the study" in err and "TPESampler" in err


@pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")
def test_optuna_traces_of_other_samplers(tmp_path):
    import optuna

    from showwork.report.sources_optuna import from_optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    url = f"sqlite:///{tmp_path / 'o.db'}"
    for name, sampler, enqueue in (("grid", optuna.samplers.GridSampler({"x": [0.0, 0.5]}), False),
                                   ("qmc", optuna.samplers.QMCSampler(seed=0), False),
                                   ("enqueued", optuna.samplers.RandomSampler(seed=0), True)):
        study = optuna.create_study(study_name=name, storage=url, sampler=sampler)
        if enqueue:
            study.enqueue_trial({"x": 0.25})
        study.optimize(lambda t: t.suggest_float("x", 0.0, 1.0), n_trials=2)
    expected = {"grid": "GridSampler", "qmc": "QMCSampler", "enqueued": "enqueued trials"}
    for name, sampler in expected.items():
        info = from_optuna(url, name).meta["sampler"]
        assert info.name.startswith(sampler) and info.iid is False


def test_optuna_bad_inputs(optuna_storage, tmp_path, capsys):
    url, _ = optuna_storage
    missing = tmp_path / "nothing.db"
    (tmp_path / "text.db").write_text("not a database\n")
    (tmp_path / "empty.db").write_bytes(b"")
    cases = [
        ([f"optuna:sqlite:///{tmp_path / 'text.db'}"], "not an Optuna storage ((sqlite3.DatabaseError) file is not a database)"),
        ([f"optuna:sqlite:///{tmp_path / 'empty.db'}"], "not an Optuna storage ((sqlite3.OperationalError) no such table"),
        ([f"optuna:sqlite:///{missing}"], "no such file"),
        ([f"optuna:{url}", "--study", "nope"], "no study named 'nope' (studies: 'random', 'tpe')"),
        ([f"optuna:{url}"], "name the study with --study (studies: 'random', 'tpe')"),
        ([f"optuna:{url}", "--study", "tpe", "--score", "accuracy"], "no objective 'accuracy'"),
        ([f"optuna:{url}", "--study", "tpe", "--test", "test_acc"], "no trial has the user attribute 'test_acc'"),
        (["optuna:notaurl"], "not a storage URL"),
        ([f"optuna:{url}", "--study", "tpe", "--min"], "--min contradicts the study, which maximizes value"),
        (["results.csv", "--study", "tpe", "--score", "s"], "--study applies to optuna: sources only"),
    ]
    for argv, message in cases:
        code, _, err = run_cli(capsys, "report", *argv, "--out", tmp_path / "r", "--no-mlflow")
        assert code == 2 and message in err and err.count("\n") == 1, (argv, err)
    assert not missing.exists() and (tmp_path / "empty.db").stat().st_size == 0  # nothing created or written
    assert not (tmp_path / "r").exists()


def test_optuna_password_not_shown(tmp_path, capsys):
    code, _, err = run_cli(capsys, "report", "optuna:sqlite://user:hunter2@/x.db", "--out", tmp_path / "r", "--no-mlflow")
    assert code == 2 and "hunter2" not in err
    # An unreachable database server is an outage (exit 1), and its password is not shown either.
    code, _, err = run_cli(capsys, "report", "optuna:postgresql+psycopg2://user:hunter2@127.0.0.1:9/db", "--out", tmp_path / "r", "--no-mlflow")
    assert code == 1 and "hunter2" not in err and err.count("\n") == 1, err


def test_ray_source_damaged_state_file(tmp_path, capsys):
    for name, text in (("truncated", '{"trial_data": [['), ("garbage", "garbage")):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "experiment_state-2026-01-01_00-00-00.json").write_text(text + "\n")
        code, _, err = run_cli(capsys, "report", f"ray:{folder}", "--score", "acc", "--out", tmp_path / "r", "--no-mlflow")
        assert code == 2 and "Ray could not read it (JSONDecodeError" in err and err.count("\n") == 1, err
    code, _, err = run_cli(capsys, "curve", "ray:", "--score", "acc")  # the current folder: no experiment there
    assert code == 2 and "not a Ray Tune experiment folder" in err


@pytest.mark.slow
def test_ray_source_without_trial_folders_and_compare(ray_experiment, tmp_path, capsys):
    """The experiment state alone holds what showwork reads: the trial folders' absence is not Ray's multi-line warning."""
    import shutil

    state_only = tmp_path / "state-only"
    state_only.mkdir()
    for state in ray_experiment.glob("experiment_state-*.json"):
        shutil.copy(state, state_only)
    code, stdout, err = run_cli(capsys, "compare", f"ray:{ray_experiment}", f"ray:{state_only}", "--score", "acc", "--failed", "exclude")
    assert code == 0, err
    assert "Failed to fetch metrics" not in err and err.count("\n") == 2  # the two excluding-failures warnings only
    assert f"ray:{ray_experiment}  vs  ray:{state_only}" in stdout


# --- The search space a ray: or optuna: source recorded: the checklist's "bounds of each hyperparameter" (issue 26 item 5)

# Two experiments in one storage: "spaces" (Ray's default search over every kind of domain, one nested) and
# "searched" (a custom Searcher, which keeps its space in its own form).
RAY_SPACE_SCRIPT = """
import sys
import ray
from ray import tune
from ray.tune.search import Searcher

def trainable(config):
    tune.report({"acc": config["lr"]})

class FixedSearcher(Searcher):
    def __init__(self):
        super().__init__(metric="acc", mode="max")
        self.left = 2
    def suggest(self, trial_id):
        if not self.left:
            return Searcher.FINISHED
        self.left -= 1
        return {"lr": 0.01 * (self.left + 1)}
    def on_trial_complete(self, trial_id, result=None, error=False):
        pass

ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
space = {"lr": tune.loguniform(1e-4, 1e-1), "drop": tune.uniform(0.0, 0.5), "act": tune.choice(["relu", "tanh"]),
         "layers": tune.randint(1, 4), "wd": tune.quniform(0.0, 0.1, 0.01), "opt": {"momentum": tune.uniform(0.8, 0.99)},
         "seed": tune.sample_from(lambda spec: 7)}
for name, search_alg, param_space in (("spaces", None, space), ("searched", FixedSearcher(), {})):
    tune.Tuner(trainable, param_space=param_space,
               tune_config=tune.TuneConfig(metric="acc", mode="max", num_samples=2, search_alg=search_alg),
               run_config=tune.RunConfig(storage_path=sys.argv[1], name=name, verbose=0)).fit()
ray.shutdown()
"""


def space_answer(out: Path) -> tuple[str, bool]:
    """The answer of Dodge et al.'s item 6 (the bounds of each hyperparameter) in a report, and whether it is recorded."""
    item = next(i for i in report_json(out)["checklist"] if i["checklist"].startswith("Dodge") and i["number"] == "6")
    return item["answers"][0][1], item["recorded"]


@pytest.fixture(scope="module")
def ray_spaces(tmp_path_factory) -> Path:
    storage = tmp_path_factory.mktemp("ray-spaces")
    subprocess.run([sys.executable, "-c", RAY_SPACE_SCRIPT, str(storage)], check=True, capture_output=True, timeout=300,
                   env={**os.environ, "RAY_DEDUP_LOGS": "0"})
    return storage


@pytest.mark.slow
def test_ray_source_space_in_the_checklist(ray_spaces, ray_experiment, tmp_path, capsys):
    def answer(folder: Path) -> tuple[str, bool]:
        out = tmp_path / folder.name
        code, _, err = run_cli(capsys, "report", f"ray:{folder}", "--score", "acc", "--failed", "worst", "--out", out, "--no-mlflow")
        assert code == 0, err
        return space_answer(out)

    text, recorded = answer(ray_spaces / "spaces")
    # Exact conversions read as a ledger's space does (showwork validate's words); randint's upper bound is excluded.
    for part in ("lr: loguniform [0.0001, 0.1)", "drop: uniform [0.0, 0.5)", "act: categorical 'relu', 'tanh'",
                 "layers: int_uniform {1, ..., 3}", "opt.momentum: uniform [0.8, 0.99)",
                 "wd: Ray Tune uniform on [0.0, 0.1) rounded to multiples of 0.01 (not one of showwork's distributions",
                 "seed: not recorded (a tune.sample_from function", "(read from Ray Tune's basic-variant-state-*.json"):
        assert part in text, text
    assert not recorded  # the function's distribution is not known

    text, recorded = answer(ray_experiment)  # lr: tune.grid_search, opt.momentum: tune.uniform
    assert "lr: grid search over [0.1, 0.2, 0.3, 0.4] (every value, not drawn)" in text and "opt.momentum: uniform [0.0, 0.1)" in text
    assert recorded

    text, recorded = answer(ray_spaces / "searched")
    # (a Searcher class defined in __main__ is pickled by value: tuner.pkl names cloudpickle's _make_skeleton_class)
    assert text.startswith("not recorded (the searcher ") and "keeps the search space in its own form" in text and not recorded

    import shutil

    damaged = tmp_path / "damaged"
    shutil.copytree(ray_spaces / "spaces", damaged)
    for state in damaged.glob("basic-variant-state-*.json"):
        state.write_bytes(b"garbage")
    text, recorded = answer(damaged)
    assert text.startswith("not recorded (Ray could not restore basic-variant-state-*.json (UnpicklingError") and not recorded
    for state in damaged.glob("basic-variant-state-*.json"):
        state.unlink()
    text, recorded = answer(damaged)
    assert text.startswith("not recorded (the folder has no basic-variant-state-*.json") and not recorded


def test_optuna_source_space_in_the_checklist(tmp_path, capsys):
    optuna = pytest.importorskip("optuna")
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    url = f"sqlite:///{tmp_path / 'optuna.db'}"
    study = optuna.create_study(study_name="space", storage=url, sampler=optuna.samplers.RandomSampler(seed=0))

    def objective(trial):
        lr = trial.suggest_float("lr", 1e-4, 1e-1, log=True)
        trial.suggest_float("dropout", 0.0, 0.5, step=0.1)
        trial.suggest_int("layers", 1, 4)
        trial.suggest_int("width", 16, 256, log=True)
        trial.suggest_int("heads", 2, 8, step=2)
        if trial.suggest_categorical("optimizer", ["sgd", "adam"]) == "sgd":
            trial.suggest_float("momentum", 0.0, 0.9)
        return lr

    study.optimize(objective, n_trials=8)
    out = tmp_path / "report"
    code, _, err = run_cli(capsys, "report", f"optuna:{url}", "--sampler", "random", "--out", out, "--no-mlflow")
    assert code == 0, err
    text, recorded = space_answer(out)
    sgd = sum(t.params["optimizer"] == "sgd" for t in study.trials)
    assert 0 < sgd < 8  # the conditional parameter is drawn in some trials only
    for part in ("lr: loguniform [0.0001, 0.1)", "dropout: uniform [0.0, 0.5] step 0.1", "layers: int_uniform {1, ..., 4}",
                 "width: log_int_uniform {16, ..., 256}", "heads: Optuna integers {2, 4, ..., 8} step 2 (showwork's integer",
                 "optimizer: categorical 'sgd', 'adam'", f"momentum: uniform [0.0, 0.9) (drawn in {sgd} of 8 trials)",
                 "(read from the trials' distributions in the Optuna study)"):
        assert part in text, text
    assert recorded

    study.optimize(lambda trial: trial.suggest_float("lr", 1e-3, 1.0, log=True), n_trials=2)  # the objective changed
    code, _, err = run_cli(capsys, "report", f"optuna:{url}", "--sampler", "random", "--out", out, "--no-mlflow")
    assert code == 0, err
    text, _ = space_answer(out)
    assert ("lr: the trials disagree: loguniform [0.0001, 0.1) in trials 0, 1, 2 and 5 more; loguniform [0.001, 1.0) in trials 8, 9"
            in text), text

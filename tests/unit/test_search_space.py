"""Search-space files: the shipped examples, nested and dotted names, overrides, the resolved YAML,
and a corpus of bad files that each give one line naming the file, the place and the problem."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from scipy import stats

from showwork.cli import main
from showwork.distributions import (
    Categorical,
    Condition,
    Constant,
    IntUniform,
    LogUniform,
    TruncatedExponential,
    Uniform,
)
from showwork.errors import InputError
from showwork.sampling import trial_config, trial_seed
from showwork.space import (
    FAILURE_POLICIES,
    SearchSpace,
    SearchSpec,
    SpecError,
    family_kind,
    load_search_spec,
    resolved_yaml,
)

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "search_spaces" / "demo_sst2.yaml"
REUTERS = REPO / "search_spaces" / "reuters_lstm.yaml"
BAD = Path(__file__).resolve().parents[1] / "bad_inputs" / "spaces"

HEAD = "name: t\nfamily: bow_sst2\nmetric: {name: acc}\nnum_trials: 4\n"


def write(tmp_path, text, name="space.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def run(capsys, *argv):
    try:
        code = main([str(a) for a in argv])
    except SystemExit as exit:
        code = exit.code
    out, err = capsys.readouterr()
    return code, out, err


# --- the shipped spaces ----------------------------------------------------------------------------


def test_demo_space_loads_with_every_setting():
    spec = load_search_spec(DEMO)
    assert spec.family == "bow_sst2" and spec.family_kind == "builtin"
    assert spec.data == {"dataset": "sst2"}
    assert (spec.metric.name, spec.metric.mode, spec.metric.test) == ("val_accuracy", "max", "test_accuracy")
    assert (spec.num_trials, spec.seed, spec.max_concurrent, spec.timeout_s) == (50, 0, 2, 300.0)
    assert (spec.resources.cpus, spec.resources.gpus, spec.failure_policy) == (1.0, 0.0, "worst")
    assert spec.source_path == str(DEMO) and spec.source_text == DEMO.read_text()
    space = spec.space
    # The hyperparameters models/bow.py actually reads.
    assert space.names == ("lr", "l2", "momentum", "batch_size", "ngrams", "hash_bits", "epochs", "patience")
    assert space["lr"] == LogUniform(0.1, 20.0)
    assert space["l2"] == LogUniform(1e-7, 1e-3)
    assert space["momentum"] == Uniform(0.0, 0.95, step=0.001)  # issue 16: the demo has a stepped parameter ...
    assert space["batch_size"] == Categorical([16, 32, 64, 128], [0.2, 0.3, 0.3, 0.2])
    assert space["ngrams"] == Categorical([1, 2])
    assert space["hash_bits"] == Categorical([12, 14, 16])
    assert space.conditions == {"hash_bits": Condition((("ngrams", (1,), False),))}  # ... and a conditional one
    assert space["epochs"] == Constant(5)
    assert space["patience"] == Constant(2)


def test_reuters_lstm_space_is_tang_et_al():
    spec = load_search_spec(REUTERS)
    assert spec.family == "lstm"
    space = spec.space
    lr = space["lr"]
    assert lr == TruncatedExponential(low=0.001, high=0.1, scale=1.0)
    reference = stats.truncexpon(b=0.099, loc=0.001, scale=1)  # TEXP[0.001, 0.099]
    assert reference.support() == pytest.approx((lr.low, lr.high))
    assert space["mode"] == Categorical(["nonstatic", "static", "rand"], [0.5, 0.4, 0.1])
    assert space["num_layers"] == Categorical([1, 2], [0.75, 0.25])
    assert space["batch_size"] == Categorical([16, 32, 64])
    assert space["hidden_dim"] == IntUniform(384, 768)
    assert space["seed"] == IntUniform(0, 10_000_000)
    assert space["ema_beta"] == Uniform(0.985, 0.995)
    assert space["weight_dropout"] == space["embed_dropout"] == Uniform(0.0, 0.3)


@pytest.mark.parametrize("path", [DEMO, REUTERS], ids=lambda p: p.name)
def test_resolved_yaml_reloads_to_an_equal_spec(tmp_path, path):
    spec = load_search_spec(path)
    text = resolved_yaml(spec)
    again = load_search_spec(write(tmp_path, text))
    assert again == spec and again.space.names == spec.space.names
    assert resolved_yaml(again).split("\n", 1)[1] == text.split("\n", 1)[1]  # a fixed point, header aside
    assert yaml.safe_load(text)["num_trials"] == spec.num_trials  # plain YAML for any reader


def test_resolved_yaml_keeps_tricky_values(tmp_path):
    text = HEAD + (
        'data: {a: "1e5", b: "true", c: "null", d: "0x10", e: 1e-300, f: "", g: "é"}\n'
        "space:\n"
        '  x: {distribution: categorical, choices: ["1e5", 1e5, "yes", true, null, "~", "a: b"]}\n'
        "  y: 0.1\n"
        '  z: "007"\n'
    )
    spec = load_search_spec(write(tmp_path, text))
    assert spec.data["a"] == "1e5" and spec.data["e"] == 1e-300
    assert spec.space["x"].choices == ("1e5", 100000.0, "yes", True, None, "~", "a: b")
    again = load_search_spec(write(tmp_path, resolved_yaml(spec), "resolved.yaml"))
    assert again == spec
    assert again.space["x"].choices == spec.space["x"].choices
    assert [type(c) for c in again.space["x"].choices] == [type(c) for c in spec.space["x"].choices]


def test_yaml_1_2_floats(tmp_path):
    spec = load_search_spec(write(tmp_path, HEAD + "space:\n  lr: {distribution: loguniform, low: 1e-4, high: 1E-1}\n"))
    assert spec.space["lr"] == LogUniform(0.0001, 0.1)


def test_yaml_1_2_core_schema_readings(tmp_path):
    """Issue 14, item 7: spaces are read by the YAML 1.2 core schema; where YAML 1.1 agrees, nothing is refused."""
    text = HEAD + (
        'data: {hex: 0x10, octal: 0o17, one: 01, yes_text: "yes", no_text: !!str no, upper: TRUE, tilde: ~,'
        " half: .5, five: 5., exp: 1e-4, forced_float: !!float 5, forced_int: !!int 010, time: '1:30', neg: -0}\n"
        "space:\n  no: 1\n  on.off: {distribution: categorical, choices: [adam, 'no', !!str off]}\n"
    )
    spec = load_search_spec(write(tmp_path, text))
    assert spec.data == {
        "hex": 16, "octal": 15, "one": 1, "yes_text": "yes", "no_text": "no", "upper": True, "tilde": None,
        "half": 0.5, "five": 5.0, "exp": 1e-4, "forced_float": 5.0, "forced_int": 10, "time": "1:30", "neg": 0,
    }
    assert [type(spec.data[k]) for k in ("hex", "five", "forced_float", "forced_int")] == [int, float, float, int]
    assert spec.space.names == ("no", "on.off")  # keys are text: `no:` names a parameter "no"
    assert spec.space["on.off"].choices == ("adam", "no", "off")


def test_resolved_yaml_quotes_text_that_either_yaml_version_would_read_otherwise(tmp_path):
    values = ["no", "Off", "y", "N", "1:30", "010", "09", "0o17", "0x10", "-0x10", "1_000", "0b101", "2020-01-01", "=", "<<", "1e3", ".inf", "True", "~", ""]
    data = ", ".join(f"k{i}: {json.dumps(v)}" for i, v in enumerate(values))
    spec = load_search_spec(write(tmp_path, HEAD + f"data: {{{data}}}\nspace: {{x: 1}}\n"))
    assert list(spec.data.values()) == values
    text = resolved_yaml(spec)
    again = load_search_spec(write(tmp_path, text, "resolved.yaml"))
    assert again == spec and list(again.data.values()) == values
    assert yaml.safe_load(text)["data"] == spec.data  # a YAML 1.1 reader (PyYAML) reads the same text


@pytest.mark.parametrize("name", [".", "..", ".hidden", "-rf", "bad\n", "a/b", "x" * 201, ""])
def test_one_search_name_rule_for_the_space_file_and_the_ledger(tmp_path, name):
    """Issue 14, item 5: validate said yes to `..`, `.hidden`, `-rf` and search said no."""
    from showwork.store import Ledger, search_name_problem

    assert search_name_problem(name) is not None
    with pytest.raises(SpecError, match="name: must be 1 to 200 letters"):
        load_search_spec(write(tmp_path, f"name: {json.dumps(name)}\nfamily: bow_sst2\nmetric: {{name: acc}}\nnum_trials: 1\nspace: {{x: 1}}\n"))
    with pytest.raises(InputError, match="must be 1 to 200 letters"):
        Ledger(tmp_path, name)
    assert not any(tmp_path.iterdir()) or [p.name for p in tmp_path.iterdir()] == ["space.yaml"]


def test_the_search_name_rule_accepts_what_it_says(tmp_path):
    from showwork.store import Ledger, search_name_problem

    for name in ("a", "9", "sst2-bow_v1.2", "a.", "x" * 200, "a..b"):
        assert search_name_problem(name) is None
        assert load_search_spec(DEMO, {"name": name}).name == name
        assert Ledger(tmp_path, name).name == name


def test_the_largest_timeout_is_one_a_timer_accepts():
    import threading

    from showwork.space import MAX_TIMEOUT_S

    assert MAX_TIMEOUT_S <= threading.TIMEOUT_MAX
    timer = threading.Timer(MAX_TIMEOUT_S, lambda: None)
    timer.daemon = True
    timer.start()  # with 1e18 this thread died with OverflowError and the trial ran without a timeout
    timer.cancel()
    timer.join(5)
    assert not timer.is_alive()


@pytest.mark.parametrize("cpus, gpus", [(0.0001, 0), (0.25, 0.5), (1, 1), (3, 0.3333), (1_000_000, 1_000_000)])
def test_resources_validate_accepts_ray_accepts(tmp_path, cpus, gpus):
    from ray._common.ray_option_utils import _validate_resource_quantity

    spec = load_search_spec(write(tmp_path, HEAD + f"resources: {{cpus: {cpus}, gpus: {gpus}}}\nspace: {{x: 1}}\n"))
    assert _validate_resource_quantity("CPU", spec.resources.cpus) is None
    assert _validate_resource_quantity("num_gpus", spec.resources.gpus) is None
    assert _validate_resource_quantity("CPU", 1e-300) is not None  # the control: what validate now refuses


# --- names, overrides, equality ----------------------------------------------------------------------


def test_nested_and_dotted_names_give_the_same_space(tmp_path):
    nested = HEAD + (
        "space:\n"
        "  optimizer:\n"
        "    lr: {distribution: loguniform, low: 1e-4, high: 1e-1}\n"
        "    schedule:\n"
        "      warmup: {distribution: uniform, low: 0, high: 0.2}\n"
        "  epochs: 3\n"
    )
    dotted = HEAD + (
        "space:\n"
        "  optimizer.lr: {distribution: loguniform, low: 1e-4, high: 1e-1}\n"
        "  optimizer.schedule.warmup: {distribution: uniform, low: 0, high: 0.2}\n"
        "  epochs: {distribution: constant, value: 3}\n"
    )
    mixed = HEAD + (
        "space:\n"
        "  optimizer:\n"
        "    lr: {distribution: loguniform, low: 1e-4, high: 1e-1}\n"
        "    schedule.warmup: {distribution: uniform, low: 0, high: 0.2}\n"
        "  epochs: 3\n"
    )
    specs = [load_search_spec(write(tmp_path, text, f"{i}.yaml")) for i, text in enumerate((nested, dotted, mixed))]
    assert specs[0] == specs[1] == specs[2]
    assert specs[0].space.names == ("optimizer.lr", "optimizer.schedule.warmup", "epochs")
    assert trial_config(specs[0].space, 0, 3) == trial_config(specs[1].space, 0, 3)


def test_overrides_replace_the_file_values_before_validation(tmp_path):
    path = DEMO
    spec = load_search_spec(path, {"name": "quick", "num_trials": 3, "seed": 9, "max_concurrent": 1})
    assert (spec.name, spec.num_trials, spec.seed, spec.max_concurrent) == ("quick", 3, 9, 1)
    assert load_search_spec(path, {"seed": None, "num_trials": None}) == load_search_spec(path)
    again = load_search_spec(write(tmp_path, resolved_yaml(spec)))
    assert again == spec
    with pytest.raises(SpecError) as caught:
        load_search_spec(path, {"num_trials": 0})
    assert str(caught.value) == f"{path}: num_trials (set by --num-trials): must be greater than or equal to 1 (got 0)"
    with pytest.raises(SpecError, match=r"name \(set by --name\): must be 1 to 200 letters"):
        load_search_spec(path, {"name": "a b"})
    with pytest.raises(ValueError, match="can be overridden"):
        load_search_spec(path, {"timeout_s": 3})


def test_fail_fast_after_is_overridden_alike_by_validate_search_and_the_api(capsys, monkeypatch):
    """Issue 35 item 2: the setting of the fail-fast rule, in the file and overridden where settings are."""
    from showwork import api
    from showwork.commands import search as search_command

    code, out, err = run(capsys, "validate", DEMO, "--no-family", "--fail-fast-after", 0)
    assert code == 0 and "\nfail_fast_after: 0\n" in out, err
    assert "\nfail_fast_after: 3\n" in run(capsys, "validate", DEMO, "--no-family")[1]  # the default, written out
    assert api.search_spec(DEMO, fail_fast_after=5).fail_fast_after == 5
    ran = []
    monkeypatch.setattr(search_command, "run_spec", lambda spec, *args, **kwargs: ran.append(spec) or 0)
    assert run(capsys, "search", DEMO, "--fail-fast-after", 7)[0] == 0 and ran[0].fail_fast_after == 7
    for argv in (["validate", DEMO, "--fail-fast-after", -1], ["search", DEMO, "--fail-fast-after", "x"]):
        code, out, err = run(capsys, *argv)
        assert code == 2 and out == "" and err.startswith("showwork: error:") and "--fail-fast-after" in err, err
    with pytest.raises(InputError, match=r"fail_fast_after \(set by --fail-fast-after\): must be greater than or equal to 0"):
        api.search_spec(DEMO, fail_fast_after=-1)


def test_a_missing_file_key_can_come_from_an_override(tmp_path):
    path = write(tmp_path, "name: t\nfamily: bow_sst2\nmetric: {name: acc}\nspace: {x: 1}\n")
    with pytest.raises(SpecError, match="num_trials: missing required key"):
        load_search_spec(path)
    assert load_search_spec(path, {"num_trials": 2}).num_trials == 2


def test_defaults():
    spec = SearchSpec.model_validate(
        {"name": "t", "family": "lstm", "metric": {"name": "f1"}, "num_trials": 1, "space": {"x": 1}}
    )
    assert spec.data == {} and spec.seed == 0 and spec.metric.mode == "max" and spec.metric.test is None
    assert (spec.resources.cpus, spec.resources.gpus) == (1.0, 0.0)
    assert spec.max_concurrent is None and spec.timeout_s is None
    assert spec.max_retries == 1 and spec.failure_policy == "worst" and spec.fail_fast_after == 3
    assert spec.source_path is None and "source_text" not in spec.model_dump()


def test_fractional_gpus_are_allowed(tmp_path):
    spec = load_search_spec(write(tmp_path, HEAD + "resources: {cpus: 0.5, gpus: 0.25}\nspace: {x: 1}\n"))
    assert (spec.resources.cpus, spec.resources.gpus) == (0.5, 0.25)


def test_equality_ignores_the_source():
    spec = load_search_spec(DEMO)
    copy = spec.model_copy(update={"source_path": "elsewhere.yaml", "source_text": "# other text"})
    assert copy == spec
    assert spec != load_search_spec(DEMO, {"seed": 1})


def test_failure_policies_mirror_the_statistics():
    from showwork.statistics import FAILURE_POLICIES as STATISTICS_POLICIES

    assert tuple(FAILURE_POLICIES) == tuple(STATISTICS_POLICIES)


@pytest.mark.parametrize(
    "family, kind",
    [
        ("bow_sst2", "builtin"),
        ("lstm", "builtin"),
        ("models.demo:train", "module"),
        ("pkg:fn", "module"),
        ("path/to/file.py:train", "file"),
        ("train.py:main", "file"),
        ("../my models/x.py:fit", "file"),
    ],
)
def test_family_syntax(family, kind):
    assert family_kind(family) == kind


@pytest.mark.parametrize("family", ["", "models demo", "models.demo:", "a:b:c", "1abc", "x.py", ".py:train", "pkg.:f"])
def test_bad_family_syntax(family):
    with pytest.raises(ValueError, match="built-in family name"):
        family_kind(family)


# --- SearchSpace -------------------------------------------------------------------------------------


def test_search_space_json_round_trip_and_describe():
    space = load_search_spec(REUTERS).space
    again = SearchSpace.from_dict(json.loads(json.dumps(space.to_dict(), allow_nan=False)))
    assert again == space and again.names == space.names
    rows = space.describe()
    assert [r["name"] for r in rows] == list(space.names)
    by_name = {r["name"]: r for r in rows}
    assert by_name["lr"] == {"name": "lr", "distribution": "truncated_exponential (scale 1.0)", "bounds": "[0.001, 0.1]", "when": ""}
    assert by_name["dropout"]["bounds"] == "[0.05, 0.7)"
    assert by_name["hidden_dim"]["bounds"] == "{384, ..., 768}"
    assert by_name["num_layers"] == {"name": "num_layers", "distribution": "categorical (weighted)", "bounds": "1 (p=0.75), 2 (p=0.25)", "when": ""}


def test_the_space_table_words_each_distribution_as_the_distribution_does():
    space = load_search_spec(REUTERS).space
    for row in space.describe():
        dist = space[row["name"]]
        assert (row["distribution"], row["bounds"]) == (dist.kind_text(), dist.bounds_text())


def test_search_space_constructor_checks_names():
    assert SearchSpace({"a.b": Uniform(0, 1)}).names == ("a.b",)
    for params, fragment in [
        ({}, "at least one parameter"),
        ({"a": Uniform(0, 1), "a.b": Uniform(0, 1)}, "needs 'a' to be a group"),
        ({"a b": Uniform(0, 1)}, "dot-separated words"),
        ({"a..b": Uniform(0, 1)}, "dot-separated words"),
        ({"x": 3}, "must be a Distribution"),
        ({"plumless": Uniform(0, 1), "buckeroo": Uniform(0, 1)}, "same CRC-32 stream id"),  # a known CRC-32 collision
    ]:
        with pytest.raises(InputError, match=fragment):
            SearchSpace(params)


def test_search_space_from_dict_names_the_key():
    with pytest.raises(InputError, match=r"^space\.opt\.lr\.low: must be positive"):
        SearchSpace.from_dict({"opt": {"lr": {"distribution": "loguniform", "low": 0, "high": 1}}})
    with pytest.raises(InputError, match=r"^space\.bs: a list is not a distribution"):
        SearchSpace.from_dict({"bs": [16, 32]})


def test_spec_from_python_reports_space_errors():
    # InputError (no longer a ValueError, so pydantic passes it through as it is, not as a ValidationError)
    with pytest.raises(InputError, match=r"space\.x\.low: must be smaller"):
        SearchSpec.model_validate(
            {"name": "t", "family": "lstm", "metric": {"name": "f1"}, "num_trials": 1,
             "space": {"x": {"distribution": "uniform", "low": 2, "high": 1}}}
        )


# --- the command line ----------------------------------------------------------------------------------


def test_cli_import_stays_light():
    probe = "import sys, showwork.cli; print(sorted(m for m in ('numpy', 'scipy', 'pydantic', 'yaml') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_validate_prints_yaml_that_reloads_and_a_parameter_table(capsys, tmp_path):
    code, out, err = run(capsys, "validate", DEMO, "--num-trials", 7, "--seed", 3)
    assert code == 0, err
    assert yaml.safe_load(out)["num_trials"] == 7
    reloaded = load_search_spec(write(tmp_path, out))
    assert reloaded == load_search_spec(DEMO, {"num_trials": 7, "seed": 3})
    table = [line for line in out.splitlines() if line.startswith("#   ")]
    assert table[0].split() == ["#", "parameter", "distribution", "bounds", "drawn", "when"]
    assert any("lr" in line and "loguniform" in line and "[0.1, 20.0)" in line and "always" in line for line in table)
    assert any("momentum" in line and "[0.0, 0.95] step 0.001" in line for line in table)
    assert any("hash_bits" in line and line.endswith("ngrams = 1") for line in table)


def test_sample_json_lines_are_the_trial_configs(capsys):
    code, out, err = run(capsys, "sample", REUTERS, "-n", 5, "--seed", 11, "--json")
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    space = load_search_spec(REUTERS).space
    assert [r["trial"] for r in rows] == [0, 1, 2, 3, 4]
    for r in rows:
        assert r["seed"] == trial_seed(11, r["trial"])
        assert r["params"] == trial_config(space, 11, r["trial"])
        assert list(r["params"]) == list(space.names)


def test_sample_table(capsys):
    code, out, err = run(capsys, "sample", DEMO, "-n", 3)
    assert code == 0, err
    lines = out.splitlines()
    header = next(line for line in lines if line.startswith("trial"))
    assert header.split() == [
        "trial", "trial_seed", "lr", "l2", "momentum", "batch_size", "ngrams", "hash_bits", "epochs", "patience"
    ]
    assert len(lines) == lines.index(header) + 4
    # A conditional parameter left out of a trial shows as '-' (trial 2 of seed 0 draws bigrams, so no hash_bits).
    code, out, err = run(capsys, "sample", DEMO, "-n", 4, "--json")
    configs = [json.loads(line)["params"] for line in out.splitlines()]
    assert [c["ngrams"] for c in configs] == [2, 2, 2, 1] and "hash_bits" not in configs[2] and "hash_bits" in configs[3]
    code, out, err = run(capsys, "sample", DEMO, "-n", 3)
    assert out.splitlines()[-1].split()[7] == "-" and "'-': a conditional parameter left out" in out


@pytest.mark.parametrize("argv", [["sample", DEMO, "-n", 0], ["sample", DEMO], ["sample", DEMO, "-n", "x"]])
def test_sample_bad_arguments(capsys, argv):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and err.startswith("showwork: error:") and err.count("\n") == 1


# --- the corpus of bad files ---------------------------------------------------------------------------

# file -> (line or None, dotted key or None, fragment of the message)
RULE = "must be 1 to 200 letters, digits, '.', '_' or '-', starting with a letter or digit"
EXPECTED = {
    "alias_bomb": (7, None, "YAML aliases (*a) are not allowed"),
    "bad_failure_policy": (5, "failure_policy", "must be 'error', 'worst' or 'exclude' (got \"ignore\")"),
    "bad_family": (2, "family", "must be a built-in family name"),
    "bad_metric_mode": (3, "metric.mode", "must be 'max' or 'min' (got \"maximize\")"),
    "bad_name": (1, "name", RULE),
    "bad_parameter_name": (6, "space.learning rate", "dot-separated words"),
    "bound_is_boolean": (6, "space.dropout.high", "must be a number, not a boolean"),
    "bound_is_text": (6, "space.dropout.low", "must be a number, not text (low='zero')"),
    "constant_list_value": (6, "space.layers.value", "not a list (value=[64, 64])"),
    "cpus_as_text": (5, "resources.cpus", "must be a number (got \"one\")"),
    "data_not_mapping": (5, "data", "must be a mapping"),
    "date_value": (5, "data.version", "2020-01-01 is ambiguous: YAML 1.1 reads it as a date (date values are not supported)"),
    "dotted_and_nested_twice": (8, "space.optimizer.lr", "is defined twice (also at line 7)"),
    "duplicate_choices": (6, "space.batch_size.choices", "must be unique (16 appears at positions 0 and 2)"),
    "duplicate_parameter_key": (8, "space.lr", "duplicate key 'lr' (lines 6 and 8)"),
    "duplicate_top_key": (7, "num_trials", "duplicate key 'num_trials' (lines 4 and 7)"),
    "empty": (None, None, "is empty"),
    "empty_choices": (6, "space.batch_size.choices", "must not be empty"),
    "empty_space": (5, "space", "give at least one parameter"),
    "fractional_max_concurrent": (5, "max_concurrent", "must be an integer (got 1.5)"),
    "huge_float": (6, "space.lr.high", "1e400 is too large"),
    "huge_integer": (4, "num_trials", "integer too large"),
    "infinite_bound": (6, "space.x.high", "not finite"),
    "int_uniform_fractional": (6, "space.hidden.low", "must be an integer (low=32.5)"),
    "list_as_distribution": (6, "space.batch_size", "{distribution: categorical, choices: [...]}"),
    "log_int_uniform_zero_low": (6, "space.hidden.low", "must be at least 1"),
    "loguniform_zero_low": (9, "space.optimizer.lr.low", "must be positive for a log-uniform distribution (low=0)"),
    "low_not_below_high": (6, "space.dropout.low", "must be smaller than `high` (low=3, high=1)"),
    "metric_bounds_one_value": (3, "metric.bounds[1]", "missing required key"),
    "metric_bounds_reversed": (3, "metric", "bounds must be [a, b] with a < b (got [1.0, 0.0])"),
    "merge_key": (6, "space", "merge keys (<<) are not allowed"),
    "missing_distribution_argument": (6, "space.lr", "a loguniform distribution needs `high`"),
    "missing_metric_name": (3, "metric.name", "missing required key"),
    "missing_required_key": (None, "metric", "missing required key"),
    "nan_weight": (6, "space.x.weights[0]", "not finite"),
    "negative_fail_fast_after": (5, "fail_fast_after", "greater than or equal to 0 (got -1)"),
    "negative_gpus": (5, "resources.gpus", "greater than or equal to 0 (got -1)"),
    "negative_seed": (5, "seed", "greater than or equal to 0 (got -1)"),
    "negative_weights": (6, "space.batch_size.weights", "must be non-negative (weights=[1.5, -0.5])"),
    "non_text_key": (6, "space", "keys must be text (got 1)"),
    "normal_zero_std": (6, "space.x.std", "must be positive (std=0)"),
    "null_parameter": (6, "space.optimizer", "has no value"),
    "python_scalar_tag": (1, "name", "YAML tag tag:yaml.org,2002:python/name:os.system is not allowed"),
    "python_tag": (5, "data", "YAML tag tag:yaml.org,2002:python/object/apply:os.system is not allowed"),
    "recursive_alias": (5, None, "YAML aliases (*x) are not allowed"),
    "reserved_source_key": (5, "source_text", "unknown key"),
    "space_is_a_distribution": (5, "space.distribution", "put this distribution under a name"),
    "space_is_list": (6, "space", "must be a mapping of parameter names to distributions"),
    "top_level_list": (None, None, "the top level must be a mapping"),
    "top_level_scalar": (None, None, "the top level must be a mapping"),
    "trials_as_text": (4, "num_trials", "must be an integer (got \"10\")"),
    "truncated_exponential_negative_scale": (6, "space.lr.scale", "must be positive (scale=-1)"),
    "two_documents": (7, None, "expected a single document"),
    "unknown_distribution": (6, "space.lr.distribution", "did you mean 'uniform'?"),
    "unknown_distribution_argument": (6, "space.lr.lo", "did you mean 'low'?"),
    "unknown_metric_key": (3, "metric.mod", "did you mean 'mode'?"),
    "unknown_top_key": (4, "num_trails", "did you mean 'num_trials'?"),
    "value_and_group": (7, "space.model.hidden", "needs 'model' to be a group"),
    "weights_not_summing": (6, "space.mode.weights", "must sum to 1 (weights=[0.5, 0.4, 0.2] sum to 1.1)"),
    "weights_wrong_length": (6, "space.mode.weights", "one entry per choice (2 weights for 3 choices)"),
    "yaml_syntax_error": (7, None, "invalid YAML"),
    "zero_timeout": (5, "timeout_s", "must be greater than 0 (got 0)"),
    "zero_trials": (4, "num_trials", "must be greater than or equal to 1 (got 0)"),
    # issue 14, item 5: accepted by validate, fatal later (sample, search, Ray, the watchdog, UTF-8 output)
    "normal_only_minus_infinity": (6, "space.x.high", "lies 1e+300 standard deviations from the mean (at most 1e+06 allowed)"),
    "normal_subnormal_std_far_bounds": (6, "space.x.low", "lies inf standard deviations from the mean"),
    "cpus_below_ray_unit": (5, "resources.cpus", "must be a multiple of 0.0001, the unit Ray counts resources in (got 1e-300"),
    "gpus_beyond_ray_unit": (5, "resources.gpus", "must be a multiple of 0.0001, the unit Ray counts resources in (got 0.33333; write 0.3333)"),
    "gpus_too_many": (5, "resources.gpus", "must be less than or equal to 1000000"),
    "timeout_beyond_timer": (5, "timeout_s", "must be less than or equal to 31536000 (got 1e+18)"),
    "surrogate_constant": (6, "space.note", "contains a lone surrogate \\ud800"),
    "surrogate_choice": (6, "space.act.choices[1]", "contains a lone surrogate \\udfff"),
    "surrogate_data_value": (5, "data.split", "contains a lone surrogate \\udc80"),
    "surrogate_parameter_name": (6, "space", "contains a lone surrogate \\ud800"),
    "surrogate_search_name": (1, "name", "contains a lone surrogate \\udc00"),
    "mlflow_key_collision": (None, None, "would have the same MLflow key; rename one"),
    # issue 23 item 5: the worker's set-up has its own limit (no limit is no choice: a hung import would hang the trial)
    "zero_setup_timeout": (5, "setup_timeout_s", "must be greater than 0 (got 0)"),
    "setup_timeout_null": (5, "setup_timeout_s", "must be a number (got null)"),
    "setup_timeout_beyond_timer": (5, "setup_timeout_s", "must be less than or equal to 31536000 (got 1e+18)"),
    "name_dot": (1, "name", RULE + ' (got ".")'),
    "name_dotdot": (1, "name", RULE + ' (got "..")'),
    "name_hidden": (1, "name", RULE + ' (got ".hidden")'),
    "name_dash_rf": (1, "name", RULE + ' (got "-rf")'),
    "name_trailing_newline": (1, "name", RULE + ' (got "bad\\n")'),
    # item 6: explicit YAML tags and numerals PyYAML's YAML 1.1 constructors crashed on
    "tag_bool_maybe": (6, "space.use_bias", '!!bool "maybe" is not a boolean (write true or false)'),
    "tag_int_empty": (4, "num_trials", '!!int "" is not an integer'),
    "tag_timestamp_garbage": (5, "seed", "YAML tag tag:yaml.org,2002:timestamp is not allowed"),
    "tag_float_text": (6, "space.lr.low", '!!float "abc" is not a number'),
    "tag_local": (5, "data.token", "YAML tag !vault is not allowed"),
    "tag_binary": (6, "space.blob", "YAML tag tag:yaml.org,2002:binary is not allowed"),
    "float_dot_underscore": (6, "space.lr.low", "must be a number, not text (low='._')"),
    "seed_hex_underscore": (5, "seed", '0x_ is ambiguous: YAML 1.1 reads it as a malformed !!int, YAML 1.2 as the text "0x_"'),
    # item 7: plain scalars YAML 1.1 and YAML 1.2 read differently
    "yaml11_octal_trials": (4, "num_trials", "010 is ambiguous: YAML 1.1 reads it as 8, YAML 1.2 as 10; write 8 or 10"),
    "yaml11_sexagesimal": (6, "space.warmup", '1:30 is ambiguous: YAML 1.1 reads it as 90, YAML 1.2 as the text "1:30"'),
    "yaml11_no_in_choices": (6, "space.optimizer.choices[2]", 'no is ambiguous: YAML 1.1 reads it as false, YAML 1.2 as the text "no"; write false or "no" in quotes'),
    "yaml11_yes_constant": (6, "space.use_bias", "yes is ambiguous: YAML 1.1 reads it as true"),
    "yaml11_off_in_data": (5, "data.shuffle", "off is ambiguous: YAML 1.1 reads it as false"),
    "yaml11_y_choice": (6, "space.axis.choices[1]", "y is ambiguous: YAML 1.1 reads it as true"),
    "yaml11_underscore_int": (4, "num_trials", '1_000 is ambiguous: YAML 1.1 reads it as 1000, YAML 1.2 as the text "1_000"'),
    "yaml11_binary_int": (5, "seed", "0b101 is ambiguous: YAML 1.1 reads it as 5"),
    "yaml11_signed_hex": (6, "space.offset", "-0x10 is ambiguous: YAML 1.1 reads it as -16"),
    "yaml11_leading_zero": (6, "space.layers.high", '09 is ambiguous: YAML 1.1 reads it as the text "09", YAML 1.2 as 9'),
    # issue 16 item 1: a distribution whose `distribution` key is missing or misspelt was read as a group of constants
    "misspelt_distribution_key": (6, "space.l1_ratio.distribtion", "no `distribution` key; did you mean 'distribution'?"),
    "arguments_without_distribution": (6, "space.lr.low", "`low` is a distribution argument, but this mapping has no `distribution` key"),
    "misspelt_arguments_without_distribution": (6, "space.dropout.loww", "did you mean 'low'?"),
    "when_without_distribution": (7, "space.momentum.value", "has no `distribution` key"),
    # issue 16 item 3: steps and the integer forms
    "step_larger_than_range": (6, "space.dropout.step", "is larger than `high` minus `low`: `low` would be the only value"),
    "step_zero": (6, "space.dropout.step", "must be positive (step=0)"),
    "loguniform_step_not_below_twice_low": (6, "space.lr.step", "must be smaller than twice `low`"),
    "int_normal_fractional_step": (6, "space.layers.step", "must be an integer (step=1.5)"),
    "int_truncated_exponential_fractional_low": (6, "space.width.low", "must be an integer (low=0.5)"),
    "step_on_int_uniform": (6, "space.width.step", "is not an argument of a int_uniform distribution"),
    # issue 16 item 4: conditions name earlier categorical/constant parameters and values they can take
    "when_unknown_parameter": (7, "space.momentum.when.optimiser", "is not a parameter of this space; did you mean 'optimizer'?"),
    "when_later_parameter": (6, "space.momentum.when.optimizer", "'optimizer' is defined after 'momentum'; a condition may only refer to parameters above it"),
    "when_cycle": (6, "space.a.when.b", "(and 'b' depends on 'a': a cycle)"),
    "when_itself": (6, "space.a.when.a", "'a' cannot depend on itself"),
    "when_continuous_parameter": (7, "space.momentum.when.lr", "conditions test categorical or constant parameters; 'lr' is loguniform"),
    "when_value_not_a_choice": (7, "space.momentum.when.optimizer", "\"sdg\" is not among the choices of 'optimizer' ('sgd', 'adam'), so it never holds; did you mean 'sgd'?"),
    "when_in_value_not_a_choice": (7, "space.momentum.when.optimizer", "\"rmsprop\" is not among the choices of 'optimizer'"),
    "when_list_without_in": (7, "space.momentum.when.optimizer", "is a list; for one of several values write {in: ['sgd', 'adam']}"),
    "when_misspelt_in": (7, "space.momentum.when.optimizer", "did you mean 'in'?"),
    "when_misspelt": (7, "space.momentum.wehn", "unknown key; did you mean 'when'?"),
    "when_not_mapping": (7, "space.momentum.when", "must map earlier parameters to a value or {in: [values]}"),
    "when_bool_vs_text": (7, "space.momentum.when.nesterov", "\"true\" is not among the choices of 'nesterov' (true, false)"),
}


def test_every_bad_file_has_an_expectation():
    assert sorted(p.stem for p in BAD.glob("*.yaml")) == sorted(EXPECTED)
    assert len(EXPECTED) >= 25


def check_refused(capsys, path, line, key, fragment):
    code, out, err = run(capsys, "validate", path)
    assert code == 2
    assert out == ""
    assert err.count("\n") == 1 and err.endswith("\n"), err
    message = err.removeprefix("showwork: error: ").rstrip("\n")
    assert message.startswith(f"{path}:" if line else f"{path}"), message
    if line is not None:
        assert message.startswith(f"{path}:{line}:"), message
    if key is not None:
        assert f": {key}: " in message or f": {key} (" in message, message
    assert fragment in message, message
    return message


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_space_is_refused_with_one_line(capsys, name):
    line, key, fragment = EXPECTED[name]
    check_refused(capsys, BAD / f"{name}.yaml", line, key, fragment)


@pytest.mark.parametrize(
    "content, fragment",
    [
        (b"name: t\x00\x01\x02\xff\xfe", "is a binary file (NUL byte at offset 7)"),
        (b"name: caf\xe9\n", "is not UTF-8 text (byte 0xe9 at offset 9)"),
        (bytes(range(256)) * 4, "is a binary file"),
        (b"name: t\x07\n", "invalid YAML"),  # a control character
        (b"[" * 5000 + b"]" * 5000, "nested"),
        (b"a: " + b"x" * (1 << 20), "larger than 1 MiB"),
        (b"", "is empty"),
    ],
    ids=["nul", "latin1", "junk", "control", "deep", "large", "zero-bytes"],
)
def test_binary_and_odd_files_are_refused(capsys, tmp_path, content, fragment):
    path = tmp_path / "space.yaml"
    path.write_bytes(content)
    check_refused(capsys, path, None, None, fragment)


def test_missing_file_and_directory(capsys, tmp_path):
    check_refused(capsys, tmp_path / "nope.yaml", None, None, "no such file")
    check_refused(capsys, tmp_path, None, None, "is a directory, not a regular file")


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom", "/dev/null"])
def test_devices_are_refused_without_reading_them(capsys, device):
    """Issue 14, item 9: /dev/zero has st_size 0 and was read until MemoryError."""
    if not Path(device).exists():
        pytest.skip(f"no {device}")
    check_refused(capsys, Path(device), None, None, "is a character device, not a regular file")


def test_the_read_is_capped_by_bytes_read_not_by_st_size(tmp_path, monkeypatch):
    from showwork import files

    path = write(tmp_path, "a: " + "x" * 100)
    real_fstat = files.os.fstat
    monkeypatch.setattr(files.os, "fstat", lambda fd: os_stat_with_size(real_fstat(fd), 0))  # a file that lies
    with pytest.raises(InputError, match="is larger than 64 bytes, the limit for a search space"):
        files.read_regular_file(path, 64, "search space")
    assert files.read_regular_file(path, 103, "search space") == path.read_bytes()


def os_stat_with_size(result, size):
    import os

    fields = list(result)
    fields[6] = size  # st_size
    return os.stat_result(fields)


def test_the_first_problem_in_the_file_is_reported(tmp_path):
    text = (
        "name: t\nfamily: bow_sst2\nmetric: {name: acc, mode: up}\nnum_trials: 0\n"
        "space:\n  x: {distribution: uniform, low: 2, high: 1}\n"
    )
    with pytest.raises(SpecError) as caught:
        load_search_spec(write(tmp_path, text))
    assert caught.value.line == 3 and caught.value.key == "metric.mode"


@pytest.mark.parametrize(
    ("space", "later", "line", "key", "fragment"),
    [
        ("  x: {distribution: uniform, low: 2, high: 1}\n", "max_retries: -1\n", 6, "space.x.low", "must be smaller than `high`"),
        ("  a: 1\n  a.b: 2\n", "max_retries: -1\n", 7, "space.a.b", "needs 'a' to be a group, but 'a' is a parameter (also at line 6)"),
        ("  x: 1\n", "max_retries: -1\n", 7, "max_retries", "must be greater than or equal to 0"),
    ],
)
def test_the_space_is_validated_once_inside_the_model(tmp_path, space, later, line, key, fragment):
    # issue 18: no placeholder space; the space's problem comes out of the pydantic model with its own key path
    with pytest.raises(SpecError) as caught:
        load_search_spec(write(tmp_path, HEAD + "space:\n" + space + later))
    assert (caught.value.line, caught.value.key) == (line, key) and fragment in str(caught.value)
    assert str(caught.value).count(":") >= 3 and "\n" not in str(caught.value)


# --- issue 16: no silent misreading of a distribution, and what stays possible -------------------------


@pytest.mark.parametrize(
    "group",
    [
        "optimizer: {lr: 0.1, momentum: 0.9}",  # "lr" is as close to "low" as the near-miss cutoff: alone, not an argument
        "loss: {weight: 0.5}",  # one near miss of `weights` alone is an ordinary parameter name
        "training: {steps: 1000, warmup: 100}",
        "model: {hidden: {distribution: int_uniform, low: 16, high: 64}, layers: 2}",
    ],
)
def test_ordinary_groups_are_still_groups(tmp_path, group):
    spec = load_search_spec(write(tmp_path, DEMO.read_text().split("space:")[0] + "space:\n  " + group + "\n"))
    assert all("." in name for name in spec.space.names)


def test_parameters_named_like_arguments_are_written_with_dotted_names(tmp_path):
    # The README's way to a group whose parameters are called low and high, or a constant named step.
    text = DEMO.read_text().split("space:")[0] + "space:\n  thresholds.low: 0.1\n  thresholds.high: 0.9\n  step: 10\n"
    space = load_search_spec(write(tmp_path, text)).space
    assert space.names == ("thresholds.low", "thresholds.high", "step")
    assert space["thresholds.low"] == Constant(0.1) and space["step"] == Constant(10)
    # The nested form is the near miss the issue is about, and is refused.
    nested = DEMO.read_text().split("space:")[0] + "space:\n  thresholds: {low: 0.1, high: 0.9}\n"
    with pytest.raises(SpecError, match=r"thresholds\.low: ..*dotted names \(thresholds\.low: \.\.\.\)"):
        load_search_spec(write(tmp_path, nested))


def test_a_constant_can_be_conditional_and_a_condition_can_test_a_constant(tmp_path):
    text = DEMO.read_text().split("space:")[0] + (
        "space:\n"
        "  mode: fast\n"
        "  epochs: {distribution: constant, value: 2, when: {mode: fast}}\n"
        "  ngrams: {distribution: categorical, choices: [1, 2]}\n"
        "  bigram_bits: {distribution: constant, value: 18, when: {ngrams: {in: [2]}}}\n"
    )
    space = load_search_spec(write(tmp_path, text)).space
    configs = [trial_config(space, 0, i) for i in range(20)]
    assert all(c["epochs"] == 2 for c in configs)
    assert all(("bigram_bits" in c) == (c["ngrams"] == 2) for c in configs)
    assert {c["ngrams"] for c in configs} == {1, 2}


def test_the_demo_is_as_the_readme_says():
    """README's "Two commands": a 50-trial search whose median-curve bands are informative up to k ≈ 8.5."""
    from showwork.statistics import informative_budget

    spec = load_search_spec(DEMO)
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert spec.num_trials == 50 and "a real 50-trial random search on SST-2" in readme
    assert round(informative_budget(spec.num_trials, confidence=0.8), 1) == 8.5 and "informative up to k ≈ 8.5" in readme

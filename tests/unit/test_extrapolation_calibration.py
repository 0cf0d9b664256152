"""The calibration of the extrapolation's goodness-of-fit test (experiments/extrapolation_calibration.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from experiments import extrapolation_calibration as calibration
from experiments.common import REPO_ROOT
from showwork.constants import EXTRAPOLATION_GOF_CRITICAL_VALUES
from showwork.statistics import ArgumentError, NoisyQuadratic, extrapolate, tuning_curve
from showwork.statistics.extrapolation import ExtrapolationRefused, gof_critical_value, tail_statistic

COMMITTED = REPO_ROOT / "experiments" / "results" / calibration.STUDY / f"{calibration.STUDY}.json"


def test_the_constant_is_the_committed_calibration():
    result = json.loads(COMMITTED.read_text(encoding="utf-8"))
    assert not result["quick"]
    assert tuple(tuple(pair) for pair in result["critical_values"]) == EXTRAPOLATION_GOF_CRITICAL_VALUES
    # ... and the calibration's values are what its rows say: the largest 95th percentile per n, rounded up.
    assert calibration.critical_values(result["null"]) == [tuple(pair) for pair in result["critical_values"]]


def test_quick_mode_writes_its_outputs(tmp_path):
    assert calibration.main(["--quick", "--out", str(tmp_path)]) == 0
    result = json.loads((tmp_path / f"{calibration.STUDY}.json").read_text(encoding="utf-8"))
    assert result["quick"] and [n for n, _ in result["critical_values"]] == list(calibration.SIZES[True])
    assert {row["alternative"] for row in result["power"]} == set(calibration.ALTERNATIVES)
    assert (tmp_path / f"{calibration.STUDY}.csv").read_text(encoding="utf-8").startswith("law,n,replicates")


def test_each_sample_has_its_own_seed():
    # So the numbers depend neither on --workers nor on how the replicates are chunked.
    law = calibration.law_name(1.0, 0.0)
    whole = calibration.simulate(calibration.Task(law, 0, 24, 0, 4, 0))
    parts = calibration.simulate(calibration.Task(law, 0, 24, 0, 2, 0)) + calibration.simulate(calibration.Task(law, 0, 24, 2, 4, 0))
    assert whole == parts and len(set(whole)) == 4


def test_the_percentile_row_and_its_interval():
    values = list(np.linspace(0.0, 1.0, 401)) + [None]
    row = calibration.percentile_row("x", 24, values)
    assert row["reached_test"] == 401 and row["replicates"] == 402
    assert row["p95"] == pytest.approx(0.95)
    assert row["p95_low"] < 0.95 < row["p95_high"] and row["p95_high"] - row["p95_low"] < 0.05


def test_tail_statistic_is_the_statistic_extrapolate_tests():
    scores = NoisyQuadratic(0.0, 1.0, 2.0, 0.01).sample(48, np.random.default_rng(3))
    curve = tuning_curve(scores)
    result = extrapolate(curve, 100)
    assert result.goodness_of_fit.statistic == tail_statistic(curve)
    assert tail_statistic(tuning_curve(np.linspace(0.0, 1.0, 12))) is None  # extrapolate refuses: too small a tail
    with pytest.raises(ArgumentError, match="tail_fraction"):
        tail_statistic(curve, 0.0)


def test_the_critical_value_between_and_past_the_calibrated_sizes():
    table = ((24, 0.4), (96, 0.6))
    assert gof_critical_value(48, table) == pytest.approx(0.5)  # linear in log n
    assert gof_critical_value(20, table) == 0.4 and gof_critical_value(10_000, table) == 0.6
    (n_last, last), (n_first, first) = EXTRAPOLATION_GOF_CRITICAL_VALUES[-1], EXTRAPOLATION_GOF_CRITICAL_VALUES[0]
    assert gof_critical_value(4 * n_last) == last and gof_critical_value(n_first) == first


def test_a_statistic_above_the_critical_value_refuses():
    # A gap in the best 15 %: the statistic decides, and the refusal names the critical value at n.
    rng = np.random.default_rng(11)
    for _ in range(40):
        y = NoisyQuadratic(0.0, 1.0, 3.0).sample(48, rng)
        curve = tuning_curve(np.where(y > np.quantile(y, 0.85), y + 0.5, y))
        statistic = tail_statistic(curve)
        if statistic is not None and statistic > gof_critical_value(48):
            break
    else:
        pytest.fail("no gap sample was rejected in 40")
    refused = extrapolate(curve, 100)
    assert isinstance(refused, ExtrapolationRefused) and f"> {gof_critical_value(48):.2g}" in refused.reason


def test_the_docs_state_the_committed_numbers():
    # docs/statistics.md and the constant's docstring quote the calibration: critical values, worst size, power.
    result = json.loads(COMMITTED.read_text(encoding="utf-8"))
    docs = " ".join((REPO_ROOT / "docs" / "statistics.md").read_text(encoding="utf-8").split())
    values = ", ".join(f"{c:g}" for _, c in result["critical_values"][:-1]) + f", {result['critical_values'][-1][1]:g}"
    assert values in docs
    worst = {row["law"] for row in result["null"] if row["size"] is not None and row["size"] >= 0.05}
    assert worst == {calibration.law_name(1.0, 0.0)}
    others = max(row["size"] for row in result["null"] if row["law"] not in worst)
    assert f"at most {others:g} for the other laws" in docs
    power = {row["alternative"]: row["power"] for row in result["power"]}
    assert f"{power['gap']:g} against a gap" in docs and f"{power['t3']:g} against a t(3)" in docs
    assert power["top atom"] == 1.0 and "1.0 against a top atom" in docs

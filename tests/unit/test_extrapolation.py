"""Extrapolated tuning curves (showwork.statistics.extrapolation): the fit, the consonance bands, the guard."""

from __future__ import annotations

import csv
import os

import numpy as np
import pytest

from showwork.statistics import NoisyQuadratic, extrapolate, tuning_curve
from showwork.statistics.extrapolation import Extrapolation, ExtrapolationRefused

DATA = os.path.join(os.environ.get("SHOWWORK_DATA_DIR", "/work/shared/data"), "search-results", "deberta-v3-base_mnli_tuning.csv")


def _deberta_v3() -> np.ndarray:
    if not os.path.exists(DATA):
        pytest.skip(f"no {DATA}")
    with open(DATA, newline="") as handle:
        return np.array([float(row["matched_acc_best"]) for row in csv.DictReader(handle)])


def test_deberta_subsample_curve_rises_and_holds_its_band():
    scores = np.random.default_rng(3).choice(_deberta_v3(), 48, replace=False)
    result = extrapolate(tuning_curve(scores, a=0.0, b=1.0), 480)
    assert isinstance(result, Extrapolation)
    assert np.all(np.diff(result.point) >= 0)
    assert np.all(result.lower <= result.point + 1e-12) and np.all(result.point <= result.upper + 1e-12)
    assert result.asymptote.lower <= result.asymptote.estimate <= result.asymptote.upper
    assert list(result.source[:8]) == ["nonparametric"] * 8 and result.source[-1] == "model-based"


def test_noisy_quadratic_minimize_mirrors_maximize():
    rng = np.random.default_rng(0)
    scores = NoisyQuadratic(0.0, 1.0, 3.0, 0.02).sample(60, rng)
    up = extrapolate(tuning_curve(scores), 100)
    down = extrapolate(tuning_curve(-scores, minimize=True), 100)
    assert isinstance(up, Extrapolation) and isinstance(down, Extrapolation)
    np.testing.assert_allclose(down.lower, -up.upper, atol=1e-9)
    np.testing.assert_allclose(down.upper, -up.lower, atol=1e-9)
    assert down.asymptote.estimate == pytest.approx(-up.asymptote.estimate, abs=1e-6)


def test_too_few_tail_trials_is_refused():
    result = extrapolate(tuning_curve(np.linspace(0.0, 1.0, 12)), 50)
    assert isinstance(result, ExtrapolationRefused)
    assert "at least" in result.reason

"""`showwork curve` and the LD bands at large n (issue 14, item 11: 10^6 rows took 13.5 min and 1.4 GB).

What changed at large n, and what is checked here:

- the LD critical level above ``EXACT_MAX_N`` is extrapolated in log log n from two exact levels:
  conservative, with simultaneous coverage in ``[confidence, confidence + EXTRAPOLATION_COVERAGE_EXCESS]``
  — checked *exactly* (the Poisson recursion run at the extrapolated level) at an n where both run;
- the Beta intervals above ``INTERPOLATED_ABOVE_N`` come from interpolated starting points polished
  by Newton on ``betainc``: same tail masses (pointwise coverage) as the direct path;
- the mean of the best of k sums only the points that carry mass: checked against the full sum;
- the command line: a budget grid above 10,000 trials, progress on stderr, the approximation named
  in the output and the JSON; and (slow) 10^6 rows end to end.
"""

from __future__ import annotations

import importlib
import json
import math

import numpy as np
import pytest
from scipy import special

from showwork.statistics import cdf_band, critical_levels, order_statistics_coverage
from showwork.statistics.beta_intervals import INTERPOLATED_ABOVE_N, beta_intervals
from showwork.statistics.cdf_bands import band_ends
from showwork.statistics.critical_levels import (
    EXACT_MAX_N,
    EXTRAPOLATION_COVERAGE_EXCESS,
    ld_critical_coverage,
    ld_critical_coverage_is_exact,
)
from showwork.statistics.tuning_curve_bands import mean_tuning_curve

from helpers import run_cli

beta_intervals_module = importlib.import_module("showwork.statistics.beta_intervals")  # the package re-exports the function under the module's name

KINDS = ("highest_density", "equal_tailed")


@pytest.fixture
def fresh_levels(tmp_path, monkeypatch):
    """An empty on-disk and in-memory cache of critical levels, restored afterwards."""
    monkeypatch.setenv("SHOWWORK_CACHE_DIR", str(tmp_path / "cache"))
    critical_levels._critical_coverage_cached.cache_clear()
    yield
    critical_levels._critical_coverage_cached.cache_clear()


def _exact_coverage(n: int, critical: float, kind: str) -> float:
    lower, upper, _ = beta_intervals(n, 1.0 - critical, kind)
    return order_statistics_coverage(lower, upper)


# --- the extrapolated critical level ------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("confidence", [0.01, 0.05, 0.2, 0.5, 0.8, 0.95, 0.999])
def test_extrapolated_level_is_conservative_within_the_stated_bound(fresh_levels, monkeypatch, kind, confidence):
    # The same construction one scale down, where the exact answer is cheap: anchors 256 and 1,024,
    # extrapolated 2 and 4 times beyond. (At the real scale: anchors 2,048 and 8,192; measured
    # exactly at n = 65,536, 262,144 and 10^6, see docs.)
    monkeypatch.setattr(critical_levels, "EXACT_MAX_N", 1024)
    for n in (2048, 4096):
        assert not ld_critical_coverage_is_exact(n)
        extrapolated = ld_critical_coverage(n, confidence, kind)
        coverage = _exact_coverage(n, extrapolated, kind)
        assert confidence <= coverage <= confidence + EXTRAPOLATION_COVERAGE_EXCESS, (n, coverage)
        # and it is the conservative side of the exact level
        critical_levels._critical_coverage_cached.cache_clear()
        monkeypatch.setattr(critical_levels, "EXACT_MAX_N", n)
        exact = ld_critical_coverage(n, confidence, kind)
        assert exact < extrapolated < 1.0
        monkeypatch.setattr(critical_levels, "EXACT_MAX_N", 1024)
        critical_levels._critical_coverage_cached.cache_clear()


def test_levels_up_to_the_limit_are_exact_and_unchanged(fresh_levels):
    # The exact path is the one audited to 1e-13; these values are from before the large-n path.
    assert ld_critical_coverage_is_exact(EXACT_MAX_N) and not ld_critical_coverage_is_exact(EXACT_MAX_N + 1)
    assert math.log1p(-ld_critical_coverage(1024, 0.8)) == pytest.approx(-5.065225676935, abs=1e-11)
    band = cdf_band(np.arange(300.0), 0.8, "ld-hd")
    assert band.critical_exact and band.critical_coverage == ld_critical_coverage(300, 0.8)


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
def test_extrapolated_level_at_the_real_scale(fresh_levels, kind):
    # n = 2 EXACT_MAX_N: both paths run (the exact one in ~10-30 s on a loaded 2-core machine).
    n = 2 * EXACT_MAX_N
    extrapolated = ld_critical_coverage(n, 0.8, kind)
    coverage = _exact_coverage(n, extrapolated, kind)
    assert 0.8 <= coverage <= 0.8 + EXTRAPOLATION_COVERAGE_EXCESS
    band = cdf_band(np.arange(float(n)), 0.8, "ld-hd" if kind == "highest_density" else "ld-et")
    assert not band.critical_exact


# --- Beta intervals at large n --------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_large_n_intervals_match_the_direct_path(monkeypatch, kind):
    n, excluded = INTERPOLATED_ABOVE_N + 1001, 2e-3  # odd n: the middle interval too
    lower, upper, share = beta_intervals(n, excluded, kind)
    i = np.arange(1, n + 1, dtype=float)
    # Each interval holds exactly 1 - excluded: the tail masses are the requested ones.
    below, above = special.betainc(i, n + 1 - i, lower), special.betaincc(i, n + 1 - i, upper)
    half = (n + 1) // 2  # the mirrored half's ends are 1 - x, rounded near 1 like the direct path's
    has_lower = share[:half] > 0
    np.testing.assert_allclose(below[:half][has_lower], (share * excluded)[:half][has_lower], rtol=1e-9)
    np.testing.assert_allclose(above[:half], ((1 - share) * excluded)[:half], rtol=1e-9)
    np.testing.assert_array_equal(lower[half:], 1.0 - upper[: n - half][::-1])  # mirror symmetry
    # Against the direct (betaincinv) path.
    monkeypatch.setattr(beta_intervals_module, "INTERPOLATED_ABOVE_N", 10**9)
    direct_lower, direct_upper, direct_share = beta_intervals(n, excluded, kind)
    np.testing.assert_allclose(share, direct_share, rtol=0, atol=1e-9)
    np.testing.assert_allclose(lower, direct_lower, rtol=1e-8, atol=0)
    np.testing.assert_allclose(upper, direct_upper, rtol=1e-8, atol=0)
    assert lower[0] == 0.0 if kind == "highest_density" else lower[0] > 0.0


@pytest.mark.parametrize("method", ["ld-hd", "ld-et", "ks", "dkw"])
@pytest.mark.parametrize("n", [1, 2, 7, 145, 20_000])
def test_band_ends_are_the_ends_of_the_band(method, n):
    band = cdf_band(np.arange(float(n)), 0.8, method)
    first_upper, last_lower = band_ends(n, 0.8, method)
    assert last_lower == pytest.approx(band.lower[-1], rel=1e-12, abs=0)
    assert first_upper == pytest.approx(band.upper[0], rel=1e-9, abs=1e-15)


# --- the mean of the best of k -----------------------------------------------------------------------


def _full_sum_means(band, g, ks, minimize):
    points = np.concatenate([[band.a], band.values, [band.b]])
    cdf = np.concatenate([g, [1.0]])
    prev = np.concatenate([[0.0], cdf[:-1]])
    out = []
    for k in ks:
        w = (1 - prev) ** k - (1 - cdf) ** k if minimize else cdf**k - prev**k
        out.append(np.sum(w * np.where(w != 0, points, 0.0)))
    return np.array(out)


@pytest.mark.parametrize("support", [(0.0, 1.0), (-math.inf, 1.0), (0.0, math.inf), (-math.inf, math.inf)])
@pytest.mark.parametrize("minimize", [False, True])
@pytest.mark.parametrize("method", ["ld-hd", "ks"])
def test_mean_curve_keeps_only_negligible_mass_out(support, minimize, method):
    rng = np.random.default_rng(7)
    ks = np.array([1, 2, 3.5, 10, 100, 1000, 10**6])
    for n in (1, 3, 40, 3000):
        ys = np.round(rng.random(n), 3)  # ties too
        band = cdf_band(ys, 0.8, method, a=support[0], b=support[1])
        got = mean_tuning_curve(band, ks, minimize)
        ecdf = np.arange(n + 1) / n
        for g_got, g in zip(got, (band.upper, ecdf, band.lower)):
            expected = _full_sum_means(band, g, ks, minimize)
            finite = np.isfinite(expected)
            np.testing.assert_array_equal(np.isfinite(g_got), finite)
            np.testing.assert_array_equal(g_got[~finite], expected[~finite])
            np.testing.assert_allclose(g_got[finite], expected[finite], rtol=0, atol=1e-13)


# --- the command line ------------------------------------------------------------------------------


def _results_file(path, n, seed=11):
    rng = np.random.default_rng(seed)
    scores = rng.beta(8, 3, size=n)
    path.write_text("score,runtime\n" + "".join(f"{s!r},{60 + i % 7}\n" for i, s in enumerate(scores.tolist())))
    return path


@pytest.mark.integration
def test_curve_above_the_exact_limit_says_what_it_did(capsys, tmp_path, fresh_levels):
    path = _results_file(tmp_path / "results.csv", 60_000)
    code, out, err = run_cli(capsys, "curve", path, "--score", "score", "--a", "0", "--b", "1", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["n"] == 60_000 and data["critical_coverage_exact"] is False
    assert "extrapolated" in data["critical_coverage_note"] and "conservative" in data["critical_coverage_note"]
    assert "grid" not in out and "every k up to 200" in data["budgets_note"]
    ks = data["k"]
    assert ks[:200] == [float(k) for k in range(1, 201)] and ks[-1] == 60_000.0 and len(ks) < 400
    assert "showwork: computing the ld-hd band" in err and "60,000" in err  # progress on stderr only
    lower, upper = np.array(data["median_lower"], dtype=float), np.array(data["median_upper"], dtype=float)
    assert np.all(lower <= np.array(data["median"])) and np.all(np.array(data["median"]) <= upper)
    assert all(0.0 <= m <= 1.0 for m in data["mean_lower"] + data["mean_upper"])
    # The table names the approximation too.
    code, out, _ = run_cli(capsys, "curve", path, "--score", "score")
    assert code == 0 and "critical coverage extrapolated" in out and "every k up to 200" in out


@pytest.mark.integration
def test_curve_up_to_ten_thousand_rows_keeps_every_budget_and_exact_level(capsys, tmp_path):
    path = _results_file(tmp_path / "results.csv", 500)
    code, out, err = run_cli(capsys, "curve", path, "--score", "score", "--json")
    data = json.loads(out)
    assert code == 0 and data["k"] == [float(k) for k in range(1, 501)]
    assert data["critical_coverage_exact"] is True and data["critical_coverage_note"] is None
    assert data["budgets_note"] is None and err == ""


@pytest.mark.slow
@pytest.mark.integration
def test_curve_on_a_million_rows_end_to_end(capsys, tmp_path, fresh_levels):
    path = _results_file(tmp_path / "million.csv", 1_000_000)
    code, out, err = run_cli(capsys, "curve", path, "--score", "score", "--a", "0", "--b", "1", "--runtime", "runtime", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["n"] == 1_000_000 and data["critical_coverage_exact"] is False
    assert 0.99 < data["critical_coverage"] < 1.0
    assert "reading" in err and "n = 1,000,000" in err
    median, lower, upper = (np.array(data[key], dtype=float) for key in ("median", "median_lower", "median_upper"))
    assert np.all(lower <= median) and np.all(median <= upper) and np.all(np.diff(median) >= 0)
    # Beta(8, 3): the median of one score is about 0.74; with 10^6 scores the band is tight at k = 1.
    assert 0.73 < lower[0] <= median[0] <= upper[0] < 0.75
    v = np.array(data["v"])
    assert np.all(np.array(data["mean_lower"]) <= v + 1e-12) and np.all(v <= np.array(data["mean_upper"]) + 1e-12)
    assert data["cost"][0] == pytest.approx(data["mean_runtime_s"] / 3600.0)


def test_reader_fast_path_reads_plain_decimals_like_the_checked_path(tmp_path):
    # numeric_column converts plain decimals directly (3 s -> 0.4 s at 10^6 rows); every other cell
    # keeps the checked path. Both must give the same numbers, and bad cells still fail.
    from showwork.errors import InputError
    from showwork.results_table import read_results_table

    cells = ["0.5", "-12", ".5", "+3.", "123456789012345.678", "1e-3", " 0.25 ", "nan", "-0", "7.000"]
    path = tmp_path / "cells.csv"
    path.write_text("score\n" + "".join(f'"{c}"\n' for c in cells))
    got = read_results_table(path).numeric_column("score")
    expected = [float(c) if c.strip() not in ("", "nan") else math.nan for c in cells]
    np.testing.assert_array_equal(np.array(got), np.array(expected))
    assert math.copysign(1.0, got[cells.index("-0")]) == -1.0
    for bad in ("0.5x", "1e400", "1.2.3", "--1"):  # (underscores: refused by _to_float once item 13 lands)
        (tmp_path / "bad.csv").write_text(f"score\n0.5\n{bad}\n")
        with pytest.raises(InputError):
            read_results_table(tmp_path / "bad.csv").numeric_column("score")

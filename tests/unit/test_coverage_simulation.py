"""Coverage of the bands by simulation: samples of n = 30 scores from Beta(2, 5), whose CDF is known.

Two events per sample:

- the CDF band contains the whole true CDF F. For continuous F this holds iff
  ``lower[i] <= F(y_(i)) <= upper[i - 1]`` for every order statistic; its probability is the
  nominal confidence *exactly* for the LD and KS bands (at least nominal for DKW);
- the median tuning curve ``F^{-1}(0.5^(1/k))`` lies between the bands at every budget (integer
  k = 1..30 and a grid of real k up to 10^4). The CDF event implies it, but it only involves the
  levels ``p = 0.5^(1/k) >= 1/2`` of F, so its probability is at least nominal, not equal to it.

For LD and KS bands the end points depend only on n, so the band is built once, on the ranks
1..n, and applied to every sample's order statistics; one check goes through :func:`tuning_curve`
sample by sample (k = 1..30) and must give the same bands and the same events.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from experiments.common import rank_band, rank_band_indices
from experiments.exact_coverage import cdf_band_holds
from showwork.statistics import tuning_curve

pytestmark = pytest.mark.slow

N = 30
SAMPLES = 20_000
PUBLIC_SAMPLES = 2_000
TRUTH = stats.beta(2.0, 5.0)
KS = np.unique(np.concatenate([np.arange(1, N + 1), np.geomspace(1.0, 1e4, 300)]))


@pytest.fixture(scope="module")
def raw_samples() -> np.ndarray:
    rng = np.random.default_rng(20240527)
    return rng.beta(2.0, 5.0, size=(SAMPLES, N))


@pytest.fixture(scope="module")
def sorted_samples(raw_samples) -> np.ndarray:
    return np.sort(raw_samples, axis=1)


def _rank_band(method: str, confidence: float, ks: np.ndarray):
    """The band and the median-curve bands built on the ranks 1..n, with a = 0 and b = n + 1.

    Quantiles of a band are order statistics, a or b, so on the ranks they come out as the index
    into ``[a, y_(1), ..., y_(n), b]`` of each band value, for any sample.
    """
    band = rank_band(N, confidence, method)
    lower, _, upper = rank_band_indices(band, ks)
    return band, lower, upper


def _events(sorted_samples: np.ndarray, method: str, confidence: float, ks: np.ndarray = KS):
    band, lower_index, upper_index = _rank_band(method, confidence, ks)
    u = TRUTH.cdf(sorted_samples)
    cdf_inside = cdf_band_holds(band, u)
    extended = np.concatenate(
        [np.zeros((sorted_samples.shape[0], 1)), sorted_samples, np.ones((sorted_samples.shape[0], 1))], axis=1
    )  # [a, y_(1..n), b] with the support [0, 1] of Beta(2, 5)
    truth = TRUTH.ppf(0.5 ** (1.0 / ks))
    median_lower, median_upper = extended[:, lower_index], extended[:, upper_index]
    curve_inside = np.all((median_lower <= truth) & (truth <= median_upper), axis=1)
    return cdf_inside, curve_inside, median_lower, median_upper


def _interval(successes: np.ndarray) -> tuple[float, float]:
    ci = stats.binomtest(int(np.count_nonzero(successes)), successes.size).proportion_ci(0.99, method="exact")
    return ci.low, ci.high


@pytest.mark.parametrize("method, confidence", [("ld-hd", 0.8), ("ks", 0.8), ("ld-et", 0.5)])
def test_exact_bands_have_nominal_coverage(sorted_samples, method, confidence):
    cdf_inside, curve_inside, _, _ = _events(sorted_samples, method, confidence)
    low, high = _interval(cdf_inside)
    assert low <= confidence <= high, (method, cdf_inside.mean())
    # Whenever the CDF band holds, so do the median-curve bands at every budget.
    assert np.all(curve_inside[cdf_inside])
    assert _interval(curve_inside)[1] >= confidence


def test_dkw_band_is_conservative(sorted_samples):
    cdf_inside, curve_inside, _, _ = _events(sorted_samples, "dkw", 0.8)
    assert cdf_inside.mean() >= 0.8
    assert np.all(curve_inside[cdf_inside])


def test_public_tuning_curve_gives_the_same_bands_and_coverage(raw_samples, sorted_samples):
    confidence, ks = 0.8, np.arange(1, N + 1)
    cdf_inside, curve_inside, median_lower, median_upper = _events(
        sorted_samples[:PUBLIC_SAMPLES], "ld-hd", confidence, ks
    )
    public_cdf, public_curve = [], []
    for s in range(PUBLIC_SAMPLES):
        curve = tuning_curve(raw_samples[s], confidence=confidence, method="ld-hd", a=0.0, b=1.0)  # k = 1..30
        np.testing.assert_array_equal(curve.median_lower, median_lower[s])
        np.testing.assert_array_equal(curve.median_upper, median_upper[s])
        truth = TRUTH.ppf(0.5 ** (1.0 / curve.k))
        public_curve.append(bool(np.all((curve.median_lower <= truth) & (truth <= curve.median_upper))))
        # The whole CDF, through the band's step function: at each score, and just below it.
        y = curve.band.values
        at_lower, _, _ = curve.band.cdf(y)
        _, _, below_upper = curve.band.cdf(np.nextafter(y, -np.inf))
        f = TRUTH.cdf(y)
        public_cdf.append(bool(np.all((at_lower <= f) & (f <= below_upper))))
    public_cdf, public_curve = np.array(public_cdf), np.array(public_curve)
    np.testing.assert_array_equal(public_cdf, cdf_inside)
    np.testing.assert_array_equal(public_curve, curve_inside)
    low, high = _interval(public_cdf)
    assert low <= confidence <= high

"""Estimators disagree on small samples: V, U and the median bands on subsamples of 25 real trials.

Reproduces Tang et al. (2020), Fig. 2 (the V- and U-statistics rank MLP and LSTM on Reuters
differently from one subsample of the search to the next) and Lourie, Cho & He (2024), Fig. 1
(with 25 trials the confidence bands of the two median tuning curves overlap beyond small budgets).

What is simulated. No model of the scores: the real Reuters results, ``family_scores("mlp")``
(B = 145 trials) and ``family_scores("lstm")`` (B = 152). Each replicate draws, without
replacement, n = 25 of the MLP trials and, independently, 25 of the LSTM trials, as if each search
had stopped after 25 trials. Replicates: 500 with ``--quick``, 10,000 in full mode; seed 0 unless
``--seed`` (numpy ``default_rng``; the MLP subsamples are drawn first).

Events measured, at budgets k = 1..25, for every replicate:

- the V-statistic (Dodge et al. 2019) ``V_k = sum_j ((j/n)^k - ((j-1)/n)^k) y_(j)`` and the
  U-statistic (Tang et al. 2020) ``U_k = sum_j C(j-1, k-1)/C(n, k) y_(j)`` of each family, and
  which family each calls better: ``sign(V_k^MLP - V_k^LSTM)`` and ``sign(U_k^MLP - U_k^LSTM)``.
  V and U *disagree* at k when the signs differ; a replicate "disagrees at some k" when this
  happens for at least one k in 1..25 (at k = 1 the two statistics are both the mean, so never);
- the median tuning curves with their simultaneous 80 % LD-HD bands, and the evidence level of
  :func:`showwork.statistics.evidence` (none / weak / fair / strong, and the favoured family).

The statistics are linear in the order statistics with weights that depend only on (n, k), and
the LD-HD band ends are order statistics whose ranks depend only on (n, k), so both are computed
once (``v_weights``/``u_weights``; ``cdf_band`` + ``quantile_tuning_curve`` on the ranks 1..n)
and applied to all replicates at once; the test suite checks that this gives exactly what
:func:`showwork.statistics.tuning_curve` gives subsample by subsample.

The fractions are over replicates; their Monte Carlo error is binomial (Clopper–Pearson 95 %
intervals in the Markdown). For comparison, the full data (all trials, k = 1..145) give the budgets
at which the V curves and the median curves cross (``compare_curves``' crossovers).

References
----------
Dodge et al. 2019, "Show Your Work: Improved Reporting of Experimental Results".
Tang et al. 2020, "Showing Your Work Doesn't Always Work".
Lourie, Cho & He 2024, "Show Your Work with Confidence: Confidence Bands for Tuning Curves".
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from experiments.common import (
    FAMILIES,
    PaperComparison,
    clopper_pearson,
    family_scores,
    rank_band,
    rank_band_indices,
    study_main,
    with_support,
)
from showwork.statistics import (
    EVIDENCE_LEVELS,
    TuningCurve,
    compare_curves,
    evidence,
    informative_budget,
    tuning_curve,
)
from showwork.statistics.point_estimates import u_weights, v_weights

STUDY = "small_samples"
SUBSAMPLE_SIZE = 25
CONFIDENCE = 0.8
METHOD = "ld-hd"
SUPPORT = (0.0, 1.0)  # F1 scores
REPLICATES = {True: 500, False: 10_000}
FAMILY_A, FAMILY_B = "mlp", "lstm"
NAMES = {FAMILY_A: "MLP", FAMILY_B: "LSTM"}


def statistic_weights(n: int, k: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The V and U weight matrices, ``(len(k), n)``: ``V = sorted_scores @ W_v.T`` (same for U).

    Row i holds the weight of each order statistic ``y_(1) <= ... <= y_(n)`` in the statistic at
    budget ``k[i]``, from :func:`~showwork.statistics.point_estimates.v_weights` and
    :func:`~showwork.statistics.point_estimates.u_weights` (integer k from 1 to n).
    """
    wv = np.zeros((k.size, n))
    wu = np.zeros((k.size, n))
    for i, kk in enumerate(k.tolist()):
        start, w = v_weights(n, float(kk))
        wv[i, start:] = w
        start, w = u_weights(n, int(kk))
        wu[i, start:] = w
    return wv, wu


def subsample_sorted(scores: NDArray[np.float64], n: int, replicates: int, rng: np.random.Generator) -> NDArray[np.float64]:
    """``replicates`` subsamples of n scores drawn without replacement, each sorted ascending."""
    keys = rng.random((replicates, scores.size))
    picks = np.argpartition(keys, n - 1, axis=1)[:, :n]
    return np.sort(scores[picks], axis=1)


@dataclass(frozen=True)
class SmallSampleResult:
    """Everything the study measured.

    Fractions ``*_by_k`` have one entry per budget in ``k``; "MLP wins" means MLP's estimate is
    strictly higher. ``evidence_by_k[level]`` is the fraction of replicates at that evidence level
    (either direction); ``evidence_for[family][level]`` only those favouring ``family``.
    """

    k: NDArray[np.float64]
    n: int
    replicates: int
    seed: int
    v_mlp_wins: NDArray[np.float64]
    u_mlp_wins: NDArray[np.float64]
    median_mlp_wins: NDArray[np.float64]
    vu_disagree_by_k: NDArray[np.float64]
    vu_disagree_any: float
    evidence_by_k: dict[str, NDArray[np.float64]]
    evidence_for: dict[str, dict[str, NDArray[np.float64]]]
    representative: int
    representative_curves: dict[str, TuningCurve]
    full_curves: dict[str, TuningCurve]
    full_v_crossovers: tuple[float, ...]
    full_median_crossovers: tuple[float, ...]
    full_median_ranges: tuple

    def fair_or_strong(self) -> NDArray[np.float64]:
        """Fraction of replicates whose bands give fair or strong evidence either way, per budget."""
        return self.evidence_by_k["fair"] + self.evidence_by_k["strong"]


def run(quick: bool, seed: int = 0) -> SmallSampleResult:
    """Compute the study (500 replicates if ``quick``, else 10,000)."""
    n, replicates = SUBSAMPLE_SIZE, REPLICATES[quick]
    k = np.arange(1.0, n + 1.0)
    rng = np.random.default_rng(seed)
    scores = {f: family_scores(f) for f in (FAMILY_A, FAMILY_B)}
    samples = {f: subsample_sorted(scores[f], n, replicates, rng) for f in (FAMILY_A, FAMILY_B)}

    wv, wu = statistic_weights(n, k)
    v = {f: samples[f] @ wv.T for f in samples}
    u = {f: samples[f] @ wu.T for f in samples}
    v_sign = np.sign(v[FAMILY_A] - v[FAMILY_B])
    u_sign = np.sign(u[FAMILY_A] - u[FAMILY_B])
    disagree = v_sign != u_sign

    lower_i, point_i, upper_i = rank_band_indices(rank_band(n, CONFIDENCE, METHOD), k)
    curves = {}
    for f, ys in samples.items():
        extended = with_support(ys, *SUPPORT)
        curves[f] = (extended[:, point_i], extended[:, lower_i], extended[:, upper_i])
    levels, favoured = evidence(*curves[FAMILY_A], *curves[FAMILY_B])
    evidence_by_k = {level: np.mean(levels == level, axis=0) for level in EVIDENCE_LEVELS}
    evidence_for = {
        f: {level: np.mean((levels == level) & (favoured == sign), axis=0) for level in EVIDENCE_LEVELS[1:]}
        for f, sign in ((FAMILY_A, 1), (FAMILY_B, -1))
    }

    # The replicate whose V difference at k = n is the median one: neither a lucky nor an unlucky draw.
    difference = v[FAMILY_A][:, -1] - v[FAMILY_B][:, -1]
    representative = int(np.argsort(difference, kind="stable")[replicates // 2])
    representative_curves = {
        NAMES[f]: tuning_curve(samples[f][representative], k, confidence=CONFIDENCE, method=METHOD,
                               a=SUPPORT[0], b=SUPPORT[1], name=NAMES[f])
        for f in samples
    }

    full_k = np.arange(1.0, min(s.size for s in scores.values()) + 1.0)
    full_curves = {
        NAMES[f]: tuning_curve(scores[f], full_k, confidence=CONFIDENCE, method=METHOD, a=SUPPORT[0], b=SUPPORT[1],
                               name=NAMES[f])
        for f in scores
    }
    (full_mean,) = compare_curves(full_curves, "mean")
    (full_median,) = compare_curves(full_curves, "median")

    return SmallSampleResult(
        k=k,
        n=n,
        replicates=replicates,
        seed=seed,
        v_mlp_wins=np.mean(v_sign > 0, axis=0),
        u_mlp_wins=np.mean(u_sign > 0, axis=0),
        median_mlp_wins=np.mean(curves[FAMILY_A][0] > curves[FAMILY_B][0], axis=0),
        vu_disagree_by_k=np.mean(disagree, axis=0),
        vu_disagree_any=float(np.mean(disagree.any(axis=1))),
        evidence_by_k=evidence_by_k,
        evidence_for=evidence_for,
        representative=representative,
        representative_curves=representative_curves,
        full_curves=full_curves,
        full_v_crossovers=full_mean.crossovers,
        full_median_crossovers=full_median.crossovers,
        full_median_ranges=full_median.ranges,
    )


# ------------------------------------------------------------------ outputs


def rows(result: SmallSampleResult) -> list[dict[str, object]]:
    """One row per budget over the replicates, then one per (family, budget) for the representative
    subsample and for the full data."""
    out: list[dict[str, object]] = []
    for i, kk in enumerate(result.k.tolist()):
        row: dict[str, object] = {
            "part": "subsamples",
            "k": int(kk),
            "n": result.n,
            "replicates": result.replicates,
            "v_mlp_better": float(result.v_mlp_wins[i]),
            "u_mlp_better": float(result.u_mlp_wins[i]),
            "median_mlp_better": float(result.median_mlp_wins[i]),
            "v_u_disagree": float(result.vu_disagree_by_k[i]),
        }
        for level in EVIDENCE_LEVELS:
            row[f"evidence_{level}"] = float(result.evidence_by_k[level][i])
        for f in (FAMILY_A, FAMILY_B):
            for level in EVIDENCE_LEVELS[1:]:
                row[f"evidence_{level}_for_{f}"] = float(result.evidence_for[f][level][i])
        out.append(row)
    for part, curves in (("representative", result.representative_curves), ("full", result.full_curves)):
        for name, c in curves.items():
            for i, kk in enumerate(c.k.tolist()):
                out.append({
                    "part": part,
                    "family": name,
                    "k": int(kk),
                    "n": c.n,
                    "v": float(c.v[i]),
                    "u": float(c.u[i]),
                    "median": float(c.median[i]),
                    "median_lower": float(c.median_lower[i]),
                    "median_upper": float(c.median_upper[i]),
                })
    return out


def figure(result: SmallSampleResult):
    """(a) V and U, (b) median and bands of one representative subsample; (c) fractions over
    subsamples vs k; (d) the full data."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from showwork.report.figures import PALETTE

    fig = Figure(figsize=(11, 8), layout="constrained")
    FigureCanvasAgg(fig)
    (ax_a, ax_b), (ax_c, ax_d) = fig.subplots(2, 2)
    colours = {"MLP": PALETTE[0], "LSTM": PALETTE[1]}
    for name, c in result.representative_curves.items():
        ax_a.plot(c.k, c.v, color=colours[name], linestyle="--", label=f"{name} V")
        ax_a.plot(c.k, c.u, color=colours[name], linestyle=":", label=f"{name} U")
        ax_b.fill_between(c.k, c.median_lower, c.median_upper, color=colours[name], alpha=0.2, linewidth=0,
                          label=f"{name} 80% LD-HD band")
        ax_b.plot(c.k, c.median, color=colours[name], label=f"{name} median")
    lows = [min(c.v.min(), c.median_lower.min()) for c in result.representative_curves.values()]
    for ax in (ax_a, ax_b):
        ax.set_ylim(max(0.0, min(lows) - 0.02), 1.0)
        ax.set_xlabel("budget k (trials)")
        ax.set_ylabel("dev F1")
        ax.legend(fontsize=8, loc="lower right")
    ax_a.set_title(f"(a) one subsample of {result.n} (replicate {result.representative}): V and U")
    ax_b.set_title("(b) same subsample: medians, 80% LD-HD bands")

    k = result.k
    ax_c.plot(k, result.v_mlp_wins, color=PALETTE[2], label="V says MLP better")
    ax_c.plot(k, result.u_mlp_wins, color=PALETTE[4], linestyle="--", label="U says MLP better")
    ax_c.plot(k, result.median_mlp_wins, color=PALETTE[3], linestyle="-.", label="median estimate says MLP better")
    ax_c.plot(k, result.vu_disagree_by_k, color="0.4", linestyle=":", label="V and U disagree")
    ax_c.plot(k, result.fair_or_strong(), color="black", label="bands: fair/strong evidence (either way)")
    ax_c.set_ylim(-0.02, 1.02)
    ax_c.set_xlabel("budget k (trials)")
    ax_c.set_ylabel(f"fraction of {result.replicates:,} subsamples")
    ax_c.set_title(f"(c) across subsamples of {result.n} trials")
    ax_c.legend(fontsize=8, loc="center right")

    for name, c in result.full_curves.items():
        ax_d.fill_between(c.k, c.median_lower, c.median_upper, color=colours[name], alpha=0.2, linewidth=0)
        ax_d.plot(c.k, c.median, color=colours[name], label=f"{name} median (n = {c.n}) and band")
        ax_d.plot(c.k, c.v, color=colours[name], linestyle="--", label=f"{name} V")
    ax_d.set_xscale("log")
    ax_d.set_ylim(0.6, 1.0)
    ax_d.set_xlabel("budget k (trials)")
    ax_d.set_ylabel("dev F1")
    ax_d.set_title("(d) all trials")
    ax_d.legend(fontsize=8, loc="lower right")
    return fig


def _interval(fraction: float, replicates: int) -> str:
    lo, hi = clopper_pearson(round(fraction * replicates), replicates)
    return f"[{float(lo):.4f}, {float(hi):.4f}]"


def comparisons(result: SmallSampleResult) -> list[PaperComparison]:
    last = -1
    return [
        PaperComparison(
            "fraction of subsamples where V says MLP > LSTM at k = 25", float(result.v_mlp_wins[last]),
            "ranking flips between subsamples: substantial fractions either way", 0.1, 0.9, "Tang et al. 2020, Fig. 2",
        ),
        PaperComparison(
            "fraction of subsamples where U says MLP > LSTM at k = 25", float(result.u_mlp_wins[last]),
            "ranking flips between subsamples: substantial fractions either way", 0.1, 0.9, "Tang et al. 2020, Fig. 2",
        ),
        PaperComparison(
            "fraction of subsamples where V and U disagree at some k <= 25", result.vu_disagree_any,
            "V (biased low) and U can rank differently", 0.05, 1.0, "Tang et al. 2020, §3–4",
        ),
        PaperComparison(
            "fraction of subsamples with fair/strong band evidence at k = 25", float(result.fair_or_strong()[last]),
            "with 25 trials the bands overlap beyond small k", 0.0, 0.2, "Lourie et al. 2024, Fig. 1",
        ),
    ]


def notes(result: SmallSampleResult) -> list[str]:
    r = result.replicates
    last = -1
    fs = result.fair_or_strong()
    informative = np.flatnonzero(fs >= 0.5)
    ranges = "; ".join(
        f"k {r_.k_start:g}–{r_.k_end:g}: {r_.level}{'' if r_.favoured is None else ' for ' + r_.favoured}"
        for r_ in result.full_median_ranges
    )
    return [
        f"Real Reuters results ({FAMILIES[FAMILY_A][0]}: {result.full_curves['MLP'].n} trials, "
        f"{FAMILIES[FAMILY_B][0]}: {result.full_curves['LSTM'].n} trials); {r:,} subsamples of {result.n} per family, "
        f"drawn without replacement, seed {result.seed}; bands: {CONFIDENCE:.0%} LD-HD, support [0, 1].",
        "",
        f"- V says MLP better at k = 25 in {result.v_mlp_wins[last]:.3f} {_interval(result.v_mlp_wins[last], r)} of "
        f"subsamples, U in {result.u_mlp_wins[last]:.3f} {_interval(result.u_mlp_wins[last], r)}, the median point "
        f"estimate in {result.median_mlp_wins[last]:.3f} (95 % Clopper–Pearson intervals). At k = 1 all three say MLP in "
        f"{result.v_mlp_wins[0]:.3f}.",
        f"- V and U disagree about the winner at some k in {result.vu_disagree_any:.3f} "
        f"{_interval(result.vu_disagree_any, r)} of subsamples; at a single k at most "
        f"{result.vu_disagree_by_k.max():.3f} (k = {int(result.k[np.argmax(result.vu_disagree_by_k)])}). V is biased low "
        "and more so for the high-variance LSTM, so V crosses over later than U.",
        f"- The bands give fair or strong evidence at k = 25 in {fs[last]:.4f} {_interval(fs[last], r)} of subsamples "
        f"(for MLP {result.evidence_for[FAMILY_A]['fair'][last] + result.evidence_for[FAMILY_A]['strong'][last]:.4f}, "
        f"for LSTM {result.evidence_for[FAMILY_B]['fair'][last] + result.evidence_for[FAMILY_B]['strong'][last]:.4f}); "
        f"'none' in {result.evidence_by_k['none'][last]:.3f}, 'weak' (for MLP) in the rest. Fair/strong evidence holds "
        f"in at least half the subsamples only up to k = {int(result.k[informative[-1]]) if informative.size else 0} "
        f"and in none beyond k = {int(result.k[np.flatnonzero(fs > 0)[-1]]) if np.any(fs > 0) else 0}: with 25 trials "
        f"the upper LD-HD band is the support bound 1 for every k > {informative_budget(result.n, CONFIDENCE, METHOD):.2f} "
        "(`informative_budget(25)`), so neither point estimate can lie above the other's band — at most 'weak'. "
        "This is structural, not a Monte Carlo outcome: the bands say 'unresolved' exactly where V and U pick "
        "opposite winners from one subsample to the next.",
        f"- Full data: the V curves cross at k = {', '.join(f'{c:g}' for c in result.full_v_crossovers) or 'none'}, "
        f"the median curves at k = {', '.join(f'{c:g}' for c in result.full_median_crossovers) or 'none'}; "
        f"median-band evidence: {ranges}.",
        "- The paper figures show these effects qualitatively, so the ranges above are the weakest reading that "
        "matches them (ranking flips: 10–90 % either way; bands resolve at k = 25 in at most 20 %).",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    return study_main(STUDY, __doc__.splitlines()[0], "Estimators disagree on small samples (Reuters MLP vs LSTM, subsamples of 25)", run, rows, figure, comparisons, notes, argv)


if __name__ == "__main__":
    sys.exit(main())

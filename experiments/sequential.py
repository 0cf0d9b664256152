"""Issue 27: sequential races keep their error bound; looking at fixed-n bands after every look does not.

A race (``showwork race``; the rule is :func:`showwork.statistics.decide_at_look`) looks at the
first n_l trials of two models at every look of a schedule and stops when one model is resolved
at every budget. Its bands (``BandSpec(looks=...)``) use the pointwise level c* at which each
model's bands hold at every look at once with probability c; where both models' bands hold, no
false winner can be declared, so P(ever a false winner) <= 1 - c². The naive rule — the fixed-n
bands of each look's n, looked at after every look — has no such bound. Three parts:

(a) Null. Both models draw from ONE distribution (the reflected KDE of the DeBERTaV3 search,
    :func:`experiments.common.family_kde`), so every winner is false. Schedule {12, 24, 48},
    budget K = 2, confidence 0.8 and 0.95, 10,000 races (1,000 with ``--quick``), simulated with
    :func:`showwork.statistics.simulate_races` for each rule on the same draws. Measured: the rate
    of ever declaring a winner (claim: <= 1 - c²) and each model's joint coverage — the KDE's CDF
    inside the model's band at every look at once (claim: >= c; with the KDE's exact CDF F, the
    band holds exactly when every ``F(y_(i))`` lies in its order statistic's interval, which is
    checked) — and the same two numbers for the naive rule on the same draws.
(b) Alternative. DeBERTaV3 against DeBERTa (each its own KDE), same schedule, budget and
    replicates: P(stop at each look), the median and mean trials per model, the trials saved
    against n = 48, how often the better model (DeBERTaV3, whose median curve is higher at K = 2)
    wins; the naive rule beside it.
(c) The joint level. For several schedules, 100,000 simulated nested uniform samples (20,000
    with ``--quick``) count the replicates where every look's order statistics lie in the
    intervals of the level c* (:func:`showwork.statistics.beta_intervals`); an exact c* must give
    coverage c within 2 standard errors, a bounded one (Hunter–Worsley, ``exact`` False) at least
    c - 2 SE.

Budget. K = 2 (the median best of two trials) is informative with the joint bands at looks 24 and
48 (``informative_budget``: k* = 3.49 and 6.98 at c = 0.8; 2.59 and 5.18 at 0.95) but not at look
12 (1.75; 1.29), so a race can stop at 24 or 48; the fixed-n bands are informative at 12 too
at c = 0.8 (k* = 2.43): part of what the naive rule spends. Rates carry 99 % Clopper–Pearson
intervals.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from experiments.common import FAMILIES, PaperComparison, clopper_pearson, family_kde, study_main
from showwork.statistics import (
    BandSpec,
    RaceSimulation,
    beta_intervals,
    cdf_band,
    false_strong_bound,
    informative_budget,
    ld_joint_critical_coverage,
    simulate_races,
)

STUDY = "sequential"
LOOKS = (12, 24, 48)
BUDGET = 2.0
CONFIDENCES = (0.8, 0.95)
NULL_FAMILY = "debertav3"
ALTERNATIVE = ("debertav3", "deberta")
"""(better, worse): DeBERTaV3's median curve lies above DeBERTa's at K = 2."""
LEVEL_SCHEDULES = ((12, 24, 48), (8, 16, 24, 32, 40, 48), (10, 50), (25, 50, 100))
KIND = "highest_density"  # of the default ld-hd bands
QUICK_RACES, FULL_RACES = 1_000, 10_000
QUICK_UNIFORMS, FULL_UNIFORMS = 20_000, 100_000
CP = 0.99
RULES = ("sequential", "naive")


def rule_bands(rule: str, confidence: float) -> BandSpec:
    """The bands of a rule: the schedule's joint level (sequential) or each look's fixed-n level (naive)."""
    return BandSpec(confidence=confidence, a=0.0, b=1.0, looks=LOOKS if rule == "sequential" else ())


def every_look_covered(cdf_values: np.ndarray, bands: BandSpec) -> np.ndarray:
    """Per replicate: does the band hold the true CDF at every look? (replicates x n_L values ``F(y)``, trial order.)

    The band of n scores holds F exactly when ``l_i <= F(y_(i)) <= h_i`` for every order statistic
    (F continuous; :mod:`showwork.statistics.cdf_bands`). The intervals are read off the library's
    own band of n ranks: ``lower[1:]`` and ``upper[:-1]``.
    """
    held = np.ones(cdf_values.shape[0], dtype=bool)
    for n in LOOKS:
        band = cdf_band(np.arange(1.0, n + 1.0), bands=BandSpec(confidence=bands.confidence, method=bands.method, a=0.0, b=n + 1.0, looks=bands.looks))
        u = np.sort(cdf_values[:, :n], axis=1)
        held &= np.all((u >= band.lower[1:]) & (u <= band.upper[:-1]), axis=1)
    return held


@dataclass(frozen=True)
class RuleResult:
    """One rule's races at one confidence, and the coverage of each model's bands on their draws."""

    races: RaceSimulation
    covered: dict[str, int]
    """Replicates where the bands held at every look: per model ("A", "B") and for "both"."""


@dataclass(frozen=True)
class LevelCheck:
    looks: tuple[int, ...]
    confidence: float
    critical_coverage: float
    exact: bool
    held: int
    replicates: int

    @property
    def rate(self) -> float:
        return self.held / self.replicates

    @property
    def se(self) -> float:
        return math.sqrt(self.confidence * (1 - self.confidence) / self.replicates)

    @property
    def agrees(self) -> bool:
        return abs(self.rate - self.confidence) <= 2 * self.se if self.exact else self.rate >= self.confidence - 2 * self.se


@dataclass(frozen=True)
class Sequential:
    races: int
    seed: int
    null: dict[tuple[float, str], RuleResult]
    alternative: dict[tuple[float, str], RaceSimulation]
    levels: list[LevelCheck]


def _processes() -> int:
    return max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))


def run(quick: bool, seed: int = 0) -> Sequential:
    races = QUICK_RACES if quick else FULL_RACES
    null_seed, alternative_seed, level_seed = np.random.SeedSequence(seed).generate_state(3)
    null_kde = family_kde(NULL_FAMILY)

    def draw_null(rng):
        return null_kde.sample(rng, LOOKS[-1])

    null, cdf_values = {}, None
    for confidence in CONFIDENCES:
        for rule in RULES:  # the same seed: both rules and both confidences race on the same draws
            bands = rule_bands(rule, confidence)
            simulation = simulate_races(draw_null, draw_null, bands, BUDGET, races, int(null_seed), looks=LOOKS, processes=_processes())
            if cdf_values is None:
                cdf_values = {"A": null_kde.cdf(simulation.scores_a), "B": null_kde.cdf(simulation.scores_b)}
            held = {name: every_look_covered(values, bands) for name, values in cdf_values.items()}
            covered = {name: int(h.sum()) for name, h in held.items()} | {"both": int((held["A"] & held["B"]).sum())}
            null[(confidence, rule)] = RuleResult(simulation, covered)
    better, worse = (family_kde(f) for f in ALTERNATIVE)
    alternative = {}
    for confidence in CONFIDENCES:
        for rule in RULES:
            alternative[(confidence, rule)] = simulate_races(
                lambda rng: better.sample(rng, LOOKS[-1]), lambda rng: worse.sample(rng, LOOKS[-1]), rule_bands(rule, confidence),
                BUDGET, races, int(alternative_seed), looks=LOOKS, names=ALTERNATIVE, processes=_processes(),
            )
    uniforms = QUICK_UNIFORMS if quick else FULL_UNIFORMS
    levels = [check_level(looks, c, uniforms, np.random.default_rng(child))
              for (looks, c), child in zip(_level_settings(), np.random.SeedSequence(int(level_seed)).spawn(len(_level_settings())))]
    return Sequential(races, seed, null, alternative, levels)


def _level_settings() -> list[tuple[tuple[int, ...], float]]:
    return [(looks, c) for looks in LEVEL_SCHEDULES for c in CONFIDENCES]


def check_level(looks: tuple[int, ...], confidence: float, replicates: int, rng: np.random.Generator) -> LevelCheck:
    """Monte Carlo joint coverage of the intervals at the schedule's c*, on nested uniform samples."""
    level = ld_joint_critical_coverage(looks, confidence, KIND)
    held = np.zeros(replicates, dtype=bool)
    step = 10_000  # replicates per block: keeps the (block x n_L) matrix small
    intervals = {n: beta_intervals(n, 1.0 - level.critical_coverage, KIND)[:2] for n in looks}
    for start in range(0, replicates, step):
        u = rng.random((min(step, replicates - start), looks[-1]))
        ok = np.ones(u.shape[0], dtype=bool)
        for n in looks:
            lower, upper = intervals[n]
            ordered = np.sort(u[:, :n], axis=1)
            ok &= np.all((ordered >= lower) & (ordered <= upper), axis=1)
        held[start : start + u.shape[0]] = ok
    return LevelCheck(tuple(looks), confidence, level.critical_coverage, level.exact, int(held.sum()), replicates)


def _interval(successes: int, trials: int) -> tuple[float, float]:
    low, high = clopper_pearson(successes, trials, CP)
    return float(low), float(high)


def rows(result: Sequential) -> list[dict[str, object]]:
    out = []
    for (confidence, rule), r in result.null.items():
        stopped = int(np.count_nonzero(r.races.stop_index >= 0))
        for quantity, count, claim in (
            ("P(ever a winner)", stopped, f"<= {false_strong_bound(confidence):.4f}"),
            ("joint coverage A", r.covered["A"], f">= {confidence}"),
            ("joint coverage B", r.covered["B"], f">= {confidence}"),
            ("both models covered", r.covered["both"], f">= {confidence**2:.4f}"),
        ):
            low, high = _interval(count, result.races)
            out.append({"part": "null", "confidence": confidence, "rule": rule, "quantity": quantity, "value": count / result.races,
                        "count": count, "replicates": result.races, "ci99_low": low, "ci99_high": high, "claim": claim})
        for n, p in zip(LOOKS, r.races.stop_probability()):
            out.append({"part": "null", "confidence": confidence, "rule": rule, "quantity": f"P(stop at {n})", "value": float(p),
                        "replicates": result.races})
    for (confidence, rule), s in result.alternative.items():
        summary = s.summary()
        values = {f"P(stop at {n})": p for n, p in summary["stop_probability"].items()} | {
            "P(stop at any look)": summary["stop_probability_any"], "median trials": summary["median_trials"],
            "mean trials": summary["mean_trials"], "trials saved vs 48": summary["trials_saved"],
            f"P({ALTERNATIVE[0]} wins)": summary["wins"][ALTERNATIVE[0]], f"P({ALTERNATIVE[1]} wins)": summary["wins"][ALTERNATIVE[1]],
        }
        for quantity, value in values.items():
            out.append({"part": "alternative", "confidence": confidence, "rule": rule, "quantity": quantity, "value": float(value),
                        "replicates": result.races})
    for check in result.levels:
        out.append({"part": "level", "confidence": check.confidence, "rule": ",".join(map(str, check.looks)),
                    "quantity": "joint coverage at c*", "value": check.rate, "count": check.held, "replicates": check.replicates,
                    "se": check.se, "critical_coverage": check.critical_coverage, "exact": check.exact,
                    "claim": f"= {check.confidence} ± 2 SE" if check.exact else f">= {check.confidence} - 2 SE"})
    return out


def comparisons(result: Sequential) -> list[PaperComparison]:
    """Each claim beside the measured rate; a range widened by the rate's 99 % Clopper–Pearson error."""
    source = "issue 27 / sequential.py"
    out = []
    for (confidence, rule), r in result.null.items():
        stopped = int(np.count_nonzero(r.races.stop_index >= 0))
        rate = stopped / result.races
        low, _ = _interval(stopped, result.races)
        bound = false_strong_bound(confidence)
        if rule == "sequential":  # the naive rule claims no bound: its rate is in the notes' table
            out.append(PaperComparison(f"null, c = {confidence:g}, sequential: P(ever a winner)", rate, f"<= 1 - c² = {bound:.4g}",
                                       0.0, bound + (rate - low), source))
        for name in ("A", "B"):
            coverage = r.covered[name] / result.races
            low, high = _interval(r.covered[name], result.races)
            if rule == "sequential":  # the claim: >= c (exact c*: = c)
                out.append(PaperComparison(f"null, c = {confidence:g}, sequential: joint coverage {name}", coverage,
                                           f">= c = {confidence:g}", confidence - (high - coverage), 1.0, source))
            else:  # what the naive rule loses: below c
                out.append(PaperComparison(f"null, c = {confidence:g}, naive: joint coverage {name}", coverage,
                                           f"< c = {confidence:g} (no joint guarantee)", 0.0, confidence - (high - coverage), source))
    for (confidence, rule), s in result.alternative.items():
        if rule == "sequential":
            rate = s.win_rate(ALTERNATIVE[1])
            low, _ = _interval(int(np.count_nonzero(s.winner == 2)), result.races)
            bound = false_strong_bound(confidence)
            out.append(PaperComparison(f"alternative, c = {confidence:g}: P(the worse model wins)", rate, f"<= 1 - c² = {bound:.4g}",
                                       0.0, bound + (rate - low), source))
    for check in result.levels:
        what = f"level {','.join(map(str, check.looks))}, c = {check.confidence:g} ({'exact' if check.exact else 'bound'}): coverage"
        two = 2 * check.se
        out.append(PaperComparison(what, check.rate, f"{'= c' if check.exact else '>= c'} within 2 SE",
                                   check.confidence - two, check.confidence + two if check.exact else 1.0, "joint_levels.py"))
    return out


def notes(result: Sequential) -> list[str]:
    budgets = {(c, rule): [informative_budget(n, bands=rule_bands(rule, c)) for n in LOOKS] for c in CONFIDENCES for rule in RULES}
    lines = [
        f"Schedule {{{', '.join(map(str, LOOKS))}}}, budget K = {BUDGET:g} (median curves), ld-hd bands on [0, 1], "
        f"{result.races:,} races per setting, seed {result.seed}; the null draws both models from the KDE of "
        f"{FAMILIES[NULL_FAMILY][2]}, the alternative races {FAMILIES[ALTERNATIVE[0]][2]} against {FAMILIES[ALTERNATIVE[1]][2]}. "
        "Ranges: the claim widened by the 99 % Clopper–Pearson error of the rate (the c* checks: 2 binomial SE). "
        "The naive rule uses each look's fixed-n bands; the sequential rule the schedule's joint level.",
        "",
        "Informative budget at looks " + ", ".join(map(str, LOOKS)) + ": "
        + "; ".join(f"c = {c:g} {rule} " + "/".join(f"{k:.2f}" for k in budgets[(c, rule)]) for c in CONFIDENCES for rule in RULES)
        + f" (K = {BUDGET:g} can be decided only where it is at least {BUDGET:g}).",
        "",
        "| setting | rule | P(stop at " + ") | P(stop at ".join(map(str, LOOKS)) + ") | P(any) | median n | mean n | saved vs 48 | "
        f"{ALTERNATIVE[0]} wins | {ALTERNATIVE[1]} wins |",
        "|---|---|" + "---:|" * (len(LOOKS) + 6),
    ]
    for label, table in (("null", {key: r.races for key, r in result.null.items()}), ("alternative", result.alternative)):
        for (c, rule), s in table.items():
            p = s.stop_probability()
            wins = (f"{s.win_rate('A'):.4f} | {s.win_rate('B'):.4f}" if label == "null"
                    else f"{s.win_rate(ALTERNATIVE[0]):.4f} | {s.win_rate(ALTERNATIVE[1]):.4f}")
            lines.append(f"| {label}, c = {c:g} | {rule} | " + " | ".join(f"{x:.4f}" for x in p)
                         + f" | {s.stopped:.4f} | {s.median_trials:g} | {s.mean_trials:.2f} | {s.trials_saved:.3f} | {wins} |")
    lines += ["", "Both models' bands at every look at once (the event the bound 1 − c² rests on): " + "; ".join(
        f"c = {c:g} {rule} {r.covered['both'] / result.races:.4f}" for (c, rule), r in result.null.items()) + "."]
    lines += ["", "Joint level c* (ld-hd) against simulation: " + "; ".join(
        f"{{{','.join(map(str, ch.looks))}}} c = {ch.confidence:g}: c* = {ch.critical_coverage:.5f} "
        f"({'exact' if ch.exact else 'bound'}), coverage {ch.rate:.4f} ± {ch.se:.4f}" for ch in result.levels) + "."]
    return lines


def figure(result: Sequential):
    from matplotlib.figure import Figure

    from showwork.report.figures import PALETTE

    fig = Figure(figsize=(15.0, 4.5), layout="constrained")
    ax_null, ax_alt, ax_level = fig.subplots(1, 3)
    colours = {"sequential": PALETTE[0], "naive": PALETTE[1]}
    x = np.arange(len(CONFIDENCES))
    for offset, rule in zip((-0.15, 0.15), RULES):
        coverage = np.array([result.null[(c, rule)].covered["A"] for c in CONFIDENCES])
        low, high = clopper_pearson(coverage, result.races, CP)
        rate = coverage / result.races
        ax_null.errorbar(x + offset, rate, yerr=[rate - low, high - rate], fmt="o", color=colours[rule], label=f"{rule}: joint coverage (A)")
        stopped = np.array([np.count_nonzero(result.null[(c, rule)].races.stop_index >= 0) for c in CONFIDENCES])
        ax_null.plot(x + offset, 1 - stopped / result.races, "s", mfc="none", color=colours[rule], label=f"{rule}: 1 − P(ever a winner)")
    ax_null.plot(x, CONFIDENCES, "_", color="0.3", markersize=30, label="c")
    ax_null.plot(x, [c**2 for c in CONFIDENCES], "_", color="0.6", markersize=30, label="c² (bound on 1 − P(winner))")
    ax_null.set_xticks(x, [f"c = {c:g}" for c in CONFIDENCES])
    ax_null.set_title("(a) null: one distribution, 99 % CP intervals", fontsize="medium")
    ax_null.legend(fontsize="x-small")
    width = 0.2
    for j, (c, rule) in enumerate((c, rule) for c in CONFIDENCES for rule in RULES):
        s = result.alternative[(c, rule)]
        ax_alt.bar(np.arange(len(LOOKS)) + (j - 1.5) * width, s.stop_probability(), width, label=f"c = {c:g}, {rule}",
                   color=colours[rule], alpha=1.0 if c == CONFIDENCES[0] else 0.5)
    ax_alt.set_xticks(np.arange(len(LOOKS)), [f"look n = {n}" for n in LOOKS])
    ax_alt.set_ylabel("P(stop at this look)")
    ax_alt.set_title(f"(b) {ALTERNATIVE[0]} vs {ALTERNATIVE[1]}, K = {BUDGET:g}", fontsize="medium")
    ax_alt.legend(fontsize="x-small")
    for i, check in enumerate(result.levels):
        ax_level.errorbar(i, check.rate - check.confidence, yerr=2 * check.se, fmt="o" if check.exact else "^", color=PALETTE[0])
    ax_level.axhline(0.0, color="0.4", linestyle="--", linewidth=1)
    ax_level.set_xticks(range(len(result.levels)), [f"{','.join(map(str, ch.looks))}\nc={ch.confidence:g}" for ch in result.levels],
                        fontsize="x-small", rotation=60)
    ax_level.set_ylabel("simulated joint coverage − c (± 2 SE)")
    ax_level.set_title("(c) c* against simulation (o exact, ^ bound)", fontsize="medium")
    return fig


def main(argv: Sequence[str] | None = None) -> int:
    return study_main(STUDY, "Sequential races: the error bound holds; fixed-n bands at every look do not (issue 27).",
                      "Sequential comparisons at looks 12, 24, 48 (issue 27)", run, rows, figure, comparisons, notes, argv)


if __name__ == "__main__":
    sys.exit(main())

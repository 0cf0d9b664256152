"""How a report words its numbers: budgets, costs, evidence levels and the verdicts of a comparison."""

from __future__ import annotations

import math
from collections.abc import Sequence

from showwork.statistics import false_strong_bound
from showwork.statistics.extrapolation import Estimate, Extrapolation, ExtrapolationRefused

__all__ = [
    "MODEL_BASED", "budget_text", "cost_text", "evidence_text", "extrapolation_assumption_text",
    "extrapolation_estimates_text", "extrapolation_paragraph", "extrapolation_refused_text", "extrapolation_sentences", "percent_text",
    "resolved_bound_text", "resolved_rule_text", "seed_noise_text", "sequential_sentences", "shared_trials_text",
    "tail_rule_text", "trials_within_text", "verdict_text",
]

MODEL_BASED = "model-based"
"""The label of every extrapolated number (``Extrapolation.source`` past the informative budget): never read as observed."""


def evidence_text(level: str) -> str:
    """An evidence level in words: "no evidence", "weak evidence", ... (never "none evidence")."""
    return "no evidence" if level == "none" else f"{level} evidence"


def resolved_bound_text(confidence: float, independent: bool = True) -> str:
    """The error bound of a resolved budget at band confidence c, short: "false-resolved chance ≤ 0.36".

    ``independent``: the pair's families are independent searches (1 − c², 0.36 at c = 0.8); False
    where they share trials (``report --tuning-risk``): the union bound 2(1 − c), 0.4 at c = 0.8
    (:func:`~showwork.statistics.false_strong_bound`; ``PairComparison.independent``). A legend
    or note that speaks for several pairs passes False if any of them shares trials
    (``Report.pairs_independent``): the larger bound holds for every pair.
    """
    return f"false-resolved chance ≤ {false_strong_bound(confidence, independent=independent):.3g}"


def shared_trials_text(a: str, b: str, confidence: float) -> str:
    """Why a pair whose families share trials (``PairComparison.independent`` False) states the union bound."""
    return (f"{a} and {b} share trials (the trials of one are among the other's), so their bands are not independent:"
            f" the chance of any false resolved budget of the pair is at most 2(1 − c) ="
            f" {false_strong_bound(confidence, independent=False):.3g}, not 1 − c² = {false_strong_bound(confidence):.3g}.")


def verdict_text(resolved: bool, level: str, confidence: float, independent: bool = True) -> str:
    """A budget range's verdict: "resolved; false-resolved chance ≤ 0.36", or why it is not resolved.

    ``independent``: as in :func:`resolved_bound_text` (the pair's ``PairComparison.independent``)."""
    if resolved:
        return f"resolved; {resolved_bound_text(confidence, independent)}"
    if level in ("weak", "fair"):
        return f"unresolved: {level} evidence has no error bound"
    return "unresolved"


def resolved_rule_text(confidence: float, sharing: Sequence[str] = ()) -> str:
    """What "resolved" means and its bound, at band confidence c (the rule of :mod:`showwork.statistics.comparison`).

    ``sharing``: the pairs ("A vs B") whose families share trials, so are not independent searches;
    the text says that their bound is 2(1 − c).
    """
    independent = false_strong_bound(confidence)
    dependent = false_strong_bound(confidence, independent=False)
    shared = ""
    if sharing:
        shared = (f" Here {', '.join(sharing)} {'share' if len(sharing) == 1 else 'each share'} trials (one family's"
                  f" trials are among the other's), so {'its' if len(sharing) == 1 else 'their'} bound is 2(1 − c) ="
                  f" {dependent:.3g}.")
    return (
        f"Resolved means strong evidence (the two {confidence:.0%} bands exclude each other) within both informative"
        f" budgets. If each band holds with probability ≥ c = {confidence:g}, strong evidence for a curve that is not"
        f" better can only occur where a band fails, so the chance of any false resolved budget of a pair, over all"
        f" budgets at once, is at most 1 − c² = {independent:.3g} for independent searches (2(1 − c) ="
        f" {dependent:.3g} under any dependence).{shared} Fair and weak evidence carry no such bound and never count as"
        " resolved; their false rates are measured by simulation in showwork's statistical studies."
    )


def budget_text(k: float) -> str:
    """A budget as the report words it: "4.6", "140", "∞" (one decimal below 10, none above)."""
    if math.isinf(k):
        return "∞"
    return f"{k:.0f}" if k >= 10 else f"{k:.1f}".rstrip("0").rstrip(".")


def percent_text(confidence: float) -> str:
    """A confidence as the figures' titles and a curve's summary word it: "80%", "95.5%"."""
    return f"{100 * confidence:.10g}%"


def cost_text(c: float) -> str:
    """A total cost as the report words it: three significant digits ("0.0189", "12.5", "1.2e+04")."""
    return f"{c:.3g}"


def sequential_sentences(race) -> list[str]:
    """What a race (:class:`~showwork.store.races.RaceRecord`) planned, where it stopped and what that cost, in words."""
    s = race.settings
    a, b = race.names
    looks = ", ".join(str(n) for n in s.looks)
    budgets = ", ".join(budget_text(k) for k in s.budgets)
    c = s.confidence
    out = [
        f"Sequential comparison (race {race.name}) of {a} and {b}: looks fixed before any trial at n = {looks} trials per"
        f" model (the first n by trial index, failed trials counted as the worst score; no trial beyond a look started"
        f" before its decision, so none was run, wasted or left out of a look), decided at the budgets"
        f" K = {budgets} by the {s.decide_by} tuning curves. The bands are {s.method.upper()} bands that hold at every"
        f" look at once with probability ≥ c = {c:g} per model (joint confidence), so the chance that the race ever"
        f" declares a wrong winner, at any look, is at most 1 − c² = {1 - c * c:.3g}.",
    ]
    last = race.looks[-1] if race.looks else None
    if race.status == "decided":
        out.append(f"It stopped at look {last.number} of {len(s.looks)} (n = {last.look} per model): {race.winner} is"
                   f" better at every K = {budgets} (strong evidence within both informative budgets; up to"
                   f" k = {budget_text(last.informative_k)} at this look). {race.saved_trials()} trials per model were"
                   f" not run against the last look (n = {s.looks[-1]}).")
    elif race.status == "undecided":
        out.append(f"It did not stop: after the last look (n = {last.look} per model) no model was resolved at every"
                   f" K = {budgets}, so it is undecided; no trial was saved against the last look.")
    elif race.status == "undecidable":
        n = s.looks[len(race.looks)]
        out.append(f"It ended at look {len(race.looks) + 1} of {len(s.looks)} (n = {n} per model) without a decision:"
                   f" {race.reason}.")
    elif last is not None:
        out.append(f"It is still running: {len(race.looks)} of {len(s.looks)} looks taken (n = {last.look} per model),"
                   " no winner yet; the report shows the last look taken.")
    adopted = [f"{search.name} ({search.adopted_trials} trials)" for search in race.searches if search.adopted_trials is not None]
    if adopted:
        out.append(f"The race adopted {' and '.join(adopted)} as they were recorded before it began: their trials count"
                   " toward the looks by index, as trials the race runs do, and none was run again. The bound holds"
                   " where the looks and budgets were chosen without looking at those trials' scores.")
    return out


# ------------------------------------------------------------------ extrapolation (Lourie, He & Cho 2025)
# The one wording of an extrapolated tuning curve: `curve`, `compare`, `plan`, the report and the notebook use it.


def _score_text(x: float) -> str:
    """A score in a sentence: four significant digits ("0.9123"), "∞" where unbounded."""
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    return f"{x:.4g}"


def extrapolation_assumption_text() -> str:
    """What a model-based number assumes, in one clause."""
    return "holds if the tail is noisy-quadratic"


def tail_rule_text(tail_fraction: float, n_tail: int | None = None, n: int | None = None) -> str:
    """The pre-registered tail rule: "the best 50% of the trials (24 of 48), a share fixed before the scores were
    read (pre-registered), never chosen by eye"."""
    counts = f" ({n_tail} of {n})" if n_tail is not None and n is not None else ""
    return (f"the best {percent_text(tail_fraction)} of the trials{counts}, a share fixed before the scores were read"
            " (pre-registered), never chosen by eye")


def extrapolation_estimates_text(extrapolation: Extrapolation) -> str:
    """The fitted law's estimates with their intervals: "asymptote 0.915 [0.91, 0.921], γ 4.1 [2.3, 7.5], σ 0.003 [...]"."""
    e = extrapolation
    return (f"asymptote (the score more tuning approaches, seed noise aside) {_estimate_text(e.asymptote)},"
            f" γ (effective number of hyperparameters) {_estimate_text(e.gamma, 2)},"
            f" σ (seed noise) {_estimate_text(e.sigma, 2)}; intervals at {percent_text(e.confidence)}")


def _estimate_text(estimate: Estimate, digits: int = 4) -> str:
    def shown(x: float) -> str:
        return _score_text(x) if digits == 4 or math.isinf(x) else f"{x:.{digits}g}"

    return f"{shown(estimate.estimate)} [{shown(estimate.lower)}, {shown(estimate.upper)}]"


def extrapolation_sentences(extrapolation: Extrapolation) -> list[str]:
    """What an extrapolation says, in plain sentences: the band at K, labelled model-based (with the assumption), the
    budget up to which the band is nonparametric, the seed-noise floor, the estimates and the tail rule."""
    e = extrapolation
    K = int(e.k[-1])
    q = "median" if e.quantile == 0.5 else f"{e.quantile:g}-quantile"
    model_based = str(e.source[-1]) == MODEL_BASED
    label = f"{MODEL_BASED}: {extrapolation_assumption_text()}" if model_based else "observed: nonparametric, exact"
    band = f"{percent_text(e.confidence)} band [{_score_text(float(e.lower[-1]))}, {_score_text(float(e.upper[-1]))}]"
    if e.minimize:
        reach = f"would get down to no lower than {_score_text(float(e.lower[-1]))}"
    else:
        reach = f"would reach at most {_score_text(float(e.upper[-1]))}"
    return [
        f"With {K / e.n:.3g}× the trials (k = {K}) the {q} best {reach} (point {_score_text(float(e.point[-1]))},"
        f" {band}, {label}).",
        f"The band is nonparametric (exact) up to k ≈ {budget_text(e.informative_k)} and {MODEL_BASED} past it.",
        seed_noise_text(e.sigma) + ".",
        f"Estimates: {extrapolation_estimates_text(e)}.",
        f"The law is fitted to the tail, {tail_rule_text(e.tail_fraction, e.n_tail, e.n)}; {e.goodness_of_fit.test}"
        f" did not reject it.",
    ]


def seed_noise_text(sigma: Estimate) -> str:
    """The seed-noise floor: "Seed noise σ ≈ 0.003 [0.002, 0.005]: margins under 2σ = 0.006 are within seed noise"."""
    return (f"Seed noise σ ≈ {sigma.estimate:.2g} [{sigma.lower:.2g}, {sigma.upper:.2g}]: margins under"
            f" 2σ = {2 * sigma.estimate:.2g} are within seed noise")


def extrapolation_paragraph(extrapolation: Extrapolation | ExtrapolationRefused) -> str:
    """An extrapolation (or its refusal) as one paragraph of a report: its sentences, or the reason it was refused."""
    if isinstance(extrapolation, ExtrapolationRefused):
        text = extrapolation_refused_text(extrapolation)
        return text[0].upper() + text[1:] + "."
    return " ".join(extrapolation_sentences(extrapolation))


def extrapolation_refused_text(refused: ExtrapolationRefused) -> str:
    """Why there is no extrapolation: "no extrapolation: <reason>" (a refusal is an answer, not an error)."""
    return (f"no extrapolation: {refused.reason.rstrip('.')} (the tail: {tail_rule_text(refused.tail_fraction)})")


def trials_within_text(epsilon: float, by_fit: int | None, every_law: int | None, minimize: bool = False,
                       quantile: float = 0.5) -> str:
    """``plan --within``: trials for the median (q-quantile) best to come within ε of the asymptote, by the fit and for
    every consonant law, labelled model-based."""
    def trials(value: int | None) -> str:
        return "no number of trials up to 10^9" if value is None else f"{value:,} trials"

    return (f"To come within ε = {epsilon:g} of the asymptote (the {'lowest' if minimize else 'best'} score more tuning"
            f" approaches, seed noise aside), the {'median' if quantile == 0.5 else f'{quantile:g}-quantile'} best needs {trials(by_fit)} by the fitted law and"
            f" {trials(every_law)} for every consonant law ({MODEL_BASED}: {extrapolation_assumption_text()}, Lourie, He & Cho 2025)")

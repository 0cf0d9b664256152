"""How a report words its numbers: budgets, costs, evidence levels and the verdicts of a comparison."""

from __future__ import annotations

import math
from collections.abc import Sequence

from showwork.statistics import false_strong_bound

__all__ = [
    "budget_text", "cost_text", "evidence_text", "percent_text", "resolved_bound_text", "resolved_rule_text",
    "sequential_sentences", "shared_trials_text", "verdict_text",
]


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

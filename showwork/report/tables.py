"""The report's tables, as plain text cells that every output format renders the same way.

A :class:`Table` is data, not markup: a title, column names, rows of already formatted strings and
notes. :mod:`showwork.report.render` turns it into Markdown, HTML or LaTeX (and escapes there), so
a number is formatted once and reads the same in every format.

Tables built here, all from a :class:`~showwork.report.contents.Report`:

- ``families`` — trials run and failed, best score and its test score, mean / median / IQR,
  mean runtime and total compute;
- ``best_configurations`` — the hyperparameters of each family's best trial;
- ``reruns`` — the selected configurations trained again over fresh seeds (``showwork rerun``):
  validation and test score, mean ± sd (min–max);
- ``tuning_curves`` — V, U, and the median with its band (and the mean-curve band when the
  support is bounded) at the table budgets;
- ``targets`` — the budget at which each curve and band reaches each target score;
- ``ranking`` — with many families: the families best first, and the evidence that the best one
  (the reference) beats each;
- ``comparisons`` — evidence between each pair of families (or each family and the reference) by
  budget range;
- ``crossovers`` — the budgets at which each pair's median curves change order, which family leads
  on each side, and whether the bands reach that far;
- ``advice`` — how far the bands reach and how many trials a larger budget needs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from showwork.report.contents import FamilyAnalysis, FamilySummary, Report
from showwork.report.wording import (
    budget_text,
    evidence_text,
    resolved_bound_text,
    resolved_rule_text,
    sequential_sentences,
    verdict_text,
)
from showwork.selection import RerunSummary, Spread, TiedBest
from showwork.statistics.cost import COST_UNITS
from showwork.store.races import RaceRecord
from showwork.values import flatten, value_text

__all__ = [
    "Table",
    "advice_table",
    "best_configuration_table",
    "comparison_table",
    "crossover_table",
    "duration_unit",
    "failures_sentence",
    "family_table",
    "format_duration",
    "format_number",
    "interval_text",
    "race_table",
    "ranking_table",
    "report_tables",
    "rerun_sentence",
    "rerun_table",
    "sequential_table",
    "spread_text",
    "tie_sentence",
    "target_table",
    "tuning_curve_table",
]


@dataclass(frozen=True)
class Table:
    """A titled table of formatted text cells.

    Attributes
    ----------
    key : str
        A short identifier (file names, anchors): letters, digits and underscores.
    title : str
    columns : tuple of str
    rows : tuple of tuples of str
        Each row has one cell per column.
    notes : tuple of str
        Sentences printed under the table (what the numbers mean, what was not recorded).
    numeric : tuple of bool
        Per column, whether it holds numbers (right-aligned).
    """

    key: str
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    notes: tuple[str, ...] = ()
    numeric: tuple[bool, ...] = ()

    def __post_init__(self) -> None:
        if not self.key.replace("_", "").isalnum():
            raise ValueError(f"table key must be letters, digits and underscores (got {self.key!r}).")
        for i, row in enumerate(self.rows):
            if len(row) != len(self.columns):
                raise ValueError(f"table {self.key!r}: row {i} has {len(row)} cells for {len(self.columns)} columns.")
        if self.numeric and len(self.numeric) != len(self.columns):
            raise ValueError(f"table {self.key!r}: {len(self.numeric)} alignment flags for {len(self.columns)} columns.")


def failures_sentence(family: FamilyAnalysis) -> str:
    """How many of a family's trials failed, of which kinds where recorded (``2 × CUDA out of memory``),
    and what the failure policy made of them."""
    described = family.curve.failures.describe()
    counts = family.results.failure_counts()
    if not counts or not family.curve.failures.failed:
        return described
    kinds = ", ".join(f"{count} × {kind}" for kind, count in counts.items())
    head, _, rest = described.partition(";")
    return f"{head} ({kinds}){';' + rest if rest else ''}"


def format_number(x: float | int | None, digits: int = 4) -> str:
    """Format a number for a table: ``digits`` significant digits, "—" for missing, "∞" for infinite.

    Examples
    --------
    >>> format_number(0.87264391), format_number(None), format_number(float("inf")), format_number(1487)
    ('0.8726', '—', '∞', '1487')
    >>> format_number(1909.31, 3), format_number(19093.1), format_number(2.5e-7)
    ('1909', '19093', '2.5e-07')
    """
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    if isinstance(x, (int,)) and not isinstance(x, bool):
        return str(x)
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    if x == int(x) and abs(x) < 1e15:
        return str(int(x))
    if 10**digits <= abs(x) < 1e15:  # no exponent for large amounts (hours, trials): 1909, not 1.909e+03
        return f"{x:.0f}"
    return f"{x:.{digits}g}"


def _hours(seconds_or_hours: float | None) -> str:
    return format_number(seconds_or_hours, 3)


def format_duration(seconds: float | None) -> str:
    """A runtime in the unit that reads best: seconds, minutes or hours ("—" when unknown).

    >>> format_duration(42.0), format_duration(600.0), format_duration(36000.0), format_duration(None)
    ('42 s', '10 min', '10 h', '—')
    """
    if seconds is None:
        return "—"
    unit = duration_unit(seconds)
    return f"{format_number(seconds / COST_UNITS[unit], 3)} {_UNIT_SYMBOLS[unit]}"


_UNIT_SYMBOLS = {"seconds": "s", "minutes": "min", "hours": "h", "gpu-hours": "GPU-h"}


def duration_unit(seconds: float) -> str:
    """The unit of ``COST_UNITS`` that reads best for a duration: seconds below 2 min, minutes below 2 h, else hours.

    >>> duration_unit(42.0), duration_unit(600.0), duration_unit(36000.0)
    ('seconds', 'minutes', 'hours')
    """
    if seconds < 120:
        return "seconds"
    if seconds < 7200:
        return "minutes"
    return "hours"


def tie_sentence(tie: TiedBest | None, test_name: str = "test score") -> str | None:
    """How many trials tie for the best validation score and their test scores, or None without a tie.

    E.g. "20 trials tie for the best validation score; the first, trial 3, is selected; test score over the
    tied trials: 0.956–0.983, mean 0.97" (the selected trial's test score is given beside it).
    """
    if tie is None or tie.count < 2:
        return None
    text = f"{tie.count} trials tie for the best validation score; the first, trial {tie.selected}, is selected"
    if not tie.tests:
        return text
    counted = "" if len(tie.tests) == tie.count else f" (the {len(tie.tests)} of them that recorded one)"
    return (f"{text}; {test_name} over the tied trials{counted}: {format_number(tie.test_low)}–{format_number(tie.test_high)},"
            f" mean {format_number(tie.test_mean)}")


def _test_of_best(s: FamilySummary) -> str:
    """The selected trial's test score, with the tied set's range and mean where several trials tie."""
    tie = s.best_tie
    if tie is None or tie.count < 2 or not tie.tests:
        return format_number(s.best_test_score)
    return (f"{format_number(s.best_test_score)} ({tie.count} tied: {format_number(tie.test_low)}–"
            f"{format_number(tie.test_high)}, mean {format_number(tie.test_mean)})")


def family_table(report: Report) -> Table:
    """Trials, failures, best and typical scores, runtime and compute of every family."""
    rows = []
    # One unit for the column, chosen by the largest total as the figures' compute axis is, so rows compare
    # at a glance: a search of 0.5 s trials reads "4.2 min", not "0.07 h".
    totals = [f.summary.compute_hours * 3600.0 for f in report.families if f.summary.compute_hours is not None]
    unit = duration_unit(max(totals)) if totals else "hours"
    for f in report.families:
        s = f.summary
        compute = "—" if s.compute_hours is None else format_number(s.compute_hours * 3600.0 / COST_UNITS[unit], 3)
        if s.gpu_hours is not None:
            compute += f" ({_hours(s.gpu_hours)} GPU-h)"
        rows.append(
            (
                f.name,
                str(s.n_trials),
                str(s.n_failed),
                format_number(s.best_score),
                _test_of_best(s),
                format_number(s.mean),
                format_number(s.median),
                f"{format_number(s.q25)}–{format_number(s.q75)}",
                format_duration(s.mean_runtime_s),
                compute,
            )
        )
    metric = ", ".join(dict.fromkeys(f.results.metric for f in report.families))
    notes = [
        f"Scores are {metric} ({'lower' if report.minimize else 'higher'} is better) of the finished trials;"
        " best is the trial a selection by validation score picks, with its test score; median: the sample median"
        " (the mean of the two middle scores when their number is even), unlike the tuning-curve table's median at"
        " k = 1, the lower empirical quantile (one trial's score). Compute: the trials' summed wall time.",
    ]
    for f in report.families:
        tie = tie_sentence(f.summary.best_tie)
        if tie:
            notes.append(f"{f.name}: {tie}.")
    for f in report.families:
        if f.summary.n_failed:
            notes.append(f"{f.name}: {failures_sentence(f)}.")
    for f in report.families:
        for rerun in f.results.reruns:
            if rerun.rank == 1:
                test = (f.results.spec or {}).get("metric", {}).get("test")
                notes.append(f"{f.name}: {rerun_sentence(rerun, f.results.metric, test)} (re-runs, not among the trials).")
    return Table(
        "families",
        "Trials per family",
        ("family", "trials", "failed", "best", "test of best", "mean", "median", "IQR", "mean runtime",
         f"compute ({_UNIT_SYMBOLS[unit]})"),
        tuple(rows),
        tuple(notes),
        (False, True, True, True, True, True, True, True, True, True),
    )


def best_configuration_table(report: Report) -> Table:
    """The hyperparameters of each family's best trial, one row per (family, parameter)."""
    rows = []
    notes = ["The configuration of the trial with the best validation score (first on ties)."]
    for f in report.families:
        s = f.summary
        tie = tie_sentence(s.best_tie)
        if tie:
            notes.append(f"{f.name}: {tie}.")
        if not s.best_params:
            rows.append((f.name, "—", "not recorded", "—"))
            continue
        for key, value in sorted(flatten(s.best_params).items()):
            rows.append((f.name, key, value_text(value), "" if s.best_index is None else str(s.best_index)))
    return Table(
        "best_configurations",
        "Best configuration of each family",
        ("family", "hyperparameter", "value", "trial"),
        tuple(rows),
        tuple(notes),
        (False, False, True, True),
    )


def spread_text(spread: Spread, digits: int = 4) -> str:
    """Scores over seeds as ``0.8512 ± 0.0031 (0.8476–0.8549)``: mean ± sample sd (min–max); sd "—" for one seed."""
    return (f"{format_number(spread.mean, digits)} ± {format_number(spread.sd, digits)}"
            f" ({format_number(spread.low, digits)}–{format_number(spread.high, digits)})")


def rerun_sentence(rerun: RerunSummary, metric: str, test_metric: str | None) -> str:
    """``test accuracy of the selected configuration over 5 seeds: 0.85 ± 0.01 (0.84–0.86)``; the validation
    score's, saying so, when no test score was recorded; what failed."""
    which = "the selected configuration" if rerun.rank == 1 else f"configuration {rerun.rank or '?'} (trial {rerun.trial})"
    seeds = f"{rerun.finished} seed{'s' if rerun.finished != 1 else ''}"
    failed = f"; {rerun.failed} re-run{'s' if rerun.failed != 1 else ''} failed" if rerun.failed else ""
    if rerun.test is not None:
        return f"test {test_metric or 'score'} of {which} over {seeds}: {spread_text(rerun.test)}{failed}"
    if rerun.validation is not None:
        no_test = "no test metric recorded" if not test_metric else f"no test {test_metric} reported"
        return f"validation {metric} of {which} over {seeds} ({no_test}): {spread_text(rerun.validation)}{failed}"
    return f"{which}: no re-run finished ({rerun.planned} planned{failed})"


def rerun_table(report: Report) -> Table | None:
    """The configurations trained again over fresh seeds (``showwork rerun``), one row each; None without re-runs."""
    rows = []
    for f in report.families:
        for rerun in f.results.reruns:
            rows.append((
                f.name,
                "selected" if rerun.rank == 1 else ("no longer ranked" if rerun.rank is None else f"rank {rerun.rank}"),
                str(rerun.trial),
                f"{rerun.finished} of {rerun.planned}",
                "—" if rerun.validation is None else spread_text(rerun.validation),
                "—" if rerun.test is None else spread_text(rerun.test),
            ))
    if not rows:
        return None
    return Table(
        "reruns",
        "Selected configurations over fresh training seeds",
        ("family", "configuration", "trial", "seeds finished", "validation: mean ± sd (min–max)", "test: mean ± sd (min–max)"),
        tuple(rows),
        ("Each configuration trained again by showwork rerun under the same fresh training seeds (none of them a seed"
         " of the search's trials); sd is the sample standard deviation. The re-runs are kept apart from the search's"
         " trials: no tuning curve, band or statistic above includes them.",),
        (False, False, True, True, True, True),
    )


def tuning_curve_table(report: Report) -> Table:
    """V, U, the median with its band, and the mean-curve band, at the table budgets."""
    bounded = any(f.table_curve.mean_lower is not None for f in report.families)
    timed = all(f.table_curve.mean_runtime_s is not None for f in report.families)
    unit = report.settings.cost_unit
    columns = ["family", "k"] + ([f"cost ({unit})"] if timed else []) + ["V", "U", "median", "median band"]
    if bounded:
        columns.append("mean band")
    rows = []
    for f in report.families:
        c = f.table_curve
        cost = c.cost(unit) if timed else None
        for i, k in enumerate(c.k):
            row = [f.name, format_number(float(k))]
            if timed:
                row.append(format_number(float(cost[i]), 3))
            row += [format_number(c.v[i]), format_number(c.u[i]), format_number(c.quantile_curve[i]), interval_text(c.quantile_curve_lower[i], c.quantile_curve_upper[i])]
            if bounded:
                row.append("—" if c.mean_lower is None else interval_text(c.mean_lower[i], c.mean_upper[i]))
            rows.append(tuple(row))
    s = report.settings
    band = f"{s.confidence:.0%} simultaneous {s.method.upper()} band"
    notes = [
        f"V: Dodge et al.'s expected best of k (biased low); U: Tang et al.'s unbiased estimate (defined for k ≤ n);"
        f" median: the {s.quantile:g}-quantile tuning curve, with its {band} (Lourie, Cho & He 2024), exact and"
        " distribution-free for i.i.d. random search; at k = 1 it is an order statistic of the scores (the lower"
        " empirical quantile: one trial's score, never an average), so it can differ from the family table's median.",
    ]
    if bounded:
        notes.append("Mean band: conservative simultaneous band of the expected tuning curve, from the score's bounds.")
    notes.append("A band end at the score's bound (or ±∞) means the trials cannot bound it at that budget.")
    numeric = tuple(name != "family" for name in columns)
    return Table("tuning_curves", "Tuning curves at selected budgets", tuple(columns), tuple(rows), tuple(notes), numeric)


def interval_text(lower: float, upper: float) -> str:
    """A band or interval in a table: "[0.8726, 0.9012]"."""
    return f"[{format_number(float(lower))}, {format_number(float(upper))}]"


def target_table(report: Report) -> Table | None:
    """The smallest budget at which each estimate and band reaches each target score (None without targets)."""
    if not report.settings.targets:
        return None
    rows = []
    beyond = False
    for f in report.families:
        for target, reach in f.targets.items():
            shown = reach.get("median_upper" if report.minimize else "median_lower")
            # The pessimistic band holds at every budget: its answer needs no mark. The point
            # estimates and the optimistic band past the informative budget do.
            marked = [reach.get(key) for key in ("v", "u", "median", "median_lower" if report.minimize else "median_upper")]
            beyond |= any(r is not None and r > f.advice.informative_k for r in marked)
            cells = [_target_reach(r, f) for r in marked]
            rows.append((f.name, format_number(target), *cells[:3], _reach(shown), cells[3]))
    return Table(
        "targets",
        "Budget needed to reach a target score",
        ("family", "target", "V", "U", "median", "shown (band)", "not ruled out (band)"),
        tuple(rows),
        (
            "Smallest number of trials k at which each curve reaches the target; 'shown': the"
            " pessimistic band reaches it, so the data show the budget suffices at the bands' confidence;"
            " 'not ruled out': only the optimistic band reaches it; — : not within 10⁹ trials (U: within n).",
        ) + ((
            "'beyond k ≈ …': the budget lies past the family's informative budget, where the optimistic band is the"
            " score's bound: there the bands cannot check a point estimate and 'not ruled out' holds trivially, so the"
            " budget is an extrapolation, not a finding; more trials are needed to check it. 'Shown' needs no such"
            " mark: the pessimistic band holds at every budget.",
        ) if beyond else ()),
        (False, True, True, True, True, True, True),
    )


def _reach(k: int | None) -> str:
    return "—" if k is None else str(k)


def _target_reach(k: int | None, family: FamilyAnalysis) -> str:
    """A budget to reach a target; one past the family's informative budget says so ("693, beyond k ≈ 4.6")."""
    if k is None or k <= family.advice.informative_k:
        return _reach(k)
    return f"{k}, beyond k ≈ {format_number(family.advice.informative_k, 3)}"


def comparison_table(report: Report) -> Table | None:
    """Evidence between each pair of families by budget range (None with a single family)."""
    if not report.pairs:
        return None
    rows = []
    for p in report.pairs:
        c = p.comparison
        for r in c.ranges:
            k_range = f"{r.k_start:g}" if r.k_start == r.k_end else f"{r.k_start:g}–{r.k_end:g}"
            verdict = verdict_text(r.resolved, r.level, c.confidence, c.independent)  # the rule of showwork.statistics.comparison
            rows.append((f"{c.a} vs {c.b}", k_range, evidence_text(r.level), r.favoured or "—", verdict))
    s = report.settings
    sharing = [f"{p.comparison.a} vs {p.comparison.b}" for p in report.pairs if not p.comparison.independent]
    return Table(
        "comparisons",
        "Comparisons between families",
        ("pair", "budgets k", "evidence", "favours", "verdict"),
        tuple(rows),
        (
            f"Evidence from the median curves and their {s.confidence:.0%} {s.method.upper()} bands: strong — the bands"
            " do not overlap; fair — each point estimate lies outside the other's band; weak — one does; no evidence —"
            f" neither. {resolved_rule_text(s.confidence, sharing)} Any budget beyond the smaller informative budget of the pair"
            " is unresolved. The crossovers of the medians are in the next table.",
        ),
        (False, True, False, False, False),
    )


def crossover_table(report: Report) -> Table | None:
    """The budgets at which each pair's median curves change order (None with a single family).

    One row per crossover: the first budget after the change, the family ahead just before and
    from there on, and whether the bands reach that budget (past the pair's informative budget a
    crossover is the point estimates' alone: unresolved). A pair whose medians never cross gets one
    row saying so.
    """
    if not report.pairs:
        return None
    better = np.less if report.minimize else np.greater
    rows = []
    for p in report.pairs:
        c = p.comparison
        a, b = report.family(c.a).curve.quantile_curve, report.family(c.b).curve.quantile_curve
        name = f"{c.a} vs {c.b}"
        reach = f"informative up to k ≈ {format_number(p.informative_k, 3)}"

        def ahead(i: int) -> str:
            return c.a if better(a[i], b[i]) else c.b if better(b[i], a[i]) else "tie"

        if not c.crossovers:
            rows.append((name, "—", ahead(0), ahead(c.k.size - 1),
                         f"the medians do not cross over k = {c.k[0]:g}–{c.k[-1]:g} ({reach})"))
        for k in c.crossovers:
            j = int(np.searchsorted(c.k, k))
            where = ("within the bands' reach" if k <= p.informative_k
                     else f"beyond the informative budget k ≈ {format_number(p.informative_k, 3)}: unresolved")
            rows.append((name, format_number(k), ahead(j - 1), ahead(j), where))
    return Table(
        "crossovers",
        "Crossovers of the median curves",
        ("pair", "medians cross at k", "ahead before", "ahead from k", "bands"),
        tuple(rows),
        (
            "A crossover is the first budget at which the median (point-estimate) curves change order. Only one"
            " within the bands' reach, with strong evidence (resolved) on each side (previous table), is a finding;"
            " past the pair's informative budget one band is the score's bound and the order there is unresolved.",
        ),
        (False, True, False, False, False),
    )


def ranking_table(report: Report) -> Table | None:
    """The families best first and the evidence against the reference (None when every pair is compared)."""
    if report.reference is None:
        return None
    i = int(np.searchsorted(report.budgets, report.ranking_k))
    against = {p.comparison.b: p for p in report.pairs}
    k = format_number(report.ranking_k)
    rows = []
    for rank, name in enumerate(report.ranking, start=1):
        c = report.family(name).curve
        pair = against.get(name)
        if pair is None:
            evidence, shown = "reference", "—"
        else:
            level, favoured = str(pair.comparison.levels[i]), int(pair.comparison.favoured[i])
            evidence = (evidence_text(level) if level == "none"
                        else f"{evidence_text(level)}, favours {pair.comparison.a if favoured > 0 else name}")
            better = pair.resolved_for(report.reference)
            shown = "none" if not better.size else _budget_span(better)
        rows.append((str(rank), name, str(c.n), format_number(c.quantile_curve[i]), interval_text(c.quantile_curve_lower[i], c.quantile_curve_upper[i]), evidence, shown))
    s = report.settings
    return Table(
        "ranking",
        f"Families ranked by the {s.quantile:g}-quantile curve at k = {k}",
        ("rank", "family", "trials", f"median at k = {k}", "band", f"evidence vs {report.reference} at k = {k}", f"{report.reference} resolved better at k"),
        tuple(rows),
        (
            f"k = {k} is the largest budget every family's bands can speak about. With {len(report.families)} families each"
            f" is compared with the best one, {report.reference}, rather than every pair; the last column lists the budgets"
            f" where the evidence that the reference beats the family is strong (resolved; {resolved_bound_text(s.confidence, report.pairs_independent)}"
            f" per pair{'' if report.pairs_independent else ', some of whose families share trials'}); fair and weak evidence"
            " carry no error bound and are not listed there.",
        ),
        (True, False, True, True, True, False, False),
    )


def _budget_span(ks: np.ndarray) -> str:
    """Budgets as ranges of consecutive grid points would be long; give the extent and the count."""
    lo, hi = float(ks[0]), float(ks[-1])
    return f"{lo:g}" if lo == hi else f"{lo:g}–{hi:g} ({ks.size} budgets)"


def advice_table(report: Report) -> Table:
    """How far each family's bands reach, and the trials a larger budget needs."""
    rows = []
    for f in report.families:
        a = f.advice
        rows.append((f.name, str(a.n), format_number(a.informative_k, 3), format_number(a.bound_k, 3), _reach(a.trials_needed), a.text()))
    return Table(
        "advice",
        "How many trials the bands need",
        ("family", "trials used", "informative up to k", "plan for k", "trials needed", "advice"),
        tuple(rows),
        ("Beyond the informative budget one band of the median curve is trivial (the score's bound): the data say nothing there.",),
        (False, True, True, True, True, False),
    )


def sequential_table(report: Report) -> Table | None:
    """The "Sequential comparison" of a race's report (:func:`race_table`); None for a report of no race."""
    return None if report.race is None else race_table(report.race)


def race_table(race: RaceRecord) -> Table:
    """A race's looks: one row per look taken, the schedule and the bound in the notes (what a race's report and
    ``showwork.race(...)`` show)."""
    rows = []
    for look in race.looks:
        evidence = "; ".join(
            f"K={budget_text(k)}: {evidence_text(level)}" + (f" for {favoured}" if favoured else "") + (", resolved" if resolved else "")
            for k, level, favoured, resolved in zip(look.budgets, look.levels, look.favoured, look.resolved))
        decision = f"{look.winner} wins: stop" if look.decided else ("undecided: end" if look.number == len(race.settings.looks) else "go on")
        rows.append((str(look.number), str(look.look), budget_text(look.informative_k), evidence, decision))
    saved = f"{race.saved_trials()} per model" if race.status == "decided" else "0 (did not stop early)" if race.status == "undecided" else "-"
    return Table(
        "sequential",
        "Sequential comparison",
        ("look", "n per model", "informative up to k", "evidence at each K", "decision"),
        tuple(rows),
        (*sequential_sentences(race), f"Trials saved against the last look: {saved}."),
        (True, True, True, False, False),
    )


def report_tables(report: Report) -> tuple[Table, ...]:
    """Every table of a report, in reading order (absent tables skipped)."""
    tables = [
        sequential_table(report),
        family_table(report),
        ranking_table(report),
        tuning_curve_table(report),
        comparison_table(report),
        crossover_table(report),
        target_table(report),
        advice_table(report),
        best_configuration_table(report),
        rerun_table(report),
    ]
    return tuple(t for t in tables if t is not None)

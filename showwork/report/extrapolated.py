"""The report's table of extrapolated tuning curves (``report --extrapolate K``), beside :mod:`showwork.report.tables`."""

from __future__ import annotations

from showwork.report.analysis import table_budgets
from showwork.report.contents import Report
from showwork.report.tables import Table, format_number, interval_text
from showwork.report.wording import (
    MODEL_BASED,
    extrapolation_assumption_text,
    extrapolation_estimates_text,
    extrapolation_refused_text,
    tail_rule_text,
)
from showwork.statistics.extrapolation import ExtrapolationRefused

__all__ = ["extrapolation_table"]


def extrapolation_table(report: Report) -> Table | None:
    """Each family's extrapolated median curve at the 1-2-5 budgets up to K, every row's source named, and its estimates
    (asymptote, γ, σ with intervals); a refused family's reason (None without ``settings.extrapolate``)."""
    asked = [f for f in report.families if f.extrapolation is not None]
    if not asked:
        return None
    columns = ("family", "k", "median (fit)", "band", "source")
    rows = []
    notes = []
    for f in asked:
        e = f.extrapolation
        if isinstance(e, ExtrapolationRefused):
            rows.append((f.name, "—", "—", "—", "refused"))
            notes.append(f"{f.name}: {extrapolation_refused_text(e)}.")
            continue
        shown = set(table_budgets(e.K))
        rows += [(f.name, format_number(float(e.k[i])), format_number(float(e.point[i])),
                  interval_text(e.lower[i], e.upper[i]), str(e.source[i])) for i in range(e.k.size) if int(e.k[i]) in shown]
        notes.append(f"{f.name}: {extrapolation_estimates_text(e)}; fitted to {tail_rule_text(e.tail_fraction, e.n_tail, e.n)}.")
    s = report.settings
    notes.insert(0, f"Bands at {s.confidence:.0%}: nonparametric (exact, distribution-free) up to each family's informative"
                 f" budget, {MODEL_BASED} past it ({extrapolation_assumption_text()}). The median (fit) is the fitted law's"
                 " median tuning curve.")
    return Table("extrapolation", "Extrapolated tuning curves", columns, tuple(rows), tuple(notes),
                 (False, True, True, True, False))

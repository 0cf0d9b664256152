"""A hyperparameter's effect and its tuning risk (``report --by PARAM``, ``--tuning-risk PARAM=DEFAULT``).

Trials of one random search that drew the same value of a parameter are i.i.d. draws of that search
with the parameter fixed, so each value gets its own tuning curve and the values can be compared
with the usual evidence (Lourie, Cho & He 2024, Figs. 17 and 20). Tuning risk (Weerts et al. 2020;
Lourie et al. Fig. 4) compares tuning every parameter — all the trials — with the trials that drew
the parameter's default: is it worth tuning, at equal trials and, with ``--cost``, at equal cost?

**Which pairs are independent, and the bound on a false resolved budget.** A report states, for
each pair, the chance of any false resolved budget (:mod:`showwork.statistics.comparison`): at
most 1 − c² when the two bands are independent, 2(1 − c) (the union bound) otherwise.

- ``--by``: the values' families are *independent*, so 1 − c². The trials (θ_i, y_i) of one random
  search are i.i.d.; given which trials drew each value (the counts n_v, and positions), the joint
  law of the trials factorizes into one factor per trial, P(y_i | θ_i) P(θ_i | v_i), so the groups
  are independent, and each is an i.i.d. sample of size n_v of the search with the parameter fixed
  at v (the multinomial split of an i.i.d. sample: e.g. Lehmann & Romano, *Testing Statistical
  Hypotheses*, 3rd ed., §2.7, conditioning on a sufficient partition; Lourie et al. 2024 draw Figs.
  17 and 20 this way). Each band holds with probability ≥ c for every fixed n_v, so both hold with
  probability ≥ c² conditionally on the counts, hence unconditionally. (A value dropped for too few
  trials is dropped on its count alone, which the argument conditions on.)
- ``--tuning-risk``: the trials at the default are among all the trials, so the two families share
  trials and their bands are *not* independent: 2(1 − c) (0.4 at c = 0.8, not 0.36). The report
  finds such pairs from the trials themselves (:meth:`FamilyResults.shares_trials`), so the pair's
  sentences, tables and JSON state 2(1 − c), and one of its sentences says why.

A conditional parameter (``when:`` in a search space) is absent from the trials whose condition
failed; those trials belong to no value (``--by``) and to the tuned search only (``--tuning-risk``).
A value whose trials cannot bound even k = 1 (fewer than :func:`~showwork.statistics.trials_needed`
of 1) gets no curve. Each such case is explained in one line (:class:`Split`'s ``notes``).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Sequence

from showwork.errors import InputError
from showwork.report.inputs import FamilyResults

__all__ = ["MAX_BY_VALUES", "Split", "split_by", "tuning_risk_families"]

MAX_BY_VALUES = 20
"""``--by`` takes a categorical or discrete parameter: at most this many distinct values (a continuous
one, e.g. a learning rate, has as many values as trials)."""


@dataclass(frozen=True)
class Split:
    """The families a report draws, and one line per trial set left out or handled apart."""

    families: tuple[FamilyResults, ...]
    notes: tuple[str, ...] = ()


def _values(results: FamilyResults, param: str) -> list[Any]:
    if not results.params or not any(param in p for p in results.params):
        recorded = sorted({key for p in results.params for key in p})
        raise InputError(f"{results.name} ({results.source}): no trial recorded the parameter {param!r}"
                         f" (recorded: {', '.join(recorded) or 'none'}; a results file: the column is read as one)")
    return [p.get(param) for p in results.params]


def _order(value: Any) -> tuple:
    return (0, float(value), "") if isinstance(value, (int, float)) and not isinstance(value, bool) else (1, 0.0, str(value))


def _shown(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _absent_note(results: FamilyResults, param: str, absent: int, where: str) -> str:
    return (f"{results.name}: {absent} of {results.n_trials} trials did not draw {param} (a conditional parameter,"
            f" `when:`, absent where its condition fails, or an empty cell); {where}.")


def split_by(families: Sequence[FamilyResults], param: str, min_trials: int) -> Split:
    """One family per value of ``param`` in each of ``families`` (values in increasing order).

    Parameters
    ----------
    families : sequence of FamilyResults
        Usually one search; with several, each value's family is named after its search too.
    param : str
        A categorical or discrete hyperparameter (at most ``MAX_BY_VALUES`` distinct values).
    min_trials : int
        A value with fewer trials gets no curve (its bands could not bound k = 1); a note says so.

    Raises
    ------
    InputError
        No trial recorded ``param``, it has more than ``MAX_BY_VALUES`` values, or no value keeps a curve.
    """
    out: list[FamilyResults] = []
    notes: list[str] = []
    for results in families:
        values = _values(results, param)
        rows: dict[Any, list[int]] = {}
        for i, value in enumerate(values):
            if value is not None and not (isinstance(value, float) and math.isnan(value)):
                rows.setdefault(value, []).append(i)
        if len(rows) > MAX_BY_VALUES:
            raise InputError(f"{results.name}: {param} took {len(rows)} distinct values; --by takes a categorical or"
                             f" discrete parameter (at most {MAX_BY_VALUES} values)")
        absent = results.n_trials - sum(len(r) for r in rows.values())
        if absent:
            notes.append(_absent_note(results, param, absent, "they belong to no value's curve"))
        prefix = f"{results.name} " if len(families) > 1 else ""
        for value in sorted(rows, key=_order):
            name = f"{prefix}{param}={_shown(value)}"
            if len(rows[value]) < min_trials:
                notes.append(f"{name}: only {len(rows[value])} trials, too few for a band that bounds even k = 1"
                             f" (at least {min_trials} at these settings); no curve.")
                continue
            out.append(results.subset(rows[value], name))
    if not out:
        raise InputError(f"--by {param}: no value has the {min_trials} trials a curve needs")
    return Split(tuple(out), tuple(notes))


def _matches(value: Any, default: str) -> bool:
    """Whether a recorded value is the default as typed: numbers by value (3 is 3.0), booleans in any case, text as is."""
    if isinstance(value, bool):
        return str(value).lower() == default.strip().lower()
    if isinstance(value, (int, float)):
        try:
            return float(default) == float(value)
        except ValueError:
            return False
    return str(value) == default


def tuning_risk_families(families: Sequence[FamilyResults], param: str, default: str, min_trials: int) -> Split:
    """Each search twice: every trial (tuning ``param`` with the rest), and the trials at ``param = default``.

    The second family holds i.i.d. draws of the same search with ``param`` fixed at its default, so
    the two curves say what tuning ``param`` buys (or costs: the tuned search spends trials on bad
    values) at each budget (Weerts et al. 2020's tuning risk; Lourie et al. 2024, Fig. 4). The two
    families share trials, so each band holds at its confidence but the two are not independent:
    the pair's bound on a false resolved budget is 2(1 − c), not 1 − c² (the module docstring). The
    families say so (``origin``: :meth:`FamilyResults.shares_trials`), and the pair's sentences say why
    (:func:`~showwork.report.wording.shared_trials_text`).

    Raises
    ------
    InputError
        No trial recorded ``param``, or too few drew ``default`` (the message lists the values drawn).
    """
    out: list[FamilyResults] = []
    notes: list[str] = []
    for results in families:
        values = _values(results, param)
        rows = [i for i, value in enumerate(values) if value is not None and _matches(value, default)]
        prefix = f"{results.name}: " if len(families) > 1 else ""
        if len(rows) < min_trials:
            seen = ", ".join(f"{_shown(v)} ({values.count(v)})" for v in sorted({v for v in values if v is not None}, key=_order))
            raise InputError(f"{results.name}: {len(rows)} trials drew {param}={default}, fewer than the {min_trials} a curve"
                             f" needs (values drawn, with their trials: {seen})")
        absent = sum(1 for v in values if v is None)
        if absent:
            notes.append(_absent_note(results, param, absent, "they count in the tuned search only"))
        out.append(dataclasses.replace(results.subset(range(results.n_trials), f"{prefix}tuning {param}"), reruns=results.reruns))
        out.append(results.subset(rows, f"{prefix}{param}={default} (default)"))
    return Split(tuple(out), tuple(notes))

"""What a report says, format-neutral: its summary, figure captions, tables and sources (:func:`report_document`),
and every number as JSON data (:func:`report_json`).

Pure functions of the computed :class:`~showwork.report.contents.Report`; :mod:`~showwork.report.output`
writes them (rendered by :mod:`~showwork.report.render` and :mod:`~showwork.report.latex`). What a
report shows of where its trials came from is :func:`~showwork.report.links.shown_source`'s: no folder
of the user's machine.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from showwork.constants import DEFAULT_FIGURE_CURVES
from showwork.report.checklist import ChecklistItem, checklist_tables
from showwork.report.contents import Report
from showwork.report.extrapolated import extrapolation_table
from showwork.report.figures import EXTRAPOLATION_FIGURE, PAGE_SIZE, PAGED_UP_TO, SCORES_BY_PARAMETER
from showwork.report.inputs import iid_caveat, iid_caveats
from showwork.report.links import family_links, runs_line, shown_source
from showwork.report.render import Document
from showwork.report.tables import failures_sentence, report_tables
from showwork.report.wording import extrapolation_paragraph

__all__ = ["FIGURE_CAPTIONS", "figure_caption", "report_document", "report_json"]

FIGURE_CAPTIONS = {
    "tuning_curves": "Tuning curves (x: trials).",
    "tuning_curves_time": "Tuning curves against expected compute (k × cost per trial).",
    "cdfs": "Distribution of validation scores: empirical CDF with its simultaneous band.",
    "comparison": "Comparison: evidence by budget range (none / weak / fair / strong; only strong evidence within both"
    " informative budgets is resolved, with a stated error bound).",
    "comparison_cost": "Comparison at equal cost: each family at k = c / its cost per trial (the cost of all its trials,"
    " failed ones included, over the trials its curve counts), with the evidence by cost range (none / weak / fair /"
    " strong; resolved as in the comparison).",
    SCORES_BY_PARAMETER: "Validation score of every trial against each hyperparameter's value (log axes for"
    " log-scale distributions, categorical values as strips; failed and timed-out trials as x on the bottom edge).",
    EXTRAPOLATION_FIGURE: "Extrapolated tuning curve: the observed median curve with its nonparametric band, the band"
    " extrapolated past the informative budget (hatched, dashed ends: model-based, it holds only if the tail of the"
    " scores is noisy-quadratic, Lourie, He & Cho 2025) and the asymptote with its interval.",
    "summary": "Every family ranked by its curve at the ranking budget, with its band, and the evidence that the best"
    " family beats it at each budget (none / weak / fair / strong).",
}
_PAGE = re.compile(r"(?P<kind>.+)_page(?P<page>[0-9]+)")
_EXTRAPOLATED = re.compile(rf"{EXTRAPOLATION_FIGURE}_(?P<family>[0-9]+)")


def _drawn(curves: Sequence[str]) -> str:
    """What the tuning-curve figures draw of each family, in words: "median with its simultaneous band, V and U"."""
    words = {"median": "median with its simultaneous band", "v": "V", "u": "U", "mean": "mean-curve band"}
    parts = [words[c] for c in curves]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def figure_caption(name: str, report: Report, per_page: int = PAGE_SIZE, curves: Sequence[str] = DEFAULT_FIGURE_CURVES) -> str:
    """The caption of figure ``name``; a page of small multiples (``<kind>_page<i>``) says which families it shows
    (``per_page`` to a page: :func:`~showwork.report.figures.page_grid` of the figures' size); a tuning-curve
    figure what it draws of each family (``curves``, ``FigureStyle.curves``)."""
    extrapolated = _EXTRAPOLATED.fullmatch(name)
    if extrapolated is not None:  # one figure per family, named by its position
        family = report.families[int(extrapolated["family"]) - 1]
        return f"{family.name}: {FIGURE_CAPTIONS[EXTRAPOLATION_FIGURE][0].lower()}{FIGURE_CAPTIONS[EXTRAPOLATION_FIGURE][1:]}"
    page = _PAGE.fullmatch(name)
    kind = page["kind"] if page is not None else name
    caption = FIGURE_CAPTIONS.get(kind, kind)
    if kind in ("tuning_curves", "tuning_curves_time"):
        caption = f"{caption[:-1]}: each family's {_drawn(curves)}."
    if name == "summary" and len(report.families) > PAGED_UP_TO:
        return (f"{caption} The pages of small multiples show the {PAGED_UP_TO} best-ranked of the"
                f" {len(report.families):,} families; the tables list every one.")
    if page is None:
        return caption
    if kind == SCORES_BY_PARAMETER:  # pages of parameters, not of families
        return f"{caption} Page {page['page']}."
    first = (int(page["page"]) - 1) * per_page + 1
    last = min(first + per_page - 1, len(report.families))
    return f"{caption} Families ranked {first}–{last} of {len(report.families)}."


def _summary_paragraphs(report: Report) -> tuple[str, ...]:
    s = report.settings
    names = ", ".join(f.name for f in report.families)
    metrics = ", ".join(dict.fromkeys(f.results.metric for f in report.families))
    quantile = "median" if s.quantile == 0.5 else f"{s.quantile:g}-quantile"
    caveats = _iid_caveats(report)
    out = [
        f"{'Search' if caveats else 'Random-search'} results of {names}; score: {metrics} ({'lower' if report.minimize else 'higher'} is better)."
        f" The {quantile} tuning curve — the score a search of k trials reaches with probability 1/2 — is shown"
        f" with exact, distribution-free {s.confidence:.0%} simultaneous {s.method.upper()} bands"
        " (Lourie, Cho & He 2024), next to the V (Dodge et al. 2019) and U (Tang et al. 2020) estimates of the"
        " expected best score.",
    ]
    # Trials not shown to be i.i.d. random draws (an Optuna study's TPE sampler, ...): said up front.
    out[0] += "".join(f" Not i.i.d.: {caveat}" for caveat in caveats)
    out.extend(report.notes)  # --by / --tuning-risk: trials left out or counted apart, one line each
    if report.race is not None and report.race.looks:
        shown = report.race.looks[-1].look
        out.append(f"These are the first {shown} trials of each model (by trial index), where race {report.race.name}"
                   f" {'stopped' if report.race.status != 'running' else 'has got to'}; its bands are the schedule's joint"
                   " ones (see Sequential comparison).")
    for f in report.families:
        out.append(f"{f.name}: {failures_sentence(f)} (failure policy {f.curve.failures.policy}). {f.advice.text()}")
    out += [f"{f.name}: {extrapolation_paragraph(f.extrapolation)}" for f in report.families if f.extrapolation is not None]
    if report.reference is not None:
        out.append(
            f"With {len(report.families)} families, each is compared with the best one, {report.reference} (ranked by"
            f" the {quantile} curve at k = {report.ranking_k:g}, the largest budget every family's bands can speak about),"
            " rather than every pair."
        )
    for p in report.pairs:
        out.append(f"{p.comparison.a} vs {p.comparison.b}: " + " ".join(p.sentences()))
    if report.cost is not None:  # the cost view beside the trial view
        out.append(report.cost.note())
        for p in report.cost.pairs:
            out.append(f"{p.comparison.a} vs {p.comparison.b} at equal cost: " + " ".join(p.sentences()))
    return tuple(out)


def _iid_caveats(report: Report) -> list[str]:
    return iid_caveats([f.results for f in report.families])


def report_document(report: Report, figures: dict[str, list[Path]], checklist: Sequence[ChecklistItem],
                    per_page: int = PAGE_SIZE, curves: Sequence[str] = DEFAULT_FIGURE_CURVES) -> Document:
    """Assemble the format-neutral document: summary, figures, tables, checklists (from :func:`build_checklist`).

    ``per_page`` and ``curves``: the figures' (:func:`figure_caption`)."""
    extrapolated = extrapolation_table(report)  # after the result tables, before the checklists
    tables = report_tables(report) + ((extrapolated,) if extrapolated else ()) + checklist_tables(checklist)
    shown = tuple(
        (figure_caption(name, report, per_page, curves), paths[0].with_suffix(""))
        for name, paths in figures.items()
        if any(p.suffix == ".png" for p in paths)
    )
    title = "Tuning report: " + " vs ".join(f.name for f in report.families)
    # each family's source, then where its runs are (the parent run; its runs table where there is an address)
    sources = tuple(line for f in report.families
                    for line in (f"{f.name}: {shown_source(f.results.source)}", runs_line(f.name, f.results)) if line)
    return Document(title, _summary_paragraphs(report), shown, tables, sources)


def _jsonable(value):
    """Plain JSON data: numpy arrays to lists, non-finite floats to None."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, np.generic):
        return _jsonable(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def report_json(report: Report, checklist: Sequence[ChecklistItem]) -> dict:
    """Every number of the report, and its checklists (from :func:`build_checklist`), as JSON-ready data."""
    families = []
    for f in report.families:
        links = family_links(f.results)
        families.append(
            {
                "name": f.name,
                "source": shown_source(f.results.source),
                "metric": f.results.metric,
                "summary": dataclasses.asdict(f.summary),
                "advice": dataclasses.asdict(f.advice) | {"text": f.advice.text()},
                "targets": {str(t): reach for t, reach in f.targets.items()},
                "curve": f.curve.to_dict(report.settings.cost_unit),
                "table_curve": f.table_curve.to_dict(report.settings.cost_unit),
                "reruns": [dataclasses.asdict(rerun) for rerun in f.results.reruns],
                "not_iid": iid_caveat(f.results),
                "mlflow": None if links is None else links.to_dict(),  # the parent run; its runs table when known
                # ReportSettings.extrapolate: the Extrapolation's own JSON, or {"refused": reason, "tail_fraction": F}; None: not asked
                "extrapolation": None if f.extrapolation is None else f.extrapolation.to_dict(),
            }
        )
    pairs = [p.comparison.to_dict() | {"informative_k": p.informative_k, "sentences": p.sentences()} for p in report.pairs]
    return _jsonable(
        {
            "settings": dataclasses.asdict(report.settings),
            "minimize": report.minimize,
            "table_budgets": list(report.table_budgets),
            "ranking": {"k": report.ranking_k, "families": list(report.ranking), "reference": report.reference},
            "families": families,
            "pairs": pairs,
            "cost": _cost_json(report),
            "notes": list(report.notes),
            "race": None if report.race is None else report.race.to_dict() | {"saved_trials_per_model": report.race.saved_trials()},
            "checklist": [dataclasses.asdict(item) for item in checklist],
        }
    )


def _cost_json(report: Report) -> dict | None:
    """The cost view: mean cost per trial, the cost axis, each family's budgets on it, and the pairs."""
    view = report.cost
    if view is None:
        return None
    return {
        "cost": view.cost,
        "unit": view.unit,
        "mean_costs": view.mean_costs,
        "trials_with_cost": view.known,
        "axis": view.axis,
        "budgets": {f.name: f.cost_curve.k for f in report.families if f.cost_curve is not None},
        "pairs": [p.comparison.to_dict() | {"k_a": p.comparison.k_a, "k_b": p.comparison.k_b, "sentences": p.sentences()}
                  for p in view.pairs],
        "note": view.note(),
    }

"""Write a report to a directory, and attach it to the searches' MLflow parent runs.

``--out DIR`` receives::

    report.md            the report in Markdown (figures linked as PNG)
    report.html          one self-contained page (figures embedded)
    report.json          every number, for scripts
    latex/<table>.tex    one LaTeX table snippet per table and checklist (booktabs)
    figures/<name>.png   and .svg, .pdf: tuning curves, CDFs, comparison

This module is the edge where files are written; everything it writes is computed by the pure
modules :mod:`~showwork.report.analysis`, :mod:`~showwork.report.tables`,
:mod:`~showwork.report.checklist`, :mod:`~showwork.report.figures` and :mod:`~showwork.report.render`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from showwork.errors import InputError
from showwork.report.analysis import Report
from showwork.report.checklist import ChecklistItem, build_checklist, checklist_tables
from showwork.report.render import Document, html_document, latex_snippets, markdown_document
from showwork.report.tables import report_tables

__all__ = ["ReportFiles", "log_report", "report_document", "report_json", "write_report"]

FIGURE_CAPTIONS = {
    "tuning_curves": "Tuning curves: median with its simultaneous band, V and U estimates (x: trials).",
    "tuning_curves_time": "Tuning curves against expected compute (k × mean runtime).",
    "cdfs": "Distribution of validation scores: empirical CDF with its simultaneous band.",
    "comparison": "Comparison: evidence by budget range (none / weak / fair / strong).",
}


@dataclass(frozen=True)
class ReportFiles:
    """The files a report wrote."""

    directory: Path
    markdown: Path
    html: Path
    json: Path
    latex: dict[str, Path] = field(default_factory=dict)
    figures: dict[str, list[Path]] = field(default_factory=dict)

    def all(self) -> list[Path]:
        out = [self.markdown, self.html, self.json, *self.latex.values()]
        for paths in self.figures.values():
            out.extend(paths)
        return out


def _summary_paragraphs(report: Report) -> tuple[str, ...]:
    s = report.settings
    names = ", ".join(f.name for f in report.families)
    metrics = ", ".join(dict.fromkeys(f.results.metric for f in report.families))
    quantile = "median" if s.quantile == 0.5 else f"{s.quantile:g}-quantile"
    out = [
        f"Random-search results of {names}; score: {metrics} ({'lower' if report.minimize else 'higher'} is better)."
        f" The {quantile} tuning curve — the score a search of k trials reaches with probability 1/2 — is shown"
        f" with exact, distribution-free {s.confidence:.0%} simultaneous {s.method.upper()} bands"
        " (Lourie, Cho & He 2024), next to the V (Dodge et al. 2019) and U (Tang et al. 2020) estimates of the"
        " expected best score.",
    ]
    for f in report.families:
        out.append(f"{f.name}: {f.curve.failures.describe()} (failure policy {f.curve.failures.policy}). {f.advice.text()}")
    for p in report.pairs:
        out.append(f"{p.comparison.a} vs {p.comparison.b}: " + " ".join(p.sentences()))
    return tuple(out)


def report_document(report: Report, figures: dict[str, list[Path]], checklist: Sequence[ChecklistItem]) -> Document:
    """Assemble the format-neutral document: summary, figures, tables, checklists (from :func:`build_checklist`)."""
    tables = report_tables(report) + checklist_tables(checklist)
    shown = tuple(
        (FIGURE_CAPTIONS.get(name, name), paths[0].with_suffix(""))
        for name, paths in figures.items()
        if any(p.suffix == ".png" for p in paths)
    )
    title = "Tuning report: " + " vs ".join(f.name for f in report.families)
    sources = tuple(f"{f.name}: {f.results.source}" for f in report.families)
    return Document(title, _summary_paragraphs(report), shown, tables, sources)


def _jsonable(value):
    """Plain JSON data: numpy arrays to lists, non-finite floats to None."""
    import numpy as np

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
        families.append(
            {
                "name": f.name,
                "source": f.results.source,
                "metric": f.results.metric,
                "summary": dataclasses.asdict(f.summary),
                "advice": dataclasses.asdict(f.advice) | {"text": f.advice.text()},
                "targets": {str(t): reach for t, reach in f.targets.items()},
                "curve": f.curve.to_dict(report.settings.cost_unit),
                "table_curve": f.table_curve.to_dict(report.settings.cost_unit),
            }
        )
    pairs = [p.comparison.to_dict() | {"informative_k": p.informative_k, "sentences": p.sentences()} for p in report.pairs]
    return _jsonable(
        {
            "settings": dataclasses.asdict(report.settings),
            "minimize": report.minimize,
            "table_budgets": list(report.table_budgets),
            "families": families,
            "pairs": pairs,
            "checklist": [dataclasses.asdict(item) for item in checklist],
        }
    )


def write_report(
    report: Report,
    directory: str | os.PathLike,
    *,
    figure_formats: tuple[str, ...] = ("png", "svg", "pdf"),
    log_x: bool = False,
) -> ReportFiles:
    """Write every output of ``report`` under ``directory`` (created if needed).

    Existing report files there are replaced; nothing else in the directory is touched.

    Raises
    ------
    InputError
        ``directory`` exists and is not a directory, or cannot be written.
    """
    from showwork.report.figures import report_figures

    out = Path(directory)
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out}: exists and is not a directory.")
    formats = tuple(dict.fromkeys(("png", *figure_formats)))  # the documents embed or link the PNGs
    try:
        out.mkdir(parents=True, exist_ok=True)
        _remove_previous(out)
        figures = report_figures(report, out / "figures", formats=formats, log_x=log_x)
        checklist = build_checklist(report)
        doc = report_document(report, figures, checklist)
        markdown = _write(out / "report.md", markdown_document(doc, out))
        page = _write(out / "report.html", html_document(doc))
        data = _write(out / "report.json", json.dumps(report_json(report, checklist), indent=2, ensure_ascii=False) + "\n")
        latex = {key: _write(out / "latex" / f"{key}.tex", text) for key, text in latex_snippets(doc.tables).items()}
    except OSError as error:
        raise InputError(f"--out {out}: cannot write the report ({error.strerror or error}).") from None
    return ReportFiles(out, markdown, page, data, latex, figures)


def _remove_previous(out: Path) -> None:
    """Remove the files an earlier report wrote here, so none of them outlives this one.

    Only names this module writes are touched (a comparison figure of an earlier two-family report,
    a LaTeX table that no longer applies); anything else in the directory stays.
    """
    stale = [out / name for name in ("report.md", "report.html", "report.json")]
    stale += [p for p in (out / "figures").glob("*.*") if p.stem in FIGURE_CAPTIONS]
    stale += [p for p in (out / "latex").glob("*.tex") if _generated_latex(p)]
    for path in stale:
        if path.is_file():
            path.unlink()


def _generated_latex(path: Path) -> bool:
    with path.open(encoding="utf-8", errors="replace") as handle:
        return handle.readline().rstrip().endswith("generated by showwork report")


def _write(path: Path, text: str) -> Path:
    """Write atomically: a reader never sees half a report file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.tmp")
    temp.write_text(text, encoding="utf-8")
    os.replace(temp, path)
    return path


def log_report(report: Report, files: ReportFiles, artifact_path: str = "report") -> list[str]:
    """Log the report directory as artifacts of every search's MLflow parent run.

    Families read from a ledger know their tracking URI and parent run; results files do not and
    are skipped. Returns the run ids logged to.

    Raises
    ------
    showwork.tracking.TrackingUnavailableError
        The tracking store cannot be reached (after retries).
    """
    from showwork.tracking import Tracker

    done: list[str] = []
    for f in report.families:
        uri, run_id = f.results.meta.get("tracking_uri"), f.results.meta.get("parent_run_id")
        if not uri or not run_id or run_id in done:
            continue
        experiment = (f.results.spec or {}).get("name") or f.results.meta.get("experiment") or f.name
        Tracker(uri, experiment).log_report(run_id, files.directory, artifact_path)
        done.append(run_id)
    return done

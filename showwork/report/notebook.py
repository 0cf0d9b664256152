"""What the Python API's results show in a notebook: a short ``__repr__`` and Jupyter's ``_repr_html_``.

Jupyter shows an object by its ``_repr_html_``, a terminal by its ``__repr__``. This module writes both for a
search (:class:`SearchView`, what :class:`showwork.api.Search` shows), its tuning curve (:class:`SearchCurve`), a
comparison (:class:`SearchComparison`) and a report's files (:class:`~showwork.report.output.ReportFiles`): the
report's own tables (:mod:`showwork.report.tables`, written by :func:`showwork.report.render.html_table`), the
sentences the report writes, and the report's own figure (drawn by :mod:`showwork.report.figures`, at
:data:`~showwork.constants.NOTEBOOK_FIGURE_SIZE`) inline as a base64 PNG, which carries no markup; matplotlib loads
only when a figure is shown. Every text of
the user's (a name, a parameter's name or value, a path) goes through :func:`showwork.escaping.html_text`, once,
as it enters the HTML. Nothing here reads MLflow or starts Ray; a figure is drawn from what is computed already
(a comparison's report) or from the search's scores (one family: milliseconds to a second), and a search with no
score to draw shows why instead.
"""

from __future__ import annotations

import base64
import os
import urllib.parse
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from showwork.constants import NOTEBOOK_FIGURE_SIZE, NOTEBOOK_TOP_TRIALS
from showwork.errors import InputError, ShowworkError
from showwork.escaping import html_text
from showwork.recorded import recorded_records, recorded_spec
from showwork.report.analysis import analyze, budget_grid, family_curve, family_extrapolation
from showwork.report.contents import PairAnalysis, Report
from showwork.report.extrapolated import extrapolation_table
from showwork.report.inputs import FamilyResults, from_ledger
from showwork.report.render import html_table
from showwork.report.settings import ReportSettings
from showwork.report.tables import (
    Table,
    best_configuration_table,
    comparison_table,
    family_table,
    format_duration,
    format_number,
    tuning_curve_table,
)
from showwork.report.wording import budget_text, extrapolation_paragraph, percent_text
from showwork.run.summary import trial_counts
from showwork.selection import ranked_trials
from showwork.statistics import TuningCurve
from showwork.statistics.extrapolation import Extrapolation, ExtrapolationRefused
from showwork.store import TrialRecord

if TYPE_CHECKING:
    from showwork.report.output import ReportFiles

__all__ = ["SearchComparison", "SearchCurve", "SearchView", "figure_html", "report_files_html", "report_files_text",
           "search_html", "search_text", "search_view"]

_MAIN_FIGURES = ("tuning_curves", "summary")
"""A report's main figure: its tuning curves, or with many families the summary that stands for them."""


def _png_html(png: bytes, alt: str) -> str:
    width = round(NOTEBOOK_FIGURE_SIZE[0] * 96)  # CSS pixels: the figure at its size in inches
    data = base64.b64encode(png).decode("ascii")
    return f'<img src="data:image/png;base64,{data}" alt="{html_text(alt)}" width="{width}" style="max-width:100%">'


def figure_html(report: Report, name: str) -> str:
    """The report's figure ``name`` (``tuning_curves``, ``comparison``: :func:`report_drawings`) as an inline PNG;
    empty when the report has no such figure. The report's figures as they always are, at a notebook's size."""
    # lazy: matplotlib (0.4 s) loads when a figure is shown, not when Search.curve() or compare() computes
    from showwork.report.figures.saving import figure_png, report_drawings
    from showwork.report.figures.style import FigureStyle

    style = FigureStyle(figsize=NOTEBOOK_FIGURE_SIZE)
    with style.rc_context():
        draw = dict(report_drawings(report, style=style)).get(name)
        figure = None if draw is None else draw()
        if figure is None:
            return ""
        return _png_html(figure_png(figure), f"figure {name}")


def _problem_html(what: str, problem: str) -> str:
    return f"<p><em>no {what}: {html_text(problem)}</em></p>"


# ------------------------------------------------------------------ a search


@dataclass(frozen=True)
class SearchView:
    """What a search shows of itself: its counts, its best trials, and the report of its scores (None: no score yet).

    ``best`` holds the best finished trials, best first; ``problem`` says why there is no figure when ``report``
    is None and the search has records (every trial failed; a failure policy that refuses them).
    """

    name: str
    storage: Path
    metric: str
    mode: str
    num_trials: int
    finished: int
    failed: int
    timeout: int
    best: tuple[TrialRecord, ...] = ()
    report: Report | None = None
    problem: str | None = None

    def counts_text(self) -> str:
        """E.g. "7 finished, 1 failed of 8 trials" (timed-out trials named when there are some)."""
        timeout = f", {self.timeout} timed out" if self.timeout else ""
        return f"{self.finished} finished, {self.failed} failed{timeout} of {self.num_trials} trials"

    def best_text(self) -> str:
        """E.g. "best val_accuracy 0.72 (trial 1)", or "no finished trial with a score"."""
        if not self.best:
            return "no finished trial with a score"
        top = self.best[0]
        return f"best {self.metric} {format_number(top.score)} (trial {top.index})"

    def text(self) -> str:
        """The plain ``__repr__``: one line."""
        return f"Search({self.name!r}, storage={str(self.storage)!r}): {self.counts_text()}; {self.best_text()}"

    def best_trials_table(self) -> Table:
        """The best trials, best first: their scores and runtimes."""
        rows = tuple((str(r.index), format_number(r.score), format_number(r.test_score), format_duration(r.runtime_s))
                     for r in self.best)
        return Table("best_trials", f"The {len(self.best)} best trials", ("trial", self.metric, "test score", "runtime"),
                     rows, (), (True, True, True, True))

    def html(self) -> str:
        """The ``_repr_html_``: the name and counts; the report's tables of the trials and of the best configuration,
        the best trials, and the report's tuning-curve figure."""
        parts = [f"<p><strong>{html_text(self.name)}</strong> ({html_text(str(self.storage))}):"
                 f" {html_text(self.counts_text())}; {html_text(self.best_text())}"
                 f" ({'higher' if self.mode == 'max' else 'lower'} is better)</p>"]
        if self.report is not None:
            parts += [html_table(family_table(self.report)), html_table(best_configuration_table(self.report))]
        if self.best:
            parts.append(html_table(self.best_trials_table()))
        if self.report is not None:
            parts.append(figure_html(self.report, "tuning_curves"))
        elif self.problem:
            parts.append(_problem_html("tuning curve", self.problem))
        return f'<div class="showwork-search">{"".join(parts)}</div>'


def search_view(storage: Path, name: str, *, figure: bool) -> SearchView:
    """What the search ``name`` of ``storage`` shows of itself, read from its ledger (with its tuning curve's report
    when ``figure`` and a trial has a score).

    Raises
    ------
    InputError
        No such search; a ledger that is not the search's own (:func:`showwork.recorded.recorded_records`).
    """
    spec = recorded_spec(storage, name)
    records = list(recorded_records(storage, name)[1])
    counts = trial_counts(records, spec.num_trials, spec.metric.mode)
    best = tuple(ranked_trials(records, spec.metric.mode)[:NOTEBOOK_TOP_TRIALS])
    report = problem = None
    if figure and best:
        try:
            report = analyze([from_ledger(storage, name)], ReportSettings())
        except InputError as error:  # e.g. a failure policy ("error") that refuses the failed trials
            problem = str(error)
    elif records and not best:
        problem = "no trial finished with a finite score"
    return SearchView(name, Path(storage), spec.metric.name, spec.metric.mode, spec.num_trials, counts.finished,
                      counts.failed, counts.timeout, best, report, problem)


def search_text(storage: Path, name: str) -> str:
    """A search's plain ``__repr__`` (:meth:`SearchView.text`); where there is no such search yet, it says so."""
    try:
        return search_view(storage, name, figure=False).text()
    except ShowworkError as error:  # a repr never raises
        return f"Search({name!r}, storage={str(storage)!r}): {error}"


def search_html(storage: Path, name: str) -> str:
    """A search's ``_repr_html_`` (:meth:`SearchView.html`); where there is no such search yet, it says so."""
    try:
        return search_view(storage, name, figure=True).html()
    except ShowworkError as error:
        return f"<p>{html_text(search_text(storage, name))}</p><p><em>{html_text(str(error))}</em></p>"


# ------------------------------------------------------------------ a tuning curve


@dataclass(frozen=True, repr=False, eq=False)
class SearchCurve(TuningCurve):
    """A search's tuning curve (:meth:`showwork.api.Search.curve`): a :class:`~showwork.statistics.TuningCurve`
    that shows itself, with the search's scores (``results``) and the report's ``settings`` it was computed with,
    from which its figure is drawn. With ``settings.extrapolate`` K, ``extrapolation`` holds the curve extrapolated
    to K (:class:`~showwork.statistics.extrapolation.Extrapolation`, model-based past the informative budget) or
    why not (:class:`~showwork.statistics.extrapolation.ExtrapolationRefused`); None when not asked."""

    results: FamilyResults | None = field(default=None, compare=False)
    settings: ReportSettings | None = field(default=None, compare=False)
    extrapolation: Extrapolation | ExtrapolationRefused | None = field(default=None, compare=False)

    @classmethod
    def of(cls, settings: ReportSettings, results: FamilyResults) -> SearchCurve:
        """The curve ``showwork report`` draws of ``results`` with ``settings``: at ``settings.budgets`` (sorted, each
        once) if given, else on the report's grid up to the number of trials (:func:`budget_grid`)."""
        budgets = np.unique(np.asarray(settings.budgets, dtype=float)) if settings.budgets else budget_grid(results.n_trials)
        curve = family_curve(results, settings, budgets)
        return cls(**{f.name: getattr(curve, f.name) for f in fields(curve)}, results=results, settings=settings,
                   extrapolation=family_extrapolation(results, settings, curve))

    def summary_text(self) -> str:
        """E.g. "median tuning curve of 8 trials (1 failed, policy worst), k = 1–8, 80% LD-HD bands"."""
        what = "median" if self.quantile == 0.5 else f"{self.quantile:g}-quantile"
        failed = self.failures.n_failed
        failures = f" ({failed} failed, policy {self.failures.policy})" if failed else ""
        span = f"k = {budget_text(float(self.k[0]))}–{budget_text(float(self.k[-1]))}" if self.k.size else "no budget"
        extrapolated = ""
        if isinstance(self.extrapolation, Extrapolation):
            extrapolated = f", extrapolated to k = {self.extrapolation.K} (model-based past k ≈ {budget_text(self.extrapolation.informative_k)})"
        elif self.extrapolation is not None:
            extrapolated = ", not extrapolated (refused)"
        return (f"{what} tuning curve of {self.failures.n_trials} trials{failures}, {span},"
                f" {percent_text(self.band.confidence)} {self.band.method.upper()} bands{extrapolated}")

    def __repr__(self) -> str:
        return f"SearchCurve({self.name!r}: {self.summary_text()})"

    def _report_html(self) -> str:
        """The report's table of the curve (at its table budgets) and its figure (at the curve's budgets)."""
        if self.results is None or self.settings is None or not self.k.size:
            return ""
        settings = replace(self.settings, budgets=tuple(float(k) for k in self.k))
        try:  # the extrapolation is the curve's own (computed once, by Search.curve): not fitted again for its view
            report = analyze([self.results], replace(settings, extrapolate=None, tail_fraction=None))
        except InputError as error:
            return _problem_html("table or figure", str(error))
        report = replace(report, settings=settings, families=(replace(report.families[0], extrapolation=self.extrapolation),))
        html = html_table(tuning_curve_table(report)) + figure_html(report, "tuning_curves")
        if self.extrapolation is not None:  # the extrapolated part: its words, its table, its figure
            # lazy: matplotlib (0.4 s) loads when a figure is shown, not when Search.curve() computes
            from showwork.report.figures.extrapolation import EXTRAPOLATION_FIGURE

            table = extrapolation_table(report)
            html += (f"<p>{html_text(extrapolation_paragraph(self.extrapolation))}</p>" + (html_table(table) if table else "")
                     + figure_html(report, f"{EXTRAPOLATION_FIGURE}_1"))
        return html

    def _repr_html_(self) -> str:
        head = f"<p><strong>{html_text(self.name or 'tuning curve')}</strong>: {html_text(self.summary_text())}</p>"
        return f'<div class="showwork-curve">{head}{self._report_html()}</div>'


# ------------------------------------------------------------------ a comparison


@dataclass(frozen=True, repr=False, eq=False)
class SearchComparison(PairAnalysis):
    """A comparison of two searches (:meth:`showwork.api.Search.compare`): a :class:`PairAnalysis` that shows
    itself, with the ``report`` it came from (whose comparison figure it draws)."""

    report: Report | None = field(default=None, compare=False)

    @classmethod
    def of(cls, report: Report) -> SearchComparison:
        """The first pair of ``report`` (of two families: their one pair), with the report."""
        return cls(report.pairs[0].comparison, report.pairs[0].informative_k, report=report)

    def __repr__(self) -> str:
        c = self.comparison
        return "\n".join([f"SearchComparison({c.a!r} vs {c.b!r}):", *(f"  {s}" for s in self.sentences())])

    def _repr_html_(self) -> str:
        c = self.comparison
        head = f"<p><strong>{html_text(c.a)}</strong> vs <strong>{html_text(c.b)}</strong></p>"
        sentences = "<ul>" + "".join(f"<li>{html_text(s)}</li>" for s in self.sentences()) + "</ul>"
        table = self.report and comparison_table(self.report)
        report = "" if not table else html_table(table) + figure_html(self.report, "comparison")
        return f'<div class="showwork-comparison">{head}{sentences}{report}</div>'


# ------------------------------------------------------------------ a report's files


def _href(path: Path) -> str:
    """A link to ``path``: relative to the working directory (a notebook's folder) when under it, else a file URI.

    A relative link starts with "./" and is percent-encoded, so that no folder name ("javascript:...") reads as a
    URL's scheme."""
    resolved = path.resolve()
    try:
        relative = resolved.relative_to(Path.cwd().resolve())
    except ValueError:
        return resolved.as_uri()
    return "./" + urllib.parse.quote(relative.as_posix())


def _main_png(files: ReportFiles) -> Path | None:
    for name in _MAIN_FIGURES:
        png = next((p for p in files.figures.get(name, ()) if p.suffix == ".png"), None)
        if png is not None:
            return png
    return None


def report_files_text(files: ReportFiles) -> str:
    """The plain ``__repr__`` of a report's files: the folder, the documents, how many figures."""
    count = len(files.figures)
    return f"ReportFiles({str(files.directory)!r}: report.html, report.md, report.json, {count} figure{'s' * (count != 1)})"


def report_files_html(files: ReportFiles) -> str:
    """The ``_repr_html_`` of a report's files: a link to ``report.html``, the main figure (its PNG, as written),
    and the files by kind."""
    link = f'<p><a href="{html_text(_href(files.html))}" target="_blank">{html_text(str(files.html))}</a></p>'
    png = _main_png(files)
    figure = ""
    if png is not None and png.is_file():
        figure = _png_html(png.read_bytes(), f"figure {png.stem}")
    rows = [("document", os.path.relpath(p, files.directory)) for p in (files.markdown, files.html, files.json)]
    rows += [("latex", os.path.relpath(p, files.directory)) for p in files.latex.values()]
    rows += [("figure", ", ".join(os.path.relpath(p, files.directory) for p in paths)) for paths in files.figures.values()]
    table = Table("report_files", f"Files in {files.directory}", ("kind", "file"), tuple(rows))
    return f'<div class="showwork-report">{link}{figure}{html_table(table)}</div>'

"""Lourie et al. Figs. 4, 17 and 20: should DeBERTaV3's epochs be tuned on MultiNLI? (`report --by`, `--tuning-risk`)

Usage::

    python -m experiments.epochs_effect [--out DIR]

The data are the 1,024-trial random search of DeBERTaV3 on MultiNLI that Lourie, Cho & He (2024)
released (``$SHOWWORK_DATA_DIR/search-results/deberta-v3-base_mnli_tuning.csv``: the validation
score ``matched_acc_best`` and the hyperparameters, among them ``num_train_epochs`` drawn from 1-4).
Every number comes from the code ``showwork report`` runs (:mod:`showwork.report.by_param`,
:func:`showwork.report.analyze`):

- **Fig. 4** (tuning risk): tuning every hyperparameter (epochs included) against the trials that drew
  the default of 3 epochs, the first 48 trials of each (``--tuning-risk num_train_epochs=3``), 80 %
  LD-HD bands, per trial and at equal cost in epochs (``--cost num_train_epochs``; a tuned trial
  costs 2.35 epochs on average, a default one 3). The paper: "weak evidence that the default wins".
- **Figs. 17 and 20** (the epochs' effect): one curve per number of epochs, the first 245 trials
  that drew each (``--by num_train_epochs``), per trial and at equal cost. The paper: "1 or 2 epochs
  is too low, while 3 or 4 epochs appears to be enough".

The evidence levels are numbered none 0, weak 1, fair 2, strong 3; "strongest" is the strongest
level favouring the named side at a budget (or cost) within both families' informative budgets,
where the bands speak. The study is deterministic (no simulation): ``--quick`` and ``--seed`` change
nothing.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass

import numpy as np

from experiments.common import FAMILIES, PaperComparison, search_results_dir, study_main

STUDY = "epochs_effect"
PARAM = "num_train_epochs"
DEFAULT = "3"
FIG4_TRIALS = 48
FIG17_TRIALS = 245
CONFIDENCE = 0.8
LEVEL_NUMBER = {"none": 0, "weak": 1, "fair": 2, "strong": 3}


@dataclass(frozen=True)
class Result:
    risk: object  # Report: tuned vs default (Fig. 4), with its cost view
    by: object  # Report: one family per number of epochs (Figs. 17, 20), with its cost view
    notes: tuple[str, ...]


def _reports():
    from showwork.report import ReportSettings, analyze, from_results_file
    from showwork.report.by_param import split_by, tuning_risk_families
    from showwork.statistics import trials_needed

    file, score, label = FAMILIES["debertav3"]
    (search,) = from_results_file(search_results_dir() / file, score, params=[PARAM], label=label)
    settings = ReportSettings(confidence=CONFIDENCE, a=0.0, b=1.0, cost=PARAM)
    least = trials_needed(1.0, bands=settings.bands)
    risk = tuning_risk_families([search], PARAM, DEFAULT, least)
    by = split_by([search], PARAM, least)
    first = [(risk, FIG4_TRIALS), (by, FIG17_TRIALS)]
    # Short names (the figure's strip labels): "tune epochs", "default 3 epochs", "epochs=1", ...
    names = {f"tuning {PARAM}": "tune epochs", f"{PARAM}={DEFAULT} (default)": f"default {DEFAULT} epochs"}
    reports = [analyze([f.subset(range(min(n, f.n_trials)), names.get(f.name, f.name.replace(PARAM, "epochs")))
                        for f in split.families], settings) for split, n in first]
    return Result(reports[0], reports[1], risk.notes + by.notes)


def run(quick: bool, seed: int) -> Result:
    return _reports()


def _pair(pairs, a: str, b: str):
    for p in pairs:
        if {p.comparison.a, p.comparison.b} == {a, b}:
            return p.comparison
    raise KeyError((a, b))


def strongest(comparison, winner: str) -> int:
    """The strongest evidence level (0-3) that ``winner`` is better, at a point within both informative budgets."""
    side = 1 if comparison.a == winner else -1
    within = np.asarray(comparison.k, dtype=float) <= comparison.informative_k
    levels = [LEVEL_NUMBER[str(level)] for level, fav, w in zip(comparison.levels, comparison.favoured, within) if w and fav == side]
    return max(levels, default=0)


def _views(report):
    return (("per trial", report.pairs), (f"equal cost ({PARAM})", report.cost.pairs))


def rows(result: Result):
    out = []
    for figure, report in (("Fig. 4", result.risk), ("Figs. 17/20", result.by)):
        for view, pairs in _views(report):
            for p in pairs:
                c = p.comparison
                for r in c.ranges:
                    out.append({"figure": figure, "view": view, "a": c.a, "b": c.b, "from": r.k_start, "to": r.k_end,
                                "evidence": r.level, "favoured": r.favoured or "", "resolved": r.resolved})
    return out


def _epochs(n: int) -> str:
    return f"epochs={n}"


def comparisons(result: Result):
    tuned, default = (f.name for f in result.risk.families)
    paper4 = "weak evidence that the default wins"
    paper17 = "1 or 2 epochs is too low, while 3 or 4 epochs appears to be enough"
    source4, source17 = "Lourie et al. 2024, Fig. 4", "Lourie et al. 2024, Figs. 17, 20"
    out = []
    for view, pairs in _views(result.risk):
        c = _pair(pairs, tuned, default)
        out.append(PaperComparison(f"Fig. 4, {view}: strongest evidence (0-3) that the default 3 epochs beats tuning them",
                                   strongest(c, default), paper4, 1, 1, source4))
        out.append(PaperComparison(f"Fig. 4, {view}: strongest evidence (0-3) that tuning the epochs beats the default",
                                   strongest(c, tuned), paper4, 0, 0, source4))
    for view, pairs in _views(result.by):
        for low, high in ((1, 2), (2, 3), (2, 4)):
            c = _pair(pairs, _epochs(low), _epochs(high))
            out.append(PaperComparison(f"Figs. 17/20, {view}: strongest evidence (0-3) that {high} epochs beat {low}",
                                       strongest(c, _epochs(high)), paper17, 2, 3, source17))
        c = _pair(pairs, _epochs(3), _epochs(4))
        out.append(PaperComparison(f"Figs. 17/20, {view}: strongest evidence (0-3) either way between 3 and 4 epochs",
                                   max(strongest(c, _epochs(3)), strongest(c, _epochs(4))), paper17, 0, 1, source17))
    return out


def figure(result: Result):
    from showwork.report.figures import cost_comparison_figure

    return cost_comparison_figure(result.risk)


def notes(result: Result):
    risk, by = result.risk, result.by
    means = "; ".join(f"{name} {m:.2f}" for name, m in risk.cost.mean_costs.items())
    lines = [
        f"Data: the first {FIG4_TRIALS} trials of the tuned search and of the trials at 3 epochs (Fig. 4), the first"
        f" {FIG17_TRIALS} trials at each number of epochs (Figs. 17/20); {CONFIDENCE:.0%} LD-HD bands; mean epochs per trial: {means}."
        " Levels: none 0, weak 1, fair 2, strong 3, within both informative budgets. The figure is Fig. 4 at equal cost.",
    ]
    for title, report in (("Fig. 4", risk), ("Figs. 17/20", by)):
        for view, pairs in _views(report):
            for p in pairs:
                lines.append(f"- {title}, {view}, {p.comparison.a} vs {p.comparison.b}: " + " ".join(p.sentences()))
    return lines + [f"- {note}" for note in result.notes]


def main(argv=None) -> int:
    return study_main(STUDY, __doc__.splitlines()[0], "Tuning DeBERTaV3's epochs on MultiNLI (Lourie et al. Figs. 4, 17, 20)",
                      run, rows, figure, comparisons, notes, argv)


if __name__ == "__main__":
    sys.exit(main())

"""Reproducibility checklists answered from what the searches recorded.

Three checklists a paper's appendix is asked to answer, each item filled from a
:class:`~showwork.report.contents.Report`:

- Dodge et al. (2019), Text Box 1: ten items, five for every reported result and five for
  hyperparameter searches;
- ACL Rolling Review's Responsible NLP checklist, section C (computational experiments): C1–C4;
- the NeurIPS paper checklist, items 4–8 (reproducibility, open access, experimental details,
  statistical significance, compute).

The answers come from each family's search spec (space, seed, metric, resources, data), its
meta (the environment :func:`showwork.environment.collect_environment` recorded: hardware,
packages, git commit and remote), its trials (scores, runtimes, parameter counts, split sizes)
and the report's own numbers (summary statistics, tuning curves, informative budgets). A detail
that was not recorded is written as :data:`NOT_RECORDED` and marks its item as not recorded:
nothing is guessed. Results files record only their trials, so most of their items say so.

:mod:`~showwork.report.checklist.items` holds the checklists (their items, what each asks, their
tables); :mod:`~showwork.report.checklist.answers` reads each answer from what a search recorded.

References
----------
Dodge, J., Gururangan, S., Card, D., Schwartz, R. & Smith, N. A. (2019). Show your work: improved
reporting of experimental results. EMNLP-IJCNLP, Text Box 1.
ACL Rolling Review. Responsible NLP research checklist, section C.
NeurIPS. Paper checklist guidelines, items 4–8.
Lourie, N., Cho, K. & He, H. (2024). Show your work with confidence: confidence bands for tuning
curves. NAACL.
"""

from showwork.report.checklist.answers import NOT_RECORDED
from showwork.report.checklist.items import (
    ALL_FAMILIES,
    ARR,
    CHECKLIST_VERSIONS,
    CHECKLISTS,
    DODGE,
    NEURIPS,
    ChecklistItem,
    build_checklist,
    checklist_tables,
)

__all__ = [
    "ALL_FAMILIES",
    "ARR",
    "CHECKLISTS",
    "CHECKLIST_VERSIONS",
    "DODGE",
    "NEURIPS",
    "NOT_RECORDED",
    "ChecklistItem",
    "build_checklist",
    "checklist_tables",
]

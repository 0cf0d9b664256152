"""``showwork report``: what a paper's appendix needs from one or more random searches.

The report is built in stages, one module each: :mod:`~showwork.report.inputs` reads the searches
(ledgers or results files) into :class:`~showwork.report.inputs.FamilyResults`; the statistics
come from :mod:`showwork.statistics`.
"""

from showwork.report.inputs import FamilyResults, from_ledger, from_results_file

__all__ = ["FamilyResults", "from_ledger", "from_results_file"]

"""Reproductions of the papers' statistical studies, run on showwork's own statistics.

One module per study, each a command: ``python -m experiments.<study> [--quick] [--out DIR]``.
The shared parts are :mod:`experiments.kde` (score distributions with exactly known tuning
curves) and :mod:`experiments.common` (data, command line, outputs). ``experiments/README.md``
collects every study's table beside the papers' numbers.
"""

"""showwork: hyperparameter search and reporting that shows your work.

The statistics live in :mod:`showwork.statistics`; the command line in :mod:`showwork.cli`.
Heavy dependencies are imported lazily so that ``showwork --help`` stays instant.
"""

__version__ = "0.1.0"

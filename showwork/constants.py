"""The names and limits that several modules check against, each declared once here.

Import-light on purpose (no numpy, no pydantic): the command line builds its option choices from
these without loading the statistics, so ``showwork --help`` stays instant. Each owning module
re-exports its constant under the name it has always had (``showwork.statistics.METHODS``,
``showwork.store.STATUSES``, ...); this module is the one place that spells the values.
"""

from __future__ import annotations

__all__ = [
    "BAND_METHODS", "COST_UNITS", "EXTRAPOLATION_GAMMAS", "EXTRAPOLATION_GOF_CRITICAL_VALUES", "EXTRAPOLATION_GOF_LEVEL", "EXTRAPOLATION_MAX_K", "EXTRAPOLATION_MAX_TIES_AT_BEST", "EXTRAPOLATION_MIN_TAIL_TRIALS", "EXTRAPOLATION_TAIL_FRACTION", "CUDA_OUT_OF_MEMORY", "CUDA_OUT_OF_MEMORY_SIGNS", "DEFAULT_FAIL_FAST_AFTER", "DEFAULT_SETUP_TIMEOUT_S", "DEFAULT_STORAGE",
    "FAILURE_POLICIES",
    "FAMILY_IMPORT_TIMEOUT", "INT64_MAX", "MAX_SEED", "TRIAL_STATUSES",
]

DEFAULT_STORAGE = "showwork_runs"
"""The ledger folder of the searches unless ``--storage`` (or ``storage=`` of :func:`showwork.search`) names
another, relative to the current directory."""

FIGURE_FORMATS = ("png", "svg", "pdf", "pgf")
"""The file formats a report's figures can be written in (``report --formats``; pgf needs a TeX system)."""

FIGURE_SIZE_INCHES = (1.0, 50.0)
"""The least and the most width and height of a report's figures, in inches (``report --figsize W,H``,
``FigureStyle(figsize=...)``). 50 inches at the figures' 150 dpi is a PNG of 7,500 pixels a side (some
seconds, a few hundred MB); 300 inches grew past 17 GB, and 1e-9 stopped matplotlib with an error."""

FONT_SIZE_POINTS = (4.0, 72.0)
"""The least and the most font size of a report's figures, in points (``report --font-size``,
``FigureStyle(font_size=...)`` and the font sizes of a ``--style`` file); 1e9 stopped FreeType with an error."""

MAX_STYLE_FILE_BYTES = 64 * 1024
"""The largest style file a report takes (``report --style``, ``FigureStyle(style_file=...)``): a style file is a
few dozen ``key: value`` lines; no more than one byte past this is read (a 600 MB file was read whole)."""

FIGURE_CURVES = ("median", "v", "u", "mean")
"""What a tuning-curve figure can draw of each family (``report --curves``): the median (or the report's
quantile) curve with its simultaneous band, the V (Dodge et al. 2019) and U (Tang et al. 2020) estimates of
the expected best score, and the mean curve's band (bounded scores only)."""
DEFAULT_FIGURE_CURVES = ("median",)
"""What a tuning-curve figure draws unless told: the median curve and its band, as Lourie et al. 2024 do."""

TRIAL_STATUSES = ("finished", "failed", "timeout")
"""The outcome of a trial: ``finished`` (returned normally), ``failed`` (raised), ``timeout``."""

CUDA_OUT_OF_MEMORY = "CUDA out of memory"
"""The failure kind of a trial that ran out of GPU memory (a packed trial's neighbours took it, or its own
share was too small): the first words of its record's error, and the kind ``showwork search`` and the
report count it under (:attr:`showwork.store.TrialRecord.failure_kind`)."""

FAMILY_IMPORT_TIMEOUT = "family import timeout"
"""The failure kind of a trial whose worker's set-up (importing the family) outlasted ``setup_timeout_s``: the first
words of its record's error (status ``timeout``), apart from the trainable's own ``timeout``
(:attr:`showwork.store.TrialRecord.failure_kind`)."""

DEFAULT_FAIL_FAST_AFTER = 3
"""A search's ``fail_fast_after`` unless it sets one: a run of the search whose first this many trials to end all
failed with the same error kind stops there (:mod:`showwork.run.fail_fast`); 0 never stops."""

DEFAULT_SETUP_TIMEOUT_S = 600.0
"""A search's ``setup_timeout_s`` unless it sets one: how long a worker may take to be ready to call the trainable
(importing the family, which a warm worker has done already), apart from ``timeout_s``, the trainable's own limit."""

INTERRUPT_GRACE_S = 2.0
"""Seconds a running trial has to stop after SIGINT or SIGTERM stops a search, before the driver kills its worker
(:meth:`showwork.run.deadlines.TrialDeadlines.end_all_after`). Ray Tune waits 10 s for a trial in the middle of a
long step (it asks the trial's actor to stop, which it does at its next report): with Ray's shutdown after it, longer
than the 10 s in which a stopped command must end (issue 35 item 4)."""

CUDA_OUT_OF_MEMORY_SIGNS = (
    "CUDA out of memory",  # torch.OutOfMemoryError from the caching allocator
    "CUDA error: out of memory",  # a kernel or the context (cudaErrorMemoryAllocation)
    "cudaErrorMemoryAllocation",
    "CUBLAS_STATUS_ALLOC_FAILED",  # cuBLAS's workspace
    "CUDNN_STATUS_ALLOC_FAILED",
)
"""Texts by which an error says that CUDA ran out of memory, whatever type the trainable raised it as."""

FAILURE_POLICIES = ("error", "worst", "exclude")
"""What a report does with failed trials (:func:`showwork.statistics.apply_failure_policy`)."""

BAND_METHODS = ("ld-hd", "ld-et", "ks", "dkw")
"""The CDF band constructions of :func:`showwork.statistics.cdf_band`, the default first."""

COST_UNITS = {"seconds": 1.0, "minutes": 60.0, "hours": 3600.0, "gpu-hours": 3600.0}
"""Seconds per unit of cost; ``"gpu-hours"`` multiplies hours by the GPUs each trial holds."""

INT64_MAX = 2**63 - 1
"""The largest signed 64-bit integer: what a number in a search-space file may reach."""

MAX_SEED = INT64_MAX
"""The largest seed of a search (seeds are 0 to 2**63 - 1 inclusive, numpy's SeedSequence entropy)."""

NOTEBOOK_FIGURE_SIZE = (6.4, 4.0)
"""Width and height in inches of a figure a notebook shows inline (a search's, a curve's, a comparison's)."""

NOTEBOOK_TOP_TRIALS = 5
"""The best trials a search's summary in a notebook lists."""

EXTRAPOLATION_TAIL_FRACTION = 0.5
"""The share of the trials, the best ones, whose law an extrapolated tuning curve takes to be noisy-quadratic
(:func:`showwork.statistics.extrapolate`): fixed before the search, never chosen by eye; stated in every output."""

EXTRAPOLATION_MIN_TAIL_TRIALS = 10
"""The fewest trials in the tail for an extrapolation: with fewer, the fit and its goodness-of-fit test say too little
and the extrapolation is refused."""

EXTRAPOLATION_MAX_K = 100_000
"""The largest budget an extrapolated tuning curve reaches (its arrays hold every budget 1..K): ten times a search of
10,000 trials; a larger K is refused as bad input rather than filling the memory."""

EXTRAPOLATION_MAX_TIES_AT_BEST = 2
"""The most trials that may share the best score for an extrapolation: more are a ceiling (an atom at the top of the
scores' law), which no noisy-quadratic law has, and the extrapolation is refused. In subsamples of the four released
searches (n = 24, 48, 96) three or more trials shared the best score in about 1 % at most (DeBERTaV3 at n = 96; never in the
ImageNet searches); in 48-trial samples with a quarter of the trials tied at the best, in nearly all."""

EXTRAPOLATION_GOF_LEVEL = 0.05
"""The level of the goodness-of-fit test of an extrapolation's fitted tail (a censored Anderson–Darling test on the
probability-integral transform): a tail it rejects is refused, not extrapolated."""

EXTRAPOLATION_GOF_CRITICAL_VALUES = ((24, 0.57), (48, 0.55), (96, 0.63), (192, 0.67), (384, 0.68))
"""The critical values, at level ``EXTRAPOLATION_GOF_LEVEL``, of the censored Anderson–Darling statistic of an
extrapolation's tail under the law fitted to the same scores, by n (``showwork.statistics.extrapolation.gof_critical_value``:
linear in log n between them, the nearest value below 24 and past 384 trials, where it was not checked).

The output of ``experiments/extrapolation_calibration.py`` (``experiments/results/extrapolation_calibration/``; a test
keeps the two equal): per n, the largest 95th percentile, rounded up to 0.01, over noisy-quadratic laws with gamma 1, 2,
3, 5, 10 and sigma 0, 0.1, 1 (scale 1), the fit redone on every sample. The worst law is gamma = 1 without noise at every
n (400 samples each, 200 at n = 384; its percentile's 95 % interval is about ±0.06), so the test's size is 0.05 there
and at most 0.025 for every other law tried (gamma = 2 without noise at n = 192 and 384; 0 to 0.017 for the rest).
Power at n = 48 (200 samples each): a gap in the best 15 % of scores 0.385, a t(3) tail 0.175, a top atom 1.0 (all
refused earlier, by the consonance set)."""

EXTRAPOLATION_GAMMAS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
"""The effective numbers of hyperparameters an extrapolation considers (as opda 0.8.0 and Lourie, He & Cho 2025)."""

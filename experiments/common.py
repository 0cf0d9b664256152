"""What every study shares: the real score distributions, the command line, and the three outputs.

Each study (``python -m experiments.<study> [--quick] [--out DIR] [--seed S]``) writes, into its
output directory (default ``experiments/results/<study>/`` for the full mode and
``experiments/results/quick/<study>/`` for ``--quick``):

- ``<study>.csv`` — every number it computed, one row per (setting, budget, ...);
- ``<study>.png`` — its figure;
- ``<study>.md`` — a Markdown table that puts our key numbers beside the paper's, with the range
  the paper's number is read from and whether ours falls in it.

The score distributions are reflected Gaussian KDEs (:mod:`experiments.kde`) of the real
random-search results in ``$SHOWWORK_DATA_DIR/search-results`` (default ``../shared/data``), read
with showwork's own results-file reader.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import stats

from experiments.kde import ReflectedKDE

__all__ = [
    "FAMILIES",
    "SEARCHES",
    "PaperComparison",
    "clopper_pearson",
    "family_kde",
    "family_scores",
    "output_directory",
    "rank_band",
    "rank_band_indices",
    "search_results_dir",
    "study_main",
    "study_parser",
    "with_support",
    "write_outputs",
]

REPO_ROOT = Path(__file__).resolve().parent.parent

FAMILIES: dict[str, tuple[str, str, str]] = {
    # name: (file in search-results/, score column, label)
    "mlp": ("reuters_mlp_f1.csv", "f1", "MLP (Reuters)"),
    "lstm": ("reuters_lstm_f1.csv", "f1", "LSTM (Reuters)"),
    "deberta": ("deberta-base_mnli_tuning.csv", "matched_acc_best", "DeBERTa (MultiNLI)"),
    "debertav3": ("deberta-v3-base_mnli_tuning.csv", "matched_acc_best", "DeBERTaV3 (MultiNLI)"),
}
"""The real searches the studies draw on; every score lies in [0, 1]."""

SEARCHES: dict[str, tuple[str, str, str]] = FAMILIES | {
    # top1_best: the best top-1 validation accuracy over the learning curve, 0 when the loss went NaN in
    # the first epoch (as in opda's notebooks, which maximize it for these two searches).
    "alexnet": ("alexnet_imagenet_tuning.csv", "top1_best", "AlexNet (ImageNet)"),
    "convnext": ("convnext-tiny_imagenet_tuning.csv", "top1_best", "ConvNeXt-tiny (ImageNet)"),
}
"""Every released search :func:`family_scores` reads: :data:`FAMILIES` and the two ImageNet searches."""


def search_results_dir() -> Path:
    """``$SHOWWORK_DATA_DIR/search-results``, else ``../shared/data/search-results`` beside the repository.

    Raises
    ------
    SystemExit
        With a message naming both places, when neither exists.
    """
    candidates = []
    if os.environ.get("SHOWWORK_DATA_DIR"):
        candidates.append(Path(os.environ["SHOWWORK_DATA_DIR"]) / "search-results")
    candidates.append(REPO_ROOT.parent / "shared" / "data" / "search-results")
    for path in candidates:
        if path.is_dir():
            return path
    raise SystemExit(f"experiments: no search results at {' or '.join(map(str, candidates))}; set SHOWWORK_DATA_DIR.")


def family_scores(family: str) -> np.ndarray:
    """The finished scores of one of :data:`SEARCHES`, in trial order."""
    from showwork.report import from_results_file

    if family not in SEARCHES:
        raise SystemExit(f"experiments: unknown family {family!r} (known: {', '.join(SEARCHES)}).")
    file, column, label = SEARCHES[family]
    (results,) = from_results_file(search_results_dir() / file, column, label=label)
    return results.finished_scores


def family_kde(family: str) -> ReflectedKDE:
    """The reflected KDE on [0, 1] of a family's scores (Silverman's robust bandwidth)."""
    return ReflectedKDE.fit(family_scores(family), 0.0, 1.0, name=FAMILIES[family][2])


def clopper_pearson(successes: int | np.ndarray, trials: int, confidence: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Exact (Clopper–Pearson) binomial confidence interval for a proportion.

    Examples
    --------
    >>> lo, hi = clopper_pearson(50, 100)
    >>> round(float(lo), 4), round(float(hi), 4)
    (0.3983, 0.6017)
    """
    s = np.asarray(successes, dtype=float)
    alpha = 1.0 - confidence
    lo = np.where(s > 0, stats.beta.ppf(alpha / 2, s, trials - s + 1), 0.0)
    hi = np.where(s < trials, stats.beta.ppf(1 - alpha / 2, s + 1, trials - s), 1.0)
    return lo, hi


def rank_band(n: int, confidence: float, method: str):
    """The CDF band of size n built on the ranks 1..n, with a = 0 and b = n + 1.

    LD and KS band end points depend only on n and the confidence, so one band serves every sample
    of n scores: its quantiles come out as indices (see :func:`rank_band_indices`).
    """
    from showwork.statistics import cdf_band

    return cdf_band(np.arange(1.0, n + 1.0), confidence, method, a=0.0, b=n + 1.0)


def rank_band_indices(band, k: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Indices into ``[a, y_(1), ..., y_(n), b]`` of the median curve's lower band, estimate and upper band.

    ``band`` must come from :func:`rank_band`; the quantiles of a band are order statistics, a or b,
    so on the ranks they are the indices themselves — valid for any sample of n scores (ties
    included: a tied score's value does not depend on which copy the index picks).
    """
    from showwork.statistics import quantile_tuning_curve

    curves = quantile_tuning_curve(band, k)
    if not all(np.array_equal(c, np.round(c)) for c in curves):
        raise AssertionError("quantiles of a rank band must be integers.")
    lower, point, upper = (c.astype(np.int64) for c in curves)
    return lower, point, upper


def with_support(y_sorted: np.ndarray, a: float = 0.0, b: float = 1.0) -> np.ndarray:
    """Sorted samples (replicates x n) with a column of a before and of b after: what rank indices index."""
    column = np.ones((y_sorted.shape[0], 1))
    return np.concatenate([a * column, y_sorted, b * column], axis=1)


@dataclass(frozen=True)
class PaperComparison:
    """One key number of a study beside the paper's.

    ``low``/``high`` is the range the paper's figure supports (read off a plot, so a range, not a
    point); ``agrees`` says whether ours falls in it.
    """

    quantity: str
    ours: float
    paper: str
    low: float
    high: float
    source: str

    @property
    def agrees(self) -> bool:
        return self.low <= self.ours <= self.high


def study_parser(study: str, description: str) -> argparse.ArgumentParser:
    """The common options: ``--quick``, ``--out DIR``, ``--seed S``."""
    parser = argparse.ArgumentParser(prog=f"python -m experiments.{study}", description=description)
    parser.add_argument("--quick", action="store_true", help="few replicates: runs in CI in under 2 minutes")
    parser.add_argument("--out", metavar="DIR", help="output directory (default experiments/results/[quick/]STUDY)")
    parser.add_argument("--seed", type=int, default=0, help="random seed of the simulation (default 0)")
    return parser


def output_directory(study: str, args: argparse.Namespace) -> Path:
    if args.out:
        return Path(args.out)
    return REPO_ROOT / "experiments" / "results" / ("quick" if args.quick else "") / study


def _cell(value) -> str:
    if isinstance(value, float):
        return "" if math.isnan(value) else f"{value:.6g}"
    return str(value)


def write_outputs(
    directory: Path,
    study: str,
    rows: Sequence[Mapping[str, object]],
    figure,
    comparisons: Iterable[PaperComparison],
    title: str,
    notes: Sequence[str] = (),
) -> dict[str, Path]:
    """Write ``<study>.csv``, ``<study>.png`` and ``<study>.md`` into ``directory``; return their paths."""
    from showwork.report.figures import save_figure

    directory.mkdir(parents=True, exist_ok=True)
    csv_path = directory / f"{study}.csv"
    columns = list(dict.fromkeys(key for row in rows for key in row))
    with csv_path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        for row in rows:
            writer.writerow({key: _cell(row.get(key, "")) for key in columns})
    (png,) = save_figure(figure, directory, study, ("png",))
    lines = [f"### {title}", "", "| quantity | ours | paper | range read from the paper | agrees |", "|---|---:|---|---|---|"]
    for c in comparisons:
        quantity, paper = (text.replace("|", "\\|") for text in (c.quantity, f"{c.paper} ({c.source})"))
        lines.append(f"| {quantity} | {c.ours:.4g} | {paper} | [{c.low:g}, {c.high:g}] | {'yes' if c.agrees else 'no'} |")
    lines += [""] + [f"{note}" for note in notes] + ([""] if notes else [])
    lines.append(f"![{title}]({png.name})")
    md_path = directory / f"{study}.md"
    md_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {"csv": csv_path, "png": png, "md": md_path}


def study_main(
    study: str,
    description: str,
    title: str,
    run: Callable[[bool, int], object],
    rows: Callable[[object], Sequence[Mapping[str, object]]],
    figure: Callable[[object], object],
    comparisons: Callable[[object], Iterable[PaperComparison]],
    notes: Callable[[object], Sequence[str]],
    argv: Sequence[str] | None = None,
) -> int:
    """The command of a study: parse the common options, run it, write its three outputs, print their paths."""
    args = study_parser(study, description).parse_args(argv)
    result = run(args.quick, args.seed)
    paths = write_outputs(output_directory(study, args), study, rows(result), figure(result), comparisons(result), title, notes(result))
    for path in paths.values():
        print(path)
    return 0

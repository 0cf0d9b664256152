"""The figure gallery of docs/figures.md: every kind of figure a report draws, at the three documented sizes.

``make figure-gallery`` (``python docs/_hooks/figure_gallery.py``) writes ``docs/images/figures/<kind>-<size>.png``
from two reports: the two real 50-trial searches on SST-5 of ``experiments/results/real_search`` (logistic
regression against a CNN: tuning curves per trial and against compute, CDFs, the comparison per trial and at
equal runtime, the scores against each hyperparameter), and eight families with names of 40 characters (the
summary and a page of small multiples, which a report draws beyond six families). Every figure is checked as
it is written (:func:`showwork.report.figures.layout_problems`): no text off the canvas, none overlapping.
``tests/deploy/test_figure_gallery.py`` draws them again and fails when an image is not current.
"""

from __future__ import annotations

import argparse
import csv
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from showwork.report import ReportSettings, analyze
from showwork.report.contents import Report
from showwork.report.figures import FigureStyle, layout_problems, report_drawings, save_figure
from showwork.report.inputs import from_results_file

ROOT = Path(__file__).resolve().parents[2]
GALLERY = ROOT / "docs" / "images" / "figures"
SIZES = {
    "default": FigureStyle(),
    "one-column": FigureStyle(figsize=(3.3, 2.4), font_size=8),
    "two-columns": FigureStyle(figsize=(6.8, 2.6), font_size=8),
}
"""The sizes docs/figures.md documents: the figures' own, one column of a paper, two columns (8 pt text)."""
KINDS = ("tuning_curves", "tuning_curves_time", "cdfs", "comparison", "comparison_cost", "extrapolation", "scores_by_parameter",
         "summary", "tuning_curves_page", "cdfs_page")
"""Every kind of figure, in the order of the gallery (a paged kind: its first page; extrapolation: the first family's)."""
_REAL_SEARCH = ROOT / "experiments" / "results" / "real_search" / "results"
_NAMES = ("deberta-v3-base-mnli-lr-sweep-ablation01", "deberta-v3-base-mnli-lr-sweep-ablation02", "BERT", "roberta-large",
          "LSTM + attention (GloVe 840B, 300 d)", "ELECTRA-small-discriminator-mnli-tuned", "CNN", "logistic regression")


def _sst5() -> Report:
    families = [from_results_file(_REAL_SEARCH / f"sst5-{stem}-study.csv", "score", runtime="runtime_s", label=label,
                                  sampler="random", params=[f"param.{p}" for p in params])[0]
                for stem, label, params in (("logreg", "logistic regression", ("C", "penalty")), ("cnn-cpu", "CNN", ("lr", "dropout", "activation")))]
    return analyze(families, ReportSettings(a=0, b=1, cost="runtime", cost_unit="minutes", extrapolate=500))


def _eight(folder: Path) -> Report:
    """Eight families of 40 trials: a seeded draw, the same every time."""
    rng = np.random.default_rng(0)
    path = folder / "eight.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["family", "score", "runtime"])
        for i, name in enumerate(_NAMES):
            for _ in range(40):
                writer.writerow([name, f"{0.5 + 0.03 * i + 0.25 * rng.beta(2, 5):.6f}", f"{rng.uniform(10, 100):.3f}"])
    return analyze(from_results_file(path, "score", runtime="runtime", group="family", sampler="random"), ReportSettings(a=0, b=1))


def _kind(name: str) -> str:
    """A figure's kind: its name without the page number (``cdfs_page1`` -> ``cdfs_page``) or family (``extrapolation_1``)."""
    if name.startswith("extrapolation_"):
        return "extrapolation"
    stem, _, page = name.rpartition("_page")
    return f"{stem}_page" if stem and page.isdigit() and stem != "scores_by_parameter" else (stem if stem else name)


def draw(out: Path) -> Iterator[tuple[str, list[str]]]:
    """Write every gallery image into ``out``; yield each file's name and its layout problems."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        reports = (_sst5(), _eight(Path(folder)))
        for size, style in SIZES.items():
            drawn: set[str] = set()
            for report in reports:
                with style.rc_context():
                    for name, drawing in report_drawings(report, style=style):
                        kind = _kind(name)
                        if kind not in KINDS or kind in drawn:
                            continue
                        figure = drawing()
                        if figure is None:
                            continue
                        drawn.add(kind)
                        (path,) = save_figure(figure, out, f"{kind}-{size}", ("png",))
                        yield path.name, layout_problems(figure)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=GALLERY, help="where the images go (default docs/images/figures)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as staging:
        problems = []
        for name, found in draw(Path(staging)):
            problems += [f"{name}: {problem}" for problem in found]
        if problems:
            print("\n".join(problems), file=sys.stderr)
            return 1
        args.out.mkdir(parents=True, exist_ok=True)
        for path in sorted(Path(staging).glob("*.png")):
            shutil.copyfile(path, args.out / path.name)
    print(f"figure gallery: {len(list(args.out.glob('*.png')))} images in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

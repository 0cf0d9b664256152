"""showwork from Python: run a small search, look at its trials and tuning curve, write its report.

    python examples/python_api.py [--workdir DIR]

Everything goes under DIR (default ./showwork-example): the ledger (runs/), the MLflow store
(mlflow.db) and the report (report/). Run it again and it resumes the recorded search (nothing left
to run), then writes the report again.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import showwork

SPACE = Path(__file__).resolve().with_name("python_api.yaml")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", type=Path, default=Path("showwork-example"), help="where everything is written")
    parser.add_argument("--num-cpus", type=int, default=2, help="CPUs the local Ray offers to trials (default 2)")
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)

    # The search: Ray Tune trials, each recorded in the ledger and projected into MLflow, exactly as
    # `showwork search python_api.yaml --resume` runs it. Ctrl-C raises KeyboardInterrupt
    # (showwork.SearchInterruptedError); running this again continues the search.
    search = showwork.search(SPACE, resume=True, storage=args.workdir / "runs",
                             tracking_uri=f"sqlite:///{(args.workdir / 'mlflow.db').resolve()}",
                             num_cpus=args.num_cpus, progress=False)
    print(f"{search.name}: {search.summary.finished} of {search.summary.num_trials} trials finished")

    # The trials: one row per trial, the columns of `showwork results --csv`.
    frame = search.to_dataframe()
    print(frame[["status", "score", "test_score", "runtime_s", "param.lr", "param.dropout"]]
          .sort_values("score", ascending=False).head(3).to_string())

    best = search.best()[0]
    print(f"best: trial {best.index}, val_accuracy {best.score:.4f}, params {best.params}")

    # The median tuning curve with its 80 % simultaneous bands (the report's defaults): the best
    # validation accuracy expected from k trials, for k = 1, 2, 4, 8, 12.
    curve = search.curve(budgets=(1, 2, 4, 8, 12))
    for k, median, lower, upper in zip(curve.k, curve.quantile_curve, curve.quantile_curve_lower,
                                       curve.quantile_curve_upper):
        print(f"k = {k:>2g}: median {median:.4f}, band [{lower:.4f}, {upper:.4f}]")

    # The report `showwork report toy-python-api --out DIR/report` writes (HTML, Markdown, LaTeX, JSON).
    files = search.report(args.workdir / "report", figure_formats=("png",))
    print(f"report: {files.html}")


if __name__ == "__main__":
    main()

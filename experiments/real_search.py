"""A real search study (Dodge et al. 2019, Fig. 1 style): logistic regression vs a CNN on SST-5.

Usage::

    python -m experiments.real_search [--trials N] [--storage DIR] [--tracking-uri URI] [--out DIR]
    python -m experiments.real_search --smoke --out DIR     # the plumbing, in about a minute

The full mode runs both spaces through ``showwork search`` — the real families, trained for real,
tracked in MLflow — with each YAML's own ``num_trials`` (50 each, as in the paper) unless
``--trials`` gives one count for both, then ``showwork report`` on the two searches into
``experiments/results/real_search/report/`` (tuning curves with 80 % bands, the evidence between
the families by budget, the checklists) and each search's ``showwork results --csv`` into
``experiments/results/real_search/results/``. It is resumable: run it again after any
interruption (or with more ``--trials``) and only the missing trials run.

Dodge et al.'s Fig. 1 shows the linear model ahead at small budgets and the CNN ahead once a few
trials have been spent. That crossover is what the report's comparison table should show, with the
budget ranges where the bands resolve it.

Compute: the paper's CNN space (``search_spaces/sst5_cnn.yaml``: up to 50 epochs, patience 10)
takes up to ten times as long per trial as a 5-epoch trial (15-250 s, 68 s on average, on one
CPU core). The study runs ``search_spaces/sst5_cnn_cpu.yaml``
instead: the same space with at most 5 epochs and patience 2 (its header says why), which fits a
2-core CPU machine. ``--smoke`` runs 2 trials of each family on 300 training sentences for
one epoch — only to check that the study runs end to end (CI does).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parent.parent
SPACES = {
    # label: (search-space file, search name of the study)
    "logistic regression": ("sst5_logreg.yaml", "sst5-logreg-study"),
    "CNN": ("sst5_cnn_cpu.yaml", "sst5-cnn-cpu-study"),
}
SMOKE_DATA = {"train_size": 300}
SMOKE_SPACE = {"cnn": {"epochs": 1, "patience": 1}, "logreg": {"max_iter": 20}}


def _smoke_space(source: Path, directory: Path) -> Path:
    """A copy of ``source`` that trains on a few sentences for one epoch (the plumbing only)."""
    spec = yaml.safe_load(source.read_text(encoding="utf-8"))
    spec["data"] = {**spec.get("data", {}), **SMOKE_DATA}
    spec["space"] = {**spec["space"], **SMOKE_SPACE.get(spec["family"], {})}
    if spec["family"] == "cnn":  # small filters keep one CPU epoch to seconds
        spec["space"].update({"num_filters": 16, "hidden_dim": 16, "max_filter_size": 3})
    path = directory / source.name
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


def _showwork(*argv: str, capture: bool = False) -> str:
    """Run ``showwork ARGV``; return its standard output when ``capture``."""
    done = subprocess.run([sys.executable, "-m", "showwork", *argv], cwd=REPO_ROOT, stdout=subprocess.PIPE if capture else None,
                          text=True)
    if done.returncode != 0:
        raise SystemExit(f"experiments.real_search: `showwork {' '.join(argv)}` failed with status {done.returncode}.")
    return done.stdout or ""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.real_search", description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, help="trials per family (default: each YAML's num_trials, 50 as in the paper)")
    parser.add_argument("--storage", default=str(REPO_ROOT / "showwork_runs"), metavar="DIR", help="ledger directory")
    parser.add_argument("--tracking-uri", metavar="URI", help="MLflow store (default sqlite:///mlflow.db in the repository)")
    parser.add_argument("--out", metavar="DIR",
                        help="the study's folder: DIR/report/ and DIR/results/<search>.csv (default experiments/results/real_search)")
    parser.add_argument("--smoke", action="store_true", help="2 tiny trials per family: check the plumbing only")
    args = parser.parse_args(argv)
    if args.trials is not None and args.trials < 1:
        parser.error("--trials must be at least 1")
    out = Path(args.out) if args.out else REPO_ROOT / "experiments" / "results" / ("quick/real_search" if args.smoke else "real_search")
    trials = 2 if args.smoke else args.trials
    uri = ["--tracking-uri", args.tracking_uri] if args.tracking_uri else []
    names, labels = [], []
    with tempfile.TemporaryDirectory(prefix="showwork-real-search-") as scratch:
        for label, (file, name) in SPACES.items():
            space = REPO_ROOT / "search_spaces" / file
            if args.smoke:
                space, name = _smoke_space(space, Path(scratch)), f"{name}-smoke"
            count = ["--num-trials", str(trials)] if trials is not None else []
            _showwork("search", str(space), "--name", name, *count, "--storage", args.storage,
                      "--resume", "--no-progress", *uri)
            names.append(name)
            labels += ["--label", label]
    # The report's folder holds only what `showwork report` writes (it refuses other files there).
    # --cost runtime: the families at equal compute too (k = seconds / mean runtime per trial; figure comparison_cost).
    _showwork("report", *names, "--storage", args.storage, *labels, "--target", "0.4", "--cost", "runtime", "--cost-unit", "seconds",
              "--out", str(out / "report"), *uri)
    (out / "results").mkdir(parents=True, exist_ok=True)
    for name in names:
        csv = _showwork("results", name, "--storage", args.storage, "--csv", capture=True)
        (out / "results" / f"{name}.csv").write_text(csv, encoding="utf-8")
    print(f"experiments.real_search: report in {out / 'report'}, each search's trials in {out / 'results'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Collect every study's Markdown table into ``experiments/README.md``.

Usage::

    python -m experiments.collect [--check]

Each study writes ``experiments/results/<study>/<study>.md`` (its numbers beside the paper's). This
command copies them, in :data:`STUDIES` order, between the ``<!-- tables: begin -->`` and
``<!-- tables: end -->`` markers of the README, with figure links made relative to the README.
``--check`` only compares and exits 1 when the README is out of date (a test runs it).
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

STUDIES = (
    "false_conclusions", "bootstrap_coverage", "small_samples", "exact_coverage", "ablations", "evidence_errors", "epochs_effect", "sequential",
    "extrapolation",
)
"""The studies, in the order of the issue (the real search study reports through ``showwork report``)."""
HERE = Path(__file__).resolve().parent
BEGIN, END = "<!-- tables: begin -->", "<!-- tables: end -->"


def collected_tables(results: Path = HERE / "results") -> str:
    """The studies' tables, figure links rewritten relative to ``experiments/``."""
    parts = []
    for study in STUDIES:
        path = results / study / f"{study}.md"
        if not path.is_file():
            parts.append(f"### {study}\n\nNot run yet: `python -m experiments.{study}`.\n")
            continue
        text = path.read_text(encoding="utf-8")
        text = re.sub(r"\]\((?!https?:|/)([^)]+)\)", lambda m: f"](results/{study}/{m.group(1)})", text)
        parts.append(text.strip() + "\n")
    return "\n".join(parts)


def updated_readme(readme: str, tables: str) -> str:
    if BEGIN not in readme or END not in readme:
        raise SystemExit(f"experiments/README.md: the markers {BEGIN} and {END} are missing.")
    head, rest = readme.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n\n{tables}\n{END}{tail}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m experiments.collect", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the README is out of date; change nothing")
    args = parser.parse_args(argv)
    readme_path = HERE / "README.md"
    readme = readme_path.read_text(encoding="utf-8")
    new = updated_readme(readme, collected_tables())
    if args.check:
        if new != readme:
            print("experiments/README.md is out of date: run python -m experiments.collect", file=sys.stderr)
            return 1
        return 0
    readme_path.write_text(new, encoding="utf-8")
    print(f"wrote {readme_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

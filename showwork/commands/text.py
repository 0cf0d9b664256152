"""What commands print: text tables, scores and progress lines, and numbers for --json."""

from __future__ import annotations

import math
import sys
from typing import Sequence


def json_floats(values) -> list[float]:
    return [float(v) for v in values]


def format_score(x: float) -> str:
    if math.isnan(x):
        return "-"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.6g}"


def progress_line(message: str) -> None:
    """A progress line on stderr (stdout may be --json)."""
    print(f"showwork: {message}", file=sys.stderr, flush=True)


def table_lines(header: Sequence[str], rows: Sequence[Sequence[str]], right: bool = False) -> list[str]:
    """Columns padded to their widest cell; ``right`` aligns them to the right (for numbers)."""
    widths = [max(len(h), *(len(r[j]) for r in rows)) for j, h in enumerate(header)]
    pad = str.rjust if right else str.ljust
    return ["  ".join(pad(c, w) for c, w in zip(row, widths)).rstrip() for row in [list(header), *rows]]

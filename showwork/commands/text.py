"""What commands print: text tables, scores and progress lines, and numbers for --json.

Every text a command prints goes through :func:`showwork.escaping.terminal_text` (a table's cells
here, a line where it is printed): a search's values cannot act on the terminal.
"""

from __future__ import annotations

import math
import sys
from typing import Sequence

from showwork.escaping import terminal_text


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
    print(terminal_text(f"showwork: {message}"), file=sys.stderr, flush=True)


def table_lines(header: Sequence[str], rows: Sequence[Sequence[str]], right: bool = False) -> list[str]:
    """Columns padded to their widest cell; ``right`` aligns them to the right (for numbers).

    Each cell (header too) is :func:`~showwork.escaping.terminal_text` on one line, measured as shown:
    a line break in a value would start a line that reads as another row.
    """
    header = [terminal_text(h, one_line=True) for h in header]
    rows = [[terminal_text(cell, one_line=True) for cell in row] for row in rows]
    widths = [max(len(h), *(len(r[j]) for r in rows)) for j, h in enumerate(header)]
    pad = str.rjust if right else str.ljust
    return ["  ".join(pad(c, w) for c, w in zip(row, widths)).rstrip() for row in [list(header), *rows]]

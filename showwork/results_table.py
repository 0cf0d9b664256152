"""Tables of trial results from files: CSV, TSV or JSON lines (optionally gzip-compressed).

This is the one reader of results files, used by ``showwork curve`` and by reports. It accepts
the exports researchers already have: Ray Tune (``progress.csv``, ``result.json`` lines with a
nested ``config``), Weights & Biases and MLflow CSV exports, opda's data files, a spreadsheet
saved as CSV. Nested JSON objects are flattened with dots (``config.lr``).

A cell that is empty, ``nan``, ``null`` or ``None`` is *missing*: for a score column that marks a
failed trial (see :mod:`showwork.statistics.failures`), never a silently dropped row. Anything
else that is not a number is an error naming the file, line and column.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path

from showwork.errors import InputError

__all__ = ["ResultsTable", "read_results_table"]

_MISSING = {"", "nan", "null", "none", "na", "n/a"}
_MAX_BYTES = 1 << 30  # refuse files over 1 GiB rather than exhausting memory


@dataclass(frozen=True)
class ResultsTable:
    """Rows of a results file, each a mapping from column name to its raw value.

    Attributes
    ----------
    path : Path
    columns : tuple of str
        Column names in file order (for JSON lines: in order of first appearance).
    rows : tuple of dict
        Raw values: strings for CSV/TSV, JSON values for JSON lines.
    lines : tuple of int
        The 1-based line of the file each row starts on (for error messages).
    """

    path: Path
    columns: tuple[str, ...]
    rows: tuple[dict, ...]
    lines: tuple[int, ...]

    def __len__(self) -> int:
        return len(self.rows)

    def _check_column(self, name: str) -> None:
        if name not in self.columns:
            shown = ", ".join(self.columns[:20]) + (", ..." if len(self.columns) > 20 else "")
            raise InputError(f"{self.path}: no column {name!r}; the columns are: {shown}")

    def numeric_column(self, name: str) -> list[float]:
        """Return the column as floats, in row order; missing cells become NaN.

        Raises
        ------
        InputError
            If the column does not exist or holds a value that is not a number.
        """
        self._check_column(name)
        out = []
        for row, line in zip(self.rows, self.lines):
            out.append(_to_float(row.get(name), self.path, line, name))
        return out

    def text_column(self, name: str) -> list[str | None]:
        """Return the column as strings (None where missing), in row order."""
        self._check_column(name)
        out = []
        for row in self.rows:
            value = row.get(name)
            out.append(None if value is None or str(value).strip().lower() in _MISSING else str(value))
        return out


def _to_float(value, path: Path, line: int, name: str) -> float:
    if value is None:
        return math.nan
    if isinstance(value, bool):
        raise InputError(f"{path}:{line}: column {name!r} holds a boolean ({value!r}), not a number")
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip()
    if text.lower() in _MISSING:
        return math.nan
    try:
        return float(text)
    except ValueError:
        raise InputError(f"{path}:{line}: column {name!r} holds {text[:40]!r}, which is not a number") from None


def read_results_table(path: str | Path) -> ResultsTable:
    """Read a results file: CSV, TSV or JSON lines, chosen by extension or, failing that, by content.

    Parameters
    ----------
    path : str or Path
        ``.csv``, ``.tsv``, ``.jsonl``/``.json`` (one object per line), each optionally ``.gz``.

    Raises
    ------
    InputError
        Missing, unreadable, empty, binary or malformed file; the message names the file and line.
    """
    path = Path(path)
    text = _read_text(path)
    suffixes = [s.lower() for s in path.suffixes if s.lower() != ".gz"]
    kind = suffixes[-1] if suffixes else ""
    first = text.lstrip()[:1]
    if kind in (".jsonl", ".json", ".ndjson") or (kind not in (".csv", ".tsv") and first == "{"):
        return _read_json_lines(path, text)
    first_line = text.lstrip("\n").split("\n", 1)[0]
    delimiter = "\t" if kind == ".tsv" or (kind != ".csv" and "\t" in first_line) else ","
    return _read_delimited(path, text, delimiter)


def _read_text(path: Path) -> str:
    try:
        size = path.stat().st_size
        if size > _MAX_BYTES:
            raise InputError(f"{path}: file is larger than 1 GiB ({size} bytes)")
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a results file") from None
    except OSError as error:
        raise InputError(f"{path}: cannot be read ({error.strerror})") from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as error:
            raise InputError(f"{path}: damaged gzip file ({error})") from None
    if b"\x00" in raw[:65536]:
        raise InputError(f"{path}: is a binary file, not CSV, TSV or JSON lines")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise InputError(f"{path}: is not UTF-8 text (byte {error.start})") from None
    if not text.strip():
        raise InputError(f"{path}: is empty")
    return text


def _read_delimited(path: Path, text: str, delimiter: str) -> ResultsTable:
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    header: list[str] | None = None
    header_line = 0
    rows, lines = [], []
    try:
        for record in reader:
            if not record or all(not cell.strip() for cell in record):
                continue
            if header is None:
                header = [cell.strip() for cell in record]
                header_line = reader.line_num
                _check_header(path, header, header_line)
                continue
            if len(record) != len(header):
                raise InputError(
                    f"{path}:{reader.line_num}: {len(record)} fields, but the header on line"
                    f" {header_line} has {len(header)}"
                )
            rows.append(dict(zip(header, record)))
            lines.append(reader.line_num)
    except csv.Error as error:
        raise InputError(f"{path}:{reader.line_num}: malformed {'TSV' if delimiter == chr(9) else 'CSV'} ({error})") from None
    if header is None or not rows:
        raise InputError(f"{path}: has a header but no rows" if header else f"{path}: is empty")
    return ResultsTable(path, tuple(header), tuple(rows), tuple(lines))


def _check_header(path: Path, header: list[str], line: int) -> None:
    seen = set()
    for position, name in enumerate(header, 1):
        if not name:
            raise InputError(f"{path}:{line}: column {position} of the header has no name")
        if name in seen:
            raise InputError(f"{path}:{line}: column {name!r} appears twice in the header")
        seen.add(name)


def _read_json_lines(path: Path, text: str) -> ResultsTable:
    columns: dict[str, None] = {}
    rows, lines = [], []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise InputError(f"{path}:{number}: not valid JSON ({error.msg})") from None
        except RecursionError:
            raise InputError(f"{path}:{number}: JSON nested too deeply") from None
        if not isinstance(record, dict):
            raise InputError(f"{path}:{number}: each line must be a JSON object, not {type(record).__name__}")
        flat = _flatten(record)
        for key in flat:
            columns.setdefault(key, None)
        rows.append(flat)
        lines.append(number)
    if not rows:
        raise InputError(f"{path}: is empty")
    return ResultsTable(path, tuple(columns), tuple(rows), tuple(lines))


def _flatten(record: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, name + "."))
        else:
            out[name] = value
    return out

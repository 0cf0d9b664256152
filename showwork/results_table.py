"""Tables of trial results from files: CSV, TSV or JSON lines (optionally gzip-compressed).

This is the one reader of results files, used by ``showwork curve`` and by reports. It accepts
the exports researchers already have: Ray Tune (``progress.csv``, ``result.json`` lines with a
nested ``config``), Weights & Biases and MLflow CSV exports, opda's data files, a spreadsheet
saved as CSV. Nested JSON objects are flattened with dots (``config.lr``).

A cell that is empty, ``nan``, ``null`` or ``None`` is *missing*: for a score column that marks a
failed trial (see :mod:`showwork.statistics.failures`), never a silently dropped row; so is an
infinity (``inf``, ``-Infinity``, JSON's ``Infinity``). Anything else that is not a number, and a
number too large for a float (``1e400``), is an error naming the file, line and column.

A row whose cells are all empty (``,,`` in CSV, tabs only in TSV, ``{}`` in JSON lines) is a trial
that recorded nothing, as a crashed run leaves in an export: it is a row like any other, every
value missing, so its score marks a failed trial in every format alike. A blank line (nothing on
it but whitespace, no separator) is no row in any format. Lines are counted from 1, as editors do.
"""

from __future__ import annotations

import csv
import gzip
import io
import itertools
import json
import math
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

from showwork.errors import InputError
from showwork.files import read_regular_file
from showwork.values import NameClashError, flatten

__all__ = ["ResultsTable", "parse_number", "read_results_table"]

_MISSING = {"", "nan", "null", "none", "na", "n/a"}
# Refuse files (and gzip contents) over 2 GiB rather than exhausting memory: generous for a million
# trials (a wide Ray Tune result.json runs to about 1-2 KB a row), and every read stops at the limit.
_MAX_BYTES = 2 << 30
# Plain decimals below 1e15 in magnitude, no exponent: numbers under any rule a cell may face.
_PLAIN_DECIMAL = re.compile(r"[+-]?(?:[0-9]{1,15}(?:\.[0-9]*)?|\.[0-9]+)", re.ASCII)
_INFINITY = {"inf", "infinity"}  # spellings of an infinite value; other text that overflows is a number too large
_LARGEST_RUNTIME_S = 1e15  # 31 million years: a larger runtime is not in seconds, and its costs would overflow
# Weights & Biases' runs-table export ("Name", "State", "Notes", "User", "Tags", "Created", "Runtime",
# "Sweep", then the config and summary columns): "State" is the run's state. Only a finished run's
# summary is its result; a crashed, failed or killed run (or one still running) keeps the last value
# it logged, so its score reads as a failed trial. A "State" column with other values is not W&B's.
_WANDB_STATE_COLUMN = "State"
_WANDB_STATES = frozenset({"finished", "crashed", "failed", "killed", "running", "pending", "preempting", "preempted"})


class _DuplicateKey(Exception):
    """A JSON line names a key twice (literally, or once nested and once dotted)."""

    def __init__(self, key: str, flattened: bool = False):
        super().__init__(key)
        self.key, self.flattened = key, flattened


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
            raise InputError(f"{self.path}: no column {name!r}; the columns are: {shown}{_header_hint(self.columns)}")

    def numeric_column(self, name: str) -> list[float]:
        """Return the column as floats, in row order; missing cells become NaN.

        Raises
        ------
        InputError
            If the column does not exist or holds a value that is not a number.
        """
        self._check_column(name)
        out = []
        plain = _PLAIN_DECIMAL.fullmatch
        for row, line in zip(self.rows, self.lines):
            value = row.get(name)
            # Fast path (10^6 rows: 3 s -> 0.4 s): a plain decimal such as 0.8125 or -12 is a number
            # under every rule of _to_float; anything else (exponents, words, huge values) goes there.
            if type(value) is str and plain(value):
                out.append(float(value))
                continue
            out.append(_to_float(value, self.path, line, name))
        return out

    def score_column(self, name: str) -> list[float]:
        """Return a column of validation scores, like :meth:`numeric_column`; NaN (a failed trial) where a run did not finish.

        A run did not finish where the file is a Weights & Biases runs-table export (a ``State``
        column of W&B run states) and its state is not ``finished``.
        """
        values = self.numeric_column(name)
        if _WANDB_STATE_COLUMN not in self.columns or name == _WANDB_STATE_COLUMN:
            return values
        states = [None if state is None else state.strip().lower() for state in self.text_column(_WANDB_STATE_COLUMN)]
        if not all(state in _WANDB_STATES for state in states):
            return values
        return [value if state == "finished" else math.nan for value, state in zip(values, states)]

    def runtime_column(self, name: str) -> list[float]:
        """Return a column of per-trial runtimes in seconds, like :meth:`numeric_column`, refusing negative ones.

        Raises
        ------
        InputError
            If the column does not exist, holds a value that is not a number, a negative runtime or
            one over 1e15 s (the message names the file, line and column). The upper limit keeps
            every cost (budget × mean runtime, in any unit) a finite float.
        """
        values = self.numeric_column(name)
        for value, line in zip(values, self.lines):
            if value < 0:
                raise InputError(f"{self.path}:{line}: column {name!r} holds the runtime {value!r}; runtimes must be non-negative")
            if _LARGEST_RUNTIME_S < value < math.inf:
                raise InputError(
                    f"{self.path}:{line}: column {name!r} holds the runtime {value!r}, more than {_LARGEST_RUNTIME_S:g} s"
                    " (31 million years); runtimes are in seconds"
                )
        return values

    def text_column(self, name: str) -> list[str | None]:
        """Return the column as strings (None where missing), in row order."""
        self._check_column(name)
        out = []
        for row in self.rows:
            value = row.get(name)
            out.append(None if value is None or str(value).strip().lower() in _MISSING else str(value))
        return out


def _header_hint(columns: tuple[str, ...]) -> str:
    """Why a column may be missing: the wrong separator, or no header row at all."""
    if len(columns) == 1:
        for separator, word in ((";", "semicolons"), ("\t", "tabs"), (",", "commas"), ("|", "bars")):
            if separator in columns[0]:
                return f" (one column: is the file separated by {word}? .csv files are read with commas, .tsv with tabs)"
    if not all(parse_number(c) is not None for c in columns):
        return ""
    return " (the first line holds numbers: the file needs a header row naming its columns)"


def _shown(text: str) -> str:
    return repr(text[:40]) + ("..." if len(text) > 40 else "")


def _to_float(value, path: Path, line: int, name: str) -> float:
    if value is None:
        return math.nan
    if isinstance(value, bool):
        raise InputError(f"{path}:{line}: column {name!r} holds a boolean ({value!r}), not a number")
    if isinstance(value, (int, float)):
        return float(value)  # JSON numbers too large for a float stay text (see _json_number)
    text = str(value).strip()
    if text.lower() in _MISSING:
        return math.nan
    number = parse_number(text)
    if number is None:
        raise InputError(f"{path}:{line}: column {name!r} holds {_shown(text)}, which is not a number")
    if math.isinf(number) and text.lstrip("+-").lower() not in _INFINITY:
        raise InputError(f"{path}:{line}: column {name!r} holds {_shown(text)}, which is too large for a float")
    return number


def parse_number(text: str) -> float | None:
    """The number a results cell spells, or None if it is not one: the one number parser of results files.

    The grammar: ``[+-]?(digits[.digits?]|.digits)([eE][+-]?digits)?`` in ASCII (``0.5``, ``-3``, ``.5``,
    ``1e-3``, ``2E+05``), or a sign and a spelling of infinity (``inf``, ``infinity``) or NaN
    (``nan``), in any case, which mark failed trials.
    Python's ``float()`` also takes underscores between digits (``0_5`` is 5.0, ``1_0`` is 10.0) and
    digits of other scripts (``١٢`` is 12.0): in a results file those are typos or another locale,
    never a number, so they are refused rather than silently misread.

    Examples
    --------
    >>> parse_number("0.5"), parse_number("-1E+3"), parse_number("-Infinity")
    (0.5, -1000.0, -inf)
    >>> parse_number("0_5"), parse_number("1 0"), parse_number("\u0661"), parse_number("0x10")
    (None, None, None, None)
    """
    try:
        number = float(text)
    except ValueError:
        return None
    # What float() takes beyond the grammar above is exactly this (its whitespace is stripped by callers).
    return number if text.isascii() and "_" not in text else None


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
    raw = read_regular_file(path, _MAX_BYTES, "results file")
    if raw[:2] == b"\x1f\x8b":
        raw = _gunzip(path, raw)
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):  # a spreadsheet's "Unicode text": NUL bytes, but not binary
        raise InputError(f"{path}: is UTF-16 text, not UTF-8; save it as UTF-8 (a spreadsheet's 'CSV UTF-8')")
    nul = raw.find(b"\x00")  # anywhere: the csv module would read a NUL into a cell
    if nul >= 0:
        raise InputError(f"{path}: is a binary file (NUL byte at offset {nul}), not CSV, TSV or JSON lines")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = raw.count(b"\n", 0, error.start) + 1
        raise InputError(
            f"{path}:{line}: is not UTF-8 text (byte 0x{raw[error.start]:02x} at offset {error.start}); save it as UTF-8"
        ) from None
    if not text.strip():
        raise InputError(f"{path}: is empty")
    if text.lstrip()[:1] == "<":
        raise InputError(f"{path}: is an HTML or XML page, not CSV, TSV or JSON lines (a web page saved instead of the file?)")
    return text


def _gunzip(path: Path, raw: bytes) -> bytes:
    """Decompress in chunks, counting the bytes that come out: a small file that expands past the limit is refused."""
    chunks, size = [], 0
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as stream:
            while chunk := stream.read(1 << 20):
                size += len(chunk)
                if size > _MAX_BYTES:
                    raise InputError(f"{path}: decompresses to more than {_MAX_BYTES:,} bytes (a gzip bomb?)")
                chunks.append(chunk)
    except (OSError, EOFError, zlib.error) as error:  # BadGzipFile is an OSError; a damaged stream a zlib.error
        raise InputError(f"{path}: damaged gzip file ({error})") from None
    return b"".join(chunks)


def _read_delimited(path: Path, text: str, delimiter: str) -> ResultsTable:
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    header: list[str] | None = None
    header_line = last = 0
    rows, lines = [], []
    while True:
        start = reader.line_num + 1  # a quoted cell can span lines: a row is named by its first
        try:
            record = next(reader)
        except StopIteration:
            break
        except csv.Error as error:
            raise InputError(f"{path}:{start}: malformed {'TSV' if delimiter == chr(9) else 'CSV'} ({error})") from None
        last = start
        if not record or (len(record) == 1 and not record[0].strip()):
            continue  # a blank line; a row of empty cells is a trial that recorded nothing (see above)
        if header is None:
            if all(not cell.strip() for cell in record):
                continue  # empty rows above the header (a spreadsheet's margin) hold no trial
            header = [cell.strip() for cell in record]
            header_line = start
            _check_header(path, header, header_line)
            continue
        if len(record) != len(header):
            _check_quotes(path, text, start, delimiter)  # a quote left open merges rows: say that, not the count
            raise InputError(f"{path}:{start}: {len(record)} fields, but the header on line {header_line} has {len(header)}")
        rows.append(dict(zip(header, record)))
        lines.append(start)
    _check_quotes(path, text, last, delimiter)
    if header is None or not rows:
        raise InputError(f"{path}: has a header but no rows" if header else f"{path}: is empty")
    return ResultsTable(path, tuple(header), tuple(rows), tuple(lines))


def _check_quotes(path: Path, text: str, line: int, delimiter: str) -> None:
    """Refuse a quote that is never closed in the rows from ``line`` on.

    The lenient reader (which, like spreadsheets, reads ``"a"b`` as ``ab``) takes an unclosed
    quote to run to the end of the file, silently merging the rows after it into one cell; the
    strict reader says so. Only the last row (or the one that broke the field count) is re-read.
    """
    if line < 1:
        return
    tail = io.StringIO("".join(itertools.islice(io.StringIO(text, newline=""), line - 1, None)), newline="")
    reader = csv.reader(tail, delimiter=delimiter, strict=True)
    while True:
        start = line + reader.line_num
        try:
            next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            if str(error) == "unexpected end of data":
                raise InputError(f"{path}:{start}: the quote opened in the row on line {start} is never closed") from None
            return  # other strict complaints (text after a closing quote) the lenient reading accepts


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
            record = json.loads(line, parse_int=_json_number, parse_float=_json_number, object_pairs_hook=_json_object)
            if not isinstance(record, dict):
                hint = "" if rows else _one_document_hint(text)
                raise InputError(f"{path}:{number}: each line must be a JSON object, not {type(record).__name__}{hint}")
            flat = _flatten(record)
        except json.JSONDecodeError as error:
            hint = "" if rows else _one_document_hint(text)
            raise InputError(f"{path}:{number}: not valid JSON ({error.msg}){hint}") from None
        except RecursionError:
            raise InputError(f"{path}:{number}: JSON nested too deeply") from None
        except _DuplicateKey as duplicate:
            how = " (nested keys are read as dotted names)" if duplicate.flattened else ""
            raise InputError(f"{path}:{number}: key {duplicate.key!r} appears twice{how}") from None
        for key in flat:
            columns.setdefault(key, None)
        rows.append(flat)
        lines.append(number)
    if not rows:
        raise InputError(f"{path}: is empty")
    return ResultsTable(path, tuple(columns), tuple(rows), tuple(lines))


def _json_number(text: str) -> int | float | str:
    """A JSON number, or its text where a float cannot hold it (1e400): the reader then says so, with the column."""
    number = float(text)
    if not math.isfinite(number):
        return text
    return int(text) if text.lstrip("-").isdigit() else number


def _json_object(pairs: list[tuple[str, object]]) -> dict:
    """A JSON object whose keys are all different (``json`` would keep the last of a repeated key)."""
    out = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _one_document_hint(text: str) -> str:
    """A hint for a file that is one JSON document (an array, a pretty-printed object) rather than JSON lines."""
    try:
        json.loads(text)
    except (ValueError, RecursionError):
        return ""
    return "; the file is one JSON document, but showwork reads JSON lines (one object per line)"


def _flatten(record: dict) -> dict:
    """Nested objects as dotted names (``{"config": {"lr": 1}}`` gives ``config.lr``); a name made twice is an error."""
    try:
        return flatten(record)
    except NameClashError as clash:
        raise _DuplicateKey(clash.name, flattened=True) from None

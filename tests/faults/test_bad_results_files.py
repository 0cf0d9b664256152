"""Malformed results files: each gives ``showwork curve`` and ``showwork report`` one line naming the
file (and the line where there is one) and the problem, exit status 2, and no report.

The corpus is ``tests/bad_inputs/results/`` beside ``tests/bad_inputs/spaces/`` (search spaces,
checked in test_search_space.py); files that git cannot hold (a FIFO, devices) are made or named below. A few look-alikes of bad
files are *accepted* on purpose, and tested as such at the end: a byte-order mark, the spellings of
NaN and infinity that Python reads, JSON's NaN / Infinity (Ray Tune writes them), a multi-line
quoted cell, and a text table whose extension is not one of ours.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import threading
from pathlib import Path

import pytest

from showwork.errors import InputError
from showwork.results_table import read_results_table

from helpers import run_cli

pytestmark = pytest.mark.integration

BAD = Path(__file__).resolve().parents[1] / "bad_inputs"
RESULTS = BAD / "results"

# file -> (line or None, fragment of the message); the same message from `curve` and from `report`.
EXPECTED = {
    "binary_inside.csv.gz": (None, "is a binary file (NUL byte at offset"),  # gzip of random bytes
    "binary_junk.csv": (None, "is a binary file (NUL byte at offset"),
    "blank_lines.csv": (None, "is empty"),
    "bom_only.csv": (None, "is empty"),  # a UTF-8 byte-order mark and a newline
    "corrupt.csv.gz": (None, "damaged gzip file (Error -3 while decompressing data"),  # a flipped deflate byte
    "duplicate_header.csv": (1, "column 'score' appears twice in the header"),
    "empty.csv": (None, "is empty"),  # zero bytes
    "excel_na.csv": (3, "column 'score' holds '#N/A', which is not a number"),
    "header_only.csv": (None, "has a header but no rows"),
    "headerless.csv": (None, "no column 'score'; the columns are: 0, 0.1, 0.71 (the first line holds numbers"),
    "html_page.csv": (None, "is an HTML or XML page"),
    "huge_line.csv.gz": (3, "malformed CSV (field larger than field limit"),  # a 200,000-character cell
    "is_a_directory.csv": (None, "is a directory, not a regular file"),  # a folder (holding .keep so that git keeps it)
    "json_document.json": (1, "the file is one JSON document, but showwork reads JSON lines"),  # an indented array
    "jsonl_boolean_score.jsonl": (2, "column 'score' holds a boolean (True), not a number"),
    "jsonl_deep_nesting.jsonl": (2, "JSON nested too deeply"),
    "jsonl_duplicate_key.jsonl": (2, "key 'score' appears twice"),
    "jsonl_flattening_collision.jsonl": (1, "key 'config.lr' appears twice (nested keys are read as dotted names)"),
    "jsonl_integer_too_large.jsonl": (2, "which is too large for a float"),  # 10**400
    "jsonl_invalid.jsonl": (3, "not valid JSON (Expecting ',' delimiter)"),
    "jsonl_list_score.jsonl": (2, "column 'score' holds '[0.74]', which is not a number"),
    "jsonl_not_object.jsonl": (2, "each line must be a JSON object, not list"),
    "jsonl_number_too_large.jsonl": (2, "column 'score' holds '1e400', which is too large for a float"),
    "jsonl_underscore_string.jsonl": (2, "column 'score' holds '0_5', which is not a number"),  # float() reads 5.0
    "jsonl_too_many_digits.jsonl": (2, "which is too large for a float"),  # 10**5000: past int()'s digit limit
    "late_nul.csv.gz": (None, "is a binary file (NUL byte at offset 75913)"),  # past the first 64 KiB
    "latin1.csv": (2, "is not UTF-8 text (byte 0xe9 at offset 23)"),
    "msvc_nan.csv": (3, "column 'score' holds '1.#QNAN', which is not a number"),
    "other_script_digits.csv": (3, "column 'score' holds '٠.٧٤', which is not a number"),  # float() reads 0.74
    "non_numeric_score.csv": (4, "column 'score' holds 'high', which is not a number"),
    "ragged_long_row.tsv": (4, "4 fields, but the header on line 1 has 3"),
    "ragged_short_row.csv": (3, "2 fields, but the header on line 1 has 3"),
    "score_too_large.csv": (3, "column 'score' holds '1e400', which is too large for a float"),
    "semicolon_separated.csv": (None, "no column 'score'; the columns are: trial;lr;score (one column: is the file separated by semicolons?"),
    "space_inside_number.csv": (3, "column 'score' holds '0. 74', which is not a number"),
    "truncated.csv.gz": (None, "damaged gzip file (Compressed file ended before the end-of-stream marker was reached)"),
    "underscore_in_number.csv": (3, "column 'score' holds '1_0', which is not a number"),  # float() reads 10.0
    "unclosed_quote.csv": (3, "the quote opened in the row on line 3 is never closed"),
    "unclosed_quote_last_column.csv": (3, "the quote opened in the row on line 3 is never closed"),  # once read as 2 rows, not 3
    "unknown_score_column.csv": (None, "no column 'score'; the columns are: trial, lr, val_accuracy, test_accuracy"),
    "unnamed_header_column.csv": (1, "column 2 of the header has no name"),
    "utf16.tsv": (None, "is UTF-16 text, not UTF-8"),  # a spreadsheet's "Unicode text"
    "workbook.xlsx": (None, "is a binary file (NUL byte at offset"),  # an extension that is not ours
}


cli = run_cli


def check_one_line(code: int, out: str, err: str, path: Path, line: int | None, fragment: str) -> str:
    assert code == 2, (code, err)
    assert out == ""
    assert err.startswith("showwork: error: ") and err.endswith("\n") and err.count("\n") == 1, err
    message = err.removeprefix("showwork: error: ").rstrip("\n")
    assert message.startswith(f"{path}:" if line is None else f"{path}:{line}: "), message
    assert fragment in message, message
    assert "np." not in message and "float64" not in message, message  # plain numbers, never numpy reprs
    return message


def test_every_bad_results_file_has_an_expectation():
    assert sorted(p.name for p in RESULTS.iterdir()) == sorted(EXPECTED)
    assert len(EXPECTED) >= 20
    spaces = list((BAD / "spaces").glob("*.yaml"))
    assert len(EXPECTED) + len(spaces) >= 40


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_curve_refuses_with_one_line(capsys, name):
    path = RESULTS / name
    check_one_line(*cli(capsys, "curve", path, "--score", "score"), path, *EXPECTED[name])


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_report_refuses_with_one_line_and_writes_no_report(capsys, tmp_path, name):
    path, out_dir = RESULTS / name, tmp_path / "report"
    result = cli(capsys, "report", path, "--score", "score", "--out", out_dir,
                 "--storage", tmp_path / "runs", "--no-mlflow")
    check_one_line(*result, path, *EXPECTED[name])
    assert not (out_dir / "report.html").exists()
    assert not out_dir.exists() or not any(out_dir.iterdir())


def test_a_missing_file(capsys, tmp_path):
    path = tmp_path / "nope.csv"
    check_one_line(*cli(capsys, "curve", path, "--score", "score"), path, None, "no such file")


def test_gzip_contents_past_the_size_limit_are_refused_while_decompressing(tmp_path, monkeypatch):
    import showwork.results_table as results_table

    path = tmp_path / "bomb.csv.gz"
    path.write_bytes(gzip.compress(b"score\n" + b"0.5\n" * 5000))
    assert path.stat().st_size < 1000  # the file itself passes the size check
    monkeypatch.setattr(results_table, "_MAX_BYTES", 1000)
    with pytest.raises(InputError, match=r"bomb\.csv\.gz: decompresses to more than"):
        read_results_table(path)


# --- good files, bad values for the options: the message names the column and prints plain numbers ------

TRIALS = "trial,score,rt,long\n0,0.71,30,1\n1,0.74,-5,1e300\n2,0.69,12,1\n"

# options -> (line or None, fragment); each for `curve` and for `report` (report names the family first)
BAD_VALUES = {
    ("--runtime", "rt"): (3, "column 'rt' holds the runtime -5.0; runtimes must be non-negative"),
    ("--a", "0.7"): (None, "lower bound a=0.7 is greater than the smallest score 0.69"),
    ("--b", "0.72"): (None, "upper bound b=0.72 is less than the largest score 0.74"),
    ("--runtime", "long"): (3, "column 'long' holds the runtime 1e+300, more than 1e+15 s (31 million years)"),
}


@pytest.mark.parametrize("options", sorted(BAD_VALUES))
def test_bad_values_are_named_by_their_column_in_plain_numbers(capsys, tmp_path, options):
    path = tmp_path / "trials.csv"
    path.write_text(TRIALS)
    line, fragment = BAD_VALUES[options]
    check_one_line(*cli(capsys, "curve", path, "--score", "score", *options), path, line, fragment)
    out_dir = tmp_path / "report"
    code, out, err = cli(capsys, "report", path, "--score", "score", *options, "--out", out_dir,
                         "--storage", tmp_path / "runs", "--no-mlflow")
    assert code == 2 and err.count("\n") == 1 and fragment in err, err
    assert "np." not in err and "float64" not in err, err
    assert not out_dir.exists()


# --- scores near the float limit (issue 14, item 12) ------------------------------------------------------

HUGE = "trial,score\n0,1e308\n1,-1e308\n2,0.5\n3,0.6\n"


def test_curve_computes_with_scores_near_the_float_limit_without_overflow(capsys, tmp_path):
    path = tmp_path / "huge.csv"
    path.write_text(HUGE)
    code, out, err = cli(capsys, "curve", path, "--score", "score", "--json")
    assert code == 0 and err == "", err  # no overflow warnings
    curve = json.loads(out)
    assert curve["v"][0] == 0.275 and curve["u"][0] == 0.275  # the mean; V(1) was -4.99e291
    assert all(x is not None and abs(x) <= 1e308 for key in ("v", "u", "v_std", "running_max") for x in curve[key])
    assert curve["v"] == sorted(curve["v"])


def test_report_refuses_scores_it_cannot_draw_in_one_line_and_writes_nothing(capsys, tmp_path):
    path, out_dir = tmp_path / "huge.csv", tmp_path / "report"
    path.write_text(HUGE)
    code, out, err = cli(capsys, "report", path, "--score", "score", "--out", out_dir, "--storage", tmp_path / "runs", "--no-mlflow")
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"showwork: error: huge ({path}): the score 1e+308 is beyond ±1e+300, the largest magnitude a report can draw")
    assert not out_dir.exists()  # was left behind, empty, after "Axis limits cannot be NaN or Inf"


@pytest.mark.slow
def test_report_draws_scores_up_to_the_stated_limit_without_warnings(capsys, tmp_path):
    path, out_dir = tmp_path / "large.csv", tmp_path / "report"
    path.write_text("trial,score,rt\n0,1e300,1e15\n1,-1e300,3\n2,0.5,4\n3,0.6,5\n4,0.55,6\n")
    code, out, err = cli(capsys, "report", path, "--score", "score", "--runtime", "rt", "--out", out_dir,
                         "--storage", tmp_path / "runs", "--no-mlflow", "--formats", "png")
    assert code == 0 and err == "", err  # the summary's std squared 2e300 before
    assert (out_dir / "report.html").is_file()
    summary = json.loads((out_dir / "report.json").read_text())["families"][0]["summary"]
    assert summary["mean"] == pytest.approx(1.65 / 5) and summary["std"] == pytest.approx(1e300 * math.sqrt(2 / 4), rel=1e-12)  # sample std


# --- what is not a regular file: refused before a byte is read, so nothing blocks or runs away -----------


def _special_file(kind: str, tmp_path: Path) -> Path:
    if kind == "fifo":
        path = tmp_path / "results.csv"
        os.mkfifo(path)  # no writer ever comes: reading it the ordinary way blocks forever
        return path
    return Path(kind)  # endless (/dev/zero, /dev/urandom; a size check by stat sees 0 bytes) or empty


def _in_a_thread(function, *args):
    """Run ``function(*args)`` and fail (instead of hanging the suite) if it does not return in 60 s."""
    outcome = {}

    def target():
        try:
            outcome["value"] = function(*args)
        except BaseException as error:  # noqa: BLE001 - handed back to the test
            outcome["error"] = error

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), f"{function.__name__}{args} did not return within 60 s"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


SPECIAL_FILES = {
    "fifo": "is a FIFO (named pipe), not a regular file; a results file must be a file",
    "/dev/zero": "is a character device, not a regular file",
    "/dev/urandom": "is a character device, not a regular file",
    "/dev/null": "is a character device, not a regular file",
}


@pytest.mark.parametrize("kind", sorted(SPECIAL_FILES))
def test_curve_and_report_refuse_what_is_not_a_regular_file(capsys, tmp_path, kind):
    path = _special_file(kind, tmp_path)
    if not path.exists():
        pytest.skip(f"{path} does not exist here")
    check_one_line(*_in_a_thread(cli, capsys, "curve", path, "--score", "score"), path, None, SPECIAL_FILES[kind])
    out_dir = tmp_path / "report"
    result = _in_a_thread(cli, capsys, "report", path, "--score", "score", "--out", out_dir,
                          "--storage", tmp_path / "runs", "--no-mlflow")
    check_one_line(*result, path, None, SPECIAL_FILES[kind])
    assert not out_dir.exists() or not any(out_dir.iterdir())


def test_a_file_is_read_only_up_to_the_limit_counted_in_bytes_read_not_its_reported_size():
    """/proc files are regular but report a size of 0: the limit holds on what the read returns."""
    from showwork.files import read_regular_file

    path = Path("/proc/self/maps")
    if not path.exists():
        pytest.skip("no /proc here")
    assert path.stat().st_size == 0
    with pytest.raises(InputError, match=r"/proc/self/maps: is larger than 100 bytes, the limit for a results file"):
        read_regular_file(path, 100, "results file")
    assert len(read_regular_file(path, 1 << 20, "results file")) > 100  # under the limit it is read whole


def test_a_regular_file_over_the_limit_is_refused_by_its_size(tmp_path, monkeypatch):
    import showwork.results_table as results_table

    path = tmp_path / "big.csv"
    path.write_text("score\n" + "0.5\n" * 1000)
    monkeypatch.setattr(results_table, "_MAX_BYTES", 1 << 10)
    with pytest.raises(InputError, match=r"big\.csv: is larger than 1 KiB \(4006 bytes\), the limit for a results file"):
        read_results_table(path)


def test_the_limit_is_generous_and_stated():
    """2 GiB: a million trials of a wide export fit (see results_table._MAX_BYTES)."""
    import showwork.results_table as results_table

    assert results_table._MAX_BYTES == 2 << 30


# --- look-alikes that are read -------------------------------------------------------------------------

PLAIN = "trial,lr,score\n0,0.1,0.71\n1,0.01,0.74\n2,0.001,0.69\n"


@pytest.mark.parametrize(
    "name, content",
    [
        ("bom.csv", "\ufeff" + PLAIN),
        ("bom.jsonl", '\ufeff{"trial": 0, "lr": 0.1, "score": 0.71}\n{"trial": 1, "score": 0.74}\n{"trial": 2, "score": 0.69}\n'),
        ("bom_crlf.tsv", "\ufeff" + PLAIN.replace(",", "\t").replace("\n", "\r\n")),
    ],
)
def test_a_byte_order_mark_is_read_and_not_part_of_the_first_column(capsys, tmp_path, name, content):
    """Spreadsheets save 'CSV UTF-8' with a byte-order mark: it is an encoding marker, not data."""
    path = tmp_path / name
    path.write_bytes(content.encode("utf-8"))
    table = read_results_table(path)
    assert table.columns[0] == "trial"
    assert table.numeric_column("score") == [0.71, 0.74, 0.69]
    code, out, err = cli(capsys, "curve", path, "--score", "score", "--json")
    assert code == 0 and err == "", err
    gz = tmp_path / (name + ".gz")
    gz.write_bytes(gzip.compress(content.encode("utf-8")))
    assert read_results_table(gz).columns == table.columns


def test_spellings_of_nan_and_infinity_python_reads_are_failed_trials(capsys, tmp_path):
    cells = ["0.5", "NaN", "nan", "-nan", "inf", "-Infinity", "INF", "+inf", "", "null", "None", "N/A", "1e308"]
    path = tmp_path / "r.csv"
    path.write_text("trial,score\n" + "".join(f'{i},"{c}"\n' for i, c in enumerate(cells)))
    values = read_results_table(path).numeric_column("score")
    assert values[0] == 0.5 and values[-1] == 1e308
    assert [math.isfinite(v) for v in values[1:-1]] == [False] * (len(cells) - 2)
    code, out, err = cli(capsys, "curve", path, "--score", "score", "--failed", "worst")
    assert code == 0, err
    assert f"{len(cells) - 2} of {len(cells)} trials failed" in out


@pytest.mark.parametrize("cell", ["1e309", "-1e400", "9" * 400])
def test_numbers_that_overflow_a_float_are_refused(tmp_path, cell):
    path = tmp_path / "r.csv"
    path.write_text(f"score\n0.5\n{cell}\n")
    with pytest.raises(InputError, match=r"r\.csv:3: column 'score' holds .* too large for a float"):
        read_results_table(path).numeric_column("score")


def test_json_nan_and_infinity_are_read_like_ray_tune_writes_them(tmp_path):
    path = tmp_path / "result.json"
    path.write_text('{"score": NaN}\n{"score": Infinity}\n{"score": -Infinity}\n{"score": 7, "seed": 123456789012345678901234567890}\n')
    table = read_results_table(path)
    values = table.numeric_column("score")
    assert math.isnan(values[0]) and values[1] == math.inf and values[2] == -math.inf and values[3] == 7.0
    assert table.rows[3]["seed"] == 123456789012345678901234567890  # a big integer that fits a float stays exact


def test_quoted_cells_spanning_lines_and_lenient_quotes_are_read(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text('trial,score,note\n0,0.71,"two\nlines"\n1,0.74,"a"b\n2,0.69,"say ""hi"""\n')
    table = read_results_table(path)
    assert table.text_column("note") == ["two\nlines", "ab", 'say "hi"']
    assert table.lines == (2, 4, 5)  # the line each row starts on


def test_a_text_table_is_read_whatever_its_extension(tmp_path):
    """The format comes from the extension when it is ours, else from the content: a binary file is refused
    (workbook.xlsx in the corpus), a text table with another name is read."""
    for name, content in [("results.txt", PLAIN), ("results.log", PLAIN.replace(",", "\t")), ("results", '{"score": 0.71}\n')]:
        path = tmp_path / name
        path.write_text(content)
        assert read_results_table(path).numeric_column("score")[0] == 0.71

"""Reading results files: formats, flattening, missing values, and errors that name the place."""

import gzip
import json
import math
import re

import pytest

from showwork.errors import InputError
from showwork.results_table import read_results_table


def write(tmp_path, name, content, mode="w"):
    path = tmp_path / name
    if mode == "wb":
        path.write_bytes(content)
    else:
        path.write_text(content)
    return path


def test_csv_tsv_and_jsonl_give_the_same_column(tmp_path):
    csv_path = write(tmp_path, "r.csv", "trial,acc\n1,0.5\n2,0.75\n")
    tsv_path = write(tmp_path, "r.tsv", "trial\tacc\n1\t0.5\n2\t0.75\n")
    jsonl_path = write(tmp_path, "r.jsonl", '{"trial": 1, "acc": 0.5}\n\n{"trial": 2, "acc": 0.75}\n')
    for path in (csv_path, tsv_path, jsonl_path):
        assert read_results_table(path).numeric_column("acc") == [0.5, 0.75]


def test_format_is_sniffed_without_extension(tmp_path):
    assert read_results_table(write(tmp_path, "a", "x\ty\n1\t2\n")).columns == ("x", "y")
    assert read_results_table(write(tmp_path, "b", '{"x": 1}\n')).columns == ("x",)
    assert read_results_table(write(tmp_path, "c", "x,y\n1,2\n")).columns == ("x", "y")


def test_gzip_and_bom_are_read(tmp_path):
    path = write(tmp_path, "r.csv.gz", gzip.compress("\ufeffacc\n0.1\n".encode()), mode="wb")
    assert read_results_table(path).numeric_column("acc") == [0.1]


def test_nested_json_is_flattened_like_ray_tune_results(tmp_path):
    line = json.dumps({"val_acc": 0.8, "config": {"lr": 0.01, "optimizer": {"name": "adam"}}})
    table = read_results_table(write(tmp_path, "result.json", line + "\n"))
    assert table.columns == ("val_acc", "config.lr", "config.optimizer.name")
    assert table.text_column("config.optimizer.name") == ["adam"]


def test_missing_cells_become_nan_failed_trials(tmp_path):
    path = write(tmp_path, "r.csv", "acc\n0.5\n\nNaN\nnull\n,\n".replace(",\n", "\n"))
    values = read_results_table(path).numeric_column("acc")
    assert values[0] == 0.5 and all(math.isnan(v) for v in values[1:])
    jsonl = write(tmp_path, "r.jsonl", '{"acc": null}\n{"acc": 1}\n{"other": 2}\n')
    values = read_results_table(jsonl).numeric_column("acc")
    assert math.isnan(values[0]) and values[1] == 1.0 and math.isnan(values[2])


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("empty.csv", "", "is empty"),
        ("blank.csv", "\n\n  \n", "is empty"),
        ("header_only.csv", "acc\n", "header but no rows"),
        ("ragged.csv", "a,b\n1,2\n3\n", "ragged.csv:3: 1 fields"),
        ("dup.csv", "a,a\n1,2\n", "appears twice"),
        ("noname.csv", "a,\n1,2\n", "has no name"),
        ("bad.jsonl", '{"a": 1}\n{"a": \n', "bad.jsonl:2: not valid JSON"),
        ("list.jsonl", "[1, 2]\n", "must be a JSON object"),
    ],
)
def test_malformed_files_name_file_and_line(tmp_path, name, content, message):
    with pytest.raises(InputError, match=message):
        read_results_table(write(tmp_path, name, content))


def test_binary_and_non_utf8_and_missing_files(tmp_path):
    with pytest.raises(InputError, match="binary"):
        read_results_table(write(tmp_path, "junk.csv", bytes(range(256)) * 4, mode="wb"))
    with pytest.raises(InputError, match="not UTF-8"):
        read_results_table(write(tmp_path, "latin.csv", "acc\n\xe9\n".encode("latin-1"), mode="wb"))
    with pytest.raises(InputError, match="no such file"):
        read_results_table(tmp_path / "nope.csv")
    with pytest.raises(InputError, match="is a directory"):
        read_results_table(tmp_path)
    with pytest.raises(InputError, match="damaged gzip"):
        read_results_table(write(tmp_path, "bad.csv.gz", b"\x1f\x8b\x08garbage", mode="wb"))


def test_unknown_and_non_numeric_columns(tmp_path):
    table = read_results_table(write(tmp_path, "r.csv", "acc,name\n0.5,x\nhigh,y\n"))
    with pytest.raises(InputError, match=r"no column 'f1'; the columns are: acc, name"):
        table.numeric_column("f1")
    with pytest.raises(InputError, match=r"r.csv:3: column 'acc' holds 'high'"):
        table.numeric_column("acc")
    with pytest.raises(InputError, match="boolean"):
        read_results_table(write(tmp_path, "b.jsonl", '{"acc": true}\n')).numeric_column("acc")


def test_deeply_nested_json_is_refused_cleanly(tmp_path):
    with pytest.raises(InputError, match="bomb.jsonl:1"):
        read_results_table(write(tmp_path, "bomb.jsonl", "[" * 100000 + "]" * 100000 + "\n"))


def test_real_search_results_read(search_results_dir):
    table = read_results_table(search_results_dir / "deberta-base_mnli_tuning.csv")
    assert len(table) == 1024
    assert len(table.numeric_column("matched_acc_best")) == 1024


# --- the one number parser of results files ------------------------------------------------------------

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st

from showwork.results_table import parse_number  # noqa: E402


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_every_float_written_by_python_or_a_spreadsheet_reads_back_exactly(x):
    for text in (repr(x), f"{x:e}", f"{x:.17g}", f"{x:E}"):
        assert parse_number(text) == float(text)
        assert parse_number(text) == x or text != repr(x)


@given(st.text(alphabet="0123456789_.eE+- \t", min_size=1, max_size=12))
def test_text_with_an_underscore_or_a_space_inside_is_never_a_number(text):
    stripped = text.strip()
    if "_" in stripped or " " in stripped or "\t" in stripped:
        assert parse_number(stripped) is None


@pytest.mark.parametrize("cell", ["0_5", "1_0", "1_000.5", "1e1_0", "٣", "１２", "0x10", "1.5f", "1,5", "nan(1)", "in f", "- 1"])
def test_forms_float_takes_or_nearly_takes_are_refused_with_file_row_and_column(tmp_path, cell):
    path = write(tmp_path, "r.csv", f'trial,score\n0,0.5\n1,"{cell}"\n')
    with pytest.raises(InputError, match=r"r\.csv:3: column 'score' holds .*, which is not a number"):
        read_results_table(path).numeric_column("score")


@pytest.mark.parametrize("cell, value", [(" 0.5 ", 0.5), ("+.5", 0.5), ("5.", 5.0), ("-1E-3", -0.001), ("1e308", 1e308)])
def test_plain_decimal_forms_are_read(tmp_path, cell, value):
    path = write(tmp_path, "r.csv", f'trial,score\n0,"{cell}"\n')
    assert read_results_table(path).numeric_column("score") == [value]


GRAMMAR = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)", re.IGNORECASE | re.ASCII)


@given(st.text(alphabet=st.sampled_from(list("0123456789_.eE+-infatyINFATY ") + ["٣", "１", "\u00a0", "\u2007"]), max_size=12))
def test_parse_number_takes_exactly_the_documented_grammar(text):
    text = text.strip()
    assert (parse_number(text) is not None) == bool(GRAMMAR.fullmatch(text)), text

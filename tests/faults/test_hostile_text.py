"""A search's strings reach the terminal as visible escapes, never as control sequences (issue 34 item 2).

Found by a hostile test: categorical values, a metric's name, a storage folder's name and a trial's
error message holding ESC sequences (``\\x1b]0;title\\x07`` sets the window title, ``\\x1b[2J``
clears the screen), a carriage return or a bidi override were printed raw by ``showwork sample``,
``results``, ``best``, the ``showwork: error:``/``warning:`` lines and the live progress of a
search; a value ``[/x]`` stopped rich's drawing of the live table (a MarkupError). Each check runs
the command as a user does (in this process, :func:`helpers.cli_in_process`) and reads its output:
no control character but the line breaks, the visible escape instead.
"""

from __future__ import annotations

import contextlib
import io
import os
import pty
import random
import re
import subprocess
import sys
import textwrap

import pytest
from rich.console import Console

from showwork.run.progress import LiveState, Progress, RunningTrial, live_table
from showwork.run.summary import TrialCounts
from showwork.space import load_search_spec
from showwork.store import Ledger

from helpers import cli_in_process, search_environment, search_process_environment, trial_record, write_search

TITLE, CLEAR, RETURN, BIDI = "\x1b]0;title\x07", "\x1b[2J", "a\rb", "\u202eexe.jpg"
SHOWN = ("\\x1b]0;title\\x07", "\\x1b[2J", "a\\x0db", "\\u202eexe.jpg")
# The YAML spells them with its escapes (a YAML file may not hold the characters themselves).
SPACE = r"""
    name: tiny
    family: tiny.py:train
    metric: {name: "val\e]0;title\a", mode: max, test: "test\e[2J"}
    num_trials: 40
    seed: 7
    space:
      lr: {distribution: loguniform, low: 1e-4, high: 1e-1}
      act: {distribution: categorical, choices: ["\e]0;title\a", "\e[2J", "a\rb", "\u202eexe.jpg", "[/x]", "row\n9  x"]}
"""
# Any C0 control but the line break, DEL, C1, bidi controls.
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def no_raw_control(*outputs: str) -> None:
    for output in outputs:
        assert not RAW.search(output), ascii(output)


@pytest.fixture
def search(tmp_path):
    """A finished 40-trial search (every choice drawn) whose values and metric are hostile, in ``tmp_path/runs/tiny``."""
    (tmp_path / "tiny.yaml").write_text(textwrap.dedent(SPACE))
    (tmp_path / "tiny.py").write_text("def train(config, *, seed, device, reporter, data):\n    return {}\n")
    spec = load_search_spec(tmp_path / "tiny.yaml")
    assert spec.metric.name == "val" + TITLE  # the YAML says what we mean
    write_search(Ledger(tmp_path / "runs", "tiny"), spec, [trial_record(i, score=0.5 + i / 100) for i in range(40)])
    with search_environment(tmp_path):
        yield tmp_path


@pytest.mark.parametrize("argv", [("sample", "tiny.yaml", "-n", "40"), ("results", "tiny", "--storage", "runs"),
                                  ("best", "tiny", "--storage", "runs", "--top", "40")])
def test_a_search_s_values_are_printed_as_visible_escapes(search, argv):
    code, out, err = cli_in_process(*argv)
    assert code == 0, err
    no_raw_control(out, err)
    for shown in SHOWN:
        assert shown in out, (shown, out)
    assert "[/x]" in out
    # A line break in a value is a visible \x0a: it cannot start a line that reads as another row.
    assert "row\\x0a9  x" in out and not any(line.startswith("9  x") for line in out.splitlines())
    table = out.split("\n\n")[-1] if argv[0] != "results" else out
    assert len(table.strip("\n").splitlines()) == 1 + 40  # the header and a row per trial
    if argv[0] == "best":  # the metric's name, in the sentence and the header
        assert out.count("val\\x1b]0;title\\x07") == 2 and "test\\x1b[2J" in out


def test_results_csv_escapes_on_a_terminal_and_is_exact_in_a_pipe(search):
    """Before: `results --csv` wrote a value's ESC sequences raw to the terminal. In a pipe (or a file) the CSV
    stays exact, to be read back."""
    argv = [sys.executable, "-m", "showwork", "results", "tiny", "--storage", "runs", "--csv"]
    piped = subprocess.run(argv, cwd=search, env=search_process_environment(), capture_output=True, timeout=60)
    assert piped.returncode == 0 and TITLE.encode() in piped.stdout and BIDI.encode() in piped.stdout
    main, secondary = pty.openpty()
    with open(main, "rb", buffering=0) as terminal:
        shown = subprocess.run(argv, cwd=search, env=search_process_environment(), stdout=secondary,
                               stderr=subprocess.PIPE, timeout=60)
        os.close(secondary)
        data = b""
        with contextlib.suppress(OSError):  # EIO once the process has gone
            while chunk := terminal.read(65536):
                data += chunk
    text = data.decode().replace("\r\n", "\n")  # the terminal's line ends
    assert shown.returncode == 0, shown.stderr
    no_raw_control(text)
    assert text.count("\n") == piped.stdout.decode().count("\n")  # a row per trial, as in the pipe
    for escaped in SHOWN:
        assert escaped in text


def test_the_error_line_and_warnings_quote_the_user_s_words_as_escapes(search):
    hostile = search / f"runs{TITLE}{BIDI}"
    (search / "runs").rename(hostile)
    (hostile / "tiny" / "trials" / "0000003.json").write_text("{}")  # a stray copy: left out, with a warning
    code, out, err = cli_in_process("results", "tiny", "--storage", hostile)
    assert code == 0, err
    no_raw_control(out, err)
    [warning] = [line for line in err.splitlines() if line.startswith("showwork: warning:")]
    assert f"runs{SHOWN[0]}{SHOWN[3]}" in warning and "0000003.json" in warning

    code, out, err = cli_in_process("results", "nosuch", "--storage", hostile)
    assert code == 2
    no_raw_control(out, err)
    assert err.startswith("showwork: error: ") and f"runs{SHOWN[0]}{SHOWN[3]}" in err and err.count("\n") == 1

    code, out, err = cli_in_process("results", "tiny", f"--x{CLEAR}")  # argparse's own error quotes the option
    assert code == 2
    no_raw_control(out, err)
    assert "--x\\x1b[2J" in err


def _state(name: str, metric: str, params: dict) -> LiveState:
    counts = TrialCounts(finished=2, best_score=0.9, best_index=1)
    return LiveState(name, metric, 8, counts, (RunningTrial(3, params, 990.0),), 65.0, None, now=1000.0)


def test_the_live_table_shows_values_as_escapes_and_never_as_markup():
    params = {"act": TITLE, "mode": "[bold]x[/bold]", "end": "[/x]", "lr": 0.1}
    console = Console(file=io.StringIO(), width=200, color_system=None)
    console.print(live_table(_state(f"tiny{BIDI}", f"val{CLEAR}[/y]", params), max_params=4))
    drawn = console.file.getvalue()
    no_raw_control(drawn)
    assert "act=\\x1b]0;titl…" in drawn and "mode=[bold]x[/bo…" in drawn and "end=[/x]" in drawn  # cut as shown
    assert "val\\x1b[2J[/y]" in drawn and "tiny\\u202eexe.jpg" in drawn  # the footer names the search and metric
    assert "val\\x1b[2J" in drawn.splitlines()[0]  # the metric's column, cut to fit


def test_the_plain_progress_lines_show_a_trial_s_error_as_escapes(capsys):
    display = Progress(f"tiny{BIDI}", 8, f"val{CLEAR}", "max", [], enabled=True)
    with display:  # stdout is not a terminal here: one plain line per ended trial
        display.ended(trial_record(0, status="failed", score=None, error=f"ValueError: {TITLE} {BIDI}\ntraceback"))
    out = capsys.readouterr().out
    no_raw_control(out)
    assert out.startswith("trial 0: failed: ValueError: \\x1b]0;title\\x07 \\u202eexe.jpg;") and "tiny\\u202eexe.jpg" in out
    assert "best val\\x1b[2J" in out


def test_the_plain_progress_lines_fit_an_ascii_stdout_from_python(monkeypatch):
    """Issue 35 item 6: from Python (no command line fitting the streams), a trial's error in another script raised
    UnicodeEncodeError in Tune's hook on an ASCII stdout."""
    raw = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(raw, encoding="ascii", errors="strict", line_buffering=True))
    display = Progress("tiny", 8, "val", "max", [], enabled=True)
    with display:
        display.ended(trial_record(0, status="failed", score=None, error="ValueError: donn\u00e9es \u2264 0 \u2026"))
    assert sys.stdout.errors == "strict"  # as it was
    assert raw.getvalue().decode("ascii").startswith("trial 0: failed: ValueError: donn\\xe9es <= 0 ...; tiny: 1/8 done")


def test_a_failed_trial_without_a_message_is_a_progress_line_too(capsys):
    """Before: IndexError from the progress line of a failed record whose error was empty or missing."""
    display = Progress("tiny", 8, "val", "max", [], enabled=True)
    with display:
        display.ended(trial_record(0, status="failed", score=None, error=None))
        display.ended(trial_record(1, status="failed", score=None, error=""))
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(";")[0] for line in lines] == ["trial 0: failed: no reason recorded", "trial 1: failed: no reason recorded"]


@pytest.mark.slow  # ten commands in their own processes: 10-25 s
@pytest.mark.integration
def test_every_command_runs_on_an_ascii_terminal_with_ascii_fallbacks(search):
    """Issue 35 item 6. Before: with an ASCII output encoding (PYTHONIOENCODING=ascii, or LANG=C with locale
    coercion off) a command printing a glyph ("…", "—", "≤") or a value's non-ASCII character died with a
    UnicodeEncodeError (`validate` on the bidi override of a value, `plan --help` on its "—"). Now each such
    character is written in ASCII: its ASCII spelling, else a visible escape. (`search` runs on a dumb ASCII
    terminal in tests/integration/test_live_view.py.)"""
    rows = random.Random(5)
    for name in ("a", "b"):
        (search / f"{name}.csv").write_text("score\n" + "".join(f"{rows.random():.4f}\n" for _ in range(30)))
    commands = [("sample", "tiny.yaml", "-n", "3"), ("results", "tiny", "--storage", "runs"),
                ("best", "tiny", "--storage", "runs"), ("best", "tiny", "--storage", "runs", "--yaml"),
                ("validate", "tiny.yaml"), ("curve", "a.csv", "--score", "score"),
                ("compare", "a.csv", "b.csv", "--score", "score"), ("plan", "--k", "5"), ("plan", "--help"),
                ("report", "tiny", "--storage", "runs", "--out", "report")]
    env = search_process_environment(PYTHONIOENCODING="ascii")
    shown = {}
    for argv in commands:
        done = subprocess.run([sys.executable, "-m", "showwork", *argv], cwd=search, env=env, capture_output=True, timeout=120)
        out, err = done.stdout.decode("ascii"), done.stderr.decode("ascii")  # what an ASCII terminal shows
        assert done.returncode == 0 and "Traceback" not in err, (argv, err[-2000:])
        no_raw_control(out, err)
        shown[argv] = out
    assert "\\u202eexe.jpg" in shown[("validate", "tiny.yaml")]  # a value's character as a visible escape
    assert " -- per look" in shown[("plan", "--help")]  # "—" in its ASCII spelling
    error = subprocess.run([sys.executable, "-m", "showwork", "curve", "caf\u00e9 \u2264.csv", "--score", "score"],
                           cwd=search, env=env, capture_output=True, timeout=60)
    assert (error.returncode, error.stderr.decode("ascii")) == (2, "showwork: error: caf\\xe9 <=.csv: no such file\n")

"""Issue 26 item 2: `showwork search` on a terminal shows a live table of the running trials; Ctrl-C
leaves a clean terminal. The CLI runs in a pseudo-terminal of 80 columns and the test reads its bytes."""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import re
import signal
import struct
import subprocess
import sys
import termios
import textwrap
import threading
import time
from pathlib import Path

import pytest

from showwork.sampling import trial_config
from showwork.space import load_search_spec

from helpers import search_process_environment
from processes import kill_session

pytestmark = [pytest.mark.slow, pytest.mark.integration]

TRAINABLE = """\
import time


def train(config, *, seed, device, reporter, data):
    for epoch in range(data["epochs"]):
        time.sleep(data["sleep"])
        reporter(epoch=epoch, val_accuracy=config["x"] * (epoch + 1) / data["epochs"])
    return {"val_accuracy": config["x"]}
"""

SHOW_CURSOR, HIDE_CURSOR = b"\x1b[?25h", b"\x1b[?25l"
CONTROL = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\r")


def space_file(folder: Path, *, num_trials: int, sleep: float, epochs: int) -> Path:
    (folder / "steps.py").write_text(TRAINABLE)
    path = folder / "live.yaml"
    path.write_text(textwrap.dedent(f"""\
        name: live
        family: steps.py:train
        metric: {{name: val_accuracy, mode: max}}
        num_trials: {num_trials}
        seed: 3
        max_concurrent: 2
        max_retries: 0
        data: {{sleep: {sleep}, epochs: {epochs}}}
        space:
          x: {{distribution: uniform, low: 0.0, high: 1.0}}
          optimizer: {{distribution: categorical, choices: [sgd, adam]}}
          warmup_steps: 100
        """))
    return path


class Terminal:
    """``showwork ARGV`` on the slave side of an 80 x 24 pseudo-terminal, in its own session; a thread
    collects every byte the process writes."""

    def __init__(self, folder: Path, *argv, **environment: str) -> None:
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
        env = search_process_environment(**{"TERM": "xterm-256color", **environment})
        for name in ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "TERM_PROGRAM"):
            env.pop(name, None)
        self.process = subprocess.Popen([sys.executable, "-m", "showwork", *map(str, argv)], cwd=folder, env=env,
                                        stdin=slave, stdout=slave, stderr=slave, start_new_session=True)
        os.close(slave)
        self.master = master
        self.data = bytearray()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: every process holding the slave has ended
                return
            if not chunk:
                return
            self.data += chunk

    def text(self, data: bytes | None = None) -> str:
        """What was written, without the terminal's control sequences."""
        return CONTROL.sub(b"", bytes(self.data if data is None else data)).decode("utf-8", "replace")

    def wait_for(self, predicate, what: str, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while not predicate(self.text()):
            assert self.process.poll() is None, f"the search ended before {what}:\n{self.text()[-3000:]}"
            assert time.monotonic() < deadline, f"not {what} within {timeout:.0f} s:\n{self.text()[-3000:]}"
            time.sleep(0.1)

    def wait(self, timeout: float = 180) -> int:
        code = self.process.wait(timeout=timeout)
        self._reader.join(timeout=10)
        return code

    def close(self) -> None:
        kill_session(self.process)  # what is left of its Ray
        self._reader.join(timeout=10)
        with contextlib.suppress(OSError):
            os.close(self.master)


def search(folder: Path, space: Path, **environment: str) -> Terminal:
    return Terminal(folder, "search", space, "--num-cpus", 2, "--storage", "runs",
                    "--tracking-uri", f"sqlite:///{folder / 'mlflow.db'}", **environment)


ROW = re.compile(r"^\s*(\d+)\s+(x=\S+ optimizer=\S+)\s+(\d+:\d\d)\s+(\d+|-)\s+(\S+)\s*$", re.MULTILINE)


def params_shown(index: int, spec) -> str:
    config = trial_config(spec.space, spec.seed, index)
    return f"x={config['x']:.3g} optimizer={config['optimizer']}"


def test_a_search_on_a_terminal_shows_the_running_trials_their_params_and_the_counts(home):
    space = space_file(home, num_trials=4, sleep=0.4, epochs=4)
    spec = load_search_spec(space)
    terminal = search(home, space)
    try:
        terminal.wait_for(lambda text: any(epoch != "-" for *_, epoch, _ in ROW.findall(text)),
                          "a running trial's epoch was shown")
        code = terminal.wait()
    finally:
        terminal.close()
    text, data = terminal.text(), bytes(terminal.data)
    assert code == 0, text[-3000:]
    assert re.search(r"trial\s+parameters\s+elapsed\s+epoch\s+val_accuracy", text)  # the table's header
    rows = ROW.findall(text)
    assert {int(index) for index, *_ in rows} <= set(range(4))
    for index, params, _, epoch, value in rows:  # the configuration each trial got, its last report
        assert params == params_shown(int(index), spec)
        if epoch != "-":
            x = trial_config(spec.space, spec.seed, int(index))["x"]
            assert float(value) == pytest.approx(x * (int(epoch) + 1) / 4, rel=1e-3)
    assert "warmup_steps" not in text  # a constant: the same for every trial, not shown
    assert re.search(r"live: \d finished, 0 failed, 0 timed out, [12] running, \d left of 4", text)  # the counts
    # the final state: everything ended, the best with its trial, the cursor shown again, then the summary
    best = max(range(4), key=lambda i: trial_config(spec.space, spec.seed, i)["x"])
    final = text.rindex("live: 4 finished, 0 failed, 0 timed out, 0 running, 0 left of 4")
    assert f"best val_accuracy {trial_config(spec.space, spec.seed, best)['x']:.6g} (trial {best})" in text[final:]
    assert data.rindex(SHOW_CURSOR) > data.rindex(HIDE_CURSOR)
    assert text.index("search live: 4 finished, 0 failed, 0 timed out of 4", final) > final
    assert all(len(line) <= 80 for line in text.splitlines() if ROW.match(line))


def test_ctrl_c_stops_the_live_table_shows_the_cursor_and_then_says_how_to_resume(home):
    space = space_file(home, num_trials=20, sleep=0.5, epochs=4)
    terminal = search(home, space)
    try:
        terminal.wait_for(lambda text: re.search(r"live: [1-9]\d* finished", text), "a trial finished")
        os.killpg(terminal.process.pid, signal.SIGINT)  # a terminal's Ctrl-C: SIGINT to the foreground group
        code = terminal.wait(timeout=120)
    finally:
        terminal.close()
    text, data = terminal.text(), bytes(terminal.data)
    assert code == 128 + signal.SIGINT, text[-3000:]
    assert "Traceback" not in text
    shown = data.rindex(SHOW_CURSOR)
    assert shown > data.rindex(HIDE_CURSOR)  # rich gave the cursor back ...
    after = terminal.text(data[shown:])
    assert re.search(r"interrupted: \d+ of 20 trials finished", after)  # ... before the interrupt was printed
    assert after.rstrip().splitlines()[-1] == "  showwork resume live --storage runs"
    assert b"\x1b[" not in data[data.index(b"interrupted: ", shown):]  # nothing drawn after it


def test_a_dumb_terminal_in_an_ascii_locale_gets_a_plain_line_as_each_trial_ends(home):
    """Issue 35 item 6. Before: with TERM=dumb nothing showed until the search ended (rich's live display does not
    draw there), and in an ASCII locale (LANG=C, locale coercion off) the search died at start-up on the "…"
    of its start-up line (UnicodeEncodeError)."""
    space = space_file(home, num_trials=3, sleep=0.5, epochs=2)
    terminal = search(home, space, TERM="dumb", LANG="C", LC_ALL="C", PYTHONCOERCECLOCALE="0", PYTHONUTF8="0")
    try:
        terminal.wait_for(lambda text: re.search(r"^trial \d: finished; live: 1/3 done", text, re.MULTILINE),
                          "the first trial's line")
        running_after_the_first_line = terminal.process.poll() is None
        code = terminal.wait()
    finally:
        terminal.close()
    data = bytes(terminal.data)
    assert code == 0, terminal.text()[-3000:]
    assert running_after_the_first_line  # each line is written as its trial ends, not at the end
    assert b"\x1b" not in data, [line for line in data.splitlines() if b"\x1b" in line]  # no cursor movement, no colour
    data.decode("ascii")  # what an ASCII terminal can show
    text = data.decode("ascii")
    ended = re.findall(r"^trial (\d): finished; live: (\d)/3 done \(0 failed\)", text, re.MULTILINE)
    assert sorted(index for index, _ in ended) == ["0", "1", "2"] and [done for _, done in ended] == ["1", "2", "3"]
    assert "search live: 3 finished, 0 failed, 0 timed out of 3" in text

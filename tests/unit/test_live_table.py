"""The live table of a running search (issue 26 item 2), rendered by rich at 80 columns."""

from __future__ import annotations

import io
import pickle
import re

from rich.console import Console
from rich.live import Live

from showwork.run.driver import search_context
from showwork.run.progress import LiveState, Progress, RunningTrial, clock, live_table, params_text
from showwork.run.summary import TrialCounts
from showwork.space import load_search_spec

from helpers import REPO_ROOT, trial_record

PARAMS = {"lr": 0.0591249649, "l2": 0.000267068, "momentum": 0.586, "batch_size": 16, "ngrams": 1,
          "optimizer.name": "adamw_with_a_rather_long_name"}


def rendered(state: LiveState, width: int = 80, **options) -> list[str]:
    console = Console(record=True, width=width, file=io.StringIO())
    console.print(live_table(state, **options))
    return console.export_text().splitlines()


def state(running=(), counts=TrialCounts(), total=20, metric="val_accuracy", elapsed=65.0, eta=None) -> LiveState:
    return LiveState("demo", metric, total, counts, tuple(running), elapsed, eta, now=1000.0)


def trial(index: int, params=PARAMS, since=990.0, epoch=None, value=None) -> RunningTrial:
    running = RunningTrial(index, dict(params), since)
    running.epoch, running.value = epoch, value
    return running


def test_each_running_trial_is_a_row_with_its_params_elapsed_time_and_last_report():
    lines = rendered(state([trial(3, since=925.0, epoch=4, value=0.812345), trial(7, {"x": 0.5})]))
    assert re.match(r"trial\s+parameters\s+elapsed\s+epoch\s+val_accuracy$", lines[0].strip())
    row = next(line for line in lines if line.split()[:1] == ["3"])
    assert row.split()[1:4] == ["lr=0.0591", "l2=0.000267", "momentum=0.586"]
    assert row.split()[-3:] == ["1:15", "4", "0.8123"]  # 75 s, epoch 4, the value to 4 digits
    assert next(line for line in lines if line.split()[:1] == ["7"]).split()[1:] == ["x=0.5", "0:10", "-", "-"]


def test_the_table_fits_80_columns_and_cuts_many_or_long_params_with_an_ellipsis():
    lines = rendered(state([trial(i) for i in range(3)], metric="validation_macro_f1_score"))
    assert all(len(line) <= 80 for line in lines)
    row = next(line for line in lines if line.split()[:1] == ["0"])
    assert "…" in row and "optimizer.name" not in row
    assert "validation_ma…" in lines[0]  # a long metric name is cut in the header
    assert params_text(PARAMS) == "lr=0.0591 l2=0.000267 momentum=0.586 batch_size=16 …"
    assert params_text({"name": "a" * 20}) == "name=" + "a" * 11 + "…"
    assert params_text({"x": 1, "y": True}) == "x=1 y=True"


def test_at_most_max_rows_running_trials_are_listed_and_the_rest_counted():
    lines = rendered(state([trial(i) for i in range(13)]), max_rows=10)
    assert [int(line.split()[0]) for line in lines if line.split()[:1] and line.split()[0].isdigit()] == list(range(10))
    assert any(line.strip() == "+ 3 more running" for line in lines)
    assert "13 running" in "\n".join(lines)


def test_the_footer_counts_finished_failed_timed_out_running_left_and_names_the_best_trial():
    counts = TrialCounts(finished=10, failed=2, timeout=3, best_score=0.8451, best_index=7)
    text = "\n".join(rendered(state([trial(20), trial(21)], counts, total=40, elapsed=3725.0, eta=130.0)))
    assert "demo: 10 finished, 2 failed, 3 timed out, 2 running, 23 left of 40" in text
    assert "best val_accuracy 0.8451 (trial 7); elapsed 1:02:05, ETA 2:10" in text


def test_before_any_end_the_best_and_eta_are_unknown_and_an_empty_table_says_so():
    text = "\n".join(rendered(state()))
    assert "(no trial running)" in text
    assert "best val_accuracy -; elapsed 1:05, ETA ?" in text


def test_clock_is_minutes_and_seconds_then_hours():
    assert [clock(s) for s in (0, 9.9, 61, 3599, 3600, 86399)] == ["0:00", "0:09", "1:01", "59:59", "1:00:00",
                                                                  "23:59:59"]


def live_progress(tmp_path, num_trials=6) -> tuple[Progress, io.StringIO]:
    """A Progress drawing on a terminal console into a buffer, as on a tty."""
    spec = load_search_spec(REPO_ROOT / "search_spaces" / "demo_sst2.yaml", {"num_trials": num_trials})
    context = search_context(spec, tmp_path)
    display = Progress(spec.name, spec.num_trials, spec.metric.name, spec.metric.mode, [], trial_of=context.trial,
                       fixed=("epochs", "patience"))
    out = io.StringIO()
    display._live = Live(get_renderable=display._render, console=Console(file=out, force_terminal=True, width=80),
                         auto_refresh=False)
    return display, out


def test_the_hooks_record_the_trials_config_its_reports_and_its_end(tmp_path):
    display, _ = live_progress(tmp_path)
    display.started(2)
    params = display.trial_of(2)[0]
    assert display.running[2].params == {k: v for k, v in params.items() if k not in ("epochs", "patience")}
    display.reported(2, [{"epoch": 0, "val_accuracy": 0.5}, {"epoch": 1, "loss": 0.3}])
    assert (display.running[2].epoch, display.running[2].value) == (1, 0.5)  # the metric's last value
    display.reported(9, [{"epoch": 0, "val_accuracy": 0.9}])  # not running (ended meanwhile): ignored
    display.ended(trial_record(2, score=0.75, status="timeout"))
    shown = display.state()
    assert shown.running == () and shown.counts.timeout == 1


def test_the_table_is_rebuilt_only_when_something_changed(tmp_path):
    display, _ = live_progress(tmp_path)
    display.started(0)
    first = display._render()
    assert display._render() is first  # nothing new (within the same second)
    display.reported(0, [{"epoch": 0, "val_accuracy": 0.5}])
    assert display._render() is not first


def test_the_live_table_pickles_without_its_terminal_and_lock(tmp_path):
    display, _ = live_progress(tmp_path)
    display.started(1)
    copy = pickle.loads(pickle.dumps(display))
    assert copy._live is None and set(copy.running) == {1}
    copy.started(2)  # its lock was made again
    assert set(copy.running) == {1, 2}


def test_leaving_the_live_table_on_an_interrupt_shows_the_cursor_again(tmp_path, monkeypatch):
    monkeypatch.setenv("TERM", "xterm-256color")  # on TERM=dumb rich neither hides nor shows the cursor
    display, out = live_progress(tmp_path)
    display._live.start(refresh=True)
    display.started(0)
    display.__exit__(KeyboardInterrupt, KeyboardInterrupt(), None)
    written = out.getvalue()
    assert written.rindex("\x1b[?25h") > written.rindex("\x1b[?25l")
    assert display._live is None and not display.live

"""What a search shows on the terminal: the start-up line, then the live view of the trials (a table on a
terminal that can redraw, plain lines otherwise: a pipe, a file, ``TERM=dumb``). In a Jupyter kernel the same
table is drawn in the cell's output (:class:`CellDisplay`), updated in place.

Every text of the search (its name, the metric's, a parameter's name and value, a trial's error) is
:func:`~showwork.escaping.terminal_text`, and goes to rich as a :class:`rich.text.Text`, never as a
``str`` (which rich reads as markup: a value "[/x]" stopped the table's drawing with a MarkupError).
"""

from __future__ import annotations

import contextlib
import io
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from rich import box
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from showwork import faults
from showwork.escaping import fitted_to_encoding, terminal_text
from showwork.run.summary import TrialCounts, counts_with, trial_counts

__all__ = ["CELL_WIDTH", "MAX_PARAMS", "MAX_ROWS", "REFRESH_PER_S", "CellDisplay", "LiveState", "Progress", "RunningTrial",
           "StartupLine", "clock", "in_jupyter", "live_table", "params_text", "redrawing_terminal"]

REFRESH_PER_S = 4
"""The live table's redraws per second at most (rich's refresh thread; Tune's hooks never draw)."""
MAX_ROWS = 10
"""Running trials the live table lists; the rest are counted ("+ M more running")."""
MAX_PARAMS = 4
"""Parameters of a running trial the live table names; more are shown as "…"."""


def redrawing_terminal() -> bool:
    """Whether stdout is a terminal that moves its cursor: a tty whose ``TERM`` is not ``dumb`` or ``unknown``.

    rich's own test (``Console.is_terminal`` and not ``is_dumb_terminal``): on a dumb terminal its live
    display draws nothing until it stops, so a search there shows the plain lines of a pipe instead.
    """
    console = Console(file=sys.stdout)
    return console.is_terminal and not console.is_dumb_terminal


def in_jupyter() -> bool:
    """Whether this Python is a Jupyter kernel, as rich detects it (``Console.is_jupyter``): IPython's
    ``get_ipython()`` is a ``ZMQInteractiveShell`` (a notebook, JupyterLab, qtconsole), Colab's or Databricks'.
    IPython is never imported here: rich only looks for ``get_ipython`` among the builtins."""
    return Console().is_jupyter


CELL_WIDTH = 100
"""Columns of the live table drawn in a Jupyter cell (a notebook's output is wider than a terminal's 80)."""


def _cell_bundle(renderable) -> dict[str, str]:
    """What a Jupyter cell shows of ``renderable``: rich's HTML of it (rich escapes every text), and its plain text."""
    console = Console(record=True, file=io.StringIO(), width=CELL_WIDTH, force_jupyter=False, force_terminal=False)
    console.print(renderable)
    text = console.export_text(clear=False)
    html = console.export_html(inline_styles=True, code_format='<pre style="font-family:monospace;line-height:1.3">{code}</pre>')
    return {"text/plain": text, "text/html": html}


class CellDisplay:
    """The live view in a Jupyter cell: one output (IPython's ``display_id``) redrawn in place.

    rich's own live display in Jupyter needs ipywidgets; a display id needs IPython alone, which every kernel has.
    A thread of its own redraws it at most :data:`REFRESH_PER_S` times a second (the elapsed time moves between
    trials), as rich's refresh thread does on a terminal; :meth:`close` stops it (also on an interrupt) and
    draws the last state once, so that nothing draws after the search and the cell ends in the final table.
    """

    def __init__(self, render: Callable[[], object], transient: bool = False) -> None:
        # lazy: IPython exists in a Jupyter kernel only (in_jupyter() said this is one)
        from IPython.display import display

        self._render, self._transient = render, transient
        self._handle = display(_cell_bundle(render()), raw=True, display_id=True)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._redraw, name="showwork-cell-progress", daemon=True)
        self._thread.start()

    def _redraw(self) -> None:
        drawn = None
        while not self._stop.wait(1 / REFRESH_PER_S):
            renderable = self._render()
            if renderable is not drawn:  # Progress keeps its renderable while nothing changed: not exported again
                self._handle.update(_cell_bundle(renderable), raw=True)
                drawn = renderable

    @property
    def drawing(self) -> bool:
        """Whether the redrawing thread still runs."""
        return self._thread.is_alive()

    def close(self) -> None:
        """Stop redrawing (the thread is joined) and draw the last state, or nothing if ``transient``."""
        self._stop.set()
        self._thread.join()
        self._handle.update({"text/plain": ""} if self._transient else _cell_bundle(self._render()), raw=True)


class StartupLine:
    """The progress line before the first trial (on a terminal, or in a Jupyter cell): "starting Ray…", "opening MLflow…".

    Transient: it is gone when the trials start (their live view follows)."""

    def __init__(self, name: str, enabled: bool = True) -> None:
        self.name = name
        self.enabled = enabled and redrawing_terminal()
        self.in_cell = enabled and not self.enabled and in_jupyter()
        self.start = time.perf_counter()
        self._live = None
        self._cell: CellDisplay | None = None
        self._state = ""

    def __enter__(self) -> "StartupLine":
        self._fitted = contextlib.ExitStack()
        if self.enabled:
            self._fitted.enter_context(fitted_to_encoding(sys.stdout))  # its "…" on an ASCII terminal (from Python too)
            self._live = Live(Text(""), refresh_per_second=4, transient=True, get_renderable=self._render)
            self._live.__enter__()
        elif self.in_cell:
            self._cell = CellDisplay(self._render, transient=True)
        return self

    def __exit__(self, *exc) -> None:
        if self._live is not None:
            self._live.__exit__(*exc)
            self._live = None
        if self._cell is not None:
            cell, self._cell = self._cell, None
            cell.close()
        self._fitted.close()

    def show(self, state: str) -> None:
        self._state = state

    def _render(self):
        elapsed = time.perf_counter() - self.start
        return Text(terminal_text(f"{self.name}: {self._state}…, elapsed {elapsed:.0f} s") if self._state else "")


class RunningTrial:
    """What the live table shows of one running trial: its parameters, since when it runs, its last report."""

    __slots__ = ("index", "params", "since", "epoch", "value")

    def __init__(self, index: int, params: dict, since: float) -> None:
        self.index, self.params, self.since = index, params, since
        self.epoch: int | None = None  # the last reported epoch
        self.value: float | None = None  # the last reported value of the search's metric

    def __getstate__(self) -> tuple:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __setstate__(self, state: tuple) -> None:
        for name, value in zip(self.__slots__, state):
            setattr(self, name, value)


@dataclass(frozen=True)
class LiveState:
    """One moment of a search, as the live table shows it (:func:`live_table`).

    ``running`` is in order of index; ``elapsed_s`` is the driver's time since the search started,
    ``now`` the monotonic clock that the trials' ``since`` use; ``eta_s`` is None before a trial ended.
    """

    name: str
    metric: str
    total: int
    counts: TrialCounts
    running: tuple[RunningTrial, ...]
    elapsed_s: float
    eta_s: float | None
    now: float


def live_table(state: LiveState, max_rows: int = MAX_ROWS, max_params: int = MAX_PARAMS) -> Group:
    """The live view of a running search: a table of the running trials (at most ``max_rows``, then
    "+ M more running"), with the first ``max_params`` of each one's sampled parameters, its elapsed time
    and its last reported epoch and metric value; under it the counts, the best score with its trial,
    the elapsed time and the expected time left. Fits an 80-column terminal: the parameters' column
    takes what the others leave and ends in "…" where it is cut."""
    table = Table(box=box.SIMPLE_HEAD, expand=True, pad_edge=False, show_edge=False)
    shown = terminal_text(state.metric, one_line=True)
    metric = shown if len(shown) <= 14 else shown[:13] + "…"
    table.add_column("trial", justify="right", no_wrap=True, min_width=5)
    table.add_column("parameters", no_wrap=True, overflow="ellipsis", ratio=1)
    table.add_column("elapsed", justify="right", no_wrap=True, min_width=7)
    table.add_column("epoch", justify="right", no_wrap=True, min_width=5)
    table.add_column(Text(metric), justify="right", no_wrap=True, min_width=len(metric))
    for trial in state.running[:max_rows]:
        table.add_row(str(trial.index), Text(params_text(trial.params, max_params)), clock(state.now - trial.since),
                      "-" if trial.epoch is None else str(trial.epoch),
                      "-" if trial.value is None else f"{trial.value:.4g}")
    more = len(state.running) - max_rows
    if more > 0:
        table.add_row("", f"+ {more} more running", "", "", "")
    if not state.running:
        table.add_row("", "(no trial running)", "", "", "")
    counts = state.counts
    left = max(0, state.total - counts.ended - len(state.running))
    best = "-" if counts.best_score is None else f"{counts.best_score:.6g} (trial {counts.best_index})"
    footer = Text.assemble(
        (f"{terminal_text(state.name, one_line=True)}: ", "bold"),
        f"{counts.finished} finished, {counts.failed} failed, {counts.timeout} timed out, "
        f"{len(state.running)} running, {left} left of {state.total}\n",
        f"best {shown} {best}; elapsed {clock(state.elapsed_s)}, "
        f"ETA {'?' if state.eta_s is None else clock(state.eta_s)}",
    )
    return Group(table, footer)


def params_text(params: dict, max_params: int = MAX_PARAMS) -> str:
    """``name=value`` of the first ``max_params`` parameters (floats to 3 significant digits, long text
    cut), then "…" when there are more; names and values as :func:`~showwork.escaping.terminal_text` on one line."""
    shown = [f"{terminal_text(name, one_line=True)}={_short(value)}" for name, value in list(params.items())[:max_params]]
    return " ".join(shown) + (" …" if len(params) > max_params else "")


def _short(value) -> str:
    if isinstance(value, float):
        return f"{value:.3g}"
    text = terminal_text(str(value), one_line=True)  # cut as shown
    return text if len(text) <= 12 else text[:11] + "…"


def clock(seconds: float) -> str:
    """``seconds`` as m:ss, or h:mm:ss from an hour on."""
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Progress:
    """Live progress of a search's trials.

    On a terminal that redraws (:func:`redrawing_terminal`), a live table (:func:`live_table`, rich, redrawn
    at most :data:`REFRESH_PER_S` times a second by rich's own thread, rebuilt only when something changed or a
    second passed); otherwise (a pipe, a file, ``TERM=dumb``), and
    unless ``enabled`` is False (``--no-progress``: nothing), one plain line per ended trial: done /
    running / failed, best so far, elapsed and ETA. Tune's hooks (:class:`~showwork.run.callback.ProjectionCallback`)
    only record what happened (:meth:`started`, :meth:`reported`, :meth:`ended`, :meth:`dropped`): they
    never draw.

    ``trial_of`` gives a trial's configuration (``index -> (params, seed)``), shown in the table without
    the parameters named in ``fixed`` (the space's constants).
    """

    def __init__(self, name: str, num_trials: int, metric: str, mode: str, records, enabled: bool = True,
                 trial_of: Callable[[int], tuple[dict, int]] | None = None, fixed: Iterable[str] = ()):
        self.name, self.metric, self.mode = name, metric, mode
        self.total = num_trials
        self.records = {r.index: r for r in records if r.index < self.total}
        self.counts = trial_counts(self.records.values(), self.total, mode)
        self.already = self.counts.ended
        self.running: dict[int, RunningTrial] = {}
        self.started_any = False
        self.waiting: str | None = None  # while no node fits a trial and the cluster scales up
        self.enabled = enabled
        self.trial_of, self.fixed = trial_of, frozenset(fixed)
        self.start = time.perf_counter()
        self._live = None
        self._lock = threading.Lock()  # the hooks change what rich's refresh thread reads
        self._version = 0
        self._drawn: tuple | None = None  # (version, elapsed second) of the renderable drawn last
        self._renderable = None
        self._fitted: contextlib.ExitStack | None = None  # fitted_to_encoding while entered
        self._cell: CellDisplay | None = None  # the live table in a Jupyter cell, while entered

    def __getstate__(self):
        # Ray Tune pickles its callbacks (and so this display) with the experiment state; the live
        # terminal display (with its lock) stays in the driver.
        state = dict(self.__dict__)
        state["_live"] = state["_lock"] = state["_renderable"] = state["_fitted"] = state["_cell"] = None
        return state

    def __setstate__(self, state) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def __enter__(self):
        # What stdout's encoding lacks (a value's character, the table's "…") in ASCII: from Python, not only
        # from the command line, which fits its streams so too.
        self._fitted = contextlib.ExitStack()
        if self.enabled:
            self._fitted.enter_context(fitted_to_encoding(sys.stdout))
        if self.enabled and redrawing_terminal():
            self._live = Live(get_renderable=self._render, refresh_per_second=REFRESH_PER_S, transient=False)
            self._live.__enter__()
        elif self.enabled and in_jupyter():  # the table in the cell, in place of the plain lines
            self._cell = CellDisplay(self._render)
        elif self.enabled and self.waiting:
            print(terminal_text(f"{self.name}: {self.waiting}"), flush=True)
        return self

    def __exit__(self, *exc):
        # Also on Ctrl-C (KeyboardInterrupt): rich draws the last state and shows the cursor again,
        # before the driver prints the interrupt.
        if self._live is not None:
            live, self._live = self._live, None
            live.__exit__(*exc)
        if self._cell is not None:  # the same in a Jupyter cell: its thread stops, the last state stays drawn
            cell, self._cell = self._cell, None
            cell.close()
        if self._fitted is not None:
            self._fitted.close()

    @property
    def live(self) -> bool:
        """Whether the live table is drawn now (on the terminal, or in a Jupyter cell)."""
        return self._live is not None or self._cell is not None

    def _eta(self, elapsed: float) -> float | None:
        ended = self.counts.ended - self.already
        return elapsed / ended * (self.total - self.counts.ended) if ended else None

    def _line(self) -> str:
        elapsed = time.perf_counter() - self.start
        counts = self.counts
        eta = self._eta(elapsed)
        eta = "?" if eta is None else f"{eta:.0f} s"
        best = "-" if counts.best_score is None else f"{counts.best_score:.6g}"
        if self.waiting and not self.started_any:
            return f"{self.name}: {self.waiting}, elapsed {elapsed:.0f} s"
        return (
            f"{self.name}: {counts.ended}/{self.total} done ({counts.unfinished} failed),"
            f" {len(self.running)} running, best {self.metric} {best}, elapsed {elapsed:.0f} s, ETA {eta}"
        )

    def state(self) -> LiveState:
        """What the live table shows now."""
        elapsed = time.perf_counter() - self.start
        with self._lock:
            running = tuple(self.running[index] for index in sorted(self.running))
            counts = self.counts
        return LiveState(self.name, self.metric, self.total, counts, running, elapsed, self._eta(elapsed),
                         time.monotonic())

    def _render(self):
        """The renderable rich's refresh thread draws: rebuilt when something changed or a second passed."""
        key = (self._version, int(time.perf_counter() - self.start))
        if key != self._drawn or self._renderable is None:
            if self.waiting and not self.started_any:
                self._renderable = Text(terminal_text(self._line()))
            else:
                self._renderable = live_table(self.state())
            self._drawn = key
        return self._renderable

    def started(self, index: int) -> None:
        params = {}
        if self.live and self.trial_of is not None:  # the configuration only the table shows
            params = {k: v for k, v in self.trial_of(index)[0].items() if k not in self.fixed}
        with self._lock:
            self.running[index] = RunningTrial(index, params, time.monotonic())
            self.started_any = True
            self._version += 1

    def reported(self, index: int, rows: list[dict]) -> None:
        """A running trial's new epochs (numbers only): the table shows its last epoch and metric value."""
        trial = self.running.get(index)
        if trial is None or not rows:
            return
        for row in reversed(rows):
            if self.metric in row:
                trial.value = row[self.metric]
                break
        trial.epoch = rows[-1].get("epoch", trial.epoch)
        self._version += 1

    def dropped(self, index: int) -> None:
        """Trial ``index`` stopped without a record (an interrupt, a storage failure): no longer running."""
        with self._lock:
            self.running.pop(index, None)
            self._version += 1

    def ended(self, record) -> None:
        with self._lock:
            self.running.pop(record.index, None)
            replaced = self.records.get(record.index)
            self.records[record.index] = record
            if replaced is None:  # a new index (the usual case): counted in O(1)
                best = None if self.counts.best_index is None else self.records[self.counts.best_index]
                self.counts = counts_with(self.counts, record, best, self.total, self.mode)
            else:  # the index ended again: counted anew
                self.counts = trial_counts(self.records.values(), self.total, self.mode)
            self._version += 1
        if not self.live and self.enabled:
            reason = next(iter((record.error or "").splitlines()), "no reason recorded")  # its first line
            status = record.status if record.status == "finished" else f"{record.status}: {reason[:80]}"
            print(terminal_text(f"trial {record.index}: {status}; {self._line()}"), flush=True)
        faults.point("trial-ended")

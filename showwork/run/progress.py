"""What a search shows on the terminal: the start-up line, then the live progress of the trials."""

from __future__ import annotations

import sys
import time

from rich.live import Live
from rich.text import Text

from showwork import faults
from showwork.run.summary import trial_counts

__all__ = ["Progress", "StartupLine"]


class StartupLine:
    """The progress line before the first trial (on a terminal): "starting Ray…", "opening MLflow…"."""

    def __init__(self, name: str, enabled: bool = True) -> None:
        self.name = name
        self.enabled = enabled and sys.stdout.isatty()
        self.start = time.perf_counter()
        self._live = None
        self._state = ""

    def __enter__(self) -> "StartupLine":
        if self.enabled:
            self._live = Live(Text(""), refresh_per_second=4, transient=True, get_renderable=self._render)
            self._live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._live is not None:
            self._live.__exit__(*exc)
            self._live = None

    def show(self, state: str) -> None:
        self._state = state

    def _render(self):
        elapsed = time.perf_counter() - self.start
        return Text(f"{self.name}: {self._state}…, elapsed {elapsed:.0f} s" if self._state else "")


class Progress:
    """Live progress: done / running / failed, best so far, elapsed and ETA (rich on a terminal)."""

    def __init__(self, name: str, num_trials: int, metric: str, mode: str, records, enabled: bool = True):
        self.name, self.metric, self.mode = name, metric, mode
        self.total = num_trials
        self.records = {r.index: r for r in records if r.index < self.total}
        self.counts = trial_counts(self.records.values(), self.total, mode)
        self.already = self.counts.ended
        self.running: set[int] = set()
        self.started_any = False
        self.waiting: str | None = None  # while no node fits a trial and the cluster scales up
        self.enabled = enabled
        self.start = time.perf_counter()
        self._live = None

    def __getstate__(self):
        # Ray Tune pickles its callbacks (and so this display) with the experiment state; the live
        # terminal display (with its lock) stays in the driver.
        state = dict(self.__dict__)
        state["_live"] = None
        return state

    def __enter__(self):
        if self.enabled and sys.stdout.isatty():
            self._live = Live(self._render(), refresh_per_second=4, transient=False)
            self._live.__enter__()
        elif self.enabled and self.waiting:
            print(f"{self.name}: {self.waiting}", flush=True)
        return self

    def __exit__(self, *exc):
        if self._live is not None:
            self._live.update(self._render())
            self._live.__exit__(*exc)

    def _line(self) -> str:
        elapsed = time.perf_counter() - self.start
        counts = self.counts
        ended = counts.ended - self.already
        left = self.total - counts.ended
        eta = f"{elapsed / ended * left:.0f} s" if ended else "?"
        best = "-" if counts.best_score is None else f"{counts.best_score:.6g}"
        if self.waiting and not self.started_any:
            return f"{self.name}: {self.waiting}, elapsed {elapsed:.0f} s"
        return (
            f"{self.name}: {counts.ended}/{self.total} done ({counts.unfinished} failed),"
            f" {len(self.running)} running, best {self.metric} {best}, elapsed {elapsed:.0f} s, ETA {eta}"
        )

    def _render(self):
        return Text(self._line())

    def started(self, index: int) -> None:
        self.running.add(index)
        self.started_any = True
        if self._live is not None:
            self._live.update(self._render())

    def ended(self, record) -> None:
        self.running.discard(record.index)
        self.records[record.index] = record
        self.counts = trial_counts(self.records.values(), self.total, self.mode)
        if self._live is not None:
            self._live.update(self._render())
        elif self.enabled:
            status = record.status if record.status == "finished" else f"{record.status}: {(record.error or '').splitlines()[0][:80]}"
            print(f"trial {record.index}: {status}; {self._line()}", flush=True)
        faults.point("trial-ended")

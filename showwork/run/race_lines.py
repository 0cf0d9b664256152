"""What a race says as it runs and what it decided: ``showwork race``'s lines and :class:`RaceDecision`.

The command line and ``showwork.race(...)`` print the same lines, once each (:class:`RaceLines`): the
race's start, each look as it is decided, its end. A look's line and the end's come from the race's
record, which the race decided from the two ledgers.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

from showwork.escaping import terminal_text
from showwork.statistics import LookDecision
from showwork.store.races import RACE_FILE, RACES_FOLDER, RaceRecord

__all__ = ["RaceDecision", "RaceLines", "budgets_text", "end_line", "look_line", "start_line"]


@dataclass(frozen=True)
class RaceDecision:
    """What a race decided, as its record (recomputed from the ledgers: :func:`verified_race`) says.

    Attributes
    ----------
    status : {"running", "decided", "undecided", "undecidable"}
    winner : str or None
        The search resolved better at every budget of the race (None: no winner).
    look : int or None
        Trials per model at the look the race stopped at (None while it runs); where it ended
        ``undecidable``, the look it could not decide.
    look_number : int or None
        That look's place in the schedule, counting from 1.
    saved_trials : int
        Trials per model not run against the last look.
    why : str
        The race's end in one sentence, as ``showwork race`` ends (:func:`end_line`).
    last : LookDecision or None
        The last look taken: the evidence at each budget.
    """

    status: str
    winner: str | None
    look: int | None
    look_number: int | None
    saved_trials: int
    why: str
    last: LookDecision | None

    @classmethod
    def of(cls, race: RaceRecord) -> RaceDecision:
        last = race.looks[-1] if race.looks else None
        if race.status == "undecidable":  # it ended at the look it could not decide
            look, number = race.settings.looks[len(race.looks)], len(race.looks) + 1
        else:
            look, number = race.stopped_at, None if race.stopped_at is None else last.number
        return cls(race.status, race.winner, look, number, race.saved_trials(), end_line(race), last)


def budgets_text(budgets: Sequence[float]) -> str:
    """The budgets K of a race as its lines write them: ``1,2.5``."""
    return ",".join(f"{k:g}" for k in budgets)


def start_line(race: RaceRecord, storage_dir: str | os.PathLike) -> str:
    """The line a race starts with: where it starts, the two searches (and what was adopted), its settings, its record."""
    s = race.settings
    a, b = race.names
    where = f"from look {len(race.looks) + 1}" if race.looks and race.next_look else "from the start" if not race.looks else "ended"
    adopted = [f"{search.name} with {search.adopted_trials} trials recorded" for search in race.searches
               if search.adopted_trials is not None]
    return (f"race {race.name} ({where}): {a} vs {b}; looks {','.join(map(str, s.looks))}, decided at K ="
            f" {budgets_text(s.budgets)} by the {s.decide_by} curves, joint confidence {s.confidence:g} per model"
            f" (wrong-winner bound {1 - s.confidence ** 2:.3g}); " + (f"adopted {' and '.join(adopted)}; " if adopted else "")
            + f"record {storage_dir}/{RACES_FOLDER}/{race.name}/{RACE_FILE}")


def look_line(race: RaceRecord, decision: LookDecision) -> str:
    """One line per look: n, the evidence at each K, the decision, and the trials saved when it stops."""
    total = len(race.settings.looks)
    evidence = "; ".join(
        f"K={k:g}: {level}" + (f" for {favoured}" if favoured else "") + (" (resolved)" if resolved else "")
        for k, level, favoured, resolved in zip(decision.budgets, decision.levels, decision.favoured, decision.resolved)
    )
    head = f"look {decision.number} of {total}, n = {decision.look} per model: {evidence}"
    if decision.decided:
        return (f"{head} -> {decision.winner} wins; stopped, {race.saved_trials()} trials per model saved against"
                f" the last look ({race.settings.looks[-1]})")
    if race.status == "undecided":
        return f"{head} -> no winner at the last look"
    return f"{head} -> no winner yet; on to n = {race.next_look}"


def end_line(race: RaceRecord) -> str:
    """What the race ended with (or how far it got)."""
    if race.status == "decided":
        return (f"race {race.name}: {race.winner} is better at every K = {budgets_text(race.settings.budgets)} (strong"
                f" evidence, resolved) after {race.stopped_at} trials per model; {race.saved_trials()} trials per model"
                f" saved against the last look ({race.settings.looks[-1]})")
    if race.status == "undecided":
        last = race.looks[-1]
        said = ", ".join(f"K={k:g}: {level}" + (f" for {f}" if f else "")
                         for k, level, f in zip(last.budgets, last.levels, last.favoured))
        return (f"race {race.name}: undecided after all {len(race.looks)} looks ({race.settings.looks[-1]} trials per"
                f" model); evidence at the last look: {said} (resolved only within both informative budgets, up to"
                f" k = {last.informative_k:.3g} there)")
    if race.status == "undecidable":
        n = race.settings.looks[len(race.looks)]
        return (f"race {race.name}: ended at look {len(race.looks) + 1} of {len(race.settings.looks)} (n = {n} per model)"
                f" without a decision: {race.reason}")
    return f"race {race.name}: {len(race.looks)} of {len(race.settings.looks)} looks taken, no winner yet"


class RaceLines:
    """The lines ``showwork race`` prints, each once: its start, each look as it is decided, its end.

    Pass :meth:`on_start` and :meth:`on_look` to :func:`run_race`, then call :meth:`end` with its record.
    ``stream`` None: the ``sys.stdout`` of the moment each line is printed (a notebook's, a redirection's).
    Every line is :func:`~showwork.escaping.terminal_text`: names come from YAML files and race.json.
    """

    def __init__(self, storage_dir: str | os.PathLike, stream: TextIO | None = None) -> None:
        self.storage_dir, self.stream, self.looks_taken = storage_dir, stream, 0

    def _print(self, line: str) -> None:
        print(terminal_text(line), file=self.stream if self.stream is not None else sys.stdout, flush=True)

    def on_start(self, race: RaceRecord) -> None:
        self._print(start_line(race, self.storage_dir))

    def on_look(self, race: RaceRecord, decision: LookDecision | None) -> None:
        self.looks_taken += 1
        if decision is not None:  # None: the look could not be decided; the end line says why
            self._print(look_line(race, decision))

    def end(self, race: RaceRecord) -> None:
        self._print(("" if self.looks_taken else "nothing to run: ") + end_line(race))

"""A race as one Python object: what ``showwork.race(...)`` returns and ``showwork.open_race(...)`` reads.

:class:`Race` holds the race's record, decided from the two searches' ledgers, and shows it as the
command line and the report do: its ``decision``, a ``summary()`` of the looks (a pandas DataFrame),
its ``sentences()`` (the report's words: :func:`showwork.report.wording.sequential_sentences`), a short
``repr`` and, in a notebook, the report's table of the looks (``_repr_html_``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Union

from showwork.constants import DEFAULT_STORAGE
from showwork.errors import InputError
from showwork.store.races import RACES_FOLDER, RaceRecord

if TYPE_CHECKING:  # annotations of what loads late (pandas, the API)
    import pandas

    from showwork.api import Search
    from showwork.run.race_lines import RaceDecision

__all__ = ["Race"]

PathLike = Union[str, "os.PathLike[str]"]


class Race:
    """A race recorded in ``storage``: what it decided, look by look, and its two searches.

    What :func:`race` returns and :func:`open_race` reads; its record is the one the race decided from
    the two ledgers (:func:`race` takes each look from them; :func:`open_race` recomputes every look).

    Attributes
    ----------
    name : str
    storage : Path
    record : RaceRecord
        The race's record as ``race.json`` holds it (:class:`showwork.store.races.RaceRecord`).
    """

    def __init__(self, record: RaceRecord, storage: PathLike = DEFAULT_STORAGE) -> None:
        self.record = record
        self.name = record.name
        self.storage = Path(storage)

    @classmethod
    def open(cls, name: str, storage: PathLike = DEFAULT_STORAGE) -> Race:
        """The recorded race ``name`` of ``storage`` (what ``showwork report --race NAME`` reads), its decisions
        recomputed from its two searches' ledgers (:func:`showwork.run.race.verified_race`): never believed.

        Raises
        ------
        InputError
            No such race (the message lists the races there); a record the ledgers disagree with (the
            message names the field).
        """
        # lazy: `showwork search` imports the API; a race's statistics load scipy
        from showwork.run.race import verified_race

        record = verified_race(Path(storage), name)
        if record is None:
            folder = Path(storage) / RACES_FOLDER
            known = ", ".join(sorted(p.name for p in folder.iterdir() if p.is_dir())) if folder.is_dir() else ""
            raise InputError(f"no race {name!r} in {storage} (races there: {known or 'none'})")
        return cls(record, storage)

    @property
    def decision(self) -> RaceDecision:
        """What the race decided: ``status``, ``winner`` (None: no winner), ``look`` (trials per model where it
        stopped) and ``look_number``, ``saved_trials``, ``why`` (one sentence) and ``last`` (the evidence at
        each budget of the last look taken): :class:`showwork.run.race.RaceDecision`."""
        # lazy: as in open()
        from showwork.run.race_lines import RaceDecision

        return RaceDecision.of(self.record)

    @property
    def searches(self) -> tuple[Search, Search]:
        """The race's two searches, model A's then model B's, as :class:`Search` objects (their curves, trials, reports)."""
        from showwork.api import Search  # lazy: the API imports this module

        a, b = self.record.names
        return Search(a, self.storage), Search(b, self.storage)

    def summary(self) -> pandas.DataFrame:
        """One row per look taken, indexed by ``look`` (its place in the schedule, from 1).

        Columns: ``n`` (trials per model), ``informative_k`` (the pair's informative budget at the look),
        then for each budget K of the race ``K=<K> evidence`` (none, weak, fair, strong), ``K=<K> favoured``
        (the model the evidence favours, None for none) and ``K=<K> resolved`` (bool), then ``winner``
        (None: no winner at that look).
        """
        # lazy: pandas loads when a DataFrame is asked for
        import pandas as pd

        budgets = self.record.settings.budgets
        columns = ["look", "n", "informative_k",
                   *(f"K={k:g} {what}" for k in budgets for what in ("evidence", "favoured", "resolved")), "winner"]
        rows = [[look.number, look.look, look.informative_k,
                 *(value for at in zip(look.levels, look.favoured, look.resolved) for value in at), look.winner]
                for look in self.record.looks]
        return pd.DataFrame(rows, columns=columns).set_index("look")

    def sentences(self) -> list[str]:
        """The race in plain sentences, as its report words them: what it planned, where it stopped, what it saved."""
        # lazy: the report loads scipy
        from showwork.report.wording import sequential_sentences

        return sequential_sentences(self.record)

    def __repr__(self) -> str:
        d = self.decision
        said = {"decided": f"{d.winner} wins at n = {d.look}", "undecided": "undecided", "undecidable": "undecidable",
                "running": f"{len(self.record.looks)} of {len(self.record.settings.looks)} looks taken"}[d.status]
        return f"Race({self.name!r}, {self.record.names[0]!r} vs {self.record.names[1]!r}: {said}, storage={str(self.storage)!r})"

    def _repr_html_(self) -> str:
        """The race in a notebook: its end in one line, the table of its looks and its sentences (the table's notes)."""
        # lazy: as in sentences()
        from showwork.escaping import html_text
        from showwork.report.render import html_table
        from showwork.report.tables import race_table

        return f'<div class="showwork-race"><p><b>{html_text(self.decision.why)}</b></p>\n{html_table(race_table(self.record))}</div>'

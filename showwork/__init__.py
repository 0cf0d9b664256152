"""showwork: hyperparameter search and reporting that shows your work.

From Python: :func:`search` runs a search as ``showwork search`` does and returns a :class:`Search`;
:func:`open_search` opens a recorded one, :func:`race` races two spaces at pre-planned looks and returns a :class:`Race`,
:func:`open_race` reads a recorded one (:mod:`showwork.api`). The statistics live in
:mod:`showwork.statistics`; the command line in :mod:`showwork.cli`. Heavy dependencies are imported
lazily, so that ``import showwork`` and ``showwork --help`` stay instant: the three names load
:mod:`showwork.api` on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from showwork.api import Race, RaceInterruptedError, Search, SearchInterruptedError, open_race, open_search, race, search

__all__ = ["Race", "RaceInterruptedError", "Search", "SearchInterruptedError", "__version__", "open_race", "open_search", "race",
           "search"]

_API_NAMES = ("Race", "RaceInterruptedError", "Search", "SearchInterruptedError", "open_race", "open_search", "race", "search")


def __getattr__(name: str) -> Any:
    """The Python API's names, from :mod:`showwork.api` when first asked for (PEP 562)."""
    if name in _API_NAMES:
        # The package's facade: the one import of a higher layer (tests/unit/test_layers.py).
        # lazy: `import showwork` stays light; the API (pydantic, the space, the store) loads on first use
        from showwork import api

        return getattr(api, name)
    raise AttributeError(f"module 'showwork' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_API_NAMES})

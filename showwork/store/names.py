"""Search names: what may name a search (:func:`search_name_problem`), and the searches a storage folder holds."""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["SEARCH_NAME_RULE", "list_searches", "search_name_problem"]

_SEARCH_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")  # used with fullmatch: no trailing newline
SEARCH_NAME_RULE = "1 to 200 letters, digits, '.', '_' or '-', starting with a letter or digit"
"""What a search name may be: it names a folder under the storage directory (so never ``.``, ``..``,
a hidden ``.name`` or an option-like ``-rf``) and the MLflow experiment. :func:`search_name_problem`
applies it; the search-space file, ``--name`` and the ledger all use that one check."""


def search_name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a search (``"must be ..."``), or None when it can; see :data:`SEARCH_NAME_RULE`."""
    if isinstance(name, str) and _SEARCH_NAME.fullmatch(name):
        return None
    return f"must be {SEARCH_NAME_RULE}"


def list_searches(storage_dir: str | os.PathLike) -> list[str]:
    """Return the names of the searches under ``storage_dir`` (those with metadata or trials), sorted."""
    root = Path(storage_dir).expanduser()
    try:
        entries = sorted(os.scandir(root), key=lambda entry: entry.name)
    except (FileNotFoundError, NotADirectoryError):
        return []
    names = []
    for entry in entries:
        if entry.is_dir() and search_name_problem(entry.name) is None:
            path = Path(entry.path)
            if (path / "search.json").is_file() or (path / "trials").is_dir():
                names.append(entry.name)
    return names

"""What a search-space file can get wrong: :class:`SpecError`, one line naming the file, line, column and key."""


from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from showwork.errors import InputError


class SpecError(InputError):
    """An invalid search-space file; the message is one line naming the file, line, column and key.

    Attributes
    ----------
    path : str
        The file as given.
    line, column : int or None
        1-based position of the offending key or value, when there is one.
    key : str or None
        Dotted key of the offending value, e.g. ``"space.optimizer.lr.low"``.
    """

    def __init__(self, message: str, path: str, line: int | None = None, column: int | None = None, key: str | None = None):
        super().__init__(message)
        self.path, self.line, self.column, self.key = path, line, column, key


def dotted(path: Iterable[Any]) -> str:
    """``("space", "batch", "choices", 2)`` -> ``"space.batch.choices[2]"``."""
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out



class Located(ValueError):
    """A problem at a key of the file: the one type for every located problem in this module.

    ``path`` is the raw key path (``("space", "optimizer", "lr", "low")``; relative to ``space``
    while the space is parsed, see :meth:`under`); ``mark`` the YAML position when it is known
    before there is a path to look it up by (:func:`mark_of`); ``other`` the path of a second
    place involved (the first of two duplicate names: "also at line N"); ``note`` what follows the
    key (`` (set by --seed)``). A ``ValueError``, so that raised inside the pydantic model's space
    validator it reaches :func:`load_search_spec` whole, path included, as pydantic's error context.
    """

    def __init__(self, path: tuple, message: str, *, mark: Any = None, other: tuple | None = None, note: str = ""):
        super().__init__(message)
        self.path, self.message, self.mark, self.other, self.note = path, message, mark, other, note

    def under(self, *prefix: Any) -> Located:
        """The same problem with ``prefix`` before its paths (``under("space")``)."""
        other = None if self.other is None else prefix + self.other
        return Located(prefix + self.path, self.message, mark=self.mark, other=other, note=self.note)

    def located(self, marks: Marks) -> Located:
        """With its mark looked up in ``marks`` (the key's when it names a second place) and "also at line N"."""
        if self.mark is not None:
            return self
        message = self.message
        if self.other is not None:
            other = mark_of(self.other, marks, key=True)
            if other is not None:
                message += f" (also at line {other.line + 1})"
        mark = None if self.note else mark_of(self.path, marks, key=self.other is not None)
        return Located(self.path, message, mark=mark, note=self.note)

    def order(self) -> tuple:
        if self.note:  # command-line overrides first: they are what the user just typed
            return (0, 0, 0)
        if self.mark is None:
            return (2, 0, 0)
        return (1, self.mark.line, self.mark.column)

    def error(self, shown: str) -> SpecError:
        """The one-line :class:`SpecError`: ``FILE:LINE:COLUMN: dotted.key: message``."""
        key = dotted(self.path)
        where = f"{shown}:{position(self.mark)}" if self.mark is not None else shown
        return SpecError(
            f"{where}: {key + self.note + ': ' if key + self.note else ''}{self.message}",
            shown,
            self.mark.line + 1 if self.mark is not None else None,
            self.mark.column + 1 if self.mark is not None else None,
            key or None,
        )

    def input_error(self) -> InputError:
        """For a caller from Python (no file): ``space.optimizer.lr.low: message``."""
        return InputError(f"{dotted(self.path)}: {self.message}")


Marks = dict  # key path tuple -> (key mark, value mark)


def position(mark: Any) -> str:
    """``LINE:COLUMN`` of a YAML mark, counting from 1."""
    return f"{mark.line + 1}:{mark.column + 1}"


def mark_of(path: tuple, marks: Marks, key: bool = False) -> Any:
    """The mark of the value at ``path`` (or of its key), else of the closest enclosing key."""
    for end in range(len(path), 0, -1):
        if path[:end] in marks:
            key_mark, value_mark = marks[path[:end]]
            return key_mark if key or end < len(path) else value_mark
    return None

"""Names ↔ MLflow keys, as pure functions: an injective map from showwork's names to legal MLflow keys.

MLflow refuses a param or metric key longer than 250 characters, with characters other than
letters, digits, ``_ - . : /`` and space, or that a path normalisation would change (``a//b``,
``./a``, ``a/``) — ``mlflow.utils.validation``. Replacing the bad characters and cutting the rest
(what showwork did before) maps ``a!b`` and ``a?b`` to one key, so one value overwrote the other,
and two long hyperparameter names sharing their first 250 characters made MLflow refuse the batch
("Duplicate parameter keys").

Here a name that is a legal key is its own key; any other name becomes its cleaned, shortened form
plus ``-`` and the first hex digits of its SHA-256 (``a_b-6ab5b6f1``). Should that key be taken
(by a legal name that reads the same, or a hash prefix shared by chance), the name gets a longer
hash (16, 32, then 64 digits); only when every form is taken (names built to collide) is it
refused with :class:`KeyCollisionError`. So within one run the map is injective and no value is
lost. A key that differs from its name is recorded on the run in the JSON tags of
:func:`key_names_tags` (``{key: name}``, cut into tags of at most 8000 characters), from which
:func:`key_names` and :func:`original_names` give the names back.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

__all__ = [
    "MAX_KEY_LENGTH",
    "MAX_PARAM_LENGTH",
    "MAX_TAG_LENGTH",
    "PARAM_NAMES_TAG",
    "METRIC_NAMES_TAG",
    "KeyCollisionError",
    "candidate_keys",
    "is_legal_key",
    "json_tags",
    "mlflow_keys",
    "key_names",
    "key_names_tags",
    "original_names",
    "read_json_tags",
    "shown_name",
    "truncated",
    "with_legal_characters",
]


MAX_KEY_LENGTH = 250  # mlflow.utils.validation.MAX_ENTITY_KEY_LENGTH
MAX_TAG_LENGTH = 8000  # mlflow.utils.validation.MAX_TAG_VAL_LENGTH
PARAM_NAMES_TAG = "showwork.param_names"  # {key: name} of a run's params whose key is not their name
METRIC_NAMES_TAG = "showwork.metric_names"  # the same for its metrics
MAX_PARAM_LENGTH = 6000  # mlflow.utils.validation.MAX_PARAM_VAL_LENGTH
_HASH_DIGITS = (8, 16, 32, 64)
_KEY = re.compile(r"[A-Za-z0-9_\-. :/]+")  # ASCII only: MLflow's \w would let other letters through
_NOT_KEY = re.compile(r"[^A-Za-z0-9_\-. :/]")

V = TypeVar("V")


class KeyCollisionError(ValueError):
    """Two names have no distinct MLflow keys left (names built to collide); the message names both."""

    def __init__(self, name: str, other: str, key: str) -> None:
        super().__init__(f"{shown_name(name)} and {shown_name(other)} would have the same MLflow key; rename one")
        self.name, self.other, self.key = name, other, key


def shown_name(name: str, limit: int = 80) -> str:
    """A name for a message: its ``repr`` whole when short, else its start and end (long names differ anywhere)."""
    text = repr(name)
    return text if len(text) <= limit else f"{text[: limit // 2 - 2]}...{text[-(limit // 2 - 1):]}"


def _path_unique(key: str) -> bool:
    """MLflow refuses keys that a path normalisation changes (they may become file names)."""
    norm = posixpath.normpath(key)
    return norm == key and norm != "." and not norm.startswith(("..", "/"))


def is_legal_key(text: str) -> bool:
    """True for a string MLflow accepts as a param or metric key unchanged."""
    return (
        isinstance(text, str) and 0 < len(text) <= MAX_KEY_LENGTH and bool(_KEY.fullmatch(text)) and _path_unique(text)
    )


def with_legal_characters(name: str) -> str:
    """``name`` with each character MLflow refuses in a key as ``_`` (the length is left as it is)."""
    return _NOT_KEY.sub("_", name)


def truncated(text: str, limit: int) -> str:
    """``text``, cut to ``limit`` characters with ``...`` at its end when longer (MLflow's value limits)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _cleaned(name: str) -> str:
    """``name`` with MLflow's refused characters as ``_``; slashes too, and leading dots, when it is not path-safe."""
    text = with_legal_characters(name)
    if not _path_unique(text):
        text = text.replace("/", "_")
        text = "_" * (len(text) - len(text.lstrip("."))) + text.lstrip(".")
    return text


def _digest(name: str) -> str:
    return hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()


def candidate_keys(name: str) -> list[str]:
    """The keys ``name`` may get, in order of preference."""
    forms = [name] if is_legal_key(name) else []
    cleaned = _cleaned(name)
    digest = _digest(name)
    for digits in _HASH_DIGITS:
        forms.append(f"{cleaned[: MAX_KEY_LENGTH - digits - 1]}-{digest[:digits]}")
    return forms


def mlflow_keys(names: Iterable[str], taken: Mapping[str, str] | None = None) -> dict[str, str]:
    """Map each name to a legal MLflow key, distinct from every other name's and from the keys in ``taken``.

    Parameters
    ----------
    names : iterable of str
        The names (duplicates are read once).
    taken : mapping, optional
        ``{key: name}`` already in use on the run (e.g. read back with :func:`key_names`): a name
        found there keeps its key, so a run logged in several steps keeps one map.

    Returns
    -------
    dict
        ``{name: key}``. A legal name is its own key unless that key is taken by another name;
        the result depends only on the set of names and ``taken``, not on their order.

    Raises
    ------
    KeyCollisionError
        Every candidate key of a name is taken by other names.
    """
    owner: dict[str, str] = dict(taken or {})
    keys = {name: key for key, name in owner.items()}
    wanted = sorted({str(name) for name in names} - set(keys))
    # Legal names first, so that a name is its own key whenever possible, whatever the order.
    for name in (n for n in wanted if is_legal_key(n)):
        if name not in owner:
            owner[name] = keys[name] = name
    for name in wanted:
        if name in keys:
            continue
        candidates = candidate_keys(name)
        free = next((key for key in candidates if key not in owner), None)
        if free is None:
            raise KeyCollisionError(name, owner[candidates[-1]], candidates[-1])
        owner[free] = name
        keys[name] = free
    return keys


def key_names_tags(keys: Mapping[str, str], tag: str) -> dict[str, str]:
    """The tags that record ``{key: name}`` for the names whose key differs (``keys`` maps name → key).

    The JSON goes into ``tag``, ``tag.2``, ``tag.3``... of at most 8000 characters each (MLflow's
    limit on a tag's value); an empty dict when every name is its own key.
    """
    renamed = {key: name for name, key in sorted(keys.items()) if key != name}
    return json_tags(renamed, tag) if renamed else {}


def key_names(tags: Mapping[str, str], tag: str) -> dict[str, str]:
    """``{key: name}`` recorded by :func:`key_names_tags` in a run's ``tags`` (empty when there is none or it is unreadable)."""
    return _string_mapping(read_json_tags(tags, tag))


def json_tags(value: Any, tag: str) -> dict[str, str]:
    """``value`` as JSON in ``tag``, ``tag.2``, ``tag.3``... of at most 8000 characters each (MLflow's limit on a tag)."""
    text = json.dumps(value, ensure_ascii=True, sort_keys=True)
    chunks = [text[start : start + MAX_TAG_LENGTH] for start in range(0, len(text), MAX_TAG_LENGTH)]
    return {tag if i == 0 else f"{tag}.{i + 1}": chunk for i, chunk in enumerate(chunks)}


def read_json_tags(tags: Mapping[str, str], tag: str) -> Any:
    """The value :func:`json_tags` wrote into ``tags``; None when absent or unreadable."""
    parts, number = [], 1
    while (tag if number == 1 else f"{tag}.{number}") in tags:
        parts.append(tags[tag if number == 1 else f"{tag}.{number}"])
        number += 1
    if not parts:
        return None
    try:
        return json.loads("".join(parts))
    except ValueError:
        return None


def _string_mapping(value: Any) -> dict[str, str]:
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)} if isinstance(value, dict) else {}


def original_names(values: Mapping[str, V], names: Mapping[str, str]) -> dict[str, V]:
    """``values`` keyed by MLflow key, re-keyed by the original names (``names``: ``{key: name}``)."""
    return {names.get(key, key): value for key, value in values.items()}

"""showwork's tags and params as MLflow entities under legal keys; the check of a search's param names before it starts."""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping
from typing import Any

from showwork.errors import InputError
from showwork.tracking.mlflow_format import RESERVED_PARAMS, param_name
from showwork.tracking.mlflow_import import entities
from showwork.tracking.mlflow_keys import (
    MAX_KEY_LENGTH,
    MAX_PARAM_LENGTH,
    MAX_TAG_LENGTH,
    PARAM_NAMES_TAG,
    KeyCollisionError,
    key_names,
    mlflow_keys,
    shown_name,
    truncated,
    with_legal_characters,
)

__all__ = ["as_params", "as_run_tags", "check_param_names", "checked_keys", "renaming_warning"]


def _tag_key(name: str) -> str:
    """An MLflow-legal tag key for showwork's own tag names: other characters become ``_``; at most 250 characters.

    Params and metrics, whose names come from the user, go through :func:`showwork.tracking.mlflow_keys.mlflow_keys`
    instead (injective, recorded on the run).
    """
    return with_legal_characters(str(name))[:MAX_KEY_LENGTH] or "_"


def renaming_warning(kind: str, keys: Mapping[str, str], tag: str) -> str | None:
    """One line naming the ``kind`` (param, metric) names that MLflow gets under another key, or None."""
    renamed = sorted((name, key) for name, key in keys.items() if name != key)
    if not renamed:
        return None
    shown = "; ".join(f"{shown_name(name)} as {shown_name(key)}" for name, key in renamed[:5])
    more = f"; and {len(renamed) - 5} more" if len(renamed) > 5 else ""
    return (
        f"MLflow keys are at most {MAX_KEY_LENGTH} letters, digits and _-. :/ characters, so these {kind} names are"
        f" logged under other keys (the run's tag {tag} maps them back; showwork report mlflow: reads the names):"
        f" {shown}{more}"
    )


def check_param_names(names: Iterable[str], where: str = "the search space") -> dict[str, str]:
    """Map hyperparameter names to the MLflow param keys of a search (``hp.`` prefix, ``space.`` on the parent).

    Call it before a search starts: it warns once about the names MLflow gets under another key and
    refuses names built so that no two distinct keys are left.

    Returns
    -------
    dict
        ``{name: key}`` of the child runs' params.

    Raises
    ------
    InputError
        Two names cannot be given distinct keys (the message names both).
    """
    names = list(names)
    child = {param_name(name): name for name in names}
    try:
        keys = mlflow_keys([*child, *RESERVED_PARAMS])
        parent_keys = mlflow_keys(f"space.{name}" for name in names)  # the parent's description of the space
    except KeyCollisionError as error:
        raise InputError(f"{where}: parameters {error}") from None
    message = renaming_warning("parameter", {**parent_keys, **keys}, PARAM_NAMES_TAG)
    if message:
        warnings.warn(message, stacklevel=2)
    return {child[name]: key for name, key in keys.items() if name in child}


def checked_keys(names: Iterable[Any], taken: Mapping[str, str]) -> dict[str, str]:
    """:func:`showwork.tracking.mlflow_keys.mlflow_keys`, its refusal as an InputError (names built to collide)."""
    try:
        return mlflow_keys((str(name) for name in names), taken)
    except KeyCollisionError as error:
        raise InputError(f"MLflow: {error}") from None


def as_run_tags(tags: Mapping[str, Any]) -> list:
    """``RunTag`` entities under legal keys, values cut to MLflow's 8000 characters."""
    RunTag = entities()[2]  # noqa: N806

    return [RunTag(_tag_key(name), truncated(str(value), MAX_TAG_LENGTH)) for name, value in tags.items()]


def as_params(params: Mapping[str, Any], run_tags: Mapping[str, str]) -> tuple[list, dict[str, str]]:
    """Params under injective keys (those already recorded in ``run_tags`` kept): ``(entities, {name: key})``."""
    Param = entities()[1]  # noqa: N806

    keys = checked_keys(params, key_names(run_tags, PARAM_NAMES_TAG))
    return [Param(keys[str(name)], truncated(str(value), MAX_PARAM_LENGTH)) for name, value in params.items()], keys

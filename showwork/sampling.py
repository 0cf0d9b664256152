"""Reproducible i.i.d. random search: trial ``i``'s configuration is a pure function of ``(seed, i)``.

Each parameter of each trial is drawn from its own random stream,
``numpy.random.default_rng(SeedSequence(seed, spawn_key=(index, stable_id(name))))``, where
``stable_id`` is the CRC-32 of the parameter's dotted name. Nothing is shared between trials or
parameters, so a configuration is the same

- whatever the concurrency or the order in which trials start,
- after a resumed search, and when ``num_trials`` is raised (trial i never depends on n),
- when a parameter is added to or removed from the space (the others keep their streams),
- when a condition is added to a parameter (``when:``; only that parameter can vanish).

A conditional parameter is drawn, from its own stream, only when its condition holds on the
values drawn before it (conditions refer only to earlier parameters), and is left out otherwise.

The trial's training seed comes from a stream of its own, ``spawn_key=(index, 0x5EED, 0)``;
parameter streams have two-word spawn keys and this one three, so they never coincide
(``index`` is below 2**32, one word). :class:`~showwork.search_space.SearchSpace` refuses two
names with the same CRC-32. Re-runs of selected configurations (``showwork rerun``) draw their
training seeds from one more stream, ``spawn_key=(0x5EED, 1, 0x5EED, 1)`` (four words), skipping
the search's own trial seeds: :func:`fresh_training_seeds`.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from showwork.constants import MAX_SEED
from showwork.distributions import Condition, Distribution
from showwork.values import flatten, is_integer  # flatten: re-exported, the inverse of nest

__all__ = ["MAX_INDEX", "TRIAL_SEED_HIGH", "flatten", "fresh_training_seeds", "nest", "stable_id", "trial_config", "trial_seed"]

MAX_INDEX = 2**32 - 1  # trial indices are one 32-bit word of the spawn key
TRIAL_SEED_HIGH = 2**31 - 1  # training seeds lie in [0, 2**31 - 1): valid for numpy, torch, random, TF
_TRIAL_SEED_KEY = (0x5EED, 0)
_RERUN_SEED_KEY = (0x5EED, 1, 0x5EED, 1)  # four words: no trial or parameter stream has such a key


def stable_id(name: str) -> int:
    """The stream id of a parameter: CRC-32 of its UTF-8 name, an int in [0, 2**32).

    Stable across processes, platforms and Python versions (unlike ``hash``).

    Examples
    --------
    >>> stable_id("optimizer.lr") == stable_id("optimizer.lr")
    True
    """
    return zlib.crc32(name.encode("utf-8"))


def shared_stream(names: Iterable[str]) -> tuple[str, str] | None:
    """The first two of ``names`` whose streams coincide (the same :func:`stable_id`), in order; None when all differ.

    Two such parameters would draw the same random numbers in every trial; both
    :class:`~showwork.search_space.SearchSpace` and :func:`trial_config` refuse them.
    """
    seen: dict[int, str] = {}
    for name in names:
        stream = stable_id(name)
        if stream in seen:
            return seen[stream], name
        seen[stream] = name
    return None


def _check(seed: Any, index: Any) -> None:
    if not is_integer(seed) or not 0 <= seed <= MAX_SEED:
        raise ValueError(f"seed must be an integer from 0 to 2**63 - 1 inclusive (got {seed!r})")
    if not is_integer(index) or not 0 <= index <= MAX_INDEX:
        raise ValueError(f"trial index must be an integer from 0 to 2**32 - 1 inclusive (got {index!r})")


def parameter_rng(seed: int, index: int, name: str) -> np.random.Generator:
    """The random generator of parameter ``name`` in trial ``index`` of the search seeded ``seed``."""
    _check(seed, index)
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(int(index), stable_id(name))))


def trial_config(space: Mapping[str, Distribution], seed: int, index: int) -> dict[str, Any]:
    """The configuration of trial ``index``: one value per parameter, flat dotted names in space order.

    Parameters
    ----------
    space : SearchSpace or mapping of str to Distribution
    seed : int
        The search's seed, 0 to 2**63 - 1 inclusive.
    index : int
        The trial's 0-based index, 0 to 2**32 - 1 inclusive.

    Returns
    -------
    dict
        ``{dotted name: plain Python value}``; a pure function of ``(space, seed, index)``, and
        each value depends only on its own ``(distribution, seed, index, name)``. A conditional
        parameter (``space.conditions``, for a SearchSpace) whose condition fails on the values
        before it is absent.

    Raises
    ------
    ValueError
        Bad seed or index, or two names with the same stream id.
    """
    _check(seed, index)
    conditions: Mapping[str, Condition] = getattr(space, "conditions", {})  # a plain mapping has none
    clash = shared_stream(space)
    if clash is not None:
        raise ValueError(f"parameters {clash[0]!r} and {clash[1]!r} have the same CRC-32 stream id; rename one")
    config: dict[str, Any] = {}
    for name, dist in space.items():
        if name in conditions and not conditions[name].holds(config):
            continue
        config[name] = dist.sample(parameter_rng(seed, index, name))
    return config


def trial_seed(seed: int, index: int) -> int:
    """The training seed of trial ``index``: an int in [0, 2**31 - 1), from a stream no parameter uses.

    Examples
    --------
    >>> 0 <= trial_seed(0, 0) < 2**31 - 1
    True
    """
    _check(seed, index)
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(int(index), *_TRIAL_SEED_KEY)))
    return int(rng.integers(0, TRIAL_SEED_HIGH))



def fresh_training_seeds(seed: int, count: int, taken: Iterable[int] = ()) -> tuple[int, ...]:
    """``count`` training seeds for re-running selected configurations (``showwork rerun``).

    They come from one stream of the search seed that no trial and no parameter uses
    (``spawn_key=(0x5EED, 1, 0x5EED, 1)``), skipping any seed in ``taken`` (the search's trials'
    seeds) and repeats, so they are fresh and a pure function of ``(seed, taken)``; the first
    ``count`` of them do not depend on ``count`` (asking for more seeds later keeps the earlier ones).

    >>> fresh_training_seeds(0, 3)[:2] == fresh_training_seeds(0, 2)
    True
    """
    _check(seed, 0)
    if not is_integer(count) or count < 0:
        raise ValueError(f"count must be an integer >= 0 (got {count!r})")
    avoid = {int(s) for s in taken}
    rng = np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=_RERUN_SEED_KEY))
    seeds: list[int] = []
    while len(seeds) < count:
        candidate = int(rng.integers(0, TRIAL_SEED_HIGH))
        if candidate not in avoid:
            avoid.add(candidate)
            seeds.append(candidate)
    return tuple(seeds)


def nest(flat: Mapping[str, Any]) -> dict[str, Any]:
    """Turn dotted names into nested dicts: ``{"optimizer.lr": 0.1}`` -> ``{"optimizer": {"lr": 0.1}}``.

    Raises
    ------
    ValueError
        A name that is also a group of another (``a`` and ``a.b``), or an empty segment.

    Examples
    --------
    >>> nest({"optimizer.lr": 0.1, "optimizer.momentum": 0.9, "epochs": 3})
    {'optimizer': {'lr': 0.1, 'momentum': 0.9}, 'epochs': 3}
    """
    out: dict[str, Any] = {}
    groups = {id(out)}  # the dicts this function made (a value may itself be a dict)
    for name, value in flat.items():
        if not isinstance(name, str):
            raise ValueError(f"names must be text (got {name!r})")
        parts = name.split(".")
        if not all(parts):
            raise ValueError(f"{name!r} has an empty part between dots")
        node = out
        for depth, part in enumerate(parts[:-1]):
            if part not in node:
                node[part] = {}
                groups.add(id(node[part]))
            elif id(node[part]) not in groups:
                prefix = ".".join(parts[: depth + 1])
                raise ValueError(f"{prefix!r} and {name!r} conflict: {prefix!r} would be both a value and a group")
            node = node[part]
        if parts[-1] in node:
            other = next(iter(flatten(node[parts[-1]], name + ".")))
            raise ValueError(f"{name!r} and {other!r} conflict: {name!r} would be both a value and a group")
        node[parts[-1]] = value
    return out

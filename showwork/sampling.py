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
(``index`` is below 2**32, one word). :class:`~showwork.space.SearchSpace` refuses two
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
from showwork.distributions import Condition, Constant, Distribution
from showwork.values import flatten, is_integer  # flatten: re-exported, the inverse of nest

__all__ = [
    "MAX_INDEX", "TRIAL_SEED_HIGH", "flatten", "fresh_training_seeds", "nest", "stable_id", "trial_config", "trial_plans",
    "trial_seed",
]

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
    :class:`~showwork.space.SearchSpace` and :func:`trial_config` refuse them.
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



def trial_plans(space: Mapping[str, Distribution], seed: int, indices: Iterable[int]) -> list[tuple[dict[str, Any], int]]:
    """``(trial_config(space, seed, i), trial_seed(seed, i))`` for each ``i`` of ``indices``, in order:
    the same values, drawn for many trials at once (checking a ledger of 100,000 records).

    Every value still comes from its own stream (see the module docstring); only the streams' seeding
    is batched: the states that ``SeedSequence(seed, spawn_key=...)`` gives every stream are computed
    for all the trials at once (:func:`_stream_states`, numpy's algorithm on arrays) and each stream's
    generator is built from its state, about 10 times faster than one ``SeedSequence`` per value. The
    first state is checked against numpy's own ``SeedSequence``; should a numpy release ever seed
    differently, every value is drawn as :func:`trial_config` draws it.

    Raises
    ------
    ValueError
        As :func:`trial_config` and :func:`trial_seed`.
    """
    indices = [int(i) if is_integer(i) else i for i in indices]
    for index in indices:
        _check(seed, index)
    _check(seed, 0)
    clash = shared_stream(space)
    if clash is not None:
        raise ValueError(f"parameters {clash[0]!r} and {clash[1]!r} have the same CRC-32 stream id; rename one")
    if not indices:
        return []
    trials = np.asarray(indices, dtype=np.uint64)
    keys = {name: (stable_id(name),) for name in space}
    if not _seeding_agrees(seed, indices[0], keys):
        return [(trial_config(space, seed, index), trial_seed(seed, index)) for index in indices]
    conditions: Mapping[str, Condition] = getattr(space, "conditions", {})
    # A constant draws nothing from its stream (nor is the stream seeded for it).
    parameters = [(name, dist, conditions.get(name), None if isinstance(dist, Constant) else
                   _stream_states(seed, trials, keys[name])) for name, dist in space.items()]
    seed_states = _stream_states(seed, trials, _TRIAL_SEED_KEY)
    plans = []
    for row in range(len(indices)):
        config: dict[str, Any] = {}
        for name, dist, condition, states in parameters:
            if condition is not None and not condition.holds(config):
                continue
            config[name] = dist.sample(None) if states is None else dist.sample(_generator(states[row]))
        plans.append((config, int(_generator(seed_states[row]).integers(0, TRIAL_SEED_HIGH))))
    return plans


# numpy's SeedSequence (numpy/random/bit_generator.pyx, after M. E. O'Neill's seed_seq_fe): its constants.
_POOL_SIZE = 4
_INIT_A, _MULT_A, _INIT_B, _MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
_MIX_MULT_L, _MIX_MULT_R, _XSHIFT = 0xCA01F9DD, 0x4973F715, 16
_MASK32 = 0xFFFFFFFF


def _stream_states(seed: int, trials: np.ndarray, key: tuple[int, ...]) -> np.ndarray:
    """``SeedSequence(seed, spawn_key=(trial, *key)).generate_state(4, np.uint64)`` for each of ``trials``: an
    ``(n, 4)`` uint64 array, numpy's algorithm on arrays (one row per trial). ``seed`` < 2**64, each key word and
    trial < 2**32 (one 32-bit word each, as numpy splits them)."""
    count = len(trials)
    seed_words = [seed & _MASK32, seed >> 32] if seed >> 32 else [seed]
    run = seed_words + [0] * (_POOL_SIZE - len(seed_words))  # numpy pads the run entropy when a spawn key follows
    columns = [np.full(count, word, dtype=np.uint32) for word in run]
    columns.append(trials.astype(np.uint32))
    columns += [np.full(count, word, dtype=np.uint32) for word in key]
    hash_a = [_INIT_A]

    def hashmix(value: np.ndarray) -> np.ndarray:
        value = value ^ np.uint32(hash_a[0])
        hash_a[0] = (hash_a[0] * _MULT_A) & _MASK32
        value = value * np.uint32(hash_a[0])
        return value ^ (value >> np.uint32(_XSHIFT))

    def mix(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        result = np.uint32(_MIX_MULT_L) * x - np.uint32(_MIX_MULT_R) * y
        return result ^ (result >> np.uint32(_XSHIFT))

    pool = [hashmix(columns[i]) for i in range(_POOL_SIZE)]
    for source in range(_POOL_SIZE):
        for target in range(_POOL_SIZE):
            if source != target:
                pool[target] = mix(pool[target], hashmix(pool[source]))
    for source in range(_POOL_SIZE, len(columns)):
        for target in range(_POOL_SIZE):
            pool[target] = mix(pool[target], hashmix(columns[source]))
    words, hash_b = [], _INIT_B
    for position in range(2 * _POOL_SIZE):  # 4 uint64 = 8 uint32, the pool cycled
        value = pool[position % _POOL_SIZE] ^ np.uint32(hash_b)
        hash_b = (hash_b * _MULT_B) & _MASK32
        value = value * np.uint32(hash_b)
        words.append(value ^ (value >> np.uint32(_XSHIFT)))
    low, high = np.stack(words[0::2], axis=1), np.stack(words[1::2], axis=1)  # little-endian word pairs
    return low.astype(np.uint64) | (high.astype(np.uint64) << np.uint64(32))


class _FixedSeeding(np.random.bit_generator.ISeedSequence):
    """A seed sequence whose one state is already known (:func:`_stream_states`): what ``PCG64`` asks of it."""

    def __init__(self, state: np.ndarray) -> None:
        self.state = state

    def generate_state(self, n_words: int, dtype=np.uint32) -> np.ndarray:
        return self.state


def _generator(state: np.ndarray) -> np.random.Generator:
    """The generator ``default_rng(SeedSequence(...))`` gives, from that sequence's state (:func:`_stream_states`)."""
    return np.random.Generator(np.random.PCG64(_FixedSeeding(np.ascontiguousarray(state))))


def _seeding_agrees(seed: int, index: int, keys: Mapping[str, tuple[int, ...]]) -> bool:
    """Whether :func:`_stream_states` gives numpy's own states for trial ``index``'s streams."""
    trial = np.asarray([index], dtype=np.uint64)
    for key in [*keys.values(), _TRIAL_SEED_KEY]:
        numpy_state = np.random.SeedSequence(int(seed), spawn_key=(int(index), *key)).generate_state(_POOL_SIZE, np.uint64)
        if not np.array_equal(_stream_states(int(seed), trial, key)[0], numpy_state):
            return False
    return True


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

"""Search-space files: one YAML file becomes a validated :class:`SearchSpec`.

Four modules, one job each: :mod:`~showwork.space.yaml_reader` (the strict YAML 1.2 reader with
positions), :mod:`~showwork.space.space` (parameters, distributions, conditions), :mod:`~showwork.space.spec`
(the whole file as a pydantic model, and loading it), :mod:`~showwork.space.errors` (:class:`SpecError`).

A user writes one file and runs ``showwork search SPACE.yaml``::

    name: sst2-bow
    family: bow_sst2                 # built-in, package.module:function or path/to/file.py:function
    data: {dataset: sst2}
    metric: {name: val_accuracy, mode: max, test: test_accuracy}
    num_trials: 20
    seed: 0
    resources: {cpus: 1, gpus: 0}
    max_concurrent: 2
    timeout_s: 300                   # the trainable's time; setup_timeout_s (default 600) bounds the import
    failure_policy: worst
    space:
      optimizer:
        lr: {distribution: loguniform, low: 1e-4, high: 1e-1}
      dropout: {distribution: uniform, low: 0.0, high: 0.5}
      epochs: 10                     # a bare scalar is a constant

Parameters may be nested (``optimizer: {lr: ...}``) or dotted (``optimizer.lr: ...``); both give
the parameter ``optimizer.lr``. A mapping with a ``distribution`` key is a distribution (see
:mod:`showwork.distributions`), any other mapping a group of parameters -- except that a group
whose keys look like a distribution's (a near miss of ``distribution``, an argument name such as
``low``, ``choices``, ``step`` or ``when``, or two near misses of argument names) is refused with
"did you mean", since it is almost always a misspelt distribution; parameters really named so are
written with dotted names (``thresholds.low: 0.1``).

A parameter may be conditional: ``when: {optimizer: sgd}`` (equality) or ``when: {optimizer:
{in: [sgd, adam]}}`` beside its ``distribution`` (a constant with a condition is written
``{distribution: constant, value: 0.9, when: ...}``). A condition names earlier categorical or
constant parameters (dotted names) and values they can take; several names must all hold. The
parameter is drawn only when its condition holds and is left out of the configuration otherwise
(:func:`showwork.sampling.trial_config`).

Loading is strict and safe: the file must be a regular file of at most 1 MiB (a FIFO or a device
is refused without being read; :func:`showwork.files.read_regular_file`), UTF-8 text;
``yaml.SafeLoader`` composes it, duplicate keys refused, YAML aliases (``*name``) refused outright
(so no alias bomb or recursive document can be expanded), only JSON values (text without lone
surrogates, finite numbers, booleans, null, lists, mappings with text keys).

Scalars are read by the YAML 1.2 core schema: ``true``/``false`` (also ``True``, ``TRUE``...),
``null``/``~``/nothing, integers ``10``, ``0o17``, ``0x10``, floats ``1e-4``, ``.5``; everything else
is text. A plain (unquoted, untagged) value that YAML 1.1 reads differently is refused, naming both
readings: ``no``/``yes``/``on``/``off``/``y``/``n`` (1.1: booleans), ``010`` (1.1: octal 8), ``09``,
``1:30`` (1.1: 90), ``1_000``, ``0b101``, ``-0x10``, ``2020-01-01`` (1.1: a date); quote it for text.
Keys are always text (``no:`` names a parameter ``no``). Explicit tags: ``!!str``, ``!!int``,
``!!float``, ``!!bool``, ``!!null`` (their text must be of that type), ``!!map`` and ``!!seq``; any
other tag is refused. Every error is a :class:`SpecError` of one line naming the file, the line and
column, and the dotted key::

    space.yaml:12:10: space.optimizer.lr.low: must be positive for a log-uniform distribution (low=0)
"""

from showwork.constants import FAILURE_POLICIES
from showwork.space.errors import SpecError
from showwork.space.space import SearchSpace
from showwork.space.spec import (
    MAX_TIMEOUT_S,
    MAX_TRIALS,
    OVERRIDABLE,
    USER_KEYS,
    MetricSpec,
    ResourcesSpec,
    SearchSpec,
    family_kind,
    function_family,
    load_search_spec,
    resolved_yaml,
    search_spec_from_mapping,
)

__all__ = [
    "FAILURE_POLICIES",
    "MAX_TIMEOUT_S",
    "MAX_TRIALS",
    "OVERRIDABLE",
    "USER_KEYS",
    "MetricSpec",
    "ResourcesSpec",
    "SearchSpace",
    "SearchSpec",
    "SpecError",
    "family_kind",
    "function_family",
    "load_search_spec",
    "resolved_yaml",
    "search_spec_from_mapping",
]

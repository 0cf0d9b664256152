"""What a search recorded besides its trials, read back from its ledger: the spec it ran, its re-runs over
seeds, the command that continues it, and whether a spec may continue it (:func:`check_existing`).
``showwork resume``, ``rerun``, ``results``, ``best`` and ``report`` read them here, without the search's driver.

Every one of them checks the ledger the same way before using it, and refuses, in one line, a ledger
that is not the search's own:

- the spec in ``search.json`` must be the one the search was started with (its ``identity``, written
  at the start: :func:`recorded_spec`), so that a hand-flipped ``metric.mode`` is not ranked by;
- each record's configuration (``params``, ``seed``) must be what the search draws for its index
  (:func:`check_records`), and each re-run's what its plan gave it, so that a record copied from
  another search, or edited, is never counted, ranked or reported as a trial of this one.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

from showwork.constants import DEFAULT_STORAGE
from showwork.errors import InputError
from showwork.families import function_code
from showwork.sampling import trial_plans
from showwork.selection import RERUN_LEDGER, plan_from_meta, ranked_trials, rerun_summaries
from showwork.space import SearchSpec, SpecError
from showwork.store import Ledger, TrialRecord, list_searches

__all__ = [
    "IDENTITY_FIELDS", "check_existing", "check_function_code", "check_records", "needs_function", "recorded_records",
    "recorded_reruns", "recorded_spec",
    "resume_command", "search_identity",
]

IDENTITY_FIELDS = ("family", "seed", "space", "metric", "data")
"""Fields of the spec that decide which configurations are drawn: a resume must not change them."""


def search_identity(spec) -> dict:
    """The fields of ``spec`` that decide which configurations are drawn (:data:`IDENTITY_FIELDS`): a resume must not change them."""
    dumped = spec.model_dump(mode="json")
    if dumped["metric"].get("bounds") is None:  # searches started before bounds existed resume unchanged
        dumped["metric"].pop("bounds", None)
    return {key: dumped[key] for key in IDENTITY_FIELDS}


def resume_command(name: str, storage_dir, default_storage: str = DEFAULT_STORAGE) -> str:
    """The command that continues search ``name`` of ``storage_dir`` (``--storage`` only when not the default)."""
    storage = str(storage_dir)
    extra = "" if Path(storage) == Path(default_storage) else f" --storage {shlex.quote(storage)}"
    return f"showwork resume {shlex.quote(name)}{extra}"


def needs_function(name: str, storage_dir, default_storage: str = DEFAULT_STORAGE) -> str:
    """The one line that says search ``name`` trains a Python function, which only Python can give it, and how."""
    storage = str(storage_dir)
    extra = "" if Path(storage) == Path(default_storage) else f", storage={storage!r}"
    return (f"search {name!r} trains a Python function given to showwork.search(train, space), which no file or module"
            f" names, so a command cannot run it: resume it from Python, with the function:"
            f" showwork.open_search({name!r}{extra}, train=train).resume()")


def recorded_spec(storage_dir: Path, name: str, num_trials: int | None = None):
    """The spec a search was started (or last resumed) with, read from its ledger: ``showwork resume``.

    The resolved spec (the YAML with the command line's overrides applied) is in the ledger's
    metadata, with the YAML text and the folder it was in (relative family files resolve from
    there): neither the YAML file nor the overrides are needed again.

    Parameters
    ----------
    num_trials : int, optional
        A new number of trials (more to extend the search); default the recorded one.

    Raises
    ------
    InputError
        No such search; its metadata holds no spec (a search started before it was recorded, or one
        stopped before its first write); or that spec is not the one the search was started with (its
        ``identity``: ``search.json`` was edited since).
    """
    ledger = Ledger(Path(storage_dir), name)
    if not ledger.exists():
        known = ", ".join(list_searches(Path(storage_dir))) or "none"
        raise InputError(f"no search {name!r} in {storage_dir} (searches there: {known})")
    meta = ledger.read_meta()
    if not isinstance(meta.get("spec"), dict):
        raise InputError(f"{ledger.meta_path}: holds no recorded spec; resume it with `showwork search SPACE --resume`")
    fields = {**meta["spec"], "source_path": meta.get("spec_path"), "source_text": meta.get("spec_yaml")}
    if num_trials is not None:
        fields["num_trials"] = num_trials
    try:
        spec = SearchSpec.model_validate(fields)
    except (ValueError, SpecError) as error:  # pydantic's ValidationError: a hand-edited metadata file
        first = str(error).splitlines()
        raise InputError(f"{ledger.meta_path}: the recorded spec is not valid ({' '.join(first[:3])})") from None
    if meta.get("identity") != search_identity(spec):
        changes = "; ".join(_differences(meta.get("identity") or {}, search_identity(spec), ("at the start", "in its spec")))
        raise InputError(
            f"{ledger.meta_path}: its spec is not the one search {name!r} was started with"
            f" ({changes or 'the identity recorded at the start is unreadable'}): the file was edited since. Put the"
            " values of the start back into its \"spec\"; showwork would otherwise rank, report or resume the search by"
            " settings it did not run"
        )
    return spec


def recorded_records(storage_dir: Path, name: str) -> tuple:
    """``(spec, records)`` of search ``name``: its :func:`recorded_spec` (None for a ledger that records no spec,
    which is then not checked) and its records, checked to be its own (:func:`check_records`).

    What ``showwork results``, ``best`` and ``report`` read (``resume`` checks the same in :func:`check_existing`).

    Raises
    ------
    InputError
        No such search; a spec edited since the start; a record that is not the search's.
    """
    ledger = Ledger(Path(storage_dir), name)
    spec = recorded_spec(storage_dir, name) if isinstance(ledger.read_meta().get("spec"), dict) else None
    records = ledger.records()
    if spec is not None:
        check_records(spec, ledger, records)
    return spec, records


def check_records(spec, ledger, records) -> None:
    """Refuse ``records`` of ``ledger`` whose configuration is not the one search ``spec`` draws for their index.

    A trial's ``params`` and ``seed`` are :func:`~showwork.sampling.trial_config` and
    :func:`~showwork.sampling.trial_seed` of ``(spec.seed, index)`` (drawn for all the records at once:
    :func:`~showwork.sampling.trial_plans`, about 3 s per 100,000 records of ten parameters).

    Raises
    ------
    InputError
        One line: the first record that differs, its first difference, how many differ and what to do.
    """
    _refuse_foreign(ledger, records, trial_plans(spec.space, spec.seed, [r.index for r in records]),
                    f"search {spec.name!r} draws for it", "a resume then runs those trials again")


def _same_configuration(record, params: dict, seed: int) -> bool:
    """The record's params and seed are ``params`` and ``seed``, value and type (``1`` is not ``true`` nor ``1.0``)."""
    return (record.seed == seed and record.params.keys() == params.keys()
            and all(type(value) is type(params[name]) and value == params[name] for name, value in record.params.items()))


def _refuse_foreign(ledger, records, expected: list[tuple[dict, int]], source: str, again: str) -> None:
    """Raise one :class:`InputError` naming the records whose ``(params, seed)`` differ from ``expected`` (in order)."""
    foreign = [(r, plan) for r, plan in zip(records, expected) if not _same_configuration(r, *plan)]
    if not foreign:
        return
    record, (params, seed) = foreign[0]
    first = _differences({"params": record.params, "seed": record.seed}, {"params": params, "seed": seed},
                         ("recorded", "drawn"))[0]
    trials = ", ".join(str(r.index) for r, _ in foreign[:10]) + (", ..." if len(foreign) > 10 else "")
    raise InputError(
        f"{ledger.path(record.index)}: trial {record.index}'s configuration is not the one {source} ({first});"
        f" {len(foreign)} of {len(records)} records differ (trial{'s' if len(foreign) > 1 else ''} {trials}): copied"
        f" from another search or edited. Move {'them' if len(foreign) > 1 else 'it'} out of {ledger.trials_dir};"
        f" {again}"
    )


def recorded_reruns(storage_dir: Path, name: str, mode: str, records=None) -> tuple:
    """The :class:`~showwork.selection.RerunSummary` of each configuration ``showwork rerun`` re-trained
    in search ``name`` (empty when there are none), ranked by the search's ``records`` (read when not given).

    Raises
    ------
    InputError
        The re-runs' recorded plan is malformed.
    """
    search = Ledger(Path(storage_dir), name)
    reruns = Ledger(search.root, RERUN_LEDGER)
    if not reruns.meta_path.exists():
        return ()
    plan = plan_from_meta(reruns.read_meta(), str(reruns.meta_path))
    ranked = [r.index for r in ranked_trials(search.records() if records is None else records, mode)]
    done = [r for r in reruns.records() if r.index < len(plan)]
    _refuse_foreign(reruns, done, [(plan[r.index].params, plan[r.index].seed) for r in done],
                    "the re-runs' plan gives it", "showwork rerun then runs those re-runs again")
    return rerun_summaries(plan, done, ranked)


def check_existing(spec, ledger, resume: bool, allow_changed_code: bool = False) -> tuple[dict, list[TrialRecord]]:
    """The recorded metadata and records of the search ({} and [] for a new one), after checking
    that this run may continue it.

    Raises
    ------
    InputError
        The search exists and ``resume`` is False; it was started with another identity; its function
        trainable's code differs from the recorded one and ``allow_changed_code`` is False
        (:func:`check_function_code`); or ``spec.num_trials`` would leave recorded trials out.
    """
    meta = ledger.read_meta()
    if meta and not resume:
        raise InputError(
            f"search {spec.name!r} already exists in {ledger.storage_dir}; add --resume to continue it"
            " (or choose another --name)."
        )
    if meta and meta.get("identity") != search_identity(spec):
        changes = "; ".join(_differences(meta.get("identity") or {}, search_identity(spec))) or "the recorded identity is unreadable"
        started = (meta.get("identity") or {}).get("family")
        again = (f"showwork.open_search({spec.name!r}, storage={str(ledger.storage_dir)!r}, train=train).resume()"
                 if isinstance(started, str) and started.startswith("<function ") else  # only Python holds its function
                 f"`{resume_command(spec.name, ledger.storage_dir)}`")
        raise InputError(
            f"search {spec.name!r} in {ledger.storage_dir} was started with other settings than these ({changes});"
            f" resuming would mix configurations from two searches. To continue it as it was started, run {again}"
            " (it reads the settings from the ledger)."
        )
    check_function_code(spec, meta, allow_changed_code)
    records = ledger.records() if meta else []
    check_records(spec, ledger, records)
    _check_num_trials_keeps_records(spec, ledger, records)
    return meta, records


def check_function_code(spec, meta: dict, allow_changed_code: bool) -> None:
    """Refuse to continue a search with a function trainable (``spec.function``) whose code is not the recorded one
    (``meta["function"]["sha256"]``, :func:`~showwork.families.function_code`), unless ``allow_changed_code``:
    its trials would otherwise be reported as one search of one code.

    Raises
    ------
    InputError
        One line naming the parameter, the two hashes and the way to run the new code anyway.
    """
    recorded = meta.get("function")
    if spec.function is None or not isinstance(recorded, dict) or allow_changed_code:
        return
    now = function_code(spec.function)
    if recorded.get("sha256") != now.sha256:
        raise InputError(
            f"train: the code of {now.name} is not the code search {spec.name!r} ran (SHA-256 of its {now.hashed}"
            f" {str(recorded.get('sha256'))[:12]}... recorded, {now.sha256[:12]}... now): its trials would mix two codes."
            " Give the recorded function (its source is in the search's functions/ folder), or pass"
            " allow_changed_code=True to run this one (search.json and the report's checklist then say so)"
        )


def _differences(recorded, given, words: tuple[str, str] = ("recorded", "now"), path: str = "") -> list[str]:
    """``key: R recorded, G now`` (in ``words``) for each leaf that differs, value or JSON type, between two
    JSON-like values (dotted keys)."""
    if isinstance(recorded, dict) and isinstance(given, dict):
        found = []
        for key in [*recorded, *(k for k in given if k not in recorded)]:
            old, new = recorded.get(key, _ABSENT), given.get(key, _ABSENT)
            if not _same(old, new):
                found += _differences(old, new, words, f"{path}.{key}" if path else str(key))
        return found
    shown = ["(none)" if v is _ABSENT else json.dumps(v, sort_keys=True) for v in (recorded, given)]
    return [f"{path}: {shown[0]} {words[0]}, {shown[1]} {words[1]}"]


def _same(a, b) -> bool:
    """Two JSON-like values are equal, value and type at every level (``1`` is neither ``true`` nor ``1.0``)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[key], b[key]) for key in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


_ABSENT = object()


def _check_num_trials_keeps_records(spec, ledger, records) -> None:
    """Refuse a resumed ``num_trials`` that leaves out recorded trials.

    The report, ``showwork results`` and the checklist use every record of the ledger, while the
    summary and the progress count ``num_trials``: a lower number would make them disagree (and
    would call the search complete with records beyond its plan). Lowering it to a count that
    keeps every record (a killed search with fewer records than planned) stays allowed.

    Raises
    ------
    InputError
        A record has an index >= ``spec.num_trials``.
    """
    indices = {record.index for record in records}
    if indices and max(indices) >= spec.num_trials:
        needed = max(indices) + 1
        raise InputError(
            f"search {spec.name!r} in {ledger.storage_dir} has {len(indices)} recorded trials (indices up to"
            f" {needed - 1}); num_trials {spec.num_trials} would leave recorded trials out of the search."
            f" Resume with num_trials >= {needed}."
        )

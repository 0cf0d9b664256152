"""What a search recorded besides its trials, read back from its ledger: the spec it ran, its re-runs over
seeds, the command that continues it, and whether a spec may continue it (:func:`check_existing`).
``showwork resume``, ``rerun``, ``results`` and ``report`` read them here, without the search's driver."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from showwork.errors import InputError

if TYPE_CHECKING:
    from showwork.ledger import TrialRecord

__all__ = ["IDENTITY_FIELDS", "check_existing", "recorded_reruns", "recorded_spec", "resume_command", "search_identity"]

IDENTITY_FIELDS = ("family", "seed", "space", "metric", "data")
"""Fields of the spec that decide which configurations are drawn: a resume must not change them."""


def search_identity(spec) -> dict:
    """The fields of ``spec`` that decide which configurations are drawn (:data:`IDENTITY_FIELDS`): a resume must not change them."""
    dumped = spec.model_dump(mode="json")
    if dumped["metric"].get("bounds") is None:  # searches started before bounds existed resume unchanged
        dumped["metric"].pop("bounds", None)
    return {key: dumped[key] for key in IDENTITY_FIELDS}


def resume_command(name: str, storage_dir, default_storage: str = "showwork_runs") -> str:
    """The command that continues search ``name`` of ``storage_dir`` (``--storage`` only when not the default)."""
    import shlex

    storage = str(storage_dir)
    extra = "" if Path(storage) == Path(default_storage) else f" --storage {shlex.quote(storage)}"
    return f"showwork resume {shlex.quote(name)}{extra}"


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
        No such search, or its metadata holds no spec (a search started before it was recorded,
        or one stopped before its first write).
    """
    from showwork.ledger import Ledger, list_searches
    from showwork.search_space import SearchSpec, SpecError

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
        return SearchSpec.model_validate(fields)
    except (ValueError, SpecError) as error:  # pydantic's ValidationError: a hand-edited metadata file
        first = str(error).splitlines()
        raise InputError(f"{ledger.meta_path}: the recorded spec is not valid ({' '.join(first[:3])})") from None


def recorded_reruns(storage_dir: Path, name: str, mode: str, records=None) -> tuple:
    """The :class:`~showwork.selection.RerunSummary` of each configuration ``showwork rerun`` re-trained
    in search ``name`` (empty when there are none), ranked by the search's ``records`` (read when not given).

    Raises
    ------
    InputError
        The re-runs' recorded plan is malformed.
    """
    from showwork.ledger import Ledger
    from showwork.selection import RERUN_LEDGER, plan_from_meta, ranked_trials, rerun_summaries

    search = Ledger(Path(storage_dir), name)
    reruns = Ledger(search.root, RERUN_LEDGER)
    if not reruns.meta_path.exists():
        return ()
    plan = plan_from_meta(reruns.read_meta(), str(reruns.meta_path))
    ranked = [r.index for r in ranked_trials(search.records() if records is None else records, mode)]
    return rerun_summaries(plan, reruns.records(), ranked)


def check_existing(spec, ledger, resume: bool) -> tuple[dict, list[TrialRecord]]:
    """The recorded metadata and records of the search ({} and [] for a new one), after checking
    that this run may continue it.

    Raises
    ------
    InputError
        The search exists and ``resume`` is False; it was started with another identity; or
        ``spec.num_trials`` would leave recorded trials out.
    """
    meta = ledger.read_meta()
    if meta and not resume:
        raise InputError(
            f"search {spec.name!r} already exists in {ledger.storage_dir}; add --resume to continue it"
            " (or choose another --name)."
        )
    if meta and meta.get("identity") != search_identity(spec):
        changes = "; ".join(_differences(meta.get("identity") or {}, search_identity(spec))) or "the recorded identity is unreadable"
        raise InputError(
            f"search {spec.name!r} in {ledger.storage_dir} was started with other settings than these ({changes});"
            " resuming would mix configurations from two searches. To continue it as it was started, run"
            f" `{resume_command(spec.name, ledger.storage_dir)}` (it reads the settings from the ledger)."
        )
    records = ledger.records() if meta else []
    _check_num_trials_keeps_records(spec, ledger, records)
    return meta, records


def _differences(recorded, given, path: str = "") -> list[str]:
    """``key: recorded → given`` for each leaf that differs between two JSON-like values (dotted keys)."""
    import json

    if isinstance(recorded, dict) and isinstance(given, dict):
        found = []
        for key in [*recorded, *(k for k in given if k not in recorded)]:
            old, new = recorded.get(key, _ABSENT), given.get(key, _ABSENT)
            if old != new:
                found += _differences(old, new, f"{path}.{key}" if path else str(key))
        return found
    shown = ["(none)" if v is _ABSENT else json.dumps(v, sort_keys=True) for v in (recorded, given)]
    return [f"{path}: {shown[0]} recorded, {shown[1]} now"]


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

"""Each checklist item's answer, read from what one family's search recorded.

An answer is made of facts: the family's search spec, its meta (the environment the search
recorded), its trials and the report's numbers (:class:`Facts`). A detail that was not recorded
reads :data:`NOT_RECORDED` and marks the answer as not recorded: nothing is guessed. Which item
each answer answers is :mod:`showwork.report.checklist.items`'s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any, NamedTuple

import numpy as np

from showwork.energy import SPLIT_RULE, joules_to_kwh
from showwork.errors import InputError
from showwork.report.contents import FamilyAnalysis, FamilySummary, Report
from showwork.report.inputs import SHOWWORK_SEARCH, RecordedSpace, SamplerInfo, distribution_words, iid_caveat
from showwork.report.links import shown_source
from showwork.report.tables import format_duration, format_number, rerun_sentence, tie_sentence
from showwork.space import SearchSpace
from showwork.values import value_text

__all__ = [
    "NOT_RECORDED", "Answer", "Facts", "family_facts", "best_configuration", "code", "compute_and_size",
    "descriptive_statistics", "expected_performance", "infrastructure", "open_access", "packages", "reproduction",
    "resources", "runtime", "scores", "selection", "setup", "significance", "space", "splits", "training_details",
    "trials",
]

NOT_RECORDED = "not recorded"
"""The answer, or part of an answer, for what the searches did not record."""
_BANDS = {"ld-hd": ("exact", "LD-HD"), "ld-et": ("exact", "LD-ET"), "ks": ("exact", "KS"), "dkw": ("conservative", "DKW")}
"""Per band method: whether its coverage is exact (continuous scores) or conservative, and its short name."""
_SPLIT_ORDER = ("train", "dev", "test")
_LOCAL_DATA_KEYS = ("dir",)
"""Keys of a spec's ``data`` that name a directory on the searching machine: no use to a reader."""


class Answer(NamedTuple):
    """An answer under construction: its text, whether all of it was recorded, whether any of it was."""

    text: str
    recorded: bool = True
    known: bool = True


_MISSING = Answer(NOT_RECORDED, recorded=False, known=False)


def _known(label: str, value: str | None) -> Answer:
    """``"label: value"``, or ``"label: not recorded"`` when value is None."""
    if value is None:
        return Answer(f"{label}: {NOT_RECORDED}", recorded=False, known=False)
    return Answer(f"{label}: {value}")


def _maybe(value: str | None) -> Answer:
    """``value`` as a recorded answer, or :data:`NOT_RECORDED`."""
    return _MISSING if value is None else Answer(value)


def _join(parts: Sequence[Answer], sep: str = "; ") -> Answer:
    """The parts joined; plain :data:`NOT_RECORDED` when nothing in them was recorded."""
    if not any(part.known for part in parts):
        return _MISSING
    # A part that is a sentence ("... you need n ≥ 61.") loses its full stop before the separator: "n ≥ 61; test ...".
    texts = [_without_full_stop(part.text) for part in parts[:-1]] + [parts[-1].text] if parts else []
    return Answer(sep.join(texts), all(part.recorded for part in parts))


def _without_full_stop(text: str) -> str:
    return text[:-1] if text.endswith(".") and not text.endswith("..") else text


def _sections(**parts: Answer) -> Answer:
    """Labelled sections ("Code: ...") as sentences; each part may itself hold "; "-separated facts."""
    labelled = [part._replace(text=f"{label.replace('_', ' ').capitalize()}: {part.text}") for label, part in parts.items()]
    return _join(labelled, sep=". ")


@dataclass(frozen=True)
class Facts:
    """What one family's search recorded, read once; None (or empty) where it was not recorded."""

    family: FamilyAnalysis
    report: Report
    spec: dict
    environment: dict | None
    seed: int | None

    @property
    def summary(self) -> FamilySummary:
        return self.family.summary

    @property
    def metric(self) -> str:
        return self.family.results.metric

    @property
    def mode(self) -> str:
        return "min" if self.family.results.minimize else "max"


def family_facts(family: FamilyAnalysis, report: Report) -> Facts:
    results = family.results
    spec = results.spec if isinstance(results.spec, dict) else {}
    environment = results.meta.get("environment")
    seed = results.meta.get("seed", spec.get("seed"))
    return Facts(
        family=family,
        report=report,
        spec=spec,
        environment=environment if isinstance(environment, dict) and environment else None,
        seed=seed if isinstance(seed, int) and not isinstance(seed, bool) else None,
    )


# --- formatting ------------------------------------------------------------------------------


def _number(x: float | int | None, digits: int = 4) -> str | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else format_number(x, digits)


def _get(mapping: Mapping, key: str) -> Any:
    """``mapping[key]`` treating a missing key, None and NaN alike."""
    value = mapping.get(key)
    return None if isinstance(value, float) and math.isnan(value) else value


# --- the facts each answer is made of --------------------------------------------------------


def _cpu(env: dict, sep: str) -> Answer:
    model, count = _get(env, "cpu_model"), _get(env, "cpu_count")
    return _join([_known("CPU", model), _known("logical CPUs", None if count is None else str(count))], sep)


def _ram(env: dict) -> Answer:
    total = _get(env, "memory_total_bytes")
    return _known("RAM", None if not isinstance(total, (int, float)) else f"{total / 2**30:.1f} GiB")


def _gpus(env: dict, sep: str) -> Answer:
    """GPU model, count and memory; the driver and CUDA only where there are GPUs."""
    count = _get(env, "gpu_count")
    if not isinstance(count, int):
        return _known("GPUs", None)
    if count == 0:
        return Answer("GPUs: none detected (nvidia-smi)")
    model = _get(env, "gpu_model")
    memories = {gpu.get("memory_total") for gpu in env.get("gpus") or () if isinstance(gpu, dict)}
    memory = f" with {memories.pop()} each" if len(memories) == 1 and None not in memories else ""
    parts = [
        Answer(f"GPUs: {count} × {model}{memory}") if model else Answer(f"GPUs: {count} (model {NOT_RECORDED})", recorded=False),
        _known("NVIDIA driver", _get(env, "nvidia_driver")),
        _known("CUDA (torch build)", _get(env, "cuda_version")),
    ]
    return _join(parts, sep)


def infrastructure(f: Facts, sep: str = "; ") -> Answer:
    env = f.environment
    if env is None:
        return _MISSING
    return _join([_cpu(env, sep), _ram(env), _gpus(env, sep), _known("platform", _get(env, "platform"))], sep)


def runtime(f: Facts) -> Answer:
    mean = f.summary.mean_runtime_s
    if mean is None:
        return _known("mean runtime per trial", None)
    runtimes = f.family.results.runtimes_s
    measured = int(np.isfinite(runtimes).sum()) if runtimes is not None else 0
    return Answer(f"mean runtime per trial: {format_duration(mean)} (over the {measured} trials with a measured runtime)")


def _data(f: Facts) -> str | None:
    """The dataset and its options from the spec's ``data`` section, e.g. ``sst2 (dev_size 500)``."""
    data = f.spec.get("data")
    if not isinstance(data, dict) or not data:
        return None
    options = ", ".join(f"{key} {value_text(value)}" for key, value in data.items() if key not in ("dataset", *_LOCAL_DATA_KEYS))
    name = data.get("dataset")
    if name is None:
        return options or None
    return f"{value_text(name)} ({options})" if options else value_text(name)


def _split_sizes(metrics: Mapping[str, Any]) -> tuple[tuple[str, int], ...] | None:
    """A trial's ``split_sizes`` (a mapping in the ledger, ``split_sizes.<split>`` keys from MLflow)."""
    sizes = metrics.get("split_sizes")
    if not isinstance(sizes, Mapping):
        prefix = "split_sizes."
        sizes = {key[len(prefix):]: value for key, value in metrics.items() if isinstance(key, str) and key.startswith(prefix)}
    out = {}
    for split, size in sizes.items():
        if isinstance(size, (int, float)) and not isinstance(size, bool) and math.isfinite(size) and size >= 0 and size == int(size):
            out[str(split)] = int(size)
    order = {split: i for i, split in enumerate(_SPLIT_ORDER)}
    return tuple(sorted(out.items(), key=lambda item: (order.get(item[0], len(order)), item[0]))) or None


def splits(f: Facts) -> Answer:
    """The dataset and the examples per split: the best trial's, and whether the trials agree."""
    per_trial = [_split_sizes(m) for m in f.family.results.trial_metrics]
    known = [sizes for sizes in per_trial if sizes is not None]
    sizes_text = None
    if known:
        best = f.summary.best_index
        best_sizes = per_trial[best] if best is not None and best < len(per_trial) else None
        shown = best_sizes or known[0]
        sizes_text = ", ".join(f"{split} {size}" for split, size in shown)
        distinct = len(set(known))
        if distinct > 1:
            which = "the best trial's" if best_sizes else "the first trial's that has them"
            sizes_text += f" ({which}; they differ across trials: {distinct} distinct sets in {len(known)} trials)"
    return _join([_known("data", _data(f)), _known("examples per split", sizes_text)])


def scores(f: Facts) -> Answer:
    """The selected configuration's validation score and its test score."""
    s = f.summary
    test_name = (f.spec.get("metric") or {}).get("test") or "score"
    finished = s.n_trials - s.n_failed
    validation = Answer(f"validation {f.metric} of the selected configuration (best of {finished} finished trials): {format_number(s.best_score)}")
    tie = tie_sentence(s.best_tie, f"test {test_name}")
    return _join([validation, _known(f"test {test_name} of that configuration", _number(s.best_test_score)),
                  *([Answer(tie)] if tie else [])])


def code(f: Facts) -> Answer:
    """Inside git: the remote, the commit and whether tracked files had changes. Outside git: the
    files that define the search (YAML, family file) and their SHA-256. Runs of other programs read
    from MLflow: MLflow's own source tags (script and git commit)."""
    env = f.environment
    function = f.family.results.meta.get("function")
    if isinstance(function, Mapping):
        return _function_code(function, f.family.results.meta.get("function_history"), env)
    if env is None:
        return _run_sources(f.family.results.meta.get("run_sources"))
    commit, dirty = _get(env, "git_commit"), _get(env, "git_dirty")
    files = [entry for entry in env.get("code_files") or () if isinstance(entry, Mapping) and entry.get("path")]
    if commit is None and files:
        # By name: the recorded path is a folder of the user's machine, which a report does not show.
        listed = ", ".join(f"{PurePath(str(entry['path'])).name} (SHA-256 {entry.get('sha256') or NOT_RECORDED})" for entry in files)
        unreadable = any(not entry.get("sha256") for entry in files)
        return Answer(f"not in a git repository; files: {listed}", recorded=not unreadable)
    parts = [_known("repository", _get(env, "git_remote")), _known("commit", commit)]
    if commit is not None:
        parts.append(_known("uncommitted changes to tracked files", None if dirty is None else ("yes" if dirty else "none")))
    return _join(parts)


def _function_code(function: Mapping, history: Any, env: dict | None) -> Answer:
    """A search of a Python function (``showwork.search(train, space)``): its name, the SHA-256 of its code, where its
    source is kept, whether the code changed between runs (``allow_changed_code``), and the git commit if any."""
    digest = function.get("sha256")
    of = "source" if function.get("hashed") == "source" else "bytecode (no source was available)"
    where = (f"; its source is in the search's folder, {function['source_file']}" if function.get("source_file")
             else "; its source was not available to record")
    text = (f"a Python function, {function.get('name') or NOT_RECORDED} (module {function.get('module') or NOT_RECORDED}),"
            f" SHA-256 of its {of} {digest or NOT_RECORDED}{where}")
    versions = list(dict.fromkeys(entry.get("sha256") for entry in history if isinstance(entry, Mapping))) \
        if isinstance(history, list) else []
    if any(isinstance(entry, Mapping) and entry.get("changed") for entry in history or ()):
        text += (f"; the code changed during the search (allowed with allow_changed_code): {len(versions)} versions ran,"
                 f" SHA-256 {', '.join(str(v) for v in versions)}")
    commit = _get(env, "git_commit") if env is not None else None
    if commit is not None:
        text += f"; commit {commit}"
    return Answer(text, recorded=bool(digest))


def _run_sources(sources: Any) -> Answer:
    """MLflow's ``mlflow.source.name`` and ``mlflow.source.git.commit`` of the runs: ``script train.py at commit abc``."""
    if not sources:
        return _MISSING
    described = [
        "; ".join(part for part in (f"script {name}" if name else "", f"commit {commit}" if commit else "") if part)
        for name, commit in sources
    ]
    shown = ", ".join(described[:3]) + (f" and {len(described) - 3} more" if len(described) > 3 else "")
    return Answer(f"{shown} (the runs' MLflow source tags)")


def space(f: Facts) -> Answer:
    """Every hyperparameter's distribution and bounds, as ``showwork validate`` describes them.

    A ``showwork search``'s from its recorded space; a Ray Tune experiment's or an Optuna study's from
    what the tool recorded (``meta["space"]``, :class:`~showwork.report.inputs.RecordedSpace`), in the
    same words where its distribution is one of showwork's, and saying so where not.
    """
    space = f.spec.get("space")
    if isinstance(space, Mapping) and space:
        try:
            parsed = SearchSpace.from_dict(space)
        except InputError as error:
            return Answer(f"{NOT_RECORDED} (the recorded space could not be read: {error})", recorded=False, known=False)
        conditions = parsed.conditions
        return Answer("; ".join(
            f"{name}: {distribution_words(parsed[name])}" + (f" (only when {conditions[name].describe()})" if name in conditions else "")
            for name in parsed.names
        ))
    recorded = f.family.results.meta.get("space")
    if not isinstance(recorded, RecordedSpace):
        return _MISSING
    if not recorded.params:
        return Answer(f"{NOT_RECORDED} ({recorded.evidence})", recorded=False, known=False)
    text = "; ".join(param.describe() for param in recorded.params)
    return Answer(f"{text} (read from {recorded.evidence})", recorded=all(param.known for param in recorded.params))


def best_configuration(f: Facts) -> Answer:
    params = f.summary.best_params
    if not params:
        return _MISSING
    return Answer(", ".join(f"{name}={value_text(value)}" for name, value in params.items()))


def trials(f: Facts) -> Answer:
    s = f.summary
    text = f"{s.n_trials} trials run, {s.n_failed} failed"
    retried = f.family.results.n_retried
    if retried:
        text += f", {retried} retried (each counted by its last attempt)"
    planned = f.family.results.meta.get("num_trials", f.spec.get("num_trials"))
    if isinstance(planned, int) and planned != s.n_trials:
        text += f" (of {planned} planned)"
    policy = f.family.curve.failures.policy
    whose = "the search's" if f.spec.get("failure_policy") and f.report.settings.failure_policy is None else "the report's"
    return Answer(f"{text}; failure policy: {policy} ({whose})")


def selection(f: Facts) -> Answer:
    criterion = f"selected by {f.metric} ({f.mode})"
    sampler = f.family.results.meta.get("sampler")
    if isinstance(sampler, SamplerInfo) and sampler.name is None:  # a source that does not record it
        return Answer(f"search method: {NOT_RECORDED} ({sampler.evidence}), not known to be i.i.d. random draws;"
                       f" {criterion}{'' if f.spec else ', as given to the report'}", recorded=False)
    if isinstance(sampler, SamplerInfo) and sampler != SHOWWORK_SEARCH:  # an Optuna study, a Ray experiment, --sampler
        kind = "i.i.d. random draws" if sampler.iid else "not i.i.d. random search"
        return Answer(f"search method: {sampler.describe()}, {kind}; {criterion}")
    if not f.spec:
        return Answer(f"search method: {NOT_RECORDED}; {criterion}, as given to the report", recorded=False)
    seed = _known("seed", None) if f.seed is None else Answer(f"seed {f.seed}")
    return _join([Answer("random search (i.i.d. samples)"), seed, Answer(criterion)], ", ")


def _curve_name(f: Facts) -> str:
    q = f.family.curve.quantile
    return "median tuning curve" if q == 0.5 else f"{q:g}-quantile tuning curve"


def _bands(f: Facts) -> str:
    band = f.family.curve.band
    exactness, short = _BANDS.get(band.method, ("", band.method))
    return f"{exactness} simultaneous {100 * band.confidence:g} % {short} bands".strip()


def expected_performance(f: Facts) -> Answer:
    mean = " and bands of the mean tuning curve" if f.family.curve.mean_lower is not None else ""
    text = f"{_curve_name(f)} with {_bands(f)}{mean}, V and U statistics; see the tuning-curve table. {f.family.advice.text()}"
    return _join([Answer(text), *_reruns(f)])  # Dodge's summary statistics (mean, variance): the seeds' spread too


def _compute(f: Facts) -> Answer:
    """Total wall time over all trials, and GPU-hours where the GPUs per trial are known."""
    s = f.summary
    hours = None if s.compute_hours is None else f"{format_duration(s.compute_hours * 3600.0)} of trial wall time in all"
    gpus_known = f.report.settings.gpus_per_trial is not None or (f.spec.get("resources") or {}).get("gpus") is not None
    if not gpus_known:
        gpu = _known("GPU-hours", None)
    elif s.gpus_per_trial == 0:
        gpu = Answer("GPU-hours: none (CPU-only trials)")
    else:
        gpu = _known("GPU-hours", None if s.gpu_hours is None else f"{format_number(s.gpu_hours, 3)} ({format_number(s.gpus_per_trial)} GPUs per trial)")
    energy = [] if gpus_known and s.gpus_per_trial == 0 else [_energy(f)]
    return _join([_known("total compute", hours), gpu, *energy])


def _energy(f: Facts) -> Answer:
    """The trials' recorded GPU energy in kWh (NVML, :data:`showwork.energy.SPLIT_RULE`), and in gCO₂e
    when the report was given the grid's intensity; not recorded where no trial has it."""
    trials = f.family.results.trial_worker
    joules = [float(t["gpu_energy_j"]) for t in trials if isinstance(t.get("gpu_energy_j"), (int, float))]
    if not joules:  # said, but the item stays answered: the checklists ask for GPU-hours, energy is more
        return Answer(f"GPU energy: {NOT_RECORDED}", recorded=True, known=False)
    total = joules_to_kwh(sum(joules))
    some = f"{len(joules)} trials" if len(joules) == len(trials) else f"{len(joules)} of {len(trials)} trials (the others: {NOT_RECORDED})"
    text = (f"GPU energy: {format_number(total, 3)} kWh over {some}, {format_number(total / len(joules), 3)} kWh per trial"
            f" on average ({SPLIT_RULE})")
    intensity = f.report.settings.grid_intensity
    if intensity is not None:
        text += f"; {format_number(total * intensity, 3)} gCO₂e at the {format_number(intensity)} gCO₂e/kWh given for the grid"
    return Answer(text)


def _parameters(f: Facts) -> Answer:
    count = f.summary.parameter_count
    return _known("parameters of the selected model", None if count is None else f"{count:,}")


def _reruns(f: Facts) -> list[Answer]:
    """The selected configuration(s) over fresh seeds (``showwork rerun``), when it was re-run."""
    test = (f.spec.get("metric") or {}).get("test")
    return [Answer(rerun_sentence(rerun, f.metric, test)) for rerun in f.family.results.reruns]


def descriptive_statistics(f: Facts) -> Answer:
    s = f.summary
    finished = s.n_trials - s.n_failed
    extreme = "minimum" if f.family.results.minimize else "maximum"
    trials = Answer(
        f"validation {f.metric} over the {finished} finished trials: median {format_number(s.median)}, mean"
        f" {format_number(s.mean)}, interquartile range {format_number(s.q25)} to {format_number(s.q75)}, standard"
        f" deviation {format_number(s.std)}; the reported result is the best trial (the {extreme} of"
        f" {s.n_trials} trials), not a mean; the {_curve_name(f)} carries {_bands(f)}, which hold at every budget at once"
    )
    return _join([trials, *_reruns(f)])


def _versions(values: Sequence[Any]) -> str:
    """Distinct versions in order of first appearance, joined by `` / `` (trials on differing workers)."""
    return " / ".join(dict.fromkeys(str(value) for value in values if value))


def packages(f: Facts) -> Answer:
    """Python and the distributions the trials' trainables imported, as each trial's worker recorded them.

    Searches recorded before the workers recorded them give the driver's Python and showwork's own
    packages, and say that the trainable's imports were not recorded (never a fixed list as if used).
    """
    workers = [trial for trial in f.family.results.trial_worker if isinstance(trial.get("packages"), Mapping)]
    if workers:
        versions: dict[str, list[str]] = {}
        for trial in workers:
            for name, version in trial["packages"].items():
                versions.setdefault(name, []).append(version)
        python = _versions([trial.get("python") for trial in workers])
        listed = ([f"Python {python}"] if python else []) + [
            f"{name} {_versions(found)}" for name, found in sorted(versions.items(), key=lambda item: item[0].lower())
        ]
        return Answer(", ".join(listed) + f" (the packages the trainable imported, with showwork, Ray and MLflow,"
                       f" as recorded by the workers of {len(workers)} trials)")
    env = f.environment
    if env is None:
        return _MISSING
    packages = env.get("packages")
    listed = [f"Python {env['python']}"] if env.get("python") else []
    if isinstance(packages, Mapping):
        listed += [f"{name} {version}" for name, version in packages.items() if version]
    driver = Answer(", ".join(listed) + " (where the search ran)") if listed else _MISSING
    return _join([driver, _known("packages the trainable imported", None)])


def reproduction(f: Facts) -> Answer:
    spec_text = None
    if f.spec:
        family = f.spec.get("family")  # a family file by its name: a report shows no folder of the user's machine
        spec_text = "recorded with the search" + (f" (family {shown_source(str(family))})" if family else "")
    seeds = None if f.seed is None else f"search seed {f.seed}; each trial's configuration and training seed derive from (seed, trial index) alone"
    return _sections(search_space_file=_maybe(spec_text), seeds=_maybe(seeds), code=code(f))


def open_access(f: Facts) -> Answer:
    return _sections(code=code(f), data=_maybe(_data(f)))


def training_details(f: Facts) -> Answer:
    return _sections(splits=splits(f), hyperparameters=space(f), chosen_by=selection(f), best_configuration=best_configuration(f))


def significance(f: Facts) -> Answer:
    caveat = iid_caveat(f.family.results)
    sampler = f.family.results.meta.get("sampler")
    if caveat and isinstance(sampler, SamplerInfo) and sampler.name is None:
        assumption = Answer(f"not i.i.d.: search method {NOT_RECORDED}: {caveat}", recorded=False)
    elif caveat:  # a recorded sampler that is not random: known, and said
        assumption = Answer(f"not i.i.d.: {caveat}")
    elif isinstance(sampler, SamplerInfo) and sampler != SHOWWORK_SEARCH:
        assumption = Answer(f"the trials are i.i.d. random draws ({sampler.describe()}), as the bands assume")
    elif f.spec:
        assumption = Answer(f"the trials are i.i.d. random-search draws (seed {f.seed}), as the bands assume")
    else:
        assumption = Answer(f"search method: {NOT_RECORDED}; the bands assume i.i.d. random-search trials", recorded=False)
    coverage = (
        f"{_bands(f)} on the {_curve_name(f)}, holding at every budget at once; they cover the distribution of the"
        f" best validation score among k trials of this search (hyperparameter sampling and training randomness"
        f" together), not other data or other search spaces; distribution-free: no assumption on the scores'"
        f" distribution (failed trials: policy {f.family.curve.failures.policy})"
    )
    return _join([Answer(coverage), assumption, *_reruns(f)])


def _worker(f: Facts) -> Answer:
    """What each trial held, and the machine it ran on (CPU, GPUs, platform)."""
    resources = f.spec.get("resources") or {}
    held = [f"{label} {format_number(resources[key])}" for key, label in (("cpus", "CPUs"), ("gpus", "GPUs")) if isinstance(resources.get(key), (int, float))]
    parts = [_known("per trial", ", ".join(held) or None)]
    if f.environment is not None:
        env = f.environment
        parts += [_cpu(env, ", "), _gpus(env, ", "), _known("platform", _get(env, "platform"))]
    else:
        parts.append(_known("machine", None))
    return _join(parts, ", ")


def _bytes(value: float) -> str:
    return f"{value / 2**30:.2f} GiB" if value >= 2**30 else f"{value / 2**20:.0f} MiB"


def _peak_memory(f: Facts) -> list[Answer]:
    """The trials' peak resident memory (worker process and children) and, where torch used CUDA, peak GPU memory."""
    trials = f.family.results.trial_worker

    def measured(name: str) -> list[float]:
        return [float(t[name]) for t in trials if isinstance(t.get(name), (int, float)) and not isinstance(t.get(name), bool)]

    ram = measured("peak_rss_bytes")
    parts = [_known("peak resident memory per trial (worker process and its children)",
                    None if not ram else f"median {_bytes(float(np.median(ram)))}, largest {_bytes(max(ram))} over {len(ram)} trials")]
    allocated, reserved = measured("peak_gpu_allocated_bytes"), measured("peak_gpu_reserved_bytes")
    if allocated or reserved:
        shown = ", ".join(part for part in (
            f"largest {_bytes(max(allocated))} allocated" if allocated else "",
            f"largest {_bytes(max(reserved))} reserved" if reserved else "",
        ) if part)
        parts.append(Answer(f"peak GPU memory per trial (torch): {shown} over {max(len(allocated), len(reserved))} trials"))
    elif ram and (f.spec.get("resources") or {}).get("gpus"):
        parts.append(Answer("peak GPU memory: none measured (no trial used CUDA through torch)"))
    return parts


def resources(f: Facts) -> Answer:
    machine = _MISSING if f.environment is None else _ram(f.environment)
    memory = _join([machine, *_peak_memory(f)]) if f.family.results.trial_worker or f.spec else machine
    return _sections(worker=_worker(f), memory=memory, time=runtime(f), compute=_compute(f))


def compute_and_size(f: Facts) -> Answer:
    return _sections(model_size=_parameters(f), compute=_compute(f), infrastructure=infrastructure(f, sep=", "))


def _tuning_data(f: Facts) -> Answer:
    """Which data determined the hyperparameters (ARR C2 since 2025): the validation score; never the test score."""
    metric = f.spec.get("metric") or {}
    if not f.spec or not metric.get("name"):
        return Answer(f"selected by {f.metric}, as given to the report; the split it was computed on: {NOT_RECORDED};"
                       " the report never selects by a test score", recorded=False)
    test = metric.get("test")
    never = (f"the test metric {test} is recorded per trial and never used for selection" if test
             else "no test metric is recorded, so none was used for selection")
    return Answer(f"tuned on the validation split: every trial's {metric['name']} (the search's metric.name) on the"
                   f" validation data decides; {never}")


def setup(f: Facts) -> Answer:
    return _sections(search_space=space(f), selection=selection(f), best_configuration=best_configuration(f),
                     data_for_hyperparameters=_tuning_data(f))

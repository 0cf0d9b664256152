"""What a search's parent run holds besides its trials: params, tags and text artifacts that describe the search."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from showwork.tracking.mlflow_keys import MAX_TAG_LENGTH, truncated

__all__ = ["environment_json", "environment_tags", "parent_payload", "space_markdown", "space_params"]


def _describe(distribution: Any) -> str:
    """A distribution's readable description: its ``describe()`` if it has one, else ``str()``."""
    describe = getattr(distribution, "describe", None)
    return str(describe()) if callable(describe) else str(distribution)


def space_markdown(space: Mapping[str, Any], title: str = "Search space") -> str:
    """Return a Markdown table of the search space.

    ``space`` maps each hyperparameter name to a distribution (its ``describe()`` is used, e.g.
    a :class:`showwork.space.SearchSpace`) or directly to a description string.
    """
    lines = [f"# {title}", "", "| hyperparameter | distribution |", "| --- | --- |"]
    for name, description in _descriptions(space).items():
        cell = description.replace("|", "\\|").replace("\n", " ")
        lines.append(f"| `{name}` | {cell} |")
    return "\n".join(lines) + "\n"


def environment_tags(environment: Mapping[str, Any]) -> dict[str, str]:
    """Return run tags from :func:`showwork.environment.collect_environment` output.

    ``showwork.git_commit`` and ``mlflow.source.git.commit`` (the commit the MLflow UI shows),
    ``showwork.git_dirty``, ``showwork.cpu``, ``showwork.gpu``, ``showwork.gpu_count``,
    ``showwork.cuda``, ``showwork.nvidia_driver``, ``showwork.python`` and one
    ``showwork.package.<name>`` per installed package. Unknown values are left out.
    """
    tags: dict[str, str] = {}
    commit = environment.get("git_commit")
    if commit:
        tags["showwork.git_commit"] = str(commit)
        tags["mlflow.source.git.commit"] = str(commit)
    if environment.get("git_dirty") is not None:
        tags["showwork.git_dirty"] = str(bool(environment["git_dirty"])).lower()
    for tag, key in (
        ("showwork.cpu", "cpu_model"), ("showwork.gpu", "gpu_model"), ("showwork.gpu_count", "gpu_count"),
        ("showwork.cuda", "cuda_version"), ("showwork.nvidia_driver", "nvidia_driver"), ("showwork.python", "python"),
    ):
        if environment.get(key) is not None:
            tags[tag] = truncated(str(environment[key]), MAX_TAG_LENGTH)
    for name, version in (environment.get("packages") or {}).items():
        if version:
            tags[f"showwork.package.{name}"] = str(version)
    return tags


def parent_payload(
    spec_yaml: str,
    seed: int,
    num_trials: int,
    space: Mapping[str, Any],
    environment: Mapping[str, Any] | None = None,
) -> tuple[dict[str, Any], dict[str, str], dict[str, str]]:
    """Return ``(params, tags, artifacts)`` for :meth:`~showwork.tracking.tracker.Tracker.start_parent` of a search.

    Parameters
    ----------
    spec_yaml : str
        The search's YAML file, as written (artifact ``search.yaml``).
    seed, num_trials : int
        Params ``seed`` and ``num_trials``.
    space : mapping
        Hyperparameter name → distribution (or its description): params ``space.<name>``
        (truncated to MLflow's 6000 characters) and the artifact ``space.md``.
    environment : mapping, optional
        :func:`showwork.environment.collect_environment` output: tags (:func:`environment_tags`)
        and the artifact ``environment.json``.
    """
    params: dict[str, Any] = {"seed": seed, "num_trials": num_trials}
    params.update(space_params(space))
    artifacts = {"search.yaml": spec_yaml, "space.md": space_markdown(space)}
    tags: dict[str, str] = {}
    if environment is not None:
        tags.update(environment_tags(environment))
        artifacts["environment.json"] = environment_json(environment)
    return params, tags, artifacts


def _descriptions(space: Mapping[str, Any]) -> dict[str, str]:
    """Each hyperparameter's description, with its condition when it is conditional (a SearchSpace's ``conditions``)."""
    conditions = getattr(space, "conditions", {})
    return {
        name: _describe(distribution) + (f" (only when {conditions[name].describe()})" if name in conditions else "")
        for name, distribution in space.items()
    }


def space_params(space: Mapping[str, Any]) -> dict[str, str]:
    return {f"space.{name}": description for name, description in _descriptions(space).items()}


def environment_json(environment: Mapping[str, Any]) -> str:
    return json.dumps(environment, indent=2, sort_keys=True, default=str) + "\n"

"""Many trials on Ray Tune (:class:`RayExecutor`): one trial per index, with per-trial resources, a cap on
concurrency and retries, on a local Ray or a cluster (the family's folder shipped as the job's
``working_dir``, :func:`family_runtime_env`)."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from showwork.errors import InputError
from showwork.redaction import owner_only_folder
from showwork.store import Ledger, utc_file_stamp
from showwork.trials.execution import SearchContext
from showwork.trials.ray_setup import (
    credentials_not_forwarded,
    init_cluster,
    init_local_ray,
    ray_messages_to,
    ray_sigterm_handlers_kept_out,
)
from showwork.trials.worker import ray_trial

FAMILY_FOLDER_LIMIT_MIB = 100  # what a family file's folder may weigh to be shipped to a cluster (Ray's own cap: 512 MiB)


# Never shipped with a family's folder: showwork's own outputs, git's history, Python's caches.
_NOT_SHIPPED = ("showwork_runs", "mlartifacts", "mlruns", ".git", "__pycache__")


_NOT_SHIPPED_FILES = ("mlflow.db", "mlflow.db-journal", "mlflow.db-wal", "mlflow.db-shm")


def family_runtime_env(folder: Path) -> dict[str, Any]:
    """Ray's runtime environment that ships a family file's ``folder`` to every node of a cluster.

    Left out: showwork's own outputs (``showwork_runs/``, ``mlflow.db``, ``mlartifacts/``), ``.git``,
    ``__pycache__`` and virtualenvs (folders holding a ``pyvenv.cfg``), at any depth. Ray also leaves
    out what the folder's ``.gitignore`` and ``.rayignore`` files name, which the size limit does not
    subtract (it is checked before Ray starts, without Ray's pattern matching).

    Raises
    ------
    InputError
        What would be shipped weighs more than :data:`FAMILY_FOLDER_LIMIT_MIB` MiB.
    """
    limit = FAMILY_FOLDER_LIMIT_MIB * 2**20
    excludes: list[str] = [*_NOT_SHIPPED, *_NOT_SHIPPED_FILES]  # gitignore patterns: at any depth (a .git file too)
    total = 0
    for root, dirs, files in os.walk(folder):
        kept = []
        for name in dirs:
            path = Path(root, name)
            if name in _NOT_SHIPPED or path.is_symlink():
                continue
            if (path / "pyvenv.cfg").is_file():  # a virtualenv, whatever its name
                excludes.append(f"/{path.relative_to(folder).as_posix()}/")
                continue
            kept.append(name)
        dirs[:] = kept
        for name in files:
            if name in _NOT_SHIPPED_FILES or name in _NOT_SHIPPED:
                continue
            try:
                total += Path(root, name).lstat().st_size
            except OSError:  # vanished meanwhile
                continue
        if total > limit:
            raise InputError(
                f"the family file's folder {folder} holds more than {FAMILY_FOLDER_LIMIT_MIB} MiB besides showwork_runs/,"
                " mlflow.db, mlartifacts/, .git and virtualenvs; the search ships that folder to every node of the"
                " cluster. Put the family file and the modules it imports in a folder of their own, and the data"
                " elsewhere."
            )
    return {"working_dir": str(folder), "excludes": excludes}


@dataclass(frozen=True)
class ClusterResources:
    """The CPUs and GPUs of a Ray cluster's alive nodes, and the node types its autoscaler can add.

    A trial is one bundle of ``{CPU, GPU}``: it runs only on a node that has both (Ray never
    splits a bundle), so a request that no node fits waits forever unless a node that fits joins.
    """

    nodes: tuple[tuple[float, float], ...]  # (CPUs, GPUs) of each alive node
    scalable: tuple[tuple[float, float], ...] = ()  # (CPUs, GPUs) of each node type the autoscaler can add
    autoscaling_declared: bool = False  # $SHOWWORK_AUTOSCALING says nodes join on demand

    @staticmethod
    def _fit(shapes, cpus: float, gpus: float) -> bool:
        slack = 1e-6  # Ray keeps resources in units of 1e-4
        return any(c + slack >= cpus and g + slack >= gpus for c, g in shapes)

    def fits(self, cpus: float, gpus: float) -> bool:
        """Whether some alive node has ``cpus`` CPUs and ``gpus`` GPUs in all."""
        return self._fit(self.nodes, cpus, gpus)

    def may_fit_later(self, cpus: float, gpus: float) -> bool:
        """Whether the autoscaler can add a node that fits (or the user declared that nodes join)."""
        return self.autoscaling_declared or self._fit(self.scalable, cpus, gpus)

    def describe(self) -> str:
        """``1 node: cpus=2, gpus=0``, ``3 nodes: 2 × (cpus=8, gpus=1), 1 × (cpus=2, gpus=0)``."""
        if not self.nodes:
            return "no alive node"
        shapes: dict[tuple[float, float], int] = {}
        for shape in self.nodes:
            shapes[shape] = shapes.get(shape, 0) + 1
        count = f"{len(self.nodes)} node{'s' if len(self.nodes) > 1 else ''}"
        if len(shapes) == 1:
            ((cpus, gpus),) = shapes
            return f"{count}: cpus={cpus:g}, gpus={gpus:g}"
        parts = [f"{n} × (cpus={c:g}, gpus={g:g})" for (c, g), n in sorted(shapes.items(), key=lambda x: -x[1])]
        return f"{count}: " + ", ".join(parts)


def _declared_autoscaling() -> bool | None:
    """``$SHOWWORK_AUTOSCALING``: true/false where the cluster's autoscaler is not visible to Ray's state API."""
    value = os.environ.get("SHOWWORK_AUTOSCALING", "").strip().lower()
    if value in ("1", "true", "yes"):
        return True
    if value in ("0", "false", "no"):
        return False
    return None


def _scalable_node_types() -> tuple[tuple[float, float], ...]:
    """The (CPUs, GPUs) of the node types Ray's autoscaler can still add, from the cluster config it publishes.

    The same test as Ray Data's ``is_autoscaling_enabled``: a node type scales up when its
    ``max_count`` is -1 (unlimited) or above its ``min_count``. A cluster without autoscaler
    (``ray start`` by hand, a local Ray) publishes no config: nothing.
    """
    try:
        import ray._private.state  # lazy: Ray loads when a search starts it, not when its input is checked

        config = ray._private.state.state.get_cluster_config()
    except Exception:  # an older GCS, a client connection: no config to read
        return ()
    if not config or not config.node_group_configs:
        return ()
    return tuple(
        (float(group.resources.get("CPU", 0)), float(group.resources.get("GPU", 0)))
        for group in config.node_group_configs
        if group.resources and group.max_count != 0 and (group.max_count == -1 or group.max_count > group.min_count)
    )


class RayExecutor:
    """Runs trials on Ray Tune: a local Ray on 127.0.0.1, or an existing cluster at ``address``.

    Parameters
    ----------
    address : str, optional
        ``ray://...`` or ``host:port`` of an existing cluster; default ``$RAY_ADDRESS`` or a local Ray.
    num_cpus : int, optional
        CPUs of the local Ray (default: all).
    family_folder : Path, optional
        The folder of the family file, shipped to a cluster's nodes (:func:`family_runtime_env`);
        a local Ray's workers read it where it is.
    """

    def __init__(self, address: str | None = None, num_cpus: int | None = None, family_folder: Path | None = None):
        self.address = address or os.environ.get("RAY_ADDRESS") or None
        self.num_cpus = num_cpus
        self.family_folder = family_folder
        self._shipped = False  # this executor's Ray job ships the family folder
        self._started = False
        self._kept = contextlib.ExitStack()  # settings of Ray held while the executor is entered
        self.run_folder: Path | None = None  # Ray Tune's folder of the last run (``ray/run-<time>``)

    def __enter__(self) -> "RayExecutor":
        os.environ.setdefault("RAY_AIR_NEW_OUTPUT", "0")  # no experiment banner; showwork draws its own progress
        os.environ.setdefault("TUNE_DISABLE_AUTO_CALLBACK_LOGGERS", "1")
        os.environ.setdefault("RAY_DEDUP_LOGS", "0")
        import ray  # lazy: after the environment above (Ray reads RAY_DEDUP_LOGS when imported); 0.4 s

        # Tune's per-trial log lines and its result-grid warnings duplicate showwork's own display.
        for logger in ("ray.tune", "ray.train", "ray.air"):
            logging.getLogger(logger).setLevel(logging.ERROR)
        ship = bool(self.address and self.family_folder is not None and not ray.is_initialized())
        runtime_env = family_runtime_env(self.family_folder) if ship else None  # too big: refused before Ray starts
        self._kept.enter_context(credentials_not_forwarded())
        self._kept.enter_context(ray_sigterm_handlers_kept_out())
        if not ray.is_initialized():
            try:
                if self.address:
                    init_cluster(self.address, runtime_env)
                    self._shipped = ship
                else:
                    init_local_ray(self.num_cpus)
            except BaseException:  # a failed start, or Ctrl-C during it: end what it started
                self._kept.close()
                ray.shutdown()
                raise
            self._started = True
        return self

    def __exit__(self, *exc) -> None:
        self._kept.close()
        if self._started:
            import ray  # lazy: Ray loads when a search starts it, not when its input is checked

            ray.shutdown()

    def cluster_resources(self) -> ClusterResources:
        """What the (started) Ray offers trials now: see :class:`ClusterResources`."""
        import ray  # lazy: Ray loads when a search starts it, not when its input is checked

        nodes = tuple(
            (float(node["Resources"].get("CPU", 0)), float(node["Resources"].get("GPU", 0)))
            for node in ray.nodes() if node.get("Alive")
        )
        declared = _declared_autoscaling()
        return ClusterResources(
            nodes=nodes,
            scalable=() if declared is False else _scalable_node_types(),
            autoscaling_declared=bool(declared),
        )

    def run(
        self,
        context: SearchContext,
        indices: list[int],
        *,
        cpus_per_trial: float,
        gpus_per_trial: float,
        max_concurrent: int | None,
        max_retries: int,
        callbacks: list | None = None,
        stop_when: Callable[[], bool] | None = None,
    ) -> None:
        """Run the trials ``indices`` (each writes its own ledger record) and return when all ended.

        ``callbacks`` are objects with the trial hooks of ``tune.Callback`` (``on_trial_start``,
        ``on_trial_result``, ``on_trial_complete``, ``on_trial_error``, with Tune's arguments);
        Tune calls them through a ``tune.Callback`` that passes them on, so that their classes need
        no Ray import. ``stop_when``, asked after every trial event, ends the whole run early when
        it returns True (the running trials are stopped, the others never start). The run's
        folder is ``run_folder`` (in the ledger's ``ray/``).
        """
        if not indices:
            return
        from ray import tune  # lazy: Ray loads when a search starts it, not when its input is checked (ray.tune: 1.8 s)
        from ray.tune.progress_reporter import TrialProgressCallback  # lazy: as ray.tune above

        class Quiet(TrialProgressCallback):
            """In place of Tune's own progress printer (lines like "Trial ... completed. Last result:"
            on stdout): showwork draws its own progress, and the trials' errors are in their records."""

            def on_trial_result(self, *args, **kwargs) -> None:
                pass

            def on_trial_error(self, *args, **kwargs) -> None:
                pass

            def on_trial_complete(self, *args, **kwargs) -> None:
                pass

        class Forward(tune.Callback):
            """Tune's four trial hooks, passed on to one of ``callbacks``."""

            def __init__(self, target) -> None:
                self.target = target

            def on_trial_start(self, iteration, trials, trial, **info) -> None:
                self.target.on_trial_start(iteration, trials, trial, **info)

            def on_trial_result(self, iteration, trials, trial, result, **info) -> None:
                self.target.on_trial_result(iteration, trials, trial, result, **info)

            def on_trial_complete(self, iteration, trials, trial, **info) -> None:
                self.target.on_trial_complete(iteration, trials, trial, **info)

            def on_trial_error(self, iteration, trials, trial, **info) -> None:
                self.target.on_trial_error(iteration, trials, trial, **info)

        class StopWhen(tune.Stopper):
            def __call__(self, trial_id, result) -> bool:
                return False

            def stop_all(self) -> bool:
                return bool(stop_when and stop_when())

        if self._shipped:
            context = dataclasses.replace(context, family_shipped=True)
        run_name = f"run-{utc_file_stamp()}"
        # Owner-only: Tune writes its files 0644 there, and Ray's log of the run keeps its tracebacks.
        storage_path = owner_only_folder(Ledger(Path(context.storage_dir).resolve(), context.name).ray_folder())
        self.run_folder = storage_path / run_name
        trainable = tune.with_resources(
            tune.with_parameters(ray_trial, context=context),
            {"cpu": cpus_per_trial, "gpu": gpus_per_trial},
        )
        tuner = tune.Tuner(
            trainable,
            param_space={"index": tune.grid_search(list(indices))},
            tune_config=tune.TuneConfig(
                num_samples=1,
                max_concurrent_trials=max_concurrent,
                reuse_actors=True,
            ),
            run_config=tune.RunConfig(
                name=run_name,
                storage_path=str(storage_path),
                verbose=0,
                stop=StopWhen() if stop_when else None,
                callbacks=[*(Forward(callback) for callback in callbacks or ()), Quiet()],
                progress_reporter=_silent_reporter(),
                failure_config=tune.FailureConfig(max_failures=max_retries),
            ),
        )
        # Tune's SIGINT handler ends the run as if it had completed (the caller would see a normal end):
        # the caller handles signals (showwork.run.driver stops the run through ``stop_when``).
        os.environ["TUNE_DISABLE_SIGINT_HANDLER"] = "1"
        with ray_messages_to(storage_path / f"{run_name}.log"):
            try:
                tuner.fit()
            except Exception:
                if not (stop_when and stop_when()):
                    raise
                # Stopped for a failed storage: Tune's own files there (a trial's pickled error) may be
                # empty too, and reading them back for its result grid fails (EOFError). The ledger,
                # not Tune's results, is what the search keeps.
                logging.getLogger("ray.tune").exception("Ray Tune failed after the search was stopped")


def _silent_reporter():
    """A Tune progress reporter that draws nothing, in place of Tune's status table: in Jupyter, Tune's own (an HTML
    display) clears the cell's output first, and with it the live table showwork draws there."""
    from ray import tune  # lazy: Ray loads when a search starts it (as in RayExecutor.run)

    class Silent(tune.ProgressReporter):
        def should_report(self, trials, done: bool = False) -> bool:
            return False

        def report(self, trials, done: bool, *sys_info: str) -> None:
            pass

    return Silent()

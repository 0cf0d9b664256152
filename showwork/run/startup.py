"""A search's start: refuse bad input before anything exists, start Ray while MLflow opens, check that a trial fits."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import warnings
from collections.abc import Callable

from showwork.errors import InputError
from showwork.families import check_family_data, family_file, load_family_timed
from showwork.run.interrupts import Interrupts
from showwork.run.progress import StartupLine
from showwork.tracking.run_entities import check_param_names
from showwork.trials.ray_executor import RayExecutor, family_runtime_env
from showwork.trials.ray_setup import owner_only_files

__all__ = ["InBackground", "check_inputs", "start_ray", "start_ray_and_open_mlflow", "start_up"]


def check_inputs(spec, address: str | None) -> Callable:
    """Phase 1: refuse what every trial would trip on — MLflow keys that collide, a family that
    cannot be loaded (the line `showwork validate` gives, at the ``family:`` key), data the family's
    ``check_data`` rejects, a family folder too big to ship to a cluster — before any run or record.
    Return the family's train function."""
    check_param_names(spec.space, spec.source_path or spec.name)  # MLflow keys: one per name, or refused here
    train, _ = load_family_timed(spec)  # warns when the import nears the workers' setup_timeout_s
    check_family_data(spec, train, address)
    if (address or os.environ.get("RAY_ADDRESS")) and family_file(spec) is not None:
        family_runtime_env(family_file(spec).parent)  # too big to ship to the cluster: refused before anything exists
    return train


def start_up(spec, tracker, missing: list[int], start_ray, interrupts, progress: bool):
    """Phase 2: start Ray (when trials are missing) while MLflow opens; return ``(executor, waiting)``.

    Ray starts before anything is written: a trial that no node can hold is refused with no ledger
    folder and no MLflow run, like any other bad input. MLflow is opened meanwhile (the two do not
    depend on each other; issue 15 item 8). With no trial missing, only MLflow is checked.
    """
    with StartupLine(spec.name, enabled=progress) as line:
        if missing:
            return start_ray_and_open_mlflow(start_ray, interrupts, tracker, line)
        line.show("opening MLflow")
        tracker.check_reachable()  # before anything is written: an unreachable store leaves no trace
        return None, None


class InBackground:
    """``function()`` run in a daemon thread from construction; :meth:`result` waits for it and
    returns its value or raises its exception (``BaseException`` included) in the caller's thread."""

    def __init__(self, function, name: str) -> None:
        self._function = function
        self._value = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._call, name=name, daemon=True)
        self._thread.start()

    def _call(self) -> None:
        try:
            self._value = self._function()
        except BaseException as error:  # noqa: BLE001 - handed to the caller by result()
            self._error = error

    def wait(self, timeout_s: float | None = None) -> bool:
        """Wait (at most ``timeout_s``); whether the call has ended."""
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def result(self):
        self.wait()
        if self._error is not None:
            raise self._error
        return self._value


def start_ray_and_open_mlflow(start_ray: Callable, interrupts: Interrupts, tracker, line: "StartupLine"):
    """``start_ray()`` (:func:`start_ray`), while a thread opens MLflow (``tracker.check_reachable``: the probe, the
    store's creation or migration, the experiment); see :func:`start_ray` for what it returns.

    The two take seconds each and do not depend on each other, so the search starts sooner (issue 15
    item 8). Nothing is written into the ledger before both have ended, so an unreachable store
    still leaves no trace there; when both fail, MLflow's failure is the one raised (an outage,
    checked first before the overlap), and Ray is shut down again by ``stack``.

    ``ray.init`` runs under umask 077 (:func:`~showwork.trials.ray_setup.owner_only_files`), which is per
    process: the whole overlapped phase runs under it, so that the files MLflow creates meanwhile (a
    new SQLite store, its artifact folder) are always owner-only rather than depending on timing —
    more private than MLflow's default, never less.
    """
    line.show("starting Ray, opening MLflow")
    with owner_only_files():
        def open_mlflow() -> None:
            tracker.check_reachable()
            line.show("starting Ray")

        opening = InBackground(open_mlflow, "showwork-open-mlflow")
        try:
            started = start_ray()
            if not opening.wait(0):
                line.show("opening MLflow")
            opening.wait()
        except KeyboardInterrupt:
            opening.wait(10.0)  # let a store being created finish its transaction; never block an interrupt long
            raise
        except BaseException:
            opening.wait()
            opening.result()  # an unreachable store is named first, as when it was checked before Ray
            raise
    opening.result()
    return started


def start_ray(spec, address: str | None, num_cpus: int | None, stack: contextlib.ExitStack, interrupts: Interrupts):
    """Start the local Ray (or join the cluster) in ``stack``, and check that a trial fits on one of its nodes.

    A trial's CPUs and GPUs are one bundle that Ray places on one node; if no node has them,
    Ray Tune waits forever, silently. Where the cluster's autoscaler can add a node that fits (or
    ``SHOWWORK_AUTOSCALING=1`` says one will join), the search warns and waits instead.

    Returns
    -------
    (RayExecutor, str | None)
        The executor, and the pending state for the progress line while the trials wait for a node.
        ``interrupts`` handle SIGINT and SIGTERM again once Ray has started.

    Raises
    ------
    InputError
        No node can hold a trial and none can be added (Ray is shut down again by ``stack``).
    """
    try:
        file = family_file(spec)
        # A first signal while Ray starts its processes waits until it has started (then the stack shuts it
        # down whole): raised in the middle, it left the search hanging with Ray running (issue 23 item 10).
        with interrupts.deferred():
            executor = stack.enter_context(RayExecutor(address, num_cpus, file.parent if file is not None else None))
    except SystemExit:
        # A SIGTERM handler of Ray's in charge after all (RayExecutor keeps them out of ray.init): it
        # ends Ray's processes and calls sys.exit. That is this search's SIGTERM.
        interrupts.signum = interrupts.signum or signal.SIGTERM
        raise KeyboardInterrupt from None
    interrupts.install()  # again, in case a library replaced the handlers meanwhile
    cpus, gpus = spec.resources.cpus, spec.resources.gpus
    cluster = executor.cluster_resources()
    if cluster.fits(cpus, gpus):
        return executor, None
    asks = f"each trial asks cpus={cpus:g}, gpus={gpus:g}"
    has = f"the {'Ray cluster' if executor.address else 'local Ray'} has {cluster.describe()}"
    if cluster.may_fit_later(cpus, gpus):
        warnings.warn(f"no node can run a trial yet ({asks}; {has}): the trials wait until the autoscaler"
                      " adds a node that fits.")
        return executor, f"waiting for resources: {asks}; {has}, and it scales up"
    advice = (", or use a cluster with such a node (set SHOWWORK_AUTOSCALING=1 if nodes that fit join on demand)"
              if executor.address else " (the local Ray offers this machine's CPUs and GPUs, fewer with --num-cpus)")
    raise InputError(
        f"{spec.source_path or spec.name}: resources: {asks}, but no node has that much ({has});"
        f" lower resources.cpus or resources.gpus{advice}. Nothing was started."
    )

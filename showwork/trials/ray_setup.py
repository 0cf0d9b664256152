"""Starting Ray safely: a private folder and owner-only files, no credentials forwarded, the loopback
interface kept, Ray's SIGTERM handlers kept out of the driver, a local Ray or a cluster, and Ray's
messages to the search's log instead of the terminal.

Ray is imported inside the functions that use it: ``showwork search`` imports this module to check its
options (:func:`check_ray_options`) before it reads the search's input, and Ray (0.4 s; ``ray.tune``
1.8 s) loads only once a search starts it."""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import os
import socket
import stat
import sys
from pathlib import Path
from typing import Any, Iterator

from showwork.errors import InputError
from showwork.files import create_own_file
from showwork.redaction import RedactingFormatter


def private_ray_dir() -> Path:
    """The local Ray's temp folder: ``showwork-ray-<uid>/ray`` in the system temp folder.

    Ray's logs keep what it is handed (``runtime_env_agent.log`` listed the ``AWS_*`` variables
    Ray Tune forwards to its workers, keys included; a worker's ``worker-*.out`` keeps whatever
    the trial prints), and ``ray.init`` makes its temp folder, sessions and logs folders
    world-writable (``chmod 0777``, ``ray._common.utils.try_make_directory_shared``) whatever mode
    they had. So Ray gets the ``ray`` folder *inside* ``showwork-ray-<uid>``, which showwork
    keeps at 0700 and Ray never touches: no other user can enter it, whatever Ray does below.
    The temp folder is the one Ray would use (``$RAY_TMPDIR``, on Linux ``$TMPDIR``, else ``/tmp``).
    Ray's own default, ``/tmp/ray``, is shared and world-readable.

    Raises
    ------
    InputError
        The outer folder exists and is not a directory owned by this user (a symlink, another user's).
    """
    # lazy: Ray loads when a search starts it, not when its input is checked
    from ray._common.utils import get_default_system_temp_dir

    base = get_default_system_temp_dir()
    uid = os.getuid() if hasattr(os, "getuid") else None
    folder = Path(base) / (f"showwork-ray-{uid}" if uid is not None else "showwork-ray")
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        info = folder.lstat()
    except OSError as error:
        raise InputError(f"{folder}: cannot create the local Ray's folder ({error.strerror})") from None
    if not stat.S_ISDIR(info.st_mode) or (uid is not None and info.st_uid != uid):
        raise InputError(f"{folder}: exists but is not a directory of yours; remove it, or set RAY_TMPDIR")
    if info.st_mode & 0o077:  # opened up, e.g. by a Ray that had this folder as its temp folder (earlier showwork)
        folder.chmod(0o700)
    return folder / "ray"


@contextlib.contextmanager
def owner_only_files() -> Iterator[None]:
    """Within the block, this process creates files and folders for its owner only (umask 077).

    Ray's processes (GCS, raylet, agents and, through the raylet, every worker) inherit the umask
    of the process that starts them, so the files they write are 0600 (folders 0700) unless Ray
    sets a mode itself. The umask is per process: other threads of the driver are affected during
    the block too, which makes what they create more private, never less.
    """
    previous = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(previous)


@contextlib.contextmanager
def credentials_not_forwarded() -> Iterator[None]:
    """Within the block, Ray Tune does not copy the driver's ``AWS_*`` credentials into its trial actors.

    Ray Tune adds ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SECURITY_TOKEN`` and
    ``AWS_SESSION_TOKEN`` from the driver's environment to each trial actor's ``runtime_env``
    (``ray.tune.execution.class_cache.ENV_VARS_TO_PROPAGATE``, for its own S3 syncing), and
    Ray then writes that ``runtime_env`` into its logs, keys included. showwork's trials write to a
    local ledger and do not need them: workers of a local Ray inherit the user's environment
    anyway, and those of a cluster get the cluster's own.
    """
    from ray.tune.execution import class_cache  # lazy: Ray loads when a search starts it, not when its input is checked

    forwarded = class_cache.ENV_VARS_TO_PROPAGATE
    class_cache.ENV_VARS_TO_PROPAGATE = frozenset(name for name in forwarded if not name.startswith("AWS_"))
    try:
        yield
    finally:
        class_cache.ENV_VARS_TO_PROPAGATE = forwarded


@contextlib.contextmanager
def loopback_kept() -> Iterator[None]:
    """Within the block, Ray keeps a node address of 127.0.0.1 instead of replacing it.

    On Linux, Ray replaces 127.0.0.1 by the machine's network address (so that other machines can
    reach the node), and its gRPC servers (GCS, raylet, workers) then listen on all interfaces. It
    keeps loopback where clusters are off (its macOS/Windows default,
    ``ray_constants.ENABLE_RAY_CLUSTER``), so that flag is off in the block only: a later
    ``ray.init(address=...)`` in the process still joins clusters normally.
    """
    from ray._private import ray_constants  # lazy: Ray loads when a search starts it, not when its input is checked

    clusters = getattr(ray_constants, "ENABLE_RAY_CLUSTER", None)
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        if clusters is None:
            del ray_constants.ENABLE_RAY_CLUSTER
        else:
            ray_constants.ENABLE_RAY_CLUSTER = clusters


@contextlib.contextmanager
def ray_sigterm_handlers_kept_out() -> Iterator[None]:
    """Within the block, ``ray.init`` does not install its SIGTERM handlers: the caller's handler stays.

    ``ray.init`` installs one that calls ``sys.exit`` (and a local head node one that kills Ray's processes
    and calls ``sys.exit``) while it starts Ray's processes. A SIGTERM then raised ``SystemExit`` wherever
    the driver was, inside the ``fork`` hooks of ``logging`` too, where it was swallowed and left logging's
    lock held: the search hung with Ray running (issue 23 item 10). showwork's own handler
    (:class:`showwork.run.interrupts.Interrupts`) waits until Ray has started, then shuts it down.
    """
    from ray._private import utils  # lazy: Ray loads when a search starts it, not when its input is checked

    installer = utils.set_sigterm_handler
    utils.set_sigterm_handler = lambda handler: None
    try:
        yield
    finally:
        utils.set_sigterm_handler = installer


@contextlib.contextmanager
def ray_processes_in_their_own_group() -> Iterator[None]:
    """Within the block, the processes Ray starts (GCS, raylet and, through the raylet, its agents and
    workers) get a process group of their own, in the driver's session, on Linux.

    A signal to the driver's whole process group (what ``timeout`` and a terminal's Ctrl-C send)
    then reaches the driver alone, which stops the trials and shuts Ray down in order. When Ray's
    processes got SIGTERM too, the GCS died under the driver, which waited 60 s on "Failed to connect
    to GCS" and exited 1 without the resume command (issue 35 item 4); Ray blocks SIGINT in them itself.
    They still end with the driver, however it ends: Ray has the kernel SIGKILL them when it dies
    (``PR_SET_PDEATHSIG``, its "kernel fate sharing"). Where the kernel cannot (not Linux), Ray's reaper
    ends them through the driver's process group instead, so they stay in it (on Windows Ray gives them
    a group of their own itself). The session stays the driver's: whatever ends a session ends them too.
    """
    from ray._private import services, utils  # lazy: Ray loads when a search starts it, not when its input is checked

    if not sys.platform.startswith("linux") or not utils.detect_fate_sharing_support():
        yield
        return
    popen = services.ConsolePopen

    class OwnGroupPopen(popen):
        def __init__(self, *args, preexec_fn=None, **kwargs) -> None:
            def in_own_group() -> None:  # in the child, before Ray's own preexec_fn (which sets its fate sharing)
                os.setpgid(0, 0)
                if preexec_fn is not None:
                    preexec_fn()

            super().__init__(*args, preexec_fn=in_own_group, **kwargs)

    services.ConsolePopen = OwnGroupPopen  # what services.start_ray_process starts each of Ray's processes with
    try:
        yield
    finally:
        services.ConsolePopen = popen


_RAY_TOKEN_LOGGER = "ray._private.authentication.authentication_token_setup"


def _drop_token_auth_notice(record: logging.LogRecord) -> bool:
    """A logging filter: False for Ray's "Token authentication is enabled for this Ray cluster" notice."""
    return not str(record.msg).startswith("Token authentication is enabled for this Ray cluster")


def check_ray_options(num_cpus: int | None, address: str | None) -> None:
    """Refuse ``num_cpus`` (the local Ray's CPUs) with a cluster (``address``, or ``$RAY_ADDRESS``), which has its own.

    Raises
    ------
    InputError
        Both were given (the message names the command line's options, as ``showwork search`` prints it).
    """
    if num_cpus is not None and (address or os.environ.get("RAY_ADDRESS")):
        raise InputError("--num-cpus sizes the local Ray; a cluster (--address, RAY_ADDRESS) has its own CPUs")


def init_local_ray(num_cpus: int | None) -> None:
    """Start a local Ray on 127.0.0.1 only (:func:`loopback_kept`), without the dashboard, in
    :func:`private_ray_dir`, its processes writing files for their owner only (:func:`owner_only_files`)
    in a process group of their own (:func:`ray_processes_in_their_own_group`)."""
    import ray  # lazy: Ray loads when a search starts it, not when its input is checked

    temp_dir = private_ray_dir()
    # Ray 2.60 turns token authentication on for a new local cluster when RAY_AUTH_MODE is unset,
    # and says so in a warning line on stderr: in every `showwork search`, and before the one
    # `showwork: error:` line of a refused search. Only that notice is dropped (Ray's default, the
    # protection, is kept; setting RAY_AUTH_MODE=token ourselves would skip Ray's creation of the token).
    logging.getLogger(_RAY_TOKEN_LOGGER).addFilter(_drop_token_auth_notice)
    with loopback_kept(), owner_only_files(), ray_processes_in_their_own_group():
        ray.init(
            num_cpus=num_cpus,
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            _temp_dir=str(temp_dir),
            log_to_driver=False,
            configure_logging=False,
        )


def _loopback_only(address: str) -> bool:
    """Whether ``address`` is ``127.x.x.x:port`` (or ``localhost:port``) and that port is closed
    on this machine's network address: a cluster whose nodes listen on loopback only."""
    host, _, port = address.rpartition(":")
    if not port.isdigit():
        return False
    try:
        if host != "localhost" and not ipaddress.ip_address(host).is_loopback:
            return False
    except ValueError:  # a host name
        return False
    from ray._private import services  # lazy: Ray loads when a search starts it, not when its input is checked

    network = services.node_ip_address_from_perspective(None)
    if ipaddress.ip_address(network).is_loopback:
        return True
    try:
        with socket.create_connection((network, int(port)), timeout=2):
            return False  # the head listens on the network too: Ray's own address rewriting works
    except OSError:
        return True


def init_cluster(address: str, runtime_env: dict[str, Any] | None = None) -> None:
    """Join the existing cluster at ``address``.

    Ray replaces a loopback address by this machine's network address before connecting (so that
    the node it starts can be reached from other machines), which cannot reach a cluster whose
    nodes listen on 127.0.0.1 only — a one-machine cluster started as safely as the local Ray of
    :func:`init_local_ray`. For such a cluster the replacement is turned off during this call.
    """
    import ray  # lazy: Ray loads when a search starts it, not when its input is checked

    if address.startswith("ray://") or address == "auto" or not _loopback_only(address):
        ray.init(address=address, log_to_driver=False, configure_logging=False, runtime_env=runtime_env)
        return
    with loopback_kept():
        ray.init(address=address, _node_ip_address="127.0.0.1", log_to_driver=False, configure_logging=False,
                 runtime_env=runtime_env)


class _QuietStreamHandler(logging.StreamHandler):
    def handleError(self, record) -> None:  # a full disk: the message is lost, no "--- Logging error ---"
        pass


@contextlib.contextmanager
def ray_messages_to(log_path: Path) -> Iterator[None]:
    """Within the block, the driver's Ray messages go to ``log_path`` instead of the terminal.

    Those are Ray Tune's tracebacks of failed trials ("Trial task failed ...", several per dead
    worker, one per retry) and the raylet's notices about dead workers, which Ray prints on the
    driver's stdout. showwork's progress already says which trial failed and why; the details
    stay in the log. If the file cannot be opened, the messages stay on the terminal.
    """
    # lazy: Ray loads when a search starts it, not when its input is checked
    from ray._private import worker as ray_worker

    try:
        stream = os.fdopen(create_own_file(log_path), "a", encoding="utf-8")  # a new file, never through a link
    except OSError:
        yield
        return
    handler = _QuietStreamHandler(stream)
    handler.setFormatter(RedactingFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    ray_logger = logging.getLogger("ray")
    terminal = list(ray_logger.handlers)
    for old in terminal:
        ray_logger.removeHandler(old)
    ray_logger.addHandler(handler)
    raylet_logger = logging.getLogger("ray.raylet_messages")
    printer = getattr(ray_worker, "print_to_stdstream", None)

    def to_log(data: dict, ignore_prefix: bool = False) -> None:  # Ray's error listener thread calls it
        for line in data.get("lines", ()):
            raylet_logger.error("(%s) %s", data.get("pid", "raylet"), line)

    if printer is not None:
        ray_worker.print_to_stdstream = to_log
    try:
        yield
    finally:
        if printer is not None:
            ray_worker.print_to_stdstream = printer
        ray_logger.removeHandler(handler)
        for old in terminal:
            ray_logger.addHandler(old)
        handler.close()
        with contextlib.suppress(OSError):  # its last flush, on a full disk
            stream.close()

"""Secrets out of what showwork prints, logs, records and tags, and out of other users' reach.

One rule, applied where text leaves showwork (issue 23, item 11): the command's stdout and stderr
(:class:`RedactedStream`, around every command in :func:`showwork.cli.main`), a trial's recorded
error (in the worker, before the ledger has it), the ``showwork.error`` tag of its MLflow run, and
the log of Ray's messages under ``--storage`` (:class:`RedactingFormatter`).

What is a secret
----------------
- The value of an environment variable whose name says it holds one: a name of
  :data:`SECRET_NAMES`, or a name (any case) that is or ends in ``TOKEN``, ``SECRET``, ``PASSWORD``,
  ``PASSWD`` or ``KEY`` (``AWS_SECRET_ACCESS_KEY``, ``HF_TOKEN``, ``WANDB_API_KEY``, ``PGPASSWORD``
  is among the names). It becomes ``[redacted NAME]``.
- The password of a URI with credentials held by any environment variable
  (``DATABASE_URL=postgresql://me:PASSWORD@db/x``): ``[redacted NAME password]``.
- The user information of any URI in the text: ``https://user:pw@host/x`` becomes
  ``https://[redacted]@host/x``. (:func:`strip_credentials`, for a URL that is shown or stored on
  its own, drops the user information, the query and the fragment.)

A value shorter than :data:`MIN_SECRET_LENGTH` (6) characters is not redacted: a variable
``SOME_KEY=1`` would otherwise turn every 1 of every number into ``[redacted SOME_KEY]``. Each
process redacts with its own environment: the driver with the user's, a trial's worker with the
one its trainable saw (on a local Ray the user's; on a cluster the cluster's).

Files that hold what cannot be redacted (what a trial prints goes to Ray's logs as it is; MLflow's
artifacts are the user's files) are kept in folders closed to other users
(:func:`owner_only_folder`).
"""

from __future__ import annotations

import logging
import os
import re
import stat
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

__all__ = [
    "MIN_SECRET_LENGTH", "SECRET_NAMES", "RedactedStream", "Redactor", "RedactingFormatter", "is_secret_name",
    "owner_only_folder", "redact", "secret_values", "strip_credentials",
]

MIN_SECRET_LENGTH = 6
"""Shorter values of secret-looking variables are left in the text (see the module's docstring)."""
SECRET_NAMES = frozenset({
    "AWS_ACCESS_KEY_ID", "AZURE_STORAGE_CONNECTION_STRING", "AZURE_STORAGE_SAS_TOKEN", "DOCKER_AUTH_CONFIG",
    "MYSQL_PWD", "PGPASSWORD", "SENTRY_DSN", "SLACK_WEBHOOK_URL",
})
"""Variables holding a secret whose name does not end in one of the secret words."""
_SECRET_NAME = re.compile(r"(?:.*_)?(?:TOKEN|SECRET|PASSWORD|PASSWD|KEY)", re.IGNORECASE)
_SCHEME = r"[A-Za-z][A-Za-z0-9+.-]*://"
_URL = re.compile(rf"({_SCHEME})([^/?#]*)([^?#]*)")
"""A whole URL: scheme, authority (user information included), path."""
_USER_INFO_IN_TEXT = re.compile(rf"(?<![A-Za-z0-9+.-])({_SCHEME})[^/?#\s]*@")
"""The start of a URL in running text up to the last "@" of its authority (a password may hold one)."""
REDACTED = "[redacted]"


def is_secret_name(name: str) -> bool:
    """Whether the environment variable ``name`` holds a secret by its name (see the module's docstring)."""
    return name.upper() in SECRET_NAMES or _SECRET_NAME.fullmatch(name) is not None


def _url_password(value: str) -> str | None:
    match = _URL.match(value.strip())
    if match is None or "@" not in match.group(2):
        return None
    user_info = match.group(2).rpartition("@")[0]
    return user_info.partition(":")[2] or None


def secret_values(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The secrets of ``environ`` (default ``os.environ``): value -> what replaces it, longest value first.

    Values shorter than :data:`MIN_SECRET_LENGTH` are left out.
    """
    environ = os.environ if environ is None else environ
    found: dict[str, str] = {}
    for name, value in environ.items():
        if is_secret_name(name) and len(value) >= MIN_SECRET_LENGTH:
            found.setdefault(value, f"[redacted {name}]")
        password = _url_password(value)
        if password is not None and len(password) >= MIN_SECRET_LENGTH:
            found.setdefault(password, f"[redacted {name} password]")
    return dict(sorted(found.items(), key=lambda item: -len(item[0])))


@dataclass(frozen=True)
class Redactor:
    """Redacts the user information of URIs and the given secret values from text (``redactor(text)``).

    Build it once with :meth:`from_environment` where many texts pass (a stream, a log); the values
    are matched by one regular expression, longest first, so a secret that contains another is
    replaced whole.
    """

    replacements: Mapping[str, str]

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Redactor:
        return cls(secret_values(environ))

    def __post_init__(self) -> None:
        values = sorted(self.replacements, key=len, reverse=True)
        pattern = re.compile("|".join(map(re.escape, values))) if values else None
        object.__setattr__(self, "_values", pattern)

    def __call__(self, text: str) -> str:
        if "://" in text:
            text = _USER_INFO_IN_TEXT.sub(lambda m: f"{m.group(1)}{REDACTED}@", text)
        if self._values is not None:
            text = self._values.sub(lambda m: self.replacements[m.group(0)], text)
        return text


def redact(text: str, environ: Mapping[str, str] | None = None) -> str:
    """``text`` without the secrets of ``environ`` (default ``os.environ``) or the credentials of its URIs."""
    return Redactor.from_environment(environ)(text)


def strip_credentials(url: str) -> str:
    """Remove what may be a secret from a URL shown or stored on its own: the user and password, the query and the fragment.

    Only URLs with a scheme (``https://``, ``ssh://``, ...) carry them; scp-like addresses
    (``git@host:owner/repo.git``) and local paths are returned unchanged.

    Examples
    --------
    >>> strip_credentials("https://user:ghp_secret@github.com/owner/repo.git")
    'https://github.com/owner/repo.git'
    >>> strip_credentials("git@github.com:owner/repo.git")
    'git@github.com:owner/repo.git'
    >>> strip_credentials("sqlite:////home/me/mlflow.db")  # the rest is kept as written
    'sqlite:////home/me/mlflow.db'
    """
    match = _URL.match(url)
    if match is None:
        return url
    scheme, authority, path = match.groups()
    # The last "@" ends the user information: a password may hold an unescaped "@".
    return scheme + authority.rpartition("@")[2] + path


class RedactedStream:
    """A text stream that passes what is written on to ``stream`` redacted, a line at a time.

    Text is held until a newline or a ``flush()``, so a secret written in pieces (``print("key:",
    value)`` writes three) is redacted whole; a progress line that redraws itself flushes. Any other
    attribute (``isatty``, ``fileno``, ``encoding``) is the wrapped stream's. Safe from several threads.
    """

    def __init__(self, stream: IO[str], redactor: Redactor) -> None:
        self.stream, self.redactor = stream, redactor
        self._pending = ""
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            head, newline, self._pending = (self._pending + text).rpartition("\n")
            if newline:
                self.stream.write(self.redactor(head + newline))
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        with self._lock:
            if self._pending:
                self.stream.write(self.redactor(self._pending))
                self._pending = ""
        self.stream.flush()

    def __getattr__(self, name: str):
        return getattr(self.stream, name)


class RedactingFormatter(logging.Formatter):
    """A log formatter whose records (message and traceback) are redacted with this process's environment."""

    def __init__(self, fmt: str | None = None, redactor: Redactor | None = None) -> None:
        super().__init__(fmt)
        self.redactor = redactor or Redactor.from_environment()

    def format(self, record: logging.LogRecord) -> str:
        return self.redactor(super().format(record))


def owner_only_folder(path: str | os.PathLike) -> Path:
    """Create the folder ``path`` (and its parents) if missing, and leave it closed to other users (mode 0700).

    The folder's own mode is what keeps the files below it from other users, whatever modes they
    get (Ray and MLflow create theirs 0644 and 0755). Only a folder of this user is tightened;
    returns ``path``.
    """
    folder = Path(path)
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = folder.stat()
    if stat.S_IMODE(info.st_mode) & 0o077 and info.st_uid == os.getuid():
        folder.chmod(0o700)
    return folder

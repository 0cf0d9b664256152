"""showwork's on-disk cache: where derived, recomputable files live (critical levels, tokenised datasets).

Nothing here is a source of truth: a missing, unreadable or corrupt cache file is recomputed.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["cache_directory"]


def cache_directory() -> Path:
    """Return showwork's cache directory.

    ``$SHOWWORK_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/showwork`` (default ``~/.cache/showwork``).
    Each user of the cache writes under its own versioned sub-directory, atomically.
    """
    root = os.environ.get("SHOWWORK_CACHE_DIR")
    if root:
        return Path(root)
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "showwork"

"""Search for the smallest integer at which a monotone condition starts to hold."""

from __future__ import annotations

from typing import Callable


def smallest_integer_where(holds: Callable[[int], bool], guess: int = 1, limit: int = 10**9) -> int | None:
    """Return the smallest n in ``[1, limit]`` with ``holds(n)``, or None if ``holds(limit)`` fails.

    ``holds`` must be monotone: once true, true for every larger n. Gallops from ``guess`` (up by
    doubling, or down by halving) to bracket the answer, then bisects: O(log) evaluations, few when
    the guess is good.
    """
    n = min(max(1, int(guess)), limit)
    if holds(n):
        hi, lo = n, n // 2
        while lo >= 1 and holds(lo):
            hi, lo = lo, lo // 2
    else:
        lo, hi = n, min(2 * n, limit)
        while not holds(hi):
            if hi >= limit:
                return None
            lo, hi = hi, min(2 * hi, limit)
    # holds(hi), and lo == 0 or not holds(lo)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if holds(mid):
            hi = mid
        else:
            lo = mid
    return hi

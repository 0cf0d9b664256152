"""Search for the smallest integer at which a monotone condition starts to hold."""

from __future__ import annotations

import math
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


def smallest_integer_reaching(value: Callable[[int], float], target: float, guess: int = 1, limit: int = 10**9) -> int | None:
    """Return the smallest n in ``[1, limit]`` with ``value(n) >= target``, or None if none does.

    ``value`` must be non-decreasing in n and is taken to be 0 at n = 0. For smooth, nearly linear
    values (the informative budget of n trials) this needs far fewer evaluations than bisection:
    the next n is interpolated (or extrapolated, overshooting a little) from the two closest
    evaluations on either side of the target, and a plain bisection step is taken after two
    interpolated steps in a row that failed to halve the bracket. Each evaluation is cached.
    """
    cache: dict[int, float] = {0: 0.0}

    def at(n: int) -> float:
        if n not in cache:
            cache[n] = float(value(n))
        return cache[n]

    lo, hi = 0, None  # value(lo) < target (lo = 0 by convention); value(hi) >= target
    n = min(max(1, int(guess)), limit)
    while hi is None:
        if at(n) >= target:
            hi = n
            break
        if n >= limit:
            return None
        previous, lo = lo, n
        slope = (at(lo) - at(previous)) / (lo - previous)
        step = (target - at(lo)) / slope if slope > 0 else lo
        # Overshoot by 2 % (+1) so that the next point most likely brackets the target.
        n = min(limit, lo + max(1, min(lo, int(math.ceil(1.02 * step)) + 1)))
    slow_steps = 0  # interpolated steps in a row that did not halve the bracket
    moved_hi = True
    while hi - lo > 1:
        width = hi - lo
        interpolate = slow_steps < 2
        if interpolate and at(hi) > at(lo):
            m = lo + (target - at(lo)) * (hi - lo) / (at(hi) - at(lo))
            # Round away from the side that moved last, so the next probe tends to land on the
            # other side of the answer and close the bracket from both ends.
            rounded = math.floor(m) if moved_hi else math.ceil(m)
            mid = min(hi - 1, max(lo + 1, int(rounded)))
        else:
            mid = (lo + hi) // 2
        moved_hi = at(mid) >= target
        if moved_hi:
            hi = mid
        else:
            lo = mid
        slow_steps = 0 if (hi - lo) <= width // 2 or not interpolate else slow_steps + 1
    return hi

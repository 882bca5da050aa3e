"""Checks for the exercises of Chapter 2, Identity matters (labels ``ex-im-*``)."""

from __future__ import annotations

import math
import numbers

from ._core import exercise_check

__all__ = ["ex_im_rotation_depth"]

_TOLERANCE = 0.1  # the largest allowed max_i ||A_i||_2


def _smallest_depth():
    """Smallest L with 2 sin(pi / (2L)) <= tolerance: the half-turn split into L turns."""
    depth = 1
    while 2.0 * math.sin(math.pi / (2.0 * depth)) > _TOLERANCE:
        depth += 1
    return depth


@exercise_check("ex-im-rotation-depth")
def ex_im_rotation_depth(answer):
    """The smallest depth at which the factors of -I (2 x 2) all have norm at most 0.1."""
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real):
        if getattr(answer, "ndim", None) == 0:
            answer = answer[()]
        else:
            return False, "expected a single whole number (a depth)"
    value = float(answer)
    if not math.isfinite(value) or value != int(value):
        return False, "a depth is a whole number of layers"
    depth = int(value)
    if depth < 1:
        return False, "a depth is a positive number of layers"
    best = _smallest_depth()
    if depth == best:
        return True, "the half-turn needs this many layers of rotation by pi / L"
    if depth > best:
        return False, ("at this depth the factors are small enough, but a smaller depth "
                       "already works: look for the smallest one")
    return False, ("at this depth some factor still has norm above 0.1; recall that a "
                   "rotation by phi has ||rotation - I||_2 = 2 sin(phi / 2)")

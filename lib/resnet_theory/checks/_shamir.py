"""Checks for the exercises of Chapter 5, Shamir's landscapes (labels ``ex-shamir-*``)."""

from __future__ import annotations

import math

from ..landscape import critical_points, objective
from ._core import exercise_check

__all__ = ["ex_shamir_trap_depth"]

_EPS = 2.0
_WEIGHT_DECAY = 0.5
_RELATIVE_TOLERANCE = 1e-6


def _single_number(answer):
    """``answer`` as a finite float, or ``None`` with the reason it is not one."""
    if isinstance(answer, bool) or isinstance(answer, (str, bytes)):
        return None, "expected a single number (a float)"
    if getattr(answer, "ndim", 0) != 0:
        if getattr(answer, "size", 0) != 1:
            return None, "expected a single number, not an array"
        answer = answer.reshape(())[()]
    try:
        value = float(answer)
    except (TypeError, ValueError):
        return None, "expected a single number (a float)"
    if not math.isfinite(value):
        return None, "the answer must be a finite number"
    return value, ""


def _close(value, target):
    return abs(value - target) <= _RELATIVE_TOLERANCE * max(1.0, abs(target))


@exercise_check("ex-shamir-trap-depth")
def ex_shamir_trap_depth(answer):
    """The regularised objective at the saddle minus its value at the spurious minimum."""
    value, why = _single_number(answer)
    if value is None:
        return False, why
    points = critical_points(eps=_EPS, weight_decay=_WEIGHT_DECAY)
    minima = sorted((p for p in points if p.kind == "minimum"), key=lambda p: p.value)
    (saddle,) = [p for p in points if p.kind == "saddle"]
    spurious, best = minima[-1], minima[0]
    if _close(value, saddle.value - spurious.value):
        return True, "this is how far F_lambda must rise to leave the spurious minimum"
    if value <= 0:
        return False, "the saddle lies above the spurious minimum, so the depth is positive"
    if _close(value, saddle.value - best.value):
        return False, ("this is measured from the global minimum; the trap is the "
                       "other minimum, the one with the larger value")

    def plain(p):
        return objective(p.w, p.v, _EPS)

    if any(_close(value, plain(saddle) - plain(p)) for p in minima):
        return False, ("these look like values of the unregularised F; evaluate "
                       "F_lambda, which includes the penalty lambda/2 (w^2 + v^2)")
    return False, (f"not within a relative {_RELATIVE_TOLERANCE:g} of the depth; check "
                   "eps = 2, lambda = 0.5 and which critical points you compare")

"""Checks for the exercises of Chapter 1, deep residual networks (labels ``ex-dr-*``)."""

from __future__ import annotations

import math

from ._core import exercise_check

__all__ = ["ex_dr_eps_budget"]

_DEPTH = 50
_CONDITION = 10.0


def _guaranteed_condition(eps: float) -> float:
    """The condition-number guarantee ((1 + eps) / (1 - eps))**depth."""
    return ((1 + eps) / (1 - eps)) ** _DEPTH


@exercise_check("ex-dr-eps-budget")
def ex_dr_eps_budget(answer):
    """The largest branch flatness eps whose 50-unit condition-number bound is at most 10."""
    if getattr(answer, "ndim", 0) != 0:
        return False, "expected a single number, not an array"
    is_number = isinstance(answer, (int, float)) or hasattr(answer, "__float__")
    if isinstance(answer, bool) or not is_number:
        return False, "expected a single number (a float)"
    eps = float(answer)
    if not math.isfinite(eps):
        return False, "the answer must be a finite number"
    if not 0 < eps < 1:
        return False, "the theorem needs 0 < eps < 1"
    target = math.tanh(math.log(_CONDITION) / (2 * _DEPTH))
    if abs(eps - target) <= 1e-6 * target:
        return True, "the guarantee ((1 + eps)/(1 - eps))^50 equals 10 at this eps"
    if _guaranteed_condition(eps) > _CONDITION:
        return False, ("too large: with this eps the guarantee "
                       "((1 + eps)/(1 - eps))^50 exceeds 10")
    return False, ("the guarantee is below 10 here, so a larger eps is still allowed; "
                   "look for the largest one")

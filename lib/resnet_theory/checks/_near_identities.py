"""Checks for the exercises of the chapter on representing with near-identities."""

from __future__ import annotations

import math
import numbers

from ._core import exercise_check

__all__ = ["ex_ni_shear_seminorm"]


@exercise_check("ex-ni-shear-seminorm")
def ex_ni_shear_seminorm(answer):
    """The largest layer seminorm of the shear with the geometric schedule (m = 20)."""
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real):
        return False, f"expected a real number, got {type(answer).__name__}"
    value = float(answer)
    if not math.isfinite(value) or value <= 0:
        return False, "a seminorm of a layer that is not the identity is a positive number"
    expected = 2.0 * (1.0 - 20.0 ** (-1.0 / 19.0))
    if abs(value - expected) <= 1e-3 * expected:
        return True, "that is the largest ||h_i - Id||_L over the twenty layers"
    if abs(value - 0.1) <= 1e-3:
        return False, ("this is what equal steps a_i - a_{i-1} = 1/20 would give; "
                       "the geometric steps are not equal")
    direction = "too large" if value > expected else "too small"
    return False, (f"{direction}: write D(h_i - Id) with the formula "
                   "Dh(a_i x) Dh(a_{i-1} x)^{-1} - I and maximise over the layers and the disk")

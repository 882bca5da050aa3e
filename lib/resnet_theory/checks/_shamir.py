"""Checks for the exercises of Chapter 5, Shamir's landscapes (labels ``ex-shamir-*``)."""

from __future__ import annotations

from ._core import Close, Number, exercise_check

__all__ = ["ex_shamir_trap_depth"]


@exercise_check("ex-shamir-trap-depth", form=Number(low=0, strict=True),
                compare=Close(rtol=1e-5))
def ex_shamir_trap_depth():
    """The depth of the trap of F_lambda (eps = 2, lambda = 0.5): its value at the
    saddle minus its value at the spurious minimum, to six significant digits.

    A positive real number (the saddle lies above the minimum), compared with
    the answer key within a relative 1e-5, which accepts every rounding to six
    significant digits.
    """

"""Checks for the exercises of Chapter 5, Shamir's landscapes (labels ``ex-shamir-*``)."""

from __future__ import annotations

from ._core import Close, Number, RealArray, exercise_check

__all__ = ["ex_shamir_trap_depth", "ex_shamir_boundary_minimum", "ex_shamir_linear_target"]


@exercise_check("ex-shamir-trap-depth", form=Number(low=0, strict=True),
                compare=Close(rtol=1e-5))
def ex_shamir_trap_depth():
    """The depth of the trap of F_lambda (eps = 3/2, lambda = 0.3): its value at the
    saddle minus its value at the spurious minimum, to six significant digits.

    A positive real number (the saddle lies above the minimum), compared with
    the answer key within a relative 1e-5, which accepts every rounding to six
    significant digits.
    """


@exercise_check("ex-shamir-boundary-minimum", form=RealArray((3,)), compare=Close(rtol=1e-5))
def ex_shamir_boundary_minimum():
    """The spurious minimum (w, v) of Example 1 on the disc of radius rho = 3 for
    eps = 1/2, with its KKT multiplier mu, as the array (w, v, mu), to six
    significant digits.

    A real array of shape (3,), compared entrywise with the answer key within a
    relative 1e-5.
    """


@exercise_check("ex-shamir-linear-target", form=Number(low=0), compare=Close(atol=1e-6))
def ex_shamir_linear_target():
    """min over ||u|| <= 2 of F_lin(u) for the purely linear target
    y = x_1 / 2 - x_2 / 3 of the Theorem 4 experiment.

    A non-negative real number (a mean of squares), compared with the answer key
    within an absolute 1e-6.
    """

"""Checks for the exercises of Chapter 3, near-identities (labels ``ex-ni-*``)."""

from __future__ import annotations

from ._core import Close, Number, RealArray, exercise_check

__all__ = ["ex_ni_shear_seminorm", "ex_ni_minus_identity", "ex_ni_lift_lipschitz"]


@exercise_check("ex-ni-shear-seminorm", form=Number(low=0, strict=True),
                compare=Close(rtol=1e-3))
def ex_ni_shear_seminorm():
    """The largest layer seminorm max_i ||h_i - Id||_L of the shear
    h(x) = (x_1 + x_2^2, x_2) on the unit disk, geometric schedule, m = 20.

    A positive real number, compared with the answer key within a relative 1e-3.
    """


@exercise_check("ex-ni-minus-identity", form=Number(low=0, strict=True),
                compare=Close(rtol=1e-5))
def ex_ni_minus_identity():
    """||A_i|| for the factorisation of -I (2 x 2) into m = 8 equal near-identity
    factors, to six significant digits.

    A positive real number, compared with the answer key within a relative 1e-5.
    """


@exercise_check("ex-ni-lift-lipschitz", form=RealArray((3,), low=1), compare=Close(rtol=1e-5))
def ex_ni_lift_lipschitz():
    """For h(x) = sin 2x: ||H||_L, the constant of one layer H_i of the equal-step
    factorisation with m = 256, and the product of the 256 layer constants, as an
    array, to six significant digits.

    A real array of shape (3,) with entries at least 1 (Lipschitz constants of a
    map and its inverse), compared entrywise with the answer key within a
    relative 1e-5.
    """

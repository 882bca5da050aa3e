"""Checks for the exercises of Chapter 3, near-identities (labels ``ex-ni-*``)."""

from __future__ import annotations

from ._core import Close, Number, exercise_check

__all__ = ["ex_ni_shear_seminorm"]


@exercise_check("ex-ni-shear-seminorm", form=Number(low=0, strict=True),
                compare=Close(rtol=1e-3))
def ex_ni_shear_seminorm():
    """The largest layer seminorm max_i ||h_i - Id||_L of the shear
    h(x) = (x_1 + x_2^2, x_2) on the unit disk, geometric schedule, m = 20.

    A positive real number, compared with the answer key within a relative 1e-3.
    """

"""Checks for the exercises of Chapter 4, deep linear residual networks (``ex-dl-*``)."""

from __future__ import annotations

import numpy as np

from ._core import RealArray, exercise_check

__all__ = ["ex_dl_balanced"]

#: The matrix of the exercise's statement: twice the rotation by a quarter turn.
_BALANCED_TARGET = np.array([[0.0, -2.0], [2.0, 0.0]])


@exercise_check("ex-dl-balanced", form=RealArray((3, 2, 2)))
def ex_dl_balanced(factors):
    """A balanced factorisation of 2 x (quarter turn) into three 2x2 factors.

    A property check (it needs no answer key, since the exercise has many
    right answers): the product ``factors[2] @ factors[1] @ factors[0]`` is the
    target of the statement and all factors have the same singular values,
    both within 1e-6.
    """
    prod = factors[2] @ factors[1] @ factors[0]
    if not np.allclose(prod, _BALANCED_TARGET, atol=1e-6):
        return False, ("the product factors[2] @ factors[1] @ factors[0] is not the target "
                       "matrix (check the order: factors[0] is applied first)")
    singular = np.linalg.svd(factors, compute_uv=False)
    if not np.allclose(singular, singular[0, 0], atol=1e-6):
        return False, ("the product is right, but the factors' singular values are not all "
                       "equal, so the factorisation is not balanced")
    return True, "the factors multiply to the target and all have the same singular values"

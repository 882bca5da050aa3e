"""Checks for the exercises of the chapter on deep linear residual networks."""

from __future__ import annotations

import numpy as np

from ._core import exercise_check

#: The matrix of exercise ex-dl-balanced: twice the rotation by a quarter turn.
_BALANCED_TARGET = np.array([[0.0, -2.0], [2.0, 0.0]])
_BALANCED_DEPTH = 3


@exercise_check("ex-dl-balanced")
def ex_dl_balanced(answer):
    """A balanced factorisation of 2 x (quarter turn) into three 2x2 factors."""
    factors = np.asarray(answer, dtype=float)
    if factors.shape != (_BALANCED_DEPTH, 2, 2):
        return False, f"expected an array of shape (3, 2, 2), got shape {factors.shape}"
    if not np.all(np.isfinite(factors)):
        return False, "the factors contain non-finite entries"
    prod = factors[0]
    for factor in factors[1:]:
        prod = factor @ prod
    if not np.allclose(prod, _BALANCED_TARGET, atol=1e-6):
        return False, ("the product factors[2] @ factors[1] @ factors[0] is not the target "
                       "matrix (check the order: factors[0] is applied first)")
    singular = np.linalg.svd(factors, compute_uv=False)
    if not np.allclose(singular, singular[0, 0], atol=1e-6):
        return False, ("the product is right, but the factors' singular values are not all "
                       "equal, so the factorisation is not balanced")
    return True, "the factors multiply to the target and all have the same singular values"

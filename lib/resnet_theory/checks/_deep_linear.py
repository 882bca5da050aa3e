"""Checks for the exercises of Chapter 4, deep linear residual networks (``ex-dl-*``)."""

from __future__ import annotations

import numpy as np

from ._core import Close, Number, RealArray, exercise_check

__all__ = ["ex_dl_balanced", "ex_dl_step_size", "ex_dl_measure_rate"]

#: The matrix of the exercise's statement: twice the rotation by a quarter turn.
_BALANCED_TARGET = np.array([[0.0, -2.0], [2.0, 0.0]])
#: The singular values of every factor of a balanced factorisation of it into three.
_BALANCED_ROOT = 2.0 ** (1 / 3)


@exercise_check("ex-dl-balanced", form=RealArray((3, 2, 2)))
def ex_dl_balanced(factors):
    r"""A balanced factorisation of 2 x (quarter turn) into three 2x2 factors.

    A property check (it needs no answer key, since the exercise has many
    right answers): the product ``factors[2] @ factors[1] @ factors[0]`` is the
    target of the statement and every factor has the singular values
    :math:`\sigma_j(A)^{1/3}`, here :math:`2^{1/3}` twice, both within 1e-6.
    Factors that share unequal singular values (for instance :math:`2` and
    :math:`2^{-1/3}` each) can multiply to the target too; they are not
    balanced in this sense and are rejected.
    """
    prod = factors[2] @ factors[1] @ factors[0]
    if not np.allclose(prod, _BALANCED_TARGET, atol=1e-6):
        return False, ("the product factors[2] @ factors[1] @ factors[0] is not the target "
                       "matrix (check the order: factors[0] is applied first)")
    singular = np.linalg.svd(factors, compute_uv=False)
    if not np.allclose(singular, _BALANCED_ROOT, atol=1e-6):
        return False, ("the product is right, but not every factor has the singular values "
                       "2^(1/3), 2^(1/3) (the cube roots of the target's singular values 2, 2), "
                       "so the factorisation is not balanced")
    return True, ("the factors multiply to the target and each has the singular values "
                  "2^(1/3), 2^(1/3)")


@exercise_check("ex-dl-step-size", form=RealArray((5,), low=0.005, high=2.0),
                compare=Close(rtol=1e-3))
def ex_dl_step_size():
    """For Phi = diag(1.5, 0.7) and L = 2, 4, 8, 16, 32, the largest step size on the
    grid np.geomspace(0.005, 2.0, 25) for which the loss after 300 steps of
    gradient descent from the identity is below 1e-8.

    A real array of shape (5,) with entries on the grid's range, compared
    entrywise with the answer key within a relative 1e-3 (the grid's points are
    a factor 1.28 apart; four significant digits pass).
    """


@exercise_check("ex-dl-measure-rate", form=Number(low=0, high=1), compare=Close(atol=1e-4))
def ex_dl_measure_rate():
    """The asymptotic factor l(t+1)/l(t) of the scalar recursion for L = 8,
    eigenvalues 0.1 and 1, eta = 1/16, measured on a run of 3000 steps.

    A real number in [0, 1], compared with the answer key within an absolute 1e-4.
    """

"""Checks for the exercises of Chapter 1, deep residual networks (labels ``ex-dr-*``)."""

from __future__ import annotations

from ._core import Close, Number, RealArray, exercise_check

__all__ = ["ex_dr_eps_budget", "ex_dr_stable_rate"]


@exercise_check("ex-dr-eps-budget", form=Number(low=0, high=1, strict=True),
                compare=Close(rtol=1e-6))
def ex_dr_eps_budget():
    """The largest branch flatness eps for which the condition-number guarantee
    ((1 + eps) / (1 - eps))**50 of 50 residual units is at most 10.

    A number strictly between 0 and 1 (the theorem needs eps < 1), compared
    with the answer key within a relative 1e-6.
    """


@exercise_check("ex-dr-stable-rate", form=RealArray((6,), low=0, high=0.4),
                compare=Close(rtol=1e-3))
def ex_dr_stable_rate():
    """For the residual networks of depth L = 4, 8, 16, 32, 64, 128 of the notebook,
    the largest learning rate 0.4 * 2**-i for which 30 full-batch steps of
    resnet_theory.mlp.train do not diverge.

    A real array of shape (6,) with entries in [0, 0.4], compared entrywise with
    the answer key within a relative 1e-3.
    """

"""Checks for the exercises of Chapter 1, deep residual networks (labels ``ex-dr-*``)."""

from __future__ import annotations

from ._core import Close, Number, exercise_check

__all__ = ["ex_dr_eps_budget"]


@exercise_check("ex-dr-eps-budget", form=Number(low=0, high=1, strict=True),
                compare=Close(rtol=1e-6))
def ex_dr_eps_budget():
    """The largest branch flatness eps for which the condition-number guarantee
    ((1 + eps) / (1 - eps))**50 of 50 residual units is at most 10.

    A number strictly between 0 and 1 (the theorem needs eps < 1), compared
    with the answer key within a relative 1e-6.
    """

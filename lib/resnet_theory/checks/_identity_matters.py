"""Checks for the exercises of Chapter 2, Identity matters (labels ``ex-im-*``)."""

from __future__ import annotations

from ._core import BooleanArray, Exact, Integer, exercise_check

__all__ = ["ex_im_rotation_depth", "ex_im_count", "ex_im_usual_step"]


@exercise_check("ex-im-rotation-depth", form=Integer(low=1), compare=Exact())
def ex_im_rotation_depth():
    """The smallest depth at which the near-identity factors of -I (2 x 2) all have
    spectral norm at most 0.1.

    A positive whole number, compared with the answer key exactly.
    """


@exercise_check("ex-im-count", form=Integer(low=1), compare=Exact())
def ex_im_count():
    """The number of parameters of the blocks and the output block of the
    expressivity construction for n = 1000, k = 40, r = 10.

    A positive whole number, compared with the answer key exactly.
    """


@exercise_check("ex-im-usual-step", form=BooleanArray((4,)), compare=Exact())
def ex_im_usual_step():
    """For the usual initialisation at depth 16 and the learning rates
    0.02 * 2**-j, j = 1, ..., 4: whether training diverges (True) or not.

    An array of four booleans, compared with the answer key exactly.
    """

"""Checks for the exercises of Chapter 2, Identity matters (labels ``ex-im-*``)."""

from __future__ import annotations

from ._core import Exact, Integer, exercise_check

__all__ = ["ex_im_rotation_depth"]


@exercise_check("ex-im-rotation-depth", form=Integer(low=1), compare=Exact())
def ex_im_rotation_depth():
    """The smallest depth at which the near-identity factors of -I (2 x 2) all have
    spectral norm at most 0.1.

    A positive whole number, compared with the answer key exactly.
    """

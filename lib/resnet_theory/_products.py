"""Partial products of a stack of matrices, the building block of every
gradient of a deep linear network (private).

With prefix and suffix products a gradient over all ``L`` layers costs
``O(L d^3)``: linear in the depth, instead of re-multiplying the whole chain for
every layer.
"""

from __future__ import annotations

import numpy as np


def partial_products(matrices):
    """``prefix[k] = M_k ... M_1`` and ``suffix[k] = M_L ... M_{k+1}`` for ``k = 0..L``.

    ``matrices`` is a validated array of shape ``(L, d, d)`` with ``matrices[0] = M_1``;
    ``prefix[0]`` and ``suffix[L]`` are the identity.
    """
    depth, d, _ = matrices.shape
    prefix = np.empty((depth + 1, d, d))
    suffix = np.empty((depth + 1, d, d))
    prefix[0] = suffix[depth] = np.eye(d)
    for k in range(depth):
        prefix[k + 1] = matrices[k] @ prefix[k]
    for k in range(depth - 1, -1, -1):
        suffix[k] = suffix[k + 1] @ matrices[k]
    return prefix, suffix

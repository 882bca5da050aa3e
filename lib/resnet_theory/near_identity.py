r"""Factorisations of a matrix into a product of near-identity matrices.

Every real square matrix :math:`a` with :math:`\det a > 0` is a product

.. math::

    a = (I + A_L)(I + A_{L-1}) \cdots (I + A_1),
    \qquad \max_i \|A_i\|_2 = O(1/L),

of :math:`L` perturbations of the identity. This is the representation behind
Theorem 2.1 of Hardt and Ma (the linear residual network has a global optimum
whose layers all have spectral norm :math:`O(1/L)`) and Theorem 1 of Bartlett,
Evans and Long. The construction here uses the polar decomposition
:math:`a = R P` (``R`` a rotation, ``P`` symmetric positive definite): ``P``
is split into equal positive definite roots :math:`P^{1/p}` and ``R`` into equal
rotations :math:`R^{1/q}` built from its real Schur form (plane by plane, so a
rotation by :math:`\pi`, which has a real logarithm but no *principal* one, is no
obstacle; ``a`` itself need not have a real logarithm at all, for example
:math:`\operatorname{diag}(-1, -2)`), with
:math:`p + q = L` chosen to make the largest factor as small as possible.

Reference: M. Hardt and T. Ma (2017), Identity matters in deep learning, ICLR 2017,
arXiv:1611.04231.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from . import _validation as _v
from ._rotations import rotation_planes, rotation_power

__all__ = [
    "log_condition",
    "theorem_2_1_bound",
    "near_identity_factors",
    "near_identity_product",
]

#: Tolerance (relative to 1) below which ``R`` or ``P`` count as the identity.
_IDENTITY_TOL = 1e-13


def _real_array(value, name: str, **shape) -> np.ndarray:
    """``value`` as a finite real float array; complex input is a ``TypeError``.

    ``numpy.asarray(z, dtype=float)`` would silently keep the real part of a
    complex array (with only a warning); the theorems here are about real
    matrices, so a complex argument is rejected, naming it.
    """
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError):
        raw = None
    if raw is not None and (np.iscomplexobj(raw) or (
            raw.dtype == object and any(isinstance(v, complex) for v in raw.ravel()))):
        raise TypeError(f"{name} must be real, got an array of complex numbers "
                        "(pass its real part explicitly if that is what you mean)")
    return _v.finite_array(value, name, **shape)


def _square_matrix(a, name: str) -> np.ndarray:
    a = _real_array(a, name, ndim=2)
    if a.shape[0] != a.shape[1] or a.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty square matrix, got shape {a.shape}")
    return a


def _singular_values_positive(a, name: str) -> np.ndarray:
    """Singular values of ``a``; raise if ``a`` is singular (to working precision)."""
    s = scipy.linalg.svdvals(a)
    if s[-1] <= s[0] * a.shape[0] * np.finfo(float).eps or s[0] == 0:
        raise ValueError(f"{name} must be invertible, but it is singular to working precision")
    return s


def log_condition(a) -> float:
    r"""The constant :math:`\gamma` of Hardt and Ma's Theorem 2.1.

    Parameters
    ----------
    a : array_like, shape (d, d)
        An invertible matrix.

    Returns
    -------
    float
        :math:`\gamma = \max(|\log \sigma_{\max}(a)|, |\log \sigma_{\min}(a)|)`.

    Raises
    ------
    ValueError
        If ``a`` is not square, not finite or singular.
    TypeError
        If ``a`` is complex.

    Notes
    -----
    :math:`\gamma` measures how far the singular values of ``a`` are from 1 on
    a logarithmic scale; it is zero exactly for orthogonal matrices.

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.near_identity import log_condition
    >>> print(f"{log_condition(np.diag([np.e, 0.5])):.4f}")
    1.0000
    """
    a = _square_matrix(a, "a")
    s = _singular_values_positive(a, "a")
    return float(max(abs(np.log(s[0])), abs(np.log(s[-1]))))


def theorem_2_1_bound(a, depth, *, version: str = "iclr") -> float:
    r"""The bound of Hardt and Ma's Theorem 2.1 on :math:`\max_i \|A_i^\star\|_2`.

    Parameters
    ----------
    a : array_like, shape (d, d)
        The target :math:`R` of the linear residual network (invertible).
    depth : int
        The number of layers :math:`\ell`.
    version : {"iclr", "blog"}
        ``"iclr"``: the published ICLR 2017 statement,
        :math:`2(\sqrt{\pi} + \sqrt{3\gamma})^2 / \ell`;
        ``"blog"``: the bound :math:`(4\pi + 3\gamma) / \ell` quoted in the
        seminar's blog notes (seminar document 002, footnote 4) as a paraphrase
        of the theorem; it is not printed in the ICLR 2017 paper, and the notes
        do not say where it comes from.

    Returns
    -------
    float
        The bound. The paper asserts it when :math:`\ell \ge 3\gamma`; it also
        needs :math:`\det a > 0`, a hypothesis the printed theorem omits (for
        :math:`\det a < 0` no product of factors :math:`I + A_i` with
        :math:`\|A_i\|_2 < 1` equals ``a``). The value is returned regardless.

    Raises
    ------
    ValueError
        If ``a`` is not square, not finite or singular, or ``version`` is unknown.
    TypeError
        If ``depth`` is not an integer, or ``a`` is complex.

    Notes
    -----
    :math:`\gamma` is :func:`resnet_theory.near_identity.log_condition`.

    References
    ----------
    M. Hardt and T. Ma, Identity matters in deep learning, ICLR 2017, Theorem 2.1.

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.near_identity import theorem_2_1_bound
    >>> print(f"{theorem_2_1_bound(np.eye(2), 10):.4f}")  # 2 pi / 10
    0.6283
    >>> print(f"{theorem_2_1_bound(np.eye(2), 10, version='blog'):.4f}")  # 4 pi / 10
    1.2566
    """
    depth = _v.positive_int(depth, "depth")
    if version not in ("iclr", "blog"):
        raise ValueError(f"version must be 'iclr' or 'blog', got {version!r}")
    gamma = log_condition(a)
    if version == "iclr":
        return float(2.0 * (np.sqrt(np.pi) + np.sqrt(3.0 * gamma)) ** 2 / depth)
    return float((4.0 * np.pi + 3.0 * gamma) / depth)


def near_identity_factors(a, depth) -> np.ndarray:
    r"""Write ``a`` as a product of ``depth`` near-identity matrices.

    Parameters
    ----------
    a : array_like, shape (d, d)
        A real matrix with :math:`\det a > 0`.
    depth : int
        The number of factors :math:`L \ge 1`.

    Returns
    -------
    ndarray, shape (depth, d, d)
        The perturbations :math:`A_1, \dots, A_L` (``factors[i]`` is
        :math:`A_{i+1}`), with :math:`(I + A_L) \cdots (I + A_1) = a` up to
        round-off.

    Raises
    ------
    ValueError
        If ``a`` is not square, has non-finite entries, is singular, or has
        :math:`\det a < 0` (then no product of matrices close to the identity,
        each of positive determinant, can equal it).
    TypeError
        If ``depth`` is not an integer, or ``a`` is complex (its real part is
        not used silently).

    Notes
    -----
    With the singular value decomposition :math:`a = U \Sigma V^\top`, the polar
    factors are :math:`R = U V^\top` (a rotation, since :math:`\det a > 0`) and
    :math:`P = V \Sigma V^\top`. For a split :math:`L = q + p`,

    .. math::

        a = \underbrace{R^{1/q} \cdots R^{1/q}}_{q}\;
            \underbrace{P^{1/p} \cdots P^{1/p}}_{p},

    so the first ``p`` layers carry ``P`` and the last ``q`` carry ``R``. If ``R``
    turns its planes by angles :math:`|\theta_j| \le \pi` and
    :math:`\gamma = \max_j |\log \sigma_j|`, the factors have norms
    :math:`\|R^{1/q} - I\|_2 = 2 \sin(\max_j |\theta_j| / (2q)) \le \pi / q` and
    :math:`\|P^{1/p} - I\|_2 \le e^{\gamma/p} - 1`; the split minimising the
    larger of the two is chosen, which gives roughly
    :math:`\max_i \|A_i\|_2 \approx (\theta + \gamma)/L \le (\pi + \gamma)/L` with
    :math:`\theta = \max_j |\theta_j|`, and satisfies both versions
    of :func:`resnet_theory.near_identity.theorem_2_1_bound` whenever
    :math:`L \ge 3\gamma`. The last factor is finally recomputed as
    :math:`a\,[(I + A_{L-1}) \cdots (I + A_1)]^{-1} - I` so that the product
    reproduces ``a`` to round-off. The cost is :math:`O(d^3 + L d^2)`.

    References
    ----------
    M. Hardt and T. Ma, Identity matters in deep learning, ICLR 2017, Theorem 2.1.

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.near_identity import near_identity_factors, near_identity_product
    >>> a = -np.eye(2)  # a rotation by pi: eigenvalues -1, so no principal logarithm
    >>> factors = near_identity_factors(a, 6)
    >>> factors.shape
    (6, 2, 2)
    >>> bool(np.allclose(near_identity_product(factors), a))
    True
    >>> print(f"{max(np.linalg.norm(f, 2) for f in factors):.4f}")  # 2 sin(pi / 12)
    0.5176
    """
    a = _square_matrix(a, "a")
    depth = _v.positive_int(depth, "depth")
    d = a.shape[0]
    u, s, vt = scipy.linalg.svd(a)
    if s[-1] <= s[0] * d * np.finfo(float).eps or s[0] == 0:
        raise ValueError("a must be invertible, but it is singular to working precision")
    sign = np.linalg.det(u) * np.linalg.det(vt)
    if sign < 0:
        raise ValueError(
            f"a must have det a > 0 (a product of near-identity matrices has positive "
            f"determinant), got det a = {np.linalg.det(a):.6g}"
        )
    identity = np.eye(d)
    rotation = u @ vt
    log_s = np.log(s)
    rotation_is_identity = np.linalg.norm(rotation - identity, 2) <= _IDENTITY_TOL * d
    scaling_is_identity = np.max(np.abs(log_s)) <= _IDENTITY_TOL
    if depth == 1 or (rotation_is_identity and scaling_is_identity):
        factors = np.zeros((depth, d, d))
        factors[0] = a - identity
        return factors

    q_basis, planes = rotation_planes(rotation)
    theta = max((abs(angle) for _, _, angle in planes), default=0.0)

    def rotation_cost(q):
        if q == 0:
            return 0.0 if rotation_is_identity else np.inf
        return 2.0 * np.sin(theta / (2.0 * q))

    def scaling_cost(p):
        if p == 0:
            return 0.0 if scaling_is_identity else np.inf
        return float(np.max(np.abs(np.expm1(log_s / p))))

    costs = [max(rotation_cost(q), scaling_cost(depth - q)) for q in range(depth + 1)]
    q = int(np.argmin(costs))
    p = depth - q

    factors = np.empty((depth, d, d))
    if p > 0:
        scaling_root = (vt.T * np.exp(log_s / p)) @ vt
        factors[:p] = scaling_root - identity
    if q > 0:
        factors[p:] = rotation_power(q_basis, planes, 1.0 / q) - identity
    # Polish: make the product reproduce a to round-off.
    prefix = near_identity_product(factors[:-1]) if depth > 1 else identity
    last = scipy.linalg.solve(prefix.T, a.T).T
    factors[-1] = last - identity
    return factors


def near_identity_product(factors) -> np.ndarray:
    r"""The product :math:`(I + A_L) \cdots (I + A_1)` of a stack of perturbations.

    Parameters
    ----------
    factors : array_like, shape (L, d, d)
        :math:`A_1, \dots, A_L` (``factors[0]`` acts first). ``L = 0`` gives the
        identity.

    Returns
    -------
    ndarray, shape (d, d)

    Raises
    ------
    ValueError
        If ``factors`` is not a finite stack of square matrices.
    TypeError
        If ``factors`` is complex.

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.near_identity import near_identity_product
    >>> near_identity_product(np.full((3, 1, 1), 1.0)).tolist()  # (1 + 1)^3
    [[8.0]]
    """
    factors = _real_array(factors, "factors", ndim=3)
    if factors.shape[1] != factors.shape[2]:
        raise ValueError(
            f"factors must be a stack of square matrices, got shape {factors.shape}"
        )
    d = factors.shape[1]
    product = np.eye(d)
    for factor in factors:
        product = product + factor @ product
    return product

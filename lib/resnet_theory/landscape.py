r"""The loss landscape of a one-dimensional residual unit (Shamir's Example 1).

With scalar input and output ``x = y = 1``, a fixed residual branch
:math:`f(x) = \epsilon x`, squared loss and an optional L2 regulariser, the
objective of the predictor :math:`x \mapsto w\,(x + v f(x))` is

.. math::

    F(w, v) = \tfrac12 \bigl(w (1 + \epsilon v) - 1\bigr)^2
              + \tfrac{\lambda}{2} (w^2 + v^2),

where :math:`\lambda` is ``weight_decay``. Its critical points solve a
polynomial system, so they can all be found, not just the ones a grid of
starting points happens to reach: with :math:`s = 1 + \epsilon v` the system
reduces to the quintic :math:`(s - 1)(s^2 + \lambda)^2 = \epsilon^2 s` and
:math:`w = s / (s^2 + \lambda)`. On a disc :math:`w^2 + v^2 \le \rho^2` the
boundary critical points solve a quadratic in :math:`\sin t`.

Reference: O. Shamir, "Are ResNets provably better than linear predictors?",
NeurIPS 2018, arXiv:1804.06739, Example 1 and Figure 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _validation as _v
from ._validation import DivergenceError

__all__ = [
    "CriticalPoint",
    "Descent",
    "objective",
    "gradient",
    "hessian",
    "critical_points",
    "constrained_critical_points",
    "minimum_curve",
    "gradient_descent",
    "nearest_point_labels",
]

_KINDS = ("minimum", "saddle", "maximum", "degenerate")


@dataclass(frozen=True)
class CriticalPoint:
    """A critical point of the Example 1 objective.

    Attributes
    ----------
    w, v : float
        Its coordinates.
    kind : str
        ``"minimum"``, ``"saddle"`` or ``"maximum"`` (``"degenerate"`` only at
        the exceptional parameters where the test is inconclusive). For a point
        on the boundary of a norm ball the kind is that of the *constrained*
        problem.
    value : float
        The objective :math:`F(w, v)` there.
    eigenvalues : tuple of float
        Eigenvalues of the (unconstrained) Hessian at the point, ascending.
    on_boundary : bool
        True for a point on the sphere :math:`w^2 + v^2 = \\rho^2` of
        :func:`constrained_critical_points`.
    multiplier : float
        The KKT multiplier :math:`\\mu \\ge 0` with
        :math:`\\nabla F = -\\mu\\,(w, v)/\\rho` for a boundary point; 0 inside.
    """

    w: float
    v: float
    kind: str
    value: float
    eigenvalues: tuple[float, float]
    on_boundary: bool = False
    multiplier: float = 0.0


@dataclass(frozen=True)
class Descent:
    """Result of :func:`gradient_descent` run from several starting points.

    Attributes
    ----------
    endpoints : ndarray, shape (n, 2)
        The last iterate :math:`(w, v)` of each run.
    stationarity : ndarray, shape (n,)
        :math:`\\|z - P(z - \\eta \\nabla F(z))\\| / \\eta` at the last iterate
        (the gradient norm when there is no constraint).
    paths : ndarray, shape (steps + 1, n, 2) or None
        Every iterate, when ``record=True``.
    """

    endpoints: np.ndarray
    stationarity: np.ndarray
    paths: np.ndarray | None = None


def _parameters(eps, weight_decay):
    return _v.positive(eps, "eps"), _v.nonnegative(weight_decay, "weight_decay")


def _coordinates(w, v):
    w = _v.finite_array(w, "w")
    v = _v.finite_array(v, "v")
    try:
        return np.broadcast_arrays(w, v)
    except ValueError:
        raise ValueError(
            f"w and v must broadcast to a common shape, got {w.shape} and {v.shape}"
        ) from None


def objective(w, v, eps, weight_decay=0.0):
    r"""Example 1 objective :math:`F(w, v)`, elementwise over arrays.

    .. math::

        F(w, v) = \tfrac12 (w (1 + \epsilon v) - 1)^2 + \tfrac{\lambda}{2}(w^2 + v^2)

    Parameters
    ----------
    w, v : array_like
        Coordinates; broadcast against each other (a meshgrid works).
    eps : float
        Scale :math:`\epsilon > 0` of the residual branch :math:`f(x) = \epsilon x`.
    weight_decay : float, optional
        :math:`\lambda \ge 0`.

    Returns
    -------
    float or ndarray
        :math:`F` at every point.

    Examples
    --------
    >>> from resnet_theory.landscape import objective
    >>> float(objective(0.0, -4.0, eps=0.25))
    0.5
    >>> float(objective(1.0, 0.0, eps=0.25))
    0.0
    """
    eps, lam = _parameters(eps, weight_decay)
    w, v = _coordinates(w, v)
    value = 0.5 * (w * (1 + eps * v) - 1) ** 2 + 0.5 * lam * (w**2 + v**2)
    return value[()] if value.ndim == 0 else value


def gradient(w, v, eps, weight_decay=0.0):
    r"""Gradient :math:`(\partial_w F, \partial_v F)`, stacked on a last axis.

    .. math::

        \nabla F = \bigl((w s - 1) s + \lambda w,\;
                         (w s - 1)\,\epsilon w + \lambda v\bigr),
        \qquad s = 1 + \epsilon v.

    Examples
    --------
    >>> from resnet_theory.landscape import gradient
    >>> gradient(1.0, 1.0, eps=0.25).tolist()
    [0.3125, 0.0625]
    >>> bool((gradient(0.0, -4.0, eps=0.25) == 0).all())  # the saddle of Example 1
    True
    """
    eps, lam = _parameters(eps, weight_decay)
    w, v = _coordinates(w, v)
    s = 1 + eps * v
    residual = w * s - 1
    return np.stack([residual * s + lam * w, residual * eps * w + lam * v], axis=-1)


def hessian(w, v, eps, weight_decay=0.0):
    r"""Hessian of :math:`F`, shape ``(..., 2, 2)``.

    .. math::

        \nabla^2 F = \begin{pmatrix} s^2 + \lambda & \epsilon (2 w s - 1) \\
                     \epsilon (2 w s - 1) & \epsilon^2 w^2 + \lambda \end{pmatrix},
        \qquad s = 1 + \epsilon v.

    Examples
    --------
    >>> from resnet_theory.landscape import hessian
    >>> hessian(0.0, -4.0, eps=0.25).tolist()
    [[0.0, -0.25], [-0.25, 0.0]]
    """
    eps, lam = _parameters(eps, weight_decay)
    w, v = _coordinates(w, v)
    s = 1 + eps * v
    off = eps * (2 * w * s - 1)
    top = np.stack([s**2 + lam, off], axis=-1)
    bottom = np.stack([off, eps**2 * w**2 + lam], axis=-1)
    return np.stack([top, bottom], axis=-2)


def minimum_curve(w, eps):
    r"""The curve of global minima of the unregularised objective, as :math:`v(w)`.

    With ``weight_decay = 0`` every point with :math:`w (1 + \epsilon v) = 1`
    is a global minimum (value 0). The curve is the graph
    :math:`v = (1/w - 1)/\epsilon`, :math:`w \ne 0`; it is not a set of isolated
    points, so :func:`critical_points` does not list it and this function
    represents it instead.

    Examples
    --------
    >>> from resnet_theory.landscape import minimum_curve
    >>> minimum_curve([0.5, 1.0, 2.0], eps=0.5).tolist()
    [2.0, 0.0, -1.0]
    """
    eps = _v.positive(eps, "eps")
    w = _v.finite_array(w, "w")
    if np.any(w == 0):
        raise ValueError("w must be non-zero: the curve w (1 + eps v) = 1 has no point at w = 0")
    return (1 / w - 1) / eps


def _classify(eigenvalues, scale):
    tol = 1e-12 * max(1.0, scale)
    low, high = eigenvalues
    if low > tol:
        return "minimum"
    if high < -tol:
        return "maximum"
    if low < -tol and high > tol:
        return "saddle"
    return "degenerate"


def _interior_point(w, v, eps, lam):
    h = hessian(w, v, eps, lam)
    eig = np.linalg.eigvalsh(h)
    return CriticalPoint(
        w=float(w),
        v=float(v),
        kind=_classify(eig, float(np.abs(h).max())),
        value=float(objective(w, v, eps, lam)),
        eigenvalues=(float(eig[0]), float(eig[1])),
    )


def _polish(w, v, eps, lam, iterations=4):
    """Newton steps on the gradient system (used where the Hessian is regular)."""
    z = np.array([w, v])
    for _ in range(iterations):
        h = hessian(z[0], z[1], eps, lam)
        if abs(np.linalg.det(h)) < 1e-12:
            break
        z = z - np.linalg.solve(h, gradient(z[0], z[1], eps, lam))
    return z


def critical_points(eps, weight_decay=0.0):
    r"""Every isolated critical point of the Example 1 objective.

    The system :math:`\nabla F = 0` is polynomial. With :math:`s = 1 + \epsilon v`
    and :math:`\lambda > 0`, the first equation gives
    :math:`w = s/(s^2 + \lambda)` and the second then reads

    .. math::

        (s - 1)(s^2 + \lambda)^2 - \epsilon^2 s = 0,

    a quintic whose real roots are all the critical points (found as the
    eigenvalues of its companion matrix, then polished by Newton's method on
    :math:`\nabla F`, to about 1e-12).
    With :math:`\lambda = 0` the only isolated critical point is the saddle
    :math:`(0, -1/\epsilon)`; the global minima form the curve
    :math:`w(1 + \epsilon v) = 1` (see :func:`minimum_curve`), which is not
    returned.

    Parameters
    ----------
    eps : float
        :math:`\epsilon > 0`.
    weight_decay : float, optional
        :math:`\lambda \ge 0`.

    Returns
    -------
    list of CriticalPoint
        Sorted by value, then by ``w``.

    Raises
    ------
    ValueError
        If ``eps <= 0``, ``weight_decay < 0`` or either is not finite.

    Examples
    --------
    >>> from resnet_theory.landscape import critical_points
    >>> [(p.w, p.v, p.kind, p.value) for p in critical_points(eps=0.25)]
    [(0.0, -4.0, 'saddle', 0.5)]
    >>> [p.kind for p in critical_points(eps=1.0, weight_decay=0.25)]
    ['minimum', 'minimum', 'saddle']
    """
    eps, lam = _parameters(eps, weight_decay)
    if lam == 0:
        return [_interior_point(0.0, -1.0 / eps, eps, 0.0)]
    coefficients = [-(lam**2), lam**2 - eps**2, -2 * lam, 2 * lam, -1.0, 1.0]
    roots = np.polynomial.polynomial.polyroots(coefficients)
    real = np.sort(roots[np.abs(roots.imag) <= 1e-6 * np.maximum(1, np.abs(roots))].real)
    points = []
    for s in real:
        w, v = _polish(s / (s**2 + lam), (s - 1) / eps, eps, lam)
        if any(abs(w - p.w) + abs(v - p.v) < 1e-7 for p in points):
            continue
        points.append(_interior_point(w, v, eps, lam))
    return sorted(points, key=lambda p: (round(p.value, 12), p.w))


def constrained_critical_points(eps, radius, weight_decay=0.0):
    r"""Isolated critical points of Example 1 restricted to a disc.

    The feasible set is :math:`\{(w, v) : w^2 + v^2 \le \rho^2\}`. The result
    holds the isolated critical points of :func:`critical_points` strictly
    inside the disc, and the boundary points that satisfy the KKT conditions
    :math:`\nabla F = -\mu (w, v)/\rho` with :math:`\mu \ge 0` (the fixed points
    of projected gradient descent). On the circle
    :math:`(w, v) = \rho (\cos t, \sin t)` the prediction
    :math:`a(t) = w(1 + \epsilon v)` has
    :math:`a'(t) = -\rho \sin t + \epsilon \rho^2 \cos 2t`, so the tangential
    condition :math:`(a - 1)\,a' = 0` is solved in closed form: :math:`a' = 0`
    is a quadratic in :math:`\sin t`, and :math:`a = 1` gives no isolated KKT
    point (there :math:`\mu = -\lambda \rho \le 0`, with equality only on the
    curve of global minima when :math:`\lambda = 0`).

    Let :math:`g(t)` be the objective on the circle,
    :math:`g(t) = \tfrac12 (a(t) - 1)^2 + \tfrac\lambda2 \rho^2`, so that
    :math:`g' = (a - 1)\,a'` and :math:`g'' = (a - 1)\,a''` where
    :math:`a' = 0`. A boundary point is a constrained ``"minimum"`` when the
    objective increases along the circle (:math:`g''(t) > 0`) and
    :math:`\mu > 0`, and a ``"saddle"`` when it decreases along the circle.

    Parameters
    ----------
    eps : float
        :math:`\epsilon > 0`.
    radius : float
        :math:`\rho > 0`.
    weight_decay : float, optional
        :math:`\lambda \ge 0`.

    Returns
    -------
    list of CriticalPoint
        Sorted by value, then by ``w``.

    Examples
    --------
    >>> from resnet_theory.landscape import constrained_critical_points
    >>> points = constrained_critical_points(eps=1.0, radius=2.0)
    >>> [(p.kind, p.on_boundary) for p in points]
    [('minimum', True), ('saddle', False)]
    >>> spurious = points[0]
    >>> round(spurious.w, 4), round(spurious.v, 4), round(spurious.value, 4)
    (-1.0756, -1.6861, 0.0343)
    """
    eps, lam = _parameters(eps, weight_decay)
    rho = _v.positive(radius, "radius")
    inside = [p for p in critical_points(eps, lam) if np.hypot(p.w, p.v) < rho * (1 - 1e-9)]

    # a'(t) = 0  <=>  2 eps rho^2 S^2 + rho S - eps rho^2 = 0 with S = sin t.
    disc = rho**2 + 8 * eps**2 * rho**4
    sines = (-rho + np.array([-1.0, 1.0]) * np.sqrt(disc)) / (4 * eps * rho**2)
    angles = []
    for sine in sines[np.abs(sines) <= 1]:
        base = np.arcsin(sine)
        for t in (base, np.pi - base):
            t = float(np.angle(np.exp(1j * t)))
            if all(abs(np.angle(np.exp(1j * (t - u)))) > 1e-9 for u in angles):
                angles.append(t)

    boundary = []
    for t in angles:
        w, v = rho * np.cos(t), rho * np.sin(t)
        a = w * (1 + eps * v)
        radial = float(gradient(w, v, eps, lam) @ np.array([w, v])) / rho
        mu = -radial
        if mu < -1e-12 * max(1.0, abs(radial)):
            continue  # the objective decreases inwards: not a KKT point
        a2 = -rho * np.cos(t) - 2 * eps * rho**2 * np.sin(2 * t)
        curvature = (a - 1) * a2  # g''(t) at a'(t) = 0
        tol = 1e-9 * max(1.0, abs(a2))
        if curvature > tol and mu > 1e-12:
            kind = "minimum"
        elif curvature < -tol:
            kind = "saddle"
        else:
            kind = "degenerate"
        eig = np.linalg.eigvalsh(hessian(w, v, eps, lam))
        boundary.append(CriticalPoint(
            w=float(w), v=float(v), kind=kind, value=float(objective(w, v, eps, lam)),
            eigenvalues=(float(eig[0]), float(eig[1])), on_boundary=True,
            multiplier=float(max(mu, 0.0)),
        ))
    return sorted(inside + boundary, key=lambda p: (round(p.value, 12), p.w))


def _gradient_unchecked(z, eps, lam):
    """:func:`gradient` at the rows of ``z`` (shape (n, 2)), without validation.

    The inner loop of :func:`gradient_descent` validates its inputs once, up front.
    """
    w, v = z[:, 0], z[:, 1]
    s = 1 + eps * v
    residual = w * s - 1
    g = np.empty_like(z)
    g[:, 0] = residual * s + lam * w
    g[:, 1] = residual * eps * w + lam * v
    return g


def _per_start(values, name, n, allow_inf=False):
    """A parameter given per start: a float array of shape (n,)."""
    arr = np.asarray(values, dtype=float)
    if arr.shape != (n,):
        raise ValueError(f"{name} must be a number or have shape ({n},), got {arr.shape}")
    if np.any(np.isnan(arr)) or (not allow_inf and not np.all(np.isfinite(arr))):
        raise ValueError(f"{name} must hold finite numbers")
    return arr


def _project(z, radius):
    if radius is None:
        return z
    norms = np.linalg.norm(z, axis=-1, keepdims=True)
    return z * np.minimum(1.0, radius / np.maximum(norms, 1e-300))


def gradient_descent(starts, eps, *, weight_decay=0.0, radius=None, step_size=0.1,
                     steps=2000, record=False):
    r"""(Projected) gradient descent on Example 1 from many starting points at once.

    .. math::

        z_{t+1} = P\bigl(z_t - \eta \nabla F(z_t)\bigr),

    where :math:`P` is the Euclidean projection onto the disc of radius
    ``radius`` (the identity when ``radius`` is None).

    Parameters
    ----------
    starts : array_like, shape (n, 2)
        Starting points :math:`(w_0, v_0)`.
    eps : float
        As in :func:`objective`.
    weight_decay : float or array_like of shape (n,), optional
        :math:`\lambda \ge 0`, one value for all runs or one per start (many
        landscapes in one vectorised call).
    radius : float, array_like of shape (n,) or None, optional
        Radius :math:`\rho` of the norm constraint, one for all runs or one per
        start (``inf`` for no constraint); None for no constraint.
    step_size : float, optional
        :math:`\eta > 0`.
    steps : int, optional
        Number of iterations.
    record : bool, optional
        Keep every iterate in ``paths``.

    Returns
    -------
    Descent

    Raises
    ------
    DivergenceError
        If an iterate leaves the region :math:`|z| < 10^8` (the step size is too
        large for the curvature met along the way).

    Examples
    --------
    >>> from resnet_theory.landscape import gradient_descent
    >>> run = gradient_descent([[0.5, 0.5]], eps=1.0, step_size=0.1, steps=500)
    >>> round(float(run.endpoints[0, 0] * (1 + run.endpoints[0, 1])), 6)
    1.0
    """
    z = _v.finite_array(starts, "starts", shape=(None, 2)).copy()
    eps = _v.positive(eps, "eps")
    if np.ndim(weight_decay) == 0:
        lam = _v.nonnegative(weight_decay, "weight_decay")
    else:
        lam = _per_start(weight_decay, "weight_decay", len(z))
        if np.any(lam < 0):
            raise ValueError("weight_decay must be >= 0 for every start")
    if radius is not None:
        if np.ndim(radius) == 0:
            radius = _v.positive(radius, "radius")
        else:
            radius = _per_start(radius, "radius", len(z), allow_inf=True)[:, None]
            if np.any(radius <= 0):
                raise ValueError("radius must be > 0 for every start")
    eta = _v.positive(step_size, "step_size")
    steps = _v.positive_int(steps, "steps")
    z = _project(z, radius)
    paths = np.empty((steps + 1, *z.shape)) if record else None
    if record:
        paths[0] = z
    for k in range(steps):
        z = _project(z - eta * _gradient_unchecked(z, eps, lam), radius)
        if not np.all(np.abs(z) < 1e8):
            raise DivergenceError(
                f"gradient descent diverged at iteration {k + 1}: step_size={eta} is "
                "too large for this landscape; use a smaller step_size"
            )
        if record:
            paths[k + 1] = z
    moved = _project(z - eta * _gradient_unchecked(z, eps, lam), radius)
    stationarity = np.linalg.norm(z - moved, axis=-1) / eta
    return Descent(endpoints=z, stationarity=stationarity, paths=paths)


def nearest_point_labels(endpoints, points, *, tol=1e-3):
    """Index of the point each endpoint converged to, or -1 if none is within ``tol``.

    Parameters
    ----------
    endpoints : array_like, shape (n, 2)
        Final iterates, e.g. the ``endpoints`` of a :class:`Descent`.
    points : sequence of CriticalPoint or array_like of shape (m, 2)
        Candidate limits.
    tol : float, optional
        Largest Euclidean distance counted as convergence.

    Returns
    -------
    ndarray of int, shape (n,)

    Examples
    --------
    >>> from resnet_theory.landscape import nearest_point_labels
    >>> nearest_point_labels([[0.0, 0.0], [1.0, 1.0], [5.0, 5.0]],
    ...                      [[1.0, 1.0], [0.0, 0.0]]).tolist()
    [1, 0, -1]
    """
    endpoints = _v.finite_array(endpoints, "endpoints", shape=(None, 2))
    tol = _v.positive(tol, "tol")
    if len(points) == 0:
        return np.full(len(endpoints), -1)
    if isinstance(points[0], CriticalPoint):
        points = [(p.w, p.v) for p in points]
    points = _v.finite_array(points, "points", shape=(None, 2))
    distances = np.linalg.norm(endpoints[:, None, :] - points[None, :, :], axis=-1)
    labels = distances.argmin(axis=1)
    labels[distances.min(axis=1) > tol] = -1
    return labels

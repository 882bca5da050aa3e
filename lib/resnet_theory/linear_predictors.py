r"""Linear predictors under the squared loss: the baseline residual networks are measured against.

For a sample :math:`(x_i, y_i)_{i=1}^n` the empirical squared-loss risk of
:math:`x \mapsto u^\top x` is

.. math::

    F_{\mathrm{lin}}(u) = \frac{1}{2n} \sum_{i=1}^n (u^\top x_i - y_i)^2 .
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.optimize

from . import _validation as _v

__all__ = ["LinearFit", "linear_risk", "least_squares"]


@dataclass(frozen=True)
class LinearFit:
    """The best linear predictor in a ball.

    Attributes
    ----------
    coef : ndarray, shape (d,)
        The minimiser :math:`u`.
    value : float
        :math:`F_{\\mathrm{lin}}(u)`.
    multiplier : float
        The Lagrange multiplier :math:`\\mu \\ge 0` of the constraint
        :math:`\\|u\\| \\le \\rho` (0 when the constraint is inactive).
    """

    coef: np.ndarray
    value: float
    multiplier: float


def _sample(x, y):
    x = _v.finite_array(x, "x", ndim=2)
    y = _v.finite_array(y, "y", shape=(x.shape[0],))
    if x.shape[0] == 0:
        raise ValueError("x must hold at least one sample (row)")
    return x, y


def linear_risk(u, x, y):
    r"""Empirical squared-loss risk :math:`F_{\mathrm{lin}}(u)` of a linear predictor.

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.linear_predictors import linear_risk
    >>> linear_risk([1.0, 0.0], np.eye(2), np.array([1.0, 1.0]))
    0.25
    """
    x, y = _sample(x, y)
    u = _v.finite_array(u, "u", shape=(x.shape[1],))
    return float(0.5 * np.mean((x @ u - y) ** 2))


def least_squares(x, y, radius=None):
    r"""Minimise :math:`F_{\mathrm{lin}}(u)` over the ball :math:`\|u\| \le \rho`.

    Without a radius this is ordinary least squares
    (:func:`scipy.linalg.lstsq`, minimum-norm solution). With a radius, if the
    unconstrained minimiser lies outside the ball the solution is
    :math:`u(\mu) = (X^\top X / n + \mu I)^{-1} X^\top y / n` with the unique
    :math:`\mu > 0` such that :math:`\|u(\mu)\| = \rho`, found with
    :func:`scipy.optimize.brentq` (the norm decreases in :math:`\mu`).

    Parameters
    ----------
    x : array_like, shape (n, d)
    y : array_like, shape (n,)
    radius : float or None, optional
        :math:`\rho > 0`.

    Returns
    -------
    LinearFit

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.linear_predictors import least_squares
    >>> x, y = np.eye(2), np.array([3.0, 4.0])
    >>> least_squares(x, y).coef.round(6).tolist()
    [3.0, 4.0]
    >>> least_squares(x, y, radius=1.0).coef.round(6).tolist()
    [0.6, 0.8]
    """
    x, y = _sample(x, y)
    n = x.shape[0]
    coef = scipy.linalg.lstsq(x, y)[0]
    if radius is None or np.linalg.norm(coef) <= _v.positive(radius, "radius"):
        return LinearFit(coef=coef, value=linear_risk(coef, x, y), multiplier=0.0)
    gram, moment = x.T @ x / n, x.T @ y / n

    def solve(mu):
        return scipy.linalg.solve(gram + mu * np.eye(x.shape[1]), moment, assume_a="pos")

    def excess_norm(mu):
        return np.linalg.norm(solve(mu)) - radius

    # ||u(mu)|| decreases from ||lstsq solution|| > radius (mu -> 0+) to 0.
    lower, upper = 1e-14 * (1.0 + np.trace(gram)), 1.0
    if excess_norm(lower) <= 0:
        # the radius equals the unconstrained norm up to rounding: mu = 0
        coef = coef * (radius / np.linalg.norm(coef))
        return LinearFit(coef=coef, value=linear_risk(coef, x, y), multiplier=0.0)
    while excess_norm(upper) > 0:
        upper *= 2.0
    mu = scipy.optimize.brentq(excess_norm, lower, upper, xtol=1e-15, rtol=1e-12)
    coef = solve(mu)
    return LinearFit(coef=coef, value=linear_risk(coef, x, y), multiplier=float(mu))

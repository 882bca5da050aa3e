r"""The population risk of a deep linear residual network and its landscape.

Hardt and Ma's linear model: inputs :math:`x` with second-moment matrix
:math:`\Sigma = \mathbb{E}[x x^\top]` (the paper's "covariance"; :math:`x` need
not be centred, and the argument ``covariance`` is this matrix), labels
:math:`y = R x + \xi` with noise
:math:`\xi` independent of :math:`x`, :math:`\mathbb{E}\xi = 0`,
:math:`\mathbb{E}[\xi \xi^\top] = \sigma_\xi^2 I_d` (the paper takes
:math:`\sigma_\xi = 1`), and the network
:math:`\hat y = (I + A_\ell) \cdots (I + A_1) x`. The population risk is
(Claim 2.3)

.. math::

    f(A) = \mathbb{E}\,\|y - \hat y\|^2
         = \bigl\|\bigl((I + A_\ell) \cdots (I + A_1) - R\bigr) \Sigma^{1/2}\bigr\|_F^2 + C,
    \qquad C = d\,\sigma_\xi^2 ,

and :math:`C` is also its minimum value :math:`C_{\mathrm{opt}}`. The module
evaluates :math:`f`, its gradient (Lemma 2.4) with prefix and suffix products
(cost linear in the depth), the lower bound (2.3) on the gradient, and searches
the ball :math:`\mathcal{B}_\tau = \{A : \max_i \|A_i\|_2 \le \tau\}` for the
worst case of that bound. For contrast it also evaluates the *standard*
parametrisation :math:`W_\ell \cdots W_1`.

Reference: M. Hardt and T. Ma (2017), Identity matters in deep learning, ICLR 2017,
arXiv:1611.04231.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.optimize

from . import _validation as _v
from ._products import partial_products

__all__ = [
    "prefix_products",
    "suffix_products",
    "population_risk",
    "risk_gradient",
    "standard_risk",
    "standard_risk_gradient",
    "gradient_lower_bound",
    "ball_parametrisation",
    "WorstCase",
    "worst_case_gradient_ratio",
]


def _stack(factors, name="factors") -> np.ndarray:
    factors = _v.finite_array(factors, name, ndim=3)
    if factors.shape[0] == 0 or factors.shape[1] != factors.shape[2] or factors.shape[1] == 0:
        raise ValueError(
            f"{name} must be a non-empty stack of square matrices, shape (depth, d, d), "
            f"got {factors.shape}"
        )
    return factors


def _problem(target, covariance, d):
    target = _v.finite_array(target, "target", shape=(d, d))
    covariance = _v.finite_array(covariance, "covariance", shape=(d, d))
    if not np.allclose(covariance, covariance.T, rtol=1e-10, atol=1e-12):
        raise ValueError("covariance must be symmetric")
    if np.linalg.eigvalsh(covariance)[0] < -1e-12 * max(1.0, np.abs(covariance).max()):
        raise ValueError("covariance must be positive semidefinite")
    return target, covariance


def prefix_products(factors) -> np.ndarray:
    r"""The partial products :math:`P_i = (I + A_i) \cdots (I + A_1)`, :math:`i = 0..\ell`.

    Parameters
    ----------
    factors : array_like, shape (depth, d, d)
        :math:`A_1, \dots, A_\ell` (``factors[0]`` is :math:`A_1`).

    Returns
    -------
    ndarray, shape (depth + 1, d, d)
        ``P[0]`` is the identity and ``P[depth]`` the whole product.

    Raises
    ------
    ValueError
        If ``factors`` is not a finite, non-empty stack of square matrices.

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.linear_residual import prefix_products
    >>> prefix_products(np.full((2, 1, 1), 1.0)).ravel().tolist()
    [1.0, 2.0, 4.0]
    """
    factors = _stack(factors)
    depth, d, _ = factors.shape
    out = np.empty((depth + 1, d, d))
    out[0] = np.eye(d)
    for i in range(depth):
        out[i + 1] = out[i] + factors[i] @ out[i]
    return out


def suffix_products(factors) -> np.ndarray:
    r"""The partial products :math:`S_i = (I + A_\ell) \cdots (I + A_{i+1})`, :math:`i = 0..\ell`.

    Parameters
    ----------
    factors : array_like, shape (depth, d, d)
        :math:`A_1, \dots, A_\ell`.

    Returns
    -------
    ndarray, shape (depth + 1, d, d)
        ``S[depth]`` is the identity and ``S[0]`` the whole product.

    Raises
    ------
    ValueError
        If ``factors`` is not a finite, non-empty stack of square matrices.

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.linear_residual import suffix_products
    >>> suffix_products(np.full((2, 1, 1), 1.0)).ravel().tolist()
    [4.0, 2.0, 1.0]
    """
    factors = _stack(factors)
    depth, d, _ = factors.shape
    out = np.empty((depth + 1, d, d))
    out[depth] = np.eye(d)
    for i in range(depth - 1, -1, -1):
        out[i] = out[i + 1] + out[i + 1] @ factors[i]
    return out


def population_risk(factors, target, covariance, *, noise_variance=1.0) -> float:
    r"""The population risk :math:`f(A)` of the linear residual network (Claim 2.3).

    Parameters
    ----------
    factors : array_like, shape (depth, d, d)
        :math:`A_1, \dots, A_\ell`.
    target : array_like, shape (d, d)
        :math:`R`.
    covariance : array_like, shape (d, d)
        :math:`\Sigma = \mathbb{E}[x x^\top]`, symmetric positive semidefinite.
    noise_variance : float, optional
        :math:`\sigma_\xi^2`, the variance of each noise coordinate (1 in the paper).

    Returns
    -------
    float
        :math:`\operatorname{tr}(E \Sigma E^\top) + d\,\sigma_\xi^2` with
        :math:`E = (I + A_\ell) \cdots (I + A_1) - R`.

    Raises
    ------
    ValueError
        On shapes that do not match, non-finite entries, a covariance that is not
        symmetric positive semidefinite, or a negative ``noise_variance``.

    Notes
    -----
    :math:`\|E\Sigma^{1/2}\|_F^2 = \operatorname{tr}(E \Sigma E^\top)`, so no
    square root of :math:`\Sigma` is needed.

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.linear_residual import population_risk
    >>> print(f"{population_risk(np.zeros((3, 2, 2)), 2 * np.eye(2), np.eye(2)):.4f}")
    4.0000
    """
    factors = _stack(factors)
    d = factors.shape[1]
    target, covariance = _problem(target, covariance, d)
    noise_variance = _v.nonnegative(noise_variance, "noise_variance")
    error = prefix_products(factors)[-1] - target
    return float(np.sum((error @ covariance) * error) + d * noise_variance)


def risk_gradient(factors, target, covariance) -> np.ndarray:
    r"""The gradient of :math:`f` with respect to every layer (Lemma 2.4).

    Parameters
    ----------
    factors : array_like, shape (depth, d, d)
        :math:`A_1, \dots, A_\ell`.
    target : array_like, shape (d, d)
        :math:`R`.
    covariance : array_like, shape (d, d)
        :math:`\Sigma`.

    Returns
    -------
    ndarray, shape (depth, d, d)
        ``grad[i - 1]`` is :math:`\partial f / \partial A_i`.

    Raises
    ------
    ValueError
        As :func:`resnet_theory.linear_residual.population_risk`.

    Notes
    -----
    With :math:`E = (I + A_\ell) \cdots (I + A_1) - R`,

    .. math::

        \frac{\partial f}{\partial A_i}
        = 2 (I + A_{i+1}^\top) \cdots (I + A_\ell^\top)\, E\, \Sigma\,
          (I + A_1^\top) \cdots (I + A_{i-1}^\top)
        = 2\, S_i^\top E \Sigma P_{i-1}^\top ,

    with :math:`S_i = (I + A_\ell) \cdots (I + A_{i+1})` and
    :math:`P_{i-1} = (I + A_{i-1}) \cdots (I + A_1)`, the suffix and prefix
    products of :func:`resnet_theory.linear_residual.suffix_products` and
    :func:`resnet_theory.linear_residual.prefix_products`; the cost is
    :math:`O(\ell d^3)`. The paper's (2.5) prints the transposed factors in
    the reverse order, :math:`(I + A_\ell^\top) \cdots (I + A_{i+1}^\top)` on
    the left and :math:`(I + A_{i-1}^\top) \cdots (I + A_1^\top)` on the
    right, which is not the gradient once a side holds two factors that do
    not commute.

    References
    ----------
    M. Hardt and T. Ma, Identity matters in deep learning, ICLR 2017, Lemma 2.4.

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.linear_residual import risk_gradient
    >>> risk_gradient(np.zeros((2, 1, 1)), 3 * np.eye(1), np.eye(1)).ravel().tolist()
    [-4.0, -4.0]
    """
    factors = _stack(factors)
    d = factors.shape[1]
    target, covariance = _problem(target, covariance, d)
    prefix = prefix_products(factors)
    suffix = suffix_products(factors)
    middle = (prefix[-1] - target) @ covariance
    # layer i (0-based) sees suffix[i + 1]^T @ middle @ prefix[i]^T
    return 2.0 * np.transpose(suffix[1:], (0, 2, 1)) @ middle @ np.transpose(prefix[:-1], (0, 2, 1))


def standard_risk(weights, target, covariance, *, noise_variance=1.0) -> float:
    r"""The population risk of the standard parametrisation :math:`W_\ell \cdots W_1`.

    Parameters
    ----------
    weights : array_like, shape (depth, d, d)
        :math:`W_1, \dots, W_\ell` (``weights[0]`` acts first).
    target, covariance, noise_variance
        As in :func:`resnet_theory.linear_residual.population_risk`.

    Returns
    -------
    float
        :math:`\|(W_\ell \cdots W_1 - R)\Sigma^{1/2}\|_F^2 + d\,\sigma_\xi^2`.

    Raises
    ------
    ValueError
        As :func:`resnet_theory.linear_residual.population_risk`.

    Notes
    -----
    The same network as the residual one with :math:`W_i = I + A_i`; only the
    point called "zero" moves. At :math:`W = 0` the risk is
    :math:`\|R\Sigma^{1/2}\|_F^2 + C`, and for depth at least 2 every partial
    derivative vanishes there (see
    :func:`resnet_theory.linear_residual.standard_risk_gradient`).

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.linear_residual import standard_risk
    >>> print(f"{standard_risk(np.zeros((3, 2, 2)), np.eye(2), np.eye(2)):.4f}")
    4.0000
    """
    weights = _stack(weights, "weights")
    d = weights.shape[1]
    target, covariance = _problem(target, covariance, d)
    noise_variance = _v.nonnegative(noise_variance, "noise_variance")
    error = partial_products(weights)[0][-1] - target
    return float(np.sum((error @ covariance) * error) + d * noise_variance)


def standard_risk_gradient(weights, target, covariance) -> np.ndarray:
    r"""The gradient of the standard-parametrisation risk with respect to each :math:`W_i`.

    Parameters
    ----------
    weights : array_like, shape (depth, d, d)
        :math:`W_1, \dots, W_\ell`.
    target, covariance
        As in :func:`resnet_theory.linear_residual.population_risk`.

    Returns
    -------
    ndarray, shape (depth, d, d)

    Raises
    ------
    ValueError
        As :func:`resnet_theory.linear_residual.population_risk`.

    Notes
    -----
    .. math::

        \frac{\partial f}{\partial W_i}
        = 2 (W_\ell \cdots W_{i+1})^\top E \Sigma (W_{i-1} \cdots W_1)^\top,
        \qquad E = W_\ell \cdots W_1 - R .

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.linear_residual import standard_risk_gradient
    >>> g = standard_risk_gradient(np.zeros((2, 2, 2)), np.eye(2), np.eye(2))
    >>> bool(np.all(g == 0))  # W = 0 is a critical point, and not a minimum
    True
    """
    weights = _stack(weights, "weights")
    d = weights.shape[1]
    target, covariance = _problem(target, covariance, d)
    prefix, suffix = partial_products(weights)
    middle = (prefix[-1] - target) @ covariance
    return 2.0 * np.transpose(suffix[1:], (0, 2, 1)) @ middle @ np.transpose(prefix[:-1], (0, 2, 1))


_BALL_RTOL = 64 * np.finfo(float).eps  # round-off allowed on ||A_i||_2 <= tau


def gradient_lower_bound(factors, target, covariance, tau, *, noise_variance=1.0) -> float:
    r"""The right-hand side of the gradient lower bound (2.3) of Hardt and Ma.

    Parameters
    ----------
    factors : array_like, shape (depth, d, d)
        A point :math:`A` of :math:`\mathcal{B}_\tau`.
    target, covariance, noise_variance
        As in :func:`resnet_theory.linear_residual.population_risk`.
    tau : float
        The radius :math:`0 \le \tau < 1` of the ball.

    Returns
    -------
    float
        :math:`4 \ell (1 - \tau)^{2\ell - 2} \sigma_{\min}(\Sigma)
        \bigl(f(A) - C_{\mathrm{opt}}\bigr)`, a lower bound on
        :math:`\|\nabla f(A)\|_F^2` whenever :math:`\max_i\|A_i\|_2 \le \tau`.

    Raises
    ------
    ValueError
        If ``tau`` is not in ``[0, 1)``, if ``factors`` lies outside
        :math:`\mathcal{B}_\tau`, or as
        :func:`resnet_theory.linear_residual.population_risk`. Round-off is
        tolerated: a point passes if
        :math:`\max_i\|A_i\|_2 \le \tau\,(1 + 64\,\epsilon)`, with
        :math:`\epsilon` the machine epsilon (a few ulps of :math:`\tau`; a
        computed spectral norm of a matrix on the sphere
        :math:`\|A_i\|_2 = \tau`, such as an output of
        :func:`resnet_theory.linear_residual.ball_parametrisation` with
        huge weights, can exceed :math:`\tau` by that much).

    Notes
    -----
    This is the corrected form of (2.3). The ICLR 2017 paper prints
    :math:`\|\nabla f(A)\|_F^2 \ge 4 \ell (1 - \tau)^{\ell - 1}
    \sigma_{\min}(\Sigma)^2 (f(A) - C_{\mathrm{opt}})`, which is false: with
    :math:`d = 1`, :math:`\Sigma = 1` and every :math:`A_i = -\tau` it fails by
    the factor :math:`(1 - \tau)^{\ell - 1}` (the printed proof squares
    :math:`(1-\tau)^{\ell-1}` without squaring the power), and with
    :math:`\Sigma = s I`, :math:`s > 1`, it fails at :math:`A = 0` by the
    factor :math:`1/s` (the proof uses :math:`\|E\|_F^2 \ge
    \|E\Sigma^{1/2}\|_F^2`, which holds for every :math:`E` only when
    :math:`\sigma_{\max}(\Sigma) \le 1`).

    Each factor of :math:`S_i` and :math:`P_{i-1}` has smallest singular value at
    least :math:`1 - \tau`, so
    :math:`\|\partial f/\partial A_i\|_F \ge 2 (1 - \tau)^{\ell - 1} \|E\Sigma\|_F`
    and :math:`\|E \Sigma\|_F^2 \ge \sigma_{\min}(\Sigma) \|E\Sigma^{1/2}\|_F^2
    = \sigma_{\min}(\Sigma) (f - C_{\mathrm{opt}})`. Summing over the
    :math:`\ell` layers gives the bound; at a critical point in
    :math:`\mathcal{B}_\tau` it forces :math:`f = C_{\mathrm{opt}}` when
    :math:`\Sigma` is positive definite (Theorem 2.2).

    References
    ----------
    M. Hardt and T. Ma, Identity matters in deep learning, ICLR 2017, Theorem 2.2
    and inequality (2.3).

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.linear_residual import gradient_lower_bound
    >>> a = np.full((2, 1, 1), -0.5)  # (1 - 0.5)^2 = 0.25, E = 0.25 - 1
    >>> print(f"{gradient_lower_bound(a, np.eye(1), np.eye(1), 0.5):.4f}")
    1.1250
    """
    factors = _stack(factors)
    tau = _v.nonnegative(tau, "tau")
    if tau >= 1:
        raise ValueError(f"tau must be smaller than 1, got {tau}")
    norms = np.linalg.norm(factors, 2, axis=(1, 2))
    if norms.max() > tau * (1 + _BALL_RTOL):
        raise ValueError(
            f"factors must lie in the ball max_i ||A_i||_2 <= tau = {tau}, "
            f"got max_i ||A_i||_2 = {norms.max():.6g}"
        )
    depth, d, _ = factors.shape
    excess = population_risk(factors, target, covariance, noise_variance=0.0)
    sigma_min = max(float(np.linalg.eigvalsh(np.asarray(covariance, dtype=float))[0]), 0.0)
    return float(4 * depth * (1 - tau) ** (2 * depth - 2) * sigma_min * excess)


def ball_parametrisation(weights, tau) -> np.ndarray:
    r"""Map unconstrained matrices smoothly onto the open ball :math:`\|A_i\|_2 < \tau`.

    Parameters
    ----------
    weights : array_like, shape (depth, d, d)
        Unconstrained matrices :math:`W_i`.
    tau : float
        The radius, positive.

    Returns
    -------
    ndarray, shape (depth, d, d)
        :math:`A_i = \tau\, W_i (I + W_i^\top W_i)^{-1/2}`.

    Raises
    ------
    ValueError
        If ``weights`` is not a finite stack of square matrices or ``tau`` is not
        positive.

    Notes
    -----
    With :math:`W = U \operatorname{diag}(s) V^\top`,
    :math:`A = U \operatorname{diag}(\tau s / \sqrt{1 + s^2}) V^\top`: the
    singular values are squashed into :math:`[0, \tau)` and the map is onto the
    open ball, so an unconstrained optimiser (here :func:`scipy.optimize.minimize`)
    can search all of it. The map is computed from the singular value
    decomposition of :math:`W`, so that the spectral norms stay within a few
    ulps of :math:`\tau` even for huge weights (in floating point,
    :math:`s / \sqrt{1 + s^2}` rounds to 1 once :math:`s > 10^8`: such points
    lie on the sphere :math:`\|A_i\|_2 = \tau`).

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.linear_residual import ball_parametrisation
    >>> a = ball_parametrisation(100 * np.ones((1, 2, 2)), 0.5)
    >>> print(f"{np.linalg.norm(a[0], 2):.4f}")
    0.5000
    """
    weights = _stack(weights, "weights")
    tau = _v.positive(tau, "tau")
    left, s, right = np.linalg.svd(weights)
    squashed = tau * s / np.hypot(1.0, s)
    return (left * squashed[:, None, :]) @ right


@dataclass(frozen=True)
class WorstCase:
    r"""The result of :func:`resnet_theory.linear_residual.worst_case_gradient_ratio`.

    Attributes
    ----------
    ratio : float
        The smallest value found of
        :math:`\|\nabla f(A)\|_F^2 / \bigl(4\ell(1-\tau)^{2\ell-2}\sigma_{\min}(\Sigma)
        (f(A) - C_{\mathrm{opt}})\bigr)`; inequality (2.3) says it is at least 1.
    factors : numpy.ndarray
        The point :math:`A \in \mathcal{B}_\tau` where it was found.
    gradient_norm_squared : float
        :math:`\|\nabla f(A)\|_F^2` there.
    bound : float
        The right-hand side of (2.3) there.
    excess_risk : float
        :math:`f(A) - C_{\mathrm{opt}}` there.
    max_norm : float
        :math:`\max_i \|A_i\|_2` there (at most :math:`\tau`).
    ratios : numpy.ndarray
        The local minimum reached from each start, in order.
    """

    ratio: float
    factors: np.ndarray
    gradient_norm_squared: float
    bound: float
    excess_risk: float
    max_norm: float
    ratios: np.ndarray


def worst_case_gradient_ratio(
    target, covariance, depth, tau, *, rng, restarts=8, maxiter=300
) -> WorstCase:
    r"""Search :math:`\mathcal{B}_\tau` for the point where (2.3) is tightest.

    Parameters
    ----------
    target : array_like, shape (d, d)
        :math:`R`.
    covariance : array_like, shape (d, d)
        :math:`\Sigma`, symmetric positive definite.
    depth : int
        :math:`\ell`.
    tau : float
        The radius, :math:`0 < \tau < 1`.
    rng : numpy.random.Generator
        Draws the starting points.
    restarts : int, optional
        Number of random starting points.
    maxiter : int, optional
        Iterations of L-BFGS per start.

    Returns
    -------
    WorstCase

    Raises
    ------
    ValueError
        If ``tau`` is not in ``(0, 1)``, ``covariance`` is not positive definite,
        or as :func:`resnet_theory.linear_residual.population_risk`.
    TypeError
        If ``rng`` is not a :class:`numpy.random.Generator`.

    Notes
    -----
    Minimises the ratio of the two sides of (2.3),

    .. math::

        \rho(A) = \frac{\|\nabla f(A)\|_F^2}
                       {4\ell(1-\tau)^{2\ell-2}\sigma_{\min}(\Sigma)\,(f(A) - C_{\mathrm{opt}})},

    over :math:`A = ` :func:`resnet_theory.linear_residual.ball_parametrisation`
    :math:`(W, \tau)` with :func:`scipy.optimize.minimize` (L-BFGS-B, gradients
    by finite differences) from ``restarts`` random starts, some of them near
    the boundary of the ball. Points with :math:`f(A) - C_{\mathrm{opt}}` below
    round-off are skipped (the ratio is 0/0 there). A value below 1 would be a
    counterexample to (2.3); a value near 1 says the bound is attained.

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.linear_residual import worst_case_gradient_ratio
    >>> rng = np.random.default_rng(0)
    >>> worst = worst_case_gradient_ratio(2 * np.eye(1), np.eye(1), 2, 0.5, rng=rng, restarts=2)
    >>> bool(worst.ratio >= 1 - 1e-6)
    True
    """
    rng = _v.generator(rng)
    depth = _v.positive_int(depth, "depth")
    restarts = _v.positive_int(restarts, "restarts")
    maxiter = _v.positive_int(maxiter, "maxiter")
    tau = _v.positive(tau, "tau")
    if tau >= 1:
        raise ValueError(f"tau must be smaller than 1, got {tau}")
    target = _v.finite_array(target, "target", ndim=2)
    d = target.shape[0]
    target, covariance = _problem(target, covariance, d)
    sigma_min = float(np.linalg.eigvalsh(covariance)[0])
    if sigma_min <= 0:
        raise ValueError("covariance must be positive definite for the bound (2.3)")
    constant = 4 * depth * (1 - tau) ** (2 * depth - 2) * sigma_min
    shape = (depth, d, d)
    floor = 1e-10 * max(1.0, float(np.sum((target @ covariance) * target)))

    def pieces(z):
        a = ball_parametrisation(z.reshape(shape), tau)
        prefix = prefix_products(a)
        suffix = suffix_products(a)
        error = prefix[-1] - target
        excess = float(np.sum((error @ covariance) * error))
        grad = (
            2.0
            * np.transpose(suffix[1:], (0, 2, 1))
            @ (error @ covariance)
            @ np.transpose(prefix[:-1], (0, 2, 1))
        )
        return a, excess, float(np.sum(grad**2))

    def ratio(z):
        _, excess, g2 = pieces(z)
        if excess <= floor:
            return 1e6  # the ratio is 0/0 at a global minimum: steer away
        return g2 / (constant * excess)

    best = None
    ratios = []
    for start in range(restarts):
        scale = 3.0 if start % 2 else 0.5  # alternate: near the boundary, inside
        z0 = scale * rng.standard_normal(depth * d * d)
        result = scipy.optimize.minimize(
            ratio, z0, method="L-BFGS-B", options={"maxiter": maxiter}
        )
        ratios.append(float(result.fun))
        if best is None or result.fun < best.fun:
            best = result
    a, excess, g2 = pieces(best.x)
    return WorstCase(
        ratio=float(best.fun),
        factors=a,
        gradient_norm_squared=g2,
        bound=constant * excess,
        excess_risk=excess,
        max_norm=float(np.linalg.norm(a, 2, axis=(1, 2)).max()),
        ratios=np.array(ratios),
    )


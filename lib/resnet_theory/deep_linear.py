r"""Deep linear residual networks trained from the identity.

A depth-:math:`L` linear network on :math:`\mathbb{R}^d` is a stack of square
matrices :math:`\Theta_1, \dots, \Theta_L`, stored as an array ``thetas`` of
shape ``(L, d, d)`` with ``thetas[0]`` :math:`= \Theta_1` applied first. It
computes :math:`x \mapsto \Theta_{1:L} x` with
:math:`\Theta_{i:j} = \Theta_j \Theta_{j-1} \cdots \Theta_i`. For isotropic
inputs (:math:`\mathbb{E}\, x x^\top = I`) and targets :math:`y = \Phi x`, the
population quadratic loss is

.. math::

    \ell(\Theta) = \tfrac12 \mathbb{E} \|\Theta_{1:L} x - \Phi x\|^2
                 = \tfrac12 \|\Theta_{1:L} - \Phi\|_F^2 ,

and its gradient with respect to layer :math:`i` is

.. math::

    \nabla_{\Theta_i} \ell(\Theta)
    = \Theta_{i+1:L}^\top \, (\Theta_{1:L} - \Phi) \, \Theta_{1:i-1}^\top .

The module implements the loss, its exact gradient and Hessian (with prefix and
suffix products, so that a gradient costs time linear in :math:`L`), gradient
descent from the identity with an optional penalty towards the identity, the
scalar recursion that describes it for symmetric targets, the margin of a
matrix and the projection onto matrices with a given margin, the balanced
factorisation of a matrix with positive determinant, and the power projection
algorithm for targets with a positive margin.

Every function validates its arrays up front: layers of different sizes raise
a ``ValueError`` that names their shapes, non-finite entries a ``ValueError``,
and complex input a ``TypeError`` (an imaginary part is never dropped silently).

Reference: P. L. Bartlett, D. P. Helmbold and P. M. Long (2019), Gradient
descent with identity initialization efficiently learns positive-definite
linear transformations by deep residual networks, arXiv:1802.06093.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from . import _validation as _v
from ._products import partial_products
from ._rotations import rotation_planes, rotation_power
from ._validation import DivergenceError

__all__ = [
    "DeepLinearRun",
    "EigenvalueRun",
    "LemmaQuantities",
    "balanced_factorization",
    "balanced_flow_velocity",
    "distance_to_identity",
    "eigenvalue_recursion",
    "gradient",
    "gradient_descent",
    "hessian",
    "hessian_vector_product",
    "imbalances",
    "lemma_quantities",
    "loss",
    "margin",
    "power_projection",
    "product",
    "project_margin",
]

#: An iteration whose loss exceeds this multiple of ``1 + initial loss`` has diverged.
_BLOWUP = 1e8


# --- validation -----------------------------------------------------------------------


def _shape_of(entry):
    try:
        return np.shape(entry)
    except ValueError:  # itself ragged
        return "ragged"


def _real_array(value, name, **expected):
    """``value`` as a finite real float array (see ``_validation.finite_array``).

    Before the conversion: a ragged stack (layers of different sizes) raises a
    ``ValueError`` that names the shapes of its entries, and complex input raises
    a ``TypeError`` (its imaginary part would otherwise be dropped silently).
    """
    try:
        array = np.asarray(value)
    except ValueError:
        shapes = ", ".join(str(_shape_of(entry)) for entry in value)
        raise ValueError(f"{name} must stack arrays of one shape, got entries of "
                         f"shapes {shapes}") from None
    if np.iscomplexobj(array):
        raise TypeError(f"{name} must be real, got complex entries (dtype {array.dtype})")
    if array.dtype == object:
        if any(isinstance(x, (complex, np.complexfloating)) for x in array.flat):
            raise TypeError(f"{name} must be real, got complex entries")
        shapes = {_shape_of(x) for x in array.flat}
        if len(shapes) > 1:
            raise ValueError(f"{name} must stack arrays of one shape, got entries of "
                             f"shapes {', '.join(map(str, sorted(shapes, key=str)))}")
    return _v.finite_array(array, name, **expected)


def _network(thetas, name="thetas"):
    """Validate a stack of square layers: a finite array of shape (L, d, d), L, d >= 1."""
    thetas = _real_array(thetas, name, ndim=3)
    depth, rows, cols = thetas.shape
    if depth == 0 or rows == 0:
        raise ValueError(f"{name} must hold at least one layer of size at least 1x1, "
                         f"got shape {thetas.shape}")
    if rows != cols:
        raise ValueError(f"{name} must have shape (L, d, d) with square layers, "
                         f"got shape {thetas.shape}")
    return thetas


def _square(a, name, dim=None):
    a = _real_array(a, name, ndim=2)
    if a.shape[0] != a.shape[1] or a.shape[0] == 0:
        raise ValueError(f"{name} must be a non-empty square matrix, got shape {a.shape}")
    if dim is not None and a.shape[0] != dim:
        raise ValueError(f"{name} must have shape ({dim}, {dim}) to match the layers, "
                         f"got shape {a.shape}")
    return a


def _step_count(steps):
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)):
        raise TypeError(f"steps must be an integer, got {type(steps).__name__}")
    if steps < 0:
        raise ValueError(f"steps must be a non-negative integer, got {steps}")
    return int(steps)


# --- the network, its loss and derivatives ----------------------------------------------


def product(thetas):
    r"""The end-to-end matrix :math:`\Theta_{1:L} = \Theta_L \Theta_{L-1} \cdots \Theta_1`.

    Parameters
    ----------
    thetas : array_like, shape (L, d, d)
        The layers, ``thetas[0]`` :math:`= \Theta_1` applied first.

    Returns
    -------
    ndarray, shape (d, d)

    Raises
    ------
    ValueError
        If ``thetas`` is not a finite array of shape ``(L, d, d)`` with
        :math:`L, d \ge 1`.

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.deep_linear import product
    >>> first, second = np.array([[1.0, 1.0], [0.0, 1.0]]), np.diag([2.0, 3.0])
    >>> product([first, second]).tolist()  # second @ first
    [[2.0, 2.0], [0.0, 3.0]]
    """
    thetas = _network(thetas)
    out = thetas[0].copy()
    for layer in thetas[1:]:
        out = layer @ out
    return out


def loss(thetas, phi):
    r"""The quadratic loss :math:`\ell(\Theta) = \tfrac12 \|\Theta_{1:L} - \Phi\|_F^2`.

    This is :math:`\tfrac12 \mathbb{E}\|\Theta_{1:L} x - \Phi x\|^2` for inputs
    with :math:`\mathbb{E}\, x x^\top = I`.

    Parameters
    ----------
    thetas : array_like, shape (L, d, d)
        The layers, ``thetas[0]`` :math:`= \Theta_1` applied first.
    phi : array_like, shape (d, d)
        The target :math:`\Phi`.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If the shapes do not match or an entry is not finite.

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.deep_linear import loss
    >>> loss(np.stack([np.eye(2)] * 3), np.diag([2.0, 1.0]))
    0.5
    """
    thetas = _network(thetas)
    phi = _square(phi, "phi", thetas.shape[1])
    return 0.5 * float(np.sum((product(thetas) - phi) ** 2))


def gradient(thetas, phi):
    r"""Exact gradient of :func:`resnet_theory.deep_linear.loss`, layer by layer.

    Parameters
    ----------
    thetas : array_like, shape (L, d, d)
        The layers, ``thetas[0]`` :math:`= \Theta_1` applied first.
    phi : array_like, shape (d, d)
        The target :math:`\Phi`.

    Returns
    -------
    ndarray, shape (L, d, d)
        Entry ``i - 1`` is :math:`\nabla_{\Theta_i} \ell`.

    Raises
    ------
    ValueError
        If the shapes do not match or an entry is not finite.

    Notes
    -----
    With :math:`E = \Theta_{1:L} - \Phi`,

    .. math::

        \nabla_{\Theta_i} \ell(\Theta) = \Theta_{i+1:L}^\top \, E \, \Theta_{1:i-1}^\top ,

    where empty products are the identity. All prefix products
    :math:`\Theta_{1:i-1}` and suffix products :math:`\Theta_{i+1:L}` are formed
    in one pass each, so the cost is :math:`O(L d^3)`: linear in the depth.

    Examples
    --------
    At the identity every layer receives the same gradient, the error itself:

    >>> import numpy as np
    >>> from resnet_theory.deep_linear import gradient
    >>> g = gradient(np.stack([np.eye(2)] * 3), np.diag([2.0, 1.0]))
    >>> g.shape, g[0].tolist(), bool(np.all(g == g[0]))
    ((3, 2, 2), [[-1.0, 0.0], [0.0, 0.0]], True)
    """
    thetas = _network(thetas)
    phi = _square(phi, "phi", thetas.shape[1])
    prefix, suffix = partial_products(thetas)
    error = prefix[-1] - phi
    return np.swapaxes(suffix[1:], 1, 2) @ error @ np.swapaxes(prefix[:-1], 1, 2)


def hessian_vector_product(thetas, phi, direction):
    r"""The Hessian of the loss applied to a direction, :math:`\nabla^2 \ell(\Theta)[V]`.

    Parameters
    ----------
    thetas : array_like, shape (L, d, d)
        The layers, ``thetas[0]`` :math:`= \Theta_1` applied first.
    phi : array_like, shape (d, d)
        The target :math:`\Phi`.
    direction : array_like, shape (L, d, d)
        The direction :math:`V = (V_1, \dots, V_L)`.

    Returns
    -------
    ndarray, shape (L, d, d)
        The directional derivative of :func:`resnet_theory.deep_linear.gradient`
        along :math:`V`.

    Raises
    ------
    ValueError
        If the shapes do not match or an entry is not finite.

    Notes
    -----
    Forward-mode differentiation of the prefix and suffix products,
    :math:`\dot P_{k+1} = V_k P_k + \Theta_k \dot P_k` and
    :math:`\dot S_{k-1} = \dot S_k \Theta_k + S_k V_k`, followed by the product
    rule applied to :math:`S_i^\top E P_i^\top`. The cost is :math:`O(L d^3)`.

    Examples
    --------
    At the identity with :math:`\Phi = I` the Hessian maps :math:`V` to
    :math:`\sum_j V_j` in every layer:

    >>> import numpy as np
    >>> from resnet_theory.deep_linear import hessian_vector_product
    >>> v = np.array([[[1.0]], [[2.0]]])
    >>> hessian_vector_product(np.ones((2, 1, 1)), [[1.0]], v).ravel().tolist()
    [3.0, 3.0]
    """
    thetas = _network(thetas)
    phi = _square(phi, "phi", thetas.shape[1])
    direction = _real_array(direction, "direction", shape=thetas.shape)
    depth, d, _ = thetas.shape
    prefix, suffix = partial_products(thetas)
    dprefix = np.zeros_like(prefix)
    dsuffix = np.zeros_like(suffix)
    for k in range(depth):
        dprefix[k + 1] = direction[k] @ prefix[k] + thetas[k] @ dprefix[k]
    for k in range(depth - 1, -1, -1):
        dsuffix[k] = dsuffix[k + 1] @ thetas[k] + suffix[k + 1] @ direction[k]
    error, derror = prefix[-1] - phi, dprefix[-1]
    s_t, p_t = np.swapaxes(suffix[1:], 1, 2), np.swapaxes(prefix[:-1], 1, 2)
    return (np.swapaxes(dsuffix[1:], 1, 2) @ error @ p_t + s_t @ derror @ p_t
            + s_t @ error @ np.swapaxes(dprefix[:-1], 1, 2))


def hessian(thetas, phi):
    r"""The full Hessian of the loss as a matrix of size :math:`L d^2 \times L d^2`.

    Parameters
    ----------
    thetas : array_like, shape (L, d, d)
        The layers, ``thetas[0]`` :math:`= \Theta_1` applied first.
    phi : array_like, shape (d, d)
        The target :math:`\Phi`.

    Returns
    -------
    ndarray, shape (L*d*d, L*d*d)
        Rows and columns follow ``thetas.reshape(-1)`` (C order).

    Raises
    ------
    ValueError
        If the shapes do not match or an entry is not finite.

    Notes
    -----
    Block :math:`(k, l)` is the bilinear form
    :math:`(V, W) \mapsto \langle \Theta_{k+1:L} V \Theta_{1:k-1},
    \Theta_{l+1:L} W \Theta_{1:l-1}\rangle_F` plus, for :math:`k < l`, the term
    :math:`\langle E, \Theta_{l+1:L} W \Theta_{k+1:l-1} V \Theta_{1:k-1}\rangle_F`
    with :math:`E = \Theta_{1:L} - \Phi` (and its transpose for :math:`k > l`);
    column :math:`n` equals the Hessian-vector product with the :math:`n`-th
    coordinate direction
    (:func:`resnet_theory.deep_linear.hessian_vector_product`). The matrix has
    :math:`(L d^2)^2` entries, so this is meant for small networks, e.g. to check
    the bound on :math:`\|\nabla^2 \ell\|_F` of
    :func:`resnet_theory.deep_linear.lemma_quantities`.

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.deep_linear import hessian
    >>> hessian(np.ones((2, 1, 1)), [[1.0]]).tolist()
    [[1.0, 1.0], [1.0, 1.0]]
    """
    thetas = _network(thetas)
    phi = _square(phi, "phi", thetas.shape[1])
    depth, d, _ = thetas.shape
    prefix, suffix = partial_products(thetas)
    error = prefix[-1] - phi
    before, after = prefix[:-1], suffix[1:]  # Theta_{1:k-1}, Theta_{k+1:L}
    # Gauss-Newton blocks: (S_k^T S_l)[a, c] (P_k P_l^T)[b, d]
    left = np.einsum("kpa,lpc->klac", after, after)
    right = np.einsum("kbq,ldq->klbd", before, before)
    blocks = np.einsum("klac,klbd->klabcd", left, right)
    # blocks with E (k < l): Q[d, a] (S_l^T E P_k^T)[c, b], Q = Theta_{k+1:l-1}
    for k in range(depth):
        between = np.eye(d)
        for m in range(k + 1, depth):
            outer = after[m].T @ error @ before[k].T
            mixed = np.einsum("da,cb->abcd", between, outer)
            blocks[k, m] += mixed
            blocks[m, k] += mixed.transpose(2, 3, 0, 1)
            between = thetas[m] @ between
    return blocks.transpose(0, 2, 3, 1, 4, 5).reshape(thetas.size, thetas.size)


def distance_to_identity(thetas):
    r"""How far the layers are from the identity, :math:`\max_i \|\Theta_i - I\|_2`.

    This is the quantity :math:`\mathcal{R}` of the "stay close to the identity"
    lemma (spectral norm).

    Parameters
    ----------
    thetas : array_like, shape (L, d, d)
        The layers.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If ``thetas`` is not a finite array of shape ``(L, d, d)``.

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.deep_linear import distance_to_identity
    >>> distance_to_identity([np.eye(2), np.diag([1.5, 0.8])])
    0.5
    """
    thetas = _network(thetas)
    return float(np.max(np.linalg.norm(thetas - np.eye(thetas.shape[1]), ord=2, axis=(1, 2))))


# --- balance and the end-to-end flow --------------------------------------------------------


def imbalances(thetas):
    r"""The imbalances :math:`D_i = \Theta_{i+1}^\top \Theta_{i+1} - \Theta_i \Theta_i^\top`.

    Inserting an invertible :math:`G` between two layers,
    :math:`\Theta_i \to G\Theta_i` and :math:`\Theta_{i+1} \to \Theta_{i+1} G^{-1}`,
    does not change the product, hence not the loss. By this symmetry gradient
    flow keeps every :math:`D_i` constant, and one step of gradient descent with
    step :math:`\eta` changes it by
    :math:`\eta^2 (G_{i+1}^\top G_{i+1} - G_i G_i^\top)` with
    :math:`G_i = \nabla_{\Theta_i} \ell`. Layers with all :math:`D_i = 0` are
    *balanced*; the identity and the factors of
    :func:`resnet_theory.deep_linear.balanced_factorization` are.

    The conservation law is due to Du, Hu and Lee (2018, arXiv:1806.00900),
    who prove that gradient flow keeps the differences of the layers' squared
    norms (for linear layers, the traces :math:`\operatorname{tr} D_i`)
    constant, and to Arora, Cohen and Hazan (2018, arXiv:1802.06509), whose
    balanced flow (:func:`resnet_theory.deep_linear.balanced_flow_velocity`)
    rests on the matrix form.

    Parameters
    ----------
    thetas : array_like, shape (L, d, d)
        The layers, ``thetas[0]`` :math:`= \Theta_1` applied first.

    Returns
    -------
    ndarray, shape (L - 1, d, d)
        Entry ``i - 1`` is :math:`D_i`, :math:`i = 1, \dots, L - 1` (empty for
        :math:`L = 1`).

    Raises
    ------
    ValueError
        If ``thetas`` is not a finite array of shape ``(L, d, d)``.

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.deep_linear import imbalances
    >>> imbalances([np.diag([2.0, 1.0]), np.diag([1.0, 3.0])]).tolist()
    [[[-3.0, 0.0], [0.0, 8.0]]]
    """
    thetas = _network(thetas)
    later, earlier = thetas[1:], thetas[:-1]
    return np.swapaxes(later, 1, 2) @ later - earlier @ np.swapaxes(earlier, 1, 2)


def balanced_flow_velocity(w, phi, depth):
    r"""The velocity of the end-to-end matrix under balanced gradient flow.

    If the layers are balanced (:func:`resnet_theory.deep_linear.imbalances`
    all zero) and follow gradient flow :math:`\dot\Theta_i = -\nabla_{\Theta_i}\ell`,
    their product :math:`W = \Theta_{1:L}` moves by

    .. math::

        \dot W = -\sum_{i=1}^{L} (W W^\top)^{\frac{L-i}{L}} \, (W - \Phi) \,
                 (W^\top W)^{\frac{i-1}{L}} ,

    a gradient flow on :math:`\tfrac12\|W - \Phi\|_F^2` with a preconditioner
    that depends on :math:`W` alone (derived by Arora, Cohen and Hazan, 2018,
    who also allow a weight decay, here zero).

    Parameters
    ----------
    w : array_like, shape (d, d)
        The end-to-end matrix :math:`W`.
    phi : array_like, shape (d, d)
        The target :math:`\Phi`.
    depth : int
        :math:`L \ge 1`.

    Returns
    -------
    ndarray, shape (d, d)
        :math:`\dot W`.

    Raises
    ------
    ValueError
        If the matrices are not finite, square and of one size, or ``depth`` is
        not positive.
    TypeError
        If ``depth`` is not an integer.

    Notes
    -----
    With the singular value decomposition :math:`W = U \Sigma V^\top` and
    :math:`E = W - \Phi`,
    :math:`\dot W = -U \bigl(K \circ (U^\top E V)\bigr) V^\top` with
    :math:`K_{rs} = \sum_{i=1}^{L} \sigma_r^{2(L-i)/L} \sigma_s^{2(i-1)/L}`. So
    the preconditioner is symmetric positive semi-definite with eigenvalues
    :math:`K_{rs}` between :math:`L \sigma_{\min}^{2-2/L}` and
    :math:`L \sigma_{\max}^{2-2/L}`; at :math:`L = 1` it is the identity.

    Examples
    --------
    For :math:`d = 1` this is :math:`\dot w = -L |w|^{2 - 2/L} (w - \phi)`:

    >>> from resnet_theory.deep_linear import balanced_flow_velocity
    >>> balanced_flow_velocity([[4.0]], [[3.0]], depth=2).tolist()
    [[-8.0]]
    """
    w = _square(w, "w")
    phi = _square(phi, "phi", w.shape[0])
    depth = _v.positive_int(depth, "depth")
    u, sigma, vt = np.linalg.svd(w)
    i = np.arange(1, depth + 1)
    left = sigma[:, None] ** (2 * (depth - i) / depth)  # (d, L): sigma_r^(2(L-i)/L)
    right = sigma[:, None] ** (2 * (i - 1) / depth)  # (d, L): sigma_s^(2(i-1)/L)
    weights = left @ right.T  # K_rs
    return -u @ (weights * (u.T @ (w - phi) @ vt.T)) @ vt


@dataclass(frozen=True)
class LemmaQuantities:
    r"""The quantities that enter the three lemmas behind the convergence proof.

    Attributes
    ----------
    loss : float
        :math:`\ell(\Theta)`.
    gradient_norm_squared : float
        :math:`\|\nabla_\Theta \ell(\Theta)\|^2 = \sum_i \|\nabla_{\Theta_i} \ell\|_F^2`.
    min_singular_value : float
        :math:`1 - a = \min_i \sigma_{\min}(\Theta_i)`.
    max_norm : float
        :math:`1 + z = \max_i \|\Theta_i\|_2`.
    distance : float
        :math:`\mathcal{R} = \max_i \|\Theta_i - I\|_2`.
    depth, dim : int
        :math:`L` and :math:`d`.
    residual_norm : float
        :math:`\|E\|_F = \|\Theta_{1:L} - \Phi\|_F = \sqrt{2\ell}`.
    """

    loss: float
    gradient_norm_squared: float
    min_singular_value: float
    max_norm: float
    distance: float
    depth: int
    dim: int
    residual_norm: float = float("nan")

    @property
    def gradient_lower_bound(self):
        r""":math:`2 L (1-a)^{2(L-1)} \ell`: a lower bound on :math:`\|\nabla \ell\|^2`."""
        return 2 * self.depth * self.min_singular_value ** (2 * (self.depth - 1)) * self.loss

    @property
    def hessian_upper_bound(self):
        r"""A bound on :math:`\|\nabla^2 \ell\|_F` valid for every network and target.

        With :math:`M = 1 + z = \max_i \|\Theta_i\|_2` and
        :math:`E = \Theta_{1:L} - \Phi`,

        .. math::

            \|\nabla^2 \ell(\Theta)\|_F \le L \bigl(d M^{2L-2}
            + [L \ge 2]\, \sqrt{d}\, M^{L-2} \|E\|_F\bigr).

        The first term bounds the Gauss-Newton blocks, the second the blocks
        that contain :math:`E`. The slides' bound :math:`3 L d^5 (1+z)^{2L}`
        (:attr:`slides_hessian_bound`) follows from it when :math:`z \ge 0` and
        :math:`\|E\|_F \le 2\sqrt{d}\,(1+z)^L` (for example when
        :math:`\|\Phi\|_2 \le (1+z)^L`), and fails without such a condition.
        """
        m, depth, dim = self.max_norm, self.depth, self.dim
        mixed = np.sqrt(dim) * m ** (depth - 2) * self.residual_norm if depth >= 2 else 0.0
        return float(depth * (dim * m ** (2 * depth - 2) + mixed))

    @property
    def slides_hessian_bound(self):
        r""":math:`3 L d^5 (1+z)^{2L}`, the form printed in the slides.

        It bounds :math:`\|\nabla^2 \ell\|_F` when :math:`z \ge 0` and
        :math:`\|E\|_F \le 2\sqrt{d}(1+z)^L`; without a condition on :math:`E`
        it can fail (see :func:`resnet_theory.deep_linear.lemma_quantities`).
        """
        return 3 * self.depth * self.dim**5 * self.max_norm ** (2 * self.depth)


def lemma_quantities(thetas, phi):
    r"""Loss, gradient norm and the singular-value extremes of a network.

    Parameters
    ----------
    thetas : array_like, shape (L, d, d)
        The layers, ``thetas[0]`` :math:`= \Theta_1` applied first.
    phi : array_like, shape (d, d)
        The target :math:`\Phi`.

    Returns
    -------
    LemmaQuantities

    Raises
    ------
    ValueError
        If the shapes do not match or an entry is not finite.

    Notes
    -----
    The quantities enter the three lemmas of the convergence proof in the forms
    that the book proves (Chapter 4, "Gradient descent from the identity"): with
    :math:`\sigma_{\min}(\Theta_i) \ge 1 - a \ge 0` and
    :math:`\|\Theta_i\|_2 \le 1 + z` for all :math:`i`, and
    :math:`E = \Theta_{1:L} - \Phi`,

    .. math::

        \|\nabla_\Theta \ell\|^2 \ge 2 L (1-a)^{2(L-1)} \ell(\Theta),

        \mathcal{R}(t+1) \le \mathcal{R}(t) + \eta (1 + \mathcal{R}(t))^{L-1} \sqrt{2 \ell(t)},

        \|\nabla^2_\Theta \ell\|_F \le L \bigl(d (1+z)^{2L-2}
        + \sqrt{d}\,(1+z)^{L-2} \|E\|_F\bigr) \quad (L \ge 2)

    (:attr:`LemmaQuantities.gradient_lower_bound`,
    :attr:`LemmaQuantities.hessian_upper_bound`). The first follows from
    :math:`\|\nabla_{\Theta_i}\ell\|_F \ge \sigma_{\min}(\Theta_{i+1:L})\,
    \sigma_{\min}(\Theta_{1:i-1}) \|E\|_F` and :math:`\|E\|_F^2 = 2\ell`.

    These are not the printed forms. P. Bartlett's slides (2018), which present
    the lemmas of Bartlett, Helmbold and Long (2019), print
    :math:`\|\nabla_\Theta \ell\|^2 \ge 4 \ell L (1-a)^{2L}` (credited there to
    Hardt and Ma), the exponent :math:`L` in place of :math:`L - 1` in the
    second lemma, and :math:`\|\nabla^2_\Theta \ell\|_F \le 3 L d^5 (1+z)^{2L}`.
    The first is false for :math:`\ell = \tfrac12\|E\|_F^2`, since equality
    holds with :math:`2 L \ell` at the identity; it holds for the loss
    :math:`\|E\|_F^2` without the :math:`\tfrac12` when :math:`0 \le a \le 1`.
    (Hardt and Ma's printed inequality (2.3) is a third form; the book treats it
    in Chapter 2.) The second is implied by the book's form. The third is false
    far from the target (:math:`d = 1`, :math:`L = 2`, :math:`\Theta = (1, 1)`,
    :math:`\Phi = -100` has :math:`\|\nabla^2 \ell\|_F \approx 144 > 6`) and
    follows from the book's bound when :math:`z \ge 0` and
    :math:`\|E\|_F \le 2\sqrt{d}(1+z)^L`.

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.deep_linear import lemma_quantities
    >>> q = lemma_quantities(np.stack([np.eye(2)] * 4), np.diag([1.1, 0.9]))
    >>> round(q.loss, 4), round(q.gradient_norm_squared, 4), round(q.gradient_lower_bound, 4)
    (0.01, 0.08, 0.08)
    """
    thetas = _network(thetas)
    phi = _square(phi, "phi", thetas.shape[1])
    grad = gradient(thetas, phi)
    singular = np.linalg.svd(thetas, compute_uv=False)
    return LemmaQuantities(
        loss=loss(thetas, phi),
        gradient_norm_squared=float(np.sum(grad**2)),
        min_singular_value=float(singular.min()),
        max_norm=float(singular.max()),
        distance=distance_to_identity(thetas),
        depth=thetas.shape[0],
        dim=thetas.shape[1],
        residual_norm=float(np.linalg.norm(product(thetas) - phi)),
    )


# --- margins and balanced factorisations -------------------------------------------------


def margin(a):
    r"""The margin :math:`\min_{\|u\| = 1} u^\top A u = \lambda_{\min}\bigl((A + A^\top)/2\bigr)`.

    A matrix has margin :math:`\gamma` when :math:`u^\top A u \ge \gamma` for every
    unit vector :math:`u`; only the symmetric part of :math:`A` matters.

    Parameters
    ----------
    a : array_like, shape (d, d)

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If ``a`` is not a finite non-empty square matrix.

    Examples
    --------
    A rotation by 60 degrees has margin :math:`\cos 60^\circ`:

    >>> import numpy as np
    >>> from resnet_theory.deep_linear import margin
    >>> c, s = np.cos(np.pi / 3), np.sin(np.pi / 3)
    >>> round(margin([[c, -s], [s, c]]), 6)
    0.5
    """
    a = _square(a, "a")
    return float(np.linalg.eigvalsh((a + a.T) / 2)[0])


def project_margin(a, gamma):
    r"""The Frobenius-nearest matrix with margin at least :math:`\gamma`.

    Parameters
    ----------
    a : array_like, shape (d, d)
        The matrix to project.
    gamma : float
        The required margin (any real number).

    Returns
    -------
    ndarray, shape (d, d)
        :math:`B = \arg\min \{\|B - A\|_F : u^\top B u \ge \gamma
        \text{ for all unit } u\}`.

    Raises
    ------
    ValueError
        If ``a`` is not a finite square matrix or ``gamma`` is not finite.
    TypeError
        If ``gamma`` is not a real number.

    Notes
    -----
    Split :math:`A = S + K` into its symmetric part :math:`S = (A + A^\top)/2`
    and skew part :math:`K`. The two parts are orthogonal in the Frobenius inner
    product and the constraint only involves the symmetric part
    (:math:`u^\top K u = 0`), so the skew part is kept and :math:`S = V
    \operatorname{diag}(\lambda) V^\top` is replaced by its projection onto
    :math:`\{S \succeq \gamma I\}`:

    .. math::

        B = V \operatorname{diag}\bigl(\max(\lambda_j, \gamma)\bigr) V^\top + K .

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.deep_linear import margin, project_margin
    >>> b = project_margin([[0.0, -1.0], [1.0, 0.0]], 0.25)  # a rotation by 90 degrees
    >>> b.tolist(), round(margin(b), 6)
    ([[0.25, -1.0], [1.0, 0.25]], 0.25)
    """
    a = _square(a, "a")
    gamma = _v.as_float(gamma, "gamma")
    sym, skew = (a + a.T) / 2, (a - a.T) / 2
    values, vectors = np.linalg.eigh(sym)
    if values[0] >= gamma:
        return a.copy()
    clipped = (vectors * np.maximum(values, gamma)) @ vectors.T
    return (clipped + clipped.T) / 2 + skew


def balanced_factorization(a, depth):
    r"""Factor :math:`A = A_L \cdots A_1` into factors with singular values :math:`\sigma(A)^{1/L}`.

    Parameters
    ----------
    a : array_like, shape (d, d)
        A matrix with :math:`\det A > 0`.
    depth : int
        The number of factors :math:`L`.

    Returns
    -------
    ndarray, shape (L, d, d)
        The factors, entry 0 being :math:`A_1` (applied first), so that
        :func:`resnet_theory.deep_linear.product` returns :math:`A`.

    Raises
    ------
    ValueError
        If ``a`` is not a finite square matrix, if :math:`\det A \le 0`, or if
        ``depth`` is not positive.
    TypeError
        If ``depth`` is not an integer.

    Notes
    -----
    Write the polar decomposition :math:`A = R P` (:func:`scipy.linalg.polar`),
    with :math:`R` orthogonal and :math:`P` symmetric positive definite. Since
    :math:`\det A > 0`, :math:`R` is a rotation. Put

    .. math::

        A_i = R^{i/L} \, P^{1/L} \, R^{-(i-1)/L}, \qquad i = 1, \dots, L,

    so that the product telescopes to :math:`R P = A`, and each :math:`A_i` is
    :math:`P^{1/L}` multiplied by rotations, with singular values
    :math:`\sigma_j(A)^{1/L}`. The fractional powers of :math:`R` come from its
    real Schur form, which is block diagonal with :math:`2 \times 2` rotation
    blocks and entries :math:`\pm 1`; the entries :math:`-1` come in pairs, and
    each pair is treated as a rotation by :math:`\pi` in its plane. This covers
    rotations without a real principal logarithm, such as :math:`-I` in two
    dimensions. :math:`P^{1/L}` comes from the eigendecomposition of :math:`P`.

    Factors with singular values :math:`\sigma_j(A)^{1/L}` exist for *every*
    :math:`A = RP` (take :math:`A_L = R P^{1/L}` and :math:`A_i = P^{1/L}` for
    :math:`i < L`); what needs :math:`\det A > 0` is the evenly spread
    factorisation above, whose factors are within :math:`O(1/L)` of the
    identity because :math:`R^{1/L}` is a real rotation by angles at most
    :math:`\pi/L`.

    The factors are balanced in the sense of
    :func:`resnet_theory.deep_linear.imbalances`:
    :math:`A_{i+1}^\top A_{i+1} = R^{i/L} P^{2/L} R^{-i/L} = A_i A_i^\top`.

    Examples
    --------
    The rotation by :math:`\pi` in the plane, :math:`-I`, is the square of a
    rotation by :math:`\pi/2`:

    >>> import numpy as np
    >>> from resnet_theory.deep_linear import balanced_factorization, product
    >>> factors = balanced_factorization(-np.eye(2), 2)
    >>> np.round(factors[0], 6) + 0.0
    array([[ 0., -1.],
           [ 1.,  0.]])
    >>> bool(np.allclose(product(factors), -np.eye(2)))
    True
    """
    a = _square(a, "a")
    depth = _v.positive_int(depth, "depth")
    sign, _ = np.linalg.slogdet(a)
    if sign <= 0:
        raise ValueError("a must have a positive determinant (det a > 0): the evenly spread "
                         "factorisation A_i = R^(i/L) P^(1/L) R^(-(i-1)/L) needs a real L-th "
                         "root of the rotation part R (a balanced factorisation with a "
                         "reflection in one factor exists for any a, but is not computed here)")
    rotation, positive = scipy.linalg.polar(a)
    values, vectors = np.linalg.eigh((positive + positive.T) / 2)
    root = (vectors * np.maximum(values, 0.0) ** (1.0 / depth)) @ vectors.T
    q, planes = rotation_planes(rotation)
    powers = [rotation_power(q, planes, k / depth) for k in range(depth + 1)]
    return np.stack([powers[i] @ root @ powers[i - 1].T for i in range(1, depth + 1)])


# --- training -------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeepLinearRun:
    r"""Trajectory of :func:`resnet_theory.deep_linear.gradient_descent` or
    :func:`resnet_theory.deep_linear.power_projection`.

    Attributes
    ----------
    losses : ndarray, shape (T + 1,)
        :math:`\ell(\Theta^{(t)})` for :math:`t = 0, \dots, T` (without any penalty).
    distances : ndarray, shape (T + 1,)
        :math:`\mathcal{R}(t) = \max_i \|\Theta^{(t)}_i - I\|_2`.
    thetas : ndarray, shape (L, d, d)
        The last iterate :math:`\Theta^{(T)}`.
    step_size : float
        :math:`\eta`.
    iterates : ndarray, shape (T + 1, L, d, d), or None
        Every iterate, if requested with ``keep_iterates=True``.
    """

    losses: np.ndarray
    distances: np.ndarray
    thetas: np.ndarray
    step_size: float
    iterates: np.ndarray | None = None

    def iterations_to(self, tolerance):
        """The first :math:`t` with :math:`\\ell(\\Theta^{(t)}) \\le` ``tolerance``, or None."""
        return _first_hit(self.losses, tolerance)


def _first_hit(losses, tolerance):
    hits = np.flatnonzero(losses <= tolerance)
    return int(hits[0]) if hits.size else None


def _check_finite_run(value, start, t, eta, what="gradient descent"):
    if not np.isfinite(value) or value > _BLOWUP * (1.0 + start):
        raise DivergenceError(
            f"{what} diverged at step {t} (loss {value:.3g} from {start:.3g}): "
            f"the step size step_size={eta:g} is too large for this target and depth"
        )


def _training_arguments(phi, depth, step_size, steps):
    phi = _square(phi, "phi")
    depth = _v.positive_int(depth, "depth")
    eta = _v.positive(step_size, "step_size")
    steps = _step_count(steps)
    return phi, depth, eta, steps


def gradient_descent(phi, depth, step_size, steps, *, regularization=0.0, keep_iterates=False):
    r"""Gradient descent on a deep linear network, starting from the identity.

    Parameters
    ----------
    phi : array_like, shape (d, d)
        The target :math:`\Phi`.
    depth : int
        The number of layers :math:`L`.
    step_size : float
        :math:`\eta > 0`.
    steps : int
        The number of updates :math:`T \ge 0`.
    regularization : float, optional
        :math:`\kappa \ge 0`, the weight of the penalty
        :math:`\tfrac{\kappa}{2} \sum_i \|\Theta_i - I\|_F^2` towards the identity.
    keep_iterates : bool, optional
        Store every iterate in the result (memory :math:`T L d^2`).

    Returns
    -------
    DeepLinearRun

    Raises
    ------
    ValueError
        If an argument is out of range or has the wrong shape.
    TypeError
        If ``depth`` or ``steps`` is not an integer.
    DivergenceError
        If the loss blows up; the message names the step size.

    Notes
    -----
    :math:`\Theta_i^{(0)} = I` and

    .. math::

        \Theta_i^{(t+1)} = \Theta_i^{(t)} - \eta \Bigl[
            (\Theta^{(t)}_{i+1:L})^\top (\Theta^{(t)}_{1:L} - \Phi) (\Theta^{(t)}_{1:i-1})^\top
            + \kappa (\Theta^{(t)}_i - I) \Bigr] .

    Each step costs :math:`O(L d^3)`
    (:func:`resnet_theory.deep_linear.gradient`).

    Examples
    --------
    A target close to the identity is learned at a linear rate:

    >>> import numpy as np
    >>> from resnet_theory.deep_linear import gradient_descent
    >>> run = gradient_descent(np.diag([1.3, 0.8]), depth=5, step_size=0.1, steps=100)
    >>> f"{run.losses[0]:.3f}", bool(run.losses[-1] < 1e-10)
    ('0.065', True)
    """
    phi, depth, eta, steps = _training_arguments(phi, depth, step_size, steps)
    kappa = _v.nonnegative(regularization, "regularization")
    d = phi.shape[0]
    thetas = np.broadcast_to(np.eye(d), (depth, d, d)).copy()
    losses, distances = np.empty(steps + 1), np.empty(steps + 1)
    iterates = np.empty((steps + 1, depth, d, d)) if keep_iterates else None
    with np.errstate(all="ignore"):
        for t in range(steps + 1):
            prefix, suffix = partial_products(thetas)
            error = prefix[-1] - phi
            losses[t] = 0.5 * float(np.sum(error**2))
            _check_finite_run(losses[t], losses[0], t, eta)
            distances[t] = distance_to_identity(thetas)
            if keep_iterates:
                iterates[t] = thetas
            if t == steps:
                break
            grad = np.swapaxes(suffix[1:], 1, 2) @ error @ np.swapaxes(prefix[:-1], 1, 2)
            if kappa:
                grad += kappa * (thetas - np.eye(d))
            thetas = thetas - eta * grad
            if not np.all(np.isfinite(thetas)):
                _check_finite_run(np.inf, losses[0], t + 1, eta)
    return DeepLinearRun(losses, distances, thetas, eta, iterates)


@dataclass(frozen=True)
class EigenvalueRun:
    r"""Trajectory of :func:`resnet_theory.deep_linear.eigenvalue_recursion`.

    Attributes
    ----------
    eigenvalues : ndarray, shape (T + 1, k)
        :math:`\hat\lambda_j^{(t)}`, the common eigenvalue of every layer on the
        :math:`j`-th eigenvector of :math:`\Phi`.
    losses : ndarray, shape (T + 1,)
        :math:`\tfrac12 \sum_j \bigl((\hat\lambda_j^{(t)})^L - \mu_j\bigr)^2`.
    distances : ndarray, shape (T + 1,)
        :math:`\max_j |\hat\lambda_j^{(t)} - 1|`, which equals
        :math:`\max_i \|\Theta_i^{(t)} - I\|_2`.
    step_size : float
        :math:`\eta`.
    """

    eigenvalues: np.ndarray
    losses: np.ndarray
    distances: np.ndarray
    step_size: float

    def iterations_to(self, tolerance):
        """The first :math:`t` with loss at most ``tolerance``, or None."""
        return _first_hit(self.losses, tolerance)


def eigenvalue_recursion(eigenvalues, depth, step_size, steps, *, regularization=0.0):
    r"""The scalar recursion that gradient descent follows for a symmetric target.

    Parameters
    ----------
    eigenvalues : array_like, shape (k,)
        The eigenvalues :math:`\mu_1, \dots, \mu_k` of the symmetric target :math:`\Phi`.
    depth : int
        :math:`L`.
    step_size : float
        :math:`\eta > 0`.
    steps : int
        :math:`T \ge 0`.
    regularization : float, optional
        :math:`\kappa \ge 0`, the weight of the penalty towards the identity (as
        in :func:`resnet_theory.deep_linear.gradient_descent`).

    Returns
    -------
    EigenvalueRun

    Raises
    ------
    ValueError
        If an argument is out of range or not finite.
    TypeError
        If ``depth`` or ``steps`` is not an integer.
    DivergenceError
        If the recursion blows up; the message names the step size.

    Notes
    -----
    If :math:`\Phi = U \operatorname{diag}(\mu) U^\top` and every layer is
    :math:`U \operatorname{diag}(\hat\lambda) U^\top`, then every layer receives the
    same gradient, also of that form, so the layers stay equal and the dynamics
    splits into the independent scalar recursions

    .. math::

        \hat\lambda^{(t+1)} = \hat\lambda^{(t)}
        + \eta \bigl(\hat\lambda^{(t)}\bigr)^{L-1} \bigl(\mu - (\hat\lambda^{(t)})^L\bigr)
        - \eta \kappa \bigl(\hat\lambda^{(t)} - 1\bigr),
        \qquad \hat\lambda^{(0)} = 1 .

    Examples
    --------
    >>> from resnet_theory.deep_linear import eigenvalue_recursion
    >>> run = eigenvalue_recursion([2.0, 0.5], depth=4, step_size=0.1, steps=300)
    >>> [round(float(x), 6) for x in run.eigenvalues[-1] ** 4]
    [2.0, 0.5]
    """
    mu = _real_array(eigenvalues, "eigenvalues", ndim=1)
    if mu.size == 0:
        raise ValueError("eigenvalues must hold at least one eigenvalue")
    depth = _v.positive_int(depth, "depth")
    eta = _v.positive(step_size, "step_size")
    steps = _step_count(steps)
    kappa = _v.nonnegative(regularization, "regularization")
    lam = np.ones((steps + 1, mu.size))
    losses = np.empty(steps + 1)
    with np.errstate(all="ignore"):
        for t in range(steps + 1):
            power = lam[t] ** depth
            losses[t] = 0.5 * float(np.sum((power - mu) ** 2))
            _check_finite_run(losses[t], losses[0], t, eta, "the eigenvalue recursion")
            if t < steps:
                lam[t + 1] = (lam[t] + eta * lam[t] ** (depth - 1) * (mu - power)
                              - eta * kappa * (lam[t] - 1))
    return EigenvalueRun(lam, losses, np.max(np.abs(lam - 1), axis=1), eta)


def power_projection(phi, depth, step_size, steps, *, gamma, keep_iterates=False):
    r"""Power projection: gradient step, margin projection, balanced refactorisation.

    Parameters
    ----------
    phi : array_like, shape (d, d)
        The target :math:`\Phi`, meant to have margin at least ``gamma``.
    depth : int
        :math:`L`.
    step_size : float
        :math:`\eta > 0`.
    steps : int
        :math:`T \ge 0`.
    gamma : float
        The margin :math:`\gamma > 0` enforced on the product after each step.
    keep_iterates : bool, optional
        Store every iterate in the result.

    Returns
    -------
    DeepLinearRun

    Raises
    ------
    ValueError
        If an argument is out of range or has the wrong shape.
    TypeError
        If ``depth`` or ``steps`` is not an integer.
    DivergenceError
        If the loss blows up; the message names the step size.

    Notes
    -----
    Starting from :math:`\Theta_i^{(0)} = I`, each iteration

    1. takes a gradient step :math:`\Theta_i' = \Theta_i - \eta \nabla_{\Theta_i} \ell`
       in every layer;
    2. projects the product :math:`\Theta'_{1:L}` onto the matrices with margin
       :math:`\gamma` (:func:`resnet_theory.deep_linear.project_margin`), which
       have positive determinant;
    3. replaces the layers by the balanced factorisation of the projected
       product (:func:`resnet_theory.deep_linear.balanced_factorization`).

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.deep_linear import power_projection
    >>> phi = np.array([[1.0, 1.5], [-1.5, 1.0]])  # margin 1, a rotation-scaling
    >>> run = power_projection(phi, depth=4, step_size=0.05, steps=300, gamma=0.5)
    >>> bool(run.losses[-1] < 1e-8)
    True
    """
    phi, depth, eta, steps = _training_arguments(phi, depth, step_size, steps)
    gamma = _v.positive(gamma, "gamma")
    d = phi.shape[0]
    thetas = np.broadcast_to(np.eye(d), (depth, d, d)).copy()
    losses, distances = np.empty(steps + 1), np.empty(steps + 1)
    iterates = np.empty((steps + 1, depth, d, d)) if keep_iterates else None
    with np.errstate(all="ignore"):
        for t in range(steps + 1):
            losses[t] = loss(thetas, phi)
            distances[t] = distance_to_identity(thetas)
            if keep_iterates:
                iterates[t] = thetas
            if t == steps:
                break
            stepped = thetas - eta * gradient(thetas, phi)
            prefix, _ = partial_products(stepped)
            stepped_loss = 0.5 * float(np.sum((prefix[-1] - phi) ** 2))
            _check_finite_run(stepped_loss, losses[0], t + 1, eta, "power projection")
            projected = project_margin(prefix[-1], gamma)
            thetas = balanced_factorization(projected, depth)
    return DeepLinearRun(losses, distances, thetas, eta, iterates)

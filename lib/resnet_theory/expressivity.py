r"""Finite-sample expressivity of residual networks: Hardt and Ma's construction.

Given :math:`n` inputs :math:`x_1, \dots, x_n \in \mathbb{R}^d` of unit norm
with distinct positions and labels in :math:`\{0, \dots, r-1\}`, the network

.. math::

    h_0 = A_0 x,

    h_j = h_{j-1} + V_j \operatorname{ReLU}(U_j h_{j-1} + b_j) \quad (j = 1..\ell),

    \hat y = V_{\ell+1} \operatorname{ReLU}(U_{\ell+1} h_\ell + b_{\ell+1}),

with a random first layer :math:`A_0 \in \mathbb{R}^{k \times d}`, residual
blocks of width :math:`k`, :math:`\ell = \lceil n/k \rceil` blocks and an output
block of size :math:`r \times k` and :math:`r \times r`, outputs exactly the
one-hot vector of each training label (Theorem 3.2 of Hardt and Ma). Every block
moves (at most) :math:`k` points to their *surrogate label vectors*
:math:`q_c` (random unit vectors of :math:`\mathbb{R}^k`) and leaves every other
point where it is; the output block turns :math:`q_c` into :math:`e_c`. With
:math:`k = O(\log n)` the network has :math:`O(n \log n + r^2)` parameters in
its blocks (plus :math:`kd` in the first layer).

Reference: M. Hardt and T. Ma (2017), Identity matters in deep learning, ICLR 2017,
arXiv:1611.04231, Section 3.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

import numpy as np

from . import _validation as _v

__all__ = [
    "ResidualInterpolant",
    "default_width",
    "min_squared_distance",
    "selection_gaps",
    "residual_block",
    "build_residual_network",
    "fit_residual_network",
]

#: Tolerance on the norm of each input row.
UNIT_NORM_TOL = 1e-6
#: Gaps (see :func:`selection_gaps`) must exceed this for the fit to be exact.
MIN_GAP = 1e-8
_CHUNK = 1024


def min_squared_distance(x) -> float:
    r"""The separation :math:`\rho = \min_{i \ne j} \|x_i - x_j\|^2` of the rows of ``x``.

    Parameters
    ----------
    x : array_like, shape (n, d)
        At least two rows.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If ``x`` is not a finite two-dimensional array with at least two rows.

    Notes
    -----
    Computed from the Gram matrix in blocks of rows, with cost
    :math:`O(n^2 d)` and memory :math:`O(n)` per block.

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.expressivity import min_squared_distance
    >>> print(f"{min_squared_distance(np.eye(3)):.4f}")
    2.0000
    """
    x = _v.finite_array(x, "x", ndim=2)
    if x.shape[0] < 2:
        raise ValueError(f"x must have at least two rows, got {x.shape[0]}")
    sq = np.sum(x**2, axis=1)
    best = np.inf
    n = x.shape[0]
    for start in range(0, n, _CHUNK):
        stop = min(start + _CHUNK, n)
        dist = sq[start:stop, None] + sq[None, :] - 2.0 * x[start:stop] @ x.T
        dist[np.arange(stop - start), np.arange(start, stop)] = np.inf
        best = min(best, float(dist.min()))
    return max(best, 0.0)


def selection_gaps(points, surrogates) -> np.ndarray:
    r"""How well a ReLU unit aimed at each point can single it out.

    Parameters
    ----------
    points : array_like, shape (n, k)
        The projected inputs :math:`\alpha_i = A_0 x_i`.
    surrogates : array_like, shape (r, k)
        The surrogate label vectors :math:`q_c`.

    Returns
    -------
    ndarray, shape (n,)
        :math:`g_i = \|\alpha_i\|^2 - \max\bigl(\max_{j \ne i} \langle \alpha_i, \alpha_j\rangle,
        \max_c \langle \alpha_i, q_c\rangle\bigr)`.

    Raises
    ------
    ValueError
        On shapes that do not match or non-finite entries.

    Notes
    -----
    The construction needs :math:`g_i > 0` for every :math:`i`: then the unit
    :math:`\operatorname{ReLU}(\langle \alpha_i, h\rangle - \theta_i)` with the
    threshold :math:`\theta_i = \|\alpha_i\|^2 - g_i/2` is positive at
    :math:`h = \alpha_i` and zero at every other point the network ever holds
    (the other projected inputs and the surrogates). For unit vectors
    :math:`\|\alpha_i\|^2 - \langle\alpha_i, \alpha_j\rangle = \|\alpha_i - \alpha_j\|^2/2`,
    so the gaps are half the squared separations; the random projection only
    approximately keeps the norms, which is why the gaps are checked directly.

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.expressivity import selection_gaps
    >>> selection_gaps(np.eye(2), np.array([[0.6, 0.8]])).round(4).tolist()
    [0.4, 0.2]
    """
    points = _v.finite_array(points, "points", ndim=2)
    surrogates = _v.finite_array(surrogates, "surrogates", shape=(None, points.shape[1]))
    n = points.shape[0]
    sq = np.sum(points**2, axis=1)
    worst = np.max(points @ surrogates.T, axis=1) if surrogates.shape[0] else np.full(n, -np.inf)
    for start in range(0, n, _CHUNK):
        stop = min(start + _CHUNK, n)
        inner = points[start:stop] @ points.T
        inner[np.arange(stop - start), np.arange(start, stop)] = -np.inf
        if n > 1:
            worst[start:stop] = np.maximum(worst[start:stop], inner.max(axis=1))
    return sq - worst


def residual_block(h, u, b, v) -> np.ndarray:
    r"""One residual block :math:`h \mapsto h + V \operatorname{ReLU}(U h + b)`, on rows.

    Parameters
    ----------
    h : array_like, shape (n, k)
        One point per row.
    u : array_like, shape (m, k)
    b : array_like, shape (m,)
    v : array_like, shape (k, m)

    Returns
    -------
    ndarray, shape (n, k)

    Raises
    ------
    ValueError
        On shapes that do not match or non-finite entries.

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.expressivity import residual_block
    >>> h = np.array([[1.0], [-1.0]])
    >>> residual_block(h, np.eye(1), np.zeros(1), np.eye(1)).ravel().tolist()
    [2.0, -1.0]
    """
    h = _v.finite_array(h, "h", ndim=2)
    u = _v.finite_array(u, "u", shape=(None, h.shape[1]))
    b = _v.finite_array(b, "b", shape=(u.shape[0],))
    v = _v.finite_array(v, "v", shape=(h.shape[1], u.shape[0]))
    return h + np.maximum(h @ u.T + b, 0.0) @ v.T


@dataclass(frozen=True)
class ResidualInterpolant:
    r"""A residual network built by :func:`resnet_theory.expressivity.fit_residual_network`.

    Attributes
    ----------
    projection : numpy.ndarray, shape (k, d)
        The first layer :math:`A_0`.
    block_u : numpy.ndarray, shape (depth, k, k)
        :math:`U_1, \dots, U_\ell`.
    block_b : numpy.ndarray, shape (depth, k)
        :math:`b_1, \dots, b_\ell`.
    block_v : numpy.ndarray, shape (depth, k, k)
        :math:`V_1, \dots, V_\ell`.
    surrogates : numpy.ndarray, shape (r, k)
        The surrogate label vectors :math:`q_0, \dots, q_{r-1}`.
    output_u : numpy.ndarray, shape (r, k)
    output_b : numpy.ndarray, shape (r,)
    output_v : numpy.ndarray, shape (r, r)
        The output block :math:`\hat y = V \operatorname{ReLU}(U h + b)`.
    separation : float
        :math:`\rho`, the smallest squared distance between two training inputs.
    margin : float
        The smallest selection gap (:func:`resnet_theory.expressivity.selection_gaps`)
        after the projection; positive.
    draws : int
        How many random draws of the projection and surrogates were needed.
    """

    projection: np.ndarray
    block_u: np.ndarray
    block_b: np.ndarray
    block_v: np.ndarray
    surrogates: np.ndarray
    output_u: np.ndarray
    output_b: np.ndarray
    output_v: np.ndarray
    separation: float
    margin: float
    draws: int

    @property
    def width(self) -> int:
        """:math:`k`, the width of the residual blocks."""
        return self.projection.shape[0]

    @property
    def input_dim(self) -> int:
        """:math:`d`."""
        return self.projection.shape[1]

    @property
    def depth(self) -> int:
        r""":math:`\ell`, the number of residual blocks."""
        return self.block_u.shape[0]

    @property
    def num_classes(self) -> int:
        """:math:`r`."""
        return self.surrogates.shape[0]

    @property
    def num_block_parameters(self) -> int:
        r""":math:`\ell (2k^2 + k) + rk + r + r^2`: the residual and output blocks."""
        return int(
            self.block_u.size + self.block_b.size + self.block_v.size
            + self.output_u.size + self.output_b.size + self.output_v.size
        )

    @property
    def num_parameters(self) -> int:
        r"""All parameters: the first layer (:math:`kd`) and the blocks."""
        return int(self.projection.size) + self.num_block_parameters

    def hidden(self, x, *, blocks=None) -> np.ndarray:
        """The representation after the first ``blocks`` residual blocks (all by default)."""
        x = _v.finite_array(x, "x", shape=(None, self.input_dim))
        blocks = self.depth if blocks is None else int(blocks)
        if not 0 <= blocks <= self.depth:
            raise ValueError(f"blocks must be between 0 and {self.depth}, got {blocks}")
        h = x @ self.projection.T
        for j in range(blocks):
            h = h + np.maximum(h @ self.block_u[j].T + self.block_b[j], 0.0) @ self.block_v[j].T
        return h

    def forward(self, x) -> np.ndarray:
        """The network's output vectors, shape (n, r) (one-hot on the training inputs)."""
        h = self.hidden(x)
        return np.maximum(h @ self.output_u.T + self.output_b, 0.0) @ self.output_v.T

    def predict(self, x) -> np.ndarray:
        """Predicted labels: the index of the largest output, shape (n,)."""
        return np.argmax(self.forward(x), axis=1)


def default_width(n, num_classes=2) -> int:
    r"""The default block width :math:`k = \lceil 16 \log \max(n, 2) \rceil`, at least
    :math:`\lceil 24 \log r \rceil`.

    Parameters
    ----------
    n : int
        Number of training points.
    num_classes : int, optional
        :math:`r`.

    Returns
    -------
    int

    Raises
    ------
    ValueError, TypeError
        If ``n`` or ``num_classes`` is not a positive integer.

    Notes
    -----
    :math:`k = O(\log n)` as in the theorem; the constant 16 is an empirical
    choice that makes the random projection of well-separated data (for example
    random points on a high-dimensional sphere) keep every selection gap
    positive at the first draw in the book's experiments (the fit checks the gaps
    and re-draws when one fails). The surrogate label vectors need pairwise inner
    products below 1/2; by the spherical-cap bound
    :math:`P(\langle q_i, q_j\rangle \ge 1/2) \le e^{-k/8}` and a union bound
    over the fewer than :math:`r^2/2` pairs, :math:`k \ge 24 \log r` gives them
    with probability at least :math:`1 - 1/(2r)`, so the width is at least
    :math:`\lceil 24 \log r \rceil` (natural logarithm). Hardt and Ma's threshold
    :math:`k > 4 \log r` is too small: for :math:`r = 100`, :math:`k = 19` the
    expected number of pairs with inner product at least 1/2 exceeds 1.

    Examples
    --------
    >>> from resnet_theory.expressivity import default_width
    >>> default_width(1000)
    111
    """
    n = _v.positive_int(n, "n")
    num_classes = _v.positive_int(num_classes, "num_classes")
    return max(math.ceil(16 * math.log(max(n, 2))), math.ceil(24 * math.log(num_classes)))


def _check_labels(labels, n):
    labels = np.asarray(labels)
    if labels.ndim != 1 or labels.shape[0] != n:
        raise ValueError(f"labels must have shape ({n},), one per row of x, got {labels.shape}")
    if labels.dtype == bool or not (
        np.issubdtype(labels.dtype, np.integer)
        or (labels.dtype == object and all(isinstance(c, numbers.Integral) for c in labels))
    ):
        raise ValueError(f"labels must be integers 0..r-1, got dtype {labels.dtype}")
    labels = labels.astype(np.int64)
    if labels.min() < 0:
        raise ValueError(f"labels must be non-negative integers, got {labels.min()}")
    return labels


def _draw(rng, k, d, r):
    """A first layer and surrogates: isometric if k >= d, Gaussian JL map otherwise."""
    if k >= d:
        projection = np.linalg.qr(rng.standard_normal((k, d)))[0]
    else:
        projection = rng.standard_normal((k, d)) / np.sqrt(k)
    q = rng.standard_normal((r, k))
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return projection, q


def _check_inputs(x, labels):
    """Validate the training set; return (x, labels, separation)."""
    x = _v.finite_array(x, "x", ndim=2)
    n = x.shape[0]
    if n < 2:
        raise ValueError(f"x must have at least two rows (training points), got {n}")
    norms = np.linalg.norm(x, axis=1)
    bad = np.flatnonzero(np.abs(norms - 1.0) > UNIT_NORM_TOL)
    if bad.size:
        raise ValueError(
            f"x must have rows of unit norm; row {bad[0]} has norm {norms[bad[0]]:.6g} "
            f"({bad.size} rows off by more than {UNIT_NORM_TOL})"
        )
    labels = _check_labels(labels, n)
    separation = min_squared_distance(x)
    if separation <= 1e-12:
        raise ValueError(
            "x must not contain duplicate rows (the separation rho = min ||x_i - x_j||^2 is 0)"
        )
    return x, labels, separation


def _failed_condition(alpha, q):
    """The construction's conditions on one draw: ('', gaps, max_q) or (reason, ...)."""
    r = q.shape[0]
    max_q = float(np.max(q @ q.T - 2.0 * np.eye(r))) if r > 1 else -1.0
    if max_q >= 0.5:
        return f"surrogates with inner product {max_q:.3f} >= 1/2", None, max_q
    gaps = selection_gaps(alpha, q)
    margin = float(gaps.min())
    if margin <= MIN_GAP:
        return f"smallest selection gap {margin:.3g} <= {MIN_GAP}", gaps, max_q
    return "", gaps, max_q


def _assemble(projection, q, alpha, gaps, max_q, labels, separation, draws):
    """The blocks and the read-out of the construction, given a draw that passed."""
    n, k = alpha.shape
    r = q.shape[0]
    depth = math.ceil(n / k)
    block_u = np.zeros((depth, k, k))
    block_b = np.full((depth, k), -1.0)
    block_v = np.zeros((depth, k, k))
    for j in range(depth):
        idx = np.arange(j * k, min((j + 1) * k, n))
        m = idx.size
        a = alpha[idx]
        g = gaps[idx]
        block_u[j, :m] = a
        block_b[j, :m] = -(np.sum(a**2, axis=1) - g / 2.0)
        block_v[j, :, :m] = ((q[labels[idx]] - a) * (2.0 / g)[:, None]).T
    theta = (1.0 + max_q) / 2.0
    return ResidualInterpolant(
        projection=projection,
        block_u=block_u,
        block_b=block_b,
        block_v=block_v,
        surrogates=q,
        output_u=q.copy(),
        output_b=np.full(r, -theta),
        output_v=np.eye(r) / (1.0 - theta),
        separation=separation,
        margin=float(gaps.min()),
        draws=draws,
    )


def build_residual_network(x, labels, *, projection, surrogates) -> ResidualInterpolant:
    r"""The construction of Theorem 3.2 for a given first layer and given surrogates.

    The deterministic part of :func:`resnet_theory.expressivity.fit_residual_network`:
    no random draw, no second attempt. Use it to test one draw of
    :math:`(A_0, q)` against the whole condition of the construction.

    Parameters
    ----------
    x : array_like, shape (n, d)
        Training inputs, one per row, each of unit Euclidean norm (within
        ``1e-6``), no two equal; :math:`n \ge 2`.
    labels : array_like of int, shape (n,)
        Class labels in :math:`\{0, \dots, r-1\}`.
    projection : array_like, shape (k, d)
        The first layer :math:`A_0`.
    surrogates : array_like, shape (r, k)
        The surrogate label vectors :math:`q_0, \dots, q_{r-1}`, one per row,
        each of unit norm (within ``1e-6``); ``r`` must exceed every label.

    Returns
    -------
    ResidualInterpolant
        ``draws`` is 1.

    Raises
    ------
    ValueError
        On invalid ``x`` or ``labels`` (as in
        :func:`resnet_theory.expressivity.fit_residual_network`), on shapes that
        do not match, on surrogates that are not unit vectors or fewer than the
        classes, and when the draw fails the construction's condition: two
        surrogates with inner product at least :math:`1/2`, or a selection gap
        :math:`g_i` (:func:`resnet_theory.expressivity.selection_gaps`, data and
        surrogates together) that is not positive.

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.expressivity import build_residual_network
    >>> x = np.eye(3)
    >>> build_residual_network(x, [0, 1, 0], projection=np.eye(3),
    ...                        surrogates=np.array([[1.0, 0.0, 0.0],
    ...                                             [0.0, 0.0, -1.0]]))
    Traceback (most recent call last):
    ...
    ValueError: the draw fails the construction's condition: smallest selection gap 0 <= 1e-08
    >>> s = np.sqrt(0.5)
    >>> net = build_residual_network(x, [0, 1, 0], projection=np.eye(3),
    ...                              surrogates=np.array([[-s, -s, 0.0],
    ...                                                   [s, -s, 0.0]]))
    >>> net.predict(x).tolist(), net.depth
    ([0, 1, 0], 1)
    """
    x, labels, separation = _check_inputs(x, labels)
    n, d = x.shape
    projection = _v.finite_array(projection, "projection", shape=(None, d))
    k = projection.shape[0]
    q = _v.finite_array(surrogates, "surrogates", shape=(None, k))
    if q.shape[0] <= labels.max():
        raise ValueError(
            f"surrogates must have a row for every class 0..{labels.max()}, got {q.shape[0]}"
        )
    q_norms = np.linalg.norm(q, axis=1)
    if np.any(np.abs(q_norms - 1.0) > UNIT_NORM_TOL):
        raise ValueError("surrogates must have rows of unit norm")
    alpha = x @ projection.T
    reason, gaps, max_q = _failed_condition(alpha, q)
    if reason:
        raise ValueError(f"the draw fails the construction's condition: {reason}")
    return _assemble(projection, q, alpha, gaps, max_q, labels, separation, 1)


def fit_residual_network(x, labels, *, rng, width=None, max_draws=20) -> ResidualInterpolant:
    r"""Build a residual network that classifies every training point correctly.

    Parameters
    ----------
    x : array_like, shape (n, d)
        Training inputs, one per row, each of unit Euclidean norm (within
        ``1e-6``), no two equal; :math:`n \ge 2`.
    labels : array_like of int, shape (n,)
        Class labels in :math:`\{0, \dots, r-1\}`, :math:`r` = ``labels.max() + 1``.
    rng : numpy.random.Generator
        Draws the projection :math:`A_0` and the surrogates :math:`q_c`.
    width : int, optional
        The block width :math:`k`; by default
        :func:`resnet_theory.expressivity.default_width`.
    max_draws : int, optional
        How many times to re-draw :math:`A_0` and the surrogates before giving up.

    Returns
    -------
    ResidualInterpolant
        A network with ``predict(x) == labels`` and one-hot ``forward(x)``.

    Raises
    ------
    ValueError
        If ``x`` has fewer than two rows, non-finite entries, rows that are not of
        unit norm or duplicate rows; if ``labels`` are not integers, negative or
        of the wrong length; if ``width`` or ``max_draws`` is not positive; or if
        ``max_draws`` random draws all fail the separation check (the width is
        too small for these points: the message says by how much).
    TypeError
        If ``rng`` is not a :class:`numpy.random.Generator`.

    Notes
    -----
    Step by step, for the projected points :math:`\alpha_i = A_0 x_i`:

    1. *Surrogates.* Draw unit :math:`q_0, \dots, q_{r-1} \in \mathbb{R}^k`
       with :math:`\langle q_c, q_{c'}\rangle < 1/2` for :math:`c \ne c'`.
    2. *Separation check.* Every selection gap
       :math:`g_i` (:func:`resnet_theory.expressivity.selection_gaps`) must be
       positive (and above round-off); otherwise draw again. With
       :math:`k \ge d` the first layer is an isometry, so only the surrogates
       can spoil it; with :math:`k < d` it is a Gaussian map scaled by
       :math:`1/\sqrt{k}` (Johnson-Lindenstrauss).
    3. *Blocks.* Block :math:`j` takes the next (at most) :math:`k` points
       :math:`S_j` and sets :math:`U_j` to have rows :math:`\alpha_i`,
       :math:`b_j` entries :math:`-\theta_i = -(\|\alpha_i\|^2 - g_i/2)`, and
       :math:`V_j` columns :math:`2 (q_{y_i} - \alpha_i) / g_i`, for
       :math:`i \in S_j`. Then :math:`\operatorname{ReLU}(U_j h + b_j)` is
       :math:`(g_i/2) e_i` at :math:`h = \alpha_i`, :math:`i \in S_j` (so
       that point moves exactly to :math:`q_{y_i}`), and zero at every other
       :math:`\alpha_{i'}` and at every surrogate (so everything else stays).
       Unused rows of the last block are zero with bias :math:`-1`.
    4. *Output.* :math:`U_{\ell+1}` has rows :math:`q_c`, bias
       :math:`-\theta` with :math:`\theta = (1 + \max_{c\ne c'}\langle q_c, q_{c'}\rangle)/2`,
       and :math:`V_{\ell+1} = I_r / (1 - \theta)`, so :math:`q_c \mapsto e_c`.

    The cost is :math:`O(n^2 k + n k d)` time (the gap check) and
    :math:`O(n k)` memory beyond the parameters.

    References
    ----------
    M. Hardt and T. Ma, Identity matters in deep learning, ICLR 2017, Theorem 3.2.

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.expressivity import fit_residual_network
    >>> rng = np.random.default_rng(0)
    >>> x = rng.standard_normal((200, 50))
    >>> x /= np.linalg.norm(x, axis=1, keepdims=True)
    >>> labels = rng.integers(0, 3, size=200)
    >>> net = fit_residual_network(x, labels, rng=rng)
    >>> bool(np.all(net.predict(x) == labels)), net.width, net.depth
    (True, 85, 3)
    """
    rng = _v.generator(rng)
    x, labels, separation = _check_inputs(x, labels)
    d = x.shape[1]
    r = int(labels.max()) + 1
    width = default_width(x.shape[0], r) if width is None else _v.positive_int(width, "width")
    max_draws = _v.positive_int(max_draws, "max_draws")
    k = width

    last_reason = ""
    for draws in range(1, max_draws + 1):
        projection, q = _draw(rng, k, d, r)
        alpha = x @ projection.T
        last_reason, gaps, max_q = _failed_condition(alpha, q)
        if not last_reason:
            return _assemble(projection, q, alpha, gaps, max_q, labels, separation, draws)
    raise ValueError(
        f"width k = {k} is too small to keep these points separated after the random "
        f"projection ({max_draws} draws; last: {last_reason}); increase width"
    )

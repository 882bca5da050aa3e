r"""A smooth invertible map written as a composition of near-identity maps.

Let :math:`h : \mathbb{R}^d \to \mathbb{R}^d` be differentiable and invertible,
with :math:`\det Dh(0) > 0`. For a scale :math:`a \in (0, 1]` put

.. math::

    g_a(x) = h(0) + \frac{h(a x) - h(0)}{a}, \qquad
    g_0(x) = h(0) + Dh(0)\, x = \lim_{a \to 0} g_a(x),

so :math:`g_1 = h` and :math:`g_a` is :math:`h` seen through a magnifying glass of
power :math:`1/a` around the origin. Given scales
:math:`0 = a_0 < a_1 < \dots < a_m = 1`, the layers

.. math::

    h_i = g_{a_i} \circ g_{a_{i-1}}^{-1},

    g_a^{-1}(y) = \frac{h^{-1}\bigl(h(0) + a\,(y - h(0))\bigr)}{a},

    g_0^{-1}(y) = Dh(0)^{-1} (y - h(0)),

telescope: :math:`h_i \circ \dots \circ h_1 \circ g_0 = g_{a_i}` and in particular
:math:`h_m \circ \dots \circ h_1 \circ g_0 = h`. The affine first map :math:`g_0`
is a translation (which is free: :math:`\|(x + b) - x\|_L = 0`) after the linear
map :math:`Dh(0)`, which :func:`resnet_theory.near_identity.near_identity_factors`
splits into near-identity matrices. Consecutive scales close to each other make
every :math:`h_i` close to the identity: the Jacobian of a layer at the image of
:math:`x` is :math:`Dh_i = Dh(a_i x)\, Dh(a_{i-1} x)^{-1}`. The module also
estimates the Lipschitz seminorm :math:`\|f - \mathrm{Id}\|_L` on a domain.

Reference: P. L. Bartlett, S. N. Evans and P. M. Long (2018), Representing smooth
functions as compositions of near-identity functions with implications for deep
network optimization, arXiv:1804.05012.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

import numpy as np

from . import _validation as _v
from .near_identity import _real_array, near_identity_factors

__all__ = [
    "SCHEDULES",
    "scaling_schedule",
    "finite_difference_jacobian",
    "NearIdentityLayers",
    "near_identity_layers",
    "layer_seminorm_bound",
    "LipschitzEstimate",
    "lipschitz_seminorm",
]

#: The named schedules of scales understood by :func:`scaling_schedule`.
SCHEDULES = ("geometric", "uniform")


def scaling_schedule(depth, schedule="geometric", *, first=None) -> np.ndarray:
    r"""Scales :math:`0 < a_1 < \dots < a_m = 1` for :func:`near_identity_layers`.

    Parameters
    ----------
    depth : int
        The number :math:`m \ge 1` of non-linear layers.
    schedule : {"geometric", "uniform"}
        ``"geometric"``: equal ratios, :math:`a_i = a_1^{(m - i)/(m - 1)}`;
        ``"uniform"``: equal steps, :math:`a_i = i / m`.
    first : float, optional
        :math:`a_1` of the geometric schedule, in :math:`(0, 1)`; default
        :math:`1/m`. Not allowed with ``"uniform"``.

    Returns
    -------
    ndarray, shape (depth,)
        :math:`a_1, \dots, a_m` (``a_0 = 0`` is implicit).

    Raises
    ------
    ValueError
        If ``schedule`` is unknown, or ``first`` is not in :math:`(0, 1)` or is
        given with the uniform schedule.
    TypeError
        If ``depth`` is not an integer.

    Notes
    -----
    With :math:`a_0 = 0`, :func:`layer_seminorm_bound` makes
    :math:`\|h_i - \mathrm{Id}\|_L` proportional to the step
    :math:`a_i - a_{i-1}`. Uniform steps are all :math:`1/m`. Geometric steps
    grow with :math:`a_i`; the largest is the last,

    .. math::

        1 - a_1^{1/(m-1)} \approx \frac{\log(1/a_1)}{m - 1}
        = \frac{\log m}{m - 1} \quad (a_1 = 1/m),

    and the first is :math:`a_1 = 1/m`: this schedule reproduces the rate
    :math:`O(\log m / m)` stated on the slides of Bartlett's talk (which scales
    the slides' proof takes, they do not say), while equal steps give
    :math:`O(1/m)`.

    Examples
    --------
    >>> from resnet_theory.smooth_maps import scaling_schedule
    >>> scaling_schedule(4, "uniform").tolist()
    [0.25, 0.5, 0.75, 1.0]
    >>> print(scaling_schedule(3, "geometric", first=0.25).round(4))
    [0.25 0.5  1.  ]
    """
    depth = _v.positive_int(depth, "depth")
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    if schedule == "uniform":
        if first is not None:
            raise ValueError("first sets a_1 of the geometric schedule; the uniform "
                             "schedule has a_1 = 1/depth")
        return np.arange(1, depth + 1) / depth
    if first is None:
        first = 1.0 / depth if depth > 1 else 1.0
    else:
        first = _v.as_float(first, "first")
        if not 0 < first < 1:
            raise ValueError(f"first must lie strictly between 0 and 1, got {first}")
    if depth == 1:
        return np.ones(1)
    exponents = (depth - np.arange(1, depth + 1)) / (depth - 1)
    scales = first**exponents
    scales[-1] = 1.0
    return scales


def _check_map(f, name: str):
    if not callable(f):
        raise TypeError(f"{name} must be a callable mapping arrays of shape (n, d) to (n, d)")
    return f


def _real_output(value, name: str) -> np.ndarray:
    """A callable's output as a float array; complex values are a ``TypeError``."""
    raw = np.asarray(value)
    if np.iscomplexobj(raw):
        raise TypeError(f"{name} must return real values, got complex numbers")
    return np.asarray(raw, dtype=float)


def _apply(f, x, name: str) -> np.ndarray:
    """``f(x)`` with its output checked: same shape as ``x`` and finite."""
    y = _real_output(f(x), name)
    if y.shape != x.shape:
        raise ValueError(f"{name} must map points of shape {x.shape} to the same shape, "
                         f"got {y.shape}")
    if not np.all(np.isfinite(y)):
        raise ValueError(f"{name} returned non-finite values")
    return y


def _apply_jacobian(jacobian, x, name: str) -> np.ndarray:
    n, d = x.shape
    j = _real_output(jacobian(x), name)
    if j.shape != (n, d, d):
        raise ValueError(f"{name} must return an array of shape {(n, d, d)}, got {j.shape}")
    if not np.all(np.isfinite(j)):
        raise ValueError(f"{name} returned non-finite values")
    return j


def _spectral_norms(b) -> np.ndarray:
    r"""Operator 2-norms of a stack of square matrices (largest eigenvalue of b^T b).

    For 2x2 matrices the closed form
    :math:`\|B\|_2^2 = (f + \sqrt{f^2 - 4 \det(B)^2}) / 2`, :math:`f = \|B\|_F^2`,
    written as :math:`\|B\|_2 = (\sqrt{f + 2|\det B|} + \sqrt{f - 2|\det B|}) / 2`
    (no cancellation), replaces a batched eigenvalue solver.
    """
    if b.shape[-1] == 2 and b.shape[-2] == 2:
        frob = np.sum(b * b, axis=(-2, -1))
        det = np.abs(b[..., 0, 0] * b[..., 1, 1] - b[..., 0, 1] * b[..., 1, 0])
        return 0.5 * (np.sqrt(frob + 2 * det) + np.sqrt(np.maximum(frob - 2 * det, 0.0)))
    gram = np.swapaxes(b, -1, -2) @ b
    return np.sqrt(np.maximum(np.linalg.eigvalsh(gram)[..., -1], 0.0))


def _solve_stack(a, b) -> np.ndarray:
    """``solve(a, b)`` for stacks of square matrices; 2x2 by the explicit inverse."""
    if a.shape[-1] == 2 and a.shape[-2] == 2:
        p, q, r, t = a[..., 0, 0], a[..., 0, 1], a[..., 1, 0], a[..., 1, 1]
        det = (p * t - q * r)[..., None]
        # inv(a) = [[t, -q], [-r, p]] / det, applied row by row to b.
        top = (t[..., None] * b[..., 0, :] - q[..., None] * b[..., 1, :]) / det
        bottom = (p[..., None] * b[..., 1, :] - r[..., None] * b[..., 0, :]) / det
        return np.stack([top, bottom], axis=-2)
    return np.linalg.solve(a, b)


def finite_difference_jacobian(f, x, *, step=1e-6) -> np.ndarray:
    r"""Central finite-difference Jacobians of ``f`` at a batch of points.

    Parameters
    ----------
    f : callable
        Maps an array of shape ``(n, d)`` to an array of shape ``(n, d)``
        (row by row).
    x : array_like, shape (n, d)
        The points.
    step : float, optional
        The increment :math:`\delta > 0`.

    Returns
    -------
    ndarray, shape (n, d, d)
        ``J[k, :, j]`` is :math:`(f(x_k + \delta e_j) - f(x_k - \delta e_j)) / (2\delta)`.

    Raises
    ------
    ValueError
        If ``x`` is not a finite 2-d array, ``step`` is not positive, or ``f``
        returns an array of the wrong shape or non-finite values.
    TypeError
        If ``f`` is not callable, ``x`` is complex, or ``f`` returns complex
        values.

    Notes
    -----
    The error is :math:`O(\delta^2 \sup\|D^3 f\|)` from truncation plus
    :math:`O(\epsilon_{\mathrm{mach}} |f| / \delta)` from round-off; the default
    balances them at about :math:`10^{-10}` for maps with derivatives of order
    one. The cost is :math:`2d` evaluations of ``f`` on ``n`` points.

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.smooth_maps import finite_difference_jacobian
    >>> j = finite_difference_jacobian(lambda x: x**2, np.array([[1.0, 3.0]]))
    >>> print(j[0].round(6))
    [[2. 0.]
     [0. 6.]]
    """
    f = _check_map(f, "f")
    x = _real_array(x, "x", ndim=2)
    step = _v.positive(step, "step")
    n, d = x.shape
    shifts = np.eye(d) * step
    # Evaluate all 2d shifted copies in one call: rows (j, k) for direction j, point k.
    plus = (x[None, :, :] + shifts[:, None, :]).reshape(d * n, d)
    minus = (x[None, :, :] - shifts[:, None, :]).reshape(d * n, d)
    values = _apply(f, np.concatenate([plus, minus]), "f")
    diff = (values[: d * n] - values[d * n :]).reshape(d, n, d) / (2 * step)
    return np.transpose(diff, (1, 2, 0))


@dataclass(frozen=True)
class NearIdentityLayers:
    r"""The layers :math:`h_i = g_{a_i} \circ g_{a_{i-1}}^{-1}` of a smooth map.

    Built by :func:`near_identity_layers`; see the module docstring for the
    formulas. Layers are numbered :math:`i = 1, \dots, m` as in the text and
    layer 0 is the affine map :math:`g_0(x) = h(0) + Dh(0) x`.

    Attributes
    ----------
    h, h_inverse : callable
        The map and its inverse, acting on arrays of shape ``(n, d)``.
    scalings : ndarray, shape (m,)
        :math:`a_1 < \dots < a_m = 1`.
    offset : ndarray, shape (d,)
        :math:`h(0)`.
    linear_part : ndarray, shape (d, d)
        :math:`Dh(0)`.
    jacobian : callable or None
        :math:`x \mapsto Dh(x)` on arrays ``(n, d) -> (n, d, d)``; ``None`` means
        central finite differences with increment ``step``.
    step : float
        Finite-difference increment.
    """

    h: object
    h_inverse: object
    scalings: np.ndarray
    offset: np.ndarray
    linear_part: np.ndarray
    jacobian: object = None
    step: float = 1e-6

    @property
    def depth(self) -> int:
        """:math:`m`, the number of non-linear layers."""
        return len(self.scalings)

    @property
    def dim(self) -> int:
        """:math:`d`, the dimension."""
        return len(self.offset)

    def _points(self, x, name="x") -> np.ndarray:
        return _real_array(x, name, shape=(None, self.dim))

    def _index(self, i, *, allow_zero=True) -> int:
        if isinstance(i, bool) or not isinstance(i, numbers.Integral):
            raise TypeError(f"i must be an integer layer index, got {type(i).__name__}")
        low = 0 if allow_zero else 1
        if not low <= i <= self.depth:
            raise ValueError(f"i must lie between {low} and the depth {self.depth}, got {i}")
        return int(i)

    def scale(self, i) -> float:
        """:math:`a_i` (with :math:`a_0 = 0`)."""
        i = self._index(i)
        return 0.0 if i == 0 else float(self.scalings[i - 1])

    def _jac(self, x) -> np.ndarray:
        if self.jacobian is None:
            return finite_difference_jacobian(self.h, x, step=self.step)
        return _apply_jacobian(self.jacobian, x, "jacobian")

    def scaled_map(self, x, i) -> np.ndarray:
        r""":math:`g_{a_i}(x) = h(0) + (h(a_i x) - h(0)) / a_i`; :math:`g_0` is affine.

        Parameters
        ----------
        x : array_like, shape (n, d)
        i : int
            Layer index :math:`0 \le i \le m`.

        Returns
        -------
        ndarray, shape (n, d)
        """
        x = self._points(x)
        a = self.scale(i)
        if a == 0.0:
            return self.offset + x @ self.linear_part.T
        return self.offset + (_apply(self.h, a * x, "h") - self.offset) / a

    def scaled_inverse(self, y, i) -> np.ndarray:
        r""":math:`g_{a_i}^{-1}(y) = h^{-1}(h(0) + a_i (y - h(0))) / a_i`.

        Parameters
        ----------
        y : array_like, shape (n, d)
        i : int
            Layer index :math:`0 \le i \le m` (``i = 0`` solves the linear system).

        Returns
        -------
        ndarray, shape (n, d)
        """
        y = self._points(y, "y")
        a = self.scale(i)
        if a == 0.0:
            return np.linalg.solve(self.linear_part, (y - self.offset).T).T
        return _apply(self.h_inverse, self.offset + a * (y - self.offset), "h_inverse") / a

    def layer(self, y, i) -> np.ndarray:
        r"""The layer :math:`h_i(y) = g_{a_i}(g_{a_{i-1}}^{-1}(y))`, :math:`1 \le i \le m`.

        Parameters
        ----------
        y : array_like, shape (n, d)
        i : int

        Returns
        -------
        ndarray, shape (n, d)
        """
        i = self._index(i, allow_zero=False)
        return self.scaled_map(self.scaled_inverse(y, i - 1), i)

    def forward(self, x) -> np.ndarray:
        r"""Evaluate the network layer by layer.

        Parameters
        ----------
        x : array_like, shape (n, d)
            Inputs.

        Returns
        -------
        ndarray, shape (m + 1, n, d)
            ``out[0]`` is :math:`g_0(x)` and ``out[i]`` is
            :math:`h_i(\text{out}[i-1])`, computed from the previous layer's
            output (not from ``x``); by the telescoping identity
            ``out[i]`` equals :math:`g_{a_i}(x)` and ``out[m]`` equals
            :math:`h(x)`, up to round-off. Cost and memory :math:`O(m n d)`.
        """
        x = self._points(x)
        out = np.empty((self.depth + 1, *x.shape))
        out[0] = self.scaled_map(x, 0)
        for i in range(1, self.depth + 1):
            out[i] = self.layer(out[i - 1], i)
        return out

    def layer_jacobians(self, x, i) -> np.ndarray:
        r"""Jacobians :math:`Dh_i` at the points :math:`g_{a_{i-1}}(x)` that reach layer i.

        .. math::

            Dh_i\bigl(g_{a_{i-1}}(x)\bigr) = Dh(a_i x)\, Dh(a_{i-1} x)^{-1}.

        Parameters
        ----------
        x : array_like, shape (n, d)
            Inputs of the network (points of the domain of :math:`h`).
        i : int
            :math:`1 \le i \le m`.

        Returns
        -------
        ndarray, shape (n, d, d)
        """
        x = self._points(x)
        i = self._index(i, allow_zero=False)
        previous = self._jac(self.scale(i - 1) * x)
        return np.linalg.solve(np.transpose(previous, (0, 2, 1)),
                               np.transpose(self._jac(self.scale(i) * x), (0, 2, 1))
                               ).transpose(0, 2, 1)

    def layer_seminorms(self, x) -> np.ndarray:
        r"""Estimates of :math:`\|h_i - \mathrm{Id}\|_L` for every layer, in one pass.

        Parameters
        ----------
        x : array_like, shape (n, d)
            Sample points of the domain :math:`\mathcal{X}` of :math:`h`.

        Returns
        -------
        ndarray, shape (m,)
            ``out[i - 1]`` is
            :math:`\max_k \|Dh(a_i x_k)\, Dh(a_{i-1} x_k)^{-1} - I\|_2`, the
            largest operator norm of :math:`D(h_i - \mathrm{Id})` over the points
            :math:`g_{a_{i-1}}(x_k)` that reach layer :math:`i`.

        Notes
        -----
        The local Lipschitz constant of a :math:`C^1` map at a point is the norm
        of its derivative there, so each value is a lower bound on the Lipschitz
        seminorm of :math:`h_i - \mathrm{Id}` on any open set containing the
        points (up to finite-difference error), and it converges to the
        seminorm on a convex set as the sample fills it. The Jacobian at scale
        :math:`a_i` is computed once and reused for layer :math:`i + 1`, so the
        cost is :math:`m + 1` Jacobian evaluations on ``n`` points.
        """
        x = self._points(x)
        n, d = x.shape
        identity = np.eye(d)
        scales = np.concatenate([[0.0], self.scalings])
        out = np.empty(self.depth)
        # Jacobians at all scales, in chunks of layers (about 2**16 points per call).
        chunk = max(1, 2**16 // n)
        previous_t = np.broadcast_to(self.linear_part.T, (n, d, d))
        for start in range(1, self.depth + 1, chunk):
            stop = min(start + chunk, self.depth + 1)
            stacked = (scales[start:stop, None, None] * x[None]).reshape(-1, d)
            current_t = np.transpose(self._jac(stacked), (0, 2, 1)).reshape(-1, n, d, d)
            below_t = np.concatenate([previous_t[None], current_t[:-1]])
            # Dh_i = current @ previous^{-1}, i.e. Dh_i^T = solve(previous^T, current^T).
            layer_t = _solve_stack(below_t, current_t)
            norms = _spectral_norms(layer_t - identity)
            out[start - 1 : stop - 1] = norms.max(axis=1)
            previous_t = current_t[-1]
        return out

    def linear_factors(self, depth) -> np.ndarray:
        r"""Near-identity factors of the linear part :math:`Dh(0)`.

        Parameters
        ----------
        depth : int
            Number of linear layers.

        Returns
        -------
        ndarray, shape (depth, d, d)
            :math:`A_1, \dots, A_{\mathrm{depth}}` with
            :math:`(I + A_{\mathrm{depth}}) \cdots (I + A_1) = Dh(0)`, from
            :func:`resnet_theory.near_identity.near_identity_factors`.
        """
        return near_identity_factors(self.linear_part, depth)


def near_identity_layers(h, h_inverse, scalings, dim, *, jacobian=None, step=1e-6,
                         check_points=None) -> NearIdentityLayers:
    r"""Split a smooth invertible map into near-identity layers.

    Parameters
    ----------
    h : callable
        :math:`h : \mathbb{R}^d \to \mathbb{R}^d`, applied row by row to arrays
        of shape ``(n, d)``. It must be defined at :math:`a x` for every point
        :math:`x` of the domain and :math:`0 \le a \le 1` (the domain should be
        star-shaped around the origin; shift it first if needed).
    h_inverse : callable
        :math:`h^{-1}`, with the same conventions.
    scalings : array_like, shape (m,)
        :math:`0 < a_1 < \dots < a_m = 1`, for instance from
        :func:`scaling_schedule`.
    dim : int
        The dimension :math:`d`.
    jacobian : callable, optional
        The analytic Jacobian :math:`x \mapsto Dh(x)`, arrays ``(n, d)`` to
        ``(n, d, d)``. Default: central finite differences.
    step : float, optional
        Finite-difference increment when ``jacobian`` is not given.
    check_points : array_like, shape (n, d), optional
        Points at which to check that ``h_inverse`` inverts ``h``
        (the origin is always checked).

    Returns
    -------
    NearIdentityLayers

    Raises
    ------
    ValueError
        If ``scalings`` is not strictly increasing in :math:`(0, 1]` with last
        entry 1; if :math:`Dh(0)` is singular (smallest singular value below
        :math:`10^{-8}`, or :math:`10^{-12}` times the largest) or has :math:`\det Dh(0) \le 0`
        (the linear part would not be a product of near-identity matrices);
        if ``h_inverse`` does not invert ``h`` (relative error above
        :math:`10^{-6}`); if ``step`` is not positive; or if ``h``,
        ``h_inverse`` or ``jacobian`` return arrays of the wrong shape or
        non-finite values.
    TypeError
        If ``h``, ``h_inverse`` or ``jacobian`` is not callable or returns
        complex values, ``dim`` is not an integer, or ``scalings`` or
        ``check_points`` is complex.

    Notes
    -----
    With :math:`g_a(x) = h(0) + (h(a x) - h(0))/a` and
    :math:`g_0(x) = h(0) + Dh(0) x`, the layers are
    :math:`h_i = g_{a_i} \circ g_{a_{i-1}}^{-1}`, explicitly

    .. math::

        h_i(y) = h(0) + \frac{1}{a_i}\Bigl[h\Bigl(\frac{a_i}{a_{i-1}}\,
        h^{-1}\bigl(h(0) + a_{i-1}(y - h(0))\bigr)\Bigr) - h(0)\Bigr]
        \quad (i \ge 2),

    and they telescope: :math:`h_i \circ \dots \circ h_1 \circ g_0 = g_{a_i}`,
    so the network computes :math:`h = g_{a_m}` exactly. With
    :math:`z = g_{a_{i-1}}^{-1}(y)`,
    :math:`(h_i - \mathrm{Id})(y) = g_{a_i}(z) - g_{a_{i-1}}(z)`, whose
    derivative in :math:`z` is :math:`Dh(a_i z) - Dh(a_{i-1} z)`: this is how
    :func:`layer_seminorm_bound` arises.

    References
    ----------
    P. L. Bartlett, S. N. Evans and P. M. Long, Representing smooth functions as
    compositions of near-identity functions with implications for deep network
    optimization, arXiv:1804.05012, 2018.

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.smooth_maps import near_identity_layers, scaling_schedule
    >>> h = lambda x: np.stack([x[:, 0] + x[:, 1] ** 2, x[:, 1]], axis=1)
    >>> h_inv = lambda y: np.stack([y[:, 0] - y[:, 1] ** 2, y[:, 1]], axis=1)
    >>> layers = near_identity_layers(h, h_inv, scaling_schedule(100), 2)
    >>> x = np.array([[0.5, -1.0], [1.0, 1.0]])
    >>> bool(np.allclose(layers.forward(x)[-1], h(x)))
    True
    >>> print(f"{layers.layer_seminorms(x).max():.4f}")  # 2 (1 - 0.01 ** (1 / 99))
    0.0909
    """
    h = _check_map(h, "h")
    h_inverse = _check_map(h_inverse, "h_inverse")
    if jacobian is not None:
        _check_map(jacobian, "jacobian")
    dim = _v.positive_int(dim, "dim")
    step = _v.positive(step, "step")
    scalings = _real_array(scalings, "scalings", ndim=1)
    if len(scalings) == 0:
        raise ValueError("scalings must hold at least one scale")
    if scalings[0] <= 0 or np.any(np.diff(scalings) <= 0) or scalings[-1] != 1.0:
        raise ValueError("scalings must be strictly increasing, positive, and end with "
                         f"a_m = 1, got {np.array2string(scalings, threshold=8)}")
    origin = np.zeros((1, dim))
    offset = _apply(h, origin, "h")[0]
    if jacobian is None:
        linear = finite_difference_jacobian(h, origin, step=step)[0]
    else:
        linear = _apply_jacobian(jacobian, origin, "jacobian")[0]
    det = float(np.linalg.det(linear))
    singular_values = np.linalg.svd(linear, compute_uv=False)
    if singular_values[-1] < max(1e-8, 1e-12 * singular_values[0]):
        raise ValueError("h must have an invertible derivative Dh(0), but it is singular")
    if det <= 0:
        raise ValueError(f"h must preserve orientation at the origin (det Dh(0) > 0), "
                         f"got det Dh(0) = {det:.6g}")
    points = origin if check_points is None else np.vstack(
        [origin, _real_array(check_points, "check_points", shape=(None, dim))])
    back = _apply(h_inverse, _apply(h, points, "h"), "h_inverse")
    error = np.max(np.linalg.norm(back - points, axis=1) / (1 + np.linalg.norm(points, axis=1)))
    if error > 1e-6:
        raise ValueError(f"h_inverse must invert h: h_inverse(h(x)) differs from x by "
                         f"{error:.3g} (relative)")
    return NearIdentityLayers(h=h, h_inverse=h_inverse, scalings=scalings.copy(),
                              offset=offset, linear_part=linear, jacobian=jacobian,
                              step=step)


def layer_seminorm_bound(scalings, smoothness, inverse_lipschitz, radius) -> np.ndarray:
    r"""The bound :math:`\alpha M R\,(a_i - a_{i-1})` on :math:`\|h_i - \mathrm{Id}\|_L`.

    Parameters
    ----------
    scalings : array_like, shape (m,)
        :math:`a_1 < \dots < a_m`; :math:`a_0 = 0`.
    smoothness : float
        :math:`\alpha`, a Lipschitz constant of :math:`Dh` on a convex set
        :math:`B` that contains the origin and :math:`\mathcal{X}` (not only on
        :math:`\mathcal{X}`: the rescaled points :math:`a x` leave it):
        :math:`\|Dh(x) - Dh(y)\| \le \alpha \|x - y\|` on :math:`B`.
    inverse_lipschitz : float
        :math:`M`, a Lipschitz constant of :math:`h^{-1}` on :math:`h(B)`.
    radius : float
        :math:`R = \sup_{w \in B} \|w\|`.

    Returns
    -------
    ndarray, shape (m,)

    Raises
    ------
    ValueError
        If ``scalings`` is not increasing and positive, or a constant is not
        positive.
    TypeError
        If ``scalings`` is complex or a constant is not a real number.

    Notes
    -----
    Let :math:`B` be a convex set containing the origin and :math:`\mathcal{X}`
    (a ball around the origin), with :math:`R = \sup_{w \in B} \|w\|`,
    :math:`Dh` :math:`\alpha`-Lipschitz on :math:`B` and :math:`h^{-1}`
    :math:`M`-Lipschitz on :math:`h(B)`; the mean-value step runs along segments
    in :math:`B`, so :math:`\mathcal{X}` need not be convex. A point
    :math:`y = g_{a_{i-1}}(z)`, :math:`z \in \mathcal{X}`, reaches layer
    :math:`i`, and :math:`(h_i - \mathrm{Id})(y) = \varphi(z)` with
    :math:`\varphi = g_{a_i} - g_{a_{i-1}}`. Since
    :math:`\|D\varphi(z)\| = \|Dh(a_i z) - Dh(a_{i-1} z)\| \le \alpha
    (a_i - a_{i-1}) R` on :math:`B` and
    :math:`\|g_a^{-1}\|_L = \|h^{-1}\|_L \le M` for every :math:`a`,

    .. math::

        \|h_i - \mathrm{Id}\|_{L,\, g_{a_{i-1}}(\mathcal{X})}
        \le \alpha M R\, (a_i - a_{i-1}).

    Examples
    --------
    >>> from resnet_theory.smooth_maps import layer_seminorm_bound
    >>> layer_seminorm_bound([0.25, 0.5, 1.0], 2.0, 1.0, 1.0).tolist()
    [0.5, 0.5, 1.0]
    """
    scalings = _real_array(scalings, "scalings", ndim=1)
    if len(scalings) == 0 or scalings[0] <= 0 or np.any(np.diff(scalings) <= 0):
        raise ValueError("scalings must be positive and strictly increasing")
    alpha = _v.positive(smoothness, "smoothness")
    m = _v.positive(inverse_lipschitz, "inverse_lipschitz")
    r = _v.positive(radius, "radius")
    return alpha * m * r * np.diff(scalings, prepend=0.0)


@dataclass(frozen=True)
class LipschitzEstimate:
    r"""Two lower estimates of a Lipschitz seminorm and their maximum.

    Attributes
    ----------
    value : float
        ``max(pairs, jacobian)``, the estimate.
    pairs : float
        The largest difference quotient over the sampled pairs (a lower bound
        on every domain).
    jacobian : float
        The largest operator norm of the Jacobian at the sample points (a
        lower bound on any open set containing them, exact in the limit of a
        dense sample of a convex domain), or ``nan`` when not computed.
    """

    value: float
    pairs: float
    jacobian: float


def lipschitz_seminorm(f, points, *, minus_identity=True, jacobian=None, pairs="all",
                       rng=None, step=1e-6, use_jacobian=True) -> LipschitzEstimate:
    r"""Estimate :math:`\|f - \mathrm{Id}\|_L` (or :math:`\|f\|_L`) on a sampled domain.

    Parameters
    ----------
    f : callable
        Maps arrays of shape ``(n, d)`` to arrays of shape ``(n, d)``.
    points : array_like, shape (n, d)
        Sample of the domain, :math:`n \ge 2`.
    minus_identity : bool, optional
        Estimate the seminorm of :math:`f - \mathrm{Id}` (default) or of :math:`f`.
    jacobian : callable, optional
        Analytic Jacobian of ``f`` (``(n, d) -> (n, d, d)``); default: central
        finite differences.
    pairs : "all" or int, optional
        Use every pair of points, or this many random pairs (drawn with ``rng``).
    rng : numpy.random.Generator, optional
        Needed when ``pairs`` is an integer.
    step : float, optional
        Finite-difference increment.
    use_jacobian : bool, optional
        Also take the largest Jacobian norm (default); with ``False`` only
        pairs are used (for maps that are not differentiable).

    Returns
    -------
    LipschitzEstimate

    Raises
    ------
    ValueError
        If ``points`` has fewer than two distinct rows or non-finite entries,
        ``pairs`` is not ``"all"`` or a positive integer, or ``f`` returns the
        wrong shape.
    TypeError
        If ``f`` is not callable or returns complex values, ``points`` is
        complex, or ``rng`` is missing or not a Generator when ``pairs`` is an
        integer.

    Notes
    -----
    The seminorm is
    :math:`\|u\|_L = \sup_{x \ne y} \|u(x) - u(y)\| / \|x - y\|` with
    :math:`u = f - \mathrm{Id}`. Both estimates are lower bounds (the Jacobian one
    up to the finite-difference error :math:`O(\delta^2)`):

    * the pair estimate is a supremum over fewer pairs. It converges slowly:
      a difference quotient is close to :math:`\|Du\|` only for pairs that
      are close together *and* aligned with the top singular vector;
    * on a convex domain, :math:`\|u\|_L = \sup_x \|Du(x)\|_2` (mean-value
      inequality), and for :math:`Du` Lipschitz with constant :math:`\beta`
      the sampled maximum is within :math:`\beta \rho` of the supremum when
      every point of the domain lies within :math:`\rho` of a sample point
      (for a uniform sample of a bounded set in :math:`d` dimensions,
      :math:`\rho = O((\log n / n)^{1/d})`). For affine :math:`u` the
      Jacobian estimate is exact.

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.smooth_maps import lipschitz_seminorm
    >>> b = np.array([[1.1, 0.0], [0.2, 0.9]])
    >>> est = lipschitz_seminorm(lambda x: x @ b.T, np.random.default_rng(0).normal(size=(20, 2)))
    >>> print(f"{est.value:.6f} {np.linalg.norm(b - np.eye(2), 2):.6f}")
    0.241421 0.241421
    >>> bool(est.pairs <= est.jacobian + 1e-9)
    True
    """
    f = _check_map(f, "f")
    points = _real_array(points, "points", ndim=2)
    step = _v.positive(step, "step")
    n = len(points)
    if n < 2 or np.all(points == points[0]):
        raise ValueError("points must contain at least two distinct points")
    if isinstance(pairs, str):
        if pairs != "all":
            raise ValueError(f"pairs must be 'all' or a positive integer, got {pairs!r}")
        first, second = np.triu_indices(n, k=1)
    else:
        count = _v.positive_int(pairs, "pairs")
        if rng is None:
            raise TypeError("rng must be a numpy.random.Generator when pairs is an integer")
        rng = _v.generator(rng)
        first = rng.integers(0, n, size=count)
        second = rng.integers(0, n, size=count)
    values = _apply(f, points, "f")
    if minus_identity:
        values = values - points
    dx = np.linalg.norm(points[first] - points[second], axis=1)
    du = np.linalg.norm(values[first] - values[second], axis=1)
    keep = dx > 0
    pair_bound = float(np.max(du[keep] / dx[keep])) if np.any(keep) else 0.0
    jac_bound = float("nan")
    if use_jacobian:
        if jacobian is None:
            j = finite_difference_jacobian(f, points, step=step)
        else:
            _check_map(jacobian, "jacobian")
            j = _apply_jacobian(jacobian, points, "jacobian")
        if minus_identity:
            j = j - np.eye(points.shape[1])
        jac_bound = float(np.max(_spectral_norms(j)))
    value = pair_bound if not use_jacobian else max(pair_bound, jac_bound)
    return LipschitzEstimate(value=value, pairs=pair_bound, jacobian=jac_bound)

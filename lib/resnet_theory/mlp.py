r"""Plain and residual multilayer perceptrons with hand-written backpropagation.

A network of depth :math:`L` and width :math:`k` maps :math:`x \in \mathbb{R}^{d}`
to :math:`\mathbb{R}^{c}` through a linear embedding, :math:`L` hidden layers and
a linear read-out:

.. math::

    h_0 = W_{\mathrm{in}} x + b_{\mathrm{in}},

    h_j = \begin{cases}
        \sigma(U_j h_{j-1} + b_j) & \text{(plain layer)},\\
        h_{j-1} + V_j\, \sigma(U_j h_{j-1} + b_j) & \text{(residual block)},
    \end{cases}

    \hat y = W_{\mathrm{out}} h_L + b_{\mathrm{out}},

with :math:`\sigma` one of ReLU, tanh or the logistic sigmoid. Optionally
(``normalization="batch"`` or ``"layer"``) every pre-activation is normalised
before the activation, :math:`z_j \mapsto N(z_j)` with

.. math::

    N(z) = \frac{z - \mu}{\sqrt{s^2 + \varepsilon}},

where :math:`\mu` and :math:`s^2` are the mean and the (biased) variance of
each unit over the rows of the batch (batch normalisation, in training mode,
as in He et al.'s plain and residual networks) or of each row over its
:math:`k` units (layer normalisation), with :math:`\varepsilon = 10^{-5}` and
no learned scale or shift. The residual
block is Hardt and Ma's building block, :math:`h + V \mathrm{ReLU}(U h + b)`
(their Section 3, eq. (3.1); the convolutional blocks of their experiments,
Section 4, have no bias). The read-out can be frozen at its random
initialisation (``train_output=False``), as in their experiments.

Gradients are computed by backpropagation, layer by layer, so that one
gradient costs :math:`O(n L k^2)`: linear in the depth. The recursion for the
error signal :math:`\delta_j = \partial \mathcal{L} / \partial h_j` is

.. math::

    \delta_{j-1} = U_j^\top \bigl(\sigma'(z_j) \odot \delta_j\bigr)
    \quad\text{(plain)},

    \delta_{j-1} = \delta_j + U_j^\top \bigl(\sigma'(z_j) \odot V_j^\top \delta_j\bigr)
    \quad\text{(residual)},

where :math:`z_j = U_j h_{j-1} + b_j` (with normalisation, :math:`\sigma'(z_j)
\odot \cdot` is followed by the backward map of :math:`N`,
:math:`\bar g \mapsto (\bar g - \operatorname{mean}\bar g - \hat z
\operatorname{mean}(\bar g \odot \hat z)) / \sqrt{s^2 + \varepsilon}`, the
means taken along the normalised axis). In the plain network the signal is
multiplied by :math:`L` random Jacobians, and its size drifts by a random factor
at every layer; in the residual network the identity term carries it, and each
block changes it by the factor :math:`(I + E_j)^\top`, with
:math:`E_j = V_j \operatorname{diag}(\sigma'(z_j)) U_j` and
:math:`\|E_j\| \le \|V_j\|\,\|U_j\|`, of order :math:`1/\sqrt L` at the
default initialisation of :func:`init_mlp` (the entries of :math:`V_j` have
standard deviation :math:`1/\sqrt{kL}`): of order one in shallow networks,
small only in deep ones. Chapter 1 of the book measures both.

Reference: K. He, X. Zhang, S. Ren and J. Sun, "Deep residual learning for image
recognition", CVPR 2016, arXiv:1512.03385; S. Ioffe and C. Szegedy, "Batch
normalization", ICML 2015, arXiv:1502.03167; J. L. Ba, J. R. Kiros and G. E.
Hinton, "Layer normalization", arXiv:1607.06450; M. Hardt and T. Ma, "Identity matters
in deep learning", ICLR 2017, arXiv:1611.04231, Sections 3 and 4.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from scipy import special

from . import _validation as _v
from ._validation import DivergenceError

__all__ = [
    "MLP",
    "TrainingRun",
    "init_mlp",
    "forward",
    "loss_and_gradient",
    "layer_gradient_norms",
    "accuracy",
    "train",
    "train_at_rates",
]

_ACTIVATIONS = ("relu", "tanh", "sigmoid")
_LOSSES = ("mse", "cross_entropy")
_NORMALIZATIONS = (None, "batch", "layer")
_NORM_AXIS = {"batch": 0, "layer": 1}
_NORM_EPS = 1e-5
_DEFAULT_GAIN = {"relu": np.sqrt(2.0), "tanh": 1.0, "sigmoid": 1.0}


@dataclass(frozen=True)
class MLP:
    r"""The parameters of a plain or residual MLP (see the module docstring).

    The same class holds a gradient: :func:`loss_and_gradient` returns the
    partial derivatives in an ``MLP`` whose arrays have the shapes below.

    Attributes
    ----------
    w_in : ndarray, shape (k, d)
        Embedding :math:`W_{\mathrm{in}}`; ``b_in``, shape (k,), its bias.
    u : ndarray, shape (L, k, k)
        :math:`U_1, \dots, U_L` (``u[0]`` acts first); ``b``, shape (L, k).
    v : ndarray, shape (L, k, k), or None
        :math:`V_1, \dots, V_L` of the residual blocks; ``None`` for a plain network.
    w_out : ndarray, shape (c, k)
        Read-out :math:`W_{\mathrm{out}}`; ``b_out``, shape (c,), its bias.
    activation : {"relu", "tanh", "sigmoid"}
    train_output : bool
        Whether training updates the read-out (``False``: a fixed random layer).
    normalization : {None, "batch", "layer"}
        Normalisation of every pre-activation (see the module docstring).
    """

    w_in: np.ndarray
    b_in: np.ndarray
    u: np.ndarray
    b: np.ndarray
    v: np.ndarray | None
    w_out: np.ndarray
    b_out: np.ndarray
    activation: str = "relu"
    train_output: bool = True
    normalization: str | None = None

    @property
    def residual(self) -> bool:
        """``True`` for residual blocks, ``False`` for plain layers."""
        return self.v is not None

    @property
    def depth(self) -> int:
        """The number :math:`L` of hidden layers or blocks."""
        return self.u.shape[0]

    @property
    def width(self) -> int:
        """The width :math:`k` of the hidden layers."""
        return self.u.shape[1]

    @property
    def num_parameters(self) -> int:
        """The number of trainable parameters."""
        arrays = [self.w_in, self.b_in, self.u, self.b]
        arrays += [] if self.v is None else [self.v]
        arrays += [self.w_out, self.b_out] if self.train_output else []
        return int(sum(a.size for a in arrays))


@dataclass(frozen=True)
class TrainingRun:
    """The result of :func:`train`.

    Attributes
    ----------
    steps : ndarray of int
        The steps at which the loss was recorded (0 is the initialisation).
    losses : ndarray
        The loss on the whole training set at those steps.
    net : MLP
        The trained network.
    """

    steps: np.ndarray
    losses: np.ndarray
    net: MLP


def _activation(name):
    if name == "relu":
        return (lambda z: np.maximum(z, 0.0)), (lambda z, a: (z > 0).astype(float))
    if name == "tanh":
        return np.tanh, (lambda z, a: 1.0 - a**2)
    return special.expit, (lambda z, a: a * (1.0 - a))


def init_mlp(d_in, width, depth, d_out, *, residual, rng, activation="relu",
             u_std=None, v_std=None, train_output=True, normalization=None):
    r"""A randomly initialised plain or residual MLP.

    Weights are independent centred Gaussians, biases are zero:

    - :math:`W_{\mathrm{in}}` with standard deviation :math:`1/\sqrt d`;
    - :math:`U_j` with ``u_std``, by default :math:`g/\sqrt k` with the gain
      :math:`g = \sqrt 2` for ReLU and :math:`g = 1` for tanh and sigmoid (He and
      Glorot initialisation);
    - :math:`V_j` (residual only) with ``v_std``, by default :math:`1/\sqrt{kL}`,
      so that the :math:`L` blocks together change the signal by :math:`O(1)`;
    - :math:`W_{\mathrm{out}}` with :math:`1/\sqrt k`.

    Parameters
    ----------
    d_in, width, depth, d_out : int
        Input dimension :math:`d`, width :math:`k`, depth :math:`L`, outputs :math:`c`.
    residual : bool
        Residual blocks (``True``) or plain layers (``False``).
    rng : numpy.random.Generator
        The source of randomness.
    activation : {"relu", "tanh", "sigmoid"}, optional
    u_std, v_std : float, optional
        Standard deviations of :math:`U_j` and :math:`V_j` (see above).
    train_output : bool, optional
        ``False`` freezes the read-out at its random initialisation.
    normalization : {None, "batch", "layer"}, optional
        Normalise every pre-activation (batch or layer normalisation without
        learned scale and shift); ``None`` (the default) does not.

    Returns
    -------
    MLP

    Raises
    ------
    ValueError
        If a size is not positive, ``activation`` or ``normalization`` is unknown, a standard
        deviation is negative, or ``v_std`` is given for a plain network.
    TypeError
        If ``rng`` is not a :class:`numpy.random.Generator` or ``residual`` is not a bool.

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.mlp import init_mlp
    >>> net = init_mlp(3, 8, 4, 2, residual=True, rng=np.random.default_rng(0))
    >>> net.depth, net.width, net.num_parameters
    (4, 8, 594)
    """
    d_in = _v.positive_int(d_in, "d_in")
    width = _v.positive_int(width, "width")
    depth = _v.positive_int(depth, "depth")
    d_out = _v.positive_int(d_out, "d_out")
    if not isinstance(residual, bool):
        raise TypeError(f"residual must be True or False, got {type(residual).__name__}")
    if not isinstance(train_output, bool):
        raise TypeError(f"train_output must be True or False, got {type(train_output).__name__}")
    rng = _v.generator(rng)
    if activation not in _ACTIVATIONS:
        raise ValueError(f"activation must be one of {_ACTIVATIONS}, got {activation!r}")
    if normalization not in _NORMALIZATIONS:
        raise ValueError(f"normalization must be one of {_NORMALIZATIONS}, "
                         f"got {normalization!r}")
    u_std = (_DEFAULT_GAIN[activation] / np.sqrt(width) if u_std is None
             else _v.nonnegative(u_std, "u_std"))
    if not residual and v_std is not None:
        raise ValueError("v_std: a plain network has no residual weights V_j")
    v_std = (1.0 / np.sqrt(width * depth) if v_std is None
             else _v.nonnegative(v_std, "v_std"))
    return MLP(
        w_in=rng.normal(0.0, 1.0 / np.sqrt(d_in), (width, d_in)),
        b_in=np.zeros(width),
        u=rng.normal(0.0, u_std, (depth, width, width)),
        b=np.zeros((depth, width)),
        v=rng.normal(0.0, v_std, (depth, width, width)) if residual else None,
        w_out=rng.normal(0.0, 1.0 / np.sqrt(width), (d_out, width)),
        b_out=np.zeros(d_out),
        activation=activation,
        train_output=train_output,
        normalization=normalization,
    )


def _check_net(net):
    if not isinstance(net, MLP):
        raise TypeError(f"net must be a resnet_theory.mlp.MLP (see init_mlp), got "
                        f"{type(net).__name__}")
    return net


def _check_x(net, x):
    return _v.finite_array(x, "x", shape=(None, net.w_in.shape[1]))


def _check_targets(net, x, y, loss):
    if loss not in _LOSSES:
        raise ValueError(f"loss must be one of {_LOSSES}, got {loss!r}")
    n, c = x.shape[0], net.w_out.shape[0]
    if loss == "mse":
        return _v.finite_array(y, "y", shape=(n, c))
    labels = np.asarray(y)
    if labels.shape != (n,) or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError(f"y must be integer class labels of shape ({n},) for the "
                         f"cross-entropy loss, got {labels.dtype} of shape {labels.shape}")
    if labels.size and (labels.min() < 0 or labels.max() >= c):
        raise ValueError(f"y must hold labels in 0..{c - 1} (the network has {c} outputs)")
    return labels


def _normalize(z, kind):
    """N(z) and 1/sqrt(s^2 + eps) along the axis of ``kind``."""
    axis = _NORM_AXIS[kind]
    centred = z - z.mean(axis=axis, keepdims=True)
    inv_std = 1.0 / np.sqrt(np.mean(centred**2, axis=axis, keepdims=True) + _NORM_EPS)
    return centred * inv_std, inv_std


def _normalize_backward(grad, z_hat, inv_std, kind):
    """The gradient with respect to z, given the one with respect to N(z)."""
    axis = _NORM_AXIS[kind]
    return inv_std * (grad - grad.mean(axis=axis, keepdims=True)
                      - z_hat * np.mean(grad * z_hat, axis=axis, keepdims=True))


def _forward(net, x):
    sigma, _ = _activation(net.activation)
    kind = getattr(net, "normalization", None)
    hs, zs, acts = [x @ net.w_in.T + net.b_in], [], []
    inv_stds = []
    for j in range(net.depth):
        z = hs[-1] @ net.u[j].T + net.b[j]
        if kind is not None:
            z, inv_std = _normalize(z, kind)
            inv_stds.append(inv_std)
        a = sigma(z)
        zs.append(z)
        acts.append(a)
        hs.append(hs[-1] + a @ net.v[j].T if net.residual else a)
    if kind is not None:
        return hs[-1] @ net.w_out.T + net.b_out, (hs, zs, acts, inv_stds)
    return hs[-1] @ net.w_out.T + net.b_out, (hs, zs, acts)


def forward(net, x):
    r"""The outputs :math:`\hat y` of ``net`` on the rows of ``x``, shape (n, c).

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.mlp import init_mlp, forward
    >>> net = init_mlp(3, 8, 4, 2, residual=False, rng=np.random.default_rng(0))
    >>> forward(net, np.zeros((5, 3))).shape
    (5, 2)
    """
    net = _check_net(net)
    with np.errstate(over="raise", invalid="raise"):
        try:
            return _forward(net, _check_x(net, x))[0]
        except FloatingPointError:
            raise DivergenceError("net: the forward pass overflowed (weights too large)") \
                from None


def _loss_and_output_error(out, y, loss):
    n = out.shape[0]
    if loss == "mse":
        residual = out - y
        return 0.5 * float(np.sum(residual**2)) / n, residual / n
    shifted = out - out.max(axis=1, keepdims=True)
    log_prob = shifted - np.log(np.sum(np.exp(shifted), axis=1, keepdims=True))
    prob = np.exp(log_prob)
    prob[np.arange(n), y] -= 1.0
    return -float(np.mean(log_prob[np.arange(n), y])), prob / n


def _value(net, x, y, loss):
    with np.errstate(over="raise", invalid="raise"):
        try:
            value, _ = _loss_and_output_error(_forward(net, x)[0], y, loss)
        except FloatingPointError:
            return np.inf
    return value


def loss_and_gradient(net, x, y, *, loss="mse"):
    r"""The training loss of ``net`` and its gradient, by backpropagation.

    .. math::

        \mathcal{L}_{\mathrm{mse}} = \frac{1}{2n} \sum_{i=1}^n \|\hat y(x_i) - y_i\|^2,
        \qquad
        \mathcal{L}_{\mathrm{ce}} = -\frac1n \sum_{i=1}^n
            \log \frac{e^{\hat y_{y_i}(x_i)}}{\sum_c e^{\hat y_c(x_i)}}.

    Parameters
    ----------
    net : MLP
    x : array_like, shape (n, d)
    y : array_like
        Targets of shape (n, c) for ``"mse"``; integer labels in ``0..c-1`` of
        shape (n,) for ``"cross_entropy"``.
    loss : {"mse", "cross_entropy"}, optional

    Returns
    -------
    value : float
        The loss.
    gradient : MLP
        The partial derivatives, in the layout of ``net``. The read-out
        gradients are zero when ``net.train_output`` is ``False``.

    Raises
    ------
    ValueError
        If shapes do not match ``net``, labels are out of range, or the forward
        pass overflows (:class:`resnet_theory.DivergenceError`).

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.mlp import init_mlp, loss_and_gradient
    >>> rng = np.random.default_rng(0)
    >>> net = init_mlp(2, 4, 3, 1, residual=True, rng=rng)
    >>> value, grad = loss_and_gradient(net, rng.normal(size=(6, 2)), np.ones((6, 1)))
    >>> grad.u.shape, round(value, 4)
    ((3, 4, 4), 0.3351)
    """
    net = _check_net(net)
    x = _check_x(net, x)
    y = _check_targets(net, x, y, loss)
    _, dsigma = _activation(net.activation)
    with np.errstate(over="raise", invalid="raise"):
        try:
            out, cache = _forward(net, x)
            hs, zs, acts = cache[:3]
            value, delta_out = _loss_and_output_error(out, y, loss)
        except FloatingPointError:
            value = np.inf
    if not np.isfinite(value):
        raise DivergenceError("net: the forward pass overflowed (weights too large)")
    if net.train_output:
        g_w_out, g_b_out = delta_out.T @ hs[-1], delta_out.sum(axis=0)
    else:
        g_w_out, g_b_out = np.zeros_like(net.w_out), np.zeros_like(net.b_out)
    delta = delta_out @ net.w_out
    g_u, g_b = np.empty_like(net.u), np.empty_like(net.b)
    g_v = None if net.v is None else np.empty_like(net.v)
    for j in reversed(range(net.depth)):
        if net.residual:
            g_v[j] = delta.T @ acts[j]
            dz = (delta @ net.v[j]) * dsigma(zs[j], acts[j])
            if net.normalization is not None:
                dz = _normalize_backward(dz, zs[j], cache[3][j], net.normalization)
            delta = delta + dz @ net.u[j]
        else:
            dz = delta * dsigma(zs[j], acts[j])
            if net.normalization is not None:
                dz = _normalize_backward(dz, zs[j], cache[3][j], net.normalization)
            delta = dz @ net.u[j]
        g_u[j] = dz.T @ hs[j]
        g_b[j] = dz.sum(axis=0)
    gradient = dataclasses.replace(
        net, w_in=delta.T @ x, b_in=delta.sum(axis=0), u=g_u, b=g_b, v=g_v,
        w_out=g_w_out, b_out=g_b_out,
    )
    return value, gradient


def layer_gradient_norms(gradient, *, biases=False):
    r"""The Frobenius norm of the gradient of each hidden layer, shape (L,).

    For a plain layer the norm of :math:`\partial \mathcal{L} / \partial U_j`;
    for a residual block that of :math:`(\partial \mathcal{L} / \partial U_j,
    \partial \mathcal{L} / \partial V_j)` together: the weights only. With
    ``biases=True`` the bias :math:`b_j` is included, which gives the norm of the
    gradient with respect to all of the layer's parameters. The two can differ by
    orders of magnitude: :math:`\partial \mathcal{L} / \partial U_j` is
    proportional to the layer's input :math:`h_{j-1}` and
    :math:`\partial \mathcal{L} / \partial b_j` is not, so where the forward
    signal has collapsed the biases carry most of the gradient. Entry 0 is the
    layer next to the input.

    Parameters
    ----------
    gradient : MLP
        A gradient, as returned by :func:`loss_and_gradient`.
    biases : bool, optional
        Include :math:`\partial \mathcal{L} / \partial b_j` (default: weights only).

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.mlp import init_mlp, loss_and_gradient, layer_gradient_norms
    >>> rng = np.random.default_rng(1)
    >>> net = init_mlp(2, 4, 5, 1, residual=False, rng=rng)
    >>> _, grad = loss_and_gradient(net, rng.normal(size=(6, 2)), np.ones((6, 1)))
    >>> layer_gradient_norms(grad).shape
    (5,)
    >>> bool(np.all(layer_gradient_norms(grad, biases=True) >= layer_gradient_norms(grad)))
    True
    """
    gradient = _check_net(gradient)
    if not isinstance(biases, (bool, np.bool_)):
        raise TypeError(f"biases must be True or False, got {biases!r}")
    squares = np.sum(gradient.u**2, axis=(1, 2))
    if gradient.v is not None:
        squares = squares + np.sum(gradient.v**2, axis=(1, 2))
    if biases:
        squares = squares + np.sum(gradient.b**2, axis=1)
    return np.sqrt(squares)


def accuracy(net, x, labels):
    """The fraction of rows of ``x`` whose largest output is at the label.

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.mlp import init_mlp, accuracy
    >>> net = init_mlp(2, 4, 1, 3, residual=True, rng=np.random.default_rng(0))
    >>> 0.0 <= accuracy(net, np.eye(2), np.array([0, 1])) <= 1.0
    True
    """
    net = _check_net(net)
    x = _check_x(net, x)
    labels = _check_targets(net, x, labels, "cross_entropy")
    return float(np.mean(np.argmax(forward(net, x), axis=1) == labels))


def train(net, x, y, *, steps, learning_rate, rng=None, batch_size=None, loss="mse",
          momentum=0.0, weight_decay=0.0, record_every=1):
    r"""Train ``net`` by (stochastic) gradient descent with optional momentum.

    With gradient :math:`g_t` on a mini-batch (the whole set when
    ``batch_size`` is ``None``), the update of every trainable array
    :math:`\theta` is the heavy-ball step

    .. math::

        m_{t+1} = \mu m_t + g_t + \lambda \theta_t, \qquad
        \theta_{t+1} = \theta_t - \eta\, m_{t+1},

    with momentum :math:`\mu`, weight decay :math:`\lambda` and learning rate
    :math:`\eta`. Biases are not decayed.

    Parameters
    ----------
    net : MLP
        The initial network (not modified).
    x, y : array_like
        Training inputs and targets, as in :func:`loss_and_gradient`.
    steps : int
        Number of updates.
    learning_rate : float
        The step size :math:`\eta > 0`.
    rng : numpy.random.Generator, optional
        Draws the mini-batches; required when ``batch_size`` is given.
    batch_size : int, optional
        Mini-batch size (sampled without replacement each step).
    loss : {"mse", "cross_entropy"}, optional
    momentum : float, optional
        :math:`\mu \in [0, 1)`.
    weight_decay : float, optional
        :math:`\lambda \ge 0`.
    record_every : int, optional
        Record the full training loss every this many steps (and at the end).

    Returns
    -------
    TrainingRun

    Raises
    ------
    resnet_theory.DivergenceError
        If the loss becomes non-finite or exceeds :math:`10^6` times its
        initial value: the message suggests a smaller ``learning_rate``.
    ValueError, TypeError
        On invalid arguments, naming them.

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.mlp import init_mlp, train
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(32, 2))
    >>> y = np.sin(x[:, :1])
    >>> net = init_mlp(2, 16, 4, 1, residual=True, rng=rng)
    >>> run = train(net, x, y, steps=200, learning_rate=0.1)
    >>> bool(run.losses[-1] < 0.2 * run.losses[0])
    True
    """
    net = _check_net(net)
    x = _check_x(net, x)
    y = _check_targets(net, x, y, loss)
    steps = _v.positive_int(steps, "steps")
    learning_rate = _v.positive(learning_rate, "learning_rate")
    momentum = _v.nonnegative(momentum, "momentum")
    if momentum >= 1:
        raise ValueError(f"momentum must lie in [0, 1), got {momentum}")
    weight_decay = _v.nonnegative(weight_decay, "weight_decay")
    record_every = _v.positive_int(record_every, "record_every")
    n = x.shape[0]
    if batch_size is not None:
        batch_size = _v.positive_int(batch_size, "batch_size")
        if batch_size > n:
            raise ValueError(f"batch_size must be at most the number of samples {n}, "
                             f"got {batch_size}")
        rng = _v.generator(rng)

    names = ["w_in", "b_in", "u", "b"] + (["v"] if net.residual else [])
    names += ["w_out", "b_out"] if net.train_output else []
    decayed = {"w_in", "u", "v", "w_out"}
    params = {name: getattr(net, name).copy() for name in names}
    velocity = {name: np.zeros_like(value) for name, value in params.items()}

    def current():
        return dataclasses.replace(net, **params)

    def diverged(step):
        return DivergenceError(
            f"learning_rate={learning_rate}: training diverged at step {step} "
            f"(the loss left every reasonable range); use a smaller learning_rate"
        )

    initial = _value(net, x, y, loss)
    if not np.isfinite(initial):
        raise DivergenceError("net: the loss at initialisation is not finite (weights too large)")
    recorded_steps, losses = [0], [initial]
    for step in range(1, steps + 1):
        if batch_size is None:
            xb, yb = x, y
        else:
            index = rng.choice(n, size=batch_size, replace=False)
            xb, yb = x[index], y[index]
        try:
            _, grad = loss_and_gradient(current(), xb, yb, loss=loss)
        except DivergenceError:
            raise diverged(step) from None
        for name in names:
            g = getattr(grad, name)
            if weight_decay and name in decayed:
                g = g + weight_decay * params[name]
            velocity[name] = momentum * velocity[name] + g
            params[name] -= learning_rate * velocity[name]
        if step % record_every == 0 or step == steps:
            value = _value(current(), x, y, loss)
            if not np.isfinite(value) or value > 1e6 * max(initial, 1e-12):
                raise diverged(step)
            recorded_steps.append(step)
            losses.append(value)
    return TrainingRun(steps=np.array(recorded_steps), losses=np.array(losses), net=current())


def _stacked_forward(params, x, sigma, kind, residual):
    """Forward pass of R networks at once; params hold arrays with a leading axis R."""
    w_in, b_in, u, b = params["w_in"], params["b_in"], params["u"], params["b"]
    hs, zs, acts, inv_stds = [x @ w_in.transpose(0, 2, 1) + b_in[:, None, :]], [], [], []
    axis = None if kind is None else _NORM_AXIS[kind] + 1
    # np.add.reduce(.) / count is np.mean, to the last bit, without its overhead
    count = None if kind is None else hs[0].shape[axis]
    for j in range(u.shape[1]):
        z = hs[-1] @ u[:, j].transpose(0, 2, 1) + b[:, j, None, :]
        if kind is not None:
            centred = z - np.add.reduce(z, axis=axis, keepdims=True) / count
            inv_std = 1.0 / np.sqrt(np.add.reduce(centred**2, axis=axis, keepdims=True)
                                    / count + _NORM_EPS)
            z = centred * inv_std
            inv_stds.append(inv_std)
        a = sigma(z)
        zs.append(z)
        acts.append(a)
        hs.append(hs[-1] + a @ params["v"][:, j].transpose(0, 2, 1) if residual else a)
    out = hs[-1] @ params["w_out"].transpose(0, 2, 1) + params["b_out"][:, None, :]
    return out, (hs, zs, acts, inv_stds)


def _stacked_gradient(params, x, y, net, sigma, dsigma):
    """Losses (shape (R,)) and gradients of R networks at once (mean squared error)."""
    kind, residual = net.normalization, net.residual
    n = x.shape[0]
    out, (hs, zs, acts, inv_stds) = _stacked_forward(params, x, sigma, kind, residual)
    error = out - y
    losses = 0.5 * np.sum(error**2, axis=(1, 2)) / n
    delta_out = error / n
    grads = {}
    if net.train_output:
        grads["w_out"] = delta_out.transpose(0, 2, 1) @ hs[-1]
        grads["b_out"] = delta_out.sum(axis=1)
    delta = delta_out @ params["w_out"]
    u = params["u"]
    g_u, g_b = np.empty_like(u), np.empty_like(params["b"])
    g_v = np.empty_like(params["v"]) if residual else None
    axis = None if kind is None else _NORM_AXIS[kind] + 1
    count = None if kind is None else hs[0].shape[axis]
    for j in reversed(range(u.shape[1])):
        if residual:
            g_v[:, j] = delta.transpose(0, 2, 1) @ acts[j]
            dz = (delta @ params["v"][:, j]) * dsigma(zs[j], acts[j])
        else:
            dz = delta * dsigma(zs[j], acts[j])
        if kind is not None:
            z_hat = zs[j]
            dz = inv_stds[j] * (dz - np.add.reduce(dz, axis=axis, keepdims=True) / count
                                - z_hat * (np.add.reduce(dz * z_hat, axis=axis,
                                                         keepdims=True) / count))
        g_u[:, j] = dz.transpose(0, 2, 1) @ hs[j]
        g_b[:, j] = dz.sum(axis=1)
        delta = delta + dz @ u[:, j] if residual else dz @ u[:, j]
    grads.update(w_in=delta.transpose(0, 2, 1) @ x, b_in=delta.sum(axis=1), u=g_u, b=g_b)
    if residual:
        grads["v"] = g_v
    return losses, grads


def train_at_rates(net, x, y, *, steps, learning_rates, record_every=1):
    r"""Full-batch gradient descent from ``net`` at several learning rates at once.

    The result for each rate is, up to rounding, that of
    ``train(net, x, y, steps=steps, learning_rate=rate, record_every=record_every)``
    (mean squared error, full batch, no momentum or weight decay), but the
    copies of the network are stacked along a new first axis and trained
    together, which is several times faster for small networks. A copy whose
    loss becomes non-finite, or exceeds :math:`10^6` times its initial value
    at a recorded step, is dropped: where :func:`train` would raise
    :class:`resnet_theory.DivergenceError`, this function returns ``None``.

    Parameters
    ----------
    net : MLP
        The initial network (not modified), shared by all rates.
    x, y : array_like
        Training inputs, shape (n, d), and targets, shape (n, c).
    steps : int
        Number of updates.
    learning_rates : sequence of float
        The step sizes :math:`\eta > 0`.
    record_every : int, optional
        Record the full training loss every this many steps (and at the end).

    Returns
    -------
    list of TrainingRun or None
        One entry per learning rate, in the given order; ``None`` for a run
        that diverged.

    Raises
    ------
    ValueError, TypeError
        On invalid arguments, naming them.

    Examples
    --------
    >>> import numpy as np
    >>> from resnet_theory.mlp import init_mlp, train, train_at_rates
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(32, 2))
    >>> y = np.sin(x[:, :1])
    >>> net = init_mlp(2, 8, 4, 1, residual=True, rng=rng)
    >>> runs = train_at_rates(net, x, y, steps=50, learning_rates=[0.1, 1e3])
    >>> single = train(net, x, y, steps=50, learning_rate=0.1)
    >>> bool(np.allclose(runs[0].losses, single.losses)), runs[1] is None
    (True, True)
    """
    net = _check_net(net)
    x = _check_x(net, x)
    y = _check_targets(net, x, y, "mse")
    steps = _v.positive_int(steps, "steps")
    record_every = _v.positive_int(record_every, "record_every")
    try:
        rates = np.atleast_1d(np.asarray(learning_rates, dtype=float))
    except (TypeError, ValueError):
        raise TypeError("learning_rates must be a sequence of numbers") from None
    if rates.ndim != 1 or rates.size == 0:
        raise ValueError("learning_rates must be a non-empty sequence of numbers")
    for rate in rates:
        _v.positive(float(rate), "learning_rates")
    sigma, dsigma = _activation(net.activation)
    names = ["w_in", "b_in", "u", "b"] + (["v"] if net.residual else [])
    names += ["w_out", "b_out"] if net.train_output else []
    all_names = ["w_in", "b_in", "u", "b", "v", "w_out", "b_out"]
    count = rates.size
    params = {name: np.repeat(getattr(net, name)[None], count, axis=0)
              for name in all_names if getattr(net, name) is not None}
    active = np.arange(count)
    initial = _value(net, x, y, "mse")
    if not np.isfinite(initial):
        raise DivergenceError("net: the loss at initialisation is not finite "
                              "(weights too large)")
    history = [[initial] for _ in range(count)]
    recorded = [0]
    limit = 1e6 * max(initial, 1e-12)

    def keep(mask):
        nonlocal active
        active = active[mask]
        for name in params:
            params[name] = params[name][mask]

    with np.errstate(all="ignore"):
        for step in range(1, steps + 2):
            losses, grads = _stacked_gradient(params, x, y, net, sigma, dsigma)
            previous = step - 1
            is_record = previous > 0 and (previous % record_every == 0
                                          or previous == steps)
            ok = np.isfinite(losses)
            for name in grads:
                ok &= np.all(np.isfinite(grads[name]), axis=tuple(
                    range(1, grads[name].ndim)))
            if is_record:
                ok_record = np.isfinite(losses) & (losses <= limit)
                for i, value in zip(active[ok_record], losses[ok_record], strict=True):
                    history[i].append(float(value))
                ok = ok_record if previous == steps else ok & ok_record
            if previous == steps:
                for i in active[~ok]:
                    history[i] = None
                keep(ok)
                break
            for i in active[~ok]:
                history[i] = None
            if not ok.all():
                grads = {name: g[ok] for name, g in grads.items()}
                keep(ok)
            if active.size == 0:
                break
            if is_record:
                recorded.append(previous)
            step_sizes = rates[active]
            for name in names:
                g = grads[name]
                params[name] -= step_sizes.reshape((-1,) + (1,) * (g.ndim - 1)) * g
    if steps not in recorded:
        recorded.append(steps)
    runs = [None] * count
    for position, i in enumerate(active):
        trained = dataclasses.replace(
            net, **{name: params[name][position] for name in params})
        runs[i] = TrainingRun(steps=np.array(recorded), losses=np.array(history[i]),
                              net=trained)
    return runs

"""Specification of resnet_theory.mlp: plain and residual MLPs with backpropagation."""

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from resnet_theory import DivergenceError
from resnet_theory.mlp import (
    MLP,
    accuracy,
    forward,
    init_mlp,
    layer_gradient_norms,
    loss_and_gradient,
    train,
    train_at_rates,
)

FIELDS = ("w_in", "b_in", "u", "b", "v", "w_out", "b_out")


def _net(residual=True, activation="tanh", depth=3, seed=0, **kwargs):
    return init_mlp(3, 5, depth, 2, residual=residual, activation=activation,
                    rng=np.random.default_rng(seed), **kwargs)


def _data(seed=1, n=7):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 3)), rng.normal(size=(n, 2)), rng.integers(0, 2, size=n)


def _finite_difference(net, x, y, loss, name, index, h=1e-6):
    def value(shift):
        array = getattr(net, name).copy()
        array[index] += shift
        return loss_and_gradient(dataclasses.replace(net, **{name: array}), x, y, loss=loss)[0]
    return (value(h) - value(-h)) / (2 * h)


def _assert_gradient_matches_finite_differences(net, loss, seed, rng):
    """One random entry of every parameter's gradient against central differences."""
    x, y_real, labels = _data(seed + 1)
    y = y_real if loss == "mse" else labels
    _, grad = loss_and_gradient(net, x, y, loss=loss)
    for name in FIELDS:
        if getattr(net, name) is None:
            continue
        shape = getattr(net, name).shape
        index = tuple(int(rng.integers(0, s)) for s in shape)
        expected = _finite_difference(net, x, y, loss, name, index)
        assert getattr(grad, name)[index] == pytest.approx(expected, rel=1e-4, abs=1e-7)


@given(residual=st.booleans(), activation=st.sampled_from(["tanh", "sigmoid", "relu"]),
       loss=st.sampled_from(["mse", "cross_entropy"]), seed=st.integers(0, 10_000))
def test_gradient_matches_finite_differences(residual, activation, loss, seed):
    rng = np.random.default_rng(seed)
    # Non-zero biases keep every ReLU pre-activation off its kink at 0.
    net = dataclasses.replace(_net(residual, activation, seed=seed),
                              b_in=rng.normal(0, 0.1, 5), b=rng.normal(0, 0.1, (3, 5)))
    _assert_gradient_matches_finite_differences(net, loss, seed, rng)


def test_residual_block_with_zero_branch_is_the_identity():
    net = _net(residual=True, v_std=0.0)
    x, _, _ = _data()
    embedded = x @ net.w_in.T + net.b_in
    np.testing.assert_allclose(forward(net, x), embedded @ net.w_out.T + net.b_out)


def test_plain_layer_applies_the_activation():
    net = _net(residual=False, activation="relu", depth=1)
    x, _, _ = _data()
    hidden = np.maximum((x @ net.w_in.T) @ net.u[0].T, 0.0)
    np.testing.assert_allclose(forward(net, x), hidden @ net.w_out.T)


def test_frozen_read_out_gets_no_gradient_and_is_not_counted():
    net = _net(train_output=False)
    x, y, _ = _data()
    _, grad = loss_and_gradient(net, x, y)
    assert not grad.w_out.any() and not grad.b_out.any()
    assert net.num_parameters == _net().num_parameters - net.w_out.size - net.b_out.size


def test_frozen_read_out_stays_fixed_in_training():
    net = _net(train_output=False)
    x, y, _ = _data()
    run = train(net, x, y, steps=5, learning_rate=0.05)
    np.testing.assert_array_equal(run.net.w_out, net.w_out)


def test_layer_gradient_norms_has_one_entry_per_layer():
    net = _net(depth=6)
    x, y, _ = _data()
    _, grad = loss_and_gradient(net, x, y)
    norms = layer_gradient_norms(grad)
    assert norms.shape == (6,)
    expected = np.sqrt(np.sum(grad.u[2] ** 2) + np.sum(grad.v[2] ** 2))
    assert norms[2] == pytest.approx(expected)


def test_layer_gradient_norms_with_biases_adds_the_bias_gradient():
    net = _net(residual=False, depth=5)
    x, y, _ = _data()
    _, grad = loss_and_gradient(net, x, y)
    with_biases = layer_gradient_norms(grad, biases=True)
    expected = np.sqrt(np.sum(grad.u**2, axis=(1, 2)) + np.sum(grad.b**2, axis=1))
    np.testing.assert_allclose(with_biases, expected, rtol=1e-12)
    assert np.all(with_biases >= layer_gradient_norms(grad))
    with pytest.raises(TypeError, match="biases"):
        layer_gradient_norms(grad, biases="yes")


def test_full_batch_training_decreases_the_loss():
    net = _net()
    x, y, _ = _data(n=20)
    run = train(net, x, y, steps=100, learning_rate=0.1)
    assert run.losses[-1] < 0.5 * run.losses[0]
    assert run.steps[0] == 0 and run.steps[-1] == 100


def test_training_records_every_requested_step_and_the_last():
    net = _net()
    x, y, _ = _data()
    run = train(net, x, y, steps=10, learning_rate=0.01, record_every=4)
    assert run.steps.tolist() == [0, 4, 8, 10]


def test_minibatch_training_is_reproducible_with_a_seed():
    net = _net()
    x, y, _ = _data(n=20)
    runs = [train(net, x, y, steps=20, learning_rate=0.05, batch_size=5,
                  rng=np.random.default_rng(3), momentum=0.9) for _ in range(2)]
    np.testing.assert_array_equal(runs[0].losses, runs[1].losses)


def test_cross_entropy_training_fits_separable_labels():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 3))
    labels = (x[:, 0] > 0).astype(int)
    net = _net()
    run = train(net, x, labels, steps=300, learning_rate=0.5, loss="cross_entropy")
    assert accuracy(run.net, x, labels) == 1.0


def test_training_reports_divergence_naming_the_learning_rate():
    net = _net(activation="relu", u_std=1.5)
    x, y, _ = _data()
    with pytest.raises(DivergenceError, match="learning_rate"):
        train(net, x, 100 * y, steps=200, learning_rate=50.0)


def test_weight_decay_shrinks_the_weights():
    net = _net()
    x, y, _ = _data()
    plain = train(net, x, y, steps=50, learning_rate=0.05)
    decayed = train(net, x, y, steps=50, learning_rate=0.05, weight_decay=0.5)
    assert np.linalg.norm(decayed.net.u) < np.linalg.norm(plain.net.u)


def test_num_parameters_counts_every_trainable_array():
    net = _net(residual=False)
    assert net.num_parameters == 5 * 3 + 5 + 3 * 25 + 3 * 5 + 2 * 5 + 2
    assert _net(residual=True).num_parameters == net.num_parameters + 3 * 25


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"d_in": 0}, "d_in"),
    ({"width": -1}, "width"),
    ({"activation": "gelu"}, "activation"),
    ({"u_std": -1.0}, "u_std"),
    ({"residual": False, "v_std": 0.1}, "v_std"),
])
def test_init_rejects_invalid_arguments(kwargs, match):
    arguments = {"d_in": 3, "width": 4, "depth": 2, "d_out": 1, "residual": True,
                 "rng": np.random.default_rng(0)} | kwargs
    with pytest.raises(ValueError, match=match):
        init_mlp(**arguments)


def test_init_requires_a_generator_and_a_bool():
    with pytest.raises(TypeError, match="rng"):
        init_mlp(3, 4, 2, 1, residual=True, rng=0)
    with pytest.raises(TypeError, match="residual"):
        init_mlp(3, 4, 2, 1, residual=1, rng=np.random.default_rng(0))


def test_forward_rejects_wrong_input_width_and_non_networks():
    with pytest.raises(ValueError, match="x"):
        forward(_net(), np.zeros((2, 4)))
    with pytest.raises(TypeError, match="net"):
        forward({"u": 1}, np.zeros((2, 3)))


def test_loss_rejects_bad_targets():
    net = _net()
    x, y, labels = _data()
    with pytest.raises(ValueError, match="y"):
        loss_and_gradient(net, x, y[:, :1])
    with pytest.raises(ValueError, match="y"):
        loss_and_gradient(net, x, labels + 5, loss="cross_entropy")
    with pytest.raises(ValueError, match="y"):
        loss_and_gradient(net, x, labels.astype(float), loss="cross_entropy")
    with pytest.raises(ValueError, match="loss"):
        loss_and_gradient(net, x, y, loss="hinge")


def test_forward_overflow_is_reported_not_returned():
    net = _net(activation="relu")
    huge = dataclasses.replace(net, u=net.u * 1e120)
    x, y, _ = _data()
    with pytest.raises(DivergenceError, match="net"):
        loss_and_gradient(huge, x, y)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"steps": 0}, "steps"),
    ({"learning_rate": 0.0}, "learning_rate"),
    ({"momentum": 1.0}, "momentum"),
    ({"weight_decay": -0.1}, "weight_decay"),
    ({"batch_size": 100, "rng": np.random.default_rng(0)}, "batch_size"),
    ({"record_every": 0}, "record_every"),
])
def test_train_rejects_invalid_arguments(kwargs, match):
    x, y, _ = _data()
    arguments = {"steps": 3, "learning_rate": 0.1} | kwargs
    with pytest.raises(ValueError, match=match):
        train(_net(), x, y, **arguments)


def test_minibatches_need_a_generator():
    x, y, _ = _data()
    with pytest.raises(TypeError, match="rng"):
        train(_net(), x, y, steps=2, learning_rate=0.1, batch_size=3)


def test_mlp_is_immutable():
    net = _net()
    assert isinstance(net, MLP)
    with pytest.raises(dataclasses.FrozenInstanceError):
        net.u = None


@given(residual=st.booleans(), normalization=st.sampled_from(["batch", "layer"]),
       activation=st.sampled_from(["tanh", "sigmoid", "relu"]),
       loss=st.sampled_from(["mse", "cross_entropy"]), seed=st.integers(0, 10_000))
def test_normalized_gradient_matches_finite_differences(residual, normalization, activation,
                                                        loss, seed):
    rng = np.random.default_rng(seed)
    net = dataclasses.replace(_net(residual, activation, seed=seed, normalization=normalization),
                              b_in=rng.normal(0, 0.1, 5), b=rng.normal(0, 0.1, (3, 5)))
    _assert_gradient_matches_finite_differences(net, loss, seed, rng)


@pytest.mark.parametrize(("normalization", "axis"), [("batch", 0), ("layer", 1)])
def test_normalized_plain_layer_has_zero_mean_and_unit_variance(normalization, axis):
    net = _net(residual=False, activation="tanh", depth=1, normalization=normalization)
    net = dataclasses.replace(net, w_out=np.eye(2, 5), b_out=np.zeros(2))
    x = np.random.default_rng(3).normal(size=(40, 3))
    z = (x @ net.w_in.T + net.b_in) @ net.u[0].T + net.b[0]
    z_hat = (z - z.mean(axis=axis, keepdims=True)) / np.sqrt(
        z.var(axis=axis, keepdims=True) + 1e-5)
    assert np.allclose(forward(net, x), np.tanh(z_hat)[:, :2])


def test_batch_normalization_removes_the_effect_of_the_bias():
    net = _net(residual=False, normalization="batch")
    x, y, _ = _data()
    _, grad = loss_and_gradient(net, x, y)
    assert np.allclose(grad.b, 0.0, atol=1e-10)


def test_default_network_is_not_normalized():
    assert _net().normalization is None


def test_normalization_adds_no_parameters():
    assert (_net(normalization="layer").num_parameters == _net().num_parameters)


def test_init_rejects_unknown_normalization():
    with pytest.raises(ValueError, match="normalization"):
        _net(normalization="group")


# ------------------------------------------------------------ train_at_rates


@pytest.mark.parametrize("residual", [False, True])
@pytest.mark.parametrize("normalization", [None, "batch", "layer"])
def test_train_at_rates_gives_the_runs_of_train(residual, normalization):
    x, y, _ = _data(n=9)
    net = _net(residual, "relu", depth=4, normalization=normalization)
    rates = [30.0, 0.3, 0.05, 0.01]
    runs = train_at_rates(net, x, y, steps=25, learning_rates=rates, record_every=4)
    for rate, run in zip(rates, runs, strict=True):
        try:
            single = train(net, x, y, steps=25, learning_rate=rate, record_every=4)
        except DivergenceError:
            assert run is None, rate
            continue
        assert run is not None, rate
        np.testing.assert_array_equal(run.steps, single.steps)
        np.testing.assert_allclose(run.losses, single.losses, rtol=1e-10)
        for name in FIELDS:
            if getattr(net, name) is not None:
                np.testing.assert_allclose(getattr(run.net, name),
                                           getattr(single.net, name),
                                           rtol=1e-9, atol=1e-12)
    assert runs[0] is None  # a step of 30 diverges


def test_train_at_rates_keeps_a_frozen_read_out():
    x, y, _ = _data()
    net = _net(True, "tanh", train_output=False)
    (run,) = train_at_rates(net, x, y, steps=5, learning_rates=[0.1])
    np.testing.assert_array_equal(run.net.w_out, net.w_out)
    single = train(net, x, y, steps=5, learning_rate=0.1)
    np.testing.assert_allclose(run.losses, single.losses, rtol=1e-10)


@pytest.mark.parametrize("rates", [[], [0.1, -1.0], [0.0], [[0.1]], ["a"]])
def test_train_at_rates_rejects_bad_learning_rates(rates):
    x, y, _ = _data()
    with pytest.raises((ValueError, TypeError), match="learning_rates"):
        train_at_rates(_net(), x, y, steps=3, learning_rates=rates)


def test_train_at_rates_rejects_labels():
    x, _, labels = _data()
    with pytest.raises(ValueError, match="y"):
        train_at_rates(_net(), x, labels, steps=3, learning_rates=[0.1])

"""Specifications of resnet_theory.expressivity (Hardt & Ma, Theorem 3.2)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from resnet_theory.expressivity import (
    build_residual_network,
    default_width,
    fit_residual_network,
    min_squared_distance,
    residual_block,
    selection_gaps,
)


def sphere(seed, n, d):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.mark.parametrize("n", [2, 10, 150, 600, 1500])
def test_fits_every_training_point_exactly(n):
    x = sphere(n, n, 40)
    rng = np.random.default_rng(n)
    labels = rng.integers(0, 5, size=n)
    net = fit_residual_network(x, labels, rng=rng)
    np.testing.assert_array_equal(net.predict(x), labels)
    np.testing.assert_allclose(net.forward(x), np.eye(labels.max() + 1)[labels], atol=1e-9)


@settings(max_examples=15)
@given(
    seed=st.integers(0, 10_000),
    n=st.integers(2, 80),
    d=st.integers(2, 30),
    r=st.integers(1, 6),
    width=st.integers(4, 40),
)
def test_fit_is_exact_for_random_data_and_widths(seed, n, d, r, width):
    x = sphere(seed, n, d)
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, r, size=n)
    try:
        net = fit_residual_network(x, labels, rng=rng, width=max(width, d))
    except ValueError as error:  # random points may be too close for this width
        assert "too small" in str(error)
        return
    np.testing.assert_array_equal(net.predict(x), labels)


def test_each_block_moves_its_points_and_fixes_the_others():
    x = sphere(3, 30, 8)
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, size=30)
    net = fit_residual_network(x, labels, rng=rng, width=8)
    before = net.hidden(x, blocks=1)
    after = net.hidden(x, blocks=2)
    moved = np.zeros(30, dtype=bool)
    moved[8:16] = True
    np.testing.assert_allclose(after[moved], net.surrogates[labels[moved]], atol=1e-12)
    np.testing.assert_array_equal(after[~moved], before[~moved])


def test_shapes_depth_and_parameter_count():
    n, d, r, k = 100, 20, 3, 24
    x = sphere(0, n, d)
    labels = np.arange(n) % r
    net = fit_residual_network(x, labels, rng=np.random.default_rng(0), width=k)
    assert (net.width, net.depth, net.num_classes, net.input_dim) == (k, 5, r, d)
    assert net.num_parameters == k * d + 5 * (2 * k * k + k) + r * k + r + r * r
    assert net.margin > 0 and net.separation > 0


def test_surrogates_have_small_inner_products():
    x = sphere(1, 50, 10)
    net = fit_residual_network(x, np.arange(50) % 7, rng=np.random.default_rng(1))
    gram = net.surrogates @ net.surrogates.T
    assert np.max(gram - 2 * np.eye(7)) < 0.5
    np.testing.assert_allclose(np.diag(gram), 1.0)


def test_default_width_grows_like_log_n():
    assert default_width(1000) == 111
    assert default_width(10**6) <= 2 * default_width(1000)


@pytest.mark.parametrize("num_classes", [2, 10, 100, 1000, 10**5])
def test_default_width_meets_the_union_bound_for_surrogates(num_classes):
    # r^2 / 2 pairs, each with P(<q, q'> >= 1/2) <= exp(-k / 8): failure <= 1 / (2 r)
    k = default_width(2, num_classes)
    assert num_classes**2 / 2 * math.exp(-k / 8) <= 1 / (2 * num_classes) + 1e-12


def test_min_squared_distance_and_gaps():
    assert min_squared_distance(np.eye(4)) == pytest.approx(2.0)
    np.testing.assert_allclose(selection_gaps(np.eye(3), np.zeros((0, 3))), 1.0)


def test_residual_block_adds_the_branch():
    h = np.array([[1.0, 0.0]])
    out = residual_block(h, np.eye(2), np.array([0.0, -1.0]), 2 * np.eye(2))
    np.testing.assert_allclose(out, [[3.0, 0.0]])


def test_rejects_duplicate_points():
    x = sphere(0, 5, 3)
    x[4] = x[1]
    with pytest.raises(ValueError, match="duplicate"):
        fit_residual_network(x, np.zeros(5, dtype=int), rng=np.random.default_rng(0))


def test_rejects_rows_not_of_unit_norm():
    x = 2 * sphere(0, 5, 3)
    with pytest.raises(ValueError, match="unit norm"):
        fit_residual_network(x, np.zeros(5, dtype=int), rng=np.random.default_rng(0))


@pytest.mark.parametrize("labels", [np.array([0.0, 1.0, 0.0]), np.array([True, False, True])])
def test_rejects_labels_that_are_not_integers(labels):
    with pytest.raises(ValueError, match="labels must be integers"):
        fit_residual_network(sphere(0, 3, 3), labels, rng=np.random.default_rng(0))


def test_rejects_negative_labels_and_wrong_length():
    with pytest.raises(ValueError, match="non-negative"):
        fit_residual_network(sphere(0, 3, 3), np.array([0, -1, 1]), rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="labels must have shape"):
        fit_residual_network(sphere(0, 3, 3), np.array([0, 1]), rng=np.random.default_rng(0))


def test_rejects_too_few_points():
    with pytest.raises(ValueError, match="at least two rows"):
        fit_residual_network(sphere(0, 1, 3), np.array([0]), rng=np.random.default_rng(0))


def test_rejects_non_finite_input():
    x = sphere(0, 3, 3)
    x[0, 0] = np.nan
    with pytest.raises(ValueError, match="x must contain only finite"):
        fit_residual_network(x, np.array([0, 1, 0]), rng=np.random.default_rng(0))


def test_raises_when_the_width_cannot_keep_points_separated():
    x = sphere(0, 400, 200)
    x[1] = x[0] + 1e-3 * sphere(1, 1, 200)[0]
    x[1] /= np.linalg.norm(x[1])
    with pytest.raises(ValueError, match="width k = 3 is too small"):
        fit_residual_network(
            x, np.arange(400) % 2, rng=np.random.default_rng(0), width=3, max_draws=3
        )


def test_requires_a_generator():
    with pytest.raises(TypeError, match="rng"):
        fit_residual_network(sphere(0, 3, 3), np.array([0, 1, 0]), rng=1)


def test_hidden_rejects_bad_block_count():
    net = fit_residual_network(sphere(0, 3, 3), np.array([0, 1, 0]), rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="blocks"):
        net.hidden(sphere(0, 3, 3), blocks=net.depth + 1)


def test_build_from_the_draws_of_fit_gives_the_same_network():
    x = sphere(5, 60, 12)
    labels = np.arange(60) % 4
    net = fit_residual_network(x, labels, rng=np.random.default_rng(5), width=16)
    again = build_residual_network(
        x, labels, projection=net.projection, surrogates=net.surrogates
    )
    for name in ("block_u", "block_b", "block_v", "output_u", "output_b", "output_v"):
        np.testing.assert_array_equal(getattr(again, name), getattr(net, name))
    np.testing.assert_array_equal(again.predict(x), labels)
    assert again.draws == 1


def test_build_rejects_surrogates_with_a_large_inner_product():
    q = np.array([[1.0, 0.0, 0.0], [0.6, 0.8, 0.0]])  # inner product 0.6
    with pytest.raises(ValueError, match="inner product 0.600 >= 1/2"):
        build_residual_network(sphere(0, 4, 3), [0, 1, 0, 1], projection=np.eye(3),
                               surrogates=q)


def test_build_rejects_a_surrogate_on_a_data_point():
    x = np.eye(3)
    q = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0]])  # q_0 = x_0: gap 0
    with pytest.raises(ValueError, match="smallest selection gap"):
        build_residual_network(x, [0, 1, 0], projection=np.eye(3), surrogates=q)


def test_build_validates_its_draws():
    x = sphere(0, 4, 3)
    q = np.array([[1.0, 0.0], [0.0, 1.0]])
    with pytest.raises(ValueError, match="projection"):
        build_residual_network(x, [0, 1, 0, 1], projection=np.eye(2), surrogates=q)
    with pytest.raises(ValueError, match="unit norm"):
        build_residual_network(x, [0, 1, 0, 1], projection=np.eye(2, 3), surrogates=2 * q)
    with pytest.raises(ValueError, match="a row for every class"):
        build_residual_network(x, [0, 1, 2, 1], projection=np.eye(2, 3), surrogates=q)

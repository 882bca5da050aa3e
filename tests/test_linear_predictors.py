"""Specification of resnet_theory.linear_predictors (least squares in a ball)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from resnet_theory.linear_predictors import LinearFit, least_squares, linear_risk


def make_sample(seed, n=20, d=3):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    y = x @ rng.normal(scale=2.0, size=d) + 0.3 * rng.normal(size=n)
    return x, y


def risk_gradient(u, x, y):
    return x.T @ (x @ u - y) / len(y)


def random_unit_vectors(rng, count, d):
    u = rng.normal(size=(count, d))
    return u / np.linalg.norm(u, axis=1, keepdims=True)


SHAPES = [(20, 3), (5, 5), (3, 5), (1, 4)]  # over- and underdetermined samples


# --- the risk -------------------------------------------------------------------------


def test_linear_risk_is_half_the_mean_squared_error():
    x, y = make_sample(0)
    u = np.array([0.5, -1.0, 2.0])
    assert linear_risk(u, x, y) == pytest.approx(
        0.5 * np.mean((x @ u - y) ** 2), rel=1e-12
    )


def test_linear_risk_of_the_docstring_example():
    assert linear_risk([1.0, 0.0], np.eye(2), np.array([1.0, 1.0])) == 0.25


# --- unconstrained least squares ------------------------------------------------------


@pytest.mark.parametrize(("n", "d"), SHAPES)
@pytest.mark.parametrize("seed", range(3))
def test_least_squares_without_radius_equals_numpy_lstsq(seed, n, d):
    x, y = make_sample(seed, n, d)
    fit = least_squares(x, y)
    expected = np.linalg.lstsq(x, y, rcond=None)[0]
    np.testing.assert_allclose(fit.coef, expected, rtol=1e-9, atol=1e-12)
    assert fit.multiplier == 0.0


@pytest.mark.parametrize(("n", "d"), SHAPES)
def test_least_squares_value_is_the_risk_of_its_coefficients(n, d):
    x, y = make_sample(1, n, d)
    fit = least_squares(x, y)
    assert isinstance(fit, LinearFit)
    assert fit.value == pytest.approx(linear_risk(fit.coef, x, y), rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("seed", range(3))
def test_least_squares_solves_the_normal_equations(seed):
    x, y = make_sample(seed)
    np.testing.assert_allclose(
        risk_gradient(least_squares(x, y).coef, x, y), 0.0, atol=1e-12
    )


def test_least_squares_of_the_docstring_example():
    fit = least_squares(np.eye(2), np.array([3.0, 4.0]))
    np.testing.assert_allclose(fit.coef, [3.0, 4.0])
    assert fit.value == pytest.approx(0.0, abs=1e-28)


# --- least squares in a ball ----------------------------------------------------------


@given(seed=st.integers(0, 2**32 - 1), shrink=st.floats(0.01, 3.0))
def test_least_squares_in_a_ball_stays_in_the_ball(seed, shrink):
    x, y = make_sample(seed, n=8, d=3)
    radius = shrink * np.linalg.norm(least_squares(x, y).coef)
    assert np.linalg.norm(least_squares(x, y, radius).coef) <= radius + 1e-9


@given(seed=st.integers(0, 2**32 - 1), shrink=st.floats(0.01, 0.99))
def test_least_squares_in_a_small_ball_lands_on_the_sphere(seed, shrink):
    x, y = make_sample(seed, n=8, d=3)
    radius = shrink * np.linalg.norm(least_squares(x, y).coef)
    fit = least_squares(x, y, radius)
    assert np.linalg.norm(fit.coef) == pytest.approx(radius, rel=1e-9)
    assert fit.multiplier > 0


@given(seed=st.integers(0, 2**32 - 1), shrink=st.floats(0.01, 0.99))
def test_least_squares_in_a_small_ball_satisfies_the_kkt_conditions(seed, shrink):
    x, y = make_sample(seed, n=8, d=3)
    radius = shrink * np.linalg.norm(least_squares(x, y).coef)
    fit = least_squares(x, y, radius)
    scale = np.linalg.norm(risk_gradient(np.zeros(3), x, y))
    np.testing.assert_allclose(
        risk_gradient(fit.coef, x, y),
        -fit.multiplier * fit.coef,
        atol=1e-9 * (1 + scale),
    )


@pytest.mark.parametrize(("n", "d"), SHAPES)
@pytest.mark.parametrize("shrink", [0.1, 0.5, 0.9])
def test_no_point_of_the_sphere_beats_the_constrained_solution(n, d, shrink):
    x, y = make_sample(7, n, d)
    radius = shrink * np.linalg.norm(least_squares(x, y).coef)
    fit = least_squares(x, y, radius)
    rng = np.random.default_rng(11)
    for u in radius * random_unit_vectors(rng, 2000, d):
        assert fit.value <= linear_risk(u, x, y) + 1e-12


@pytest.mark.parametrize(("n", "d"), SHAPES)
def test_no_point_inside_the_ball_beats_the_constrained_solution(n, d):
    x, y = make_sample(8, n, d)
    radius = 0.4 * np.linalg.norm(least_squares(x, y).coef)
    fit = least_squares(x, y, radius)
    rng = np.random.default_rng(12)
    directions = random_unit_vectors(rng, 2000, d)
    for u in radius * rng.uniform(size=(2000, 1)) * directions:
        assert fit.value <= linear_risk(u, x, y) + 1e-12


@pytest.mark.parametrize("grow", [1.0 + 1e-6, 1.5, 10.0])
def test_least_squares_in_a_large_ball_is_unconstrained_with_zero_multiplier(grow):
    x, y = make_sample(2)
    free = least_squares(x, y)
    fit = least_squares(x, y, grow * np.linalg.norm(free.coef))
    np.testing.assert_array_equal(fit.coef, free.coef)
    assert fit.multiplier == 0.0


def test_least_squares_in_the_unit_ball_of_the_docstring_example():
    fit = least_squares(np.eye(2), np.array([3.0, 4.0]), radius=1.0)
    np.testing.assert_allclose(fit.coef, [0.6, 0.8], rtol=1e-9)
    # gradient (u - (3, 4)) / 2 = -mu u  =>  mu = (5 - 1) / 2
    assert fit.multiplier == pytest.approx(2.0, rel=1e-9)


@pytest.mark.parametrize("gap", [1e-6, 1e-9, 1e-12])
def test_least_squares_with_a_radius_just_below_the_unconstrained_norm(gap):
    fit = least_squares(np.eye(2), np.array([3.0, 4.0]), radius=5.0 * (1 - gap))
    np.testing.assert_allclose(fit.coef, [3.0 * (1 - gap), 4.0 * (1 - gap)], rtol=1e-9)


@pytest.mark.parametrize("gap", [1e-14, 1e-15])
def test_least_squares_with_a_radius_a_rounding_error_below_the_unconstrained_norm(gap):
    fit = least_squares(np.eye(2), np.array([3.0, 4.0]), radius=5.0 * (1 - gap))
    np.testing.assert_allclose(fit.coef, [3.0, 4.0], rtol=1e-12)
    assert np.linalg.norm(fit.coef) <= 5.0 * (1 - gap) + 1e-12


def test_least_squares_with_zero_targets_is_zero():
    x, _ = make_sample(0)
    fit = least_squares(x, np.zeros(len(x)), radius=1.0)
    np.testing.assert_array_equal(fit.coef, 0.0)
    assert fit.value == 0.0


# --- argument validation --------------------------------------------------------------


@pytest.mark.parametrize("radius", [0.0, -1.0])
def test_least_squares_rejects_non_positive_radius(radius):
    x, y = make_sample(0)
    with pytest.raises(ValueError, match="radius must be positive"):
        least_squares(x, y, radius)


@pytest.mark.parametrize("radius", [np.nan, np.inf])
def test_least_squares_rejects_non_finite_radius(radius):
    x, y = make_sample(0)
    with pytest.raises(ValueError, match="radius must be finite"):
        least_squares(x, y, radius)


@pytest.mark.parametrize("radius", [True, "1.0"])
def test_least_squares_rejects_radius_that_is_not_a_number(radius):
    x, y = make_sample(0)
    with pytest.raises(TypeError, match="radius"):
        least_squares(x, y, radius)


@pytest.mark.parametrize(
    "function", [least_squares, lambda x, y: linear_risk([0.0], x, y)]
)
def test_rejects_x_that_is_not_a_matrix(function):
    with pytest.raises(ValueError, match="x must be 2-dimensional"):
        function(np.ones(4), np.ones(4))


@pytest.mark.parametrize("y", [np.ones(3), np.ones((4, 1))])
def test_least_squares_rejects_y_of_the_wrong_shape(y):
    with pytest.raises(ValueError, match="y must have shape"):
        least_squares(np.ones((4, 2)), y)


@pytest.mark.parametrize("name", ["x", "y"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_least_squares_rejects_non_finite_data(name, bad):
    data = {"x": np.ones((4, 2)), "y": np.ones(4)}
    data[name].flat[0] = bad
    with pytest.raises(ValueError, match=f"{name} must contain only finite numbers"):
        least_squares(**data)


def test_least_squares_rejects_an_empty_sample():
    with pytest.raises(ValueError, match="at least one sample"):
        least_squares(np.ones((0, 2)), np.ones(0))


def test_linear_risk_rejects_u_of_the_wrong_shape():
    with pytest.raises(ValueError, match="u must have shape"):
        linear_risk([1.0, 2.0, 3.0], np.ones((4, 2)), np.ones(4))

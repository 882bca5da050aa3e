"""Specifications of resnet_theory.linear_residual (Hardt & Ma, Section 2)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from resnet_theory.linear_residual import (
    ball_parametrisation,
    gradient_lower_bound,
    population_risk,
    prefix_products,
    risk_gradient,
    standard_risk,
    standard_risk_gradient,
    suffix_products,
    worst_case_gradient_ratio,
)
from resnet_theory.near_identity import near_identity_factors, near_identity_product


def problem(seed, depth, d, scale=0.3):
    rng = np.random.default_rng(seed)
    factors = scale * rng.standard_normal((depth, d, d)) / np.sqrt(d)
    target = rng.standard_normal((d, d))
    x = rng.standard_normal((d, d))
    covariance = x @ x.T + 0.1 * np.eye(d)
    return factors, target, covariance


def finite_difference_gradient(fun, factors, step=1e-6):
    grad = np.zeros_like(factors)
    for index in np.ndindex(*factors.shape):
        plus, minus = factors.copy(), factors.copy()
        plus[index] += step
        minus[index] -= step
        grad[index] = (fun(plus) - fun(minus)) / (2 * step)
    return grad


@settings(max_examples=20)
@given(seed=st.integers(0, 10_000), depth=st.integers(1, 5), d=st.integers(1, 3))
def test_gradient_matches_finite_differences(seed, depth, d):
    factors, target, covariance = problem(seed, depth, d)
    numeric = finite_difference_gradient(
        lambda a: population_risk(a, target, covariance), factors
    )
    np.testing.assert_allclose(risk_gradient(factors, target, covariance), numeric, atol=1e-5)


def test_gradient_is_the_documented_product_and_not_the_printed_order():
    # the docstring's formula, factor by factor:
    # 2 (I + A_{i+1}^T)...(I + A_l^T) E Sigma (I + A_1^T)...(I + A_{i-1}^T);
    # the paper's (2.5) reverses the order on each side
    factors, target, covariance = problem(0, 4, 3, scale=1.0)
    eye = np.eye(3)
    error = near_identity_product(factors) - target
    grad = risk_gradient(factors, target, covariance)
    for i in range(4):  # layer i + 1
        later = [(eye + a).T for a in factors[i + 1:]]  # A_{i+2}^T, ..., A_l^T
        earlier = [(eye + a).T for a in factors[:i]]  # A_1^T, ..., A_i^T
        documented = 2 * np.linalg.multi_dot([eye, *later, error, covariance, *earlier, eye])
        np.testing.assert_allclose(grad[i], documented, atol=1e-10)
        printed = 2 * np.linalg.multi_dot(
            [eye, *later[::-1], error, covariance, *earlier[::-1], eye]
        )
        if len(later) >= 2 or len(earlier) >= 2:
            assert np.linalg.norm(printed - grad[i]) > 1e-3 * np.linalg.norm(grad[i])


@settings(max_examples=20)
@given(seed=st.integers(0, 10_000), depth=st.integers(1, 5), d=st.integers(1, 3))
def test_standard_gradient_matches_finite_differences(seed, depth, d):
    weights, target, covariance = problem(seed, depth, d, scale=1.0)
    numeric = finite_difference_gradient(
        lambda w: standard_risk(w, target, covariance), weights
    )
    np.testing.assert_allclose(
        standard_risk_gradient(weights, target, covariance), numeric, atol=1e-5
    )


def test_risk_matches_monte_carlo_expectation():
    factors, target, covariance = problem(0, 3, 2)
    rng = np.random.default_rng(1)
    n = 400_000
    x = rng.multivariate_normal(np.zeros(2), covariance, size=n)
    y = x @ target.T + rng.standard_normal((n, 2))
    prediction = x @ near_identity_product(factors).T
    empirical = np.mean(np.sum((y - prediction) ** 2, axis=1))
    assert empirical == pytest.approx(population_risk(factors, target, covariance), rel=0.01)


def test_risk_at_an_exact_factorisation_is_the_noise_level():
    target = np.array([[2.0, 1.0], [-1.0, 1.5]])
    factors = near_identity_factors(target, 6)
    risk = population_risk(factors, target, np.eye(2), noise_variance=0.5)
    assert risk == pytest.approx(1.0)
    np.testing.assert_allclose(risk_gradient(factors, target, np.eye(2)), 0.0, atol=1e-12)


@settings(max_examples=15)
@given(seed=st.integers(0, 10_000), depth=st.integers(1, 6), d=st.integers(1, 3))
def test_prefix_and_suffix_products_split_the_product(seed, depth, d):
    factors, _, _ = problem(seed, depth, d)
    prefix, suffix = prefix_products(factors), suffix_products(factors)
    whole = near_identity_product(factors)
    for i in range(depth + 1):
        np.testing.assert_allclose(suffix[i] @ prefix[i], whole, atol=1e-12)


@settings(max_examples=30)
@given(
    seed=st.integers(0, 10_000),
    depth=st.integers(1, 6),
    d=st.integers(1, 3),
    tau=st.floats(0.01, 0.95),
)
def test_gradient_lower_bound_holds_in_the_ball(seed, depth, d, tau):
    factors, target, covariance = problem(seed, depth, d, scale=1.0)
    inside = ball_parametrisation(factors, tau)
    grad = risk_gradient(inside, target, covariance)
    bound = gradient_lower_bound(inside, target, covariance, tau)
    assert np.sum(grad**2) >= bound * (1 - 1e-9)


def test_gradient_lower_bound_is_attained_at_minus_tau_identity():
    tau, depth = 0.3, 4
    factors = np.array([-tau * np.eye(2)] * depth)
    target = 3 * np.eye(2)
    grad = risk_gradient(factors, target, np.eye(2))
    bound = gradient_lower_bound(factors, target, np.eye(2), tau)
    assert np.sum(grad**2) == pytest.approx(bound)


def test_gradient_lower_bound_rejects_points_outside_the_ball():
    with pytest.raises(ValueError, match="factors must lie in the ball"):
        gradient_lower_bound(np.full((2, 1, 1), 0.6), np.eye(1), np.eye(1), 0.5)


# huge rank-one weights put A_i on the sphere ||A_i|| = tau; the library's
# first formula, through eigh(W^T W), put ||A_i|| up to 1e-6 above tau
HUGE_WEIGHTS = np.array([
    1e10 * np.array([[3.0, 3.0], [1.0, 1.0]]),
    1e9 * np.ones((2, 2)),
])
HUGE_TAU = 0.31582937101109626


def test_gradient_lower_bound_accepts_ball_points_with_huge_weights():
    inside = ball_parametrisation(HUGE_WEIGHTS, HUGE_TAU)
    norms = np.linalg.norm(inside, 2, axis=(1, 2))
    assert norms.max() <= HUGE_TAU * (1 + 64 * np.finfo(float).eps)
    np.testing.assert_allclose(norms, HUGE_TAU, rtol=1e-12)  # on the sphere
    target, covariance = 2 * np.eye(2), np.diag([1.0, 0.5])
    bound = gradient_lower_bound(inside, target, covariance, HUGE_TAU)
    grad = risk_gradient(inside, target, covariance)
    assert np.sum(grad**2) >= bound * (1 - 1e-9)


@pytest.mark.parametrize("ulps", [1, 4, 32])
def test_gradient_lower_bound_tolerates_a_few_ulps(ulps):
    tau = 0.3
    edge = np.full((3, 1, 1), -tau * (1 + ulps * np.finfo(float).eps))
    assert gradient_lower_bound(edge, np.eye(1), np.eye(1), tau) > 0


def test_gradient_lower_bound_rejects_points_just_outside_the_ball():
    edge = np.full((3, 1, 1), -0.3 * (1 + 1e-12))
    with pytest.raises(ValueError, match="factors must lie in the ball"):
        gradient_lower_bound(edge, np.eye(1), np.eye(1), 0.3)


@settings(max_examples=30)
@given(
    seed=st.integers(0, 10_000),
    d=st.integers(1, 6),
    log_scale=st.floats(0, 200),
    tau=st.floats(0.01, 0.99),
)
def test_ball_parametrisation_stays_within_a_few_ulps_of_the_ball(
    seed, d, log_scale, tau
):
    weights = 10.0**log_scale * np.random.default_rng(seed).standard_normal(
        (2, d, d)
    )
    a = ball_parametrisation(weights, tau)
    assert np.all(np.isfinite(a))
    norms = np.linalg.norm(a, 2, axis=(1, 2))
    assert norms.max() <= tau * (1 + 64 * np.finfo(float).eps)


def test_gradient_lower_bound_rejects_tau_at_least_one():
    with pytest.raises(ValueError, match="tau"):
        gradient_lower_bound(np.zeros((2, 1, 1)), np.eye(1), np.eye(1), 1.0)


def test_standard_parametrisation_has_a_bad_critical_point_at_zero():
    target, covariance = np.eye(2), np.eye(2)
    weights = np.zeros((3, 2, 2))
    assert np.all(standard_risk_gradient(weights, target, covariance) == 0)
    assert standard_risk(weights, target, covariance) > standard_risk(
        np.array([np.eye(2)] * 3), target, covariance
    )


def test_ball_parametrisation_stays_inside_the_ball():
    rng = np.random.default_rng(0)
    a = ball_parametrisation(10 * rng.standard_normal((5, 3, 3)), 0.4)
    assert np.linalg.norm(a, 2, axis=(1, 2)).max() < 0.4


def test_ball_parametrisation_rejects_non_positive_tau():
    with pytest.raises(ValueError, match="tau"):
        ball_parametrisation(np.zeros((1, 2, 2)), 0.0)


def test_worst_case_search_never_beats_the_bound_and_finds_it_tight_in_one_dimension():
    worst = worst_case_gradient_ratio(
        2 * np.eye(1), np.eye(1), 3, 0.4, rng=np.random.default_rng(0), restarts=3
    )
    assert 1 - 1e-6 <= worst.ratio < 1.01
    assert worst.max_norm <= 0.4


def test_worst_case_search_rejects_singular_covariance():
    with pytest.raises(ValueError, match="positive definite"):
        worst_case_gradient_ratio(
            np.eye(2), np.diag([1.0, 0.0]), 2, 0.5, rng=np.random.default_rng(0)
        )


def test_worst_case_search_requires_a_generator():
    with pytest.raises(TypeError, match="rng"):
        worst_case_gradient_ratio(np.eye(1), np.eye(1), 2, 0.5, rng=0)


def test_rejects_mismatched_target():
    with pytest.raises(ValueError, match="target"):
        population_risk(np.zeros((2, 2, 2)), np.eye(3), np.eye(2))


def test_rejects_non_symmetric_covariance():
    with pytest.raises(ValueError, match="covariance must be symmetric"):
        population_risk(np.zeros((2, 2, 2)), np.eye(2), np.array([[1.0, 1.0], [0.0, 1.0]]))


def test_rejects_indefinite_covariance():
    with pytest.raises(ValueError, match="covariance must be positive semidefinite"):
        risk_gradient(np.zeros((2, 2, 2)), np.eye(2), np.diag([1.0, -1.0]))


def test_rejects_non_square_factors():
    with pytest.raises(ValueError, match="factors"):
        population_risk(np.zeros((2, 2, 3)), np.eye(2), np.eye(2))


def test_rejects_negative_noise_variance():
    with pytest.raises(ValueError, match="noise_variance"):
        population_risk(np.zeros((1, 1, 1)), np.eye(1), np.eye(1), noise_variance=-1.0)

"""Specification of resnet_theory.residual_unit (Shamir's Theorems 1 and 2)."""

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from resnet_theory.linear_predictors import linear_risk
from resnet_theory.residual_unit import (
    LocalMinimum,
    OriginBound,
    ResidualUnitRegression,
    gradient_lower_bound,
    local_minima,
    origin_bound,
    relu_features,
)

N, D, K = 7, 2, 3  # samples, input dimension, width of the residual branch

seeds = st.integers(0, 2**32 - 1)
entries = st.floats(-5.0, 5.0, allow_nan=False, allow_infinity=False)
w_vectors = arrays(float, (D,), elements=entries)
v_matrices = arrays(float, (D, K), elements=entries)


def make_problem(seed, n=N, d=D, k=K):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    theta = rng.normal(size=(k, d))
    return ResidualUnitRegression(x, relu_features(x, theta), rng.normal(size=n))


def random_point(seed, problem):
    rng = np.random.default_rng(seed)
    return (
        rng.normal(size=problem.input_dim),
        rng.normal(size=(problem.input_dim, problem.feature_dim)),
    )


def packed_gradient(problem, z):
    gw, gV = problem.gradient(*problem.unpack(z))
    return np.concatenate([gw, gV.ravel()])


def packed_objective(problem, z):
    return problem.objective(*problem.unpack(z))


def regression_with_local_minima(seed, n=12, d=2, k=3, starts=4):
    """A smooth target, a residual unit and random starts for local_minima."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    theta = rng.normal(size=(k, d))
    y = np.tanh(x @ rng.normal(size=d)) + 0.1 * rng.normal(size=n)
    problem = ResidualUnitRegression(x, relu_features(x, theta), y)
    return problem, rng.normal(size=(starts, problem.num_parameters))


# Problems with d >= 2 inputs: the minima are not isolated (F depends on V only
# through w^T V), so the Hessian is singular there.
PROBLEM_SEEDS = [0, 1, 2]


# --- objective and derivatives --------------------------------------------------------


@pytest.mark.parametrize("seed", range(5))
def test_gradient_matches_central_differences(seed):
    problem = make_problem(seed)
    z = problem.pack(*random_point(seed + 100, problem))
    h = 1e-6
    numeric = [
        (packed_objective(problem, z + h * e) - packed_objective(problem, z - h * e))
        / (2 * h)
        for e in np.eye(len(z))
    ]
    np.testing.assert_allclose(
        packed_gradient(problem, z), numeric, rtol=1e-6, atol=1e-8
    )


@pytest.mark.parametrize("seed", range(5))
def test_hessian_matches_central_differences_of_the_gradient(seed):
    problem = make_problem(seed)
    w, V = random_point(seed + 100, problem)
    z = problem.pack(w, V)
    h = 1e-6
    numeric = np.column_stack(
        [
            (packed_gradient(problem, z + h * e) - packed_gradient(problem, z - h * e))
            / (2 * h)
            for e in np.eye(len(z))
        ]
    )
    np.testing.assert_allclose(problem.hessian(w, V), numeric, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("seed", range(5))
def test_hessian_is_symmetric(seed):
    problem = make_problem(seed)
    h = problem.hessian(*random_point(seed + 100, problem))
    assert h.shape == (problem.num_parameters, problem.num_parameters)
    np.testing.assert_allclose(h, h.T, rtol=0, atol=1e-14)


@pytest.mark.parametrize("seed", range(3))
def test_hessian_at_w_zero_has_a_zero_block_in_V(seed):
    problem = make_problem(seed)
    _, V = random_point(seed, problem)
    h = problem.hessian(np.zeros(D), V)
    np.testing.assert_array_equal(h[D:, D:], 0.0)


@pytest.mark.parametrize("seed", range(3))
def test_gradient_shapes_match_the_parameters(seed):
    problem = make_problem(seed)
    gw, gV = problem.gradient(*random_point(seed, problem))
    assert gw.shape == (D,)
    assert gV.shape == (D, K)


@pytest.mark.parametrize("seed", range(3))
def test_gradient_norm_is_the_norm_of_all_partial_derivatives(seed):
    problem = make_problem(seed)
    w, V = random_point(seed, problem)
    z = problem.pack(w, V)
    assert problem.gradient_norm(w, V) == pytest.approx(
        np.linalg.norm(packed_gradient(problem, z)), rel=1e-12
    )


@pytest.mark.parametrize("seed", range(3))
def test_predict_is_w_dot_x_plus_V_f(seed):
    problem = make_problem(seed)
    w, V = random_point(seed, problem)
    expected = [
        w @ (xi + V @ fi) for xi, fi in zip(problem.x, problem.features, strict=True)
    ]
    np.testing.assert_allclose(problem.predict(w, V), expected, rtol=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_objective_is_half_the_mean_squared_residual(seed):
    problem = make_problem(seed)
    w, V = random_point(seed, problem)
    residual = problem.predict(w, V) - problem.y
    assert problem.objective(w, V) == pytest.approx(
        0.5 * np.mean(residual**2), rel=1e-12
    )


def test_dimensions_are_read_from_the_data():
    problem = make_problem(0, n=5, d=3, k=4)
    assert (problem.input_dim, problem.feature_dim, problem.num_parameters) == (
        3,
        4,
        15,
    )


# --- packing --------------------------------------------------------------------------


@given(w=w_vectors, V=v_matrices)
def test_unpack_inverts_pack(w, V):
    problem = make_problem(0)
    got_w, got_V = problem.unpack(problem.pack(w, V))
    np.testing.assert_array_equal(got_w, w)
    np.testing.assert_array_equal(got_V, V)


@given(z=arrays(float, (D + D * K,), elements=entries))
def test_pack_inverts_unpack(z):
    problem = make_problem(0)
    np.testing.assert_array_equal(problem.pack(*problem.unpack(z)), z)


def test_pack_flattens_V_row_by_row():
    problem = make_problem(0)
    V = np.arange(D * K, dtype=float).reshape(D, K)
    np.testing.assert_array_equal(
        problem.pack(np.array([-1.0, -2.0]), V), [-1.0, -2.0, *range(D * K)]
    )


def test_unpack_returns_copies():
    problem = make_problem(0)
    z = np.zeros(problem.num_parameters)
    w, V = problem.unpack(z)
    w[0], V[0, 0] = 1.0, 1.0
    np.testing.assert_array_equal(z, 0.0)


# --- linear predictors as the special case V = 0 --------------------------------------


@given(u=w_vectors, seed=seeds)
def test_linear_objective_is_the_objective_at_V_zero(u, seed):
    problem = make_problem(seed)
    assert problem.linear_objective(u) == problem.objective(u, np.zeros((D, K)))
    assert problem.linear_objective(u) == pytest.approx(
        linear_risk(u, problem.x, problem.y), rel=1e-12
    )


@pytest.mark.parametrize("seed", range(5))
def test_best_linear_is_no_worse_than_any_linear_predictor(seed):
    problem = make_problem(seed)
    best = problem.best_linear()
    assert best.value == pytest.approx(problem.linear_objective(best.coef), rel=1e-12)
    rng = np.random.default_rng(seed)
    for u in rng.normal(scale=3.0, size=(200, D)):
        assert best.value <= problem.linear_objective(u) + 1e-12


def test_best_linear_in_a_ball_respects_the_radius():
    problem = make_problem(0)
    radius = 0.5 * np.linalg.norm(problem.best_linear().coef)
    assert np.linalg.norm(problem.best_linear(radius).coef) <= radius + 1e-9


# --- Theorem 1 ------------------------------------------------------------------------


@given(seed=seeds, w=w_vectors, V=v_matrices, w_star=w_vectors)
def test_gradient_norm_is_at_least_the_theorem_1_bound(seed, w, V, w_star):
    assume(np.linalg.norm(w) > 1e-3)
    problem = make_problem(seed)
    bound = gradient_lower_bound(problem, w, V, w_star)
    assert problem.gradient_norm(w, V) >= bound - 1e-10 * (1 + abs(bound))


@given(seed=seeds, w=w_vectors, V=v_matrices)
def test_gradient_norm_is_at_least_the_theorem_1_bound_for_the_best_linear_predictor(
    seed, w, V
):
    assume(np.linalg.norm(w) > 1e-3)
    problem = make_problem(seed)
    bound = gradient_lower_bound(problem, w, V, problem.best_linear().coef)
    assert problem.gradient_norm(w, V) >= bound - 1e-10 * (1 + abs(bound))


def test_theorem_1_bound_is_the_documented_fraction():
    problem = make_problem(3)
    w, V = random_point(4, problem)
    w_star = np.array([0.3, -1.2])
    gap = problem.objective(w, V) - problem.linear_objective(w_star)
    ww = w @ w
    denominator = np.sqrt(
        2 * ww + (w_star @ w_star) * (2 + np.linalg.norm(V, 2) ** 2 / ww)
    )
    assert gradient_lower_bound(problem, w, V, w_star) == pytest.approx(
        gap / denominator, rel=1e-12
    )


def test_theorem_1_bound_is_tight_at_the_best_linear_predictor():
    # At (w*, 0) with w* the best linear predictor the numerator vanishes.
    problem = make_problem(0)
    w_star = problem.best_linear().coef
    assert gradient_lower_bound(problem, w_star, np.zeros((D, K)), w_star) == 0.0


def test_gradient_lower_bound_rejects_zero_w():
    problem = make_problem(0)
    with pytest.raises(ValueError, match="w must be non-zero"):
        gradient_lower_bound(problem, np.zeros(D), np.ones((D, K)), np.ones(D))


def test_gradient_lower_bound_rejects_w_star_of_the_wrong_shape():
    problem = make_problem(0)
    with pytest.raises(ValueError, match="w_star"):
        gradient_lower_bound(problem, np.ones(D), np.ones((D, K)), np.ones(D + 1))


# --- Theorem 2 ------------------------------------------------------------------------


@given(seed=seeds, V=v_matrices, w_star=w_vectors)
def test_origin_bound_hessian_has_a_nonpositive_eigenvalue(seed, V, w_star):
    assume(np.linalg.norm(w_star) > 1e-3)
    bound = origin_bound(make_problem(seed), V, w_star)
    assert bound.min_eigenvalue <= 1e-12


@given(seed=seeds, V=v_matrices, w_star=w_vectors)
def test_origin_bound_lhs_is_at_least_rhs(seed, V, w_star):
    assume(np.linalg.norm(w_star) > 1e-3)
    bound = origin_bound(make_problem(seed), V, w_star)
    assert bound.lhs >= bound.rhs - 1e-12 * (1 + abs(bound.rhs))


@given(seed=seeds, V=v_matrices)
def test_origin_bound_holds_for_the_best_linear_predictor(seed, V):
    problem = make_problem(seed)
    w_star = problem.best_linear().coef
    bound = origin_bound(problem, V, w_star)
    assert bound.min_eigenvalue <= 1e-12
    assert bound.lhs >= bound.rhs - 1e-12 * (1 + abs(bound.rhs))


@pytest.mark.parametrize("seed", range(3))
def test_origin_bound_sides_are_the_documented_expressions(seed):
    problem = make_problem(seed)
    _, V = random_point(seed, problem)
    w_star = np.array([1.0, -0.5])
    bound = origin_bound(problem, V, w_star)
    assert isinstance(bound, OriginBound)
    zero = np.zeros(D)
    lam = np.linalg.eigvalsh(problem.hessian(zero, V))[0]
    g = problem.x + problem.features @ V.T
    hww = g.T @ g / N  # d^2 F / dw^2 at w = 0
    lhs = problem.gradient_norm(zero, V) + np.linalg.norm(V, 2) * np.sqrt(
        abs(lam) * np.linalg.norm(hww, 2) + lam**2
    )
    rhs = (
        0.5 * np.mean(problem.y**2) - problem.linear_objective(w_star)
    ) / np.linalg.norm(w_star)
    assert bound.min_eigenvalue == pytest.approx(lam, abs=1e-12)
    assert bound.lhs == pytest.approx(lhs, rel=1e-10)
    assert bound.rhs == pytest.approx(rhs, rel=1e-12)


def test_origin_bound_rejects_zero_w_star():
    with pytest.raises(ValueError, match="w_star must be non-zero"):
        origin_bound(make_problem(0), np.ones((D, K)), np.zeros(D))


def test_origin_bound_rejects_V_of_the_wrong_shape():
    with pytest.raises(ValueError, match="V"):
        origin_bound(make_problem(0), np.ones((K, D)), np.ones(D))


# --- local minima ---------------------------------------------------------------------


@pytest.mark.parametrize("seed", PROBLEM_SEEDS)
def test_local_minima_returns_one_point_per_start(seed):
    problem, starts = regression_with_local_minima(seed)
    found = local_minima(problem, starts)
    assert len(found) == len(starts)
    assert all(isinstance(m, LocalMinimum) for m in found)


@pytest.mark.parametrize("seed", PROBLEM_SEEDS)
def test_local_minima_are_stationary(seed):
    problem, starts = regression_with_local_minima(seed)
    for m in local_minima(problem, starts, tol=1e-6):
        assert m.gradient_norm <= 1e-6
        assert m.gradient_norm == pytest.approx(
            problem.gradient_norm(m.w, m.V), rel=1e-12
        )


@pytest.mark.parametrize("seed", PROBLEM_SEEDS)
def test_local_minima_satisfy_the_second_order_condition(seed):
    problem, starts = regression_with_local_minima(seed)
    for m in local_minima(problem, starts):
        assert m.min_eigenvalue >= -1e-8
        assert m.min_eigenvalue == pytest.approx(
            np.linalg.eigvalsh(problem.hessian(m.w, m.V))[0], abs=1e-12
        )


@pytest.mark.parametrize("seed", PROBLEM_SEEDS)
def test_local_minima_are_no_worse_than_the_best_linear_predictor(seed):
    # Shamir's corollary of Theorems 1 and 2: no local minimum is worse than linear.
    problem, starts = regression_with_local_minima(seed)
    best = problem.best_linear().value
    for m in local_minima(problem, starts):
        assert m.value <= best + 1e-9


@pytest.mark.parametrize("seed", PROBLEM_SEEDS)
def test_local_minimum_value_is_the_objective_there(seed):
    problem, starts = regression_with_local_minima(seed)
    for m in local_minima(problem, starts):
        assert m.value == problem.objective(m.w, m.V)
        assert m.w.shape == (problem.input_dim,)
        assert m.V.shape == (problem.input_dim, problem.feature_dim)


def test_local_minima_reports_a_run_that_did_not_converge():
    problem, starts = regression_with_local_minima(PROBLEM_SEEDS[0])
    with pytest.raises(ValueError, match="start 0 did not converge"):
        local_minima(problem, starts, max_iterations=1)


def test_local_minima_converges_on_a_problem_with_one_input_and_one_feature():
    problem, starts = regression_with_local_minima(0, n=6, d=1, k=1)
    for m in local_minima(problem, starts):
        assert m.gradient_norm <= 1e-6
        assert m.min_eigenvalue > 0  # an isolated minimum
        assert m.value <= problem.best_linear().value + 1e-9


@pytest.mark.parametrize("start", [[2.0, 2.0], [1.0, 1.0], [0.5, -0.5], [-1.0, 0.3]])
def test_local_minima_finds_the_interpolating_minimum_of_a_two_sample_problem(start):
    # x = (1, 2), f = (1, 0), y = (1, 1): the only minimiser is w = 1/2 (from the
    # sample with f = 0) and w (1 + V) = 1, where the loss is 0. The start (2, 2) is
    # where the former trust-krylov implementation returned NaN steps.
    problem = ResidualUnitRegression(
        np.array([[1.0], [2.0]]), np.array([[1.0], [0.0]]), np.array([1.0, 1.0])
    )
    (m,) = local_minima(problem, [start])
    assert m.gradient_norm <= 1e-6
    assert (m.w[0], m.V[0, 0]) == pytest.approx((0.5, 1.0), abs=1e-6)
    assert m.value == pytest.approx(0.0, abs=1e-12)


@pytest.mark.parametrize("problem", [None, "problem", object()])
def test_local_minima_rejects_an_object_that_is_not_a_problem(problem):
    with pytest.raises(TypeError, match="problem"):
        local_minima(problem, np.zeros((1, D + D * K)))


@pytest.mark.parametrize(
    "starts",
    [np.zeros(D + D * K), np.zeros((2, D + D * K + 1)), np.zeros((1, 2, D + D * K))],
)
def test_local_minima_rejects_starts_of_the_wrong_shape(starts):
    with pytest.raises(ValueError, match="starts"):
        local_minima(make_problem(0), starts)


def test_local_minima_rejects_non_finite_starts():
    starts = np.zeros((1, D + D * K))
    starts[0, 1] = np.nan
    with pytest.raises(ValueError, match="starts"):
        local_minima(make_problem(0), starts)


@pytest.mark.parametrize("tol", [0.0, -1e-6])
def test_local_minima_rejects_non_positive_tol(tol):
    with pytest.raises(ValueError, match="tol"):
        local_minima(make_problem(0), np.zeros((1, D + D * K)), tol=tol)


def test_local_minima_rejects_max_iterations_that_is_not_an_integer():
    with pytest.raises(TypeError, match="max_iterations"):
        local_minima(make_problem(0), np.zeros((1, D + D * K)), max_iterations=10.0)


# --- construction and argument validation ---------------------------------------------


def test_relu_features_are_the_positive_part_of_theta_x():
    rng = np.random.default_rng(0)
    x, theta = rng.normal(size=(6, 2)), rng.normal(size=(4, 2))
    expected = [[max(0.0, t @ xi) for t in theta] for xi in x]
    np.testing.assert_allclose(relu_features(x, theta), expected, rtol=1e-12)


def test_relu_features_rejects_weights_of_the_wrong_width():
    with pytest.raises(ValueError, match="weights"):
        relu_features(np.ones((3, 2)), np.ones((4, 3)))


def test_problem_stores_float_arrays():
    problem = ResidualUnitRegression([[1, 2]], [[3]], [4])
    assert problem.x.dtype == problem.features.dtype == problem.y.dtype == np.float64


def test_problem_rejects_features_with_a_different_number_of_rows():
    with pytest.raises(ValueError, match="features must have one row per sample"):
        ResidualUnitRegression(np.ones((4, 2)), np.ones((3, 1)), np.ones(4))


@pytest.mark.parametrize("name", ["x", "features", "y"])
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_problem_rejects_non_finite_entries(name, bad):
    data = {"x": np.ones((4, 2)), "features": np.ones((4, 3)), "y": np.ones(4)}
    data[name] = data[name].copy()
    data[name].flat[1] = bad
    with pytest.raises(ValueError, match=f"{name} must contain only finite numbers"):
        ResidualUnitRegression(**data)


@pytest.mark.parametrize("y", [np.ones(3), np.ones(5), np.ones((4, 1))])
def test_problem_rejects_y_of_the_wrong_shape(y):
    with pytest.raises(ValueError, match="y must have shape"):
        ResidualUnitRegression(np.ones((4, 2)), np.ones((4, 3)), y)


@pytest.mark.parametrize("name", ["x", "features"])
def test_problem_rejects_inputs_that_are_not_matrices(name):
    data = {"x": np.ones((4, 2)), "features": np.ones((4, 3)), "y": np.ones(4)}
    data[name] = np.ones(4)
    with pytest.raises(ValueError, match=f"{name} must be 2-dimensional"):
        ResidualUnitRegression(**data)


def test_problem_rejects_an_empty_sample():
    with pytest.raises(ValueError, match="at least one sample"):
        ResidualUnitRegression(np.ones((0, 2)), np.ones((0, 3)), np.ones(0))


def test_problem_rejects_non_numeric_data():
    with pytest.raises(TypeError, match="x must be an array of real numbers"):
        ResidualUnitRegression([["a", "b"]], np.ones((1, 3)), np.ones(1))


@pytest.mark.parametrize(
    ("w", "V", "name"),
    [
        (np.ones(D + 1), np.ones((D, K)), "w"),
        (np.ones(D), np.ones((K, D)), "V"),
        (np.ones(D), np.full((D, K), np.nan), "V"),
    ],
)
def test_methods_reject_parameters_of_the_wrong_shape_or_value(w, V, name):
    with pytest.raises(ValueError, match=name):
        make_problem(0).objective(w, V)


def test_unpack_rejects_a_vector_of_the_wrong_length():
    with pytest.raises(ValueError, match="z"):
        make_problem(0).unpack(np.zeros(D + D * K + 1))

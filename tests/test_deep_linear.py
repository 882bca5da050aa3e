"""Specification of resnet_theory.deep_linear (Bartlett, Helmbold and Long, 2019)."""

import numpy as np
import pytest
import scipy.optimize
from hypothesis import given, settings
from hypothesis import strategies as st
from resnet_theory import DivergenceError, checks
from resnet_theory.deep_linear import (
    DeepLinearRun,
    EigenvalueRun,
    LemmaQuantities,
    balanced_factorization,
    balanced_flow_velocity,
    distance_to_identity,
    eigenvalue_recursion,
    gradient,
    gradient_descent,
    hessian,
    hessian_vector_product,
    imbalances,
    lemma_quantities,
    loss,
    margin,
    power_projection,
    product,
    project_margin,
)

seeds = st.integers(0, 2**32 - 1)
depths = st.integers(1, 6)
dims = st.integers(1, 4)


def random_network(seed, depth, dim, scale=0.3):
    rng = np.random.default_rng(seed)
    return np.eye(dim) + scale * rng.normal(size=(depth, dim, dim))


def random_rotation(rng, dim, negatives):
    """A rotation with ``negatives`` (even) eigenvalues equal to -1."""
    q, _ = np.linalg.qr(rng.normal(size=(dim, dim)))
    signs = np.ones(dim)
    signs[:negatives] = -1
    return q @ np.diag(signs) @ q.T


def rotation_2d(angle):
    return np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])


# --- product, loss, gradient, Hessian -------------------------------------------------------


def test_product_applies_first_layer_first():
    first, second = np.array([[1.0, 1.0], [0.0, 1.0]]), np.diag([2.0, 3.0])
    np.testing.assert_array_equal(product([first, second]), second @ first)


def test_loss_is_half_squared_frobenius_error():
    thetas = random_network(0, 3, 2)
    phi = np.diag([2.0, -1.0])
    expected = 0.5 * np.linalg.norm(thetas[2] @ thetas[1] @ thetas[0] - phi) ** 2
    assert loss(thetas, phi) == pytest.approx(expected, rel=1e-12)


@given(seed=seeds, depth=depths, dim=dims)
@settings(max_examples=30)
def test_gradient_matches_finite_differences(seed, depth, dim):
    thetas = random_network(seed, depth, dim)
    phi = np.random.default_rng(seed + 1).normal(size=(dim, dim))
    grad = gradient(thetas, phi)
    h = 1e-6
    numeric = np.empty_like(thetas)
    for index in np.ndindex(thetas.shape):
        plus, minus = thetas.copy(), thetas.copy()
        plus[index] += h
        minus[index] -= h
        numeric[index] = (loss(plus, phi) - loss(minus, phi)) / (2 * h)
    np.testing.assert_allclose(grad, numeric, rtol=1e-5, atol=1e-6)


@given(seed=seeds, depth=depths, dim=dims)
@settings(max_examples=20)
def test_gradient_matches_the_layer_formula(seed, depth, dim):
    thetas = random_network(seed, depth, dim)
    phi = np.random.default_rng(seed + 1).normal(size=(dim, dim))
    error = product(thetas) - phi
    for i in range(depth):
        after = np.eye(dim) if i == depth - 1 else product(thetas[i + 1:])
        before = np.eye(dim) if i == 0 else product(thetas[:i])
        np.testing.assert_allclose(gradient(thetas, phi)[i], after.T @ error @ before.T,
                                   rtol=1e-10, atol=1e-12)


@given(seed=seeds, depth=st.integers(1, 4), dim=st.integers(1, 3))
@settings(max_examples=20)
def test_hessian_vector_product_matches_finite_differences_of_gradient(seed, depth, dim):
    thetas = random_network(seed, depth, dim)
    rng = np.random.default_rng(seed + 1)
    phi, direction = rng.normal(size=(dim, dim)), rng.normal(size=thetas.shape)
    h = 1e-6
    numeric = (gradient(thetas + h * direction, phi)
               - gradient(thetas - h * direction, phi)) / (2 * h)
    np.testing.assert_allclose(hessian_vector_product(thetas, phi, direction), numeric,
                               rtol=1e-5, atol=1e-6)


@settings(max_examples=25, deadline=None)
@given(seeds, depths, dims)
def test_hessian_columns_are_hessian_vector_products(seed, depth, dim):
    thetas = random_network(seed, depth, dim)
    phi = np.random.default_rng(seed + 1).normal(size=(dim, dim))
    full = hessian(thetas, phi)
    basis = np.eye(thetas.size)
    columns = np.stack([hessian_vector_product(thetas, phi, e.reshape(thetas.shape)).ravel()
                        for e in basis], axis=1)
    assert np.allclose(full, columns, atol=1e-10)


def test_hessian_is_symmetric():
    thetas = random_network(3, 3, 2)
    h = hessian(thetas, np.diag([2.0, 0.5]))
    assert h.shape == (12, 12)
    np.testing.assert_allclose(h, h.T, atol=1e-12)


def test_distance_to_identity_is_largest_spectral_deviation():
    assert distance_to_identity([np.eye(2), np.diag([1.5, 0.8])]) == pytest.approx(0.5)


def test_lemma_gradient_lower_bound_is_attained_at_the_identity():
    q = lemma_quantities(np.stack([np.eye(3)] * 5), np.diag([1.2, 1.0, 0.7]))
    assert isinstance(q, LemmaQuantities)
    assert q.gradient_norm_squared == pytest.approx(q.gradient_lower_bound, rel=1e-12)


@given(seed=seeds, depth=depths, dim=dims)
@settings(max_examples=30)
def test_lemma_gradient_lower_bound_holds(seed, depth, dim):
    thetas = random_network(seed, depth, dim, scale=0.1)
    phi = np.random.default_rng(seed + 1).normal(size=(dim, dim))
    q = lemma_quantities(thetas, phi)
    assert q.gradient_norm_squared >= q.gradient_lower_bound * (1 - 1e-10)


def test_lemma_hessian_bound_holds_near_identity():
    thetas = random_network(5, 3, 2, scale=0.05)
    q = lemma_quantities(thetas, np.diag([1.1, 0.9]))
    assert np.linalg.norm(hessian(thetas, np.diag([1.1, 0.9]))) <= q.hessian_upper_bound


@given(seed=seeds, depth=depths, dim=dims, scale=st.floats(0.0, 1.5),
       target_scale=st.floats(1.0, 1000.0))
@settings(max_examples=40)
def test_lemma_hessian_bound_holds_for_targets_far_from_the_identity(
        seed, depth, dim, scale, target_scale):
    thetas = random_network(seed, depth, dim, scale=scale)
    phi = target_scale * np.random.default_rng(seed + 1).normal(size=(dim, dim))
    q = lemma_quantities(thetas, phi)
    assert np.linalg.norm(hessian(thetas, phi)) <= q.hessian_upper_bound * (1 + 1e-10)


def test_slides_hessian_bound_fails_far_from_the_target():
    thetas, phi = np.ones((2, 1, 1)), np.array([[-100.0]])
    q = lemma_quantities(thetas, phi)
    h_norm = np.linalg.norm(hessian(thetas, phi))
    assert h_norm == pytest.approx(np.sqrt(2 + 2 * 102**2))
    assert h_norm > q.slides_hessian_bound == 6
    assert h_norm <= q.hessian_upper_bound


# --- margin and its projection ----------------------------------------------------------------

matrices = st.builds(
    lambda seed, dim, scale: scale * np.random.default_rng(seed).normal(size=(dim, dim)),
    seeds, dims, st.floats(0.1, 5.0),
)
gammas = st.floats(-2.0, 2.0)


def test_margin_of_a_rotation_is_its_cosine():
    assert margin(rotation_2d(np.pi / 3)) == pytest.approx(0.5)


@given(a=matrices, gamma=gammas)
def test_project_margin_is_feasible(a, gamma):
    assert margin(project_margin(a, gamma)) >= gamma - 1e-10


@given(a=matrices, gamma=gammas)
def test_project_margin_is_idempotent(a, gamma):
    once = project_margin(a, gamma)
    np.testing.assert_allclose(project_margin(once, gamma), once, atol=1e-10)


@given(a=matrices, gamma=gammas)
def test_project_margin_keeps_the_skew_part(a, gamma):
    b = project_margin(a, gamma)
    np.testing.assert_allclose(b - b.T, a - a.T, atol=1e-10)


@given(a=matrices, gamma=gammas, seed=seeds)
@settings(max_examples=30)
def test_project_margin_is_nearer_than_random_feasible_points(a, gamma, seed):
    b = project_margin(a, gamma)
    rng = np.random.default_rng(seed)
    for _ in range(20):
        other = project_margin(b + rng.normal(size=a.shape), gamma)
        # variational inequality of a projection onto a convex set, and nearness
        assert np.sum((a - b) * (other - b)) <= 1e-9 * (1 + np.abs(a).sum())
        assert np.linalg.norm(a - b) <= np.linalg.norm(a - other) + 1e-10


def test_project_margin_agrees_with_a_constrained_solver():
    a = np.array([[0.2, -2.0], [0.5, -0.3]])
    gamma = 0.4

    def constraint(flat):
        m = flat.reshape(2, 2)
        return np.linalg.eigvalsh((m + m.T) / 2)[0] - gamma

    result = scipy.optimize.minimize(
        lambda flat: np.sum((flat - a.ravel()) ** 2), np.eye(2).ravel(),
        constraints=[{"type": "ineq", "fun": constraint}], method="SLSQP",
        options={"ftol": 1e-12, "maxiter": 500},
    )
    np.testing.assert_allclose(project_margin(a, gamma), result.x.reshape(2, 2), atol=1e-4)


# --- balanced factorisation ---------------------------------------------------------------


def positive_det_matrix(seed, dim, negatives):
    rng = np.random.default_rng(seed)
    rotation = random_rotation(rng, dim, negatives)
    q, _ = np.linalg.qr(rng.normal(size=(dim, dim)))
    return rotation @ q @ np.diag(rng.uniform(0.2, 3.0, dim)) @ q.T


@given(seed=seeds, dim=dims, depth=depths, data=st.data())
def test_balanced_factorization_multiplies_back(seed, dim, depth, data):
    negatives = 2 * data.draw(st.integers(0, dim // 2))
    a = positive_det_matrix(seed, dim, negatives)
    factors = balanced_factorization(a, depth)
    assert factors.shape == (depth, dim, dim)
    np.testing.assert_allclose(product(factors), a, atol=1e-9)


@given(seed=seeds, dim=dims, depth=depths, data=st.data())
def test_balanced_factorization_has_the_stated_singular_values(seed, dim, depth, data):
    negatives = 2 * data.draw(st.integers(0, dim // 2))
    a = positive_det_matrix(seed, dim, negatives)
    target = np.linalg.svd(a, compute_uv=False) ** (1 / depth)
    for factor in balanced_factorization(a, depth):
        np.testing.assert_allclose(np.linalg.svd(factor, compute_uv=False), target, atol=1e-9)


@given(seed=seeds, dim=st.integers(2, 6), depth=st.integers(1, 7))
def test_balanced_factorization_handles_rotations_with_eigenvalue_minus_one(seed, dim, depth):
    rotation = random_rotation(np.random.default_rng(seed), dim, 2 * (dim // 2))
    factors = balanced_factorization(rotation, depth)
    np.testing.assert_allclose(product(factors), rotation, atol=1e-9)
    for factor in factors:  # rotations themselves
        np.testing.assert_allclose(factor.T @ factor, np.eye(dim), atol=1e-9)


def test_balanced_factorization_of_minus_identity_is_quarter_turns():
    factors = balanced_factorization(-np.eye(2), 2)
    np.testing.assert_allclose(factors[0], rotation_2d(np.pi / 2), atol=1e-12)
    np.testing.assert_allclose(product(factors), -np.eye(2), atol=1e-12)


def test_balanced_factorization_of_rotation_scaling_is_equal_factors():
    a = 2.0 * rotation_2d(0.9)
    factors = balanced_factorization(a, 3)
    for factor in factors:
        np.testing.assert_allclose(factor, 2.0 ** (1 / 3) * rotation_2d(0.3), atol=1e-12)


# --- balance and the end-to-end flow -----------------------------------------------------


def test_imbalances_compare_neighbouring_layers():
    thetas = random_network(3, 4, 3)
    expected = [thetas[i + 1].T @ thetas[i + 1] - thetas[i] @ thetas[i].T for i in range(3)]
    np.testing.assert_allclose(imbalances(thetas), expected, atol=1e-14)
    assert imbalances(thetas[:1]).shape == (0, 3, 3)


@given(seed=seeds, dim=dims, depth=st.integers(2, 6), data=st.data())
def test_balanced_factorizations_have_zero_imbalances(seed, dim, depth, data):
    negatives = 2 * data.draw(st.integers(0, dim // 2))
    factors = balanced_factorization(positive_det_matrix(seed, dim, negatives), depth)
    np.testing.assert_allclose(imbalances(factors), 0.0, atol=1e-9)


@given(seed=seeds, depth=st.integers(2, 6), dim=dims, eta=st.floats(0.01, 0.5))
def test_a_gradient_step_changes_the_imbalances_by_eta_squared_terms(seed, depth, dim, eta):
    thetas = random_network(seed, depth, dim, scale=0.5)
    phi = np.random.default_rng(seed + 1).normal(size=(dim, dim))
    grads = gradient(thetas, phi)
    change = imbalances(thetas - eta * grads) - imbalances(thetas)
    expected = eta**2 * (np.swapaxes(grads[1:], 1, 2) @ grads[1:]
                         - grads[:-1] @ np.swapaxes(grads[:-1], 1, 2))
    np.testing.assert_allclose(change, expected, atol=1e-10)


@given(seed=seeds, dim=dims, depth=depths, data=st.data())
def test_balanced_flow_velocity_is_the_chain_rule_on_balanced_layers(seed, dim, depth, data):
    negatives = 2 * data.draw(st.integers(0, dim // 2))
    w = positive_det_matrix(seed, dim, negatives)
    phi = np.random.default_rng(seed + 1).normal(size=(dim, dim))
    layers = balanced_factorization(w, depth)
    grads = gradient(layers, phi)
    chain = np.zeros((dim, dim))  # d/dt Theta_L ... Theta_1 with dTheta_i/dt = -grad_i
    for i in range(depth):
        chain -= product(np.concatenate([layers[i + 1:], np.eye(dim)[None]])) @ grads[i] \
            @ product(np.concatenate([np.eye(dim)[None], layers[:i]]))
    np.testing.assert_allclose(balanced_flow_velocity(w, phi, depth), chain, atol=1e-9)


def test_balanced_flow_velocity_is_plain_gradient_flow_for_one_layer():
    w, phi = np.array([[1.0, 2.0], [0.0, -1.0]]), np.eye(2)
    np.testing.assert_allclose(balanced_flow_velocity(w, phi, 1), phi - w, atol=1e-14)


def test_balanced_flow_velocity_of_a_scalar_and_at_a_singular_matrix():
    assert balanced_flow_velocity([[4.0]], [[3.0]], 2)[0, 0] == pytest.approx(-8.0)
    assert balanced_flow_velocity([[0.0]], [[3.0]], 2)[0, 0] == 0.0  # the wall
    # a singular W: the velocity has no component that moves its kernel for L >= 2
    w = np.diag([2.0, 0.0])
    velocity = balanced_flow_velocity(w, np.diag([1.0, -1.0]), 3)
    assert velocity[1, 1] == 0.0


def test_balanced_flow_velocity_rejects_bad_arguments():
    with pytest.raises(ValueError, match="phi"):
        balanced_flow_velocity(np.eye(2), np.eye(3), 2)
    with pytest.raises(ValueError, match="depth"):
        balanced_flow_velocity(np.eye(2), np.eye(2), 0)
    with pytest.raises(TypeError, match="depth"):
        balanced_flow_velocity(np.eye(2), np.eye(2), 2.0)


# --- training ---------------------------------------------------------------------------------


def test_gradient_descent_starts_at_identity_and_converges_near_identity():
    run = gradient_descent(np.diag([1.3, 0.8]), 5, 0.1, 200)
    assert isinstance(run, DeepLinearRun)
    assert run.losses[0] == pytest.approx(0.5 * (0.3**2 + 0.2**2))
    assert run.distances[0] == 0.0
    assert run.losses[-1] < 1e-12
    np.testing.assert_allclose(product(run.thetas), np.diag([1.3, 0.8]), atol=1e-6)


def test_gradient_descent_keeps_iterates_on_request():
    run = gradient_descent(np.eye(2) * 1.1, 3, 0.1, 5, keep_iterates=True)
    assert run.iterates.shape == (6, 3, 2, 2)
    assert loss(run.iterates[5], np.eye(2) * 1.1) == pytest.approx(run.losses[5])
    assert gradient_descent(np.eye(2), 3, 0.1, 5).iterates is None


def test_gradient_descent_stays_close_to_identity_as_the_lemma_says():
    run = gradient_descent(np.array([[1.2, 0.3], [-0.1, 0.9]]), 6, 0.05, 300)
    bound = run.distances[:-1] + run.step_size * (1 + run.distances[:-1]) ** 6 * np.sqrt(
        2 * run.losses[:-1])
    assert np.all(run.distances[1:] <= bound + 1e-12)


def test_gradient_descent_on_symmetric_target_follows_the_eigenvalue_recursion():
    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.normal(size=(3, 3)))
    mu = np.array([2.0, 0.7, -0.5])
    phi = q @ np.diag(mu) @ q.T
    matrix_run = gradient_descent(phi, 4, 0.05, 200, regularization=0.1)
    scalar_run = eigenvalue_recursion(mu, 4, 0.05, 200, regularization=0.1)
    assert isinstance(scalar_run, EigenvalueRun)
    np.testing.assert_allclose(matrix_run.losses, scalar_run.losses, atol=1e-10)
    np.testing.assert_allclose(matrix_run.distances, scalar_run.distances, atol=1e-10)


@pytest.mark.parametrize("regularization", [0.0, 0.5])
def test_negative_eigenvalue_with_even_depth_keeps_loss_above_half_lambda_squared(regularization):
    run = eigenvalue_recursion([-0.5, 1.5], 4, 0.05, 2000, regularization=regularization)
    assert np.all(run.losses >= 0.5 * 0.5**2)


def test_gradient_descent_raises_divergence_naming_step_size():
    with pytest.raises(DivergenceError, match="step_size"):
        gradient_descent(np.diag([3.0, 1.0]), 4, 1.0, 100)


def test_eigenvalue_recursion_raises_divergence_naming_step_size():
    with pytest.raises(DivergenceError, match="step_size"):
        eigenvalue_recursion([5.0], 6, 1.0, 100)


def test_power_projection_raises_divergence_naming_step_size():
    with pytest.raises(DivergenceError, match="step_size"):
        power_projection(np.diag([3.0, 2.0]), 4, 5.0, 100, gamma=0.5)


def test_power_projection_converges_for_a_positive_margin_target():
    phi = np.array([[1.0, 1.5], [-1.5, 1.0]])
    run = power_projection(phi, 4, 0.05, 400, gamma=0.5)
    assert run.losses[-1] < 1e-10


def test_power_projection_keeps_layers_balanced():
    phi = np.array([[1.5, 0.8], [0.0, 0.6]])
    run = power_projection(phi, 5, 0.05, 50, gamma=0.2)
    singular = np.linalg.svd(run.thetas, compute_uv=False)
    np.testing.assert_allclose(singular, np.broadcast_to(singular[0], singular.shape), atol=1e-9)


def test_iterations_to_finds_first_hit():
    run = gradient_descent(np.diag([1.3, 0.8]), 5, 0.1, 200)
    t = run.iterations_to(1e-6)
    assert run.losses[t] <= 1e-6 < run.losses[t - 1]
    assert run.iterations_to(-1.0) is None


# --- validation ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad, match",
    [
        (np.ones((2, 2)), "thetas must be 3-dimensional"),
        (np.ones((2, 2, 3)), "square layers"),
        (np.ones((0, 2, 2)), "at least one layer"),
        (np.full((2, 2, 2), np.nan), "thetas must contain only finite"),
    ],
)
def test_network_functions_reject_bad_thetas(bad, match):
    for function in (product, distance_to_identity):
        with pytest.raises(ValueError, match=match):
            function(bad)
    for function in (loss, gradient, lemma_quantities, hessian):
        with pytest.raises(ValueError, match=match):
            function(bad, np.eye(2))


def test_rejects_phi_of_the_wrong_size():
    for function in (loss, gradient, lemma_quantities, hessian):
        with pytest.raises(ValueError, match="phi"):
            function(np.ones((2, 3, 3)), np.eye(2))


def test_rejects_non_array_thetas():
    with pytest.raises(TypeError, match="thetas"):
        product([["a"]])


RAGGED = [np.eye(2), np.eye(3)]


@pytest.mark.parametrize("function", [
    product, distance_to_identity,
    lambda th: loss(th, np.eye(2)), lambda th: gradient(th, np.eye(2)),
    lambda th: hessian(th, np.eye(2)), lambda th: lemma_quantities(th, np.eye(2)),
    lambda th: hessian_vector_product(th, np.eye(2), th),
])
def test_layers_of_different_sizes_raise_a_value_error_naming_the_shapes(function):
    with pytest.raises(ValueError, match=r"thetas .*shapes \(2, 2\), \(3, 3\)"):
        function(RAGGED)


def test_a_ragged_target_raises_a_value_error_naming_the_shapes():
    with pytest.raises(ValueError, match=r"phi .*shapes \(2,\), \(1,\)"):
        loss(np.ones((1, 2, 2)), [[1.0, 2.0], [3.0]])


COMPLEX_CALLS = [
    lambda z: product(z * np.ones((2, 2, 2))),
    lambda z: distance_to_identity(z * np.ones((2, 2, 2))),
    lambda z: loss(z * np.ones((2, 2, 2)), np.eye(2)),
    lambda z: loss(np.ones((2, 2, 2)), z * np.eye(2)),
    lambda z: gradient(z * np.ones((2, 2, 2)), np.eye(2)),
    lambda z: hessian(np.ones((2, 2, 2)), z * np.eye(2)),
    lambda z: hessian_vector_product(np.ones((2, 2, 2)), np.eye(2), z * np.ones((2, 2, 2))),
    lambda z: lemma_quantities(z * np.ones((2, 2, 2)), np.eye(2)),
    lambda z: margin(z * np.eye(2)),
    lambda z: project_margin(z * np.eye(2), 0.1),
    lambda z: balanced_factorization(z * np.eye(2), 2),
    lambda z: gradient_descent(z * np.eye(2), 2, 0.1, 3),
    lambda z: power_projection(z * np.eye(2), 2, 0.1, 3, gamma=0.1),
    lambda z: eigenvalue_recursion([z], 2, 0.1, 3),
]


@pytest.mark.parametrize("call", COMPLEX_CALLS)
def test_complex_input_raises_a_type_error(call):
    # even with a zero imaginary part: the library never drops it silently
    for z in (1 + 1j, 1 + 0j):
        with pytest.raises(TypeError, match="must be real"):
            call(z)


def test_a_list_of_complex_numbers_raises_a_type_error():
    with pytest.raises(TypeError, match="phi must be real"):
        loss(np.ones((1, 1, 1)), [[1j]])


def test_hessian_vector_product_rejects_wrong_direction():
    with pytest.raises(ValueError, match="direction"):
        hessian_vector_product(np.ones((2, 2, 2)), np.eye(2), np.ones((1, 2, 2)))


@pytest.mark.parametrize("function", [margin, lambda a: project_margin(a, 0.1),
                                      lambda a: balanced_factorization(a, 2)])
@pytest.mark.parametrize("bad", [np.ones((2, 3)), np.ones(3), np.array([[np.inf]])])
def test_matrix_functions_reject_bad_matrix(function, bad):
    with pytest.raises(ValueError, match="a "):
        function(bad)


def test_project_margin_rejects_bad_gamma():
    with pytest.raises(ValueError, match="gamma"):
        project_margin(np.eye(2), np.nan)
    with pytest.raises(TypeError, match="gamma"):
        project_margin(np.eye(2), "0.1")


@pytest.mark.parametrize("a", [np.diag([-1.0, 1.0]), np.zeros((2, 2)), -np.eye(3)])
def test_balanced_factorization_rejects_nonpositive_determinant(a):
    with pytest.raises(ValueError, match="positive determinant"):
        balanced_factorization(a, 3)


def test_balanced_factorization_rejects_bad_depth():
    with pytest.raises(ValueError, match="depth"):
        balanced_factorization(np.eye(2), 0)
    with pytest.raises(TypeError, match="depth"):
        balanced_factorization(np.eye(2), 2.0)


@pytest.mark.parametrize("run", [
    lambda **kw: gradient_descent(**kw),
    lambda **kw: power_projection(**kw, gamma=0.1),
])
@pytest.mark.parametrize("changes, error, match", [
    ({"phi": np.ones((2, 3))}, ValueError, "phi"),
    ({"phi": np.array([[np.nan]])}, ValueError, "phi"),
    ({"depth": 0}, ValueError, "depth"),
    ({"depth": 2.5}, TypeError, "depth"),
    ({"step_size": 0.0}, ValueError, "step_size"),
    ({"step_size": "big"}, TypeError, "step_size"),
    ({"steps": -1}, ValueError, "steps"),
    ({"steps": 1.5}, TypeError, "steps"),
])
def test_training_rejects_bad_arguments(run, changes, error, match):
    arguments = {"phi": np.eye(2), "depth": 3, "step_size": 0.1, "steps": 5}
    arguments.update(changes)
    with pytest.raises(error, match=match):
        run(**arguments)


def test_gradient_descent_rejects_negative_regularization():
    with pytest.raises(ValueError, match="regularization"):
        gradient_descent(np.eye(2), 3, 0.1, 5, regularization=-1.0)


def test_power_projection_rejects_nonpositive_gamma():
    with pytest.raises(ValueError, match="gamma"):
        power_projection(np.eye(2), 3, 0.1, 5, gamma=0.0)


@pytest.mark.parametrize("changes, error, match", [
    ({"eigenvalues": []}, ValueError, "eigenvalues"),
    ({"eigenvalues": [[1.0]]}, ValueError, "eigenvalues"),
    ({"eigenvalues": [np.inf]}, ValueError, "eigenvalues"),
    ({"depth": -2}, ValueError, "depth"),
    ({"step_size": -0.1}, ValueError, "step_size"),
    ({"steps": True}, TypeError, "steps"),
    ({"regularization": -0.1}, ValueError, "regularization"),
])
def test_eigenvalue_recursion_rejects_bad_arguments(changes, error, match):
    arguments = {"eigenvalues": [1.0], "depth": 3, "step_size": 0.1, "steps": 5}
    arguments.update(changes)
    with pytest.raises(error, match=match):
        eigenvalue_recursion(**arguments)


# --- the auto-graded exercise ----------------------------------------------------------------


def test_check_ex_dl_balanced_accepts_a_balanced_factorization():
    a = np.array([[0.0, -2.0], [2.0, 0.0]])  # rotation by pi/2 scaled by 2
    assert checks.ex_dl_balanced(balanced_factorization(a, 3))


def test_check_ex_dl_balanced_rejects_missing_answer():
    assert not checks.ex_dl_balanced(None)


def test_check_ex_dl_balanced_rejects_unbalanced_factorization_with_a_reason():
    a = np.array([[0.0, -2.0], [2.0, 0.0]])
    unbalanced = np.stack([a, np.eye(2), np.eye(2)])
    result = checks.ex_dl_balanced(unbalanced)
    assert not result
    assert "singular values" in result.reason


def test_check_ex_dl_balanced_rejects_shared_unequal_singular_values():
    """Factors with the singular values (2, 2^(-1/3)) each can multiply to the target;
    they are not the balanced factorisation the exercise asks for."""
    target = np.array([[0.0, -2.0], [2.0, 0.0]])
    a, b = 2.0, 2.0 ** (-1 / 3)
    # A_2 = D R(phi)^T with D = diag(a, b); phi makes A_3 = T A_1^-1 A_2^-1 share
    # the singular values: ||2 D^-1 R(phi) D^-1||_F^2 = a^2 + b^2
    lo, hi = 2 / (a * b) ** 2, 1 / a**4 + 1 / b**4
    phi = np.arccos(np.sqrt(((a * a + b * b) / 4 - lo) / (hi - lo)))
    rot = np.array([[np.cos(phi), np.sin(phi)], [-np.sin(phi), np.cos(phi)]])
    a1 = np.diag([a, b])
    a2 = a1 @ rot
    a3 = target @ np.linalg.inv(a2 @ a1)
    factors = np.stack([a1, a2, a3])
    assert np.allclose(a3 @ a2 @ a1, target)
    assert np.allclose(np.linalg.svd(factors, compute_uv=False), [a, b])
    result = checks.ex_dl_balanced(factors)
    assert not result
    assert "2^(1/3)" in result.reason


def test_check_ex_dl_balanced_rejects_wrong_product_and_junk():
    a = np.array([[0.0, -2.0], [2.0, 0.0]])
    wrong = balanced_factorization(a.T, 3)
    result = checks.ex_dl_balanced(wrong)
    assert not result and "product" in result.reason
    assert not checks.ex_dl_balanced("three matrices")
    assert not checks.ex_dl_balanced(np.ones((2, 2, 2)))


# --- the figure of the chapter's index ---------------------------------------------------------


def test_the_index_figure_script_checks_its_facts_and_draws(tmp_path):
    """book/ch4_deep_linear/one_picture.py asserts what its figure shows, then draws it."""
    import importlib.util
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "book" / "ch4_deep_linear" / "one_picture.py"
    spec = importlib.util.spec_from_file_location("ch4_one_picture", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = module.draw(tmp_path / "one_picture.svg")
    assert out.read_text().lstrip().startswith("<?xml")
    assert module.OUT.is_file()  # the committed figure the index shows

"""Specification of resnet_theory.landscape (Shamir's Example 1)."""

import numpy as np
import pytest
import scipy.optimize
from hypothesis import given
from hypothesis import strategies as st
from resnet_theory import DivergenceError
from resnet_theory.landscape import (
    CriticalPoint,
    constrained_critical_points,
    critical_points,
    gradient,
    gradient_descent,
    hessian,
    minimum_curve,
    nearest_point_labels,
    objective,
)

coordinates = st.floats(-3.0, 3.0, allow_nan=False, allow_infinity=False)
scales = st.floats(0.1, 2.0, allow_nan=False, allow_infinity=False)
decays = st.floats(0.0, 1.0, allow_nan=False, allow_infinity=False)

# (eps, weight_decay) pairs with three isolated critical points.
REGULARISED = [(1.0, 0.25), (1.0, 0.05), (0.5, 0.1), (2.0, 0.3)]

# (eps, radius, weight_decay) for the disc-constrained problem: boundary minima with and
# without weight decay, a disc holding no KKT point, and a disc whose boundary passes
# through the saddle (0, -1/eps).
DISCS = [
    (1.0, 2.0, 0.0),
    (1.0, 0.5, 0.0),
    (0.25, 2.0, 0.0),
    (3.0, 0.2, 0.0),
    (1.0, 1.0, 0.0),
    (0.5, 3.0, 0.1),
    (2.0, 1.0, 0.3),
    (1.0, 1.5, 0.25),
    (1.0, 0.3, 0.25),
    (1.0, 5.0, 0.05),
]

CIRCLE_POINTS = 20000


def slide_gradient(z, eps, weight_decay):
    """The gradient as written on the slides, plus the weight-decay term."""
    w, v = z
    r = w - 1 + eps * w * v
    return np.array(
        [r * (1 + eps * v) + weight_decay * w, r * eps * w + weight_decay * v]
    )


def slide_hessian(z, eps, weight_decay):
    w, v = z
    off = eps * (2 * w + 2 * eps * w * v - 1)
    return np.array(
        [[(1 + eps * v) ** 2 + weight_decay, off], [off, eps**2 * w**2 + weight_decay]]
    )


def brute_force_critical_points(eps, weight_decay):
    """Roots of the gradient reached by Powell's hybrid method from a grid of starts."""
    grid = np.linspace(-4.0, 4.0, 31)
    roots = []
    for w0 in grid:
        for v0 in grid:
            sol = scipy.optimize.root(
                slide_gradient,
                [w0, v0],
                args=(eps, weight_decay),
                jac=slide_hessian,
                method="hybr",
            )
            z = sol.x
            if np.linalg.norm(slide_gradient(z, eps, weight_decay)) > 1e-10:
                continue
            if all(np.linalg.norm(z - r) > 1e-6 for r in roots):
                roots.append(z)
    return roots


def circle(radius, t):
    return radius * np.cos(t), radius * np.sin(t)


def radial_derivative(w, v, eps, weight_decay, radius):
    g = gradient(w, v, eps, weight_decay)
    return (g[..., 0] * w + g[..., 1] * v) / radius


# --- objective, gradient and Hessian --------------------------------------------------


@given(w=coordinates, v=coordinates, eps=scales, weight_decay=decays)
def test_gradient_matches_central_differences(w, v, eps, weight_decay):
    h = 1e-5

    def f(a, b):
        return objective(a, b, eps, weight_decay)

    numeric = [
        (f(w + h, v) - f(w - h, v)) / (2 * h),
        (f(w, v + h) - f(w, v - h)) / (2 * h),
    ]
    np.testing.assert_allclose(
        gradient(w, v, eps, weight_decay), numeric, rtol=1e-6, atol=1e-6
    )


@given(w=coordinates, v=coordinates, eps=scales, weight_decay=decays)
def test_hessian_matches_central_differences_of_gradient(w, v, eps, weight_decay):
    h = 1e-5

    def g(a, b):
        return gradient(a, b, eps, weight_decay)

    numeric = np.stack(
        [(g(w + h, v) - g(w - h, v)) / (2 * h), (g(w, v + h) - g(w, v - h)) / (2 * h)]
    )
    np.testing.assert_allclose(
        hessian(w, v, eps, weight_decay), numeric, rtol=1e-6, atol=1e-6
    )


@given(w=coordinates, v=coordinates, eps=scales)
def test_gradient_without_weight_decay_is_the_slides_expression(w, v, eps):
    r = w - 1 + eps * w * v
    expected = [r * (1 + eps * v), r * eps * w]
    np.testing.assert_allclose(gradient(w, v, eps), expected, rtol=1e-12, atol=1e-12)


@given(w=coordinates, v=coordinates, eps=scales)
def test_hessian_without_weight_decay_is_the_slides_expression(w, v, eps):
    off = eps * (2 * w + 2 * eps * w * v - 1)
    expected = [[(1 + eps * v) ** 2, off], [off, eps**2 * w**2]]
    np.testing.assert_allclose(hessian(w, v, eps), expected, rtol=1e-12, atol=1e-12)


@given(w=coordinates, v=coordinates, eps=scales, weight_decay=decays)
def test_objective_is_the_documented_formula(w, v, eps, weight_decay):
    expected = 0.5 * (w * (1 + eps * v) - 1) ** 2 + 0.5 * weight_decay * (w**2 + v**2)
    assert objective(w, v, eps, weight_decay) == pytest.approx(
        expected, rel=1e-12, abs=1e-12
    )


def test_objective_of_scalars_is_a_scalar():
    assert np.ndim(objective(0.5, 0.5, eps=1.0)) == 0


def test_functions_broadcast_over_a_meshgrid():
    w, v = np.meshgrid(np.linspace(-1, 1, 4), np.linspace(-2, 2, 3))
    assert objective(w, v, eps=1.0).shape == (3, 4)
    assert gradient(w, v, eps=1.0).shape == (3, 4, 2)
    assert hessian(w, v, eps=1.0).shape == (3, 4, 2, 2)
    np.testing.assert_allclose(
        gradient(w, v, eps=1.0)[1, 2], gradient(w[1, 2], v[1, 2], eps=1.0)
    )


def test_coordinates_that_do_not_broadcast_are_rejected():
    with pytest.raises(ValueError, match="w and v must broadcast"):
        objective([1.0, 2.0], [1.0, 2.0, 3.0], eps=1.0)


# --- critical points ------------------------------------------------------------------


@given(eps=st.floats(0.1, 3.0), weight_decay=st.floats(0.0, 2.0))
def test_critical_points_are_stationary(eps, weight_decay):
    for p in critical_points(eps, weight_decay):
        assert np.linalg.norm(gradient(p.w, p.v, eps, weight_decay)) < 1e-8


@given(eps=st.floats(0.1, 3.0), weight_decay=st.floats(0.0, 2.0))
def test_critical_point_kind_agrees_with_hessian_eigenvalues(eps, weight_decay):
    for p in critical_points(eps, weight_decay):
        h = hessian(p.w, p.v, eps, weight_decay)
        low, high = np.linalg.eigvalsh(h)
        assert p.eigenvalues == pytest.approx((low, high), abs=1e-10)
        by_sign = "minimum" if low > 0 else "maximum" if high < 0 else "saddle"
        # "degenerate" is allowed only when an eigenvalue is numerically zero.
        clear = min(abs(low), abs(high)) > 1e-8 * max(1.0, np.abs(h).max())
        if clear:
            assert p.kind == by_sign
        else:
            assert p.kind in (by_sign, "degenerate")


@given(eps=st.floats(0.1, 3.0), weight_decay=st.floats(0.0, 2.0))
def test_critical_point_value_is_the_objective_there(eps, weight_decay):
    for p in critical_points(eps, weight_decay):
        assert p.value == pytest.approx(
            objective(p.w, p.v, eps, weight_decay), abs=1e-14
        )
        assert not p.on_boundary
        assert p.multiplier == 0.0


@given(eps=st.floats(0.1, 3.0), weight_decay=st.floats(0.0, 2.0))
def test_critical_points_are_sorted_by_value(eps, weight_decay):
    values = np.array([p.value for p in critical_points(eps, weight_decay)])
    assert np.all(np.diff(values) >= -1e-12)  # ties (up to round-off) are ordered by w


@given(eps=st.floats(0.05, 5.0))
def test_critical_points_without_weight_decay_is_the_single_saddle(eps):
    (p,) = critical_points(eps)
    assert (p.w, p.v) == pytest.approx((0.0, -1.0 / eps), abs=1e-14)
    assert p.kind == "saddle"
    assert p.value == pytest.approx(0.5, abs=1e-14)
    assert p.eigenvalues == pytest.approx((-eps, eps), abs=1e-12)


@pytest.mark.parametrize(("eps", "weight_decay"), REGULARISED)
def test_critical_points_contain_every_root_found_by_brute_force(eps, weight_decay):
    listed = np.array([(p.w, p.v) for p in critical_points(eps, weight_decay)])
    roots = brute_force_critical_points(eps, weight_decay)
    assert roots, "the brute-force search found no root"
    for root in roots:
        assert np.min(np.linalg.norm(listed - root, axis=1)) < 1e-6, root


@pytest.mark.parametrize(("eps", "weight_decay"), REGULARISED)
def test_critical_points_are_all_found_by_brute_force(eps, weight_decay):
    roots = np.array(brute_force_critical_points(eps, weight_decay))
    for p in critical_points(eps, weight_decay):
        assert np.min(np.linalg.norm(roots - [p.w, p.v], axis=1)) < 1e-6, p


@pytest.mark.parametrize(("eps", "weight_decay"), REGULARISED)
def test_lowest_critical_point_is_the_global_minimum_with_weight_decay(
    eps, weight_decay
):
    w, v = np.meshgrid(np.linspace(-5, 5, 401), np.linspace(-5, 5, 401))
    lowest = critical_points(eps, weight_decay)[0]
    assert lowest.kind == "minimum"
    assert np.min(objective(w, v, eps, weight_decay)) >= lowest.value - 1e-12


def test_critical_points_for_eps_1_weight_decay_quarter_are_the_known_ones():
    points = critical_points(eps=1.0, weight_decay=0.25)
    got = [(p.kind, p.w, p.v) for p in points]
    expected = [
        ("minimum", 0.6596, 0.3277),
        ("minimum", -0.9828, -1.6027),
        ("saddle", -0.2725, -1.0694),
    ]
    assert len(got) == len(expected)
    for (kind, w, v), (want_kind, want_w, want_v) in zip(got, expected, strict=True):
        assert kind == want_kind
        assert (w, v) == pytest.approx((want_w, want_v), abs=1e-4)


# --- the disc-constrained problem -----------------------------------------------------


@pytest.mark.parametrize(("eps", "radius", "weight_decay"), DISCS)
def test_constrained_boundary_points_lie_on_the_circle(eps, radius, weight_decay):
    for p in constrained_critical_points(eps, radius, weight_decay):
        if p.on_boundary:
            assert np.hypot(p.w, p.v) == pytest.approx(radius, rel=1e-12)


@pytest.mark.parametrize(("eps", "radius", "weight_decay"), DISCS)
def test_constrained_interior_points_are_strictly_inside_and_stationary(
    eps, radius, weight_decay
):
    unconstrained = critical_points(eps, weight_decay)
    for p in constrained_critical_points(eps, radius, weight_decay):
        if not p.on_boundary:
            assert np.hypot(p.w, p.v) < radius
            assert p in unconstrained
            assert p.multiplier == 0.0


@pytest.mark.parametrize(("eps", "radius", "weight_decay"), DISCS)
def test_constrained_points_include_every_critical_point_inside_the_disc(
    eps, radius, weight_decay
):
    listed = constrained_critical_points(eps, radius, weight_decay)
    for p in critical_points(eps, weight_decay):
        if np.hypot(p.w, p.v) < radius * (1 - 1e-6):
            assert p in listed


@pytest.mark.parametrize(("eps", "radius", "weight_decay"), DISCS)
def test_constrained_boundary_points_satisfy_the_kkt_conditions(
    eps, radius, weight_decay
):
    for p in constrained_critical_points(eps, radius, weight_decay):
        if p.on_boundary:
            assert p.multiplier >= 0
            normal = np.array([p.w, p.v]) / radius
            np.testing.assert_allclose(
                gradient(p.w, p.v, eps, weight_decay), -p.multiplier * normal, atol=1e-9
            )


@pytest.mark.parametrize(("eps", "radius", "weight_decay"), DISCS)
def test_constrained_point_value_and_eigenvalues_are_those_of_the_objective(
    eps, radius, weight_decay
):
    for p in constrained_critical_points(eps, radius, weight_decay):
        assert p.value == pytest.approx(
            objective(p.w, p.v, eps, weight_decay), abs=1e-14
        )
        eig = np.linalg.eigvalsh(hessian(p.w, p.v, eps, weight_decay))
        assert p.eigenvalues == pytest.approx(tuple(eig), abs=1e-10)


@pytest.mark.parametrize(("eps", "radius", "weight_decay"), DISCS)
def test_constrained_boundary_minima_are_local_minima_on_the_disc(
    eps, radius, weight_decay
):
    step = 2 * np.pi / CIRCLE_POINTS
    for p in constrained_critical_points(eps, radius, weight_decay):
        if not (p.on_boundary and p.kind == "minimum"):
            continue
        t0 = np.arctan2(p.v, p.w)
        # F along a dense parametrisation of the circle through the point ...
        t = t0 + step * np.arange(-50, 51)
        along = objective(*circle(radius, t), eps, weight_decay)
        assert np.argmin(along) == 50
        assert along[49] > along[50] < along[51]
        # ... and F does not decrease into the disc.
        assert radial_derivative(p.w, p.v, eps, weight_decay, radius) <= 0


@pytest.mark.parametrize(("eps", "radius", "weight_decay"), DISCS)
def test_constrained_boundary_saddles_decrease_along_the_circle(
    eps, radius, weight_decay
):
    step = 2 * np.pi / CIRCLE_POINTS
    for p in constrained_critical_points(eps, radius, weight_decay):
        if not (p.on_boundary and p.kind == "saddle"):
            continue
        t = np.arctan2(p.v, p.w) + step * np.array([-1.0, 0.0, 1.0])
        before, at, after = objective(*circle(radius, t), eps, weight_decay)
        assert before < at > after


@pytest.mark.parametrize(("eps", "radius", "weight_decay"), DISCS)
def test_constrained_points_list_every_boundary_local_minimum_of_a_dense_circle(
    eps, radius, weight_decay
):
    t = np.linspace(-np.pi, np.pi, CIRCLE_POINTS, endpoint=False)
    along = objective(*circle(radius, t), eps, weight_decay)
    dense_minima = np.flatnonzero(
        (along < np.roll(along, 1)) & (along < np.roll(along, -1))
    )
    listed = np.array(
        [
            (p.w, p.v)
            for p in constrained_critical_points(eps, radius, weight_decay)
            if p.on_boundary and p.kind == "minimum"
        ]
    ).reshape(-1, 2)
    step = t[1] - t[0]
    for i in dense_minima:
        refined = scipy.optimize.minimize_scalar(
            lambda s: objective(*circle(radius, s), eps, weight_decay),
            bounds=(t[i] - step, t[i] + step),
            method="bounded",
            options={"xatol": 1e-12},
        )
        w, v = circle(radius, refined.x)
        if radial_derivative(w, v, eps, weight_decay, radius) >= -1e-8:
            continue  # F decreases into the disc or is flat: no constrained minimum
        assert len(listed) and np.min(np.linalg.norm(listed - [w, v], axis=1)) < 1e-6, (
            w,
            v,
        )


def test_constrained_critical_points_on_a_disc_of_radius_two_match_the_book():
    points = constrained_critical_points(eps=1.0, radius=2.0)
    assert [(p.kind, p.on_boundary) for p in points] == [
        ("minimum", True),
        ("saddle", False),
    ]
    spurious = points[0]
    assert (spurious.w, spurious.v, spurious.value) == pytest.approx(
        (-1.0756, -1.6861, 0.0343), abs=1e-4
    )


def test_constrained_critical_points_drop_interior_points_outside_the_disc():
    # The saddle (0, -4) of eps = 0.25 lies outside the disc of radius 2.
    assert all(
        np.hypot(p.w, p.v) <= 2.0 * (1 + 1e-12)
        for p in constrained_critical_points(eps=0.25, radius=2.0)
    )


@pytest.mark.parametrize("radius", [0.0, -1.0, np.nan, np.inf])
def test_constrained_critical_points_rejects_invalid_radius(radius):
    with pytest.raises(ValueError, match="radius"):
        constrained_critical_points(eps=1.0, radius=radius)


# --- the curve of global minima -------------------------------------------------------


@given(w=st.floats(0.01, 3.0) | st.floats(-3.0, -0.01), eps=scales)
def test_minimum_curve_points_satisfy_w_times_one_plus_eps_v_equals_one(w, eps):
    v = minimum_curve(w, eps)
    assert w * (1 + eps * v) == pytest.approx(1.0, abs=1e-12)
    assert objective(w, v, eps) == pytest.approx(0.0, abs=1e-20)


@given(w=st.floats(0.01, 3.0) | st.floats(-3.0, -0.01), eps=scales)
def test_minimum_curve_points_are_stationary(w, eps):
    v = minimum_curve(w, eps)
    np.testing.assert_allclose(gradient(w, v, eps), [0.0, 0.0], atol=1e-12)


def test_minimum_curve_is_elementwise_over_arrays():
    w = np.array([0.5, 1.0, 2.0])
    np.testing.assert_allclose(minimum_curve(w, eps=0.5), [2.0, 0.0, -1.0])


@pytest.mark.parametrize("w", [0.0, [1.0, 0.0, 2.0]])
def test_minimum_curve_rejects_zero_w(w):
    with pytest.raises(ValueError, match="w must be non-zero"):
        minimum_curve(w, eps=1.0)


# --- gradient descent -----------------------------------------------------------------


def test_gradient_descent_converges_from_a_start_near_a_minimum():
    run = gradient_descent(
        [[0.6, 0.3], [-0.9, -1.5]],
        eps=1.0,
        weight_decay=0.25,
        step_size=0.1,
        steps=2000,
    )
    assert np.all(run.stationarity < 1e-8)
    minima = [(p.w, p.v) for p in critical_points(1.0, 0.25) if p.kind == "minimum"]
    np.testing.assert_allclose(run.endpoints, minima, atol=1e-8)


def test_gradient_descent_without_weight_decay_reaches_the_minimum_curve():
    run = gradient_descent([[0.5, 0.5]], eps=1.0, step_size=0.1, steps=500)
    w, v = run.endpoints[0]
    assert w * (1 + v) == pytest.approx(1.0, abs=1e-6)


def test_gradient_descent_stationarity_is_the_gradient_norm_without_constraint():
    run = gradient_descent(
        [[0.3, -0.2], [2.0, 1.0]], eps=0.5, weight_decay=0.1, step_size=0.05, steps=3
    )
    g = gradient(run.endpoints[:, 0], run.endpoints[:, 1], 0.5, 0.1)
    np.testing.assert_allclose(run.stationarity, np.linalg.norm(g, axis=1), rtol=1e-12)


def test_gradient_descent_takes_the_documented_steps():
    starts = np.array([[0.3, -0.2], [2.0, 1.0]])
    run = gradient_descent(
        starts, eps=0.5, weight_decay=0.1, step_size=0.05, steps=2, record=True
    )
    z = starts
    for k in range(1, 3):
        z = z - 0.05 * gradient(z[:, 0], z[:, 1], 0.5, 0.1)
        np.testing.assert_allclose(run.paths[k], z, rtol=1e-14)


def test_projected_gradient_descent_stays_in_the_disc():
    rng = np.random.default_rng(0)
    starts = rng.uniform(-3, 3, size=(40, 2))
    run = gradient_descent(
        starts,
        eps=1.0,
        weight_decay=0.05,
        radius=1.5,
        step_size=0.1,
        steps=200,
        record=True,
    )
    assert np.all(np.linalg.norm(run.endpoints, axis=1) <= 1.5 + 1e-12)
    assert np.all(np.linalg.norm(run.paths, axis=-1) <= 1.5 + 1e-12)


def test_projected_gradient_descent_converges_to_constrained_minima():
    rng = np.random.default_rng(1)
    starts = rng.uniform(-1.5, 1.5, size=(30, 2))
    run = gradient_descent(
        starts, eps=1.0, weight_decay=0.25, radius=1.5, step_size=0.1, steps=3000
    )
    assert np.all(run.stationarity < 1e-8)
    minima = [
        p for p in constrained_critical_points(1.0, 1.5, 0.25) if p.kind == "minimum"
    ]
    labels = nearest_point_labels(run.endpoints, minima, tol=1e-6)
    assert np.all(labels >= 0)


def test_gradient_descent_raises_divergence_error_for_a_huge_step_size():
    with pytest.raises(DivergenceError, match="step_size"):
        gradient_descent([[3.0, 3.0]], eps=1.0, step_size=50.0)


def test_divergence_error_is_a_value_error():
    assert issubclass(DivergenceError, ValueError)


def test_gradient_descent_without_record_has_no_paths():
    run = gradient_descent([[0.5, 0.5]], eps=1.0, steps=5)
    assert run.paths is None


def test_gradient_descent_with_record_keeps_every_iterate():
    starts = [[0.5, 0.5], [1.0, -1.0], [0.0, 2.0]]
    run = gradient_descent(starts, eps=1.0, steps=7, record=True)
    assert run.paths.shape == (8, 3, 2)
    np.testing.assert_array_equal(run.paths[0], starts)
    np.testing.assert_array_equal(run.paths[-1], run.endpoints)


def test_gradient_descent_result_shapes():
    run = gradient_descent(np.zeros((4, 2)), eps=1.0, steps=3)
    assert run.endpoints.shape == (4, 2)
    assert run.stationarity.shape == (4,)


def test_gradient_descent_does_not_modify_its_starts():
    starts = np.array([[0.5, 0.5], [3.0, 3.0]])
    gradient_descent(starts, eps=1.0, radius=1.0, steps=5)
    np.testing.assert_array_equal(starts, [[0.5, 0.5], [3.0, 3.0]])


def test_gradient_descent_projects_starts_outside_the_disc():
    run = gradient_descent([[3.0, 4.0]], eps=1.0, radius=1.0, steps=1, record=True)
    np.testing.assert_allclose(run.paths[0], [[0.6, 0.8]])


@pytest.mark.parametrize("starts", [[0.5, 0.5], [[0.5, 0.5, 0.5]], [[[0.5, 0.5]]]])
def test_gradient_descent_rejects_starts_of_the_wrong_shape(starts):
    with pytest.raises(ValueError, match="starts"):
        gradient_descent(starts, eps=1.0)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_gradient_descent_rejects_non_finite_starts(bad):
    with pytest.raises(ValueError, match="starts"):
        gradient_descent([[0.5, bad]], eps=1.0)


@pytest.mark.parametrize("radius", [0.0, -1.0, np.nan])
def test_gradient_descent_rejects_invalid_radius(radius):
    with pytest.raises(ValueError, match="radius"):
        gradient_descent([[0.5, 0.5]], eps=1.0, radius=radius)


@pytest.mark.parametrize("step_size", [0.0, -0.1, np.inf])
def test_gradient_descent_rejects_invalid_step_size(step_size):
    with pytest.raises(ValueError, match="step_size"):
        gradient_descent([[0.5, 0.5]], eps=1.0, step_size=step_size)


@pytest.mark.parametrize("steps", [10.0, True, "10"])
def test_gradient_descent_rejects_steps_that_are_not_integers(steps):
    with pytest.raises(TypeError, match="steps"):
        gradient_descent([[0.5, 0.5]], eps=1.0, steps=steps)


@pytest.mark.parametrize("steps", [0, -3])
def test_gradient_descent_rejects_non_positive_steps(steps):
    with pytest.raises(ValueError, match="steps"):
        gradient_descent([[0.5, 0.5]], eps=1.0, steps=steps)


def test_gradient_descent_accepts_numpy_integer_steps():
    run = gradient_descent([[0.5, 0.5]], eps=1.0, steps=np.int64(3), record=True)
    assert run.paths.shape == (4, 1, 2)


# --- labelling endpoints --------------------------------------------------------------


def test_nearest_point_labels_gives_the_index_of_the_nearest_point_or_minus_one():
    labels = nearest_point_labels(
        [[0.0, 0.0], [1.0, 1.0], [5.0, 5.0]], [[1.0, 1.0], [0.0, 0.0]]
    )
    assert labels.tolist() == [1, 0, -1]


def test_nearest_point_labels_respects_tol():
    endpoints = [[0.0, 0.05]]
    assert nearest_point_labels(endpoints, [[0.0, 0.0]], tol=0.1).tolist() == [0]
    assert nearest_point_labels(endpoints, [[0.0, 0.0]], tol=0.01).tolist() == [-1]


def test_nearest_point_labels_accepts_critical_points():
    points = critical_points(eps=1.0, weight_decay=0.25)
    endpoints = [[p.w + 1e-5, p.v] for p in reversed(points)]
    assert nearest_point_labels(endpoints, points).tolist() == [2, 1, 0]


def test_nearest_point_labels_with_an_empty_array_of_points_labels_nothing():
    labels = nearest_point_labels([[0.0, 0.0], [1.0, 1.0]], np.empty((0, 2)))
    assert labels.tolist() == [-1, -1]


def test_nearest_point_labels_with_no_critical_points_labels_nothing():
    points = constrained_critical_points(eps=0.25, radius=2.0)
    assert points == []
    labels = nearest_point_labels([[0.0, 0.0], [1.0, 1.0]], points)
    assert labels.tolist() == [-1, -1]


@pytest.mark.parametrize("tol", [0.0, -1.0])
def test_nearest_point_labels_rejects_non_positive_tol(tol):
    with pytest.raises(ValueError, match="tol"):
        nearest_point_labels([[0.0, 0.0]], [[0.0, 0.0]], tol=tol)


def test_nearest_point_labels_rejects_endpoints_of_the_wrong_shape():
    with pytest.raises(ValueError, match="endpoints"):
        nearest_point_labels([0.0, 0.0], [[0.0, 0.0]])


# --- argument validation shared by every function -------------------------------------


def _call_with(name, eps=1.0, weight_decay=0.0, w=0.5, v=0.5):
    calls = {
        "objective": lambda: objective(w, v, eps, weight_decay),
        "gradient": lambda: gradient(w, v, eps, weight_decay),
        "hessian": lambda: hessian(w, v, eps, weight_decay),
        "critical_points": lambda: critical_points(eps, weight_decay),
        "constrained_critical_points": lambda: constrained_critical_points(
            eps, 1.0, weight_decay
        ),
        "gradient_descent": lambda: gradient_descent(
            [[w, v]], eps, weight_decay=weight_decay, steps=1
        ),
    }
    return calls[name]()


FUNCTIONS = [
    "objective",
    "gradient",
    "hessian",
    "critical_points",
    "constrained_critical_points",
    "gradient_descent",
]
POINTWISE = ["objective", "gradient", "hessian"]


@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("eps", [0.0, -1.0])
def test_functions_reject_nonpositive_eps(name, eps):
    with pytest.raises(ValueError, match="eps must be positive"):
        _call_with(name, eps=eps)


@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("eps", [np.nan, np.inf, -np.inf])
def test_functions_reject_non_finite_eps(name, eps):
    with pytest.raises(ValueError, match="eps must be finite"):
        _call_with(name, eps=eps)


@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("eps", [True, "1.0", None, [1.0]])
def test_functions_reject_eps_that_is_not_a_real_number(name, eps):
    with pytest.raises(TypeError, match="eps"):
        _call_with(name, eps=eps)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_functions_reject_negative_weight_decay(name):
    with pytest.raises(ValueError, match="weight_decay must be non-negative"):
        _call_with(name, weight_decay=-0.1)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_functions_reject_non_finite_weight_decay(name):
    with pytest.raises(ValueError, match="weight_decay must be finite"):
        _call_with(name, weight_decay=np.nan)


def test_minimum_curve_rejects_nonpositive_eps():
    with pytest.raises(ValueError, match="eps"):
        minimum_curve(1.0, eps=0.0)


@pytest.mark.parametrize("name", POINTWISE)
@pytest.mark.parametrize("bad", [np.nan, np.inf])
@pytest.mark.parametrize("coordinate", ["w", "v"])
def test_pointwise_functions_reject_non_finite_coordinates(name, bad, coordinate):
    with pytest.raises(
        ValueError, match=f"{coordinate} must contain only finite numbers"
    ):
        _call_with(name, **{coordinate: [0.5, bad]})


def test_minimum_curve_rejects_non_finite_w():
    with pytest.raises(ValueError, match="w must contain only finite numbers"):
        minimum_curve([1.0, np.nan], eps=1.0)


def test_critical_point_is_immutable():
    p = critical_points(eps=1.0)[0]
    assert isinstance(p, CriticalPoint)
    with pytest.raises(AttributeError):
        p.w = 1.0  # type: ignore[misc]


def test_gradient_descent_with_one_setting_per_start_equals_separate_runs():
    starts = np.random.default_rng(3).uniform(-2, 2, size=(20, 2))
    both = np.vstack([starts, starts, starts])
    run = gradient_descent(
        both, 1.0, steps=200,
        weight_decay=np.repeat([0.25, 0.0, 0.0], 20),
        radius=np.repeat([np.inf, 2.0, np.inf], 20),
    )
    penalised = gradient_descent(starts, 1.0, steps=200, weight_decay=0.25)
    constrained = gradient_descent(starts, 1.0, steps=200, radius=2.0)
    plain = gradient_descent(starts, 1.0, steps=200)
    assert np.array_equal(run.endpoints[:20], penalised.endpoints)
    assert np.array_equal(run.endpoints[20:40], constrained.endpoints)
    assert np.array_equal(run.endpoints[40:], plain.endpoints)


@pytest.mark.parametrize("kwargs, match", [
    (dict(weight_decay=[0.1, 0.2]), "weight_decay must be a number or have shape"),
    (dict(weight_decay=[0.1, -0.2, 0.0]), "weight_decay must be >= 0"),
    (dict(radius=[1.0, 0.0, 1.0]), "radius must be > 0"),
    (dict(radius=[1.0, np.nan, 1.0]), "radius must hold finite numbers"),
])
def test_gradient_descent_rejects_bad_per_start_settings(kwargs, match):
    with pytest.raises(ValueError, match=match):
        gradient_descent(np.zeros((3, 2)), 1.0, steps=5, **kwargs)

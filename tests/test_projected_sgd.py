"""Specification of resnet_theory.projected_sgd (Shamir's Theorem 4)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes, arrays
from resnet_theory.linear_predictors import least_squares
from resnet_theory.projected_sgd import (
    SkipToOutputRun,
    project_to_ball,
    skip_to_output_predict,
    skip_to_output_sgd,
)

vectors = arrays(
    float,
    array_shapes(min_dims=1, max_dims=2, max_side=5),
    elements=st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False),
)
radii = st.floats(1e-3, 1e3, allow_nan=False, allow_infinity=False)

WIDTH, RADIUS, FEATURE_RADIUS, STEPS = 4, 1.0, 2.0, 300


def make_sample(seed=0, n=30, d=3):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)) / 2
    return x, np.tanh(x @ np.array([1.0, -0.5, 0.2][:d]))


def run_sgd(seed=1, steps=STEPS, x=None, y=None, **kwargs):
    if x is None:
        x, y = make_sample()
    options = {
        "width": WIDTH,
        "radius": RADIUS,
        "feature_radius": FEATURE_RADIUS,
        "steps": steps,
        "rng": np.random.default_rng(seed),
    }
    options.update(kwargs)
    return skip_to_output_sgd(x, y, **options)


# --- projection -----------------------------------------------------------------------


@given(z=vectors, radius=radii)
def test_project_to_ball_lands_in_the_ball(z, radius):
    assert np.linalg.norm(project_to_ball(z, radius)) <= radius * (1 + 1e-12)


@given(z=vectors, radius=radii)
def test_project_to_ball_is_idempotent(z, radius):
    once = project_to_ball(z, radius)
    np.testing.assert_allclose(project_to_ball(once, radius), once, rtol=1e-12, atol=0)


@given(z=vectors, radius=radii)
def test_project_to_ball_leaves_points_inside_unchanged(z, radius):
    if np.linalg.norm(z) <= radius:
        np.testing.assert_array_equal(project_to_ball(z, radius), z)
    else:
        projected = project_to_ball(z, radius)
        assert np.linalg.norm(projected) == pytest.approx(radius, rel=1e-12)


@given(z=vectors, radius=radii)
def test_project_to_ball_keeps_the_direction(z, radius):
    projected = project_to_ball(z, radius)
    assert projected.shape == z.shape
    # projected = c z with 0 < c <= 1
    np.testing.assert_allclose(
        projected * np.linalg.norm(z),
        z * np.linalg.norm(projected),
        rtol=1e-12,
        atol=1e-12,
    )


def test_project_to_ball_uses_the_frobenius_norm_of_a_matrix():
    projected = project_to_ball(np.full((2, 2), 1.0), 1.0)
    np.testing.assert_allclose(projected, np.full((2, 2), 0.5))


@pytest.mark.parametrize("radius", [0.0, -1.0, np.nan])
def test_project_to_ball_rejects_invalid_radius(radius):
    with pytest.raises(ValueError, match="radius"):
        project_to_ball([1.0, 2.0], radius)


def test_project_to_ball_rejects_non_finite_points():
    with pytest.raises(ValueError, match="z must contain only finite numbers"):
        project_to_ball([1.0, np.inf], 1.0)


# --- prediction -----------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(3))
def test_skip_to_output_predict_is_w_dot_x_plus_v_dot_tanh_theta_x(seed):
    rng = np.random.default_rng(seed)
    x, w, v, theta = (
        rng.normal(size=(5, 3)),
        rng.normal(size=3),
        rng.normal(size=4),
        rng.normal(size=(4, 3)),
    )
    expected = [w @ xi + v @ np.tanh(theta @ xi) for xi in x]
    np.testing.assert_allclose(
        skip_to_output_predict(x, w, v, theta), expected, rtol=1e-12
    )


def test_skip_to_output_predict_with_zero_v_is_linear():
    rng = np.random.default_rng(0)
    x, w = rng.normal(size=(5, 3)), rng.normal(size=3)
    np.testing.assert_allclose(
        skip_to_output_predict(x, w, np.zeros(2), rng.normal(size=(2, 3))),
        x @ w,
        rtol=1e-12,
    )


@pytest.mark.parametrize(
    ("w", "v", "theta", "name"),
    [
        (np.ones(2), np.ones(4), np.ones((4, 3)), "w"),
        (np.ones(3), np.ones(3), np.ones((4, 3)), "v"),
        (np.ones(3), np.ones(4), np.ones((4, 2)), "theta"),
    ],
)
def test_skip_to_output_predict_rejects_mismatched_shapes(w, v, theta, name):
    with pytest.raises(ValueError, match=name):
        skip_to_output_predict(np.ones((5, 3)), w, v, theta)


# --- projected SGD --------------------------------------------------------------------


def test_skip_to_output_sgd_is_deterministic_for_a_fixed_seed():
    first, second = run_sgd(seed=3), run_sgd(seed=3)
    for name in ("objective", "running_average", "bound", "w", "v", "theta"):
        np.testing.assert_array_equal(getattr(first, name), getattr(second, name))


def test_skip_to_output_sgd_depends_on_the_seed():
    assert not np.array_equal(run_sgd(seed=3).objective, run_sgd(seed=4).objective)


@pytest.mark.parametrize("seed", range(3))
def test_skip_to_output_sgd_excess_is_below_the_bound_at_every_step(seed):
    run = run_sgd(seed=seed)
    assert isinstance(run, SkipToOutputRun)
    assert np.all(run.excess <= run.bound)


def test_skip_to_output_sgd_returns_one_value_per_step():
    run = run_sgd(steps=25)
    for name in ("objective", "running_average", "bound", "excess"):
        assert getattr(run, name).shape == (25,)


def test_skip_to_output_sgd_last_iterate_has_the_right_shapes():
    x, y = make_sample(d=3)
    run = run_sgd(x=x, y=y, steps=5)
    assert run.w.shape == (3,)
    assert run.v.shape == (WIDTH,)
    assert run.theta.shape == (WIDTH, 3)


def test_skip_to_output_sgd_linear_optimum_is_the_best_linear_predictor_in_the_ball():
    x, y = make_sample()
    run = run_sgd(x=x, y=y, steps=5, radius=0.3)
    assert run.linear_optimum == least_squares(x, y, 0.3).value


def test_skip_to_output_sgd_starts_at_the_zero_predictor():
    x, y = make_sample()
    run = run_sgd(x=x, y=y, steps=5)
    assert run.objective[0] == pytest.approx(0.5 * np.mean(y**2), rel=1e-12)


def test_skip_to_output_sgd_running_average_is_the_mean_of_the_objective_so_far():
    run = run_sgd(steps=50)
    expected = np.cumsum(run.objective) / np.arange(1, 51)
    np.testing.assert_allclose(run.running_average, expected, rtol=1e-12)
    np.testing.assert_allclose(
        run.excess, run.running_average - run.linear_optimum, rtol=0, atol=1e-15
    )


def test_skip_to_output_sgd_constants_come_from_the_data():
    x, y = make_sample()
    run = run_sgd(x=x, y=y, steps=5)
    big_b = np.sqrt(np.max(np.sum(x**2, axis=1)) + WIDTH)
    scale = RADIUS * big_b + np.max(np.abs(y))
    assert run.lipschitz == pytest.approx(scale * big_b, rel=1e-12)
    assert run.loss_bound == pytest.approx(0.5 * scale**2, rel=1e-12)


@pytest.mark.parametrize("delta", [0.01, 0.2])
def test_skip_to_output_sgd_bound_is_the_documented_rate(delta):
    run = run_sgd(steps=40, delta=delta)
    t = np.arange(1, 41)
    expected = (
        3 * RADIUS * run.lipschitz + 2 * run.loss_bound * np.sqrt(2 * np.log(1 / delta))
    ) / np.sqrt(t)
    np.testing.assert_allclose(run.bound, expected, rtol=1e-12)


def test_skip_to_output_sgd_losses_stay_below_the_loss_bound():
    run = run_sgd()
    assert np.all(run.objective <= run.loss_bound)


def test_skip_to_output_sgd_last_iterate_is_feasible():
    run = run_sgd(radius=0.2, feature_radius=0.5)
    assert np.linalg.norm(np.concatenate([run.w, run.v])) <= 0.2 * (1 + 1e-12)
    assert np.linalg.norm(run.theta) <= 0.5 * (1 + 1e-12)


def test_skip_to_output_sgd_objective_is_the_risk_of_the_last_iterate_one_step_later():
    x, y = make_sample()
    short, long = run_sgd(x=x, y=y, steps=20), run_sgd(x=x, y=y, steps=21)
    risk = 0.5 * np.mean(
        (skip_to_output_predict(x, short.w, short.v, short.theta) - y) ** 2
    )
    assert long.objective[20] == pytest.approx(risk, rel=1e-12)
    np.testing.assert_array_equal(long.objective[:20], short.objective)


def test_skip_to_output_sgd_takes_the_documented_projected_steps():
    # Reference implementation of the docstring's update, drawing Theta_1 and then the
    # sample order from the generator.
    x, y = make_sample(n=10)
    steps, seed = 4, 5
    n, d = x.shape
    rng = np.random.default_rng(seed)
    theta = project_to_ball(rng.normal(size=(WIDTH, d)) / np.sqrt(d), FEATURE_RADIUS)
    order = rng.integers(n, size=steps)
    big_b = np.sqrt(np.max(np.sum(x**2, axis=1)) + WIDTH)
    lipschitz = (RADIUS * big_b + np.max(np.abs(y))) * big_b
    w, v = np.zeros(d), np.zeros(WIDTH)
    risks = []
    for t in range(1, steps + 1):
        risks.append(0.5 * np.mean((skip_to_output_predict(x, w, v, theta) - y) ** 2))
        xi, yi = x[order[t - 1]], y[order[t - 1]]
        hidden = np.tanh(theta @ xi)
        residual = w @ xi + v @ hidden - yi
        eta = 2 * RADIUS / (lipschitz * np.sqrt(t))
        new_theta = theta - eta * residual * np.outer(v * (1 - hidden**2), xi)
        wv = project_to_ball(
            np.concatenate([w - eta * residual * xi, v - eta * residual * hidden]),
            RADIUS,
        )
        w, v = wv[:d], wv[d:]
        theta = project_to_ball(new_theta, FEATURE_RADIUS)
    run = run_sgd(seed=seed, steps=steps, x=x, y=y)
    np.testing.assert_allclose(run.objective, risks, rtol=1e-12)
    np.testing.assert_allclose(run.w, w, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(run.v, v, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(run.theta, theta, rtol=1e-12, atol=1e-15)


# --- argument validation --------------------------------------------------------------


@pytest.mark.parametrize("width", [0, -2])
def test_skip_to_output_sgd_rejects_non_positive_width(width):
    with pytest.raises(ValueError, match="width"):
        run_sgd(width=width, steps=2)


def test_skip_to_output_sgd_rejects_width_that_is_not_an_integer():
    with pytest.raises(TypeError, match="width"):
        run_sgd(width=2.0, steps=2)


@pytest.mark.parametrize("name", ["radius", "feature_radius"])
@pytest.mark.parametrize("value", [0.0, -1.0, np.inf])
def test_skip_to_output_sgd_rejects_invalid_radii(name, value):
    with pytest.raises(ValueError, match=name):
        run_sgd(steps=2, **{name: value})


@pytest.mark.parametrize("steps", [0, -1])
def test_skip_to_output_sgd_rejects_non_positive_steps(steps):
    with pytest.raises(ValueError, match="steps"):
        run_sgd(steps=steps)


@pytest.mark.parametrize("delta", [0.0, 1.0, -0.5, 1.5, np.nan])
def test_skip_to_output_sgd_rejects_delta_outside_the_unit_interval(delta):
    with pytest.raises(ValueError, match="delta"):
        run_sgd(steps=2, delta=delta)


@pytest.mark.parametrize("rng", [0, None, np.random.RandomState(0)])
def test_skip_to_output_sgd_rejects_rng_that_is_not_a_generator(rng):
    x, y = make_sample()
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        skip_to_output_sgd(
            x, y, width=2, radius=1.0, feature_radius=1.0, steps=2, rng=rng
        )


def test_skip_to_output_sgd_rejects_y_of_the_wrong_shape():
    x, y = make_sample()
    with pytest.raises(ValueError, match="y must have shape"):
        run_sgd(x=x, y=y[:-1], steps=2)


def test_skip_to_output_sgd_rejects_an_empty_sample():
    with pytest.raises(ValueError, match="at least one sample"):
        run_sgd(x=np.ones((0, 2)), y=np.ones(0), steps=2)


def test_skip_to_output_sgd_rejects_non_finite_inputs():
    x, y = make_sample()
    x = x.copy()
    x[0, 0] = np.nan
    with pytest.raises(ValueError, match="x must contain only finite numbers"):
        run_sgd(x=x, y=y, steps=2)

"""Specification of resnet_theory.smooth_maps (Bartlett, Evans and Long's construction)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from resnet_theory import checks
from resnet_theory.near_identity import near_identity_product
from resnet_theory.smooth_maps import (
    LipschitzEstimate,
    NearIdentityLayers,
    finite_difference_jacobian,
    layer_seminorm_bound,
    lipschitz_seminorm,
    near_identity_layers,
    scaling_schedule,
)

SHEAR = 0.7  # h(x) = (x1 + SHEAR x2^2, x2)


def shear(x):
    return np.stack([x[:, 0] + SHEAR * x[:, 1] ** 2, x[:, 1]], axis=1)


def shear_inverse(y):
    return np.stack([y[:, 0] - SHEAR * y[:, 1] ** 2, y[:, 1]], axis=1)


def shear_jacobian(x):
    j = np.zeros((len(x), 2, 2))
    j[:, 0, 0] = j[:, 1, 1] = 1.0
    j[:, 0, 1] = 2 * SHEAR * x[:, 1]
    return j


def twisted_map(seed):
    """A random smooth invertible map of the plane with h(0) != 0 and Dh(0) != I.

    h = L o V o T + b with T(x) = (x1 + s x2^2, x2), V(u) = (u1, u2 + t sin u1),
    L a rotation times a positive diagonal, so det Dh(0) > 0.
    """
    rng = np.random.default_rng(seed)
    s, t = rng.uniform(-0.8, 0.8, size=2)
    angle = rng.uniform(-np.pi, np.pi)
    rot = np.array([[np.cos(angle), -np.sin(angle)], [np.sin(angle), np.cos(angle)]])
    lin = rot @ np.diag(rng.uniform(0.5, 2.0, size=2))
    b = rng.normal(size=2)

    def h(x):
        u1 = x[:, 0] + s * x[:, 1] ** 2
        return np.stack([u1, x[:, 1] + t * np.sin(u1)], axis=1) @ lin.T + b

    def h_inverse(y):
        u = np.linalg.solve(lin, (y - b).T).T
        x2 = u[:, 1] - t * np.sin(u[:, 0])
        return np.stack([u[:, 0] - s * x2**2, x2], axis=1)

    def jacobian(x):
        u1 = x[:, 0] + s * x[:, 1] ** 2
        j = np.zeros((len(x), 2, 2))
        c = t * np.cos(u1)
        j[:, 0, 0], j[:, 0, 1] = 1.0, 2 * s * x[:, 1]
        j[:, 1, 0], j[:, 1, 1] = c, 1.0 + c * 2 * s * x[:, 1]
        return lin @ j

    return h, h_inverse, jacobian


def disk(n, seed=0):
    rng = np.random.default_rng(seed)
    r = np.sqrt(rng.uniform(size=n))
    t = rng.uniform(0, 2 * np.pi, size=n)
    return np.stack([r * np.cos(t), r * np.sin(t)], axis=1)


seeds = st.integers(0, 2**32 - 1)
depths = st.integers(1, 40)
schedules = st.sampled_from(["geometric", "uniform"])


# --- scaling_schedule -------------------------------------------------------


def test_uniform_schedule_has_equal_steps():
    np.testing.assert_allclose(scaling_schedule(5, "uniform"), [0.2, 0.4, 0.6, 0.8, 1.0])


@given(depth=st.integers(2, 200), first=st.floats(1e-4, 0.9))
def test_geometric_schedule_has_equal_ratios_from_first_to_one(depth, first):
    a = scaling_schedule(depth, "geometric", first=first)
    assert a[0] == pytest.approx(first) and a[-1] == 1.0
    np.testing.assert_allclose(a[1:] / a[:-1], (1 / first) ** (1 / (depth - 1)), rtol=1e-10)


@given(depth=depths, schedule=schedules)
def test_schedules_increase_strictly_to_one(depth, schedule):
    a = scaling_schedule(depth, schedule)
    assert a.shape == (depth,) and a[-1] == 1.0 and a[0] > 0
    assert np.all(np.diff(a) > 0)


def test_geometric_schedule_starts_at_one_over_depth():
    assert scaling_schedule(50)[0] == pytest.approx(1 / 50)
    assert scaling_schedule(1).tolist() == [1.0]


def test_schedule_rejects_unknown_name():
    with pytest.raises(ValueError, match="schedule"):
        scaling_schedule(4, "cosine")


@pytest.mark.parametrize("first", [0.0, 1.0, -0.5, 2.0])
def test_schedule_rejects_first_outside_unit_interval(first):
    with pytest.raises(ValueError, match="first"):
        scaling_schedule(4, first=first)


def test_schedule_rejects_first_with_uniform():
    with pytest.raises(ValueError, match="first"):
        scaling_schedule(4, "uniform", first=0.1)


def test_schedule_rejects_bad_depth():
    with pytest.raises(ValueError, match="depth"):
        scaling_schedule(0)
    with pytest.raises(TypeError, match="depth"):
        scaling_schedule(2.5)


# --- finite_difference_jacobian ----------------------------------------------


def test_finite_difference_jacobian_matches_analytic():
    x = disk(30)
    np.testing.assert_allclose(finite_difference_jacobian(shear, x), shear_jacobian(x),
                               atol=1e-8)


def test_finite_difference_jacobian_rejects_bad_input():
    with pytest.raises(TypeError, match="f"):
        finite_difference_jacobian(3.0, disk(3))
    with pytest.raises(ValueError, match="step"):
        finite_difference_jacobian(shear, disk(3), step=0.0)
    with pytest.raises(ValueError, match="x"):
        finite_difference_jacobian(shear, np.ones(3))
    with pytest.raises(ValueError, match="f"):
        finite_difference_jacobian(lambda x: x[:, :1], disk(3))


# --- near_identity_layers ------------------------------------------------------


@settings(max_examples=25)
@given(seed=seeds, depth=depths, schedule=schedules)
def test_layers_telescope_to_scaled_maps_and_to_h(seed, depth, schedule):
    h, h_inverse, jacobian = twisted_map(seed)
    layers = near_identity_layers(h, h_inverse, scaling_schedule(depth, schedule), 2,
                                  jacobian=jacobian)
    x = disk(20, seed=1)
    out = layers.forward(x)
    assert out.shape == (depth + 1, 20, 2)
    for i in range(depth + 1):
        np.testing.assert_allclose(out[i], layers.scaled_map(x, i), atol=1e-9)
    np.testing.assert_allclose(out[-1], h(x), atol=1e-9)


def test_first_scaled_map_is_the_affine_part():
    h, h_inverse, jacobian = twisted_map(3)
    layers = near_identity_layers(h, h_inverse, scaling_schedule(5), 2, jacobian=jacobian)
    x = disk(10)
    origin = np.zeros((1, 2))
    np.testing.assert_allclose(layers.scaled_map(x, 0), h(origin) + x @ jacobian(origin)[0].T)
    np.testing.assert_allclose(layers.scaled_inverse(layers.scaled_map(x, 0), 0), x)


def test_scaled_map_tends_to_affine_part_as_scale_shrinks():
    h, h_inverse, jacobian = twisted_map(4)
    x = disk(10)
    affine = near_identity_layers(h, h_inverse, [1.0], 2, jacobian=jacobian).scaled_map(x, 0)
    errors = []
    for a in (1e-1, 1e-2, 1e-3):
        layers = near_identity_layers(h, h_inverse, [a, 1.0], 2, jacobian=jacobian)
        errors.append(np.max(np.abs(layers.scaled_map(x, 1) - affine)))
    assert errors[0] > 5 * errors[1] > 25 * errors[2]  # O(a)


def test_shear_layer_seminorms_are_exact():
    # D(h_i - Id) at the image of x is [[0, 2c (a_i - a_{i-1}) x2], [0, 0]].
    x = disk(200)
    a = scaling_schedule(30)
    layers = near_identity_layers(shear, shear_inverse, a, 2, jacobian=shear_jacobian)
    expected = 2 * SHEAR * np.diff(a, prepend=0.0) * np.max(np.abs(x[:, 1]))
    np.testing.assert_allclose(layers.layer_seminorms(x), expected, rtol=1e-10)


@pytest.mark.parametrize("schedule", ["geometric", "uniform"])
def test_layers_approach_identity_as_depth_grows(schedule):
    h, h_inverse, jacobian = twisted_map(5)
    x = disk(100)
    worst = []
    for depth in (10, 100, 1000):
        layers = near_identity_layers(h, h_inverse, scaling_schedule(depth, schedule), 2,
                                      jacobian=jacobian)
        worst.append(layers.layer_seminorms(x).max())
    assert worst[0] > worst[1] > worst[2]
    assert worst[2] * 1000 / np.log(1000) < worst[0] * 10 / np.log(10) * 1.5  # O(log m / m)


def test_layer_seminorms_agree_with_lipschitz_estimate_of_each_layer():
    h, h_inverse, jacobian = twisted_map(6)
    layers = near_identity_layers(h, h_inverse, scaling_schedule(8), 2, jacobian=jacobian)
    x = disk(50)
    values = layers.layer_seminorms(x)
    for i in (1, 4, 8):
        y = layers.scaled_map(x, i - 1)
        estimate = lipschitz_seminorm(lambda z, i=i: layers.layer(z, i), y)
        assert estimate.jacobian == pytest.approx(values[i - 1], rel=1e-6)
        np.testing.assert_allclose(
            layers.layer_jacobians(x, i),
            finite_difference_jacobian(lambda z, i=i: layers.layer(z, i), y), atol=1e-7)


def test_finite_differences_agree_with_analytic_jacobian():
    h, h_inverse, jacobian = twisted_map(7)
    a = scaling_schedule(12, "uniform")
    exact = near_identity_layers(h, h_inverse, a, 2, jacobian=jacobian)
    approx = near_identity_layers(h, h_inverse, a, 2)
    x = disk(40)
    np.testing.assert_allclose(approx.layer_seminorms(x), exact.layer_seminorms(x), atol=1e-7)
    np.testing.assert_allclose(approx.linear_part, exact.linear_part, atol=1e-8)


def test_shear_layers_respect_the_seminorm_bound():
    # alpha = 2c (Dh is affine in x2), M >= 1, R = sup |x| on the disk.
    x = disk(300)
    a = scaling_schedule(25, "uniform")
    layers = near_identity_layers(shear, shear_inverse, a, 2, jacobian=shear_jacobian)
    bound = layer_seminorm_bound(a, 2 * SHEAR, 1.0, np.max(np.linalg.norm(x, axis=1)))
    assert np.all(layers.layer_seminorms(x) <= bound + 1e-12)


def test_linear_factors_multiply_to_the_linear_part():
    h, h_inverse, jacobian = twisted_map(8)
    layers = near_identity_layers(h, h_inverse, scaling_schedule(4), 2, jacobian=jacobian)
    factors = layers.linear_factors(16)
    np.testing.assert_allclose(near_identity_product(factors), layers.linear_part, atol=1e-12)


def test_layers_object_reports_depth_and_dim():
    layers = near_identity_layers(shear, shear_inverse, scaling_schedule(6), 2)
    assert isinstance(layers, NearIdentityLayers)
    assert (layers.depth, layers.dim) == (6, 2)
    assert layers.scale(0) == 0.0 and layers.scale(6) == 1.0


@pytest.mark.parametrize("name, args", [
    ("h", (None, shear_inverse)),
    ("h_inverse", (shear, "inverse")),
])
def test_layers_reject_non_callables(name, args):
    with pytest.raises(TypeError, match=name):
        near_identity_layers(*args, [1.0], 2)


def test_layers_reject_non_callable_jacobian():
    with pytest.raises(TypeError, match="jacobian"):
        near_identity_layers(shear, shear_inverse, [1.0], 2, jacobian=1)


@pytest.mark.parametrize("scalings", [[], [0.5, 0.5, 1.0], [0.0, 1.0], [0.2, 0.9], [0.5, 2.0],
                                      [1.0, 0.5]])
def test_layers_reject_bad_scalings(scalings):
    with pytest.raises(ValueError, match="scalings"):
        near_identity_layers(shear, shear_inverse, scalings, 2)


def test_layers_reject_orientation_reversing_map():
    def flip(x):
        return x * np.array([1.0, -1.0])

    with pytest.raises(ValueError, match="det"):
        near_identity_layers(flip, flip, [1.0], 2)


def test_layers_reject_singular_derivative():
    def cube(x):
        return x**3

    def cube_root(y):
        return np.cbrt(y)

    with pytest.raises(ValueError, match="singular"):
        near_identity_layers(cube, cube_root, [1.0], 2)


def test_layers_reject_wrong_inverse():
    with pytest.raises(ValueError, match="h_inverse"):
        near_identity_layers(shear, shear, [1.0], 2, check_points=disk(5))


def test_layers_reject_maps_returning_wrong_shape_or_nan():
    with pytest.raises(ValueError, match="h"):
        near_identity_layers(lambda x: x[:, :1], shear_inverse, [1.0], 2)
    with pytest.raises(ValueError, match="h"):
        near_identity_layers(lambda x: x * np.nan, shear_inverse, [1.0], 2)
    with pytest.raises(ValueError, match="jacobian"):
        near_identity_layers(shear, shear_inverse, [1.0], 2, jacobian=lambda x: x)


def test_layers_reject_bad_dim_step_and_check_points():
    with pytest.raises(TypeError, match="dim"):
        near_identity_layers(shear, shear_inverse, [1.0], 2.0)
    with pytest.raises(ValueError, match="step"):
        near_identity_layers(shear, shear_inverse, [1.0], 2, step=-1.0)
    with pytest.raises(ValueError, match="check_points"):
        near_identity_layers(shear, shear_inverse, [1.0], 2, check_points=np.ones((3, 3)))


def test_layer_methods_reject_bad_index_and_points():
    layers = near_identity_layers(shear, shear_inverse, scaling_schedule(3), 2)
    with pytest.raises(ValueError, match="i"):
        layers.layer(disk(2), 0)
    with pytest.raises(ValueError, match="i"):
        layers.scaled_map(disk(2), 4)
    with pytest.raises(TypeError, match="i"):
        layers.layer_jacobians(disk(2), 1.5)
    with pytest.raises(ValueError, match="x"):
        layers.forward(np.ones((2, 3)))
    with pytest.raises(ValueError, match="y"):
        layers.scaled_inverse(np.ones(2), 1)


# --- layer_seminorm_bound ------------------------------------------------------


def test_seminorm_bound_is_proportional_to_steps():
    np.testing.assert_allclose(layer_seminorm_bound([0.1, 0.5, 1.0], 2.0, 3.0, 0.5),
                               3.0 * np.array([0.1, 0.4, 0.5]))


def test_seminorm_bound_rejects_bad_arguments():
    with pytest.raises(ValueError, match="scalings"):
        layer_seminorm_bound([0.5, 0.2], 1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="smoothness"):
        layer_seminorm_bound([1.0], 0.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="inverse_lipschitz"):
        layer_seminorm_bound([1.0], 1.0, -1.0, 1.0)
    with pytest.raises(ValueError, match="radius"):
        layer_seminorm_bound([1.0], 1.0, 1.0, 0.0)


# --- lipschitz_seminorm ----------------------------------------------------------

matrices = st.lists(st.floats(-3, 3), min_size=4, max_size=4).map(
    lambda v: np.array(v).reshape(2, 2))


@settings(max_examples=30)
@given(b=matrices, c=st.lists(st.floats(-3, 3), min_size=2, max_size=2), seed=seeds)
def test_estimate_is_exact_on_affine_maps(b, c, seed):
    points = np.random.default_rng(seed).normal(size=(10, 2))
    estimate = lipschitz_seminorm(lambda x: x @ b.T + np.array(c), points)
    assert estimate.value == pytest.approx(np.linalg.norm(b - np.eye(2), 2), abs=1e-7)
    plain = lipschitz_seminorm(lambda x: x @ b.T, points, minus_identity=False)
    assert plain.value == pytest.approx(np.linalg.norm(b, 2), abs=1e-7)


@settings(max_examples=20)
@given(seed=seeds, scale=st.floats(0.05, 2.0))
def test_estimate_is_a_lower_bound(seed, scale):
    # (f - Id)(x) = scale sin(x) componentwise has Lipschitz seminorm exactly `scale`.
    points = np.random.default_rng(seed).uniform(-2, 2, size=(30, 2))
    estimate = lipschitz_seminorm(lambda x: x + scale * np.sin(x), points)
    assert estimate.pairs <= scale * (1 + 1e-12)
    assert estimate.jacobian <= scale * (1 + 1e-8)
    assert estimate.value == max(estimate.pairs, estimate.jacobian)


def test_estimate_converges_as_samples_grow():
    rng = np.random.default_rng(0)
    values = [lipschitz_seminorm(lambda x: x + 0.5 * np.sin(x),
                                 rng.uniform(-2, 2, size=(n, 2))).value for n in (4, 64, 1024)]
    assert values[0] <= values[1] <= values[2] <= 0.5
    assert values[2] > 0.499


def test_random_pairs_are_reproducible_and_below_all_pairs():
    points = disk(40)
    f = shear
    a = lipschitz_seminorm(f, points, pairs=100, rng=np.random.default_rng(1),
                           use_jacobian=False)
    b = lipschitz_seminorm(f, points, pairs=100, rng=np.random.default_rng(1),
                           use_jacobian=False)
    full = lipschitz_seminorm(f, points, use_jacobian=False)
    assert a.value == b.value and isinstance(a, LipschitzEstimate)
    assert np.isnan(a.jacobian) and a.value == a.pairs <= full.pairs


def test_estimate_uses_given_jacobian():
    points = disk(30)
    analytic = lipschitz_seminorm(shear, points, jacobian=shear_jacobian)
    assert analytic.jacobian == pytest.approx(2 * SHEAR * np.max(np.abs(points[:, 1])))


def test_estimate_rejects_bad_arguments():
    with pytest.raises(TypeError, match="f"):
        lipschitz_seminorm("f", disk(3))
    with pytest.raises(ValueError, match="points"):
        lipschitz_seminorm(shear, disk(1))
    with pytest.raises(ValueError, match="points"):
        lipschitz_seminorm(shear, np.ones((4, 2)))
    with pytest.raises(ValueError, match="pairs"):
        lipschitz_seminorm(shear, disk(3), pairs="some")
    with pytest.raises(ValueError, match="pairs"):
        lipschitz_seminorm(shear, disk(3), pairs=0, rng=np.random.default_rng(0))
    with pytest.raises(TypeError, match="rng"):
        lipschitz_seminorm(shear, disk(3), pairs=5)
    with pytest.raises(TypeError, match="rng"):
        lipschitz_seminorm(shear, disk(3), pairs=5, rng=0)
    with pytest.raises(ValueError, match="f"):
        lipschitz_seminorm(lambda x: x[:, :1], disk(3))
    with pytest.raises(ValueError, match="step"):
        lipschitz_seminorm(shear, disk(3), step=0.0)
    with pytest.raises(ValueError, match="jacobian"):
        lipschitz_seminorm(shear, disk(3), jacobian=lambda x: x)


# --- the auto-graded exercise ----------------------------------------------------


def test_shear_exercise_accepts_the_right_answer():
    # The check's shear has c = 1 and the geometric schedule with m = 20 on the unit disk.
    x = np.array([[0.0, 1.0], [0.0, -1.0]])

    def h(z):
        return np.stack([z[:, 0] + z[:, 1] ** 2, z[:, 1]], axis=1)

    def h_inv(z):
        return np.stack([z[:, 0] - z[:, 1] ** 2, z[:, 1]], axis=1)

    answer = near_identity_layers(h, h_inv, scaling_schedule(20), 2).layer_seminorms(x).max()
    entry = checks.REGISTRY["ex-ni-shear-seminorm"]
    # the closed form of the largest layer seminorm: 2 (1 - 20^(-1/19))
    assert entry.compare(float(answer), 2.0 * (1.0 - 20.0 ** (-1.0 / 19.0)))
    assert checks.ex_ni_shear_seminorm(float(answer)).passed is None  # form only


@pytest.mark.parametrize("wrong", [None, "0.3", True, -1.0, float("nan")])
def test_shear_exercise_rejects_malformed_answers(wrong):
    result = checks.ex_ni_shear_seminorm(wrong)
    assert result.passed is False and result.reason


@pytest.mark.parametrize("wrong", [0.1, 0.5, 0.05])
def test_shear_exercise_never_confirms_a_well_formed_wrong_answer(wrong):
    entry = checks.REGISTRY["ex-ni-shear-seminorm"]
    assert checks.ex_ni_shear_seminorm(wrong).passed is None  # form only
    assert not entry.compare(wrong, 2.0 * (1.0 - 20.0 ** (-1.0 / 19.0)))


# --- complex input (issue 19) -------------------------------------------------


def test_every_array_argument_rejects_complex_input_naming_it():
    z = disk(5).astype(complex)
    layers = near_identity_layers(shear, shear_inverse, scaling_schedule(4), 2)
    calls = {
        "x": lambda: finite_difference_jacobian(shear, z),
        "scalings": lambda: near_identity_layers(
            shear, shear_inverse, np.array([0.5, 1.0], dtype=complex), 2
        ),
        "check_points": lambda: near_identity_layers(
            shear, shear_inverse, [0.5, 1.0], 2, check_points=z
        ),
        "points": lambda: lipschitz_seminorm(shear, z),
    }
    for name, call in calls.items():
        with pytest.raises(TypeError, match=rf"^{name} must be real"):
            call()
    with pytest.raises(TypeError, match=r"^scalings must be real"):
        layer_seminorm_bound(np.array([0.5, 1.0 + 0.1j]), 1.0, 1.0, 1.0)
    for method in (layers.forward, layers.layer_seminorms):
        with pytest.raises(TypeError, match=r"^x must be real"):
            method(z)
    with pytest.raises(TypeError, match=r"^y must be real"):
        layers.layer(z, 1)
    with pytest.raises(TypeError, match=r"must be real"):
        layers.scaled_map(z, 1)


def test_callables_returning_complex_values_are_rejected():
    def complex_shear(x):
        return shear(x) + 0j

    with pytest.raises(TypeError, match=r"^h must return real values"):
        near_identity_layers(complex_shear, shear_inverse, [0.5, 1.0], 2)
    with pytest.raises(TypeError, match=r"^f must return real values"):
        lipschitz_seminorm(complex_shear, disk(5))
    with pytest.raises(TypeError, match=r"^jacobian must return real values"):
        near_identity_layers(
            shear,
            shear_inverse,
            [0.5, 1.0],
            2,
            jacobian=lambda x: shear_jacobian(x) + 0j,
        )

"""Specifications of resnet_theory.near_identity (Hardt & Ma, Theorem 2.1)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from resnet_theory.near_identity import (
    log_condition,
    near_identity_factors,
    near_identity_product,
    theorem_2_1_bound,
)


def random_positive_det(seed, d, spread=1.0):
    """A random d x d matrix with det > 0 and log singular values in [-spread, spread]."""
    rng = np.random.default_rng(seed)
    u = np.linalg.qr(rng.standard_normal((d, d)))[0]
    v = np.linalg.qr(rng.standard_normal((d, d)))[0]
    s = np.exp(rng.uniform(-spread, spread, d))
    a = u @ np.diag(s) @ v.T
    if np.linalg.det(a) < 0:
        a[:, 0] *= -1
    return a


def max_norm(factors):
    return max(np.linalg.norm(f, 2) for f in factors)


@settings(max_examples=40)
@given(
    seed=st.integers(0, 10_000),
    d=st.integers(1, 5),
    depth=st.integers(1, 40),
    spread=st.floats(0.0, 2.0),
)
def test_factors_multiply_back_to_the_matrix(seed, d, depth, spread):
    a = random_positive_det(seed, d, spread)
    factors = near_identity_factors(a, depth)
    assert factors.shape == (depth, d, d)
    np.testing.assert_allclose(near_identity_product(factors), a, atol=1e-10 * np.linalg.norm(a))


@settings(max_examples=40)
@given(
    seed=st.integers(0, 10_000),
    d=st.integers(1, 5),
    depth=st.integers(1, 60),
    spread=st.floats(0.0, 3.0),
)
def test_factors_satisfy_both_bounds_when_depth_at_least_three_gamma(seed, d, depth, spread):
    a = random_positive_det(seed, d, spread)
    if depth < 3 * log_condition(a):
        return
    norm = max_norm(near_identity_factors(a, depth))
    assert norm <= theorem_2_1_bound(a, depth) + 1e-12
    assert norm <= theorem_2_1_bound(a, depth, version="blog") + 1e-12


def test_max_norm_decays_like_one_over_depth():
    a = random_positive_det(3, 4, 1.5)
    norms = np.array([max_norm(near_identity_factors(a, L)) for L in (10, 20, 40, 80, 160)])
    products = norms * np.array([10, 20, 40, 80, 160])
    assert products.max() / products.min() < 1.5


def test_minus_identity_in_two_dimensions_is_factored_into_rotations():
    factors = near_identity_factors(-np.eye(2), 8)
    np.testing.assert_allclose(near_identity_product(factors), -np.eye(2), atol=1e-12)
    assert max_norm(factors) == pytest.approx(2 * np.sin(np.pi / 16))


def test_minus_identity_in_four_dimensions():
    factors = near_identity_factors(-np.eye(4), 5)
    np.testing.assert_allclose(near_identity_product(factors), -np.eye(4), atol=1e-12)
    assert max_norm(factors) == pytest.approx(2 * np.sin(np.pi / 10))


def test_jordan_block_with_negative_eigenvalue():
    a = np.array([[-1.0, 1.0], [0.0, -1.0]])
    for depth in (1, 2, 7, 50):
        factors = near_identity_factors(a, depth)
        np.testing.assert_allclose(near_identity_product(factors), a, atol=1e-12)
    assert max_norm(near_identity_factors(a, 100)) < 0.05


def test_rotation_by_pi_in_three_dimensions():
    a = np.diag([-1.0, -1.0, 1.0])
    factors = near_identity_factors(a, 12)
    np.testing.assert_allclose(near_identity_product(factors), a, atol=1e-12)
    assert max_norm(factors) == pytest.approx(2 * np.sin(np.pi / 24))


def test_identity_gives_zero_factors():
    np.testing.assert_array_equal(near_identity_factors(np.eye(3), 4), np.zeros((4, 3, 3)))


def test_positive_definite_target_uses_equal_roots():
    a = np.diag([4.0, 0.25])
    factors = near_identity_factors(a, 2)
    np.testing.assert_allclose(factors, np.array([np.diag([1.0, -0.5])] * 2), atol=1e-12)


def test_depth_one_returns_the_matrix_minus_identity():
    a = random_positive_det(1, 3)
    np.testing.assert_allclose(near_identity_factors(a, 1)[0], a - np.eye(3))


@pytest.mark.parametrize(
    "a",
    [np.diag([-1.0, 1.0]), np.diag([-2.0, 1.0, 1.0]), np.array([[0.0, 1.0], [1.0, 0.0]])],
)
def test_rejects_negative_determinant(a):
    with pytest.raises(ValueError, match="det a"):
        near_identity_factors(a, 4)


def test_rejects_singular_matrix():
    with pytest.raises(ValueError, match="a must be invertible"):
        near_identity_factors(np.array([[1.0, 2.0], [2.0, 4.0]]), 3)
    with pytest.raises(ValueError, match="a must be invertible"):
        near_identity_factors(np.zeros((2, 2)), 3)


def test_rejects_non_square_matrix():
    with pytest.raises(ValueError, match="a must be a non-empty square"):
        near_identity_factors(np.ones((2, 3)), 3)


def test_rejects_non_finite_matrix():
    with pytest.raises(ValueError, match="a must contain only finite"):
        near_identity_factors(np.array([[np.nan, 0.0], [0.0, 1.0]]), 3)


def test_rejects_bad_depth():
    with pytest.raises(ValueError, match="depth"):
        near_identity_factors(np.eye(2), 0)
    with pytest.raises(TypeError, match="depth"):
        near_identity_factors(np.eye(2), 2.5)


def test_log_condition_is_largest_absolute_log_singular_value():
    assert log_condition(np.diag([2.0, 0.125])) == pytest.approx(np.log(8.0))
    assert log_condition(np.array([[0.0, -1.0], [1.0, 0.0]])) == pytest.approx(0.0)


def test_log_condition_rejects_singular_matrix():
    with pytest.raises(ValueError, match="a must be invertible"):
        log_condition(np.diag([1.0, 0.0]))


def test_bound_versions_match_their_formulas():
    a = np.diag([np.e**2, 1.0])
    gamma = 2.0
    assert theorem_2_1_bound(a, 7) == pytest.approx(
        2 * (np.sqrt(np.pi) + np.sqrt(3 * gamma)) ** 2 / 7
    )
    assert theorem_2_1_bound(a, 7, version="blog") == pytest.approx((4 * np.pi + 3 * gamma) / 7)


def test_bound_rejects_unknown_version():
    with pytest.raises(ValueError, match="version"):
        theorem_2_1_bound(np.eye(2), 3, version="arxiv")


def test_product_of_no_factors_is_identity_and_rejects_non_square():
    np.testing.assert_array_equal(near_identity_product(np.zeros((0, 2, 2))), np.eye(2))
    with pytest.raises(ValueError, match="factors"):
        near_identity_product(np.zeros((3, 2, 3)))


def _half_turn_depth():
    # Every factor of -I = R(pi) is a rotation by pi/L, of norm 2 sin(pi/(2L)).
    return next(L for L in range(1, 100) if 2 * np.sin(np.pi / (2 * L)) <= 0.1)


def test_the_library_gives_the_half_turn_depth_the_answer_key_expects():
    from resnet_theory import checks
    from resnet_theory.checks import REGISTRY

    depth = next(
        L for L in range(1, 100) if max_norm(near_identity_factors(-np.eye(2), L)) <= 0.1
    )
    entry = REGISTRY["ex-im-rotation-depth"]
    for answer in (depth, np.int64(depth)):
        assert entry.compare(entry.form.normalise(answer), _half_turn_depth())
        assert checks.ex_im_rotation_depth(answer).passed is None  # form only


def test_check_rejects_missing_malformed_and_wrong_depths():
    from resnet_theory import checks
    from resnet_theory.checks import REGISTRY

    assert checks.ex_im_rotation_depth(None).passed is False
    assert checks.ex_im_rotation_depth(31.5).passed is False
    assert checks.ex_im_rotation_depth("32x").passed is False
    entry = REGISTRY["ex-im-rotation-depth"]
    for wrong in (31, 40):
        assert not entry.compare(wrong, _half_turn_depth())


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda z: near_identity_factors(z, 4), "a"),
        (lambda z: log_condition(z), "a"),
        (lambda z: theorem_2_1_bound(z, 4), "a"),
        (lambda z: near_identity_product(z[None]), "factors"),
    ],
)
def test_complex_input_is_rejected_naming_the_argument(call, name):
    """Issue 19: a complex matrix must not be factored through its real part."""
    z = np.array([[1.0 + 1e-3j, 0.0], [0.0, 1.0]])
    with pytest.raises(TypeError, match=rf"^{name} must be real"):
        call(z)
    # A complex dtype with zero imaginary part is still a complex argument.
    with pytest.raises(TypeError, match=rf"^{name} must be real"):
        call(np.eye(2, dtype=complex))

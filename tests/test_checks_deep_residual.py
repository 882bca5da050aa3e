"""Tests for the auto-graded checks of Chapter 1 (deep residual networks)."""

import math

import numpy as np
import pytest
from resnet_theory import checks

RIGHT = math.tanh(math.log(10) / 100)


def test_eps_budget_accepts_the_right_answer():
    result = checks.ex_dr_eps_budget(RIGHT)
    assert result.passed
    assert result.exercise == "ex-dr-eps-budget"


def test_eps_budget_accepts_numpy_scalars_within_tolerance():
    assert checks.ex_dr_eps_budget(np.float64(RIGHT * (1 + 5e-7))).passed


def test_eps_budget_rejects_none_and_names_the_variable():
    result = checks.ex_dr_eps_budget(None)
    assert not result.passed
    assert "ex_dr_eps_budget_answer" in result.reason


def test_eps_budget_says_too_large_for_a_large_eps():
    # forgetting the 1 - eps in the denominator: (1 + eps)^50 = 10
    result = checks.ex_dr_eps_budget(10 ** (1 / 50) - 1)
    assert not result.passed
    assert "too large" in result.reason


def test_eps_budget_says_a_larger_eps_is_allowed_for_a_small_eps():
    result = checks.ex_dr_eps_budget(RIGHT / 2)
    assert not result.passed
    assert "larger eps" in result.reason


@pytest.mark.parametrize(
    "answer", ["0.023", [RIGHT], np.array([RIGHT]), float("nan"), True, 1.5, -0.1]
)
def test_eps_budget_rejects_junk_without_raising(answer):
    result = checks.ex_dr_eps_budget(answer)
    assert not result.passed


def test_eps_budget_reasons_do_not_reveal_the_answer():
    for answer in (None, 0.5, RIGHT / 2, "x"):
        assert f"{RIGHT:.3f}" not in checks.ex_dr_eps_budget(answer).reason


def test_eps_budget_is_registered_under_its_label():
    entry = checks.REGISTRY["ex-dr-eps-budget"]
    assert entry.answer_variable == "ex_dr_eps_budget_answer"

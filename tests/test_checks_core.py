"""Specification of the exercise-check machinery (resnet_theory.checks._core)."""

import pytest
from resnet_theory import checks
from resnet_theory.checks import _core


@pytest.fixture
def registry(monkeypatch):
    """A private registry, so that test checks never leak into the real one."""
    fresh = {}
    monkeypatch.setattr(_core, "REGISTRY", fresh)
    return fresh


def _register(label="ex-test-square", expected=4):
    @_core.exercise_check(label)
    def check(answer):
        if answer != expected:
            return False, "the value is not right yet"
        return True, "right"
    return check


def test_registered_check_is_named_after_the_label(registry):
    check = _register()
    assert check.__name__ == "ex_test_square"
    assert registry["ex-test-square"].answer_variable == "ex_test_square_answer"


def test_right_answer_passes_and_result_is_truthy(registry):
    result = _register()(4)
    assert result.passed and bool(result)
    assert repr(result) == "[correct] ex-test-square: right"


def test_a_long_verdict_wraps_to_the_page_and_keeps_every_word():
    reason = "the factors multiply to the target and all have the same singular values"
    result = _core.CheckResult("ex-dl-balanced", True, reason)
    lines = repr(result).splitlines()
    assert len(lines) == 2 and all(len(line) <= _core.CheckResult.WIDTH for line in lines)
    assert lines[0].startswith("[correct] ex-dl-balanced: ")
    assert lines[1].startswith("    ")
    assert " ".join(repr(result).split()) == f"[correct] ex-dl-balanced: {reason}"


def test_wrong_answer_fails_with_the_reason(registry):
    result = _register()(5)
    assert not result
    assert "not right yet" in result.reason


def test_missing_answer_fails_and_names_the_variable(registry):
    result = _register()(None)
    assert not result.passed
    assert "ex_test_square_answer" in result.reason


def test_an_exception_inside_a_check_is_a_failed_result(registry):
    @_core.exercise_check("ex-test-raise")
    def check(answer):
        return answer.shape == (2,), "shape"

    result = check(3)
    assert not result.passed
    assert "AttributeError" in result.reason


def test_labels_must_follow_the_book_convention(registry):
    with pytest.raises(ValueError, match="label"):
        _core.exercise_check("Exercise 1")


def test_a_label_cannot_be_registered_twice(registry):
    _register()
    with pytest.raises(ValueError, match="already registered"):
        _register()


def test_check_namespace_reads_each_answer_variable(registry, monkeypatch):
    _register()
    results = checks.check_namespace({"ex_test_square_answer": 4}, ["ex-test-square"])
    assert results["ex-test-square"].passed


def test_check_namespace_rejects_unknown_labels():
    with pytest.raises(ValueError, match="labels"):
        checks.check_namespace({}, ["ex-no-such-exercise"])


def test_unknown_check_names_raise_attribute_error():
    with pytest.raises(AttributeError, match="ex_no_such_exercise"):
        checks.ex_no_such_exercise  # noqa: B018


def test_every_registered_check_rejects_a_missing_answer():
    for label, entry in checks.REGISTRY.items():
        assert not entry.function(None).passed, label


@pytest.mark.parametrize("data", [0.5, -3, True, "0.5", [0.1, [0.2]], {"a": 1}, [], 1e308])
def test_every_registered_check_accepts_any_exported_data_without_raising(data):
    # The grader calls the checks on whatever the kernel exported as JSON data.
    for label, entry in checks.REGISTRY.items():
        result = entry.function(data)
        assert isinstance(result, checks.CheckResult) and result.exercise == label

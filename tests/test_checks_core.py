"""Specification of the exercise-check machinery (resnet_theory.checks._core).

A check says how an answer is judged, never what it is: a form (type, shape,
finiteness, plausible range) and either a comparison with a value of the
answer key, or a property that recognises any correct answer by itself.
"""

from fractions import Fraction

import numpy as np
import pytest
from resnet_theory import checks
from resnet_theory.checks import _core


@pytest.fixture
def registry(monkeypatch):
    """A private registry, so that test checks never leak into the real one."""
    fresh = {}
    monkeypatch.setattr(_core, "REGISTRY", fresh)
    return fresh


def _compared(label="ex-test-area"):
    @_core.exercise_check(label, form=checks.Number(low=0, strict=True),
                          compare=checks.Close(rtol=1e-5))
    def check():
        """The area of the unit disk."""
    return check


def _property(label="ex-test-square"):
    @_core.exercise_check(label, form=checks.RealArray((2, 2)))
    def check(matrix):
        """A matrix whose square is the identity, other than +-I."""
        if not np.allclose(matrix @ matrix, np.eye(2)):
            return False, "its square is not the identity"
        if np.allclose(np.abs(matrix), np.eye(2)) and np.allclose(matrix, matrix[0, 0] * np.eye(2)):
            return False, "that is plus or minus the identity"
        return True, "its square is the identity"
    return check


# ------------------------------------------------------------------------ registering

def test_registered_check_is_named_after_the_label(registry):
    check = _compared()
    assert check.__name__ == "ex_test_area" and check.__doc__.startswith("The area")
    assert registry["ex-test-area"].answer_variable == "ex_test_area_answer"
    assert registry["ex-test-area"].needs_key


def test_labels_must_follow_the_book_convention(registry):
    with pytest.raises(ValueError, match="label"):
        _core.exercise_check("Exercise 1", form=checks.Number())


def test_a_label_cannot_be_registered_twice(registry):
    _compared()
    with pytest.raises(ValueError, match="already registered"):
        _compared()


def test_a_check_needs_a_form(registry):
    with pytest.raises(TypeError, match="form"):
        _core.exercise_check("ex-test-x", form=float)


# ------------------------------------------------------------ what a student runs

def test_a_compared_check_validates_the_form_only_and_says_so(registry):
    result = _compared()(3.14159)
    assert result.passed is None and not result
    assert " ".join(repr(result).split()) == (
        "[form ok] ex-test-area: a positive real number; it is compared with the answer key "
        "(within a relative 1e-5) when graded")


def test_a_compared_check_gives_the_same_verdict_to_every_answer_of_the_right_form(registry):
    check = _compared()
    verdicts = {repr(check(answer)) for answer in (np.pi, 3.14159, 3.0, 1e-9, 1e6,
                                                   np.float64(2), np.array([2.5]), 7)}
    assert len(verdicts) == 1


def test_a_compared_check_rejects_the_wrong_form_and_names_the_form(registry):
    check = _compared()
    for junk in ("3.14", True, [1.0, 2.0], np.zeros(3), float("nan"), float("inf"),
                 -1.0, 0.0, 1j, {"a": 1}, object()):
        result = check(junk)
        assert result.passed is False, junk
        assert result.reason.startswith("expected a positive real number, got "), junk


def test_missing_answer_fails_and_names_the_variable(registry):
    for check in (_compared(), _property()):
        result = check(None)
        assert result.passed is False and "_answer" in result.reason


def test_a_property_check_gives_its_full_verdict(registry):
    check = _property()
    assert check(np.array([[0.0, 1.0], [1.0, 0.0]])).passed is True
    assert repr(check([[0, 1], [1, 0]])) == "[correct] ex-test-square: its square is the identity"
    wrong = check(np.eye(2) * 2)
    assert wrong.passed is False and "not the identity" in wrong.reason
    assert check(np.zeros(3)).reason == "expected a real array of shape (2, 2), got an array " \
                                        "of shape (3,)"


def test_an_exception_inside_a_property_is_a_failed_result(registry):
    @_core.exercise_check("ex-test-raise", form=checks.Number())
    def check(value):
        return value.shape == (2,), "shape"

    result = check(3.0)
    assert result.passed is False and "AttributeError" in result.reason


def test_a_long_verdict_wraps_to_the_page_and_keeps_every_word():
    reason = "the factors multiply to the target and all have the same singular values"
    result = _core.CheckResult("ex-dl-balanced", True, reason)
    lines = repr(result).splitlines()
    assert len(lines) == 2 and all(len(line) <= _core.CheckResult.WIDTH for line in lines)
    assert lines[0].startswith("[correct] ex-dl-balanced: ")
    assert lines[1].startswith("    ")
    assert " ".join(repr(result).split()) == f"[correct] ex-dl-balanced: {reason}"


# ------------------------------------------------------------------ what the grader does

def test_the_grader_compares_with_the_key_without_partial_credit_or_direction(registry):
    entry = (_compared(), registry["ex-test-area"])[1]
    assert entry.grade(3.14159, np.pi) == (True, "matches the answer key (within a relative "
                                                 "1e-5)")
    below, above = entry.grade(3.0, np.pi), entry.grade(3.3, np.pi)
    assert below[0] is above[0] is False
    assert below[1] == above[1] == "does not match the answer key (within a relative 1e-5)"


def test_the_grader_does_not_grade_a_compared_exercise_without_a_key(registry):
    _compared()
    passed, reason = registry["ex-test-area"].grade(3.14159)
    assert passed is False and "answer key" in reason


def test_a_property_check_needs_no_key(registry):
    _property()
    entry = registry["ex-test-square"]
    assert not entry.needs_key
    assert entry.grade([[0, 1], [1, 0]]) == (True, "its square is the identity")


# -------------------------------------------------------------------------- forms

@pytest.mark.parametrize("answer", [0.25, np.float64(0.25), np.array(0.25), np.array([0.25]),
                                    Fraction(1, 4), [0.25]])
def test_a_number_is_read_from_any_numeric_form(answer):
    assert checks.Number().normalise(answer) == 0.25


def test_a_number_is_read_from_a_sympy_number():
    import sympy as sp

    assert checks.Number().normalise(sp.Rational(1, 4)) == 0.25
    with pytest.raises(checks.FormError):
        checks.Number().normalise(sp.Symbol("x"))


def test_ranges_are_described_in_words():
    assert checks.Number(low=0, high=1, strict=True).description == \
        "a real number strictly between 0 and 1"
    assert checks.Number(low=0).description == "a non-negative real number"
    assert checks.Number(high=0.4).description == "a real number at most 0.4"
    assert checks.Integer(low=1).description == "a positive whole number"
    assert checks.RealArray((6,), low=0, high=0.4).description == \
        "a real array of shape (6,), with entries in [0, 0.4]"
    assert checks.BooleanArray((4,)).description == "an array of 4 booleans"


def test_a_whole_number_may_be_written_as_a_float_but_not_as_a_boolean():
    form = checks.Integer(low=1)
    assert form.normalise(32.0) == 32 and form.normalise(np.int64(32)) == 32
    for junk in (True, 32.5, 0, "32", [32, 33]):
        with pytest.raises(checks.FormError):
            form.normalise(junk)


def test_arrays_have_their_shape_finite_real_entries_and_range():
    form = checks.RealArray((2,), low=0, high=1)
    assert form.normalise([0, 1]).dtype == float
    for junk in ([0.5], [[0.5, 0.5]], [0.5, np.nan], [0.5, 2.0], [True, False],
                 np.array([1j, 0]), "ab", [0.5, "a"]):
        with pytest.raises(checks.FormError):
            form.normalise(junk)


def test_boolean_arrays_take_booleans_only():
    form = checks.BooleanArray((2,))
    assert form.normalise(np.array([True, False])).tolist() == [True, False]
    for junk in ([1, 0], [True], "TF", None):
        with pytest.raises(checks.FormError):
            form.normalise(junk)


def test_close_accepts_every_rounding_to_the_asked_digits():
    close = checks.Close(rtol=1e-5)  # six significant digits
    for value in (0.271828183, 1.00000499e-3, 9.99999501, 123456.5):
        rounded = float(f"{value:.6g}")
        assert close(rounded, value), (rounded, value)
    assert not close(float(f"{0.271828183:.5g}") + 1e-5, 0.271828183)
    assert not close([1.0, 2.0], [1.0])


def test_close_needs_a_tolerance():
    with pytest.raises(ValueError):
        checks.Close()


def test_exact_compares_whole_numbers_and_booleans():
    assert checks.Exact()(32, 32) and not checks.Exact()(31, 32)
    assert checks.Exact()([True, False], [True, False])


# ----------------------------------------------------------------- the real registry

def test_check_namespace_reads_each_answer_variable(registry):
    _property()
    results = checks.check_namespace({"ex_test_square_answer": [[0, 1], [1, 0]]},
                                     ["ex-test-square"])
    assert results["ex-test-square"].passed


def test_check_namespace_rejects_unknown_labels():
    with pytest.raises(ValueError, match="labels"):
        checks.check_namespace({}, ["ex-no-such-exercise"])


def test_unknown_check_names_raise_attribute_error():
    with pytest.raises(AttributeError, match="ex_no_such_exercise"):
        checks.ex_no_such_exercise  # noqa: B018


def test_every_registered_check_has_a_form_and_a_comparison_or_a_property():
    for label, entry in checks.REGISTRY.items():
        assert entry.form is not None and entry.form.description, label
        assert (entry.compare is None) != (entry.property_check is None), label


def test_every_registered_check_rejects_a_missing_answer():
    for label, entry in checks.REGISTRY.items():
        assert entry.function(None).passed is False, label


@pytest.mark.parametrize("data", [0.5, -3, True, "0.5", [0.1, [0.2]], {"a": 1}, [], 1e308])
def test_every_registered_check_accepts_any_exported_data_without_raising(data):
    # The grader calls the checks on whatever the kernel exported as JSON data.
    for label, entry in checks.REGISTRY.items():
        result = entry.function(data)
        assert isinstance(result, checks.CheckResult) and result.exercise == label
        assert isinstance(entry.grade(data, 0.5), tuple)

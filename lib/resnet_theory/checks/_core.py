"""The machinery behind :mod:`resnet_theory.checks` (private).

A registered check says how an answer is judged *without knowing it*:

- a **form** (:class:`Number`, :class:`Integer`, :class:`RealArray`,
  :class:`BooleanArray`): the type, shape, finiteness and plausible range of
  an answer, which carry no information about its value;
- and either a **comparison** (:class:`Close`, :class:`Exact`) with the
  expected value, which lives in the lecturer's answer key
  (:mod:`resnet_theory.homework.answer_key`) and never in this package, or a
  **property** that recognises any correct answer by itself (the factors
  multiply to the target and have equal singular values) and needs no key.

:func:`exercise_check` registers a check under its exercise label. The
function it returns (``checks.ex_...``, what a student runs) validates the form
and, for a comparison, says only that: its verdict is the same for the right
answer and for every wrong answer of the right form, so running it reveals
nothing. A property check gives its full verdict. The grader calls
:meth:`ExerciseCheck.grade` with the answer key's value instead.
"""

from __future__ import annotations

import math
import numbers
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["CheckResult", "ExerciseCheck", "exercise_check", "REGISTRY", "FormError",
           "Number", "Integer", "RealArray", "BooleanArray", "Close", "Exact"]

_LABEL = re.compile(r"^ex-[a-z0-9]+(-[a-z0-9]+)*$")


@dataclass(frozen=True)
class CheckResult:
    """The verdict on one answer: which exercise, whether it passed, and why.

    ``passed`` is ``True`` (correct), ``False`` (not yet) or ``None`` (the
    form is right; the value is judged against the answer key when graded).
    It prints as ``[correct] <label>: <reason>``, ``[not yet] ...`` or
    ``[form ok] ...``, wrapped at :data:`WIDTH` characters with the
    continuation lines indented. Its truth value is ``passed is True``.

    Examples
    --------
    >>> print(CheckResult("ex-demo", True, "right"))
    [correct] ex-demo: right
    >>> print(CheckResult("ex-demo", None, "a positive real number; it is "
    ...                   "compared with the answer key when graded"))
    [form ok] ex-demo: a positive real number; it is compared with the answer key
        when graded
    """

    #: The longest line of a printed verdict.
    WIDTH = 79

    exercise: str
    passed: bool | None
    reason: str

    def __bool__(self) -> bool:
        return self.passed is True

    @property
    def mark(self) -> str:
        """``"correct"``, ``"not yet"`` or ``"form ok"``."""
        return {True: "correct", False: "not yet"}.get(self.passed, "form ok")

    def __repr__(self) -> str:
        return textwrap.fill(
            f"[{self.mark}] {self.exercise}: {self.reason}",
            width=self.WIDTH,
            subsequent_indent="    ",
            break_long_words=False,
            break_on_hyphens=False,
        )

    __str__ = __repr__


# ------------------------------------------------------------------------- forms

class FormError(ValueError):
    """An answer that is not of the required form; the message says what was expected."""


def _kind(answer):
    """A short name for what an answer is, for a message (never its value)."""
    if isinstance(answer, bool) or isinstance(answer, np.bool_):
        return "a boolean"
    if isinstance(answer, str | bytes):
        return "a string"
    if isinstance(answer, dict):
        return "a dict"
    shape = getattr(answer, "shape", None)
    if isinstance(answer, list | tuple) or (shape is not None and shape != ()):
        try:
            shape = np.shape(answer)
        except Exception:
            return "a ragged list"
        return f"an array of shape {shape}"
    name = type(answer).__name__
    return f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def _bounds_text(low, high, strict):
    left, right = ("(", ")") if strict else ("[", "]")
    if low is not None and high is not None:
        if strict:
            return f"strictly between {low:g} and {high:g}"
        return f"in {left}{low:g}, {high:g}{right}"
    if low is not None:
        if low == 0:
            return "positive" if strict else "non-negative"
        return f"{'above' if strict else 'at least'} {low:g}"
    if high is not None:
        if high == 0:
            return "negative" if strict else "non-positive"
        return f"{'below' if strict else 'at most'} {high:g}"
    return ""


def _in_bounds(values, low, high, strict):
    values = np.asarray(values, dtype=float)
    if low is not None and not np.all(values > low if strict else values >= low):
        return False
    if high is not None and not np.all(values < high if strict else values <= high):
        return False
    return True


def _numeric_array(answer):
    """``answer`` as a NumPy array of a real numeric type, or a FormError."""
    if answer is None or isinstance(answer, bool | np.bool_ | str | bytes | dict):
        raise FormError(_kind(answer))
    if isinstance(answer, numbers.Real) and not isinstance(answer, numbers.Integral) and \
            not isinstance(answer, float | np.floating):
        answer = float(answer)  # Fraction, SymPy numbers: a real number with __float__
    try:
        array = np.asarray(answer)
    except Exception:
        raise FormError(_kind(answer)) from None
    if array.dtype.kind == "O" and array.shape == ():
        try:
            array = np.asarray(float(answer))
        except Exception:
            raise FormError(_kind(answer)) from None
    if array.dtype.kind == "b":
        raise FormError("booleans")
    if array.dtype.kind == "c":
        raise FormError("complex numbers")
    if array.dtype.kind not in "iuf":
        raise FormError(_kind(answer))
    return array


def _single_number(answer, description):
    """``answer`` as a numeric array of one element, or :class:`FormError`."""
    try:
        array = _numeric_array(answer)
    except FormError as error:
        raise FormError(f"expected {description}, got {error}") from None
    if array.size != 1:
        raise FormError(f"expected {description}, got {_kind(answer)}")
    return array


@dataclass(frozen=True)
class Number:
    """The form of an answer that is one real number, in a plausible range.

    A float, an int, a NumPy scalar or an array with one element is read as
    the number; strings, booleans, complex and non-finite numbers are not.

    Parameters
    ----------
    low, high : float, optional
        The plausible range (from the exercise's statement, never from its
        answer), inclusive unless ``strict``.
    strict : bool, optional
        Exclude the bounds.
    description : str, optional
        How the form is described to the student (default: from the range).

    Examples
    --------
    >>> form = Number(low=0, strict=True)
    >>> form.description
    'a positive real number'
    >>> form.normalise(np.array([0.25]))
    0.25
    >>> try:
    ...     form.normalise("0.25")
    ... except FormError as error:
    ...     print(error)
    expected a positive real number, got a string
    """

    low: float | None = None
    high: float | None = None
    strict: bool = False
    description: str = ""

    def __post_init__(self):
        if not self.description:
            bounds = _bounds_text(self.low, self.high, self.strict)
            text = ("a " + bounds + " real number" if bounds and " " not in bounds
                    else "a real number" + (" " + bounds if bounds else ""))
            object.__setattr__(self, "description", text)

    def normalise(self, answer) -> float:
        """The answer as a finite ``float`` within the range, or :class:`FormError`."""
        array = _single_number(answer, self.description)
        value = float(array.reshape(()))
        if not math.isfinite(value):
            raise FormError(f"expected {self.description}, got a value that is not finite")
        if not _in_bounds(value, self.low, self.high, self.strict):
            raise FormError(f"expected {self.description}, got a number outside that range")
        return value

    def to_data(self, value):
        """The normalised value as JSON data."""
        return float(value)


@dataclass(frozen=True)
class Integer:
    """The form of an answer that is one whole number (``3`` or ``3.0``), in a range.

    Examples
    --------
    >>> form = Integer(low=1)
    >>> form.description, form.normalise(np.float64(12.0))
    ('a positive whole number', 12)
    >>> try:
    ...     form.normalise(2.5)
    ... except FormError as error:
    ...     print(error)
    expected a positive whole number, got a number that is not whole
    """

    low: int | None = None
    high: int | None = None
    description: str = ""

    def __post_init__(self):
        if not self.description:
            if self.low == 1 and self.high is None:
                text = "a positive whole number"
            elif self.low == 0 and self.high is None:
                text = "a non-negative whole number"
            else:
                bounds = _bounds_text(self.low, self.high, False)
                text = "a whole number" + (" " + bounds if bounds else "")
            object.__setattr__(self, "description", text)

    def normalise(self, answer) -> int:
        """The answer as an ``int`` within the range, or :class:`FormError`."""
        array = _single_number(answer, self.description)
        scalar = array.reshape(())[()]
        if array.dtype.kind in "iu":
            value = int(scalar)
        else:
            number = float(scalar)
            if not math.isfinite(number):
                raise FormError(f"expected {self.description}, got a value that is not "
                                "finite")
            if not number.is_integer():
                raise FormError(f"expected {self.description}, got a number that is not "
                                "whole")
            value = int(number)
        if (self.low is not None and value < self.low) or \
                (self.high is not None and value > self.high):
            raise FormError(f"expected {self.description}, got a number outside that range")
        return value

    def to_data(self, value):
        """The normalised value as JSON data."""
        return int(value)


def _shape_text(shape):
    return f"({shape[0]},)" if len(shape) == 1 else str(tuple(shape))


@dataclass(frozen=True)
class RealArray:
    """The form of an answer that is a real array of a given shape, finite, in a range.

    Lists (nested to the shape) and NumPy arrays of integers or floats are
    read as ``float64`` arrays.

    Examples
    --------
    >>> form = RealArray((2,), low=0, strict=True)
    >>> form.description
    'a real array of shape (2,), with positive entries'
    >>> form.normalise([1, 2.5])
    array([1. , 2.5])
    >>> try:
    ...     form.normalise([[1, 2]])
    ... except FormError as error:
    ...     print(error)
    expected a real array of shape (2,), with positive entries, got an array of
    shape (1, 2)
    """

    shape: tuple
    low: float | None = None
    high: float | None = None
    strict: bool = False
    description: str = ""

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(int(n) for n in self.shape))
        if not self.description:
            bounds = _bounds_text(self.low, self.high, self.strict)
            text = f"a real array of shape {_shape_text(self.shape)}"
            if bounds:
                text += (f", with {bounds} entries" if " " not in bounds
                         else f", with entries {bounds}")
            object.__setattr__(self, "description", text)

    def normalise(self, answer) -> np.ndarray:
        """The answer as a finite ``float64`` array of the shape, or :class:`FormError`."""
        try:
            array = _numeric_array(answer)
        except FormError as error:
            raise FormError(f"expected {self.description}, got {error}") from None
        if array.shape != self.shape:
            raise FormError(f"expected {self.description}, got {_kind(answer)}")
        array = array.astype(float)
        if not np.all(np.isfinite(array)):
            raise FormError(f"expected {self.description}, got entries that are not finite")
        if not _in_bounds(array, self.low, self.high, self.strict):
            raise FormError(f"expected {self.description}, got entries outside that range")
        return array

    def to_data(self, value):
        """The normalised value as JSON data (nested lists)."""
        return np.asarray(value, dtype=float).tolist()


@dataclass(frozen=True)
class BooleanArray:
    """The form of an answer that is an array of booleans of a given shape.

    Examples
    --------
    >>> form = BooleanArray((3,))
    >>> form.description, form.normalise([True, False, True]).tolist()
    ('an array of 3 booleans', [True, False, True])
    >>> try:
    ...     form.normalise([1, 0, 1])
    ... except FormError as error:
    ...     print(error)
    expected an array of 3 booleans, got numbers
    """

    shape: tuple
    description: str = ""

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(int(n) for n in self.shape))
        if not self.description:
            text = (f"an array of {self.shape[0]} booleans" if len(self.shape) == 1
                    else f"a boolean array of shape {_shape_text(self.shape)}")
            object.__setattr__(self, "description", text)

    def normalise(self, answer) -> np.ndarray:
        """The answer as a ``bool`` array of the shape, or :class:`FormError`."""
        if answer is None or isinstance(answer, str | bytes | dict):
            raise FormError(f"expected {self.description}, got {_kind(answer)}")
        try:
            array = np.asarray(answer)
        except Exception:
            raise FormError(f"expected {self.description}, got {_kind(answer)}") from None
        if array.dtype.kind != "b":
            what = "numbers" if array.dtype.kind in "iufc" else _kind(answer)
            raise FormError(f"expected {self.description}, got {what}")
        if array.shape != self.shape:
            raise FormError(f"expected {self.description}, got {_kind(answer)}")
        return array.astype(bool)

    def to_data(self, value):
        """The normalised value as JSON data (nested lists)."""
        return np.asarray(value, dtype=bool).tolist()


# ------------------------------------------------------------------- comparisons

def _scientific(x):
    """``1e-5`` for 0.00001, ``2.5e-3`` for 0.0025."""
    return np.format_float_scientific(x, trim="-", exp_digits=1)


@dataclass(frozen=True)
class Close:
    """Compare with the answer key: ``|answer - key| <= atol + rtol |key|``, entrywise.

    Choose the tolerance from the accuracy the statement asks for, so that
    every correctly rounded answer passes: six significant digits round with
    a relative error below ``5e-6``, so ``rtol=1e-5`` accepts all of them.

    Examples
    --------
    >>> close = Close(rtol=1e-5)
    >>> close(3.14159, math.pi), close(3.1415, math.pi)
    (True, False)
    >>> close.description
    'within a relative 1e-5'
    """

    rtol: float = 0.0
    atol: float = 0.0

    def __post_init__(self):
        if not (self.rtol >= 0 and self.atol >= 0 and self.rtol + self.atol > 0):
            raise ValueError("Close needs a positive rtol or atol")

    @property
    def description(self) -> str:
        """The tolerance in words."""
        parts = []
        if self.rtol:
            parts.append(f"a relative {_scientific(self.rtol)}")
        if self.atol:
            parts.append(f"an absolute {_scientific(self.atol)}")
        return "within " + " or ".join(parts) if len(parts) == 1 else \
            "within " + " plus ".join(parts)

    def __call__(self, value, expected) -> bool:
        value, expected = np.asarray(value, dtype=float), np.asarray(expected, dtype=float)
        if value.shape != expected.shape:
            return False
        return bool(np.all(np.abs(value - expected) <= self.atol + self.rtol * np.abs(expected)))


@dataclass(frozen=True)
class Exact:
    """Compare with the answer key exactly (whole numbers, booleans).

    Examples
    --------
    >>> Exact()(32, 32), Exact()([True, False], [True, True])
    (True, False)
    """

    @property
    def description(self) -> str:
        """The tolerance in words."""
        return "exactly"

    def __call__(self, value, expected) -> bool:
        value, expected = np.asarray(value), np.asarray(expected)
        return value.shape == expected.shape and bool(np.all(value == expected))


# ---------------------------------------------------------------------- registry

_NO_KEY = object()


@dataclass(frozen=True)
class ExerciseCheck:
    """A registered check: the exercise, its answer variable, and how it is judged.

    Attributes
    ----------
    label : str
        The exercise label, ``ex-<chapter>-<slug>``.
    answer_variable : str
        ``ex_<chapter>_<slug>_answer``.
    function : callable
        What a student runs (``checks.ex_<chapter>_<slug>``): answer to
        :class:`CheckResult`.
    form : Number, Integer, RealArray or BooleanArray
        The form every answer must have.
    compare : Close or Exact or None
        How an answer is compared with the answer key; ``None`` for a
        property check.
    property_check : callable or None
        For a property check: the normalised answer to ``(passed, reason)``.
    """

    label: str
    answer_variable: str
    function: Callable[[object], CheckResult]
    form: object = None
    compare: object = None
    property_check: Callable | None = None

    @property
    def needs_key(self) -> bool:
        """Whether the answer is compared with a value of the answer key."""
        return self.compare is not None

    def normalise(self, answer):
        """The answer in its normal form (raises :class:`FormError`)."""
        return self.form.normalise(answer)

    def grade(self, answer, expected=_NO_KEY):
        """``(passed, reason)`` for an answer, with the answer key's value if needed.

        Parameters
        ----------
        answer : object
            Data exported from a student's kernel (or any object).
        expected : object, optional
            The answer key's value for this exercise (JSON data); needed by a
            comparison check, ignored by a property check.

        Returns
        -------
        tuple of (bool, str)
            Right or wrong, and why; a wrong answer's reason gives no
            direction (it names the form or the tolerance, never the value).
        """
        if answer is None:
            return False, f"no answer yet: assign it to {self.answer_variable}"
        try:
            value = self.form.normalise(answer)
        except FormError as error:
            return False, str(error)
        except Exception as error:  # a malformed answer is a wrong answer
            return False, f"could not read the answer ({type(error).__name__})"
        if self.compare is None:
            try:
                passed, reason = self.property_check(value)
            except Exception as error:
                return False, f"could not check the answer ({type(error).__name__})"
            return bool(passed), str(reason)
        if expected is _NO_KEY:
            return False, "not graded: the answer key has no value for this exercise"
        try:
            expected = self.form.normalise(expected)
        except Exception:
            return False, ("not graded: the answer key's value is not "
                           f"{self.form.description}")
        tolerance = self.compare.description
        if self.compare(value, expected):
            return True, f"matches the answer key ({tolerance})"
        return False, f"does not match the answer key ({tolerance})"


#: Every registered check, by exercise label (filled when the package is imported).
REGISTRY: dict[str, ExerciseCheck] = {}


def function_name(label: str) -> str:
    """The name of the check function for an exercise label: ``ex-a-b`` -> ``ex_a_b``."""
    return label.replace("-", "_")


def exercise_check(label: str, *, form, compare=None, registry=None):
    """Register the check of the exercise ``label``: a form and a comparison or property.

    Parameters
    ----------
    label : str
        ``ex-<chapter>-<slug>``; the answer variable is
        ``ex_<chapter>_<slug>_answer`` and the check ``checks.ex_<chapter>_<slug>``.
    form : Number, Integer, RealArray or BooleanArray
        What every answer must look like (nothing about its value).
    compare : Close or Exact, optional
        For an answer compared with the answer key: the decorated function
        only documents what is asked (a docstring, no body) and is never
        called. Without ``compare`` the decorated function is a property
        check: it receives the normalised answer and returns
        ``(passed, reason)``.
    registry : dict, optional
        Where to register (default: :data:`REGISTRY`).

    Returns
    -------
    callable
        A decorator; the function it returns is what the student runs. It
        never raises: an answer that is ``None``, of the wrong form, or on which
        a property check fails with an exception gives a failed
        :class:`CheckResult`. For a comparison it returns ``passed=None``
        (``[form ok]``) for every answer of the right form, right or wrong.

    Raises
    ------
    ValueError
        If ``label`` does not look like ``ex-<chapter>-<slug>`` or is
        registered already.
    TypeError
        If ``form`` is not a form or ``compare`` not a comparison.

    Examples
    --------
    >>> registry = {}
    >>> @exercise_check("ex-demo-area", form=Number(low=0, strict=True),
    ...                 compare=Close(rtol=1e-5), registry=registry)
    ... def ex_demo_area():
    ...     '''The area of the unit disk, to six significant digits.'''
    >>> print(ex_demo_area(3.14159))
    [form ok] ex-demo-area: a positive real number; it is compared with the
        answer key (within a relative 1e-5) when graded
    >>> ex_demo_area(3.14159) == ex_demo_area(2.0)
    True
    >>> print(ex_demo_area(-1.0))
    [not yet] ex-demo-area: expected a positive real number, got a number outside
        that range
    """
    if not _LABEL.match(label):
        raise ValueError(f"label must look like 'ex-chapter-name', got {label!r}")
    if not hasattr(form, "normalise") or not hasattr(form, "description"):
        raise TypeError(f"form must be a form such as Number(...), got {form!r}")
    if compare is not None and not callable(compare):
        raise TypeError(f"compare must be Close(...) or Exact(), got {compare!r}")
    name = function_name(label)
    variable = f"{name}_answer"

    def decorate(check):
        entry_box = []

        def wrapped(answer):
            entry = entry_box[0]
            if compare is not None and answer is not None:
                try:
                    form.normalise(answer)
                except FormError as error:
                    return CheckResult(label, False, str(error))
                except Exception as error:
                    return CheckResult(label, False,
                                       f"could not read the answer ({type(error).__name__})")
                return CheckResult(label, None, f"{form.description}; it is compared with "
                                                f"the answer key ({compare.description}) "
                                                "when graded")
            passed, reason = entry.grade(answer)
            return CheckResult(label, passed, reason)

        wrapped.__name__ = wrapped.__qualname__ = name
        wrapped.__module__ = check.__module__
        wrapped.__doc__ = check.__doc__
        target = REGISTRY if registry is None else registry
        if label in target:
            raise ValueError(f"a check for {label!r} is already registered")
        entry = ExerciseCheck(label, variable, wrapped, form, compare,
                              None if compare is not None else check)
        entry_box.append(entry)
        target[label] = entry
        return wrapped

    return decorate

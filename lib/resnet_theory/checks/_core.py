"""The machinery behind :mod:`resnet_theory.checks` (private).

A check is a function of the student's answer that returns ``(passed, reason)``.
:func:`exercise_check` registers it under the exercise's label and wraps it so
that it never raises on a wrong answer: it returns a :class:`CheckResult`, which
prints as a verdict (wrapped at 79 characters, so that it fits a notebook's output
area). A verdict explains what is wrong (a shape, a sign,
a property that fails) without revealing the expected answer.
"""

from __future__ import annotations

import functools
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["CheckResult", "ExerciseCheck", "exercise_check", "REGISTRY"]

_LABEL = re.compile(r"^ex-[a-z0-9]+(-[a-z0-9]+)*$")


@dataclass(frozen=True)
class CheckResult:
    """The verdict on one answer: which exercise, whether it passed, and why.

    It prints as ``[correct] <label>: <reason>`` or ``[not yet] <label>: <reason>``,
    wrapped at :data:`WIDTH` characters with the continuation lines indented.

    Examples
    --------
    >>> print(CheckResult("ex-demo", True, "right"))
    [correct] ex-demo: right
    >>> print(CheckResult("ex-demo", False, "the factors must multiply to the "
    ...                   "target, and every factor must have the same singular values"))
    [not yet] ex-demo: the factors must multiply to the target, and every factor
        must have the same singular values
    """

    #: The longest line of a printed verdict.
    WIDTH = 79

    exercise: str
    passed: bool
    reason: str

    def __bool__(self) -> bool:
        return self.passed

    def __repr__(self) -> str:
        mark = "correct" if self.passed else "not yet"
        return textwrap.fill(
            f"[{mark}] {self.exercise}: {self.reason}",
            width=self.WIDTH,
            subsequent_indent="    ",
            break_long_words=False,
            break_on_hyphens=False,
        )

    __str__ = __repr__


@dataclass(frozen=True)
class ExerciseCheck:
    """A registered check: the exercise label, the answer variable and the test."""

    label: str
    answer_variable: str
    function: Callable[[object], CheckResult]


#: Every registered check, by exercise label (filled when the package is imported).
REGISTRY: dict[str, ExerciseCheck] = {}


def function_name(label: str) -> str:
    """The name of the check function for an exercise label: ``ex-a-b`` -> ``ex_a_b``."""
    return label.replace("-", "_")


def exercise_check(label: str):
    """Register ``check(answer) -> (passed, reason)`` for the exercise ``label``.

    The student stores the answer in the variable ``<function name>_answer``
    (for ``ex-dl-margin``: ``ex_dl_margin_answer``) and calls
    ``checks.ex_dl_margin(ex_dl_margin_answer)``. The wrapped function returns a
    :class:`CheckResult`; an answer that is still ``None``, or one on which the
    check itself fails with an exception, gives a failed result, not an error.
    """
    if not _LABEL.match(label):
        raise ValueError(f"label must look like 'ex-chapter-name', got {label!r}")
    name = function_name(label)

    def decorate(check):
        @functools.wraps(check)
        def wrapped(answer):
            if answer is None:
                return CheckResult(label, False, f"no answer yet: assign it to {name}_answer")
            try:
                passed, reason = check(answer)
            except Exception as error:  # a malformed answer is a wrong answer
                return CheckResult(label, False,
                                   f"could not check the answer ({type(error).__name__}: {error})")
            return CheckResult(label, bool(passed), str(reason))

        wrapped.__name__ = name
        wrapped.__qualname__ = name
        if label in REGISTRY:
            raise ValueError(f"a check for {label!r} is already registered")
        REGISTRY[label] = ExerciseCheck(label, f"{name}_answer", wrapped)
        return wrapped

    return decorate

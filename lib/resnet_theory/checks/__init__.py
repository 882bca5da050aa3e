"""Checks for the book's auto-graded exercises: the form of an answer, never its value.

Every auto-graded exercise names a variable for the answer and a check
function named after the exercise label (``ex-dl-margin`` ->
``ex_dl_margin``)::

    from resnet_theory import checks
    ex_dl_margin_answer = ...            # your answer
    checks.ex_dl_margin(ex_dl_margin_answer)

A check knows how an answer is judged, not what the answer is. It has a
**form** (:class:`Number`, :class:`Integer`, :class:`RealArray`,
:class:`BooleanArray`: type, shape, finiteness, a plausible range taken from
the statement) and either

- a **comparison** (:class:`Close`, :class:`Exact`) with the expected value,
  which is in the lecturer's answer key, computed from the book's solutions
  when grading (:func:`resnet_theory.homework.compute_answer_key`) and not in this
  package. Run in a notebook, such a check validates the form only and says
  so: ``[form ok] ex-...: a positive real number; it is compared with the
  answer key (within a relative 1e-5) when graded``. Its verdict is the same
  for the right answer and for every wrong answer of the right form, so it
  cannot be used to search for the answer;
- or a **property** that recognises every correct answer by itself (for a
  factorisation: the factors multiply to the target and have equal singular
  values). Such a check gives its full verdict, ``[correct]`` or
  ``[not yet]`` with the reason.

A check returns a :class:`CheckResult` and never raises on a wrong answer. The
grader (``make grade``) calls :meth:`ExerciseCheck.grade` in its own process on
the answers exported from the student's kernel as data (numbers, strings,
lists, numeric NumPy arrays) and on the answer key's value.

The checks of each chapter live in a private submodule of this package; all of
them are imported here and registered in :data:`REGISTRY`.
"""

from __future__ import annotations

import importlib
import pkgutil

from . import _core
from ._core import (
    REGISTRY,
    BooleanArray,
    CheckResult,
    Close,
    Exact,
    ExerciseCheck,
    FormError,
    Integer,
    Number,
    RealArray,
    exercise_check,
    function_name,
)

__all__ = ["REGISTRY", "CheckResult", "ExerciseCheck", "exercise_check", "check_namespace",
           "FormError", "Number", "Integer", "RealArray", "BooleanArray", "Close", "Exact"]

for _module in pkgutil.iter_modules(__path__):
    if _module.name != "_core":
        importlib.import_module(f"{__name__}.{_module.name}")


def _by_name():
    return {function_name(label): entry.function for label, entry in _core.REGISTRY.items()}


def __getattr__(name):
    try:
        return _by_name()[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no check {name!r}") from None


def __dir__():
    return sorted([*globals(), *_by_name()])


def check_namespace(namespace, labels=None):
    """Check the answers found in ``namespace`` (a notebook's globals).

    Parameters
    ----------
    namespace : mapping
        Variable names to values, for instance ``globals()`` of a kernel.
    labels : iterable of str, optional
        The exercises to check (default: every registered one).

    Returns
    -------
    dict
        Exercise label to :class:`CheckResult`; an exercise whose answer
        variable is missing gets a failed result.

    Notes
    -----
    This is for a student's own notebook, and like the checks it validates
    the form of a compared answer only. Grading does not call it in the
    student's kernel (which the student controls): the kernel exports the
    answer variables as data and the grader judges that data against the
    answer key (:func:`resnet_theory.homework.grade_notebook`).

    Examples
    --------
    >>> results = check_namespace({"ex_shamir_trap_depth_answer": "0.1"},
    ...                           ["ex-shamir-trap-depth"])
    >>> print(results["ex-shamir-trap-depth"])
    [not yet] ex-shamir-trap-depth: expected a positive real number, got a string
    """
    registry = _core.REGISTRY
    labels = sorted(registry) if labels is None else list(labels)
    results = {}
    for label in labels:
        if label not in registry:
            raise ValueError(f"labels: no check is registered for {label!r}")
        entry = registry[label]
        results[label] = entry.function(namespace.get(entry.answer_variable))
    return results

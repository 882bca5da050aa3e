"""The registered checks hold no answer, and running one reveals none.

Specification of the lecturer's side of the grader (the checks half): every
auto-graded exercise of the book has a check in :mod:`resnet_theory.checks`
with a form and either a comparison with the answer key or a property. The
expected values come from the answer key computed from the book's notebooks
(the ``book_answer_key`` fixture, as ``make grade`` computes it), never from
the library:

- no check module imports the library's mathematics or contains a number close
  to an expected value;
- what a student runs gives the same verdict for the key's value and for wrong
  answers of the same form (no oracle to search with);
- the grader, with the key, scores the key's value right and those wrong
  answers wrong.
"""

import ast
from pathlib import Path

import nbformat
import numpy as np
import pytest
from resnet_theory import checks, homework

ROOT = Path(__file__).resolve().parents[1]
CHECK_MODULES = sorted((ROOT / "lib" / "resnet_theory" / "checks").glob("*.py"))
COMPARED = sorted(label for label, entry in checks.REGISTRY.items() if entry.needs_key)
PROPERTIES = sorted(label for label, entry in checks.REGISTRY.items() if not entry.needs_key)
#: What a check module may import: the machinery, NumPy and the standard library's
#: basics. Nothing that computes the book's mathematics (the library's modules,
#: SciPy, SymPy), so a check cannot compute an answer.
ALLOWED_IMPORTS = {"__future__", "math", "numbers", "re", "textwrap", "collections.abc",
                   "dataclasses", "importlib", "pkgutil", "numpy", "_core", "."}


def _book_notebooks():
    return sorted(p for p in (ROOT / "book").rglob("*.ipynb")
                  if ".ipynb_checkpoints" not in p.parts)


def _numbers(value):
    return [float(v) for v in np.ravel(np.asarray(value, dtype=float))]


def _wrong_answers(entry, value):
    """Answers of the same form as ``value`` that the key must reject."""
    form = entry.form
    if isinstance(form, checks.BooleanArray):
        candidates = []
        for index in range(value.size):
            flipped = value.copy().ravel()
            flipped[index] = not flipped[index]
            candidates.append(flipped.reshape(value.shape))
    elif isinstance(form, checks.Integer):
        candidates = [value + 1, value - 1, value + 7, 2 * value]
    else:
        candidates = [value * 1.01, value * 0.99, value * 1.5, value * 0.5, value + 0.01,
                      value - 0.01, value + 1.0]
    wrong = []
    for candidate in candidates:
        try:
            entry.normalise(candidate)
        except checks.FormError:
            continue  # outside the plausible range: not of the same form
        if entry.compare(candidate, value):
            continue  # within the tolerance: not a wrong answer
        wrong.append(candidate)
    assert wrong, f"{entry.label}: no wrong answer of the right form was found"
    return wrong


# ------------------------------------------------------------- no answer in the library

@pytest.mark.parametrize("path", CHECK_MODULES, ids=[p.name for p in CHECK_MODULES])
def test_no_check_module_imports_anything_that_could_compute_an_answer(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = ["." * node.level + (node.module or "")]
            names = [name.lstrip(".") or "." for name in names]
        else:
            continue
        assert set(names) <= ALLOWED_IMPORTS, f"{path.name} imports {names}"


def test_no_check_module_contains_a_value_of_the_answer_key(book_answer_key):
    constants, texts = [], []
    for path in CHECK_MODULES:
        source = path.read_text()
        texts.append(source)
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and \
                    not isinstance(node.value, bool):
                constants.append((path.name, float(node.value)))
    for label, value in book_answer_key.answers.items():
        if isinstance(checks.REGISTRY[label].form, checks.BooleanArray):
            continue
        for number in _numbers(value):
            if number in (0.0, 1.0, -1.0):
                continue
            near = [(name, c) for name, c in constants
                    if abs(c - number) <= 1e-3 * abs(number)]
            assert not near, f"{label}: {number} is in {near}"
            if not float(number).is_integer():
                for digits in (4, 6):
                    shown = f"{number:.{digits}g}"
                    if len(shown.lstrip("-0.").replace(".", "")) < 4:
                        continue  # 0.1, 0.05: too short to be telling
                    assert not any(shown in text for text in texts), (label, shown)


# ---------------------------------------------------------------- the key and the book

def test_the_key_is_computed_from_the_book_for_every_compared_exercise(book_answer_key):
    stated = {}
    for path in _book_notebooks():
        for label in homework.auto_graded_labels(nbformat.read(path, as_version=4)):
            stated[label] = path
    assert set(COMPARED) <= set(book_answer_key.answers)
    for label in COMPARED:
        path = stated[label]
        entry = book_answer_key.notebooks[path.name.lower()]
        assert label in entry.answers
        assert entry.sha256 == homework.answer_key.notebook_sha256(path.read_bytes())


def test_every_value_of_the_key_has_its_exercise_s_form(book_answer_key):
    for label, value in book_answer_key.answers.items():
        checks.REGISTRY[label].normalise(value)


# ----------------------------------------------------------------------- no oracle

@pytest.mark.parametrize("label", COMPARED)
def test_a_student_s_check_gives_the_same_verdict_for_the_key_and_a_wrong_answer(
        label, book_answer_key):
    entry = checks.REGISTRY[label]
    right = entry.normalise(book_answer_key.answers[label])
    verdict = entry.function(right)
    assert verdict.passed is None and verdict.mark == "form ok"
    assert "compared with the answer key" in verdict.reason
    for wrong in _wrong_answers(entry, right):
        assert entry.function(wrong) == verdict


@pytest.mark.parametrize("label", COMPARED)
def test_the_grader_scores_the_key_right_and_a_wrong_answer_wrong(label, book_answer_key):
    entry = checks.REGISTRY[label]
    expected = book_answer_key.answers[label]
    right = entry.normalise(expected)
    assert entry.grade(right, expected)[0] is True
    for wrong in _wrong_answers(entry, right):
        passed, reason = entry.grade(wrong, expected)
        assert passed is False
        assert reason.startswith("does not match the answer key")
        assert "too" not in reason and "small" not in reason and "large" not in reason


@pytest.mark.parametrize("label", PROPERTIES)
def test_a_property_check_needs_no_key_and_rejects_a_wrong_answer(label):
    entry = checks.REGISTRY[label]
    assert entry.form is not None and entry.property_check is not None
    assert not entry.needs_key
    shape = getattr(entry.form, "shape", None)
    zeros = np.zeros(shape) if shape is not None else 0.0
    assert entry.function(zeros).passed is False

"""Verdicts cannot be forged: the kernel only exports data, the grader runs the checks.

Specification of :mod:`resnet_theory.homework.grading`. One folder of small
submissions to the Chapter 5 exercise is graded once (two at a time, in the
sandbox where ``bwrap`` works): an honest one in three numeric forms, a forging
one that patches the checks, prints a fake verdict and defines an answer with a
lying ``__eq__``, one that replaces ``json.dumps`` and ``print`` in its kernel,
and answers that are not data (an object equal to everything, an object
array) or are too large. A float subclass with a lying ``__eq__`` is exported
as the number it holds, so it is graded as that number.
"""

import io
import os

import nbformat
import numpy as np
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from resnet_theory import checks, homework
from resnet_theory.homework.answers import load_answer
from resnet_theory.homework.files import read_regular_file

KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}
EXERCISE = new_markdown_cell("```{exercise} Depth\n:label: ex-shamir-trap-depth\nCompute it.\n```")
LABEL = "ex-shamir-trap-depth"

DEPTH = ("from resnet_theory.landscape import critical_points\n"
         "pts = critical_points(eps=1.5, weight_decay=0.3)\n"
         "mins = sorted((p for p in pts if p.kind == 'minimum'), key=lambda p: p.value)\n"
         "(sad,) = [p for p in pts if p.kind == 'saddle']\n"
         "depth = sad.value - mins[-1].value")

FORGER = [
    # 1. Replace every check the kernel can reach with one that always says "correct".
    "from resnet_theory import checks\n"
    "from resnet_theory.checks import _core\n"
    "always = lambda answer: _core.CheckResult('ex-shamir-trap-depth', True, 'forged')\n"
    "checks.check_namespace = lambda namespace, labels=None: {l: always(None) for l in labels}\n"
    "for entry in list(_core.REGISTRY.values()):\n"
    "    _core.REGISTRY[entry.label] = _core.ExerciseCheck(entry.label, entry.answer_variable,"
    " always)\n"
    "checks.ex_shamir_trap_depth = always",
    # 2. Print what a passing verdict and a grader payload look like.
    "print('[correct] ex-shamir-trap-depth: forged')\n"
    "import json\n"
    "print(json.dumps({'status': 'ok', 'reason': '', 'results': {'ex-shamir-trap-depth': "
    "[True, 'forged']}, 'answers': {'ex_shamir_trap_depth_answer': 'json'}}))",
    # 3. An answer that equals everything.
    "class Liar(float):\n"
    "    def __eq__(self, other):\n"
    "        return True\n"
    "    __hash__ = float.__hash__\n"
    "    def __sub__(self, other):\n"
    "        return 0.0\n"
    "    def __float__(self):\n"
    "        return 0.0\n"
    "ex_shamir_trap_depth_answer = Liar(0.0)\n"
    "assert checks.ex_shamir_trap_depth(ex_shamir_trap_depth_answer).passed",
]

PATCHES_BUILTINS = [
    "import builtins, json\n"
    "fake = '{\"ex_shamir_trap_depth_answer\": \"json\"}'\n"
    "json.dumps = lambda *args, **kwargs: fake\n"
    "builtins.print = lambda *args, **kwargs: None\n"
    "ex_shamir_trap_depth_answer = 0.25",
]

SUBMISSIONS = {
    "honest_float.ipynb": [DEPTH, "ex_shamir_trap_depth_answer = depth"],
    "honest_numpy_scalar.ipynb": [DEPTH, "import numpy as np\n"
                                  "ex_shamir_trap_depth_answer = np.float64(depth)"],
    "honest_array.ipynb": [DEPTH, "import numpy as np\n"
                           "ex_shamir_trap_depth_answer = np.array([depth])"],
    "honest_fraction.ipynb": [DEPTH, "from fractions import Fraction\n"
                              "ex_shamir_trap_depth_answer = Fraction(depth)"],
    "forges.ipynb": FORGER,
    "patches_builtins.ipynb": PATCHES_BUILTINS,
    "object_answer.ipynb": ["class Answer:\n    def __eq__(self, other):\n        return True\n"
                            "ex_shamir_trap_depth_answer = Answer()"],
    "object_array.ipynb": ["import numpy as np\n"
                           "ex_shamir_trap_depth_answer = np.array([1.0, None])"],
    "too_large.ipynb": ["import numpy as np\n"
                        "ex_shamir_trap_depth_answer = np.zeros(300_000)"],
}


def _notebook(sources):
    return new_notebook(cells=[EXERCISE, *map(new_code_cell, sources)],
                        metadata={"kernelspec": KERNELSPEC})


@pytest.fixture(scope="module")
def graded(tmp_path_factory, book_answer_key):
    folder = tmp_path_factory.mktemp("forgery")
    for name, sources in SUBMISSIONS.items():
        nbformat.write(_notebook(sources), folder / name)
    grades = homework.grade_folder(folder, timeout=60, jobs=2, answer_key=book_answer_key)
    return {grade.notebook: grade for grade in grades}


@pytest.mark.parametrize("name", ["honest_float.ipynb", "honest_numpy_scalar.ipynb",
                                  "honest_array.ipynb", "honest_fraction.ipynb"])
def test_an_honest_answer_scores_full_marks_in_every_numeric_form(graded, name):
    assert graded[name].status == "ok", graded[name].reason
    assert graded[name].results[LABEL][0] is True
    assert graded[name].score == 1


def test_patched_checks_fake_verdicts_and_a_lying_answer_score_zero(graded):
    grade = graded["forges.ipynb"]
    assert grade.status == "ok", grade.reason  # its own assert passed: the kernel was fooled
    passed, reason = grade.results[LABEL]
    assert passed is False
    assert reason == checks.ex_shamir_trap_depth(0.0).reason  # the grader saw the number 0.0


def test_replaced_json_and_print_in_the_kernel_change_nothing(graded):
    passed, _ = graded["patches_builtins.ipynb"].results[LABEL]
    assert passed is False


@pytest.mark.parametrize(("name", "words"), [
    ("object_answer.ipynb", "not data"),
    ("object_array.ipynb", "not data"),
    ("too_large.ipynb", "larger than the limit"),
])
def test_an_answer_that_is_not_small_data_scores_zero_with_the_reason(graded, name, words):
    passed, reason = graded[name].results[LABEL]
    assert passed is False and words in reason


def test_rows_come_back_in_file_name_order_with_two_jobs(graded):
    assert list(graded) == sorted(SUBMISSIONS)


# ------------------------------------------------------------ reading exported answers

def _npy(value, **kwargs):
    buffer = io.BytesIO()
    np.save(buffer, value, **kwargs)
    return buffer.getvalue()


def test_load_answer_reads_json_and_numeric_npy():
    assert load_answer(b'{"a": [1, 2.5, null, "x"]}', "json") == {"a": [1, 2.5, None, "x"]}
    assert load_answer(_npy(np.eye(2)), "npy").tolist() == [[1.0, 0.0], [0.0, 1.0]]
    scalar = load_answer(_npy(np.int64(7)), "npy-scalar")
    assert isinstance(scalar, np.int64) and scalar == 7


def test_load_answer_never_unpickles():
    with pytest.raises(ValueError, match="numeric array"):
        load_answer(_npy(np.array([{"a": 1}], dtype=object), allow_pickle=True), "npy")


@pytest.mark.parametrize("data", [b"", b"\x93NUMPY garbage", b"[" * 100_000])
def test_load_answer_rejects_malformed_bytes(data):
    with pytest.raises(ValueError):
        load_answer(data, "npy" if data.startswith(b"\x93") else "json")


def test_exported_answers_are_read_without_following_links(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("[1]")
    (tmp_path / "answer.json").symlink_to(secret)
    folder_fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(OSError):
            read_regular_file(folder_fd, "answer.json", 100)
        with pytest.raises(ValueError, match="limit"):
            read_regular_file(folder_fd, "secret.txt", 2)
    finally:
        os.close(folder_fd)

"""One student, one submission per notebook, one file of feedback (issue 38, attacks C, D and H).

D: a student who hands in one notebook three times (two copies in their folder,
one at the top level) gets none of them graded, whichever is right, and the
grade book says so: copies are not guesses. C: two students whose names are
the same after normalisation (``Alice/`` and ``alice/``) are refused with both
file names instead of one taking the other's marks. A student's folder without
a notebook is in the grade book with 0 notebooks; an unreadable notebook is not
"handed in". H: feedback file names are unique (``alice bob`` does not take
``alice_bob``'s file) and ``feedback/index.csv`` says whose each file is. No
kernel runs here: copies and collisions are refused before anything runs.
"""

import csv
import hashlib

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from resnet_theory import homework
from resnet_theory.homework.submissions import identity_key

KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}
AUTO = new_markdown_cell("```{exercise} Depth\n:label: ex-shamir-trap-depth\nCompute it.\n```")
KEY = homework.AnswerKey.of({"ex-shamir-trap-depth": 0.25})


def _rows(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def _notebook(answer):
    return new_notebook(cells=[AUTO, new_code_cell(f"ex_shamir_trap_depth_answer = {answer}")],
                        metadata={"kernelspec": KERNELSPEC})


def _write(path, answer):
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(_notebook(answer), path)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("identity")
    assignment = tmp_path / "assignment" / "example.ipynb"
    _write(assignment, "0.25")
    folder = tmp_path / "submissions"
    _write(folder / "twice" / "example.ipynb", "0.25")  # right
    _write(folder / "twice" / "v2" / "example.ipynb", "0.3")
    _write(folder / "twice_example.ipynb", "0.4")
    _write(folder / "Alice" / "example.ipynb", "0.25")
    _write(folder / "alice" / "example.ipynb", "0.3")
    (folder / "carol").mkdir()
    (folder / "carol" / "notes.txt").write_text("I forgot the notebook\n")
    (folder / "dave").mkdir()
    (folder / "dave" / "example.ipynb").write_text("{ not json")
    for name in ("alice bob", "alice_bob"):
        (folder / name).mkdir()
        (folder / name / "example.ipynb").write_text("{ not json")
    grades = homework.grade_folder(folder, assignment=assignment, sandbox="off", cgroups="off",
                                   answer_key=KEY)
    return folder, {g.notebook: g for g in grades}


def test_copies_of_one_notebook_are_reported_and_none_is_graded(graded):
    folder, grades = graded
    copies = ["twice/example.ipynb", "twice/v2/example.ipynb", "twice_example.ipynb"]
    for path in copies:
        grade = grades[path]
        assert (grade.status, grade.score, grade.sandbox) == ("duplicate", 0, ""), path
        assert "handed in 3 times by twice" in grade.reason and "none is graded" in grade.reason
    rows = {row[0]: row for row in _rows(folder / "grades.csv")}
    assert [rows[path][4] for path in copies] == ["0", "0", "0"]
    book = {row[0]: dict(zip(_rows(folder / "gradebook.csv")[0], row, strict=False))
            for row in _rows(folder / "gradebook.csv")[1:]}
    assert (book["twice"]["notebooks"], book["twice"]["auto"]) == ("0", "0")
    assert "example.ipynb: handed in 3 times (" in book["twice"]["problems"]
    assert "none graded" in book["twice"]["problems"]


def test_names_that_collide_after_normalisation_are_refused_with_both_files(graded):
    folder, grades = graded
    for path in ("Alice/example.ipynb", "alice/example.ipynb"):
        grade = grades[path]
        assert grade.status == "invalid" and grade.score == 0
        assert "'Alice' (Alice/example.ipynb)" in grade.reason
        assert "'alice' (alice/example.ipynb)" in grade.reason
    assert identity_key("Jose\\u0301") == identity_key("Jos\u00e9") == identity_key(" JOSÉ")


def test_an_empty_folder_is_in_the_grade_book_and_an_unreadable_notebook_is_not_handed_in(
        graded):
    folder, grades = graded
    assert grades["carol/"].status == "skipped" and "no notebook" in grades["carol/"].reason
    book = {row[0]: dict(zip(_rows(folder / "gradebook.csv")[0], row, strict=False))
            for row in _rows(folder / "gradebook.csv")[1:]}
    assert book["carol"]["notebooks"] == "0"
    assert "example.ipynb: not handed in" in book["carol"]["problems"]
    assert book["dave"]["notebooks"] == "0"
    assert "example.ipynb: not handed in" in book["dave"]["problems"]


def test_feedback_file_names_are_unique_and_indexed(graded):
    folder, _ = graded
    index = dict(_rows(folder / "feedback" / "index.csv")[1:])
    hashed = "alice_bob-" + hashlib.sha256(b"alice bob").hexdigest()[:8] + ".txt"
    assert index["alice_bob"] == "alice_bob.txt" and index["alice bob"] == hashed
    assert "Feedback on alice_bob/example.ipynb" in \
        (folder / "feedback" / "alice_bob.txt").read_text()
    assert "Feedback on alice bob/example.ipynb" in (folder / "feedback" / hashed).read_text()
    assert sorted(index.values()) == sorted(p.name for p in (folder / "feedback").iterdir()
                                            if p.name != "index.csv")

"""The exercises that count come from the assignment, never from the submission.

Specification of issue 23, item 1, and of the grade book (item 6). An assignment
notebook states one auto-graded exercise (the Chapter 5 trap depth), with its
solution (from which the grader computes the answer key), and one written
exercise. Four students hand in, one folder each: alice answers right;
mallory adds a correct answer to an exercise of another chapter
(``ex_dr_eps_budget_answer``), which must not add a column or a point; eve
deletes the exercise cells, which must score 0 with "exercise removed" instead of
``0/0``; oscar hands in a notebook that is not part of the assignment. The folder
is graded once with the command line (real kernels, in the sandbox where
``bwrap`` works), which also writes the grade book, the written-answer pages and
the manual-marks sheet; the merge of manual marks is checked on that output.
"""

import csv
import math
import os
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from resnet_theory import checks, homework

KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}
AUTO = new_markdown_cell("```{exercise} Depth\n:label: ex-shamir-trap-depth\nCompute it.\n```")
WRITTEN = new_markdown_cell("```{exercise} Why\n:label: ex-demo-why\nExplain it.\n```")
OTHER = new_markdown_cell("```{exercise} Budget\n:label: ex-dr-eps-budget\nCompute it.\n```")
DEPTH = ("from resnet_theory.landscape import critical_points\n"
         "pts = critical_points(eps=1.5, weight_decay=0.3)\n"
         "mins = sorted((p for p in pts if p.kind == 'minimum'), key=lambda p: p.value)\n"
         "(sad,) = [p for p in pts if p.kind == 'saddle']\n"
         "ex_shamir_trap_depth_answer = sad.value - mins[-1].value")
INFLATE = "import math\nex_dr_eps_budget_answer = math.tanh(math.log(10) / 100)"


def _notebook(*cells):
    return new_notebook(cells=list(cells), metadata={"kernelspec": KERNELSPEC})


def _rows(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("assignment")
    assignment, folder = base / "assignment", base / "submissions"
    assignment.mkdir()
    nbformat.write(_notebook(AUTO, new_code_cell("ex_shamir_trap_depth_answer = None"),
                             new_code_cell(DEPTH), WRITTEN), assignment / "example.ipynb")
    stored = nbformat.v4.new_output("stream", text="STORED-BY-THE-STUDENT\n")
    students = {
        "alice": [AUTO, new_code_cell(DEPTH), WRITTEN,
                  new_markdown_cell("Because the saddle is <b>higher</b> than the minimum."),
                  new_code_cell("print('RUN-' + 'OUTPUT')", outputs=[stored])],
        "mallory": [AUTO, new_code_cell("ex_shamir_trap_depth_answer = 0.5"), OTHER,
                    new_code_cell(INFLATE), WRITTEN, new_code_cell("raise RuntimeError('stop')")],
        "rex": [AUTO, WRITTEN, new_code_cell("import os\nos._exit(0)"),
                new_code_cell("print('never')", outputs=[stored])],
        "eve": [new_code_cell("x = 1")],
    }
    for student, cells in students.items():
        (folder / student).mkdir(parents=True)
        nbformat.write(_notebook(*cells), folder / student / "example.ipynb")
    (folder / "oscar").mkdir()
    nbformat.write(_notebook(new_code_cell("x = 1")), folder / "oscar" / "other.ipynb")
    status = homework.main(["grade", str(folder), "--assignment", str(assignment),
                            "--timeout", "60", "--jobs", "2", "--allow-root"])
    return folder, status


def test_the_inflating_answer_would_be_right(book_answer_key):
    entry = checks.REGISTRY["ex-dr-eps-budget"]
    key = book_answer_key.answers["ex-dr-eps-budget"]
    assert entry.grade(math.tanh(math.log(10) / 100), key)[0] is True


def test_grading_finishes(graded):
    _, status = graded
    assert status == 0


def test_an_extra_answer_variable_adds_no_column_and_no_point(graded):
    folder, _ = graded
    rows = {row[0]: row for row in _rows(folder / "grades.csv")}
    assert rows["notebook"] == ["notebook", "status", "reason", "score",
                                "ex-shamir-trap-depth"]
    assert rows["alice/example.ipynb"][1:] == ["ok", "", "1/1", "1"]
    assert rows["mallory/example.ipynb"][1:] == ["error", "cell 5 raised RuntimeError: stop",
                                                 "0/1", "0"]


def test_a_removed_exercise_scores_zero_with_the_reason(graded):
    folder, _ = graded
    rows = {row[0]: row for row in _rows(folder / "grades.csv")}
    assert rows["eve/example.ipynb"][3:] == ["0/1", "0"]
    feedback = (folder / "feedback" / "eve.txt").read_text()
    assert "- ex-shamir-trap-depth: not yet: exercise removed" in feedback


def test_graded_feedback_gives_no_direction(graded):
    folder, _ = graded
    mallory = (folder / "feedback" / "mallory.txt").read_text()
    assert "- ex-shamir-trap-depth: not yet: " + homework.reports.WITHHELD in mallory
    assert "too" not in mallory.lower()
    assert "- ex-shamir-trap-depth: correct:" in (folder / "feedback" / "alice.txt").read_text()


def test_a_notebook_outside_the_assignment_is_invalid(graded):
    folder, _ = graded
    rows = {row[0]: row for row in _rows(folder / "grades.csv")}
    assert rows["oscar/other.ipynb"][1] == "invalid"
    assert "not a notebook of the assignment" in rows["oscar/other.ipynb"][2]


def test_the_gradebook_has_one_row_per_student_with_totals(graded):
    folder, _ = graded
    rows = _rows(folder / "gradebook.csv")
    header = rows[0]
    assert header[:7] == ["student", "notebooks", "auto", "auto_out_of", "manual", "total",
                          "problems"]
    assert header[7:] == ["ex-shamir-trap-depth", "ex-demo-why"]
    book = {row[0]: dict(zip(header, row, strict=False)) for row in rows[1:]}
    assert set(book) == {"alice", "mallory", "eve", "oscar", "rex"}
    assert (book["alice"]["auto"], book["alice"]["auto_out_of"], book["alice"]["total"]) == \
        ("1", "1", "1")
    assert book["mallory"]["auto"] == "0"
    assert "not handed in" in book["oscar"]["problems"]


def test_written_answers_are_collected_as_text_for_marking(graded):
    folder, _ = graded
    page = (folder / "written-answers" / "ex-demo-why.html").read_text()
    assert "&lt;b&gt;higher&lt;/b&gt;" in page and "<b>higher" not in page
    assert "Content-Security-Policy" in page
    assert page.index(">alice<") < page.index(">eve<") < page.index(">mallory<")
    assert not (folder / "written-answers" / "ex-shamir-trap-depth.html").exists()
    sheet = _rows(folder / "manual-marks.csv")
    assert sheet[:2] == [["student", "ex-demo-why"], ["/maximum", "1"]]
    assert [row[0] for row in sheet[2:]] == ["alice", "eve", "mallory", "oscar", "rex",
                                             "/signature"]


def test_written_answers_show_the_outputs_of_the_graded_run(graded):
    # Issue 38, H: what a student stored as output is not shown; what the run printed is,
    # and a cell the run did not reach says so.
    folder, _ = graded
    page = (folder / "written-answers" / "ex-demo-why.html").read_text()
    assert "STORED-BY-THE-STUDENT" not in page
    alice = page[page.index(">alice<"):page.index(">eve<")]
    assert '<pre class="out">RUN-OUTPUT\n</pre>' in alice
    assert "RuntimeError: stop" in page[page.index(">mallory<"):page.index(">oscar<")]
    rex = page[page.index(">rex<"):]
    assert "print(&#x27;never&#x27;)</pre><p class=\"empty\">(not run" in rex


def test_manual_marks_merge_into_the_gradebook(graded, tmp_path):
    folder, _ = graded
    marks = tmp_path / "marks.csv"
    marks.write_text("student,ex-demo-why\n/maximum,2\nalice,2\nmallory,0.5\neve,\n")
    assert homework.main(["merge-marks", str(folder), "--marks", str(marks)]) == 0
    rows = _rows(folder / "gradebook.csv")
    book = {row[0]: dict(zip(rows[0], row, strict=False)) for row in rows[1:]}
    assert (book["alice"]["ex-demo-why"], book["alice"]["manual"], book["alice"]["total"]) \
        == ("2", "2", "3")
    assert (book["mallory"]["manual"], book["mallory"]["total"]) == ("0.5", "0.5")
    assert book["eve"]["ex-demo-why"] == "" and book["eve"]["total"] == "0"
    marks.write_text("student,ex-demo-why\nalice,lots\n")
    assert homework.main(["merge-marks", str(folder), "--marks", str(marks)]) == 2
    marks.write_text("student,ex-demo-why\nalice,2\n")  # more than the maximum, 1
    assert homework.main(["merge-marks", str(folder), "--marks", str(marks)]) == 2


def test_labels_come_from_the_book_by_default_on_the_command_line(tmp_path):
    """``make grade`` passes no --assignment: the book's notebook of that name counts."""
    book = homework.assignment.default_assignment()
    if book is None:
        pytest.skip("the book folder is not next to the library")
    assignment = homework.load_assignment(book)
    assert assignment.notebooks["example_one.ipynb"][1] == ["ex-shamir-trap-depth"]
    (tmp_path / "alice_example_one.ipynb").write_text("{ not json")
    assert homework.main(["grade", str(tmp_path), "--no-sandbox"]) == 0
    rows = _rows(tmp_path / "grades.csv")
    assert rows[0][4:] == ["ex-shamir-trap-depth"]
    assert rows[1][:2] == ["alice_example_one.ipynb", "invalid"] and rows[1][4] == "0"


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="only a root grader changes the user")
def test_as_root_a_submission_runs_as_an_unprivileged_user(tmp_path):
    # Issue 38, G: make grade as root (the usual container) grades, and the student's
    # code runs as a user of its own, not as root, with or without bubblewrap.
    code = ("import os\n"
            "ids = [os.getuid(), os.geteuid(), os.getgid(), os.getegid(), *os.getgroups()]\n"
            "assert 0 not in ids, ids")
    nbformat.write(_notebook(new_code_cell(code)), tmp_path / "a.ipynb")
    for flag in ("--no-sandbox", "--require-sandbox"):
        if flag == "--require-sandbox" and homework.find_bwrap()[0] is None:
            continue
        assert homework.main(["grade", str(tmp_path), "--assignment",
                              str(tmp_path / "a.ipynb"), flag, "--timeout", "60"]) == 0
        assert _rows(tmp_path / "grades.csv")[1][:3] == ["a.ipynb", "ok", ""], flag


def test_an_unknown_assignment_path_is_an_error(tmp_path):
    assert homework.main(["grade", str(tmp_path), "--assignment",
                          str(tmp_path / "missing")]) == 2
    with pytest.raises(ValueError, match="assignment"):
        homework.load_assignment(Path(tmp_path))

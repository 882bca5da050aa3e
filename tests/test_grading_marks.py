"""Marks and grade book that cannot be planted or broken (issue 38, attacks B, C, E and F).

An assignment with one auto-graded and one written exercise, and a class whose
notebooks are not readable (so no kernel runs here: what is tested is what the
grader writes and believes). B: a ``manual-marks.csv`` planted among the
submissions (unsigned, or with a made-up signature) gives nobody a mark; it is
moved aside with a warning. The sheet the grader writes is signed, and the
marks the lecturer types into it are believed. F: every bad mark (``nan``,
``inf``, ``1e308``, negative, above the maximum, a second row, an unknown
student or exercise, an auto-graded column, a cell outside the columns) is
refused with its line, and nothing is written. E: a folder planted where a
feedback file or a marking page goes, or a link inside ``feedback/``, does not
stop the batch; a bad mark in the signed sheet stops it before anything is
graded. C: ``'alice`` and ``alice`` stay two students through the sheet and
``merge-marks``. The grade book is rebuilt from the signed
``grading-state.json``: a forged one is not believed.
"""

import csv
import json
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from resnet_theory import homework
from resnet_theory.homework import marks as marks_module

KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}
AUTO = new_markdown_cell("```{exercise} Depth\n:label: ex-shamir-trap-depth\nCompute it.\n```")
WRITTEN = new_markdown_cell("```{exercise} Why\n:label: ex-demo-why\nExplain it.\n```")
KEY = homework.AnswerKey.of({"ex-shamir-trap-depth": 0.25})


def _rows(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def _book(folder):
    rows = _rows(folder / "gradebook.csv")
    return {row[0]: dict(zip(rows[0], row, strict=False)) for row in rows[1:]}


@pytest.fixture(scope="module")
def assignment(tmp_path_factory):
    path = tmp_path_factory.mktemp("marks-assignment") / "example.ipynb"
    nbformat.write(new_notebook(cells=[AUTO, new_code_cell("ex_shamir_trap_depth_answer = 0.25"),
                                       WRITTEN], metadata={"kernelspec": KERNELSPEC}), path)
    return path


@pytest.fixture
def secret_home(monkeypatch, tmp_path):
    """A signing secret of this test's own."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def _class(folder, students=("alice", "bob")):
    for student in students:
        (folder / student).mkdir(parents=True)
        (folder / student / "example.ipynb").write_text("{ not json")
    return folder


def _grade(folder, assignment, **options):
    return homework.grade_folder(folder, assignment=assignment, sandbox="off", cgroups="off",
                                 answer_key=KEY, **options)


def _fill(sheet, marks, maximum=None):
    """Fill the lecturer's marks into the signed sheet, keeping its signature row."""
    rows = _rows(sheet)
    for row in rows:
        if row[0] in marks:
            row[1] = marks[row[0]]
        if row[0] == "/maximum" and maximum is not None:
            row[1] = maximum
    with open(sheet, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows(rows)


@pytest.mark.parametrize("signature", [None, "0" * 64])
def test_a_planted_marks_sheet_gives_no_mark_and_is_moved_aside(tmp_path, assignment,
                                                                 secret_home, capsys,
                                                                 signature):
    folder = _class(tmp_path / "submissions")
    planted = "student,ex-demo-why\nalice,10\nbob,10\n"
    if signature:
        planted += f"/signature,{signature}\n"
    (folder / "manual-marks.csv").write_text(planted)
    _grade(folder, assignment, echo=True)
    assert "carries no signature of this grader" in capsys.readouterr().err
    (aside,) = folder.glob("manual-marks.unsigned-*.csv")
    assert aside.read_text() == planted
    book = _book(folder)
    assert (book["alice"]["manual"], book["alice"]["total"], book["alice"]["ex-demo-why"]) == \
        ("0", "0", "")
    sheet = _rows(folder / "manual-marks.csv")
    assert [row[0] for row in sheet] == ["student", "/maximum", "alice", "bob", "/signature"]
    assert all(row[1] == "" for row in sheet[2:4])
    # merge-marks believes only a signed sheet, and an unsigned one is moved aside again
    (folder / "manual-marks.csv").write_text(planted)
    assert homework.main(["merge-marks", str(folder)]) == 2
    assert _book(folder)["alice"]["manual"] == "0"


def test_the_lecturer_s_marks_in_the_signed_sheet_are_believed_and_kept(tmp_path, assignment,
                                                                        secret_home):
    folder = _class(tmp_path / "submissions")
    _grade(folder, assignment)
    _fill(folder / "manual-marks.csv", {"alice": "7.5", "bob": "0"}, maximum="10")
    assert homework.main(["merge-marks", str(folder)]) == 0
    book = _book(folder)
    assert (book["alice"]["ex-demo-why"], book["alice"]["manual"], book["alice"]["total"]) == \
        ("7.5", "7.5", "7.5")
    assert book["bob"]["ex-demo-why"] == "0"
    _grade(folder, assignment)  # a later grading keeps the marks and the maximum
    assert _book(folder)["alice"]["total"] == "7.5"
    assert _rows(folder / "manual-marks.csv")[1] == ["/maximum", "10"]


@pytest.mark.parametrize(("sheet", "line", "words"), [
    ("student,ex-demo-why\nalice,nan\n", 2, "'nan' for ex-demo-why is not a number"),
    ("student,ex-demo-why\nalice,inf\n", 2, "not a number"),
    ("student,ex-demo-why\n/maximum,10\nalice,1e308\n", 3, "more than the exercise's maximum"),
    ("student,ex-demo-why\nalice,-1\n", 2, "negative"),
    ("student,ex-demo-why\nalice,1\nalice,0\n", 3, "alice has a second row"),
    ("student,ex-demo-why\nmallory,1\n", 2, "mallory is not a student of this class"),
    ("student,ex-demo-why\nalice,1,10\n", 2, "a cell outside the labelled columns"),
    ("student,ex-demo-why,ex-demo-bonus\nalice,1,1\n", 1, "ex-demo-bonus is not an exercise"),
    ("student,ex-shamir-trap-depth\nalice,1\n", 1, "is auto-graded"),
    ("student,ex-demo-why\n/maximum,inf\nalice,1\n", 2, "the maximum 'inf'"),
])
def test_a_bad_mark_is_refused_with_its_line_and_nothing_is_written(tmp_path, assignment,
                                                                    secret_home, capsys,
                                                                    sheet, line, words):
    folder = _class(tmp_path / "submissions")
    _grade(folder, assignment)
    before = (folder / "gradebook.csv").read_bytes()
    marks = tmp_path / "marks.csv"
    marks.write_text(sheet)
    assert homework.main(["merge-marks", str(folder), "--marks", str(marks)]) == 2
    error = capsys.readouterr().err
    assert f"marks.csv, line {line}: " in error and words in error, error
    assert (folder / "gradebook.csv").read_bytes() == before


def test_a_bad_mark_in_the_signed_sheet_stops_grading_before_it_starts(tmp_path, assignment,
                                                                       secret_home):
    folder = _class(tmp_path / "submissions")
    _grade(folder, assignment)
    _fill(folder / "manual-marks.csv", {"alice": "lots"})
    (folder / "grades.csv").unlink()
    with pytest.raises(ValueError, match="line 3: the mark 'lots'"):
        _grade(folder, assignment)
    assert not (folder / "grades.csv").exists()  # nothing was graded, nothing lost


def test_planted_folders_in_the_results_do_not_stop_the_batch(tmp_path, assignment,
                                                              secret_home, capsys):
    folder = _class(tmp_path / "submissions")
    victim = tmp_path / "victim.txt"
    victim.write_text("unchanged\n")
    (folder / "feedback" / "alice.txt").mkdir(parents=True)
    (folder / "feedback" / "index.csv").symlink_to(victim)
    (folder / "written-answers" / "ex-demo-why.html").mkdir(parents=True)
    grades = _grade(folder, assignment, echo=True)
    assert {g.student for g in grades} == {"alice", "bob"}
    assert "holds entries the grader does not write" in capsys.readouterr().err
    assert (folder / "feedback" / "alice.txt").is_file()
    assert not (folder / "feedback" / "index.csv").is_symlink()
    assert (folder / "written-answers" / "ex-demo-why.html").is_file()
    assert victim.read_text() == "unchanged\n"
    assert (folder / "gradebook.csv").is_file()
    assert not [p for p in folder.iterdir() if p.name.startswith(".")]  # no leftovers


def test_names_with_a_quote_stay_two_students_through_merge_marks(tmp_path, assignment,
                                                                   secret_home):
    folder = tmp_path / "submissions"
    _class(folder, ["alice"])
    (folder / "'alice_example.ipynb").write_text("{ not json")
    (folder / " =1+1_example.ipynb").write_text("{ not json")
    _grade(folder, assignment)
    assert [row[0] for row in _rows(folder / "gradebook.csv")[1:]] == ["' =1+1", "''alice",
                                                                       "alice"]
    _fill(folder / "manual-marks.csv", {"alice": "1", "''alice": "0"})
    assert homework.main(["merge-marks", str(folder)]) == 0
    book = _book(folder)
    assert (book["alice"]["manual"], book["''alice"]["manual"], book["' =1+1"]["manual"]) == \
        ("1", "0", "0")


def test_a_forged_grading_state_is_not_believed(tmp_path, assignment, secret_home):
    folder = _class(tmp_path / "submissions")
    _grade(folder, assignment)
    state = json.loads((folder / "grading-state.json").read_text())
    state["grades"][0]["results"]["ex-shamir-trap-depth"] = [True, "forged"]
    (folder / "grading-state.json").write_text(json.dumps(state))
    assert homework.main(["merge-marks", str(folder)]) == 2
    (folder / "grading-state.json").unlink()
    with pytest.raises(ValueError, match="grade the folder first"):
        homework.merge_marks(folder)


def test_marks_are_checked_without_a_class():
    parsed = marks_module.parse_marks("student,ex-a\n/maximum,2\n'=x,1.5\n,\n", "m.csv")
    assert parsed.marks == {"=x": {"ex-a": 1.5}} and parsed.maximum == {"ex-a": 2.0}
    with pytest.raises(ValueError, match="first column must be 'student'"):
        marks_module.parse_marks("name,ex-a\n", "m.csv")
    with pytest.raises(ValueError, match="/oops"):
        marks_module.parse_marks("student,ex-a\n/oops,1\n", "m.csv")


def test_the_results_folder_lists_what_the_grader_wrote(tmp_path, assignment, secret_home):
    folder = _class(tmp_path / "submissions")
    _grade(folder, assignment)
    assert sorted(p.name for p in Path(folder).iterdir()) == [
        "alice", "bob", "feedback", "gradebook.csv", "grades.csv", "grading-state.json",
        "manual-marks.csv", "written-answers"]

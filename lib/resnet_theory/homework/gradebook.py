"""The grade book: rows per notebook and per student, the marks given by hand, and shards.

After a batch the grader writes, into its output folder: ``grades.csv`` (one
row per notebook), ``gradebook.csv`` (one row per student, every student of the
folder, also one whose folder holds no notebook), the feedback files and the
pages of written answers (:mod:`resnet_theory.homework.reports`), the signed
sheet of manual marks (:mod:`resnet_theory.homework.marks`) and
``grading-state.json``: every grade, signed with this user's secret
(:mod:`resnet_theory.homework.signing`). The grade book is always rebuilt from
that state, never read back from ``gradebook.csv``: :func:`merge_marks` adds
the marks to it without grading again, and :func:`merge` combines the states of
the shards of one class (``grade --shard K/N``) into the results of one whole
run, refusing shards that overlap or leave a gap.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from . import signing
from .assignment import Assignment
from .files import csv_text, open_output_folder, read_file, replace_folder, write_atomic
from .marks import Marks, number, read_marks, take_signed_marks, write_marks_sheet
from .reports import feedback_files, written_pages
from .submissions import shard_of

__all__ = ["NotebookGrade", "STATUS_ORDER", "NOT_HANDED_IN", "grades_rows", "gradebook_rows",
           "write_grades", "write_gradebook", "write_results", "write_written_answers",
           "read_state", "merge_marks", "merge", "STATE_FILE", "grade_labels",
           "written_labels"]

#: Every status of a row, in the order the summary lists them.
STATUS_ORDER = ("ok", "error", "output-limit", "timeout", "kernel-died", "invalid",
                "duplicate", "skipped", "grader-error")
#: Statuses of a notebook that does not count as handed in.
NOT_HANDED_IN = ("skipped", "invalid", "duplicate")
#: The signed record of a batch, which the grade book is rebuilt from.
STATE_FILE = "grading-state.json"
_STATE_FORMAT = "resnet_theory grading state"
_MAX_STATE_BYTES = 500_000_000


@dataclass(frozen=True)
class NotebookGrade:
    """The grade of one submitted notebook.

    Attributes
    ----------
    notebook : str
        Its path in the submissions folder (``alice/example_one.ipynb`` or
        ``alice.ipynb``), escaped where it is not printable UTF-8 in NFC form.
    status : str
        ``"ok"`` (ran without errors), ``"error"`` (a cell raised, including
        ``sys.exit``), ``"output-limit"`` (sent more output or messages than allowed),
        ``"timeout"`` (exceeded the time limit), ``"kernel-died"`` (the kernel
        exited, e.g. ``os._exit``, or ran out of memory), ``"invalid"`` (not a
        readable notebook, not a notebook of the assignment, or a student name
        that collides with another), ``"duplicate"`` (one of several copies of a
        notebook handed in by one student: none is graded), ``"skipped"`` (not
        read: a symbolic link, FIFO, device, directory or oversized file, or a
        student's folder without a notebook) or ``"grader-error"`` (no result
        came back).
    reason : str
        What happened, in one line written by the grader (empty when the status
        is ``"ok"``).
    results : dict
        Label of each auto-graded exercise of the notebook to ``(passed, reason)``.
    sandbox : str
        ``"bubblewrap"`` or ``"none"`` (how the notebook was isolated; empty if
        it did not run).
    student : str
        Whose notebook it is (the student's folder, or the part of the file
        name before the assignment's notebook name; else the file name's stem).
    assignment : str
        The assignment notebook it was graded against (empty: none).
    seconds : float
        Wall-clock seconds its run took.
    checked : tuple of str
        The labels whose reason is the check's own explanation (which
        ``feedback="verdict"`` withholds).
    written : dict
        Label of each exercise marked by hand to the student's answer: a list
        of ``(cell type, source, output of the graded run)`` (the output is
        ``None`` for a code cell the run did not reach).
    """

    notebook: str
    status: str
    reason: str
    results: dict = field(default_factory=dict)
    sandbox: str = ""
    student: str = ""
    assignment: str = ""
    seconds: float = 0.0
    checked: tuple = ()
    written: dict = field(default_factory=dict, repr=False)

    @property
    def score(self):
        """The number of auto-graded exercises passed."""
        return sum(1 for passed, _ in self.results.values() if passed)


def _grade_data(grade):
    return {"notebook": grade.notebook, "status": grade.status, "reason": grade.reason,
            "results": {label: [bool(ok), why] for label, (ok, why) in grade.results.items()},
            "sandbox": grade.sandbox, "student": grade.student,
            "assignment": grade.assignment, "seconds": round(float(grade.seconds), 3),
            "checked": list(grade.checked),
            "written": {label: [list(cell) for cell in cells]
                        for label, cells in grade.written.items()}}


def _grade_of(data):
    return NotebookGrade(
        str(data["notebook"]), str(data["status"]), str(data["reason"]),
        {str(label): (bool(ok), str(why)) for label, (ok, why) in data["results"].items()},
        str(data["sandbox"]), str(data["student"]), str(data["assignment"]),
        float(data["seconds"]), tuple(str(x) for x in data["checked"]),
        {str(label): [(str(kind), str(source), None if out is None else str(out))
                      for kind, source, out in cells]
         for label, cells in data["written"].items()})


def _by_student(grades):
    students = {}
    for grade in grades:
        students.setdefault(grade.student, []).append(grade)
    return students


# ----------------------------------------------------------------------------- rows

def grade_labels(grades, assignment=None):
    """The exercise columns of ``grades.csv``: the assignment's order, then the rest."""
    found = {label for grade in grades for label in grade.results}
    if assignment is not None:
        ordered = [label for label in assignment.labels() if label in found]
        return ordered + sorted(found - set(ordered))
    return sorted(found)


def grades_rows(grades, labels):
    """The rows of ``grades.csv`` (header first)."""
    yield ["notebook", "status", "reason", "score", *labels]
    for grade in grades:
        cells = ["" if label not in grade.results else str(int(grade.results[label][0]))
                 for label in labels]
        yield [grade.notebook, grade.status, grade.reason,
               f"{grade.score}/{len(grade.results)}", *cells]


def written_labels(assignment):
    """Every exercise of ``assignment`` marked by hand, in order."""
    return [] if assignment is None else list(assignment.written())


def gradebook_rows(grades, assignment, marks=None):
    """One row per student: a column per exercise, auto-graded and marked by hand."""
    students = _by_student(grades)
    if assignment is not None:
        notebooks = [key for key in assignment.notebooks
                     if any(g.assignment == key for g in grades)]
        auto = [label for key in notebooks for label in assignment.notebooks[key][1]]
        manual = [label for key in notebooks for label in assignment.written_labels(key)]
    else:
        notebooks, auto, manual = [], grade_labels(grades), []
    marks = marks or Marks()
    manual += sorted({label for row in marks.marks.values() for label in row} - set(manual) -
                     set(auto))
    yield ["student", "notebooks", "auto", "auto_out_of", "manual", "total", "problems",
           *auto, *manual]
    for student, rows in sorted(students.items()):
        passed = {}
        for grade in rows:
            for label, (ok, _) in grade.results.items():
                passed[label] = max(passed.get(label, 0), int(ok))
        handed = {g.assignment or g.notebook for g in rows if g.status not in NOT_HANDED_IN}
        problems = [f"{g.notebook}: {g.status}" for g in rows
                    if g.status not in ("ok", "duplicate")]
        for key in notebooks:
            if key in handed:
                continue
            copies = [g.notebook for g in rows if g.assignment == key and
                      g.status == "duplicate"]
            title = assignment.notebooks[key][0]
            problems.append(f"{title}: handed in {len(copies)} times ({', '.join(copies)}); "
                            "none graded" if copies else f"{title}: not handed in")
        cells = [passed.get(label, 0) if assignment is not None or label in passed else ""
                 for label in auto]
        mine = marks.marks.get(student, {})
        manual_cells = [number(mine[label]) if label in mine else "" for label in manual]
        manual_total = number(float(sum(mine.get(label, 0) for label in manual)))
        auto_total = sum(v for v in cells if isinstance(v, int))
        yield [student, len(handed), auto_total,
               len(auto) if assignment is not None else sum(1 for v in cells if v != ""),
               manual_total, number(float(auto_total + manual_total)), "; ".join(problems),
               *cells, *manual_cells]


# --------------------------------------------------------------------------- writing

def _write(folder, name, text):
    folder_fd = open_output_folder(folder)
    try:
        write_atomic(folder_fd, name, text)
    finally:
        os.close(folder_fd)
    return Path(folder) / name


def write_grades(grades, folder, *, assignment=None, feedback="full"):
    """Write ``grades.csv`` and the folder ``feedback/`` (built fresh) into ``folder``.

    Parameters
    ----------
    grades : list of NotebookGrade
        One per notebook.
    folder : path-like
        The output folder (by default the submissions folder).
    assignment : Assignment, optional
        Orders the exercise columns as in the assignment.
    feedback : {"full", "verdict"}, optional
        ``"verdict"`` gives right or wrong without the check's explanation of a
        wrong answer (which can say "too large" and so guide a search for the
        answer); the grader's own reasons (not exported, removed, not data)
        stay.

    Returns
    -------
    pathlib.Path
        The path of ``grades.csv``.

    Notes
    -----
    ``grades.csv`` has the columns ``notebook, status, reason, score`` and then one
    column per auto-graded exercise found in any notebook: ``1`` passed, ``0``
    failed or not checked, empty if the notebook does not contain the
    exercise. ``score`` is ``passed/total`` over the notebook's exercises.
    ``feedback/`` holds one file per student and ``index.csv`` (student to
    file). Every file is written to a temporary file and renamed over its
    target, and ``feedback/`` is built beside the old one and renamed into
    place; a ``feedback`` that is a symbolic link or a file is refused
    (``ValueError``).

    Examples
    --------
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> grade = NotebookGrade("a.ipynb", "ok", "", {"ex-demo-one": (True, "right")}, student="a")
    >>> print(write_grades([grade], folder).read_text().strip())
    notebook,status,reason,score,ex-demo-one
    a.ipynb,ok,,1/1,1
    """
    grades = sorted(grades, key=lambda g: g.notebook)
    path = _write(folder, "grades.csv",
                  csv_text(grades_rows(grades, grade_labels(grades, assignment))))
    replace_folder(folder, "feedback", feedback_files(grades, feedback))
    return path


def write_gradebook(grades, folder, *, assignment=None, marks=None):
    """Write ``gradebook.csv``: one row per student, a column per exercise, totals.

    Columns: ``student``, ``notebooks`` (handed in), ``auto`` (auto-graded
    exercises passed, across the student's notebooks), ``auto_out_of``,
    ``manual`` (sum of the marks given by hand), ``total``, ``problems``
    (notebooks that did not run cleanly, were handed in more than once or were
    not handed in), then one column per auto-graded exercise (``1``/``0``) and
    one per exercise marked by hand. ``marks`` is a
    ``resnet_theory.homework.marks.Marks``.
    """
    return _write(folder, "gradebook.csv",
                  csv_text(gradebook_rows(sorted(grades, key=lambda g: g.notebook),
                                          assignment, marks)))


def write_written_answers(grades, folder, assignment, *, marks=None):
    """One HTML page per exercise marked by hand, with every student's answer.

    Writes ``written-answers/<label>.html`` (built fresh; see
    ``resnet_theory.homework.reports.written_pages``: the statement, then
    each student's cells after it as text, each code cell with its output in
    the graded run) and the signed ``manual-marks.csv`` (one row per student,
    one column per such exercise, the marks of ``marks`` kept). Returns the
    list of labels.
    """
    labels = written_labels(assignment)
    if labels:
        replace_folder(folder, "written-answers", written_pages(grades, assignment))
        write_marks_sheet(folder, {g.student for g in grades}, labels, marks)
    return labels


def _state_body(grades, assignment, feedback, shard, roster):
    return {"format": _STATE_FORMAT, "version": 1, "feedback": feedback,
            "shard": list(shard), "roster": sorted(roster),
            "assignment": None if assignment is None else assignment.snapshot(),
            "grades": [_grade_data(g) for g in sorted(grades, key=lambda g: g.notebook)]}


def write_results(out, grades, assignment=None, *, feedback="full", marks=None, shard=(1, 1),
                  roster=None):
    """Write every result of a batch into ``out``; return the grades sorted by path.

    ``grades.csv``, ``feedback/``, ``written-answers/`` and the signed
    ``manual-marks.csv`` (with an assignment that has exercises marked by hand;
    the marks of ``marks`` kept), ``gradebook.csv`` and the signed
    ``grading-state.json`` (``shard`` and the whole folder's ``roster`` of
    students, for :func:`merge`).
    """
    grades = sorted(grades, key=lambda g: g.notebook)
    students = {g.student for g in grades}
    write_grades(grades, out, assignment=assignment, feedback=feedback)
    write_written_answers(grades, out, assignment, marks=marks)
    write_gradebook(grades, out, assignment=assignment, marks=marks)
    body = _state_body(grades, assignment, feedback, shard,
                       students if roster is None else roster)
    key = signing.secret()
    if key is None:
        print(f"warning: no signing secret can be made at {signing.secret_path()}: "
              f"{STATE_FILE} and manual-marks.csv are not signed, so merge-marks and "
              "merge will not believe them", file=sys.stderr)
    else:
        body["signature"] = signing.signature(
            {k: v for k, v in body.items() if k != "signature"}, key)
    _write(out, STATE_FILE, json.dumps(body, sort_keys=True, allow_nan=False) + "\n")
    return grades


def read_state(folder):
    """The signed grading state of ``folder``: ``(grades, assignment, data)``.

    Raises
    ------
    ValueError
        If there is none, or it is not signed by this grader, or malformed.
    """
    path = Path(folder) / STATE_FILE
    try:
        text = read_file(path, _MAX_STATE_BYTES, what=STATE_FILE).decode("utf-8")
        data = json.loads(text)
    except FileNotFoundError:
        raise ValueError(f"{path} does not exist: grade the folder first (python -m "
                         "resnet_theory.homework grade ...)") from None
    except (OSError, ValueError, UnicodeDecodeError) as error:
        raise ValueError(f"{path} cannot be read ({error})") from None
    if not isinstance(data, dict) or data.get("format") != _STATE_FORMAT or \
            data.get("version") != 1:
        raise ValueError(f"{path} is not a grading state")
    mark = data.pop("signature", None)
    if not signing.verify(data, mark):
        raise ValueError(f"{path} was not written by this grader (its signature is missing "
                         "or wrong); grade the folder again")
    try:
        grades = [_grade_of(entry) for entry in data["grades"]]
        assignment = None if data["assignment"] is None else \
            Assignment.from_snapshot(data["assignment"])
        k, n = (int(x) for x in data["shard"])
        data["shard"] = (k, n)
    except (KeyError, TypeError, ValueError, AttributeError):
        raise ValueError(f"{path} is malformed") from None
    return grades, assignment, data


# ------------------------------------------------------------------------ after grading

def merge_marks(folder, marks_path=None):
    """Merge the marks given by hand into ``gradebook.csv`` (no re-grading).

    The grade book is rebuilt from the signed ``grading-state.json`` of
    ``folder``. The marks are ``marks_path`` (the lecturer's own file, used as
    given) or else ``folder/manual-marks.csv``, which must carry this grader's
    signature (an unsigned one is moved aside with a warning). Every mark is
    validated first (see ``resnet_theory.homework.marks.parse_marks``): on
    any problem nothing is written. The signed sheet in ``folder`` is brought
    up to date with the marks, so that a later ``grade`` keeps them.

    Returns
    -------
    pathlib.Path
        The path of ``gradebook.csv``.

    Raises
    ------
    ValueError
        Without a signed state or signed marks, or listing every bad mark with
        its line.
    """
    folder = Path(folder)
    grades, assignment, _ = read_state(folder)
    students = {g.student for g in grades}
    labels = written_labels(assignment)
    auto = assignment.labels() if assignment is not None else []
    if marks_path is not None:
        marks = read_marks(marks_path, students=students, labels=labels, auto=auto)
    else:
        marks = take_signed_marks(folder, students=students, labels=labels, auto=auto)
        if marks is None:
            raise ValueError(f"{folder / 'manual-marks.csv'} is missing or not signed by this "
                             "grader; give the marks with --marks <file>")
    if labels:
        write_marks_sheet(folder, students, labels, marks)
    return write_gradebook(grades, folder, assignment=assignment, marks=marks)


def merge(folders, out, *, echo=False):
    """Combine the results of the shards of one class (``grade --shard K/N``) into ``out``.

    Each folder holds one shard's signed ``grading-state.json``. They must be
    the shards 1 to N of one split of one folder with one assignment: two
    shards with the same K (or a student in two shards) are an overlap, a
    missing K a gap, and either is refused with the shards named. The results
    written into ``out`` are those of grading the whole folder at once (the
    same ``grades.csv`` and ``gradebook.csv``); marks in a signed
    ``out/manual-marks.csv`` are kept.

    Returns
    -------
    list of NotebookGrade

    Raises
    ------
    ValueError
        Naming the overlap, the gap or the shard that does not belong.
    """
    folders = [Path(f) for f in folders]
    if not folders:
        raise ValueError("merge: no shard folder given")
    states = [(folder, *read_state(folder)) for folder in folders]
    _, _, assignment, first = states[0]
    n = first["shard"][1]
    seen, owner, grades = {}, {}, []
    for folder, shard_grades, _shard_assignment, data in states:
        k, count = data["shard"]
        if count != n or data["roster"] != first["roster"] or \
                data["assignment"] != first["assignment"] or \
                data["feedback"] != first["feedback"]:
            raise ValueError(f"merge: {folder} is shard {k}/{count} of another split, folder "
                             f"or assignment than {folders[0]} (shard "
                             f"{first['shard'][0]}/{n})")
        if k in seen:
            raise ValueError(f"merge: {seen[k]} and {folder} are both shard {k}/{n} (overlap)")
        seen[k] = folder
        for grade in shard_grades:
            if grade.student in owner and owner[grade.student] != folder:
                raise ValueError(f"merge: {grade.student} is graded in {owner[grade.student]} "
                                 f"and in {folder} (overlap)")
            owner[grade.student] = folder
        grades += shard_grades
    missing = [k for k in range(1, n + 1) if k not in seen]
    if missing:
        raise ValueError(f"merge: shard{'s' * (len(missing) > 1)} "
                         f"{', '.join(f'{k}/{n}' for k in missing)} "
                         f"{'are' if len(missing) > 1 else 'is'} missing (gap)")
    roster = set(first["roster"])
    absent = sorted(s for s in roster if s not in owner)
    if absent or set(owner) - roster:
        raise ValueError(f"merge: the shards do not cover the class: "
                         f"{', '.join(absent[:5]) or ', '.join(sorted(set(owner) - roster)[:5])}"
                         " (gap)")
    for student, folder in owner.items():
        k = next(k for k, f in seen.items() if f == folder)
        if shard_of(student, n) != k:
            raise ValueError(f"merge: {student} belongs to shard {shard_of(student, n)}/{n}, "
                             f"not to {folder}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    marks = take_signed_marks(out, students=roster, labels=written_labels(assignment),
                              auto=assignment.labels() if assignment is not None else [],
                              echo=echo)
    return write_results(out, grades, assignment, feedback=first["feedback"], marks=marks,
                         roster=roster)

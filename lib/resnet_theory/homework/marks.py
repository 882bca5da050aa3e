"""The marks given by hand: a sheet the grader writes and signs, and validates when it reads it.

The grader writes ``manual-marks.csv`` beside the grade book: one row per
student, one column per exercise marked by hand, a row ``/maximum`` with each
exercise's largest mark (1 unless the lecturer changes it) and a row
``/signature`` that says this grader wrote the sheet (HMAC-SHA256 with this
user's secret, :mod:`resnet_theory.homework.signing`, over its columns). No
student name starts with ``/`` (it comes from a file name), so these rows are
never a student's. The lecturer fills in the marks (any spreadsheet keeps the
two rows) and ``make merge-marks`` adds them to the grade book.

The sheet lies in the submissions folder by default, which is not trusted: a
sheet there without this grader's signature (planted, or written by someone
else) is moved aside with a warning and never believed. A sheet given
explicitly (``merge-marks --marks FILE``) is the lecturer's own and needs no
signature. Either way every mark is validated before anything is written, and
every problem is reported with its line: a number (no ``nan`` or ``inf``)
between 0 and the exercise's maximum, known students and exercises marked by
hand only, each student once, no cell outside the labelled columns.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
import secrets
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import signing
from .files import csv_text, csv_uncell, open_output_folder, read_file, write_atomic

__all__ = ["Marks", "parse_marks", "read_marks", "marks_sheet", "MARKS_FILE", "MAXIMUM_ROW",
           "SIGNATURE_ROW", "DEFAULT_MAXIMUM", "take_signed_marks", "number"]

#: The file name of the sheet of manual marks.
MARKS_FILE = "manual-marks.csv"
#: The first cell of the row of largest marks.
MAXIMUM_ROW = "/maximum"
#: The first cell of the row of the grader's signature.
SIGNATURE_ROW = "/signature"
#: The largest mark of an exercise whose maximum the sheet does not give.
DEFAULT_MAXIMUM = 1
_LARGEST_MAXIMUM = 1000
_MAX_BYTES = 20_000_000
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d{1,3})?")
_FORMAT = "resnet_theory manual marks"


@dataclass(frozen=True)
class Marks:
    """Validated marks: ``marks`` is ``{student: {label: mark}}`` (only marks given),
    ``maximum`` ``{label: largest mark}``, ``labels`` the sheet's columns in order."""

    labels: tuple = ()
    maximum: dict = field(default_factory=dict)
    marks: dict = field(default_factory=dict)


def number(value):
    """A mark or total as it is written: an integer without ``.0``, else at most 10
    significant digits.

    Examples
    --------
    >>> number(2.0), number(0.1 + 0.2), number(3)
    (2, 0.3, 3)
    """
    if isinstance(value, float):
        value = float(f"{value:.10g}")
        if value.is_integer():
            return int(value)
    return value


def _signature_body(labels):
    return {"format": _FORMAT, "version": 1, "labels": list(labels)}


def _parse_number(text):
    text = csv_uncell(text.strip())
    if not _NUMBER.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def parse_marks(text, where, *, students=None, labels=None, auto=(), signed=False):
    """Read and validate a sheet of marks.

    Parameters
    ----------
    text : str
        The CSV text.
    where : str
        The file's name, for the messages.
    students : collection of str, optional
        The students graded (default: any); a row of marks for another
        student is an error (an empty row is not).
    labels : collection of str, optional
        The exercises marked by hand (default: any label).
    auto : collection of str, optional
        Auto-graded exercises, which a sheet must not mark.
    signed : bool, optional
        Require this grader's signature row.

    Returns
    -------
    Marks

    Raises
    ------
    ValueError
        Listing every problem found, each with its line (at most 20 of them).

    Examples
    --------
    >>> marks = parse_marks("student,ex-a\\n/maximum,10\\nalice,7.5\\nbob,\\n", "m.csv",
    ...                     students={"alice", "bob"}, labels={"ex-a"})
    >>> marks.marks, marks.maximum
    ({'alice': {'ex-a': 7.5}}, {'ex-a': 10.0})
    >>> try:
    ...     parse_marks("student,ex-a\\nalice,nan\\nalice,2\\n", "m.csv")
    ... except ValueError as error:
    ...     print(*str(error).split("; "), sep="\\n")
    m.csv, line 2: the mark 'nan' for ex-a is not a number
    m.csv, line 3: alice has a second row (the first is line 2)
    m.csv, line 3: the mark 2 for ex-a is more than the exercise's maximum of 1
    """
    problems = []

    def problem(line, message):
        problems.append(f"{where}, line {line}: {message}")

    reader = csv.reader(io.StringIO(text))
    rows = []
    try:
        for row in reader:
            rows.append((reader.line_num, row))
    except csv.Error as error:
        raise ValueError(f"{where}, line {reader.line_num}: not CSV ({error})") from None
    rows = [(line, row) for line, row in rows if any(cell.strip() for cell in row)]
    if not rows:
        if signed:
            raise ValueError(f"{where}: no signature of this grader")
        return Marks()
    line, header = rows[0]
    header = [csv_uncell(cell.strip()) for cell in header]
    while header and not header[-1]:
        header.pop()
    if not header or header[0] != "student":
        raise ValueError(f"{where}, line {line}: the first column must be 'student'")
    columns = header[1:]
    seen = {}
    for position, label in enumerate(columns, start=2):
        if not label:
            problem(line, f"column {position} has no exercise label")
        elif label in seen:
            problem(line, f"the exercise {label} has two columns")
        elif label in auto:
            problem(line, f"{label} is auto-graded: its marks come from the grader")
        elif labels is not None and label not in labels:
            problem(line, f"{label} is not an exercise marked by hand in this assignment")
        seen.setdefault(label, position)
    maximum = {label: float(DEFAULT_MAXIMUM) for label in columns if label}
    marks, first, mark_rows, signature = {}, {}, [], None
    for line, row in rows[1:]:
        name = csv_uncell(row[0]) if row else ""  # exact: names may have blanks
        cells = row[1:]
        if name.strip() in (SIGNATURE_ROW, MAXIMUM_ROW):
            name = name.strip()
        if name == SIGNATURE_ROW:
            signature = cells[0].strip() if cells else ""
            continue
        extra = [cell for cell in cells[len(columns):] if cell.strip()]
        if extra:
            problem(line, f"a cell outside the labelled columns ({extra[0].strip()!r})")
        if name == MAXIMUM_ROW:
            for label, cell in zip(columns, cells, strict=False):
                if not cell.strip() or not label:
                    continue
                value = _parse_number(cell)
                if value is None or not 0 < value <= _LARGEST_MAXIMUM:
                    problem(line, f"the maximum {cell.strip()!r} of {label} is not a number "
                                  f"above 0 and at most {_LARGEST_MAXIMUM}")
                else:
                    maximum[label] = value
            continue
        if name.startswith("/"):
            problem(line, f"unknown row {name!r} (only {MAXIMUM_ROW} and {SIGNATURE_ROW} "
                          "start with '/')")
            continue
        mark_rows.append((line, name, cells))
    for line, name, cells in mark_rows:
        given = [(label, cell.strip()) for label, cell in zip(columns, cells, strict=False)
                 if cell.strip() and label]
        if not name.strip():
            if given:
                problem(line, "marks without a student")
            continue
        if name in first:
            problem(line, f"{name} has a second row (the first is line {first[name]})")
        first.setdefault(name, line)
        if given and students is not None and name not in students:
            problem(line, f"{name} is not a student of this class (their marks would be lost; "
                          "remove the row or grade their notebook)")
            continue
        for label, cell in given:
            value = _parse_number(cell)
            if value is None:
                problem(line, f"the mark {cell!r} for {label} is not a number")
            elif value < 0:
                problem(line, f"the mark {cell} for {label} is negative")
            elif value > maximum.get(label, DEFAULT_MAXIMUM):
                problem(line, f"the mark {cell} for {label} is more than the exercise's "
                              f"maximum of {number(maximum.get(label, DEFAULT_MAXIMUM))}")
            else:
                marks.setdefault(name, {})[label] = value
    if signed and not signing.verify(_signature_body(columns), signature):
        raise ValueError(f"{where} carries no signature of this grader"
                         + (" (its signature row is wrong)" if signature else ""))
    if problems:
        more = f" (and {len(problems) - 20} more)" if len(problems) > 20 else ""
        raise ValueError("; ".join(problems[:20]) + more)
    return Marks(tuple(columns), maximum, marks)


def read_marks(path, *, students=None, labels=None, auto=(), signed=False):
    """:func:`parse_marks` of a file (read without following a symbolic link).

    Raises
    ------
    ValueError
        If a mark is not valid, or (``signed``) the signature is missing or wrong.
    OSError
        If the file cannot be read.
    """
    try:
        data = read_file(path, _MAX_BYTES, what="the marks")
    except ValueError as error:
        raise OSError(str(error)) from None
    return parse_marks(data.decode("utf-8-sig", "replace"), str(path), students=students,
                       labels=labels, auto=auto, signed=signed)


def marks_sheet(students, labels, existing=None):
    """The text of a signed sheet: ``students`` rows, ``labels`` columns, with the
    marks and maximums of ``existing`` (a :class:`Marks`) kept."""
    existing = existing or Marks()
    rows = [["student", *labels],
            [MAXIMUM_ROW, *[number(existing.maximum.get(label, DEFAULT_MAXIMUM))
                            for label in labels]]]
    for student in sorted(set(students) | set(existing.marks)):
        mine = existing.marks.get(student, {})
        rows.append([student, *[number(mine[label]) if label in mine else ""
                                for label in labels]])
    key = signing.secret()
    if key is not None:
        rows.append([SIGNATURE_ROW, signing.signature(_signature_body(labels), key)])
    return csv_text(rows)


def _is_signed(text):
    """Whether a sheet's signature row is this grader's signature of its columns."""
    try:
        rows = [row for row in csv.reader(io.StringIO(text)) if any(c.strip() for c in row)]
    except csv.Error:
        return False
    if not rows:
        return False
    header = [csv_uncell(cell.strip()) for cell in rows[0]]
    while header and not header[-1]:
        header.pop()
    marks = [row[1].strip() for row in rows[1:]
             if len(row) > 1 and csv_uncell(row[0].strip()) == SIGNATURE_ROW]
    return len(marks) == 1 and signing.verify(_signature_body(header[1:]), marks[0])


def take_signed_marks(folder, *, students=None, labels=None, auto=(), echo=True):
    """The signed marks in ``folder/manual-marks.csv``, or ``None`` (no sheet there).

    A sheet without this grader's signature is renamed to
    ``manual-marks.unsigned-<time>-<random>.csv`` with a warning and not used. A signed
    sheet with a bad mark raises ``ValueError`` (the lecturer's own sheet:
    nothing is graded or written until it is fixed).
    """
    path = Path(folder) / MARKS_FILE
    try:
        os.lstat(path)
    except FileNotFoundError:
        return None
    try:
        text = read_file(path, _MAX_BYTES, what="the marks").decode("utf-8-sig", "replace")
    except (OSError, ValueError):
        text = None
    if text is None or not _is_signed(text):
        aside = (f"manual-marks.unsigned-{time.strftime('%Y%m%d-%H%M%S')}-"
                 f"{secrets.token_hex(3)}.csv")
        folder_fd = open_output_folder(folder)
        try:
            os.rename(MARKS_FILE, aside, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
        finally:
            os.close(folder_fd)
        if echo:
            print(f"warning: {path} carries no signature of this grader (planted among the "
                  f"submissions, or written by someone else): moved to {aside} and NOT "
                  "used. If it is your own sheet, merge it with: python -m "
                  "resnet_theory.homework merge-marks <folder> --marks <that file>",
                  file=sys.stderr)
        return None
    return parse_marks(text, str(path), students=students, labels=labels, auto=auto,
                       signed=True)


def write_marks_sheet(folder, students, labels, existing=None):
    """Write the signed sheet into ``folder`` (atomically); return its path."""
    folder_fd = open_output_folder(folder)
    try:
        write_atomic(folder_fd, MARKS_FILE, marks_sheet(students, labels, existing))
    finally:
        os.close(folder_fd)
    return Path(folder) / MARKS_FILE

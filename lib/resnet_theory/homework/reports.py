"""What goes back to people: feedback files for the students, pages of written answers to mark.

:func:`feedback_files` gives each student one file, ``feedback/<name>.txt``,
whose name is unique: a student's name is used as it is only when it is already
a plain file name (letters, digits, ``_ . -``), otherwise it is made plain and a
hash of the exact name is added (``alice bob`` gets ``alice_bob-<hash>.txt``, so
the real ``alice_bob`` keeps ``alice_bob.txt``), and ``feedback/index.csv``
says which file is whose.

:func:`written_pages` gives one page per exercise marked by hand, with every
student's answer as text (nothing a student wrote is rendered or run; a strict
Content-Security-Policy forbids scripts) and, below each code cell, the output
of that cell **in the graded run**; an output stored in the handed-in notebook
is never shown, since a student can write anything there.
"""

from __future__ import annotations

import hashlib
import html
import re
import unicodedata

from .files import csv_text

__all__ = ["WITHHELD", "feedback_text", "feedback_files", "student_files", "written_pages",
           "INDEX_FILE", "NOT_RUN"]

#: ``feedback="verdict"``: what replaces a check's explanation in the feedback files.
WITHHELD = ("the check's explanation is not part of graded feedback (run the check in "
            "your notebook)")
#: The index of the feedback folder (student -> file).
INDEX_FILE = "index.csv"
#: Shown under a code cell of a written answer that the graded run did not reach.
NOT_RUN = "(not run: the graded run stopped before this cell)"
_HASHED = re.compile(r".*-[0-9a-f]{8,}")
_RESERVED_STEMS = {"index"}


def feedback_text(grades, feedback="full"):
    """The feedback of one student on their notebooks (``grades``)."""
    lines = []
    for grade in grades:
        lines += [f"Feedback on {grade.notebook}", "",
                  f"Run: {grade.status}" + (f" ({grade.reason})" if grade.reason else ""),
                  f"Auto-graded exercises: {grade.score} of {len(grade.results)} correct", ""]
        for label, (passed, why) in grade.results.items():
            if feedback == "verdict" and label in grade.checked and not passed:
                why = WITHHELD
            lines.append(f"- {label}: {'correct' if passed else 'not yet'}: {why}")
        if not grade.results:
            lines.append("(this notebook contains no auto-graded exercise)")
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def _plain(text):
    stem = re.sub(r"[^\w.-]", "_", unicodedata.normalize("NFC", text), flags=re.UNICODE)
    return stem.lstrip(".-")[:80] or "student"


def student_files(students):
    """``{student: file stem}``, unique (also without regard to case).

    Examples
    --------
    >>> student_files(["alice_bob", "alice bob", "carol"]) == {
    ...     "alice bob": "alice_bob-" + hashlib.sha256(b"alice bob").hexdigest()[:8],
    ...     "alice_bob": "alice_bob", "carol": "carol"}
    True
    """
    stems, taken = {}, set()
    for student in sorted(students):
        plain = _plain(student)
        digest = hashlib.sha256(student.encode("utf-8", "surrogatepass")).hexdigest()
        stem = student
        if plain != student or _HASHED.fullmatch(student) or student.lower() in \
                _RESERVED_STEMS or student.lower() in taken:
            length = 8
            stem = f"{plain}-{digest[:length]}"
            while stem.lower() in taken and length < len(digest):
                length += 8
                stem = f"{plain}-{digest[:length]}"
        taken.add(stem.lower())
        stems[student] = stem
    return stems


def _by_student(grades):
    students = {}
    for grade in grades:
        students.setdefault(grade.student, []).append(grade)
    return students


def feedback_files(grades, feedback="full"):
    """``{file name: text}`` of the feedback folder: one file per student, and the index."""
    students = _by_student(sorted(grades, key=lambda g: g.notebook))
    stems = student_files(students)
    files = {f"{stems[s]}.txt": feedback_text(rows, feedback)
             for s, rows in sorted(students.items())}
    files[INDEX_FILE] = csv_text([["student", "file"],
                                  *[[s, f"{stems[s]}.txt"] for s in sorted(students)]])
    return files


_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>{title}</title>
<style>
body {{ font-family: sans-serif; max-width: 60em; margin: 2em auto; line-height: 1.4; }}
pre {{ white-space: pre-wrap; background: #f6f6f6; padding: .6em; border-radius: 4px; }}
pre.out {{ background: #eef5ee; }}
section {{ border-top: 2px solid #999; padding-top: .5em; margin-top: 1.5em; }}
.empty {{ color: #a00; }}
</style></head><body>
<h1>{title}</h1>
<p>Every student's answer, for marking by hand. Enter marks in the column
<code>{label}</code> of <code>manual-marks.csv</code> (at most the maximum in its row
<code>/maximum</code>), then run
<code>python -m resnet_theory.homework merge-marks &lt;folder&gt;</code>.
The answers are shown as text: nothing a student wrote is rendered or run. Below a
code cell, on green, is what the cell printed in the graded run (outputs stored in the
handed-in notebook are not shown).</p>
<h2>The exercise</h2>
<pre>{statement}</pre>
{answers}
</body></html>
"""

_NOT_GRADED = ("skipped", "invalid", "duplicate")


def _answer_html(grade, label):
    if grade.status in _NOT_GRADED:
        return f'<p class="empty">(not graded: {html.escape(grade.status)}: ' \
               f"{html.escape(grade.reason)})</p>"
    cells = grade.written.get(label, [])
    parts = []
    for kind, source, output in cells:
        if not source.strip():
            continue
        parts.append(f"<pre>{html.escape(source)}</pre>")
        if kind == "code":
            if output is None:
                parts.append(f'<p class="empty">{NOT_RUN}</p>')
            elif output:
                parts.append(f'<pre class="out">{html.escape(output)}</pre>')
    return "".join(parts)


def written_pages(grades, assignment):
    """``{"<label>.html": page}``: one page per exercise of ``assignment`` marked by hand."""
    written = assignment.written()
    students = _by_student(sorted(grades, key=lambda g: g.notebook))
    stems = student_files(students)
    pages = {}
    for label, (key, statement) in written.items():
        blocks = []
        for student, rows in sorted(students.items()):
            mine = [g for g in rows if g.assignment == key]
            body = "".join(_answer_html(g, label) for g in mine) or \
                '<p class="empty">(no answer)</p>'
            blocks.append(f"<section id=\"{html.escape(stems[student])}\">"
                          f"<h3>{html.escape(student)}</h3>{body}</section>")
        pages[f"{label}.html"] = _PAGE.format(
            title=html.escape(f"Written answers: {label}"), label=html.escape(label),
            statement=html.escape(statement), answers="\n".join(blocks))
    return pages

"""Nothing a student is given prints an auto-graded answer (issue 38, item 1 and attack A).

Every value of the book's answer key (the ``book_answer_key`` fixture: what the
solutions compute) is looked for in what a student is given: every file of
``lib/`` (the library a student imports, whose docstrings are also the API page
of the student edition), the student edition of every notebook (its Markdown,
its code and the outputs it keeps), and the book's other pages as the student
edition has them. The student HTML book is built from exactly these (the
notebooks and pages with their solutions removed, the API page from the
library's docstrings), so its text is scanned through its sources; with
``STUDENT_HTML=<folder>`` (after ``make student``: ``_build/student-html``) the
built pages are scanned as well.

A value is looked for as it is printed to 4 significant digits or more (up to
8): fixed (``0.1946``, ``.1946``), scientific (``1.946e-01``, ``1.946E-1``) and
``%g`` with its trailing zeros, the sign left out; integers of four digits or
more as they are. A value with fewer than four significant digits (``0.05``) or
a small integer cannot be told from the book's ordinary numbers by its text and
is not looked for. Images are not text and are left out.
"""

import json
import math
import os
import re
from pathlib import Path

import nbformat
from resnet_theory import homework
from resnet_theory.homework import student

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
TEXT_OUTPUTS = ("text/plain", "text/markdown", "text/html", "text/latex")


def _numbers(value):
    """The numbers of an answer (a number, or nested lists of them); no booleans."""
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [value]
    if isinstance(value, (list, tuple)):
        return [number for item in value for number in _numbers(item)]
    return []


def forms(value):
    """How ``value`` is written when printed to 4 to 8 significant digits (no sign).

    Examples
    --------
    >>> sorted(forms(0.19460137))[:4]
    ['.1946', '.19460', '.194601', '.19460137']
    >>> "1.946e-01" in forms(0.19460137) and "1.946E-1" in forms(0.19460137)
    True
    >>> forms(0.05), forms(32), forms(101610)
    (set(), set(), {'101610'})
    """
    if isinstance(value, int) or float(value).is_integer():
        return {str(abs(int(value)))} if abs(value) >= 1000 else set()
    value = abs(float(value))
    if not math.isfinite(value) or value == 0 or float(f"{value:.3g}") == value:
        return set()  # three significant digits or fewer: an ordinary number
    found = set()
    exponent = math.floor(math.log10(value))
    for digits in range(4, 9):
        mantissa, power = f"{value:.{digits - 1}e}".split("e")
        power = int(power)
        found |= {f"{mantissa}e{power:+03d}", f"{mantissa}e{power}", f"{mantissa}E{power:+03d}",
                  f"{mantissa}E{power}", f"{mantissa}e{power:03d}"}
        found.add(f"{value:#.{digits}g}")
        decimals = digits - 1 - exponent
        if 0 <= decimals <= 12:
            fixed = f"{value:.{decimals}f}"
            found.add(fixed)
            if fixed.startswith("0."):
                found.add(fixed[1:])
    return found


def _notebook_text(notebook):
    parts = []
    for cell in notebook.cells:
        parts.append(cell.source)
        for output in cell.get("outputs", []):
            parts.append(str(output.get("text", "")))
            data = output.get("data", {})
            parts += [str(data[kind]) for kind in TEXT_OUTPUTS if kind in data]
    return "\n".join(parts)


def given_to_students():
    """``(where, text)`` of everything a student is given, as text."""
    for path in sorted((ROOT / "lib").rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and \
                path.suffix not in (".pyc", ".whl", ".png", ".pdf"):
            yield path.relative_to(ROOT).as_posix(), path.read_text(errors="replace")
    for path in sorted(BOOK.rglob("*")):
        if "_build" in path.parts or ".ipynb_checkpoints" in path.parts:
            continue
        where = f"student edition of {path.relative_to(ROOT).as_posix()}"
        if path.suffix == ".ipynb":
            edition = student.split_solutions(nbformat.read(path, as_version=4),
                                              where=str(path))
            yield where, _notebook_text(edition.notebook)
        elif path.suffix == ".md":
            text, _ = student._strip_markdown(path.read_text(encoding="utf-8"), None, [],
                                              str(path))
            yield where, text
    html = os.environ.get("STUDENT_HTML")
    if html:
        for path in sorted(Path(html).rglob("*.html")):
            yield f"student HTML {path.relative_to(html).as_posix()}", path.read_text(
                errors="replace")


def leaks(key, corpus):
    """``[(label, form, where, context)]``: every key value found in ``corpus``."""
    wanted = {}
    for label, value in key.items():
        for number in _numbers(value):
            for form in forms(number):
                wanted.setdefault(form, label)
    if not wanted:
        return []
    pattern = re.compile(r"(?<![\d.])(" + "|".join(
        re.escape(form) for form in sorted(wanted, key=len, reverse=True)) + r")(?![\d])")
    found = []
    for where, text in corpus:
        for match in pattern.finditer(text):
            context = " ".join(text[max(0, match.start() - 60):match.end() + 20].split())
            found.append((wanted[match.group(1)], match.group(1), where, context))
    return found


def test_the_scan_finds_a_planted_answer():
    key = {"ex-demo-area": 0.19460137, "ex-demo-count": 101610, "ex-demo-step": 0.05}
    corpus = [("a", "depth 0.1946 here"), ("b", "x = 1.946e-01"), ("c", "y = .19460137"),
              ("d", "n = 101610"), ("e", "step 0.05, 10.1946, 0.19461, 0.1946 and 2.1946")]
    assert [(where, form) for _, form, where, _ in leaks(key, corpus)] == [
        ("a", "0.1946"), ("b", "1.946e-01"), ("c", ".19460137"), ("d", "101610"),
        ("e", "0.1946")]


def test_no_auto_graded_answer_is_in_what_students_are_given(book_answer_key):
    found = leaks(book_answer_key.answers, given_to_students())
    assert not found, "auto-graded answers that a student is given:\n" + "\n".join(
        f"  {label}: {form} in {where}: ...{context}..." for label, form, where, context in found)


def test_the_answer_key_module_states_no_value(book_answer_key):
    text = (ROOT / "lib" / "resnet_theory" / "homework" / "answer_key.py").read_text()
    assert not leaks(book_answer_key.answers, [("answer_key.py", text)])
    assert json.loads(json.dumps(book_answer_key.answers))  # the key is plain data
    assert homework.AnswerKey.of(book_answer_key.answers).labels()

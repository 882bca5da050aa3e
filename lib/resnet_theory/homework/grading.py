r"""Grading: find the submissions, run each in its sandbox, check the answers here, report.

The submissions folder is untrusted (it usually comes from extracted archives).
:func:`collect_submissions` lists it without following a single symbolic link:
only regular files named ``*.ipynb`` (any case) of at most
:attr:`~resnet_theory.homework.sandbox.Limits.notebook_bytes` are read, each
opened with ``O_NOFOLLOW | O_NONBLOCK`` and checked with ``fstat``; symbolic
links, FIFOs, devices, sockets, oversized files and directories named like a
notebook are listed as *skipped* with the reason. Names that are not UTF-8,
contain control characters or are not in Unicode NFC form are shown with
escapes (``\xff``, ``\u0301``), so that two names never look the same.

The exercises that count come from the **assignment** (the book's notebook of
the same file name, or ``--assignment``), never from the submission: an answer
variable the assignment does not ask for is ignored, and an exercise the
submission removed scores 0 with "exercise removed".

:func:`grade_notebook` hands one notebook to
:func:`resnet_theory.homework.sandbox.run_submission`, reads the answers it
exported (JSON, or ``.npy`` with ``allow_pickle=False``, size-limited, no symbolic
links followed) and runs every check of :mod:`resnet_theory.checks` in this
process. :func:`grade_folder` grades a folder with several notebooks at once,
appends each row to ``grades.csv`` as it finishes, stops cleanly on
SIGINT/SIGTERM, and writes ``grades.csv``, ``gradebook.csv`` (one row per
student), the feedback files and the pages of written answers, each to a
temporary file that is then renamed over its target (``os.replace``), never
through a symbolic link. Every cell of a CSV file that a spreadsheet would read
as a formula (``= + - @``, tab, carriage return) is escaped with a leading
``'``.
"""

from __future__ import annotations

import csv
import hashlib
import html
import io
import json
import os
import re
import secrets
import signal
import stat
import sys
import threading
import unicodedata
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, replace
from pathlib import Path
from time import monotonic

import nbformat

from . import sandbox as _sandbox
from .sandbox import (
    Limits,
    SandboxUnavailable,
    find_bwrap,
    find_cgroups,
    remove_scratch,
    run_submission,
)
from .student import auto_graded_labels, exercise_labels

__all__ = ["NotebookGrade", "Submission", "Assignment", "grade_notebook", "grade_folder",
           "collect_submissions", "load_assignment", "write_grades", "write_gradebook",
           "write_written_answers", "merge_marks", "load_answer", "csv_cell", "display_name",
           "GradingInterrupted", "SANDBOX_MODES", "CGROUP_MODES", "OUTPUT_NAMES"]

#: ``"auto"`` (sandbox when ``bwrap`` works, else a loud warning), ``"require"``
#: (refuse without it) and ``"off"`` (never; for debugging).
SANDBOX_MODES = ("auto", "require", "off")
#: ``"auto"`` (a cgroup per submission where the machine allows, else a loud
#: warning and timed-out rows re-graded alone), ``"require"`` and ``"off"``.
CGROUP_MODES = ("auto", "require", "off")
#: What the grader writes into the output folder (never graded, never followed).
OUTPUT_NAMES = ("grades.csv", "gradebook.csv", "feedback", "written-answers",
                "manual-marks.csv", "answer-key.json")

_STATUS_ORDER = ("ok", "error", "output-limit", "timeout", "kernel-died", "invalid",
                 "skipped", "grader-error")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,200}$")
_IGNORED = {".ipynb_checkpoints", "__MACOSX", ".DS_Store"}
_MAX_DEPTH = 4
_MAX_ENTRIES = 100_000


class GradingInterrupted(KeyboardInterrupt):
    """Raised by :func:`grade_folder` after SIGINT/SIGTERM, once what was done is written.

    ``grades`` holds the rows that finished.
    """

    def __init__(self, grades):
        super().__init__("grading was interrupted")
        self.grades = grades


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
        ``sys.exit``), ``"output-limit"`` (printed more than allowed),
        ``"timeout"`` (exceeded the time limit), ``"kernel-died"`` (the kernel
        exited, e.g. ``os._exit``, or ran out of memory), ``"invalid"`` (not a
        readable notebook, or not a notebook of the assignment), ``"skipped"``
        (not read: a symbolic link, FIFO, device, directory or oversized file)
        or ``"grader-error"`` (no result came back).
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

    @property
    def score(self):
        """The number of auto-graded exercises passed."""
        return sum(1 for passed, _ in self.results.values() if passed)


@dataclass(frozen=True)
class Submission:
    """One entry of the submissions folder, read (or skipped) without following links.

    ``path`` is the display path, ``student`` the owner, ``assignment`` the key
    of the assignment notebook it matches (empty: none), ``data`` the bytes
    read (``None`` when skipped) and ``skipped`` the reason it was not read.
    """

    path: str
    student: str
    assignment: str = ""
    data: bytes | None = None
    skipped: str = ""


@dataclass(frozen=True)
class Assignment:
    """The notebooks of an assignment: ``notebooks`` maps a key (the file name,
    lower-case, NFC) to ``(title, auto-graded labels, all exercise labels,
    path)``."""

    notebooks: dict

    def labels(self):
        """Every auto-graded label, in notebook order."""
        return [label for key in self.notebooks for label in self.notebooks[key][1]]

    def written(self):
        """``label -> (notebook key, statement)`` of the exercises marked by hand."""
        found = {}
        for key, (_, auto, _, path) in self.notebooks.items():
            notebook = nbformat.read(path, as_version=4)
            for label, statement in _statements(notebook).items():
                if label not in auto:
                    found[label] = (key, statement)
        return found


def _one_line(text, limit=300):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


# --------------------------------------------------------------------- names and CSV

def display_name(name):
    r"""A file name as it can be shown and written anywhere: printable, NFC, one line.

    Undecodable bytes (kept by Python as surrogates) become ``\xNN``, control
    and format characters ``\uNNNN``; a name that is not in NFC form shows its
    combining marks as ``\uNNNN``, so that the NFC and NFD spellings of one
    name never give two identical-looking rows.

    Examples
    --------
    >>> display_name("alice.ipynb")
    'alice.ipynb'
    >>> display_name(b"bob\xff.ipynb".decode("utf-8", "surrogateescape"))
    'bob\\xff.ipynb'
    >>> display_name("Jos\u00e9.ipynb"), display_name("Jose\u0301.ipynb")
    ('José.ipynb', 'Jose\\u0301.ipynb')
    """
    nfc = unicodedata.is_normalized("NFC", name.encode("utf-8", "surrogateescape").decode(
        "utf-8", "replace"))
    out = []
    for char in name:
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif 0xD800 <= code <= 0xDFFF or unicodedata.category(char)[0] == "C" or \
                (not nfc and unicodedata.combining(char)) or char == "\\":
            out.append(f"\\u{code:04x}" if char != "\\" else "\\\\")
        else:
            out.append(char)
    return "".join(out)


_FORMULA = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value):
    """A CSV cell that no spreadsheet reads as a formula.

    Text that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
    return gets a leading ``'`` (the OWASP advice for CSV injection); numbers
    the grader wrote (``1``, ``0``, ``3/5``, ``-2.5``) are kept.

    Examples
    --------
    >>> csv_cell("=HYPERLINK(\\"http://x\\")"), csv_cell("-2.5"), csv_cell("@SUM(1)")
    ('\\'=HYPERLINK("http://x")', '-2.5', "'@SUM(1)")
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    text = str(value)
    if text.startswith(_FORMULA) and not re.fullmatch(r"-?\d+(\.\d+)?", text):
        return "'" + text
    return text


def _safe_file_stem(text, taken):
    """A file name stem of letters, digits, ``_ . -`` for ``text``; unique in ``taken``."""
    stem = re.sub(r"[^\w.-]", "_", unicodedata.normalize("NFC", text), flags=re.UNICODE)
    stem = stem.lstrip(".-")[:80] or "student"
    if stem.lower() in taken:
        stem = f"{stem}-{hashlib.sha256(text.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"
    taken.add(stem.lower())
    return stem


# ------------------------------------------------------------------ safe file output

def _open_output_folder(folder, create=False):
    """An ``O_NOFOLLOW`` descriptor of an output folder (refusing a symbolic link)."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    folder = Path(folder)
    if create:
        try:
            os.mkdir(folder, 0o755)
        except FileExistsError:
            pass
    try:
        return os.open(folder, flags)
    except OSError as error:
        raise ValueError(f"{folder} is not a folder the grader may write into (a symbolic "
                         f"link or a file is in its place: {error.strerror}); remove it or "
                         "write elsewhere with --out") from None


def _write_atomic(folder_fd, name, text):
    """Write ``text`` to ``name`` in an open folder: a temporary file, then ``os.replace``.

    A symbolic link (or anything) at ``name`` is replaced, never followed; a
    folder at ``name`` is refused.
    """
    try:
        info = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
        if stat.S_ISDIR(info.st_mode):
            raise ValueError(f"{name} is a folder; the grader does not replace it")
    except FileNotFoundError:
        pass
    temporary = f".{name}.{secrets.token_hex(6)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(temporary, flags, 0o644, dir_fd=folder_fd)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
    except BaseException:
        try:
            os.unlink(temporary, dir_fd=folder_fd)
        except OSError:
            pass
        raise


def _csv_text(rows):
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for row in rows:
        writer.writerow([csv_cell(cell) for cell in row])
    return buffer.getvalue()


def check_outputs(out):
    """Refuse an output folder whose grader files are symbolic links or of the wrong kind.

    Raises
    ------
    ValueError
        Naming the entry and what to do.
    """
    out = Path(out)
    for name in OUTPUT_NAMES:
        try:
            info = os.lstat(out / name)
        except FileNotFoundError:
            continue
        folder = name in ("feedback", "written-answers")
        if stat.S_ISLNK(info.st_mode):
            kind = "a symbolic link"
        elif folder and not stat.S_ISDIR(info.st_mode):
            kind = "not a folder"
        elif not folder and not stat.S_ISREG(info.st_mode):
            kind = "not a regular file"
        else:
            continue
        raise ValueError(f"{out / name} is {kind}; the grader writes its results there and "
                         "does not write through it. Remove it (it may have been planted in "
                         "the submissions), or write the results elsewhere with --out")


# ------------------------------------------------------------------------ assignment

def _notebook_key(name):
    return unicodedata.normalize("NFC", name).lower()


def _statements(notebook):
    """``label -> statement text`` of every exercise stated in ``notebook``."""
    found = {}
    for cell in notebook.cells:
        if cell.cell_type != "markdown":
            continue
        for label in exercise_labels(nbformat.v4.new_notebook(cells=[cell])):
            found[label] = cell.source
    return found


def load_assignment(path):
    """The assignment: one notebook, or every notebook in a folder (the book).

    Parameters
    ----------
    path : path-like
        An ``.ipynb`` file or a folder searched recursively (``_build`` and
        checkpoints excluded).

    Returns
    -------
    Assignment

    Raises
    ------
    ValueError
        If ``path`` holds no notebook, or two notebooks share a file name.
    """
    from ..checks import REGISTRY

    path = Path(path)
    if path.is_file():
        paths = [path]
    elif path.is_dir():
        paths = sorted(p for p in path.rglob("*.ipynb")
                       if not {"_build", ".ipynb_checkpoints"} & set(p.parts))
    else:
        raise ValueError(f"assignment: {path} is neither a notebook nor a folder")
    if not paths:
        raise ValueError(f"assignment: {path} holds no notebook")
    notebooks = {}
    for notebook_path in paths:
        key = _notebook_key(notebook_path.name)
        if key in notebooks:
            raise ValueError(f"assignment: two notebooks are called {notebook_path.name}")
        notebook = nbformat.read(notebook_path, as_version=4)
        labels = exercise_labels(notebook)
        auto = [label for label in labels if label in REGISTRY]
        notebooks[key] = (notebook_path.name, auto, labels, notebook_path)
    return Assignment(notebooks)


def default_assignment():
    """The book's folder (``book/`` of the repository this package is installed from)."""
    import resnet_theory

    book = Path(resnet_theory.__file__).resolve().parents[2] / "book"
    return book if book.is_dir() else None


# ---------------------------------------------------------------- the submissions

def _read_regular_file(folder_fd, name, limit, what="the exported answer"):
    """The bytes of a regular file in an open folder, without following links."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(name, flags, dir_fd=folder_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{what} is not a regular file")
        if info.st_size > limit:
            raise ValueError(f"{what} has {info.st_size} bytes, more than the "
                             f"limit of {limit}")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise ValueError(f"{what} has more than {limit} bytes")
    return data


def _kind(mode):
    if stat.S_ISLNK(mode):
        return "a symbolic link (not followed)"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe), not a regular file"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device, not a regular file"
    if stat.S_ISSOCK(mode):
        return "a socket, not a regular file"
    if stat.S_ISDIR(mode):
        return "a folder, not a notebook file"
    return "not a regular file"


def _match(name, assignment, pattern):
    """``(assignment key, student from the file name or None)`` of a notebook's file name."""
    if pattern is not None:
        found = pattern.fullmatch(name)
        if found:
            notebook = found.group("notebook")
            if not notebook.lower().endswith(".ipynb"):
                notebook += ".ipynb"
            key = _notebook_key(notebook)
            if assignment is None or key in assignment.notebooks:
                return key, found.group("student")
    key = _notebook_key(name)
    if assignment is None:
        return "", None
    if key in assignment.notebooks:
        return key, None
    best = None
    for candidate in assignment.notebooks:
        if key.endswith(candidate) and len(key) > len(candidate) and \
                key[-len(candidate) - 1] in "_-. " and (best is None or len(candidate) > len(best)):
            best = candidate
    if best is not None:
        prefix = name[:len(name) - len(best)].rstrip("_-. ")
        return best, prefix or None
    return "", None


def collect_submissions(folder, *, assignment=None, limit=20_000_000, pattern=None,
                        reserved=OUTPUT_NAMES):
    """Every notebook of the submissions folder, read without trusting the folder.

    Parameters
    ----------
    folder : path-like
        Notebooks at the top level (one per file, grouped by the file-name
        pattern) and/or one folder per student (its notebooks, in sub-folders
        too, belong to that student).
    assignment : Assignment, optional
        To match each notebook to the assignment's notebook of the same file
        name, or whose name ends the file name after ``_``, ``-``, ``.`` or a
        space (``alice_example_one.ipynb``: student ``alice``).
    limit : int, optional
        The largest file read (larger ones are skipped).
    pattern : str or re.Pattern, optional
        A regular expression with the groups ``student`` and ``notebook``
        matched against the whole file name of a top-level notebook.
    reserved : sequence of str, optional
        Top-level names the grader writes and never grades.

    Returns
    -------
    list of Submission
        Sorted by display path. Skipped entries carry the reason and no data.
    """
    if isinstance(pattern, str):
        pattern = re.compile(pattern)
    found = []
    flags = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)
    root_fd = os.open(folder, flags)
    budget = [_MAX_ENTRIES]

    def walk(fd, prefix, student, depth):
        try:
            entries = sorted(os.scandir(fd), key=lambda e: e.name)
        except OSError as error:
            found.append(Submission(prefix.rstrip("/") or ".", student or "",
                                    skipped=f"could not be listed ({error.strerror})"))
            return
        for entry in entries:
            budget[0] -= 1
            if budget[0] < 0:
                return
            raw = entry.name
            shown = display_name(raw)
            path = prefix + shown
            if depth == 0 and raw in reserved:
                continue
            if raw in _IGNORED:
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError as error:
                found.append(Submission(path, student or shown,
                                        skipped=f"could not be examined ({error.strerror})"))
                continue
            notebook_like = raw.lower().endswith(".ipynb")
            if stat.S_ISDIR(info.st_mode) and not notebook_like:
                if depth >= _MAX_DEPTH:
                    found.append(Submission(path, student or shown,
                                            skipped="folders nested too deep"))
                    continue
                try:
                    child = os.open(raw, flags | os.O_NOFOLLOW, dir_fd=fd)
                except OSError as error:
                    found.append(Submission(path, student or shown,
                                            skipped=f"could not be opened ({error.strerror})"))
                    continue
                try:
                    walk(child, path + "/", student if student is not None else shown,
                         depth + 1)
                finally:
                    os.close(child)
                continue
            if not stat.S_ISREG(info.st_mode):
                if notebook_like or not stat.S_ISDIR(info.st_mode):
                    owner = student or (shown[:-len(".ipynb")] if notebook_like else shown)
                    found.append(Submission(path, owner, skipped=_kind(info.st_mode)))
                continue
            if not notebook_like:
                continue  # data files, notes: not graded, not reported
            key, named = _match(raw, assignment, pattern)
            owner = student if student is not None else (
                display_name(named) if named else shown[:-len(".ipynb")])
            try:
                data = _read_regular_file(fd, raw, limit, what="the file")
            except ValueError as error:
                found.append(Submission(path, owner, key, skipped=str(error)))
                continue
            except OSError as error:
                reason = _kind(stat.S_IFLNK) if error.errno == 40 else \
                    f"could not be read ({error.strerror})"
                found.append(Submission(path, owner, key, skipped=reason))
                continue
            found.append(Submission(path, owner, key, data))

    try:
        walk(root_fd, "", None, 0)
    finally:
        os.close(root_fd)
    return sorted(found, key=lambda s: s.path)


# --------------------------------------------------------------------- the answers

def load_answer(data, kind):
    """Turn exported bytes into an answer, trusting nothing about them.

    Parameters
    ----------
    data : bytes
        The content of ``<variable>.json`` or ``<variable>.npy``.
    kind : str
        ``"json"``, ``"npy"`` or ``"npy-scalar"`` (a NumPy scalar, returned as one).

    Returns
    -------
    object
        Python data (``None``, ``bool``, ``int``, ``float``, ``str``, lists and
        dicts of them) or a NumPy array or scalar of boolean, integer, float or
        complex type.

    Raises
    ------
    ValueError
        If the bytes are not such data (an ``.npy`` file that needs pickle, of
        another type, or a malformed file).

    Examples
    --------
    >>> load_answer(b"[1, 2.5]", "json")
    [1, 2.5]
    >>> import io, numpy as np
    >>> buffer = io.BytesIO(); np.save(buffer, np.float64(0.25)); print(repr(
    ...     load_answer(buffer.getvalue(), "npy-scalar")))
    np.float64(0.25)
    >>> buffer = io.BytesIO(); np.save(buffer, np.array([object()]), allow_pickle=True)
    >>> load_answer(buffer.getvalue(), "npy")
    Traceback (most recent call last):
    ...
    ValueError: the .npy answer is not a numeric array (ValueError)
    """
    import numpy as np

    if kind == "json":
        try:
            return json.loads(data.decode("utf-8"))
        except (ValueError, UnicodeDecodeError, RecursionError) as error:
            raise ValueError(f"the JSON answer is malformed ({type(error).__name__})") from None
    if kind not in ("npy", "npy-scalar"):
        raise ValueError(f"unknown kind of answer {kind!r}")
    if not data.startswith(b"\x93NUMPY"):
        raise ValueError("the .npy answer is not an .npy file")
    try:
        array = np.load(io.BytesIO(data), allow_pickle=False)
    except Exception as error:
        raise ValueError(f"the .npy answer is not a numeric array ({type(error).__name__})") \
            from None
    if not isinstance(array, np.ndarray) or array.dtype.kind not in "biufc":
        raise ValueError("the .npy answer is not a numeric array")
    if kind == "npy-scalar":
        if array.ndim != 0:
            raise ValueError("the .npy scalar has a shape")
        return array[()]
    return array


def _read_answers(scratch, nonce, manifest, variables, answer_bytes):
    """Variable -> (answer, None) or (None, why it scores 0), read from the export folder."""
    folder = scratch / "box" / f"export-{nonce}"
    answers = {}
    try:
        folder_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        folder_fd = None
    try:
        for name in variables:
            entry = manifest.get(name) if isinstance(manifest, dict) else None
            if entry == "missing":
                answers[name] = (None, None)  # the check says "no answer yet"
            elif not isinstance(entry, str) or not _NAME.match(name):
                answers[name] = (None, "the answer was not exported (the notebook did not "
                                       "reach the end, or the export failed)")
            elif entry.startswith("error: "):
                answers[name] = (None, "the answer cannot be graded: it is not data that "
                                       "can be exported (" + _sandbox.safe_error(
                                           *(entry[7:].split(": ", 1) + [""])[:2]) + ")")
            elif entry in ("json", "npy", "npy-scalar") and folder_fd is not None:
                suffix = ".json" if entry == "json" else ".npy"
                try:
                    data = _read_regular_file(folder_fd, name + suffix, answer_bytes)
                    answers[name] = (load_answer(data, entry), None)
                except (OSError, ValueError) as error:
                    why = error if isinstance(error, ValueError) else error.strerror
                    answers[name] = (None, f"the exported answer could not be read ({why})")
            else:
                answers[name] = (None, "the answer was not exported")
    finally:
        if folder_fd is not None:
            os.close(folder_fd)
    return answers


#: The reason of an exercise compared with the answer key when there is no key.
NO_KEY = ("not graded: there is no answer key for this exercise (grade with an "
          "assignment, or pass --answer-key)")


def _check(label, answer, expected):
    """Judge ``answer`` (data) for ``label`` in this process: ``(passed, reason, checked)``.

    ``expected`` maps labels to the answer key's values. ``checked`` says whether
    the reason is the check's own (withheld from ``feedback="verdict"``).
    """
    from ..checks import REGISTRY

    entry = REGISTRY[label]
    if entry.needs_key and label not in expected:
        return False, NO_KEY, False
    try:
        passed, reason = entry.grade(answer, expected[label]) if entry.needs_key else \
            entry.grade(answer)
    except Exception as error:  # a check must not raise; if it does, the row goes on
        return False, f"the check failed on this answer ({type(error).__name__})", True
    return bool(passed), _one_line(reason), True


# ------------------------------------------------------------------------- grading

def _resolve_sandbox(sandbox):
    """The ``bwrap`` to use (or ``None``), raising in ``"require"`` mode without one."""
    if sandbox not in SANDBOX_MODES:
        raise ValueError(f"sandbox must be one of {SANDBOX_MODES}, got {sandbox!r}")
    if sandbox == "off":
        return None, "the sandbox was switched off"
    path, why = find_bwrap()
    if path is None and sandbox == "require":
        raise SandboxUnavailable(f"a sandbox is required but {why}; install bubblewrap "
                                 "(Debian/Ubuntu: sudo apt-get install bubblewrap)")
    return path, why


def _resolve_cgroups(mode):
    if mode not in CGROUP_MODES:
        raise ValueError(f"cgroups must be one of {CGROUP_MODES}, got {mode!r}")
    if mode == "off":
        return None, "cgroups were switched off"
    groups, why = find_cgroups()
    if groups is None and mode == "require":
        raise SandboxUnavailable(f"a cgroup per submission is required but none can be "
                                 f"made here ({why})")
    return groups, why


def _bar():
    return "!" * 78


def _warn_unsandboxed(why):
    print(f"{_bar()}\nWARNING: submissions are NOT sandboxed: {why}.\n"
          "Each notebook runs as your user, with your files, network and processes;\n"
          "it can read or change other submissions and grades.csv. The verdicts are\n"
          "still computed by the grader, not by the notebook. Install bubblewrap\n"
          "(sudo apt-get install bubblewrap) or pass --require-sandbox to refuse.\n"
          f"{_bar()}", file=sys.stderr)


def _warn_no_cgroup(why):
    print(f"{_bar()}\nWARNING: no cgroup per submission ({why}).\n"
          "A submission's total memory, processes and CPU share are NOT capped (only\n"
          "each process's address space): several processes can exhaust memory, and\n"
          "busy loops slow down the notebooks graded next to it. Rows that time out are\n"
          "re-graded alone at the end. To have the caps, grade as root on a cgroup v2\n"
          "machine or inside a delegated scope, e.g.\n"
          "  systemd-run --user --scope -p Delegate=yes make grade SUBMISSIONS=...\n"
          f"{_bar()}", file=sys.stderr)


def grade_notebook(path, labels=None, *, timeout=180.0, max_output_bytes=5_000_000,
                   sandbox="auto", limits=None, assignment=None, cgroups="off",
                   answer_key=None):
    """Execute one submitted notebook in its sandbox and check its answers here.

    Parameters
    ----------
    path : path-like
        The submitted ``.ipynb`` file; read once without following a symbolic
        link, never modified.
    labels : list of str, optional
        The auto-graded exercises to check. Default: those of ``assignment``'s
        notebook of the same file name; without an assignment, those the
        submission itself states (:func:`auto_graded_labels`, which a student
        can change: use an assignment to grade).
    timeout : float, optional
        Seconds for the notebook's own cells; the whole run is killed 60 s
        after the time limit.
    max_output_bytes : int, optional
        Output budget of the notebook; a cell that exceeds it is interrupted.
    sandbox : {"auto", "require", "off"}, optional
        Run inside ``bubblewrap`` when it works (``"auto"``), refuse without it
        (``"require"``), or never (``"off"``).
    limits : Limits, optional
        All limits at once (``timeout`` and ``max_output_bytes`` are then ignored).
    assignment : path-like or Assignment, optional
        Where the labels come from (see :func:`load_assignment`).
    cgroups : {"auto", "require", "off"}, optional
        Whether to cap the run's total resources with a cgroup.
    answer_key : AnswerKey or path-like, optional
        The expected answers of the compared exercises. Default: computed
        from ``assignment``'s notebook (:func:`compute_answer_key`); without
        either, a compared exercise is not graded (it scores 0, "no answer
        key").

    Returns
    -------
    NotebookGrade
        Status, reason and check results; an exercise whose answer was not
        exported as data counts as failed, with the reason.

    Raises
    ------
    ValueError
        If ``timeout`` or ``max_output_bytes`` is not positive.
    SandboxUnavailable
        With ``sandbox="require"`` when ``bwrap`` is missing or does not work.

    Examples
    --------
    A file that is not a notebook is marked without starting a kernel:

    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "broken.ipynb"
    >>> _ = path.write_text("{ not json")
    >>> grade = grade_notebook(path)
    >>> grade.status, grade.score
    ('invalid', 0)
    """
    if limits is None:
        limits = Limits(timeout=timeout, max_output_bytes=max_output_bytes)
    bwrap, _ = _resolve_sandbox(sandbox)
    groups, _ = _resolve_cgroups(cgroups)
    if assignment is not None and not isinstance(assignment, Assignment):
        assignment = load_assignment(assignment)
    path = Path(path)
    parent_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        data = _read_regular_file(parent_fd, path.name, limits.notebook_bytes, what="the file")
        skipped = ""
    except ValueError as error:
        data, skipped = None, str(error)
    except OSError as error:
        data, skipped = None, ("a symbolic link (not followed)" if error.errno == 40
                               else f"could not be read ({error.strerror})")
    finally:
        os.close(parent_fd)
    key, _ = _match(path.name, assignment, None)
    submission = Submission(display_name(path.name), display_name(path.stem), key, data,
                            skipped)
    expected = _answer_key_for(answer_key, assignment, [submission] if data else [], limits,
                               bwrap, groups, None, 1, False)
    return _grade(submission, labels, limits, bwrap, assignment, groups, expected)


def _answer_key_for(answer_key, assignment, submissions, limits, bwrap, groups, out, jobs,
                    echo):
    """``label -> expected value`` for grading ``submissions``: the given key, or one
    computed from the assignment (cached in ``out``), or nothing without either."""
    from ..checks import REGISTRY
    from .answer_key import (
        KEY_FILE,
        AnswerKey,
        _compute,
        load_cached_key,
        notebook_sha256,
        read_answer_key,
        save_cached_key,
    )

    needed = [] if assignment is None else \
        [name for name in assignment.notebooks if any(s.assignment == name for s in submissions)]
    if answer_key is not None:
        key = answer_key if isinstance(answer_key, AnswerKey) else read_answer_key(answer_key)
        missing = [label for name in needed for label in assignment.notebooks[name][1]
                   if REGISTRY[label].needs_key and label not in key]
        if missing:
            raise ValueError(f"the answer key has no value for {', '.join(missing)}; compute "
                             "it with: python -m resnet_theory.homework answer-key "
                             "--assignment <notebook or folder> --out <key.json>")
        for name in needed:
            entry = key.notebooks.get(name)
            path = assignment.notebooks[name][3]
            if entry is not None and entry.sha256 and \
                    entry.sha256 != notebook_sha256(Path(path).read_bytes()):
                print(f"warning: the answer key was computed from another version of {path} "
                      "(its SHA-256 differs); it is used as given", file=sys.stderr)
        return key.answers
    if assignment is None:
        return {}
    cache = None if out is None else Path(out) / KEY_FILE
    cached = load_cached_key(cache, echo=echo) if cache is not None else None
    key = _compute(assignment, needed, limits, bwrap, groups, cached, jobs, echo)
    if cache is not None and key.notebooks:
        save_cached_key(key, cache, cached)
    return key.answers


def _grade(submission, labels, limits, bwrap, assignment, groups=None, key_values=None):
    from ..checks import REGISTRY

    key_values = {} if key_values is None else key_values
    base = {"student": submission.student, "assignment": submission.assignment}
    if submission.skipped:
        return NotebookGrade(submission.path, "skipped", _one_line(submission.skipped), {},
                             **base)
    expected = None
    if labels is not None:
        expected = list(labels)
    elif assignment is not None:
        if not submission.assignment:
            names = ", ".join(title for title, *_ in assignment.notebooks.values())
            return NotebookGrade(submission.path, "invalid", _one_line(
                f"not a notebook of the assignment (its notebooks: {names})"), {}, **base)
        expected = list(assignment.notebooks[submission.assignment][1])
    try:
        notebook = nbformat.reads(submission.data.decode("utf-8"), as_version=4)
        present = auto_graded_labels(notebook)
    except Exception as error:
        return NotebookGrade(submission.path, "invalid",
                             _one_line(f"not a readable notebook ({type(error).__name__})"),
                             {label: (False, "not graded: the file is not a readable notebook")
                              for label in expected or []}, **base)
    if expected is None:
        expected = present
    for label in expected:
        if label not in REGISTRY:
            raise ValueError(f"labels: no check is registered for {label!r}")
    removed = [label for label in expected if label not in present]
    graded = [label for label in expected if label in present]
    variables = {label: REGISTRY[label].answer_variable for label in graded}
    nonce = secrets.token_hex(16)
    payload, scratch = run_submission(submission.data, submission.path.rsplit("/", 1)[-1],
                                      variables, nonce, limits, bwrap=bwrap, cgroups=groups)
    try:
        status = payload.get("status")
        status = status if status in _STATUS_ORDER else "grader-error"
        reason = payload.get("reason", "")
        reason = _one_line(reason) if isinstance(reason, str) else ""
        if payload.get("interrupted"):
            status = "interrupted"
        answers = _read_answers(scratch, nonce, payload.get("answers", {}),
                                sorted(set(variables.values())), limits.answer_bytes)
    finally:
        remove_scratch(scratch)
    results, checked = {}, []
    for label in expected:
        if label in removed:
            results[label] = (False, "exercise removed: the notebook no longer states it "
                                     f"nor assigns {REGISTRY[label].answer_variable}")
            continue
        answer, why = answers.get(variables[label], (None, "the answer was not exported"))
        if why is not None:
            if status != "ok" and reason:
                why += f"; the run ended with: {reason}"
            results[label] = (False, _one_line(why))
        else:
            passed, why, own = _check(label, answer, key_values)
            results[label] = (passed, why)
            if own:
                checked.append(label)
    seconds = payload.get("elapsed", 0.0)
    return NotebookGrade(submission.path, status, reason, results,
                         "bubblewrap" if bwrap else "none",
                         seconds=seconds if isinstance(seconds, float) else 0.0,
                         checked=tuple(checked), **base)


# -------------------------------------------------------------------------- reports

def _grades_rows(grades, labels):
    yield ["notebook", "status", "reason", "score", *labels]
    for grade in grades:
        cells = ["" if label not in grade.results else str(int(grade.results[label][0]))
                 for label in labels]
        yield [grade.notebook, grade.status, grade.reason,
               f"{grade.score}/{len(grade.results)}", *cells]


def _grade_labels(grades, assignment=None):
    found = {label for grade in grades for label in grade.results}
    if assignment is not None:
        ordered = [label for label in assignment.labels() if label in found]
        return ordered + sorted(found - set(ordered))
    return sorted(found)


#: ``feedback="verdict"``: what replaces a check's explanation in the feedback files.
WITHHELD = ("the check's explanation is not part of graded feedback (run the check in "
            "your notebook)")


def _feedback_text(grades, feedback="full"):
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


def _student_of(grade):
    return grade.student or grade.notebook.rsplit("/", 1)[-1].rsplit(".", 1)[0]


def _by_student(grades):
    students = {}
    for grade in grades:
        students.setdefault(_student_of(grade), []).append(grade)
    return students


def write_grades(grades, folder, *, assignment=None, feedback="full"):
    """Write ``grades.csv`` and ``feedback/<student>.txt`` into ``folder``.

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
    exercise. ``score`` is ``passed/total`` over the notebook's exercises. Every
    file is written to a temporary file and renamed over its target; a
    symbolic link there is replaced, never followed, and a ``feedback`` that
    is a symbolic link or a file is refused (``ValueError``).

    Examples
    --------
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> grade = NotebookGrade("a.ipynb", "ok", "", {"ex-demo-one": (True, "right")})
    >>> print(write_grades([grade], folder).read_text().strip())
    notebook,status,reason,score,ex-demo-one
    a.ipynb,ok,,1/1,1
    """
    folder = Path(folder)
    check_outputs(folder)
    grades = sorted(grades, key=lambda g: g.notebook)
    labels = _grade_labels(grades, assignment)
    folder_fd = _open_output_folder(folder)
    try:
        _write_atomic(folder_fd, "grades.csv", _csv_text(_grades_rows(grades, labels)))
    finally:
        os.close(folder_fd)
    feedback_fd = _open_output_folder(folder / "feedback", create=True)
    try:
        taken = set()
        for student, rows in sorted(_by_student(grades).items()):
            stem = _safe_file_stem(student, taken)
            _write_atomic(feedback_fd, f"{stem}.txt", _feedback_text(rows, feedback))
    finally:
        os.close(feedback_fd)
    return folder / "grades.csv"


def _gradebook_rows(grades, assignment, marks=None):
    """One row per student: a column per exercise, auto-graded and marked by hand."""
    students = _by_student(grades)
    if assignment is not None:
        notebooks = [key for key in assignment.notebooks
                     if any(g.assignment == key for g in grades)]
        auto = [label for key in notebooks for label in assignment.notebooks[key][1]]
        manual = [label for key in notebooks for label in assignment.notebooks[key][2]
                  if label not in assignment.notebooks[key][1]]
    else:
        notebooks, auto, manual = [], _grade_labels(grades), []
    marks = marks or {}
    manual += sorted({label for row in marks.values() for label in row} - set(manual) -
                     set(auto))
    yield ["student", "notebooks", "auto", "auto_out_of", "manual", "total", "problems",
           *auto, *manual]
    for student, rows in sorted(students.items()):
        passed = {}
        for grade in rows:
            for label, (ok, _) in grade.results.items():
                passed[label] = max(passed.get(label, 0), int(ok))
        handed = {g.assignment for g in rows if g.status not in ("skipped",)}
        problems = [f"{g.notebook}: {g.status}" for g in rows if g.status != "ok"]
        if assignment is not None:
            for key in notebooks:
                if key not in handed:
                    problems.append(f"{assignment.notebooks[key][0]}: not handed in")
        cells = [passed.get(label, 0) if assignment is not None or label in passed else ""
                 for label in auto]
        mine = marks.get(student, {})
        manual_cells = [mine.get(label, "") for label in manual]
        manual_total = sum(v for v in manual_cells if isinstance(v, (int, float)))
        auto_total = sum(v for v in cells if isinstance(v, int))
        out_of = len(auto) if assignment is not None else sum(1 for v in cells if v != "")
        total = auto_total + manual_total
        yield [student, len(handed), auto_total, out_of, _number(manual_total),
               _number(total), "; ".join(problems), *cells, *map(_number, manual_cells)]


def _number(value):
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def read_marks(path):
    """``{student: {label: mark}}`` from a filled-in ``manual-marks.csv``.

    The first column is the student (as in ``gradebook.csv``), every other
    column an exercise label; empty cells are skipped, other cells must be
    numbers (a leading ``'`` that escaped a formula is allowed).
    """
    folder_fd = os.open(Path(path).parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        data = _read_regular_file(folder_fd, Path(path).name, 20_000_000, what="the marks")
    finally:
        os.close(folder_fd)
    rows = list(csv.reader(io.StringIO(data.decode("utf-8-sig"))))
    if not rows:
        return {}
    header, marks = rows[0], {}
    for number, row in enumerate(rows[1:], start=2):
        if not row or not row[0].strip():
            continue
        student = row[0][1:] if row[0].startswith("'") else row[0]
        for label, cell in zip(header[1:], row[1:], strict=False):
            cell = cell.strip().lstrip("'")
            if not cell or not label.strip():
                continue
            try:
                value = float(cell)
            except ValueError:
                raise ValueError(f"{path}, line {number}: the mark {cell!r} for {label} is "
                                 "not a number") from None
            marks.setdefault(student, {})[label.strip()] = value
    return marks


def write_gradebook(grades, folder, *, assignment=None, marks=None):
    """Write ``gradebook.csv``: one row per student, a column per exercise, totals.

    Columns: ``student``, ``notebooks`` (handed in), ``auto`` (auto-graded
    exercises passed, across the student's notebooks), ``auto_out_of``,
    ``manual`` (sum of the marks merged from ``manual-marks.csv``), ``total``,
    ``problems`` (notebooks that did not run cleanly or were not handed in),
    then one column per auto-graded exercise (``1``/``0``) and one per
    exercise marked by hand.
    """
    folder_fd = _open_output_folder(folder)
    try:
        _write_atomic(folder_fd, "gradebook.csv",
                      _csv_text(_gradebook_rows(grades, assignment, marks)))
    finally:
        os.close(folder_fd)
    return Path(folder) / "gradebook.csv"


def merge_marks(folder, marks_path=None):
    """Merge a filled-in ``manual-marks.csv`` into ``gradebook.csv`` (no re-grading).

    Reads the auto-graded columns back from ``gradebook.csv``, replaces the
    manual columns with the marks and recomputes ``manual`` and ``total``.
    Returns the path of ``gradebook.csv``.
    """
    folder = Path(folder)
    check_outputs(folder)
    marks = read_marks(marks_path or folder / "manual-marks.csv")
    folder_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        text = _read_regular_file(folder_fd, "gradebook.csv", 50_000_000,
                                  what="gradebook.csv").decode("utf-8")
    finally:
        os.close(folder_fd)
    rows = list(csv.reader(io.StringIO(text)))
    header = rows[0]
    fixed = header.index("problems") + 1
    auto_labels = [label for label in header[fixed:]
                   if re.fullmatch(r"ex-[\w-]+", label) and _is_auto(label)]
    manual = [label for label in header[fixed:] if label not in auto_labels]
    manual += sorted({label for row in marks.values() for label in row} - set(manual) -
                     set(auto_labels))
    out = [header[:fixed] + auto_labels + manual]
    for row in rows[1:]:
        record = dict(zip(header, row, strict=False))
        student = record["student"][1:] if record["student"].startswith("'") else \
            record["student"]
        mine = marks.get(student, {})
        manual_cells = [_number(mine[label]) if label in mine else "" for label in manual]
        manual_total = sum(v for v in manual_cells if v != "")
        auto_total = int(record.get("auto") or 0)
        record["manual"], record["total"] = _number(manual_total), _number(
            auto_total + manual_total)
        record["student"] = student
        out.append([record[name] for name in header[:fixed]] +
                   [record.get(label, "") for label in auto_labels] + manual_cells)
    folder_fd = _open_output_folder(folder)
    try:
        _write_atomic(folder_fd, "gradebook.csv", _csv_text(out))
    finally:
        os.close(folder_fd)
    return folder / "gradebook.csv"


def _is_auto(label):
    from ..checks import REGISTRY

    return label in REGISTRY


def _answer_text(notebook, label):
    """What a student wrote after the statement of ``label`` (up to the next exercise)."""
    cells, collecting = [], False
    for cell in notebook.cells:
        labels = exercise_labels(nbformat.v4.new_notebook(cells=[cell])) \
            if cell.cell_type == "markdown" else []
        if collecting and (labels or "{solution" in cell.source):
            break
        if label in labels:
            collecting = True
            source = cell.source
            tail = source.split("```", 2)[-1] if source.count("```") >= 2 else ""
            tail = tail.split("\n", 1)[1] if "\n" in tail else ""
            if tail.strip():
                cells.append(("markdown", tail.strip(), ""))
            continue
        if collecting:
            outputs = "".join(o.get("text", "") for o in cell.get("outputs", [])
                              if o.get("output_type") == "stream")[:5000]
            cells.append((cell.cell_type, cell.source[:20000], outputs))
    return cells


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
<code>{label}</code> of <code>manual-marks.csv</code>, then run
<code>python -m resnet_theory.homework merge-marks &lt;folder&gt;</code>.
The answers are shown as text: nothing a student wrote is rendered or run.</p>
<h2>The exercise</h2>
<pre>{statement}</pre>
{answers}
</body></html>
"""


def write_written_answers(grades, submissions, folder, assignment):
    """One HTML page per exercise marked by hand, with every student's answer.

    Writes ``written-answers/<label>.html`` (the statement, then each
    student's cells after it, escaped as text: no HTML, Markdown or script of
    a student is rendered; a strict Content-Security-Policy forbids scripts)
    and ``manual-marks.csv`` (one row per student, one empty column per such
    exercise; an existing file is kept, new students are added).
    Returns the list of labels.
    """
    written = assignment.written()
    if not written:
        return []
    by_path = {s.path: s for s in submissions}
    students = sorted(_by_student(grades))
    pages_fd = _open_output_folder(Path(folder) / "written-answers", create=True)
    try:
        for label, (key, statement) in written.items():
            blocks = []
            for student in students:
                rows = [g for g in grades if _student_of(g) == student and
                        g.assignment == key and by_path.get(g.notebook) is not None and
                        by_path[g.notebook].data is not None]
                cells = []
                for grade in rows:
                    try:
                        notebook = nbformat.reads(by_path[grade.notebook].data.decode("utf-8"),
                                                  as_version=4)
                    except Exception:
                        continue
                    cells += _answer_text(notebook, label)
                body = "".join(
                    f"<pre>{html.escape(source)}</pre>" +
                    (f"<pre class=\"out\">{html.escape(out)}</pre>" if out else "")
                    for _, source, out in cells if source.strip()) or \
                    '<p class="empty">(no answer)</p>'
                blocks.append(f"<section id=\"{html.escape(_safe_file_stem(student, set()))}\">"
                              f"<h3>{html.escape(student)}</h3>{body}</section>")
            page = _PAGE.format(title=html.escape(f"Written answers: {label}"),
                                label=html.escape(label), statement=html.escape(statement),
                                answers="\n".join(blocks))
            _write_atomic(pages_fd, f"{label}.html", page)
    finally:
        os.close(pages_fd)
    marks_path = Path(folder) / "manual-marks.csv"
    existing = read_marks(marks_path) if marks_path.is_file() else {}
    labels = list(written)
    rows = [["student", *labels]]
    for student in sorted(set(students) | set(existing)):
        mine = existing.get(student, {})
        rows.append([student, *[_number(mine[label]) if label in mine else ""
                                for label in labels]])
    folder_fd = _open_output_folder(folder)
    try:
        _write_atomic(folder_fd, "manual-marks.csv", _csv_text(rows))
    finally:
        os.close(folder_fd)
    return labels


# --------------------------------------------------------------------- the folder

def _default_jobs():
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def _may_run(submission, assignment):
    """Whether grading ``submission`` would start a kernel (it parses, it is assigned)."""
    if submission.data is None or (assignment is not None and not submission.assignment):
        return False
    try:
        return isinstance(json.loads(submission.data.decode("utf-8")), dict)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return False


class _Journal:
    """``grades.csv`` while grading: the header at once, then each row as it finishes."""

    def __init__(self, folder, labels):
        self.labels, self.lock = labels, threading.Lock()
        folder_fd = _open_output_folder(folder)
        try:
            _write_atomic(folder_fd, "grades.csv", _csv_text([["notebook", "status", "reason",
                                                               "score", *labels]]))
            flags = os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
            self.fd = os.open("grades.csv", flags, dir_fd=folder_fd)
        finally:
            os.close(folder_fd)

    def append(self, grade):
        rows = list(_grades_rows([grade], self.labels))[1:]
        with self.lock:
            os.write(self.fd, _csv_text(rows).encode("utf-8"))
            os.fsync(self.fd)

    def close(self):
        os.close(self.fd)


def _format_seconds(seconds):
    seconds = int(round(seconds))
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


def grade_folder(folder, *, timeout=180.0, max_output_bytes=5_000_000, echo=False,
                 jobs=1, sandbox="auto", limits=None, assignment=None, pattern=None,
                 out=None, cgroups="auto", allow_root=True, feedback="full",
                 answer_key=None):
    """Grade every notebook in ``folder`` and write the results.

    Parameters
    ----------
    folder : path-like
        The submissions: notebooks at the top level and/or one folder per
        student (see :func:`collect_submissions`).
    timeout, max_output_bytes, sandbox, limits
        See :func:`grade_notebook`.
    echo : bool, optional
        Print progress (n of N, elapsed, estimated remaining) and a summary.
    jobs : int or None, optional
        How many notebooks to grade at once (``None``: the number of cores).
    assignment : path-like or Assignment, optional
        The notebooks whose exercises count (``make grade`` passes the book).
        Without one, each submission's own exercises count, which a student
        can change: for tests and single notebooks only.
    pattern : str, optional
        Regular expression with groups ``student`` and ``notebook`` for the
        file names of a flat folder.
    out : path-like, optional
        Where to write the results (default: ``folder``).
    cgroups : {"auto", "require", "off"}, optional
        A cgroup per submission (total memory, processes, CPU share) where the
        machine allows it; without one, a loud warning, and every row that
        timed out is graded again alone at the end.
    feedback : {"full", "verdict"}, optional
        See :func:`write_grades` (the command line gives ``"verdict"``).
    allow_root : bool, optional
        ``False`` refuses to run any submission as root (the command line's
        default; pass ``--allow-root`` there).
    answer_key : AnswerKey or path-like, optional
        The expected answers of the compared exercises (trusted as given).
        Default, with an assignment: computed from the assignment's notebooks
        that were handed in (each run once, in the same sandbox and limits),
        and cached in ``out / "answer-key.json"`` keyed by each notebook's
        SHA-256, so a later run reuses it until a notebook changes (see
        :func:`resnet_theory.homework.compute_answer_key`). Without an assignment or
        a key, compared exercises are not graded.

    Returns
    -------
    list of NotebookGrade
        One per notebook (skipped entries included), sorted by path.

    Raises
    ------
    ValueError
        If ``folder`` is not a directory, ``jobs`` is not a positive integer, an
        output target is a symbolic link or of the wrong kind, (with
        ``allow_root=False``) the grader runs as root, or the answer key cannot
        be computed from the assignment or lacks an exercise.
    SandboxUnavailable
        With ``sandbox="require"`` when ``bwrap`` is missing or does not work.
    GradingInterrupted
        After SIGINT or SIGTERM: the sandboxes are stopped, and what was graded
        is written before it is raised.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "broken.ipynb").write_text("{ not json")
    >>> [(grade.notebook, grade.status) for grade in grade_folder(folder, sandbox="off")]
    [('broken.ipynb', 'invalid')]
    >>> sorted(path.name for path in folder.iterdir())
    ['broken.ipynb', 'feedback', 'gradebook.csv', 'grades.csv']
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"folder: {folder} is not a directory of submitted notebooks")
    jobs = _default_jobs() if jobs is None else jobs
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a positive integer, got {jobs!r}")
    if feedback not in ("full", "verdict"):
        raise ValueError(f"feedback must be 'full' or 'verdict', got {feedback!r}")
    if limits is None:
        limits = Limits(timeout=timeout, max_output_bytes=max_output_bytes)
    out = folder if out is None else Path(out)
    if not out.is_dir():
        raise ValueError(f"out: {out} is not a directory")
    check_outputs(out)
    bwrap, why = _resolve_sandbox(sandbox)
    groups, no_group = _resolve_cgroups(cgroups)
    if assignment is not None and not isinstance(assignment, Assignment):
        assignment = load_assignment(assignment)
    _sandbox.reset_stop()
    stale = _sandbox.clean_stale_scratch()
    if groups is not None:
        groups.clean_stale()
    reserved = OUTPUT_NAMES if out.resolve() == folder.resolve() else ()
    submissions = collect_submissions(folder, assignment=assignment,
                                      limit=limits.notebook_bytes, pattern=pattern,
                                      reserved=reserved)
    runnable = [s for s in submissions if _may_run(s, assignment)]
    if runnable and not allow_root and hasattr(os, "geteuid") and os.geteuid() == 0:
        raise ValueError("refusing to grade as root: a submission's code would run as root "
                         "(Linux applies no process limit to root, and without the sandbox "
                         "it could change anything on the machine). Grade as an ordinary "
                         "user; --allow-root is for throwaway CI containers only")
    readable = [s for s in submissions if s.data is not None]
    if readable and bwrap is None and sandbox == "auto":
        _warn_unsandboxed(why)
    if readable and groups is None and cgroups == "auto":
        _warn_no_cgroup(no_group)
    if echo and stale:
        print(f"removed {stale} scratch folder(s) left by a grader that was killed",
              file=sys.stderr)
    if echo:
        skipped = [s for s in submissions if s.skipped]
        for entry in skipped:
            print(f"skipped {entry.path}: {entry.skipped}", file=sys.stderr)
    labels_ahead = []
    if assignment is not None:
        keys = {s.assignment for s in submissions}
        labels_ahead = [label for key in assignment.notebooks if key in keys
                        for label in assignment.notebooks[key][1]]
    done, started = [], monotonic()
    interrupted = threading.Event()
    total = len(submissions)
    expected = {}

    def report(grade):
        done.append(grade)
        journal.append(grade)
        if echo:
            elapsed = monotonic() - started
            left = elapsed / len(done) * (total - len(done))
            print(f"[{len(done)}/{total}] {grade.notebook}: {grade.status}, "
                  f"{grade.score}/{len(grade.results)}"
                  + (f" ({grade.reason})" if grade.reason else "")
                  + f"  [{_format_seconds(elapsed)} elapsed, about {_format_seconds(left)} left]",
                  flush=True)

    def one(submission):
        if interrupted.is_set():
            return None
        try:
            return _grade(submission, None, limits, bwrap, assignment, groups, expected)
        except Exception as error:  # the grader itself must go on with the next row
            return NotebookGrade(submission.path, "grader-error",
                                 _one_line(f"the grader failed ({type(error).__name__})"),
                                 student=submission.student,
                                 assignment=submission.assignment)

    def on_signal(signum, frame):
        interrupted.set()
        _sandbox.stop_all_runs()

    previous = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, on_signal)
    journal = None
    try:
        try:
            expected.update(_answer_key_for(answer_key, assignment, runnable, limits, bwrap,
                                            groups, out, jobs, echo))
        except ValueError:
            if interrupted.is_set():
                raise GradingInterrupted([]) from None
            raise
        if interrupted.is_set():
            raise GradingInterrupted([])
        journal = _Journal(out, labels_ahead)
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(one, s) for s in submissions]
            for future in as_completed(futures):
                grade = future.result()
                if grade is None or interrupted.is_set() and grade.status in (
                        "grader-error", "interrupted", "timeout", "kernel-died"):
                    continue  # stopped by the interrupt: not graded
                report(grade)
        if groups is None and not interrupted.is_set():
            again = [s for s in submissions
                     if any(g.notebook == s.path and g.status == "timeout" for g in done)]
            if again and echo:
                print(f"re-grading {len(again)} timed-out notebook(s) alone (no cgroup "
                      "capped their neighbours)", file=sys.stderr)
            for submission in again:
                if interrupted.is_set():
                    break
                grade = one(submission)
                if grade is not None and not interrupted.is_set():
                    done[:] = [g for g in done if g.notebook != submission.path]
                    report(replace(grade, reason=_one_line(
                        grade.reason + ("; " if grade.reason else "") +
                        "graded again alone after a timeout")))
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if journal is not None:
            journal.close()
    grades = sorted(done, key=lambda g: g.notebook)
    write_grades(grades, out, assignment=assignment, feedback=feedback)
    marks_path = out / "manual-marks.csv"
    if assignment is not None:
        write_written_answers(grades, submissions, out, assignment)
    marks = read_marks(marks_path) if marks_path.is_file() else None
    write_gradebook(grades, out, assignment=assignment, marks=marks)
    if echo:
        _summary(grades, submissions, monotonic() - started, out, interrupted.is_set())
    if interrupted.is_set():
        raise GradingInterrupted(grades)
    return grades


def _summary(grades, submissions, seconds, out, interrupted):
    counts = {}
    for grade in grades:
        counts[grade.status] = counts.get(grade.status, 0) + 1
    ran = [g for g in grades if g.sandbox]
    students = _by_student(grades)
    print(f"\n{'INTERRUPTED: ' if interrupted else ''}graded {len(grades)} of "
          f"{len(submissions)} notebooks of {len(students)} students in "
          f"{_format_seconds(seconds)}"
          + (f" ({seconds / len(ran):.1f} s per notebook run)" if ran else ""))
    print("  " + ", ".join(f"{counts[s]} {s}" for s in _STATUS_ORDER if s in counts))
    auto = sum(g.score for g in grades)
    out_of = sum(len(g.results) for g in grades)
    if out_of:
        print(f"  auto-graded exercises passed: {auto} of {out_of}")
    print(f"  results in {out}: grades.csv, gradebook.csv, feedback/"
          + (", written-answers/, manual-marks.csv" if (out / "written-answers").is_dir()
             else ""))

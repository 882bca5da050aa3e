r"""The submissions: the untrusted folder read without following a link, and whose each file is.

:func:`collect_submissions` lists the folder without following a single
symbolic link: only regular files named ``*.ipynb`` (any case) of at most
:attr:`~resnet_theory.homework.sandbox.Limits.notebook_bytes` are read, each
opened with ``O_NOFOLLOW | O_NONBLOCK`` and checked with ``fstat``; symbolic
links, FIFOs, devices, sockets, oversized files and directories named like a
notebook are listed as *skipped* with the reason, and so is a student's folder
that holds no notebook (the student is then in the grade book with 0
notebooks). Names that are not UTF-8, contain control characters or are not in
Unicode NFC form are shown with escapes (``\xff``, ``\u0301``), so that two
names never look the same.

A student is identified by exactly the name shown (the folder's, or the part
of a top-level file name before the assignment's notebook name), and
:func:`refuse_ambiguous` makes each notebook of the assignment count once per
student: two students whose names are the same after normalisation (case,
Unicode compatibility form, blanks), such as ``Alice/`` and ``alice/``, are
refused with both file names, and several copies of one notebook handed in by
one student (``bob/example_one.ipynb``, ``bob/v2/example_one.ipynb``,
``bob_example_one.ipynb``) are a problem reported on each copy: none of them is
graded, so copies are not guesses.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import unicodedata
from dataclasses import dataclass, replace

from .assignment import notebook_key
from .files import display_name, is_grader_temporary, read_regular_file

__all__ = ["Submission", "collect_submissions", "refuse_ambiguous", "identity_key",
           "shard_of", "parse_shard", "match_name"]

_IGNORED = {".ipynb_checkpoints", "__MACOSX", ".DS_Store"}
_MAX_DEPTH = 4
_MAX_ENTRIES = 100_000
#: The reason of a student's folder without a notebook.
EMPTY_FOLDER = "the folder holds no notebook"


@dataclass(frozen=True)
class Submission:
    """One entry of the submissions folder, read (or skipped) without following links.

    ``path`` is the display path, ``student`` the owner, ``assignment`` the key
    of the assignment notebook it matches (empty: none), ``data`` the bytes
    read (``None`` when skipped) and ``skipped`` the reason it was not read.
    ``refused`` is ``(status, reason)`` when it is read but not graded (a copy of
    a notebook handed in more than once, a name that collides with another).
    """

    path: str
    student: str
    assignment: str = ""
    data: bytes | None = None
    skipped: str = ""
    refused: tuple = ()


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


def match_name(name, assignment, pattern):
    """``(assignment key, student from the file name or None)`` of a notebook's file name."""
    if pattern is not None:
        found = pattern.fullmatch(name)
        if found:
            notebook = found.group("notebook")
            if not notebook.lower().endswith(".ipynb"):
                notebook += ".ipynb"
            key = notebook_key(notebook)
            if assignment is None or key in assignment.notebooks:
                return key, found.group("student")
    key = notebook_key(name)
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
                        reserved=()):
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
        Top-level names the grader writes and never grades (with their
        temporary files and folders).

    Returns
    -------
    list of Submission
        Sorted by display path. Skipped entries carry the reason and no data;
        a student's folder without a notebook is one skipped entry
        (``"alice/"``).
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
            if depth == 0 and (raw in reserved or is_grader_temporary(raw, reserved)):
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
                before = len(found)
                try:
                    walk(child, path + "/", student if student is not None else shown,
                         depth + 1)
                finally:
                    os.close(child)
                if depth == 0 and len(found) == before and not raw.startswith("."):
                    found.append(Submission(path + "/", shown, skipped=EMPTY_FOLDER))
                continue
            if not stat.S_ISREG(info.st_mode):
                if notebook_like or not stat.S_ISDIR(info.st_mode):
                    owner = student or (shown[:-len(".ipynb")] if notebook_like else shown)
                    found.append(Submission(path, owner, skipped=_kind(info.st_mode)))
                continue
            if not notebook_like:
                continue  # data files, notes: not graded, not reported
            key, named = match_name(raw, assignment, pattern)
            owner = student if student is not None else (
                display_name(named) if named else shown[:-len(".ipynb")])
            try:
                data = read_regular_file(fd, raw, limit, what="the file")
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


_ESCAPE = re.compile(r"\\(\\|u[0-9a-f]{4})")


def identity_key(student):
    r"""The form of a student's name that two students must not share.

    The shown name with its ``\uNNNN`` escapes undone, in Unicode compatibility
    form (NFKC), case-folded, without surrounding blanks: ``Alice``, ``alice``,
    ``ALICE `` and ``Ａｌｉｃｅ`` are one identity; so are the NFC and NFD
    spellings of ``José``.

    Examples
    --------
    >>> identity_key("Alice") == identity_key(" alice") == identity_key("\uff21lice")
    True
    >>> identity_key("Jose\\u0301") == identity_key("Jos\u00e9")
    True
    """
    raw = _ESCAPE.sub(lambda m: "\\" if m.group(1) == "\\" else chr(int(m.group(1)[1:], 16)),
                      student)
    return unicodedata.normalize("NFKC", raw).casefold().strip()


def _copy_key(submission):
    name = submission.path.rsplit("/", 1)[-1]
    return submission.assignment or notebook_key(name)


def refuse_ambiguous(submissions):
    """Mark what must not be graded: colliding names, and copies of one notebook.

    Returns
    -------
    list of Submission
        The same entries; those refused carry ``refused = (status, reason)``:
        ``("invalid", ...)`` naming both files when two students' names are one
        identity (:func:`identity_key`), ``("duplicate", ...)`` listing every copy
        when one student handed in one notebook more than once.
    """
    by_identity = {}
    for submission in submissions:
        by_identity.setdefault(identity_key(submission.student), {}).setdefault(
            submission.student, []).append(submission.path)
    refused = {}
    for students in by_identity.values():
        if len(students) < 2:
            continue
        shown = "; ".join(f"{name!r} ({', '.join(paths)})"
                          for name, paths in sorted(students.items()))
        for _name, paths in students.items():
            for path in paths:
                refused[path] = ("invalid", f"the student names {shown} are the same after "
                                            "normalisation (case, Unicode form, blanks): "
                                            "rename one and grade again")
    copies = {}
    for submission in submissions:
        if submission.data is not None and submission.path not in refused:
            copies.setdefault((submission.student, _copy_key(submission)), []).append(
                submission.path)
    for (student, _), paths in copies.items():
        if len(paths) > 1:
            for path in paths:
                refused[path] = ("duplicate", f"handed in {len(paths)} times by {student} "
                                              f"({', '.join(paths)}): none is graded; keep "
                                              "one and grade again")
    return [replace(s, refused=refused[s.path]) if s.path in refused else s
            for s in submissions]


def shard_of(student, shards):
    """The shard (1 to ``shards``) that grades ``student``: a hash of the name, so that
    every shard, on any machine, makes the same split.

    Examples
    --------
    >>> shard_of("alice", 3) == shard_of("alice", 3), 1 <= shard_of("bob", 3) <= 3
    (True, True)
    """
    digest = hashlib.sha256(student.encode("utf-8", "surrogatepass")).hexdigest()
    return int(digest[:16], 16) % shards + 1


def parse_shard(text):
    """``(K, N)`` of ``"K/N"`` with ``1 <= K <= N`` (``ValueError`` otherwise).

    Examples
    --------
    >>> parse_shard("2/3")
    (2, 3)
    """
    found = re.fullmatch(r"\s*(\d{1,6})\s*/\s*(\d{1,6})\s*", str(text))
    if not found or not 1 <= int(found.group(1)) <= int(found.group(2)):
        raise ValueError(f"shard must be K/N with 1 <= K <= N, got {text!r}")
    return int(found.group(1)), int(found.group(2))

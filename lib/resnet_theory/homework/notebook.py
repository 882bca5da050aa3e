"""Grading one notebook: run it in its sandbox, read back its answers, judge them here.

:func:`grade_notebook` hands one notebook to
:func:`resnet_theory.homework.sandbox.run_submission`, reads the answers it
exported (:mod:`resnet_theory.homework.answers`) and runs every check of
:mod:`resnet_theory.checks` in this process, never in the kernel. The
exercises that count come from the assignment; the cells that hold the
student's written answers are run like every other, and their outputs in this
run come back with the grade (for the pages of written answers).
"""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

import nbformat

from .answers import judge, read_answers
from .assignment import Assignment, answer_cells, load_assignment
from .files import display_name, one_line, read_regular_file
from .gradebook import STATUS_ORDER, NotebookGrade
from .sandbox import Limits, export_folder, resolve_cgroups, resolve_sandbox, run_submission
from .scratch import remove_scratch
from .student import auto_graded_labels
from .submissions import Submission, match_name

__all__ = ["grade_notebook", "grade", "answer_key_for"]


def _payload_outputs(payload):
    outputs = payload.get("outputs")
    if not isinstance(outputs, dict):
        return {}
    return {key: value for key, value in list(outputs.items())[:10_000]
            if isinstance(key, str) and isinstance(value, str)}


def _not_graded(submission, expected, status, reason):
    results = {label: (False, f"not graded: {reason}") for label in expected or []}
    return NotebookGrade(submission.path, status, one_line(reason), results,
                         student=submission.student, assignment=submission.assignment)


def grade(submission, labels, limits, bwrap, assignment, groups=None, key_values=None):
    from ..checks import REGISTRY

    key_values = {} if key_values is None else key_values
    base = {"student": submission.student, "assignment": submission.assignment}
    if submission.skipped:
        return NotebookGrade(submission.path, "skipped", one_line(submission.skipped), {},
                             **base)
    expected = None
    if labels is not None:
        expected = list(labels)
    elif assignment is not None:
        if not submission.assignment:
            names = ", ".join(title for title, *_ in assignment.notebooks.values())
            return NotebookGrade(submission.path, "invalid", one_line(
                f"not a notebook of the assignment (its notebooks: {names})"), {}, **base)
        expected = list(assignment.notebooks[submission.assignment][1])
    if submission.refused:
        status, reason = submission.refused
        return _not_graded(submission, expected, status, reason)
    try:
        notebook = nbformat.reads(submission.data.decode("utf-8"), as_version=4)
        present = auto_graded_labels(notebook)
    except Exception as error:
        return NotebookGrade(submission.path, "invalid",
                             one_line(f"not a readable notebook ({type(error).__name__})"),
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
    cells = {}
    if assignment is not None and submission.assignment:
        cells = answer_cells(notebook, assignment.written_labels(submission.assignment))
    report = [index for found in cells.values() for index, kind, _ in found
              if kind == "code" and index is not None]
    nonce = secrets.token_hex(16)
    payload, scratch = run_submission(submission.data, submission.path.rsplit("/", 1)[-1],
                                      variables, nonce, limits, bwrap=bwrap, cgroups=groups,
                                      report=report)
    try:
        status = payload.get("status")
        status = status if status in STATUS_ORDER else "grader-error"
        reason = payload.get("reason", "")
        reason = one_line(reason) if isinstance(reason, str) else ""
        if payload.get("interrupted"):
            status = "interrupted"
        answers = read_answers(export_folder(scratch, nonce), payload.get("answers", {}),
                               sorted(set(variables.values())), limits.answer_bytes)
    finally:
        remove_scratch(scratch)
    outputs = _payload_outputs(payload)
    written = {label: [(kind, source, (outputs.get(str(index)) if kind == "code" else ""))
                       for index, kind, source in found]
               for label, found in cells.items()}
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
            results[label] = (False, one_line(why))
        else:
            passed, why, own = judge(label, answer, key_values)
            results[label] = (passed, why)
            if own:
                checked.append(label)
    seconds = payload.get("elapsed", 0.0)
    return NotebookGrade(submission.path, status, reason, results,
                         "bubblewrap" if bwrap else "none",
                         seconds=seconds if isinstance(seconds, float) else 0.0,
                         checked=tuple(checked), written=written, **base)


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
        Budget of the notebook's output and messages; a cell that exceeds it is
        interrupted.
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
    bwrap, _ = resolve_sandbox(sandbox)
    groups, _ = resolve_cgroups(cgroups)
    if assignment is not None and not isinstance(assignment, Assignment):
        assignment = load_assignment(assignment)
    path = Path(path)
    parent_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    try:
        data = read_regular_file(parent_fd, path.name, limits.notebook_bytes, what="the file")
        skipped = ""
    except ValueError as error:
        data, skipped = None, str(error)
    except OSError as error:
        data, skipped = None, ("a symbolic link (not followed)" if error.errno == 40
                               else f"could not be read ({error.strerror})")
    finally:
        os.close(parent_fd)
    key, _ = match_name(path.name, assignment, None)
    submission = Submission(display_name(path.name), display_name(path.stem), key, data,
                            skipped)
    expected = answer_key_for(answer_key, assignment, [submission] if data else [], limits,
                               bwrap, groups, None, 1, False)
    return grade(submission, labels, limits, bwrap, assignment, groups, expected)


def answer_key_for(answer_key, assignment, submissions, limits, bwrap, groups, out, jobs,
                    echo):
    """``label -> expected value`` for grading ``submissions``: the given key, or one
    computed from the assignment (cached in ``out``), or nothing without either."""
    from ..checks import REGISTRY
    from .answer_key import (
        KEY_FILE,
        AnswerKey,
        compute,
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
    key = compute(assignment, needed, limits, bwrap, groups, cached, jobs, echo)
    if cache is not None and key.notebooks:
        save_cached_key(key, cache, cached)
    return key.answers

"""Running a batch: grade a folder of submissions, several notebooks at once, and report.

Each notebook is graded by :func:`resnet_theory.homework.notebook.grade` (run in
its sandbox, judged here). :func:`grade_folder` grades a folder:
it checks every output path before anything runs, lists the submissions
(:mod:`resnet_theory.homework.submissions`: each student's notebook once,
copies and colliding names refused), validates the lecturer's marks, grades
several notebooks at once, appends each row to ``grades.csv`` as it finishes,
stops cleanly on SIGINT/SIGTERM, and writes the results
(:func:`resnet_theory.homework.gradebook.write_results`). With ``shard=(K, N)``
it grades the K-th of N parts of the folder (whole students, chosen by a hash
of their names), whose results :func:`resnet_theory.homework.gradebook.merge`
combines.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import sys
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import replace
from pathlib import Path
from time import monotonic

from . import sandbox as _sandbox
from .assignment import Assignment, load_assignment
from .files import display_name, one_line, remove_temporaries
from .gradebook import STATE_FILE, STATUS_ORDER, NotebookGrade, write_results, written_labels
from .marks import MARKS_FILE, take_signed_marks
from .notebook import answer_key_for, grade_notebook
from .notebook import grade as grade_one
from .sandbox import Limits, resolve_cgroups, resolve_sandbox
from .scratch import disk_cap, sandbox_user
from .submissions import (
    collect_submissions,
    parse_shard,
    refuse_ambiguous,
    shard_of,
)

__all__ = ["grade_notebook", "grade_folder", "GradingInterrupted", "OUTPUT_NAMES",
           "check_outputs", "caps"]

#: What the grader writes into the output folder (never graded, never followed).
OUTPUT_NAMES = ("grades.csv", "gradebook.csv", "feedback", "written-answers",
                MARKS_FILE, "answer-key.json", STATE_FILE)
_FOLDERS = ("feedback", "written-answers")


class GradingInterrupted(KeyboardInterrupt):
    """Raised by :func:`grade_folder` after SIGINT/SIGTERM, once what was done is written.

    ``grades`` holds the rows that finished.
    """

    def __init__(self, grades):
        super().__init__("grading was interrupted")
        self.grades = grades


def check_outputs(out):
    """Check every path the grader will write in ``out``, before anything is graded.

    A top-level result that is a symbolic link or of the wrong kind (a folder
    where a file goes, a file where a folder goes) is refused; entries inside
    ``feedback/`` and ``written-answers/`` that the grader would not have
    written (links, folders, other kinds) are reported, since both folders are
    built fresh and replace the old ones whole.

    Returns
    -------
    list of str
        Warnings about the folders' contents.

    Raises
    ------
    ValueError
        Naming the entry and what to do.
    """
    out = Path(out)
    warnings = []
    for name in OUTPUT_NAMES:
        try:
            info = os.lstat(out / name)
        except FileNotFoundError:
            continue
        folder = name in _FOLDERS
        if stat.S_ISLNK(info.st_mode):
            kind = "a symbolic link"
        elif folder and not stat.S_ISDIR(info.st_mode):
            kind = "not a folder"
        elif not folder and not stat.S_ISREG(info.st_mode):
            kind = "not a regular file"
        else:
            if folder:
                odd = sorted(entry.name for entry in os.scandir(out / name)
                             if not entry.is_file(follow_symlinks=False))
                if odd:
                    warnings.append(f"{out / name} holds entries the grader does not write "
                                    f"({', '.join(map(display_name, odd[:5]))}); it is "
                                    "replaced whole")
            continue
        raise ValueError(f"{out / name} is {kind}; the grader writes its results there and "
                         "does not write through it. Remove it (it may have been planted in "
                         "the submissions), or write the results elsewhere with --out")
    return warnings


def caps(bwrap, groups, limits):
    """What caps each submission here: ``[(what, capped, how)]``.

    Examples
    --------
    >>> rows = caps(None, None, Limits())
    >>> [what for what, _, _ in rows]
    ['user', 'isolation', 'total memory', 'processes', 'CPU share', 'disk', 'each process']
    """
    user = sandbox_user()
    version = f"cgroup v{groups.version}" if groups is not None else None
    disk, how = disk_cap(groups)
    rows = [("user", True, f"an unprivileged user of its own (uid {user.uid}), not root")
             if user is not None else ("user", True, "your own user (not root)"),
             ("isolation", bwrap is not None,
              "bubblewrap: no network, no file of yours, its own processes" if bwrap else
              "NONE: no bubblewrap; it can read and change what its user can")]
    if groups is not None:
        rows += [("total memory", True, f"{limits.memory_bytes / 2**20:.0f} MiB, all its "
                                        f"processes and files in tmpfs together ({version})"),
                 ("processes", True, f"{limits.processes} ({version})"),
                 ("CPU share", True, f"{limits.cpus:g} core ({version})")]
    else:
        rows += [("total memory", False, "NOT capped: no cgroup; only each process's address "
                                         f"space ({limits.memory_bytes / 2**20:.0f} MiB), "
                                         "so several processes can use more"),
                 ("processes", bwrap is not None or user is not None,
                  f"{limits.processes} per sandbox (RLIMIT_NPROC)"
                  if bwrap is not None or user is not None else
                  "NOT capped: no cgroup, and RLIMIT_NPROC would count all your processes"),
                 ("CPU share", False, "NOT capped: no cgroup; busy loops slow the notebooks "
                                      "graded beside them (timed-out rows are graded again "
                                      "alone)")]
    rows.append(("disk", disk, how if disk and groups is not None or disk and "tmpfs of its"
                 in how else f"NOT capped in total: {how}"))
    rows.append(("each process", True, f"address space {limits.memory_bytes / 2**20:.0f} MiB, "
                                       f"files {limits.file_bytes / 1e6:g} MB, CPU time "
                                       f"{limits.cpu_seconds} s"))
    return rows


def _bar():
    return "!" * 78


def _warn_unsandboxed(why):
    print(f"{_bar()}\nWARNING: submissions are NOT sandboxed: {why}.\n"
          "Each notebook runs as your user, with your files, network and processes;\n"
          "it can read or change other submissions and grades.csv. The verdicts are\n"
          "still computed by the grader, not by the notebook. Install bubblewrap\n"
          "(sudo apt-get install bubblewrap) or pass --require-sandbox to refuse.\n"
          f"{_bar()}", file=sys.stderr)


def _warn_no_cgroup(why, rows):
    missing = "\n".join(f"  {what}: {how}" for what, capped, how in rows if not capped)
    print(f"{_bar()}\nWARNING: no cgroup per submission ({why}).\n"
          f"What is NOT capped for a submission:\n{missing}\n"
          "Rows that time out are re-graded alone at the end. To have the caps, grade as\n"
          "root (in a container: submissions then run as an unprivileged user), or on a\n"
          "cgroup v2 machine inside a delegated scope, e.g.\n"
          "  systemd-run --user --scope -p Delegate=yes make grade SUBMISSIONS=...\n"
          f"{_bar()}", file=sys.stderr)


# --------------------------------------------------------------------- the folder

def _default_jobs():
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


def _may_run(submission, assignment):
    """Whether grading ``submission`` would start a kernel (it parses, it is assigned)."""
    if submission.data is None or submission.refused or \
            (assignment is not None and not submission.assignment):
        return False
    try:
        return isinstance(json.loads(submission.data.decode("utf-8")), dict)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return False


class _Journal:
    """``grades.csv`` while grading: the header at once, then each row as it finishes."""

    def __init__(self, folder, labels):
        from .files import csv_text, open_output_folder, write_atomic

        self.labels, self.lock, self.csv_text = labels, threading.Lock(), csv_text
        folder_fd = open_output_folder(folder)
        try:
            write_atomic(folder_fd, "grades.csv", csv_text([["notebook", "status", "reason",
                                                             "score", *labels]]))
            flags = os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
            self.fd = os.open("grades.csv", flags, dir_fd=folder_fd)
        finally:
            os.close(folder_fd)

    def append(self, grade):
        from .gradebook import grades_rows

        rows = list(grades_rows([grade], self.labels))[1:]
        with self.lock:
            os.write(self.fd, self.csv_text(rows).encode("utf-8"))
            os.fsync(self.fd)

    def close(self):
        os.close(self.fd)


def _format_seconds(seconds):
    seconds = int(round(seconds))
    return f"{seconds // 60} min {seconds % 60:02d} s" if seconds >= 60 else f"{seconds} s"


def grade_folder(folder, *, timeout=180.0, max_output_bytes=5_000_000, echo=False,
                 jobs=1, sandbox="auto", limits=None, assignment=None, pattern=None,
                 out=None, cgroups="auto", allow_root=True, feedback="full",
                 answer_key=None, shard=None):
    """Grade every notebook in ``folder`` and write the results.

    Parameters
    ----------
    folder : path-like
        The submissions: notebooks at the top level and/or one folder per
        student (see :func:`collect_submissions`).
    timeout, max_output_bytes, sandbox, limits
        See :func:`grade_notebook`.
    echo : bool, optional
        Print what caps each submission, progress (n of N, elapsed, estimated
        remaining) and a summary.
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
        machine allows it; without one, a loud warning that says what is not
        capped, and every row that timed out is graded again alone at the end.
    feedback : {"full", "verdict"}, optional
        See :func:`write_grades` (the command line gives ``"verdict"``).
    allow_root : bool, optional
        No longer used: a root grader runs every submission as an unprivileged
        user of its own (``resnet_theory.homework.scratch.sandbox_user``).
    answer_key : AnswerKey or path-like, optional
        The expected answers of the compared exercises (trusted as given).
        Default, with an assignment: computed from the assignment's notebooks
        that were handed in (each run once, in the same sandbox and limits),
        and cached in ``out / "answer-key.json"`` keyed by each notebook's
        SHA-256, so a later run reuses it until a notebook changes (see
        :func:`resnet_theory.homework.compute_answer_key`). Without an assignment or
        a key, compared exercises are not graded.
    shard : str or tuple, optional
        ``"K/N"`` or ``(K, N)``: grade only the students of the K-th of N shards
        (a hash of each student's name decides, the same on every machine), for
        :func:`resnet_theory.homework.merge`.

    Returns
    -------
    list of NotebookGrade
        One per notebook (skipped entries included), sorted by path.

    Raises
    ------
    ValueError
        If ``folder`` is not a directory, ``jobs`` is not a positive integer, an
        output target is a symbolic link or of the wrong kind, a mark in the
        signed ``manual-marks.csv`` is not valid (nothing is graded then), or
        the answer key cannot be computed from the assignment or lacks an
        exercise.
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
    ['broken.ipynb', 'feedback', 'gradebook.csv', 'grades.csv', 'grading-state.json']
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"folder: {folder} is not a directory of submitted notebooks")
    jobs = _default_jobs() if jobs is None else jobs
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be a positive integer, got {jobs!r}")
    if feedback not in ("full", "verdict"):
        raise ValueError(f"feedback must be 'full' or 'verdict', got {feedback!r}")
    shard = (1, 1) if shard is None else parse_shard(
        shard if isinstance(shard, str) else "/".join(map(str, shard)))
    if limits is None:
        limits = Limits(timeout=timeout, max_output_bytes=max_output_bytes)
    out = folder if out is None else Path(out)
    if not out.is_dir():
        raise ValueError(f"out: {out} is not a directory")
    planted = check_outputs(out)
    bwrap, why = resolve_sandbox(sandbox)
    groups, no_group = resolve_cgroups(cgroups)
    if assignment is not None and not isinstance(assignment, Assignment):
        assignment = load_assignment(assignment)
    remove_temporaries(out, OUTPUT_NAMES)
    _sandbox.reset_stop()
    stale = _sandbox.clean_stale_scratch()
    if groups is not None:
        groups.clean_stale()
    reserved = OUTPUT_NAMES if out.resolve() == folder.resolve() else ()
    submissions = refuse_ambiguous(collect_submissions(
        folder, assignment=assignment, limit=limits.notebook_bytes, pattern=pattern,
        reserved=reserved))
    roster = sorted({s.student for s in submissions})
    if shard[1] > 1:
        submissions = [s for s in submissions if shard_of(s.student, shard[1]) == shard[0]]
    labels = written_labels(assignment)
    marks = take_signed_marks(out, students=set(roster), labels=labels,
                              auto=assignment.labels(), echo=echo) if labels else None
    runnable = [s for s in submissions if _may_run(s, assignment)]
    readable = [s for s in submissions if s.data is not None]
    rows = caps(bwrap, groups, limits)
    if readable and bwrap is None and sandbox == "auto":
        _warn_unsandboxed(why)
    if readable and groups is None and cgroups == "auto":
        _warn_no_cgroup(no_group, rows)
    if echo:
        for warning in planted:
            print(f"warning: {warning}", file=sys.stderr)
        if runnable:
            print("caps of each submission: " + "; ".join(
                f"{what}: {how}" for what, capped, how in rows if capped), file=sys.stderr)
        if stale:
            print(f"removed {stale} scratch folder(s) left by a grader that was killed",
                  file=sys.stderr)
        if shard[1] > 1:
            print(f"shard {shard[0]}/{shard[1]}: {len({s.student for s in submissions})} of "
                  f"{len(roster)} students", file=sys.stderr)
        for entry in submissions:
            if entry.skipped:
                print(f"skipped {entry.path}: {entry.skipped}", file=sys.stderr)
            elif entry.refused:
                print(f"not graded {entry.path}: {entry.refused[1]}", file=sys.stderr)
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
            return grade_one(submission, None, limits, bwrap, assignment, groups, expected)
        except _sandbox.SandboxUnavailable:
            raise
        except Exception as error:  # the grader itself must go on with the next row
            return NotebookGrade(submission.path, "grader-error",
                                 one_line(f"the grader failed ({type(error).__name__})"),
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
            expected.update(answer_key_for(answer_key, assignment, runnable, limits, bwrap,
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
                    report(replace(grade, reason=one_line(
                        grade.reason + ("; " if grade.reason else "") +
                        "graded again alone after a timeout")))
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if journal is not None:
            journal.close()
    grades = write_results(out, done, assignment, feedback=feedback, marks=marks, shard=shard,
                           roster=roster)
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
    students = {g.student for g in grades}
    print(f"\n{'INTERRUPTED: ' if interrupted else ''}graded {len(grades)} of "
          f"{len(submissions)} notebooks of {len(students)} students in "
          f"{_format_seconds(seconds)}"
          + (f" ({seconds / len(ran):.1f} s per notebook run)" if ran else ""))
    print("  " + ", ".join(f"{counts[s]} {s}" for s in STATUS_ORDER if s in counts))
    auto = sum(g.score for g in grades)
    out_of = sum(len(g.results) for g in grades)
    if out_of:
        print(f"  auto-graded exercises passed: {auto} of {out_of}")
    print(f"  results in {out}: grades.csv, gradebook.csv, feedback/"
          + (", written-answers/, manual-marks.csv" if (out / "written-answers").is_dir()
             else "") + f", {STATE_FILE}")

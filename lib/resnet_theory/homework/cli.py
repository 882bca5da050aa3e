"""The command line: ``python -m resnet_theory.homework`` with ``student``, ``answer-key``,
``grade``, ``merge`` or ``merge-marks``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path

from .answer_key import compute_answer_key
from .assignment import default_assignment
from .batch import GradingInterrupted, grade_folder
from .driver import add_driver_arguments, driver_main
from .gradebook import merge, merge_marks
from .sandbox import Limits, SandboxUnavailable
from .student import build_student_html, solution_only_names, write_student_editions

__all__ = ["main"]


def _add_sandbox_options(command, verb):
    """``--require-sandbox`` / ``--no-sandbox`` (destination ``sandbox``) for a command."""
    mode = command.add_mutually_exclusive_group()
    mode.add_argument("--require-sandbox", dest="sandbox", action="store_const",
                      const="require", default="auto",
                      help=f"refuse to {verb} when bubblewrap (bwrap) is missing or broken")
    mode.add_argument("--no-sandbox", dest="sandbox", action="store_const", const="off",
                      help="do not use bubblewrap even when it is installed")


def _parser():
    parser = argparse.ArgumentParser(prog="python -m resnet_theory.homework",
                                     description="Student editions and grading.")
    commands = parser.add_subparsers(dest="command", required=True)
    student = commands.add_parser("student", help="write the student notebooks (and HTML)")
    student.add_argument("--root", default=".", help="repository root (default: .)")
    student.add_argument("--out", default=None, help="default: <root>/_build/student")
    student.add_argument("--html", default=None,
                         help="also build the student HTML book into this folder")
    student.add_argument("--strict", action="store_true", help="HTML build with -W")
    grade = commands.add_parser(
        "grade", help="grade a folder of submitted notebooks",
        description="Grade every notebook in FOLDER: notebooks at its top level (the "
                    "student is the part of the file name before the assignment's notebook "
                    "name, e.g. alice_example_one.ipynb, else the file name) and/or one "
                    "folder per student. Writes grades.csv, gradebook.csv, feedback/, "
                    "written-answers/, manual-marks.csv and grading-state.json.")
    grade.add_argument("folder")
    grade.add_argument("--assignment", default=None,
                       help="the notebook or folder of notebooks whose exercises count "
                            "(default: the book)")
    grade.add_argument("--pattern", default=None,
                       help="regular expression with the groups student and notebook for "
                            "top-level file names, e.g. '(?P<student>[^_]+)_(?P<notebook>.+)'")
    grade.add_argument("--out", default=None,
                       help="write the results here (default: the submissions folder)")
    grade.add_argument("--timeout", type=float, default=180.0,
                       help="seconds per notebook (default: 180)")
    grade.add_argument("--max-output-mb", type=float, default=5.0,
                       help="output budget per notebook in MB (default: 5)")
    grade.add_argument("--jobs", "-j", type=int, default=None,
                       help="notebooks graded at once (default: the number of cores)")
    grade.add_argument("--memory-mb", type=float, default=Limits.memory_bytes / 2**20,
                       help="memory per submission in MiB (default: 4096)")
    grade.add_argument("--max-answer-mb", type=float, default=Limits.answer_bytes / 1e6,
                       help="largest exported answer in MB (default: 1)")
    grade.add_argument("--disk-mb", type=float, default=Limits.disk_bytes / 1e6,
                       help="scratch disk per submission in MB, where it can be capped "
                            "(default: 1000)")
    grade.add_argument("--shard", default=None, metavar="K/N",
                       help="grade only the K-th of N shards of the students (a hash of "
                            "each name decides); combine the shards with the merge command")
    grade.add_argument("--max-notebook-mb", type=float, default=Limits.notebook_bytes / 1e6,
                       help="largest submitted file graded, in MB (default: 20)")
    grade.add_argument("--answer-key", default=None,
                       help="the expected answers (a file written by the answer-key "
                            "command), used as given; default: computed from the "
                            "assignment and cached in <out>/answer-key.json")
    grade.add_argument("--feedback", choices=("verdict", "full"), default="verdict",
                       help="verdict (default): right or wrong, without the check's "
                            "explanation of a wrong answer; full: with it")
    grade.add_argument("--allow-root", action="store_true",
                       help="no effect (kept for old scripts): as root, submissions run "
                            "as an unprivileged user of their own")
    _add_sandbox_options(grade, "grade")
    groups = grade.add_mutually_exclusive_group()
    groups.add_argument("--require-cgroups", dest="cgroups", action="store_const",
                        const="require", default="auto",
                        help="refuse to grade without a cgroup per submission")
    groups.add_argument("--no-cgroups", dest="cgroups", action="store_const", const="off",
                        help="no cgroup per submission")
    key = commands.add_parser(
        "answer-key", help="compute the answer key of an assignment",
        description="Run every notebook of the assignment once (its solutions are "
                    "trusted), export the answers of the exercises that are compared with "
                    "a key, and write them as JSON, keyed by each notebook's SHA-256. An "
                    "existing key file written by you is reused for the notebooks that "
                    "did not change.")
    key.add_argument("--assignment", default=None,
                     help="the notebook or folder of notebooks (default: the book)")
    key.add_argument("--out", required=True, help="the key file to write, e.g. key.json")
    key.add_argument("--timeout", type=float, default=180.0,
                     help="seconds per notebook (default: 180)")
    key.add_argument("--jobs", "-j", type=int, default=1,
                     help="notebooks run at once (default: 1)")
    _add_sandbox_options(key, "run")
    marks = commands.add_parser("merge-marks",
                                help="merge manual-marks.csv into gradebook.csv")
    marks.add_argument("folder", help="where gradebook.csv is")
    marks.add_argument("--marks", default=None,
                       help="your own file of marks, used as given (default: "
                            "<folder>/manual-marks.csv, which must be signed by the grader)")
    shards = commands.add_parser(
        "merge", help="combine the results of the shards of one class",
        description="Combine the folders written by 'grade --shard K/N' for K = 1..N into "
                    "the results of one whole run (refusing shards that overlap or leave "
                    "a gap).")
    shards.add_argument("shards", nargs="+", help="the output folders of the shards")
    shards.add_argument("--out", required=True, help="where to write the combined results")
    add_driver_arguments(commands.add_parser("_execute", help=argparse.SUPPRESS))
    return parser


def _grade(args):
    assignment = args.assignment or default_assignment()
    out = Path(args.out) if args.out else Path(args.folder)
    try:
        limits = Limits(timeout=args.timeout,
                        max_output_bytes=int(args.max_output_mb * 1e6),
                        memory_bytes=int(args.memory_mb * 2**20),
                        answer_bytes=int(args.max_answer_mb * 1e6),
                        notebook_bytes=int(args.max_notebook_mb * 1e6),
                        disk_bytes=int(args.disk_mb * 1e6))
        grades = grade_folder(args.folder, limits=limits, echo=True, jobs=args.jobs,
                              sandbox=args.sandbox, cgroups=args.cgroups,
                              assignment=assignment, pattern=args.pattern, out=out,
                              feedback=args.feedback, answer_key=args.answer_key,
                              shard=args.shard)
    except GradingInterrupted as stopped:
        print(f"interrupted: {len(stopped.grades)} rows written to {out / 'grades.csv'}",
              file=sys.stderr)
        return 130
    except (ValueError, OSError, SandboxUnavailable) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"wrote {out / 'grades.csv'}, {out / 'gradebook.csv'} and the feedback of "
          f"{len({g.student for g in grades})} students in {out / 'feedback'}")
    return 0


def _answer_key(args):
    assignment = args.assignment or default_assignment()
    if assignment is None:
        print("error: no assignment (and the book is not next to the library)",
              file=sys.stderr)
        return 2
    try:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        key = compute_answer_key(assignment, limits=Limits(timeout=args.timeout),
                                 sandbox=args.sandbox, jobs=args.jobs, cache=args.out,
                                 echo=True)
    except (ValueError, OSError, SandboxUnavailable) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    answers, notebooks = len(key.answers), len(key.notebooks)
    print(f"wrote {args.out}: {answers} answer{'s' * (answers != 1)} from {notebooks} "
          f"notebook{'s' * (notebooks != 1)} "
          f"({', '.join(key.labels()) or 'no exercise is compared with a key'})")
    return 0


def main(argv: Iterable[str] | None = None):
    """Command line: ``student``, ``answer-key``, ``grade``, ``merge`` and ``merge-marks`` (see
    :mod:`resnet_theory.homework`).

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status: 0; 2 for a bad folder, assignment or shard, a planted
        output, a required sandbox or cgroup that is not available, a bad mark
        (each reported with its line), shards that overlap or leave a gap, or
        an answer key that cannot be computed (an assignment notebook that
        fails) or lacks an exercise; 130 when grading was interrupted (what was
        graded is written).

    Examples
    --------
    >>> main(["grade", "/nonexistent/folder"])  # the message goes to stderr
    2
    """
    args = _parser().parse_args(None if argv is None else list(argv))
    if args.command == "_execute":
        return driver_main(args)
    if args.command == "merge-marks":
        try:
            path = merge_marks(args.folder, args.marks)
        except (ValueError, OSError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        print(f"wrote {path}")
        return 0
    if args.command == "merge":
        try:
            grades = merge(args.shards, args.out, echo=True)
        except (ValueError, OSError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        print(f"wrote the results of {len(grades)} notebooks of "
              f"{len({g.student for g in grades})} students from {len(args.shards)} shards "
              f"to {args.out}")
        return 0
    if args.command == "grade":
        return _grade(args)
    if args.command == "answer-key":
        return _answer_key(args)
    root = Path(args.root)
    out = Path(args.out) if args.out else root / "_build" / "student"
    editions = write_student_editions(root / "book", out)
    for relative, edition in editions.items():
        missing = solution_only_names(edition)
        if missing:
            print(f"warning: {relative} uses names only its solutions define: "
                  f"{', '.join(sorted(missing))}", file=sys.stderr)
    print(f"wrote {len(editions)} student notebooks to {out}")
    if args.html:
        index = build_student_html(root, args.html, strict=args.strict)
        print(f"The student book is built: open file://{index.resolve()}")
    return 0

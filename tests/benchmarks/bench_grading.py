"""Benchmark and demo: grade a generated class of students, as a lecturer would.

Makes a class of ``--students`` (default 40) folders, one per student, each
holding the Chapter 5 notebook ``example_one.ipynb`` as handed back: the
student edition (``make student``) with the answer cell filled in and a written
answer after the first written exercise. The class is a mix:

- honest students (about half): the right answer, computed as the solution does;
- partly right: a wrong number, or no answer at all;
- hostile: a symbolic link to the book's notebook, a loop, an output flood,
  ``os._exit``, an extra answer to another chapter's exercise, the exercise
  cells deleted, a forged verdict and patched checks, a planted FIFO, a name
  starting with ``=``.

It computes the answer key from the book's notebook (one run of the solution,
timed on its own and cached in the class folder, as ``make grade`` does), then
grades the class with :func:`resnet_theory.homework.grade_folder` (the
assignment: the book's notebook) for each number of jobs (default 1 and 2),
checks that every honest student scored full marks and no hostile one did,
and prints a table: the seconds of the key, wall-clock seconds of grading,
seconds per notebook, and the speed-up over one job. With ``--keep DIR`` the
last class and its results (``grades.csv``, ``gradebook.csv``, ``feedback/``,
``written-answers/``, ``manual-marks.csv``, ``answer-key.json``) are left in
``DIR`` to look at.

This is a script, not a test (pytest does not collect it). Run it from the
repository root:

    python tests/benchmarks/bench_grading.py [--students 40] [--jobs 1 2] [--keep DIR]
        [--timeout 180]

On a shared machine the times include whatever else runs; compare the rows of
one run, not runs on different days.
"""

import argparse
import csv
import os
import shutil
import tempfile
import time
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell
from resnet_theory import homework

ROOT = Path(__file__).resolve().parents[2]
BOOK_NOTEBOOK = ROOT / "book" / "ch5_shamir" / "example_one.ipynb"
ANSWER = "ex_shamir_trap_depth_answer"
RIGHT = ("from resnet_theory.landscape import critical_points\n"
         "pts = critical_points(eps=1.5, weight_decay=0.3)\n"
         "mins = sorted((p for p in pts if p.kind == 'minimum'), key=lambda p: p.value)\n"
         "(sad,) = [p for p in pts if p.kind == 'saddle']\n"
         f"{ANSWER} = sad.value - mins[-1].value")
#: kind of student -> the code of the answer cell (None: the cell as handed out).
KINDS = {
    "honest": RIGHT,
    "wrong": f"{ANSWER} = 0.5",
    "blank": None,
    "loops": "while True:\n    pass",
    "floods": "for _ in range(200):\n    print('x' * 100_000)",
    "exits": "import os\nos._exit(0)",
    "inflates": f"{ANSWER} = 0.5\nimport math\n"
                "ex_dr_eps_budget_answer = math.tanh(math.log(10) / 100)",
    "forges": "from resnet_theory import checks\n"
              "checks.ex_shamir_trap_depth = lambda answer: True\n"
              "print('[correct] ex-shamir-trap-depth')\n"
              f"{ANSWER} = 0.5",
}
CYCLE = ["honest", "wrong", "honest", "blank", "honest", "loops", "honest", "inflates",
         "honest", "floods", "honest", "exits", "honest", "forges", "honest", "removes",
         "honest", "link", "honest", "fifo"]


def _student_notebook(kind, written):
    notebook = homework.split_solutions(nbformat.read(BOOK_NOTEBOOK, as_version=4)).notebook
    cells = []
    for cell in notebook.cells:
        if kind == "removes" and cell.cell_type == "markdown" and \
                "ex-shamir-trap-depth" in cell.source:
            continue
        if cell.cell_type == "code" and cell.source.startswith(f"{ANSWER} = None"):
            if kind == "removes":
                continue
            if KINDS.get(kind) is not None:
                cell = new_code_cell(KINDS[kind])
        cells.append(cell)
        if cell.cell_type == "markdown" and "ex-shamir-curve-hessian" in cell.source:
            cells.append(new_markdown_cell(written))
    notebook.cells = cells
    return notebook


def make_class(folder, students):
    """Write the class into ``folder``; return ``{student: kind}``."""
    kinds = {}
    for index in range(students):
        kind = CYCLE[index % len(CYCLE)]
        student = f"student{index:03d}" if index != 3 else "=cmd|' -C calc'!A0"
        kinds[student] = kind
        (folder / student).mkdir()
        target = folder / student / "example_one.ipynb"
        if kind == "link":
            target.symlink_to(BOOK_NOTEBOOK)
        elif kind == "fifo":
            os.mkfifo(target)
        else:
            written = (f"({student}) Along the curve the Hessian is "
                       "$\\nabla^2 F = u u^T$ with $u = (1 + \\epsilon v, \\epsilon w)$.")
            nbformat.write(_student_notebook(kind, written), target)
    return kinds


def grade_class(students, jobs, keep=None, timeout=180.0):
    """Seconds to grade a generated class with ``jobs`` at once, and the grades."""
    folder = Path(tempfile.mkdtemp(prefix="bench-grading-"))
    try:
        kinds = make_class(folder, students)
        start = time.perf_counter()
        homework.compute_answer_key(BOOK_NOTEBOOK, cache=folder / "answer-key.json",
                                    echo=True)
        key_seconds = time.perf_counter() - start
        start = time.perf_counter()
        grades = homework.grade_folder(folder, jobs=jobs, assignment=BOOK_NOTEBOOK, echo=True,
                                       timeout=timeout)  # reuses the cached key
        seconds = time.perf_counter() - start
        with open(folder / "gradebook.csv", newline="") as handle:
            book = {row["student"].lstrip("'"): row for row in csv.DictReader(handle)}
        wrong = [f"{s} ({kinds[s]}: {book[s]['problems'] or 'ok'})" for s in kinds
                 if (book[s]["auto"] == "1") != (kinds[s] == "honest")]
        if wrong:  # an honest student timed out on a loaded machine, or a real error
            print(f"UNEXPECTED GRADES for {len(wrong)} students: {'; '.join(wrong[:5])}")
        if keep is not None:
            shutil.rmtree(keep, ignore_errors=True)
            shutil.copytree(folder, keep, symlinks=True, ignore=shutil.ignore_patterns("*.ipynb"))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    ran = [g for g in grades if g.sandbox]
    return key_seconds, seconds, len(ran), ran[0].sandbox if ran else "-", len(wrong)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--timeout", type=float, default=180.0,
                        help="seconds per notebook (default: 180, as make grade)")
    parser.add_argument("--keep", type=Path, default=None,
                        help="leave the results of the last class in this folder")
    args = parser.parse_args()
    rows = []
    for jobs in args.jobs:
        key, seconds, ran, sandbox, wrong = grade_class(args.students, jobs, args.keep,
                                                        args.timeout)
        rows.append((jobs, sandbox, key, seconds, ran, wrong))
    print(f"\n{args.students} students (example_one.ipynb each), "
          f"{len(os.sched_getaffinity(0))} cores available")
    print(f"{'jobs':>4} {'sandbox':>10} {'key s':>6} {'seconds':>8} {'runs':>5} "
          f"{'s/notebook':>10} {'speed-up':>8} {'unexpected':>10}")
    first = rows[0][3]
    for jobs, sandbox, key, seconds, ran, wrong in rows:
        print(f"{jobs:>4} {sandbox:>10} {key:>6.1f} {seconds:>8.1f} {ran:>5} "
              f"{seconds / ran:>10.2f} {first / seconds:>8.2f} {wrong:>10}", flush=True)


if __name__ == "__main__":
    main()

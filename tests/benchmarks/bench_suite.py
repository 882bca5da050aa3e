"""Benchmark: where the test suite's time goes, by part.

Runs the suite the way ``make test`` does (pytest-xdist, ``--dist loadfile``),
with a JUnit XML report, and prints the wall time of the whole run and, for each
part of the suite, the summed time of its tests (setup included) and its slowest
files. Parts:

- ``notebooks``: nbval over the notebooks under ``book/``;
- ``student editions``: ``tests/test_homework.py``;
- ``grading``: ``tests/test_grading_*.py``;
- ``browser``: ``tests/test_browser.py``, ``tests/test_student_html.py`` and
  ``tests/test_lab.py``;
- ``book build``: ``tests/test_book_build.py``;
- ``pdf``: ``tests/test_pdf.py``;
- ``library``: everything else (unit, property and doctests, notebook hygiene).

Summed test time exceeds the wall time when the workers run in parallel; the
budget to watch is the wall time (issue: ``make test`` in about 3 minutes on 2
cores). This is a script, not a test (pytest does not collect it). From the
repository root:

    .venv/bin/python tests/benchmarks/bench_suite.py [--jobs 2] [--cold] [-- extra pytest args]
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PARTS = [
    ("notebooks", lambda f: f.startswith("book/")),
    ("student editions", lambda f: f == "tests/test_homework.py"),
    ("grading", lambda f: f.startswith("tests/test_grading")),
    ("browser", lambda f: f in ("tests/test_browser.py", "tests/test_student_html.py",
                                "tests/test_lab.py")),
    ("book build", lambda f: f == "tests/test_book_build.py"),
    ("pdf", lambda f: f == "tests/test_pdf.py"),
    ("library", lambda f: True),
]


def _file_of(case):
    """The file a JUnit test case belongs to, relative to the repository."""
    name = case.get("file") or case.get("classname", "").replace(".", "/") + ".py"
    if name.endswith(".ipynb.py"):
        name = name[:-3]
    if "::" in name:
        name = name.split("::")[0]
    return name


def _machine_cpu_seconds():
    """CPU seconds (user and system) the machine has spent since boot (Linux), or None."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return None
    user, nice, system = (int(field) for field in fields[:3])
    return (user + nice + system) / os.sysconf("SC_CLK_TCK")


def _part(filename):
    return next(part for part, matches in PARTS if matches(filename))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", default=str((os.cpu_count() or 1) + 1),
                        help="pytest-xdist workers (default: one more than the number of "
                             "cores, as make test)")
    parser.add_argument("--cold", action="store_true",
                        help="as on a fresh machine: a new temporary directory, so no "
                             "answer key or book build is reused from an earlier run")
    parser.add_argument("--slowest", type=int, default=15,
                        help="how many of the slowest tests to name (default 15)")
    parser.add_argument("pytest_args", nargs="*", help="more arguments for pytest")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        timeline = Path(folder) / "timeline.jsonl"
        # one BLAS thread per process, as `make test` runs the suite (see the Makefile)
        env = dict(os.environ, SUITE_TIMELINE=str(timeline), OPENBLAS_NUM_THREADS="1")
        if args.cold:
            # a fresh /tmp: open to every user and sticky, as /tmp is (the grader runs
            # submissions as an unprivileged user, who must reach its scratch folders)
            cold = Path(folder) / "tmp"
            cold.mkdir()
            cold.chmod(0o1777)
            Path(folder).chmod(0o755)
            env["TMPDIR"] = str(cold)
        report = Path(folder) / "junit.xml"
        command = [sys.executable, "-m", "pytest", "-q", "-n", args.jobs, "--dist", "loadfile",
                   "--no-loadscope-reorder", "-p", "tests.benchmarks.timeline",
                   "-o", "junit_family=xunit1", f"--junitxml={report}", *args.pytest_args]
        cpu_before = _machine_cpu_seconds()
        own_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start, started = time.monotonic(), time.time()
        result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=env)
        wall = time.monotonic() - start
        cpu_after = _machine_cpu_seconds()
        own_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        own = (own_after.ru_utime - own_before.ru_utime
               + own_after.ru_stime - own_before.ru_stime)
        if not report.is_file():  # pytest did not run (not installed, bad arguments)
            sys.stderr.write(result.stdout[-3000:] + result.stderr[-3000:])
            return result.returncode or 1
        tree = ET.parse(report)
        runs = [json.loads(line) for line in timeline.read_text().splitlines()] \
            if timeline.is_file() else []
    by_part, by_file, counts = defaultdict(float), defaultdict(float), defaultdict(int)
    failed = []
    for case in tree.iter("testcase"):
        problem = case.find("failure") if case.find("failure") is not None else case.find("error")
        if problem is not None:
            why = (problem.get("message") or "").splitlines()[:1]
            failed.append(f"{case.get('classname')}::{case.get('name')}: {''.join(why)[:300]}")
    for case in tree.iter("testcase"):
        filename = _file_of(case)
        seconds = float(case.get("time", 0))
        by_part[_part(filename)] += seconds
        by_file[filename] += seconds
        counts[_part(filename)] += 1
    summary = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else ""
    print(f"make test equivalent, {args.jobs} workers: wall {wall:.0f} s ({summary})")
    if cpu_before is not None and cpu_after is not None:
        cpu = cpu_after - cpu_before
        print(f"CPU time used on the machine meanwhile: {cpu:.0f} s ({cpu / wall:.2f} of "
              f"{os.cpu_count()} cores on average; on a quiet machine, the suite's)")
    # The suite's own processes (pytest, its workers, kernels, builds and browsers: every
    # process it waited for), whatever else the machine runs: on 2 cores the wall time
    # of a quiet machine is at least half of it.
    print(f"CPU time of the suite's own processes: {own:.0f} s (user and system)")
    print(f"{'part':18} {'tests':>6} {'summed s':>9}  slowest files")
    for part, _ in PARTS:
        files = sorted((f for f in by_file if _part(f) == part), key=by_file.get, reverse=True)
        slowest = ", ".join(f"{Path(f).name} {by_file[f]:.0f}" for f in files[:3])
        print(f"{part:18} {counts[part]:6d} {by_part[part]:9.0f}  {slowest}")
    _print_timeline(runs, started, wall)
    cases = sorted(tree.iter("testcase"), key=lambda c: float(c.get("time", 0)), reverse=True)
    print("slowest tests (setup and teardown included): " + ", ".join(
        f"{_file_of(c).split('/')[-1]}::{c.get('name')} {float(c.get('time', 0)):.1f}"
        for c in cases[:args.slowest]))
    for name in failed:
        print(f"FAILED {name}")
    return result.returncode


def _print_timeline(runs, started, wall):
    """Each worker's files in the order it ran them: seconds from the start."""
    spans = defaultdict(list)  # worker -> [[file, start, end]]
    for run in sorted(runs, key=lambda r: r["start"]):
        filename = run["test"].split("::")[0]
        rows = spans[run["worker"]]
        if rows and rows[-1][0] == filename:
            rows[-1][2] = run["end"] - started
        else:
            rows.append([filename, run["start"] - started, run["end"] - started])
    for worker in sorted(spans):
        rows = spans[worker]
        print(f"{worker}: " + ", ".join(f"{Path(f).name} {a:.0f}-{b:.0f}" for f, a, b in rows)
              + f"; idle after {rows[-1][2]:.0f} s of {wall:.0f}")


if __name__ == "__main__":
    sys.exit(main())

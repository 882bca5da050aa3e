"""Interrupting the grader loses nothing that was graded (issue 23, item 5).

A class of three runs with one job: the first notebook finishes at once, the
second sleeps, the third waits its turn. The grader runs as a separate process
(``python -m resnet_theory.homework grade``). Killed with SIGKILL after the first
row, it leaves ``grades.csv`` with that row (the stale file of an earlier run is
gone) and its scratch folders, which the next run removes. (Each grader here has
a temporary folder of its own, which other users may enter, since a root grader runs
the submissions as an unprivileged user: another grader on the machine, such as another
test worker's, would otherwise clean the killed one's scratch folders first.) Stopped
with SIGINT,
it stops the running sandbox, writes ``grades.csv``, the grade book and the
feedback of what was done, leaves no scratch folder and exits with status 130.
"""

import csv
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from resnet_theory.homework import scratch as sandbox

KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}
EXERCISE = new_markdown_cell("```{exercise} Depth\n:label: ex-shamir-trap-depth\nCompute it.\n```")
MARKER = f"resnet-theory-interrupt-test-{uuid.uuid4().hex}"


_SHARED = []


@pytest.fixture(autouse=True)
def _remove_shared_folders():
    yield
    while _SHARED:
        shutil.rmtree(_SHARED.pop(), ignore_errors=True)


def _class(base):
    assignment, folder = base / "nb.ipynb", base / "submissions"
    solution = new_code_cell("ex_shamir_trap_depth_answer = 0.25")  # gives the answer key
    nbformat.write(new_notebook(cells=[EXERCISE, solution], metadata={"kernelspec": KERNELSPEC}),
                   assignment)
    cells = {"s1": "ex_shamir_trap_depth_answer = 0.5",
             "s2": f"import time\nmarker = {MARKER!r}\ntime.sleep(600)",
             "s3": "ex_shamir_trap_depth_answer = 0.25"}
    for student, source in cells.items():
        (folder / student).mkdir(parents=True)
        nbformat.write(new_notebook(cells=[EXERCISE, new_code_cell(source)],
                                    metadata={"kernelspec": KERNELSPEC}),
                       folder / student / "nb.ipynb")
    (folder / "grades.csv").write_text("notebook,status\nstale,ok\n")
    return assignment, folder


def _start(assignment, folder):
    # Each grader gets a temporary folder of its own, so its scratch folders sit in
    # a scratch root no other grader on the machine (another test worker) cleans.
    tmp = folder.parent / "tmp"
    if not tmp.is_symlink():
        shared = Path(tempfile.mkdtemp(prefix="grader-tmp-", dir="/tmp"))
        shared.chmod(0o711)
        _SHARED.append(shared)
        tmp.symlink_to(shared)
    tmp = tmp.resolve()
    command = [sys.executable, "-m", "resnet_theory.homework", "grade", str(folder),
               "--assignment", str(assignment), "--jobs", "1", "--timeout", "600",
               "--allow-root"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=dict(os.environ, TMPDIR=str(tmp)))
    saved, tempfile.tempdir = tempfile.tempdir, str(tmp)
    try:
        process.scratch_root = sandbox.scratch_root()  # the grader's, under its TMPDIR
    finally:
        tempfile.tempdir = saved
    return process


def _wait_for_row(folder, name, process, limit=240):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        text = (folder / "grades.csv").read_text() if (folder / "grades.csv").exists() else ""
        if name in text:
            # The row is written; wait until the next notebook's sandbox has its
            # scratch folder (on a loaded machine that can take a while).
            while not _scratch_of(process) and time.monotonic() < end:
                assert process.poll() is None, process.communicate()
                time.sleep(0.2)
            time.sleep(1)  # and its kernel is starting
            return text
        assert process.poll() is None, process.communicate()
        time.sleep(0.5)
    pytest.fail(f"no row for {name} after {limit} s")


def _scratch_of(process):
    """The scratch folders of a grader started by ``_start``."""
    found = []
    if not process.scratch_root.is_dir():
        return found
    for entry in process.scratch_root.iterdir():
        try:
            if (entry / "owner").read_text().split()[0] == str(process.pid):
                found.append(entry)
        except (OSError, IndexError):
            pass
    return found


def _survivors():
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if MARKER.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def test_sigkill_keeps_the_rows_done_and_the_next_run_cleans_up(tmp_path):
    assignment, folder = _class(tmp_path)
    process = _start(assignment, folder)
    text = _wait_for_row(folder, "s1/nb.ipynb", process)
    process.kill()
    process.communicate()
    rows = list(csv.reader(text.splitlines()))
    assert rows[0] == ["notebook", "status", "reason", "score", "ex-shamir-trap-depth"]
    assert [row[0] for row in rows[1:]] == ["s1/nb.ipynb"]  # not the stale row
    left = _scratch_of(process)
    assert left, "the killed grader left no scratch folder: nothing to clean"
    (folder / "s2" / "nb.ipynb").unlink()  # the next run is quick
    again = _start(assignment, folder)
    _, err = again.communicate(timeout=600)
    assert again.returncode == 0, err
    assert "scratch folder(s) left by a grader that was killed" in err
    assert not any(path.exists() for path in left)


def test_sigint_stops_the_sandboxes_and_writes_what_is_done(tmp_path):
    assignment, folder = _class(tmp_path)
    process = _start(assignment, folder)
    _wait_for_row(folder, "s1/nb.ipynb", process)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    with open(folder / "grades.csv", newline="") as handle:
        rows = list(csv.reader(handle))
    assert [row[0] for row in rows[1:]] == ["s1/nb.ipynb"]
    assert (folder / "feedback" / "s1.txt").is_file()
    assert "INTERRUPTED: graded 1 of 3 notebooks" in out
    with open(folder / "gradebook.csv", newline="") as handle:
        book = {row[0]: row for row in csv.reader(handle)}
    assert "s1" in book
    assert _scratch_of(process) == []
    assert _survivors() == []


def test_a_scratch_folder_another_grader_is_making_is_not_cleaned(tmp_path, monkeypatch):
    # A grader makes its scratch folder, then writes the owner file into it; a grader
    # starting meanwhile must not take the folder for a killed grader's (it did once in
    # a run of the whole suite: the first grader then failed to write its owner file).
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    root = sandbox.scratch_root()
    being_made, left = root / "grade-being-made", root / "grade-left-long-ago"
    being_made.mkdir()
    left.mkdir()
    long_ago = time.time() - 2 * sandbox.OWNERLESS_GRACE_SECONDS
    os.utime(left, (long_ago, long_ago))
    assert sandbox.clean_stale_scratch() == 1
    assert being_made.is_dir() and not left.exists()

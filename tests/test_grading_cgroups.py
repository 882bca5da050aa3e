"""Each submission's total memory, processes and CPU share are capped (issue 23, item 3).

Where the machine gives the grader a cgroup per submission (cgroup v2 with the
``memory``, ``pids`` and ``cpu`` controllers delegated, or cgroup v1 as root), a
class is graded four at a time: one notebook starts three processes of 400 MB
under a 1 GiB ``memory.max`` (each one is under its own address-space limit, so
only the cgroup can stop them), one tries to start 100 processes under a
``pids.max`` of 48 (root ignores ``RLIMIT_NPROC``), one measures the CPU time
of four busy loops under a ``cpu.max`` of a quarter core, and an honest neighbour
answers while they run. Without cgroups these tests are skipped with the reason
(they fail instead when ``GRADER_REQUIRE_CGROUPS=1``).
The last test grades without a cgroup: a loud warning, and the row that timed
out is graded again alone.
"""

import os

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from resnet_theory import homework
from resnet_theory.homework import sandbox

KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}
EXERCISE = new_markdown_cell("```{exercise} Depth\n:label: ex-shamir-trap-depth\nCompute it.\n```")
DEPTH = ("from resnet_theory.landscape import critical_points\n"
         "pts = critical_points(eps=2.0, weight_decay=0.5)\n"
         "mins = sorted((p for p in pts if p.kind == 'minimum'), key=lambda p: p.value)\n"
         "(sad,) = [p for p in pts if p.kind == 'saddle']\n"
         "ex_shamir_trap_depth_answer = sad.value - mins[-1].value")
MEMORY = """import subprocess, sys
code = ('import time; block = bytearray(400_000_000); '
        'block[::4096] = b"x" * len(block[::4096]); time.sleep(6)')
children = [subprocess.Popen([sys.executable, '-c', code]) for _ in range(3)]
codes = [child.wait() for child in children]
assert codes == [0, 0, 0], codes"""
PROCESSES = """import subprocess
started = []
for _ in range(100):
    try:
        started.append(subprocess.Popen(['sleep', '30']))
    except (OSError, BlockingIOError):
        break
count = len(started)
for child in started:
    child.kill()
assert count < 60, count"""
CPU = """import os, subprocess, sys, time
loops = [subprocess.Popen([sys.executable, '-c', 'while True: pass']) for _ in range(4)]
time.sleep(4)
used = 0.0
for loop in loops:
    loop.kill()
    _, _, usage = os.wait4(loop.pid, 0)
    used += usage.ru_utime + usage.ru_stime
assert used < 0.4 * 4, f'{used:.1f} s of CPU in 4 s'"""


def _write(folder, notebooks):
    for name, sources in notebooks.items():
        nbformat.write(new_notebook(cells=[EXERCISE, *map(new_code_cell, sources)],
                                    metadata={"kernelspec": KERNELSPEC}), folder / name)


@pytest.fixture(scope="module")
def cgroups():
    groups, why = sandbox.find_cgroups()
    if groups is None:
        message = f"no cgroup per submission can be made here, the caps are not tested: {why}"
        if os.environ.get("GRADER_REQUIRE_CGROUPS") == "1":
            pytest.fail(message)
        pytest.skip(message)
    return groups


@pytest.fixture(scope="module")
def capped(cgroups, tmp_path_factory, book_answer_key):
    folder = tmp_path_factory.mktemp("cgroups")
    _write(folder, {"honest.ipynb": [DEPTH], "memory.ipynb": [MEMORY],
                    "processes.ipynb": [PROCESSES], "cpu.ipynb": [CPU]})
    limits = homework.Limits(timeout=90, memory_bytes=1 << 30, processes=48, cpus=0.25)
    grades = homework.grade_folder(folder, limits=limits, jobs=4, cgroups="require",
                                   answer_key=book_answer_key)
    return {grade.notebook: grade for grade in grades}


def test_a_cgroup_is_made_with_the_limits_and_removed(cgroups):
    limits = homework.Limits(memory_bytes=1 << 30, processes=48, cpus=0.25)
    group = cgroups.create(limits)
    try:
        texts = {}
        for folder in group.folders:
            for name in ("memory.max", "memory.limit_in_bytes", "pids.max", "cpu.max",
                         "cpu.cfs_quota_us"):
                if (folder / name).exists():
                    texts[name] = (folder / name).read_text().split()
        assert texts.get("memory.max", texts.get("memory.limit_in_bytes")) == [str(1 << 30)]
        assert texts["pids.max"] == ["48"]
        assert texts.get("cpu.max", texts.get("cpu.cfs_quota_us"))[0] == "25000"
    finally:
        group.close()
    assert not any(folder.exists() for folder in group.folders)


def test_cgroups_left_by_a_killed_grader_are_removed(cgroups):
    stale = [parent / "grade-999999999-deadbeef" for parent in cgroups.parents]
    for folder in stale:
        folder.mkdir()
    assert cgroups.clean_stale() >= 1
    assert not any(folder.exists() for folder in stale)


def test_the_honest_neighbour_is_graded_correctly(capped):
    grade = capped["honest.ipynb"]
    assert grade.status == "ok", grade.reason
    assert grade.score == 1


def test_the_total_memory_of_a_submission_is_capped(capped):
    grade = capped["memory.ipynb"]
    assert grade.status in ("error", "kernel-died"), grade.reason
    assert "memory limit" in grade.reason


def test_the_number_of_processes_is_capped_even_for_root(capped):
    grade = capped["processes.ipynb"]
    assert grade.status == "ok", grade.reason


def test_the_cpu_share_is_capped(capped):
    grade = capped["cpu.ipynb"]
    assert grade.status == "ok", grade.reason


def test_busy_loops_are_held_to_the_cpu_quota(cgroups):
    # Sixteen loops for 2 s: even on a loaded machine they would get more than a quarter
    # core, so the quota (a 100 ms period) throttles them many times.
    notebook = new_notebook(cells=[new_code_cell(
        "import subprocess, sys, time\n"
        "loops = [subprocess.Popen([sys.executable, '-c', 'while True: pass'], "
        "start_new_session=True) for _ in range(16)]\n"
        "time.sleep(2)")], metadata={"kernelspec": KERNELSPEC})
    bwrap, _ = homework.find_bwrap()
    limits = homework.Limits(timeout=60, cpus=0.25)
    payload, scratch = sandbox.run_submission(nbformat.writes(notebook).encode(), "cpu.ipynb",
                                              {}, "0" * 32, limits, bwrap=bwrap,
                                              cgroups=cgroups)
    sandbox.remove_scratch(scratch)
    assert payload["status"] == "ok", payload
    assert payload["cpu_throttled"] > 0, (payload, cgroups.parents)


def test_without_cgroups_a_warning_and_timed_out_rows_are_graded_alone(tmp_path, capsys,
                                                                        monkeypatch):
    monkeypatch.setattr(homework.grading, "find_cgroups", lambda: (None, "none here"))
    # A notebook that never ends, without holding a core for its two runs (a busy loop
    # beside other rows: test_homework.py's hostile folder; under a quota: above).
    _write(tmp_path, {"loops.ipynb": ["import time\nwhile True:\n    time.sleep(0.1)"]})
    limits = homework.Limits(timeout=2)  # counted from the kernel's start
    (grade,) = homework.grade_folder(tmp_path, limits=limits, echo=True)
    err = capsys.readouterr().err
    assert grade.status == "timeout"
    assert "graded again alone after a timeout" in grade.reason
    assert "WARNING: no cgroup per submission (none here)" in err
    assert "re-graded alone at the end" in err and "re-grading 1 timed-out" in err
    with pytest.raises(homework.SandboxUnavailable, match="cgroup"):
        homework.grade_folder(tmp_path, cgroups="require")

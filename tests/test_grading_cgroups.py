"""Each submission's total memory, processes, CPU share and disk are capped (issues 23 and 38).

Where the machine gives the grader a cgroup per submission (cgroup v2 with the
``memory``, ``pids`` and ``cpu`` controllers delegated, or cgroup v1 as root), a
class is graded four at a time: one notebook starts four processes of 600 MiB
under a 1 GiB memory limit (each one is under its own address-space limit, so
only the cgroup can stop them: issue 38, G), one tries to start 100 processes
under a ``pids.max`` of 48, one measures the CPU time of four busy loops under
a ``cpu.max`` of a quarter core, one writes 300 MB into its scratch folder
under a disk cap of 100 MB (as root, a tmpfs of its own), and an honest
neighbour answers while they run. The driver that runs a submission's cells is
in a capped cgroup of its own, and the grader reports what it caps. Without
cgroups these tests are skipped with the reason (they fail instead when
``GRADER_REQUIRE_CGROUPS=1``). The last test grades without a cgroup: a loud
warning that says what is not capped, and the row that timed out is graded
again alone.
"""

import os
import threading
import time
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from resnet_theory import homework
from resnet_theory.homework import batch, sandbox, scratch

KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}
EXERCISE = new_markdown_cell("```{exercise} Depth\n:label: ex-shamir-trap-depth\nCompute it.\n```")
DEPTH = ("from resnet_theory.landscape import critical_points\n"
         "pts = critical_points(eps=1.5, weight_decay=0.3)\n"
         "mins = sorted((p for p in pts if p.kind == 'minimum'), key=lambda p: p.value)\n"
         "(sad,) = [p for p in pts if p.kind == 'saddle']\n"
         "ex_shamir_trap_depth_answer = sad.value - mins[-1].value")
MEMORY = """import subprocess, sys
code = ('import time; block = bytearray(600 * 2**20); '
        'block[::4096] = b"x" * len(block[::4096]); time.sleep(6)')
children = [subprocess.Popen([sys.executable, '-c', code]) for _ in range(4)]
codes = [child.wait() for child in children]
assert codes == [0, 0, 0, 0], codes"""
DISK = """written, stopped = 0, None
try:
    for index in range(30):
        with open(f'block{index}.bin', 'wb') as handle:
            handle.write(bytes(10_000_000))
        written += 10_000_000
except OSError as error:
    stopped = error.errno
assert stopped == 28 and written <= 100_000_000, (stopped, written)  # ENOSPC"""
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
                    "processes.ipynb": [PROCESSES], "cpu.ipynb": [CPU], "disk.ipynb": [DISK]})
    limits = homework.Limits(timeout=90, memory_bytes=1 << 30, processes=48, cpus=0.25,
                             disk_bytes=100_000_000)
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


def test_the_scratch_disk_is_capped(capped):
    if not scratch.can_mount():
        pytest.skip("no tmpfs per submission here (not root, or no CAP_SYS_ADMIN): the disk "
                    "is capped only by the memory cgroup, if the scratch folder is a tmpfs")
    grade = capped["disk.ipynb"]
    assert grade.status == "ok", grade.reason


def test_the_grader_reports_every_cap(cgroups):
    bwrap, _ = homework.find_bwrap()
    rows = {what: (capped, how) for what, capped, how in
            batch.caps(bwrap, cgroups, homework.Limits(memory_bytes=1 << 30))}
    assert rows["total memory"] == (True, "1024 MiB, all its processes and files in tmpfs "
                                          f"together (cgroup v{cgroups.version})")
    assert rows["processes"][0] and rows["CPU share"][0]
    if os.geteuid() == 0:
        assert rows["user"][1].startswith("an unprivileged user of its own (uid ")
        assert rows["disk"] == (True, "a tmpfs of its own per submission (charged to its "
                                      "memory cgroup)")


def test_the_driver_runs_in_a_capped_cgroup_of_its_own(cgroups):
    # The driver (nbclient) is capped too: a flood of messages that grows it, or its CPU
    # time, counts against its own caps, not the machine's; the kernel keeps its share.
    notebook = new_notebook(cells=[new_code_cell("import time\ntime.sleep(4)")],
                            metadata={"kernelspec": KERNELSPEC})
    bwrap, _ = homework.find_bwrap()
    done = []
    thread = threading.Thread(target=lambda: done.append(sandbox.run_submission(
        nbformat.writes(notebook).encode(), "sleep.ipynb", {}, "1" * 32,
        homework.Limits(timeout=60), bwrap=bwrap, cgroups=cgroups)))
    thread.start()
    seen, limits = set(), set()
    try:
        while thread.is_alive() and not {"driver", "kernel"} <= seen:
            for folder in cgroups.parents[0].glob(f"grade-{os.getpid()}-*"):
                for pid in _read(folder / "cgroup.procs").split():
                    line = _read(Path("/proc") / pid / "cmdline")
                    role = "driver" if "_execute" in line else \
                        "kernel" if "ipykernel_launcher" in line else None
                    if role:
                        seen.add(role)
                        limit = _read(folder / "memory.max") or \
                            _read(folder / "memory.limit_in_bytes")
                        limits.add((role, folder.name.endswith("-driver"), limit.strip()))
            time.sleep(0.1)
    finally:
        thread.join()
    sandbox.remove_scratch(done[0][1])
    assert done[0][0]["status"] == "ok", done[0][0]
    assert limits == {("kernel", False, str(4 << 30)), ("driver", True, str(1 << 30))}


def _read(path):
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def test_busy_loops_are_held_to_the_cpu_quota(cgroups):
    # Four loops for 2 s: even on a loaded machine they would get more than a quarter
    # core, so the quota (a 100 ms period) throttles them many times.
    notebook = new_notebook(cells=[new_code_cell(
        "import subprocess, sys, time\n"
        "loops = [subprocess.Popen([sys.executable, '-c', 'while True: pass'], "
        "start_new_session=True) for _ in range(4)]\n"
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
    monkeypatch.setattr(homework.sandbox, "find_cgroups", lambda: (None, "none here"))
    # A notebook that never ends, without holding a core for its two runs (a busy loop
    # beside other rows: test_homework.py's hostile folder; under a quota: above).
    _write(tmp_path, {"loops.ipynb": ["import time\nwhile True:\n    time.sleep(0.1)"]})
    limits = homework.Limits(timeout=2)  # counted from the kernel's start
    (grade,) = homework.grade_folder(tmp_path, limits=limits, echo=True)
    err = capsys.readouterr().err
    assert grade.status == "timeout"
    assert "graded again alone after a timeout" in grade.reason
    assert "WARNING: no cgroup per submission (none here)" in err
    assert "What is NOT capped for a submission:\n  total memory: NOT capped" in err
    assert "CPU share: NOT capped" in err
    assert "re-graded alone at the end" in err and "re-grading 1 timed-out" in err
    with pytest.raises(homework.SandboxUnavailable, match="cgroup"):
        homework.grade_folder(tmp_path, cgroups="require")

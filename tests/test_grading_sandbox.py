"""Each submission runs in a bubblewrap sandbox: nothing it does reaches the machine.

Specification of :mod:`resnet_theory.homework.sandbox`. A folder of hostile
submissions is graded once (two at a time): one writes outside its scratch
directory (the grader's home, the machine's /tmp, a folder next to the
submissions), one overwrites another submission and ``grades.csv``, one connects
to a socket this test listens on at 127.0.0.1, one leaves background processes
behind, two run into the memory and file-size limits, one writes a forged result
to every process it can see and kills them (the driver is not among them: it runs
in a sandbox of its own), and one tries to write to ``/``, ``/dev`` and a large
``/dev/shm`` and to make a user namespace. Without ``bwrap``
these tests are skipped with the reason, except under ``CI=true``, where
``.ci/run`` installs bubblewrap first and they must run. The last tests cover the
modes without a sandbox (a loud warning; ``--require-sandbox`` refuses).
"""

import csv
import os
import socket
import uuid
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from resnet_theory import homework
from resnet_theory.homework import bwrap as bwrap_module

KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}
EXERCISE = new_markdown_cell("```{exercise} Depth\n:label: ex-shamir-trap-depth\nCompute it.\n```")
MARKER = f"resnet-theory-sandbox-test-{uuid.uuid4().hex}"
LATE_WRITE = ("import time; time.sleep(3); open({victim!r}, 'w').write('late'); "
              "time.sleep(300)")


# Issue 23, item 2: write a forged, well-formed result to the standard output of every
# process the kernel can see (the driver's, in the old design), then stop and kill
# them all. The driver runs in another sandbox: it is not among them, and the real
# status ("error", from the next cell) comes back.
FORGE_STATUS = """import json, os, signal
frame = json.dumps({"mac": "0" * 64, "payload": {"status": "ok", "answers": {},
                    "reason": '=HYPERLINK("http://evil.example","click")'}})
seen = []
for pid in os.listdir('/proc'):
    if not pid.isdigit() or int(pid) == os.getpid():
        continue
    try:
        seen.append(open(f'/proc/{pid}/cmdline', 'rb').read())
    except OSError:
        pass
    for fd in ('1', '2'):
        try:
            with open(f'/proc/{pid}/fd/{fd}', 'a') as handle:
                handle.write(frame + "\\n")
        except OSError:
            pass
    for sig in (signal.SIGSTOP, signal.SIGKILL):
        try:
            os.kill(int(pid), sig)
        except OSError:
            pass
assert not any(b'_execute' in cmdline for cmdline in seen), seen"""

# Issue 23, item 3: / and /dev are read-only, /dev/shm is small, no new user namespace.
READ_ONLY = """import ctypes, os
wrote = []
for path in ('/x', '/dev/x', '/usr/x', '/etc/x'):
    try:
        open(path, 'w').write('x')
        wrote.append(path)
    except OSError:
        pass
try:
    open('/dev/shm/big', 'wb').write(bytes(50_000_000))
    wrote.append('/dev/shm 50 MB')
except OSError:
    pass
if ctypes.CDLL(None, use_errno=True).unshare(0x10000000) == 0:
    wrote.append('a new user namespace')
open('/dev/null', 'w').write('x')  # devices still work
assert not wrote, wrote"""


def _attempt(code):
    """A cell that tries ``code`` and goes on whatever happens (so the run stays ok)."""
    body = "\n".join("    " + line for line in code.splitlines())
    return f"try:\n{body}\nexcept Exception as error:\n    print(type(error).__name__)"


@pytest.fixture(scope="module")
def bwrap():
    path, why = homework.find_bwrap()
    if path is None:
        message = f"bubblewrap is not usable, the sandbox is not tested: {why}"
        if os.environ.get("CI") == "true":
            pytest.fail(message + " (CI=true: .ci/run installs bubblewrap as root)")
        pytest.skip(message)
    return path


@pytest.fixture(scope="module")
def hostile(bwrap, tmp_path_factory):
    base = tmp_path_factory.mktemp("sandbox")
    folder, outside = base / "submissions", base / "outside"
    folder.mkdir()
    outside.mkdir()
    host_tmp = Path("/tmp") / f"{MARKER}.txt"
    home = Path.home() / f".{MARKER}"
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    port = listener.getsockname()[1]
    victim, grades_csv = folder / "victim.ipynb", folder / "grades.csv"
    notebooks = {
        "victim.ipynb": ["ex_shamir_trap_depth_answer = 0.5"],
        "writes_outside.ipynb": [
            _attempt(f"open({str(outside / 'escaped.txt')!r}, 'w').write('escaped')"),
            _attempt(f"open({str(host_tmp)!r}, 'w').write('escaped')"),
            _attempt(f"open({str(home)!r}, 'w').write('escaped')"),
            "open('inside.txt', 'w').write('the scratch directory is writable')"],
        "overwrites.ipynb": [
            _attempt(f"open({str(victim)!r}, 'w').write('overwritten')"),
            _attempt(f"open({str(grades_csv)!r}, 'w').write('victim.ipynb,ok,,1/1,1')"),
            _attempt(f"import os\nos.remove({str(victim)!r})")],
        "connects.ipynb": [
            _attempt(f"import socket\nsocket.create_connection(('127.0.0.1', {port}), "
                     "timeout=3).sendall(b'escaped')")],
        "lingers.ipynb": [
            "import subprocess, sys\n"
            f"code = {LATE_WRITE.format(victim=str(victim))!r}\n"
            f"subprocess.Popen([sys.executable, '-c', code, {MARKER!r}], "
            "start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
            f"subprocess.Popen(['sh', '-c', 'sleep 300', {MARKER!r}], start_new_session=True)"],
        "hogs_memory.ipynb": ["block = bytearray(8 * 2**30)"],
        "hogs_disk.ipynb": ["open('big.bin', 'wb').write(bytes(20_000_000))"],
        "forges_status.ipynb": [FORGE_STATUS, "raise RuntimeError('boom')"],
        "read_only.ipynb": [READ_ONLY],
    }
    for name, sources in notebooks.items():
        nbformat.write(new_notebook(cells=[EXERCISE, *map(new_code_cell, sources)],
                                    metadata={"kernelspec": KERNELSPEC}), folder / name)
    grades_csv.write_text("written before grading\n")
    before = {path.name: path.read_bytes() for path in folder.glob("*.ipynb")}
    limits = homework.Limits(timeout=60, max_output_bytes=1_000_000, file_bytes=10_000_000)
    try:
        grades = homework.grade_folder(folder, limits=limits, jobs=2, sandbox="require")
        survivors = _processes_with(MARKER)
        try:
            connection, _ = listener.accept()
            connection.close()
            connected = True
        except BlockingIOError:
            connected = False
    finally:
        listener.close()
    yield {"folder": folder, "outside": outside, "host_tmp": host_tmp, "home": home,
           "grades": {g.notebook: g for g in grades}, "before": before,
           "survivors": survivors, "connected": connected}
    for path in (host_tmp, home):
        path.unlink(missing_ok=True)


def _processes_with(marker):
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def test_every_hostile_notebook_ran_in_the_sandbox(hostile):
    for name, grade in hostile["grades"].items():
        assert grade.sandbox == "bubblewrap", name
    assert hostile["grades"]["writes_outside.ipynb"].status == "ok"


def test_writing_outside_the_scratch_directory_changes_nothing(hostile):
    assert list(hostile["outside"].iterdir()) == []
    assert not hostile["host_tmp"].exists()
    assert not hostile["home"].exists()


def test_other_submissions_and_grades_csv_are_out_of_reach(hostile):
    folder = hostile["folder"]
    for name, content in hostile["before"].items():
        assert (folder / name).read_bytes() == content, name
    with (folder / "grades.csv").open(newline="") as handle:
        rows = {row[0]: row for row in csv.reader(handle)}
    assert rows["victim.ipynb"][1:4] == ["ok", "", "0/1"]  # 0.5 is wrong; not forged to 1/1


def test_a_socket_on_the_loopback_sees_no_connection(hostile):
    assert hostile["grades"]["connects.ipynb"].status == "ok"
    assert hostile["connected"] is False


def test_no_background_process_survives_grading(hostile):
    assert hostile["grades"]["lingers.ipynb"].status == "ok"
    assert hostile["survivors"] == []


def test_memory_and_file_size_are_limited(hostile):
    grades = hostile["grades"]
    assert grades["hogs_memory.ipynb"].status == "error"
    assert "MemoryError" in grades["hogs_memory.ipynb"].reason
    assert grades["hogs_disk.ipynb"].status == "error"
    assert "File too large" in grades["hogs_disk.ipynb"].reason


def test_a_forged_result_and_killed_processes_do_not_change_the_status(hostile):
    grade = hostile["grades"]["forges_status.ipynb"]
    assert (grade.status, grade.reason) == ("error", "cell 2 raised RuntimeError: boom")
    assert "HYPERLINK" not in (hostile["folder"] / "grades.csv").read_text()


def test_root_and_dev_are_read_only_and_dev_shm_is_small(hostile, bwrap):
    grade = hostile["grades"]["read_only.ipynb"]
    if not bwrap_module._supports(bwrap, "--disable-userns"):  # bubblewrap < 0.8
        assert grade.status == "ok" or grade.reason.endswith("['a new user namespace']")
    else:
        assert grade.status == "ok", grade.reason


def test_the_sandbox_command_isolates_network_processes_and_files(bwrap):
    line = homework.sandbox.bwrap_command(bwrap, ["true"],
                                          writable=[("/scratch/x", "/submission")])
    for flag in ("--unshare-net", "--unshare-pid", "--unshare-user", "--die-with-parent",
                 "--new-session", "--clearenv", "--disable-userns"):
        assert flag in line
    assert line[line.index("--cap-drop") + 1] == "ALL"
    writable = [line[i + 1] for i, arg in enumerate(line) if arg == "--bind"]
    assert writable == ["/scratch/x"]
    sizes = [line[i + 1:i + 4] for i, arg in enumerate(line) if arg == "--size"]
    assert [s[1:] for s in sizes] == [["--tmpfs", "/dev/shm"], ["--tmpfs", "/tmp"]]
    remounted = [line[i + 1] for i, arg in enumerate(line) if arg == "--remount-ro"]
    assert remounted == ["/dev", "/"]
    assert line.index("--remount-ro", line.index("--bind")) > line.index("--bind")


def test_the_driver_and_the_kernel_run_in_separate_sandboxes(bwrap, tmp_path):
    from resnet_theory.homework import sandbox

    limits = homework.Limits(timeout=10)
    kernel = sandbox.kernel_command(bwrap, tmp_path, limits, 7)
    driver = sandbox.driver_command(bwrap, tmp_path, limits, 8)
    assert kernel[0] == driver[0] == bwrap
    kernel_writable = [kernel[i + 1] for i, arg in enumerate(kernel) if arg == "--bind"]
    assert kernel_writable == [str(tmp_path / "fs" / "box"), str(tmp_path / "fs" / "sockets")]
    assert "--bind" not in driver  # the driver's view of the sockets is read-only
    assert str(tmp_path / "control") not in " ".join(kernel)
    assert sandbox.OUTER_MARGIN == 60


# ------------------------------------------------------------------ without a sandbox

@pytest.fixture
def no_bwrap(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    bwrap_module._probe.cache_clear()


def test_the_answer_key_is_computed_inside_the_sandbox(bwrap, tmp_path):
    # make test takes the book's key from the nbval run (conftest.py); make answer-key
    # and make grade run the assignment here, in the sandbox, like a submission.
    outside = tmp_path / "outside"
    outside.mkdir()
    assignment = tmp_path / "assignment" / "example.ipynb"
    assignment.parent.mkdir()
    solution = _attempt(f"open({str(outside / 'written')!r}, 'w').write('x')")
    nbformat.write(new_notebook(cells=[EXERCISE, new_code_cell(solution), new_code_cell(
        "ex_shamir_trap_depth_answer = 0.25")], metadata={"kernelspec": KERNELSPEC}), assignment)
    key = homework.compute_answer_key(assignment, sandbox="require")
    assert key.answers == {"ex-shamir-trap-depth": 0.25}
    assert list(outside.iterdir()) == []


def test_without_bwrap_require_sandbox_refuses(no_bwrap, tmp_path):
    (tmp_path / "a.ipynb").write_text("{ not json")
    with pytest.raises(homework.SandboxUnavailable, match="bubblewrap"):
        homework.grade_folder(tmp_path, sandbox="require")
    assert homework.main(["grade", str(tmp_path), "--require-sandbox"]) == 2
    assert not (tmp_path / "grades.csv").exists()


def test_without_bwrap_grading_warns_loudly_and_goes_on(no_bwrap, tmp_path, capsys):
    (tmp_path / "a.ipynb").write_text("{ not json")
    grades = homework.grade_folder(tmp_path)
    assert [g.status for g in grades] == ["invalid"]
    assert "NOT sandboxed" in capsys.readouterr().err

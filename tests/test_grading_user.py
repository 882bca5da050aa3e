"""Grading as an ordinary user: what is capped is said, and what is not (issue 38, G).

The suite usually runs as root (a container); this file makes an ordinary user
of it, a user id no account has, and runs ``python -m resnet_theory.homework
grade`` as that user on a small class, as a lecturer without root would. The
kernel then runs as that user (in bubblewrap's user namespace where ``bwrap``
works), and on a machine that delegates no cgroup to the user (cgroup v1, or v2
without a delegated scope) the grader says loudly that total memory, CPU share
and disk are not capped. Where the user does get a cgroup (a delegated v2
scope), it says they are. Skipped when the suite does not run as root.
"""

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook
from resnet_theory.homework import scratch

KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}


def _free_id():
    taken = scratch._ids("/etc/passwd", 2) | scratch._ids("/etc/group", 2)
    below = scratch.sandbox_user().uid
    return next(uid for uid in range(below - 1, 1000, -1) if uid not in taken)


@pytest.fixture(scope="module")
def as_user():
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("making an ordinary user needs root and setpriv")
    uid = _free_id()
    base = Path(tempfile.mkdtemp(prefix="grader-user-", dir="/tmp"))
    base.chmod(0o755)
    home, tmp, folder = base / "home", base / "tmp", base / "submissions"
    for path in (home, tmp, folder):
        path.mkdir()
    code = f"import os\nassert (os.getuid(), os.geteuid()) == ({uid}, {uid}), os.getuid()"
    nbformat.write(new_notebook(cells=[new_code_cell(code)], metadata={"kernelspec": KERNELSPEC}),
                   folder / "alice.ipynb")
    for root, dirs, files in os.walk(base):
        for name in [root, *(os.path.join(root, n) for n in dirs + files)]:
            os.chown(name, uid, uid)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
           "TMPDIR": str(tmp), "LANG": "C.UTF-8", "XDG_CACHE_HOME": str(home / ".cache")}
    command = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
               sys.executable, "-m", "resnet_theory.homework", "grade", str(folder),
               "--assignment", str(folder / "alice.ipynb"),
               "--timeout", "60", "--jobs", "1"]
    try:
        result = subprocess.run(command, env=env, cwd=base, capture_output=True, text=True,
                                timeout=300)
        yield result, folder, uid
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_an_ordinary_user_grades_and_the_kernel_runs_as_that_user(as_user):
    result, folder, _ = as_user
    assert result.returncode == 0, result.stderr
    rows = (folder / "grades.csv").read_text().splitlines()
    assert rows[1].startswith("alice.ipynb,ok,"), rows


def test_what_is_not_capped_is_said(as_user):
    result, _, _ = as_user
    err = result.stderr
    assert "caps of each submission: user: your own user (not root)" in err
    if "WARNING: no cgroup per submission" in err:
        for what in ("total memory", "CPU share", "disk"):
            assert f"  {what}: NOT capped" in err, what
    else:  # a cgroup delegated to the user: capped in total
        assert "total memory: " in err and "MiB, all its processes" in err

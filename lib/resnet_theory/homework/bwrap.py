"""Bubblewrap: the command lines of the kernel's and the driver's sandboxes.

:func:`bwrap_command` builds a sandbox with its own user, PID, network, IPC and
UTS namespaces, no capabilities, an empty environment, the system, the Python
installation and the project's environment read-only, ``/`` and ``/dev``
read-only, a small private ``/tmp`` and ``/dev/shm``, and only the folders it is
given writable. :func:`find_bwrap` says whether ``bwrap`` builds it here (a
probe runs ``/bin/true`` in it once, as the user the submissions run as).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from .scratch import sandbox_user, unreachable

__all__ = ["find_bwrap", "bwrap_command", "as_sandbox_user", "sandbox_environment",
           "driver_environment", "read_only_paths", "SANDBOX_ROOT", "SOCKET_ROOT"]

#: Where the scratch directory appears inside the kernel's sandbox.
SANDBOX_ROOT = "/submission"
#: Where the kernel's sockets appear, in both sandboxes.
SOCKET_ROOT = "/run/kernel"
#: Files of /etc that programs need (the loader cache, fonts, time zone, user names).
_ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "fonts", "localtime",
              "nsswitch.conf", "passwd", "group", "mime.types")
_SYSTEM_DIRS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")


@functools.cache
def _bwrap_help(executable):
    try:
        result = subprocess.run([executable, "--help"], capture_output=True, text=True,
                                timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return result.stdout + result.stderr


def _supports(executable, flag):
    """Whether this ``bwrap`` knows ``flag`` (``--size`` from 0.7, ``--disable-userns`` 0.8)."""
    return re.search(rf"(^|\s){re.escape(flag)}(\s|$)", _bwrap_help(str(executable))) is not None


def _supports_size(executable):
    return _supports(executable, "--size")


@functools.cache
def _probe(executable):
    """``None`` if ``executable`` can build the grading sandbox, else bwrap's complaint."""
    command = as_sandbox_user(bwrap_command(executable, ["/bin/true"]), executable)
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"{type(error).__name__}: {error}"
    if result.returncode != 0:
        return " ".join(result.stderr.split())[:300] or f"exit status {result.returncode}"
    return None


def find_bwrap():
    """The path of a working ``bwrap``, or ``(None, reason)`` when there is none.

    Returns
    -------
    tuple
        ``(path, "")`` when ``bwrap`` is on ``PATH`` and builds the grading sandbox
        (user, PID and network namespaces, read-only root; a probe runs
        ``/bin/true`` in it once), else ``(None, why)``.

    Examples
    --------
    >>> path, why = find_bwrap()
    >>> (path is None) == bool(why)
    True
    """
    path = shutil.which("bwrap")
    if path is None:
        return None, "bubblewrap (bwrap) is not installed"
    problem = _probe(path)
    if problem is not None:
        return None, f"{path} cannot build the sandbox here ({problem})"
    return path, ""


def read_only_paths():
    """The Python installation and the project's environment, outermost first (as root,
    those the sandbox's user may enter: the interpreter finds its library elsewhere)."""
    import resnet_theory

    candidates = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix,
                                               sys.base_exec_prefix)}
    candidates.add(Path(resnet_theory.__file__).resolve().parents[1])
    candidates.add(Path(sys.executable).resolve().parent)
    user = sandbox_user()
    kept = []
    for path in sorted(candidates, key=lambda p: len(p.parts)):
        if path.exists() and not any(path == k or k in path.parents for k in kept) and \
                (user is None or unreachable(path, user) is None):
            kept.append(path)
    return kept


def bwrap_command(executable, command, *, writable=(), readable=(), chdir="/",
                  tmp_bytes=200_000_000, shm_bytes=16_000_000, sync_fd=None,
                  environment=None):
    """The ``bwrap`` command line of a grading sandbox.

    Parameters
    ----------
    executable : str
        The ``bwrap`` program.
    command : list of str
        What to run inside.
    writable, readable : sequence of (host path, path inside)
        Folders or files bound read-write, or read-only, into the sandbox. The
        system, the Python installation and the project's environment are
        always bound read-only; nothing else of the machine is visible.
    chdir : str, optional
        The working directory inside.
    tmp_bytes, shm_bytes : int, optional
        Sizes of the private ``/tmp`` and ``/dev/shm`` (where ``bwrap`` supports
        ``--size``, from version 0.7; older versions get unlimited ones).
    sync_fd : int, optional
        A file descriptor the sandbox keeps open while it runs (its closing
        tells the driver that the kernel is gone).
    environment : dict, optional
        The whole environment inside (default: :func:`sandbox_environment`).

    Returns
    -------
    list of str

    Examples
    --------
    >>> line = bwrap_command("bwrap", ["true"], writable=[("/tmp/x", "/submission")])
    >>> all(flag in line for flag in ("--unshare-net", "--unshare-pid", "--die-with-parent"))
    True
    >>> line[line.index("--bind") + 1:line.index("--bind") + 3]
    ['/tmp/x', '/submission']
    >>> line[line.index("--remount-ro") + 1]
    '/dev'
    """
    executable = str(executable)
    sized = _supports_size(executable)
    line = [executable, "--unshare-user", "--unshare-pid", "--unshare-net",
            "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    if _supports(executable, "--disable-userns"):
        line.append("--disable-userns")  # bubblewrap >= 0.8: no nested user namespaces
    line += ["--cap-drop", "ALL", "--die-with-parent", "--new-session", "--clearenv",
             "--proc", "/proc", "--dev", "/dev"]
    if shm_bytes and sized:
        line += ["--size", str(int(shm_bytes))]
    line += ["--tmpfs", "/dev/shm", "--remount-ro", "/dev"]
    if tmp_bytes and sized:
        line += ["--size", str(int(tmp_bytes))]
    line += ["--tmpfs", "/tmp"]
    for name in _SYSTEM_DIRS:
        path = Path("/") / name
        if path.is_symlink():
            line += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            line += ["--ro-bind", str(path), str(path)]
    for name in _ETC_FILES:
        line += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    for path in read_only_paths():
        line += ["--ro-bind", str(path), str(path)]
    for host, inside in readable:
        line += ["--ro-bind", str(host), str(inside)]
    for host, inside in writable:
        line += ["--bind", str(host), str(inside)]
    if sync_fd is not None:
        line += ["--sync-fd", str(int(sync_fd))]
    line += ["--remount-ro", "/", "--chdir", chdir]
    if environment is None:
        environment = sandbox_environment(SANDBOX_ROOT)
    for key, value in environment.items():
        line += ["--setenv", key, value]
    return [*line, "--", *command]


def sandbox_environment(root):
    """The whole environment of the kernel (nothing of the grader's)."""
    home = f"{root}/.home"
    return {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": home,
            "LANG": "C.UTF-8", "TMPDIR": "/tmp", "MPLBACKEND": "Agg",
            "MPLCONFIGDIR": f"{home}/matplotlib", "IPYTHONDIR": f"{home}/ipython",
            "JUPYTER_PLATFORM_DIRS": "1", "JUPYTER_RUNTIME_DIR": f"{home}/runtime",
            "PYDEVD_DISABLE_FILE_VALIDATION": "1", "PYTHONWARNINGS": "ignore",
            "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def driver_environment():
    return {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": "/tmp",
            "LANG": "C.UTF-8", "TMPDIR": "/tmp", "JUPYTER_PLATFORM_DIRS": "1",
            "JUPYTER_RUNTIME_DIR": "/tmp", "PYTHONWARNINGS": "ignore",
            "PYTHONDONTWRITEBYTECODE": "1"}


def _setuid(path):
    try:
        return bool(os.stat(path).st_mode & stat.S_ISUID)
    except (OSError, TypeError):
        return False


def as_sandbox_user(command, bwrap=None):
    """``command`` run as :func:`resnet_theory.homework.scratch.sandbox_user` (a root
    grader), else unchanged."""
    user = sandbox_user()
    if user is None:
        return command
    return user.command(command, no_new_privs=not _setuid(bwrap))

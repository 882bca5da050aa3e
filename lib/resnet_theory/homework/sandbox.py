r"""Running one submitted notebook in its sandbox, and exporting its answers as data.

:func:`run_submission` executes a notebook top to bottom in a fresh kernel and
brings back what it exported. Three processes take part, and only the grader
and the driver are trusted:

- the **kernel** (the student's code) runs inside a ``bubblewrap`` sandbox of
  its own (:func:`kernel_command`): the operating system, the Python
  installation and the project's environment read-only, ``/`` and ``/dev``
  read-only, the submission's scratch folder (``/submission``) and the folder
  of its sockets (``/run/kernel``) the only writable places besides a small
  private ``/tmp`` and ``/dev/shm``; no network, its own PID, IPC and UTS
  namespaces, no capabilities, no further user namespaces
  (``--disable-userns`` where ``bwrap`` has it), an empty environment, and
  ``setrlimit`` limits (address space, processes, file size, CPU time). Where
  the machine allows it the whole sandbox also runs in a cgroup of its own
  (:mod:`resnet_theory.homework.sandbox` ``Cgroups``: ``memory.max``,
  ``pids.max``, ``cpu.max``), which caps the submission's *total* memory,
  processes and CPU share;
- the **driver** (:func:`driver_cli`, started from this file alone; also
  ``python -m resnet_theory.homework _execute``; :func:`execute`) sends the
  cells to the kernel over ZeroMQ on Unix sockets in ``/run/kernel`` and
  decides the status. It runs in a second, separate sandbox: another PID
  namespace (the kernel cannot see, signal or trace it), a read-only view of
  the sockets, and an output file the kernel's sandbox does not contain. It
  makes itself non-dumpable (``PR_SET_DUMPABLE`` 0) and signs its result with a
  key that only the grader and the driver know;
- the **grader** (this process) writes the connection file, starts both
  sandboxes, enforces the outer time limit (``timeout + 60 s``) and reads the
  exported answers.

Without ``bwrap`` the kernel and the driver run as ordinary processes in their
own sessions with the same limits except the process limit ("today's
isolation"); the kernel can then read and write whatever the lecturer's account
can.

After the notebook, the kernel runs one more cell that only *exports* the answer
variables: numbers, strings, ``None`` and lists of them as JSON, NumPy arrays and
scalars of numeric type as ``.npy`` files, at most
:attr:`Limits.answer_bytes` bytes each, into a directory named after a random
nonce. The kernel prints a manifest between two copies of that nonce. Nothing
else comes back: the checks run in the grader's own process
(:mod:`resnet_theory.homework.grading`), on data read with ``json`` and
``numpy.load(..., allow_pickle=False)``. No text the kernel controls reaches a
``reason``, except an exception's class name and a short, filtered message.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import hashlib
import hmac
import json
import math
import os
import re
import resource
import secrets
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from time import monotonic, time

import nbformat

__all__ = ["Limits", "SandboxUnavailable", "find_bwrap", "bwrap_command", "kernel_command",
           "driver_command", "run_submission", "remove_scratch", "export_source", "execute",
           "scratch_root", "clean_stale_scratch", "stop_all_runs", "reset_stop", "Cgroups",
           "find_cgroups",
           "SANDBOX_ROOT", "SOCKET_ROOT", "OUTER_MARGIN"]

#: Where the scratch directory appears inside the kernel's sandbox.
SANDBOX_ROOT = "/submission"
#: Where the kernel's sockets appear, in both sandboxes.
SOCKET_ROOT = "/run/kernel"
#: Where the driver finds the notebook, inside its sandbox.
_DRIVER_ROOT = "/run/grader"
#: Seconds the whole run may take beyond the notebook's time limit (start-up, export).
OUTER_MARGIN = 60.0
#: Files of /etc that programs need (the loader cache, fonts, time zone, user names).
_ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "fonts", "localtime",
              "nsswitch.conf", "passwd", "group", "mime.types")
_SYSTEM_DIRS = ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32")
_MANIFEST_LIMIT = 200_000
_RESULT_LIMIT = 400_000
_STATUSES = ("ok", "error", "output-limit", "timeout", "kernel-died", "invalid",
             "grader-error")


class SandboxUnavailable(RuntimeError):
    """Raised when a sandbox is required but ``bwrap`` is missing or does not work."""


@dataclass(frozen=True)
class Limits:
    """Limits for one submission.

    Attributes
    ----------
    timeout : float
        Seconds of wall-clock time for the notebook's own cells. The whole run
        (kernel start, cells, export) is killed ``OUTER_MARGIN`` (60) seconds
        later.
    max_output_bytes : int
        Output budget of the notebook; a cell that exceeds it is interrupted.
    memory_bytes : int
        ``RLIMIT_AS`` of every process (address space), and ``memory.max`` of
        the submission's cgroup (all its processes and tmpfs pages together).
    processes : int
        ``RLIMIT_NPROC`` inside the sandbox and ``pids.max`` of the cgroup
        (Linux does not enforce ``RLIMIT_NPROC`` for root: only the cgroup
        caps the processes of a root grader).
    file_bytes : int
        ``RLIMIT_FSIZE``: the largest file a process may write.
    answer_bytes : int
        The largest exported answer (JSON text or ``.npy`` file).
    tmp_bytes : int
        Size of the sandbox's private ``/tmp``.
    shm_bytes : int
        Size of the sandbox's ``/dev/shm``.
    cpus : float
        CPU share of the submission's cgroup (``cpu.max``): 1.0 is one core.
    notebook_bytes : int
        The largest submitted file that is graded (larger ones are skipped).
    """

    timeout: float = 180.0
    max_output_bytes: int = 5_000_000
    memory_bytes: int = 4 << 30
    processes: int = 256
    file_bytes: int = 100_000_000
    answer_bytes: int = 1_000_000
    tmp_bytes: int = 200_000_000
    shm_bytes: int = 16_000_000
    cpus: float = 1.0
    notebook_bytes: int = 20_000_000

    def __post_init__(self):
        for name in ("timeout", "max_output_bytes", "memory_bytes", "processes",
                     "file_bytes", "answer_bytes", "tmp_bytes", "shm_bytes", "cpus",
                     "notebook_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                    not value > 0 or not math.isfinite(value):
                raise ValueError(f"{name} must be positive, got {value}")

    @property
    def cpu_seconds(self):
        """``RLIMIT_CPU`` per process: the time limit plus one minute."""
        return int(math.ceil(self.timeout)) + 60


def _one_line(text, limit=300):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


# ------------------------------------------------------------------------- bubblewrap

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
    command = bwrap_command(executable, ["/bin/true"])
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


def _read_only_paths():
    """The Python installation and the project's environment, outermost first."""
    import resnet_theory

    candidates = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix,
                                               sys.base_exec_prefix)}
    candidates.add(Path(resnet_theory.__file__).resolve().parents[1])
    candidates.add(Path(sys.executable).resolve().parent)
    kept = []
    for path in sorted(candidates, key=lambda p: len(p.parts)):
        if path.exists() and not any(path == k or k in path.parents for k in kept):
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
        The whole environment inside (default: :func:`_sandbox_environment`).

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
    for path in _read_only_paths():
        line += ["--ro-bind", str(path), str(path)]
    for host, inside in readable:
        line += ["--ro-bind", str(host), str(inside)]
    for host, inside in writable:
        line += ["--bind", str(host), str(inside)]
    if sync_fd is not None:
        line += ["--sync-fd", str(int(sync_fd))]
    line += ["--remount-ro", "/", "--chdir", chdir]
    if environment is None:
        environment = _sandbox_environment(SANDBOX_ROOT)
    for key, value in environment.items():
        line += ["--setenv", key, value]
    return [*line, "--", *command]


def _sandbox_environment(root):
    """The whole environment of the kernel (nothing of the grader's)."""
    home = f"{root}/.home"
    return {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": home,
            "LANG": "C.UTF-8", "TMPDIR": "/tmp", "MPLBACKEND": "Agg",
            "MPLCONFIGDIR": f"{home}/matplotlib", "IPYTHONDIR": f"{home}/ipython",
            "JUPYTER_PLATFORM_DIRS": "1", "JUPYTER_RUNTIME_DIR": f"{home}/runtime",
            "PYDEVD_DISABLE_FILE_VALIDATION": "1", "PYTHONWARNINGS": "ignore",
            "PYTHONDONTWRITEBYTECODE": "1", "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def _driver_environment():
    return {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": "/tmp",
            "LANG": "C.UTF-8", "TMPDIR": "/tmp", "JUPYTER_PLATFORM_DIRS": "1",
            "JUPYTER_RUNTIME_DIR": "/tmp", "PYTHONWARNINGS": "ignore",
            "PYTHONDONTWRITEBYTECODE": "1"}


def _prepare_home(box):
    """The scratch home, with the grader's Matplotlib font cache (saves a rebuild)."""
    home = box / ".home"
    (home / "matplotlib").mkdir(parents=True)
    (home / "runtime").mkdir()
    for font_cache in _font_caches():
        shutil.copy2(font_cache, home / "matplotlib" / font_cache.name)


@functools.cache
def _font_caches():
    try:
        import matplotlib

        return tuple(Path(matplotlib.get_cachedir()).glob("fontlist-*.json"))
    except Exception:  # no cache: the kernel builds one
        return ()


# -------------------------------------------------------------------- scratch folders

def scratch_root():
    """The grader's own folder of scratch directories (created ``0700`` if missing).

    ``$TMPDIR/resnet-theory-grading-<uid>``; refused if it is a symbolic link,
    not a directory, or owned by someone else.
    """
    root = Path(tempfile.gettempdir()) / f"resnet-theory-grading-{os.getuid()}"
    try:
        root.mkdir(mode=0o700)
    except FileExistsError:
        pass
    info = os.lstat(root)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise SandboxUnavailable(f"{root} is not a directory of this user; remove it")
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(root, 0o700)
    return root


def _start_time(pid):
    """The start time of a process (field 22 of ``/proc/<pid>/stat``), or ``None``."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()[19]


def _new_scratch():
    scratch = Path(tempfile.mkdtemp(prefix="grade-", dir=scratch_root()))
    (scratch / "owner").write_text(f"{os.getpid()} {_start_time(os.getpid())}\n")
    return scratch


#: A scratch directory without its ``owner`` file is one a grader is making (between
#: creating it and writing the file), unless it is older than this many seconds.
OWNERLESS_GRACE_SECONDS = 60


def clean_stale_scratch():
    """Remove scratch directories whose grader is gone (killed mid-batch); return how many.

    A directory is kept while the grader named in its ``owner`` file runs, and, without
    that file, for ``OWNERLESS_GRACE_SECONDS`` after it was made: another grader may be
    about to write it.
    """
    removed = 0
    root = scratch_root()
    for entry in root.iterdir():
        if not entry.name.startswith("grade-") or entry.is_symlink() or not entry.is_dir():
            continue
        try:
            pid, started = (entry / "owner").read_text().split()
        except (OSError, ValueError):
            try:
                if time() - entry.stat().st_mtime < OWNERLESS_GRACE_SECONDS:
                    continue  # being made by another grader
            except OSError:
                continue  # gone meanwhile
            pid, started = "0", ""
        if pid.isdigit() and int(pid) > 0 and _start_time(int(pid)) == started:
            continue  # a grader that is still running
        remove_scratch(entry)
        removed += 1
    return removed


def remove_scratch(scratch):
    """Remove a scratch directory, even one whose folders the notebook made unreadable."""
    scratch = Path(scratch)
    for root, dirs, _ in os.walk(scratch):
        for name in dirs:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                try:
                    os.chmod(path, 0o700)
                except OSError:
                    pass
    shutil.rmtree(scratch, ignore_errors=True)


# ------------------------------------------------------------------------------ cgroups

class _Cgroup:
    """One submission's cgroup: folders (one per controller hierarchy) and limits."""

    def __init__(self, folders, version):
        self.folders, self.version = folders, version

    def wrap(self, command):
        """``command`` prefixed by a shell that moves itself into the cgroup first."""
        procs = " ".join(f"{f}/cgroup.procs" for f in self.folders)
        script = f'for f in {procs}; do echo $$ > "$f" || exit 125; done; exec "$@"'
        return ["/bin/sh", "-c", script, "sh", *command]

    def _pids(self):
        found = set()
        for folder in self.folders:
            try:
                found.update(int(p) for p in (folder / "cgroup.procs").read_text().split())
            except (OSError, ValueError):
                pass
        return found

    def kill(self):
        """SIGKILL every process in the cgroup."""
        if self.version == 2:
            try:
                (self.folders[0] / "cgroup.kill").write_text("1")
                return
            except OSError:
                pass
        for _ in range(20):
            pids = self._pids()
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass

    def out_of_memory(self):
        """Whether the memory limit killed a process (``oom_kill`` / ``under_oom``)."""
        for folder in self.folders:
            for name in ("memory.events", "memory.oom_control"):
                try:
                    text = (folder / name).read_text()
                except OSError:
                    continue
                for line in text.splitlines():
                    key, _, value = line.partition(" ")
                    if key in ("oom_kill", "oom") and value.strip() not in ("", "0"):
                        return True
        return False

    def throttled(self):
        """How many periods the CPU quota stopped the submission (``nr_throttled``)."""
        for folder in self.folders:
            try:
                text = (folder / "cpu.stat").read_text()
            except OSError:
                continue
            for line in text.splitlines():
                key, _, value = line.partition(" ")
                if key == "nr_throttled" and value.strip().isdigit():
                    return int(value)
        return 0

    def close(self):
        self.kill()
        for folder in self.folders:
            for _ in range(50):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    threading.Event().wait(0.05)


class Cgroups:
    """Makes a cgroup per submission under a folder this user may write.

    Use :func:`find_cgroups`. ``version`` is 2 (a delegated cgroup v2 subtree)
    or 1 (the ``memory``, ``pids`` and ``cpu`` hierarchies of cgroup v1, as
    root); ``where`` names the parent folders.
    """

    def __init__(self, parents, version):
        self.parents, self.version = [Path(p) for p in parents], version
        self.where = ", ".join(map(str, self.parents))

    def clean_stale(self):
        """Remove the cgroups of graders that are gone (killed mid-batch); return how many."""
        removed = 0
        for parent in self.parents:
            for folder in parent.glob("grade-*-*"):
                pid = folder.name.split("-")[1]
                if pid.isdigit() and _start_time(int(pid)) is None:
                    group = _Cgroup([folder], self.version)
                    group.close()
                    removed += not folder.exists()
        return removed

    def create(self, limits):
        name = f"grade-{os.getpid()}-{secrets.token_hex(6)}"
        folders = []
        try:
            for parent in self.parents:
                folder = parent / name
                folder.mkdir()
                folders.append(folder)
            group = _Cgroup(folders, self.version)
            memory = str(int(limits.memory_bytes))
            quota = str(max(1000, int(100_000 * limits.cpus)))
            if self.version == 2:
                (folders[0] / "memory.max").write_text(memory)
                _try_write(folders[0] / "memory.swap.max", "0")
                (folders[0] / "pids.max").write_text(str(int(limits.processes)))
                (folders[0] / "cpu.max").write_text(f"{quota} 100000")
            else:
                for folder in folders:
                    if (folder / "memory.limit_in_bytes").exists():
                        (folder / "memory.limit_in_bytes").write_text(memory)
                        _try_write(folder / "memory.memsw.limit_in_bytes", memory)
                    if (folder / "pids.max").exists():
                        (folder / "pids.max").write_text(str(int(limits.processes)))
                    if (folder / "cpu.cfs_quota_us").exists():
                        (folder / "cpu.cfs_period_us").write_text("100000")
                        (folder / "cpu.cfs_quota_us").write_text(quota)
            return group
        except OSError:
            _Cgroup(folders, self.version).close()
            raise


def _try_write(path, text):
    try:
        path.write_text(text)
    except OSError:
        pass


def _own_cgroups():
    """``{controller or "": path}`` from ``/proc/self/cgroup``."""
    found = {}
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            found[controller] = path
    return found


def _mounts():
    """``(mount point, type, options)`` of the cgroup file systems."""
    found = []
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        fields = line.split()
        if len(fields) >= 4 and fields[2] in ("cgroup", "cgroup2"):
            found.append((fields[1], fields[2], set(fields[3].split(","))))
    return found


def _ready_parent(folder, version):
    """Make ``folder/resnet-theory-grading`` usable as a parent of submission cgroups.

    On cgroup v2 a folder that holds processes cannot hand controllers to its
    children ("no internal processes"): in a delegated scope, its processes
    (this grader and the shell that started it) first move into a leaf
    ``folder/resnet-theory-grader``.
    """
    folder = Path(folder)
    parent = folder / "resnet-theory-grading"
    if version == 2:
        wanted = {"memory", "pids", "cpu"}
        available = set((folder / "cgroup.controllers").read_text().split())
        if not wanted <= available:
            raise OSError(f"the controllers {sorted(wanted - available)} are not delegated")
        enabled = set((folder / "cgroup.subtree_control").read_text().split())
        if not wanted <= enabled:
            change = " ".join(f"+{c}" for c in sorted(wanted - enabled))
            try:
                (folder / "cgroup.subtree_control").write_text(change)
            except OSError as error:
                if error.errno != 16:  # EBUSY: processes live in this folder
                    raise
                leaf = folder / "resnet-theory-grader"
                leaf.mkdir(exist_ok=True)
                for pid in (folder / "cgroup.procs").read_text().split():
                    _try_write(leaf / "cgroup.procs", pid)
                (folder / "cgroup.subtree_control").write_text(change)
        parent.mkdir(exist_ok=True)
        (parent / "cgroup.subtree_control").write_text("+memory +pids +cpu")
    else:
        parent.mkdir(exist_ok=True)
    return parent


def find_cgroups():
    """A ``Cgroups`` to cap each submission's total resources, or ``(None, why)``.

    Tries, in order: cgroup v2 with the ``memory``, ``pids`` and ``cpu``
    controllers in a folder this user may write (root on a cgroup v2 machine,
    or a delegated subtree, e.g. inside ``systemd-run --user --scope -p
    Delegate=yes``); cgroup v1 ``memory``, ``pids`` and ``cpu`` hierarchies
    this user may write (root). Returns ``(Cgroups, "")`` or ``(None, why)``.

    Examples
    --------
    >>> groups, why = find_cgroups()
    >>> (groups is None) == bool(why)
    True
    """
    return _find_cgroups()


@functools.cache
def _find_cgroups():
    own = _own_cgroups()
    problems = []
    for point, kind, _options in _mounts():
        if kind != "cgroup2":
            continue
        folder = Path(point) / own.get("", "/").lstrip("/")
        try:
            parent = _ready_parent(folder, 2)
            return Cgroups([parent], 2), ""
        except OSError as error:
            problems.append(f"cgroup v2 at {folder}: {error.strerror or error}")
    v1 = {}
    for point, kind, options in _mounts():
        for controller in ("memory", "pids", "cpu"):
            if kind == "cgroup" and controller in options and controller not in v1:
                v1[controller] = Path(point) / own.get(controller, "/").lstrip("/")
    if len(v1) == 3:
        try:
            parents = [_ready_parent(v1[c], 1) for c in ("memory", "pids", "cpu")]
            return Cgroups(parents, 1), ""
        except OSError as error:
            problems.append(f"cgroup v1: {error.strerror or error}")
    elif v1:
        problems.append(f"cgroup v1 lacks {sorted({'memory', 'pids', 'cpu'} - set(v1))}")
    if not problems:
        problems.append("no cgroup file system is mounted")
    return None, "; ".join(problems)


# ----------------------------------------------------------------- runs in progress

_RUNS_LOCK = threading.Lock()
_RUNS = set()
_STOPPING = threading.Event()


class _Run:
    """The processes and cgroup of one submission, so that an interrupt can stop them."""

    def __init__(self):
        self.processes, self.cgroup = [], None
        with _RUNS_LOCK:
            _RUNS.add(self)

    def stop(self):
        for process in self.processes:
            _kill_group(process.pid)
        if self.cgroup is not None:
            self.cgroup.kill()

    def close(self):
        self.stop()
        for process in self.processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        if self.cgroup is not None:
            self.cgroup.close()
        with _RUNS_LOCK:
            _RUNS.discard(self)


def stop_all_runs():
    """Kill every sandbox that is running (on SIGINT/SIGTERM); later runs do not start."""
    _STOPPING.set()
    with _RUNS_LOCK:
        runs = list(_RUNS)
    for run in runs:
        run.stop()


def reset_stop():
    """Allow runs again after :func:`stop_all_runs` (a new grading session)."""
    _STOPPING.clear()


def _kill_group(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def _read_limited(path, limit):
    try:
        with open(path, "rb") as handle:
            return handle.read(limit)
    except OSError:
        return b""


# ----------------------------------------------------------------- one submission

def kernel_bootstrap(connection_file, limits, sync_fd=None, processes=True):
    """The ``python -c`` source that sets the kernel's limits and starts ``ipykernel``.

    The kernel serves no debugger: nobody attaches one to a submission, and without
    ``debugpy`` (which ``ipykernel`` otherwise imports at every start, with its
    vendored ``pydevd``) the kernel loads about 140 modules fewer and starts with
    0.05 s less CPU, for every submission graded.
    """
    settings = [("RLIMIT_AS", int(limits.memory_bytes)),
                ("RLIMIT_FSIZE", int(limits.file_bytes)),
                ("RLIMIT_CPU", int(limits.cpu_seconds))]
    if processes:
        settings.append(("RLIMIT_NPROC", int(limits.processes)))
    return f"""
import ctypes, os, resource, runpy, sys
try:
    ctypes.CDLL(None).prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG SIGKILL: dies with the grader
except (OSError, AttributeError):
    pass
for name, value in {settings!r}:
    kind = getattr(resource, name)
    hard = resource.getrlimit(kind)[1]
    value = value if hard == resource.RLIM_INFINITY else min(value, hard)
    resource.setrlimit(kind, (value, value))
try:
    with open('/proc/self/oom_score_adj', 'w') as handle:
        handle.write('1000')
except OSError:
    pass
if {sync_fd!r} is not None:
    os.set_inheritable({sync_fd!r}, False)
sys.modules['debugpy'] = None  # no debugger in the sandbox (see kernel_bootstrap)
sys.argv = ['ipykernel_launcher', '-f', {str(connection_file)!r}]
runpy.run_module('ipykernel_launcher', run_name='__main__', alter_sys=True)
"""


def kernel_command(bwrap, scratch, limits, sync_fd):
    """The command that starts the kernel of one submission (in its sandbox)."""
    if bwrap:
        bootstrap = kernel_bootstrap(f"{SOCKET_ROOT}/kernel.json", limits)
        return bwrap_command(
            bwrap, [sys.executable, "-c", bootstrap],
            writable=[(scratch / "box", SANDBOX_ROOT), (scratch / "sockets", SOCKET_ROOT)],
            chdir=SANDBOX_ROOT, tmp_bytes=limits.tmp_bytes, shm_bytes=limits.shm_bytes,
            sync_fd=sync_fd)
    bootstrap = kernel_bootstrap(scratch / "sockets" / "kernel.json", limits, sync_fd,
                                 processes=False)
    return [sys.executable, "-c", bootstrap]


#: Starts the driver from this file alone, as a module of its own: it needs nothing of
#: the rest of the library (the package's import -- NumPy, the checks, the grading and
#: student modules -- would cost about 0.16 s of CPU more for every submission).
#: jsonschema's optional ``rfc3987_syntax`` (seconds of CPU to import, for a URI format
#: check nbformat never needs) is kept out.
_DRIVER_START = (
    "import importlib.util, sys; sys.modules['rfc3987_syntax'] = None; "
    f"spec = importlib.util.spec_from_file_location('_resnet_theory_driver', "
    f"{str(Path(__file__).resolve())!r}); "
    "module = sys.modules[spec.name] = importlib.util.module_from_spec(spec); "
    "spec.loader.exec_module(module); sys.exit(module.driver_cli())")


def driver_command(bwrap, scratch, limits, alive_fd):
    """The command that starts the driver of one submission (in its own sandbox)."""
    arguments = ["-c", _DRIVER_START, "_execute",
                 "--timeout", str(limits.timeout),
                 "--max-output-bytes", str(int(limits.max_output_bytes)),
                 "--answer-bytes", str(int(limits.answer_bytes)),
                 "--alive-fd", str(int(alive_fd))]
    if bwrap:
        arguments += ["--notebook", f"{_DRIVER_ROOT}/notebook.ipynb",
                      "--export-folder", SANDBOX_ROOT]
        return bwrap_command(
            bwrap, [sys.executable, *arguments],
            readable=[(scratch / "control" / "notebook.ipynb", f"{_DRIVER_ROOT}/notebook.ipynb"),
                      (scratch / "sockets", SOCKET_ROOT)],
            chdir="/tmp", tmp_bytes=50_000_000, shm_bytes=1_000_000,
            environment=_driver_environment())
    arguments += ["--notebook", str(scratch / "control" / "notebook.ipynb"),
                  "--export-folder", str(scratch / "box")]
    return [sys.executable, *arguments]


def _connection(scratch, bwrap):
    """The kernel's connection information (Unix sockets, a fresh HMAC key)."""
    where = SOCKET_ROOT if bwrap else str(scratch / "sockets")
    if len(where) + 10 > 100:
        raise SandboxUnavailable(f"the scratch folder {where} is too long a path for Unix "
                                 "sockets; set TMPDIR to a shorter folder")
    return {"transport": "ipc", "ip": f"{where}/k", "shell_port": 1, "iopub_port": 2,
            "stdin_port": 3, "control_port": 4, "hb_port": 5,
            "key": secrets.token_hex(32), "signature_scheme": "hmac-sha256",
            "kernel_name": "python3"}


def _sign(key, payload):
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    return hmac.new(key.encode(), text.encode(), hashlib.sha256).hexdigest()


def run_submission(data, name, variables, nonce, limits, *, bwrap=None, cgroups=None):
    """Execute a notebook in fresh sandboxes and return what came back.

    Parameters
    ----------
    data : bytes
        The submitted notebook's content (already read by the grader).
    name : str
        A file name for the notebook inside the sandbox.
    variables : dict
        Exercise label to answer variable, for the export.
    nonce : str
        Random hexadecimal text that frames the kernel's manifest and names the
        export folder.
    limits : Limits
    bwrap : str, optional
        A working ``bwrap`` (see :func:`find_bwrap`); ``None`` runs the kernel
        and the driver without a sandbox.
    cgroups : Cgroups, optional
        Where to make the submission's cgroup (see :func:`find_cgroups`).

    Returns
    -------
    tuple
        ``(payload, scratch)``. ``payload`` is the driver's authenticated result
        (a dict with ``status``, ``reason`` and ``answers``, the manifest of
        :func:`export_source`, untrusted: the caller validates every entry), or
        a ``timeout`` / ``grader-error`` status when none came back, with
        ``elapsed`` (seconds) and ``out_of_memory`` (the cgroup's memory limit
        was hit) and ``cpu_throttled`` (periods the CPU quota stopped it).
        ``scratch`` is the scratch directory; the exported answers
        are in ``scratch/box/export-<nonce>/``. The caller reads them and then
        removes it with :func:`remove_scratch`.
    """
    start = monotonic()
    scratch = _new_scratch()
    box, sockets, control = scratch / "box", scratch / "sockets", scratch / "control"
    for folder in (box, sockets, control):
        folder.mkdir()
    safe_name = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[-100:] or "notebook.ipynb"
    (box / safe_name).write_bytes(data)
    (control / "notebook.ipynb").write_bytes(data)
    _prepare_home(box)
    connection = _connection(scratch, bwrap)
    (sockets / "kernel.json").write_text(json.dumps(connection))
    result_key = secrets.token_hex(32)
    run = _Run()
    payload = None
    try:
        if _STOPPING.is_set():
            return {"status": "grader-error", "reason": "grading was interrupted",
                    "interrupted": True}, scratch
        if cgroups is not None:
            run.cgroup = cgroups.create(limits)
        alive_read, alive_write = os.pipe()
        try:
            command = kernel_command(bwrap, scratch, limits, alive_write)
            if run.cgroup is not None:
                command = run.cgroup.wrap(command)
            env = {} if bwrap else _sandbox_environment(str(box))
            run.processes.append(subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, cwd=box, env=env, start_new_session=True,
                pass_fds=(alive_write,)))
        finally:
            os.close(alive_write)
        request = {"nonce": nonce, "key": result_key, "variables": variables,
                   "connection": connection, "name": safe_name}
        try:
            with open(control / "result.txt", "wb") as out, \
                    open(control / "stderr.txt", "wb") as err:
                driver = subprocess.Popen(
                    driver_command(bwrap, scratch, limits, alive_read),
                    stdin=subprocess.PIPE, stdout=out, stderr=err, cwd=control,
                    env={} if bwrap else _driver_environment(), start_new_session=True,
                    pass_fds=(alive_read,))
        finally:
            os.close(alive_read)
        run.processes.append(driver)
        try:
            driver.communicate(json.dumps(request).encode(),
                               timeout=limits.timeout + OUTER_MARGIN)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
        run.stop()
        out_of_memory = run.cgroup is not None and run.cgroup.out_of_memory()
        throttled = run.cgroup.throttled() if run.cgroup is not None else 0
        if _STOPPING.is_set():
            payload = {"status": "grader-error", "reason": "grading was interrupted",
                       "interrupted": True}
        elif timed_out:
            payload = {"status": "timeout",
                       "reason": f"the run did not finish within {limits.timeout:g} s "
                                 f"plus {OUTER_MARGIN:g} s and was stopped"}
        else:
            payload = _read_result(control / "result.txt", result_key)
        if out_of_memory and payload.get("status") in ("kernel-died", "grader-error",
                                                       "error", "timeout"):
            payload["reason"] = ("the submission used more than its memory limit of "
                                 f"{limits.memory_bytes / 2**20:.0f} MiB (all its processes "
                                 "together); " + str(payload.get("reason", "")))
        payload["out_of_memory"], payload["cpu_throttled"] = out_of_memory, throttled
        return payload, scratch
    finally:
        run.close()
        if payload is not None:
            payload["elapsed"] = monotonic() - start


def _read_result(path, key):
    text = _read_limited(path, _RESULT_LIMIT).decode("utf-8", "replace")
    lines = [line for line in text.splitlines() if line.startswith('{"mac"')]
    if not lines:
        return {"status": "grader-error",
                "reason": "the grading process returned no result"}
    try:
        frame = json.loads(lines[-1])
        payload, mac = frame["payload"], frame["mac"]
    except (ValueError, KeyError, TypeError, RecursionError):
        return {"status": "grader-error", "reason": "the grading process returned junk"}
    if not isinstance(payload, dict) or not isinstance(mac, str) or \
            not hmac.compare_digest(mac, _sign(key, payload)):
        return {"status": "grader-error",
                "reason": "the result of the grading process was not authentic"}
    return payload


# -------------------------------------------------------------------------- the driver

def _attached_kernel_manager(connection, alive_fd):
    """A kernel manager for a kernel the grader started (it never starts or kills one)."""
    import ipykernel.kernelspec
    from jupyter_client.kernelspec import KernelSpec, KernelSpecManager
    from jupyter_client.manager import AsyncKernelManager
    from jupyter_client.provisioning import KernelProvisionerBase

    class Attached(KernelProvisionerBase):
        """The kernel is alive while the grader's pipe stays open."""

        @property
        def has_process(self):
            return True

        async def poll(self):
            readable, _, _ = select.select([alive_fd], [], [], 0)
            return 1 if readable else None

        async def wait(self):
            while await self.poll() is None:
                await asyncio.sleep(0.1)
            return 1

        async def send_signal(self, signum):
            pass

        async def kill(self, restart=False):
            pass

        async def terminate(self, restart=False):
            pass

        async def launch_kernel(self, cmd, **kwargs):
            return connection

        async def cleanup(self, restart=False):
            pass

    class Specs(KernelSpecManager):
        def get_kernel_spec(self, kernel_name):
            spec = dict(ipykernel.kernelspec.get_kernel_dict())
            spec["interrupt_mode"] = "message"  # no signals across the sandboxes
            return KernelSpec(resource_dir=ipykernel.kernelspec.RESOURCES, **spec)

    class AttachedManager(AsyncKernelManager):
        async def start_kernel(self, **kwargs):
            self.kernel_id = self.kernel_id or "graded"
            self.provisioner = Attached(kernel_id=self.kernel_id,
                                        kernel_spec=self.kernel_spec, parent=self)
            self._connect_control_socket()

        async def shutdown_kernel(self, now=False, restart=False):
            self._close_control_socket()  # the grader kills the sandbox

        async def cleanup_resources(self, restart=False):
            self._close_control_socket()

    manager = AttachedManager(kernel_name="python3", kernel_spec_manager=Specs())
    manager.load_connection_info(connection)
    return manager


def _make_client(notebook, manager, max_output_bytes):
    from nbclient import NotebookClient

    class LimitedClient(NotebookClient):
        """nbclient with an output budget, on a kernel the grader started."""

        def create_kernel_manager(self):
            self.km = manager
            return self.km

        def output(self, outs, msg, display_id, cell_index):
            self.output_bytes += len(json.dumps(msg.get("content", {})))
            if self.output_bytes > self.output_budget:
                if not self.output_exceeded:
                    self.output_exceeded = True
                    asyncio.ensure_future(self._interrupt())
                return None
            return super().output(outs, msg, display_id, cell_index)

        async def _interrupt(self):
            try:
                await self.km.interrupt_kernel()
            except Exception:  # the kernel may be gone already
                pass

    timeout_name = f"GraderTimeout{secrets.token_hex(8)}"  # the kernel cannot forge it
    client = LimitedClient(
        notebook, kernel_name="python3", allow_errors=True, record_timing=False,
        interrupt_on_timeout=True, startup_timeout=40, iopub_timeout=4,
        error_on_timeout={"ename": timeout_name, "evalue": "time limit", "traceback": []})
    client.output_bytes, client.output_budget, client.output_exceeded = 0, max_output_bytes, False
    client.timeout_name = timeout_name
    return client


def export_source(variables, nonce, directory, answer_bytes):
    """The code cell that exports the answer variables as data (runs in the kernel).

    Parameters
    ----------
    variables : list of str
        The answer variables.
    nonce : str
        Frames the printed manifest and names the export directory.
    directory : str
        Where to create the export directory (inside the sandbox).
    answer_bytes : int
        The largest answer written.

    Returns
    -------
    str
        Python source. For each variable it writes ``<variable>.json`` (``None``,
        ``bool``, ``int``, ``float``, ``str`` and lists, tuples and string-keyed
        dicts of them; other real numbers, such as fractions, SymPy numbers or
        NumPy numbers inside containers, become ``int`` or ``float``) or
        ``<variable>.npy`` (a NumPy array or scalar of boolean, integer, float
        or complex type) and prints the manifest ``{variable:
        "json" | "npy" | "npy-scalar" | "missing" | "error: <why>"}``. Nothing
        here is trusted: the grader re-reads every file with its own limits.
    """
    return f"""
def _export_{nonce}():
    import json, numbers, os, sys
    import numpy
    names = {list(variables)!r}
    limit = {int(answer_bytes)}
    folder = os.path.join({directory!r}, "export-{nonce}")
    os.mkdir(folder)
    namespace = globals()
    def plain(value, depth=0):
        if depth > 20:
            raise ValueError("nested more than 20 levels deep")
        if value is None or type(value) in (bool, int, float, str):
            return value
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            return int(value)
        if isinstance(value, numbers.Real):
            return float(value)
        if type(value) in (list, tuple):
            return [plain(item, depth + 1) for item in value]
        if type(value) is dict and all(type(key) is str for key in value):
            return {{key: plain(item, depth + 1) for key, item in value.items()}}
        if isinstance(value, numpy.generic) and value.dtype.kind in "biuf":
            return value.item()
        if isinstance(value, numpy.ndarray) and value.dtype.kind in "biuf":
            if value.nbytes > limit:
                raise ValueError(f"an array of {{value.nbytes}} bytes is larger than {{limit}}")
            return value.tolist()
        raise TypeError(f"a {{type(value).__name__}} is not data (numbers, strings, "
                        "lists, NumPy arrays)")
    manifest = {{}}
    for name in names:
        if name not in namespace:
            manifest[name] = "missing"
            continue
        value = namespace[name]
        try:
            if isinstance(value, (numpy.ndarray, numpy.generic)) and (
                    value.dtype.kind in "biufc"):
                array = numpy.array(value)
                if array.nbytes > limit:
                    raise ValueError(f"an array of {{array.nbytes}} bytes is larger than "
                                     f"the limit of {{limit}} bytes")
                numpy.save(os.path.join(folder, name + ".npy"), array, allow_pickle=False)
                manifest[name] = "npy-scalar" if isinstance(value, numpy.generic) else "npy"
            else:
                text = json.dumps(plain(value))
                if len(text) > limit:
                    raise ValueError(f"the answer takes {{len(text)}} bytes as JSON, more "
                                     f"than the limit of {{limit}} bytes")
                with open(os.path.join(folder, name + ".json"), "w") as handle:
                    handle.write(text)
                manifest[name] = "json"
        except Exception as error:
            manifest[name] = "error: " + (type(error).__name__ + ": " + str(error))[:300]
    sys.stdout.write("{nonce}" + json.dumps(manifest) + "{nonce}\\n")
    sys.stdout.flush()
_export_{nonce}()
del _export_{nonce}
"""


_EXCEPTION_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,60}")
_UNSAFE_MESSAGE = re.compile(r"[^A-Za-z0-9 _.,:;'\"()\[\]/<>%+*-]")


def safe_error(ename, evalue):
    """``"<name>: <message>"`` of a kernel's exception, filtered for a report.

    The kernel sends both, so both are untrusted: the name must look like a
    Python class name (else "an exception"), the message keeps only letters,
    digits, spaces and plain punctuation (others become ``?``), at most 80
    characters, on one line.

    Examples
    --------
    >>> safe_error("RuntimeError", "boom")
    'RuntimeError: boom'
    >>> safe_error("=HYPERLINK(1)", "\\x1b[2J=cmd|' /C calc'!A0")
    "an exception: ?[2J?cmd?' /C calc'?A0"
    """
    name = ename if isinstance(ename, str) and _EXCEPTION_NAME.fullmatch(ename) else \
        "an exception"
    message = _one_line(_UNSAFE_MESSAGE.sub("?", evalue if isinstance(evalue, str) else ""),
                        80)
    return f"{name}: {message}" if message else name


def _prctl_not_dumpable():
    """``prctl(PR_SET_DUMPABLE, 0)``: no ``/proc/<pid>/mem`` or ``fd`` for the same user;
    and ``PR_SET_PDEATHSIG``: the driver dies with the grader."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(4, 0, 0, 0, 0)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _set_limits(memory_bytes, file_bytes, cpu_seconds):
    """``setrlimit`` on the driver."""
    for kind, value in [(resource.RLIMIT_AS, memory_bytes), (resource.RLIMIT_FSIZE, file_bytes),
                        (resource.RLIMIT_CPU, cpu_seconds)]:
        _, hard = resource.getrlimit(kind)
        value = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(kind, (value, value))


def execute(notebook, variables, nonce, limits, manager, export_folder):
    """Run one notebook on an attached kernel and export its answers (the driver).

    Parameters
    ----------
    notebook : nbformat.NotebookNode
        The submission.
    variables : dict
        Exercise label to answer variable.
    nonce : str
        The random text framing the export manifest.
    limits : Limits
    manager : jupyter_client kernel manager
        Connected to the kernel the grader started.
    export_folder : str
        The kernel's working folder, where the export folder is created.

    Returns
    -------
    dict
        ``status``, ``reason`` (one line, written by the driver: cell numbers,
        limits, and at most an exception's filtered name and message) and
        ``answers`` (variable to the manifest entry of :func:`export_source`).
    """
    from nbclient.exceptions import DeadKernelError

    client = _make_client(notebook, manager, limits.max_output_bytes)
    events = []

    def on_error(cell, cell_index, execute_reply):
        content = execute_reply.get("content", {})
        events.append((cell_index, content.get("ename", ""), content.get("evalue", "")))

    client.on_cell_error = on_error
    status, reasons, answers = "ok", [], {}
    timeout = limits.timeout
    budget_end = monotonic() + timeout + OUTER_MARGIN - 5
    try:
        with client.setup_kernel():
            deadline = min(monotonic() + timeout, budget_end - 25)
            for index, cell in enumerate(notebook.cells):
                if cell.cell_type != "code":
                    continue
                remaining = deadline - monotonic()
                if remaining <= 0:
                    status = "timeout"
                    reasons.append(f"the time limit of {timeout:g} s ran out before cell {index}")
                    break
                client.timeout = max(1, math.ceil(remaining))
                before = len(events)
                client.execute_cell(cell, index)
                new = events[before:]
                if any(ename == client.timeout_name for _, ename, _ in new):
                    status = "timeout"
                    reasons.append(f"cell {index} was stopped at the time limit of "
                                   f"{timeout:g} s; later cells did not run")
                    break
                if client.output_exceeded:
                    status = "output-limit"
                    reasons.append(f"cell {index} printed more than {limits.max_output_bytes} "
                                   "bytes of output; it was interrupted and later cells did "
                                   "not run")
                    break
                if new and status == "ok":
                    status = "error"
                    _, ename, evalue = new[0]
                    reasons.append(f"cell {index} raised {safe_error(ename, evalue)}")
            if variables:
                client.output_bytes, client.output_budget = 0, _MANIFEST_LIMIT
                client.output_exceeded = False
                client.timeout = max(1, min(20, math.floor(budget_end - monotonic())))
                cell = nbformat.v4.new_code_cell(export_source(
                    sorted(set(variables.values())), nonce, export_folder,
                    limits.answer_bytes))
                notebook.cells.append(cell)
                client.execute_cell(cell, len(notebook.cells) - 1)
                text = "".join(o.get("text", "") for o in cell.outputs
                               if o.get("output_type") == "stream")
                found = re.search(rf"{nonce}(.*?){nonce}", text, re.DOTALL)
                try:
                    answers = json.loads(found.group(1)) if found else None
                except (ValueError, RecursionError):
                    answers = None
                if not isinstance(answers, dict):
                    reasons.append("the answers could not be exported")
                    answers = {}
    except DeadKernelError:
        status = "kernel-died"
        reasons.append("the kernel died (the notebook exited or killed its own process); "
                       "no answer could be exported")
        answers = {}
    except RuntimeError as error:
        if "Kernel didn't respond" not in str(error) and "kernel" not in str(error).lower():
            raise
        status = "kernel-died"
        reasons.append("the kernel did not start or stopped answering")
        answers = {}
    return {"status": status, "reason": _one_line("; ".join(reasons)), "answers": answers}


def add_driver_arguments(parser):
    """The arguments of the ``_execute`` command (the driver's)."""
    parser.add_argument("--notebook", required=True)
    parser.add_argument("--export-folder", required=True)
    parser.add_argument("--timeout", type=float, required=True)
    parser.add_argument("--max-output-bytes", type=int, required=True)
    parser.add_argument("--answer-bytes", type=int, required=True)
    parser.add_argument("--alive-fd", type=int, required=True)


def driver_cli(argv=None):
    """The driver's command line, ``_execute --notebook ...`` (see :data:`_DRIVER_START`)."""
    parser = argparse.ArgumentParser(prog="resnet_theory.homework")
    parser.add_argument("command", choices=["_execute"])
    add_driver_arguments(parser)
    return driver_main(parser.parse_args(argv))


def driver_main(args):
    """The ``_execute`` command: read the request, run the notebook, print a signed result."""
    _prctl_not_dumpable()
    try:
        request = json.loads(sys.stdin.readline())
        key, nonce = request["key"], request["nonce"]
        variables, connection = request["variables"], request["connection"]
    except (ValueError, KeyError, TypeError):
        print("the request on standard input is missing", file=sys.stderr)
        return 2
    sys.stdin.close()
    if not re.fullmatch(r"[0-9a-f]{16,64}", nonce):
        print("the nonce is malformed", file=sys.stderr)
        return 2
    _set_limits(2 << 30, 50_000_000, int(args.timeout) + 120)
    limits = Limits(timeout=args.timeout, max_output_bytes=args.max_output_bytes,
                    answer_bytes=args.answer_bytes)
    try:
        notebook = nbformat.read(args.notebook, as_version=4)
        manager = _attached_kernel_manager(connection, args.alive_fd)
        result = execute(notebook, variables, nonce, limits, manager, args.export_folder)
    except Exception as error:  # a report, not a traceback, for the grader
        result = {"status": "grader-error",
                  "reason": f"the driver failed ({type(error).__name__})", "answers": {}}
    sys.stdout.write(json.dumps({"mac": _sign(key, result), "payload": result}) + "\n")
    sys.stdout.flush()
    return 0

r"""Running one submitted notebook in its sandbox, and bringing back what it exported.

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
  ``setrlimit`` limits (address space, processes, file size, CPU time);
- the **driver** (``resnet_theory.homework.driver``, started from its file
  alone) sends the cells to the kernel over ZeroMQ on Unix sockets in
  ``/run/kernel`` and decides the status. It runs in a second, separate
  sandbox: another PID namespace (the kernel cannot see, signal or trace it), a
  read-only view of the sockets, and an output file the kernel's sandbox does
  not contain. It makes itself non-dumpable and signs its result with a key
  that only the grader and the driver know;
- the **grader** (this process) writes the connection file, starts both
  sandboxes, enforces the outer time limit (``timeout + 60 s``) and reads the
  exported answers.

Where the machine allows it, the kernel runs in a cgroup per submission
(:mod:`resnet_theory.homework.cgroups`), which caps its *total* memory,
processes and CPU share, and the driver in a cgroup of its own beside it
(``DRIVER_LIMITS``); as root both run as an unprivileged user and
write into a tmpfs of their own (:mod:`resnet_theory.homework.scratch`).
Without ``bwrap`` the kernel and the driver run as ordinary processes in their
own sessions with the same limits except the process limit; the kernel can
then read and write whatever the grader's user can (as root: whatever that
unprivileged user can).

After the notebook, the kernel runs one more cell that only *exports* the answer
variables as data (:func:`resnet_theory.homework.driver.export_source`).
Nothing else comes back but the outputs of the cells that hold written answers:
the checks run in the grader's own process, on data read with ``json`` and
``numpy.load(..., allow_pickle=False)``. No text the kernel controls reaches a
``reason``, except an exception's class name and a short, filtered message.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from hmac import compare_digest as hmac_compare
from pathlib import Path
from time import monotonic

from .bwrap import (
    SANDBOX_ROOT,
    SOCKET_ROOT,
    as_sandbox_user,
    bwrap_command,
    driver_environment,
    find_bwrap,
    sandbox_environment,
)
from .cgroups import Cgroups, find_cgroups
from .driver import OUTER_MARGIN, export_source, sign_result
from .scratch import (
    SandboxUnavailable,
    clean_stale_scratch,
    give_to_sandbox,
    new_scratch,
    remove_scratch,
    sandbox_user,
    scratch_root,
    unreachable,
)

__all__ = ["Limits", "SandboxUnavailable", "find_bwrap", "bwrap_command", "kernel_command",
           "driver_command", "run_submission", "remove_scratch", "export_source",
           "scratch_root", "clean_stale_scratch", "stop_all_runs", "reset_stop", "Cgroups",
           "find_cgroups", "export_folder", "resolve_sandbox", "resolve_cgroups",
           "SANDBOX_ROOT", "SOCKET_ROOT", "OUTER_MARGIN", "SANDBOX_MODES", "CGROUP_MODES"]

#: Where the driver finds the notebook, inside its sandbox.
_DRIVER_ROOT = "/run/grader"
_RESULT_LIMIT = 400_000
#: ``"auto"`` (sandbox when ``bwrap`` works, else a loud warning), ``"require"``
#: (refuse without it) and ``"off"`` (never; for debugging).
SANDBOX_MODES = ("auto", "require", "off")
#: ``"auto"`` (a cgroup per submission where the machine allows, else a loud
#: warning and timed-out rows re-graded alone), ``"require"`` and ``"off"``.
CGROUP_MODES = ("auto", "require", "off")


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
    disk_bytes : int
        Size of the tmpfs that holds a submission's scratch folder, where the
        grader can mount one (as root); its pages count against ``memory_bytes``
        too.
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
    disk_bytes: int = 1_000_000_000

    def __post_init__(self):
        for name in ("timeout", "max_output_bytes", "memory_bytes", "processes",
                     "file_bytes", "answer_bytes", "tmp_bytes", "shm_bytes", "cpus",
                     "notebook_bytes", "disk_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                    not value > 0 or not math.isfinite(value):
                raise ValueError(f"{name} must be positive, got {value}")

    @property
    def cpu_seconds(self):
        """``RLIMIT_CPU`` per process: the time limit plus one minute."""
        return int(math.ceil(self.timeout)) + 60


#: The caps of the cgroup of each submission's driver, a cgroup of its own beside the
#: submission's: what the kernel sends it (and its CPU time) is capped, and the kernel
#: keeps its whole CPU share.
DRIVER_LIMITS = Limits(memory_bytes=1 << 30, processes=64, cpus=1.0)


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


# ---------------------------------------------------------------------- choosing

def resolve_sandbox(sandbox):
    """The ``bwrap`` to use (or ``None``) and why not, raising in ``"require"`` mode
    without one."""
    if sandbox not in SANDBOX_MODES:
        raise ValueError(f"sandbox must be one of {SANDBOX_MODES}, got {sandbox!r}")
    if sandbox == "off":
        return None, "the sandbox was switched off"
    path, why = find_bwrap()
    if path is None and sandbox == "require":
        raise SandboxUnavailable(f"a sandbox is required but {why}; install bubblewrap "
                                 "(Debian/Ubuntu: sudo apt-get install bubblewrap)")
    return path, why


def resolve_cgroups(mode):
    """The :class:`Cgroups` to use (or ``None``) and why not, raising in ``"require"``
    mode without them."""
    if mode not in CGROUP_MODES:
        raise ValueError(f"cgroups must be one of {CGROUP_MODES}, got {mode!r}")
    if mode == "off":
        return None, "cgroups were switched off"
    groups, why = find_cgroups()
    if groups is None and mode == "require":
        raise SandboxUnavailable(f"a cgroup per submission is required but none can be "
                                 f"made here ({why})")
    return groups, why


# -------------------------------------------------------------------- runs in progress

_RUNS_LOCK = threading.Lock()
_RUNS = set()
_STOPPING = threading.Event()


class _Run:
    """The processes and cgroups of one submission, so that an interrupt can stop them."""

    def __init__(self):
        self.processes, self.cgroup, self.driver_cgroup = [], None, None
        with _RUNS_LOCK:
            _RUNS.add(self)

    def _groups(self):
        return [group for group in (self.cgroup, self.driver_cgroup) if group is not None]

    def stop(self):
        for process in self.processes:
            _kill_group(process.pid)
        for group in self._groups():
            group.kill()

    def close(self):
        self.stop()
        for process in self.processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        for group in self._groups():
            group.close()
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


def _box(scratch):
    return Path(scratch) / "fs" / "box"


def _sockets(scratch):
    return Path(scratch) / "fs" / "sockets"


def export_folder(scratch, nonce):
    """Where a run of :func:`run_submission` leaves its exported answers."""
    return _box(scratch) / f"export-{nonce}"


def kernel_command(bwrap, scratch, limits, sync_fd):
    """The command that starts the kernel of one submission (in its sandbox)."""
    if bwrap:
        bootstrap = kernel_bootstrap(f"{SOCKET_ROOT}/kernel.json", limits)
        return bwrap_command(
            bwrap, [sys.executable, "-c", bootstrap],
            writable=[(_box(scratch), SANDBOX_ROOT), (_sockets(scratch), SOCKET_ROOT)],
            chdir=SANDBOX_ROOT, tmp_bytes=limits.tmp_bytes, shm_bytes=limits.shm_bytes,
            sync_fd=sync_fd)
    bootstrap = kernel_bootstrap(_sockets(scratch) / "kernel.json", limits, sync_fd,
                                 processes=False)
    return [sys.executable, "-c", bootstrap]


#: Starts the driver from its file alone, as a module of its own: it needs nothing of
#: the rest of the library (the package's import -- NumPy, the checks, the grading and
#: student modules -- would cost about 0.16 s of CPU more for every submission).
#: jsonschema's optional ``rfc3987_syntax`` (seconds of CPU to import, for a URI format
#: check nbformat never needs) is kept out.
_DRIVER_START = (
    "import importlib.util, sys; sys.modules['rfc3987_syntax'] = None; "
    f"spec = importlib.util.spec_from_file_location('_resnet_theory_driver', "
    f"{str(Path(__file__).resolve().with_name('driver.py'))!r}); "
    "module = sys.modules[spec.name] = importlib.util.module_from_spec(spec); "
    "spec.loader.exec_module(module); sys.exit(module.driver_cli())")


def driver_command(bwrap, scratch, limits, alive_fd):
    """The command that starts the driver of one submission (in its own sandbox)."""
    arguments = ["-c", _DRIVER_START, "_execute",
                 "--timeout", str(limits.timeout),
                 "--max-output-bytes", str(int(limits.max_output_bytes)),
                 "--answer-bytes", str(int(limits.answer_bytes)),
                 "--alive-fd", str(int(alive_fd))]
    notebook = Path(scratch) / "driver" / "notebook.ipynb"
    if bwrap:
        arguments += ["--notebook", f"{_DRIVER_ROOT}/notebook.ipynb",
                      "--export-folder", SANDBOX_ROOT]
        return bwrap_command(
            bwrap, [sys.executable, *arguments],
            readable=[(notebook, f"{_DRIVER_ROOT}/notebook.ipynb"),
                      (_sockets(scratch), SOCKET_ROOT)],
            chdir="/tmp", tmp_bytes=50_000_000, shm_bytes=1_000_000,
            environment=driver_environment())
    arguments += ["--notebook", str(notebook), "--export-folder", str(_box(scratch))]
    return [sys.executable, *arguments]


def _connection(scratch, bwrap):
    """The kernel's connection information (Unix sockets, a fresh HMAC key)."""
    where = SOCKET_ROOT if bwrap else str(_sockets(scratch))
    if len(where) + 10 > 100:
        raise SandboxUnavailable(f"the scratch folder {where} is too long a path for Unix "
                                 "sockets; set TMPDIR to a shorter folder")
    return {"transport": "ipc", "ip": f"{where}/k", "shell_port": 1, "iopub_port": 2,
            "stdin_port": 3, "control_port": 4, "hb_port": 5,
            "key": secrets.token_hex(32), "signature_scheme": "hmac-sha256",
            "kernel_name": "python3"}


def _start(command, run, bwrap, group, **options):
    """Start one of the run's processes: as the sandbox's user, in ``group`` (a cgroup)."""
    command = as_sandbox_user(command, bwrap)
    if group is not None:
        command = group.wrap(command)
    process = subprocess.Popen(command, start_new_session=True, **options)
    run.processes.append(process)
    return process


def _check_reachable(scratch):
    """As root: refuse a scratch folder the sandbox's user cannot reach."""
    user = sandbox_user()
    if user is None:
        return
    import resnet_theory

    for path in (scratch, Path(sys.prefix), Path(resnet_theory.__file__).parent):
        blocked = unreachable(path, user)
        if blocked is not None:
            raise SandboxUnavailable(
                f"the submissions run as the unprivileged user {user.uid}, which cannot reach "
                f"{path}: {blocked} is closed to other users. Grade from folders others may "
                "enter (TMPDIR, the repository and its environment), e.g. TMPDIR=/tmp")


def run_submission(data, name, variables, nonce, limits, *, bwrap=None, cgroups=None,
                   report=()):
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
        Where to make the submission's cgroup (see :func:`find_cgroups`), and the
        driver's, capped by ``DRIVER_LIMITS``.
    report : sequence of int, optional
        Cells whose outputs in this run come back (the written answers).

    Returns
    -------
    tuple
        ``(payload, scratch)``. ``payload`` is the driver's authenticated result
        (a dict with ``status``, ``reason``, ``answers``, the manifest of
        :func:`export_source`, and ``outputs``, untrusted: the caller validates
        every entry), or a ``timeout`` / ``grader-error`` status when none came
        back, with ``elapsed`` (seconds) and ``out_of_memory`` (the cgroup's
        memory limit was hit) and ``cpu_throttled`` (periods the CPU quota
        stopped it). ``scratch`` is the scratch directory; the exported answers
        are in :func:`export_folder`. The caller reads them and then removes it
        with :func:`remove_scratch`.
    """
    start = monotonic()
    scratch = new_scratch(limits.disk_bytes)
    try:
        _check_reachable(scratch)
    except SandboxUnavailable:
        remove_scratch(scratch)
        raise
    box, sockets, control = _box(scratch), _sockets(scratch), scratch / "control"
    safe_name = re.sub(r"[^A-Za-z0-9_.-]", "_", name)[-100:] or "notebook.ipynb"
    (box / safe_name).write_bytes(data)
    (scratch / "driver" / "notebook.ipynb").write_bytes(data)
    _prepare_home(box)
    connection = _connection(scratch, bwrap)
    (sockets / "kernel.json").write_text(json.dumps(connection))
    give_to_sandbox(box, sockets, scratch / "driver")
    result_key = secrets.token_hex(32)
    run = _Run()
    payload = None
    try:
        if _STOPPING.is_set():
            return {"status": "grader-error", "reason": "grading was interrupted",
                    "interrupted": True}, scratch
        if cgroups is not None:
            run.cgroup = cgroups.create(limits)
            run.driver_cgroup = cgroups.create(DRIVER_LIMITS, "driver")
        alive_read, alive_write = os.pipe()
        try:
            _start(kernel_command(bwrap, scratch, limits, alive_write), run, bwrap, run.cgroup,
                   stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, cwd=box,
                   env={} if bwrap else sandbox_environment(str(box)),
                   pass_fds=(alive_write,))
        finally:
            os.close(alive_write)
        request = {"nonce": nonce, "key": result_key, "variables": variables,
                   "connection": connection, "name": safe_name,
                   "report": sorted({int(i) for i in report})}
        try:
            with open(control / "result.txt", "wb") as out, \
                    open(control / "stderr.txt", "wb") as err:
                driver = _start(driver_command(bwrap, scratch, limits, alive_read), run, bwrap,
                                run.driver_cgroup,
                                stdin=subprocess.PIPE, stdout=out, stderr=err,
                                cwd=scratch / "driver",
                                env={} if bwrap else driver_environment(),
                                pass_fds=(alive_read,))
        finally:
            os.close(alive_read)
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
        if run.driver_cgroup is not None and run.driver_cgroup.out_of_memory():
            payload["reason"] = ("the submission's messages made the driver use more than "
                                 f"its memory limit of {DRIVER_LIMITS.memory_bytes >> 20} MiB; "
                                 + str(payload.get("reason", "")))
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
            not hmac_compare(mac, sign_result(key, payload)):
        return {"status": "grader-error",
                "reason": "the result of the grading process was not authentic"}
    return payload

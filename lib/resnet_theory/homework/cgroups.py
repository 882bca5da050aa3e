"""Caps on a submission's total resources: a cgroup per submission.

Where the machine allows it, each submission (its kernel and every process the
kernel starts) runs in a cgroup of its own that caps their *total* memory
(``memory.max``, or ``memory.limit_in_bytes`` on cgroup v1; files written to a
tmpfs are memory too), processes (``pids.max``) and CPU share (``cpu.max``, or
``cpu.cfs_quota_us``); the driver that runs its cells runs in a second cgroup
beside it, with caps of its own.
:func:`find_cgroups` finds where such cgroups can be made: cgroup v2 with the
``memory``, ``pids`` and ``cpu`` controllers in a folder this user may write
(root, or a subtree delegated to the user, e.g. inside ``systemd-run --user
--scope -p Delegate=yes``), else the cgroup v1 hierarchies (root).
"""

from __future__ import annotations

import functools
import os
import secrets
import signal
import threading
from pathlib import Path

__all__ = ["Cgroups", "find_cgroups", "start_time"]


def start_time(pid):
    """The start time of a process (field 22 of ``/proc/<pid>/stat``), or ``None``."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()[19]


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
                if pid.isdigit() and start_time(int(pid)) is None:
                    group = _Cgroup([folder], self.version)
                    group.close()
                    removed += not folder.exists()
        return removed

    def create(self, limits, role=""):
        """A new cgroup with ``limits`` (memory, processes, CPU share); ``role`` ends
        its name (``"driver"``)."""
        name = f"grade-{os.getpid()}-{secrets.token_hex(6)}" + (f"-{role}" if role else "")
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
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OSError(13, f"{parent} is not writable by this user")
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

"""Scratch folders: where one submission runs, who it runs as, and how much it may write.

Each submission gets a scratch folder of its own under the grader's
:func:`scratch_root`: ``fs/box`` (the kernel's working folder, ``/submission``
in its sandbox), ``fs/sockets`` (the kernel's sockets), ``driver/`` (the copy of
the notebook the driver reads) and ``control/`` (the driver's result, which only
the grader opens). Nothing a submission writes outside ``fs`` reaches the
machine.

**Who runs it.** As root (the usual container) the kernel and the driver run
as an unprivileged user of their own, :func:`sandbox_user` (the highest user
and group id below 65534 that no account uses), never as root: Linux applies no
process limit to root, and root may read every file. As an ordinary user they
run as that user.

**How much it writes.** As root ``fs`` is a tmpfs of its own for each
submission, of :attr:`~resnet_theory.homework.sandbox.Limits.disk_bytes`, whose
pages are charged to the submission's memory cgroup: the disk is capped.
For an ordinary user with a cgroup per submission the scratch folder is on a
tmpfs when there is one (``$XDG_RUNTIME_DIR`` or ``/dev/shm``), so that what a
submission writes counts against its memory cgroup; without a cgroup it stays in
``$TMPDIR`` and only each file is capped (``RLIMIT_FSIZE``), which
:func:`disk_cap` says.
"""

from __future__ import annotations

import ctypes
import functools
import os
import shutil
import stat
import tempfile
from pathlib import Path
from time import time

from .cgroups import start_time

__all__ = ["scratch_root", "new_scratch", "remove_scratch", "clean_stale_scratch",
           "sandbox_user", "SandboxUser", "disk_cap", "give_to_sandbox", "unreachable",
           "SandboxUnavailable", "OWNERLESS_GRACE_SECONDS"]

#: A scratch directory without its ``owner`` file is one a grader is making (between
#: creating it and writing the file), unless it is older than this many seconds.
OWNERLESS_GRACE_SECONDS = 60
_TMPFS_MAGIC = "tmpfs"


class SandboxUnavailable(RuntimeError):
    """Raised when a sandbox is required but ``bwrap`` is missing or does not work."""


class SandboxUser:
    """The unprivileged user and group a root grader runs submissions as."""

    def __init__(self, uid, gid):
        self.uid, self.gid = int(uid), int(gid)

    def __repr__(self):
        return f"SandboxUser(uid={self.uid}, gid={self.gid})"

    def command(self, command, *, no_new_privs=True):
        """``command`` run as this user (no supplementary groups)."""
        setpriv = shutil.which("setpriv")
        if setpriv:
            return [setpriv, f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups",
                    *(["--no-new-privs"] if no_new_privs else []), "--", *command]
        import sys

        return [sys.executable, "-c",
                "import os, sys; os.setgroups([]); os.setgid(int(sys.argv[2])); "
                "os.setuid(int(sys.argv[1])); os.execvp(sys.argv[3], sys.argv[3:])",
                str(self.uid), str(self.gid), *command]


def _ids(path, field):
    try:
        lines = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return set()
    found = set()
    for line in lines:
        parts = line.split(":")
        if len(parts) > field and parts[field].isdigit():
            found.add(int(parts[field]))
    return found


@functools.cache
def sandbox_user():
    """The user submissions run as: :class:`SandboxUser` for a root grader, else ``None``.

    The highest id below 65534 (``nobody``) that is neither a user's nor a
    group's id in ``/etc/passwd`` and ``/etc/group``, used as both.
    """
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        return None
    taken = _ids("/etc/passwd", 2) | _ids("/etc/passwd", 3) | _ids("/etc/group", 2)
    for uid in range(65533, 1000, -1):
        if uid not in taken:
            return SandboxUser(uid, uid)
    raise SandboxUnavailable("no free user id below 65534 to run submissions as")


def unreachable(path, user):
    """The first folder on the way to ``path`` that ``user`` may not enter, or ``None``."""
    path = Path(os.path.realpath(path))
    for folder in [*reversed(path.parents), path]:
        try:
            info = os.stat(folder)
        except OSError:
            return None
        if not stat.S_ISDIR(info.st_mode):
            continue
        bit = stat.S_IXUSR if info.st_uid == user.uid else \
            stat.S_IXGRP if info.st_gid == user.gid else stat.S_IXOTH
        if not info.st_mode & bit:
            return folder
    return None


def _mounts():
    """``{mount point: file system type}`` of this process."""
    found = {}
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return found
    for line in lines:
        fields = line.split()
        if len(fields) >= 3:
            found[fields[1].replace("\\040", " ")] = fields[2]
    return found


def _tmpfs_base():
    """A writable tmpfs for the scratch root of an ordinary user, or ``None``."""
    mounts = _mounts()
    for candidate in (os.environ.get("XDG_RUNTIME_DIR"), "/dev/shm"):
        if candidate and mounts.get(candidate) == _TMPFS_MAGIC and \
                os.access(candidate, os.W_OK | os.X_OK):
            return Path(candidate)
    return None


def _root_base():
    if sandbox_user() is None:
        from .cgroups import find_cgroups

        base = _tmpfs_base() if find_cgroups()[0] is not None else None
        if base is not None:
            return base
    return Path(tempfile.gettempdir())


def scratch_root():
    """The grader's own folder of scratch directories (created if missing).

    ``<base>/resnet-theory-grading-<uid>`` (``<base>``: ``$TMPDIR`` as root, a
    tmpfs where an ordinary user has one), mode ``0700`` (``0711`` as root, so
    that the sandbox's user reaches its own folder); refused if it is a symbolic
    link, not a directory, or owned by someone else.
    """
    root = _root_base() / f"resnet-theory-grading-{os.getuid()}"
    mode = 0o711 if sandbox_user() is not None else 0o700
    try:
        root.mkdir(mode=mode)
    except FileExistsError:
        pass
    info = os.lstat(root)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise SandboxUnavailable(f"{root} is not a directory of this user; remove it")
    if stat.S_IMODE(info.st_mode) != mode:
        os.chmod(root, mode)
    return root


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _mount_tmpfs(target, size):
    """Mount a tmpfs of ``size`` bytes on ``target`` (root only); ``OSError`` otherwise."""
    options = f"size={int(size)},mode=0755,nr_inodes=200000".encode()
    if _libc().mount(b"tmpfs", os.fsencode(target), b"tmpfs", 2 | 4,  # nosuid, nodev
                     options) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))


@functools.cache
def can_mount():
    """Whether this grader can mount a tmpfs per submission (root with ``CAP_SYS_ADMIN``)."""
    if sandbox_user() is None:
        return False
    probe = Path(tempfile.mkdtemp(prefix="mount-probe-", dir=scratch_root()))
    try:
        _mount_tmpfs(probe, 1 << 20)
    except OSError:
        probe.rmdir()
        return False
    _libc().umount2(os.fsencode(probe), 2)
    probe.rmdir()
    return True


def disk_cap(cgroups):
    """What caps a submission's writes: ``(capped, how)``."""
    if can_mount():
        return True, "a tmpfs of its own per submission (charged to its memory cgroup)"
    base = _root_base()
    if _mounts().get(str(base)) == _TMPFS_MAGIC and cgroups is not None:
        return True, f"the scratch folder is on the tmpfs {base}, charged to its memory cgroup"
    return False, (f"the scratch folder is in {base}; only each file is capped "
                   "(RLIMIT_FSIZE), not the total")


def new_scratch(disk_bytes=None):
    """A fresh scratch folder: ``fs/box``, ``fs/sockets``, ``driver``, ``control``.

    As root ``fs`` is a tmpfs of ``disk_bytes`` (where mounting works), and
    ``fs`` and ``driver`` belong to :func:`sandbox_user`.
    """
    scratch = Path(tempfile.mkdtemp(prefix="grade-", dir=scratch_root()))
    (scratch / "owner").write_text(f"{os.getpid()} {start_time(os.getpid())}\n")
    user = sandbox_user()
    if user is not None:
        os.chmod(scratch, 0o711)
    fs = scratch / "fs"
    fs.mkdir()
    if disk_bytes and can_mount():
        _mount_tmpfs(fs, disk_bytes)
    for folder in (fs / "box", fs / "sockets", scratch / "driver", scratch / "control"):
        folder.mkdir()
    if user is not None:
        for folder in (fs, fs / "box", fs / "sockets", scratch / "driver"):
            os.chown(folder, user.uid, user.gid)
    return scratch


def give_to_sandbox(*paths):
    """Make ``paths`` (and what is in them) belong to :func:`sandbox_user`, as root."""
    user = sandbox_user()
    if user is None:
        return
    for path in paths:
        os.chown(path, user.uid, user.gid, follow_symlinks=False)
        if path.is_dir() and not path.is_symlink():
            for root, dirs, files in os.walk(path):
                for name in dirs + files:
                    os.chown(os.path.join(root, name), user.uid, user.gid,
                             follow_symlinks=False)


def _unmount_below(folder):
    """Unmount every mount at or below ``folder`` (a killed grader's tmpfs)."""
    prefix = os.path.realpath(folder)
    points = [point for point in _mounts()
              if point == prefix or point.startswith(prefix + os.sep)]
    for point in sorted(points, key=len, reverse=True):
        _libc().umount2(os.fsencode(point), 2)  # MNT_DETACH


def remove_scratch(scratch):
    """Remove a scratch directory, even one whose folders the notebook made unreadable."""
    scratch = Path(scratch)
    if sandbox_user() is not None:
        _unmount_below(scratch)
    for root, dirs, _ in os.walk(scratch):
        for name in dirs:
            path = os.path.join(root, name)
            if not os.path.islink(path):
                try:
                    os.chmod(path, 0o700)
                except OSError:
                    pass
    shutil.rmtree(scratch, ignore_errors=True)


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
        if pid.isdigit() and int(pid) > 0 and start_time(int(pid)) == started:
            continue  # a grader that is still running
        remove_scratch(entry)
        removed += 1
    return removed

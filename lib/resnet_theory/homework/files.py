r"""Files: reading the untrusted submissions folder, and writing the grader's results into it.

Every file is read with ``O_NOFOLLOW | O_NONBLOCK`` and checked with ``fstat``
(:func:`read_regular_file`); every result is written to a temporary file that is
then renamed over its target (:func:`write_atomic`), never through a symbolic
link, and a folder of results (``feedback/``, ``written-answers/``) is built
fresh beside the old one and renamed into place (:func:`replace_folder`), so
nothing planted in it survives or stops the grader. CSV cells are escaped so
that no spreadsheet reads one as a formula, and the escaping is reversible
(:func:`csv_cell`, :func:`csv_uncell`).
"""

from __future__ import annotations

import csv
import io
import os
import re
import secrets
import shutil
import stat
import unicodedata
from pathlib import Path

__all__ = ["display_name", "csv_cell", "csv_uncell", "csv_text", "read_regular_file",
           "open_output_folder", "write_atomic", "replace_folder", "one_line",
           "is_grader_temporary", "remove_temporaries", "read_file"]

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def one_line(text, limit=300):
    """``text`` on one line, at most ``limit`` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def display_name(name):
    r"""A file name as it can be shown and written anywhere: printable, NFC, one line.

    Undecodable bytes (kept by Python as surrogates) become ``\xNN``, control
    and format characters ``\uNNNN``; a name that is not in NFC form shows its
    combining marks as ``\uNNNN``, so that the NFC and NFD spellings of one
    name never give two identical-looking rows. A backslash is doubled, so the
    escaping is reversible.

    Examples
    --------
    >>> display_name("alice.ipynb")
    'alice.ipynb'
    >>> display_name(b"bob\xff.ipynb".decode("utf-8", "surrogateescape"))
    'bob\\xff.ipynb'
    >>> display_name("Jos\u00e9.ipynb"), display_name("Jose\u0301.ipynb")
    ('José.ipynb', 'Jose\\u0301.ipynb')
    """
    nfc = unicodedata.is_normalized("NFC", name.encode("utf-8", "surrogateescape").decode(
        "utf-8", "replace"))
    out = []
    for char in name:
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif 0xD800 <= code <= 0xDFFF or unicodedata.category(char)[0] == "C" or \
                (not nfc and unicodedata.combining(char)) or char == "\\":
            out.append(f"\\u{code:04x}" if char != "\\" else "\\\\")
        else:
            out.append(char)
    return "".join(out)


_FORMULA = ("=", "+", "-", "@")
_PLAIN_NUMBER = re.compile(r"-?\d+(\.\d+)?")


def csv_cell(value):
    """A CSV cell that no spreadsheet reads as a formula, escaped reversibly.

    Text that starts with ``=``, ``+``, ``-`` or ``@`` (also after blanks), a tab
    or a carriage return gets a leading ``'`` (the OWASP advice for CSV
    injection); so does text that already starts with ``'``, so that
    :func:`csv_uncell` gives back exactly the text written (``'alice`` and
    ``alice`` stay two students). Numbers the grader wrote (``1``, ``0``,
    ``3/5``, ``-2.5``) are kept.

    Examples
    --------
    >>> csv_cell("=HYPERLINK(\\"http://x\\")"), csv_cell("-2.5"), csv_cell("@SUM(1)")
    ('\\'=HYPERLINK("http://x")', '-2.5', "'@SUM(1)")
    >>> csv_cell(" =1+1"), csv_cell("'alice"), csv_uncell(csv_cell("'alice"))
    ("' =1+1", "''alice", "'alice")
    """
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    text = str(value)
    if text.startswith(("'", "\t", "\r")):
        return "'" + text
    if text.lstrip(" \t\r\n\f\v").startswith(_FORMULA) and not _PLAIN_NUMBER.fullmatch(text):
        return "'" + text
    return text


def csv_uncell(text):
    """The text :func:`csv_cell` escaped (one leading ``'`` removed).

    Examples
    --------
    >>> [csv_uncell(csv_cell(t)) for t in ("alice", "'alice", "=1", " -x", "-2")]
    ['alice', "'alice", '=1', ' -x', '-2']
    """
    return text[1:] if text.startswith("'") else text


def csv_text(rows):
    """CSV text of ``rows``, every cell through :func:`csv_cell`."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for row in rows:
        writer.writerow([csv_cell(cell) for cell in row])
    return buffer.getvalue()


def read_regular_file(folder_fd, name, limit, what="the exported answer"):
    """The bytes of a regular file in an open folder, without following links.

    Raises
    ------
    ValueError
        If it is not a regular file or has more than ``limit`` bytes.
    OSError
        If it cannot be opened (``ELOOP`` for a symbolic link).
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | _CLOEXEC
    fd = os.open(name, flags, dir_fd=folder_fd)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{what} is not a regular file")
        if info.st_size > limit:
            raise ValueError(f"{what} has {info.st_size} bytes, more than the "
                             f"limit of {limit}")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise ValueError(f"{what} has more than {limit} bytes")
    return data


def read_file(path, limit, what):
    """:func:`read_regular_file` of a path (its folder opened first)."""
    path = Path(path)
    folder_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    try:
        return read_regular_file(folder_fd, path.name, limit, what=what)
    finally:
        os.close(folder_fd)


def open_output_folder(folder, create=False):
    """An ``O_NOFOLLOW`` descriptor of an output folder (refusing a symbolic link)."""
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
    folder = Path(folder)
    if create:
        try:
            os.mkdir(folder, 0o755)
        except FileExistsError:
            pass
    try:
        return os.open(folder, flags)
    except OSError as error:
        raise ValueError(f"{folder} is not a folder the grader may write into (a symbolic "
                         f"link or a file is in its place: {error.strerror}); remove it or "
                         "write elsewhere with --out") from None


def write_atomic(folder_fd, name, text):
    """Write ``text`` to ``name`` in an open folder: a temporary file, then ``os.replace``.

    A symbolic link (or anything) at ``name`` is replaced, never followed; a
    folder at ``name`` is refused.
    """
    try:
        info = os.stat(name, dir_fd=folder_fd, follow_symlinks=False)
        if stat.S_ISDIR(info.st_mode):
            raise ValueError(f"{name} is a folder; the grader does not replace it")
    except FileNotFoundError:
        pass
    temporary = f".{name}.{secrets.token_hex(6)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | _CLOEXEC
    fd = os.open(temporary, flags, 0o644, dir_fd=folder_fd)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, name, src_dir_fd=folder_fd, dst_dir_fd=folder_fd)
    except BaseException:
        try:
            os.unlink(temporary, dir_fd=folder_fd)
        except OSError:
            pass
        raise


_TEMPORARY = re.compile(r"\.(.+)\.[0-9a-f]{12}\.(new|old|tmp)")


def is_grader_temporary(name, outputs):
    """Whether ``name`` is a temporary file or folder of the grader's, for one of the
    output names ``outputs``."""
    found = _TEMPORARY.fullmatch(name)
    return found is not None and found.group(1) in outputs


def _remove_tree(parent_fd, name):
    """Remove a folder in an open folder, without following links, even unreadable ones."""
    try:
        for _, dirs, _, fd in os.fwalk(name, dir_fd=parent_fd, follow_symlinks=False):
            for child in dirs:
                try:
                    os.chmod(child, 0o700, dir_fd=fd, follow_symlinks=False)
                except (OSError, NotImplementedError):
                    pass
    except OSError:
        pass
    shutil.rmtree(name, dir_fd=parent_fd, ignore_errors=True)


def replace_folder(folder, name, files):
    """Build the folder ``folder/name`` fresh with ``files`` (name -> text) and rename it
    into place; whatever was there before (a planted file or folder inside it
    included) is removed. A symbolic link or a file at ``name`` is refused.

    Returns
    -------
    pathlib.Path
        The folder.
    """
    parent_fd = open_output_folder(folder)
    try:
        try:
            info = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
            if not stat.S_ISDIR(info.st_mode):
                raise ValueError(f"{Path(folder) / name} is not a folder; the grader does "
                                 "not replace it")
            old = True
        except FileNotFoundError:
            old = False
        token = secrets.token_hex(6)
        fresh, aside = f".{name}.{token}.new", f".{name}.{token}.old"
        os.mkdir(fresh, 0o755, dir_fd=parent_fd)
        try:
            fresh_fd = os.open(fresh, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC,
                               dir_fd=parent_fd)
            try:
                for file_name, text in files.items():
                    write_atomic(fresh_fd, file_name, text)
            finally:
                os.close(fresh_fd)
            if old:
                os.rename(name, aside, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
            os.rename(fresh, name, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
        except BaseException:
            _remove_tree(parent_fd, fresh)
            raise
        if old:
            _remove_tree(parent_fd, aside)
    finally:
        os.close(parent_fd)
    return Path(folder) / name


def remove_temporaries(folder, outputs):
    """Remove the temporary files and folders a killed grader left in ``folder`` (for the
    output names ``outputs``)."""
    parent_fd = open_output_folder(folder)
    try:
        for entry in os.scandir(parent_fd):
            if not is_grader_temporary(entry.name, outputs):
                continue
            if entry.is_dir(follow_symlinks=False):
                _remove_tree(parent_fd, entry.name)
            else:
                try:
                    os.unlink(entry.name, dir_fd=parent_fd)
                except OSError:
                    pass
    finally:
        os.close(parent_fd)

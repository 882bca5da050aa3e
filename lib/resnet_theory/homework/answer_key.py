r"""The answer key: expected answers computed from the assignment, kept out of the library.

The checks of :mod:`resnet_theory.checks` know how an answer is judged, not
what it is. The expected values of the exercises that are *compared* (not
those with a property check) come from the assignment itself: its notebooks
hold the solutions and are trusted. :func:`compute_answer_key` runs each
assignment notebook once, top to bottom, through the grader's own path
(:func:`resnet_theory.homework.sandbox.run_submission` in its sandbox, then the
export of the answer variables as data, read back with ``json`` and
``numpy.load(..., allow_pickle=False)``), checks that every exported value has
its exercise's form, and returns an :class:`AnswerKey`.

A key is written as JSON (:func:`write_answer_key`), one entry per notebook
with the notebook's SHA-256, so that a cached key is reused only for the
notebook it was computed from::

    {"format": "resnet_theory answer key", "version": 1,
     "notebooks": {"example_one.ipynb": {
         "notebook": "example_one.ipynb", "sha256": "9f2c...",
         "answers": {"ex-shamir-trap-depth": <the solution's value>}}},
     "signature": "..."}

``make grade`` caches the key in the output folder as ``answer-key.json``.
That folder is usually the submissions folder, which is not trusted, so a
cached key is only reused when its ``signature`` (HMAC-SHA256 with a secret
kept in ``$XDG_CACHE_HOME/resnet_theory/answer-key.secret``, default
``~/.cache``, readable only by you) is right: a key planted among the
submissions is recomputed, not believed. A key given explicitly
(``--answer-key``) is the lecturer's own file and is used as it is.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from . import signing
from .answers import read_answers
from .assignment import Assignment, load_assignment
from .files import open_output_folder, read_file, write_atomic
from .sandbox import (
    Limits,
    export_folder,
    remove_scratch,
    resolve_cgroups,
    resolve_sandbox,
    run_submission,
)

__all__ = ["AnswerKey", "KeyedNotebook", "compute_answer_key", "read_answer_key",
           "write_answer_key", "notebook_sha256", "KEY_FILE", "FORMAT"]

#: The file name of the cached key in the grader's output folder.
KEY_FILE = "answer-key.json"
#: The ``format`` field of a key file.
FORMAT = "resnet_theory answer key"
_VERSION = 1
_MAX_KEY_BYTES = 50_000_000


@dataclass(frozen=True)
class KeyedNotebook:
    """The answers computed from one assignment notebook.

    Attributes
    ----------
    notebook : str
        Its file name.
    sha256 : str
        The SHA-256 of the notebook file the answers were computed from.
    answers : dict
        Exercise label to the expected answer, as JSON data.
    """

    notebook: str
    sha256: str
    answers: dict = field(default_factory=dict)


@dataclass(frozen=True)
class AnswerKey:
    """Expected answers by exercise label, with the notebooks they came from.

    Parameters
    ----------
    notebooks : dict
        Assignment notebook key (file name, lower-case) to
        :class:`KeyedNotebook`.

    Examples
    --------
    >>> key = AnswerKey.of({"ex-demo-area": 3.14159})
    >>> key.answers, "ex-demo-area" in key
    ({'ex-demo-area': 3.14159}, True)
    """

    notebooks: dict = field(default_factory=dict)

    @classmethod
    def of(cls, answers):
        """A key of plain ``label -> value`` answers (no notebook recorded)."""
        return cls({"": KeyedNotebook("", "", dict(answers))})

    @property
    def answers(self):
        """Every expected answer: exercise label to JSON data."""
        merged = {}
        for entry in self.notebooks.values():
            merged.update(entry.answers)
        return merged

    def __contains__(self, label):
        return any(label in entry.answers for entry in self.notebooks.values())

    def labels(self):
        """The exercise labels of the key, sorted."""
        return sorted(self.answers)


def notebook_sha256(data):
    """The SHA-256 (hexadecimal) of a notebook's bytes.

    Examples
    --------
    >>> notebook_sha256(b"{}")[:12]
    '44136fa355b3'
    """
    return hashlib.sha256(data).hexdigest()


# ---------------------------------------------------------------------- the file

def _body(key):
    return {"format": FORMAT, "version": _VERSION,
            "notebooks": {name: {"notebook": entry.notebook, "sha256": entry.sha256,
                                 "answers": entry.answers}
                          for name, entry in sorted(key.notebooks.items())}}


def key_text(key):
    """The JSON text of a key, signed with this user's secret where one can be made."""
    body = _body(key)
    secret = signing.secret()
    if secret is not None:
        body["signature"] = signing.signature(_body(key), secret)
    return json.dumps(body, indent=1, sort_keys=True, allow_nan=False) + "\n"


def _parse(text, where, *, signed):
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise ValueError(f"{where} is not an answer key (not JSON)") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or \
            data.get("version") != _VERSION or not isinstance(data.get("notebooks"), dict):
        raise ValueError(f"{where} is not an answer key of version {_VERSION}")
    notebooks = {}
    for name, entry in data["notebooks"].items():
        if not (isinstance(entry, dict) and isinstance(entry.get("answers"), dict) and
                isinstance(entry.get("sha256", ""), str) and
                isinstance(entry.get("notebook", ""), str)):
            raise ValueError(f"{where}: the entry of {name!r} is malformed")
        notebooks[name] = KeyedNotebook(entry.get("notebook", ""), entry.get("sha256", ""),
                                        dict(entry["answers"]))
    key = AnswerKey(notebooks)
    if signed:
        if not signing.verify(_body(key), data.get("signature")):
            raise ValueError(f"{where} was not written by this grader (its signature is "
                             "missing or wrong)")
    return key


def read_answer_key(path, *, signed=False):
    """Read a key file written by :func:`write_answer_key` (or by hand).

    Parameters
    ----------
    path : path-like
        The JSON file (read without following a symbolic link).
    signed : bool, optional
        Accept it only if its signature is this user's (for a cached key
        found in a folder that is not trusted).

    Returns
    -------
    AnswerKey

    Raises
    ------
    ValueError
        If the file is not an answer key (or not signed, with ``signed``).
    OSError
        If it cannot be read (missing, a symbolic link, too large).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "key.json"
    >>> _ = write_answer_key(AnswerKey.of({"ex-demo-area": 3.14159}), path)
    >>> read_answer_key(path).answers
    {'ex-demo-area': 3.14159}
    """
    path = Path(path)
    try:
        data = read_file(path, _MAX_KEY_BYTES, what="the answer key")
    except ValueError as error:
        raise OSError(str(error)) from None
    return _parse(data.decode("utf-8", "replace"), path, signed=signed)


def write_answer_key(key, path):
    """Write ``key`` as JSON to ``path`` (atomically; a symbolic link there is replaced).

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    path = Path(path)
    folder_fd = open_output_folder(path.parent)
    try:
        write_atomic(folder_fd, path.name, key_text(key))
    finally:
        os.close(folder_fd)
    return path


# ------------------------------------------------------------------ computing it

def compared_labels(labels):
    """The labels among ``labels`` whose exercises are compared with a key."""
    from ..checks import REGISTRY

    return [label for label in labels if label in REGISTRY and REGISTRY[label].needs_key]


def _run_solution(title, data, labels, limits, bwrap, groups):
    """Run one assignment notebook and return ``label -> expected answer`` (JSON data)."""
    from ..checks import REGISTRY

    variables = {label: REGISTRY[label].answer_variable for label in labels}
    nonce = secrets.token_hex(16)
    payload, scratch = run_submission(data, title, variables, nonce, limits, bwrap=bwrap,
                                      cgroups=groups)
    try:
        status = payload.get("status")
        if payload.get("interrupted"):
            raise ValueError("answer key: interrupted")
        if status != "ok":
            raise ValueError(f"answer key: the assignment notebook {title} did not run "
                             f"cleanly ({status}: {payload.get('reason', '')})")
        answers = read_answers(export_folder(scratch, nonce), payload.get("answers", {}),
                               sorted(set(variables.values())), limits.answer_bytes)
    finally:
        remove_scratch(scratch)
    return expected_answers(title, labels, answers)


def expected_answers(title, labels, answers):
    """The key's entries ``label -> expected answer`` (JSON data) from exported answers.

    Parameters
    ----------
    title : str
        The assignment notebook's name (for error messages).
    labels : list of str
        Its exercises compared with a key.
    answers : dict
        Answer variable to ``(value, why)``, as the grader reads them back from the
        export (:func:`resnet_theory.homework.answers.read_answers`).

    Raises
    ------
    ValueError
        If an answer is missing or is not of its exercise's form.
    """
    from ..checks import REGISTRY

    found = {}
    for label in labels:
        entry = REGISTRY[label]
        value, why = answers.get(entry.answer_variable, (None, "it was not exported"))
        if value is None:
            raise ValueError(f"answer key: {title} does not give {entry.answer_variable} "
                             f"({why or 'it is None after the notebook ran'})")
        try:
            found[label] = entry.form.to_data(entry.normalise(value))
        except Exception as error:
            raise ValueError(f"answer key: {title}: {entry.answer_variable} is not of the "
                             f"exercise's form ({error})") from None
    return found


def compute(assignment, keys, limits, bwrap, groups, cached=None, jobs=1, echo=False):
    """The key of the notebooks ``keys`` of ``assignment``; reuses ``cached`` entries."""
    cached = cached.notebooks if cached is not None else {}
    notebooks, todo = {}, []
    for name in keys:
        title, auto, _, path = assignment.notebooks[name]
        labels = compared_labels(auto)
        if not labels:
            continue
        data = Path(path).read_bytes()
        sha = notebook_sha256(data)
        old = cached.get(name)
        if old is not None and old.sha256 == sha and sorted(old.answers) == sorted(labels):
            notebooks[name] = old
            if echo:
                print(f"answer key: {title} unchanged, cached key used", file=sys.stderr)
            continue
        todo.append((name, title, data, sha, labels))
    if todo and echo:
        print(f"answer key: running {len(todo)} assignment notebook(s) to compute it: "
              + ", ".join(title for _, title, *_ in todo), file=sys.stderr, flush=True)

    def one(item):
        name, title, data, sha, labels = item
        return name, KeyedNotebook(title, sha, _run_solution(title, data, labels, limits,
                                                             bwrap, groups))

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        for name, entry in pool.map(one, todo):
            notebooks[name] = entry
    return AnswerKey(dict(sorted(notebooks.items())))


def compute_answer_key(assignment, *, notebooks=None, limits=None, sandbox="auto",
                       cgroups="off", jobs=1, cache=None, echo=False):
    """Compute the answer key of an assignment by running its notebooks once.

    Parameters
    ----------
    assignment : path-like or Assignment
        The notebook or folder of notebooks whose solutions give the answers
        (see :func:`resnet_theory.homework.load_assignment`).
    notebooks : iterable of str, optional
        Only these notebooks of the assignment (keys: file names, lower-case);
        default: all of them.
    limits : Limits, optional
        Time and memory limits of each run (default: those of ``make grade``).
    sandbox, cgroups : {"auto", "require", "off"}, optional
        As for :func:`resnet_theory.homework.grade_folder`.
    jobs : int, optional
        Notebooks run at once.
    cache : path-like, optional
        A key file: its entries are reused for every notebook whose SHA-256 and
        compared exercises are unchanged, if its signature is this user's; the
        new key is written back to it.
    echo : bool, optional
        Say which notebooks run and which are cached (on stderr).

    Returns
    -------
    AnswerKey
        One entry per notebook with at least one compared exercise.

    Raises
    ------
    ValueError
        If a notebook does not run cleanly, does not give an answer, or gives
        one of the wrong form (its solution is broken: fix the assignment).

    Examples
    --------
    A notebook without compared exercises needs no run:

    >>> import pathlib, tempfile, nbformat
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> nbformat.write(nbformat.v4.new_notebook(), folder / "empty.ipynb")
    >>> compute_answer_key(folder).notebooks
    {}
    """
    if not isinstance(assignment, Assignment):
        assignment = load_assignment(assignment)
    limits = Limits() if limits is None else limits
    bwrap, _ = resolve_sandbox(sandbox)
    groups, _ = resolve_cgroups(cgroups)
    keys = list(assignment.notebooks) if notebooks is None else \
        [name for name in assignment.notebooks if name in set(notebooks)]
    cached = None
    if cache is not None:
        cached = load_cached_key(cache, echo=echo)
    key = compute(assignment, keys, limits, bwrap, groups, cached, jobs, echo)
    if cache is not None:
        save_cached_key(key, cache, cached)
    return key


def load_cached_key(path, *, echo=False):
    """The signed key cached at ``path``, or ``None`` (missing, unsigned, malformed)."""
    path = Path(path)
    try:
        return read_answer_key(path, signed=True)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as error:
        if echo:
            print(f"answer key: {path} is not used ({error}); it is recomputed",
                  file=sys.stderr)
        return None


def save_cached_key(key, path, cached=None):
    """Write ``key`` to ``path``, keeping the cached entries of other notebooks."""
    merged = dict(cached.notebooks) if cached is not None else {}
    merged.update(key.notebooks)
    return write_answer_key(AnswerKey(dict(sorted(merged.items()))), path)

"""The answers a run exported, read back as data and judged in the grader's own process.

The kernel exports each answer variable as ``<variable>.json`` or
``<variable>.npy`` (:func:`resnet_theory.homework.driver.export_source`); the
grader reads them with its own limits, without following a link
(:func:`read_answers`), turns them into data with ``json`` and
``numpy.load(..., allow_pickle=False)`` (:func:`load_answer`) and runs the
check of :mod:`resnet_theory.checks` here (:func:`judge`), never in the kernel.
"""

from __future__ import annotations

import io
import json
import os
import re

from .driver import safe_error
from .files import one_line, read_regular_file

__all__ = ["load_answer", "read_answers", "judge", "NO_KEY"]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,200}$")
#: The reason of an exercise compared with the answer key when there is no key.
NO_KEY = ("not graded: there is no answer key for this exercise (grade with an "
          "assignment, or pass --answer-key)")


def load_answer(data, kind):
    """Turn exported bytes into an answer, trusting nothing about them.

    Parameters
    ----------
    data : bytes
        The content of ``<variable>.json`` or ``<variable>.npy``.
    kind : str
        ``"json"``, ``"npy"`` or ``"npy-scalar"`` (a NumPy scalar, returned as one).

    Returns
    -------
    object
        Python data (``None``, ``bool``, ``int``, ``float``, ``str``, lists and
        dicts of them) or a NumPy array or scalar of boolean, integer, float or
        complex type.

    Raises
    ------
    ValueError
        If the bytes are not such data (an ``.npy`` file that needs pickle, of
        another type, or a malformed file).

    Examples
    --------
    >>> load_answer(b"[1, 2.5]", "json")
    [1, 2.5]
    >>> import io, numpy as np
    >>> buffer = io.BytesIO(); np.save(buffer, np.float64(0.25)); print(repr(
    ...     load_answer(buffer.getvalue(), "npy-scalar")))
    np.float64(0.25)
    >>> buffer = io.BytesIO(); np.save(buffer, np.array([object()]), allow_pickle=True)
    >>> load_answer(buffer.getvalue(), "npy")
    Traceback (most recent call last):
    ...
    ValueError: the .npy answer is not a numeric array (ValueError)
    """
    import numpy as np

    if kind == "json":
        try:
            return json.loads(data.decode("utf-8"))
        except (ValueError, UnicodeDecodeError, RecursionError) as error:
            raise ValueError(f"the JSON answer is malformed ({type(error).__name__})") from None
    if kind not in ("npy", "npy-scalar"):
        raise ValueError(f"unknown kind of answer {kind!r}")
    if not data.startswith(b"\x93NUMPY"):
        raise ValueError("the .npy answer is not an .npy file")
    try:
        array = np.load(io.BytesIO(data), allow_pickle=False)
    except Exception as error:
        raise ValueError(f"the .npy answer is not a numeric array ({type(error).__name__})") \
            from None
    if not isinstance(array, np.ndarray) or array.dtype.kind not in "biufc":
        raise ValueError("the .npy answer is not a numeric array")
    if kind == "npy-scalar":
        if array.ndim != 0:
            raise ValueError("the .npy scalar has a shape")
        return array[()]
    return array


def read_answers(folder, manifest, variables, answer_bytes):
    """Variable -> ``(answer, None)`` or ``(None, why it scores 0)``, read from ``folder``.

    ``folder`` is the export folder of one run (``scratch/box/export-<nonce>``),
    ``manifest`` the kernel's (untrusted) list of what it wrote.
    """
    answers = {}
    try:
        folder_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        folder_fd = None
    try:
        for name in variables:
            entry = manifest.get(name) if isinstance(manifest, dict) else None
            if entry == "missing":
                answers[name] = (None, None)  # the check says "no answer yet"
            elif not isinstance(entry, str) or not _NAME.match(name):
                answers[name] = (None, "the answer was not exported (the notebook did not "
                                       "reach the end, or the export failed)")
            elif entry.startswith("error: "):
                answers[name] = (None, "the answer cannot be graded: it is not data that "
                                       "can be exported (" + safe_error(
                                           *(entry[7:].split(": ", 1) + [""])[:2]) + ")")
            elif entry in ("json", "npy", "npy-scalar") and folder_fd is not None:
                suffix = ".json" if entry == "json" else ".npy"
                try:
                    data = read_regular_file(folder_fd, name + suffix, answer_bytes)
                    answers[name] = (load_answer(data, entry), None)
                except (OSError, ValueError) as error:
                    why = error if isinstance(error, ValueError) else error.strerror
                    answers[name] = (None, f"the exported answer could not be read ({why})")
            else:
                answers[name] = (None, "the answer was not exported")
    finally:
        if folder_fd is not None:
            os.close(folder_fd)
    return answers


def judge(label, answer, expected):
    """Judge ``answer`` (data) for ``label`` in this process: ``(passed, reason, checked)``.

    ``expected`` maps labels to the answer key's values. ``checked`` says whether
    the reason is the check's own (withheld from ``feedback="verdict"``).
    """
    from ..checks import REGISTRY

    entry = REGISTRY[label]
    if entry.needs_key and label not in expected:
        return False, NO_KEY, False
    try:
        passed, reason = entry.grade(answer, expected[label]) if entry.needs_key else \
            entry.grade(answer)
    except Exception as error:  # a check must not raise; if it does, the row goes on
        return False, f"the check failed on this answer ({type(error).__name__})", True
    return bool(passed), one_line(reason), True

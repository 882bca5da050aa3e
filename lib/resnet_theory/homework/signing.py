"""Signatures: what the grader wrote into a folder it does not trust, and can believe again.

The grader keeps its results in the submissions folder by default, and that
folder is not trusted: a file there may have been planted by a student. What the
grader reads back from it (the cached answer key, the grading state that
``merge-marks`` and ``merge`` rebuild the grade book from, the sheet of manual
marks) carries an HMAC-SHA256 signature made with a secret only this user can
read, ``$XDG_CACHE_HOME/resnet_theory/answer-key.secret`` (default
``~/.cache``, mode 0600, made on first use). A file without the right signature
is not believed.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets as _secrets
from pathlib import Path

__all__ = ["secret", "secret_path", "signature", "verify"]


def secret_path():
    """Where this user's signing secret is kept."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "resnet_theory" / "answer-key.secret"


def secret(create=True):
    """This user's signing secret (made on first use, mode 0600), or ``None``."""
    path = secret_path()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd, "rb") as handle:
            text = handle.read(200).strip()
        return text if len(text) >= 32 else None
    except FileNotFoundError:
        if not create:
            return None
    except OSError:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(_secrets.token_hex(32).encode())
    except FileExistsError:
        pass
    except OSError:
        return None
    return secret(create=False)


def signature(body, key):
    """HMAC-SHA256 (hexadecimal) of the JSON data ``body`` under ``key``.

    Every signed body has a ``format`` field of its own, so a signature made for
    one kind of file is never right for another.
    """
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hmac.new(key, text.encode(), hashlib.sha256).hexdigest()


def verify(body, mark):
    """Whether ``mark`` is this user's signature of ``body``."""
    key = secret(create=False)
    return key is not None and isinstance(mark, str) and \
        hmac.compare_digest(mark, signature(body, key))

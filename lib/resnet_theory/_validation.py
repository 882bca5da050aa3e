"""Input validation shared by the library (private).

Every public function validates its arguments up front with these helpers, so
that a wrong input fails with a message naming the argument and what was
expected, instead of propagating NaNs.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["DivergenceError"]


class DivergenceError(ValueError):
    """An iterative method left every reasonable region (its iterates blew up).

    Raised instead of returning NaN or infinite iterates. It is a
    :class:`ValueError` because the cause is an argument (usually a step size
    that is too large for the problem); the message names it.
    """


def as_float(value, name: str) -> float:
    """Return ``value`` as a finite float, or raise naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return value


def positive(value, name: str) -> float:
    value = as_float(value, name)
    if value <= 0:
        raise ValueError(f"{name} must be positive, got {value}")
    return value


def nonnegative(value, name: str) -> float:
    value = as_float(value, name)
    if value < 0:
        raise ValueError(f"{name} must be non-negative, got {value}")
    return value


def positive_int(value, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value}")
    return int(value)


def probability(value, name: str) -> float:
    value = as_float(value, name)
    if not 0 < value < 1:
        raise ValueError(f"{name} must lie strictly between 0 and 1, got {value}")
    return value


def finite_array(value, name: str, *, ndim: int | None = None,
                 shape: tuple | None = None) -> np.ndarray:
    """Return ``value`` as a finite float array, checking ``ndim``/``shape``.

    In ``shape``, ``None`` entries match any length. Complex input is refused
    (converting it would silently drop the imaginary part).
    """
    try:
        complex_input = np.iscomplexobj(np.asarray(value))
    except (TypeError, ValueError):
        complex_input = False  # ragged or not numeric: refused below
    if complex_input:
        raise TypeError(f"{name} must be an array of real numbers, got complex values")
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of real numbers") from None
    if ndim is not None and array.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-dimensional, got shape {array.shape}")
    if shape is not None:
        if array.ndim != len(shape) or any(
            want is not None and got != want for got, want in zip(array.shape, shape, strict=True)
        ):
            expected = "(" + ", ".join("any" if s is None else str(s) for s in shape) + ")"
            raise ValueError(f"{name} must have shape {expected}, got {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must contain only finite numbers")
    return array


def generator(rng, name: str = "rng") -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"{name} must be a numpy.random.Generator (np.random.default_rng(seed)), "
            f"got {type(rng).__name__}"
        )
    return rng

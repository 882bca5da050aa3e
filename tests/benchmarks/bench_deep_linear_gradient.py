"""Benchmark: the cost of the deep linear network gradient grows linearly with depth.

:func:`resnet_theory.deep_linear.gradient` forms all prefix products
``Theta_{1:i-1}`` and suffix products ``Theta_{i+1:L}`` in one pass each, so a
gradient costs ``O(L d^3)``. A naive implementation that re-multiplies the
prefix and suffix for every layer costs ``O(L^2 d^3)``. This script times both
with :mod:`timeit` (median of several repeats) at fixed width ``d`` for depths
from 10 to 10000 (the naive version only up to 1000), prints a table and fits
the slope of log(time) against log(L): about 1 for the library, about 2 for the
naive version.

This is a script, not a test (pytest does not collect it). Run it from the
repository root:

    python tests/benchmarks/bench_deep_linear_gradient.py
"""

import timeit

import numpy as np
from resnet_theory.deep_linear import gradient

DIM = 4
DEPTHS = (10, 30, 100, 300, 1000, 3000, 10000)
NAIVE_MAX_DEPTH = 1000


def naive_gradient(thetas, phi):
    """The same gradient, re-multiplying prefix and suffix for every layer."""
    depth, dim, _ = thetas.shape
    total = np.eye(dim)
    for layer in thetas:
        total = layer @ total
    error = total - phi
    out = np.empty_like(thetas)
    for i in range(depth):
        before, after = np.eye(dim), np.eye(dim)
        for layer in thetas[:i]:
            before = layer @ before
        for layer in thetas[i + 1:]:
            after = layer @ after
        out[i] = after.T @ error @ before.T
    return out


def median_time(function, repeat):
    timer = timeit.Timer(function)
    number, _ = timer.autorange()
    return float(np.median(timer.repeat(repeat=repeat, number=number))) / number


def slope(depths, times):
    return float(np.polyfit(np.log(depths), np.log(times), 1)[0])


if __name__ == "__main__":
    rng = np.random.default_rng(0)
    phi = np.eye(DIM) + 0.1 * rng.normal(size=(DIM, DIM))
    rows = []
    for depth in DEPTHS:
        # scale the perturbation with 1/L so the product stays of order one
        thetas = np.eye(DIM) + rng.normal(size=(depth, DIM, DIM)) / depth
        fast = median_time(lambda t=thetas: gradient(t, phi), repeat=5)
        slow = None
        if depth <= NAIVE_MAX_DEPTH:
            np.testing.assert_allclose(gradient(thetas, phi), naive_gradient(thetas, phi),
                                       rtol=1e-9, atol=1e-12)
            slow = median_time(lambda t=thetas: naive_gradient(t, phi), repeat=3)
        rows.append((depth, fast, slow))

    print(f"gradient of a depth-L linear network, d = {DIM} (median wall time per call)")
    print(f"{'L':>7} {'gradient [ms]':>14} {'ms per layer':>13} {'naive [ms]':>12} {'ratio':>8}")
    for depth, fast, slow in rows:
        naive = f"{1e3 * slow:12.2f}" if slow is not None else f"{'-':>12}"
        ratio = f"{slow / fast:8.1f}" if slow is not None else f"{'-':>8}"
        print(f"{depth:7d} {1e3 * fast:14.3f} {1e3 * fast / depth:13.5f} {naive} {ratio}")
    depths = np.array([r[0] for r in rows], dtype=float)
    fast_times = np.array([r[1] for r in rows])
    naive_rows = [r for r in rows if r[2] is not None]
    print(f"log-log slope, library gradient (L = {DEPTHS[0]}..{DEPTHS[-1]}): "
          f"{slope(depths, fast_times):.2f}")
    print(f"log-log slope, library gradient (L >= 100): "
          f"{slope(depths[depths >= 100], fast_times[depths >= 100]):.2f}")
    print(f"log-log slope, naive gradient (L = {DEPTHS[0]}..{NAIVE_MAX_DEPTH}): "
          f"{slope([r[0] for r in naive_rows], [r[2] for r in naive_rows]):.2f}")

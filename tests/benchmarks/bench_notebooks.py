"""Benchmark: how long each notebook of the book takes to run top to bottom.

Every notebook must run in under 30 seconds on a 2-core machine (the budget a
reader running the book locally is promised). This script executes each notebook
under ``book/`` (or the ones named on the command line) in a fresh kernel with
:mod:`nbclient`, as ``make notebooks`` does but without writing anything back, and
prints a table: wall-clock seconds and the CPU seconds (user + system) of the
kernel, which are less sensitive than wall-clock time to whatever else the
machine is doing. It exits with status 1 if a notebook fails or its wall-clock
time exceeds ``--budget`` (default 30 s).

This is a script, not a test (pytest does not collect it). Run it from the
repository root:

    python tests/benchmarks/bench_notebooks.py [book/ch1_deep_residual/*.ipynb ...]
"""

import argparse
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]


def children_cpu_seconds():
    """User + system CPU seconds of all finished child processes (the kernels)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(path):
    """Execute one notebook in a fresh kernel; return (wall seconds, CPU seconds).

    The kernel talks over Unix sockets in a folder of its own, as nbval's kernels in
    the suite do (conftest.py), not over TCP, which ipykernel warns about."""
    notebook = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory(prefix="bench-kernel-") as sockets:
        manager = KernelManager(kernel_name="python3", transport="ipc",
                                ip=str(Path(sockets) / "kernel"))
        client = NotebookClient(
            notebook, km=manager, timeout=600,
            resources={"metadata": {"path": str(path.parent)}},
        )
        cpu_before, start = children_cpu_seconds(), time.perf_counter()
        try:
            client.execute()
            wall = time.perf_counter() - start
        finally:  # the client leaves a kernel it did not start running
            manager.shutdown_kernel(now=False)
        # the kernel has exited and been waited for, so its CPU time is counted
        return wall, children_cpu_seconds() - cpu_before


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--budget", type=float, default=30.0,
                        help="largest acceptable wall-clock seconds per notebook")
    args = parser.parse_args()
    paths = args.notebooks or sorted((ROOT / "book").rglob("*.ipynb"))
    paths = [p for p in paths if ".ipynb_checkpoints" not in p.parts]

    print(f"{'notebook':<50} {'wall s':>7} {'CPU s':>7}")
    over, walls = [], []
    for path in paths:
        wall, cpu = run(path.resolve())
        walls.append(wall)
        name = str(path.resolve().relative_to(ROOT))
        flag = "  over budget" if wall > args.budget else ""
        print(f"{name:<50} {wall:7.1f} {cpu:7.1f}{flag}", flush=True)
        if wall > args.budget:
            over.append(name)
    print(f"median {statistics.median(walls):.1f} s, slowest {max(walls):.1f} s")
    if over:
        print(f"{len(over)} notebook(s) over {args.budget:.0f} s: {', '.join(over)}")
        sys.exit(1)
    print(f"every notebook ran in under {args.budget:.0f} s")


if __name__ == "__main__":
    main()

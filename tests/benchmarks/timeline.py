"""A pytest plugin for bench_suite.py: when each test file ran, on which worker.

Loaded with ``-p tests.benchmarks.timeline``; writes one JSON line per test
(worker, node id, start and end on the wall clock) to the file named by the
``SUITE_TIMELINE`` environment variable. Not a test.
"""

import json
import os
import time

_started = {}
_recording = [True]


def pytest_configure(config):
    # Under pytest-xdist the controller sees every worker's reports too: the workers
    # record their own tests, the controller nothing.
    distributed = getattr(config.option, "dist", "no") != "no"
    _recording[0] = hasattr(config, "workerinput") or not distributed


def pytest_runtest_logstart(nodeid, location):
    if _recording[0]:
        _started[nodeid] = time.time()


def pytest_runtest_logfinish(nodeid, location):
    path = os.environ.get("SUITE_TIMELINE")
    if not path or nodeid not in _started:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"worker": worker, "test": nodeid,
                                 "start": _started.pop(nodeid), "end": time.time()}) + "\n")

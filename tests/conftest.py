"""Shared test configuration: a deterministic Hypothesis profile, a headless backend,
and one strict build of the HTML book per session. (The book's answer key, the
``book_answer_key`` fixture, is in the repository's top-level conftest.py.)"""

import collections
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # before anything imports matplotlib.pyplot

import pytest  # noqa: E402
from filelock import FileLock  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402
from hypothesis.configuration import set_hypothesis_home_dir  # noqa: E402

# Hypothesis caches data under ./.hypothesis by default. pyproject.toml replaces
# pytest's default `norecursedirs`, so a .hypothesis directory in the repository
# makes the Hypothesis pytest plugin warn at collection, which is an error under
# `filterwarnings = error`. Keep that cache out of the repository.
set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "resnet_theory-hypothesis")

settings.register_profile(
    "resnet_theory",
    derandomize=True,
    deadline=None,
    max_examples=60,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,  # derandomized runs need no example database
)
settings.load_profile("resnet_theory")

ROOT = Path(__file__).resolve().parents[1]

BookBuild = collections.namedtuple("BookBuild", "result html")


def _jupyter_book():
    executable = Path(sys.executable).with_name("jupyter-book")
    return str(executable) if executable.exists() else shutil.which("jupyter-book")


@pytest.fixture(scope="session")
def book_build(tmp_path_factory, request):
    """``jupyter-book build -W -n --keep-going`` of the book into a temporary folder.

    Built once per run and shared by tests/test_book_build.py, tests/test_browser.py
    and the others, also when pytest-xdist runs them on different workers. Returns
    ``BookBuild(result, html)``: the finished process and the folder of HTML pages
    (``html / "index.html"``).
    """
    if not hasattr(request.config, "workerinput"):  # not a pytest-xdist worker
        return _build_book(tmp_path_factory.mktemp("book"))
    # Under pytest-xdist every worker has a session of its own: the first worker to
    # ask builds into the folder the workers share, the others wait and reuse it.
    shared = tmp_path_factory.getbasetemp().parent / "book"
    with FileLock(str(shared) + ".lock"):
        saved = shared / "result.json"
        if saved.is_file():
            fields = json.loads(saved.read_text())
            result = subprocess.CompletedProcess(**fields)
            return BookBuild(result, shared / "_build" / "html")
        build = _build_book(shared)
        saved.write_text(json.dumps({"args": build.result.args,
                                     "returncode": build.result.returncode,
                                     "stdout": build.result.stdout,
                                     "stderr": build.result.stderr}))
        return build


def _build_book(out):
    """``jupyter-book build -W -n --keep-going`` of the book into the folder ``out``."""
    command = [_jupyter_book(), "build", "-W", "-n", "--keep-going",
               "--path-output", str(out), str(ROOT)]
    env = dict(os.environ, JUPYTER_PLATFORM_DIRS="1")
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    return BookBuild(result, out / "_build" / "html")


# ----------------------------------------------------------------- the browser
# Text laid out without font hinting, as the printer does (book/_ext/print_pdf.py):
# chromium-headless-shell then breaks lines where chromium does.
CHROMIUM_ARGS = ["--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-default-apps", "--disable-extensions", "--font-render-hinting=none"]


def _chromium():
    """The printer's Chromium: ``$CHROMIUM``, else Debian's ``chromium-headless-shell``
    (the same engine without its window: about a sixth less CPU for the survey of
    the book's pages), else ``chromium``; None if there is none."""
    spec = importlib.util.spec_from_file_location(
        "_print_pdf", Path(__file__).resolve().parents[1] / "book" / "_ext" / "print_pdf.py")
    printer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(printer)
    return printer.find_chromium()


@pytest.fixture(scope="session")
def chromium_executable():
    """The system's Chromium; the test is skipped without one (fails under CI=true)."""
    executable = _chromium()
    if executable is None:
        message = ("no Chromium found for the browser and PDF tests of the book: install "
                   "Debian's with `apt-get install chromium-headless-shell` (or chromium; or "
                   "set CHROMIUM=/path/to/it)")
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return executable


@pytest.fixture(scope="session")
def chromium(chromium_executable):
    """The system's Chromium, started once per worker for the browser tests (each
    opens a context of its own, so no cookie, storage or history is shared)."""
    from playwright.sync_api import sync_playwright

    args = list(CHROMIUM_ARGS)
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        args.append("--no-sandbox")  # Chromium refuses to sandbox as root
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_executable, args=args)
        try:
            yield browser
        finally:
            browser.close()

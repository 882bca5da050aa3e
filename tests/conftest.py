"""Shared test configuration: a deterministic Hypothesis profile, a headless backend,
and one strict build of the HTML book per session. (The book's answer key, the
``book_answer_key`` fixture, is in the repository's top-level conftest.py.)"""

import collections
import importlib.util
import json
import os
import shutil
import socket
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

BookBuild = collections.namedtuple("BookBuild", "result html source base student")
#: the repository the suite's build is made for: a lecturer's fork (tests/test_site.py)
FORK = "https://github.com/example/fork"


def _jupyter_book():
    executable = Path(sys.executable).with_name("jupyter-book")
    return str(executable) if executable.exists() else shutil.which("jupyter-book")


def _build_site_module():
    spec = importlib.util.spec_from_file_location("_build_site",
                                                  ROOT / "book" / "_ext" / "build_site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="session")
def free_port():
    """The function that finds a loopback port nothing listens on (a connection to it
    is refused at once)."""
    return _free_port


@pytest.fixture(scope="session")
def book_build(tmp_path_factory, request):
    """The book and its student edition, built once per run as ``make site`` builds them.

    The book is staged for a lecturer's fork (``FORK``) published at
    ``http://127.0.0.1:<port>/fork/`` (``base``; tests/test_site.py serves the site
    there) and built with ``jupyter-book build -W -n --keep-going``, the student edition
    beside it (:func:`build_site.stage_and_build`). Shared by tests/test_book_build.py,
    tests/test_browser.py, tests/test_pdf.py, tests/test_student_html.py,
    tests/test_site.py and tests/test_slides.py, also when pytest-xdist runs them on
    different workers. Returns ``BookBuild(result, html, source, base, student)``: the
    HTML build's finished process (its warnings are judged by tests/test_book_build.py),
    the folder of its pages, the staged source, the site's address and the student
    edition's finished process (its pages in ``source/_build/student-html``).
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
            return BookBuild(subprocess.CompletedProcess(**fields["result"]),
                             shared / "src" / "_build" / "html", shared / "src", fields["base"],
                             subprocess.CompletedProcess(**fields["student"]))
        build = _build_book(shared)
        saved.write_text(json.dumps({
            "base": build.base,
            **{name: {"args": process.args, "returncode": process.returncode,
                      "stdout": process.stdout, "stderr": process.stderr}
               for name, process in (("result", build.result), ("student", build.student))}}))
        return build


def _build_book(out):
    """The book and its student edition, staged for the fork, in the folder ``out/src``."""
    base = f"http://127.0.0.1:{_free_port()}/fork/"
    source = Path(out) / "src"
    source.mkdir(parents=True)
    result, student = _build_site_module().stage_and_build(source, root=ROOT, repo_url=FORK,
                                                           site_url=base, strict=True)
    return BookBuild(result, source / "_build" / "html", source, base, student)


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

"""The suite's order, and the book's answer key taken from the nbval run.

``make test`` runs every notebook of the book once, under nbval. The answer key
(the expected answers of the exercises compared with a key) is what the book's
solutions leave in their answer variables, so it is read from that same run:
after the last cell of a book notebook has passed, the grader's own export code
(:func:`resnet_theory.homework.sandbox.export_source`) runs in nbval's kernel,
and the grader reads the exported answers back with its own limits
(:func:`resnet_theory.homework.answers.read_answers`), exactly as
``make answer-key`` does after running the notebook in its sandbox. The entry is
signed and cached by the notebook's SHA-256 (:mod:`resnet_theory.homework.answer_key`)
in a folder of the system's temporary directory, which the ``book_answer_key``
fixture reads. A notebook whose key is not there yet (a test run without the
notebooks, or a notebook that changed) is run in the grader's sandbox by
:func:`resnet_theory.homework.compute_answer_key`, as ``make grade`` does.

Under pytest-xdist the notebooks go first (``--no-loadscope-reorder`` keeps this
order), so their keys are usually cached before a test asks for the key; a
worker that needs a notebook the other worker is running waits for it.
"""

import json
import secrets
import shutil
import tempfile
from pathlib import Path

import pytest
from filelock import FileLock

ROOT = Path(__file__).resolve().parent
BOOK = ROOT / "book"
KEY_FOLDER = Path(tempfile.gettempdir()) / "resnet_theory-answer-key"
KEY_CACHE = KEY_FOLDER / "answer-key.json"

# Files in the order they are handed to the workers: the longest first, and the
# interrupt tests, which mostly wait, beside them; then the notebooks (whose runs
# give the answer key); then the tests that need the key last, the longest of them
# first, so that the workers finish together.
FIRST = ["tests/test_site.py", "tests/test_browser.py", "tests/test_pdf.py",
         "tests/test_student_html.py",
         "tests/test_grading_interrupt.py"]
LAST = ["tests/test_grading_cgroups.py", "tests/test_homework.py",
        "tests/test_grading_forgery.py", "tests/test_grading_assignment.py",
        "tests/test_checks.py", "tests/test_grading_leaks.py"]


def _rank(item):
    path = item.path.resolve()
    name = path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
    if name in FIRST:
        return (0, FIRST.index(name))
    if path.suffix == ".ipynb":
        return (1, 0)
    if name in LAST:
        return (3, LAST.index(name))
    return (2, 0)


def pytest_collection_modifyitems(items):
    items.sort(key=_rank)  # stable: within a file, and among equals, the order is kept


def _notebook_lock(name):
    KEY_FOLDER.mkdir(exist_ok=True)
    return FileLock(str(KEY_FOLDER / f"{name}.lock"))


def _book_notebook(item):
    """The book notebook of an nbval cell item, or None."""
    if type(item).__name__ != "IPyNbCell":
        return None
    path = item.parent.path.resolve()
    return path if path.is_relative_to(BOOK) else None


class _KeyFromNbval:
    """Export each book notebook's answers from nbval's kernel after its last cell."""

    def __init__(self):
        self.failed = set()
        self.locks = {}
        self.shas = {}

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        path = _book_notebook(item)
        if path is not None and path not in self.locks:
            from resnet_theory.homework.answer_key import notebook_sha256

            self.shas[path] = notebook_sha256(path.read_bytes())  # the file nbval read
            self.locks[path] = _notebook_lock(path.name.lower())
            self.locks[path].acquire()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        path = _book_notebook(item)
        if path is not None and outcome.get_result().failed:
            self.failed.add(path)

    @pytest.hookimpl(tryfirst=True)  # before nbval's kernel is stopped
    def pytest_runtest_teardown(self, item, nextitem):
        path = _book_notebook(item)
        if path is None or (nextitem is not None and nextitem.parent is item.parent):
            return
        lock = self.locks.pop(path, None)
        try:
            if path not in self.failed and item.parent.kernel is not None:
                _export_key(item.parent.kernel, path, self.shas[path])
        finally:
            if lock is not None:
                lock.release()


def _export_key(kernel, path, sha):
    """Export the answers of ``path`` from nbval's ``kernel`` into the cached key."""
    from resnet_theory.homework import answer_key, load_assignment
    from resnet_theory.homework.answers import read_answers
    from resnet_theory.homework.driver import export_source
    from resnet_theory.homework.sandbox import Limits

    title, auto, _, _ = load_assignment(path).notebooks[path.name.lower()]
    labels = answer_key.compared_labels(auto)
    if not labels:
        return
    from resnet_theory.checks import REGISTRY

    variables = sorted({REGISTRY[label].answer_variable for label in labels})
    limits, nonce = Limits(), secrets.token_hex(16)
    scratch = Path(tempfile.mkdtemp(prefix="nbval-key-"))
    try:
        (scratch / "box").mkdir()
        message = kernel.execute_cell_input(
            export_source(variables, nonce, str(scratch / "box"), limits.answer_bytes),
            allow_stdin=False)
        kernel.await_reply(message, timeout=60)
        printed = []
        while True:
            reply = kernel.get_message(stream="iopub", timeout=60)
            if reply["parent_header"].get("msg_id") != message:
                continue
            if reply["msg_type"] == "stream":
                printed.append(reply["content"]["text"])
            if reply["msg_type"] == "status" and reply["content"]["execution_state"] == "idle":
                break
        text = "".join(printed)
        manifest = json.loads(text.split(nonce)[1]) if text.count(nonce) >= 2 else {}
        answers = read_answers(scratch / "box" / f"export-{nonce}", manifest, variables,
                               limits.answer_bytes)
        entry = answer_key.KeyedNotebook(title, sha,
                                         answer_key.expected_answers(title, labels, answers))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    with FileLock(str(KEY_FOLDER / "key.lock")):
        cached = answer_key.load_cached_key(KEY_CACHE)
        old = cached.notebooks.get(path.name.lower()) if cached is not None else None
        if old is None or old.sha256 != sha or sorted(old.answers) != sorted(labels):
            answer_key.save_cached_key(
                answer_key.AnswerKey({path.name.lower(): entry}), KEY_CACHE, cached)


class _KernelsOverUnixSockets:
    """nbval's kernels talk to the test worker over Unix sockets, not TCP ports.

    jupyter_client chooses a kernel's TCP ports by asking the system for free ones
    and closing them again before the kernel binds them; two test workers starting
    kernels at the same moment can be handed the same port, and one kernel dies
    before it answers ("Kernel died before replying to kernel_info": jupyter_client
    issue 487, seen once in a run of the whole suite). A kernel's sockets are files
    in a folder of its own here (the transport the grader's sandbox uses too).
    """

    def __init__(self):
        import nbval.kernel

        self.module = nbval.kernel
        self.manager = nbval.kernel.KernelManager
        self.folder = Path(tempfile.mkdtemp(prefix="nbval-kernels-"))
        self.count = 0
        nbval.kernel.KernelManager = self.kernel_manager

    def kernel_manager(self, **kwargs):
        self.count += 1
        sockets = self.folder / str(self.count)
        sockets.mkdir()
        return self.manager(transport="ipc", ip=str(sockets / "kernel"), **kwargs)

    def pytest_unconfigure(self, config):
        self.module.KernelManager = self.manager
        shutil.rmtree(self.folder, ignore_errors=True)


def pytest_configure(config):
    if config.pluginmanager.hasplugin("nbval"):
        config.pluginmanager.register(_KeyFromNbval(), "resnet_theory-key-from-nbval")
        config.pluginmanager.register(_KernelsOverUnixSockets(),
                                      "resnet_theory-kernels-over-unix-sockets")


@pytest.fixture(scope="session")
def book_answer_key():
    """The answer key of the book: every compared exercise's expected answer.

    Read from the cache the nbval run fills (see the module's docstring); a
    notebook missing from it is first waited for if a worker is running it, then
    run in the grader's sandbox by :func:`resnet_theory.homework.compute_answer_key`,
    which adds it to the cache.
    """
    from resnet_theory import homework

    assignment = homework.load_assignment(BOOK)
    for name in assignment.notebooks:  # wait for the notebooks nbval is running now
        with _notebook_lock(name):
            pass
    with FileLock(str(KEY_FOLDER / "key.lock")):
        return homework.compute_answer_key(assignment, jobs=2, cache=KEY_CACHE)

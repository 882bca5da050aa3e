"""JupyterLab shows the book's MyST markup as the HTML book does (jupyterlab-myst), and
keeps a solution's code and output collapsed until the reader expands them.

A reader who runs the notebooks locally (``make lab``) should see exercises as
boxes, solutions folded and theorem boxes titled, not ``:label:`` lines and raw
``{exercise}`` fences. This test starts the project's JupyterLab on a free port
with a notebook made of cells copied from the book (a theorem box, the first
exercise of a chapter and the start of its solution), opens it in the system's
Chromium with Playwright and reads what a reader sees.

Without Chromium the test is skipped with a message (it fails under ``CI=true``,
as the browser tests of the book do).
"""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "book" / "ch5_shamir" / "example_one.ipynb"


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cells_from_the_book():
    """A theorem-like box, the first exercise and the start of its solution, then the
    first exercise whose solution has code: its statement and its whole solution,
    code cells copied with their metadata and stored outputs."""
    book = nbformat.read(NOTEBOOK, as_version=4)
    markdown = [c for c in book.cells if c.cell_type == "markdown"]
    theorem = next(c for c in markdown if "{prf:" in c.source)
    exercise = next(c for c in markdown if "{exercise}" in c.source)
    after = markdown[markdown.index(exercise) + 1:]
    solution = next(c for c in after if "{solution-start}" in c.source)
    cells = [nbformat.v4.new_markdown_cell(c.source) for c in (theorem, exercise, solution)]
    return cells + _solution_with_code(book)


def _solution_with_code(book):
    """The first exercise whose gated solution holds code cells, solution included."""
    for start, cell in enumerate(book.cells):
        if cell.cell_type != "markdown" or "{solution-start}" not in cell.source:
            continue
        end = next(i for i in range(start + 1, len(book.cells))
                   if book.cells[i].cell_type == "markdown"
                   and "{solution-end}" in book.cells[i].source)
        if any(c.cell_type == "code" for c in book.cells[start:end]):
            statement = max(i for i in range(start) if "{exercise}" in book.cells[i].source
                            and book.cells[i].cell_type == "markdown")
            return [book.cells[statement]] + book.cells[start:end + 1]
    raise AssertionError(f"{NOTEBOOK.name} has no solution with code")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on a folder holding ``myst.ipynb``; yields its URL."""
    folder = tmp_path_factory.mktemp("lab")
    notebook = nbformat.v4.new_notebook(cells=_cells_from_the_book())
    notebook.metadata = nbformat.read(NOTEBOOK, as_version=4).metadata
    nbformat.write(notebook, folder / "myst.ipynb")
    port = _free_port()
    home = tmp_path_factory.mktemp("lab-home")
    env = dict(os.environ, JUPYTER_PLATFORM_DIRS="1", HOME=str(home),
               JUPYTER_CONFIG_DIR=str(home / "config"), JUPYTER_RUNTIME_DIR=str(home / "rt"))
    command = [str(Path(sys.executable).with_name("jupyter")), "lab", "--no-browser",
               f"--port={port}", "--ServerApp.token=", "--ServerApp.password=",
               f"--ServerApp.root_dir={folder}", "--ServerApp.open_browser=False"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")
    log = (folder / "lab.log").open("w")
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("JupyterLab did not start:\n"
                                + (folder / "lab.log").read_text()[-3000:])
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/lab/tree/myst.ipynb"
    finally:
        # JupyterLab stops within a second, but now and then (about one whole-suite run
        # in three) its shutdown stalls after the kernel's: it is killed after 10 s (the
        # kernel, told its parent's pid, then exits by itself).
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=30)
        log.close()


@pytest.fixture(scope="module")
def seen(chromium, lab):  # no Chromium: skipped before the lab starts
    """What the reader sees in the notebook: boxes, dropdowns and the visible text."""
    # The shared Chromium of conftest.py, in a context of its own.
    context = chromium.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = context.new_page()
        page.goto(lab)
        page.wait_for_selector("aside.myst-exercise", timeout=120_000)
        # JupyterLab starts the notebook's kernel as it opens it: let the kernel finish
        # starting, as a reader's would. Stopped while it starts, it held the server's
        # shutdown up for the whole 30 s of the fixture's teardown on a loaded machine.
        page.wait_for_selector('.jp-Notebook-ExecutionIndicator[data-status="idle"]',
                               timeout=120_000)
        return page.evaluate(r"""() => {
          const visible = e => e.checkVisibility() && e.getBoundingClientRect().height > 0;
          const cells = document.querySelector('.jp-Notebook');
          return {
            exercises: Array.from(cells.querySelectorAll('aside.myst-exercise'))
              .filter(visible).map(e => e.textContent.replace(/\s+/g, ' ').trim()),
            dropdowns: Array.from(cells.querySelectorAll('details'))
              .filter(visible).map(e => ({open: e.open,
                summary: (e.querySelector('summary') || e).textContent.trim()})),
            boxes: Array.from(cells.querySelectorAll('aside'))
              .filter(visible).map(e => e.className),
            text: cells.innerText,
            collapsed: cells.querySelectorAll('.jp-InputPlaceholder').length,
          };
        }""")
    finally:
        context.close()


def test_an_exercise_is_a_box_with_its_number_and_title(seen):
    assert any(text.startswith("Exercise 1") for text in seen["exercises"]), seen["exercises"]


def test_a_solution_is_a_closed_dropdown(seen):
    solutions = [d for d in seen["dropdowns"] if "Solution" in d["summary"]]
    assert solutions and not any(d["open"] for d in solutions), seen["dropdowns"]


def test_a_theorem_like_directive_is_a_box(seen):
    assert len(seen["boxes"]) >= 2, seen["boxes"]  # the prf box and the exercise


def test_no_directive_markup_is_shown_raw(seen):
    for raw in (":label:", ":class: dropdown", "{exercise}", "{solution-start}", "{prf:"):
        assert raw not in seen["text"], raw


def test_a_solutions_code_and_its_output_stay_collapsed(seen):
    book = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in _solution_with_code(book) if c.cell_type == "code"]
    assert code and seen["collapsed"] >= len(code)
    for cell in code:
        # A collapsed cell previews its first line, which is a comment (editions.py).
        first, *rest = [line.strip() for line in cell.source.splitlines() if line.strip()]
        assert first.startswith("#"), first
        for line in rest:
            if len(line) > 8:
                assert line not in seen["text"], line
        for output in cell.get("outputs", []):
            text = "".join(output.get("text", "")) or "".join(
                output.get("data", {}).get("text/plain", ""))
            for shown in filter(str.strip, text.splitlines()):
                assert shown.strip() not in seen["text"], shown

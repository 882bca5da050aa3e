"""The stored notebooks are a clean, deterministic top-to-bottom run.

nbval (``make test`` runs it on every notebook under ``book/``) checks that a fresh
kernel reproduces every stored output. These tests check what nbval does not: that
the stored outputs come from one run in order, carry nothing that changes from run
to run (timings, memory addresses), show the reader no warning or error, and fit
the page: no line of code or of printed output is longer than 79 characters.
Re-execute notebooks with ``make notebooks`` (or ``make notebooks NB=<path>``),
which records no timings.
"""

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "book").rglob("*.ipynb"))
IDS = [str(path.relative_to(ROOT / "book")) for path in NOTEBOOKS]

# an object's repr with its address, e.g. "<Figure at 0x7f3a2c1d5e50>"
MEMORY_ADDRESS = re.compile(r"\bat 0x[0-9a-fA-F]{6,}")
# how Python prints a warning: "<file>:<line>: <Category>Warning: <message>"
WARNING_LINE = re.compile(r":\d+: \w*Warning:")
# the code column of the HTML book holds 83 characters at 1280 px (book/_static/book.css)
LINE_LIMIT = 79


def _code_cells(path):
    notebook = nbformat.read(path, as_version=4)
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def _texts(cell):
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            yield output.text
        elif output.output_type in ("execute_result", "display_data"):
            yield output.get("data", {}).get("text/plain", "")


def test_the_book_has_notebooks():
    assert len(NOTEBOOKS) >= 10


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_cells_were_run_once_in_order_from_a_fresh_kernel(path):
    counts = [cell.execution_count for cell in _code_cells(path)]
    assert counts == list(range(1, len(counts) + 1)), (
        f"execution counts {counts}: re-run the notebook top to bottom "
        "(make notebooks NB=...)"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_no_cell_stores_an_error_or_stderr(path):
    for index, cell in enumerate(_code_cells(path)):
        for output in cell.get("outputs", []):
            assert output.output_type != "error", f"code cell {index} stores an error"
            assert output.get("name") != "stderr", (
                f"code cell {index} wrote to stderr: {output.text[:200]!r}"
            )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_no_output_shows_a_warning_or_a_memory_address(path):
    for index, cell in enumerate(_code_cells(path)):
        for text in _texts(cell):
            assert not WARNING_LINE.search(text), f"code cell {index} shows a warning"
            assert not MEMORY_ADDRESS.search(text), (
                f"code cell {index} prints a memory address: "
                f"{MEMORY_ADDRESS.search(text).group()}"
            )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_code_and_printed_lines_fit_the_page(path):
    long_lines = []
    for index, cell in enumerate(_code_cells(path)):
        for where, text in [("source", cell.source)] + [
            ("output", text) for text in _texts(cell)
        ]:
            long_lines += [
                f"code cell {index} {where}: {line}"
                for line in text.splitlines()
                if len(line) > LINE_LIMIT
            ]
    assert not long_lines, (
        f"{len(long_lines)} lines longer than {LINE_LIMIT} characters scroll "
        "sideways in the book:\n" + "\n".join(long_lines[:10])
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_no_cell_records_execution_timings(path):
    timed = [
        index
        for index, cell in enumerate(_code_cells(path))
        if "execution" in cell.get("metadata", {})
    ]
    assert not timed, (
        f"code cells {timed} store execution timestamps; re-run with "
        "make notebooks NB=... (record_timing=False)"
    )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_the_first_code_cell_installs_the_library_where_it_is_missing(path):
    # Colab (and any kernel without this repository) opens a notebook whose
    # imports need resnet_theory: the first code cell installs it, and does
    # nothing where it is installed. The online book does not show the cell.
    first = _code_cells(path)[0]
    assert 'find_spec("resnet_theory") is None' in first.source
    assert "%pip install" in first.source
    assert "remove-cell" in first.metadata.get("tags", [])
    assert not first.get("outputs"), "the install cell printed something: is the library missing?"

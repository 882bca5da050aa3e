"""The assignment: the notebooks whose exercises count, and where a student's answers are.

The exercises that count come from the **assignment** (the book's notebook of
the same file name, or ``--assignment``), never from the submission: an answer
variable the assignment does not ask for is ignored, and an exercise the
submission removed scores 0 with "exercise removed".
"""

from __future__ import annotations

import functools
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import nbformat

from .student import exercise_labels

__all__ = ["Assignment", "load_assignment", "default_assignment", "notebook_key",
           "answer_cells"]


def notebook_key(name):
    """The key of a notebook's file name: NFC, lower-case."""
    return unicodedata.normalize("NFC", name).lower()


def _statements(notebook):
    """``label -> statement text`` of every exercise stated in ``notebook``."""
    found = {}
    for cell in notebook.cells:
        if cell.cell_type != "markdown":
            continue
        for label in exercise_labels(nbformat.v4.new_notebook(cells=[cell])):
            found[label] = cell.source
    return found


@dataclass(frozen=True)
class Assignment:
    """The notebooks of an assignment: ``notebooks`` maps a key (the file name,
    lower-case, NFC) to ``(title, auto-graded labels, all exercise labels,
    path)``; ``statements`` (optional) holds ``label -> (key, statement)`` of
    the exercises marked by hand when there are no files to read them from."""

    notebooks: dict
    statements: dict | None = None

    def labels(self):
        """Every auto-graded label, in notebook order."""
        return [label for key in self.notebooks for label in self.notebooks[key][1]]

    def written(self):
        """``label -> (notebook key, statement)`` of the exercises marked by hand."""
        return dict(self._written)

    @functools.cached_property
    def _written(self):
        if self.statements is not None:
            return dict(self.statements)
        found = {}
        for key, (_, auto, labels, path) in self.notebooks.items():
            if all(label in auto for label in labels):
                continue  # no exercise marked by hand: nothing to read
            notebook = nbformat.read(path, as_version=4)
            for label, statement in _statements(notebook).items():
                if label not in auto:
                    found[label] = (key, statement)
        return found

    def written_labels(self, key):
        """The labels of notebook ``key``'s exercises marked by hand, in order."""
        _, auto, labels, _ = self.notebooks[key]
        return [label for label in labels if label not in auto]

    def snapshot(self):
        """The assignment as JSON data (no paths), for a grading state."""
        written = self.written()
        return {"notebooks": {key: {"title": title, "auto": list(auto), "labels": list(labels)}
                              for key, (title, auto, labels, _) in self.notebooks.items()},
                "written": {label: [key, statement] for label, (key, statement)
                            in written.items()}}

    @classmethod
    def from_snapshot(cls, data):
        """The assignment of :meth:`snapshot`'s data (raises ``ValueError`` if malformed)."""
        try:
            notebooks = {str(key): (str(entry["title"]), [str(x) for x in entry["auto"]],
                                    [str(x) for x in entry["labels"]], None)
                         for key, entry in data["notebooks"].items()}
            statements = {str(label): (str(key), str(text))
                          for label, (key, text) in data["written"].items()}
        except (KeyError, TypeError, ValueError, AttributeError):
            raise ValueError("the assignment recorded in the grading state is malformed") \
                from None
        return cls(notebooks, statements)


def load_assignment(path):
    """The assignment: one notebook, or every notebook in a folder (the book).

    Parameters
    ----------
    path : path-like
        An ``.ipynb`` file or a folder searched recursively (``_build`` and
        checkpoints excluded).

    Returns
    -------
    Assignment

    Raises
    ------
    ValueError
        If ``path`` holds no notebook, or two notebooks share a file name.
    """
    from ..checks import REGISTRY

    path = Path(path)
    if path.is_file():
        paths = [path]
    elif path.is_dir():
        paths = sorted(p for p in path.rglob("*.ipynb")
                       if not {"_build", ".ipynb_checkpoints"} & set(p.parts))
    else:
        raise ValueError(f"assignment: {path} is neither a notebook nor a folder")
    if not paths:
        raise ValueError(f"assignment: {path} holds no notebook")
    notebooks = {}
    for notebook_path in paths:
        key = notebook_key(notebook_path.name)
        if key in notebooks:
            raise ValueError(f"assignment: two notebooks are called {notebook_path.name}")
        notebook = nbformat.read(notebook_path, as_version=4)
        labels = exercise_labels(notebook)
        auto = [label for label in labels if label in REGISTRY]
        notebooks[key] = (notebook_path.name, auto, labels, notebook_path)
    return Assignment(notebooks)


def default_assignment():
    """The book's folder (``book/`` of the repository this package is installed from)."""
    import resnet_theory

    book = Path(resnet_theory.__file__).resolve().parents[2] / "book"
    return book if book.is_dir() else None


def answer_cells(notebook, labels):
    """Where a student answered each exercise marked by hand.

    Returns
    -------
    dict
        ``label -> [(cell index, cell type, source)]``: the text after the
        exercise's statement in its own cell (index ``None``), then every cell up
        to the next exercise or solution. Sources are cut at 20,000 characters.
    """
    found = {}
    current = None
    for index, cell in enumerate(notebook.cells):
        stated = exercise_labels(nbformat.v4.new_notebook(cells=[cell])) \
            if cell.cell_type == "markdown" else []
        if current is not None and (stated or "{solution" in cell.source):
            current = None
        mine = [label for label in stated if label in labels]
        if mine:
            current = mine[-1]
            source = cell.source
            tail = source.split("```", 2)[-1] if source.count("```") >= 2 else ""
            tail = tail.split("\n", 1)[1] if "\n" in tail else ""
            found.setdefault(current, [])
            if tail.strip():
                found[current].append((None, "markdown", tail.strip()[:20000]))
            continue
        if current is not None:
            found[current].append((index, cell.cell_type, cell.source[:20000]))
    return found

r"""Student editions: notebooks without solutions, and the student HTML book.

:func:`split_solutions` removes every solution from a notebook: the gated
blocks from a ``{solution-start}`` markdown cell to the matching
``{solution-end}`` cell (with the code cells in between) and every
``{solution}`` directive inside a markdown cell. Exercise statements stay, and
nothing of a solution stays in the notebook's JSON. :func:`write_student_editions`
does this for every notebook of the book and :func:`build_student_html` builds the
HTML book from the student sources with sphinx-exercise's ``hide_solutions``.

Reference: sphinx-exercise documentation, "Gated directives" and "hide_solutions",
https://ebp-sphinx-exercise.readthedocs.io.
"""

from __future__ import annotations

import ast
import builtins
import copy
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import nbformat

__all__ = [
    "NOTEBOOK_METADATA_KEPT",
    "CELL_METADATA_KEPT",
    "MYSTNB_METADATA_KEPT",
    "Solution",
    "StudentEdition",
    "split_solutions",
    "exercise_labels",
    "auto_graded_labels",
    "solution_only_names",
    "write_student_editions",
    "student_html_config",
    "build_student_html",
]

#: The notebook-level metadata a student edition keeps (everything else is dropped).
NOTEBOOK_METADATA_KEPT = ("kernelspec", "language_info")
#: The cell-level metadata a student edition keeps.
CELL_METADATA_KEPT = ("tags", "jupyter", "editable", "deletable", "slideshow")
#: The parts of myst-nb's cell metadata (``mystnb``) a student edition keeps: a
#: figure's number label and caption, and an image's alt text.
MYSTNB_METADATA_KEPT = ("figure", "image")

# The opening line of a MyST directive: a fence of >= 3 backticks or colons and {name}.
_OPENING = re.compile(r"^ {0,3}(?P<fence>`{3,}|:{3,})\{(?P<name>[a-zA-Z0-9_-]+)\}(?P<arg>.*)$")
_OPTION = re.compile(r"^\s*:(?P<key>[\w-]+):\s*(?P<value>.*?)\s*$")
_ATTACHMENT = re.compile(r"attachment:([^\s)\"'>]+)")


@dataclass(frozen=True)
class Solution:
    """A solution removed from a notebook.

    Attributes
    ----------
    label : str
        The exercise it answers (the directive's argument; empty if none).
    markdown : str
        The removed markdown text, directive lines included.
    code : tuple of str
        The sources of the removed code cells.
    outputs : tuple of str
        The text of the removed code cells' outputs (streams, ``text/plain``,
        errors), for checking that none of it survives.
    """

    label: str
    markdown: str
    code: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()


@dataclass(frozen=True)
class StudentEdition:
    """A notebook without its solutions, and the solutions that were removed.

    Attributes
    ----------
    notebook : nbformat.NotebookNode
        The student notebook.
    solutions : tuple of Solution
        What was removed, in order.
    """

    notebook: nbformat.NotebookNode
    solutions: tuple[Solution, ...]


def _closes(line, fence):
    """Whether ``line`` closes a directive opened with ``fence`` (CommonMark rule)."""
    stripped = line.strip()
    return (len(line) - len(line.lstrip(" ")) <= 3 and len(stripped) >= len(fence)
            and set(stripped) == {fence[0]})


def _directive_end(lines, start, fence):
    """Index of the line closing the directive opened at ``lines[start]``."""
    for index in range(start + 1, len(lines)):
        if _closes(lines[index], fence):
            return index
    return None


def _output_text(output):
    """The human-readable text of one output (for leak checks)."""
    if output.get("output_type") == "stream":
        return str(output.get("text", ""))
    if output.get("output_type") == "error":
        return f"{output.get('ename', '')}: {output.get('evalue', '')}"
    data = output.get("data", {})
    parts = [data.get(kind, "") for kind in ("text/plain", "text/markdown", "text/latex")]
    return "\n".join("".join(p) if isinstance(p, list) else str(p) for p in parts if p)


class _Gate:
    """State of an open gated solution while cells are scanned."""

    def __init__(self, label, where):
        self.label, self.where = label, where
        self.markdown, self.code, self.outputs = [], [], []

    def close(self):
        return Solution(self.label, "\n".join(self.markdown), tuple(self.code),
                        tuple(self.outputs))


def _strip_markdown(source, gate, solutions, where):
    """Remove solution text from one markdown source; return (kept text, open gate)."""
    lines = source.split("\n")
    kept, index = [], 0
    while index < len(lines):
        line = lines[index]
        if gate is not None:
            match = _OPENING.match(line)
            if match and match["name"] == "solution-end":
                end = _directive_end(lines, index, match["fence"])
                stop = len(lines) - 1 if end is None else end
                gate.markdown.extend(lines[index:stop + 1])
                solutions.append(gate.close())
                gate, index = None, stop + 1
                continue
            gate.markdown.append(line)
            index += 1
            continue
        match = _OPENING.match(line)
        if match and match["name"] in ("solution", "solution-start"):
            end = _directive_end(lines, index, match["fence"])
            if end is None:
                raise ValueError(f"{where}: the {{{match['name']}}} directive opened by "
                                 f"{line.strip()!r} is never closed")
            label = match["arg"].strip()
            if match["name"] == "solution":
                solutions.append(Solution(label, "\n".join(lines[index:end + 1])))
            else:
                gate = _Gate(label, where)
                gate.markdown.extend(lines[index:end + 1])
            index = end + 1
            continue
        if match and match["name"] == "solution-end":
            raise ValueError(f"{where}: {{solution-end}} without a {{solution-start}}")
        kept.append(line)
        index += 1
    return "\n".join(kept).strip("\n"), gate


def _student_cell(cell, source, clear_outputs):
    """A copy of ``cell`` with ``source``, allow-listed metadata and used attachments."""
    new = copy.deepcopy(cell)
    new.source = source
    metadata = {k: v for k, v in cell.get("metadata", {}).items() if k in CELL_METADATA_KEPT}
    mystnb = {k: v for k, v in cell.get("metadata", {}).get("mystnb", {}).items()
              if k in MYSTNB_METADATA_KEPT}
    if mystnb:
        metadata["mystnb"] = mystnb
    new.metadata = nbformat.from_dict(metadata)
    if "attachments" in new:
        used = set(_ATTACHMENT.findall(source))
        new.attachments = {k: v for k, v in new.attachments.items() if k in used}
        if not new.attachments:
            del new["attachments"]
    if new.cell_type == "code" and clear_outputs:
        new.outputs = []
        new.execution_count = None
    return new


def split_solutions(notebook, where="notebook"):
    """Split a notebook into its student edition and its solutions.

    Parameters
    ----------
    notebook : nbformat.NotebookNode
        A notebook in the book's exercise format (it is not modified).
    where : str, optional
        How to name the notebook in error messages.

    Returns
    -------
    StudentEdition
        The notebook without solutions, and the removed solutions.

    Raises
    ------
    ValueError
        If a ``{solution-start}`` has no ``{solution-end}`` (or the reverse), or a
        ``{solution}`` directive is never closed.

    Notes
    -----
    Removed: every cell from a markdown cell holding ``{solution-start}`` to the
    markdown cell holding the matching ``{solution-end}`` (text before the start
    and after the end directive stays), and every ``{solution}`` directive block
    inside a markdown cell; a cell left empty is dropped. Directive fences follow
    MyST: three or more backticks or colons, closed by a fence of the same
    character at least as long. In what stays, the notebook metadata is reduced to
    :data:`NOTEBOOK_METADATA_KEPT`, cell metadata to :data:`CELL_METADATA_KEPT`
    (and myst-nb's figure and image settings, :data:`MYSTNB_METADATA_KEPT`),
    attachments to those the kept text references, and code cells after the first
    solution lose their outputs (they were computed with the solutions in the
    kernel).

    Examples
    --------
    >>> from nbformat.v4 import new_notebook, new_markdown_cell, new_code_cell
    >>> nb = new_notebook(cells=[
    ...     new_markdown_cell("```{exercise} Add\\n:label: ex-demo-add\\nCompute 1 + 1.\\n```"),
    ...     new_markdown_cell("```{solution-start} ex-demo-add\\n```\\nIt is two."),
    ...     new_code_cell("answer = 1 + 1"),
    ...     new_markdown_cell("```{solution-end}\\n```")])
    >>> edition = split_solutions(nb)
    >>> [cell.cell_type for cell in edition.notebook.cells]
    ['markdown']
    >>> edition.solutions[0].label, edition.solutions[0].code
    ('ex-demo-add', ('answer = 1 + 1',))
    """
    cells, solutions, gate, seen_solution = [], [], None, False
    for index, cell in enumerate(notebook.cells):
        cell_where = f"{where}, cell {index}"
        if gate is not None and cell.cell_type != "markdown":
            if cell.cell_type == "code":
                gate.code.append(cell.source)
                gate.outputs.extend(_output_text(o) for o in cell.get("outputs", []))
            else:
                gate.markdown.append(cell.source)
            continue
        if cell.cell_type != "markdown":
            cells.append(_student_cell(cell, cell.source, seen_solution))
            continue
        before = len(solutions)
        source, gate = _strip_markdown(cell.source, gate, solutions, cell_where)
        removed = len(solutions) > before or gate is not None
        seen_solution = seen_solution or removed
        if source.strip():
            cells.append(_student_cell(cell, source if removed else cell.source, False))
    if gate is not None:
        raise ValueError(f"{gate.where}: {{solution-start}} {gate.label} has no {{solution-end}}")
    student = nbformat.v4.new_notebook()
    student.nbformat, student.nbformat_minor = notebook.nbformat, notebook.nbformat_minor
    student.metadata = nbformat.from_dict(
        {k: v for k, v in notebook.metadata.items() if k in NOTEBOOK_METADATA_KEPT})
    student.cells = cells
    return StudentEdition(student, tuple(solutions))


def exercise_labels(notebook):
    """The labels of the exercises stated in a notebook, in order.

    Parameters
    ----------
    notebook : nbformat.NotebookNode
        Any notebook.

    Returns
    -------
    list of str
        The ``:label:`` of every ``{exercise}`` and ``{exercise-start}`` directive
        in its markdown cells.

    Examples
    --------
    >>> from nbformat.v4 import new_notebook, new_markdown_cell
    >>> nb = new_notebook(cells=[new_markdown_cell(
    ...     "```{exercise} Title\\n:label: ex-demo-one\\nText.\\n```")])
    >>> exercise_labels(nb)
    ['ex-demo-one']
    """
    labels = []
    for cell in notebook.cells:
        if cell.cell_type != "markdown":
            continue
        lines = cell.source.split("\n")
        for index, line in enumerate(lines):
            match = _OPENING.match(line)
            if not match or match["name"] not in ("exercise", "exercise-start"):
                continue
            for option in lines[index + 1:]:
                found = _OPTION.match(option)
                if not found:
                    break
                if found["key"] == "label":
                    labels.append(found["value"])
    return labels


def auto_graded_labels(notebook, registry=None):
    """The auto-graded exercises of a notebook.

    Parameters
    ----------
    notebook : nbformat.NotebookNode
        Any notebook.
    registry : mapping, optional
        Exercise label to ``ExerciseCheck`` (default:
        :data:`resnet_theory.checks.REGISTRY`).

    Returns
    -------
    list of str
        Sorted labels that have a registered check and either are stated as an
        exercise in the notebook or have their answer variable named in a code
        cell (so deleting the statement does not hide an exercise from grading).

    Examples
    --------
    >>> from nbformat.v4 import new_notebook, new_code_cell
    >>> auto_graded_labels(new_notebook(cells=[new_code_cell("x = 1")]))
    []
    """
    if registry is None:
        from ..checks import REGISTRY as registry
    stated = set(exercise_labels(notebook))
    code = "\n".join(c.source for c in notebook.cells if c.cell_type == "code")
    found = set()
    for label, entry in registry.items():
        if label in stated or re.search(rf"\b{re.escape(entry.answer_variable)}\b", code):
            found.add(label)
    return sorted(found)


def _python_source(source):
    """A code cell's source with IPython syntax (magics, ``!``) turned into Python."""
    from IPython.core.inputtransformer2 import TransformerManager

    return TransformerManager().transform_cell(source)


def _names(sources, ctx):
    names = set()
    for source in sources:
        try:
            tree = ast.parse(_python_source(source))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ctx):
                names.add(node.id)
            elif ctx is ast.Store and isinstance(
                    node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif ctx is ast.Store and isinstance(node, ast.alias):
                names.add((node.asname or node.name).split(".")[0])
            elif ctx is ast.Store and isinstance(node, ast.arg):
                names.add(node.arg)
    return names


def solution_only_names(edition):
    """Names that the student edition uses but only a removed solution defines.

    A non-empty result means the student notebook cannot run top to bottom.

    Parameters
    ----------
    edition : StudentEdition
        The result of :func:`split_solutions`.

    Returns
    -------
    set of str
        Names loaded in a kept code cell, bound in a removed code cell and bound
        nowhere in the kept code cells (nor builtins).

    Examples
    --------
    >>> from nbformat.v4 import new_notebook, new_markdown_cell, new_code_cell
    >>> nb = new_notebook(cells=[
    ...     new_markdown_cell("```{solution-start} ex-demo-a\\n```"),
    ...     new_code_cell("helper = 3"),
    ...     new_markdown_cell("```{solution-end}\\n```"),
    ...     new_code_cell("print(helper)")])
    >>> solution_only_names(split_solutions(nb))
    {'helper'}
    """
    kept = [c.source for c in edition.notebook.cells if c.cell_type == "code"]
    removed = [code for solution in edition.solutions for code in solution.code]
    defined_in_solutions = _names(removed, ast.Store)
    defined_in_kept = _names(kept, ast.Store) | set(dir(builtins))
    return (_names(kept, ast.Load) & defined_in_solutions) - defined_in_kept


_MARKER = ".student-edition"


def _prepare_output(out_dir, protected):
    out_dir = Path(out_dir).resolve()
    for path in protected:
        path = Path(path).resolve()
        if out_dir == path or out_dir in path.parents:
            raise ValueError(f"out_dir: {out_dir} would contain {path}; choose a folder "
                             "of its own, for instance _build/student")
    if out_dir.exists():
        if not (out_dir / _MARKER).exists():
            raise ValueError(f"out_dir: {out_dir} exists and was not written by this tool; "
                             "remove it or choose another folder")
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    (out_dir / _MARKER).write_text("written by python -m resnet_theory.homework\n")
    return out_dir


def write_student_editions(book_dir, out_dir):
    """Write the student edition of every notebook under ``book_dir``.

    Parameters
    ----------
    book_dir : path-like
        The book's source folder (``book/``); notebooks in ``.ipynb_checkpoints``
        and ``_build`` folders are skipped.
    out_dir : path-like
        Where to write them, with the same relative paths. It is emptied first,
        which is only allowed for a folder this function created (it leaves a
        ``.student-edition`` marker) and never for one containing ``book_dir``.

    Returns
    -------
    dict
        Relative path of each notebook to its :class:`StudentEdition`.

    Raises
    ------
    ValueError
        If ``out_dir`` is not a folder of its own, or a notebook's solution
        directives are unbalanced (see :func:`split_solutions`).

    Notes
    -----
    Other files (figures, data) are copied along so that the notebooks find
    them, except markdown and reStructuredText pages, which may hold solutions.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from nbformat.v4 import new_notebook, new_code_cell
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> (root / "book" / "ch").mkdir(parents=True)
    >>> nbformat.write(new_notebook(cells=[new_code_cell("1")]), root / "book/ch/a.ipynb")
    >>> sorted(map(str, write_student_editions(root / "book", root / "student")))
    ['ch/a.ipynb']
    """
    book_dir = Path(book_dir)
    out_dir = _prepare_output(out_dir, [book_dir])
    editions = {}
    for path in sorted(p for p in book_dir.rglob("*") if p.is_file()):
        relative = path.relative_to(book_dir)
        if {".ipynb_checkpoints", "_build", "__pycache__"} & set(relative.parts):
            continue
        target = out_dir / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if path.suffix == ".ipynb":
            edition = split_solutions(nbformat.read(path, as_version=4), where=str(path))
            nbformat.write(edition.notebook, target)
            editions[relative] = edition
        elif path.suffix not in (".md", ".rst"):
            shutil.copy2(path, target)
    return editions


def student_html_config(config_path):
    """The book's Jupyter Book configuration with solutions hidden.

    Parameters
    ----------
    config_path : path-like
        The book's ``_config.yml``.

    Returns
    -------
    dict
        The same configuration with ``sphinx.config.hide_solutions`` set to true
        (sphinx-exercise then drops every ``{solution}`` directive), no launch
        buttons (Binder and Colab would open the repository's notebooks, which
        hold the solutions), a ".pdf" button that serves each chapter's exercise
        sheet (``_build/pdf/exercises-ch<N>.pdf`` next to the configuration, from
        ``make pdf``) instead of the book, and the title marked as the student
        edition.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "_config.yml"
    >>> _ = path.write_text("title: Book\\nsphinx:\\n  config:\\n    numfig: true\\n")
    >>> config = student_html_config(path)
    >>> config["sphinx"]["config"]["hide_solutions"], config["sphinx"]["config"]["numfig"]
    (True, True)
    >>> config["launch_buttons"]["colab_url"], config["launch_buttons"]["binderhub_url"]
    ('', '')
    >>> config["sphinx"]["config"]["book_pdf_sheets"].endswith("exercises-ch{chapter}.pdf")
    True
    """
    import yaml

    config = yaml.safe_load(Path(config_path).read_text(encoding="utf-8")) or {}
    sphinx = config.setdefault("sphinx", {}) or {}
    config["sphinx"] = sphinx
    sphinx.setdefault("config", {})
    sphinx["config"]["hide_solutions"] = True
    # The launch buttons open the repository's notebooks, solutions included: the
    # student edition has none (its .ipynb download serves the student notebook).
    config["launch_buttons"] = {"binderhub_url": "", "colab_url": "", "jupyterhub_url": ""}
    # The book's PDF holds the solutions (in an appendix); the exercise sheets do not.
    sheets = Path(config_path).resolve().parent / "_build" / "pdf" / "exercises-ch{chapter}.pdf"
    sphinx["config"]["book_pdf"] = ""
    sphinx["config"]["book_pdf_sheets"] = str(sheets)
    config["title"] = f"{config.get('title', 'Book')} (student edition)"
    return config


def build_student_html(root, output, *, strict=False, jupyter_book=None):
    """Build the HTML book without solutions into ``output``.

    The book's sources are copied to a staging folder with every solution removed
    (notebooks by :func:`split_solutions`, markdown pages by the same rules), the
    configuration is replaced by :func:`student_html_config`, and
    ``jupyter-book build`` runs on the copy. The pages end up directly in
    ``output`` (``output/index.html``).

    Parameters
    ----------
    root : path-like
        The repository root, holding ``_config.yml``, ``_toc.yml`` and ``book/``.
    output : path-like
        The HTML folder to (re)create; it must not contain ``root``.
    strict : bool, optional
        Pass ``-W`` (warnings are errors) to the build.
    jupyter_book : path-like, optional
        The ``jupyter-book`` executable (default: next to the running Python).

    Returns
    -------
    pathlib.Path
        The ``index.html`` of the student book.

    Raises
    ------
    RuntimeError
        If the build fails; the message ends with the build's output.

    Examples
    --------
    ``make student`` calls ``build_student_html(".", "_build/student-html")``.
    The output folder is replaced, so it may not be the book itself:

    >>> build_student_html(".", ".")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: output: ... must not contain the book at ...
    """
    import yaml

    root, output = Path(root).resolve(), Path(output).resolve()
    if output == root or output in root.parents:
        raise ValueError(f"output: {output} must not contain the book at {root}")
    (root / "_build").mkdir(exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix="student-src-", dir=root / "_build"))
    try:
        source = staging / "src"
        shutil.copytree(root / "book", source / "book",
                        ignore=shutil.ignore_patterns(".ipynb_checkpoints", "_build"))
        shutil.copy2(root / "_toc.yml", source / "_toc.yml")
        for page in list((source / "book").rglob("*.ipynb")) + list(
                (source / "book").rglob("*.md")):
            if page.suffix == ".ipynb":
                edition = split_solutions(nbformat.read(page, as_version=4), where=str(page))
                nbformat.write(edition.notebook, page)
            else:
                text, gate = _strip_markdown(page.read_text(encoding="utf-8"), None, [],
                                             str(page))
                if gate is not None:
                    raise ValueError(f"{page}: {{solution-start}} has no {{solution-end}}")
                page.write_text(text + "\n", encoding="utf-8")
        config = source / "_config.yml"
        config.write_text(yaml.safe_dump(student_html_config(root / "_config.yml"),
                                         sort_keys=False), encoding="utf-8")
        executable = jupyter_book or Path(sys.executable).with_name("jupyter-book")
        if not Path(executable).exists():
            executable = shutil.which("jupyter-book") or "jupyter-book"
        command = [str(executable), "build", "-n", "--keep-going", *(["-W"] if strict else []),
                   "--config", str(config), "--path-output", str(staging), str(source)]
        result = subprocess.run(command, capture_output=True, text=True,
                                env=dict(os.environ, JUPYTER_PLATFORM_DIRS="1"))
        built = staging / "_build" / "html"
        if result.returncode != 0 or not (built / "index.html").exists():
            raise RuntimeError("the student book did not build:\n"
                               + (result.stdout + result.stderr)[-4000:])
        if output.exists():
            shutil.rmtree(output)
        output.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(built), str(output))
        warnings = [line for line in (result.stdout + result.stderr).splitlines()
                    if "WARNING" in line]
        for line in warnings:
            print(line, file=sys.stderr)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return output / "index.html"


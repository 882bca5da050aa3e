r"""The homework kit: student editions without solutions, and grading of submissions.

Two jobs for lecturers who assign the book's exercises.

*Student editions.* :func:`split_solutions` removes every solution from a notebook:
the gated blocks from a ``{solution-start}`` markdown cell to the matching
``{solution-end}`` cell (with the code cells in between) and every
``{solution}`` directive inside a markdown cell. Exercise statements stay, and
nothing of a solution stays in the notebook's JSON. :func:`write_student_editions`
does this for every notebook of the book and :func:`build_student_html` builds the
HTML book from the student sources with sphinx-exercise's ``hide_solutions``.

*Grading.* :func:`grade_folder` executes every submitted notebook in its own fresh
kernel, in a scratch directory and in a separate process with a time limit, so a
notebook that raises, loops, prints megabytes, deletes files or kills its kernel
costs only its own row. Afterwards, in the same kernel, it calls
:func:`resnet_theory.checks.check_namespace` on the answers of the auto-graded
exercises found in the notebook, and writes ``grades.csv`` and one feedback file
per notebook.

From the command line (the Makefile's ``make student`` and ``make grade``)::

    python -m resnet_theory.homework student --root . --html _build/student-html
    python -m resnet_theory.homework grade submissions/ --timeout 180

Reference: sphinx-exercise documentation, "Gated directives" and "hide_solutions",
https://ebp-sphinx-exercise.readthedocs.io.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import builtins
import copy
import csv
import json
import math
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from time import monotonic

import nbformat

__all__ = [
    "NOTEBOOK_METADATA_KEPT",
    "CELL_METADATA_KEPT",
    "Solution",
    "StudentEdition",
    "split_solutions",
    "exercise_labels",
    "auto_graded_labels",
    "solution_only_names",
    "write_student_editions",
    "student_html_config",
    "build_student_html",
    "NotebookGrade",
    "grade_notebook",
    "grade_folder",
    "write_grades",
    "main",
]

#: The notebook-level metadata a student edition keeps (everything else is dropped).
NOTEBOOK_METADATA_KEPT = ("kernelspec", "language_info")
#: The cell-level metadata a student edition keeps.
CELL_METADATA_KEPT = ("tags", "jupyter", "editable", "deletable", "slideshow")

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
    new.metadata = nbformat.from_dict(
        {k: v for k, v in cell.get("metadata", {}).items() if k in CELL_METADATA_KEPT})
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
    :data:`NOTEBOOK_METADATA_KEPT`, cell metadata to :data:`CELL_METADATA_KEPT`,
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
        from .checks import REGISTRY as registry
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
        (sphinx-exercise then drops every ``{solution}`` directive) and the title
        marked as the student edition.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "_config.yml"
    >>> _ = path.write_text("title: Book\\nsphinx:\\n  config:\\n    numfig: true\\n")
    >>> config = student_html_config(path)
    >>> config["sphinx"]["config"]["hide_solutions"], config["sphinx"]["config"]["numfig"]
    (True, True)
    """
    import yaml

    config = yaml.safe_load(Path(config_path).read_text(encoding="utf-8")) or {}
    sphinx = config.setdefault("sphinx", {}) or {}
    config["sphinx"] = sphinx
    sphinx.setdefault("config", {})
    sphinx["config"]["hide_solutions"] = True
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


# --------------------------------------------------------------------------- grading

_STATUS_ORDER = ("ok", "error", "output-limit", "timeout", "kernel-died", "invalid",
                 "grader-error")


@dataclass(frozen=True)
class NotebookGrade:
    """The grade of one submitted notebook.

    Attributes
    ----------
    notebook : str
        Its file name.
    status : str
        ``"ok"`` (ran without errors), ``"error"`` (a cell raised, including
        ``sys.exit``), ``"output-limit"`` (printed more than allowed),
        ``"timeout"`` (exceeded the time limit), ``"kernel-died"`` (the kernel
        exited, e.g. ``os._exit``), ``"invalid"`` (not a readable notebook) or
        ``"grader-error"`` (no result came back).
    reason : str
        What happened, in one line (empty when the status is ``"ok"``).
    results : dict
        Label of each auto-graded exercise of the notebook to ``(passed, reason)``.
    """

    notebook: str
    status: str
    reason: str
    results: dict = field(default_factory=dict)

    @property
    def score(self):
        """The number of auto-graded exercises passed."""
        return sum(1 for passed, _ in self.results.values() if passed)


class _CurrentEnvironmentKernels:
    """Kernel specs that always start ``python3`` from the running interpreter."""

    @staticmethod
    def manager():
        import ipykernel.kernelspec
        from jupyter_client.kernelspec import KernelSpecManager

        class Specs(KernelSpecManager):
            def get_kernel_spec(self, kernel_name):
                return self.kernel_spec_class(resource_dir=ipykernel.kernelspec.RESOURCES,
                                              **ipykernel.kernelspec.get_kernel_dict())

        return Specs()


def _make_client(notebook, workdir, max_output_bytes):
    from jupyter_client.manager import AsyncKernelManager
    from nbclient import NotebookClient

    class LimitedClient(NotebookClient):
        """nbclient with an output budget and a kernel from this environment."""

        def create_kernel_manager(self):
            self.km = AsyncKernelManager(kernel_name="python3", config=self.config,
                                         kernel_spec_manager=_CurrentEnvironmentKernels.manager())
            return self.km

        def output(self, outs, msg, display_id, cell_index):
            self.output_bytes += len(json.dumps(msg.get("content", {})))
            if self.output_bytes > self.output_budget:
                if not self.output_exceeded:
                    self.output_exceeded = True
                    asyncio.ensure_future(self._interrupt())
                return None
            return super().output(outs, msg, display_id, cell_index)

        async def _interrupt(self):
            try:
                await self.km.interrupt_kernel()
            except Exception:  # the kernel may be gone already
                pass

    client = LimitedClient(
        notebook, kernel_name="python3", allow_errors=True, record_timing=False,
        interrupt_on_timeout=True, startup_timeout=120,
        error_on_timeout={"ename": "GraderTimeout", "evalue": "time limit", "traceback": []},
        resources={"metadata": {"path": str(workdir)}})
    client.output_bytes, client.output_budget, client.output_exceeded = 0, max_output_bytes, False
    return client


def _grading_source(labels, nonce):
    return f"""
def _grade_{nonce}():
    import json, sys
    try:
        from resnet_theory import checks
        found = checks.check_namespace(globals(), {labels!r})
        payload = {{"results": {{label: [bool(r.passed), str(r.reason)[:500]]
                                 for label, r in found.items()}}}}
    except BaseException as error:
        payload = {{"error": (type(error).__name__ + ": " + str(error))[:500]}}
    sys.stdout.write("{nonce}" + json.dumps(payload) + "{nonce}\\n")
    sys.stdout.flush()
_grade_{nonce}()
del _grade_{nonce}
"""


def _one_line(text, limit=300):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _execute(notebook_path, labels, nonce, timeout, max_output_bytes, pid_file=None):
    """Run one notebook and its checks (inside the grading subprocess)."""
    from nbclient.exceptions import DeadKernelError

    notebook = nbformat.read(notebook_path, as_version=4)
    client = _make_client(notebook, Path(notebook_path).parent, max_output_bytes)
    events = []

    def on_error(cell, cell_index, execute_reply):
        content = execute_reply.get("content", {})
        events.append((cell_index, content.get("ename", "Error"), content.get("evalue", "")))

    client.on_cell_error = on_error
    status, reasons, results = "ok", [], {}
    try:
        with client.setup_kernel(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
            if pid_file is not None:
                Path(pid_file).write_text(str(client.km.provisioner.pid))
            deadline = monotonic() + timeout  # kernel start-up is not the notebook's time
            for index, cell in enumerate(notebook.cells):
                if cell.cell_type != "code":
                    continue
                remaining = deadline - monotonic()
                if remaining <= 0:
                    status = "timeout"
                    reasons.append(f"the time limit of {timeout:g} s ran out before cell {index}")
                    break
                client.timeout = max(1, math.ceil(remaining))
                before = len(events)
                client.execute_cell(cell, index)
                new = events[before:]
                if any(ename == "GraderTimeout" for _, ename, _ in new):
                    status = "timeout"
                    reasons.append(f"cell {index} was stopped at the time limit of "
                                   f"{timeout:g} s; later cells did not run")
                    break
                if client.output_exceeded:
                    status = "output-limit"
                    reasons.append(f"cell {index} printed more than {max_output_bytes} bytes "
                                   "of output; it was interrupted and later cells did not run")
                    break
                if new and status == "ok":
                    status = "error"
                    _, ename, evalue = new[0]
                    reasons.append(f"cell {index} raised {ename}: {evalue}")
            if labels:
                client.output_bytes, client.output_budget = 0, 1_000_000
                client.output_exceeded = False
                client.timeout = 60
                grading = nbformat.v4.new_code_cell(_grading_source(labels, nonce))
                notebook.cells.append(grading)
                client.execute_cell(grading, len(notebook.cells) - 1)
                text = "".join(o.get("text", "") for o in grading.outputs
                               if o.get("output_type") == "stream")
                found = re.search(rf"{nonce}(.*?){nonce}", text, re.DOTALL)
                payload = json.loads(found.group(1)) if found else {
                    "error": "the checks printed no result"}
                if "error" in payload:
                    reasons.append("the checks could not run: " + payload["error"])
                results = payload.get("results", {})
    except DeadKernelError:
        status = "kernel-died"
        reasons.append("the kernel died (the notebook exited or killed its own process); "
                       "no checks could run")
        results = {}
    return {"status": status, "reason": _one_line("; ".join(reasons)), "results": results}


def _kill_group(pid_file):
    try:
        pid = int(Path(pid_file).read_text())
        os.killpg(pid, signal.SIGKILL)
    except (OSError, ValueError):
        pass


def grade_notebook(path, labels=None, *, timeout=180.0, max_output_bytes=5_000_000):
    """Execute one submitted notebook in isolation and check its answers.

    Parameters
    ----------
    path : path-like
        The submitted ``.ipynb`` file; it is copied, never modified.
    labels : list of str, optional
        The auto-graded exercises to check (default: :func:`auto_graded_labels`).
    timeout : float, optional
        Seconds for the notebook's own cells; the checks get 60 s more, and the
        whole subprocess is killed 120 s after that.
    max_output_bytes : int, optional
        Output budget of the notebook; a cell that exceeds it is interrupted.

    Returns
    -------
    NotebookGrade
        Status, reason and check results; an exercise whose checks could not run
        counts as failed.

    Raises
    ------
    ValueError
        If ``timeout`` or ``max_output_bytes`` is not positive.

    Notes
    -----
    The notebook runs in a fresh kernel whose working directory is a scratch
    copy, driven by ``python -m resnet_theory.homework _execute`` in its own
    session, so that nothing it does (``os._exit``, deleting files, an endless
    loop, a flood of output) reaches the grader. After the notebook, the same
    kernel runs :func:`resnet_theory.checks.check_namespace` and prints the result
    between two copies of a random nonce, which a student cannot forge. The
    kernel's process group is killed at the end.

    Examples
    --------
    A file that is not a notebook is marked without starting a kernel:

    >>> import pathlib, tempfile
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "broken.ipynb"
    >>> _ = path.write_text("{ not json")
    >>> grade = grade_notebook(path)
    >>> grade.status, grade.score
    ('invalid', 0)
    """
    path = Path(path)
    if not timeout > 0:
        raise ValueError(f"timeout must be positive, got {timeout}")
    if not max_output_bytes > 0:
        raise ValueError(f"max_output_bytes must be positive, got {max_output_bytes}")
    try:
        notebook = nbformat.read(path, as_version=4)
        if labels is None:
            labels = auto_graded_labels(notebook)
    except Exception as error:
        return NotebookGrade(path.name, "invalid",
                             _one_line(f"not a readable notebook ({type(error).__name__}: "
                                       f"{error})"), {label: (False, "not graded")
                                                      for label in labels or []})
    labels = list(labels)
    scratch = Path(tempfile.mkdtemp(prefix="grade-"))
    work, control = scratch / "work", scratch / "control"
    work.mkdir()
    control.mkdir()
    copy_path = work / path.name
    shutil.copyfile(path, copy_path)
    nonce = secrets.token_hex(16)
    pid_file = control / "kernel.pid"
    command = [sys.executable, "-m", "resnet_theory.homework", "_execute", str(copy_path),
               "--timeout", str(timeout), "--max-output-bytes", str(int(max_output_bytes)),
               "--pid-file", str(pid_file), "--labels", *labels]
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MKL_NUM_THREADS="1", MPLBACKEND="Agg", JUPYTER_PLATFORM_DIRS="1",
               PYDEVD_DISABLE_FILE_VALIDATION="1", PYTHONWARNINGS="ignore")
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, cwd=control, env=env, text=True,
                               start_new_session=True)
    payload = None
    try:
        out, err = process.communicate(nonce, timeout=timeout + 180)
        found = re.search(rf"{nonce}(.*?){nonce}", out, re.DOTALL)
        payload = json.loads(found.group(1)) if found else None
        if payload is None:
            last = (err.strip().splitlines() or [""])[-1]
            status, reason = "grader-error", _one_line(
                f"the grading process returned no result ({last})")
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        status, reason = "timeout", f"the notebook did not finish within {timeout:g} s"
    finally:
        _kill_group(pid_file)
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        shutil.rmtree(scratch, ignore_errors=True)
    if payload is not None:
        status, reason = payload["status"], payload["reason"]
        checked = payload.get("results", {})
    else:
        checked = {}
    results = {}
    for label in labels:
        passed, why = checked.get(label, (False, "not checked: " + (reason or status)))
        results[label] = (bool(passed), _one_line(why))
    return NotebookGrade(path.name, status, reason, results)


def write_grades(grades, folder):
    """Write ``grades.csv`` and ``feedback/<notebook>.txt`` into ``folder``.

    Parameters
    ----------
    grades : list of NotebookGrade
        One per notebook.
    folder : path-like
        The submissions folder.

    Returns
    -------
    pathlib.Path
        The path of ``grades.csv``.

    Notes
    -----
    ``grades.csv`` has the columns ``notebook, status, reason, score`` and then one
    column per auto-graded exercise found in any notebook (sorted labels): ``1``
    passed, ``0`` failed or not checked, empty if the notebook does not contain
    the exercise. ``score`` is ``passed/total`` over the notebook's exercises.

    Examples
    --------
    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> grade = NotebookGrade("a.ipynb", "ok", "", {"ex-demo-one": (True, "right")})
    >>> print(write_grades([grade], folder).read_text().strip())
    notebook,status,reason,score,ex-demo-one
    a.ipynb,ok,,1/1,1
    """
    folder = Path(folder)
    labels = sorted({label for grade in grades for label in grade.results})
    csv_path = folder / "grades.csv"
    with csv_path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(["notebook", "status", "reason", "score", *labels])
        for grade in grades:
            cells = ["" if label not in grade.results else str(int(grade.results[label][0]))
                     for label in labels]
            writer.writerow([grade.notebook, grade.status, grade.reason,
                             f"{grade.score}/{len(grade.results)}", *cells])
    feedback = folder / "feedback"
    feedback.mkdir(exist_ok=True)
    for grade in grades:
        lines = [f"Feedback on {grade.notebook}", "",
                 f"Run: {grade.status}" + (f" ({grade.reason})" if grade.reason else ""),
                 f"Auto-graded exercises: {grade.score} of {len(grade.results)} correct", ""]
        for label, (passed, why) in sorted(grade.results.items()):
            lines.append(f"- {label}: {'correct' if passed else 'not yet'}: {why}")
        if not grade.results:
            lines.append("(this notebook contains no auto-graded exercise)")
        (feedback / f"{Path(grade.notebook).stem}.txt").write_text("\n".join(lines) + "\n",
                                                                   encoding="utf-8")
    return csv_path


def grade_folder(folder, *, timeout=180.0, max_output_bytes=5_000_000, echo=False):
    """Grade every ``.ipynb`` in ``folder`` and write the results next to them.

    Parameters
    ----------
    folder : path-like
        The submissions (top level only; ``grades.csv`` and ``feedback/`` are
        written there).
    timeout, max_output_bytes
        Limits per notebook, see :func:`grade_notebook`.
    echo : bool, optional
        Print one line per notebook as it is graded.

    Returns
    -------
    list of NotebookGrade
        One per notebook, sorted by file name.

    Raises
    ------
    ValueError
        If ``folder`` is not a directory.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "broken.ipynb").write_text("{ not json")
    >>> [(grade.notebook, grade.status) for grade in grade_folder(folder)]
    [('broken.ipynb', 'invalid')]
    >>> sorted(path.name for path in folder.iterdir())
    ['broken.ipynb', 'feedback', 'grades.csv']
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise ValueError(f"folder: {folder} is not a directory of submitted notebooks")
    grades = []
    for path in sorted(folder.glob("*.ipynb")):
        try:
            grade = grade_notebook(path, timeout=timeout, max_output_bytes=max_output_bytes)
        except Exception as error:  # the grader itself must go on with the next row
            grade = NotebookGrade(path.name, "grader-error",
                                  _one_line(f"{type(error).__name__}: {error}"))
        grades.append(grade)
        if echo:
            print(f"{grade.notebook}: {grade.status}, {grade.score}/{len(grade.results)}"
                  + (f" ({grade.reason})" if grade.reason else ""))
    write_grades(grades, folder)
    return grades


def main(argv: Iterable[str] | None = None):
    """Command line: ``student`` and ``grade`` (see the module docstring).

    Parameters
    ----------
    argv : list of str, optional
        Arguments (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The exit status.

    Examples
    --------
    >>> main(["grade", "/nonexistent/folder"])  # the message goes to stderr
    2
    """
    parser = argparse.ArgumentParser(prog="python -m resnet_theory.homework",
                                     description="Student editions and grading.")
    commands = parser.add_subparsers(dest="command", required=True)
    student = commands.add_parser("student", help="write the student notebooks (and HTML)")
    student.add_argument("--root", default=".", help="repository root (default: .)")
    student.add_argument("--out", default=None, help="default: <root>/_build/student")
    student.add_argument("--html", default=None,
                         help="also build the student HTML book into this folder")
    student.add_argument("--strict", action="store_true", help="HTML build with -W")
    grade = commands.add_parser("grade", help="grade a folder of submitted notebooks")
    grade.add_argument("folder")
    grade.add_argument("--timeout", type=float, default=180.0,
                       help="seconds per notebook (default: 180)")
    grade.add_argument("--max-output-mb", type=float, default=5.0,
                       help="output budget per notebook in MB (default: 5)")
    execute = commands.add_parser("_execute", help=argparse.SUPPRESS)
    execute.add_argument("notebook")
    execute.add_argument("--timeout", type=float, required=True)
    execute.add_argument("--max-output-bytes", type=int, required=True)
    execute.add_argument("--pid-file", default=None)
    execute.add_argument("--labels", nargs="*", default=[])
    args = parser.parse_args(None if argv is None else list(argv))

    if args.command == "_execute":
        nonce = sys.stdin.readline().strip()
        result = _execute(args.notebook, args.labels, nonce, args.timeout,
                          args.max_output_bytes, args.pid_file)
        sys.stdout.write(nonce + json.dumps(result) + nonce + "\n")
        return 0
    if args.command == "grade":
        try:
            grades = grade_folder(args.folder, timeout=args.timeout,
                                  max_output_bytes=int(args.max_output_mb * 1e6), echo=True)
        except ValueError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        print(f"wrote {Path(args.folder) / 'grades.csv'} and {len(grades)} feedback files "
              f"in {Path(args.folder) / 'feedback'}")
        return 0
    root = Path(args.root)
    out = Path(args.out) if args.out else root / "_build" / "student"
    editions = write_student_editions(root / "book", out)
    for relative, edition in editions.items():
        missing = solution_only_names(edition)
        if missing:
            print(f"warning: {relative} uses names only its solutions define: "
                  f"{', '.join(sorted(missing))}", file=sys.stderr)
    print(f"wrote {len(editions)} student notebooks to {out}")
    if args.html:
        index = build_student_html(root, args.html, strict=args.strict)
        print(f"The student book is built: open file://{index.resolve()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

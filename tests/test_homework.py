"""The homework kit: student editions hold no solution, grading is isolated and correct.

Specification of :mod:`resnet_theory.homework` and of the Chapter 5 check. The
book's notebooks are examined statically (every notebook under ``book/``, so new
chapters are covered automatically); real kernels run only in one kernel that
runs every student edition's answer plumbing, and in two shared grading
fixtures: the Chapter 5 notebook with its auto-graded exercise (and its student
edition), and a folder of small misbehaving notebooks (graded in the sandbox
where ``bwrap`` works), both judged with the book's answer key.
Forged verdicts are specified in ``test_grading_forgery.py``, the sandbox in
``test_grading_sandbox.py``, the answer key in ``test_answer_key.py`` and the
checks of every chapter in ``test_checks.py``.
"""

import ast
import csv
import json
import re
import shutil
import subprocess
from pathlib import Path

import nbformat
import numpy as np
import pytest
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output
from resnet_theory import checks, homework

ROOT = Path(__file__).resolve().parents[1]
BOOK_NOTEBOOKS = sorted(p for p in (ROOT / "book").rglob("*.ipynb")
                        if ".ipynb_checkpoints" not in p.parts)
GRADED_NOTEBOOK = ROOT / "book" / "ch5_shamir" / "example_one.ipynb"
KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}


def _ids(paths):
    return [str(p.relative_to(ROOT / "book")) for p in paths]


def _strings(value):
    """Every string in a JSON-like value (keys included), except random cell ids.

    nbformat gives new cells random hexadecimal ids, which may contain any short
    digit string by chance; they are not content.
    """
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            if key != "id":
                yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _text(notebook):
    return "\n".join(_strings(json.loads(nbformat.writes(notebook))))


def _output_texts(cell):
    for output in cell.get("outputs", []):
        yield from _strings(output.get("text", ""))
        yield from _strings(output.get("data", {}))
        yield from _strings([output.get("ename", ""), output.get("evalue", "")])


def _oracle_solutions(notebook):
    """Solution text found independently of the library: (solution text, other text)."""
    inside, solution, other = False, [], []
    for cell in notebook.cells:
        source = cell.source
        if cell.cell_type == "markdown" and "{solution}" in source:
            start = source.index("{solution}")
            solution.append(source[start:])
            other.append(source[:start])
            continue
        if cell.cell_type == "markdown" and "{solution-start}" in source:
            inside = True
            start = source.index("{solution-start}")
            other.append(source[:start])
            source = source[start:]
        if inside:
            if cell.cell_type == "markdown" and "{solution-end}" in source:
                end = source.index("{solution-end}")
                solution.append(source[:end])
                other.append(source[end:])
                inside = False
            else:
                solution.append(source)
                solution.extend(_output_texts(cell))
            continue
        other.append(source)
        other.extend(_output_texts(cell))
    return "\n".join(solution), "\n".join(other)


def _significant_lines(text):
    for line in text.splitlines():
        line = line.strip()
        if len(line) >= 12 and not line.startswith(("```", ":::", ":class:")):
            yield line


def _notebook(*cells, **metadata):
    return new_notebook(cells=list(cells), metadata={"kernelspec": KERNELSPEC, **metadata})


EXERCISE = new_markdown_cell("```{exercise} Depth\n:label: ex-shamir-trap-depth\nCompute it.\n```")


# ------------------------------------------------------------ student editions of the book

@pytest.mark.parametrize("path", BOOK_NOTEBOOKS, ids=_ids(BOOK_NOTEBOOKS))
def test_student_edition_contains_no_solution_text(path):
    original = nbformat.read(path, as_version=4)
    student = homework.split_solutions(original).notebook
    solution_text, other_text = _oracle_solutions(original)
    student_text = _text(student)
    leaked = [line for line in _significant_lines(solution_text)
              if line not in other_text and line in student_text]
    assert solution_text.strip(), "every notebook of the book has solutions"
    assert not leaked, leaked[:5]


@pytest.mark.parametrize("path", BOOK_NOTEBOOKS, ids=_ids(BOOK_NOTEBOOKS))
def test_student_edition_keeps_every_exercise_statement(path):
    original = nbformat.read(path, as_version=4)
    student = homework.split_solutions(original).notebook
    assert homework.exercise_labels(student) == homework.exercise_labels(original)
    statements = [c.source for c in original.cells if "{exercise}" in c.source]
    kept = [c.source for c in student.cells]
    assert all(statement in kept for statement in statements)


@pytest.mark.parametrize("path", BOOK_NOTEBOOKS, ids=_ids(BOOK_NOTEBOOKS))
def test_student_edition_uses_no_name_that_only_a_solution_defines(path):
    edition = homework.split_solutions(nbformat.read(path, as_version=4))
    assert homework.solution_only_names(edition) == set()


# ------------------------------------------- the student editions run top to bottom
# A student edition is the book's notebook without its solution cells. Running each
# edition again would repeat every experiment of the book (about 100 s of kernel time)
# to learn one thing nbval does not already prove: that nothing kept needs a removed
# cell. The three tests below prove exactly that, without re-running the experiments:
#
# 1. the edition's code is the book's first k code cells, verbatim and with their
#    stored outputs, then answer plumbing only (``<answer> = None``, ``from
#    resnet_theory import checks``, ``checks.<label>(<answer>)``). nbval runs the book's
#    notebook from a fresh kernel, so it runs those k cells in that order from a fresh
#    kernel and proves that they raise nothing and reproduce those outputs;
# 2. at each check call of the edition, the last statement that binds ``checks`` is
#    the plumbing import and the last that binds the answer is its placeholder, so the
#    call sees the checks module and ``None``, whatever else the k cells did;
# 3. the edition's plumbing, run in a fresh namespace, raises nothing and says
#    "not yet" for each exercise.
#
# Chapter 5's edition also runs whole, in the grader's sandbox (``real_submissions``).

_IMPORT_CHECKS = "from resnet_theory import checks"


def _answer_variables(path):
    labels = homework.auto_graded_labels(nbformat.read(path, as_version=4))
    return {checks.REGISTRY[label].answer_variable: label for label in labels}


def _plumbing_kind(statement, answers):
    """"import", "placeholder" or "check" for a plumbing statement, else None."""
    if isinstance(statement, ast.ImportFrom) and statement.module == "resnet_theory" and \
            statement.level == 0 and any(a.name == "checks" and a.asname in (None, "checks")
                                         for a in statement.names):
        return "import"
    if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and \
            isinstance(statement.targets[0], ast.Name) and \
            statement.targets[0].id in answers and \
            isinstance(statement.value, ast.Constant) and statement.value.value is None:
        return "placeholder"
    if isinstance(statement, ast.Expr) and isinstance(call := statement.value, ast.Call) and \
            isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) and \
            call.func.value.id == "checks" and len(call.args) == 1 and not call.keywords and \
            isinstance(call.args[0], ast.Name) and call.args[0].id in answers and \
            call.func.attr == answers[call.args[0].id].replace("-", "_"):
        return "check"
    return None


def _statements(source):
    return ast.parse(homework.student._python_source(source)).body


def _edition_split(path):
    """(book code cells, edition code cells, k): the edition's first k code cells are the book's."""
    book = [c for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    edition = [c for c in homework.split_solutions(nbformat.read(path, as_version=4))
               .notebook.cells if c.cell_type == "code"]
    k = 0
    while k < min(len(book), len(edition)) and book[k].source == edition[k].source:
        k += 1
    return book, edition, k


@pytest.mark.parametrize("path", BOOK_NOTEBOOKS, ids=_ids(BOOK_NOTEBOOKS))
def test_student_edition_is_the_book_s_opening_cells_then_answer_plumbing(path):
    book, edition, k = _edition_split(path)
    answers = _answer_variables(path)
    assert k < len(book), "the book's notebook has a solution cell"
    for kept, original in zip(edition[:k], book[:k], strict=True):
        assert kept.outputs == original.outputs  # the outputs nbval checks for the book
    tail = edition[k:]
    assert tail, "each edition ends with the plumbing of its auto-graded exercise"
    for cell in tail:
        kinds = [_plumbing_kind(s, answers) for s in _statements(cell.source)]
        assert None not in kinds, f"not answer plumbing, yet after a solution: {cell.source!r}"
        assert cell.outputs == [] and cell.execution_count is None
    rest = iter(c.source for c in book[k:])  # the tail is the book's rest minus solutions
    assert all(any(cell.source == s for s in rest) for cell in tail)


def _binders(tree):
    """(name, node) for every binding or deletion of a name anywhere in ``tree``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            yield node.id, node
        elif isinstance(node, ast.alias):
            yield (node.asname or node.name).split(".")[0], node
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield node.name, node
        elif isinstance(node, ast.arg):
            yield node.arg, node


@pytest.mark.parametrize("path", BOOK_NOTEBOOKS, ids=_ids(BOOK_NOTEBOOKS))
def test_student_edition_checks_see_the_checks_module_and_none(path):
    """At each check call the last statement that binds ``checks`` (in any scope: a
    conservative reading) is the plumbing import, and the last that binds the answer
    is its placeholder; no cell declares them global or changes their attributes."""
    _, edition, _ = _edition_split(path)
    answers = _answer_variables(path)
    watched = {"checks", *answers}
    last = {}
    for cell in edition:
        for statement in _statements(cell.source):
            kind = _plumbing_kind(statement, answers)
            module = ast.Module(body=[statement], type_ignores=[])
            for node in ast.walk(module):
                assert not (isinstance(node, ast.Global | ast.Nonlocal)
                            and watched & set(node.names)), cell.source
                assert not (isinstance(node, ast.Attribute) and
                            isinstance(node.ctx, ast.Store | ast.Del) and
                            isinstance(node.value, ast.Name) and node.value.id in watched), \
                    cell.source
            plumbing = set()
            if kind == "import":
                plumbing = {id(a) for a in statement.names if a.name == "checks"}
            elif kind == "placeholder":
                plumbing = {id(statement.targets[0])}
            for name, node in _binders(module):
                if name in watched:
                    last[name] = "plumbing" if id(node) in plumbing else cell.source
            if kind == "check":
                for name in ("checks", statement.value.args[0].id):
                    assert last.get(name) == "plumbing", \
                        f"{name} at {ast.unparse(statement)} was last bound by {last.get(name)!r}"


def _plumbing_program(path):
    """The edition's plumbing statements, in order, each a cell of its own."""
    _, edition, _ = _edition_split(path)
    answers = _answer_variables(path)
    program = []
    for cell in edition:
        for statement in _statements(cell.source):
            kind = _plumbing_kind(statement, answers)
            if kind == "import":
                program.append((kind, _IMPORT_CHECKS))
            elif kind is not None:
                program.append((kind, ast.unparse(statement)))
    return program


@pytest.fixture(scope="module")
def plumbing_runs(tmp_path_factory):
    """Every edition's plumbing run in one kernel, each from an emptied namespace."""
    cells, where = [], {}
    for path in BOOK_NOTEBOOKS:
        program = _plumbing_program(path)
        cells.append(new_code_cell("%reset -f"))
        where[path] = (len(cells), len(cells) + len(program), program)
        cells.extend(new_code_cell(source) for _, source in program)
    runner = _notebook(*cells)
    NotebookClient(runner, timeout=120, kernel_name="python3", allow_errors=True, resources={
        "metadata": {"path": str(tmp_path_factory.mktemp("plumbing"))}}).execute()
    return {path: list(zip(program, runner.cells[start:stop], strict=True))
            for path, (start, stop, program) in where.items()}


@pytest.mark.parametrize("path", BOOK_NOTEBOOKS, ids=_ids(BOOK_NOTEBOOKS))
def test_student_edition_runs_top_to_bottom(path, plumbing_runs):
    answers = _answer_variables(path)
    checked = set()
    for (kind, source), cell in plumbing_runs[path]:
        assert not [o for o in cell.outputs if o.output_type == "error"], source
        if kind == "check":
            label = answers[source[source.index("(") + 1:-1]]
            assert f"[not yet] {label}" in "\n".join(_output_texts(cell)), cell.outputs
            checked.add(label)
    assert checked == set(answers.values())


@pytest.mark.parametrize("path", BOOK_NOTEBOOKS, ids=_ids(BOOK_NOTEBOOKS))
def test_auto_graded_exercises_follow_the_protocol(path):
    original = nbformat.read(path, as_version=4)
    student = homework.split_solutions(original).notebook
    for label in homework.auto_graded_labels(original):
        name = checks.REGISTRY[label].answer_variable
        placeholder = re.compile(rf"^{name}\s*=\s*None\b", re.MULTILINE)
        assert any(placeholder.search(c.source) for c in student.cells
                   if c.cell_type == "code"), f"{label}: no `{name} = None` cell for students"
        call = [c for c in original.cells if c.cell_type == "code"
                and f"checks.{label.replace('-', '_')}({name})" in c.source]
        assert call, f"{label}: no cell calls the check"
        # nbval proves the stored outputs are current, so the stored verdict is the
        # verdict a fresh run of the solution gives: an answer of the right form
        # (compared with the answer key when graded) or, for a property check, a
        # correct one.
        outputs = "\n".join(_output_texts(call[-1]))
        mark = "form ok" if checks.REGISTRY[label].needs_key else "correct"
        assert f"[{mark}] {label}" in outputs, outputs


def test_every_registered_check_has_an_exercise_in_the_book():
    stated = {label for path in BOOK_NOTEBOOKS
              for label in homework.exercise_labels(nbformat.read(path, as_version=4))}
    assert set(checks.REGISTRY) <= stated


@pytest.mark.parametrize("path", BOOK_NOTEBOOKS, ids=_ids(BOOK_NOTEBOOKS))
def test_each_notebook_has_an_auto_graded_exercise(path):
    assert homework.auto_graded_labels(nbformat.read(path, as_version=4))


# ---------------------------------------------------------- split_solutions on small cases

def test_gated_solution_is_removed_with_its_code_cells():
    nb = _notebook(EXERCISE,
                   new_markdown_cell("```{solution-start} ex-shamir-trap-depth\n"
                                     ":class: dropdown\n```\nThe secret method."),
                   new_code_cell("secret = 42", outputs=[new_output("stream", text="42\n")]),
                   new_markdown_cell("More secret prose.\n\n```{solution-end}\n```\nAfter."))
    edition = homework.split_solutions(nb)
    text = _text(edition.notebook)
    assert "secret" not in text and "42" not in text
    assert [c.source for c in edition.notebook.cells] == [EXERCISE.source, "After."]
    (solution,) = edition.solutions
    assert solution.label == "ex-shamir-trap-depth"
    assert solution.code == ("secret = 42",) and solution.outputs == ("42\n",)


def test_dropdown_solution_directive_is_removed_from_its_cell():
    nb = _notebook(new_markdown_cell(
        "Before.\n\n````{solution} ex-a-b\n:class: dropdown\n\n```python\nsecret()\n```\n"
        "Secret words.\n````\n\nAfter."))
    edition = homework.split_solutions(nb)
    assert edition.notebook.cells[0].source == "Before.\n\n\nAfter."
    assert edition.solutions[0].label == "ex-a-b"
    assert "Secret words." in edition.solutions[0].markdown


def test_colon_fenced_solution_is_removed_and_an_empty_cell_dropped():
    nb = _notebook(EXERCISE, new_markdown_cell(":::{solution} ex-a-b\nSecret.\n:::"))
    edition = homework.split_solutions(nb)
    assert [c.source for c in edition.notebook.cells] == [EXERCISE.source]


def test_unclosed_solution_start_is_an_error():
    nb = _notebook(new_markdown_cell("```{solution-start} ex-a-b\n```"), new_code_cell("x = 1"))
    with pytest.raises(ValueError, match="solution-end"):
        homework.split_solutions(nb, where="nb.ipynb")


def test_solution_end_without_start_is_an_error():
    with pytest.raises(ValueError, match="solution-start"):
        homework.split_solutions(_notebook(new_markdown_cell("```{solution-end}\n```")))


def test_metadata_and_attachments_of_solutions_do_not_survive():
    image = {"image/png": "U0VDUkVU"}
    statement = new_markdown_cell("![fig](attachment:kept.png)\n\n```{solution} ex-a-b\n"
                                  "![sol](attachment:secret.png)\n```",
                                  attachments={"kept.png": image, "secret.png": image},
                                  metadata={"tags": ["keep-me"], "solution_notes": "secret"})
    code = new_code_cell("1 + 1", metadata={"execution": {"iopub.status.busy": "2026"}})
    nb = _notebook(statement, code, widgets={"state": "secret"}, notes="secret")
    student = homework.split_solutions(nb).notebook
    assert set(student.metadata) == {"kernelspec"}
    assert dict(student.cells[0].metadata) == {"tags": ["keep-me"]}
    assert set(student.cells[0].attachments) == {"kept.png"}
    assert dict(student.cells[1].metadata) == {}
    assert "secret" not in _text(student)


def test_figure_captions_labels_and_alt_text_survive():
    figure = {"figure": {"caption": "The loss.", "name": "fig-a-loss"},
              "image": {"alt": "A falling curve."}}
    code = new_code_cell("plot()", metadata={"mystnb": dict(figure, remove_code_source=True),
                                             "tags": ["hide-input"]})
    student = homework.split_solutions(_notebook(code)).notebook
    assert dict(student.cells[0].metadata) == {"tags": ["hide-input"], "mystnb": figure}


def test_outputs_after_the_first_solution_are_cleared():
    before = new_code_cell("print('figure')", execution_count=1,
                           outputs=[new_output("stream", text="figure\n")])
    after = new_code_cell("check()", execution_count=3,
                          outputs=[new_output("stream", text="[correct] via the answer\n")])
    nb = _notebook(before, EXERCISE, new_markdown_cell("```{solution} ex-a-b\nSecret.\n```"),
                   after)
    cells = homework.split_solutions(nb).notebook.cells
    assert cells[0].outputs == before.outputs and cells[0].execution_count == 1
    assert cells[-1].outputs == [] and cells[-1].execution_count is None


def test_original_notebook_is_not_modified():
    nb = _notebook(EXERCISE, new_markdown_cell("```{solution} ex-a-b\nSecret.\n```"))
    snapshot = nbformat.writes(nb)
    homework.split_solutions(nb)
    assert nbformat.writes(nb) == snapshot


def test_auto_graded_labels_also_finds_an_answer_without_its_statement():
    nb = _notebook(new_code_cell("ex_shamir_trap_depth_answer = 0.1"))
    assert homework.auto_graded_labels(nb) == ["ex-shamir-trap-depth"]
    assert homework.auto_graded_labels(_notebook(new_code_cell("x = 1"))) == []


# ------------------------------------------------------------------ writing the editions

def test_student_editions_mirror_the_book_layout(tmp_path):
    book = tmp_path / "book"
    (book / "ch9").mkdir(parents=True)
    nbformat.write(_notebook(EXERCISE, new_markdown_cell("```{solution} ex-a\nSecret.\n```")),
                   book / "ch9" / "nb.ipynb")
    (book / "ch9" / "data.csv").write_text("1,2\n")
    (book / "ch9" / "index.md").write_text("```{solution} ex-a\nSecret.\n```\n")
    out = tmp_path / "_build" / "student"
    editions = homework.write_student_editions(book, out)
    assert list(editions) == [Path("ch9/nb.ipynb")]
    assert "Secret" not in (out / "ch9" / "nb.ipynb").read_text()
    assert (out / "ch9" / "data.csv").is_file() and not (out / "ch9" / "index.md").exists()
    homework.write_student_editions(book, out)  # a second run replaces the first


def test_student_editions_refuse_a_folder_that_contains_the_book(tmp_path):
    (tmp_path / "book").mkdir()
    with pytest.raises(ValueError, match="out_dir"):
        homework.write_student_editions(tmp_path / "book", tmp_path)


def test_student_editions_refuse_to_empty_a_foreign_folder(tmp_path):
    (tmp_path / "book").mkdir()
    (tmp_path / "mine").mkdir()
    with pytest.raises(ValueError, match="out_dir"):
        homework.write_student_editions(tmp_path / "book", tmp_path / "mine")


def test_student_html_config_hides_solutions_and_keeps_the_rest():
    config = homework.student_html_config(ROOT / "_config.yml")
    assert config["sphinx"]["config"]["hide_solutions"] is True
    assert config["sphinx"]["config"]["nitpicky"] is True
    assert config["bibtex_bibfiles"] == ["book/references.bib"]


def test_student_html_has_no_launch_buttons_that_open_the_solutions():
    config = homework.student_html_config(ROOT / "_config.yml")
    assert not any(config["launch_buttons"].get(key)
                   for key in ("binderhub_url", "colab_url", "jupyterhub_url"))


# --------------------------------------------------------------------- the Chapter 5 check

@pytest.fixture(scope="module")
def depth(book_answer_key):
    """The depth of the trap, from the answer key computed from the book."""
    return book_answer_key.answers["ex-shamir-trap-depth"]


def test_trap_depth_check_accepts_the_right_answer_in_any_numeric_form(depth):
    for answer in (depth, np.float64(depth), np.array(depth), np.array([depth]),
                   round(depth, 7)):
        result = checks.ex_shamir_trap_depth(answer)
        assert result.passed is None and "compared with the answer key" in result.reason


def test_trap_depth_check_gives_a_wrong_answer_the_same_verdict(depth):
    verdict = checks.ex_shamir_trap_depth(depth)
    for wrong in (depth * 1.001, depth / 2, 0.5, 10.0, 1e-9):
        assert checks.ex_shamir_trap_depth(wrong) == verdict


def test_trap_depth_check_fails_without_an_answer():
    result = checks.ex_shamir_trap_depth(None)
    assert not result.passed and "ex_shamir_trap_depth_answer" in result.reason


@pytest.mark.parametrize("junk", ["0.15", True, [0.1, 0.2], np.zeros(3), float("nan"),
                                  object(), -0.15, 0.0])
def test_trap_depth_check_rejects_junk_without_raising(junk):
    result = checks.ex_shamir_trap_depth(junk)
    assert result.passed is False
    assert result.reason.startswith("expected a positive real number")


def test_trap_depth_check_does_not_reveal_the_answer(depth):
    for answer in (0.1, 0.2, 1.0, depth, "x", -1.0):
        reason = checks.ex_shamir_trap_depth(answer).reason
        assert f"{depth:.2f}" not in reason and f"{depth:.3f}"[1:] not in reason


# ------------------------------------------------------------------------------ grading

@pytest.fixture(scope="module")
def real_submissions(tmp_path_factory, book_answer_key):
    """The Chapter 5 notebook as submitted with solutions, and its untouched student edition."""
    folder = tmp_path_factory.mktemp("real")
    shutil.copy(GRADED_NOTEBOOK, folder / "solution.ipynb")
    student = homework.split_solutions(nbformat.read(GRADED_NOTEBOOK, as_version=4)).notebook
    nbformat.write(student, folder / "untouched.ipynb")
    grades = homework.grade_folder(folder, timeout=90, jobs=2, answer_key=book_answer_key)
    return folder, {g.notebook: g for g in grades}


def test_solution_notebook_scores_full_marks(real_submissions):
    _, grades = real_submissions
    grade = grades["solution.ipynb"]
    assert grade.status == "ok", grade.reason
    assert grade.results and all(passed for passed, _ in grade.results.values())


def test_untouched_student_notebook_runs_and_scores_zero(real_submissions):
    _, grades = real_submissions
    grade = grades["untouched.ipynb"]
    assert grade.status == "ok", grade.reason  # the student edition runs top to bottom
    assert set(grade.results) == set(grades["solution.ipynb"].results)
    assert grade.score == 0


HOSTILE = {
    "good.ipynb": ["from resnet_theory.landscape import critical_points",
                   "pts = critical_points(eps=1.5, weight_decay=0.3)\n"
                   "mins = sorted((p for p in pts if p.kind == 'minimum'), key=lambda p: p.value)\n"
                   "(sad,) = [p for p in pts if p.kind == 'saddle']\n"
                   "ex_shamir_trap_depth_answer = sad.value - mins[-1].value"],
    "raises.ipynb": ["ex_shamir_trap_depth_answer = 0.5", "raise RuntimeError('boom')",
                     "ex_shamir_trap_depth_answer = 0.6"],
    "loops.ipynb": ["while True:\n    pass"],
    "floods.ipynb": ["for _ in range(40):\n    print('x' * 100_000)"],
    # (IPython's history journal may vanish between listdir and remove.)
    "deletes.ipynb": ["import os, shutil\nfor name in os.listdir('.'):\n"
                      "    try:\n"
                      "        shutil.rmtree(name) if os.path.isdir(name) else os.remove(name)\n"
                      "    except FileNotFoundError:\n"
                      "        pass"],
    "exits.ipynb": ["import sys\nsys.exit(1)"],
    "os_exits.ipynb": ["import os\nos._exit(0)"],
    "fakes.ipynb": ["print('{\"results\": {\"ex-shamir-trap-depth\": [true, \"ok\"]}}')",
                    "import json\nprint(json.dumps({'status': 'ok', 'reason': '', 'results': "
                    "{'ex-shamir-trap-depth': [True, 'ok']}}))"],
}


@pytest.fixture(scope="module")
def hostile_submissions(tmp_path_factory, book_answer_key):
    folder = tmp_path_factory.mktemp("hostile")
    for name, sources in HOSTILE.items():
        nbformat.write(_notebook(EXERCISE, *map(new_code_cell, sources)), folder / name)
    (folder / "not_a_notebook.ipynb").write_text("{ this is not json")
    (folder / "notes.txt").write_text("not a notebook, not graded\n")
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    grades = homework.grade_folder(folder, timeout=5, max_output_bytes=1_000_000, jobs=2,
                                   answer_key=book_answer_key)
    return folder, {g.notebook: g for g in grades}, before


def test_a_correct_answer_among_hostile_notebooks_is_graded_correctly(hostile_submissions):
    _, grades, _ = hostile_submissions
    assert grades["good.ipynb"].status == "ok"
    assert grades["good.ipynb"].results["ex-shamir-trap-depth"][0] is True
    assert grades["good.ipynb"].score == 1


@pytest.mark.parametrize(("name", "status", "words"), [
    ("raises.ipynb", "error", "RuntimeError: boom"),
    ("loops.ipynb", "timeout", "time limit"),
    ("floods.ipynb", "output-limit", "bytes of output"),
    ("exits.ipynb", "error", "SystemExit"),
    ("os_exits.ipynb", "kernel-died", "kernel died"),
    ("not_a_notebook.ipynb", "invalid", "not a readable notebook"),
])
def test_hostile_notebook_costs_only_its_own_row(hostile_submissions, name, status, words):
    _, grades, _ = hostile_submissions
    assert grades[name].status == status
    assert words in grades[name].reason
    assert grades[name].score == 0


# Issue 38, G: every message the kernel sends counts against the output budget, not only
# printed text: a loop of clear_output, of display updates or of comm messages is stopped
# like a flood of text (before, each ran to the time limit and grew the driver).
FLOODS = {
    "clears.ipynb": "from IPython.display import clear_output\nwhile True:\n"
                    "    clear_output(wait=True)",
    "updates.ipynb": "from IPython.display import display\n"
                     "handle = display('x', display_id=True)\nwhile True:\n"
                     "    handle.update('y')",
    "comms.ipynb": "import comm\nchannel = comm.create_comm(target_name='flood')\n"
                   "while True:\n    channel.send({'x': 1})",
}


@pytest.fixture(scope="module")
def floods(tmp_path_factory):
    folder = tmp_path_factory.mktemp("floods")
    for name, source in FLOODS.items():
        nbformat.write(_notebook(new_code_cell(source)), folder / name)
    limits = homework.Limits(timeout=60, max_output_bytes=100_000)
    return {g.notebook: g for g in homework.grade_folder(folder, limits=limits, jobs=2)}


@pytest.mark.parametrize("name", sorted(FLOODS))
def test_a_flood_of_messages_is_stopped_by_the_output_budget(floods, name):
    grade = floods[name]
    assert grade.status == "output-limit", grade.reason
    assert "bytes of output (every message counts)" in grade.reason


def test_a_raising_notebook_keeps_running_and_is_checked(hostile_submissions):
    _, grades, _ = hostile_submissions
    passed, reason = grades["raises.ipynb"].results["ex-shamir-trap-depth"]
    assert not passed and "does not match the answer key" in reason  # 0.6, after the error


def test_printed_fake_results_are_ignored(hostile_submissions):
    _, grades, _ = hostile_submissions
    assert grades["fakes.ipynb"].status == "ok" and grades["fakes.ipynb"].score == 0


def test_deleting_files_touches_only_the_scratch_copy(hostile_submissions):
    folder, grades, before = hostile_submissions
    assert grades["deletes.ipynb"].status == "ok"
    for name, content in before.items():
        assert (folder / name).read_bytes() == content


def test_grades_csv_has_one_row_per_notebook_and_one_column_per_exercise(hostile_submissions):
    folder, grades, _ = hostile_submissions
    with (folder / "grades.csv").open(newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["notebook", "status", "reason", "score", "ex-shamir-trap-depth"]
    assert [row[0] for row in rows[1:]] == sorted(p.name for p in folder.glob("*.ipynb"))
    by_name = {row[0]: row for row in rows[1:]}
    assert by_name["good.ipynb"][1:] == ["ok", "", "1/1", "1"]
    assert by_name["loops.ipynb"][4] == "0"
    assert by_name["not_a_notebook.ipynb"][4] == ""  # no exercise found: blank, not 0
    assert all(row[4] in ("0", "1", "") and "\n" not in row[2] for row in rows[1:])


def test_feedback_file_gives_each_verdict(hostile_submissions):
    folder, grades, _ = hostile_submissions
    for name, grade in grades.items():
        text = (folder / "feedback" / f"{Path(name).stem}.txt").read_text()
        assert text.startswith(f"Feedback on {name}") and f"Run: {grade.status}" in text
    good = (folder / "feedback" / "good.txt").read_text()
    assert "- ex-shamir-trap-depth: correct:" in good
    loops = (folder / "feedback" / "loops.txt").read_text()
    assert "- ex-shamir-trap-depth: not yet:" in loops


def test_grade_rejects_bad_limits(tmp_path):
    with pytest.raises(ValueError, match="timeout"):
        homework.grade_notebook(tmp_path / "a.ipynb", timeout=0)
    with pytest.raises(ValueError, match="max_output_bytes"):
        homework.grade_notebook(tmp_path / "a.ipynb", max_output_bytes=0)


def test_grade_folder_rejects_a_missing_folder(tmp_path):
    with pytest.raises(ValueError, match="folder"):
        homework.grade_folder(tmp_path / "missing")
    assert homework.main(["grade", str(tmp_path / "missing")]) == 2


def test_make_grade_without_submissions_says_how_to_call_it():
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    result = subprocess.run(["make", "grade"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode != 0
    assert "SUBMISSIONS" in result.stderr + result.stdout


def test_grade_folder_rejects_a_bad_number_of_jobs(tmp_path):
    for jobs in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="jobs"):
            homework.grade_folder(tmp_path, jobs=jobs)


def test_grade_command_takes_jobs_and_sandbox_options(tmp_path):
    (tmp_path / "b.ipynb").write_text("{ not json")
    (tmp_path / "a.ipynb").write_text("{ not json")
    assert homework.main(["grade", str(tmp_path), "--jobs", "2", "--no-sandbox"]) == 0
    rows = (tmp_path / "grades.csv").read_text().splitlines()
    assert [row.split(",")[0] for row in rows[1:]] == ["a.ipynb", "b.ipynb"]


def test_the_package_still_runs_as_a_module():
    import sys

    result = subprocess.run([sys.executable, "-m", "resnet_theory.homework", "--help"],
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0
    assert "student" in result.stdout and "grade" in result.stdout

"""The answer key is computed from the assignment, cached, and used only by the grader.

Specification of :mod:`resnet_theory.homework.answer_key` and of its use by
``make grade``. The assignment here is a small notebook that states the Chapter
5 exercise ``ex-shamir-trap-depth`` and whose solution answers ``0.25``, which
is not the book's answer: whatever the grader accepts comes from the
assignment it is given, not from the library.
"""

import csv
import json

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from resnet_theory import checks, homework
from resnet_theory.homework import answer_key, grading

KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}
LABEL = "ex-shamir-trap-depth"
VARIABLE = "ex_shamir_trap_depth_answer"
EXERCISE = new_markdown_cell(f"```{{exercise}} Depth\n:label: {LABEL}\nCompute it.\n```")
WRITTEN = new_markdown_cell("```{exercise} Why\n:label: ex-demo-why\nExplain it.\n```")


def _notebook(*sources, exercise=True):
    cells = [EXERCISE] if exercise else []
    cells += [new_code_cell(source) for source in sources]
    return new_notebook(cells=cells, metadata={"kernelspec": KERNELSPEC})


def _assignment(folder, solution=f"{VARIABLE} = 0.25"):
    """An assignment notebook ``example.ipynb`` whose solution assigns the answer."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "example.ipynb"
    notebook = _notebook(f"{VARIABLE} = None  # your answer", solution)
    notebook.cells.append(WRITTEN)
    nbformat.write(notebook, path)
    return path


@pytest.fixture
def runs(monkeypatch):
    """The notebooks the key computation runs, in order."""
    ran = []
    original = answer_key._run_solution

    def counting(title, *args, **kwargs):
        ran.append(title)
        return original(title, *args, **kwargs)

    monkeypatch.setattr(answer_key, "_run_solution", counting)
    return ran


@pytest.fixture
def secret_home(monkeypatch, tmp_path):
    """A signing secret of this test's own (not the user's)."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _rows(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return {row[0]: row for row in csv.reader(handle)}


# ---------------------------------------------------------------- computing the key

def test_the_key_is_computed_from_the_assignment_s_solution(tmp_path, secret_home):
    path = _assignment(tmp_path / "assignment")
    key = homework.compute_answer_key(path, sandbox="off")
    assert key.answers == {LABEL: 0.25}
    (entry,) = key.notebooks.values()
    assert entry.notebook == "example.ipynb"
    assert entry.sha256 == answer_key.notebook_sha256(path.read_bytes())


def test_the_key_is_cached_and_recomputed_only_when_the_notebook_changes(
        tmp_path, secret_home, runs):
    path = _assignment(tmp_path / "assignment")
    cache = tmp_path / "key.json"
    first = homework.compute_answer_key(path, sandbox="off", cache=cache)
    second = homework.compute_answer_key(path, sandbox="off", cache=cache)
    assert runs == ["example.ipynb"]  # the second time the cached key was used
    assert first.answers == second.answers == homework.read_answer_key(cache).answers
    _assignment(tmp_path / "assignment", solution=f"{VARIABLE} = 0.3")
    changed = homework.compute_answer_key(path, sandbox="off", cache=cache)
    assert runs == ["example.ipynb", "example.ipynb"]
    assert changed.answers == {LABEL: 0.3}


def test_a_key_planted_in_the_cache_is_not_believed(tmp_path, secret_home, runs):
    path = _assignment(tmp_path / "assignment")
    cache = tmp_path / "answer-key.json"
    planted = {"format": answer_key.FORMAT, "version": 1, "notebooks": {"example.ipynb": {
        "notebook": "example.ipynb", "sha256": answer_key.notebook_sha256(path.read_bytes()),
        "answers": {LABEL: 0.5}}}, "signature": "0" * 64}
    cache.write_text(json.dumps(planted))
    assert homework.compute_answer_key(path, sandbox="off", cache=cache).answers == \
        {LABEL: 0.25}
    assert runs == ["example.ipynb"]
    other = tmp_path / "planted.json"
    other.write_text(json.dumps(planted))
    with pytest.raises(ValueError, match="signature"):
        homework.read_answer_key(other, signed=True)
    assert homework.read_answer_key(other).answers == {LABEL: 0.5}  # given explicitly


def test_a_key_signed_by_another_user_is_recomputed(tmp_path, monkeypatch, runs):
    path = _assignment(tmp_path / "assignment")
    cache = tmp_path / "answer-key.json"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "someone"))
    homework.compute_answer_key(path, sandbox="off", cache=cache)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "me"))
    homework.compute_answer_key(path, sandbox="off", cache=cache)
    assert runs == ["example.ipynb", "example.ipynb"]


@pytest.mark.parametrize(("solution", "words"), [
    ("raise RuntimeError('broken solution')", "did not run cleanly"),
    ("pass", "does not give ex_shamir_trap_depth_answer"),
    (f"{VARIABLE} = 'a quarter'", "not of the exercise's form"),
    (f"{VARIABLE} = -0.25", "not of the exercise's form"),
])
def test_an_assignment_whose_solution_is_broken_gives_no_key(tmp_path, solution, words):
    path = _assignment(tmp_path / "assignment", solution=solution)
    with pytest.raises(ValueError, match=words):
        homework.compute_answer_key(path, sandbox="off")


def test_exercises_with_a_property_check_need_no_key(tmp_path):
    notebook = new_notebook(cells=[new_markdown_cell(
        "```{exercise} Balanced\n:label: ex-dl-balanced\nFactor it.\n```"),
        new_code_cell("raise RuntimeError('never run')")],
        metadata={"kernelspec": KERNELSPEC})
    nbformat.write(notebook, tmp_path / "positive.ipynb")
    assert not checks.REGISTRY["ex-dl-balanced"].needs_key
    assert homework.compute_answer_key(tmp_path, sandbox="off").notebooks == {}


def test_the_answer_key_command_writes_the_key(tmp_path, secret_home, capsys):
    path = _assignment(tmp_path / "assignment")
    out = tmp_path / "keys" / "key.json"
    assert homework.main(["answer-key", "--assignment", str(path), "--out", str(out)]) == 0
    assert f"wrote {out}: 1 answer from 1 notebook ({LABEL})" in capsys.readouterr().out
    data = json.loads(out.read_text())
    assert data["format"] == answer_key.FORMAT and data["signature"]
    assert data["notebooks"]["example.ipynb"]["answers"] == {LABEL: 0.25}
    assert homework.main(["answer-key", "--assignment", str(tmp_path / "missing"),
                          "--out", str(out)]) == 2


# ------------------------------------------------------------------ grading with it

@pytest.fixture(scope="module")
def class_folder(tmp_path_factory):
    """An assignment answering 0.25 and three students: right, rounded, wrong."""
    base = tmp_path_factory.mktemp("keyed")
    path = _assignment(base / "assignment")
    folder = base / "submissions"
    for student, answer in {"alice": "0.25", "rory": "0.2500001", "wes": "0.3"}.items():
        (folder / student).mkdir(parents=True)
        nbformat.write(_notebook(f"{VARIABLE} = {answer}"), folder / student / "example.ipynb")
    return path, folder


def test_the_grader_scores_the_key_s_answer_right_and_another_wrong(class_folder):
    path, folder = class_folder
    assert homework.main(["grade", str(folder), "--assignment", str(path), "--allow-root",
                          "--timeout", "60", "--jobs", "2"]) == 0
    rows = _rows(folder / "grades.csv")
    assert rows["alice/example.ipynb"][3:] == ["1/1", "1"]
    assert rows["rory/example.ipynb"][3:] == ["1/1", "1"]  # within the tolerance
    assert rows["wes/example.ipynb"][3:] == ["0/1", "0"]
    feedback = (folder / "feedback" / "wes.txt").read_text()
    assert f"- {LABEL}: not yet: " + grading.WITHHELD in feedback
    assert (folder / "answer-key.json").is_file()  # cached next to the grades
    assert homework.read_answer_key(folder / "answer-key.json").answers == {LABEL: 0.25}


def test_a_second_grading_reuses_the_cached_key(class_folder, runs):
    path, folder = class_folder
    homework.grade_folder(folder, assignment=path, jobs=2, sandbox="off", cgroups="off")
    assert runs == []


def test_full_feedback_says_right_or_wrong_without_direction(class_folder, tmp_path):
    path, folder = class_folder
    grades = {g.notebook: g for g in homework.grade_folder(
        folder, assignment=path, jobs=2, sandbox="off", cgroups="off", out=tmp_path,
        feedback="full")}
    assert grades["wes/example.ipynb"].results[LABEL] == (
        False, "does not match the answer key (within a relative 1e-5)")
    assert grades["alice/example.ipynb"].results[LABEL] == (
        True, "matches the answer key (within a relative 1e-5)")


def test_an_explicit_key_is_used_as_given(class_folder, tmp_path, runs):
    path, folder = class_folder
    key = tmp_path / "key.json"
    homework.write_answer_key(homework.AnswerKey.of({LABEL: 0.3}), key)
    assert homework.main(["grade", str(folder), "--assignment", str(path), "--no-sandbox",
                          "--allow-root", "--out", str(tmp_path), "--answer-key",
                          str(key)]) == 0
    rows = _rows(tmp_path / "grades.csv")
    assert rows["wes/example.ipynb"][4] == "1" and rows["alice/example.ipynb"][4] == "0"
    assert runs == []


def test_a_key_without_an_exercise_of_the_assignment_is_refused(class_folder, tmp_path,
                                                                capsys):
    path, folder = class_folder
    key = tmp_path / "key.json"
    homework.write_answer_key(homework.AnswerKey.of({"ex-dr-eps-budget": 0.5}), key)
    assert homework.main(["grade", str(folder), "--assignment", str(path), "--no-sandbox",
                          "--allow-root", "--out", str(tmp_path), "--answer-key",
                          str(key)]) == 2
    assert f"the answer key has no value for {LABEL}" in capsys.readouterr().err
    assert not (tmp_path / "grades.csv").exists()


def test_without_an_assignment_or_a_key_a_compared_exercise_is_not_graded(tmp_path):
    nbformat.write(_notebook(f"{VARIABLE} = 0.25"), tmp_path / "alice.ipynb")
    (grade,) = homework.grade_folder(tmp_path, sandbox="off", cgroups="off")
    assert grade.status == "ok"
    assert grade.results[LABEL] == (False, grading.NO_KEY)

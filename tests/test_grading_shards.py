"""A class too large for one machine is graded in shards and merged (issue 38, item 7).

One folder is graded whole, and again as three shards (``--shard K/3``, each
into a folder of its own, as three Slurm array tasks would); ``merge`` combines
the shards. The class mixes a notebook that runs (a right answer and a written
answer with code) with rows that do not (a notebook outside the assignment, a
link, an unreadable notebook, two copies of one notebook, an empty folder), so
that every kind of row crosses the merge. The merged results are those of the
whole run, file for file. A missing shard (a gap), a shard given twice (an
overlap) and a shard of another split are refused.
"""

import shutil

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from resnet_theory import homework
from resnet_theory.homework.submissions import shard_of

KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}
AUTO = new_markdown_cell("```{exercise} Depth\n:label: ex-shamir-trap-depth\nCompute it.\n```")
WRITTEN = new_markdown_cell("```{exercise} Why\n:label: ex-demo-why\nExplain it.\n```")
KEY = homework.AnswerKey.of({"ex-shamir-trap-depth": 0.25})
RESULTS = ["grades.csv", "gradebook.csv", "manual-marks.csv", "feedback/index.csv"]


def _write(path, *cells):
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(new_notebook(cells=list(cells), metadata={"kernelspec": KERNELSPEC}), path)


def _names():
    """Six students, two in each of three shards."""
    found = {1: [], 2: [], 3: []}
    for index in range(100):
        name = f"student{index:02d}"
        if len(found[shard_of(name, 3)]) < 2:
            found[shard_of(name, 3)].append(name)
    return [name for k in (1, 2, 3) for name in found[k]]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("shards")
    assignment = base / "assignment" / "example.ipynb"
    _write(assignment, AUTO, new_code_cell("ex_shamir_trap_depth_answer = 0.25"), WRITTEN)
    folder = base / "submissions"
    right, other, absent, unreadable, twice, empty = _names()
    _write(folder / right / "example.ipynb", AUTO,
           new_code_cell("ex_shamir_trap_depth_answer = 0.25"), WRITTEN,
           new_code_cell("print(6 * 7)"))
    _write(folder / other / "other.ipynb", AUTO)  # not a notebook of the assignment
    (folder / absent).mkdir()
    (folder / absent / "example.ipynb").symlink_to(assignment)
    (folder / unreadable).mkdir()
    (folder / unreadable / "example.ipynb").write_text("{ not json")
    for path in (folder / twice / "example.ipynb", folder / twice / "v2" / "example.ipynb"):
        _write(path, AUTO)
    (folder / empty).mkdir()
    options = {"assignment": assignment, "sandbox": "off", "cgroups": "off",
               "answer_key": KEY, "jobs": 2}
    whole = base / "whole"
    whole.mkdir()
    homework.grade_folder(folder, out=whole, **options)
    shards = []
    for k in (1, 2, 3):
        shards.append(base / f"shard-{k}")
        shards[-1].mkdir()
        assert homework.main(["grade", str(folder), "--shard", f"{k}/3", "--out",
                              str(shards[-1]), "--assignment", str(assignment),
                              "--no-sandbox", "--no-cgroups", "--jobs", "2",
                              "--feedback", "full"]) == 0
    merged = base / "merged"
    assert homework.main(["merge", *map(str, shards), "--out", str(merged)]) == 0
    return {"whole": whole, "shards": shards, "merged": merged, "base": base}


def test_each_shard_grades_its_own_students(graded):
    seen = []
    for k, shard in enumerate(graded["shards"], start=1):
        students = {row.split(",")[0] for row in
                    (shard / "gradebook.csv").read_text().splitlines()[1:]}
        assert len(students) == 2 and all(shard_of(s, 3) == k for s in students)
        seen += students
    assert len(set(seen)) == 6


def test_the_merged_shards_give_the_results_of_one_whole_run(graded):
    for name in RESULTS:
        assert (graded["merged"] / name).read_bytes() == (graded["whole"] / name).read_bytes(), \
            name
    for folder in ("feedback", "written-answers"):
        whole = sorted(p.name for p in (graded["whole"] / folder).iterdir())
        assert sorted(p.name for p in (graded["merged"] / folder).iterdir()) == whole
        for name in whole:
            assert (graded["merged"] / folder / name).read_bytes() == \
                (graded["whole"] / folder / name).read_bytes(), name
    book = (graded["merged"] / "gradebook.csv").read_text()
    assert ",1,1,1,0,1," in book  # the right answer, 1 of 1
    assert "<pre class=\"out\">42\n</pre>" in \
        (graded["merged"] / "written-answers" / "ex-demo-why.html").read_text()


def test_a_gap_an_overlap_and_a_foreign_shard_are_refused(graded, tmp_path):
    one, two, three = graded["shards"]
    with pytest.raises(ValueError, match=r"shard 2/3 is missing \(gap\)"):
        homework.merge([one, three], tmp_path / "out")
    copy = tmp_path / "copy"
    shutil.copytree(one, copy)
    with pytest.raises(ValueError, match=r"both shard 1/3 \(overlap\)"):
        homework.merge([one, copy, two, three], tmp_path / "out")
    with pytest.raises(ValueError, match="another split"):
        homework.merge([one, two, three, graded["whole"]], tmp_path / "out")
    assert not (tmp_path / "out" / "gradebook.csv").exists()
    assert homework.main(["grade", str(one), "--shard", "4/3"]) == 2

"""The submissions folder is untrusted: links, FIFOs, devices, planted outputs, odd names.

Specification of :func:`resnet_theory.homework.collect_submissions` and of the
writers of :mod:`resnet_theory.homework.grading` (issue 23, item 4). Each test
plants what an extracted archive can hold (a symbolic link to the book, to a
classmate, to a secret or to ``/dev/zero``; a FIFO; a ``grades.csv`` or
``feedback`` planted as a link; names that are not UTF-8, start with ``=``, differ
only in Unicode normalisation, end in ``.IPYNB``; a file named ``feedback``) and
checks that nothing is followed, nothing hangs, nothing outside the folder is
written and every skipped entry is listed with its reason. No kernel runs here:
the notebooks are either unreadable or only collected.
"""

import csv
import hashlib
import os
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_notebook
from resnet_theory import homework
from resnet_theory.homework import grading

ROOT = Path(__file__).resolve().parents[1]
BOOK_NOTEBOOK = ROOT / "book" / "ch5_shamir" / "example_one.ipynb"


def _rows(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def _by_path(submissions):
    return {s.path: s for s in submissions}


def test_symbolic_links_are_skipped_never_followed(tmp_path):
    folder = tmp_path / "submissions"
    folder.mkdir()
    secret = tmp_path / "secret-token"
    secret.write_text("TOKEN-1234567890-do-not-leak\n")
    classmate = folder / "bob.ipynb"
    nbformat.write(new_notebook(cells=[new_code_cell("x = 1")]), classmate)
    (folder / "alice.ipynb").symlink_to(BOOK_NOTEBOOK)
    (folder / "carol.ipynb").symlink_to(classmate)
    (folder / "dave.ipynb").symlink_to(secret)
    (folder / "erin.ipynb").symlink_to("/dev/zero")
    (folder / "frank").symlink_to(tmp_path)  # a linked folder is not a student folder
    found = _by_path(homework.collect_submissions(folder))
    for name in ("alice.ipynb", "carol.ipynb", "dave.ipynb", "erin.ipynb", "frank"):
        assert found[name].data is None, name
        assert "symbolic link" in found[name].skipped, name
    assert found["bob.ipynb"].data == classmate.read_bytes()


def test_a_link_to_a_secret_or_dev_zero_reaches_no_report(tmp_path):
    folder = tmp_path / "submissions"
    folder.mkdir()
    secret = tmp_path / "secret-token"
    secret.write_text("TOKEN-1234567890-do-not-leak\n")
    (folder / "dave.ipynb").symlink_to(secret)
    (folder / "erin.ipynb").symlink_to("/dev/zero")
    grades = {g.notebook: g for g in homework.grade_folder(folder, sandbox="off")}
    assert grades["dave.ipynb"].status == grades["erin.ipynb"].status == "skipped"
    written = "".join(p.read_text() for p in folder.rglob("*") if p.is_file()
                      and not p.is_symlink())
    assert "TOKEN" not in written
    assert "symbolic link" in (folder / "feedback" / "dave.txt").read_text()


def test_a_fifo_a_device_and_a_folder_named_like_a_notebook_are_skipped(tmp_path):
    folder = tmp_path / "submissions"
    folder.mkdir()
    os.mkfifo(folder / "fifo.ipynb")
    (folder / "folder.ipynb").mkdir()
    script = ("import sys\nfrom resnet_theory import homework\n"
              "print([(s.path, s.skipped) for s in homework.collect_submissions(sys.argv[1])])")
    # In a subprocess with a time limit: a FIFO opened without O_NONBLOCK would hang.
    result = subprocess.run([sys.executable, "-c", script, str(folder)], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "fifo.ipynb', 'a FIFO" in result.stdout
    assert "folder.ipynb', 'a folder" in result.stdout


def test_oversized_files_are_skipped_with_the_limit(tmp_path):
    (tmp_path / "big.ipynb").write_bytes(b" " * 5000)
    (found,) = homework.collect_submissions(tmp_path, limit=1000)
    assert found.data is None and "more than the limit of 1000" in found.skipped


@pytest.mark.parametrize("planted", ["grades.csv", "gradebook.csv", "feedback"])
def test_a_planted_output_link_is_refused_and_its_target_untouched(tmp_path, planted):
    folder, victim = tmp_path / "submissions", tmp_path / "bashrc"
    folder.mkdir()
    victim.write_text("# the lecturer's shell start-up file\n")
    (tmp_path / "victim-folder").mkdir()
    (folder / "a.ipynb").write_text("{ not json")
    target = tmp_path / "victim-folder" if planted == "feedback" else victim
    (folder / planted).symlink_to(target)
    with pytest.raises(ValueError, match="symbolic link"):
        homework.grade_folder(folder, sandbox="off")
    assert homework.main(["grade", str(folder), "--no-sandbox"]) == 2
    assert victim.read_text() == "# the lecturer's shell start-up file\n"
    assert list((tmp_path / "victim-folder").iterdir()) == []


def test_a_file_named_feedback_is_refused_before_grading(tmp_path, capsys):
    (tmp_path / "a.ipynb").write_text("{ not json")
    (tmp_path / "feedback").write_text("a student's file called feedback\n")
    assert homework.main(["grade", str(tmp_path), "--no-sandbox"]) == 2
    assert "feedback is not a folder" in capsys.readouterr().err
    assert not (tmp_path / "grades.csv").exists()
    out = tmp_path / "results"
    out.mkdir()
    assert homework.main(["grade", str(tmp_path), "--no-sandbox", "--out", str(out)]) == 0
    assert (out / "grades.csv").is_file() and (out / "feedback").is_dir()


def test_a_link_planted_inside_feedback_is_replaced_not_followed(tmp_path):
    folder, victim = tmp_path / "submissions", tmp_path / "bashrc"
    (folder / "feedback").mkdir(parents=True)
    victim.write_text("unchanged\n")
    (folder / "feedback" / "a.txt").symlink_to(victim)
    (folder / "a.ipynb").write_text("{ not json")
    homework.grade_folder(folder, sandbox="off")
    assert victim.read_text() == "unchanged\n"
    assert not (folder / "feedback" / "a.txt").is_symlink()
    assert (folder / "feedback" / "a.txt").read_text().startswith("Feedback on a.ipynb")


def test_a_name_that_is_not_utf8_is_escaped_and_the_csv_is_complete(tmp_path):
    raw = os.fsencode(tmp_path) + b"/caf\xe9.ipynb"
    with open(raw, "wb") as handle:
        handle.write(b"{ not json")
    (tmp_path / "zoe.ipynb").write_text("{ not json")
    grades = homework.grade_folder(tmp_path, sandbox="off")
    assert [g.notebook for g in grades] == ["caf\\xe9.ipynb", "zoe.ipynb"]
    rows = _rows(tmp_path / "grades.csv")
    assert [row[0] for row in rows[1:]] == ["caf\\xe9.ipynb", "zoe.ipynb"]
    stem = "caf_xe9-" + hashlib.sha256(b"caf\\xe9").hexdigest()[:8]
    assert sorted(p.name for p in (tmp_path / "feedback").iterdir()) == \
        [f"{stem}.txt", "index.csv", "zoe.txt"]
    assert _rows(tmp_path / "feedback" / "index.csv")[1:] == [["caf\\xe9", f"{stem}.txt"],
                                                              ["zoe", "zoe.txt"]]


@pytest.mark.parametrize("name", ["=HYPERLINK(\"http:x\",\"y\").ipynb", "+1.ipynb",
                                  "-2+3.ipynb", "@SUM(1).ipynb"])
def test_formula_names_reach_the_csv_escaped(tmp_path, name):
    (tmp_path / name).write_text("{ not json")
    homework.grade_folder(tmp_path, sandbox="off")
    rows = _rows(tmp_path / "grades.csv")
    assert rows[1][0] == "'" + name
    assert _rows(tmp_path / "gradebook.csv")[1][0].startswith("'")


def test_csv_cells_that_start_like_a_formula_are_escaped():
    assert [grading.csv_cell(text) for text in ("=1+1", "\tx", "\rx", "-", "ok")] == \
        ["'=1+1", "'\tx", "'\rx", "'-", "ok"]
    assert [grading.csv_cell(text) for text in ("-1", "-2.5", "1/3")] == ["-1", "-2.5", "1/3"]


def test_a_shell_command_in_a_name_gives_a_plain_feedback_file_name(tmp_path):
    (tmp_path / "$(id>PWNED);#.ipynb").write_text("{ not json")
    homework.grade_folder(tmp_path, sandbox="off")
    names = sorted(p.name for p in (tmp_path / "feedback").iterdir())
    assert names[0].startswith("__id_PWNED___-") and names[0].endswith(".txt")
    assert names[1:] == ["index.csv"]
    assert not (tmp_path / "PWNED").exists()


def test_upper_case_ipynb_is_graded_not_skipped_silently(tmp_path):
    nbformat.write(new_notebook(cells=[new_code_cell("x = 1")]), tmp_path / "alice.IPYNB")
    (found,) = homework.collect_submissions(tmp_path)
    assert found.path == "alice.IPYNB" and found.data is not None and found.student == "alice"


def test_nfc_and_nfd_spellings_of_one_name_give_two_distinct_rows(tmp_path):
    nfc = unicodedata.normalize("NFC", "Jos\u00e9.ipynb")
    nfd = unicodedata.normalize("NFD", nfc)
    for name in (nfc, nfd):
        (tmp_path / name).write_text("{ not json")
    if len(list(tmp_path.iterdir())) < 2:
        pytest.skip("this file system normalises names")
    grades = homework.grade_folder(tmp_path, sandbox="off")
    names = [g.notebook for g in grades]
    assert sorted(names) == sorted(["Jos\u00e9.ipynb", "Jose\\u0301.ipynb"])
    assert len({p.name for p in (tmp_path / "feedback").iterdir()} - {"index.csv"}) == 2
    assert all(g.status == "invalid" and "same after normalisation" in g.reason for g in grades)


def test_every_skipped_entry_is_listed_in_grades_csv_and_on_stderr(tmp_path, capsys):
    (tmp_path / "link.ipynb").symlink_to("/etc/passwd")
    os.mkfifo(tmp_path / "pipe.ipynb")
    (tmp_path / "notes.txt").write_text("not a notebook: ignored\n")
    homework.main(["grade", str(tmp_path), "--no-sandbox", "--allow-root"])
    rows = {row[0]: row for row in _rows(tmp_path / "grades.csv")[1:]}
    assert set(rows) == {"link.ipynb", "pipe.ipynb"}
    assert rows["link.ipynb"][1:3] == ["skipped", "a symbolic link (not followed)"]
    assert rows["pipe.ipynb"][1] == "skipped" and "FIFO" in rows["pipe.ipynb"][2]
    err = capsys.readouterr().err
    assert "skipped link.ipynb: a symbolic link" in err and "skipped pipe.ipynb" in err


def test_student_folders_group_notebooks_and_links_inside_are_skipped(tmp_path):
    (tmp_path / "alice" / "ch5").mkdir(parents=True)
    shutil.copy(BOOK_NOTEBOOK, tmp_path / "alice" / "ch5" / "example_one.ipynb")
    (tmp_path / "alice" / "theorems.ipynb").symlink_to(BOOK_NOTEBOOK)
    (tmp_path / "bob").mkdir()
    shutil.copy(BOOK_NOTEBOOK, tmp_path / "bob" / "example_one.ipynb")
    assignment = homework.load_assignment(BOOK_NOTEBOOK.parent)
    found = _by_path(homework.collect_submissions(tmp_path, assignment=assignment))
    assert found["alice/ch5/example_one.ipynb"].student == "alice"
    assert found["alice/ch5/example_one.ipynb"].assignment == "example_one.ipynb"
    assert "symbolic link" in found["alice/theorems.ipynb"].skipped
    assert found["bob/example_one.ipynb"].student == "bob"


def test_flat_file_names_are_grouped_by_the_assignment_or_a_pattern(tmp_path):
    for name in ("alice_example_one.ipynb", "alice-theorems.ipynb", "bob example_one.ipynb",
                 "example_one.ipynb", "s123__landscapes.ipynb", "stray.ipynb"):
        (tmp_path / name).write_text("{}")
    assignment = homework.load_assignment(BOOK_NOTEBOOK.parent)
    found = _by_path(homework.collect_submissions(tmp_path, assignment=assignment))
    owners = {path: (s.student, s.assignment) for path, s in found.items()}
    assert owners["alice_example_one.ipynb"] == ("alice", "example_one.ipynb")
    assert owners["alice-theorems.ipynb"] == ("alice", "theorems.ipynb")
    assert owners["bob example_one.ipynb"] == ("bob", "example_one.ipynb")
    assert owners["example_one.ipynb"] == ("example_one", "example_one.ipynb")
    assert owners["s123__landscapes.ipynb"] == ("s123", "landscapes.ipynb")
    assert owners["stray.ipynb"] == ("stray", "")
    pattern = r"(?P<notebook>[a-z_]+)\.(?P<student>\w+)\.ipynb"
    (tmp_path / "theorems.carol.ipynb").write_text("{}")
    found = _by_path(homework.collect_submissions(tmp_path, assignment=assignment,
                                                  pattern=pattern))
    assert (found["theorems.carol.ipynb"].student,
            found["theorems.carol.ipynb"].assignment) == ("carol", "theorems.ipynb")


def test_an_exception_message_from_the_kernel_is_filtered():
    from resnet_theory.homework.driver import safe_error

    assert safe_error("RuntimeError", "boom") == "RuntimeError: boom"
    assert safe_error("=HYPERLINK(\"x\")", "ok") == "an exception: ok"
    text = safe_error("E", "\x1b]0;title\x07" + "y" * 200 + "\n=cmd")
    assert "\x1b" not in text and "\n" not in text and len(text) <= 83

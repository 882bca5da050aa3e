r"""The homework kit: student editions without solutions, and safe grading of submissions.

One module per job:

- ``resnet_theory.homework.student``: student editions.
  :func:`split_solutions` removes every solution from a notebook (the gated
  blocks from ``{solution-start}`` to ``{solution-end}`` with their code cells,
  and every ``{solution}`` directive); :func:`write_student_editions` does it for
  the whole book and :func:`build_student_html` builds the student HTML book.
- ``resnet_theory.homework.sandbox`` (with ``driver``, ``scratch`` and
  ``cgroups``): running one submission. The kernel runs in a ``bubblewrap``
  sandbox of its own (read-only system, environment, ``/`` and ``/dev``, only
  its scratch directory and sockets writable, small private ``/tmp`` and
  ``/dev/shm``, no network, its own PID namespace, no further user namespaces,
  ``setrlimit`` limits); the driver that runs the cells and decides the status
  runs in a second sandbox the kernel cannot see. Where the machine allows it,
  each runs in a cgroup of its own (total memory, processes, CPU share); as
  root both run as an unprivileged user, with a tmpfs of their own as scratch
  disk. Without ``bwrap``, both are separate processes with a time limit and an
  output budget. The kernel only exports the answer variables as data.
- ``resnet_theory.homework.submissions`` and ``...assignment``:
  :func:`collect_submissions` reads the untrusted submissions folder without
  following links (one folder per student, or file names matched to the
  assignment), each student's notebook once; :func:`load_assignment` says which
  exercises count.
- ``resnet_theory.homework.batch``: :func:`grade_notebook` and
  :func:`grade_folder` judge the exported data in the grader's own process
  (``...answers``) with the checks of :mod:`resnet_theory.checks` and the answer
  key, several notebooks at once, a whole folder or one shard of it.
- ``resnet_theory.homework.gradebook``, ``...marks`` and ``...reports``: the
  results, ``grades.csv`` (row by row), ``gradebook.csv`` (one row per student),
  the feedback files with their index, the pages of written answers for marking
  by hand, the signed sheet of marks (:func:`merge_marks` adds them), and the
  merge of shards (:func:`merge`).
- ``resnet_theory.homework.answer_key``: the expected answers of the
  exercises compared with a key. :func:`compute_answer_key` runs each
  assignment notebook once (its solutions are trusted) through the same
  sandbox and export as a submission and returns an :class:`AnswerKey`,
  cached as JSON keyed by each notebook's SHA-256 (:func:`write_answer_key`,
  :func:`read_answer_key`). The library holds no expected value.
- ``resnet_theory.homework.cli``: the command line (``make student`` and
  ``make grade``)::

    python -m resnet_theory.homework student --root . --html _build/student-html
    python -m resnet_theory.homework answer-key --assignment book/ch5_shamir --out key.json
    python -m resnet_theory.homework grade submissions/ --assignment book/ch5_shamir
    python -m resnet_theory.homework grade submissions/ --shard 2/3 --out shard-2
    python -m resnet_theory.homework merge shard-1 shard-2 shard-3 --out results
    python -m resnet_theory.homework merge-marks submissions/

Reference: sphinx-exercise documentation, "Gated directives" and "hide_solutions",
https://ebp-sphinx-exercise.readthedocs.io; bubblewrap,
https://github.com/containers/bubblewrap.
"""

from . import answer_key as _answer_key  # noqa: F401 (the module, for the docs)
from . import sandbox as _sandbox
from . import student as _student
from .answer_key import (
    AnswerKey,
    KeyedNotebook,
    compute_answer_key,
    read_answer_key,
    write_answer_key,
)
from .answers import load_answer
from .assignment import Assignment, load_assignment
from .batch import GradingInterrupted, grade_folder, grade_notebook
from .cli import main
from .gradebook import (
    NotebookGrade,
    merge,
    merge_marks,
    write_gradebook,
    write_grades,
    write_written_answers,
)
from .sandbox import Limits, SandboxUnavailable, find_bwrap, find_cgroups
from .student import (
    Solution,
    StudentEdition,
    auto_graded_labels,
    build_student_html,
    exercise_labels,
    solution_only_names,
    split_solutions,
    student_html_config,
    write_student_editions,
)
from .submissions import Submission, collect_submissions

#: The notebook-level metadata a student edition keeps (everything else is dropped).
NOTEBOOK_METADATA_KEPT = _student.NOTEBOOK_METADATA_KEPT
#: The cell-level metadata a student edition keeps.
CELL_METADATA_KEPT = _student.CELL_METADATA_KEPT
#: The parts of myst-nb's cell metadata a student edition keeps (figure, image).
MYSTNB_METADATA_KEPT = _student.MYSTNB_METADATA_KEPT
#: The sandbox modes of :func:`grade_folder`: ``"auto"`` (bubblewrap when it works,
#: else a loud warning), ``"require"`` (refuse without it), ``"off"`` (never).
SANDBOX_MODES = _sandbox.SANDBOX_MODES
#: The cgroup modes of :func:`grade_folder` (same meanings, for a cgroup per submission).
CGROUP_MODES = _sandbox.CGROUP_MODES

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
    "AnswerKey",
    "KeyedNotebook",
    "compute_answer_key",
    "read_answer_key",
    "write_answer_key",
    "NotebookGrade",
    "grade_notebook",
    "grade_folder",
    "write_grades",
    "write_gradebook",
    "write_written_answers",
    "merge_marks",
    "merge",
    "collect_submissions",
    "load_assignment",
    "Assignment",
    "Submission",
    "GradingInterrupted",
    "load_answer",
    "find_cgroups",
    "Limits",
    "SandboxUnavailable",
    "SANDBOX_MODES",
    "CGROUP_MODES",
    "find_bwrap",
    "main",
]

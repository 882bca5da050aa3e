"""The names of the former ``grading`` module, which is now split by job.

- :mod:`resnet_theory.homework.batch`: running a batch (``grade_folder``,
  ``grade_notebook``);
- :mod:`resnet_theory.homework.submissions` and
  :mod:`resnet_theory.homework.assignment`: the submissions folder and the
  assignment;
- :mod:`resnet_theory.homework.answers`: the exported answers, judged here;
- :mod:`resnet_theory.homework.gradebook` and :mod:`resnet_theory.homework.marks`:
  the grade book, the marks given by hand, shards;
- :mod:`resnet_theory.homework.reports`: the feedback files and the pages of
  written answers;
- :mod:`resnet_theory.homework.files`: reading and writing files safely.

This module only gathers their names, for code written against the old one.
"""

from .answers import NO_KEY, load_answer
from .assignment import Assignment, default_assignment, load_assignment
from .batch import OUTPUT_NAMES, GradingInterrupted, check_outputs, grade_folder, grade_notebook
from .files import csv_cell, csv_uncell, display_name
from .gradebook import (
    NotebookGrade,
    merge,
    merge_marks,
    write_gradebook,
    write_grades,
    write_written_answers,
)
from .marks import read_marks
from .reports import WITHHELD
from .sandbox import CGROUP_MODES, SANDBOX_MODES
from .submissions import Submission, collect_submissions

__all__ = ["NotebookGrade", "Submission", "Assignment", "grade_notebook", "grade_folder",
           "collect_submissions", "load_assignment", "write_grades", "write_gradebook",
           "write_written_answers", "merge_marks", "merge", "load_answer", "csv_cell",
           "csv_uncell", "display_name", "GradingInterrupted", "SANDBOX_MODES",
           "CGROUP_MODES", "OUTPUT_NAMES", "NO_KEY", "WITHHELD", "default_assignment",
           "read_marks", "check_outputs"]

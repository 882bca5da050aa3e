"""The HTML book builds strictly, and the pages carry what readers rely on.

One build (warnings are errors, nitpicky references) into a temporary folder,
shared by the tests below. A broken reference, a missing citation key or a
document outside the table of contents fails ``test_book_builds_without_warnings``.
"""

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def _toc_files():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        for chapter in part["chapters"]:
            files.append(chapter["file"])
            files.extend(section["file"] for section in chapter.get("sections", []))
    return files


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    out = tmp_path_factory.mktemp("book")
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    executable = jupyter_book if jupyter_book.exists() else shutil.which("jupyter-book")
    command = [str(executable), "build", "-W", "-n", "--keep-going",
               "--path-output", str(out), str(ROOT)]
    env = dict(os.environ, JUPYTER_PLATFORM_DIRS="1")
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900)
    return result, out / "_build" / "html"


def _page(html_root, file):
    return (html_root / f"{file}.html").read_text(encoding="utf-8")


def test_book_builds_without_warnings(build):
    result, _ = build
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert "WARNING" not in result.stdout + result.stderr


def test_every_toc_entry_becomes_a_page(build):
    _, html = build
    for file in _toc_files():
        assert (html / f"{file}.html").is_file(), file


def test_every_notebook_under_book_is_in_the_toc():
    listed = set(_toc_files())
    notebooks = {str(p.relative_to(ROOT).with_suffix(""))
                 for p in (ROOT / "book").rglob("*.ipynb")
                 if ".ipynb_checkpoints" not in p.parts}
    assert notebooks <= listed, notebooks - listed


def test_chapter_pages_have_theorem_boxes(build):
    _, html = build
    page = _page(html, "book/ch5_shamir/example_one")
    assert page.count('class="proof theorem') >= 3
    assert 'class="proof definition' in page


def test_solutions_are_folded_in_dropdowns(build):
    _, html = build
    for name in ("example_one", "landscapes", "theorems"):
        page = _page(html, f"book/ch5_shamir/{name}")
        exercises = len(re.findall(r'class="exercise admonition', page))
        solutions = len(re.findall(r'class="[^"]*solution[^"]*dropdown', page))
        assert exercises >= 3, name
        assert solutions == exercises, name


def test_citations_resolve_to_the_bibliography(build):
    _, html = build
    page = _page(html, "book/ch5_shamir/example_one")
    assert "Shamir" in page and "bibliography.html#id" in page


def test_figures_are_embedded(build):
    _, html = build
    for name in ("example_one", "landscapes", "theorems"):
        assert "<img" in _page(html, f"book/ch5_shamir/{name}"), name


def test_api_reference_documents_the_library(build):
    _, html = build
    page = _page(html, "book/api")
    for anchor in ("landscape.critical_points", "landscape.constrained_critical_points",
                   "residual_unit.gradient_lower_bound", "projected_sgd.skip_to_output_sgd",
                   "linear_predictors.least_squares", "plotting.use_book_style"):
        assert f'id="resnet_theory.{anchor}"' in page, anchor

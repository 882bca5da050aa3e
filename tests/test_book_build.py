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


def _notebook_pages():
    return [f for f in _toc_files() if (ROOT / f"{f}.ipynb").is_file()]


def _chapters():
    return sorted({str(Path(f).parent) for f in _notebook_pages()})


def test_the_book_has_five_chapters_of_notebooks():
    assert [Path(c).name.split("_")[0] for c in _chapters()] == ["ch1", "ch2", "ch3", "ch4",
                                                                "ch5"]


def test_every_chapter_states_theorems_in_boxes(build):
    _, html = build
    for chapter in _chapters():
        pages = [_page(html, f) for f in _notebook_pages() if f.startswith(chapter + "/")]
        boxes = sum(page.count('class="proof theorem') for page in pages)
        assert boxes >= 1, chapter


def test_every_notebook_has_three_exercises_with_folded_solutions(build):
    _, html = build
    for file in _notebook_pages():
        page = _page(html, file)
        exercises = len(re.findall(r'class="exercise admonition', page))
        solutions = len(re.findall(r'class="[^"]*solution[^"]*dropdown', page))
        assert exercises >= 3, file
        assert solutions == exercises, file


def test_every_notebook_cites_the_bibliography(build):
    _, html = build
    for file in _notebook_pages():
        assert "bibliography.html#id" in _page(html, file), file


def test_every_notebook_shows_a_figure(build):
    _, html = build
    for file in _notebook_pages():
        assert "<img" in _page(html, file), file


def test_math_is_typeset_by_mathjax(build):
    _, html = build
    for file in _notebook_pages():
        page = _page(html, file)
        assert "mathjax" in page.lower() and r"\(" in page, file


def test_api_reference_documents_the_library(build):
    _, html = build
    page = _page(html, "book/api")
    for anchor in ("landscape.critical_points", "landscape.constrained_critical_points",
                   "residual_unit.gradient_lower_bound", "projected_sgd.skip_to_output_sgd",
                   "linear_predictors.least_squares", "plotting.use_book_style",
                   "mlp.loss_and_gradient", "deep_linear.gradient",
                   "deep_linear.balanced_factorization", "near_identity.near_identity_factors",
                   "expressivity.fit_residual_network", "smooth_maps.near_identity_layers",
                   "smooth_maps.lipschitz_seminorm", "homework.grade_folder",
                   "checks.check_namespace"):
        assert f'id="resnet_theory.{anchor}"' in page, anchor

"""The HTML book builds strictly, and the pages carry what readers rely on.

One build (warnings are errors, nitpicky references) into a temporary folder,
shared by the tests below and by tests/test_browser.py (the ``book_build``
fixture of conftest.py). A broken reference, a missing citation key or a
document outside the table of contents fails ``test_book_builds_without_warnings``.
"""

import functools
import posixpath
import re
from pathlib import Path

import lxml.html
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
def build(book_build):
    """The session's strict build of the book (``book_build`` in conftest.py):
    (the finished process, the folder of its pages)."""
    return book_build.result, book_build.html


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
    # book/api.md and one page per module under book/api/
    page = _page(html, "book/api") + "".join(
        path.read_text(encoding="utf-8") for path in sorted((html / "book" / "api").glob("*.html")))
    for anchor in ("landscape.critical_points", "landscape.constrained_critical_points",
                   "residual_unit.gradient_lower_bound", "projected_sgd.skip_to_output_sgd",
                   "linear_predictors.least_squares", "plotting.use_book_style",
                   "mlp.loss_and_gradient", "deep_linear.gradient",
                   "deep_linear.balanced_factorization", "near_identity.near_identity_factors",
                   "expressivity.fit_residual_network", "smooth_maps.near_identity_layers",
                   "smooth_maps.lipschitz_seminorm", "homework.grade_folder",
                   "checks.check_namespace"):
        assert f'id="resnet_theory.{anchor}"' in page, anchor


# ------------------------------------------------------------------------- figures
# Convention (issue 12): a cell that draws a figure carries the metadata
# mystnb.figure.name/caption and mystnb.image.alt, so its image renders as a
# numbered <figure> with a <figcaption>, and the prose cites it with {numref}.
IMAGE_FILE = re.compile(r"(^|/)[^/\s]*\.(png|jpe?g|svg|gif|webp|pdf)$", re.IGNORECASE)


@functools.cache  # the tests only read the pages: parse each once
def _tree(html_root, file):
    return lxml.html.fromstring(_page(html_root, file))


def _has_class(name):
    """XPath predicate: the element's class attribute holds the class ``name``."""
    return f"contains(concat(' ', normalize-space(@class), ' '), ' {name} ')"


def _text(element):
    """The element's text, its pieces stripped and joined by single spaces."""
    return " ".join(piece.strip() for piece in element.itertext() if piece.strip())


def _first(element, xpath):
    found = element.xpath(xpath)
    return found[0] if found else None


def _alt_problem(img):
    alt = (img.get("alt") or "").strip()
    if not alt:
        return "no alt text"
    if IMAGE_FILE.search(alt) or "_images/" in alt or alt == img.get("src"):
        return f"alt text is a file name ({alt})"
    if len(alt.split()) < 3:
        return f"alt text too short to describe the figure ({alt})"
    return None


def _figure_problems(tree):
    """Every image of the article in a captioned figure with real alt text."""
    problems = []
    article = _first(tree, "//article")
    article = tree if article is None else article
    for img in article.iter("img"):
        where = img.get("src", "?").rsplit("/", 1)[-1]
        problem = _alt_problem(img)
        if problem:
            problems.append(f"image {where}: {problem}")
        if _first(img, "ancestor::figure") is None:
            problems.append(f"image {where}: not in a numbered <figure> with a caption")
    for figure in article.iter("figure"):
        caption = _first(figure, ".//figcaption")
        text = ""
        if caption is not None:
            caption_text = _first(caption, f".//*[{_has_class('caption-text')}]")
            text = _text(caption if caption_text is None else caption_text)
        if not text:
            problems.append(f"figure {figure.get('id', '?')}: no caption")
        if not figure.get("id") or _first(figure, f".//*[{_has_class('caption-number')}]") is None:
            problems.append(f"figure {figure.get('id', '?')}: no label or number")
    return problems


def test_every_image_is_a_captioned_figure_with_alt_text(build):
    _, html = build
    failures = {file: problems for file in _toc_files()
                if (problems := _figure_problems(_tree(html, file)))}
    assert not failures, "\n".join(f"{file}: {p}" for file, ps in failures.items()
                                    for p in ps)


def _numref_targets(html_root):
    """(page, id) of every {numref} link of the book."""
    targets = set()
    for file in _toc_files():
        links = _tree(html_root, file).xpath(
            f"//a[{_has_class('reference')} and {_has_class('internal')} and @href]")
        for link in links:
            if _first(link, f".//*[{_has_class('std-numref')}]") is None:
                continue
            path, _, fragment = link.get("href").partition("#")
            page = posixpath.normpath(posixpath.join(posixpath.dirname(file), path)) \
                if path else f"{file}.html"
            targets.add((page.removesuffix(".html"), fragment))
    return targets


def test_every_figure_is_referenced_with_numref(build):
    _, html = build
    cited = _numref_targets(html)
    missing = [f"{file}: figure {figure.get('id')}"
               for file in _toc_files()
               for figure in _tree(html, file).xpath("//article//figure")
               if (file, figure.get("id")) not in cited]
    assert not missing, "never cited with {numref}:\n" + "\n".join(missing)

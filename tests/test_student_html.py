"""The student edition's HTML book, as a student's browser shows it, with no network.

``python -m resnet_theory.homework student --html`` (what ``make student`` runs)
builds the book from the student notebooks with the solutions hidden; the suite builds
it once, beside the book (the ``book_build`` fixture of conftest.py). A real
Chromium (tests/test_browser.py's fixture) opens every page of it; every request
that does not go to a local file is aborted and recorded. The book's pages (the
``book_build`` fixture of conftest.py) and the student pages are also read as
HTML, TeX still as TeX, for what the student pages must keep (every page, every
figure caption) and must not show (the solutions' paragraphs). The book's own pages
are surveyed by tests/test_browser.py.

The student pages are opened with MathJax started but told not to typeset (as the
printed edition does before it rearranges the page): their math is proved by the
book's survey instead, which typesets and checks every formula of the book's pages.
That is sound because each student page loads the same MathJax with the same
configuration as the book's page and holds no formula the book's page does not hold
(both checked here, on the served HTML).

Each student page is also judged by axe-core (WCAG 2.1 A and AA) at 1280 and 390 px,
in light and dark mode, as the book's pages are (tests/test_browser.py), and at
390 px it must not scroll sideways.
"""

import re
from collections import Counter
from pathlib import Path

import lxml.html
import pytest
from test_browser import (
    FIGURES,
    PAGE_SCROLL,
    PHONE,
    UNREACHABLE_SCROLLERS,
    _Browser,
    _pages,
    _report,
    axe_in_both_modes,
    axe_report,
)
from test_pdf import print_pdf

ROOT = Path(__file__).resolve().parents[1]

STUDENT_PAGE = r"""
async () => {
  const mj = window.MathJax;
  const started = !!(mj && mj.startup && mj.startup.promise);
  if (started) await mj.startup.promise;
  return {solutions: document.querySelectorAll('.solution').length, mathjaxStarted: started};
}
"""


def _text(element):
    return re.sub(r"\s+", " ", element.text_content()).strip()


def _served(path):
    """What a page's HTML holds (before any script runs, TeX still as TeX): its text,
    the paragraphs of its solutions (40 characters or more), the captions of its
    figures outside solutions, its formulas (the TeX of each Sphinx ``.math``
    element) and the scripts that load and configure MathJax."""
    tree = lxml.html.parse(str(path)).getroot()
    solution = "contains(concat(' ', normalize-space(@class), ' '), ' solution ')"
    math = "contains(concat(' ', normalize-space(@class), ' '), ' math ')"
    paragraphs = [_text(p) for p in tree.xpath(f"//*[{solution}]//p")]
    mathjax = [(script.get("src"), script.text) for script in tree.xpath("//script")
               if "mathjax" in (script.get("src") or "").lower()
               or "MathJax" in (script.text or "")]
    return {"text": _text(tree.body),
            "math": [_text(element) for element in tree.xpath(f"//*[{math}]")],
            "mathjax": mathjax,
            "solution_paragraphs": [p for p in paragraphs if len(p) >= 40],
            "captions": [_text(caption) for caption in tree.xpath(
                f"//article//figure[not(ancestor::*[{solution}])]//figcaption")]}


@pytest.fixture(scope="module")
def student(chromium, request):
    """Per page of the student edition: what the browser saw; and the book's pages."""
    # The student edition is built beside the book, once per run (conftest.py).
    book_build = request.getfixturevalue("book_build")
    result = book_build.student
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]
    html = book_build.source / "_build" / "student-html"
    seen, judged = {}, {}
    browser = _Browser(chromium)
    browser.context.add_init_script(print_pdf.DEFER_TYPESETTING)  # see the module's text
    try:
        for page in _pages(html):
            record = dict(browser.open(html / page))
            record.update(browser.page.evaluate(STUDENT_PAGE))
            record["figures"] = browser.page.evaluate(FIGURES)
            record["axe"] = axe_in_both_modes(browser.page, 1280, judged)
            browser.page.set_viewport_size(PHONE)
            # what book.js does after a change of width (its own call waits 250 ms)
            browser.page.evaluate("async () => { if (window.bookRelayoutMath) "
                                  "await window.bookRelayoutMath(); }")
            record["phone"] = browser.page.evaluate(PAGE_SCROLL)
            record["axe"].update(axe_in_both_modes(
                browser.page, 390, judged,
                unreachable=browser.page.evaluate(UNREACHABLE_SCROLLERS)))
            seen[page] = record
    finally:
        browser.close()
    return {"student": seen,
            "student_html": {page: _served(html / page) for page in seen},
            "book": {page: _served(book_build.html / page) for page in _pages(book_build.html)}}


def test_the_book_has_solutions_to_hide(student):
    assert sum(len(p["solution_paragraphs"]) for p in student["book"].values()) >= 14


def test_student_edition_has_every_page(student):
    assert set(student["student"]) == set(student["book"])


def test_no_student_page_requests_anything_from_another_host(student):
    failures = {page: r["requests"] for page, r in student["student"].items() if r["requests"]}
    assert not failures, _report(failures)


def test_no_console_errors_on_student_pages(student):
    failures = {page: r["errors"] for page, r in student["student"].items() if r["errors"]}
    assert not failures, _report(failures)


def test_mathjax_starts_on_every_student_page_that_loads_it(student):
    failures = {page: ["MathJax is loaded but did not start"]
                for page, r in student["student"].items()
                if student["student_html"][page]["mathjax"] and not r["mathjaxStarted"]}
    assert not failures, _report(failures)


def test_student_pages_load_the_book_s_mathjax_and_only_the_book_s_formulas(student):
    # What lets the book's survey (tests/test_browser.py), which typesets and checks
    # every formula of the book's pages, stand for the student pages' math.
    assert sum(len(p["math"]) for p in student["student_html"].values()) > 1000
    failures = {}
    for page, served in student["student_html"].items():
        book = student["book"][page]
        problems = [] if served["mathjax"] == book["mathjax"] else [
            "MathJax is loaded or configured differently from the book's page"]
        extra = Counter(served["math"]) - Counter(book["math"])
        problems += [f"a formula the book's page does not have: {tex[:80]}" for tex in extra]
        if problems:
            failures[page] = problems
    assert not failures, _report(failures)


def test_student_edition_keeps_every_figure_caption(student):
    failures = {}
    for page, r in student["student"].items():
        book = student["book"].get(page, {"captions": []})
        missing = [c for c in book["captions"]
                   if c not in student["student_html"][page]["captions"]]
        if missing or r["figures"]["captioned"] < r["figures"]["figures"]:
            failures[page] = [f"caption lost: {c}" for c in missing] or ["uncaptioned figure"]
    assert not failures, _report(failures)


def test_student_edition_shows_no_solution(student):
    failures = {}
    for page, r in student["student"].items():
        leaked = [p for p in student["book"].get(page, {}).get("solution_paragraphs", [])
                  if p in student["student_html"][page]["text"]]
        problems = [f"{r['solutions']} solution boxes"] if r["solutions"] else []
        problems += [f"solution text: {p[:80]}" for p in leaked]
        if problems:
            failures[page] = problems
    assert not failures, _report(failures)


def test_no_student_page_scrolls_sideways_at_390px(student):
    failures = {page: [f"scrollWidth {r['phone']['scrollWidth']} > clientWidth "
                       f"{r['phone']['clientWidth']}; beyond: {r['phone']['beyond']}"]
                for page, r in student["student"].items()
                if r["phone"]["scrollWidth"] > r["phone"]["clientWidth"] + 1}
    assert not failures, _report(failures)


def test_axe_finds_no_critical_or_serious_violation_on_student_pages(student, capsys):
    table, failures = axe_report(student["student"])
    with capsys.disabled():
        print("\nstudent edition: " + table)
    assert not failures, _report(failures)

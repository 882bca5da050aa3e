"""The lecture decks (``make slides``, ``book/_ext/slides.py``): one reveal.js deck per
chapter, a view of the notebooks.

The decks are built once for this file from the suite's HTML build of the book and
printed with the worker's Chromium. What is checked:

- the notebooks' slide tags are those of ``slides.TAGS`` (``slides.py tag`` would change
  nothing);
- every item the notebooks select, found here from their cells directly (each
  theorem, lemma, proposition and exercise label, each tagged cell, each tagged proof
  idea), is on its chapter's deck with its title, figure or heading;
- a deck holds no text the notebooks do not: every paragraph, heading, list item and
  note is a run of words of the chapter's notebooks (read through the Colab converter,
  the only other words being the deck's title) and no sentence of a solution is on it;
- in Chromium, each deck opened from disk with the network blocked: every formula
  typeset (no TeX left, no MathJax error), every image loaded, no console error, the
  keyboard walks through every slide, speaker notes on every slide but the titles (an
  opening is itself the prose) and the exercises (whose surroundings are solutions), no
  slide whose content overflows 1280x720 or whose type had to shrink below 18 px; 15
  to 32 slides a deck;
- each deck's PDF has one page per slide, of the slide's proportions, and no slide
  taller than its page in reveal.js's print layout.
"""

import importlib.util
import json
import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
EXT = ROOT / "book" / "_ext"


def _load(name):
    sys.path.insert(0, str(EXT))
    spec = importlib.util.spec_from_file_location(name, EXT / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


slides = _load("slides")
editions = _load("editions")

STATEMENT = re.compile(r"^(`{3,}|:{3,})\{(prf:theorem|prf:lemma|prf:proposition|exercise)\}"
                       r"(.*)\n(?::[\w-]+:.*\n)*?:label:\s*(\S+)", re.M)
WORD = re.compile(r"[A-Za-z0-9]+")


@pytest.fixture(scope="module")
def decks(book_build, tmp_path_factory):
    assert book_build.result.returncode == 0, book_build.result.stderr[-2000:]
    out = tmp_path_factory.mktemp("slides")
    counts = slides.build_decks(book_build.html, out)
    return out, counts


@pytest.fixture(scope="module")
def printed(decks, chromium):
    out, counts = decks
    cut = slides.print_decks(out, list(counts), browser=chromium)
    return out, counts, cut


def _chapters():
    return [(number, index, notebooks) for number, (index, notebooks)
            in enumerate(slides.chapters(), start=1)]


def _html(path):
    import lxml.html

    return lxml.html.parse(str(path)).getroot()


def _slides_of(tree):
    return tree.xpath("//div[contains(@class,'slides')]/section")


def _words(text):
    return " ".join(WORD.findall(text))


def _solution_span(notebook):
    """Indices of the cells of the notebook's solutions, found from the gates' text."""
    inside, found = False, set()
    for index, cell in enumerate(notebook.cells):
        opens = cell.cell_type == "markdown" and re.search(r"\{solution-start\}", cell.source)
        closes = cell.cell_type == "markdown" and re.search(r"\{solution-end\}", cell.source)
        if inside or opens:
            found.add(index)
        if opens:
            inside = True
        if closes:
            inside = False
    return found


def expected_items(notebook, name):
    """``{key: what the slide must show}`` read from the notebook's cells and tags."""
    wanted = {}
    solutions = _solution_span(notebook)
    for index, cell in enumerate(notebook.cells):
        tags = cell.metadata.get("tags", [])
        if index not in solutions and cell.cell_type == "markdown":
            for match in STATEMENT.finditer(cell.source):
                wanted[match[4]] = ("box", match[3].strip())
        for tag in tags:
            if tag == "slide" and cell.cell_type == "code":
                wanted[cell.metadata["mystnb"]["figure"]["name"]] = ("figure", "")
            elif tag == "slide":
                heading = cell.source.split("\n")[0].lstrip("#").strip()
                wanted[f"{name}:{cell['id']}"] = ("heading", heading)
            elif tag.startswith("slide-idea="):
                wanted["idea:" + tag.partition("=")[2]] = ("idea", "Idea")
    return wanted


def test_tags_are_the_table(tmp_path):
    """The notebooks carry exactly the tags of slides.TAGS (run `slides.py tag`)."""
    assert slides.tag_notebooks(check=True) == []


def test_every_selected_item_is_on_its_deck(decks):
    out, counts = decks
    assert sorted(counts) == [f"slides-ch{n}.html" for n in range(1, 6)]
    for number, _, notebooks in _chapters():
        tree = _html(out / f"slides-ch{number}.html")
        sections = {}
        for section in _slides_of(tree):
            for anchor in section.xpath(".//a[@id]"):
                sections[anchor.get("id")] = section
        for path in notebooks:
            name = path.relative_to(ROOT).as_posix()
            items = expected_items(nbformat.read(path, as_version=4), name)
            assert items, name
            for key, (kind, text) in items.items():
                assert key in sections, f"{name}: {key} is missing from slides-ch{number}"
                section = sections[key]
                shown = _words(section.text_content())
                if kind == "figure":
                    image = section.xpath(".//img[contains(@class,'slide-figure')]")
                    assert image and (out / image[0].get("src")).is_file(), key
                    assert re.search(r"Figure \d+ \d+", shown), key
                elif kind == "box":
                    # the box's title, without its math, is on the slide
                    plain = _words(re.sub(r"\$[^$]*\$|\{[\w:]+\}`[^`]*`", " ", text))
                    for piece in [p for p in re.split(r"\s{2,}", plain) if p]:
                        assert piece.split()[0] in shown, (key, piece)
                    assert re.search(r"(Theorem|Lemma|Proposition|Exercise) \d+ \d+",
                                     shown), key
                else:
                    first = _words(text).split()[:3]
                    assert " ".join(first) in shown, (key, first)


def _reference(number, notebooks, converter):
    """The words of a chapter's notebooks, through the Colab converter, and of its
    solutions alone."""
    from markdown_it import MarkdownIt

    render = MarkdownIt("commonmark").enable("table")
    import lxml.html

    def text(markdown):
        if not markdown.strip():
            return ""
        return lxml.html.fromstring(f"<div>{render.render(markdown)}</div>").text_content()

    words, solutions = [], []
    for path in notebooks:
        notebook = nbformat.read(path, as_version=4)
        docname = path.relative_to(ROOT).with_suffix("").as_posix()
        colab = converter.notebook(notebook, docname)
        for cell in notebook.cells:  # a figure's alt text can be its slide's notes
            alt = cell.metadata.get("mystnb", {}).get("image", {}).get("alt", "")
            words.append(_words(alt))
        for cell in colab.cells:
            if cell.cell_type == "markdown":
                content = text(cell.source)
                words.append(_words(content))
                for details in re.findall(r"(?s)<summary><b>Solution.*?</summary>(.*?)</details>",
                                          cell.source):
                    solutions.append(_words(text(details)))
    return " " + " ".join(words) + " ", solutions


def test_decks_hold_only_the_notebooks_text(decks, book_build):
    out, _ = decks
    converter = editions.ColabConverter(book_build.html, "../", "", ROOT / "book" /
                                        "references.bib", {})
    for number, index, notebooks in _chapters():
        reference, solutions = _reference(number, notebooks, converter)
        title = converter.pages[index]
        allowed = reference + f" Chapter {number} " + _words(title) + " "
        tree = _html(out / f"slides-ch{number}.html")
        deck_words = []
        for section in _slides_of(tree):
            for block in section.xpath(".//p|.//li[not(.//p)]|.//h1|.//h2|.//h3|"
                                       ".//aside[contains(@class,'notes')]//p"):
                words = _words(block.text_content())
                deck_words.append(words)
                if words:
                    assert f" {words} " in allowed, (
                        f"slides-ch{number}: text not in the notebooks: {words[:200]!r}")
        deck = " " + " ".join(deck_words) + " "
        for solution in solutions:
            words = solution.split()
            for start in range(0, max(len(words) - 11, 0), 6):
                run = " ".join(words[start:start + 12])
                if reference.count(f" {run} ") <= 1:  # only in the solution
                    assert f" {run} " not in deck, f"slides-ch{number} shows a solution: {run}"


SURVEY = r"""() => {
  const slides = [...document.querySelectorAll('.reveal .slides > section')];
  const raw = [];
  const walker = document.createTreeWalker(document.querySelector('.reveal .slides'),
                                           NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.parentElement.closest('mjx-container, code, pre, aside.notes')) continue;
    if (/\$|\\\(|\\\[|\\begin\{|\\frac|\\mathrm/.test(node.textContent)) {
      raw.push(node.textContent.slice(0, 80));
    }
  }
  return {
    total: Reveal.getTotalSlides(),
    raw,
    errors: document.querySelectorAll('mjx-merror, [data-mjx-error]').length,
    formulas: document.querySelectorAll('.reveal .slides mjx-container').length,
    images: [...document.images].filter(i => !(i.complete && i.naturalWidth > 0))
      .map(i => i.getAttribute('src')),
    notes: Reveal.hasPlugin('notes'),
    slides: slides.map(s => ({kind: s.dataset.kind, item: s.dataset.item,
      notes: (s.querySelector('aside.notes') || {textContent: ''}).textContent.trim().length})),
  };
}"""

MEASURE = r"""() => {
  const s = Reveal.getCurrentSlide().closest('.slides > section');
  const box = s.getBoundingClientRect();
  let bottom = box.top, right = box.left;
  for (const e of s.querySelectorAll('p, li, h1, h2, h3, img, mjx-container, blockquote')) {
    if (e.closest('aside.notes')) continue;
    const r = e.getBoundingClientRect();
    bottom = Math.max(bottom, r.bottom); right = Math.max(right, r.right);
  }
  const scale = Reveal.getScale();
  return {index: Reveal.getIndices().h, last: Reveal.isLastSlide(),
          font: parseFloat(getComputedStyle(s).fontSize),
          over: (bottom - box.top) / scale - s.offsetHeight,
          wide: (right - box.left) / scale - s.offsetWidth,
          scroll: s.scrollHeight - s.clientHeight};
}"""


def test_decks_in_the_browser(decks, chromium):
    out, counts = decks
    context = chromium.new_context(viewport={"width": slides.WIDTH, "height": slides.HEIGHT})
    offsite, problems = [], []
    context.route(re.compile(r"^(?!file:).*"),
                  lambda route: (offsite.append(route.request.url), route.abort()))
    try:
        page = context.new_page()
        page.on("console", lambda m: problems.append(m.text) if m.type in (
            "error", "warning") else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        for name, count in counts.items():
            slides.open_deck(page, out / name)
            survey = page.evaluate(SURVEY)
            assert 15 <= survey["total"] <= 32, (name, survey["total"])
            assert survey["total"] == count == len(survey["slides"])
            assert survey["formulas"] > 20 and survey["errors"] == 0, name
            assert survey["raw"] == [], (name, survey["raw"][:5])
            assert survey["images"] == [], (name, survey["images"])
            assert survey["notes"], f"{name}: no speaker view (notes plugin)"
            for number, slide in enumerate(survey["slides"]):
                if slide["kind"] not in ("deck-title", "title", "exercise"):
                    assert slide["notes"] > 40, f"{name}, slide {number + 1}: no notes"
            # each slide the keys reach is measured as reveal.js shows it (slidechanged)
            page.evaluate(f"""() => {{ const measure = {MEASURE};
                window.deckSeen = [measure()];
                Reveal.on('slidechanged', () => window.deckSeen.push(measure())); }}""")
            page.locator(".reveal").focus()
            for _ in range(count - 1):
                page.keyboard.press("ArrowRight")
            seen = page.evaluate("window.deckSeen")
            assert [s["index"] for s in seen] == list(range(count)), name
            assert seen[-1]["last"], name
            small = [(s["index"] + 1, s["font"]) for s in seen if s["font"] < slides.MIN_FONT]
            assert small == [], f"{name}: type below {slides.MIN_FONT} px: {small}"
            overflowing = [(s["index"] + 1, round(s["over"]), round(s["wide"]))
                           for s in seen if s["over"] > 1 or s["wide"] > 1 or s["scroll"] > 1]
            assert overflowing == [], f"{name}: slides overflowing 1280x720: {overflowing}"
    finally:
        context.close()
    assert offsite == [], offsite[:5]
    assert problems == [], problems[:5]


def test_deck_pdfs_have_a_page_per_slide(printed):
    from pypdf import PdfReader

    out, counts, cut = printed
    assert cut == {name: [] for name in counts}, f"slides taller than their page: {cut}"
    for name, count in counts.items():
        reader = PdfReader(out / name.replace(".html", ".pdf"))
        assert len(reader.pages) == count, name
        for page in reader.pages:
            box = page.mediabox
            assert abs(float(box.width) / float(box.height) - 16 / 9) < 0.01, name
    assert json.loads((out / "decks.json").read_text()) == counts

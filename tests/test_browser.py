"""The built book as a reader's browser shows it, with no network.

A real Chromium (the system's, driven by Playwright's Python API, so nothing is
downloaded at test time) opens every HTML page of the book built once per session
by the ``book_build`` fixture of conftest.py (the student edition's pages:
tests/test_student_html.py). The browser is offline, and every request that does not go
to a local file is recorded: the book must render from the build folder alone. For each page:

- **offline**: no request to any other host (a page may *link* to GitHub, Binder
  or Colab, but loads nothing from them);
- **math**: MathJax (served from ``_static/mathjax``) finished; every formula
  is typeset (every Sphinx ``.math`` element holds a MathJax container), none
  is a MathJax error (``merror``, or an undefined macro shown in red), and no raw
  ``$$``, ``\\(``, ``\\[`` or ``\\begin{`` is left in the text outside code;
- **images**: every ``<img>`` loaded, with ``naturalWidth > 0``;
- **layout at 1280 px**: no element of the article extends past the content
  column (the article's content box). Rule: an element whose box crosses the
  column edge fails unless an ancestor inside the article clips or scrolls it
  (``overflow-x`` other than ``visible``) -- code cells, tables of outputs and
  display equations scroll inside their own box by design, and that box itself
  must fit. Only the outermost offending element is reported;
- **display equations fit**: every display equation fits the column without
  scrolling (the book's standard: split long ones with ``aligned``/``split``);
  offenders are listed with their TeX;
- **layout at 390 px**: no page-level horizontal scroll
  (``scrollWidth <= clientWidth + 1`` on the document element);
- **solutions**: every solution dropdown is closed on load and opens on click;
- **theorem boxes**: every ``{prf:...}`` directive of the page's source is a
  rendered box with a title;
- **console**: no console error and no uncaught exception.

Besides the survey: the controls a reader taps (the phone's drawers, the desktop
sidebar button, a solution's title), and the search page opened from disk, which
shows a snippet of every page it finds.

The browser is ``$CHROMIUM``, else Debian's ``chromium-headless-shell``, else
``chromium`` or ``chromium-browser`` (``_chromium`` in tests/conftest.py). Where
none is found, the tests are skipped with a message saying how to install one;
under ``CI=true`` they fail instead.
"""

import json
import os
import re
import time
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

ROOT = Path(__file__).resolve().parents[1]
DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
PAGE_TIMEOUT_MS = 60_000
NOT_PAGES = {"_static", "_sources", "_images"}


REDIRECT = re.compile(r'<meta http-equiv="refresh" content="0; url=([^"]+)"', re.IGNORECASE)


def _pages(html_root):
    """Every HTML page of a build (not the redirect of the root index.html)."""
    pages = []
    for path in sorted(html_root.rglob("*.html")):
        relative = path.relative_to(html_root)
        if NOT_PAGES & set(relative.parts):
            continue
        redirect = REDIRECT.search(path.read_text(encoding="utf-8")[:2000])
        if redirect:
            assert (path.parent / redirect.group(1)).is_file(), f"{relative} redirects nowhere"
            continue
        pages.append(relative.as_posix())
    return pages


# --------------------------------------------------------------- page inspection (JS)
# Run in the page once MathJax has finished: formulas, errors, raw TeX, images.
MATH_AND_IMAGES = r"""
async () => {
  const mj = window.MathJax;
  const hasMathJax = !!(mj && mj.startup && mj.startup.promise);
  if (hasMathJax) { await mj.startup.promise; }
  const formulas = [], errors = [];
  if (hasMathJax && mj.startup.document) {
    for (const item of mj.startup.document.math) {
      formulas.push({tex: item.math, display: item.display});
      let mml = '';
      try { mml = mj.startup.toMML(item.root); } catch (e) { mml = ''; }
      const root = item.typesetRoot;
      if (/<merror/.test(mml) || /mathcolor="red"/.test(mml)
          || (root && root.querySelector && root.querySelector('mjx-merror'))) {
        errors.push(item.math);
      }
    }
  }
  const untypeset = Array.from(document.querySelectorAll('.math'))
    .filter(el => !el.querySelector('mjx-container'))
    .map(el => el.textContent.trim().slice(0, 120));
  const raw = [];
  const skip = 'pre, code, script, style, textarea, noscript, mjx-container, .highlight';
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const pattern = /\$\$|\\\(|\\\[|\\begin\{/;
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.parentElement.closest(skip)) continue;
    if (pattern.test(node.textContent)) raw.push(node.textContent.trim().slice(0, 120));
  }
  const images = [];
  for (const img of Array.from(document.images)) {
    if (!img.complete) {
      await Promise.race([new Promise(r => { img.addEventListener('load', r);
                                              img.addEventListener('error', r); }),
                          new Promise(r => setTimeout(r, 10000))]);
    }
    images.push({src: img.getAttribute('src'), naturalWidth: img.naturalWidth});
  }
  return {hasMathJax, formulas, errors, untypeset, raw, images};
}
"""

# Solution dropdowns (sphinx-togglebutton on sphinx-exercise's solutions).
DROPDOWNS_ON_LOAD = r"""
() => Array.from(document.querySelectorAll('.solution')).map((box, i) => {
  const body = Array.from(box.children).filter(c => !c.classList.contains('admonition-title'));
  return {id: box.id || String(i), dropdown: box.classList.contains('dropdown'),
          hidden: box.classList.contains('toggle-hidden'),
          // sphinx-togglebutton hides a closed body with visibility: hidden and
          // zero height, which plain checkVisibility() does not look at
          bodyVisible: body.some(c => c.checkVisibility({visibilityProperty: true})
                                      && c.getBoundingClientRect().height > 0)};
})
"""

OPEN_DROPDOWNS = r"""
async () => {
  const boxes = Array.from(document.querySelectorAll('.solution.dropdown'));
  if (!boxes.length) return [];
  for (const box of boxes) {
    const title = box.querySelector(':scope > .admonition-title');
    if (title) title.click();
  }
  const state = () => boxes.map((box, i) => {
    const body = Array.from(box.children).filter(c => !c.classList.contains('admonition-title'));
    return {id: box.id || String(i), open: !box.classList.contains('toggle-hidden')
            && body.length > 0
            && body.every(c => c.checkVisibility({visibilityProperty: true})
                               && c.getBoundingClientRect().height > 0)};
  });
  // The toggles' transitions are taken to their end (what is judged is the open
  // state, not the motion; the reader's tap in test_tapping_a_solution_title_opens_
  // the_solution waits them out), then wait for any left (at most two seconds).
  const frame = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const start = performance.now();
  await frame();
  document.getAnimations().forEach(a => a.finish());
  while (performance.now() - start < 2000
         && (document.getAnimations().some(a => a.playState === 'running')
             || !state().every(s => s.open))) {
    await frame();
  }
  return state();
}
"""

THEOREM_BOXES = r"""
() => Array.from(document.querySelectorAll('div.proof')).map(box => {
  const title = box.querySelector(':scope > .admonition-title');
  const r = box.getBoundingClientRect();
  // sphinx-proof gives a proof box no title element: it opens with "Proof."
  const lead = box.classList.length === 2 && box.firstElementChild
    ? box.firstElementChild.textContent.trim() : '';
  const text = title ? title.textContent.trim() : (lead.startsWith('Proof') ? 'Proof' : '');
  return {id: box.id, title: text.slice(0, 80),
          inDropdown: !!box.closest('.dropdown'),
          visible: box.checkVisibility() && r.width > 0 && r.height > 0};
})
"""

# Elements of the article that cross the content column, and display equations
# wider than their box. Describes the outermost offenders only.
LAYOUT = r"""
() => {
  const article = document.querySelector('article.bd-article') || document.querySelector('main');
  if (!article) return {column: null, wide: [], equations: []};
  const cs = getComputedStyle(article), r = article.getBoundingClientRect();
  const left = r.left + parseFloat(cs.paddingLeft), right = r.right - parseFloat(cs.paddingRight);
  const clipped = el => {
    for (let a = el.parentElement; a && a !== article; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== 'visible') return true;
    }
    return false;
  };
  const describe = el => {
    const id = el.id ? '#' + el.id : '';
    const cls = typeof el.className === 'string' && el.className
      ? '.' + el.className.trim().split(/\s+/).slice(0, 3).join('.') : '';
    const section = el.closest('section[id]');
    return el.tagName.toLowerCase() + id + cls + (section ? ' in #' + section.id : '');
  };
  const wide = [], offenders = [];
  for (const el of article.querySelectorAll('*')) {
    const b = el.getBoundingClientRect();
    if (b.width === 0 || b.height === 0) continue;
    if (b.right <= right + 1 && b.left >= left - 1) continue;
    if (offenders.some(o => o.contains(el))) continue;
    if (clipped(el)) continue;
    offenders.push(el);
    wide.push({element: describe(el), left: Math.round(b.left - left),
               right: Math.round(b.right - right),
               text: (el.textContent || '').trim().slice(0, 100)});
  }
  const items = (window.MathJax && MathJax.startup && MathJax.startup.document)
    ? Array.from(MathJax.startup.document.math) : [];
  const equations = [];
  for (const item of items) {
    const c = item.typesetRoot;
    if (!item.display || !c || !c.checkVisibility()) continue;
    const math = c.querySelector('mjx-math') || c;
    const need = Math.max(math.getBoundingClientRect().width, c.scrollWidth);
    const room = c.clientWidth || c.getBoundingClientRect().width;
    if (need > room + 1 || c.getBoundingClientRect().right > right + 1) {
      equations.push({tex: item.math.trim().replace(/\s+/g, ' '),
                      width: Math.round(need), column: Math.round(right - left)});
    }
  }
  return {column: Math.round(right - left), wide, equations};
}
"""

PAGE_SCROLL = r"""
async () => {
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const d = document.documentElement;
  const beyond = [];
  if (d.scrollWidth > d.clientWidth + 1) {
    for (const el of document.body.querySelectorAll('*')) {
      const b = el.getBoundingClientRect();
      if (b.width === 0 || b.right <= d.clientWidth + 1) continue;
      if (beyond.some(o => o.el.contains(el))) continue;
      let a = el.parentElement, clipped = false;
      for (; a && a !== document.body; a = a.parentElement) {
        if (getComputedStyle(a).overflowX !== 'visible') { clipped = true; break; }
      }
      const cls = typeof el.className === 'string' && el.className
        ? '.' + el.className.trim().split(/\s+/)[0] : '';
      if (!clipped) beyond.push({el, right: Math.round(b.right),
        tag: el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + cls,
        text: (el.textContent || '').trim().slice(0, 80)});
    }
  }
  return {scrollWidth: d.scrollWidth, clientWidth: d.clientWidth,
          beyond: beyond.slice(0, 10).map(({el, ...rest}) => rest)};
}
"""

# Figures of the article outside solutions, and their captions.
# how many, how many with a caption, and the captions.
FIGURES = r"""
() => {
  const figures = Array.from(document.querySelectorAll('article figure'))
    .filter(f => !f.closest('.solution'));
  return {figures: figures.length,
          captioned: figures.filter(f => f.querySelector('figcaption')).length,
          captions: figures.map(f => (f.querySelector('figcaption') || {}).textContent || '')
                           .map(t => t.replace(/\s+/g, ' ').trim().slice(0, 60))};
}
"""


def _prf_directives(source_file):
    """How many {prf:...} boxes the page's source (markdown cells) declares."""
    pattern = re.compile(r"^\s*(`{3,}|:{3,})\{prf:[a-z]+\}", re.MULTILINE)
    if source_file.suffix == ".ipynb":
        cells = nbformat.read(source_file, as_version=4).cells
        text = "\n".join(c.source for c in cells if c.cell_type == "markdown")
    else:
        text = source_file.read_text(encoding="utf-8")
    return len(pattern.findall(text))


def _source_of(page):
    stem = ROOT / page.removesuffix(".html")
    return next((stem.with_suffix(s) for s in (".ipynb", ".md") if stem.with_suffix(s).is_file()),
                None)


class _Browser:
    """One tab of ``chromium`` in a context of its own, the network cut off; records
    what each page asks for.

    The context is offline: Chromium fails every network request (file: URLs are
    not network requests) and still reports it, so every request is seen. (Routing
    every request through Playwright instead costs a round trip to Python each, and
    turns off the browser's cache.)"""

    def __init__(self, chromium):
        self.context = chromium.new_context(viewport=DESKTOP, service_workers="block",
                                            offline=True)
        self.page = self.context.new_page()
        self.page.set_default_timeout(PAGE_TIMEOUT_MS)
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda error: self.record["errors"].append(str(error)))
        self.page.on("request", self._request)
        self.record = None

    def _request(self, request):
        if not request.url.startswith(("file:", "data:", "blob:", "about:")):
            self.record["requests"].append(request.url)

    def _console(self, message):
        if message.type == "error":
            self.record["errors"].append(message.text)

    def open(self, path, viewport=DESKTOP):
        self.record = {"requests": [], "errors": []}
        if self.page.viewport_size != viewport:
            # Resize an empty tab: resizing the last page would lay it out again for nothing.
            self.page.goto("about:blank")
            self.page.set_viewport_size(viewport)
        self.page.goto(path.as_uri(), wait_until="load")
        # sphinx-togglebutton turns the solution boxes into dropdowns once the page
        # has loaded; inspect them only after it has (it marks each with "toggle").
        self.page.wait_for_function(
            "Array.from(document.querySelectorAll('.solution.dropdown'))"
            ".every(box => box.classList.contains('toggle'))", timeout=15_000)
        return self.record

    def close(self):
        self.context.close()


def _survey_book(browser, html_root):
    """Visit every page of the built book and return what each check needs."""
    survey = {}
    for page in _pages(html_root):
        record = browser.open(html_root / page)
        result = dict(record)
        result.update(browser.page.evaluate(MATH_AND_IMAGES))
        result["dropdowns"] = browser.page.evaluate(DROPDOWNS_ON_LOAD)
        result["figures"] = browser.page.evaluate(FIGURES)
        result["boxes"] = browser.page.evaluate(THEOREM_BOXES)
        result["opened"] = browser.page.evaluate(OPEN_DROPDOWNS)
        result["layout"] = browser.page.evaluate(LAYOUT)  # with every solution open
        browser.page.set_viewport_size(PHONE)
        result["phone"] = browser.page.evaluate(PAGE_SCROLL)
        survey[page] = result
    return survey


@pytest.fixture(scope="module")
def survey(book_build, chromium, tmp_path_factory):
    """Everything the browser saw, per page of the book: {"book": {...}}."""
    # Judge the pages even when the strict build only warned (test_book_build.py fails then).
    assert (book_build.html / "index.html").is_file(), \
        (book_build.result.stdout + book_build.result.stderr)[-4000:]
    start = time.monotonic()
    browser = _Browser(chromium)
    try:
        book = _survey_book(browser, book_build.html)
    finally:
        browser.close()
    summary = Path(os.environ.get("BROWSER_SURVEY", tmp_path_factory.mktemp("survey")
                                  / "survey.json"))
    summary.write_text(json.dumps({"seconds": round(time.monotonic() - start, 1),
                                   "formulas": {p: len(r["formulas"]) for p, r in book.items()},
                                   "book": book}, indent=1))
    return {"book": book}


def _report(failures):
    return "\n".join(f"{page}: {what}" for page, items in failures.items() for what in items)


def test_the_book_has_pages_to_check(survey):
    pages = survey["book"]
    assert "book/intro.html" in pages and len(pages) >= 20, sorted(pages)


def test_no_page_requests_anything_from_another_host(survey):
    failures = {page: r["requests"] for page, r in survey["book"].items() if r["requests"]}
    assert not failures, _report(failures)


def test_mathjax_is_served_from_the_build_and_finishes(survey):
    failures = {page: ["MathJax did not start"] for page, r in survey["book"].items()
                if (r["untypeset"] or r["formulas"]) and not r["hasMathJax"]}
    assert not failures, _report(failures)


def test_every_formula_is_typeset(survey):
    failures = {page: [f"not typeset: {t}" for t in r["untypeset"]]
                for page, r in survey["book"].items() if r["untypeset"]}
    assert not failures, _report(failures)


def test_no_formula_is_a_mathjax_error(survey):
    failures = {page: [f"MathJax error in: {t}" for t in r["errors"]]
                for page, r in survey["book"].items() if r["errors"]}
    assert not failures, _report(failures)


def test_no_raw_tex_is_left_in_the_text(survey):
    failures = {page: [f"raw TeX: {t}" for t in r["raw"]]
                for page, r in survey["book"].items() if r["raw"]}
    assert not failures, _report(failures)


def test_every_chapter_page_has_typeset_math(survey):
    chapters = {page: r for page, r in survey["book"].items() if re.match(r"book/ch\d", page)}
    assert chapters
    failures = {page: ["no typeset formula"] for page, r in chapters.items()
                if not r["formulas"]}
    assert not failures, _report(failures)


def test_every_image_loads(survey):
    failures = {page: [f"image did not load: {i['src']}" for i in r["images"]
                       if i["naturalWidth"] <= 0]
                for page, r in survey["book"].items()}
    failures = {page: items for page, items in failures.items() if items}
    assert not failures, _report(failures)


def test_nothing_is_wider_than_the_column_at_1280px(survey):
    failures = {page: [f"{w['element']} crosses the column (left {w['left']} px, "
                       f"right +{w['right']} px): {w['text']}" for w in r["layout"]["wide"]]
                for page, r in survey["book"].items() if r["layout"]["wide"]}
    assert not failures, _report(failures)


def test_every_display_equation_fits_the_column(survey):
    failures = {page: [f"{e['width']} px in a {e['column']} px column: {e['tex']}"
                       for e in r["layout"]["equations"]]
                for page, r in survey["book"].items() if r["layout"]["equations"]}
    assert not failures, ("display equations to split (aligned/split):\n"
                          + _report(failures))


def test_no_horizontal_scroll_at_390px(survey):
    failures = {page: [f"scrollWidth {r['phone']['scrollWidth']} > clientWidth "
                       f"{r['phone']['clientWidth']}; beyond: {r['phone']['beyond']}"]
                for page, r in survey["book"].items()
                if r["phone"]["scrollWidth"] > r["phone"]["clientWidth"] + 1}
    assert not failures, _report(failures)


def test_solution_dropdowns_are_closed_on_load(survey):
    failures = {page: [f"solution {d['id']} is open on load" for d in r["dropdowns"]
                       if not d["dropdown"] or not d["hidden"] or d["bodyVisible"]]
                for page, r in survey["book"].items()}
    failures = {page: items for page, items in failures.items() if items}
    assert not failures, _report(failures)


def test_solution_dropdowns_open_on_click(survey):
    failures = {page: [f"solution {d['id']} did not open" for d in r["opened"] if not d["open"]]
                for page, r in survey["book"].items()}
    failures = {page: items for page, items in failures.items() if items}
    assert not failures, _report(failures)


def test_every_notebook_has_solution_dropdowns(survey):
    notebooks = [page for page in survey["book"]
                 if (source := _source_of(page)) is not None and source.suffix == ".ipynb"]
    assert notebooks
    failures = {page: ["no solution dropdown"] for page in notebooks
                if len(survey["book"][page]["dropdowns"]) < 3}
    assert not failures, _report(failures)


def test_every_theorem_box_of_the_source_is_rendered(survey):
    failures = {}
    for page, r in survey["book"].items():
        source = _source_of(page)
        expected = _prf_directives(source) if source else 0
        problems = []
        if len(r["boxes"]) != expected:
            problems.append(f"{len(r['boxes'])} theorem/proof boxes, the source has {expected}")
        problems += [f"box {b['id']} is not visible or has no title" for b in r["boxes"]
                     if not b["title"] or (not b["inDropdown"] and not b["visible"])]
        if problems:
            failures[page] = problems
    assert not failures, _report(failures)


def test_no_console_errors(survey):
    failures = {page: r["errors"] for page, r in survey["book"].items() if r["errors"]}
    assert not failures, _report(failures)


# ------------------------------------------------------- the controls a reader uses
# A chapter page with sections and solutions, opened once per viewport; each test
# clicks like a reader (mouse clicks at the control's position, not element.click()).
# A page with few formulas, as MathJax makes most of a page's load: the controls are
# the theme's, the same on every page, and each test opens the page anew.
CONTROLS_PAGE = "book/ch2_identity_matters/all_residual.html"

DRAWER = r"""
(id) => {
  const dialog = document.getElementById(id);
  if (!dialog) return {open: false, links: []};
  const links = Array.from(dialog.querySelectorAll('a'))
    .filter(a => a.checkVisibility() && a.getBoundingClientRect().width > 0)
    .map(a => a.textContent.replace(/\s+/g, ' ').trim());
  return {open: dialog.open, links};
}
"""


# Resolves once the page's transitions and animations have ended (at most 2 s).
SETTLED = r"""
async () => {
  const frame = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const start = performance.now();
  await frame();
  while (performance.now() - start < 2000
         && document.getAnimations().some(a => a.playState === 'running')) {
    await frame();
  }
}
"""


def _tap(page, selector):
    """Click at the centre of the first visible element matching ``selector``, and
    wait until the drawer's or the dropdown's transition has ended."""
    box = page.locator(selector).locator("visible=true").first.bounding_box()
    assert box, f"no visible {selector}"
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.evaluate(SETTLED)


@pytest.fixture()
def reader(book_build, chromium):
    """A new browser tab on CONTROLS_PAGE; yields (page, console errors)."""
    browser = _Browser(chromium)
    try:
        def open_at(viewport):
            browser.open(book_build.html / CONTROLS_PAGE, viewport=viewport)
            return browser.page, browser.record["errors"]
        yield open_at
    finally:
        browser.close()


def test_phone_menu_button_opens_the_chapter_list(reader):
    page, errors = reader(PHONE)
    _tap(page, ".primary-toggle")
    drawer = page.evaluate(DRAWER, "pst-primary-sidebar-modal")
    assert drawer["open"], "the navigation drawer did not open"
    chapters = [t for t in drawer["links"] if re.match(r"\d\. ", t)]
    assert len(chapters) >= 5, drawer["links"]
    assert not errors


def test_phone_contents_button_opens_the_page_contents(reader):
    page, errors = reader(PHONE)
    _tap(page, ".secondary-toggle")
    drawer = page.evaluate(DRAWER, "pst-secondary-sidebar-modal")
    assert drawer["open"], "the page-contents drawer did not open"
    assert len(drawer["links"]) >= 3, drawer["links"]
    assert not errors


def test_desktop_sidebar_button_hides_and_shows_the_sidebar(reader):
    page, errors = reader(DESKTOP)
    # Collapsed, the sidebar slides out of the window to the left.
    visible = ("() => { const s = document.getElementById('pst-primary-sidebar');"
               " return s.checkVisibility() && s.getBoundingClientRect().right > 0; }")
    assert page.evaluate(visible)
    _tap(page, ".primary-toggle")
    assert not page.evaluate(visible), "the sidebar did not collapse"
    _tap(page, ".primary-toggle")
    assert page.evaluate(visible), "the sidebar did not come back"
    assert not errors


def test_tapping_a_solution_title_opens_the_solution(reader):
    page, errors = reader(PHONE)
    url = page.url
    title = ".solution.dropdown > .admonition-title a"  # the link to the exercise
    page.locator(title).first.scroll_into_view_if_needed()
    _tap(page, title)
    opened = page.evaluate("() => !document.querySelector('.solution.dropdown')"
                           ".classList.contains('toggle-hidden')")
    assert opened, "the solution did not open"
    assert page.url == url, f"the tap followed the link to {page.url}"
    assert not errors


def test_a_page_has_one_search_box(reader):
    page, _ = reader(DESKTOP)
    boxes = page.evaluate("() => Array.from(document.querySelectorAll("
                          "'.search-button-field, form.bd-search'))"
                          ".filter(e => e.checkVisibility()).length")
    assert boxes <= 1, f"{boxes} search boxes"


def test_every_figure_of_the_book_has_a_caption(survey):
    failures = {page: [f"{r['figures']['figures'] - r['figures']['captioned']} of "
                       f"{r['figures']['figures']} figures have no caption"]
                for page, r in survey["book"].items()
                if r["figures"]["captioned"] < r["figures"]["figures"]}
    assert not failures, _report(failures)


# Sphinx's search page shows a snippet of each page it finds by fetching that page;
# from disk (file://) the browser forbids the fetch, and book/_ext/book_html.py
# answers it from the pages' texts written into the build.
SEARCH_QUERY = "margin"
SEARCH_RESULTS = r"""
() => Array.from(document.querySelectorAll('#search-results li')).map(li => ({
  title: li.querySelector('a').textContent,
  object: li.querySelector(':scope > span') !== null,
  snippet: (li.querySelector('p.context') || {textContent: ''}).textContent,
}))
"""


def test_search_from_disk_shows_a_snippet_of_each_page_found(book_build, chromium):
    browser = _Browser(chromium)
    try:
        browser.record = {"requests": [], "errors": []}
        url = (book_build.html / "search.html").as_uri() + f"?q={SEARCH_QUERY}"
        browser.page.goto(url, wait_until="load")
        browser.page.wait_for_function(
            "document.querySelector('#search-results p.search-summary')"
            ".textContent.includes('Search finished')")
        try:  # each snippet comes a moment after its result
            browser.page.wait_for_function(
                "Array.from(document.querySelectorAll('#search-results li'))"
                ".every(li => li.querySelector(':scope > span') || li.querySelector('p.context'))",
                timeout=5_000)
        except PlaywrightTimeout:
            pass  # judged below: a result without a snippet
        results = browser.page.evaluate(SEARCH_RESULTS)
        errors = browser.record["errors"]
    finally:
        browser.close()
    pages = [r for r in results if not r["object"]]
    assert len(pages) >= 3, results
    missing = [r["title"] for r in pages if SEARCH_QUERY not in r["snippet"].lower()]
    assert not missing, f"results without a snippet showing '{SEARCH_QUERY}': {missing}"
    assert not errors

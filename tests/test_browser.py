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

import functools
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

# Every formula at the current width: one whose box crosses the content column
# (unless an ancestor inside the article scrolls it: a table), and each display
# that scrolls inside its own box (with book.js's cue "book-scrolls" and a tab stop,
# or without).
FORMULAS = r"""
() => {
  const article = document.querySelector('article.bd-article') || document.querySelector('main');
  const items = (window.MathJax && MathJax.startup && MathJax.startup.document)
    ? Array.from(MathJax.startup.document.math) : [];
  if (!article) return {overflow: [], scrolling: []};
  const cs = getComputedStyle(article), r = article.getBoundingClientRect();
  const left = r.left + parseFloat(cs.paddingLeft), right = r.right - parseFloat(cs.paddingRight);
  const scrolledInArticle = el => {
    for (let a = el.parentElement; a && a !== article; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== 'visible') return true;
    }
    return false;
  };
  const overflow = [], scrolling = [];
  for (const item of items) {
    const c = item.typesetRoot;
    if (!c || !c.isConnected || !c.checkVisibility()) continue;
    const tex = item.math.trim().replace(/\s+/g, ' ').slice(0, 100);
    if (item.display && c.scrollWidth > c.clientWidth + 1) {
      scrolling.push({tex, width: c.scrollWidth, box: c.clientWidth,
                      cue: c.classList.contains('book-scrolls'),
                      focusable: c.tabIndex >= 0});
    }
    if (scrolledInArticle(c)) continue;
    const rects = Array.from(c.getClientRects());
    const worst = Math.max(0, ...rects.map(b => Math.max(b.right - right, left - b.left)));
    if (worst > 1) overflow.push({tex, display: item.display, by: Math.round(worst)});
  }
  // what a screen reader reads: MathJax's hidden MathML beside each typeset formula
  const unspoken = items.filter(item => item.typesetRoot && item.typesetRoot.isConnected
      && !item.typesetRoot.querySelector('mjx-assistive-mml math'))
    .map(item => item.math.trim().slice(0, 80));
  return {overflow, scrolling, unspoken, count: items.length};
}
"""

# The article's images (the book's figures, in _images/; not the icons of Sphinx's
# index pages): whether a tap opens them (a link to the image file), and the
# height of their smallest text in CSS pixels as shown (book_html.py writes each
# image's smallest text in image pixels, data-text-px).
FIGURE_TEXT = r"""
() => Array.from(document.querySelectorAll('article img[src*="_images/"]'))
  .filter(img => img.checkVisibility())
  .map(img => {
    const link = img.closest('a[href]');
    const shown = img.getBoundingClientRect().width;
    const px = parseFloat(img.dataset.textPx);
    return {src: (img.getAttribute('src') || '').split('/').pop(),
            opens: !!link && new URL(link.href).pathname === new URL(img.src).pathname,
            text: Number.isFinite(px) && img.naturalWidth
              ? Math.round(100 * px * shown / img.naturalWidth) / 100 : null};
  })
"""

# The sidebars' links: the names cut off by their box (wider than it), and the
# entries of the page's own contents (the secondary sidebar).
SIDEBARS = r"""
() => {
  const shown = a => a.checkVisibility() && a.getBoundingClientRect().width > 0;
  const text = a => a.textContent.replace(/\s+/g, ' ').trim();
  const clipped = Array.from(document.querySelectorAll(
      '.bd-sidebar-primary a, .bd-sidebar-secondary a'))
    .filter(shown).filter(a => a.scrollWidth > a.clientWidth + 1).map(text);
  const contents = Array.from(document.querySelectorAll('.bd-sidebar-secondary nav a'))
    .filter(shown).map(text);
  return {clipped, contents};
}
"""

# axe-core (axe-playwright-python's copy): the page's violations of the rules asked
# for, with the number of elements and the first three of them per rule.
AXE_RUN = r"""
async ([rules, tags]) => {
  const runOnly = rules ? {type: 'rule', values: rules} : {type: 'tag', values: tags};
  // preload: false: axe-core would fetch the page's stylesheets again with
  // XMLHttpRequest, which the browser forbids on file:// (a console error per sheet)
  const result = await axe.run(document, {runOnly, resultTypes: ['violations'],
                                          preload: false});
  return result.violations.map(v => ({
    id: v.id, impact: v.impact, count: v.nodes.length,
    where: v.nodes.slice(0, 3).map(n => n.target.join(' ') + ': '
                                   + (n.failureSummary || '').split('\n').slice(1, 2).join('')
                                     .trim().slice(0, 140))}));
}
"""

# Colour rules (color-contrast, link-in-text-block) judge one element for each
# distinct look of text: its colour, font size, weight and style, shadow and underline,
# every background and opacity behind it up to the first opaque background, and for a
# link the colour, underline, size, weight and style of the text around it (which
# link-in-text-block compares with the link's). Two elements that agree in all of
# these have the same contrast, so a look judged once (on this page or an earlier one
# of the survey, in the same colour mode) is not judged again: the representatives of
# the new looks are marked data-axe-sample, and the colour rules look at them alone.
# Only visible text counts; the hidden MathML for screen readers (clipped, never
# shown) is left out.
SAMPLE_LOOKS = r"""
(judged) => {
  const seen = new Set(judged);
  const behind = new Map();
  const backdrop = el => {
    if (!el) return '';
    if (behind.has(el)) return behind.get(el);
    const s = getComputedStyle(el);
    let key = '';
    if (s.backgroundImage !== 'none') key += s.backgroundImage.slice(0, 80) + '|';
    if (s.opacity !== '1') key += 'o' + s.opacity + '|';
    const transparent = s.backgroundColor === 'rgba(0, 0, 0, 0)';
    if (!transparent) key += s.backgroundColor + '|';
    const opaque = !transparent && !/rgba/.test(s.backgroundColor) && s.opacity === '1';
    key += opaque ? '' : backdrop(el.parentElement);
    behind.set(el, key);
    return key;
  };
  document.querySelectorAll('[data-axe-sample]').forEach(e => e.removeAttribute('data-axe-sample'));
  const fresh = [];
  for (const el of document.body.querySelectorAll('*')) {
    let own = false;
    for (const c of el.childNodes) {
      if (c.nodeType === 3 && c.textContent.trim()) { own = true; break; }
    }
    if (!own || el.closest('mjx-assistive-mml')
        || !el.checkVisibility({visibilityProperty: true, opacityProperty: true})) continue;
    const s = getComputedStyle(el);
    const link = el.closest('a[href]');
    let around = '';
    if (link && link.parentElement) {
      const p = getComputedStyle(link.parentElement);
      around = [p.color, p.display, p.textDecorationLine, p.fontWeight, p.fontStyle,
                p.fontSize].join(',');
    }
    const key = [link ? 'link:' + around : '', s.color, s.fontSize, s.fontWeight, s.fontStyle,
                 s.textShadow, s.textDecorationLine, backdrop(el)].join(';');
    if (!seen.has(key)) {
      seen.add(key);
      fresh.push(key);
      (link || el).setAttribute('data-axe-sample', '');
    }
  }
  if (!window.bookAxeConfigured) {
    axe.configure({rules: [{id: 'color-contrast', selector: '[data-axe-sample]'},
                           {id: 'link-in-text-block', selector: 'a[href][data-axe-sample]'}]});
    window.bookAxeConfigured = true;
  }
  return fresh;
}
"""

# Every element that scrolls sideways can be reached with the keyboard: it is a tab
# stop or holds one (axe-core's scrollable-region-focusable, which takes seconds per
# run on a phone-wide page: the same rule, in a few milliseconds).
UNREACHABLE_SCROLLERS = r"""
() => {
  const focusable = 'a[href], button, input, select, textarea, summary, [tabindex]';
  const found = [];
  for (const el of document.body.querySelectorAll('*')) {
    if (el.scrollWidth <= el.clientWidth + 1) continue;
    const s = getComputedStyle(el);
    if (!['auto', 'scroll'].includes(s.overflowX) || !el.checkVisibility()) continue;
    if (el.matches(focusable) && el.tabIndex >= 0) continue;
    if (Array.from(el.querySelectorAll(focusable)).some(f => f.tabIndex >= 0
                                                           && f.checkVisibility())) continue;
    found.push((el.tagName.toLowerCase() + (el.id ? '#' + el.id : '')
                + (typeof el.className === 'string' && el.className
                   ? '.' + el.className.trim().split(/\s+/)[0] : '')));
  }
  return found;
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


# ------------------------------------------------------------ accessibility (axe-core)
# axe-core 4.12 as axe-playwright-python ships it (pinned in requirements.txt), run
# on every page the survey opens, in the page it has already loaded, for WCAG 2.1 A
# and AA. At 1280 px in light mode every rule runs. In dark mode and at 390 px the
# page's elements are the same and only their colours, what is shown and what
# scrolls change: there the colour rules run on every look of text not judged yet
# (SAMPLE_LOOKS; axe-core runs only when there is one), every image shown must have
# a text alternative (the theme shows another logo in dark mode: axe-core's
# image-alt, as IMAGES_WITHOUT_ALT), and at 390 px every sideways scroller must take
# the keyboard (axe-core's scrollable-region-focusable, as UNREACHABLE_SCROLLERS,
# judged on the typeset page).
#
# axe judges a page with its formulas put back to their TeX, as the student edition's
# pages are served (tests/test_student_html.py), once every check of the typeset
# formulas is done: a typeset chapter holds four times the elements (MathJax's glyph
# boxes, hidden from screen readers, and the hidden MathML read instead), and axe-core
# takes seconds per run over them. What a screen reader gets of each formula, its
# MathML, is checked by test_every_formula_has_mathml_for_screen_readers, and a
# formula's colour is its paragraph's.
UNTYPESET = r"""
() => {
  const mj = window.MathJax, doc = mj && mj.startup && mj.startup.document;
  if (!doc) return 0;
  let count = 0;
  for (const item of Array.from(doc.math)) { item.removeFromDocument(true); count += 1; }
  // the list emptied, and no new layout for a new width (book.js asks for one after
  // a resize): MathJax would find the TeX again and typeset it all anew
  doc.math.clear();
  doc.rerenderPromise = () => Promise.resolve();
  return count;
}
"""
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
COLOUR_RULES = ["color-contrast", "link-in-text-block"]
#: the configurations axe runs in, and the rules of each (None: all of WCAG_TAGS)
AXE_PLAN = (("1280 light", None), ("1280 dark", COLOUR_RULES),
            ("390 light", COLOUR_RULES), ("390 dark", COLOUR_RULES))
IMAGES_WITHOUT_ALT = r"""
() => Array.from(document.images).filter(img => img.checkVisibility()
    && !(img.getAttribute('alt') || '').trim() && img.getAttribute('role') !== 'presentation')
  .map(img => 'img[src$="' + (img.getAttribute('src') || '').split('/').pop() + '"]')
"""
AXE_FAILING = ("critical", "serious")


@functools.cache
def _axe_script():
    from axe_playwright_python.base import AXE_FILE_PATH

    return AXE_FILE_PATH.read_text(encoding="utf-8")


def set_mode(page, mode):
    """The theme's light or dark mode, as its switch sets it (``data-theme``)."""
    page.evaluate("""async (mode) => {
        document.documentElement.dataset.theme = mode;
        document.documentElement.dataset.mode = mode;
        await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
        // the theme's colour transitions taken to their end: axe judges the final colours
        document.getAnimations().forEach(a => a.finish());
    }""", mode)


def run_axe(page, rules, judged):
    """axe-core's violations on the page as it is now (``rules`` None: WCAG 2.1 AA);
    the colour rules judge the looks of text not in ``judged`` (a set, updated)."""
    if not page.evaluate("() => !!window.axe"):
        page.evaluate(_axe_script())
    fresh = page.evaluate(SAMPLE_LOOKS, sorted(judged))
    judged.update(fresh)
    if rules is not None and not fresh:
        rules = [rule for rule in rules if rule not in COLOUR_RULES]
        if not rules:
            return []
    return page.evaluate(AXE_RUN, [rules, WCAG_TAGS])


def _violation(rule, elements):
    return [{"id": rule, "impact": "serious", "count": len(elements),
             "where": elements[:3]}] if elements else []


def axe_in_both_modes(page, width, judged, plan=AXE_PLAN, unreachable=()):
    """{configuration: violations} for the configurations of ``plan`` at ``width``;
    ``judged``: {mode: looks of text judged so far}; ``unreachable``: the page's
    sideways scrollers the keyboard cannot reach at this width (see
    UNREACHABLE_SCROLLERS), reported as axe-core's scrollable-region-focusable."""
    found = {}
    for name, rules in plan:
        if not name.startswith(f"{width} "):
            continue
        mode = name.split()[1]
        set_mode(page, mode)
        found[name] = run_axe(page, rules, judged.setdefault(mode, set()))
        if rules is not None:
            found[name] += _violation("image-alt", page.evaluate(IMAGES_WITHOUT_ALT))
        if mode == "light":
            found[name] += _violation("scrollable-region-focusable", list(unreachable))
    set_mode(page, "light")
    return found


# What book.js does after the window's width changes (it waits 250 ms for the last
# change first): display formulas laid out again, sideways scrollers marked.
RELAYOUT = "async () => { if (window.bookRelayoutMath) await window.bookRelayoutMath(); }"


def _survey_book(browser, html_root):
    """Visit every page of the built book and return what each check needs."""
    survey, judged = {}, {}
    for page in _pages(html_root):
        record = browser.open(html_root / page)
        result = dict(record)
        result.update(browser.page.evaluate(MATH_AND_IMAGES))
        result["dropdowns"] = browser.page.evaluate(DROPDOWNS_ON_LOAD)
        result["figures"] = browser.page.evaluate(FIGURES)
        result["boxes"] = browser.page.evaluate(THEOREM_BOXES)
        result["opened"] = browser.page.evaluate(OPEN_DROPDOWNS)
        result["layout"] = browser.page.evaluate(LAYOUT)  # with every solution open
        result["formulas_1280"] = browser.page.evaluate(FORMULAS)
        result["sidebars"] = browser.page.evaluate(SIDEBARS)
        # The phone: the same page at 390 px, its formulas laid out again for the new
        # width as book.js does when a reader's window changes width.
        browser.page.set_viewport_size(PHONE)
        browser.page.evaluate(RELAYOUT)
        result["phone"] = browser.page.evaluate(PAGE_SCROLL)
        result["formulas_390"] = browser.page.evaluate(FORMULAS)
        result["figure_text"] = browser.page.evaluate(FIGURE_TEXT)
        result["screens_390"] = round(browser.page.evaluate(
            "document.documentElement.scrollHeight") / PHONE["height"], 1)
        unreachable = browser.page.evaluate(UNREACHABLE_SCROLLERS)
        # axe-core, on the formulas' TeX (see UNTYPESET): at 390 px, then at 1280 px.
        browser.page.evaluate(UNTYPESET)
        result["axe"] = axe_in_both_modes(browser.page, 390, judged, unreachable=unreachable)
        browser.page.set_viewport_size(DESKTOP)
        browser.page.evaluate(RELAYOUT)  # as book.js does 250 ms after the change
        result["axe"].update(axe_in_both_modes(browser.page, 1280, judged))
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


@pytest.mark.parametrize("width", [1280, 390])
def test_no_formula_overflows_its_column(survey, width):
    # MathJax 4 breaks long inline formulas where the browser wraps the line, and long
    # displays to the column's width (book.js lays them out again when the width changes).
    failures = {page: [f"{'display' if f['display'] else 'inline'} formula past the column "
                       f"by {f['by']} px: {f['tex']}" for f in r[f"formulas_{width}"]["overflow"]]
                for page, r in survey["book"].items() if r[f"formulas_{width}"]["overflow"]}
    assert not failures, _report(failures)


def test_a_display_that_scrolls_at_390px_shows_it_and_takes_the_keyboard(survey):
    # A display MathJax cannot break (a wide matrix) may scroll inside its own box on a
    # phone, never the page: with book.js's cue (a shadow at the edge) and a tab stop.
    failures = {page: [f"{e['width']} px in a {e['box']} px box, "
                       f"{'' if e['cue'] else 'no cue, '}"
                       f"{'' if e['focusable'] else 'no tab stop, '}"
                       f"{e['tex']}" for e in r["formulas_390"]["scrolling"]
                       if not (e["cue"] and e["focusable"])]
                for page, r in survey["book"].items()}
    failures = {page: items for page, items in failures.items() if items}
    assert not failures, _report(failures)


def test_every_formula_has_mathml_for_screen_readers(survey):
    failures = {page: [f"no assistive MathML: {t}" for t in r["formulas_1280"]["unspoken"]]
                for page, r in survey["book"].items() if r["formulas_1280"]["unspoken"]}
    assert not failures, _report(failures)


def test_every_figure_opens_full_size_on_a_tap(survey):
    failures = {page: [f"{f['src']} is not a link to its image" for f in r["figure_text"]
                       if not f["opens"]]
                for page, r in survey["book"].items()}
    failures = {page: items for page, items in failures.items() if items}
    assert not failures, _report(failures)


#: The smallest figure text a phone may show, in CSS pixels (issue 35: "about 7").
FIGURE_TEXT_MIN_PX = 6.95


def test_figure_text_is_readable_on_a_phone(survey):
    # Each image's smallest text (its size in the image, written by book_html.py from
    # the cell that drew it) times the scale the phone shows the image at.
    failures = {page: [f"{f['src']}: smallest text {f['text']} CSS px" if f["text"] is not None
                       else f"{f['src']}: size of its text unknown" for f in r["figure_text"]
                       if f["text"] is None or f["text"] < FIGURE_TEXT_MIN_PX]
                for page, r in survey["book"].items()}
    failures = {page: items for page, items in failures.items() if items}
    assert not failures, _report(failures)


def test_no_name_in_the_sidebars_is_cut_off(survey):
    failures = {page: [f"cut off: {name}" for name in r["sidebars"]["clipped"]]
                for page, r in survey["book"].items() if r["sidebars"]["clipped"]}
    assert not failures, _report(failures)


def _public_names(module):
    import importlib

    imported = importlib.import_module(f"resnet_theory.{module}")
    return list(getattr(imported, "__all__", []))


def test_the_api_reference_has_a_page_per_module_listing_its_names(survey):
    import resnet_theory

    modules = sorted(info.name for info in __import__("pkgutil").iter_modules(
        resnet_theory.__path__) if not info.name.startswith("_"))
    pages = survey["book"]
    missing = [m for m in modules if f"book/api/{m}.html" not in pages]
    assert not missing, f"modules without a page of the API reference: {missing}"
    failures = {}
    documented = {"checks": ["CheckResult", "check_namespace", "exercise_check"]}
    for module in modules:
        contents = " ".join(pages[f"book/api/{module}.html"]["sidebars"]["contents"])
        names = documented.get(module) or [n for n in _public_names(module) if n[0].islower()
                                             or n[0].isupper() and not n.isupper()]
        absent = [name for name in names if name not in contents]
        if absent:
            failures[f"book/api/{module}.html"] = [f"the sidebar does not list {absent}"]
    assert not failures, _report(failures)


def axe_report(pages):
    """Counts of axe-core's violations by rule, impact and configuration; and the
    failing (critical or serious) ones, per page."""
    counts, failures = {}, {}
    for page, r in pages.items():
        for config, violations in r["axe"].items():
            for v in violations:
                key = (v["id"], v["impact"] or "", config)
                counts[key] = counts.get(key, 0) + v["count"]
                if v["impact"] in AXE_FAILING:
                    failures.setdefault(page, []).append(
                        f"[{config}] {v['id']} ({v['impact']}, {v['count']} elements): "
                        + "; ".join(v["where"]))
    lines = [f"axe-core, WCAG 2.1 A/AA, {len(pages)} pages: "
             + ("no violation" if not counts else "violations by rule")]
    lines += [f"  {rule:32} {impact:9} {config:11} {n:5d} elements"
              for (rule, impact, config), n in sorted(counts.items())]
    return "\n".join(lines), failures


def test_axe_finds_no_critical_or_serious_violation(survey, capsys):
    table, failures = axe_report(survey["book"])
    with capsys.disabled():
        print("\n" + table)
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


# ---------------------------------------------------------------- the keyboard alone
# A reader who does not use a mouse: Tab moves through the page, Enter opens, Escape
# closes. Each test presses Tab from the top of the page until the control has focus.
FOCUSED = "(selector) => !!document.activeElement && document.activeElement.matches(selector)"


def _tab_to(page, selector, limit=300):
    """Press Tab until the focused element matches ``selector``; fail after ``limit``."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate(FOCUSED, selector):
            return
    pytest.fail(f"{limit} presses of Tab never reached {selector}")


def _key(page, key):
    page.keyboard.press(key)
    page.evaluate(SETTLED)


def test_the_keyboard_opens_and_closes_a_solution_and_folded_code(reader):
    page, errors = reader(DESKTOP)
    _tab_to(page, ".solution.dropdown > .admonition-title > .toggle-button")
    box = "document.activeElement.closest('.solution')"
    _key(page, "Enter")
    assert page.evaluate(f"() => !{box}.classList.contains('toggle-hidden')"), \
        "Enter did not open the solution"
    _key(page, "Enter")
    assert page.evaluate(f"() => {box}.classList.contains('toggle-hidden')"), \
        "Enter did not close the solution again"
    _tab_to(page, "details.hide > summary")
    _key(page, "Enter")
    assert page.evaluate("() => document.activeElement.parentElement.open"), \
        "Enter did not unfold the folded code"
    assert not errors


@pytest.mark.parametrize("toggle, drawer", [
    (".primary-toggle", "pst-primary-sidebar-modal"),
    (".secondary-toggle", "pst-secondary-sidebar-modal")])
def test_the_keyboard_opens_and_closes_the_phone_s_drawers(reader, toggle, drawer):
    page, errors = reader(PHONE)
    _tab_to(page, f"button{toggle}")
    _key(page, "Enter")
    state = page.evaluate(DRAWER, drawer)
    assert state["open"] and state["links"], f"Enter did not open {drawer}"
    inside = page.evaluate("(id) => document.getElementById(id).contains(document.activeElement)",
                           drawer)
    assert inside, "the focus did not move into the open drawer"
    _key(page, "Escape")
    assert not page.evaluate(DRAWER, drawer)["open"], f"Escape did not close {drawer}"
    assert not errors


SEARCH_DIALOG_OPEN = ("() => { const d = document.getElementById('pst-search-dialog');"
                      " return !!d && d.open; }")


def test_the_keyboard_searches_the_book(reader):
    page, errors = reader(DESKTOP)
    _tab_to(page, ".search-button-field, button.search-button")
    _key(page, "Enter")
    assert page.evaluate(SEARCH_DIALOG_OPEN), "Enter did not open the search box"
    assert page.evaluate(FOCUSED, "#pst-search-dialog input"), \
        "the search box does not have the focus"
    _key(page, "Escape")
    assert not page.evaluate(SEARCH_DIALOG_OPEN), "Escape did not close the search box"
    _tab_to(page, ".search-button-field, button.search-button")
    _key(page, "Enter")
    page.keyboard.type(SEARCH_QUERY)
    with page.expect_navigation():
        page.keyboard.press("Enter")
    assert page.url.split("?")[0].endswith("/search.html"), page.url
    page.wait_for_function("document.querySelector('#search-results p.search-summary')"
                           " && document.querySelector('#search-results p.search-summary')"
                           ".textContent.includes('Search finished')")
    assert page.evaluate("document.querySelectorAll('#search-results li').length") >= 3
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


#: TeX in a snippet: a delimiter, a command, or a dollar sign
SNIPPET_TEX = re.compile(r"\\[()\[\]]|\\[A-Za-z]{2,}|\$|\\[{}|]")


def _search(browser, html_root, query):
    url = (html_root / "search.html").as_uri() + f"?q={query}"
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
        pass  # judged by the caller: a result without a snippet
    return browser.page.evaluate(SEARCH_RESULTS)


def test_search_from_disk_shows_a_snippet_of_each_page_found(book_build, chromium):
    browser = _Browser(chromium)
    try:
        browser.record = {"requests": [], "errors": []}
        results = _search(browser, book_build.html, SEARCH_QUERY)
        # "polar": pages whose text around the word is full of formulas (Chapter 4)
        formulas = _search(browser, book_build.html, "polar")
        errors = browser.record["errors"]
    finally:
        browser.close()
    pages = [r for r in results if not r["object"]]
    assert len(pages) >= 3, results
    missing = [r["title"] for r in pages if SEARCH_QUERY not in r["snippet"].lower()]
    assert not missing, f"results without a snippet showing '{SEARCH_QUERY}': {missing}"
    snippets = [r["snippet"] for r in results + formulas if not r["object"]]
    assert len(snippets) >= len(pages) + 2
    tex = [snippet for snippet in snippets if SNIPPET_TEX.search(snippet)]
    assert not tex, "snippets that show TeX:\n" + "\n".join(tex)
    assert not errors

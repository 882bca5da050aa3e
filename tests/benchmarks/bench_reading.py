"""Benchmark: how each page of the built book reads at 1280x900 and on a phone.

The book is lecture notes first (``DESIGN.md`` section 8): visible code should
take at most 15 % of a page's height, and a page should be at most 12 screens
long, exercises included. This script opens every page of a built book in the
system's Chromium (Playwright's Python API, network blocked), at the desktop
viewport of 1280x900, and prints one row per page:

- ``code %``: the summed height of the code a reader sees without clicking
  (code-cell inputs that are not folded, and literal code blocks in the prose)
  as a share of the page's height;
- ``screens``: the page's height divided by the viewport height (900 px);
- ``phone``: the same at 390x844, a phone (issue 35's goal: at most 16 screens);
- ``formulas``: the formulas that cross the content column, at 1280 and at 390 px
  (``over 1280/390``; goal 0: MathJax 4 breaks them);
- ``fig px``: the smallest figure text at 390 px, in CSS pixels (goal: about 7),
  from the size each image's smallest text has in the image (``data-text-px``,
  written by ``book/_ext/book_html.py``) and the scale the phone shows it at.

The limits apply to the chapters' pages (``book/chN_*/``); the front and
reference pages are listed without a verdict.

Folded cells (tag ``hide-input``) and closed dropdowns take no height, so they do
not count. With ``--fail`` the script exits with status 1 when a page is over a
limit (``--max-code``, default 15 %; ``--max-screens``, default 12).

This is a script, not a test (pytest does not collect it). Build the book first
(``make book``), then run from the repository root:

    .venv/bin/python tests/benchmarks/bench_reading.py [--html _build/html]
        [--only ch4_deep_linear] [--fail]
"""

import argparse
import os
import re
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from test_browser import FIGURE_TEXT, FORMULAS  # noqa: E402  (the browser test's checks)

VIEWPORT = {"width": 1280, "height": 900}
PHONE = {"width": 390, "height": 844}
NOT_PAGES = {"_static", "_sources", "_images", "genindex.html", "search.html"}
# The limits apply to the chapters' pages; the reference pages (API, bibliography)
# are listed but not judged.
CHAPTER = re.compile(r"(^|/)ch\d+_[^/]+/")
REDIRECT = re.compile(r'<meta http-equiv="refresh"', re.IGNORECASE)
CHROMIUM_ARGS = ["--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--disable-default-apps", "--disable-extensions"]

# Heights in CSS pixels, measured once MathJax has typeset the page.
MEASURE = r"""
async () => {
  const mj = window.MathJax;
  if (mj && mj.startup && mj.startup.promise) { await mj.startup.promise; }
  await new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const article = document.querySelector('article.bd-article') || document.body;
  const visible = el => {
    // Folded content (a closed <details>, a closed dropdown) keeps its layout box
    // in Chromium but is not shown: it takes no reading height.
    if (!el.checkVisibility({contentVisibilityAuto: true, visibilityProperty: true,
                             opacityProperty: true})) return 0;
    if (el.closest('details:not([open])') || el.closest('.toggle-hidden')) return 0;
    const box = el.getBoundingClientRect();
    if (box.height === 0 || box.width === 0) return 0;
    return box.height;
  };
  let code = 0;
  // Code-cell inputs (myst-nb); a folded input sits in a closed <details>.
  for (const el of article.querySelectorAll('div.cell_input')) { code += visible(el); }
  // Literal code blocks in the prose (not cell inputs, not outputs).
  for (const el of article.querySelectorAll('div[class^="highlight-"]')) {
    if (el.closest('div.cell_input') || el.closest('div.cell_output')) continue;
    if (el.parentElement.closest('div[class^="highlight-"]')) continue;  // nested
    code += visible(el);
  }
  const page = document.documentElement.scrollHeight;
  return {code: code, page: page};
}
"""


def chromium():
    """The system's Chromium, or None."""
    candidates = [os.environ.get("CHROMIUM"), shutil.which("chromium-headless-shell"),
                  shutil.which("chromium"), shutil.which("chromium-browser")]
    return next((c for c in candidates if c and Path(c).is_file()), None)


def pages(html_root, only=None):
    """The book's HTML pages (no redirects, no index or search pages)."""
    found = []
    for path in sorted(html_root.rglob("*.html")):
        relative = path.relative_to(html_root)
        if NOT_PAGES & set(relative.parts):
            continue
        if REDIRECT.search(path.read_text(encoding="utf-8")[:2000]):
            continue
        if only and not any(word in relative.as_posix() for word in only):
            continue
        found.append(path)
    return found


def measure(html_root, only=None):
    """A row per page of the build: ``(page, code share, screens at 1280, screens at
    390, formulas over the column at 1280, at 390, smallest figure text at 390)``."""
    from playwright.sync_api import sync_playwright

    executable = chromium()
    if executable is None:
        sys.exit("no Chromium found: install Debian's with `apt-get install chromium` "
                 "(or set CHROMIUM=/path/to/chromium)")
    args = list(CHROMIUM_ARGS)
    if os.geteuid() == 0:
        args.append("--no-sandbox")
    rows = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=args)
        context = browser.new_context(viewport=VIEWPORT)
        context.route("**/*", lambda route: route.continue_()
                      if route.request.url.startswith(("file:", "data:", "blob:"))
                      else route.abort())
        page = context.new_page()
        for path in pages(html_root, only):
            page.set_viewport_size(VIEWPORT)
            page.goto(path.as_uri(), wait_until="load", timeout=180_000)
            heights = page.evaluate(MEASURE)
            wide = len(page.evaluate(FORMULAS)["overflow"])
            page.set_viewport_size(PHONE)
            page.evaluate("async () => { if (window.bookRelayoutMath) "
                          "await window.bookRelayoutMath(); }")
            phone = page.evaluate("document.documentElement.scrollHeight") / PHONE["height"]
            narrow = len(page.evaluate(FORMULAS)["overflow"])
            texts = [f["text"] for f in page.evaluate(FIGURE_TEXT) if f["text"] is not None]
            rows.append((path.relative_to(html_root).as_posix(),
                         heights["code"] / heights["page"],
                         heights["page"] / VIEWPORT["height"], phone, wide, narrow,
                         min(texts) if texts else None))
        browser.close()
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--html", type=Path, default=ROOT / "_build" / "html",
                        help="the built book (default: _build/html)")
    parser.add_argument("--only", nargs="*", default=None,
                        help="measure only pages whose path contains one of these")
    parser.add_argument("--max-code", type=float, default=0.15,
                        help="largest share of visible code per page (default 0.15)")
    parser.add_argument("--max-screens", type=float, default=12.0,
                        help="longest page in screens of 900 px (default 12)")
    parser.add_argument("--max-phone-screens", type=float, default=16.0,
                        help="longest page in screens of 844 px at 390 px wide (default 16)")
    parser.add_argument("--min-figure-text", type=float, default=6.95,
                        help="smallest figure text at 390 px, CSS px (default 6.95)")
    parser.add_argument("--fail", action="store_true",
                        help="exit with status 1 when a page is over a limit")
    options = parser.parse_args()
    if not (options.html / "index.html").is_file():
        sys.exit(f"no built book at {options.html}: run `make book` first")
    rows = measure(options.html, options.only)
    width = max(len(row[0]) for row in rows)
    print(f"{'page':<{width}}  code %  screens  phone  over 1280/390  fig px  verdict")
    over = 0
    for name, share, screens, phone, wide, narrow, text in rows:
        figure = f"{text:6.1f}" if text is not None else "     -"
        line = (f"{name:<{width}}  {100 * share:6.1f}  {screens:7.1f}  {phone:5.1f}  "
                f"{wide:8d}/{narrow:<4d}  {figure}")
        if not CHAPTER.search(name):
            print(f"{line}  (not a chapter page)")
            continue
        problems = []
        if share > options.max_code:
            problems.append("code")
        if screens > options.max_screens:
            problems.append("long")
        if phone > options.max_phone_screens:
            problems.append("long on a phone")
        if wide or narrow:
            problems.append("formulas")
        if text is not None and text < options.min_figure_text:
            problems.append("figure text")
        over += bool(problems)
        print(f"{line}  {'over: ' + ', '.join(problems) if problems else 'ok'}")
    chapters = [row for row in rows if CHAPTER.search(row[0])] or rows

    def median(values):
        values = sorted(values)
        return values[len(values) // 2]

    texts = [row[6] for row in chapters if row[6] is not None]
    code = 100 * median(r[1] for r in chapters)
    print(f"{len(chapters)} chapter pages; median code {code:.1f} %, "
          f"median length {median(r[2] for r in chapters):.1f} screens "
          f"({median(r[3] for r in chapters):.1f} on a phone, longest "
          f"{max(r[3] for r in chapters):.1f}); formulas over the column "
          f"{sum(r[4] for r in rows)} at 1280 px, {sum(r[5] for r in rows)} at 390 px; "
          f"smallest figure text {min(texts) if texts else float('nan'):.1f} px; "
          f"{over} over the limits ({100 * options.max_code:.0f} %, "
          f"{options.max_screens:g} screens, {options.max_phone_screens:g} on a phone)")
    return 1 if options.fail and over else 0


if __name__ == "__main__":
    sys.exit(main())

"""Benchmark: how each page of the built book reads at 1280x900.

The book is lecture notes first (``DESIGN.md`` section 8): visible code should
take at most 15 % of a page's height, and a page should be at most 12 screens
long, exercises included. This script opens every page of a built book in the
system's Chromium (Playwright's Python API, network blocked), at the desktop
viewport of 1280x900, and prints one row per page:

- ``code %``: the summed height of the code a reader sees without clicking
  (code-cell inputs that are not folded, and literal code blocks in the prose)
  as a share of the page's height;
- ``screens``: the page's height divided by the viewport height (900 px).

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
VIEWPORT = {"width": 1280, "height": 900}
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
    candidates = [os.environ.get("CHROMIUM"), shutil.which("chromium"),
                  shutil.which("chromium-browser")]
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
    """Rows ``(page, code share, screens)`` for every page of the build."""
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
            page.goto(path.as_uri(), wait_until="load", timeout=180_000)
            heights = page.evaluate(MEASURE)
            rows.append((path.relative_to(html_root).as_posix(),
                         heights["code"] / heights["page"],
                         heights["page"] / VIEWPORT["height"]))
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
    parser.add_argument("--fail", action="store_true",
                        help="exit with status 1 when a page is over a limit")
    options = parser.parse_args()
    if not (options.html / "index.html").is_file():
        sys.exit(f"no built book at {options.html}: run `make book` first")
    rows = measure(options.html, options.only)
    width = max(len(name) for name, _, _ in rows)
    print(f"{'page':<{width}}  code %  screens  verdict")
    over = 0
    for name, share, screens in rows:
        problems = []
        if not CHAPTER.search(name):
            print(f"{name:<{width}}  {100 * share:6.1f}  {screens:7.1f}  (not a chapter page)")
            continue
        if share > options.max_code:
            problems.append("code")
        if screens > options.max_screens:
            problems.append("long")
        over += bool(problems)
        verdict = "over: " + ", ".join(problems) if problems else "ok"
        print(f"{name:<{width}}  {100 * share:6.1f}  {screens:7.1f}  {verdict}")
    chapters = [row for row in rows if CHAPTER.search(row[0])] or rows
    shares = sorted(share for _, share, _ in chapters)
    screens = sorted(s for _, _, s in chapters)
    print(f"{len(chapters)} chapter pages; median code {100 * shares[len(shares) // 2]:.1f} %, "
          f"median length {screens[len(screens) // 2]:.1f} screens; "
          f"{over} over the limits ({100 * options.max_code:.0f} %, "
          f"{options.max_screens:g} screens)")
    return 1 if options.fail and over else 0


if __name__ == "__main__":
    sys.exit(main())

"""Print the book and its exercise sheets to PDF with headless Chromium.

``make pdf`` builds the book as one HTML page (Sphinx's ``singlehtml`` builder,
MathJax served from the build) and runs this script on it::

    python book/_ext/print_pdf.py _build/singlehtml _build/pdf

It writes ``near-the-identity.pdf`` (title page, contents with page numbers,
the preface, the five chapters, the solutions as an appendix, the bibliography;
folded code cells are left out, their figures kept; the library reference stays
online; one bookmark per heading), ``near-the-identity-ch1.pdf`` ...
``near-the-identity-ch5.pdf`` (each chapter's pages of the book with the pages of
its solutions, the book's page numbers kept) and ``exercises-ch1.pdf`` ...
``exercises-ch5.pdf`` (each chapter's exercises without solutions, with the
statements they refer to). The page is
rearranged by ``print_pdf.js`` and styled by ``print.css``, both next to this
file. Chromium is ``$CHROMIUM`` if set, else Debian's ``chromium-headless-shell``
(the browser without its window, about a tenth less CPU to print the book), else
its ``chromium``, driven by Playwright; nothing is fetched from the network. Text
is laid out without font hinting, so both print the same pages.
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
BOOK_PDF = "near-the-identity.pdf"
CHAPTER_PDF = "near-the-identity-ch{number}.pdf"
# Without font hinting, chromium-headless-shell lays text out as chromium does (with
# its default hinting, its glyphs are wider and lines break elsewhere).
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run",
                 "--font-render-hinting=none"]
#: The executables tried, in order, after ``$CHROMIUM``.
CHROMIUM_NAMES = ("chromium-headless-shell", "chromium", "chromium-browser")
MARGIN = {"top": "18mm", "bottom": "20mm", "left": "19mm", "right": "19mm"}
FOOTER = ('<div style="font-size:8pt;width:100%;text-align:center;color:#444;'
          'font-family:DejaVu Sans,sans-serif">{left}<span class="pageNumber"></span></div>')


def find_chromium():
    """The Chromium executable: ``$CHROMIUM``, else the first of ``CHROMIUM_NAMES``
    on the PATH, else None."""
    for candidate in (os.environ.get("CHROMIUM"), *map(shutil.which, CHROMIUM_NAMES)):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


def _version():
    try:
        return subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def _metadata():
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    url = config.get("repository", {}).get("url", "")
    version = _version()
    lines = [config.get("author", ""),
             "The book online and its notebooks: " + url,
             "Text and figures under CC BY 4.0, code under the MIT License.",
             "Printed from the HTML edition" + (f", version {version}." if version else ".")]
    return {"title": config.get("title", "Book"),
            "subtitle": "Lecture notes on the theory of deep residual networks",
            "url": url, "lines": [line for line in lines if line]}


def _toc_pages(pdf_path, targets):
    """The page (1-based) each contents entry's link points to in ``pdf_path``."""
    from pypdf import PdfReader

    reader = PdfReader(pdf_path)
    index = {page.indirect_reference.idnum: number
             for number, page in enumerate(reader.pages, start=1)}
    named = {}
    for name, destination in reader.named_destinations.items():
        page = destination.page
        idnum = getattr(page, "idnum", None)
        if idnum in index:  # Chromium names a destination "/<element id>"
            named[str(name).lstrip("/")] = index[idnum]
    pages = {}
    for target in targets:
        if target in named:
            pages[target] = named[target]
    return pages


def _outline_tree(outline, pages):
    """The bookmarks as (title, page index, children), nested by level; headings
    whose page is unknown are left out, and so are titles repeated at once (a
    section whose title is its page's)."""
    roots, stack = [], []  # stack: (level, children list)
    for item in outline:
        page = pages.get(item["id"])
        if page is None or not item["text"]:
            continue
        node = (item["text"], page - 1, [])
        while stack and stack[-1][0] >= item["level"]:
            stack.pop()
        siblings = stack[-1][1] if stack else roots
        if siblings and siblings[-1][0] == node[0] and siblings[-1][1] == node[1]:
            continue
        siblings.append(node)
        stack.append((item["level"], node[2]))
    return roots


def _add_outline(writer, tree, parent=None, offset=0, keep=None):
    """Add the bookmarks ``tree`` to ``writer`` (page indices shifted by ``offset``;
    only pages ``keep`` maps, if given)."""
    for title, index, children in tree:
        if keep is not None:
            if index not in keep:
                _add_outline(writer, children, parent, offset, keep)
                continue
            index = keep[index]
        item = writer.add_outline_item(title=title, page_number=index - offset, parent=parent)
        _add_outline(writer, children, item, offset, keep)


def write_outline(pdf_path, outline, pages):
    """Rewrite ``pdf_path`` with one bookmark per heading of ``outline``."""
    from pypdf import PdfWriter

    writer = PdfWriter(clone_from=str(pdf_path))
    _add_outline(writer, _outline_tree(outline, pages))
    writer.page_mode = "/UseOutlines"
    with open(pdf_path, "wb") as stream:
        writer.write(stream)


def chapter_page_ranges(contents, pages, page_count):
    """{chapter number: page indices} of each chapter's own PDF: the chapter's
    pages (up to the next printed part) and the pages of its solutions."""
    starts = sorted({pages[i] for i in contents["starts"] if i in pages})

    def part(first):
        later = [page for page in starts if page > first]
        return list(range(first - 1, (later[0] - 1) if later else page_count))

    ranges = {}
    for chapter in contents["chapterParts"]:
        indices = part(pages[chapter["id"]])
        if chapter["solutions"] and chapter["solutions"] in pages:
            indices += [i for i in part(pages[chapter["solutions"]]) if i not in indices]
        ranges[chapter["number"]] = indices
    return ranges


def write_chapters(book_path, out_dir, contents, pages):
    """Write each chapter's PDF (see :func:`chapter_page_ranges`); returns the paths."""
    from pypdf import PdfReader, PdfWriter
    from pypdf.generic import ArrayObject, NameObject

    reader = PdfReader(str(book_path))
    tree = _outline_tree(contents["outline"], pages)
    written = {}
    for number, indices in chapter_page_ranges(contents, pages, len(reader.pages)).items():
        writer = PdfWriter()
        for index in indices:
            writer.add_page(reader.pages[index])
        for page in writer.pages:  # links into the book: their pages are not all here
            if "/Annots" in page:
                page[NameObject("/Annots")] = ArrayObject(
                    [a for a in page["/Annots"].get_object() if "/Dest" not in a.get_object()
                     and a.get_object().get("/A", {}).get("/S") != "/GoTo"])
        keep = {index: position for position, index in enumerate(indices)}
        _add_outline(writer, tree, keep=keep)
        writer.page_mode = "/UseOutlines"
        writer.add_metadata({"/Title": f"{contents.get('title', 'Book')}, chapter {number}"})
        path = Path(out_dir) / CHAPTER_PDF.format(number=number)
        with open(path, "wb") as stream:
            writer.write(stream)
        written[number] = str(path)
    return written


# Run before the page's own scripts: the MathJax configuration the page assigns to
# window.MathJax gets "startup: {typeset: false}", so MathJax starts without typesetting.
DEFER_TYPESETTING = """
(() => {
  let value, configured = false;
  Object.defineProperty(window, "MathJax", {
    configurable: true,
    get() { return value; },
    set(assigned) {
      if (!configured && assigned) {  // the page's configuration, then MathJax itself
        configured = true;
        assigned.startup = Object.assign({}, assigned.startup, {typeset: false});
      }
      value = assigned;
    },
  });
})();
"""


def _typeset(page):
    """Typeset the math of what the page now shows; raise if a formula is left."""
    unrendered = page.evaluate("""async () => {
        await MathJax.typesetPromise([document.body]);
        return document.querySelectorAll('.math:not(:has(mjx-container))').length;
    }""")
    if unrendered:
        raise RuntimeError(f"MathJax left {unrendered} formulas untypeset")


def print_book(html_dir, out_dir, *, chromium=None, chapters=range(1, 6), log=print):
    """Print ``html_dir`` (a singlehtml build) to the book PDF and the sheets.

    Returns a dict with the files written and what the book holds (chapters,
    exercises, solutions, figures). Raises ``RuntimeError`` if Chromium or
    Playwright is missing or the page is not the book.
    """
    from playwright.sync_api import sync_playwright

    html_dir, out_dir = Path(html_dir).resolve(), Path(out_dir).resolve()
    page_file = html_dir / "book" / "intro.html"
    if not page_file.is_file():
        raise RuntimeError(f"{page_file} is missing: build the one-page HTML first "
                           "(jupyter-book build --builder singlehtml .)")
    chromium = chromium or find_chromium()
    if chromium is None:
        raise RuntimeError("Chromium is not installed: apt-get install chromium-headless-shell "
                           "(or chromium; or set CHROMIUM to its executable)")
    # Sphinx writes the page to book/intro.html with links relative to the build's
    # root: a copy at the root resolves them.
    printable = html_dir / "print.html"
    shutil.copyfile(page_file, printable)
    out_dir.mkdir(parents=True, exist_ok=True)
    meta = _metadata()
    written = {}
    start = time.monotonic()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            # MathJax typesets the math only once the page shows what is printed, in
            # print media (_typeset), not when the web page loads: it then matches the
            # print font's size, and skips the library reference, which is not printed.
            page.add_init_script(DEFER_TYPESETTING)
            page.goto(printable.as_uri(), wait_until="load", timeout=600_000)
            page.wait_for_function("window.MathJax && MathJax.startup && MathJax.startup.promise",
                                   timeout=120_000)
            page.evaluate("async () => { await MathJax.startup.promise; }")
            page.add_style_tag(path=str(HERE / "print.css"))
            # bookmarks spell formulas as the search snippets do (bookTexToText)
            page.add_script_tag(path=str(HERE.parent / "_static" / "search_math.js"))
            page.add_script_tag(path=str(HERE / "print_pdf.js"))
            page.emulate_media(media="print")
            log(f"loaded in {time.monotonic() - start:.0f} s")

            contents = page.evaluate("(meta) => printBook(meta)", meta)
            _typeset(page)
            log(f"the book typeset ({time.monotonic() - start:.0f} s)")
            book = out_dir / BOOK_PDF
            options = dict(format="A4", margin=MARGIN, print_background=True,
                           display_header_footer=True, header_template="<span></span>",
                           footer_template=FOOTER.format(left=""), outline=True, tagged=True)
            # A first print finds the page of each contents entry. It is laid out as the
            # book is, but paints nothing (hidden text keeps its place; a third less
            # time), and has no outline and no tags, which change nothing on the pages.
            blank = page.add_style_tag(content="body * { visibility: hidden !important; }")
            page.pdf(path=str(book), **dict(options, outline=False, tagged=False))
            blank.evaluate("element => element.remove()")
            pages = _toc_pages(book, [entry["id"] for entry in contents["toc"]]
                               + [item["id"] for item in contents["outline"]]
                               + contents["starts"])
            missing = [entry["text"] for entry in contents["toc"] if entry["id"] not in pages]
            if missing:
                raise RuntimeError(f"no page found for the contents entries {missing}")
            page.evaluate("(pages) => setTocPages(pages)", pages)
            # Chromium's own bookmarks doubled the titles of headings that open a page
            # ("1. 1. Deep residual networksDeep residual networks"): they are written
            # from the headings' text instead (write_outline).
            page.pdf(path=str(book), **dict(options, outline=False))
            contents["title"] = meta["title"]
            write_outline(book, contents["outline"], pages)
            written["book"] = str(book)
            log(f"{book.name} written ({time.monotonic() - start:.0f} s)")
            written["chapters"] = write_chapters(book, out_dir, contents, pages)
            log(f"{len(written['chapters'])} chapters' PDFs written "
                f"({time.monotonic() - start:.0f} s)")

            sheets = {}
            for number in chapters:
                sheet = page.evaluate("([n, meta]) => printSheet(n, meta)", [number, meta])
                _typeset(page)
                path = out_dir / f"exercises-ch{number}.pdf"
                page.pdf(path=str(path), **dict(options, footer_template=FOOTER.format(
                    left=f"Chapter {number}, exercises &middot; page "), outline=False))
                sheets[number] = {"path": str(path), "exercises": sheet["exercises"]}
                log(f"{path.name}: {sheet['exercises']} exercises")
            written["sheets"] = sheets
        finally:
            browser.close()
            printable.unlink(missing_ok=True)
    written.update(contents=contents, pages=pages, seconds=round(time.monotonic() - start))
    (out_dir / "contents.json").write_text(json.dumps(written, indent=1) + "\n")
    return written


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("html", help="the singlehtml build (holds book/intro.html)")
    parser.add_argument("out", help="the folder the PDFs are written to")
    args = parser.parse_args(argv)
    try:
        result = print_book(args.html, args.out)
    except RuntimeError as error:
        print(f"print_pdf: {error}", file=sys.stderr)
        return 1
    print(f"The book: {result['book']}; its chapters: "
          f"{', '.join(Path(path).name for path in result['chapters'].values())}; exercise sheets: "
          f"{', '.join(Path(s['path']).name for s in result['sheets'].values())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

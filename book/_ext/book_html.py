"""Small fixes to the HTML pages the theme writes (a local Sphinx extension).

- The book has no live code: drop sphinx-thebe's scripts and stylesheet, which
  Jupyter Book 1.x loads on every page (twice, so that every page logged
  "Identifier 'THEBE_JS_URL' has already been declared") and which would fetch
  thebe from unpkg.com.
- The theme's ".pdf" download button only opens the browser's print dialog:
  it is replaced by a link to the printed edition (``make pdf``): the book's
  PDF (config value ``book_pdf``), or in the student edition each chapter's
  exercise sheet (``book_pdf_sheets``, with ``{chapter}`` for its number). The
  PDFs are copied into the build's ``_pdf/`` folder; where a file is missing,
  the page has no ".pdf" button.
- A proof folded with ``:class: dropdown`` gets its first paragraph as its
  title (sphinx-togglebutton needs one).
- The logo's text is dark grey: in dark mode the theme shows
  ``book/_static/logo-dark.svg`` instead, whose text is light.
- Each ``{numref}`` is resolved with its target page's doctree read once per
  build (Sphinx 7 reads it from disk again for every reference; see
  :func:`_read_numref_targets_once`).
- Search results show a snippet of the page also when the book is opened from
  disk (``file://``), where the browser forbids Sphinx's search page to fetch the
  pages it summarises: the text of every page (kept with the ids of its
  sections, so that a result's anchor finds its part) is written to
  ``_static/search_texts.js``, and ``_static/search_offline.js`` on the search
  page answers Sphinx's requests for those pages from it.
"""

import html
import json
import re
import shutil
import weakref
from pathlib import Path

import lxml.html
from lxml import etree
from sphinx.util import logging

LOGGER = logging.getLogger(__name__)
CHAPTER = re.compile(r"(?:^|/)ch(\d+)_")
PDF_FOLDER = "_pdf"

THEBE = ("sphinx-thebe", "THEBE_JS_URL", "thebe@")
# A sphinx-proof proof box has no title element; with ``:class: dropdown``
# sphinx-togglebutton then fails on the page ("Cannot read properties of null")
# and leaves every dropdown of the page open. Its first paragraph ("Proof. Idea:
# ...") becomes the title, so the folded proof shows its idea and opens on a tap.
# Every proof box has id="proof", and the toggle finds its box by id: a folded
# proof gets an id of its own, or a second one would never fold.
PROOF_DROPDOWN = re.compile(
    r'<div class="(proof\b[^"]*\bdropdown\b[^"]*)" id="proof">\s*<p>')


SEARCH_TEXTS = "search_texts.js"
SEARCH_OFFLINE = "search_offline.js"
# Loaded on the search page only; it does nothing when the book is served over
# http(s), where Sphinx fetches the pages itself.
SEARCH_OFFLINE_JS = """\
// Offline search snippets (book/_ext/book_html.py): on file:// the browser
// forbids fetch(), so the search page's requests for the pages it summarises
// are answered from window.BOOK_SEARCH_TEXTS (search_texts.js).
(() => {
  if (location.protocol !== "file:") return;
  const realFetch = window.fetch.bind(window);
  window.fetch = (input, init) => {
    const texts = window.BOOK_SEARCH_TEXTS || {};
    const root = new URL(document.documentElement.dataset.content_root || "./",
                         location.href);
    const url = new URL(typeof input === "string" ? input : input.url, location.href);
    if (url.href.startsWith(root.href) && url.pathname.endsWith(".html")) {
      const page = decodeURIComponent(url.pathname.slice(root.pathname.length, -5));
      if (page in texts) {
        return Promise.resolve(new Response(texts[page],
                                            {headers: {"Content-Type": "text/html"}}));
      }
    }
    return realFetch(input, init);
  };
})();
"""


# The parts of the main element that are not the page's text: the article header's
# buttons, the contents printed for paper, the page's sidebar and the prev/next links.
_NOT_TEXT = ("headerlink", "bd-header-article", "prev-next-area", "onlyprint",
             "bd-sidebar-secondary")
_NOT_TEXT_XPATH = etree.XPath(".//script | .//style | .//*[" + " or ".join(
    f"contains(concat(' ', normalize-space(@class), ' '), ' {name} ')" for name in _NOT_TEXT)
    + "]")


def _searchable(page):
    """The text of a built page's main part as HTML that keeps only the ids.

    Sphinx's search summary reads the text content of ``[role="main"]``, or of
    ``[role="main"] #anchor`` for a result inside a page; every element with an id
    is kept (as a ``div``) so that those queries find the same text as on the page.

    Examples
    --------
    >>> _searchable('<div role="main"><h1 id="t">A <a class="headerlink">#</a></h1>'
    ...             '<p>b  <em>c</em></p><script>x()</script></div>')
    '<div role="main"><div id="t">A </div>b c</div>'
    """
    found = lxml.html.document_fromstring(page).xpath('//*[@role="main"]')
    if not found:
        return None
    main = found[0]
    for element in _NOT_TEXT_XPATH(main):
        element.drop_tree()  # keeps the text that follows it
    parts = []

    def text(string):
        return html.escape(re.sub(r"\s+", " ", string)) if string else ""

    def visit(node):
        if not isinstance(node.tag, str):  # a comment: only the text after it counts
            parts.append(text(node.tail))
            return
        ident = node.get("id")
        if ident:
            parts.append(f'<div id="{html.escape(ident, quote=True)}">')
        parts.append(text(node.text))
        for child in node:
            visit(child)
        if ident:
            parts.append("</div>")
        parts.append(text(node.tail))

    parts.append(text(main.text))
    for child in main:
        visit(child)
    return '<div role="main">' + "".join(parts) + "</div>"


def _add_search_scripts(app, pagename, templatename, context, doctree):
    if app.builder.name == "html" and pagename == "search":
        app.add_js_file(SEARCH_TEXTS)
        app.add_js_file(SEARCH_OFFLINE)


def _write_search_texts(app, exception):
    # Read back from the written pages (an incremental build writes only some).
    if exception is not None or app.builder.name != "html":
        return
    outdir = Path(app.outdir)
    texts = {}
    for docname in sorted(app.env.found_docs):
        path = outdir / app.builder.get_target_uri(docname)
        if path.is_file():
            text = _searchable(path.read_text(encoding="utf-8"))
            if text is not None:
                texts[docname] = text
    data = json.dumps(texts, sort_keys=True, ensure_ascii=True).replace("</", "<\\/")
    static = outdir / "_static"
    static.mkdir(exist_ok=True)
    (static / SEARCH_TEXTS).write_text(f"window.BOOK_SEARCH_TEXTS = {data};\n",
                                       encoding="utf-8")
    (static / SEARCH_OFFLINE).write_text(SEARCH_OFFLINE_JS, encoding="utf-8")


def _is_thebe(asset):
    text = " ".join(str(part) for part in (getattr(asset, "filename", asset),
                                           getattr(asset, "attributes", {}).get("body", "")))
    return any(word in text for word in THEBE)


def _clean_page(app, pagename, templatename, context, doctree):
    if "body" in context and "dropdown" in context["body"]:
        count = iter(range(1, 1000))
        context["body"] = PROOF_DROPDOWN.sub(
            lambda m: (f'<div class="{m.group(1)}" id="proof-dropdown-{next(count)}">\n'
                       '<p class="admonition-title">'), context["body"])
    for key in ("script_files", "css_files"):
        if key in context:
            context[key] = [asset for asset in context[key] if not _is_thebe(asset)]
    for group in context.get("header_buttons", []):
        if isinstance(group, dict) and group.get("label") == "download-buttons":
            group["buttons"] = [button for button in group["buttons"]
                                if button.get("label") != "download-pdf-button"]
            button = _pdf_button(app, pagename, context["pathto"])
            if button:
                group["buttons"].append(button)


def _pdf_button(app, pagename, pathto):
    pdfs = getattr(app, "book_pdfs", {})
    if "book" in pdfs:
        name, tooltip = pdfs["book"].name, "Download the book (PDF)"
    else:
        match = CHAPTER.search(pagename)
        sheet = match and pdfs.get(int(match.group(1)))
        if not sheet:
            return None
        name, tooltip = sheet.name, "Download this chapter's exercise sheet (PDF)"
    return {"type": "link", "url": pathto(f"{PDF_FOLDER}/{name}", 1), "text": ".pdf",
            "tooltip": tooltip, "icon": "fas fa-file-pdf", "label": "download-pdf-button"}


def _find_pdfs(app):
    """The printed edition's files this build links to (only those that exist)."""
    app.book_pdfs = {}
    if app.builder.name != "html":
        return
    root = Path(app.srcdir)
    if app.config.book_pdf:
        path = root / app.config.book_pdf
        if path.is_file():
            app.book_pdfs["book"] = path
        else:
            LOGGER.info(f"book_html: no {path}, so no .pdf button (make pdf prints the book)")
    if app.config.book_pdf_sheets:
        for number in range(1, 100):
            path = root / app.config.book_pdf_sheets.format(chapter=number)
            if path.is_file():
                app.book_pdfs[number] = path


def _copy_pdfs(app, exception):
    if exception is None and getattr(app, "book_pdfs", None):
        folder = Path(app.outdir) / PDF_FOLDER
        folder.mkdir(exist_ok=True)
        for path in app.book_pdfs.values():
            shutil.copyfile(path, folder / path.name)


def _dark_logo(app, config):
    # Jupyter Book fills html_theme_options itself: add to it, do not replace it.
    options = config.html_theme_options
    logo = options.setdefault("logo", {})
    logo.setdefault("image_dark", "book/_static/logo-dark.svg")


def _singlehtml_handlers(app):
    # Sphinx looks up node visitors by builder name and falls back to the format
    # only when no extension registered any for that name. Some register
    # visitors for "singlehtml", so the html-only ones (myst-nb's folded cells)
    # were missing from the one-page build the PDF is printed from.
    if app.builder.name == "singlehtml":
        handlers = app.registry.translation_handlers
        for name, pair in handlers.get("html", {}).items():
            handlers.setdefault("singlehtml", {}).setdefault(name, pair)


def _read_numref_targets_once(app):
    """Resolve every ``{numref}`` with its target page's doctree unpickled once.

    Sphinx 7's standard domain (``StandardDomain._resolve_numref_xref``) unpickles
    the whole doctree of the page a ``{numref}`` points to for every reference, only
    to look up the target node and its number: the book's 68 references cost about
    2 s of each build. The doctrees do not change while references are resolved and
    that lookup only reads them, so each is read once per build here and kept for
    the next reference to the same page. The HTML written is byte for byte the same
    (compared over a whole build). Without that private method (another Sphinx),
    nothing is changed.
    """
    from sphinx.domains.std import StandardDomain

    resolve = getattr(StandardDomain, "_resolve_numref_xref", None)
    if resolve is None or getattr(resolve, "reads_targets_once", False):
        return
    read = weakref.WeakKeyDictionary()  # environment -> {page: doctree}

    def resolve_reading_once(self, env, *args, **kwargs):
        pages = read.setdefault(env, {})

        def get_doctree(docname):
            if docname not in pages:
                pages[docname] = type(env).get_doctree(env, docname)
            return pages[docname]

        env.get_doctree = get_doctree  # for this lookup only
        try:
            return resolve(self, env, *args, **kwargs)
        finally:
            del env.get_doctree

    resolve_reading_once.reads_targets_once = True
    StandardDomain._resolve_numref_xref = resolve_reading_once


def setup(app):
    app.add_config_value("book_pdf", "", "html", [str])
    app.add_config_value("book_pdf_sheets", "", "html", [str])
    app.connect("config-inited", _dark_logo)
    _read_numref_targets_once(app)
    app.connect("builder-inited", _singlehtml_handlers)
    app.connect("builder-inited", _find_pdfs)
    app.connect("build-finished", _copy_pdfs)
    app.connect("html-page-context", _add_search_scripts)
    app.connect("build-finished", _write_search_texts)
    # After sphinx-book-theme (priority 500) has added its header buttons.
    app.connect("html-page-context", _clean_page, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

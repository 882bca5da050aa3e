"""Small fixes to the HTML pages the theme writes (a local Sphinx extension).

- The book has no live code: drop sphinx-thebe's scripts and stylesheet, which
  Jupyter Book 1.x loads on every page (twice, so that every page logged
  "Identifier 'THEBE_JS_URL' has already been declared") and which would fetch
  thebe from unpkg.com.
- The theme's ".pdf" download button only opens the browser's print dialog:
  it is replaced by a link to the printed edition (``make pdf``): on a chapter's
  pages that chapter's PDF (config value ``book_pdf_chapters``, with ``{chapter}``
  for its number), on the other pages the book's (``book_pdf``), and in the
  student edition each chapter's exercise sheet (``book_pdf_sheets``). The PDFs
  are copied into the build's ``_pdf/`` folder; where a file is missing, the page
  has no ".pdf" button.
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
  page answers Sphinx's requests for those pages from it. On every search page,
  ``_static/search_math.js`` rewrites each formula of a page as plain text with
  Unicode symbols before Sphinx cuts its snippet, so a snippet shows
  "Let A = RP be ..." rather than the TeX "Let \\(A = RP\\) be ...".
- Every figure of a notebook opens full size on a tap: its image is wrapped in a
  link to the image file. The image also carries the height of its smallest text
  in image pixels (``data-text-px``: the smallest font size that the cell which
  drew it asks for, else the book style's, at the PNG's resolution; for an SVG,
  its own), and the smallest width at which that text is 7 CSS px high
  (``--book-min-width``): where the figure's box is narrower (a phone), book.css
  shows the figure at that width, scrolling sideways inside its own box.
- The bibliography's entries are list items of its list (docutils gives them the
  deprecated role doc-biblioentry).
- The sidebar's buttons that unfold a chapter's sections (a ``<summary>`` holding
  only a chevron icon) get a name a screen reader can say: "Sections of <title>"
  (axe-core's rule summary-name).
- ``_static/book.js`` on every page lays long display formulas out again when the
  window's width changes and marks the boxes that scroll sideways.
"""

import base64
import hashlib
import html
import json
import re
import shutil
import struct
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


SEARCH_MATH = "search_math.js"  # in book/_static
BOOK_JS = "book.js"  # in book/_static
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
    is kept (as a ``div``) so that those queries find the same text as on the page,
    and every formula (class ``math``) so that search_math.js finds it.

    Examples
    --------
    >>> _searchable('<div role="main"><h1 id="t">A <a class="headerlink">#</a></h1>'
    ...             '<p>b  <em>c</em> <span class="math notranslate">x + y</span></p>'
    ...             '<script>x()</script></div>')
    '<div role="main"><div id="t">A </div>b c <span class="math">x + y</span></div>'
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
        math = "math" in (node.get("class") or "").split()  # kept for search_math.js
        if ident:
            parts.append(f'<div id="{html.escape(ident, quote=True)}">')
        if math:
            parts.append(f'<{node.tag} class="math">')
        parts.append(text(node.text))
        for child in node:
            visit(child)
        if math:
            parts.append(f"</{node.tag}>")
        if ident:
            parts.append("</div>")
        parts.append(text(node.tail))

    parts.append(text(main.text))
    for child in main:
        visit(child)
    return '<div role="main">' + "".join(parts) + "</div>"


def _add_search_scripts(app, pagename, templatename, context, doctree):
    if pagename == "search" and app.builder.name in ("html", "singlehtml"):
        app.add_js_file(SEARCH_MATH)
        if app.builder.name == "html":
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


# ---------------------------------------------------------------- figures on a phone
#: The text of the book's figures stays at least this many CSS pixels high.
FIGURE_TEXT_CSS_PX = 7.0
#: matplotlib's sizes in points: the book style's (resnet_theory.plotting) smallest
#: text is its tick labels and legends, 10 pt (font.size 11 pt); named sizes scale
#: font.size.
STYLE_SMALLEST_PT = 10.0
STYLE_FONT_PT = 11.0
NAMED_SIZES = {"xx-small": 0.579, "x-small": 0.694, "small": 0.833, "medium": 1.0,
               "large": 1.2, "x-large": 1.44, "xx-large": 1.728, "smaller": 0.833,
               "larger": 1.2}
#: Sizes a cell's code asks for: fontsize=8, labelsize=7.5, size="small", ...
SIZE_ARGUMENT = re.compile(r"\b(?:fontsize|labelsize|titlesize|size)\s*=\s*"
                           r"(?:(\d+(?:\.\d+)?)|[\"'](x{0,2}-?(?:small|large)|medium|smaller|"
                           r"larger)[\"'])")
#: Library helpers that write text of their own, and its size in points.
HELPER_SIZES = {"mark_critical_points": 9.0}
IMG_TAG = re.compile(r'(<a class="reference internal image-reference" href="[^"]*">)?'
                     r'(<img\b[^>]*\bsrc="([^"]*_images/([^"/]+\.(?:png|svg)))"[^>]*/?>)')
#: matplotlib's SVG draws text as glyph outlines scaled by (font size in pt) / 100
SVG_GLYPH_SCALE = re.compile(r"scale\(([0-9.]+) -\1\)")
SVG_FONT_SIZE = re.compile(r"font-size[=:]\s*[\"']?([0-9.]+)(px|pt)?")
SVG_WIDTH = re.compile(r"<svg\b[^>]*\bwidth=\"([0-9.]+)(pt|px)?\"")


def smallest_text_pt(source):
    """The smallest font size (points) a plotting cell's code can give its text.

    The book style's smallest, or smaller sizes the code asks for explicitly.

    Examples
    --------
    >>> smallest_text_pt("ax.plot(x, y)")
    10.0
    >>> smallest_text_pt("ax.text(0, 1, 'a', fontsize=7); ax.legend(fontsize='small')")
    7.0
    >>> round(smallest_text_pt("ax.tick_params(labelsize='x-small')"), 2)
    7.63
    """
    sizes = [STYLE_SMALLEST_PT]
    for number, name in SIZE_ARGUMENT.findall(source):
        sizes.append(float(number) if number else STYLE_FONT_PT * NAMED_SIZES[name])
    sizes += [size for helper, size in HELPER_SIZES.items() if helper in source]
    return min(sizes)


def png_size_and_dpi(data):
    """(width, height, dots per inch) of a PNG, from its header and pHYs chunk.

    Examples
    --------
    >>> header = b"\\x89PNG\\r\\n\\x1a\\n" + struct.pack(">I4sII", 13, b"IHDR", 900, 400)
    >>> phys = struct.pack(">I4sIIB", 9, b"pHYs", 3937, 3937, 1)
    >>> w, h, dpi = png_size_and_dpi(header + b"\\0" * 9 + phys)
    >>> (w, h, round(dpi))
    (900, 400, 100)
    """
    width, height = struct.unpack(">II", data[16:24])
    dpi = 72.0  # PNG's default when no resolution is stored
    at = data.find(b"pHYs")
    if at > 0:
        x, _, unit = struct.unpack(">IIB", data[at + 4:at + 13])
        if unit == 1 and x:
            dpi = x * 0.0254
    return width, height, dpi


def svg_text(svg):
    """(width in CSS px, smallest text in CSS px) of an SVG file's text, or None.

    matplotlib writes text as glyph outlines scaled by font size / 100, in a
    drawing measured in points.

    Examples
    --------
    >>> svg_text('<svg width="648pt" height="300pt"><g transform="scale(0.1 -0.1)"/>'
    ...          '<g transform="scale(0.08 -0.08)"/></svg>')
    (864.0, 10.67)
    """
    width = SVG_WIDTH.search(svg)
    if not width:
        return None
    to_px = 4 / 3 if width.group(2) == "pt" else 1.0
    sizes = [100 * float(scale) for scale in SVG_GLYPH_SCALE.findall(svg)]
    sizes += [float(size) * (4 / 3 if unit == "pt" else 1.0) / to_px
              for size, unit in SVG_FONT_SIZE.findall(svg)]
    if not sizes:
        return None
    return float(width.group(1)) * to_px, round(min(sizes) * to_px, 2)


def _notebook_figures(app):
    """{image name: (width px, smallest text px)} for every PNG a notebook's cell draws.

    The image's name is the SHA-256 of its bytes, as myst-nb names it in _images/.
    """
    import nbformat

    found = {}
    for docname in sorted(app.env.found_docs):
        path = Path(app.env.doc2path(docname))
        if path.suffix != ".ipynb" or not path.is_file():
            continue
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type != "code":
                continue
            for output in cell.get("outputs", []):
                encoded = output.get("data", {}).get("image/png")
                if not encoded:
                    continue
                data = base64.b64decode(encoded)
                width, _, dpi = png_size_and_dpi(data)
                text_px = smallest_text_pt(cell.source) * dpi / 72
                found[hashlib.sha256(data).hexdigest() + ".png"] = (width, text_px)
    for source, (_, name) in getattr(app.env, "images", {}).items():
        if name.endswith(".svg"):
            path = Path(app.srcdir) / source
            measured = path.is_file() and svg_text(path.read_text(encoding="utf-8"))
            if measured:
                found[name] = measured
    return found


def _figure_links(app, body):
    """Wrap every notebook image of a page in a link to the image file, with the
    height of its smallest text and, where a phone's column would make that text
    smaller than FIGURE_TEXT_CSS_PX, the width that keeps it readable."""
    if "_images/" not in body:
        return body
    figures = getattr(app, "book_figures", None)
    if figures is None:
        figures = app.book_figures = _notebook_figures(app)

    def wrap(match):
        link, tag, src, name = match.group(1), match.group(2), match.group(3), match.group(4)
        known = figures.get(name)
        if known:
            # the width below which the smallest text would be under 7 CSS px (with 2 %
            # to spare); at most twice the image's own width
            width, text_px = known
            needed = min(2 * width, 1.02 * width * FIGURE_TEXT_CSS_PX / text_px)
            variable = f"--book-min-width: {needed:.0f}px;"
            if ' style="' in tag:  # a width given by the figure's directive
                tag = tag.replace(' style="', f' style="{variable} ', 1)
            else:
                tag = re.sub(r"\s*/?>$", f' style="{variable}" />', tag)
            tag = re.sub(r"\s*/?>$", f' data-text-px="{text_px:.2f}" />', tag)
        if link:  # Sphinx's own link around a scaled image: it becomes the figure's link
            return link.replace('class="', 'class="book-figure-link ', 1) + tag
        return f'<a class="book-figure-link" href="{src}">{tag}</a>'

    return IMG_TAG.sub(wrap, body)


# A sidebar entry with sections: its link, then a <details> whose <summary> holds
# only the chevron icon (pydata-sphinx-theme's toctree.py).
SIDEBAR_SUMMARY = re.compile(
    r'(<a class="reference internal"[^>]*>(.*?)</a>\s*<details(?:\s[^>]*)?>\s*)<summary>',
    re.DOTALL)


def name_sidebar_toggles(toctree_html):
    """Give each sidebar ``<summary>`` that holds only an icon an accessible name.

    Examples
    --------
    >>> named = name_sidebar_toggles(
    ...     '<a class="reference internal" href="a.html">1. A &amp; <b>B</b></a>'
    ...     '<details open="open"><summary><span></span></summary>')
    >>> named[named.index("<summary"):]
    '<summary aria-label="Sections of 1. A &amp; B"><span></span></summary>'
    """
    def name(match):
        title = html.unescape(re.sub(r"<[^>]+>", "", match.group(2))).strip()
        label = html.escape(f"Sections of {title}", quote=True)
        return f'{match.group(1)}<summary aria-label="{label}">'

    return SIDEBAR_SUMMARY.sub(name, toctree_html)


def _named_toctree(generate):
    def generate_toctree_html(*args, **kwargs):
        toctree = generate(*args, **kwargs)
        if isinstance(toctree, str):
            return name_sidebar_toggles(toctree)
        for summary in toctree.select("li > details > summary"):  # the parsed tree
            link = summary.parent.parent.find("a", recursive=False)
            if link is not None and not summary.get_text(strip=True):
                summary["aria-label"] = f"Sections of {link.get_text(' ', strip=True)}"
        return toctree
    return generate_toctree_html


def _is_thebe(asset):
    text = " ".join(str(part) for part in (getattr(asset, "filename", asset),
                                           getattr(asset, "attributes", {}).get("body", "")))
    return any(word in text for word in THEBE)


def _clean_page(app, pagename, templatename, context, doctree):
    if "body" in context:
        context["body"] = _figure_links(app, context["body"])
        # The bibliography is a list (role="list") whose entries docutils marks with
        # the deprecated role doc-biblioentry, which is not a list item (axe-core:
        # aria-required-children, critical).
        context["body"] = context["body"].replace('role="doc-biblioentry"', 'role="listitem"')
    if callable(context.get("generate_toctree_html")):
        context["generate_toctree_html"] = _named_toctree(context["generate_toctree_html"])
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
    """The ".pdf" button of a page: a chapter's page serves its chapter's PDF (or, in
    the student edition, its exercise sheet); the other pages serve the book's."""
    pdfs = getattr(app, "book_pdfs", {})
    match = CHAPTER.search(pagename)
    number = match and int(match.group(1))
    if number and number in pdfs.get("chapters", {}):
        path, tooltip = pdfs["chapters"][number], "Download this chapter (PDF)"
    elif number and number in pdfs.get("sheets", {}):
        path, tooltip = pdfs["sheets"][number], "Download this chapter's exercise sheet (PDF)"
    elif "book" in pdfs:
        path, tooltip = pdfs["book"], "Download the book (PDF)"
    else:
        return None
    return {"type": "link", "url": pathto(f"{PDF_FOLDER}/{path.name}", 1), "text": ".pdf",
            "tooltip": tooltip, "icon": "fas fa-file-pdf", "label": "download-pdf-button"}


def _find_pdfs(app):
    """The printed edition's files this build links to (only those that exist):
    ``{"book": path, "chapters": {number: path}, "sheets": {number: path}}``."""
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
    for key, pattern in (("chapters", app.config.book_pdf_chapters),
                         ("sheets", app.config.book_pdf_sheets)):
        if pattern:
            found = {number: root / pattern.format(chapter=number) for number in range(1, 100)}
            app.book_pdfs[key] = {n: path for n, path in found.items() if path.is_file()}


def _copy_pdfs(app, exception):
    if exception is None and getattr(app, "book_pdfs", None):
        folder = Path(app.outdir) / PDF_FOLDER
        folder.mkdir(exist_ok=True)
        paths = [app.book_pdfs["book"]] if "book" in app.book_pdfs else []
        for key in ("chapters", "sheets"):
            paths += app.book_pdfs.get(key, {}).values()
        for path in paths:
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
    app.add_config_value("book_pdf_chapters", "", "html", [str])
    app.connect("config-inited", _dark_logo)
    app.add_js_file(BOOK_JS)
    _read_numref_targets_once(app)
    app.connect("builder-inited", _singlehtml_handlers)
    app.connect("builder-inited", _find_pdfs)
    app.connect("build-finished", _copy_pdfs)
    app.connect("html-page-context", _add_search_scripts)
    app.connect("build-finished", _write_search_texts)
    # After sphinx-book-theme (priority 500) has added its header buttons.
    app.connect("html-page-context", _clean_page, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

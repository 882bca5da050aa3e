"""Lecture slides: one reveal.js deck per chapter, a view of the chapter's notebooks.

``make slides`` runs this script on the HTML build of the book::

    python book/_ext/slides.py build --html _build/html --out _build/slides [--pdf]

It writes ``slides-ch1.html`` ... ``slides-ch5.html`` (and with ``--pdf`` one PDF per
deck, ``slides-ch<N>.pdf``, one slide a page, printed by Chromium in reveal.js's print
mode), with ``figures/``, the pinned reveal.js (``revealjs/``, vendored from npm next to
this file, see ``revealjs/VENDORED.txt``) and the book's MathJax (``mathjax/``, from
``book/_static``) beside them: a deck opens from disk with no network.

**What becomes a slide.** The notebooks choose, by structure and by cell tags:

- by structure: every ``{prf:theorem}``, ``{prf:lemma}`` and ``{prf:proposition}`` box
  (its statement; its proof stays in the book), and every ``{exercise}`` statement (up
  to three short ones share a slide); never a solution;
- the tag ``slide`` on a markdown cell: its heading and its first paragraph or list (the
  opening idea, the takeaways);
- the tag ``slide`` on a code cell with a figure (``mystnb.figure``): the figure with
  its numbered caption (the opening conceptual figure, the key results);
- the tag ``slide-idea=<label>`` on the markdown cell that holds the proof of the box
  ``<label>``: the proof's opening *Idea* paragraph, on a slide of its own.

Every slide's text goes through the Colab editions' converter
(:class:`editions.ColabConverter`), so a deck shows "Theorem 2.1 (...)" with the book's
numbers and titles, links to the book instead of MyST roles, and no MyST. The speaker
notes are the prose around each slide, each paragraph used once: the rest of a tagged
cell's prose; for a figure, the paragraph that refers to it, else one of its section,
else its alt text; for a statement, the nearest paragraph of its section before it
(after it when there is none); for the takeaways, the paragraph closing the section
before them; never one inside a solution. They keep their formulas as TeX. An opening
whose cell is one paragraph has no notes (the slide is that paragraph), nor have the
exercise slides (the prose around an exercise is its solution).

The tags are written by ``python book/_ext/slides.py tag`` from the table ``TAGS``
below: it reads each notebook, adds the tags, and writes it back, changing nothing
else (it refuses a notebook with uncommitted changes). The decks are built with
nbconvert's slides exporter (the ``reveal`` template, with its network scripts
replaced by the local reveal.js and MathJax).
"""

import argparse
import base64
import html
import json
import re
import shutil
import subprocess
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

import editions  # noqa: E402

REVEAL = HERE / "revealjs"
MATHJAX = ROOT / "book" / "_static" / "mathjax"
#: The kinds of box that become statement slides.
STATEMENT_KINDS = ("theorem", "lemma", "proposition")
TAG_SLIDE = "slide"
TAG_IDEA = "slide-idea="
#: The slides' design size (reveal.js scales it to the window).
WIDTH, HEIGHT = 1280, 720
#: Up to three exercise statements share a slide when together they are at most this long.
PACK_CHARS = 1400
#: The type starts at this size (px, at the design size) and shrinks, a pixel at a
#: time, on a slide whose content would overflow, down to MIN_FONT; then the figures
#: shrink. tests/test_slides.py checks that no slide needs less.
FONT, MIN_FONT = 30, 18

# The cells to tag, per notebook: ("title",) the opening cell (heading and idea),
# ("takeaways",) the takeaways, ("figure", name) a figure cell, ("idea", label) the
# cell holding the proof of the box <label>, whose idea paragraph gets a slide.
TAGS = {
    "book/ch1_deep_residual/depth_and_identity.ipynb": [
        ("title",), ("figure", "fig-dr-idea"), ("figure", "fig-dr-jacobian-spectra"),
        ("takeaways",)],
    "book/ch1_deep_residual/plain_vs_residual.ipynb": [
        ("title",), ("figure", "fig-dr-paths"), ("figure", "fig-dr-final-loss"),
        ("figure", "fig-dr-layer-gradients"), ("figure", "fig-dr-bn-curves"),
        ("takeaways",)],
    "book/ch2_identity_matters/linear_residual.ipynb": [
        ("title",), ("figure", "fig-im-path"), ("idea", "im-theorem-2-1"),
        ("figure", "fig-im-small-norm-optima"), ("idea", "im-theorem-2-2"),
        ("takeaways",)],
    "book/ch2_identity_matters/expressivity.ipynb": [
        ("title",), ("figure", "fig-im-cap"), ("idea", "im-theorem-3-2"),
        ("figure", "fig-im-parameter-count"), ("takeaways",)],
    "book/ch2_identity_matters/all_residual.ipynb": [
        ("title",), ("figure", "fig-im-all-residual-sketch"),
        ("figure", "fig-im-training-loss")],
    "book/ch3_near_identities/matrices.ipynb": [
        ("title",), ("figure", "fig-ni-matrix-path"), ("figure", "fig-ni-matrix-factors"),
        ("takeaways",)],
    "book/ch3_near_identities/smooth_maps.ipynb": [
        ("title",), ("figure", "fig-ni-zoom"), ("figure", "fig-ni-layers-grid"),
        ("takeaways",)],
    "book/ch3_near_identities/stationary_points.ipynb": [
        ("title",), ("figure", "fig-ni-descent-direction"), ("idea", "ni-theorem-stationary"),
        ("takeaways",)],
    "book/ch4_deep_linear/gradient_descent.ipynb": [
        ("title",), ("figure", "fig-ch4-gd-idea"), ("idea", "dl-theorem-small-loss"),
        ("figure", "fig-ch4-gd-depths"), ("takeaways",)],
    "book/ch4_deep_linear/symmetric_targets.ipynb": [
        ("title",), ("figure", "fig-ch4-sym-idea"), ("figure", "fig-ch4-sym-negative"),
        ("takeaways",)],
    "book/ch4_deep_linear/positive_targets.ipynb": [
        ("title",), ("figure", "fig-ch4-pt-idea"), ("figure", "fig-ch4-pt-pp-vs-gd"),
        ("takeaways",)],
    "book/ch5_shamir/example_one.ipynb": [
        ("title",), ("figure", "fig-ch5-reparametrisation"), ("takeaways",)],
    "book/ch5_shamir/landscapes.ipynb": [
        ("title",), ("figure", "fig-ch5-pinched-disc"),
        ("figure", "fig-ch5-three-landscapes"), ("takeaways",)],
    "book/ch5_shamir/theorems.ipynb": [
        ("title",), ("figure", "fig-ch5-lifted-segment"), ("figure", "fig-ch5-theorem4-sgd"),
        ("takeaways",)],
}


# ------------------------------------------------------------------ the notebooks' blocks
@dataclass
class Block:
    """A top-level block of a markdown cell: ``kind`` is ``heading``, ``prose``
    (paragraph, list, display math), ``directive`` or ``other``."""
    kind: str
    text: str                     # its MyST source
    name: str = ""                # a directive's name ("prf:theorem")
    argument: str = ""            # a directive's argument (its title)
    options: dict = field(default_factory=dict)
    body: str = ""                # a directive's body, without its options


PROSE = {"paragraph_open", "bullet_list_open", "ordered_list_open", "math_block",
         "math_block_label", "amsmath"}


def blocks(source):
    """The top-level blocks of a MyST markdown source, in order."""
    lines = source.split("\n")
    tokens = editions._tokens(source)
    out, index = [], 0
    while index < len(tokens):
        token = tokens[index]
        if token.level != 0 or token.map is None:
            index += 1
            continue
        depth, stop = token.nesting, index + 1
        while depth > 0 and stop < len(tokens):
            depth += tokens[stop].nesting
            stop += 1
        start, end = token.map
        text = "\n".join(lines[start:end]).strip("\n")
        directive = editions._directive(token)
        if directive:
            options, body = editions.ColabConverter._options(None, token.content)
            out.append(Block("directive", text, directive[0], directive[1], options, body))
        elif token.type == "heading_open":
            out.append(Block("heading", text))
        elif token.type in PROSE:
            out.append(Block("prose", text))
        else:
            out.append(Block("other", text))
        index = stop
    return out


@dataclass
class Item:
    """One slide's worth of a notebook."""
    kind: str          # title, takeaways, figure, statement, idea, exercise
    key: str           # unique in the book: the label, or "<notebook>:<cell id>"
    slide: str         # MyST source of the slide's text ("" for a figure)
    notes: str = ""    # MyST source of the speaker notes
    cell: int = 0      # index of the notebook cell it comes from
    figure: dict = field(default_factory=dict)   # name, caption, alt, png (bytes)


def _tags(cell):
    return list(cell.metadata.get("tags", []))


def solution_cells(notebook):
    """Indices of the cells inside gated solutions (from the cell that opens one to
    the cell that closes it, both included)."""
    inside, found = False, set()
    for index, cell in enumerate(notebook.cells):
        gates = editions._gates(cell.source) if cell.cell_type == "markdown" else []
        if inside or "solution-start" in gates:
            found.add(index)
        for gate in gates:
            inside = gate == "solution-start"
    return found


def _prose_runs(notebook, skip):
    """``(cell index, block index, text)`` of every prose block outside solutions,
    boxes and admonitions, in order."""
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type != "markdown" or index in skip:
            continue
        for number, block in enumerate(blocks(cell.source)):
            if block.kind == "prose":
                yield index, number, block.text


def _first_idea(body):
    """The opening *Idea* paragraph of a proof's body, or None."""
    parts = blocks(body)
    if parts and parts[0].kind == "prose" and re.match(r"^\*Idea\b", parts[0].text):
        return parts[0].text
    return None


def notebook_items(notebook, name):
    """The slide items of one notebook, in its order, with their notes."""
    skip = solution_cells(notebook)
    # The prose of the notebook outside solutions and boxes, with the section (between
    # two headings) each paragraph is in; a paragraph serves one slide at most.
    flow, section, where, used = [], 0, {}, set()
    for index, cell in enumerate(notebook.cells):
        where[(index, 0)] = section
        if cell.cell_type != "markdown" or index in skip:
            continue
        for number, block in enumerate(blocks(cell.source)):
            if block.kind == "heading" and not block.text.startswith("# "):
                section += 1
            where[(index, number)] = section
            if block.kind == "prose":
                flow.append(((index, number), section, block.text))

    def pick(index, number, same_section=True, after=True):
        """The nearest unused paragraph before (index, number), else after it."""
        here = (index, number)
        sec = where.get(here, 0)
        free = [(pos, text) for pos, part, text in flow if pos not in used
                and (not same_section or part == sec)]
        earlier = [f for f in free if f[0] < here]
        later = [f for f in free if f[0] > here] if after else []
        chosen = earlier[-1] if earlier else (later[0] if later else None)
        if chosen is None:
            return ""
        used.add(chosen[0])
        return chosen[1]

    items, ideas = [], {}
    for index, cell in enumerate(notebook.cells):
        for tag in _tags(cell):
            if tag.startswith(TAG_IDEA):
                ideas[tag[len(TAG_IDEA):]] = index
    # a tagged cell's first paragraph is a slide's text, the rest of its prose its notes
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "markdown" and TAG_SLIDE in _tags(cell):
            used.update(pos for pos, _, _ in flow if pos[0] == index)

    pending_proof = {}  # label of the last statement without its proof yet
    for index, cell in enumerate(notebook.cells):
        if index in skip:
            continue
        tags = _tags(cell)
        key = f"{name}:{cell.get('id', index)}"
        if cell.cell_type == "code":
            figure = cell.metadata.get("mystnb", {}).get("figure")
            if TAG_SLIDE in tags:
                if not figure:
                    raise ValueError(f"{name}, cell {index}: the tag {TAG_SLIDE!r} on a code "
                                     "cell needs a figure (mystnb.figure)")
                png = next((o["data"]["image/png"] for o in cell.get("outputs", [])
                            if "image/png" in o.get("data", {})), None)
                if png is None:
                    raise ValueError(f"{name}, cell {index}: the figure has no PNG output")
                label = figure.get("name", key)
                refers = [(pos, text) for pos, _, text in flow
                          if f"`{label}`" in text and pos not in used]
                if refers:
                    used.add(refers[0][0])
                alt = cell.metadata.get("mystnb", {}).get("image", {}).get("alt", "")
                # else a paragraph of its section, else what its alt text says it shows
                notes = refers[0][1] if refers else (pick(index, 0) or alt)
                items.append(Item("figure", label, "", notes, index, {
                    "name": label, "caption": figure.get("caption", ""),
                    "alt": alt,
                    "png": base64.b64decode(png)}))
            continue
        if cell.cell_type != "markdown":
            continue
        parts = blocks(cell.source)
        if TAG_SLIDE in tags:
            heading = [b.text for b in parts[:1] if b.kind == "heading"]
            rest = parts[len(heading):]
            body = []
            while rest and rest[0].kind == "prose" and not body:
                body.append(rest.pop(0).text)
            if not body:
                raise ValueError(f"{name}, cell {index}: the tagged cell has no paragraph "
                                 "after its heading")
            more = []
            while rest and rest[0].kind == "prose":
                more.append(rest.pop(0).text)
            kind = "title" if index == 0 or (heading and heading[0].startswith("# ")) \
                else "takeaways"
            # the opening's notes: the rest of its cell; the takeaways', else, the
            # paragraph that closes the section before them
            notes = "\n\n".join(more) or ("" if kind == "title" else
                                           pick(index, 0, same_section=False, after=False))
            items.append(Item(kind, key, "\n\n".join(heading + body), notes, index))
        for number, block in enumerate(parts):
            if block.kind != "directive":
                continue
            label = block.options.get("label", "")
            kind = block.name.partition(":")[2]
            if block.name.startswith("prf:") and kind in STATEMENT_KINDS:
                if not label:
                    raise ValueError(f"{name}, cell {index}: a {kind} box without a label")
                items.append(Item("statement", label, block.text, pick(index, number),
                                  index))
                pending_proof = {"label": label, "title": block.argument}
            elif block.name == "prf:proof" and pending_proof:
                label, title = pending_proof.pop("label"), pending_proof.pop("title")
                if label in ideas:
                    idea = _first_idea(block.body)
                    if idea is None:
                        raise ValueError(f"{name}: the proof of {label} does not open with "
                                         "an *Idea* paragraph")
                    rest = [b.text for b in blocks(block.body)[1:] if b.kind == "prose"]
                    items.append(Item("idea", f"idea:{label}", idea, rest[0] if rest else "",
                                      index, {"statement": label, "title": title}))
                    ideas.pop(label)
            elif block.name == "exercise":
                items.append(Item("exercise", label, block.text, "", index))
    if ideas:
        raise ValueError(f"{name}: no proof found for the tagged ideas {sorted(ideas)}")
    return items


# ------------------------------------------------------------------ the decks
def chapters(root=ROOT):
    """``[(index docname, [notebook paths])]`` of the numbered chapters, from _toc.yml."""
    toc = yaml.safe_load((Path(root) / "_toc.yml").read_text(encoding="utf-8"))
    found = []
    for part in toc.get("parts", []):
        if not part.get("numbered"):
            continue
        for chapter in part["chapters"]:
            notebooks = [Path(root) / (s["file"] + ".ipynb") for s in chapter.get("sections", [])]
            found.append((chapter["file"], [p for p in notebooks if p.is_file()]))
    return found


def _read(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return nbformat.read(path, as_version=4)


def _macros(root=ROOT):
    config = yaml.safe_load((Path(root) / "_config.yml").read_text(encoding="utf-8"))
    return (config.get("sphinx", {}).get("config", {}).get("mathjax3_config", {})
            .get("tex", {}).get("macros", {}))


def _slide_cell(markdown, kind, key, classes=""):
    cell = nbformat.v4.new_markdown_cell(markdown)
    data = {"item": key, "kind": kind}
    if classes:
        data["class"] = classes
    cell.metadata["slideshow"] = {"slide_type": "slide", "data": data}
    return cell


def _notes_cell(markdown):
    cell = nbformat.v4.new_markdown_cell(markdown)
    cell.metadata["slideshow"] = {"slide_type": "notes"}
    return cell


def _plain_length(markdown):
    return len(re.sub(r"\]\([^)]*\)|<[^>]+>", "", markdown))


def deck_notebook(number, index_doc, notebooks, converter, figures, figures_url,
                  root=ROOT):
    """The notebook of one chapter's deck: a title slide, then each notebook's items.

    ``figures`` (a folder) receives the figures' PNG files, linked as
    ``figures_url/<name>.png``.
    """
    title = converter.pages.get(index_doc, index_doc)
    sections = []
    for path in notebooks:
        docname = path.relative_to(root).with_suffix("").as_posix()
        sections.append(f"- [{converter.pages.get(docname, docname)}]"
                        f"({converter._url(docname + '.html')})")
    cells = [_slide_cell(f"# Chapter {number}\n\n## {title}\n\n" + "\n".join(sections),
                         "deck-title", f"chapter-{number}")]
    for path in notebooks:
        docname = path.relative_to(root).with_suffix("").as_posix()
        converter.docname = docname
        items = notebook_items(_read(path), path.relative_to(root).as_posix())
        exercises = []
        for item in items:
            if item.kind == "exercise":
                exercises.append(item)
                continue
            cells.extend(_item_cells(item, converter, figures, figures_url))
        cells.extend(_exercise_cells(exercises, converter))
    return nbformat.v4.new_notebook(cells=cells, metadata={"title": f"Chapter {number}: {title}"})


def _item_cells(item, converter, figures, figures_url):
    anchor = f'<a id="{html.escape(item.key)}"></a>\n\n' if item.kind in (
        "title", "takeaways", "idea") else ""
    if item.kind == "figure":
        figure = item.figure
        name = figure["name"]
        (figures / f"{name}.png").write_bytes(figure["png"])
        target = converter.targets.get(name)
        number = (target.number.replace("Fig.", "Figure") if target and target.number
                  else "Figure")
        caption = converter.markdown(figure["caption"])
        text = (f'<a id="{html.escape(name)}"></a>\n\n'
                f'<img class="slide-figure" src="{figures_url}/{name}.png" '
                f'alt="{html.escape(figure["alt"], quote=True)}">\n\n'
                f"**{number}.** {caption}")
        classes = "figure"
    elif item.kind == "idea":
        statement = converter.targets.get(item.figure["statement"])
        head = statement.number if statement and statement.number else "Theorem"
        title = item.figure["title"]
        title = f" ({converter.markdown(title)})" if title else ""
        body = converter.markdown(item.slide)
        text = f"{anchor}### {head}{title}\n\n*Proof.* {body}"
        classes = "idea"
    else:
        text = anchor + converter.markdown(item.slide)
        classes = item.kind
    cells = [_slide_cell(text, item.kind, item.key, classes)]
    if item.notes:
        cells.append(_notes_cell(converter.markdown(item.notes)))
    return cells


def _exercise_cells(exercises, converter):
    """Exercise statements, up to three to a slide when together they are short."""
    cells, group = [], []

    def flush():
        if group:
            text = "\n\n".join(converter.markdown(e.slide) for e in group)
            cells.append(_slide_cell(text, "exercise", " ".join(e.key for e in group),
                                     "exercise"))
            group.clear()

    for exercise in exercises:
        size = _plain_length(converter.markdown(exercise.slide))
        if group and (len(group) == 3 or sum(_plain_length(converter.markdown(e.slide))
                                             for e in group) + size > PACK_CHARS):
            flush()
        group.append(exercise)
    flush()
    return cells


# ------------------------------------------------------------------ the template
TEMPLATE = r"""{%- extends 'index.html.j2' -%}
{% block html_head_js %}{% endblock html_head_js %}
{% block jupyter_widgets %}{% endblock jupyter_widgets %}
{% block notebook_css %}{% endblock notebook_css %}
{% block html_head_js_mathjax %}
<script>
window.MathJax = {{ resources.deck.mathjax | json_dumps }};
if (/print-pdf/.test(window.location.search)) {
  // a PDF has no use for the hidden MathML of screen readers (nor its CPU)
  MathJax.loader.load = [];
  MathJax.options.menuOptions.settings.assistiveMml = false;
}
</script>
<script defer src="{{ resources.deck.mathjax_url }}"></script>
{% endblock html_head_js_mathjax %}
{% block html_head_css %}
<style type="text/css">
{{ resources.deck.css }}
</style>
{% endblock html_head_css %}
{% block footer_js %}
<script src="{{ resources.reveal.url_prefix }}/dist/reveal.js"></script>
<script src="{{ resources.reveal.url_prefix }}/dist/plugin/notes.js"></script>
<script>
(function () {
  for (const section of document.querySelectorAll('.reveal .slides section[data-class]')) {
    section.className += ' ' + section.dataset.class;
  }
  const config = {{ resources.deck.reveal | json_dumps }};
  config.plugins = [RevealNotes];
  if (/print-pdf/.test(window.location.search)) {
    // one page per slide, exactly the slide's size (reveal.js adds the margin to a page)
    Object.assign(config, {slideNumber: 'c/t', margin: 0});
  }
  const height = config.height, minFont = {{ resources.deck.min_font }};
  // How far a slide's content reaches below its top and to the right of its left edge.
  const reach = (slide) => {
    const box = slide.getBoundingClientRect();
    let bottom = box.top, right = box.left;
    for (const e of slide.querySelectorAll('p, li, h1, h2, h3, img, mjx-container, blockquote')) {
      if (e.closest('aside.notes')) continue;
      const r = e.getBoundingClientRect();
      bottom = Math.max(bottom, r.bottom); right = Math.max(right, r.right);
    }
    return [bottom - box.top, right - box.left];
  };
  // Before reveal.js lays the deck out (on screen or for print alike), every slide is
  // set at the design size; the type of a slide whose content overflows shrinks a pixel
  // at a time, down to minFont, and then its figure.
  const fit = () => {
    document.documentElement.classList.add('deck-measuring');
    for (const slide of document.querySelectorAll('.reveal .slides > section')) {
      const over = () => { const [down, across] = reach(slide);
                           return down > height - 4 || across > config.width + 1
                             || slide.scrollHeight > slide.clientHeight; };
      // the size goes on the slide's inner sections too: print mode lays those out alone
      const sections = [slide, ...slide.querySelectorAll('section')];
      let size = parseFloat(getComputedStyle(slide).fontSize);
      while (over() && size > minFont) {
        size -= 1;
        sections.forEach(section => { section.style.fontSize = size + 'px'; });
      }
      for (const img of slide.querySelectorAll('img.slide-figure')) {
        let h = img.offsetHeight;
        while (over() && h > 240) { h -= 20; img.style.height = h + 'px'; }
      }
      slide.dataset.font = size;
    }
    document.documentElement.classList.remove('deck-measuring');
  };
  const start = () => Reveal.initialize(config);
  const typeset = () => window.MathJax && MathJax.startup && MathJax.startup.promise;
  window.addEventListener('load', () => {
    Promise.all([typeset() || Promise.resolve(), document.fonts.ready])
      .then(fit).then(start).then(() => {
        document.documentElement.dataset.deckReady = 'true';
      });
  });
})();
</script>
{% endblock footer_js %}
"""

CSS = """
html:root { --r-main-font-size: FONTpx; --r-heading-text-transform: none;
  --r-heading1-size: 1.65em; --r-heading2-size: 1.3em; --r-heading3-size: 1.1em;
  --r-block-margin: 12px; --r-heading-margin: 0 0 14px 0; --r-link-color: #0a4d8c;
  --r-link-color-hover: #0a4d8c; }
html, body, body > main { height: 100%; margin: 0; }
html.deck-measuring .reveal .slides { width: 1280px; height: 720px; left: 0; top: 0;
  transform: none; }
html.deck-measuring .reveal .slides section { display: block !important; }
html.deck-measuring .reveal .slides > section { position: absolute; top: 0; left: 0;
  width: 1280px; height: 720px; visibility: hidden; transform: none; }
html body .reveal .slides { text-align: left; }
html body .reveal .slides > section { height: 100%; box-sizing: border-box; padding: 4px 0; }
html body .reveal .jp-RenderedHTMLCommon { font-family: var(--r-main-font); font-size: 1em;
  line-height: 1.35; color: var(--r-main-color); padding: 0; }
html body .reveal .jp-RenderedHTMLCommon p, html body .reveal .jp-RenderedHTMLCommon li {
  font-size: 1em; line-height: 1.35; margin: 0 0 0.5em; }
html body .reveal .jp-RenderedHTMLCommon :is(h1, h2, h3) { font-family: var(--r-heading-font);
  font-weight: 600; color: var(--r-heading-color); line-height: 1.2; margin: 0 0 0.45em; }
html body .reveal .jp-RenderedHTMLCommon h1 { font-size: var(--r-heading1-size); }
html body .reveal .jp-RenderedHTMLCommon h2 { font-size: var(--r-heading2-size); }
html body .reveal .jp-RenderedHTMLCommon h3 { font-size: var(--r-heading3-size); }
html body .reveal .jp-RenderedHTMLCommon :is(ul, ol) { display: block; margin: 0 0 0.5em 1.2em;
  padding: 0; }
html body .reveal .jp-RenderedHTMLCommon blockquote { width: auto; margin: 0 0 0.6em;
  padding: 0.5em 0.8em; font-style: normal; background: #f3f6fa; color: inherit;
  border-left: 6px solid #3b6ea5; box-shadow: none; }
html body .reveal section.exercise .jp-RenderedHTMLCommon blockquote {
  border-left-color: #a5563b; background: #fbf6f2; }
html body .reveal .jp-RenderedHTMLCommon blockquote p:last-child { margin-bottom: 0; }
html body .reveal .jp-RenderedHTMLCommon a { color: var(--r-link-color); }
html body .reveal section.deck-title h1 { color: #555; font-size: 1.2em; margin-top: 3em; }
html body .reveal section.deck-title h2 { font-size: 1.8em; margin-bottom: 1em; }
html body .reveal section.figure .jp-RenderedHTMLCommon p { font-size: 0.85em; }
html body .reveal img.slide-figure { display: block; width: 100%; height: 460px;
  max-width: 100%; max-height: none; object-fit: contain; margin: 0 0 0.5em; border: 0;
  box-shadow: none; background: none; }
html body .reveal mjx-container[display="true"] { margin: 0.4em 0 !important; }
html body .reveal .jp-Cell, html body .reveal .jp-MarkdownOutput { padding: 0; }
html body .reveal a.anchor-link { display: none; }
html body .reveal code { font-size: 0.85em; background: #f0f0f0; padding: 0 0.15em; }
"""


def _exporter(reveal_prefix):
    import jinja2
    from nbconvert.exporters import SlidesExporter

    exporter = SlidesExporter(
        extra_loaders=[jinja2.DictLoader({"deck.html.j2": TEMPLATE})],
        template_file="deck.html.j2", reveal_url_prefix=reveal_prefix, reveal_theme="white",
        exclude_input_prompt=True, exclude_output_prompt=True, exclude_input=True,
        exclude_anchor_links=True)
    return exporter


def _resources(root, macros, mathjax_url):
    mathjax = {
        "loader": {"paths": {"fonts": "[mathjax]/fonts"}, "load": ["a11y/assistive-mml"]},
        "tex": {"inlineMath": [["$", "$"], ["\\(", "\\)"]],
                "displayMath": [["$$", "$$"], ["\\[", "\\]"]],
                "processEscapes": True, "macros": macros},
        # The notes stay TeX: the speaker view shows them in a window without MathJax's
        # styles, where typeset formulas would be unreadable.
        "options": {"ignoreHtmlClass": "notes", "menuOptions": {"settings": {
            "enrich": False, "speech": False, "braille": False, "assistiveMml": True,
            "inTabOrder": False}}},
        "output": {"displayOverflow": "scale"},
    }
    reveal = {"width": WIDTH, "height": HEIGHT, "margin": 0.03, "center": False,
              # slide numbers in print only (on screen reveal.js makes the number a link
              # to "#/3", which is no anchor of the page; the speaker view numbers them)
              "hash": True, "controls": True, "progress": True, "slideNumber": False,
              "transition": "none",
              "pdfMaxPagesPerSlide": 1, "pdfSeparateFragments": False}
    return {"deck": {"mathjax": mathjax, "mathjax_url": mathjax_url,
                     "css": CSS.replace("FONTpx", f"{FONT}px"), "min_font": MIN_FONT,
                     "reveal": reveal}}


def build_decks(html_root, out, *, book_url=None, mathjax_url=None, pdf=False, root=ROOT,
                chromium=None):
    """Build one deck per chapter into ``out``; return ``{deck file: slide count}``.

    ``html_root`` is the HTML build of the book (its numbers and titles);
    ``book_url`` is where the decks link to the book, relative to ``out``
    (default: the relative path from ``out`` to ``html_root``); ``mathjax_url`` is the
    book's MathJax (``tex-chtml.js``) relative to ``out`` (default: a copy in
    ``out/mathjax``).
    """
    import os

    html_root, out, root = Path(html_root).resolve(), Path(out).resolve(), Path(root)
    if book_url is None:
        book_url = os.path.relpath(html_root, out).replace(os.sep, "/") + "/"
    out.mkdir(parents=True, exist_ok=True)
    copies = [("revealjs", REVEAL)] + ([("mathjax", MATHJAX)] if mathjax_url is None else [])
    for folder, source in copies:
        if (out / folder).exists():
            shutil.rmtree(out / folder)
        shutil.copytree(source, out / folder, ignore=shutil.ignore_patterns("VENDORED.txt"))
    figures = out / "figures"
    if figures.exists():
        shutil.rmtree(figures)
    figures.mkdir()
    converter = editions.ColabConverter(html_root, book_url, "", root / "book" / "references.bib",
                                        {})
    exporter = _exporter("revealjs")
    counts = {}
    for number, (index_doc, notebooks) in enumerate(chapters(root), start=1):
        notebook = deck_notebook(number, index_doc, notebooks, converter, figures, "figures",
                                 root)
        resources = _resources(root, _macros(root), mathjax_url or "mathjax/tex-chtml.js")
        resources["metadata"] = {"name": f"slides-ch{number}"}
        body, _ = exporter.from_notebook_node(notebook, resources=resources)
        name = f"slides-ch{number}.html"
        (out / name).write_text(body, encoding="utf-8")
        counts[name] = sum(1 for c in notebook.cells
                           if c.metadata["slideshow"]["slide_type"] == "slide")
    (out / "decks.json").write_text(json.dumps(counts, indent=1), encoding="utf-8")
    if pdf:
        print_decks(out, list(counts), chromium=chromium)
    return counts


# ------------------------------------------------------------------ printing
def open_deck(page, path, query=""):
    """Open a deck from disk and wait until its math is typeset and reveal.js is ready."""
    page.goto(Path(path).resolve().as_uri() + query)
    page.wait_for_function("document.documentElement.dataset.deckReady === 'true'",
                           timeout=60000)


#: In print mode: the pages whose slide is taller than the page (numbered from 1).
CUT_PAGES = """() => [...document.querySelectorAll('.reveal .pdf-page')].map((page, i) =>
  [i + 1, page.querySelector('section').offsetHeight - page.clientHeight])
  .filter(([i, over]) => over > 1).map(([i]) => i)"""


def print_decks(out, names, chromium=None, browser=None):
    """Print each deck to ``<name>.pdf``, one slide a page (reveal.js's print mode);
    return ``{name: [pages whose slide is taller than the page]}``."""
    import print_pdf

    cut = {}

    def run(browser):
        context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
        try:
            page = context.new_page()
            for name in names:
                open_deck(page, Path(out) / name, "?print-pdf")
                page.wait_for_function("document.querySelector('.reveal .pdf-page')",
                                       timeout=60000)
                cut[name] = page.evaluate(CUT_PAGES)
                page.pdf(path=str(Path(out) / name.replace(".html", ".pdf")),
                         width=f"{WIDTH}px", height=f"{HEIGHT}px", print_background=True,
                         margin={"top": "0", "bottom": "0", "left": "0", "right": "0"})
        finally:
            context.close()

    if browser is not None:
        run(browser)
        return cut
    from playwright.sync_api import sync_playwright

    executable = chromium or print_pdf.find_chromium()
    if executable is None:
        raise RuntimeError("printing the decks needs Chromium: apt-get install "
                           "chromium-headless-shell (or chromium; or CHROMIUM=<path>)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable,
                                             args=print_pdf.CHROMIUM_ARGS)
        try:
            run(browser)
        finally:
            browser.close()
    return cut


# ------------------------------------------------------------------ tagging
def _find(notebook, target):
    kind = target[0]
    for index, cell in enumerate(notebook.cells):
        if kind == "title" and cell.cell_type == "markdown" and index == 0:
            return index
        if kind == "takeaways" and cell.cell_type == "markdown" and re.match(
                r"^##\s+Takeaways\s*$", cell.source.split("\n")[0]):
            return index
        if kind == "figure" and cell.cell_type == "code" and cell.metadata.get(
                "mystnb", {}).get("figure", {}).get("name") == target[1]:
            return index
    if kind == "idea":
        seen = False
        for index, cell in enumerate(notebook.cells):
            if cell.cell_type != "markdown":
                continue
            for block in blocks(cell.source):
                if block.kind == "directive" and block.options.get("label") == target[1]:
                    seen = True
                elif seen and block.kind == "directive" and block.name == "prf:proof":
                    return index
    raise LookupError(f"{target} not found")


def wanted_tags(notebook, targets):
    """``{cell index: set of tags}`` that ``targets`` (a ``TAGS`` entry) asks for."""
    wanted = {}
    for target in targets:
        tag = TAG_SLIDE if target[0] != "idea" else TAG_IDEA + target[1]
        wanted.setdefault(_find(notebook, target), set()).add(tag)
    return wanted


def tag_notebooks(root=ROOT, force=False, check=False):
    """Write the tags of ``TAGS`` into the notebooks (and remove stale slide tags).
    With ``check``, write nothing and return the notebooks whose tags differ."""
    differ = []
    for relative, targets in TAGS.items():
        path = Path(root) / relative
        notebook = _read(path)
        wanted = wanted_tags(notebook, targets)
        changed = False
        for index, cell in enumerate(notebook.cells):
            tags = _tags(cell)
            keep = [t for t in tags if t != TAG_SLIDE and not t.startswith(TAG_IDEA)]
            new = keep + sorted(wanted.get(index, ()))
            if new != tags:
                changed = True
                if new:
                    cell.metadata["tags"] = new
                else:
                    cell.metadata.pop("tags", None)
        if not changed:
            continue
        differ.append(relative)
        if check:
            continue
        if not force:
            dirty = subprocess.run(["git", "-C", str(root), "diff", "--quiet", "--", relative])
            if dirty.returncode != 0:
                raise RuntimeError(f"{relative} has uncommitted changes: commit them first "
                                   "(or --force)")
        nbformat.write(notebook, path)
    return differ


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="build the decks")
    build.add_argument("--html", type=Path, default=ROOT / "_build" / "html",
                       help="the HTML build of the book (make book)")
    build.add_argument("--out", type=Path, default=ROOT / "_build" / "slides")
    build.add_argument("--book-url", default=None,
                       help="the book's address relative to the decks (default: the "
                            "relative path to --html)")
    build.add_argument("--pdf", action="store_true", help="print each deck to PDF")
    tag = sub.add_parser("tag", help="write the slide tags of TAGS into the notebooks")
    tag.add_argument("--force", action="store_true")
    tag.add_argument("--check", action="store_true", help="only list what would change")
    args = parser.parse_args(argv)
    if args.command == "tag":
        differ = tag_notebooks(force=args.force, check=args.check)
        print("\n".join(differ) or "the tags are up to date")
        return 1 if (args.check and differ) else 0
    if not (args.html / "book").is_dir():
        parser.error(f"{args.html} holds no HTML build of the book: run make book first")
    counts = build_decks(args.html, args.out, book_url=args.book_url, pdf=args.pdf)
    for name, count in counts.items():
        print(f"{args.out / name}: {count} slides")
    return 0


if __name__ == "__main__":
    sys.exit(main())

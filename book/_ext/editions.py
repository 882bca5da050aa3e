"""The notebooks' other editions: JupyterLab metadata and the Colab editions.

Two jobs, both on the book's notebooks as nbformat objects:

- :func:`collapse_solutions` marks the code cells of every gated solution (from a
  ``{solution-start}`` markdown cell to its ``{solution-end}``) collapsed in
  JupyterLab (``jupyter.source_hidden`` and ``jupyter.outputs_hidden``), so that
  opening an exercise does not show its answer. ``make notebooks`` applies it.
- :func:`colab_edition` turns a notebook into one that Colab renders: CommonMark and
  MathJax, no MyST. Theorem, proof, exercise and admonition boxes become Markdown with
  the book's numbered titles ("Theorem 2.1 (...)"); ``{prf:ref}``, ``{numref}``,
  ``{ref}``, ``{eq}``, ``{doc}`` and the ``{py:...}`` roles become links to the
  published site with the book's numbers and titles; ``{cite}`` becomes author-year
  text linking to the bibliography; figures get their numbered captions; solutions
  are ``<details>`` blocks (their code cells collapsed as Colab forms); code that the
  book folds is collapsed the same way. The first code cell installs the library from
  the site's wheel, so that a notebook opened alone runs.

The Markdown is read with myst-parser's own markdown-it parser (the tokens Sphinx
sees), not with regular expressions. The numbers and titles come from the HTML
build (:func:`labels_from_html`), so they are the book's.

Run as a script::

    python book/_ext/editions.py collapse book/ch1_deep_residual/*.ipynb
"""

import argparse
import copy
import html
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
EXTENSIONS = {"amsmath", "colon_fence", "deflist", "dollarmath", "html_image", "substitution"}
# The install cell every book notebook starts with (tag remove-cell).
INSTALL_MARK = 'importlib.util.find_spec("resnet_theory")'
PROOF_KINDS = {"theorem", "lemma", "proposition", "corollary", "definition", "assumption",
               "conjecture", "example", "remark", "axiom", "criterion", "algorithm",
               "observation", "property", "proof"}
LIST_MARKERS = re.compile(r"^\s*(?:[*+-]\s+)?[*+-]\s+")
EMPTY_DETAILS = re.compile(
    r"<details>\n<summary><b>Solution \(continued\)</b></summary>\s*</details>")
SOLUTION_MARK = "# Solution code"
QED_MARKS = ("$\\square$", "$\\blacksquare$", "\u220e", "\u25a1")
FOLDED_TAGS = {"hide-input", "hide-cell", "remove-input", "remove-cell"}


def _parser():
    from markdown_it.renderer import RendererHTML
    from myst_parser.config.main import MdParserConfig
    from myst_parser.parsers.mdit import create_md_parser

    return create_md_parser(MdParserConfig(enable_extensions=EXTENSIONS), RendererHTML)


_MD = None


def _tokens(source):
    global _MD
    if _MD is None:
        _MD = _parser()
    return _MD.parse(source)


def _directive(token):
    """(name, argument) of a directive fence token, or None."""
    if token.type not in ("fence", "colon_fence"):
        return None
    info = token.info.strip()
    if not info.startswith("{") or "}" not in info:
        return None
    name, _, argument = info[1:].partition("}")
    return name.strip(), argument.strip()


def _gates(source):
    """The solution gates a markdown cell opens and closes, in order."""
    return [d[0] for t in _tokens(source) if (d := _directive(t))
            and d[0] in ("solution-start", "solution-end")]


def solution_code_cells(notebook):
    """Indices of the code cells inside gated solutions."""
    inside, found = False, []
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "markdown":
            for gate in _gates(cell.source):
                inside = gate == "solution-start"
        elif inside:
            found.append(index)
    return found


def collapse_solutions(notebook):
    """Collapse the solution code cells in JupyterLab; return how many changed.

    A collapsed cell still shows its first line as a preview, so a solution's code
    starts with the comment ``SOLUTION_MARK`` (added where it does not start with a
    comment): the preview then gives nothing away.

    Examples
    --------
    >>> from nbformat.v4 import new_notebook, new_markdown_cell, new_code_cell
    >>> nb = new_notebook(cells=[new_markdown_cell("```{exercise}\\n:label: ex-a\\nAdd.\\n```"),
    ...     new_markdown_cell("```{solution-start} ex-a\\n```"), new_code_cell("1 + 1"),
    ...     new_markdown_cell("```{solution-end}\\n```"), new_code_cell("2")])
    >>> collapse_solutions(nb), nb.cells[2].metadata["jupyter"], nb.cells[4].metadata
    (1, {'source_hidden': True, 'outputs_hidden': True}, {})
    >>> nb.cells[2].source
    '# Solution code\\n1 + 1'
    """
    changed = 0
    for index in solution_code_cells(notebook):
        cell = notebook.cells[index]
        meta = cell.metadata.setdefault("jupyter", {})
        first = next((line for line in cell.source.splitlines() if line.strip()), "")
        if (meta.get("source_hidden") is not True or meta.get("outputs_hidden") is not True
                or not first.lstrip().startswith("#")):
            meta["source_hidden"] = meta["outputs_hidden"] = True
            if not first.lstrip().startswith("#"):
                cell.source = f"{SOLUTION_MARK}\n{cell.source}"
            changed += 1
    return changed


# ------------------------------------------------------------------ the book's labels
def _heading_text(heading):
    """A heading's text without its section number and its "#" link."""
    parts = [heading.text or ""]
    for child in heading:
        classes = child.get("class", "")
        if "section-number" not in classes and "headerlink" not in classes:
            parts.append(child.text_content())
        parts.append(child.tail or "")
    return " ".join("".join(parts).split())

@dataclass(frozen=True)
class Target:
    """A labelled thing of the HTML book: its page, number text and title."""
    page: str       # "book/ch2_identity_matters/linear_residual.html"
    number: str     # "Theorem 2.1", "Fig. 2.3", "(4)", "" (unnumbered)
    title: str      # "Small-norm global optima", or the section's title


def labels_from_html(html_root):
    """Every labelled box, figure, equation and section of an HTML build.

    Returns ``(targets, pages, objects)``: ``targets[label]`` is a :class:`Target`;
    ``pages[docname]`` the page title of each document; ``objects[name]`` the page and
    anchor of every documented Python object (``resnet_theory.mlp.train``).
    """
    import lxml.html

    html_root = Path(html_root)
    targets, pages, objects = {}, {}, {}
    for path in sorted(html_root.rglob("*.html")):
        relative = path.relative_to(html_root).as_posix()
        if relative.startswith(("_", "genindex", "search", "py-modindex")):
            continue
        tree = lxml.html.parse(str(path)).getroot()
        title = tree.find(".//title")
        h1 = tree.xpath("//article//h1")
        page_title = _heading_text(h1[0]) if h1 else (
            title.text_content() if title is not None else relative)
        pages[relative[:-len(".html")]] = page_title.strip()
        for box in tree.xpath("//div[contains(@class,'admonition')][@id]"):
            head = box.xpath("./p[contains(@class,'admonition-title')]")
            if not head:
                continue
            number = head[0].xpath(".//span[contains(@class,'caption-number')]")
            number_text = number[0].text_content().strip() if number else ""
            full = head[0].text_content().strip()
            title_text = full[len(number_text):].strip() if number_text else full
            if title_text.startswith("(") and title_text.endswith(")"):
                title_text = title_text[1:-1]
            targets.setdefault(box.get("id"), Target(relative, number_text, title_text))
        for figure in tree.xpath("//figure[@id]"):
            number = figure.xpath(".//span[contains(@class,'caption-number')]")
            targets.setdefault(figure.get("id"), Target(
                relative, number[0].text_content().strip() if number else "", ""))
        for table in tree.xpath("//table[@id]"):
            number = table.xpath("./caption/span[contains(@class,'caption-number')]")
            targets.setdefault(table.get("id"), Target(
                relative, number[0].text_content().strip() if number else "", ""))
        for math in tree.xpath("//div[contains(@class,'math')][starts-with(@id,'equation-')]"):
            number = math.xpath(".//span[contains(@class,'eqno')]")
            text = number[0].text_content().replace("#", "").strip() if number else ""
            targets.setdefault(math.get("id")[len("equation-"):], Target(relative, text, ""))
        for section in tree.xpath("//section[@id]"):
            heading = section.xpath("./*[self::h1 or self::h2 or self::h3 or self::h4]")
            if heading:
                targets.setdefault(section.get("id"), Target(
                    relative, "", _heading_text(heading[0])))
        for span in tree.xpath("//span[@id]"):  # (label)= targets before a heading
            nxt = span.getnext()
            if nxt is not None and nxt.tag == "section":
                nxt = next(iter(nxt.xpath("./*[self::h1 or self::h2 or self::h3 or self::h4]")),
                           None)
            if nxt is not None and nxt.tag in ("h1", "h2", "h3", "h4"):
                targets.setdefault(span.get("id"), Target(
                    relative, "", _heading_text(nxt)))
        for dt in tree.xpath("//dl[contains(@class,'py')]/dt[@id]"):
            objects[dt.get("id")] = (relative, dt.get("id"))
    return targets, pages, objects


# ------------------------------------------------------------------- citations
def _citations(bib_path):
    """``key -> (authors text, year)`` for every entry of the bibliography."""
    from pybtex.database import parse_file

    entries = {}
    for key, entry in parse_file(str(bib_path)).entries.items():
        people = entry.persons.get("author") or entry.persons.get("editor") or []
        last = [" ".join(p.last_names).replace("{", "").replace("}", "") for p in people]
        if len(last) == 1:
            names = last[0]
        elif len(last) == 2:
            names = f"{last[0]} and {last[1]}"
        elif last:
            names = f"{last[0]} et al."
        else:
            names = entry.fields.get("title", key)
        entries[key] = (names, entry.fields.get("year", "n.d."))
    return entries


# ------------------------------------------------------------------ the converter
class ColabConverter:
    """Converts the book's MyST notebooks into Colab (CommonMark) editions.

    Parameters
    ----------
    html_root : path-like
        The HTML build of the same edition (for the book's numbers and titles).
    site_url : str
        Where the site is published, ending in "/" (links point there).
    wheel_url : str
        The library's wheel on the site, installed by the first code cell.
    bib_path : path-like
        The bibliography (``book/references.bib``).
    macros : dict
        MathJax macros of the book (``_config.yml``), expanded in the text since
        Colab does not know them.
    """

    def __init__(self, html_root, site_url, wheel_url, bib_path, macros=None):
        self.targets, self.pages, self.objects = labels_from_html(html_root)
        self.site_url = site_url if site_url.endswith("/") else site_url + "/"
        self.wheel_url = wheel_url
        self.citations = _citations(bib_path)
        self.macros = macros or {}
        self.docname = ""
        self._open_details = False

    # ----- links
    def _url(self, page, anchor=""):
        return self.site_url + page + (f"#{anchor}" if anchor else "")

    def _split_explicit(self, content):
        match = re.fullmatch(r"(?s)(.*?)\s*<([^<>]+)>", content.strip())
        return (match[1].strip(), match[2].strip()) if match else (None, content.strip())

    def _target(self, label):
        target = self.targets.get(label)
        if target is None:
            raise KeyError(f"{self.docname}: unknown label {label!r} (not in the HTML build)")
        return target

    def _doc(self, path):
        base = Path(self.docname).parent
        if path.startswith("/"):
            name = path.lstrip("/")
        else:
            name = (base / path).as_posix()
        parts = []
        for part in name.split("/"):
            if part == "..":
                parts.pop()
            elif part not in (".", ""):
                parts.append(part)
        return "/".join(parts)

    def role(self, name, content):
        """The Markdown of one MyST role."""
        if name in ("prf:ref", "ref", "numref", "eq"):
            text, label = self._split_explicit(content)
            target = self._target(label)
            if name == "numref":
                number = target.number.replace("Fig.", "Figure").strip()
                digits = number.split()[-1] if number else ""
                shown = (text.replace("%s", digits).replace("{number}", digits)
                         if text else number)
            elif name == "eq":
                shown = text or target.number
            elif name == "prf:ref":
                shown = text or target.number or target.title
            else:
                shown = text or target.title or target.number
            anchor = f"equation-{label}" if name == "eq" else label
            return f"[{shown}]({self._url(target.page, anchor)})"
        if name == "doc":
            text, path = self._split_explicit(content)
            docname = self._doc(path)
            if docname not in self.pages:
                raise KeyError(f"{self.docname}: unknown document {path!r}")
            return f"[{text or self.pages[docname]}]({self._url(docname + '.html')})"
        if name.startswith("cite"):
            keys = [k.strip() for k in content.split(",") if k.strip()]
            found = []
            for key in keys:
                if key not in self.citations:
                    raise KeyError(f"{self.docname}: unknown citation {key!r}")
                found.append(self.citations[key])
            link = self._url("book/bibliography.html")
            if name == "cite:t":
                return "; ".join(f"[{names} ({year})]({link})" for names, year in found)
            inner = "; ".join(f"{names}, {year}" for names, year in found)
            return f"([{inner}]({link}))"
        if name.startswith("py:"):
            text, target = self._split_explicit(content)
            target = target.lstrip("~")
            shown = text or (content.split(".")[-1] if content.startswith("~") else target)
            suffix = "()" if name in ("py:func", "py:meth") and not text else ""
            place = self.objects.get(target)
            code = f"`{shown}{suffix}`"
            return f"[{code}]({self._url(*place)})" if place else code
        if name == "sup":
            return f"<sup>{html.escape(content)}</sup>"
        if name == "sub":
            return f"<sub>{html.escape(content)}</sub>"
        if name in ("math",):
            return f"${content}$"
        raise KeyError(f"{self.docname}: no Colab form for the role {{{name}}}")

    # ----- blocks
    def _inline_roles(self, tokens):
        for token in tokens:
            for child in token.children or []:
                if child.type == "myst_role":
                    yield child.meta["name"], child.content

    def _replace_roles(self, text, roles):
        position, out = 0, []
        for name, content in roles:
            for ticks in ("`", "``", "```"):
                literal = f"{{{name}}}{ticks}{content}{ticks}"
                found = text.find(literal, position)
                if found >= 0:
                    break
            else:
                raise ValueError(f"{self.docname}: role {{{name}}} {content!r} not found "
                                 "in its source")
            out.append(text[position:found])
            out.append(self.role(name, content))
            position = found + len(literal)
        out.append(text[position:])
        return "".join(out)

    def markdown(self, source):
        """The CommonMark of a MyST source (a cell, or a directive's body)."""
        lines = source.split("\n")
        tokens = _tokens(source)
        out, line, index = [], 0, 0
        while index < len(tokens):
            token = tokens[index]
            if token.level != 0 or token.map is None:
                index += 1
                continue
            start, end = token.map
            out.extend(lines[line:start])
            # the whole top-level block: this token and its children up to the close
            depth, stop = token.nesting, index + 1
            while depth > 0 and stop < len(tokens):
                depth += tokens[stop].nesting
                stop += 1
            block = tokens[index:stop]
            out.append(self.block(token, block, "\n".join(lines[start:end])))
            line, index = end, stop
        out.extend(lines[line:])
        return self._expand_macros("\n".join(out).strip("\n"))

    def block(self, token, block, text):
        directive = _directive(token)
        if directive:
            return self.directive(*directive, token.content)
        if token.type == "myst_target":
            return f'<a id="{html.escape(token.content)}"></a>'
        if token.type in ("myst_line_comment", "myst_block_break"):
            return ""
        if token.type == "math_block_label":
            target = self.targets.get(token.info)
            tag = target.number.strip("()") if target and target.number else ""
            body = token.content.strip()
            anchor = f'<a id="equation-{token.info}"></a>\n\n'
            return anchor + f"$$\n{body}" + (f" \\tag{{{tag}}}" if tag else "") + "\n$$"
        if token.type == "amsmath":
            return f"$$\n{token.content.strip()}\n$$"
        if token.type in ("fence", "code_block"):
            return text
        return self._replace_roles(text, list(self._inline_roles(block)))

    def _options(self, content):
        lines = content.split("\n")
        options, body_start = {}, 0
        for number, line in enumerate(lines):
            match = re.match(r"^:([\w-]+):\s*(.*)$", line)
            if not match:
                break
            options[match[1]] = match[2].strip()
            body_start = number + 1
        return options, "\n".join(lines[body_start:]).strip("\n")

    @staticmethod
    def _quote(text):
        return "\n".join(("> " + line) if line.strip() else ">" for line in text.split("\n"))

    def directive(self, name, argument, content):
        options, body = self._options(content)
        label = options.get("label") or options.get("name", "")
        anchor = f'<a id="{html.escape(label)}"></a>' if label else ""
        classes = options.get("class", "").split()
        if name.startswith("prf:") and name[4:] in PROOF_KINDS:
            kind = name[4:]
            inner = self.markdown(body)
            if kind == "proof":
                head = f"*Proof{' (' + self.markdown(argument) + ')' if argument else ''}.*"
                ends = inner.rstrip().endswith(QED_MARKS)
                return self._quote(f"{head} {inner}" + ("" if ends else " $\\square$"))
            target = self.targets.get(label)
            number = target.number if target and target.number else kind.capitalize()
            title = f" ({self.markdown(argument)})" if argument else ""
            return self._quote(f"{anchor}**{number}{title}.** {inner}")
        if name == "exercise":
            target = self.targets.get(label)
            number = target.number if target and target.number else "Exercise"
            title = f" ({self.markdown(argument)})" if argument else ""
            return self._quote(f"{anchor}**{number}{title}.** {self.markdown(body)}")
        if name in ("solution-start", "solution"):
            target = self.targets.get(argument)
            number = target.number if target and target.number else "the exercise"
            opened = (f"<details>\n<summary><b>Solution to {number}</b></summary>\n"
                      + ("\n" + self.markdown(body) + "\n" if body.strip() else ""))
            if name == "solution":
                return opened + "\n</details>"
            self._open_details = True
            return opened
        if name == "solution-end":
            was_open, self._open_details = self._open_details, False
            return "</details>" if was_open else ""
        if name == "admonition":
            title = self.markdown(argument) if argument else "Note"
            inner = self.markdown(body)
            if "dropdown" in classes:
                return f"<details>\n<summary><b>{title}</b></summary>\n\n{inner}\n\n</details>"
            return self._quote(f"**{title}**\n\n{inner}")
        if name in ("note", "tip", "important", "warning", "caution", "attention", "hint",
                    "seealso", "danger", "error"):
            title = name.capitalize() if name != "seealso" else "See also"
            return self._quote(f"**{title}.** {self.markdown(body)}")
        if name == "list-table":
            return self._list_table(argument, options, body)
        if name in ("math",):
            return f"$$\n{body.strip()}\n$$"
        if name in ("code-block", "code"):
            return f"```{argument}\n{body}\n```"
        raise ValueError(f"{self.docname}: no Colab form for the directive {{{name}}}")

    def _list_table(self, argument, options, body):
        """A ``{list-table}`` (a list of rows, each a list of cells) as a pipe table."""
        import textwrap

        lines, rows, depth = body.split("\n"), [], 0
        for token in _tokens(body):
            if token.type == "bullet_list_open":
                depth += 1
            elif token.type == "bullet_list_close":
                depth -= 1
            elif token.type == "list_item_open" and depth == 1:
                rows.append([])
            elif token.type == "list_item_open" and depth == 2 and token.map:
                start, end = token.map
                # the item's lines, without the markers "* - " (a row's first cell) or "- "
                cell = LIST_MARKERS.sub("", "\n".join(lines[start:end]), count=1)
                rows[-1].append(textwrap.dedent(cell).strip())
        if not rows:
            return ""
        header = int(options.get("header-rows", "0") or 0)
        cells = [[self.markdown(cell).replace("|", "\\|").replace("\n", " ") for cell in r]
                 for r in rows]
        width = max(len(r) for r in cells)
        cells = [r + [""] * (width - len(r)) for r in cells]
        head = cells[0] if header else [""] * width
        label = options.get("name", "")
        target = self.targets.get(label)
        number = target.number if target and target.number else ""
        caption = " ".join(p for p in (f"**{number}.**" if number else "",
                                       self.markdown(argument) if argument else "") if p)
        out = ([f'<a id="{label}"></a>'] if label else []) + ([caption, ""] if caption else [])
        out.append("| " + " | ".join(head) + " |")
        out.append("|" + "---|" * width)
        for r in cells[1 if header else 0:]:
            out.append("| " + " | ".join(r) + " |")
        return "\n".join(out)

    def _expand_macros(self, text):
        for name, definition in self.macros.items():
            if isinstance(definition, list):  # [body with #1, number of arguments]
                continue
            text = re.sub(r"\\" + name + r"(?![A-Za-z])", lambda _m, d=definition: d, text)
        return text

    # ----- notebooks
    def _install_cell(self):
        return nbformat.v4.new_code_cell(
            "# Install this book's library (resnet_theory), the version the site was\n"
            "# built with; numpy, scipy and matplotlib come with Colab.\n"
            f'%pip install --quiet "{self.wheel_url}"',
            metadata={"id": "install"})

    def notebook(self, notebook, docname, edition="book"):
        """The Colab edition of ``notebook`` (page ``docname``, e.g.
        ``book/ch5_shamir/example_one``)."""
        self.docname = docname
        page = self._url(docname + ".html")
        title = self.pages.get(docname, docname)
        other = ("the student edition (exercises without solutions)"
                 if edition == "book" else "the book")
        banner = nbformat.v4.new_markdown_cell(
            f"*This is the Colab edition of [{title}]({page}), a section of* "
            f"[Near the Identity]({self.site_url}). *The first code cell installs the "
            "book's library; then run the cells in order. Formulas, theorems and "
            f"figures are numbered as in the book; {other} is on the same site.*")
        cells = [banner]
        inside = False
        for cell in notebook.cells:
            if cell.cell_type == "markdown":
                gates = _gates(cell.source)
                prefix = ""
                if inside:  # text between a solution's code cells, or before its end
                    prefix = "<details>\n<summary><b>Solution (continued)</b></summary>\n\n"
                    self._open_details = True
                text = prefix + self.markdown(cell.source)
                if self._open_details:
                    text += "\n\n</details>"
                    self._open_details = False
                text = EMPTY_DETAILS.sub("", text).strip()
                for gate in gates:
                    inside = gate == "solution-start"
                if text:
                    cells.append(nbformat.v4.new_markdown_cell(text))
                continue
            if cell.cell_type != "code":
                continue
            if INSTALL_MARK in cell.source:
                cells.append(self._install_cell())
                continue
            new = nbformat.v4.new_code_cell(cell.source)
            new.outputs = copy.deepcopy(cell.get("outputs", []))
            new.execution_count = cell.get("execution_count")
            tags = set(cell.metadata.get("tags", []))
            figure = cell.metadata.get("mystnb", {}).get("figure")
            if inside:
                source = new.source
                if source.startswith(SOLUTION_MARK + "\n"):
                    source = source[len(SOLUTION_MARK) + 1:]
                new.source = f"# @title Solution code\n{source}"
                new.metadata["cellView"] = "form"
            elif tags & FOLDED_TAGS:
                what = "Figure code" if figure else "Code"
                new.source = f"# @title {what}\n{new.source}"
                new.metadata["cellView"] = "form"
            cells.append(new)
            if figure:
                label = figure.get("name", "")
                target = self.targets.get(label)
                number = (target.number.replace("Fig.", "Figure") if target and target.number
                          else "Figure")
                caption = self.markdown(figure.get("caption", ""))
                cells.append(nbformat.v4.new_markdown_cell(
                    (f'<a id="{label}"></a>' if label else "") + f"**{number}.** {caption}"))
        out = nbformat.v4.new_notebook(cells=cells)
        out.metadata = {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                       "language": "python"},
                        "language_info": {"name": "python"},
                        "colab": {"provenance": [], "toc_visible": True}}
        for number, cell in enumerate(out.cells):
            cell["id"] = f"cell-{number}"
        return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    collapse = sub.add_parser("collapse", help="collapse solution code cells in JupyterLab")
    collapse.add_argument("notebooks", nargs="+", type=Path)
    args = parser.parse_args(argv)
    if args.command == "collapse":
        for path in args.notebooks:
            notebook = nbformat.read(path, as_version=4)
            if collapse_solutions(notebook):
                nbformat.write(notebook, path)
    return 0


if __name__ == "__main__":
    sys.exit(main())

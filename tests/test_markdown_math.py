"""Every formula of the book reaches MathJax: no TeX is left in the text.

MyST hands MathJax only what its parser recognises as math. A line inside
``$...$`` that starts with ``+ `` or ``1. `` begins a list, and ``$$`` on its
own line in the middle of a paragraph does not open a display: in both cases
the reader sees ``\\operatorname{tr}`` and dollar signs instead of a formula
(online, in the PDF and in JupyterLab). These tests parse every markdown cell
and page with the book's MyST settings, directive bodies included, and fail on
TeX left in plain text; and no printed output shows TeX either.
"""

import re
from pathlib import Path

import nbformat
import pytest
import yaml
from markdown_it.renderer import RendererHTML
from myst_parser.config.main import MdParserConfig
from myst_parser.parsers.mdit import create_md_parser

ROOT = Path(__file__).resolve().parents[1]
PAGES = [path for pattern in ("*.ipynb", "*.md") for path in sorted((ROOT / "book").rglob(pattern))
         if ".ipynb_checkpoints" not in path.parts]
IDS = [str(path.relative_to(ROOT / "book")) for path in PAGES]
NOTEBOOKS = [path for path in PAGES if path.suffix == ".ipynb"]

# a dollar sign, a TeX command (\alpha, \|) or an escaped bracket
TEX = re.compile(r"\$|\\[A-Za-z]{2,}|\\[(){}|\[\]]")
# printed output: a dollar sign followed on the same line by a TeX command
PRINTED_TEX = re.compile(r"\$[^$\n]*\\[A-Za-z]")
# a directive option line (":label: ...") at the top of a directive body
OPTION = re.compile(r"\s*:[\w-]+:")


def _parser():
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    extensions = set(config["parse"]["myst_enable_extensions"])
    return create_md_parser(MdParserConfig(enable_extensions=extensions), RendererHTML)


PARSER = _parser()


def _tokens(tokens):
    for token in tokens:
        yield token
        if token.children:
            yield from _tokens(token.children)


def tex_left_in_text(markdown):
    """The pieces of plain text in ``markdown`` that still hold TeX."""
    found = []
    for token in _tokens(PARSER.parse(markdown)):
        if token.type in ("fence", "colon_fence") and token.info.strip().startswith("{"):
            if "math" in token.info:  # a {math} directive holds TeX by design
                continue
            body = "\n".join(line for line in token.content.splitlines()
                             if not OPTION.match(line))
            found += tex_left_in_text(body)
        elif token.type == "text" and TEX.search(token.content):
            found.append(token.content.strip()[:80])
    return found


def _markdown_cells(path):
    if path.suffix == ".md":
        return [(0, path.read_text(encoding="utf-8"))]
    notebook = nbformat.read(path, as_version=4)
    return [(index, cell.source) for index, cell in enumerate(notebook.cells)
            if cell.cell_type == "markdown"]


def test_the_check_sees_a_formula_broken_by_a_line_that_starts_a_list():
    broken = "so $a = b\n+ c$ holds."
    assert tex_left_in_text(broken)
    assert not tex_left_in_text("so $a = b + c$ holds.")


def test_the_check_sees_a_display_that_interrupts_a_paragraph():
    assert tex_left_in_text("move along\n$$\n\\Delta = 1\n$$\nnext.")
    assert not tex_left_in_text("move along\n\n$$\n\\Delta = 1\n$$\n\nnext.")


def test_the_check_reads_directive_bodies():
    assert tex_left_in_text("```{prf:proof}\nso $a\n+ b$.\n```")


@pytest.mark.parametrize("path", PAGES, ids=IDS)
def test_every_formula_is_typeset(path):
    problems = [f"cell {index}: {piece!r}" for index, source in _markdown_cells(path)
                for piece in tex_left_in_text(source)]
    assert not problems, "TeX left in the text (not parsed as math):\n" + "\n".join(problems)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS[:len(NOTEBOOKS)])
def test_no_printed_output_shows_tex(path):
    notebook = nbformat.read(path, as_version=4)
    for index, cell in enumerate(notebook.cells):
        for output in cell.get("outputs", []):
            text = output.get("text", "") or output.get("data", {}).get("text/plain", "")
            match = PRINTED_TEX.search(text)
            assert match is None, f"cell {index} prints TeX: {match.group(0)!r}"


# ------------------------------------------------------------------ figure captions
# A figure's caption comes from its code cell's metadata (mystnb.figure.caption), and
# myst-nb renders it as MyST like the prose: a formula written as $...$ is typeset;
# one written in ASCII ("epsilon = 1", "(w(1 + v) - 1)^2 / 2", "1/l") is printed as
# plain text in another font than the formulas around it. Outside $...$, a caption
# must hold no Greek letter spelled out, power, root, subscript or ratio of a number
# and a letter.
ASCII_MATH = re.compile(
    r"\^|\bsqrt\(|\b(?:epsilon|lambda|sigma|theta|gamma|tau|alpha|beta|delta|eta|mu|rho|"
    r"phi|psi|omega|pi|xi|nabla)\b|\b\d+/[A-Za-z]\b|\b[A-Za-z]_[A-Za-z0-9{]|\|\|")
INLINE_MATH = re.compile(r"\$\$.*?\$\$|\$[^$]*\$", re.DOTALL)


def ascii_math(caption):
    """The pieces of ``caption`` outside ``$...$`` that look like ASCII mathematics."""
    return [match.group(0) for match in ASCII_MATH.finditer(INLINE_MATH.sub(" ", caption))]


def test_the_caption_check_sees_ascii_mathematics():
    assert ascii_math("Example 1 with epsilon = 1: F = (w(1 + v) - 1)^2 / 2, rate 1/l")
    assert not ascii_math(r"Example 1 with $\epsilon = 1$: $F = (w(1 + v) - 1)^2 / 2$, rate $1/l$")
    assert not ascii_math("the loss against the depth, 2 of 3 runs")


def test_figure_captions_write_their_formulas_as_math():
    failures = []
    for path in NOTEBOOKS:
        cells = nbformat.read(path, as_version=4).cells
        for index, cell in enumerate(cells):
            caption = cell.get("metadata", {}).get("mystnb", {}).get("figure", {}).get("caption")
            if cell.cell_type == "code" and caption:
                found = ascii_math(caption) + [f"TeX outside math: {piece}"
                                               for piece in tex_left_in_text(caption)]
                if found:
                    failures.append(f"{path.relative_to(ROOT)} cell {index}: {found}")
    assert not failures, "captions with ASCII mathematics:\n" + "\n".join(failures)

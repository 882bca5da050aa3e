"""The notebooks' other editions (book/_ext/editions.py): JupyterLab and Colab.

The whole Colab editions of the book are checked on the built site
(tests/test_site.py); here, one behaviour per test, on small notebooks and a small
HTML page written in the form the book's build writes.
"""

import importlib.util
import sys
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("editions", ROOT / "book" / "_ext" / "editions.py")
editions = importlib.util.module_from_spec(spec)
spec.loader.exec_module(editions)
sys.modules.setdefault("editions", editions)

PAGE = """<html><head><title>x</title></head><body><article>
<section id="the-page"><h1>2.1. The page</h1>
<div class="proof theorem admonition" id="thm-small"><p class="admonition-title">
<span class="caption-number">Theorem 2.1 </span> (Small optima)</p></div>
<figure id="fig-walk"><img alt="a walk"/><figcaption><p><span class="caption-number">Fig. 2.3
</span>A walk.</p></figcaption></figure>
<div class="exercise admonition" id="ex-a"><p class="admonition-title">
<span class="caption-number">Exercise 2.4 </span> (Add)</p></div>
<span id="sec-target"></span><section id="later"><h2>Later section</h2></section>
</section></article></body></html>"""
BIB = """@article{hardt2017identity, author = {Hardt, Moritz and Ma, Tengyu},
 title = {Identity matters in deep learning}, year = {2017}, journal = {ICLR}}
@article{bartlett2018, author = {Bartlett, Peter and Evans, Steven and Long, Philip},
 title = {Representing smooth functions}, year = {2018}, journal = {arXiv}}
"""


@pytest.fixture
def converter(tmp_path):
    page = tmp_path / "html" / "book" / "ch2"
    page.mkdir(parents=True)
    (page / "page.html").write_text(PAGE)
    (tmp_path / "refs.bib").write_text(BIB)
    converter = editions.ColabConverter(tmp_path / "html", "https://example.org/site",
                                        "https://example.org/site/lib.whl",
                                        tmp_path / "refs.bib", {"R": "\\mathbb{R}"})
    converter.docname = "book/ch2/page"
    return converter


def _book_notebooks():
    return sorted(p for p in (ROOT / "book").rglob("*.ipynb")
                  if ".ipynb_checkpoints" not in p.parts)


@pytest.mark.parametrize("path", _book_notebooks(), ids=lambda p: p.stem)
def test_solution_code_opens_collapsed_in_jupyterlab(path):
    notebook = nbformat.read(path, as_version=4)
    cells = editions.solution_code_cells(notebook)
    not_collapsed = [index for index in cells
                     if notebook.cells[index].metadata.get("jupyter", {})
                     != {"source_hidden": True, "outputs_hidden": True}]
    assert not not_collapsed, (f"code cells {not_collapsed} of solutions open in JupyterLab: "
                               f"run `python book/_ext/editions.py collapse {path}`")


def test_only_code_inside_a_solution_is_collapsed():
    notebook = new_notebook(cells=[
        new_code_cell("setup"), new_markdown_cell("```{solution-start} ex-a\n```"),
        new_code_cell("answer"), new_markdown_cell("text\n\n```{solution-end}\n```"),
        new_code_cell("check")])
    assert editions.collapse_solutions(notebook) == 1
    assert [bool(c.metadata.get("jupyter")) for c in notebook.cells] == [
        False, False, True, False, False]


def test_a_theorem_box_becomes_a_quote_with_the_books_number(converter):
    text = converter.markdown("```{prf:theorem} Small optima\n:label: thm-small\n\n"
                              "For all $x \\in \\R$.\n```")
    assert text.startswith('> <a id="thm-small"></a>**Theorem 2.1 (Small optima).**')
    assert "\\mathbb{R}" in text and "\\R" not in text


def test_references_become_links_with_the_books_numbers(converter):
    text = converter.markdown("See {prf:ref}`thm-small`, {numref}`fig-walk`, "
                              "{numref}`Panel %s <fig-walk>` and {ref}`sec-target`.")
    url = "https://example.org/site/book/ch2/page.html"
    assert f"[Theorem 2.1]({url}#thm-small)" in text
    assert f"[Figure 2.3]({url}#fig-walk)" in text
    assert f"[Panel 2.3]({url}#fig-walk)" in text
    assert f"[Later section]({url}#sec-target)" in text


def test_citations_become_author_year_links_to_the_bibliography(converter):
    text = converter.markdown("{cite:t}`hardt2017identity` and {cite}`bartlett2018`.")
    bibliography = "https://example.org/site/book/bibliography.html"
    assert text == (f"[Hardt and Ma (2017)]({bibliography}) and "
                    f"([Bartlett et al., 2018]({bibliography})).")


def test_a_role_inside_inline_code_is_left_as_code(converter):
    assert converter.markdown("Write `` {cite}`key` `` to cite.") == (
        "Write `` {cite}`key` `` to cite.")


def test_an_unknown_label_is_an_error_not_a_silent_residue(converter):
    with pytest.raises(KeyError, match="no-such-label"):
        converter.markdown("{prf:ref}`no-such-label`")


def test_a_dropdown_admonition_becomes_details(converter):
    text = converter.markdown(":::{admonition} How this is checked\n:class: dropdown\n"
                              "By search.\n:::")
    assert text == ("<details>\n<summary><b>How this is checked</b></summary>\n\n"
                    "By search.\n\n</details>")


def test_a_gated_solution_becomes_details_and_its_code_a_colab_form(converter):
    notebook = new_notebook(cells=[
        new_markdown_cell("```{exercise} Add\n:label: ex-a\nAdd one and one.\n```"),
        new_markdown_cell("```{solution-start} ex-a\n```\nIt is two:"),
        new_code_cell("1 + 1"),
        new_markdown_cell("as printed.\n\n```{solution-end}\n```"),
        new_code_cell("print('after')")])
    cells = converter.notebook(notebook, "book/ch2/page").cells
    markdown = [c.source for c in cells if c.cell_type == "markdown"]
    assert "> <a id=\"ex-a\"></a>**Exercise 2.4 (Add).** Add one and one." in markdown
    assert ("<details>\n<summary><b>Solution to Exercise 2.4</b></summary>\n\nIt is two:"
            "\n\n</details>") in markdown
    assert ("<details>\n<summary><b>Solution (continued)</b></summary>\n\nas printed."
            "\n\n</details>") in markdown
    answer = next(c for c in cells if c.cell_type == "code" and "1 + 1" in c.source)
    assert answer.source.startswith("# @title Solution code\n")
    assert answer.metadata["cellView"] == "form"
    after = next(c for c in cells if c.cell_type == "code" and "after" in c.source)
    assert "cellView" not in after.metadata


def test_the_install_cell_installs_the_sites_wheel(converter):
    notebook = new_notebook(cells=[new_code_cell(
        'import importlib.util\nLIBRARY = "git+https://example.org/repo"\n'
        'if importlib.util.find_spec("resnet_theory") is None:\n    pass')])
    cells = converter.notebook(notebook, "book/ch2/page").cells
    install = next(c for c in cells if c.cell_type == "code")
    assert install.source.endswith('%pip install --quiet "https://example.org/site/lib.whl"')


def test_a_figure_gets_its_numbered_caption_after_the_code(converter):
    cell = new_code_cell("plot()", metadata={"tags": ["hide-input"], "mystnb": {
        "figure": {"name": "fig-walk", "caption": "A walk in $\\R^2$."}}})
    cells = converter.notebook(new_notebook(cells=[cell]), "book/ch2/page").cells
    code = next(i for i, c in enumerate(cells) if c.cell_type == "code")
    assert cells[code].source.startswith("# @title Figure code\n")
    assert cells[code + 1].source == ('<a id="fig-walk"></a>**Figure 2.3.** '
                                      "A walk in $\\mathbb{R}^2$.")

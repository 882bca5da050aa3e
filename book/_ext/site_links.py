"""Launch buttons that open the Colab editions (a local Sphinx extension).

Colab cannot render the book's MyST notebooks (every theorem and exercise box would
show as raw text), and the book's notebooks hold the solutions. So the "Colab" launch
button of a notebook page opens the page's *Colab edition* instead
(``book/_ext/editions.py``, built by ``make site``): CommonMark notebooks that the
publishing workflow (``.github/workflows/pages.yml``) pushes to the branch ``colab``
of the repository, under ``book/`` for the book and ``student/`` for the student
edition. Colab opens them from GitHub::

    https://colab.research.google.com/github/<owner>/<repo>/blob/colab/book/ch5_shamir/example_one.ipynb

Config values:

- ``colab_edition``: where the book's Colab editions are (the address above up to
  ``book/``); by default derived from ``repository.url``;
- ``colab_edition_student``: the same for the student edition (``student/``), whose
  pages (built with ``hide_solutions``) then get a launch button too, opening the
  notebook without solutions.
"""

import re

GITHUB = re.compile(r"^https://github\.com/([^/]+)/([^/#?]+?)(?:\.git)?/?$")
COLAB = "https://colab.research.google.com"
BRANCH = "colab"


def colab_prefix(repository_url, edition):
    """The address of an edition's Colab notebooks, or "" if the repository is not
    on GitHub.

    >>> colab_prefix("https://github.com/example/fork", "student")
    'https://colab.research.google.com/github/example/fork/blob/colab/student/'
    >>> colab_prefix("https://gitlab.com/example/fork", "book")
    ''
    """
    match = GITHUB.match(repository_url or "")
    if not match:
        return ""
    return f"{COLAB}/github/{match[1]}/{match[2]}/blob/{BRANCH}/{edition}/"


def _repository_url(app):
    theme = app.config.html_theme_options or {}
    return theme.get("repository_url", "")


def _launch(app, pagename, templatename, context, doctree):
    if doctree is None or not pagename.startswith("book/") or not _is_notebook(app, pagename):
        return
    student = bool(getattr(app.config, "hide_solutions", False))
    prefix = (app.config.colab_edition_student if student else app.config.colab_edition) or (
        colab_prefix(_repository_url(app), "student" if student else "book"))
    if not prefix:
        return
    url = prefix + pagename[len("book/"):] + ".ipynb"
    buttons = context.setdefault("header_buttons", [])
    group = next((b for b in buttons if b.get("label") == "launch-buttons"), None)
    colab = {"type": "link", "text": "Colab", "tooltip": "Open the Colab edition",
             "icon": "_static/images/logo_colab.png", "url": url}
    if group is None:
        buttons.append({"type": "group", "tooltip": "Launch interactive content",
                        "icon": "fas fa-rocket", "buttons": [colab],
                        "label": "launch-buttons"})
        return
    entries = group["buttons"]
    for index, entry in enumerate(entries):
        if entry.get("text") == "Colab":
            entries[index] = colab
            break
    else:
        entries.append(colab)


def _is_notebook(app, pagename):
    source = app.env.doc2path(pagename, base=False)
    return str(source).endswith(".ipynb")


def setup(app):
    app.add_config_value("colab_edition", "", "html", [str])
    app.add_config_value("colab_edition_student", "", "html", [str])
    # After sphinx-book-theme (priority 500) has added its launch buttons.
    app.connect("html-page-context", _launch, priority=800)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

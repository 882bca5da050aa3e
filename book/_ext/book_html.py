"""Small fixes to the HTML pages the theme writes (a local Sphinx extension).

- The book has no live code: drop sphinx-thebe's scripts and stylesheet, which
  Jupyter Book 1.x loads on every page (twice, so that every page logged
  "Identifier 'THEBE_JS_URL' has already been declared") and which would fetch
  thebe from unpkg.com.
- The theme's ".pdf" download button only opens the browser's print dialog:
  remove it.
- A proof folded with ``:class: dropdown`` gets its first paragraph as its
  title (sphinx-togglebutton needs one).
- The logo's text is dark grey: in dark mode the theme shows
  ``book/_static/logo-dark.svg`` instead, whose text is light.
"""

import re

THEBE = ("sphinx-thebe", "THEBE_JS_URL", "thebe@")
# A sphinx-proof proof box has no title element; with ``:class: dropdown``
# sphinx-togglebutton then fails on the page ("Cannot read properties of null")
# and leaves every dropdown of the page open. Its first paragraph ("Proof. Idea:
# ...") becomes the title, so the folded proof shows its idea and opens on a tap.
# Every proof box has id="proof", and the toggle finds its box by id: a folded
# proof gets an id of its own, or a second one would never fold.
PROOF_DROPDOWN = re.compile(
    r'<div class="(proof\b[^"]*\bdropdown\b[^"]*)" id="proof">\s*<p>')


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


def _dark_logo(app, config):
    # Jupyter Book fills html_theme_options itself: add to it, do not replace it.
    options = config.html_theme_options
    logo = options.setdefault("logo", {})
    logo.setdefault("image_dark", "book/_static/logo-dark.svg")


def setup(app):
    app.connect("config-inited", _dark_logo)
    # After sphinx-book-theme (priority 500) has added its header buttons.
    app.connect("html-page-context", _clean_page, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

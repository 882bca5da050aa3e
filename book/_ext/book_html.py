"""Small fixes to the HTML pages the theme writes (a local Sphinx extension).

- The book has no live code: drop sphinx-thebe's scripts and stylesheet, which
  Jupyter Book 1.x loads on every page (twice, so that every page logged
  "Identifier 'THEBE_JS_URL' has already been declared") and which would fetch
  thebe from unpkg.com.
- The theme's ".pdf" download button only opens the browser's print dialog:
  remove it.
- The logo's text is dark grey: in dark mode the theme shows
  ``book/_static/logo-dark.svg`` instead, whose text is light.
"""

THEBE = ("sphinx-thebe", "THEBE_JS_URL", "thebe@")


def _is_thebe(asset):
    text = " ".join(str(part) for part in (getattr(asset, "filename", asset),
                                           getattr(asset, "attributes", {}).get("body", "")))
    return any(word in text for word in THEBE)


def _clean_page(app, pagename, templatename, context, doctree):
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

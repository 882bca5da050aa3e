"""Build the publishable site: one static folder that any web server can serve.

``make site`` runs this script::

    python book/_ext/build_site.py --out _build/site [--repo-url URL] [--site-url URL]
                              [--pdf _build/pdf]

The folder holds

- the book's HTML at its root (``index.html``), the student edition (no solutions)
  under ``student/``;
- ``pdf/``: the printed book and the exercise sheets (from ``make pdf``), which the
  pages' ".pdf" buttons serve;
- ``notebooks/book/`` and ``notebooks/student/``: every notebook of both editions, for
  download, and ``colab/book/``, ``colab/student/``: their Colab editions
  (``book/_ext/editions.py``), which the publishing workflow also pushes to the branch
  ``colab`` for the pages' Colab buttons;
- ``slides/``: one lecture deck per chapter (``book/_ext/slides.py``, reveal.js and the
  book's MathJax, linked to the book's pages), printed to PDF beside it when the site
  has its printed edition (``--pdf``);
- the library as a wheel (``resnet_theory-<version>-py3-none-any.whl``), which the Colab
  editions install, and ``downloads.html``, a page listing all of it;
- ``404.html`` for the host's "page not found", and ``.nojekyll``.

Every link inside the site is relative, so it works from any sub-path
(``https://<user>.github.io/<repo>/``); only ``404.html``, which a host serves for
any missing address, links by absolute path, taken from ``--site-url``.

The repository address is one setting, ``repository.url`` in ``_config.yml``;
``--repo-url`` (``make site REPO_URL=...``) overrides it for this build, and the site
address defaults to GitHub Pages' for that repository. The book is built from a
staging copy whose configuration carries both, so every launch button, repository
link, install cell and download points at the fork, and nothing at the default.
"""

import argparse
import html
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
import warnings
from pathlib import Path
from urllib.parse import urlparse

import nbformat
import nbformat.warnings
import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

import editions  # noqa: E402
import site_links  # noqa: E402
import slides  # noqa: E402


def pages_url(repo_url):
    """GitHub Pages' address of a repository's project site.

    >>> pages_url("https://github.com/example/fork")
    'https://example.github.io/fork/'
    >>> pages_url("https://github.com/example/example.github.io")
    'https://example.github.io/'
    """
    match = site_links.GITHUB.match(repo_url)
    if not match:
        raise ValueError(f"repo_url: a https://github.com/<owner>/<repo> address is needed "
                         f"to derive the site's address, got {repo_url!r}; give --site-url")
    owner, repo = match[1], match[2]
    if repo.lower() == f"{owner.lower()}.github.io":
        return f"https://{owner.lower()}.github.io/"
    return f"https://{owner.lower()}.github.io/{repo}/"


def _step(message):
    print(f"== {message}", flush=True)
    return time.monotonic()


def _done(start):
    print(f"   done in {time.monotonic() - start:.0f} s", flush=True)


def _run(command, **kwargs):
    env = dict(os.environ, JUPYTER_PLATFORM_DIRS="1")
    result = subprocess.run(command, capture_output=True, text=True, env=env, **kwargs)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, command))} failed:\n"
                           + (result.stdout + result.stderr)[-4000:])
    return result


def _read(path):
    """A notebook; one whose cells lack ids (nbformat adds them) is read all the same."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", nbformat.warnings.MissingIDFieldWarning)
        return nbformat.read(path, as_version=4)


def _rewrite_install_cell(notebook, wheel_url):
    """Point the notebook's install cell (Colab, Binder) at the site's wheel."""
    for cell in notebook.cells:
        if cell.cell_type == "code" and editions.INSTALL_MARK in cell.source:
            lines = cell.source.split("\n")
            cell.source = "\n".join(
                f'LIBRARY = "{wheel_url}"' if line.startswith("LIBRARY = ") else line
                for line in lines)
    return notebook


def _stage(root, staging, repo_url, site_url, wheel_url, pdf_dir):
    """A copy of the book whose configuration and notebooks carry the addresses."""
    shutil.copytree(root / "book", staging / "book",
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints", "_build", "__pycache__"))
    shutil.copy2(root / "_toc.yml", staging / "_toc.yml")
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    config.setdefault("repository", {})["url"] = repo_url
    config.setdefault("html", {})["baseurl"] = site_url
    sphinx = config.setdefault("sphinx", {}).setdefault("config", {})
    sphinx["colab_edition"] = site_links.colab_prefix(repo_url, "book")
    sphinx["colab_edition_student"] = site_links.colab_prefix(repo_url, "student")
    (staging / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False),
                                         encoding="utf-8")
    for path in (staging / "book").rglob("*.ipynb"):
        notebook = _read(path)
        nbformat.write(_rewrite_install_cell(notebook, wheel_url), path)
    if pdf_dir and Path(pdf_dir).is_dir():
        shutil.copytree(pdf_dir, staging / "_build" / "pdf")
    return config


def build_wheel(root, out):
    """``python -m build --wheel`` of the library, from a clean copy; the wheel's path."""
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "src"
        source.mkdir()
        for name in ("pyproject.toml", "LICENSE"):
            shutil.copy2(root / name, source / name)
        shutil.copytree(root / "lib", source / "lib",
                        ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        _run([sys.executable, "-m", "build", "--wheel", "--no-isolation",
              "--outdir", str(out), str(source)])
    wheels = sorted(Path(out).glob("resnet_theory-*.whl"))
    if len(wheels) != 1:
        raise RuntimeError(f"expected one wheel in {out}, found {wheels}")
    return wheels[0]


def _wheel_name(root):
    """The file name of the library's wheel, from ``pyproject.toml``."""
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    return f"{project['name']}-{project['version']}-py3-none-any.whl"


def _notebooks(folder):
    return sorted(p for p in Path(folder).rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts)


def _write_editions(book_src, student_src, book_html, student_html, site, site_url,
                    wheel_url, macros, bib):
    """Download copies and Colab editions of every notebook of both editions."""
    written = {"book": [], "student": []}
    for edition, source, html_root in (("book", book_src, book_html),
                                       ("student", student_src, student_html)):
        base = site_url if edition == "book" else site_url + "student/"
        converter = editions.ColabConverter(html_root, base, wheel_url, bib, macros)
        for path in _notebooks(source):
            relative = path.relative_to(source)
            notebook = _rewrite_install_cell(_read(path), wheel_url)
            download = site / "notebooks" / edition / relative
            download.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(notebook, download)
            docname = "book/" + relative.with_suffix("").as_posix()
            colab = converter.notebook(notebook, docname, edition=edition)
            target = site / "colab" / edition / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            nbformat.write(colab, target)
            written[edition].append(relative)
    return written


PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title>
<style>
body {{ font-family: system-ui, sans-serif; max-width: 46rem; margin: 2rem auto;
       padding: 0 1rem; line-height: 1.5; color: #1a1a1a; background: #fff; }}
a {{ color: #0a4d8c; }}
code {{ font-size: 0.95em; }}
li {{ margin: 0.2rem 0; }}
@media (prefers-color-scheme: dark) {{
  body {{ color: #e8e8e8; background: #14181b; }} a {{ color: #8ec5ff; }} }}
</style>
</head>
<body>
<main>
{body}
</main>
</body>
</html>
"""


def _downloads_page(written, wheel_name, pdfs, decks=None):
    rows = []
    for relative in written["book"]:
        name = relative.as_posix()
        student = relative in written["student"]
        rows.append(
            f'<li><code>{html.escape(name)}</code>: '
            f'<a href="notebooks/book/{name}" download>book</a>'
            + (f', <a href="notebooks/student/{name}" download>student</a>' if student else "")
            + f', Colab edition <a href="colab/book/{name}" download>book</a>'
            + (f', <a href="colab/student/{name}" download>student</a>' if student else "")
            + "</li>")
    pdf_items = "".join(f'<li><a href="pdf/{html.escape(p)}">{html.escape(p)}</a></li>'
                        for p in pdfs) or "<li>(not built: no Chromium when the site was made)</li>"
    deck_items = "".join(
        f'<li><a href="slides/{html.escape(name)}">Chapter {number}</a>'
        + (f', <a href="slides/{html.escape(pdf)}">PDF</a>' if pdf else "")
        + f" ({count} slides)</li>"
        for number, (name, count, pdf) in enumerate(decks or [], start=1)) \
        or "<li>(not built)</li>"
    body = f"""<h1>Near the Identity: downloads</h1>
<p><a href="index.html">The book</a> &middot; <a href="student/index.html">the student
edition</a> (exercises without solutions)</p>
<h2>Printed edition</h2>
<ul>{pdf_items}</ul>
<h2>Lecture slides</h2>
<p>One deck per chapter, made from the notebooks' statements, figures and exercises
(reveal.js: arrow keys to move, S for the speaker view with the notes, or print it).</p>
<ul>{deck_items}</ul>
<h2>Notebooks</h2>
<p>Each notebook in the book's edition (with solutions), the student edition (without),
and their Colab editions (plain Markdown that Colab renders, numbered as in the book).
Each starts by installing the library below when it is missing.</p>
<ul>
{chr(10).join(rows)}
</ul>
<h2>The library</h2>
<p><a href="{wheel_name}" download>{wheel_name}</a>:
<code>pip install {wheel_name}</code> (needs numpy, scipy and matplotlib).</p>
"""
    return PAGE.format(title="Near the Identity: downloads", body=body)


def _not_found_page(site_url):
    root = urlparse(site_url).path or "/"
    root = root if root.endswith("/") else root + "/"
    body = f"""<h1>Page not found</h1>
<p>This address is not part of <em>Near the Identity</em>. Start again from
<a href="{root}index.html">the book's first page</a>, the
<a href="{root}student/index.html">student edition</a> or the
<a href="{root}downloads.html">downloads</a>.</p>
"""
    return PAGE.format(title="Page not found: Near the Identity", body=body)


def _addresses(root, repo_url, site_url):
    """(repository URL, site URL ending in "/", the wheel's URL on the site)."""
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))
    repo_url = (repo_url or config.get("repository", {}).get("url", "")).rstrip("/")
    site_url = site_url or pages_url(repo_url)
    site_url = site_url if site_url.endswith("/") else site_url + "/"
    return repo_url, site_url, site_url + _wheel_name(root)


def stage_and_build(staging, *, root=ROOT, repo_url=None, site_url=None, pdf_dir=None,
                    strict=True):
    """Stage the book in ``staging`` for the addresses and build both editions there.

    ``staging/_build/html``: the book's HTML (``jupyter-book build -n --keep-going``, and
    ``-W`` when ``strict``); ``staging/_build/student`` and ``student-html``: the student
    edition (the two builds run side by side). Returns both builds' finished processes
    (book, student), their warnings in their output. :func:`build_site` with
    ``built=staging`` makes the site from them (the test suite builds the book once so).
    """
    root, staging = Path(root).resolve(), Path(staging).resolve()
    repo_url, site_url, wheel_url = _addresses(root, repo_url, site_url)
    start = _step(f"staging the book for {site_url} (repository {repo_url})")
    _stage(root, staging, repo_url, site_url, wheel_url, pdf_dir)
    _done(start)
    start = _step("building the HTML book and, beside it, the student edition")
    env = dict(os.environ, JUPYTER_PLATFORM_DIRS="1")
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    commands = ([str(jupyter_book), "build", *(["-W"] if strict else []), "-n", "--keep-going",
                 "--path-output", str(staging), str(staging)],
                [sys.executable, "-m", "resnet_theory.homework", "student", "--root",
                 str(staging), "--out", str(staging / "_build" / "student"),
                 "--html", str(staging / "_build" / "student-html")])
    with tempfile.TemporaryDirectory() as logs:  # files, not pipes: neither build waits
        outputs = [(Path(logs) / f"{n}.out", Path(logs) / f"{n}.err") for n in range(2)]
        running = []
        for command, (out, err) in zip(commands, outputs, strict=True):
            with open(out, "w") as stdout, open(err, "w") as stderr:
                running.append(subprocess.Popen(command, stdout=stdout, stderr=stderr, env=env))
        builds = tuple(
            subprocess.CompletedProcess(command, process.wait(), out.read_text(errors="replace"),
                                        err.read_text(errors="replace"))
            for command, process, (out, err) in zip(commands, running, outputs, strict=True))
    _done(start)
    return builds


def build_site(out, *, root=ROOT, repo_url=None, site_url=None, pdf_dir=None, strict=True,
               built=None):
    """Build the site into ``out`` (replaced); return a summary dict.

    ``built``: a folder :func:`stage_and_build` filled for the same addresses, whose
    builds are used instead of staging and building the book again."""
    root, out = Path(root).resolve(), Path(out).resolve()
    repo_url, site_url, wheel_url = _addresses(root, repo_url, site_url)
    wheel_name = _wheel_name(root)
    if built is None:
        (root / "_build").mkdir(exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix="site-src-", dir=root / "_build"))
    else:
        staging = Path(built).resolve()
    try:
        if built is None:
            for build in stage_and_build(staging, root=root, repo_url=repo_url,
                                         site_url=site_url, pdf_dir=pdf_dir, strict=strict):
                if build.returncode != 0:
                    raise RuntimeError(f"{' '.join(map(str, build.args))} failed:\n"
                                       + (build.stdout + build.stderr)[-4000:])
        staged = yaml.safe_load((staging / "_config.yml").read_text(encoding="utf-8"))
        if out.exists():
            shutil.rmtree(out)
        shutil.copytree(staging / "_build" / "html", out)
        shutil.copytree(staging / "_build" / "student-html", out / "student")
        start = _step("building the library's wheel")
        build_wheel(root, out)
        _done(start)
        start = _step("writing the notebooks for download and the Colab editions")
        macros = staged["sphinx"]["config"].get("mathjax3_config", {}).get("tex", {}).get(
            "macros", {})
        written = _write_editions(staging / "book", staging / "_build" / "student",
                                  out, out / "student", out, site_url, wheel_url, macros,
                                  root / "book" / "references.bib")
        _done(start)
        start = _step("building the lecture decks")
        counts = slides.build_decks(staging / "_build" / "html", out / "slides", book_url="../",
                                    mathjax_url="../_static/mathjax/tex-chtml.js",
                                    pdf=bool(pdf_dir and Path(pdf_dir).is_dir()), root=staging)
        decks = [(name, count, name.replace(".html", ".pdf")
                  if (out / "slides" / name.replace(".html", ".pdf")).is_file() else "")
                 for name, count in counts.items()]
        _done(start)
        pdfs = []
        if pdf_dir and Path(pdf_dir).is_dir():
            (out / "pdf").mkdir()
            for pdf in sorted(Path(pdf_dir).glob("*.pdf")):
                shutil.copy2(pdf, out / "pdf" / pdf.name)
                pdfs.append(pdf.name)
        (out / "downloads.html").write_text(_downloads_page(written, wheel_name, pdfs, decks),
                                            encoding="utf-8")
        (out / "404.html").write_text(_not_found_page(site_url), encoding="utf-8")
        (out / ".nojekyll").write_text("", encoding="utf-8")
        summary = {"site_url": site_url, "repo_url": repo_url, "wheel": wheel_name,
                   "notebooks": {k: [p.as_posix() for p in v] for k, v in written.items()},
                   "pdfs": pdfs, "slides": counts}
        (out / "site.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
        return summary
    finally:
        if built is None:
            shutil.rmtree(staging, ignore_errors=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "site")
    parser.add_argument("--repo-url", default="", help="overrides repository.url")
    parser.add_argument("--site-url", default="",
                        help="where the site is published (default: GitHub Pages')")
    parser.add_argument("--pdf", type=Path, default=ROOT / "_build" / "pdf",
                        help="the folder of make pdf (skipped when missing)")
    args = parser.parse_args(argv)
    start = time.monotonic()
    summary = build_site(args.out, repo_url=args.repo_url or None,
                         site_url=args.site_url or None, pdf_dir=args.pdf)
    print(f"\nThe site is built in {args.out} ({time.monotonic() - start:.0f} s), for "
          f"{summary['site_url']}.\nServe it with: python -m http.server -d {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The published site (``make site``), as its readers and a lecturer's fork meet it.

The module builds the site as ``make site`` does (``book/_ext/build_site.py``), for a
fork (``REPO_URL=https://github.com/example/fork``) published at a sub-path, as GitHub
Pages publishes a project site, and serves it with a real HTTP server at
``http://127.0.0.1:<port>/fork/``. (The suite's one build of the book, conftest.py's
``book_build``, is that staged build: the other tests of the HTML, the PDF and the
student edition judge the same pages.) Then:

- the publishing workflow is a valid GitHub workflow (check-jsonschema's vendored
  schema, offline) that builds with the README's command and deploys with the Pages
  actions;
- nothing in the site (pages, scripts, notebooks, the wheel) names the default
  repository: the fork's address reaches every launch button and install cell;
- every page of both editions, read as served: every link, image, script, stylesheet
  and download on it answers, every ``#anchor`` exists and nothing it loads is on
  another host; Chromium opens a few pages of each edition over HTTP (network blocked
  beyond the host; see ``crawl``): every resource their scripts fetch answers, no
  request leaves the host, and a search in each edition finds pages whose links
  answer;
- the 28 Colab editions, rendered by a CommonMark renderer (no MyST), show no MyST
  syntax, and one of them runs top to bottom in a fresh kernel of a fresh virtual
  environment whose only copy of the library is the wheel its first cell installs from
  the served site.

The PDFs are not part of this build (the printed edition has its own test,
tests/test_pdf.py); a page whose PDF is missing has no ".pdf" button.
"""

import functools
import http.server
import importlib.util
import json
import os
import re
import subprocess
import sys
import sysconfig
import threading
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from urllib.parse import unquote, urldefrag, urljoin, urlparse

import lxml.html
import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
FORK = "https://github.com/example/fork"
DEFAULT = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
WORKFLOW = ROOT / ".github" / "workflows" / "pages.yml"
#: the page of each edition whose formulas the crawl typesets (see ``crawl``)
TYPESET_PAGE = "book/ch5_shamir/example_one.html"
REDIRECT = re.compile(r'<meta http-equiv="refresh"', re.IGNORECASE)
MYST_RESIDUE = re.compile(r"\{prf:|:label:|\{numref\}|\{cite[:}]|\{doc\}|\{[a-z][\w:-]*\}`|"
                          r"```\{|:::\{")


def _module(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / "book" / "_ext" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "book" / "_ext"))
    return module


class _SubPathHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the site under /fork/ only; anything else is GitHub Pages' 404."""

    prefix = "/fork/"

    def translate_path(self, path):
        path = urlparse(path).path
        if not path.startswith(self.prefix):
            return str(Path(self.directory) / "does-not-exist")
        return super().translate_path("/" + path[len(self.prefix):])

    def send_error(self, code, message=None, explain=None):
        page = Path(self.directory) / "404.html"
        if code != 404 or not page.is_file():
            return super().send_error(code, message, explain)
        body = page.read_bytes()
        self.send_response(404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, *args):  # keep the test's output clean
        pass


@pytest.fixture(scope="module")
def site(book_build, tmp_path_factory):
    """The site built for the fork and served under /fork/: (folder, base URL, summary).

    The book and its student edition are the session's build (conftest.py), staged for
    the fork and its address as ``make site`` stages them; here the site is made from
    them as ``make site`` makes it (``build_site(built=...)``). Warnings are judged by
    tests/test_book_build.py; here the site is."""
    assert book_build.result.returncode == 0 and book_build.student.returncode == 0, \
        (book_build.result.stderr + book_build.student.stderr)[-4000:]
    base = book_build.base
    out = tmp_path_factory.mktemp("site") / "site"
    summary = _module("build_site").build_site(out, repo_url=FORK, site_url=base, pdf_dir=None,
                                               built=book_build.source)
    handler = functools.partial(_SubPathHandler, directory=str(out))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", urlparse(base).port), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield out, base, summary
    finally:
        server.shutdown()
        server.server_close()


# ------------------------------------------------------------------ the workflow
def test_the_publishing_workflow_is_a_valid_github_workflow():
    checker = Path(sys.executable).with_name("check-jsonschema")
    result = subprocess.run([str(checker), "--builtin-schema", "vendor.github-workflows",
                             str(WORKFLOW)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_workflow_builds_with_the_readme_command_and_deploys_to_pages():
    workflow = yaml.safe_load(WORKFLOW.read_text())
    steps = [step for job in workflow["jobs"].values() for step in job["steps"]]
    runs = " ".join(step.get("run", "") for step in steps)
    uses = [step.get("uses", "").split("@")[0] for step in steps]
    assert "make site" in runs and "make site" in (ROOT / "README.md").read_text()
    assert "github.repository" in runs  # a fork publishes with its own address
    assert {"actions/upload-pages-artifact", "actions/deploy-pages"} <= set(uses)
    assert "git push" in runs and " colab" in runs  # the Colab editions' branch


# ------------------------------------------------------------------ what it holds
def test_the_site_holds_both_editions_the_notebooks_the_wheel_and_a_404_page(site):
    out, _, summary = site
    assert (out / "index.html").is_file() and (out / "student" / "index.html").is_file()
    assert (out / summary["wheel"]).is_file() and (out / "404.html").is_file()
    book = summary["notebooks"]["book"]
    assert len(book) >= 14 and sorted(book) == sorted(summary["notebooks"]["student"])
    for edition in ("book", "student"):
        for name in book:
            assert (out / "notebooks" / edition / name).is_file()
            assert (out / "colab" / edition / name).is_file()


def _texts(folder):
    """(path, text) of every file of the site, the wheel's members included."""
    for path in sorted(folder.rglob("*")):
        if not path.is_file():
            continue
        if path.suffix == ".whl":
            with zipfile.ZipFile(path) as wheel:
                for member in wheel.namelist():
                    yield f"{path.name}/{member}", wheel.read(member).decode("utf-8", "replace")
        elif path.suffix in (".png", ".jpg", ".woff", ".woff2", ".ttf", ".pdf", ".ico",
                             ".pickle", ".inv"):
            continue
        else:
            yield str(path.relative_to(folder)), path.read_text("utf-8", errors="replace")


def test_a_fork_build_names_only_the_fork(site):
    out, base, _ = site
    default = urlparse(DEFAULT).path.strip("/")  # "near-the-identity/near-the-identity"
    owner = default.split("/")[0]
    # The licence's attribution line names the original book: CC BY 4.0 asks a fork
    # to keep it, so the licence files are the one place the default may appear.
    traces = [name for name, text in _texts(out)
              if (default in text or f"{owner}.github.io" in text)
              and not Path(name).name.startswith("LICENSE")]
    assert not traces, traces[:10]
    page = (out / "book" / "ch5_shamir" / "example_one.html").read_text()
    assert f"{FORK}/issues" in page.replace("%2F", "/") or "example/fork" in page
    assert ("https://colab.research.google.com/github/example/fork/blob/colab/book/"
            "ch5_shamir/example_one.ipynb") in page
    student = (out / "student" / "book" / "ch5_shamir" / "example_one.html").read_text()
    assert ("https://colab.research.google.com/github/example/fork/blob/colab/student/"
            "ch5_shamir/example_one.ipynb") in student
    for edition in ("notebooks/book", "notebooks/student", "colab/book", "colab/student"):
        notebook = nbformat.read(out / edition / "ch5_shamir" / "example_one.ipynb", 4)
        install = next(c for c in notebook.cells if c.cell_type == "code")
        assert base + "resnet_theory-" in install.source, (edition, install.source)


# ------------------------------------------------------------------ the crawl
DEFER_TYPESETTING = _module("print_pdf").DEFER_TYPESETTING
# (formulas, formulas typeset, MathJax errors) once MathJax has finished
TYPESET_FORMULAS = r"""
async () => {
  await MathJax.startup.promise;
  return [document.querySelectorAll('.math').length,
          document.querySelectorAll('.math:has(mjx-container)').length,
          document.querySelectorAll('mjx-merror, [data-mjx-error]').length];
}
"""
PAGE_LINKS = r"""
async () => {
  const mj = window.MathJax;
  if (mj && mj.startup && mj.startup.promise) { await mj.startup.promise; }
  const urls = [];
  for (const [selector, attribute] of [["a[href]", "href"], ["img[src]", "src"],
        ["script[src]", "src"], ["link[href]", "href"], ["source[srcset]", "srcset"]]) {
    for (const el of document.querySelectorAll(selector)) {
      urls.push(new URL(el.getAttribute(attribute).split(" ")[0], location.href).href);
    }
  }
  return urls;
}
"""


def _pages(out):
    pages = []
    for path in sorted(out.rglob("*.html")):
        relative = path.relative_to(out).as_posix()
        if "/_static/" in f"/{relative}" or "/_sources/" in f"/{relative}":
            continue
        pages.append(relative)
    return pages


def _ids(html_text):
    tree = lxml.html.fromstring(html_text)
    return set(tree.xpath("//@id")) | set(tree.xpath("//a/@name"))


#: what a page's HTML links to or loads: (element, attribute) pairs
LINKING = (("a", "href"), ("img", "src"), ("script", "src"), ("link", "href"),
           ("source", "srcset"), ("iframe", "src"), ("video", "src"), ("audio", "src"))
#: the ``rel`` values of a ``<link>`` that the browser fetches
FETCHED_RELS = {"stylesheet", "icon", "preload", "modulepreload", "prefetch", "manifest"}


def _served_links(text, address):
    """(links, loads) of a served page's HTML, as absolute URLs: every URL it links to
    or loads (what PAGE_LINKS reads in the browser), and the resources the browser
    fetches for it as it loads (scripts, stylesheets, images, frames)."""
    tree = lxml.html.fromstring(text)
    links, loads = [], []
    for tag, attribute in LINKING:
        for element in tree.iter(tag):
            value = (element.get(attribute) or "").strip()
            if not value:
                continue
            url = urlparse(urljoin(address, value.split(" ")[0]))
            if url.scheme in ("http", "https") and not url.path:
                url = url._replace(path="/")  # as a browser writes it
            url = url.geturl()
            links.append(url)
            rels = set((element.get("rel") or "").lower().split())
            if tag != "a" and (tag != "link" or rels & FETCHED_RELS):
                loads.append(url)
    return links, loads


#: the pages Chromium opens in each edition (see ``crawl``)
BROWSED = ("book/intro.html", TYPESET_PAGE)


@pytest.fixture(scope="module")
def crawl(site, chromium, free_port):
    """Every page of the site read as it is served, every same-host URL on it fetched
    (by the tests); a few pages of each edition opened in Chromium over HTTP.

    What a page's HTML names is read from the served file: every link, image, script,
    stylesheet and download (the tests fetch each from the server, ``#anchors``
    included), and every resource the browser would fetch from another host. What
    scripts fetch as they run is seen in Chromium, which opens the opening page and a
    chapter page of each edition (typeset: MathJax fetches its fonts), the search page
    of each edition and the 404 page, with every other host cut off: every response
    must answer and no request may leave the host. Every page loads the same scripts
    (each is fetched over HTTP here), and the book's survey (tests/test_browser.py)
    opens every page of the build, of which the site is a copy, typesets every formula
    and fails on any resource that does not load (a console error) and on any request
    for another host; the student edition's survey does the same for its pages.
    """
    out, base, _ = site
    host = urlparse(base).netloc
    left_host, failed_loads, links, typeset = [], [], {}, {}
    pages = _pages(out)
    for relative in pages:
        text = (out / relative).read_text(encoding="utf-8", errors="replace")
        if REDIRECT.search(text):  # a redirect page: its target is a link to check
            target = re.search(r'url=([^"\'>]+)', text, re.IGNORECASE)[1]
            links.setdefault(urljoin(base + relative, target), relative)
            continue
        found, loads = _served_links(text, base + relative)
        for url in found:
            if urlparse(url).netloc == host:
                links.setdefault(url, relative)
        left_host += [url for url in loads if urlparse(url).netloc not in (host, "")]
    # Every other host is cut off by a proxy that answers nothing (only the site's host
    # bypasses it), and every request for one is still seen and recorded.
    context = chromium.new_context(viewport={"width": 1280, "height": 900},
                                   service_workers="block",
                                   proxy={"server": f"http://127.0.0.1:{free_port()}",
                                          "bypass": host})
    context.on("request", lambda request: left_host.append(request.url)
               if urlparse(request.url).scheme in ("http", "https", "ws", "wss")
               and urlparse(request.url).netloc != host else None)
    # MathJax typesets (and so fetches its fonts over HTTP) on one chapter page per
    # edition: the book's survey typesets every formula (tests/test_browser.py), and
    # the student pages hold no formula the book's do not.
    context.add_init_script(
        f"if (!location.pathname.endsWith('/{TYPESET_PAGE}')) {{ {DEFER_TYPESETTING} }}")
    page = context.new_page()
    page.set_default_timeout(120_000)  # the loaded machine of a whole-suite run
    missing = base + "no/such/chapter/page.html"  # asked for on purpose, below
    page.on("response", lambda response: failed_loads.append(
        (page.url, response.url, response.status))
        if response.status >= 400 and response.url != missing else None)
    browsed = {edition + name: set() for edition in ("", "student/") for name in BROWSED}
    for relative, seen in browsed.items():
        page.goto(base + relative, wait_until="load")
        if relative.endswith(TYPESET_PAGE):
            typeset[relative] = page.evaluate(TYPESET_FORMULAS)
        seen.update(page.evaluate(PAGE_LINKS))
        for url in seen:  # those the page's scripts add too
            if urlparse(url).netloc == host:
                links.setdefault(url, relative)
    # the 404 page, as a host serves it for an address deep in the site
    response = page.goto(missing, wait_until="load")
    not_found = (response.status, page.evaluate(PAGE_LINKS))
    searches = {}
    for edition in ("", "student/"):
        page.goto(base + edition + "search.html?q=residual", wait_until="load")
        page.wait_for_selector("#search-results ul.search li, #search-results p",
                               timeout=30_000)
        page.wait_for_function(
            "() => !document.querySelector('#search-progress') ||"
            " document.querySelector('#search-progress').textContent.length > 0",
            timeout=30_000)
        searches[edition] = page.eval_on_selector_all(
            "#search-results ul.search li a", "els => els.map(a => a.href)")
    context.close()
    return {"pages": pages, "browsed": browsed, "links": links, "left_host": left_host,
            "failed_loads": failed_loads, "not_found": not_found, "searches": searches,
            "typeset": typeset}


def _fetch(url):
    request = urllib.request.Request(url, method="GET")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, b""


def test_every_page_of_both_editions_is_crawled(crawl):
    pages = crawl["pages"]
    assert "index.html" in pages and "student/index.html" in pages
    assert sum(p.startswith("student/") for p in pages) >= 20
    assert sum(not p.startswith("student/") for p in pages) >= 20
    assert set(crawl["browsed"]) <= set(pages)


def test_the_crawl_reads_the_links_the_browser_finds(crawl, site):
    # On each page Chromium opened, every URL read from the served HTML is one the
    # browser finds there, resolved alike (its scripts may add more: fetched too).
    out, base, _ = site
    for relative, in_browser in crawl["browsed"].items():
        text = (out / relative).read_text(encoding="utf-8")
        found = set(_served_links(text, base + relative)[0])
        in_browser = {url.removesuffix("#") for url in in_browser}  # "#" alone: the page
        assert len(found) >= 20 and found <= in_browser, (relative, sorted(found - in_browser))


def test_mathjax_typesets_from_the_served_site_in_both_editions(crawl):
    # its fonts are fetched over HTTP from the sub-path (test_every_resource_a_page_loads_answers)
    assert sorted(crawl["typeset"]) == [TYPESET_PAGE, "student/" + TYPESET_PAGE]
    for page, (formulas, typeset, errors) in crawl["typeset"].items():
        assert formulas >= 20 and typeset == formulas and errors == 0, (page, formulas,
                                                                        typeset, errors)


def test_no_request_leaves_the_host(crawl):
    assert not crawl["left_host"], sorted(set(crawl["left_host"]))[:10]


def test_every_resource_a_page_loads_answers(crawl):
    assert not crawl["failed_loads"], crawl["failed_loads"][:10]


def test_every_link_image_script_and_download_answers(crawl):
    broken, answers, anchors = [], {}, {}
    for url, where in sorted(crawl["links"].items()):
        address, fragment = urldefrag(url)
        if address not in answers:
            status, body = _fetch(address)
            answers[address] = status
            if status == 200 and address.endswith(".html"):
                anchors[address] = _ids(body.decode("utf-8", "replace"))
        if answers[address] != 200:
            broken.append((where, url, answers[address]))
        elif fragment and address in anchors and not {fragment, unquote(fragment)} & anchors[
                address]:  # a browser tries the fragment as it is written, then decoded
            broken.append((where, url, "no such anchor"))
    assert not broken, broken[:15]


def test_the_404_page_leads_back_into_the_site(crawl, site):
    _, base, _ = site
    status, links = crawl["not_found"]
    assert status == 404
    inside = [url for url in links if url.startswith(base)]
    assert len(inside) >= 3
    assert all(_fetch(url)[0] == 200 for url in inside)


def test_a_search_in_each_edition_finds_pages_that_answer(crawl):
    for edition, results in crawl["searches"].items():
        assert len(results) >= 3, (edition, results)
        assert all(_fetch(urldefrag(url)[0])[0] == 200 for url in results), edition


# ------------------------------------------------------------------ Colab editions
def test_the_colab_editions_render_without_myst(site):
    from markdown_it import MarkdownIt

    out, _, _ = site
    renderer = MarkdownIt("commonmark")
    editions = sorted((out / "colab").rglob("*.ipynb"))
    assert len(editions) == 28
    residues = []
    for path in editions:
        for index, cell in enumerate(nbformat.read(path, 4).cells):
            if cell.cell_type == "markdown":
                for match in MYST_RESIDUE.finditer(renderer.render(cell.source)):
                    residues.append((path.relative_to(out).as_posix(), index, match[0]))
    assert not residues, residues[:10]


def test_the_colab_editions_keep_the_books_numbers_and_the_student_has_no_solutions(site):
    out, _, _ = site
    book = nbformat.read(out / "colab" / "book" / "ch2_identity_matters" /
                         "linear_residual.ipynb", 4)
    text = "\n".join(c.source for c in book.cells if c.cell_type == "markdown")
    assert "**Theorem 2.1" in text and "[Figure 2.1](" in text
    assert "<summary><b>Solution to Exercise 2." in text
    student = nbformat.read(out / "colab" / "student" / "ch2_identity_matters" /
                            "linear_residual.ipynb", 4)
    text = "\n".join(c.source for c in student.cells)
    assert "**Exercise 2." in text and "Solution to" not in text


def _fresh_environment(folder):
    """A virtual environment holding the project's packages but not the library.

    Colab comes with numpy, scipy, matplotlib, sympy and a kernel; here they are links
    to the project's own, so nothing is downloaded. The library is left out (its
    editable install too): the notebook's first cell must install it, from the wheel.
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    target = Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True).stdout.strip())
    source = Path(sysconfig.get_paths()["purelib"])
    for entry in source.iterdir():
        name = entry.name.lower()
        if name.startswith(("resnet_theory", "__editable__", "_resnet_theory")):
            continue
        if not (target / entry.name).exists():
            (target / entry.name).symlink_to(entry)
    return python


def test_a_colab_edition_runs_alone_from_the_wheel(site, tmp_path, monkeypatch):
    from nbclient import NotebookClient

    out, base, _ = site
    python = _fresh_environment(tmp_path / "venv")
    work = tmp_path / "work"  # the kernel's folder: the repository is not on the path
    work.mkdir()
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("PYTHON", "VIRTUAL_ENV", "JUPYTER_PATH"))}
    env.update(JUPYTER_PATH=str(tmp_path / "kernels"), PIP_NO_INDEX="1",
               PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONNOUSERSITE="1", MPLBACKEND="Agg")
    check = subprocess.run([str(python), "-c", "import resnet_theory"], capture_output=True,
                           cwd=work, env=env)
    assert check.returncode != 0  # the library is not there before the first cell
    kernels = tmp_path / "kernels" / "kernels" / "colab-test"
    kernels.mkdir(parents=True)
    (kernels / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "fresh", "language": "python",
        "env": {"PYTHONPATH": "", "VIRTUAL_ENV": "", "PIP_NO_INDEX": "1",
                "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONNOUSERSITE": "1",
                "MPLBACKEND": "Agg"}}))
    notebook = nbformat.read(out / "colab" / "book" / "ch3_near_identities" /
                             "matrices.ipynb", 4)
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "kernels"))
    NotebookClient(notebook, kernel_name="colab-test", timeout=300,
                   resources={"metadata": {"path": str(work)}}).execute()
    install = notebook.cells[1]
    assert base in install.source
    where = subprocess.run([str(python), "-c",
                            "import resnet_theory; print(resnet_theory.__file__)"],
                           capture_output=True, text=True, cwd=work, env=env)
    assert str(tmp_path / "venv") in where.stdout, where.stdout + where.stderr
    errors = [o for c in notebook.cells if c.cell_type == "code" for o in c.outputs
              if o.get("output_type") == "error"]
    assert not errors

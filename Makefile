# Near the Identity: the two commands are `make book` and `make test`.
# Each one creates the virtual environment .venv from requirements.txt when it is
# missing or older than requirements.txt / pyproject.toml, then does its job.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# Strict build: warnings are errors (-W), every reference must resolve (-n).
JB_FLAGS := -W -n --keep-going

export JUPYTER_PLATFORM_DIRS := 1
export PYDEVD_DISABLE_FILE_VALIDATION := 1

# Homework: `make grade SUBMISSIONS=<folder>` grades every .ipynb in <folder>, each in
# its own kernel inside a bubblewrap sandbox (when bwrap is installed) with GRADE_TIMEOUT
# seconds and GRADE_OUTPUT_MB megabytes of output, JOBS notebooks at once (default: the
# number of cores). GRADE_FLAGS adds options, e.g. GRADE_FLAGS=--require-sandbox.
# SHARD=K/N grades the K-th of N shards of the students (combine the shards' result
# folders with `python -m resnet_theory.homework merge`; see the lecturer's guide).
GRADE_TIMEOUT   ?= 180
GRADE_OUTPUT_MB ?= 5
JOBS            ?= $(shell nproc 2>/dev/null || echo 1)
GRADE_FLAGS     ?=
SHARD           ?=
# ASSIGNMENT: the book notebook or chapter folder the submissions answer (default:
# the whole book, matched by file name); it fixes which exercises count.
ASSIGNMENT      ?=
# KEY: where `make answer-key` writes the answer key of ASSIGNMENT (see the README).
KEY             ?= _build/answer-key.json
ifneq ($(filter grade merge-marks,$(MAKECMDGOALS)),)
ifeq ($(strip $(SUBMISSIONS)),)
$(error make $(filter grade merge-marks,$(MAKECMDGOALS)) needs the folder of submitted notebooks: SUBMISSIONS=<folder>)
endif
endif

# Notebooks: `make notebooks` re-executes every notebook under book/ in place, each
# from a fresh kernel, top to bottom; NB=<path> re-executes one. No timings are stored.
define STRIP_TIMINGS
import sys, nbformat
for path in sys.argv[1:]:
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
    nbformat.write(nb, path)
endef
export STRIP_TIMINGS
NB ?= $(shell find book -name '*.ipynb' -not -path '*/.ipynb_checkpoints/*' | sort)

# Tests: `make test` runs the whole suite on TEST_JOBS pytest-xdist workers (default:
# one more than the number of cores, as several tests mostly wait -- on a sandbox's
# time limit, a CPU quota, a server or a browser -- and the extra worker keeps the
# cores busy meanwhile: on 2 cores, when the suite took about 150 s, 169 s with 2
# workers, 150 and 152 s with 3, 162 s with 4; TEST_JOBS=0 runs it in one process). A notebook's cells run
# in order in one kernel, and every test file stays whole on one worker
# (--dist loadfile), so module fixtures are built once. The files are handed out in
# the order conftest.py gives them (--no-loadscope-reorder): the longest first, then
# the notebooks, whose nbval run also gives the answer key, then the tests that need it.
# Every process of the suite gets one BLAS thread: there is at least a worker per core,
# and OpenBLAS's own threads would only compete with the other workers' (they spin
# while they wait). The notebooks alone on two workers: 100 s of CPU with OpenBLAS's
# default threads, 82 s with one; the stored outputs are the same.
TEST_JOBS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))
PYTEST    := OPENBLAS_NUM_THREADS=1 $(BIN)/python -m pytest -n $(TEST_JOBS) --dist loadfile \
	--no-loadscope-reorder
# `make test-portable` re-runs every notebook under nbval with OpenBLAS rounding like
# other CPUs: the stored outputs must not depend on the machine's BLAS kernel.
PORTABLE_CORETYPES ?= Prescott Sandybridge

# The printed edition: `make pdf` builds the book as one HTML page and prints it with
# Debian's Chromium (book/_ext/print_pdf.py) into _build/pdf/near-the-identity.pdf, one
# PDF per chapter (its pages and its solutions), _build/pdf/near-the-identity-ch<N>.pdf,
# and one exercise sheet per chapter, _build/pdf/exercises-ch<N>.pdf. `make book` prints
# it first, so that the HTML book's ".pdf" button serves it; without Chromium,
# `make book` builds the HTML only and says so.
PDF_DIR  := _build/pdf
CHROMIUM ?= $(shell command -v chromium-headless-shell 2>/dev/null || command -v chromium 2>/dev/null || command -v chromium-browser 2>/dev/null)

.PHONY: help book site pdf slides test test-portable lab lint clean student grade merge-marks notebooks \
	answer-key

help:
	@echo "make book   build the HTML book into _build/html (with the PDF, when"
	@echo "               Chromium is installed)"
	@echo "make site   the publishable site in _build/site (book, student edition, PDFs,"
	@echo "               notebooks and their Colab editions, the library's wheel);"
	@echo "               REPO_URL=<fork> SITE_URL=<address> for a fork"
	@echo "make pdf    print the book and one exercise sheet per chapter into _build/pdf"
	@echo "make slides one lecture deck per chapter into _build/slides (reveal.js, offline;"
	@echo "               printed to PDF, one slide a page, when Chromium is installed)"
	@echo "make test   run the whole suite (library, doctests, notebooks, book build)"
	@echo "make test-portable  re-run every notebook under nbval with the OpenBLAS"
	@echo "               kernels of other CPUs ($(PORTABLE_CORETYPES))"
	@echo "make lab [LAB_PORT=8888] [LAB_EDITION=student]  open the notebooks in JupyterLab"
	@echo "               (MyST rendered; the student edition has no solutions)"
	@echo "make lint   ruff over the library and tests"
	@echo "make notebooks [NB=<path>]  re-execute the notebooks in place (fresh kernel,"
	@echo "               top to bottom, no timings stored), then check them with make test"
	@echo "make student  student notebooks (no solutions) into _build/student and the"
	@echo "               student HTML book into _build/student-html"
	@echo "make grade SUBMISSIONS=<folder> [JOBS=<n>] [SHARD=<k>/<n>]  run every .ipynb in"
	@echo "               <folder> in a sandbox, n at a time, and check its answers;"
	@echo "               writes <folder>/grades.csv, gradebook.csv and feedback/"
	@echo "make answer-key [ASSIGNMENT=<nb or folder>] [KEY=<file>]  run the assignment's"
	@echo "               notebooks once and write the expected answers (default:"
	@echo "               _build/answer-key.json); make grade computes it itself"
	@echo "make merge-marks SUBMISSIONS=<folder>  add the marks of <folder>/manual-marks.csv"
	@echo "               to <folder>/gradebook.csv"
	@echo "make clean  remove _build (keeps .venv)"

# A long step prints a line when it starts and its time when it ends:
# $(call timed,what it does,command)
timed = @echo "== $(1)"; start=$$(date +%s); $(2) && echo "   $(1): done in $$(( $$(date +%s) - start )) s"

$(STAMP): requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; v = sys.version_info; sys.exit(0 if v >= (3, 11) else "Python 3.11 or newer is needed, found %d.%d (set PYTHON=...)" % v[:2])'
	@echo "== preparing the environment $(VENV) from requirements.txt (about 1 GB; 2 to 4 minutes the first time)"
	@# An existing environment keeps its interpreter: running another Python's venv
	@# module over it would mix two standard libraries.
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(call timed,installing the pinned packages,$(BIN)/python -m pip install --progress-bar on -r requirements.txt)
	@touch $(STAMP)

# What the printed edition is made of: the PDF is printed again only when one of
# these is newer than it (the library reference is not printed).
BOOK_SOURCES := _config.yml _toc.yml $(shell find book -type f -not -path '*/.ipynb_checkpoints/*' \
	-not -name '*.pyc' 2>/dev/null)
PRINTED := $(PDF_DIR)/.printed

book: $(STAMP)
ifeq ($(strip $(CHROMIUM)),)
	@echo "No Chromium (apt-get install chromium-headless-shell): the HTML book is built without its PDF."
else
	@$(MAKE) --no-print-directory $(PRINTED)
endif
	@mkdir -p _build
	$(call timed,building the HTML book (only what changed),$(BIN)/jupyter-book build $(JB_FLAGS) . > _build/book-build.log 2>&1 || { tail -40 _build/book-build.log; exit 1; })
	@echo
	@echo "The book is built: open file://$(CURDIR)/_build/html/index.html"

$(PRINTED): $(BOOK_SOURCES) $(STAMP)
	$(call timed,printing the PDF (a source changed),$(MAKE) --no-print-directory pdf)
	@touch $@

# The publishable site (book/_ext/build_site.py): the book at the root, the student edition
# under student/, the PDFs, every notebook for download with its Colab edition, the
# library's wheel and a 404 page; it works from any sub-path. REPO_URL overrides
# repository.url of _config.yml (a fork's launch buttons, install cells and links),
# SITE_URL the address it is published at (default: GitHub Pages' for REPO_URL).
REPO_URL ?=
SITE_URL ?=
site: $(STAMP)
ifeq ($(strip $(CHROMIUM)),)
	@echo "No Chromium (apt-get install chromium-headless-shell): the site is built without its PDFs."
else
	@$(MAKE) --no-print-directory $(PRINTED)
endif
	$(BIN)/python book/_ext/build_site.py --out _build/site --pdf $(PDF_DIR) \
		$(if $(REPO_URL),--repo-url "$(REPO_URL)") $(if $(SITE_URL),--site-url "$(SITE_URL)")

pdf: $(STAMP)
	@test -n "$(strip $(CHROMIUM))" || { echo "make pdf needs Chromium: apt-get install chromium-headless-shell (or chromium; or CHROMIUM=<path>)" >&2; exit 1; }
	$(BIN)/jupyter-book build --builder singlehtml $(JB_FLAGS) .
	CHROMIUM="$(CHROMIUM)" $(BIN)/python book/_ext/print_pdf.py _build/singlehtml $(PDF_DIR)

# Lecture slides: `make slides` builds the HTML book (only what changed) and then one
# reveal.js deck per chapter from the notebooks' statements, tagged figures and exercises
# (book/_ext/slides.py) into _build/slides/slides-ch<N>.html, and with Chromium prints
# each to slides-ch<N>.pdf, one slide a page. The decks open from disk, with no network.
slides: $(STAMP)
	@mkdir -p _build
	$(call timed,building the HTML book (only what changed),$(BIN)/jupyter-book build $(JB_FLAGS) . > _build/book-build.log 2>&1 || { tail -40 _build/book-build.log; exit 1; })
	CHROMIUM="$(CHROMIUM)" $(BIN)/python book/_ext/slides.py build --html _build/html \
		--out _build/slides $(if $(strip $(CHROMIUM)),--pdf)

test: $(STAMP)
	$(PYTEST)

test-portable: $(STAMP)
	@set -e; for core in $(PORTABLE_CORETYPES); do \
		echo "== nbval with OPENBLAS_CORETYPE=$$core"; \
		OPENBLAS_CORETYPE=$$core $(PYTEST) book; \
	done

# JupyterLab settings for `make lab`: the chapters' .md pages open rendered (by
# jupyterlab-myst, like the notebooks' markdown), and no news pop-up.
LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings/overrides.json
define LAB_OVERRIDES
{
  "@jupyterlab/docmanager-extension:plugin": {
    "defaultViewers": {"markdown": "Markdown Preview"}
  },
  "@jupyterlab/apputils-extension:notification": {
    "fetchNews": "false", "checkForUpdates": false
  }
}
endef
export LAB_OVERRIDES
LAB_PORT ?= 8888
# Jupyter refuses to run as root without --allow-root (containers, CI images).
LAB_FLAGS := --port=$(LAB_PORT) $(if $(filter 0,$(shell id -u 2>/dev/null)),--allow-root)

$(LAB_SETTINGS): Makefile $(STAMP)
	@mkdir -p $(dir $@)
	@echo "$$LAB_OVERRIDES" > $@

# LAB_EDITION=student opens the student notebooks (no solutions), written first.
LAB_EDITION ?= book
lab: $(STAMP) $(LAB_SETTINGS)
ifeq ($(LAB_EDITION),student)
	$(BIN)/python -m resnet_theory.homework student --root . --out _build/student
	$(BIN)/jupyter lab $(LAB_FLAGS) --ServerApp.root_dir=_build/student
else
	$(BIN)/jupyter lab $(LAB_FLAGS) --ServerApp.root_dir=book
endif

# The kernels talk over Unix sockets in a folder of their own, as the suite's do (over
# TCP, ipykernel warns about plain-text traffic for every notebook).
notebooks: $(STAMP)
	@sockets=$$(mktemp -d) && \
	$(BIN)/jupyter nbconvert --to notebook --execute --inplace \
		--ExecutePreprocessor.timeout=600 --ExecutePreprocessor.record_timing=False \
		--KernelManager.transport=ipc --KernelManager.ip=$$sockets/kernel $(NB); \
	status=$$?; rm -rf $$sockets; exit $$status
	$(BIN)/python -c "$$STRIP_TIMINGS" $(NB)
	$(BIN)/python book/_ext/editions.py collapse $(NB)

lint: $(STAMP)
	$(BIN)/ruff check lib tests

student: $(STAMP)
	$(BIN)/python -m resnet_theory.homework student --root . --out _build/student --html _build/student-html

grade: $(STAMP)
	$(BIN)/python -m resnet_theory.homework grade "$(SUBMISSIONS)" $(if $(ASSIGNMENT),--assignment "$(ASSIGNMENT)") --timeout $(GRADE_TIMEOUT) --max-output-mb $(GRADE_OUTPUT_MB) --jobs $(JOBS) $(if $(SHARD),--shard $(SHARD)) $(GRADE_FLAGS)

answer-key: $(STAMP)
	$(BIN)/python -m resnet_theory.homework answer-key $(if $(ASSIGNMENT),--assignment "$(ASSIGNMENT)") --out "$(KEY)" --timeout $(GRADE_TIMEOUT)

merge-marks: $(STAMP)
	$(BIN)/python -m resnet_theory.homework merge-marks "$(SUBMISSIONS)"

clean:
	rm -rf _build

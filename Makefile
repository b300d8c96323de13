# The course's commands. Every target bootstraps .venv/ first (idempotent: rebuilt only when the pins change).
#   make course   - the main job: release, execute references, autograde samples, feedback, export, score table
#   make test     - the whole test suite (what .ci/run calls)
#   make lab      - what a student sees: their working copy work/ and JupyterLab (the student distribution,
#                   `python -m autograder student-repo DIR`, has the same target)
#   make release  - regenerate labs/ from solutions/ (nbgrader generate_assignment)
#   make bench    - benchmarks; figures go to BENCHMARKS.md (make bench-check: which pages are stale)
SHELL := /bin/bash
PY ?= python3
VENV := .venv
VPY := $(VENV)/bin/python
STAMP := $(VENV)/.course-stamp
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: venv sandbox course test lab release bench bench-check lint freeze clean

venv: $(STAMP)

# torch comes from TORCH_INDEX first: PyTorch's CPU wheels (torch alone, ~190 MB, no CUDA libraries), what a
# laptop, CI and this course's CPU gloo labs need. Unreachable (a machine that only reaches the public index):
# a message, then torch from the public index, which on Linux is the CUDA build and its nvidia wheels (several
# GB; README, Install). On a GPU node: make venv TORCH_INDEX=https://download.pytorch.org/whl/cu130 (or
# TORCH_INDEX= for the public index's own build).
TORCH_INDEX ?= https://download.pytorch.org/whl/cpu
TORCH_PIN = $(shell grep -m1 -E '^torch==' requirements.txt)

$(STAMP): requirements.txt constraints.txt
	@test -x $(VPY) || $(PY) -m venv $(VENV)
	@if [ -n "$(TORCH_INDEX)" ]; then \
	  $(VPY) -m pip install -q --disable-pip-version-check --no-compile --no-deps --retries 1 --timeout 20 \
	    --index-url "$(TORCH_INDEX)" "$(TORCH_PIN)" \
	  || echo "make venv: torch's CPU build not installed from $(TORCH_INDEX) (unreachable?): $(TORCH_PIN) comes from the public index instead (on Linux the CUDA build: several GB, see README Install)" >&2; \
	fi
	@# pip byte-compiles on one core (57 s of a 130 s install, measured); compileall -j 0 uses them all. The
	@# bytecode matters: with PYTHONDONTWRITEBYTECODE set nothing is cached later, and import torch takes 5.9 s
	@# instead of 2.6. Its exit status is dropped as pip drops it: some packages ship files that do not compile.
	$(VPY) -m pip install -q --disable-pip-version-check --no-compile -r requirements.txt -c constraints.txt
	$(VPY) -m compileall -q -j 0 "$$($(VPY) -c 'import site; print(site.getsitepackages()[0])')" >/dev/null || true
	@# The repo root on sys.path: course_dist, autograder and homework import without a build step.
	$(VPY) -c "import site, pathlib; pathlib.Path(site.getsitepackages()[0], 'course-repo.pth').write_text('$(CURDIR)\n')"
	@touch $(STAMP)

# Grading runs student code in a bubblewrap sandbox (DESIGN.md, grading contract): install it when missing
# (Debian/Ubuntu, as root or with sudo); without it `grade` refuses unless --unsafe-no-sandbox is given.
sandbox:
	@command -v bwrap >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get install -yq bubblewrap || { $$SUDO apt-get update -q && $$SUDO apt-get install -yq bubblewrap; }; }
	@command -v bwrap >/dev/null || { echo "make sandbox: bubblewrap missing: apt-get install bubblewrap" >&2; exit 1; }

course: venv sandbox
	$(VPY) -m autograder course

release: venv
	$(VPY) -m autograder release

# pytest exits 5 when it collected no tests: that is a failure, never a silent green.
# Three pytest-xdist workers, one file per worker at a time (module fixtures grade a class once) on 2 cores:
# the two pipeline modules (every lab's reference, release and mutants, ~9 min each) start first on two of
# them, the third runs the rest of the suite beside them from the start (the rest waits on kernels, launches
# and timeouts: alone it left a quarter of the CPU idle). PYTEST_XDIST= runs serially.
PYTEST_XDIST ?= -n 3 --dist loadfile
test: venv sandbox
	@$(VPY) -m pytest $(PYTEST_XDIST) $(PYTEST_ARGS); rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest ran no tests (exit 5)" >&2; exit 1; fi; exit $$rc

# A student's own copy in work/ (git-ignored): made once, never overwritten by `git pull` + a new release.
# JupyterLab starts with work/.jupyter as its configuration (written by course_dist.workcopy: nbgrader's
# instructor tools are not shown, as in the student distribution's make lab).
# On a GPU node over ssh: make lab NO_BROWSER=1 (then open the printed URL through an ssh tunnel).
# As root (GPU containers) jupyter refuses to start without --allow-root, so it gets that flag then.
ALLOW_ROOT = $(if $(filter 0,$(shell id -u)),--allow-root)
lab: venv
	$(VPY) -m course_dist.workcopy
	JUPYTER_CONFIG_DIR=$(CURDIR)/work/.jupyter $(VENV)/bin/jupyter lab --notebook-dir=work $(if $(NO_BROWSER),--no-browser --ip=127.0.0.1) $(ALLOW_ROOT)

bench: venv
	$(VPY) -m bench

# Every bench/results page names its commit and the paths it measures; a page older than the last change to
# those paths (or unstamped) is stale: this lists them and fails.
bench-check: venv
	$(VPY) -m bench.check $(PAGES)

lint: venv
	$(VENV)/bin/ruff check .

freeze: venv
	$(VPY) -m pip freeze --exclude-editable | sort -f > constraints.txt

clean:
	rm -rf build
